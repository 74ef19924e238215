// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Booting a unit of the suite: its scripts and environment on an overlay of the base
//! image, on one VM or a pair joined by a socket network; a VM that dies before /init
//! is booted again once.

use super::{print_splats, Script, Unit};
use crate::ctx::{Ctx, Flavour};
use crate::image;
use crate::vm::{self, Accel, Echo, Run, SocketNic, Vm};
use anyhow::{Context, Result};
use std::path::Path;
use std::time::Duration;

/// What every VM of a run boots.
pub struct Boot<'a> {
    /// Paths and flavour.
    pub ctx: &'a Ctx,
    /// The kernel image.
    pub bzimage: &'a Path,
    /// The base initramfs.
    pub initramfs: &'a Path,
    /// TCG or KVM.
    pub accel: Accel,
}

/// A VM that has not run /init by then has failed to boot (normal: ~6 s under TCG).
pub const BOOT_TIMEOUT: Duration = Duration::from_secs(90);

/// Boot `s` on its VM(s) and return the console logs, one per VM.
pub fn boot(b: &Boot, s: &Script, echo: Echo) -> Result<Vec<Run>> {
    boot_unit(b, &Unit::one(s), echo)
}

/// Boot `u` on its VM(s) and return the console logs, one per VM. If a VM dies
/// before /init runs — before any test code or module of ours ran, so it cannot be
/// the code under test — the boot is retried once; the failed attempt's log is kept
/// as `console.attempt1.log` and its splat is printed.
pub fn boot_unit(b: &Boot, u: &Unit, echo: Echo) -> Result<Vec<Run>> {
    let runs = boot_once(b, u, echo)?;
    if runs.iter().all(|r| r.booted) {
        return Ok(runs);
    }
    for r in runs.iter().filter(|r| !r.booted) {
        let kept = r.log.with_file_name("console.attempt1.log");
        std::fs::rename(&r.log, &kept).with_context(|| format!("keeping {}", r.log.display()))?;
        eprintln!(
            "test: vm: {}: the VM died before /init (log kept: {}); retrying the boot once",
            u.name,
            vm::show(&b.ctx.root, &kept)
        );
        print_splats(&b.ctx.root, &r.console, &kept);
    }
    boot_once(b, u, echo)
}

fn boot_once(b: &Boot, u: &Unit, echo: Echo) -> Result<Vec<Run>> {
    let texts = u
        .scripts
        .iter()
        .map(|s| std::fs::read(&s.path).with_context(|| format!("reading {}", s.path.display())))
        .collect::<Result<Vec<_>>>()?;
    let scripts: Vec<image::RunScript> = u
        .scripts
        .iter()
        .zip(&texts)
        .map(|(s, text)| image::RunScript {
            text,
            env: format!(
                "RSIW_TEST={}\nRSIW_TIMEOUT={}\nRSIW_REQUIRES={}\n",
                image::shell_quote(&s.name),
                s.timeout,
                image::shell_quote(&s.requires.join(" "))
            ),
        })
        .collect();
    let vms_wanted = u.vms();
    let port = if vms_wanted > 1 {
        Some(vm::free_udp_ports()?)
    } else {
        None
    };
    let extra = image::part(b.ctx, &u.scripts[0].image)?;
    let mut vms = Vec::new();
    for i in 0..vms_wanted {
        let log_dir = if vms_wanted > 1 {
            b.ctx.run_dir(&u.name).join(format!("vm{i}"))
        } else {
            b.ctx.run_dir(&u.name)
        };
        std::fs::create_dir_all(&log_dir)
            .with_context(|| format!("creating {}", log_dir.display()))?;
        let initrd = log_dir.join("initrd.img");
        let mut env = format!(
            "RSIW_RUN={}\nRSIW_VM_INDEX={i}\nRSIW_VM_COUNT={vms_wanted}\n",
            image::shell_quote(&u.name),
        );
        // Passed on from the host when set: the device type the rsiw data-path scripts
        // test (`siw` proves them on the reference driver; unset means rsiw), the NFS
        // scripts' data size per file (`cargo xtask nfs-soak`), the soak's length
        // (`cargo xtask soak`), the memory-pressure phases' length, the rmmod rounds and
        // the kill/delete/rmmod rounds (`cargo xtask soak faults`).
        for var in [
            "RSIW_DEV_TYPE",
            "RSIW_NFS_MB",
            "RSIW_SOAK_MIN",
            "RSIW_NOMEM_S",
            "RSIW_RMMOD_LOOPS",
            "RSIW_KILL_ROUNDS",
        ] {
            if let Ok(t) = std::env::var(var) {
                env += &format!("{var}={}\n", image::shell_quote(&t));
            }
        }
        image::with_overlay(b.initramfs, extra.as_deref(), &scripts, &env, &initrd)?;
        vms.push(Vm {
            name: format!("vm{i}"),
            bzimage: b.bzimage.to_path_buf(),
            initrd,
            log_dir,
            timeout: Duration::from_secs(u.timeout()),
            boot_timeout: Some(BOOT_TIMEOUT),
            accel: b.accel,
            index: i,
            socket: port.map(|(a, b)| {
                if i == 0 {
                    SocketNic {
                        local: a,
                        remote: b,
                    }
                } else {
                    SocketNic {
                        local: b,
                        remote: a,
                    }
                }
            }),
            echo,
            extra_cmdline: match b.ctx.flavour {
                Flavour::Debug if b.ctx.kernel.has_flavours() => vm::DEBUG_CMDLINE.to_string(),
                _ => String::new(),
            },
        });
    }
    vm::run_all(&vms)
}
