//! Tests of the text parser and renderer: LVM's own shapes, hostile
//! inputs, and a render/parse round trip over random trees.

use proptest::prelude::*;

use super::*;

fn s(v: &str) -> Scalar {
    Scalar::Str(v.as_bytes().to_vec())
}

fn val(key: &str, v: Value) -> Entry {
    Entry {
        key: key.as_bytes().to_vec(),
        item: Item::Value(v),
    }
}

fn kind(text: &[u8]) -> TextErrorKind {
    parse(text).expect_err("should not parse").kind
}

#[test]
fn parses_lvm_shapes() {
    let text = b"# comment\nvg {\n\tid = \"a-b\"\n\tseqno = 3\n\tstatus = [\"READ\", \"WRITE\"]\n\
        \tflags = []\n\tsub {\n\t\tstripes = [\n\"pv0\", 0,\n\"pv1\", 2\n]\n\t}\n}\n\
        contents = \"Text Format Volume Group\"\nversion = 1\ncreation_time = 17\t# Sat\n";
    let root = parse(text).unwrap();
    let vg = Section {
        entries: vec![
            val("id", Value::Scalar(s("a-b"))),
            val("seqno", Value::Scalar(Scalar::Int(3))),
            val("status", Value::Array(vec![s("READ"), s("WRITE")])),
            val("flags", Value::Array(vec![])),
            Entry {
                key: b"sub".to_vec(),
                item: Item::Section(Section {
                    entries: vec![val(
                        "stripes",
                        Value::Array(vec![s("pv0"), Scalar::Int(0), s("pv1"), Scalar::Int(2)]),
                    )],
                }),
            },
        ],
    };
    let want = Section {
        entries: vec![
            Entry {
                key: b"vg".to_vec(),
                item: Item::Section(vg),
            },
            val("contents", Value::Scalar(s("Text Format Volume Group"))),
            val("version", Value::Scalar(Scalar::Int(1))),
            val("creation_time", Value::Scalar(Scalar::Int(17))),
        ],
    };
    assert_eq!(root, want);
}

#[test]
fn scalars_as_libdm_reads_them() {
    let one = |t: &str| match parse(format!("k = {t}").as_bytes())
        .unwrap()
        .entries
        .remove(0)
        .item
    {
        Item::Value(Value::Scalar(sc)) => sc,
        other => panic!("{other:?}"),
    };
    assert_eq!(one("-42"), Scalar::Int(-42));
    assert_eq!(one("+7"), Scalar::Int(7));
    assert_eq!(one("010"), Scalar::Int(8)); // strtoll base 0: octal
    assert_eq!(one("-9223372036854775808"), Scalar::Int(i64::MIN));
    assert_eq!(one("1.5"), Scalar::Float(1.5));
    assert_eq!(one(".25"), Scalar::Float(0.25));
    assert_eq!(one(r#""a\"b\\c\d""#), s(r#"a"b\c\d"#));
    assert_eq!(one("'raw\\'"), s("raw\\"));
    assert_eq!(one("bare"), s("bare"));
    // A NUL ends the text, as in libdm.
    let root = parse(b"a = 1\0garbage {{{").unwrap();
    assert_eq!(root.entries, vec![val("a", Value::Scalar(Scalar::Int(1)))]);
}

#[test]
fn bad_numbers_are_errors() {
    assert_eq!(kind(b"k = 9223372036854775808"), TextErrorKind::IntOverflow);
    assert_eq!(
        kind(b"k = -9223372036854775809"),
        TextErrorKind::IntOverflow
    );
    assert_eq!(
        kind(&[b"k = ".as_slice(), &[b'9'; 5000]].concat()),
        TextErrorKind::IntOverflow
    );
    assert_eq!(kind(b"k = 08"), TextErrorKind::BadNumber);
    assert_eq!(kind(b"k = -"), TextErrorKind::BadNumber);
    assert_eq!(kind(b"k = ."), TextErrorKind::BadNumber);
    let huge = [b"k = 1".as_slice(), &[b'0'; 400], b".0"].concat();
    assert_eq!(kind(&huge), TextErrorKind::BadNumber);
    // libdm's repair of a creation_time that old 32-bit builds garbled.
    let root = parse(b"creation_time = 99999999999999999999").unwrap();
    assert_eq!(
        root.entries,
        vec![val(
            "creation_time",
            Value::Scalar(Scalar::Int(1_527_120_000))
        )]
    );
}

#[test]
fn truncated_and_malformed_texts_are_errors() {
    for t in [
        &b"vg {"[..],
        b"vg { a = 1",
        b"a =",
        b"a = [1, 2",
        b"a",
        b"vg { b {} ",
    ] {
        assert_eq!(
            kind(t),
            TextErrorKind::Truncated,
            "{:?}",
            t.escape_ascii().to_string()
        );
    }
    assert_eq!(kind(b"a = \"abc"), TextErrorKind::UnterminatedString);
    assert_eq!(kind(b"a = \"abc\\"), TextErrorKind::UnterminatedString);
    assert_eq!(kind(b"a = 'abc"), TextErrorKind::UnterminatedString);
    assert_eq!(kind(b"a = 1 }"), TextErrorKind::Unbalanced);
    assert_eq!(kind(b"\"\" = 1"), TextErrorKind::EmptyKey);
    let unexpected = |expected| TextErrorKind::Unexpected { expected };
    assert_eq!(kind(b"= 1"), unexpected(Expected::Key));
    assert_eq!(kind(b"a 1"), unexpected(Expected::EqOrSection));
    assert_eq!(kind(b"a = {"), unexpected(Expected::Value));
    assert_eq!(kind(b"a = [1 2]"), unexpected(Expected::ArrayItem));
    assert_eq!(kind(b"a = [1,,2]"), unexpected(Expected::ArrayItem));
    assert_eq!(kind(b"a = [[1]]"), unexpected(Expected::ArrayItem));
}

#[test]
fn errors_carry_offset_and_line() {
    let e = parse(b"a = 1\nb = 2\n  c = }\n").unwrap_err();
    assert_eq!((e.offset, e.line), (18, 3));
    assert_eq!(
        e.to_string(),
        "metadata text: expected a value at byte 18 (line 3)"
    );
}

#[test]
fn deep_nesting_is_a_clean_error() {
    let ok = [b"a {".repeat(MAX_DEPTH), b"}".repeat(MAX_DEPTH)].concat();
    assert!(parse(&ok).is_ok());
    let deep = [b"a {".repeat(MAX_DEPTH + 1), b"}".repeat(MAX_DEPTH + 1)].concat();
    assert_eq!(kind(&deep), TextErrorKind::TooDeep);
    // A million open braces: an error, not a stack overflow.
    let hostile = b"a {".repeat(1_000_000);
    let e = parse(&hostile).unwrap_err();
    assert_eq!(
        (e.kind, e.offset),
        (TextErrorKind::TooDeep, 3 * MAX_DEPTH + 2)
    );
}

#[test]
fn renders_keys_that_need_quotes() {
    let root = Section {
        entries: vec![
            val("has space", Value::Scalar(Scalar::Int(1))),
            val("[x", Value::Scalar(Scalar::Int(2))),
            val("q\"\\", Value::Scalar(Scalar::Float(-0.0))),
            val("5", Value::Scalar(Scalar::Float(3.0))),
        ],
    };
    let text = render(&root);
    assert_eq!(
        text,
        b"\"has space\" = 1\n\"[x\" = 2\n\"q\\\"\\\\\" = -0.0\n5 = 3.0\n".to_vec()
    );
    assert_eq!(parse(&text).unwrap(), root);
}

fn bytes_no_nul() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(1u8..=255, 0..12)
}

fn scalar() -> impl Strategy<Value = Scalar> {
    prop_oneof![
        any::<i64>().prop_map(Scalar::Int),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Scalar::Float),
        bytes_no_nul().prop_map(Scalar::Str),
        "[a-z\"\\\\ ]{0,6}".prop_map(|s| Scalar::Str(s.into_bytes())),
    ]
}

