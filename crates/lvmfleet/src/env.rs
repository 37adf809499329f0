//! The private LVM2 environment: a scratch directory holding the project's
//! test `lvm.conf` in its own `LVM_SYSTEM_DIR` (where LVM also keeps its
//! backup and archive copies), the PV images, and whatever else a caller
//! wants to live as long as they do; and the `lvm` commands run in it, so
//! that `/etc/lvm` is never touched.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Map, Value};

use crate::{Error, Result, find_tool, run_tool};

/// No devices file, no udev, and no activation: this VM has no
/// device-mapper, and `global/activation = 0` lets `lvcreate -an -Zn`
/// write an LV into the metadata without it.
const LVM_CONF: &str = "devices { use_devicesfile = 0
obtain_device_list_from_udev = 0 }
activation { udev_sync = 0
udev_rules = 0 }
global { activation = 0 }
";

/// The scratch directory and the `lvm` binary; the directory is removed on
/// drop.
#[derive(Debug)]
pub struct LvmEnv {
    dir: tempfile::TempDir,
    lvm: PathBuf,
}

impl LvmEnv {
    /// Makes the scratch directory (in /var/tmp when it can, where there is
    /// room for images) and its `lvm.conf`; `lvm` is the binary to run,
    /// `lvm` from the `$PATH` or the sbin directories if `None`.
    pub fn new(lvm: Option<PathBuf>) -> Result<LvmEnv> {
        let dir = tempfile::Builder::new()
            .prefix("weir-lvmfleet.")
            .tempdir_in("/var/tmp")
            .or_else(|_| tempfile::Builder::new().prefix("weir-lvmfleet.").tempdir())
            .map_err(Error::io("make a scratch directory"))?;
        let env = LvmEnv {
            lvm: lvm
                .or_else(|| find_tool("lvm"))
                .unwrap_or_else(|| "lvm".into()),
            dir,
        };
        let etc = env.system_dir();
        std::fs::create_dir_all(&etc).map_err(Error::io("make the LVM system directory"))?;
        std::fs::write(etc.join("lvm.conf"), LVM_CONF).map_err(Error::io("write lvm.conf"))?;
        Ok(env)
    }

    /// The scratch directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The private LVM configuration directory (`LVM_SYSTEM_DIR`).
    pub fn system_dir(&self) -> PathBuf {
        self.dir.path().join("lvm")
    }

    /// A directory `name` in the scratch directory, made if missing.
    pub fn subdir(&self, name: &str) -> Result<PathBuf> {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(&p).map_err(Error::io(format!("make {}", p.display())))?;
        Ok(p)
    }

    /// `lvm ARGS` in the private environment, not yet run.
    pub fn cmd<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = Command::new(&self.lvm);
        c.env("LVM_SYSTEM_DIR", self.system_dir())
            .env("LVM_SUPPRESS_FD_WARNINGS", "1")
            .args(args);
        c
    }

    /// Runs `lvm ARGS`; fails with its stderr if it fails.
    pub fn run<I, S>(&self, args: I) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        run_tool(&mut self.cmd(args))
    }

    /// The rows of `lvm CMD --reportformat json --units b --nosuffix ARGS`
    /// (`what`: `vg`, `pv` or `lv`, the report's key), every value a string
    /// as LVM gives it.
    pub fn report<I, S>(&self, cmd: &str, what: &str, args: I) -> Result<Vec<Map<String, Value>>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = self.cmd([cmd, "--reportformat", "json", "--units", "b", "--nosuffix"]);
        c.args(args);
        report_rows(&run_tool(&mut c)?.stdout, cmd, what)
    }
}

/// The rows of the JSON report `stdout` of `lvm CMD`, under `what`.
pub(crate) fn report_rows(stdout: &[u8], cmd: &str, what: &str) -> Result<Vec<Map<String, Value>>> {
    let v: Value = serde_json::from_slice(stdout)
        .map_err(|e| Error::Unexpected(format!("parse the JSON of lvm {cmd}: {e}")))?;
    let rows = v
        .get("report")
        .and_then(|r| r.get(0))
        .and_then(|r| r.get(what))
        .and_then(Value::as_array)
        .ok_or_else(|| Error::Unexpected(format!("lvm {cmd}: no report.0.{what} in its JSON")))?;
    Ok(rows.iter().filter_map(|r| r.as_object().cloned()).collect())
}
