//! Query strings (hostile input): `a=1&b=x%20y` decoded into pairs, then
//! into each route's typed parameters.
//!
//! Parsing is strict so that a typo is an error, not silently ignored: an
//! unknown or repeated parameter, a bad percent escape, bytes that are not
//! UTF-8 (but in a parameter that takes bytes: a path) and values of the
//! wrong type are all a [`QueryError`]. The
//! number of parameters is bounded before anything is allocated per pair.

use std::str::FromStr;

use weir_log::TypeMask;
use weir_view::devices_columns::DevColumns;
use weir_view::devices_view::DevicesOptions;
use weir_view::log_select::PathPrefix;
use weir_view::lvm_columns::Columns as LvmColumns;
use weir_view::lvm_units::Units;
use weir_view::lvm_view::{Listing, TextOptions};
use weir_view::mounts_table::{Columns, Style};

/// The most parameters one query may have.
pub const MAX_PARAMS: usize = 32;

/// The columns of `weir mounts` when none are asked for.
pub const DEFAULT_COLUMNS: &str = "TARGET,SOURCE,FSTYPE,OPTIONS";

/// What is wrong with a query string.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// `%` not followed by two hex digits.
    #[error("bad percent escape in the query")]
    BadEscape,
    /// A decoded name or value is not UTF-8.
    #[error("the query is not UTF-8 once decoded")]
    NotUtf8,
    /// More than [`MAX_PARAMS`] parameters.
    #[error("more than {MAX_PARAMS} query parameters")]
    TooMany,
    /// A parameter this route does not take.
    #[error("unknown query parameter {0:?}")]
    Unknown(String),
    /// A parameter given twice.
    #[error("query parameter {0:?} is given twice")]
    Repeated(String),
    /// A value of the wrong form.
    #[error("query parameter {name}: {reason}")]
    BadValue {
        /// The parameter.
        name: &'static str,
        /// What is wrong, and what is expected.
        reason: String,
    },
}

/// Decodes `a=1&b=2` into pairs (`+` is a space; an empty item is
/// skipped; a name without `=` has an empty value).
pub fn parse_pairs(query: &str) -> Result<Vec<(String, String)>, QueryError> {
    raw_pairs(query)?
        .into_iter()
        .map(|(k, v)| Ok((k, String::from_utf8(v).map_err(|_| QueryError::NotUtf8)?)))
        .collect()
}

/// [`parse_pairs`] with each value left as bytes: names are UTF-8, values
/// need not be until a route says they must.
fn raw_pairs(query: &str) -> Result<Vec<(String, Vec<u8>)>, QueryError> {
    let items = query.split('&').filter(|s| !s.is_empty());
    if items.clone().count() > MAX_PARAMS {
        return Err(QueryError::TooMany);
    }
    items
        .map(|item| {
            let (k, v) = item.split_once('=').unwrap_or((item, ""));
            let k = String::from_utf8(decode(k)?).map_err(|_| QueryError::NotUtf8)?;
            Ok((k, decode(v)?))
        })
        .collect()
}

/// Percent-decodes one name or value into its bytes.
fn decode(s: &str) -> Result<Vec<u8>, QueryError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = |j: usize| b.get(j).and_then(|&d| char::from(d).to_digit(16));
                let (Some(hi), Some(lo)) = (hex(i + 1), hex(i + 2)) else {
                    return Err(QueryError::BadEscape);
                };
                // Two hex digits are below 256.
                out.push(u8::try_from(hi * 16 + lo).map_err(|_| QueryError::BadEscape)?);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    Ok(out)
}

/// The pairs of a query, each taken at most once by name. Every value is
/// UTF-8 but those of the parameters a route takes as bytes.
pub(super) struct Params(Vec<(String, Option<Vec<u8>>)>);

impl Params {
    fn parse(query: Option<&str>) -> Result<Params, QueryError> {
        Params::parse_with_bytes(query, &[])
    }

