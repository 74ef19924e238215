// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Where things live: the repository, the cache directory, the kernel line and its flavour.

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// Which test kernel to build and boot (fragments `qemu/kernel/<name>.config`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// KASAN, lockdep, kmemleak: what every VM test runs under by default.
    Debug,
    /// No debug options, for benchmarks.
    Perf,
}

impl Flavour {
    /// Parse a `--flavour` argument.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "debug" => Ok(Flavour::Debug),
            "perf" => Ok(Flavour::Perf),
            _ => bail!("unknown flavour `{s}`: use `debug` or `perf`"),
        }
    }

    /// The name used in file names and by `scripts/build-kernel.sh`.
    pub fn name(self) -> &'static str {
        match self {
            Flavour::Debug => "debug",
            Flavour::Perf => "perf",
        }
    }
}

/// Which kernel rsiw is built for and booted on (`--kernel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelLine {
    /// Debian 12's `linux-source-6.12`, built by `scripts/build-kernel.sh` with the
    /// host's clang 14 and the fragments of `qemu/kernel/` (flavours debug and perf).
    L6_12,
    /// Debian 13's `linux-source-7.3` (trixie-backports), built by
    /// `scripts/build-kernel.sh --line 7.3` in the trixie root with Debian's rustc,
    /// bindgen and clang 19 and the same fragments (flavours debug and perf).
    L7_3,
    /// Debian 13's own backports kernel, `linux-image-7.3.4+deb13-amd64`, as Debian
    /// ships it (its own configuration and modules; no siw), with rsiw built against
    /// a tree made like its headers by `scripts/build-debian-kernel.sh`. No flavours.
    Debian7_3,
}

impl KernelLine {
    /// Parse a `--kernel` argument.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "6.12" => Ok(KernelLine::L6_12),
            "7.3" => Ok(KernelLine::L7_3),
            "debian-7.3" => Ok(KernelLine::Debian7_3),
            _ => bail!("unknown kernel `{s}`: use `6.12`, `7.3` or `debian-7.3`"),
        }
    }

    /// The name used on the command line, in file names and in the VM's environment.
    pub fn name(self) -> &'static str {
        match self {
            KernelLine::L6_12 => "6.12",
            KernelLine::L7_3 => "7.3",
            KernelLine::Debian7_3 => "debian-7.3",
        }
    }

    /// Its build tools run in the trixie root of `scripts/debian-root.sh`
    /// (`scripts/in-debian-root.sh`), not on the host.
    pub fn in_debian_root(self) -> bool {
        matches!(self, KernelLine::L7_3 | KernelLine::Debian7_3)
    }

    /// The kernel has its own configuration: `--flavour` does not apply.
    pub fn has_flavours(self) -> bool {
        matches!(self, KernelLine::L6_12 | KernelLine::L7_3)
    }
}

/// Paths shared by every step of one xtask invocation.
pub struct Ctx {
    /// The repository root.
    pub root: PathBuf,
    /// `${RSIW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rsiw}`, as in `scripts/build-kernel.sh`.
    pub cache: PathBuf,
    /// The kernel flavour this invocation builds and boots.
    pub flavour: Flavour,
    /// The kernel line this invocation builds for and boots.
    pub kernel: KernelLine,
}

impl Ctx {
    /// Build the context for `flavour` of `kernel`.
    pub fn new(kernel: KernelLine, flavour: Flavour) -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        Ctx {
            root,
            cache: cache_dir(),
            flavour,
            kernel,
        }
    }

    /// `target/vm/<flavour>/` (6.12), `target/vm/7.3-<flavour>/` or
    /// `target/vm/<kernel>/`: build products that depend on the kernel.
    pub fn out_dir(&self) -> PathBuf {
        self.root.join("target/vm").join(self.kernel_tag())
    }

    /// The flavour for 6.12 (`debug`, `perf`), line and flavour for 7.3 (`7.3-debug`),
    /// the kernel's name otherwise: what names this kernel's build products and runs.
    pub fn kernel_tag(&self) -> &'static str {
        match (self.kernel, self.flavour) {
            (KernelLine::L6_12, f) => f.name(),
            (KernelLine::L7_3, Flavour::Debug) => "7.3-debug",
            (KernelLine::L7_3, Flavour::Perf) => "7.3-perf",
            (k, _) => k.name(),
        }
    }

    /// `target/vm/<name>/` (6.12) or `target/vm/<kernel tag>/runs/<name>/`: the logs
    /// of one VM run.
    pub fn run_dir(&self, name: &str) -> PathBuf {
        if self.kernel == KernelLine::L6_12 {
            self.root.join("target/vm").join(name)
        } else {
            self.out_dir().join("runs").join(name)
        }
    }
}

fn cache_dir() -> PathBuf {
    if let Some(c) = std::env::var_os("RSIW_CACHE").filter(|v| !v.is_empty()) {
        return PathBuf::from(c);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| ".".into())).join(".cache")
        });
    base.join("rsiw")
}
