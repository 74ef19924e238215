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
    /// Only `RSIW-TEST` lines (the suite's view).
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
    fn command(&self) -> Command {
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
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }
}

/// Two free UDP ports on 127.0.0.1 for the network of a VM pair (free when asked;
/// QEMU binds them moments later).
pub fn free_udp_ports() -> Result<(u16, u16)> {
    let a = std::net::UdpSocket::bind("127.0.0.1:0").context("binding a loopback UDP port")?;
    let b = std::net::UdpSocket::bind("127.0.0.1:0").context("binding a loopback UDP port")?;
    Ok((a.local_addr()?.port(), b.local_addr()?.port()))
}

/// Boot `vms` together and wait for all of them; each is killed at its own timeout.
pub fn run_all(vms: &[Vm]) -> Result<Vec<Run>> {
    let multi = vms.len() > 1;
    let mut live = Vec::new();
    for vm in vms {
        std::fs::create_dir_all(&vm.log_dir)
            .with_context(|| format!("creating {}", vm.log_dir.display()))?;
        let mut cmd = vm.command();
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
        live.push((vm, child, rx, Instant::now(), booted));
    }
    // Wait for all of them together. When a VM of a multi-VM run ends (or is killed)
    // before its init ran, its partners are stopped too: they would only wait for it
    // until their own timeouts, and `suite::boot` boots the whole run again.
    let mut ended: Vec<Option<(bool, bool)>> = live.iter().map(|_| None).collect();
    let mut partner_lost = false;
    while ended.iter().any(Option::is_none) {
        for (i, (vm, child, _, start, booted)) in live.iter_mut().enumerate() {
            if ended[i].is_some() {
                continue;
            }
            let exited = child.try_wait()?.is_some();
            let boot_late = vm
                .boot_timeout
                .is_some_and(|t| start.elapsed() >= t && !booted.load(Ordering::Relaxed));
            let late = start.elapsed() >= vm.timeout || boot_late;
            if exited || late || partner_lost {
                if !exited {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                // Killed for its partner: not a timeout of its own.
                ended[i] = Some((!exited && late, partner_lost && !exited && !late));
                if multi && !booted.load(Ordering::Relaxed) {
                    partner_lost = true;
                }
            }
        }
        if ended.iter().any(Option::is_none) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let mut runs = Vec::new();
    for ((vm, _child, rx, start, booted), end) in live.into_iter().zip(ended) {
        let (timed_out, stopped_for_partner) = end.unwrap_or((false, false));
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
        if stopped_for_partner {
            let msg = format!(
                "{}: stopped QEMU: the other VM of this run died before its init ran",
                vm.name
            );
            eprintln!("{msg}");
            console.push_str(&format!("\n{msg}\n"));
        }
        if timed_out {
            let msg = if booted {
                format!(
                    "{}: killed QEMU after the {} s timeout",
                    vm.name,
                    vm.timeout.as_secs()
                )
            } else {
                format!(
                    "{}: killed QEMU: /init did not start within the boot timeout",
                    vm.name
                )
            };
            eprintln!("{msg}");
            console.push_str(&format!("\n{msg}\n"));
        }
        runs.push(Run {
            console,
            timed_out,
            booted,
            log,
            wall: start.elapsed(),
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
                Echo::Cases => line.contains("RSIW-TEST ") && !line.contains("RSIW-VM"),
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
