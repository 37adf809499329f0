//! A random, reproducible workload on one directory tree, run by several
//! processes at once: creates, mkdirs, FIFOs, symlinks, hard links, writes,
//! chmods, truncates, unlinks, rmdirs, renames within and across
//! directories (whole directories too), renames over existing files and
//! `RENAME_EXCHANGE`, under names that are often hostile (see `names`).
//!
//! Separate processes matter: fanotify merges queued events only when they
//! come from the same pid, so threads of one process would not show the
//! interleavings a journal has to cope with. [`run`] re-executes the test
//! binary once per process, running its `workload_child` test (defined by
//! `support::workload_child_test!()`), which calls [`child_main`].
//!
//! Process `N` works mostly in its own directory `p<N>`, sometimes in
//! `shared/`, where the processes race each other. Each keeps a list of
//! the paths it made (refreshed by listing a directory now and then) so
//! that most operations hit entries that exist; the failures that races
//! and stale lists cause (ENOENT, EEXIST, ENOTEMPTY...) are expected and
//! counted, any other error panics.

use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use rustix::fs::{CWD, Mode, OFlags};
use rustix::io::Errno;

use super::rng::Rng;
use super::tree::show;

mod worker;

use worker::Worker;

/// The environment of a child process: the tree's root, the seed, the
/// process's index and its number of operations.
const ENV_ROOT: &str = "WEIR_FS_WORKLOAD_ROOT";
const ENV_SEED: &str = "WEIR_FS_WORKLOAD_SEED";
const ENV_INDEX: &str = "WEIR_FS_WORKLOAD_INDEX";
const ENV_OPS: &str = "WEIR_FS_WORKLOAD_OPS";
/// The line a child prints when it is about to wait for the start.
const READY_TAG: &str = "WEIR_FS_WORKLOAD_READY";
/// Starts the line a child prints its report on.
const REPORT_TAG: &str = "WEIR_FS_WORKLOAD_REPORT";
/// The directory every process also works in.
pub(crate) const SHARED: &[u8] = b"shared";
/// Percent of operations in `shared/` rather than the own directory.
const SHARED_PERCENT: u32 = 20;
/// New entries go only into directories with shorter paths, so that the
/// paths the workload passes stay well under `PATH_MAX` (4096) even with
/// 255-byte names; moves by other processes can still push one over
/// (ENAMETOOLONG, expected).
const MAX_PARENT_LEN: usize = 1536;
/// Known paths kept per list, at most.
const MAX_KNOWN: usize = 4096;

/// Errors a race or a stale list explains, for every operation.
const EXPECTED: [Errno; 9] = [
    Errno::NOENT,
    Errno::EXIST,
    Errno::NOTEMPTY,
    Errno::NOTDIR,
    Errno::ISDIR,
    Errno::INVAL,
    Errno::BUSY,
    // A symlink where a directory or file was (O_NOFOLLOW), or two
    // symlinks naming each other on the way.
    Errno::LOOP,
    // A directory moved deep by another process.
    Errno::NAMETOOLONG,
];

/// A kind of change the workload makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum OpKind {
    /// Create a regular file (`O_CREAT|O_EXCL`), sometimes with contents.
    Create,
    /// Make a directory.
    Mkdir,
    /// Make a FIFO (`mknodat`).
    Mkfifo,
    /// Make a symlink to a plain name in its directory (maybe dangling).
    Symlink,
    /// Hard-link an existing non-directory.
    Link,
    /// Append bytes to an existing file (open, write, close).
    Write,
    /// Change an entry's mode.
    Chmod,
    /// Truncate an existing file.
    Truncate,
    /// Unlink a non-directory.
    Unlink,
    /// Remove a directory (a non-empty one fails, and that is expected).
    Rmdir,
    /// Rename within a directory.
    Rename,
    /// Move a non-directory to another directory.
    Move,
    /// Move a directory (with all under it) to another directory.
    MoveDir,
    /// Rename onto an existing entry, replacing it.
    RenameOver,
    /// Swap two entries (`RENAME_EXCHANGE`).
    Exchange,
}

impl OpKind {
    /// Every kind, in a fixed order.
    pub(crate) const ALL: [OpKind; 15] = [
        OpKind::Create,
        OpKind::Mkdir,
        OpKind::Mkfifo,
        OpKind::Symlink,
        OpKind::Link,
        OpKind::Write,
        OpKind::Chmod,
        OpKind::Truncate,
        OpKind::Unlink,
        OpKind::Rmdir,
        OpKind::Rename,
        OpKind::Move,
        OpKind::MoveDir,
        OpKind::RenameOver,
        OpKind::Exchange,
    ];

