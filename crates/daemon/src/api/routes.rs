//! The one table of what the API serves: each route's method, path
//! pattern and whether it changes anything.
//!
//! Every request is resolved against this table before the router sees it
//! (see [`crate::api::gate`]), so a route missing here cannot be reached
//! even if a handler for it were registered, and the access rule and the
//! metrics label come from the same place. A test checks the table against
//! `docs/openapi.yaml` both ways.

/// One route of the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteSpec {
    /// The HTTP method, upper case.
    pub method: &'static str,
    /// The path pattern, OpenAPI style: `{name}` is one path segment.
    pub path: &'static str,
    /// Whether it changes the log: only privileged peers may call it.
    pub mutation: bool,
}

const fn read(method: &'static str, path: &'static str) -> RouteSpec {
    RouteSpec {
        method,
        path,
        mutation: false,
    }
}

const fn mutation(method: &'static str, path: &'static str) -> RouteSpec {
    RouteSpec {
        method,
        path,
        mutation: true,
    }
}

/// Every route the API serves.
pub const ROUTES: &[RouteSpec] = &[
    read("GET", "/v1/mounts"),
    read("GET", "/v1/devices"),
    read("GET", "/v1/lvm/pvs"),
    read("GET", "/v1/lvm/vgs"),
    read("GET", "/v1/lvm/lvs"),
    read("GET", "/v1/fs"),
    read("GET", "/v1/fs/changes"),
    mutation("POST", "/v1/fs/rescan"),
    read("GET", "/v1/log/records"),
    mutation("POST", "/v1/log/records"),
    read("GET", "/v1/log/stats"),
    read("GET", "/v1/log/consumers"),
    mutation("POST", "/v1/log/consumers"),
    read("GET", "/v1/log/consumers/{name}"),
    mutation("DELETE", "/v1/log/consumers/{name}"),
    mutation("POST", "/v1/log/consumers/{name}/clear"),
    // A barrier changes nothing anyone can see: any reader may ask.
    read("POST", "/v1/sync"),
    read("GET", "/v1/status"),
    read("GET", "/metrics"),
    read("GET", "/v1/openapi.yaml"),
];

/// What a request's method and path resolve to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// A route of the table.
    Route(&'static RouteSpec),
    /// A known path, another method: the methods it has (for `Allow`).
    WrongMethod(Vec<&'static str>),
    /// No such path.
    NotFound,
}

/// Resolves a request. `HEAD` is served wherever `GET` is.
pub(crate) fn resolve(method: &str, path: &str) -> Resolved {
    let want = if method == "HEAD" { "GET" } else { method };
    let mut allow = Vec::new();
    for r in ROUTES.iter().filter(|r| matches(r.path, path)) {
        if r.method == want {
            return Resolved::Route(r);
        }
        allow.push(r.method);
    }
    if allow.is_empty() {
        Resolved::NotFound
    } else {
        Resolved::WrongMethod(allow)
    }
}

/// The pattern of the route a path falls under, for metrics labels (so
/// that hostile paths cannot grow the label set): `"other"` for none.
pub(crate) fn label(path: &str) -> &'static str {
    ROUTES
        .iter()
        .find(|r| matches(r.path, path))
        .map_or("other", |r| r.path)
}

/// Whether `path` matches `pattern`, segment by segment; `{x}` matches
/// any one non-empty segment.
fn matches(pattern: &str, path: &str) -> bool {
    let mut p = pattern.split('/');
    let mut s = path.split('/');
    loop {
        match (p.next(), s.next()) {
            (None, None) => return true,
            (Some(want), Some(got)) => {
                let wild = want.starts_with('{') && want.ends_with('}');
                if !(wild && !got.is_empty() || want == got) {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_methods_paths_and_wildcards() {
        assert!(matches!(
            resolve("GET", "/v1/log/consumers/abc"),
            Resolved::Route(RouteSpec {
                mutation: false,
                ..
            })
        ));
        assert!(matches!(
            resolve("DELETE", "/v1/log/consumers/abc"),
            Resolved::Route(RouteSpec { mutation: true, .. })
        ));
        assert!(matches!(
            resolve("HEAD", "/v1/mounts"),
            Resolved::Route(RouteSpec { method: "GET", .. })
        ));
        assert_eq!(
            resolve("PUT", "/v1/log/records"),
            Resolved::WrongMethod(vec!["GET", "POST"])
        );
        for p in [
            "/v1/log/consumers/",
            "/v1/log/consumers/a/b",
            "/v1/mounts/",
            "/v1",
            "",
            "/",
        ] {
            assert_eq!(resolve("GET", p), Resolved::NotFound, "{p}");
        }
        assert_eq!(
            label("/v1/log/consumers/x/clear"),
            "/v1/log/consumers/{name}/clear"
        );
        assert_eq!(label("/etc/passwd"), "other");
    }
}
