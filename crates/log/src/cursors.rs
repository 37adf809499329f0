//! The persisted cursor set: each consumer's name, type mask and cleared
//! index, and the MARK records owed, kept across reopen.
//!
//! A consumer reads from just after its cleared index and clears what it has
//! processed. The set lives in `consumers.json`, replaced by rename on every
//! change, so a reader in another process always sees a whole file. This is
//! the data and its file; `log::consumers` is `Log`'s consumer calls, which
//! lock, change and save it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::announce::Announcement;
use crate::error::{Error, Result};
use crate::fs::{FileSystem, ReplaceError, read_file, replace_file};
use crate::kind::TypeMask;

/// The consumer state file name.
pub const CONSUMERS_FILE: &str = "consumers.json";
const STATE_VERSION: u32 = 1;

/// The most consumers a log holds. Each costs a type mask (8 KiB) in the
/// writer and every reader of the state, and retention looks at each on
/// every pass.
pub const MAX_CONSUMERS: usize = 1024;

/// The largest state file read: far above what [`MAX_CONSUMERS`] with
/// masks of many ranges need, and a bound on what a damaged or hostile
/// file costs to read.
const MAX_STATE_BYTES: u64 = 16 << 20;

/// The most MARK records the state file lists as owed (see `announce`):
/// every consumer evicted at once, and segments dropped, with room to
/// spare. One owed past it is still announced, without the guarantee.
const MAX_OWED_MARKS: usize = 4 * MAX_CONSUMERS;

/// How much a consumer's entry in the state file may grow after it is
/// registered: its cleared index and its last active time going from one
/// digit to 20.
const GROWTH_PER_CONSUMER: u64 = 64;

/// A consumer as listed by [`crate::Log::consumers`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerInfo {
    /// Numeric id, unique over the log's life.
    pub id: u32,
    /// The name it registered with.
    pub name: String,
    /// The types it reads.
    pub mask: TypeMask,
    /// Every index up to this one is cleared.
    pub cleared: u64,
    /// Records committed after `cleared`.
    pub lag: u64,
    /// Time since it registered or last cleared.
    pub idle: Duration,
    /// When it registered, ns since the epoch.
    pub registered_ns: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Saved {
    id: u32,
    name: String,
    mask: Vec<(u16, u16)>,
    cleared: u64,
    registered_ns: u64,
    last_active_ns: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct SavedFile {
    version: u32,
    next_id: u32,
    consumers: Vec<Saved>,
    /// Absent while none is owed, so that such a file reads as it always
    /// has, in older versions too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    owed_marks: Vec<Announcement>,
}

#[derive(Debug, Clone)]
pub(crate) struct Consumer {
    pub(crate) id: u32,
    pub(crate) name: String,
    pub(crate) mask: TypeMask,
    /// The mask as `consumers.json` keeps it, worked out once: a mask does
    /// not change, and every save writes every consumer's.
    mask_ranges: Vec<(u16, u16)>,
    pub(crate) cleared: u64,
    pub(crate) registered_ns: u64,
    pub(crate) last_active_ns: u64,
    /// The time of the oldest record waiting for it (the one after
    /// `cleared`, the first field), as retention last read it: kept
    /// in memory only, so that a lagging consumer costs one read per clear.
    pub(crate) waiting_since: Option<(u64, u64)>,
}

/// A save of the consumer set that failed.
#[derive(Debug)]
pub(crate) struct SaveFailed {
    pub(crate) path: PathBuf,
    pub(crate) cause: ReplaceError,
}

/// The consumer set of one log.
#[derive(Debug)]
pub(crate) struct Consumers {
    path: PathBuf,
    next_id: u32,
    list: Vec<Consumer>,
    /// Announcements whose MARK may not be durable yet (see `announce`).
    owed: Vec<Announcement>,
    /// Changed since the last save that reached the file: what another
    /// process reads, and a reopen finds, may be behind.
    dirty: bool,
    /// The lowest cleared index the file names (`None`: it names no
    /// consumer): what a segment must be cleared by before it can go
    /// without a save.
    saved_min: Option<u64>,
    /// Saves that replaced the file since load: a change made when this
    /// was `n` is on disk once it passes `n`.
    saves: u64,
}

/// Whether `name` can name a consumer: 1 to 64 bytes of ASCII letters,
/// digits, `.`, `_` and `-`.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(Error::BadConsumerName(name.to_owned()))
    }
}

