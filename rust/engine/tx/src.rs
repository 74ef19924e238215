// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Where a message's payload comes from: nothing, inline data, a local
//! buffer (SGEs), or a Read Response's region; read by copy or referenced
//! page by page for zero-copy.

use super::super::Local;
use crate::{
    kapi::zc::{PageRef, Seg, Segs},
    queue::wr::MAX_INLINE,
    resources::mem::{Checked, MemError},
};
use kernel::prelude::*;

/// Where a message's payload comes from.
pub(super) enum Src {
    None,
    Inline([u8; MAX_INLINE]),
    Local(Local),
    /// Read Response: the region named by the Read Request's Data Source,
    /// as the request's check saw it.
    Region {
        mem: Checked,
        addr: u64,
    },
}

impl Src {
    pub(super) fn read(&self, off: u32, out: &mut [u8]) -> Result<(), MemError> {
        match self {
            Self::None => {
                if out.is_empty() {
                    Ok(())
                } else {
                    Err(MemError::Bounds)
                }
            }
            Self::Inline(d) => {
                let start = off as usize;
                let src = d.get(start..start + out.len()).ok_or(MemError::Bounds)?;
                out.copy_from_slice(src);
                Ok(())
            }
            Self::Local(l) => l.read(u64::from(off), out),
            Self::Region { mem, addr } => mem.read(
                addr.checked_add(u64::from(off)).ok_or(MemError::Bounds)?,
                out,
            ),
        }
    }

    /// References to the pages of payload octets `off..off + len` appended
    /// to `segs`, if they all are pinned user memory; `Ok(false)` otherwise.
    pub(super) fn user_pages(
        &self,
        off: u32,
        len: usize,
        segs: &mut Segs,
    ) -> Result<bool, MemError> {
        let mut push = |p: PageRef, o: usize, n: usize| -> Result {
            // Full (an FPDU beyond MAX_SEGS pages): the caller copies.
            segs.push(Seg::new(p, o, n)?)
        };
        match self {
            Self::Local(l) => l.user_pages(u64::from(off), len, &mut push),
            Self::Region { mem, addr } => mem.user_pages(
                addr.checked_add(u64::from(off)).ok_or(MemError::Bounds)?,
                len,
                &mut push,
            ),
            Self::None | Self::Inline(_) => Ok(false),
        }
    }
}
