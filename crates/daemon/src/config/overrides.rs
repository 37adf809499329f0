//! [`ConfigOverrides`]: the `weir run` flags, laid over the file. One field
//! per key, named after it (`mounts_budget_percent` for
//! `mounts.budget_percent`); `None` keeps the file's value.

use std::path::PathBuf;

use weir_mounts::BackendChoice;

use super::read::{non_empty, set};
use super::{Config, OnFull, Preallocate};

/// A value for any key; what the flags set. An empty string for
/// `access_group`, `devices_on_vg_complete` or `ship_nats` turns that
/// setting off, as in the file.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ConfigOverrides {
    /// `state_dir`.
    pub state_dir: Option<PathBuf>,
    /// `socket`.
    pub socket: Option<PathBuf>,
    /// `access.group`.
    pub access_group: Option<String>,
    /// `access.public_read`.
    pub access_public_read: Option<bool>,
    /// `access.socket_mode` (parse with [`parse_mode`](super::parse_mode)).
    pub access_socket_mode: Option<u32>,
    /// `mounts.enabled`.
    pub mounts_enabled: Option<bool>,
    /// `mounts.backend`.
    pub mounts_backend: Option<BackendChoice>,
    /// `mounts.budget_percent`.
    pub mounts_budget_percent: Option<f64>,
    /// `mounts.audit_secs`.
    pub mounts_audit_secs: Option<u64>,
    /// `devices.enabled`.
    pub devices_enabled: Option<bool>,
    /// `devices.filter`: replaces the file's whole list.
    pub devices_filter: Option<Vec<String>>,
    /// `devices.on_vg_complete`.
    pub devices_on_vg_complete: Option<String>,
    /// `fs.watch`: replaces the file's whole list.
    pub fs_watch: Option<Vec<PathBuf>>,
    /// `fs.mtime_interval_ms`.
    pub fs_mtime_interval_ms: Option<u64>,
    /// `fs.content`.
    pub fs_content: Option<bool>,
    /// `ship.nats` (an empty string ships nothing).
    pub ship_nats: Option<String>,
    /// `ship.kafka` (an empty string ships nothing there).
    pub ship_kafka: Option<String>,
    /// `ship.host` (an empty string is the machine's name).
    pub ship_host: Option<String>,
    /// `ship.stream`.
    pub ship_stream: Option<String>,
    /// `ship.topic`.
    pub ship_topic: Option<String>,
    /// `ship.partitions`.
    pub ship_partitions: Option<u64>,
    /// `ship.consumer` (an empty string is the sink's default).
    pub ship_consumer: Option<String>,
    /// `ship.mask`.
    pub ship_mask: Option<String>,
    /// `ship.replicas`.
    pub ship_replicas: Option<u64>,
    /// `ship.linger_ms`.
    pub ship_linger_ms: Option<u64>,
    /// Keys of `ship.kafka_properties`, each set over the file's.
    pub ship_kafka_properties: Vec<(String, String)>,
    /// `log.flush_ms`.
    pub log_flush_ms: Option<u64>,
    /// `log.sync_ms`.
    pub log_sync_ms: Option<u64>,
    /// `log.segment_mib`.
    pub log_segment_mib: Option<u64>,
    /// `log.preallocate`.
    pub log_preallocate: Option<Preallocate>,
    /// `log.ring_slots`.
    pub log_ring_slots: Option<u64>,
    /// `log.append_timeout_ms`.
    pub log_append_timeout_ms: Option<u64>,
    /// `log.group_commit_us`.
    pub log_group_commit_us: Option<u64>,
    /// `log.max_mib`.
    pub log_max_mib: Option<u64>,
    /// `log.max_age_secs`.
    pub log_max_age_secs: Option<u64>,
    /// `log.keep_mib`.
    pub log_keep_mib: Option<u64>,
    /// `log.keep_age_secs`.
    pub log_keep_age_secs: Option<u64>,
    /// `log.on_full`.
    pub log_on_full: Option<OnFull>,
    /// `log.max_idle_records`.
    pub log_max_idle_records: Option<u64>,
    /// `log.max_idle_secs`.
    pub log_max_idle_secs: Option<u64>,
    /// `api.max_body_bytes`.
    pub api_max_body_bytes: Option<u64>,
    /// `api.max_followers`.
    pub api_max_followers: Option<u64>,
    /// `daemon.checkpoint_secs`.
    pub daemon_checkpoint_secs: Option<u64>,
}

impl Config {
    /// Lays the flags over this configuration. Validate afterwards: a flag
    /// is checked exactly like the key it sets.
    pub fn apply(&mut self, o: ConfigOverrides) {
        set(&mut self.state_dir, o.state_dir.map(Some));
        set(&mut self.socket, o.socket.map(Some));
        let a = &mut self.access;
        set(&mut a.group, o.access_group.map(non_empty));
        set(&mut a.public_read, o.access_public_read);
        set(&mut a.socket_mode, o.access_socket_mode.map(Some));
        let m = &mut self.mounts;
        set(&mut m.enabled, o.mounts_enabled);
        set(&mut m.backend, o.mounts_backend);
        set(&mut m.budget_percent, o.mounts_budget_percent);
        set(&mut m.audit_secs, o.mounts_audit_secs);
        let d = &mut self.devices;
        set(&mut d.enabled, o.devices_enabled);
        set(&mut d.filter, o.devices_filter);
        set(
            &mut d.on_vg_complete,
            o.devices_on_vg_complete.map(non_empty),
        );
        set(&mut self.fs.watch, o.fs_watch);
        set(&mut self.fs.mtime_interval_ms, o.fs_mtime_interval_ms);
        set(&mut self.fs.content, o.fs_content);
        let h = &mut self.ship;
        set(&mut h.nats, o.ship_nats.map(non_empty));
        set(&mut h.kafka, o.ship_kafka.map(non_empty));
        set(&mut h.host, o.ship_host.map(non_empty));
        set(&mut h.stream, o.ship_stream);
        set(&mut h.topic, o.ship_topic);
        set(&mut h.partitions, o.ship_partitions);
        set(&mut h.consumer, o.ship_consumer.map(non_empty));
        set(&mut h.mask, o.ship_mask);
        set(&mut h.replicas, o.ship_replicas);
        set(&mut h.linger_ms, o.ship_linger_ms);
        h.kafka_properties.extend(o.ship_kafka_properties);
        let l = &mut self.log;
        set(&mut l.flush_ms, o.log_flush_ms);
        set(&mut l.sync_ms, o.log_sync_ms);
        set(&mut l.segment_mib, o.log_segment_mib);
        set(&mut l.preallocate, o.log_preallocate);
        set(&mut l.ring_slots, o.log_ring_slots.map(Some));
        set(&mut l.append_timeout_ms, o.log_append_timeout_ms);
        set(&mut l.group_commit_us, o.log_group_commit_us);
        set(&mut l.max_mib, o.log_max_mib);
        set(&mut l.max_age_secs, o.log_max_age_secs);
        set(&mut l.keep_mib, o.log_keep_mib);
        set(&mut l.keep_age_secs, o.log_keep_age_secs);
        set(&mut l.on_full, o.log_on_full);
        set(&mut l.max_idle_records, o.log_max_idle_records);
        set(&mut l.max_idle_secs, o.log_max_idle_secs);
        set(&mut self.api.max_body_bytes, o.api_max_body_bytes);
        set(&mut self.api.max_followers, o.api_max_followers);
        set(&mut self.daemon.checkpoint_secs, o.daemon_checkpoint_secs);
    }
}
