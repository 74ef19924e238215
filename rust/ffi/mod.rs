// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The FFI layer: bindings, the C shim's interface and the safe wrappers over
//! the RDMA core objects; the only place in the module that holds `unsafe`.

pub(crate) mod attr;
pub(crate) mod bindings;
mod callbacks;
pub(crate) mod ib;
pub(crate) mod lock;
pub(crate) mod netdev;
pub(crate) mod registration;
pub(crate) mod registry;
pub(crate) mod udata;
