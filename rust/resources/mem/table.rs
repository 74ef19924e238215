// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! A device's STag table (RFC 5040 §6.4) and the checked handle every access
//! to a region goes through: each copy sees the region as its check did.

use super::{Access, Mem, MemError, MemInit, Stamp, Want, MAX_MR};
use crate::{
    kapi::random,
    proto::stag::{IndexPerm, Rounds, ROUND_TABLE_LEN},
    resources::slots::Slots,
};
use core::sync::atomic::Ordering;
use kernel::{alloc::KVVec, prelude::*, sync::Arc};

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
        f: impl FnMut(crate::kapi::zc::PageRef, usize, usize) -> Result,
    ) -> Result<bool, MemError> {
        self.mem.user_pages(Want::Stamp(self.stamp), addr, len, f)
    }
}

/// A device's STag table (RFC 5040 §6.4: a 24-bit index and an 8-bit key
/// the consumer may change): registration, lookup from any context, and the
/// checked access and invalidation every placement goes through.
///
/// RFC 5042 §5.1.2: a peer holding one STag must not derive the others. Each
/// registration's key is random, and the index is not the table slot: a
/// keyed permutation of the 24-bit index space (`proto::stag::IndexPerm`,
/// its key random per table) maps the slot to the index handed out, and
/// every lookup maps an index back, refusing one that names no slot of the
/// table. The slots stay dense (a small vector, found in one step); the
/// permutation's round function is precomputed when the table is made (32 KiB:
/// four loads a lookup, not four SipHash-2-4 calls).
#[pin_data]
pub(crate) struct MemTable {
    /// Regions and windows by table slot.
    #[pin]
    slots: Slots<Mem>,
    /// The round function of the permutation from table slot to STag index
    /// (`IndexPerm::fill_rounds`); the key it was made with is not kept.
    rounds: KVVec<u16>,
}

impl MemTable {
    /// An empty table (slots 1..=`MAX_MR`) with a permutation of its own.
    pub(crate) fn new() -> Result<Arc<Self>> {
        let mut rounds = KVVec::from_elem(0u16, ROUND_TABLE_LEN, GFP_KERNEL)?;
        IndexPerm::new(random::random_bytes()).fill_rounds(&mut rounds);
        Arc::pin_init(
            pin_init!(Self {
                slots <- Slots::new(1, MAX_MR as usize + 1),
                rounds,
            }),
            GFP_KERNEL,
        )
    }

    /// Table slot to STag index and back.
    fn perm(&self) -> Rounds<'_> {
        Rounds(&self.rounds)
    }

    /// Registers a region and returns it with its STag: a random key
    /// (RFC 5042 §5.1.2; a stale STag also matches a new region of its slot
    /// only once in 256) and the index of a free slot.
    pub(crate) fn register(&self, init: MemInit) -> Result<Arc<Mem>> {
        let key = random::random_u32() as u8;
        let mem = Mem::build(init, key)?;
        let slot = self.slots.insert(mem.clone())?;
        // The table's limit keeps slots below 2^24, which `index` maps.
        let Some(index) = u32::try_from(slot).ok().and_then(|s| self.perm().index(s)) else {
            drop(self.slots.remove(slot));
            return Err(EINVAL);
        };
        mem.index.store(index, Ordering::Release);
        Ok(mem)
    }

    /// The region or window at the index of `stag` (its upper 24 bits),
    /// whatever its key: the permutation's inverse, refused outside the table.
    fn at(&self, stag: u32) -> Option<Arc<Mem>> {
        let slot = self.perm().slot(stag >> 8)?;
        if slot > MAX_MR {
            return None;
        }
        self.slots.get(slot as usize)
    }

    /// Removes `mem`'s STag; placements holding the `Arc` finish on memory
    /// that stays pinned until the last reference drops (and every copy
    /// through a `Checked` stops: the region is invalid). A window lets go
    /// of its region.
    pub(crate) fn deregister(&self, mem: &Mem) {
        let slot = self.perm().slot(mem.index.load(Ordering::Acquire));
        let removed = slot.and_then(|s| self.slots.remove(s as usize));
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
        let mem = self.at(stag).ok_or(MemError::Stag)?;
        let stamp = mem.check((stag & 0xff) as u8, pd, need, addr, len)?;
        Ok(Checked { mem, stamp })
    }

    /// Invalidates `stag` of `pd` (Send with Invalidate, Local Invalidate,
    /// READ_WITH_INV); any context.
    pub(crate) fn invalidate(&self, stag: u32, pd: u32) -> Result<(), MemError> {
        let mem = self.at(stag).ok_or(MemError::Stag)?;
        mem.invalidate((stag & 0xff) as u8, pd)
    }

    /// The region an STag names, if its index and key match; any context.
    pub(crate) fn lookup(&self, stag: u32) -> Option<Arc<Mem>> {
        let mem = self.at(stag)?;
        (mem.key() == (stag & 0xff) as u8).then_some(mem)
    }

    /// The region or window at an STag's index, whatever its key (a bind
    /// names the window by index and sets a new key).
    pub(crate) fn by_index(&self, stag: u32) -> Option<Arc<Mem>> {
        self.at(stag)
    }
}
