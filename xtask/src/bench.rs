// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! `cargo xtask bench`: boots the perf kernel with `qemu/bench.sh`, which measures siw,
//! rsiw and rxe with perftest (and TCP with iperf3) in one VM run, and tabulates the
//! `RSIW-BENCH` lines it prints with the ratios the project's targets are stated in.

use crate::{accel, artifacts, ctx::Ctx, outcome, setup, suite, vm};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;

/// One measurement: `(device, test)` → value with its unit, or why there is none.
type Cells = BTreeMap<(String, String), Result<(String, f64), String>>;

/// The runs behind a median: `(device, test)` → (min, max).
type Spread = BTreeMap<(String, String), (f64, f64)>;

/// `spread DEV TEST: V V V` (an info line) → the key and the range of the values.
fn spread_of(info: &str) -> Option<((String, String), (f64, f64))> {
    let rest = info.strip_prefix("spread ")?;
    // Test names hold a colon too (`ib_atomic_bw:CMP_AND_SWAP`); the values follow `: `.
    let (key, vals) = rest.split_once(": ")?;
    let (dev, test) = key.trim().split_once(' ')?;
    let v: Vec<f64> = vals.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    let min = v.iter().copied().reduce(f64::min)?;
    let max = v.iter().copied().reduce(f64::max)?;
    Some(((dev.to_string(), test.to_string()), (min, max)))
}

/// Parses `RSIW-BENCH DEV TEST UNIT VALUE` / `RSIW-BENCH DEV TEST n/a WHY…` lines.
fn parse(console: &str) -> (Cells, Vec<String>) {
    let mut cells = Cells::new();
    let mut info = Vec::new();
    for line in console.lines() {
        let Some(rest) = line.split("RSIW-BENCH ").nth(1) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        match f.as_slice() {
            ["info", more @ ..] => info.push(more.join(" ")),
            [dev, test, "n/a", why @ ..] => {
                cells.insert((dev.to_string(), test.to_string()), Err(why.join(" ")));
            }
            [dev, test, unit, v] => {
                let cell = v
                    .parse::<f64>()
                    .map(|x| (unit.to_string(), x))
                    .map_err(|_| format!("failed: unparsable `{v}`"));
                cells.insert((dev.to_string(), test.to_string()), cell);
            }
            _ => {}
        }
    }
    (cells, info)
}

fn cell(c: &Cells, dev: &str, test: &str) -> String {
    match c.get(&(dev.to_string(), test.to_string())) {
        Some(Ok((_, v))) => format!("{}", Sig(*v)),
        Some(Err(why)) => format!("n/a ({why})"),
        None => "not run".into(),
    }
}

/// A value with four significant digits (message rates are small, latencies large).
struct Sig(f64);

impl std::fmt::Display for Sig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.0;
        let digits = if v == 0.0 { 0 } else { (3 - v.abs().log10().floor() as i32).clamp(0, 6) };
        write!(f, "{:.*}", digits as usize, v)
    }
}

/// The cell with the range of its runs, `median [min–max]`.
fn cell_range(c: &Cells, s: &Spread, dev: &str, test: &str) -> String {
    let base = cell(c, dev, test);
    match (value(c, dev, test), s.get(&(dev.to_string(), test.to_string()))) {
        (Some(_), Some((lo, hi))) => format!("{base} [{}-{}]", Sig(*lo), Sig(*hi)),
        _ => base,
    }
}

fn value(c: &Cells, dev: &str, test: &str) -> Option<f64> {
    match c.get(&(dev.to_string(), test.to_string())) {
        Some(Ok((_, v))) if *v > 0.0 => Some(*v),
        _ => None,
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}", a / b),
        _ => "-".into(),
    }
}

