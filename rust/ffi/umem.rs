// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Pinned user memory of a user memory region (`ib_umem_get`) and copies
//! into and out of its pages through `kmap_local_page`.

use super::bindings;
use core::ptr::NonNull;
use kernel::{alloc::KVVec, prelude::*};

/// The pages of one `reg_user_mr` registration, pinned until drop.
///
/// # Invariants
///
/// `umem` is a live `ib_umem` owned by this value; `pages` are its pages in
/// order, pinned as long as `umem` lives. `rel` is the release node the shim
/// allocated with `umem`, owned by this value and consumed with it.
pub(crate) struct UserPages {
    umem: NonNull<bindings::ib_umem>,
    rel: NonNull<core::ffi::c_void>,
    pages: KVVec<usize>,
    offset: u64,
}

// SAFETY: the umem is only released in drop; pages are plain pinned pages
// usable from any context through kmap_local_page.
unsafe impl Send for UserPages {}
// SAFETY: as above; copies do not mutate `self`.
unsafe impl Sync for UserPages {}

const PAGE: u64 = kernel::page::PAGE_SIZE as u64;

impl UserPages {
    /// Pins `len` bytes of the caller's memory at `start` with `access`
    /// (`IB_ACCESS_*`, which decides whether pages are pinned writable).
    ///
    /// `dev` must be the device of the verb being executed (process context).
    pub(crate) fn get(dev: *mut bindings::ib_device, start: u64, len: u64, access: u32) -> Result<Self> {
        let mut err = 0;
        let mut rel = core::ptr::null_mut();
        // SAFETY: `dev` is the device of the running verb; `rel` and `err`
        // are writable.
        let raw = unsafe { bindings::rsiw_shim_umem_get(dev, start, len, access as i32, &mut rel, &mut err) };
        let umem = NonNull::new(raw).ok_or_else(|| Error::from_errno(err))?;
        // The shim sets `rel` whenever it returns a umem.
        let Some(rel) = NonNull::new(rel) else {
            // SAFETY: the umem just obtained, released once, in process
            // context (the verb's).
            unsafe { bindings::ib_umem_release(umem.as_ptr()) };
            return Err(ENOMEM);
        };
        // INVARIANT: owned from here; dropped with `rsiw_shim_umem_release`.
        let mut this = Self {
            umem,
            rel,
            pages: KVVec::new(),
            offset: 0,
        };
        // SAFETY: live umem.
        let n = unsafe { bindings::rsiw_shim_umem_npages(umem.as_ptr()) };
        this.pages = KVVec::from_elem(0usize, n, GFP_KERNEL)?;
        let ptrs = this.pages.as_mut_ptr().cast::<*mut bindings::page>();
        // SAFETY: `ptrs` has room for `n` page pointers (`usize` and a
        // pointer have the same size and alignment).
        let got = unsafe { bindings::rsiw_shim_umem_pages(umem.as_ptr(), ptrs, n) };
        if got != n {
            return Err(EFAULT);
        }
        // SAFETY: live umem.
        this.offset = u64::from(unsafe { bindings::rsiw_shim_umem_offset(umem.as_ptr()) });
        Ok(this)
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
        if in_page.checked_add(len).map_or(true, |end| end as u64 > PAGE) {
            return Err(EINVAL);
        }
        let p = *self.pages.get(idx).ok_or(EINVAL)?;
        Ok((p as *mut bindings::page, in_page))
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
        // softirq. The shim releases at once where it may sleep, otherwise
        // from a work item, flushed before the device is freed.
        // SAFETY: `umem` and `rel` are owned per the type invariant and
        // consumed once, here.
        unsafe { bindings::rsiw_shim_umem_release(self.umem.as_ptr(), self.rel.as_ptr()) };
    }
}
