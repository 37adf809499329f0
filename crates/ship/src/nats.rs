//! The NATS JetStream sink: one stream for the fleet, a subject per host
//! and record type, a batch committed atomically per round trip.
//!
//! Exactness comes from the stream, not from its duplicate window. At
//! every (re)start the shipper asks the stream leader for the host's last
//! message (`weir.<host>.>`, a wildcard "last by subject" read) and goes
//! on after it. Publishing is one atomic batch at a time (JetStream's
//! `allow_atomic`, server 2.12 and later). A batch is stored whole or not
//! at all, and the next is sent only once the last is acknowledged. So a
//! lost acknowledgement, a reconnect or a killed process can leave the
//! stream short of a batch but never with a hole. A record published
//! alone carries `Nats-Msg-Id` (host, incarnation, index), which makes a
//! retry inside the duplicate window a no-op as well. The server refuses
//! that header inside an atomic batch, so there the same id travels as
//! `Weir-Msg-Id`. A stream without atomic batches is shipped to one message at a
//! time, which is as exact and slower, and the shipper says so.

use std::time::Duration;

use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::context::GetStreamErrorKind;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::stream::{self, DiscardPolicy, LastRawMessageErrorKind, StorageType};
use async_nats::jetstream::{self, Context};
use bytes::Bytes;
use jetstream_extra::batch_publish::BatchPublishExt as _;
use weir_log::RecordType;

use crate::error::{Error, Result};
use crate::wire::{self, SUBJECT_PREFIX, Shipped};

/// The header that names a record inside an atomic batch (host,
/// incarnation, index, as `Nats-Msg-Id` does outside one), and every
/// record on Kafka.
pub const ID_HEADER: &str = "Weir-Msg-Id";

/// The most records in one atomic batch (the server's limit).
pub const MAX_BATCH: usize = 1000;

/// The stream of per-host progress: the last message of
/// `weir-status.<host>` says how far the host's log goes, for `weir fleet
/// status`'s lag. One message per subject is kept.
pub const STATUS_PREFIX: &str = "weir-status";

/// Whether `name` can name a JetStream stream: 1 to 200 printable ASCII
/// characters, none of which NATS gives a meaning in subjects or uses as
/// a path on the server's disk (`.`, `*`, `>`, `/`, `\`, space). Says
/// what is wrong otherwise.
pub fn check_stream_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > 200 {
        return Err("a stream name has 1 to 200 characters");
    }
    if name
        .bytes()
        .any(|b| !b.is_ascii_graphic() || b".*>/\\".contains(&b))
    {
        return Err("a stream name is printable ASCII without . * > / \\ or spaces");
    }
    Ok(())
}

/// How to reach the broker and which stream to use.
#[derive(Debug, Clone)]
pub struct NatsOptions {
    /// Server URLs, comma-separated (`nats://host:4222,...`).
    pub url: String,
    /// The records' stream, created if missing with subjects `weir.>`.
    pub stream: String,
    /// Replicas for a stream this shipper creates.
    pub replicas: usize,
    /// The size limit of a stream this shipper creates, bytes (`None`:
    /// none). A full stream refuses new records (discard "new"): the
    /// shipper waits, as the log keeps them, rather than the stream
    /// dropping the oldest.
    pub max_bytes: Option<i64>,
    /// How long a request or publish waits for the server.
    pub timeout: Duration,
}

impl NatsOptions {
    /// The defaults for a server at `url`.
    pub fn new(url: impl Into<String>) -> NatsOptions {
        NatsOptions {
            url: url.into(),
            stream: "WEIR".into(),
            replicas: 1,
            max_bytes: None,
            timeout: Duration::from_secs(5),
        }
    }

