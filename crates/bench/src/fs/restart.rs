//! A restart over the big tree: weir watches it (its persistent copy
//! written at the stop), 1000 changes are made with nothing watching
//! (creates, unlinks, renames across directories, new directories with a
//! file), then weir starts again on the same state directory and logs
//! them, reading only the directories whose times moved. Beside it, in the
//! same run, `find ROOT -printf '%i %T@\n'` (a walk that looks at every
//! entry, as a crawl after a restart does), warm. Target: the restart
//! within 0.2 of the find's time.
//!
//! Then, on the state the restart left: the copy's size per entry; the
//! since query for the restart's window (`weir --direct fs changes ROOT
//! --since INDEX --json`, process start included); and after another 1000
//! changes a content-exact restart (`--content`, which reads every
//! directory and looks at every file), target within 1.0 of the find.
//! Last, a since query through the daemon after 10,000 changes (see
//! `since_daemon`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use weir_log::{Reader, RecordType};

use super::journal::WeirRun;
use super::setup::Workspace;
use super::since_daemon::DaemonSince;
use super::watchers::Tools;

/// The restart's target, as a share of the find's time.
const TARGET: f64 = 0.2;
/// The content-exact restart's.
const CONTENT_TARGET: f64 = 1.0;
const LIMIT: Duration = Duration::from_secs(900);
const STOP_LIMIT: Duration = Duration::from_secs(120);
/// Changes made while nothing watches.
const CHANGES: usize = 1000;

/// What the restart measured.
#[derive(Debug, Clone)]
pub(crate) struct Restart {
    pub(crate) find_s: f64,
    /// From the spawn to the tree reconciled.
    pub(crate) restart_s: f64,
    /// The first run's stop, which writes the copy whole.
    pub(crate) first_stop_s: f64,
    pub(crate) changes: usize,
    /// From the `fs tree reconciled` MARK.
    pub(crate) logged: Option<u64>,
    pub(crate) dirs_checked: Option<u64>,
    pub(crate) dirs_read: Option<u64>,
    /// The entries the restart's MARK counts.
    pub(crate) entries: Option<u64>,
    /// The persistent copy's file, after the restart's stop.
    pub(crate) index_bytes: Option<u64>,
    /// The since query over the restart's window: what it listed, and its
    /// seconds.
    pub(crate) since: Option<(u64, f64)>,
    /// The content-exact restart after as many changes again: seconds,
    /// and the records its MARK counts.
    pub(crate) content: Option<(f64, Option<u64>)>,
    /// The since query through the daemon.
    pub(crate) daemon_since: std::result::Result<DaemonSince, String>,
}

impl Restart {
    pub(crate) fn ratio(&self) -> f64 {
        self.restart_s / self.find_s
    }

    fn index_per_entry(&self) -> Option<f64> {
        Some(self.index_bytes? as f64 / self.entries?.max(1) as f64)
    }

    fn content_ratio(&self) -> Option<f64> {
        self.content.map(|(s, _)| s / self.find_s)
    }

    pub(crate) fn text(&self) -> String {
        let content = match (self.content, self.content_ratio()) {
            (Some((s, logged)), Some(r)) => format!(
                "{s:.3} s ({} changes logged), {r:.3} of the find: {}",
                opt(logged),
                if r <= CONTENT_TARGET { "PASS" } else { "FAIL" }
            ),
            _ => "?".into(),
        };
        let since = self.since.map_or("?".into(), |(n, s)| {
            format!(
                "{n} changes listed in {:.1} ms, process start included",
                s * 1e3
            )
        });
        let daemon = match &self.daemon_since {
            Ok(d) => d.text(),
            Err(e) => format!("    since through the daemon: {e}"),
        };
        format!(
            "{}\n    the copy: {} B, {} B per entry; since over the restart's window: {since}\n    content-exact restart after {} more changes: {content}\n{daemon}",
            self.text_restart(),
            opt(self.index_bytes),
            self.index_per_entry()
                .map_or("?".into(), |b| format!("{b:.0}")),
            self.changes,
        )
    }

