// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw: a software iWARP RNIC (RFC 5040, RFC 5041, RFC 5044, RFC 7306) for
//! the Linux RDMA subsystem.
//!
//! One folder per layer, top first (`Documentation/module.md`); a layer names
//! only those below it. Every layer's `mod.rs` but `entry` and `kapi` forbids
//! `unsafe`.

// `pin_init!` of the QP's many fields nests deeper than the default 128.
#![recursion_limit = "256"]

// The layers, top first.
/// The `extern "C"` entry points the C shim calls.
mod entry;

/// The verbs, the driver's lifetime and the netdev links.
mod verbs;

/// The iWARP connection manager.
mod cm;

/// The device, QP and SRQ.
mod objects;

/// The data-path engine of a connected QP.
mod engine;

/// The FIFO, work requests, completion queue and user rings.
mod queue;

/// Memory regions, the stream, slot tables and counters.
mod resources;

/// The kernel wrappers and the C shim: the only layer below the entries with `unsafe`.
mod kapi;

/// The protocol core (MPA, DDP, RDMAP), shared with host tests.
#[path = "proto/src/lib.rs"]
#[allow(unused_attributes, unreachable_pub, dead_code, unused_imports)]
mod proto;

/// The user ABI shared with the rdma-core provider.
#[path = "abi/src/lib.rs"]
#[allow(unused_attributes, unreachable_pub, dead_code)]
mod abi;

use verbs::driver::RsiwModule;

// The keys 6.12's and 7.3's `module!` both take (6.12 has `author`, 7.3 `authors`).
kernel::prelude::module! {
    type: RsiwModule,
    name: "rsiw",
    description: "Software iWARP RNIC",
    license: "Dual BSD/GPL",
}
