//! The fleet read from Kafka: the records' topic from its start, every
//! partition, and the compacted progress topic for where hosts stand.
//! Both are read with `read_committed`, so an aborted transaction's
//! records never show.

use std::collections::{BTreeMap, BTreeSet};

use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use super::{FleetHost, TailOptions};
use crate::error::{Error, Result};
use crate::kafka::{Kafka, kafka_err};
use crate::wire::{self, Progress, Shipped};

/// The group id readers give the client; they assign partitions and
/// commit nothing, so the group never exists on the brokers.
const READER_GROUP: &str = "weir-fleet-reader";

/// A consumer of every partition of `topic` from its start.
fn reader(k: &Kafka, topic: &str, partitions: i32) -> Result<StreamConsumer> {
    let c: StreamConsumer = k
        .options()
        .reader(READER_GROUP)
        .create()
        .map_err(Error::KafkaConfig)?;
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .map_err(kafka_err("assign"))?;
    }
    c.assign(&tpl).map_err(kafka_err("assign"))?;
    Ok(c)
}

/// Hands `emit` every record of the topic that the options select, each
/// host's in its order; returns how many. Without `follow`, it stops once
/// every partition is read to its end.
pub async fn tail(
    k: &Kafka,
    o: &TailOptions,
    mut emit: impl FnMut(&Shipped) -> std::io::Result<()>,
) -> Result<u64> {
    let topic = k.options().topic.clone();
    let c = reader(k, &topic, k.partitions())?;
    let token = o
        .hosts
        .as_ref()
        .and_then(|g| g.literal())
        .map(wire::host_token);
    let mut ended = BTreeSet::new();
    let mut n = 0;
    loop {
        let m = match c.recv().await {
            Ok(m) => m,
            Err(KafkaError::PartitionEOF(p)) => {
                ended.insert(p);
                if !o.follow && ended.len() == usize::try_from(k.partitions()).unwrap_or(0) {
                    return Ok(n);
                }
                continue;
            }
            Err(e) => return Err(kafka_err("read records")(e)),
        };
        ended.remove(&m.partition());
        // One host's records are told by their key before any decoding.
        if token
            .as_ref()
            .is_some_and(|t| m.key() != Some(t.as_bytes()))
        {
            continue;
        }
        let s =
            wire::decode(m.payload().unwrap_or_default()).map_err(|source| Error::BadRecord {
                topic: topic.clone(),
                partition: m.partition(),
                offset: m.offset(),
                source,
            })?;
        if o.wants(&s) {
            emit(&s).map_err(Error::Output)?;
            n += 1;
        }
    }
}

/// Every host with a progress message, by name. A host's last index is
/// the one its last committed transaction gave.
pub async fn status(k: &Kafka) -> Result<Vec<FleetHost>> {
    let topic = k.options().progress_topic();
    let partitions = k.progress_partitions();
    let c = reader(k, &topic, partitions)?;
    let mut last: BTreeMap<Vec<u8>, Progress> = BTreeMap::new();
    let mut ended = BTreeSet::new();
    while ended.len() < usize::try_from(partitions).unwrap_or(0) {
        match c.recv().await {
            Ok(m) => {
                // A message that does not parse (not weir's) is no host.
                let Ok(p) = serde_json::from_slice::<Progress>(m.payload().unwrap_or_default())
                else {
                    continue;
                };
                let key = m.key().unwrap_or_default().to_vec();
                // A key moved to another partition (partitions were
                // added) has its latest message there.
                if last.get(&key).is_none_or(|old| old.time <= p.time) {
                    last.insert(key, p);
                }
            }
            Err(KafkaError::PartitionEOF(p)) => {
                ended.insert(p);
            }
            Err(e) => return Err(kafka_err("read progress")(e)),
        }
    }
    let mut out: Vec<FleetHost> = last
        .into_values()
        .map(|p| FleetHost {
            records: None,
            last_index: p.acked_index,
            last_time: None,
            log_last_index: Some(p.last_index),
            lag: Some(p.last_index.saturating_sub(p.acked_index)),
            status_time: Some(p.time),
            host: p.host,
            incarnation: p.incarnation,
        })
        .collect();
    out.sort_by(|a, b| a.host.cmp(&b.host));
    Ok(out)
}
