// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Collecting completions by work-request id and checking their fields.

use crate::ffi::{self, Cq, Wc};
use std::time::{Duration, Instant};

/// Completions polled but not yet claimed by a check.
#[derive(Default)]
pub struct Pending(Vec<Wc>);

impl Pending {
    /// Moves whatever the CQ holds into the pending list.
    pub fn poll(&mut self, cq: &Cq) -> std::io::Result<()> {
        loop {
            let v = cq.poll()?;
            if v.is_empty() {
                return Ok(());
            }
            self.0.extend(v);
        }
    }

    /// Whether a completion for `wr_id` is pending.
    pub fn has(&self, wr_id: u64) -> bool {
        self.0.iter().any(|w| w.wr_id == wr_id)
    }

    /// Claims the completion for `wr_id`.
    pub fn take(&mut self, wr_id: u64) -> Option<Wc> {
        let i = self.0.iter().position(|w| w.wr_id == wr_id)?;
        Some(self.0.remove(i))
    }

    /// Every pending completion, claimed.
    pub fn drain(&mut self) -> Vec<Wc> {
        std::mem::take(&mut self.0)
    }
}

/// Polls until the completion for `wr_id` arrives or `timeout` passes.
pub fn wait_for(p: &mut Pending, cq: &Cq, wr_id: u64, timeout: Duration) -> Result<Wc, String> {
    let end = Instant::now() + timeout;
    loop {
        p.poll(cq).map_err(|e| e.to_string())?;
        if let Some(w) = p.take(wr_id) {
            return Ok(w);
        }
        if Instant::now() > end {
            return Err(format!(
                "no completion for wr_id {wr_id} within {} ms",
                timeout.as_millis()
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Checks a completion's status and (for successes) opcode.
pub fn expect(w: &Wc, status: u32, opcode: Option<u32>) -> Result<(), String> {
    if w.status != status {
        return Err(format!(
            "wr_id {}: status {} ({}), want {} ({})",
            w.wr_id,
            ffi::status_str(w.status),
            w.status,
            ffi::status_str(status),
            status
        ));
    }
    match opcode {
        Some(op) if w.opcode != op => {
            Err(format!("wr_id {}: opcode {}, want {op}", w.wr_id, w.opcode))
        }
        _ => Ok(()),
    }
}

/// Waits for `wr_id` (10 s) and checks it succeeded with `opcode` and, if given, `byte_len`.
pub fn expect_ok(
    p: &mut Pending,
    cq: &Cq,
    wr_id: u64,
    opcode: u32,
    byte_len: Option<u32>,
) -> Result<Wc, String> {
    expect_ok_within(p, cq, wr_id, opcode, byte_len, for_len(0))
}

/// How long a transfer of `len` octets may take: 10 s, and 5 s more per MiB. 64 MiB in
/// 1454-octet FPDUs on the debug kernel under TCG took about 210 s while another VM
/// shared the host's two cores, as in the suite, where 2 s per MiB ran out mid-transfer.
pub fn for_len(len: usize) -> Duration {
    Duration::from_secs(10 + 5 * (len as u64 >> 20))
}

/// [`expect_ok`] with its own timeout.
pub fn expect_ok_within(
    p: &mut Pending,
    cq: &Cq,
    wr_id: u64,
    opcode: u32,
    byte_len: Option<u32>,
    timeout: Duration,
) -> Result<Wc, String> {
    let w = wait_for(p, cq, wr_id, timeout)?;
    expect(&w, ffi::WC_SUCCESS, Some(opcode))?;
    if let Some(n) = byte_len {
        if w.byte_len != n {
            return Err(format!("wr_id {wr_id}: byte_len {}, want {n}", w.byte_len));
        }
    }
    Ok(w)
}
