//! The Kafka sink: one topic for the fleet, keyed by host, a batch
//! committed per transaction together with the host's position.
//!
//! Each host ships with a transactional producer of its own
//! (`transactional.id` = `weir-ship.<host>`). A batch is one
//! transaction: its records, all to the host's partition, and, through
//! `send_offsets_to_transaction`, an offset of the consumer group
//! `weir-ship.<host>` whose metadata names the batch's last record
//! (`weir1 <incarnation> <index>`, [`wire::commit_position`]). The broker
//! commits both or neither. At every (re)start the producer's
//! `init_transactions` fences any older producer of the host and
//! finishes its open transaction, and the group's committed offset then
//! says exactly where shipping stands: one lookup, whatever the topic
//! holds. Readers use `isolation.level=read_committed`, which hides the
//! records of aborted transactions.
//!
//! The offset itself is the Kafka offset after the batch's last record,
//! so Kafka's own tools show each host's shipper as a consumer group at
//! its place in the topic.
//!
//! Beside the records, a compacted topic `<topic>-progress` keeps each
//! host's last progress message (how far its log goes, how far Kafka has
//! it), for `weir fleet status`. Each batch's transaction carries one, so
//! it is exact as of the last commit; an idle host's heartbeat is a
//! transaction of its own.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerGroupMetadata};
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::future_producer::Delivery;
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};
use weir_log::Incarnation;

use crate::error::{Error, Result};
use crate::nats::{ID_HEADER, Outgoing};
use crate::wire;

/// The header that names a record's type (`MOUNT`, `CREAT`, …), so that
/// a reader can pick types without parsing the JSON.
pub const TYPE_HEADER: &str = "Weir-Type";

/// The records a transaction holds at most, by default.
pub const BATCH: usize = 10_000;

/// What is added to the records' topic name to name the progress topic.
pub const PROGRESS_SUFFIX: &str = "-progress";

/// Whether `name` can name the records' topic: Kafka's rule (`[A-Za-z0-9._-]`,
/// not `.` or `..`), short enough that the progress topic's name is one
/// too. Says what is wrong otherwise.
pub fn check_topic_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() + PROGRESS_SUFFIX.len() > 249 {
        return Err("a topic name has 1 to 240 characters");
    }
    if name == "." || name == ".." {
        return Err("a topic name cannot be . or ..");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    {
        return Err("a topic name has only ASCII letters, digits, . _ and -");
    }
    Ok(())
}

/// The client properties weir sets itself, with librdkafka's aliases of
/// them: exactly-once rests on these (a transaction per batch, idempotent
/// and acknowledged by every replica, read back committed) and so do the
/// brokers and timeouts weir's options name.
const OWNED_PROPERTIES: &[&str] = &[
    "bootstrap.servers",
    "metadata.broker.list",
    "client.id",
    "socket.timeout.ms",
    "group.id",
    "enable.auto.commit",
    "auto.commit.enable",
    "enable.auto.offset.store",
    "isolation.level",
    "enable.partition.eof",
    "transactional.id",
    "enable.idempotence",
    "acks",
    "request.required.acks",
    "linger.ms",
    "queue.buffering.max.ms",
    "partitioner",
    "message.timeout.ms",
    "delivery.timeout.ms",
    "transaction.timeout.ms",
];

/// Whether a librdkafka property may be set by the user
/// ([`KafkaOptions::properties`]): any but those weir sets itself, which
/// would be overridden; its value is the client's to check.
pub fn check_property(key: &str) -> Result<(), &'static str> {
    if key.is_empty() {
        return Err("a property needs a name");
    }
    if OWNED_PROPERTIES.contains(&key) {
        return Err("weir sets this property itself: exactly-once rests on it");
    }
    Ok(())
}

/// How to reach the brokers and which topic to use.
#[derive(Debug, Clone)]
pub struct KafkaOptions {
    /// Bootstrap brokers, comma-separated (`host:9092,...`).
    pub brokers: String,
    /// The records' topic, created if missing.
    pub topic: String,
    /// Partitions of topics this shipper creates. A host's records all go
    /// to one partition (its key's), which keeps their order.
    pub partitions: i32,
    /// Replicas of topics this shipper creates.
    pub replicas: i32,
    /// How long a request or a transaction's step waits for the brokers.
    pub timeout: Duration,
    /// librdkafka properties set before weir's own (security, TLS, SASL,
    /// compression). Those exactness rests on (`transactional.id`,
    /// `enable.idempotence`, `acks`, `isolation.level`, ...) are weir's:
    /// [`check_property`] refuses them.
    pub properties: Vec<(String, String)>,
}

