//! A log poisoned by an fsync failure says so where an operator looks:
//! `GET /v1/log/stats` (what `weir log stats` prints) and `GET /v1/status`,
//! and every write after it is refused.

mod api_support;

use std::sync::Arc;

use api_support::{Trackers, as_root, fixture_with_log};
use weir_daemon::api::{Access, Limits};
use weir_log::Options;
use weir_log::fault::FaultyFs;

/// What a disk that lost a write reports.
const EIO: i32 = rustix::io::Errno::IO.raw_os_error();

/// Guards the gap where `/v1/log/stats` had no word of the poison, so
/// `weir log stats` showed a healthy-looking log that refused writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_log_is_shown_in_its_stats_and_refuses_writes() {
    let fs = Arc::new(FaultyFs::new());
    let fx = fixture_with_log(
        Access::default(),
        Limits::default(),
        Trackers::None,
        Options::default().fs(fs.clone()),
    );
    let router = weir_daemon::api::router(fx.state.clone());
    let append = r#"{"records":[{"type":"MARK","name":"x"}],"durable":true}"#;

    let ok = as_root(&router, "POST", "/v1/log/records", append).await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    let stats = as_root(&router, "GET", "/v1/log/stats", "").await.json();
    assert_eq!(stats["poisoned"], false, "{stats}");

    fs.fail_syncs(EIO, 0, None);
    as_root(&router, "POST", "/v1/log/records", append)
        .await
        .assert_error(500, "log_error");
    let stats = as_root(&router, "GET", "/v1/log/stats", "").await.json();
    assert_eq!(stats["poisoned"], true, "{stats}");
    let status = as_root(&router, "GET", "/v1/status", "").await.json();
    assert_eq!(status["log"]["poisoned"], true, "{status}");

    // Healing the disk does not heal the log: only a reopen does.
    fs.heal();
    let again = as_root(&router, "POST", "/v1/log/records", append).await;
    assert_eq!(again.status.as_u16() / 100, 5, "{}", again.text());
    assert_eq!(again.json()["error"]["code"], "log_error");
}