impl Consumers {
    /// Loads the set from `dir`, or an empty set if there is no file.
    pub(crate) fn load(fs: &dyn FileSystem, dir: &Path) -> Result<Consumers> {
        let path = dir.join(CONSUMERS_FILE);
        let Some(bytes) =
            read_file(fs, &path, MAX_STATE_BYTES).map_err(|e| Error::io("read", &path, e))?
        else {
            return Ok(Consumers {
                path,
                next_id: 1,
                list: Vec::new(),
                owed: Vec::new(),
                dirty: false,
                saved_min: None,
                saves: 0,
            });
        };
        let Ok(bytes) = bytes else {
            return Err(invalid(path, "larger than 16 MiB"));
        };
        let f: SavedFile =
            serde_json::from_slice(&bytes).map_err(|source| Error::BadConsumerState {
                path: path.clone(),
                source,
            })?;
        if f.version != STATE_VERSION {
            return Err(Error::UnsupportedVersion {
                path,
                found: f.version,
                supported: STATE_VERSION,
            });
        }
        check_saved(&f).map_err(|reason| invalid(path.clone(), reason))?;
        let mut list = Vec::with_capacity(f.consumers.len());
        for s in f.consumers {
            check_name(&s.name)?;
            list.push(Consumer {
                id: s.id,
                mask: TypeMask::from_ranges(&s.mask),
                mask_ranges: s.mask,
                name: s.name,
                cleared: s.cleared,
                registered_ns: s.registered_ns,
                last_active_ns: s.last_active_ns,
                waiting_since: None,
            });
        }
        // `check_saved` keeps every id below `u32::MAX`.
        let next_id = f
            .next_id
            .max(list.iter().map(|c| c.id + 1).max().unwrap_or(1));
        let saved_min = list.iter().map(|c| c.cleared).min();
        Ok(Consumers {
            path,
            next_id,
            list,
            owed: f.owed_marks,
            dirty: false,
            saved_min,
            saves: 0,
        })
    }

    /// Writes the set to its file. Once the file is replaced the set is no
    /// longer dirty, even if the directory's fsync then failed: readers see
    /// it already.
    pub(crate) fn save(&mut self, fs: &dyn FileSystem) -> std::result::Result<(), SaveFailed> {
        let bytes = self.encode();
        let r = replace_file(fs, &self.path, &bytes);
        if !matches!(r, Err(ReplaceError::NotReplaced { .. })) {
            self.dirty = false;
            self.saved_min = self.min_cleared();
            self.saves += 1;
        }
        r.map_err(|cause| SaveFailed {
            path: self.path.clone(),
            cause,
        })
    }

    /// The state file's contents for the set as it is in memory.
    fn encode(&self) -> Vec<u8> {
        let f = SavedFile {
            version: STATE_VERSION,
            next_id: self.next_id,
            consumers: self
                .list
                .iter()
                .map(|c| Saved {
                    id: c.id,
                    name: c.name.clone(),
                    mask: c.mask_ranges.clone(),
                    cleared: c.cleared,
                    registered_ns: c.registered_ns,
                    last_active_ns: c.last_active_ns,
                })
                .collect(),
            owed_marks: self.owed.clone(),
        };
        serde_json::to_vec_pretty(&f).expect("consumer state serializes")
    }

    /// How many saves have replaced the file (see `Consumers::saves`).
    pub(crate) fn saves(&self) -> u64 {
        self.saves
    }

    /// Whether the set changed since it last reached its file.
    pub(crate) fn dirty(&self) -> bool {
        self.dirty
    }

    /// The lowest cleared index the file names, `None` if it names no
    /// consumer.
    pub(crate) fn saved_min_cleared(&self) -> Option<u64> {
        self.saved_min
    }

