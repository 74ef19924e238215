// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! `cargo xtask setup`: install what building and testing rsiw needs, checking cheaply first.

use crate::cmd;
use anyhow::{bail, Result};
use std::process::Command;

/// Debian 12 packages the kernel build, the image and the VM tests use.
const APT_PACKAGES: &[&str] = &[
    // The test kernel and out-of-tree modules (clang, because Rust + KASAN needs it).
    "linux-source-6.12",
    "clang-14",
    "lld-14",
    "llvm-14",
    "libclang-14-dev",
    "bc",
    "bison",
    "flex",
    "libelf-dev",
    "libssl-dev",
    "cpio",
    "xz-utils",
    "patch",
    "zstd",
    "kmod",
    "make",
    "gzip",
    // The VM and what runs in it.
    "qemu-system-x86",
    "busybox-static",
    "rdma-core",
    "ibverbs-utils",
    "ibverbs-providers",
    "rdmacm-utils",
    "perftest",
    "iproute2",
    // rdma-core's pyverbs and its tests (`qemu/tests/pyverbs-*.sh`).
    "python3-pyverbs",
    "tcpdump",
    // Host-side decode of the VM's packet captures (Wireshark's iWARP dissector).
    "tshark",
    "iperf3",
    // The bench image's `perf` (the guest's memory-copy rate, `qemu/profile.sh`).
    "linux-perf",
    // The libraries of Debian's NFS programs, which the image carries. The programs
    // themselves (nfs-kernel-server, nfs-common, rpcbind) are downloaded and unpacked
    // into the cache by `xtask/src/nfs.rs`, never installed: that would start an NFS
    // server on the host.
    "libtirpc3",
    "libwrap0",
    "libnsl2",
    "libgssapi-krb5-2",
    "libkeyutils1",
    "libcap2",
    "netbase",
    // Building rdma-core's provider headers and the provider.
    "cmake",
    "ninja-build",
    "pkg-config",
    "libibverbs-dev",
    "librdmacm-dev",
    "libnl-3-dev",
    "libnl-route-3-dev",
    "curl",
    // `cargo xtask fuzz`: libfuzzer-sys compiles libFuzzer with `c++`.
    "g++",
    // `--kernel 7.3` and `--kernel debian-7.3`: the trixie root with Debian's own rustc,
    // bindgen, clang and gcc for its 7.3 kernels (`scripts/debian-root.sh`).
    "mmdebstrap",
];

/// bindgen version the kernel's Rust build is known to work with.
const BINDGEN_VERSION: &str = "0.69.5";

/// Install whatever is missing; quick (a few probes) when everything is present.
pub fn ensure() -> Result<()> {
    // bindgen-cli compiles (about a minute of CPU; it needs no libclang to build, it
    // loads it at run time) while apt and rustup download.
    std::thread::scope(|s| {
        let bindgen = s.spawn(ensure_bindgen);
        let rest = (|| {
            let missing: Vec<&str> = APT_PACKAGES
                .iter()
                .copied()
                .filter(|p| !installed(p))
                .collect();
            if !missing.is_empty() {
                apt_install(&missing)?;
            }
            ensure_component("rust-src", "the kernel's Rust build needs it")?;
            ensure_component("rustfmt", "`cargo xtask test` checks the formatting")?;
            ensure_component(
                "clippy",
                "`cargo xtask test` lints the module (`make CLIPPY=1`)",
            )
        })();
        let bindgen = bindgen
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the bindgen-cli install's thread panicked")));
        rest.and(bindgen)
    })
}

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| {
            o.status.success()
                && String::from_utf8_lossy(&o.stdout).contains("install ok installed")
        })
        .unwrap_or(false)
}

fn apt_install(pkgs: &[&str]) -> Result<()> {
    let list = pkgs.join(" ");
    eprintln!("setup: installing Debian packages: {list}");
    if !is_root() {
        bail!("missing Debian packages: {list}; run `sudo apt-get install {list}` (or `cargo xtask setup` as root)");
    }
    let fix =
        format!("check access to the Debian mirror, then run `apt-get install {list}` by hand");
    cmd::run(Command::new("apt-get").args(["update", "-q"]), &fix)?;
    cmd::run(
        Command::new("apt-get")
            .env("DEBIAN_FRONTEND", "noninteractive")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(pkgs),
        &fix,
    )
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn ensure_component(name: &str, why: &str) -> Result<()> {
    let list = cmd::stdout(
        Command::new("rustup").args(["component", "list", "--installed"]),
        "install rustup (https://rustup.rs) with a stable toolchain",
    )?;
    if list.lines().any(|l| l.starts_with(name)) {
        return Ok(());
    }
    eprintln!("setup: adding rustup component {name} ({why})");
    cmd::run(
        Command::new("rustup").args(["component", "add", name]),
        &format!("run `rustup component add {name}` by hand"),
    )
}

fn ensure_bindgen() -> Result<()> {
    if cmd::succeeds(Command::new("bindgen").arg("--version")) {
        return Ok(());
    }
    eprintln!("setup: installing bindgen-cli {BINDGEN_VERSION} (the kernel's Rust build needs it; ~1 min)");
    cmd::run(
        Command::new("cargo").args(["install", "bindgen-cli", "--version", BINDGEN_VERSION, "--locked"]),
        "run `cargo install bindgen-cli --version 0.69.5 --locked` by hand and put ~/.cargo/bin on PATH",
    )?;
    if !cmd::succeeds(Command::new("bindgen").arg("--version")) {
        bail!("bindgen was installed but is not on PATH: add ~/.cargo/bin to PATH");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_probe_tells_installed_from_missing() {
        // dpkg itself is always installed on Debian; the other name exists nowhere.
        assert!(installed("dpkg"));
        assert!(!installed("rsiw-no-such-package"));
    }

    #[test]
    fn package_list_has_no_duplicates() {
        let mut v = APT_PACKAGES.to_vec();
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), APT_PACKAGES.len());
    }
}