    /// A short lowercase name (in reports).
    pub(crate) fn name(self) -> &'static str {
        match self {
            OpKind::Create => "create",
            OpKind::Mkdir => "mkdir",
            OpKind::Mkfifo => "mkfifo",
            OpKind::Symlink => "symlink",
            OpKind::Link => "link",
            OpKind::Write => "write",
            OpKind::Chmod => "chmod",
            OpKind::Truncate => "truncate",
            OpKind::Unlink => "unlink",
            OpKind::Rmdir => "rmdir",
            OpKind::Rename => "rename",
            OpKind::Move => "move",
            OpKind::MoveDir => "movedir",
            OpKind::RenameOver => "renameover",
            OpKind::Exchange => "exchange",
        }
    }

    fn index(self) -> usize {
        OpKind::ALL.iter().position(|&k| k == self).expect("in ALL")
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a workload did: how many operations of each kind succeeded, how
/// many failed in an expected way, and how many directory listings it made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WorkloadReport {
    done: [u64; OpKind::ALL.len()],
    /// Operations refused with an expected errno (races, stale lists).
    pub(crate) refused: u64,
    /// Directory listings made to refresh the lists of known entries.
    pub(crate) listings: u64,
}

impl WorkloadReport {
    /// How many operations of `kind` succeeded.
    pub(crate) fn count(&self, kind: OpKind) -> u64 {
        self.done[kind.index()]
    }

    /// Successful operations of every kind together.
    pub(crate) fn total(&self) -> u64 {
        self.done.iter().sum()
    }

    /// The kinds that never succeeded.
    pub(crate) fn missing(&self) -> Vec<OpKind> {
        OpKind::ALL
            .into_iter()
            .filter(|&k| self.count(k) == 0)
            .collect()
    }

    /// Adds `other`'s counts to these.
    pub(crate) fn merge(&mut self, other: &WorkloadReport) {
        for (a, b) in self.done.iter_mut().zip(other.done) {
            *a += b;
        }
        self.refused += other.refused;
        self.listings += other.listings;
    }

    fn bump(&mut self, kind: OpKind) {
        self.done[kind.index()] += 1;
    }

    /// `kind=count ...` words, as a child prints them for its parent.
    fn encode(&self) -> String {
        let mut words: Vec<String> = OpKind::ALL
            .iter()
            .map(|k| format!("{k}={}", self.count(*k)))
            .collect();
        words.push(format!("refused={}", self.refused));
        words.push(format!("listings={}", self.listings));
        words.join(" ")
    }

    /// The inverse of [`WorkloadReport::encode`].
    fn decode(line: &str) -> Option<WorkloadReport> {
        let mut r = WorkloadReport::default();
        for word in line.split_whitespace() {
            let (k, v) = word.split_once('=')?;
            let v: u64 = v.parse().ok()?;
            match k {
                "refused" => r.refused = v,
                "listings" => r.listings = v,
                _ => r.done[OpKind::ALL.iter().find(|o| o.name() == k)?.index()] = v,
            }
        }
        Some(r)
    }
}

impl fmt::Display for WorkloadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

