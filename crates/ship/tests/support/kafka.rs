//! A real Apache Kafka for the tests: one process in KRaft mode (broker
//! and controller), on loopback, in a temporary directory; with
//! [`KafkaBroker::start_tls`], a TLS listener beside the plaintext one,
//! its certificate made by `openssl` for the test alone; with
//! [`KafkaBroker::start_in`], in a network namespace whose link the test
//! can cut.
//!
//! The jars are `$WEIR_KAFKA_LIB` (a directory of them), else the test
//! script's cache (`~/.cache/weir/kafka-4.4.0/lib`, which it fills from
//! Maven Central), and Java is `java` on the PATH. Without either a test says so and skips, unless
//! `WEIR_REQUIRE_BROKERS` is set: then it fails.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A Kafka child process; killed on drop.
pub struct KafkaBroker {
    lib: PathBuf,
    dir: tempfile::TempDir,
    /// The address it listens on: loopback, or its network namespace's.
    host: String,
    /// The pid whose network namespace it runs in, if not the test's.
    netns: Option<u32>,
    port: u16,
    controller: u16,
    /// The TLS listener's port, if it has one.
    tls: Option<u16>,
    child: Option<Child>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn skip(why: &str) -> Option<KafkaBroker> {
    assert!(
        std::env::var_os("WEIR_REQUIRE_BROKERS").is_none(),
        "WEIR_REQUIRE_BROKERS is set but {why}"
    );
    eprintln!("skipping: {why} (scripts/test.sh fetches Kafka and sets WEIR_KAFKA_LIB)");
    None
}

impl KafkaBroker {
    /// A new broker with empty storage, or `None` (after saying why)
    /// without Kafka's jars or Java.
    pub fn start() -> Option<KafkaBroker> {
        KafkaBroker::start_with(false, None)
    }

    /// A new broker in the network namespace of process `netns`, on its
    /// address `host` (as a `NetNs` of the tests gives them).
    pub fn start_in(host: &str, netns: u32) -> Option<KafkaBroker> {
        KafkaBroker::start_with(false, Some((host, netns)))
    }

    /// A new broker with a TLS listener too ([`KafkaBroker::tls_brokers`],
    /// trusting [`KafkaBroker::ca`]), or `None` as [`KafkaBroker::start`]
    /// gives, or without `openssl` to make its certificate.
    pub fn start_tls() -> Option<KafkaBroker> {
        KafkaBroker::start_with(true, None)
    }

    fn start_with(tls: bool, net: Option<(&str, u32)>) -> Option<KafkaBroker> {
        let cached = || {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| Some(PathBuf::from(std::env::var_os("HOME")?).join(".cache")))?;
            let lib = cache.join("weir/kafka-4.4.0/lib");
            lib.join("kafka_2.13-4.4.0.jar").is_file().then_some(lib)
        };
        let Some(lib) = std::env::var_os("WEIR_KAFKA_LIB")
            .map(PathBuf::from)
            .or_else(cached)
        else {
            return skip(
                "no Kafka jars: WEIR_KAFKA_LIB is not set and the test script's cache is empty",
            );
        };
        if !lib.is_dir() {
            return skip("WEIR_KAFKA_LIB is not a directory");
        }
        let java = Command::new("java")
            .arg("-version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !java.is_ok_and(|s| s.success()) {
            return skip("there is no java");
        }
        let mut k = KafkaBroker {
            lib,
            dir: tempfile::tempdir().unwrap(),
            // A namespace of the test's own has every port free.
            host: net.map_or("127.0.0.1", |(h, _)| h).to_owned(),
            netns: net.map(|(_, pid)| pid),
            port: net.map_or_else(free_port, |_| 9092),
            controller: net.map_or_else(free_port, |_| 9093),
            tls: tls.then(free_port),
            child: None,
        };
        if tls && !k.make_certificate() {
            return skip("there is no openssl to make the TLS listener's certificate");
        }
        k.configure();
        k.format();
        k.restart();
        Some(k)
    }

    /// The directory of Kafka's jars.
    pub fn lib(&self) -> &std::path::Path {
        &self.lib
    }

