//! The shared window of recently committed records, each decoded and
//! rendered once by the commit notifier ([`super::commits`]) and copied
//! from here by every follow stream ([`super::tail`]), so that a hundred
//! followers cost one decode and one rendering per record, not a hundred.
//!
//! The window holds a gap-free run of indexes `[start, end)` of every type
//! (a follower applies its mask on the stored type). It is bounded by a
//! record count and a byte budget: the oldest lines are dropped first, and
//! nobody waits for a follower, so a slow one never holds back the
//! notifier or the others; one that has fallen behind `start` reads the
//! log itself until it reaches the window again.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use weir_log::{LogRecord, TypeMask};
use weir_view::log_select::PathPrefix;
use weir_view::record::{record_json, record_line};

use super::query::Format;

/// The most records the window keeps.
const MAX_RECORDS: usize = 8192;
/// The most bytes (lines and the records behind them, estimated) the
/// window keeps.
const MAX_BYTES: usize = 8 << 20;

/// Which records a stream shows: those of its types and, when given, of
/// its time window (`since..=until`, ns since the epoch, both ends in) and
/// about its subtree (`path`, judged by weir-view's [`PathPrefix`], the
/// test `weir log tail --path` applies to what it reads itself).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pass {
    /// `None`: every type.
    pub(crate) mask: Option<TypeMask>,
    /// `None`: any time.
    pub(crate) times: Option<(u64, u64)>,
    /// `None`: any record, with a path or not.
    pub(crate) path: Option<PathPrefix>,
}

impl Pass {
    /// Every record.
    #[cfg(test)]
    pub(crate) const ALL: Pass = Pass {
        mask: None,
        times: None,
        path: None,
    };

    /// Whether `rec` is shown.
    pub(crate) fn admits(&self, rec: &LogRecord) -> bool {
        self.mask.as_ref().is_none_or(|m| m.contains(rec.kind))
            && self
                .times
                .is_none_or(|(since, until)| (since..=until).contains(&rec.time_ns))
            && self.path.as_ref().is_none_or(|p| p.matches(rec))
    }
}

/// One committed record, rendered.
pub(crate) struct Line {
    /// Kept for the text form, rendered only if a text follower asks.
    rec: LogRecord,
    /// `record_json` and a newline.
    json: Box<[u8]>,
    /// `record_line` and a newline, once asked for.
    text: OnceLock<Box<[u8]>>,
}

impl Line {
    /// Renders `rec`'s JSON line.
    pub(crate) fn new(rec: LogRecord) -> Line {
        let mut json = record_json(&rec);
        json.push('\n');
        Line {
            rec,
            json: json.into_bytes().into_boxed_slice(),
            text: OnceLock::new(),
        }
    }

    /// The record's index.
    pub(crate) fn index(&self) -> u64 {
        self.rec.index
    }

    /// The line in `format`, with its newline.
    fn bytes(&self, format: Format) -> &[u8] {
        match format {
            Format::Json => &self.json,
            Format::Text => self.text.get_or_init(|| {
                let mut s = record_line(&self.rec);
                s.push('\n');
                s.into_bytes().into_boxed_slice()
            }),
        }
    }

    /// What the line costs the window's budget: the JSON counted twice
    /// (the text form, if rendered, is about as long), the record's parts
    /// and the fixed sizes.
    fn cost(&self) -> usize {
        let r = &self.rec;
        let fields: usize = r
            .fields
            .iter()
            .map(|(k, v)| k.len() + v.len() + size_of::<(String, Vec<u8>)>())
            .sum();
        size_of::<Line>()
            + 2 * self.json.len()
            + r.target.len()
            + r.parent.len()
            + r.name.len()
            + fields
    }
}

/// What [`Window::take`] found at a follower's position.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Take {
    /// The position is before the window's first record.
    Behind,
    /// The position is past the window's end (the notifier is behind the
    /// log).
    Ahead,
    /// Nothing past the position yet. `halted`: the window will not grow
    /// (the notifier is not running or cannot read the log).
    AtEnd {
        /// Read the log directly instead of waiting on the window.
        halted: bool,
    },
    /// Lines were looked at: `next` is the index after the last one, and
    /// `taken` of them passed the mask and were copied.
    Took {
        /// The follower's new position.
        next: u64,
        /// Lines copied into the buffer.
        taken: u64,
    },
}

