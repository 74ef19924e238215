// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The resources the objects hold: memory regions and windows (`mem`), the
//! connected stream under an MPA connection, the slot table of object numbers and
//! the per-CPU counters.

#![forbid(unsafe_code)]

pub(crate) mod counters;
pub(crate) mod mem;
pub(crate) mod slots;
pub(crate) mod stream;