    pub(crate) fn get(&self, name: &str) -> Result<&Consumer> {
        self.list
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| Error::UnknownConsumer(name.to_owned()))
    }

    pub(crate) fn list(&self) -> &[Consumer] {
        &self.list
    }

    /// The consumers, for retention's in-memory bookkeeping (see
    /// [`Consumer::waiting_since`]); what is saved is not changed here.
    pub(crate) fn list_mut(&mut self) -> &mut [Consumer] {
        &mut self.list
    }

    /// Moves `name`'s cleared index forward to `to`, past records its mask
    /// excludes (see `retention`). Saved with the next save.
    pub(crate) fn move_past(&mut self, name: &str, to: u64) {
        if let Some(c) = self.list.iter_mut().find(|c| c.name == name)
            && to > c.cleared
        {
            c.cleared = to;
            self.dirty = true;
        }
    }

    /// Adds a consumer that starts after `last` (it sees records from `last + 1`).
    pub(crate) fn register(
        &mut self,
        name: &str,
        mask: TypeMask,
        last: u64,
        now: u64,
    ) -> Result<u32> {
        check_name(name)?;
        if self.list.iter().any(|c| c.name == name) {
            return Err(Error::ConsumerExists(name.to_owned()));
        }
        if self.list.len() >= MAX_CONSUMERS || self.next_id == u32::MAX {
            return Err(Error::TooManyConsumers {
                limit: MAX_CONSUMERS,
            });
        }
        let (id, was_dirty) = (self.next_id, self.dirty);
        self.next_id += 1;
        self.dirty = true;
        self.list.push(Consumer {
            id,
            name: name.to_owned(),
            mask_ranges: mask.ranges(),
            mask,
            cleared: last,
            registered_ns: now,
            last_active_ns: now,
            waiting_since: None,
        });
        // The file must stay one that an open reads back. Only a
        // registration grows it by more than a few digits, so it is checked
        // here, with room for every cursor and time to reach 20 digits.
        let bytes = self.encode().len() as u64 + GROWTH_PER_CONSUMER * self.list.len() as u64;
        if bytes > MAX_STATE_BYTES {
            self.list.pop();
            (self.next_id, self.dirty) = (id, was_dirty);
            return Err(Error::ConsumerStateFull {
                limit: MAX_STATE_BYTES,
            });
        }
        Ok(id)
    }

    /// Clears `name` up to `upto` (0 means everything up to `last`). Clearing
    /// backwards is a no-op. Returns whether anything changed.
    pub(crate) fn clear(&mut self, name: &str, upto: u64, last: u64, now: u64) -> Result<bool> {
        let upto = if upto == 0 { last } else { upto };
        if upto > last {
            return Err(Error::ClearBeyondEnd {
                requested: upto,
                last,
            });
        }
        let c = self
            .list
            .iter_mut()
            .find(|c| c.name == name)
            .ok_or_else(|| Error::UnknownConsumer(name.to_owned()))?;
        c.last_active_ns = now;
        if upto > c.cleared {
            c.cleared = upto;
        }
        self.dirty = true;
        Ok(true)
    }

    pub(crate) fn remove(&mut self, name: &str) -> Result<Consumer> {
        let at = self
            .list
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| Error::UnknownConsumer(name.to_owned()))?;
        self.dirty = true;
        Ok(self.list.remove(at))
    }

    /// Lists `a` as owed, to be saved with the change it announces.
    pub(crate) fn owe(&mut self, a: Announcement) {
        if self.owed.len() >= MAX_OWED_MARKS {
            tracing::warn!(event = ?a.event, consumer = %a.consumer, "too many MARK records owed; this one is announced without being kept until durable");
            return;
        }
        self.owed.push(a);
        self.dirty = true;
    }

    /// Takes `a` off the owed list: its MARK is durable, or the change it
    /// announces was taken back.
    pub(crate) fn settle(&mut self, a: &Announcement) {
        if let Some(at) = self.owed.iter().position(|x| x == a) {
            self.owed.remove(at);
            self.dirty = true;
        }
    }

    /// The announcements owed, as loaded or made since.
    pub(crate) fn owed(&self) -> &[Announcement] {
        &self.owed
    }

    /// Puts back a consumer's earlier state (after a failed save).
    pub(crate) fn restore(&mut self, c: Consumer) {
        match self.list.iter_mut().find(|x| x.name == c.name) {
            Some(x) => *x = c,
            None => {
                self.list.push(c);
                self.list.sort_by_key(|c| c.id);
            }
        }
    }

    /// Pulls every cleared index back to `last` at most. After a power cut
    /// the log may end before a consumer's cursor; the indexes past the end
    /// will be given to new records, which the consumer must not skip.
    /// Returns the names of the consumers moved.
    pub(crate) fn clamp_to(&mut self, last: u64) -> Vec<String> {
        let mut moved = Vec::new();
        for c in self.list.iter_mut().filter(|c| c.cleared > last) {
            c.cleared = last;
            moved.push(c.name.clone());
            self.dirty = true;
        }
        moved
    }

    /// The lowest cleared index, or `None` without consumers.
    pub(crate) fn min_cleared(&self) -> Option<u64> {
        self.list.iter().map(|c| c.cleared).min()
    }

    pub(crate) fn info(&self, c: &Consumer, last: u64, now: u64) -> ConsumerInfo {
        ConsumerInfo {
            id: c.id,
            name: c.name.clone(),
            mask: c.mask.clone(),
            cleared: c.cleared,
            lag: last.saturating_sub(c.cleared),
            idle: Duration::from_nanos(now.saturating_sub(c.last_active_ns)),
            registered_ns: c.registered_ns,
        }
    }
}

