//! `Index`: opening the file (format check), commits, snapshots, and
//! reclaiming the space a shrunken index leaves in its file.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU32;

use redb::{Database, ReadableDatabase, StorageError};

use crate::batch::{Batch, Durability};
use crate::build::Build;
use crate::error::{Error, Result};
use crate::read::Snapshot;
use crate::tables::{self, BUCKETS, DIRS, FORMAT, FORMAT_KEY, META, NEXT_ROOT, ROOTS};
use crate::write;

/// The index file: several roots' trees, each with the log index it covers.
///
/// One `Index` per file: a second open of the same file, in this process
/// or another, is refused ([`Error::Locked`]). Reads go through
/// [`Snapshot`]s, each a consistent view as of one commit; writes through
/// [`Batch`]es, each committed whole or not at all.
pub struct Index {
    db: Database,
    path: PathBuf,
    next_root: Arc<AtomicU32>,
}

/// How much of the file holds data ([`Index::space`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Space {
    /// The file's length.
    pub file_bytes: u64,
    /// The bytes of rows and of the B-trees' own pages: what a
    /// [`Index::compact`] would keep, about.
    pub used_bytes: u64,
}

impl Space {
    /// Whether compacting is worth a pause: the file is more than twice
    /// what it holds, and by more than 64 MiB.
    pub fn worth_compacting(&self) -> bool {
        let waste = self.file_bytes.saturating_sub(self.used_bytes);
        waste > self.used_bytes && waste > 64 << 20
    }
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("next_root", &self.next_root)
            .finish_non_exhaustive()
    }
}

fn open_error(path: &Path, e: redb::DatabaseError) -> Error {
    let path = path.to_path_buf();
    match e {
        redb::DatabaseError::DatabaseAlreadyOpen => Error::Locked { path },
        redb::DatabaseError::Storage(StorageError::Io(source)) => Error::Io { path, source },
        source => Error::NotAnIndex {
            path,
            source: Some(source),
        },
    }
}

/// The bytes a redb file starts with.
const REDB_MAGIC: &[u8; 9] = b"redb\x1A\x0A\xA9\x0D\x0A";

