//! The access rule: who may read and who may change.
//!
//! - Privileged peers (root, the daemon's own uid, members of
//!   `access.group`) may do everything.
//! - Anyone else may read when `access.public_read` is set, and never
//!   change anything.
//! - A request without credentials (none could be read) is "anyone else".

use super::peer::Peer;
use super::state::Access;

/// Whether `peer` may call a route, `mutation` or not, when the daemon
/// runs as `daemon_uid`.
pub(crate) fn allowed(
    peer: Option<&Peer>,
    access: &Access,
    daemon_uid: u32,
    mutation: bool,
) -> bool {
    let privileged = peer.is_some_and(|p| {
        p.uid == 0
            || p.uid == daemon_uid
            || access
                .group
                .as_ref()
                .is_some_and(|(_, gid)| p.in_group(*gid))
    });
    privileged || (!mutation && access.public_read)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(public_read: bool) -> Access {
        Access {
            group: Some(("weir".into(), 990)),
            public_read,
        }
    }

    #[test]
    fn the_rule() {
        let root = Peer::new(0, 0);
        let me = Peer::new(1234, 1234);
        let mut member = Peer::new(1000, 1000);
        member.groups.push(990);
        let nobody = Peer::new(65534, 65534);
        for public in [false, true] {
            let a = access(public);
            for mutation in [false, true] {
                assert!(allowed(Some(&root), &a, 1234, mutation));
                assert!(allowed(Some(&me), &a, 1234, mutation));
                assert!(allowed(Some(&member), &a, 1234, mutation));
                let open = public && !mutation;
                assert_eq!(allowed(Some(&nobody), &a, 1234, mutation), open);
                assert_eq!(allowed(None, &a, 1234, mutation), open);
            }
        }
        // Without a group, a would-be member is nobody.
        let a = Access::default();
        assert!(!allowed(Some(&member), &a, 1234, false));
    }
}
