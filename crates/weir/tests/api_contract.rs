//! The daemon against its document, by property: a real `weir run` (a
//! temporary state directory, its own socket) gets requests generated from
//! `docs/openapi.yaml` alone, for every operation the document lists, and
//! each answer is judged by the document:
//!
//! - a request the document's schemas accept gets a 2xx, or an error that
//!   depends on the daemon's state (an unknown consumer, an index out of
//!   range, a name taken, a source that is off) with a status the
//!   operation declares; never `bad_request`, never a 5xx;
//! - a request they refuse (a parameter or body off its schema, a body
//!   that is no JSON, a missing required body, and what the document's
//!   text adds: an unknown, repeated or badly escaped query parameter)
//!   gets a 4xx the operation declares;
//! - every answer's status and content type are declared for the
//!   operation, and its body fits the declared schema (each line of an
//!   NDJSON answer): `weir_contract::Doc::judge`, the judge the daemon
//!   crate's contract test uses too.
//!
//! Which side of the line a request is on is what the validator says of
//! the bytes sent, not what the generator meant (see `contract/generate.rs`).
//! Values the daemon answered with (consumer names, indexes) are fed back
//! as parameter and member values of the same name, so that requests reach
//! consumers that exist. The in-process test of the daemon crate
//! (`crates/daemon/tests/api_contract.rs`) checks the hand-picked cases,
//! every documented status and the route table; what this test found
//! has a request each in `crates/daemon/tests/api_schema_edges.rs`.
//!
//! Not driven: the statuses that need a failing disk or tracker, a slow
//! client (408) or a body over the size limit (413), and the
//! `Content-Type` of a body (the daemon reads JSON whatever it says; every
//! request here says `application/json`). Strings of a `format` the
//! schema cannot state (a type mask, a column list) are generated from
//! their examples only, and a request holding another such string is
//! checked for its status and body but not for which side it falls on.
//!
//! As root, the test runs in a private mount namespace and the daemon
//! watches a tmpfs there, whose path is in the pool as `root`, so that
//! `GET /v1/fs/changes` has a tree to answer about.
//!
//! `WEIR_CONTRACT_CASES` sets the cases per operation and side (default
//! 40), `WEIR_CONTRACT_SEED` the seed (default fixed, so a run repeats).

#[path = "support/child_lines.rs"]
mod child_lines;
#[allow(dead_code)]
#[path = "support/daemon_child.rs"]
mod daemon_child;
#[path = "contract/generate.rs"]
mod generate;
#[path = "contract/http.rs"]
mod http;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestError, TestRunner};
use serde_json::{Value as Json, json};

use http::Reply;
use weir_contract::{Answer, Doc, In, Mismatch, Operation, short};

/// Error codes that say the daemon's state, not the request, is the
/// reason: a schema-valid request may get these (when its operation
/// declares the status).
const STATE_CODES: &[&str] = &[
    "bad_range",
    "unknown_consumer",
    "unknown_root",
    "consumer_exists",
    "unavailable",
];

/// Values the daemon answered with, by member name.
#[derive(Default)]
struct Pool(HashMap<String, Vec<Json>>);

impl Pool {
    /// Most values kept per name; the newest are kept.
    const KEEP: usize = 32;

    fn harvest(&mut self, v: &Json) {
        match v {
            Json::Object(m) => {
                for (k, val) in m {
                    if val.is_string() || val.is_number() {
                        let list = self.0.entry(k.clone()).or_default();
                        list.retain(|x| x != val);
                        list.push(val.clone());
                        if list.len() > Self::KEEP {
                            list.remove(0);
                        }
                    }
                    self.harvest(val);
                }
            }
            Json::Array(items) => items.iter().for_each(|i| self.harvest(i)),
            _ => {}
        }
    }

    fn pick(&self, name: &str, at: &Index) -> Option<&Json> {
        let list = self.0.get(name).filter(|l| !l.is_empty())?;
        Some(&list[at.index(list.len())])
    }
}

