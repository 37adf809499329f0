//! Which records `weir log tail` prints, as journalctl chooses: matches
//! (`KEY=VALUE` on a field, a device, a mount point), a time window
//! (`--since`/`--until`), a subtree of the watched directory trees
//! (`--path`, [`PathPrefix`]) and the last N (`-n`).
//!
//! Both ways of reading the log (the CLI's own reader and the daemon's
//! stream) hand each record to one [`Selection`], which renders what it
//! keeps with [`crate::record`]: so the two print the same bytes.
//!
//! Matches on the same key OR, on different keys AND, as journalctl's
//! `FIELD=VALUE` arguments. The daemon filters a stream's records by the
//! same [`PathPrefix::matches`] server-side (`GET /v1/log/records?path=`),
//! so the records of other trees never cross the socket. The time window is a filter, not a seek: the
//! wall clock may step back, so a record is kept when its own time is in
//! the window, wherever it sits in the log.

use std::collections::VecDeque;

use weir_log::{LogRecord, RecordType};

/// What one match looks at.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MatchKey {
    /// A field of the record, by name (`dev`, `vg`, `fstype`).
    Field(String),
    /// A block device: a DEVICE_* or PV_* record whose name is the device
    /// name (`sda1`) or whose `dev` field is its number (`8:1`).
    Device,
    /// A mount point: a MOUNT_* record whose name is the path.
    Mount,
}

/// One match: a key and a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    /// What it looks at.
    pub key: MatchKey,
    /// The value, as bytes (a field value or a name need not be UTF-8).
    pub value: Vec<u8>,
}

/// Why a match was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MatchError {
    /// Neither `KEY=VALUE` nor an absolute path.
    #[error("bad match {input:?} (expected KEY=VALUE, a /dev path or a mount point)")]
    Form {
        /// The match as given.
        input: String,
    },
    /// A key outside `[A-Za-z0-9_]`, or empty.
    #[error("bad field name in match {input:?} (letters, digits and _ only)")]
    Key {
        /// The match as given.
        input: String,
    },
    /// An empty device or mount point.
    #[error("an empty {what}")]
    Empty {
        /// `device` or `mount point`.
        what: &'static str,
    },
}

impl Match {
    /// A positional match: `KEY=VALUE`, a path under `/dev/` (a device) or
    /// another absolute path (a mount point).
    pub fn parse(input: &str) -> Result<Match, MatchError> {
        if input.starts_with("/dev/") {
            return Match::device(input);
        }
        if input.starts_with('/') {
            return Match::mount(input);
        }
        let Some((key, value)) = input.split_once('=') else {
            return Err(MatchError::Form {
                input: input.to_owned(),
            });
        };
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(MatchError::Key {
                input: input.to_owned(),
            });
        }
        Ok(Match {
            key: MatchKey::Field(key.to_owned()),
            value: value.as_bytes().to_vec(),
        })
    }

    /// A device: `/dev/sda1`, `sda1` or `8:1`.
    pub fn device(input: &str) -> Result<Match, MatchError> {
        let name = input.strip_prefix("/dev/").unwrap_or(input);
        if name.is_empty() {
            return Err(MatchError::Empty { what: "device" });
        }
        Ok(Match {
            key: MatchKey::Device,
            value: name.as_bytes().to_vec(),
        })
    }

    /// A mount point; a trailing `/` is dropped (but `/` stays).
    pub fn mount(input: &str) -> Result<Match, MatchError> {
        if input.is_empty() {
            return Err(MatchError::Empty {
                what: "mount point",
            });
        }
        let path = match input.trim_end_matches('/') {
            "" => "/",
            p => p,
        };
        Ok(Match {
            key: MatchKey::Mount,
            value: path.as_bytes().to_vec(),
        })
    }

    /// Whether `r` matches.
    pub fn matches(&self, r: &LogRecord) -> bool {
        match &self.key {
            MatchKey::Field(k) => r.fields.iter().any(|(f, v)| f == k && *v == self.value),
            MatchKey::Mount => weir_mounts::record::TYPES.contains(&r.kind) && r.name == self.value,
            MatchKey::Device => {
                is_device_record(r.kind)
                    && (r.name == self.value
                        || r.fields.iter().any(|(f, v)| f == "dev" && *v == self.value))
            }
        }
    }
}

