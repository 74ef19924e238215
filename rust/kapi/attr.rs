// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Plain-data device and port attributes the driver decides, and their
//! translation into the RDMA core's `ib_device_attr` / `ib_port_attr` /
//! `ib_port_immutable`.

use super::bindings;

/// What `query_device` reports; every limit is what the driver implements.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DeviceAttr {
    /// Firmware version, `major << 32 | minor << 16 | patch`.
    pub(crate) fw_ver: u64,
    /// System image GUID (network byte order, as the core stores it).
    pub(crate) sys_image_guid: u64,
    /// IEEE OUI-style vendor id.
    pub(crate) vendor_id: u32,
    /// Vendor part id.
    pub(crate) vendor_part_id: u32,
    /// Hardware version.
    pub(crate) hw_ver: u32,
    /// Page sizes the device can map.
    pub(crate) page_size_cap: u64,
    /// Largest memory region.
    pub(crate) max_mr_size: u64,
    /// Queue pairs.
    pub(crate) max_qp: u32,
    /// Work requests per queue.
    pub(crate) max_qp_wr: u32,
    /// Scatter/gather entries per work request.
    pub(crate) max_sge: u32,
    /// Completion queues.
    pub(crate) max_cq: u32,
    /// Entries per completion queue.
    pub(crate) max_cqe: u32,
    /// Memory regions.
    pub(crate) max_mr: u32,
    /// Memory windows.
    pub(crate) max_mw: u32,
    /// SGEs of an RDMA Read sink.
    pub(crate) max_sge_rd: u32,
    /// Outstanding inbound Read/Atomic requests per QP (IRD).
    pub(crate) max_qp_rd_atom: u32,
    /// Outstanding outbound Read/Atomic requests per QP (ORD).
    pub(crate) max_qp_init_rd_atom: u32,
    /// Shared receive queues.
    pub(crate) max_srq: u32,
    /// Work requests per SRQ.
    pub(crate) max_srq_wr: u32,
    /// SGEs per SRQ work request.
    pub(crate) max_srq_sge: u32,
    /// Pages of a fast-registration page list.
    pub(crate) max_fast_reg_page_list_len: u32,
    /// Protection domains.
    pub(crate) max_pd: u32,
    /// `IB_DEVICE_*` flags.
    pub(crate) device_cap_flags: u64,
    /// `IBK_*` flags.
    pub(crate) kernel_cap_flags: u64,
}

impl DeviceAttr {
    /// Writes `self` into a core attribute structure, leaving the rest zero.
    pub(crate) fn write(&self, out: &mut bindings::ib_device_attr) {
        *out = bindings::ib_device_attr::default();
        out.fw_ver = self.fw_ver;
        out.sys_image_guid = self.sys_image_guid;
        out.max_mr_size = self.max_mr_size;
        out.page_size_cap = self.page_size_cap;
        out.vendor_id = self.vendor_id;
        out.vendor_part_id = self.vendor_part_id;
        out.hw_ver = self.hw_ver;
        out.max_qp = super::compat::attr_count(self.max_qp);
        out.max_qp_wr = super::compat::attr_count(self.max_qp_wr);
        out.device_cap_flags = self.device_cap_flags;
        out.kernel_cap_flags = self.kernel_cap_flags;
        out.max_send_sge = super::compat::attr_count(self.max_sge);
        out.max_recv_sge = super::compat::attr_count(self.max_sge);
        out.max_sge_rd = super::compat::attr_count(self.max_sge_rd);
        out.max_qp_rd_atom = super::compat::attr_count(self.max_qp_rd_atom);
        out.max_qp_init_rd_atom = super::compat::attr_count(self.max_qp_init_rd_atom);
        out.max_res_rd_atom =
            super::compat::attr_count(self.max_qp_rd_atom.saturating_mul(self.max_qp));
        out.max_srq = super::compat::attr_count(self.max_srq);
        out.max_srq_wr = super::compat::attr_count(self.max_srq_wr);
        out.max_srq_sge = super::compat::attr_count(self.max_srq_sge);
        out.max_fast_reg_page_list_len = self.max_fast_reg_page_list_len;
        out.max_cq = super::compat::attr_count(self.max_cq);
        out.max_cqe = super::compat::attr_count(self.max_cqe);
        out.max_mr = super::compat::attr_count(self.max_mr);
        out.max_mw = super::compat::attr_count(self.max_mw);
        out.max_pd = super::compat::attr_count(self.max_pd);
        // RFC 7306 §5.3: the responder updates the target with a 64-bit
        // cmpxchg on the mapped word (`Mem::atomic64`), so the operation is
        // atomic against every QP of the device and against CPU atomics.
        out.atomic_cap = bindings::ib_atomic_cap_IB_ATOMIC_GLOB;
        out.masked_atomic_cap = bindings::ib_atomic_cap_IB_ATOMIC_GLOB;
        out.max_pkeys = 1;
    }
}

