//! An answer judged by the document: its status is one the operation
//! declares, its content type one declared for that status (or no body
//! where none is declared), and its body fits the declared schema: a JSON
//! body whole, an NDJSON body line by line, a body of a string schema as
//! UTF-8.
//!
//! Whether the status is the right one for the request (a 2xx for a
//! request the document accepts, a 4xx for one it refuses) is the test's
//! to say; this is what holds of every answer.

use serde_json::Value as Json;

use crate::doc::{Doc, Operation};
use crate::error::Mismatch;
use crate::schema::types_of;

/// An answer, as the judge sees it.
#[derive(Clone, Copy, Debug)]
pub struct Answer<'a> {
    /// Its status code.
    pub status: u16,
    /// Its `Content-Type` header, whole (parameters and all), if any.
    pub content_type: Option<&'a str>,
    /// Its body, dechunked.
    pub body: &'a [u8],
    /// The client stopped reading a stream that stays open (a follow), so
    /// the body may end inside a line.
    pub cut: bool,
}

impl Answer<'_> {
    /// The media type, without parameters (`text/plain`).
    pub fn media_type(&self) -> Option<&str> {
        self.content_type
            .map(|v| v.split(';').next().unwrap_or_default().trim())
    }
}

impl Doc {
    /// Judges `a`, an answer to a request of `op`, by the document.
    pub fn judge(&self, op: &Operation, a: &Answer<'_>) -> Result<(), Mismatch> {
        let status = a.status;
        let body_text = || short(&String::from_utf8_lossy(a.body));
        let declared = op
            .response(status)
            .ok_or_else(|| Mismatch::UndeclaredStatus {
                status,
                body: body_text(),
            })?;
        let Some(content) = declared.get("content").and_then(Json::as_object) else {
            if a.body.is_empty() {
                return Ok(());
            }
            return Err(Mismatch::UnexpectedBody {
                status,
                body: body_text(),
            });
        };
        let media = a.media_type().unwrap_or_default();
        let schema = &content
            .get(media)
            .ok_or_else(|| Mismatch::UndeclaredMedia {
                status,
                media: media.to_owned(),
                declared: content.keys().cloned().collect(),
            })?["schema"];
        match media {
            "application/json" => {
                let v: Json = serde_json::from_slice(a.body).map_err(|e| Mismatch::NotJson {
                    at: "the body".to_owned(),
                    error: e.to_string(),
                    text: body_text(),
                })?;
                self.check(schema, &v).map_err(|errors| Mismatch::Misfit {
                    at: "the body".to_owned(),
                    errors,
                    text: short(&v.to_string()),
                })?;
            }
            "application/x-ndjson" => {
                let text = std::str::from_utf8(a.body).map_err(|_| Mismatch::NotUtf8 {
                    media: media.to_owned(),
                })?;
                // A stream the client cut may end inside a line.
                let whole = if a.cut {
                    &text[..text.rfind('\n').map_or(0, |i| i + 1)]
                } else {
                    text
                };
                for (i, line) in whole.lines().enumerate() {
                    let at = || format!("line {i}");
                    let v: Json = serde_json::from_str(line).map_err(|e| Mismatch::NotJson {
                        at: at(),
                        error: e.to_string(),
                        text: short(line),
                    })?;
                    self.check(schema, &v).map_err(|errors| Mismatch::Misfit {
                        at: at(),
                        errors,
                        text: short(line),
                    })?;
                }
            }
            _ => {
                if types_of(self.resolve(schema).unwrap_or(schema)) == ["string"]
                    && std::str::from_utf8(a.body).is_err()
                {
                    return Err(Mismatch::NotUtf8 {
                        media: media.to_owned(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// At most the first 400 characters of `s`, for a failure message.
pub fn short(s: &str) -> String {
    match s.char_indices().nth(400) {
        Some((i, _)) => format!("{}... ({} bytes)", &s[..i], s.len()),
        None => s.to_owned(),
    }
}
