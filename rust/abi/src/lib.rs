// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The rsiw user ABI: the one definition of every structure and constant that the
//! kernel module and the rdma-core provider exchange through udata and mmap.
//!
//! Both sides compile this file: the provider as the `rsiw-abi` crate, the module
//! through `#[path]`. Everything here is `#[repr(C)]`, fixed-size and free of
//! padding that a compiler could fill differently on either side.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

pub mod cmd;
pub mod cqe;
pub mod ring;
pub mod wqe;

/// Version of this ABI; the kernel reports it as `uverbs_abi_ver` and the
/// provider refuses devices that report another.
pub const ABI_VERSION: u32 = 4;

/// Response of the kernel to `alloc_ucontext` (the driver part of udata).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocUcontextResp {
    /// The ABI version the kernel speaks; equal to [`ABI_VERSION`].
    pub abi_version: u32,
    /// Reserved, zero.
    pub reserved: u32,
}

/// Response of the kernel to `alloc_pd` (the driver part of udata).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocPdResp {
    /// Device-wide PD number, for diagnostics.
    pub pdn: u32,
    /// Reserved, zero.
    pub reserved: u32,
}
