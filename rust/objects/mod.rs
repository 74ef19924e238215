// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The RDMA objects the verbs and the connection manager act on: the device (its
//! tables, listeners and counters), the QP (state machine, send and receive
//! queues, its connection) and the shared receive queue.

#![forbid(unsafe_code)]

pub(crate) mod device;
pub(crate) mod qp;
pub(crate) mod srq;
