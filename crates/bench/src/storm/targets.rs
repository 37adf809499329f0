//! The storm figures the README sets targets for, worst over the counts:
//! printed next to their targets, and as the JSON line's headline keys.

use serde_json::{Map, Value, json};

use super::driver::Loop;
use super::summary::{Cell, Results};
use super::watchers::Mode;
use crate::report::num;

const M8: Loop = Loop::Mount8;
const RAW: Loop = Loop::Raw;

fn ratio(c: &Cell) -> f64 {
    c.ratio
}

fn per_2000(c: &Cell) -> f64 {
    c.cpu_per_2000
}

/// Prints the targets and the figures.
pub(crate) fn print(r: &Results, counts: &[usize]) {
    let w = |lp, mode, f: fn(&Cell) -> f64| r.worst(lp, mode, counts, f);
    println!("  targets (worst over counts):");
    println!(
        "    mount(8) wall with weir / unwatched: fanotify x{:.3}, mountinfo x{:.3} (target <= 1.05; findmnt x{:.3}, re-parsers were x1.24 in the anchor)",
        w(M8, Mode::Fanotify, ratio),
        w(M8, Mode::Mountinfo, ratio),
        w(M8, Mode::Findmnt, ratio)
    );
    println!(
        "    fanotify: {:.3} s of weir CPU per 2000 mounts (target <= 0.2; findmnt {:.3} s)",
        w(M8, Mode::Fanotify, per_2000),
        w(M8, Mode::Findmnt, per_2000)
    );
    println!(
        "    mountinfo: weir CPU {:.1}% of the storm's wall time (target <= 10%)",
        w(M8, Mode::Mountinfo, |c| c.cpu_share) * 100.0
    );
    println!(
        "    raw mount(2) wall with weir / unwatched: fanotify x{:.3} (target <= 1.5), mountinfo x{:.3}, findmnt x{:.3}",
        w(RAW, Mode::Fanotify, ratio),
        w(RAW, Mode::Mountinfo, ratio),
        w(RAW, Mode::Findmnt, ratio)
    );
    println!(
        "      (the kernel alone, a fanotify group never read: x{:.3})",
        w(RAW, Mode::FanotifyUnread, ratio)
    );
}

/// The headline keys of the JSON line; null where nothing was measured.
pub(crate) fn json(r: &Results, counts: &[usize]) -> Map<String, Value> {
    let w = |lp, mode, f: fn(&Cell) -> f64, digits| num(r.worst(lp, mode, counts, f), digits);
    let largest = counts.iter().copied().max().unwrap_or(0);
    let rss = |mode| {
        r.cell(M8, largest, mode)
            .and_then(|c| c.rss_per_mount)
            .map(f64::round)
    };
    let v = json!({
        "wall_ratio_fanotify": w(M8, Mode::Fanotify, ratio, 3),
        "wall_ratio_mountinfo": w(M8, Mode::Mountinfo, ratio, 3),
        "wall_ratio_findmnt": w(M8, Mode::Findmnt, ratio, 3),
        "cpu_s_fanotify_per_2000": w(M8, Mode::Fanotify, per_2000, 4),
        "tracker_cpu_s_fanotify_per_2000": w(M8, Mode::Fanotify, |c| c.tracker_per_2000, 4),
        "cpu_share_mountinfo": w(M8, Mode::Mountinfo, |c| c.cpu_share, 4),
        "cpu_s_mountinfo_per_2000": w(M8, Mode::Mountinfo, per_2000, 4),
        "cpu_s_findmnt_per_2000": w(M8, Mode::Findmnt, per_2000, 4),
        "raw_ratio_fanotify": w(RAW, Mode::Fanotify, ratio, 3),
        "raw_ratio_mountinfo": w(RAW, Mode::Mountinfo, ratio, 3),
        "raw_ratio_findmnt": w(RAW, Mode::Findmnt, ratio, 3),
        "raw_ratio_fanotify_unread": w(RAW, Mode::FanotifyUnread, ratio, 3),
        "rss_bytes_per_mount_inprocess_fanotify": rss(Mode::Fanotify),
        "rss_bytes_per_mount_inprocess_mountinfo": rss(Mode::Mountinfo),
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}
