//! Typed access to the entries of one section of a parsed text, each
//! failure a [`MetaError`] naming the section and key.

use super::{Expected, MetaError, show};
use crate::model::Uuid;
use crate::text::{Item, Scalar, Section, Value};

/// Where a section sits in the text (`vg/physical_volumes/pv0`), kept as
/// borrowed keys and only formatted when an error is reported.
#[derive(Clone, Copy)]
pub(super) struct Path<'a> {
    parts: [&'a [u8]; 4],
    len: usize,
}

impl<'a> Path<'a> {
    /// The top level of the text.
    pub(super) const TOP: Path<'static> = Path {
        parts: [b""; 4],
        len: 0,
    };

    /// The child section `key` (a path deeper than four keeps its first
    /// four, enough to tell where the error is).
    pub(super) fn child(mut self, key: &'a [u8]) -> Self {
        if let Some(slot) = self.parts.get_mut(self.len) {
            *slot = key;
            self.len += 1;
        }
        self
    }

    /// The path for an error message, each key escaped.
    pub(super) fn show(&self) -> String {
        if self.len == 0 {
            return "(top level)".into();
        }
        let parts: Vec<String> = self.parts[..self.len].iter().map(|p| show(p)).collect();
        parts.join("/")
    }
}

/// A section and where it is.
#[derive(Clone, Copy)]
pub(super) struct At<'a> {
    pub(super) sec: &'a Section,
    pub(super) path: Path<'a>,
}

impl<'a> At<'a> {
    fn err_type(&self, key: &str, expected: Expected) -> MetaError {
        MetaError::WrongType {
            section: self.path.show(),
            key: key.into(),
            expected,
        }
    }

    fn err_missing(&self, key: &str) -> MetaError {
        MetaError::Missing {
            section: self.path.show(),
            key: key.into(),
        }
    }

    /// The one entry named `key`; a repeated key is an error (libdm would
    /// keep either the first or the last, depending on how it was called).
    pub(super) fn get(&self, key: &str) -> Result<Option<&'a Item>, MetaError> {
        let mut found = None;
        for e in &self.sec.entries {
            if e.key == key.as_bytes() {
                if found.is_some() {
                    return Err(MetaError::DuplicateKey {
                        section: self.path.show(),
                        key: key.into(),
                    });
                }
                found = Some(&e.item);
            }
        }
        Ok(found)
    }

    fn value(&self, key: &str, expected: Expected) -> Result<Option<&'a Value>, MetaError> {
        match self.get(key)? {
            None => Ok(None),
            Some(Item::Value(v)) => Ok(Some(v)),
            Some(Item::Section(_)) => Err(self.err_type(key, expected)),
        }
    }

    /// An optional integer in `0..=max`.
    pub(super) fn opt_uint(&self, key: &str, max: u64) -> Result<Option<u64>, MetaError> {
        match self.value(key, Expected::Int)? {
            None => Ok(None),
            Some(Value::Scalar(Scalar::Int(i))) => u64::try_from(*i)
                .ok()
                .filter(|&u| u <= max)
                .map(Some)
                .ok_or_else(|| MetaError::OutOfRange {
                    section: self.path.show(),
                    key: key.into(),
                    value: *i,
                }),
            Some(_) => Err(self.err_type(key, Expected::Int)),
        }
    }

    /// A required integer in `0..=max`.
    pub(super) fn uint(&self, key: &str, max: u64) -> Result<u64, MetaError> {
        self.opt_uint(key, max)?
            .ok_or_else(|| self.err_missing(key))
    }

    /// An optional string's bytes.
    pub(super) fn opt_str(&self, key: &str) -> Result<Option<&'a [u8]>, MetaError> {
        match self.value(key, Expected::Str)? {
            None => Ok(None),
            Some(Value::Scalar(Scalar::Str(s))) => Ok(Some(s)),
            Some(_) => Err(self.err_type(key, Expected::Str)),
        }
    }

    /// A required string's bytes.
    pub(super) fn str(&self, key: &str) -> Result<&'a [u8], MetaError> {
        self.opt_str(key)?.ok_or_else(|| self.err_missing(key))
    }

    /// A required uuid in dashed or plain form.
    pub(super) fn uuid(&self, key: &str) -> Result<Uuid, MetaError> {
        Uuid::parse(self.str(key)?).ok_or_else(|| MetaError::BadUuid {
            section: self.path.show(),
            key: key.into(),
        })
    }

    /// An optional array (`None` if absent).
    pub(super) fn opt_array(&self, key: &str) -> Result<Option<&'a [Scalar]>, MetaError> {
        match self.value(key, Expected::Array)? {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(_) => Err(self.err_type(key, Expected::Array)),
        }
    }

    /// An optional list of flags (`status`, `flags`): strings of
    /// `[A-Za-z0-9_]`, as LVM writes them.
    pub(super) fn opt_flags(&self, key: &str) -> Result<Option<Vec<String>>, MetaError> {
        let Some(items) = self.opt_array(key)? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(items.len());
        for s in items {
            let Scalar::Str(s) = s else {
                return Err(self.err_type(key, Expected::StrList));
            };
            let ok = !s.is_empty()
                && s.len() <= super::names::NAME_MAX
                && s.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_');
            if !ok {
                return Err(MetaError::BadFlag {
                    section: self.path.show(),
                    key: key.into(),
                    flag: show(s),
                });
            }
            // Checked ASCII just above.
            out.push(String::from_utf8_lossy(s).into_owned());
        }
        Ok(Some(out))
    }

    /// A required list of flags.
    pub(super) fn flags(&self, key: &str) -> Result<Vec<String>, MetaError> {
        self.opt_flags(key)?.ok_or_else(|| self.err_missing(key))
    }

    /// An optional subsection.
    pub(super) fn opt_section(&self, key: &'a str) -> Result<Option<At<'a>>, MetaError> {
        match self.get(key)? {
            None => Ok(None),
            Some(Item::Section(sec)) => Ok(Some(At {
                sec,
                path: self.path.child(key.as_bytes()),
            })),
            Some(Item::Value(_)) => Err(self.err_type(key, Expected::Section)),
        }
    }

    /// A required subsection.
    pub(super) fn section(&self, key: &'a str) -> Result<At<'a>, MetaError> {
        self.opt_section(key)?.ok_or_else(|| self.err_missing(key))
    }

    /// Every entry, each required to be a subsection (the children of
    /// `physical_volumes`, `logical_volumes`, an LV's segments).
    pub(super) fn subsections(
        &self,
    ) -> impl Iterator<Item = Result<(&'a [u8], At<'a>), MetaError>> + 'a {
        let this = *self;
        this.sec.entries.iter().map(move |e| match &e.item {
            Item::Section(sec) => Ok((
                e.key.as_slice(),
                At {
                    sec,
                    path: this.path.child(&e.key),
                },
            )),
            Item::Value(_) => Err(MetaError::WrongType {
                section: this.path.show(),
                key: show(&e.key),
                expected: Expected::Section,
            }),
        })
    }
}

impl<'a> At<'a> {
    /// The subsections only, skipping values (an LV's segments: every
    /// subsection of an LV is a segment, as in LVM's importer).
    pub(super) fn child_sections(&self) -> impl Iterator<Item = (&'a [u8], At<'a>)> + 'a {
        let this = *self;
        this.sec.entries.iter().filter_map(move |e| match &e.item {
            Item::Section(sec) => Some((
                e.key.as_slice(),
                At {
                    sec,
                    path: this.path.child(&e.key),
                },
            )),
            Item::Value(_) => None,
        })
    }
}
