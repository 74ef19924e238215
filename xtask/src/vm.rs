// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The QEMU runner: boots one VM or several joined by a socket network, with a hard timeout.

use anyhow::{Context, Result};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How QEMU executes the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// Software emulation: slow but works everywhere.
    Tcg,
    /// Hardware virtualisation; used only after a probe proved it boots (see `accel`).
    Kvm,
}

/// What the runner prints while the VM runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Echo {
    /// Every console line.
    All,
    /// Every line from the init's first line on (no kernel boot messages).
    FromInit,
    /// Only `RSIW-TEST` lines and the init's boot line (the suite's view).
    Cases,
    /// Nothing.
    Silent,
}

/// A second NIC on a network shared by two VMs: each QEMU sends the frames of this
/// NIC as UDP datagrams from 127.0.0.1:`local` to 127.0.0.1:`remote` (`-netdev dgram`).
///
/// Not `-netdev socket` (a TCP stream between the QEMUs): QEMU does not set
/// TCP_NODELAY on it, so a guest's burst of frames waits on the host's Nagle and
/// delayed ACK, about 40 ms, which made every multi-segment round trip across the
/// pair take 50-60 ms (a 4 KiB ping-pong 57 ms per round trip, 14 ms over datagrams).
#[derive(Clone, Copy, Debug)]
pub struct SocketNic {
    /// This VM's UDP port.
    pub local: u16,
    /// The partner's UDP port.
    pub remote: u16,
}

/// One VM to boot.
pub struct Vm {
    /// Label for messages and the console prefix when several VMs run.
    pub name: String,
    /// The kernel image.
    pub bzimage: PathBuf,
    /// The initramfs (base image plus this run's overlay).
    pub initrd: PathBuf,
    /// Where `console.log` and `dmesg.txt` go.
    pub log_dir: PathBuf,
    /// Hard limit; QEMU is killed after it.
    pub timeout: Duration,
    /// QEMU is also killed if the init's `RSIW-VM: boot` line has not appeared by then
    /// (a kernel that dies early often hangs instead of rebooting).
    pub boot_timeout: Option<Duration>,
    /// TCG or KVM.
    pub accel: Accel,
    /// Index among the VMs of one run; picks distinct MAC addresses.
    pub index: u8,
    /// The optional socket-network NIC (eth1 in the guest).
    pub socket: Option<SocketNic>,
    /// What to print while running.
    pub echo: Echo,
    /// Kernel command-line additions.
    pub extra_cmdline: String,
}

/// What one VM run produced.
pub struct Run {
    /// The console log (also saved as `console.log`).
    pub console: String,
    /// QEMU was killed at the timeout (or the boot timeout).
    pub timed_out: bool,
    /// The init started (its `RSIW-VM: boot` line appeared).
    pub booted: bool,
    /// Path of the saved console log.
    pub log: PathBuf,
    /// Wall-clock time from start to QEMU's exit.
    pub wall: Duration,
}

/// The line the VM's init prints first (see `qemu/init`).
pub const BOOT_SENTINEL: &str = "RSIW-VM: boot";

/// The kernel command line every run uses.
/// `panic=-1` reboots (and so ends QEMU, `-no-reboot`) at once on a panic, `oops=panic`
/// turns an oops into that instead of a hung guest. WARN does not panic: the run goes
/// on and the harness fails it afterwards. `tsc=reliable`: under TCG the clocksource
/// watchdog sometimes marks the emulated TSC unstable and falls back to jiffies, after
/// which perftest's cycle-based latency tests print `inf` instead of a result.
pub const CMDLINE: &str = "console=ttyS0 panic=-1 oops=panic printk.time=1 tsc=reliable";

/// Added for the debug flavour: KASAN keeps reporting after its first finding.
pub const DEBUG_CMDLINE: &str = "kasan_multi_shot";

