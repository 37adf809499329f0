//! The write pattern the log promises, checked call by call.
//!
//! docs/format.md ("The rules that make the format fragmentation-free")
//! promises that a byte once written to a segment is never written again
//! (rule 1) and that every durable commit, one that ends in `fdatasync`, is
//! padded with zeros to a 4 KiB boundary (rule 3). The bytes left on disk
//! cannot show either: a rewrite of the same bytes, or an `fdatasync` issued
//! before the padding was written, leave the same file. So a `FileSystem`
//! wrapper records every write and sync the log makes, in order, while
//! several threads append plainly and durably and segments roll.
//!
//! The flush bound is checked too: a plain `append` reaches the OS (and so
//! readers) within `Options::flush_interval`, with no sync, and it is that
//! interval, not some other wake-up, that bounds it; the first record after
//! an open, an idle spell like any other, is written at once.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use support::observed::{FileOp, NameOp, Observed, Observer};
use support::{Payload, eventually, mix};
use weir_log::fs::File;
use weir_log::mem::MemFs;
use weir_log::segment::{BLOCK, parse_segment_name};
use weir_log::{Log, Options, Preallocation, Record, RecordType};

#[derive(Debug, Clone, Copy)]
enum Op {
    /// `Write(start, end)`: the bytes `start..end` were written.
    Write(u64, u64),
    SyncData,
    SyncAll,
    /// A file renamed onto this path (a spare becoming a segment).
    RenamedOnto,
}

/// Every write and sync the log made, in order, by path.
#[derive(Debug, Default)]
struct Journal(Mutex<Vec<(PathBuf, Op)>>);

impl Observer for Journal {
    fn file_op(&self, path: &Path, _: &dyn File, op: FileOp) {
        let op = match op {
            FileOp::Write { off, n } => Op::Write(off, off + n as u64),
            FileOp::SyncData => Op::SyncData,
            FileOp::SyncAll => Op::SyncAll,
            FileOp::Allocate(_) | FileOp::SetLen(_) => return,
        };
        self.0.lock().unwrap().push((path.to_path_buf(), op));
    }
    fn name_op(&self, op: NameOp<'_>) {
        if let NameOp::Rename { to, .. } = op {
            self.0
                .lock()
                .unwrap()
                .push((to.to_path_buf(), Op::RenamedOnto));
        }
    }
}

/// What the journal shows, once both rules held throughout.
#[derive(Debug, Default)]
struct Tally {
    segments: usize,
    /// `fdatasync`s of segments: durable commits and seals.
    data_syncs: usize,
    /// Writes followed by another write to the same file, not by a sync:
    /// flushes that reached the OS unpadded.
    plain_writes: usize,
}

/// Checks rules 1 and 3 on every segment file the journal names.
fn check_rules(journal: &[(PathBuf, Op)]) -> Tally {
    let mut by_file: BTreeMap<&Path, Vec<Op>> = BTreeMap::new();
    for (path, op) in journal {
        if parse_segment_name(path).is_some() {
            by_file.entry(path).or_default().push(*op);
        }
    }
    let mut t = Tally {
        segments: by_file.len(),
        ..Tally::default()
    };
    for (path, ops) in &by_file {
        let path = path.display();
        let mut written: Vec<(u64, u64)> = Vec::new();
        let mut high = 0;
        for (k, op) in ops.iter().enumerate() {
            match *op {
                Op::Write(off, end) => {
                    if let Some((a, b)) = written.iter().find(|&&(a, b)| off < b && a < end) {
                        panic!("{path}: op {k} writes {off}..{end} over {a}..{b}, written before");
                    }
                    written.push((off, end));
                    high = high.max(end);
                    if matches!(ops.get(k + 1), Some(Op::Write(..))) {
                        t.plain_writes += 1;
                    }
                }
                Op::SyncData => {
                    assert!(
                        high.is_multiple_of(BLOCK),
                        "{path}: op {k} is an fdatasync with data written up to {high}, \
                         not a 4 KiB boundary: {ops:?}"
                    );
                    t.data_syncs += 1;
                }
                // A new segment's header and a seal's footer end in fsync;
                // the format pads only commits that end in fdatasync.
                Op::SyncAll => {}
                // The per-path bookkeeping above assumes one file per name.
                Op::RenamedOnto => panic!("{path}: a file was renamed onto a segment"),
            }
        }
    }
    t
}

const SALT: u64 = 0x7772_6974_6521;
const THREADS: u64 = 4;
const ROUNDS: u64 = 12;

/// One thread of the workload; returns `(index, key)` of each record it
/// appended. A record's target is its key, `t << 32 | seq`, and `Payload`
/// derives the rest (up to about 6 KiB) from the key.
fn writer(log: &Log, barrier: &Barrier, t: u64) -> Vec<(u64, u64)> {
    let (mut placed, mut seq) = (Vec::new(), 0);
    let mut next = || {
        seq += 1;
        (t << 32 | seq, Payload::new(SALT, t << 32 | seq))
    };
    for round in 0..ROUNDS {
        // A burst of plain appends...
        for _ in 0..3 + mix(t << 8 | round) % 10 {
            let (key, p) = next();
            placed.push((p.with(|r| log.append(r)).unwrap().index(), key));
        }
        // ...reaches the OS in a plain write: no durable wait is pending
        // while the writers wait here.
        if barrier.wait().is_leader() {
            eventually("a plain burst is flushed", || {
                log.last_index() == log.last_appended()
            });
        }
        barrier.wait();
        // Then durable appends, and tickets waited on after a plain append.
        let mut ticket = None;
        for j in 0..6 {
            let (key, p) = next();
            let index = match j % 3 {
                0 => p.with(|r| log.append_durable(r)).unwrap().index(),
                1 => {
                    let a = p.with(|r| log.append(r)).unwrap();
                    ticket = Some(a);
                    a.index()
                }
                _ => {
                    let i = p.with(|r| log.append(r)).unwrap().index();
                    log.wait_durable(ticket.take().unwrap()).unwrap();
                    i
                }
            };
            placed.push((index, key));
        }
        barrier.wait();
    }
    placed
}

