// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Memory regions and their STags: validity, protection domain, access
//! rights and bounds checks (RFC 5040 §6.4, RFC 5041 §7.2), copies into and
//! out of registered memory, and invalidation (RFC 5040 §6.10).

use crate::{
    device::Device,
    ffi::{
        lock::IrqSpinLock,
        mr::{kva_cmpxchg64, kva_load64, kva_read, kva_write},
        umem::UserPages,
    },
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{alloc::KVVec, prelude::*, sync::Arc};

/// Access rights of a region, as `IB_ACCESS_*` bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Access(pub(crate) u32);

impl Access {
    /// No rights beyond local read.
    pub(crate) const NONE: Self = Self(0);
    /// `IB_ACCESS_LOCAL_WRITE`: receive buffers, Read sinks, atomic results.
    pub(crate) const LOCAL_WRITE: Self = Self(1);
    /// `IB_ACCESS_REMOTE_WRITE`: target of RDMA Write.
    pub(crate) const REMOTE_WRITE: Self = Self(2);
    /// `IB_ACCESS_REMOTE_READ`: source of RDMA Read.
    pub(crate) const REMOTE_READ: Self = Self(4);
    /// `IB_ACCESS_REMOTE_ATOMIC`: target of RFC 7306 atomics.
    pub(crate) const REMOTE_ATOMIC: Self = Self(8);
    /// `IB_ACCESS_MW_BIND`: memory windows may be bound to the region.
    pub(crate) const MW_BIND: Self = Self(0x10);
    /// The remote rights a memory window may grant.
    pub(crate) const REMOTE: u32 =
        Self::REMOTE_WRITE.0 | Self::REMOTE_READ.0 | Self::REMOTE_ATOMIC.0;
    /// Rights rsiw understands; others are refused at registration.
    pub(crate) const KNOWN: u32 = 0x1f | 0x100 /* ZERO_BASED */ | 0x100000 /* RELAXED */;

    /// True if every right in `need` is granted.
    pub(crate) fn contains(self, need: Self) -> bool {
        self.0 & need.0 == need.0
    }
}

/// Why an STag check failed; the engine maps these to Terminate codes
/// (RFC 5040 §7.1: invalid STag, base or bounds, access rights, PD mismatch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemError {
    /// Unknown STag, or its key does not match.
    Stag,
    /// The region belongs to another protection domain.
    Pd,
    /// The region lacks a required access right.
    Access,
    /// The range is not inside the region (or wraps).
    Bounds,
    /// The STag is invalid (invalidated, or an FRWR not yet registered).
    State,
}

/// Where the bytes of a region live.
pub(crate) enum MemKind {
    /// `get_dma_mr`: all kernel virtual addresses (virtual DMA).
    Dma,
    /// `reg_user_mr`: pinned user pages.
    User(UserPages),
    /// `alloc_mr` (fast registration): kernel virtual addresses of pages
    /// filled by `map_mr_sg`, at most this many.
    Pbl(usize),
    /// `alloc_mw` (type 2): a window onto part of a bound region, whose
    /// pages serve every copy; invalid until bound.
    Window,
}

/// The fields [`Mem::state`] protects.
struct State {
    /// Low 8 bits of the STag (the consumer key).
    key: u8,
    /// Protection domain number.
    pd: u32,
    access: Access,
    /// First address of the region (the tagged offset base).
    iova: u64,
    len: u64,
    valid: bool,
    /// `Pbl` only: page kernel addresses, `npages` of them in use.
    pages: KVVec<u64>,
    npages: usize,
    /// `Pbl` only: page size of the mapping.
    page_size: u64,
    /// `Pbl`/`User`: offset of `iova` inside the first page.
    first_off: u64,
    /// `Window` only: the region it is bound to (`Some` while valid).
    parent: Option<Arc<Mem>>,
}

/// One memory region (and its STag).
#[pin_data]
pub(crate) struct Mem {
    /// STag index (the upper 24 bits); set once at insertion.
    index: AtomicU32,
    kind: MemKind,
    /// Windows bound to this region; `dereg_mr` refuses while non-zero.
    windows: AtomicU32,
    /// Taken from any context (placement in softirq, post_send, verbs);
    /// copies hold it so a `Pbl` remap cannot move pages under them.
    #[pin]
    state: IrqSpinLock<State>,
}

