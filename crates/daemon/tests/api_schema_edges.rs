//! Where the daemon and `docs/openapi.yaml` used to part, one request
//! each: the property test of the `weir` crate (`tests/api_contract.rs`)
//! found these, and each answer here is the one both now agree on. Each
//! case also checks what the document's schema says of the same input,
//! so that neither side can drift back alone.

mod api_support;

use api_support::{as_root, doc, plain};
use serde_json::{Value as Json, json};

/// Whether the document's schema `#/components/schemas/{name}` takes
/// `v`, as weir-contract judges it.
fn fits(name: &str, v: &Json) -> bool {
    doc().fits_component(name, v)
}

/// Whether the schema of `GET /v1/mounts`'s `columns` takes `v`.
fn mount_columns_fit(v: &Json) -> bool {
    let op = doc()
        .operation("GET", "/v1/mounts")
        .expect("GET /v1/mounts");
    let columns = op.param("columns").expect("its columns parameter");
    doc().check(&columns.schema, v).is_ok()
}

/// `method uri` with `body`, as root, answered 400 `bad_request`; the
/// answer, for a closer look.
async fn refused(r: &axum::Router, method: &str, uri: &str, body: &str) -> api_support::Answer {
    let a = as_root(r, method, uri, body.to_owned()).await;
    a.assert_error(400, "bad_request");
    a
}

const CONSUMER_NAME: &str = "ConsumerName";
const CLEAR: &str = "ClearRequest";
const APPEND: &str = "AppendRequest";
const REGISTER: &str = "RegisterRequest";
const LVM_COLUMNS: &str = "LvmColumns";

