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
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use rustix::fs::{AtFlags, CWD, Dir, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::names::{self, COOKIE_PREFIX};
use super::rng::Rng;
use super::tree::{file_name, join, show};

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
    let mut w = Worker {
        root: root_fd,
        rng: Rng::stream(seed, index as u64),
        index,
        own: own.clone(),
        dirs: Vec::new(),
        files: Vec::new(),
        others: Vec::new(),
        report: WorkloadReport::default(),
    };
    match rustix::fs::mkdirat(&w.root, &own, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => panic!("mkdir {}/{}: {e}", root.display(), show(&own)),
    }
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

/// Which of the worker's lists a path is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    Dirs,
    Files,
    Others,
}

/// One process's state: the tree's root, its PRNG, and the paths (relative
/// to the root) it believes exist, by type. `p<N>` and `shared` are on no
/// list: they are never victims.
struct Worker {
    root: OwnedFd,
    rng: Rng,
    index: usize,
    own: Vec<u8>,
    dirs: Vec<Vec<u8>>,
    /// Regular files.
    files: Vec<Vec<u8>>,
    /// FIFOs and symlinks.
    others: Vec<Vec<u8>>,
    report: WorkloadReport,
}

/// Whether `path` is `base` or under it.
fn under(path: &[u8], base: &[u8]) -> bool {
    path.strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
}

/// The directory part of a relative path (`""` for a top-level name).
fn parent(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&b| b == b'/') {
        Some(i) => &path[..i],
        None => b"",
    }
}

impl Worker {
    /// One operation, chosen by weight.
    fn step(&mut self) {
        // Weights out of 100; creation outweighs removal so the tree grows.
        const TABLE: [(u32, Option<OpKind>); 16] = [
            (14, Some(OpKind::Create)),
            (8, Some(OpKind::Mkdir)),
            (4, Some(OpKind::Mkfifo)),
            (5, Some(OpKind::Symlink)),
            (6, Some(OpKind::Link)),
            (11, Some(OpKind::Write)),
            (5, Some(OpKind::Chmod)),
            (4, Some(OpKind::Truncate)),
            (7, Some(OpKind::Unlink)),
            (5, Some(OpKind::Rmdir)),
            (6, Some(OpKind::Rename)),
            (5, Some(OpKind::Move)),
            (4, Some(OpKind::MoveDir)),
            (5, Some(OpKind::RenameOver)),
            (5, Some(OpKind::Exchange)),
            // A directory listing, to learn what is there.
            (6, None),
        ];
        let mut roll = self.rng.below(100) as u32;
        let mut choice = None;
        for (w, k) in TABLE {
            if roll < w {
                choice = Some(k);
                break;
            }
            roll -= w;
        }
        let Some(kind) = choice.expect("weights sum to 100") else {
            self.list();
            return;
        };
        let shared = self.rng.chance(SHARED_PERCENT);
        match kind {
            OpKind::Create => self.create(shared),
            OpKind::Mkdir => self.mkdir(shared),
            OpKind::Mkfifo => self.mkfifo(shared),
            OpKind::Symlink => self.symlink(shared),
            OpKind::Link => self.link(shared),
            OpKind::Write => self.write(shared),
            OpKind::Chmod => self.chmod(shared),
            OpKind::Truncate => self.truncate(shared),
            OpKind::Unlink => self.unlink(shared),
            OpKind::Rmdir => self.rmdir(shared),
            OpKind::Rename => self.rename(shared),
            OpKind::Move => self.move_entry(shared, false),
            OpKind::MoveDir => self.move_entry(shared, true),
            OpKind::RenameOver => self.rename_over(shared),
            OpKind::Exchange => self.exchange(shared),
        }
    }

    fn base(&self, shared: bool) -> Vec<u8> {
        if shared {
            SHARED.to_vec()
        } else {
            self.own.clone()
        }
    }

    fn list_of(&mut self, l: List) -> &mut Vec<Vec<u8>> {
        match l {
            List::Dirs => &mut self.dirs,
            List::Files => &mut self.files,
            List::Others => &mut self.others,
        }
    }

