//! Tests of the append path that reach into the ring: holes held by a
//! writer that reserved and did not publish, and what the committer does
//! about them.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::commit::HOLE_PATIENCE;
use crate::mem::MemFs;
use crate::{Options, Record, RecordType};

/// A log in memory with a ring of `slots` slots, committing every 1 ms.
fn small_ring_log(dir: &std::path::Path, slots: usize) -> Log {
    let opts = Options::default()
        .ring_slots(slots)
        .flush_interval(Duration::from_millis(1))
        .fs(Arc::new(MemFs::new()));
    Log::open(dir, opts).unwrap()
}

/// An index a test reserves and holds back, as a writer preempted between
/// its reservation and its publish would.
///
/// A close waits for every reserved index, so a test that failed before
/// publishing would hang in `Log`'s drop instead of failing: the hole is
/// published when dropped if the test has not done so.
struct Hole<'a> {
    log: &'a Log,
    index: u64,
    held: Option<Reservation>,
}

impl<'a> Hole<'a> {
    fn reserve(log: &'a Log) -> Self {
        let held = log.inner.ring.try_reserve(64).unwrap();
        Hole {
            log,
            index: held.index,
            held: Some(held),
        }
    }

    /// Publishes a record named `hole` at the held index.
    fn publish(&mut self) {
        if let Some(res) = self.held.take() {
            let record = Record::new(RecordType::UNLNK).name(b"hole");
            let len = codec::encoded_len(&record).unwrap();
            Draft::new(&record, len).publish(&self.log.inner.ring, &record, res);
        }
    }
}

impl Drop for Hole<'_> {
    fn drop(&mut self) {
        self.publish();
    }
}

/// Lifting copies every frame past a hole into the reorder area, so it
/// waits until writers need the room. Regression: with 16 writers on 2
/// CPUs the committer lifted past every preempted writer, moving 15% of
/// all records through that area while the ring was mostly empty.
#[test]
fn a_hole_is_lifted_past_only_once_the_ring_is_crowded() {
    let dir = tempfile::tempdir().unwrap();
    let log = small_ring_log(dir.path(), 16);
    let mut hole = Hole::reserve(&log);
    let append = |k: usize| {
        let _ = log
            .append(&Record::new(RecordType::CREAT).name(format!("r{k}").as_bytes()))
            .unwrap();
    };
    // Hole plus 6 appended: under half of 16 slots. The committer meets
    // the hole many times, well past HOLE_PATIENCE, and leaves it be.
    (0..6).for_each(append);
    let until = Instant::now() + HOLE_PATIENCE * 30;
    while Instant::now() < until {
        log.inner.signals.kick();
        std::thread::sleep(Duration::from_millis(1));
    }
    let lifted_early = log.stats().lifted;
    // Two more make it half taken: now the frames past the hole move.
    (6..8).for_each(append);
    let deadline = Instant::now() + Duration::from_secs(20);
    while log.stats().lifted < 8 && Instant::now() < deadline {
        log.inner.signals.kick();
        std::thread::sleep(Duration::from_millis(1));
    }
    let lifted = log.stats().lifted;
    // Fill the hole before asserting: a close waits for it.
    hole.publish();
    assert_eq!(lifted_early, 0, "lifted with the ring mostly free");
    assert_eq!(lifted, 8, "never lifted once crowded");
    assert_eq!(log.sync().unwrap().unwrap().index(), hole.index + 8);
    drop(hole);
    log.close().unwrap();
}

