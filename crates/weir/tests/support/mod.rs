//! Running the `weir` binary against a temporary state directory, and
//! reading its JSON output back into bytes. Shared by the CLI test files;
//! each uses a different part, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A state directory that lives as long as the test.
pub(crate) struct Weir {
    dir: tempfile::TempDir,
    /// `--config` for every command: `/dev/null` (no settings) unless the
    /// test sets one, so that no test reads the machine's
    /// /etc/weir/weir.toml.
    config: PathBuf,
}

impl Weir {
    pub(crate) fn new() -> Weir {
        Weir {
            dir: tempfile::tempdir().expect("temporary directory"),
            config: PathBuf::from("/dev/null"),
        }
    }

    /// Writes `toml` as the configuration file every later command is
    /// given, and returns its path.
    pub(crate) fn set_config(&mut self, toml: &str) -> PathBuf {
        let path = self.dir.path().join("weir.toml");
        std::fs::write(&path, toml).expect("write the configuration");
        self.config = path.clone();
        path
    }

    pub(crate) fn state_dir(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn log_dir(&self) -> PathBuf {
        self.dir.path().join("log")
    }

    /// The socket of this state directory's daemon, if one is started
    /// (`weir run`); nothing listens there otherwise.
    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.path().join("weir.sock")
    }

    /// `weir --state-dir DIR --config FILE ARGS...`, not started; without
    /// `--config FILE` when ARGS give their own (clap takes it once).
    /// `$WEIR_SOCKET` points into DIR, so a test never reaches (or, with
    /// `weir run`, takes the place of) a daemon on the machine's socket.
    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_weir"));
        c.env("WEIR_SOCKET", self.socket())
            .arg("--state-dir")
            .arg(self.dir.path());
        if !args.contains(&"--config") {
            c.arg("--config").arg(&self.config);
        }
        c.args(args);
        c
    }

    /// Runs `weir ARGS...` with `input` on stdin and waits for it.
    pub(crate) fn run(&self, args: &[&str], input: &[u8]) -> Output {
        let mut child = self
            .cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn weir");
        let mut stdin = child.stdin.take().expect("stdin");
        // A command that fails early (say, on the lock) may exit unread.
        match stdin.write_all(input) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => panic!("write stdin: {e}"),
            _ => {}
        }
        drop(stdin);
        child.wait_with_output().expect("wait for weir")
    }

    /// Runs `weir ARGS...`, asserts it succeeded, and returns its stdout.
    pub(crate) fn ok(&self, args: &[&str], input: &[u8]) -> String {
        let out = self.run(args, input);
        assert!(
            out.status.success(),
            "weir {args:?} failed with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("stdout is UTF-8")
    }

    /// `weir log write` of `lines` (each followed by a newline); returns the
    /// printed indexes.
    pub(crate) fn write(&self, extra: &[&str], lines: &[&[u8]]) -> Vec<u64> {
        let mut input = Vec::new();
        for l in lines {
            input.extend_from_slice(l);
            input.push(b'\n');
        }
        let mut args = vec!["log", "write"];
        args.extend_from_slice(extra);
        indexes(&self.ok(&args, &input))
    }

    /// `weir log tail --json EXTRA...`, parsed.
    pub(crate) fn tail_json(&self, extra: &[&str]) -> Vec<Value> {
        let mut args = vec!["log", "tail", "--json"];
        args.extend_from_slice(extra);
        self.ok(&args, b"")
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON {l:?}: {e}")))
            .collect()
    }
}

/// One index per line.
pub(crate) fn indexes(stdout: &str) -> Vec<u64> {
    stdout
        .lines()
        .map(|l| l.parse().unwrap_or_else(|_| panic!("not an index: {l:?}")))
        .collect()
}

/// Bytes from their JSON form: a string (UTF-8) or an array of byte values.
pub(crate) fn json_bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Array(a) => a
            .iter()
            .map(|b| {
                let n = b.as_u64().expect("a byte value");
                u8::try_from(n).expect("a byte value 0-255")
            })
            .collect(),
        other => panic!("not a bytes value: {other}"),
    }
}

/// The names of JSON records, as bytes.
pub(crate) fn names(records: &[Value]) -> Vec<Vec<u8>> {
    records.iter().map(|r| json_bytes(&r["name"])).collect()
}