impl KafkaOptions {
    /// The defaults for brokers at `brokers`.
    pub fn new(brokers: impl Into<String>) -> KafkaOptions {
        KafkaOptions {
            brokers: brokers.into(),
            topic: "weir".into(),
            partitions: 1,
            replicas: 1,
            timeout: Duration::from_secs(10),
            properties: Vec::new(),
        }
    }

    /// The progress topic's name, beside the records' one.
    pub fn progress_topic(&self) -> String {
        format!("{}{PROGRESS_SUFFIX}", self.topic)
    }

    fn client(&self) -> ClientConfig {
        let mut c = ClientConfig::new();
        for (k, v) in &self.properties {
            c.set(k, v);
        }
        let ms = self.timeout.as_millis().to_string();
        c.set("bootstrap.servers", &self.brokers)
            .set("socket.timeout.ms", &ms)
            .set("client.id", "weir-ship");
        c
    }

    /// A consumer that reads committed records only and commits nothing.
    pub(crate) fn reader(&self, group: &str) -> ClientConfig {
        let mut c = self.client();
        c.set("group.id", group)
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("isolation.level", "read_committed")
            .set("enable.partition.eof", "true");
        c
    }
}

/// The consumer group and transactional id of a host's shipper.
pub fn group(host_token: &str) -> String {
    format!("weir-ship.{host_token}")
}

/// Maps a client error to the shipper's: a fenced producer (another
/// shipper took this host's transactional id) is not retried.
pub(crate) fn kafka_err(op: &'static str) -> impl FnOnce(KafkaError) -> Error {
    move |source| match source.rdkafka_error_code() {
        Some(RDKafkaErrorCode::Fenced | RDKafkaErrorCode::ProducerFenced) => {
            Error::Fenced { source }
        }
        _ => Error::Kafka { op, source },
    }
}

/// Runs a blocking client call (a transaction's step, a metadata or
/// offset request) off the async threads.
async fn blocking<T: Send + 'static>(
    op: &'static str,
    f: impl FnOnce() -> Result<T, KafkaError> + Send + 'static,
) -> Result<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(kafka_err(op)),
        Err(_) => Err(Error::Kafka {
            op,
            source: KafkaError::Canceled,
        }),
    }
}

/// The brokers, with both topics found or made.
#[derive(Debug, Clone)]
pub struct Kafka {
    o: KafkaOptions,
    partitions: i32,
    progress_partitions: i32,
}

impl Kafka {
    /// Connects, finds (or creates) both topics and checks them. Returns
    /// the warnings a user should see about their durability.
    pub async fn connect(o: &KafkaOptions) -> Result<(Kafka, Vec<String>)> {
        let admin: AdminClient<DefaultClientContext> =
            o.client().create().map_err(Error::KafkaConfig)?;
        let admin = Arc::new(admin);
        let mut warnings = Vec::new();
        let progress = o.progress_topic();
        let records_topic =
            NewTopic::new(&o.topic, o.partitions, TopicReplication::Fixed(o.replicas));
        let progress_topic =
            NewTopic::new(&progress, o.partitions, TopicReplication::Fixed(o.replicas))
                .set("cleanup.policy", "compact");
        let opts = AdminOptions::new()
            .operation_timeout(Some(o.timeout))
            .request_timeout(Some(o.timeout));
        let created = admin
            .create_topics([&records_topic, &progress_topic], &opts)
            .await
            .map_err(kafka_err("create topics"))?;
        for r in created {
            match r {
                Ok(name) => warnings.push(format!(
                    "topic {name} did not exist; created it with {} partition(s) and {} replica(s)",
                    o.partitions, o.replicas
                )),
                Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((_, code)) => {
                    return Err(kafka_err("create topics")(KafkaError::AdminOp(code)));
                }
            }
        }
        let described = admin
            .describe_configs(
                [
                    &ResourceSpecifier::Topic(&o.topic),
                    &ResourceSpecifier::Topic(&progress),
                ],
                &opts,
            )
            .await
            .map_err(kafka_err("describe topics"))?;
        let mut policies = Vec::new();
        for r in described {
            let r = r.map_err(|code| kafka_err("describe topics")(KafkaError::AdminOp(code)))?;
            let get = |k: &str| r.get(k).and_then(|e| e.value.clone()).unwrap_or_default();
            policies.push((get("cleanup.policy"), get("min.insync.replicas")));
        }
        let [(records_policy, min_isr), (progress_policy, _)] = policies.as_slice() else {
            return Err(kafka_err("describe topics")(KafkaError::AdminOp(
                RDKafkaErrorCode::UnknownTopicOrPartition,
            )));
        };
        if records_policy.contains("compact") {
            return Err(Error::TopicUnfit {
                topic: o.topic.clone(),
                reason: "it is compacted, which keeps one record per host",
            });
        }
        if !progress_policy.contains("compact") {
            warnings.push(format!(
                "topic {progress} is not compacted: retention will drop the progress of hosts \
                 that stay quiet, and weir fleet status will not list them"
            ));
        }
        let (partitions, replicas) = topic_shape(&admin, &o.topic, o.timeout).await?;
        let (progress_partitions, _) = topic_shape(&admin, &progress, o.timeout).await?;
        if replicas < 3 || min_isr.parse::<u32>().unwrap_or(1) < 2 {
            warnings.push(format!(
                "topic {} has {replicas} replica(s) and min.insync.replicas {min_isr}: an \
                 acknowledgement can mean one broker has the record, and its loss loses what it \
                 held (3 replicas with min.insync.replicas 2 survive one)",
                o.topic
            ));
        }
        Ok((
            Kafka {
                o: o.clone(),
                partitions,
                progress_partitions,
            },
            warnings,
        ))
    }

