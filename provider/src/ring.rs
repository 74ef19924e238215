// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! A ring the kernel shares with the provider (`rsiw_abi::ring`): the mapping of
//! its `mmap` key on the uverbs fd, the header words, and element slots.

use crate::sys;
use core::ffi::{c_int, c_void};
use core::mem::{offset_of, size_of};
use core::ptr::{null_mut, NonNull};
use core::sync::atomic::AtomicU32;
use rsiw_abi::ring::{ring_bytes, slot_offset, RingHeader, MAX_RING_ENTRIES};

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

/// One mapped ring.
///
/// # Invariants
///
/// `base` is a live shared mapping of `len` bytes holding a [`RingHeader`]
/// and `entries` (a power of two) elements of `elem` bytes; it is unmapped only
/// by `Drop`.
pub struct Ring {
    base: NonNull<u8>,
    len: usize,
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
        let off = sys::__off_t::try_from(key).map_err(|_| sys::EPROTO as c_int)?;
        // SAFETY: a fresh shared mapping of the uverbs fd; the kernel checks that
        // `key` and `len` name one of this context's rings.
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
        // INVARIANT: mapped with the checked geometry.
        Ok(Self {
            base,
            len,
            entries,
            elem,
        })
    }

    /// Elements in the ring.
    pub fn entries(&self) -> u32 {
        self.entries
    }

    /// The mapping's first byte (its header), for `rsiwdv_query_qp`.
    pub fn base(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// Bytes per element.
    pub fn stride(&self) -> usize {
        self.elem
    }

    fn word(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: the header lies at the start of the mapping (type invariant),
        // page-aligned, so every u32 field is aligned; the kernel writes these
        // words concurrently, which atomics allow.
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
        // (page-aligned base, element sizes multiples of 8); the kernel does not
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

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: our mapping (type invariant), not used after this.
        unsafe { sys::munmap(self.base.as_ptr().cast::<c_void>(), self.len) };
    }
}

/// Two mappings of one ring in a temporary file: the provider's view and a
/// stand-in for the kernel's, for host tests of the ring protocol.
#[cfg(test)]
pub fn shared_pair(entries: u32, elem: usize) -> (Ring, Ring) {
    use std::os::fd::AsRawFd;
    let len = ring_bytes(entries, elem)
        .expect("ring size")
        .next_multiple_of(4096);
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
    f.set_len(len as u64).expect("size the ring file");
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
}
