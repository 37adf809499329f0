//! The Debian package (`cargo deb -p weir`), installed for real with
//! `dpkg -i`: dpkg records it as installed, the maintainer scripts succeed
//! without a running systemd, the binary runs from /usr/bin, the units are
//! where systemd looks and pass `systemd-analyze verify`, postinst created
//! the `weir` group, every man page and the bash/zsh/fish completions are
//! in place; then `dpkg -r` and `dpkg -P` take it all away again.
//!
//! The host is left as found: dpkg runs in a private mount namespace with
//! overlays (on a tmpfs) over /usr, /etc, /var and /run, so all it writes
//! vanishes with the namespace; the test checks afterwards that the host's
//! groups, dpkg database and /usr/bin/weir did not change.
//!
//! The package comes from `$WEIR_TEST_DEB`, which scripts/test.sh sets
//! after building it. Needs root, dpkg, unshare and overlayfs; skipped
//! (with a message) without any of them.

#[path = "support/privileged.rs"]
#[allow(dead_code)]
mod privileged;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use privileged::{assert_ok, in_private_ns, missing};

/// The directories dpkg and the maintainer scripts write to; each gets an
/// overlay whose upper layer is on the test's tmpfs.
const OVERLAID: [&str; 4] = ["/usr", "/etc", "/var", "/run"];

/// `$1`: the .deb; `$2`: an empty directory outside the overlaid ones.
/// Prints `key: value` lines for the test to check, and dpkg's output
/// between them. Stops at the first failure before dpkg runs, so dpkg
/// never runs unless every overlay is in place.
const SCRIPT: &str = r#"
set -eu
deb=$1
scratch=$2
mount -t tmpfs weir-deb-test "$scratch"
for d in usr etc var run; do
    mkdir -p "$scratch/$d/upper" "$scratch/$d/work"
done
for d in usr etc var run; do
    mount -t overlay overlay \
        -o "lowerdir=/$d,upperdir=$scratch/$d/upper,workdir=$scratch/$d/work" "/$d"
    [ "$(findmnt -n -o FSTYPE --mountpoint "/$d")" = overlay ]
done
echo "overlays: ok"

# Start from a host without weir, whatever this one has: otherwise a
# leftover package or group would pass the checks below by itself.
if dpkg-query -W weir >/dev/null 2>&1; then dpkg -P weir >/dev/null; fi
if getent group weir >/dev/null; then groupdel weir; fi
echo "before-binary: $(test -e /usr/bin/weir && echo present || echo absent)"
echo "before-group: $(getent group weir >/dev/null && echo present || echo absent)"

# man-db's trigger would rebuild the whole man index (seconds, three
# times) in an overlay that is thrown away; the pages are checked below.
rm -f /var/lib/man-db/auto-update

echo "== dpkg -i"
status=0
dpkg -i "$deb" 2>&1 || status=$?
echo "install-exit: $status"
echo "install-status: $(dpkg-query -W -f='${Status}' weir 2>&1)"
echo "version: $(/usr/bin/weir --version 2>&1)"
echo "group: $(getent group weir | cut -d: -f1)"
for f in $(dpkg -L weir); do
    [ -f "$f" ] && echo "file: $f"
done
for u in weir.service weir.socket; do
    [ -L "/etc/systemd/system/multi-user.target.wants/$u" ] && echo "enabled: $u"
    [ -L "/etc/systemd/system/sockets.target.wants/$u" ] && echo "enabled: $u"
done
# The pages the installed binary writes are the pages the package has.
/usr/bin/weir generate man "$scratch/man"
for f in "$scratch"/man/*; do echo "page: ${f##*/}"; done
if command -v systemd-analyze >/dev/null; then
    units=$(dpkg -L weir | grep -E '/systemd/system/[^/]+\.(service|socket)$')
    verify=0
    # shellcheck disable=SC2086
    systemd-analyze verify $units 2>&1 || verify=$?
    echo "verify-exit: $verify"
fi

echo "== dpkg -r"
status=0
dpkg -r weir 2>&1 || status=$?
echo "remove-exit: $status"
echo "remove-status: $(dpkg-query -W -f='${Status}' weir 2>&1)"
echo "removed-binary: $(test -e /usr/bin/weir && echo present || echo absent)"
mkdir -p /var/lib/weir
echo "== dpkg -P"
status=0
dpkg -P weir 2>&1 || status=$?
echo "purge-exit: $status"
echo "purge-listed: $(dpkg-query -W weir >/dev/null 2>&1 && echo yes || echo no)"
echo "purged-state: $(test -e /var/lib/weir && echo present || echo absent)"
left=$(find /usr /etc -name 'weir*' -not -path '/etc/group*' -not -path '/etc/gshadow*' | wc -l)
echo "purged-files: $left"
"#;

/// What the host's dpkg and groups look like: files read whole, and
/// whether each path of the package exists.
fn host_state() -> BTreeMap<String, String> {
    let mut state = BTreeMap::new();
    for file in [
        "/etc/group",
        "/etc/gshadow",
        "/etc/passwd",
        "/var/lib/dpkg/status",
    ] {
        let text = std::fs::read(file)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_else(|e| format!("unreadable: {e}"));
        state.insert(file.to_owned(), text);
    }
    for path in [
        "/usr/bin/weir",
        "/usr/lib/systemd/system/weir.service",
        "/lib/systemd/system/weir.service",
        "/usr/share/man/man1/weir.1",
        "/var/lib/dpkg/info/weir.list",
        "/etc/systemd/system/multi-user.target.wants/weir.service",
        "/var/lib/weir",
    ] {
        let exists = Path::new(path).symlink_metadata().is_ok();
        state.insert(path.to_owned(), exists.to_string());
    }
    state
}

