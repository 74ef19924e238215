// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The VM image: an uncompressed cpio initramfs with busybox, rdma-core, perftest, the
//! modules and the tests (inflating it took a TCG guest 1.5 s of each boot).

use crate::cmd;
use crate::cpio::{Entry, Tree};
use crate::ctx::Ctx;
use crate::kernel::Kernel;
use crate::module::Part;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Host programs copied into the image with every library `ldd` names.
const TOOLS: &[&str] = &[
    "ibv_devices",
    "ibv_devinfo",
    "ibv_rc_pingpong",
    "ibv_uc_pingpong",
    "ibv_ud_pingpong",
    "rping",
    "cmtime",
    "ib_send_bw",
    "ib_write_bw",
    "ib_read_bw",
    "ib_send_lat",
    "ib_write_lat",
    "ib_read_lat",
    "ib_atomic_bw",
    "ib_atomic_lat",
    "rdma",
    "tcpdump",
    "iperf3",
    "ss",
];

/// Where Debian keeps libibverbs providers; the rsiw provider goes there too.
const PROVIDER_DIR: &str = "/usr/lib/x86_64-linux-gnu/libibverbs";

/// What goes into the image besides the distribution's files.
pub struct Parts {
    /// `rsiw.ko`, or why it is missing.
    pub rsiw_ko: Part,
    /// `librsiw_provider.so`, or why it is missing.
    pub provider: Part,
    /// `rsiw-verbs-test` (installed as `/usr/bin/rsiw-verbs-test`), or why it is missing.
    pub verbs_test: Part,
    /// Test-only kernel modules (installed in `extra/` next to rsiw.ko).
    pub test_kmods: Vec<PathBuf>,
    /// The unpacked NFS userspace (`nfs::ensure`), or why it is missing.
    pub nfs: Part,
}

