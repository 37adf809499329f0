//! The fleet read from JetStream: the records' stream through an
//! ordered consumer, and each host's last record and progress message.

use std::collections::BTreeMap;

use async_nats::jetstream::consumer::{DeliverPolicy, pull};
use async_nats::jetstream::stream::LastRawMessageErrorKind;
use futures_util::{StreamExt as _, TryStreamExt as _};

use super::{FleetHost, HostGlob, TailOptions};
use crate::error::{Error, Result};
use crate::nats::{Nats, STATUS_PREFIX};
use crate::wire::{self, Progress, SUBJECT_PREFIX, Shipped};

/// Hands `emit` every record of the stream that the options select, in
/// stream order; returns how many. Without `follow`, it stops at the
/// stream's last message as of the start.
pub async fn tail(
    nats: &Nats,
    o: &TailOptions,
    mut emit: impl FnMut(&Shipped) -> std::io::Result<()>,
) -> Result<u64> {
    let filter = match o.hosts.as_ref().and_then(HostGlob::literal) {
        Some(h) => wire::host_subjects(&wire::host_token(h)),
        None => format!("{SUBJECT_PREFIX}.>"),
    };
    let consumer = nats
        .stream()
        .create_consumer(pull::OrderedConfig {
            filter_subject: filter,
            deliver_policy: DeliverPolicy::All,
            ..Default::default()
        })
        .await
        .map_err(|e| Error::JetStream {
            op: "create ordered consumer",
            source: e.into(),
        })?;
    if !o.follow && consumer.cached_info().num_pending == 0 {
        return Ok(0);
    }
    let mut messages = consumer.messages().await.map_err(|e| Error::JetStream {
        op: "read messages",
        source: e.into(),
    })?;
    let mut n = 0;
    while let Some(m) = messages.next().await {
        let m = m.map_err(|e| Error::JetStream {
            op: "read messages",
            source: e.into(),
        })?;
        let (seq, pending) = m
            .info()
            .map(|i| (i.stream_sequence, i.pending))
            .map_err(|e| Error::JetStream {
                op: "message metadata",
                source: e,
            })?;
        let s = wire::decode(&m.payload).map_err(|source| Error::BadMessage {
            sequence: seq,
            subject: m.subject.to_string(),
            source,
        })?;
        if o.wants(&s) {
            emit(&s).map_err(Error::Output)?;
            n += 1;
        }
        if !o.follow && pending == 0 {
            break;
        }
    }
    Ok(n)
}

/// Every host in the stream, by name.
pub async fn status(nats: &Nats) -> Result<Vec<FleetHost>> {
    let js_err = |op| move |source| Error::JetStream { op, source };
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut subjects = nats
        .stream()
        .info_with_subjects(format!("{SUBJECT_PREFIX}.>"))
        .await
        .map_err(|e| js_err("stream subjects")(e.into()))?;
    while let Some((subject, count)) = subjects
        .try_next()
        .await
        .map_err(|e| js_err("stream subjects")(e.into()))?
    {
        if let Some(token) = subject.split('.').nth(1) {
            *counts.entry(token.to_owned()).or_default() += count as u64;
        }
    }
    let mut out = Vec::with_capacity(counts.len());
    for (token, records) in counts {
        let Some(last) = nats.last(&token).await? else {
            continue;
        };
        let progress = progress(nats, &token).await?;
        let incarnation = last.incarnation.to_string();
        let same = progress.as_ref().filter(|p| p.incarnation == incarnation);
        out.push(FleetHost {
            host: last.host,
            incarnation,
            records: Some(records),
            last_index: last.record.index,
            last_time: Some(last.record.time_ns),
            log_last_index: same.map(|p| p.last_index),
            lag: same.map(|p| p.last_index.saturating_sub(last.record.index)),
            status_time: progress.map(|p| p.time),
        });
    }
    out.sort_by(|a, b| a.host.cmp(&b.host));
    Ok(out)
}

async fn progress(nats: &Nats, token: &str) -> Result<Option<Progress>> {
    match nats
        .status_stream()
        .get_last_raw_message_by_subject(&format!("{STATUS_PREFIX}.{token}"))
        .await
    {
        // A progress message that does not parse only leaves the lag
        // unknown.
        Ok(m) => Ok(serde_json::from_slice(&m.payload).ok()),
        Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
        Err(e) => Err(Error::JetStream {
            op: "progress message",
            source: e.into(),
        }),
    }
}
