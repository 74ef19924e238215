// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The data-path engine of one connected QP: RDMAP (RFC 5040, RFC 7306) over
//! DDP (RFC 5041) over MPA (RFC 5044) on an established stream. TX runs in a
//! work item, RX in the socket's data-ready callback; see
//! `Documentation/datapath.md` for contexts, locks and error handling.

#![forbid(unsafe_code)]

mod causes;
mod inline;
mod local;
mod port;
mod rx;
mod rx_end;
mod tx;

pub(crate) use inline::InlineTxCell;
pub(crate) use port::{QpPort, Untaken};

use crate::queue::fifo::Fifo;
use crate::{
    kapi::{crc::KernelCrc32c, lock::IrqSpinLock, qp::QpEvent, wq},
    proto::{
        atomic::Dialect,
        mpa::{Rtr, StreamParams},
        rx::{RxConfig, RxParser},
        terminate::TerminateRepr,
        tx::{TxConfig, TxFramer},
    },
    queue::cq::WcStatus,
    queue::wr::MAX_RD_ATOMIC,
    resources::counters::{ConnCounters, PortCounters},
    resources::mem::{Checked, MemTable},
    resources::stream::{Stream, StreamConsumer},
};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::{
    impl_has_work, new_condvar, new_mutex, new_work,
    prelude::*,
    sync::{Arc, CondVar, Mutex},
    workqueue::{Work, WorkItem},
};
use local::{AtomicSink, Local};
use tx::Runner;

/// What the MPA exchange negotiated for the stream (RFC 5044 §7.1, RFC 6581).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Params {
    /// CRC on FPDUs in both directions.
    pub(crate) crc: bool,
    /// The peer inserts markers into what we receive.
    pub(crate) markers_rx: bool,
    /// We insert markers into what we send (the peer's M bit): copied
    /// FPDUs of RFC 5044 size only, never zero-copy or large.
    pub(crate) markers_tx: bool,
    /// Inbound Read/Atomic requests the peer may have outstanding (IRD).
    pub(crate) ird: u32,
    /// Outbound Read/Atomic requests we may have outstanding (ORD).
    pub(crate) ord: u32,
    /// RFC 6581 peer-to-peer RTR message, if negotiated.
    pub(crate) rtr: Option<Rtr>,
    /// We sent the MPA Request: we send the RTR; the responder waits for it.
    pub(crate) initiator: bool,
    /// TCP MSS of the stream (MULPDU is derived from it, RFC 5044 §4.1).
    pub(crate) mss: u32,
    /// Atomic Operation codes the responder executes: RFC 7306, or also
    /// draft-03's Swap (the `draft_swap` module parameter).
    pub(crate) dialect: Dialect,
    /// The peer takes FPDUs longer than the EMSS (both offered them).
    pub(crate) large_fpdu: bool,
}

impl Params {
    /// From the negotiated MPA parameters.
    pub(crate) fn new(p: &StreamParams, initiator: bool, mss: u32) -> Self {
        Self {
            crc: p.crc,
            markers_rx: p.markers_rx,
            markers_tx: p.markers_tx,
            ird: u32::from(p.ird),
            ord: u32::from(p.ord),
            rtr: p.rtr,
            initiator,
            mss,
            dialect: Dialect::Rfc7306,
            large_fpdu: p.large_fpdu_tx,
        }
    }
}

/// An outbound Read or Atomic request waiting for its response (ORD-bounded;
/// responses arrive in request order, RFC 5040 §5.2, RFC 7306 §5.2.2).
enum Outbound {
    Read {
        /// In-flight sequence number of the WQE; `None` for the RTR.
        seq: Option<u64>,
        sink_stag: u32,
        sink_to: u64,
        size: u32,
        placed: u32,
        /// READ_WITH_INV: the local STag to invalidate once the data is in.
        inv: Option<u32>,
    },
    Atomic {
        seq: u64,
        request_id: u32,
        result: AtomicSink,
    },
}

/// An inbound request waiting for TX to answer it (IRD-bounded).
enum Inbound {
    Read {
        sink_stag: u32,
        sink_to: u64,
        size: u32,
        src: Option<Checked>,
        src_to: u64,
    },
    AtomicResponse {
        request_id: u32,
        original: u64,
    },
}

