// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Every entry point from C into Rust: the `ib_device_ops`, `rdma_link_ops`
//! and netdevice-notifier callbacks the shim's tables point to. Each turns raw
//! pointers into the safe wrappers and calls the driver.

use crate::kapi::{
    bindings,
    ib::IbDev,
    netdev::{NetDevice, NetdevEvent},
    registry::Registry,
    udata::Udata,
};
use crate::{objects::device::Device, verbs, verbs::link, verbs::netdev_events};
use core::ptr::NonNull;
use kernel::{
    ffi::{c_char, c_int, c_ulong, c_void},
    prelude::*,
    str::CStr,
    sync::ArcBorrow,
};

/// Maps a driver result to the C convention.
pub(super) fn ret(r: Result) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The registry behind the shim's context pointer.
///
/// # Safety
///
/// `ctx` must be the pointer `Registration::new` gave the shim, and the
/// `Registration` must not have been dropped (the shim only calls back
/// between `rsiw_shim_init` and the end of `Registration::drop`).
unsafe fn registry<'a>(ctx: *const c_void) -> ArcBorrow<'a, Registry<Device>> {
    // SAFETY: per the function's safety requirements.
    unsafe { crate::kapi::compat::borrow::<Registry<Device>>(ctx) }
}

/// The device a verb was called on, and its state.
///
/// # Safety
///
/// `ibdev` must be an rsiw device inside one of its `ib_device_ops`.
pub(super) unsafe fn device<'a>(
    ibdev: *mut bindings::ib_device,
) -> Result<(IbDev<'a, Device>, ArcBorrow<'a, Device>)> {
    // SAFETY: the core calls device ops only between allocation and
    // `dealloc_driver`.
    let dev = unsafe { IbDev::from_raw(ibdev) }.ok_or(EINVAL)?;
    let data = dev.data().ok_or(ENODEV)?;
    Ok((dev, data))
}

/// `rdma_link_ops.newlink`: `rdma link add <name> type rsiw netdev <ndev>`.
///
/// # Safety
///
/// Called by the RDMA netlink core with a valid name and a held `ndev`.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_newlink(
    ctx: *const c_void,
    name: *const c_char,
    ndev: *mut bindings::net_device,
) -> c_int {
    // SAFETY: called by the shim's link ops (see `registry`).
    let reg = unsafe { registry(ctx) };
    let Some(ndev) = NonNull::new(ndev) else {
        return EINVAL.to_errno();
    };
    // SAFETY: `nldev_newlink` holds a reference on `ndev` during the call.
    let netdev = unsafe { NetDevice::from_raw(ndev) };
    // SAFETY: `name` is the NUL-terminated device name attribute.
    let name = unsafe { CStr::from_char_ptr(name) };
    ret(link::new_link(&reg, name, netdev))
}

/// Netdevice notifier, called under RTNL.
///
/// # Safety
///
/// Called by the shim's notifier with the event's live `ndev`.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_netdev_event(
    ctx: *const c_void,
    ndev: *mut bindings::net_device,
    event: c_ulong,
) {
    // SAFETY: called by the shim's notifier (see `registry`).
    let reg = unsafe { registry(ctx) };
    if let Some(dev) = reg.registered_by_netdev(ndev) {
        netdev_events::handle(dev, NetdevEvent::from_raw(event));
    }
}

/// `ib_device_ops.dealloc_driver`: the last op; releases per-device state.
///
/// # Safety
///
/// Called once by the core for an rsiw device, after which the core frees it.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_dealloc_driver(ctx: *const c_void, ibdev: *mut bindings::ib_device) {
    // SAFETY: devices exist only while the registration does (see `registry`).
    let reg = unsafe { registry(ctx) };
    let listed = reg.retire(ibdev);
    // SAFETY: live device; no op runs concurrently with or after this one.
    let priv_ = unsafe { bindings::rsiw_shim_take_priv(ibdev) };
    if !priv_.is_null() {
        // SAFETY: `priv` came from `Arc::into_foreign`, and no borrow of it
        // outlives a device op.
        let dev = unsafe { crate::kapi::compat::from_foreign::<Device>(priv_) };
        verbs::dealloc_driver(&dev);
        drop(dev);
    }
    drop(listed);
}

/// `ib_device_ops.query_device`.
///
/// # Safety
///
/// Core device op: valid device, writable `attr`, `udata` null or valid.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_query_device(
    ibdev: *mut bindings::ib_device,
    attr: *mut bindings::ib_device_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    ret((|| {
        // SAFETY: core device op.
        let (_, data) = unsafe { device(ibdev) }?;
        // SAFETY: valid for the call.
        let udata = unsafe { Udata::from_raw(udata) };
        let a = verbs::query_device(&data, udata.as_ref())?;
        // SAFETY: the core passes a writable, exclusive `attr`.
        a.write(unsafe { &mut *attr });
        Ok(())
    })())
}

/// `ib_device_ops.query_port`.
///
/// # Safety
///
/// Core device op: valid device, writable `attr`.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_query_port(
    ibdev: *mut bindings::ib_device,
    port: u32,
    attr: *mut bindings::ib_port_attr,
) -> c_int {
    ret((|| {
        // SAFETY: core device op.
        let (dev, data) = unsafe { device(ibdev) }?;
        let a = verbs::query_port(&dev, &data, port)?;
        // SAFETY: the core passes a writable, exclusive `attr`.
        a.write(unsafe { &mut *attr });
        Ok(())
    })())
}

