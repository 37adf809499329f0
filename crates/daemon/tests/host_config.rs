//! The daemon's configuration: the file, key by key; the flags laid over
//! it; validation whose errors always name the key (and its flag); and the
//! printed form read back.

use proptest::prelude::*;
use weir_daemon::config::{Config, ConfigError, ConfigOverrides, OnFull, Preallocate, flag_name};
use weir_mounts::BackendChoice;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::from_toml(text).and_then(|c| c.validate().map(|()| c))
}

/// The key a configuration's error names.
fn bad_key(text: &str) -> String {
    let e = parse(text).expect_err(text);
    let key = e
        .key()
        .unwrap_or_else(|| panic!("{text:?}: no key in {e:?}"))
        .to_owned();
    let shown = e.to_string();
    if !matches!(e, ConfigError::UnknownKey { .. }) {
        // The message names the key and the flag that sets it.
        assert!(shown.contains(&key), "{shown:?} lacks {key}");
        assert!(shown.contains(&flag_name(&key)), "{shown:?} lacks the flag");
    }
    key
}

#[test]
fn nothing_configured_is_the_defaults() {
    let c = parse("").unwrap();
    assert_eq!(c, Config::default());
    assert_eq!(c.access.group.as_deref(), Some("weir"));
    assert_eq!(c.access.effective_mode(), 0o660);
    assert!(c.mounts.enabled && c.devices.enabled);
    assert_eq!(c.daemon.checkpoint_secs, 5);
    // The log's defaults are weir-log's own, but for the floor, which
    // weir-log leaves off and a host keeps.
    let o = c.log.options();
    let d = weir_log::Options::default();
    assert_eq!(
        (
            o.segment_size,
            o.flush_interval,
            o.sync_interval,
            o.ring_slots
        ),
        (
            d.segment_size,
            d.flush_interval,
            d.sync_interval,
            d.ring_slots
        )
    );
    assert_eq!(
        o.retention,
        weir_log::Retention {
            keep_bytes: 256 << 20,
            keep_age: std::time::Duration::from_secs(7 * 24 * 3600),
            ..d.retention
        }
    );
    assert!(!d.retention.has_floor() && o.retention.has_floor());
    assert_eq!(
        (c.log.keep_mib, c.log.keep_age_secs),
        (
            weir_daemon::config::HOST_KEEP_MIB,
            weir_daemon::config::HOST_KEEP_AGE_SECS
        )
    );
    // Under the size limit, with room left for consumers that lag.
    assert!(o.retention.keep_bytes * 8 <= o.retention.max_bytes);
}

#[test]
fn a_floor_of_zero_is_clear_then_purge() {
    for text in [
        "[log]
keep_mib = 0",
        "[log]
keep_age_secs = 0",
    ] {
        let r = parse(text).unwrap().log.options().retention;
        assert!(!r.has_floor(), "{text}: {r:?}");
    }
    let r = parse(
        "[log]
keep_mib = 0
keep_age_secs = 0",
    )
    .unwrap()
    .log
    .options()
    .retention;
    assert_eq!(r, weir_log::Retention::default());
}