    /// The options it was connected with.
    pub fn options(&self) -> &KafkaOptions {
        &self.o
    }

    /// The partitions of the records' topic.
    pub fn partitions(&self) -> i32 {
        self.partitions
    }

    /// The partitions of the progress topic.
    pub fn progress_partitions(&self) -> i32 {
        self.progress_partitions
    }

    /// A host's transactional session: its producer, with any older
    /// producer of the host fenced and its open transaction finished.
    pub async fn session(&self, host_token: &str) -> Result<Session> {
        let id = group(host_token);
        let mut c = self.o.client();
        c.set("transactional.id", &id)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            // weir batches itself: a batch is produced at once, and
            // waiting longer only delays its transaction.
            .set("linger.ms", "0")
            .set("partitioner", "murmur2_random")
            // A record not acknowledged within the timeout fails its
            // transaction, and the shipper says so and reconnects; the
            // client's default would retry it quietly for five minutes.
            .set("message.timeout.ms", self.o.timeout.as_millis().to_string())
            .set(
                "transaction.timeout.ms",
                (self.o.timeout.as_millis() * 6).to_string(),
            );
        let producer: FutureProducer = c.create().map_err(Error::KafkaConfig)?;
        // The group's metadata outlives the consumer it comes from, which
        // would otherwise keep polling the group's coordinator.
        let meta = self.positions(&id)?.group_metadata().ok_or(Error::Kafka {
            op: "group metadata",
            source: KafkaError::Canceled,
        })?;
        let p = producer.clone();
        let timeout = self.o.timeout;
        let turn = init_turn(&id).lock_owned().await;
        blocking("init transactions", move || {
            let r = p.init_transactions(timeout);
            drop(p);
            drop(turn);
            r
        })
        .await?;
        Ok(Session {
            producer,
            meta: Arc::new(meta),
            kafka: self.clone(),
            token: host_token.to_owned(),
        })
    }
}

/// The turn of one transactional id's `init_transactions` in this
/// process.
///
/// A blocking call cannot be cancelled: a session whose task is aborted
/// while its producer waits in `init_transactions` (for a broker that is
/// down, say) leaves the call running. Were it to finish after a newer
/// session's, it would take the newer epoch and fence that session, the
/// live one. So a session's init waits until an older one's call of the
/// same id has returned and its producer is gone.
fn init_turn(id: &str) -> Arc<tokio::sync::Mutex<()>> {
    type Turns = Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>;
    static TURNS: OnceLock<Turns> = OnceLock::new();
    let mut turns = TURNS
        .get_or_init(Turns::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    turns.retain(|_, t| t.strong_count() > 0);
    if let Some(t) = turns.get(id).and_then(Weak::upgrade) {
        return t;
    }
    let t = Arc::new(tokio::sync::Mutex::new(()));
    turns.insert(id.to_owned(), Arc::downgrade(&t));
    t
}

impl Kafka {
    /// A client of the host's group, which reads its positions and
    /// commits nothing itself.
    fn positions(&self, group: &str) -> Result<BaseConsumer> {
        self.o.reader(group).create().map_err(Error::KafkaConfig)
    }
}

/// A topic's partition count and replication factor.
async fn topic_shape(
    admin: &Arc<AdminClient<DefaultClientContext>>,
    topic: &str,
    timeout: Duration,
) -> Result<(i32, usize)> {
    let (a, t) = (admin.clone(), topic.to_owned());
    let md = blocking("topic metadata", move || {
        a.inner().fetch_metadata(Some(&t), timeout)
    })
    .await?;
    let Some(t) = md.topics().iter().find(|t| t.name() == topic) else {
        return Err(kafka_err("topic metadata")(KafkaError::MetadataFetch(
            RDKafkaErrorCode::UnknownTopicOrPartition,
        )));
    };
    if let Some(e) = t.error() {
        return Err(kafka_err("topic metadata")(KafkaError::MetadataFetch(
            e.into(),
        )));
    }
    let partitions = i32::try_from(t.partitions().len()).unwrap_or(i32::MAX);
    let replicas = t
        .partitions()
        .iter()
        .map(|p| p.replicas().len())
        .min()
        .unwrap_or(0);
    if partitions == 0 {
        return Err(kafka_err("topic metadata")(KafkaError::MetadataFetch(
            RDKafkaErrorCode::UnknownTopicOrPartition,
        )));
    }
    Ok((partitions, replicas))
}

/// One host's transactional producer, and its group's positions.
pub struct Session {
    producer: FutureProducer,
    meta: Arc<ConsumerGroupMetadata>,
    kafka: Kafka,
    token: String,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("host_token", &self.token)
            .finish_non_exhaustive()
    }
}

