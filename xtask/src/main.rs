// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw's build and test driver (to be written).
#![allow(dead_code)]
mod rdma_core;
fn main() {}
