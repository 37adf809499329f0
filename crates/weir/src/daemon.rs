//! Choosing between the daemon and direct work.
//!
//! A command that the daemon can answer asks it when its socket accepts a
//! connection, and works directly (reading the system, or the log's files)
//! when nothing listens there. `--direct` never asks. Commands on the log
//! also work directly when `--state-dir` names another directory than the
//! daemon's: the daemon only speaks for its own log.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use weir_client::{Client, ErrorCode, PathQuery};
use weir_view::status::Status;

/// The environment variable that names the socket when `--socket` is not
/// given.
pub(crate) const SOCKET_ENV: &str = "WEIR_SOCKET";

/// Where the daemon is, and whether to ask it.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    socket: PathBuf,
    /// Where to look when nothing answers on `socket`, which was not given:
    /// the system daemon's socket, for a user in its group.
    fallback: Option<PathBuf>,
    direct: bool,
    /// `--state-dir`, when it was given.
    state_arg: Option<PathBuf>,
}

impl Route {
    /// The route from the global options.
    pub(crate) fn new(socket: Option<PathBuf>, direct: bool, state_arg: Option<PathBuf>) -> Route {
        let given = explicit_socket(socket);
        let fallback = match given {
            Some(_) => None,
            None => weir_client::fallback_socket(),
        };
        Route {
            socket: given.unwrap_or_else(weir_client::default_socket),
            fallback,
            direct,
            state_arg,
        }
    }

    /// The sockets a connection is tried on, for a message saying no
    /// daemon answers: "A" or "A or B".
    pub(crate) fn tried(&self) -> String {
        match &self.fallback {
            Some(f) => format!("{} or {}", self.socket.display(), f.display()),
            None => self.socket.display().to_string(),
        }
    }

    /// Whether `--direct` was given.
    pub(crate) fn direct(&self) -> bool {
        self.direct
    }

    /// A connection to the daemon; `None` with `--direct` or when nothing
    /// listens on the socket.
    pub(crate) fn client(&self) -> Result<Option<Client>> {
        if self.direct {
            return Ok(None);
        }
        let ask = |socket: &Path| {
            Client::connect(socket)
                .with_context(|| format!("asking the daemon on {}", socket.display()))
        };
        if let Some(client) = ask(&self.socket)? {
            return Ok(Some(client));
        }
        let Some(fallback) = &self.fallback else {
            return Ok(None);
        };
        match Client::connect(fallback) {
            // A socket of another group's daemon is not this user's to
            // ask: work directly, as with no daemon.
            Err(weir_client::Error::Connect { source, .. })
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                tracing::debug!(socket = %fallback.display(), "the system daemon's socket refuses this user");
                Ok(None)
            }
            r => r.with_context(|| format!("asking the daemon on {}", fallback.display())),
        }
    }

    /// As [`Route::client`], for commands on the log: also `None` when
    /// `--state-dir` names another directory than the daemon's.
    pub(crate) fn log_client(&self) -> Result<Option<Client>> {
        let Some(mut client) = self.client()? else {
            return Ok(None);
        };
        let Some(arg) = &self.state_arg else {
            return Ok(Some(client));
        };
        let status: Status = client
            .get_json("/v1/status")
            .context("asking the daemon for its state directory")?;
        let dir = status
            .state_dir
            .context("the daemon's status names no state directory")?;
        Ok(same_dir(arg, Path::new(&dir)).then_some(client))
    }
}

/// Whether two paths name the same existing directory.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `--socket`, else `$WEIR_SOCKET` when set and not empty; `None` leaves
/// the choice to the defaults (`weir run` listens on
/// [`weir_client::default_socket`]).
pub(crate) fn explicit_socket(arg: Option<PathBuf>) -> Option<PathBuf> {
    arg.or_else(|| {
        std::env::var_os(SOCKET_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

/// Copies a listing the daemon renders (`target`) to stdout. `Ok(false)`
/// when the daemon answers that its source for it is off or failed
/// (`unavailable`): the caller then reads the system itself.
pub(crate) fn copy_listing(client: &mut Client, target: &PathQuery, what: &str) -> Result<bool> {
    let mut out = crate::stdout::lock();
    match client.get_text(target.as_str(), &mut out) {
        Ok(_) => Ok(true),
        // A refusal, before any output: not a stream that failed midway
        // (`Error::Aborted`), whose output is already out.
        Err(weir_client::Error::Api {
            code: ErrorCode::Unavailable,
            ..
        }) => {
            tracing::info!(what, "the daemon's source is unavailable; reading directly");
            Ok(false)
        }
        Err(e) => Err(e).with_context(|| format!("asking the daemon for {what}")),
    }
}

/// Prints `v` as one compact JSON line: serde_json's maps keep their keys
/// sorted, so the same value prints the same bytes on either path.
pub(crate) fn print_json_line(v: &serde_json::Value) -> Result<()> {
    let mut out = crate::stdout::lock();
    writeln!(out, "{v}")?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_dir_resolves_links_and_dots() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        std::fs::create_dir(&a).unwrap();
        std::os::unix::fs::symlink(&a, t.path().join("link")).unwrap();
        assert!(same_dir(&a, &t.path().join("link")));
        assert!(same_dir(&a, &t.path().join("a/../a/.")));
        assert!(!same_dir(&a, t.path()));
        assert!(!same_dir(
            &t.path().join("missing"),
            &t.path().join("missing")
        ));
    }

    #[test]
    fn direct_never_connects() {
        // A socket that exists and listens: --direct must still not ask.
        let t = tempfile::tempdir().unwrap();
        let sock = t.path().join("s.sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let r = Route::new(Some(sock.clone()), true, None);
        assert!(r.client().unwrap().is_none());
        assert_eq!(r.tried(), sock.display().to_string());
        let r = Route::new(Some(t.path().join("none.sock")), false, None);
        assert!(r.client().unwrap().is_none(), "nothing listens there");
    }
}
