//! `Filter` properties: parsing never panics on any list of strings; a
//! literal pattern with any delimiter decides exactly the paths that
//! contain it; and the first matching pattern wins over later ones.

use proptest::prelude::*;
use weir_devices::{Filter, FilterError};

proptest! {
    #[test]
    fn parse_never_panics(patterns in prop::collection::vec(any::<String>(), 0..6), path in any::<String>()) {
        if let Ok(f) = Filter::parse(&patterns) {
            let _ = f.accepts(&path);
        }
    }

    #[test]
    fn parse_never_panics_on_near_misses(
        lead in prop::sample::select(vec!['a', 'r', 'x']),
        delim in prop::sample::select(vec!['|', '/', '(', '[', '{', '#', 'z', ' ']),
        body in "[a-z0-9|()\\[\\]{}*.^$\\\\]{0,12}",
        close in prop::option::of(prop::sample::select(vec!['|', '/', ')', ']', '}', '#'])),
    ) {
        let p = format!("{lead}{delim}{body}{}", close.map(String::from).unwrap_or_default());
        match Filter::parse(&[p]) {
            Ok(f) => { let _ = f.accepts("/dev/sda"); }
            Err(FilterError::BadLeadingLetter { index: 0 }) => prop_assert_eq!(lead, 'x'),
            Err(FilterError::BadDelimiter { index: 0 }) => prop_assert!(delim == 'z' || delim == ' '),
            Err(FilterError::Unterminated { index: 0, .. } | FilterError::BadRegex { index: 0, .. }) => {}
            Err(e) => prop_assert!(false, "unexpected {e:?}"),
        }
    }

    #[test]
    fn a_literal_pattern_decides_the_paths_containing_it(
        accept in any::<bool>(),
        delim in prop::sample::select(vec!['|', '/', '#', ',', '(', '[', '{']),
        word in "[a-z0-9]{1,6}",
        path in "/dev/[a-z0-9]{0,10}",
    ) {
        let close = match delim { '(' => ')', '[' => ']', '{' => '}', c => c };
        let p = format!("{}{delim}{word}{close}", if accept { 'a' } else { 'r' });
        let f = Filter::parse(&[p]).unwrap();
        let matched = path.contains(&word);
        // A match decides by the letter; no match accepts.
        prop_assert_eq!(f.accepts(&path), if matched { accept } else { true });
    }

    #[test]
    fn the_first_match_wins(word in "[a-z]{1,4}", path in "/dev/[a-z]{0,8}") {
        let acc = Filter::parse(&[format!("a|{word}|"), "r|.*|".to_owned()]).unwrap();
        let rej = Filter::parse(&[format!("r|{word}|"), "a|.*|".to_owned()]).unwrap();
        let matched = path.contains(&word);
        prop_assert_eq!(acc.accepts(&path), matched);
        prop_assert_eq!(rej.accepts(&path), !matched);
    }
}
