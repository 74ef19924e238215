// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw protocol core: MPA (RFC 5044, RFC 6581), DDP (RFC 5041), RDMAP (RFC 5040)
//! and the RFC 7306 extensions, as typed views over bytes, a resumable RX parser,
//! a TX framer and the masked-atomic ALU. No kernel, no allocation, no unsafe.
//!
//! The same files are compiled on the host (this crate, for `cargo test`) and
//! into `rsiw.ko` (through `#[path]`), so nothing here may depend on `std`.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

pub mod atomic;
mod bytes;
pub mod crc;
pub mod ddp;
pub mod fpdu;
#[cfg(test)]
mod fuzz_harness;
pub mod mpa;
pub mod qpconn;
pub mod rdmap;
pub mod rx;
pub mod stag;
pub mod terminate;
pub mod tx;
