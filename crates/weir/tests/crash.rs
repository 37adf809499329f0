//! The changelog's crash test: a child `weir log write
//! --sync` is fed a steady stream of lines and SIGKILLed after a random short
//! delay, 200 times on one state directory. An index the child printed was
//! acknowledged as durable, so after reopening it must be there with its
//! line; the log must stay gap-free, decode fully and hold nothing but the
//! lines that were sent, in the order they were sent.
//!
//! Even rounds start the kill's delay (0-15 ms) at the first printed index,
//! so the kill lands among appends and commits; odd rounds start it at the
//! spawn, so it may land in start-up and in the recovery of the previous
//! round's tail. `WEIR_CRASH_SEED` replays the kill timings of a run (the
//! seed is printed first).

mod support;

use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::Weir;
use weir_log::{Log, Options};

const ROUNDS: u32 = 200;
const CHECK_EVERY: u32 = 20;
/// The longest the parent waits before the kill.
const MAX_DELAY_US: u64 = 15_000;
/// The feeder's pause after each 16 lines.
const FEED_PAUSE: Duration = Duration::from_micros(100);
/// How long a writer may take to print its first index.
const PATIENCE: Duration = Duration::from_secs(20);

/// xorshift64*: enough randomness for kill timing, and replayable.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn line(round: u32, k: u64) -> String {
    format!("r{round}-l{k}")
}

/// `(round, k)` of a name `r{round}-l{k}`.
fn parse_line(name: &[u8]) -> Option<(u32, u64)> {
    let s = std::str::from_utf8(name).ok()?;
    let (r, k) = s.strip_prefix('r')?.split_once("-l")?;
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(r) || !digits(k) {
        return None;
    }
    Some((r.parse().ok()?, k.parse().ok()?))
}

/// When the kill's delay starts counting.
#[derive(Debug, Clone, Copy)]
enum Clock {
    /// From the spawn: the kill may land while the writer starts up and
    /// recovers the previous round's tail.
    Spawn,
    /// From the first printed index: the kill lands among appends and
    /// commits.
    FirstAck,
}

/// One round: start a writer, feed it, kill it. Returns the indexes it
/// printed, in order; the i-th belongs to line `r{round}-l{i}`.
fn round(w: &Weir, round: u32, clock: Clock, delay: Duration) -> Vec<u64> {
    let mut child = w
        .cmd(&["log", "write", "--sync"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn weir log write");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let mut k = 0u64;
        let mut chunk = String::new();
        loop {
            chunk.clear();
            for _ in 0..16 {
                chunk.push_str(&line(round, k));
                chunk.push('\n');
                k += 1;
            }
            // The write fails (EPIPE) once the child is dead.
            if stdin.write_all(chunk.as_bytes()).is_err() {
                return;
            }
            // A steady stream rather than a flood: many small commits per
            // round, and a log the checks can read back quickly.
            std::thread::sleep(FEED_PAUSE);
        }
    });
    let (first_tx, first_rx) = std::sync::mpsc::channel();
    let collector = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match stdout.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
            if out.contains(&b'\n') {
                let _ = first_tx.send(());
            }
        }
        out
    });
    if let Clock::FirstAck = clock {
        // A writer that exits or hangs fails the checks below.
        let _ = first_rx.recv_timeout(PATIENCE);
    }
    std::thread::sleep(delay);
    child.kill().expect("SIGKILL the writer");
    let status = child.wait().expect("reap the writer");
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    feeder.join().expect("feeder");
    let out = collector.join().expect("collector");
    // Only whole lines count; a kill may cut the last one short.
    let whole = match out.iter().rposition(|&b| b == b'\n') {
        Some(end) => &out[..=end],
        None => &[][..],
    };
    let printed: Vec<u64> = std::str::from_utf8(whole)
        .expect("indexes are ASCII")
        .lines()
        .map(|l| {
            l.parse()
                .unwrap_or_else(|_| panic!("round {round}: bad line {l:?}"))
        })
        .collect();
    assert!(
        status.code().is_none(),
        "round {round}: writer exited with {status} instead of being killed: {stderr}"
    );
    if let Clock::FirstAck = clock {
        assert!(!printed.is_empty(), "round {round}: no index printed");
    }
    printed
}

