//! Values from the document's schemas: proptest strategies for values a
//! schema accepts, and mutations of such a value that (mostly) break it.
//!
//! The strategies aim; they do not decide. Whether a request is valid is
//! what the validator says of the value finally sent (a mutation inside a
//! `oneOf` may land on another alternative, a generated value may miss),
//! so the generators can stay simple without making the test lie.
//!
//! Strings: `enum` and `pattern` are generated from; a string with a
//! `format` that JSON Schema leaves to the reader (a type mask, a column
//! list) takes its valid values from the schema's `examples`, since the
//! schema alone does not say which strings the format allows; any other
//! string is arbitrary text.

use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::Union;
use serde_json::{Map, Value as Json, json};

use weir_contract::{Doc, types_of};

/// Deepest nesting generated: the document's schemas are shallow, and a
/// `$ref` loop must not recurse forever.
const MAX_DEPTH: u32 = 8;

/// A strategy for values `schema` accepts.
pub(crate) fn valid(doc: &Doc, schema: &Json) -> BoxedStrategy<Json> {
    valid_at(doc, schema, 0)
}

fn valid_at(doc: &Doc, schema: &Json, depth: u32) -> BoxedStrategy<Json> {
    let s = doc.flatten(schema).unwrap_or_else(|e| panic!("{e}"));
    if depth > MAX_DEPTH {
        return Just(Json::Null).boxed();
    }
    if let Some(c) = s.get("const") {
        return Just(c.clone()).boxed();
    }
    if let Some(e) = s["enum"].as_array() {
        return select(e.clone()).boxed();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(alts) = s[key].as_array() {
            let each: Vec<_> = alts.iter().map(|a| valid_at(doc, a, depth + 1)).collect();
            return Union::new(each).boxed();
        }
    }
    let types = types_of(&s);
    if types.is_empty() {
        return any_json().boxed();
    }
    let each: Vec<_> = types.iter().map(|t| of_type(doc, &s, t, depth)).collect();
    Union::new(each).boxed()
}

fn of_type(doc: &Doc, s: &Json, t: &str, depth: u32) -> BoxedStrategy<Json> {
    match t {
        "null" => Just(Json::Null).boxed(),
        "boolean" => any::<bool>().prop_map(Json::Bool).boxed(),
        "integer" => integer(s),
        "number" => prop_oneof![integer(s), (-1e6f64..1e6).prop_map(|f| json!(f)),].boxed(),
        "string" => string(s),
        "array" => {
            let items = valid_at(doc, &s["items"], depth + 1);
            let min = s["minItems"].as_u64().unwrap_or(0) as usize;
            let max = s["maxItems"]
                .as_u64()
                .map_or(min + 4, |m| (m as usize).min(min + 4));
            proptest::collection::vec(items, min..=max)
                .prop_map(Json::Array)
                .boxed()
        }
        "object" => object(doc, s, depth),
        other => panic!("the document has a schema of type {other:?}"),
    }
}

/// Integers within `minimum` and `maximum`: small ones (where indexes
/// and limits mean something), the bounds and the edges of 64 bits, some
/// written as JSON Schema allows (`2.0` is the integer 2).
fn integer(s: &Json) -> BoxedStrategy<Json> {
    let min = s["minimum"].as_f64();
    let max = s["maximum"].as_f64();
    let lo = min.unwrap_or(-1e19).max(-1e19);
    let hi = max.unwrap_or(2e19).min(2e19);
    let mut edges: Vec<f64> = vec![
        lo,
        hi,
        0.0,
        1.0,
        i64::MAX as f64,
        u64::MAX as f64,
        18446744073709551616.0,
    ];
    edges.retain(|e| *e >= lo && *e <= hi);
    let small_lo = lo.max(-3.0) as i64;
    let small_hi = (hi.min(40.0) as i64).max(small_lo);
    let exact = |f: f64| -> Json {
        if f >= 0.0 && f <= u64::MAX as f64 && f < 18446744073709551615.0 {
            json!(f as u64)
        } else if f < 0.0 && f >= i64::MIN as f64 {
            json!(f as i64)
        } else {
            json!(f)
        }
    };
    prop_oneof![
        6 => (small_lo..=small_hi).prop_map(|n| json!(n)),
        2 => select(edges).prop_map(move |e| {
            // u64::MAX as f64 rounds up to 2^64: the exact maximum.
            if e == u64::MAX as f64 && e != 18446744073709551616.0 {
                json!(u64::MAX)
            } else {
                exact(e)
            }
        }),
        1 => (small_lo..=small_hi).prop_map(|n| json!(n as f64)),
    ]
    .boxed()
}