/// The table: verbs rows against siw, atomic rows against rxe and against rsiw's Read
/// latency measured in the same rounds.
/// Cells are medians with the range of their runs in brackets.
fn table(c: &Cells, info: &[String]) -> String {
    let spread: Spread = info.iter().filter_map(|i| spread_of(i)).collect();
    let mut t = String::new();
    for i in info.iter().filter(|i| !i.starts_with("spread ")) {
        let _ = writeln!(t, "# {i}");
    }
    let _ = writeln!(
        t,
        "{:<18} {:>4} {:>22} {:>22} {:>8} {:>22} {:>8}  target",
        "test", "unit", "siw", "rsiw", "rsiw/siw", "rsiw no CRC", "ratio"
    );
    let verbs = [
        ("ib_send_bw@65536", "Gb/s", ">= 1.3"),
        ("ib_write_bw@65536", "Gb/s", ">= 1.3"),
        ("ib_read_bw@65536", "Gb/s", ">= 1.3"),
        ("ib_send_lat@8", "us", "<= 0.8"),
        ("ib_write_lat@8", "us", "<= 0.8"),
        ("ib_read_lat@8", "us", "<= 0.8"),
    ];
    for (test, unit, target) in verbs {
        let _ = writeln!(
            t,
            "{:<18} {:>4} {:>22} {:>22} {:>8} {:>22} {:>8}  {}",
            test,
            unit,
            cell_range(c, &spread, "siw0", test),
            cell_range(c, &spread, "rsiw0", test),
            ratio(value(c, "rsiw0", test), value(c, "siw0", test)),
            cell_range(c, &spread, "rsiw0-nocrc", test),
            ratio(value(c, "rsiw0-nocrc", test), value(c, "siw0", test)),
            target
        );
    }
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "{:<26} {:>4} {:>22} {:>22} {:>8}  target",
        "test", "unit", "rxe", "rsiw", "rsiw/rxe"
    );
    // The atomics run in rounds with rxe's and with rsiw's own 8 B Read latency
    // (`qemu/bench.sh`): the latency target compares with the Read latency of those
    // rounds, measured side by side with the atomics.
    let rounds_read = "ib_read_lat:rounds@8";
    let read_lat = value(c, "rsiw0", rounds_read);
    let _ = writeln!(
        t,
        "{:<26} {:>4} {:>22} {:>22} {:>8}  (rsiw's 8 B Read latency in the atomic rounds)",
        rounds_read,
        "us",
        "",
        cell_range(c, &spread, "rsiw0", rounds_read),
        ""
    );
    for a in ["FETCH_AND_ADD", "CMP_AND_SWAP"] {
        let bw = format!("ib_atomic_bw:{a}");
        let lat = format!("ib_atomic_lat:{a}");
        let _ = writeln!(
            t,
            "{:<26} {:>4} {:>22} {:>22} {:>8}  >= 1.5",
            bw,
            "Mpps",
            cell_range(c, &spread, "rxe0", &bw),
            cell_range(c, &spread, "rsiw0", &bw),
            ratio(value(c, "rsiw0", &bw), value(c, "rxe0", &bw))
        );
        let _ = writeln!(
            t,
            "{:<26} {:>4} {:>22} {:>22} {:>8}  (rsiw atomic / rsiw 8 B Read latency {}: <= 1.1)",
            lat,
            "us",
            cell_range(c, &spread, "rxe0", &lat),
            cell_range(c, &spread, "rsiw0", &lat),
            ratio(value(c, "rsiw0", &lat), value(c, "rxe0", &lat)),
            ratio(value(c, "rsiw0", &lat), read_lat)
        );
    }
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "TCP ceiling (iperf3, same address): {} Gb/s",
        cell_range(c, &spread, "tcp", "iperf3")
    );
    t
}

