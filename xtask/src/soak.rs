// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! `cargo xtask soak`: `qemu/tests/soak-rsiw.sh` for RSIW_SOAK_MIN minutes (default 60) on
//! the debug kernel (the suite runs the same script for 1 minute), its cases judged as in the suite, and its once-a-minute `RSIW-SOAK`
//! samples written to `target/soak/` as a CSV and an SVG of the curves (memory, rsiw's
//! objects, traffic per minute), with a check that memory did not keep growing.

use crate::ctx::Ctx;
use crate::vm::{self, Echo};
use crate::{accel, artifacts, setup, suite};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;

/// Default length of the run, in minutes.
const DEFAULT_MINUTES: u64 = 60;
/// How far the last third's memory may sit above the middle third's (KiB): a leak of
/// a few KiB per connection opened (about 8,000 connections an hour) shows well above
/// it, the KASAN quarantine's fill and slab noise (fault-scale-rsiw.sh) do not.
const GROWTH_SLACK_KB: f64 = 8192.0;

/// One `RSIW-SOAK t=… key=value …` line.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Sample {
    /// Minutes since the traffic started.
    pub t: u64,
    pub values: BTreeMap<String, f64>,
}

/// The samples in a console log, in order.
pub fn parse(console: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in console.lines() {
        // A kernel message can be printed into the middle of a line: take what follows
        // the marker only.
        let Some(at) = line.find("RSIW-SOAK t=") else {
            continue;
        };
        let mut s = Sample::default();
        let mut have_t = false;
        for kv in line[at + "RSIW-SOAK ".len()..].split_whitespace() {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let Ok(v) = v.parse::<f64>() else { continue };
            if k == "t" {
                s.t = v as u64;
                have_t = true;
            } else {
                s.values.insert(k.to_string(), v);
            }
        }
        if have_t {
            out.push(s);
        }
    }
    out
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Growth of `key` from the middle third of the run to its last third (medians, KiB),
/// or `None` with fewer than six samples during traffic. The first third is left out:
/// the first connections grow the kernel's caches (and KASAN's quarantine fills).
pub fn growth(samples: &[Sample], key: &str) -> Option<(f64, f64)> {
    // The last sample is taken after the traffic stopped.
    let during: Vec<f64> = samples
        .iter()
        .take(samples.len().saturating_sub(1))
        .filter_map(|s| s.values.get(key).copied())
        .collect();
    if during.len() < 6 {
        return None;
    }
    let third = during.len() / 3;
    let mid = median(during[third..2 * third].to_vec())?;
    let last = median(during[2 * third..].to_vec())?;
    Some((mid, last))
}

/// Per-minute differences of a cumulative counter (the first sample has none).
fn per_minute(samples: &[Sample], key: &str) -> Vec<(u64, f64)> {
    samples
        .windows(2)
        .filter_map(|w| {
            let a = w[0].values.get(key)?;
            let b = w[1].values.get(key)?;
            let dt = w[1].t.saturating_sub(w[0].t).max(1) as f64;
            Some((w[1].t, (b - a) / dt))
        })
        .collect()
}

/// The CSV: `t` and every key any sample has.
pub fn csv(samples: &[Sample]) -> String {
    let mut keys: Vec<&String> = samples.iter().flat_map(|s| s.values.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = String::from("t_min");
    for k in &keys {
        out.push(',');
        out.push_str(k);
    }
    out.push('\n');
    for s in samples {
        let _ = write!(out, "{}", s.t);
        for k in &keys {
            out.push(',');
            if let Some(v) = s.values.get(*k) {
                let _ = write!(out, "{v}");
            }
        }
        out.push('\n');
    }
    out
}

/// One curve: its label, its colour and its (minute, value) points.
type Series<'a> = (&'a str, &'a str, Vec<(u64, f64)>);

/// One panel of the report: series drawn against minutes.
struct Panel<'a> {
    title: &'a str,
    unit: &'a str,
    series: Vec<Series<'a>>,
}

fn series(samples: &[Sample], key: &str, scale: f64) -> Vec<(u64, f64)> {
    samples
        .iter()
        .filter_map(|s| Some((s.t, s.values.get(key)? * scale)))
        .collect()
}

/// The report: four panels of curves, as a standalone SVG.
pub fn svg(samples: &[Sample], title: &str) -> String {
    let panels = [
        Panel {
            title: "memory",
            unit: "MiB",
            series: vec![
                (
                    "in use (MemTotal − MemAvailable)",
                    "#1f77b4",
                    series(samples, "used_kb", 1.0 / 1024.0),
                ),
                ("slab", "#ff7f0e", series(samples, "slab_kb", 1.0 / 1024.0)),
                (
                    "slab unreclaimable",
                    "#2ca02c",
                    series(samples, "sunreclaim_kb", 1.0 / 1024.0),
                ),
            ],
        },
        Panel {
            title: "rsiw objects",
            unit: "count",
            series: vec![
                ("QPs", "#1f77b4", series(samples, "qps", 1.0)),
                ("cm_ids", "#ff7f0e", series(samples, "cm_ids", 1.0)),
                ("MRs", "#2ca02c", series(samples, "mrs", 1.0)),
                ("CQs", "#d62728", series(samples, "cqs", 1.0)),
            ],
        },
        Panel {
            title: "traffic per minute",
            unit: "thousands",
            series: vec![
                (
                    "FPDUs received",
                    "#1f77b4",
                    scaled(per_minute(samples, "rcvd_fpdus"), 1e-3),
                ),
                (
                    "Atomic Requests served",
                    "#ff7f0e",
                    scaled(per_minute(samples, "atomic_requests_served"), 1e-3),
                ),
                (
                    "Read Requests served",
                    "#2ca02c",
                    scaled(per_minute(samples, "read_requests_served"), 1e-3),
                ),
                (
                    "verified rounds (all clients)",
                    "#d62728",
                    scaled(per_minute(&with_total_rounds(samples), "rounds_all"), 1e-3),
                ),
            ],
        },
        Panel {
            title: "connections per minute",
            unit: "count",
            series: vec![
                (
                    "established",
                    "#1f77b4",
                    per_minute(samples, "cm_established"),
                ),
                ("closed", "#ff7f0e", per_minute(samples, "cm_closed")),
                ("aborted", "#d62728", per_minute(samples, "cm_aborted")),
            ],
        },
    ];
    let (w, ph, top, left, gap) = (960.0, 220.0, 40.0, 70.0, 50.0);
    let pw = w - left - 280.0;
    let h = top + panels.len() as f64 * (ph + gap);
    let tmax = samples.iter().map(|s| s.t).max().unwrap_or(1).max(1) as f64;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="{left}" y="22" font-size="15">{}</text>"#,
        esc(title)
    );
    for (i, p) in panels.iter().enumerate() {
        let y0 = top + i as f64 * (ph + gap);
        let vmax = p
            .series
            .iter()
            .flat_map(|s| s.2.iter().map(|x| x.1))
            .fold(0.0f64, f64::max);
        let vmax = nice(vmax);
        let _ = writeln!(
            o,
            r#"<text x="{left}" y="{}" font-weight="bold">{} ({})</text>"#,
            y0 + 12.0,
            esc(p.title),
            esc(p.unit)
        );
        let (gy0, gy1) = (y0 + 20.0, y0 + ph);
        let _ = writeln!(
            o,
            "<rect x=\"{left}\" y=\"{gy0}\" width=\"{pw}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
            gy1 - gy0
        );
        for k in 0..=4 {
            let v = vmax * k as f64 / 4.0;
            let y = gy1 - (gy1 - gy0) * k as f64 / 4.0;
            let _ = writeln!(
                o,
                "<line x1=\"{left}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                left + pw,
                left - 4.0,
                y + 4.0,
                fmt_num(v)
            );
        }
        for k in 0..=6 {
            let t = tmax * k as f64 / 6.0;
            let x = left + pw * k as f64 / 6.0;
            let _ = writeln!(
                o,
                r#"<text x="{x}" y="{}" text-anchor="middle">{:.0} min</text>"#,
                gy1 + 14.0,
                t
            );
        }
        for (j, (name, colour, pts)) in p.series.iter().enumerate() {
            let pts: Vec<String> = pts
                .iter()
                .map(|&(t, v)| {
                    let x = left + pw * t as f64 / tmax;
                    let y = gy1 - (gy1 - gy0) * if vmax > 0.0 { v / vmax } else { 0.0 };
                    format!("{x:.1},{y:.1}")
                })
                .collect();
            let _ = writeln!(
                o,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"/>"#,
                pts.join(" ")
            );
            let ly = gy0 + 14.0 + j as f64 * 16.0;
            let lx = left + pw + 12.0;
            let _ = writeln!(
                o,
                r#"<line x1="{lx}" x2="{}" y1="{}" y2="{}" stroke="{colour}" stroke-width="2"/><text x="{}" y="{ly}">{}</text>"#,
                lx + 16.0,
                ly - 4.0,
                ly - 4.0,
                lx + 20.0,
                esc(name)
            );
        }
    }
    o.push_str("</svg>\n");
    o
}