/// Regression for the stall this guards: a writer preempted between its
/// reservation and its publish held a hole the committer could not pass,
/// and once the ring came round to it every other writer waited (up to
/// tens of milliseconds under load, or the append timeout). Now the
/// committer lifts the frames past the hole and the writers of the
/// hole's slot spill, so the others keep appending, and every record
/// still lands once, in index order.
#[test]
fn a_held_reservation_does_not_stop_other_writers() {
    let dir = tempfile::tempdir().unwrap();
    let log = small_ring_log(dir.path(), 4);
    let first = log
        .append_durable(&Record::new(RecordType::MARK).name(b"first"))
        .unwrap();
    // A writer reserves the next index and stalls before publishing.
    let mut hole = Hole::reserve(&log);
    assert_eq!(hole.index, first.index() + 1);
    let names: Vec<Vec<u8>> = (0..8).map(|k| format!("after-{k}").into_bytes()).collect();
    let append = |name: &[u8]| {
        let _ = log
            .append(&Record::new(RecordType::CREAT).name(name))
            .unwrap();
    };
    // Three fill the other slots; the committer lifts them out.
    names[..3].iter().for_each(|n| append(n));
    let deadline = Instant::now() + Duration::from_secs(20);
    while log.stats().lifted < 3 {
        assert!(Instant::now() < deadline, "never lifted: {:?}", log.stats());
        std::thread::sleep(Duration::from_millis(1));
    }
    // A lap on, the hole's slot is still held: the next record spills,
    // the three after it reuse the lifted slots, the fifth spills.
    names[3..].iter().for_each(|n| append(n));
    let st = log.stats();
    let readers_saw = log.last_index();
    // Fill the hole before asserting: a close waits for it.
    hole.publish();
    assert_eq!((st.spilled, st.ring_full_waits), (2, 0), "{st:?}");
    assert_eq!(readers_saw, first.index(), "the hole must stop readers");
    let last = log.sync().unwrap().unwrap().index();
    assert_eq!(last, hole.index + names.len() as u64);
    let got: Vec<(u64, Vec<u8>)> = log
        .reader(1)
        .map(|r| r.map(|r| (r.index, r.name)).unwrap())
        .collect();
    let mut want = vec![
        (first.index(), b"first".to_vec()),
        (hole.index, b"hole".to_vec()),
    ];
    want.extend((hole.index + 1..).zip(names.iter().cloned()));
    assert_eq!(got, want);
    drop(hole);
    log.close().unwrap();
}

/// A writer that had to wait for room stamps its record with the time it
/// got the room. The append path reads the clock before it reserves, so
/// that the read overlaps the reservation; without the second read after a
/// wait, this record's time would be the moment its wait began, here at
/// least 50 ms too early.
#[test]
fn a_writer_that_waited_for_room_stamps_the_time_it_got_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = small_ring_log(dir.path(), 4);
    let mut hole = Hole::reserve(&log);
    let filler = Record::new(RecordType::CREAT).name(b"filler");
    let len = codec::encoded_len(&filler).unwrap();
    // Append until the ring stays without room: the hole's slot is held
    // and the spill map is full.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut full_since: Option<Instant> = None;
    while full_since.is_none_or(|t| t.elapsed() < Duration::from_millis(50)) {
        assert!(Instant::now() < deadline, "the ring never filled");
        if log.inner.ring.has_room(len) {
            let _ = log.append(&filler).unwrap();
            full_since = None;
        } else {
            full_since.get_or_insert_with(Instant::now);
            log.inner.signals.kick();
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let (index, filled_at) = std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            log.append(&Record::new(RecordType::UNLNK).name(b"waited"))
                .unwrap()
        });
        while log.stats().ring_full_waits == 0 {
            assert!(Instant::now() < deadline, "the writer never waited");
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(50));
        let early = waiter.is_finished();
        let filled_at = now_ns();
        hole.publish();
        assert!(!early, "the writer found room before the hole was filled");
        (waiter.join().unwrap().index(), filled_at)
    });
    log.sync().unwrap();
    let rec = log.reader(index).next().unwrap().unwrap();
    assert_eq!((rec.index, rec.name.as_slice()), (index, &b"waited"[..]));
    // The record clock is within about 0.1 µs of the wall clock.
    assert!(
        rec.time_ns + 1_000_000 >= filled_at,
        "stamped {} ms before it got room",
        (filled_at - rec.time_ns) / 1_000_000
    );
    drop(hole);
    log.close().unwrap();
}

/// A commit failure is reported as the one recorded, and without one, as
/// unrecorded: it used to be reported as a full disk.
#[test]
fn a_commit_failure_is_reported_as_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let log = small_ring_log(dir.path(), 16);
    assert!(
        matches!(log.inner.failure_error(), Error::NotDurable { durable: 0 }),
        "{:?}",
        log.inner.failure_error()
    );
    let errno = |e: rustix::io::Errno| std::io::Error::from_raw_os_error(e.raw_os_error());
    log.inner
        .health
        .write_failed(&errno(rustix::io::Errno::NOSPC));
    assert!(matches!(log.inner.failure_error(), Error::NoSpace));
    log.inner.health.write_failed(&errno(rustix::io::Errno::IO));
    match log.inner.failure_error() {
        Error::Io { op, source, .. } => {
            assert_eq!((op, source.raw_os_error()), ("commit", Some(5)));
        }
        other => panic!("expected Io, got {other:?}"),
    }
    log.close().unwrap();
}
