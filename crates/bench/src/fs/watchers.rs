//! Who watches a round: nothing, the floor reader, weir, or a peer.
//!
//! Every watcher is a process of its own, started fresh for each watched
//! round (so that no backlog or queue state carries over, and an unwatched
//! round has no mark or watch anywhere) and ready before the load starts:
//!
//! - `floor`: this binary's hidden `fs-floor` (see `floor`); ready on its
//!   stderr line, stopped by closing its stdin.
//! - `weir`: `weir --state-dir DIR fs watch ROOT`, DIR fresh on the
//!   workspace tmpfs. Ready when it prints a line starting with `weir:
//!   watching` on stderr (its fanotify mark is placed); SIGTERM makes it
//!   exit 0; its records are in DIR/log, counted after it exits.
//! - `fsnotifywait -S -m -r -e EVENTS ROOT` (one fanotify filesystem mark,
//!   inotify-tools >= 3.22) and `inotifywait -r -m -e EVENTS ROOT` (an
//!   inotify watch per directory, set up by a crawl): ready on `Watches
//!   established.`, stopped by SIGTERM. EVENTS is the set weir and the floor
//!   ask for (create, delete, moves, attrib, modify, close_write) unless
//!   `--peer-all-events`; their stdout goes to /dev/null.
//! - `watchman`: one server per run (`--foreground`, with a socket, state
//!   file, log and pid file of its own on the workspace, `--no-save-state`),
//!   given `watch ROOT` before the round and ready once a `clock` with a
//!   sync timeout answers (its crawl is done and its cookie seen); `watch-del
//!   ROOT` after. Its CPU is the server's.
//!
//! fsnotifywait quits at the first fanotify queue overflow; the reaper's
//! exit time says how far into the round it got.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use weir_log::{Reader, RecordType};

use super::child::Proc;
use super::floor::{self, Counts};
use super::setup::{Target, Workspace};
use crate::loopdev::find_tool;

/// How long a watcher may take to be ready.
const READY_LIMIT: Duration = Duration::from_secs(30);
/// How long a watcher may take to exit after SIGTERM.
const STOP_LIMIT: Duration = Duration::from_secs(10);
/// fsnotifywait's line for an event whose directory it cannot resolve,
/// which it prints for many events; skipped when quoting its last words.
const FSNOTIFY_NOISE: &str = "Failed to decode directory fid";

/// What watches a round.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash, clap::ValueEnum)]
pub(crate) enum Case {
    /// Nothing: the rate every ratio is taken against.
    None,
    /// A minimal fanotify reader that counts and discards.
    Floor,
    /// `weir fs watch`.
    Weir,
    /// `fsnotifywait -S` (fanotify filesystem mark).
    Fsnotifywait,
    /// `inotifywait -r` (a watch per directory).
    Inotifywait,
    /// `watchman watch`.
    Watchman,
}

impl Case {
    pub(crate) const ALL: [Case; 6] = [
        Case::None,
        Case::Floor,
        Case::Weir,
        Case::Fsnotifywait,
        Case::Inotifywait,
        Case::Watchman,
    ];
    /// The watchers compared with weir.
    pub(crate) const PEERS: [Case; 3] = [Case::Fsnotifywait, Case::Inotifywait, Case::Watchman];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Case::None => "none",
            Case::Floor => "floor",
            Case::Weir => "weir",
            Case::Fsnotifywait => "fsnotifywait",
            Case::Inotifywait => "inotifywait",
            Case::Watchman => "watchman",
        }
    }

    /// The command line, for the report.
    pub(crate) fn describe(self, all_events: bool) -> &'static str {
        match (self, all_events) {
            (Case::None, _) => "no watcher",
            (Case::Floor, _) => {
                "fanotify FidGroup, filesystem mark (create, delete, rename, attrib, modify, close_write, ondir), batched reads, events counted and discarded"
            }
            (Case::Weir, _) => "weir --state-dir DIR fs watch ROOT >/dev/null",
            (Case::Fsnotifywait, false) => {
                "fsnotifywait -S -m -r -e create,delete,moved_from,moved_to,attrib,modify,close_write ROOT >/dev/null"
            }
            (Case::Fsnotifywait, true) => "fsnotifywait -S -m -r ROOT >/dev/null",
            (Case::Inotifywait, false) => {
                "inotifywait -r -m -e create,delete,moved_from,moved_to,attrib,modify,close_write ROOT >/dev/null"
            }
            (Case::Inotifywait, true) => "inotifywait -r -m ROOT >/dev/null",
            (Case::Watchman, _) => "watchman watch ROOT (private server, inotify)",
        }
    }
}