/// The `key: value` lines of the script's output: every value of a key.
fn report(stdout: &str) -> BTreeMap<&str, Vec<&str>> {
    let mut keys: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for line in stdout.lines() {
        if let Some((key, value)) = line.split_once(": ")
            && !key.contains(' ')
        {
            keys.entry(key).or_default().push(value);
        }
    }
    keys
}

/// Why the test cannot run here, or the package and a scratch directory
/// (kept alive by the returned guard) when it can.
fn setup() -> Result<(PathBuf, tempfile::TempDir), String> {
    let Some(deb) = std::env::var_os("WEIR_TEST_DEB") else {
        return Err(
            "WEIR_TEST_DEB is not set (scripts/test.sh builds the package and sets it)".into(),
        );
    };
    let deb = PathBuf::from(deb);
    // Set means the package was built for this run: its absence is a
    // failure, not a reason to skip.
    assert!(
        deb.is_file(),
        "WEIR_TEST_DEB={} is not a file",
        deb.display()
    );
    if let Some(why) = missing(&["unshare", "dpkg", "dpkg-query", "findmnt", "groupdel"]) {
        return Err(why);
    }
    let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !filesystems
        .lines()
        .any(|l| l.split_whitespace().last() == Some("overlay"))
    {
        return Err("overlayfs is not available (not in /proc/filesystems)".into());
    }
    // The scratch tmpfs must not be hidden by the overlays mounted after it.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).map_err(|e| e.to_string())?;
    let real = std::fs::canonicalize(dir.path()).map_err(|e| e.to_string())?;
    if OVERLAID.iter().any(|d| real.starts_with(d)) {
        return Err(format!(
            "the scratch directory {} is under {OVERLAID:?}",
            real.display()
        ));
    }
    Ok((std::fs::canonicalize(&deb).map_err(|e| e.to_string())?, dir))
}

#[test]
fn the_package_installs_and_removes_cleanly_without_touching_the_host() {
    let (deb, scratch) = match setup() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let before = host_state();
    let out = in_private_ns(SCRIPT, &[deb.as_os_str(), scratch.path().as_os_str()]);
    let after = host_state();
    assert_ok("the install script", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let all = format!(
        "{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(&stdout);
    let one = |key: &str| -> &str {
        match r.get(key).map(Vec::as_slice) {
            Some([v]) => v,
            other => panic!("{key}: {other:?}\n{all}"),
        }
    };

    // Nothing leaked out of the namespace.
    for (key, was) in &before {
        assert_eq!(after.get(key), Some(was), "the host's {key} changed\n{all}");
    }

    assert_eq!(one("overlays"), "ok", "{all}");
    assert_eq!(one("before-binary"), "absent", "{all}");
    assert_eq!(one("before-group"), "absent", "{all}");

    assert_eq!(one("install-exit"), "0", "{all}");
    assert_eq!(one("install-status"), "install ok installed", "{all}");
    let version = one("version");
    assert!(
        version.starts_with(&format!("weir {}", env!("CARGO_PKG_VERSION"))),
        "{all}"
    );
    assert_eq!(
        one("group"),
        "weir",
        "postinst did not create the group\n{all}"
    );

    let files: Vec<&str> = r.get("file").cloned().unwrap_or_default();
    let has = |path: &str| files.contains(&path);
    assert!(has("/usr/bin/weir"), "{all}");
    assert!(has("/usr/lib/sysusers.d/weir.conf"), "{all}");
    assert!(has("/usr/share/doc/weir/README.md"), "{all}");
    // Wherever cargo-deb puts the units, it is a directory systemd reads.
    for unit in ["weir.service", "weir.socket"] {
        assert!(
            has(&format!("/usr/lib/systemd/system/{unit}"))
                || has(&format!("/lib/systemd/system/{unit}")),
            "{unit} is not installed\n{all}"
        );
        assert!(
            r.get("enabled").is_some_and(|e| e.contains(&unit)),
            "{unit} is not enabled\n{all}"
        );
    }
    for completion in [
        "/usr/share/bash-completion/completions/weir",
        "/usr/share/zsh/vendor-completions/_weir",
        "/usr/share/fish/vendor_completions.d/weir.fish",
    ] {
        assert!(has(completion), "{completion} is not installed\n{all}");
    }
    // Every page the binary writes, weir.1 and one per command, and only
    // those: a stale packaging/generated/ would add or lack one.
    let pages: Vec<&str> = r.get("page").cloned().unwrap_or_default();
    for page in ["weir.1", "weir-run.1", "weir-log-tail.1"] {
        assert!(pages.contains(&page), "weir generate man wrote {pages:?}");
    }
    let mut installed: Vec<String> = files
        .iter()
        .filter_map(|f| f.strip_prefix("/usr/share/man/man1/"))
        .map(|f| f.trim_end_matches(".gz").to_owned())
        .collect();
    installed.sort();
    let mut expected: Vec<String> = pages.iter().map(|p| p.to_string()).collect();
    expected.sort();
    assert_eq!(installed, expected, "{all}");
    if r.contains_key("verify-exit") {
        assert_eq!(one("verify-exit"), "0", "systemd-analyze verify\n{all}");
    } else {
        eprintln!("systemd-analyze is not installed: the units are not verified");
    }

    assert_eq!(one("remove-exit"), "0", "{all}");
    assert_eq!(one("remove-status"), "deinstall ok config-files", "{all}");
    assert_eq!(one("removed-binary"), "absent", "{all}");
    assert_eq!(one("purge-exit"), "0", "{all}");
    assert_eq!(one("purge-listed"), "no", "{all}");
    assert_eq!(one("purged-state"), "absent", "postrm purge\n{all}");
    assert_eq!(one("purged-files"), "0", "{all}");
}