    /// The bootstrap address.
    pub fn brokers(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The TLS listener's bootstrap address.
    pub fn tls_brokers(&self) -> String {
        format!("127.0.0.1:{}", self.tls.expect("a broker with TLS"))
    }

    /// The certificate a client trusts to reach the TLS listener (it is
    /// self-signed, for 127.0.0.1).
    pub fn ca(&self) -> PathBuf {
        self.path("cert.pem")
    }

    /// A self-signed certificate for 127.0.0.1 and its key, in one PEM
    /// file as Kafka's PEM key store takes them; false without openssl.
    fn make_certificate(&self) -> bool {
        let made = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            ])
            .args([
                "-subj",
                "/CN=weir-test",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
            ])
            .arg("-keyout")
            .arg(self.path("key.pem"))
            .arg("-out")
            .arg(self.ca())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !made.is_ok_and(|s| s.success()) {
            return false;
        }
        let key = std::fs::read(self.path("key.pem")).unwrap();
        let cert = std::fs::read(self.ca()).unwrap();
        std::fs::write(self.path("keystore.pem"), [key, cert].concat()).unwrap();
        true
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A `java` with Kafka's jars on its class path and its logs to the
    /// broker's directory, in the broker's network namespace.
    pub fn java(&self) -> Command {
        let mut c = match self.netns {
            Some(pid) => {
                let mut c = Command::new("nsenter");
                c.args(["-t", &pid.to_string(), "-n", "java"]);
                c
            }
            None => Command::new("java"),
        };
        c.arg(format!(
            "-Dlog4j2.configurationFile={}",
            self.path("log4j2.properties").display()
        ))
        .arg(format!("-Dkafka.logs.dir={}", self.dir.path().display()))
        .arg("-cp")
        .arg(format!("{}/*", self.lib.display()));
        c
    }

    /// One node for everything: every internal topic with one replica,
    /// and no topic made by a client's mere mention of it.
    fn configure(&self) {
        let (h, p, c) = (&self.host, self.port, self.controller);
        let (ssl, ssl_map, ssl_store) = match self.tls {
            Some(t) => (
                format!(",SSL://127.0.0.1:{t}"),
                ",SSL:SSL",
                format!(
                    "listener.name.ssl.ssl.keystore.type=PEM\n\
                     listener.name.ssl.ssl.keystore.location={}\n",
                    self.path("keystore.pem").display()
                ),
            ),
            None => (String::new(), "", String::new()),
        };
        let props = format!(
            "process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers={h}:{c}
listeners=PLAINTEXT://{h}:{p},CONTROLLER://{h}:{c}{ssl}
advertised.listeners=PLAINTEXT://{h}:{p},CONTROLLER://{h}:{c}{ssl}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT{ssl_map}
{ssl_store}log.dirs={}
num.partitions=1
default.replication.factor=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.flush.interval.messages=1
",
            self.path("data").display()
        );
        std::fs::write(self.path("server.properties"), props).unwrap();
        std::fs::write(
            self.path("log4j2.properties"),
            "status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = FILE
",
        )
        .unwrap();
    }

    fn format(&self) {
        // A cluster id is 16 random bytes in URL-safe base64.
        let mut bytes = [0u8; 16];
        std::io::Read::read_exact(
            &mut std::fs::File::open("/dev/urandom").unwrap(),
            &mut bytes,
        )
        .unwrap();
        let cluster = base64_url(&bytes);
        let out = self
            .java()
            .args(["kafka.tools.StorageTool", "format", "--standalone"])
            // One `=` word: an id may start with `-`, which would
            // otherwise read as an option.
            .arg(format!("--cluster-id={cluster}"))
            .arg("-c")
            .arg(self.path("server.properties"))
            .output()
            .expect("running Kafka's StorageTool");
        assert!(
            out.status.success(),
            "formatting Kafka's storage: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Kills the broker (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// (Re)starts the broker on the same ports and storage, and waits
    /// until it serves.
    pub fn restart(&mut self) {
        self.kill();
        let log_len = std::fs::metadata(self.path("server.log")).map_or(0, |m| m.len());
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path("kafka.out"))
            .unwrap();
        let child = self
            .java()
            .args(["-Xms256m", "-Xmx512m", "-XX:+UseG1GC"])
            .arg("kafka.Kafka")
            .arg(self.path("server.properties"))
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("starting Kafka");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let log = std::fs::read(self.path("server.log")).unwrap_or_default();
            let started = log
                .get(usize::try_from(log_len).unwrap_or(0)..)
                .is_some_and(|new| String::from_utf8_lossy(new).contains("Kafka Server started"));
            if started && std::net::TcpStream::connect((self.host.as_str(), self.port)).is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "Kafka did not start; see {}",
                self.path("server.log").display()
            );
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                panic!(
                    "Kafka exited ({status}): {}",
                    std::fs::read_to_string(self.path("kafka.out")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for KafkaBroker {
    fn drop(&mut self) {
        self.kill();
    }
}

fn base64_url(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, &b| n << 8 | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(char::from(A[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}