impl Vm {
    /// The QEMU command line, with its monitor on the Unix socket `monitor` (for
    /// `dump_state`).
    fn command(&self, monitor: &Path) -> Command {
        let mut c = Command::new("qemu-system-x86_64");
        match self.accel {
            Accel::Tcg => c.args(["-accel", "tcg", "-cpu", "max"]),
            Accel::Kvm => c.args(["-accel", "kvm", "-cpu", "host"]),
        };
        // qboot: SeaBIOS' MP table shows tinyconfig guests only one CPU.
        c.args([
            "-bios",
            "/usr/share/qemu/qboot.rom",
            "-smp",
            "2",
            "-m",
            "1024",
        ]);
        c.args(["-nographic", "-no-reboot", "-kernel"])
            .arg(&self.bzimage)
            .arg("-initrd")
            .arg(&self.initrd);
        c.arg("-append")
            .arg(format!("{CMDLINE} {}", self.extra_cmdline).trim_end());
        c.args(["-netdev", "user,id=n0", "-device"]).arg(format!(
            "virtio-net-pci,netdev=n0,mac=52:54:00:12:34:{:02x}",
            0x56 + self.index
        ));
        if let Some(s) = self.socket {
            let net = format!(
                "dgram,id=s0,local.type=inet,local.host=127.0.0.1,local.port={},\
                 remote.type=inet,remote.host=127.0.0.1,remote.port={}",
                s.local, s.remote
            );
            c.args(["-netdev", &net, "-device"]).arg(format!(
                "virtio-net-pci,netdev=s0,mac=52:54:00:ab:cd:{:02x}",
                1 + self.index
            ));
        }
        c.arg("-monitor")
            .arg(format!("unix:{},server=on,wait=off", monitor.display()));
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }
}

/// A path for a VM's monitor socket: in the temporary directory (a Unix socket path
/// has at most 107 octets; the log directory can be deeper), unique per process and VM.
fn monitor_path(index: u8) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("rsiw-qemu-{}-{n}-{index}.mon", std::process::id()))
}

/// What the guest's vCPUs were doing, asked of QEMU's monitor before the harness kills a
/// VM that is still running (a timeout, or a partner that ended long ago): each vCPU's
/// registers, whether it is halted (the guest idles: what it waits for never came) and
/// the kernel symbol of its instruction pointer from `System.map` next to the kernel
/// image, if there is one (a vCPU that spins in the kernel). The whole answer goes to
/// `qemu-state.txt` in the log directory; the summary is returned for the console log.
/// A QEMU whose main loop is stuck does not answer: a few seconds, then `None`.
fn dump_state(vm: &Vm, monitor: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    let mut sock = UnixStream::connect(monitor).ok()?;
    sock.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    sock.set_write_timeout(Some(Duration::from_secs(2))).ok()?;
    sock.write_all(b"info registers -a\n").ok()?;
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        match sock.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            // The read timeout: QEMU said all it will.
            Err(_) if !raw.is_empty() => break,
            Err(_) => {}
        }
    }
    let text = String::from_utf8_lossy(&raw).replace('\r', "");
    let _ = std::fs::write(vm.log_dir.join("qemu-state.txt"), &text);
    let map = vm
        .bzimage
        .ancestors()
        .map(|d| d.join("System.map"))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|m| parse_system_map(&m))
        .unwrap_or_default();
    let mut summary = Vec::new();
    let mut cpu = String::new();
    for l in text.lines().map(str::trim) {
        // `CPU#0`, then its registers, `RIP=ffffffff81234567 RFL=… HLT=1`.
        if let Some(n) = l.strip_prefix("CPU#") {
            cpu = n.to_string();
        }
        if let Some(regs) = l.strip_prefix("RIP=") {
            let rip = regs.split_whitespace().next().unwrap_or_default();
            let sym = u64::from_str_radix(rip, 16)
                .ok()
                .and_then(|a| symbol(&map, a))
                .unwrap_or_else(|| "(no symbol)".into());
            let halted = if regs.contains("HLT=1") {
                ", halted"
            } else {
                ""
            };
            summary.push(format!("CPU {cpu} at {rip} {sym}{halted}"));
        }
    }
    (!summary.is_empty()).then(|| summary.join("; "))
}