#[test]
fn every_key_is_read() {
    let c = parse(
        r#"
state_dir = "/srv/weir"
socket = "/run/w.sock"
[access]
group = "storage"
public_read = true
socket_mode = "0666"
[mounts]
enabled = false
backend = "mountinfo"
budget_percent = 2.5
audit_secs = 0
[devices]
enabled = true
filter = ["a|loop|", "r|.*|"]
on_vg_complete = "vgchange -aay"
[fs]
watch = ["/srv", "/home/a b"]
mtime_interval_ms = 250
[ship]
nats = "nats://a:4222,nats://b:4222"
host = "db7.example"
stream = "FLEET"
consumer = "ship-a"
mask = "all,-MARK"
replicas = 3
linger_ms = 250
[log]
flush_ms = 20
sync_ms = 0
segment_mib = 16
preallocate = "reserve"
ring_slots = 1024
append_timeout_ms = 500
group_commit_us = 5000
max_mib = 64
max_age_secs = 3600
keep_mib = 32
keep_age_secs = 86400
on_full = "drop_oldest"
max_idle_records = 0
max_idle_secs = 60
[api]
max_body_bytes = 4096
max_followers = 3
[daemon]
checkpoint_secs = 9
"#,
    )
    .unwrap();
    assert_eq!(
        c.state_dir.as_deref(),
        Some(std::path::Path::new("/srv/weir"))
    );
    assert_eq!(
        c.socket.as_deref(),
        Some(std::path::Path::new("/run/w.sock"))
    );
    assert_eq!(c.access.group.as_deref(), Some("storage"));
    assert_eq!(c.access.effective_mode(), 0o666);
    assert!(!c.mounts.enabled);
    assert_eq!(c.mounts.backend, BackendChoice::Mountinfo);
    assert_eq!(c.mounts.tracker_options().audit_interval, None);
    assert!((c.mounts.tracker_options().budget - 0.025).abs() < 1e-12);
    let d = c.devices.tracker_options().unwrap();
    assert!(d.filter.accepts("/dev/loop0") && !d.filter.accepts("/dev/sda"));
    assert_eq!(
        d.on_vg_complete,
        Some(vec!["vgchange".to_owned(), "-aay".to_owned()])
    );
    let o = c.log.options();
    assert_eq!(o.segment_size, 16 << 20);
    assert_eq!(o.preallocation, weir_log::Preallocation::Reserve);
    assert_eq!(o.sync_interval, None);
    assert_eq!(o.ring_slots, 1024);
    assert_eq!(o.group_commit_wait, std::time::Duration::from_millis(5));
    assert_eq!(o.retention.max_bytes, 64 << 20);
    assert_eq!(
        o.retention.max_age,
        Some(std::time::Duration::from_secs(3600))
    );
    assert_eq!(o.retention.keep_bytes, 32 << 20);
    assert_eq!(o.retention.keep_age, std::time::Duration::from_secs(86400));
    assert_eq!(o.retention.on_full, weir_log::FullPolicy::DropOldest);
    assert_eq!(o.retention.max_idle_records, None);
    assert_eq!((c.api.max_body_bytes, c.api.max_followers), (4096, 3));
    assert_eq!(c.daemon.checkpoint_secs, 9);
    let f = c.fs.tracker_options().expect("roots, so a tracker");
    assert_eq!(
        f.roots,
        [
            std::path::PathBuf::from("/srv"),
            std::path::PathBuf::from("/home/a b")
        ]
    );
    assert_eq!(f.mtime_interval, std::time::Duration::from_millis(250));
    assert!(f.resume, "a daemon resumes from the log");
    let h = &c.ship;
    assert_eq!(h.nats.as_deref(), Some("nats://a:4222,nats://b:4222"));
    assert_eq!(h.host.as_deref(), Some("db7.example"));
    assert_eq!(
        (h.stream.as_str(), h.consumer.as_deref()),
        ("FLEET", Some("ship-a"))
    );
    assert_eq!((h.mask.as_str(), h.replicas), ("all,-MARK", 3));
    assert_eq!(h.linger_ms, 250);
}

#[test]
fn no_server_no_shipper() {
    let c = parse("").unwrap();
    assert_eq!(c.ship.nats, None);
    assert_eq!(c.ship.host, None, "the machine's name");
    assert_eq!(c.ship.stream, "WEIR");
    assert_eq!(
        c.ship.consumer, None,
        "the sink's own: ship-nats or ship-kafka"
    );
    assert_eq!(c.ship.replicas, 1);
    assert_eq!((c.ship.kafka, c.ship.topic.as_str()), (None, "weir"));
    let c = parse(
        "[ship]
nats = \"\"\nhost = \"\"\nconsumer = \"\"",
    )
    .unwrap();
    assert_eq!(
        (c.ship.nats, c.ship.host, c.ship.consumer),
        (None, None, None)
    );
}

#[test]
fn kafka_is_a_sink_of_its_own() {
    let c = parse(
        "[ship]
kafka = \"k1:9092,k2:9092\"\ntopic = \"fleet.weir\"\npartitions = 12",
    )
    .unwrap();
    assert_eq!(c.ship.kafka.as_deref(), Some("k1:9092,k2:9092"));
    assert_eq!(
        (c.ship.topic.as_str(), c.ship.partitions),
        ("fleet.weir", 12)
    );
    c.validate().unwrap();
    for (text, key) in [
        ("nats = \"nats://a\"\nkafka = \"k:9092\"", "ship.kafka"),
        ("kafka = \"k:9092\"\ntopic = \"a b\"", "ship.topic"),
        ("kafka = \"k:9092\"\npartitions = 0", "ship.partitions"),
        ("kafka_properties = \"ssl\"", "ship.kafka_properties"),
        (
            "kafka_properties = { \"ssl.ca.location\" = 1 }",
            "ship.kafka_properties",
        ),
        (
            "kafka_properties = { acks = \"1\" }",
            "ship.kafka_properties",
        ),
        (
            "kafka_properties = { \"\" = \"x\" }",
            "ship.kafka_properties",
        ),
    ] {
        assert_eq!(bad_key(&format!("[ship]\n{text}")), key, "{text}");
    }
}

