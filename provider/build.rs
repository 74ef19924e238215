// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Generates the provider's bindings to rdma-core v55's provider interface
//! (`infiniband/driver.h`) and, for tests, a layout cross-check against the system's
//! rdma-core 44 `infiniband/verbs.h`, whose libibverbs the provider runs against.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Structures both libibverbs 44 and this provider touch; their field offsets must agree.
const SHARED_STRUCTS: &[&str] = &[
    "ibv_context",
    "_ibv_device_ops",
    "ibv_device",
    "ibv_pd",
    "ibv_port_attr",
    "ibv_device_attr",
    "ibv_device_attr_ex",
    "ibv_query_device_ex_input",
    "ibv_odp_caps",
    "ibv_tso_caps",
    "ibv_rss_caps",
    "ibv_packet_pacing_caps",
    "ibv_tm_caps",
    "ibv_cq_moderation_caps",
    "verbs_context",
    "ibv_cq",
    "ibv_qp",
    "ibv_srq",
    "ibv_mr",
    "ibv_wc",
    "ibv_send_wr",
    "ibv_recv_wr",
    "ibv_sge",
    "ibv_qp_cap",
    "ibv_qp_init_attr",
    "ibv_qp_init_attr_ex",
    "ibv_qp_attr",
    "ibv_srq_init_attr",
    "ibv_srq_attr",
    "ibv_qp_ex",
];

/// Structures v55 extended at the end (`ibv_port_attr::active_speed_ex`): the provider
/// must never touch the tail, because libibverbs 44 hands it only the old size.
/// `ibv_qp_ex::wr_flush` likewise: the provider builds the tail of `verbs_qp` at v44's
/// offsets (see `qp_ex.rs`).
const GROWN_STRUCTS: &[&str] = &["ibv_port_attr", "ibv_qp_ex"];

fn main() {
    let root = rdma_core_dir();
    let include = root.join("build/include");
    for needed in [
        "infiniband/driver.h",
        "config.h",
        "kernel-abi/ib_user_verbs.h",
    ] {
        if !include.join(needed).exists() {
            panic!(
                "rsiw-provider: rdma-core v55 headers not found ({} is missing); \
                 run `cargo xtask build` (it fetches them), or set RSIW_RDMA_CORE to the directory it prepares",
                include.join(needed).display()
            );
        }
    }
    println!("cargo:rerun-if-env-changed=RSIW_RDMA_CORE");
    println!("cargo:rerun-if-env-changed=XDG_CACHE_HOME");
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=verbs44.h");
    println!(
        "cargo:rerun-if-changed={}",
        include.join("infiniband/driver.h").display()
    );
    // Link the system libibverbs (rdma-core 44): its private symbols carry the
    // version IBVERBS_PRIVATE_34, the same provider ABI as v55's headers.
    println!("cargo:rustc-link-lib=dylib=ibverbs");
    // tests/dlopen.rs interposes the registration call; executables export nothing
    // unless asked.
    println!("cargo:rustc-link-arg-tests=-Wl,--export-dynamic-symbol=verbs_register_driver_34");

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    provider_bindings(&include, &out.join("verbs55.rs"));
    let v44 = system_bindings(&out.join("verbs44.rs"));
    fs::write(out.join("layout_check.rs"), layout_check(&v44)).expect("write layout_check.rs");
}

/// `$RSIW_RDMA_CORE`, else the directory `cargo xtask setup` fills by default.
fn rdma_core_dir() -> PathBuf {
    if let Some(dir) = env::var_os("RSIW_RDMA_CORE") {
        return PathBuf::from(dir);
    }
    let cache = env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env::var_os("HOME").unwrap_or_default()).join(".cache"));
    cache.join("rsiw/rdma-core-55.0")
}

