//! Errors as the CLI and the daemon print them: each cause once.
//!
//! A variant whose message includes its cause and that also returns it
//! from `source()` has the cause printed twice by every chain printer
//! (`{:#}`, `error_chain`), as in "...: Read-only file system (os error
//! 30): Read-only file system (os error 30)".

use std::io;
use std::path::PathBuf;

use weir_view::chain::error_chain;

fn erofs() -> io::Error {
    io::Error::from_raw_os_error(30)
}

/// How many times `needle` occurs in `hay`.
fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// Checks both printers: `error_chain` (daemon, API) and anyhow's `{:#}`
/// (CLI), each showing every cause in `causes` exactly once.
fn check<E: std::error::Error + Send + Sync + 'static>(e: E, causes: &[&str]) {
    let chain = error_chain(&e);
    let cli = format!("{:#}", anyhow::Error::new(e).context("doing it"));
    for text in [&chain, &cli] {
        for c in causes {
            assert_eq!(count(text, c), 1, "{c:?} in {text:?}");
        }
    }
}

#[test]
fn each_cause_is_printed_once() {
    let os = erofs().to_string();
    let log_io = || weir_log::Error::Io {
        op: "creating",
        path: PathBuf::from("/var/lib/weir/log"),
        source: erofs(),
    };
    check(log_io(), &[&os, "creating /var/lib/weir/log"]);
    // Nested: the mount tracker's error wraps the log's.
    check(
        weir_mounts::Error::Log(log_io()),
        &[&os, "/var/lib/weir/log"],
    );

    let json = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
    let json_text = json.to_string();
    check(
        weir_log::Error::BadConsumerState {
            path: PathBuf::from("/s/consumers.json"),
            source: json,
        },
        &[&json_text, "/s/consumers.json"],
    );

    let line = weir_mounts::mountinfo::ParseError::new(
        2,
        weir_mounts::mountinfo::ParseErrorKind::NoSeparator,
    );
    let line_text = line.to_string();
    check(weir_mounts::Error::Mountinfo(line), &[&line_text]);

    let errno = rustix::io::Errno::ACCESS;
    check(
        weir_daemon::api::PeerError::Cred(errno),
        &[&errno.to_string(), "SO_PEERCRED"],
    );
    check(
        weir_daemon::Error::Api(weir_daemon::api::Error::Accept(erofs())),
        &[&os, "accepting a connection"],
    );
}
