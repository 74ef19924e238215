// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The VM suite: every `qemu/tests/*.sh` boots its own VM(s); cases and splats become results.

use crate::ctx::{Ctx, Flavour};
use crate::image;
use crate::outcome::{self, Outcome};
use crate::splat;
use crate::vm::{self, Accel, Echo, Run, SocketNic, Vm};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default per-VM timeout; a script can change it with `# rsiw-timeout: SECONDS`.
pub const DEFAULT_TIMEOUT: u64 = 300;

/// A test script and what its header comments ask for.
pub struct Script {
    /// File name without `.sh`; prefixes its case names and names its log dir.
    pub name: String,
    /// The script file.
    pub path: PathBuf,
    /// `# rsiw-vms: 2` boots two VMs joined by a socket network (eth1).
    pub vms: u8,
    /// `# rsiw-expect-splat: TEXT`: a meta-test that passes only if the harness sees a
    /// splat whose first line contains TEXT (`*` in TEXT matches anything).
    pub expect_splat: Option<String>,
    /// `# rsiw-timeout: SECONDS`.
    pub timeout: u64,
    /// `# rsiw-soak-timeout: SECONDS`: the timeout under `cargo xtask nfs-soak`.
    pub soak_timeout: Option<u64>,
    /// `# rsiw-flavours: debug …`: the kernel flavours the script applies to (all if unset).
    pub flavours: Option<Vec<String>>,
    /// `# rsiw-kernels: 7.3 debian-7.3 …`: the kernels other than the default that the
    /// script is run on as well: Debian's by a plain `cargo xtask test`, any K by
    /// `cargo xtask test --kernel K --marked` (`--kernel K` alone runs every script).
    pub kernels: Vec<String>,
    /// `# rsiw-requires: datapath …`: what the device under test must offer, exported to
    /// the VM as `RSIW_REQUIRES`; `dev_up` (qemu/lib.sh) checks it and reports the
    /// script's cases as skipped, with the reason, when it is missing.
    pub requires: Vec<String>,
    /// `# rsiw-image: pyverbs|package`: image parts only some scripts need, appended to
    /// the base image for their runs ([`image::part`]).
    pub image: Vec<String>,
    /// `# rsiw-group: NAME`: scripts of one group run one after another in one VM, or
    /// one pair of VMs (one boot, one end-of-run check), each still judged and reported
    /// as itself ([`Unit`]).
    pub group: Option<String>,
}

impl Script {
    /// Read `path` and its `# rsiw-…:` headers.
    pub fn load(path: &Path) -> Result<Script> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let name = path
            .file_stem()
            .context("script has no name")?
            .to_string_lossy()
            .into_owned();
        let mut s = Script {
            name,
            path: path.to_path_buf(),
            vms: 1,
            expect_splat: None,
            timeout: DEFAULT_TIMEOUT,
            soak_timeout: None,
            flavours: None,
            kernels: Vec::new(),
            requires: Vec::new(),
            image: Vec::new(),
            group: None,
        };
        for line in text
            .lines()
            .take_while(|l| l.starts_with('#') || l.trim().is_empty())
        {
            let Some((k, v)) = line.trim_start_matches('#').trim().split_once(':') else {
                continue;
            };
            let v = v.trim();
            match k.trim() {
                "rsiw-vms" => {
                    s.vms = v
                        .parse()
                        .with_context(|| format!("{}: bad rsiw-vms `{v}`", path.display()))?
                }
                "rsiw-expect-splat" => s.expect_splat = Some(v.to_string()),
                "rsiw-requires" => s.requires.extend(v.split_whitespace().map(String::from)),
                "rsiw-kernels" => s.kernels.extend(v.split_whitespace().map(String::from)),
                "rsiw-image" => s.image.extend(v.split_whitespace().map(String::from)),
                "rsiw-group" => s.group = Some(v.to_string()),
                "rsiw-flavours" => {
                    s.flavours = Some(v.split_whitespace().map(String::from).collect())
                }
                "rsiw-soak-timeout" => {
                    s.soak_timeout = Some(v.parse().with_context(|| {
                        format!("{}: bad rsiw-soak-timeout `{v}`", path.display())
                    })?)
                }
                "rsiw-timeout" => {
                    s.timeout = v
                        .parse()
                        .with_context(|| format!("{}: bad rsiw-timeout `{v}`", path.display()))?
                }
                _ => {}
            }
        }
        if !(1..=2).contains(&s.vms) {
            anyhow::bail!("{}: rsiw-vms must be 1 or 2", path.display());
        }
        if let Some(x) = s.image.iter().find(|x| !image::PARTS.contains(&x.as_str())) {
            anyhow::bail!("{}: unknown rsiw-image part `{x}`", path.display());
        }
        if s.group.is_some() && s.expect_splat.is_some() {
            anyhow::bail!(
                "{}: rsiw-group is for scripts that expect no splat",
                path.display()
            );
        }
        Ok(s)
    }
}

