// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw's rdma-core provider (`librsiw-rdmav34.so`): the userspace half of the verbs
//! for rsiw devices, loaded by libibverbs.

mod abi;
mod cmem;
mod context;
mod cq;
mod device;
mod doorbell;
pub mod install;
#[cfg(test)]
mod layout_test;
mod mr;
mod mw;
mod pd;
mod qp;
mod qp_ex;
mod ring;
pub mod rsiwdv;
mod srq;
mod sys;
mod wr;
