//! End-to-end tests of `weir log`: write and tail (with bytes that are not
//! UTF-8), consumers across invocations, masks, following with and
//! without a consumer, verify on a damaged segment and its progress bar on
//! a terminal, the writer lock seen from a second process, and a closed
//! stdout.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::json;
use support::{Weir, names};

#[test]
fn write_and_tail_round_trip_bytes_exactly() {
    let w = Weir::new();
    let marks: [&[u8]; 4] = [b"alpha", b"caf\xe9", b"", b"with space\tand tab"];
    assert_eq!(w.write(&["--sync"], &marks), vec![1, 2, 3, 4]);
    assert_eq!(w.write(&["--type", "CREAT"], &[b"c1", b"c2"]), vec![5, 6]);
    // A last line without a newline still counts.
    let out = w.ok(&["log", "write", "--type", "unlnk"], b"u1\nu2");
    assert_eq!(support::indexes(&out), vec![7, 8]);

    let all = w.tail_json(&[]);
    let idx: Vec<u64> = all.iter().map(|r| r["index"].as_u64().unwrap()).collect();
    assert_eq!(idx, (1..=8).collect::<Vec<_>>());
    let mut want: Vec<Vec<u8>> = marks.iter().map(|m| m.to_vec()).collect();
    want.extend([
        b"c1".to_vec(),
        b"c2".to_vec(),
        b"u1".to_vec(),
        b"u2".to_vec(),
    ]);
    assert_eq!(names(&all), want);
    // Not UTF-8: an array of byte values; UTF-8: a string.
    assert_eq!(all[1]["name"], json!([99, 97, 102, 0xe9]));
    assert_eq!(all[0]["name"], json!("alpha"));
    assert_eq!(all[0]["type"], json!("MARK"));
    assert_eq!(all[4]["type"], json!("CREAT"));
    assert_eq!(all[4]["type_code"], json!(1));
    assert_eq!(all[6]["type"], json!("UNLNK"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    for r in &all {
        let t = r["time"].as_u64().unwrap();
        assert!(
            t <= now && now - t < 600_000_000_000,
            "time {t} vs now {now}"
        );
        let iso = r["time_iso"].as_str().unwrap();
        assert!(iso.len() == 30 && iso.ends_with('Z'), "{iso}");
        assert_eq!(&iso[20..29], format!("{:09}", t % 1_000_000_000));
        assert_eq!(r["target"], json!(""));
        assert_eq!(r["fields"], json!({}));
    }

    let creat = w.tail_json(&["--mask", "CREAT"]);
    assert_eq!(names(&creat), vec![b"c1".to_vec(), b"c2".to_vec()]);
    let not_mark = w.tail_json(&["--mask", "all,-MARK", "--from", "6"]);
    assert_eq!(
        names(&not_mark),
        vec![b"c2".to_vec(), b"u1".to_vec(), b"u2".to_vec()]
    );

    // As through the daemon: the next index is fine, a later one is not
    // (it used to print nothing and exit 0 without a daemon, 1 with one).
    assert_eq!(w.ok(&["log", "tail", "--from", "9"], b""), "");
    let past = w.run(&["log", "tail", "--from", "10"], b"");
    assert_eq!(past.status.code(), Some(1));
    let err = String::from_utf8_lossy(&past.stderr);
    assert!(
        err.contains("past the end of the log (the next index is 9)"),
        "{err}"
    );

    let text = w.ok(&["log", "tail", "--from", "2", "--mask", "MARK"], b"");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("2 MARK "), "{}", lines[0]);
    assert!(lines[0].ends_with(" caf\\xe9"), "{}", lines[0]);
    assert!(
        lines[2].ends_with(" with space\\x09and tab"),
        "{}",
        lines[2]
    );
}

#[test]
fn consumers_persist_and_drive_tail() {
    let w = Weir::new();
    assert_eq!(
        w.ok(
            &["log", "consumer", "register", "idx", "--mask", "CREAT"],
            b""
        ),
        "1\n"
    );
    assert_eq!(
        w.ok(&["log", "consumer", "register", "everything"], b""),
        "2\n"
    );
    let dup = w.run(&["log", "consumer", "register", "idx"], b"");
    assert_eq!(dup.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&dup.stderr).contains("already exists"));

    w.write(&["--type", "CREAT"], &[b"a", b"b", b"c"]);
    w.write(&[], &[b"m"]);
    w.write(&["--type", "CREAT"], &[b"d"]);

    let list = consumers(&w);
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["name"], json!("idx"));
    assert_eq!(list[0]["mask"], json!("CREAT"));
    assert_eq!(list[0]["cleared"], json!(0));
    assert_eq!(list[0]["lag"], json!(5));
    assert_eq!(list[1]["name"], json!("everything"));
    assert_eq!(list[1]["mask"], json!("all"));

    w.ok(&["log", "consumer", "clear", "idx", "2"], b"");
    let list = consumers(&w);
    assert_eq!(
        (list[0]["cleared"].clone(), list[0]["lag"].clone()),
        (json!(2), json!(3))
    );
    assert_eq!(list[1]["cleared"], json!(0));

    // From just after the cursor, through the consumer's mask.
    let recs = w.tail_json(&["--consumer", "idx"]);
    let idx: Vec<u64> = recs.iter().map(|r| r["index"].as_u64().unwrap()).collect();
    assert_eq!(idx, vec![3, 5]);
    assert_eq!(names(&recs), vec![b"c".to_vec(), b"d".to_vec()]);
    // --mask narrows the consumer's mask.
    let marks = w.tail_json(&["--consumer", "everything", "--mask", "MARK"]);
    assert_eq!(names(&marks), vec![b"m".to_vec()]);

    // Clearing everything (0) and the text list.
    w.ok(&["log", "consumer", "clear", "everything", "0"], b"");
    let text = w.ok(&["log", "consumer", "list"], b"");
    assert!(
        text.lines()
            .any(|l| l.contains("everything") && l.contains(" 5 ")),
        "{text}"
    );
    let beyond = w.run(&["log", "consumer", "clear", "idx", "99"], b"");
    assert_eq!(beyond.status.code(), Some(1));

    w.ok(&["log", "consumer", "deregister", "everything"], b"");
    let list = consumers(&w);
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["name"], json!("idx"));
    let gone = w.run(&["log", "consumer", "deregister", "everything"], b"");
    assert_eq!(gone.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&gone.stderr).contains("no such consumer"));

    let stats: serde_json::Value =
        serde_json::from_str(&w.ok(&["log", "stats", "--json"], b"")).unwrap();
    assert_eq!(stats["last_index"], json!(5));
    assert_eq!(stats["spare_bytes"], json!(0), "five records make no spare");
    assert_eq!(stats["consumers"][0]["lag"], json!(3));
}

