//! The last index of each record type the committer has placed since the
//! log was opened.
//!
//! Retention moves a consumer with a mask past the records its mask
//! excludes. For a consumer that has read everything it wants, which is
//! the usual case, this table says so without reading a byte: no type in
//! its mask has a record after its cleared index. Reading the records
//! instead costs the committer time in proportion to the log's rate, and a
//! busy log outran the budget retention gives those reads.

use crate::kind::{RecordType, TypeMask};

/// The last index placed of each of the 65,536 types.
pub(crate) struct LastOfType {
    /// The first index placed since open: nothing is known of those
    /// before it.
    from: u64,
    /// By type code; 0 for a type not seen (indexes start at 1).
    last: Box<[u64]>,
    /// The codes seen, so that a question walks only those.
    seen: Vec<u16>,
}

impl LastOfType {
    /// A table whose first placed record will be `from`.
    pub(crate) fn new(from: u64) -> LastOfType {
        LastOfType {
            from,
            last: vec![0; 1 << 16].into_boxed_slice(),
            seen: Vec::new(),
        }
    }

    /// Notes that the record `index`, of type `kind`, was placed. Indexes
    /// are placed in order.
    #[inline]
    pub(crate) fn note(&mut self, kind: RecordType, index: u64) {
        let at = &mut self.last[usize::from(kind.0)];
        if *at == 0 {
            self.seen.push(kind.0);
        }
        *at = index;
    }

    /// Whether every record placed after `after` has a type outside
    /// `mask`; `false` when records after `after` were placed before open,
    /// which this table does not know.
    pub(crate) fn none_wanted_after(&self, after: u64, mask: &TypeMask) -> bool {
        after.saturating_add(1) >= self.from
            && self
                .seen
                .iter()
                .all(|&t| self.last[usize::from(t)] <= after || !mask.contains(RecordType(t)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_consumer_is_past_its_types_only_after_their_last_record() {
        let mut t = LastOfType::new(10);
        let mounts = TypeMask::parse("MOUNT_ATTACH,MOUNT_DETACH").unwrap();
        t.note(RecordType::MOUNT_ATTACH, 10);
        t.note(RecordType::CREAT, 11);
        t.note(RecordType::MOUNT_DETACH, 12);
        t.note(RecordType::CREAT, 13);
        t.note(RecordType::UNLNK, 14);
        assert!(!t.none_wanted_after(11, &mounts), "12 is a MOUNT_DETACH");
        assert!(t.none_wanted_after(12, &mounts));
        assert!(t.none_wanted_after(14, &mounts));
        assert!(!t.none_wanted_after(12, &TypeMask::parse("UNLNK").unwrap()));
        assert!(t.none_wanted_after(12, &TypeMask::parse("MKDIR").unwrap()));
    }

    #[test]
    fn records_before_open_are_unknown() {
        let mut t = LastOfType::new(10);
        let mkdir = TypeMask::parse("MKDIR").unwrap();
        assert!(!t.none_wanted_after(5, &mkdir), "6..=9 were placed before");
        assert!(t.none_wanted_after(9, &mkdir));
        t.note(RecordType::CREAT, 10);
        assert!(!t.none_wanted_after(8, &mkdir));
        assert!(t.none_wanted_after(9, &mkdir));
        assert!(
            LastOfType::new(1).none_wanted_after(u64::MAX, &mkdir),
            "no overflow"
        );
    }
}
