//! The shipper: a registered consumer of the log that publishes what the
//! log has made durable and clears what the broker has stored.
//!
//! The broker, not the consumer's cursor, says where to resume: at each
//! (re)connection the shipper reads where the host stands (its last
//! record in the stream, or its committed position on Kafka) and goes on
//! after it. The cursor only keeps retention from
//! deleting what is not shipped yet, so clearing it lags the broker by up
//! to [`ShipOptions::clear_interval`] at no risk, and it is moved by a
//! task of its own (a rewrite of the consumer file, with its fsyncs, never
//! waits in the publishing loop). Only durable records
//! leave the host: a record shipped and then lost in a crash would let
//! the log give its index to another record.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::watch;
use weir_log::{Incarnation, Log, LogRecord, Reader, TypeMask};

use crate::error::{Error, Result};
use crate::nats::Outgoing;
use crate::sink::{Conn, Sink};
use crate::stats::{ShipState, ShipStats};
use crate::wire::{self, Envelope};

/// What to ship, and how often to touch the log's cursor.
#[derive(Debug, Clone)]
pub struct ShipOptions {
    /// The host's name on the broker.
    pub host: String,
    /// The log consumer that holds back retention for this sink (`None`:
    /// `ship-<sink>`, `ship-nats` or `ship-kafka`).
    pub consumer: Option<String>,
    /// The types shipped.
    pub mask: TypeMask,
    /// The most records read and published as one batch (`None`: the
    /// sink's, [`Sink::batch`]).
    pub batch: Option<usize>,
    /// How often the consumer's cursor is moved up to what the broker
    /// holds (each move rewrites the consumer file).
    pub clear_interval: Duration,
    /// How long a record may wait for others to share its batch: a
    /// trickle of records goes out in batches this far apart, not one
    /// round trip (and one broker fsync) per record.
    pub linger: Duration,
    /// How often, at most, the host's progress message is refreshed while
    /// the log grows (each is a publish the broker fsyncs); an idle host
    /// refreshes it once a minute, and a stop once more.
    pub status_interval: Duration,
}

impl ShipOptions {
    /// The defaults for a host.
    pub fn new(host: impl Into<String>) -> ShipOptions {
        ShipOptions {
            host: host.into(),
            consumer: None,
            mask: TypeMask::all(),
            batch: None,
            clear_interval: Duration::from_secs(1),
            linger: Duration::from_millis(50),
            status_interval: Duration::from_secs(5),
        }
    }
}

/// Where shipping starts, given what the broker holds for the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Start {
    /// The first index to read.
    pub(crate) next: u64,
    /// Records owed to the broker that the log no longer has.
    pub(crate) lost: u64,
}

/// Decides where to resume. `broker` is the incarnation and index of the
/// host's last record in the stream; `first` and `last` the log's.
pub(crate) fn resume_at(
    broker: Option<(Incarnation, u64)>,
    mine: Incarnation,
    first: u64,
    last: u64,
) -> Result<Start> {
    let after = match broker {
        // A new stream, or records of an earlier history of this host's
        // log: this history is shipped from its oldest retained record.
        None => 0,
        Some((inc, _)) if inc != mine => 0,
        Some((_, i)) if i > last => {
            return Err(Error::BrokerAhead {
                broker: i,
                log: last,
            });
        }
        Some((_, i)) => i,
    };
    let want = after + 1;
    if broker.is_some_and(|(inc, _)| inc == mine) && want < first {
        return Ok(Start {
            next: first,
            lost: first - want,
        });
    }
    Ok(Start {
        next: want.max(first),
        lost: 0,
    })
}

/// One sink's shipper.
#[derive(Debug)]
pub struct Shipper {
    log: Arc<Log>,
    sink: Sink,
    opts: ShipOptions,
    consumer: String,
    batch: usize,
    stats: Arc<ShipStats>,
    token: String,
}

impl Shipper {
    /// A shipper of `log` to `sink` (a [`NatsOptions`](crate::nats::NatsOptions)
    /// or a [`KafkaOptions`](crate::kafka::KafkaOptions)).
    pub fn new(log: Arc<Log>, sink: impl Into<Sink>, opts: ShipOptions) -> Result<Shipper> {
        let sink = sink.into();
        wire::check_host(&opts.host)?;
        sink.check()?;
        let consumer = opts
            .consumer
            .clone()
            .unwrap_or_else(|| format!("ship-{}", sink.kind()));
        Ok(Shipper {
            batch: opts.batch.unwrap_or_else(|| sink.batch()).max(1),
            token: wire::host_token(&opts.host),
            log,
            sink,
            consumer,
            opts,
            stats: Arc::new(ShipStats::default()),
        })
    }

    /// The log consumer that holds back retention for it.
    pub fn consumer(&self) -> &str {
        &self.consumer
    }

