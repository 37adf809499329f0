//! Resolving the socket's group name to a gid from `/etc/group`.
//!
//! rustix has no `getgrnam`, and calling libc's would mean FFI outside
//! weir-sys (and NSS modules in the daemon). The group weir needs is a
//! local system group (created by sysusers.d or the package), so the local
//! file is enough; a group known only to LDAP is reported as missing.
//!
//! The file is read with a size bound and parsed leniently: malformed
//! lines are skipped, never trusted.

use std::io::Read;
use std::path::Path;

/// The group database.
pub(crate) const GROUP_FILE: &str = "/etc/group";
/// A larger group file is not read (a real one is a few KiB).
const MAX_GROUP_FILE: u64 = 16 << 20;

/// The gid of group `name` in the file at `path`: `Ok(None)` when no line
/// names it.
pub(crate) fn gid_of(path: &Path, name: &str) -> std::io::Result<Option<u32>> {
    let mut text = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_GROUP_FILE)
        .read_to_end(&mut text)?;
    Ok(find_gid(&text, name))
}

/// The gid on the first well-formed `name:password:gid:members` line for
/// `name`.
pub(crate) fn find_gid(text: &[u8], name: &str) -> Option<u32> {
    text.split(|&b| b == b'\n').find_map(|line| {
        let mut fields = line.split(|&b| b == b':');
        let n = fields.next()?;
        let _password = fields.next()?;
        let gid = fields.next()?;
        if n != name.as_bytes() {
            return None;
        }
        std::str::from_utf8(gid).ok()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_named_group_only() {
        let text = b"root:x:0:\nbad line\nweirx:x:7:\nweir:x:998:alice,bob\nweir:x:5:\n";
        assert_eq!(find_gid(text, "weir"), Some(998));
        assert_eq!(find_gid(text, "root"), Some(0));
        assert_eq!(find_gid(text, "wei"), None);
        assert_eq!(find_gid(text, "nobody"), None);
        assert_eq!(find_gid(b"weir:x:notanumber:\n", "weir"), None);
        assert_eq!(find_gid(b"weir:x:99999999999:\n", "weir"), None);
        assert_eq!(find_gid(b"weir:x\n", "weir"), None);
        assert_eq!(find_gid(b"", "weir"), None);
    }

    #[test]
    fn reads_the_real_file() {
        // Every system has a root group with gid 0.
        assert_eq!(gid_of(Path::new(GROUP_FILE), "root").unwrap(), Some(0));
    }
}