/// What boots together: one script, or the scripts of one `rsiw-group` in name order.
/// A group shares the boot and the end-of-run checks (kmemleak); before each of its
/// scripts but the first, the init kills what the one before left running, empties
/// /tmp and clears the kernel's log buffer (`qemu/init`); the two VMs of a two-VM
/// group then set eth1 back as the boot left it and meet there, so that both start
/// the script together. A splat is charged to the script whose part of the console
/// shows it, a leak or a boot splat to every script of the group.
pub struct Unit<'a> {
    /// The group's name, or the script's.
    pub name: String,
    /// In run order.
    pub scripts: Vec<&'a Script>,
}

impl<'a> Unit<'a> {
    /// A unit of one script.
    pub fn one(s: &'a Script) -> Unit<'a> {
        Unit {
            name: s.name.clone(),
            scripts: vec![s],
        }
    }

    /// The VMs it needs (a group's scripts all need as many).
    pub fn vms(&self) -> u8 {
        self.scripts[0].vms
    }

    /// The VM's time limit: its scripts' limits added up.
    pub fn timeout(&self) -> u64 {
        self.scripts.iter().map(|s| s.timeout).sum()
    }
}

/// `scripts` as units: each group's scripts together (in the order given), every other
/// script alone. A group's scripts must ask for the same image parts and VMs.
pub fn units(scripts: &[Script]) -> Result<Vec<Unit<'_>>> {
    let mut out: Vec<Unit> = Vec::new();
    for s in scripts {
        let Some(g) = &s.group else {
            out.push(Unit::one(s));
            continue;
        };
        match out
            .iter_mut()
            .find(|u| u.scripts[0].group.as_ref() == Some(g))
        {
            Some(u) if u.scripts[0].image != s.image || u.scripts[0].vms != s.vms => {
                anyhow::bail!(
                    "{} and {} are in group {g} but ask for other image parts or VMs",
                    u.scripts[0].name,
                    s.name
                )
            }
            Some(u) => u.scripts.push(s),
            None => out.push(Unit {
                name: g.clone(),
                scripts: vec![s],
            }),
        }
    }
    Ok(out)
}

/// The suite's scripts, sorted, whose names contain one of `filters` (all if none).
pub fn discover(ctx: &Ctx, filters: &[String]) -> Result<Vec<Script>> {
    let mut paths = Vec::new();
    // `qemu/manual/`: scripts kept out of the suite (a known failure, see
    // testing.md); they run only when named in full.
    for sub in ["qemu/tests", "qemu/manual"] {
        let dir = ctx.root.join(sub);
        if sub == "qemu/manual" && !dir.is_dir() {
            continue;
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "sh"))
            .collect();
        found.sort();
        paths.extend(found.into_iter().map(|p| (sub == "qemu/manual", p)));
    }
    let mut out = Vec::new();
    for (manual, p) in paths {
        let s = Script::load(&p)?;
        if manual && !filters.contains(&s.name) {
            continue;
        }
        if !filters.is_empty() && !filters.iter().any(|f| s.name.contains(f.as_str())) {
            continue;
        }
        match &s.flavours {
            // A flavour names the flavour of 6.12 and 7.3, or Debian's kernel.
            Some(f)
                if !f.iter().any(|f| {
                    f == ctx.kernel_tag() || (ctx.kernel.has_flavours() && f == ctx.flavour.name())
                }) =>
            {
                eprintln!(
                    "test: vm: {}: skipped, only for the {} flavour(s)",
                    s.name,
                    f.join(" ")
                )
            }
            _ => out.push(s),
        }
    }
    Ok(out)
}

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

