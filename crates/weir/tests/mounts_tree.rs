//! `weir mounts` against findmnt itself, byte for byte: the tree (findmnt's
//! default form, `weir mounts --tree`), its ASCII form, and the df columns
//! (SIZE, AVAIL, USED, USE%, human and `--bytes`), in a private mount
//! namespace holding a few nested tmpfs of known sizes, a bind mount of a
//! subtree of one and, where
//! `mkfs.ext4` and `losetup` are here, a loop-mounted ext4.
//!
//! Both commands run in the same namespace, one right after the other.
//! The df figures of filesystems this test did not make (the root, on a
//! machine where other builds write) may change between the two; such a
//! comparison is taken only when two findmnt runs around weir's agree, and
//! retried until they do. Needs root, unshare, mount and findmnt; prints
//! `skipped: ...` without them.

#[allow(dead_code)]
#[path = "support/privileged.rs"]
mod privileged;

use std::path::Path;

use privileged::{assert_ok, canonical_tempdir, in_private_ns, skip};

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// Nested tmpfs under `$BASE` (sizes chosen for findmnt's rounding: 1.5M,
/// and 2047K, which rounds up to 2M), an optional ext4 on a loop device,
/// then each case: `$OUT/N.findmnt` and `$OUT/N.weir`. A case with df
/// columns is retried until two findmnt runs around weir's agree
/// (`$OUT/N.quiet` says whether they did).
const SCRIPT: &str = r#"
set -e
W=$1 BASE=$2 OUT=$3 IMG=$4
mount -t tmpfs -o size=1m top "$BASE"
mkdir "$BASE/a" "$BASE/b" "$BASE/e"
mount -t tmpfs -o size=1500k mid "$BASE/a"
mkdir "$BASE/a/c"
mount -t tmpfs -o size=2047k deep "$BASE/a/c"
mount -t tmpfs -o size=100m side "$BASE/b"
dd if=/dev/zero of="$BASE/b/fill" bs=1k count=1234 2>/dev/null
# A bind mount of a subtree: findmnt's SOURCE is `deep[/sub]`.
mkdir "$BASE/a/c/sub" "$BASE/f"
mount --bind "$BASE/a/c/sub" "$BASE/f"
if [ -n "$IMG" ]; then
    DEV=$(losetup -f --show "$IMG")
    trap 'umount "$BASE/e" 2>/dev/null; losetup -d "$DEV"' EXIT
    mount "$DEV" "$BASE/e"
fi
n=0
case_() { # WEIR_ARGS FINDMNT_ARGS
    n=$((n + 1))
    for try in $(seq 1 30); do
        findmnt $2 > "$OUT/$n.findmnt"
        "$W" --direct mounts $1 > "$OUT/$n.weir"
        findmnt $2 > "$OUT/$n.again"
        if cmp -s "$OUT/$n.findmnt" "$OUT/$n.again"; then
            echo yes > "$OUT/$n.quiet"
            return
        fi
    done
    echo no > "$OUT/$n.quiet"
}
case_ "--tree" ""
case_ "--tree -o SOURCE,TARGET,FSTYPE" "-o SOURCE,TARGET,FSTYPE"
case_ "--tree --ascii -o TARGET,PROPAGATION,FSTYPE" "--ascii -o TARGET,PROPAGATION,FSTYPE"
case_ "--tree --backend mountinfo -o ID,TARGET,PARENT,MAJ:MIN" "-o ID,TARGET,PARENT,MAJ:MIN"
case_ "--tree -o TARGET,SIZE,AVAIL,USED,USE%" "-o TARGET,SIZE,AVAIL,USED,USE%"
case_ "--tree -b -o TARGET,SIZE,AVAIL,USED,USE%,FSTYPE" "-b -o TARGET,SIZE,AVAIL,USED,USE%,FSTYPE"
case_ "--tree -a -b -o SIZE,USE%,TARGET" "-a -b -o SIZE,USE%,TARGET"
# The ext4's UUID and label, from its superblock as libblkid reads it.
case_ "--tree -o TARGET,SOURCE,UUID,LABEL" "-o TARGET,SOURCE,UUID,LABEL"
# The list, for the df columns (findmnt -l lists in mountinfo's order,
# weir by id: the same order in a namespace this young).
case_ "-l -o TARGET,SIZE,USED,USE%" "-l -o TARGET,SIZE,USED,USE%"
case_ "--tree -o TARGET,SOURCE,FSROOT" "-o TARGET,SOURCE,FSROOT"
echo $n > "$OUT/cases"
"#;

