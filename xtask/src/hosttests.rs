// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Host tests: `cargo test --workspace`, passed through, with its results counted.

use crate::ctx::Ctx;
use crate::provider;
use anyhow::{Context, Result};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// Counted results of the host tests.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Test cases that passed.
    pub passed: usize,
    /// Names (and reasons) of those that failed.
    pub failed: Vec<String>,
}

/// Run the workspace's tests. The provider crate needs rdma-core's headers; without
/// them it is excluded and that counts as one failure. `background`: under
/// `SCHED_IDLE` (`chrt --idle 0`, where it can start), beside the VM suite, with its
/// output (cargo's and the tests') kept and returned instead of passed through.
pub fn run(ctx: &Ctx, background: bool) -> Result<(Tally, String)> {
    let mut t = Tally::default();
    let mut cmd = crate::cmd::maybe_idle("cargo", background);
    cmd.current_dir(&ctx.root).args(["test", "--workspace"]);
    match provider::headers(ctx) {
        Ok(dir) => {
            cmd.env("RSIW_RDMA_CORE", dir);
        }
        Err(why) => {
            cmd.args(["--exclude", "rsiw-provider"]);
            t.failed
                .push(format!("host: rsiw-provider not tested: {why}"));
        }
    }
    eprintln!("test: {}", crate::cmd::describe(&cmd));
    if background {
        cmd.stderr(Stdio::piped());
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .context("could not start `cargo test`: is cargo on PATH?")?;
    let out = child.stdout.take().context("cargo test stdout")?;
    // cargo's own messages, kept apart and put first (read by a thread of their own,
    // so that neither pipe fills while the other is read).
    let err = child.stderr.take().map(|e| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut BufReader::new(e), &mut text);
            text
        })
    });
    let mut kept = String::new();
    for line in BufReader::new(out).lines() {
        let line = line?;
        if background {
            kept.push_str(&line);
            kept.push('\n');
        } else {
            println!("{line}");
        }
        count_line(&line, &mut t);
    }
    let status = child.wait()?;
    if let Some(e) = err {
        kept = e.join().unwrap_or_default() + &kept;
    }
    if !status.success()
        && t.failed
            .iter()
            .all(|f| f.starts_with("host: rsiw-provider"))
    {
        t.failed.push(format!("host: `cargo test --workspace` failed ({status}) before reporting a failed test (build error?)"));
    }
    Ok((t, kept))
}

/// The formatting check: `cargo fmt --all --check` for the workspace and `rustfmt
/// --check` from the module's crate root (`rust/rsiw.rs`, built by Kbuild, not cargo),
/// each one case. A failure names the files rustfmt would change.
pub fn fmt_check(ctx: &Ctx) -> Tally {
    let mut t = Tally::default();
    let mut ws = Command::new("cargo");
    ws.args(["fmt", "--all", "--check"]);
    let mut module = Command::new("rustfmt");
    module.args(["--edition", "2021", "--check", "rust/rsiw.rs"]);
    for (name, mut cmd) in [("workspace", ws), ("module", module)] {
        cmd.current_dir(&ctx.root).stdin(Stdio::null());
        eprintln!("test: {}", crate::cmd::describe(&cmd));
        match cmd.output() {
            Ok(o) if o.status.success() => t.passed += 1,
            Ok(o) => {
                let files = unformatted(&String::from_utf8_lossy(&o.stdout));
                t.failed.push(format!(
                    "host: rustfmt ({name}): not formatted: {}; run `cargo fmt --all` and `rustfmt --edition 2021 rust/rsiw.rs`{}",
                    if files.is_empty() { "(no file named)".to_string() } else { files.join(", ") },
                    String::from_utf8_lossy(&o.stderr).lines().next().map(|l| format!(" ({l})")).unwrap_or_default()
                ));
            }
            Err(e) => t.failed.push(format!(
                "host: rustfmt ({name}) could not run ({e}); run `rustup component add rustfmt`"
            )),
        }
    }
    t
}

/// The files named by rustfmt's `--check` output (`Diff in FILE:LINE:`), once each.
fn unformatted(out: &str) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for l in out.lines() {
        let Some(rest) = l.strip_prefix("Diff in ") else {
            continue;
        };
        let file = rest.split(':').next().unwrap_or(rest).trim().to_string();
        if !files.contains(&file) {
            files.push(file);
        }
    }
    files
}

/// Count libtest's per-test lines: `test name ... ok` / `test name ... FAILED`.
fn count_line(line: &str, t: &mut Tally) {
    let Some(rest) = line.strip_prefix("test ") else {
        return;
    };
    let Some((name, verdict)) = rest.rsplit_once(" ... ") else {
        return;
    };
    match verdict.trim() {
        "ok" => t.passed += 1,
        "FAILED" => t.failed.push(format!("host: {name}")),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libtest_lines_are_counted() {
        let mut t = Tally::default();
        for l in [
            "running 3 tests",
            "test crc::tests::rfc3720_vectors ... ok",
            "test mpa::tests::rev0_rejected ... FAILED",
            "test ddp::tests::slow ... ignored",
            "test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out",
            "test src/lib.rs - doc (line 3) ... ok",
        ] {
            count_line(l, &mut t);
        }
        assert_eq!(t.passed, 2);
        assert_eq!(
            t.failed,
            vec!["host: mpa::tests::rev0_rejected".to_string()]
        );
    }

    #[test]
    fn unformatted_files_are_named_once() {
        let out = "Diff in /r/provider/src/cq.rs:125:\n-a\n+b\nDiff in /r/provider/src/cq.rs:178:\nDiff in /r/rust/qp.rs:7:\n";
        assert_eq!(
            unformatted(out),
            vec![
                "/r/provider/src/cq.rs".to_string(),
                "/r/rust/qp.rs".to_string()
            ]
        );
        assert!(unformatted("").is_empty());
    }
}
