// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Raw bindings to rdma-core v55's provider interface (`infiniband/driver.h`), generated
//! by build.rs; the provider ABI is IBVERBS_PRIVATE_34, as in the system's libibverbs.
#![allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    missing_docs,
    clippy::all
)]

include!(concat!(env!("OUT_DIR"), "/verbs55.rs"));
