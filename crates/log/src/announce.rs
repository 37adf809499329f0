//! Announcements: what the MARK records that retention writes say, and
//! why the consumer state keeps them until they are durable.
//!
//! Retention evicts consumers and, under the drop policy, drops segments
//! that consumers still need. Each is announced with a MARK record. The
//! change itself is made durable by saving the consumer state or removing
//! the segment, and the MARK only at the log's next fsync: a power cut in
//! between would keep the change and lose its announcement. So the save
//! that carries the change also lists the announcement as owed, and it
//! stays listed until its MARK is durable; an open announces again every
//! one still listed. After a crash an announcement may come twice, never
//! not at all.

use serde::{Deserialize, Serialize};

use crate::cursors::{Consumer, check_name};
use crate::kind::RecordType;
use crate::log::Inner;
use crate::record::{Field, Record};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Event {
    ConsumerEvicted,
    SegmentDropped,
}

/// Which limit made it happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Reason {
    IdleRecords,
    IdleTime,
    SizeLimit,
}

impl Event {
    fn as_str(self) -> &'static str {
        match self {
            Event::ConsumerEvicted => "consumer-evicted",
            Event::SegmentDropped => "segment-dropped",
        }
    }
}

impl Reason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Reason::IdleRecords => "idle-records",
            Reason::IdleTime => "idle-time",
            Reason::SizeLimit => "size-limit",
        }
    }
}

/// One MARK record's content, as `consumers.json` lists it while owed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Announcement {
    pub(crate) event: Event,
    pub(crate) reason: Reason,
    /// The evicted consumer's name; empty for a dropped segment.
    pub(crate) consumer: String,
    /// The evicted consumer's id (ids are never reused, names may be); 0
    /// for a dropped segment.
    pub(crate) consumer_id: u32,
    /// The evicted consumer's cleared index, or the lowest of all
    /// consumers' for a dropped segment.
    pub(crate) cleared: u64,
    /// The last index committed at an eviction; the dropped segment's
    /// last index.
    pub(crate) through: u64,
}

impl Announcement {
    pub(crate) fn eviction(c: &Consumer, reason: Reason, last: u64) -> Announcement {
        Announcement {
            event: Event::ConsumerEvicted,
            reason,
            consumer: c.name.clone(),
            consumer_id: c.id,
            cleared: c.cleared,
            through: last,
        }
    }

    pub(crate) fn segment_dropped(cleared: u64, through: u64) -> Announcement {
        Announcement {
            event: Event::SegmentDropped,
            reason: Reason::SizeLimit,
            consumer: String::new(),
            consumer_id: 0,
            cleared,
            through,
        }
    }

    /// The rules a listed announcement keeps beyond its syntax, as
    /// [`Announcement::eviction`] and [`Announcement::segment_dropped`]
    /// make them: its name goes into a record as it is.
    pub(crate) fn check(&self) -> std::result::Result<(), &'static str> {
        let ok = match self.event {
            Event::ConsumerEvicted => {
                check_name(&self.consumer).is_ok()
                    && self.consumer_id != 0
                    && self.consumer_id != u32::MAX
            }
            Event::SegmentDropped => self.consumer.is_empty() && self.consumer_id == 0,
        };
        if ok {
            Ok(())
        } else {
            Err("an owed MARK whose consumer does not fit its event")
        }
    }

    /// Appends the MARK without waiting for room; its index if it found
    /// room. Retention must never wait on the ring it drains.
    pub(crate) fn try_append(&self, inner: &Inner) -> Option<u64> {
        let id = self.consumer_id.to_string();
        let cleared = self.cleared.to_string();
        let through = self.through.to_string();
        let fields = [
            Field {
                key: "event",
                value: self.event.as_str().as_bytes(),
            },
            Field {
                key: "reason",
                value: self.reason.as_str().as_bytes(),
            },
            Field {
                key: "consumer_id",
                value: id.as_bytes(),
            },
            Field {
                key: "cleared",
                value: cleared.as_bytes(),
            },
            Field {
                key: "through",
                value: through.as_bytes(),
            },
        ];
        let name = format!("{} {}", self.event.as_str(), self.consumer);
        let rec = Record::new(RecordType::MARK)
            .target(self.consumer.as_bytes())
            .name(name.trim_end().as_bytes())
            .fields(&fields);
        inner.try_append(&rec)
    }
}
