// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The uverbs command responses with rsiw's driver part appended (the C providers'
//! `DECLARE_DRV_CMD`), and the checks on what the kernel returned in them.

use crate::sys;
use core::ffi::{c_char, c_int};
use core::mem::{offset_of, size_of};
use rsiw_abi::cmd::{CreateCqResp, CreateQpResp, CreateSrqResp};
use rsiw_abi::{AllocPdResp, AllocUcontextResp, ABI_VERSION};

/// `GET_CONTEXT` response: the uverbs core part, then rsiw's udata.
#[repr(C)]
#[derive(Debug, Default)]
pub struct GetContextResp {
    /// Filled by the uverbs core.
    pub core: sys::ib_uverbs_get_context_resp,
    /// Filled by the rsiw kernel module.
    pub drv: AllocUcontextResp,
}

/// `ALLOC_PD` response: the uverbs core part, then rsiw's udata.
#[repr(C)]
#[derive(Debug, Default)]
pub struct AllocPdRespFull {
    /// Filled by the uverbs core.
    pub core: sys::ib_uverbs_alloc_pd_resp,
    /// Filled by the rsiw kernel module.
    pub drv: AllocPdResp,
}

/// `CREATE_CQ` response: the uverbs core part, then rsiw's ring description.
#[repr(C)]
#[derive(Debug, Default)]
pub struct CreateCqRespFull {
    /// Filled by the uverbs core.
    pub core: sys::ib_uverbs_create_cq_resp,
    /// Filled by the rsiw kernel module.
    pub drv: CreateCqResp,
}

/// `CREATE_QP` response: the uverbs core part, then rsiw's ring descriptions.
#[repr(C)]
#[derive(Debug, Default)]
pub struct CreateQpRespFull {
    /// Filled by the uverbs core.
    pub core: sys::ib_uverbs_create_qp_resp,
    /// Filled by the rsiw kernel module.
    pub drv: CreateQpResp,
}

/// `CREATE_SRQ` response: the uverbs core part, then rsiw's ring description.
#[repr(C)]
#[derive(Debug, Default)]
pub struct CreateSrqRespFull {
    /// Filled by the uverbs core.
    pub core: sys::ib_uverbs_create_srq_resp,
    /// Filled by the rsiw kernel module.
    pub drv: CreateSrqResp,
}

// libibverbs puts the driver udata right after the core response (`_write_set_uhw`
// with `sizeof(*resp)`): padding between the two would shift it.
const _: () =
    assert!(offset_of!(GetContextResp, drv) == size_of::<sys::ib_uverbs_get_context_resp>());
const _: () =
    assert!(offset_of!(AllocPdRespFull, drv) == size_of::<sys::ib_uverbs_alloc_pd_resp>());
const _: () =
    assert!(offset_of!(CreateCqRespFull, drv) == size_of::<sys::ib_uverbs_create_cq_resp>());
const _: () =
    assert!(offset_of!(CreateQpRespFull, drv) == size_of::<sys::ib_uverbs_create_qp_resp>());
const _: () =
    assert!(offset_of!(CreateSrqRespFull, drv) == size_of::<sys::ib_uverbs_create_srq_resp>());

/// Accept a ucontext only from a kernel that speaks our ABI; the errno otherwise.
///
/// libibverbs already matched the device's `abi_version` (sysfs) against
/// [`ABI_VERSION`]; this catches a module that answers with another layout anyway.
pub fn check_ucontext(resp: &AllocUcontextResp) -> Result<(), c_int> {
    if resp.abi_version != ABI_VERSION {
        return Err(sys::EPROTO as c_int);
    }
    Ok(())
}

/// Length of `ibv_device_attr::fw_ver`.
pub const FW_VER_LEN: usize = 64;

/// The uverbs `fw_ver` (major in bits 32..48, minor 16..32, sub-minor 0..16, the
/// convention of the in-kernel iWARP drivers) as the NUL-terminated text that
/// `ibv_devinfo` prints.
pub fn fw_ver_text(raw: u64) -> [c_char; FW_VER_LEN] {
    let text = format!(
        "{}.{}.{}",
        (raw >> 32) & 0xffff,
        (raw >> 16) & 0xffff,
        raw & 0xffff
    );
    let mut out = [0 as c_char; FW_VER_LEN];
    // At most 17 bytes ("65535.65535.65535"), so the last byte stays NUL.
    for (o, b) in out.iter_mut().zip(text.bytes().take(FW_VER_LEN - 1)) {
        *o = b as c_char;
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;

    fn text(a: &[c_char; FW_VER_LEN]) -> String {
        a.iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8 as char)
            .collect()
    }

    #[test]
    fn fw_ver_splits_fields() {
        assert_eq!(text(&fw_ver_text(0)), "0.0.0");
        assert_eq!(text(&fw_ver_text(0x0001_0002_0003)), "1.2.3");
        // Bits above 48 are not part of any field.
        assert_eq!(text(&fw_ver_text(u64::MAX)), "65535.65535.65535");
        assert_eq!(fw_ver_text(u64::MAX)[17], 0);
    }

    #[test]
    fn ucontext_abi_must_match() {
        let ok = AllocUcontextResp {
            abi_version: ABI_VERSION,
            reserved: 0,
        };
        assert_eq!(check_ucontext(&ok), Ok(()));
        let old = AllocUcontextResp {
            abi_version: ABI_VERSION + 1,
            reserved: 0,
        };
        assert_eq!(check_ucontext(&old), Err(71));
        assert_eq!(check_ucontext(&AllocUcontextResp::default()), Err(71));
    }

    #[test]
    fn driver_udata_follows_core_response() {
        // Offsets the kernel module writes its udata at (uverbs core sizes).
        assert_eq!(offset_of!(GetContextResp, drv), 8);
        assert_eq!(size_of::<GetContextResp>(), 16);
        assert_eq!(offset_of!(AllocPdRespFull, drv), 4);
        assert_eq!(size_of::<AllocPdRespFull>(), 12);
        assert_eq!(offset_of!(CreateCqRespFull, drv), 8);
        assert_eq!(offset_of!(CreateQpRespFull, drv), 32);
        assert_eq!(offset_of!(CreateSrqRespFull, drv), 16);
    }
}
