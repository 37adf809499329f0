//! Where the daemon's socket is by default: one system-wide place for root,
//! the user's runtime directory for everyone else (the daemon and the CLI
//! both ask here, so they meet without configuration); and where a client
//! looks next, the system daemon's socket, which members of its group may
//! use.

use std::ffi::OsString;
use std::path::PathBuf;

/// The socket of the system daemon (run by root).
pub const SYSTEM_SOCKET: &str = "/run/weir/weir.sock";

/// The file name of the socket in a user's runtime directory.
const USER_SOCKET_NAME: &str = "weir.sock";

/// The default socket: [`SYSTEM_SOCKET`] for effective uid 0, else
/// `$XDG_RUNTIME_DIR/weir.sock`, or `/run/user/<uid>/weir.sock` when
/// `$XDG_RUNTIME_DIR` is unset or not absolute.
pub fn default_socket() -> PathBuf {
    socket_for(
        rustix::process::geteuid().as_raw(),
        std::env::var_os("XDG_RUNTIME_DIR"),
    )
}

/// Where a client looks next when nothing answers on [`default_socket`]:
/// the system daemon, for everyone but root (whose default it already
/// is). Its socket is open to the members of its group, so a member finds
/// the host's daemon without `--socket`; to anyone else it refuses the
/// connection, and the client works directly as before.
pub fn fallback_socket() -> Option<PathBuf> {
    fallback_for(rustix::process::geteuid().as_raw())
}

fn fallback_for(uid: u32) -> Option<PathBuf> {
    (uid != 0).then(|| PathBuf::from(SYSTEM_SOCKET))
}

fn socket_for(uid: u32, runtime_dir: Option<OsString>) -> PathBuf {
    if uid == 0 {
        return PathBuf::from(SYSTEM_SOCKET);
    }
    // The XDG spec says a relative path in an XDG variable is to be ignored.
    match runtime_dir.map(PathBuf::from).filter(|p| p.is_absolute()) {
        Some(dir) => dir.join(USER_SOCKET_NAME),
        None => PathBuf::from(format!("/run/user/{uid}")).join(USER_SOCKET_NAME),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn root_uses_the_system_socket_whatever_the_environment() {
        assert_eq!(
            socket_for(0, Some("/run/user/0".into())),
            Path::new(SYSTEM_SOCKET)
        );
        assert_eq!(socket_for(0, None), Path::new(SYSTEM_SOCKET));
    }

    #[test]
    fn users_fall_back_on_the_system_socket_and_root_has_no_fallback() {
        assert_eq!(fallback_for(1000), Some(PathBuf::from(SYSTEM_SOCKET)));
        assert_eq!(fallback_for(0), None);
    }

    #[test]
    fn users_use_their_runtime_directory() {
        assert_eq!(
            socket_for(1000, Some("/tmp/xdg-1000".into())),
            Path::new("/tmp/xdg-1000/weir.sock")
        );
        assert_eq!(
            socket_for(1000, None),
            Path::new("/run/user/1000/weir.sock")
        );
        assert_eq!(
            socket_for(4242, Some("relative/dir".into())),
            Path::new("/run/user/4242/weir.sock")
        );
    }
}