    /// Where it ships.
    pub fn sink(&self) -> &Sink {
        &self.sink
    }

    /// The counters, live.
    pub fn stats(&self) -> Arc<ShipStats> {
        self.stats.clone()
    }

    /// Ships until `stop` turns true, retrying with backoff through
    /// broker and network failures. Returns early only for an error
    /// retrying cannot cure (the log's, or a stream that cannot hold the
    /// records).
    pub async fn run(self, mut stop: watch::Receiver<bool>) -> Result<()> {
        self.register()?;
        let clearer = tokio::spawn(self.clearer().every(self.opts.clear_interval, stop.clone()));
        let mut backoff = Backoff::default();
        let out = loop {
            if *stop.borrow() {
                break Ok(());
            }
            self.stats.set_state(ShipState::Connecting);
            let r = match self.sink.connect(&self.token).await {
                Ok((conn, warnings)) => {
                    for w in warnings {
                        tracing::warn!(sink = self.sink.kind(), target = %self.sink.target(), "{w}");
                    }
                    self.session(&conn, &mut stop, &mut backoff).await
                }
                Err(e) => Err(e),
            };
            match r {
                Ok(()) => break Ok(()),
                Err(e) if e.is_transient() => {
                    tracing::warn!(sink = self.sink.kind(), error = %e, "shipping failed; retrying");
                    self.stats.failed(&e);
                    if sleep_or_stop(backoff.next(), &mut stop).await {
                        break Ok(());
                    }
                }
                Err(e) => break Err(e),
            }
        };
        clearer.abort();
        let last = self.clearer();
        let _ = tokio::task::spawn_blocking(move || last.clear()).await;
        match &out {
            Ok(()) => self.stats.set_state(ShipState::Stopped),
            Err(e) => {
                tracing::error!(sink = self.sink.kind(), error = %e, "shipping stopped");
                self.stats.stopped_by(e);
            }
        }
        out
    }

    /// Registers the sink's consumer, once.
    fn register(&self) -> Result<()> {
        register(&self.log, &self.consumer, &self.opts.mask)
    }

    fn clearer(&self) -> Clearer {
        Clearer {
            log: self.log.clone(),
            consumer: self.consumer.clone(),
            mask: self.opts.mask.clone(),
            stats: self.stats.clone(),
        }
    }

