// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! `cargo xtask package`: the Debian packages, made with `dpkg-deb --build` under
//! `target/package/`:
//! - `rsiw-dkms_<ver>_all.deb`: the module's source under `/usr/src/rsiw-<ver>/` with
//!   `dkms.conf` and `dkms/rsiw-kbuild.sh` (the preflight and the build of the Rust
//!   products the kernel's headers lack); its postinst builds rsiw.ko through DKMS;
//! - `rsiw-provider_<ver>_amd64.deb`: `librsiw-rdmav34.so` in the libibverbs provider
//!   directory and `/etc/libibverbs.d/rsiw.driver`, where rdma-core's providers are.
//!
//! The VM image part `package` ([`vm_part`]) installs both in the trixie root
//! (`scripts/dkms-install-test.sh`) and gives the VM on Debian's kernel the rsiw.ko DKMS
//! built there and the provider's .deb (`qemu/tests/package-debian-rsiw.sh`).

use crate::cmd;
use crate::cpio::{Entry, Tree};
use crate::ctx::{Ctx, KernelLine};
use crate::module::Part;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where rdma-core's providers are on Debian (amd64).
const PROVIDER_DIR: &str = "usr/lib/x86_64-linux-gnu/libibverbs";

/// The module's files in the source package: what `make KDIR=…` reads.
const MODULE_SOURCES: [&str; 4] = ["Kbuild", "Makefile", "rust", "scripts/gen-bindings.sh"];

/// Why a script with `# rsiw-image: package` runs on Debian's kernel alone.
pub const NOT_HERE: &str =
    "the packages are installed and tested on Debian's kernel only (--kernel debian-7.3)";

/// The two packages of one `cargo xtask package`.
pub struct Debs {
    /// `target/package/`.
    pub dir: PathBuf,
    /// `rsiw-dkms_<ver>_all.deb`.
    pub dkms: PathBuf,
    /// `rsiw-provider_<ver>_amd64.deb`.
    pub provider: PathBuf,
}

