// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Finding kernel splats (BUG, WARNING, KASAN, lockdep, kmemleak, …) in a VM's console log.

/// Kernel-log texts that mean the kernel found a bug; any one fails the run.
const KERNEL_PATTERNS: &[&str] = &[
    "BUG:",
    "kernel BUG at",
    "WARNING:",
    "KASAN:",
    "UBSAN:",
    "possible recursive locking",
    "possible circular locking",
    "inconsistent lock state",
    "INFO: lockdep",
    "lockdep is turned off",
    "suspicious RCU usage",
    "Oops",
    "Kernel panic",
    "general protection fault",
    "new suspected memory leaks",
    "detected stalls on CPU",
    "rcu_sched detected stalls",
    "rcu_preempt detected stalls",
    "blocked for more than",
    "ODEBUG:",
    "panicked at",
];

/// Kernel lines known to be harmless; a `Call Trace:` right after one is not a splat.
const HARMLESS: &[&str] = &[
    // Printed by iw_cm when no iwpmd runs; the port mapper is optional.
    "iwpm_register_pid: Unable to send a nlmsg",
    // The allocator's report of an allocation that failed (`warn_alloc`): memory ran
    // short, or fault injection failed it (fault-nomem-rsiw.sh); the caller got NULL
    // and returned its error.
    "vmalloc error: size",
    "page allocation failure: order:",
];

/// Messages another CPU prints between a report and its `Call Trace:` without a trace
/// of their own (fault injection with `verbose` 1): they neither explain a trace nor
/// count towards [`TRACE_CONTEXT`].
const INTERLEAVED: &[&str] = &[
    "FAULT_INJECTION: forcing a failure",
    "name failslab, interval",
    "name fail_page_alloc, interval",
];

/// How many kernel lines before a `Call Trace:` may belong to the message that caused it.
const TRACE_CONTEXT: usize = 3;

/// One detected splat: where it starts and its first line.
#[derive(Debug, PartialEq, Eq)]
pub struct Splat {
    /// Index of the line in the console log (0-based).
    pub line: usize,
    /// The kernel message (without the timestamp).
    pub text: String,
}

/// If `line` carries a printk timestamp (`[    1.234567] `), the kernel text after it.
/// The timestamp may follow other output when the console interleaves writers.
pub fn kernel_text(line: &str) -> Option<&str> {
    let mut rest = line;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        if let Some(close) = after.find(']') {
            let stamp = after[..close].trim_start();
            let (secs, frac) = stamp.split_once('.').unwrap_or(("", ""));
            if !secs.is_empty()
                && !frac.is_empty()
                && secs.bytes().all(|b| b.is_ascii_digit())
                && frac.bytes().all(|b| b.is_ascii_digit())
            {
                return Some(after[close + 1..].trim_start());
            }
        }
        rest = after;
    }
    None
}

/// x86's report of a fault in a *user* process (`show_signal` in
/// arch/x86/kernel/traps.c, only called for user mode): `traps: COMM[PID] general
/// protection fault ip:… sp:… error:… in LIB[…]`. A fault in the kernel is an
/// `Oops: general protection fault …` instead, which stays a splat.
fn is_user_fault(k: &str) -> bool {
    k.strip_prefix("traps: ").is_some_and(|r| {
        r.contains("] ") && r.contains(" ip:") && r.contains(" sp:") && r.contains(" error:")
    })
}

/// All splats in `lines`. Kernel patterns are matched only on kernel lines (user
/// programs such as perftest print "WARNING:" too); the kmemleak report read from
/// debugfs is user output and is matched everywhere.
pub fn find(lines: &[&str]) -> Vec<Splat> {
    let mut found = Vec::new();
    // Kernel lines seen since the last splat/harmless line; a Call Trace is part of
    // the splat (or harmless message) printed just before it.
    let mut since_explained: Option<usize> = None;
    for (i, line) in lines.iter().enumerate() {
        if line.contains("unreferenced object 0x") {
            found.push(Splat {
                line: i,
                text: line.trim().to_string(),
            });
            continue;
        }
        let Some(k) = kernel_text(line) else { continue };
        if is_user_fault(k) {
            // A user process crashed: its test judges it by its exit status.
            continue;
        }
        if INTERLEAVED.iter().any(|p| k.starts_with(p)) {
            continue;
        }
        if KERNEL_PATTERNS.iter().any(|p| k.contains(p)) {
            found.push(Splat {
                line: i,
                text: k.to_string(),
            });
            since_explained = Some(0);
        } else if HARMLESS.iter().any(|p| k.contains(p)) {
            since_explained = Some(0);
        } else if k.starts_with("Call Trace:") {
            if since_explained.is_none_or(|n| n > TRACE_CONTEXT) {
                found.push(Splat {
                    line: i,
                    text: k.to_string(),
                });
            }
            since_explained = Some(0);
        } else if let Some(n) = since_explained.as_mut() {
            *n += 1;
        }
    }
    found
}

