//! Wall-clock time: exact for the log's own bookkeeping, and cheap for the
//! time stamped on every appended record.
//!
//! Each append stamps its record with `CLOCK_REALTIME`. Through the vDSO
//! that costs about 27 ns on a KVM guest, the largest single piece of an
//! append. Reading the CPU's time-stamp counter through `quanta` costs
//! about 10 ns. So [`record_time_ns`] reads the counter and adds the offset
//! from counter time to the wall clock, measured at most [`MAX_AGE`] ago;
//! the first append after that measures the wall clock again.
//!
//! Between two measurements the counter and the wall clock drift apart by
//! the counter's calibration error plus any NTP slew, well under 100 ppm
//! together, so a record's time stays within about 0.1 µs of what
//! `clock_gettime` would have said. A step of the wall clock shows in record
//! times within [`MAX_AGE`].
//!
//! The counter is used only where the kernel keeps time with it (the
//! clocksource is `tsc`): the kernel then has checked that it is invariant
//! and the same on every CPU. Elsewhere every record time is a
//! `clock_gettime`.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// How long an offset between counter and wall clock is used.
const MAX_AGE: u64 = 1_000_000;

/// The longest the two counter reads around a wall-clock read may lie
/// apart for the offset to be kept: a thread preempted between them would
/// otherwise skew every record time by its stall.
const MAX_READ: u64 = 20_000;

/// `RecordClock::anchored` before the first wall-clock reading: counter
/// time, which starts at 0, stays far from it for centuries.
const NEVER: u64 = u64::MAX / 2;

/// Wall-clock time in ns since the Unix epoch.
///
/// Read with `clock_gettime` directly: `SystemTime` adds checks that cost
/// a tenth of an append. A clock before the epoch reads as 0.
pub(crate) fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    u64::try_from(t.tv_sec).map_or(0, |s| s * 1_000_000_000 + t.tv_nsec as u64)
}

/// The time to stamp on a record appended now, in ns since the Unix epoch.
#[inline]
pub(crate) fn record_time_ns() -> u64 {
    RECORD_CLOCK.now_ns()
}

/// Sets the record clock up now (the counter's calibration) rather than at
/// the first record.
pub(crate) fn start() {
    LazyLock::force(&RECORD_CLOCK);
}

static RECORD_CLOCK: LazyLock<RecordClock> = LazyLock::new(|| {
    let counter = kernel_keeps_time_with_tsc().then(quanta::Clock::new);
    RecordClock::new(counter, Box::new(now_ns))
});

/// Whether the kernel's clocksource is the TSC.
fn kernel_keeps_time_with_tsc() -> bool {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|s| s.trim() == "tsc")
}

/// The wall clock, extrapolated from a recent reading with a counter.
pub(crate) struct RecordClock {
    /// The counter, or `None` to read the wall clock every time.
    counter: Option<quanta::Clock>,
    /// The raw counter value that counter time is measured from.
    origin: u64,
    wall: Box<dyn Fn() -> u64 + Send + Sync>,
    /// Counter time (ns since `origin`) of the last wall-clock reading;
    /// [`NEVER`] before the first.
    anchored: AtomicU64,
    /// That wall-clock reading minus `anchored`, wrapping.
    offset: AtomicU64,
}