    /// A directory in the area (own or shared) to put something in: the
    /// area's base now and then, else a known directory there.
    fn pick_dir(&mut self, shared: bool) -> Vec<u8> {
        let base = self.base(shared);
        let cands: Vec<&Vec<u8>> = self
            .dirs
            .iter()
            .filter(|d| under(d, &base) && d.len() <= MAX_PARENT_LEN)
            .collect();
        if cands.is_empty() || self.rng.chance(25) {
            return base;
        }
        cands[self.rng.below(cands.len())].clone()
    }

    /// A known entry from `lists`, preferably in the area; `None` if the
    /// lists are empty.
    fn pick_entry(&mut self, lists: &[List], shared: bool) -> Option<(Vec<u8>, List)> {
        let base = self.base(shared);
        let all: Vec<(&Vec<u8>, List)> = lists
            .iter()
            .flat_map(|&l| {
                let v = match l {
                    List::Dirs => &self.dirs,
                    List::Files => &self.files,
                    List::Others => &self.others,
                };
                v.iter().map(move |p| (p, l))
            })
            .collect();
        let here: Vec<&(&Vec<u8>, List)> = all.iter().filter(|(p, _)| under(p, &base)).collect();
        let (p, l) = if here.is_empty() {
            *self.rng.pick(&all)?
        } else {
            *here[self.rng.below(here.len())]
        };
        Some((p.clone(), l))
    }

    fn new_name(&mut self, stem: &str) -> Vec<u8> {
        names::generate(&mut self.rng, stem)
    }

    /// Records `path` on list `l` (once).
    fn learn(&mut self, path: Vec<u8>, l: List) {
        let list = self.list_of(l);
        if list.len() < MAX_KNOWN && !list.contains(&path) {
            list.push(path);
        }
    }

    /// Drops `path` and everything under it from every list.
    fn forget(&mut self, path: &[u8]) {
        for l in [&mut self.dirs, &mut self.files, &mut self.others] {
            l.retain(|p| !under(p, path));
        }
    }

    /// After `from` became `to`: drops what `to` replaced, then renames
    /// `from` and everything under it on every list.
    fn renamed(&mut self, from: &[u8], to: &[u8]) {
        if from == to {
            return;
        }
        self.forget(to);
        for l in [&mut self.dirs, &mut self.files, &mut self.others] {
            for p in l.iter_mut() {
                if under(p, from) {
                    *p = [to, &p[from.len()..]].concat();
                }
            }
        }
    }

    /// After `a` and `b` were exchanged: swaps them (and what is under
    /// them) on every list.
    fn exchanged(&mut self, a: &[u8], b: &[u8]) {
        for l in [&mut self.dirs, &mut self.files, &mut self.others] {
            for p in l.iter_mut() {
                if under(p, a) {
                    *p = [b, &p[a.len()..]].concat();
                } else if under(p, b) {
                    *p = [a, &p[b.len()..]].concat();
                }
            }
        }
    }

    /// Counts `r`'s outcome: success for `kind`; an expected errno (or one
    /// in `extra`) as refused, forgetting any of `existing` that is gone;
    /// panics on anything else. True on success.
    fn outcome(
        &mut self,
        kind: OpKind,
        existing: &[&[u8]],
        r: rustix::io::Result<()>,
        extra: &[Errno],
    ) -> bool {
        match r {
            Ok(()) => {
                self.report.bump(kind);
                true
            }
            Err(e) if EXPECTED.contains(&e) || extra.contains(&e) => {
                self.report.refused += 1;
                for p in existing {
                    let gone =
                        rustix::fs::statat(&self.root, *p, AtFlags::SYMLINK_NOFOLLOW).is_err();
                    if gone {
                        self.forget(p);
                    }
                }
                false
            }
            Err(e) => panic!(
                "workload p{}: {kind} {} failed unexpectedly: {e}",
                self.index,
                existing
                    .iter()
                    .map(|p| show(p))
                    .collect::<Vec<_>>()
                    .join(" -> ")
            ),
        }
    }

