// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The SQ doorbell: rsiw's driver-specific uverbs method on the QP object,
//! issued as an `RDMA_VERBS_IOCTL` on the context's command fd.

use crate::sys;
use core::ffi::{c_int, c_ulong};
use core::mem::size_of;
use rsiw_abi::cmd::{ATTR_DOORBELL_QP_HANDLE, METHOD_QP_DOORBELL, OBJECT_QP};

/// The ioctl: header plus one attribute, as the kernel reads it.
#[repr(C)]
#[derive(Default)]
pub struct DoorbellCmd {
    /// Object, method, attribute count, driver id.
    pub hdr: sys::ib_uverbs_ioctl_hdr,
    /// The QP handle.
    pub attr: sys::ib_uverbs_attr,
}

/// `RDMA_VERBS_IOCTL` = `_IOWR(RDMA_IOCTL_MAGIC, 1, struct ib_uverbs_ioctl_hdr)`.
pub const RDMA_VERBS_IOCTL: c_ulong = (3 << 30)
    | ((size_of::<sys::ib_uverbs_ioctl_hdr>() as c_ulong) << 16)
    | ((sys::RDMA_IOCTL_MAGIC as c_ulong) << 8)
    | 1;

/// The doorbell command for QP `handle` on a context with `driver_id`.
pub fn doorbell_cmd(handle: u32, driver_id: u32) -> DoorbellCmd {
    let mut c = DoorbellCmd::default();
    c.hdr.length = size_of::<DoorbellCmd>() as u16;
    c.hdr.object_id = OBJECT_QP;
    c.hdr.method_id = METHOD_QP_DOORBELL;
    c.hdr.num_attrs = 1;
    // The kernel refuses a header whose driver id is not its device's.
    c.hdr.driver_id = driver_id;
    c.attr.attr_id = ATTR_DOORBELL_QP_HANDLE;
    c.attr.flags = sys::UVERBS_ATTR_F_MANDATORY as u16;
    // IDR attributes: len 0, the handle in data.
    c.attr.__bindgen_anon_1.data = u64::from(handle);
    c
}

/// Rings the doorbell of QP `handle`; 0 or the errno.
pub fn ring(cmd_fd: c_int, handle: u32, driver_id: u32) -> c_int {
    let mut c = doorbell_cmd(handle, driver_id);
    // SAFETY: the command is a live, correctly sized ioctl buffer for the call.
    let rc = unsafe { sys::ioctl(cmd_fd, RDMA_VERBS_IOCTL, &mut c as *mut DoorbellCmd) };
    if rc == 0 {
        0
    } else {
        crate::cmem::errno()
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use core::mem::offset_of;

    #[test]
    fn ioctl_number_is_the_kernels() {
        // _IOWR(0x1b, 1, 24 bytes): as strace shows libibverbs' own ioctls.
        assert_eq!(RDMA_VERBS_IOCTL, 0xc018_1b01);
    }

    #[test]
    fn command_layout() {
        let c = doorbell_cmd(7, 0);
        assert_eq!(size_of::<DoorbellCmd>(), 40);
        assert_eq!(offset_of!(DoorbellCmd, attr), 24);
        assert_eq!(c.hdr.length, 40);
        assert_eq!(c.hdr.object_id, 4);
        assert_eq!(c.hdr.method_id, 0x1000);
        assert_eq!(c.hdr.num_attrs, 1);
        assert_eq!(c.attr.attr_id, 0x1000);
        assert_eq!(c.attr.len, 0);
        assert_eq!(c.attr.flags, 1);
        // SAFETY: reading the plain u64 union member just written.
        assert_eq!(unsafe { c.attr.__bindgen_anon_1.data }, 7);
    }
}
