// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! A device's STag table (RFC 5040 §6.4) and the checked handle every access
//! to a region goes through: each copy sees the region as its check did.

use super::{Access, Mem, MemError, MemInit, Stamp, Want, MAX_MR};
use crate::slots::Slots;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{prelude::*, sync::Arc};

/// A region checked for an access: copies through it reach the region's
/// pages only while it is still valid with the key and registration the
/// check saw (an invalidation, deregistration or re-registration in between
/// makes them fail with `MemError::State`). Holding it keeps the region (and
/// pinned user pages) allocated, not valid.
pub(crate) struct Checked {
    mem: Arc<Mem>,
    stamp: Stamp,
}

impl Checked {
    /// Copies `data` into the region at `addr`.
    pub(crate) fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.mem.write(Want::Stamp(self.stamp), addr, data)
    }

    /// Copies from the region at `addr` into `out`.
    pub(crate) fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        self.mem.read(Want::Stamp(self.stamp), addr, out)
    }

    /// RFC 7306 §5.2.2: replaces the 8-byte word at `addr` by `f(old)`
    /// atomically against every other access to it; returns `old`.
    pub(crate) fn atomic64(&self, addr: u64, f: &dyn Fn(u64) -> u64) -> Result<u64, MemError> {
        self.mem.atomic64(Want::Stamp(self.stamp), addr, f)
    }

    /// Zero-copy transmit (`Mem::user_pages`).
    pub(crate) fn user_pages(
        &self,
        addr: u64,
        len: usize,
        f: impl FnMut(crate::ffi::zc::PageRef, usize, usize) -> Result,
    ) -> Result<bool, MemError> {
        self.mem.user_pages(Want::Stamp(self.stamp), addr, len, f)
    }
}

/// A device's STag table (RFC 5040 §6.4: a 24-bit index and an 8-bit key
/// the consumer may change): registration, lookup from any context, and the
/// checked access and invalidation every placement goes through.
#[pin_data]
pub(crate) struct MemTable {
    /// Regions and windows by STag index.
    #[pin]
    slots: Slots<Mem>,
    /// Key of the next STag handed out (low 8 bits used).
    next_key: AtomicU32,
}

impl MemTable {
    /// An empty table (indices 1..=`MAX_MR`).
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                slots <- Slots::new(1, MAX_MR as usize + 1),
                next_key: AtomicU32::new(0),
            }),
            GFP_KERNEL,
        )
    }

    /// Registers a region and returns it with its STag.
    pub(crate) fn register(&self, init: MemInit) -> Result<Arc<Mem>> {
        // The key varies so that a stale STag rarely matches a new region.
        let key = (self.next_key.fetch_add(1, Ordering::Relaxed) & 0xff) as u8;
        let mem = Mem::build(init, key)?;
        let index = self.slots.insert(mem.clone())?;
        // The table's limit keeps indices below 2^24.
        mem.index.store(index as u32, Ordering::Release);
        Ok(mem)
    }

    /// Removes `mem`'s STag; placements holding the `Arc` finish on memory
    /// that stays pinned until the last reference drops (and every copy
    /// through a `Checked` stops: the region is invalid). A window lets go
    /// of its region.
    pub(crate) fn deregister(&self, mem: &Mem) {
        let removed = self
            .slots
            .remove(mem.index.load(Ordering::Acquire) as usize);
        let parent = mem.unbind();
        drop(removed);
        drop(parent);
    }

    /// The region `stag` names, checked in one lock hold for its key,
    /// validity, PD `pd`, rights `need` and `len` octets at `addr`
    /// (RFC 5040 §6.4, RFC 5041 §7.2); any context.
    pub(crate) fn checked(
        &self,
        stag: u32,
        pd: u32,
        need: Access,
        addr: u64,
        len: u64,
    ) -> Result<Checked, MemError> {
        let mem = self.slots.get((stag >> 8) as usize).ok_or(MemError::Stag)?;
        let stamp = mem.check((stag & 0xff) as u8, pd, need, addr, len)?;
        Ok(Checked { mem, stamp })
    }

    /// Invalidates `stag` of `pd` (Send with Invalidate, Local Invalidate,
    /// READ_WITH_INV); any context.
    pub(crate) fn invalidate(&self, stag: u32, pd: u32) -> Result<(), MemError> {
        let mem = self.slots.get((stag >> 8) as usize).ok_or(MemError::Stag)?;
        mem.invalidate((stag & 0xff) as u8, pd)
    }

    /// The region an STag names, if its index and key match; any context.
    pub(crate) fn lookup(&self, stag: u32) -> Option<Arc<Mem>> {
        let mem = self.slots.get((stag >> 8) as usize)?;
        (mem.key() == (stag & 0xff) as u8).then_some(mem)
    }

    /// The region or window at an STag's index, whatever its key (a bind
    /// names the window by index and sets a new key).
    pub(crate) fn by_index(&self, stag: u32) -> Option<Arc<Mem>> {
        self.slots.get((stag >> 8) as usize)
    }
}
