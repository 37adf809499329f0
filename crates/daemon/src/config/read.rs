//! Reading the TOML file key by key.
//!
//! serde's derive with `deny_unknown_fields` would reject unknown keys too,
//! but its errors name only the leaf of a key and carry no typed path. So
//! the file is parsed into a table, and each known key is taken out of it
//! and converted on its own: an unknown key is whatever is left over, and
//! every error names the full dotted key.

use std::io::Read;
use std::path::Path;

use serde::de::DeserializeOwned;
use weir_mounts::BackendChoice;

use super::{Config, ConfigError, OnFull, Preallocate};

/// The largest configuration file read. A real one is a few hundred bytes;
/// the bound keeps a wrong path (a device, a log) from being read whole.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

const BOOL: &str = "a boolean (true or false)";
const UINT: &str = "a non-negative integer";
const NUMBER: &str = "a number";
const STRING: &str = "a string";
const STRINGS: &str = "an array of strings";
const PATHS: &str = "an array of paths (strings)";
const TABLE: &str = "a table";
const STRING_TABLE: &str = "a table of strings";

impl Config {
    /// Reads a configuration file over the defaults. Keys it lacks keep
    /// their defaults; nothing is validated yet (see [`Config::validate`]).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let read_err = |source| ConfigError::Read {
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::open(path).map_err(read_err)?;
        let len = file.metadata().map_err(read_err)?.len();
        if len > MAX_FILE_BYTES {
            return Err(ConfigError::TooLarge {
                path: path.to_owned(),
                len,
                max: MAX_FILE_BYTES,
            });
        }
        let mut text = String::new();
        // The size was checked, but the file may grow (or be a pipe).
        file.take(MAX_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(read_err)?;
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(ConfigError::TooLarge {
                path: path.to_owned(),
                len: text.len() as u64,
                max: MAX_FILE_BYTES,
            });
        }
        let mut c = Config::from_toml(&text)?;
        c.source = Some(path.to_owned());
        Ok(c)
    }

    /// Reads a configuration from TOML text over the defaults.
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let table: toml::Table = text
            .parse()
            .map_err(|source| ConfigError::Syntax { source })?;
        let mut c = Config::default();
        let mut root = Keys::new("", table);
        set(&mut c.state_dir, root.take("state_dir", STRING)?.map(Some));
        set(&mut c.socket, root.take("socket", STRING)?.map(Some));

        if let Some(mut s) = root.section("access")? {
            let a = &mut c.access;
            set(&mut a.group, s.take("access.group", STRING)?.map(non_empty));
            set(&mut a.public_read, s.take("access.public_read", BOOL)?);
            if let Some(m) = s.take::<String>("access.socket_mode", STRING)? {
                a.socket_mode =
                    Some(
                        super::parse_mode(&m).map_err(|reason| ConfigError::Invalid {
                            key: "access.socket_mode",
                            reason,
                        })?,
                    );
            }
            s.finish()?;
        }
        if let Some(mut s) = root.section("mounts")? {
            let m = &mut c.mounts;
            set(&mut m.enabled, s.take("mounts.enabled", BOOL)?);
            if let Some(b) = s.take::<String>("mounts.backend", STRING)? {
                m.backend = b
                    .parse::<BackendChoice>()
                    .map_err(|_| ConfigError::Invalid {
                        key: "mounts.backend",
                        reason: "must be auto, fanotify or mountinfo",
                    })?;
            }
            set(
                &mut m.budget_percent,
                s.take("mounts.budget_percent", NUMBER)?,
            );
            set(&mut m.audit_secs, s.take("mounts.audit_secs", UINT)?);
            s.finish()?;
        }
        if let Some(mut s) = root.section("devices")? {
            let d = &mut c.devices;
            set(&mut d.enabled, s.take("devices.enabled", BOOL)?);
            set(&mut d.filter, s.take("devices.filter", STRINGS)?);
            set(
                &mut d.on_vg_complete,
                s.take("devices.on_vg_complete", STRING)?.map(non_empty),
            );
            s.finish()?;
        }
        if let Some(mut s) = root.section("fs")? {
            let f = &mut c.fs;
            set(&mut f.watch, s.take("fs.watch", PATHS)?);
            set(
                &mut f.mtime_interval_ms,
                s.take("fs.mtime_interval_ms", UINT)?,
            );
            set(&mut f.content, s.take("fs.content", BOOL)?);
            s.finish()?;
        }
        if let Some(mut s) = root.section("ship")? {
            let h = &mut c.ship;
            set(&mut h.nats, s.take("ship.nats", STRING)?.map(non_empty));
            set(&mut h.kafka, s.take("ship.kafka", STRING)?.map(non_empty));
            set(&mut h.host, s.take("ship.host", STRING)?.map(non_empty));
            set(&mut h.stream, s.take("ship.stream", STRING)?);
            set(&mut h.topic, s.take("ship.topic", STRING)?);
            set(&mut h.partitions, s.take("ship.partitions", UINT)?);
            set(
                &mut h.consumer,
                s.take("ship.consumer", STRING)?.map(non_empty),
            );
            set(&mut h.mask, s.take("ship.mask", STRING)?);
            set(&mut h.replicas, s.take("ship.replicas", UINT)?);
            set(&mut h.linger_ms, s.take("ship.linger_ms", UINT)?);
            set(
                &mut h.kafka_properties,
                s.take("ship.kafka_properties", STRING_TABLE)?,
            );
            s.finish()?;
        }
        if let Some(mut s) = root.section("log")? {
            let l = &mut c.log;
            set(&mut l.flush_ms, s.take("log.flush_ms", UINT)?);
            set(&mut l.sync_ms, s.take("log.sync_ms", UINT)?);
            set(&mut l.segment_mib, s.take("log.segment_mib", UINT)?);
            if let Some(p) = s.take::<String>("log.preallocate", STRING)? {
                l.preallocate = parse_preallocate(&p)?;
            }
            set(&mut l.ring_slots, s.take("log.ring_slots", UINT)?.map(Some));
            set(
                &mut l.append_timeout_ms,
                s.take("log.append_timeout_ms", UINT)?,
            );
            set(&mut l.group_commit_us, s.take("log.group_commit_us", UINT)?);
            set(&mut l.max_mib, s.take("log.max_mib", UINT)?);
            set(&mut l.max_age_secs, s.take("log.max_age_secs", UINT)?);
            set(&mut l.keep_mib, s.take("log.keep_mib", UINT)?);
            set(&mut l.keep_age_secs, s.take("log.keep_age_secs", UINT)?);
            if let Some(p) = s.take::<String>("log.on_full", STRING)? {
                l.on_full = parse_on_full(&p)?;
            }
            set(
                &mut l.max_idle_records,
                s.take("log.max_idle_records", UINT)?,
            );
            set(&mut l.max_idle_secs, s.take("log.max_idle_secs", UINT)?);
            s.finish()?;
        }
        if let Some(mut s) = root.section("api")? {
            set(
                &mut c.api.max_body_bytes,
                s.take("api.max_body_bytes", UINT)?,
            );
            set(&mut c.api.max_followers, s.take("api.max_followers", UINT)?);
            s.finish()?;
        }
        if let Some(mut s) = root.section("daemon")? {
            set(
                &mut c.daemon.checkpoint_secs,
                s.take("daemon.checkpoint_secs", UINT)?,
            );
            s.finish()?;
        }
        root.finish()?;
        Ok(c)
    }
}

