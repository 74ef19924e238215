// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! cargo-fuzz target: the TX framer resumed at arbitrary offsets with arbitrary FPDU
//! sizes (RFC 5044 §4, RFC 5041 §5), parsed back by the RX parser.
#![no_main]

pub use rsiw_proto::*;

#[allow(dead_code)] // each target uses one entry point of the shared harness
#[path = "../../src/fuzz_harness.rs"]
mod fuzz_harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::tx_one(data));
