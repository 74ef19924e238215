// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! `--flush-hammer` and `--local-hammer`: threads that keep a QP's rings busy while the
//! kernel flushes them or runs the doorbell's system call.

use super::*;

/// The `--flush-hammer` run; false if a check failed.
pub(super) fn flush_hammer(addr: SocketAddrV4) -> Result<bool, String> {
    let mut ok = true;
    let Pair { c1, s1, .. } = connected(addr, BIG_SQ)?;
    let (sq, rq) = crate::dv::query_qp(&c1.qp)?;
    let rings: Vec<Producer> = [sq, rq].iter().filter_map(Producer::new).collect();
    let consumers: Vec<(*const AtomicU32, u32)> =
        rings.iter().map(|r| (r.consumer, r.entries)).collect();
    // SAFETY: live consumer words of the rings' headers (see `Producer::new`).
    let taken = |i: usize| unsafe { (*consumers[i].0).load(Ordering::Acquire) };
    let stop = Arc::new(AtomicBool::new(false));
    let hammer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let end = Instant::now() + HAMMER;
            while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                for r in &rings {
                    r.fill();
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let before: Vec<u32> = (0..consumers.len()).map(taken).collect();
    // ERROR: the flush runs in this call (rdma_disconnect would only move an
    // iWARP QP to SQD and leave the flush to the close).
    let t = Instant::now();
    let r = c1.qp.set_error();
    let took = t.elapsed();
    let flushed: Vec<u32> = (0..consumers.len())
        .map(|i| taken(i).wrapping_sub(before[i]))
        .collect();
    stop.store(true, Ordering::Relaxed);
    hammer.join().map_err(|_| "hammer thread panicked")?;
    println!(
        "flush-hammer: modify_qp(ERR) returned {r:?} after {} ms, flushed {flushed:?} (rings of {:?})",
        took.as_millis(),
        consumers.iter().map(|c| c.1).collect::<Vec<_>>()
    );
    // Each flush takes what was posted when it began, at most a ring, never
    // what the hammer posts meanwhile. Two flushes may fall in the call: the
    // one modify_qp runs, and the one the abortive close of the stream runs
    // when the socket reports it (possibly on the other CPU meanwhile).
    let bounded = flushed.iter().zip(&consumers).all(|(f, c)| *f <= 2 * c.1);
    ok &= report(
        "flushes take at most a ring each while the producer index keeps moving",
        if bounded && took < FLUSH_LIMIT {
            Ok(())
        } else {
            Err(format!(
                "modify_qp(ERR) took {} ms and flushed {flushed:?}",
                took.as_millis()
            ))
        },
    );
    drop(c1);
    drop(s1);
    ok &= report("QPs destroyed after the hammer", Ok(()));
    Ok(ok)
}

/// The SQ as the local-operation hammer fills it.
struct SqFiller {
    ring: Producer,
    buf: *mut u8,
    stride: usize,
    sqe: Sqe,
}

// SAFETY: as for `Producer`: the mapping outlives the thread.
unsafe impl Send for SqFiller {}

impl SqFiller {
    /// Writes SQEs up to a full ring and publishes them.
    fn fill(&self) {
        // SAFETY: live, aligned header words and slots of the mapping (see
        // `Producer::new`); slots between the consumer and our producer are ours.
        unsafe {
            let c = (*self.ring.consumer).load(Ordering::Acquire);
            let p = (*self.ring.word).load(Ordering::Relaxed);
            let mut n = p;
            while n.wrapping_sub(c) < self.ring.entries {
                let off = slot_offset(n, self.ring.entries, self.stride);
                self.buf.add(off).cast::<Sqe>().write_volatile(self.sqe);
                n = n.wrapping_add(1);
            }
            (*self.ring.word).store(n, Ordering::Release);
        }
    }
}

/// The `--local-hammer` run: the SQ full of local operations that succeed
/// at once (LOCAL_INV of an unbound memory window), then the doorbell, which
/// transmits in this thread's system call: the call takes at most a TX run's
/// budget and leaves the rest to the work queue, which then takes it all.
pub(super) fn local_hammer(addr: SocketAddrV4) -> Result<bool, String> {
    let mut ok = true;
    let Pair { c1, s1, .. } = connected(addr, BIG_SQ)?;
    let mw = ffi::Mw::new(&c1._pd).map_err(io)?;
    let (sq, _) = crate::dv::query_qp(&c1.qp)?;
    let ring = Producer::new(&sq).ok_or("no SQ ring")?;
    let mut sqe = Sqe {
        wr_id: 77,
        opcode: SqOpcode::LocalInv as u8,
        ..Sqe::default()
    };
    sqe.set_inv_rkey(mw.rkey());
    let consumer = ring.consumer;
    let filler = SqFiller {
        ring,
        buf: sq.buf.cast(),
        stride: sq.stride as usize,
        sqe,
    };
    // SAFETY: the live consumer word of the SQ's header (see `Producer::new`).
    let consumed = || unsafe { (*consumer).load(Ordering::Acquire) };
    let before = consumed();
    filler.fill();
    let t = Instant::now();
    let r = crate::dv::ring_sq_doorbell(&c1.qp);
    let took = t.elapsed();
    let in_call = consumed().wrapping_sub(before);
    let end = Instant::now() + Duration::from_secs(10);
    while consumed().wrapping_sub(before) < sq.entries && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    let done = consumed().wrapping_sub(before);
    println!(
        "local-hammer: the doorbell returned {r:?} after {} ms having taken {in_call}; {done} of {} LOCAL_INVs taken in all",
        took.as_millis(),
        sq.entries
    );
    ok &= report(
        "a doorbell takes at most a TX run's budget of local operations",
        if in_call < sq.entries / 2 {
            Ok(())
        } else {
            Err(format!(
                "{in_call} of {} taken in the system call",
                sq.entries
            ))
        },
    );
    let mut pend = Pending::default();
    pend.poll(&c1.cq).map_err(io)?;
    let errors: Vec<String> = pend
        .drain()
        .iter()
        .filter(|w| w.status != ffi::WC_SUCCESS)
        .map(|w| format!("wr_id {} {}", w.wr_id, ffi::status_str(w.status)))
        .collect();
    ok &= report(
        "the work queue takes the rest, every one succeeds",
        if errors.is_empty() && done == sq.entries {
            Ok(())
        } else {
            Err(format!(
                "{done} of {} taken, errors: {errors:?}",
                sq.entries
            ))
        },
    );
    drop(c1);
    drop(s1);
    drop(mw);
    ok &= report("QPs destroyed after the local hammer", Ok(()));
    Ok(ok)
}
