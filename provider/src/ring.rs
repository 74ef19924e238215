// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! A ring the kernel shares with the provider (`rsiw_abi::ring`): the mapping of
//! its `mmap` key on the uverbs fd (a QP's SQ and RQ rings share one), the
//! header words, and element slots.

use crate::sys;
use core::ffi::{c_int, c_void};
use core::mem::{offset_of, size_of};
use core::ptr::{null_mut, NonNull};
use core::sync::atomic::AtomicU32;
use rsiw_abi::{
    ring::{qp_ring_bytes, qp_rq_offset, ring_bytes, slot_offset, RingHeader, MAX_RING_ENTRIES},
    wqe::{RQE_SIZE, SQE_SIZE},
};
use std::sync::Arc;

/// The `(entries, length)` of a ring the kernel described, if they are
/// consistent: a power-of-two element count and a mapping that holds them.
pub fn check_geometry(entries: u32, len: u64, elem: usize) -> Option<(u32, usize)> {
    if !entries.is_power_of_two() || entries > MAX_RING_ENTRIES {
        return None;
    }
    let len = usize::try_from(len).ok()?;
    if len < ring_bytes(entries, elem)? {
        return None;
    }
    Some((entries, len))
}

/// The geometry of a QP's rings the kernel described (`CreateQpResp`), if
/// consistent: the SQ ring at the start of a mapping of `len` bytes and,
/// with `rq` (its offset and element count; `None` with an SRQ), the RQ
/// ring where [`qp_rq_offset`] puts it. Returns the mapping's length.
pub fn check_qp_geometry(num_sqe: u32, len: u64, rq: Option<(u64, u32)>) -> Option<usize> {
    let len = check_geometry(num_sqe, len, SQE_SIZE)?.1;
    let num_rqe = match rq {
        Some((at, n)) => {
            let at_abi = usize::try_from(at).ok()? == qp_rq_offset(num_sqe, SQE_SIZE)?;
            if !at_abi || !n.is_power_of_two() || n > MAX_RING_ENTRIES {
                return None;
            }
            n
        }
        None => 0,
    };
    (len >= qp_ring_bytes(num_sqe, SQE_SIZE, num_rqe, RQE_SIZE)?).then_some(len)
}

/// A shared mapping of the uverbs fd: one ring's, or a QP's two rings'.
///
/// # Invariants
///
/// `base` is a live shared mapping of `len` bytes; it is unmapped only by
/// `Drop`.
struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; the queue locks and the atomics
// order every access.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps the `len` bytes the kernel's `key` names; the errno on failure.
    fn new(cmd_fd: c_int, key: u64, len: usize) -> Result<Arc<Self>, c_int> {
        let off = sys::__off_t::try_from(key).map_err(|_| sys::EPROTO as c_int)?;
        // SAFETY: a fresh shared mapping of the uverbs fd; the kernel checks that
        // `key` and `len` name one of this context's mappings.
        let p = unsafe {
            sys::mmap(
                null_mut(),
                len,
                (sys::PROT_READ | sys::PROT_WRITE) as c_int,
                sys::MAP_SHARED as c_int,
                cmd_fd,
                off,
            )
        };
        if p.is_null() || p as isize == -1 {
            return Err(crate::cmem::errno());
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or(sys::ENOMEM as c_int)?;
        // INVARIANT: just mapped, `len` bytes.
        Ok(Arc::new(Self { base, len }))
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our mapping (type invariant), not used after this.
        unsafe { sys::munmap(self.base.as_ptr().cast::<c_void>(), self.len) };
    }
}

/// One mapped ring.
///
/// # Invariants
///
/// `base` points into `map`, at a [`RingHeader`] followed by `entries` (a
/// power of two) elements of `elem` bytes, all inside the mapping; `base` is
/// page-aligned or on a cache line behind the elements of another ring
/// ([`qp_rq_offset`]).
pub struct Ring {
    /// Held for its `Drop`: the mapping goes with the last ring in it.
    _map: Arc<Mapping>,
    base: NonNull<u8>,
    entries: u32,
    elem: usize,
}

// SAFETY: the mapping is plain shared memory; the queue locks and the atomics
// order every access.
unsafe impl Send for Ring {}
// SAFETY: as above.
unsafe impl Sync for Ring {}