/// `ib_device_ops.get_port_immutable`.
///
/// # Safety
///
/// Core device op: valid device, writable `imm`.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_get_port_immutable(
    ibdev: *mut bindings::ib_device,
    port: u32,
    imm: *mut bindings::ib_port_immutable,
) -> c_int {
    ret((|| {
        // SAFETY: core device op.
        let (_, data) = unsafe { device(ibdev) }?;
        let a = verbs::port_immutable(&data, port)?;
        // SAFETY: the core passes a writable, exclusive `imm`.
        a.write(unsafe { &mut *imm });
        Ok(())
    })())
}

/// `ib_device_ops.query_gid`.
///
/// # Safety
///
/// Core device op: valid device, writable `gid`.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_query_gid(
    ibdev: *mut bindings::ib_device,
    port: u32,
    index: c_int,
    gid: *mut bindings::ib_gid,
) -> c_int {
    ret((|| {
        // SAFETY: core device op.
        let (_, data) = unsafe { device(ibdev) }?;
        let raw = verbs::query_gid(&data, port, index)?;
        // SAFETY: the core passes a writable `union ib_gid`, whose `raw`
        // member covers all of it.
        unsafe { *(*gid).raw.as_mut() = raw };
        Ok(())
    })())
}

/// `ib_device_ops.query_pkey`.
///
/// # Safety
///
/// Core device op: valid device, writable `pkey`.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_query_pkey(
    ibdev: *mut bindings::ib_device,
    port: u32,
    index: u16,
    pkey: *mut u16,
) -> c_int {
    ret((|| {
        // SAFETY: core device op.
        let (_, data) = unsafe { device(ibdev) }?;
        let v = verbs::query_pkey(&data, port, index)?;
        // SAFETY: the core passes a writable `pkey`.
        unsafe { *pkey = v };
        Ok(())
    })())
}

/// `ib_device_ops.alloc_ucontext`.
///
/// # Safety
///
/// Core device op: `uctx` is a zeroed `rsiw_ucontext` whose `device` is set.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_alloc_ucontext(
    uctx: *mut bindings::ib_ucontext,
    udata: *mut bindings::ib_udata,
) -> c_int {
    ret((|| {
        // SAFETY: `uctx` is valid; its device is an rsiw device in an op.
        let (_, data) = unsafe { device((*uctx).device) }?;
        // SAFETY: valid for the call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        verbs::alloc_ucontext(&data, udata.as_mut())
    })())
}

/// `ib_device_ops.dealloc_ucontext`.
///
/// # Safety
///
/// Core device op on a context `alloc_ucontext` accepted.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
    // SAFETY: `uctx` is valid; its device is an rsiw device in an op.
    if let Ok((_, data)) = unsafe { device((*uctx).device) } {
        verbs::dealloc_ucontext(&data);
    }
}

/// `ib_device_ops.alloc_pd`.
///
/// # Safety
///
/// Core device op: `pd` is a zeroed `rsiw_pd` whose `device` is set.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_alloc_pd(
    pd: *mut bindings::ib_pd,
    udata: *mut bindings::ib_udata,
) -> c_int {
    ret((|| {
        // SAFETY: `pd` is valid; its device is an rsiw device in an op.
        let (_, data) = unsafe { device((*pd).device) }?;
        // SAFETY: valid for the call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        let pdn = verbs::alloc_pd(&data, udata.as_mut())?;
        // SAFETY: the core allocated `size_ib_pd` = `sizeof(struct rsiw_pd)`
        // bytes, with `base` first (INIT_RDMA_OBJ_SIZE).
        unsafe { (*pd.cast::<bindings::rsiw_pd>()).pdn = pdn };
        Ok(())
    })())
}

/// `ib_device_ops.dealloc_pd`.
///
/// # Safety
///
/// Core device op on a PD `alloc_pd` accepted.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_dealloc_pd(
    pd: *mut bindings::ib_pd,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    ret((|| {
        // SAFETY: `pd` is valid; its device is an rsiw device in an op.
        let (_, data) = unsafe { device((*pd).device) }?;
        // SAFETY: `pd` is an `rsiw_pd` (see `rsiw_rust_alloc_pd`).
        let pdn = unsafe { (*pd.cast::<bindings::rsiw_pd>()).pdn };
        verbs::dealloc_pd(&data, pdn);
        Ok(())
    })())
}

/// `ib_device_ops.alloc_hw_port_stats`: the block ib_core reads the port's
/// counters into (it owns and frees it).
///
/// # Safety
///
/// Core device op (device registration).
#[no_mangle]
unsafe extern "C" fn rsiw_rust_alloc_hw_port_stats(
    _ibdev: *mut bindings::ib_device,
    _port: u32,
) -> *mut bindings::rdma_hw_stats {
    crate::kapi::hwstats::alloc(&crate::resources::counters::DESCS)
}

/// `ib_device_ops.get_hw_stats` (process context, the block's lock held).
///
/// # Safety
///
/// Core device op: valid device, `stats` a block from
/// `rsiw_rust_alloc_hw_port_stats`, locked by the caller.
#[no_mangle]
unsafe extern "C" fn rsiw_rust_get_hw_stats(
    ibdev: *mut bindings::ib_device,
    stats: *mut bindings::rdma_hw_stats,
    port: u32,
    _index: c_int,
) -> c_int {
    let r = (|| {
        // SAFETY: core device op.
        let (_, data) = unsafe { device(ibdev) }?;
        // SAFETY: the core's locked block, for the call.
        let mut hw = unsafe { crate::kapi::hwstats::HwStats::from_raw(stats) }.ok_or(EINVAL)?;
        verbs::stats::port_stats(&data, port, &mut hw)
    })();
    match r {
        Ok(n) => c_int::try_from(n).unwrap_or(0),
        Err(e) => e.to_errno(),
    }
}
