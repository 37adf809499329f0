//! Property test of VG assembly against a brute-force model that
//! recomputes everything from the list of devices after every step.
//!
//! Two VGs (uuids 100 and 200) whose metadata versions list random subsets
//! of PVs 1–3 and 4–5, PV 6 never listed; random adds (with or without a
//! metadata copy, of any version), re-adds and removes on six devices, so
//! duplicates, late metadata and seqno races all happen.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::model::PvMeta;

fn uuid(n: u32) -> Uuid {
    Uuid::parse(format!("{n:032}").as_bytes()).unwrap()
}

fn meta(vg: u32, seqno: u64, mask: u8) -> Arc<VgMeta> {
    let universe: &[u32] = if vg == 100 { &[1, 2, 3] } else { &[4, 5] };
    let pvs = universe
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(i, &p)| PvMeta {
            key: format!("pv{i}"),
            id: uuid(p),
            device_hint: String::new(),
            status: vec![],
            flags: vec![],
            dev_size: 0,
            pe_start: 2048,
            pe_count: 10 + u64::from(p),
            pe_alloc: u64::from(p),
        })
        .collect();
    Arc::new(VgMeta {
        name: format!("vg{vg}"),
        id: uuid(vg),
        seqno,
        status: vec![],
        extent_size: 8,
        metadata_copies: 0,
        pvs,
        lvs: vec![],
    })
}

#[derive(Clone, Debug)]
enum Op {
    Add(u8, PvSeen),
    Remove(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let meta = prop_oneof![
        2 => Just(None),
        3 => (1u64..=4, 0u8..8).prop_map(|(s, m)| Some(meta(100, s, m))),
        1 => (1u64..=2, 0u8..4).prop_map(|(s, m)| Some(meta(200, s, m))),
    ];
    let add = (0u8..6, 1u32..=6, meta, 0u32..=2, 0u32..=2).prop_map(|(d, p, vg, mdas, used)| {
        Op::Add(
            d,
            PvSeen {
                uuid: uuid(p),
                device_size: 1000 * u64::from(p),
                pe_start: 7,
                mda_count: mdas,
                mda_in_use: used.min(mdas),
                vg,
            },
        )
    });
    prop_oneof![3 => add, 1 => (0u8..6).prop_map(Op::Remove)]
}

/// The true state, rebuilt from scratch whenever asked.
#[derive(Default)]
struct Model {
    /// Devices in the order they were first seen.
    devices: Vec<(u8, PvSeen)>,
    /// The metadata in use for each tracked VG.
    vgs: HashMap<Uuid, Arc<VgMeta>>,
}

impl Model {
    fn devs_of(&self, pv: &Uuid) -> Vec<u8> {
        self.devices
            .iter()
            .filter(|(_, s)| s.uuid == *pv)
            .map(|(d, _)| *d)
            .collect()
    }

    fn complete(&self) -> Vec<Uuid> {
        let mut out: Vec<Uuid> = self
            .vgs
            .values()
            .filter(|m| !m.pvs.is_empty() && m.pvs.iter().all(|p| !self.devs_of(&p.id).is_empty()))
            .map(|m| m.id)
            .collect();
        out.sort();
        out
    }

    fn forget(&mut self) {
        let devices = &self.devices;
        self.vgs.retain(|id, m| {
            let carried = devices
                .iter()
                .any(|(_, s)| s.vg.as_ref().is_some_and(|v| v.id == *id));
            let present = m
                .pvs
                .iter()
                .any(|p| devices.iter().any(|(_, s)| s.uuid == p.id));
            carried || present
        });
    }

    fn remove(&mut self, dev: u8) {
        self.devices.retain(|(d, _)| *d != dev);
        self.forget();
    }

