//! A VG over loop devices, made by the real LVM2 tools: sparse images in
//! a private [`LvmEnv`], attached, then `pvcreate`, `vgcreate` and
//! `lvcreate` on them; a caller may detach and attach them again, and
//! attach block-for-block copies of its PVs on spare devices. On drop it
//! removes the VG and the PV labels and detaches its own devices, by path,
//! even when a test fails or a benchmark is interrupted.
//!
//! Two ways to number the devices ([`Numbers`]): numbers reserved for the
//! fleet's lifetime (see `number`), which a test that filters exact paths
//! needs across a detach; or whatever `losetup -f` hands out, for fleets of
//! hundreds of PVs (a reservation holds a file open per number).
//!
//! The fleet's own LVM commands, and [`Fleet::lvm`], see only its devices
//! (a `devices/filter` of their paths) and keep no hints, so that they
//! neither meet another fleet's copies of a PV nor rewrite the host's
//! `/run/lvm/hints`. [`LvmEnv::cmd`] runs LVM as a user would, over every
//! device: what a benchmark times.

mod commands;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::env::LvmEnv;
use crate::loopdev::LoopDev;
use crate::number::{Reservation, attach_reserved};
use crate::{Error, Result};

/// Where a PV's first metadata area header is (`pvcreate`'s default), and
/// in it the size field of the first raw location: the metadata text's
/// length.
const TEXT_SIZE_OFFSET: u64 = 4096 + 48;

/// How a fleet numbers its loop devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    /// Reserved numbers, kept across a detach.
    Reserved,
    /// `losetup -f`: any free number, perhaps another after a detach.
    AnyFree,
}

/// How to make a fleet: the VG's name, the images' size, the numbering,
/// the `lvm` binary, and a flag that interrupts a long setup.
#[derive(Debug)]
pub struct Setup<'a> {
    vg: String,
    image_bytes: u64,
    numbers: Numbers,
    lvm: Option<PathBuf>,
    interrupt: Option<&'a AtomicBool>,
    progress: bool,
}

