//! Writing a configuration out as TOML (`weir run --print-config`): the
//! values whose TOML form differs from their Rust type.

use serde::Serializer;
use weir_mounts::BackendChoice;

use super::{Config, ConfigError};

impl Config {
    /// The configuration as TOML, every key written out: what `weir run
    /// --print-config` shows, and what [`Config::from_toml`] reads back.
    pub fn to_toml(&self) -> Result<String, ConfigError> {
        toml::to_string(self).map_err(|source| ConfigError::Render { source })
    }
}

/// No value (no group, no server, the machine's host name) is written
/// as the empty string, as the file says it.
pub(super) fn or_empty<S: Serializer>(g: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(g.as_deref().unwrap_or(""))
}

/// Modes are written in octal, as strings (`"0660"`).
pub(super) fn mode<S: Serializer>(m: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
    match m {
        Some(m) => s.serialize_str(&format!("{m:04o}")),
        None => s.serialize_none(),
    }
}

/// The backend by its name.
pub(super) fn backend<S: Serializer>(b: &BackendChoice, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match b {
        BackendChoice::Auto => "auto",
        BackendChoice::Fanotify => "fanotify",
        BackendChoice::Mountinfo => "mountinfo",
    })
}
