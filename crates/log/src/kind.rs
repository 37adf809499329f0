//! Record types and type masks.
//!
//! A record type is an open `u16` space. Codes 0–63 keep Lustre's changelog
//! numbering for the namespace types, 64–127 are weir's system types, and
//! 128 and up belong to applications. A [`TypeMask`] selects any subset of
//! the whole space, so a consumer can follow application types as easily as
//! built-in ones.

use crate::error::{Error, Result};

/// The type of a record: a code in an open set.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordType(pub u16);

macro_rules! types {
    ($($(#[$doc:meta])* $name:ident = $code:expr;)*) => {
        impl RecordType {
            $($(#[$doc])* pub const $name: RecordType = RecordType($code);)*
        }
        const NAMED: &[(&str, u16)] = &[$((stringify!($name), $code)),*];
    };
}

types! {
    /// A marker written by the log itself or an application (Lustre MARK).
    MARK = 0;
    /// A regular file was created.
    CREAT = 1;
    /// A directory was created.
    MKDIR = 2;
    /// A hard link was made.
    HLINK = 3;
    /// A symbolic link was made.
    SLINK = 4;
    /// A device or FIFO node was made.
    MKNOD = 5;
    /// A name was unlinked.
    UNLNK = 6;
    /// A directory was removed.
    RMDIR = 7;
    /// The source half of a rename.
    RENME = 8;
    /// The target half of a rename.
    RNMTO = 9;
    /// A file was opened.
    OPEN = 10;
    /// A file was closed.
    CLOSE = 11;
    /// A file was truncated.
    TRUNC = 13;
    /// Attributes were set.
    SATTR = 14;
    /// An extended attribute changed.
    XATTR = 15;
    /// The modification time changed.
    MTIME = 17;
    /// The change time changed.
    CTIME = 18;
    /// The access time changed.
    ATIME = 19;
    /// A block device appeared.
    DEVICE_ADD = 64;
    /// A block device went away.
    DEVICE_REMOVE = 65;
    /// A block device changed (size, media, read-only state).
    DEVICE_CHANGE = 66;
    /// An LVM2 physical volume label was found.
    PV_FOUND = 67;
    /// An LVM2 physical volume disappeared.
    PV_LOST = 68;
    /// Every physical volume of a volume group is present.
    VG_COMPLETE = 69;
    /// A volume group lost a physical volume.
    VG_INCOMPLETE = 70;
    /// A mount was attached.
    MOUNT_ATTACH = 71;
    /// A mount was detached.
    MOUNT_DETACH = 72;
    /// A mount was moved.
    MOUNT_MOVE = 73;
    /// A mount's options or propagation changed.
    MOUNT_CHANGE = 74;
    /// A volume group's metadata was rewritten (a new seqno).
    VG_CHANGE = 75;
    /// A volume group's metadata is gone from its present PVs (vgremove).
    VG_REMOVE = 76;
    /// A physical volume moved between a volume group and the orphans.
    PV_CHANGE = 77;
    /// A logical volume appeared.
    LV_ADD = 78;
    /// A logical volume went away.
    LV_REMOVE = 79;
    /// A logical volume changed (size, segments, name, status).
    LV_CHANGE = 80;
}

impl RecordType {
    /// The first code reserved for applications.
    pub const FIRST_APPLICATION: u16 = 128;

    /// The type's name, if it is a built-in type.
    pub fn name(self) -> Option<&'static str> {
        NAMED.iter().find(|(_, c)| *c == self.0).map(|(n, _)| *n)
    }

    /// Looks a type up by its name (case-insensitive) or number.
    pub fn parse(s: &str) -> Result<RecordType> {
        if let Some((_, c)) = NAMED.iter().find(|(n, _)| n.eq_ignore_ascii_case(s)) {
            return Ok(RecordType(*c));
        }
        s.parse::<u16>().map(RecordType).map_err(|_| {
            // Digits name a code (too large); anything else was meant as a name.
            if s.is_empty() || s.bytes().all(|b| b.is_ascii_digit()) {
                Error::BadType(s.to_owned())
            } else {
                Error::UnknownType(s.to_owned())
            }
        })
    }

    /// All built-in types with their names.
    pub fn builtin() -> impl Iterator<Item = (&'static str, RecordType)> {
        NAMED.iter().map(|(n, c)| (*n, RecordType(*c)))
    }
}

impl std::fmt::Display for RecordType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "{}", self.0),
        }
    }
}

