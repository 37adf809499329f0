//! The spare segment: the next segment's file, zero-filled in the
//! background (see [`Preallocation`](crate::Preallocation)), and the
//! committer's plan for when to make one and when to use it ([`Spares`]).
//!
//! Once the active segment is a quarter full (so a log opened for a few
//! records writes none), a short-lived thread creates `spare.wlog.tmp`,
//! reserves the segment's size, writes zeros through it and fsyncs it. The
//! committer's next roll renames the spare into place and writes its
//! header; a roll that finds the spare not ready yet creates the segment
//! with `fallocate` alone, as without zero fill, and the spare serves the
//! roll after. The name does not parse as a segment's, so recovery, readers
//! and `verify` never take a spare for one; opening the log removes a spare
//! left by a crash.
//!
//! A clean close keeps a spare it has (waiting for one being made) as
//! `spare.wlog.ready`, renamed only once its zeros are synced, and the next
//! open with the same segment size takes it back for its first segment. So
//! zeros made for a roll the writer did not reach are not thrown away, and
//! a restarted daemon's first segment is usually zero-filled: a spare
//! exists from a quarter of each segment until its roll. A ready spare of
//! another size, or one found where zero fill is off, is removed at open.
//!
//! The segment a log opens with (new, or recovered after a crash) was not
//! zero-filled. Where fsyncs are frequent it is worth leaving early: after
//! [`EARLY_SYNCS`] fsyncs in it within [`EARLY_WITHIN`], the committer
//! starts a spare at once and rolls to it as soon as it is ready, however
//! little of the segment is used. On ext4 a 4 KiB write + fdatasync into
//! fallocated blocks took 127-145 µs, against 79-103 µs into zeros: each
//! fsync must also commit the conversion of the blocks from unwritten to
//! written. Where fsyncs are rare that difference costs nothing anyone
//! waits for, while an early roll writes a segment of zeros and leaves a
//! short segment behind, so a writer that syncs lines as they trickle in
//! keeps its segment (until the usual spare at a quarter of it).
//!
//! The spare counts towards the size limit like a segment (see
//! `retention::run`): segments nobody needs are deleted to make room for
//! it, but where lagging consumers' records fill the limit no spare is
//! made, and a finished one is removed.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::fs::{File, FileSystem, remove_if_present, write_all_at};

/// The spare's file name in the log directory.
pub(crate) const SPARE_FILE: &str = "spare.wlog.tmp";

/// The name of a finished spare that a clean close kept for the next open.
pub(crate) const READY_FILE: &str = "spare.wlog.ready";

/// fsyncs in a segment that was not zero-filled after which the committer
/// makes a spare and rolls to it early, if they came within
/// [`EARLY_WITHIN`]. A durable writer reaches it within milliseconds;
/// `weir log write --sync` of a line or two never does.
pub(crate) const EARLY_SYNCS: u32 = 64;

/// The time within which [`EARLY_SYNCS`] fsyncs make them frequent: 64 a
/// second. An early roll writes a whole segment of zeros; at 40-60 µs
/// saved per fsync, it pays for itself within a few seconds of such a
/// rate, and never at a line every few seconds.
pub(crate) const EARLY_WITHIN: Duration = Duration::from_secs(1);

/// Zeros are written in pieces of this size, and the thread yields the
/// CPU between them. Durable waiters poll by yielding too, and take a
/// yield slower than 1 ms for another task holding the CPU, which shuts
/// their polling for a second (see `log::poll`). A piece of 1 MiB into a
/// fresh file took a median 162 µs here and up to 4 ms; one of 64 KiB
/// takes tens of µs.
const ZERO_CHUNK: usize = 64 << 10;

/// The spare's path in `dir`.
pub(crate) fn spare_path(dir: &Path) -> PathBuf {
    dir.join(SPARE_FILE)
}

/// The path of a spare kept by a clean close, in `dir`.
fn ready_path(dir: &Path) -> PathBuf {
    dir.join(READY_FILE)
}