fn consumers(w: &Weir) -> Vec<serde_json::Value> {
    w.ok(&["log", "consumer", "list", "--json"], b"")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn verify_reports_the_first_damaged_record() {
    let w = Weir::new();
    let lines: Vec<Vec<u8>> = (1..=10)
        .map(|k| format!("line-{k:02}").into_bytes())
        .collect();
    let refs: Vec<&[u8]> = lines.iter().map(|l| &l[..]).collect();
    w.write(&["--sync"], &refs);
    let out = w.ok(&["log", "verify"], b"");
    assert!(out.contains("10 records"), "{out}");

    let seg = std::fs::read_dir(w.log_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "wlog"))
        .expect("a segment");
    let mut bytes = std::fs::read(&seg).unwrap();
    let find = |needle: &[u8]| {
        bytes
            .windows(needle.len())
            .position(|w| w == needle)
            .unwrap()
    };
    let (before, at) = (find(b"line-05"), find(b"line-06"));
    bytes[at + 5] ^= 0x01;
    std::fs::write(&seg, &bytes).unwrap();

    let bad = w.run(&["log", "verify"], b"");
    assert_eq!(bad.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&bad.stdout);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stdout.contains("(index 6)"), "{stdout}");
    assert!(stderr.starts_with("weir: error:"), "{stderr}");
    let offset: usize = stdout
        .split("byte offset ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no offset in {stdout}"));
    assert!(
        before < offset && offset <= at,
        "{before} < {offset} <= {at}"
    );
    assert!(stdout.contains(&seg.display().to_string()), "{stdout}");
}

