//! Parity: what `weir vgs --json` and `weir pvs --json` say about our VG
//! and PVs against `lvm vgs` and `lvm pvs` (JSON report, sizes in bytes)
//! on the same devices. Only our VG and our devices are compared: other
//! block devices on the machine may hold other PVs.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde_json::{Map, Value};

use super::fleet::Fleet;
use super::weir_cli;

/// weir's VG field and LVM's, compared as text.
const VG_FIELDS: &[(&str, &str)] = &[
    ("uuid", "vg_uuid"),
    ("seqno", "vg_seqno"),
    ("pv_count", "pv_count"),
    ("lv_count", "lv_count"),
    ("size_bytes", "vg_size"),
    ("free_bytes", "vg_free"),
    ("extent_size_bytes", "vg_extent_size"),
    ("mda_count", "vg_mda_count"),
    ("mda_used_count", "vg_mda_used_count"),
];

/// weir's PV field and LVM's; the device path is the key.
const PV_FIELDS: &[(&str, &str)] = &[
    ("uuid", "pv_uuid"),
    ("vg_name", "vg_name"),
    ("vg_uuid", "vg_uuid"),
    ("size_bytes", "pv_size"),
    ("free_bytes", "pv_free"),
    ("dev_size_bytes", "dev_size"),
    ("pe_start_bytes", "pe_start"),
    ("pe_count", "pv_pe_count"),
    ("pe_alloc", "pv_pe_alloc_count"),
    ("mda_count", "pv_mda_count"),
    ("mda_in_use", "pv_mda_used_count"),
];

/// Differences shown at most; the count is always exact.
const SHOWN: usize = 20;

/// What the comparison found.
#[derive(Debug)]
pub(crate) struct Parity {
    /// PVs compared (ours, as LVM lists them).
    pub(crate) pvs: usize,
    /// Every difference found.
    pub(crate) diff_count: usize,
    /// The first [`SHOWN`] differences, readable.
    pub(crate) diffs: Vec<String>,
}

impl Parity {
    /// Whether weir and LVM agree on everything compared.
    pub(crate) fn ok(&self) -> bool {
        self.diff_count == 0
    }

    fn differ(&mut self, what: String) {
        self.diff_count += 1;
        if self.diffs.len() < SHOWN {
            self.diffs.push(what);
        }
    }
}

/// A JSON value as the text LVM would print: strings bare, the rest as JSON.
fn text(v: Option<&Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Adds a difference for each field of `fields` where weir and LVM differ,
/// or that either leaves out.
fn compare(
    p: &mut Parity,
    what: &str,
    fields: &[(&str, &str)],
    weir: &Map<String, Value>,
    lvm: &Map<String, Value>,
) {
    for (w, l) in fields {
        let (wv, lv) = (weir.get(*w), lvm.get(*l));
        if wv.is_none() || lv.is_none() || text(wv) != text(lv) {
            p.differ(format!(
                "{what}: {w} weir={} lvm({l})={}",
                text(wv),
                text(lv)
            ));
        }
    }
}

/// Compares weir's view of `fleet` with LVM's.
pub(crate) fn check(fleet: &Fleet, weir: &Path) -> Result<Parity> {
    let vg = fleet.vg_name();
    let devs = fleet.dev_paths();
    let vg_cols: Vec<&str> = ["vg_name"]
        .into_iter()
        .chain(VG_FIELDS.iter().map(|f| f.1))
        .collect();
    let pv_cols: Vec<&str> = ["pv_name"]
        .into_iter()
        .chain(PV_FIELDS.iter().map(|f| f.1))
        .collect();
    let env = fleet.env();
    let lvm_vgs = env.report("vgs", "vg", ["-o", &vg_cols.join(","), vg])?;
    let lvm_pvs = env.report(
        "pvs",
        "pv",
        ["-o".to_owned(), pv_cols.join(",")]
            .into_iter()
            .chain(devs.iter().cloned()),
    )?;
    let weir_vgs = weir_cli::run_json(weir, &["vgs", "--json"])?;
    let weir_pvs = weir_cli::run_json(weir, &["pvs", "--json"])?;

    let mut p = Parity {
        pvs: lvm_pvs.len(),
        diff_count: 0,
        diffs: Vec::new(),
    };
    let by = |rows: &[Map<String, Value>], key: &str| -> BTreeMap<String, Map<String, Value>> {
        rows.iter()
            .filter_map(|r| Some((r.get(key)?.as_str()?.to_owned(), r.clone())))
            .collect()
    };
    let (wv, lv) = (by(&weir_vgs, "name"), by(&lvm_vgs, "vg_name"));
    match (wv.get(vg), lv.get(vg)) {
        (Some(w), Some(l)) => {
            compare(&mut p, &format!("vg {vg}"), VG_FIELDS, w, l);
            for (f, want) in [("complete", "true"), ("missing_pvs", "0")] {
                let got = text(w.get(f));
                if got != want {
                    p.differ(format!("vg {vg}: weir says {f}={got}, expected {want}"));
                }
            }
        }
        (w, l) => p.differ(format!(
            "vg {vg}: listed by weir {}, by lvm {}",
            w.is_some(),
            l.is_some()
        )),
    }
    let (wp, lp) = (by(&weir_pvs, "device"), by(&lvm_pvs, "pv_name"));
    if lp.len() != devs.len() {
        p.differ(format!(
            "lvm pvs listed {} of our {} devices",
            lp.len(),
            devs.len()
        ));
    }
    for d in &devs {
        match (wp.get(d), lp.get(d)) {
            (Some(w), Some(l)) => compare(&mut p, &format!("pv {d}"), PV_FIELDS, w, l),
            (None, Some(_)) => p.differ(format!("pv {d}: not listed by weir")),
            (_, None) => {} // counted above
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn numbers_match_lvm_strings_and_differences_are_counted() {
        let weir = obj(json!({"uuid": "U", "seqno": 3, "pv_count": 2}));
        let lvm = obj(json!({"vg_uuid": "U", "vg_seqno": "3", "pv_count": "1"}));
        let mut p = Parity {
            pvs: 0,
            diff_count: 0,
            diffs: Vec::new(),
        };
        let fields = [
            ("uuid", "vg_uuid"),
            ("seqno", "vg_seqno"),
            ("pv_count", "pv_count"),
            ("lv_count", "lv_count"),
        ];
        compare(&mut p, "vg x", &fields, &weir, &lvm);
        assert_eq!(p.diff_count, 2, "{:?}", p.diffs);
        assert!(p.diffs[0].contains("pv_count weir=2 lvm(pv_count)=1"));
        assert!(p.diffs[1].contains("lv_count weir=(absent)"));
        assert!(!p.ok());
    }

    #[test]
    fn only_the_first_differences_are_kept() {
        let mut p = Parity {
            pvs: 0,
            diff_count: 0,
            diffs: Vec::new(),
        };
        for i in 0..SHOWN + 5 {
            p.differ(format!("d{i}"));
        }
        assert_eq!(p.diff_count, SHOWN + 5);
        assert_eq!(p.diffs.len(), SHOWN);
    }
}
