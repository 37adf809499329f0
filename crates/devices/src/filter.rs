//! LVM's `devices/filter` syntax: which device paths weir looks at.
//!
//! A filter is a list of patterns, each `a` (accept) or `r` (reject), a
//! delimiter, a regular expression and the closing delimiter: `a|^/dev/sd|`,
//! `r/.*/`. As in lvm2's `lib/filters/filter-regex.c`:
//!
//! - The delimiter is the character after `a`/`r`; `(`, `[` and `{` close
//!   with `)`, `]` and `}`. The pattern's *last* character must be the
//!   closing delimiter, and everything between is the regex, delimiters
//!   included (`a|x|y|` is the regex `x|y`). weir also demands that the
//!   delimiter is not alphanumeric, since `aa.*a` is surely a typo.
//! - The first pattern that matches decides; a path no pattern matches is
//!   accepted.
//! - A regex is searched for anywhere in the path (unanchored), so `a|loop|`
//!   accepts `/dev/loop0`.
//!
//! What is matched: lvm2 matches each of a device's aliases, which are all
//! full paths under /dev (`/dev/sda`, `/dev/disk/by-id/...`), never a bare
//! name. weir does the same: [`Filter::accepts`] takes one path,
//! [`Filter::accepts_any`] a device's aliases with lvm2's rule (accepted if
//! any alias is accepted; rejected if some alias is rejected and none
//! accepted). The regexes use Rust's `regex` syntax, a superset of the
//! extended regexes lvm2's own engine takes.

use regex::{Regex, RegexBuilder};

/// The most patterns in one filter.
pub const MAX_PATTERNS: usize = 1024;
/// The longest pattern accepted, in bytes.
pub const MAX_PATTERN_LEN: usize = 4096;
/// The compiled size allowed per regex: enough for any device pattern,
/// small enough that a hostile one cannot take much memory.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Why a filter list did not parse.
///
/// `index` is the pattern's 0-based position in the list, as a program
/// indexes it; the messages count from 1, as a person does (`#1` is the
/// first pattern).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError {
    /// More than [`MAX_PATTERNS`] patterns.
    #[error("more than {MAX_PATTERNS} filter patterns")]
    TooManyPatterns,
    /// Longer than [`MAX_PATTERN_LEN`].
    #[error("filter pattern #{} is too long", .index + 1)]
    TooLong {
        /// The pattern's 0-based position.
        index: usize,
    },
    /// Does not start with `a` or `r`.
    #[error("filter pattern #{} must begin with 'a' or 'r'", .index + 1)]
    BadLeadingLetter {
        /// The pattern's 0-based position.
        index: usize,
    },
    /// No delimiter after `a`/`r`, or an alphanumeric or whitespace one.
    #[error("filter pattern #{} has no valid delimiter", .index + 1)]
    BadDelimiter {
        /// The pattern's 0-based position.
        index: usize,
    },
    /// The pattern does not end with the closing delimiter.
    #[error("filter pattern #{} is not terminated by {close:?}", .index + 1)]
    Unterminated {
        /// The pattern's 0-based position.
        index: usize,
        /// The delimiter expected at the end.
        close: char,
    },
    /// The regex does not compile.
    #[error("filter pattern #{}: bad regex", .index + 1)]
    BadRegex {
        /// The pattern's 0-based position.
        index: usize,
        /// What the regex crate found wrong, kept whole so callers can
        /// tell a syntax error from a pattern over the size limit.
        #[source]
        source: regex::Error,
    },
}

/// One pattern: accept or reject what the regex matches.
#[derive(Clone, Debug)]
struct Pattern {
    accept: bool,
    regex: Regex,
}

/// A parsed `devices/filter` list.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    patterns: Vec<Pattern>,
}

impl Filter {
    /// Parses a list of lvm-style patterns. An empty list accepts all.
    pub fn parse<S: AsRef<str>>(patterns: &[S]) -> Result<Filter, FilterError> {
        if patterns.len() > MAX_PATTERNS {
            return Err(FilterError::TooManyPatterns);
        }
        let patterns = patterns
            .iter()
            .enumerate()
            .map(|(index, p)| parse_pattern(index, p.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Filter { patterns })
    }

    /// A filter that accepts every path.
    pub fn accept_all() -> Filter {
        Filter::default()
    }

    /// Whether `path` (`/dev/NAME`) passes: the first matching pattern
    /// decides; no match accepts.
    pub fn accepts(&self, path: &str) -> bool {
        self.decide(path).unwrap_or(true)
    }

    /// lvm2's rule for a device known by several paths: accepted if any
    /// alias is accepted, rejected if an alias is rejected and none is
    /// accepted, accepted if no pattern matches any alias.
    pub fn accepts_any<'a>(&self, aliases: impl IntoIterator<Item = &'a str>) -> bool {
        let mut rejected = false;
        for alias in aliases {
            match self.decide(alias) {
                Some(true) => return true,
                Some(false) => rejected = true,
                None => {}
            }
        }
        !rejected
    }

    /// The verdict of the first pattern matching `path`, if any.
    fn decide(&self, path: &str) -> Option<bool> {
        self.patterns
            .iter()
            .find(|p| p.regex.is_match(path))
            .map(|p| p.accept)
    }
}

