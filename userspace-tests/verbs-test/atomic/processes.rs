// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Atomicity across QPs and processes (RFC 7306 §5.3): the FetchAdd hammer and the CmpSwap
//! lock, with their worker and target processes.

use super::*;

/// Drives `HAMMER_OPS` FetchAdd(1)s on one QP with `DEPTH` in flight; each QP must see
/// strictly increasing originals (its requests execute in order, RFC 7306 §5.2.2 rule 8).
struct Hammer {
    c: Client,
    res: Mr,
    posted: u64,
    done: u64,
    last: Option<u64>,
}

impl Hammer {
    fn new(c: Client) -> Result<Self, String> {
        let res = Mr::new(&c.pd, (8 * DEPTH) as usize, ffi::LOCAL_WRITE, 0).map_err(io)?;
        Ok(Hammer {
            c,
            res,
            posted: 0,
            done: 0,
            last: None,
        })
    }

    fn finished(&self) -> bool {
        self.done == HAMMER_OPS
    }

    /// Posts what fits, reaps what completed.
    fn step(&mut self) -> Result<(), String> {
        while self.posted < HAMMER_OPS && self.posted - self.done < DEPTH {
            let sge = Sge {
                mr: &self.res,
                offset: (8 * (self.posted % DEPTH)) as usize,
                len: 8,
            };
            let op = Op::FetchAdd(self.c.resp.addr + WORD as u64, self.c.resp.rkey, 1);
            self.c
                .qp
                .post_send(self.posted, op, &[sge], ffi::SIGNALED)
                .map_err(io)?;
            self.posted += 1;
        }
        for w in self.c.cq.poll().map_err(io)? {
            if w.wr_id != self.done {
                return Err(format!(
                    "completion {} out of order, want {}",
                    w.wr_id, self.done
                ));
            }
            wait::expect(&w, ffi::WC_SUCCESS, Some(ffi::OP_FETCH_ADD))?;
            let off = (8 * (w.wr_id % DEPTH)) as usize;
            let b = self.res.read(off, 8).map_err(io)?;
            let v = u64::from_ne_bytes(b.try_into().map_err(|_| "short read")?);
            if self.last.is_some_and(|l| v <= l) {
                return Err(format!(
                    "original {v} after {:?}: not increasing",
                    self.last
                ));
            }
            self.last = Some(v);
            self.done += 1;
        }
        Ok(())
    }
}

/// Runs hammers until all finish or `limit` passes.
fn run_hammers(hs: &mut [Hammer], limit: Duration) -> Result<(), String> {
    let end = Instant::now() + limit;
    while !hs.iter().all(Hammer::finished) {
        for h in hs.iter_mut() {
            h.step()?;
        }
        if Instant::now() > end {
            let done: Vec<u64> = hs.iter().map(|h| h.done).collect();
            return Err(format!("FetchAdds not done within {limit:?}: {done:?}"));
        }
        std::thread::yield_now();
    }
    Ok(())
}

/// The `ADDR` (IPv4:PORT) after a hidden mode's flag.
fn addr_arg(args: &[String]) -> Result<SocketAddrV4, String> {
    args.get(1)
        .ok_or("no address")?
        .parse()
        .map_err(|e| format!("address: {e}"))
}

/// The child process body: `--atomic-worker ADDR`: one connection, `HAMMER_OPS` FetchAdds.
pub fn worker_main(args: &[String]) -> Option<ExitCode> {
    if args.first().map(String::as_str) != Some(WORKER_FLAG) {
        return None;
    }
    let run = || -> Result<(), String> {
        let a = addr_arg(args)?;
        let env = Env {
            server: a,
            dev: None,
        };
        let c = dial(&env, a)?.finish()?;
        let mut h = [Hammer::new(c)?];
        run_hammers(&mut h, Duration::from_secs(600))?;
        let [h] = h;
        h.c.close()
    };
    Some(match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rsiw-verbs-test: atomic worker: {e}");
            ExitCode::FAILURE
        }
    })
}

/// Hidden command line mode of the interop target (a peer's region for `atomic-peer-refuses`).
const TARGET_FLAG: &str = "--atomic-target";
/// What the interop target's word holds; it must still hold it after the refused atomic.
const TARGET_SEED: u64 = 0x5eed_0000_0000_0007;

/// `--atomic-target ADDR`: exposes a region with remote atomic access on ADDR for one
/// connection, waits until the peer is gone, and exits 0 only if the word and the rest of
/// the region are untouched (a device without atomics must refuse, RFC 7306 §1.1).
pub fn target_main(args: &[String]) -> Option<ExitCode> {
    if args.first().map(String::as_str) != Some(TARGET_FLAG) {
        return None;
    }
    let run = || -> Result<(), String> {
        let a = addr_arg(args)?;
        let mut t = Target::at(a, ATOMIC_ACCESS)?;
        t.set_word(TARGET_SEED)?;
        println!("rsiw-verbs-test: atomic target listening on {a}");
        t.accept(0)?;
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            let ev = t.chan.event(1000).map_err(io)?;
            if ev.is_some_and(|e| e.kind == ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED)
            {
                break;
            }
            if Instant::now() > end {
                return Err("the connection did not end within 60 s".into());
            }
        }
        let all = t.mr.read(0, REGION).map_err(io)?;
        let mut want = vec![0u8; REGION];
        want[WORD..WORD + 8].copy_from_slice(&TARGET_SEED.to_ne_bytes());
        crate::proto::diff("target region after the refused atomic", &all, &want)?;
        println!("rsiw-verbs-test: atomic target: disconnected, region untouched");
        Ok(())
    };
    Some(match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rsiw-verbs-test: atomic target: {e}");
            ExitCode::FAILURE
        }
    })
}