impl Drop for Session {
    /// The client's own drop purges what is queued and waits up to half
    /// a second for it: done on a blocking thread when there is a
    /// runtime, so that a reconnect does not stall the async threads.
    fn drop(&mut self) {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let p = self.producer.clone();
            drop(rt.spawn_blocking(move || drop(p)));
        }
    }
}

impl Session {
    /// Where the host's shipping stands: the incarnation and index of the
    /// last record committed. Of the positions the group holds (one per
    /// partition the host's key has had), this incarnation's furthest.
    pub async fn last(&self, mine: Incarnation) -> Result<Option<(Incarnation, u64)>> {
        let mut tpl = TopicPartitionList::new();
        for p in 0..self.kafka.partitions {
            tpl.add_partition(&self.kafka.o.topic, p);
        }
        let id = group(&self.token);
        let c = self.kafka.positions(&id)?;
        let timeout = self.kafka.o.timeout;
        let got = blocking("committed positions", move || {
            c.committed_offsets(tpl, timeout)
        })
        .await?;
        let mut best: Option<(Incarnation, u64)> = None;
        for e in got.elements() {
            if !matches!(e.offset(), Offset::Offset(_)) {
                continue;
            }
            let bad = |source| Error::BadPosition {
                group: id.clone(),
                partition: e.partition(),
                source,
            };
            // The client panics on metadata that is not UTF-8, which
            // anyone who may commit to the group can write.
            let text =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| e.metadata().to_owned()))
                    .map_err(|_| bad(wire::WireError::NotUtf8))?;
            let found = wire::parse_commit_position(&text).map_err(bad)?;
            best = Some(match best {
                Some(b) if rank(b, mine) >= rank(found, mine) => b,
                _ => found,
            });
        }
        Ok(best)
    }

    /// Publishes records as one transaction with their position, and
    /// returns once it is committed. After an error the transaction is
    /// left to the next session's `init_transactions`, which aborts it
    /// (or finishes its commit), and [`Session::last`] says which.
    /// `progress`, the host's progress message, goes in the same
    /// transaction.
    pub async fn publish(
        &self,
        inc: Incarnation,
        msgs: Vec<Outgoing>,
        progress: Option<String>,
    ) -> Result<()> {
        let r = self.transaction(inc, msgs, progress).await;
        r.map_err(|e| self.fenced_or(e))
    }

    /// A fenced producer fails each call with whatever error the call
    /// meets (a purged queue, a refused step); the client's fatal error
    /// says why.
    fn fenced_or(&self, e: Error) -> Error {
        match (e, self.producer.client().fatal_error()) {
            (
                Error::Kafka { source, .. },
                Some((RDKafkaErrorCode::Fenced | RDKafkaErrorCode::ProducerFenced, _)),
            ) => Error::Fenced { source },
            (e, _) => e,
        }
    }

    async fn transaction(
        &self,
        inc: Incarnation,
        msgs: Vec<Outgoing>,
        progress: Option<String>,
    ) -> Result<()> {
        let Some(end) = msgs.last().map(|m| m.index) else {
            return Ok(());
        };
        self.producer
            .begin_transaction()
            .map_err(kafka_err("begin transaction"))?;
        let mut deliveries = Vec::with_capacity(msgs.len());
        for m in &msgs {
            // A built-in type's name is static; only others are written.
            let kind = m
                .kind
                .name()
                .map_or_else(|| Cow::Owned(m.kind.to_string()), Cow::Borrowed);
            let headers = OwnedHeaders::new_with_capacity(2)
                .insert(Header {
                    key: ID_HEADER,
                    value: Some(m.id.as_str()),
                })
                .insert(Header {
                    key: TYPE_HEADER,
                    value: Some(kind.as_ref()),
                });
            let rec = FutureRecord::to(&self.kafka.o.topic)
                .key(self.token.as_str())
                .payload(m.payload.as_ref())
                .headers(headers);
            deliveries.push(self.send(rec).await?);
        }
        let topic = self.kafka.o.progress_topic();
        let progress = match &progress {
            Some(json) => Some(
                self.send(
                    FutureRecord::to(&topic)
                        .key(self.token.as_str())
                        .payload(json.as_bytes()),
                )
                .await?,
            ),
            None => None,
        };
        // Every delivery is awaited before the commit: the client's
        // commit flushes by polling in 100 ms slices otherwise.
        let mut last = None;
        for d in deliveries {
            let d = delivered(d).await?;
            last = Some((d.partition, d.offset));
        }
        if let Some(d) = progress {
            delivered(d).await?;
        }
        if let Some((partition, offset)) = last {
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset(&self.kafka.o.topic, partition, Offset::Offset(offset + 1))
                .map_err(kafka_err("position"))?;
            if let Some(mut e) = tpl.find_partition(&self.kafka.o.topic, partition) {
                e.set_metadata(wire::commit_position(inc, end));
            }
            let (p, meta, timeout) = (
                self.producer.clone(),
                self.meta.clone(),
                self.kafka.o.timeout,
            );
            blocking("send position", move || {
                p.send_offsets_to_transaction(&tpl, &meta, timeout)
            })
            .await?;
        }
        self.commit().await
    }

    /// Replaces the host's progress message, in a transaction of its own
    /// (the producer is transactional).
    pub async fn put_status(&self, json: String) -> Result<()> {
        let r = self.progress(json).await;
        r.map_err(|e| self.fenced_or(e))
    }

    async fn progress(&self, json: String) -> Result<()> {
        self.producer
            .begin_transaction()
            .map_err(kafka_err("begin transaction"))?;
        let topic = self.kafka.o.progress_topic();
        let rec = FutureRecord::to(&topic)
            .key(self.token.as_str())
            .payload(json.as_bytes());
        delivered(self.send(rec).await?).await?;
        self.commit().await
    }

    /// Queues a record, waiting for room in the client's queue.
    async fn send(&self, mut rec: FutureRecord<'_, str, [u8]>) -> Result<DeliveryFuture> {
        loop {
            match self.producer.send_result(rec) {
                Ok(d) => return Ok(d),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    rec = r;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                Err((e, _)) => return Err(kafka_err("produce")(e)),
            }
        }
    }

    async fn commit(&self) -> Result<()> {
        let (p, timeout) = (self.producer.clone(), self.kafka.o.timeout);
        blocking("commit transaction", move || p.commit_transaction(timeout)).await
    }
}

