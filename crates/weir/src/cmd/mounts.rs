//! `weir mounts`: the mount table as a findmnt-like table or a JSON array:
//! the daemon's, from memory, when one answers; otherwise one reading with
//! the backend `--backend` selects (an explicit `--backend` always reads
//! directly).
//!
//! The table is findmnt's tree on a terminal and the list into a pipe
//! (`--tree` and `-l` choose); the df columns are read with statvfs(2)
//! right before rendering, by whichever process renders.
//!
//! A one-shot listing keeps stderr quiet: which backend answered, and why
//! `auto` fell back to mountinfo, is said only with `--verbose`.

use std::io::{IsTerminal, Write};

use anyhow::{Context, Result};
use weir_client::{Client, PathQuery};
use weir_mounts::{Backend, BackendChoice};

use crate::cli::MountsListArgs;
use crate::daemon::{Route, copy_listing};
use weir_devices::sysfs::Detail;
use weir_devices::{Filter, Inventory, Sysfs};
use weir_view::chain::error_chain;
use weir_view::mounts_table::{Facts, Style};
use weir_view::status::Status;
use weir_view::{mounts_json, mounts_table};

pub(super) fn list(route: &Route, args: &MountsListArgs) -> Result<()> {
    let style = args.style(std::io::stdout().is_terminal());
    if args.backend.is_none()
        && let Some(mut client) = route.client()?
        && via_daemon(&mut client, args, style)?
    {
        return Ok(());
    }
    let backend = args.backend.unwrap_or(BackendChoice::Auto);
    let snap = weir_mounts::snapshot(backend).with_context(|| match backend {
        BackendChoice::Fanotify => "reading the mount table with the fanotify backend",
        _ => "reading the mount table",
    })?;
    if args.verbose {
        eprintln!(
            "weir: backend: {}",
            describe(snap.backend, snap.fallback.as_ref())
        );
    }
    let text = if args.json {
        mounts_json::mounts_json(&snap.mounts)
    } else {
        let cols = &args.columns.columns;
        // A device that cannot be read shows empty cells, as in findmnt.
        let facts = Facts::gather(cols, &snap.mounts, || {
            Inventory::scan_with(Sysfs::default(), Filter::accept_all(), Detail::Probe)
                .map(|(inv, _)| Facts::filesystems(&snap.mounts, &inv))
                .unwrap_or_default()
        });
        mounts_table::render(cols, &snap.mounts, &facts, style)
    };
    let mut out = crate::stdout::lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The listing from the daemon; `Ok(false)` when its mount tracker is off.
fn via_daemon(client: &mut Client, args: &MountsListArgs, style: Style) -> Result<bool> {
    if args.verbose {
        say_daemon_backend(client)?;
    }
    let target = PathQuery::new("/v1/mounts");
    let target = if args.json {
        target.param("format", "json")
    } else {
        target
            .param("format", "text")
            .param("columns", &args.columns.text)
            // Only what differs from the API's defaults, so that a listing
            // without them still reaches a daemon that predates them.
            .param_opt("tree", style.tree.then_some(true))
            .param_opt("ascii", style.ascii.then_some(true))
            .param_opt("bytes", style.bytes.then_some(true))
    };
    copy_listing(client, &target, "the mount table")
}

/// `--verbose` through the daemon: its tracker's backend, and why it fell
/// back, on stderr.
fn say_daemon_backend(client: &mut Client) -> Result<()> {
    let status: Status = client
        .get_json("/v1/status")
        .context("asking the daemon for its mount backend")?;
    let socket = client.socket().display();
    let Some(m) = status.mounts else {
        eprintln!("weir: backend: none (the daemon on {socket} tracks no mounts)");
        return Ok(());
    };
    let backend = m.backend.as_deref().unwrap_or("?");
    match m.fallback_reason {
        Some(why) => eprintln!(
            "weir: backend: {backend} (the daemon on {socket}; fanotify unavailable: {why})"
        ),
        None => eprintln!("weir: backend: {backend} (the daemon on {socket})"),
    }
    Ok(())
}

/// The backend in words: what it reads, or why `auto` fell back to it.
fn describe(backend: Backend, fallback: Option<&weir_mounts::Error>) -> String {
    match (backend, fallback) {
        (Backend::Fanotify, _) => "fanotify (listmount + statmount)".to_owned(),
        (Backend::Mountinfo, None) => "mountinfo (/proc/self/mountinfo)".to_owned(),
        (Backend::Mountinfo, Some(e)) => format!("mountinfo{}", fallback_note(Some(e))),
    }
}

/// ` (fanotify unavailable: <causes>)` when `auto` fell back, else nothing.
pub(super) fn fallback_note(fallback: Option<&weir_mounts::Error>) -> String {
    fallback.map_or_else(String::new, |e| {
        format!(" (fanotify unavailable: {})", error_chain(e))
    })
}
