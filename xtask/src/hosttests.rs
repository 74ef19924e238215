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
/// them it is excluded and that counts as one failure.
pub fn run(ctx: &Ctx) -> Result<Tally> {
    let mut t = Tally::default();
    let mut cmd = Command::new("cargo");
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
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .context("could not start `cargo test`: is cargo on PATH?")?;
    let out = child.stdout.take().context("cargo test stdout")?;
    for line in BufReader::new(out).lines() {
        let line = line?;
        println!("{line}");
        count_line(&line, &mut t);
    }
    let status = child.wait()?;
    if !status.success()
        && t.failed
            .iter()
            .all(|f| f.starts_with("host: rsiw-provider"))
    {
        t.failed.push(format!("host: `cargo test --workspace` failed ({status}) before reporting a failed test (build error?)"));
    }
    Ok(t)
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
}
