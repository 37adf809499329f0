//! `weir fs`: the directory trees the daemon watches (`GET /v1/fs`), as
//! the table or, with `--json`, the array the daemon renders with
//! weir-view's `fs_view::render`; the bytes are copied as they come.
//!
//! There is no direct form: what a tree's tracker has seen lives in the
//! daemon that watches it (a one-off walk would count no event). Without
//! a daemon it says so and exits 3, as `weir status` does; with
//! `--direct` it refuses.
//!
//! `weir fs rescan PATH` asks the daemon (`POST /v1/fs/rescan`) to compare
//! a root with the live tree; it has no direct form either, since only the
//! tracker that watches the root can log what differs, and prints the
//! daemon's bytes.
//!
//! `weir fs changes PATH --since INDEX` asks the daemon
//! (`GET /v1/fs/changes`) when one answers for this state directory, and
//! otherwise (or with `--direct`) reads the log itself, without the
//! writer's lock; either way weir-view's `fs_changes::render` makes the
//! bytes.

use std::io::Write;

use anyhow::{Context, Result, bail};
use weir_client::{ErrorCode, PathQuery};
use weir_log::Reader;
use weir_view::fs_changes;
use weir_view::lvm_view::Format;

use super::NoDaemon;
use crate::cli::{FsChangesArgs, FsListArgs, FsRescanArgs};
use crate::daemon::Route;
use crate::state_dir::StateDir;

pub(super) fn list(route: &Route, args: &FsListArgs) -> Result<()> {
    if route.direct() {
        bail!("weir fs lists the daemon's watched trees; it has no --direct form");
    }
    let Some(mut client) = route.client()? else {
        return Err(NoDaemon::new(route.tried()).into());
    };
    let target = PathQuery::new("/v1/fs").param("format", if args.json { "json" } else { "text" });
    client
        .get_text(target.as_str(), &mut crate::stdout::lock())
        .context("asking the daemon for its watched trees")?;
    Ok(())
}

pub(super) fn rescan(route: &Route, args: &FsRescanArgs) -> Result<()> {
    if route.direct() {
        bail!("weir fs rescan asks the daemon that watches the root; it has no --direct form");
    }
    let Some(mut client) = route.client()? else {
        return Err(NoDaemon::new(route.tried()).into());
    };
    let root = std::fs::canonicalize(&args.root).unwrap_or_else(|_| args.root.clone());
    let target = PathQuery::new("/v1/fs/rescan")
        .param_bytes("root", root.as_os_str().as_encoded_bytes())
        .param("format", if args.json { "json" } else { "text" });
    match client.post_text(target.as_str(), &mut crate::stdout::lock()) {
        Ok(_) => Ok(()),
        Err(weir_client::Error::Api {
            code: ErrorCode::UnknownRoot,
            message,
            ..
        }) => bail!("{message}"),
        Err(e) => Err(e).context("asking the daemon to rescan"),
    }
}

pub(super) fn changes(route: &Route, state: &StateDir, args: &FsChangesArgs) -> Result<()> {
    // The path as the tracker watched it: absolute, without symlinks (a
    // root removed since keeps the path as given).
    let root = std::fs::canonicalize(&args.root).unwrap_or_else(|_| args.root.clone());
    if let Some(mut client) = route.log_client()? {
        let target = PathQuery::new("/v1/fs/changes")
            .param_bytes("root", root.as_os_str().as_encoded_bytes())
            .param("since", args.since)
            .param("format", if args.json { "json" } else { "text" });
        return match client.get_text(target.as_str(), &mut crate::stdout::lock()) {
            Ok(_) => Ok(()),
            Err(weir_client::Error::Api {
                code: ErrorCode::UnknownRoot,
                message,
                ..
            }) => bail!("{message}"),
            Err(e) => Err(e).context("asking the daemon what changed"),
        };
    }
    let dir = state.existing_log_dir()?;
    let summary = weir_log::inspect(&weir_log::fs::StdFs, &dir)
        .with_context(|| format!("reading {}", dir.display()))?;
    let first = summary.first_index.max(1);
    let answer =
        weir_fs::since::changes_from(Reader::open_dir(&dir, first), first, &root, args.since)
            .with_context(|| format!("reading what changed under {}", root.display()))?;
    let format = if args.json {
        Format::Json
    } else {
        Format::Text
    };
    let mut out = crate::stdout::lock();
    out.write_all(fs_changes::render(&answer, format).as_bytes())?;
    out.flush()?;
    Ok(())
}
