//! End-to-end tests of `weir mounts` and `weir mounts watch`: the table and
//! its JSON, hostile mount points under both backends, the unprivileged
//! fallback, and the watcher's lines and log records for a real attach,
//! remount, move and detach.
//!
//! Whatever mounts runs as a shell script inside its own private mount
//! namespace (`unshare -m --propagation private`); the test process never
//! mounts. Those tests need root and print `skipped: ...` without it.

#[path = "support/privileged.rs"]
mod privileged;
mod support;

use std::collections::HashSet;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use privileged::{assert_ok, bytes, canonical_tempdir, in_private_ns, skip};
use serde_json::Value;
use support::{Weir, json_bytes};

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// The keys every object of `weir mounts --json` has.
const KEYS: [&str; 18] = [
    "id",
    "parent_id",
    "old_id",
    "old_parent_id",
    "mount_point",
    "root",
    "source",
    "fstype",
    "options",
    "vfs_options",
    "fs_options",
    "propagation",
    "shared",
    "master",
    "propagate_from",
    "unbindable",
    "major",
    "minor",
];

fn weir(args: &[&str]) -> Output {
    Command::new(WEIR).args(args).output().expect("run weir")
}

fn stdout_of(args: &[&str]) -> String {
    let out = weir(args);
    assert_ok(&format!("weir {args:?}"), &out);
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

fn parse_array(text: &str) -> Vec<Value> {
    match serde_json::from_str(text) {
        Ok(Value::Array(a)) => a,
        other => panic!("not a JSON array ({other:?}):\n{text}"),
    }
}

/// The first column of each row after the header.
fn first_column(table: &str) -> Vec<&str> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect()
}

