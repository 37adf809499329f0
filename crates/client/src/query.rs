//! Request targets: a path and its query parameters, percent-encoded.
//!
//! Values come from the command line (consumer names, masks, column lists,
//! paths), so everything outside RFC 3986's unreserved set is encoded: a
//! `&`, `#`, space or newline in a value can neither end the value nor
//! break the request line. A value may be bytes that are not UTF-8 (a
//! path): each byte is encoded as it is.

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
    pub fn param(self, key: &str, value: impl Display) -> PathQuery {
        self.param_bytes(key, value.to_string().as_bytes())
    }

    /// Adds `key=value` for a value of raw bytes, each percent-encoded as
    /// it is (a path need not be UTF-8; the daemon decodes the bytes
    /// back where a parameter takes bytes).
    #[must_use]
    pub fn param_bytes(mut self, key: &str, value: &[u8]) -> PathQuery {
        self.text.push(if self.has_query { '&' } else { '?' });
        self.has_query = true;
        self.text.push_str(&encode_component(key));
        self.text.push('=');
        self.text.push_str(&encode_bytes(value));
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
    encode_bytes(s.as_bytes())
}

/// [`encode_component`] for bytes that need not be UTF-8.
pub fn encode_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
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

    #[test]
    fn bytes_are_encoded_as_they_are() {
        let q = PathQuery::new("/v1/log/records")
            .param("format", "json")
            .param_bytes("path", b"docs/caf\xe9 x");
        assert_eq!(
            q.as_str(),
            "/v1/log/records?format=json&path=docs%2Fcaf%E9%20x"
        );
        assert_eq!(encode_bytes("é".as_bytes()), encode_component("é"));
    }
}
