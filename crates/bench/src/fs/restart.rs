//! A restart over the big tree: weir watches it (its persistent copy
//! written at the stop), 1000 changes are made with nothing watching
//! (creates, unlinks, renames across directories, new directories with a
//! file), then weir starts again on the same state directory and logs
//! them, reading only the directories whose times moved. Beside it, in the
//! same run, `find ROOT -printf '%i %T@\n'` (a walk that looks at every
//! entry, as a crawl after a restart does), warm. Target: the restart
//! within 0.2 of the find's time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use weir_log::{Reader, RecordType};

use super::journal::WeirRun;
use super::setup::Workspace;
use super::watchers::Tools;

/// The restart's target, as a share of the find's time.
const TARGET: f64 = 0.2;
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
}

impl Restart {
    pub(crate) fn ratio(&self) -> f64 {
        self.restart_s / self.find_s
    }

    pub(crate) fn text(&self) -> String {
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
            "targets": {"ratio_max": TARGET, "ok": self.ratio() <= TARGET},
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
    let changes = change(root, &dirs, CHANGES)?;
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
    )?;
    let restart_s = again.read_s;
    let stopped2 = again.stop(STOP_LIMIT)?;
    let mark = reconciled(&state.join("log"))?;
    again.remove_state()?;
    if let Some(p) = &stopped2.problem {
        bail!("the restart: {p}");
    }
    let field = |k: &str| {
        mark.as_ref()
            .and_then(|m| m.iter().find(|(n, _)| n == k))
            .and_then(|(_, v)| v.parse().ok())
    };
    Ok(Restart {
        find_s,
        restart_s,
        first_stop_s: stopped.stop_s,
        changes,
        logged: field("changes"),
        dirs_checked: field("dirs_checked"),
        dirs_read: field("dirs_read"),
    })
}

/// Every directory below `root` (the root first).
fn directories(root: &Path) -> Result<Vec<PathBuf>> {
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

/// `n` changes in directories picked by a fixed sequence; how many took.
fn change(root: &Path, dirs: &[PathBuf], n: usize) -> Result<usize> {
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
            0 => std::fs::write(d.join(format!("restart-new-{i}")), b"").is_ok(),
            1 => file_in(d).is_some_and(|f| std::fs::remove_file(f).is_ok()),
            2 => {
                let to = &dirs[(next() % dirs.len() as u64) as usize];
                file_in(d).is_some_and(|f| {
                    std::fs::rename(f, to.join(format!("restart-moved-{i}"))).is_ok()
                })
            }
            _ => {
                let nd = d.join(format!("restart-dir-{i}"));
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