fn scaled(v: Vec<(u64, f64)>, k: f64) -> Vec<(u64, f64)> {
    v.into_iter().map(|(t, x)| (t, x * k)).collect()
}

/// The samples with `rounds_all`, the sum of the clients' verified rounds.
fn with_total_rounds(samples: &[Sample]) -> Vec<Sample> {
    samples
        .iter()
        .map(|s| {
            let mut s = s.clone();
            let total: f64 = s
                .values
                .iter()
                .filter(|(k, _)| k.starts_with("rounds_"))
                .map(|(_, v)| v)
                .sum();
            s.values.insert("rounds_all".into(), total);
            s
        })
        .collect()
}

/// A round axis maximum at or above `v`: 1, 2 or 5 times a power of ten.
fn nice(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&x| x >= v)
        .unwrap_or(10.0 * p)
}

fn fmt_num(v: f64) -> String {
    if v >= 100.0 || v == 0.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The growth checks: (name, failure or None).
pub fn growth_checks(samples: &[Sample]) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for (key, what) in [
        ("used_kb", "memory used"),
        ("sunreclaim_kb", "unreclaimable slab"),
    ] {
        let name = format!("{what} does not keep growing (last third against middle third)");
        match growth(samples, key) {
            None => out.push((
                name,
                Some(format!(
                    "too few samples ({}) to judge: run at least 7 minutes",
                    samples.len()
                )),
            )),
            Some((mid, last)) => {
                let why = (last > mid + GROWTH_SLACK_KB).then(|| {
                    format!(
                        "median {last:.0} KiB over the last third, {mid:.0} KiB over the middle third (at most +{GROWTH_SLACK_KB:.0})"
                    )
                });
                eprintln!(
                    "soak: {what}: median {mid:.0} KiB over the middle third, {last:.0} KiB over the last ({:+.0})",
                    last - mid
                );
                out.push((name, why));
            }
        }
    }
    out
}

