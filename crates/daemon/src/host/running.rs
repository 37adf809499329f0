//! The daemon once its log is open: the trackers, the checkpointer, the API
//! server and the watchdog, started together, waited on, and stopped in
//! the order that lets each hand its shared state back.

use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::{error, info, warn};
use weir_log::Log;

use super::checkpointer::{self, Checkpointer, Job};
use super::health;
use super::marks;
use super::previous::{self, Prior};
use super::ship::{self, ShipTask};
use super::signals::Signals;
use super::socket::{Listener, SocketFile};
use super::sources::Sources;
use crate::api::{Access, ApiState, DaemonInfo, Limits, ReconcileReport};
use crate::checkpoint;
use crate::config::{ApiConfig, Config};
use crate::notify;
use crate::{Error, Result};

/// How long the server may take to finish its requests at shutdown.
const SERVER_GRACE: Duration = Duration::from_secs(10);
/// How long blocking API tasks (a `sync`) may take once the server is gone.
const RUNTIME_GRACE: Duration = Duration::from_secs(5);
/// How often the main loop looks at the trackers' threads.
const SOURCE_CHECK: Duration = Duration::from_secs(1);
/// The longest a health check waits for the API.
const HEALTH_DEADLINE: Duration = Duration::from_secs(5);

/// Why the daemon stops.
pub(crate) enum Ended {
    /// SIGTERM or SIGINT, by name.
    Signal(&'static str),
    /// A part of it failed on its own.
    Failed(Error),
}

/// Everything running.
pub(crate) struct Running {
    sources: Sources,
    ship: Option<ShipTask>,
    checkpointer: Checkpointer,
    checkpoint_path: std::path::PathBuf,
    boot_id: String,
    /// `None` once it has ended.
    server: Option<JoinHandle<std::result::Result<(), crate::api::Error>>>,
    shutdown: oneshot::Sender<()>,
    watchdog: Option<JoinHandle<()>>,
    socket_file: Option<SocketFile>,
}

impl Running {
    /// Starts the trackers from the last inventory, the checkpointer, the
    /// server and the watchdog, and tells systemd the daemon is ready.
    pub(crate) fn start(
        config: &Config,
        state_dir: &Path,
        log: &Arc<Log>,
        listener: Listener,
        runtime: &Runtime,
    ) -> Result<Running> {
        let checkpoint_path = state_dir.join(checkpoint::FILE_NAME);
        let prior = previous::load(&checkpoint_path);
        // Only a source has an inventory to miss.
        if let Some(why) = &prior.not_used
            && (config.mounts.enabled || config.devices.enabled)
        {
            marks::no_previous(log, why)?;
        }
        let sources = Sources::start(config, state_dir, log, &prior)?;
        let reconcile = report(&prior, &sources);
        info!(
            mounts = reconcile.mounts,
            devices = reconcile.devices,
            checkpoint = reconcile.checkpoint_used,
            "reconciled with the last inventory"
        );
        let Listener {
            listener,
            path: socket_path,
            group,
            file: socket_file,
            activated,
        } = listener;
        let listener = to_tokio(listener, runtime)?;
        let (ship, ship_view) = ship::start(&config.ship, log, runtime)?.unzip();
        let state = Arc::new(ApiState {
            log: log.clone(),
            mounts: sources.mounts.clone(),
            devices: sources.devices.clone(),
            fs: sources.fs.clone(),
            ship: ship_view,
            access: Access {
                group,
                public_read: config.access.public_read,
            },
            info: DaemonInfo::current(
                state_dir.to_owned(),
                socket_path.clone(),
                config.source.clone(),
            ),
            limits: limits(&config.api),
            reconcile,
        });
        // The last step that can fail: nothing is left running if it does
        // (the shipper's task is dropped with the runtime).
        let checkpointer = Checkpointer::start(Job {
            path: checkpoint_path.clone(),
            interval: Duration::from_secs(config.daemon.checkpoint_secs),
            boot_id: prior.boot_id.clone(),
            log: log.clone(),
            sources: sources.clone(),
        })
        .map_err(|source| Error::Runtime {
            what: "starting the checkpoint thread",
            source,
        })?;

        let (shutdown, stop_rx) = oneshot::channel::<()>();
        let server = runtime.spawn(crate::api::serve(listener, state, async move {
            let _ = stop_rx.await;
        }));
        let watchdog = notify::watchdog_interval().map(|interval| {
            info!(?interval, "systemd watchdog on");
            let sources = sources.clone();
            let socket_path = socket_path.clone();
            runtime.spawn(notify::watchdog(interval, move || {
                let sources = sources.clone();
                let socket = socket_path.clone();
                async move { health::check(&sources, &socket, HEALTH_DEADLINE).await }
            }))
        });
        notify::ready(&sources.status_line());
        info!(socket = %socket_path.display(), activated, "weir ready");
        Ok(Running {
            sources,
            ship,
            checkpointer,
            checkpoint_path,
            boot_id: prior.boot_id,
            server: Some(server),
            shutdown,
            watchdog,
            socket_file,
        })
    }

