//! `weir devices` against lsblk on this test's own loop devices: a loop
//! device with two partitions (added with addpart, which needs no
//! partition table the kernel parses) and a plain one. The common columns
//! (NAME with its tree drawing, MAJ:MIN, SIZE, RO, TYPE) agree with
//! lsblk's, as a tree and as a list, and the daemon's listing is the
//! direct one's bytes.
//!
//! Every listing is filtered to the test's devices, since other tests
//! attach loop devices at the same time. Needs root, losetup and lsblk,
//! and prints `skipping: ...` without them.

#[allow(dead_code)]
#[path = "support/child_lines.rs"]
mod child_lines;
#[allow(dead_code)]
#[path = "support/daemon_child.rs"]
mod daemon_child;
#[allow(dead_code)]
#[path = "support/privileged.rs"]
mod privileged;

use std::process::{Command, Stdio};

use privileged::assert_ok;
use weir_lvmfleet::LoopDev;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");
const COMMON: &str = "NAME,MAJ:MIN,SIZE,RO,TYPE";

/// The test's devices: the partitioned one (with whether its partitions
/// were added) and the plain one, in device-number order for lsblk.
struct Devices {
    _dir: tempfile::TempDir,
    disk: LoopDev,
    plain: LoopDev,
    partitions: bool,
}

impl Devices {
    fn attach() -> Devices {
        let dir = tempfile::tempdir().expect("a scratch directory");
        let disk_img = dir.path().join("disk.img");
        let plain_img = dir.path().join("plain.img");
        std::fs::write(&disk_img, vec![0u8; 8 << 20]).unwrap();
        std::fs::write(&plain_img, vec![0u8; 3 << 20]).unwrap();
        let disk = LoopDev::attach_partscan(&disk_img).expect("attach the disk");
        let plain = LoopDev::attach(&plain_img).expect("attach the plain device");
        let partitions = weir_lvmfleet::have("addpart")
            && disk.add_partition(1, 2048, 4096).is_ok()
            && disk.add_partition(2, 6144, 8192).is_ok();
        if !partitions {
            eprintln!("no partitions: addpart is missing or failed; comparing whole devices");
        }
        Devices {
            _dir: dir,
            disk,
            plain,
            partitions,
        }
    }

    /// The devices' paths, in device-number order.
    fn paths(&self) -> Vec<String> {
        let mut v = [&self.disk, &self.plain];
        v.sort_by_key(|d| d.number());
        v.iter().map(|d| d.path().display().to_string()).collect()
    }

    /// lvm.conf filter patterns that accept only these devices.
    fn patterns(&self) -> Vec<String> {
        let mut v: Vec<String> = [&self.disk, &self.plain]
            .iter()
            .map(|d| format!("a|^/dev/{}(p[0-9]+)?$|", d.name()))
            .collect();
        v.push("r|.*|".to_owned());
        v
    }

