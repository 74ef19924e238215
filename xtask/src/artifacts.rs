// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! `cargo xtask build`: everything a VM run needs, in dependency order.

use crate::ctx::Ctx;
use crate::image::{self, Parts};
use crate::kernel::{self, Kernel};
use crate::lock::{self, Lock};
use crate::{module, provider};
use anyhow::Result;
use std::path::PathBuf;

/// The products of one build.
pub struct Artifacts {
    /// The cached kernel.
    pub kernel: Kernel,
    /// The modules and provider that went into the image (or why not).
    pub parts: Parts,
    /// The base initramfs (`target/vm/<flavour>/initramfs.cpio`).
    pub initramfs: PathBuf,
    /// Held from after the kernel build (which needs no lock) until the caller's VM
    /// runs end, so no other xtask rewrites `target/vm/` meanwhile.
    pub _lock: Lock,
}

/// Build the kernel (cached), rsiw.ko, the provider, the test modules and the image.
pub fn build(ctx: &Ctx) -> Result<Artifacts> {
    // The user-space parts need no kernel: they build beside it. A cold kernel build
    // keeps both CPUs busy but for its serial steps (the Rust crates, the links), which
    // these fill; with the kernel cached this is the order it always was.
    let (kernel, (provider, verbs_test, nfs)) = std::thread::scope(|s| {
        let kernel = s.spawn(|| {
            let _building = lock::kernel(ctx)?;
            kernel::ensure(ctx)
        });
        let user = (
            provider::build(ctx),
            provider::build_verbs_test(ctx),
            crate::nfs::ensure(ctx),
        );
        let kernel = kernel
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the kernel build's thread panicked")));
        (kernel, user)
    });
    let kernel = kernel?;
    let lock = lock::vm(ctx)?;
    std::fs::create_dir_all(ctx.out_dir())?;
    eprintln!(
        "build: kernel {} ({})",
        kernel.release,
        kernel.kdir.display()
    );
    let rsiw_ko = module::build_rsiw(ctx, &kernel);
    let test_kmods = module::build_test_kmods(ctx, &kernel)?;
    let parts = Parts {
        rsiw_ko,
        provider,
        verbs_test,
        test_kmods,
        nfs,
    };
    let initramfs = image::build(ctx, &kernel, &parts)?;
    Ok(Artifacts {
        kernel,
        parts,
        initramfs,
        _lock: lock,
    })
}
