//! `docs/openapi.yaml` as the contract test reads it: its operations, each
//! with its parameters, request body and declared responses, and JSON
//! Schema validators for its schemas.
//!
//! The document is OpenAPI 3.1, whose schemas are JSON Schema 2020-12
//! (`type: [string, "null"]`, not 3.0's `nullable`); each schema is
//! checked by `jsonschema` inside a root that carries the document's
//! `components`, so that `$ref: "#/components/schemas/X"` resolves as in
//! the document.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value as Json, json};

/// Where a parameter goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum In {
    Path,
    Query,
    Header,
}

/// One parameter of an operation.
#[derive(Clone, Debug)]
pub(crate) struct Param {
    pub(crate) name: String,
    pub(crate) at: In,
    pub(crate) required: bool,
    /// Its schema, `$ref`s resolved at the top.
    pub(crate) schema: Json,
    /// `style: form, explode: false`: an array as one comma-joined value.
    pub(crate) comma_joined: bool,
}

/// The JSON body an operation takes.
#[derive(Clone, Debug)]
pub(crate) struct BodySpec {
    pub(crate) required: bool,
    pub(crate) schema: Json,
}

/// One operation: a method on a path.
#[derive(Clone, Debug)]
pub(crate) struct Operation {
    /// Upper case.
    pub(crate) method: String,
    /// The pattern, `{name}` for a path parameter.
    pub(crate) path: String,
    pub(crate) params: Vec<Param>,
    pub(crate) body: Option<BodySpec>,
    /// Status (`"200"`, `"4XX"`) to its response object, `$ref` resolved.
    pub(crate) responses: Vec<(String, Json)>,
}

impl Operation {
    /// `GET /v1/mounts`.
    pub(crate) fn id(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// The response object declared for `status`: the exact code first,
    /// then its class (`4XX`).
    pub(crate) fn response(&self, status: u16) -> Option<&Json> {
        let exact = status.to_string();
        let class = format!("{}XX", status / 100);
        self.responses
            .iter()
            .find(|(s, _)| *s == exact)
            .or_else(|| self.responses.iter().find(|(s, _)| *s == class))
            .map(|(_, r)| r)
    }
}

/// The document.
pub(crate) struct Doc {
    root: Json,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

/// What is wrong with the document itself (not with an answer).
#[derive(Debug)]
pub(crate) struct DocError(pub(crate) String);

impl std::fmt::Display for DocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Doc {
    /// Parses the document; refuses a version other than 3.1, whose schema
    /// dialect this reader assumes.
    pub(crate) fn parse(yaml: &str) -> Result<Doc, DocError> {
        let root: Json =
            serde_yaml_ng::from_str(yaml).map_err(|e| DocError(format!("not YAML: {e}")))?;
        let version = root["openapi"].as_str().unwrap_or_default();
        if !version.starts_with("3.1.") {
            return Err(DocError(format!(
                "OpenAPI {version:?}: only 3.1 is read (3.0's `nullable` and \
                 `exclusiveMinimum: true` mean other things)"
            )));
        }
        Ok(Doc {
            root,
            validators: Mutex::new(HashMap::new()),
        })
    }

    /// Follows a local `$ref` (`#/a/b`), if `v` is one, to the end.
    pub(crate) fn resolve<'a>(&'a self, mut v: &'a Json) -> Result<&'a Json, DocError> {
        for _ in 0..16 {
            let Some(r) = v.get("$ref").and_then(Json::as_str) else {
                return Ok(v);
            };
            let pointer = r
                .strip_prefix('#')
                .ok_or_else(|| DocError(format!("a non-local $ref {r}")))?;
            v = self
                .root
                .pointer(pointer)
                .ok_or_else(|| DocError(format!("a dangling $ref {r}")))?;
        }
        Err(DocError("a $ref loop".to_owned()))
    }

