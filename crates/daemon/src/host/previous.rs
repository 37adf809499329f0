//! What the start knows of the last run: the inventory checkpoint in the
//! state directory and whether it was written in this boot.
//!
//! A checkpoint that cannot be used (damaged, foreign, from a newer weir)
//! is not fatal: the daemon starts without it, as on a first start, and
//! says why in a warning, a MARK and `/v1/status`.

use std::io::Read;
use std::path::Path;

use tracing::{info, warn};

use crate::checkpoint::{self, Checkpoint};

/// The kernel's id of this boot.
const BOOT_ID_FILE: &str = "/proc/sys/kernel/random/boot_id";
/// A boot id is a UUID: 36 characters and a newline.
const BOOT_ID_LEN: usize = 36;

/// The last run's inventory, and why there is none.
pub(crate) struct Prior {
    /// This boot's id ("" when unreadable: then no checkpoint counts as
    /// from this boot).
    pub(crate) boot_id: String,
    /// The checkpoint, if one was read.
    pub(crate) checkpoint: Option<Checkpoint>,
    /// Why no checkpoint is used, when none is.
    pub(crate) not_used: Option<String>,
}

impl Prior {
    /// Whether the checkpoint was written in this boot.
    pub(crate) fn same_boot(&self) -> bool {
        self.checkpoint
            .as_ref()
            .is_some_and(|c| !self.boot_id.is_empty() && c.boot_id == self.boot_id)
    }
}

/// Reads the checkpoint at `path` and this boot's id.
pub(crate) fn load(path: &Path) -> Prior {
    let boot_id = boot_id(Path::new(BOOT_ID_FILE)).unwrap_or_else(|e| {
        warn!(error = %e, "cannot read the boot id; the checkpoint counts as from another boot");
        String::new()
    });
    let (checkpoint, not_used) = match checkpoint::read(path) {
        Ok(Some(c)) => {
            info!(
                path = %path.display(),
                clean = c.clean,
                same_boot = !boot_id.is_empty() && c.boot_id == boot_id,
                "read the inventory checkpoint"
            );
            (Some(c), None)
        }
        Ok(None) => (None, Some("no checkpoint (first start)".to_owned())),
        Err(e) => {
            let why = weir_view::chain::error_chain(&e);
            warn!(path = %path.display(), error = %why, "the inventory checkpoint is unusable; starting without it");
            (None, Some(format!("unusable checkpoint: {why}")))
        }
    };
    Prior {
        boot_id,
        checkpoint,
        not_used,
    }
}

/// Reads a boot id: a UUID on one line. Anything else is refused rather
/// than compared.
pub(crate) fn boot_id(path: &Path) -> std::io::Result<String> {
    let mut buf = Vec::with_capacity(BOOT_ID_LEN + 1);
    std::fs::File::open(path)?
        .take(BOOT_ID_LEN as u64 + 2)
        .read_to_end(&mut buf)?;
    let text = buf.strip_suffix(b"\n").unwrap_or(&buf);
    let well_formed = text.len() == BOOT_ID_LEN
        && text.iter().enumerate().all(|(i, &b)| {
            if [8, 13, 18, 23].contains(&i) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        });
    if !well_formed {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a boot id (a UUID)",
        ));
    }
    // Checked ASCII above.
    Ok(String::from_utf8_lossy(text).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_boot_id() {
        let id = boot_id(Path::new(BOOT_ID_FILE)).unwrap();
        assert_eq!(id.len(), BOOT_ID_LEN);
        assert_eq!(boot_id(Path::new(BOOT_ID_FILE)).unwrap(), id);
    }

    #[test]
    fn refuses_what_is_not_a_uuid() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("id");
        for bad in [
            &b""[..],
            b"abc\n",
            b"0123456789abcdef0123456789abcdef0123\n",
            &[b'a'; 100],
        ] {
            std::fs::write(&p, bad).unwrap();
            assert!(boot_id(&p).is_err(), "{bad:?}");
        }
        std::fs::write(&p, b"4a0e2a6c-0b8e-4e4e-9d8b-2f0c6b1f7e11\n").unwrap();
        assert_eq!(boot_id(&p).unwrap(), "4a0e2a6c-0b8e-4e4e-9d8b-2f0c6b1f7e11");
    }
}
