//! Choosing how to watch: fanotify mount events, or mountinfo polling.

use std::fmt;
use std::str::FromStr;

use weir_sys::fanotify::MountWatch;

use crate::model::Mount;
use crate::source;
use crate::{Error, Result};

/// What the caller asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// fanotify when the kernel and the privileges allow it, else mountinfo.
    #[default]
    Auto,
    /// fanotify or fail.
    Fanotify,
    /// mountinfo, even where fanotify would work.
    Mountinfo,
}

impl FromStr for BackendChoice {
    type Err = UnknownBackend;
    fn from_str(s: &str) -> Result<Self, UnknownBackend> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "fanotify" => Ok(BackendChoice::Fanotify),
            "mountinfo" => Ok(BackendChoice::Mountinfo),
            _ => Err(UnknownBackend),
        }
    }
}

/// A backend name other than `auto`, `fanotify` or `mountinfo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown backend (expected auto, fanotify or mountinfo)")]
pub struct UnknownBackend;

/// The backend in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// fanotify mount events (Linux 6.15+, CAP_SYS_ADMIN over the mount
    /// namespace) with listmount + statmount: O(1) work per attach, detach
    /// or move.
    Fanotify,
    /// POLLPRI on /proc/self/mountinfo, a full parse and a comparison,
    /// under a CPU budget: any kernel, no privilege.
    Mountinfo,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Fanotify => "fanotify",
            Backend::Mountinfo => "mountinfo",
        })
    }
}

/// The outcome of choosing: the backend, the fanotify group when it is
/// fanotify, and why fanotify was not used when `auto` fell back.
pub(crate) struct Chosen {
    pub(crate) backend: Backend,
    pub(crate) watch: Option<MountWatch>,
    pub(crate) fallback: Option<Error>,
}

/// Chooses a backend. For fanotify, the group is open and marked before the
/// caller reads the table, so no change falls between the two.
pub(crate) fn choose(choice: BackendChoice) -> Result<Chosen> {
    match choice {
        BackendChoice::Mountinfo => Ok(Chosen {
            backend: Backend::Mountinfo,
            watch: None,
            fallback: None,
        }),
        BackendChoice::Fanotify => Ok(Chosen {
            backend: Backend::Fanotify,
            watch: Some(open_fanotify()?),
            fallback: None,
        }),
        BackendChoice::Auto => match open_fanotify() {
            Ok(w) => Ok(Chosen {
                backend: Backend::Fanotify,
                watch: Some(w),
                fallback: None,
            }),
            Err(e) => Ok(Chosen {
                backend: Backend::Mountinfo,
                watch: None,
                fallback: Some(e),
            }),
        },
    }
}

/// Opens the fanotify group and checks that listmount works too (both
/// arrived in kernels of the same era, but a seccomp filter may allow one).
fn open_fanotify() -> Result<MountWatch> {
    let w = MountWatch::open().map_err(Error::Fanotify)?;
    weir_sys::listmount::listmount_all().map_err(Error::Fanotify)?;
    Ok(w)
}

/// One reading of the table, as `weir mounts` shows it.
#[derive(Debug)]
pub struct Snapshot {
    /// The backend whose source was read.
    pub backend: Backend,
    /// Why fanotify was not used, when `auto` fell back.
    pub fallback: Option<Error>,
    /// The mounts, sorted by id.
    pub mounts: Vec<Mount>,
}

/// Reads the table once with the source of the backend `choice` selects:
/// listmount + statmount for fanotify, the mountinfo parser otherwise.
pub fn snapshot(choice: BackendChoice) -> Result<Snapshot> {
    let chosen = choose(choice)?;
    Ok(Snapshot {
        backend: chosen.backend,
        fallback: chosen.fallback,
        mounts: source::read_sorted(chosen.backend)?,
    })
}
