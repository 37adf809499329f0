//! `weir run`: the daemon. This module only builds its configuration —
//! defaults, the file, `$WEIR_SOCKET`, the flags, in rising precedence —
//! and hands it to `weir_daemon::run`, which hosts the log, the trackers
//! and the API until SIGTERM or SIGINT.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use weir_daemon::config::{Config, ConfigOverrides};

use crate::cli::RunArgs;
use crate::daemon::explicit_socket;
use crate::state_dir::StateDir;

pub(super) fn run(
    args: &RunArgs,
    config_file: Option<&Path>,
    state_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
) -> Result<()> {
    let config = configure(args, config_file, state_dir, socket)?;
    if args.print_config {
        print!(
            "{}",
            config.to_toml().context("printing the configuration")?
        );
        return Ok(());
    }
    weir_daemon::run(config).map_err(anyhow::Error::new)
}

/// The configuration in effect, validated.
fn configure(
    args: &RunArgs,
    config_file: Option<&Path>,
    state_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
) -> Result<Config> {
    let mut config = crate::config_file::load(config_file)?;
    config.apply(overrides(args, state_dir, explicit_socket(socket)));
    if config.state_dir.is_none() {
        config.state_dir = Some(StateDir::resolve(None)?.root().to_owned());
    }
    if config.socket.is_none() {
        config.socket = Some(weir_client::default_socket());
    }
    config.validate()?;
    Ok(config)
}

fn overrides(a: &RunArgs, state_dir: Option<PathBuf>, socket: Option<PathBuf>) -> ConfigOverrides {
    let mut o = ConfigOverrides::default();
    o.state_dir = state_dir;
    o.socket = socket;
    o.access_group = a.access_group.clone();
    o.access_public_read = a.access_public_read;
    o.access_socket_mode = a.access_socket_mode;
    o.mounts_enabled = a.mounts_enabled;
    o.mounts_backend = a.mounts_backend;
    o.mounts_budget_percent = a.mounts_budget_percent;
    o.mounts_audit_secs = a.mounts_audit_secs;
    o.devices_enabled = a.devices_enabled;
    o.devices_filter = (!a.devices_filter.is_empty()).then(|| a.devices_filter.clone());
    o.devices_on_vg_complete = a.devices_on_vg_complete.clone();
    o.fs_watch = (!a.fs_watch.is_empty()).then(|| a.fs_watch.clone());
    o.fs_mtime_interval_ms = a.fs_mtime_interval_ms;
    o.fs_content = a.fs_content;
    o.ship_nats = a.ship_nats.clone();
    o.ship_kafka = a.ship_kafka.clone();
    o.ship_topic = a.ship_topic.clone();
    o.ship_partitions = a.ship_partitions;
    o.ship_host = a.ship_host.clone();
    o.ship_stream = a.ship_stream.clone();
    o.ship_consumer = a.ship_consumer.clone();
    o.ship_mask = a.ship_mask.clone();
    o.ship_replicas = a.ship_replicas;
    o.ship_linger_ms = a.ship_linger_ms;
    o.ship_kafka_properties.clone_from(&a.ship_kafka_property);
    o.log_flush_ms = a.log_flush_ms;
    o.log_sync_ms = a.log_sync_ms;
    o.log_segment_mib = a.log_segment_mib;
    o.log_preallocate = a.log_preallocate;
    o.log_ring_slots = a.log_ring_slots;
    o.log_append_timeout_ms = a.log_append_timeout_ms;
    o.log_group_commit_us = a.log_group_commit_us;
    o.log_max_mib = a.log_max_mib;
    o.log_max_age_secs = a.log_max_age_secs;
    o.log_keep_mib = a.log_keep_mib;
    o.log_keep_age_secs = a.log_keep_age_secs;
    o.log_on_full = a.log_on_full;
    o.log_max_idle_records = a.log_max_idle_records;
    o.log_max_idle_secs = a.log_max_idle_secs;
    o.api_max_body_bytes = a.api_max_body_bytes;
    o.api_max_followers = a.api_max_followers;
    o.daemon_checkpoint_secs = a.daemon_checkpoint_secs;
    o
}
