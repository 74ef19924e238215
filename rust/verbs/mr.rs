// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The memory verbs: DMA, user and fast-registration regions (RFC 5040 §6.4
//! STags), `map_mr_sg`, type-2 memory windows.

use crate::{
    kapi::{bindings as b, mr, obj::eopnotsupp, umem::UserPages},
    objects::device::Device,
    resources::mem::{Access, Mem, MemInit, MemKind, MAX_PBL},
};
use kernel::{prelude::*, sync::Arc};

/// Refuses rights rsiw does not know (e.g. on-demand paging).
fn access_of(access: i32) -> Result<Access> {
    let a = access as u32;
    if a & !Access::KNOWN != 0 {
        return Err(eopnotsupp());
    }
    Ok(Access(a))
}

/// Registers `init` and wraps it in a new `ib_mr`.
fn new_mr(dev: &Device, init: MemInit) -> Result<*mut b::ib_mr> {
    let (iova, len) = (init.iova, init.len);
    let mem = dev.mems().register(init)?;
    mr::mr_new(mem.clone(), mem.stag(), iova, len).inspect_err(|_| dev.mems().deregister(&mem))
}

/// `get_dma_mr`: all kernel memory (virtual DMA); the core uses it for
/// `pd->local_dma_lkey`.
pub(crate) fn get_dma(dev: &Device, pdn: u32, access: i32) -> Result<*mut b::ib_mr> {
    let init = MemInit {
        kind: MemKind::Dma,
        pd: pdn,
        access: access_of(access)?,
        iova: 0,
        len: u64::MAX,
    };
    new_mr(dev, init)
}

/// The checks of `reg_user_mr` before anything is pinned.
pub(crate) fn user_access(iova: u64, len: u64, access: i32) -> Result<Access> {
    if len == 0 || iova.checked_add(len).is_none() {
        return Err(EINVAL);
    }
    access_of(access)
}

/// `reg_user_mr` of `pages` (pinned by the caller with `user_access`'s rights).
pub(crate) fn reg_user(
    dev: &Device,
    pdn: u32,
    pages: UserPages,
    (iova, len): (u64, u64),
    access: Access,
) -> Result<*mut b::ib_mr> {
    let init = MemInit {
        kind: MemKind::User(pages),
        pd: pdn,
        access,
        iova,
        len,
    };
    new_mr(dev, init)
}

/// `alloc_mr`: a fast-registration region (FRWR) of `max_num_sg` pages.
pub(crate) fn alloc(
    dev: &Device,
    pdn: u32,
    kind: b::ib_mr_type,
    max_num_sg: u32,
) -> Result<*mut b::ib_mr> {
    if kind != b::ib_mr_type_IB_MR_TYPE_MEM_REG {
        return Err(eopnotsupp());
    }
    if max_num_sg == 0 || max_num_sg > MAX_PBL {
        return Err(EINVAL);
    }
    let init = MemInit {
        kind: MemKind::Pbl(max_num_sg as usize),
        pd: pdn,
        access: Access::NONE,
        iova: 0,
        len: 0,
    };
    new_mr(dev, init)
}

/// `dereg_mr` may go ahead: a region with bound windows stays (IBA
/// o10-36.2.1).
pub(crate) fn may_dereg(mem: &Mem) -> Result {
    if mem.has_windows() {
        return Err(EBUSY);
    }
    Ok(())
}

/// `dereg_mr`: the STag disappears at once; memory a placement still
/// references is released with the last `Arc<Mem>`.
pub(crate) fn dereg(dev: &Device, mem: Option<Arc<Mem>>) {
    if let Some(mem) = mem {
        dev.mems().deregister(&mem);
    }
}

/// `alloc_mw`: a type-2 memory window, invalid until a Bind MW work request
/// binds it; returns it and its rkey.
pub(crate) fn alloc_mw(dev: &Device, pdn: u32, kind: b::ib_mw_type) -> Result<(Arc<Mem>, u32)> {
    if kind != b::ib_mw_type_IB_MW_TYPE_2 {
        // Type 1 (bound by a verb, not a work request) is not offered.
        return Err(eopnotsupp());
    }
    let init = MemInit {
        kind: MemKind::Window,
        pd: pdn,
        access: Access::NONE,
        iova: 0,
        len: 0,
    };
    let mem = dev.mems().register(init)?;
    let rkey = mem.stag();
    Ok((mem, rkey))
}

/// Start of `map_mr_sg` with pages of `page_size` (the shim then runs
/// `ib_sg_to_pages`).
pub(crate) fn map_begin(mem: &Mem, page_size: u32) -> Result {
    if !mem.is_frwr() {
        return Err(EINVAL);
    }
    mem.map_begin(u64::from(page_size))
}
