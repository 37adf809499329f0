//! The API's listening socket: taken from socket activation, or bound at
//! the configured path with its owner group and mode.
//!
//! Binding is careful about what is already there. A socket file nobody
//! answers on is a stale one from a daemon that died, and is replaced; a
//! socket that answers belongs to a running daemon, and this one refuses to
//! start; anything that is not a socket is never removed.
//!
//! The socket is bound with the process umask (0022 under systemd, so no
//! one else can connect: that needs write permission) and then given its
//! group and mode. Without a usable group (none configured, the group does
//! not exist, or chown is refused), root's group gets what others get:
//! 0660 becomes 0600 and the socket is root's alone, 0666 (`public_read`)
//! stays open to everyone; a warning says why.

use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType, sockopt};
use tracing::{info, warn};

use super::group;
use crate::config::AccessConfig;
use crate::{Error, Result};

/// The listening socket and where clients reach it.
pub(crate) struct Listener {
    /// The socket.
    pub(crate) listener: UnixListener,
    /// Its path (for the health check and `/v1/status`).
    pub(crate) path: PathBuf,
    /// Whether the service manager passed it.
    pub(crate) activated: bool,
    /// The socket's group, when it has one (name, gid).
    pub(crate) group: Option<(String, u32)>,
    /// The file this process created: keep it until the end, it removes
    /// the socket when dropped.
    pub(crate) file: Option<SocketFile>,
}

/// Takes the socket from socket activation if there is one, else binds
/// `path`.
pub(crate) fn open(path: &Path, access: &AccessConfig) -> Result<Listener> {
    let group = resolve_group(access);
    if let Some(listener) = activated()? {
        let path = listener
            .local_addr()
            .ok()
            .and_then(|a| a.as_pathname().map(Path::to_owned))
            .unwrap_or_else(|| path.to_owned());
        info!(socket = %path.display(), "using the socket passed by the service manager");
        return Ok(Listener {
            listener,
            path,
            activated: true,
            group,
            file: None,
        });
    }
    bind(path, access, group)
}

/// The first listening Unix stream socket passed by the service manager.
fn activated() -> Result<Option<UnixListener>> {
    let fds = weir_sys::activation::listen_fds()?;
    if fds.is_empty() {
        return Ok(None);
    }
    let count = fds.len();
    for fd in fds {
        let usable = sockopt::socket_domain(&fd).is_ok_and(|d| d == AddressFamily::UNIX)
            && sockopt::socket_type(&fd).is_ok_and(|t| t == SocketType::STREAM)
            && sockopt::socket_acceptconn(&fd).unwrap_or(false);
        if usable {
            return Ok(Some(UnixListener::from(fd)));
        }
        warn!("ignoring a passed fd that is not a listening Unix stream socket");
    }
    Err(Error::NoActivatedListener { count })
}

/// The configured group, if it exists in /etc/group.
fn resolve_group(access: &AccessConfig) -> Option<(String, u32)> {
    let name = access.group.as_deref()?;
    match group::gid_of(Path::new(group::GROUP_FILE), name) {
        Ok(Some(gid)) => Some((name.to_owned(), gid)),
        Ok(None) => {
            warn!(
                group = name,
                "the socket's group does not exist (create it: `groupadd --system {name}`); \
                 the socket is root's alone"
            );
            None
        }
        Err(e) => {
            warn!(group = name, error = %e, "cannot read {}; the socket is root's alone", group::GROUP_FILE);
            None
        }
    }
}

fn socket_err(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_owned();
    move |source| Error::Socket { what, path, source }
}