/// What a case draws: a value for each parameter (`None`: left out), the
/// body, which of them to take from the pool instead, and, for the
/// refused side, where and how to break the request.
#[derive(Clone, Debug)]
struct Draw {
    values: Vec<Option<Json>>,
    picks: Vec<Option<Index>>,
    body: Option<Json>,
    body_pick: Option<(Index, Index)>,
    mutation: Option<(Index, Index)>,
}

fn draw(doc: &Doc, op: &Operation, mutate: bool) -> BoxedStrategy<Draw> {
    let values: Vec<BoxedStrategy<Option<Json>>> = op
        .params
        .iter()
        .map(|p| {
            let v = generate::valid(doc, &p.schema);
            if p.required {
                v.prop_map(Some).boxed()
            } else {
                proptest::option::weighted(0.6, v).boxed()
            }
        })
        .collect();
    let picks = proptest::collection::vec(proptest::option::of(any::<Index>()), op.params.len());
    let body = match &op.body {
        None => Just(None).boxed(),
        Some(b) if b.required => generate::valid(doc, &b.schema).prop_map(Some).boxed(),
        Some(b) => proptest::option::weighted(0.8, generate::valid(doc, &b.schema)).boxed(),
    };
    let mutation = if mutate {
        (any::<Index>(), any::<Index>()).prop_map(Some).boxed()
    } else {
        Just(None).boxed()
    };
    (
        values,
        picks,
        body,
        proptest::option::of((any::<Index>(), any::<Index>())),
        mutation,
    )
        .prop_map(|(values, picks, body, body_pick, mutation)| Draw {
            values,
            picks,
            body,
            body_pick,
            mutation,
        })
        .boxed()
}

/// A request ready to send, and what the document makes of it.
#[derive(Debug)]
struct Plan {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
    /// Why the document refuses it; empty: it accepts it.
    violations: Vec<String>,
    /// What in it only the document's words judge (see
    /// `generate::unjudged`): with no violation, either answer may do.
    unjudged: Vec<String>,
    /// The mutation made, if any.
    what: Option<String>,
}

impl Plan {
    fn show(&self) -> String {
        let body = self
            .body
            .as_ref()
            .map(|b| format!(" body {}", String::from_utf8_lossy(b)))
            .unwrap_or_default();
        let headers = if self.headers.is_empty() {
            String::new()
        } else {
            format!(" headers {:?}", self.headers)
        };
        format!("{} {}{headers}{body}", self.method, self.target)
    }
}

/// One parameter as it will be sent.
struct Sent {
    text: Option<String>,
    /// Extra raw `name=value` query items (repeats, bad escapes).
    raw_extra: Option<String>,
}

/// The ways a case can break a request, before one is chosen.
enum Break {
    Param(usize),
    Repeat(usize),
    BadEscape(usize),
    Unknown,
    Body,
    RawBody,
}