/// The init's line that starts a script's part of a group's console.
const SCRIPT_BEGIN: &str = "RSIW-VM: script begin ";
/// The init's line that ends the last script's part (the end-of-run checks follow).
const CHECKS: &str = "RSIW-VM: checks";

/// Each script of `u` with its own view of `runs`: for a group, each VM's console cut
/// to the boot, the script's part and the end-of-run checks, so that each script is
/// judged as if it had run alone. A script the VM never reached gets a console that
/// says so (`RSIW-VM: unfinished:`), and so do the ones before it when the end-of-run
/// checks never ran.
pub fn per_script<'a>(u: &Unit<'a>, runs: &[Run]) -> Vec<(&'a Script, Vec<Run>)> {
    if u.scripts.len() == 1 {
        return vec![(u.scripts[0], runs.iter().map(copy_run).collect())];
    }
    let mut out: Vec<(&Script, Vec<Run>)> = u.scripts.iter().map(|s| (*s, Vec::new())).collect();
    for run in runs {
        let lines: Vec<&str> = run.console.lines().collect();
        let starts: Vec<(usize, &str)> = lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                l.find(SCRIPT_BEGIN)
                    .map(|at| (i, l[at + SCRIPT_BEGIN.len()..].trim()))
            })
            .collect();
        let checks = lines.iter().position(|l| l.contains(CHECKS));
        let prefix_end = starts.first().map_or(lines.len(), |&(i, _)| i);
        let tail_start = checks.unwrap_or(lines.len());
        let running = starts.last().map(|&(_, n)| n.to_string());
        for (s, views) in out.iter_mut() {
            let mut text: Vec<&str> = lines[..prefix_end].to_vec();
            let part = starts.iter().position(|&(_, n)| n == s.name);
            let mut note = None;
            let mut timed_out = false;
            match part {
                Some(k) => {
                    let begin = starts[k].0;
                    let end = starts.get(k + 1).map_or(tail_start, |&(i, _)| i).max(begin);
                    text.extend_from_slice(&lines[begin..end]);
                    if checks.is_some() {
                        text.extend_from_slice(&lines[tail_start..]);
                    } else if starts.len() == k + 1 {
                        timed_out = run.timed_out;
                    } else {
                        note = Some(format!(
                            "the end-of-run checks did not run: group {}'s VM stopped during {}",
                            u.name,
                            running.as_deref().unwrap_or("?")
                        ));
                    }
                }
                None => {
                    note = Some(format!(
                        "not run: group {}'s VM stopped during {} (timed out: {})",
                        u.name,
                        running.as_deref().unwrap_or("its boot"),
                        run.timed_out
                    ))
                }
            }
            let mut console = text.join("\n");
            console.push('\n');
            if let Some(n) = note {
                console += &format!("RSIW-VM: unfinished: {n}\n");
            }
            views.push(Run {
                console,
                timed_out,
                booted: run.booted,
                log: run.log.clone(),
                wall: run.wall,
            });
        }
    }
    out
}

fn copy_run(r: &Run) -> Run {
    Run {
        console: r.console.clone(),
        timed_out: r.timed_out,
        booted: r.booted,
        log: r.log.clone(),
        wall: r.wall,
    }
}

/// One counted result.
pub struct CaseResult {
    /// `<script>/<case>` (with `[vmN]` when the script runs on two VMs).
    pub name: String,
    /// Why it failed, or `None` if it passed or was skipped.
    pub failure: Option<String>,
    /// Why it was skipped (`RSIW-TEST SKIP`), or `None` if it ran.
    pub skipped: Option<String>,
}

