// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The rsiw provider's direct-verbs calls (`provider/include/rsiwdv.h`: RFC 7306 §5.2.1
//! masked atomics, §6 64-bit Immediate Data), found at run time with `dlsym` so this
//! program builds and runs without them.

use crate::ffi::sys::{ibv_cq, ibv_qp, ibv_sge, ibv_wc};
use crate::ffi::{Cq, Qp, Sge};
use std::ffi::{c_int, c_uint, c_void, CStr};

type FetchAdd =
    unsafe extern "C" fn(*mut ibv_qp, u64, u64, u32, u64, u32, u64, u64, c_uint) -> c_int;
type CmpSwp =
    unsafe extern "C" fn(*mut ibv_qp, u64, u64, u32, u64, u32, u64, u64, u64, u64, c_uint) -> c_int;
type WriteImm64 =
    unsafe extern "C" fn(*mut ibv_qp, u64, *const ibv_sge, c_int, u64, u32, u64, c_uint) -> c_int;
type PollCq = unsafe extern "C" fn(*mut ibv_cq, c_int, *mut RawWc) -> c_int;

/// `struct rsiwdv_wc`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct RawWc {
    wc: ibv_wc,
    imm64: u64,
}

/// The provider's exported functions.
pub struct Dv {
    fetch_add: FetchAdd,
    cmp_swp: CmpSwp,
    write_imm64: WriteImm64,
    poll_cq: PollCq,
}

/// Where libibverbs loads the rsiw provider from (the image installs it there).
const PROVIDER: &[&CStr] = &[
    c"/usr/lib/x86_64-linux-gnu/libibverbs/librsiw-rdmav34.so",
    c"librsiw-rdmav34.so",
];

fn sym(h: *mut c_void, name: &CStr) -> Result<*mut c_void, String> {
    // SAFETY: `h` is a live dlopen handle, `name` NUL-terminated.
    let p = unsafe { libc::dlsym(h, name.as_ptr()) };
    if p.is_null() {
        return Err(format!(
            "the rsiw provider exports no {}",
            name.to_string_lossy()
        ));
    }
    Ok(p)
}

/// A completion with the 64-bit immediate.
pub struct Wc64 {
    /// `wr_id`.
    pub wr_id: u64,
    /// `IBV_WC_*` status.
    pub status: u32,
    /// `IBV_WC_*` opcode.
    pub opcode: u32,
    /// `IBV_WC_WITH_*` flags.
    pub flags: u32,
    /// Immediate Data, host order.
    pub imm64: u64,
}

fn rc(r: c_int, what: &str) -> Result<(), String> {
    match r {
        0 => Ok(()),
        e => Err(format!(
            "{what}: {}",
            std::io::Error::from_raw_os_error(e.abs())
        )),
    }
}

impl Dv {
    /// Resolves the four calls in the (already loaded) rsiw provider.
    pub fn load() -> Result<Self, String> {
        let h = provider()?;
        let f = sym(h, c"rsiwdv_post_masked_fetch_add")?;
        let c = sym(h, c"rsiwdv_post_masked_cmp_swp")?;
        let w = sym(h, c"rsiwdv_post_write_imm64")?;
        let p = sym(h, c"rsiwdv_poll_cq")?;
        // SAFETY: the symbols are the functions rsiwdv.h declares, with these C signatures.
        unsafe {
            Ok(Dv {
                fetch_add: std::mem::transmute::<*mut c_void, FetchAdd>(f),
                cmp_swp: std::mem::transmute::<*mut c_void, CmpSwp>(c),
                write_imm64: std::mem::transmute::<*mut c_void, WriteImm64>(w),
                poll_cq: std::mem::transmute::<*mut c_void, PollCq>(p),
            })
        }
    }

    /// Masked FetchAdd `(add, mask)` on the peer's word `to` = `(addr, rkey)`; the original
    /// lands in `res` (8 bytes).
    pub fn masked_fetch_add(
        &self,
        qp: &Qp,
        wr_id: u64,
        res: &Sge,
        to: (u64, u32),
        add_mask: (u64, u64),
        flags: u32,
    ) -> Result<(), String> {
        let laddr = res.mr.addr() + res.offset as u64;
        let (raddr, rkey) = to;
        // SAFETY: live QP; `res` lies in a registered region that outlives the WR.
        let r = unsafe {
            (self.fetch_add)(
                qp.as_raw(),
                wr_id,
                laddr,
                res.mr.lkey(),
                raddr,
                rkey,
                add_mask.0,
                add_mask.1,
                flags,
            )
        };
        rc(r, "rsiwdv_post_masked_fetch_add")
    }

