//! `weir fs`: the directory trees the daemon watches (`GET /v1/fs`), as
//! the table or, with `--json`, the array the daemon renders with
//! weir-view's `fs_view::render`; the bytes are copied as they come.
//!
//! There is no direct form: what a tree's tracker has seen lives in the
//! daemon that watches it (a one-off walk would count no event). Without
//! a daemon it says so and exits 3, as `weir status` does; with
//! `--direct` it refuses.

use anyhow::{Context, Result, bail};
use weir_client::PathQuery;

use super::NoDaemon;
use crate::cli::FsListArgs;
use crate::daemon::Route;

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
