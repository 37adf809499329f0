//! Cache-line hints: `prefetchw` and `cldemote`.
//!
//! The log's append ring hands out indexes from one counter that every
//! writer increments. When writers on different cores take turns, each
//! increment first has to pull the counter's line out of the other core's
//! private cache, a cross-core snoop that cost about 90 ns per append on
//! the Sapphire Rapids test VM: the largest single cost of an append with
//! writers on both CPUs. A writer that finds the counter contended demotes
//! the line to the shared last-level cache after its increment, so the next
//! writer finds it there (about half the cost), and every writer asks for
//! the line for writing early, so the fetch overlaps the rest of its work.
//!
//! Both instructions are hints: they change no memory and no register, and
//! a CPU without them executes them as NOPs (`prefetchw` is `0F 0D /1` and
//! `cldemote` is `0F 1C /0`, both in the hint-NOP space), so they need no
//! feature check. Elsewhere than x86-64 they compile to nothing.

/// Fetches the cache line that holds `p` in a state ready for writing
/// (`PREFETCHW`), ahead of an atomic read-modify-write on it.
#[inline(always)]
pub fn prefetchw<T: ?Sized>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHW is a hint. It takes any address without faulting,
    // writes no memory and no register (flags included), and here gets the
    // address of a live reference.
    unsafe {
        std::arch::asm!(
            "prefetchw [{0}]",
            in(reg) std::ptr::from_ref(p).cast::<u8>(),
            options(nostack, preserves_flags, readonly),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Moves the cache line that holds `p` from this core's private caches
/// toward the shared last-level cache (`CLDEMOTE`), so that another core's
/// next access finds it there instead of snooping this core.
#[inline(always)]
pub fn cldemote<T: ?Sized>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: CLDEMOTE is a hint. It writes no memory and no register
    // (flags included), and here gets the address of a live reference.
    unsafe {
        std::arch::asm!(
            "cldemote [{0}]",
            in(reg) std::ptr::from_ref(p).cast::<u8>(),
            options(nostack, preserves_flags, readonly),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    #[test]
    fn the_hints_leave_the_line_and_its_neighbours_as_they_were() {
        // A hint that wrote (a mis-encoded instruction would) shows here.
        let words: [AtomicU64; 16] = std::array::from_fn(|k| AtomicU64::new(k as u64 * 3 + 1));
        for w in &words {
            prefetchw(w);
            w.fetch_add(1, Ordering::SeqCst);
            cldemote(w);
        }
        for (k, w) in words.iter().enumerate() {
            assert_eq!(w.load(Ordering::SeqCst), k as u64 * 3 + 2);
        }
    }
}