/// Connection lifetime as TX sees it.
enum Phase {
    Running,
    /// Send `terminate` (if any), then FIN, or RST if `abortive`.
    Closing {
        abortive: bool,
        terminate: Option<TerminateRepr>,
    },
    /// The stream is shut down (or the peer closed it).
    Closed,
}

/// State shared by TX, RX and flush: [`Engine::shared`] protects it.
struct Shared {
    orq: Fifo<Outbound>,
    irq: Fifo<Inbound>,
    phase: Phase,
    /// Responder in peer-to-peer mode: nothing is sent before the RTR came.
    rtr_wait: bool,
    /// Initiator in peer-to-peer mode: the RTR still to send.
    rtr_send: Option<Rtr>,
    /// TX left an SQ WQE for a free ORD slot or an empty ORQ (fence): the
    /// next response that frees one must kick it.
    tx_stalled: bool,
    next_request_id: u32,
}

/// The engine of one connection. Locks, outermost first: `tx` (TX work
/// only, may sleep in `send`), `rx` (socket callback, softirq), `shared`.
/// `rx` and `shared` are irq-safe spinlocks and are never held across a
/// completion, a socket call or a QP call that takes the QP's own locks,
/// except `rq_take` (RQ/SRQ lock, innermost).
#[pin_data]
pub(crate) struct Engine {
    qp: Arc<dyn QpPort>,
    /// The device's STag table: every STag the stream names is looked up here.
    mems: Arc<MemTable>,
    /// The device's inline TX state (`inline.rs`).
    inline: Arc<InlineTxCell>,
    stream: Arc<Stream>,
    params: Params,
    /// This connection's counters (and through them the port's).
    ctr: ConnCounters,
    /// No more TX work may be queued (the stream is shut down).
    stopped: AtomicBool,
    /// TX work items queued or running.
    busy: AtomicU32,
    /// `quiesce` waits for `busy` to reach 0: `unbusy` wakes it.
    quiescing: AtomicBool,
    /// WQEs held in the SQ until TCP releases their zero-copy pages
    /// (`tx/zcdone.rs`).
    zc_held: AtomicU32,
    /// Inbound Read and Atomic Requests accepted and not yet answered
    /// (queued in `Shared::irq` or being framed): at most IRD (RFC 5040
    /// §6.5, RFC 7306 §5.2.2 rule 4). RX adds (one RX at a time, under
    /// `shared`), TX takes away when a response's last FPDU is framed.
    inbound: AtomicU32,
    /// Spreads the TX work of connections over the CPUs (`kapi::wq`).
    tx_cpu: u32,
    /// The last SQ WQE TX took asks for a completion: its poster is likely
    /// to wait for it (a doorbell then answers a loopback peer inline).
    waited: AtomicBool,
    /// The stream's callback left received bytes to the work item
    /// (`StreamConsumer::rx_defer`); its next run reads them.
    rx_queued: AtomicBool,
    /// The last segment received carried a bulk of payload
    /// (`rx::BULK_PAYLOAD`): only such a stream's queued octets are left to
    /// the work item, so that many connections of small messages do not
    /// each keep a receive queue waiting for it.
    rx_bulk: AtomicBool,
    #[pin]
    shared: IrqSpinLock<Shared>,
    #[pin]
    rx: IrqSpinLock<rx::RxState>,
    #[pin]
    tx: Mutex<tx::TxState>,
    /// `quiesce` sleeps on `idle_cv` until `busy` is 0.
    #[pin]
    idle: Mutex<()>,
    #[pin]
    idle_cv: CondVar,
    #[pin]
    work: Work<Engine>,
}

// A connection's engine is one 2 KiB allocation (`kmalloc-2k`, with the
// `Arc`'s reference count) on kernels without lock debugging, which makes
// every lock larger: per-QP memory is a target (`performance.md`).
#[cfg(not(any(CONFIG_DEBUG_SPINLOCK, CONFIG_DEBUG_LOCK_ALLOC, CONFIG_DEBUG_MUTEXES)))]
const _: () = assert!(core::mem::size_of::<Engine>() <= 2048 - 8);

/// The TX CPU hint of the next connection.
static NEXT_TX_CPU: AtomicU32 = AtomicU32::new(0);

impl_has_work! {
    impl HasWork<Self> for Engine { self.work }
}

impl WorkItem for Engine {
    type Pointer = Arc<Engine>;