pub fn run(ctx: &Ctx, timeout: Option<u64>) -> Result<ExitCode> {
    setup::ensure()?;
    let minutes: u64 = match std::env::var("RSIW_SOAK_MIN") {
        Ok(v) => v
            .parse()
            .ok()
            .filter(|&m| m > 0)
            .context("RSIW_SOAK_MIN takes a whole number of minutes (at least 1)")?,
        Err(_) => DEFAULT_MINUTES,
    };
    std::env::set_var("RSIW_SOAK_MIN", minutes.to_string());
    let art = artifacts::build(ctx)?;
    let accel = accel::choose(ctx, &art.kernel.bzimage)?;
    let mut s = suite::Script::load(&ctx.root.join("qemu/tests/soak-rsiw.sh"))?;
    // Boot, set-up and the end checks (kmemleak's scans) take a few minutes on TCG.
    s.timeout = timeout.unwrap_or(minutes * 60 + 1800);
    eprintln!(
        "soak: {minutes} minutes of mixed traffic on rsiw0 ({} kernel, {accel:?}); VM timeout {} s",
        ctx.kernel_tag(),
        s.timeout
    );
    let boot = suite::Boot {
        ctx,
        bzimage: &art.kernel.bzimage,
        initramfs: &art.initramfs,
        accel,
    };
    let runs = suite::boot(&boot, &s, Echo::Cases)?;
    let run = runs.first().context("no VM ran")?;
    let (mut passed, mut failed) = (0usize, Vec::new());
    for r in suite::judge(&ctx.root, &s, &runs) {
        match (r.failure, r.skipped) {
            (Some(why), _) => {
                println!("FAIL {}: {why}", r.name);
                failed.push(r.name);
            }
            (None, Some(why)) => {
                println!("SKIP {}: {why}", r.name);
                failed.push(r.name);
            }
            (None, None) => {
                println!("PASS {}", r.name);
                passed += 1;
            }
        }
    }
    suite::print_splats(&ctx.root, &run.console, &run.log);
    let samples = parse(&run.console);
    for (name, why) in growth_checks(&samples) {
        let name = format!("{}/{name}", s.name);
        match why {
            Some(why) => {
                println!("FAIL {name}: {why}");
                failed.push(name);
            }
            None => {
                println!("PASS {name}");
                passed += 1;
            }
        }
    }
    let dir = ctx.root.join("target/soak");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(dir.join("samples.csv"), csv(&samples))?;
    let title = format!(
        "rsiw soak: {minutes} min of mixed traffic, {} kernel, {} samples",
        ctx.kernel_tag(),
        samples.len()
    );
    std::fs::write(dir.join("report.svg"), svg(&samples, &title))?;
    eprintln!(
        "soak: {} samples; report {} and {}; console log {} ({:.1} s)",
        samples.len(),
        vm::show(&ctx.root, &dir.join("report.svg")),
        vm::show(&ctx.root, &dir.join("samples.csv")),
        vm::show(&ctx.root, &run.log),
        run.wall.as_secs_f64()
    );
    println!("{passed} passed, {} failed", failed.len());
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn console(used: &[u64]) -> String {
        let mut c = String::from("RSIW-VM: boot\n");
        for (t, u) in used.iter().enumerate() {
            c += &format!(
                "RSIW-SOAK t={t} used_kb={u} sunreclaim_kb=100 qps=64 rcvd_fpdus={} cm_established={}\n",
                t * 1000,
                t * 10
            );
        }
        c
    }

    #[test]
    fn parses_samples_and_ignores_noise() {
        let c = "x\n[  1.0] RSIW-SOAK t=3 used_kb=10 bad=x qps=2\nRSIW-SOAK used_kb=1\n";
        let s = parse(c);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].t, 3);
        assert_eq!(s[0].values.get("used_kb"), Some(&10.0));
        assert_eq!(s[0].values.get("qps"), Some(&2.0));
        assert!(!s[0].values.contains_key("bad"));
    }

    #[test]
    fn flat_memory_passes_and_steady_growth_fails() {
        let flat: Vec<u64> = (0..20).map(|t| 500_000 + (t % 3) * 2000).collect();
        assert!(growth_checks(&parse(&console(&flat)))
            .iter()
            .all(|(_, why)| why.is_none()));
        // 2 MiB a minute: a leak.
        let leak: Vec<u64> = (0..20).map(|t| 500_000 + t * 2048).collect();
        let checks = growth_checks(&parse(&console(&leak)));
        assert!(checks[0].1.is_some(), "{checks:?}");
    }

    #[test]
    fn too_few_samples_fail() {
        let c = console(&[1, 2, 3]);
        assert!(growth_checks(&parse(&c)).iter().all(|(_, w)| w.is_some()));
    }

    #[test]
    fn report_has_every_series() {
        let c = console(&(0..10).map(|t| 400_000 + t).collect::<Vec<_>>());
        let s = parse(&c);
        let svg = svg(&s, "t <1>");
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("t &lt;1&gt;"));
        assert_eq!(svg.matches("<polyline").count(), 14);
        let csv = csv(&s);
        assert!(csv.starts_with("t_min,cm_established,qps,rcvd_fpdus,sunreclaim_kb,used_kb\n"));
        assert_eq!(csv.lines().count(), 11);
        assert_eq!(per_minute(&s, "rcvd_fpdus")[0], (1, 1000.0));
    }
}
