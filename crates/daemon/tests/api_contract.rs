//! The API against its reference, `docs/openapi.yaml`: every documented
//! operation is called (good requests and refusals), each answer's status
//! must be one the document lists for it, its content type one listed for
//! that status and its body must fit the listed schema (weir-contract's
//! judge, which weir's property test of a real daemon uses too); every
//! documented status is reached (but the few that need a failing disk or
//! tracker); the router serves nothing the document does not list; and
//! the inventory routes answer with the bytes the CLI prints.

mod api_support;

use std::collections::BTreeSet;

use api_support::{Answer, Trackers, call, doc, fixture, is_root, nobody, root};
use axum::Router;
use serde_json::Value as Json;
use weir_contract::Doc;
use weir_daemon::api::{Access, Limits, OPENAPI_YAML, Peer, ROUTES};

/// One request of the contract run: method, the route's pattern, the URI,
/// the body, and who sends it.
struct Case {
    method: &'static str,
    pattern: &'static str,
    uri: String,
    body: String,
    peer: Peer,
}

fn case(method: &'static str, pattern: &'static str, uri: &str, body: &str) -> Case {
    Case {
        method,
        pattern,
        uri: uri.to_owned(),
        body: body.to_owned(),
        peer: root(),
    }
}

fn refused(method: &'static str, pattern: &'static str, uri: &str, body: &str) -> Case {
    Case {
        peer: nobody(),
        ..case(method, pattern, uri, body)
    }
}

