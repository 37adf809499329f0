//! A record's frame on its way into the ring: encoded before the writer
//! has its index where it can be, and published once it has it.

use std::cell::RefCell;

use crate::clock::record_time_ns;
use crate::codec;
use crate::record::Record;
use crate::ring::{INLINE, Reservation, Ring};

thread_local! {
    /// Each writer thread encodes a frame too large for the stack into its
    /// own buffer, then publishes it from there.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A record's frame before it has its index, with its time taken.
///
/// A small frame (the common case) is encoded here, on the stack, before
/// the reservation: the encoding then overlaps the wait for the index
/// counter's cache line, which comes from the other core on almost every
/// contended append, and only the index is filled in after. A larger frame
/// is encoded once its index is known, in the thread's scratch buffer.
pub(super) struct Draft {
    time: u64,
    len: usize,
    buf: [u8; INLINE],
}

impl Draft {
    #[inline]
    pub(super) fn new(r: &Record<'_>, len: usize) -> Draft {
        let mut d = Draft {
            time: record_time_ns(),
            len,
            buf: [0; INLINE],
        };
        if let Some(frame) = d.buf.get_mut(..len) {
            codec::encode_unsealed_to(r, 0, d.time, frame);
        }
        d
    }

    /// Gives the frame its reserved index and publishes it. `r` is the
    /// record the draft was made from.
    #[inline]
    pub(super) fn publish(mut self, ring: &Ring, r: &Record<'_>, res: Reservation) {
        if self.len <= INLINE {
            codec::set_index(&mut self.buf[..self.len], res.index);
            if res.spill {
                ring.publish(res, &self.buf[..self.len]);
            } else {
                ring.publish_inline(res.index, &self.buf, self.len);
            }
            return;
        }
        SCRATCH.with(|s| {
            let mut buf = s.borrow_mut();
            buf.clear();
            codec::encode_unsealed_into(r, res.index, self.time, self.len, &mut buf);
            ring.publish(res, &buf);
            if buf.capacity() > 64 * 1024 {
                *buf = Vec::new();
            }
        });
    }
}