impl std::fmt::Debug for RecordType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RecordType({self})")
    }
}

/// The built-in types' names, `, `-joined, for the message that a name
/// is unknown.
pub(crate) fn type_names() -> String {
    NAMED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

const WORDS: usize = 65536 / 64;

/// A set of record types, over the whole `u16` space.
///
/// Membership is one bit test, so filtering costs the same for any mask.
#[derive(Clone, PartialEq, Eq)]
pub struct TypeMask {
    bits: Box<[u64; WORDS]>,
}

impl TypeMask {
    /// The mask that selects every type.
    pub fn all() -> TypeMask {
        TypeMask {
            bits: Box::new([u64::MAX; WORDS]),
        }
    }

    /// The mask that selects nothing.
    pub fn none() -> TypeMask {
        TypeMask {
            bits: Box::new([0; WORDS]),
        }
    }

    /// Adds a type.
    pub fn insert(&mut self, t: RecordType) {
        self.bits[usize::from(t.0) / 64] |= 1 << (t.0 % 64);
    }

    /// Removes a type.
    pub fn remove(&mut self, t: RecordType) {
        self.bits[usize::from(t.0) / 64] &= !(1 << (t.0 % 64));
    }

    /// Adds (`on`) or removes every type from `a` to `b`, a word at a
    /// time: `all` costs 1024 stores, not 65,536.
    fn set_range(&mut self, a: u16, b: u16, on: bool) {
        let (a, b) = (usize::from(a), usize::from(b.max(a)));
        for w in a / 64..=b / 64 {
            let lo = if w == a / 64 { a % 64 } else { 0 };
            let hi = if w == b / 64 { b % 64 } else { 63 };
            let bits = (u64::MAX >> (63 - hi)) & (u64::MAX << lo);
            if on {
                self.bits[w] |= bits;
            } else {
                self.bits[w] &= !bits;
            }
        }
    }

    /// Whether the mask selects `t`.
    #[inline]
    pub fn contains(&self, t: RecordType) -> bool {
        self.bits[usize::from(t.0) / 64] & (1 << (t.0 % 64)) != 0
    }

    /// The types both masks select (a consumer's mask narrowed by a
    /// reader's), a word at a time.
    pub fn intersection(&self, other: &TypeMask) -> TypeMask {
        let mut m = self.clone();
        for (w, o) in m.bits.iter_mut().zip(other.bits.iter()) {
            *w &= o;
        }
        m
    }

    /// Whether the mask selects every type.
    pub fn is_all(&self) -> bool {
        self.bits.iter().all(|w| *w == u64::MAX)
    }

    /// Parses a comma-separated list of type names, numbers and ranges
    /// (`A-B`), `all`, and exclusions prefixed with `-` or `^`
    /// (`all,-MARK`). An empty string selects everything.
    pub fn parse(s: &str) -> Result<TypeMask> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(TypeMask::all());
        }
        if s.split(',').count() > MAX_MASK_ITEMS {
            return Err(Error::MaskTooLong {
                limit: MAX_MASK_ITEMS,
            });
        }
        let mut mask = TypeMask::none();
        let mut first = true;
        for item in s.split(',').map(str::trim) {
            let (neg, body) = match item.strip_prefix(['-', '^']) {
                Some(rest) => (true, rest),
                None => (false, item),
            };
            if body.is_empty() {
                return Err(Error::BadType(item.to_owned()));
            }
            if neg && first {
                // A list that starts with an exclusion means "all but ...".
                mask = TypeMask::all();
            }
            first = false;
            let (a, b) = expand(body)?;
            mask.set_range(a, b, !neg);
        }
        Ok(mask)
    }

    /// The mask as ranges of codes, compact and stable for persistence.
    pub fn ranges(&self) -> Vec<(u16, u16)> {
        let mut out = Vec::new();
        let mut start: Option<usize> = None;
        for (w, &word) in self.bits.iter().enumerate() {
            // Whole words inside a range, or between ranges, change nothing.
            if (word == u64::MAX && start.is_some()) || (word == 0 && start.is_none()) {
                continue;
            }
            for bit in 0..64 {
                let code = w * 64 + bit;
                match (word >> bit & 1 == 1, start) {
                    (true, None) => start = Some(code),
                    (false, Some(s)) => {
                        out.push((code_of(s), code_of(code - 1)));
                        start = None;
                    }
                    _ => {}
                }
            }
        }
        if let Some(s) = start {
            out.push((code_of(s), u16::MAX));
        }
        out
    }

    /// Builds a mask from ranges as returned by [`TypeMask::ranges`].
    pub fn from_ranges(ranges: &[(u16, u16)]) -> TypeMask {
        let mut m = TypeMask::none();
        for &(a, b) in ranges {
            m.set_range(a, b, true);
        }
        m
    }
}

