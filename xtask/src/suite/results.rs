// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! A unit's consoles as counted results: a group's console cut per script, each
//! script's `RSIW-TEST` cases, captures, splats and exit status judged.

use super::{Script, Unit};
use crate::outcome::{self, Outcome};
use crate::splat;
use crate::vm::{self, Run};
use std::path::Path;

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
    use crate::suite::tests::{script, script_named};
    use std::time::Duration;

    fn run(console: &str) -> Run {
        Run {
            console: console.into(),
            timed_out: false,
            booted: true,
            log: "console.log".into(),
            wall: Duration::ZERO,
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
    fn one_script_keeps_its_whole_console() {
        let a = script(None);
        let u = Unit::one(&a);
        let r = run("RSIW-VM: boot\nRSIW-TEST PASS a\nRSIW-VM: script exit=0\nRSIW-VM: done\n");
        let views = per_script(&u, std::slice::from_ref(&r));
        assert_eq!(views[0].1[0].console, r.console);
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
}
