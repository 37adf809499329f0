//! The machine's host name: what a host ships under unless told
//! otherwise. Read from the kernel's UTS name, as `hostname` prints it.

use crate::error::{Error, Result};
use crate::wire;

const HOSTNAME: &str = "/proc/sys/kernel/hostname";

/// The machine's host name, checked as a shipped host name.
pub fn machine_host() -> Result<String> {
    let name = std::fs::read_to_string(HOSTNAME).map_err(|source| Error::HostName { source })?;
    let name = name.strip_suffix('\n').unwrap_or(&name).to_owned();
    wire::check_host(&name)?;
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_the_kernels_name() {
        let uts = rustix::system::uname();
        let kernel = uts.nodename().to_str().unwrap();
        assert_eq!(machine_host().unwrap(), kernel);
    }
}
