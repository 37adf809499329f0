//! The private LVM2 environment: a scratch directory holding the project's
//! standard `lvm.conf` (no devices file, no udev, no activation), LVM's
//! backup and archive directories, the PV images and the watcher's state,
//! so that `/etc/lvm` is never touched; and the `lvm` commands run in it.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output};

use anyhow::{Context, Result};
use serde_json::{Map, Value};

use crate::loopdev::run_tool;

/// `global/activation = 0` lets `lvcreate -an -Zn` write an LV into the
/// metadata on a machine without device-mapper.
const LVM_CONF: &str = "devices { use_devicesfile = 0
obtain_device_list_from_udev = 0 }
activation { udev_sync = 0
udev_rules = 0 }
global { activation = 0 }
";

/// The scratch directory and the `lvm` binary; removed on drop, after the
/// fleets that live in it.
pub(crate) struct LvmEnv {
    dir: tempfile::TempDir,
    lvm: PathBuf,
}

impl LvmEnv {
    /// Makes the scratch directory and its `lvm.conf`.
    pub(crate) fn new(lvm: PathBuf) -> Result<LvmEnv> {
        let dir = tempfile::Builder::new()
            .prefix("weir-bench-lvm.")
            .tempdir()
            .context("make a scratch directory")?;
        let etc = dir.path().join("etc");
        std::fs::create_dir_all(&etc).context("make the LVM system directory")?;
        std::fs::write(etc.join("lvm.conf"), LVM_CONF).context("write lvm.conf")?;
        std::fs::create_dir_all(dir.path().join("img")).context("make the image directory")?;
        Ok(LvmEnv { dir, lvm })
    }

    /// Where the PV images are.
    pub(crate) fn images(&self) -> PathBuf {
        self.dir.path().join("img")
    }

    /// A fresh directory `name` in the scratch directory.
    pub(crate) fn scratch(&self, name: &str) -> Result<PathBuf> {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(&p).with_context(|| format!("make {}", p.display()))?;
        Ok(p)
    }

    /// `lvm ARGS` in the private environment.
    pub(crate) fn cmd<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = Command::new(&self.lvm);
        c.env("LVM_SYSTEM_DIR", self.dir.path().join("etc"))
            .env("LVM_SUPPRESS_FD_WARNINGS", "1")
            .args(args);
        c
    }

    /// Runs `lvm ARGS`; fails with its stderr if it fails.
    pub(crate) fn run<I, S>(&self, args: I) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        run_tool(&mut self.cmd(args))
    }

    /// The rows of `lvm CMD --reportformat json --units b --nosuffix ARGS`
    /// (`what`: `vg` or `pv`, the report's key), every value a string.
    pub(crate) fn report<I, S>(
        &self,
        cmd: &str,
        what: &str,
        args: I,
    ) -> Result<Vec<Map<String, Value>>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = self.cmd([cmd, "--reportformat", "json", "--units", "b", "--nosuffix"]);
        c.args(args);
        let out = run_tool(&mut c)?;
        let v: Value = serde_json::from_slice(&out.stdout)
            .with_context(|| format!("parse the JSON of lvm {cmd}"))?;
        let rows = v
            .get("report")
            .and_then(|r| r.get(0))
            .and_then(|r| r.get(what))
            .and_then(Value::as_array)
            .with_context(|| format!("lvm {cmd}: no report.0.{what} in its JSON"))?;
        Ok(rows.iter().filter_map(|r| r.as_object().cloned()).collect())
    }
}
