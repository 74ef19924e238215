// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Local buffers of work requests: resolving SGE lkeys to regions with the
//! local STag checks (validity, PD, rights, bounds: RFC 5040 §6.4 applied to
//! local STags), and copying a message's octets out of or into them; and
//! the local operations of the SQ (fast registration, local invalidation,
//! memory-window bind), executed in SQ order next to the STag table.

use crate::{
    queue::cq::WcStatus,
    queue::wr::{SendOp, SendWqe, Sge, MAX_SGE},
    resources::mem::{Access, Checked, MemError, MemTable},
};
use core::ops::Range;
use kernel::prelude::*;

/// The SGEs of one work request with the regions they name, checked once
/// when the engine takes the request; the references keep the regions
/// allocated until the request completes or is flushed, and every copy sees
/// each region as its check did (or fails: `Checked`).
pub(crate) struct Local {
    sge: [Sge; MAX_SGE],
    mem: [Option<Checked>; MAX_SGE],
    n: usize,
    total: u64,
}

impl Local {
    /// No buffer (zero-length messages).
    pub(crate) fn empty() -> Self {
        Self {
            sge: [Sge::default(); MAX_SGE],
            mem: core::array::from_fn(|_| None),
            n: 0,
            total: 0,
        }
    }

    /// Looks up and checks every non-empty SGE for `need` rights in `pd`.
    pub(crate) fn resolve(
        mems: &MemTable,
        pd: u32,
        sges: &[Sge],
        need: Access,
    ) -> Result<Self, MemError> {
        let mut l = Self::empty();
        for (i, s) in sges.iter().take(MAX_SGE).enumerate() {
            if s.len > 0 {
                let m = mems.checked(s.lkey, pd, need, s.addr, u64::from(s.len))?;
                if let Some(slot) = l.mem.get_mut(i) {
                    *slot = Some(m);
                }
            }
            if let Some(slot) = l.sge.get_mut(i) {
                *slot = *s;
            }
            l.n = i + 1;
            // At most MAX_SGE u32 lengths: cannot overflow a u64.
            l.total += u64::from(s.len);
        }
        Ok(l)
    }

    /// Total octets the SGEs hold.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Copies message octets `off..off + out.len()` out of the buffers.
    pub(crate) fn read(&self, off: u64, out: &mut [u8]) -> Result<(), MemError> {
        self.walk(off, out.len(), |m, addr, r| {
            m.read(addr, out.get_mut(r).ok_or(MemError::Bounds)?)
        })
    }

    /// Copies `data` into the buffers at message offset `off`.
    pub(crate) fn write(&self, off: u64, data: &[u8]) -> Result<(), MemError> {
        self.walk(off, data.len(), |m, addr, r| {
            m.write(addr, data.get(r).ok_or(MemError::Bounds)?)
        })
    }

    /// Zero-copy transmit: `f(page, offset, n)` for each page piece of
    /// message octets `off..off + len`, if all of them are pinned user
    /// memory; `Ok(false)` (after some calls of `f`, perhaps) otherwise.
    pub(crate) fn user_pages(
        &self,
        off: u64,
        len: usize,
        mut f: impl FnMut(crate::kapi::zc::PageRef, usize, usize) -> Result,
    ) -> Result<bool, MemError> {
        let mut all = true;
        self.walk(off, len, |m, addr, r| {
            if all {
                all = m.user_pages(addr, r.len(), &mut f)?;
            }
            Ok(())
        })?;
        Ok(all)
    }