/// Regions per device.
pub(crate) const MAX_MR: u32 = 1 << 16;
/// Pages in a fast-registration page list.
pub(crate) const MAX_PBL: u32 = 256;

/// What a new region is.
pub(crate) struct MemInit {
    /// Storage.
    pub(crate) kind: MemKind,
    /// Protection domain number.
    pub(crate) pd: u32,
    /// Rights.
    pub(crate) access: Access,
    /// First address.
    pub(crate) iova: u64,
    /// Length in bytes.
    pub(crate) len: u64,
}

impl Mem {
    /// Registers a region in `dev`'s STag table and returns it with its STag.
    pub(crate) fn register(dev: &Device, init: MemInit) -> Result<Arc<Self>> {
        let (pages, valid, first_off) = match &init.kind {
            MemKind::Pbl(n) => (KVVec::from_elem(0u64, *n, GFP_KERNEL)?, false, 0),
            MemKind::User(u) => (KVVec::new(), true, u.first_offset()),
            MemKind::Dma => (KVVec::new(), true, 0),
            MemKind::Window => (KVVec::new(), false, 0),
        };
        let key = dev.next_key();
        let mem = Arc::pin_init(
            pin_init!(Self {
                index: AtomicU32::new(0),
                kind: init.kind,
                windows: AtomicU32::new(0),
                state <- crate::new_irq_spinlock!(
                    State {
                        key,
                        pd: init.pd,
                        access: init.access,
                        iova: init.iova,
                        len: init.len,
                        valid,
                        pages,
                        npages: 0,
                        page_size: kernel::page::PAGE_SIZE as u64,
                        first_off,
                        parent: None,
                    },
                    "rsiw_mem"
                ),
            }),
            GFP_KERNEL,
        )?;
        let index = dev.mems().insert(mem.clone())?;
        // The table's limit keeps indices below 2^24.
        mem.index.store(index as u32, Ordering::Release);
        Ok(mem)
    }

    /// Removes the STag from `dev`'s table; placements holding the `Arc`
    /// finish on memory that stays pinned until the last reference drops.
    /// A window lets go of its region.
    pub(crate) fn deregister(&self, dev: &Device) {
        let removed = dev
            .mems()
            .remove(self.index.load(Ordering::Acquire) as usize);
        let parent = self.unbind();
        drop(removed);
        drop(parent);
    }

    /// True while memory windows are bound to the region: it must not be
    /// deregistered (IBA o10-36.2.1: `dereg_mr` fails with bound windows).
    pub(crate) fn has_windows(&self) -> bool {
        self.windows.load(Ordering::Acquire) != 0
    }

    /// Makes the STag invalid; a window returns its region (drop it outside
    /// any lock) and no longer counts against it.
    fn unbind(&self) -> Option<Arc<Mem>> {
        let mut s = self.state.lock();
        s.valid = false;
        let parent = s.parent.take();
        drop(s);
        if let Some(p) = &parent {
            p.windows.fetch_sub(1, Ordering::AcqRel);
        }
        parent
    }

    /// The current STag (index and key).
    pub(crate) fn stag(&self) -> u32 {
        let key = self.state.lock().key;
        (self.index.load(Ordering::Acquire) << 8) | u32::from(key)
    }

    /// The current key (low 8 bits of the STag).
    pub(crate) fn key(&self) -> u8 {
        self.state.lock().key
    }

    /// True for a fast-registration region.
    pub(crate) fn is_frwr(&self) -> bool {
        matches!(self.kind, MemKind::Pbl(_))
    }