    fn run(this: Arc<Engine>) {
        let drain = this.begin_inline();
        // Received bytes first: what they cause (a Read Response to send,
        // ORD room) is then sent by this run, or by the drain after it.
        if this.rx_queued.swap(false, Ordering::AcqRel) {
            this.stream.rx_now();
        }
        this.tx_run(Runner::Worker);
        this.unbusy();
        if drain {
            this.drain_inline(true, Runner::Worker);
        }
    }
}

impl Engine {
    /// The engine of a new connection, not yet attached to anything (process
    /// context). Its state is built on the stack and moved into place, so
    /// this stays out of line: its frame must be gone before the CM
    /// attaches the stream, whose socket drain runs RX in the caller's
    /// context (a connection accepted from `rdma_accept` runs the peer's
    /// first FPDUs there).
    #[inline(never)]
    fn build(
        qp: &Arc<dyn QpPort>,
        dev: &Resources,
        stream: &Arc<Stream>,
        params: Params,
    ) -> Result<Arc<Engine>> {
        let (ord, ird) = (params.ord, params.ird);
        // An unknown MSS (0) would give no room for a header: assume the minimum.
        // RFC 5044 §4.1: with Markers in what we send, MULPDU leaves room for them.
        let mulpdu = crate::proto::fpdu::mulpdu(params.mss.max(536), params.markers_tx);
        let large = params.large_fpdu && !params.markers_tx;
        let shared = Shared {
            orq: Fifo::new(ord as usize + 1)?,
            irq: Fifo::new(ird as usize)?,
            phase: Phase::Running,
            rtr_wait: params.rtr.is_some() && !params.initiator,
            rtr_send: if params.initiator { params.rtr } else { None },
            tx_stalled: false,
            next_request_id: 1,
        };
        let rx_state = rx::RxState::new(
            RxParser::new(
                KernelCrc32c,
                RxConfig {
                    crc: params.crc,
                    markers: params.markers_rx,
                    max_ulpdu: u16::MAX,
                },
            ),
            shared.rtr_wait,
        )?;
        let tx_state = tx::TxState::new(
            TxFramer::new(TxConfig {
                crc: params.crc,
                markers: params.markers_tx,
                mulpdu: if large { u16::MAX } else { mulpdu },
            }),
            mulpdu,
            large,
        )?;
        let (eng_qp, eng_stream) = (qp.clone(), stream.clone());
        Arc::pin_init(
            pin_init!(Engine {
                qp: eng_qp,
                mems: dev.mems.clone(),
                inline: dev.inline.clone(),
                stream: eng_stream,
                params,
                ctr: ConnCounters::new(&dev.counters),
                stopped: AtomicBool::new(false),
                busy: AtomicU32::new(0),
                quiescing: AtomicBool::new(false),
                zc_held: AtomicU32::new(0),
                inbound: AtomicU32::new(0),
                tx_cpu: NEXT_TX_CPU.fetch_add(1, Ordering::Relaxed),
                waited: AtomicBool::new(false),
                rx_queued: AtomicBool::new(false),
                rx_bulk: AtomicBool::new(false),
                shared <- crate::new_irq_spinlock!(shared, "rsiw_engine_shared"),
                rx <- crate::new_irq_spinlock!(rx_state, "rsiw_engine_rx"),
                tx <- new_mutex!(tx_state, "rsiw_engine_tx"),
                idle <- new_mutex!((), "rsiw_engine_idle"),
                idle_cv <- new_condvar!("rsiw_engine_idle"),
                work <- new_work!("rsiw_engine_tx"),
            }),
            GFP_KERNEL,
        )
    }
}

/// An established connection driving a QP; the QP and the stream hold it.
pub(crate) struct Conn {
    eng: Arc<Engine>,
}

/// What a connection uses of its device: the STag table, the inline TX
/// state and the port's counters.
pub(crate) struct Resources {
    /// The STag table.
    pub(crate) mems: Arc<MemTable>,
    /// The inline TX state.
    pub(crate) inline: Arc<InlineTxCell>,
    /// The port's counters.
    pub(crate) counters: Arc<PortCounters>,
}