fn string(s: &Json) -> BoxedStrategy<Json> {
    let min = s["minLength"].as_u64().unwrap_or(0) as usize;
    let max = s["maxLength"].as_u64().map(|m| m as usize);
    let fits = move |t: &String| {
        let n = t.chars().count();
        n >= min && max.is_none_or(|m| n <= m)
    };
    if let Some(p) = s["pattern"].as_str().filter(|_| s.get("format").is_none()) {
        return regex_strategy(p)
            .prop_filter("length", fits)
            .prop_map(Json::String)
            .boxed();
    }
    let mut seeds: Vec<Json> = s["examples"].as_array().cloned().unwrap_or_default();
    seeds.extend(s.get("default").cloned());
    seeds.extend(s.get("example").cloned());
    seeds.retain(Json::is_string);
    if let Some(f) = s["format"].as_str() {
        assert!(
            !seeds.is_empty(),
            "a string of format {f:?} without examples: nothing to generate"
        );
        return select(seeds).boxed();
    }
    let text = prop_oneof![
        "[a-zA-Z0-9 ._,:+-]{0,12}",
        "\\PC{0,10}",
        proptest::collection::vec(any::<char>(), 0..6).prop_map(|c| c.into_iter().collect()),
    ]
    .prop_filter("length", fits)
    .prop_map(Json::String);
    if seeds.is_empty() {
        text.boxed()
    } else {
        prop_oneof![3 => text, 1 => select(seeds)].boxed()
    }
}

/// Strings matching `pattern`. The document's patterns are anchored at
/// both ends, which proptest's generator does not take: the anchors are
/// dropped (what is generated then matches the whole pattern).
fn regex_strategy(pattern: &str) -> BoxedStrategy<String> {
    let p = pattern.strip_prefix('^').unwrap_or(pattern);
    let p = p.strip_suffix('$').unwrap_or(p);
    proptest::string::string_regex(p)
        .unwrap_or_else(|e| panic!("pattern {pattern:?}: cannot generate from it: {e}"))
        .boxed()
}

fn object(doc: &Doc, s: &Json, depth: u32) -> BoxedStrategy<Json> {
    let required: Vec<&str> = s["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Json::as_str)
        .collect();
    let mut parts: Vec<BoxedStrategy<Option<(String, Json)>>> = Vec::new();
    let props = s["properties"].as_object().cloned().unwrap_or_default();
    for (k, ps) in &props {
        let key = k.clone();
        let v = valid_at(doc, ps, depth + 1);
        if required.contains(&k.as_str()) {
            parts.push(v.prop_map(move |v| Some((key.clone(), v))).boxed());
        } else {
            parts.push(
                proptest::option::of(v)
                    .prop_map(move |v| v.map(|v| (key.clone(), v)))
                    .boxed(),
            );
        }
    }
    let extra = match s.get("additionalProperties") {
        Some(ap) if ap.is_object() => {
            let known: Vec<String> = props.keys().cloned().collect();
            let key = prop_oneof!["[a-z_]{1,8}", "\\PC{0,6}"]
                .prop_filter("a declared property", move |k| !known.contains(k));
            proptest::collection::vec((key, valid_at(doc, ap, depth + 1)), 0..4).boxed()
        }
        _ => Just(Vec::new()).boxed(),
    };
    (parts, extra)
        .prop_map(|(parts, extra)| {
            let mut m = Map::new();
            for (k, v) in parts.into_iter().flatten() {
                m.insert(k, v);
            }
            for (k, v) in extra {
                m.entry(k).or_insert(v);
            }
            Json::Object(m)
        })
        .boxed()
}

fn any_json() -> impl Strategy<Value = Json> {
    prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "\\PC{0,6}".prop_map(Json::String),
    ]
}

/// One step of a JSON path.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Item(usize),
}