    /// Calls `f(region, address, range of the caller's slice)` for each SGE
    /// piece of message octets `off..off + len`; `Bounds` beyond the buffers.
    fn walk(
        &self,
        off: u64,
        len: usize,
        mut f: impl FnMut(&Checked, u64, Range<usize>) -> Result<(), MemError>,
    ) -> Result<(), MemError> {
        let end = off.checked_add(len as u64).ok_or(MemError::Bounds)?;
        if end > self.total {
            return Err(MemError::Bounds);
        }
        let mut base = 0u64; // message offset of the current SGE
        let mut done = 0usize; // octets of the caller's slice handled
        for i in 0..self.n {
            if done >= len {
                break;
            }
            let (Some(s), Some(mem)) = (self.sge.get(i), self.mem.get(i)) else {
                break;
            };
            let s_len = u64::from(s.len);
            let s_end = base + s_len;
            let pos = off + done as u64;
            if s_len > 0 && pos < s_end {
                let mem = mem.as_ref().ok_or(MemError::Stag)?;
                let inner = pos - base;
                let n = (s_end - pos).min((len - done) as u64) as usize;
                f(
                    mem,
                    s.addr.checked_add(inner).ok_or(MemError::Bounds)?,
                    done..done + n,
                )?;
                done += n;
            }
            base = s_end;
        }
        if done == len {
            Ok(())
        } else {
            Err(MemError::Bounds)
        }
    }
}

/// An Atomic's local result buffer, where the Atomic Response's original
/// value goes (RFC 7306 §5.2.2: 8 octets): the first 8 octets of the WQE's
/// first SGE, checked for local write once when the engine takes the
/// request. An ORQ entry holds it until the response comes, so it is one
/// region and an address, not a whole [`Local`] of six SGEs (an ORQ of
/// ORD 16 is then 1 KiB, not 4). User Atomics have exactly one SGE of 8
/// octets (`Sqe::validate`); a kernel consumer's first SGE must hold all 8.
pub(crate) struct AtomicSink {
    mem: Checked,
    addr: u64,
}

impl AtomicSink {
    /// Octets of the original value.
    const LEN: u32 = 8;

    /// Checks the first SGE of `sges` for the result, in `pd`.
    pub(crate) fn resolve(mems: &MemTable, pd: u32, sges: &[Sge]) -> Result<Self, WcStatus> {
        let s = sges.first().ok_or(WcStatus::LocLenErr)?;
        if s.len < Self::LEN {
            return Err(WcStatus::LocLenErr);
        }
        let mem = mems
            .checked(
                s.lkey,
                pd,
                Access::LOCAL_WRITE,
                s.addr,
                u64::from(Self::LEN),
            )
            .map_err(|_| WcStatus::LocProtErr)?;
        Ok(Self { mem, addr: s.addr })
    }

    /// Writes the original value (in host order).
    pub(crate) fn write(&self, original: u64) -> Result<(), MemError> {
        self.mem.write(self.addr, &original.to_ne_bytes())
    }
}

/// Executes a local WQE (REG_MR, LOCAL_INV, BIND_MW) of a QP in `pd`: the
/// engine runs it when it reaches the head of the SQ, then completes it.
pub(super) fn exec(mems: &MemTable, pd: u32, w: &SendWqe) -> WcStatus {
    let ok = match w.op {
        SendOp::RegMr => match &w.reg {
            Some((mem, key, access)) => mem
                .fast_register(pd, (*key & 0xff) as u8, *access, w.reg_range)
                .is_ok(),
            None => false,
        },
        SendOp::LocalInv => mems.invalidate(w.inv_rkey, pd).is_ok(),
        SendOp::BindMw => bind_mw(mems, pd, w).is_ok(),
        _ => false,
    };
    if ok {
        WcStatus::Success
    } else {
        WcStatus::LocProtErr
    }
}

/// Binds a type-2 window (IBA 10.6.7.2.2): the new rkey keeps the window's
/// index; the consumer chose its key byte.
fn bind_mw(mems: &MemTable, pd: u32, w: &SendWqe) -> Result<(), MemError> {
    let sge = match (w.num_sge, w.sge.first()) {
        (1, Some(sge)) => *sge,
        _ => return Err(MemError::Bounds),
    };
    if w.inv_rkey >> 8 != w.rkey >> 8 {
        return Err(MemError::Stag);
    }
    // By index: the consumer's copy of the old key may be stale.
    let mw = mems.by_index(w.rkey).ok_or(MemError::Stag)?;
    let region = mems.lookup(sge.lkey).ok_or(MemError::Stag)?;
    let access = Access(u32::try_from(w.imm).map_err(|_| MemError::Access)?);
    mw.bind(
        pd,
        region,
        (w.inv_rkey & 0xff) as u8,
        access,
        (sge.addr, u64::from(sge.len)),
    )
}
