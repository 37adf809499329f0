//! The daemon's listings against `--direct`'s, byte for byte.

use std::path::Path;
use std::time::Duration;

use crate::daemon_child::{ok, sync, weir};

/// How often the device listings are compared before a difference fails.
const DEVICE_TRIES: usize = 10;

/// The daemon's listings are `--direct`'s, byte for byte; the direct
/// mount listing reads the daemon's backend's source, for its ids.
pub(crate) fn same_bytes(socket: &Path, backend: &str) {
    let listing = |args: &[&str], direct_extra: &[&str]| -> (Vec<u8>, Vec<u8>) {
        let daemon = ok(weir(socket, args));
        let mut direct = vec!["--direct"];
        direct.extend_from_slice(args);
        direct.extend_from_slice(direct_extra);
        (daemon, ok(weir(socket, &direct)))
    };
    let (daemon, direct) = listing(&["mounts", "--json"], &["--backend", backend]);
    assert!(
        daemon == direct,
        "weir mounts --json: the daemon's and --direct's differ in:\n{}",
        line_diff(&daemon, &direct)
    );
    // Devices are the machine's: another test may attach loop devices
    // meanwhile, so a difference gets a barrier and another look.
    let mut tries = 0;
    loop {
        sync(socket);
        let (daemon, direct) = listing(&["devices", "--json"], &[]);
        if daemon == direct {
            break;
        }
        tries += 1;
        assert!(
            tries < DEVICE_TRIES,
            "weir devices --json: the daemon's and --direct's differ in:\n{}",
            line_diff(&daemon, &direct)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The lines only one side has (the first few), for a failure message.
fn line_diff(daemon: &[u8], direct: &[u8]) -> String {
    let (a, b) = (
        String::from_utf8_lossy(daemon),
        String::from_utf8_lossy(direct),
    );
    let only = |x: &str, y: &str, who: &str| {
        let ys: std::collections::BTreeSet<&str> = y.lines().collect();
        x.lines()
            .filter(|l| !ys.contains(l))
            .take(5)
            .map(|l| format!("only {who}: {l}\n"))
            .collect::<String>()
    };
    only(&a, &b, "the daemon's") + &only(&b, &a, "--direct's")
}