fn parse_pattern(index: usize, pat: &str) -> Result<Pattern, FilterError> {
    if pat.len() > MAX_PATTERN_LEN {
        return Err(FilterError::TooLong { index });
    }
    let mut chars = pat.chars();
    let accept = match chars.next() {
        Some('a') => true,
        Some('r') => false,
        _ => return Err(FilterError::BadLeadingLetter { index }),
    };
    let open = chars
        .next()
        .filter(|c| !c.is_alphanumeric() && !c.is_whitespace())
        .ok_or(FilterError::BadDelimiter { index })?;
    let close = match open {
        '(' => ')',
        '[' => ']',
        '{' => '}',
        c => c,
    };
    let body = chars.as_str();
    let regex = body
        .strip_suffix(close)
        .ok_or(FilterError::Unterminated { index, close })?;
    let regex = RegexBuilder::new(regex)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|source| FilterError::BadRegex { index, source })?;
    Ok(Pattern { accept, regex })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(p: &[&str]) -> Filter {
        Filter::parse(p).unwrap()
    }

    #[test]
    fn lvm_examples() {
        let f = filter(&["a|loop|", "r|.*|"]);
        assert!(f.accepts("/dev/loop0"));
        assert!(!f.accepts("/dev/sda"));

        let f = filter(&["a|^/dev/sd[a-z]$|", "r|.*|"]);
        assert!(f.accepts("/dev/sdb"));
        assert!(!f.accepts("/dev/sdb1"));
        assert!(!f.accepts("/dev/nvme0n1"));

        // No pattern matches: accepted.
        let f = filter(&["r|^/dev/cdrom|"]);
        assert!(f.accepts("/dev/sda"));
        assert!(!f.accepts("/dev/cdrom"));
        assert!(Filter::accept_all().accepts("/dev/anything"));
    }

    #[test]
    fn the_first_match_decides() {
        let f = filter(&["r|/dev/sda1|", "a|/dev/sda|"]);
        assert!(!f.accepts("/dev/sda1"));
        assert!(f.accepts("/dev/sda2"));
        let f = filter(&["a|/dev/sda|", "r|/dev/sda1|"]);
        assert!(f.accepts("/dev/sda1"));
    }

    #[test]
    fn delimiters() {
        assert!(filter(&["r/loop/"]).accepts("/dev/sda"));
        assert!(!filter(&["r(loop)"]).accepts("/dev/loop1"));
        assert!(!filter(&["r[loop]"]).accepts("/dev/loop1"));
        assert!(!filter(&["r{loop}"]).accepts("/dev/loop1"));
        // The delimiter may appear inside: the regex is `sda|sdb`.
        let f = filter(&["r|sda|sdb|"]);
        assert!(!f.accepts("/dev/sdb"));
        assert!(!f.accepts("/dev/sda"));
        assert!(f.accepts("/dev/sdc"));
        // An empty regex matches everything.
        assert!(!filter(&["r||"]).accepts("/dev/x"));
    }

    #[test]
    fn typed_errors() {
        let err = |p: &str| Filter::parse(&[p]).unwrap_err();
        assert_eq!(err("x|a|"), FilterError::BadLeadingLetter { index: 0 });
        assert_eq!(err(""), FilterError::BadLeadingLetter { index: 0 });
        assert_eq!(err("a"), FilterError::BadDelimiter { index: 0 });
        assert_eq!(err("aa.*a"), FilterError::BadDelimiter { index: 0 });
        assert_eq!(err("a .* "), FilterError::BadDelimiter { index: 0 });
        assert_eq!(
            err("a|loop"),
            FilterError::Unterminated {
                index: 0,
                close: '|'
            }
        );
        assert_eq!(
            err("a|"),
            FilterError::Unterminated {
                index: 0,
                close: '|'
            }
        );
        assert_eq!(
            err("a(loop("),
            FilterError::Unterminated {
                index: 0,
                close: ')'
            }
        );
        assert!(matches!(
            err("a|(|"),
            FilterError::BadRegex { index: 0, .. }
        ));
        // The regex crate's error is kept as the source: a pattern over the
        // size limit is told apart from a syntax error without its text.
        match err(r"a|\w{2000}|") {
            FilterError::BadRegex {
                index: 0,
                source: regex::Error::CompiledTooBig(limit),
            } => assert_eq!(limit, REGEX_SIZE_LIMIT),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            err("a|(|"),
            FilterError::BadRegex {
                source: regex::Error::Syntax(_),
                ..
            }
        ));
        let e = Filter::parse(&["a|x|", "q|y|"]).unwrap_err();
        assert_eq!(e, FilterError::BadLeadingLetter { index: 1 });
        // The index is 0-based; the message counts as a person does.
        assert_eq!(
            e.to_string(),
            "filter pattern #2 must begin with 'a' or 'r'"
        );
        assert!(err("a|loop").to_string().starts_with("filter pattern #1 "));
        assert!(matches!(
            Filter::parse(&vec!["a|x|"; MAX_PATTERNS + 1]),
            Err(FilterError::TooManyPatterns)
        ));
    }

    #[test]
    fn aliases_follow_lvm() {
        let f = filter(&["a|/dev/disk/by-id/|", "r|^/dev/sd|"]);
        // Rejected by its /dev name, accepted by its by-id link: accepted.
        assert!(f.accepts_any(["/dev/sda", "/dev/disk/by-id/ata-X"]));
        // Rejected by one alias, matched by no other: rejected.
        assert!(!f.accepts_any(["/dev/sda", "/dev/block/8:0"]));
        // Matched by nothing: accepted.
        assert!(f.accepts_any(["/dev/vda"]));
        assert!(f.accepts_any([]));
    }
}
