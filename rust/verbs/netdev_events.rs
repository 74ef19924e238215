// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Following the netdev: link changes become port events, and the netdev's
//! unregistration removes the rsiw device on it.

use crate::kapi::{
    attr::PortState,
    ib::{PortEvent, RegisteredDevice},
    netdev::NetdevEvent,
};
use crate::{objects::device::Device, resources::counters::Counter};

/// Handles one notifier event for the rsiw device on the netdev (RTNL held).
pub(crate) fn handle(dev: RegisteredDevice<Device>, event: NetdevEvent) {
    match event {
        NetdevEvent::Up | NetdevEvent::Down | NetdevEvent::Change => {
            let state = dev.data().port_state();
            if dev.data().note_reported(state) {
                if state == PortState::Down {
                    dev.data().counters().inc(Counter::LinkDowned);
                }
                dev.port_event(match state {
                    PortState::Active => PortEvent::Active,
                    PortState::Down => PortEvent::Err,
                });
            }
        }
        // Synchronous unregistration could take RTNL again: queue it.
        NetdevEvent::Unregister => dev.unregister_queued(),
        NetdevEvent::Other => {}
    }
}