/// The first splat with the kernel lines after it, for printing after a failure.
pub fn excerpt(lines: &[&str], s: &Splat, max: usize) -> Vec<String> {
    lines
        .iter()
        .skip(s.line)
        .filter_map(|l| {
            kernel_text(l)
                .map(str::to_string)
                .or_else(|| l.contains("unreferenced object").then(|| l.to_string()))
        })
        .take(max)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(log: &str) -> Vec<String> {
        let lines: Vec<&str> = log.lines().collect();
        find(&lines).into_iter().map(|s| s.text).collect()
    }

    #[test]
    fn timestamp_is_stripped_even_after_interleaved_output() {
        assert_eq!(
            kernel_text("[    1.234567] rsiw: loaded"),
            Some("rsiw: loaded")
        );
        assert_eq!(
            kernel_text("RSIW-TEST PA[   12.000001] WARNING: x"),
            Some("WARNING: x")
        );
        assert_eq!(kernel_text("[x] not kernel"), None);
        assert_eq!(kernel_text("array[3] = 1.5]"), None);
        assert_eq!(kernel_text("plain output"), None);
    }

    #[test]
    fn warn_and_kasan_and_lockdep_are_splats() {
        let log = "\
[    5.000000] rsiw_test_warn: loading out-of-tree module taints kernel.
[    5.100000] ------------[ cut here ]------------
[    5.100001] WARNING: CPU: 1 PID: 60 at warn.c:9 rsiw_test_warn_init+0x1d/0x1000 [rsiw_test_warn]
[    5.100002] Modules linked in: rsiw_test_warn(O+)
[    5.100003] Call Trace:
[    5.100004]  <TASK>
[    6.000000] BUG: KASAN: slab-out-of-bounds in rsiw::qp::post+0x40/0x80 [rsiw]
[    7.000000] WARNING: possible circular locking dependency detected
";
        let t = texts(log);
        assert_eq!(t.len(), 3, "{t:?}");
        assert!(t[0].contains("[rsiw_test_warn]"));
        assert!(t[1].starts_with("BUG: KASAN"));
        assert!(t[2].contains("circular locking"));
    }

    #[test]
    fn user_output_saying_warning_is_not_a_splat() {
        assert!(
            texts(" WARNING: BW peak won't be measured in this run.\nRSIW-TEST PASS x\n")
                .is_empty()
        );
    }

    #[test]
    fn harmless_iwpm_message_is_ignored() {
        assert!(
            texts("[    3.000000] iwpm_register_pid: Unable to send a nlmsg (client = 2)\n")
                .is_empty()
        );
    }

    #[test]
    fn lone_call_trace_is_a_splat_but_not_after_a_harmless_line() {
        let lone = "[    1.000000] something odd\n[    1.000001] Call Trace:\n";
        assert_eq!(texts(lone), vec!["Call Trace:".to_string()]);
        let after_harmless =
            "[    1.000000] iwpm_register_pid: Unable to send a nlmsg\n[    1.000001] CPU: 0 PID: 1\n[    1.000002] Call Trace:\n";
        assert!(texts(after_harmless).is_empty());
        let far = "[ 1.0] iwpm_register_pid: Unable to send a nlmsg\n[ 1.1] a\n[ 1.2] b\n[ 1.3] c\n[ 1.4] d\n[ 1.5] Call Trace:\n";
        assert_eq!(texts(far).len(), 1);
    }

    #[test]
    fn fault_injection_lines_between_a_report_and_its_trace_do_not_count() {
        // As fault-nomem-rsiw saw it: another CPU's failslab messages between
        // warn_alloc's report and its trace.
        let log = "\
[   37.422252] rsiw-load: vmalloc error: size 8192, vm_struct allocation failed, mode:0xdc0(GFP_KERNEL|__GFP_ZERO), nodemask=(null)
[   37.426252] FAULT_INJECTION: forcing a failure.
[   37.426252] name failslab, interval 1, probability 10, space 0, times -1
[   37.426252] CPU: 1 UID: 0 PID: 118 Comm: rsiw-load Tainted: G           O       6.12.117 #1
[   37.426252] Tainted: [O]=OOT_MODULE
[   37.426252] Call Trace:
";
        assert!(texts(log).is_empty(), "{:?}", texts(log));
        // They do not explain a trace by themselves.
        let alone = "\
[    1.0] FAULT_INJECTION: forcing a failure.
[    1.0] name failslab, interval 1, probability 10, space 0, times -1
[    1.1] Call Trace:
";
        assert_eq!(texts(alone).len(), 1);
    }

    #[test]
    fn kmemleak_report_and_summary_are_splats() {
        let log = "\
[   30.000000] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)
unreferenced object 0xffff888003a1c000 (size 64):
  comm \"modprobe\", pid 80, jiffies 4294900000
";
        assert_eq!(texts(log).len(), 2);
    }

    #[test]
    fn a_user_process_fault_is_not_a_splat_but_a_kernel_gpf_is() {
        let user = "[  112.5] traps: ib_send_lat[365] general protection fault ip:7f20e86d3472 \
                    sp:7ffc17221520 error:0 in librdmacm.so.1[a472,7f20e86cd000+15000]";
        assert!(find(&[user]).is_empty());
        let kernel = "[  112.5] Oops: general protection fault, probably for non-canonical \
                      address 0xdffffc0000000001: 0000 [#1] PREEMPT SMP KASAN";
        assert_eq!(find(&[kernel]).len(), 1);
    }

    #[test]
    fn oops_panic_and_stalls_are_splats() {
        for l in [
            "[ 2.5] Oops: general protection fault, probably for non-canonical address",
            "[ 2.5] Kernel panic - not syncing: Fatal exception",
            "[ 9.0] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:",
            "[ 9.0] kernel BUG at rust/kernel/lib.rs:12!",
            "[ 9.0] =============================\n[ 9.1] WARNING: suspicious RCU usage",
        ] {
            assert!(!texts(l).is_empty(), "{l}");
        }
    }

    #[test]
    fn clean_boot_lines_are_not_splats() {
        let log = "\
[    0.000000] Linux version 6.12.117 (clang version 14.0.6)
[    0.100000] kasan: KernelAddressSanitizer initialized (generic)
[    0.200000] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
[    0.300000] kmemleak: Kernel memory leak detector initialized (mem pool available: 15000)
[    4.000000] rsiw: loading out-of-tree module taints kernel.
";
        assert!(texts(log).is_empty());
    }
}