/// The request a draw makes; `None` for one that cannot be sent as this
/// operation (an empty path segment is another route).
fn plan(doc: &Doc, op: &Operation, d: &Draw, pool: &Pool) -> Option<Plan> {
    // The valid request first, pool values taking the place of drawn ones
    // where the parameter's schema takes them.
    let mut sent: Vec<Sent> = op
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut v = d.values[i].clone();
            if let (Some(_), Some(at)) = (&v, &d.picks[i])
                && let Some(x) = pool.pick(&p.name, at)
            {
                let t = generate::text_of(x);
                if doc
                    .check(&p.schema, &generate::typed(&t, &p.schema, p.comma_joined))
                    .is_ok()
                {
                    v = Some(x.clone());
                }
            }
            Sent {
                text: v.as_ref().map(generate::text_of),
                raw_extra: None,
            }
        })
        .collect();
    let mut body = d.body.clone();
    if let (Some(Json::Object(m)), Some((which, at)), Some(spec)) =
        (&mut body, &d.body_pick, &op.body)
        && !m.is_empty()
    {
        let key = m
            .keys()
            .nth(which.index(m.len()))
            .cloned()
            .unwrap_or_default();
        let member_schema = doc
            .resolve(&spec.schema)
            .map(|s| s["properties"][&key].clone())
            .unwrap_or(Json::Null);
        if let Some(x) = pool.pick(&key, at)
            && !member_schema.is_null()
            && doc.check(&member_schema, x).is_ok()
        {
            m.insert(key, x.clone());
        }
    }
    let mut body_bytes = body.as_ref().map(|b| b.to_string().into_bytes());

    // Then, on the refused side, one break.
    let mut what = None;
    let mut declared_violation = None;
    if let Some((site, how)) = &d.mutation {
        let mut breaks: Vec<Break> = Vec::new();
        for (i, p) in op.params.iter().enumerate() {
            breaks.push(Break::Param(i));
            if p.at == In::Query {
                if sent[i].text.is_some() {
                    breaks.push(Break::Repeat(i));
                }
                breaks.push(Break::BadEscape(i));
            }
        }
        breaks.push(Break::Unknown);
        if op.body.is_some() {
            breaks.push(Break::Body);
            breaks.push(Break::Body);
            breaks.push(Break::RawBody);
        }
        match &breaks[site.index(breaks.len())] {
            Break::Param(i) => {
                let p = &op.params[*i];
                let valid = sent[*i].text.clone().unwrap_or_default();
                let mut choices = generate::text_breakings(&valid);
                // An empty path segment is another route, not this one.
                if p.at == In::Path {
                    choices.retain(|c| !c.is_empty());
                }
                let t = choices[how.index(choices.len())].clone();
                what = Some(format!("{} {} = {t:?}", p.name, p.at.name()));
                sent[*i].text = Some(t);
            }
            Break::Repeat(i) => {
                let p = &op.params[*i];
                let t = sent[*i].text.clone().unwrap_or_default();
                sent[*i].raw_extra =
                    Some(format!("{}={}", http::encode(&p.name), http::encode(&t)));
                what = Some(format!("{} given twice", p.name));
                declared_violation = Some("the document's text: a repeated parameter is a 400");
            }
            Break::BadEscape(i) => {
                let p = &op.params[*i];
                sent[*i].text = None;
                sent[*i].raw_extra = Some(format!("{}=%zz", http::encode(&p.name)));
                what = Some(format!("{} with a bad percent escape", p.name));
                declared_violation = Some("a bad percent escape is no query value");
            }
            Break::Unknown => {
                what = Some("an undeclared query parameter".to_owned());
                declared_violation = Some("the document's text: an unknown parameter is a 400");
            }
            Break::Body => {
                let spec = op.body.as_ref().expect("a body");
                let base = body.clone().unwrap_or(Json::Null);
                let (v, w) = generate::mutate_json(
                    doc,
                    &spec.schema,
                    &base,
                    site.index(usize::MAX),
                    how.index(usize::MAX),
                );
                what = Some(format!("body {w}"));
                body_bytes = Some(v.to_string().into_bytes());
            }
            Break::RawBody => {
                let valid = body_bytes.clone().unwrap_or_default();
                let mut trailing = valid.clone();
                trailing.extend_from_slice(b" x");
                let choices: [(&str, Option<Vec<u8>>); 6] = [
                    ("no body", None),
                    ("an empty body", Some(Vec::new())),
                    ("a cut body", Some(b"{".to_vec())),
                    ("a body with bytes after the JSON", Some(trailing)),
                    ("a body that is not UTF-8", Some(b"\xff\xfe".to_vec())),
                    ("a body of one word", Some(b"nul".to_vec())),
                ];
                let (w, b) = &choices[how.index(choices.len())];
                what = Some((*w).to_owned());
                body_bytes = b.clone();
            }
        }
    }

    // The request's text.
    let mut path = op.path.clone();
    let mut query: Vec<String> = Vec::new();
    let mut headers = Vec::new();
    for (p, s) in op.params.iter().zip(&sent) {
        match (p.at, &s.text) {
            (In::Path, Some(t)) => {
                path = path.replace(&format!("{{{}}}", p.name), &http::encode(t))
            }
            (In::Query, Some(t)) => {
                query.push(format!("{}={}", http::encode(&p.name), http::encode(t)))
            }
            (In::Header, Some(t)) => headers.push((p.name.clone(), t.clone())),
            _ => {}
        }
        query.extend(s.raw_extra.clone());
    }
    if matches!(&what, Some(w) if w == "an undeclared query parameter") {
        query.push("unknown~=1".to_owned());
    }
    let target = if query.is_empty() {
        path
    } else {
        format!("{path}?{}", query.join("&"))
    };

    // What the document makes of it.
    let mut violations: Vec<String> = declared_violation.map(str::to_owned).into_iter().collect();
    let mut unjudged = Vec::new();
    for (p, s) in op.params.iter().zip(&sent) {
        match &s.text {
            None if p.required => violations.push(format!("{} is required", p.name)),
            None => {}
            Some(t) if t.is_empty() && p.at == In::Path => return None,
            // Not a header value HTTP can carry: HTTP refuses it before
            // the daemon sees it.
            Some(t) if p.at == In::Header && !t.bytes().all(|b| (b' '..=b'~').contains(&b)) => {
                return None;
            }
            Some(t) => {
                if !p.comma_joined {
                    unjudged.extend(
                        generate::unjudged(doc, &p.schema, &json!(t))
                            .into_iter()
                            .map(|u| format!("{} {}", p.name, u)),
                    );
                }
                if let Err(e) = doc.check(&p.schema, &generate::typed(t, &p.schema, p.comma_joined))
                {
                    violations.push(format!("{} {}: {e}", p.at.name(), p.name));
                }
            }
        }
    }
    if let Some(spec) = &op.body {
        match &body_bytes {
            None => {
                if spec.required {
                    violations.push("the body is required".to_owned());
                }
            }
            Some(b) if b.is_empty() => {
                if spec.required {
                    violations.push("the body is required".to_owned());
                }
            }
            Some(b) => match serde_json::from_slice::<Json>(b) {
                Err(e) => violations.push(format!("the body is no JSON: {e}")),
                Ok(v) => {
                    if let Err(e) = doc.check(&spec.schema, &v) {
                        violations.push(format!("body: {e}"));
                    }
                    unjudged.extend(generate::unjudged(doc, &spec.schema, &v));
                }
            },
        }
    }
    Some(Plan {
        method: op.method.clone(),
        target,
        headers,
        body: body_bytes,
        violations,
        unjudged,
        what,
    })
}

