//! weir as the start, storm and latency parts run it, and what they read
//! back from its journal.
//!
//! - [`WeirRun`]: `weir --state-dir DIR fs watch --quiet ROOT`, DIR fresh
//!   on the workspace tmpfs (so its log is never on a watched filesystem),
//!   timed from just before the spawn to its `weir: watching` line on
//!   stderr, which it prints once its mark is placed (ready: no change is
//!   missed from then on), and to the tree read: that line for a small
//!   tree, a later `weir: read` line for one read after it. A run starts
//!   its work once the tree is read.
//!   The line is looked for every 250 µs: fine enough for a 50 ms target,
//!   and cheap beside weir on a 2-CPU machine. Its stop is timed, and its
//!   CPU over its whole life is read when it is reaped (see
//!   [`WeirRun::stop`]), since `/proc/PID` is gone by then.
//! - [`LogCounts`]: the records of a log, the MARKs the tracker writes
//!   when the kernel's queue overflowed, and the records flagged `COMPARE`
//!   that followed.
//! - [`Comparison`]: the log replayed (`weir_fs::replay`, from a directory
//!   reader, so the log is not opened as a writer) against a walk of the
//!   live tree (`weir_fs::walk::read_tree`, the same ids): every path, its
//!   kind and its file handle.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use weir_fs::record::FLAG_COMPARE;
use weir_log::{Reader, RecordType};

use super::child::Proc;
use super::setup::Workspace;
use super::watchers::Tools;
use crate::storm::cpu;

/// The MARK the tracker writes when the kernel reported lost events.
pub(crate) const LOST: &[u8] = b"fs events lost: tree compared";
/// The line weir prints once it watches a root.
const READY: &str = "weir: watching";
/// The line weir prints once it has read a root too big to read before
/// its ready line.
const READ: &str = "weir: read ";
/// How often the ready line is looked for.
const POLL: Duration = Duration::from_micros(250);

/// A `weir fs watch` of one root.
pub(crate) struct WeirRun {
    proc: Proc,
    state: PathBuf,
    /// Seconds from the spawn to its ready line.
    pub(crate) ready_s: f64,
    /// Seconds from the spawn to the tree read (`ready_s` when the ready
    /// line said so).
    pub(crate) read_s: f64,
    /// The entries the walk found.
    pub(crate) entries: Option<u64>,
}

/// How a [`WeirRun`] ended.
#[derive(Debug, Clone)]
pub(crate) struct Stopped {
    /// Seconds from SIGTERM to its exit (it logs what came before first).
    pub(crate) stop_s: f64,
    /// `None` when it exited 0; else what went wrong.
    pub(crate) problem: Option<String>,
    /// Its CPU over its whole life, in ns counted in 10 ms ticks; `None`
    /// when it had to be killed.
    pub(crate) life_cpu_ns: Option<u64>,
}

impl WeirRun {
    /// Starts weir on `root` (`tag` names its files) and waits, at most
    /// `limit`, for its ready line.
    pub(crate) fn start(
        tools: &Tools,
        ws: &Workspace,
        root: &Path,
        tag: &str,
        limit: Duration,
    ) -> Result<WeirRun> {
        let state = ws.fresh_dir(&format!("{tag}.state"))?;
        WeirRun::start_in(tools, ws, root, tag, state, limit, &[])
    }

