//! The bench's nats-server (its own store on a disk, every batch fsynced
//! before its acknowledgement), `nats bench` as the peer, and CPU and
//! memory read from `/proc`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// `$WEIR_NATS_SERVER` (or `$WEIR_NATS_CLI`), else the tool on the PATH,
/// else in `~/go/bin`, where `go install` puts it.
pub(super) fn find(tool: &str) -> Option<PathBuf> {
    let var = if tool == "nats" {
        "WEIR_NATS_CLI"
    } else {
        "WEIR_NATS_SERVER"
    };
    if let Some(p) = std::env::var_os(var) {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(tool))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let p = PathBuf::from(std::env::var_os("HOME")?)
            .join("go/bin")
            .join(tool);
        p.is_file().then_some(p)
    })
}

/// A nats-server child; killed on drop.
pub(super) struct Broker {
    child: Child,
    _dir: tempfile::TempDir,
    port: u16,
}

impl Broker {
    pub(super) fn start(bin: &Path, under: &Path) -> Result<Broker> {
        let dir = tempfile::tempdir_in(under)?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let conf = dir.path().join("server.conf");
        std::fs::write(
            &conf,
            format!(
                "listen: 127.0.0.1:{port}\nserver_name: weir-bench\nmax_payload: 8MB\njetstream {{\n  store_dir: {:?}\n  sync_interval: always\n}}\n",
                dir.path().join("js").display().to_string()
            ),
        )?;
        let child = Command::new(bin)
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let b = Broker {
            child,
            _dir: dir,
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                bail!("nats-server did not start");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(b)
    }

    pub(super) fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The server's CPU time so far, seconds.
    pub(super) fn cpu(&self) -> Result<f64> {
        tasks_cpu(&format!("/proc/{}/task", self.child.id()), None)
    }

    /// The server's resident memory, MiB.
    pub(super) fn rss_mib(&self) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .context("VmRSS in /proc/PID/status")?;
        Ok(kib / 1024)
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The CPU time, seconds, of this process's threads whose names start
/// with one of `prefixes` (the runtime's, and librdkafka's `rdk:...`).
pub(super) fn threads_cpu(prefixes: &[&str]) -> Result<f64> {
    tasks_cpu(
        "/proc/self/task",
        Some(&|comm: &str| prefixes.iter().any(|p| comm.starts_with(p))),
    )
}

/// The summed on-CPU time (`schedstat`, ns) of the tasks under `dir`,
/// those whose name `pick` takes only when given.
fn tasks_cpu(dir: &str, pick: Option<&dyn Fn(&str) -> bool>) -> Result<f64> {
    let mut ns = 0u64;
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {dir}"))? {
        let p = e?.path();
        if let Some(pick) = pick {
            let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
            if !pick(comm.trim_end()) {
                continue;
            }
        }
        // A thread may end between the listing and the read.
        let Ok(s) = std::fs::read_to_string(p.join("schedstat")) else {
            continue;
        };
        ns += s
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Ok(ns as f64 / 1e9)
}

/// `nats bench js pub MODE`: messages/s of `n` messages of `size` bytes
/// into a new file stream, acknowledged (`atomic`: batches of 1000,
/// `async`: a window of 1000 with message ids).
pub(super) fn nats_bench(
    cli: &Path,
    url: &str,
    mode: &str,
    n: u64,
    size: usize,
    round: usize,
) -> Result<f64> {
    let stream = format!("NB{mode}{round}");
    let mut c = Command::new(cli);
    c.args(["-s", url, "bench", "js", "pub", mode])
        .args(["--batch", "1000", "--msgs", &n.to_string()])
        .args(["--size", &format!("{size}B")])
        .args(["--create", "--storage", "file", "--no-progress"])
        .args(["--stream", &stream]);
    if mode == "async" {
        c.arg("--dedup");
    }
    c.arg(format!("{}.x", stream.to_lowercase()));
    let out = c.output().context("running nats bench")?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("nats bench {mode} failed: {text}");
    }
    msgs_per_sec(&text).with_context(|| format!("no rate in nats bench's output: {text}"))
}

/// The rate of `... stats: 41,110 msgs/sec ~ ...`.
fn msgs_per_sec(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.contains(" stats: "))?;
    let rate = line.split(" stats: ").nth(1)?.split(" msgs/sec").next()?;
    rate.replace(',', "").trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nats_benchs_rate() {
        let out = "12:00:04 Using stream: B1\n\nNATS JetStream atomic batch publisher stats: 41,110 msgs/sec ~ 12 MiB/sec ~ min: 14,818.96us\n";
        assert_eq!(msgs_per_sec(out), Some(41_110.0));
        assert_eq!(msgs_per_sec("no figures"), None);
    }
}
