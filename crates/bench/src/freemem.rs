//! Giving every measurement the same free memory to start from.
//!
//! On a VM with free page reporting (virtio-balloon), the guest hands pages
//! that stay free for about two seconds back to the host, and the first
//! touch of such a page later costs a host fault: about 3–5 µs per 4 KiB
//! page here, against under 1 µs for a page freed a moment ago. A case that
//! writes a file (a log) pays that per page it allocates, so a measurement
//! that runs right after another writer's files were deleted gets warm pages
//! and one that runs after an idle spell gets cold ones. With the cases in a
//! fixed rotation, which case paid was decided by the order, not by the
//! code. Writing and deleting a file just before each measurement makes the
//! starting state the same for every case.

use std::io::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{Context, Result};

/// Writes `bytes` to a file in `dir` and deletes it, leaving that much
/// freshly freed (host-backed) memory for the next measurement to allocate.
pub(crate) fn warm(dir: &Path, bytes: u64) -> Result<()> {
    let path = dir.join("warm");
    let mut f =
        std::fs::File::create(&path).with_context(|| format!("create {}", path.display()))?;
    let chunk = vec![0x5au8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])
            .with_context(|| format!("write {}", path.display()))?;
        left -= n as u64;
    }
    drop(f);
    std::fs::remove_file(&path).with_context(|| format!("remove {}", path.display()))
}

/// Bytes allocated to the files under `root`: what a measurement took from
/// free memory (on tmpfs) or the page cache.
pub(crate) fn footprint(root: &Path) -> Result<u64> {
    let mut total = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("read {}", d.display()))? {
            let e = e?;
            let md = e.metadata()?;
            if md.is_dir() {
                stack.push(e.path());
            } else {
                total += md.blocks() * 512;
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footprint_counts_allocated_bytes_and_warm_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/a"), vec![1u8; 10_000]).unwrap();
        std::fs::write(d.path().join("b"), vec![1u8; 5_000]).unwrap();
        let n = footprint(d.path()).unwrap();
        // Whole blocks: at least the data, at most a few blocks more.
        assert!((15_000..=15_000 + 3 * 4096).contains(&n), "{n}");
        warm(d.path(), 3 << 20).unwrap();
        assert_eq!(footprint(d.path()).unwrap(), n, "the warm file is gone");
    }
}
