// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Fetch rdma-core v55's provider headers (`infiniband/driver.h` and the generated
//! `kernel-abi/*.h`) into the cache, for building the rdma-core provider.
//!
//! Debian 12 packages rdma-core 44 without its provider headers, and its source
//! package cannot be fetched; the crates.io crate `ibverbs-sys 0.3.2+55.0` vendors the
//! whole rdma-core v55 tree, whose private provider ABI (`IBVERBS_PRIVATE_34`) is the
//! one Debian's libibverbs exports. The crate is pinned by its sha256.
//!
//! Layout under `<cache>/rdma-core-55.0/` (the directory [`ensure`] returns, which the
//! provider build receives as `RSIW_RDMA_CORE`):
//! - `src/`: rdma-core's source (the crate's `vendor/rdma-core`),
//! - `build/include/`: the include directory for `-I` (symlinks into `src/` plus the
//!   generated headers),
//! - `.complete`: written last; while it exists nothing is redone.

use crate::cmd;
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The crate that carries rdma-core v55, as `name-version`.
const CRATE: &str = "ibverbs-sys-0.3.2+55.0";
/// sha256 of the `.crate` file, from the crates.io index (`cksum` of 0.3.2+55.0).
const CRATE_SHA256: &str = "8149ab8d940ea7e7073a24ba6e3ec6b0cc8ceab6ea3d562d60a21ca5cc23413a";
/// Where cargo itself downloads crates from (the index's `dl`); `+` is escaped.
const CRATE_URL: &str =
    "https://static.crates.io/crates/ibverbs-sys/ibverbs-sys-0.3.2%2B55.0.crate";
/// Directory under the cache; also the name the provider's build.rs defaults to.
const DIR: &str = "rdma-core-55.0";
/// Generated headers the provider's wrapper header needs (through `driver.h`).
const GENERATED: &[&str] = &["include/kernel-abi/ib_user_verbs.h"];

/// Make sure rdma-core v55's source with its generated headers is in `cache`,
/// and return its root directory (headers in `<root>/build/include`).
///
/// Idempotent: once complete, a call only reads the stamp file.
pub fn ensure(cache: &Path) -> Result<PathBuf> {
    // The host tests and the provider build ask for it from two threads
    // (`cargo xtask test` builds the VMs' artifacts beside the host tests).
    static PREPARING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = PREPARING.lock().unwrap_or_else(|p| p.into_inner());
    let root = cache.join(DIR);
    let stamp = root.join(".complete");
    // The stamp names the pin, so changing the pin invalidates an older cache.
    let pin = format!("{CRATE} {CRATE_SHA256}\n");
    if fs::read_to_string(&stamp).is_ok_and(|s| s == pin) {
        return Ok(root);
    }
    eprintln!("rdma-core: preparing v55 headers in {}", root.display());
    fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    let krate = download(&root)?;
    let src = extract(&root, &krate)?;
    generate(&root, &src)?;
    fs::write(&stamp, pin).with_context(|| format!("cannot write {}", stamp.display()))?;
    Ok(root)
}

/// Download the crate unless a verified copy is already there; return its path.
fn download(root: &Path) -> Result<PathBuf> {
    let krate = root.join(format!("{CRATE}.crate"));
    if krate.exists() && sha256(&krate)? == CRATE_SHA256 {
        return Ok(krate);
    }
    let part = root.join(format!("{CRATE}.crate.part"));
    cmd::run(
        Command::new("curl")
            .args(["-fsSL", "--retry", "3", "-o"])
            .arg(&part)
            .arg(CRATE_URL),
        "apt-get install curl, and check that static.crates.io is reachable",
    )?;
    let got = sha256(&part)?;
    if got != CRATE_SHA256 {
        let _ = fs::remove_file(&part);
        bail!("{CRATE_URL} has sha256 {got}, expected {CRATE_SHA256}: refusing it (a changed or truncated download)");
    }
    fs::rename(&part, &krate)
        .with_context(|| format!("cannot rename {} to {}", part.display(), krate.display()))?;
    Ok(krate)
}

/// The sha256 of `file` as lowercase hex.
fn sha256(file: &Path) -> Result<String> {
    let out = cmd::stdout(
        Command::new("sha256sum").arg(file),
        "apt-get install coreutils",
    )?;
    match out.split_whitespace().next() {
        Some(sum) if sum.len() == 64 => Ok(sum.to_owned()),
        _ => bail!("unexpected `sha256sum {}` output: {out:?}", file.display()),
    }
}