impl RecordClock {
    pub(crate) fn new(
        counter: Option<quanta::Clock>,
        wall: Box<dyn Fn() -> u64 + Send + Sync>,
    ) -> RecordClock {
        let origin = counter.as_ref().map_or(0, quanta::Clock::raw);
        RecordClock {
            counter,
            origin,
            wall,
            anchored: AtomicU64::new(NEVER),
            offset: AtomicU64::new(0),
        }
    }

    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        let Some(c) = &self.counter else {
            return (self.wall)();
        };
        let t = c.delta_as_nanos(self.origin, c.raw());
        // Acquire: whoever stored this anchor stored its offset first.
        let at = self.anchored.load(Ordering::Acquire);
        // Also false when another thread anchored after `t` was read.
        if t.wrapping_sub(at) < MAX_AGE {
            return t.wrapping_add(self.offset.load(Ordering::Relaxed));
        }
        self.anchor(c)
    }

    /// Reads the wall clock, keeps its offset from the counter if the
    /// reading was not interrupted, and returns it.
    #[cold]
    fn anchor(&self, c: &quanta::Clock) -> u64 {
        let before = c.delta_as_nanos(self.origin, c.raw());
        let wall = (self.wall)();
        let after = c.delta_as_nanos(self.origin, c.raw());
        let took = after.wrapping_sub(before);
        if took <= MAX_READ {
            let mid = before + took / 2;
            // Concurrent anchors may mix one's offset with another's time:
            // both are fresh, so either pairing is as good.
            self.offset.store(wall.wrapping_sub(mid), Ordering::Relaxed);
            self.anchored.store(mid, Ordering::Release);
        }
        wall
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// A clock whose counter is `quanta`'s mock and whose wall clock is
    /// `wall` plus whatever `on_wall_read` does to the mock first.
    fn mocked(
        wall: Arc<AtomicU64>,
        on_wall_read: impl Fn(&quanta::Mock) + Send + Sync + 'static,
    ) -> (RecordClock, Arc<quanta::Mock>) {
        let (counter, mock) = quanta::Clock::mock();
        let m = mock.clone();
        let clock = RecordClock::new(
            Some(counter),
            Box::new(move || {
                on_wall_read(&m);
                wall.load(Ordering::SeqCst)
            }),
        );
        (clock, mock)
    }

    #[test]
    fn record_times_follow_the_counter_from_the_last_wall_reading() {
        let wall = Arc::new(AtomicU64::new(1_700_000_000_000_000_000));
        let (clock, mock) = mocked(wall.clone(), |_| {});
        assert_eq!(
            clock.now_ns(),
            1_700_000_000_000_000_000,
            "the first read anchors"
        );
        mock.increment(400_000);
        // The wall clock is not read again: a changed value stays unseen.
        wall.store(5, Ordering::SeqCst);
        assert_eq!(clock.now_ns(), 1_700_000_000_000_400_000);
        mock.increment(599_999);
        assert_eq!(clock.now_ns(), 1_700_000_000_000_999_999);
    }

    #[test]
    fn a_stepped_wall_clock_shows_once_the_offset_is_max_age_old() {
        let wall = Arc::new(AtomicU64::new(1_700_000_000_000_000_000));
        let (clock, mock) = mocked(wall.clone(), |_| {});
        clock.now_ns();
        // Stepped back by an hour.
        wall.store(
            1_700_000_000_000_000_000 - 3_600_000_000_000 + MAX_AGE,
            Ordering::SeqCst,
        );
        mock.increment(MAX_AGE);
        assert_eq!(clock.now_ns(), wall.load(Ordering::SeqCst));
        mock.increment(10);
        assert_eq!(clock.now_ns(), wall.load(Ordering::SeqCst) + 10);
    }

    #[test]
    fn an_interrupted_wall_reading_is_returned_but_not_kept() {
        let wall = Arc::new(AtomicU64::new(7_000_000_000));
        // Every wall read takes 50 µs of counter time, as if the thread
        // were preempted right there.
        let (clock, mock) = mocked(wall.clone(), |m| m.increment(50_000));
        assert_eq!(clock.now_ns(), 7_000_000_000);
        // Nothing was kept, so the next read asks the wall clock again.
        wall.store(7_000_000_123, Ordering::SeqCst);
        mock.increment(1);
        assert_eq!(clock.now_ns(), 7_000_000_123);
    }

    #[test]
    fn without_a_counter_every_time_is_the_wall_clock() {
        let wall = Arc::new(AtomicU64::new(42));
        let w = wall.clone();
        let clock = RecordClock::new(None, Box::new(move || w.load(Ordering::SeqCst)));
        assert_eq!(clock.now_ns(), 42);
        wall.store(43, Ordering::SeqCst);
        assert_eq!(clock.now_ns(), 43);
    }

    #[test]
    fn record_times_stay_within_a_millisecond_of_clock_gettime() {
        for _ in 0..1000 {
            let before = now_ns();
            let t = record_time_ns();
            let after = now_ns();
            assert!(
                t + 1_000_000 >= before && t <= after + 1_000_000,
                "{before} <= {t} <= {after}, give or take 1 ms"
            );
        }
    }
}