/// The most items a mask's text may list: as many ranges as a mask can
/// have (every other code), so that every mask's text parses back. Each
/// item costs up to 1024 word stores, and masks come from API queries.
pub(crate) const MAX_MASK_ITEMS: usize = 32_768;

/// A bit position of the mask as a type code (always below 65,536).
fn code_of(bit: usize) -> u16 {
    u16::try_from(bit).expect("a mask has 65,536 bits")
}

/// The codes one item of a mask's text names, as a range.
fn expand(body: &str) -> Result<(u16, u16)> {
    if body.eq_ignore_ascii_case("all") {
        return Ok((0, u16::MAX));
    }
    if let Some((a, b)) = body.split_once('-') {
        let bad_range = || Error::BadTypeRange(body.to_owned());
        if a.trim().is_empty() || b.trim().is_empty() || b.contains('-') {
            return Err(bad_range());
        }
        let (a, b) = (RecordType::parse(a.trim())?, RecordType::parse(b.trim())?);
        if a > b {
            return Err(bad_range());
        }
        return Ok((a.0, b.0));
    }
    let t = RecordType::parse(body)?;
    Ok((t.0, t.0))
}

impl std::fmt::Display for TypeMask {
    /// Formats the mask so that [`TypeMask::parse`] reads it back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_all() {
            return f.write_str("all");
        }
        if self.bits.iter().all(|w| *w == 0) {
            // "" would parse as "all"; this parses as the empty mask.
            return f.write_str("-all");
        }
        // Names where types have them, and a mask that takes most types as
        // "all" less what it leaves out ("all,-MARK"), as a person would
        // write it. The complement is used only where it has no more
        // ranges, so the text stays within what parses back.
        let ranges = self.ranges();
        let holes = complement(&ranges);
        let most = self.bits.iter().map(|w| w.count_ones()).sum::<u32>() > 1 << 15;
        let mut parts = Vec::new();
        if most && holes.len() <= ranges.len() && holes.len() < MAX_MASK_ITEMS {
            parts.push("all".to_owned());
            for &(a, b) in &holes {
                parts.extend(items(a, b).into_iter().map(|i| format!("-{i}")));
            }
        } else {
            parts.extend(ranges.iter().flat_map(|&(a, b)| items(a, b)));
        }
        if parts.len() > MAX_MASK_ITEMS {
            // Every item covers a code, so only a mask of nearly every
            // other code, with named runs spelled out, could get here: one
            // range per item always parses back.
            parts = ranges.iter().map(|&(a, b)| format!("{a}-{b}")).collect();
        }
        f.write_str(&parts.join(","))
    }
}

