//! A consumer as a JSON object: `weir log consumer list --json`,
//! `weir log stats --json` and the API's consumer endpoints.

use weir_log::ConsumerInfo;

/// A consumer as a JSON value.
pub fn consumer_json(c: &ConsumerInfo) -> serde_json::Value {
    serde_json::json!({
        "id": c.id,
        "name": c.name,
        "mask": c.mask.to_string(),
        "cleared": c.cleared,
        "lag": c.lag,
        "idle_seconds": c.idle.as_secs_f64(),
        "registered": c.registered_ns,
    })
}
