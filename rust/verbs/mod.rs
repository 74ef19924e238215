// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Device-level verbs: device and port queries, user contexts and protection
//! domains; the limits are those of the verbs objects (cq, mem, qp, srq).

#![forbid(unsafe_code)]

use crate::{
    abi,
    kapi::{
        attr::{DeviceAttr, PortAttr, PortImmutable},
        bindings,
        ib::IbDev,
        udata::Udata,
    },
    objects::device::Device,
};
use kernel::prelude::*;

pub(crate) mod cq;
pub(crate) mod driver;
pub(crate) mod link;
pub(crate) mod mr;
pub(crate) mod netdev_events;
pub(crate) mod qp;
pub(crate) mod srq;
pub(crate) mod stats;

/// Vendor id: ASCII "rsw"; not an IEEE OUI (rsiw is software).
pub(crate) const VENDOR_ID: u32 = 0x0072_7377;
/// Vendor part id.
pub(crate) const VENDOR_PART_ID: u32 = 1;
/// Firmware version 0.1.0 (`major << 32 | minor << 16 | patch`).
pub(crate) const FW_VER: u64 = 1 << 16;
/// Protection domains per device.
pub(crate) const MAX_PD: u32 = 1024;
/// The only port.
const PORT: u32 = 1;
/// Largest message: a DDP Message Offset is 32 bits (RFC 5041 §5.2).
const MAX_MSG_SZ: u32 = u32::MAX;
/// GID table: index 0 is the MAC-based GID, the others the netdev's IP
/// addresses (IPv4 mapped into IPv6, then IPv6), which QP connections name.
pub(crate) const GID_TBL_LEN: u32 = 16;