fn invalid(path: PathBuf, reason: &'static str) -> Error {
    Error::ConsumerStateInvalid { path, reason }
}

/// The rules a state file must keep beyond its syntax: what `save` writes
/// always keeps them.
fn check_saved(f: &SavedFile) -> std::result::Result<(), &'static str> {
    if f.consumers.len() > MAX_CONSUMERS {
        return Err("more consumers than a log holds");
    }
    if f.owed_marks.len() > MAX_OWED_MARKS {
        return Err("more owed MARK records than a log keeps");
    }
    for a in &f.owed_marks {
        a.check()?;
    }
    let mut ids = std::collections::HashSet::new();
    let mut names = std::collections::HashSet::new();
    for c in &f.consumers {
        if c.id == 0 || c.id == u32::MAX {
            return Err("a consumer id out of range");
        }
        if !ids.insert(c.id) {
            return Err("two consumers with one id");
        }
        if !names.insert(c.name.as_str()) {
            return Err("two consumers with one name");
        }
        let sorted = c.mask.iter().all(|(a, b)| a <= b)
            && c.mask
                .windows(2)
                .all(|w| u32::from(w[0].1) + 1 < u32::from(w[1].0));
        if !sorted {
            return Err("a mask whose ranges are not sorted and disjoint");
        }
    }
    Ok(())
}

