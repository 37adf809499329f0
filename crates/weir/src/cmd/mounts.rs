//! `weir mounts`: one reading of the mount table, as a findmnt-like table
//! or a JSON array, with the backend `--backend` selects.
//!
//! A one-shot listing keeps stderr quiet: which backend answered, and why
//! `auto` fell back to mountinfo, is said only with `--verbose`.

use std::io::Write;

use anyhow::{Context, Result};
use weir_mounts::{Backend, BackendChoice};

use crate::cli::MountsListArgs;
use weir_view::chain::error_chain;
use weir_view::{mounts_json, mounts_table};

pub(super) fn list(args: &MountsListArgs) -> Result<()> {
    let snap = weir_mounts::snapshot(args.backend).with_context(|| match args.backend {
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
        mounts_table::render(&args.columns, &snap.mounts)
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
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