/// The packages' version: the provider crate's (`provider/Cargo.toml`).
fn version(ctx: &Ctx) -> Result<String> {
    let toml = ctx.root.join("provider/Cargo.toml");
    let text =
        std::fs::read_to_string(&toml).with_context(|| format!("reading {}", toml.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .map(str::to_string)
        .with_context(|| format!("{} has no version line", toml.display()))
}

/// `Maintainer:`: `DEBFULLNAME <DEBEMAIL>` when set (Debian's convention).
fn maintainer() -> String {
    match (std::env::var("DEBFULLNAME"), std::env::var("DEBEMAIL")) {
        (Ok(n), Ok(e)) if !n.is_empty() && !e.is_empty() => format!("{n} <{e}>"),
        _ => "rsiw developers <rsiw@invalid>".into(),
    }
}

/// Build both packages under `target/package/`.
pub fn build(ctx: &Ctx) -> Result<Debs> {
    let ver = version(ctx)?;
    let dir = ctx.root.join("target/package");
    let stage = dir.join("stage");
    if stage.exists() {
        std::fs::remove_dir_all(&stage).with_context(|| format!("removing {}", stage.display()))?;
    }
    let subst = |text: &str, depends: &str| {
        text.replace("@VERSION@", &ver)
            .replace("@MAINTAINER@", &maintainer())
            .replace("@DEPENDS@", depends)
    };
    let read = |p: &str| {
        let p = ctx.root.join(p);
        std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))
    };

    // rsiw-dkms: the source, dkms.conf, the maintainer scripts.
    let d = stage.join("rsiw-dkms");
    let src = d.join(format!("usr/src/rsiw-{ver}"));
    for s in MODULE_SOURCES.iter().chain(&["dkms/rsiw-kbuild.sh"]) {
        let dst = src.join(s);
        std::fs::create_dir_all(dst.parent().context("no parent")?)?;
        crate::module::copy_tree(&ctx.root.join(s), &dst)?;
    }
    // The protocol core's host-only parts (the module uses its `src/`).
    for x in ["fuzz", "tests", "examples"] {
        let p = src.join("rust/proto").join(x);
        if p.exists() {
            std::fs::remove_dir_all(&p).with_context(|| format!("removing {}", p.display()))?;
        }
    }
    write(
        &src.join("dkms.conf"),
        &subst(&read("dkms/dkms.conf")?, ""),
        0o644,
    )?;
    let control = d.join("DEBIAN");
    write(
        &control.join("control"),
        &subst(&read("dkms/debian/rsiw-dkms.control")?, ""),
        0o644,
    )?;
    for script in ["postinst", "prerm", "postrm"] {
        let text = read(&format!("dkms/debian/rsiw-dkms.{script}"))?;
        write(&control.join(script), &subst(&text, ""), 0o755)?;
    }
    let dkms = dir.join(format!("rsiw-dkms_{ver}_all.deb"));
    dpkg_deb(&d, &dkms)?;

    // rsiw-provider: the .so without its debug sections (the symbols stay), and its
    // driver file.
    let so = match crate::provider::build(ctx) {
        Part::Built(so) => so,
        p => bail!("the provider did not build: {}", p.reason().unwrap_or("?")),
    };
    let p = stage.join("rsiw-provider");
    let lib = p.join(PROVIDER_DIR).join("librsiw-rdmav34.so");
    std::fs::create_dir_all(lib.parent().context("no parent")?)?;
    // binutils' objcopy: the packages build on Debian 12 and 13 alike.
    cmd::run(
        Command::new("objcopy")
            .arg("--strip-debug")
            .arg(&so)
            .arg(&lib),
        "objcopy comes with binutils",
    )?;
    set_mode(&lib, 0o644)?;
    write(
        &p.join("etc/libibverbs.d/rsiw.driver"),
        "driver rsiw\n",
        0o644,
    )?;
    let control = p.join("DEBIAN");
    let depends = shlib_depends(&lib)?;
    write(
        &control.join("control"),
        &subst(&read("dkms/debian/rsiw-provider.control")?, &depends),
        0o644,
    )?;
    write(
        &control.join("conffiles"),
        "/etc/libibverbs.d/rsiw.driver\n",
        0o644,
    )?;
    let provider = dir.join(format!("rsiw-provider_{ver}_amd64.deb"));
    dpkg_deb(&p, &provider)?;
    Ok(Debs {
        dir,
        dkms,
        provider,
    })
}

/// `cargo xtask package`.
pub fn run(ctx: &Ctx) -> Result<std::process::ExitCode> {
    let debs = build(ctx)?;
    for p in [&debs.dkms, &debs.provider] {
        println!("{}", p.strip_prefix(&ctx.root).unwrap_or(p).display());
    }
    Ok(std::process::ExitCode::SUCCESS)
}

fn write(path: &Path, text: &str, mode: u32) -> Result<()> {
    std::fs::create_dir_all(path.parent().context("no parent")?)?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    set_mode(path, mode)
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("chmod {}", path.display()))
}

/// `dpkg-deb --build` of `stage` to `deb`: files owned by root, gzip (busybox's dpkg in
/// the test VM reads it as well as dpkg does).
fn dpkg_deb(stage: &Path, deb: &Path) -> Result<()> {
    // Directories 0755 whatever the umask.
    let mut dirs = vec![stage.to_path_buf()];
    while let Some(d) = dirs.pop() {
        set_mode(&d, 0o755)?;
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            if e.file_type()?.is_dir() {
                dirs.push(e.path());
            }
        }
    }
    cmd::stdout(
        Command::new("dpkg-deb")
            .args(["--root-owner-group", "-Zgzip", "--build"])
            .arg(stage)
            .arg(deb),
        "dpkg-deb comes with dpkg",
    )?;
    Ok(())
}