/// A connection as `rdma resource show qp -d` shows it.
pub(crate) struct Details {
    /// The negotiated stream parameters.
    pub(crate) params: Params,
    /// Outbound Reads and Atomics awaiting their response (ORQ).
    pub(crate) orq: usize,
    /// Inbound Reads and Atomics accepted and not yet answered.
    pub(crate) inbound: u32,
    /// The stream is closing or closed.
    pub(crate) closing: bool,
    /// The connection's counters, in `counters::Counter` order.
    pub(crate) counters: [u64; crate::resources::counters::N],
}

impl Conn {
    /// The engine of a new connection of `qp` over `stream` (process
    /// context), not yet attached to either: the CM binds it to the QP
    /// (`Qp::bind_conn`, with [`Self::ord_ird`]) and then to the stream
    /// (`Stream::attach`, which may deliver queued bytes at once), then kicks
    /// it. The initiator of a peer-to-peer connection sends its RTR first.
    pub(crate) fn new(
        qp: Arc<dyn QpPort>,
        dev: &Resources,
        stream: &Arc<Stream>,
        params: Params,
    ) -> Result<Arc<Conn>> {
        let (ord, ird) = (params.ord.min(MAX_RD_ATOMIC), params.ird.min(MAX_RD_ATOMIC));
        let eng = Engine::build(&qp, dev, stream, Params { ord, ird, ..params })?;
        Ok(Arc::new(Conn { eng }, GFP_KERNEL)?)
    }

    /// The negotiated ORD and IRD, as the engine enforces them.
    pub(crate) fn ord_ird(&self) -> (u32, u32) {
        (self.eng.params.ord, self.eng.params.ird)
    }

    /// What the connection negotiated, holds and counted.
    pub(crate) fn details(&self) -> Details {
        let e = &self.eng;
        let (orq, closing) = {
            let s = e.shared.lock();
            (s.orq.len(), !matches!(s.phase, Phase::Running))
        };
        Details {
            params: e.params,
            orq,
            inbound: e.inbound.load(Ordering::Relaxed),
            closing,
            counters: e.ctr.values(),
        }
    }

    /// The connection never ran (its start failed): no TX work may be
    /// queued for it.
    pub(crate) fn abandon(&self) {
        self.eng.set_phase_closed();
    }

    /// New SQ work: schedules TX (any context).
    pub(crate) fn kick(&self) {
        self.eng.kick();
    }

    /// New SQ work posted from process context that may sleep (the
    /// provider's doorbell ioctl): transmits in the caller's context, as siw
    /// does for user QPs, saving the work-queue hop on the latency path.
    pub(crate) fn kick_direct(&self) {
        self.eng.tx_direct();
    }

    /// Local close (`modify_qp`; process context): stops taking SQ work,
    /// sends a pending Terminate, then FIN (or RST if `abortive`).
    pub(crate) fn close(&self, abortive: bool) {
        self.eng.request_close(abortive, None);
        if abortive {
            self.eng.kick();
        } else {
            self.eng.tx_here();
        }
    }

    /// Completes every WQE the engine holds with `IB_WC_WR_FLUSH_ERR`
    /// (those already finished keep their status); any context.
    pub(crate) fn flush(&self) {
        self.eng.flush();
    }

    /// Waits until no TX work runs and no stream callback can reach the
    /// engine (process context, may sleep). Implies an abortive close.
    pub(crate) fn quiesce(&self) {
        self.eng.quiesce(0);
    }

    /// [`Conn::quiesce`] after a graceful close: what the SQ handed to the
    /// stream goes out before the FIN, for up to `ms` (then abortive). For a
    /// QP destroyed without a disconnect first (no CM to ask for one).
    pub(crate) fn quiesce_graceful(&self, ms: u32) {
        self.eng.quiesce(ms);
    }
}

impl StreamConsumer for Conn {
    fn rx(&self, pieces: &[&[u8]]) -> usize {
        self.eng.rx(pieces)
    }

    fn rx_defer(&self) -> bool {
        self.eng.rx_defer()
    }

    fn write_space(&self) {
        self.eng.kick();
        // Also a zero-copy release: it must reach TX after the close too.
        self.eng.zc_kick();
    }

    fn closed(&self, abortive: bool) {
        // The CM reports the close to the iw_cm; the QP cannot go on.
        self.eng.set_phase_closed();
        self.eng.qp.clone().peer_closed(abortive);
    }
}

