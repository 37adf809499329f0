//! Which parts of `fs` run, their sizes in each mode, and the run of the
//! three beyond the overhead rounds, in this order: `latency` (at rest, on
//! each filesystem, before the big trees fill the machine's memory),
//! `start` (on the ext4 only: the figures are for ext4) and
//! `storm` (each filesystem). Each part prints its figures and its
//! PASS/FAIL lines as it ends (a target missed never fails the run), and
//! gives its JSON; a part that fails on a filesystem is reported so, and
//! the others still run.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use serde_json::{Map, Value, json};

use super::bigtree::Shape;
use super::setup::{FsKind, Workspace};
use super::watchers::{Case, Tools};
use super::{latency, start, storm};
use crate::lvm::stop::Stop;

/// A part of the benchmark.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, clap::ValueEnum)]
pub(crate) enum Part {
    /// The watcher overhead rounds (weir and its peers on the mdtest-like loads).
    Overhead,
    /// weir's start on a big warm tree beside inotifywait's and watchman's.
    Start,
    /// A million creates, then the log's replay against the live tree.
    Storm,
    /// Create to readable record, at rest.
    Latency,
}

impl Part {
    pub(crate) const ALL: [Part; 4] = [Part::Overhead, Part::Start, Part::Storm, Part::Latency];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Part::Overhead => "overhead",
            Part::Start => "start",
            Part::Storm => "storm",
            Part::Latency => "latency",
        }
    }
}

/// The sizes of the parts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    pub(crate) start: start::Opts,
    pub(crate) storm_files: u64,
    pub(crate) latency_creates: usize,
}

impl Sizes {
    /// The inodes the ext4 needs beyond a 1 GiB one's for `parts`: the
    /// start tree, the storm's files and directories, the latency's files.
    pub(crate) fn extra_inodes(&self, parts: &[Part]) -> u64 {
        let mut n = 0;
        if parts.contains(&Part::Start) {
            let s: Shape = self.start.shape;
            n += s.files + s.dirs;
        }
        if parts.contains(&Part::Storm) {
            n += self.storm_files + self.storm_files / 10_000 + 2 * storm::THREADS as u64;
        }
        if parts.contains(&Part::Latency) {
            n += self.latency_creates as u64;
        }
        n
    }
}

/// Runs the parts of `parts` beyond `overhead` on the workspace's
/// filesystems; their JSON by part name (null for a part not run).
pub(crate) fn run(
    parts: &[Part],
    sizes: &Sizes,
    ws: &Workspace,
    tools: &Tools,
    missing: &BTreeMap<Case, String>,
    stop: &Stop,
) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    let weir_missing = missing.get(&Case::Weir).cloned().or_else(|| {
        tools
            .weir
            .is_none()
            .then(|| "not asked for (--watchers)".to_owned())
    });
    // Runs `f` on each filesystem `on` allows: a failure is reported and
    // kept, an interruption ends the run.
    let each = |part: Part,
                on: &dyn Fn(FsKind) -> bool,
                f: &dyn Fn(&super::setup::Target) -> Result<Value>|
     -> Result<Value> {
        if !parts.contains(&part) {
            return Ok(Value::Null);
        }
        if let Some(why) = &weir_missing {
            println!();
            println!("  {}: UNMEASURED: weir is unavailable ({why})", part.name());
            return Ok(json!({"error": format!("weir unavailable: {why}")}));
        }
        let mut runs = Vec::new();
        for target in ws.targets.iter().filter(|t| on(t.kind)) {
            stop.check()?;
            match f(target) {
                Ok(v) => runs.push(v),
                Err(e) if !stop.raised() => {
                    let why = format!("{e:#}");
                    println!();
                    println!("  {} on {} FAILED: {why}", part.name(), target.kind.name());
                    runs.push(json!({"fs": target.kind.name(), "error": why}));
                }
                Err(e) => return Err(e),
            }
        }
        if runs.is_empty() {
            println!();
            println!(
                "  {}: not run (no filesystem for it among --fs)",
                part.name()
            );
        }
        Ok(Value::Array(runs))
    };
    let latency = each(Part::Latency, &|_| true, &|t| {
        let r = latency::run(t, tools, ws, sizes.latency_creates)?;
        r.print();
        let targets = r.targets();
        Ok(r.json(targets))
    })?;
    out.insert("latency".into(), latency);
    let start = each(Part::Start, &|k| k == FsKind::Ext4, &|t| {
        let r = start::run(t, tools, ws, sizes.start, missing, stop)?;
        r.print();
        let targets = r.targets();
        Ok(r.json(targets))
    })?;
    out.insert("start".into(), start);
    let storm = each(Part::Storm, &|_| true, &|t| {
        let r = storm::run(t, tools, ws, sizes.storm_files)?;
        r.print();
        let targets = r.targets();
        Ok(r.json(targets))
    })?;
    out.insert("storm".into(), storm);
    Ok(out)
}

/// The default sizes: the issue's, or a small run's.
pub(crate) fn default_sizes(quick: bool) -> Sizes {
    let (files, dirs, storm, runs, idle) = if quick {
        (20_000, 2_000, 50_000, 2, 2)
    } else {
        (1_000_000, 100_000, 1_000_000, 3, 3)
    };
    Sizes {
        start: start::Opts {
            shape: Shape { files, dirs },
            runs,
            idle: Duration::from_secs(idle),
        },
        storm_files: storm,
        latency_creates: 200,
    }
}