    /// `v` with a `$ref` at its top replaced by its target, the keywords
    /// beside the `$ref` laid over the target's (3.1 allows them: an
    /// `examples` or a `description` of this use of a shared schema).
    pub(crate) fn flatten(&self, v: &Json) -> Result<Json, DocError> {
        let Some(r) = v.get("$ref") else {
            return Ok(v.clone());
        };
        let only_ref = json!({ "$ref": r });
        let target = self.resolve(&only_ref)?;
        let mut out = self.flatten(target)?;
        if let (Some(out), Some(here)) = (out.as_object_mut(), v.as_object()) {
            for (k, x) in here {
                if k != "$ref" {
                    out.insert(k.clone(), x.clone());
                }
            }
        }
        Ok(out)
    }

    /// Every operation, in the document's order.
    pub(crate) fn operations(&self) -> Result<Vec<Operation>, DocError> {
        let paths = self.root["paths"]
            .as_object()
            .ok_or_else(|| DocError("no paths".to_owned()))?;
        let mut out = Vec::new();
        for (path, item) in paths {
            let item = self.resolve(item)?;
            let shared = item["parameters"].as_array().cloned().unwrap_or_default();
            for method in ["get", "put", "post", "delete", "patch", "head", "options"] {
                let Some(op) = item.get(method) else { continue };
                let mut params: Vec<Param> = Vec::new();
                // An operation's parameter replaces a path item's of the
                // same name and place.
                let own = op["parameters"].as_array().cloned().unwrap_or_default();
                for p in own.iter().chain(&shared) {
                    let p = self.param(p)?;
                    if !params.iter().any(|q| q.name == p.name && q.at == p.at) {
                        params.push(p);
                    }
                }
                let body = match op.get("requestBody") {
                    None => None,
                    Some(b) => Some(self.body(b, &format!("{method} {path}"))?),
                };
                let mut responses = Vec::new();
                for (status, r) in op["responses"].as_object().into_iter().flatten() {
                    responses.push((status.clone(), self.resolve(r)?.clone()));
                }
                out.push(Operation {
                    method: method.to_uppercase(),
                    path: path.clone(),
                    params,
                    body,
                    responses,
                });
            }
        }
        Ok(out)
    }

    fn param(&self, p: &Json) -> Result<Param, DocError> {
        let p = self.resolve(p)?;
        let name = p["name"].as_str().unwrap_or_default().to_owned();
        let at = match p["in"].as_str() {
            Some("path") => In::Path,
            Some("query") => In::Query,
            Some("header") => In::Header,
            other => return Err(DocError(format!("parameter {name}: `in: {other:?}`"))),
        };
        let schema = self.flatten(&p["schema"])?;
        let style = p["style"].as_str().unwrap_or("form");
        let explode = p["explode"].as_bool().unwrap_or(style == "form");
        Ok(Param {
            required: p["required"].as_bool().unwrap_or(at == In::Path),
            comma_joined: schema["type"] == "array" && style == "form" && !explode,
            name,
            at,
            schema,
        })
    }

    fn body(&self, b: &Json, what: &str) -> Result<BodySpec, DocError> {
        let b = self.resolve(b)?;
        let content = b["content"]
            .as_object()
            .ok_or_else(|| DocError(format!("{what}: a request body without content")))?;
        let (media, m) = content
            .iter()
            .next()
            .ok_or_else(|| DocError(format!("{what}: a request body without content")))?;
        if media != "application/json" || content.len() != 1 {
            return Err(DocError(format!(
                "{what}: a request body of {:?}: only application/json is generated",
                content.keys().collect::<Vec<_>>()
            )));
        }
        Ok(BodySpec {
            required: b["required"].as_bool().unwrap_or(false),
            schema: m["schema"].clone(),
        })
    }

    /// A validator for `schema` (which may hold `$ref`s into the
    /// document), compiled once.
    pub(crate) fn validator(&self, schema: &Json) -> Arc<jsonschema::Validator> {
        let key = schema.to_string();
        let mut cache = self.validators.lock().expect("validator cache");
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

    /// Checks `v` against `schema`; the error says where and why.
    pub(crate) fn check(&self, schema: &Json, v: &Json) -> Result<(), String> {
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
}
