// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Shared rings (SQ, RQ, SRQ, CQ): the header with the producer and consumer
//! indices and the flags word, and the index arithmetic both sides use.
//!
//! A ring is a [`RING_HEADER_SIZE`]-byte header, then `entries` elements of a
//! fixed size. A CQ or SRQ ring is a mapping of its own; a QP's SQ and RQ rings
//! share one ([`qp_rq_offset`]), so that a QP wastes the tail of one page, not
//! of two. Indices are free-running `u32`s; slot = index &
//! (entries - 1), `entries` a power of two. The producer side writes only
//! `producer`, the consumer side only `consumer`. Neither side trusts the other's
//! index beyond masking it: the kernel keeps its own copy of the index it owns and
//! never reads it back from the shared page.

use core::sync::atomic::AtomicU32;

/// Bytes reserved for the [`RingHeader`] at the start of every ring mapping; the
/// elements start here, on a cache line. Not a whole page: a small ring (a
/// perftest RQ of one entry, a short CQ) then fits one page with its header.
pub const RING_HEADER_SIZE: usize = 256;

/// Cache line size the header fields are spread over.
pub const CACHE_LINE: usize = 64;

/// Largest number of elements in one ring.
pub const MAX_RING_ENTRIES: u32 = 1 << 15;

/// The header of a shared ring. Each index has its own cache line so the two
/// sides do not write the same line.
#[repr(C)]
pub struct RingHeader {
    /// Free-running count of elements produced. SQ/RQ/SRQ: written by userspace
    /// (release store after the element); CQ: written by the kernel.
    pub producer: AtomicU32,
    _pad0: [u8; CACHE_LINE - 4],
    /// Free-running count of elements consumed (slots free again). SQ/RQ/SRQ:
    /// written by the kernel; CQ: written by userspace.
    pub consumer: AtomicU32,
    _pad1: [u8; CACHE_LINE - 4],
    /// Ring state bits: [`SQ_IDLE`] on an SQ, [`CQ_ARM_NEXT`] /
    /// [`CQ_ARM_SOLICITED`] / [`CQ_OVERFLOW`] on a CQ. Updated by atomic
    /// read-modify-write from both sides.
    pub flags: AtomicU32,
    _pad2: [u8; CACHE_LINE - 4],
}

impl RingHeader {
    /// A header with both indices and the flags zero.
    pub const fn new() -> Self {
        Self {
            producer: AtomicU32::new(0),
            _pad0: [0; CACHE_LINE - 4],
            consumer: AtomicU32::new(0),
            _pad1: [0; CACHE_LINE - 4],
            flags: AtomicU32::new(0),
            _pad2: [0; CACHE_LINE - 4],
        }
    }
}

impl Default for RingHeader {
    fn default() -> Self {
        Self::new()
    }
}

/// SQ flag, set by the kernel: its TX worker has run out of work and will not look
/// at the SQ again until kicked. The provider rings the doorbell after publishing
/// a new producer only if it then sees this bit; the kernel sets it and then
/// re-reads the producer, so a post racing with it is never lost.
pub const SQ_IDLE: u32 = 1 << 0;

/// CQ flag, set by userspace (`ibv_req_notify_cq(cq, 0)`): raise a completion
/// event on the next CQE. The kernel clears both arm bits when it raises one.
pub const CQ_ARM_NEXT: u32 = 1 << 0;
/// CQ flag, set by userspace (`ibv_req_notify_cq(cq, 1)`): raise a completion
/// event on the next CQE of a solicited receive or of an error
/// (RFC 5040 §5.3 Solicited Event).
pub const CQ_ARM_SOLICITED: u32 = 1 << 1;
/// CQ flag, set by the kernel: a CQE was dropped because the ring was full; the
/// kernel also raises `IB_EVENT_CQ_ERR`.
pub const CQ_OVERFLOW: u32 = 1 << 2;

/// The number of ring entries for a request of `requested` (rounded up to a
/// power of two, at least 1), or `None` above `max` or [`MAX_RING_ENTRIES`].
pub const fn ring_entries(requested: u32, max: u32) -> Option<u32> {
    let want = if requested == 0 { 1 } else { requested };
    let limit = if max < MAX_RING_ENTRIES {
        max
    } else {
        MAX_RING_ENTRIES
    };
    if want > limit {
        return None;
    }
    // want <= 2^15, so this cannot overflow.
    Some(want.next_power_of_two())
}

/// Byte length of a ring mapping with `entries` elements of `elem_size` bytes
/// (before rounding to pages), or `None` if it overflows.
pub const fn ring_bytes(entries: u32, elem_size: usize) -> Option<usize> {
    match (entries as usize).checked_mul(elem_size) {
        Some(n) => n.checked_add(RING_HEADER_SIZE),
        None => None,
    }
}

/// Byte offset of a QP's RQ ring in the mapping it shares with the SQ ring of
/// `num_sqe` elements: right behind the SQEs (a multiple of [`CACHE_LINE`], as
/// the SQE size is). The SQ ring starts the mapping. `None` if it overflows.
pub const fn qp_rq_offset(num_sqe: u32, sqe_size: usize) -> Option<usize> {
    match ring_bytes(num_sqe, sqe_size) {
        Some(n) => match n.checked_add(CACHE_LINE - 1) {
            Some(m) => Some(m / CACHE_LINE * CACHE_LINE),
            None => None,
        },
        None => None,
    }
}