    /// As [`WeirRun::start`], with the state directory `state` (a restart
    /// over an earlier run's) and `extra` after the configured arguments.
    pub(crate) fn start_in(
        tools: &Tools,
        ws: &Workspace,
        root: &Path,
        tag: &str,
        state: PathBuf,
        limit: Duration,
        extra: &[&str],
    ) -> Result<WeirRun> {
        let weir = tools.weir.as_ref().context("weir is not available")?;
        let mut cmd = std::process::Command::new(weir);
        cmd.arg("--state-dir")
            .arg(&state)
            .args(["fs", "watch", "--quiet"])
            .args(&tools.weir_args)
            .args(extra)
            .arg(root);
        let t0 = Instant::now();
        let proc = Proc::spawn(
            cmd,
            "weir fs watch",
            &ws.file(&format!("{tag}.stderr")),
            false,
        )?;
        let line = proc.wait_line(|l| l.starts_with(READY), t0, limit, POLL)?;
        let ready_s = t0.elapsed().as_secs_f64();
        let (read_s, entries) = match entries_of(&line) {
            Some(n) => (ready_s, Some(n)),
            None => {
                let line = proc.wait_line(|l| l.starts_with(READ), t0, limit, POLL)?;
                (t0.elapsed().as_secs_f64(), entries_of(&line))
            }
        };
        Ok(WeirRun {
            proc,
            state,
            ready_s,
            read_s,
            entries,
        })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// Its VmRSS now, KiB.
    pub(crate) fn rss_kib(&self) -> Result<u64> {
        cpu::rss_kib(Some(self.pid()))
    }

    /// Its VmHWM (peak RSS) so far, KiB.
    pub(crate) fn hwm_kib(&self) -> Result<u64> {
        cpu::hwm_kib(self.pid())
    }

    /// Its CPU so far, ns in 10 ms ticks (`/proc/PID/stat`), the unit
    /// [`Stopped::life_cpu_ns`] is in.
    pub(crate) fn cpu_ticks_ns(&self) -> Result<u64> {
        Ok(cpu::stat_times(Some(self.pid()))?.own_ns)
    }

    /// Its CPU so far, exact (every live thread's runtime), ns.
    pub(crate) fn cpu_ns(&self) -> Result<u64> {
        cpu::process_ns(self.pid())
    }

    /// Whether it has exited, and how.
    pub(crate) fn exited(&self) -> Option<String> {
        self.proc
            .exited()
            .map(|(_, st)| format!("{st}: {}", self.proc.last_words("")))
    }

    /// The last `n` lines of its stderr (its warnings, its lines about
    /// lost events), for a report that something is off.
    pub(crate) fn stderr_tail(&self, n: usize) -> Vec<String> {
        let text = self.proc.stderr_text();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(n)..]
            .iter()
            .map(|l| l.trim().to_owned())
            .collect()
    }

    /// Its log directory.
    pub(crate) fn log_dir(&self) -> PathBuf {
        self.state.join("log")
    }

    /// SIGTERM, and waits up to `limit` for it to exit (then SIGKILL).
    ///
    /// Its CPU is this process's children's CPU (`cutime + cstime`) gained
    /// across its reaping: the caller must have no other child that ends
    /// meanwhile (the parts run one process at a time).
    pub(crate) fn stop(&self, limit: Duration) -> Result<Stopped> {
        let before = cpu::stat_times(None)?.children_ns;
        let t = Instant::now();
        self.proc.signal(rustix::process::Signal::TERM)?;
        let exit = self.proc.wait_exit(limit);
        let stop_s = t.elapsed().as_secs_f64();
        let Some((_, st)) = exit else {
            self.proc.signal(rustix::process::Signal::KILL)?;
            self.proc.wait_exit(Duration::from_secs(5));
            return Ok(Stopped {
                stop_s,
                problem: Some(format!(
                    "did not exit within {} s of SIGTERM (killed)",
                    limit.as_secs()
                )),
                life_cpu_ns: None,
            });
        };
        let after = cpu::stat_times(None)?.children_ns;
        Ok(Stopped {
            stop_s,
            problem: (!st.success()).then(|| {
                format!(
                    "ended with {st} after SIGTERM: {}",
                    self.proc.last_words("")
                )
            }),
            life_cpu_ns: Some(after.saturating_sub(before)),
        })
    }

    /// Its state directory, kept for a restart (after [`WeirRun::stop`]).
    pub(crate) fn keep_state(self) -> PathBuf {
        self.state.clone()
    }

