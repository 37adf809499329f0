//! `weir-bench`: the benchmarks behind the targets in the README.
//!
//! Each subcommand prints how it measured and its figures in readable form,
//! then ends with exactly one JSON line on stdout, so scripts can take the
//! last line. Progress goes to stderr. Every subcommand has `--quick`, which
//! finishes in a minute or two (`fs`, which makes trees and runs four
//! peers, takes the longest). A benchmark that cannot run here (no root, a
//! missing tool) says why and prints `{"bench":..,"skipped":".."}`.
#![forbid(unsafe_code)]

mod append;
mod daemon;
mod frag;
mod freemem;
mod fs;
mod fsinfo;
mod loopdev;
mod lvm;
mod mutexlog;
mod overhead;
mod phases;
mod recovery;
mod report;
mod ship;
mod steal;
mod storm;
mod timed;

use clap::{Parser, Subcommand};

/// Benchmarks for weir; each ends with one JSON line.
#[derive(Parser, Debug)]
#[command(name = "weir-bench", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// mdtest-like create/unlink load on tmpfs: no changelog vs weir-log vs a global-mutex log.
    ChangelogOverhead(overhead::Args),
    /// Appends per second: default mode by 1, 2, 4 threads; durable mode by 1-64 writers vs mutex+fdatasync.
    Append(append::Args),
    /// Fragmentation and space overhead on btrfs over a loop device (needs root).
    Frag(frag::Args),
    /// Time to open a large log after a SIGKILL, and after a clean close.
    Recovery(recovery::Args),
    /// Mount storms (mount(8) and raw mount(2)) under weir's two backends and findmnt --poll (needs root).
    MountStorm(storm::Args),
    /// LVM2 against weir: cold vgs at 350 and 1000 PVs, event activation of 1000 PVs, parity, lvcreate under weir run (needs root, lvm2).
    Lvm(lvm::Args),
    /// weir run queried and followed through its socket: latency, 100 consumers in a storm, restart (needs root, lvm2).
    Daemon(daemon::Args),
    /// Filesystem watchers on ext4 and tmpfs: overhead on an mdtest-like load (weir fs watch vs fsnotifywait, inotifywait, watchman and a fanotify floor), start on a big tree, a create storm replayed against the tree, create-to-record latency (needs root).
    Fs(fs::Args),
    /// The shipper into a real nats-server with durable acks: records/s beside nats bench, CPU at 1000 records/s, 1000 simulated hosts' append-to-fleet-tail latency and the broker's CPU (needs nats-server and the nats CLI).
    Ship(ship::Args),
    /// Internal: `daemon`, run inside a private mount namespace.
    #[command(hide = true)]
    DaemonInner(daemon::InnerArgs),
    /// Internal: one `frag` part, run inside a private mount namespace.
    #[command(hide = true)]
    FragPart(frag::PartArgs),
    /// Internal: `fs`, run inside a private mount namespace.
    #[command(hide = true)]
    FsInner(fs::InnerArgs),
    /// Internal: the floor reader of `fs`, a minimal fanotify watcher.
    #[command(hide = true)]
    FsFloor(fs::floor::FloorArgs),
    /// Internal: `mount-storm`, run inside a private mount namespace.
    #[command(hide = true)]
    MountStormInner(storm::InnerArgs),
    /// Internal: the writer that `recovery` kills.
    #[command(hide = true)]
    RecoveryFill(recovery::FillArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().cmd {
        Cmd::ChangelogOverhead(a) => overhead::run(a),
        Cmd::Append(a) => append::run(a),
        Cmd::Frag(a) => frag::run(a),
        Cmd::Ship(a) => ship::run(a),
        Cmd::Recovery(a) => recovery::run(a),
        Cmd::MountStorm(a) => storm::run(a),
        Cmd::Lvm(a) => lvm::run(a),
        Cmd::Daemon(a) => daemon::run(a),
        Cmd::DaemonInner(a) => daemon::inner(a),
        Cmd::Fs(a) => fs::run(a),
        Cmd::FsInner(a) => fs::inner(a),
        Cmd::FsFloor(a) => fs::floor::run(a),
        Cmd::MountStormInner(a) => storm::inner(a),
        Cmd::FragPart(a) => frag::part(a),
        Cmd::RecoveryFill(a) => recovery::fill(a),
    }
}
