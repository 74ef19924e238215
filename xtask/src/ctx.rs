// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Where things live: the repository, the cache directory and the kernel flavour.

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

/// Paths shared by every step of one xtask invocation.
pub struct Ctx {
    /// The repository root.
    pub root: PathBuf,
    /// `${RSIW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rsiw}`, as in `scripts/build-kernel.sh`.
    pub cache: PathBuf,
    /// The kernel flavour this invocation builds and boots.
    pub flavour: Flavour,
}

impl Ctx {
    /// Build the context for `flavour`.
    pub fn new(flavour: Flavour) -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        Ctx {
            root,
            cache: cache_dir(),
            flavour,
        }
    }

    /// `target/vm/<flavour>/`: build products that depend on the kernel flavour.
    pub fn out_dir(&self) -> PathBuf {
        self.root.join("target/vm").join(self.flavour.name())
    }

    /// `target/vm/<name>/`: the logs of one VM run.
    pub fn run_dir(&self, name: &str) -> PathBuf {
        self.root.join("target/vm").join(name)
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