    /// Removes its state directory (after [`WeirRun::stop`]).
    pub(crate) fn remove_state(self) -> Result<()> {
        let state = self.state.clone();
        drop(self);
        std::fs::remove_dir_all(&state).with_context(|| format!("rm -r {}", state.display()))
    }
}

/// The `N entries` of a ready line `weir: watching ROOT (ext4, filesystem
/// mark, N entries)` or of a line `weir: read ROOT (N entries in S s)`.
fn entries_of(line: &str) -> Option<u64> {
    let rest = line.rsplit_once('(')?.1;
    rest.split(", ")
        .find_map(|p| p.trim_end_matches(')').split_once(" entries"))
        .and_then(|(n, _)| n.trim().parse().ok())
}

/// What a log holds.
#[derive(Debug, Clone, Default)]
pub(crate) struct LogCounts {
    /// Records that are not MARKs.
    pub(crate) records: u64,
    pub(crate) creat: u64,
    pub(crate) mkdir: u64,
    /// MARKs, and those of lost events.
    pub(crate) marks: u64,
    pub(crate) lost: u64,
    /// Records flagged `COMPARE` (found by a comparison with a walk).
    pub(crate) compared: u64,
}

impl LogCounts {
    /// Reads the log in `dir` from the start.
    pub(crate) fn read(dir: &Path) -> Result<LogCounts> {
        if !dir.exists() {
            bail!("weir fs watch left no log in {}", dir.display());
        }
        let mut r = Reader::open_dir(dir, 1);
        let mut c = LogCounts::default();
        while let Some(rec) = r
            .next_record()
            .with_context(|| format!("read weir's log in {}", dir.display()))?
        {
            if rec.kind == RecordType::MARK {
                c.marks += 1;
                c.lost += u64::from(rec.name == LOST);
                continue;
            }
            c.records += 1;
            c.creat += u64::from(rec.kind == RecordType::CREAT);
            c.mkdir += u64::from(rec.kind == RecordType::MKDIR);
            c.compared += u64::from(rec.flags & FLAG_COMPARE != 0);
        }
        Ok(c)
    }

    pub(crate) fn json(&self) -> Value {
        json!({
            "records": self.records,
            "creat": self.creat,
            "mkdir": self.mkdir,
            "marks": self.marks,
            "overflows": self.lost,
            "compare_flagged": self.compared,
        })
    }
}

/// The log's replay of a root against a walk of it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Comparison {
    /// Every path, kind and handle the same.
    pub(crate) equal: bool,
    /// Why there is no replay, when there is none.
    pub(crate) no_view: Option<String>,
    /// Records the replay applied.
    pub(crate) replayed: u64,
    /// Entries in the replay and in the walk.
    pub(crate) replay_entries: u64,
    pub(crate) live_entries: u64,
    /// Paths only in the walk, only in the replay.
    pub(crate) missing: u64,
    pub(crate) extra: u64,
    /// Paths in both whose kind, or whose handle (type and bytes), differ;
    /// and whose filesystem id (the first 8 bytes of the id) differs.
    pub(crate) kind_differ: u64,
    pub(crate) handle_differ: u64,
    pub(crate) fsid_differ: u64,
    /// A few differences, for the report.
    pub(crate) examples: Vec<String>,
    /// Seconds the replay and the walk took.
    pub(crate) replay_s: f64,
    pub(crate) walk_s: f64,
}

/// The bytes of an id before its handle (the fsid's two words).
const FSID_BYTES: usize = 8;

