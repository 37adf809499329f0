//! Tests of applying a plan through a stand-in for the log's I/O: what
//! waits for the consumer state's save, and what does not.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::plan::Removal;
use super::*;
use crate::fs::FileSystem;
use crate::kind::TypeMask;
use crate::mem::MemFs;

/// Records what `apply` asks of the log; saves reach `fs` only while
/// `saves_work` holds.
struct Fake {
    fs: MemFs,
    saves_work: Cell<bool>,
    poisoned: Cell<bool>,
    evictions: Cell<u64>,
    removed: RefCell<Vec<u64>>,
    marks: RefCell<Vec<Announcement>>,
}

impl Effects for Fake {
    fn save(&self, consumers: &mut Consumers) {
        if self.saves_work.get() {
            consumers.save(&self.fs).unwrap();
        }
    }

    fn count_eviction(&self) {
        self.evictions.set(self.evictions.get() + 1);
    }

    fn poisoned(&self) -> bool {
        self.poisoned.get()
    }

    fn remove_segments(&self, doomed: &[SegEntry]) {
        self.removed
            .borrow_mut()
            .extend(doomed.iter().map(|s| s.base));
    }

    fn append_mark(&self, a: &Announcement) -> Option<u64> {
        let mut marks = self.marks.borrow_mut();
        marks.push(a.clone());
        Some(100 + marks.len() as u64)
    }
}

/// A log's consumers "lagging" (cleared 5) and "reading" (cleared 30),
/// saved once, three segments of ten records, and the marks a pass
/// carries to the next.
struct Setup {
    fx: Fake,
    consumers: Mutex<Consumers>,
    segs: Vec<SegEntry>,
    marks: PendingMarks,
}

fn setup() -> Setup {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/log")).unwrap();
    let mut c = Consumers::load(&fs, Path::new("/log")).unwrap();
    c.register("lagging", TypeMask::all(), 5, 0).unwrap();
    c.register("reading", TypeMask::all(), 30, 0).unwrap();
    c.save(&fs).unwrap();
    let segs = (0..3)
        .map(|k| SegEntry {
            base: 1 + 10 * k,
            path: PathBuf::from(format!("/log/{k}")),
            last: (k < 2).then_some(10 * (k + 1)),
            bytes: 100,
            last_time_ns: 0,
            time_read: false,
        })
        .collect();
    let fx = Fake {
        fs,
        saves_work: Cell::new(true),
        poisoned: Cell::new(false),
        evictions: Cell::new(0),
        removed: RefCell::new(Vec::new()),
        marks: RefCell::new(Vec::new()),
    };
    Setup {
        fx,
        consumers: Mutex::new(c),
        segs,
        marks: PendingMarks::default(),
    }
}

impl Setup {
    /// One pass's `apply` of `plan`: whether the log fits its limit.
    fn apply(&mut self, plan: &Plan) -> bool {
        apply(
            &self.fx,
            self.consumers.lock().unwrap(),
            &mut self.marks,
            plan,
            &self.segs,
            &pass(),
        )
    }
}

fn pass() -> Pass {
    Pass {
        last: 35,
        settled: false,
        closing: false,
        max_bytes: 1000,
    }
}

/// Evicting "lagging" frees the first two segments.
fn eviction_plan() -> Plan {
    Plan {
        evict: vec![("lagging".to_owned(), Reason::IdleRecords)],
        drops: Vec::new(),
        remove: vec![
            Removal {
                base: 1,
                last: 10,
                dropped: false,
            },
            Removal {
                base: 11,
                last: 20,
                dropped: false,
            },
        ],
        total: 100,
    }
}

#[test]
fn an_eviction_frees_segments_and_is_announced_once_saved() {
    let mut t = setup();
    assert!(t.apply(&eviction_plan()));
    assert_eq!(t.fx.evictions.get(), 1);
    assert_eq!(*t.fx.removed.borrow(), [1, 11]);
    let announced = t.fx.marks.borrow();
    assert_eq!(announced.len(), 1);
    assert_eq!(announced[0].consumer, "lagging");
    // Owed in the saved state until durable.
    let c = t.consumers.lock().unwrap();
    assert!(c.get("lagging").is_err());
    assert_eq!(c.owed(), &announced[..]);
}

#[test]
fn without_the_save_nothing_it_would_free_goes_and_nothing_is_announced() {
    let mut t = setup();
    t.fx.saves_work.set(false);
    // The file still names "lagging" at 5: neither segment may go.
    assert!(!t.apply(&eviction_plan()));
    assert!(t.fx.removed.borrow().is_empty());
    assert!(t.fx.marks.borrow().is_empty());
    assert!(t.marks.awaiting_save());
    // The next pass's save lets both go, and the MARK out.
    t.fx.saves_work.set(true);
    let plan = Plan {
        evict: Vec::new(),
        ..eviction_plan()
    };
    assert!(t.apply(&plan));
    assert_eq!(*t.fx.removed.borrow(), [1, 11]);
    assert_eq!(t.fx.marks.borrow().len(), 1);
}

#[test]
fn a_dropped_segment_goes_and_is_announced_without_a_save() {
    let mut t = setup();
    t.fx.saves_work.set(false);
    let plan = Plan {
        evict: Vec::new(),
        drops: vec![(5, 10)],
        remove: vec![Removal {
            base: 1,
            last: 10,
            dropped: true,
        }],
        total: 200,
    };
    assert!(t.apply(&plan));
    assert_eq!(*t.fx.removed.borrow(), [1]);
    let announced = t.fx.marks.borrow();
    assert_eq!(*announced, [Announcement::segment_dropped(5, 10)]);
}

#[test]
fn a_poisoned_log_removes_nothing() {
    let mut t = setup();
    t.fx.poisoned.set(true);
    assert!(!t.apply(&eviction_plan()));
    assert!(t.fx.removed.borrow().is_empty());
}