/// A spare being prepared, or prepared.
#[derive(Debug)]
pub(crate) struct Spare {
    state: State,
}

#[derive(Debug)]
enum State {
    /// Zero-filled by a thread of this process.
    Making(JoinHandle<io::Result<Box<dyn File>>>),
    /// Kept by the last clean close and taken back at open.
    Kept(Box<dyn File>),
}

impl Spare {
    /// Starts preparing a spare of `capacity` bytes in `dir`. `None` if
    /// no thread could be started (the log then goes on without one).
    pub(crate) fn start(fs: Arc<dyn FileSystem>, dir: &Path, capacity: u64) -> Option<Spare> {
        let path = spare_path(dir);
        let job = thread::Builder::new()
            .name("weir-log-spare".into())
            .spawn(move || prepare(&*fs, &path, capacity));
        match job {
            Ok(job) => Some(Spare {
                state: State::Making(job),
            }),
            Err(e) => {
                tracing::warn!(error = %e, "starting the spare segment's thread failed");
                None
            }
        }
    }

    /// Takes back the spare a clean close kept in `dir`, if it has
    /// `capacity` bytes, all allocated; removes it otherwise. It goes back
    /// to the name a roll renames from: should this process die before it
    /// is used, the next open removes it as a spare left by a crash.
    fn adopt(fs: &dyn FileSystem, dir: &Path, capacity: u64) -> Option<Spare> {
        let ready = ready_path(dir);
        let file = match fs.open_rw(&ready) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(path = %ready.display(), error = %e, "opening a kept spare segment failed; removing it");
                remove_ready(fs, dir);
                return None;
            }
        };
        let fits = file.len().is_ok_and(|n| n == capacity)
            && file.allocated().is_ok_and(|n| n >= capacity);
        if !fits {
            drop(file);
            remove_ready(fs, dir);
            return None;
        }
        if let Err(e) = fs.rename(&ready, &spare_path(dir)) {
            tracing::warn!(path = %ready.display(), error = %e, "taking back a kept spare segment failed; removing it");
            drop(file);
            remove_ready(fs, dir);
            return None;
        }
        Some(Spare {
            state: State::Kept(file),
        })
    }

    /// Whether the spare is prepared (or failed).
    pub(crate) fn is_ready(&self) -> bool {
        match &self.state {
            State::Making(job) => job.is_finished(),
            State::Kept(_) => true,
        }
    }

    /// The prepared file, waiting for it if need be.
    pub(crate) fn take(self) -> io::Result<Box<dyn File>> {
        match self.state {
            State::Making(job) => job
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the spare segment's thread panicked"))),
            State::Kept(file) => Ok(file),
        }
    }

    /// Waits for the spare, then keeps it for the next open if `keep` and
    /// it was prepared, or else removes its file.
    fn close(self, fs: &dyn FileSystem, dir: &Path, keep: bool) {
        match self.take() {
            Ok(file) if keep => {
                drop(file);
                // Its zeros and size were synced when it was made; the
                // rename makes it the next open's, once the directory is.
                let kept = fs
                    .rename(&spare_path(dir), &ready_path(dir))
                    .and_then(|()| fs.sync_dir(dir));
                if let Err(e) = kept {
                    tracing::warn!(dir = %dir.display(), error = %e, "keeping the spare segment failed; removing it");
                    remove_stale(fs, dir);
                    remove_ready(fs, dir);
                }
            }
            _ => remove_stale(fs, dir),
        }
    }
}

/// The committer's spare: whether to make one, the one being made, and
/// what it knows of the active segment.
#[derive(Debug)]
pub(crate) struct Spares {
    /// Whether segments are made from zero-filled spares at all.
    zero_fill: bool,
    spare: Option<Spare>,
    /// Whether the active segment was made from a spare.
    active_zeroed: bool,
    /// The active segment's fsyncs counted towards [`EARLY_SYNCS`]: when
    /// the first of them was, and how many there were since.
    burst: Option<(Instant, u32)>,
    /// The active segment saw [`EARLY_SYNCS`] fsyncs within
    /// [`EARLY_WITHIN`].
    frequent: bool,
    /// Early rolls are allowed until a spare fails: a disk that cannot
    /// hold one would otherwise cut a short segment every
    /// [`EARLY_SYNCS`] fsyncs.
    early: bool,
    /// The last retention pass found room for a spare under the size
    /// limit.
    room: bool,
}