/// Build `target/vm/<flavour>/initramfs.cpio` from scratch (about two seconds).
pub fn build(ctx: &Ctx, k: &Kernel, parts: &Parts) -> Result<PathBuf> {
    let started = std::time::Instant::now();
    let mut t = Tree::default();
    // The host is merged-/usr; so is the guest, so every path `ldd` prints resolves.
    for (link, target) in [
        ("bin", "usr/bin"),
        ("sbin", "usr/sbin"),
        ("lib", "usr/lib"),
        ("lib64", "usr/lib64"),
    ] {
        t.insert(link, Entry::Symlink(target.into()));
    }
    for d in ["dev", "proc", "sys", "tmp", "run", "root", "mnt", "var/tmp"] {
        t.insert(d, Entry::Dir);
    }
    // The kernel opens /dev/console for /init's stdio before anything is mounted.
    t.insert("dev/console", Entry::CharDev(5, 1));
    add_busybox(&mut t)?;
    let mut elves: Vec<PathBuf> = Vec::new();
    for tool in TOOLS {
        let p = which(tool)?;
        add_host_file(&mut t, &p)?;
        elves.push(p);
    }
    // The benchmark image also carries `perf` (Debian's linux-perf) so a bench script can
    // show where the time goes; it is optional (about 30 MiB with its libraries) and left
    // out of the test images, which it would only slow down.
    if ctx.kernel.has_flavours() && ctx.flavour == crate::ctx::Flavour::Perf {
        if let Ok(p) = which("perf") {
            add_host_file(&mut t, &p)?;
            elves.push(p);
        }
    }
    for e in read_dir_sorted(Path::new(PROVIDER_DIR))? {
        add_host_file(&mut t, &e)?;
        elves.push(e);
    }
    for e in read_dir_sorted(Path::new("/etc/libibverbs.d"))? {
        add_host_file(&mut t, &e)?;
    }
    // rping's pthread_exit dlopens libgcc_s at exit; without it rping aborts.
    add_host_file(&mut t, &find_lib("libgcc_s.so.1")?)?;
    let mut status = format!(
        "RSIW_FLAVOUR={}\nRSIW_KERNEL={}\n",
        ctx.kernel_tag(),
        k.release
    );
    match &parts.provider {
        Part::Built(so) => {
            t.insert(
                &format!("{PROVIDER_DIR}/librsiw-rdmav34.so"),
                Entry::File(without_debug_info(ctx, so)?, 0o755),
            );
            t.insert(
                "etc/libibverbs.d/rsiw.driver",
                Entry::Data(b"driver rsiw\n".to_vec(), 0o644),
            );
            elves.push(so.clone());
        }
        p => {
            status += &format!(
                "RSIW_PROVIDER_MISSING={}\n",
                shell_quote(p.reason().unwrap_or("?"))
            )
        }
    }
    match &parts.verbs_test {
        Part::Built(bin) => {
            t.insert(
                "usr/bin/rsiw-verbs-test",
                Entry::File(without_debug_info(ctx, bin)?, 0o755),
            );
            elves.push(bin.clone());
            // Built by the same package: the raw MPA peer of the CM and RX tests, the
            // traffic generator of the fault and soak runs, and the MPA CRC check of
            // captures.
            for name in ["rsiw-rawpeer", "rsiw-load", "rsiw-pcap-crc"] {
                let p = bin.with_file_name(name);
                if p.exists() {
                    t.insert(
                        &format!("usr/bin/{name}"),
                        Entry::File(without_debug_info(ctx, &p)?, 0o755),
                    );
                    elves.push(p);
                }
            }
            // The NFS data checker and fsx, built by the same package.
            let io = bin.with_file_name("rsiw-nfs-io");
            t.insert(
                "usr/bin/rsiw-nfs-io",
                Entry::File(without_debug_info(ctx, &io)?, 0o755),
            );
            elves.push(io);
        }
        p => {
            status += &format!(
                "RSIW_VERBS_TEST_MISSING={}\nRSIW_NFS_IO_MISSING={}\n",
                shell_quote(p.reason().unwrap_or("?")),
                shell_quote(p.reason().unwrap_or("?"))
            )
        }
    }
    match &parts.nfs {
        Part::Built(root) => add_nfs(&mut t, root, &mut elves)?,
        p => {
            status += &format!(
                "RSIW_NFS_MISSING={}\n",
                shell_quote(p.reason().unwrap_or("?"))
            )
        }
    }
    for lib in ldd_closure(&elves)? {
        add_host_file(&mut t, &lib)?;
    }
    if let Some(why) = parts.rsiw_ko.reason() {
        status += &format!("RSIW_KO_MISSING={}\n", shell_quote(why));
    }
    let modules = stage_modules(ctx, k, parts)?;
    t.insert_dir(&modules, &format!("usr/lib/modules/{}", k.release))?;
    // rpcbind drops to `_rpc`; knfsd maps anonymous users to nobody/nogroup.
    t.insert(
        "etc/passwd",
        Entry::Data(
            b"root:x:0:0:root:/root:/bin/sh\n\
              _rpc:x:100:65534::/run/rpcbind:/usr/sbin/nologin\n\
              nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
                .to_vec(),
            0o644,
        ),
    );
    t.insert(
        "etc/group",
        Entry::Data(b"root:x:0:\nnogroup:x:65534:\n".to_vec(), 0o644),
    );
    t.insert(
        "etc/hosts",
        Entry::Data(b"127.0.0.1 localhost\n".to_vec(), 0o644),
    );
    t.insert("rsiw/status", Entry::Data(status.into_bytes(), 0o644));
    let q = ctx.root.join("qemu");
    t.insert("init", Entry::File(q.join("init"), 0o755));
    t.insert("rsiw/lib.sh", Entry::File(q.join("lib.sh"), 0o644));
    t.insert_dir(&q.join("lib"), "rsiw/lib")?;
    t.insert_dir(&q.join("tests"), "rsiw/tests")?;

    let out = ctx.out_dir().join("initramfs.cpio");
    let mut img = t.to_cpio()?;
    // Zero padding to 4 bytes lets the overlay archives follow (see `with_overlay`).
    img.resize(img.len().next_multiple_of(4), 0);
    std::fs::write(&out, &img).with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "image: {} ({:.1} MiB) in {:.1} s",
        out.strip_prefix(&ctx.root).unwrap_or(&out).display(),
        img.len() as f64 / 1048576.0,
        started.elapsed().as_secs_f64()
    );
    Ok(out)
}