impl Engine {
    /// Queues the TX work unless it is queued already or the engine stopped;
    /// a kick from a doorbell's own TX run is done by that run instead
    /// (`inline`).
    fn kick(self: &Arc<Self>) {
        // Count first, then check: `quiesce` sets `stopped` before it waits
        // for the count to reach 0, so no work is queued after it returns.
        self.busy.fetch_add(1, Ordering::SeqCst);
        if self.stopped.load(Ordering::SeqCst) {
            self.busy.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        match self.defer_inline() {
            inline::Deferred::Taken => {}
            inline::Deferred::Pending => {
                self.busy.fetch_sub(1, Ordering::SeqCst);
            }
            inline::Deferred::No => self.requeue_kick(),
        }
    }

    /// Received bytes for the work item, queued on the softirq's CPU
    /// unless it is queued already (`StreamConsumer::rx_defer`); false, for
    /// the softirq to read them itself, if the stream carries small
    /// segments (`rx_bulk`) or the engine stopped.
    fn rx_defer(self: &Arc<Self>) -> bool {
        if !self.rx_bulk.load(Ordering::Relaxed) {
            return false;
        }
        // As `kick`: counted before `stopped` is checked.
        self.busy.fetch_add(1, Ordering::SeqCst);
        if self.stopped.load(Ordering::SeqCst) {
            self.busy.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        // Before the work is queued: a run queued or started after this
        // store reads the bytes (one already past its `swap` is queued
        // again, since it is no longer pending).
        self.rx_queued.store(true, Ordering::Release);
        if wq::enqueue_rx(self.clone()).is_err() {
            self.busy.fetch_sub(1, Ordering::SeqCst);
        }
        true
    }

    /// Another inbound Read or Atomic Request may be accepted (IRD).
    fn inbound_room(&self) -> bool {
        self.inbound.load(Ordering::Acquire) < self.params.ird
    }

    /// A TX run spent its budget, or a poster's run sent its share
    /// (`tx::POSTER_BYTES`): the work item goes on with the rest later, from
    /// the workqueue (never inline: that would run it again in the same
    /// context).
    fn requeue_tx(self: &Arc<Self>) {
        self.busy.fetch_add(1, Ordering::SeqCst);
        if self.stopped.load(Ordering::SeqCst) {
            self.busy.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        self.requeue_kick();
    }

    /// Queues the TX work for a kick that holds a `busy` count.
    fn requeue_kick(self: &Arc<Self>) {
        if wq::enqueue_tx(self.clone(), self.tx_cpu).is_err() {
            self.busy.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// The doorbell: TX runs in the poster's system call
    /// ([`Self::tx_here`]). Up to `tx::POSTER_BYTES` go from here; a bulk
    /// rest goes to the work item. A poster that is
    /// not waiting (the last WQE TX took was unsignaled) or has Reads or
    /// Atomics outstanding gets the work item instead, on another CPU: it
    /// goes on posting while that CPU sends, and the next posts ring no
    /// doorbell.
    fn tx_direct(self: &Arc<Self>) {
        if !self.waited.load(Ordering::Relaxed) || !self.shared.lock().orq.is_empty() {
            self.qp.sq_unpark();
            self.kick();
            return;
        }
        self.tx_here();
    }

    /// Runs TX in the calling (sleepable process) context, and the TX it
    /// causes on the device (`inline`): the doorbell's ([`Self::tx_direct`]),
    /// and a graceful close from `modify_qp`, so that the FIN goes out and
    /// the close reaches the CM without a work-item hop, as siw's
    /// `modify_qp` closes in its caller. What is left of a bulk message
    /// moves to the work item (`POSTER_BYTES`). Counted in `busy` like the
    /// work item, so `quiesce` waits for it as well.
    fn tx_here(self: &Arc<Self>) {
        self.busy.fetch_add(1, Ordering::SeqCst);
        let drain = self.begin_inline();
        if !self.stopped.load(Ordering::SeqCst) {
            self.tx_run(Runner::Poster);
        }
        self.unbusy();
        if drain {
            // A poster streaming unsignaled WRs is not waiting: leave the
            // peer's answer to the workqueue, so that further posts batch up.
            self.drain_inline(self.waited.load(Ordering::Relaxed), Runner::Poster);
        }
    }

    /// One TX run (work item or direct) ended: wakes `quiesce` if it
    /// waits. A running connection takes no lock here: this is on every
    /// message's path.
    fn unbusy(&self) {
        self.busy.fetch_sub(1, Ordering::SeqCst);
        // Both SeqCst: either this load sees `quiesce`'s store, or
        // `quiesce`'s next look at `busy` (after its store) sees the count
        // this run dropped. `quiesce` polls as well.
        if self.quiescing.load(Ordering::SeqCst) {
            // Through `idle` first: `quiesce` is not between its look at
            // `busy` and its wait when the notification comes.
            drop(self.idle.lock());
            self.idle_cv.notify_all();
        }
    }

    /// Moves a running connection to closing; an abortive request also
    /// overrides a graceful one in progress.
    fn request_close(&self, abortive: bool, terminate: Option<TerminateRepr>) {
        let mut s = self.shared.lock();
        match &mut s.phase {
            Phase::Running => {
                s.phase = Phase::Closing {
                    abortive,
                    terminate,
                }
            }
            Phase::Closing { abortive: a, .. } => *a |= abortive,
            Phase::Closed => {}
        }
    }

    fn set_phase_closed(&self) {
        self.shared.lock().phase = Phase::Closed;
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// A fatal error on this side: the Terminate to send (if the peer is to
    /// hear about it), then the QP goes to ERROR and the stream closes.
    /// Never called with an engine lock held.
    fn fail(self: &Arc<Self>, terminate: Option<TerminateRepr>) {
        self.request_close(false, terminate);
        self.qp.event(QpEvent::Fatal);
        self.qp.set_error();
        self.kick();
    }

    /// Records the end of the taken WQE `seq` (a flushed one keeps its own).
    fn finish(&self, seq: u64, status: WcStatus, byte_len: Option<u32>) {
        self.qp.sq_finish(seq, status, byte_len);
    }

    /// Completes finished WQEs in SQ order; true if one of them failed.
    /// Never called with an engine lock held (completion handlers run).
    fn reap(&self) -> bool {
        self.qp.sq_reap()
    }

    /// `Conn::flush`: fails every unfinished in-flight WQE, drops the
    /// request queues, completes the receive in progress.
    fn flush(self: &Arc<Self>) {
        // WQEs held for TCP's release of their zero-copy pages complete
        // only then (`tx/zcdone.rs`): a QP in ERROR sends nothing more, so
        // the stream is reset (after a pending Terminate), which purges
        // TCP's queue and releases them, instead of waiting for a peer that
        // may keep its window shut.
        if self.zc_held.load(Ordering::Acquire) > 0 {
            self.request_close(true, None);
            self.kick();
        }
        // RX first: once it is dead nothing more is placed, so no sink of a
        // WQE completed below (a Read's, a receive's) is written after its
        // flush completion.
        let recv = self.rx.lock().take_recv();
        {
            let mut s = self.shared.lock();
            s.orq.clear();
            s.irq.clear();
        }
        if let Some(wr_id) = recv {
            self.qp.rq_complete(
                wr_id,
                WcStatus::WrFlushErr,
                0,
                crate::queue::cq::WcFlags::NONE,
                0,
                false,
            );
        }
    }

    /// `Conn::quiesce`.
    fn quiesce(self: &Arc<Self>, graceful_ms: u32) {
        let until = crate::kapi::deadline::now_ms() + i64::from(graceful_ms);
        let mut abortive = graceful_ms == 0;
        // Before the first look at `busy` (`unbusy` says why).
        self.quiescing.store(true, Ordering::SeqCst);
        self.request_close(abortive, None);
        self.kick();
        let mut g = self.idle.lock();
        loop {
            if !abortive && crate::kapi::deadline::now_ms() >= until {
                abortive = true;
                self.request_close(true, None);
                self.kick();
            }
            let closed = matches!(self.shared.lock().phase, Phase::Closed);
            if closed {
                self.stopped.store(true, Ordering::SeqCst);
            }
            if closed && self.busy.load(Ordering::SeqCst) == 0 {
                break;
            }
            // Polls as well: a kick that lost the race with `stopped` drops
            // its count without a notification.
            let _ = self.idle_cv.wait_interruptible_timeout(&mut g, 2);
        }
        drop(g);
        // Before the detach: a release still kicks through the callbacks
        // until then, and the reset below needs the socket.
        self.zc_drain();
        self.stream.detach();
        // Region references of a message TX was sending.
        self.tx.lock().reset();
    }
}