impl Spares {
    /// The plan for a log just opened in `dir`, whose active segment (if
    /// any) was not made from a spare: with the spare the last clean close
    /// kept, if there is one of `capacity` bytes and `zero_fill` is on.
    pub(crate) fn open(fs: &dyn FileSystem, dir: &Path, zero_fill: bool, capacity: u64) -> Spares {
        let spare = if zero_fill {
            Spare::adopt(fs, dir, capacity)
        } else {
            remove_ready(fs, dir);
            None
        };
        Spares {
            zero_fill,
            spare,
            active_zeroed: false,
            burst: None,
            frequent: false,
            early: zero_fill,
            room: true,
        }
    }

    /// The room a spare of `capacity` bytes takes under the size limit,
    /// made or not: retention counts it like a segment, so the log's files
    /// stay within the limit with the spare among them.
    pub(crate) fn reserve(&self, capacity: u64) -> u64 {
        if self.zero_fill { capacity } else { 0 }
    }

    /// What the last retention pass found: whether a spare fits under the
    /// size limit. Without room (consumers lag, and their segments fill
    /// the limit) none is started, and a finished one is removed: the
    /// spare makes durable commits cheaper, but never at the price of a
    /// consumer's records.
    pub(crate) fn set_room(&mut self, fs: &dyn FileSystem, dir: &Path, room: bool) {
        self.room = room;
        if !room && let Some(spare) = self.spare.take_if(|s| s.is_ready()) {
            spare.close(fs, dir, false);
        }
    }

    /// The active segment was fsynced at `at`. fsyncs are counted in
    /// windows of [`EARLY_WITHIN`] from the first one counted; a window
    /// that ends short of [`EARLY_SYNCS`] starts again at the next fsync.
    pub(crate) fn synced(&mut self, at: Instant) {
        if self.frequent {
            return;
        }
        let count = match &mut self.burst {
            Some((first, n)) if at.saturating_duration_since(*first) <= EARLY_WITHIN => {
                *n += 1;
                *n
            }
            burst => burst.insert((at, 1)).1,
        };
        self.frequent = count >= EARLY_SYNCS;
    }

    fn wants_early(&self) -> bool {
        self.early && !self.active_zeroed && self.frequent
    }

    /// Starts zero-filling the next segment's file once the active one,
    /// `written` bytes of `capacity`, is a quarter full: late enough that
    /// a log opened for a few records (`weir log write`) writes no spare,
    /// early enough that the spare is ready long before the roll. Or at
    /// once, to leave early a segment that was not zero-filled.
    pub(crate) fn maybe_start(
        &mut self,
        fs: &Arc<dyn FileSystem>,
        dir: &Path,
        capacity: u64,
        written: u64,
    ) {
        if self.zero_fill
            && self.room
            && self.spare.is_none()
            && (written >= capacity / 4 || self.wants_early())
        {
            self.spare = Spare::start(fs.clone(), dir, capacity);
        }
    }

    /// Whether to roll now, before the active segment is full: it was not
    /// zero-filled, it has seen [`EARLY_SYNCS`] fsyncs within
    /// [`EARLY_WITHIN`], and a spare is ready to replace it.
    pub(crate) fn roll_early(&self) -> bool {
        self.wants_early() && self.spare.as_ref().is_some_and(Spare::is_ready)
    }

    /// The spare for the segment about to be opened, if one is ready. A
    /// spare still being zero-filled is left to the next roll: this one
    /// does not wait for it.
    pub(crate) fn take_for_segment(&mut self, dir: &Path) -> Option<Box<dyn File>> {
        let file = match self.spare.take_if(|s| s.is_ready()).map(Spare::take) {
            Some(Ok(file)) => Some(file),
            Some(Err(e)) => {
                tracing::warn!(dir = %dir.display(), error = %e, "preparing a spare segment failed; preallocating without zeros");
                self.early = false;
                None
            }
            None => None,
        };
        self.active_zeroed = file.is_some();
        self.burst = None;
        self.frequent = false;
        file
    }

