//! Fuzzes the consumer state file (`consumers.json`), which every reader
//! of a log directory parses and which a damaged disk or a hostile user
//! with access to the directory can change.
//!
//! Property: loading never panics. It gives a typed error, or consumers
//! with unique ids and names, each name of 1-64 characters from
//! `[A-Za-z0-9._-]`, each cleared index pulled back to the end of the log.
#![no_main]
#![forbid(unsafe_code)]

use std::collections::HashSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use weir_log::mem::MemFs;
use weir_log::{CONSUMERS_FILE, MAX_CONSUMERS, read_consumers};

fuzz_target!(|data: &[u8]| {
    let dir = Path::new("/log");
    let fs = MemFs::new();
    fs.write_file(dir.join(CONSUMERS_FILE), data);
    let last = 1000;
    let Ok(list) = read_consumers(&fs, dir, last, 0) else {
        return;
    };
    assert!(list.len() <= MAX_CONSUMERS);
    let ids: HashSet<u32> = list.iter().map(|c| c.id).collect();
    let names: HashSet<&str> = list.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(ids.len(), list.len(), "two consumers with one id");
    assert_eq!(names.len(), list.len(), "two consumers with one name");
    for c in &list {
        assert!(c.id != 0 && c.id != u32::MAX);
        assert!((1..=64).contains(&c.name.len()));
        assert!(
            c.name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        );
        assert_eq!(c.lag, last.saturating_sub(c.cleared));
    }
});
