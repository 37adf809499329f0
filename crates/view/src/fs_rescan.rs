//! `weir fs rescan`: what an on-demand rescan of a watched root found
//! ([`weir_fs::Rescanned`]), as a line of text or one JSON object.
//!
//! [`render`] is the one function from the answer to the bytes: the daemon
//! serves them at `POST /v1/fs/rescan` and `weir fs rescan` prints them.
//!
//! ```text
//! /srv: 0 changes; 9 entries; 5 directories checked, 1 read; MARK at 42
//! ```

use std::path::Path;

use serde_json::{Map, Value};
use weir_fs::Rescanned;

use crate::bytes::{Bytes, escape};
use crate::json::to_sorted_value;
use crate::lvm_view::Format;

/// The answer for `root` in `format`: the JSON object on one line (keys
/// in the order of their names, `index` `null` without a MARK), or the
/// line above. Ends in `\n`.
pub fn render(root: &Path, r: &Rescanned, format: Format) -> String {
    let root = root.as_os_str().as_encoded_bytes();
    match format {
        Format::Json => {
            let mut m = Map::new();
            m.insert("root".into(), to_sorted_value(&Bytes(root)));
            m.insert("entries".into(), r.entries.into());
            m.insert("changes".into(), r.changes.into());
            m.insert("dirs_checked".into(), r.dirs_checked.into());
            m.insert("dirs_read".into(), r.dirs_read.into());
            m.insert("index".into(), r.index.map_or(Value::Null, Value::from));
            let mut s = Value::Object(m).to_string();
            s.push('\n');
            s
        }
        Format::Text => {
            let plural =
                |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
            let mark = r
                .index
                .map_or_else(|| "no MARK".to_owned(), |i| format!("MARK at {i}"));
            format!(
                "{}: {}; {}; {} checked, {} read; {mark}\n",
                escape(root),
                plural(r.changes, "change", "changes"),
                plural(r.entries, "entry", "entries"),
                plural(r.dirs_checked, "directory", "directories"),
                r.dirs_read,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found() -> Rescanned {
        let mut r = Rescanned::default();
        r.entries = 9;
        r.changes = 1;
        r.dirs_checked = 5;
        r.dirs_read = 2;
        r.index = Some(42);
        r
    }

    #[test]
    fn text_is_one_line() {
        assert_eq!(
            render(Path::new("/srv/a\nb"), &found(), Format::Text),
            "/srv/a\\x0ab: 1 change; 9 entries; 5 directories checked, 2 read; MARK at 42\n"
        );
        let none = Rescanned::default();
        assert_eq!(
            render(Path::new("/w"), &none, Format::Text),
            "/w: 0 changes; 0 entries; 0 directories checked, 0 read; no MARK\n"
        );
    }

    #[test]
    fn json_has_every_count_and_the_root_as_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let root = Path::new(std::ffi::OsStr::from_bytes(b"/x\xff"));
        let v: Value = serde_json::from_str(&render(root, &found(), Format::Json)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "root": [47, 120, 255],
                "entries": 9, "changes": 1, "dirs_checked": 5, "dirs_read": 2, "index": 42
            })
        );
    }
}
