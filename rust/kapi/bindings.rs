// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Raw bindings: the kernel crate's bindings plus the RDMA/netdev types and
//! functions it lacks, generated at build time from `bindings.h` by
//! `scripts/gen-bindings.sh` with the target kernel's own bindgen command.
#![allow(
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    clippy::as_underscore,
    clippy::ptr_as_ptr,
    dead_code,
    improper_ctypes,
    missing_docs,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    unknown_lints,
    unnecessary_transmutes
)]

// The generated code names C types as `ffi::c_int` etc.
use kernel::ffi;

// Items the kernel's bindgen run blocklists and defines by hand.
type __kernel_size_t = usize;
type __kernel_ssize_t = isize;
type __kernel_ptrdiff_t = isize;

// Everything the kernel crate already has is blocklisted in our run, so these
// names resolve to the kernel's definitions (one `struct device`, not two).
pub use kernel::bindings::*;

include!("bindings_generated.rs");
