//! `frag`: does the log stay contiguous on a copy-on-write filesystem, and
//! what does it cost in space?
//!
//! A 2 GiB sparse image under /var/tmp is attached to a loop device (direct
//! I/O, like the anchor's `run_all.sh`). Each part gets a freshly made btrfs,
//! mounted only inside a private mount namespace (this binary re-executed
//! under `unshare`). The load is the anchor's: records of 200 encoded bytes,
//! a durable commit after every 100.
//!
//! - weir: `Log::append` x 100 then `Log::sync`, default Options except the
//!   segment size; then `close`. Per segment file: `filefrag -v` extents,
//!   allocated bytes (`st_blocks * 512`) and unwritten (preallocated, never
//!   written) bytes.
//! - anchor: the journald-style `header` pattern of `fragprobe.py`: one
//!   file, a 4 KiB header at offset 0, records appended after it, and after
//!   every 100 records the header is rewritten in place and the file fsynced.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::json;
use weir_log::{Log, Options, Record, RecordType, codec};

use crate::loopdev::{self, LoopDev, run_tool};
use crate::report::{self, round};

const RECORD_BYTES: usize = 200;
const BATCH: u64 = 100;
const IMAGE_BYTES: u64 = 2 << 30;
const HEADER: usize = 4096;

/// Options of `frag`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Kept for symmetry: the full load (100,000 records) already takes seconds.
    #[arg(long)]
    quick: bool,
    /// Records to write in each part.
    #[arg(long, default_value_t = 100_000)]
    records: u64,
    /// Segment size for weir [default: the library default].
    #[arg(long)]
    segment_size: Option<u64>,
    /// Where the sparse image goes (a disk filesystem with 2 GiB to spare).
    #[arg(long, default_value = "/var/tmp")]
    image_dir: PathBuf,
}

/// Options of the hidden `frag-part`, run in a private mount namespace.
#[derive(clap::Args, Debug)]
pub(crate) struct PartArgs {
    #[arg(long)]
    dev: String,
    #[arg(long)]
    mnt: PathBuf,
    /// `weir` or `anchor`.
    #[arg(long)]
    part: String,
    #[arg(long)]
    records: u64,
    #[arg(long)]
    segment_size: u64,
    /// The caller's mount namespace; mounting is refused if still in it.
    #[arg(long)]
    outer_ns: String,
}

/// One file as `filefrag -v` and `stat` see it.
#[derive(Debug, Serialize, Deserialize)]
struct FileFrag {
    name: String,
    len: u64,
    disk_bytes: u64,
    extents: u64,
    unwritten_bytes: u64,
}

/// What a part reports back to the parent (one JSON line).
#[derive(Debug, Serialize, Deserialize)]
struct PartResult {
    files: Vec<FileFrag>,
    payload_bytes: u64,
    write_s: f64,
}

fn frag_of(path: &Path) -> Result<FileFrag> {
    let out = run_tool(std::process::Command::new("filefrag").arg("-v").arg(path))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (extents, unwritten_blocks, block) =
        parse_filefrag(&text).with_context(|| format!("cannot parse filefrag output:\n{text}"))?;
    let m = std::fs::metadata(path)?;
    Ok(FileFrag {
        name: path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        len: m.len(),
        disk_bytes: m.blocks() * 512,
        extents,
        unwritten_bytes: unwritten_blocks * block,
    })
}

