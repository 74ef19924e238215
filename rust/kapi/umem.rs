// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Pinned user memory of a user memory region (`ib_umem_get`) and copies
//! into and out of its pages through `kmap_local_page`.

use super::bindings;
use core::ptr::NonNull;
use kernel::prelude::*;

/// The pages of one `reg_user_mr` registration, pinned until drop.
///
/// # Invariants
///
/// `u` is a live `rsiw_umem` owned by this value: its umem, and its page
/// array of `npages` entries (the umem's pages in order, pinned as long as
/// it lives), both released in drop; `pages`, `npages` and `offset` are
/// copies of its fields.
pub(crate) struct UserPages {
    u: NonNull<bindings::rsiw_umem>,
    pages: NonNull<*mut bindings::page>,
    npages: usize,
    offset: u64,
}

// SAFETY: the umem and its page array are only released in drop; pages are
// plain pinned pages usable from any context through kmap_local_page.
unsafe impl Send for UserPages {}
// SAFETY: as above; copies do not mutate `self`.
unsafe impl Sync for UserPages {}

const PAGE: u64 = kernel::page::PAGE_SIZE as u64;

impl UserPages {
    /// Pins `len` bytes of the caller's memory at `start` with `access`
    /// (`IB_ACCESS_*`, which decides whether pages are pinned writable).
    ///
    /// `dev` must be the device of the verb being executed (process context).
    pub(crate) fn get(
        dev: *mut bindings::ib_device,
        start: u64,
        len: u64,
        access: u32,
    ) -> Result<Self> {
        let mut err = 0;
        // SAFETY: `dev` is the device of the running verb; `err` is writable.
        let raw = unsafe { bindings::rsiw_shim_umem_get(dev, start, len, access as i32, &mut err) };
        let u = NonNull::new(raw).ok_or_else(|| Error::from_errno(err))?;
        // SAFETY: the shim returned a live, filled-in `rsiw_umem`, ours now.
        let (pages, npages, offset) = unsafe { ((*raw).pages, (*raw).npages, (*raw).offset) };
        let Some(pages) = NonNull::new(pages) else {
            // SAFETY: ours, released once; the shim never returns this.
            unsafe { bindings::rsiw_shim_umem_release(raw) };
            return Err(EFAULT);
        };
        // INVARIANT: owned from here, released in drop.
        Ok(Self {
            u,
            pages,
            npages,
            offset: u64::from(offset),
        })
    }

    /// Offset of the first registered byte inside the first page.
    pub(crate) fn first_offset(&self) -> u64 {
        self.offset
    }

    /// The page holding byte `off` (counted from the first page's start)
    /// and the offset in it, if `len` bytes from there stay in that page.
    fn page(&self, off: u64, len: usize) -> Result<(*mut bindings::page, usize)> {
        let idx = usize::try_from(off / PAGE).map_err(|_| EINVAL)?;
        let in_page = (off % PAGE) as usize;
        if in_page
            .checked_add(len)
            .map_or(true, |end| end as u64 > PAGE)
        {
            return Err(EINVAL);
        }
        if idx >= self.npages {
            return Err(EINVAL);
        }
        // SAFETY: `idx` < `npages`, the length of the live page array
        // (type invariant).
        let p = unsafe { *self.pages.as_ptr().add(idx) };
        Ok((p, in_page))
    }

    /// A reference to the page holding byte `off` (`len` bytes within one
    /// page) for zero-copy transmit, and the offset in that page.
    pub(crate) fn page_ref(&self, off: u64, len: usize) -> Result<(super::zc::PageRef, usize)> {
        let (p, o) = self.page(off, len)?;
        // SAFETY: `p` is a pinned page of this umem (type invariant).
        let r = unsafe { super::zc::PageRef::get(p) }.ok_or(EINVAL)?;
        Ok((r, o))
    }

    /// Copies `data` to byte `off` (within one page).
    pub(crate) fn write(&self, off: u64, data: &[u8]) -> Result {
        let (p, o) = self.page(off, data.len())?;
        // SAFETY: `p` is a pinned page of this umem (type invariant), `o +
        // len` stays inside it (checked above); `data` is readable. The
        // shim only reads through the pointer for `to_page == true`.
        unsafe { bindings::rsiw_shim_page_copy(p, o, data.as_ptr() as *mut _, data.len(), true) };
        Ok(())
    }

    /// Copies byte `off` (within one page) into `out`.
    pub(crate) fn read(&self, off: u64, out: &mut [u8]) -> Result {
        let (p, o) = self.page(off, out.len())?;
        // SAFETY: as in `write`; `out` is writable for its length.
        unsafe { bindings::rsiw_shim_page_copy(p, o, out.as_mut_ptr().cast(), out.len(), false) };
        Ok(())
    }

    /// Reads the 8-aligned word at `off`.
    pub(crate) fn load64(&self, off: u64) -> Result<u64> {
        let (p, o) = self.page(off, 8)?;
        if o % 8 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: aligned word inside a pinned page of this umem.
        Ok(unsafe { bindings::rsiw_shim_page_load64(p, o) })
    }

    /// Compare-and-exchange on the 8-aligned word at `off`; returns the
    /// value seen.
    pub(crate) fn cmpxchg64(&self, off: u64, old: u64, new: u64) -> Result<u64> {
        let (p, o) = self.page(off, 8)?;
        if o % 8 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: aligned word inside a pinned page of this umem.
        Ok(unsafe { bindings::rsiw_shim_page_cmpxchg64(p, o, old, new) })
    }
}

impl Drop for UserPages {
    fn drop(&mut self) {
        // Any context: the region's last reference may go in the receive
        // path. The shim releases at once where it may sleep, otherwise
        // from a work item, flushed before the device is freed.
        // SAFETY: owned per the type invariant and released once, here.
        unsafe { bindings::rsiw_shim_umem_release(self.u.as_ptr()) };
    }
}