#[test]
fn segments_are_written_once_and_durable_commits_end_on_a_block() {
    let dir = tempfile::tempdir().unwrap(); // MemFs still locks the real directory
    let mem = Arc::new(MemFs::new());
    let journal = Arc::new(Journal::default());
    let opts = Options::default()
        .fs(Arc::new(Observed::new(mem.clone(), journal.clone())))
        .segment_size(64 * 1024)
        // No spare: its zeros are written before the file becomes a segment
        // under another name, which per-path bookkeeping would misread.
        .preallocation(Preallocation::Reserve)
        // Only the workload's durable appends and seals sync, so the plain
        // phases below end in plain writes.
        .sync_interval(None);
    let log = Log::open(dir.path(), opts.clone()).unwrap();
    let barrier = Barrier::new(THREADS as usize);
    let mut placed: Vec<(u64, u64)> = std::thread::scope(|s| {
        let (log, barrier) = (&log, &barrier);
        let writers: Vec<_> = (0..THREADS)
            .map(|t| s.spawn(move || writer(log, barrier, t)))
            .collect();
        writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    log.close().unwrap();
    let t = check_rules(&journal.0.lock().unwrap());
    // Not vacuous: several segments rolled and sealed, at least 10 durable
    // commits besides the (at most one per segment) seals' fdatasyncs, and
    // plain flushes that left unpadded ends for the next commit to follow.
    assert!(t.segments >= 4, "{t:?}");
    assert!(t.data_syncs >= t.segments + 10, "{t:?}");
    assert!(t.plain_writes >= (ROUNDS / 2) as usize, "{t:?}");

    // Read everything back through a reopened log: gap-free from 1, and
    // every record what its writer appended at that index.
    placed.sort_unstable();
    let log = Log::open(dir.path(), opts).unwrap();
    let records: Vec<_> = log.reader(1).collect::<Result<_, _>>().unwrap();
    assert_eq!(records.len(), placed.len());
    for (r, &(index, key)) in records.iter().zip(&placed) {
        assert_eq!(r.index, index);
        assert!(Payload::new(SALT, key).matches(r), "record {index}: {r:?}");
    }
    log.close().unwrap();
    let v = weir_log::verify(&*mem, dir.path(), |_, _| {}).unwrap();
    assert!(v.problem.is_none(), "{v:?}");
    // The reopened log followed the rules too.
    check_rules(&journal.0.lock().unwrap());
}

/// Opens a log with `flush_interval` and no sync interval, appends one
/// record, and waits for it: an open is an idle spell, so the first record
/// after it is written at once. The committer then waits on its flush
/// timer, and the next appends do not wake it.
fn open_and_append_one(dir: &Path, flush_interval: Duration) -> Log {
    let opts = Options::default()
        .flush_interval(flush_interval)
        .sync_interval(None);
    let log = Log::open(dir, opts).unwrap();
    append(&log, 1);
    // A bound on a hang, not a speed. With a 60 s interval this fails if
    // the first record waited for the timer (a regression: a fresh log's
    // committer started on its flush timer, not idle).
    eventually("the first record after the open is written", || {
        log.last_index() == 1
    });
    // Let the wake that write took be spent before the next appends: a
    // wake left over would end the committer's next timed wait early.
    std::thread::sleep(Duration::from_millis(50));
    log
}

fn append(log: &Log, n: u8) {
    for k in 0..n {
        let _ = log
            .append(&Record::new(RecordType::MARK).name(&[k]))
            .unwrap();
    }
}

fn visible(log: &Log) -> u64 {
    log.reader(1).map(Result::unwrap).count() as u64
}

#[test]
fn plain_appends_reach_readers_within_the_flush_interval() {
    let dir = tempfile::tempdir().unwrap();
    let log = open_and_append_one(dir.path(), Duration::from_millis(20));
    append(&log, 2);
    // A bound on a hang, not a speed: the interval is 20 ms.
    eventually("plain appends become visible", || log.last_index() == 3);
    // Two more right after that write: the committer is on its timer again.
    append(&log, 2);
    eventually("plain appends become visible", || log.last_index() == 5);
    assert_eq!(visible(&log), 5);
    // The flushes wrote them; no fsync was made.
    let st = log.stats();
    assert_eq!((st.durable_index, st.syncs), (0, 0), "{st:?}");
    log.close().unwrap();
}

#[test]
fn plain_appends_wait_for_the_flush_interval_not_for_anything_else() {
    let dir = tempfile::tempdir().unwrap();
    let log = open_and_append_one(dir.path(), Duration::from_secs(60));
    append(&log, 2);
    std::thread::sleep(Duration::from_millis(300));
    // Neither flushed nor visible: nothing but the 60 s timer (or a sync)
    // would write them.
    assert_eq!((log.last_index(), visible(&log)), (1, 1));
    // An explicit sync does not wait for the timer.
    assert_eq!(log.sync().unwrap().unwrap().index(), 3);
    assert_eq!((log.last_index(), visible(&log)), (3, 3));
    log.close().unwrap();
}
