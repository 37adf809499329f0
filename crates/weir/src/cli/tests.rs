//! The command line parses as documented: each command's options, and
//! the refusals that clap makes from their definitions.

use super::*;
use clap::CommandFactory;
use weir_log::RecordType;
use weir_view::log_select::Match;

#[test]
fn definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn parses_tail_options() {
    let cli = Cli::try_parse_from([
        "weir", "log", "tail", "--mask", "CREAT", "-f", "--from", "7",
    ])
    .unwrap();
    let Command::Log {
        command: LogCommand::Tail(t),
    } = cli.command
    else {
        panic!("not tail: {:?}", cli.command);
    };
    assert_eq!(t.from, Some(7));
    assert!(t.follow && !t.json);
    let m = t.mask.unwrap();
    assert!(m.contains(RecordType::CREAT) && !m.contains(RecordType::MARK));
    assert!(Cli::try_parse_from(["weir", "log", "write", "--type", "NOPE"]).is_err());
}

fn tail_args(args: &[&str]) -> TailArgs {
    let cli = Cli::try_parse_from(["weir", "log", "tail"].iter().chain(args)).unwrap();
    match cli.command {
        Command::Log {
            command: LogCommand::Tail(t),
        } => t,
        other => panic!("not tail: {other:?}"),
    }
}

#[test]
fn parses_journalctl_options() {
    let t = tail_args(&[
        "-n",
        "5",
        "-S",
        "-1h",
        "--until",
        "2025-03-01 12:00",
        "vg=vg0",
        "/mnt/x",
        "--device",
        "8:1",
        "--type",
        "-MARK",
    ]);
    assert_eq!(t.lines, Some(5));
    assert_eq!(t.since.as_deref(), Some("-1h"));
    assert_eq!(t.until.as_deref(), Some("2025-03-01 12:00"));
    assert_eq!(t.matches.len(), 2);
    assert_eq!(t.device, [Match::device("8:1").unwrap()]);
    assert!(!t.mask.unwrap().contains(RecordType::MARK));
    // A bare -n is -n 10, as journalctl; -e is a flag.
    assert_eq!(tail_args(&["-n"]).lines, Some(10));
    assert_eq!(tail_args(&["-e", "-f"]).lines, None);
    assert!(tail_args(&["-e"]).pager_end);
    let bad =
        |args: &[&str]| Cli::try_parse_from(["weir", "log", "tail"].iter().chain(args)).is_err();
    assert!(bad(&["-n", "x"]) && bad(&["sda1"]) && bad(&["=v"]) && bad(&["--mount", ""]));
}

#[test]
fn socket_and_direct_are_global() {
    let cli = Cli::try_parse_from(["weir", "vgs", "--socket", "/tmp/s", "--direct"]).unwrap();
    assert_eq!(cli.socket.as_deref(), Some(std::path::Path::new("/tmp/s")));
    assert!(cli.direct);
    assert!(matches!(cli.command, Command::Vgs(_)));
    let cli = Cli::try_parse_from(["weir", "--socket", "/s", "status", "--json"]).unwrap();
    let Command::Status(a) = cli.command else {
        panic!("not status: {:?}", cli.command);
    };
    assert!(a.json && !cli.direct);
    assert!(matches!(
        Cli::try_parse_from(["weir", "sync"]).unwrap().command,
        Command::Sync(JsonArg { json: false })
    ));
}

