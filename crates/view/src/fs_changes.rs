//! `weir fs changes`: the answer to a `since` query
//! ([`weir_fs::since::Changes`]) as text or as one JSON object.
//!
//! [`render`] is the one function from the answer to the bytes: the daemon
//! serves them at `GET /v1/fs/changes` and `weir fs changes` prints them
//! (or the daemon's, copied), so the two paths print the same.
//!
//! ```text
//! - old/file
//! > dir -> renamed
//! + renamed/new
//! ~ notes.txt
//! next 42 fresh no
//! ```
//!
//! In text a path uses the log's escaping ([`escape`]), so a line stays
//! one line; in JSON a path is a string when UTF-8, else an array of its
//! bytes ([`Bytes`]), so every byte round-trips.

use serde::{Serialize, Serializer};
use serde_json::Value;
use weir_fs::since::Changes;

use crate::bytes::{Bytes, escape};
use crate::lvm_view::Format;

/// The answer in `format`: the JSON object on one line (keys in the order
/// of their names, `why` `null` when not fresh), or the text lines:
/// removals (`- `), renames (`> from -> to`), creations (`+ `) and
/// modifications (`~ `), each sorted, then `next N fresh no` (or `fresh
/// yes: why`). Each line ends in `\n`.
pub fn render(c: &Changes, format: Format) -> String {
    match format {
        Format::Json => {
            // Written straight from the answer: an answer lists tens of
            // thousands of paths, each a value in a tree built first.
            let mut s = serde_json::to_string(&Json::of(c)).unwrap_or_default();
            s.push('\n');
            s
        }
        Format::Text => text(c),
    }
}

/// The JSON object, its fields in the order of their names.
#[derive(Serialize)]
struct Json<'a> {
    created: Paths<'a>,
    fresh: bool,
    modified: Paths<'a>,
    next: u64,
    removed: Paths<'a>,
    renamed: Vec<Rename<'a>>,
    root: Bytes<'a>,
    since: u64,
    why: Option<String>,
}

#[derive(Serialize)]
struct Rename<'a> {
    from: Bytes<'a>,
    to: Bytes<'a>,
}

/// Paths, each as [`Bytes`].
struct Paths<'a>(&'a [Vec<u8>]);

impl Serialize for Paths<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|p| Bytes(p)))
    }
}

impl<'a> Json<'a> {
    fn of(c: &'a Changes) -> Json<'a> {
        Json {
            created: Paths(&c.created),
            fresh: c.fresh,
            modified: Paths(&c.modified),
            next: c.next,
            removed: Paths(&c.removed),
            renamed: c
                .renamed
                .iter()
                .map(|r| Rename {
                    from: Bytes(&r.from),
                    to: Bytes(&r.to),
                })
                .collect(),
            root: Bytes(c.root.as_os_str().as_encoded_bytes()),
            since: c.since,
            why: c.why.as_ref().map(|w| w.why()),
        }
    }
}

/// The answer as a JSON value.
pub fn json_value(c: &Changes) -> Value {
    serde_json::to_value(Json::of(c)).unwrap_or_default()
}

fn text(c: &Changes) -> String {
    let mut out = String::new();
    let mut line = |mark: &str, p: &[u8]| {
        out.push_str(mark);
        out.push_str(&escape(p));
        out.push('\n');
    };
    for p in &c.removed {
        line("- ", p);
    }
    for r in &c.renamed {
        line("> ", &[&r.from[..], b" -> ", &r.to[..]].concat());
    }
    for p in &c.created {
        line("+ ", p);
    }
    for p in &c.modified {
        line("~ ", p);
    }
    out.push_str(&format!("next {} fresh ", c.next));
    match &c.why {
        Some(w) => {
            out.push_str("yes: ");
            out.push_str(&w.why());
        }
        None => out.push_str("no"),
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;
    use weir_fs::since::{Fresh, Renamed};

    use super::*;

    fn answer() -> Changes {
        let mut c = Changes::default();
        c.root = PathBuf::from("/srv");
        c.since = 3;
        c.next = 9;
        c.created = vec![b"e/new".to_vec(), b"bad\xff".to_vec()];
        c.removed = vec![b"d/old".to_vec()];
        c.modified = vec![b"kept".to_vec()];
        c.renamed = vec![Renamed {
            from: b"d".to_vec(),
            to: b"e".to_vec(),
        }];
        c
    }

    #[test]
    fn text_is_a_line_per_change_then_next() {
        let t = render(&answer(), Format::Text);
        assert_eq!(
            t,
            "- d/old\n> d -> e\n+ e/new\n+ bad\\xff\n~ kept\nnext 9 fresh no\n"
        );
        let mut f = answer();
        f.fresh = true;
        f.why = Some(Fresh::WatchStarted);
        assert!(
            render(&f, Format::Text).ends_with("fresh yes: the root's watch started after since\n")
        );
    }

    #[test]
    fn json_keeps_every_byte_of_a_path() {
        let v: Value = serde_json::from_str(&render(&answer(), Format::Json)).unwrap();
        assert_eq!(v["created"][1], json!([98, 97, 100, 255]));
        assert_eq!(v["renamed"][0], json!({"from": "d", "to": "e"}));
        assert_eq!(
            (v["since"].clone(), v["next"].clone()),
            (json!(3), json!(9))
        );
        assert_eq!(
            (v["fresh"].clone(), v["why"].clone()),
            (json!(false), Value::Null)
        );
        assert_eq!(v["root"], json!("/srv"));
    }

    #[test]
    fn json_keys_go_in_the_order_of_their_names() {
        let mut f = answer();
        f.fresh = true;
        f.why = Some(Fresh::WatchStarted);
        for c in [answer(), f] {
            let line = render(&c, Format::Json);
            // A value read back and written with its keys sorted gives the
            // same bytes: the order is the names', and nothing is lost.
            let v: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(crate::json::to_sorted_value(&v).to_string() + "\n", line);
            assert_eq!(json_value(&c), v);
        }
    }
}