/// Reads the consumer list of a log directory without opening the log
/// (for readers in other processes).
pub fn read_consumers(
    fs: &dyn FileSystem,
    dir: &Path,
    last: u64,
    now: u64,
) -> Result<Vec<ConsumerInfo>> {
    let c = Consumers::load(fs, dir)?;
    Ok(c.list.iter().map(|x| c.info(x, last, now)).collect())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use proptest::prelude::*;

    use super::*;
    use crate::mem::MemFs;

    const DIR: &str = "/log";

    fn load(bytes: &[u8]) -> Result<Consumers> {
        let fs = MemFs::new();
        fs.write_file(Path::new(DIR).join(CONSUMERS_FILE), bytes);
        Consumers::load(&fs, Path::new(DIR))
    }

    fn reason(r: Result<Consumers>) -> &'static str {
        match r {
            Err(Error::ConsumerStateInvalid { reason, .. }) => reason,
            other => panic!("expected ConsumerStateInvalid, got {other:?}"),
        }
    }

    fn file(consumers: &str) -> String {
        format!(r#"{{"version":1,"next_id":9,"consumers":[{consumers}]}}"#)
    }

    fn entry(id: u32, name: &str, mask: &str) -> String {
        format!(
            r#"{{"id":{id},"name":"{name}","mask":{mask},"cleared":0,"registered_ns":0,"last_active_ns":0}}"#
        )
    }

    #[test]
    fn a_state_file_that_breaks_the_rules_is_refused() {
        // Regression: a file with an id of u32::MAX overflowed the next id
        // (a panic in debug builds); one with two consumers of one name or
        // id loaded, and ids were handed out twice; masks with overlapping
        // ranges cost a pass over every range's codes each.
        let ok = entry(1, "a", "[[0,5],[7,9]]");
        assert!(load(file(&ok).as_bytes()).is_ok());
        let max = entry(u32::MAX, "a", "[]");
        assert_eq!(
            reason(load(file(&max).as_bytes())),
            "a consumer id out of range"
        );
        let zero = entry(0, "a", "[]");
        assert_eq!(
            reason(load(file(&zero).as_bytes())),
            "a consumer id out of range"
        );
        let ids = format!("{},{}", entry(2, "a", "[]"), entry(2, "b", "[]"));
        assert_eq!(
            reason(load(file(&ids).as_bytes())),
            "two consumers with one id"
        );
        let names = format!("{},{}", entry(2, "a", "[]"), entry(3, "a", "[]"));
        assert_eq!(
            reason(load(file(&names).as_bytes())),
            "two consumers with one name"
        );
        for mask in ["[[5,1]]", "[[0,5],[5,9]]", "[[0,5],[6,9]]", "[[7,9],[0,5]]"] {
            let m = entry(1, "a", mask);
            assert_eq!(
                reason(load(file(&m).as_bytes())),
                "a mask whose ranges are not sorted and disjoint",
                "{mask}"
            );
        }
        let many: Vec<String> = (1..=MAX_CONSUMERS as u32 + 1)
            .map(|i| entry(i, &format!("c{i}"), "[]"))
            .collect();
        assert_eq!(
            reason(load(file(&many.join(",")).as_bytes())),
            "more consumers than a log holds"
        );
        let owed =
            |m: &str| format!(r#"{{"version":1,"next_id":9,"consumers":[],"owed_marks":[{m}]}}"#);
        let evicted = |name: &str, id: u32| {
            format!(
                r#"{{"event":"consumer-evicted","reason":"idle-time","consumer":"{name}","consumer_id":{id},"cleared":3,"through":9}}"#
            )
        };
        let dropped = |name: &str, id: u32| {
            format!(
                r#"{{"event":"segment-dropped","reason":"size-limit","consumer":"{name}","consumer_id":{id},"cleared":3,"through":9}}"#
            )
        };
        assert_eq!(
            load(owed(&evicted("a", 4)).as_bytes())
                .unwrap()
                .owed()
                .len(),
            1
        );
        assert_eq!(
            load(owed(&dropped("", 0)).as_bytes()).unwrap().owed().len(),
            1
        );
        for bad in [
            evicted("", 4),
            evicted("a b", 4),
            evicted("a", 0),
            dropped("a", 0),
            dropped("", 4),
        ] {
            assert_eq!(
                reason(load(owed(&bad).as_bytes())),
                "an owed MARK whose consumer does not fit its event",
                "{bad}"
            );
        }
        let unknown = evicted("a", 4).replace("idle-time", "whim");
        assert!(matches!(
            load(owed(&unknown).as_bytes()),
            Err(Error::BadConsumerState { .. })
        ));
        let too_many = vec![dropped("", 0); MAX_OWED_MARKS + 1].join(",");
        assert_eq!(
            reason(load(owed(&too_many).as_bytes())),
            "more owed MARK records than a log keeps"
        );
        let mut huge = file(&ok).into_bytes();
        huge.resize(MAX_STATE_BYTES as usize + 1, b' ');
        assert_eq!(reason(load(&huge)), "larger than 16 MiB");
    }

    #[test]
    fn registering_stops_at_the_limit_and_at_the_last_id() {
        let mut c = load(file("").as_bytes()).unwrap();
        for i in 0..MAX_CONSUMERS {
            c.register(&format!("c{i}"), TypeMask::all(), 0, 0).unwrap();
        }
        assert!(matches!(
            c.register("one-more", TypeMask::all(), 0, 0),
            Err(Error::TooManyConsumers { .. })
        ));
        let last = format!(r#"{{"version":1,"next_id":{},"consumers":[]}}"#, u32::MAX);
        let mut c = load(last.as_bytes()).unwrap();
        assert!(matches!(
            c.register("a", TypeMask::all(), 0, 0),
            Err(Error::TooManyConsumers { .. })
        ));
    }

    fn arb_mask() -> impl Strategy<Value = TypeMask> {
        prop::collection::vec((any::<u16>(), 0u16..300), 0..6).prop_map(|v| {
            let mut m = TypeMask::none();
            for (a, n) in v {
                for code in a..=a.saturating_add(n) {
                    m.insert(crate::kind::RecordType(code));
                }
            }
            m
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// What `save` writes loads back the same, and passes the rules.
        #[test]
        fn a_saved_set_loads_back_the_same(
            consumers in prop::collection::vec(("[a-z0-9._-]{1,8}", arb_mask(), any::<u64>()), 0..8),
            removed in prop::collection::vec(any::<prop::sample::Index>(), 0..3),
            dropped in prop::collection::vec((any::<u64>(), any::<u64>()), 0..3),
        ) {
            let fs = MemFs::new();
            fs.create_dir_all(Path::new(DIR)).unwrap();
            let mut c = Consumers::load(&fs, Path::new(DIR)).unwrap();
            for (name, mask, cleared) in &consumers {
                if c.register(name, mask.clone(), *cleared, 7).is_err() {
                    prop_assert!(c.get(name).is_ok(), "only a duplicate name fails");
                }
            }
            for ix in removed {
                if !c.list.is_empty() {
                    let name = c.list[ix.index(c.list.len())].name.clone();
                    let gone = c.remove(&name).unwrap();
                    c.owe(Announcement::eviction(&gone, crate::announce::Reason::IdleTime, 9));
                }
            }
            for (cleared, through) in dropped {
                c.owe(Announcement::segment_dropped(cleared, through));
            }
            c.save(&fs).unwrap();
            let back = Consumers::load(&fs, Path::new(DIR)).unwrap();
            prop_assert_eq!(back.next_id, c.next_id);
            let key = |x: &Consumer| (x.id, x.name.clone(), x.mask.clone(), x.cleared, x.registered_ns);
            prop_assert_eq!(
                back.list.iter().map(key).collect::<Vec<_>>(),
                c.list.iter().map(key).collect::<Vec<_>>()
            );
            prop_assert_eq!(back.owed(), c.owed());
        }

        /// Any file of the right shape: a typed error, or a set that keeps
        /// the rules and can register another consumer without a panic.
        #[test]
        fn any_state_file_loads_as_a_valid_set_or_an_error(
            next_id in prop_oneof![Just(0u32), 1u32..10, Just(u32::MAX)],
            consumers in prop::collection::vec((
                prop_oneof![Just(0u32), 1u32..5, Just(u32::MAX - 1), Just(u32::MAX)],
                "[ab]",
                prop::collection::vec((any::<u16>(), any::<u16>()), 0..4),
            ), 0..5),
        ) {
            let body: Vec<String> = consumers
                .iter()
                .map(|(id, name, mask)| entry(*id, name, &format!("{mask:?}").replace('(', "[").replace(')', "]")))
                .collect();
            let f = format!(r#"{{"version":1,"next_id":{next_id},"consumers":[{}]}}"#, body.join(","));
            if let Ok(mut c) = load(f.as_bytes()) {
                let ids: std::collections::HashSet<u32> = c.list.iter().map(|x| x.id).collect();
                let names: std::collections::HashSet<&str> = c.list.iter().map(|x| x.name.as_str()).collect();
                prop_assert_eq!(ids.len(), c.list.len());
                prop_assert_eq!(names.len(), c.list.len());
                prop_assert!(c.list.iter().all(|x| x.id < c.next_id));
                if let Ok(id) = c.register("new", TypeMask::all(), 0, 0) {
                    prop_assert!(!ids.contains(&id));
                }
            }
        }
    }
}
