// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Per-device state of an rsiw RNIC: its netdev, addresses and counters.

use crate::ffi::{
    attr::PortState,
    netdev::{NetDevice, ETH_ALEN},
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// The fields [`Device::inner`] protects.
struct Inner {
    /// The port state last reported to the core with an event, so that
    /// repeated netdev notifications do not repeat events.
    reported: Option<PortState>,
}

/// One rsiw device (one `ib_device`, one port, one netdev).
#[pin_data]
pub(crate) struct Device {
    netdev: NetDevice,
    mac: [u8; ETH_ALEN],
    /// Protection domains currently allocated.
    pds: AtomicU32,
    /// Next PD number handed out (diagnostic only; wraps).
    next_pdn: AtomicU32,
    /// Protects port-event bookkeeping. Taken from the netdev notifier
    /// (process context, RTNL held); never held across a core call.
    #[pin]
    inner: Mutex<Inner>,
}

impl Device {
    /// State for a device on `netdev`, addressed by `mac`.
    pub(crate) fn new(netdev: NetDevice, mac: [u8; ETH_ALEN]) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                netdev,
                mac,
                pds: AtomicU32::new(0),
                next_pdn: AtomicU32::new(1),
                inner <- new_mutex!(Inner { reported: None }, "rsiw_device_inner"),
            }),
            GFP_KERNEL,
        )
    }

    /// The netdev the port runs over.
    pub(crate) fn netdev(&self) -> &NetDevice {
        &self.netdev
    }

    /// The Ethernet address the device is named by.
    pub(crate) fn mac(&self) -> [u8; ETH_ALEN] {
        self.mac
    }

    /// The port's current state, from the netdev.
    pub(crate) fn port_state(&self) -> PortState {
        if self.netdev.is_active() {
            PortState::Active
        } else {
            PortState::Down
        }
    }

    /// Records `state` as reported; false if it already was.
    pub(crate) fn note_reported(&self, state: PortState) -> bool {
        let mut inner = self.inner.lock();
        let changed = inner.reported != Some(state);
        inner.reported = Some(state);
        changed
    }

    /// Takes a PD slot if fewer than `max` exist; returns its number.
    pub(crate) fn get_pd(&self, max: u32) -> Option<u32> {
        self.pds
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then(|| n + 1)
            })
            .ok()?;
        Some(self.next_pdn.fetch_add(1, Ordering::Relaxed))
    }

    /// Returns a PD slot.
    pub(crate) fn put_pd(&self) {
        // Saturating: a core bug must not wrap the count.
        let _ = self
            .pds
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }
}