impl<'a> Setup<'a> {
    /// A fleet whose VG will be `vg`: images of 16 MiB (3 extents of 4 MiB
    /// after the 1 MiB data offset, with room for a second metadata area
    /// at the end), reserved numbers, `lvm` from the `$PATH`.
    pub fn new(vg: impl Into<String>) -> Setup<'a> {
        Setup {
            vg: vg.into(),
            image_bytes: 16 << 20,
            numbers: Numbers::Reserved,
            lvm: None,
            interrupt: None,
            progress: false,
        }
    }

    /// Each image's size in bytes.
    pub fn image_bytes(mut self, bytes: u64) -> Self {
        self.image_bytes = bytes;
        self
    }

    /// How the devices are numbered.
    pub fn numbers(mut self, numbers: Numbers) -> Self {
        self.numbers = numbers;
        self
    }

    /// The `lvm` binary to run.
    pub fn lvm(mut self, lvm: PathBuf) -> Self {
        self.lvm = Some(lvm);
        self
    }

    /// A flag (a signal handler's, say) that ends the setup with
    /// [`Error::Interrupted`] once raised; what was made is torn down.
    pub fn interrupt(mut self, flag: &'a AtomicBool) -> Self {
        self.interrupt = Some(flag);
        self
    }

    /// Progress on stderr: every 250 devices attached, the setup's time,
    /// and the teardown.
    pub fn progress(mut self) -> Self {
        self.progress = true;
        self
    }

    fn check(&self) -> Result<()> {
        match self.interrupt {
            Some(f) if f.load(Ordering::Relaxed) => Err(Error::Interrupted),
            _ => Ok(()),
        }
    }

    /// `n` attached devices, blank: the caller runs the LVM commands
    /// itself. Teardown removes a VG of the fleet's name, and every PV
    /// label.
    pub fn blank(self, n: usize) -> Result<Fleet> {
        let mut fleet = self.attached(n, n)?;
        fleet.vg_made = true;
        Ok(fleet)
    }

    /// The VG over one PV per entry of `mda_copies` (its
    /// `--pvmetadatacopies`), with an LV `lv0` of `lv_extents` extents when
    /// that is not 0, and `spares` more devices, detached, for
    /// [`Fleet::attach_copy`]. The members are attached when it returns.
    pub fn build(self, mda_copies: &[u32], lv_extents: u32, spares: usize) -> Result<Fleet> {
        let t0 = Instant::now();
        let members = mda_copies.len();
        let mut fleet = self.attached(members, members + spares)?;
        // The spares only needed their numbers.
        for i in members..fleet.slots.len() {
            fleet.detach(i)?;
        }
        // One pvcreate per run of PVs with the same copies: a thousand
        // pvcreates would take minutes.
        let mut i = 0;
        for run in mda_copies.chunk_by(|a, b| a == b) {
            self.check()?;
            let copies = run[0].to_string();
            let mut args = vec!["pvcreate", "-qq", "-y", "--pvmetadatacopies", &copies];
            let paths: Vec<String> = (i..i + run.len()).map(|k| fleet.path(k)).collect();
            args.extend(paths.iter().map(String::as_str));
            fleet.lvm_run(&args)?;
            i += run.len();
        }
        self.check()?;
        let paths = fleet.dev_paths();
        let mut args = vec!["vgcreate", "-qq", &fleet.vg];
        args.extend(paths.iter().map(String::as_str));
        let args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        fleet.lvm_run(&args)?;
        fleet.vg_made = true;
        if lv_extents > 0 {
            self.check()?;
            let (l, vg) = (lv_extents.to_string(), fleet.vg.clone());
            fleet.lvm_run(&["lvcreate", "-qq", "-an", "-Zn", "-l", &l, "-n", "lv0", &vg])?;
        }
        let mut args = vec!["pvs", "--noheadings", "-o", "pv_uuid"];
        args.extend(paths.iter().map(String::as_str));
        let out = fleet.lvm_run(&args)?;
        fleet.pvids = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        if fleet.pvids.len() != members {
            return Err(Error::Unexpected(format!(
                "lvm pvs listed {} PV uuids for our {members} devices",
                fleet.pvids.len()
            )));
        }
        if self.progress {
            eprintln!(
                "    setup of {members} PVs (attach, pvcreate, vgcreate, lvcreate): {:.1} s",
                t0.elapsed().as_secs_f64()
            );
        }
        Ok(fleet)
    }

    /// `slots` devices over fresh images, `members` of them the VG's to be;
    /// no LVM command run.
    fn attached(&self, members: usize, slots: usize) -> Result<Fleet> {
        let env = LvmEnv::new(self.lvm.clone())?;
        let images = env.subdir("img")?;
        let mut fleet = Fleet {
            vg: self.vg.clone(),
            numbers: self.numbers,
            slots: Vec::with_capacity(slots),
            members,
            vg_made: false,
            pvids: Vec::new(),
            progress: self.progress,
            env,
        };
        for i in 0..slots {
            self.check()?;
            let file = images.join(format!("pv{i}"));
            File::create(&file)
                .and_then(|f| f.set_len(self.image_bytes))
                .map_err(Error::io(format!(
                    "make the sparse image {}",
                    file.display()
                )))?;
            let (dev, reserved) = match self.numbers {
                Numbers::Reserved => {
                    let (dev, r) = attach_reserved(&file)?;
                    (dev, Some(r))
                }
                Numbers::AnyFree => (LoopDev::attach(&file)?, None),
            };
            fleet.slots.push(Slot {
                file,
                number: dev.number(),
                dev: Some(dev),
                _reserved: reserved,
            });
            if self.progress && (i + 1) % 250 == 0 {
                eprintln!("    attached {} of {slots}", i + 1);
            }
        }
        Ok(fleet)
    }
}

/// One device slot: an image and the device it is attached to, if any.
#[derive(Debug)]
struct Slot {
    file: PathBuf,
    /// The device's number: the reserved one, or the last one `losetup -f`
    /// gave.
    number: u32,
    dev: Option<LoopDev>,
    /// Keeps a reserved number ours while the slot is detached; released
    /// after the device (fields drop in order).
    _reserved: Option<Reservation>,
}

/// A VG over loop devices, plus spare devices for copies of its PVs; torn
/// down on drop.
#[derive(Debug)]
pub struct Fleet {
    vg: String,
    numbers: Numbers,
    /// The members (the VG's PVs) first, then the spares.
    slots: Vec<Slot>,
    members: usize,
    /// Whether teardown removes the VG.
    vg_made: bool,
    /// The members' PV uuids, dashed as LVM prints them (after a build).
    pvids: Vec<String>,
    /// Whether the teardown says so on stderr.
    progress: bool,
    /// Last, so that the images outlive the devices.
    env: LvmEnv,
}

impl Fleet {
    /// The name tests give their VGs: `weir<pid><tag>`.
    pub fn test_vg(tag: &str) -> String {
        format!("weir{}{tag}", std::process::id())
    }

    /// [`Setup::build`] of VG [`Fleet::test_vg`]`(tag)` with the defaults.
    pub fn build(tag: &str, mda_copies: &[u32], lv_extents: u32, spares: usize) -> Result<Fleet> {
        Setup::new(Fleet::test_vg(tag)).build(mda_copies, lv_extents, spares)
    }

    /// [`Setup::blank`] with the defaults; [`Fleet::vg_name`] is a name for
    /// the VG the caller may make.
    pub fn blank(tag: &str, n: usize) -> Result<Fleet> {
        Setup::new(Fleet::test_vg(tag)).blank(n)
    }

