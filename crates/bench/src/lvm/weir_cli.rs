//! Running `weir vgs --json` and `weir pvs --json` (the CLI contract in
//! docs/cli.md) and finding our VG and PVs in what they print. Their failures
//! are errors with the command's own words, so that a missing subcommand or
//! a malformed line says so instead of skewing a figure.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};

use crate::loopdev::run_tool;

/// The `weir` command with `args`.
pub(crate) fn cmd(weir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(weir);
    c.args(args);
    c
}

/// The objects of the JSON array that `weir ARGS` printed.
pub(crate) fn parse_array(args: &[&str], stdout: &[u8]) -> Result<Vec<Map<String, Value>>> {
    let v: Value = serde_json::from_slice(stdout).with_context(|| {
        format!(
            "weir {}: not JSON: {:?}",
            args.join(" "),
            String::from_utf8_lossy(&stdout[..stdout.len().min(200)])
        )
    })?;
    let Value::Array(items) = v else {
        bail!("weir {}: not a JSON array", args.join(" "));
    };
    items
        .into_iter()
        .map(|i| match i {
            Value::Object(m) => Ok(m),
            other => bail!("weir {}: an item is not an object: {other}", args.join(" ")),
        })
        .collect()
}

/// Runs `weir ARGS` and returns its array.
pub(crate) fn run_json(weir: &Path, args: &[&str]) -> Result<Vec<Map<String, Value>>> {
    let out = run_tool(&mut cmd(weir, args))?;
    parse_array(args, &out.stdout)
}

/// Fails unless `weir vgs --json`'s output lists `vg` complete with `n` PVs.
pub(crate) fn check_vg(stdout: &[u8], vg: &str, n: usize) -> Result<()> {
    let args = ["vgs", "--json"];
    let vgs = parse_array(&args, stdout)?;
    let Some(o) = vgs
        .iter()
        .find(|o| o.get("name").and_then(Value::as_str) == Some(vg))
    else {
        bail!(
            "weir vgs --json does not list {vg} ({} VGs listed)",
            vgs.len()
        );
    };
    let pvs = o.get("pv_count").and_then(Value::as_u64);
    let complete = o.get("complete").and_then(Value::as_bool);
    if pvs != Some(n as u64) || complete != Some(true) {
        bail!(
            "weir vgs --json: {vg} has pv_count {pvs:?}, complete {complete:?}; expected {n}, true"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_vg_wants_our_vg_complete_with_n_pvs() {
        let ok = br#"[{"name":"a","pv_count":1,"complete":true},{"name":"vg","pv_count":3,"complete":true}]"#;
        assert!(check_vg(ok, "vg", 3).is_ok());
        assert!(check_vg(ok, "vg", 4).is_err());
        assert!(check_vg(ok, "other", 3).is_err());
        let partial = br#"[{"name":"vg","pv_count":3,"complete":false}]"#;
        assert!(check_vg(partial, "vg", 3).is_err());
        assert!(check_vg(b"{}", "vg", 3).is_err());
        assert!(check_vg(b"[1]", "vg", 3).is_err());
        assert!(check_vg(b"error: unrecognized subcommand", "vg", 3).is_err());
    }
}