    /// Checks validity, PD, rights and bounds for `len` bytes at `addr`
    /// (RFC 5040 §6.4; without overflow, unlike `addr + len` on u64).
    pub(crate) fn check(&self, pd: u32, need: Access, addr: u64, len: u64) -> Result<(), MemError> {
        let s = self.state.lock();
        if !s.valid {
            return Err(MemError::State);
        }
        if s.pd != pd {
            return Err(MemError::Pd);
        }
        if !s.access.contains(need) {
            return Err(MemError::Access);
        }
        match self.kind {
            MemKind::Dma => addr.checked_add(len).map(|_| ()).ok_or(MemError::Bounds),
            MemKind::Window => {
                in_bounds(s.iova, s.len, addr, len)?;
                let parent = s.parent.clone();
                // One `rsiw_mem` lock at a time (a single lockdep class).
                drop(s);
                // A window is only as good as its region.
                match parent {
                    Some(p) if p.state.lock().valid => Ok(()),
                    _ => Err(MemError::State),
                }
            }
            _ => in_bounds(s.iova, s.len, addr, len),
        }
    }

    /// The region behind a window, after checking `addr..addr+len` lies in
    /// the window; `None` for other kinds.
    fn window_target(&self, addr: u64, len: u64) -> Option<Result<Arc<Mem>>> {
        if !matches!(self.kind, MemKind::Window) {
            return None;
        }
        let s = self.state.lock();
        Some(match (&s.parent, in_bounds(s.iova, s.len, addr, len)) {
            (Some(p), Ok(())) => Ok(p.clone()),
            _ => Err(EINVAL),
        })
    }

    /// Copies `data` into the region at `addr`; call [`Self::check`] first.
    pub(crate) fn write(&self, addr: u64, data: &[u8]) -> Result {
        self.copy(addr, data.len(), |where_, at, n| match where_ {
            Where::Kva(kva) => kva_write(kva, data.get(at..at + n).ok_or(EINVAL)?),
            Where::User(u, off) => u.write(off, data.get(at..at + n).ok_or(EINVAL)?),
        })
    }

    /// Copies from the region at `addr` into `out`; call [`Self::check`] first.
    pub(crate) fn read(&self, addr: u64, out: &mut [u8]) -> Result {
        let len = out.len();
        self.copy(addr, len, |where_, at, n| match where_ {
            Where::Kva(kva) => kva_read(kva, out.get_mut(at..at + n).ok_or(EINVAL)?),
            Where::User(u, off) => u.read(off, out.get_mut(at..at + n).ok_or(EINVAL)?),
        })
    }

    /// Atomically replaces the 8-byte word at `addr` (8-aligned) by `f(old)`
    /// with a compare-and-exchange loop, and returns `old` (RFC 7306 §5.2.2).
    pub(crate) fn atomic64(&self, addr: u64, f: &dyn Fn(u64) -> u64) -> Result<u64> {
        if addr % 8 != 0 {
            return Err(EINVAL);
        }
        let mut result = Err(EINVAL);
        self.copy(addr, 8, |where_, _, n| {
            if n != 8 {
                return Err(EINVAL);
            }
            let mut old = match where_ {
                Where::Kva(kva) => kva_load64(kva)?,
                Where::User(u, off) => u.load64(off)?,
            };
            loop {
                let new = f(old);
                let seen = match where_ {
                    Where::Kva(kva) => kva_cmpxchg64(kva, old, new)?,
                    Where::User(u, off) => u.cmpxchg64(off, old, new)?,
                };
                if seen == old {
                    result = Ok(old);
                    return Ok(());
                }
                old = seen;
            }
        })?;
        result
    }

    /// Invalidates the STag (Send with Invalidate, RFC 5040 §6.10; or a Local
    /// Invalidate); only fast-registration regions and memory windows of
    /// `pd` may be invalidated.
    pub(crate) fn invalidate(&self, pd: u32) -> Result<(), MemError> {
        let mut s = self.state.lock();
        if s.pd != pd {
            return Err(MemError::Pd);
        }
        match self.kind {
            MemKind::Pbl(_) => {
                // Invalidating an already invalid STag is allowed (verbs semantics).
                s.valid = false;
                Ok(())
            }
            MemKind::Window => {
                drop(s);
                // The region stays registered while the window was bound, so
                // this is never its last reference: dropping it here (maybe
                // in softirq) frees nothing.
                drop(self.unbind());
                Ok(())
            }
            _ => Err(MemError::Access),
        }
    }