/// The host's 1-minute load average, or `?`.
fn host_load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// Runs the bench on the perf flavour; exit 0 when every runnable cell produced a number.
pub fn run(ctx: &Ctx, timeout: u64) -> Result<ExitCode> {
    setup::ensure()?;
    let script = ctx.root.join("qemu/bench.sh");
    let art = artifacts::build(ctx)?;
    let accel = accel::choose(ctx, &art.kernel.bzimage)?;
    let mut s = suite::Script::load(&script)?;
    s.timeout = s.timeout.max(timeout);
    s.vms = 1;
    let boot = suite::Boot {
        ctx,
        bzimage: &art.kernel.bzimage,
        initramfs: &art.initramfs,
        accel,
    };
    // TCG shares the host's cores with everything else: the load says how quiet it was.
    let load_before = host_load();
    let runs = suite::boot(&boot, &s, vm::Echo::FromInit)?;
    let run = runs.first().context("no VM ran")?;
    let o = outcome::analyze(&run.console, run.timed_out);
    let (cells, mut info) = parse(&run.console);
    info.push(format!(
        "{} flavour, {:?}, {:.0} s wall, host load average (1 min) {} before, {} after",
        ctx.flavour.name(),
        accel,
        run.wall.as_secs_f64(),
        load_before,
        host_load()
    ));
    let t = table(&cells, &info);
    println!("\n{t}");
    let out = ctx.root.join("target/bench");
    std::fs::create_dir_all(&out)?;
    let file = out.join("bench.txt");
    std::fs::write(&file, &t)?;
    eprintln!("bench: table in {}, console log {}", vm::show(&ctx.root, &file), vm::show(&ctx.root, &run.log));
    let failed = cells.values().any(|v| matches!(v, Err(w) if w.starts_with("failed")));
    if let Some(p) = o.run_problem() {
        eprintln!("bench: run FAILED: {p}");
        return Ok(ExitCode::FAILURE);
    }
    if failed || o.script_exit != Some(0) {
        eprintln!("bench: a runnable measurement failed (see `n/a (failed)` cells)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_values_reasons_and_info() {
        let (c, info) = parse(
            "[  3.1] x\nRSIW-BENCH info kernel 6.12\nRSIW-BENCH siw0 ib_write_bw@65536 Gb/s 0.25\n\
             RSIW-BENCH rsiw0 ib_write_bw@65536 Gb/s 0.5\nRSIW-BENCH siw0 ib_atomic_bw n/a atomic_cap NONE\n",
        );
        assert_eq!(info, vec!["kernel 6.12".to_string()]);
        assert_eq!(value(&c, "rsiw0", "ib_write_bw@65536"), Some(0.5));
        assert_eq!(cell(&c, "siw0", "ib_atomic_bw"), "n/a (atomic_cap NONE)");
        assert_eq!(ratio(value(&c, "rsiw0", "ib_write_bw@65536"), value(&c, "siw0", "ib_write_bw@65536")), "2.00");
        assert!(table(&c, &info).contains("ib_write_bw@65536"));
    }

    #[test]
    fn atomic_latency_compares_with_the_read_latency_of_the_rounds() {
        let (c, info) = parse(
            "RSIW-BENCH rsiw0 ib_read_lat@8 us 200\nRSIW-BENCH rsiw0 ib_read_lat:rounds@8 us 50\n\
             RSIW-BENCH rsiw0 ib_atomic_lat:FETCH_AND_ADD us 55\n",
        );
        let t = table(&c, &info);
        assert!(t.contains("Read latency 1.10: <= 1.1"), "{t}");
    }

    #[test]
    fn median_cells_show_their_range() {
        let (c, info) = parse(
            "RSIW-BENCH info spread rsiw0 ib_send_lat@8: 45.02 34.97 60.4\n\
             RSIW-BENCH info spread rxe0 ib_atomic_bw:CMP_AND_SWAP: 0.0346 0.03 0.04\n\
             RSIW-BENCH rsiw0 ib_send_lat@8 us 45.02\nRSIW-BENCH rxe0 ib_atomic_bw:CMP_AND_SWAP Mops/s 0.0346\n",
        );
        let s: Spread = info.iter().filter_map(|i| spread_of(i)).collect();
        assert_eq!(cell_range(&c, &s, "rsiw0", "ib_send_lat@8"), "45.02 [34.97-60.40]");
        assert_eq!(cell_range(&c, &s, "rxe0", "ib_atomic_bw:CMP_AND_SWAP"), "0.03460 [0.03000-0.04000]");
        let t = table(&c, &info);
        assert!(!t.contains("# spread"), "{t}");
        assert!(t.contains("ib_read_lat:rounds@8"), "{t}");
        assert!(t.contains("45.02 [34.97-60.40]"), "{t}");
    }
}