    /// The private environment the fleet lives in.
    pub fn env(&self) -> &LvmEnv {
        &self.env
    }

    /// The VG's name.
    pub fn vg_name(&self) -> &str {
        &self.vg
    }

    /// How many PVs the VG has (slots `0..members()`).
    pub fn members(&self) -> usize {
        self.members
    }

    /// The members' PV uuids, dashed (empty for a blank fleet).
    pub fn pvids(&self) -> &[String] {
        &self.pvids
    }

    /// `/dev/loopN` of slot `i` (its last device, when detached).
    pub fn path(&self, i: usize) -> String {
        format!("/dev/{}", self.name(i))
    }

    /// `loopN` of slot `i`.
    pub fn name(&self, i: usize) -> String {
        format!("loop{}", self.slots[i].number)
    }

    /// The minor number of slot `i` (the major is 7).
    pub fn minor(&self, i: usize) -> u32 {
        self.slots[i].number
    }

    /// The image of slot `i`.
    pub fn file(&self, i: usize) -> &Path {
        &self.slots[i].file
    }

    /// Every slot's path, members and spares.
    pub fn paths(&self) -> Vec<String> {
        (0..self.slots.len()).map(|i| self.path(i)).collect()
    }

    /// The attached members' paths, in slot order.
    pub fn dev_paths(&self) -> Vec<String> {
        self.slots[..self.members]
            .iter()
            .filter_map(|s| s.dev.as_ref().map(|d| format!("/dev/{}", d.name())))
            .collect()
    }

    /// How many members are attached.
    pub fn attached(&self) -> usize {
        self.slots[..self.members]
            .iter()
            .filter(|s| s.dev.is_some())
            .count()
    }

    /// LVM filter patterns accepting exactly this fleet's devices.
    pub fn filter_patterns(&self) -> Vec<String> {
        let mut p: Vec<String> = self.paths().iter().map(|d| format!("a|^{d}$|")).collect();
        p.push("r|.*|".to_owned());
        p
    }

    /// The private LVM configuration directory (`LVM_SYSTEM_DIR`).
    pub fn lvm_system_dir(&self) -> PathBuf {
        self.env.system_dir()
    }

    /// A scratch directory that lives as long as the fleet.
    pub fn scratch(&self) -> &Path {
        self.env.dir()
    }

    /// Detaches slot `i`, by its path, and waits until sysfs shows it
    /// unbound.
    pub fn detach(&mut self, i: usize) -> Result<()> {
        let dev = self.slots[i]
            .dev
            .take()
            .ok_or_else(|| Error::Unexpected(format!("{} is detached already", self.path(i))))?;
        dev.detach()
    }

    /// Attaches slot `i` again: at its own number if reserved, else at the
    /// lowest free one (`losetup --show -f`, as a disk appears to the
    /// kernel). Returns the device's path.
    pub fn attach(&mut self, i: usize) -> Result<String> {
        let slot = &mut self.slots[i];
        if slot.dev.is_some() {
            return Err(Error::Unexpected(format!(
                "loop{} is attached already",
                slot.number
            )));
        }
        let dev = match self.numbers {
            Numbers::Reserved => LoopDev::attach_at(slot.number, &slot.file)?,
            Numbers::AnyFree => LoopDev::attach(&slot.file)?,
        };
        slot.number = dev.number();
        let path = format!("/dev/{}", dev.name());
        slot.dev = Some(dev);
        Ok(path)
    }

    /// Copies member `of`'s image into spare slot `spare` (block for block:
    /// the same PV uuid and metadata) and attaches it.
    pub fn attach_copy(&mut self, spare: usize, of: usize) -> Result<String> {
        if spare < self.members || of >= self.members {
            return Err(Error::Unexpected(format!(
                "a copy goes from a member to a spare, not from slot {of} to slot {spare}"
            )));
        }
        std::fs::copy(&self.slots[of].file, &self.slots[spare].file)
            .map_err(Error::io("copy a PV image"))?;
        self.attach(spare)
    }

    /// Attaches the first member that is detached; returns its path.
    pub fn attach_next(&mut self) -> Result<String> {
        let i = self.slots[..self.members]
            .iter()
            .position(|s| s.dev.is_none())
            .ok_or_else(|| Error::Unexpected("every member is attached already".into()))?;
        self.attach(i)
    }

    /// Attaches every member that is detached, in order.
    pub fn attach_rest(&mut self) -> Result<()> {
        while self.attached() < self.members {
            self.attach_next()?;
        }
        Ok(())
    }

    /// Detaches every attached device, the last first, as a disk array
    /// goes away.
    pub fn detach_all(&mut self) -> Result<()> {
        for i in (0..self.slots.len()).rev() {
            if self.slots[i].dev.is_some() {
                self.detach(i)?;
            }
        }
        Ok(())
    }

