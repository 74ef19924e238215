// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The VM suite: every `qemu/tests/*.sh` boots its own VM(s); cases and splats become results.
//! This file reads the scripts and their headers and gathers them into boot units;
//! `suite/launch.rs` boots a unit, `suite/results.rs` turns its consoles into results.

mod launch;
mod results;

pub use launch::{boot, boot_unit, Boot};
pub use results::{judge, per_script, print_splats};

use crate::ctx::Ctx;
use crate::image;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-VM script `t` with no headers but `expect_splat`.
    pub(super) fn script(expect: Option<&str>) -> Script {
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

    /// [`script`] named `name`, in group `g`.
    pub(super) fn script_named(name: &str) -> Script {
        let mut s = script(None);
        s.name = name.into();
        s.group = Some("g".into());
        s
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