impl Ring {
    /// Maps the ring the kernel created with `key`; the errno on failure.
    pub fn map(
        cmd_fd: c_int,
        key: u64,
        len: u64,
        entries: u32,
        elem: usize,
    ) -> Result<Self, c_int> {
        let (entries, len) = check_geometry(entries, len, elem).ok_or(sys::EPROTO as c_int)?;
        let map = Mapping::new(cmd_fd, key, len)?;
        // INVARIANT: the ring starts the mapping, whose length holds it (checked).
        Ok(Self {
            base: map.base,
            _map: map,
            entries,
            elem,
        })
    }

    /// Maps a QP's rings (`CreateQpResp`): the SQ ring of `num_sqe` SQEs
    /// and, with `rq` (its offset and element count; `None` with an SRQ), the
    /// RQ ring, both in the mapping of `key`; the errno on failure.
    pub fn map_qp(
        cmd_fd: c_int,
        key: u64,
        len: u64,
        num_sqe: u32,
        rq: Option<(u64, u32)>,
    ) -> Result<(Self, Option<Self>), c_int> {
        let len = check_qp_geometry(num_sqe, len, rq).ok_or(sys::EPROTO as c_int)?;
        let map = Mapping::new(cmd_fd, key, len)?;
        let rq = match rq {
            Some((at, n)) => {
                let at = usize::try_from(at).map_err(|_| sys::EPROTO as c_int)?;
                // SAFETY: `at` is the RQ ring's offset, inside the mapping (checked).
                let base = unsafe { NonNull::new_unchecked(map.base.as_ptr().add(at)) };
                // INVARIANT: the RQ ring lies at `at` inside the mapping (checked).
                Some(Self {
                    _map: map.clone(),
                    base,
                    entries: n,
                    elem: RQE_SIZE,
                })
            }
            None => None,
        };
        // INVARIANT: the SQ ring starts the mapping, which holds it (checked).
        let sq = Self {
            base: map.base,
            _map: map,
            entries: num_sqe,
            elem: SQE_SIZE,
        };
        Ok((sq, rq))
    }

    /// Elements in the ring.
    pub fn entries(&self) -> u32 {
        self.entries
    }

    /// The ring's first byte (its header), for `rsiwdv_query_qp`.
    pub fn base(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// Bytes per element.
    pub fn stride(&self) -> usize {
        self.elem
    }

    fn word(&self, offset: usize) -> &AtomicU32 {
        // The header lies at `base` inside the mapping, page-aligned or on a
        // cache line (type invariant), so every u32 field is aligned; `_map`
        // keeps the mapping alive as long as `self`.
        // SAFETY: in bounds and aligned (above); the kernel writes these words
        // concurrently, which atomics allow.
        unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU32>() }
    }

    /// The header's producer index.
    pub fn producer(&self) -> &AtomicU32 {
        self.word(offset_of!(RingHeader, producer))
    }

    /// The header's consumer index.
    pub fn consumer(&self) -> &AtomicU32 {
        self.word(offset_of!(RingHeader, consumer))
    }

    /// The header's flags word.
    pub fn flags(&self) -> &AtomicU32 {
        self.word(offset_of!(RingHeader, flags))
    }

    fn slot(&self, index: u32) -> *mut u8 {
        // SAFETY: slot_offset masks the index into the ring, which the mapping
        // holds (type invariant).
        unsafe {
            self.base
                .as_ptr()
                .add(slot_offset(index, self.entries, self.elem))
        }
    }

    /// Stores `v` in the slot of free-running `index`. The slot must be ours
    /// (between the consumer and a producer index not yet published).
    pub fn put<T: Copy>(&self, index: u32, v: &T) {
        assert!(size_of::<T>() <= self.elem);
        // SAFETY: in bounds (slot, size checked); element slots are 8-aligned
        // (cache-line base, element sizes multiples of 8); the kernel does not
        // read the slot before the producer index covers it.
        unsafe { self.slot(index).cast::<T>().write_volatile(*v) }
    }

    /// A copy of the element in the slot of free-running `index`.
    pub fn get<T: Copy>(&self, index: u32) -> T {
        assert!(size_of::<T>() <= self.elem);
        // SAFETY: as in `put`; the producer index published the slot, and every
        // bit pattern is a valid ABI element (integers only).
        unsafe { self.slot(index).cast::<T>().read_volatile() }
    }
}

