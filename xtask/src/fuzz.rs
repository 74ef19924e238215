// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! `cargo xtask fuzz`: coverage-guided fuzzing of the protocol core on the stable
//! toolchain. The targets in `rust/proto/fuzz/` link libFuzzer (`libfuzzer-sys` builds it
//! from source with the host's C++ compiler); rustc instruments them with its stable
//! `sancov-module` pass, the coverage feedback cargo-fuzz asks for, without a sanitizer.

use crate::cmd;
use crate::ctx::Ctx;
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

/// The fuzz targets, each `rust/proto/fuzz/fuzz_targets/<name>.rs`.
pub const TARGETS: &[&str] = &["rx", "mpa", "atomic", "tx"];

/// rustc flags for libFuzzer's coverage feedback, as cargo-fuzz passes them (inline 8-bit
/// counters, the PC table and comparison tracing), plus overflow checks and debug
/// assertions so that they fail as a debug build would.
const RUSTFLAGS: &str = "--cfg fuzzing -Cpasses=sancov-module \
    -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares \
    -Cdebug-assertions -Coverflow-checks -Copt-level=3";

/// The host triple the targets are built for: naming it keeps the instrumentation flags
/// away from build scripts, which cannot link without libFuzzer.
const TRIPLE: &str = "x86_64-unknown-linux-gnu";

/// What one target's run reported.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Executions (libFuzzer's `Done N runs`).
    pub runs: u64,
    /// Coverage: edges (`cov:`) and features (`ft:`) at the last status line.
    pub cov: u64,
    /// Features.
    pub ft: u64,
    /// Inputs in the corpus (`corp:`).
    pub corpus: u64,
}

impl Stats {
    /// Folds one line of libFuzzer's output in.
    pub fn read_line(&mut self, line: &str) {
        let field = |name: &str| {
            line.split_whitespace()
                .skip_while(|w| *w != name)
                .nth(1)
                .and_then(|v| v.split('/').next())
                .and_then(|v| v.parse::<u64>().ok())
        };
        if let Some(v) = field("cov:") {
            self.cov = v;
        }
        if let Some(v) = field("ft:") {
            self.ft = v;
        }
        if let Some(v) = field("corp:") {
            self.corpus = v;
        }
        if let Some(rest) = line.strip_prefix("Done ") {
            if let Some(n) = rest.split_whitespace().next().and_then(|n| n.parse().ok()) {
                self.runs = n;
            }
        }
    }
}

/// Builds the targets and runs each named one for `seconds` (all when `names` is empty).
pub fn run(ctx: &Ctx, names: &[String], seconds: u64) -> Result<ExitCode> {
    let names: Vec<&str> = if names.is_empty() {
        TARGETS.to_vec()
    } else {
        names.iter().map(String::as_str).collect()
    };
    for n in &names {
        if !TARGETS.contains(n) {
            bail!(
                "unknown fuzz target `{n}`: use one of {}",
                TARGETS.join(", ")
            );
        }
    }
    let dir = ctx.root.join("rust/proto/fuzz");
    let target_dir = ctx.root.join("target/fuzz");
    if !cmd::succeeds(Command::new("c++").arg("--version")) {
        bail!("libfuzzer-sys builds libFuzzer with `c++`: install g++ (`cargo xtask setup` does)");
    }
    cmd::run(
        Command::new("cargo")
            .current_dir(&dir)
            .env("RUSTFLAGS", RUSTFLAGS)
            .env("CARGO_TARGET_DIR", &target_dir)
            .args(["build", "--release", "--bins", "--target", TRIPLE]),
        "fix the fuzz target build error above",
    )?;
    let mut failed = false;
    for name in names {
        let bin = target_dir.join(TRIPLE).join("release").join(name);
        let corpus = dir.join("corpus").join(name);
        let artifacts = dir.join("artifacts").join(name);
        for d in [&corpus, &artifacts] {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        let (stats, ok) = run_one(
            &bin,
            &corpus,
            &dir.join("seeds").join(name),
            &artifacts,
            name,
            seconds,
        )?;
        println!(
            "fuzz {name}: {} runs in {seconds} s, cov {} ft {}, corpus {} inputs: {}",
            stats.runs,
            stats.cov,
            stats.ft,
            stats.corpus,
            if ok { "no finding" } else { "FINDING" }
        );
        if !ok {
            println!("  the input is in {}", artifacts.display());
            failed = true;
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs one target; libFuzzer's own output goes to stderr as it comes.
fn run_one(
    bin: &Path,
    corpus: &Path,
    seeds: &Path,
    artifacts: &Path,
    name: &str,
    seconds: u64,
) -> Result<(Stats, bool)> {
    let mut c = Command::new(bin);
    c.arg(corpus)
        .arg(seeds)
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg("-print_final_stats=1");
    // The RX target builds ULPDUs of up to 64 KiB from its input.
    if name == "rx" {
        c.arg("-max_len=70000");
    }
    let desc = cmd::describe(&c);
    let mut child = c
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("could not start `{desc}`"))?;
    let mut stats = Stats::default();
    if let Some(err) = child.stderr.take() {
        for line in BufReader::new(err).lines() {
            let line = line.unwrap_or_default();
            eprintln!("{line}");
            stats.read_line(&line);
        }
    }
    let status = child
        .wait()
        .with_context(|| format!("waiting for `{desc}`"))?;
    Ok((stats, status.success()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libfuzzer_status_lines() {
        let mut s = Stats::default();
        s.read_line(
            "#2097152\tpulse  cov: 579 ft: 2841 corp: 1024/96Kb lim: 4096 exec/s: 131072 rss: 80Mb",
        );
        s.read_line("Done 2086009 runs in 16 second(s)");
        assert_eq!(
            s,
            Stats {
                runs: 2086009,
                cov: 579,
                ft: 2841,
                corpus: 1024
            }
        );
    }
}