#[tokio::test]
async fn an_empty_consumer_name_is_refused_by_both() {
    assert!(!fits(CONSUMER_NAME, &json!("")));
    assert!(!fits(REGISTER, &json!({"name": ""})));
    let fx = plain();
    let r = weir_daemon::api::router(fx.state.clone());
    refused(&r, "POST", "/v1/log/consumers", r#"{"name":""}"#).await;
    refused(&r, "GET", "/v1/log/records?consumer=", "").await;
}

#[tokio::test]
async fn an_empty_column_list_is_refused_by_both() {
    assert!(!mount_columns_fit(&json!("")));
    assert!(!fits(LVM_COLUMNS, &json!("")));
    assert!(!fits(LVM_COLUMNS, &json!("pv_name,,pv_size")));
    assert!(fits(LVM_COLUMNS, &json!("+pv_uuid")));
    // Refused before the trackers are asked (this daemon has none).
    let fx = plain();
    let r = weir_daemon::api::router(fx.state.clone());
    for uri in [
        "/v1/mounts?columns=",
        "/v1/mounts?format=json&columns=",
        "/v1/lvm/pvs?columns=",
        "/v1/lvm/vgs?format=json&columns=",
        "/v1/lvm/lvs?columns=%2B",
    ] {
        refused(&r, "GET", uri, "").await;
    }
}

#[tokio::test]
async fn at_most_64_mount_columns_by_both() {
    let at_most = vec!["id"; weir_view::table::MAX_COLUMNS].join(",");
    let one_more = format!("{at_most},target");
    assert!(mount_columns_fit(&json!(at_most)));
    assert!(!mount_columns_fit(&json!(one_more)));
    // Refused before the trackers are asked (this daemon has none): a
    // choice the daemon takes is a 503 here, not a 400.
    let fx = plain();
    let r = weir_daemon::api::router(fx.state.clone());
    let a = refused(&r, "GET", &format!("/v1/mounts?columns={one_more}"), "").await;
    assert!(a.text().contains("more than 64 columns"), "{}", a.text());
    as_root(&r, "GET", &format!("/v1/mounts?columns={at_most}"), "")
        .await
        .assert_error(503, "unavailable");
}

#[tokio::test]
async fn lvm_units_are_a_letter_after_a_count_that_is_not_zero_by_both() {
    let op = doc()
        .operation("GET", "/v1/lvm/pvs")
        .expect("GET /v1/lvm/pvs");
    let units = op.param("units").expect("its units parameter");
    let fit = |v: &str| doc().check(&units.schema, &json!(v)).is_ok();
    for good in ["r", "H", "b", "4m", "0004m"] {
        assert!(fit(good), "{good}");
    }
    let fx = plain();
    let r = weir_daemon::api::router(fx.state.clone());
    for bad in ["", "x", "0m", "4r", "1.5g", "mm"] {
        assert!(!fit(bad), "{bad}");
        refused(&r, "GET", &format!("/v1/lvm/pvs?units={bad}"), "").await;
    }
    // A good one reaches the tracker, which this daemon lacks.
    as_root(&r, "GET", "/v1/lvm/vgs?units=4m&nosuffix=true", "")
        .await
        .assert_error(503, "unavailable");
}

#[tokio::test]
async fn a_whole_index_written_as_a_float_clears_and_a_fraction_is_refused() {
    // JSON Schema's integer: 2.0 is 2, 2.5 is no integer.
    assert!(fits(CLEAR, &json!({"index": 2.0})));
    assert!(!fits(CLEAR, &json!({"index": 2.5})));
    let fx = plain();
    // Registered first: a consumer starts after the last committed record.
    fx.state
        .log
        .register("c", weir_log::TypeMask::all())
        .unwrap();
    api_support::append_marks(&fx.state.log, 3);
    api_support::wait_committed(&fx.state.log, 3);
    let r = weir_daemon::api::router(fx.state.clone());
    let a = as_root(&r, "POST", "/v1/log/consumers/c/clear", r#"{"index":2.0}"#).await;
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(a.json()["cleared"], 2);
    refused(&r, "POST", "/v1/log/consumers/c/clear", r#"{"index":2.5}"#).await;
}

#[tokio::test]
async fn an_array_body_is_refused_where_the_document_wants_an_object() {
    assert!(!fits(CLEAR, &json!([])));
    let fx = plain();
    fx.state
        .log
        .register("c", weir_log::TypeMask::all())
        .unwrap();
    let r = weir_daemon::api::router(fx.state.clone());
    for (uri, body) in [
        ("/v1/log/consumers/c/clear", "[]"),
        ("/v1/log/consumers/c/clear", "[0]"),
        ("/v1/log/consumers", r#"["c2"]"#),
        ("/v1/log/records", r#"[[{"type":"MARK"}]]"#),
        ("/v1/log/records", r#"{"records":[["MARK"]]}"#),
    ] {
        let a = refused(&r, "POST", uri, body).await;
        assert!(a.text().contains("expected a JSON object"), "{}", a.text());
    }
}

#[tokio::test]
async fn byte_values_written_as_floats_are_bytes() {
    let body =
        json!({"records": [{"type": "MARK", "name": [104.0, 105], "fields": {"k": [255.0]}}]});
    assert!(fits(APPEND, &body));
    let fx = plain();
    let r = weir_daemon::api::router(fx.state.clone());
    let a = as_root(&r, "POST", "/v1/log/records", body.to_string()).await;
    assert_eq!(a.status, 200, "{}", a.text());
    api_support::wait_committed(&fx.state.log, 1);
    let back = as_root(&r, "GET", "/v1/log/records", "").await;
    let rec: Json = serde_json::from_str(back.text().lines().next().unwrap()).unwrap();
    assert_eq!(
        (&rec["name"], &rec["fields"]["k"]),
        (&json!("hi"), &json!([255]))
    );
    let bad = json!({"records": [{"type": "MARK", "fields": {"k": [0.5]}}]});
    assert!(!fits(APPEND, &bad));
    refused(&r, "POST", "/v1/log/records", &bad.to_string()).await;
}

#[tokio::test]
async fn a_null_mask_is_refused_by_both() {
    assert!(!fits(REGISTER, &json!({"name": "c", "mask": null})));
    let fx = plain();
    let r = weir_daemon::api::router(fx.state.clone());
    refused(
        &r,
        "POST",
        "/v1/log/consumers",
        r#"{"name":"c","mask":null}"#,
    )
    .await;
}

#[tokio::test]
async fn query_booleans_are_true_or_false_and_numbers_digits() {
    let fx = plain();
    let r = weir_daemon::api::router(fx.state.clone());
    for uri in [
        "/v1/log/records?follow=1",
        "/v1/log/records?follow=0",
        "/v1/log/records?from=%2B1",
        "/v1/log/records?limit=1.0",
    ] {
        refused(&r, "GET", uri, "").await;
    }
    let a = as_root(&r, "GET", "/v1/log/records?follow=false&from=01", "").await;
    assert_eq!(a.status, 200, "{}", a.text());
}

#[tokio::test]
async fn every_route_refuses_an_unknown_query_parameter() {
    let fx = plain();
    fx.state
        .log
        .register("c", weir_log::TypeMask::all())
        .unwrap();
    let r = weir_daemon::api::router(fx.state.clone());
    for (m, uri, body) in [
        ("POST", "/v1/sync?x=1", ""),
        ("GET", "/metrics?x=1", ""),
        ("GET", "/v1/openapi.yaml?x=1", ""),
        ("POST", "/v1/log/consumers?x=1", r#"{"name":"d"}"#),
        ("POST", "/v1/log/consumers/c/clear?x=1", ""),
        ("DELETE", "/v1/log/consumers/c?x=1", ""),
        ("POST", "/v1/log/records?x=1", r#"{"records":[]}"#),
    ] {
        refused(&r, m, uri, body).await;
    }
    // Nothing was done: the consumer is still there, none was added.
    let list = as_root(&r, "GET", "/v1/log/consumers", "").await;
    assert_eq!(
        list.json().as_array().map(Vec::len),
        Some(1),
        "{}",
        list.text()
    );
}