    /// Bytes read so far from the attached members (field 3 of
    /// `/sys/block/loopN/stat`, in 512-byte sectors whatever the device's
    /// block size).
    pub fn bytes_read(&self) -> Result<u64> {
        let mut sectors = 0u64;
        for s in &self.slots[..self.members] {
            let Some(d) = &s.dev else { continue };
            let p = format!("/sys/block/{}/stat", d.name());
            let text = std::fs::read_to_string(&p).map_err(Error::io(format!("read {p}")))?;
            sectors += text
                .split_whitespace()
                .nth(2)
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| {
                    Error::Unexpected(format!("no sectors-read field in {p}: {text:?}"))
                })?;
        }
        Ok(sectors * 512)
    }

    /// The metadata text's size, from the first attached member's metadata
    /// area header (every PV holds the same text).
    pub fn text_bytes(&self) -> Result<u64> {
        let path = self
            .dev_paths()
            .into_iter()
            .next()
            .ok_or_else(|| Error::Unexpected("no device attached".into()))?;
        let f = File::open(&path).map_err(Error::io(format!("open {path}")))?;
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, TEXT_SIZE_OFFSET)
            .map_err(Error::io(format!("read the mda header of {path}")))?;
        Ok(u64::from_le_bytes(b))
    }

    /// Removes what `pvscan --cache` left in `/run/lvm` for the fleet's PVs
    /// and VG.
    pub fn clear_online(&self) {
        for id in &self.pvids {
            let _ = std::fs::remove_file(format!("/run/lvm/pvs_online/{}", id.replace('-', "")));
        }
        for d in ["vgs_online", "pvs_lookup"] {
            let _ = std::fs::remove_file(format!("/run/lvm/{d}/{}", self.vg));
        }
    }

    /// `lvm ARGS...` restricted to this fleet's devices, without hints;
    /// its output, whatever its status.
    pub fn lvm<S: AsRef<str>>(&self, args: &[S]) -> Result<Output> {
        let filter: Vec<String> = self
            .filter_patterns()
            .iter()
            .map(|p| format!("\"{p}\""))
            .collect();
        // No hints: lvm would otherwise rewrite the host's /run/lvm/hints.
        let config = format!(
            "devices {{ hints = \"none\" filter = [ {} ] }}",
            filter.join(", ")
        );
        let (cmd, rest) = args
            .split_first()
            .ok_or_else(|| Error::Unexpected("an lvm command without a name".into()))?;
        let mut c = self.env.cmd([cmd.as_ref(), "--config", &config]);
        c.args(rest.iter().map(AsRef::as_ref));
        c.stdin(std::process::Stdio::null())
            .output()
            .map_err(Error::io(format!("run lvm {}", cmd.as_ref())))
    }

    /// [`Fleet::lvm`], failing with its stderr if it fails.
    pub fn lvm_run<S: AsRef<str>>(&self, args: &[S]) -> Result<Output> {
        let out = self.lvm(args)?;
        if !out.status.success() {
            return Err(Error::Tool {
                cmd: format!(
                    "lvm {}",
                    args.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(" ")
                ),
                status: out.status,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(out)
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        // Copies first: LVM must not meet the duplicates while removing.
        for i in self.members..self.slots.len() {
            if self.slots[i].dev.is_some() {
                self.detach_or_warn(i);
            }
        }
        // A VG with PVs missing cannot be removed; bring them back.
        let mut complete = true;
        for i in 0..self.members {
            if self.slots[i].dev.is_none() {
                complete &= self.attach(i).is_ok();
            }
        }
        let members = self.dev_paths();
        if !members.is_empty() && self.progress {
            eprintln!("    tearing down {} PVs of {}", members.len(), self.vg);
        }
        if self.vg_made
            && complete
            && let Err(e) = self.lvm_run(&["vgremove", "-qq", "-f", &self.vg])
        {
            eprintln!("warning: vgremove {}: {e}", self.vg);
        }
        // pvremove -ff wipes the labels of those here even with the VG
        // still on them.
        if !members.is_empty() {
            let mut args = vec!["pvremove", "-qq", "-ff", "-y"];
            args.extend(members.iter().map(String::as_str));
            if let Err(e) = self.lvm_run(&args) {
                eprintln!("warning: pvremove: {e}");
            }
        }
        for i in (0..self.members).rev() {
            if self.slots[i].dev.is_some() {
                self.detach_or_warn(i);
            }
        }
        self.clear_online();
    }
}

impl Fleet {
    /// Detaches slot `i`, warning instead of failing (for drop).
    fn detach_or_warn(&mut self, i: usize) {
        let path = self.path(i);
        if let Err(e) = self.detach(i) {
            eprintln!("warning: could not detach {path}: {e}");
        }
    }
}
