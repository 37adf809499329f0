//! Writes a [`Section`] tree back as text that [`parse`](super::parse)
//! reads to the same tree: the property test and the fuzz target check
//! the parser against it.

use super::{Item, Scalar, Section, Value};

/// Renders a tree as libdm config text, one entry per line, indented
/// with tabs like LVM's own texts.
///
/// Keys that cannot stand bare are quoted; strings are always quoted.
/// A NUL byte in a key or string cannot be written (it ends a text), so
/// such a tree does not survive a round trip; [`parse`](super::parse)
/// never produces one.
pub fn render(root: &Section) -> Vec<u8> {
    let mut out = Vec::new();
    // An explicit stack, like the parser's: a tree may be as deep as it
    // likes without using call stack.
    let mut stack = vec![root.entries.iter()];
    while let Some(top) = stack.last_mut() {
        let Some(entry) = top.next() else {
            stack.pop();
            if !stack.is_empty() {
                indent(&mut out, stack.len() - 1);
                out.extend_from_slice(b"}\n");
            }
            continue;
        };
        let depth = stack.len() - 1;
        indent(&mut out, depth);
        key(&mut out, &entry.key);
        match &entry.item {
            Item::Section(s) => {
                out.extend_from_slice(b" {\n");
                stack.push(s.entries.iter());
            }
            Item::Value(v) => {
                out.extend_from_slice(b" = ");
                value(&mut out, v);
                out.push(b'\n');
            }
        }
    }
    out
}

fn indent(out: &mut Vec<u8>, depth: usize) {
    out.extend(std::iter::repeat_n(b'\t', depth));
}

/// A key bare when it is plainly a word (the lexer would also read some
/// odder words, but quoting those is clearer), else quoted.
fn key(out: &mut Vec<u8>, k: &[u8]) {
    let bare = !k.is_empty()
        && k.iter()
            .all(|&b| b.is_ascii_graphic() && !b"#={}[],\"'\\".contains(&b));
    if bare {
        out.extend_from_slice(k);
    } else {
        quoted(out, k);
    }
}

fn value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Scalar(s) => scalar(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, s) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                scalar(out, s);
            }
            out.push(b']');
        }
    }
}

fn scalar(out: &mut Vec<u8>, s: &Scalar) {
    match s {
        Scalar::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Scalar::Float(f) => {
            // Rust's Display for f64 never uses an exponent and prints the
            // shortest digits that read back to the same value; a float
            // token needs its dot.
            let s = f.to_string();
            out.extend_from_slice(s.as_bytes());
            if !s.contains('.') {
                out.extend_from_slice(b".0");
            }
        }
        Scalar::Str(b) => quoted(out, b),
    }
}

fn quoted(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &b in s {
        if b == b'"' || b == b'\\' {
            out.push(b'\\');
        }
        out.push(b);
    }
    out.push(b'"');
}
