// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Out-of-tree kernel modules: `rsiw.ko` (repo root Makefile) and the test-only modules.

use crate::cmd;
use crate::ctx::Ctx;
use crate::kernel::Kernel;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The compiler suffix the test kernel was built with; every `M=` build must match it.
pub fn llvm() -> String {
    std::env::var("RSIW_LLVM").unwrap_or_else(|_| "-14".into())
}

/// `make` for an out-of-tree build against `k`, run where `k`'s toolchain is: on the
/// host with `LLVM=` for 6.12 (clang 14), in the trixie root for 7.3 (clang 19) and
/// Debian's kernel (gcc 14) with the compiler the tree's `.config` names (the root
/// Makefile finds it itself; the test modules get it as `LLVM=` or `CC=`).
fn make(ctx: &Ctx, k: &Kernel, own_makefile: bool) -> Result<Command> {
    if !k.line.in_debian_root() {
        let mut c = Command::new("make");
        c.arg(format!("LLVM={}", llvm()));
        return Ok(c);
    }
    let mut c = Command::new(ctx.root.join("scripts/in-debian-root.sh"));
    c.env("RSIW_CACHE", &ctx.cache).arg("make");
    if !own_makefile {
        c.arg(kernel_compiler(k)?);
    }
    Ok(c)
}

/// The compiler of `k`'s `.config` as a make argument: `LLVM=-NN` for a clang-built
/// tree (`CONFIG_CLANG_VERSION`), `CC=<CONFIG_CC_VERSION_TEXT's first word>` for gcc.
fn kernel_compiler(k: &Kernel) -> Result<String> {
    let config = std::fs::read_to_string(k.kdir.join(".config"))
        .with_context(|| format!("reading {}/.config", k.kdir.display()))?;
    let value = |name: &str| {
        config
            .lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
    };
    if value("CONFIG_CC_IS_CLANG") == Some("y") {
        let version: u32 = value("CONFIG_CLANG_VERSION")
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("{}/.config names no clang version", k.kdir.display()))?;
        return Ok(format!("LLVM=-{}", version / 10000));
    }
    value("CONFIG_CC_VERSION_TEXT")
        .and_then(|t| t.trim_matches('"').split_whitespace().next())
        .map(|cc| format!("CC={cc}"))
        .with_context(|| format!("{}/.config names no compiler", k.kdir.display()))
}

/// A build product that may be absent, with the reason (tests report it instead of passing).
pub enum Part {
    /// Built; the path of the artifact.
    Built(PathBuf),
    /// Its sources are not in the repository yet (not an error), and what is missing.
    Absent(String),
    /// Not available because a step failed, and why.
    Missing(String),
}

impl Part {
    /// Why the artifact is unavailable, if it is.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Part::Built(_) => None,
            Part::Absent(w) | Part::Missing(w) => Some(w),
        }
    }
}

/// Build `rsiw.ko` with `make KDIR=… ` at the repo root and copy it to the flavour's out dir.
pub fn build_rsiw(ctx: &Ctx, k: &Kernel) -> Part {
    if !ctx.root.join("Makefile").exists() {
        let why = "rsiw.ko not built: there is no Makefile at the repository root yet".to_string();
        eprintln!("build: {why}");
        return Part::Absent(why);
    }
    // The root build is shared by 6.12's flavours; Kbuild notices a new KDIR itself
    // (every command line names the tree, and the bindings rule uses if_changed).
    // Another kernel's build is made in a copy of the sources (`<out>/module`), so
    // that one checkout builds for both without each undoing the other's objects.
    let dir = if k.line.in_debian_root() {
        ctx.out_dir().join("module")
    } else {
        ctx.root.clone()
    };
    let r = (if dir != ctx.root {
        copy_sources(&ctx.root, &dir)
    } else {
        Ok(())
    })
    .and_then(|()| make(ctx, k, true))
    .and_then(|mut c| {
        cmd::run(
            c.current_dir(&dir)
                .arg(format!("KDIR={}", k.kdir.display())),
            "fix the compile error above; `cargo xtask setup` installs the toolchain",
        )
    })
    .and_then(|()| copy_out(&dir.join("rsiw.ko"), &ctx.out_dir()))
    .and_then(|p| crate::frames::check(&p, &llvm()).map(|()| p));
    match r {
        Ok(p) => Part::Built(p),
        Err(e) => {
            eprintln!("build: rsiw.ko: {e:#}");
            Part::Missing(format!("rsiw.ko did not build: {e:#}"))
        }
    }
}

