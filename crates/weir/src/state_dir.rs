//! The state directory: where it is by default, where the log lives in it,
//! and how commands open that log (as the writer, with the daemon's `[log]`
//! settings, or read-only).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use weir_daemon::config::Writers;
use weir_log::{Log, Options};

use crate::config_file;

/// The log's subdirectory of the state directory.
const LOG_SUBDIR: &str = "log";

/// A resolved state directory.
#[derive(Debug, Clone)]
pub(crate) struct StateDir {
    root: PathBuf,
    /// `--config`: where the writer's log options come from.
    config: Option<PathBuf>,
}

impl StateDir {
    /// `--state-dir` if given, else `/var/lib/weir` for root and
    /// `$XDG_STATE_HOME/weir` (or `$HOME/.local/state/weir`) for others.
    pub(crate) fn resolve(arg: Option<PathBuf>) -> Result<StateDir> {
        let root = match arg {
            Some(p) => p,
            None => default_root(
                rustix::process::geteuid().is_root(),
                std::env::var_os("XDG_STATE_HOME").map(PathBuf::from),
                std::env::var_os("HOME").map(PathBuf::from),
            )?,
        };
        Ok(StateDir { root, config: None })
    }

    /// Takes the writer's log options from the configuration file `config`
    /// (`--config`) rather than the default one.
    pub(crate) fn with_config(self, config: Option<PathBuf>) -> StateDir {
        StateDir { config, ..self }
    }

    /// The state directory itself.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The log directory, whether or not it exists.
    pub(crate) fn log_dir(&self) -> PathBuf {
        self.root.join(LOG_SUBDIR)
    }

    /// The log directory, which must already exist: for read-only commands,
    /// which must not create state as a side effect.
    pub(crate) fn existing_log_dir(&self) -> Result<PathBuf> {
        let dir = self.log_dir();
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => Ok(dir),
            Ok(_) => bail!("{} is not a directory", dir.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "no log in {}: nothing has been written yet (or pass --state-dir)",
                self.root.display()
            ),
            Err(e) => Err(e).with_context(|| format!("cannot access {}", dir.display())),
        }
    }

    /// Opens the log as its single writer, creating directories as needed,
    /// with the daemon's `[log]` settings: its retention runs here too.
    pub(crate) fn open_writer(&self) -> Result<Log> {
        self.open_writer_for(Writers::Many)
    }

    /// As [`StateDir::open_writer`], for a log appended to as `writers`
    /// say (its ring is sized for them, unless `[log]` sets it).
    pub(crate) fn open_writer_for(&self, writers: Writers) -> Result<Log> {
        let opts = config_file::log_options_for(self.config.as_deref(), writers)?;
        open_writer(&self.log_dir(), opts)
    }

    /// weir-log's options from the configuration's `[log]` section: those
    /// a command that opens the log itself writes with.
    pub(crate) fn log_options(&self) -> Result<Options> {
        config_file::log_options(self.config.as_deref())
    }
}

/// Opens the log in `dir` for writing, explaining a lock held by another
/// process in plain words.
fn open_writer(dir: &Path, opts: Options) -> Result<Log> {
    match Log::open(dir, opts) {
        Ok(log) => Ok(log),
        Err(weir_log::Error::Locked { holder, .. }) => {
            let who = holder.map_or_else(
                || "another process".to_owned(),
                |pid| format!("another process (pid {pid})"),
            );
            Err(anyhow!(
                "the log in {} is locked: {who} holds it for writing; \
                 stop it or run this command through it",
                dir.display()
            ))
        }
        Err(e) => {
            Err(anyhow::Error::new(e).context(format!("cannot open the log in {}", dir.display())))
        }
    }
}

fn default_root(root: bool, xdg_state: Option<PathBuf>, home: Option<PathBuf>) -> Result<PathBuf> {
    if root {
        return Ok(PathBuf::from("/var/lib/weir"));
    }
    // The XDG spec says to ignore a relative $XDG_STATE_HOME.
    if let Some(x) = xdg_state.filter(|p| p.is_absolute()) {
        return Ok(x.join("weir"));
    }
    match home.filter(|p| p.is_absolute()) {
        Some(h) => Ok(h.join(".local/state/weir")),
        None => bail!("cannot find a state directory: $HOME is not set; pass --state-dir"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let home = Some(PathBuf::from("/home/u"));
        assert_eq!(
            default_root(true, None, home.clone()).unwrap(),
            Path::new("/var/lib/weir")
        );
        assert_eq!(
            default_root(false, Some("/x/state".into()), home.clone()).unwrap(),
            Path::new("/x/state/weir")
        );
        assert_eq!(
            default_root(false, Some("relative".into()), home.clone()).unwrap(),
            Path::new("/home/u/.local/state/weir")
        );
        assert!(default_root(false, None, None).is_err());
    }
}