    fn create(&mut self, shared: bool) {
        let dir = self.pick_dir(shared);
        let name = self.new_name("f");
        let path = join(&dir, &name);
        let len = if self.rng.chance(50) {
            self.rng.below(4096)
        } else {
            0
        };
        let r = rustix::fs::openat(
            &self.root,
            &path,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .and_then(|fd| write_all(&fd, &self.bytes(len)));
        if self.outcome(OpKind::Create, &[&dir], r, &[]) {
            self.learn(path, List::Files);
        }
    }

    fn mkdir(&mut self, shared: bool) {
        let dir = self.pick_dir(shared);
        let path = join(&dir, &self.new_name("d"));
        let r = rustix::fs::mkdirat(&self.root, &path, Mode::from_raw_mode(0o755));
        if self.outcome(OpKind::Mkdir, &[&dir], r, &[]) {
            self.learn(path, List::Dirs);
        }
    }

    fn mkfifo(&mut self, shared: bool) {
        let dir = self.pick_dir(shared);
        let path = join(&dir, &self.new_name("q"));
        let r = rustix::fs::mknodat(
            &self.root,
            &path,
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        );
        if self.outcome(OpKind::Mkfifo, &[&dir], r, &[]) {
            self.learn(path, List::Others);
        }
    }

    fn symlink(&mut self, shared: bool) {
        let dir = self.pick_dir(shared);
        let path = join(&dir, &self.new_name("l"));
        // A sibling's name, or a fresh one (dangling). Always a plain name,
        // resolved in the link's own directory: following it can never
        // leave the tree.
        let sibling = self
            .files
            .iter()
            .chain(&self.dirs)
            .chain(&self.others)
            .filter(|p| parent(p) == dir.as_slice())
            .map(|p| file_name(p).to_vec())
            .collect::<Vec<_>>();
        let target = match self.rng.pick(&sibling) {
            Some(t) if self.rng.chance(60) => t.clone(),
            _ => self.new_name("t"),
        };
        let r = rustix::fs::symlinkat(target.as_slice(), &self.root, &path);
        if self.outcome(OpKind::Symlink, &[&dir], r, &[]) {
            self.learn(path, List::Others);
        }
    }

    fn link(&mut self, shared: bool) {
        let Some((src, l)) = self.pick_entry(&[List::Files, List::Files, List::Others], shared)
        else {
            return self.create(shared);
        };
        let area = if self.rng.chance(70) { shared } else { !shared };
        let dir = self.pick_dir(area);
        let path = join(&dir, &self.new_name("h"));
        let r = rustix::fs::linkat(&self.root, &src, &self.root, &path, AtFlags::empty());
        // EPERM: a directory took the source's name (links to directories
        // are refused); EMLINK: a filesystem's link limit.
        if self.outcome(OpKind::Link, &[&src, &dir], r, &[Errno::PERM, Errno::MLINK]) {
            self.learn(path, l);
        }
    }

    fn write(&mut self, shared: bool) {
        let Some((path, _)) = self.pick_entry(&[List::Files], shared) else {
            return self.create(shared);
        };
        let len = if self.rng.chance(10) {
            (16 << 10) + self.rng.below(48 << 10)
        } else {
            1 + self.rng.below(2048)
        };
        let r = open_regular(&self.root, &path, OFlags::APPEND)
            .and_then(|fd| write_all(&fd, &self.bytes(len)));
        // ENXIO: a FIFO (without a reader) took the name.
        self.outcome(OpKind::Write, &[&path], r, &[Errno::NXIO]);
    }

    fn chmod(&mut self, shared: bool) {
        let Some((path, _)) = self.pick_entry(&[List::Files, List::Dirs, List::Others], shared)
        else {
            return self.mkdir(shared);
        };
        // The owner keeps rwx: a workload run as a plain user must still
        // get into every directory.
        let mode = 0o700 | (self.rng.next_u64() as u32 & 0o077);
        // Follows a symlink, to a sibling at most (see symlink()).
        let r = rustix::fs::chmodat(
            &self.root,
            &path,
            Mode::from_raw_mode(mode),
            AtFlags::empty(),
        );
        self.outcome(OpKind::Chmod, &[&path], r, &[]);
    }

    fn truncate(&mut self, shared: bool) {
        let Some((path, _)) = self.pick_entry(&[List::Files], shared) else {
            return self.create(shared);
        };
        let len = if self.rng.chance(40) {
            0
        } else {
            self.rng.below(8192) as u64
        };
        let r = open_regular(&self.root, &path, OFlags::empty())
            .and_then(|fd| rustix::fs::ftruncate(&fd, len));
        self.outcome(OpKind::Truncate, &[&path], r, &[Errno::NXIO]);
    }

    fn unlink(&mut self, shared: bool) {
        let Some((path, _)) = self.pick_entry(&[List::Files, List::Others], shared) else {
            return self.create(shared);
        };
        let r = rustix::fs::unlinkat(&self.root, &path, AtFlags::empty());
        if self.outcome(OpKind::Unlink, &[&path], r, &[]) {
            self.forget(&path);
        }
    }

    fn rmdir(&mut self, shared: bool) {
        // Mostly a leaf (it may succeed), sometimes any (ENOTEMPTY).
        let leaves: Vec<Vec<u8>> = self
            .dirs
            .iter()
            .filter(|d| {
                !self
                    .dirs
                    .iter()
                    .chain(&self.files)
                    .chain(&self.others)
                    .any(|p| parent(p) == d.as_slice())
            })
            .cloned()
            .collect();
        let path = match self.rng.pick(&leaves) {
            Some(p) if self.rng.chance(70) => p.clone(),
            _ => match self.pick_entry(&[List::Dirs], shared) {
                Some((p, _)) => p,
                None => return self.mkdir(shared),
            },
        };
        let r = rustix::fs::unlinkat(&self.root, &path, AtFlags::REMOVEDIR);
        if self.outcome(OpKind::Rmdir, &[&path], r, &[]) {
            self.forget(&path);
        }
    }

    fn rename(&mut self, shared: bool) {
        let Some((from, _)) = self.pick_entry(&[List::Files, List::Dirs, List::Others], shared)
        else {
            return self.create(shared);
        };
        let to = join(parent(&from), &self.new_name("r"));
        let r = rustix::fs::renameat(&self.root, &from, &self.root, &to);
        if self.outcome(OpKind::Rename, &[&from], r, &[]) {
            self.renamed(&from, &to);
        }
    }

    /// Moves a non-directory, or a directory (`dir`), to another directory
    /// of either area, keeping its name more often than not.
    fn move_entry(&mut self, shared: bool, dir: bool) {
        let lists: &[List] = if dir {
            &[List::Dirs]
        } else {
            &[List::Files, List::Others]
        };
        let Some((from, _)) = self.pick_entry(lists, shared) else {
            return if dir {
                self.mkdir(shared)
            } else {
                self.create(shared)
            };
        };
        let area = if self.rng.chance(60) { !shared } else { shared };
        let mut target = self.pick_dir(area);
        // Into itself fails (EINVAL); so does a move in place, quietly.
        if target == parent(&from) || under(&target, &from) {
            target = self.base(!under(&from, SHARED));
        }
        let name = if self.rng.chance(60) {
            file_name(&from).to_vec()
        } else {
            self.new_name(if dir { "m" } else { "v" })
        };
        let to = join(&target, &name);
        let r = rustix::fs::renameat(&self.root, &from, &self.root, &to);
        let kind = if dir { OpKind::MoveDir } else { OpKind::Move };
        if self.outcome(kind, &[&from, &target], r, &[]) {
            self.renamed(&from, &to);
        }
    }

    /// Renames a known entry onto another known one: mostly a
    /// non-directory onto a non-directory, sometimes a directory onto a
    /// directory (which fails unless the target is empty).
    fn rename_over(&mut self, shared: bool) {
        let lists: &[List] = if self.rng.chance(80) {
            &[List::Files, List::Others]
        } else {
            &[List::Dirs]
        };
        let (Some((from, _)), Some((to, _))) = (
            self.pick_entry(lists, shared),
            self.pick_entry(lists, shared),
        ) else {
            return self.create(shared);
        };
        if from == to {
            return self.rename(shared);
        }
        // Counted as an overwrite only if the target was there (a race may
        // still take it away in between; the count is a lower bound on
        // intent, not a proof).
        let there = rustix::fs::statat(&self.root, &to, AtFlags::SYMLINK_NOFOLLOW).is_ok();
        let r = rustix::fs::renameat(&self.root, &from, &self.root, &to);
        let kind = if there {
            OpKind::RenameOver
        } else {
            OpKind::Rename
        };
        if self.outcome(kind, &[&from, &to], r, &[]) {
            self.renamed(&from, &to);
        }
    }

    fn exchange(&mut self, shared: bool) {
        let all = [List::Files, List::Dirs, List::Others];
        let other = if self.rng.chance(70) { shared } else { !shared };
        let (Some((a, _)), Some((b, _))) =
            (self.pick_entry(&all, shared), self.pick_entry(&all, other))
        else {
            return self.create(shared);
        };
        if under(&a, &b) || under(&b, &a) {
            // The kernel refuses to swap an entry with its own ancestor.
            return self.rename(shared);
        }
        let r = rustix::fs::renameat_with(&self.root, &a, &self.root, &b, RenameFlags::EXCHANGE);
        if self.outcome(OpKind::Exchange, &[&a, &b], r, &[]) {
            self.exchanged(&a, &b);
        }
    }

    /// Lists a directory of the area and learns its entries (sorted, so
    /// the choices that follow do not depend on a filesystem's readdir
    /// order). Never learns the tracker's cookie files.
    fn list(&mut self) {
        self.report.listings += 1;
        let shared = self.rng.chance(SHARED_PERCENT * 2);
        let dir = self.pick_dir(shared);
        let fd = match rustix::fs::openat(
            &self.root,
            &dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(e) if EXPECTED.contains(&e) => {
                self.forget(&dir);
                return;
            }
            Err(e) => panic!("workload p{}: list {}: {e}", self.index, show(&dir)),
        };
        let mut seen = Vec::new();
        for entry in Dir::read_from(&fd).expect("read a directory") {
            let entry = match entry {
                Ok(e) => e,
                // The directory was removed while we read it.
                Err(Errno::NOENT) => break,
                Err(e) => panic!("workload p{}: list {}: {e}", self.index, show(&dir)),
            };
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." || name.starts_with(COOKIE_PREFIX) {
                continue;
            }
            seen.push((name.to_vec(), entry.file_type()));
        }
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, ty) in seen {
            let path = join(&dir, &name);
            let ty = match ty {
                FileType::Unknown => {
                    match rustix::fs::statat(&self.root, &path, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) => FileType::from_raw_mode(st.st_mode),
                        Err(_) => continue,
                    }
                }
                t => t,
            };
            let l = match ty {
                FileType::Directory => List::Dirs,
                FileType::RegularFile => List::Files,
                _ => List::Others,
            };
            // A name whose type changed (an exchange) is re-filed.
            for other in [List::Dirs, List::Files, List::Others] {
                if other != l {
                    self.list_of(other).retain(|p| p != &path);
                }
            }
            self.learn(path, l);
        }
    }

    /// `len` pseudo-random bytes to write.
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len + 8);
        while v.len() < len {
            v.extend_from_slice(&self.rng.next_u64().to_le_bytes());
        }
        v.truncate(len);
        v
    }
}

/// Opens `path` for writing without following a symlink and without
/// blocking (a FIFO with no reader gives ENXIO instead of hanging).
fn open_regular(root: &OwnedFd, path: &[u8], extra: OFlags) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        root,
        path,
        OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | extra,
        Mode::empty(),
    )
}

fn write_all(fd: &OwnedFd, mut buf: &[u8]) -> rustix::io::Result<()> {
    while !buf.is_empty() {
        match rustix::io::write(fd, buf) {
            Ok(n) => buf = &buf[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
