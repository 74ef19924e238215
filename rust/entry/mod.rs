// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The entry points from C into Rust: every `extern "C"` function the shim's
//! ops tables, socket callbacks and timers call. The top layer of the module
//! (`Documentation/module.md`): each entry turns raw pointers into the safe
//! wrappers and calls one safe function of the layers below. Those conversions
//! are `unsafe`, so this layer, like `kapi`, does not forbid it.

mod cm;
mod dev;
mod obj;
mod uq;
