//! LVM's JSON reports (`pvs`/`vgs --reportformat json`), as saved by
//! make.sh: `{"report": [{"pv": [{"field": "value", ...}, ...]}]}`, every
//! value a string. A small JSON reader is enough for that shape, and keeps
//! serde out of the crate's dependencies.

use std::collections::BTreeMap;
use std::fs;

use weir_lvm::Uuid;

use super::fixture;

/// One row of a report: field name to value.
#[derive(Debug)]
pub(crate) struct Row(pub(crate) BTreeMap<String, String>);

impl Row {
    /// A field's text.
    pub(crate) fn str(&self, field: &str) -> &str {
        self.0
            .get(field)
            .unwrap_or_else(|| panic!("report row has no {field}: {:?}", self.0))
    }

    /// A numeric field (reports are made with `--units b --nosuffix`).
    pub(crate) fn num(&self, field: &str) -> u64 {
        let s = self.str(field);
        s.parse()
            .unwrap_or_else(|e| panic!("{field} = {s:?} is not a number: {e}"))
    }

    /// A uuid field, in LVM's dashed form.
    pub(crate) fn uuid(&self, field: &str) -> Uuid {
        let s = self.str(field);
        Uuid::parse(s.as_bytes()).unwrap_or_else(|| panic!("{field} = {s:?} is not a uuid"))
    }
}

/// The set's pvs.json rows.
pub(crate) fn pvs(set: &str) -> Vec<Row> {
    rows(set, "pvs.json", "pv")
}

/// The set's vgs.json rows.
pub(crate) fn vgs(set: &str) -> Vec<Row> {
    rows(set, "vgs.json", "vg")
}

fn rows(set: &str, file: &str, kind: &str) -> Vec<Row> {
    let path = fixture::dir(set).join(file);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut p = Parser {
        s: text.as_bytes(),
        at: 0,
    };
    let json = p.value();
    let Json::Obj(top) = json else {
        panic!("{file}: not an object")
    };
    let mut out = Vec::new();
    for (key, v) in top {
        let Json::Arr(reports) = v else { continue };
        assert_eq!(key, "report");
        for report in reports {
            let Json::Obj(fields) = report else { continue };
            for (k, list) in fields {
                let (true, Json::Arr(items)) = (k == kind, list) else {
                    continue;
                };
                for item in items {
                    let Json::Obj(pairs) = item else {
                        panic!("{file}: a {kind} that is not an object")
                    };
                    let row = pairs
                        .into_iter()
                        .map(|(k, v)| match v {
                            Json::Str(s) => (k, s),
                            _ => panic!("{file}: {k} is not a string"),
                        })
                        .collect();
                    out.push(Row(row));
                }
            }
        }
    }
    out
}

enum Json {
    Obj(Vec<(String, Json)>),
    Arr(Vec<Json>),
    Str(String),
    Other,
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn next(&mut self) -> u8 {
        self.skip_ws();
        let b = *self.s.get(self.at).expect("JSON ends early");
        self.at += 1;
        b
    }

    fn peek(&mut self) -> u8 {
        self.skip_ws();
        *self.s.get(self.at).expect("JSON ends early")
    }

    fn value(&mut self) -> Json {
        match self.next() {
            b'{' => {
                let mut out = Vec::new();
                if self.peek() == b'}' {
                    self.at += 1;
                    return Json::Obj(out);
                }
                loop {
                    assert_eq!(self.next(), b'"', "object key");
                    let k = self.string();
                    assert_eq!(self.next(), b':');
                    out.push((k, self.value()));
                    match self.next() {
                        b',' => {}
                        b'}' => return Json::Obj(out),
                        b => panic!("unexpected {:?} in object", b as char),
                    }
                }
            }
            b'[' => {
                let mut out = Vec::new();
                if self.peek() == b']' {
                    self.at += 1;
                    return Json::Arr(out);
                }
                loop {
                    out.push(self.value());
                    match self.next() {
                        b',' => {}
                        b']' => return Json::Arr(out),
                        b => panic!("unexpected {:?} in array", b as char),
                    }
                }
            }
            b'"' => Json::Str(self.string()),
            _ => {
                // A number or literal: LVM's reports have none, skip it.
                while self
                    .s
                    .get(self.at)
                    .is_some_and(|b| !b",]}".contains(b) && !b.is_ascii_whitespace())
                {
                    self.at += 1;
                }
                Json::Other
            }
        }
    }

    /// The rest of a string whose opening quote was read.
    fn string(&mut self) -> String {
        let mut out = Vec::new();
        loop {
            let b = *self.s.get(self.at).expect("unterminated string");
            self.at += 1;
            match b {
                b'"' => return String::from_utf8(out).expect("UTF-8"),
                b'\\' => {
                    let e = *self.s.get(self.at).expect("unterminated escape");
                    self.at += 1;
                    out.push(match e {
                        b'n' => b'\n',
                        b't' => b'\t',
                        other => other, // \" \\ \/; LVM writes no \u
                    });
                }
                _ => out.push(b),
            }
        }
    }
}
