// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! cargo-fuzz target: the RFC 7306 §5.1 ALU against the RFC's bit-serial pseudocode.
#![no_main]

pub use rsiw_proto::*;

#[allow(dead_code)] // each target uses one entry point of the shared harness
#[path = "../../src/fuzz_harness.rs"]
mod fuzz_harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::atomic_one(data));
