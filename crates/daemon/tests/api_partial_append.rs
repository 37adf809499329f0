//! A durable append request that fails partway answers with the indexes
//! it appended only once those are durable: `weir log write --sync`
//! prints them as durable.

mod api_support;

use std::sync::Arc;
use std::time::Duration;

use api_support::{Trackers, as_root, fixture_with_log};
use weir_daemon::api::{Access, Limits};
use weir_log::Options;
use weir_log::fault::FaultyFs;

/// Guards the daemon's wait in `append_all`: without it a request whose
/// append failed midway answered at once, listing indexes that no fsync
/// had covered yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_request_that_fails_midway_lists_only_durable_indexes() {
    // Every fsync takes 300 ms, and the committer syncs within 1 ms of a
    // record: it is nearly always inside one, not draining the ring. A
    // ring of 2 slots is then full after a few records, and the next
    // append gives up after 50 ms. Machine load only lengthens the
    // fsyncs' sleeps, so the append fails well before they end.
    let fs = Arc::new(FaultyFs::new());
    fs.slow_syncs(Some(Duration::from_millis(300)));
    let options = Options::default()
        .fs(fs.clone())
        .ring_slots(2)
        .append_timeout(Duration::from_millis(50))
        .sync_interval(Some(Duration::from_millis(1)));
    let fx = fixture_with_log(
        Access::default(),
        Limits::default(),
        Trackers::None,
        options,
    );
    let router = weir_daemon::api::router(fx.state.clone());
    let records: Vec<String> = (0..1000)
        .map(|i| format!(r#"{{"type":"MARK","name":"r{i}"}}"#))
        .collect();
    let body = format!(r#"{{"records":[{}],"durable":true}}"#, records.join(","));

    let a = as_root(&router, "POST", "/v1/log/records", body).await;
    a.assert_error(503, "log_error");
    let v = a.json();
    let appended: Vec<u64> = v["error"]["appended"]
        .as_array()
        .unwrap_or_else(|| panic!("no appended list: {v}"))
        .iter()
        .map(|i| i.as_u64().unwrap())
        .collect();
    let last = *appended.last().expect("some records were appended first");
    assert!(appended.len() < 1000, "the request failed midway: {v}");
    assert_eq!(appended, (1..=last).collect::<Vec<_>>(), "{v}");
    let durable = fx.state.log.stats().durable_index;
    assert!(
        durable >= last,
        "answered with {last} appended while only {durable} was durable"
    );
}
