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

/// The atomic rounds' values by round: `(device, test)` → round → value.
type Rounds = BTreeMap<(String, String), BTreeMap<u32, f64>>;

/// `round R DEV TEST V` (an info line) → the key, the round and the value.
fn round_of(info: &str) -> Option<((String, String), u32, f64)> {
    let f: Vec<&str> = info.strip_prefix("round ")?.split_whitespace().collect();
    match f.as_slice() {
        [r, dev, test, v] => Some((
            (dev.to_string(), test.to_string()),
            r.parse().ok()?,
            v.parse().ok()?,
        )),
        _ => None,
    }
}

/// The median of `v` (the mean of the two middle values for an even count).
fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => v.get(n / 2).copied(),
        _ => Some((v.get(n / 2 - 1)? + v.get(n / 2)?) / 2.0),
    }
}

/// The paired ratio of two cells measured in the same rounds: the median of
/// `a / b` over the rounds that have both, with the range of those ratios,
/// `median [min-max] (n)`.
fn paired(r: &Rounds, a: (&str, &str), b: (&str, &str)) -> String {
    let (Some(ra), Some(rb)) = (
        r.get(&(a.0.to_string(), a.1.to_string())),
        r.get(&(b.0.to_string(), b.1.to_string())),
    ) else {
        return "-".into();
    };
    let mut q: Vec<f64> = ra
        .iter()
        .filter_map(|(round, x)| rb.get(round).filter(|y| **y > 0.0).map(|y| x / y))
        .collect();
    let n = q.len();
    let Some(m) = median(&mut q) else {
        return "-".into();
    };
    let (lo, hi) = (
        q.first().copied().unwrap_or(m),
        q.last().copied().unwrap_or(m),
    );
    format!("{m:.2} [{lo:.2}-{hi:.2}] ({n})")
}

/// `spread DEV TEST: V V V` (an info line) → the key and the range of the values.
fn spread_of(info: &str) -> Option<((String, String), (f64, f64))> {
    let rest = info.strip_prefix("spread ")?;
    // Test names hold a colon too (`ib_atomic_bw:CMP_AND_SWAP`); the values follow `: `.
    let (key, vals) = rest.split_once(": ")?;
    let (dev, test) = key.trim().split_once(' ')?;
    let v: Vec<f64> = vals
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let min = v.iter().copied().reduce(f64::min)?;
    let max = v.iter().copied().reduce(f64::max)?;
    Some(((dev.to_string(), test.to_string()), (min, max)))
}

/// Where a kernel message's timestamp (`[    1.679101]`) starts in `s`, if it does.
fn printk_at(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    (0..b.len()).find(|&i| {
        if b[i] != b'[' {
            return false;
        }
        let mut j = i + 1;
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        let int = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j == int || j >= b.len() || b[j] != b'.' {
            return false;
        }
        j += 1;
        let frac = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        j > frac && j < b.len() && b[j] == b']'
    })
}

/// The text after `RSIW-BENCH ` of each such console line, put back together when a
/// kernel message landed inside it: the serial console prints kernel messages between
/// any two bytes of the script's output, so `RSIW-BENCH … 65[    1.67] clocksource: …`
/// continues on the next line that is not a kernel message (`.11`).
fn bench_lines(console: &str) -> Vec<String> {
    let lines: Vec<&str> = console.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let Some(rest) = line.split("RSIW-BENCH ").nth(1) else {
            continue;
        };
        let Some(k) = printk_at(rest) else {
            out.push(rest.to_string());
            continue;
        };
        let mut joined = rest[..k].to_string();
        while i < lines.len() && printk_at(lines[i]) == Some(0) {
            i += 1;
        }
        if i < lines.len() && !lines[i].contains("RSIW-") {
            joined.push_str(lines[i]);
            i += 1;
        }
        out.push(joined);
    }
    out
}

/// Parses `RSIW-BENCH DEV TEST UNIT VALUE` / `RSIW-BENCH DEV TEST n/a WHY…` lines.
fn parse(console: &str) -> (Cells, Vec<String>) {
    let mut cells = Cells::new();
    let mut info = Vec::new();
    for rest in bench_lines(console) {
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
        let digits = if v == 0.0 {
            0
        } else {
            (3 - v.abs().log10().floor() as i32).clamp(0, 6)
        };
        write!(f, "{:.*}", digits as usize, v)
    }
}

