//! Tests of the test support itself: on each scratch filesystem (made in a
//! private mount namespace), the multi-process workload does every kind of
//! change and leaves hostile names, and the independent tree walk sees a
//! tree whose link counts add up. Also, without privilege: the names are
//! valid and of every class, and one process's workload is reproducible.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::names::{self, NameClass};
use support::rng::Rng;
use support::scratch::{FsKind, Scratch, scratch};
use support::tree::{self, Kind, Tree, file_name, show};
use support::workload::{self, OpKind};

support::workload_child_test!();

/// A seed under which 3 × 300 operations include every kind (asserted).
const SEED: u64 = 0x5EED_F00D;
const PROCS: usize = 3;
const OPS: usize = 300;

#[test]
fn ext4() {
    support::run_in_private_ns("inner_ext4");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_ext4() {
    exercise(FsKind::Ext4);
}

#[test]
fn xfs() {
    support::run_in_private_ns("inner_xfs");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_xfs() {
    exercise(FsKind::Xfs);
}

#[test]
fn btrfs() {
    support::run_in_private_ns("inner_btrfs");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_btrfs() {
    exercise(FsKind::Btrfs);
}

#[test]
fn tmpfs() {
    support::run_in_private_ns("inner_tmpfs");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_tmpfs() {
    exercise(FsKind::Tmpfs);
}

/// Makes a scratch of `kind`, runs the workload on it, checks the report
/// and the walked tree, tears it down and checks the loop device is gone;
/// prints how long each step took.
fn exercise(kind: FsKind) {
    let Some(base) = support::private_base() else {
        return;
    };
    let t = Instant::now();
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let made = t.elapsed();
    check_scratch(&s);

    let t = Instant::now();
    let report = workload::run(s.root(), SEED, PROCS, OPS);
    let ran = t.elapsed();
    assert!(
        report.missing().is_empty(),
        "{kind}: kinds that never succeeded: {:?} ({report})",
        report.missing()
    );
    assert!(
        report.count(OpKind::Exchange) > 0,
        "{kind}: no RENAME_EXCHANGE"
    );

    let t = Instant::now();
    let tree = tree::snapshot(s.root());
    let walked = t.elapsed();
    check_tree(kind, &tree);
    let classes = name_classes(&tree);

    let device = s.device().map(Path::to_path_buf);
    let t = Instant::now();
    drop(s);
    let torn = t.elapsed();
    if let Some(dev) = device {
        assert!(detached(&dev), "{kind}: {} still attached", dev.display());
    }
    eprintln!(
        "timing {kind}: mkfs+mount {}, workload {} ({PROCS}x{OPS} ops: {report}), \
         snapshot {} ({} entries; names by class {classes:?}), teardown {}",
        ms(made),
        ms(ran),
        ms(walked),
        tree.len(),
        ms(torn)
    );
}

/// The scratch is what its kind promises: an empty root on the right kind
/// of mount, a device exactly for block filesystems, and for btrfs a root
/// on the subvolume (another st_dev than the top level).
fn check_scratch(s: &Scratch) {
    let kind = s.kind();
    assert!(
        tree::snapshot(s.root()).is_empty(),
        "{kind}: root not empty"
    );
    assert_eq!(s.root().parent(), Some(s.mount_point()));
    assert_eq!(s.device().is_some(), kind.on_block_device(), "{kind}");
    let fstype = rustix::fs::statfs(s.root()).expect("statfs").f_type;
    let magic: i64 = match kind {
        FsKind::Ext4 => 0xEF53,
        FsKind::Xfs => 0x5846_5342,
        FsKind::Btrfs => 0x9123_683E,
        FsKind::Tmpfs => 0x0102_1994,
    };
    assert_eq!(fstype as i64, magic, "{kind}: f_type {fstype:x}");
    let dev = |p: &Path| {
        let st = rustix::fs::stat(p).expect("stat");
        st.st_dev
    };
    match (kind, s.top_mount()) {
        (FsKind::Btrfs, Some(top)) => {
            assert_ne!(dev(top), dev(s.root()), "btrfs root not on the subvolume");
            assert_eq!(
                dev(&top.join("sv/w")),
                dev(s.root()),
                "btrfs: top/sv/w is the root"
            );
        }
        (FsKind::Btrfs, None) => panic!("btrfs without a top mount"),
        (_, top) => assert!(top.is_none(), "{kind}: a top mount"),
    }
}

/// Every process's directory and `shared` are there; every node is on
/// one device; a non-directory's link count is the number of its paths; a
/// directory's link count is 2 + its subdirectories (btrfs: always 1); and
/// the hostile names the tests rely on are present.
fn check_tree(kind: FsKind, tree: &Tree) {
    for d in (0..PROCS)
        .map(|i| format!("p{i}").into_bytes())
        .chain([b"shared".to_vec()])
    {
        assert_eq!(
            tree.get(&d).map(|n| n.kind),
            Some(Kind::Dir),
            "{kind}: {} missing",
            show(&d)
        );
    }
    let devs: BTreeSet<u64> = tree.values().map(|n| n.dev).collect();
    assert_eq!(devs.len(), 1, "{kind}: nodes on several devices: {devs:?}");
    assert!(
        !tree
            .keys()
            .any(|p| file_name(p).starts_with(names::COOKIE_PREFIX)),
        "{kind}: a cookie name"
    );

    let problems = tree::hard_link_problems(tree);
    assert!(problems.is_empty(), "{kind}: {}", problems.join("\n"));
    let linked = tree
        .values()
        .filter(|n| n.kind != Kind::Dir && n.nlink >= 2)
        .count();
    assert!(linked > 0, "{kind}: no file with several links");

    let mut subdirs: BTreeMap<&[u8], u64> = BTreeMap::new();
    for (p, n) in tree {
        if n.kind == Kind::Dir {
            subdirs.entry(p.as_slice()).or_default();
            if let Some(i) = p.iter().rposition(|&b| b == b'/') {
                *subdirs.entry(&p[..i]).or_default() += 1;
            }
        }
    }
    for (d, n) in &subdirs {
        let want = if kind == FsKind::Btrfs { 1 } else { 2 + n };
        assert_eq!(tree[*d].nlink, want, "{kind}: nlink of {}", show(d));
    }

    let classes = name_classes(tree);
    for c in [NameClass::NonUtf8, NameClass::Newline, NameClass::Max] {
        assert!(
            classes.get(&c).copied().unwrap_or(0) > 0,
            "{kind}: no {c:?} name left in the tree: {classes:?}"
        );
    }
    assert!(
        tree.keys().all(|p| names::valid(file_name(p))),
        "{kind}: an invalid name"
    );
}

fn name_classes(tree: &Tree) -> BTreeMap<NameClass, usize> {
    let mut m = BTreeMap::new();
    for p in tree.keys() {
        *m.entry(names::classify(file_name(p))).or_default() += 1;
    }
    m
}

/// Whether `dev` no longer has a backing file (give the kernel a moment:
/// a detach is deferred while something still holds the device).
fn detached(dev: &Path) -> bool {
    let name = dev.file_name().expect("a device name").to_string_lossy();
    let backing = PathBuf::from(format!("/sys/block/{name}/loop/backing_file"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while backing.exists() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn ms(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

#[test]
fn generated_names_are_valid_and_of_their_class() {
    let mut rng = Rng::new(7);
    let mut seen = BTreeSet::new();
    for i in 0..20_000 {
        let class = NameClass::ALL[i % NameClass::ALL.len()];
        let n = names::generate_class(&mut rng, class, "f");
        assert!(names::valid(&n), "{}", show(&n));
        assert_eq!(names::classify(&n), class, "{}", show(&n));
        if class == NameClass::Max {
            assert_eq!(n.len(), names::NAME_MAX);
        }
        seen.insert(names::classify(&names::generate(&mut rng, "d")));
    }
    assert_eq!(
        seen.len(),
        NameClass::ALL.len(),
        "generate() missed a class"
    );
}

/// One process's workload needs no privilege, and the same seed on the
/// same (empty) start makes the same tree.
#[test]
fn single_process_workload_is_reproducible() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a).expect("mkdir a");
    std::fs::create_dir(&b).expect("mkdir b");
    let ra = workload::run_in_process(&a, SEED, 600);
    let rb = workload::run_in_process(&b, SEED, 600);
    assert_eq!(ra, rb);
    let shape = |t: &Tree| -> BTreeMap<Vec<u8>, (Kind, u64)> {
        t.iter()
            .map(|(p, n)| (p.clone(), (n.kind, n.nlink)))
            .collect()
    };
    let (ta, tb) = (tree::snapshot(&a), tree::snapshot(&b));
    assert_eq!(shape(&ta), shape(&tb));
    assert!(ta.len() > 20, "a tree of {} entries", ta.len());
    let problems = tree::hard_link_problems(&ta);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // A different seed makes a different tree.
    let c = dir.path().join("c");
    std::fs::create_dir(&c).expect("mkdir c");
    workload::run_in_process(&c, SEED + 1, 600);
    assert_ne!(shape(&tree::snapshot(&c)), shape(&ta));
}