/// Records about one block device: DEVICE_* and PV_* (VG and LV records
/// name a VG or an LV, not a device).
fn is_device_record(kind: RecordType) -> bool {
    matches!(
        kind,
        RecordType::DEVICE_ADD
            | RecordType::DEVICE_REMOVE
            | RecordType::DEVICE_CHANGE
            | RecordType::PV_FOUND
            | RecordType::PV_LOST
            | RecordType::PV_CHANGE
    )
}

/// `--path PREFIX`: the records about a subtree of a watched root, those
/// whose `path` field (or, for a rename, `spath`: where the entry was)
/// lies at or under the prefix.
///
/// Paths in records are relative to their root, raw bytes. The prefix is
/// compared by whole components: `a/b` covers `a/b` and `a/b/c`, not
/// `a/bc`. Empty components and `.` are dropped first (`/a//b/`, `./a/b`
/// and `a/b` are the same prefix), so an empty prefix, `/` or `.` covers
/// every record that has a path, the root itself included. Records
/// without either field (MARKs, mounts, devices) never pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathPrefix {
    /// The components joined by `/`: no empty component, no `.`.
    prefix: Vec<u8>,
}

impl PathPrefix {
    /// The prefix of `given`, normalized as above. Every byte string is
    /// a prefix: none is refused.
    pub fn new(given: &[u8]) -> PathPrefix {
        let mut prefix = Vec::with_capacity(given.len());
        for c in given.split(|&b| b == b'/') {
            if c.is_empty() || c == b"." {
                continue;
            }
            if !prefix.is_empty() {
                prefix.push(b'/');
            }
            prefix.extend_from_slice(c);
        }
        PathPrefix { prefix }
    }

    /// The normalized prefix (what the CLI sends the daemon).
    pub fn as_bytes(&self) -> &[u8] {
        &self.prefix
    }

    /// Whether `path` (relative to its root) is the prefix or below it.
    pub fn covers(&self, path: &[u8]) -> bool {
        let p = &self.prefix;
        p.is_empty()
            || path
                .strip_prefix(p.as_slice())
                .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
    }

    /// Whether `r` is about the subtree: its `path` or `spath` field is
    /// covered.
    pub fn matches(&self, r: &LogRecord) -> bool {
        r.fields
            .iter()
            .any(|(k, v)| (k == "path" || k == "spath") && self.covers(v))
    }
}

/// Which records pass: matches, a time window and a subtree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Grouped by key, keys in order: a record passes when, for every
    /// key, one of its values matches.
    groups: Vec<(MatchKey, Vec<Match>)>,
    /// Only records about this subtree.
    path: Option<PathPrefix>,
    /// Records at or after this time (ns since the epoch).
    since: Option<i128>,
    /// Records at or before this time.
    until: Option<i128>,
}

impl Filter {
    /// Every record.
    pub fn new() -> Filter {
        Filter::default()
    }

    /// Adds a match: ORed with those of the same key, ANDed with others.
    pub fn with_match(mut self, m: Match) -> Filter {
        match self.groups.iter_mut().find(|(k, _)| *k == m.key) {
            Some((_, ms)) => ms.push(m),
            None => {
                self.groups.push((m.key.clone(), vec![m]));
                self.groups.sort_by(|a, b| a.0.cmp(&b.0));
            }
        }
        self
    }

    /// Only records whose time is at or after `ns` (see [`crate::log_time`]).
    pub fn since(mut self, ns: i128) -> Filter {
        self.since = Some(ns);
        self
    }

    /// Only records whose time is at or before `ns`.
    pub fn until(mut self, ns: i128) -> Filter {
        self.until = Some(ns);
        self
    }

    /// Only records about the subtree `p` (see [`PathPrefix`]).
    pub fn path(mut self, p: PathPrefix) -> Filter {
        self.path = Some(p);
        self
    }

    /// The subtree, when there is one: what a reader can hand the daemon.
    pub fn path_prefix(&self) -> Option<&PathPrefix> {
        self.path.as_ref()
    }

    /// The time window as bounds a reader can skip by
    /// (`weir_log::Reader::with_time_window`): `None` without one; an
    /// empty range (`start > end`) when no record's time can be in it.
    pub fn time_window(&self) -> Option<(u64, u64)> {
        if self.since.is_none() && self.until.is_none() {
            return None;
        }
        let max = i128::from(u64::MAX);
        let since = self.since.unwrap_or(0).max(0);
        let until = self.until.unwrap_or(max).min(max);
        match (u64::try_from(since), u64::try_from(until)) {
            (Ok(a), Ok(b)) if a <= b => Some((a, b)),
            _ => Some((u64::MAX, 0)),
        }
    }

