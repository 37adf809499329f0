//! [`ConfigError`]: what is wrong with a configuration, always naming the
//! key (and so the flag) it is about.

use std::path::PathBuf;

use weir_devices::FilterError;

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the configuration file {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than any sensible configuration.
    #[error("the configuration file {path} is {len} bytes; the limit is {max}")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        len: u64,
        /// The limit ([`MAX_FILE_BYTES`](super::MAX_FILE_BYTES)).
        max: u64,
    },
    /// The file is not valid TOML.
    #[error("the configuration is not valid TOML")]
    Syntax {
        /// The parser's error, with line and column.
        #[source]
        source: toml::de::Error,
    },
    /// A key this version does not know (a typo, or a newer option).
    #[error("unknown configuration key `{key}`")]
    UnknownKey {
        /// The full dotted key.
        key: String,
    },
    /// A value of the wrong TOML type.
    #[error("`{key}` ({flag}) must be {expected}", flag = flag_name(key))]
    WrongType {
        /// The full dotted key.
        key: &'static str,
        /// What it must be ("a boolean", "a non-negative integer").
        expected: &'static str,
    },
    /// A value of the right type but outside what the key accepts.
    #[error("`{key}` ({flag}): {reason}", flag = flag_name(key))]
    Invalid {
        /// The full dotted key.
        key: &'static str,
        /// What it must be.
        reason: &'static str,
    },
    /// An entry of a table key (a Kafka client property) that the key
    /// does not accept.
    #[error("`{key}` ({flag}): {entry:?}: {reason}", flag = flag_name(key))]
    InvalidEntry {
        /// The table's full dotted key.
        key: &'static str,
        /// The entry's name.
        entry: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A device filter pattern that does not parse.
    #[error("`{key}` ({flag})", flag = flag_name(key))]
    Filter {
        /// The key (`devices.filter`).
        key: &'static str,
        /// Which pattern and why.
        #[source]
        source: FilterError,
    },
    /// A setting the daemon cannot run without was left unset (the binary
    /// fills in `state_dir` and `socket`; a library caller must too).
    #[error("`{key}` ({flag}) is not set", flag = flag_name(key))]
    Missing {
        /// The key.
        key: &'static str,
    },
    /// The configuration could not be written out as TOML.
    #[error("cannot render the configuration as TOML")]
    Render {
        /// The serialiser's error.
        #[source]
        source: toml::ser::Error,
    },
}

impl ConfigError {
    /// The dotted key the error is about, when it is about one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::UnknownKey { key } => Some(key),
            ConfigError::WrongType { key, .. }
            | ConfigError::Invalid { key, .. }
            | ConfigError::InvalidEntry { key, .. }
            | ConfigError::Filter { key, .. }
            | ConfigError::Missing { key } => Some(key),
            _ => None,
        }
    }
}

/// The `weir run` flag that sets a dotted key: `--SECTION-KEY`, with `_`
/// as `-` (`mounts.budget_percent` → `--mounts-budget-percent`); a table
/// key's flag sets one entry, and is named in the singular.
pub fn flag_name(key: &str) -> String {
    if key == "ship.kafka_properties" {
        return "--ship-kafka-property".to_owned();
    }
    let mut flag = String::with_capacity(key.len() + 2);
    flag.push_str("--");
    flag.extend(
        key.chars()
            .map(|c| if c == '.' || c == '_' { '-' } else { c }),
    );
    flag
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_follow_keys() {
        assert_eq!(
            flag_name("mounts.budget_percent"),
            "--mounts-budget-percent"
        );
        assert_eq!(flag_name("state_dir"), "--state-dir");
        assert_eq!(flag_name("ship.kafka_properties"), "--ship-kafka-property");
        let e = ConfigError::Invalid {
            key: "log.flush_ms",
            reason: "must be above 0",
        };
        assert_eq!(
            e.to_string(),
            "`log.flush_ms` (--log-flush-ms): must be above 0"
        );
        assert_eq!(e.key(), Some("log.flush_ms"));
    }
}
