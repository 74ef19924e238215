// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The rdma-core provider `librsiw-rdmav34.so`, built with cargo against rdma-core v55 headers.

use crate::cmd;
use crate::ctx::Ctx;
use crate::module::Part;
use crate::rdma_core;
use std::path::PathBuf;
use std::process::Command;

/// Where rdma-core's headers are, or why they are not available.
pub fn headers(ctx: &Ctx) -> Result<PathBuf, String> {
    rdma_core::ensure(&ctx.cache).map_err(|e| format!("rdma-core v55 headers unavailable: {e:#}"))
}

/// Build the provider; a failure is reported as a missing part, not an abort.
pub fn build(ctx: &Ctx) -> Part {
    let part = match headers(ctx) {
        Err(why) => Part::Missing(why),
        Ok(dir) => {
            let r = cmd::run(
                Command::new("cargo")
                    .current_dir(&ctx.root)
                    .args(["build", "--release", "-p", "rsiw-provider"])
                    .env("RSIW_RDMA_CORE", &dir),
                "fix the provider build error above",
            );
            let so = ctx.root.join("target/release/librsiw_provider.so");
            match r {
                Err(e) => Part::Missing(format!("provider did not build: {e:#}")),
                Ok(()) if !so.exists() => Part::Missing(format!(
                    "the provider build produced no {} (is rsiw-provider a cdylib yet?)",
                    "target/release/librsiw_provider.so"
                )),
                Ok(()) => Part::Built(so),
            }
        }
    };
    if let Some(why) = part.reason() {
        eprintln!("build: {why}");
    }
    part
}

/// Build `rsiw-verbs-test` (the userspace verbs conformance program) for the image.
pub fn build_verbs_test(ctx: &Ctx) -> Part {
    let r = cmd::run(
        Command::new("cargo").current_dir(&ctx.root).args([
            "build",
            "--release",
            "-p",
            "rsiw-userspace-tests",
        ]),
        "fix the rsiw-verbs-test build error above",
    );
    let bin = ctx.root.join("target/release/rsiw-verbs-test");
    let part = match r {
        Err(e) => Part::Missing(format!("rsiw-verbs-test did not build: {e:#}")),
        Ok(()) => Part::Built(bin),
    };
    if let Some(why) = part.reason() {
        eprintln!("build: {why}");
    }
    part
}