    /// Whether every record passes.
    pub fn is_all(&self) -> bool {
        self.groups.is_empty()
            && self.since.is_none()
            && self.until.is_none()
            && self.path.is_none()
    }

    /// Whether `r` passes.
    pub fn accepts(&self, r: &LogRecord) -> bool {
        let t = i128::from(r.time_ns);
        self.since.is_none_or(|s| t >= s)
            && self.until.is_none_or(|u| t <= u)
            && self.path.as_ref().is_none_or(|p| p.matches(r))
            && self
                .groups
                .iter()
                .all(|(_, ms)| ms.iter().any(|m| m.matches(r)))
    }
}

/// The records `weir log tail` prints, rendered: those the [`Filter`]
/// passes, and with `last`, only the last N of those already written.
///
/// Records go in with [`Selection::push`] in log order; until
/// [`Selection::caught_up`] (the reader reached the end of the log as it
/// was), the last N are held back, then written at once; after it, each
/// passing record is written as it comes (for `-f`).
#[derive(Debug)]
pub struct Selection {
    filter: Filter,
    json: bool,
    /// `Some` while holding back the last N lines.
    held: Option<(usize, VecDeque<String>)>,
}

impl Selection {
    /// Records that pass `filter`, as JSON or text lines; with `last`,
    /// only the last N of the backlog.
    pub fn new(filter: Filter, json: bool, last: Option<usize>) -> Selection {
        Selection {
            filter,
            json,
            held: last.map(|n| (n, VecDeque::with_capacity(n.min(4096)))),
        }
    }

    /// What it keeps, before `-n`.
    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// Takes one record; appends its line (and a newline) to `out` when it
    /// passes and nothing is held back.
    pub fn push(&mut self, r: &LogRecord, out: &mut Vec<u8>) {
        if !self.filter.accepts(r) {
            return;
        }
        let line = if self.json {
            crate::record::record_json(r)
        } else {
            crate::record::record_line(r)
        };
        match &mut self.held {
            Some((0, _)) => {}
            Some((n, held)) => {
                if held.len() == *n {
                    held.pop_front();
                }
                held.push_back(line);
            }
            None => {
                out.extend_from_slice(line.as_bytes());
                out.push(b'\n');
            }
        }
    }