/// Parses `filefrag -v`: (extent count, unwritten blocks, block size).
fn parse_filefrag(text: &str) -> Option<(u64, u64, u64)> {
    let block = text
        .split("blocks of ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let last = text.lines().rev().find(|l| l.contains(" found"))?;
    let extents = last
        .rsplit(": ")
        .next()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let mut unwritten = 0;
    for line in text.lines() {
        let f: Vec<&str> = line.split(':').collect();
        if f.len() >= 5 && f[0].trim().parse::<u64>().is_ok() && line.contains("unwritten") {
            unwritten += f[3].trim().parse::<u64>().ok()?;
        }
    }
    Some((extents, unwritten, block))
}

/// A record of exactly `RECORD_BYTES`: returns the name to use with an 8-byte parent.
fn name_for(i: u64, buf: &mut Vec<u8>) -> Result<()> {
    let bare = codec::encoded_len(&Record::new(RecordType::CREAT).parent(&[0; 8]))?;
    buf.clear();
    write!(buf, "seq={i} msg=")?;
    buf.resize(RECORD_BYTES - bare, b'x');
    Ok(())
}

fn weir_part(dir: &Path, records: u64, segment_size: u64) -> Result<PartResult> {
    let log = Log::open(dir, Options::default().segment_size(segment_size))?;
    let mut name = Vec::new();
    let mut payload = 0u64;
    let t = Instant::now();
    for i in 0..records {
        name_for(i, &mut name)?;
        let parent = i.to_le_bytes();
        let r = Record::new(RecordType::CREAT).parent(&parent).name(&name);
        payload += codec::encoded_len(&r)? as u64;
        let _ = log.append(&r)?;
        if (i + 1) % BATCH == 0 || i + 1 == records {
            log.sync()?;
        }
    }
    let stats = log.stats();
    log.close()?;
    let write_s = t.elapsed().as_secs_f64();
    eprintln!(
        "  weir: {} records in {write_s:.2} s, {} fsyncs, {} segments",
        stats.last_index, stats.syncs, stats.segments
    );
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    paths.retain(|p| p.extension().is_some_and(|x| x == "wlog"));
    paths.sort();
    let files = paths.iter().map(|p| frag_of(p)).collect::<Result<_>>()?;
    Ok(PartResult {
        files,
        payload_bytes: payload,
        write_s,
    })
}

fn header_block(seq: u64, tail: u64) -> Vec<u8> {
    let mut h = vec![0u8; HEADER];
    h[..8].copy_from_slice(b"FRAGPRB1");
    h[8..16].copy_from_slice(&seq.to_le_bytes());
    h[16..24].copy_from_slice(&tail.to_le_bytes());
    h
}

fn anchor_part(dir: &Path, records: u64) -> Result<PartResult> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("header.log");
    let f = File::create_new(&path)?;
    f.write_all_at(&header_block(0, HEADER as u64), 0)?;
    let mut off = HEADER as u64;
    let mut name = Vec::new();
    let mut payload = 0u64;
    let t = Instant::now();
    for i in 0..records {
        name_for(i, &mut name)?;
        let parent = i.to_le_bytes();
        let r = Record::new(RecordType::CREAT).parent(&parent).name(&name);
        let frame = codec::encode(&r, i + 1, 0)?;
        f.write_all_at(&frame, off)?;
        off += frame.len() as u64;
        payload += frame.len() as u64;
        if (i + 1) % BATCH == 0 || i + 1 == records {
            f.write_all_at(&header_block(i + 1, off), 0)?;
            f.sync_all()?;
        }
    }
    drop(f);
    let write_s = t.elapsed().as_secs_f64();
    eprintln!("  anchor: {records} records in {write_s:.2} s");
    Ok(PartResult {
        files: vec![frag_of(&path)?],
        payload_bytes: payload,
        write_s,
    })
}

/// The hidden `frag-part`: mount, write one part, measure, unmount.
pub(crate) fn part(a: PartArgs) -> Result<()> {
    let result = {
        let _mount = loopdev::Mount::new(&a.dev, &a.mnt, &a.outer_ns)?;
        let dir = a.mnt.join(&a.part);
        match a.part.as_str() {
            "weir" => weir_part(&dir, a.records, a.segment_size)?,
            "anchor" => anchor_part(&dir, a.records)?,
            p => bail!("unknown part {p}"),
        }
    };
    println!("{}", serde_json::to_string(&result)?);
    Ok(())
}

fn run_part(dev: &LoopDev, mnt: &Path, part: &str, a: &Args, seg: u64) -> Result<PartResult> {
    loopdev::mkfs_btrfs(dev.path())?;
    let args: Vec<OsString> = vec![
        "frag-part".into(),
        "--dev".into(),
        dev.path().into(),
        "--mnt".into(),
        mnt.into(),
        "--part".into(),
        part.into(),
        "--records".into(),
        a.records.to_string().into(),
        "--segment-size".into(),
        seg.to_string().into(),
        "--outer-ns".into(),
        loopdev::mount_ns()?.into(),
    ];
    let out = loopdev::self_in_private_ns(&args)?
        .output()
        .context("run unshare")?;
    if !out.status.success() {
        bail!("child in a private mount namespace failed ({})", out.status);
    }
    let text = String::from_utf8(out.stdout)?;
    let line = text.lines().last().context("frag-part printed nothing")?;
    serde_json::from_str(line).with_context(|| format!("frag-part printed {line:?}"))
}

