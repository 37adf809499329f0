//! The inventory checkpoint, `<state-dir>/inventory`: the mount table and
//! the device inventory as last logged, kept so that a restart logs only
//! what changed while no daemon watched.
//!
//! The file is small and rewritten whole, atomically (a temporary file,
//! fsync, rename, fsync of the directory), so a crash leaves the old
//! checkpoint or the new one, never a mix. Its layout, little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `WEIRINV\0` |
//! | 8 | 4 | version (2; 1 is still read) |
//! | 12 | 4 | CRC-32C of the payload |
//! | 16 | 8 | payload length |
//! | 24 | n | payload: [`Checkpoint`] in postcard |
//!
//! Version 2 added each VG's details and LVs to the device inventory
//! (`weir_devices::VgDetail`); a version 1 file is read through
//! `weir_devices::PreviousV1`, its VGs without details.
//!
//! The file is hostile input like any other: a short, foreign, damaged or
//! newer file is a typed [`CheckpointError`] and the daemon starts without
//! a previous inventory. [`decode`] is the fuzz target.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The checkpoint's file name in the state directory.
pub const FILE_NAME: &str = "inventory";
/// The first bytes of every checkpoint.
pub const MAGIC: [u8; 8] = *b"WEIRINV\0";
/// The version this build writes (and reads, with [`VERSION_1`]).
pub const VERSION: u32 = 2;
/// The first version: no VG details or LVs in the device inventory.
pub const VERSION_1: u32 = 1;
/// Magic, version, CRC and length.
pub const HEADER_LEN: usize = 24;
/// The largest payload accepted. A checkpoint of 10,000 mounts and 1,000
/// PVs is a few MiB; the bound keeps a damaged length from allocating.
pub const MAX_PAYLOAD: u64 = 256 << 20;

/// What is kept across restarts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The kernel's boot id when it was written
    /// (`/proc/sys/kernel/random/boot_id`): mount ids mean nothing in
    /// another boot.
    pub boot_id: String,
    /// When it was written, ns since the epoch.
    pub written_ns: u64,
    /// Whether the daemon wrote it while stopping cleanly, after its
    /// trackers stopped (so nothing was logged after it).
    pub clean: bool,
    /// The mount table as last logged; `None` when mounts were not tracked.
    pub mounts: Option<weir_mounts::Previous>,
    /// The device inventory as last logged; `None` when devices were not
    /// tracked.
    pub devices: Option<weir_devices::Previous>,
}

/// [`Checkpoint`] as version 1 laid it out.
#[derive(Deserialize)]
struct CheckpointV1 {
    boot_id: String,
    written_ns: u64,
    clean: bool,
    mounts: Option<weir_mounts::Previous>,
    devices: Option<weir_devices::PreviousV1>,
}

impl From<CheckpointV1> for Checkpoint {
    fn from(c: CheckpointV1) -> Checkpoint {
        Checkpoint {
            boot_id: c.boot_id,
            written_ns: c.written_ns,
            clean: c.clean,
            mounts: c.mounts,
            devices: c.devices.map(Into::into),
        }
    }
}

/// Why a checkpoint could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// A file operation failed.
    #[error("{op} {path}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Fewer bytes than the header.
    #[error("the checkpoint is {len} bytes, shorter than its {HEADER_LEN}-byte header")]
    TooShort {
        /// The length.
        len: u64,
    },
    /// Not a checkpoint at all.
    #[error("not a weir inventory checkpoint (bad magic)")]
    BadMagic,
    /// Written by a newer (or unknown) version.
    #[error("unknown checkpoint version {version} (this build reads {VERSION})")]
    UnknownVersion {
        /// The version found.
        version: u32,
    },
    /// A payload length above [`MAX_PAYLOAD`].
    #[error("the checkpoint claims a payload of {len} bytes; the limit is {MAX_PAYLOAD}")]
    TooLarge {
        /// The claimed length.
        len: u64,
    },
    /// The file is not exactly the header and the payload it declares.
    #[error("the checkpoint declares {declared} payload bytes but holds {actual}")]
    LengthMismatch {
        /// The declared length.
        declared: u64,
        /// The bytes after the header.
        actual: u64,
    },
    /// The payload does not match its checksum.
    #[error(
        "the checkpoint's checksum does not match (stored {stored:#010x}, computed {computed:#010x})"
    )]
    Crc {
        /// The stored CRC.
        stored: u32,
        /// The CRC of the bytes found.
        computed: u32,
    },
    /// The payload does not decode.
    #[error("the checkpoint's payload does not decode")]
    Payload {
        /// postcard's error.
        #[source]
        source: postcard::Error,
    },
    /// The payload decodes but leaves bytes unread.
    #[error("the checkpoint's payload has {extra} bytes after its end")]
    TrailingBytes {
        /// How many.
        extra: usize,
    },
    /// The inventory could not be encoded.
    #[error("encoding the checkpoint")]
    Encode {
        /// postcard's error.
        #[source]
        source: postcard::Error,
    },
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