#[test]
fn kafka_client_properties_are_a_table_and_weirs_own_are_refused() {
    let c = parse(
        "[ship]
kafka = \"k:9093\"
[ship.kafka_properties]
\"security.protocol\" = \"sasl_ssl\"
\"ssl.ca.location\" = \"/etc/weir/ca.pem\"
\"sasl.mechanisms\" = \"SCRAM-SHA-512\"",
    )
    .unwrap();
    let props: Vec<(&str, &str)> = c
        .ship
        .kafka_properties
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        props,
        [
            ("sasl.mechanisms", "SCRAM-SHA-512"),
            ("security.protocol", "sasl_ssl"),
            ("ssl.ca.location", "/etc/weir/ca.pem")
        ]
    );
    // Each flag sets one property over the file's.
    let mut f = c.clone();
    let mut o = ConfigOverrides::default();
    o.ship_kafka_properties = vec![
        ("security.protocol".into(), "ssl".into()),
        ("compression.type".into(), "gzip".into()),
    ];
    f.apply(o);
    f.validate().unwrap();
    assert_eq!(f.ship.kafka_properties["security.protocol"], "ssl");
    assert_eq!(f.ship.kafka_properties["compression.type"], "gzip");
    assert_eq!(f.ship.kafka_properties.len(), 4);
    // Those exactly-once rests on are weir's, by any of their names.
    for owned in [
        "transactional.id",
        "enable.idempotence",
        "request.required.acks",
    ] {
        let mut f = c.clone();
        let mut o = ConfigOverrides::default();
        o.ship_kafka_properties = vec![(owned.into(), "x".into())];
        f.apply(o);
        let e = f.validate().unwrap_err();
        assert_eq!(e.key(), Some("ship.kafka_properties"));
        let shown = e.to_string();
        assert!(shown.contains("--ship-kafka-property"), "{shown}");
        assert!(shown.contains(owned), "{shown}");
    }
}

#[test]
fn no_watched_roots_no_filesystem_tracker() {
    let c = parse("").unwrap();
    assert!(c.fs.watch.is_empty());
    assert_eq!(c.fs.mtime_interval_ms, 1000, "weir-fs's own default");
    assert!(c.fs.tracker_options().is_none());
    let c = parse(
        "[fs]
mtime_interval_ms = 5",
    )
    .unwrap();
    assert!(
        c.fs.tracker_options().is_none(),
        "an interval alone watches nothing"
    );
    let c = parse(
        "[fs]
watch = []",
    )
    .unwrap();
    assert!(c.fs.tracker_options().is_none());
}

#[test]
fn unknown_keys_are_refused_by_their_full_name() {
    assert_eq!(bad_key("sockett = \"/x\""), "sockett");
    assert_eq!(bad_key("[mounts]\nbudget = 3"), "mounts.budget");
    assert_eq!(bad_key("[devices]\nfilters = []"), "devices.filters");
    assert_eq!(bad_key("[lvm]\nx = 1"), "lvm");
    assert_eq!(bad_key("[fs]\nroots = [\"/srv\"]"), "fs.roots");
    assert_eq!(bad_key("[ship]\npulsar = \"p:6650\""), "ship.pulsar");
    assert_eq!(bad_key("[fs]\nmtime_interval = 5"), "fs.mtime_interval");
    assert_eq!(bad_key("[log.retention]\nmax = 1"), "log.retention");
}

