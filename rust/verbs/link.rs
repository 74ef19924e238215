// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! `rdma link add <name> type rsiw netdev <ndev>`: creating and registering
//! an rsiw device on a netdev.

use crate::{
    kapi::{
        ib::{DevInit, NewDevice},
        netdev::{random_mac, NetDevice, ETH_ALEN},
        registry::Registry,
    },
    objects::device::Device,
};
use kernel::{prelude::*, str::CStr};

/// Node description shown by `ibv_devinfo` and sysfs.
const NODE_DESC: &[u8] = b"rsiw";

/// Creates, records and registers a device named `name` on `netdev`.
pub(crate) fn new_link(reg: &Registry<Device>, name: &CStr, netdev: NetDevice) -> Result {
    // A device without a hardware address still needs a unique GID.
    let mac = netdev.hw_addr().unwrap_or_else(random_mac);
    let data = Device::new(netdev, mac)?;
    let init = DevInit {
        node_guid: node_guid(mac),
        num_comp_vectors: 1,
        node_desc: NODE_DESC,
    };
    // From here on a failure drops `dev`, whose deallocation runs
    // `dealloc_driver` and so undoes the registry entry too.
    let dev = NewDevice::alloc(&init, data.clone())?;
    dev.set_netdev(data.netdev())?;
    reg.insert(&dev, data.clone())?;
    // The QP-connection listener holds its port from now on, so that no
    // local user can take the port from under the device. A port already
    // taken fails the device (the peers would reach whoever has it).
    let port = crate::kapi::params::cm().qp_port;
    if port != 0 {
        if let Err(e) = crate::cm::qpconn::listener(&data) {
            pr_warn!(
                "{name}: cannot listen on qp_conn_port {port} ({e:?}): device not created; free the port, or load rsiw with another qp_conn_port (0: no QP connections from modify_qp)\n"
            );
            return Err(e);
        }
    }
    dev.register(name)?;
    let [a, b, c, d, e, f] = mac;
    pr_info!("{name}: iWARP device, address {a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{f:02x}\n");
    Ok(())
}

/// The node GUID for `mac`, as the core stores it (network byte order).
pub(crate) fn node_guid(mac: [u8; ETH_ALEN]) -> u64 {
    u64::from_ne_bytes(eui64(mac))
}

/// Modified EUI-64 from an EUI-48 (RFC 4291 appendix A), in wire order.
fn eui64(mac: [u8; ETH_ALEN]) -> [u8; 8] {
    [
        mac[0] ^ 0x02,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}