#[test]
fn a_second_writer_is_told_who_holds_the_lock() {
    let w = Weir::new();
    let mut holder = w
        .cmd(&["log", "write", "--sync"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = holder.stdin.take().unwrap();
    stdin.write_all(b"held\n").unwrap();
    let mut first = String::new();
    BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "1\n");

    let pid = format!("pid {}", holder.id());
    for args in [
        &["log", "write"][..],
        &["log", "consumer", "register", "c"][..],
    ] {
        let out = w.run(args, b"x\n");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("locked") && err.contains(&pid), "{err}");
        assert!(out.stdout.is_empty());
    }
    // Readers need no lock.
    assert_eq!(names(&w.tail_json(&[])), vec![b"held".to_vec()]);

    drop(stdin);
    assert!(holder.wait().unwrap().success());
    assert_eq!(w.write(&[], &[b"after"]), vec![2]);
}

#[test]
fn read_only_commands_need_an_existing_log() {
    let w = Weir::new();
    for args in [
        &["log", "tail"][..],
        &["log", "stats"][..],
        &["log", "verify"][..],
        &["log", "consumer", "list"][..],
    ] {
        let out = w.run(args, b"");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("no log in"));
    }
    assert!(!w.log_dir().exists());
    assert_eq!(w.run(&["log", "frobnicate"], b"").status.code(), Some(2));
}