/// Runs the workload with `procs` child processes of `ops_per_proc`
/// operations each on the tree at `root` (an existing directory), all
/// started at once, and returns their reports summed. Process `N` uses
/// stream `N` of `seed`. Makes `root/shared` first (if missing).
///
/// The calling test file must invoke `support::workload_child_test!()`.
/// Panics with the children's output if any of them fails.
pub(crate) fn run(root: &Path, seed: u64, procs: usize, ops_per_proc: usize) -> WorkloadReport {
    mkdir_shared(root);
    let exe = std::env::current_exe().expect("current_exe");
    let mut children: Vec<Child> = (0..procs)
        .map(|i| {
            Command::new(&exe)
                .args([
                    "workload_child",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(ENV_ROOT, root)
                .env(ENV_SEED, seed.to_string())
                .env(ENV_INDEX, i.to_string())
                .env(ENV_OPS, ops_per_proc.to_string())
                // Each child says it is ready on stdout, then waits for EOF
                // on stdin: so they all start their operations together
                // (not a process start-up apart) and race.
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn a workload child")
        })
        .collect();
    // Each child's stderr, drained on a thread of its own: a child that
    // fills that pipe must not block while we wait on another's stdout.
    let stderrs: Vec<std::thread::JoinHandle<Vec<u8>>> = children
        .iter_mut()
        .map(|c| {
            let mut e = c.stderr.take().expect("piped stderr");
            std::thread::spawn(move || {
                let mut v = Vec::new();
                let _ = e.read_to_end(&mut v);
                v
            })
        })
        .collect();
    // What each child printed before it was ready (or before it died).
    let mut early: Vec<String> = Vec::new();
    let mut readers: Vec<BufReader<ChildStdout>> = Vec::new();
    for c in &mut children {
        let mut r = BufReader::new(c.stdout.take().expect("piped stdout"));
        let mut seen = String::new();
        loop {
            let mut line = Vec::new();
            match r.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {
                    seen.push_str(&String::from_utf8_lossy(&line));
                    if line.starts_with(READY_TAG.as_bytes()) {
                        break;
                    }
                }
                Err(e) => panic!("read a workload child's stdout: {e}"),
            }
        }
        early.push(seen);
        readers.push(r);
    }
    // Closing the pipes is the starting gun.
    for c in &mut children {
        drop(c.stdin.take());
    }
    let mut total = WorkloadReport::default();
    let mut failures = Vec::new();
    for (i, (((mut child, mut reader), mut stdout), stderr)) in children
        .into_iter()
        .zip(readers)
        .zip(early)
        .zip(stderrs)
        .enumerate()
    {
        let mut rest = Vec::new();
        reader
            .read_to_end(&mut rest)
            .expect("read a workload child's stdout");
        stdout.push_str(&String::from_utf8_lossy(&rest));
        let stderr = stderr.join().expect("the stderr reader");
        let status = child.wait().expect("wait for a workload child");
        let report = stdout
            .lines()
            .find_map(|l| l.strip_prefix(REPORT_TAG))
            .and_then(|l| WorkloadReport::decode(l.trim()));
        match report {
            Some(r) if status.success() && stdout.contains("test result: ok. 1 passed") => {
                total.merge(&r);
            }
            _ => failures.push(format!(
                "workload child {i} failed ({status})\n--- stdout\n{stdout}\n--- stderr\n{}",
                String::from_utf8_lossy(&stderr)
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    total
}

/// The child half of [`run`]: does nothing unless [`run`] started this
/// process; otherwise says it is ready, waits for the start (EOF on
/// stdin), runs its share of the workload and prints its report for the
/// parent.
pub(crate) fn child_main() {
    let Some(root) = std::env::var_os(ENV_ROOT) else {
        eprintln!("not run: a child of support::workload::run only");
        return;
    };
    let num = |var: &str| -> u64 {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{var} missing or not a number"))
    };
    let (seed, index, ops) = (num(ENV_SEED), num(ENV_INDEX), num(ENV_OPS));
    // The harness has printed "test workload_child ... " without a
    // newline: start a line of our own.
    println!("\n{READY_TAG}");
    std::io::stdout().flush().expect("flush stdout");
    let mut sink = Vec::new();
    std::io::stdin()
        .read_to_end(&mut sink)
        .expect("wait for the parent's start");
    let report = run_worker(Path::new(&root), seed, index as usize, ops as usize);
    println!("{REPORT_TAG} {}", report.encode());
}

/// The workload of one process (index 0) on the calling thread, for tests
/// that do without child processes. Makes `root/shared` first (if missing).
/// Reproducible: the same seed on the same starting tree makes the same
/// changes.
pub(crate) fn run_in_process(root: &Path, seed: u64, ops: usize) -> WorkloadReport {
    mkdir_shared(root);
    run_worker(root, seed, 0, ops)
}

/// Process `index`'s share of the workload, on the calling thread: what
/// each child of [`run`] does. Threads running it with distinct indexes on
/// one tree race as the processes do (but fanotify sees one pid). Expects
/// `root/shared` to exist (see [`run_in_process`]).
pub(crate) fn run_worker(root: &Path, seed: u64, index: usize, ops: usize) -> WorkloadReport {
    let root_fd = rustix::fs::openat(
        CWD,
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap_or_else(|e| panic!("open {}: {e}", root.display()));
    let own = format!("p{index}").into_bytes();
    match rustix::fs::mkdirat(&root_fd, &own, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => panic!("mkdir {}/{}: {e}", root.display(), show(&own)),
    }
    let mut w = Worker::new(root_fd, Rng::stream(seed, index as u64), index, own);
    for _ in 0..ops {
        w.step();
    }
    w.report
}

fn mkdir_shared(root: &Path) {
    let shared = root.join(std::ffi::OsStr::from_bytes(SHARED));
    match std::fs::create_dir(&shared) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => panic!("mkdir {}: {e}", shared.display()),
    }
}