/// Decodes a whole checkpoint file. Total on any input: every length is
/// checked before it is used.
pub fn decode(bytes: &[u8]) -> Result<Checkpoint, CheckpointError> {
    let Some((header, payload)) = bytes.split_at_checked(HEADER_LEN) else {
        return Err(CheckpointError::TooShort {
            len: bytes.len() as u64,
        });
    };
    if header[..8] != MAGIC {
        return Err(CheckpointError::BadMagic);
    }
    let version = u32_at(header, 8);
    if version != VERSION && version != VERSION_1 {
        return Err(CheckpointError::UnknownVersion { version });
    }
    let stored = u32_at(header, 12);
    let mut len = [0u8; 8];
    len.copy_from_slice(&header[16..24]);
    let declared = u64::from_le_bytes(len);
    if declared > MAX_PAYLOAD {
        return Err(CheckpointError::TooLarge { len: declared });
    }
    if declared != payload.len() as u64 {
        return Err(CheckpointError::LengthMismatch {
            declared,
            actual: payload.len() as u64,
        });
    }
    let computed = crc32c::crc32c(payload);
    if computed != stored {
        return Err(CheckpointError::Crc { stored, computed });
    }
    let payload_err = |source| CheckpointError::Payload { source };
    let (c, rest) = if version == VERSION_1 {
        let (c, rest) = postcard::take_from_bytes::<CheckpointV1>(payload).map_err(payload_err)?;
        (c.into(), rest)
    } else {
        postcard::take_from_bytes::<Checkpoint>(payload).map_err(payload_err)?
    };
    if !rest.is_empty() {
        return Err(CheckpointError::TrailingBytes { extra: rest.len() });
    }
    Ok(c)
}

/// Encodes a checkpoint: header and payload.
pub fn encode(c: &Checkpoint) -> Result<Vec<u8>, CheckpointError> {
    let payload = postcard::to_stdvec(c).map_err(|source| CheckpointError::Encode { source })?;
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Reads the checkpoint at `path`; `Ok(None)` when there is none.
pub fn read(path: &Path) -> Result<Option<Checkpoint>, CheckpointError> {
    let io = |op| {
        move |source| CheckpointError::Io {
            op,
            path: path.to_owned(),
            source,
        }
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("opening")(e)),
    };
    let len = file.metadata().map_err(io("inspecting"))?.len();
    let max = HEADER_LEN as u64 + MAX_PAYLOAD;
    if len > max {
        return Err(CheckpointError::TooLarge {
            len: len - HEADER_LEN as u64,
        });
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // Bounded even if the file grows while it is read.
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(io("reading"))?;
    decode(&bytes).map(Some)
}

/// Writes `c` to `path` atomically: a temporary file beside it, fsynced,
/// renamed over it, and the directory fsynced, so that a crash at any point
/// leaves either the old checkpoint or the new one.
pub fn write(path: &Path, c: &Checkpoint) -> Result<(), CheckpointError> {
    let bytes = encode(c)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp_name = path.file_name().unwrap_or(FILE_NAME.as_ref()).to_owned();
    tmp_name.push(".tmp");
    let tmp = dir.join(tmp_name);
    let io = |op, p: &Path| {
        let path = p.to_owned();
        move |source| CheckpointError::Io { op, path, source }
    };
    let mut f = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io("creating", &tmp))?
    };
    f.write_all(&bytes).map_err(io("writing", &tmp))?;
    f.sync_all().map_err(io("syncing", &tmp))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(io("renaming into place", path))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io("syncing the directory", dir))
}