/// Reopens the log and checks it against every acknowledged record.
fn check(w: &Weir, acked: &[(u64, String)], after_round: u32) {
    let ctx = format!("after round {after_round}");
    let log = Log::open(w.log_dir(), Options::default()).expect("reopen");
    let recs: Vec<_> = log
        .reader(log.first_index())
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{ctx}: reading the log: {e}"));
    let last = log.last_index();
    log.close().expect("close");

    assert_eq!(recs.first().map(|r| r.index), Some(1), "{ctx}: first index");
    for (k, r) in recs.iter().enumerate() {
        assert_eq!(r.index, k as u64 + 1, "{ctx}: index gap");
    }
    assert_eq!(recs.len() as u64, last, "{ctx}: reader stopped short");

    // Nothing but sent lines: rounds in order, each round's lines from l0 on
    // with none skipped or repeated.
    let mut cur: Option<(u32, u64)> = None;
    for r in &recs {
        let (round, k) = parse_line(&r.name).unwrap_or_else(|| {
            panic!(
                "{ctx}: garbage name at {}: {:?}",
                r.index,
                String::from_utf8_lossy(&r.name)
            )
        });
        let expected_k = match cur {
            Some((cr, ck)) if cr == round => ck + 1,
            Some((cr, _)) => {
                assert!(round > cr, "{ctx}: round {round} after {cr} at {}", r.index);
                0
            }
            None => 0,
        };
        assert_eq!(
            k, expected_k,
            "{ctx}: round {round} out of sequence at {}",
            r.index
        );
        cur = Some((round, k));
    }

    for (index, name) in acked {
        let r = recs
            .get(*index as usize - 1)
            .unwrap_or_else(|| panic!("{ctx}: acknowledged index {index} lost (last {last})"));
        assert_eq!(r.name, name.as_bytes(), "{ctx}: index {index}");
    }

    let v = w.run(&["log", "verify"], b"");
    assert!(
        v.status.success(),
        "{ctx}: verify failed: {}{}",
        String::from_utf8_lossy(&v.stdout),
        String::from_utf8_lossy(&v.stderr)
    );
}

#[test]
fn sigkill_never_loses_an_acknowledged_record() {
    let seed = std::env::var("WEIR_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("crash test seed: WEIR_CRASH_SEED={seed}");
    let mut rng = XorShift(seed);
    let w = Weir::new();
    let started = Instant::now();
    let mut acked: Vec<(u64, String)> = Vec::new();
    let mut rounds_with_acks = 0;
    for r in 0..ROUNDS {
        let delay = Duration::from_micros(rng.next() % (MAX_DELAY_US + 1));
        let clock = if r % 2 == 0 {
            Clock::FirstAck
        } else {
            Clock::Spawn
        };
        let printed = round(&w, r, clock, delay);
        if !printed.is_empty() {
            rounds_with_acks += 1;
        }
        // One writer at a time: its indexes are consecutive, and later
        // than any acknowledged before.
        assert!(
            printed.windows(2).all(|p| p[1] == p[0] + 1),
            "round {r}: printed indexes not consecutive"
        );
        if let (Some(prev), Some(first)) = (acked.last(), printed.first()) {
            assert!(first > &prev.0, "round {r}: index {first} after {}", prev.0);
        }
        for (i, idx) in printed.iter().enumerate() {
            acked.push((*idx, line(r, i as u64)));
        }
        if (r + 1) % CHECK_EVERY == 0 {
            check(&w, &acked, r);
        }
    }
    eprintln!(
        "crash test: {ROUNDS} rounds, {} acknowledged records, {rounds_with_acks} rounds \
         acknowledged something, {:?}",
        acked.len(),
        started.elapsed()
    );
}

#[test]
fn line_names_parse() {
    assert_eq!(parse_line(line(12, 345).as_bytes()), Some((12, 345)));
    for bad in [
        &b"r1-l"[..],
        b"r-l1",
        b"x1-l2",
        b"r1-l2x",
        b"r1l2",
        b"r1-l+2",
        b"",
    ] {
        assert_eq!(parse_line(bad), None, "{:?}", String::from_utf8_lossy(bad));
    }
}