    /// Waits for a signal, the server's end or a tracker's end.
    pub(crate) fn wait(&mut self, runtime: &Runtime, signals: &mut Signals) -> Ended {
        let sources = &self.sources;
        let server = &mut self.server;
        let ended = runtime.block_on(async {
            let mut check = tokio::time::interval(SOURCE_CHECK);
            loop {
                tokio::select! {
                    name = signals.recv() => return Ended::Signal(name),
                    r = async { match server.as_mut() {
                        Some(s) => s.await,
                        None => std::future::pending().await,
                    } } => {
                        // Polled to its end: `stop` must not wait for it.
                        *server = None;
                        return Ended::Failed(match r {
                            Ok(Ok(())) => Error::ServerEnded,
                            Ok(Err(e)) => Error::Api(e),
                            Err(e) => Error::ServerTask(e),
                        });
                    }
                    _ = check.tick() => {
                        if let Some(source_name) = sources.ended() {
                            return Ended::Failed(Error::SourceEnded { source_name });
                        }
                    }
                }
            }
        });
        if let Ended::Failed(e) = &ended {
            error!(error = %weir_view::chain::error_chain(e), "stopping");
        }
        ended
    }

    /// Stops everything in order: the server (so no request holds the
    /// trackers), the watchdog, the shipper and the runtime, the checkpointer, then the
    /// trackers, and writes the final checkpoint. Returns the first failure
    /// after doing all of it.
    pub(crate) fn stop(self, runtime: Runtime, log: &Log) -> Result<()> {
        notify::stopping();
        let Running {
            sources,
            ship,
            checkpointer,
            checkpoint_path,
            boot_id,
            server,
            shutdown,
            watchdog,
            socket_file,
        } = self;
        let _ = shutdown.send(());
        let served = match server {
            // It ended early; `wait` has its outcome.
            None => Ok(()),
            Some(mut server) => runtime.block_on(async {
                match tokio::time::timeout(SERVER_GRACE, &mut server).await {
                    Ok(Ok(r)) => r.map_err(Error::Api),
                    Ok(Err(e)) => Err(Error::ServerTask(e)),
                    Err(_) => {
                        warn!("the API server did not stop in time; dropping its connections");
                        server.abort();
                        Ok(())
                    }
                }
            }),
        };
        if let Some(w) = watchdog {
            w.abort();
        }
        if let Some(s) = ship {
            s.stop(&runtime);
        }
        // New clients now find no socket and work directly.
        drop(socket_file);
        // Drops every task, and with them their hold on the trackers.
        runtime.shutdown_timeout(RUNTIME_GRACE);
        checkpointer.stop();

        // The last checkpoint, then the trackers stop: anything they log in
        // between is after its log_index, so the next start replays it.
        let mut last = sources.checkpoint(&boot_id, true);
        let stopped = sources.stop();
        last.clean = stopped.is_ok();
        let written = checkpointer::durable_write(&checkpoint_path, log, &last);
        if let Err(e) = &written {
            error!(error = %weir_view::chain::error_chain(e), "cannot write the final checkpoint");
        }
        served.and(stopped).and(written)
    }
}

/// What the start found, for `/v1/status`.
fn report(prior: &Prior, sources: &Sources) -> ReconcileReport {
    let (mounts, devices) = sources.reconciled();
    ReconcileReport {
        checkpoint_used: prior.checkpoint.is_some(),
        not_used_reason: prior.not_used.clone(),
        previous_clean: prior.checkpoint.as_ref().map(|c| c.clean),
        mounts,
        devices,
    }
}

/// `[api]` as the server's limits, saturated to `usize`.
fn limits(api: &ApiConfig) -> Limits {
    let sat = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    Limits {
        max_body_bytes: sat(api.max_body_bytes),
        max_followers: sat(api.max_followers),
    }
}

fn to_tokio(l: UnixListener, runtime: &Runtime) -> Result<tokio::net::UnixListener> {
    let err = |source| Error::Runtime {
        what: "handing the socket to the runtime",
        source,
    };
    l.set_nonblocking(true).map_err(err)?;
    let _in_runtime = runtime.enter();
    tokio::net::UnixListener::from_std(l).map_err(err)
}