/// The lines, oldest first; `lines[i]` has index `start + i`.
struct Ring {
    start: u64,
    lines: VecDeque<Line>,
    bytes: usize,
}

impl Ring {
    fn end(&self) -> u64 {
        self.start + self.lines.len() as u64
    }
}

/// The shared window (see the module's header).
pub(crate) struct Window {
    ring: RwLock<Ring>,
    /// The ring's bounds, mirrored for a look without the lock. Only a
    /// hint: [`Window::take`] decides under the lock.
    start: AtomicU64,
    end: AtomicU64,
    /// Set while nothing feeds the window.
    halted: AtomicBool,
    max_records: usize,
    max_bytes: usize,
}

impl Window {
    /// An empty window whose first record will be `start`, with the
    /// default bounds.
    pub(crate) fn new(start: u64) -> Window {
        Window::with_bounds(start, MAX_RECORDS, MAX_BYTES)
    }

    /// An empty window keeping at most `max_records` records and
    /// `max_bytes` bytes (at least one record).
    pub(crate) fn with_bounds(start: u64, max_records: usize, max_bytes: usize) -> Window {
        Window {
            ring: RwLock::new(Ring {
                start,
                lines: VecDeque::new(),
                bytes: 0,
            }),
            start: AtomicU64::new(start),
            end: AtomicU64::new(start),
            halted: AtomicBool::new(false),
            max_records: max_records.max(1),
            max_bytes,
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Ring> {
        self.ring.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Ring> {
        self.ring.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends the next records, dropping the oldest beyond the bounds.
    /// Returns the last index the window holds. A line that does not
    /// follow the window's end (the notifier restarted its reader
    /// elsewhere) empties the window first, so that it stays gap-free:
    /// followers before the new start read the log themselves.
    pub(crate) fn push(&self, batch: Vec<Line>) -> u64 {
        let mut ring = self.write();
        for line in batch {
            if line.index() != ring.end() {
                ring.lines.clear();
                ring.bytes = 0;
                ring.start = line.index();
            }
            ring.bytes += line.cost();
            ring.lines.push_back(line);
        }
        while ring.lines.len() > self.max_records
            || (ring.bytes > self.max_bytes && ring.lines.len() > 1)
        {
            if let Some(old) = ring.lines.pop_front() {
                ring.bytes -= old.cost();
                ring.start += 1;
            }
        }
        self.start.store(ring.start, Ordering::Release);
        self.end.store(ring.end(), Ordering::Release);
        ring.end() - 1
    }

    /// Empties the window; its next record will be `start`.
    pub(crate) fn restart(&self, start: u64) {
        let mut ring = self.write();
        ring.lines.clear();
        ring.bytes = 0;
        ring.start = start;
        self.start.store(start, Ordering::Release);
        self.end.store(start, Ordering::Release);
    }

    /// Marks whether anything feeds the window.
    pub(crate) fn set_halted(&self, halted: bool) {
        self.halted.store(halted, Ordering::Release);
    }

    /// Whether the window (probably) holds `index`: a follower reading
    /// the log itself switches to the window when this says so.
    pub(crate) fn holds(&self, index: u64) -> bool {
        self.start.load(Ordering::Acquire) <= index && index < self.end.load(Ordering::Acquire)
    }

    /// Copies the lines from index `from` on that `pass` admits into
    /// `out`, in `format`, until `out` holds `max_bytes`, `max_lines` were
    /// copied, or the window ends.
    pub(crate) fn take(
        &self,
        from: u64,
        pass: &Pass,
        format: Format,
        out: &mut Vec<u8>,
        max_bytes: usize,
        max_lines: Option<u64>,
    ) -> Take {
        let ring = self.read();
        if from < ring.start {
            return Take::Behind;
        }
        let end = ring.end();
        if from > end {
            return Take::Ahead;
        }
        if from == end {
            return Take::AtEnd {
                halted: self.halted.load(Ordering::Acquire),
            };
        }
        let skip = usize::try_from(from - ring.start).unwrap_or(usize::MAX);
        let mut taken = 0;
        let mut next = from;
        for line in ring.lines.range(skip..) {
            if out.len() >= max_bytes || max_lines.is_some_and(|m| taken >= m) {
                break;
            }
            next = line.index() + 1;
            if pass.admits(&line.rec) {
                out.extend_from_slice(line.bytes(format));
                taken += 1;
            }
        }
        Take::Took { next, taken }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_log::RecordType;

    fn rec(index: u64, kind: RecordType) -> LogRecord {
        LogRecord {
            index,
            time_ns: index * 1000,
            kind,
            flags: 0,
            target: vec![1, 2],
            parent: Vec::new(),
            name: format!("r{index}").into_bytes(),
            fields: vec![("k".to_owned(), b"v".to_vec())],
        }
    }

    fn lines(range: std::ops::RangeInclusive<u64>) -> Vec<Line> {
        range
            .map(|i| {
                let kind = if i % 2 == 0 {
                    RecordType::MARK
                } else {
                    RecordType::CREAT
                };
                Line::new(rec(i, kind))
            })
            .collect()
    }

    fn indexes(out: &[u8]) -> Vec<u64> {
        out.split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                serde_json::from_slice::<serde_json::Value>(l).unwrap()["index"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn lines_are_the_renderings_of_the_record() {
        let r = rec(7, RecordType::MKDIR);
        let l = Line::new(r.clone());
        assert_eq!(
            l.bytes(Format::Json),
            format!("{}\n", record_json(&r)).as_bytes()
        );
        assert_eq!(
            l.bytes(Format::Text),
            format!("{}\n", record_line(&r)).as_bytes()
        );
    }

    #[test]
    fn takes_from_a_position_through_a_mask_within_bounds() {
        let w = Window::new(5);
        assert_eq!(w.push(lines(5..=14)), 14);
        let mut out = Vec::new();
        assert_eq!(
            w.take(4, &Pass::ALL, Format::Json, &mut out, 1 << 20, None),
            Take::Behind
        );
        assert_eq!(
            w.take(16, &Pass::ALL, Format::Json, &mut out, 1 << 20, None),
            Take::Ahead
        );
        assert_eq!(
            w.take(15, &Pass::ALL, Format::Json, &mut out, 1 << 20, None),
            Take::AtEnd { halted: false }
        );
        assert!(out.is_empty());
        assert_eq!(
            w.take(8, &Pass::ALL, Format::Json, &mut out, 1 << 20, None),
            Take::Took { next: 15, taken: 7 }
        );
        assert_eq!(indexes(&out), (8..=14).collect::<Vec<_>>());
        // CREATs only (odd indexes); a limit of two lines.
        out.clear();
        let creat = Pass {
            mask: Some(TypeMask::parse("CREAT").unwrap()),
            ..Pass::ALL
        };
        assert_eq!(
            w.take(6, &creat, Format::Json, &mut out, 1 << 20, Some(2)),
            Take::Took { next: 10, taken: 2 }
        );
        assert_eq!(indexes(&out), vec![7, 9]);
        // A byte bound stops after the line that reaches it.
        out.clear();
        assert_eq!(
            w.take(5, &Pass::ALL, Format::Json, &mut out, 1, None),
            Take::Took { next: 6, taken: 1 }
        );
        w.set_halted(true);
        assert_eq!(
            w.take(15, &Pass::ALL, Format::Json, &mut out, 1 << 20, None),
            Take::AtEnd { halted: true }
        );
    }

    #[test]
    fn drops_the_oldest_beyond_its_bounds_and_stays_gap_free() {
        let w = Window::with_bounds(1, 4, usize::MAX);
        w.push(lines(1..=10));
        assert!(!w.holds(6) && w.holds(7) && w.holds(10) && !w.holds(11));
        let mut out = Vec::new();
        assert_eq!(
            w.take(6, &Pass::ALL, Format::Json, &mut out, 1 << 20, None),
            Take::Behind
        );
        // A byte bound: room for about two lines.
        let one = lines(1..=1).pop().unwrap().cost();
        let w = Window::with_bounds(1, 100, 2 * one + one / 2);
        w.push(lines(1..=10));
        assert!(!w.holds(8) && w.holds(9) && w.holds(10));
        // A line that does not follow empties the window.
        w.push(lines(20..=21));
        assert!(!w.holds(10) && w.holds(20) && w.holds(21));
        assert_eq!(
            w.take(11, &Pass::ALL, Format::Json, &mut out, 1 << 20, None),
            Take::Behind
        );
        w.restart(30);
        assert!(!w.holds(21) && !w.holds(30));
        assert_eq!(
            w.take(30, &Pass::ALL, Format::Json, &mut out, 1 << 20, None),
            Take::AtEnd { halted: false }
        );
    }
}
