//! Telling the service manager how the daemon is (`sd_notify(3)`):
//! `READY=1` once everything is up, `STATUS=` lines a person reads in
//! `systemctl status`, `STOPPING=1`, and the watchdog.
//!
//! Outside systemd (`NOTIFY_SOCKET` unset) every call does nothing. A
//! failed notification is logged at debug level and otherwise ignored: the
//! daemon works the same whether or not anyone listens. The environment is
//! never unset, since that is unsound once other threads run.
//!
//! The watchdog is a real health check: [`watchdog`] pings only while the
//! check passes (the trackers' threads are alive and the API answers), so
//! a daemon that hangs or loses a tracker is restarted by systemd.

use std::future::Future;
use std::time::Duration;

use sd_notify::NotifyState;
use tracing::{debug, warn};

fn send(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(false, states) {
        debug!(error = %e, "sd_notify failed");
    }
}

/// `READY=1` with a first status line.
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// A new `STATUS=` line.
pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

/// `STOPPING=1`: the daemon is shutting down.
pub fn stopping() {
    send(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
}

/// The watchdog interval systemd asked for (`WatchdogSec=`), if any.
pub fn watchdog_interval() -> Option<Duration> {
    let mut usec = 0;
    (sd_notify::watchdog_enabled(false, &mut usec) && usec > 0).then(|| Duration::from_micros(usec))
}

/// The status line: what the daemon tracks (mounts, devices and VGs,
/// watched directory trees).
pub fn status_line(
    mounts: Option<usize>,
    devices: Option<(usize, usize)>,
    trees: Option<usize>,
) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut parts = Vec::new();
    if let Some(m) = mounts {
        parts.push(plural(m, "mount", "mounts"));
    }
    if let Some((d, vgs)) = devices {
        parts.push(plural(d, "device", "devices"));
        parts.push(plural(vgs, "VG", "VGs"));
    }
    if let Some(t) = trees {
        parts.push(plural(t, "directory tree", "directory trees"));
    }
    if parts.is_empty() {
        "hosting the changelog (no sources enabled)".to_owned()
    } else {
        format!("tracking {}", parts.join(", "))
    }
}

/// Pings the watchdog every half `interval` while `healthy` says so; runs
/// until dropped. A failed check skips the ping (and says why), so after
/// `interval` without one systemd restarts the daemon.
pub async fn watchdog<F, Fut, E>(interval: Duration, mut healthy: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    let mut tick = tokio::time::interval(interval / 2);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match healthy().await {
            Ok(()) => send(&[NotifyState::Watchdog]),
            Err(why) => warn!(why = %why, "health check failed; not pinging the watchdog"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines() {
        assert_eq!(
            status_line(Some(123), Some((4, 1)), None),
            "tracking 123 mounts, 4 devices, 1 VG"
        );
        assert_eq!(status_line(Some(1), None, None), "tracking 1 mount");
        assert_eq!(
            status_line(None, Some((0, 2)), Some(1)),
            "tracking 0 devices, 2 VGs, 1 directory tree"
        );
        assert_eq!(
            status_line(None, None, Some(3)),
            "tracking 3 directory trees"
        );
        assert!(status_line(None, None, None).contains("no sources"));
    }
}
