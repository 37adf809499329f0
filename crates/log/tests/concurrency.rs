//! Many writers and several readers at once, in threads and in processes.
//!
//! Every record carries its writer, its sequence number within that writer
//! and a body derived from both, so a reader can check each record on its
//! own. The writers also publish which index each of their records got; at
//! the end every reader's view is checked against that model. Readers must
//! never see a hole, an index out of order or a payload that differs from
//! what was written. Segments are small so that readers cross many segment
//! rolls while the log is being written.

use std::path::Path;
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_log::{Log, LogRecord, Options, Reader, Record, RecordType, Stats};

const SEGMENT: u64 = 64 * 1024;
/// Readers give up (and fail) after this long without reaching the end, so a
/// bug that stops the log shows as a failure rather than a hung test.
const DEADLINE: Duration = Duration::from_secs(120);

fn rng_next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// The name of record `seq` of `writer`: a 12-byte header then a body whose
/// length and bytes follow from the header alone.
fn payload(writer: u32, seq: u32) -> Vec<u8> {
    let mut x = (u64::from(writer) << 32 | u64::from(seq)).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let len = (rng_next(&mut x) % 700) as usize;
    let mut v = Vec::with_capacity(12 + len);
    v.extend_from_slice(&writer.to_le_bytes());
    v.extend_from_slice(&seq.to_le_bytes());
    v.extend_from_slice(&(len as u32).to_le_bytes());
    v.extend((0..len).map(|_| rng_next(&mut x) as u8));
    v
}

/// Checks a record on its own and returns its `(writer, seq)`.
fn check_record(r: &LogRecord) -> Result<(u32, u32), String> {
    let n = &r.name;
    if n.len() < 12 {
        return Err(format!(
            "index {}: short payload of {} bytes",
            r.index,
            n.len()
        ));
    }
    let w = u32::from_le_bytes(n[0..4].try_into().unwrap());
    let s = u32::from_le_bytes(n[4..8].try_into().unwrap());
    if *n != payload(w, s) {
        return Err(format!(
            "index {}: payload of writer {w} seq {s} is damaged",
            r.index
        ));
    }
    if r.parent != w.to_le_bytes() || r.kind != RecordType(200 + w as u16) {
        return Err(format!(
            "index {}: parent or type does not match writer {w}",
            r.index
        ));
    }
    Ok((w, s))
}

/// Follows a reader until it has seen `n` records, checking continuity.
/// `fresh` makes a new reader from an index (to also exercise reopening).
fn follow(
    mut next: impl FnMut(&mut Reader) -> Option<weir_log::Result<LogRecord>>,
    mut reader: Reader,
    fresh: Option<&dyn Fn(u64) -> Reader>,
    n: u64,
) -> Result<Vec<(u32, u32)>, String> {
    let start = Instant::now();
    let mut seen = Vec::with_capacity(n as usize);
    let mut expect = 1u64;
    while expect <= n {
        match next(&mut reader) {
            Some(Ok(r)) => {
                if r.index != expect {
                    return Err(format!("expected index {expect}, got {}", r.index));
                }
                seen.push(check_record(&r)?);
                expect += 1;
            }
            Some(Err(e)) => return Err(format!("reader error at {expect}: {e}")),
            None => {
                if start.elapsed() > DEADLINE {
                    return Err(format!("stuck at index {expect} of {n}"));
                }
                reader.wait(Duration::from_millis(20));
                if let Some(f) = fresh {
                    reader = f(expect);
                }
            }
        }
    }
    match next(&mut reader) {
        None => Ok(seen),
        Some(r) => Err(format!("a record past the end: {r:?}")),
    }
}

