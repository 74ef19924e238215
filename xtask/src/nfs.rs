// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! NFS userspace for the VM image: Debian's rpcbind, nfs-common and nfs-kernel-server,
//! unpacked into the cache (`apt-get download` + `dpkg-deb -x`), never installed on the
//! host: installing nfs-kernel-server would start an NFS server there.

use crate::cmd;
use crate::ctx::Ctx;
use crate::module::Part;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The packages unpacked (their libraries come from the host; see `setup::APT_PACKAGES`).
pub const DEBS: &[&str] = &["nfs-kernel-server", "nfs-common", "rpcbind"];

/// The programs the image carries, as paths inside the unpacked tree.
pub const PROGRAMS: &[&str] = &[
    "usr/sbin/rpc.mountd",
    "usr/sbin/exportfs",
    "usr/sbin/rpc.nfsd",
    "usr/sbin/nfsstat",
    "usr/sbin/rpcdebug",
    "usr/bin/rpcinfo",
    "sbin/rpcbind",
    "sbin/mount.nfs",
    "sbin/showmount",
];

/// `<cache>/nfs-userspace/root`, unpacked once (a `.complete` file records the .debs
/// that went in). The reason instead if it cannot be had (no mirror, no `dpkg-deb`).
pub fn ensure(ctx: &Ctx) -> Part {
    match unpack(ctx) {
        Ok(root) => Part::Built(root),
        Err(e) => {
            eprintln!("build: NFS userspace: {e:#}");
            Part::Missing(format!("NFS userspace not unpacked: {e:#}"))
        }
    }
}

fn unpack(ctx: &Ctx) -> Result<PathBuf> {
    let dir = ctx.cache.join("nfs-userspace");
    let root = dir.join("root");
    let done = dir.join(".complete");
    if done.exists() && PROGRAMS.iter().all(|p| root.join(p).exists()) {
        return Ok(root);
    }
    eprintln!(
        "build: downloading {} (unpacked into {}, not installed)",
        DEBS.join(" "),
        dir.display()
    );
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let debs = dir.join("debs");
    std::fs::create_dir_all(&debs).with_context(|| format!("creating {}", debs.display()))?;
    cmd::run(
        Command::new("apt-get")
            .current_dir(&debs)
            .arg("download")
            .args(DEBS),
        "check access to the Debian mirror (`apt-get update` as root if the lists are stale)",
    )?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&debs)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    files.sort();
    if files.len() != DEBS.len() {
        bail!(
            "apt-get download left {} .deb files in {}, expected {}",
            files.len(),
            debs.display(),
            DEBS.len()
        );
    }
    for f in &files {
        cmd::run(
            Command::new("dpkg-deb").arg("-x").arg(f).arg(&root),
            "dpkg-deb comes with dpkg",
        )?;
    }
    if let Some(p) = PROGRAMS.iter().find(|p| !root.join(p).exists()) {
        bail!("{p} is not in the unpacked packages");
    }
    let names: Vec<String> = files
        .iter()
        .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    std::fs::write(&done, names.join("\n") + "\n")?;
    Ok(root)
}

/// libtirpc's `/etc/netconfig` (libtirpc-common), which rpcbind, mountd and mount.nfs read.
pub const NETCONFIG: &str = "\
udp        tpi_clts      v     inet     udp     -       -
tcp        tpi_cots_ord  v     inet     tcp     -       -
udp6       tpi_clts      v     inet6    udp     -       -
tcp6       tpi_cots_ord  v     inet6    tcp     -       -
rawip      tpi_raw       -     inet      -      -       -
local      tpi_cots_ord  -     loopback  -      -       -
unix       tpi_cots_ord  -     loopback  -      -       -
";

/// The host paths of `PROGRAMS` in the unpacked tree `root`.
pub fn program_paths(root: &Path) -> Vec<PathBuf> {
    PROGRAMS.iter().map(|p| root.join(p)).collect()
}