#[test]
fn wrong_types_name_the_key() {
    for (text, key) in [
        ("state_dir = 3", "state_dir"),
        ("mounts = 3", "mounts"),
        ("[mounts]\nenabled = \"yes\"", "mounts.enabled"),
        ("[mounts]\nbudget_percent = \"5\"", "mounts.budget_percent"),
        ("[log]\nflush_ms = -1", "log.flush_ms"),
        ("[log]\nflush_ms = 1.5", "log.flush_ms"),
        ("[devices]\nfilter = \"a|.*|\"", "devices.filter"),
        ("[devices]\nfilter = [1]", "devices.filter"),
        ("[access]\nsocket_mode = 0o660", "access.socket_mode"),
        ("[access]\npublic_read = 1", "access.public_read"),
        ("fs = [\"/srv\"]", "fs"),
        ("[fs]\nwatch = \"/srv\"", "fs.watch"),
        ("[ship]\nnats = 4222", "ship.nats"),
        ("[ship]\nreplicas = \"3\"", "ship.replicas"),
        ("[fs]\nwatch = [1]", "fs.watch"),
        ("[fs]\nmtime_interval_ms = \"1s\"", "fs.mtime_interval_ms"),
        ("[fs]\nmtime_interval_ms = -1", "fs.mtime_interval_ms"),
    ] {
        assert_eq!(bad_key(text), key, "{text}");
        assert!(matches!(
            Config::from_toml(text),
            Err(ConfigError::WrongType { .. })
        ));
    }
}

#[test]
fn bad_values_name_the_key() {
    for (text, key) in [
        ("socket = \"\"", "socket"),
        (&format!("socket = \"/{}\"", "s".repeat(107)), "socket"),
        ("[access]\ngroup = \"a:b\"", "access.group"),
        ("[access]\nsocket_mode = \"0999\"", "access.socket_mode"),
        ("[access]\nsocket_mode = \"4755\"", "access.socket_mode"),
        ("[access]\nsocket_mode = \"0060\"", "access.socket_mode"),
        // Others must be able to connect when reads are public.
        (
            "[access]\npublic_read = true\nsocket_mode = \"0660\"",
            "access.socket_mode",
        ),
        ("[mounts]\nbackend = \"inotify\"", "mounts.backend"),
        ("[mounts]\nbudget_percent = 0", "mounts.budget_percent"),
        ("[mounts]\nbudget_percent = 100.5", "mounts.budget_percent"),
        ("[mounts]\nbudget_percent = nan", "mounts.budget_percent"),
        ("[mounts]\naudit_secs = 100000", "mounts.audit_secs"),
        ("[devices]\nfilter = [\"x|y|\"]", "devices.filter"),
        (
            "[devices]\non_vg_complete = \"   \"",
            "devices.on_vg_complete",
        ),
        ("[log]\nflush_ms = 0", "log.flush_ms"),
        ("[log]\nsegment_mib = 0", "log.segment_mib"),
        ("[log]\ngroup_commit_us = 1000001", "log.group_commit_us"),
        ("[log]\nring_slots = 1000", "log.ring_slots"),
        ("[log]\nring_slots = 1073741824", "log.ring_slots"),
        ("[log]\nsegment_mib = 64\nmax_mib = 100", "log.max_mib"),
        ("[log]\non_full = \"panic\"", "log.on_full"),
        ("[log]\npreallocate = \"always\"", "log.preallocate"),
        (
            "[log]\nmax_age_secs = 9223372036854775807",
            "log.max_age_secs",
        ),
        ("[log]\nkeep_mib = 1099511627777", "log.keep_mib"),
        (
            "[log]\nkeep_age_secs = 9223372036854775807",
            "log.keep_age_secs",
        ),
        ("[api]\nmax_body_bytes = 0", "api.max_body_bytes"),
        ("[ship]\nstream = \"a.b\"", "ship.stream"),
        ("[ship]\nstream = \"\"", "ship.stream"),
        ("[ship]\nconsumer = \"a b\"", "ship.consumer"),
        ("[ship]\nmask = \"NOPE\"", "ship.mask"),
        ("[ship]\nreplicas = 0", "ship.replicas"),
        ("[ship]\nreplicas = 6", "ship.replicas"),
        ("[ship]\nlinger_ms = 60001", "ship.linger_ms"),
        (
            &format!("[ship]\nhost = \"{}\"", "h".repeat(256)),
            "ship.host",
        ),
        ("[fs]\nwatch = [\"\"]", "fs.watch"),
        ("[fs]\nwatch = [\"/srv\", \"/a\\u0000b\"]", "fs.watch"),
        ("[fs]\nmtime_interval_ms = 0", "fs.mtime_interval_ms"),
        ("[fs]\nmtime_interval_ms = 3600001", "fs.mtime_interval_ms"),
        ("[daemon]\ncheckpoint_secs = 0", "daemon.checkpoint_secs"),
    ] {
        assert_eq!(bad_key(text), key, "{text}");
    }
    // A filter keeps weir-devices' typed cause.
    assert!(matches!(
        parse("[devices]\nfilter = [\"x|y|\"]"),
        Err(ConfigError::Filter { .. })
    ));
}