/// Waits for a record's acknowledgement.
async fn delivered(d: DeliveryFuture) -> Result<Delivery> {
    match d.await {
        Ok(Ok(d)) => Ok(d),
        Ok(Err((e, _))) => Err(kafka_err("produce")(e)),
        Err(_) => Err(Error::Kafka {
            op: "produce",
            source: KafkaError::Canceled,
        }),
    }
}

/// How a committed position ranks for a host now at `mine`: its own
/// incarnation first, then the furthest index.
fn rank((inc, index): (Incarnation, u64), mine: Incarnation) -> (bool, u64) {
    (inc == mine, index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names() {
        assert!(check_topic_name("weir").is_ok());
        assert!(check_topic_name("fleet.weir_1-a").is_ok());
        assert!(check_topic_name(&"x".repeat(240)).is_ok());
        for bad in ["", ".", "..", "a b", "a/b", "é", "a:b", &"x".repeat(241)] {
            assert!(check_topic_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_host_resumes_from_its_own_incarnations_furthest_position() {
        let (a, b) = (Incarnation([1; 16]), Incarnation([2; 16]));
        assert!(rank((a, 5), a) > rank((b, 900), a));
        assert!(rank((a, 9), a) > rank((a, 5), a));
        assert!(rank((b, 9), a) > rank((b, 5), a));
    }
}
