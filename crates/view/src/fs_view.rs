//! `weir fs`: the directory trees the daemon's filesystem tracker watches,
//! as a table or a JSON array, from the roots of [`FsStatus`] (the `fs`
//! section of `GET /v1/status`).
//!
//! [`render`] is the one function from the roots to the bytes: the daemon
//! serves them at `GET /v1/fs` and `weir fs` prints them, so the listing
//! and the status object can never disagree on a figure.
//!
//! ```text
//! PATH FSTYPE MARK       STATE    ENTRIES DIRS EVENTS RECORDS VERIFIED COMPARES DIRTY BACKLOG PROGRESS
//! /srv ext4   filesystem reading      120   14     12      10        1        0     0       0 loading:41%
//! ```
//!
//! `PROGRESS` is `-` unless the root has long work under way (its first
//! reading, a reconciliation, a rescan): then its phase and how far it
//! has gone ([`FsProgress::cell`]).
//!
//! Paths use the log's text escaping ([`escape`]), so that a row stays one
//! row; in JSON a path is a string when UTF-8, else an array of its bytes.
//!
//! [`FsStatus`]: crate::status::FsStatus
//! [`FsProgress::cell`]: crate::status::FsProgress::cell

use std::fmt::Display;

use crate::bytes::escape;
use crate::json::to_sorted_string;
use crate::lvm_view::Format;
use crate::status::{FsProgress, FsRootStatus};
use crate::table::{Align, render as table};

/// The table's columns, in order.
const HEADERS: [(&str, Align); 13] = [
    ("PATH", Align::Left),
    ("FSTYPE", Align::Left),
    ("MARK", Align::Left),
    ("STATE", Align::Left),
    ("ENTRIES", Align::Right),
    ("DIRS", Align::Right),
    ("EVENTS", Align::Right),
    ("RECORDS", Align::Right),
    ("VERIFIED", Align::Right),
    ("COMPARES", Align::Right),
    ("DIRTY", Align::Right),
    ("BACKLOG", Align::Right),
    ("PROGRESS", Align::Left),
];

/// The roots in `format`: a JSON array with one object per line (keys in
/// the order of their names, every one there, a figure not known as
/// `null`), or the table, each ending in `\n`.
pub fn render(roots: &[FsRootStatus], format: Format) -> String {
    match format {
        Format::Json => json(roots),
        Format::Text => text(roots),
    }
}

fn json(roots: &[FsRootStatus]) -> String {
    let mut out = String::from("[\n");
    for (i, r) in roots.iter().enumerate() {
        out.push_str(&to_sorted_string(r));
        out.push_str(if i + 1 < roots.len() { ",\n" } else { "\n" });
    }
    out.push_str("]\n");
    out
}

fn text(roots: &[FsRootStatus]) -> String {
    let rows: Vec<Vec<String>> = roots
        .iter()
        .map(|r| {
            vec![
                escape(&r.path.0),
                word(r.fstype.as_deref()),
                word(r.mark.as_deref()),
                word(r.state.as_deref()),
                figure(r.entries),
                figure(r.dirs),
                figure(r.events),
                figure(r.records),
                figure(r.verified),
                figure(r.compares),
                figure(r.dirty),
                figure(r.backlog),
                r.progress
                    .as_ref()
                    .map_or_else(|| "-".to_owned(), FsProgress::cell),
            ]
        })
        .collect();
    table(&HEADERS, &rows)
}

/// A word of the daemon's, escaped as a path is (a filesystem type is the
/// kernel's bytes), or `?` when it did not say.
fn word(w: Option<&str>) -> String {
    w.map_or_else(|| "?".to_owned(), |w| escape(w.as_bytes()))
}

fn figure<T: Display>(v: Option<T>) -> String {
    v.map_or_else(|| "?".to_owned(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytes::ByteBuf;
    use serde_json::{Value, json};

    fn root(path: &[u8]) -> FsRootStatus {
        FsRootStatus {
            path: ByteBuf(path.to_vec()),
            id: Some("0a0b".into()),
            fstype: Some("ext4".into()),
            mark: Some("filesystem".into()),
            fsid: Some("0000fd00:00000000".into()),
            state: Some("watching".into()),
            entries: Some(120),
            dirs: Some(14),
            events: Some(12),
            records: Some(10),
            verified: Some(1),
            outside: Some(3),
            compares: Some(0),
            dirty: Some(0),
            backlog: Some(7),
            progress: None,
        }
    }

    #[test]
    fn a_table_row_per_root() {
        let t = render(&[root(b"/srv"), root(b"/a\nb")], Format::Text);
        assert_eq!(
            t,
            "PATH    FSTYPE MARK       STATE    ENTRIES DIRS EVENTS RECORDS VERIFIED COMPARES DIRTY BACKLOG PROGRESS\n\
             /srv    ext4   filesystem watching     120   14     12      10        1        0     0       7 -\n\
             /a\\x0ab ext4   filesystem watching     120   14     12      10        1        0     0       7 -\n"
        );
        // Nothing watched: the header alone.
        assert_eq!(render(&[], Format::Text).lines().count(), 1);
        let unknown = FsRootStatus {
            path: ByteBuf(b"/x".to_vec()),
            ..FsRootStatus::default()
        };
        let t = render(&[unknown], Format::Text);
        assert_eq!(
            t.lines().nth(1),
            Some(
                "/x   ?      ?    ?           ?    ?      ?       ?        ?        ?     ?       ? -"
            )
        );
    }

    #[test]
    fn a_json_object_per_line_that_reads_back() {
        let roots = [root(b"/srv"), root(b"/x\xff")];
        let j = render(&roots, Format::Json);
        let lines: Vec<&str> = j.lines().collect();
        assert_eq!((lines[0], lines[3]), ("[", "]"));
        assert!(
            lines[1].starts_with(r#"{"backlog":7,"compares":0,"dirs":14,"dirty":0,"#),
            "{}",
            lines[1]
        );
        let v: Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v[1]["path"], json!([47, 120, 255]));
        let back: Vec<FsRootStatus> = serde_json::from_value(v).unwrap();
        assert_eq!(back, roots);
        assert_eq!(render(&[], Format::Json), "[\n]\n");
    }

    #[test]
    fn a_root_at_work_shows_how_far_it_has_gone() {
        let at = |phase: &str, done, total| FsRootStatus {
            state: Some("reading".into()),
            progress: Some(FsProgress {
                phase: Some(phase.into()),
                unit: Some("directories".into()),
                done: Some(done),
                total,
            }),
            ..root(b"/srv")
        };
        let t = render(
            &[at("rescanning", 41, Some(100)), at("walking", 523, None)],
            Format::Text,
        );
        let cells: Vec<&str> = t.lines().filter_map(|l| l.split(' ').next_back()).collect();
        assert_eq!(cells, ["PROGRESS", "rescanning:41%", "walking:523"]);
        let j = render(&[at("rescanning", 41, Some(100))], Format::Json);
        let v: Value = serde_json::from_str(&j).unwrap();
        assert_eq!(
            v[0]["progress"],
            json!({"done": 41, "phase": "rescanning", "total": 100, "unit": "directories"})
        );
        let p = at("loading", 5, Some(0)).progress.unwrap();
        assert_eq!(p.percent(), Some(100), "nothing to do is all done");
        assert_eq!(
            at("rescanning", 41234, Some(100001))
                .progress
                .unwrap()
                .words(),
            "rescanning 41234 of 100001 directories (41%)"
        );
        assert_eq!(
            at("walking", 7, None).progress.unwrap().words(),
            "walking 7 directories"
        );
    }
}