/// The NFS server and client programs (`nfs::PROGRAMS`) and the files they expect
/// without systemd: `/etc/netconfig` (libtirpc), `/etc/mtab` (mountd and mount.nfs walk
/// it), an empty `/etc/exports`, `/var/lib/nfs` (mountd's etab/rmtab), netbase's
/// `/etc/{protocols,services,rpc}` when the host has them.
fn add_nfs(t: &mut Tree, root: &Path, elves: &mut Vec<PathBuf>) -> Result<()> {
    for p in crate::nfs::program_paths(root) {
        let rel = p
            .strip_prefix(root)
            .context("NFS program outside its tree")?;
        let guest = usr_path(&rel.to_string_lossy());
        t.insert(&guest, Entry::File(p.clone(), 0o755));
        elves.push(p);
    }
    for alias in ["mount.nfs4", "umount.nfs", "umount.nfs4"] {
        t.insert(
            &format!("usr/sbin/{alias}"),
            Entry::Symlink("mount.nfs".into()),
        );
    }
    t.insert(
        "etc/netconfig",
        Entry::Data(crate::nfs::NETCONFIG.as_bytes().to_vec(), 0o644),
    );
    t.insert("etc/mtab", Entry::Symlink("/proc/self/mounts".into()));
    t.insert("etc/exports", Entry::Data(Vec::new(), 0o644));
    for f in ["etc/protocols", "etc/services", "etc/rpc"] {
        let host = Path::new("/").join(f);
        if host.is_file() {
            t.insert(f, Entry::File(host, 0o644));
        }
    }
    for d in ["var/lib/nfs/v4recovery", "var/lib/nfs/rpc_pipefs"] {
        t.insert(d, Entry::Dir);
    }
    for f in ["var/lib/nfs/etab", "var/lib/nfs/rmtab"] {
        t.insert(f, Entry::Data(Vec::new(), 0o644));
    }
    Ok(())
}

/// One script of a run and its own environment lines (`RSIW_TEST`, `RSIW_TIMEOUT`,
/// `RSIW_REQUIRES`).
pub struct RunScript<'a> {
    /// The script's text.
    pub text: &'a [u8],
    /// Shell assignments, one a line.
    pub env: String,
}

/// Write `base`, then `extra` (an archive of an optional part, [`pyverbs`]), then an
/// uncompressed archive holding the per-run files (`/rsiw/env`, and each script as
/// `/rsiw/run/NN.sh` with its `/rsiw/run/NN.env`, in run order) to `dest`; the
/// kernel unpacks them in order.
pub fn with_overlay(
    base: &Path,
    extra: Option<&Path>,
    scripts: &[RunScript],
    env: &str,
    dest: &Path,
) -> Result<()> {
    let mut t = Tree::default();
    for (i, s) in scripts.iter().enumerate() {
        t.insert(
            &format!("rsiw/run/{i:02}.sh"),
            Entry::Data(s.text.to_vec(), 0o755),
        );
        t.insert(
            &format!("rsiw/run/{i:02}.env"),
            Entry::Data(s.env.as_bytes().to_vec(), 0o644),
        );
    }
    t.insert("rsiw/env", Entry::Data(env.as_bytes().to_vec(), 0o644));
    let mut img = std::fs::read(base).with_context(|| format!("reading {}", base.display()))?;
    if let Some(x) = extra {
        img.extend_from_slice(
            &std::fs::read(x).with_context(|| format!("reading {}", x.display()))?,
        );
    }
    img.extend_from_slice(&t.to_cpio()?);
    std::fs::write(dest, img).with_context(|| format!("writing {}", dest.display()))
}

