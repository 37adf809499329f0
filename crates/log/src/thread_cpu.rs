//! The CPU time the commit thread has used, for [`Stats`](crate::Stats).
//!
//! What the log costs the appending threads is spread over their calls;
//! what it costs beside them is one number, the commit thread's CPU time.
//! The kernel keeps it in `/proc/self/task/TID/schedstat` (the first field,
//! ns on a CPU), which another thread can read, so it is read only when
//! asked and the commit path pays nothing for it.

/// CPU time of thread `tid` of this process in ns, or `None` where /proc
/// or schedstat is missing.
pub(crate) fn of_thread(tid: i32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    parse_schedstat(&s)
}

/// The first field of a schedstat line: "RUN_NS WAIT_NS TIMESLICES".
fn parse_schedstat(s: &str) -> Option<u64> {
    s.split_ascii_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_gives_its_first_field_and_nothing_for_other_text() {
        assert_eq!(parse_schedstat("1234567 89 10\n"), Some(1_234_567));
        assert_eq!(parse_schedstat(""), None);
        assert_eq!(parse_schedstat("-5 1 1"), None);
        assert_eq!(parse_schedstat("12x 1 1"), None);
    }

    #[test]
    fn this_thread_has_used_cpu_time() {
        let tid = rustix::thread::gettid().as_raw_nonzero().get();
        let Some(before) = of_thread(tid) else {
            eprintln!("skipped: no /proc/self/task/TID/schedstat here");
            return;
        };
        // Spins until the reading shows 5 ms used, rather than for a set
        // time: a host that steals the CPU does not count stolen time.
        let t = std::time::Instant::now();
        let mut x = 0u64;
        let mut after = before;
        while after < before + 5_000_000 {
            assert!(
                t.elapsed() < std::time::Duration::from_secs(10),
                "{before} -> {after} ns after 10 s of spinning"
            );
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            after = of_thread(tid).expect("read a moment ago");
        }
    }
}
