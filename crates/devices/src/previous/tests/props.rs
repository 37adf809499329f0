//! Properties over random systems: the records of a comparison, replayed
//! as a crash tail, give exactly the state a checkpoint would have held
//! (nothing missed), and comparing that with the system finds nothing
//! more (nothing logged twice).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use proptest::prelude::*;

use super::{MemLog, World, loop_dev, sda, sda_part, uuid};
use crate::devnum::DevNum;
use crate::previous::diff::diff;
use crate::previous::tail::catch_up;
use crate::previous::{Previous, State};
use crate::record;
use crate::sysfs::BlockDevice;

/// One loop device slot, absent or in some state.
fn loop_slot(n: u32) -> impl Strategy<Value = Option<(BlockDevice, Option<u32>)>> {
    let present = (
        any::<bool>(),
        0..3u64,
        proptest::option::of(0..5u32),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(move |(attached, size, pv, model, ro, renamed)| {
            let mut d = loop_dev(n, attached);
            if attached {
                d.size_bytes = (size + 1) << 20;
            }
            d.model = model.then(|| "virtual".to_owned());
            d.read_only = ro;
            if n == 3 && attached {
                d.backing_file = Some(PathBuf::from(OsString::from_vec(b"/t/\xff3".to_vec())));
            }
            if renamed && n == 5 {
                d.name = "other5".into();
            }
            (d, pv)
        });
    prop_oneof![1 => Just(None), 4 => present.prop_map(Some)]
}

fn world() -> impl Strategy<Value = World> {
    let loops: Vec<_> = (0..6).map(loop_slot).collect();
    (
        loops,
        proptest::option::of(0..5u32),
        any::<bool>(),
        any::<bool>(),
        (
            7..10u64,
            any::<bool>(),
            proptest::collection::vec(proptest::option::of(1..4u64), 3),
        ),
    )
        .prop_map(|(loops, sda1_pv, sda1, sda2, (seqno, renamed, lvs))| {
            let p = |n| uuid(b'P', n);
            let mut w = World::default()
                .with(sda(), None)
                .vg("vgx", 1, &[p(0), p(1), p(2)])
                .vg("vgy", 2, &[p(3)]);
            // vgx's metadata: its LVs, seqno and name vary.
            for (i, extents) in lvs.into_iter().enumerate() {
                if let Some(e) = extents {
                    let n = u32::try_from(i).unwrap();
                    w = w.lv("vgx", &format!("lv{n}"), n, e);
                }
            }
            w.vgs[0].seqno = seqno;
            if renamed {
                w.vgs[0].name = "vgz".into();
            }
            if sda1 {
                w = w.with(sda_part(1), sda1_pv.map(p));
            }
            if sda2 {
                let mut big = sda_part(2);
                big.size_bytes *= 4;
                w = w.with(big, None);
            }
            for (d, pv) in loops.into_iter().flatten() {
                w = w.with(d, pv.map(p));
            }
            w
        })
}

fn state_of(w: &World) -> State {
    State::of(Previous::of(&w.current(), 0))
}

fn complete(s: &State) -> Vec<[u8; 32]> {
    s.vgs
        .values()
        .filter(|v| v.complete)
        .map(|v| v.uuid)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn replayed_records_give_the_checkpoint_and_leave_nothing_to_log(
        a in world(),
        b in world(),
    ) {
        prop_assert_eq!(diff(&state_of(&a), &a.current()), []);
        let found = diff(&state_of(&a), &b.current());
        let m = MemLog::new();
        for r in &found {
            let parent = r.parent.map(DevNum::to_be_bytes);
            let _ = record::append(&m.log, &r.change, |_| parent).unwrap();
        }
        let mut state = state_of(&a);
        let report = catch_up(&m.log, &mut state, 0);
        prop_assert_eq!(report.bad, 0);
        prop_assert_eq!(report.applied, found.len() as u64);
        let expected = state_of(&b);
        prop_assert_eq!(&state.devices, &expected.devices);
        prop_assert_eq!(complete(&state), complete(&expected));
        prop_assert_eq!(diff(&state, &b.current()), []);
    }
}