    fn add(&mut self, dev: u8, pv: PvSeen) {
        let slot = self.devices.iter().position(|(d, _)| *d == dev);
        let mut rewritten = None;
        match slot {
            Some(i) if self.devices[i].1.uuid == pv.uuid => {
                let old = self.devices[i].1.vg.as_ref().map(|m| m.id);
                if old != pv.vg.as_ref().map(|m| m.id) {
                    rewritten = old;
                }
                self.devices[i].1 = pv.clone();
            }
            Some(_) => {
                self.remove(dev);
                self.devices.push((dev, pv.clone()));
            }
            None => self.devices.push((dev, pv.clone())),
        }
        if let Some(m) = &pv.vg {
            let newer = self.vgs.get(&m.id).is_none_or(|old| m.seqno > old.seqno);
            if newer {
                self.vgs.insert(m.id, m.clone());
            }
        }
        // The last carrier rewritten without it, still present: removed.
        if let Some(id) = rewritten {
            let carried = self
                .devices
                .iter()
                .any(|(_, s)| s.vg.as_ref().is_some_and(|v| v.id == id));
            if !carried {
                self.vgs.remove(&id);
            }
        }
        self.forget();
    }

    /// The VG each device's PV is reported in: the first listing it.
    fn membership(&self) -> HashMap<Uuid, Option<Uuid>> {
        let mut ids: Vec<&Arc<VgMeta>> = self.vgs.values().collect();
        ids.sort_by_key(|m| m.id);
        self.devices
            .iter()
            .map(|(_, s)| {
                (
                    s.uuid,
                    ids.iter().find(|m| m.pv(&s.uuid).is_some()).map(|m| m.id),
                )
            })
            .collect()
    }
}

fn count(events: &[Event<u8>], f: impl Fn(&Event<u8>) -> bool) -> usize {
    events.iter().filter(|e| f(e)).count()
}

/// Transitions between two sets of complete VGs: (became, stopped).
fn transitions(before: &[Uuid], after: &[Uuid]) -> (usize, usize) {
    let became = after.iter().filter(|v| !before.contains(v)).count();
    let stopped = before.iter().filter(|v| !after.contains(v)).count();
    (became, stopped)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn assembly_agrees_with_brute_force(ops in prop::collection::vec(op(), 0..40)) {
        let mut a: Assembly<u8> = Assembly::new();
        let mut model = Model::default();
        for op in ops {
            let (mut became, mut stopped) = (0, 0);
            let seqnos = |m: &Model| -> HashMap<Uuid, u64> { m.vgs.iter().map(|(id, v)| (*id, v.seqno)).collect() };
            let mut vgs_before = seqnos(&model);
            let member_before = model.membership();
            let complete_before = model.complete();
            let mut step = |model: &mut Model, f: &dyn Fn(&mut Model)| {
                let before = model.complete();
                f(model);
                let (b, s) = transitions(&before, &model.complete());
                became += b;
                stopped += s;
            };
            // (PvFound, PvLost) this op must give.
            let slot = |d: &u8| model.devices.iter().find(|(x, _)| x == d).map(|(_, s)| s.uuid);
            let want_pv_events = match &op {
                Op::Add(d, pv) => match slot(d) {
                    None => (1, 0),
                    Some(u) if u == pv.uuid => (0, 0),
                    Some(_) => (1, 1),
                },
                Op::Remove(d) => (0, usize::from(slot(d).is_some())),
            };
            let events = match &op {
                Op::Add(d, pv) => {
                    // A relabel is a removal then an addition, in the model
                    // as in the events.
                    let relabel = model.devices.iter().any(|(x, s)| x == d && s.uuid != pv.uuid);
                    if relabel {
                        step(&mut model, &|m| m.remove(*d));
                        // A VG forgotten by the removal is new again after.
                        vgs_before = seqnos(&model);
                    }
                    step(&mut model, &|m| m.add(*d, pv.clone()));
                    a.add(*d, pv.clone())
                }
                Op::Remove(d) => {
                    step(&mut model, &|m| m.remove(*d));
                    a.remove(d)
                }
            };
            let found = count(&events, |e| matches!(e, Event::PvFound { .. }));
            let lost = count(&events, |e| matches!(e, Event::PvLost { .. }));
            prop_assert_eq!((found, lost), want_pv_events, "{:?}", events);
            prop_assert_eq!(count(&events, |e| matches!(e, Event::VgComplete { .. })), became, "{:?}", events);
            // A complete VG removed (vgremove) stops being complete without
            // being incomplete.
            let removed = count(&events, |e| matches!(e, Event::VgRemove { vg } if complete_before.contains(&vg.uuid)));
            prop_assert_eq!(count(&events, |e| matches!(e, Event::VgIncomplete { .. })) + removed, stopped, "{:?}", events);
            // A VG known before and after with a higher seqno changed once.
            let changed = model
                .vgs
                .iter()
                .filter(|(id, m)| vgs_before.get(id).is_some_and(|s| m.seqno > *s))
                .count();
            prop_assert_eq!(count(&events, |e| matches!(e, Event::VgChange { .. })), changed, "{:?}", events);
            // Every PvChange is a PV present before and after whose VG moved.
            let member_after = model.membership();
            for e in &events {
                if let Event::PvChange { uuid, vg, old_vg, .. } = e {
                    prop_assert!(member_before.contains_key(uuid), "{:?}", events);
                    prop_assert_ne!(vg.as_ref().map(|v| v.uuid), old_vg.as_ref().map(|v| v.uuid));
                    prop_assert_eq!(member_after.get(uuid).copied().flatten(), vg.as_ref().map(|v| v.uuid), "{:?}", events);
                }
            }
        }
        check_reports(&a, &model)?;
    }
}

fn check_reports(a: &Assembly<u8>, model: &Model) -> Result<(), TestCaseError> {
    let complete = model.complete();
    let mut want: Vec<&Arc<VgMeta>> = model.vgs.values().collect();
    want.sort_by_key(|m| m.name.clone());
    let got = a.vgs();
    prop_assert_eq!(got.len(), want.len());
    for (r, m) in got.iter().zip(want) {
        let active = |p: &PvMeta| {
            let first = model.devs_of(&p.id).first().copied()?;
            model
                .devices
                .iter()
                .find(|(d, _)| *d == first)
                .map(|(_, s)| s)
        };
        let missing: Vec<Uuid> = m
            .pvs
            .iter()
            .filter(|p| active(p).is_none())
            .map(|p| p.id)
            .collect();
        let mdas: u64 = m
            .pvs
            .iter()
            .filter_map(active)
            .map(|s| u64::from(s.mda_count))
            .sum();
        let used: u64 = m
            .pvs
            .iter()
            .filter_map(active)
            .map(|s| u64::from(s.mda_in_use))
            .sum();
        let dups: usize = m
            .pvs
            .iter()
            .map(|p| model.devs_of(&p.id).len().saturating_sub(1))
            .sum();
        prop_assert_eq!((&r.name, r.uuid, r.seqno), (&m.name, m.id, m.seqno));
        prop_assert_eq!(r.pv_count, m.pvs.len());
        prop_assert_eq!(r.complete, complete.contains(&m.id));
        prop_assert_eq!(&r.missing, &missing);
        prop_assert_eq!(
            (r.mda_count, r.mda_used_count, r.duplicates),
            (mdas, used, dups)
        );
    }
    let pvs = a.pvs();
    let mut devs: Vec<u8> = model.devices.iter().map(|(d, _)| *d).collect();
    devs.sort();
    prop_assert_eq!(pvs.iter().map(|p| p.device).collect::<Vec<_>>(), devs);
    for p in &pvs {
        let seen = &model
            .devices
            .iter()
            .find(|(d, _)| *d == p.device)
            .unwrap()
            .1;
        prop_assert_eq!(p.uuid, seen.uuid);
        prop_assert_eq!(p.duplicate, model.devs_of(&seen.uuid)[0] != p.device);
        let vg = model.vgs.values().find(|m| m.pv(&seen.uuid).is_some());
        prop_assert_eq!(p.vg_uuid, vg.map(|m| m.id));
        match vg.and_then(|m| m.pv(&seen.uuid).map(|pm| (m, pm))) {
            Some((m, pm)) => {
                prop_assert_eq!(p.size_bytes, pm.pe_count * m.extent_bytes());
                prop_assert_eq!(p.free_bytes, (pm.pe_count - pm.pe_alloc) * m.extent_bytes());
                prop_assert_eq!(p.pe_start, pm.pe_start * 512);
            }
            None => {
                prop_assert_eq!(
                    (p.size_bytes, p.free_bytes),
                    (seen.device_size, seen.device_size)
                );
                prop_assert_eq!((p.pe_start, p.pe_count), (seen.pe_start, 0));
            }
        }
    }
    Ok(())
}