/// `log.on_full`'s names.
pub(super) fn parse_on_full(s: &str) -> Result<OnFull, ConfigError> {
    match s {
        "evict_most_idle" => Ok(OnFull::EvictMostIdle),
        "drop_oldest" => Ok(OnFull::DropOldest),
        _ => Err(ConfigError::Invalid {
            key: "log.on_full",
            reason: "must be evict_most_idle or drop_oldest",
        }),
    }
}

/// `log.preallocate`'s names.
pub(super) fn parse_preallocate(s: &str) -> Result<Preallocate, ConfigError> {
    match s {
        "auto" => Ok(Preallocate::Auto),
        "reserve" => Ok(Preallocate::Reserve),
        "zero_fill" => Ok(Preallocate::ZeroFill),
        _ => Err(ConfigError::Invalid {
            key: "log.preallocate",
            reason: "must be auto, reserve or zero_fill",
        }),
    }
}

/// An empty string turns an optional setting off.
pub(super) fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// Replaces `field` when a value was given.
pub(super) fn set<T>(field: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *field = v;
    }
}

/// The keys of one table not yet taken.
struct Keys {
    /// `""` for the root, else the section's name.
    section: &'static str,
    table: toml::Table,
}

impl Keys {
    fn new(section: &'static str, table: toml::Table) -> Keys {
        Keys { section, table }
    }

    /// Takes `key` (its full dotted name; the table holds its last part)
    /// and converts it.
    fn take<T: DeserializeOwned>(
        &mut self,
        key: &'static str,
        expected: &'static str,
    ) -> Result<Option<T>, ConfigError> {
        let leaf = key.rsplit_once('.').map_or(key, |(_, leaf)| leaf);
        match self.table.remove(leaf) {
            None => Ok(None),
            Some(v) => v
                .try_into::<T>()
                .map(Some)
                .map_err(|_| ConfigError::WrongType { key, expected }),
        }
    }

    /// Takes the section `[name]`, if present.
    fn section(&mut self, name: &'static str) -> Result<Option<Keys>, ConfigError> {
        match self.table.remove(name) {
            None => Ok(None),
            Some(toml::Value::Table(t)) => Ok(Some(Keys::new(name, t))),
            Some(_) => Err(ConfigError::WrongType {
                key: name,
                expected: TABLE,
            }),
        }
    }

    /// Fails on the first key left over: one nobody asked for.
    fn finish(self) -> Result<(), ConfigError> {
        match self.table.into_iter().next() {
            None => Ok(()),
            Some((k, _)) if self.section.is_empty() => Err(ConfigError::UnknownKey { key: k }),
            Some((k, _)) => Err(ConfigError::UnknownKey {
                key: format!("{}.{k}", self.section),
            }),
        }
    }
}
