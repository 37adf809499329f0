//! Applying fanotify mount events: one statmount per event, never a whole
//! reading (that is the point of this backend). A move also re-reads the
//! moved mount's submounts, whose mount points change with it unreported.

use std::sync::atomic::Ordering;
use std::time::Instant;

use weir_sys::fanotify::MountEvent;

use super::emit::write;
use super::worker::Worker;
use crate::change::{Change, ChangeKind, Seen};
use crate::table::Table;
use crate::{Result, source};

impl Worker {
    /// Reads and applies everything queued, batch by batch.
    pub(super) fn drain_events(&mut self) -> Result<()> {
        // Out of `self` while it is read, so the events can use the rest.
        let Some(mut watch) = self.watch.take() else {
            return Ok(());
        };
        let r = self.drain_from(&mut watch);
        self.watch = Some(watch);
        r
    }

    fn drain_from(&mut self, watch: &mut weir_sys::fanotify::MountWatch) -> Result<()> {
        let mut evs = std::mem::take(&mut self.event_buf);
        let mut changes = Vec::new();
        loop {
            evs.clear();
            let n = watch.read_batch(&mut evs)?;
            if n == 0 {
                break;
            }
            let now = Instant::now();
            self.storm = now.saturating_duration_since(self.last_event) < self.opts.batch * 2;
            self.last_event = now;
            self.stats.events.fetch_add(n as u64, Ordering::Relaxed);
            self.stats.event_reads.fetch_add(1, Ordering::Relaxed);
            let state = self.state.clone();
            {
                let mut st = write(&state);
                let table = &mut st.table;
                for ev in &evs {
                    match *ev {
                        MountEvent::Overflow => {
                            self.stats.overflows.fetch_add(1, Ordering::Relaxed);
                            self.need_resync = true;
                        }
                        MountEvent::Attach(id) | MountEvent::Move(id) => {
                            let fresh = source::stat_one(&mut self.sm, id)?;
                            match (table.get(id), fresh) {
                                (None, Some(m)) => {
                                    table.insert(m.clone());
                                    changes.push(event(ChangeKind::Attach(m)));
                                }
                                (None, None) => {
                                    // Attached and gone again before this read.
                                    if self.gone.insert(id) {
                                        changes.push(event(ChangeKind::AttachGone { id }));
                                    }
                                }
                                (Some(old), Some(new)) => {
                                    let moved = old.mount_point != new.mount_point;
                                    changes.extend(Change::between(old, &new, Seen::Event));
                                    table.insert(new);
                                    if moved {
                                        self.restat_below(table, id, &mut changes)?;
                                    }
                                }
                                // Moved, then gone: its detach event follows.
                                (Some(_), None) => {}
                            }
                        }
                        MountEvent::Detach(id) => {
                            if let Some(m) = table.remove(id) {
                                changes.push(event(ChangeKind::Detach(m)));
                            } else if self.gone.remove(&id) {
                                changes.push(event(ChangeKind::DetachGone { id }));
                            }
                        }
                    }
                }
                self.record(&mut st, &changes);
            }
            self.notify(&changes);
            changes.clear();
        }
        self.event_buf = evs;
        Ok(())
    }

    /// After a move, reads the moved mount's submounts again: their mount
    /// points moved with it, and the kernel reports only the mount that
    /// was moved. Without this they would stay at their old paths until
    /// the next comparison, and be logged from it.
    fn restat_below(
        &mut self,
        table: &mut Table,
        id: u64,
        changes: &mut Vec<Change>,
    ) -> Result<()> {
        for sub in table.descendants(id) {
            let Some(old) = table.get(sub) else { continue };
            // A submount gone already has its detach event to come.
            if let Some(new) = source::stat_one(&mut self.sm, sub)? {
                changes.extend(Change::between(old, &new, Seen::Event));
                table.insert(new);
            }
        }
        Ok(())
    }
}

fn event(kind: ChangeKind) -> Change {
    Change {
        kind,
        seen: Seen::Event,
    }
}