#[test]
fn follow_prints_new_records_and_stops_cleanly() {
    use rustix::process::{Pid, Signal, kill_process};
    let w = Weir::new();
    w.write(&[], &[b"before"]);
    let mut tail = w
        .cmd(&["log", "tail", "-f", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(tail.stdout.take().unwrap()).lines();
    let mut next_name = || {
        let l = lines.next().expect("a line").expect("read");
        let v: serde_json::Value = serde_json::from_str(&l).unwrap();
        v["name"].clone()
    };
    assert_eq!(next_name(), json!("before"));
    // Written by another process after tail caught up.
    w.write(&["--type", "CREAT"], &[b"after", b"caf\xe9"]);
    assert_eq!(next_name(), json!("after"));
    assert_eq!(next_name(), json!([99, 97, 102, 0xe9]));

    kill_process(Pid::from_child(&tail), Signal::INT).unwrap();
    assert!(tail.wait().unwrap().success(), "tail -f after SIGINT");
}

#[test]
fn a_closed_stdout_ends_tail_quietly() {
    let w = Weir::new();
    w.write(&[], &[b"one"]);
    let mut tail = w
        .cmd(&["log", "tail", "-f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(tail.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.contains(" one"), "{first}");
    drop(out);
    // The next record it prints hits the closed pipe.
    w.write(&[], &[b"two"]);
    let done = tail.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(
        done.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
}

/// Regression: `seq 1 200000 | weir log write | head -1` exited 0 having
/// appended only part of its input, because `main` took any broken pipe
/// for a reader that had seen enough.
#[test]
fn a_closed_stdout_makes_write_fail_and_say_how_far_it_got() {
    let w = Weir::new();
    let mut write = w
        .cmd(&["log", "write"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = write.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let input: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
        // Fails once weir is gone: it stops reading with its stdout.
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut out = BufReader::new(write.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert_eq!(first, "1\n");
    // `head -1`: the indexes of 200,000 lines are far more than a pipe
    // holds, so weir is still writing them.
    drop(out);
    let done = write.wait_with_output().unwrap();
    feeder.join().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "{err}");
    let appended: u64 = err
        .trim_end()
        .strip_suffix(" lines were appended")
        .and_then(|e| e.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of appended lines: {err}"));
    assert!(err.contains("stdout was closed"), "{err}");
    let stats: serde_json::Value =
        serde_json::from_str(&w.ok(&["log", "stats", "--json"], b"")).unwrap();
    assert_eq!(stats["records"], json!(appended), "{err}");
    assert!(appended < 200_000, "{err}");
}

/// Regression: clap took a mask that starts with a removal (`-CREAT,-MARK`,
/// docs/cli.md's own example form) for options and refused it.
#[test]
fn masks_may_start_with_a_removal() {
    let w = Weir::new();
    w.write(&[], &[b"mark"]);
    w.write(&["--type", "CREAT"], &[b"creat"]);
    w.write(&["--type", "UNLNK"], &[b"unlnk"]);
    let kept = w.tail_json(&["--mask", "-CREAT,-MARK"]);
    assert_eq!(names(&kept), vec![b"unlnk".to_vec()]);
    let text = w.ok(&["log", "tail", "--mask", "-MARK,-OPEN,-CLOSE"], b"");
    assert_eq!(text.lines().count(), 2, "{text}");

    w.ok(
        &["log", "consumer", "register", "c", "--mask", "-MARK"],
        b"",
    );
    w.ok(
        &["log", "consumer", "register", "d", "--mask", "^MARK"],
        b"",
    );
    let list = consumers(&w);
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["mask"], list[1]["mask"]);
    w.write(&[], &[b"unseen"]);
    w.write(&["--type", "CREAT"], &[b"seen"]);
    let read = w.tail_json(&["--consumer", "c"]);
    assert_eq!(names(&read), vec![b"seen".to_vec()]);
}

#[test]
fn follow_with_a_consumer_starts_at_its_cursor_and_keeps_its_mask() {
    use rustix::process::{Pid, Signal, kill_process};
    let w = Weir::new();
    w.ok(
        &["log", "consumer", "register", "c", "--mask", "CREAT"],
        b"",
    );
    w.write(&["--type", "CREAT"], &[b"a", b"b"]);
    w.ok(&["log", "consumer", "clear", "c", "1"], b"");
    let mut tail = w
        .cmd(&["log", "tail", "--consumer", "c", "--follow", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(tail.stdout.take().unwrap()).lines();
    let mut next = || {
        let l = lines.next().expect("a line").expect("read");
        let v: serde_json::Value = serde_json::from_str(&l).unwrap();
        (v["index"].as_u64().unwrap(), v["name"].clone())
    };
    // The cursor is past 1, so the first record is 2.
    assert_eq!(next(), (2, json!("b")));
    // Written by another process after tail caught up: the MARK is not in
    // the consumer's mask, the CREAT after it is.
    w.write(&[], &[b"m"]);
    w.write(&["--type", "CREAT"], &[b"c"]);
    assert_eq!(next(), (4, json!("c")));

    kill_process(Pid::from_child(&tail), Signal::INT).unwrap();
    assert!(tail.wait().unwrap().success(), "tail -f after SIGINT");
    // Following reads; it does not clear.
    assert_eq!(consumers(&w)[0]["cleared"], json!(1));
}

#[test]
fn verify_draws_its_progress_bar_only_on_a_terminal() {
    // `script` runs the command on a pseudo-terminal and copies what it
    // draws there to its own stdout.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: script(1) (util-linux) is not installed");
        return;
    }
    let w = Weir::new();
    let lines: Vec<Vec<u8>> = (0..2000)
        .map(|k| format!("line {k}").into_bytes())
        .collect();
    let lines: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
    w.write(&[], &lines);

    let piped = w.run(&["log", "verify"], b"");
    assert!(piped.status.success());
    assert!(
        !String::from_utf8_lossy(&piped.stderr).contains("verifying"),
        "a bar on a pipe: {piped:?}"
    );

    let verify = w.cmd(&["log", "verify"]);
    let line: Vec<String> = std::iter::once(verify.get_program())
        .chain(verify.get_args())
        .map(|a| shell_quote(&a.to_string_lossy()))
        .collect();
    let out = Command::new("script")
        .args(["-qec", &line.join(" "), "/dev/null"])
        .env("WEIR_SOCKET", w.socket())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        screen.contains("verifying"),
        "no bar on a terminal: {screen:?}"
    );
    assert!(screen.contains("indexes 1-2000: ok"), "{screen:?}");
}

/// `s` as one word for `sh -c`.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
