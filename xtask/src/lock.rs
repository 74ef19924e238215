// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Exclusive file locks: one xtask at a time builds the kernel in a cache, and one
//! builds images/boots VMs in a checkout (runs share `target/vm/`).

use crate::ctx::Ctx;
use anyhow::{Context, Result};
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};

/// A held lock; released on drop.
pub struct Lock {
    _file: File,
}

/// Take `target/vm/.lock` (images, modules' copies, VM logs of this checkout).
pub fn vm(ctx: &Ctx) -> Result<Lock> {
    acquire(&ctx.root.join("target/vm"), ".lock", "target/vm/")
}

/// Take `<cache>/kernel/.lock-<flavour or kernel>` (kernel builds, which the
/// `scripts/build-*kernel.sh` do not lock themselves; each builds independently).
pub fn kernel(ctx: &Ctx) -> Result<Lock> {
    let name = format!(".lock-{}", ctx.kernel_tag());
    acquire(&ctx.cache.join("kernel"), &name, "the kernel cache")
}

/// Lock `dir/name`, waiting (and saying for whom) while another xtask holds it.
fn acquire(dir: &std::path::Path, name: &str, what: &str) -> Result<Lock> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(name);
    let mut file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            eprintln!(
                "xtask: waiting for another cargo xtask ({}) to finish with {what}",
                holder.trim()
            );
            file.lock()
                .with_context(|| format!("locking {}", path.display()))?;
        }
        Err(TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("locking {}", path.display()))
        }
    }
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    write!(
        file,
        "pid {}: cargo xtask {}",
        std::process::id(),
        args.join(" ")
    )?;
    Ok(Lock { _file: file })
}
