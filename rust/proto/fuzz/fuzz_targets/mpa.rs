// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! cargo-fuzz target: MPA Request/Reply parsing, emission and negotiation (RFC 5044 §7.1, RFC 6581).
#![no_main]

pub use rsiw_proto::*;

#[allow(dead_code)] // each target uses one entry point of the shared harness
#[path = "../../src/fuzz_harness.rs"]
mod fuzz_harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::mpa_one(data));