fn entry_value() -> impl Strategy<Value = Item> {
    prop_oneof![
        scalar().prop_map(|s| Item::Value(Value::Scalar(s))),
        prop::collection::vec(scalar(), 0..5).prop_map(|a| Item::Value(Value::Array(a))),
    ]
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        "[a-z_][a-z0-9_]{0,8}".prop_map(String::into_bytes),
        bytes_no_nul().prop_filter("non-empty", |k| !k.is_empty()),
    ]
}

fn tree() -> impl Strategy<Value = Section> {
    let leaf = prop::collection::vec((key(), entry_value()), 0..4);
    let leaf = leaf.prop_map(|es| Section {
        entries: es
            .into_iter()
            .map(|(key, item)| Entry { key, item })
            .collect(),
    });
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop::collection::vec(
            (
                key(),
                prop_oneof![entry_value(), inner.prop_map(Item::Section)],
            ),
            0..6,
        )
        .prop_map(|es| Section {
            entries: es
                .into_iter()
                .map(|(key, item)| Entry { key, item })
                .collect(),
        })
    })
}

proptest! {
    #[test]
    fn render_then_parse_is_identity(root in tree()) {
        let text = render(&root);
        let back = parse(&text);
        prop_assert_eq!(back.as_ref(), Ok(&root), "{}", text.escape_ascii());
    }

    #[test]
    fn parse_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(root) = parse(&bytes) {
            prop_assert_eq!(parse(&render(&root)), Ok(root));
        }
    }

    #[test]
    fn parse_never_panics_on_near_texts(
        cut in 0usize..400,
        flip in 0usize..400,
        byte in any::<u8>(),
    ) {
        // Mutations of a plausible text reach deeper than random bytes.
        let mut text = b"vg {\nid = \"x\"\nseqno = 3\na = [\"p\", 1, 2.5]\ns {\nt = 'r'\n}\n}\nv = 1\n"
            .to_vec();
        if let Some(b) = text.get_mut(flip % 60) {
            *b = byte;
        }
        text.truncate(cut % 61);
        if let Ok(root) = parse(&text) {
            prop_assert_eq!(parse(&render(&root)), Ok(root));
        }
    }
}