    fn text_restart(&self) -> String {
        format!(
            "    restart after {} changes: {:.3} s to reconciled ({} changes logged, {} of {} directories read), find -printf '%i %T@' {:.3} s: {:.3} of it; the first run's stop (the copy written whole) {:.2} s\n    {}: weir's restart <= {TARGET} of the find: {:.3}",
            self.changes,
            self.restart_s,
            opt(self.logged),
            opt(self.dirs_read),
            opt(self.dirs_checked),
            self.find_s,
            self.ratio(),
            self.first_stop_s,
            if self.ratio() <= TARGET {
                "PASS"
            } else {
                "FAIL"
            },
            self.ratio(),
        )
    }

    pub(crate) fn json(&self) -> Value {
        json!({
            "changes": self.changes,
            "find_s": self.find_s,
            "restart_s": self.restart_s,
            "ratio": self.ratio(),
            "first_stop_s": self.first_stop_s,
            "logged": self.logged,
            "dirs_checked": self.dirs_checked,
            "dirs_read": self.dirs_read,
            "entries": self.entries,
            "index_bytes": self.index_bytes,
            "index_bytes_per_entry": self.index_per_entry(),
            "since_changes": self.since.map(|(n, _)| n),
            "since_ms": self.since.map(|(_, s)| s * 1e3),
            "content_restart_s": self.content.map(|(s, _)| s),
            "content_logged": self.content.and_then(|(_, n)| n),
            "content_ratio": self.content_ratio(),
            "daemon_since": match &self.daemon_since {
                Ok(d) => d.json(),
                Err(e) => json!({"error": e}),
            },
            "targets": {
                "ratio_max": TARGET,
                "ok": self.ratio() <= TARGET,
                "content_ratio_max": CONTENT_TARGET,
                "content_ok": self.content_ratio().map(|r| r <= CONTENT_TARGET),
            },
        })
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "?".into(), |n| n.to_string())
}

/// Runs the restart over `root`, the start part's tree.
pub(crate) fn run(tools: &Tools, ws: &Workspace, root: &Path, fs: &str) -> Result<Restart> {
    let tag = format!("restart-{fs}");
    let first = WeirRun::start(tools, ws, root, &tag, LIMIT)?;
    let stopped = first.stop(STOP_LIMIT)?;
    if let Some(p) = &stopped.problem {
        bail!("the first run: {p}");
    }
    let state = first.keep_state();
    let dirs = directories(root)?;
    let changes = change(root, &dirs, CHANGES, "a")?;
    // Warm, then timed.
    find(root)?;
    let find_s = find(root)?;
    let again = WeirRun::start_in(
        tools,
        ws,
        root,
        &format!("{tag}-again"),
        state.clone(),
        LIMIT,
        &[],
    )?;
    let restart_s = again.read_s;
    let stopped2 = again.stop(STOP_LIMIT)?;
    let state = again.keep_state();
    if let Some(p) = &stopped2.problem {
        bail!("the restart: {p}");
    }
    let mark = reconciled(&state.join("log"))?;
    let field = |m: &Option<Vec<(String, String)>>, k: &str| {
        m.as_ref()
            .and_then(|m| m.iter().find(|(n, _)| n == k))
            .and_then(|(_, v)| v.parse::<u64>().ok())
    };
    let index_bytes = std::fs::metadata(state.join("fs/index.redb"))
        .ok()
        .map(|m| m.len());
    let since = match (tools.weir.as_ref(), field(&mark, "since")) {
        (Some(weir), Some(from)) => Some(since_query(weir, &state, root, from)?),
        _ => None,
    };
    // As many changes again, then a content-exact restart.
    let dirs = directories(root)?;
    change(root, &dirs, CHANGES, "b")?;
    let third = WeirRun::start_in(
        tools,
        ws,
        root,
        &format!("{tag}-content"),
        state.clone(),
        LIMIT,
        &["--content"],
    )?;
    let content_s = third.read_s;
    let stopped3 = third.stop(STOP_LIMIT)?;
    let content_mark = reconciled(&state.join("log"))?;
    third.remove_state()?;
    if let Some(p) = &stopped3.problem {
        bail!("the content-exact restart: {p}");
    }
    let daemon_since =
        super::since_daemon::run(tools, ws, root).map_err(|e| format!("failed: {e:#}"));
    Ok(Restart {
        find_s,
        restart_s,
        first_stop_s: stopped.stop_s,
        changes,
        logged: field(&mark, "changes"),
        dirs_checked: field(&mark, "dirs_checked"),
        dirs_read: field(&mark, "dirs_read"),
        entries: field(&mark, "entries"),
        index_bytes,
        since,
        content: Some((content_s, field(&content_mark, "changes"))),
        daemon_since,
    })
}