pub(super) fn check_port(port: u32) -> Result {
    if port == PORT {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

/// `query_device`: the limits of what is implemented today.
pub(crate) fn query_device(dev: &Device, udata: Option<&Udata<'_>>) -> Result<DeviceAttr> {
    // No driver-specific query_device input or output is defined.
    if let Some(u) = udata {
        if u.inlen() != 0 || u.outlen() != 0 {
            return Err(EINVAL);
        }
    }
    let guid = crate::verbs::link::node_guid(dev.mac());
    Ok(DeviceAttr {
        fw_ver: FW_VER,
        sys_image_guid: guid,
        vendor_id: VENDOR_ID,
        vendor_part_id: VENDOR_PART_ID,
        hw_ver: 0,
        page_size_cap: kernel::page::PAGE_SIZE as u64,
        max_mr_size: u64::MAX,
        max_qp: crate::objects::qp::MAX_QP,
        max_qp_wr: crate::objects::qp::MAX_QP_WR,
        max_sge: crate::queue::wr::MAX_SGE as u32,
        // A Read Request names one data sink (RFC 5040 §4.4).
        max_sge_rd: 1,
        max_qp_rd_atom: crate::objects::qp::MAX_RD_ATOMIC,
        max_qp_init_rd_atom: crate::objects::qp::MAX_RD_ATOMIC,
        max_cq: crate::queue::cq::MAX_CQ,
        max_cqe: crate::queue::cq::MAX_CQE,
        max_mr: crate::resources::mem::MAX_MR,
        // Windows share the STag table with regions.
        max_mw: crate::resources::mem::MAX_MR,
        max_srq: crate::objects::srq::MAX_SRQ,
        max_srq_wr: crate::objects::srq::MAX_WR,
        max_srq_sge: crate::queue::wr::MAX_SGE as u32,
        max_fast_reg_page_list_len: crate::resources::mem::MAX_PBL,
        max_pd: MAX_PD,
        device_cap_flags: (bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS
            | bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW
            | bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B)
            as u64,
        // Lets `rdma link delete` unregister the device.
        kernel_cap_flags: u64::from(bindings::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG),
    })
}

/// Path MTU enum for a netdev MTU (the largest IB MTU that fits).
fn mtu_enum(mtu: u32) -> bindings::ib_mtu {
    match mtu {
        4096.. => bindings::ib_mtu_IB_MTU_4096,
        2048.. => bindings::ib_mtu_IB_MTU_2048,
        1024.. => bindings::ib_mtu_IB_MTU_1024,
        512.. => bindings::ib_mtu_IB_MTU_512,
        _ => bindings::ib_mtu_IB_MTU_256,
    }
}

/// `query_port`: state and MTU follow the netdev.
pub(crate) fn query_port(ib: &IbDev<'_, Device>, dev: &Device, port: u32) -> Result<PortAttr> {
    check_port(port)?;
    let mtu = dev.netdev().mtu();
    let (active_speed, active_width) = ib.eth_speed().unwrap_or((
        bindings::ib_port_speed_IB_SPEED_SDR as u16,
        bindings::ib_port_width_IB_WIDTH_1X as u8,
    ));
    Ok(PortAttr {
        state: dev.port_state(),
        max_mtu: bindings::ib_mtu_IB_MTU_4096,
        active_mtu: mtu_enum(mtu),
        phys_mtu: mtu,
        gid_tbl_len: GID_TBL_LEN,
        pkey_tbl_len: 1,
        max_msg_sz: MAX_MSG_SZ,
        active_speed,
        active_width,
    })
}

/// `get_port_immutable`: one iWARP port, [`GID_TBL_LEN`] GIDs, one P_Key.
pub(crate) fn port_immutable(_dev: &Device, port: u32) -> Result<PortImmutable> {
    check_port(port)?;
    Ok(PortImmutable {
        pkey_tbl_len: 1,
        gid_tbl_len: GID_TBL_LEN,
        core_cap_flags: bindings::RDMA_CORE_PORT_IWARP,
    })
}

/// `query_gid`: index 0 is the netdev's MAC, zero padded (the iWARP
/// convention, what rdma_cm looks up); index `i` ≥ 1 the netdev's `i`-th IP
/// address as an IPv6 address (IPv4 mapped), or the zero GID, which the core
/// keeps as an empty entry. Address changes re-read the table (the shim's
/// address notifiers raise `IB_EVENT_GID_CHANGE`).
pub(crate) fn query_gid(dev: &Device, port: u32, index: i32) -> Result<[u8; 16]> {
    check_port(port)?;
    let index = usize::try_from(index).map_err(|_| EINVAL)?;
    if index >= GID_TBL_LEN as usize {
        return Err(EINVAL);
    }
    let mut gid = [0u8; 16];
    if index == 0 {
        for (g, m) in gid.iter_mut().zip(dev.mac()) {
            *g = m;
        }
        return Ok(gid);
    }
    let mut ips = [[0u8; 16]; GID_TBL_LEN as usize - 1];
    let n = dev.netdev().ips(&mut ips);
    Ok(ips
        .get(..n)
        .and_then(|v| v.get(index - 1))
        .copied()
        .unwrap_or(gid))
}

/// `dealloc_driver`: the device's QP-connection listener stops (it holds
/// the device's state).
pub(crate) fn dealloc_driver(dev: &Device) {
    if let Some(l) = dev.take_qp_listener() {
        l.stop();
    }
}

/// `query_pkey`: iWARP has no partitions; the one entry is the default key.
pub(crate) fn query_pkey(_dev: &Device, port: u32, index: u16) -> Result<u16> {
    check_port(port)?;
    if index != 0 {
        return Err(EINVAL);
    }
    Ok(0xffff)
}

/// `alloc_ucontext`: tells the provider which ABI the module speaks.
pub(crate) fn alloc_ucontext(_dev: &Device, udata: Option<&mut Udata<'_>>) -> Result {
    // Contexts exist only for user space.
    let udata = udata.ok_or(EINVAL)?;
    udata.respond(&abi::AllocUcontextResp {
        abi_version: abi::ABI_VERSION,
        reserved: 0,
    })
}

/// `dealloc_ucontext`: a context owns nothing yet.
pub(crate) fn dealloc_ucontext(_dev: &Device) {}

/// `alloc_pd`: counts the PD against [`MAX_PD`]; user PDs learn their number.
pub(crate) fn alloc_pd(dev: &Device, udata: Option<&mut Udata<'_>>) -> Result<u32> {
    let pdn = dev.get_pd(MAX_PD).ok_or(ENOMEM)?;
    if let Some(u) = udata {
        if let Err(e) = u.respond(&abi::AllocPdResp { pdn, reserved: 0 }) {
            dev.put_pd();
            return Err(e);
        }
    }
    Ok(pdn)
}

/// `dealloc_pd`.
pub(crate) fn dealloc_pd(dev: &Device, _pdn: u32) {
    dev.put_pd();
}