    /// The backlog is read: writes the held lines to `out`, then lets
    /// records through as they come. Later calls do nothing.
    pub fn caught_up(&mut self, out: &mut Vec<u8>) {
        if let Some((_, held)) = self.held.take() {
            for line in held {
                out.extend_from_slice(line.as_bytes());
                out.push(b'\n');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rec(index: u64, kind: RecordType, name: &str, fields: &[(&str, &str)]) -> LogRecord {
        LogRecord {
            index,
            time_ns: index * 1_000,
            kind,
            flags: 0,
            target: vec![],
            parent: vec![],
            name: name.as_bytes().to_vec(),
            fields: fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.as_bytes().to_vec()))
                .collect(),
        }
    }

    #[test]
    fn matches_parse() {
        assert_eq!(
            Match::parse("dev=8:0"),
            Ok(Match {
                key: MatchKey::Field("dev".into()),
                value: b"8:0".to_vec()
            })
        );
        assert_eq!(Match::parse("k=").unwrap().value, b"");
        assert_eq!(Match::parse("k=a=b").unwrap().value, b"a=b");
        assert_eq!(
            Match::parse("/dev/sda1").unwrap(),
            Match::device("sda1").unwrap()
        );
        assert_eq!(
            Match::parse("/mnt/x/").unwrap(),
            Match::mount("/mnt/x").unwrap()
        );
        assert_eq!(Match::mount("///").unwrap().value, b"/");
        assert!(matches!(Match::parse("sda1"), Err(MatchError::Form { .. })));
        assert!(matches!(Match::parse("=x"), Err(MatchError::Key { .. })));
        assert!(matches!(Match::parse("a b=x"), Err(MatchError::Key { .. })));
        assert!(matches!(
            Match::parse("/dev/"),
            Err(MatchError::Empty { .. })
        ));
    }

    #[test]
    fn same_key_ors_and_different_keys_and() {
        let a = rec(
            1,
            RecordType::PV_FOUND,
            "sda1",
            &[("dev", "8:1"), ("vg", "vg0")],
        );
        let b = rec(
            2,
            RecordType::PV_FOUND,
            "sdb1",
            &[("dev", "8:17"), ("vg", "vg1")],
        );
        let m = rec(3, RecordType::MOUNT_ATTACH, "/mnt/x", &[("dev", "8:1")]);
        let f = Filter::new()
            .with_match(Match::parse("vg=vg0").unwrap())
            .with_match(Match::parse("vg=vg1").unwrap());
        assert!(f.accepts(&a) && f.accepts(&b) && !f.accepts(&m));
        let f = f.with_match(Match::parse("/dev/sdb1").unwrap());
        assert!(!f.accepts(&a) && f.accepts(&b));
        // A device by number; a mount record is no device record.
        let f = Filter::new().with_match(Match::device("8:1").unwrap());
        assert!(f.accepts(&a) && !f.accepts(&b) && !f.accepts(&m));
        let f = Filter::new().with_match(Match::parse("/mnt/x").unwrap());
        assert!(!f.accepts(&a) && f.accepts(&m));
    }

    #[test]
    fn time_window_is_inclusive() {
        let f = Filter::new().since(2_000).until(3_000);
        let at = |i| rec(i, RecordType::MARK, "", &[]);
        assert!(!f.accepts(&at(1)) && f.accepts(&at(2)) && f.accepts(&at(3)) && !f.accepts(&at(4)));
    }

    #[test]
    fn time_windows_for_a_reader() {
        assert_eq!(Filter::new().time_window(), None);
        assert_eq!(Filter::new().since(-5).time_window(), Some((0, u64::MAX)));
        assert_eq!(Filter::new().since(3).until(7).time_window(), Some((3, 7)));
        let empty = Some((u64::MAX, 0));
        assert_eq!(Filter::new().until(-1).time_window(), empty);
        assert_eq!(Filter::new().since(8).until(7).time_window(), empty);
        assert_eq!(Filter::new().since(i128::MAX).time_window(), empty);
    }

    #[test]
    fn a_path_prefix_covers_whole_components() {
        let p = PathPrefix::new(b"a/b");
        assert!(p.covers(b"a/b") && p.covers(b"a/b/c") && p.covers(b"a/b/c/d"));
        assert!(!p.covers(b"a/bc") && !p.covers(b"a") && !p.covers(b"x/a/b"));
        assert!(!p.covers(b"") && !p.covers(b"a/b\xff"));
        for same in [&b"/a//b/"[..], b"./a/./b", b"a/b/", b"a/b"] {
            assert_eq!(PathPrefix::new(same), p, "{same:?}");
        }
        for all in [&b""[..], b"/", b".", b"//./"] {
            let all = PathPrefix::new(all);
            assert_eq!(all.as_bytes(), b"");
            assert!(all.covers(b"") && all.covers(b"x/y"));
        }
        assert_eq!(PathPrefix::new(b"a/\xff").as_bytes(), b"a/\xff");
    }

    #[test]
    fn a_path_prefix_matches_a_path_or_where_a_rename_came_from() {
        let creat = rec(1, RecordType::CREAT, "x", &[("path", "docs/x")]);
        let moved = rec(
            2,
            RecordType::RENME,
            "y",
            &[("path", "other/y"), ("sname", "x"), ("spath", "docs/x")],
        );
        let out = rec(
            3,
            RecordType::RENME,
            "y",
            &[("sname", "x"), ("spath", "docs/y")],
        );
        let elsewhere = rec(4, RecordType::UNLNK, "z", &[("path", "docsz/z")]);
        let mark = rec(5, RecordType::MARK, "fs root watched", &[("root", "/srv")]);
        let f = Filter::new().path(PathPrefix::new(b"docs"));
        assert!(!f.is_all());
        let kept: Vec<u64> = [&creat, &moved, &out, &elsewhere, &mark]
            .iter()
            .filter(|r| f.accepts(r))
            .map(|r| r.index)
            .collect();
        assert_eq!(kept, [1, 2, 3]);
        // A field of another name does not count.
        let named = rec(6, RecordType::MARK, "", &[("xpath", "docs")]);
        assert!(!f.accepts(&named));
        // The whole tree: every record with a path, none without.
        let all = Filter::new().path(PathPrefix::new(b"/"));
        assert!(all.accepts(&elsewhere) && !all.accepts(&mark));
    }

    #[test]
    fn the_last_n_wait_for_the_backlog() {
        let mut s = Selection::new(Filter::new(), false, Some(2));
        let mut out = Vec::new();
        for i in 1..=5 {
            s.push(&rec(i, RecordType::MARK, &format!("r{i}"), &[]), &mut out);
        }
        assert!(out.is_empty());
        s.caught_up(&mut out);
        s.push(&rec(6, RecordType::MARK, "r6", &[]), &mut out);
        let text = String::from_utf8(out).unwrap();
        let names: Vec<&str> = text
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap())
            .collect();
        assert_eq!(names, ["r4", "r5", "r6"]);
    }