/// Writes `per_writer` records from each of `writers` threads and returns,
/// per writer, the index each of its records got.
fn write_all(log: &Log, writers: u32, per_writer: u32) -> Vec<Vec<u64>> {
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..writers)
            .map(|w| {
                s.spawn(move || {
                    let mut got = Vec::with_capacity(per_writer as usize);
                    for seq in 0..per_writer {
                        let name = payload(w, seq);
                        let parent = w.to_le_bytes();
                        let r = Record::new(RecordType(200 + w as u16))
                            .parent(&parent)
                            .name(&name);
                        let a = if seq % 1000 == 999 {
                            log.append_durable(&r).unwrap().index()
                        } else {
                            log.append(&r).unwrap().index()
                        };
                        got.push(a);
                    }
                    got
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// The model: the `(writer, seq)` of every index, after checking that the
/// indexes handed out are exactly `1..=n` and in each writer's own order.
fn model(indexes: &[Vec<u64>]) -> Vec<(u32, u32)> {
    let n: usize = indexes.iter().map(Vec::len).sum();
    let mut at: Vec<Option<(u32, u32)>> = vec![None; n];
    for (w, idx) in indexes.iter().enumerate() {
        assert!(
            idx.windows(2).all(|p| p[0] < p[1]),
            "writer {w} got indexes out of order"
        );
        for (seq, &i) in idx.iter().enumerate() {
            assert!(i >= 1 && i as usize <= n, "index {i} outside 1..={n}");
            let slot = &mut at[i as usize - 1];
            assert!(slot.is_none(), "index {i} handed out twice");
            *slot = Some((w as u32, seq as u32));
        }
    }
    at.into_iter()
        .map(|x| x.expect("every index handed out"))
        .collect()
}

fn threads_case(ring_slots: usize) -> Stats {
    const WRITERS: u32 = 8;
    const PER: u32 = 10_000;
    let n = u64::from(WRITERS * PER);
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default()
        .segment_size(SEGMENT)
        .ring_slots(ring_slots);
    let log = Arc::new(Log::open(dir.path(), opts).unwrap());
    let (indexes, views) = std::thread::scope(|s| {
        let readers: Vec<_> = (0..3)
            .map(|k| {
                let log = log.clone();
                s.spawn(move || {
                    let it = |r: &mut Reader| r.next();
                    match k {
                        // One long-lived reader, polling.
                        0 => follow(it, log.reader(1), None, n),
                        // One that is recreated at its position on every poll.
                        1 => {
                            let fresh = |from| log.reader(from);
                            follow(it, log.reader(1), Some(&fresh), n)
                        }
                        // One that reads another process's way, by directory.
                        _ => follow(it, Reader::open_dir(log.dir(), 1), None, n),
                    }
                })
            })
            .collect();
        let indexes = write_all(&log, WRITERS, PER);
        let views: Vec<_> = readers.into_iter().map(|h| h.join().unwrap()).collect();
        (indexes, views)
    });
    let want = model(&indexes);
    assert_eq!(want.len() as u64, n);
    for (k, v) in views.into_iter().enumerate() {
        let v = v.unwrap_or_else(|e| panic!("reader {k}: {e}"));
        assert!(
            v == want,
            "reader {k} saw records that differ from the writers' model"
        );
    }
    assert!(
        log.stats().segments > 20,
        "readers should cross many rolls: {:?}",
        log.stats()
    );
    let stats = log.stats();
    let log = Arc::into_inner(log).unwrap();
    log.close().unwrap();
    let again: Vec<_> = Reader::open_dir(dir.path(), 1)
        .map(|r| check_record(&r.unwrap()).unwrap())
        .collect();
    assert!(
        again == want,
        "the log read after close differs from the model"
    );
    stats
}

#[test]
fn threads_many_writers_and_live_readers() {
    let _ = threads_case(Options::default().ring_slots);
}

#[test]
fn threads_with_a_small_ring() {
    // A ring of 64 slots keeps writers waiting for the committer.
    let _ = threads_case(64);
}

#[test]
fn threads_with_a_tiny_ring_lift_and_spill() {
    // With 4 slots and 8 writers, a writer between its reservation and its
    // publish holds up the committer all the time: the others go on by the
    // committer lifting frames past it and by spilling, and the model check
    // above proves order and content survive both.
    let st = threads_case(4);
    assert!(st.spilled > 0, "no append spilled: {st:?}");
}

const ENV_DIR: &str = "WEIR_CONCURRENCY_CHILD_DIR";
const ENV_COUNT: &str = "WEIR_CONCURRENCY_CHILD_COUNT";
const ENV_OUT: &str = "WEIR_CONCURRENCY_CHILD_OUT";

/// Runs only as a child of `processes_writer_and_readers`: follows the log
/// in another process and fails on any violation.
#[test]
fn child_reader_process() {
    let (Ok(dir), Ok(n)) = (std::env::var(ENV_DIR), std::env::var(ENV_COUNT)) else {
        return;
    };
    let n: u64 = n.parse().unwrap();
    let v = follow(|r| r.next(), Reader::open_dir(&dir, 1), None, n)
        .unwrap_or_else(|e| panic!("child: {e}"));
    // What it saw, for the parent to compare with the writers' model.
    let out: Vec<u8> = v
        .iter()
        .flat_map(|(w, s)| [w.to_le_bytes(), s.to_le_bytes()].concat())
        .collect();
    std::fs::write(std::env::var(ENV_OUT).unwrap(), out).unwrap();
    // Each writer's records appear in its own order, without gaps.
    let mut next_seq = std::collections::HashMap::new();
    for (w, s) in v {
        let e = next_seq.entry(w).or_insert(0u32);
        assert_eq!(s, *e, "writer {w}: seq {s} where {e} was expected");
        *e += 1;
    }
}

fn spawn_child(dir: &Path, n: u64, out: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_reader_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ENV_DIR, dir)
        .env(ENV_COUNT, n.to_string())
        .env(ENV_OUT, out)
        .spawn()
        .unwrap()
}

#[test]
fn processes_writer_and_readers() {
    const WRITERS: u32 = 4;
    const PER: u32 = 10_000;
    let n = u64::from(WRITERS * PER);
    let dir = tempfile::tempdir().unwrap();
    let outs = tempfile::tempdir().unwrap();
    let out = |k: usize| outs.path().join(format!("child-{k}"));
    let log = Log::open(dir.path(), Options::default().segment_size(SEGMENT)).unwrap();
    // Readers start before the first record, so they follow the log live.
    let children: Vec<Child> = (0..3)
        .map(|k| spawn_child(dir.path(), n, &out(k)))
        .collect();
    let indexes = write_all(&log, WRITERS, PER);
    let want = model(&indexes);
    log.sync().unwrap();
    for (k, mut c) in children.into_iter().enumerate() {
        let status = c.wait().unwrap();
        assert!(status.success(), "reader process {k} failed: {status}");
        let seen: Vec<(u32, u32)> = std::fs::read(out(k))
            .unwrap()
            .chunks(8)
            .map(|c| {
                let w = u32::from_le_bytes(c[0..4].try_into().unwrap());
                (w, u32::from_le_bytes(c[4..8].try_into().unwrap()))
            })
            .collect();
        assert!(
            seen == want,
            "reader process {k} saw records that differ from the model"
        );
    }
    assert!(log.stats().segments > 20, "{:?}", log.stats());
    let mine: Vec<_> = log
        .reader(1)
        .map(|r| check_record(&r.unwrap()).unwrap())
        .collect();
    assert!(mine == want);
    log.close().unwrap();
}

#[test]
fn tiny_ring_many_writers() {
    // A ring of 2 slots and many more writers than cores: writers often
    // hold a stale view of the ring while the committer frees slots. Regression:
    // `Ring::try_reserve` computed `next - taken` with a stale `next`
    // ("attempt to subtract with overflow" in ring.rs) under load.
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default().segment_size(SEGMENT).ring_slots(2);
    let log = Log::open(dir.path(), opts).unwrap();
    let indexes = write_all(&log, 32, 2000);
    let want = model(&indexes);
    log.sync().unwrap();
    let got: Vec<_> = log
        .reader(1)
        .map(|r| check_record(&r.unwrap()).unwrap())
        .collect();
    assert!(got == want);
}

#[test]
fn durable_writers_share_fsyncs_and_each_returns_durable() {
    // Durable waiters sleep on one futex that every fsync wakes whole; a
    // waiter the fsync did not cover sleeps again until a later one does.
    // Regression guard for that change (the committer used to unpark each
    // satisfied waiter from a list): every call must still return with its
    // record durable, and concurrent waiters must share fsyncs.
    const WRITERS: u32 = 16;
    const EACH: u32 = 100;
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), Options::default().segment_size(SEGMENT)).unwrap();
    let indexes: Vec<Vec<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..WRITERS)
            .map(|w| {
                let log = &log;
                s.spawn(move || {
                    (0..EACH)
                        .map(|seq| {
                            let name = payload(w, seq);
                            let parent = w.to_le_bytes();
                            let r = Record::new(RecordType(200 + w as u16))
                                .parent(&parent)
                                .name(&name);
                            let d = log.append_durable(&r).unwrap().index();
                            let durable = log.stats().durable_index;
                            assert!(durable >= d, "{d} returned with durable at {durable}");
                            d
                        })
                        .collect()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let want = model(&indexes);
    let st = log.stats();
    assert_eq!(st.last_index, u64::from(WRITERS * EACH));
    assert!(
        st.syncs < st.last_index,
        "{} fsyncs for {} records from {WRITERS} concurrent writers: no group commit",
        st.syncs,
        st.last_index
    );
    let got: Vec<_> = log
        .reader(1)
        .map(|r| check_record(&r.unwrap()).unwrap())
        .collect();
    assert!(got == want);
}
