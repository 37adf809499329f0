//! The shipper, when `[ship]` names servers: a task on the daemon's
//! runtime that ships the log as `weir ship` does in the foreground.
//!
//! Broker failures never stop the daemon: the shipper retries with
//! backoff, and the log's retention (its consumer) keeps what is not
//! shipped yet. An error retrying cannot cure (the broker holds indexes
//! this log never made, a stream that cannot hold the records) stops the
//! shipper alone, logged and shown in `/v1/status`: the inventory and
//! the log are worth more to the host than shipping is.

use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{info, warn};
use weir_log::{Log, TypeMask};
use weir_ship::kafka::KafkaOptions;
use weir_ship::nats::NatsOptions;
use weir_ship::{ShipOptions, Shipper, Sink};

use crate::api::ShipView;
use crate::config::ShipConfig;
use crate::{Error, Result};

/// How long a stop waits for the batch in flight to be acknowledged.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// The running shipper.
pub(crate) struct ShipTask {
    stop: watch::Sender<bool>,
    task: JoinHandle<weir_ship::Result<()>>,
}

/// Starts the shipper `[ship]` asks for, if any.
pub(crate) fn start(
    config: &ShipConfig,
    log: &Arc<Log>,
    runtime: &Runtime,
) -> Result<Option<(ShipTask, ShipView)>> {
    let Some(sink) = sink(config) else {
        return Ok(None);
    };
    let host = match &config.host {
        Some(h) => h.clone(),
        None => weir_ship::machine_host().map_err(Error::Ship)?,
    };
    let mut opts = ShipOptions::new(host.clone());
    opts.consumer.clone_from(&config.consumer);
    opts.linger = Duration::from_millis(config.linger_ms);
    // Validation parsed the mask already.
    opts.mask = TypeMask::parse(&config.mask).unwrap_or_else(|_| TypeMask::all());
    let shipper = Shipper::new(log.clone(), sink, opts).map_err(Error::Ship)?;
    let view = ShipView {
        stats: shipper.stats(),
        sink: shipper.sink().kind(),
        url: shipper.sink().shown(),
        stream: shipper.sink().target().to_owned(),
        host: host.clone(),
    };
    let (stop, rx) = watch::channel(false);
    let task = runtime.spawn(shipper.run(rx));
    info!(sink = view.sink, url = %view.url, target = %view.stream, host = %host, "shipping the log");
    Ok(Some((ShipTask { stop, task }, view)))
}

/// The sink `[ship]` names, if any (validation allows one).
fn sink(config: &ShipConfig) -> Option<Sink> {
    let replicas = usize::try_from(config.replicas).unwrap_or(usize::MAX);
    if let Some(url) = &config.nats {
        let mut nats = NatsOptions::new(url.clone());
        nats.stream.clone_from(&config.stream);
        nats.replicas = replicas;
        return Some(nats.into());
    }
    let brokers = config.kafka.as_ref()?;
    let mut kafka = KafkaOptions::new(brokers.clone());
    kafka.topic.clone_from(&config.topic);
    kafka.replicas = i32::try_from(replicas).unwrap_or(i32::MAX);
    kafka.partitions = i32::try_from(config.partitions).unwrap_or(i32::MAX);
    kafka.properties = config
        .kafka_properties
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Some(kafka.into())
}

impl ShipTask {
    /// Stops the shipper after the batch in flight, waiting at most
    /// [`STOP_GRACE`]. A batch cut off is whole on the broker or not
    /// there at all, and the next start resumes after what is there.
    pub(crate) fn stop(self, runtime: &Runtime) {
        let ShipTask { stop, mut task } = self;
        let _ = stop.send(true);
        runtime.block_on(async {
            match tokio::time::timeout(STOP_GRACE, &mut task).await {
                // Its own error was logged, and is in its status.
                Ok(_) => {}
                Err(_) => {
                    warn!("the shipper did not stop in time; cutting its batch off");
                    task.abort();
                }
            }
        });
    }
}
