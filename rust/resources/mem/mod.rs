// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Memory regions and their STags: validity, protection domain, access
//! rights and bounds checks (RFC 5040 §6.4, RFC 5041 §7.2), copies into and
//! out of registered memory, and invalidation (RFC 5040 §6.10).

use crate::kapi::{
    lock::IrqSpinLock,
    mr::{kva_cmpxchg64, kva_load64, kva_read, kva_write},
    umem::UserPages,
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{alloc::KVVec, prelude::*, sync::Arc};

mod table;
pub(crate) use table::{Checked, MemTable};

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
    /// The STag is invalid (invalidated, or an FRWR not yet registered),
    /// or was registered anew since it was checked.
    State,
    /// A copy failed for another reason (a page could not be reached).
    Fault,
}

/// What a check saw of a region: copies through a [`Checked`] go ahead only
/// while the region is still valid with this key and registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    key: u8,
    gen: u32,
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

/// A fast-registration page list being built by `map_mr_sg`.
struct Mapping {
    pages: KVVec<u64>,
    npages: usize,
    page_size: u64,
    first_off: u64,
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
    /// `Pbl` only: the next mapping, built by `map_mr_sg` while the current
    /// one may still be in use; a fast registration makes it current.
    staged: Mapping,
    /// `Pbl` only: page kernel addresses, `npages` of them in use.
    pages: KVVec<u64>,
    npages: usize,
    /// `Pbl` only: page size of the mapping.
    page_size: u64,
    /// `Pbl`/`User`: offset of `iova` inside the first page.
    first_off: u64,
    /// `Window` only: the region it is bound to (`Some` while valid).
    parent: Option<Arc<Mem>>,
    /// `Window` only: the region's `gen` when the window was bound; the
    /// window reaches the region only while that registration lives.
    parent_gen: u32,
    /// Registration generation: moves on every change of validity, key or
    /// mapping (invalidation, fast registration, bind, `map_mr_sg`,
    /// deregistration), so that a [`Stamp`] taken before goes stale.
    gen: u32,
}

impl State {
    /// Valid, in registration `gen`.
    fn valid_gen(&self, gen: u32) -> bool {
        self.valid && self.gen == gen
    }

    /// The region is as `st` saw it: valid, same key, same registration.
    fn live(&self, st: Stamp) -> Result<(), MemError> {
        if self.valid && self.key == st.key && self.gen == st.gen {
            Ok(())
        } else {
            Err(MemError::State)
        }
    }

    fn bump(&mut self) {
        self.gen = self.gen.wrapping_add(1);
    }
}