/// Every directory below `root` (the root first).
pub(super) fn directories(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let d = out[i].clone();
        i += 1;
        for e in std::fs::read_dir(&d).with_context(|| format!("read {}", d.display()))? {
            let e = e?;
            if e.file_type()?.is_dir() {
                out.push(e.path());
            }
        }
    }
    Ok(out)
}

/// The since query `weir --direct fs changes ROOT --since FROM --json`,
/// timed from the spawn: the changes it lists, and seconds.
fn since_query(weir: &Path, state: &Path, root: &Path, from: u64) -> Result<(u64, f64)> {
    let t = Instant::now();
    let out = Command::new(weir)
        .arg("--direct")
        .arg("--state-dir")
        .arg(state)
        .args(["fs", "changes"])
        .arg(root)
        .args(["--since", &from.to_string(), "--json"])
        .stderr(Stdio::inherit())
        .output()
        .context("run weir fs changes")?;
    let s = t.elapsed().as_secs_f64();
    anyhow::ensure!(
        out.status.success(),
        "weir fs changes exited with {}",
        out.status
    );
    let v: Value = serde_json::from_slice(&out.stdout).context("weir fs changes' JSON")?;
    let n = listed(&v);
    Ok((n, s))
}

/// The paths a `weir fs changes --json` answer lists.
pub(super) fn listed(v: &Value) -> u64 {
    ["created", "removed", "modified", "renamed"]
        .iter()
        .map(|k| v[*k].as_array().map_or(0, Vec::len) as u64)
        .sum()
}

/// `n` changes in directories picked by a fixed sequence, their names
/// marked `tag`; how many took.
pub(super) fn change(root: &Path, dirs: &[PathBuf], n: usize, tag: &str) -> Result<usize> {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut done = 0;
    for i in 0..n {
        let d = &dirs[(next() % dirs.len() as u64) as usize];
        let file_in = |d: &Path| -> Option<PathBuf> {
            std::fs::read_dir(d)
                .ok()?
                .filter_map(|e| e.ok())
                .find(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.path())
        };
        let ok = match i % 4 {
            0 => std::fs::write(d.join(format!("restart-new-{tag}{i}")), b"").is_ok(),
            1 => file_in(d).is_some_and(|f| std::fs::remove_file(f).is_ok()),
            2 => {
                let to = &dirs[(next() % dirs.len() as u64) as usize];
                file_in(d).is_some_and(|f| {
                    std::fs::rename(f, to.join(format!("restart-moved-{tag}{i}"))).is_ok()
                })
            }
            _ => {
                let nd = d.join(format!("restart-dir-{tag}{i}"));
                std::fs::create_dir(&nd).is_ok() && std::fs::write(nd.join("f"), b"").is_ok()
            }
        };
        done += usize::from(ok);
    }
    let _ = root;
    Ok(done)
}

/// A warm `find ROOT -printf '%i %T@\n'`, its output discarded; seconds.
fn find(root: &Path) -> Result<f64> {
    let t = Instant::now();
    let st = Command::new("find")
        .arg(root)
        .args(["-printf", "%i %T@\n"])
        .stdout(Stdio::null())
        .status()
        .context("run find")?;
    anyhow::ensure!(st.success(), "find exited with {st}");
    Ok(t.elapsed().as_secs_f64())
}

/// The fields of the log's last `fs tree reconciled` MARK.
fn reconciled(dir: &Path) -> Result<Option<Vec<(String, String)>>> {
    let mut r = Reader::open_dir(dir, 1);
    let mut last = None;
    while let Some(rec) = r.next_record().context("read weir's log")? {
        if rec.kind == RecordType::MARK && rec.name == b"fs tree reconciled" {
            last = Some(
                rec.fields
                    .iter()
                    .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
                    .collect(),
            );
        }
    }
    Ok(last)
}