/// Logical port state, as the verbs consumer sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PortState {
    /// Link up: the netdev is running and has carrier.
    Active,
    /// Link down.
    Down,
}

/// What `query_port` reports.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PortAttr {
    /// Logical and physical state.
    pub(crate) state: PortState,
    /// Largest path MTU the port supports (`ib_mtu` enum value).
    pub(crate) max_mtu: bindings::ib_mtu,
    /// Path MTU derived from the netdev MTU (`ib_mtu` enum value).
    pub(crate) active_mtu: bindings::ib_mtu,
    /// The netdev MTU in bytes.
    pub(crate) phys_mtu: u32,
    /// Entries in the GID table.
    pub(crate) gid_tbl_len: u32,
    /// Entries in the P_Key table.
    pub(crate) pkey_tbl_len: u16,
    /// Largest message.
    pub(crate) max_msg_sz: u32,
    /// `IB_SPEED_*`.
    pub(crate) active_speed: u16,
    /// `IB_WIDTH_*`.
    pub(crate) active_width: u8,
}

impl PortAttr {
    /// Writes `self` over the core's pre-filled port attributes.
    pub(crate) fn write(&self, out: &mut bindings::ib_port_attr) {
        let (state, phys) = match self.state {
            PortState::Active => (
                bindings::ib_port_state_IB_PORT_ACTIVE,
                bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP,
            ),
            PortState::Down => (
                bindings::ib_port_state_IB_PORT_DOWN,
                bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED,
            ),
        };
        out.state = state;
        out.phys_state = phys as u8;
        out.max_mtu = self.max_mtu;
        out.active_mtu = self.active_mtu;
        out.phys_mtu = self.phys_mtu;
        out.gid_tbl_len = super::compat::attr_count(self.gid_tbl_len);
        out.pkey_tbl_len = self.pkey_tbl_len;
        out.max_msg_sz = self.max_msg_sz;
        out.active_speed = self.active_speed;
        out.active_width = self.active_width;
        out.port_cap_flags = 0;
        out.max_vl_num = 1;
    }
}

/// What `get_port_immutable` reports.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PortImmutable {
    /// Entries in the P_Key table.
    pub(crate) pkey_tbl_len: u16,
    /// Entries in the GID table.
    pub(crate) gid_tbl_len: u32,
    /// `RDMA_CORE_PORT_*` flags.
    pub(crate) core_cap_flags: u32,
}

impl PortImmutable {
    /// Writes `self` into the core's immutable port data.
    pub(crate) fn write(&self, out: &mut bindings::ib_port_immutable) {
        out.pkey_tbl_len = i32::from(self.pkey_tbl_len);
        out.gid_tbl_len = super::compat::attr_count(self.gid_tbl_len);
        out.core_cap_flags = self.core_cap_flags;
        // iWARP has no management datagrams.
        out.max_mad_size = 0;
    }
}
