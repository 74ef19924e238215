// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Reading a VM run's verdict from its console: the init's sentinels, test cases and splats.

use crate::splat::{self, Splat};

/// One `RSIW-TEST` case reported by a test script.
#[derive(Debug, PartialEq, Eq)]
pub struct Case {
    /// The name the script gave it.
    pub name: String,
    /// Whether it passed (false for a failed or skipped case).
    pub pass: bool,
    /// The script reported it skipped (`RSIW-TEST SKIP name: why`): a prerequisite such
    /// as the device's data path is missing; neither passed nor failed.
    pub skipped: bool,
    /// Why it failed or was skipped (empty when it passed).
    pub why: String,
}

/// Everything the harness learned from one console log.
#[derive(Debug)]
pub struct Outcome {
    /// The init started (`RSIW-VM: boot`).
    pub booted: bool,
    /// The script's exit status (`RSIW-VM: script exit=N`).
    pub script_exit: Option<i32>,
    /// The init finished its end-of-run checks (`RSIW-VM: done`).
    pub done: bool,
    /// The harness killed QEMU at the timeout.
    pub timed_out: bool,
    /// The test cases, from the init's `RSIW-RESULT` block when it is complete (printed
    /// in one piece at the end, so a kernel message is unlikely to split a line there),
    /// else from the live `RSIW-TEST` lines.
    pub cases: Vec<Case>,
    /// Kernel splats; any one fails the run.
    pub splats: Vec<Splat>,
    /// Why a script of a group did not finish or was not judged to the end
    /// (`RSIW-VM: unfinished: …`, added by the harness to its view of the console,
    /// `suite::per_script`).
    pub unfinished: Option<String>,
}

impl Outcome {
    /// Why the run as a whole is not clean (no splat, finished, in time), or `None`.
    pub fn run_problem(&self) -> Option<String> {
        if let Some(s) = self.splats.first() {
            return Some(format!(
                "kernel splat ({} found), first: {}",
                self.splats.len(),
                s.text
            ));
        }
        if self.timed_out {
            return Some(if self.booted {
                "timed out".into()
            } else {
                "timed out before /init ran".into()
            });
        }
        if !self.booted {
            return Some(
                "the VM never reached /init (QEMU error or kernel panic; see the console log)"
                    .into(),
            );
        }
        if let (false, Some(why)) = (self.done, &self.unfinished) {
            return Some(why.clone());
        }
        if !self.done {
            return Some(
                "the VM stopped before the end-of-run checks (kernel panic or reboot?)".into(),
            );
        }
        None
    }
}

/// Parse `console` (the whole log of one VM run).
pub fn analyze(console: &str, timed_out: bool) -> Outcome {
    let lines: Vec<&str> = console.lines().collect();
    let mut o = Outcome {
        booted: false,
        script_exit: None,
        done: false,
        timed_out,
        cases: Vec::new(),
        splats: splat::find(&lines),
        unfinished: None,
    };
    let mut live = Vec::new();
    let mut block: Option<Vec<Case>> = None;
    let mut in_block = false;
    for line in &lines {
        if let Some(rest) = sentinel(line, "RSIW-VM: ") {
            if rest.starts_with("boot") {
                o.booted = true;
            } else if let Some(n) = rest.strip_prefix("script exit=") {
                o.script_exit = n.trim().parse().ok();
            } else if rest.starts_with("results begin") {
                in_block = true;
                block = Some(Vec::new());
            } else if rest.starts_with("results end") {
                in_block = false;
            } else if rest.starts_with("done") {
                o.done = true;
            } else if let Some(why) = rest.strip_prefix("unfinished: ") {
                o.unfinished = Some(why.to_string());
            }
        } else if let Some(rest) = sentinel(line, "RSIW-RESULT ") {
            if let (true, Some(b), Some(c)) = (in_block, block.as_mut(), parse_case(rest)) {
                b.push(c);
            }
        } else if let Some(c) = sentinel(line, "RSIW-TEST ").and_then(parse_case) {
            live.push(c);
        }
    }
    o.cases = block.filter(|_| !in_block).unwrap_or(live);
    o
}

/// The text after `tag` if the line carries it (possibly after interleaved output).
fn sentinel<'a>(line: &'a str, tag: &str) -> Option<&'a str> {
    line.find(tag).map(|i| line[i + tag.len()..].trim_end())
}

