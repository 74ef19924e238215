// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Running external commands so that every failure names the command and its fix.

use anyhow::{bail, Context, Result};
use std::process::{Command, Stdio};

/// The command line of `cmd` as a user would type it, for error messages.
pub fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    if let Some(dir) = cmd.get_current_dir() {
        s = format!("(cd {} && {s})", dir.display());
    }
    s
}

/// Run `cmd` with inherited stdio; fail with `fix` in the message unless it exits 0.
pub fn run(cmd: &mut Command, fix: &str) -> Result<()> {
    let desc = describe(cmd);
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("could not start `{desc}`: {fix}"))?;
    if !status.success() {
        bail!("`{desc}` failed ({status}): {fix}");
    }
    Ok(())
}

/// Run `cmd` and return its stdout; stderr passes through to the user.
pub fn stdout(cmd: &mut Command, fix: &str) -> Result<String> {
    let desc = describe(cmd);
    let out = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("could not start `{desc}`: {fix}"))?;
    if !out.status.success() {
        bail!("`{desc}` failed ({}): {fix}", out.status);
    }
    String::from_utf8(out.stdout).with_context(|| format!("`{desc}` printed non-UTF-8 output"))
}

/// Whether `cmd` runs and exits 0, with all its output discarded (for cheap probes).
pub fn succeeds(cmd: &mut Command) -> bool {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// A command for `program`; with `background`, run under `SCHED_IDLE` (`chrt --idle 0`),
/// so that it takes only CPU time nothing else wants (where `chrt` cannot start, at
/// normal priority).
pub fn maybe_idle(program: &str, background: bool) -> Command {
    if background && succeeds(Command::new("chrt").arg("--version")) {
        let mut c = Command::new("chrt");
        c.args(["--idle", "0", program]);
        c
    } else {
        Command::new(program)
    }
}
