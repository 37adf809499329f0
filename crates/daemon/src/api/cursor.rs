//! A record stream's position and where it reads from: the shared
//! [`Window`] of lines rendered once by the commit notifier while its
//! position is inside it, else its own `weir_log::Reader` (decoding and
//! rendering itself) — before the window's start (it started early, or
//! fell behind while its client was slow), or past its end (the notifier
//! has not read that far yet).
//!
//! The position is the next index not yet looked at, whichever source
//! looked; each hand-over starts the other source exactly there, so the
//! stream sees every record that passes its mask once, in order.

use weir_log::{Log, Reader, TypeMask};
use weir_view::log_select::PathPrefix;
use weir_view::record::{record_json, record_line};

use super::query::Format;
use super::window::{Pass, Take, Window};

/// A chunk is sent once it holds this many bytes (or the stream has
/// caught up): large enough to amortize writes, small enough to stream.
pub(crate) const CHUNK: usize = 64 * 1024;

/// Bytes of records one fill may look at in the log, shown or not: a mask
/// that takes few records would otherwise read the whole log in one fill,
/// on a server thread.
pub(crate) const SCAN_BUDGET: u64 = 1 << 20;

/// Where a stream is and how it shows records.
pub(crate) struct Cursor {
    /// The next index to look at.
    pos: u64,
    /// `Some` while reading the log itself, `None` while in the window.
    reader: Option<Reader>,
    /// The types and times shown.
    pass: Pass,
    format: Format,
    /// Records still to send; `None`: no limit.
    remaining: Option<u64>,
    /// Started at the oldest record without an explicit `from`: if that
    /// segment is collected before the first read, start at the new oldest.
    chase_oldest: bool,
    /// The chunk size ([`CHUNK`]; smaller in tests).
    chunk: usize,
    /// Bytes of records a fill may look at ([`SCAN_BUDGET`]).
    scan_budget: u64,
    /// The last fill stopped at its scan budget, short of the end.
    behind: bool,
}

impl Cursor {
    /// A cursor at `from` (0 means 1) showing the records that pass `mask`
    /// in `format`, at most `limit` of them.
    pub(crate) fn new(
        from: u64,
        mask: Option<TypeMask>,
        format: Format,
        limit: Option<u64>,
        chase_oldest: bool,
    ) -> Cursor {
        Cursor {
            pos: from.max(1),
            reader: None,
            pass: Pass {
                mask: mask.filter(|m| !m.is_all()),
                times: None,
                path: None,
            },
            format,
            remaining: limit,
            chase_oldest,
            chunk: CHUNK,
            scan_budget: SCAN_BUDGET,
            behind: false,
        }
    }

    /// Shows only the records whose time is in `since..=until` (ns since
    /// the epoch).
    pub(crate) fn with_times(mut self, since: u64, until: u64) -> Cursor {
        self.pass.times = Some((since, until));
        self
    }

    /// Shows only the records about the subtree `p` (`path` or `spath`
    /// under it): the reader decodes every record of the mask and times,
    /// and those of other trees are dropped here, within the scan budget.
    pub(crate) fn with_path(mut self, p: PathPrefix) -> Cursor {
        self.pass.path = Some(p);
        self
    }

    /// Whether the last fill stopped at its scan budget with committed
    /// records still to look at: fill again at once rather than wait.
    pub(crate) fn behind(&self) -> bool {
        self.behind
    }

    /// The next index the stream looks at.
    pub(crate) fn position(&self) -> u64 {
        self.pos
    }

    /// Whether the limit has been reached.
    pub(crate) fn done(&self) -> bool {
        self.remaining == Some(0)
    }

