// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The cached test kernel: built (or found) by `scripts/build-kernel.sh FLAVOUR`.

use crate::cmd;
use crate::ctx::Ctx;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::Command;

/// A finished kernel build in the cache.
pub struct Kernel {
    /// The Kbuild tree (`KDIR` for out-of-tree modules).
    pub kdir: PathBuf,
    /// The image QEMU boots.
    pub bzimage: PathBuf,
    /// `modroot/lib/modules/<release>`: the installed in-tree modules.
    pub modules: PathBuf,
    /// `uname -r` of this kernel.
    pub release: String,
}

/// Build the kernel for `ctx.flavour` unless the cache already holds it (then this is instant).
pub fn ensure(ctx: &Ctx) -> Result<Kernel> {
    let script = ctx.root.join("scripts/build-kernel.sh");
    let out = cmd::stdout(
        Command::new("bash")
            .arg(&script)
            .arg(ctx.flavour.name())
            .env("RSIW_CACHE", &ctx.cache),
        "read the build log it names; `cargo xtask setup` installs the kernel toolchain",
    )?;
    let dir = PathBuf::from(
        out.lines()
            .last()
            .context("build-kernel.sh printed no directory")?
            .trim(),
    );
    let kdir = dir.join("linux");
    let release_file = kdir.join("include/config/kernel.release");
    let release = std::fs::read_to_string(&release_file)
        .with_context(|| {
            format!(
                "reading {}: the kernel build looks incomplete; remove {} and rebuild",
                release_file.display(),
                dir.display()
            )
        })?
        .trim()
        .to_string();
    Ok(Kernel {
        bzimage: kdir.join("arch/x86/boot/bzImage"),
        modules: dir.join("modroot/lib/modules").join(&release),
        kdir,
        release,
    })
}