/// RFC 7306 §5.3: FetchAdd(1) from 4 QPs (2 here, 2 in child processes) on one word
/// loses no increment.
pub(super) fn hammer(env: &Env) -> Result<(), String> {
    let mut t = Target::new(env, ATOMIC_ACCESS)?;
    let exe = std::env::current_exe().map_err(io)?;
    let mut children: Vec<Child> = Vec::new();
    let mut dials = Vec::new();
    for _ in 0..HAMMER_LOCAL {
        dials.push(dial(env, t.addr)?);
    }
    for _ in 0..HAMMER_CHILDREN {
        let ch = Command::new(&exe)
            .arg(WORKER_FLAG)
            .arg(t.addr.to_string())
            .spawn()
            .map_err(|e| format!("spawning a worker: {e}"))?;
        children.push(ch);
    }
    let started = Instant::now();
    let mut outcome = (|| {
        for _ in 0..HAMMER_LOCAL + HAMMER_CHILDREN {
            t.accept(0)?;
        }
        let mut hs = dials
            .drain(..)
            .map(|d| d.finish().and_then(Hammer::new))
            .collect::<Result<Vec<_>, _>>()?;
        run_hammers(&mut hs, Duration::from_secs(600))?;
        for h in hs {
            h.c.close()?;
        }
        Ok::<(), String>(())
    })();
    for mut ch in children {
        match ch.wait() {
            Ok(s) if s.success() => {}
            Ok(s) => outcome = outcome.and(Err(format!("a worker process exited with {s}"))),
            Err(e) => outcome = outcome.and(Err(format!("waiting for a worker: {e}"))),
        }
    }
    outcome?;
    let want = HAMMER_OPS * (HAMMER_LOCAL + HAMMER_CHILDREN) as u64;
    let got = t.word()?;
    println!(
        "rsiw-verbs-test: {} FetchAdds from {} QPs in {:.1} s; word {got}",
        want,
        HAMMER_LOCAL + HAMMER_CHILDREN,
        started.elapsed().as_secs_f64()
    );
    if got != want {
        return Err(format!("final value {got}, want {want}"));
    }
    Ok(())
}

/// A CmpSwap spin lock (word at WORD) protecting a plain counter (the 8 bytes after it)
/// that two QPs update with Read + Write: no update may be lost (RFC 7306 §5.3).
pub(super) fn cas_lock(env: &Env) -> Result<(), String> {
    const ROUNDS: u64 = 100;
    let mut t = Target::new(env, ATOMIC_ACCESS)?;
    let d = [dial(env, t.addr)?, dial(env, t.addr)?];
    t.accept(0)?;
    t.accept(0)?;
    let [d0, d1] = d;
    let mut cs = [d0.finish()?, d1.finish()?];
    let bufs = [
        Mr::new(&cs[0].pd, 16, ffi::LOCAL_WRITE, 0).map_err(io)?,
        Mr::new(&cs[1].pd, 16, ffi::LOCAL_WRITE, 0).map_err(io)?,
    ];
    let lock = t.word_addr();
    let counter = lock + 8;
    let mut id = 0u64;
    let mut contended = 0u64;
    // Alternate the two QPs one step at a time so their critical sections interleave.
    let mut left = [ROUNDS, ROUNDS];
    let mut holding = [false, false];
    while left.iter().any(|&l| l > 0) {
        for q in 0..2 {
            if left[q] == 0 {
                continue;
            }
            let c = &mut cs[q];
            let b = &bufs[q];
            let rkey = c.resp.rkey;
            id += 1;
            let me = q as u64 + 1;
            if !holding[q] {
                let got = atomic(c, b, id, Op::CmpSwap(lock, rkey, 0, me), ffi::OP_COMP_SWAP)?;
                if got == 0 {
                    holding[q] = true;
                } else {
                    contended += 1;
                }
                continue;
            }
            // Critical section: read, increment locally, write back, release.
            let sge = Sge {
                mr: b,
                offset: 8,
                len: 8,
            };
            c.qp.post_send(id, Op::Read(counter, rkey), &[sge], ffi::SIGNALED)
                .map_err(io)?;
            wait::expect_ok(&mut c.pend, &c.cq, id, ffi::OP_READ, None)?;
            let v = u64::from_ne_bytes(b.read(8, 8).map_err(io)?.try_into().map_err(|_| "short")?);
            b.write(8, &(v + 1).to_ne_bytes()).map_err(io)?;
            let sge = Sge {
                mr: b,
                offset: 8,
                len: 8,
            };
            id += 1;
            c.qp.post_send(id, Op::Write(counter, rkey), &[sge], ffi::SIGNALED)
                .map_err(io)?;
            wait::expect_ok(&mut c.pend, &c.cq, id, ffi::OP_WRITE, None)?;
            // The release is a CmpSwap too: it must find our own id (RFC 7306 §7: an
            // atomic after a Write on the same connection sees that Write).
            id += 1;
            let got = atomic(c, b, id, Op::CmpSwap(lock, rkey, me, 0), ffi::OP_COMP_SWAP)?;
            if got != me {
                return Err(format!(
                    "QP {q} released a lock holding {got}, not its own {me}"
                ));
            }
            holding[q] = false;
            left[q] -= 1;
        }
    }
    let v = u64::from_ne_bytes(
        t.mr.read(WORD + 8, 8)
            .map_err(io)?
            .try_into()
            .map_err(|_| "short")?,
    );
    println!("rsiw-verbs-test: lock: counter {v}, {contended} contended acquisitions");
    if v != 2 * ROUNDS || t.word()? != 0 {
        return Err(format!(
            "counter {v} (want {}), lock word {}",
            2 * ROUNDS,
            t.word()?
        ));
    }
    let [c0, c1] = cs;
    c0.close()?;
    c1.close()
}