    /// Appends lines to `buf` until it holds a chunk, the limit is
    /// reached, or the stream has caught up: with the window when
    /// `follow` (the notifier will wake it), else with the log's committed
    /// end, so that a one-off read sees everything committed before it.
    pub(crate) fn fill(
        &mut self,
        log: &Log,
        window: &Window,
        follow: bool,
        buf: &mut Vec<u8>,
    ) -> Result<(), weir_log::Error> {
        self.behind = false;
        if let Some(r) = &mut self.reader {
            r.limit_scan(self.scan_budget);
        }
        while buf.len() < self.chunk && !self.done() {
            let Some(reader) = &mut self.reader else {
                match window.take(
                    self.pos,
                    &self.pass,
                    self.format,
                    buf,
                    self.chunk,
                    self.remaining,
                ) {
                    Take::Took { next, taken } => {
                        self.pos = next;
                        self.chase_oldest = false;
                        if let Some(n) = &mut self.remaining {
                            *n -= taken;
                        }
                    }
                    Take::AtEnd { halted: false } if follow => return Ok(()),
                    // Behind, ahead, or past what the notifier will bring.
                    _ => self.reader = Some(self.open(log, self.pos)),
                }
                continue;
            };
            if window.holds(self.pos) {
                self.reader = None;
                continue;
            }
            let rec = match reader.next_record() {
                Ok(Some(r)) => r,
                Ok(None) => {
                    self.pos = Reader::position(reader);
                    self.behind = self.pos <= log.last_index();
                    return Ok(());
                }
                Err(weir_log::Error::Truncated { oldest, .. }) if self.chase_oldest => {
                    self.chase_oldest = false;
                    self.pos = oldest;
                    self.reader = Some(self.open(log, oldest));
                    continue;
                }
                Err(e) => return Err(e),
            };
            self.pos = Reader::position(reader);
            self.chase_oldest = false;
            // The reader skipped other types and times from their frame
            // headers; a subtree needs the decoded fields.
            if self.pass.path.as_ref().is_some_and(|p| !p.matches(&rec)) {
                continue;
            }
            let line = match self.format {
                Format::Json => record_json(&rec),
                Format::Text => record_line(&rec),
            };
            buf.extend_from_slice(line.as_bytes());
            buf.push(b'\n');
            if let Some(n) = &mut self.remaining {
                *n -= 1;
            }
        }
        Ok(())
    }