    /// One connection's shipping: resume after the broker's last record,
    /// then publish batch after batch.
    async fn session(
        &self,
        conn: &Conn,
        stop: &mut watch::Receiver<bool>,
        backoff: &mut Backoff,
    ) -> Result<()> {
        let inc = self.log.incarnation();
        let last = conn.last(&self.token, inc).await?;
        let start = resume_at(last, inc, self.log.first_index(), self.log.last_index())?;
        self.resume(start);
        tracing::info!(sink = self.sink.kind(), host = %self.opts.host, next = start.next, "shipping");
        self.stats.set_state(ShipState::Shipping);
        let mut reader = self
            .log
            .reader(start.next)
            .with_mask(self.opts.mask.clone());
        let mut status = LastPut::default();
        let env = Envelope::new(&self.opts.host, inc);
        // The next batch, read and encoded while the last one's
        // acknowledgement is on its way (it is sent only after).
        let mut ahead: Vec<LogRecord> = Vec::new();
        let mut ahead_msgs: Vec<Outgoing> = Vec::new();
        loop {
            if *stop.borrow() {
                self.put_status(conn, inc, &mut status).await;
                return Ok(());
            }
            let mut batch = std::mem::take(&mut ahead);
            let mut msgs = std::mem::take(&mut ahead_msgs);
            match self.read_batch(&mut reader, &mut batch) {
                Ok(()) => {}
                Err(weir_log::Error::Truncated { requested, oldest }) => {
                    self.resume(Start {
                        next: oldest,
                        lost: oldest - requested,
                    });
                    reader = self.log.reader(oldest).with_mask(self.opts.mask.clone());
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            if status.due(&self.log, &self.stats, self.opts.status_interval) {
                self.put_status(conn, inc, &mut status).await;
            }
            let Some(first) = batch.first() else {
                // Caught up: what the reader skipped is not owed.
                self.stats.passed(reader.position().saturating_sub(1));
                reader = wait(reader).await;
                continue;
            };
            if batch.len() < self.batch {
                // A trickle: let the first record wait out its linger for
                // company, then take what came meanwhile.
                let age = Duration::from_nanos(now_ns().saturating_sub(first.time_ns));
                if let Some(rest) = self.opts.linger.checked_sub(age)
                    && sleep_or_stop(rest, stop).await
                {
                    self.put_status(conn, inc, &mut status).await;
                    return Ok(());
                }
                // An error here meets the next read again.
                let _ = self.read_batch(&mut reader, &mut batch);
            }
            let Some(end) = batch.last().map(|r| r.index) else {
                continue;
            };
            self.durable(end).await?;
            let done = msgs.len();
            msgs.extend(batch[done..].iter().map(|r| outgoing(&env, r)));
            let n = msgs.len() as u64;
            self.stats.publishing(n);
            // A sink whose batches carry the progress message (Kafka's, in
            // the same transaction) keeps it exact at no extra round trip.
            let last = self.log.last_index();
            let progress = conn
                .progress_in_batches()
                .then(|| self.progress(inc, last, end));
            let carried = progress.is_some();
            let (published, ()) = tokio::join!(conn.publish(inc, msgs, progress), async {
                // An error here meets the next read again.
                let _ = self.read_batch(&mut reader, &mut ahead);
                let done = ahead_msgs.len();
                ahead_msgs.extend(ahead[done..].iter().map(|r| outgoing(&env, r)));
            });
            published?;
            self.stats.acked(n, end);
            if carried {
                status.put = Some((Instant::now(), last, end));
            }
            backoff.reset();
        }
    }

    fn resume(&self, start: Start) {
        if start.lost > 0 {
            tracing::warn!(
                host = %self.opts.host,
                lost = start.lost,
                from = start.next - start.lost,
                to = start.next - 1,
                "records the broker never got are gone from the log (retention evicted this sink); shipping resumes after the gap"
            );
            self.stats.gap(start.next - start.lost, start.next - 1);
        }
        self.stats.resumed_after(start.next - 1);
    }

    /// Fills `out` up to a batch of records, without waiting. An error
    /// after some records leaves them to be shipped first: the reader
    /// meets the error again at its next call.
    fn read_batch(&self, reader: &mut Reader, out: &mut Vec<LogRecord>) -> weir_log::Result<()> {
        while out.len() < self.batch {
            match reader.next_record() {
                Ok(Some(r)) => out.push(r),
                Ok(None) => break,
                Err(_) if !out.is_empty() => break,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Waits until the log has made `end` durable: asks for it, then
    /// looks at the durable index at growing intervals (an fsync takes
    /// milliseconds), so that no thread polls for it. One that takes over
    /// a second is waited for by the log's own durable wait, which also
    /// says why it fails (a poisoned or closed log).
    async fn durable(&self, end: u64) -> Result<()> {
        if end <= self.log.durable_index() {
            return Ok(());
        }
        self.log.request_durable(end)?;
        let mut nap = Duration::from_micros(500);
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            tokio::time::sleep(nap).await;
            if end <= self.log.durable_index() {
                return Ok(());
            }
            nap = (nap * 2).min(Duration::from_millis(20));
        }
        let log = self.log.clone();
        tokio::task::spawn_blocking(move || log.wait_durable_index(end))
            .await
            .unwrap_or(Err(weir_log::Error::Closed))?;
        Ok(())
    }

    /// The host's progress message: the log's last index, and the last
    /// the broker has (or, in a batch, will have with it).
    fn progress(&self, inc: Incarnation, last: u64, acked: u64) -> String {
        let progress = wire::Progress {
            schema: wire::SCHEMA,
            host: self.opts.host.clone(),
            incarnation: inc.to_string(),
            last_index: last,
            acked_index: acked,
            time: now_ns(),
        };
        serde_json::to_string(&progress).unwrap_or_default()
    }

    /// Refreshes the host's progress message. A failure only delays
    /// `weir fleet status`'s lag; the next batch shows the broker's state.
    async fn put_status(&self, conn: &Conn, inc: Incarnation, p: &mut LastPut) {
        let (last, acked) = (self.log.last_index(), self.stats.acked_index());
        let json = self.progress(inc, last, acked);
        match tokio::time::timeout(self.sink.timeout(), conn.put_status(&self.token, json)).await {
            Ok(Ok(())) => p.put = Some((Instant::now(), last, acked)),
            Ok(Err(e)) => tracing::debug!(error = %e, "refreshing the host's progress message"),
            Err(_) => tracing::debug!("refreshing the host's progress message timed out"),
        }
    }
}

/// The last progress message put: when, and the log's and the broker's
/// indexes it said.
#[derive(Debug, Default)]
struct LastPut {
    put: Option<(Instant, u64, u64)>,
}

impl LastPut {
    /// An idle host's heartbeat.
    const IDLE: Duration = Duration::from_secs(60);

    /// Whether to put one now: the first, one every `interval` while the
    /// figures move, and an idle host's heartbeat.
    fn due(&self, log: &Log, stats: &ShipStats, interval: Duration) -> bool {
        let Some((at, last, acked)) = self.put else {
            return true;
        };
        let moved = (log.last_index(), stats.acked_index()) != (last, acked);
        let age = at.elapsed();
        (moved && age >= interval) || age >= Self::IDLE
    }
}

fn register(log: &Log, consumer: &str, mask: &TypeMask) -> Result<()> {
    match log.register(consumer, mask.clone()) {
        Ok(_) | Err(weir_log::Error::ConsumerExists(_)) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Moves the sink's consumer up to what the broker holds, on a blocking
/// thread: the consumer file's rewrite and fsyncs take milliseconds on a
/// disk, which the publishing loop must not wait for.
#[derive(Debug, Clone)]
struct Clearer {
    log: Arc<Log>,
    consumer: String,
    mask: TypeMask,
    stats: Arc<ShipStats>,
}

impl Clearer {
    /// Clears every `interval` until `stop` turns true.
    async fn every(self, interval: Duration, mut stop: watch::Receiver<bool>) {
        let mut cleared = 0;
        loop {
            if sleep_or_stop(interval, &mut stop).await {
                return;
            }
            let acked = self.stats.acked_index();
            if acked == cleared {
                continue;
            }
            let c = self.clone();
            if tokio::task::spawn_blocking(move || c.clear()).await.is_ok() {
                cleared = acked;
            }
        }
    }

    /// The consumer may have been evicted by retention (announced by the
    /// log with a MARK): it is registered again, and the gap shows when
    /// shipping resumes.
    fn clear(&self) {
        let acked = self.stats.acked_index();
        if acked == 0 {
            return;
        }
        match self.log.clear(&self.consumer, acked) {
            Ok(_) => {}
            Err(weir_log::Error::UnknownConsumer(_)) => {
                tracing::warn!(consumer = %self.consumer, "the shipper's consumer was evicted by retention; registering it again");
                if let Err(e) = register(&self.log, &self.consumer, &self.mask) {
                    tracing::warn!(error = %e, "registering the shipper's consumer again");
                }
            }
            Err(e) => tracing::warn!(error = %e, "clearing the shipper's consumer"),
        }
    }
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A record as published.
fn outgoing(env: &Envelope, r: &LogRecord) -> Outgoing {
    Outgoing {
        index: r.index,
        kind: r.kind,
        subject: env.subject(r.kind),
        id: env.message_id(r.index),
        payload: Bytes::from(env.encode(r)),
    }
}

/// Waits for records past the reader's position, for at most 100 ms (so
/// a stop is seen within that).
async fn wait(reader: Reader) -> Reader {
    tokio::task::spawn_blocking(move || {
        reader.wait(Duration::from_millis(100));
        reader
    })
    .await
    .expect("the log reader's wait does not panic")
}

/// Sleeps for `d` unless `stop` turns true first; says whether it did.
async fn sleep_or_stop(d: Duration, stop: &mut watch::Receiver<bool>) -> bool {
    let stopped = tokio::select! {
        () = tokio::time::sleep(d) => None,
        r = stop.wait_for(|s| *s) => Some(r.is_ok()),
    };
    stopped.unwrap_or_else(|| *stop.borrow())
}

/// Exponential backoff: 100 ms doubling to 5 s.
#[derive(Debug, Default)]
struct Backoff {
    failures: u32,
}

impl Backoff {
    fn next(&mut self) -> Duration {
        let d = Duration::from_millis(100) * 2u32.pow(self.failures.min(6));
        self.failures += 1;
        d.min(Duration::from_secs(5))
    }

    fn reset(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Incarnation = Incarnation([1; 16]);
    const B: Incarnation = Incarnation([2; 16]);

    #[test]
    fn resumes_after_what_the_broker_holds() {
        let at = |next, lost| Ok::<_, Error>(Start { next, lost });
        assert_eq!(resume_at(None, A, 1, 0).ok(), at(1, 0).ok());
        assert_eq!(resume_at(None, A, 5, 9).ok(), at(5, 0).ok());
        assert_eq!(resume_at(Some((A, 7)), A, 1, 9).ok(), at(8, 0).ok());
        assert_eq!(resume_at(Some((A, 9)), A, 1, 9).ok(), at(10, 0).ok());
        // Another history of the host's log: this one from its start.
        assert_eq!(resume_at(Some((B, 70)), A, 3, 9).ok(), at(3, 0).ok());
        // Retention dropped 4..=9 before the broker got them.
        assert_eq!(resume_at(Some((A, 3)), A, 10, 20).ok(), at(10, 6).ok());
        assert!(matches!(
            resume_at(Some((A, 10)), A, 1, 9),
            Err(Error::BrokerAhead { broker: 10, log: 9 })
        ));
    }

    #[test]
    fn backoff_doubles_to_a_ceiling_and_resets() {
        let mut b = Backoff::default();
        let seen: Vec<u128> = (0..8).map(|_| b.next().as_millis()).collect();
        assert_eq!(seen, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        b.reset();
        assert_eq!(b.next(), Duration::from_millis(100));
    }
}
