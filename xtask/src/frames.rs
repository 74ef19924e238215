// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Stack frames of `rsiw.ko`. A kernel task has 16 KiB of stack (32 KiB with
//! KASAN, so the debug suite cannot see an overflow the perf kernel hits), and
//! rsiw's RX can run in process context on top of a verbs or CM call (a
//! socket drain). rustc has no `-Wframe-larger-than`: the build reads each
//! function's frame from its prologue (`sub $N, %rsp`) and refuses a module
//! with a frame over [`FRAME_LIMIT`]. A 12 KiB frame once overflowed the perf
//! kernel's stack under `rdma_accept`. Not the kernel's `scripts/checkstack.pl`: its x86
//! pattern adds each epilogue's `add $N, %rsp` too (`Endpoint::await_reply`'s 1,480
//! octets read 4,440), so its sums are no frame sizes to hold against a limit.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

/// Largest stack frame a function of rsiw.ko may have, in octets.
pub const FRAME_LIMIT: u64 = 4096;

/// `(frame octets, function)` for every function of an `objdump -d` listing
/// whose prologue reserves stack, largest first.
pub fn frames(listing: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut func: Option<&str> = None;
    for line in listing.lines() {
        let t = line.trim_end();
        // `0000000000007fe4 <name>:` starts a function.
        if let Some(rest) = t.strip_suffix(">:") {
            if let Some((addr, name)) = rest.split_once(" <") {
                if !addr.is_empty() && addr.chars().all(|c| c.is_ascii_hexdigit()) {
                    func = Some(name);
                    continue;
                }
            }
        }
        let Some(f) = func else { continue };
        if let Some(n) = rsp_sub(t) {
            out.push((n, f.to_string()));
            // The first `sub …, %rsp` is the prologue's.
            func = None;
        }
    }
    out.sort_by(|a, b| b.cmp(a));
    out
}

/// The immediate of `sub $N, %rsp` / `subq $N, %rsp` (decimal or hex).
fn rsp_sub(line: &str) -> Option<u64> {
    let ins = line.split_once(':')?.1.trim();
    let ins = ins.split('#').next()?.trim();
    let rest = ins
        .strip_prefix("subq")
        .or_else(|| ins.strip_prefix("sub"))?;
    let (imm, reg) = rest.trim().split_once(',')?;
    if reg.trim() != "%rsp" {
        return None;
    }
    let imm = imm.trim().strip_prefix('$')?;
    match imm.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => imm.parse().ok(),
    }
}

/// Fails if a function of `ko` has a frame over [`FRAME_LIMIT`], naming it.
pub fn check(ko: &Path, llvm: &str) -> Result<()> {
    let tool = format!("llvm-objdump{llvm}");
    let out = Command::new(&tool)
        .args(["-d", "-C", "--no-show-raw-insn"])
        .arg(ko)
        .output()
        .with_context(|| format!("running {tool} (`cargo xtask setup` installs llvm{llvm})"))?;
    if !out.status.success() {
        bail!(
            "{tool} -d {} failed: {}",
            ko.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let listing = String::from_utf8_lossy(&out.stdout);
    let all = frames(&listing);
    if all.is_empty() {
        bail!(
            "{tool} listed no function frames in {}: cannot check stack use",
            ko.display()
        );
    }
    let over: Vec<_> = all.iter().filter(|(n, _)| *n > FRAME_LIMIT).collect();
    if !over.is_empty() {
        let list: Vec<String> = over
            .iter()
            .map(|(n, f)| format!("  {n} octets: {f}"))
            .collect();
        bail!(
            "{} has stack frames over {FRAME_LIMIT} octets (a kernel stack is 16 KiB); \
             move large values to the heap or out of line:\n{}",
            ko.display(),
            list.join("\n")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "\
0000000000000034 <small>:
      34:      \tpushq\t%rbp
      40:      \tsubq\t$48, %rsp
      48:      \tsubq\t$9999, %rsp
0000000000007fe4 <<rsiw::engine::Engine>::build>:
    7fee:      \tsubq\t$3608, %rsp             # imm = 0xE18
0000000000008000 <gnu>:
    8004:\tsub    $0x2f28,%rsp
0000000000009000 <leaf>:
    9000:      \tretq
0000000000009010 <other_reg>:
    9010:      \tsubq\t$64, %rax
";

    #[test]
    fn prologue_frames_are_read_in_both_syntaxes() {
        let f = frames(LISTING);
        assert_eq!(
            f,
            vec![
                (0x2f28, "gnu".to_string()),
                (3608, "<rsiw::engine::Engine>::build".to_string()),
                (48, "small".to_string()),
            ]
        );
    }

    #[test]
    fn only_frames_over_the_limit_fail() {
        let over: Vec<_> = frames(LISTING)
            .into_iter()
            .filter(|(n, _)| *n > FRAME_LIMIT)
            .collect();
        assert_eq!(over, vec![(0x2f28, "gnu".to_string())]);
    }
}