#[test]
fn lists_the_table_as_text_and_json() {
    let table = stdout_of(&["mounts"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["TARGET", "SOURCE", "FSTYPE", "OPTIONS"]);
    let targets = first_column(&table);
    assert!(
        targets.contains(&"/") && targets.contains(&"/proc"),
        "{table}"
    );

    let all = parse_array(&stdout_of(&["mounts", "--json"]));
    let mut ids = HashSet::new();
    for m in &all {
        for k in KEYS {
            assert!(m.get(k).is_some(), "no {k} in {m}");
        }
        assert!(ids.insert(m["id"].as_u64().expect("a numeric id")), "{m}");
    }
    let points: Vec<Vec<u8>> = all.iter().map(|m| json_bytes(&m["mount_point"])).collect();
    assert!(points.contains(&b"/".to_vec()) && points.contains(&b"/proc".to_vec()));
    let proc_ = &all[points.iter().position(|p| p == b"/proc").unwrap()];
    assert_eq!(proc_["fstype"], "proc");

    let two = stdout_of(&["mounts", "-o", "target,FSTYPE"]);
    let mut lines = two.lines();
    assert_eq!(
        lines.next().unwrap().split_whitespace().collect::<Vec<_>>(),
        ["TARGET", "FSTYPE"]
    );
    assert!(lines.any(|l| l.split_whitespace().collect::<Vec<_>>() == ["/proc", "proc"]));

    let bad = weir(&["mounts", "-o", "TARGET,NOPE"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("unknown column \"NOPE\"") && err.contains("USE%"),
        "{err}"
    );
}

#[test]
fn rejects_a_bogus_backend() {
    for args in [
        &["mounts", "--backend", "bogus"][..],
        &["mounts", "watch", "--backend", "bogus"],
    ] {
        let out = weir(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("'bogus'") && err.contains("mountinfo"),
            "{err}"
        );
    }
}

/// The directories of the hostile test: the path of each mount point, and
/// the long one split into a parent (under PATH_MAX, so that a shell can
/// `cd` there) and a last component that takes it past PATH_MAX.
struct Hostile {
    plain: Vec<PathBuf>,
    long_parent: PathBuf,
    long_last: String,
}

impl Hostile {
    fn create(base: &Path) -> Hostile {
        let names: [&[u8]; 5] = [b"a b", b"new\nline", b"\xff", b"back\\slash", b"tab\there"];
        let plain: Vec<PathBuf> = names
            .iter()
            .map(|n| base.join(OsString::from_vec(n.to_vec())))
            .collect();
        for p in &plain {
            std::fs::create_dir(p).unwrap();
        }
        let mut long_parent = base.join("long");
        let mut i = 0;
        while bytes(&long_parent).len() + 201 <= 4000 {
            long_parent.push(format!("{i:02}{}", "x".repeat(198)));
            i += 1;
        }
        let pad = 4000 - bytes(&long_parent).len() - 1;
        if pad > 0 {
            long_parent.push("p".repeat(pad));
        }
        std::fs::create_dir_all(&long_parent).unwrap();
        Hostile {
            plain,
            long_parent,
            long_last: "z".repeat(200),
        }
    }

    fn long(&self) -> Vec<u8> {
        bytes(&self.long_parent.join(&self.long_last))
    }

    /// Every mount point, as bytes.
    fn all(&self) -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = self.plain.iter().map(|p| bytes(p)).collect();
        v.push(self.long());
        v
    }
}

/// Mounts a tmpfs on each hostile directory, then lists with each backend.
const HOSTILE_SCRIPT: &str = r#"
set -e
W=$1 OUT=$2 PARENT=$3 LAST=$4
shift 4
cd "$PARENT"
mkdir "$LAST"
mount -t tmpfs hostile "$LAST"
cd /
for d in "$@"; do mount -t tmpfs hostile "$d"; done
for be in fanotify mountinfo; do
    "$W" mounts --json --verbose --backend $be > "$OUT/$be.json" 2> "$OUT/$be.err"
done
"$W" mounts > "$OUT/table.txt"
"#;

#[test]
fn hostile_mount_points_survive_both_backends() {
    if skip(&["unshare", "mount"]) {
        return;
    }
    let (_t, base) = canonical_tempdir();
    let (_o, out) = canonical_tempdir();
    let h = Hostile::create(&base);
    let mut args: Vec<OsString> = vec![
        WEIR.into(),
        out.clone().into(),
        h.long_parent.clone().into(),
        h.long_last.clone().into(),
    ];
    args.extend(h.plain.iter().map(|p| p.clone().into_os_string()));
    assert_ok("the hostile script", &in_private_ns(HOSTILE_SCRIPT, &args));

    let want = h.all();
    assert!(h.long().len() > 4096, "{}", h.long().len());
    let mut listings = Vec::new();
    for be in ["fanotify", "mountinfo"] {
        let err = std::fs::read_to_string(out.join(format!("{be}.err"))).unwrap();
        assert!(
            err.contains(&format!("weir: backend: {be} (")),
            "{be}: {err}"
        );
        let all = parse_array(&std::fs::read_to_string(out.join(format!("{be}.json"))).unwrap());
        let points: Vec<Vec<u8>> = all.iter().map(|m| json_bytes(&m["mount_point"])).collect();
        for w in &want {
            let n = points.iter().filter(|p| *p == w).count();
            assert_eq!(
                n,
                1,
                "{be}: {:?} listed {n} times",
                String::from_utf8_lossy(w)
            );
            let m = &all[points.iter().position(|p| p == w).unwrap()];
            assert_eq!(m["fstype"], "tmpfs", "{be}: {m}");
            assert_eq!(m["source"], "hostile", "{be}: {m}");
            // Not UTF-8: the array form; otherwise a string.
            let raw = std::str::from_utf8(w).is_err();
            assert_eq!(m["mount_point"].is_array(), raw, "{be}: {m}");
        }
        listings.push(all);
    }
    // Both sources describe the same table, but for the new 64-bit ids.
    let comparable = |all: &[Value]| {
        let mut v: Vec<Value> = all
            .iter()
            .map(|m| {
                let mut m = m.clone();
                let o = m.as_object_mut().unwrap();
                o.remove("id");
                o.remove("parent_id");
                m
            })
            .collect();
        v.sort_by_key(|m| m["old_id"].as_u64());
        v
    };
    assert_eq!(comparable(&listings[0]), comparable(&listings[1]));

    let table = std::fs::read_to_string(out.join("table.txt")).unwrap();
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), listings[0].len() + 1, "one line per mount");
    let b = base.display();
    for shown in [
        format!("{b}/new\\x0aline "),
        format!("{b}/\\xff "),
        format!("{b}/a b "),
        format!("{b}/back\\\\slash "),
        format!("{b}/tab\\x09here "),
        format!("{} ", String::from_utf8(h.long()).unwrap()),
    ] {
        // The long path pads every row to over 4 KiB: show row starts only.
        assert!(
            rows.iter().any(|r| r.starts_with(&shown)),
            "no row for {shown:?} in {:?}",
            rows.iter()
                .map(|r| r.chars().take(80).collect::<String>())
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn unprivileged_falls_back_to_mountinfo() {
    if skip(&["setpriv"]) {
        return;
    }
    let nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", WEIR])
            .args(args)
            // Listing needs no state directory, so no $HOME either.
            .env_remove("HOME")
            .env_remove("XDG_STATE_HOME")
            .output()
            .expect("run setpriv")
    };
    if !nobody(&["--version"]).status.success() {
        eprintln!("skipped: uid 65534 cannot run {WEIR}");
        return;
    }

    let out = nobody(&["mounts", "--verbose"]);
    assert_ok("weir mounts --verbose as uid 65534", &out);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(first_column(&table).contains(&"/"), "{table}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("weir: backend: mountinfo (fanotify unavailable: ")
            && err.contains("Operation not permitted"),
        "{err}"
    );

    let out = nobody(&["mounts", "--backend", "fanotify"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("weir: error: ")
            && err.contains("fanotify mount events are unavailable")
            && err.contains("Operation not permitted"),
        "{err}"
    );
}

/// Starts the watcher, then attaches, remounts, moves and detaches a tmpfs,
/// waiting for each change's line before the next step, then stops the
/// watcher with SIGTERM and prints its exit status. `timeout` bounds a
/// watcher that would not stop; the trap stops it if a step fails.
const WATCH_SCRIPT: &str = r#"
set -u
W=$1 D=$2 M=$3 BE=$4
wait_for() {
    i=0
    while ! grep -q "$1" "$2"; do
        i=$((i + 1))
        if [ $i -gt 500 ]; then echo "no '$1' in $2 after 10 s" >&2; exit 1; fi
        sleep 0.02
    done
}
mkdir "$M/a" "$M/b"
timeout -k 5 120 "$W" --state-dir "$D" --config /dev/null mounts watch --backend "$BE" > "$M/out" 2> "$M/err" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' EXIT
wait_for '^weir: watching mounts' "$M/err"
mount -t tmpfs watched "$M/a" || exit 1
wait_for '^ATTACH ' "$M/out"
mount -o remount,ro "$M/a" || exit 1
wait_for '^CHANGE ' "$M/out"
mount --move "$M/a" "$M/b" || exit 1
wait_for '^MOVE ' "$M/out"
umount "$M/b" || exit 1
wait_for '^DETACH ' "$M/out"
trap - EXIT
kill -TERM $pid
wait $pid
echo "exit=$?"
"#;

fn watch_scenario(backend: &str) {
    let w = Weir::new();
    let (_t, m) = canonical_tempdir();
    let args: [&std::ffi::OsStr; 4] = [
        WEIR.as_ref(),
        w.state_dir().as_os_str(),
        m.as_os_str(),
        backend.as_ref(),
    ];
    let out = in_private_ns(WATCH_SCRIPT, &args);
    let err = std::fs::read_to_string(m.join("err")).unwrap_or_default();
    let lines = std::fs::read_to_string(m.join("out")).unwrap_or_default();
    assert!(
        out.status.success() && out.stdout == b"exit=0\n",
        "{backend}: {}: {}\nwatch stderr:\n{err}\nwatch stdout:\n{lines}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        err.starts_with(&format!(
            "weir: watching mounts with the {backend} backend\n"
        )),
        "{err}"
    );

    let (a, b) = (m.join("a"), m.join("b"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let attach = lines
        .lines()
        .find(|l| l.starts_with("ATTACH ") && l.contains(&format!(" {a} tmpfs watched ")))
        .unwrap_or_else(|| panic!("{backend}: no ATTACH of {a}:\n{lines}"));
    let id: u64 = attach.split(' ').nth(1).unwrap().parse().unwrap();
    let ours: Vec<&str> = lines
        .lines()
        .filter(|l| l.split(' ').nth(1) == Some(&id.to_string()))
        .collect();
    let kinds: Vec<&str> = ours.iter().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(
        kinds,
        ["ATTACH", "CHANGE", "MOVE", "DETACH"],
        "{backend}:\n{lines}"
    );
    assert!(ours[1].contains(" options=ro"), "{}", ours[1]);
    assert!(ours[2].ends_with(&format!(" {a} -> {b}")), "{}", ours[2]);
    assert_eq!(ours[3], format!("DETACH {id} {b}"));

    let records = w.tail_json(&[
        "--mask",
        "MOUNT_ATTACH,MOUNT_DETACH,MOUNT_MOVE,MOUNT_CHANGE",
    ]);
    let target = format!("{id:016x}");
    let ours: Vec<&Value> = records.iter().filter(|r| r["target"] == target).collect();
    let types: Vec<&str> = ours.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["MOUNT_ATTACH", "MOUNT_CHANGE", "MOUNT_MOVE", "MOUNT_DETACH"],
        "{backend}: {records:?}"
    );
    let names: Vec<Vec<u8>> = ours.iter().map(|r| json_bytes(&r["name"])).collect();
    let (ab, bb) = (a.as_bytes().to_vec(), b.as_bytes().to_vec());
    assert_eq!(names, [ab.clone(), ab.clone(), bb.clone(), bb]);
    assert_eq!(ours[0]["fields"]["fstype"], "tmpfs");
    assert_eq!(ours[0]["fields"]["source"], "watched");
    assert!(
        ours[1]["fields"]["options"]
            .as_str()
            .is_some_and(|o| o.starts_with("ro")),
        "{}",
        ours[1]
    );
    assert_eq!(json_bytes(&ours[2]["fields"]["from"]), ab);
    // The watcher closed the log cleanly: it verifies.
    assert!(w.ok(&["log", "verify"], b"").contains(": ok"));
}

#[test]
fn watch_prints_and_logs_each_change_with_fanotify() {
    if skip(&["unshare", "mount", "umount", "timeout"]) {
        return;
    }
    watch_scenario("fanotify");
}

#[test]
fn watch_prints_and_logs_each_change_with_mountinfo() {
    if skip(&["unshare", "mount", "umount", "timeout"]) {
        return;
    }
    watch_scenario("mountinfo");
}