    /// Masked CmpSwap: `cmp = (compare, compare_mask)`, `swap = (swap, swap_mask)`.
    #[allow(clippy::too_many_arguments)]
    pub fn masked_cmp_swap(
        &self,
        qp: &Qp,
        wr_id: u64,
        res: &Sge,
        to: (u64, u32),
        cmp: (u64, u64),
        swap: (u64, u64),
        flags: u32,
    ) -> Result<(), String> {
        let laddr = res.mr.addr() + res.offset as u64;
        let (raddr, rkey) = to;
        // SAFETY: as in `masked_fetch_add`.
        let r = unsafe {
            (self.cmp_swp)(
                qp.as_raw(),
                wr_id,
                laddr,
                res.mr.lkey(),
                raddr,
                rkey,
                cmp.0,
                cmp.1,
                swap.0,
                swap.1,
                flags,
            )
        };
        rc(r, "rsiwdv_post_masked_cmp_swp")
    }

    /// RDMA Write of `src` to `to` = `(addr, rkey)` with 64-bit Immediate Data.
    pub fn write_imm64(
        &self,
        qp: &Qp,
        wr_id: u64,
        src: &Sge,
        to: (u64, u32),
        imm: u64,
        flags: u32,
    ) -> Result<(), String> {
        let (raddr, rkey) = to;
        let sge = ibv_sge {
            addr: src.mr.addr() + src.offset as u64,
            length: src.len,
            lkey: src.mr.lkey(),
        };
        // SAFETY: live QP; `sge` lives across the call; its region outlives the WR.
        let r = unsafe { (self.write_imm64)(qp.as_raw(), wr_id, &sge, 1, raddr, rkey, imm, flags) };
        rc(r, "rsiwdv_post_write_imm64")
    }

    /// Polls up to 16 completions with their 64-bit immediates.
    pub fn poll(&self, cq: &Cq) -> Result<Vec<Wc64>, String> {
        let mut wc = [RawWc::default(); 16];
        // SAFETY: live CQ; `wc` has room for 16 entries.
        let n = unsafe { (self.poll_cq)(cq.as_raw(), 16, wc.as_mut_ptr()) };
        let n = usize::try_from(n).map_err(|_| format!("rsiwdv_poll_cq returned {n}"))?;
        Ok(wc
            .iter()
            .take(n)
            .map(|w| Wc64 {
                wr_id: w.wc.wr_id,
                status: w.wc.status,
                opcode: w.wc.opcode,
                flags: w.wc.wc_flags,
                imm64: w.imm64,
            })
            .collect())
    }
}

/// `struct rsiwdv_ring`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RawRing {
    /// The mapping: `rsiw_abi::ring::RingHeader`, then the slots.
    pub buf: *mut c_void,
    /// Slots.
    pub entries: u32,
    /// Bytes per slot.
    pub stride: u32,
}

/// `struct rsiwdv_qp`.
#[repr(C)]
struct RawQpInfo {
    sq: RawRing,
    rq: RawRing,
}

type QueryQp = unsafe extern "C" fn(*mut ibv_qp, *mut RawQpInfo) -> c_int;
type RingSqDoorbell = unsafe extern "C" fn(*mut ibv_qp) -> c_int;

/// `rsiwdv_ring_sq_doorbell`.
pub fn ring_sq_doorbell(qp: &Qp) -> Result<(), String> {
    let f = sym(provider()?, c"rsiwdv_ring_sq_doorbell")?;
    // SAFETY: the symbol is the function rsiwdv.h declares, with this signature.
    let f = unsafe { std::mem::transmute::<*mut c_void, RingSqDoorbell>(f) };
    // SAFETY: live QP.
    rc(unsafe { f(qp.as_raw()) }, "rsiwdv_ring_sq_doorbell")
}

fn provider() -> Result<*mut c_void, String> {
    let mut h = std::ptr::null_mut();
    for p in PROVIDER {
        // SAFETY: NUL-terminated path; the provider is normally loaded already, this
        // only takes another reference (never closed: the provider stays loaded).
        h = unsafe { libc::dlopen(p.as_ptr(), libc::RTLD_NOW) };
        if !h.is_null() {
            break;
        }
    }
    if h.is_null() {
        return Err("cannot dlopen librsiw-rdmav34.so".into());
    }
    Ok(h)
}

/// `rsiwdv_query_qp`: the QP's send and receive rings as mapped in this process.
pub fn query_qp(qp: &Qp) -> Result<(RawRing, RawRing), String> {
    let f = sym(provider()?, c"rsiwdv_query_qp")?;
    // SAFETY: the symbol is the function rsiwdv.h declares, with this signature.
    let f = unsafe { std::mem::transmute::<*mut c_void, QueryQp>(f) };
    let mut info = std::mem::MaybeUninit::<RawQpInfo>::uninit();
    // SAFETY: live QP; `info` is writable.
    rc(
        unsafe { f(qp.as_raw(), info.as_mut_ptr()) },
        "rsiwdv_query_qp",
    )?;
    // SAFETY: written by the successful call.
    let info = unsafe { info.assume_init() };
    Ok((info.sq, info.rq))
}