/// Turn a script's runs into counted results: its `RSIW-TEST` cases, plus one case
/// per VM for the run itself (booted, finished, no splat — or, for a splat meta-test,
/// the splat it expects was seen), plus a failure if the script exited non-zero
/// without reporting a failed case.
pub fn judge(root: &Path, s: &Script, runs: &[Run]) -> Vec<CaseResult> {
    let mut out = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let tag = if runs.len() > 1 {
            format!("{}[vm{i}]", s.name)
        } else {
            s.name.clone()
        };
        let o = outcome::analyze(&run.console, run.timed_out);
        for c in &o.cases {
            out.push(CaseResult {
                name: format!("{tag}/{}", c.name),
                failure: (!c.pass && !c.skipped).then(|| c.why.clone()),
                skipped: c.skipped.then(|| c.why.clone()),
            });
        }
        // Host-side post-check of packet captures the script printed (RSIW-PCAP lines).
        let dir = run.log.parent().unwrap_or(root);
        for (name, r) in crate::pcap::check_console(&run.console, dir) {
            if let Ok(summary) = &r {
                eprintln!("{tag}/{name}: {summary}");
            }
            out.push(CaseResult {
                name: format!("{tag}/{name}"),
                failure: r.err().map(|e| format!("{e:#}")),
                skipped: None,
            });
        }
        let (name, failure) = match &s.expect_splat {
            None => (
                format!("{tag}: clean run (finished, no kernel splat)"),
                o.run_problem(),
            ),
            Some(needle) => (
                format!("{tag}: harness fails a run with a splat containing `{needle}`"),
                expect_splat(&o, needle),
            ),
        };
        let log_hint = failure
            .as_ref()
            .map(|f| format!("{f} [log: {}]", vm::show(root, &run.log)));
        out.push(CaseResult {
            name,
            failure: log_hint,
            skipped: None,
        });
        let reported_fail = o.cases.iter().any(|c| !c.pass);
        if let Some(code) = o.script_exit.filter(|&c| c != 0 && !reported_fail) {
            out.push(CaseResult {
                name: format!("{tag}: script exit status"),
                failure: Some(format!("exited {code} without reporting a failed case")),
                skipped: None,
            });
        }
        if o.booted && o.script_exit.is_none() && o.done {
            out.push(CaseResult {
                name: format!("{tag}: script exit status"),
                failure: Some("no exit sentinel".into()),
                skipped: None,
            });
        }
    }
    out
}

/// Print the first splat lines of a run that had any (the full log is on disk).
pub fn print_splats(root: &Path, console: &str, log: &Path) {
    let lines: Vec<&str> = console.lines().collect();
    let found = splat::find(&lines);
    if let Some(first) = found.first() {
        eprintln!(
            "  {} splat line(s) in {}; first:",
            found.len(),
            vm::show(root, log)
        );
        for l in splat::excerpt(&lines, first, 12) {
            eprintln!("    {l}");
        }
    }
}

fn expect_splat(o: &Outcome, needle: &str) -> Option<String> {
    if !o.booted || !o.done {
        return Some(format!(
            "the run did not finish: {}",
            o.run_problem().unwrap_or_default()
        ));
    }
    let problem = o.run_problem();
    let seen = o.splats.iter().any(|s| glob_contains(&s.text, needle));
    match (problem, seen) {
        (Some(p), true) if p.starts_with("kernel splat") => None,
        (_, false) if o.splats.is_empty() => {
            Some("no splat was detected: the harness would have passed this run".into())
        }
        _ => Some(format!(
            "splats seen, none containing `{needle}`: {}",
            o.splats[0].text
        )),
    }
}