/// The cell with the range of its runs, `median [min–max]`.
fn cell_range(c: &Cells, s: &Spread, dev: &str, test: &str) -> String {
    let base = cell(c, dev, test);
    match (
        value(c, dev, test),
        s.get(&(dev.to_string(), test.to_string())),
    ) {
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
    let mut rounds = Rounds::new();
    for (key, round, v) in info.iter().filter_map(|i| round_of(i)) {
        rounds.entry(key).or_default().insert(round, v);
    }
    let mut t = String::new();
    for i in info
        .iter()
        .filter(|i| !i.starts_with("spread ") && !i.starts_with("round "))
    {
        let _ = writeln!(t, "# {i}");
    }
    // rsiw's modes (`qemu/bench.sh` RSIW_MODES), each with its ratio to siw.
    let modes = [
        ("rsiw0", "rsiw"),
        ("rsiw0-nocrc", "rsiw no CRC"),
        ("rsiw0-nocrc-rfc", "no CRC, RFC FPDUs"),
        ("rsiw0-rfc", "rsiw RFC FPDUs"),
    ];
    let _ = write!(t, "{:<24} {:>4} {:>20}", "test", "unit", "siw");
    for (_, name) in modes {
        let _ = write!(t, " {:>22} {:>6}", name, "/siw");
    }
    let _ = writeln!(t, "  target (no CRC / siw)");
    let mut rows: Vec<(String, &str, &str)> = Vec::new();
    for q in ["", ":q4"] {
        for size in ["4096", "65536", "1048576"] {
            for op in ["send", "write", "read"] {
                let target = if size == "65536" { ">= 1.3" } else { "" };
                rows.push((format!("ib_{op}_bw{q}@{size}"), "Gb/s", target));
            }
        }
    }
    for size in ["8", "4096"] {
        for op in ["send", "write", "read"] {
            let target = if size == "8" { "<= 0.8" } else { "" };
            rows.push((format!("ib_{op}_lat@{size}"), "us", target));
        }
    }
    for (test, unit, target) in &rows {
        let _ = write!(
            t,
            "{:<24} {:>4} {:>20}",
            test,
            unit,
            cell_range(c, &spread, "siw0", test)
        );
        for (dev, _) in modes {
            let _ = write!(
                t,
                " {:>22} {:>6}",
                cell_range(c, &spread, dev, test),
                ratio(value(c, dev, test), value(c, "siw0", test))
            );
        }
        let _ = writeln!(t, "  {target}");
    }
    let _ = writeln!(t);
    // The same 64 KiB bandwidth with lo at MTU 1500 (`qemu/bench.sh`), no CRC.
    let mtu = [
        ("rsiw0-mtu1500", "rsiw large FPDUs"),
        ("rsiw0-mtu1500-rfc", "rsiw RFC FPDUs"),
    ];
    let _ = write!(t, "{:<24} {:>4} {:>20}", "MTU 1500, no CRC", "unit", "siw");
    for (_, name) in mtu {
        let _ = write!(t, " {:>22} {:>6}", name, "/siw");
    }
    let _ = writeln!(t);
    for op in ["send", "write", "read"] {
        let test = format!("ib_{op}_bw@65536");
        let _ = write!(
            t,
            "{:<24} {:>4} {:>20}",
            test,
            "Gb/s",
            cell_range(c, &spread, "siw0-mtu1500", &test)
        );
        for (dev, _) in mtu {
            let _ = write!(
                t,
                " {:>22} {:>6}",
                cell_range(c, &spread, dev, &test),
                ratio(value(c, dev, &test), value(c, "siw0-mtu1500", &test))
            );
        }
        let _ = writeln!(t);
    }
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "{:<24} {:>6} {:>10} {:>10} {:>8}  target rsiw <= siw",
        "memory per QP (KiB)", "", "siw", "rsiw", "rsiw/siw"
    );
    for (test, what) in [
        ("qp-slab", "slab"),
        ("qp-vmalloc", "vmalloc"),
        ("qp-memory", "all in use"),
    ] {
        let _ = writeln!(
            t,
            "{:<24} {:>6} {:>10} {:>10} {:>8}",
            what,
            "",
            cell(c, "siw0", test),
            cell(c, "rsiw0", test),
            ratio(value(c, "rsiw0", test), value(c, "siw0", test))
        );
    }
    let _ = writeln!(t);
    // NFS v4.2 through a mount of the VM's own export (`qemu/bench.sh`): over
    // RPC-over-RDMA on each device, and over TCP as the reference. The target is
    // read like the perftest rows': rsiw without CRC against siw, which runs
    // without (6.12's siw never asks for MPA CRCs).
    let _ = writeln!(
        t,
        "{:<24} {:>5} {:>22} {:>22} {:>8} {:>22} {:>8} {:>22}  target",
        "NFS v4.2 (own export)",
        "unit",
        "siw",
        "rsiw",
        "rsiw/siw",
        "rsiw no CRC",
        "/siw",
        "NFS/TCP"
    );
    for test in ["nfs_write_direct@256M", "nfs_read_direct@256M"] {
        let test = sized_cell(c, test);
        let _ = writeln!(
            t,
            "{:<24} {:>5} {:>22} {:>22} {:>8} {:>22} {:>8} {:>22}  no CRC / siw >= 1.0",
            test,
            "MiB/s",
            cell_range(c, &spread, "siw0", &test),
            cell_range(c, &spread, "rsiw0", &test),
            ratio(value(c, "rsiw0", &test), value(c, "siw0", &test)),
            cell_range(c, &spread, "rsiw0-nocrc", &test),
            ratio(value(c, "rsiw0-nocrc", &test), value(c, "siw0", &test)),
            cell_range(c, &spread, "nfs-tcp", &test),
        );
    }
    let _ = writeln!(t);
    // Connection set-up and teardown per connection: librdmacm's cmtime
    // (`qemu/bench.sh`), rsiw against siw in the same run.
    let _ = writeln!(
        t,
        "{:<24} {:>5} {:>22} {:>22} {:>8}  target",
        "connections (cmtime)", "unit", "siw", "rsiw", "rsiw/siw"
    );
    for step in ["connect", "disconnect"] {
        let test = sized_cell(c, &format!("cmtime:{step}@300"));
        let _ = writeln!(
            t,
            "{:<24} {:>5} {:>22} {:>22} {:>8}  rsiw/siw <= 1.0",
            test,
            "us",
            cell_range(c, &spread, "siw0", &test),
            cell_range(c, &spread, "rsiw0", &test),
            ratio(value(c, "rsiw0", &test), value(c, "siw0", &test)),
        );
    }
    let _ = writeln!(t);
    // The atomics run in rounds with rxe's and with rsiw's own 8 B Read latency
    // (`qemu/bench.sh`). Each ratio is given twice: of the medians, and paired (the
    // median of the per-round ratios: each round's runs were made side by side, so
    // a drift of the host's speed between rounds cancels out). The targets are read
    // on the paired ratios.
    let _ = writeln!(
        t,
        "{:<26} {:>4} {:>22} {:>22} {:>8} {:>22}  target (on the paired ratio)",
        "test", "unit", "rxe", "rsiw", "rsiw/rxe", "paired [range] (n)"
    );
    let rounds_read = "ib_read_lat:rounds@8";
    let read_lat = value(c, "rsiw0", rounds_read);
    let _ = writeln!(
        t,
        "{:<26} {:>4} {:>22} {:>22} {:>8} {:>22}  (rsiw's 8 B Read latency in the atomic rounds)",
        rounds_read,
        "us",
        "",
        cell_range(c, &spread, "rsiw0", rounds_read),
        "",
        ""
    );
    for a in ["FETCH_AND_ADD", "CMP_AND_SWAP"] {
        let bw = format!("ib_atomic_bw:{a}");
        let lat = format!("ib_atomic_lat:{a}");
        let _ = writeln!(
            t,
            "{:<26} {:>4} {:>22} {:>22} {:>8} {:>22}  rsiw/rxe >= 1.5",
            bw,
            "Mpps",
            cell_range(c, &spread, "rxe0", &bw),
            cell_range(c, &spread, "rsiw0", &bw),
            ratio(value(c, "rsiw0", &bw), value(c, "rxe0", &bw)),
            paired(&rounds, ("rsiw0", &bw), ("rxe0", &bw))
        );
        let _ = writeln!(
            t,
            "{:<26} {:>4} {:>22} {:>22} {:>8} {:>22}  rsiw atomic / rsiw 8 B Read latency <= 1.1",
            lat,
            "us",
            cell_range(c, &spread, "rxe0", &lat),
            cell_range(c, &spread, "rsiw0", &lat),
            ratio(value(c, "rsiw0", &lat), value(c, "rxe0", &lat)),
            "",
        );
        let _ = writeln!(
            t,
            "{:<26} {:>4} {:>22} {:>22} {:>8} {:>22}",
            "  / rsiw's Read latency",
            "",
            "",
            "",
            ratio(value(c, "rsiw0", &lat), read_lat),
            paired(&rounds, ("rsiw0", &lat), ("rsiw0", rounds_read))
        );
    }
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "TCP ceiling (iperf3, same address): {} Gb/s",
        cell_range(c, &spread, "tcp", "iperf3")
    );
    let _ = writeln!(
        t,
        "Guest memory copy (perf bench mem memcpy, 64 MB): {} GB/s",
        cell(c, "guest", "memcpy")
    );
    t
}

