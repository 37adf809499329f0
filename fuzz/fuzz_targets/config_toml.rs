//! Fuzzes the daemon's configuration reader (`weir run --config FILE`).
//!
//! Property: reading and validating never panics, and a configuration that
//! validates prints as TOML that reads back to the same configuration.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_daemon::config::Config;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(c) = Config::from_toml(text) else {
        return;
    };
    if c.validate().is_ok()
        && let Ok(printed) = c.to_toml()
    {
        let back = Config::from_toml(&printed).expect("printed config reads back");
        assert_eq!(back.to_toml().ok(), Some(printed));
    }
});