/// Runs the benchmark.
pub(crate) fn run(a: Args) -> Result<()> {
    if !loopdev::is_root() {
        return report::skipped("frag", "needs root (loop device, mkfs, mount)");
    }
    for tool in [
        "mkfs.btrfs",
        "filefrag",
        "losetup",
        "unshare",
        "mount",
        "umount",
    ] {
        if loopdev::find_tool(tool).is_none() {
            return report::skipped("frag", &format!("{tool} not found"));
        }
    }
    if a.records == 0 {
        bail!("--records must be positive");
    }
    let seg = a.segment_size.unwrap_or(Options::default().segment_size);
    println!(
        "frag: {} records of {RECORD_BYTES} encoded bytes, a durable commit every {BATCH}, on a fresh btrfs per part",
        a.records
    );
    if a.quick {
        println!("  --quick: the same load (it takes seconds)");
    }
    let tmp = tempfile::Builder::new()
        .prefix("weir-bench-frag.")
        .tempdir_in(&a.image_dir)
        .with_context(|| format!("create a directory in {}", a.image_dir.display()))?;
    let img = tmp.path().join("disk.img");
    File::create_new(&img)?.set_len(IMAGE_BYTES)?;
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt)?;
    // Declared after `tmp`, so it is detached before the image is removed.
    let dev = LoopDev::attach_direct(&img)?;
    println!(
        "  image {} (2 GiB sparse) on {}, direct I/O {}",
        img.display(),
        dev.path().display(),
        if dev.direct_io() { "on" } else { "off" }
    );
    println!("  weir segment size {seg} bytes ({} MiB)", seg >> 20);
    let weir = run_part(&dev, &mnt, "weir", &a, seg)?;
    let anchor = run_part(&dev, &mnt, "anchor", &a, seg)?;
    drop(dev);
    drop(tmp);

    println!("  weir segments (len, allocated, unwritten preallocation, extents):");
    for f in &weir.files {
        println!(
            "    {} {:>9} {:>9} {:>9} {:>3}",
            f.name, f.len, f.disk_bytes, f.unwritten_bytes, f.extents
        );
    }
    let disk: u64 = weir.files.iter().map(|f| f.disk_bytes).sum();
    let unwritten: u64 = weir.files.iter().map(|f| f.unwritten_bytes).sum();
    let max_ext = weir.files.iter().map(|f| f.extents).max().unwrap_or(0);
    let payload = weir.payload_bytes as f64;
    let overhead = (disk as f64 - payload) / payload;
    let overhead_written = ((disk - unwritten) as f64 - payload) / payload;
    let a_file = &anchor.files[0];
    println!(
        "  weir: payload {} B, on disk {disk} B, overhead {:.1}% ({:.1}% without the {unwritten} B preallocated but unwritten); max {max_ext} extents per segment; wrote in {:.2} s",
        weir.payload_bytes,
        overhead * 100.0,
        overhead_written * 100.0,
        weir.write_s
    );
    println!(
        "  anchor (journald-style header rewrite + fsync): {} extents, {} B on disk for {} B payload; wrote in {:.2} s",
        a_file.extents, a_file.disk_bytes, anchor.payload_bytes, anchor.write_s
    );
    println!("  targets: max_extents_per_segment <= 2, space_overhead <= 0.15");
    report::emit(&json!({
        "bench": "frag",
        "records": a.records,
        "record_bytes": RECORD_BYTES,
        "batch": BATCH,
        "segments": weir.files.len(),
        "segment_size": seg,
        "max_extents_per_segment": max_ext,
        "extents_per_segment": weir.files.iter().map(|f| f.extents).collect::<Vec<_>>(),
        "space_overhead": round(overhead, 4),
        "space_overhead_excl_unwritten_prealloc": round(overhead_written, 4),
        "payload_bytes": weir.payload_bytes,
        "disk_bytes": disk,
        "unwritten_prealloc_bytes": unwritten,
        "weir_write_s": round(weir.write_s, 3),
        "anchor_extents": a_file.extents,
        "anchor_disk_bytes": a_file.disk_bytes,
        "anchor_write_s": round(anchor.write_s, 3),
    }));
    Ok(())
}
