// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! One building/booting xtask at a time per checkout: runs share `target/vm/`.

use crate::ctx::Ctx;
use anyhow::{Context, Result};
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};

/// Held while this process builds images or boots VMs; released on drop.
pub struct VmLock {
    _file: File,
}

/// Take `target/vm/.lock`, waiting (and saying so) while another xtask holds it.
pub fn acquire(ctx: &Ctx) -> Result<VmLock> {
    let dir = ctx.root.join("target/vm");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(".lock");
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
                "xtask: waiting for another cargo xtask ({}) to finish with target/vm/",
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
    Ok(VmLock { _file: file })
}
