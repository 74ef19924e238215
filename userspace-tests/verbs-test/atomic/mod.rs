// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! RFC 7306 cases: FetchAdd/CmpSwap results against the reference ALU (§5.1), responder
//! checks (§5.1, §8.2), atomicity across QPs and processes (§5.3), Immediate Data (§6)
//! and the §7 ordering rows a verbs user can observe.
//!
//! The target word lives in a region registered by this process behind its own rdma_cm
//! listener (on the server's address, another port), so the test reads the responder's
//! memory directly: "memory unchanged" is checked on the bytes themselves, even after a
//! Terminate has ended the connection.

use crate::cases::Run;
use crate::ffi::{self, Channel, CmId, Cq, Mr, Op, Pd, Qp, Sge};
use crate::proto::{Kind, Req, Resp};
use crate::requester::{expect_event, Client, Dial, Env, WR_VERDICT};
use crate::wait::{self, Pending};
use rsiw_proto::atomic::{masked_cmp_swap, masked_fetch_add};
use std::net::SocketAddrV4;
use std::process::{Child, Command, ExitCode};
use std::rc::Rc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

mod alu;
mod order;
mod processes;
mod refused;

use alu::{cmp_swap_random, fetch_add_random, masked_random};
use order::{order_atomic_read, order_atomic_send, order_write_atomic, write_imm, write_imm64};
use processes::{cas_lock, hammer};
pub use processes::{target_main, worker_main};
use refused::{misaligned, no_remote_atomic, peer_refuses};

/// FetchAdd(1)s each QP of the atomicity case issues (issue: at least 10,000).
const HAMMER_OPS: u64 = 10_000;
/// QPs in the atomicity case: two in this process, `HAMMER_CHILDREN` in others.
const HAMMER_LOCAL: usize = 2;
const HAMMER_CHILDREN: usize = 2;
/// Atomics in flight per QP (within the initiator depth rdma_cm negotiates, 4).
const DEPTH: u64 = 4;
/// Size of the exposed region; the target word is at `WORD`.
const REGION: usize = 64;
const WORD: usize = 16;
/// Hidden command line mode of the atomicity case's child processes.
const WORKER_FLAG: &str = "--atomic-worker";

/// Listener ports in use: each target gets a fresh one (no TIME_WAIT reuse).
static NEXT_PORT: AtomicU16 = AtomicU16::new(0);

/// A case body that needs a device with atomics.
type Body = fn(&Env) -> Result<(), String>;

/// Registers the RFC 7306 cases.
pub fn cases(add: &mut dyn FnMut(String, Run)) {
    let list: [(&str, Body); 13] = [
        ("atomic-fetch-add-random", fetch_add_random),
        ("atomic-cmp-swap-random", cmp_swap_random),
        ("atomic-err-misaligned", misaligned),
        ("atomic-err-no-remote-atomic", no_remote_atomic),
        ("atomic-4qp-2proc-fetch-add", hammer),
        ("atomic-cmp-swap-lock", cas_lock),
        ("atomic-write-imm", write_imm),
        ("atomic-order-write-then-atomic", order_write_atomic),
        ("atomic-order-atomic-then-read", order_atomic_read),
        ("atomic-order-atomic-then-send", order_atomic_send),
        ("atomic-peer-refuses", peer_refuses),
        ("atomic-masked-random-dv", masked_random),
        ("atomic-write-imm64-dv", write_imm64),
    ];
    for (name, f) in list {
        add(
            name.into(),
            Box::new(move |env| skip_without_atomics(env, f)),
        );
    }
}

/// Runs `f` unless the device reports `IBV_ATOMIC_NONE` (siw): then the case is a skip.
fn skip_without_atomics(env: &Env, f: Body) -> Result<(), String> {
    // Resolving the server's address binds the ID to the local device that reaches it.
    let chan = Rc::new(Channel::new().map_err(io)?);
    let id = CmId::new(&chan).map_err(io)?;
    id.resolve_addr(env.server).map_err(io)?;
    expect_event(
        &chan,
        ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED,
        5000,
    )?;
    if id.atomic_cap().map_err(io)? == ffi::ATOMIC_NONE {
        return Err(format!(
            "{}device reports atomic_cap ATOMIC_NONE (RFC 7306 not supported)",
            crate::SKIP_PREFIX
        ));
    }
    drop(id);
    f(env)
}

fn io(e: std::io::Error) -> String {
    e.to_string()
}

/// The responder side of one accepted connection. Field order is drop order.
struct Accepted {
    _qp: Qp,
    cq: Rc<Cq>,
    _id: CmId,
    pend: Pending,
}

/// A region exposed behind this process's own listener.
struct Target {
    conns: Vec<Accepted>,
    mr: Mr,
    pd: Pd,
    _listen: CmId,
    chan: Rc<Channel>,
    addr: SocketAddrV4,
}

impl Target {
    /// Listens next to the server and registers `REGION` bytes (zero) with `access`.
    fn new(env: &Env, access: u32) -> Result<Self, String> {
        let n = NEXT_PORT.fetch_add(1, Ordering::Relaxed);
        let mut addr = env.server;
        addr.set_port(env.server.port().wrapping_add(200).wrapping_add(n));
        Self::at(addr, access)
    }

