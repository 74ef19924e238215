// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Ring memory shared with the provider: `vmalloc_user` pages behind an
//! `rdma_user_mmap_entry`, and the only accesses the kernel makes to them
//! (atomic header words, whole-element copies in and out).

use super::compat::{AsBytes, FromBytes};
use super::{bindings, udata::Udata};
use crate::abi::{
    cmd,
    cqe::Cqe,
    ring::{RingHeader, CACHE_LINE, RING_HEADER_SIZE},
    wqe,
};
use core::mem::{offset_of, size_of};
use core::ptr::NonNull;
use core::sync::atomic::AtomicU32;
use kernel::{prelude::*, sync::Arc};

// SAFETY: `#[repr(C)]` integers and byte arrays only, no padding (size asserted
// in the ABI crate's tests); every bit pattern is valid.
unsafe impl FromBytes for wqe::Sqe {}
// SAFETY: as above.
unsafe impl FromBytes for wqe::Rqe {}
// SAFETY: `#[repr(C)]` integers only, no padding (the ABI crate asserts the size).
unsafe impl AsBytes for Cqe {}
// SAFETY: `#[repr(C)]` `u32`/`u64` fields in 4+4+8+8 order, no padding.
unsafe impl AsBytes for cmd::CreateCqResp {}
// SAFETY: `#[repr(C)]` four `u32` then four `u64`, no padding.
unsafe impl AsBytes for cmd::CreateQpResp {}
// SAFETY: `#[repr(C)]` two `u32` then two `u64`, no padding.
unsafe impl AsBytes for cmd::CreateSrqResp {}

// The doorbell ids of the C method declaration must be the ABI's.
const _: () = assert!(
    bindings::rsiw_uq_ids_RSIW_METHOD_QP_DOORBELL == cmd::METHOD_QP_DOORBELL as u32
        && bindings::rsiw_uq_ids_RSIW_ATTR_DOORBELL_QP_HANDLE
            == cmd::ATTR_DOORBELL_QP_HANDLE as u32
);

/// A ring mapping the provider can `mmap` through the uverbs fd.
///
/// # Invariants
///
/// `m` points to a live `rsiw_uq_mmap` whose `vaddr` is page-aligned memory of
/// `len` bytes (zeroed at creation); it stays allocated until `Drop` removes
/// the entry (the entry's last reference then frees it, after any user
/// mapping is gone). Userspace may write any byte of it at any time.
pub(crate) struct RingMem {
    m: NonNull<bindings::rsiw_uq_mmap>,
    vaddr: NonNull<u8>,
    len: usize,
    key: u64,
}

// SAFETY: the memory is only accessed through atomics and volatile copies,
// which are fine from any thread; the entry may be removed from any thread.
unsafe impl Send for RingMem {}
// SAFETY: as above; no method takes `&mut self` for shared state.
unsafe impl Sync for RingMem {}

impl RingMem {
    /// Allocates `len` bytes (rounded up to pages) mappable by the user of
    /// `udata`'s ucontext. Process context (sleeps).
    pub(crate) fn new(udata: &Udata<'_>, len: usize) -> Result<Self> {
        let mut key = 0u64;
        let mut err = 0;
        // SAFETY: `udata` is the driver udata of a live uverbs call, so it sits
        // in a `uverbs_attr_bundle` whose context is live for the call.
        let uctx = unsafe { bindings::rsiw_shim_uq_ucontext(udata.as_raw()) };
        if uctx.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `uctx` is live; `key`/`err` are valid for writes.
        let m = unsafe { bindings::rsiw_shim_uq_mmap_new(uctx, len, &mut key, &mut err) };
        let Some(m) = NonNull::new(m) else {
            return Err(Error::from_errno(err));
        };
        // SAFETY: `m` is live (just created); C set `vaddr` and the rounded `len`.
        let (vaddr, len) = unsafe { ((*m.as_ptr()).vaddr.cast::<u8>(), (*m.as_ptr()).len) };
        let Some(vaddr) = NonNull::new(vaddr) else {
            // SAFETY: `m` is live and not used afterwards.
            unsafe { bindings::rsiw_shim_uq_mmap_remove(m.as_ptr()) };
            return Err(ENOMEM);
        };
        // INVARIANT: the C function returns a live entry with `len` bytes at `vaddr`.
        Ok(Self { m, vaddr, len, key })
    }

    /// The `mmap` offset the provider passes to map this ring.
    pub(crate) fn key(&self) -> u64 {
        self.key
    }

    /// Length of the mapping in bytes (whole pages).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The ring whose header lies at byte `at` of this mapping; `None` unless
    /// `at` is on a cache line and the header lies inside the mapping.
    pub(crate) fn view(self: &Arc<Self>, at: usize) -> Option<RingView> {
        let end = at.checked_add(RING_HEADER_SIZE)?;
        if at % CACHE_LINE != 0 || end > self.len {
            return None;
        }
        // INVARIANT: checked just above.
        Some(RingView {
            mem: self.clone(),
            at,
        })
    }

