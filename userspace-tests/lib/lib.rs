// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! What the test programs share: safe wrappers over libibverbs and librdmacm ([`ffi`]),
//! used by rsiw-verbs-test and rsiw-load.

pub mod ffi;