#[test]
fn parses_lvm_report_columns() {
    let cli = Cli::try_parse_from(["weir", "lvs", "-o", "+devices", "--filter", "a|x|"]).unwrap();
    let Command::Lvs(a) = cli.command else {
        panic!("not lvs: {:?}", cli.command);
    };
    let c = a.columns.unwrap();
    assert_eq!(c.text, "+devices");
    assert_eq!(
        c.columns.headers(),
        ["LV", "VG", "ATTR", "LSIZE", "DEVICES"]
    );
    assert_eq!(a.list.filter.patterns, ["a|x|"]);
    let cli = Cli::try_parse_from(["weir", "pvs", "--options", "name,size"]).unwrap();
    assert!(matches!(
        cli.command,
        Command::Pvs(PvsArgs {
            columns: Some(_),
            ..
        })
    ));
    let cli = Cli::try_parse_from(["weir", "vgs", "--output", "VG"]).unwrap();
    assert!(matches!(
        cli.command,
        Command::Vgs(VgsArgs {
            columns: Some(_),
            ..
        })
    ));
    let cli = Cli::try_parse_from(["weir", "lvs", "--json"]).unwrap();
    assert!(matches!(
        cli.command,
        Command::Lvs(LvsArgs { columns: None, .. })
    ));
    for bad in [
        &["weir", "lvs", "-o", "nope"][..],
        &["weir", "vgs", "-o", "lv_name"],
        &["weir", "pvs", "-o", ""],
        &["weir", "lvs", "-o", "lv_name", "--json"],
        &["weir", "devices", "-o", "nope"],
        &["weir", "devices", "-o", "name", "--json"],
        &["weir", "devices", "-l", "--json"],
    ] {
        assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
    }
    let e = Cli::try_parse_from(["weir", "lvs", "-o", "lv_name,nope"]).unwrap_err();
    assert!(
        e.to_string()
            .contains("unknown column \"nope\" for weir lvs"),
        "{e}"
    );
}