/// The peers' event set, weir's and the floor's in inotify-tools' names.
const PEER_EVENTS: &str = "create,delete,moved_from,moved_to,attrib,modify,close_write";

/// The watchman server of a run.
pub(crate) struct WatchmanServer {
    tool: PathBuf,
    sock: PathBuf,
    log: PathBuf,
    proc: Proc,
}

impl WatchmanServer {
    /// Starts a private server with everything under `dir`.
    pub(crate) fn start(tool: &Path, dir: &Path) -> Result<WatchmanServer> {
        let sock = dir.join("sock");
        let log = dir.join("log");
        let mut cmd = Command::new(tool);
        cmd.arg("--foreground")
            .arg("--sockname")
            .arg(&sock)
            .arg("--statefile")
            .arg(dir.join("state"))
            .arg("--logfile")
            .arg(&log)
            .arg("--pidfile")
            .arg(dir.join("pid"))
            .arg("--no-save-state");
        let proc = Proc::spawn(cmd, "watchman server", &dir.join("stderr"), false)?;
        let s = WatchmanServer {
            tool: tool.to_path_buf(),
            sock,
            log,
            proc,
        };
        let t = Instant::now();
        loop {
            if s.sock.exists() && s.client(&["get-pid"], None).is_ok() {
                return Ok(s);
            }
            if let Some((_, st)) = s.proc.exited() {
                bail!(
                    "the watchman server exited ({st}): {}",
                    s.proc.last_words("")
                );
            }
            if t.elapsed() > READY_LIMIT {
                bail!(
                    "the watchman server does not answer after {} s",
                    READY_LIMIT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Runs `watchman --sockname S --no-spawn --no-pretty ARGS` (with
    /// `json` on stdin and `-j` if given); fails on an error answer.
    pub(crate) fn client(&self, args: &[&str], json: Option<&str>) -> Result<String> {
        let mut cmd = Command::new(&self.tool);
        cmd.arg("--sockname")
            .arg(&self.sock)
            .args(["--no-spawn", "--no-pretty"]);
        if json.is_some() {
            cmd.arg("-j");
        }
        cmd.args(args)
            .stdin(if json.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().context("run the watchman client")?;
        if let (Some(j), Some(mut stdin)) = (json, child.stdin.take()) {
            stdin.write_all(j.as_bytes())?;
        }
        let out = child.wait_with_output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() || text.contains("\"error\"") {
            bail!(
                "watchman {}: {} {}",
                args.join(" "),
                text.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(text)
    }

    /// The server's process, for its memory and CPU.
    pub(crate) fn proc(&self) -> &Proc {
        &self.proc
    }

    /// The log's length now, to read what a round adds.
    fn log_len(&self) -> u64 {
        std::fs::metadata(&self.log).map_or(0, |m| m.len())
    }

    /// Lines the log gained since `from` that tell of a recrawl (watchman's
    /// answer to an inotify queue overflow), its PERF lines aside.
    fn recrawls_since(&self, from: u64) -> u64 {
        let Ok(mut f) = std::fs::File::open(&self.log) else {
            return 0;
        };
        let mut text = String::new();
        if std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(from)).is_err()
            || f.read_to_string(&mut text).is_err()
        {
            return 0;
        }
        text.lines()
            .filter(|l| !l.contains("PERF:"))
            .filter(|l| {
                let l = l.to_ascii_lowercase();
                l.contains("recrawl") || l.contains("overflow")
            })
            .count() as u64
    }

    /// Asks the server to shut down, and waits for it.
    pub(crate) fn shutdown(self) {
        let _ = self.client(&["shutdown-server"], None);
        if self.proc.wait_exit(Duration::from_secs(5)).is_none() {
            eprintln!("  the watchman server did not exit on shutdown-server; killing it");
        }
        // Drop kills it if it is still there.
    }
}

/// What is at hand for the watched cases.
pub(crate) struct Tools {
    /// The `weir` binary, if it has `fs watch`.
    pub(crate) weir: Option<PathBuf>,
    pub(crate) fsnotifywait: Option<PathBuf>,
    pub(crate) inotifywait: Option<PathBuf>,
    pub(crate) watchman: Option<WatchmanServer>,
    /// This executable, for the floor.
    pub(crate) me: PathBuf,
    pub(crate) all_events: bool,
    /// Arguments after `weir ... fs watch`, before ROOT.
    pub(crate) weir_args: Vec<String>,
}

/// Whether the `weir` binary (`given`, or the one built next to this one)
/// has `fs watch`; the binary, or why not.
pub(crate) fn find_weir_fs(given: Option<&Path>) -> std::result::Result<PathBuf, String> {
    let weir = match given {
        Some(p) if p.is_file() => p.to_path_buf(),
        Some(p) => return Err(format!("{} not found (--weir)", p.display())),
        None => crate::storm::watch_child::find_weir()?,
    };
    let out = Command::new(&weir)
        .args(["fs", "watch", "--help"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", weir.display()))?;
    if out.status.success() {
        return Ok(weir);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_owned();
    Err(format!(
        "{} has no `fs watch` command yet ({first})",
        weir.display()
    ))
}

/// Finds a peer tool, or why it is missing.
pub(crate) fn find_peer(name: &str, package: &str) -> std::result::Result<PathBuf, String> {
    find_tool(name).ok_or_else(|| format!("{name} not found (Debian package {package})"))
}

/// How a watched round ended, for the report.
#[derive(Debug, Default, Clone)]
pub(crate) struct Finish {
    /// The floor's counts.
    pub(crate) floor: Option<Counts>,
    /// weir's records in its log (MARKs aside), and the MARKs.
    pub(crate) weir_records: Option<u64>,
    pub(crate) weir_marks: Option<u64>,
    /// Watchman's recrawl lines.
    pub(crate) recrawls: Option<u64>,
    /// Something wrong with how it stopped (weir not exiting 0, ...).
    pub(crate) problem: Option<String>,
}

/// A watcher running for one round.
pub(crate) enum Session<'a> {
    Floor(Proc),
    Weir {
        proc: Proc,
        state: PathBuf,
    },
    /// fsnotifywait or inotifywait.
    Notify(Proc),
    Watchman {
        server: &'a WatchmanServer,
        root: String,
        log_from: u64,
    },
}

impl<'a> Session<'a> {
    /// Starts `case`'s watcher on `target` and waits until it is ready;
    /// `tag` names its files. `None` for [`Case::None`].
    pub(crate) fn start(
        case: Case,
        tools: &'a Tools,
        ws: &Workspace,
        target: &Target,
        tag: &str,
    ) -> Result<Option<Session<'a>>> {
        let root = &target.root;
        let stderr = ws.file(&format!("{tag}.stderr"));
        let missing = || anyhow::anyhow!("{} is not available", case.name());
        Ok(Some(match case {
            Case::None => return Ok(None),
            Case::Floor => {
                let mut cmd = Command::new(&tools.me);
                cmd.args(["fs-floor", "--root"]).arg(root);
                let p = Proc::spawn(cmd, "the floor reader", &stderr, true)?;
                p.wait_ready(|l| l == floor::READY, READY_LIMIT)?;
                Session::Floor(p)
            }
            Case::Weir => {
                let weir = tools.weir.as_ref().ok_or_else(missing)?;
                let state = ws.fresh_dir(&format!("{tag}.state"))?;
                let mut cmd = Command::new(weir);
                cmd.arg("--state-dir")
                    .arg(&state)
                    // The journal is the log: the line per change on
                    // stdout is for people, and off here (`--quiet`), as
                    // the peers' output goes to /dev/null unread.
                    .args(["fs", "watch", "--quiet"])
                    .args(&tools.weir_args)
                    .arg(root);
                let p = Proc::spawn(cmd, "weir fs watch", &stderr, false)?;
                p.wait_ready(|l| l.starts_with("weir: watching"), READY_LIMIT)?;
                Session::Weir { proc: p, state }
            }
            Case::Fsnotifywait | Case::Inotifywait => {
                let (tool, fanotify) = match case {
                    Case::Fsnotifywait => (tools.fsnotifywait.as_ref(), true),
                    _ => (tools.inotifywait.as_ref(), false),
                };
                let mut cmd = Command::new(tool.ok_or_else(missing)?);
                if fanotify {
                    cmd.arg("-S");
                }
                cmd.args(["-m", "-r"]);
                if !tools.all_events {
                    cmd.args(["-e", PEER_EVENTS]);
                }
                cmd.arg(root);
                let p = Proc::spawn(cmd, case.name(), &stderr, false)?;
                p.wait_ready(|l| l.contains("Watches established."), READY_LIMIT)?;
                Session::Notify(p)
            }
            Case::Watchman => {
                let server = tools.watchman.as_ref().ok_or_else(missing)?;
                let root_s = root
                    .to_str()
                    .context("the load directory's path is not UTF-8")?
                    .to_owned();
                let log_from = server.log_len();
                server.client(&["watch", &root_s], None)?;
                let clock = serde_json::json!(["clock", root_s, {"sync_timeout": 20000}]);
                server.client(&[], Some(&clock.to_string()))?;
                Session::Watchman {
                    server,
                    root: root_s,
                    log_from,
                }
            }
        }))
    }

    /// The process whose CPU is the watcher's.
    pub(crate) fn proc(&self) -> &Proc {
        match self {
            Session::Floor(p) | Session::Weir { proc: p, .. } | Session::Notify(p) => p,
            Session::Watchman { server, .. } => &server.proc,
        }
    }

    /// Stops the watcher and gathers what it reports.
    pub(crate) fn finish(self) -> Result<Finish> {
        let mut f = Finish::default();
        match self {
            Session::Floor(mut p) => {
                let mut out = p.take_stdout().context("the floor's stdout is piped")?;
                p.close_stdin();
                if p.wait_exit(STOP_LIMIT).is_none() {
                    bail!(
                        "the floor reader did not stop within {} s",
                        STOP_LIMIT.as_secs()
                    );
                }
                let mut text = String::new();
                out.read_to_string(&mut text)?;
                let line = text.lines().last().unwrap_or("");
                f.floor = Some(serde_json::from_str(line).with_context(|| {
                    format!("the floor's counts: {line:?} ({})", p.last_words(""))
                })?);
            }
            Session::Weir { proc, state } => {
                match proc.terminate(STOP_LIMIT)? {
                    Some(st) if st.success() => {}
                    Some(st) => {
                        f.problem = Some(format!(
                            "weir fs watch ended with {st} after SIGTERM: {}",
                            proc.last_words("")
                        ));
                    }
                    None => {
                        f.problem = Some(format!(
                            "weir fs watch did not exit within {} s of SIGTERM",
                            STOP_LIMIT.as_secs()
                        ));
                    }
                }
                drop(proc);
                match count_records(&state.join("log")) {
                    Ok((records, marks)) => {
                        f.weir_records = Some(records);
                        f.weir_marks = Some(marks);
                    }
                    Err(e) => {
                        let e = format!("{e:#}");
                        f.problem = Some(f.problem.map_or(e.clone(), |p| format!("{p}; {e}")));
                    }
                }
                std::fs::remove_dir_all(&state)?;
            }
            Session::Notify(p) => {
                // Killed by the signal: that is how these tools stop.
                p.terminate(STOP_LIMIT)?;
            }
            Session::Watchman {
                server,
                root,
                log_from,
            } => {
                server.client(&["watch-del", &root], None)?;
                f.recrawls = Some(server.recrawls_since(log_from));
            }
        }
        Ok(f)
    }

    /// For a watcher that quit during the round: its last words.
    pub(crate) fn last_words(&self) -> String {
        self.proc().last_words(FSNOTIFY_NOISE)
    }
}

/// The records in the log directory `dir`: those that are not MARKs, and
/// the MARKs.
fn count_records(dir: &Path) -> Result<(u64, u64)> {
    if !dir.exists() {
        bail!("weir fs watch left no log in {}", dir.display());
    }
    let mut r = Reader::open_dir(dir, 1);
    let (mut records, mut marks) = (0, 0);
    while let Some(rec) = r
        .next_record()
        .with_context(|| format!("read weir's log in {}", dir.display()))?
    {
        if rec.kind == RecordType::MARK {
            marks += 1;
        } else {
            records += 1;
        }
    }
    Ok((records, marks))
}