/// The provider's `Depends:`, from the libraries it needs (`NEEDED`) and the newest glibc
/// symbol version it uses.
fn shlib_depends(so: &Path) -> Result<String> {
    let dynamic = cmd::stdout(
        Command::new("objdump").arg("-p").arg(so),
        "objdump comes with binutils",
    )?;
    let symbols = cmd::stdout(
        Command::new("objdump").arg("-T").arg(so),
        "objdump comes with binutils",
    )?;
    depends_of(&dynamic, &symbols)
}

/// [`shlib_depends`] on `objdump -p` and `objdump -T` output.
fn depends_of(dynamic: &str, symbols: &str) -> Result<String> {
    let glibc = symbols
        .split_whitespace()
        .filter_map(|w| {
            w.trim_matches(|c| c == '(' || c == ')')
                .strip_prefix("GLIBC_")
        })
        .filter_map(|v| {
            let mut it = v.split('.').map(|n| n.parse::<u32>().ok());
            Some((it.next()??, it.next().flatten().unwrap_or(0)))
        })
        .max()
        .unwrap_or((2, 34));
    let mut deps = vec![format!("libc6 (>= {}.{})", glibc.0, glibc.1)];
    for lib in dynamic
        .lines()
        .filter_map(|l| l.trim().strip_prefix("NEEDED"))
        .map(str::trim)
    {
        let dep = match lib {
            "libc.so.6"
            | "libm.so.6"
            | "libdl.so.2"
            | "libpthread.so.0"
            | "librt.so.1"
            | "ld-linux-x86-64.so.2" => continue,
            // IBVERBS_PRIVATE_34: the private ABI providers link against (rdma-core ≥ 34).
            "libibverbs.so.1" => "libibverbs1 (>= 34)",
            "libgcc_s.so.1" => "libgcc-s1",
            other => bail!("the provider needs {other}: add its Debian package to package.rs"),
        };
        deps.push(dep.to_string());
    }
    deps.dedup();
    Ok(deps.join(", "))
}

/// The image part `package` (`# rsiw-image: package`): `rsiw/package/` with the
/// provider's .deb, and the rsiw.ko DKMS built and installed when both packages were
/// installed in the trixie root (`scripts/dkms-install-test.sh`), with apt's and
/// dkms's output. Debian's kernel only. The install starts from the harness's tree of
/// that kernel (made by the same `dkms/rsiw-kbuild.sh`): the Rust products are made
/// once, by `scripts/build-debian-kernel.sh`.
pub fn vm_part(ctx: &Ctx) -> Result<PathBuf> {
    if ctx.kernel != KernelLine::Debian7_3 {
        bail!("{NOT_HERE}");
    }
    // Cached: this only reads the release and the tree.
    let k = crate::kernel::ensure(ctx)?;
    let debs = build(ctx)?;
    let out = ctx.out_dir().join("package");
    cmd::run(
        Command::new("bash")
            .arg(ctx.root.join("scripts/dkms-install-test.sh"))
            .arg(&debs.dir)
            .arg(&out)
            .arg(&k.release)
            .arg(&k.kdir)
            .env("RSIW_CACHE", &ctx.cache),
        "the lines above say what failed; its whole log is install.log",
    )?;
    let mut t = Tree::default();
    let name = debs
        .provider
        .file_name()
        .context("no file name")?
        .to_string_lossy()
        .into_owned();
    t.insert(
        &format!("rsiw/package/{name}"),
        Entry::File(debs.provider.clone(), 0o644),
    );
    for f in ["rsiw.ko", "install.log", "dkms-status", "preflight.log"] {
        t.insert(
            &format!("rsiw/package/{f}"),
            Entry::File(out.join(f), 0o644),
        );
    }
    let cpio = ctx.out_dir().join("package.cpio");
    std::fs::write(&cpio, t.to_cpio()?).with_context(|| format!("writing {}", cpio.display()))?;
    Ok(cpio)
}

#[cfg(test)]
mod tests;