    /// Listens on `addr` and registers `REGION` bytes (zero) with `access`.
    fn at(addr: SocketAddrV4, access: u32) -> Result<Self, String> {
        let chan = Rc::new(Channel::new().map_err(io)?);
        let listen = CmId::new(&chan).map_err(io)?;
        listen.listen(addr).map_err(io)?;
        let pd = Pd::new(&listen).map_err(io)?;
        let mr = Mr::new(&pd, REGION, access, 0).map_err(io)?;
        if !(mr.addr() + WORD as u64).is_multiple_of(8) {
            return Err("the target word is not 8-byte aligned".into());
        }
        Ok(Target {
            conns: Vec::new(),
            mr,
            pd,
            _listen: listen,
            chan,
            addr,
        })
    }

    fn resp(&self) -> Resp {
        Resp {
            addr: self.mr.addr(),
            rkey: self.mr.rkey(),
            len: REGION as u32,
        }
    }

    /// Accepts the next connect request; receives for `nrecv` 64-byte messages are posted.
    fn accept(&mut self, nrecv: u64) -> Result<usize, String> {
        let ev = loop {
            let ev = self
                .chan
                .event(60_000)
                .map_err(io)?
                .ok_or("no connect request within 60 s")?;
            if ev.kind == ffi::sys::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST {
                break ev;
            }
        };
        let id = CmId::adopt(&self.chan, &ev).map_err(io)?;
        let cq = Rc::new(Cq::new(&id, 256, false).map_err(io)?);
        let qp = Qp::new(&id, &self.pd, &cq, None).map_err(io)?;
        for k in 0..nrecv {
            let off = WORD + 8 + (k as usize % 2) * 16;
            qp.post_recv(
                k,
                &[Sge {
                    mr: &self.mr,
                    offset: off,
                    len: 16,
                }],
            )
            .map_err(io)?;
        }
        id.accept(&self.resp().encode()).map_err(io)?;
        self.conns.push(Accepted {
            _qp: qp,
            cq,
            _id: id,
            pend: Pending::default(),
        });
        Ok(self.conns.len() - 1)
    }

    fn word(&self) -> Result<u64, String> {
        let b = self.mr.read(WORD, 8).map_err(io)?;
        Ok(u64::from_ne_bytes(b.try_into().map_err(|_| "short read")?))
    }

    fn set_word(&self, v: u64) -> Result<(), String> {
        self.mr.write(WORD, &v.to_ne_bytes()).map_err(io)
    }

    fn word_addr(&self) -> u64 {
        self.mr.addr() + WORD as u64
    }
}

/// Starts a connect to the target at `to`; its private data is not looked at.
fn dial(env: &Env, to: SocketAddrV4) -> Result<Dial, String> {
    let req = Req {
        kind: Kind::Expose,
        len: 0,
        sges: 0,
        nrecv: 0,
        access: 0,
        flags: 0,
        seed: 0,
        name: "atomic".into(),
    };
    Client::dial(env, to, &req)
}

/// One connection to a fresh target with `access`; the target posted `nrecv` receives.
fn pair(env: &Env, access: u32, nrecv: u64) -> Result<(Client, Target), String> {
    let mut t = Target::new(env, access)?;
    let d = dial(env, t.addr)?;
    t.accept(nrecv)?;
    let c = d.finish()?;
    Ok((c, t))
}

const ATOMIC_ACCESS: u32 =
    ffi::LOCAL_WRITE | ffi::REMOTE_ATOMIC | ffi::REMOTE_READ | ffi::REMOTE_WRITE;

/// The first 8 bytes of `mr`: an atomic's result buffer or a word-sized payload.
fn sge8(mr: &Mr) -> Sge<'_> {
    Sge {
        mr,
        offset: 0,
        len: 8,
    }
}

/// xorshift64*: reproducible operands from the case name.
struct Rng(u64);

impl Rng {
    fn new(seed: &str) -> Self {
        // FNV-1a, then forced odd: xorshift must not start at zero.
        let h = seed.bytes().fold(0xcbf2_9ce4_8422_2325u64, |a, b| {
            (a ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        Rng(h | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Posts one atomic and returns the original value the completion delivered.
fn atomic(c: &mut Client, res: &Mr, id: u64, op: Op, want_op: u32) -> Result<u64, String> {
    res.write(0, &[0xa5; 8]).map_err(io)?;
    let sge = sge8(res);
    c.qp.post_send(id, op, &[sge], ffi::SIGNALED).map_err(io)?;
    wait::expect_ok(&mut c.pend, &c.cq, id, want_op, None)?;
    let b = res.read(0, 8).map_err(io)?;
    Ok(u64::from_ne_bytes(b.try_into().map_err(|_| "short read")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_reproducible_and_varied() {
        let (mut a, mut b) = (Rng::new("x"), Rng::new("x"));
        let va: Vec<u64> = (0..8).map(|_| a.next()).collect();
        let vb: Vec<u64> = (0..8).map(|_| b.next()).collect();
        assert_eq!(va, vb);
        assert!(va.windows(2).all(|w| w[0] != w[1]));
        assert_ne!(Rng::new("y").next(), va[0]);
    }
}
