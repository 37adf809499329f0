//! Shared by the API tests: an `ApiState` over a real log in a temporary
//! directory, requests through `router()` with injected credentials, and
//! the OpenAPI document as weir-contract reads it.
#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use bytes::Bytes;
use http_body_util::BodyExt;
use tower::ServiceExt;
use weir_daemon::api::{Access, ApiState, DaemonInfo, Limits, Peer, ReconcileReport};
use weir_log::{Log, Options};

/// A daemon's state without trackers.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub state: Arc<ApiState>,
    /// The directory the filesystem tracker watches, with real trackers
    /// (dropped after the state, so the tree outlives its tracker).
    pub tree: Option<tempfile::TempDir>,
}

/// Which trackers to run.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Trackers {
    None,
    /// Real mount, device and filesystem trackers (root only; the caller
    /// checks). The filesystem tracker watches a fresh directory on
    /// /dev/shm (a tmpfs, so the events of a build on the disk stay out
    /// of its queue), or in the temporary directory without one.
    Real,
}

pub fn fixture(access: Access, limits: Limits, trackers: Trackers) -> Fixture {
    fixture_with_log(access, limits, trackers, Options::default())
}

/// [`fixture`] with a log opened with `options`.
pub fn fixture_with_log(
    access: Access,
    limits: Limits,
    trackers: Trackers,
    options: Options,
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Log::open(dir.path().join("log"), options).unwrap());
    let (mounts, devices) = match trackers {
        Trackers::None => (None, None),
        Trackers::Real => (
            Some(Arc::new(
                weir_mounts::Tracker::start(None, Default::default(), None).unwrap(),
            )),
            Some(Arc::new(
                weir_devices::Tracker::start(None, Default::default(), None).unwrap(),
            )),
        ),
    };
    let (tree, fs) = match trackers {
        Trackers::None => (None, None),
        Trackers::Real => {
            let tree = tempfile::tempdir_in("/dev/shm")
                .or_else(|_| tempfile::tempdir())
                .unwrap();
            std::fs::create_dir(tree.path().join("sub")).unwrap();
            std::fs::write(tree.path().join("sub/a"), b"a").unwrap();
            let opts = weir_fs::TrackerOptions {
                roots: vec![tree.path().to_owned()],
                ..Default::default()
            };
            let t = weir_fs::Tracker::start(None, opts, None)
                .unwrap_or_else(|e| panic!("watching {}: {e}", tree.path().display()));
            (Some(tree), Some(Arc::new(t)))
        }
    };
    let state = Arc::new(ApiState {
        log,
        mounts,
        devices,
        fs,
        ship: None,
        access,
        info: DaemonInfo::current(dir.path().to_owned(), dir.path().join("weir.sock"), None),
        limits,
        reconcile: ReconcileReport::default(),
    });
    Fixture { dir, state, tree }
}

/// `docs/openapi.yaml`, parsed once per test binary.
pub fn doc() -> &'static weir_contract::Doc {
    static DOC: OnceLock<weir_contract::Doc> = OnceLock::new();
    DOC.get_or_init(|| {
        weir_contract::Doc::parse(weir_daemon::api::OPENAPI_YAML).unwrap_or_else(|e| panic!("{e}"))
    })
}

/// The default fixture: no group, no public reads, no trackers.
pub fn plain() -> Fixture {
    fixture(Access::default(), Limits::default(), Trackers::None)
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

pub fn root() -> Peer {
    Peer::new(0, 0)
}

/// An outsider: neither root nor this process's user, whom the gate lets
/// in as the daemon's own (the fixtures' daemon is this process), and in
/// no group. Uid and gid 65534, or 65533 when the tests themselves run as
/// 65534, so that a refusal is seen whoever runs them.
pub fn nobody() -> Peer {
    let id = if rustix::process::geteuid().as_raw() == 65534 {
        65533
    } else {
        65534
    };
    Peer::new(id, id)
}

/// An answer, read whole.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
    }

    pub fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .map_or("", |v| v.to_str().unwrap())
    }

    /// Asserts the JSON error body with this status and code.
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(
            (self.status.as_u16(), self.content_type()),
            (status, "application/json"),
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        let v = self.json();
        assert_eq!(v["error"]["code"], code, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{v}"
        );
    }
}

/// Sends a request with `peer`'s credentials (none if `None`).
pub async fn call(
    router: &Router,
    method: &str,
    uri: &str,
    body: impl Into<Body>,
    peer: Option<Peer>,
) -> Answer {
    let mut req = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).unwrap())
        .uri(uri)
        .body(body.into())
        .unwrap();
    if let Some(p) = peer {
        req.extensions_mut().insert(p);
    }
    let res = router.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        headers,
        body,
    }
}

/// As root.
pub async fn as_root(router: &Router, method: &str, uri: &str, body: impl Into<Body>) -> Answer {
    call(router, method, uri, body, Some(root())).await
}

/// Appends `n` MARK records named `0..n` straight to the log.
pub fn append_marks(log: &Log, n: u64) {
    for i in 0..n {
        let name = i.to_string();
        let _ = log
            .append(&weir_log::Record::new(weir_log::RecordType::MARK).name(name.as_bytes()))
            .unwrap();
    }
}

/// Waits until the log has committed `index`.
pub fn wait_committed(log: &Log, index: u64) {
    let t0 = std::time::Instant::now();
    while log.last_index() < index {
        assert!(t0.elapsed().as_secs() < 10, "index {index} never committed");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The API served on a real socket (`api.sock` in the fixture's
/// directory) by [`weir_daemon::api::serve`], on a runtime of its own:
/// for what only a real HTTP/1.1 connection shows.
pub struct Served {
    pub rt: tokio::runtime::Runtime,
    pub sock: std::path::PathBuf,
    stop: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    server: tokio::task::JoinHandle<Result<(), weir_daemon::api::Error>>,
}

impl Served {
    pub fn start(fx: &Fixture) -> Served {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let sock = fx.dir.path().join("api.sock");
        let listener = rt
            .block_on(async { tokio::net::UnixListener::bind(&sock) })
            .unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = rt.spawn(weir_daemon::api::serve(listener, fx.state.clone(), async {
            let _ = stopped.await;
        }));
        Served {
            rt,
            sock,
            stop: std::sync::Mutex::new(Some(stop)),
            server,
        }
    }

    /// Asks the server to stop (it ends its follow streams too).
    pub fn stop(&self) {
        if let Some(s) = self.stop.lock().unwrap().take() {
            let _ = s.send(());
        }
    }

    /// Stops the server and waits until it has ended without error.
    pub fn join(self) {
        self.stop();
        self.rt.block_on(self.server).unwrap().unwrap();
    }
}