/// Build every test module `userspace-tests/kmod/<name>/` (a Kbuild and C files) in a
/// copy under the out dir, so the source tree stays free of Kbuild outputs.
pub fn build_test_kmods(ctx: &Ctx, k: &Kernel) -> Result<Vec<PathBuf>> {
    let src_root = ctx.root.join("userspace-tests/kmod");
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(&src_root) else {
        return Ok(out);
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("Kbuild").exists())
        .collect();
    dirs.sort();
    for src in dirs {
        let name = src.file_name().context("kmod dir has no name")?.to_owned();
        let build = ctx.out_dir().join("kmod").join(&name);
        std::fs::create_dir_all(&build).with_context(|| format!("creating {}", build.display()))?;
        for f in std::fs::read_dir(&src).with_context(|| format!("reading {}", src.display()))? {
            let f = f?.path();
            if f.is_file() {
                let dst = build.join(f.file_name().context("no file name")?);
                // Copy only on change so make's timestamps keep the rebuild incremental.
                if std::fs::read(&f).ok() != std::fs::read(&dst).ok() {
                    std::fs::copy(&f, &dst).with_context(|| format!("copying {}", f.display()))?;
                }
            }
        }
        cmd::run(
            make(ctx, k, false)?
                .arg("-C")
                .arg(&k.kdir)
                .arg(format!("M={}", build.display()))
                .arg("modules"),
            "a test module must build with its kernel's compiler",
        )?;
        for f in std::fs::read_dir(&build)? {
            let f = f?.path();
            if f.extension().is_some_and(|e| e == "ko") {
                out.push(f);
            }
        }
    }
    Ok(out)
}

/// What a build of the module needs: the Kbuild files, the build scripts and the
/// module's sources.
const SOURCES: [&str; 4] = ["Kbuild", "Makefile", "scripts", "rust"];

/// Copies the module's sources from `root` to `dst`, each file only when it changed
/// (make's timestamps keep a build there incremental).
pub fn copy_sources(root: &Path, dst: &Path) -> Result<()> {
    std::fs::create_dir_all(dst).with_context(|| format!("creating {}", dst.display()))?;
    for s in SOURCES {
        copy_tree(&root.join(s), &dst.join(s))?;
    }
    Ok(())
}

/// Copies the sources under `src` to `dst` (each file only when it changed) and
/// removes from `dst` what the source tree no longer has: a source file moved or
/// deleted upstream (a stale `queue.rs` beside a new `queue/mod.rs` breaks the
/// build), a folder gone with everything built in it.
pub fn copy_tree(src: &Path, dst: &Path) -> Result<()> {
    if src.is_dir() {
        if src.file_name().is_some_and(|n| n == "target") {
            return Ok(());
        }
        std::fs::create_dir_all(dst).with_context(|| format!("creating {}", dst.display()))?;
        for e in std::fs::read_dir(src).with_context(|| format!("reading {}", src.display()))? {
            let e = e?;
            copy_tree(&e.path(), &dst.join(e.file_name()))?;
        }
        prune(src, dst)?;
    } else if is_source(src) && std::fs::read(src).ok() != std::fs::read(dst).ok() {
        std::fs::copy(src, dst).with_context(|| format!("copying {}", src.display()))?;
    }
    Ok(())
}

/// A file `copy_tree` copies. Generated bindings are not sources: never copy a
/// stale one.
fn is_source(p: &Path) -> bool {
    let named = |n: &str| p.file_name().is_some_and(|f| f == n);
    (p.extension()
        .is_some_and(|x| x == "rs" || x == "c" || x == "h" || x == "sh" || x == "toml")
        || named("Kbuild")
        || named("Makefile"))
        && !named("bindings_generated.rs")
}

/// Removes the entries of `dst` whose counterpart in `src` is gone: folders
/// whole, files only if they are sources (what the build made beside them stays).
fn prune(src: &Path, dst: &Path) -> Result<()> {
    for e in std::fs::read_dir(dst).with_context(|| format!("reading {}", dst.display()))? {
        let d = e?.path();
        let Some(name) = d.file_name() else { continue };
        if src.join(name).exists() {
            continue;
        }
        if d.is_dir() {
            std::fs::remove_dir_all(&d).with_context(|| format!("removing {}", d.display()))?;
        } else if is_source(&d) {
            std::fs::remove_file(&d).with_context(|| format!("removing {}", d.display()))?;
        }
    }
    Ok(())
}

fn copy_out(file: &Path, dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dst = dir.join(file.file_name().context("no file name")?);
    std::fs::copy(file, &dst)
        .with_context(|| format!("copying {} (did the build produce it?)", file.display()))?;
    Ok(dst)
}
