//! Access control: as an outsider (`api_support::nobody`: uid 65534, or
//! 65533 when the tests run as 65534), outside the group, reads work only
//! when `public_read` is set and every mutation is refused with 403, leaving
//! the log as it was; members of the group may do everything. Also end
//! to end: a real connection from a thread running as uid 65534 is
//! identified by SO_PEERCRED and refused.

mod api_support;

use std::io::{Read, Write};
use std::sync::Arc;

use api_support::{Trackers, call, fixture, is_root, nobody};
use weir_daemon::api::{Access, Limits, Peer, ROUTES};

/// A request for each route (a consumer `c` exists).
fn request(method: &str, path: &str) -> (String, String) {
    let uri = path.replace("{name}", "c");
    let body = match (method, path) {
        ("POST", "/v1/log/records") => r#"{"records":[{"type":"MARK","name":"x"}]}"#,
        ("POST", "/v1/log/consumers") => r#"{"name":"other"}"#,
        ("POST", "/v1/log/consumers/{name}/clear") => "{}",
        _ => "",
    };
    (uri, body.to_owned())
}

fn access(public_read: bool) -> Access {
    Access {
        group: Some(("weir".into(), 990)),
        public_read,
    }
}

async fn check_as(peer: Peer, public_read: bool, privileged: bool) {
    let fx = fixture(access(public_read), Limits::default(), Trackers::None);
    let r = weir_daemon::api::router(fx.state.clone());
    fx.state
        .log
        .register("c", weir_log::TypeMask::all())
        .unwrap();
    api_support::append_marks(&fx.state.log, 2);
    api_support::wait_committed(&fx.state.log, 2);
    let before = fx.state.log.consumer_list();
    for route in ROUTES {
        let (uri, body) = request(route.method, route.path);
        let a = call(&r, route.method, &uri, body, Some(peer.clone())).await;
        let allowed = privileged || (public_read && !route.mutation);
        if allowed {
            assert_ne!(
                a.status,
                403,
                "{} {uri} as {peer:?}: {}",
                route.method,
                a.text()
            );
        } else {
            a.assert_error(403, "forbidden");
            assert!(a.text().contains("group weir"), "{}", a.text());
        }
    }
    if !privileged {
        // Nothing changed: no record appended, no consumer touched.
        assert_eq!(fx.state.log.last_index(), 2);
        let after = fx.state.log.consumer_list();
        assert_eq!(
            after
                .iter()
                .map(|c| (&c.name, c.cleared))
                .collect::<Vec<_>>(),
            before
                .iter()
                .map(|c| (&c.name, c.cleared))
                .collect::<Vec<_>>()
        );
    }
}

#[tokio::test]
async fn nobody_reads_only_when_public_and_never_changes() {
    check_as(nobody(), false, false).await;
    check_as(nobody(), true, false).await;
}

#[tokio::test]
async fn an_unidentified_peer_is_nobody() {
    let fx = fixture(access(true), Limits::default(), Trackers::None);
    let r = weir_daemon::api::router(fx.state.clone());
    assert_eq!(
        call(&r, "GET", "/v1/log/consumers", "", None).await.status,
        200
    );
    call(&r, "POST", "/v1/log/consumers", r#"{"name":"x"}"#, None)
        .await
        .assert_error(403, "forbidden");
}

#[tokio::test]
async fn group_members_root_and_the_daemon_user_may_do_everything() {
    let mut member = Peer::new(1000, 1000);
    member.groups = vec![4, 990];
    check_as(member, false, true).await;
    check_as(Peer::new(2000, 990), false, true).await;
    check_as(Peer::new(0, 0), false, true).await;
    let me = rustix::process::geteuid().as_raw();
    check_as(Peer::new(me, 12345), false, true).await;
}

/// One HTTP/1.1 request over `path`, from a thread that runs as
/// uid/gid 65534 with no groups; returns the status code.
fn request_as_nobody(
    path: std::path::PathBuf,
    method: &'static str,
    uri: &'static str,
    body: &'static str,
) -> u16 {
    std::thread::spawn(move || {
        use rustix::process::{Gid, Uid};
        // This thread's credentials only (raw syscalls), gone with it.
        rustix::thread::set_thread_groups(&[]).unwrap();
        rustix::thread::set_thread_res_gid(Gid::from_raw(65534), Gid::from_raw(65534), Gid::from_raw(65534)).unwrap();
        rustix::thread::set_thread_res_uid(Uid::from_raw(65534), Uid::from_raw(65534), Uid::from_raw(65534)).unwrap();
        let mut s = std::os::unix::net::UnixStream::connect(&path).unwrap();
        // One write, so the whole request is queued before the server
        // reads any of it. With `write!` the body went in a second write,
        // which met EPIPE (CI, 2026-11-21) when the server had already
        // refused the request from its headers and closed.
        let request = format!(
            "{method} {uri} HTTP/1.1\r\nHost: weir\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(request.as_bytes()).unwrap();
        read_reply(&mut s)
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    })
    .join()
    .unwrap()
}

/// Everything the server sent before it closed. A server that closes
/// with part of the request unread makes the kernel end the stream with
/// ECONNRESET rather than EOF, after the data it sent.
fn read_reply(s: &mut std::os::unix::net::UnixStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("reading the reply: {e}"),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn a_real_peer_is_identified_by_its_credentials() {
    if !is_root() {
        eprintln!("skipping: changing a thread's uid needs root");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for public_read in [false, true] {
        let fx = fixture(access(public_read), Limits::default(), Trackers::None);
        std::fs::set_permissions(fx.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let sock = fx.dir.path().join("api.sock");
        let listener = rt
            .block_on(async { tokio::net::UnixListener::bind(&sock) })
            .unwrap();
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let state = fx.state.clone();
        let server = rt.spawn(weir_daemon::api::serve(listener, state, async {
            let _ = rx.await;
        }));
        let read = request_as_nobody(sock.clone(), "GET", "/v1/log/consumers", "");
        assert_eq!(read, if public_read { 200 } else { 403 });
        let write = request_as_nobody(sock.clone(), "POST", "/v1/log/consumers", r#"{"name":"x"}"#);
        assert_eq!(write, 403);
        assert!(fx.state.log.consumer_list().is_empty());
        tx.send(()).unwrap();
        rt.block_on(server).unwrap().unwrap();
        // The server let go of the state.
        assert_eq!(Arc::strong_count(&fx.state), 1);
    }
}
