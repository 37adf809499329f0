//! [`SegmentPeak`]: an [`Observer`] that tracks the total length of the
//! segment files after every operation that can change it and keeps the
//! peak, so that a size bound is checked exactly rather than by sampling.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use weir_log::fs::File;
use weir_log::segment::parse_segment_name;

use super::observed::{FileOp, NameOp, Observer};

/// The segment files' lengths as last seen, and the peak of their total.
#[derive(Debug, Default)]
pub struct SegmentPeak(Mutex<(HashMap<PathBuf, u64>, u64)>);

impl SegmentPeak {
    /// The most bytes the segment files held together at any moment.
    pub fn peak(&self) -> u64 {
        self.0.lock().unwrap().1
    }
}

impl Observer for SegmentPeak {
    fn file_op(&self, path: &Path, file: &dyn File, op: FileOp) {
        let grows = matches!(
            op,
            FileOp::Write { .. } | FileOp::Allocate(_) | FileOp::SetLen(_)
        );
        if !grows || parse_segment_name(path).is_none() {
            return;
        }
        let len = file.len().unwrap_or(0);
        let mut s = self.0.lock().unwrap();
        s.0.insert(path.to_path_buf(), len);
        let total = s.0.values().sum();
        s.1 = s.1.max(total);
    }
    fn name_op(&self, op: NameOp<'_>) {
        // A spare renamed onto a segment's name is counted at the
        // segment's first write, its header.
        if let NameOp::Remove(path) = op {
            self.0.lock().unwrap().0.remove(path);
        }
    }
}
