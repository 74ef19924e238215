// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Module-lifetime registration: the C shim's link ops and netdev notifier,
//! bound to the device [`Registry`] they report to.

use super::{
    bindings,
    registry::{DeviceData, Registry},
};
use crate::abi;
use core::mem::size_of;
use kernel::{error::to_result, prelude::*, sync::Arc};

/// The registered `rdma_link_ops` (type `rsiw`) and netdevice notifier.
///
/// # Invariants
///
/// `ctx` is `registry` in foreign form, handed to the shim by
/// `rsiw_shim_init`; it is converted back only in [`Drop`], after
/// `rsiw_shim_exit` and [`Registry::unregister_all`], when no callback can
/// use it any more.
pub(crate) struct Registration<T: DeviceData> {
    registry: Arc<Registry<T>>,
    ctx: *const core::ffi::c_void,
}

// SAFETY: `ctx` is only an owned `Arc` in foreign form.
unsafe impl<T: DeviceData> Send for Registration<T> {}
// SAFETY: `&Registration` exposes nothing.
unsafe impl<T: DeviceData> Sync for Registration<T> {}

impl<T: DeviceData> Registration<T> {
    /// Checks the bindings against the C compiler's layout, then registers
    /// link ops and the notifier.
    pub(crate) fn new() -> Result<Self> {
        check_layout()?;
        let registry = Arc::pin_init(Registry::new(), GFP_KERNEL)?;
        let ctx = crate::kapi::compat::into_foreign(registry.clone());
        // SAFETY: `ctx` stays valid until `Drop` (type invariant).
        let ret = unsafe { bindings::rsiw_shim_init(ctx, abi::ABI_VERSION) };
        if let Err(e) = to_result(ret) {
            // SAFETY: the shim failed before publishing `ctx`.
            drop(unsafe { crate::kapi::compat::from_foreign::<Registry<T>>(ctx) });
            return Err(e);
        }
        // INVARIANT: `ctx` was published to the shim.
        Ok(Self { registry, ctx })
    }
}

impl<T: DeviceData> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: registered in `new`; waits for a running newlink.
        unsafe { bindings::rsiw_shim_exit() };
        self.registry.unregister_all();
        // The TX/RX work first (what it runs may queue CM work); the tail of
        // a work item executes module text, so unload must wait for it.
        // SAFETY: created by `rsiw_shim_init`; with every device gone no engine
        // queues TX/RX work: this waits for the items still queued or running.
        unsafe { bindings::rsiw_shim_wq_exit() };
        // SAFETY: created by `rsiw_shim_init`; with every device gone no CM
        // op can queue work any more, and this drains what is queued.
        unsafe { bindings::rsiw_shim_cm_exit() };
        // SAFETY: no callback can run any more (see the type invariant).
        drop(unsafe { crate::kapi::compat::from_foreign::<Registry<T>>(self.ctx) });
    }
}

/// Refuses to load if bindgen's view of a shared structure differs from C's.
fn check_layout() -> Result {
    super::obj::check_layout()?;
    let mut c = bindings::rsiw_layout::default();
    // SAFETY: `c` is writable.
    unsafe { bindings::rsiw_shim_layout(&mut c) };
    let rust = [
        size_of::<bindings::ib_device>(),
        size_of::<bindings::ib_device_attr>(),
        size_of::<bindings::ib_port_attr>(),
        size_of::<bindings::ib_port_immutable>(),
        size_of::<bindings::ib_udata>(),
        size_of::<bindings::ib_pd>(),
        size_of::<bindings::ib_ucontext>(),
        size_of::<bindings::rsiw_ibdev>(),
        size_of::<bindings::rsiw_pd>(),
        size_of::<bindings::rsiw_ucontext>(),
    ];
    let c = [
        c.ib_device,
        c.ib_device_attr,
        c.ib_port_attr,
        c.ib_port_immutable,
        c.ib_udata,
        c.ib_pd,
        c.ib_ucontext,
        c.rsiw_ibdev,
        c.rsiw_pd,
        c.rsiw_ucontext,
    ];
    if rust != c {
        pr_err!(
            "bindings do not match the kernel: Rust sizes {:?}, C sizes {:?}\n",
            rust,
            c
        );
        return Err(EINVAL);
    }
    Ok(())
}