    /// As [`Params::parse`], the values of `bytes` left as bytes that
    /// need not be UTF-8 (a path).
    pub(super) fn parse_with_bytes(
        query: Option<&str>,
        bytes: &[&str],
    ) -> Result<Params, QueryError> {
        let pairs = raw_pairs(query.unwrap_or(""))?;
        for (k, v) in &pairs {
            if !bytes.contains(&k.as_str()) && std::str::from_utf8(v).is_err() {
                return Err(QueryError::NotUtf8);
            }
        }
        for (i, (k, _)) in pairs.iter().enumerate() {
            if pairs[..i].iter().any(|(o, _)| o == k) {
                return Err(QueryError::Repeated(k.clone()));
            }
        }
        Ok(Params(
            pairs.into_iter().map(|(k, v)| (k, Some(v))).collect(),
        ))
    }

    /// Takes the value of `name`, if given.
    pub(super) fn take(&mut self, name: &str) -> Option<String> {
        // UTF-8 unless the route took `name` as bytes (then lossy, which
        // no route does).
        self.take_bytes(name)
            .map(|v| String::from_utf8_lossy(&v).into_owned())
    }

    /// Takes the value of `name` as bytes, if given.
    pub(super) fn take_bytes(&mut self, name: &str) -> Option<Vec<u8>> {
        self.0
            .iter_mut()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.take())
    }

    /// Fails on any parameter not taken.
    pub(super) fn done(self) -> Result<(), QueryError> {
        match self.0.into_iter().find(|(_, v)| v.is_some()) {
            Some((k, _)) => Err(QueryError::Unknown(k)),
            None => Ok(()),
        }
    }
}

pub(super) fn bad(name: &'static str, reason: impl Into<String>) -> QueryError {
    QueryError::BadValue {
        name,
        reason: reason.into(),
    }
}

/// The form of an answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Format {
    /// JSON (the default).
    #[default]
    Json,
    /// The CLI's text form.
    Text,
}

impl FromStr for Format {
    type Err = QueryError;
    fn from_str(s: &str) -> Result<Format, QueryError> {
        match s {
            "json" => Ok(Format::Json),
            "text" => Ok(Format::Text),
            _ => Err(bad("format", "expected json or text")),
        }
    }
}

pub(super) fn format(p: &mut Params) -> Result<Format, QueryError> {
    p.take("format").map_or(Ok(Format::Json), |v| v.parse())
}

/// `true` or `false`, the spellings of the document's booleans; `1` and
/// `0` are not taken, so that one request has one spelling.
fn boolean(name: &'static str, v: &str) -> Result<bool, QueryError> {
    match v {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad(name, "expected true or false")),
    }
}

/// Decimal digits only: `u64::from_str` also takes a leading `+`, which
/// no integer of the document is written with.
pub(super) fn number(name: &'static str, v: &str) -> Result<u64, QueryError> {
    let wrong = || bad(name, "expected a whole number from 0 to 2^64-1");
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(wrong());
    }
    v.parse().map_err(|_| wrong())
}

/// `GET /v1/mounts`: `format`, `columns`, `tree`, `ascii`, `bytes`, as
/// `weir mounts [--json] [-o COLUMNS] [--tree] [--ascii] [--bytes]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountsQuery {
    /// JSON or text.
    pub format: Format,
    /// The text form's columns (ignored for JSON).
    pub columns: Columns,
    /// How the text form is drawn (ignored for JSON). Without `tree`, the
    /// list: what the API served before it had a tree.
    pub style: Style,
}

impl MountsQuery {
    /// Parses the query of `GET /v1/mounts`.
    pub fn parse(query: Option<&str>) -> Result<MountsQuery, QueryError> {
        let mut p = Params::parse(query)?;
        let format = format(&mut p)?;
        let cols = p.take("columns");
        let columns = Columns::parse(cols.as_deref().unwrap_or(DEFAULT_COLUMNS))
            .map_err(|e| bad("columns", e.to_string()))?;
        let flag = |p: &mut Params, name| p.take(name).map_or(Ok(false), |v| boolean(name, &v));
        let style = Style {
            tree: flag(&mut p, "tree")?,
            ascii: flag(&mut p, "ascii")?,
            bytes: flag(&mut p, "bytes")?,
        };
        p.done()?;
        Ok(MountsQuery {
            format,
            columns,
            style,
        })
    }
}