impl Comparison {
    /// Replays the log in `log_dir` for `root` (as weir logs it: absolute,
    /// no symlinks) and compares it with a walk of `root`.
    pub(crate) fn run(log_dir: &Path, root: &Path) -> Result<Comparison> {
        let t = Instant::now();
        let view = weir_fs::replay::view_from(Reader::open_dir(log_dir, 1), root, None)
            .with_context(|| format!("replay the log in {}", log_dir.display()))?;
        let replay_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let (live, _) =
            weir_fs::walk::read_tree(root).with_context(|| format!("walk {}", root.display()))?;
        let walk_s = t.elapsed().as_secs_f64();
        let live = live.listing();
        let mut c = Comparison {
            live_entries: live.len() as u64,
            replay_s,
            walk_s,
            ..Comparison::default()
        };
        let Some(view) = view else {
            c.no_view = Some("the log has no whole description of the root".into());
            return Ok(c);
        };
        c.replayed = view.replayed;
        let replay = view.tree.listing();
        c.replay_entries = replay.len() as u64;
        let note = |c: &mut Comparison, s: String| {
            if c.examples.len() < 5 {
                c.examples.push(s);
            }
        };
        for (path, e) in &live {
            let p = String::from_utf8_lossy(path);
            let Some(r) = replay.get(path) else {
                c.missing += 1;
                note(&mut c, format!("{p}: not in the replay"));
                continue;
            };
            if r.kind != e.kind {
                c.kind_differ += 1;
                note(
                    &mut c,
                    format!("{p}: {} replayed, {} live", r.kind.name(), e.kind.name()),
                );
            }
            let (rb, lb) = (r.id.as_bytes(), e.id.as_bytes());
            if rb.get(FSID_BYTES..) != lb.get(FSID_BYTES..) {
                c.handle_differ += 1;
                note(
                    &mut c,
                    format!("{p}: handle {} replayed, {} live", r.id.hex(), e.id.hex()),
                );
            } else if rb.get(..FSID_BYTES) != lb.get(..FSID_BYTES) {
                c.fsid_differ += 1;
            }
        }
        for path in replay.keys().filter(|p| !live.contains_key(*p)) {
            c.extra += 1;
            note(
                &mut c,
                format!("{}: only in the replay", String::from_utf8_lossy(path)),
            );
        }
        c.equal = c.missing + c.extra + c.kind_differ + c.handle_differ == 0;
        Ok(c)
    }

    /// One line for the report.
    pub(crate) fn text(&self) -> String {
        if let Some(why) = &self.no_view {
            return format!("no replay: {why}");
        }
        let mut s = format!(
            "{} ({} entries replayed from {} records, {} live",
            self.equal, self.replay_entries, self.replayed, self.live_entries
        );
        if !self.equal {
            s += &format!(
                "; {} missing, {} extra, {} kind and {} handle differences",
                self.missing, self.extra, self.kind_differ, self.handle_differ
            );
        }
        if self.fsid_differ > 0 {
            s += &format!("; {} with another fsid", self.fsid_differ);
        }
        s += ")";
        if !self.examples.is_empty() {
            s += &format!(" e.g. {}", self.examples.join("; "));
        }
        s
    }

    pub(crate) fn json(&self) -> Value {
        json!({
            "equal": self.equal,
            "no_view": self.no_view,
            "replayed_records": self.replayed,
            "replay_entries": self.replay_entries,
            "live_entries": self.live_entries,
            "missing": self.missing,
            "extra": self.extra,
            "kind_differ": self.kind_differ,
            "handle_differ": self.handle_differ,
            "fsid_differ": self.fsid_differ,
            "examples": self.examples,
            "replay_s": crate::report::num(self.replay_s, 3),
            "walk_s": crate::report::num(self.walk_s, 3),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ready_line_gives_the_entries() {
        let l = "weir: watching /tmp/x/start (ext4, filesystem mark, 1100000 entries)";
        assert_eq!(entries_of(l), Some(1_100_000));
        assert_eq!(entries_of("weir: watching /tmp/x"), None);
        let l = "weir: watching /tmp/x/start (ext4, filesystem mark, reading the tree)";
        assert_eq!(entries_of(l), None);
        let l = "weir: read /tmp/x/start (1100000 entries in 6.512 s)";
        assert_eq!(entries_of(l), Some(1_100_000));
    }
}