/// Bindings to what the provider calls and fills in, from rdma-core v55.
fn provider_bindings(include: &Path, out: &Path) {
    bindgen::Builder::default()
        .header("wrapper.h")
        .clang_arg(format!("-I{}", include.display()))
        .allowlist_function(
            "verbs_register_driver_34|_verbs_init_and_alloc_context|verbs_uninit_context|verbs_set_ops\
             |ibv_cmd_(get_context|query_device_any|query_port|alloc_pd|dealloc_pd)\
             |ibv_cmd_(create_cq|destroy_cq|create_qp_ex|modify_qp|query_qp|destroy_qp)\
             |ibv_cmd_(create_srq|modify_srq|query_srq|destroy_srq|reg_mr|dereg_mr)\
             |ibv_cmd_(alloc_mw|dealloc_mw)\
             |__verbs_log|calloc|free|__errno_location|mmap|munmap|ioctl|dlsym",
        )
        .allowlist_type(
            "verbs_(device_ops|match_ent|device|context|context_ops|qp|mr|qp_mask)|ibv_(get_context|query_port|alloc_pd)\
             |ibv_(create_cq|create_qp|modify_qp|query_qp|create_srq|modify_srq|query_srq|reg_mr)\
             |ib_uverbs_(get_context_resp|alloc_pd_resp|ex_query_device_resp|create_cq_resp)\
             |ib_uverbs_(create_qp_resp|create_srq_resp|reg_mr_resp|ioctl_hdr|attr)\
             |ibv_(wc|wc_opcode|wc_status|wc_flags|send_wr|recv_wr|sge|wr_opcode|send_flags|qp_ex)\
             |ibv_(qp_init_attr_ex|qp_init_attr|qp_attr|qp_attr_mask|srq_init_attr|srq_attr|qp_type)\
             |ibv_(qp_create_send_ops_flags|qp_init_attr_mask|access_flags|data_buf)|rdma_driver_id\
             |ibv_(alloc_mw|mw|mw_type|mw_bind|mw_bind_info)|ib_uverbs_alloc_mw_resp",
        )
        // Anonymous enums in driver.h: only reachable as constants.
        .allowlist_var(
            "VERBS_MATCH_.*|VERBS_LOG_.*|E(INVAL|NOMEM|PROTO|OPNOTSUPP|AGAIN)|PROT_(READ|WRITE)\
             |MAP_(SHARED|FAILED)|UVERBS_ATTR_F_MANDATORY|RDMA_IOCTL_MAGIC",
        )
        .derive_default(true)
        .layout_tests(false)
        .formatter(bindgen::Formatter::Prettyplease)
        .generate()
        .expect("bindgen over rdma-core v55 driver.h failed (see the clang errors above)")
        .write_to_file(out)
        .expect("write verbs55.rs");
}

/// Bindings of the shared structures from the system's rdma-core 44 `verbs.h`
/// (package libibverbs-dev), returned as source text.
fn system_bindings(out: &Path) -> String {
    let mut b = bindgen::Builder::default()
        .header("verbs44.h")
        .layout_tests(false);
    for s in SHARED_STRUCTS {
        b = b.allowlist_type(s);
    }
    let text = b
        .formatter(bindgen::Formatter::Prettyplease)
        .generate()
        .expect(
            "bindgen over the system's infiniband/verbs.h failed: apt-get install libibverbs-dev",
        )
        .to_string();
    fs::write(out, &text).expect("write verbs44.rs");
    text
}

/// Tests asserting that every field of each shared v44 structure sits at the same
/// offset in v55, and that sizes agree (or only grew, for [`GROWN_STRUCTS`]).
fn layout_check(v44: &str) -> String {
    let mut t = String::new();
    for s in SHARED_STRUCTS {
        let fields = struct_fields(v44, s);
        assert!(
            !fields.is_empty(),
            "no fields parsed for {s} in the system's verbs.h bindings"
        );
        let _ = writeln!(t, "#[test]\nfn {s}_v44_layout_matches_v55() {{");
        if GROWN_STRUCTS.contains(s) {
            let _ = writeln!(
                t,
                "    assert!(size_of::<v44::{s}>() < size_of::<v55::{s}>());"
            );
        } else {
            let _ = writeln!(
                t,
                "    assert_eq!(size_of::<v44::{s}>(), size_of::<v55::{s}>());"
            );
        }
        let _ = writeln!(
            t,
            "    assert_eq!(align_of::<v44::{s}>(), align_of::<v55::{s}>());"
        );
        for f in fields {
            let _ = writeln!(
                t,
                "    assert_eq!(offset_of!(v44::{s}, {f}), offset_of!(v55::{s}, {f}), \"{s}::{f}\");"
            );
        }
        t.push_str("}\n");
    }
    t
}

/// Field names of `pub struct name { .. }` in prettyplease-formatted bindgen output.
fn struct_fields(src: &str, name: &str) -> Vec<String> {
    let head = format!("pub struct {name} {{\n");
    let Some(start) = src.find(&head) else {
        return Vec::new();
    };
    let body = &src[start + head.len()..];
    let end = body.find("\n}").unwrap_or(body.len());
    body[..end]
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub "))
        .filter_map(|l| l.split_once(':'))
        .map(|(f, _)| f.trim().to_owned())
        .collect()
}
