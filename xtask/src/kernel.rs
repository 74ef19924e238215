// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The cached kernel of `ctx.kernel`: built (or found) by `scripts/build-kernel.sh
//! [--line 7.3] FLAVOUR` (6.12, 7.3) or made ready by `scripts/build-debian-kernel.sh`
//! (Debian's own 7.3).

use crate::cmd;
use crate::ctx::{Ctx, KernelLine};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

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
    /// Which kernel this is.
    pub line: KernelLine,
}

/// Build the kernel for `ctx` unless the cache already holds it (then this is instant).
pub fn ensure(ctx: &Ctx) -> Result<Kernel> {
    ensure_idle(ctx, false)
}

/// [`ensure`], with `idle`: the build runs under `SCHED_IDLE` (beside a VM suite),
/// holding the kernel cache's lock of `ctx`'s kernel.
pub fn ensure_idle(ctx: &Ctx, idle: bool) -> Result<Kernel> {
    let _building = if idle {
        Some(crate::lock::kernel(ctx)?)
    } else {
        None
    };
    let flavour = ctx.flavour.name();
    let (script, args): (&str, Vec<&str>) = match ctx.kernel {
        KernelLine::L6_12 => ("scripts/build-kernel.sh", vec![flavour]),
        KernelLine::L7_3 => ("scripts/build-kernel.sh", vec!["--line", "7.3", flavour]),
        KernelLine::Debian7_3 => ("scripts/build-debian-kernel.sh", vec![]),
    };
    let out = cmd::stdout(
        cmd::maybe_idle("bash", idle)
            .arg(ctx.root.join(script))
            .args(args)
            .env("RSIW_CACHE", &ctx.cache),
        "read the build log it names; `cargo xtask setup` installs the kernel toolchain",
    )?;
    let dir = PathBuf::from(
        out.lines()
            .last()
            .with_context(|| format!("{script} printed no directory"))?
            .trim(),
    );
    let kdir = dir.join("linux");
    let release = release(&kdir, &dir)?;
    Ok(Kernel {
        bzimage: match ctx.kernel {
            KernelLine::L6_12 | KernelLine::L7_3 => kdir.join("arch/x86/boot/bzImage"),
            KernelLine::Debian7_3 => dir.join("vmlinuz"),
        },
        modules: dir.join("modroot/lib/modules").join(&release),
        kdir,
        release,
        line: ctx.kernel,
    })
}

impl Kernel {
    /// Whether the kernel has the module `name`, built in or in its modules tree.
    pub fn has_module(&self, name: &str) -> bool {
        let ko = format!("{name}.ko");
        let builtin =
            std::fs::read_to_string(self.modules.join("modules.builtin")).unwrap_or_default();
        builtin.lines().any(|l| l.rsplit('/').next() == Some(&ko)) || find(&self.modules, &ko)
    }
}

/// Whether a file named `name` is somewhere below `dir`.
fn find(dir: &Path, name: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            find(&p, name)
        } else {
            e.file_name() == name
        }
    })
}

/// `include/config/kernel.release` of the tree `kdir` in the cache directory `dir`.
fn release(kdir: &Path, dir: &Path) -> Result<String> {
    let file = kdir.join("include/config/kernel.release");
    Ok(std::fs::read_to_string(&file)
        .with_context(|| {
            format!(
                "reading {}: the kernel build looks incomplete; remove {} and rebuild",
                file.display(),
                dir.display()
            )
        })?
        .trim()
        .to_string())
}
