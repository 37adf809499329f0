//! A real nats-server with JetStream for the tests, on loopback, in a
//! temporary directory, and the helpers the tests share: a real Kafka
//! ([`kafka`]) and the logs shipped and their checks ([`records`]).
//!
//! The server binary is `$WEIR_NATS_SERVER`, else `nats-server` on the
//! PATH, else `~/go/bin/nats-server` (where `go install` puts it). Without
//! one a test says so and skips, unless `WEIR_REQUIRE_BROKERS` is set (as
//! the test script does once it has installed the server): then it fails.

#![allow(dead_code, unreachable_pub)]

pub mod kafka;
pub mod records;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A nats-server child process; killed on drop.
pub struct NatsServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    /// The address it listens on: loopback, or its network namespace's.
    host: String,
    port: u16,
    /// The pid whose network namespace it runs in, if not the test's.
    netns: Option<u32>,
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
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free loopback port");
        NatsServer::start_at("127.0.0.1", port, None)
    }

    /// A new server in the network namespace `net`, on its address.
    pub fn start_in(net: &NetNs) -> Option<NatsServer> {
        NatsServer::start_at(&net.inner_addr(), 4222, Some(net.holder_pid()))
    }

    fn start_at(host: &str, port: u16, netns: Option<u32>) -> Option<NatsServer> {
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
        let dir = tempfile::tempdir().unwrap();
        let mut s = NatsServer {
            bin,
            dir,
            host: host.to_owned(),
            port,
            netns,
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
                "listen: {}:{}\nserver_name: weir-test\njetstream {{\n  store_dir: {:?}\n  sync_interval: always\n}}\n",
                self.host,
                self.port,
                store.display().to_string()
            ),
        )
        .unwrap();
        conf
    }

    /// The client URL.
    pub fn url(&self) -> String {
        format!("nats://{}:{}", self.host, self.port)
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
        let mut cmd = match self.netns {
            // nsenter execs the server: the child is the server.
            Some(pid) => {
                let mut c = Command::new("nsenter");
                c.args(["-t", &pid.to_string(), "-n"]).arg(&self.bin);
                c
            }
            None => Command::new(&self.bin),
        };
        let child = cmd
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", self.bin.display()));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect((self.host.as_str(), self.port)).is_err() {
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

/// A network namespace of the test's own, joined to the test's by a veth
/// pair: a broker inside it is reached over the pair, and downing the
/// test's end cuts the network without the broker knowing.
///
/// The namespace is held by a process of its own (`unshare --net`), not
/// named under `/run/netns`: `ip netns add` bind-mounts that directory
/// on the host, where it would outlive the test. The namespace, and the
/// pair with it, go when that process is killed on drop.
pub struct NetNs {
    holder: Child,
    outer: String,
    subnet: u8,
}

impl NetNs {
    /// A new namespace, or `None` (after saying why) without root, `ip`
    /// or `unshare`; with `WEIR_REQUIRE_BROKERS` set, their absence fails.
    pub fn new() -> Option<NetNs> {
        let runs = |tool: &str, arg: &str| {
            Command::new(tool)
                .arg(arg)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok()
        };
        let why = if !is_root() {
            Some("needs root for a network namespace")
        } else if !runs("ip", "-V") {
            Some("needs ip (iproute2)")
        } else if !runs("unshare", "--version") || !runs("nsenter", "--version") {
            Some("needs unshare and nsenter (util-linux)")
        } else {
            None
        };
        if let Some(why) = why {
            assert!(
                std::env::var_os("WEIR_REQUIRE_BROKERS").is_none(),
                "WEIR_REQUIRE_BROKERS is set but the network cut test {why}"
            );
            eprintln!("skipping: {why}");
            return None;
        }
        let holder = Command::new("unshare")
            .args(["--net", "sleep", "infinity"])
            .spawn()
            .expect("start unshare");
        let id = std::process::id();
        let net = NetNs {
            outer: format!("wsh{}", id % 1_000_000),
            subnet: (id % 250) as u8,
            holder,
        };
        net.wait_unshared();
        let pid = net.holder_pid().to_string();
        let inner = format!("wsn{}", id % 1_000_000);
        net.run(
            "ip",
            &[
                "link", "add", &net.outer, "type", "veth", "peer", "name", &inner,
            ],
        );
        net.run("ip", &["link", "set", &inner, "netns", &pid]);
        net.run(
            "ip",
            &[
                "addr",
                "add",
                &format!("10.231.{}.1/30", net.subnet),
                "dev",
                &net.outer,
            ],
        );
        net.run("ip", &["link", "set", &net.outer, "up"]);
        let inside = |args: &[&str]| {
            let mut all = vec!["-t", &pid, "-n", "ip"];
            all.extend_from_slice(args);
            net.run("nsenter", &all);
        };
        inside(&[
            "addr",
            "add",
            &format!("{}/30", net.inner_addr()),
            "dev",
            &inner,
        ]);
        inside(&["link", "set", &inner, "up"]);
        inside(&["link", "set", "lo", "up"]);
        Some(net)
    }

    /// The process that holds the namespace.
    pub fn holder_pid(&self) -> u32 {
        self.holder.id()
    }

    /// Waits until the holder has left the test's network namespace
    /// (`unshare` execs `sleep` once it has).
    fn wait_unshared(&self) {
        let ns = |pid: &str| std::fs::read_link(format!("/proc/{pid}/ns/net")).ok();
        let mine = ns("self");
        let pid = self.holder_pid().to_string();
        let deadline = Instant::now() + Duration::from_secs(10);
        while ns(&pid).is_none() || ns(&pid) == mine {
            assert!(Instant::now() < deadline, "unshare --net did not start");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The broker's address, inside the namespace.
    pub fn inner_addr(&self) -> String {
        format!("10.231.{}.2", self.subnet)
    }

    /// Downs the test's end of the pair: packets stop both ways, and no
    /// reset reaches either side.
    pub fn cut(&self) {
        self.run("ip", &["link", "set", &self.outer, "down"]);
    }

    /// Brings the link back.
    pub fn restore(&self) {
        self.run("ip", &["link", "set", &self.outer, "up"]);
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let out = Command::new(tool).args(args).output().expect("run a tool");
        assert!(
            out.status.success(),
            "{tool} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
        // Gone with the namespace's end already, unless the namespace
        // outlived its holder (a broker still in it).
        let _ = Command::new("ip")
            .args(["link", "del", &self.outer])
            .stderr(Stdio::null())
            .status();
    }
}

/// Whether the test runs as root (from /proc, so that this file needs no
/// crate of its own).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1))
            == Some("0")
    })
}
