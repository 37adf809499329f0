//! Values checked against the document's schemas by `jsonschema`, a full
//! JSON Schema 2020-12 validator.
//!
//! Each schema is compiled inside a root that carries the document's
//! `components`, so that `$ref: "#/components/schemas/X"` resolves as in
//! the document; a `$ref` elsewhere (into `paths`) does not, and none of
//! the document's schemas has one. `format` is an annotation, as 2020-12
//! makes it by default: the document's own formats (a type mask, a column
//! list) are stated in words, and the daemon's answers to them are judged
//! by the tests, not here.

use std::sync::Arc;

use serde_json::{Value as Json, json};

use crate::doc::Doc;

impl Doc {
    /// A validator for `schema` (which may hold `$ref`s into the
    /// document's `components`), compiled once.
    ///
    /// # Panics
    ///
    /// If the schema does not compile: the document itself is wrong.
    pub fn validator(&self, schema: &Json) -> Arc<jsonschema::Validator> {
        let key = schema.to_string();
        let mut cache = self
            .validators
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(v) = cache.get(&key) {
            return v.clone();
        }
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "components": self.root["components"],
            "allOf": [schema],
        });
        let v =
            Arc::new(jsonschema::validator_for(&root).unwrap_or_else(|e| {
                panic!("the document's schema {schema} does not compile: {e}")
            }));
        cache.insert(key, v.clone());
        v
    }

    /// Checks `v` against `schema`; the error says where and why (the
    /// first three failures).
    pub fn check(&self, schema: &Json, v: &Json) -> Result<(), String> {
        let validator = self.validator(schema);
        let errors: Vec<String> = validator
            .iter_errors(v)
            .take(3)
            .map(|e| format!("at {:?}: {e}", e.instance_path().to_string()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }

    /// Whether `v` fits the schema at `#/components/schemas/{name}`.
    pub fn fits_component(&self, name: &str, v: &Json) -> bool {
        let schema = json!({ "$ref": format!("#/components/schemas/{name}") });
        self.validator(&schema).is_valid(v)
    }
}

/// The `type` keyword of a schema as a list (empty: any type).
pub fn types_of(schema: &Json) -> Vec<String> {
    match &schema["type"] {
        Json::String(t) => vec![t.clone()],
        Json::Array(ts) => ts
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}