/// A place in a value where a mutation can land, with the schema that
/// governs it.
struct Site {
    path: Vec<Step>,
    schema: Json,
}

/// Every place in `v` (validated by `schema`) with its schema: the value
/// itself, each member and each item, following the `oneOf`/`anyOf`
/// alternative the value takes.
fn sites(doc: &Doc, schema: &Json, v: &Json, path: &mut Vec<Step>, out: &mut Vec<Site>) {
    let Ok(s) = doc.flatten(schema) else { return };
    out.push(Site {
        path: path.clone(),
        schema: s.clone(),
    });
    for key in ["oneOf", "anyOf"] {
        if let Some(alts) = s[key].as_array()
            && let Some(alt) = alts.iter().find(|a| doc.check(a, v).is_ok())
        {
            // The alternative's own places; the value itself is already in.
            let before = out.len();
            sites(doc, alt, v, path, out);
            out.remove(before);
            return;
        }
    }
    match v {
        Json::Object(m) => {
            for (k, val) in m {
                let sub = match s["properties"].get(k) {
                    Some(ps) => ps.clone(),
                    None => match s.get("additionalProperties") {
                        Some(ap) if ap.is_object() => ap.clone(),
                        _ => continue,
                    },
                };
                path.push(Step::Key(k.clone()));
                sites(doc, &sub, val, path, out);
                path.pop();
            }
        }
        Json::Array(items) => {
            if let Some(is) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    path.push(Step::Item(i));
                    sites(doc, is, item, path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

fn at_mut<'a>(v: &'a mut Json, path: &[Step]) -> &'a mut Json {
    path.iter().fold(v, |v, step| match step {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Item(i) => &mut v[*i],
    })
}

fn describe(path: &[Step]) -> String {
    let mut out = String::from("$");
    for s in path {
        match s {
            Step::Key(k) => out.push_str(&format!(".{k}")),
            Step::Item(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The ways to break a value of schema `s` that is now `v`: other JSON
/// types, the bounds crossed, a fraction, a string made empty, too long or
/// off its pattern or enum, a required member dropped, an unknown one
/// added.
fn breakings(s: &Json, v: &Json) -> Vec<(String, Option<Json>)> {
    let mut out: Vec<(String, Option<Json>)> = [
        json!(null),
        json!(true),
        json!(7),
        json!(2.5),
        json!("x"),
        json!([]),
        json!([0]),
        json!({}),
    ]
    .into_iter()
    .map(|w| (format!("replaced by {w}"), Some(w)))
    .collect();
    if let Some(n) = v.as_f64() {
        if let Some(min) = s["minimum"].as_f64() {
            out.push(("below its minimum".into(), Some(json!(min - 1.0))));
        }
        if let Some(max) = s["maximum"].as_f64() {
            out.push(("above its maximum".into(), Some(json!(max + 1.0))));
        }
        out.push(("given a fraction".into(), Some(json!(n.trunc() + 0.5))));
    }
    if let Some(t) = v.as_str() {
        out.push(("made empty".into(), Some(json!(""))));
        out.push((
            "given a stray character".into(),
            Some(json!(format!("{t}~"))),
        ));
        if let Some(max) = s["maxLength"].as_u64() {
            let long = "a".repeat(max as usize + 1);
            out.push(("made too long".into(), Some(json!(long))));
        }
    }
    if let Json::Object(m) = v {
        for r in s["required"].as_array().into_iter().flatten() {
            if let Some(r) = r.as_str().filter(|r| m.contains_key(*r)) {
                let mut w = m.clone();
                w.remove(r);
                out.push((format!("without {r}"), Some(Json::Object(w))));
            }
        }
        if s.get("additionalProperties") == Some(&json!(false)) {
            let mut w = m.clone();
            w.insert("unknown~".into(), json!(1));
            out.push(("with an unknown member".into(), Some(Json::Object(w))));
        }
        // The object's members in order, as an array: what serde's
        // derived structs also take.
        out.push((
            "given as an array of its values".into(),
            Some(Json::Array(m.values().cloned().collect())),
        ));
    }
    if let Some(max) = s["maxItems"].as_u64()
        && let Some(items) = v.as_array()
        && let Some(first) = items.first()
    {
        let more = vec![first.clone(); max as usize + 1];
        out.push(("given too many items".into(), Some(Json::Array(more))));
    }
    out
}

/// The places in `v` the schemas cannot judge: a string of a `format`
/// this test does not know (a type mask, a column list) that is none of
/// the schema's examples. The document says such a string is checked by
/// its format, in words; a request holding one is sent and its answer
/// checked against the document, but neither side of the line is expected.
pub(crate) fn unjudged(doc: &Doc, schema: &Json, v: &Json) -> Vec<String> {
    let mut all = Vec::new();
    sites(doc, schema, v, &mut Vec::new(), &mut all);
    all.iter()
        .filter_map(|Site { path, schema: s }| {
            let format = s["format"].as_str()?;
            let mut copy = v.clone();
            let here = at_mut(&mut copy, path).clone();
            let text = here.as_str()?;
            let known = s["examples"]
                .as_array()
                .into_iter()
                .flatten()
                .chain(s.get("default"))
                .chain(s.get("example"))
                .any(|e| e.as_str() == Some(text));
            (!known).then(|| format!("{} {text:?} (format {format})", describe(path)))
        })
        .collect()
}

/// A mutation of a JSON value: the new value and what was done.
pub(crate) fn mutate_json(
    doc: &Doc,
    schema: &Json,
    v: &Json,
    site: usize,
    how: usize,
) -> (Json, String) {
    let mut all = Vec::new();
    sites(doc, schema, v, &mut Vec::new(), &mut all);
    let Site { path, schema: s } = &all[site % all.len()];
    let here = {
        let mut copy = v.clone();
        at_mut(&mut copy, path).clone()
    };
    let choices = breakings(s, &here);
    let (what, new) = &choices[how % choices.len()];
    let mut out = v.clone();
    if let Some(new) = new {
        *at_mut(&mut out, path) = new.clone();
    }
    (out, format!("{} {what}", describe(path)))
}

/// Texts that break a parameter given as text: empty, a stray
/// character, words that are no number or boolean, numbers out of every
/// range, a fraction, spellings a lax parser might take.
pub(crate) fn text_breakings(valid: &str) -> Vec<String> {
    let mut out: Vec<String> = [
        "",
        "~",
        "x",
        "-1",
        "+1",
        "007",
        "1.5",
        "2.0",
        "1e3",
        "yes",
        "1",
        "0",
        "TRUE",
        " 1",
        "18446744073709551616",
        "99999999999999999999999",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    out.push(format!("{valid}~"));
    out.push("a".repeat(65));
    out
}

/// A query or path text as the value its schema judges: digits are a
/// number where the schema takes one, `true`/`false` a boolean, a
/// comma-joined array is split.
pub(crate) fn typed(text: &str, schema: &Json, comma_joined: bool) -> Json {
    if comma_joined {
        let items: Vec<Json> = text
            .split(',')
            .map(|t| typed(t, &schema["items"], false))
            .collect();
        return Json::Array(items);
    }
    let types = types_of(schema);
    let numeric = types.iter().any(|t| t == "integer" || t == "number");
    let digits = !text.is_empty()
        && text
            .strip_prefix('-')
            .unwrap_or(text)
            .bytes()
            .all(|b| b.is_ascii_digit());
    if numeric && digits {
        if let Ok(n) = text.parse::<u64>() {
            return json!(n);
        }
        if let Ok(n) = text.parse::<i64>() {
            return json!(n);
        }
        if let Ok(f) = text.parse::<f64>() {
            return json!(f);
        }
    }
    if types.iter().any(|t| t == "boolean") && (text == "true" || text == "false") {
        return json!(text == "true");
    }
    json!(text)
}

/// A value as the text of a query, path or header parameter: a string as
/// it is, an integer in digits (`2.0` too: `2`), an array comma-joined.
pub(crate) fn text_of(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => u.to_string(),
            (_, Some(i), _) => i.to_string(),
            (_, _, Some(f)) if f.fract() == 0.0 => format!("{f:.0}"),
            _ => n.to_string(),
        },
        Json::Bool(b) => b.to_string(),
        Json::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join(","),
        Json::Null => String::new(),
        Json::Object(_) => v.to_string(),
    }
}
