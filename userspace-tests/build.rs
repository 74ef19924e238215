// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Generates libibverbs/librdmacm bindings and compiles the C shim for verbs.h's inline verbs.

fn main() {
    println!("cargo:rerun-if-changed=lib/wrapper.h");
    println!("cargo:rerun-if-changed=lib/shim.c");
    cc::Build::new()
        .file("lib/shim.c")
        .warnings(true)
        .compile("rsiw_verbs_shim");
    println!("cargo:rustc-link-lib=ibverbs");
    println!("cargo:rustc-link-lib=rdmacm");
    let b = bindgen::Builder::default()
        .header("lib/wrapper.h")
        .allowlist_function("ibv_.*|rdma_.*|rsiw_shim_.*")
        .allowlist_type("ibv_.*|rdma_.*")
        .allowlist_var("IBV_.*|RDMA_.*")
        .derive_default(true)
        .layout_tests(false)
        .generate()
        .expect("bindgen on infiniband/verbs.h and rdma/rdma_cma.h (install libibverbs-dev, librdmacm-dev, libclang)");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    b.write_to_file(out.join("verbs.rs"))
        .expect("writing bindings");
}
