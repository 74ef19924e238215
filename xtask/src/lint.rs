// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The module's lint case: `rsiw.ko` built with the kernel's `CLIPPY=1` (clippy-driver as
//! the Rust compiler, the kernel's lint set) must print no warning. It builds in a copy
//! of the module's sources under the out dir, from scratch each time, so the case sees
//! every warning whatever the incremental state of the real build.

use crate::ctx::Ctx;
use crate::hosttests::Tally;
use crate::kernel::Kernel;
use crate::module::llvm;
use anyhow::{Context, Result};
use std::process::Stdio;

/// Build the module with clippy and count each warning as a failure. `background`:
/// the build runs under `SCHED_IDLE` (`chrt --idle 0`), so that it takes only CPU time
/// the VMs it runs beside leave unused (where `chrt` cannot start, at normal priority).
pub fn clippy(ctx: &Ctx, k: &Kernel, background: bool) -> Tally {
    let mut t = Tally::default();
    match build(ctx, k, background) {
        Ok(warnings) if warnings.is_empty() => t.passed += 1,
        Ok(warnings) => t
            .failed
            .extend(warnings.into_iter().map(|w| format!("module: clippy: {w}"))),
        Err(e) => t
            .failed
            .push(format!("module: clippy could not run: {e:#}")),
    }
    t
}

fn build(ctx: &Ctx, k: &Kernel, background: bool) -> Result<Vec<String>> {
    let dir = ctx.out_dir().join("clippy");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    crate::module::copy_sources(&ctx.root, &dir)?;
    // Generated bindings are not sources: never copy a stale one.
    let _ = std::fs::remove_file(dir.join("rust/kapi/bindings_generated.rs"));
    let mut cmd = crate::cmd::maybe_idle("make", background);
    cmd.current_dir(&dir)
        .arg(format!("KDIR={}", k.kdir.display()))
        .arg(format!("LLVM={}", llvm()))
        .arg("CLIPPY=1")
        .stdin(Stdio::null());
    eprintln!("test: {}", crate::cmd::describe(&cmd));
    let out = cmd
        .output()
        .context("could not start make; `cargo xtask setup` installs the toolchain")?;
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        eprintln!("{text}");
        anyhow::bail!(
            "`make CLIPPY=1` failed ({}); is clippy installed (`rustup component add clippy`)?",
            out.status
        );
    }
    let w = warnings(&text);
    if !w.is_empty() {
        eprintln!("{text}");
    }
    Ok(w)
}

/// One line per warning: its message and the place rustc names after it.
fn warnings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.next() {
        let Some(msg) = l.strip_prefix("warning: ") else {
            continue;
        };
        // rustc's summary line ("N warnings emitted") is not a warning of its own.
        if msg.ends_with("warning emitted") || msg.ends_with("warnings emitted") {
            continue;
        }
        let at = lines
            .peek()
            .and_then(|n| n.trim_start().strip_prefix("--> "))
            .map(|p| p.rsplit("/rust/").next().unwrap_or(p).to_string());
        out.push(match at {
            Some(p) => format!("{msg} (rust/{p})"),
            None => msg.to_string(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_named_with_their_place() {
        let text = "  RUSTC [M] /x/rust/rsiw.o\nwarning: large size difference between variants\n   --> /x/y/rust/engine/tx.rs:179:1\n    |\nwarning: 1 warning emitted\n";
        assert_eq!(
            warnings(text),
            vec!["large size difference between variants (rust/engine/tx.rs:179:1)".to_string()]
        );
        assert!(warnings("warning: 2 warnings emitted\n").is_empty());
    }
}