    /// A path component: any bytes but `/`, not `.` (which a prefix
    /// drops), often not UTF-8.
    fn component() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(
                prop_oneof![
                    Just(b'a'),
                    Just(b'b'),
                    Just(b'.'),
                    Just(0xffu8),
                    Just(0x80u8),
                    Just(b'\\')
                ],
                1..4
            ),
            proptest::collection::vec(any::<u8>().prop_filter("no slash", |b| *b != b'/'), 1..6),
        ]
        .prop_filter("not a dot", |c| c != b".")
    }

    proptest! {
        /// Any text is judged without a panic; a `KEY=VALUE` with a good
        /// key keeps its value whole.
        #[test]
        fn any_match_is_judged(s in "\\PC{0,30}", k in "[a-z_]{1,8}", v in "\\PC{0,20}") {
            let _ = Match::parse(&s);
            let m = Match::parse(&format!("{k}={v}")).unwrap();
            prop_assert_eq!(m.value, v.as_bytes());
        }

        /// A prefix covers a path exactly when its components begin the
        /// path's, whatever the bytes (none UTF-8, backslashes, dots) and
        /// however many slashes the prefix is written with.
        #[test]
        fn a_prefix_covers_exactly_its_subtree(
            path in proptest::collection::vec(component(), 0..5),
            prefix in proptest::collection::vec(component(), 0..5),
            take in 0usize..6,
            slashes in proptest::collection::vec(1usize..3, 6),
            lead in any::<bool>(),
        ) {
            // Half the time, a prefix drawn from the path itself.
            let prefix = if take % 2 == 0 {
                path[..(take / 2).min(path.len())].to_vec()
            } else {
                prefix
            };
            let joined = path.join(&b'/');
            let mut written = if lead { b"/".to_vec() } else { Vec::new() };
            for (i, c) in prefix.iter().enumerate() {
                written.extend_from_slice(c);
                written.extend(std::iter::repeat_n(b'/', slashes[i]));
            }
            let p = PathPrefix::new(&written);
            let normal = prefix.join(&b'/');
            prop_assert_eq!(p.as_bytes(), normal.as_slice());
            let want = path.len() >= prefix.len() && path[..prefix.len()] == prefix[..];
            prop_assert_eq!(p.covers(&joined), want);
            let r = LogRecord {
                fields: vec![("path".to_owned(), joined.clone())],
                ..rec(1, RecordType::CREAT, "", &[])
            };
            prop_assert_eq!(Filter::new().path(p).accepts(&r), want);
        }

        /// `-n N` prints the last N of what passes, in order.
        #[test]
        fn last_n_is_the_tail(total in 0u64..40, n in 0usize..10, vg in 0u64..3) {
            let recs: Vec<LogRecord> = (1..=total)
                .map(|i| rec(i, RecordType::PV_FOUND, "d", &[("vg", &format!("vg{}", i % 3))]))
                .collect();
            let f = Filter::new().with_match(Match::parse(&format!("vg=vg{vg}")).unwrap());
            let mut s = Selection::new(f.clone(), false, Some(n));
            let mut out = Vec::new();
            for r in &recs {
                s.push(r, &mut out);
            }
            s.caught_up(&mut out);
            let kept: Vec<&LogRecord> = recs.iter().filter(|r| f.accepts(r)).collect();
            let want: String = kept[kept.len().saturating_sub(n)..]
                .iter()
                .map(|r| crate::record::record_line(r) + "\n")
                .collect();
            prop_assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }
}
