// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Where the provider must be installed for libibverbs (rdma-core 44, provider ABI
//! `IBVERBS_PRIVATE_34`) to find it.

/// The file cargo builds (`target/release/`).
pub const BUILT_FILE: &str = "librsiw_provider.so";
/// Its installed name in libibverbs' provider directory
/// (`/usr/lib/x86_64-linux-gnu/libibverbs/` on Debian): `lib<name>-rdmav<PABI>.so`.
pub const INSTALLED_FILE: &str = "librsiw-rdmav34.so";
/// The driver file in `/etc/libibverbs.d/`.
pub const DRIVER_FILE: &str = "rsiw.driver";
/// Its contents: a bare name is looked up in the provider directory, and libibverbs
/// appends `-rdmav34.so` itself.
pub const DRIVER_LINE: &str = "driver rsiw\n";
