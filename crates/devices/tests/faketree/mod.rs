//! Fake sysfs trees built in a tempdir, laid out as the kernel lays out
//! /sys: class/block entries are links into devices/. Shared by the
//! tests that read them.

#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use weir_devices::Sysfs;

/// A fake sysfs root.
pub(crate) struct Tree {
    _dir: tempfile::TempDir,
    pub(crate) root: PathBuf,
}

impl Tree {
    pub(crate) fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_owned();
        fs::create_dir_all(root.join("class/block")).unwrap();
        Tree { _dir: dir, root }
    }

    /// Creates the device directory `devices/<rel>` with `attrs` (paths
    /// relative to it; a trailing `/` makes an empty directory), and the
    /// class/block link to it.
    pub(crate) fn device(&self, rel: &str, attrs: &[(&str, &str)]) -> PathBuf {
        let dir = self.root.join("devices").join(rel);
        fs::create_dir_all(&dir).unwrap();
        for (name, content) in attrs {
            if let Some(d) = name.strip_suffix('/') {
                fs::create_dir_all(dir.join(d)).unwrap();
                continue;
            }
            let p = dir.join(name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, content).unwrap();
        }
        let name = Path::new(rel).file_name().unwrap();
        symlink(
            Path::new("../../devices").join(rel),
            self.root.join("class/block").join(name),
        )
        .unwrap();
        dir
    }

    /// loop0 (7:0, 1 MiB, non-rotational, 512-byte blocks) with `more`
    /// attributes; returns its directory.
    pub(crate) fn loop0(&self, more: &[(&str, &str)]) -> PathBuf {
        let lp = basic("7:0", "2048", "loop0");
        let common = [
            ("removable", "0\n"),
            ("queue/rotational", "0\n"),
            ("queue/logical_block_size", "512\n"),
        ];
        let all: Vec<(&str, &str)> = common.iter().chain(more).copied().collect();
        self.device("virtual/block/loop0", &with(&lp, &all))
    }

    pub(crate) fn sysfs(&self) -> Sysfs {
        Sysfs::new(&self.root)
    }
}

/// The attributes every device has.
pub(crate) fn basic(
    dev: &'static str,
    sectors: &'static str,
    devname: &'static str,
) -> Vec<(&'static str, String)> {
    let (major, minor) = dev.split_once(':').unwrap();
    vec![
        ("dev", format!("{dev}\n")),
        ("size", format!("{sectors}\n")),
        ("ro", "0\n".into()),
        (
            "uevent",
            format!("MAJOR={major}\nMINOR={minor}\nDEVNAME={devname}\nDEVTYPE=disk\n"),
        ),
        ("holders/", String::new()),
        ("slaves/", String::new()),
    ]
}

/// `base` with `more` added; an attribute in both takes `more`'s content.
pub(crate) fn with<'a>(
    base: &'a [(&'static str, String)],
    more: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    base.iter()
        .map(|(k, v)| (*k, v.as_str()))
        .filter(|(k, _)| !more.iter().any(|(m, _)| m == k))
        .chain(more.iter().copied())
        .collect()
}