/// `PASS name`, `FAIL name: why` or `SKIP name: why`.
fn parse_case(s: &str) -> Option<Case> {
    if let Some(name) = s.strip_prefix("PASS ") {
        return Some(Case {
            name: name.trim().to_string(),
            pass: true,
            skipped: false,
            why: String::new(),
        });
    }
    let (skipped, rest) = match s.strip_prefix("SKIP ") {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix("FAIL ")?),
    };
    let (name, why) = rest.split_once(": ").unwrap_or((rest, "(no reason given)"));
    Some(Case {
        name: name.trim().to_string(),
        pass: false,
        skipped,
        why: why.trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLEAN: &str = "\
[    0.000000] Linux version 6.12.117
RSIW-VM: boot kernel=6.12.117 cpus=2
RSIW-TEST PASS modprobe rsiw
RSIW-TEST FAIL ibv_devices lists rsiw0: rsiw0 not in output
RSIW-VM: script exit=1
RSIW-VM: results begin
RSIW-RESULT PASS modprobe rsiw
RSIW-RESULT FAIL ibv_devices lists rsiw0: rsiw0 not in output
RSIW-VM: results end
RSIW-VM: done
";

    #[test]
    fn sentinels_and_cases_are_read() {
        let o = analyze(CLEAN, false);
        assert!(o.booted && o.done && !o.timed_out);
        assert_eq!(o.script_exit, Some(1));
        assert_eq!(o.cases.len(), 2);
        assert!(o.cases[0].pass);
        assert_eq!(o.cases[1].name, "ibv_devices lists rsiw0");
        assert_eq!(o.cases[1].why, "rsiw0 not in output");
        assert_eq!(o.run_problem(), None);
    }

    #[test]
    fn result_block_wins_over_garbled_live_lines() {
        let log = "RSIW-VM: boot\nRSIW-TEST PA[ 1.0] rsiw: x\nRSIW-VM: results begin\nRSIW-RESULT PASS a\nRSIW-VM: results end\nRSIW-VM: done\n";
        let o = analyze(log, false);
        assert_eq!(
            o.cases,
            vec![Case {
                name: "a".into(),
                pass: true,
                skipped: false,
                why: String::new()
            }]
        );
    }

    #[test]
    fn skip_lines_are_neither_pass_nor_fail() {
        let log = "RSIW-VM: boot\nRSIW-TEST SKIP rping: rsiw0: no QPs yet (max_qp=0)\nRSIW-VM: script exit=0\nRSIW-VM: results begin\nRSIW-RESULT SKIP rping: rsiw0: no QPs yet (max_qp=0)\nRSIW-VM: results end\nRSIW-VM: done\n";
        let o = analyze(log, false);
        assert_eq!(o.cases.len(), 1);
        let c = &o.cases[0];
        assert!(c.skipped && !c.pass);
        assert_eq!(c.name, "rping");
        assert_eq!(c.why, "rsiw0: no QPs yet (max_qp=0)");
    }

    #[test]
    fn live_lines_count_when_the_block_never_ended() {
        let log = "RSIW-VM: boot\nRSIW-TEST PASS a\nRSIW-TEST FAIL b\nRSIW-VM: results begin\nRSIW-RESULT PASS a\n";
        let o = analyze(log, true);
        assert_eq!(o.cases.len(), 2);
        assert_eq!(o.cases[1].why, "(no reason given)");
        assert_eq!(o.run_problem().as_deref(), Some("timed out"));
    }

    #[test]
    fn splat_makes_the_run_fail_even_when_all_cases_pass() {
        let log = "RSIW-VM: boot\n[ 3.1] WARNING: CPU: 0 PID: 1 at x.c:1 f+0x0/0x1\nRSIW-TEST PASS a\nRSIW-VM: done\n";
        let p = analyze(log, false).run_problem().unwrap();
        assert!(p.starts_with("kernel splat (1 found)"), "{p}");
    }

    #[test]
    fn panic_before_done_and_no_boot_are_failures() {
        assert!(analyze("RSIW-VM: boot\nRSIW-TEST PASS a\n", false)
            .run_problem()
            .unwrap()
            .contains("stopped"));
        assert!(analyze("qemu: could not load kernel\n", false)
            .run_problem()
            .unwrap()
            .contains("never reached"));
    }
}
