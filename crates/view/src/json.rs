//! JSON objects as weir prints them: compact, each object's keys in the
//! order of their names. A `serde_json` map keeps that order, so a typed
//! object serialized through one prints the very bytes of a map built by
//! hand, and of the same object read back as a map (`weir status --json`
//! prints the daemon's object as it came).

use serde::Serialize;
use serde_json::Value;

/// `v` as a map (or array, or scalar): keys in the order of their names.
pub(crate) fn to_sorted_value(v: &impl Serialize) -> Value {
    // Only a map with keys that are not strings can fail, and weir's
    // objects have none.
    serde_json::to_value(v).expect("an object with string keys")
}

/// `v` as compact JSON, keys in the order of their names.
pub(crate) fn to_sorted_string(v: &impl Serialize) -> String {
    to_sorted_value(v).to_string()
}