/// Judges an answer by the document: it keeps to the document
/// ([`Doc::judge`]), and its status is one the request's side calls for.
/// An undeclared status is said first, a body off its schema last.
fn judge(doc: &Doc, op: &Operation, plan: &Plan, r: &Reply) -> Result<(), String> {
    let status = r.status;
    let body_text = || short(&String::from_utf8_lossy(&r.body));
    let kept = doc.judge(
        op,
        &Answer {
            status,
            content_type: r.header("content-type"),
            body: &r.body,
            cut: r.cut,
        },
    );
    if let Err(e @ Mismatch::UndeclaredStatus { .. }) = &kept {
        return Err(e.to_string());
    }
    let code = serde_json::from_slice::<Json>(&r.body)
        .ok()
        .and_then(|v| v["error"]["code"].as_str().map(str::to_owned));
    if plan.violations.is_empty() && plan.unjudged.is_empty() {
        let state = code.as_deref().is_some_and(|c| STATE_CODES.contains(&c));
        let fine = (200..300).contains(&status) || (state && status < 500);
        if !fine {
            return Err(format!(
                "a request the document accepts was answered {status}: {}",
                body_text()
            ));
        }
    } else if !plan.violations.is_empty() && !(400..500).contains(&status) {
        return Err(format!(
            "a request the document refuses ({}) was answered {status}: {}",
            plan.violations.join("; "),
            body_text()
        ));
    }
    kept.map_err(|e| e.to_string())
}