/// A range of codes as items of a mask's text: a type's name where it has
/// one, a short range of named types as their names (`MOUNT_ATTACH`,
/// `MOUNT_DETACH`), else its ends as numbers (`200-210`): a range between
/// two names would hide the unnamed codes inside it.
fn items(a: u16, b: u16) -> Vec<String> {
    let named = |c: u16| RecordType(c).name();
    if b - a < 4 && (a..=b).all(|c| named(c).is_some()) {
        return (a..=b).filter_map(named).map(str::to_owned).collect();
    }
    vec![if a == b {
        named(a).map_or_else(|| a.to_string(), str::to_owned)
    } else {
        format!("{a}-{b}")
    }]
}

/// The codes outside `ranges` (sorted, disjoint, not touching), as ranges.
fn complement(ranges: &[(u16, u16)]) -> Vec<(u16, u16)> {
    let mut out = Vec::new();
    let mut next: u32 = 0;
    for &(a, b) in ranges {
        if u32::from(a) > next {
            out.push((code_of(next as usize), a - 1));
        }
        next = u32::from(b) + 1;
    }
    if next <= u32::from(u16::MAX) {
        out.push((code_of(next as usize), u16::MAX));
    }
    out
}

impl std::fmt::Debug for TypeMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TypeMask({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (name, t) in RecordType::builtin() {
            assert_eq!(RecordType::parse(name).unwrap(), t);
            assert_eq!(t.to_string(), name);
        }
        assert_eq!(RecordType::parse("creat").unwrap(), RecordType::CREAT);
        assert_eq!(RecordType::parse("4000").unwrap(), RecordType(4000));
        assert!(RecordType::parse("NOPE").is_err());
    }

    #[test]
    fn masks_show_names_and_the_shorter_form() {
        let show = |text: &str| TypeMask::parse(text).unwrap().to_string();
        assert_eq!(
            show("MOUNT_ATTACH,MOUNT_DETACH"),
            "MOUNT_ATTACH,MOUNT_DETACH"
        );
        assert_eq!(show("71-72"), "MOUNT_ATTACH,MOUNT_DETACH");
        assert_eq!(show("all,-MARK"), "all,-MARK");
        assert_eq!(show("-MARK,-CREAT"), "all,-MARK,-CREAT");
        assert_eq!(show("200-210,300"), "200-210,300");
        assert_eq!(show("0-65534"), "all,-65535");
        assert_eq!(show("0-70"), "0-70");
        assert_eq!(show("all"), "all");
        assert_eq!(show("-all"), "-all");
    }

    #[test]
    fn mask_parse_and_display() {
        let m = TypeMask::parse("CREAT,UNLNK,200-210").unwrap();
        assert!(m.contains(RecordType::CREAT) && m.contains(RecordType(205)));
        assert!(!m.contains(RecordType::MKDIR));
        assert_eq!(TypeMask::parse(&m.to_string()).unwrap(), m);
        let m = TypeMask::parse("-MARK").unwrap();
        assert!(!m.contains(RecordType::MARK) && m.contains(RecordType(60000)));
        assert_eq!(TypeMask::from_ranges(&m.ranges()), m);
        assert!(TypeMask::parse("").unwrap().is_all());
        assert!(TypeMask::parse("9-3").is_err());
        assert!(TypeMask::parse("CREAT,").is_err());
    }

    #[test]
    fn an_unknown_name_is_not_called_a_bad_range() {
        // An administrator who mistypes a name is told the name is unknown
        // and what the names are, not how to write a range.
        let e = TypeMask::parse("CREAT,NOSUCH").unwrap_err();
        assert!(
            matches!(&e, Error::UnknownType(n) if n == "NOSUCH"),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(
            text.contains("unknown record type name \"NOSUCH\""),
            "{text}"
        );
        assert!(
            text.contains("DEVICE_ADD") && text.contains("docs/records.md"),
            "{text}"
        );
        assert!(!text.contains("range"), "{text}");
        assert!(matches!(
            TypeMask::parse("-NOSUCH"),
            Err(Error::UnknownType(_))
        ));
        assert!(matches!(
            TypeMask::parse("MARK-NOSUCH"),
            Err(Error::UnknownType(_))
        ));
        // A malformed range still talks about ranges.
        for bad in ["9-3", "1-", "1-2-3", "MKDIR-CREAT"] {
            let e = TypeMask::parse(bad).unwrap_err();
            assert!(
                matches!(&e, Error::BadTypeRange(b) if b == bad),
                "{bad}: {e:?}"
            );
            assert!(e.to_string().contains("range"), "{e}");
        }
        // A number too large is not a name.
        assert!(matches!(TypeMask::parse("70000"), Err(Error::BadType(_))));
    }

    #[test]
    fn a_mask_of_too_many_items_is_refused() {
        // Regression: masks come from API queries, and each `all` item
        // cost 65,536 single-bit stores (now 1024 word stores): a query of
        // 100,000 of them kept a server thread busy for seconds.
        let long = vec!["all"; MAX_MASK_ITEMS + 1].join(",");
        assert!(matches!(
            TypeMask::parse(&long),
            Err(Error::MaskTooLong {
                limit: MAX_MASK_ITEMS
            })
        ));
        let most = vec!["0-65535"; MAX_MASK_ITEMS].join(",");
        assert!(TypeMask::parse(&most).unwrap().is_all());
        // The longest text a mask shows still parses.
        let mut odd = TypeMask::none();
        for c in (1..=u16::MAX).step_by(2) {
            odd.insert(RecordType(c));
        }
        assert_eq!(TypeMask::parse(&odd.to_string()).unwrap(), odd);
    }

    use proptest::prelude::*;

    proptest! {
        /// Word-wise ranges agree with the codes one by one, and a mask's
        /// ranges build it back.
        #[test]
        fn ranges_set_exactly_their_codes(
            items in proptest::collection::vec((any::<u16>(), any::<u16>(), any::<bool>()), 0..12),
            probes in proptest::collection::vec(any::<u16>(), 64),
        ) {
            let mut m = TypeMask::none();
            let mut want = vec![false; 65536];
            for &(a, b, on) in &items {
                let (a, b) = (a.min(b), a.max(b));
                m.set_range(a, b, on);
                for c in a..=b {
                    want[usize::from(c)] = on;
                }
            }
            for c in probes.into_iter().chain([0, 63, 64, u16::MAX]) {
                prop_assert_eq!(m.contains(RecordType(c)), want[usize::from(c)], "code {}", c);
            }
            let ranges = m.ranges();
            prop_assert_eq!(TypeMask::from_ranges(&ranges), m.clone());
            let on = ranges.iter().map(|&(a, b)| usize::from(b - a) + 1).sum::<usize>();
            prop_assert_eq!(on, want.iter().filter(|w| **w).count());
            prop_assert_eq!(TypeMask::parse(&m.to_string()).unwrap(), m);
        }

        /// An intersection selects exactly the codes both masks select.
        #[test]
        fn intersections_select_what_both_select(
            a in proptest::collection::vec((any::<u16>(), any::<u16>()), 0..6),
            b in proptest::collection::vec((any::<u16>(), any::<u16>()), 0..6),
            probes in proptest::collection::vec(any::<u16>(), 64),
        ) {
            let mask = |items: &[(u16, u16)]| {
                let mut m = TypeMask::none();
                for &(x, y) in items {
                    m.set_range(x.min(y), x.max(y), true);
                }
                m
            };
            let (a, b) = (mask(&a), mask(&b));
            let both = a.intersection(&b);
            prop_assert_eq!(&both, &b.intersection(&a));
            for c in probes.into_iter().chain([0, u16::MAX]).map(RecordType) {
                prop_assert_eq!(both.contains(c), a.contains(c) && b.contains(c), "code {}", c.0);
            }
        }
    }
}