/// One memory region (and its STag).
#[pin_data]
pub(crate) struct Mem {
    /// STag index (the upper 24 bits: the table's permutation of the
    /// region's slot, `MemTable::register`); set once at insertion.
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
    /// A new region with consumer key `key`, not in any table yet.
    fn build(init: MemInit, key: u8) -> Result<Arc<Self>> {
        let (pages, valid, first_off) = match &init.kind {
            MemKind::Pbl(n) => (KVVec::from_elem(0u64, *n, GFP_KERNEL)?, false, 0),
            MemKind::User(u) => (KVVec::new(), true, u.first_offset()),
            MemKind::Dma => (KVVec::new(), true, 0),
            MemKind::Window => (KVVec::new(), false, 0),
        };
        let staged = Mapping {
            pages: match &init.kind {
                MemKind::Pbl(n) => KVVec::from_elem(0u64, *n, GFP_KERNEL)?,
                _ => KVVec::new(),
            },
            npages: 0,
            page_size: kernel::page::PAGE_SIZE as u64,
            first_off: 0,
        };
        Arc::pin_init(
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
                        staged,
                        pages,
                        npages: 0,
                        page_size: kernel::page::PAGE_SIZE as u64,
                        first_off,
                        parent: None,
                        parent_gen: 0,
                        gen: 0,
                    },
                    "rsiw_mem"
                ),
            }),
            GFP_KERNEL,
        )
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
        s.bump();
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

    /// Checks key, validity, PD, rights and bounds for `len` bytes at
    /// `addr` in one lock hold (RFC 5040 §6.4; bounds without overflow,
    /// unlike `addr + len` on u64), and returns what it saw.
    fn check(
        &self,
        key: u8,
        pd: u32,
        need: Access,
        addr: u64,
        len: u64,
    ) -> Result<Stamp, MemError> {
        let s = self.state.lock();
        if s.key != key {
            return Err(MemError::Stag);
        }
        if !s.valid {
            return Err(MemError::State);
        }
        if s.pd != pd {
            return Err(MemError::Pd);
        }
        if !s.access.contains(need) {
            return Err(MemError::Access);
        }
        let stamp = Stamp { key, gen: s.gen };
        match self.kind {
            MemKind::Dma => addr.checked_add(len).map(|_| stamp).ok_or(MemError::Bounds),
            MemKind::Window => {
                in_bounds(s.iova, s.len, addr, len)?;
                let (parent, pgen) = (s.parent.clone(), s.parent_gen);
                // One `rsiw_mem` lock at a time (a single lockdep class).
                drop(s);
                // A window is only as good as its region.
                match parent {
                    Some(p) if p.state.lock().valid_gen(pgen) => Ok(stamp),
                    _ => Err(MemError::State),
                }
            }
            _ => in_bounds(s.iova, s.len, addr, len).map(|()| stamp),
        }
    }

    /// The region behind a window and the registration it must still have,
    /// after checking the window is as `st` saw it and `addr..addr+len`
    /// lies in it; `None` for other kinds.
    fn window_target(
        &self,
        st: Stamp,
        addr: u64,
        len: u64,
    ) -> Option<Result<(Arc<Mem>, u32), MemError>> {
        if !matches!(self.kind, MemKind::Window) {
            return None;
        }
        let s = self.state.lock();
        Some(s.live(st).and_then(|()| {
            in_bounds(s.iova, s.len, addr, len)?;
            s.parent
                .clone()
                .map(|p| (p, s.parent_gen))
                .ok_or(MemError::State)
        }))
    }

    /// Copies `data` into the region at `addr`.
    fn write(&self, want: Want, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.copy(want, addr, data.len(), |where_, at, n| match where_ {
            Where::Kva(kva) => kva_write(kva, data.get(at..at + n).ok_or(EINVAL)?),
            Where::User(u, off) => u.write(off, data.get(at..at + n).ok_or(EINVAL)?),
        })
    }

    /// Copies from the region at `addr` into `out`.
    fn read(&self, want: Want, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        let len = out.len();
        self.copy(want, addr, len, |where_, at, n| match where_ {
            Where::Kva(kva) => kva_read(kva, out.get_mut(at..at + n).ok_or(EINVAL)?),
            Where::User(u, off) => u.read(off, out.get_mut(at..at + n).ok_or(EINVAL)?),
        })
    }

    /// Atomically replaces the 8-byte word at `addr` (8-aligned) by `f(old)`
    /// with a compare-and-exchange loop, and returns `old` (RFC 7306 §5.2.2).
    fn atomic64(&self, want: Want, addr: u64, f: &dyn Fn(u64) -> u64) -> Result<u64, MemError> {
        if addr % 8 != 0 {
            return Err(MemError::Bounds);
        }
        let mut result = Err(MemError::Fault);
        self.copy(want, addr, 8, |where_, _, n| {
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
    fn invalidate(&self, key: u8, pd: u32) -> Result<(), MemError> {
        let mut s = self.state.lock();
        // The key in the same lock hold as the change: a registration made
        // anew since the caller looked the STag up has another key.
        if s.key != key {
            return Err(MemError::Stag);
        }
        if s.pd != pd {
            return Err(MemError::Pd);
        }
        match self.kind {
            MemKind::Pbl(_) => {
                // Invalidating an already invalid STag is allowed (verbs
                // semantics). Copies checked before see it and stop
                // (`State::live`): the ULP may free the pages once it has
                // the completion.
                s.valid = false;
                s.bump();
                Ok(())
            }
            MemKind::Window => {
                s.valid = false;
                s.bump();
                let parent = s.parent.take();
                drop(s);
                if let Some(p) = &parent {
                    p.windows.fetch_sub(1, Ordering::AcqRel);
                }
                // The region stays registered while the window was bound, so
                // this is never its last reference: dropping it here (maybe
                // in softirq) frees nothing.
                drop(parent);
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
        let parent_gen;
        // A window grants remote rights only: a local write right in the bind is
        // ignored, as rxe and mlx5 ignore it (rdma-core's own MW tests set it);
        // anything else that is not a remote right (zero-based windows, MW_BIND)
        // refuses the bind.
        let access = Access(access.0 & !Access::LOCAL_WRITE.0);
        if access.0 & !Access::REMOTE != 0 {
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
            parent_gen = r.gen;
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
        s.parent_gen = parent_gen;
        s.bump();
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
        let st = &s.staged;
        let mapped = (st.npages as u64).saturating_mul(st.page_size);
        if len
            .checked_add(st.first_off)
            .map_or(true, |end| end > mapped)
        {
            return Err(MemError::Bounds);
        }
        // The staged mapping becomes the region's; the old page list is the
        // next one to fill.
        let State {
            staged,
            pages,
            npages,
            page_size,
            first_off,
            ..
        } = &mut *s;
        core::mem::swap(pages, &mut staged.pages);
        *npages = staged.npages;
        *page_size = staged.page_size;
        *first_off = staged.first_off;
        staged.npages = 0;
        s.bump();
        s.key = key;
        s.access = access;
        s.iova = iova;
        s.len = len;
        s.valid = true;
        Ok(())
    }

    /// Starts a new `map_mr_sg` mapping with pages of `page_size`. It is
    /// staged: the region's current pages stay in use (by placements of a
    /// still valid STag: rdma_rw maps before its chained LOCAL_INV runs)
    /// until a fast registration makes the new mapping current.
    pub(crate) fn map_begin(&self, page_size: u64) -> Result {
        if !page_size.is_power_of_two() {
            return Err(EINVAL);
        }
        let mut s = self.state.lock();
        s.staged.npages = 0;
        s.staged.page_size = page_size;
        s.staged.first_off = 0;
        Ok(())
    }

    /// Appends a page (kernel address) to the mapping; `ENOMEM` when full.
    pub(crate) fn map_page(&self, kva: u64) -> Result {
        let mut s = self.state.lock();
        let n = s.staged.npages;
        *s.staged.pages.get_mut(n).ok_or(ENOMEM)? = kva;
        s.staged.npages = n + 1;
        Ok(())
    }

    /// Ends a mapping that starts at `iova` (the fast registration gives the
    /// region its address range).
    pub(crate) fn map_end(&self, iova: u64) {
        let mut s = self.state.lock();
        s.staged.first_off = iova & (s.staged.page_size - 1);
    }

    /// Zero-copy transmit: `f(page, offset, n)` for each page piece of
    /// `len` bytes at `addr` if the region is pinned user memory, whose pages
    /// the socket may reference; `Ok(false)` for kernel memory (its slab
    /// pages must be copied). Runs under the region's lock: `f` must not
    /// sleep.
    fn user_pages(
        &self,
        want: Want,
        addr: u64,
        len: usize,
        mut f: impl FnMut(crate::kapi::zc::PageRef, usize, usize) -> Result,
    ) -> Result<bool, MemError> {
        if let Want::Stamp(st) = want {
            if let Some(parent) = self.window_target(st, addr, len as u64) {
                let (p, pgen) = parent?;
                return p.user_pages(Want::Gen(pgen), addr, len, f);
            }
        }
        if !matches!(self.kind, MemKind::User(_)) {
            return Ok(false);
        }
        self.copy(want, addr, len, |w, _, n| match w {
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
    /// Every piece is reached under the region's lock, after checking it is
    /// still what `want` expects (RFC 5040 §6.4: an invalid STag is not
    /// accessed): a region invalidated, deregistered or registered anew
    /// since the check fails with `MemError::State` and nothing is touched.
    fn copy(
        &self,
        want: Want,
        addr: u64,
        len: usize,
        f: impl FnMut(Where<'_>, usize, usize) -> Result,
    ) -> Result<(), MemError> {
        if let Want::Stamp(st) = want {
            if let Some(parent) = self.window_target(st, addr, len as u64) {
                // The window's addresses are its region's (not zero-based).
                let (p, pgen) = parent?;
                return p.copy(Want::Gen(pgen), addr, len, f);
            }
        }
        let s = self.state.lock();
        match want {
            Want::Stamp(st) => s.live(st)?,
            Want::Gen(g) if s.valid_gen(g) => {}
            Want::Gen(_) => return Err(MemError::State),
        }
        Self::copy_locked(&s, &self.kind, addr, len, f).map_err(|_| MemError::Fault)
    }

    fn copy_locked(
        s: &State,
        kind: &MemKind,
        addr: u64,
        len: usize,
        mut f: impl FnMut(Where<'_>, usize, usize) -> Result,
    ) -> Result {
        let len64 = len as u64;
        if let MemKind::Dma = kind {
            addr.checked_add(len64).ok_or(EINVAL)?;
            return f(Where::Kva(addr), 0, len);
        }
        in_bounds(s.iova, s.len, addr, len64).map_err(|_| EINVAL)?;
        // Offset from the start of the first page; cannot overflow: both
        // terms are bounded by the region (len < 2^64 - page).
        let mut off = (addr - s.iova).checked_add(s.first_off).ok_or(EINVAL)?;
        let (page_size, shift) = match kind {
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
            match kind {
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

/// What a copy expects of the region it reaches.
#[derive(Clone, Copy)]
enum Want {
    /// The region as a check saw it.
    Stamp(Stamp),
    /// A window's region: valid, in the registration the window was bound to.
    Gen(u32),
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
