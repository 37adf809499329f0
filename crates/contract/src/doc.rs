//! `docs/openapi.yaml` as the API tests read it: its operations, each
//! with its parameters, request body and declared responses.
//!
//! The document is OpenAPI 3.1, whose schemas are JSON Schema 2020-12
//! (`type: [string, "null"]`, not 3.0's `nullable`); a 3.0 document is
//! refused rather than misread. The operations are read once, when the
//! document is parsed, so a malformed one fails there and not in the
//! middle of a test.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value as Json, json};

use crate::error::DocError;

/// Where a parameter goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum In {
    /// A `{name}` segment of the path.
    Path,
    /// A `name=value` item of the query.
    Query,
    /// A request header.
    Header,
}

impl In {
    /// `path`, `query` or `header`, as the document spells it.
    pub fn name(self) -> &'static str {
        match self {
            In::Path => "path",
            In::Query => "query",
            In::Header => "header",
        }
    }
}

/// One parameter of an operation.
#[derive(Clone, Debug)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Where it goes.
    pub at: In,
    /// Whether a request must give it (a path parameter always must).
    pub required: bool,
    /// Its schema, a `$ref` at the top replaced by its target.
    pub schema: Json,
    /// `style: form, explode: false`: an array as one comma-joined value.
    pub comma_joined: bool,
}

/// The JSON body an operation takes.
#[derive(Clone, Debug)]
pub struct BodySpec {
    /// Whether a request must have one.
    pub required: bool,
    /// Its schema (it may hold `$ref`s into the document).
    pub schema: Json,
}

/// One operation: a method on a path.
#[derive(Clone, Debug)]
pub struct Operation {
    /// Upper case.
    pub method: String,
    /// The pattern, `{name}` for a path parameter.
    pub path: String,
    /// Its parameters and the path item's, an operation's own first.
    pub params: Vec<Param>,
    /// The body it takes, if any.
    pub body: Option<BodySpec>,
    /// Status (`"200"`, `"4XX"`) to its response object, `$ref` resolved,
    /// in the document's order.
    pub responses: Vec<(String, Json)>,
}

impl Operation {
    /// `GET /v1/mounts`.
    pub fn id(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// The response object declared for `status`: the exact code first,
    /// then its class (`4XX`).
    pub fn response(&self, status: u16) -> Option<&Json> {
        let exact = status.to_string();
        let class = format!("{}XX", status / 100);
        self.responses
            .iter()
            .find(|(s, _)| *s == exact)
            .or_else(|| self.responses.iter().find(|(s, _)| *s == class))
            .map(|(_, r)| r)
    }

    /// The parameter called `name`, wherever it goes.
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// The document.
pub struct Doc {
    pub(crate) root: Json,
    operations: Vec<Operation>,
    /// Compiled validators by their schema's text: a test checks the same
    /// few schemas thousands of times.
    pub(crate) validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl Doc {
    /// Parses the document and reads its operations; refuses a version
    /// other than 3.1, whose schema dialect this reader assumes.
    pub fn parse(yaml: &str) -> Result<Doc, DocError> {
        let root: Json =
            serde_yaml_ng::from_str(yaml).map_err(|e| DocError::NotYaml(e.to_string()))?;
        let version = root["openapi"].as_str().unwrap_or_default();
        if !version.starts_with("3.1.") {
            return Err(DocError::Version(version.to_owned()));
        }
        let mut doc = Doc {
            root,
            operations: Vec::new(),
            validators: Mutex::new(HashMap::new()),
        };
        doc.operations = doc.read_operations()?;
        Ok(doc)
    }

    /// Every operation, in the document's order.
    pub fn operations(&self) -> &[Operation] {
        &self.operations
    }

    /// The operation of `method` (any case) on the path pattern `path`.
    pub fn operation(&self, method: &str, path: &str) -> Option<&Operation> {
        self.operations
            .iter()
            .find(|o| o.method.eq_ignore_ascii_case(method) && o.path == path)
    }

    /// Follows a local `$ref` (`#/a/b`), if `v` is one, to the end.
    pub fn resolve<'a>(&'a self, mut v: &'a Json) -> Result<&'a Json, DocError> {
        for _ in 0..16 {
            let Some(r) = v.get("$ref").and_then(Json::as_str) else {
                return Ok(v);
            };
            let pointer = r
                .strip_prefix('#')
                .ok_or_else(|| DocError::NonLocalRef(r.to_owned()))?;
            v = self
                .root
                .pointer(pointer)
                .ok_or_else(|| DocError::DanglingRef(r.to_owned()))?;
        }
        Err(DocError::RefLoop)
    }

    /// `v` with a `$ref` at its top replaced by its target, the keywords
    /// beside the `$ref` laid over the target's (3.1 allows them: an
    /// `examples` or a `description` of this use of a shared schema).
    pub fn flatten(&self, v: &Json) -> Result<Json, DocError> {
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

    fn read_operations(&self) -> Result<Vec<Operation>, DocError> {
        let paths = self.root["paths"].as_object().ok_or(DocError::NoPaths)?;
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
            other => {
                return Err(DocError::ParamPlace {
                    name,
                    place: other.map(str::to_owned),
                });
            }
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

    fn body(&self, b: &Json, operation: &str) -> Result<BodySpec, DocError> {
        let b = self.resolve(b)?;
        let content = b["content"].as_object();
        let media: Vec<String> = content
            .into_iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .collect();
        // Only JSON bodies are read by the daemon, and only they can be
        // judged by a schema here.
        let Some(m) = content
            .and_then(|c| c.get("application/json"))
            .filter(|_| media.len() == 1)
        else {
            return Err(DocError::BodyMedia {
                operation: operation.to_owned(),
                media,
            });
        };
        Ok(BodySpec {
            required: b["required"].as_bool().unwrap_or(false),
            schema: m["schema"].clone(),
        })
    }
}
