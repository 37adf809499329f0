//! Whether the daemon shows an LVM update yet: the one listing the
//! `lvcreate` phase polls, and how it tells a created or removed LV there.
//!
//! `/v1/lvm/lvs` lists each LV by name: an `lvcreate` is seen when its LV
//! is listed, an `lvremove` when it is not. A daemon without that route
//! shows the same update in `/v1/lvm/vgs`: the VG's `seqno` reaches the
//! command's and its `lv_count` is what the command left. The phase polls
//! the first of [`PREFERRED`] that the daemon serves, and says which.

use serde_json::{Map, Value};

/// A listing of the daemon's API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Listing {
    Lvs,
    Vgs,
}

/// In order of preference: the LV itself where it is listed.
pub(crate) const PREFERRED: [Listing; 2] = [Listing::Lvs, Listing::Vgs];

/// What the daemon must show after one LVM command.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Want<'a> {
    pub(crate) vg: &'a str,
    pub(crate) lv: &'a str,
    /// Created (listed) or removed (not).
    pub(crate) present: bool,
    /// The VG's LV count after the command.
    pub(crate) lv_count: u64,
    /// The VG's seqno after the command, at least.
    pub(crate) seqno: u64,
}

impl Listing {
    /// The API target to GET.
    pub(crate) fn target(self) -> &'static str {
        match self {
            Listing::Lvs => "/v1/lvm/lvs?format=json",
            Listing::Vgs => "/v1/lvm/vgs?format=json",
        }
    }

    /// Whether `rows`, this listing's JSON array, shows `w`.
    pub(crate) fn shows(self, rows: &[Map<String, Value>], w: &Want<'_>) -> bool {
        let s =
            |r: &Map<String, Value>, k: &str| r.get(k).and_then(Value::as_str).map(str::to_owned);
        let u = |r: &Map<String, Value>, k: &str| r.get(k).and_then(Value::as_u64);
        match self {
            Listing::Lvs => {
                let listed = rows.iter().any(|r| {
                    s(r, "vg_name").as_deref() == Some(w.vg)
                        && s(r, "name").as_deref() == Some(w.lv)
                });
                listed == w.present
            }
            Listing::Vgs => rows.iter().any(|r| {
                s(r, "name").as_deref() == Some(w.vg)
                    && u(r, "lv_count") == Some(w.lv_count)
                    && u(r, "seqno").is_some_and(|q| q >= w.seqno)
            }),
        }
    }
}

/// The VG's `seqno` and `lv_count` in a `/v1/lvm/vgs` JSON array.
pub(crate) fn vg_state(rows: &[Map<String, Value>], vg: &str) -> Option<(u64, u64)> {
    let r = rows
        .iter()
        .find(|r| r.get("name").and_then(Value::as_str) == Some(vg))?;
    Some((
        r.get("seqno").and_then(Value::as_u64)?,
        r.get("lv_count").and_then(Value::as_u64)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(json: &str) -> Vec<Map<String, Value>> {
        serde_json::from_str(json).unwrap()
    }

    fn want(present: bool, lv_count: u64, seqno: u64) -> Want<'static> {
        Want {
            vg: "vg1",
            lv: "wb3",
            present,
            lv_count,
            seqno,
        }
    }

    #[test]
    fn lvs_wants_the_lv_listed_in_our_vg_or_not_at_all() {
        let listed = rows(
            r#"[{"name":"lv0","vg_name":"vg1"},{"name":"wb3","vg_name":"vg1"},{"name":"wb4","vg_name":"vg2"}]"#,
        );
        assert!(Listing::Lvs.shows(&listed, &want(true, 2, 9)));
        assert!(!Listing::Lvs.shows(&listed, &want(false, 1, 10)));
        let elsewhere = rows(r#"[{"name":"lv0","vg_name":"vg1"},{"name":"wb3","vg_name":"vg2"}]"#);
        assert!(!Listing::Lvs.shows(&elsewhere, &want(true, 2, 9)));
        assert!(Listing::Lvs.shows(&elsewhere, &want(false, 1, 10)));
    }

    #[test]
    fn vgs_wants_the_count_at_the_commands_seqno_or_later() {
        let v = rows(
            r#"[{"name":"vg1","seqno":9,"lv_count":2},{"name":"vg2","seqno":30,"lv_count":1}]"#,
        );
        assert!(Listing::Vgs.shows(&v, &want(true, 2, 9)));
        assert!(Listing::Vgs.shows(&v, &want(true, 2, 8)));
        // The old metadata: the count may match, the seqno does not.
        assert!(!Listing::Vgs.shows(&v, &want(true, 2, 10)));
        assert!(!Listing::Vgs.shows(&v, &want(false, 1, 9)));
        assert_eq!(vg_state(&v, "vg2"), Some((30, 1)));
        assert_eq!(vg_state(&v, "vg3"), None);
    }
}
