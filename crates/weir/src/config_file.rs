//! The daemon's configuration file. `weir run` reads all of it; a command
//! that opens the log itself (no daemon answers, or `--direct`) reads its
//! `[log]` section, so that its retention pass (run on every commit and at
//! close) evicts and deletes what the daemon would, not what weir-log's
//! defaults would.

use std::path::Path;

use anyhow::{Context, Result};
use weir_daemon::config::{Config, ConfigError, Writers};

/// The configuration file read when `--config` is not given, if it exists.
pub(crate) const DEFAULT_PATH: &str = "/etc/weir/weir.toml";

/// The file `--config` names (it must exist), else the default file when it
/// exists, else the defaults. Not validated.
pub(crate) fn load(arg: Option<&Path>) -> Result<Config> {
    load_from(arg, Path::new(DEFAULT_PATH))
}

fn load_from(arg: Option<&Path>, default: &Path) -> Result<Config> {
    match arg {
        Some(path) => Ok(Config::load(path)?),
        None => match Config::load(default) {
            // Only a missing default file means "no configuration": one that
            // exists but cannot be read is an error, not the defaults.
            Err(ConfigError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Ok(Config::default())
            }
            res => Ok(res?),
        },
    }
}

/// weir-log's options from the file's `[log]` section, for a command that
/// opens the log itself. The whole file is checked, as the daemon checks
/// it: a file it would refuse is refused here too.
pub(crate) fn log_options(arg: Option<&Path>) -> Result<weir_log::Options> {
    log_options_for(arg, Writers::Many)
}

/// As [`log_options`], for a log appended to as `writers` say.
pub(crate) fn log_options_for(arg: Option<&Path>, writers: Writers) -> Result<weir_log::Options> {
    log_options_from(arg, Path::new(DEFAULT_PATH), writers)
}

fn log_options_from(
    arg: Option<&Path>,
    default: &Path,
    writers: Writers,
) -> Result<weir_log::Options> {
    let context = || {
        format!(
            "the daemon's configuration {}, whose [log] settings this command uses",
            arg.unwrap_or(default).display()
        )
    };
    let config = load_from(arg, default).with_context(context)?;
    config.validate().with_context(context)?;
    Ok(config.log.options_for(writers))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_missing_default_file_means_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("weir.toml");
        let o = log_options_from(None, &missing, Writers::Many).unwrap();
        assert_eq!(o.retention, Config::default().log.options().retention);
        // The daemon's defaults, the floor included, not weir-log's.
        assert!(o.retention.has_floor());
        // Named explicitly, it must exist, as for `weir run --config`.
        assert!(log_options_from(Some(&missing), &missing, Writers::Many).is_err());
    }

    /// Regression: direct opens used `Options::default()` whatever the
    /// daemon's file said.
    #[test]
    fn the_default_file_and_an_explicit_one_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let default = dir.path().join("default.toml");
        std::fs::write(&default, "[log]\nmax_idle_secs = 0\nmax_mib = 8192\n").unwrap();
        let o = log_options_from(None, &default, Writers::Many).unwrap();
        assert_eq!(o.retention.max_idle_time, None);
        assert_eq!(o.retention.max_bytes, 8192 << 20);

        let other = dir.path().join("other.toml");
        std::fs::write(&other, "[log]\nmax_idle_secs = 60\n").unwrap();
        let o = log_options_from(Some(&other), &default, Writers::Many).unwrap();
        assert_eq!(o.retention.max_idle_time, Some(Duration::from_secs(60)));
        assert_eq!(o.retention.max_bytes, 4096 << 20);
    }

    /// A log with one writer gets a smaller ring, unless the file sets it.
    #[test]
    fn the_ring_is_sized_for_the_writers_unless_set() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("weir.toml");
        std::fs::write(&file, "[log]\nmax_mib = 8192\n").unwrap();
        let ring = |w| log_options_from(Some(&file), &file, w).unwrap().ring_slots;
        assert_eq!(ring(Writers::Many), weir_log::Options::default().ring_slots);
        assert_eq!(ring(Writers::One), 8192);
        std::fs::write(&file, "[log]\nring_slots = 65536\n").unwrap();
        assert_eq!((ring(Writers::Many), ring(Writers::One)), (65536, 65536));
    }

    #[test]
    fn an_invalid_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("weir.toml");
        for (text, says) in [
            ("[log]\nmax_idle_secs = \"never\"\n", "log.max_idle_secs"),
            ("[log]\nring_slots = 3\n", "log.ring_slots"),
            ("[log\n", "not valid TOML"),
        ] {
            std::fs::write(&bad, text).unwrap();
            for arg in [None, Some(bad.as_path())] {
                let err = log_options_from(arg, &bad, Writers::Many).unwrap_err();
                assert!(format!("{err:#}").contains(says), "{text}: {err:#}");
            }
        }
    }
}