/// Unpack the crate's `vendor/rdma-core` as `<root>/src`, replacing any partial copy.
fn extract(root: &Path, krate: &Path) -> Result<PathBuf> {
    let src = root.join("src");
    remove_dir(&src)?;
    // cmake's include directory is symlinks into the source: an old build is stale.
    remove_dir(&root.join("build"))?;
    fs::create_dir_all(&src).with_context(|| format!("cannot create {}", src.display()))?;
    cmd::run(
        Command::new("tar")
            .arg("-xzf")
            .arg(krate)
            .arg("-C")
            .arg(&src)
            .arg("--strip-components=3")
            .arg(format!("{CRATE}/vendor/rdma-core")),
        "apt-get install tar gzip",
    )?;
    if !src.join("libibverbs/driver.h").exists() {
        bail!(
            "{} has no vendor/rdma-core/libibverbs/driver.h: not the expected crate",
            krate.display()
        );
    }
    Ok(src)
}

/// Configure rdma-core and build only the generated headers.
fn generate(root: &Path, src: &Path) -> Result<()> {
    let build = root.join("build");
    fs::create_dir_all(&build).with_context(|| format!("cannot create {}", build.display()))?;
    // Neither pyverbs nor netlink neighbour resolution is needed for headers, and
    // leaving them out drops the cython and libnl requirements.
    cmd::stdout(
        Command::new("cmake")
            .current_dir(&build)
            .args([
                "-GNinja",
                "-DNO_MAN_PAGES=1",
                "-DNO_PYVERBS=1",
                "-DENABLE_RESOLVE_NEIGH=0",
            ])
            .arg(src),
        "apt-get install cmake ninja-build pkg-config python3; if cmake ran, its error is printed above",
    )?;
    cmd::stdout(
        Command::new("ninja").current_dir(&build).args(GENERATED),
        "apt-get install ninja-build python3 (rdma-core generates kernel-abi headers with python3)",
    )?;
    for h in [
        "include/infiniband/driver.h",
        "include/infiniband/verbs.h",
        "include/config.h",
    ]
    .iter()
    .chain(GENERATED)
    {
        if !build.join(h).exists() {
            bail!(
                "rdma-core's cmake/ninja left no {}",
                build.join(h).display()
            );
        }
    }
    Ok(())
}

/// Remove `dir` and everything below it, if it exists.
fn remove_dir(dir: &Path) -> Result<()> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", dir.display()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// Downloads ~1.9 MB and runs cmake: run with `cargo test -p xtask -- --ignored`.
    #[test]
    #[ignore]
    fn ensure_fetches_then_is_instant() {
        let cache =
            std::env::temp_dir().join(format!("rsiw-rdma-core-test-{}", std::process::id()));
        let root = ensure(&cache).expect("first ensure");
        assert_eq!(root, cache.join(DIR));
        let include = root.join("build/include");
        let driver_h =
            fs::read_to_string(include.join("infiniband/driver.h")).expect("driver.h readable");
        assert!(
            driver_h.contains("void verbs_register_driver(const struct verbs_device_ops *ops);")
        );
        // The provider ABI Debian 12's libibverbs exports is IBVERBS_PRIVATE_34.
        let config_h = fs::read_to_string(include.join("config.h")).expect("config.h readable");
        assert!(
            config_h.contains("#define IBVERBS_PABI_VERSION 34\n"),
            "{config_h}"
        );
        assert!(include.join("kernel-abi/ib_user_verbs.h").exists());
        let t = std::time::Instant::now();
        assert_eq!(ensure(&cache).expect("second ensure"), root);
        assert!(
            t.elapsed() < std::time::Duration::from_millis(50),
            "second call took {:?}",
            t.elapsed()
        );
        fs::remove_dir_all(&cache).expect("clean up");
    }

    #[test]
    fn a_complete_cache_is_not_touched() {
        let cache =
            std::env::temp_dir().join(format!("rsiw-rdma-core-stamp-{}", std::process::id()));
        let root = cache.join(DIR);
        fs::create_dir_all(&root).expect("create cache");
        fs::write(root.join(".complete"), format!("{CRATE} {CRATE_SHA256}\n")).expect("stamp");
        // Nothing else is there: any download, extraction or cmake would fail or add files.
        assert_eq!(ensure(&cache).expect("ensure"), root);
        let mut names: Vec<_> = fs::read_dir(&root)
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        names.sort();
        assert_eq!(names, [".complete"]);
        fs::remove_dir_all(&cache).expect("clean up");
    }

    #[test]
    fn url_names_the_pinned_crate() {
        assert!(CRATE_URL.ends_with(&format!("/{}.crate", CRATE.replace('+', "%2B"))));
        assert!(CRATE_SHA256.len() == 64 && CRATE_SHA256.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