/// The text symbols of a `System.map`, sorted by address.
fn parse_system_map(map: &str) -> Vec<(u64, String)> {
    let mut v: Vec<(u64, String)> = map
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let addr = u64::from_str_radix(f.next()?, 16).ok()?;
            let kind = f.next()?;
            let name = f.next()?;
            matches!(kind, "t" | "T").then(|| (addr, name.to_string()))
        })
        .collect();
    v.sort();
    v
}

/// `name+0xoff` of the text symbol at or below `addr`.
fn symbol(map: &[(u64, String)], addr: u64) -> Option<String> {
    let i = map.partition_point(|(a, _)| *a <= addr).checked_sub(1)?;
    let (base, name) = map.get(i)?;
    Some(format!("{name}+{:#x}", addr - base))
}

/// Two free UDP ports on 127.0.0.1 for the network of a VM pair (free when asked;
/// QEMU binds them moments later).
pub fn free_udp_ports() -> Result<(u16, u16)> {
    let a = std::net::UdpSocket::bind("127.0.0.1:0").context("binding a loopback UDP port")?;
    let b = std::net::UdpSocket::bind("127.0.0.1:0").context("binding a loopback UDP port")?;
    Ok((a.local_addr()?.port(), b.local_addr()?.port()))
}

/// In a multi-VM run, how long the other VMs may go on once one of them has ended on
/// its own after its init ran. The VMs of a pair meet at every step of their script
/// and end within moments of each other (each runs the same end-of-run checks); one
/// still running this long after its partner ended is stuck, and would otherwise hold
/// the suite until its own timeout (up to 15 minutes).
pub const PARTNER_GRACE: Duration = Duration::from_secs(300);

/// The init's last line before it reboots (qemu/init).
const INIT_DONE: &str = "RSIW-VM: done";

/// How many console lines a VM that exited early shows in the report.
const EXIT_TAIL_LINES: usize = 60;

/// The last `n` lines of `text`.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// How one VM of a run ended.
#[derive(Clone, Debug)]
enum End {
    /// QEMU exited on its own, with this status (`None`: not known).
    Exited(Option<std::process::ExitStatus>),
    /// Killed at its own timeout (or boot timeout).
    TimedOut,
    /// Killed because another VM of the run died before its init ran.
    PartnerDied,
    /// Killed `PARTNER_GRACE` after the named VM of the run ended.
    PartnerEnded(String),
}

/// How a VM ended, what its monitor said before a kill (`None`: no kill of a booted VM;
/// `Some(None)`: no answer) and when.
struct Ended {
    end: End,
    state: Option<Option<String>>,
    wall: Duration,
}