fn bind(path: &Path, access: &AccessConfig, group: Option<(String, u32)>) -> Result<Listener> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.exists()
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(socket_err("creating the socket's directory", dir))?;
    }
    clear_stale(path)?;
    let listener = UnixListener::bind(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            // Another daemon bound it between our check and our bind.
            Error::AlreadyRunning {
                path: path.to_owned(),
            }
        } else {
            socket_err("binding", path)(e)
        }
    })?;
    let meta = std::fs::symlink_metadata(path).map_err(socket_err("inspecting", path))?;
    let file = SocketFile {
        path: path.to_owned(),
        dev: meta.dev(),
        ino: meta.ino(),
    };
    let group = group.and_then(|(name, gid)| {
        match rustix::fs::chown(path, None, Some(rustix::fs::Gid::from_raw(gid))) {
            Ok(()) => Some((name, gid)),
            Err(e) => {
                warn!(group = %name, error = %e, "cannot give the socket to its group; it is root's alone");
                None
            }
        }
    });
    let mode = if group.is_some() {
        access.effective_mode()
    } else {
        mode_without_group(access.effective_mode())
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(socket_err("setting the mode of", path))?;
    info!(socket = %path.display(), mode = format!("{mode:04o}"), group = group.as_ref().map(|g| g.0.as_str()), "listening");
    Ok(Listener {
        listener,
        path: path.to_owned(),
        activated: false,
        group,
        file: Some(file),
    })
}

/// The mode for a socket left with the daemon's own group (root's): that
/// group gets exactly what everyone else gets. 0660 becomes 0600 (root
/// alone); 0666 (`public_read`) stays 0666, since connecting needs write
/// permission and the daemon checks each caller's credentials itself
/// (mutations then need root). Only clearing the group bits would make
/// 0666 into 0606: open to everyone except root's group.
fn mode_without_group(mode: u32) -> u32 {
    (mode & !0o070) | ((mode & 0o007) << 3)
}

/// Removes a socket file nobody answers on; refuses when a daemon answers
/// or the path is not a socket.
fn clear_stale(path: &Path) -> Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(socket_err("inspecting", path)(e)),
    };
    if !meta.file_type().is_socket() {
        return Err(Error::NotASocket {
            path: path.to_owned(),
        });
    }
    match probe(path) {
        Ok(()) => Err(Error::AlreadyRunning {
            path: path.to_owned(),
        }),
        Err(e) if e == Errno::CONNREFUSED => {
            warn!(socket = %path.display(), "removing a stale socket nobody answers on");
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(socket_err("removing the stale socket", path)(e))
                }
                _ => Ok(()),
            }
        }
        // Gone meanwhile: nothing to clear.
        Err(e) if e == Errno::NOENT => Ok(()),
        Err(e) => Err(socket_err("probing the existing socket", path)(e.into())),
    }
}

/// Whether something listens on `path`: a connection without blocking, so
/// a live daemon whose backlog is full (EAGAIN) counts as alive instead of
/// hanging the start.
fn probe(path: &Path) -> Result<(), Errno> {
    let fd = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    let addr = SocketAddrUnix::new(path)?;
    match rustix::net::connect(&fd, &addr) {
        Ok(()) => Ok(()),
        Err(e) if e == Errno::AGAIN || e == Errno::INPROGRESS => Ok(()),
        Err(e) => Err(e),
    }
}

/// The socket file this process bound: removed when the daemon stops, but
/// only if it is still the same file (a newer daemon may have replaced it).
pub(crate) struct SocketFile {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.dev() == self.dev && m.ino() == self.ino);
        if ours && let Err(e) = std::fs::remove_file(&self.path) {
            warn!(socket = %self.path.display(), error = %e, "cannot remove the socket");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_group_the_group_gets_what_others_get() {
        assert_eq!(mode_without_group(0o660), 0o600);
        assert_eq!(mode_without_group(0o666), 0o666);
        assert_eq!(mode_without_group(0o600), 0o600);
        assert_eq!(mode_without_group(0o662), 0o622);
        // Never open to others but closed to the group.
        for mode in 0..=0o777 {
            let m = mode_without_group(mode);
            assert_eq!(
                m & 0o700,
                mode & 0o700,
                "{mode:o}: the owner keeps its bits"
            );
            assert_eq!((m >> 3) & 0o7, m & 0o7, "{mode:o}: group and others differ");
        }
    }
}
