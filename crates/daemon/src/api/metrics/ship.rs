//! The shipper's families (`weir_ship_*`): what it shipped, what the
//! broker holds, what is in flight and how far it lags, with the sink,
//! stream and host as labels so that one dashboard reads many daemons.

use weir_view::status::ShipStatus;

use super::text::Out;

/// The shipper's families; nothing when no shipper runs.
pub(super) fn write(o: &mut Out, s: Option<&ShipStatus>) {
    let Some(s) = s else {
        return;
    };
    let labels = [
        ("sink", s.sink.as_deref().unwrap_or("")),
        ("stream", s.stream.as_deref().unwrap_or("")),
        ("host", s.host.as_deref().unwrap_or("")),
    ];
    let zero = |v: Option<u64>| v.unwrap_or(0);
    for (name, kind, help, v) in [
        (
            "weir_ship_records_total",
            "counter",
            "Records the broker acknowledged as stored, since the daemon started.",
            s.shipped,
        ),
        (
            "weir_ship_batches_total",
            "counter",
            "Batches the broker acknowledged.",
            s.batches,
        ),
        (
            "weir_ship_acked_index",
            "gauge",
            "The last log index the broker holds for this host.",
            s.acked_index,
        ),
        (
            "weir_ship_in_flight_records",
            "gauge",
            "Records published and not yet acknowledged.",
            s.in_flight,
        ),
        (
            "weir_ship_lag_records",
            "gauge",
            "Durable records of the log the broker does not hold yet.",
            s.lag,
        ),
        (
            "weir_ship_retries_total",
            "counter",
            "Times the shipper backed off after an error and tried again.",
            s.retries,
        ),
        (
            "weir_ship_gap_records_total",
            "counter",
            "Records the log's retention dropped before they were shipped.",
            s.gap_records,
        ),
    ] {
        o.family(name, kind, help);
        o.sample(name, &labels, zero(v));
    }
    let name = "weir_ship_up";
    o.family(
        name,
        "gauge",
        "1 while the shipper is connected and shipping, else 0.",
    );
    o.sample(
        name,
        &labels,
        u8::from(s.state.as_deref() == Some("shipping")),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_labelled_and_none_without_a_shipper() {
        let mut o = Out::default();
        write(&mut o, None);
        assert!(o.0.is_empty());
        let s = ShipStatus {
            sink: Some("nats".into()),
            stream: Some("WEIR".into()),
            host: Some("db\"7".into()),
            state: Some("retrying".into()),
            shipped: Some(12),
            lag: Some(3),
            ..ShipStatus::default()
        };
        write(&mut o, Some(&s));
        let l = r#"{sink="nats",stream="WEIR",host="db\"7"}"#;
        assert!(
            o.0.contains(&format!("weir_ship_records_total{l} 12\n")),
            "{}",
            o.0
        );
        assert!(o.0.contains(&format!("weir_ship_lag_records{l} 3\n")));
        assert!(o.0.contains(&format!("weir_ship_acked_index{l} 0\n")));
        assert!(o.0.contains(&format!("weir_ship_up{l} 0\n")));
        assert_eq!(o.0.matches("# TYPE weir_ship_").count(), 8);
    }
}