/// A 16 MiB ext4 image with a label and a known UUID, or `None` where
/// the tools are missing.
fn ext4_image(dir: &Path) -> Option<String> {
    if privileged::missing(&["mkfs.ext4", "losetup"]).is_some() {
        eprintln!("no mkfs.ext4 or losetup: the ext4 case is left out");
        return None;
    }
    let img = dir.join("ext4.img");
    std::fs::File::create(&img)
        .and_then(|f| f.set_len(16 << 20))
        .expect("create the image");
    let out = std::process::Command::new("mkfs.ext4")
        .args([
            "-q",
            "-F",
            "-L",
            "weir label",
            "-U",
            "5eed0e55-1111-4222-8333-444455556666",
        ])
        .arg(&img)
        .output()
        .expect("run mkfs.ext4");
    assert_ok("mkfs.ext4", &out);
    Some(img.to_str().expect("a UTF-8 path").to_owned())
}

#[test]
fn tree_and_df_columns_match_findmnt() {
    if skip(&["unshare", "mount", "findmnt"]) {
        return;
    }
    let (_keep, dir) = canonical_tempdir();
    let base = dir.join("m");
    let out = dir.join("out");
    std::fs::create_dir(&base).unwrap();
    std::fs::create_dir(&out).unwrap();
    let img = ext4_image(&dir).unwrap_or_default();
    let run = in_private_ns(
        SCRIPT,
        &[WEIR, base.to_str().unwrap(), out.to_str().unwrap(), &img],
    );
    assert_ok("the findmnt comparison script", &run);

    let read = |name: &str| std::fs::read_to_string(out.join(name)).expect(name);
    let cases: usize = read("cases").trim().parse().unwrap();
    let mut failures = Vec::new();
    for n in 1..=cases {
        let (findmnt, weir) = (read(&format!("{n}.findmnt")), read(&format!("{n}.weir")));
        if read(&format!("{n}.quiet")).trim() != "yes" {
            eprintln!("case {n}: the filesystems never stood still; compared anyway");
        }
        if findmnt != weir {
            failures.push(format!("case {n}:\nfindmnt:\n{findmnt}weir:\n{weir}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // What was compared is what this test made: the nested tmpfs drawn
    // as a tree, their fixed sizes, the ASCII branches.
    let base = base.to_str().unwrap();
    let tree = read("1.weir");
    for want in [
        format!("─{base} "),
        // Siblings come in the order of their 32-bit ids, which the
        // kernel reuses: /b may come before /a, but /a/c is an only child.
        format!("─{base}/a "),
        format!("└─{base}/a/c "),
    ] {
        assert!(tree.contains(&want), "no {want:?} in\n{tree}");
    }
    let df = read("5.weir");
    for (point, size) in [("", "1M"), ("/a", "1.5M"), ("/a/c", "2M"), ("/b", "100M")] {
        let path = format!("{base}{point}");
        // TARGET (after its branch), then SIZE, AVAIL, USED, USE%.
        let cells = df
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|c| c.len() >= 5 && c[c.len() - 5].ends_with(&format!("─{path}")))
            .unwrap_or_else(|| panic!("no row for {path} in\n{df}"));
        assert_eq!(cells[cells.len() - 4], size, "{cells:?}");
    }
    assert!(
        read("3.weir").contains(&format!("`-{base}/a/c ")),
        "{}",
        read("3.weir")
    );
    if !img.is_empty() {
        assert!(read("6.weir").contains("ext4"), "{}", read("6.weir"));
        // The ext4's row names its UUID and label.
        let ids = read("8.weir");
        let row = ids
            .lines()
            .find(|l| l.contains(&format!("─{base}/e ")))
            .unwrap_or_else(|| panic!("no row for the ext4 in\n{ids}"));
        assert!(
            row.ends_with("5eed0e55-1111-4222-8333-444455556666 weir label"),
            "{row:?}"
        );
    }
}