#[test]
fn parses_mounts_options() {
    let cli = Cli::try_parse_from(["weir", "mounts", "-o", "id,maj:min", "--json"]).unwrap();
    let Command::Mounts(m) = cli.command else {
        panic!("not mounts: {:?}", cli.command);
    };
    assert!(m.command.is_none() && m.list.json && !m.list.verbose);
    assert_eq!(m.list.backend, None, "no --backend: the daemon may answer");
    assert_eq!(m.list.columns.columns.0.len(), 2);
    assert_eq!(m.list.columns.text, "id,maj:min");

    let cli = Cli::try_parse_from(["weir", "mounts", "--backend", "auto"]).unwrap();
    let Command::Mounts(m) = cli.command else {
        panic!("not mounts: {:?}", cli.command);
    };
    assert_eq!(m.list.backend, Some(BackendChoice::Auto));
    assert_eq!(m.list.columns.text, "TARGET,SOURCE,FSTYPE,OPTIONS");

    let cli = Cli::try_parse_from(["weir", "mounts", "watch", "--backend", "mountinfo"]).unwrap();
    let Command::Mounts(MountsArgs {
        command: Some(MountsCommand::Watch(w)),
        ..
    }) = cli.command
    else {
        panic!("not watch: {:?}", cli.command);
    };
    assert_eq!(w.backend, BackendChoice::Mountinfo);
    assert_eq!((w.budget, w.audit_secs), (5.0, 30));

    for bad in [
        &["weir", "mounts", "--backend", "bogus"][..],
        &["weir", "mounts", "-o", "TARGET,NOPE"],
        &["weir", "mounts", "--json", "watch"],
        &["weir", "mounts", "watch", "--budget", "0"],
    ] {
        assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn parses_fs_listing_and_watch() {
    let fs = |args: &[&str]| {
        let cli = Cli::try_parse_from(["weir", "fs"].iter().chain(args)).unwrap();
        let Command::Fs(f) = cli.command else {
            panic!("not fs: {:?}", cli.command);
        };
        f
    };
    let f = fs(&[]);
    assert!(f.command.is_none() && !f.list.json);
    assert!(fs(&["--json"]).list.json);
    let f = fs(&[
        "watch",
        "/srv",
        "/home",
        "--fresh",
        "-q",
        "--mtime-interval-ms",
        "50",
    ]);
    let Some(FsCommand::Watch(w)) = f.command else {
        panic!("not watch: {:?}", f.command);
    };
    assert_eq!(w.roots.len(), 2);
    assert!(w.fresh && w.quiet);
    assert_eq!(w.mtime_interval(), std::time::Duration::from_millis(50));
    for bad in [
        &["weir", "fs", "--json", "watch", "/srv"][..],
        &["weir", "fs", "watch"],
        &["weir", "fs", "--bogus"],
        &["weir", "fs", "watch", "/srv", "--mtime-interval-ms", "0"],
    ] {
        assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn parses_a_path_prefix_of_any_bytes() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    use weir_view::log_select::PathPrefix;
    assert_eq!(
        tail_args(&["--path", "/docs//a/"]).path,
        Some(PathPrefix::new(b"docs/a"))
    );
    assert_eq!(tail_args(&[]).path, None);
    let raw = OsString::from_vec(b"caf\xe9/x".to_vec());
    let cli = Cli::try_parse_from([
        OsString::from("weir"),
        "log".into(),
        "tail".into(),
        "--path".into(),
        raw,
    ])
    .unwrap();
    let Command::Log {
        command: LogCommand::Tail(t),
    } = cli.command
    else {
        panic!("not tail");
    };
    assert_eq!(t.path.unwrap().as_bytes(), b"caf\xe9/x");
}

#[test]
fn parses_the_daemons_fs_flags() {
    let cli = Cli::try_parse_from([
        "weir",
        "run",
        "--fs-watch",
        "/srv",
        "--fs-watch",
        "/home",
        "--fs-mtime-interval-ms",
        "250",
    ])
    .unwrap();
    let Command::Run(r) = cli.command else {
        panic!("not run: {:?}", cli.command);
    };
    assert_eq!(
        r.fs_watch,
        [
            std::path::PathBuf::from("/srv"),
            std::path::PathBuf::from("/home")
        ]
    );
    assert_eq!(r.fs_mtime_interval_ms, Some(250));
    let cli = Cli::try_parse_from(["weir", "run"]).unwrap();
    let Command::Run(r) = cli.command else {
        panic!("not run");
    };
    assert!(r.fs_watch.is_empty() && r.fs_mtime_interval_ms.is_none());
}

#[test]
fn a_broker_is_named_once_with_the_options_of_its_kind() {
    let parse = |args: &[&str]| Cli::try_parse_from(["weir"].iter().chain(args));
    let cli = parse(&[
        "ship",
        "--kafka",
        "k:9093",
        "--topic",
        "fleet",
        "--kafka-property",
        "security.protocol=ssl",
        "--partitions",
        "3",
    ])
    .unwrap();
    let Command::Ship(s) = cli.command else {
        panic!("not ship: {:?}", cli.command);
    };
    assert_eq!(s.broker.kafka.as_deref(), Some("k:9093"));
    assert_eq!(s.broker.topic, "fleet");
    assert_eq!(
        s.broker.kafka_properties,
        [("security.protocol".to_owned(), "ssl".to_owned())]
    );
    let cli = parse(&["fleet", "tail", "--nats", "nats://n", "--stream", "F"]).unwrap();
    let Command::Fleet(FleetArgs {
        command: FleetCommand::Tail(t),
    }) = cli.command
    else {
        panic!("not fleet tail: {:?}", cli.command);
    };
    assert_eq!(
        (t.broker.nats.as_deref(), t.broker.stream.as_str()),
        (Some("nats://n"), "F")
    );
    assert!(parse(&["fleet", "status", "--kafka", "k", "--topic", "t"]).is_ok());
    // One broker, exactly, and only its own kind's options.
    for bad in [
        &["fleet", "status"][..],
        &["fleet", "status", "--nats", "n", "--kafka", "k"],
        &["fleet", "status", "--nats", "n", "--topic", "t"],
        &["fleet", "status", "--kafka", "k", "--stream", "S"],
        &["ship", "--nats", "n", "--kafka-property", "a=b"],
        &["ship", "--kafka", "k", "--kafka-property", "acks=1"],
        &["ship", "--kafka", "k", "--kafka-property", "novalue"],
    ] {
        assert!(parse(bad).is_err(), "{bad:?}");
    }
}
