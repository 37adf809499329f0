//! A small checker of JSON values against the OpenAPI document's schemas:
//! `$ref` (local), `type` (one or a list), `enum`, `properties`,
//! `required`, `additionalProperties`, `items`, `oneOf`/`anyOf`,
//! `minimum`/`maximum`. Enough to catch a missing member or a wrong JSON
//! type; it is not a full JSON Schema validator.

use serde_json::Value as Json;
use serde_yaml_ng::Value as Yaml;

/// The document, parsed.
pub struct Doc(pub Yaml);

impl Doc {
    pub fn load() -> Doc {
        Doc(serde_yaml_ng::from_str(weir_daemon::api::OPENAPI_YAML).expect("openapi.yaml parses"))
    }

    /// Follows a `$ref` (`#/a/b/c`), if `v` is one.
    pub fn resolve<'a>(&'a self, v: &'a Yaml) -> &'a Yaml {
        let Some(r) = v.get("$ref").and_then(Yaml::as_str) else {
            return v;
        };
        let mut at = &self.0;
        for part in r.trim_start_matches("#/").split('/') {
            at = at.get(part).unwrap_or_else(|| panic!("dangling $ref {r}"));
        }
        self.resolve(at)
    }

    /// Every (method, path) the document lists, upper-case methods.
    pub fn operations(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let paths = self.0["paths"].as_mapping().expect("paths");
        for (path, item) in paths {
            for (m, _) in item.as_mapping().unwrap() {
                let m = m.as_str().unwrap();
                if m != "parameters" {
                    out.push((m.to_uppercase(), path.as_str().unwrap().to_owned()));
                }
            }
        }
        out
    }

    /// The operation object of (method, path).
    pub fn operation(&self, method: &str, path: &str) -> &Yaml {
        &self.0["paths"][path][method.to_lowercase().as_str()]
    }

    /// The response object the operation lists for `status`.
    pub fn response(&self, method: &str, path: &str, status: u16) -> Option<&Yaml> {
        let op = self.operation(method, path);
        op["responses"]
            .get(status.to_string().as_str())
            .map(|r| self.resolve(r))
    }

    /// Checks `v` against `schema`; the error says where it fails.
    pub fn check(&self, schema: &Yaml, v: &Json, at: &str) -> Result<(), String> {
        let s = self.resolve(schema);
        for key in ["oneOf", "anyOf"] {
            if let Some(alts) = s.get(key).and_then(Yaml::as_sequence) {
                let fits = alts.iter().filter(|a| self.check(a, v, at).is_ok()).count();
                let ok = if key == "oneOf" { fits == 1 } else { fits >= 1 };
                if !ok {
                    return Err(format!("{at}: {fits} of the {key} alternatives fit {v}"));
                }
            }
        }
        if let Some(t) = s.get("type") {
            let types: Vec<&str> = match t {
                Yaml::String(one) => vec![one.as_str()],
                Yaml::Sequence(many) => many.iter().filter_map(Yaml::as_str).collect(),
                _ => return Err(format!("{at}: bad type in the schema")),
            };
            if !types.iter().any(|t| is_type(v, t)) {
                return Err(format!("{at}: {v} is not of type {types:?}"));
            }
        }
        if let Some(e) = s.get("enum").and_then(Yaml::as_sequence) {
            let fits = e.iter().any(|x| match (x, v) {
                (Yaml::String(a), Json::String(b)) => a == b,
                _ => false,
            });
            if !fits {
                return Err(format!("{at}: {v} is not one of the enum"));
            }
        }
        if let Some(n) = v.as_f64() {
            if let Some(min) = s.get("minimum").and_then(Yaml::as_f64)
                && n < min
            {
                return Err(format!("{at}: {v} is below {min}"));
            }
            if let Some(max) = s.get("maximum").and_then(Yaml::as_f64)
                && n > max
            {
                return Err(format!("{at}: {v} is above {max}"));
            }
        }
        if let Json::Object(obj) = v {
            for r in s
                .get("required")
                .and_then(Yaml::as_sequence)
                .into_iter()
                .flatten()
            {
                let r = r.as_str().unwrap();
                if !obj.contains_key(r) {
                    return Err(format!("{at}: missing required member {r:?} in {v}"));
                }
            }
            let props = s.get("properties").and_then(Yaml::as_mapping);
            for (k, val) in obj {
                let here = format!("{at}.{k}");
                match props.and_then(|p| p.get(k.as_str())) {
                    Some(ps) => self.check(ps, val, &here)?,
                    None => match s.get("additionalProperties") {
                        Some(Yaml::Bool(false)) => {
                            return Err(format!("{here}: not allowed by the schema"));
                        }
                        Some(Yaml::Bool(true)) | None => {}
                        Some(extra) => self.check(extra, val, &here)?,
                    },
                }
            }
        }
        if let (Json::Array(items), Some(is)) = (v, s.get("items")) {
            for (i, item) in items.iter().enumerate() {
                self.check(is, item, &format!("{at}[{i}]"))?;
            }
        }
        Ok(())
    }
}

fn is_type(v: &Json, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => false,
    }
}
