//! The workload's file names: mostly short ASCII, a fixed share hostile to
//! code that treats names as text or as shell words: invalid UTF-8, a
//! newline, exactly `NAME_MAX` (255) bytes, spaces, a leading `-` and a
//! leading `.`.
//!
//! Every name is a valid single path component: never `/` or NUL, never
//! `.` or `..`, and never the tracker's reserved `.weir-cookie` prefix.

use super::rng::Rng;

/// The longest name Linux filesystems take (`NAME_MAX`).
pub(crate) const NAME_MAX: usize = 255;

/// The prefix the tracker reserves for its own cookie files; the workload
/// never makes such a name and the tree walk skips them.
pub(crate) const COOKIE_PREFIX: &[u8] = b".weir-cookie";

/// Percent of names that are plain short ASCII; the rest are split evenly
/// between the hostile classes.
const PLAIN_PERCENT: u32 = 70;

/// Plain names count up to this, so that they collide now and then (a
/// create that races a create, a rename onto a name that exists).
const PLAIN_RANGE: usize = 48;

/// What kind of name [`generate`] made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum NameClass {
    /// Short ASCII, `f12`.
    Plain,
    /// Not UTF-8, `\xff\xfe-f12`.
    NonUtf8,
    /// Contains a newline.
    Newline,
    /// Exactly [`NAME_MAX`] bytes.
    Max,
    /// Contains a space (leading, inner or trailing).
    Space,
    /// Starts with `-`, as an option would.
    Dash,
    /// Starts with `.` (hidden), but is neither `.` nor `..`.
    Dot,
}

impl NameClass {
    /// Every class.
    pub(crate) const ALL: [NameClass; 7] = [
        NameClass::Plain,
        NameClass::NonUtf8,
        NameClass::Newline,
        NameClass::Max,
        NameClass::Space,
        NameClass::Dash,
        NameClass::Dot,
    ];

    /// The hostile classes, chosen evenly for the non-plain share.
    const HOSTILE: [NameClass; 6] = [
        NameClass::NonUtf8,
        NameClass::Newline,
        NameClass::Max,
        NameClass::Space,
        NameClass::Dash,
        NameClass::Dot,
    ];
}

/// A name starting (after any hostile prefix) with `stem`, a short ASCII
/// word saying what the name was made for (`f` file, `d` directory...).
pub(crate) fn generate(rng: &mut Rng, stem: &str) -> Vec<u8> {
    let class = if rng.chance(PLAIN_PERCENT) {
        NameClass::Plain
    } else {
        NameClass::HOSTILE[rng.below(NameClass::HOSTILE.len())]
    };
    generate_class(rng, class, stem)
}

/// A name of `class` (see [`generate`]).
pub(crate) fn generate_class(rng: &mut Rng, class: NameClass, stem: &str) -> Vec<u8> {
    assert!(
        !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_alphanumeric()),
        "stem {stem:?}"
    );
    // Hostile names rarely collide: they are there to be carried through.
    let word = match class {
        NameClass::Plain => format!("{stem}{}", rng.below(PLAIN_RANGE)),
        _ => format!("{stem}{}", rng.below(100_000)),
    };
    let w = word.as_bytes();
    let name: Vec<u8> = match class {
        NameClass::Plain => w.to_vec(),
        NameClass::NonUtf8 => {
            // A bad lead byte, a truncated sequence, a lone continuation.
            let bad: [&[u8]; 3] = [b"\xff\xfe-", b"\xc3(", b"\x80"];
            let mut n = bad[rng.below(bad.len())].to_vec();
            n.extend_from_slice(w);
            if rng.chance(30) {
                n.extend_from_slice(b"-\xe2\x82");
            }
            n
        }
        NameClass::Newline => match rng.below(3) {
            0 => [b"nl\n".as_slice(), w].concat(),
            1 => [w, b"\n".as_slice()].concat(),
            _ => [w, b"\n\nend".as_slice()].concat(),
        },
        NameClass::Max => {
            let mut n = [w, b"-".as_slice()].concat();
            let fill = [b'x', b'M', b'_'][rng.below(3)];
            n.resize(NAME_MAX, fill);
            n
        }
        NameClass::Space => match rng.below(3) {
            0 => [b"with space ".as_slice(), w].concat(),
            1 => [b" ".as_slice(), w].concat(),
            _ => [w, b" ".as_slice()].concat(),
        },
        NameClass::Dash => match rng.below(2) {
            0 => [b"-".as_slice(), w].concat(),
            _ => [b"--".as_slice(), w].concat(),
        },
        NameClass::Dot => match rng.below(2) {
            0 => [b".".as_slice(), w].concat(),
            _ => [b"..".as_slice(), w].concat(),
        },
    };
    assert!(valid(&name), "generated an invalid name {name:?}");
    name
}

/// Whether `name` is one the workload may make: a single component, not
/// `.`/`..`, not reserved for the tracker, at most [`NAME_MAX`] bytes.
pub(crate) fn valid(name: &[u8]) -> bool {
    !name.is_empty()
        && name.len() <= NAME_MAX
        && !name.contains(&b'/')
        && !name.contains(&0)
        && name != b"."
        && name != b".."
        && !name.starts_with(COOKIE_PREFIX)
}

/// The class a name falls in, judged from its bytes alone (for tests that
/// check which kinds of names a tree holds). Checked in the order of
/// [`NameClass::ALL`] after `Plain`: a 255-byte non-UTF-8 name is `NonUtf8`.
pub(crate) fn classify(name: &[u8]) -> NameClass {
    if std::str::from_utf8(name).is_err() {
        NameClass::NonUtf8
    } else if name.contains(&b'\n') {
        NameClass::Newline
    } else if name.len() == NAME_MAX {
        NameClass::Max
    } else if name.contains(&b' ') {
        NameClass::Space
    } else if name.starts_with(b"-") {
        NameClass::Dash
    } else if name.starts_with(b".") {
        NameClass::Dot
    } else {
        NameClass::Plain
    }
}