/// `GET /v1/lvm/pvs`, `/v1/lvm/vgs`, `/v1/lvm/lvs`: `format`, `columns`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LvmQuery {
    /// JSON or text.
    pub format: Format,
    /// The text form's columns (`None`: the default ones) and units,
    /// checked even for JSON, which ignores them.
    pub text: TextOptions,
}

impl LvmQuery {
    /// Parses the query of an LVM report of `listing`.
    pub fn parse(listing: Listing, query: Option<&str>) -> Result<LvmQuery, QueryError> {
        let mut p = Params::parse(query)?;
        let format = format(&mut p)?;
        let columns = p
            .take("columns")
            .map(|v| LvmColumns::parse(listing, &v).map_err(|e| bad("columns", e.to_string())))
            .transpose()?;
        let units = p
            .take("units")
            .map(|v| Units::parse(&v).map_err(|e| bad("units", e.to_string())))
            .transpose()?
            .unwrap_or_default();
        let nosuffix = p
            .take("nosuffix")
            .map_or(Ok(false), |v| boolean("nosuffix", &v))?;
        p.done()?;
        let units = if nosuffix {
            units.without_suffix()
        } else {
            units
        };
        Ok(LvmQuery {
            format,
            text: TextOptions { columns, units },
        })
    }
}

/// `GET /v1/devices`: `format`, `all`, `list`, `columns`, as
/// `weir devices [--json] [-a] [-l] [-o COLUMNS]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DevicesQuery {
    /// JSON or text.
    pub format: Format,
    /// What is listed and how; JSON takes only `all`.
    pub options: DevicesOptions,
}

impl DevicesQuery {
    /// Parses the query of `GET /v1/devices`.
    pub fn parse(query: Option<&str>) -> Result<DevicesQuery, QueryError> {
        let mut p = Params::parse(query)?;
        let format = format(&mut p)?;
        let flag = |p: &mut Params, name| p.take(name).map_or(Ok(false), |v| boolean(name, &v));
        let all = flag(&mut p, "all")?;
        let list = flag(&mut p, "list")?;
        let columns = match p.take("columns") {
            Some(v) => DevColumns::parse(&v).map_err(|e| bad("columns", e.to_string()))?,
            None => DevColumns::default(),
        };
        p.done()?;
        Ok(DevicesQuery {
            format,
            options: DevicesOptions { all, list, columns },
        })
    }
}

/// `GET /v1/fs`: `format`, as `weir fs [--json]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsQuery {
    /// JSON or text.
    pub format: Format,
}

impl FsQuery {
    /// Parses the query of `GET /v1/fs`.
    pub fn parse(query: Option<&str>) -> Result<FsQuery, QueryError> {
        let mut p = Params::parse(query)?;
        let format = format(&mut p)?;
        p.done()?;
        Ok(FsQuery { format })
    }
}

/// A query that takes nothing.
pub fn parse_empty(query: Option<&str>) -> Result<(), QueryError> {
    Params::parse(query)?.done()
}

/// `GET /v1/fs/changes`: `root` (bytes, absolute, as watched), `since`
/// and `format`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsChangesQuery {
    /// The watched root's path.
    pub root: Vec<u8>,
    /// The log index asked from.
    pub since: u64,
    /// JSON or text.
    pub format: Format,
}

impl FsChangesQuery {
    /// Parses the query of `GET /v1/fs/changes`.
    pub fn parse(query: Option<&str>) -> Result<FsChangesQuery, QueryError> {
        let mut p = Params::parse_with_bytes(query, &["root"])?;
        let root = absolute_root(&mut p)?;
        let since = p
            .take("since")
            .ok_or_else(|| bad("since", "expected a log index"))
            .and_then(|v| number("since", &v))?;
        let format = format(&mut p)?;
        p.done()?;
        Ok(FsChangesQuery {
            root,
            since,
            format,
        })
    }
}

/// `POST /v1/fs/rescan`: `root` (bytes, absolute, as watched) and `format`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsRescanQuery {
    /// The watched root's path.
    pub root: Vec<u8>,
    /// JSON or text.
    pub format: Format,
}

impl FsRescanQuery {
    /// Parses the query of `POST /v1/fs/rescan`.
    pub fn parse(query: Option<&str>) -> Result<FsRescanQuery, QueryError> {
        let mut p = Params::parse_with_bytes(query, &["root"])?;
        let root = absolute_root(&mut p)?;
        let format = format(&mut p)?;
        p.done()?;
        Ok(FsRescanQuery { root, format })
    }
}