/// Whether `text` contains `pattern`, where `*` in the pattern matches any run of text.
fn glob_contains(text: &str, pattern: &str) -> bool {
    let mut rest = text;
    for part in pattern.split('*').filter(|p| !p.is_empty()) {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(console: &str) -> Run {
        Run {
            console: console.into(),
            timed_out: false,
            booted: true,
            log: "console.log".into(),
            wall: Duration::ZERO,
        }
    }

    fn script(expect: Option<&str>) -> Script {
        Script {
            name: "t".into(),
            path: "t.sh".into(),
            vms: 1,
            expect_splat: expect.map(String::from),
            timeout: 1,
            soak_timeout: None,
            flavours: None,
            kernels: Vec::new(),
            requires: Vec::new(),
            image: Vec::new(),
            group: None,
        }
    }

    #[test]
    fn clean_run_counts_cases_plus_run_case() {
        let r = run("RSIW-VM: boot\nRSIW-TEST PASS a\nRSIW-VM: script exit=0\nRSIW-VM: done\n");
        let j = judge(Path::new("."), &script(None), &[r]);
        assert_eq!(j.len(), 2);
        assert!(j.iter().all(|r| r.failure.is_none()));
        assert_eq!(j[0].name, "t/a");
    }

    #[test]
    fn warn_splat_fails_a_normal_script_and_passes_the_meta_test() {
        let log = "RSIW-VM: boot\n[ 4.0] WARNING: CPU: 1 PID: 70 at warn.c:9 init+0x1/0x2 [rsiw_test_warn]\nRSIW-VM: script exit=0\nRSIW-VM: done\n";
        let normal = judge(Path::new("."), &script(None), &[run(log)]);
        assert!(normal[0]
            .failure
            .as_deref()
            .unwrap()
            .contains("kernel splat"));
        let meta = judge(Path::new("."), &script(Some("rsiw_test_warn")), &[run(log)]);
        assert!(meta[0].failure.is_none());
        let wrong = judge(Path::new("."), &script(Some("other_module")), &[run(log)]);
        assert!(wrong[0].failure.is_some());
        let clean = judge(
            Path::new("."),
            &script(Some("rsiw_test_warn")),
            &[run("RSIW-VM: boot\nRSIW-VM: done\n")],
        );
        assert!(clean[0].failure.as_deref().unwrap().contains("no splat"));
    }

    fn script_named(name: &str) -> Script {
        let mut s = script(None);
        s.name = name.into();
        s.group = Some("g".into());
        s
    }

    fn group_run(console: &str, timed_out: bool) -> Run {
        let mut r = run(console);
        r.timed_out = timed_out;
        r
    }

    fn failures(s: &Script, views: &[Run]) -> Vec<String> {
        judge(Path::new("."), s, views)
            .into_iter()
            .filter_map(|r| r.failure.map(|f| format!("{}: {f}", r.name)))
            .collect()
    }

    /// A group named `g` of `scripts`, in that order.
    fn group<'a>(scripts: &[&'a Script]) -> Unit<'a> {
        Unit {
            name: "g".into(),
            scripts: scripts.to_vec(),
        }
    }

    const BOOT: &str = "[ 1.0] Linux version\nRSIW-VM: boot kernel=x run=g\n";

    #[test]
    fn a_group_is_judged_script_by_script() {
        let (a, b) = (script_named("a"), script_named("b"));
        let u = group(&[&a, &b]);
        let warn = "[ 4.0] WARNING: CPU: 1 PID: 70 at warn.c:9 init+0x1/0x2 [rsiw_test_warn]";
        let console = format!(
            "{BOOT}RSIW-VM: script begin a\nRSIW-TEST PASS one\n{warn}\nRSIW-VM: script exit=0\n\
             RSIW-VM: results begin\nRSIW-RESULT PASS one\nRSIW-VM: results end\n\
             RSIW-VM: script begin b\nRSIW-TEST PASS two\nRSIW-TEST PASS three\nRSIW-VM: script exit=0\n\
             RSIW-VM: results begin\nRSIW-RESULT PASS two\nRSIW-RESULT PASS three\nRSIW-VM: results end\n\
             RSIW-VM: checks\nRSIW-VM: kmemleak scanned\nRSIW-VM: done\n"
        );
        let views = per_script(&u, &[group_run(&console, false)]);
        assert_eq!(views.len(), 2);
        let ja = judge(Path::new("."), views[0].0, &views[0].1);
        let names: Vec<&str> = ja.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a/one", "a: clean run (finished, no kernel splat)"]);
        // The warning is in a's part: a fails, b does not.
        assert!(ja[1].failure.as_deref().unwrap().contains("kernel splat"));
        let jb = judge(Path::new("."), views[1].0, &views[1].1);
        assert_eq!(jb.len(), 3);
        assert!(
            jb.iter().all(|r| r.failure.is_none()),
            "{:?}",
            failures(&b, &views[1].1)
        );
    }

    #[test]
    fn a_leak_in_a_group_fails_every_script() {
        let (a, b) = (script_named("a"), script_named("b"));
        let u = group(&[&a, &b]);
        let console = format!(
            "{BOOT}RSIW-VM: script begin a\nRSIW-VM: script exit=0\n\
             RSIW-VM: script begin b\nRSIW-VM: script exit=0\nRSIW-VM: checks\n\
             unreferenced object 0xffff888003a1b2c0 (size 64):\n  comm \"insmod\", pid 80\n\
             RSIW-VM: kmemleak scanned\nRSIW-VM: done\n"
        );
        for (s, views) in per_script(&u, &[group_run(&console, false)]) {
            let f = failures(s, &views);
            assert_eq!(f.len(), 1, "{f:?}");
            assert!(f[0].contains("kernel splat"), "{f:?}");
        }
    }

    #[test]
    fn a_group_stopped_midway_says_what_did_not_run() {
        let (a, b, c) = (script_named("a"), script_named("b"), script_named("c"));
        let u = group(&[&a, &b, &c]);
        let console = format!(
            "{BOOT}RSIW-VM: script begin a\nRSIW-TEST PASS one\nRSIW-VM: script exit=0\n\
             RSIW-VM: script begin b\nRSIW-TEST PASS two\n"
        );
        let views = per_script(&u, &[group_run(&console, true)]);
        let fa = failures(views[0].0, &views[0].1);
        assert_eq!(fa.len(), 1, "{fa:?}");
        assert!(fa[0].contains("the end-of-run checks did not run") && fa[0].contains("during b"));
        let fb = failures(views[1].0, &views[1].1);
        assert_eq!(fb.len(), 1, "{fb:?}");
        assert!(fb[0].contains(": timed out"), "{fb:?}");
        let fc = failures(views[2].0, &views[2].1);
        assert_eq!(fc.len(), 1, "{fc:?}");
        assert!(
            fc[0].contains("not run: group g's VM stopped during b"),
            "{fc:?}"
        );
    }

    #[test]
    fn a_two_vm_group_is_judged_script_by_script_on_each_vm() {
        let (mut a, mut b) = (script_named("a"), script_named("b"));
        a.vms = 2;
        b.vms = 2;
        let u = group(&[&a, &b]);
        let vm = |b_case: &str| {
            group_run(
                &format!(
                    "{BOOT}RSIW-VM: script begin a\nRSIW-TEST PASS one\nRSIW-VM: script exit=0\n\
                     RSIW-VM: the two VMs met before script 2\n\
                     RSIW-VM: script begin b\nRSIW-TEST {b_case} two\nRSIW-VM: script exit=0\n\
                     RSIW-VM: checks\nRSIW-VM: kmemleak scanned\nRSIW-VM: done\n"
                ),
                false,
            )
        };
        let views = per_script(&u, &[vm("PASS"), vm("FAIL")]);
        let ja = judge(Path::new("."), views[0].0, &views[0].1);
        let names: Vec<&str> = ja.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "a[vm0]/one",
                "a[vm0]: clean run (finished, no kernel splat)",
                "a[vm1]/one",
                "a[vm1]: clean run (finished, no kernel splat)"
            ]
        );
        assert!(ja.iter().all(|r| r.failure.is_none()));
        // b failed on VM 1 only.
        let fb = failures(views[1].0, &views[1].1);
        assert_eq!(fb.len(), 1, "{fb:?}");
        assert!(fb[0].starts_with("b[vm1]/two"), "{fb:?}");
    }

    #[test]
    fn a_group_needs_one_vm_count() {
        let (a, mut b) = (script_named("a"), script_named("b"));
        b.vms = 2;
        let all = [a, b];
        let e = units(&all)
            .err()
            .expect("a group of one- and two-VM scripts");
        assert!(e.to_string().contains("other image parts or VMs"), "{e}");
    }

    #[test]
    fn one_script_keeps_its_whole_console() {
        let a = script(None);
        let u = Unit::one(&a);
        let r = run("RSIW-VM: boot\nRSIW-TEST PASS a\nRSIW-VM: script exit=0\nRSIW-VM: done\n");
        let views = per_script(&u, std::slice::from_ref(&r));
        assert_eq!(views[0].1[0].console, r.console);
    }

    #[test]
    fn units_gather_groups_in_order() {
        let (a, b, c) = (script_named("a"), script(None), script_named("c"));
        let all = [a, b, c];
        let u = units(&all).unwrap();
        let shape: Vec<(String, usize)> = u
            .iter()
            .map(|u| (u.name.clone(), u.scripts.len()))
            .collect();
        assert_eq!(shape, [("g".to_string(), 2), ("t".to_string(), 1)]);
        assert_eq!(u[0].timeout(), 2);
    }

    #[test]
    fn glob_needles_match_in_order() {
        let l = "BUG: KASAN: slab-out-of-bounds in init_module+0xa1/0x1000 [rsiw_test_kasan]";
        assert!(glob_contains(
            l,
            "KASAN: slab-out-of-bounds in *[rsiw_test_kasan]"
        ));
        assert!(glob_contains(l, "[rsiw_test_kasan]"));
        assert!(!glob_contains(l, "[rsiw_test_kasan]*KASAN"));
        assert!(!glob_contains(l, "use-after-free*[rsiw_test_kasan]"));
    }

    #[test]
    fn skipped_cases_are_neither_passed_nor_failed() {
        let r = run("RSIW-VM: boot\nRSIW-TEST SKIP rping: rsiw0: no QPs yet (max_qp=0)\nRSIW-VM: script exit=0\nRSIW-VM: done\n");
        let j = judge(Path::new("."), &script(None), &[r]);
        assert_eq!(j.len(), 2);
        assert_eq!(j[0].name, "t/rping");
        assert!(j[0].failure.is_none());
        assert_eq!(
            j[0].skipped.as_deref(),
            Some("rsiw0: no QPs yet (max_qp=0)")
        );
        assert!(j[1].failure.is_none() && j[1].skipped.is_none());
    }

    #[test]
    fn nonzero_exit_without_failed_case_is_a_failure() {
        let r = run("RSIW-VM: boot\nRSIW-TEST PASS a\nRSIW-VM: script exit=2\nRSIW-VM: done\n");
        let j = judge(Path::new("."), &script(None), &[r]);
        assert_eq!(j.iter().filter(|r| r.failure.is_some()).count(), 1);
    }

    #[test]
    fn headers_are_parsed() {
        let dir = std::env::temp_dir().join(format!("rsiw-suite-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("pair.sh");
        std::fs::write(&p, "#!/bin/sh\n# rsiw-vms: 2\n# rsiw-timeout: 60\n# rsiw-expect-splat: X\n# rsiw-flavours: debug\n# rsiw-kernels: debian-7.3\n# rsiw-requires: datapath\n# rsiw-image: pyverbs\necho\n# rsiw-vms: 9\n").unwrap();
        let s = Script::load(&p).unwrap();
        assert_eq!(s.requires, vec!["datapath".to_string()]);
        assert_eq!(s.image, vec!["pyverbs".to_string()]);
        assert_eq!(s.flavours, Some(vec!["debug".to_string()]));
        assert_eq!(s.kernels, vec!["debian-7.3".to_string()]);
        assert_eq!(
            (s.vms, s.timeout, s.expect_splat.as_deref(), s.name.as_str()),
            (2, 60, Some("X"), "pair")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