/// The image parts a script may ask for (`# rsiw-image:`).
pub const PARTS: [&str; 2] = ["pyverbs", "package"];

/// The archive of the image part a script asks for in `wanted` (one at most): [`pyverbs`]
/// or [`crate::package::vm_part`].
pub fn part(ctx: &Ctx, wanted: &[String]) -> Result<Option<PathBuf>> {
    if wanted.iter().any(|x| x == "pyverbs") {
        return pyverbs(ctx).map(Some);
    }
    if wanted.iter().any(|x| x == "package") {
        return crate::package::vm_part(ctx).map(Some);
    }
    Ok(None)
}

/// Where Debian's `python3-pyverbs` keeps rdma-core's pyverbs tests (the larger
/// files gzip'd, as documentation).
const PYVERBS_TESTS: &str = "/usr/share/doc/rdma-core/tests";
/// Where the image has them, uncompressed: `python3 PYVERBS_TESTS_VM/run_tests.py`.
pub const PYVERBS_TESTS_VM: &str = "usr/share/rdma-core/tests";
/// Parts of the Python standard library no test imports (with `config-*`, the static
/// library, more than half its size).
const PYTHON_UNUSED: &[&str] = &[
    "test",
    "idlelib",
    "tkinter",
    "lib2to3",
    "ensurepip",
    "pydoc_data",
    "turtledemo",
    "distutils",
    "venv",
];

/// The archive the scripts with `# rsiw-image: pyverbs` get on top of the base image
/// (`target/vm/<flavour>/pyverbs.cpio`, uncompressed, about 30 MiB, rebuilt for each
/// such run): python3 with its standard library, Debian's `python3-pyverbs` (built
/// against the distribution's libibverbs, like every tool in the image) and its
/// tests, and iproute2's `ip` (the tests parse `ip -j addr`, which busybox lacks).
pub fn pyverbs(ctx: &Ctx) -> Result<PathBuf> {
    let mut t = Tree::default();
    // The distribution's interpreter (the one python3-pyverbs is built for), not
    // whatever `python3` PATH finds first.
    let python = std::fs::canonicalize("/usr/bin/python3")
        .context("/usr/bin/python3 is missing: run `cargo xtask setup` (python3-pyverbs)")?;
    let name = python
        .file_name()
        .context("python3 has no name")?
        .to_string_lossy()
        .into_owned();
    let mut elves = vec![python.clone()];
    add_host_file(&mut t, &python)?;
    t.insert("usr/bin/python3", Entry::Symlink(name.clone()));
    let stdlib = Path::new("/usr/lib").join(&name);
    let pyverbs = Path::new("/usr/lib/python3/dist-packages/pyverbs");
    if !pyverbs.is_dir() {
        bail!(
            "{} is missing: run `cargo xtask setup` (python3-pyverbs)",
            pyverbs.display()
        );
    }
    for (src, dest) in [
        (stdlib.as_path(), format!("usr/lib/{name}")),
        (pyverbs, "usr/lib/python3/dist-packages/pyverbs".to_string()),
    ] {
        t.insert_dir_filtered(src, &dest, &|p: &Path| {
            p.strip_prefix(&stdlib)
                .ok()
                .and_then(|r| r.components().next())
                .and_then(|c| c.as_os_str().to_str())
                .is_some_and(|c| PYTHON_UNUSED.contains(&c) || c.starts_with("config-"))
        })?;
        elves.extend(shared_objects(src)?);
    }
    // Debian's stdlib links sitecustomize.py to /etc/pythonX.Y.
    let etc = Path::new("/etc").join(&name);
    if etc.is_dir() {
        t.insert_dir(&etc, &format!("etc/{name}"))?;
    }
    for e in read_dir_sorted(Path::new(PYVERBS_TESTS))? {
        let Some(file) = e.file_name().map(|f| f.to_string_lossy().into_owned()) else {
            continue;
        };
        match file.strip_suffix(".gz") {
            Some(py) => {
                let data = cmd::stdout(
                    Command::new("gzip").arg("-dc").arg(&e),
                    "install gzip (`cargo xtask setup`)",
                )?
                .into_bytes();
                t.insert(
                    &format!("{PYVERBS_TESTS_VM}/{py}"),
                    Entry::Data(data, 0o644),
                );
            }
            None => t.insert(&format!("{PYVERBS_TESTS_VM}/{file}"), Entry::File(e, 0o644)),
        }
    }
    let ip = Path::new("/usr/bin/ip");
    let ip = if ip.exists() {
        ip.to_path_buf()
    } else {
        PathBuf::from("/usr/sbin/ip")
    };
    let real = std::fs::canonicalize(&ip).with_context(|| {
        format!(
            "{} is missing: run `cargo xtask setup` (iproute2)",
            ip.display()
        )
    })?;
    // Over busybox's applet of the same name.
    t.insert("usr/sbin/ip", Entry::File(real.clone(), 0o755));
    t.insert("usr/bin/ip", Entry::Symlink("/usr/sbin/ip".into()));
    elves.push(real);
    for lib in ldd_closure(&elves)? {
        add_host_file(&mut t, &lib)?;
    }
    t.insert(
        "rsiw/pyverbs-run.py",
        Entry::File(ctx.root.join("qemu/pyverbs-run.py"), 0o755),
    );
    let out = ctx.out_dir().join("pyverbs.cpio");
    std::fs::write(&out, t.to_cpio()?).with_context(|| format!("writing {}", out.display()))?;
    Ok(out)
}

