//! A real nats-server with JetStream for the tests, on loopback, in a
//! temporary directory, and the helpers the tests share.
//!
//! The server binary is `$WEIR_NATS_SERVER`, else `nats-server` on the
//! PATH, else `~/go/bin/nats-server` (where `go install` puts it). Without
//! one a test says so and skips, unless `WEIR_REQUIRE_BROKERS` is set (as
//! the test script does once it has installed the server): then it fails.

#![allow(dead_code, unreachable_pub)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A nats-server child process; killed on drop.
pub struct NatsServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

fn find_server() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WEIR_NATS_SERVER") {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("nats-server"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let p = PathBuf::from(std::env::var_os("HOME")?).join("go/bin/nats-server");
        p.is_file().then_some(p)
    })
}

impl NatsServer {
    /// A new server with an empty store, or `None` (after saying why) if
    /// there is no server binary.
    pub fn start() -> Option<NatsServer> {
        let Some(bin) = find_server() else {
            assert!(
                std::env::var_os("WEIR_REQUIRE_BROKERS").is_none(),
                "WEIR_REQUIRE_BROKERS is set but no nats-server was found"
            );
            eprintln!(
                "skipping: no nats-server (set WEIR_NATS_SERVER, or go install github.com/nats-io/nats-server/v2@v2.15.2)"
            );
            return None;
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free loopback port");
        let dir = tempfile::tempdir().unwrap();
        let mut s = NatsServer {
            bin,
            dir,
            port,
            child: None,
        };
        s.restart();
        Some(s)
    }

    fn config(&self) -> PathBuf {
        let conf = self.dir.path().join("server.conf");
        let store = self.dir.path().join("js");
        std::fs::write(
            &conf,
            format!(
                "listen: 127.0.0.1:{}\nserver_name: weir-test\njetstream {{\n  store_dir: {:?}\n  sync_interval: always\n}}\n",
                self.port,
                store.display().to_string()
            ),
        )
        .unwrap();
        conf
    }

    /// The client URL.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The server's directory (its log is `server.log` there).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Kills the server (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// (Re)starts the server on the same port and store, and waits until
    /// it takes connections.
    pub fn restart(&mut self) {
        self.kill();
        let conf = self.config();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("server.log"))
            .unwrap();
        let child = Command::new(&self.bin)
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", self.bin.display()));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nats-server did not start; see {}",
                self.dir.path().join("server.log").display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}