/// A temporary file of `len` bytes, already unlinked, standing in for the
/// kernel's ring memory in host tests.
#[cfg(test)]
fn ring_file(len: u64) -> std::fs::File {
    let path = std::env::temp_dir().join(format!(
        "rsiw-ring-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .expect("temp ring file");
    let _ = std::fs::remove_file(&path);
    f.set_len(len).expect("size the ring file");
    f
}

/// Two mappings of one ring in a temporary file: the provider's view and a
/// stand-in for the kernel's, for host tests of the ring protocol.
#[cfg(test)]
pub fn shared_pair(entries: u32, elem: usize) -> (Ring, Ring) {
    use std::os::fd::AsRawFd;
    let len = ring_bytes(entries, elem)
        .expect("ring size")
        .next_multiple_of(4096);
    let f = ring_file(len as u64);
    let a = Ring::map(f.as_raw_fd(), 0, len as u64, entries, elem).expect("map ring");
    let b = Ring::map(f.as_raw_fd(), 0, len as u64, entries, elem).expect("map ring again");
    (a, b)
}

#[cfg(test)]
mod test {
    use super::*;
    use rsiw_abi::{cqe::CQE_SIZE, wqe::SQE_SIZE};

    #[test]
    fn geometry_checks() {
        assert_eq!(check_geometry(8, 8192, SQE_SIZE), Some((8, 8192)));
        assert_eq!(
            check_geometry(8, 256 + 8 * SQE_SIZE as u64, SQE_SIZE),
            Some((8, 1280))
        );
        assert_eq!(
            check_geometry(8, 256 + 8 * SQE_SIZE as u64 - 1, SQE_SIZE),
            None
        );
        assert_eq!(check_geometry(6, 1 << 20, SQE_SIZE), None);
        assert_eq!(check_geometry(0, 1 << 20, CQE_SIZE), None);
        assert_eq!(check_geometry(1 << 31, u64::MAX, CQE_SIZE), None);
    }

    #[test]
    fn qp_geometry_checks() {
        let at = 256 + 128 * SQE_SIZE as u64;
        assert_eq!(check_qp_geometry(128, 20480, Some((at, 1))), Some(20480));
        assert_eq!(check_qp_geometry(128, 16384, None), None);
        assert_eq!(check_qp_geometry(128, 20480, None), Some(20480));
        // The RQ ring where the ABI does not put it, or past the mapping.
        assert_eq!(check_qp_geometry(128, 20480, Some((at + 64, 1))), None);
        assert_eq!(check_qp_geometry(128, 20480, Some((0, 1))), None);
        assert_eq!(check_qp_geometry(128, 20480, Some((at, 64))), None);
        assert_eq!(check_qp_geometry(128, 20480, Some((at, 3))), None);
        assert_eq!(check_qp_geometry(128, 20480, Some((u64::MAX, 1))), None);
    }

    #[test]
    fn qp_rings_in_one_mapping() {
        use std::os::fd::AsRawFd;
        let at = qp_rq_offset(4, SQE_SIZE).expect("offset");
        let len = 4096u64;
        let f = ring_file(len);
        let (sq, rq) =
            Ring::map_qp(f.as_raw_fd(), 0, len, 4, Some((at as u64, 2))).expect("map QP rings");
        let rq = rq.expect("an RQ ring");
        assert_eq!(rq.base() as usize - sq.base() as usize, at);
        rq.producer()
            .store(7, core::sync::atomic::Ordering::Relaxed);
        sq.put(3, &[0xa5u8; SQE_SIZE]);
        // The RQ's header follows the last SQE: neither overwrites the other.
        assert_eq!(sq.get::<[u8; SQE_SIZE]>(3), [0xa5u8; SQE_SIZE]);
        assert_eq!(rq.producer().load(core::sync::atomic::Ordering::Relaxed), 7);
        drop(sq);
        // The mapping outlives the SQ's ring while the RQ's uses it.
        assert_eq!(rq.producer().load(core::sync::atomic::Ordering::Relaxed), 7);
        assert_eq!(
            Ring::map_qp(f.as_raw_fd(), 0, len, 4, Some((at as u64 + 64, 2))).err(),
            Some(sys::EPROTO as c_int)
        );
    }
}