/// Byte length of a QP's mapping: the SQ ring of `num_sqe` elements and,
/// unless `num_rqe` is 0 (the QP uses an SRQ), the RQ ring behind it (before
/// rounding to pages). `None` if it overflows.
pub const fn qp_ring_bytes(
    num_sqe: u32,
    sqe_size: usize,
    num_rqe: u32,
    rqe_size: usize,
) -> Option<usize> {
    if num_rqe == 0 {
        return ring_bytes(num_sqe, sqe_size);
    }
    match (
        qp_rq_offset(num_sqe, sqe_size),
        ring_bytes(num_rqe, rqe_size),
    ) {
        (Some(at), Some(rq)) => at.checked_add(rq),
        _ => None,
    }
}

/// Byte offset of the element at free-running `index` in a ring of `entries`
/// (a power of two) elements of `elem_size` bytes. Masking makes any index,
/// however corrupt, land inside the ring.
pub const fn slot_offset(index: u32, entries: u32, elem_size: usize) -> usize {
    let slot = (index & entries.wrapping_sub(1)) as usize;
    RING_HEADER_SIZE + slot * elem_size
}

/// Number of elements between `consumer` and `producer`, if it is a plausible
/// fill level of a ring of `entries` elements; `None` if a corrupt index claims
/// more.
pub const fn ring_used(producer: u32, consumer: u32, entries: u32) -> Option<u32> {
    let used = producer.wrapping_sub(consumer);
    if used > entries {
        None
    } else {
        Some(used)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use core::mem::{offset_of, size_of};

    #[test]
    fn header_fields_on_own_cache_lines() {
        assert_eq!(offset_of!(RingHeader, producer), 0);
        assert_eq!(offset_of!(RingHeader, consumer), 64);
        assert_eq!(offset_of!(RingHeader, flags), 128);
        assert_eq!(size_of::<RingHeader>(), 192);
        assert!(size_of::<RingHeader>() <= RING_HEADER_SIZE);
    }

    #[test]
    fn qp_rings_share_one_mapping() {
        use crate::wqe::{RQE_SIZE, SQE_SIZE};
        // perftest's depths: 128 SQEs and a one-entry RQ fit five pages,
        // where two mappings of their own take six.
        let at = qp_rq_offset(128, SQE_SIZE).unwrap();
        assert_eq!(at, RING_HEADER_SIZE + 128 * SQE_SIZE);
        assert_eq!(at % CACHE_LINE, 0);
        let len = qp_ring_bytes(128, SQE_SIZE, 1, RQE_SIZE).unwrap();
        assert_eq!(len, at + RING_HEADER_SIZE + RQE_SIZE);
        assert_eq!(len.div_ceil(4096), 5);
        assert_eq!(
            qp_ring_bytes(128, SQE_SIZE, 0, RQE_SIZE),
            ring_bytes(128, SQE_SIZE)
        );
        assert_eq!(
            qp_ring_bytes(MAX_RING_ENTRIES, SQE_SIZE, MAX_RING_ENTRIES, RQE_SIZE),
            Some(2 * RING_HEADER_SIZE + MAX_RING_ENTRIES as usize * (SQE_SIZE + RQE_SIZE))
        );
        assert_eq!(qp_rq_offset(u32::MAX, usize::MAX), None);
    }

    #[test]
    fn entries_round_up_and_clamp() {
        assert_eq!(ring_entries(0, 64), Some(1));
        assert_eq!(ring_entries(1, 64), Some(1));
        assert_eq!(ring_entries(3, 64), Some(4));
        assert_eq!(ring_entries(64, 64), Some(64));
        assert_eq!(ring_entries(65, 64), None);
        assert_eq!(ring_entries(u32::MAX, u32::MAX), None);
        assert_eq!(
            ring_entries(MAX_RING_ENTRIES, u32::MAX),
            Some(MAX_RING_ENTRIES)
        );
        assert_eq!(ring_entries(MAX_RING_ENTRIES + 1, u32::MAX), None);
    }

    #[test]
    fn slots_wrap_and_mask() {
        assert_eq!(slot_offset(0, 8, 32), 256);
        assert_eq!(slot_offset(7, 8, 32), 256 + 7 * 32);
        assert_eq!(slot_offset(8, 8, 32), 256);
        assert_eq!(slot_offset(u32::MAX, 8, 192), 256 + 7 * 192);
        assert_eq!(ring_bytes(8, 192), Some(256 + 1536));
        // Elements stay 8-aligned (and on a cache line) in a page-aligned mapping.
        assert_eq!(RING_HEADER_SIZE % CACHE_LINE, 0);
        assert_eq!(ring_bytes(u32::MAX, usize::MAX), None);
    }

    #[test]
    fn used_survives_wrap_and_rejects_garbage() {
        assert_eq!(ring_used(5, 3, 8), Some(2));
        assert_eq!(ring_used(1, u32::MAX, 8), Some(2));
        assert_eq!(ring_used(8, 0, 8), Some(8));
        assert_eq!(ring_used(9, 0, 8), None);
        assert_eq!(ring_used(0, 1, 8), None);
    }
}