/// What a run saw of one operation.
#[derive(Default, Debug)]
struct Seen {
    /// Status to count, for requests the document accepts.
    accepted: BTreeMap<u16, u32>,
    /// The same for requests it refuses.
    refused: BTreeMap<u16, u32>,
    /// The same for requests only its words judge.
    unjudged: BTreeMap<u16, u32>,
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?}: expected a whole number")),
        Err(_) => default,
    }
}

/// Runs one side of one operation; returns the failure, if any.
fn run_side(
    doc: &Doc,
    socket: &Path,
    op: &Operation,
    refused_side: bool,
    pool: &RefCell<Pool>,
    seen: &RefCell<Seen>,
) -> Option<String> {
    let seed = env_u64("WEIR_CONTRACT_SEED", 0x5eed_c0de)
        ^ op.id().bytes().fold(u64::from(refused_side), |h, b| {
            h.wrapping_mul(0x100_0000_01b3) ^ u64::from(b)
        });
    let config = Config {
        cases: env_u64("WEIR_CONTRACT_CASES", 40) as u32,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        max_shrink_iters: 256,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let strategy = draw(doc, op, refused_side);
    let result = runner.run(&strategy, |d| {
        let Some(p) = plan(doc, op, &d, &pool.borrow()) else {
            return Err(TestCaseError::reject("not a request HTTP can carry"));
        };
        let reply = http::send(
            socket,
            &http::Request {
                method: &p.method,
                target: &p.target,
                headers: &p.headers,
                body: p.body.as_deref(),
            },
        )
        .map_err(|e| TestCaseError::fail(format!("{}: {e}", p.show())))?;
        {
            let mut s = seen.borrow_mut();
            let counts = if !p.violations.is_empty() {
                &mut s.refused
            } else if p.unjudged.is_empty() {
                &mut s.accepted
            } else {
                &mut s.unjudged
            };
            *counts.entry(reply.status).or_default() += 1;
        }
        if (200..300).contains(&reply.status) {
            if let Ok(v) = serde_json::from_slice::<Json>(&reply.body) {
                pool.borrow_mut().harvest(&v);
            } else if reply.media_type() == Some("application/x-ndjson") {
                for line in String::from_utf8_lossy(&reply.body).lines() {
                    if let Ok(v) = serde_json::from_str::<Json>(line) {
                        pool.borrow_mut().harvest(&v);
                    }
                }
            }
        }
        judge(doc, op, &p, &reply).map_err(|e| {
            let what = p
                .what
                .as_deref()
                .map(|w| format!(" ({w})"))
                .unwrap_or_default();
            TestCaseError::fail(format!("{}{what}: {e}", p.show()))
        })
    });
    match result {
        Ok(()) => None,
        Err(TestError::Fail(reason, _)) => Some(format!("{}: {reason}", op.id())),
        Err(TestError::Abort(reason)) => Some(format!("{}: aborted: {reason}", op.id())),
    }
}

#[test]
fn every_operation_keeps_to_the_document() {
    const NAME: &str = "every_operation_keeps_to_the_document";
    // As root the daemon watches a tmpfs of its own, in a private mount
    // namespace, so that the tree queries have a root to answer about;
    // without root it watches nothing, and those can only be refused.
    let watching = rustix::process::geteuid().is_root() && daemon_child::on_path("unshare");
    if watching && !daemon_child::in_private_namespace(NAME) {
        return;
    }
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().expect("temporary directory");
    let dir_path = std::fs::canonicalize(dir.path()).expect("canonical temporary directory");
    let socket = dir_path.join("weir.sock");
    let scratch = watching.then(|| daemon_child::Scratch::mount(&dir_path.join("tree")));
    let root = scratch
        .as_ref()
        .map(|s| s.path().to_str().expect("UTF-8").to_owned());
    let mut flags = Vec::new();
    if let Some(root) = &root {
        flags.extend(["--fs-watch", root.as_str()]);
    } else {
        eprintln!(
            "{NAME}: without root the daemon watches no tree; GET /v1/fs/changes gets no 2xx"
        );
    }
    let daemon = daemon_child::Daemon::start(&dir_path.join("state"), &socket, &flags);
    let doc = Doc::parse(weir_daemon::api::OPENAPI_YAML).unwrap_or_else(|e| panic!("{e}"));
    let mut ops = doc.operations().to_vec();
    assert!(!ops.is_empty(), "the document lists no operation");
    // What deletes goes last, so that the others find what it removes.
    ops.sort_by_key(|o| o.method == "DELETE");

    let pool = RefCell::new(Pool::default());
    // The watched root is a value the test made, not one the daemon
    // answered with under that name (`GET /v1/fs` calls it `path`).
    if let Some(root) = &root {
        pool.borrow_mut().harvest(&json!({ "root": root }));
    }
    let mut failures = Vec::new();
    let mut summary = Vec::new();
    for op in &ops {
        let seen = RefCell::new(Seen::default());
        for refused_side in [false, true] {
            failures.extend(run_side(&doc, &socket, op, refused_side, &pool, &seen));
        }
        let seen = seen.into_inner();
        // A generator that never reaches an operation's success, or never
        // makes a request it refuses, tests nothing there.
        let unwatched = root.is_none() && op.path == "/v1/fs/changes";
        if !unwatched && !seen.accepted.keys().any(|s| (200..300).contains(s)) {
            failures.push(format!("{}: no request reached a 2xx: {seen:?}", op.id()));
        }
        if !seen.refused.keys().any(|s| (400..500).contains(s)) {
            failures.push(format!("{}: no refused request: {seen:?}", op.id()));
        }
        summary.push(format!(
            "{:<40} accepted {:?} refused {:?} unjudged {:?}",
            op.id(),
            seen.accepted,
            seen.refused,
            seen.unjudged
        ));
    }
    eprintln!(
        "api contract: {} operations in {:.1} s\n{}",
        ops.len(),
        started.elapsed().as_secs_f64(),
        summary.join("\n")
    );
    daemon.stop();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The checker itself can fail: a body off its schema and an undeclared
/// status are caught.
#[test]
fn the_judge_refuses_what_the_document_does_not_say() {
    let doc = Doc::parse(weir_daemon::api::OPENAPI_YAML).unwrap();
    let ops = doc.operations();
    let stats = ops.iter().find(|o| o.id() == "GET /v1/log/stats").unwrap();
    let plan = Plan {
        method: "GET".into(),
        target: "/v1/log/stats".into(),
        headers: Vec::new(),
        body: None,
        violations: Vec::new(),
        unjudged: Vec::new(),
        what: None,
    };
    let reply = |status: u16, body: Json| Reply {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
        cut: false,
    };
    let err = judge(&doc, stats, &plan, &reply(200, json!({"dir": 1}))).unwrap_err();
    assert!(err.contains("does not fit"), "{err}");
    let err = judge(&doc, stats, &plan, &reply(418, json!({}))).unwrap_err();
    assert!(err.contains("not declared"), "{err}");
    let bad = json!({"error": {"code": "bad_request", "message": "no"}});
    let err = judge(&doc, stats, &plan, &reply(400, bad.clone())).unwrap_err();
    assert!(err.contains("accepts"), "{err}");
    let refused = Plan {
        violations: vec!["x".into()],
        ..plan
    };
    judge(&doc, stats, &refused, &reply(400, bad)).unwrap();
    let err = judge(&doc, stats, &refused, &reply(200, json!({}))).unwrap_err();
    assert!(err.contains("refuses"), "{err}");
}

/// The daemon's document is OpenAPI 3.1 (the only version weir-contract
/// reads, its schemas being JSON Schema 2020-12), with its operations
/// found.
#[test]
fn the_document_is_openapi_3_1() {
    let doc = Doc::parse(weir_daemon::api::OPENAPI_YAML).unwrap();
    let ops = doc.operations();
    assert!(
        ops.iter()
            .any(|o| o.id() == "POST /v1/log/consumers/{name}/clear")
    );
}