/// The cell name for `default` (`nfs_…@256M`, `cmtime:…@300`) with the size the
/// run used (`BENCH_NFS_MB`, `BENCH_CMTIME_CONNS` change it): the first cell of
/// that test in `c`.
fn sized_cell(c: &Cells, default: &str) -> String {
    let prefix = default.split('@').next().unwrap_or(default);
    c.keys()
        .map(|(_, t)| t)
        .find(|t| t.split('@').next() == Some(prefix))
        .cloned()
        .unwrap_or_else(|| default.to_string())
}

/// The host's 1-minute load average, or `?`.
fn host_load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// Boots at most this many times to get a guest with a usable clock.
const MAX_BOOTS: u32 = 3;

/// The clocksource `qemu/bench.sh` names when it is not the TSC (the script then
/// stops at once: latencies would be `inf`).
fn bad_clock(console: &str) -> Option<String> {
    bench_lines(console).iter().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f.as_slice() {
            ["clocksource", cs] => Some(cs.to_string()),
            _ => None,
        }
    })
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
    let mut boots = 0;
    let run = loop {
        boots += 1;
        let run = suite::boot(&boot, &s, vm::Echo::FromInit)?
            .into_iter()
            .next()
            .context("no VM ran")?;
        match bad_clock(&run.console) {
            Some(cs) if boots < MAX_BOOTS => eprintln!(
                "bench: the guest runs on the `{cs}` clocksource (its TSC calibration failed \
                 at boot), so latencies cannot be measured: booting again"
            ),
            _ => break run,
        }
    };
    let o = outcome::analyze(&run.console, run.timed_out);
    let (cells, mut info) = parse(&run.console);
    if boots > 1 {
        info.push(format!(
            "booted {boots} times: the earlier guests' TSC calibration failed"
        ));
    }
    if let Some(cs) = bad_clock(&run.console) {
        eprintln!("bench: run FAILED: the guest's clocksource is `{cs}` in all {boots} boots");
        return Ok(ExitCode::FAILURE);
    }
    info.push(format!(
        "{} flavour, {:?}, {:.0} s wall, host load average (1 min) {} before, {} after",
        ctx.kernel_tag(),
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
    eprintln!(
        "bench: table in {}, console log {}",
        vm::show(&ctx.root, &file),
        vm::show(&ctx.root, &run.log)
    );
    let failed = cells
        .values()
        .any(|v| matches!(v, Err(w) if w.starts_with("failed")));
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
    fn kernel_messages_inside_a_line_are_taken_out() {
        let console = "RSIW-BENCH info kernel 6.12.117 cpus 2[    1.679101] clocksource: Switched to clocksource tsc\n\
                       \n\
                       RSIW-BENCH rsiw0 ib_read_lat@8 us 65[    2.1] a: b\n\
                       [    2.2] c [d]\n\
                       .11\n\
                       RSIW-BENCH siw0 ib_read_lat@8 us 34.4\n\
                       [ 3.0] e\n";
        assert_eq!(
            bench_lines(console),
            vec![
                "info kernel 6.12.117 cpus 2".to_string(),
                "rsiw0 ib_read_lat@8 us 65.11".to_string(),
                "siw0 ib_read_lat@8 us 34.4".to_string(),
            ]
        );
        let (cells, info) = parse(console);
        assert_eq!(info, vec!["kernel 6.12.117 cpus 2".to_string()]);
        assert_eq!(
            cells.get(&("rsiw0".to_string(), "ib_read_lat@8".to_string())),
            Some(&Ok(("us".to_string(), 65.11)))
        );
        assert_eq!(printk_at("x [12] [ 1.5]"), Some(7));
        assert_eq!(printk_at("[1.] [.5] [1.5"), None);
    }

    #[test]
    fn parses_values_reasons_and_info() {
        let (c, info) = parse(
            "[  3.1] x\nRSIW-BENCH info kernel 6.12\nRSIW-BENCH siw0 ib_write_bw@65536 Gb/s 0.25\n\
             RSIW-BENCH rsiw0 ib_write_bw@65536 Gb/s 0.5\nRSIW-BENCH siw0 ib_atomic_bw n/a atomic_cap NONE\n",
        );
        assert_eq!(info, vec!["kernel 6.12".to_string()]);
        assert_eq!(value(&c, "rsiw0", "ib_write_bw@65536"), Some(0.5));
        assert_eq!(cell(&c, "siw0", "ib_atomic_bw"), "n/a (atomic_cap NONE)");
        assert_eq!(
            ratio(
                value(&c, "rsiw0", "ib_write_bw@65536"),
                value(&c, "siw0", "ib_write_bw@65536")
            ),
            "2.00"
        );
        assert!(table(&c, &info).contains("ib_write_bw@65536"));
    }

    #[test]
    fn nfs_rows_compare_rsiw_with_siw_at_the_size_run() {
        let (c, info) = parse(
            "RSIW-BENCH siw0 nfs_write_direct@64M MiB/s 80\n\
             RSIW-BENCH rsiw0 nfs_write_direct@64M MiB/s 60\n\
             RSIW-BENCH rsiw0-nocrc nfs_write_direct@64M MiB/s 88\n\
             RSIW-BENCH nfs-tcp nfs_write_direct@64M MiB/s 100\n",
        );
        assert_eq!(
            sized_cell(&c, "nfs_write_direct@256M"),
            "nfs_write_direct@64M"
        );
        assert_eq!(
            sized_cell(&c, "nfs_read_direct@256M"),
            "nfs_read_direct@256M"
        );
        let t = table(&c, &info);
        let row = t
            .lines()
            .find(|l| l.starts_with("nfs_write_direct@64M"))
            .unwrap_or_default();
        assert!(row.contains(" 0.75 ") && row.contains(" 1.10 "), "{t}");
        assert!(
            t.contains("nfs_read_direct@256M") && t.contains("not run"),
            "{t}"
        );
    }

    #[test]
    fn cmtime_rows_give_rsiw_per_siw() {
        let (c, info) = parse(
            "RSIW-BENCH siw0 cmtime:connect@100 us 2000\n\
             RSIW-BENCH rsiw0 cmtime:connect@100 us 3000\n\
             RSIW-BENCH siw0 cmtime:disconnect@100 n/a failed: cmtime exit 1\n",
        );
        assert_eq!(sized_cell(&c, "cmtime:connect@300"), "cmtime:connect@100");
        let t = table(&c, &info);
        let row = t
            .lines()
            .find(|l| l.starts_with("cmtime:connect@100"))
            .unwrap_or_default();
        assert!(row.contains(" 1.50 ") && row.contains("<= 1.0"), "{t}");
        let row = t
            .lines()
            .find(|l| l.starts_with("cmtime:disconnect@100"))
            .unwrap_or_default();
        assert!(row.contains("failed"), "{t}");
    }

    #[test]
    fn a_guest_without_tsc_is_named_and_not_a_cell() {
        let console = "[ 0.03] tsc: Marking TSC unstable\nRSIW-BENCH info kernel 6.12\n\
                       RSIW-BENCH clocksource refined-jiffies\n";
        assert_eq!(bad_clock(console).as_deref(), Some("refined-jiffies"));
        assert!(parse(console).0.is_empty());
        assert_eq!(bad_clock("RSIW-BENCH info kernel 6.12\n"), None);
    }

    #[test]
    fn atomic_latency_compares_with_the_read_latency_of_the_rounds() {
        let (c, info) = parse(
            "RSIW-BENCH rsiw0 ib_read_lat@8 us 200\nRSIW-BENCH rsiw0 ib_read_lat:rounds@8 us 50\n\
             RSIW-BENCH rsiw0 ib_atomic_lat:FETCH_AND_ADD us 55\n",
        );
        let t = table(&c, &info);
        let row = t
            .lines()
            .find(|l| l.contains("/ rsiw's Read latency"))
            .unwrap_or_default();
        assert!(row.contains("1.10"), "{t}");
        assert!(!row.contains("4.00") && !row.contains("0.27"), "{t}");
    }

    #[test]
    fn paired_ratios_divide_the_values_of_one_round() {
        // Round 2's rxe value is as fast as rsiw's (ratio 1.03), which drags the ratio
        // of the medians down to 1.17; the paired median is round 1's 1.81.
        let (c, info) = parse(
            "RSIW-BENCH info round 1 rsiw0 ib_atomic_bw:CMP_AND_SWAP 0.0500\n\
             RSIW-BENCH info round 1 rxe0 ib_atomic_bw:CMP_AND_SWAP 0.0277\n\
             RSIW-BENCH info round 2 rsiw0 ib_atomic_bw:CMP_AND_SWAP 0.0321\n\
             RSIW-BENCH info round 2 rxe0 ib_atomic_bw:CMP_AND_SWAP 0.0311\n\
             RSIW-BENCH info round 3 rsiw0 ib_atomic_bw:CMP_AND_SWAP 0.0324\n\
             RSIW-BENCH info round 3 rxe0 ib_atomic_bw:CMP_AND_SWAP 0.0149\n\
             RSIW-BENCH info round 4 rsiw0 ib_atomic_bw:CMP_AND_SWAP 0.0400\n\
             RSIW-BENCH rsiw0 ib_atomic_bw:CMP_AND_SWAP Mops/s 0.0324\n\
             RSIW-BENCH rxe0 ib_atomic_bw:CMP_AND_SWAP Mops/s 0.0277\n",
        );
        let t = table(&c, &info);
        let row = t
            .lines()
            .find(|l| l.starts_with("ib_atomic_bw:CMP_AND_SWAP"))
            .unwrap_or_default();
        // Round 4 has no rxe value: three pairs.
        assert!(
            row.contains("1.17") && row.contains("1.81 [1.03-2.17] (3)"),
            "{t}"
        );
        assert!(!t.contains("# round"), "{t}");
    }

    #[test]
    fn paired_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut [2.0]), Some(2.0));
        assert_eq!(median(&mut []), None);
        let mut r = Rounds::new();
        r.entry(("a".into(), "t".into()))
            .or_default()
            .insert(1, 1.0);
        r.entry(("b".into(), "t".into()))
            .or_default()
            .insert(2, 1.0);
        assert_eq!(paired(&r, ("a", "t"), ("b", "t")), "-");
    }

    #[test]
    fn median_cells_show_their_range() {
        let (c, info) = parse(
            "RSIW-BENCH info spread rsiw0 ib_send_lat@8: 45.02 34.97 60.4\n\
             RSIW-BENCH info spread rxe0 ib_atomic_bw:CMP_AND_SWAP: 0.0346 0.03 0.04\n\
             RSIW-BENCH rsiw0 ib_send_lat@8 us 45.02\nRSIW-BENCH rxe0 ib_atomic_bw:CMP_AND_SWAP Mops/s 0.0346\n",
        );
        let s: Spread = info.iter().filter_map(|i| spread_of(i)).collect();
        assert_eq!(
            cell_range(&c, &s, "rsiw0", "ib_send_lat@8"),
            "45.02 [34.97-60.40]"
        );
        assert_eq!(
            cell_range(&c, &s, "rxe0", "ib_atomic_bw:CMP_AND_SWAP"),
            "0.03460 [0.03000-0.04000]"
        );
        let t = table(&c, &info);
        assert!(!t.contains("# spread"), "{t}");
        assert!(t.contains("ib_read_lat:rounds@8"), "{t}");
        assert!(t.contains("45.02 [34.97-60.40]"), "{t}");
    }
}
