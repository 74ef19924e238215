// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Protection domains, memory regions and memory windows.

use super::*;
use std::io::{Error, Result};
use std::rc::Rc;

pub(super) struct PdInner {
    pub(super) pd: *mut ibv_pd,
    _id: CmId,
}

impl Drop for PdInner {
    fn drop(&mut self) {
        // SAFETY: every MR/SRQ/QP on this PD holds an Rc on it, so none is left.
        unsafe { ibv_dealloc_pd(self.pd) };
    }
}

/// A protection domain on a CM ID's device.
#[derive(Clone)]
pub struct Pd(pub(super) Rc<PdInner>);

impl Pd {
    /// Allocates a PD on the device `id` is bound to.
    pub fn new(id: &CmId) -> Result<Self> {
        // SAFETY: live context.
        let pd = nonnull(unsafe { ibv_alloc_pd(id.ctx()?) }, "ibv_alloc_pd")?;
        Ok(Pd(Rc::new(PdInner {
            pd,
            _id: id.clone(),
        })))
    }
}

/// A registered memory region that owns its buffer.
pub struct Mr {
    pub(super) mr: *mut ibv_mr,
    buf: *mut u8,
    len: usize,
    _pd: Pd,
}

impl Mr {
    /// Allocates `len` bytes filled with `fill` and registers them with `access`.
    pub fn new(pd: &Pd, len: usize, access: u32, fill: u8) -> Result<Self> {
        let buf = Box::into_raw(vec![fill; len.max(1)].into_boxed_slice()).cast::<u8>();
        // SAFETY: `buf` is a live allocation of at least `len` bytes, freed only after dereg.
        let mr = unsafe { ibv_reg_mr(pd.0.pd, buf.cast(), len, access as i32) };
        if mr.is_null() {
            let e = Error::last_os_error();
            // SAFETY: `buf` came from Box::into_raw of a slice of len.max(1) bytes.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(buf, len.max(1))) });
            return Err(Error::new(e.kind(), format!("ibv_reg_mr: {e}")));
        }
        Ok(Mr {
            mr,
            buf,
            len,
            _pd: pd.clone(),
        })
    }

    /// The region's virtual address (its tagged offset base).
    pub fn addr(&self) -> u64 {
        self.buf as u64
    }
    /// The region's length.
    pub fn len(&self) -> usize {
        self.len
    }
    /// The local key.
    pub fn lkey(&self) -> u32 {
        // SAFETY: live MR.
        unsafe { (*self.mr).lkey }
    }
    /// The remote key.
    pub fn rkey(&self) -> u32 {
        // SAFETY: live MR.
        unsafe { (*self.mr).rkey }
    }

    pub(super) fn bounds(&self, off: usize, len: usize) -> Result<()> {
        match off.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::new(ErrorKind::InvalidInput, "range outside the MR")),
        }
    }

    /// Copies `data` into the buffer at `off`.
    pub fn write(&self, off: usize, data: &[u8]) -> Result<()> {
        self.bounds(off, data.len())?;
        // SAFETY: bounds checked; the buffer is ours (the device may also write it, which
        // the tests order with completions, and which bytes cannot make unsound).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.buf.add(off), data.len()) };
        Ok(())
    }

    /// Copies `len` bytes at `off` out of the buffer.
    pub fn read(&self, off: usize, len: usize) -> Result<Vec<u8>> {
        self.bounds(off, len)?;
        let mut v = vec![0u8; len];
        // SAFETY: bounds checked, `v` holds `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(self.buf.add(off), v.as_mut_ptr(), len) };
        Ok(v)
    }
}

impl Mr {
    /// Deregisters the region and hands back its buffer, still allocated: a
    /// test may then write the memory that `ibv_dereg_mr` let go of.
    pub fn dereg_keep(self) -> Result<Box<[u8]>> {
        let me = std::mem::ManuallyDrop::new(self);
        // SAFETY: live MR, deregistered once: `me` is never dropped.
        let rv = unsafe { ibv_dereg_mr(me.mr) };
        // SAFETY: `buf` came from Box::into_raw of a slice of len.max(1) bytes in
        // `new` and is reclaimed only here.
        let buf =
            unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(me.buf, me.len.max(1))) };
        // SAFETY: `_pd` is moved out once; `me` is not used again.
        drop(unsafe { std::ptr::read(&me._pd) });
        if rv != 0 {
            return Err(Error::from_raw_os_error(rv));
        }
        Ok(buf)
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: live MR; deregistered before its buffer is freed.
        unsafe {
            ibv_dereg_mr(self.mr);
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.buf,
                self.len.max(1),
            )));
        }
    }
}

/// A type-2 memory window.
pub struct Mw {
    pub(super) mw: *mut ibv_mw,
    _pd: Pd,
}

impl Mw {
    /// Allocates a type-2 window on `pd`.
    pub fn new(pd: &Pd) -> Result<Self> {
        // SAFETY: live PD; the result is checked for NULL.
        let mw = nonnull(
            unsafe { rsiw_shim_alloc_mw(pd.0.pd, ibv_mw_type_IBV_MW_TYPE_2) },
            "ibv_alloc_mw",
        )?;
        Ok(Mw {
            mw,
            _pd: pd.clone(),
        })
    }

    /// The window's current rkey.
    pub fn rkey(&self) -> u32 {
        // SAFETY: live MW.
        unsafe { (*self.mw).rkey }
    }

    /// The key a new bind should carry: the window's current rkey with the next key byte.
    pub fn next_rkey(&self) -> u32 {
        // SAFETY: live MW; ibv_inc_rkey is a pure function.
        unsafe { rsiw_shim_inc_rkey((*self.mw).rkey) }
    }
}

impl Drop for Mw {
    fn drop(&mut self) {
        // SAFETY: live MW, deallocated once; QPs are destroyed first by the owners' field order.
        unsafe { rsiw_shim_dealloc_mw(self.mw) };
    }
}
