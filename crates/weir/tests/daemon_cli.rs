//! The CLI against the real daemon: `weir run` in a private mount
//! namespace, and the same questions asked through its socket and with
//! `--direct`, which must print the same bytes (`mounts`, `vgs`,
//! `log tail`). Also the barrier (`weir sync` covers a record written before
//! it and a mount made before it), the writer lock seen by `--direct`, and
//! `weir status` before and after the daemon stops.
//!
//! Needs root and unshare; skipped (with a message) otherwise.

#[path = "support/privileged.rs"]
#[allow(dead_code)]
mod privileged;

use std::path::Path;

use privileged::{assert_ok, canonical_tempdir, in_private_ns, skip};

/// Starts the daemon, waits until it answers, asks everything twice, then
/// stops it. Files in `$OUT` hold the answers; the test compares them.
const SCRIPT: &str = r#"
set -e
W=$1 STATE=$2 SOCK=$3 OUT=$4 MNT=$5
"$W" run --state-dir "$STATE" --socket "$SOCK" 2> "$OUT/daemon.err" &
PID=$!
echo $PID > "$OUT/pid"
stop() { kill -TERM $PID 2>/dev/null || true; wait $PID || true; }
trap stop EXIT
n=0
until "$W" --socket "$SOCK" status --json > /dev/null 2>&1; do
    kill -0 $PID
    n=$((n + 1))
    [ $n -lt 1000 ] || { echo "the daemon never answered on $SOCK" >&2; exit 1; }
    sleep 0.02
done

mount -t tmpfs weir-daemon-cli "$MNT"
printf 'before sync\n' | "$W" --socket "$SOCK" --state-dir "$STATE" log write > "$OUT/written"
"$W" --socket "$SOCK" sync > "$OUT/sync"
"$W" --socket "$SOCK" sync --json > "$OUT/sync.json"

"$W" --socket "$SOCK" mounts --json > "$OUT/mounts.daemon"
"$W" --direct mounts --json > "$OUT/mounts.direct"
"$W" --socket "$SOCK" mounts -o ID,TARGET,PROPAGATION > "$OUT/table.daemon"
"$W" --direct mounts -o ID,TARGET,PROPAGATION > "$OUT/table.direct"
# The tree and a df column (SIZE, which no write changes) read by the
# daemon and by the command: the same renderer, the same statvfs.
"$W" --socket "$SOCK" mounts --tree -a -b -o TARGET,SIZE,FSTYPE > "$OUT/tree.daemon"
"$W" --direct mounts --tree -a -b -o TARGET,SIZE,FSTYPE > "$OUT/tree.direct"

# Devices are the host's: another test may attach one meanwhile, so a
# difference gets a barrier and another look.
for try in 1 2 3; do
    "$W" --socket "$SOCK" sync > /dev/null
    "$W" --socket "$SOCK" vgs --json > "$OUT/vgs.daemon"
    "$W" --direct vgs --json > "$OUT/vgs.direct" 2> /dev/null
    # The filesystems' ids: the daemon's from its device tracker, the
    # command's from a scan of its own.
    "$W" --socket "$SOCK" mounts -o TARGET,SOURCE,UUID,LABEL > "$OUT/ids.daemon"
    "$W" --direct mounts -o TARGET,SOURCE,UUID,LABEL > "$OUT/ids.direct"
    cmp -s "$OUT/vgs.daemon" "$OUT/vgs.direct" && cmp -s "$OUT/ids.daemon" "$OUT/ids.direct" && break
done

printf 'last\n' | "$W" --socket "$SOCK" --state-dir "$STATE" log write --sync > "$OUT/last"
"$W" --socket "$SOCK" --state-dir "$STATE" log tail --json > "$OUT/tail.daemon"
"$W" --direct --state-dir "$STATE" log tail --json > "$OUT/tail.direct"

set +e
printf 'x\n' | "$W" --direct --state-dir "$STATE" log write > /dev/null 2> "$OUT/locked.err"
echo $? > "$OUT/locked.status"
"$W" --socket "$SOCK" status > "$OUT/status.txt"
echo $? > "$OUT/status.status"
stop
trap - EXIT
"$W" --socket "$SOCK" status 2> "$OUT/stopped.err"
echo $? > "$OUT/stopped.status"
"#;

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn number(s: &str) -> u64 {
    s.trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

/// The lines of a `log tail --json` output up to index `last`.
fn up_to(tail: &str, last: u64) -> Vec<&str> {
    tail.lines()
        .filter(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON record");
            v["index"].as_u64().expect("an index") <= last
        })
        .collect()
}

#[test]
fn the_daemon_and_direct_mode_print_the_same_bytes() {
    if skip(&["unshare", "mount", "cmp"]) {
        return;
    }
    let (_s, state) = canonical_tempdir();
    let (_o, out) = canonical_tempdir();
    let (_m, mnt) = canonical_tempdir();
    let sock = state.join("weir.sock");
    let script = in_private_ns(
        SCRIPT,
        &[
            Path::new(env!("CARGO_BIN_EXE_weir")),
            state.as_path(),
            sock.as_path(),
            out.as_path(),
            mnt.as_path(),
        ],
    );
    let daemon_log = std::fs::read_to_string(out.join("daemon.err")).unwrap_or_default();
    assert_ok(
        &format!("the scenario (daemon's log:\n{daemon_log})"),
        &script,
    );

    // The barrier covers the record written before it...
    let written = number(&read(&out, "written"));
    let synced = number(&read(&out, "sync"));
    assert!(synced >= written, "sync {synced} < written {written}");
    let j: serde_json::Value = serde_json::from_str(&read(&out, "sync.json")).unwrap();
    assert!(j["index"].as_u64().unwrap() >= synced, "{j}");

    // ... and the mount made before it.
    let mounts = read(&out, "mounts.daemon");
    assert!(
        mounts.contains(&format!("\"{}\"", mnt.display())),
        "{mounts}"
    );
    assert_eq!(mounts, read(&out, "mounts.direct"));
    assert_eq!(read(&out, "table.daemon"), read(&out, "table.direct"));
    let tree = read(&out, "tree.daemon");
    assert_eq!(tree, read(&out, "tree.direct"));
    assert!(
        tree.contains(&format!("-{} ", mnt.display())),
        "no tmpfs in the tree:\n{tree}"
    );
    assert_eq!(read(&out, "vgs.daemon"), read(&out, "vgs.direct"));
    let ids = read(&out, "ids.daemon");
    assert!(ids.starts_with("TARGET"), "{ids}");
    assert_eq!(ids, read(&out, "ids.direct"));

    let last = number(&read(&out, "last"));
    let (d, t) = (read(&out, "tail.daemon"), read(&out, "tail.direct"));
    let through_daemon = up_to(&d, last);
    for name in ["\"before sync\"", "\"last\""] {
        assert!(
            through_daemon.iter().any(|l| l.contains(name)),
            "{name}: {d}"
        );
    }
    assert_eq!(through_daemon, up_to(&t, last));

    // A direct writer meets the daemon's lock.
    assert_eq!(read(&out, "locked.status").trim(), "1");
    assert!(read(&out, "locked.err").contains("locked"));

    let pid = read(&out, "pid");
    assert_eq!(read(&out, "status.status").trim(), "0");
    let status = read(&out, "status.txt");
    assert!(status.contains(&format!("pid {}", pid.trim())), "{status}");

    assert_eq!(read(&out, "stopped.status").trim(), "3");
    assert!(read(&out, "stopped.err").contains("no daemon answers on"));
}
