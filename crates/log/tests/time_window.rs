//! `Reader::with_time_window`: a reader keeps exactly the records whose
//! time is in the window, whatever their place, over sealed and active
//! segments, alone and with a mask; as a filter, not a seek.

use proptest::prelude::*;
use weir_log::{LogRecord, Options, Reader, Record, RecordType, TypeMask};

const KINDS: [RecordType; 2] = [RecordType::MARK, RecordType::CREAT];

/// Records over several small segments, with their times as written.
fn written() -> (tempfile::TempDir, Vec<LogRecord>) {
    let dir = tempfile::tempdir().unwrap();
    let log = weir_log::Log::open(dir.path(), Options::default().segment_size(64 * 1024)).unwrap();
    for i in 0..400u32 {
        let _ = log
            .append(&Record::new(KINDS[(i % 2) as usize]).name(&[b'x'; 300]))
            .unwrap();
    }
    log.close().unwrap();
    let all: Vec<LogRecord> = Reader::open_dir(dir.path(), 1)
        .map(Result::unwrap)
        .collect();
    assert_eq!(all.len(), 400);
    (dir, all)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn the_window_keeps_exactly_the_records_inside(
        a in 0usize..400, b in 0usize..400, masked: bool, shift in 0u64..3,
    ) {
        let (dir, all) = written();
        // Bounds at a record's time (inclusive), or between two times.
        let since = all[a.min(b)].time_ns + shift;
        let until = all[a.max(b)].time_ns;
        let mut r = Reader::open_dir(dir.path(), 1).with_time_window(since, until);
        if masked {
            r = r.with_mask(TypeMask::parse("CREAT").unwrap());
        }
        let got: Vec<LogRecord> = r.map(Result::unwrap).collect();
        let want: Vec<LogRecord> = all
            .iter()
            .filter(|x| (since..=until).contains(&x.time_ns))
            .filter(|x| !masked || x.kind == RecordType::CREAT)
            .cloned()
            .collect();
        prop_assert_eq!(got, want);
    }
}