/// Boot `vms` together and wait for all of them; each is killed at its own timeout,
/// and in a multi-VM run also `PARTNER_GRACE` after another VM ended.
pub fn run_all(vms: &[Vm]) -> Result<Vec<Run>> {
    let multi = vms.len() > 1;
    let mut live = Vec::new();
    for vm in vms {
        std::fs::create_dir_all(&vm.log_dir)
            .with_context(|| format!("creating {}", vm.log_dir.display()))?;
        let monitor = monitor_path(vm.index);
        let _ = std::fs::remove_file(&monitor);
        let mut cmd = vm.command(&monitor);
        let desc = crate::cmd::describe(&cmd);
        std::fs::write(vm.log_dir.join("qemu-cmdline.txt"), format!("{desc}\n"))?;
        let mut child = cmd.spawn().with_context(|| {
            format!("could not start `{desc}`: install qemu-system-x86 (`cargo xtask setup`)")
        })?;
        let prefix = if multi {
            format!("[{}] ", vm.name)
        } else {
            String::new()
        };
        let booted = Arc::new(AtomicBool::new(false));
        let rx = pump(
            &mut child,
            vm.log_dir.join("console.log"),
            prefix,
            vm.echo,
            booted.clone(),
        )?;
        live.push((vm, child, rx, Instant::now(), booted, monitor));
    }
    // Wait for all of them together. When a VM of a multi-VM run ends (or is killed)
    // before its init ran, its partners are stopped too: they would only wait for it
    // until their own timeouts, and `suite::boot` boots the whole run again. When one
    // ends after its init ran, the others get `PARTNER_GRACE` to end as well.
    let mut ended: Vec<Option<Ended>> = live.iter().map(|_| None).collect();
    let mut partner_lost = false;
    let mut first_end: Option<(Instant, String)> = None;
    while ended.iter().any(Option::is_none) {
        for (i, (vm, child, _, start, booted, monitor)) in live.iter_mut().enumerate() {
            if ended[i].is_some() {
                continue;
            }
            let status = child.try_wait()?;
            let exited = status.is_some();
            let boot_late = vm
                .boot_timeout
                .is_some_and(|t| start.elapsed() >= t && !booted.load(Ordering::Relaxed));
            let late = start.elapsed() >= vm.timeout || boot_late;
            let outlived = first_end
                .as_ref()
                .filter(|(t, _)| t.elapsed() >= PARTNER_GRACE)
                .map(|(_, name)| name.clone());
            let end = if exited {
                End::Exited(status)
            } else if late {
                End::TimedOut
            } else if partner_lost {
                End::PartnerDied
            } else if let Some(name) = outlived {
                End::PartnerEnded(name)
            } else {
                continue;
            };
            let mut state = None;
            if !exited {
                if booted.load(Ordering::Relaxed)
                    && matches!(end, End::TimedOut | End::PartnerEnded(_))
                {
                    state = Some(dump_state(vm, monitor));
                }
                let _ = child.kill();
                let _ = child.wait();
            }
            let _ = std::fs::remove_file(&monitor);
            if multi && !booted.load(Ordering::Relaxed) {
                partner_lost = true;
            } else if multi && exited && first_end.is_none() {
                first_end = Some((Instant::now(), vm.name.clone()));
            }
            ended[i] = Some(Ended {
                end,
                state,
                wall: start.elapsed(),
            });
        }
        if ended.iter().any(Option::is_none) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let mut runs = Vec::new();
    for ((vm, _child, rx, start, booted, _), end) in live.into_iter().zip(ended) {
        let Ended { end, state, wall } = end.unwrap_or(Ended {
            end: End::Exited(None),
            state: None,
            wall: start.elapsed(),
        });
        let (console, stderr) = rx.recv().context("console reader thread died")?;
        let log = vm.log_dir.join("console.log");
        let mut console = console;
        if !stderr.is_empty() {
            console.push_str(&format!("\nqemu stderr: {stderr}"));
        }
        let dmesg: String = console
            .lines()
            .filter(|l| crate::splat::kernel_text(l).is_some())
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(vm.log_dir.join("dmesg.txt"), dmesg)?;
        let booted = booted.load(Ordering::Relaxed);
        let msg = match &end {
            // A guest that reached `RSIW-VM: done` reboots; in a multi-VM run one
            // that stopped before it panicked, reset or lost QEMU, and its partner
            // then waits in vain: its status (and, below, its last lines) go with the
            // report, the only account of that end in the command's output.
            End::Exited(status) if multi && booted && !console.contains(INIT_DONE) => {
                Some(format!(
                    "{}: QEMU exited ({}) before the init's end",
                    vm.name,
                    status.map_or_else(|| "status unknown".to_string(), |s| s.to_string()),
                ))
            }
            End::Exited(_) => None,
            End::PartnerDied => Some(format!(
                "{}: stopped QEMU: the other VM of this run died before its init ran",
                vm.name
            )),
            End::TimedOut if booted => Some(format!(
                "{}: killed QEMU after the {} s timeout",
                vm.name,
                vm.timeout.as_secs()
            )),
            End::TimedOut => Some(format!(
                "{}: killed QEMU: /init did not start within the boot timeout",
                vm.name
            )),
            End::PartnerEnded(other) => Some(format!(
                "{}: killed QEMU: still running {} s after {other} of the same run ended \
                 (the VMs of a run end together; its console's last lines show where it \
                 stopped)",
                vm.name,
                PARTNER_GRACE.as_secs()
            )),
        };
        if let Some(msg) = msg {
            eprintln!("{msg}");
            if matches!(end, End::Exited(_)) {
                eprintln!(
                    "{}: its console's last lines:\n{}",
                    vm.name,
                    last_lines(&console, EXIT_TAIL_LINES)
                );
            }
            console.push_str(&format!("\n{msg}\n"));
        }
        if let Some(state) = state {
            let msg = match state {
                Some(s) => format!("{}: QEMU before the kill: {s} (qemu-state.txt)", vm.name),
                None => format!("{}: QEMU's monitor did not answer before the kill", vm.name),
            };
            eprintln!("{msg}");
            console.push_str(&format!("{msg}\n"));
        }
        // Outliving its partner is a timeout of its own (the run did not finish); a
        // partner's death before /init is not (`suite::boot` boots the run again).
        let timed_out = matches!(end, End::TimedOut | End::PartnerEnded(_));
        runs.push(Run {
            console,
            timed_out,
            booted,
            log,
            wall,
        });
    }
    // Results in the order the caller gave, not start order.
    let mut sorted = Vec::new();
    for vm in vms {
        let i = runs
            .iter()
            .position(|r| r.log == vm.log_dir.join("console.log"))
            .context("lost a VM run")?;
        sorted.push(runs.swap_remove(i));
    }
    Ok(sorted)
}

/// Copy QEMU's console to `log` (and the terminal, per `echo`) from a thread; the
/// channel yields the whole console text and QEMU's stderr when QEMU exits.
fn pump(
    child: &mut Child,
    log: PathBuf,
    prefix: String,
    echo: Echo,
    booted: Arc<AtomicBool>,
) -> Result<mpsc::Receiver<(String, String)>> {
    let out = child.stdout.take().context("qemu stdout")?;
    let mut err = child.stderr.take().context("qemu stderr")?;
    let (tx, rx) = mpsc::channel();
    let mut file =
        std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    std::thread::spawn(move || {
        let errs = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut s);
            s
        });
        let mut r = BufReader::new(out);
        let mut all = String::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim_end_matches(['\n', '\r']).replace('\r', "");
            let _ = writeln!(file, "{line}");
            if line.contains(BOOT_SENTINEL) {
                booted.store(true, Ordering::Relaxed);
            }
            let show = match echo {
                Echo::All => true,
                Echo::FromInit => booted.load(Ordering::Relaxed),
                // The boot line too: it names the kernel each VM runs.
                Echo::Cases => {
                    (line.contains("RSIW-TEST ") && !line.contains("RSIW-VM"))
                        || line.contains(BOOT_SENTINEL)
                }
                Echo::Silent => false,
            };
            if show {
                println!("{prefix}{line}");
            }
            all.push_str(&line);
            all.push('\n');
        }
        let stderr = errs.join().unwrap_or_default();
        let _ = tx.send((all, stderr));
    });
    Ok(rx)
}

/// Path helper for callers that show a log location relative to the repository.
pub fn show(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_lines_of_a_console() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(last_lines("a\nb", 5), "a\nb");
        assert_eq!(last_lines("", 3), "");
    }

    #[test]
    fn symbols_from_system_map() {
        let map = parse_system_map(
            "ffffffff81000000 T _stext\n\
             ffffffff81f54b70 t pv_native_safe_halt\n\
             ffffffff81f54c00 T default_idle\n\
             ffffffff82000000 D some_data\n\
             0000000000000000 A absolute\n\
             not a line\n",
        );
        assert_eq!(map.len(), 3);
        assert_eq!(
            symbol(&map, 0xffffffff81f54b86).as_deref(),
            Some("pv_native_safe_halt+0x16")
        );
        assert_eq!(
            symbol(&map, 0xffffffff81f54c00).as_deref(),
            Some("default_idle+0x0")
        );
        // Below the first text symbol: none.
        assert_eq!(symbol(&map, 0xffffffff80000000), None);
    }
}