    /// The server URLs as shown in status and logs: any user and
    /// password (`nats://user:secret@host`) left out.
    pub fn shown_url(&self) -> String {
        self.url
            .split(',')
            .map(|u| {
                let (scheme, rest) = u.split_once("://").map_or(("", u), |(s, r)| (s, r));
                let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
                if scheme.is_empty() {
                    host.to_owned()
                } else {
                    format!("{scheme}://{host}")
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The progress stream's name, beside the records' one.
    pub fn status_stream(&self) -> String {
        format!("{}_STATUS", self.stream)
    }
}

/// A record ready to publish.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The record's index.
    pub index: u64,
    /// The record's type.
    pub kind: RecordType,
    /// `weir.<host>.<TYPE>`.
    pub subject: String,
    /// `Nats-Msg-Id` (NATS) or [`ID_HEADER`] (Kafka).
    pub id: String,
    /// The record on the wire.
    pub payload: Bytes,
}

/// A connection to JetStream with the records' stream found or made.
#[derive(Debug, Clone)]
pub struct Nats {
    js: Context,
    stream: stream::Stream,
    status: stream::Stream,
    name: String,
    atomic: bool,
}

/// Whether a get-stream error says the stream does not exist.
fn not_found(e: &async_nats::jetstream::context::GetStreamError) -> bool {
    matches!(e.kind(), GetStreamErrorKind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND)
}

fn js_err(op: &'static str) -> impl FnOnce(async_nats::Error) -> Error {
    move |source| Error::JetStream { op, source }
}

impl Nats {
    /// Connects and finds (or creates) the streams. Returns the warnings a
    /// user should see about the stream's durability and speed.
    pub async fn connect(o: &NatsOptions) -> Result<(Nats, Vec<String>)> {
        let client = async_nats::ConnectOptions::new()
            .name("weir-ship")
            .connection_timeout(o.timeout)
            .request_timeout(Some(o.timeout))
            .connect(o.url.as_str())
            .await
            .map_err(|source| Error::Connect {
                url: o.url.clone(),
                source,
            })?;
        let mut js = jetstream::new(client);
        js.set_timeout(o.timeout);
        let mut warnings = Vec::new();
        let mut stream = match js.get_stream(&o.stream).await {
            Ok(s) => s,
            Err(e) if not_found(&e) => {
                warnings.push(format!(
                    "stream {} did not exist; created it with subjects {SUBJECT_PREFIX}.> and {} replica(s)",
                    o.stream, o.replicas
                ));
                js.create_stream(records_config(o))
                    .await
                    .map_err(|e| js_err("create stream")(e.into()))?
            }
            Err(e) => return Err(js_err("get stream")(e.into())),
        };
        let info = stream
            .info()
            .await
            .map_err(|e| js_err("stream info")(e.into()))?
            .clone();
        let c = &info.config;
        let all = format!("{SUBJECT_PREFIX}.>");
        if !c.subjects.contains(&all) {
            return Err(Error::StreamUnfit {
                stream: o.stream.clone(),
                reason: "its subjects do not include weir.>",
            });
        }
        if c.discard == DiscardPolicy::Old && (c.max_bytes > 0 || c.max_messages > 0) {
            warnings.push(format!(
                "stream {}: at its limits the stream drops its oldest records (discard old); \
                 with discard new it would refuse new ones and weir would wait",
                o.stream
            ));
        }
        if c.num_replicas < 3 {
            warnings.push(format!(
                "stream {} has {} replica(s): an acknowledgement means one server has the \
                 record, and its loss loses what it held (3 replicas survive one); \
                 durability also needs the server's sync_interval: always",
                o.stream, c.num_replicas
            ));
        }
        if !c.allow_atomic_publish {
            warnings.push(format!(
                "stream {} does not allow atomic batches (allow_atomic): records go one per \
                 round trip",
                o.stream
            ));
        }
        let status = match js.get_stream(o.status_stream()).await {
            Ok(s) => s,
            Err(e) if not_found(&e) => js
                .create_stream(status_config(o))
                .await
                .map_err(|e| js_err("create status stream")(e.into()))?,
            Err(e) => return Err(js_err("get status stream")(e.into())),
        };
        Ok((
            Nats {
                atomic: c.allow_atomic_publish,
                js,
                stream,
                status,
                name: o.stream.clone(),
            },
            warnings,
        ))
    }

    /// The stream's name.
    pub fn stream_name(&self) -> &str {
        &self.name
    }

    /// The client, for readers of the fleet.
    pub fn context(&self) -> &Context {
        &self.js
    }

    /// The records' stream.
    pub fn stream(&self) -> &stream::Stream {
        &self.stream
    }

    /// The progress stream.
    pub fn status_stream(&self) -> &stream::Stream {
        &self.status
    }

    /// The last record the stream holds for a host, read from the
    /// stream's leader.
    pub async fn last(&self, host_token: &str) -> Result<Option<Shipped>> {
        let subject = wire::host_subjects(host_token);
        match self.stream.get_last_raw_message_by_subject(&subject).await {
            Ok(m) => wire::decode(&m.payload)
                .map(Some)
                .map_err(|source| Error::BadMessage {
                    sequence: m.sequence,
                    subject: m.subject.to_string(),
                    source,
                }),
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(js_err("last message")(e.into())),
        }
    }

    /// Publishes records in order and returns once the stream has stored
    /// them all: atomically, in batches of at most [`MAX_BATCH`], or one
    /// by one on a stream without atomic batches. After an error some
    /// leading part may be stored; [`Nats::last`] says which.
    pub async fn publish(&self, msgs: Vec<Outgoing>) -> Result<()> {
        if !self.atomic || msgs.len() == 1 {
            for m in msgs {
                let msg = PublishMessage::build().payload(m.payload).message_id(&m.id);
                let ack = self
                    .js
                    .send_publish(m.subject, msg)
                    .await
                    .map_err(|e| Error::Publish { source: e.into() })?;
                ack.await.map_err(|e| Error::Publish { source: e.into() })?;
            }
            return Ok(());
        }
        let mut it = msgs.into_iter().peekable();
        while it.peek().is_some() {
            let chunk: Vec<Outgoing> = it.by_ref().take(MAX_BATCH).collect();
            self.publish_batch(chunk).await?;
        }
        Ok(())
    }

    async fn publish_batch(&self, chunk: Vec<Outgoing>) -> Result<()> {
        let n = chunk.len() as u64;
        // No acknowledgement of the first message: the commit's says
        // whether the batch was stored, and one round trip less is a
        // quarter of a batch's time on loopback.
        let mut batch = self.js.batch_publish().ack_first(false).build();
        // The server refuses Nats-Msg-Id inside an atomic batch; the id
        // travels in a header of weir's own, and the batch's atomicity
        // with the resume read keeps it exact.
        let mut msgs = chunk.into_iter().map(|m| {
            PublishMessage::build()
                .payload(m.payload)
                .header(ID_HEADER, m.id.as_str())
                .outbound_message(m.subject)
        });
        let Some(last) = msgs.next_back() else {
            return Ok(());
        };
        for out in msgs {
            batch
                .add_message(out)
                .await
                .map_err(|e| Error::Publish { source: e.into() })?;
        }
        let ack = batch
            .commit_message(last)
            .await
            .map_err(|e| Error::Publish { source: e.into() })?;
        if ack.batch_size != n {
            return Err(Error::StreamUnfit {
                stream: self.name.clone(),
                reason: "the server acknowledged a batch of another size",
            });
        }
        Ok(())
    }

    /// Replaces the host's progress message (`weir-status.<host>`).
    pub async fn put_status(&self, host_token: &str, json: String) -> Result<()> {
        let ack = self
            .js
            .publish(format!("{STATUS_PREFIX}.{host_token}"), json.into())
            .await
            .map_err(|e| Error::Publish { source: e.into() })?;
        ack.await.map_err(|e| Error::Publish { source: e.into() })?;
        Ok(())
    }
}

fn records_config(o: &NatsOptions) -> stream::Config {
    stream::Config {
        name: o.stream.clone(),
        subjects: vec![format!("{SUBJECT_PREFIX}.>")],
        storage: StorageType::File,
        num_replicas: o.replicas,
        max_bytes: o.max_bytes.unwrap_or(-1),
        discard: DiscardPolicy::New,
        duplicate_window: Duration::from_secs(120),
        allow_direct: true,
        allow_atomic_publish: true,
        ..Default::default()
    }
}

fn status_config(o: &NatsOptions) -> stream::Config {
    stream::Config {
        name: o.status_stream(),
        subjects: vec![format!("{STATUS_PREFIX}.>")],
        storage: StorageType::File,
        num_replicas: o.replicas,
        max_messages_per_subject: 1,
        allow_direct: true,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_names() {
        assert!(check_stream_name("WEIR").is_ok());
        assert!(check_stream_name("fleet-1_a").is_ok());
        for bad in [
            "",
            "a.b",
            "a*",
            "a>",
            "a b",
            "a/b",
            "a\\b",
            "é",
            &"x".repeat(201),
        ] {
            assert!(check_stream_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn shown_urls_keep_no_credentials() {
        let o = NatsOptions::new("nats://u:p@a:4222,tls://tok@b,c:4222");
        assert_eq!(o.shown_url(), "nats://a:4222,tls://b,c:4222");
        assert_eq!(NatsOptions::new("x@y").shown_url(), "y");
    }
}
