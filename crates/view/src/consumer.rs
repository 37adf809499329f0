//! A consumer as a JSON object: `weir log consumer list --json`,
//! `weir log stats --json` and the API's consumer endpoints write it, and
//! the CLI's text forms (`consumer list`, `log stats`, `weir status`) read
//! it back into the same struct, whichever side produced it.

use serde::{Deserialize, Serialize};
use weir_log::ConsumerInfo;

use crate::json::to_sorted_value;

/// A consumer's JSON form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Consumer {
    /// Its numeric id, unique over the log's life.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// Its type mask, as `TypeMask` prints it.
    pub mask: String,
    /// Every index up to this one is cleared.
    pub cleared: u64,
    /// Records committed after `cleared`.
    pub lag: u64,
    /// Seconds since it registered or last cleared.
    pub idle_seconds: f64,
    /// When it registered, ns since the epoch.
    pub registered: u64,
}

impl Consumer {
    /// Whole seconds idle, rounded down.
    pub fn idle_secs(&self) -> u64 {
        // A float-to-int `as` saturates, and NaN gives 0: no panic on any
        // value the JSON holds.
        self.idle_seconds.floor() as u64
    }
}

impl From<&ConsumerInfo> for Consumer {
    fn from(c: &ConsumerInfo) -> Consumer {
        Consumer {
            id: c.id,
            name: c.name.clone(),
            mask: c.mask.to_string(),
            cleared: c.cleared,
            lag: c.lag,
            idle_seconds: c.idle.as_secs_f64(),
            registered: c.registered_ns,
        }
    }
}

/// A consumer as a JSON value: a map, so its keys print in the order of
/// their names, as every JSON object of the CLI and the API does.
pub fn consumer_json(c: &ConsumerInfo) -> serde_json::Value {
    to_sorted_value(&Consumer::from(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use weir_log::TypeMask;

    #[test]
    fn the_json_form_reads_back() {
        let info = ConsumerInfo {
            id: 4,
            name: "indexer".to_owned(),
            mask: TypeMask::parse("all,-MARK").unwrap(),
            cleared: 17,
            lag: 3,
            idle: Duration::from_millis(2999),
            registered_ns: 5,
        };
        let v = consumer_json(&info);
        assert_eq!(
            v.to_string(),
            format!(
                r#"{{"cleared":17,"id":4,"idle_seconds":2.999,"lag":3,"mask":"{}","name":"indexer","registered":5}}"#,
                info.mask
            )
        );
        let row = Consumer::deserialize(&v).unwrap();
        assert_eq!((row.id, row.cleared, row.lag), (4, 17, 3));
        assert_eq!(row.name, "indexer");
        assert_eq!(row.mask, info.mask.to_string());
        assert_eq!(row.idle_secs(), info.idle.as_secs());
    }
}
