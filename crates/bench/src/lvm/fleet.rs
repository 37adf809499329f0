//! The PV fleet: one VG over N PVs, made with the real `pvcreate`,
//! `vgcreate` and `lvcreate` on loop devices over sparse 8 MiB images, as
//! the anchor (`/work/shared/anchors/lvm/lvm_probe.sh`) does; and its
//! teardown, which runs on drop, so on every error and on Ctrl-C.
//!
//! Only our loop devices are touched, by path, and only while the kernel
//! still shows our image behind them ([`LoopDev`] checks before detaching).
//! The online files that `pvscan` leaves in `/run/lvm` for our PVs and VG
//! are removed too.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::env::LvmEnv;
use super::stop::Stop;
use crate::loopdev::LoopDev;

/// The size of each sparse image: one 4 MiB extent after LVM's 1 MiB.
const IMAGE_BYTES: u64 = 8 << 20;

/// Where a PV's first metadata area header is (`pvcreate`'s default), and
/// in it the size field of the first raw location: the metadata text's
/// length.
const TEXT_SIZE_OFFSET: u64 = 4096 + 48;

/// The VG, its PVs and their loop devices; torn down on drop.
pub(crate) struct Fleet<'e> {
    env: &'e LvmEnv,
    vg: String,
    images: Vec<PathBuf>,
    /// Attached devices, in image order: `devs[i]` is over `images[i]`.
    devs: Vec<LoopDev>,
    /// The PV uuids, dashed as LVM prints them.
    pvids: Vec<String>,
}