    /// Binds a type-2 memory window (this) of `pd` to `len` bytes at `addr`
    /// of `region` with `access` and the new `key` (IBA 10.6.7.2: the window
    /// must be invalid, the region valid with MW_BIND in the same PD, the
    /// range inside it, remote write or atomic need its local write).
    pub(crate) fn bind(
        &self,
        pd: u32,
        region: Arc<Mem>,
        key: u8,
        access: Access,
        (addr, len): (u64, u64),
    ) -> Result<(), MemError> {
        if !matches!(self.kind, MemKind::Window) || matches!(region.kind, MemKind::Window) {
            return Err(MemError::Access);
        }
        if access.0 & !Access::REMOTE != 0 {
            // Zero-based windows and local rights are not window rights here.
            return Err(MemError::Access);
        }
        {
            let r = region.state.lock();
            if !r.valid {
                return Err(MemError::State);
            }
            if r.pd != pd {
                return Err(MemError::Pd);
            }
            if !r.access.contains(Access::MW_BIND) {
                return Err(MemError::Access);
            }
            let writes = Access(Access::REMOTE_WRITE.0 | Access::REMOTE_ATOMIC.0);
            if access.0 & writes.0 != 0 && !r.access.contains(Access::LOCAL_WRITE) {
                return Err(MemError::Access);
            }
            if !matches!(region.kind, MemKind::Dma) {
                in_bounds(r.iova, r.len, addr, len)?;
            } else {
                addr.checked_add(len).ok_or(MemError::Bounds)?;
            }
        }
        let mut s = self.state.lock();
        if s.pd != pd {
            return Err(MemError::Pd);
        }
        if s.valid {
            // Type 2: a bound window is invalidated before it is bound again.
            return Err(MemError::State);
        }
        region.windows.fetch_add(1, Ordering::AcqRel);
        s.parent = Some(region);
        s.key = key;
        s.access = access;
        s.iova = addr;
        s.len = len;
        s.valid = true;
        Ok(())
    }

    /// Applies a fast-registration work request: new key, rights, the
    /// address range the consumer set on the `ib_mr` when posting it, and
    /// makes the STag valid over the last `map_mr_sg` mapping.
    pub(crate) fn fast_register(
        &self,
        pd: u32,
        key: u8,
        access: Access,
        (iova, len): (u64, u64),
    ) -> Result<(), MemError> {
        let mut s = self.state.lock();
        if !self.is_frwr() {
            return Err(MemError::Access);
        }
        if s.pd != pd {
            return Err(MemError::Pd);
        }
        if s.valid {
            // The STag must be invalid before it is registered again.
            return Err(MemError::State);
        }
        // The range must stay inside the mapped pages.
        let mapped = (s.npages as u64).saturating_mul(s.page_size);
        if len
            .checked_add(s.first_off)
            .map_or(true, |end| end > mapped)
        {
            return Err(MemError::Bounds);
        }
        s.key = key;
        s.access = access;
        s.iova = iova;
        s.len = len;
        s.valid = true;
        Ok(())
    }

    /// Starts a new `map_mr_sg` mapping with pages of `page_size`.
    pub(crate) fn map_begin(&self, page_size: u64) -> Result {
        if !page_size.is_power_of_two() {
            return Err(EINVAL);
        }
        let mut s = self.state.lock();
        s.npages = 0;
        s.page_size = page_size;
        Ok(())
    }

    /// Appends a page (kernel address) to the mapping; `ENOMEM` when full.
    pub(crate) fn map_page(&self, kva: u64) -> Result {
        let mut s = self.state.lock();
        let n = s.npages;
        *s.pages.get_mut(n).ok_or(ENOMEM)? = kva;
        s.npages = n + 1;
        Ok(())
    }

    /// Ends a mapping: the region now covers `len` bytes from `iova`.
    pub(crate) fn map_end(&self, iova: u64, len: u64) {
        let mut s = self.state.lock();
        s.first_off = iova & (s.page_size - 1);
        s.iova = iova;
        s.len = len;
    }