#[test]
fn syntax_errors_are_their_own_kind() {
    for text in ["[mounts", "state_dir = ", "a = 1\na = 2"] {
        assert!(
            matches!(Config::from_toml(text), Err(ConfigError::Syntax { .. })),
            "{text}"
        );
    }
}

#[test]
fn an_empty_string_turns_optional_settings_off() {
    let c = parse("[access]\ngroup = \"\"\n[devices]\non_vg_complete = \"\"").unwrap();
    assert_eq!(c.access.group, None);
    assert_eq!(c.devices.on_vg_complete, None);
}

#[test]
fn flags_override_the_file_and_are_validated_alike() {
    let mut c =
        parse("[mounts]\nbudget_percent = 2.0\naudit_secs = 7\n[access]\ngroup = \"x\"").unwrap();
    let mut o = ConfigOverrides::default();
    o.mounts_budget_percent = Some(9.0);
    o.access_group = Some(String::new());
    o.devices_filter = Some(vec!["r|.*|".to_owned()]);
    o.log_on_full = Some(OnFull::DropOldest);
    o.log_preallocate = Some(Preallocate::ZeroFill);
    o.log_keep_mib = Some(0);
    c.apply(o);
    c.validate().unwrap();
    assert_eq!(c.log.keep_mib, 0);
    assert!(!c.log.options().retention.has_floor());
    assert_eq!(c.mounts.budget_percent, 9.0);
    assert_eq!(
        c.mounts.audit_secs, 7,
        "a key without a flag keeps the file's value"
    );
    assert_eq!(c.access.group, None);
    assert_eq!(c.devices.filter, ["r|.*|"]);
    assert_eq!(c.log.on_full, OnFull::DropOldest);
    assert_eq!(c.log.preallocate, Preallocate::ZeroFill);

    // `--fs-watch` replaces the file's list, as `--devices-filter` does.
    let mut f = parse("[fs]\nwatch = [\"/srv\", \"/home\"]\nmtime_interval_ms = 9").unwrap();
    let mut o = ConfigOverrides::default();
    o.fs_watch = Some(vec!["/data".into()]);
    f.apply(o);
    f.validate().unwrap();
    assert_eq!(f.fs.watch, [std::path::PathBuf::from("/data")]);
    assert_eq!(
        f.fs.mtime_interval_ms, 9,
        "a key without a flag keeps the file's value"
    );
    let mut o = ConfigOverrides::default();
    o.fs_mtime_interval_ms = Some(0);
    f.apply(o);
    let e = f.validate().unwrap_err();
    assert_eq!(e.key(), Some("fs.mtime_interval_ms"));
    assert!(e.to_string().contains("--fs-mtime-interval-ms"), "{e}");

    let mut o = ConfigOverrides::default();
    o.fs_mtime_interval_ms = Some(9);
    o.ship_nats = Some("nats://n:4222".into());
    o.ship_replicas = Some(9);
    f.apply(o);
    let e = f.validate().unwrap_err();
    assert_eq!(e.key(), Some("ship.replicas"));
    assert!(e.to_string().contains("--ship-replicas"), "{e}");
    assert_eq!(f.ship.nats.as_deref(), Some("nats://n:4222"));
    let mut o = ConfigOverrides::default();
    o.ship_nats = Some(String::new());
    o.ship_replicas = Some(3);
    f.apply(o);
    assert_eq!(f.ship.nats, None, "an empty flag turns shipping off");

    let mut o = ConfigOverrides::default();
    o.log_ring_slots = Some(3);
    c.apply(o);
    let e = c.validate().unwrap_err();
    assert_eq!(e.key(), Some("log.ring_slots"));
    assert!(e.to_string().contains("--log-ring-slots"), "{e}");
    assert_eq!("drop_oldest".parse::<OnFull>().unwrap(), OnFull::DropOldest);
    assert!("nope".parse::<OnFull>().is_err());
    assert_eq!(
        "zero_fill".parse::<Preallocate>().unwrap(),
        Preallocate::ZeroFill
    );
    assert!("zero-fill".parse::<Preallocate>().is_err());
}