/// Refuses a non-empty file that is not a redb database before redb reads
/// it.
fn check_magic(path: &Path) -> Result<()> {
    use std::io::Read;
    let mut head = Vec::with_capacity(9);
    match std::fs::File::open(path) {
        Ok(f) => f
            .take(9)
            .read_to_end(&mut head)
            .map_err(|source| Error::Io {
                path: path.to_path_buf(),
                source,
            })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(Error::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if head.is_empty() || head == REDB_MAGIC {
        Ok(())
    } else {
        Err(Error::NotAnIndex {
            path: path.to_path_buf(),
            source: None,
        })
    }
}

/// The memory redb may cache pages in. Its default, 1 GiB, is a bound it
/// fills: a first build of a 1.1M-entry tree grew the tracker (which
/// holds the tree in memory too) by about 27 MiB. The index is read whole
/// once at a start and written in large batches, neither of which a big
/// cache speeds up much; 1 MiB rather than 4 took 3 MiB more off that
/// tracker.
const CACHE_BYTES: usize = 1 << 20;

fn builder() -> redb::Builder {
    let mut b = redb::Builder::new();
    b.set_cache_size(CACHE_BYTES);
    b
}

impl Index {
    /// Opens the index at `path`, creating it if there is no file (or an
    /// empty one). A file of another format, or of a version this build
    /// does not know, is refused, and nothing in it is changed.
    pub fn open(path: impl AsRef<Path>) -> Result<Index> {
        let path = path.as_ref();
        if std::fs::metadata(path).map_or(true, |m| m.len() == 0) {
            Self::create(path)?;
        }
        check_magic(path)?;
        // redb asserts on some damaged headers (a truncated file) instead of
        // returning an error; a damaged index must be an error to the
        // daemon, not an abort of it.
        let db = std::panic::catch_unwind(|| builder().create(path))
            .map_err(|_| Error::NotAnIndex {
                path: path.to_path_buf(),
                source: None,
            })?
            .map_err(|e| open_error(path, e))?;
        let next = Self::check_format(&db, path)?;
        Ok(Index {
            db,
            path: path.to_path_buf(),
            next_root: Arc::new(AtomicU32::new(next)),
        })
    }

    /// Makes a new index at `path`: written whole beside it, then renamed
    /// into place, so that a process killed while it creates one leaves
    /// no file (or the empty one it found) at `path`, never a torn one.
    fn create(path: &Path) -> Result<()> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".creating");
        let temp = path.with_file_name(name);
        // What a killed creation left.
        match std::fs::remove_file(&temp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
            _ => {}
        }
        let db = builder().create(&temp).map_err(|e| open_error(&temp, e))?;
        Self::check_format(&db, &temp)?;
        drop(db);
        std::fs::rename(&temp, path).map_err(io)?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io)
    }

    /// Reads (or, in a new file, writes) the format record; returns the
    /// next root number.
    fn check_format(db: &Database, path: &Path) -> Result<u32> {
        let rtx = db.begin_read()?;
        let meta = match rtx.open_table(META) {
            Ok(meta) => Some(meta),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(Self::foreign_if_mismatch(e, path)),
        };
        if let Some(meta) = meta {
            let found = match meta.get(FORMAT_KEY)? {
                Some(g) => tables::decode_u32(g.value())?,
                None => {
                    return Err(Error::Foreign {
                        path: path.to_path_buf(),
                    });
                }
            };
            if found != FORMAT {
                return Err(Error::UnknownVersion {
                    path: path.to_path_buf(),
                    found,
                    known: FORMAT,
                });
            }
            return match meta.get(NEXT_ROOT)? {
                Some(g) => tables::decode_u32(g.value()),
                None => Ok(1),
            };
        }
        // No format record: a new file, or a database of something else.
        if rtx.list_tables()?.next().is_some() {
            return Err(Error::Foreign {
                path: path.to_path_buf(),
            });
        }
        drop(rtx);
        let tx = db.begin_write()?;
        {
            tx.open_table(META)?
                .insert(FORMAT_KEY, FORMAT.to_le_bytes().as_slice())?;
            // The tables exist from the start, so a reader never meets a
            // missing one.
            tx.open_table(ROOTS)?;
            for t in [DIRS, BUCKETS] {
                tx.open_table(t)?;
            }
        }
        tx.commit()?;
        Ok(1)
    }

    fn foreign_if_mismatch(e: redb::TableError, path: &Path) -> Error {
        match e {
            redb::TableError::TableTypeMismatch { .. } | redb::TableError::TableIsMultimap(_) => {
                Error::Foreign {
                    path: path.to_path_buf(),
                }
            }
            e => e.into(),
        }
    }

    /// A consistent view of the index as of the last commit.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let tx = self.db.begin_read()?;
        Snapshot::new(tx)
    }

    /// A new, empty batch.
    pub fn batch(&self) -> Batch {
        Batch::new(self.next_root.clone())
    }

    /// Commits a batch durably: on disk when this returns.
    pub fn commit(&self, batch: Batch) -> Result<()> {
        self.commit_with(batch, Durability::Immediate)
    }

    /// Commits a batch with the given durability. All of it or nothing is
    /// applied; on an error, nothing is.
    pub fn commit_with(&self, batch: Batch, durability: Durability) -> Result<()> {
        let mut tx = self.db.begin_write()?;
        let d = match durability {
            Durability::Immediate => redb::Durability::Immediate,
            Durability::Deferred => redb::Durability::None,
        };
        tx.set_durability(d)
            .map_err(|e| Error::Store(redb::Error::from(e)))?;
        write::apply(&tx, batch.ops)?;
        tx.commit()?;
        Ok(())
    }

    /// How big the file is and how much of it holds data.
    pub fn space(&self) -> Result<Space> {
        let file_bytes = std::fs::metadata(&self.path)
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })?
            .len();
        let tx = self.db.begin_write()?;
        let stats = tx.stats()?;
        tx.abort()?;
        let used_bytes = stats.stored_bytes() + stats.metadata_bytes();
        Ok(Space {
            file_bytes,
            used_bytes,
        })
    }

    /// Rewrites the file to hold only its data and shrinks it; returns
    /// whether anything was reclaimed.
    ///
    /// redb reuses freed pages but never gives them back to the file
    /// system, so after the index shrinks (a big root dropped or replaced
    /// by a smaller one, a build that was abandoned and dropped) the file
    /// keeps its largest size. Call this when [`Index::space`] says
    /// [`Space::worth_compacting`], at a quiet moment: after
    /// [`Build::finish`] or a `drop_root`, or at start-up once the trees
    /// are loaded. It takes time in proportion to the data (it copies
    /// pages and fsyncs), blocks every commit meanwhile, and fails with
    /// [`Error::SnapshotOpen`] while any snapshot is alive.
    pub fn compact(&mut self) -> Result<bool> {
        match self.db.compact() {
            Ok(done) => Ok(done),
            Err(redb::CompactionError::TransactionInProgress) => Err(Error::SnapshotOpen),
            Err(e) => Err(Error::Store(e.into())),
        }
    }

    /// Starts building a root from nothing (a walk), committed in chunks of
    /// `chunk` rows. Until [`Build::finish`] the new root is
    /// [`RootState::Building`](crate::RootState::Building) and a complete
    /// root of the same path, if any, stays what readers find; `finish`
    /// replaces it in the same commit.
    pub fn replace_root(
        &self,
        path: &[u8],
        id: &[u8],
        log_identity: &[u8],
        chunk: usize,
    ) -> Result<Build<'_>> {
        Build::start(self, path, id, log_identity, chunk)
    }
}
