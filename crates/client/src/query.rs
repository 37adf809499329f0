//! Request targets: a path and its query parameters, percent-encoded.
//!
//! Values come from the command line (consumer names, masks, column lists),
//! so everything outside RFC 3986's unreserved set is encoded: a `&`, `#`,
//! space or newline in a value can neither end the value nor break the
//! request line.

use std::fmt::{Display, Write as _};

/// A path with query parameters, built up one parameter at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathQuery {
    text: String,
    has_query: bool,
}

impl PathQuery {
    /// Starts from `path`, taken as it is (it must already be a valid path;
    /// encode variable segments with [`encode_component`]).
    pub fn new(path: &str) -> PathQuery {
        PathQuery {
            text: path.to_owned(),
            has_query: false,
        }
    }

    /// Adds `key=value`, both percent-encoded.
    #[must_use]
    pub fn param(mut self, key: &str, value: impl Display) -> PathQuery {
        self.text.push(if self.has_query { '&' } else { '?' });
        self.has_query = true;
        self.text.push_str(&encode_component(key));
        self.text.push('=');
        self.text.push_str(&encode_component(&value.to_string()));
        self
    }

    /// Adds `key=value` when `value` is `Some`.
    #[must_use]
    pub fn param_opt(self, key: &str, value: Option<impl Display>) -> PathQuery {
        match value {
            Some(v) => self.param(key, v),
            None => self,
        }
    }

    /// The target, e.g. `/v1/log/records?from=7&mask=all%2C-MARK`.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl Display for PathQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Percent-encodes every byte of `s` outside `A-Z a-z 0-9 - . _ ~`, for a
/// path segment or a query key or value.
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_joined_and_encoded() {
        let q = PathQuery::new("/v1/log/records")
            .param("from", 7)
            .param_opt("consumer", None::<&str>)
            .param("mask", "all,-MARK")
            .param("columns", "MAJ:MIN, target");
        assert_eq!(
            q.as_str(),
            "/v1/log/records?from=7&mask=all%2C-MARK&columns=MAJ%3AMIN%2C%20target"
        );
        assert_eq!(PathQuery::new("/v1/sync").as_str(), "/v1/sync");
    }

    #[test]
    fn hostile_values_cannot_escape_their_parameter() {
        let enc = encode_component("a&b=c#d/e\n\u{e9}~x");
        assert_eq!(enc, "a%26b%3Dc%23d%2Fe%0A%C3%A9~x");
        assert!(enc.bytes().all(|b| b.is_ascii_graphic()));
    }
}