/// A watched root's path: bytes, required, absolute.
fn absolute_root(p: &mut Params) -> Result<Vec<u8>, QueryError> {
    p.take_bytes("root")
        .filter(|r| r.first() == Some(&b'/'))
        .ok_or_else(|| bad("root", "expected the watched root's absolute path"))
}

/// `GET /v1/log/records`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordsQuery {
    /// The first index; `None`: the oldest record, or after the
    /// consumer's cleared index.
    pub from: Option<u64>,
    /// Only these types (intersected with the consumer's mask).
    pub mask: Option<TypeMask>,
    /// Read as this consumer.
    pub consumer: Option<String>,
    /// Keep the stream open for new records.
    pub follow: bool,
    /// At most this many records.
    pub limit: Option<u64>,
    /// Only records of these times, `since..=until` in ns since the epoch
    /// (`weir log tail --since/--until`, resolved by the client).
    pub times: Option<(u64, u64)>,
    /// Only records about this subtree of a watched root (`weir log tail
    /// --path`): bytes, which need not be UTF-8.
    pub path: Option<PathPrefix>,
    /// JSON lines or text lines.
    pub format: Format,
}

impl RecordsQuery {
    /// Parses the query of `GET /v1/log/records`.
    pub fn parse(query: Option<&str>) -> Result<RecordsQuery, QueryError> {
        let mut p = Params::parse_with_bytes(query, &["path"])?;
        let from = p.take("from").map(|v| number("from", &v)).transpose()?;
        let mask = p
            .take("mask")
            .map(|v| TypeMask::parse(&v).map_err(|e| bad("mask", e.to_string())))
            .transpose()?;
        let consumer = p.take("consumer");
        if consumer.as_deref() == Some("") {
            return Err(bad("consumer", "expected a consumer name"));
        }
        let follow = p
            .take("follow")
            .map(|v| boolean("follow", &v))
            .transpose()?
            .unwrap_or(false);
        let limit = p.take("limit").map(|v| number("limit", &v)).transpose()?;
        let since = p
            .take("since_ns")
            .map(|v| number("since_ns", &v))
            .transpose()?;
        let until = p
            .take("until_ns")
            .map(|v| number("until_ns", &v))
            .transpose()?;
        // Either end alone leaves the other open; an empty window (until
        // before since) shows nothing, as the document's schema allows it.
        let times = match (since, until) {
            (None, None) => None,
            (since, until) => Some((since.unwrap_or(0), until.unwrap_or(u64::MAX))),
        };
        let path = p.take_bytes("path").map(|v| PathPrefix::new(&v));
        let format = format(&mut p)?;
        p.done()?;
        Ok(RecordsQuery {
            from,
            mask,
            consumer,
            follow,
            limit,
            times,
            path,
            format,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_log::RecordType;

    #[test]
    fn pairs_decode() {
        assert_eq!(
            parse_pairs("a=1&&b=x%20y+z&c").unwrap(),
            [
                ("a".into(), "1".into()),
                ("b".into(), "x y z".into()),
                ("c".into(), String::new())
            ]
        );
        assert_eq!(parse_pairs("a=%2").unwrap_err(), QueryError::BadEscape);
        assert_eq!(parse_pairs("a=%zz").unwrap_err(), QueryError::BadEscape);
        assert_eq!(parse_pairs("a=%ff").unwrap_err(), QueryError::NotUtf8);
        assert_eq!(parse_pairs("%C3%A9=%e2%82%ac").unwrap()[0].1, "€");
        let many = vec!["a=1"; MAX_PARAMS + 1].join("&");
        assert_eq!(parse_pairs(&many).unwrap_err(), QueryError::TooMany);
    }

    #[test]
    fn records_query() {
        let q = RecordsQuery::parse(Some(
            "from=5&mask=all,-MARK&consumer=c1&follow=true&limit=3&format=text",
        ))
        .unwrap();
        assert_eq!(q.from, Some(5));
        let m = q.mask.unwrap();
        assert!(!m.contains(RecordType::MARK) && m.contains(RecordType::CREAT));
        assert_eq!(q.consumer.as_deref(), Some("c1"));
        assert!(q.follow);
        assert_eq!((q.limit, q.format), (Some(3), Format::Text));

        let d = RecordsQuery::parse(None).unwrap();
        assert_eq!((d.from, d.follow, d.format), (None, false, Format::Json));
        assert_eq!(d.times, None);
        assert_eq!(d.path, None);

        // A path is bytes: percent escapes of any byte, UTF-8 or not,
        // normalized as `weir log tail --path` takes it.
        let path = |q: &str| RecordsQuery::parse(Some(q)).unwrap().path;
        assert_eq!(path("path=docs%2Fa"), Some(PathPrefix::new(b"docs/a")));
        assert_eq!(
            path("path=%2Fdocs%2F%2Fcaf%E9%2F"),
            Some(PathPrefix::new(b"docs/caf\xe9"))
        );
        assert_eq!(path("path="), Some(PathPrefix::new(b"")));
        // Other parameters stay UTF-8.
        assert_eq!(
            RecordsQuery::parse(Some("path=%ff&consumer=%ff")).unwrap_err(),
            QueryError::NotUtf8
        );
        assert!(RecordsQuery::parse(Some("path=a&path=b")).is_err());
        assert!(RecordsQuery::parse(Some("path=%zz")).is_err());

        // A time window: either end alone is open at the other.
        let t = |q: &str| RecordsQuery::parse(Some(q)).unwrap().times;
        assert_eq!(t("since_ns=5&until_ns=9"), Some((5, 9)));
        assert_eq!(t("since_ns=5&until_ns=5"), Some((5, 5)));
        assert_eq!(t("since_ns=5"), Some((5, u64::MAX)));
        assert_eq!(t("until_ns=9"), Some((0, 9)));
        assert_eq!(t("since_ns=9&until_ns=5"), Some((9, 5)));

        // Numbers in digits (leading zeros are still digits), booleans as
        // true or false.
        let q = RecordsQuery::parse(Some("from=007&follow=false")).unwrap();
        assert_eq!((q.from, q.follow), (Some(7), false));
        for bad in [
            "from=-1",
            "from=+1",
            "from=",
            "limit=+0",
            "limit=1.0",
            "since_ns=-1",
            "until_ns=1e9",
            "follow=1",
            "follow=0",
            "follow=TRUE",
            "from=x",
            "from=18446744073709551616",
            "follow=yes",
            "mask=NOPE",
            "format=xml",
            "consumer=",
            "from=1&from=2",
            "color=red",
        ] {
            assert!(RecordsQuery::parse(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn lvm_query() {
        let q =
            LvmQuery::parse(Listing::Lvs, Some("format=text&columns=%2Bdevices,SEGTYPE")).unwrap();
        assert_eq!(q.format, Format::Text);
        assert_eq!(
            q.text.columns.unwrap().headers(),
            ["LV", "VG", "ATTR", "LSIZE", "DEVICES", "TYPE"]
        );
        let d = LvmQuery::parse(Listing::Pvs, None).unwrap();
        assert_eq!((d.format, d.text), (Format::Json, TextOptions::default()));
        // Checked for JSON too, though JSON ignores them.
        let e = LvmQuery::parse(Listing::Vgs, Some("columns=lv_name")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("query parameter columns: unknown column \"lv_name\" for weir vgs (valid columns: VG (vg_name)"),
            "{e}"
        );
        for bad in [
            "columns=",
            "columns=a,,b",
            "columns=pv_name&columns=pv_size",
            "columns=%ff",
            "column=pv_name",
        ] {
            assert!(LvmQuery::parse(Listing::Pvs, Some(bad)).is_err(), "{bad}");
        }
        let many = vec!["pv_name"; weir_view::table::MAX_COLUMNS + 1].join(",");
        assert!(LvmQuery::parse(Listing::Pvs, Some(&format!("columns={many}"))).is_err());
    }

    #[test]
    fn devices_query() {
        let q =
            DevicesQuery::parse(Some("format=text&all=true&list=true&columns=%2Bfstype")).unwrap();
        assert_eq!(q.format, Format::Text);
        assert!(q.options.all && q.options.list);
        assert_eq!(q.options.columns.headers().last(), Some(&"FSTYPE"));
        let d = DevicesQuery::parse(None).unwrap();
        assert_eq!(d.format, Format::Json);
        assert_eq!(d.options, DevicesOptions::default());
        for bad in [
            "all=1",
            "list=yes",
            "columns=",
            "columns=nope",
            "all=true&all=true",
            "tree=true",
        ] {
            assert!(DevicesQuery::parse(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn mounts_query() {
        let q = MountsQuery::parse(Some("format=text&columns=id,target")).unwrap();
        assert_eq!(q.format, Format::Text);
        assert_eq!(q.columns, Columns::parse("ID,TARGET").unwrap());
        let d = MountsQuery::parse(Some("")).unwrap();
        assert_eq!(d.columns, Columns::parse(DEFAULT_COLUMNS).unwrap());
        assert_eq!(d.style, Style::default());
        let t = MountsQuery::parse(Some("columns=target,use%25&tree=true&bytes=true")).unwrap();
        assert_eq!(t.columns, Columns::parse("TARGET,USE%").unwrap());
        let want = Style {
            tree: true,
            ascii: false,
            bytes: true,
        };
        assert_eq!(t.style, want);
        assert!(MountsQuery::parse(Some("columns=NOPE")).is_err());
        assert!(MountsQuery::parse(Some("tree=1")).is_err());
        assert!(MountsQuery::parse(Some("ascii=true&ascii=false")).is_err());
        assert!(MountsQuery::parse(Some("columns=")).is_err());
        let many = vec!["ID"; weir_view::table::MAX_COLUMNS + 1].join(",");
        let e = MountsQuery::parse(Some(&format!("columns={many}"))).unwrap_err();
        assert!(e.to_string().contains("more than 64 columns"), "{e}");
        assert!(DevicesQuery::parse(Some("columns=ID")).is_err());
        assert!(parse_empty(Some("x=1")).is_err());
        assert!(parse_empty(Some("x=%ff")).is_err());
        assert_eq!(
            FsQuery::parse(Some("format=text")).unwrap().format,
            Format::Text
        );
        assert_eq!(FsQuery::parse(None).unwrap().format, Format::Json);
        for bad in ["format=xml", "json=true", "format=json&format=json"] {
            assert!(FsQuery::parse(Some(bad)).is_err(), "{bad}");
        }
        assert!(parse_empty(Some("&&")).is_ok());
    }

    #[test]
    fn fs_queries_take_the_root_as_bytes() {
        let q = FsChangesQuery::parse(Some("root=/srv/a%FF&since=7&format=text")).unwrap();
        assert_eq!(
            q,
            FsChangesQuery {
                root: b"/srv/a\xff".to_vec(),
                since: 7,
                format: Format::Text
            }
        );
        for bad in [
            "root=/srv",
            "since=3",
            "root=srv&since=3",
            "root=/srv&since=-1",
            "root=/srv&since=3&x=1",
        ] {
            assert!(FsChangesQuery::parse(Some(bad)).is_err(), "{bad}");
        }
        let r = FsRescanQuery::parse(Some("root=%2Fsrv&format=json")).unwrap();
        assert_eq!((r.root, r.format), (b"/srv".to_vec(), Format::Json));
        for bad in [
            "",
            "root=srv",
            "root=/srv&x=1",
            "root=/a&root=/b",
            "format=json",
        ] {
            assert!(FsRescanQuery::parse(Some(bad)).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        /// Any absolute path, every byte percent-escaped, and any index
        /// come back as sent.
        #[test]
        fn fs_queries_round_trip(rest in proptest::collection::vec(proptest::num::u8::ANY, 0..300), since: u64) {
            let mut root = vec![b'/'];
            root.extend(&rest);
            let escaped: String = root.iter().map(|b| format!("%{b:02X}")).collect();
            let q = FsChangesQuery::parse(Some(&format!("root={escaped}&since={since}"))).unwrap();
            proptest::prop_assert_eq!((&q.root, q.since), (&root, since));
            let r = FsRescanQuery::parse(Some(&format!("format=text&root={escaped}"))).unwrap();
            proptest::prop_assert_eq!(r.root, root);
        }
    }
}
