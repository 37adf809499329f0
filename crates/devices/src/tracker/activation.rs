//! Running `--on-vg-complete CMD VGNAME` after each VG_COMPLETE, as LVM's
//! udev rule starts its activation service, and logging how it ended.
//!
//! The commands run one at a time on their own thread, so a slow
//! `vgchange` never holds up the uevents behind it, and a storm of
//! completions cannot fork a storm of processes. No shell is involved: the
//! VG name is one argument, whatever bytes it holds.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use weir_log::Log;

use crate::record;

/// The activation thread and its queue.
pub(super) struct Activator {
    queue: mpsc::Sender<String>,
    thread: JoinHandle<()>,
}

impl Activator {
    pub(super) fn start(argv: Vec<String>, log: Option<Arc<Log>>) -> Activator {
        let (tx, rx) = mpsc::channel::<String>();
        let thread = std::thread::spawn(move || {
            for vg in rx {
                let outcome = run(&argv, &vg);
                match &outcome {
                    Ok(s) if s.success() => {
                        tracing::info!(vg = %vg, command = ?argv, "on-vg-complete succeeded");
                    }
                    _ => tracing::warn!(
                        vg = %vg,
                        command = ?argv,
                        outcome = %describe(&outcome),
                        "on-vg-complete failed"
                    ),
                }
                if let Some(log) = &log {
                    let status = describe(&outcome);
                    let command = argv.join(" ");
                    let r = record::mark(
                        log,
                        "on-vg-complete",
                        &[
                            ("vg", vg.as_bytes()),
                            ("command", command.as_bytes()),
                            ("status", status.as_bytes()),
                        ],
                    );
                    if let Err(e) = r {
                        tracing::warn!(
                            error = &e as &dyn std::error::Error,
                            "logging an on-vg-complete status"
                        );
                    }
                }
            }
        });
        Activator { queue: tx, thread }
    }

    /// Queues `CMD vg`.
    pub(super) fn activate(&self, vg: &str) {
        let _ = self.queue.send(vg.to_owned());
    }

    /// Lets the queued commands finish, then ends the thread.
    pub(super) fn finish(self) {
        drop(self.queue);
        let _ = self.thread.join();
    }
}

fn run(argv: &[String], vg: &str) -> std::io::Result<ExitStatus> {
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    Command::new(prog)
        .args(args)
        .arg(vg)
        .stdin(Stdio::null())
        .status()
}

/// `0`, `1`, `signal 9`, or `failed: <why it did not start>`.
fn describe(outcome: &std::io::Result<ExitStatus>) -> String {
    match outcome {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(c), _) => c.to_string(),
            (None, Some(sig)) => format!("signal {sig}"),
            (None, None) => "unknown".to_owned(),
        },
        Err(e) => format!("failed: {e}"),
    }
}