#[test]
fn files_are_read_with_a_bound() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("weir.toml");
    std::fs::write(&p, "[daemon]\ncheckpoint_secs = 2\n").unwrap();
    let c = Config::load(&p).unwrap();
    assert_eq!(c.daemon.checkpoint_secs, 2);
    assert_eq!(c.source.as_deref(), Some(p.as_path()));

    let big = d.path().join("big.toml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(weir_daemon::config::MAX_FILE_BYTES + 1).unwrap();
    assert!(matches!(
        Config::load(&big),
        Err(ConfigError::TooLarge { .. })
    ));
    assert!(matches!(
        Config::load(&d.path().join("absent.toml")),
        Err(ConfigError::Read { .. })
    ));
}

#[test]
fn the_printed_form_reads_back() {
    let mut c = Config::default();
    c.state_dir = Some("/var/lib/weir".into());
    c.socket = Some("/run/weir/weir.sock".into());
    c.access.socket_mode = Some(0o640);
    c.access.group = None;
    c.mounts.backend = BackendChoice::Fanotify;
    c.devices.filter = vec!["a|sd|".to_owned()];
    c.devices.on_vg_complete = Some("true".to_owned());
    c.log.on_full = OnFull::DropOldest;
    c.log.preallocate = Preallocate::Reserve;
    c.fs.watch = vec!["/srv".into(), "/home/x y".into()];
    c.fs.mtime_interval_ms = 40;
    c.ship.nats = Some("nats://n:4222".into());
    c.ship.mask = "MOUNT_ATTACH,MOUNT_DETACH".into();
    c.ship
        .kafka_properties
        .insert("ssl.ca.location".into(), "/etc/a b/ca.pem".into());
    let text = c.to_toml().unwrap();
    assert!(
        text.contains("[ship.kafka_properties]\n\"ssl.ca.location\" = \"/etc/a b/ca.pem\"\n"),
        "{text}"
    );
    assert!(
        text.contains("[ship]\nnats = \"nats://n:4222\"\nkafka = \"\"\nhost = \"\"\n"),
        "{text}"
    );
    assert!(text.contains("socket_mode = \"0640\""), "{text}");
    assert!(
        text.contains("[fs]\nwatch = [\"/srv\", \"/home/x y\"]\nmtime_interval_ms = 40\n"),
        "{text}"
    );
    assert_eq!(parse(&text).unwrap(), c);
    assert_eq!(
        parse(&Config::default().to_toml().unwrap()).unwrap(),
        Config::default()
    );
}

proptest! {
    /// Any numbers: validation decides without panicking, and whatever it
    /// accepts prints and reads back unchanged.
    #[test]
    fn numbers_validate_and_round_trip(
        flush in 0u64..70_000,
        sync in 0u64..4_000_000,
        segment in 0u64..80,
        ring_pow in 0u32..22,
        max in 0u64..2_000,
        idle in any::<u64>(),
        body in 0u64..(5 << 28),
        followers in 0u64..(5 << 18),
        checkpoint in 0u64..90_000,
        budget in -1.0f64..110.0,
        audit in 0u64..90_000,
    ) {
        let text = format!(
            "[log]\nflush_ms = {flush}\nsync_ms = {sync}\nsegment_mib = {segment}\n\
             ring_slots = {}\nmax_mib = {max}\nmax_idle_records = {}\n\
             [api]\nmax_body_bytes = {body}\nmax_followers = {followers}\n\
             [daemon]\ncheckpoint_secs = {checkpoint}\n\
             [mounts]\nbudget_percent = {budget:?}\naudit_secs = {audit}\n",
            1u64 << ring_pow,
            idle >> 1,
        );
        if let Ok(c) = parse(&text) {
            prop_assert_eq!(parse(&c.to_toml().unwrap()).unwrap(), c.clone());
            // What validation accepts, weir-log accepts too (checked where
            // the ring is small enough to open cheaply).
            if c.log.ring_slots.is_some_and(|n| n <= 1 << 14) {
                let d = tempfile::tempdir().unwrap();
                let log = weir_log::Log::open(d.path(), c.log.options());
                prop_assert!(log.is_ok(), "{:?}", log.err());
            }
        }
    }
}
