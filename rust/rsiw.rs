// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw: a software iWARP RNIC (RFC 5040, RFC 5041, RFC 5044, RFC 7306) for
//! the Linux RDMA subsystem.

// `pin_init!` of the QP's many fields nests deeper than the default 128.
// `unsafe` lives only in `ffi` (the FFI layer); every other module forbids it.
#![recursion_limit = "256"]

#[forbid(unsafe_code)]
mod cm;
#[forbid(unsafe_code)]
mod counters;
#[forbid(unsafe_code)]
mod cq;
#[forbid(unsafe_code)]
mod device;
#[forbid(unsafe_code)]
mod driver;
#[forbid(unsafe_code)]
mod engine;
mod ffi;
#[forbid(unsafe_code)]
mod link;
#[forbid(unsafe_code)]
mod mem;
#[forbid(unsafe_code)]
mod netdev_events;
#[forbid(unsafe_code)]
mod qp;
#[forbid(unsafe_code)]
mod queue;
#[forbid(unsafe_code)]
mod slots;
#[forbid(unsafe_code)]
mod srq;
#[forbid(unsafe_code)]
mod stream;
// User rings: used once the verbs objects take udata.
#[allow(dead_code)]
#[forbid(unsafe_code)]
mod uqueue;
#[forbid(unsafe_code)]
mod verbs;
#[forbid(unsafe_code)]
mod wr;

/// The user ABI shared with the rdma-core provider.
#[path = "abi/src/lib.rs"]
#[allow(unused_attributes, unreachable_pub, dead_code)]
mod abi;

/// The protocol core (MPA, DDP, RDMAP), shared with host tests.
#[path = "proto/src/lib.rs"]
#[allow(unused_attributes, unreachable_pub, dead_code, unused_imports)]
mod proto;

use driver::RsiwModule;

// The keys 6.12's and 7.3's `module!` both take (6.12 has `author`, 7.3 `authors`).
kernel::prelude::module! {
    type: RsiwModule,
    name: "rsiw",
    description: "Software iWARP RNIC",
    license: "Dual BSD/GPL",
}