/// The requests, in an order where each finds the state it needs (a
/// consumer registered before it is read, cleared, deregistered).
fn cases(max_body: usize) -> Vec<Case> {
    let big = format!(
        r#"{{"records":[{{"type":"MARK","name":"{}"}}]}}"#,
        "x".repeat(max_body)
    );
    let big_name = format!(r#"{{"name":"{}"}}"#, "x".repeat(max_body));
    let mut v = vec![
        case("GET", "/v1/mounts", "/v1/mounts", ""),
        case("GET", "/v1/mounts", "/v1/mounts?format=text", ""),
        case(
            "GET",
            "/v1/mounts",
            "/v1/mounts?format=text&columns=ID,TARGET,PROPAGATION",
            "",
        ),
        case("GET", "/v1/mounts", "/v1/mounts?format=xml", ""),
        case(
            "GET",
            "/v1/mounts",
            "/v1/mounts?columns=SIZE&format=text",
            "",
        ),
        refused("GET", "/v1/mounts", "/v1/mounts", ""),
    ];
    for p in ["/v1/devices", "/v1/lvm/pvs", "/v1/lvm/vgs", "/v1/lvm/lvs"] {
        v.push(case("GET", p, p, ""));
        v.push(case("GET", p, &format!("{p}?format=text"), ""));
        v.push(case("GET", p, &format!("{p}?bogus=1"), ""));
        v.push(refused("GET", p, p, ""));
    }
    for (p, cols) in [
        ("/v1/lvm/pvs", "name,size,pv_pe_count"),
        ("/v1/lvm/vgs", "%2Bvg_uuid"),
        ("/v1/lvm/lvs", "%2Bdevices,segtype"),
    ] {
        v.push(case(
            "GET",
            p,
            &format!("{p}?format=text&columns={cols}"),
            "",
        ));
        v.push(case(
            "GET",
            p,
            &format!("{p}?format=json&columns={cols}"),
            "",
        ));
        v.push(case("GET", p, &format!("{p}?format=text&columns=nope"), ""));
    }
    for q in [
        "columns=name,maj:min",
        "format=text&columns=%2Bfstype&list=true",
        "all=true&format=text",
        "columns=nope",
        "all=1",
    ] {
        v.push(case("GET", "/v1/devices", &format!("/v1/devices?{q}"), ""));
    }
    let f = "/v1/fs";
    v.extend([
        case("GET", f, f, ""),
        case("GET", f, &format!("{f}?format=text"), ""),
        case("GET", f, &format!("{f}?format=xml"), ""),
        case("GET", f, &format!("{f}?columns=PATH"), ""),
        refused("GET", f, f, ""),
    ]);
    let r = "/v1/log/records";
    let c = "/v1/log/consumers";
    let one = "/v1/log/consumers/{name}";
    let clear = "/v1/log/consumers/{name}/clear";
    v.extend([
        case("POST", c, c, r#"{"name":"c1","mask":"all,-CREAT"}"#),
        case("POST", c, c, r#"{"name":"c1"}"#),
        case("POST", c, c, r#"{"name":"bad name"}"#),
        case("POST", c, c, r#"{"name":"c3","mask":"NOPE"}"#),
        case("POST", c, c, &big_name),
        refused("POST", c, c, r#"{"name":"c9"}"#),
        case("POST", r, r, r#"{"records":[{"type":"MARK","name":"a","fields":{"k":"v"}},{"type":"CREAT","name":[255,0],"target":"0a0b"}],"durable":true}"#),
        case("POST", r, r, r#"{"records":[{"type":"MARK","name":"b"}]}"#),
        case("POST", r, r, r#"{"records":[{"type":"MARK","name":"b"}"#),
        case("POST", r, r, r#"{"records":[{"type":"MARK","name":7}]}"#),
        case("POST", r, r, &big),
        refused("POST", r, r, r#"{"records":[]}"#),
        case("GET", r, r, ""),
        case("GET", r, &format!("{r}?format=text"), ""),
        case("GET", r, &format!("{r}?from=2&limit=2"), ""),
        case("GET", r, &format!("{r}?consumer=c1&mask=all"), ""),
        case("GET", r, &format!("{r}?follow=true&limit=3"), ""),
        case("GET", r, &format!("{r}?consumer=nope"), ""),
        case("GET", r, &format!("{r}?from=999"), ""),
        case("GET", r, &format!("{r}?mask=NOPE"), ""),
        case("GET", r, &format!("{r}?path=sub%2Fa&format=text"), ""),
        case("GET", r, &format!("{r}?path=%2F&mask=CREAT"), ""),
        case("GET", r, &format!("{r}?path=caf%E9&follow=true&limit=0"), ""),
        case("GET", r, &format!("{r}?path=a&path=b"), ""),
        refused("GET", r, r, ""),
        // A watch of /w, as the fs tracker starts one, for the query.
        case("POST", r, r, r#"{"records":[{"type":"MARK","name":"fs root watched","target":"000000010000000200000001aa","fields":{"source":"fs","root":"/w","entries":"0"}}],"durable":true}"#),
        case("GET", "/v1/fs/changes", "/v1/fs/changes?root=/w&since=0", ""),
        case("GET", "/v1/fs/changes", "/v1/fs/changes?root=%2Fw&since=1&format=text", ""),
        case("GET", "/v1/fs/changes", "/v1/fs/changes?root=/w", ""),
        case("GET", "/v1/fs/changes", "/v1/fs/changes?root=/nope&since=1", ""),
        refused("GET", "/v1/fs/changes", "/v1/fs/changes?root=/w&since=0", ""),
        case("GET", "/v1/log/stats", "/v1/log/stats", ""),
        case("GET", "/v1/log/stats", "/v1/log/stats?x=1", ""),
        refused("GET", "/v1/log/stats", "/v1/log/stats", ""),
        case("GET", c, c, ""),
        case("GET", c, &format!("{c}?x"), ""),
        refused("GET", c, c, ""),
        case("GET", one, "/v1/log/consumers/c1", ""),
        case("GET", one, "/v1/log/consumers/nope", ""),
        case("GET", one, "/v1/log/consumers/c1?x=1", ""),
        refused("GET", one, "/v1/log/consumers/c1", ""),
        case("POST", clear, "/v1/log/consumers/c1/clear", r#"{"index":2}"#),
        case("POST", clear, "/v1/log/consumers/c1/clear", ""),
        case("POST", clear, "/v1/log/consumers/c1/clear", r#"{"index":999999}"#),
        case("POST", clear, "/v1/log/consumers/c1/clear", r#"{"index":-1}"#),
        case("POST", clear, "/v1/log/consumers/nope/clear", "{}"),
        case("POST", clear, "/v1/log/consumers/c1/clear", &big_name),
        refused("POST", clear, "/v1/log/consumers/c1/clear", "{}"),
        refused("DELETE", one, "/v1/log/consumers/c1", ""),
        case("DELETE", one, "/v1/log/consumers/c1", ""),
        case("DELETE", one, "/v1/log/consumers/c1", ""),
        case("DELETE", one, "/v1/log/consumers/%ff", ""),
        case("POST", "/v1/sync", "/v1/sync", ""),
        case("POST", "/v1/sync", "/v1/sync?x=1", ""),
        refused("POST", "/v1/sync", "/v1/sync", ""),
        case("GET", "/v1/status", "/v1/status", ""),
        case("GET", "/v1/status", "/v1/status?verbose=1", ""),
        refused("GET", "/v1/status", "/v1/status", ""),
        case("GET", "/metrics", "/metrics", ""),
        case("GET", "/metrics", "/metrics?x=1", ""),
        refused("GET", "/metrics", "/metrics", ""),
        case("GET", "/v1/openapi.yaml", "/v1/openapi.yaml", ""),
        case("GET", "/v1/openapi.yaml", "/v1/openapi.yaml?x=1", ""),
        refused("GET", "/v1/openapi.yaml", "/v1/openapi.yaml", ""),
    ]);
    v
}

/// Checks one answer against the document; returns the status.
fn check(doc: &Doc, c: &Case, a: &Answer) -> u16 {
    let status = a.status.as_u16();
    let op = doc
        .operation(c.method, c.pattern)
        .unwrap_or_else(|| panic!("{} {}: not in the document", c.method, c.pattern));
    let judged = weir_contract::Answer {
        status,
        content_type: a.headers.get("content-type").and_then(|v| v.to_str().ok()),
        body: &a.body,
        cut: false,
    };
    doc.judge(op, &judged)
        .unwrap_or_else(|e| panic!("{} {} -> {status}: {e}", c.method, c.uri));
    status
}

/// Runs every case; returns the (method, pattern, status) reached.
async fn run(trackers: Trackers, limits: Limits) -> BTreeSet<(String, String, u16)> {
    let doc = doc();
    let fx = fixture(Access::default(), limits, trackers);
    api_support::append_marks(&fx.state.log, 5);
    api_support::wait_committed(&fx.state.log, 5);
    let router = weir_daemon::api::router(fx.state.clone());
    let mut reached = BTreeSet::new();
    let mut all = cases(limits.max_body_bytes);
    let rs = "/v1/fs/rescan";
    all.extend([
        case("POST", rs, &format!("{rs}?root=/nope"), ""),
        case("POST", rs, rs, ""),
        case("POST", rs, &format!("{rs}?root=nope"), ""),
        refused("POST", rs, &format!("{rs}?root=/nope"), ""),
    ]);
    // The real filesystem tracker's root, as it watches it.
    if let Some(t) = &fx.tree {
        let root = std::fs::canonicalize(t.path()).unwrap();
        let root = root.to_str().unwrap();
        all.push(case("POST", rs, &format!("{rs}?root={root}"), ""));
        all.push(case(
            "POST",
            rs,
            &format!("{rs}?root={root}&format=text"),
            "",
        ));
    }
    for c in all {
        let a = call(
            &router,
            c.method,
            &c.uri,
            c.body.clone(),
            Some(c.peer.clone()),
        )
        .await;
        let status = check(doc, &c, &a);
        if c.uri == "/v1/openapi.yaml" && status == 200 {
            assert_eq!(a.text(), OPENAPI_YAML);
        }
        reached.insert((c.method.to_owned(), c.pattern.to_owned(), status));
    }
    reached
}

/// A register on a log that holds as many consumers as it can: 503.
async fn register_on_a_full_consumer_set() -> (String, String, u16) {
    let fx = fixture(Access::default(), Limits::default(), Trackers::None);
    for i in 0..weir_log::MAX_CONSUMERS {
        fx.state
            .log
            .register(&format!("f{i}"), weir_log::TypeMask::all())
            .unwrap();
    }
    let router = weir_daemon::api::router(fx.state.clone());
    let c = "/v1/log/consumers";
    let one_more = case("POST", c, c, r#"{"name":"one-more"}"#);
    let a = call(
        &router,
        one_more.method,
        &one_more.uri,
        one_more.body.clone(),
        Some(one_more.peer.clone()),
    )
    .await;
    let status = check(doc(), &one_more, &a);
    assert_eq!(status, 503, "{}", a.text());
    ("POST".to_owned(), c.to_owned(), status)
}

#[tokio::test]
async fn every_operation_answers_as_documented() {
    let small = Limits {
        max_body_bytes: 4096,
        max_followers: 0,
    };
    let mut reached = run(Trackers::None, small).await;
    reached.insert(register_on_a_full_consumer_set().await);
    if is_root() {
        let limits = Limits {
            max_body_bytes: 4096,
            ..Limits::default()
        };
        reached.extend(run(Trackers::Real, limits).await);
    } else {
        eprintln!(
            "skipping the run with real trackers: needs root to open the block devices \
             the device tracker probes and to watch mounts with fanotify"
        );
    }
    // Every documented status is reached, but those that need a failing
    // disk, tracker or client (and, without root, the inventory's 200s,
    // which only the real trackers give). The 403s are the outsider's,
    // whoever runs the test.
    let mut missed = Vec::new();
    for op in doc().operations() {
        let (m, p) = (&op.method, &op.path);
        for (s, _) in &op.responses {
            let s: u16 = s.parse().unwrap_or_else(|_| {
                panic!("{m} {p}: status {s:?} is no code, and this test counts codes")
            });
            let exempt = matches!(s, 408 | 500)
                || (s == 503
                    && matches!(
                        (m.as_str(), p.as_str()),
                        ("POST", "/v1/log/records" | "/v1/sync" | "/v1/fs/rescan")
                    ))
                || (s == 200
                    && !is_root()
                    && (p.starts_with("/v1/lvm") || p == "/v1/mounts" || p == "/v1/devices"));
            if !exempt && !reached.contains(&(m.clone(), p.clone(), s)) {
                missed.push(format!("{m} {p} {s}"));
            }
        }
    }
    assert!(
        missed.is_empty(),
        "documented but never reached: {missed:?}"
    );
}

#[tokio::test]
async fn the_router_serves_exactly_the_documented_routes() {
    let documented: BTreeSet<(String, String)> = doc()
        .operations()
        .iter()
        .map(|o| (o.method.clone(), o.path.clone()))
        .collect();
    let table: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_owned(), r.path.to_owned()))
        .collect();
    assert_eq!(documented, table);

    let fx = api_support::plain();
    let router = weir_daemon::api::router(fx.state.clone());
    // Every other method on a documented path is 405, with Allow.
    for (_, path) in &documented {
        let uri = path.replace("{name}", "x");
        for m in ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
            if documented.contains(&(m.to_owned(), path.clone())) {
                continue;
            }
            let a = call(&router, m, &uri, "", Some(root())).await;
            a.assert_error(405, "method_not_allowed");
            assert!(a.headers.contains_key("allow"), "{m} {uri}");
        }
    }
    for uri in [
        "/",
        "/v1",
        "/v1/",
        "/v1/mounts/",
        "/v2/mounts",
        "/v1/log/consumers/a/b",
        "/v1/log/consumers//clear",
        "/metrics/x",
        "/v1/openapi.json",
    ] {
        call(&router, "GET", uri, "", Some(root()))
            .await
            .assert_error(404, "not_found");
    }
}

#[tokio::test]
async fn appended_records_come_back_in_both_forms() {
    let fx = api_support::plain();
    let router = weir_daemon::api::router(fx.state.clone());
    let a = call(
        &router,
        "POST",
        "/v1/log/records",
        r#"{"records":[{"type":"MARK","name":"one","fields":{"z":"1","a":[255]}},{"type":300,"flags":3,"target":"ab01","name":"two"}],"durable":true}"#,
        Some(root()),
    )
    .await;
    assert_eq!(a.json(), serde_json::json!({"indexes": [1, 2]}));
    let lines = call(&router, "GET", "/v1/log/records", "", Some(root())).await;
    let v: Vec<Json> = lines
        .text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(v.len(), 2);
    assert_eq!(
        (v[0]["name"].clone(), v[0]["type"].clone()),
        ("one".into(), "MARK".into())
    );
    // Fields keep their order, bytes their form.
    let keys: Vec<&String> = v[0]["fields"].as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 2);
    assert_eq!(v[0]["fields"]["a"], serde_json::json!([255]));
    assert_eq!(
        (v[1]["type_code"].clone(), v[1]["flags"].clone()),
        (300.into(), 3.into())
    );
    assert_eq!(v[1]["target"], "ab01");
    // The text form is `weir log tail`'s, record by record.
    let text = call(
        &router,
        "GET",
        "/v1/log/records?format=text",
        "",
        Some(root()),
    )
    .await;
    let want: String = fx
        .state
        .log
        .reader(1)
        .map(|r| weir_view::record::record_line(&r.unwrap()) + "\n")
        .collect();
    assert_eq!(text.text(), want);
    assert!(want.contains(" z=1 a=\\xff"), "{want}");
}

/// Reads `uri` until it equals `want()` (the system may change between
/// the two readings, other tests attach loop devices); fails after a few
/// tries.
async fn same_as(router: &Router, uri: &str, want: impl Fn() -> String) {
    let mut last = (String::new(), String::new());
    for _ in 0..20 {
        // The barrier first: the trackers have applied every change made
        // before it, as the fresh reading below sees them.
        let sync = call(router, "POST", "/v1/sync", "", Some(root())).await;
        assert_eq!(sync.status, 200, "{}", sync.text());
        let a = call(router, "GET", uri, "", Some(root())).await;
        assert_eq!(a.status, 200, "{uri}: {}", a.text());
        let w = want();
        if a.text() == w {
            return;
        }
        last = (a.text().to_owned(), w);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (got, want) = (last.0.lines(), last.1.lines());
    let first = got
        .zip(want)
        .find(|(g, w)| g != w)
        .map(|(g, w)| format!("api: {g}\ncli: {w}"));
    panic!(
        "{uri} differs from the CLI's rendering ({} vs {} bytes); first different line:\n{}",
        last.0.len(),
        last.1.len(),
        first.unwrap_or_else(|| "(one is a prefix of the other)".to_owned())
    );
}

#[tokio::test]
async fn inventory_answers_are_the_cli_bytes() {
    if !is_root() {
        eprintln!(
            "skipping: needs root to open the block devices the device tracker probes \
             and to watch mounts with fanotify"
        );
        return;
    }
    use weir_devices::sysfs::Detail;
    use weir_devices::{Filter, Inventory, Sysfs};
    use weir_view::devices_columns::DevColumns;
    use weir_view::devices_view::{self, DevicesOptions};
    use weir_view::lvm_columns::Columns;
    use weir_view::lvm_units::Units;
    use weir_view::lvm_view::{self, Format, Listing, TextOptions};
    use weir_view::{mounts_json, mounts_table};
    let fx = fixture(Access::default(), Limits::default(), Trackers::Real);
    let router = weir_daemon::api::router(fx.state.clone());
    // `weir mounts` reads the table afresh; so does this.
    let snap = || {
        weir_mounts::snapshot(weir_mounts::BackendChoice::Auto)
            .unwrap()
            .mounts
    };
    let cols = mounts_table::Columns::parse("TARGET,SOURCE,FSTYPE,OPTIONS").unwrap();
    same_as(&router, "/v1/mounts?format=json", || {
        mounts_json::mounts_json(&snap())
    })
    .await;
    same_as(&router, "/v1/mounts?format=text", || {
        mounts_table::render(&cols, &snap(), &Default::default(), Default::default())
    })
    .await;
    let cols2 = mounts_table::Columns::parse("ID,TARGET,PROPAGATION,MAJ:MIN").unwrap();
    same_as(
        &router,
        "/v1/mounts?format=text&columns=id,target,propagation,maj:min",
        || mounts_table::render(&cols2, &snap(), &Default::default(), Default::default()),
    )
    .await;
    // The tree, through the same renderer.
    let tree = mounts_table::Style {
        tree: true,
        ascii: true,
        bytes: false,
    };
    same_as(
        &router,
        "/v1/mounts?format=text&columns=target,fstype&tree=true&ascii=true",
        || {
            let cols = mounts_table::Columns::parse("TARGET,FSTYPE").unwrap();
            mounts_table::render(&cols, &snap(), &Default::default(), tree)
        },
    )
    .await;
    // A second query is served from the cache: same bytes.
    same_as(&router, "/v1/mounts?format=json", || {
        mounts_json::mounts_json(&snap())
    })
    .await;
    // The LVM listings: a fresh scan, as the CLI makes, through the one
    // renderer.
    let render = |what, format, columns: Option<&str>, units: Units| {
        let detail = match what {
            Listing::Devices => Detail::Full,
            _ => Detail::Probe,
        };
        let inv = Inventory::scan_with(Sysfs::default(), Filter::accept_all(), detail)
            .unwrap()
            .0;
        let text = TextOptions {
            columns: columns.map(|c| Columns::parse(what, c).unwrap()),
            units,
        };
        lvm_view::render(&inv, what, format, &text).unwrap()
    };
    // `weir devices`: the same scan, and the mount table the daemon's
    // tracker holds, which is the fresh one.
    let devices = |format, options: &DevicesOptions| {
        let inv = Inventory::scan(Sysfs::default(), Filter::accept_all())
            .unwrap()
            .0;
        devices_view::render(&inv, &snap(), options, format)
    };
    for (query, format, options) in [
        ("format=json", Format::Json, DevicesOptions::default()),
        ("format=text", Format::Text, DevicesOptions::default()),
        (
            "format=json&all=true",
            Format::Json,
            DevicesOptions {
                all: true,
                ..DevicesOptions::default()
            },
        ),
        (
            "format=text&all=true&list=true&columns=%2Bkname,lvm",
            Format::Text,
            DevicesOptions {
                all: true,
                list: true,
                columns: DevColumns::parse("+kname,lvm").unwrap(),
            },
        ),
    ] {
        same_as(&router, &format!("/v1/devices?{query}"), || {
            devices(format, &options)
        })
        .await;
    }
    for (path, what) in [
        ("/v1/lvm/pvs", Listing::Pvs),
        ("/v1/lvm/vgs", Listing::Vgs),
        ("/v1/lvm/lvs", Listing::Lvs),
    ] {
        for (query, format) in [("json", Format::Json), ("text", Format::Text)] {
            same_as(&router, &format!("{path}?format={query}"), || {
                render(what, format, None, Units::default())
            })
            .await;
        }
        same_as(
            &router,
            &format!("{path}?format=text&units=b&nosuffix=true"),
            || {
                render(
                    what,
                    Format::Text,
                    None,
                    Units::parse("b").unwrap().without_suffix(),
                )
            },
        )
        .await;
    }
    for (path, what, cols) in [
        ("/v1/lvm/pvs", Listing::Pvs, "pv_name,dev_size,pe_start"),
        ("/v1/lvm/vgs", Listing::Vgs, "+vg_uuid,vg_extent_size"),
        ("/v1/lvm/lvs", Listing::Lvs, "+devices,segtype,stripes"),
    ] {
        let uri = format!("{path}?format=text&columns={}", cols.replace('+', "%2B"));
        same_as(&router, &uri, || {
            render(what, Format::Text, Some(cols), Units::default())
        })
        .await;
        // JSON has every field whatever the columns.
        let uri = format!("{path}?format=json&columns={}", cols.replace('+', "%2B"));
        same_as(&router, &uri, || {
            render(what, Format::Json, None, Units::default())
        })
        .await;
    }
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_show_consumer_lag() {
    let fx = api_support::plain();
    let router = weir_daemon::api::router(fx.state.clone());
    fx.state
        .log
        .register("lagging", weir_log::TypeMask::all())
        .unwrap();
    api_support::append_marks(&fx.state.log, 7);
    api_support::wait_committed(&fx.state.log, 7);
    for _ in 0..3 {
        call(&router, "GET", "/v1/log/consumers/abc", "", Some(root())).await;
    }
    call(&router, "GET", "/etc/passwd", "", Some(root())).await;
    call(&router, "GET", "/v1/status", "", Some(nobody())).await;
    let m = call(&router, "GET", "/metrics", "", Some(root())).await;
    assert_eq!(m.content_type(), "text/plain; version=0.0.4; charset=utf-8");
    let text = m.text();
    for line in [
        "weir_http_requests_total{route=\"/v1/log/consumers/{name}\",status=\"404\"} 3",
        "weir_http_requests_total{route=\"other\",status=\"404\"} 1",
        "weir_http_requests_total{route=\"/v1/status\",status=\"403\"} 1",
        "weir_consumer_lag{consumer=\"lagging\"} 7",
        "weir_log_appends_total 7",
        "weir_log_last_index 7",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from:\n{text}"
        );
    }
    // Every sample belongs to a family with HELP and TYPE (a histogram's
    // samples add `_bucket`, `_sum` and `_count` to its name; api_metrics.rs
    // checks the format in full).
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let name = l.split(['{', ' ']).next().unwrap();
        let histogram = ["_bucket", "_sum", "_count"].iter().any(|s| {
            name.strip_suffix(s)
                .is_some_and(|f| text.contains(&format!("# TYPE {f} histogram\n")))
        });
        assert!(
            histogram || text.contains(&format!("# TYPE {name} ")),
            "{l}"
        );
    }
}

/// The checker the cases above rely on can fail, on the daemon's own
/// schemas (weir-contract's tests show it on a document of their own).
#[test]
fn the_schema_checker_can_fail() {
    let d = doc();
    let rec = &serde_json::json!({"$ref": "#/components/schemas/Record"});
    let good = serde_json::json!({
        "index": 1, "time": 5, "time_iso": "x", "type": "MARK", "type_code": 0,
        "flags": 0, "flag_names": [], "target": "", "parent": "", "name": [255],
        "fields": {"a": "b"}
    });
    d.check(rec, &good).unwrap();
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("flags");
    assert!(d.check(rec, &missing).is_err());
    let mut wrong = good.clone();
    wrong["index"] = serde_json::json!("1");
    assert!(d.check(rec, &wrong).is_err());
    let mut bytes = good.clone();
    bytes["name"] = serde_json::json!([256]);
    assert!(d.check(rec, &bytes).is_err());
    let mut field = good;
    field["fields"]["a"] = serde_json::json!(3);
    assert!(d.check(rec, &field).is_err());
}

/// `GET /v1/fs` is the status object's roots through `fs_view::render`,
/// the function `weir fs` prints with, in both forms; and the barrier
/// covers the watched tree: a file made before it is in the listing after.
#[tokio::test]
async fn the_fs_listing_is_the_status_roots_rendered() {
    if !is_root() {
        eprintln!("skipping: needs root to mark a filesystem with fanotify");
        return;
    }
    use weir_view::fs_view;
    use weir_view::lvm_view::Format;
    use weir_view::status::FsStatus;
    let fx = fixture(Access::default(), Limits::default(), Trackers::Real);
    let router = weir_daemon::api::router(fx.state.clone());
    let tree = fx.tree.as_ref().unwrap().path();
    std::fs::write(tree.join("sub/b"), b"b").unwrap();
    let t = fx.state.fs.clone().unwrap();
    let roots = move || FsStatus::new(!t.is_finished(), &t.stats(), &t.roots()).roots;
    for (q, format) in [("format=json", Format::Json), ("format=text", Format::Text)] {
        let roots = roots.clone();
        same_as(&router, &format!("/v1/fs?{q}"), move || {
            fs_view::render(&roots(), format)
        })
        .await;
    }
    let listed = call(&router, "GET", "/v1/fs", "", Some(root()))
        .await
        .json();
    let canonical = std::fs::canonicalize(tree).unwrap();
    assert_eq!(listed[0]["path"], canonical.to_str().unwrap(), "{listed}");
    // sub, sub/a and sub/b (the root is no entry); the root and sub.
    assert_eq!(listed[0]["entries"], 3, "{listed}");
    assert_eq!(listed[0]["dirs"], 2, "{listed}");
    let status = call(&router, "GET", "/v1/status", "", Some(root()))
        .await
        .json();
    assert_eq!(status["fs"]["running"], true, "{status}");
    assert_eq!(status["fs"]["roots"][0]["path"], listed[0]["path"]);
    assert!(status["fs"]["syncs"].as_u64().unwrap() >= 1, "{status}");
}