/// The shared objects under `dir` (Python's extension modules), for `ldd`.
fn shared_objects(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let p = e?.path();
            let meta = std::fs::symlink_metadata(&p)?;
            if meta.is_dir() {
                stack.push(p);
            } else if meta.is_file() && p.extension().is_some_and(|x| x == "so") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Quote `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn add_busybox(t: &mut Tree) -> Result<()> {
    let bb = which("busybox")?;
    let list = cmd::stdout(
        Command::new(&bb).arg("--list-full"),
        "install busybox-static (`cargo xtask setup`)",
    )?;
    for applet in list.lines().filter(|l| !l.is_empty()) {
        t.insert(&usr_path(applet), Entry::Symlink("/usr/bin/busybox".into()));
    }
    // After the applets: Debian's list names busybox itself, which would loop.
    t.insert("usr/bin/busybox", Entry::File(bb, 0o755));
    Ok(())
}

/// The guest path for a host path: `/lib/x` and `/usr/lib/x` are one file on merged-/usr.
fn usr_path(p: &str) -> String {
    let p = p.trim_start_matches('/');
    for top in ["bin/", "sbin/", "lib/", "lib64/"] {
        if p.starts_with(top) {
            return format!("usr/{p}");
        }
    }
    p.to_string()
}

/// A copy of our own program `elf` without its debug sections, for the image: the
/// release profile keeps line tables (`debug = 1`, for host backtraces and `perf`),
/// which make up seven eighths of each binary; the symbols stay. Every boot unpacks
/// the image, so these 27 MiB cost each VM about a second under TCG.
fn without_debug_info(ctx: &Ctx, elf: &Path) -> Result<PathBuf> {
    let dir = ctx.out_dir().join("stripped");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = elf
        .file_name()
        .context("a program path without a file name")?;
    let out = dir.join(name);
    let tool = format!("llvm-objcopy{}", crate::module::llvm());
    cmd::run(
        Command::new(&tool).arg("--strip-debug").arg(elf).arg(&out),
        &format!("`cargo xtask setup` installs {tool} (Debian's llvm-14)"),
    )?;
    Ok(out)
}

fn add_host_file(t: &mut Tree, p: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let real = std::fs::canonicalize(p)
        .with_context(|| format!("{} is missing: run `cargo xtask setup`", p.display()))?;
    let mode = std::fs::metadata(&real)?.permissions().mode() & 0o7777;
    t.insert(&usr_path(&p.to_string_lossy()), Entry::File(real, mode));
    Ok(())
}

fn which(tool: &str) -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path).chain(["/usr/sbin", "/sbin"].map(PathBuf::from));
    for d in dirs {
        let p = d.join(tool);
        if p.is_file() {
            return Ok(p);
        }
    }
    bail!("`{tool}` not found on the host: run `cargo xtask setup` (it installs the Debian package providing it)")
}

fn find_lib(name: &str) -> Result<PathBuf> {
    for d in [
        "/usr/lib/x86_64-linux-gnu",
        "/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/lib64",
    ] {
        let p = Path::new(d).join(name);
        if p.exists() {
            return Ok(p);
        }
    }
    bail!("{name} not found: install libgcc-s1")
}

fn read_dir_sorted(d: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(d)
        .with_context(|| {
            format!(
                "reading {}: run `cargo xtask setup` (ibverbs-providers)",
                d.display()
            )
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    v.sort();
    Ok(v)
}

/// Every shared library (and the dynamic loader) the given ELF files need.
fn ldd_closure(elves: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let out = cmd::stdout(Command::new("ldd").args(elves), "ldd comes with libc-bin")?;
    let mut libs: Vec<PathBuf> = Vec::new();
    // With several files ldd prints a "file:" header line each; libraries are tab-indented.
    for line in out.lines().filter(|l| l.starts_with('\t')) {
        if line.contains("not found") {
            bail!(
                "ldd: a library is missing on the host ({}): run `cargo xtask setup`",
                line.trim()
            );
        }
        let path = match line.split_once("=>") {
            Some((_, rhs)) => rhs.split_whitespace().next(),
            None => line
                .split_whitespace()
                .next()
                .filter(|w| w.starts_with('/')),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            libs.push(PathBuf::from(p));
        }
    }
    libs.sort();
    libs.dedup();
    Ok(libs)
}

/// Copy the kernel's installed modules plus ours (`extra/`) to a staging dir and run depmod.
fn stage_modules(ctx: &Ctx, k: &Kernel, parts: &Parts) -> Result<PathBuf> {
    let base = ctx.out_dir().join("modroot");
    let dir = base.join("lib/modules").join(&k.release);
    if base.exists() {
        std::fs::remove_dir_all(&base).with_context(|| format!("removing {}", base.display()))?;
    }
    std::fs::create_dir_all(base.join("lib/modules"))
        .with_context(|| format!("creating {}", base.display()))?;
    cmd::run(
        Command::new("cp").arg("-a").arg(&k.modules).arg(&dir),
        "the kernel cache looks damaged: remove its directory and run `cargo xtask build`",
    )?;
    for l in ["build", "source"] {
        let _ = std::fs::remove_file(dir.join(l));
    }
    let extra = dir.join("extra");
    std::fs::create_dir_all(&extra)?;
    let mut ours = parts.test_kmods.clone();
    if let Part::Built(ko) = &parts.rsiw_ko {
        ours.push(ko.clone());
    }
    for ko in ours {
        std::fs::copy(&ko, extra.join(ko.file_name().context("no file name")?))
            .with_context(|| format!("copying {}", ko.display()))?;
    }
    cmd::run(
        Command::new("depmod").arg("-b").arg(&base).arg(&k.release),
        "depmod comes with kmod: `cargo xtask setup`",
    )?;
    Ok(dir)
}
