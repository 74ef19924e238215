// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The kernel wrappers: the bindings, the safe wrappers over the kernel's and the
//! RDMA core's objects, and beside each wrapper the C shim it calls (`zc.rs` with
//! `zc.c` and `zc.h`). With the entries above everything, the only layer that holds
//! `unsafe`.

pub(crate) mod attr;
pub(crate) mod av;
pub(crate) mod bindings;
pub(crate) mod compat;
pub(crate) mod cq;
pub(crate) mod crc;
pub(crate) mod deadline;
pub(crate) mod hwstats;
pub(crate) mod ib;
pub(crate) mod iwcm;
pub(crate) mod lock;
#[allow(dead_code)] // user queues, wired by the verbs objects
pub(crate) mod mmap;
pub(crate) mod mr;
pub(crate) mod netdev;
pub(crate) mod nlres;
pub(crate) mod obj;
pub(crate) mod owner;
pub(crate) mod params;
pub(crate) mod percpu;
pub(crate) mod qp;
pub(crate) mod random;
pub(crate) mod registration;
pub(crate) mod registry;
pub(crate) mod sock;
pub(crate) mod srq;
pub(crate) mod udata;
pub(crate) mod umem;
pub(crate) mod wq;
pub(crate) mod zc;