    fn filter_args(&self) -> Vec<String> {
        self.patterns()
            .into_iter()
            .flat_map(|p| ["--filter".to_owned(), p])
            .collect()
    }
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.stdin(Stdio::null()).output().expect(what);
    assert_ok(what, &out);
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The rows as words, header first: lsblk pads differently (it leaves a
/// trailing space and widens some columns), the cells are the same.
fn words(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

fn skipping() -> bool {
    let why = weir_lvmfleet::loop_unavailable()
        .or_else(|| (!weir_lvmfleet::have("lsblk")).then_some("needs lsblk(8) from util-linux"));
    if let Some(why) = why {
        eprintln!("skipping: {why}");
    }
    why.is_some()
}

#[test]
fn the_common_columns_are_lsblks() {
    if skipping() {
        return;
    }
    let devs = Devices::attach();
    let weir = |extra: &[&str]| {
        run(
            Command::new(WEIR)
                .args(["--direct", "devices", "-o", COMMON])
                .args(extra)
                .args(devs.filter_args()),
            "weir devices",
        )
    };
    let lsblk = |extra: &[&str]| {
        run(
            Command::new("lsblk")
                .args(["-o", COMMON])
                .args(extra)
                .args(devs.paths()),
            "lsblk",
        )
    };
    let tree = weir(&[]);
    assert_eq!(words(&tree), words(&lsblk(&[])), "weir:\n{tree}");
    let list = weir(&["-l"]);
    assert_eq!(words(&list), words(&lsblk(&["-l"])), "weir:\n{list}");
    let rows = if devs.partitions { 1 + 4 } else { 1 + 2 };
    assert_eq!(tree.lines().count(), rows, "{tree}");
    if devs.partitions {
        let p1 = format!("├─{}p1", devs.disk.name());
        let p2 = format!("└─{}p2", devs.disk.name());
        assert!(tree.contains(&format!("\n{p1} ")), "{tree}");
        assert!(tree.contains(&format!("\n{p2} ")), "{tree}");
        assert!(
            tree.contains(" 2M  0 part\n") && tree.contains(" 4M  0 part\n"),
            "{tree}"
        );
    }
}

#[test]
fn the_daemons_listing_is_the_direct_bytes() {
    if skipping() {
        return;
    }
    let devs = Devices::attach();
    let state = tempfile::tempdir().expect("state directory");
    let socket = state.path().join("weir.sock");
    let mut run_args = vec!["--mounts-enabled=false".to_owned()];
    for p in devs.patterns() {
        run_args.push("--devices-filter".to_owned());
        run_args.push(p);
    }
    let run_args: Vec<&str> = run_args.iter().map(String::as_str).collect();
    let daemon = daemon_child::Daemon::start(state.path(), &socket, &run_args);
    daemon_child::sync(&socket);
    for args in [
        &["devices"][..],
        &["devices", "--json"],
        &["devices", "-l", "-o", "+kname,pkname,lvm,back-file"],
        &["devices", "-o", COMMON],
    ] {
        let direct = run(
            Command::new(WEIR)
                .arg("--direct")
                .args(args)
                .args(devs.filter_args()),
            "weir --direct",
        );
        let via = String::from_utf8(daemon_child::ok(daemon_child::weir(&socket, args))).unwrap();
        assert_eq!(via, direct, "weir {args:?} through the daemon");
        assert!(direct.contains(devs.plain.name()), "{direct}");
    }
    daemon.stop();
}

/// `blkid -p -o export`'s value of `key` for `dev`.
fn blkid_value(dev: &std::path::Path, key: &str) -> String {
    let out = Command::new(weir_lvmfleet::find_tool("blkid").expect("blkid"))
        .args(["-p", "-o", "export"])
        .arg(dev)
        .output()
        .expect("run blkid");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('=').map(str::to_owned))
        .unwrap_or_default()
}

#[test]
fn the_fs_columns_are_blkids_and_lsblks() {
    if skipping() {
        return;
    }
    let Some(mkfs) = weir_lvmfleet::find_tool("mkfs.ext4") else {
        eprintln!("skipping: needs mkfs.ext4");
        return;
    };
    let (Some(mkswap), Some(_)) = (
        weir_lvmfleet::find_tool("mkswap"),
        weir_lvmfleet::find_tool("blkid"),
    ) else {
        eprintln!("skipping: needs mkswap and blkid");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ext = dir.path().join("ext.img");
    let swap = dir.path().join("swap.img");
    std::fs::File::create(&ext)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    std::fs::File::create(&swap)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let mkfs_out = Command::new(mkfs)
        .args(["-q", "-F", "-L", "weir-fs", "-U"])
        .arg("0b1e5a3c-1d2f-4a6b-9c8d-7e6f5a4b3c2d")
        .arg(&ext)
        .output()
        .unwrap();
    assert_ok("mkfs.ext4", &mkfs_out);
    let mkswap_out = Command::new(mkswap)
        .args(["-q", "-L", "weir-swap"])
        .arg(&swap)
        .output()
        .unwrap();
    assert_ok("mkswap", &mkswap_out);
    let mut devs = [
        LoopDev::attach(&ext).expect("attach"),
        LoopDev::attach(&swap).expect("attach"),
    ];
    devs.sort_by_key(LoopDev::number);
    let mut args = vec!["--direct", "devices", "-f", "-l"];
    let patterns: Vec<String> = devs
        .iter()
        .map(|d| format!("a|^/dev/{}$|", d.name()))
        .chain(["r|.*|".to_owned()])
        .collect();
    for p in &patterns {
        args.extend(["--filter", p]);
    }
    let got = run(Command::new(WEIR).args(&args), "weir devices -f");
    let mut want = vec![vec![
        "NAME".to_owned(),
        "FSTYPE".to_owned(),
        "LABEL".to_owned(),
        "UUID".to_owned(),
        "MOUNTPOINTS".to_owned(),
    ]];
    for d in &devs {
        want.push(vec![
            d.name().to_owned(),
            blkid_value(d.path(), "TYPE"),
            blkid_value(d.path(), "LABEL"),
            blkid_value(d.path(), "UUID"),
        ]);
    }
    assert_eq!(words(&got), want, "weir:\n{got}");
    // lsblk reads these columns from udev's database: without udevd it
    // shows them empty, and there is nothing to compare.
    let paths: Vec<String> = devs
        .iter()
        .map(|d| d.path().display().to_string())
        .collect();
    let lsblk = run(
        Command::new("lsblk")
            .args(["-l", "-o", "NAME,FSTYPE,LABEL,UUID"])
            .args(&paths),
        "lsblk",
    );
    let lsblk_rows = words(&lsblk);
    if lsblk_rows.iter().skip(1).all(|r| r.len() == 4) {
        let weir = run(
            Command::new(WEIR)
                .args(["--direct", "devices", "-l", "-o", "NAME,FSTYPE,LABEL,UUID"])
                .args(args[4..].iter()),
            "weir devices -o",
        );
        assert_eq!(words(&weir), lsblk_rows, "weir:\n{weir}\nlsblk:\n{lsblk}");
    } else {
        eprintln!("lsblk shows no filesystems (no udev database); compared with blkid only");
    }
    for d in devs {
        d.detach().unwrap();
    }
}