impl<'e> Fleet<'e> {
    /// Makes `n` images, attaches them, and makes the VG `vg` over them
    /// with one two-extent LV (so that the VG's free space is not its size).
    pub(crate) fn create(env: &'e LvmEnv, vg: &str, n: usize, stop: &Stop) -> Result<Fleet<'e>> {
        if n < 2 {
            bail!("the fleet needs at least 2 PVs for its LV, not {n}");
        }
        let t0 = Instant::now();
        let mut f = Fleet {
            env,
            vg: vg.to_owned(),
            images: Vec::with_capacity(n),
            devs: Vec::with_capacity(n),
            pvids: Vec::new(),
        };
        for i in 0..n {
            stop.check()?;
            let img = env.images().join(format!("pv{i}"));
            File::create(&img)
                .and_then(|file| file.set_len(IMAGE_BYTES))
                .with_context(|| format!("make the sparse image {}", img.display()))?;
            f.images.push(img);
            f.attach_next()?;
            if (i + 1) % 250 == 0 {
                eprintln!("    attached {} of {n}", i + 1);
            }
        }
        stop.check()?;
        let devs = f.dev_paths();
        env.run(
            ["pvcreate", "-qq", "-y"]
                .into_iter()
                .chain(devs.iter().map(String::as_str)),
        )?;
        stop.check()?;
        env.run(
            ["vgcreate", "-qq", vg]
                .into_iter()
                .chain(devs.iter().map(String::as_str)),
        )?;
        stop.check()?;
        env.run(["lvcreate", "-qq", "-an", "-Zn", "-l", "2", "-n", "lv0", vg])?;
        let out = env.run(
            ["pvs", "--noheadings", "-o", "pv_uuid"]
                .into_iter()
                .chain(devs.iter().map(String::as_str)),
        )?;
        f.pvids = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        if f.pvids.len() != n {
            bail!(
                "lvm pvs listed {} PV uuids for our {n} devices",
                f.pvids.len()
            );
        }
        eprintln!(
            "    setup of {n} PVs (attach, pvcreate, vgcreate, lvcreate): {:.1} s",
            t0.elapsed().as_secs_f64()
        );
        Ok(f)
    }

    /// The VG's name.
    pub(crate) fn vg(&self) -> &str {
        &self.vg
    }

    /// The number of PVs.
    pub(crate) fn n(&self) -> usize {
        self.images.len()
    }

    /// The PV uuids, dashed.
    pub(crate) fn pvids(&self) -> &[String] {
        &self.pvids
    }

    /// The attached devices' paths, in image order.
    pub(crate) fn dev_paths(&self) -> Vec<String> {
        self.devs.iter().map(|d| d.path().to_owned()).collect()
    }

    /// How many images are attached.
    pub(crate) fn attached(&self) -> usize {
        self.devs.len()
    }

    /// Detaches every device, keeping the images.
    pub(crate) fn detach_all(&mut self) {
        // Last first, as a disk array goes away; each guard detaches itself.
        while self.devs.pop().is_some() {}
    }

    /// Attaches the next image that has no device (`losetup --show -f`, as
    /// a disk appears to the kernel) and returns the device's path.
    pub(crate) fn attach_next(&mut self) -> Result<&str> {
        let img = self
            .images
            .get(self.devs.len())
            .context("every image is attached already")?;
        self.devs.push(LoopDev::attach_plain(img)?);
        Ok(self.devs.last().map_or("", |d| d.path()))
    }

    /// Attaches every image that has no device.
    pub(crate) fn attach_rest(&mut self) -> Result<()> {
        while self.devs.len() < self.images.len() {
            self.attach_next()?;
        }
        Ok(())
    }

    /// Bytes read so far from our devices (field 3 of `/sys/block/loopN/stat`,
    /// in 512-byte sectors whatever the device's block size).
    pub(crate) fn bytes_read(&self) -> Result<u64> {
        let mut sectors = 0u64;
        for d in &self.devs {
            let p = format!("/sys/block/{}/stat", d.name());
            let s = std::fs::read_to_string(&p).with_context(|| format!("read {p}"))?;
            sectors += s
                .split_whitespace()
                .nth(2)
                .and_then(|v| v.parse::<u64>().ok())
                .with_context(|| format!("no sectors-read field in {p}: {s:?}"))?;
        }
        Ok(sectors * 512)
    }

    /// The metadata text's size, from the first PV's metadata area header
    /// (every PV holds the same text).
    pub(crate) fn text_bytes(&self) -> Result<u64> {
        let dev = self.devs.first().context("no device attached")?;
        let f = File::open(dev.path()).with_context(|| format!("open {}", dev.path()))?;
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, TEXT_SIZE_OFFSET)
            .with_context(|| format!("read the mda header of {}", dev.path()))?;
        Ok(u64::from_le_bytes(b))
    }

    /// Removes what `pvscan --cache` left in `/run/lvm` for our PVs and VG.
    pub(crate) fn clear_online(&self) {
        for id in &self.pvids {
            let _ = std::fs::remove_file(format!("/run/lvm/pvs_online/{}", id.replace('-', "")));
        }
        for d in ["vgs_online", "pvs_lookup"] {
            let _ = std::fs::remove_file(format!("/run/lvm/{d}/{}", self.vg));
        }
    }
}

impl Drop for Fleet<'_> {
    fn drop(&mut self) {
        let devs: Vec<String> = self
            .devs
            .iter()
            .filter(|d| d.holds_image())
            .map(|d| d.path().to_owned())
            .collect();
        if !devs.is_empty() {
            eprintln!("    tearing down {} PVs of {}", devs.len(), self.vg);
            // With PVs missing vgremove fails; pvremove -ff then wipes
            // the labels of those that are here anyway.
            if let Err(e) = self.env.run(["vgremove", "-f", "-qq", &self.vg]) {
                eprintln!("    vgremove {}: {e:#}", self.vg);
            }
            let args = ["pvremove", "-ff", "-y", "-qq"]
                .into_iter()
                .chain(devs.iter().map(String::as_str));
            if let Err(e) = self.env.run(args) {
                eprintln!("    pvremove: {e:#}");
            }
        }
        self.detach_all();
        self.clear_online();
    }
}