    /// A copy of the `T` at `offset`, taken once (userspace may be writing it);
    /// `None` if it does not lie inside the ring.
    pub(crate) fn read<T: FromBytes>(&self, offset: usize) -> Option<T> {
        let end = offset.checked_add(size_of::<T>())?;
        if end > self.len || offset % core::mem::align_of::<T>() != 0 {
            return None;
        }
        if size_of::<T>() % 8 == 0 && offset % 8 == 0 {
            // Word by word: a whole volatile `T` is copied one byte at a time.
            let mut out = core::mem::MaybeUninit::<T>::uninit();
            let words = size_of::<T>() / 8;
            // SAFETY: in bounds, 8-aligned (page-aligned `vaddr`, `offset % 8 == 0`);
            // each word loaded once; all of `out` written; `T: FromBytes`.
            unsafe {
                let src = self.vaddr.as_ptr().add(offset).cast::<u64>();
                let dst = out.as_mut_ptr().cast::<u64>();
                for i in 0..words {
                    dst.add(i).write_unaligned(src.add(i).read_volatile());
                }
                return Some(out.assume_init());
            }
        }
        // SAFETY: in bounds and aligned (checked); any bit pattern is a valid
        // `T` (`FromBytes`); a volatile copy never assumes the bytes stay put.
        Some(unsafe { core::ptr::read_volatile(self.vaddr.as_ptr().add(offset).cast::<T>()) })
    }

    /// Writes `v` at `offset`; `false` if it does not lie inside the ring.
    pub(crate) fn write<T: AsBytes + Copy>(&self, offset: usize, v: &T) -> bool {
        let Some(end) = offset.checked_add(size_of::<T>()) else {
            return false;
        };
        if end > self.len || offset % core::mem::align_of::<T>() != 0 {
            return false;
        }
        if size_of::<T>() % 8 == 0 && offset % 8 == 0 {
            // Word by word, as in `read`. The memory is ours to write and
            // userspace reads it only after the producer index says so.
            let src = (v as *const T).cast::<u64>();
            // SAFETY: in bounds, 8-aligned (page-aligned `vaddr`, `offset % 8 == 0`);
            // `v` is `size_of::<T>()` initialised bytes (`AsBytes`), read unaligned.
            unsafe {
                let dst = self.vaddr.as_ptr().add(offset).cast::<u64>();
                for i in 0..size_of::<T>() / 8 {
                    dst.add(i).write_volatile(src.add(i).read_unaligned());
                }
            }
            return true;
        }
        // SAFETY: in bounds and aligned (checked); the memory is ours to write
        // and userspace reads it only after the producer index says so.
        unsafe { core::ptr::write_volatile(self.vaddr.as_ptr().add(offset).cast::<T>(), *v) };
        true
    }
}

/// One ring of a [`RingMem`] (a QP's SQ and RQ rings share one): the mapping
/// and where its header lies.
///
/// # Invariants
///
/// `at` is a multiple of [`CACHE_LINE`] and `at + RING_HEADER_SIZE <= mem.len`.
pub(crate) struct RingView {
    mem: Arc<RingMem>,
    at: usize,
}

impl RingView {
    /// The mapping the ring lies in.
    pub(crate) fn mem(&self) -> &RingMem {
        &self.mem
    }

    /// Byte offset of the ring's header in the mapping.
    pub(crate) fn at(&self) -> usize {
        self.at
    }

    fn word(&self, field: usize) -> &AtomicU32 {
        const _: () = assert!(size_of::<RingHeader>() <= RING_HEADER_SIZE);
        // The header's `RING_HEADER_SIZE` bytes lie inside the mapping (type
        // invariant) and `field` is a `RingHeader` field's offset: the word is
        // in bounds, and 4-aligned (cache-line `at` in page-aligned memory);
        // the `Arc` keeps the memory alive as long as `self`.
        let p = self.mem.vaddr.as_ptr().wrapping_add(self.at + field);
        // SAFETY: `p` is in bounds and aligned (above); `AtomicU32` tolerates
        // concurrent writes by userspace.
        unsafe { &*p.cast::<AtomicU32>() }
    }

    /// The header's producer index.
    pub(crate) fn producer(&self) -> &AtomicU32 {
        self.word(offset_of!(RingHeader, producer))
    }

    /// The header's consumer index.
    pub(crate) fn consumer(&self) -> &AtomicU32 {
        self.word(offset_of!(RingHeader, consumer))
    }

    /// The header's flags word.
    pub(crate) fn flags(&self) -> &AtomicU32 {
        self.word(offset_of!(RingHeader, flags))
    }
}

impl Drop for RingMem {
    fn drop(&mut self) {
        // SAFETY: `m` is live (type invariant); after this no new mapping finds
        // it and the memory goes once the user's mappings are gone.
        unsafe { bindings::rsiw_shim_uq_mmap_remove(self.m.as_ptr()) };
    }
}
