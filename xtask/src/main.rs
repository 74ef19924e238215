// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw's build and test driver (`cargo xtask …`): toolchain setup, kernel/module/image builds, QEMU runs.

mod accel;
mod artifacts;
mod bench;
mod cmd;
mod cpio;
mod ctx;
mod frames;
mod fuzz;
mod hosttests;
mod image;
mod kernel;
#[cfg(test)]
mod layers;
mod lint;
mod lock;
mod module;
mod nfs;
mod outcome;
mod package;
mod pcap;
mod pcap_markers;
mod pcap_rpcordma;
mod provider;
mod rdma_core;
mod setup;
#[cfg(test)]
mod sizes;
mod soak;
mod splat;
mod suite;
mod vm;

use anyhow::{bail, Context, Result};
use ctx::{Ctx, Flavour, KernelLine};
use std::path::PathBuf;
use std::process::ExitCode;
use vm::Echo;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  setup                      install the Debian packages, rust-src and bindgen the build needs
  build                      build the test kernel (cached), rsiw.ko, the provider, test modules, the image
  run                        build, boot, load rsiw, create rsiw0 and show `ibv_devinfo -v -d rsiw0`
  vm --script FILE           build, boot, run FILE (a shell script) in the VM; exit with its status
  test [NAME…]               host tests + VM suite (scripts qemu/tests/*NAME*.sh); ends with `N passed, N failed`
                             (`, N skipped` added when a script skipped cases, e.g. no rsiw data path yet)
  package                    the Debian packages rsiw-dkms (source, dkms.conf, the build of the Rust
                             products the headers lack) and rsiw-provider, under target/package/
  fuzz [TARGET…]             coverage-guided fuzzing of the protocol core (targets rx, mpa, atomic, tx;
                             default all), each for --seconds (default 60); stable toolchain
  bench                      perftest siw vs rsiw vs rxe (atomics) and iperf3 in one VM run on the
                             perf flavour; prints a table with the target ratios
  nfs-soak [NAME…]           the NFS-over-RDMA scripts (qemu/tests/nfs-*.sh) at full size: RSIW_NFS_MB
                             (default 64) MiB per file, 256 MiB written and read back per pairing
  soak                       RSIW_SOAK_MIN (default 60) minutes of mixed, verified traffic on rsiw0
                             (qemu/tests/soak-rsiw.sh); report in target/soak/ (CSV, SVG curves)
  soak faults                the fault scripts (qemu/tests/fault-*.sh) in their long versions:
                             RSIW_RMMOD_LOOPS=100 rmmod rounds, RSIW_NOMEM_S=60 s memory-pressure phases,
                             RSIW_KILL_ROUNDS=200 rounds of traffic, kill -9, link delete, rmmod

options:
  --kernel 6.12|7.3|debian-7.3
                             kernel to build for and boot (default 6.12, the test kernel built
                             here; 7.3: the same test kernel from Debian 13's linux-source-7.3,
                             built in a trixie root; debian-7.3: Debian 13's own backports kernel
                             and modules, rsiw built against a tree made like its headers)
  --flavour debug|perf       6.12's and 7.3's flavour (default debug: KASAN, lockdep, kmemleak)
  --timeout SECONDS          VM timeout for `vm`/`run` (default 300)
  --seconds N                `fuzz`: run each target for N seconds
  --host-only / --vm-only    `test`: run only one half
  --marked                   `test --kernel K`: only the scripts whose `# rsiw-kernels:` names K
  -v, --verbose              `test`: stream every VM's console, not only its RSIW-TEST lines

environment: RSIW_CACHE (cache dir), RSIW_ACCEL=tcg|kvm (skip the KVM probe), RSIW_LLVM (default -14)";

/// Parsed command line.
struct Args {
    command: String,
    kernel: KernelLine,
    /// `--kernel` was on the command line (`test` then runs that kernel alone).
    kernel_given: bool,
    flavour: Flavour,
    /// `--flavour` was on the command line (`bench` defaults to perf otherwise).
    flavour_given: bool,
    script: Option<PathBuf>,
    timeout: u64,
    /// `--timeout` was on the command line.
    timeout_given: bool,
    seconds: u64,
    host_only: bool,
    vm_only: bool,
    /// `test --kernel K --marked`: only the scripts whose `# rsiw-kernels:` name K.
    marked: bool,
    verbose: bool,
    /// `nfs-soak`: scripts run under their `# rsiw-soak-timeout`.
    soak: bool,
    rest: Vec<String>,
}

/// The command line after the program's name. Hand-written: with pico-args it is as
/// long (its errors mapped back to these messages); clap would change `--help` and them.
fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Args> {
    let command = it.next().unwrap_or_else(|| "help".into());
    let mut a = Args {
        command,
        kernel: KernelLine::L6_12,
        kernel_given: false,
        flavour: Flavour::Debug,
        flavour_given: false,
        script: None,
        timeout: suite::DEFAULT_TIMEOUT,
        timeout_given: false,
        seconds: 60,
        host_only: false,
        vm_only: false,
        marked: false,
        verbose: false,
        soak: false,
        rest: Vec::new(),
    };
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .with_context(|| format!("{name} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--kernel" => {
                a.kernel = KernelLine::parse(&value("--kernel")?)?;
                a.kernel_given = true;
            }
            "--flavour" => {
                a.flavour = Flavour::parse(&value("--flavour")?)?;
                a.flavour_given = true;
            }
            "--script" => a.script = Some(PathBuf::from(value("--script")?)),
            "--timeout" => {
                a.timeout = value("--timeout")?
                    .parse()
                    .context("--timeout takes whole seconds")?;
                a.timeout_given = true;
            }
            "--seconds" => {
                a.seconds = value("--seconds")?
                    .parse()
                    .context("--seconds takes whole seconds")?
            }
            "--host-only" => a.host_only = true,
            "--vm-only" => a.vm_only = true,
            "--marked" => a.marked = true,
            "-v" | "--verbose" => a.verbose = true,
            s if s.starts_with('-') => bail!("unknown option `{s}`\n{USAGE}"),
            s => a.rest.push(s.to_string()),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> Result<ExitCode> {
    let a = parse_args(std::env::args().skip(1))?;
    let ctx = Ctx::new(a.kernel, a.flavour);
    match a.command.as_str() {
        "setup" => {
            setup::ensure()?;
            eprintln!("setup: everything is installed");
            Ok(ExitCode::SUCCESS)
        }
        "build" => build(&ctx),
        "run" => {
            let script = ctx.root.join("qemu/run.sh");
            vm_script(&ctx, &script, a.timeout, Echo::FromInit)
        }
        "vm" => {
            let script = a.script.clone().context("`vm` needs --script FILE")?;
            vm_script(&ctx, &script, a.timeout, Echo::All)
        }
        "test" => test(&ctx, &a),
        "fuzz" => fuzz::run(&ctx, &a.rest, a.seconds),
        "package" => package::run(&ctx),
        "nfs-soak" => nfs_soak(&ctx, &a),
        "soak" if a.rest.iter().any(|r| r == "faults") => fault_soak(&ctx, &a),
        "soak" => soak::run(&ctx, a.timeout_given.then_some(a.timeout)),
        // Benchmarks run on the perf flavour (no KASAN/lockdep) unless asked otherwise.
        "bench" => bench::run(
            &Ctx::new(
                a.kernel,
                if a.flavour_given {
                    a.flavour
                } else {
                    Flavour::Perf
                },
            ),
            a.timeout,
        ),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        other => bail!("unknown command `{other}`\n{USAGE}"),
    }
}

fn build(ctx: &Ctx) -> Result<ExitCode> {
    setup::ensure()?;
    let art = artifacts::build(ctx)?;
    println!("kernel:    {}", art.kernel.bzimage.display());
    println!("KDIR:      {}", art.kernel.kdir.display());
    let mut failed = false;
    for (what, part) in [
        ("rsiw.ko", &art.parts.rsiw_ko),
        ("provider", &art.parts.provider),
    ] {
        match part {
            module::Part::Built(p) => println!("{what:<10} {}", p.display()),
            module::Part::Absent(why) => println!("{what:<10} skipped: {why}"),
            module::Part::Missing(why) => {
                println!("{what:<10} FAILED: {why}");
                failed = true;
            }
        }
    }
    for k in &art.parts.test_kmods {
        println!("test kmod: {}", k.display());
    }
    println!("image:     {}", art.initramfs.display());
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Boot one VM running `script`, streaming its console; exit with the script's status
/// (1 if it passed but the run had a splat or did not finish, 124 on timeout).
fn vm_script(ctx: &Ctx, script: &std::path::Path, timeout: u64, echo: Echo) -> Result<ExitCode> {
    setup::ensure()?;
    let script = std::fs::canonicalize(script)
        .with_context(|| format!("script {} not found", script.display()))?;
    let art = artifacts::build(ctx)?;
    let accel = accel::choose(ctx, &art.kernel.bzimage)?;
    let mut s = suite::Script::load(&script)?;
    s.timeout = timeout;
    s.vms = 1;
    s.name = format!("vm-{}", s.name);
    let boot = suite::Boot {
        ctx,
        bzimage: &art.kernel.bzimage,
        initramfs: &art.initramfs,
        accel,
    };
    let runs = suite::boot(&boot, &s, echo)?;
    let run = runs.first().context("no VM ran")?;
    let o = outcome::analyze(&run.console, run.timed_out);
    eprintln!(
        "vm: console log {} ({:.1} s, {:?})",
        vm::show(&ctx.root, &run.log),
        run.wall.as_secs_f64(),
        accel
    );
    let code = o.script_exit.unwrap_or(1);
    if let Some(p) = o.run_problem() {
        eprintln!("vm: run FAILED: {p}");
        suite::print_splats(&ctx.root, &run.console, &run.log);
        let code = if o.timed_out {
            124
        } else if code == 0 {
            1
        } else {
            code
        };
        return Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)));
    }
    eprintln!("vm: script exit status {code}");
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

fn test(ctx: &Ctx, a: &Args) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    if a.marked && !a.kernel_given {
        bail!("--marked selects the scripts marked for the kernel of --kernel: name one (`--kernel 7.3 --marked`)");
    }
    setup::ensure()?;
    let mut passed = 0usize;
    let mut failed: Vec<String> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    // With both halves, the host tests run beside the VMs' build and the VM suite,
    // under SCHED_IDLE (their output comes at the end): they are not on the way to the
    // first VM, and take the CPU time the kernel build's serial steps and the two-VM
    // scripts leave.
    let background = !a.vm_only && !a.host_only;
    // Without --kernel, the scripts marked `# rsiw-kernels: K` run on K as well, after
    // the default kernel's suite; K's kernel is made ready beside that suite, at idle
    // priority (for Debian's, the tree that the packages' install test starts from).
    let others: Vec<Ctx> = if a.kernel_given || a.host_only {
        Vec::new()
    } else {
        // The 7.3 test kernel is not in this list: its build (about 15 minutes on two
        // cores) does not fit beside the suite in CI's hour on a fresh machine; its
        // marked scripts run with `--kernel 7.3 --marked` (Documentation/kernels.md).
        [KernelLine::Debian7_3]
            .into_iter()
            .map(|k| Ctx::new(k, ctx.flavour))
            .collect()
    };
    std::thread::scope(|sc| {
        let host = (!a.vm_only).then(|| sc.spawn(|| host_half(ctx, background)));
        let ready: Vec<_> = others
            .iter()
            .map(|o| sc.spawn(move || kernel::ensure_idle(o, true)))
            .collect();
        if !a.host_only {
            let marked = a.marked.then_some(ctx.kernel);
            match artifacts::build(ctx).and_then(|art| vm_suite(ctx, a, &art, marked)) {
                Ok((p, f, s)) => {
                    passed += p;
                    failed.extend(f);
                    skipped.extend(s);
                }
                Err(e) => failed.push(format!("vm suite: could not run: {e:#}")),
            }
        }
        for (o, r) in others.iter().zip(ready) {
            let r = r
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the kernel build's thread panicked")));
            match r
                .and_then(|_| artifacts::build(o))
                .and_then(|art| vm_suite(o, a, &art, Some(o.kernel)))
            {
                Ok((p, f, s)) => {
                    passed += p;
                    failed.extend(f);
                    skipped.extend(s);
                }
                Err(e) => failed.push(format!(
                    "vm suite on {}: could not run: {e:#}",
                    o.kernel.name()
                )),
            }
        }
        if let Some(h) = host {
            let (t, out) = h.join().unwrap_or_else(|_| {
                let mut t = hosttests::Tally::default();
                t.failed
                    .push("host: the host tests' thread panicked".into());
                (t, String::new())
            });
            if background {
                eprintln!("test: the host tests' output, kept while the VMs ran:");
                print!("{out}");
                eprintln!(
                    "test: host tests and rustfmt: {} passed; {} failed",
                    t.passed,
                    t.failed.len()
                );
            }
            passed += t.passed;
            failed.extend(t.failed);
        }
    });
    if !failed.is_empty() {
        eprintln!("\nfailed:");
        for f in &failed {
            eprintln!("  {f}");
        }
    }
    if !skipped.is_empty() {
        eprintln!("\nskipped (not counted as passed):");
        for s in &skipped {
            eprintln!("  {s}");
        }
    }
    eprintln!("test: {:.0} s wall", started.elapsed().as_secs_f64());
    if skipped.is_empty() {
        println!("{passed} passed, {} failed", failed.len());
    } else {
        println!(
            "{passed} passed, {} failed, {} skipped",
            failed.len(),
            skipped.len()
        );
    }
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The host half: `cargo test --workspace` and the formatting check, counted together;
/// with `background`, the tests' output is returned, not passed through.
fn host_half(ctx: &Ctx, background: bool) -> (hosttests::Tally, String) {
    let (mut t, out) = match hosttests::run(ctx, background) {
        Ok(r) => r,
        Err(e) => {
            let mut t = hosttests::Tally::default();
            t.failed.push(format!(
                "host: `cargo test --workspace` could not run: {e:#}"
            ));
            (t, String::new())
        }
    };
    if !background {
        eprintln!("test: host: {} passed; {} failed", t.passed, t.failed.len());
    }
    let f = hosttests::fmt_check(ctx);
    eprintln!(
        "test: rustfmt: {} passed; {} failed",
        f.passed,
        f.failed.len()
    );
    t.passed += f.passed;
    t.failed.extend(f.failed);
    (t, out)
}

/// What the VM suite counted: passes, and the failed and skipped cases with their reasons.
type SuiteCounts = (usize, Vec<String>, Vec<String>);

/// Sets each of `vars` to its long value unless the environment has it, and says which.
fn soak_env(what: &str, vars: &[(&str, &str)]) {
    for &(var, long) in vars {
        if std::env::var_os(var).is_none() {
            std::env::set_var(var, long);
        }
        eprintln!("{what}: {var}={}", std::env::var(var).unwrap_or_default());
    }
}

/// The VM scripts named by `rest`, each under its `# rsiw-soak-timeout`.
fn soak_scripts(ctx: &Ctx, a: &Args, rest: Vec<String>) -> Result<ExitCode> {
    let a = Args {
        command: "test".into(),
        kernel: a.kernel,
        // The long versions run on the one kernel asked for (by default 6.12).
        kernel_given: true,
        flavour: a.flavour,
        flavour_given: a.flavour_given,
        script: None,
        timeout: a.timeout,
        timeout_given: a.timeout_given,
        seconds: a.seconds,
        host_only: false,
        vm_only: true,
        marked: false,
        verbose: a.verbose,
        soak: true,
        rest,
    };
    test(ctx, &a)
}

/// `cargo xtask soak faults`: the `fault-*` scripts with their long settings (unless set
/// in the environment), each under its `# rsiw-soak-timeout`.
fn fault_soak(ctx: &Ctx, a: &Args) -> Result<ExitCode> {
    soak_env(
        "soak faults",
        &[
            ("RSIW_RMMOD_LOOPS", "100"),
            ("RSIW_NOMEM_S", "60"),
            ("RSIW_KILL_ROUNDS", "200"),
        ],
    );
    soak_scripts(ctx, a, vec!["fault-".into()])
}

/// `cargo xtask nfs-soak`: the NFS scripts with RSIW_NFS_MB MiB per file (default 64:
/// each pairing writes and reads back 2 versions × (64 MiB buffered + 64 MiB O_DIRECT)),
/// each under its `# rsiw-soak-timeout`.
fn nfs_soak(ctx: &Ctx, a: &Args) -> Result<ExitCode> {
    soak_env("nfs-soak", &[("RSIW_NFS_MB", "64")]);
    let rest = if a.rest.is_empty() {
        vec!["nfs-".into()]
    } else {
        a.rest.iter().map(|n| format!("nfs-{n}")).collect()
    };
    soak_scripts(ctx, a, rest)
}

/// The VM suite on `ctx`'s kernel; with `marked`, only the scripts whose
/// `# rsiw-kernels:` name that kernel.
fn vm_suite(
    ctx: &Ctx,
    a: &Args,
    art: &artifacts::Artifacts,
    marked: Option<KernelLine>,
) -> Result<SuiteCounts> {
    let mut scripts = suite::discover(ctx, &a.rest)?;
    if let Some(k) = marked {
        scripts.retain(|s| s.kernels.iter().any(|n| n == k.name()));
    }
    // `# rsiw-requires: siw` on a kernel without siw (Debian's builds none).
    let mut skipped = Vec::<String>::new();
    // `# rsiw-image: package` (the packages' install) on a kernel other than Debian's.
    if ctx.kernel != KernelLine::Debian7_3 {
        scripts.retain(|s| {
            let keep = !s.image.iter().any(|x| x == "package");
            if !keep {
                skipped.push(format!("{}: not run: {}", s.name, package::NOT_HERE));
            }
            keep
        });
    }
    if !art.kernel.has_module("siw") {
        scripts.retain(|s| {
            let keep = !s.requires.iter().any(|r| r == "siw");
            if !keep {
                skipped.push(format!(
                    "{}: not run: the {} kernel has no siw",
                    s.name,
                    ctx.kernel_tag()
                ));
            }
            keep
        });
    }
    if a.soak {
        for s in &mut scripts {
            s.timeout = s.soak_timeout.unwrap_or(s.timeout);
        }
    }
    let accel = accel::choose(ctx, &art.kernel.bzimage)?;
    let boot = suite::Boot {
        ctx,
        bzimage: &art.kernel.bzimage,
        initramfs: &art.initramfs,
        accel,
    };
    let echo = if a.verbose { Echo::All } else { Echo::Cases };
    let (passed, failed) = (0, Vec::new());
    // Two-VM scripts use both host CPUs (and their timing checks assume so): they run
    // one at a time. Single-VM scripts run `jobs` at a time, longest limit first, each
    // reported in one piece when it ends.
    // With -v every console line is echoed: one VM at a time keeps them readable.
    let jobs = if a.verbose { 1 } else { vm_jobs()? };
    // Scripts of one `rsiw-group` share a VM (suite::Unit).
    let units = suite::units(&scripts)?;
    let (mut alone, mut shared): (Vec<&suite::Unit>, Vec<&suite::Unit>) =
        units.iter().partition(|u| u.vms() > 1 || jobs == 1);
    shared.sort_by_key(|u| std::cmp::Reverse(u.timeout()));
    alone.sort_by(|a, b| a.name.cmp(&b.name));
    let counts = std::sync::Mutex::new((passed, failed, skipped));
    let run = |u: &suite::Unit, echo: Echo| {
        let vms = u.vms();
        let what = if u.scripts.len() > 1 || u.scripts[0].group.is_some() {
            let names: Vec<&str> = u.scripts.iter().map(|s| s.name.as_str()).collect();
            format!("group {}: {}", u.name, names.join(" "))
        } else {
            u.name.clone()
        };
        eprintln!(
            "test: vm: {what} ({vms} VM{}, {accel:?}, {} kernel)",
            if vms > 1 { "s" } else { "" },
            ctx.kernel_tag()
        );
        let runs = suite::boot_unit(&boot, u, echo);
        let mut c = counts.lock().unwrap_or_else(|p| p.into_inner());
        let (passed, failed, skipped) = &mut *c;
        match runs {
            Ok(runs) => {
                for (s, views) in suite::per_script(u, &runs) {
                    report_script(ctx, s, &views, passed, failed, skipped);
                }
                for run in &runs {
                    eprintln!(
                        "test: vm: {} took {:.1} s",
                        vm::show(&ctx.root, &run.log),
                        run.wall.as_secs_f64()
                    );
                }
            }
            Err(e) => {
                for s in &u.scripts {
                    failed.push(format!("{}: could not boot: {e:#}", s.name));
                }
            }
        }
    };
    // The module's clippy build runs beside the VMs under SCHED_IDLE: it uses the CPU
    // time they leave (the two-VM scripts leave about a third of it). It lints the
    // source once, against the default kernel (the host's toolchain has clippy).
    let lint_here = !ctx.kernel.in_debian_root();
    std::thread::scope(|sc| {
        let lint = lint_here.then(|| sc.spawn(|| lint::clippy(ctx, &art.kernel, true)));
        run_units(shared, alone, jobs, echo, &run);
        let Some(lint) = lint else { return };
        let l = lint.join().unwrap_or_else(|_| {
            let mut t = hosttests::Tally::default();
            t.failed.push("module: clippy: its thread panicked".into());
            t
        });
        eprintln!(
            "test: module clippy: {} passed; {} failed",
            l.passed,
            l.failed.len()
        );
        let mut c = counts.lock().unwrap_or_else(|p| p.into_inner());
        c.0 += l.passed;
        c.1.extend(l.failed);
    });
    let (passed, failed, skipped) = counts.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok((passed, failed, skipped))
}

/// The single-VM units `shared`, `jobs` at a time, longest limit first, then the
/// multi-VM units `alone` one at a time; `run` boots, judges and reports one.
fn run_units<'a, F>(
    shared: Vec<&'a suite::Unit<'a>>,
    alone: Vec<&'a suite::Unit<'a>>,
    jobs: usize,
    echo: Echo,
    run: &F,
) where
    F: Fn(&suite::Unit, Echo) + Sync,
{
    if !shared.is_empty() {
        eprintln!(
            "test: vm: {} single-VM runs ({} scripts), {jobs} at a time (RSIW_VM_JOBS)",
            shared.len(),
            shared.iter().map(|u| u.scripts.len()).sum::<usize>()
        );
        let queue = std::sync::Mutex::new(shared.into_iter());
        std::thread::scope(|sc| {
            for _ in 0..jobs {
                sc.spawn(|| loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some(s) = next else { break };
                    run(s, Echo::Silent);
                });
            }
        });
    }
    for s in alone {
        run(s, echo);
    }
}

/// How many single-VM scripts run at once: `RSIW_VM_JOBS` (default 2; 1 runs the
/// suite one VM at a time, each script's cases echoed as they pass).
fn vm_jobs() -> Result<usize> {
    match std::env::var("RSIW_VM_JOBS") {
        Err(_) => Ok(2),
        Ok(v) => match v.parse::<usize>() {
            Ok(n @ 1..=8) => Ok(n),
            _ => bail!("RSIW_VM_JOBS={v}: give a number of VMs from 1 to 8"),
        },
    }
}

/// Judges one script's runs, prints its results and adds them to the counts.
fn report_script(
    ctx: &Ctx,
    s: &suite::Script,
    runs: &[vm::Run],
    passed: &mut usize,
    failed: &mut Vec<String>,
    skipped: &mut Vec<String>,
) {
    let mut any_failed = false;
    for r in suite::judge(&ctx.root, s, runs) {
        match (r.failure, r.skipped) {
            (Some(why), _) => {
                println!("FAIL {}: {why}", r.name);
                failed.push(format!("{}: {why}", r.name));
                any_failed = true;
            }
            (None, Some(why)) => {
                println!("SKIP {}: {why}", r.name);
                skipped.push(format!("{}: {why}", r.name));
            }
            (None, None) => {
                println!("PASS {}", r.name);
                *passed += 1;
            }
        }
    }
    for run in runs {
        if any_failed {
            eprintln!("  console log: {}", vm::show(&ctx.root, &run.log));
        }
        if s.expect_splat.is_none() {
            suite::print_splats(&ctx.root, &run.console, &run.log);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args> {
        parse_args(line.split_whitespace().map(String::from))
    }

    #[test]
    fn options_are_taken_wherever_they_stand() {
        let a = parse("test basic-rsiw --vm-only -v --kernel 7.3 --marked siw-").unwrap();
        assert_eq!(a.command, "test");
        assert_eq!(a.rest, ["basic-rsiw", "siw-"]);
        assert!(a.vm_only && a.verbose && a.marked && !a.host_only);
        assert!(a.kernel == KernelLine::L7_3 && a.kernel_given);
        assert!(a.flavour == Flavour::Debug && !a.flavour_given);
        assert_eq!(
            (a.timeout, a.timeout_given),
            (suite::DEFAULT_TIMEOUT, false)
        );
        let v = parse("vm --timeout 900 --script x.sh --flavour perf --seconds 5").unwrap();
        assert_eq!(v.script, Some(PathBuf::from("x.sh")));
        assert_eq!((v.timeout, v.timeout_given, v.seconds), (900, true, 5));
        assert!(v.flavour == Flavour::Perf && v.flavour_given && v.rest.is_empty());
        assert_eq!(parse("").unwrap().command, "help");
    }

    #[test]
    fn a_bad_option_names_itself() {
        let e = |line| format!("{:#}", parse(line).err().expect(line));
        assert!(e("test --kernel").starts_with("--kernel needs a value\nusage:"));
        assert!(e("test --kernel 7.4").starts_with("unknown kernel `7.4`"));
        assert!(e("test --timeout x").starts_with("--timeout takes whole seconds: invalid"));
        assert!(e("test --vm-onyl").starts_with("unknown option `--vm-onyl`\nusage:"));
    }
}