    /// At close: waits for a spare being made, then keeps it for the next
    /// open if `keep` (the log closes cleanly), or else removes it.
    pub(crate) fn close(&mut self, fs: &dyn FileSystem, dir: &Path, keep: bool) {
        if let Some(spare) = self.spare.take() {
            spare.close(fs, dir, keep);
        }
    }
}

/// The length of the spare's file in `dir`, being made or kept by a clean
/// close (0 if there is none): room the log's files take beyond their
/// segments. From another process, a spare renamed between the two looks
/// may count twice or not at all, as in any snapshot of a live directory.
pub(crate) fn on_disk(fs: &dyn FileSystem, dir: &Path) -> io::Result<u64> {
    let mut total = 0;
    for path in [spare_path(dir), ready_path(dir)] {
        match fs.open_read(&path) {
            Ok(f) => total += f.len()?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(total)
}

/// Removes a spare being made (or left by a crash) from `dir`, if there
/// is one.
pub(crate) fn remove_stale(fs: &dyn FileSystem, dir: &Path) {
    if let Err(e) = remove_if_present(fs, &spare_path(dir)) {
        tracing::warn!(dir = %dir.display(), error = %e, "removing the spare segment failed");
    }
}

/// Removes a kept spare from `dir`, if there is one.
fn remove_ready(fs: &dyn FileSystem, dir: &Path) {
    if let Err(e) = remove_if_present(fs, &ready_path(dir)) {
        tracing::warn!(dir = %dir.display(), error = %e, "removing a kept spare segment failed");
    }
}

/// Creates the spare afresh: reserve, zeros, fsync. On failure the file is
/// removed, and the roll that wanted it falls back to `fallocate`.
fn prepare(fs: &dyn FileSystem, path: &Path, capacity: u64) -> io::Result<Box<dyn File>> {
    remove_if_present(fs, path)?;
    let file = fs.create(path)?;
    let filled = (|| {
        // Reserved first: a full disk fails here, before any zero is written.
        file.allocate(capacity)?;
        let zeros = vec![0u8; ZERO_CHUNK];
        let mut off = 0;
        while off < capacity {
            let n = usize::try_from(capacity - off).map_or(ZERO_CHUNK, |n| n.min(ZERO_CHUNK));
            write_all_at(&*file, &zeros[..n], off)?;
            off += n as u64;
            thread::yield_now();
        }
        file.sync_all()
    })();
    match filled {
        Ok(()) => Ok(file),
        Err(e) => {
            drop(file);
            let _ = fs.remove(path);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of a log that zero-fills, whose active segment was not.
    fn plan() -> Spares {
        Spares {
            zero_fill: true,
            spare: None,
            active_zeroed: false,
            burst: None,
            frequent: false,
            early: true,
            room: true,
        }
    }

    /// Records `n` fsyncs `every` apart from `from`; returns the time of
    /// the last one.
    fn syncs(s: &mut Spares, from: Instant, n: u32, every: Duration) -> Instant {
        let mut at = from;
        for k in 0..n {
            at = from + every * k;
            s.synced(at);
        }
        at
    }

    #[test]
    fn the_zeros_go_in_pieces_short_enough_not_to_hold_the_cpu() {
        // Guards the spare's thread holding the CPU for milliseconds at a
        // time: it wrote 1 MiB pieces (up to 4 ms each into a fresh file),
        // and durable waiters polling on its CPU took that for another
        // task and shut their polling for a second (see `log::poll`). A
        // spare of 1 MiB must take at least 16 writes: the 16th fails here.
        let dir = tempfile::tempdir().unwrap();
        let fs = crate::fault::FaultyFs::new();
        let eio = rustix::io::Errno::IO.raw_os_error();
        fs.fail_writes_named(SPARE_FILE, eio, 15, Some(1));
        let path = dir.path().join(SPARE_FILE);
        assert!(prepare(&fs, &path, 1 << 20).is_err());
        assert!(!path.exists(), "a failed spare is removed");
        fs.heal();
        let f = prepare(&fs, &path, 1 << 20).unwrap();
        assert_eq!(f.len().unwrap(), 1 << 20);
    }

    #[test]
    fn sixty_four_fsyncs_within_a_second_ask_for_an_early_roll() {
        let mut s = plan();
        let t = syncs(
            &mut s,
            Instant::now(),
            EARLY_SYNCS - 1,
            Duration::from_millis(15),
        );
        assert!(!s.wants_early(), "63 fsyncs are not enough");
        s.synced(t + Duration::from_millis(15));
        assert!(s.wants_early(), "64 fsyncs in 945 ms");
    }

    #[test]
    fn fsyncs_that_trickle_in_never_ask_for_an_early_roll() {
        // Regression: a writer syncing lines as they trickled in, a few a
        // second, rolled early after its 64th fsync however long they took,
        // writing a segment of zeros and leaving a short segment behind.
        let mut s = plan();
        syncs(&mut s, Instant::now(), 1000, Duration::from_millis(20));
        assert!(!s.wants_early(), "50 fsyncs a second are not frequent");
    }

    #[test]
    fn a_burst_after_a_slow_spell_asks_for_an_early_roll() {
        let mut s = plan();
        let t = syncs(&mut s, Instant::now(), 100, Duration::from_millis(100));
        assert!(!s.wants_early());
        syncs(
            &mut s,
            t + Duration::from_secs(2),
            EARLY_SYNCS,
            Duration::from_millis(1),
        );
        assert!(s.wants_early());
    }

    #[test]
    fn a_new_segment_counts_its_fsyncs_afresh() {
        let mut s = plan();
        let t = syncs(
            &mut s,
            Instant::now(),
            EARLY_SYNCS,
            Duration::from_millis(1),
        );
        assert!(s.wants_early());
        assert!(s.take_for_segment(Path::new("/nonexistent")).is_none());
        assert!(!s.wants_early(), "the new segment has no fsyncs yet");
        syncs(&mut s, t, EARLY_SYNCS - 1, Duration::from_millis(1));
        assert!(!s.wants_early());
    }

    #[test]
    fn without_room_a_finished_spare_is_removed_and_none_is_started() {
        let fs: Arc<dyn FileSystem> = Arc::new(crate::mem::MemFs::new());
        let dir = Path::new("/log");
        fs.create_dir_all(dir).unwrap();
        let file = fs.create(&spare_path(dir)).unwrap();
        let mut s = plan();
        s.spare = Some(Spare {
            state: State::Kept(file),
        });
        assert_eq!(s.reserve(1 << 20), 1 << 20, "zero fill reserves a segment");
        s.set_room(&*fs, dir, true);
        assert!(s.spare.is_some(), "kept while it fits");
        s.set_room(&*fs, dir, false);
        assert!(s.spare.is_none());
        assert!(fs.list(dir).unwrap().is_empty(), "its file is removed");
        s.maybe_start(&fs, dir, 1 << 20, 1 << 20);
        assert!(s.spare.is_none(), "none is started without room");
        s.zero_fill = false;
        assert_eq!(
            s.reserve(1 << 20),
            0,
            "nothing to reserve without zero fill"
        );
    }

    #[test]
    fn a_zero_filled_segment_or_a_failed_spare_never_rolls_early() {
        for (zeroed, early) in [(true, true), (false, false)] {
            let mut s = plan();
            s.active_zeroed = zeroed;
            s.early = early;
            syncs(
                &mut s,
                Instant::now(),
                2 * EARLY_SYNCS,
                Duration::from_millis(1),
            );
            assert!(
                !s.wants_early(),
                "zeroed {zeroed}, early rolls allowed {early}"
            );
        }
    }
}