    fn open(&self, log: &Log, from: u64) -> Reader {
        let mut r = log.reader(from);
        r.limit_scan(self.scan_budget);
        if let Some(m) = &self.pass.mask {
            r = r.with_mask(m.clone());
        }
        if let Some((since, until)) = self.pass.times {
            r = r.with_time_window(since, until);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::window::Line;
    use proptest::prelude::*;
    use weir_log::{Options, Record, RecordType};

    const KINDS: [RecordType; 3] = [RecordType::MARK, RecordType::CREAT, RecordType::MKDIR];

    /// Appends records `log.last_index()+1 ..= upto` (types cycling) and
    /// waits until they are committed.
    fn grow(log: &Log, upto: u64) {
        for i in log.last_index() + 1..=upto {
            let name = format!("r{i}");
            let kind = KINDS[usize::try_from(i % 3).unwrap()];
            let _ = log
                .append(&Record::new(kind).name(name.as_bytes()))
                .unwrap();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while log.last_index() < upto {
            assert!(std::time::Instant::now() < deadline, "not committed");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Feeds the window from its end up to `upto`, as the notifier does.
    fn feed(window: &Window, log: &Log, from: u64, upto: u64) {
        let lines: Vec<Line> = log
            .reader(from)
            .take_while(|r| r.as_ref().map_or(true, |r| r.index <= upto))
            .map(|r| Line::new(r.unwrap()))
            .collect();
        if !lines.is_empty() {
            window.push(lines);
        }
    }

    /// What a stream must show: rendered directly from the log.
    fn expected(log: &Log, from: u64, mask: Option<&TypeMask>, format: Format) -> String {
        let mut r = log.reader(from);
        if let Some(m) = mask {
            r = r.with_mask(m.clone());
        }
        r.map(|r| {
            let r = r.unwrap();
            match format {
                Format::Json => format!("{}\n", record_json(&r)),
                Format::Text => format!("{}\n", record_line(&r)),
            }
        })
        .collect()
    }

    /// Fills until the cursor has caught up.
    fn drain(c: &mut Cursor, log: &Log, w: &Window, follow: bool, out: &mut Vec<u8>) {
        loop {
            let mut buf = Vec::new();
            c.fill(log, w, follow, &mut buf).unwrap();
            if buf.is_empty() {
                return;
            }
            out.extend_from_slice(&buf);
        }
    }

    fn open() -> (tempfile::TempDir, Log) {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(dir.path(), Options::default()).unwrap();
        (dir, log)
    }

    #[test]
    fn a_time_window_holds_on_the_log_and_in_the_window() {
        let (_d, log) = open();
        grow(&log, 40);
        let times: Vec<u64> = log.reader(1).map(|r| r.unwrap().time_ns).collect();
        let (since, until) = (times[9], times[29]);
        // The window holds 21..=40: the stream reads 1..=20 from the log
        // and the rest from the window, and both keep to the times.
        let w = Window::new(21);
        feed(&w, &log, 21, 40);
        let mask = TypeMask::parse("CREAT,MKDIR").unwrap();
        let mut c =
            Cursor::new(1, Some(mask.clone()), Format::Text, None, false).with_times(since, until);
        let mut out = Vec::new();
        drain(&mut c, &log, &w, true, &mut out);
        assert_eq!(c.position(), 41);
        let want: String = log
            .reader(1)
            .with_mask(mask)
            .with_time_window(since, until)
            .map(|r| format!("{}\n", record_line(&r.unwrap())))
            .collect();
        let shown = String::from_utf8(out).unwrap();
        assert_eq!(shown, want);
        // Records 10..=30 at most, two types of three: some, not all.
        let n = shown.lines().count();
        assert!((1..=21).contains(&n), "{n}:\n{shown}");
    }

    #[test]
    fn a_subtree_holds_on_the_log_and_in_the_window() {
        let (_d, log) = open();
        // Records under `a`, under `ab` (not `a`'s), renames out of `a`,
        // and MARKs without a path.
        for i in 1..=40u64 {
            let name = format!("r{i}");
            let (kind, key, path) = match i % 4 {
                0 => (RecordType::CREAT, "path", format!("a/f{i}")),
                1 => (RecordType::CREAT, "path", format!("ab/f{i}")),
                2 => (RecordType::RENME, "spath", format!("a/g{i}")),
                _ => (RecordType::MARK, "root", "/srv".to_owned()),
            };
            let fields = [weir_log::Field {
                key,
                value: path.as_bytes(),
            }];
            let _ = log
                .append(&Record::new(kind).name(name.as_bytes()).fields(&fields))
                .unwrap();
        }
        grow(&log, 40);
        let w = Window::new(21);
        feed(&w, &log, 21, 40);
        let prefix = PathPrefix::new(b"/a/");
        let mut c = Cursor::new(1, None, Format::Json, None, false).with_path(prefix.clone());
        let mut out = Vec::new();
        drain(&mut c, &log, &w, true, &mut out);
        assert_eq!(c.position(), 41);
        let want: String = log
            .reader(1)
            .map(Result::unwrap)
            .filter(|r| prefix.matches(r))
            .map(|r| format!("{}\n", record_json(&r)))
            .collect();
        let shown = String::from_utf8(out).unwrap();
        assert_eq!(shown, want);
        assert_eq!(shown.lines().count(), 20, "{shown}");
    }

    #[test]
    fn catches_up_behind_the_window_then_switches_to_it() {
        let (_d, log) = open();
        grow(&log, 40);
        let w = Window::new(21);
        feed(&w, &log, 21, 40);
        let mask = TypeMask::parse("CREAT,MKDIR").unwrap();
        let mut c = Cursor::new(1, Some(mask.clone()), Format::Json, None, false);
        let mut out = Vec::new();
        drain(&mut c, &log, &w, true, &mut out);
        assert!(c.reader.is_none(), "it reads from the window now");
        assert_eq!(c.position(), 41);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            expected(&log, 1, Some(&mask), Format::Json)
        );
    }

    #[test]
    fn reads_ahead_of_the_window_then_switches_to_it() {
        let (_d, log) = open();
        grow(&log, 30);
        // The notifier has only reached 10.
        let w = Window::new(1);
        feed(&w, &log, 1, 10);
        let mut c = Cursor::new(15, None, Format::Text, None, false);
        let mut out = Vec::new();
        drain(&mut c, &log, &w, true, &mut out);
        assert!(c.reader.is_some() && c.position() == 31);
        grow(&log, 50);
        feed(&w, &log, 11, 50);
        drain(&mut c, &log, &w, true, &mut out);
        assert!(c.reader.is_none());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            expected(&log, 15, None, Format::Text)
        );
    }

    #[test]
    fn a_one_off_read_goes_past_a_lagging_window() {
        let (_d, log) = open();
        grow(&log, 30);
        let w = Window::new(1);
        feed(&w, &log, 1, 10);
        let mut c = Cursor::new(1, None, Format::Json, None, false);
        let mut out = Vec::new();
        drain(&mut c, &log, &w, false, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            expected(&log, 1, None, Format::Json)
        );
        // Following, the same cursor waits for the window at its end.
        let mut c = Cursor::new(1, None, Format::Json, None, false);
        c.chunk = 1;
        let mut out = Vec::new();
        drain(&mut c, &log, &w, true, &mut out);
        assert_eq!(c.position(), 11);
        // Unless nothing feeds the window any more: then it reads the log.
        w.set_halted(true);
        drain(&mut c, &log, &w, true, &mut out);
        assert_eq!(c.position(), 31);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            expected(&log, 1, None, Format::Json)
        );
    }

    #[test]
    fn falls_behind_a_moving_window_and_comes_back() {
        let (_d, log) = open();
        grow(&log, 20);
        let w = Window::with_bounds(1, 8, usize::MAX);
        feed(&w, &log, 1, 20);
        let mut c = Cursor::new(13, None, Format::Json, Some(30), false);
        c.chunk = 1;
        let mut out = Vec::new();
        c.fill(&log, &w, true, &mut out).unwrap();
        assert!(c.reader.is_none() && c.position() == 14);
        // The window moves on while the stream is not read.
        grow(&log, 60);
        feed(&w, &log, 21, 60);
        assert!(!w.holds(14));
        drain(&mut c, &log, &w, true, &mut out);
        assert!(c.done());
        assert_eq!(c.position(), 43);
        let want: String = expected(&log, 13, None, Format::Json)
            .lines()
            .take(30)
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn a_mask_that_takes_nothing_reads_a_budget_per_fill() {
        // Regression: a fill with a mask that took no record read the log
        // to its end in one call, on a server thread, whatever its size:
        // two such reads of a large log stalled the whole API.
        let (_d, log) = open();
        grow(&log, 3000);
        let w = Window::new(log.last_index() + 1);
        let mask = TypeMask::parse("RMDIR").unwrap();
        for follow in [false, true] {
            let mut c = Cursor::new(1, Some(mask.clone()), Format::Json, None, false);
            c.scan_budget = 4096;
            let mut fills = 0;
            loop {
                let mut buf = Vec::new();
                let at = c.position();
                c.fill(&log, &w, follow, &mut buf).unwrap();
                assert!(buf.is_empty());
                fills += 1;
                if !c.behind() {
                    break;
                }
                assert!(
                    c.position() - at <= 200,
                    "one fill looked from {at} to {}",
                    c.position()
                );
            }
            assert_eq!(c.position(), 3001, "then it reached the end");
            assert!(fills > 20, "{fills} fills");
        }
    }

    /// One step of a random schedule.
    #[derive(Clone, Debug)]
    enum Step {
        /// Append this many records.
        Append(u64),
        /// The notifier publishes up to this many more.
        Publish(u64),
        /// The stream is read once.
        Fill,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (1..40u64).prop_map(Step::Append),
            (1..40u64).prop_map(Step::Publish),
            Just(Step::Fill),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// However the window lags, leads or moves past it, a stream shows
        /// exactly what a direct read shows.
        #[test]
        fn every_record_once_in_order(
            before in 0..60u64,
            from in 1..80u64,
            window_at in 1..80u64,
            cap in 1..30usize,
            chunk in 1..600usize,
            masked in any::<bool>(),
            text in any::<bool>(),
            follow in any::<bool>(),
            limit in proptest::option::of(0..150u64),
            steps in proptest::collection::vec(step(), 0..40),
        ) {
            let (_d, log) = open();
            grow(&log, before);
            let from = from.min(before + 1);
            let start = window_at.min(before + 1);
            let w = Window::with_bounds(start, cap, usize::MAX);
            let mask = masked.then(|| TypeMask::parse("CREAT").unwrap());
            let format = if text { Format::Text } else { Format::Json };
            let mut c = Cursor::new(from, mask.clone(), format, limit, false);
            c.chunk = chunk;
            let mut published = start - 1;
            let mut out = Vec::new();
            for s in steps {
                match s {
                    Step::Append(n) => grow(&log, log.last_index() + n),
                    Step::Publish(n) => {
                        let upto = (published + n).min(log.last_index());
                        feed(&w, &log, published + 1, upto);
                        published = published.max(upto);
                    }
                    Step::Fill => c.fill(&log, &w, follow, &mut out).unwrap(),
                }
            }
            feed(&w, &log, published + 1, log.last_index());
            drain(&mut c, &log, &w, follow, &mut out);
            let want = expected(&log, from, mask.as_ref(), format);
            let want: String = match limit {
                Some(n) => want.lines().take(usize::try_from(n).unwrap()).map(|l| format!("{l}\n")).collect(),
                None => want,
            };
            prop_assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }
}
