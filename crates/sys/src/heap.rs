//! Giving freed heap memory back to the kernel: `malloc_trim(3)`.
//!
//! glibc's malloc keeps the pages of freed small allocations in its
//! arenas, and returns them on its own only from the top of the heap. So
//! a burst of temporaries that outlived some later allocation (the images
//! of a tree's first persistent copy, the listings of a rescan) stays in
//! the process's RSS after it is freed: about 10 MiB after the first copy
//! of a million-entry tree. `malloc_trim(0)` walks every arena and gives
//! back each whole free page (`MADV_DONTNEED`), which the next allocations
//! get again as zeroed pages; it costs a walk of the arenas' free lists,
//! so it is for the end of such a burst, not for every free.
//!
//! With another C library (musl) or allocator it does nothing.

/// Gives the pages of freed heap memory back to the kernel; `true` if
/// any was given back.
pub fn trim() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim takes a size and no pointer; glibc locks
        // each arena while it walks it, so it is safe beside allocations
        // of other threads.
        unsafe { libc::malloc_trim(0) != 0 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages of a freed burst of small allocations come back from RSS.
    #[test]
    fn a_freed_burst_of_small_allocations_leaves_the_rss() {
        fn rss_kib() -> u64 {
            let s = std::fs::read_to_string("/proc/self/status").unwrap();
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
                .unwrap()
        }
        // 64 MiB in 64-byte pieces, and one more after them that pins
        // the heap's top: freeing the pieces gives back next to nothing
        // (only the vector of their pointers, which is mapped apart).
        let mut small: Vec<Box<[u8; 64]>> = (0..1 << 20).map(|_| Box::new([1u8; 64])).collect();
        let pin = Box::new([2u8; 64]);
        let before = rss_kib();
        small.clear();
        small.shrink_to_fit();
        let freed = rss_kib();
        trim();
        let trimmed = rss_kib();
        assert_eq!(pin[0], 2);
        // The test harness's other threads allocate too; a margin of a
        // quarter of the burst is plenty.
        let shown =
            format!("RSS {before} KiB with the burst, {freed} KiB freed, {trimmed} KiB trimmed");
        eprintln!("{shown}");
        assert!(
            freed + 16 * 1024 > before,
            "free alone gave it back: {shown}"
        );
        assert!(trimmed + 16 * 1024 < freed, "{shown}");
    }
}