    /// Zero-copy transmit: `f(page, offset, n)` for each page piece of
    /// `len` bytes at `addr` if the region is pinned user memory, whose pages
    /// the socket may reference; `Ok(false)` for kernel memory (its slab
    /// pages must be copied). Call `check` first. Runs under the region's
    /// lock: `f` must not sleep.
    pub(crate) fn user_pages(
        &self,
        addr: u64,
        len: usize,
        mut f: impl FnMut(crate::ffi::zc::PageRef, usize, usize) -> Result,
    ) -> Result<bool> {
        if let Some(parent) = self.window_target(addr, len as u64) {
            return parent?.user_pages(addr, len, f);
        }
        if !matches!(self.kind, MemKind::User(_)) {
            return Ok(false);
        }
        self.copy(addr, len, |w, _, n| match w {
            Where::User(u, off) => {
                let (p, o) = u.page_ref(off, n)?;
                f(p, o, n)
            }
            Where::Kva(_) => Err(EINVAL),
        })?;
        Ok(true)
    }

    /// Runs `f(where, at, n)` for each physically contiguous piece of
    /// `len` bytes at `addr`, `at` being the offset into the caller's buffer.
    fn copy(
        &self,
        addr: u64,
        len: usize,
        mut f: impl FnMut(Where<'_>, usize, usize) -> Result,
    ) -> Result {
        if let Some(parent) = self.window_target(addr, len as u64) {
            // The window's addresses are its region's (not zero-based).
            return parent?.copy(addr, len, f);
        }
        let s = self.state.lock();
        let len64 = len as u64;
        if let MemKind::Dma = self.kind {
            addr.checked_add(len64).ok_or(EINVAL)?;
            return f(Where::Kva(addr), 0, len);
        }
        in_bounds(s.iova, s.len, addr, len64).map_err(|_| EINVAL)?;
        // Offset from the start of the first page; cannot overflow: both
        // terms are bounded by the region (len < 2^64 - page).
        let mut off = (addr - s.iova).checked_add(s.first_off).ok_or(EINVAL)?;
        let (page_size, shift) = match &self.kind {
            MemKind::Pbl(_) => (s.page_size, s.page_size.trailing_zeros()),
            _ => (
                kernel::page::PAGE_SIZE as u64,
                (kernel::page::PAGE_SIZE as u64).trailing_zeros(),
            ),
        };
        let mut at = 0usize;
        while at < len {
            let in_page = off & (page_size - 1);
            let n = ((page_size - in_page) as usize).min(len - at);
            let idx = usize::try_from(off >> shift).map_err(|_| EINVAL)?;
            match &self.kind {
                MemKind::User(u) => f(Where::User(u, off), at, n)?,
                _ => {
                    if idx >= s.npages {
                        return Err(EINVAL);
                    }
                    let page = *s.pages.get(idx).ok_or(EINVAL)?;
                    f(Where::Kva(page.checked_add(in_page).ok_or(EINVAL)?), at, n)?
                }
            }
            at += n;
            off = off.checked_add(n as u64).ok_or(EINVAL)?;
        }
        Ok(())
    }
}

/// One contiguous piece of a region.
enum Where<'a> {
    /// A kernel virtual address.
    Kva(u64),
    /// Byte offset into pinned user pages.
    User(&'a UserPages, u64),
}

/// `addr..addr+len` inside `base..base+size`, checked without overflow
/// (RFC 5040 §6.4 base and bounds).
fn in_bounds(base: u64, size: u64, addr: u64, len: u64) -> Result<(), MemError> {
    if len <= size && addr >= base && addr - base <= size - len {
        Ok(())
    } else {
        Err(MemError::Bounds)
    }
}

impl Device {
    /// The region an STag names, if its index and key match; any context.
    pub(crate) fn mem_lookup(&self, stag: u32) -> Option<Arc<Mem>> {
        let mem = self.mems().get((stag >> 8) as usize)?;
        (mem.key() == (stag & 0xff) as u8).then_some(mem)
    }

    /// The region or window at an STag's index, whatever its key (a bind
    /// names the window by index and sets a new key).
    pub(crate) fn mem_by_index(&self, stag: u32) -> Option<Arc<Mem>> {
        self.mems().get((stag >> 8) as usize)
    }
}
