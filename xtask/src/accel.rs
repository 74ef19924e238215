// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Choosing TCG or KVM: KVM only after a short probe boot proved it works on this host.

use crate::cpio::{Entry, Tree};
use crate::ctx::Ctx;
use crate::vm::{self, Accel, Echo, Vm};
use anyhow::{Context, Result};
use std::path::Path;
use std::time::Duration;

const SENTINEL: &str = "RSIW-KVM-PROBE ok";

/// `RSIW_ACCEL=tcg|kvm` forces the choice; otherwise KVM is used only if `/dev/kvm`
/// opens and a probe boot of `bzimage` printed its sentinel within 10 s. The
/// verdict is cached per kernel image and host kernel (`<cache>/accel-probe`).
pub fn choose(ctx: &Ctx, bzimage: &Path) -> Result<Accel> {
    match std::env::var("RSIW_ACCEL").as_deref() {
        Ok("tcg") => return Ok(Accel::Tcg),
        Ok("kvm") => return Ok(Accel::Kvm),
        _ => {}
    }
    let kvm_opens = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    if !kvm_opens {
        return Ok(Accel::Tcg);
    }
    let mtime = std::fs::metadata(bzimage)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let host = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let key = format!("{} {mtime} {}", bzimage.display(), host.trim());
    let cache_file = ctx.cache.join("accel-probe");
    if let Ok(c) = std::fs::read_to_string(&cache_file) {
        if let Some(v) = c.strip_prefix(&format!("{key}\n")) {
            return Ok(if v.trim() == "kvm" {
                Accel::Kvm
            } else {
                Accel::Tcg
            });
        }
    }
    let ok = probe(ctx, bzimage).unwrap_or(false);
    let verdict = if ok { "kvm" } else { "tcg" };
    eprintln!(
        "accel: KVM probe {} -> using {verdict}",
        if ok {
            "booted"
        } else {
            "failed (guest hung or errored)"
        }
    );
    std::fs::create_dir_all(&ctx.cache)?;
    std::fs::write(&cache_file, format!("{key}\n{verdict}\n"))
        .with_context(|| format!("writing {}", cache_file.display()))?;
    Ok(if ok { Accel::Kvm } else { Accel::Tcg })
}

fn probe(ctx: &Ctx, bzimage: &Path) -> Result<bool> {
    let dir = ctx.root.join("target/vm/kvm-probe");
    std::fs::create_dir_all(&dir)?;
    let mut t = Tree::default();
    t.insert("bin/busybox", Entry::File("/bin/busybox".into(), 0o755));
    t.insert("bin/sh", Entry::Symlink("busybox".into()));
    let init = format!("#!/bin/sh\necho {SENTINEL}\n/bin/busybox reboot -f\n");
    t.insert("init", Entry::Data(init.into_bytes(), 0o755));
    let initrd = dir.join("initrd.cpio");
    std::fs::write(&initrd, t.to_cpio()?)?;
    let runs = vm::run_all(&[Vm {
        name: "kvm-probe".into(),
        bzimage: bzimage.to_path_buf(),
        initrd,
        log_dir: dir,
        timeout: Duration::from_secs(10),
        boot_timeout: None,
        accel: Accel::Kvm,
        index: 0,
        socket: None,
        echo: Echo::Silent,
        extra_cmdline: String::new(),
    }])?;
    Ok(runs
        .iter()
        .all(|r| !r.timed_out && r.console.contains(SENTINEL)))
}
