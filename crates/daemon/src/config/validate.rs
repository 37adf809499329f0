//! Checking a configuration before anything starts: each value against
//! what its key accepts, and keys against each other. Bounds are generous
//! but finite, so that no value can overflow a deadline or ask for
//! unbounded memory further down.

use std::os::unix::ffi::OsStrExt;

use super::{Config, ConfigError};

/// The longest socket path: `sun_path` holds 108 bytes with the NUL.
const MAX_SOCKET_PATH: usize = 107;
/// The longest group name accepted (shadow-utils allow 32; NSS more).
const MAX_GROUP_NAME: usize = 256;
const DAY_SECS: u64 = 24 * 3600;
/// A century: "never" is 0, and more than this is a mistake.
const CENTURY_SECS: u64 = 100 * 365 * DAY_SECS;
/// The most directory trees one daemon watches: each root costs a walk at
/// start and a cookie per barrier; thousands are a mistake, not a plan.
const MAX_FS_ROOTS: usize = 1024;

fn bad(key: &'static str, reason: &'static str) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid { key, reason })
}

fn within(
    key: &'static str,
    v: u64,
    lo: u64,
    hi: u64,
    reason: &'static str,
) -> Result<(), ConfigError> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        bad(key, reason)
    }
}

impl Config {
    /// Checks every value; the error names the first bad key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(d) = &self.state_dir
            && d.as_os_str().is_empty()
        {
            return bad("state_dir", "must not be empty");
        }
        if let Some(s) = &self.socket {
            let len = s.as_os_str().as_bytes().len();
            if len == 0 {
                return bad("socket", "must not be empty");
            }
            if len > MAX_SOCKET_PATH {
                return bad("socket", "must be at most 107 bytes long (sun_path)");
            }
        }
        self.validate_access()?;
        self.validate_sources()?;
        self.validate_fs()?;
        self.validate_ship()?;
        self.validate_log()?;
        let a = &self.api;
        within(
            "api.max_body_bytes",
            a.max_body_bytes,
            1,
            1 << 30,
            "must be between 1 and 1073741824 (1 GiB)",
        )?;
        within(
            "api.max_followers",
            a.max_followers,
            0,
            1 << 20,
            "must be at most 1048576",
        )?;
        within(
            "daemon.checkpoint_secs",
            self.daemon.checkpoint_secs,
            1,
            DAY_SECS,
            "must be between 1 and 86400 (a day)",
        )
    }

    fn validate_access(&self) -> Result<(), ConfigError> {
        let a = &self.access;
        if let Some(g) = &a.group {
            if g.len() > MAX_GROUP_NAME {
                return bad("access.group", "must be at most 256 bytes long");
            }
            if g.bytes()
                .any(|b| b == b':' || b == b'/' || b.is_ascii_whitespace() || b == 0)
            {
                return bad(
                    "access.group",
                    "must be a group name (no ':', '/', whitespace or NUL)",
                );
            }
        }
        let mode = a.effective_mode();
        // Connecting to a Unix socket needs write permission on it.
        if mode & 0o200 == 0 {
            return bad(
                "access.socket_mode",
                "must let the owner connect (u+w), or the daemon cannot check itself",
            );
        }
        if a.public_read && mode & 0o002 == 0 {
            return bad(
                "access.socket_mode",
                "access.public_read needs a mode that lets others connect (o+w), e.g. 0666",
            );
        }
        Ok(())
    }

    fn validate_sources(&self) -> Result<(), ConfigError> {
        let m = &self.mounts;
        if !(m.budget_percent.is_finite() && m.budget_percent > 0.0 && m.budget_percent <= 100.0) {
            return bad(
                "mounts.budget_percent",
                "must be a percentage above 0 and at most 100",
            );
        }
        within(
            "mounts.audit_secs",
            m.audit_secs,
            0,
            DAY_SECS,
            "must be at most 86400 (a day); 0 turns the audit off",
        )?;
        let d = &self.devices;
        weir_devices::Filter::parse(&d.filter).map_err(|source| ConfigError::Filter {
            key: "devices.filter",
            source,
        })?;
        if let Some(cmd) = &d.on_vg_complete
            && cmd.split_whitespace().next().is_none()
        {
            return bad(
                "devices.on_vg_complete",
                "must name a command (an empty string turns it off)",
            );
        }
        Ok(())
    }

    /// The roots are checked for what the text alone shows; whether each
    /// exists, is a directory, can be marked and overlaps no other is
    /// the tracker's to find when it starts, with the path in its error.
    fn validate_fs(&self) -> Result<(), ConfigError> {
        let f = &self.fs;
        if f.watch.len() > MAX_FS_ROOTS {
            return bad("fs.watch", "must list at most 1024 directories");
        }
        for p in &f.watch {
            let b = p.as_os_str().as_bytes();
            if b.is_empty() {
                return bad("fs.watch", "must not hold an empty path");
            }
            if b.contains(&0) {
                return bad("fs.watch", "must not hold a path with a NUL byte");
            }
        }
        within(
            "fs.mtime_interval_ms",
            f.mtime_interval_ms,
            1,
            3_600_000,
            "must be between 1 and 3600000 (an hour)",
        )
    }

    /// Whether the servers answer, and the stream fits, is the shipper's
    /// to find when it runs (it retries, and `weir status` says why).
    fn validate_ship(&self) -> Result<(), ConfigError> {
        let h = &self.ship;
        if let Some(host) = &h.host
            && weir_ship::wire::check_host(host).is_err()
        {
            return bad("ship.host", "must be at most 255 bytes");
        }
        if h.nats.is_some() && h.kafka.is_some() {
            return bad(
                "ship.kafka",
                "cannot be set with ship.nats: the daemon ships to one sink",
            );
        }
        if let Err(reason) = weir_ship::nats::check_stream_name(&h.stream) {
            return bad("ship.stream", reason);
        }
        if let Err(reason) = weir_ship::kafka::check_topic_name(&h.topic) {
            return bad("ship.topic", reason);
        }
        if let Some(c) = &h.consumer
            && weir_log::check_consumer_name(c).is_err()
        {
            return bad(
                "ship.consumer",
                "must be 1 to 64 ASCII letters, digits, '.', '_' or '-'",
            );
        }
        if !h.mask.is_empty() && weir_log::TypeMask::parse(&h.mask).is_err() {
            return bad(
                "ship.mask",
                "must be type names or numbers, comma-separated, as weir log tail --mask takes them",
            );
        }
        within(
            "ship.replicas",
            h.replicas,
            1,
            5,
            "must be between 1 and 5 (JetStream's most)",
        )?;
        within(
            "ship.partitions",
            h.partitions,
            1,
            10_000,
            "must be between 1 and 10000",
        )?;
        for name in h.kafka_properties.keys() {
            if let Err(reason) = weir_ship::kafka::check_property(name) {
                return Err(ConfigError::InvalidEntry {
                    key: "ship.kafka_properties",
                    entry: name.clone(),
                    reason,
                });
            }
        }
        within(
            "ship.linger_ms",
            h.linger_ms,
            0,
            60_000,
            "must be at most 60000 (a minute)",
        )
    }

    fn validate_log(&self) -> Result<(), ConfigError> {
        let l = &self.log;
        within(
            "log.flush_ms",
            l.flush_ms,
            1,
            60_000,
            "must be between 1 and 60000",
        )?;
        within(
            "log.sync_ms",
            l.sync_ms,
            0,
            3_600_000,
            "must be at most 3600000 (an hour); 0 syncs only on request",
        )?;
        within(
            "log.segment_mib",
            l.segment_mib,
            1,
            weir_log::segment::MAX_SEGMENT >> 20,
            "must be between 1 and 65536 (64 GiB)",
        )?;
        if let Some(n) = l.ring_slots
            && (!n.is_power_of_two() || !(2..=1 << 20).contains(&n))
        {
            return bad(
                "log.ring_slots",
                "must be a power of two between 2 and 1048576",
            );
        }
        within(
            "log.append_timeout_ms",
            l.append_timeout_ms,
            1,
            3_600_000,
            "must be between 1 and 3600000 (an hour)",
        )?;
        within(
            "log.group_commit_us",
            l.group_commit_us,
            0,
            1_000_000,
            "must be at most 1000000 (a second); 0 never waits",
        )?;
        within(
            "log.max_mib",
            l.max_mib,
            l.segment_mib.saturating_mul(2),
            1 << 40,
            "must hold at least two segments (2 × log.segment_mib) and be at most 2^40",
        )?;
        within(
            "log.max_age_secs",
            l.max_age_secs,
            0,
            CENTURY_SECS,
            "must be at most a century; 0 means no age limit",
        )?;
        within(
            "log.keep_mib",
            l.keep_mib,
            0,
            1 << 40,
            "must be at most 2^40; 0 means no floor",
        )?;
        within(
            "log.keep_age_secs",
            l.keep_age_secs,
            0,
            CENTURY_SECS,
            "must be at most a century; 0 means no floor",
        )?;
        within(
            "log.max_idle_secs",
            l.max_idle_secs,
            0,
            CENTURY_SECS,
            "must be at most a century; 0 never evicts for idleness",
        )
    }
}

/// Parses a socket mode written in octal (`"0660"`, `"660"`, `"0o660"`):
/// permission bits only, no set-id or sticky bits.
pub fn parse_mode(s: &str) -> Result<u32, &'static str> {
    let digits = s.strip_prefix("0o").unwrap_or(s);
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return Err("must be an octal mode such as \"0660\"");
    }
    let mode =
        u32::from_str_radix(digits, 8).map_err(|_| "must be an octal mode such as \"0660\"")?;
    if mode > 0o777 {
        return Err("must be permission bits only (at most 0777)");
    }
    Ok(mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(parse_mode("0660"), Ok(0o660));
        assert_eq!(parse_mode("666"), Ok(0o666));
        assert_eq!(parse_mode("0o600"), Ok(0o600));
        for bad in ["", "0o", "0668", "4755", "rw-rw----", "00660", "-660"] {
            assert!(parse_mode(bad).is_err(), "{bad:?}");
        }
    }
}
