// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The queues: the kernel FIFO, the work requests and completions, the completion
//! queue and the user rings mapped to the provider. Below the objects and the
//! engine, above the resources they reference.

#![forbid(unsafe_code)]

pub(crate) mod cq;
pub(crate) mod fifo;
// User rings: used once the verbs objects take udata.
#[allow(dead_code)]
pub(crate) mod uqueue;
pub(crate) mod wr;
