// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Per-device state of an rsiw RNIC: its netdev, addresses and counters.

use crate::{
    engine::InlineTxCell,
    kapi::{
        attr::PortState,
        netdev::{NetDevice, ETH_ALEN},
        random,
    },
    objects::qp::Qp,
    proto::stag::{IndexPerm, Rounds, ROUND_TABLE_LEN},
    resources::counters::PortCounters,
    resources::mem::MemTable,
    resources::slots::Slots,
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    alloc::KVVec,
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// The CM's listener for QP connections set up from `modify_qp` (one per
/// device, made with the device when `qp_conn_port` is set), as the device
/// sees it.
pub(crate) trait QpListener: Send + Sync {
    /// A QP was armed for a peer: requests parked for it look again.
    fn rearm(&self);
    /// The device goes away: stop listening, refuse what is parked.
    fn stop(&self);
}

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
    /// Completion queues, QPs, SRQs currently allocated.
    cqs: AtomicU32,
    qps_count: AtomicU32,
    srqs: AtomicU32,
    /// Memory regions and windows by STag (shared with the engines).
    mems: Arc<MemTable>,
    /// QPs by table slot.
    #[pin]
    qps: Slots<Qp>,
    /// The round function of the keyed permutation from QP table slot to QP
    /// number (`proto::stag::IndexPerm` over the 24-bit QPN space, its key
    /// random per device and not kept): QP numbers are unique, never 0, and
    /// not predictable from one another.
    qpn_rounds: KVVec<u16>,
    /// TX work a doorbell's TX run causes on this device (loopback).
    inline_tx: Arc<InlineTxCell>,
    /// The QP-connection listener, once made; taken at `dealloc_driver`.
    /// Process context (`modify_qp`, `dealloc_driver`).
    #[pin]
    qp_listener: Mutex<Option<Arc<dyn QpListener>>>,
    /// The port's counters (`rdma statistic`), shared with the engines.
    counters: Arc<PortCounters>,
}

/// Takes a slot of `count` if fewer than `max` are taken.
fn take_slot(count: &AtomicU32, max: u32) -> bool {
    count
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then(|| n + 1)
        })
        .is_ok()
}

/// Returns a slot of `count`; saturating, so a core bug cannot wrap it.
fn put_slot(count: &AtomicU32) {
    let _ = count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
}

impl Device {
    /// State for a device on `netdev`, addressed by `mac`.
    pub(crate) fn new(netdev: NetDevice, mac: [u8; ETH_ALEN]) -> Result<Arc<Self>> {
        let mems = MemTable::new()?;
        let inline_tx = InlineTxCell::new()?;
        let counters = PortCounters::new()?;
        let mut qpn_rounds = KVVec::from_elem(0u16, ROUND_TABLE_LEN, GFP_KERNEL)?;
        IndexPerm::new(random::random_bytes()).fill_rounds(&mut qpn_rounds);
        Arc::pin_init(
            pin_init!(Self {
                netdev,
                mac,
                pds: AtomicU32::new(0),
                next_pdn: AtomicU32::new(1),
                inner <- new_mutex!(Inner { reported: None }, "rsiw_device_inner"),
                cqs: AtomicU32::new(0),
                qps_count: AtomicU32::new(0),
                srqs: AtomicU32::new(0),
                mems,
                qps <- Slots::new(1, crate::objects::qp::MAX_QP as usize + 1),
                qpn_rounds,
                inline_tx,
                qp_listener <- new_mutex!(None, "rsiw_qp_listener"),
                counters,
            }),
            GFP_KERNEL,
        )
    }

    /// TX work a doorbell's TX run causes on this device (`engine::inline`).
    pub(crate) fn inline_tx(&self) -> &Arc<InlineTxCell> {
        &self.inline_tx
    }

    /// The port's counters.
    pub(crate) fn counters(&self) -> &Arc<PortCounters> {
        &self.counters
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
        take_slot(&self.pds, max).then(|| self.next_pdn.fetch_add(1, Ordering::Relaxed))
    }

    /// Returns a PD slot.
    pub(crate) fn put_pd(&self) {
        put_slot(&self.pds);
    }

    /// Takes a CQ slot; false at the device limit.
    pub(crate) fn get_cq(&self) -> bool {
        take_slot(&self.cqs, crate::queue::cq::MAX_CQ)
    }

    /// Returns a CQ slot.
    pub(crate) fn put_cq(&self) {
        put_slot(&self.cqs);
    }

    /// Takes a QP slot; false at the device limit.
    pub(crate) fn get_qp(&self) -> bool {
        take_slot(&self.qps_count, crate::objects::qp::MAX_QP)
    }

    /// Returns a QP slot.
    pub(crate) fn put_qp(&self) {
        put_slot(&self.qps_count);
    }

    /// Takes an SRQ slot; false at the device limit.
    pub(crate) fn get_srq(&self) -> bool {
        take_slot(&self.srqs, crate::objects::srq::MAX_SRQ)
    }

    /// Returns an SRQ slot.
    pub(crate) fn put_srq(&self) {
        put_slot(&self.srqs);
    }

    /// The STag table.
    pub(crate) fn mems(&self) -> &Arc<MemTable> {
        &self.mems
    }

    /// Stores `qp` in a free slot of the QP table and returns its QP number.
    pub(crate) fn qp_insert(&self, qp: Arc<Qp>) -> Result<u32> {
        let slot = self.qps.insert(qp)?;
        // The table's limit keeps slots below 2^24, which `index` maps.
        match u32::try_from(slot)
            .ok()
            .and_then(|s| Rounds(&self.qpn_rounds).index(s))
        {
            Some(num) => Ok(num),
            None => {
                drop(self.qps.remove(slot));
                Err(EINVAL)
            }
        }
    }

    /// The table slot of QP number `num`, if it names one.
    fn qp_slot(&self, num: u32) -> Option<usize> {
        let slot = Rounds(&self.qpn_rounds).slot(num)?;
        (slot <= crate::objects::qp::MAX_QP).then_some(slot as usize)
    }

    /// The QP with number `num`, if it exists and its creation is complete
    /// (`Qp::publish`; iw_cm's `get_qp`); any context.
    pub(crate) fn qp_lookup(&self, num: u32) -> Option<Arc<Qp>> {
        self.qps
            .get(self.qp_slot(num)?)
            .filter(|q| q.is_published())
    }

    /// Removes QP number `num` from the table.
    pub(crate) fn qp_remove(&self, num: u32) -> Option<Arc<Qp>> {
        self.qps.remove(self.qp_slot(num)?)
    }

    /// The QP-connection listener, made by `make` if there is none yet.
    pub(crate) fn qp_listener(
        &self,
        make: impl FnOnce() -> Result<Arc<dyn QpListener>>,
    ) -> Result<Arc<dyn QpListener>> {
        let mut l = self.qp_listener.lock();
        if let Some(l) = &*l {
            return Ok(l.clone());
        }
        let made = make()?;
        *l = Some(made.clone());
        Ok(made)
    }

    /// The QP-connection listener, if one was made.
    pub(crate) fn qp_listener_if_any(&self) -> Option<Arc<dyn QpListener>> {
        self.qp_listener.lock().clone()
    }

    /// Takes the QP-connection listener away (the device goes).
    pub(crate) fn take_qp_listener(&self) -> Option<Arc<dyn QpListener>> {
        self.qp_listener.lock().take()
    }
}

impl crate::kapi::registry::DeviceData for Device {
    fn netdev(&self) -> &NetDevice {
        &self.netdev
    }
}
