//! A sysctl set for a test's while: the host's value comes back when the
//! guard drops, whatever the test's outcome.

/// Sets a sysctl for the life of the guard.
pub(crate) struct Sysctl {
    path: &'static str,
    old: String,
}

impl Sysctl {
    pub(crate) fn set(path: &'static str, value: &str) -> Sysctl {
        let old = std::fs::read_to_string(path).expect("read the sysctl");
        std::fs::write(path, value).expect("write the sysctl");
        Sysctl { path, old }
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        let _ = std::fs::write(self.path, self.old.trim());
    }
}
