// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The test's own control protocol (rdma_cm private data and result messages) and its data
//! patterns; nothing here is an iWARP wire format.

/// Magic opening both private-data blobs ("RSVT").
const MAGIC: u32 = 0x5256_5354;

/// What the server sets up for one connection.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// Stop serving.
    Quit = 0,
    /// Post `nrecv` receives of `len` bytes in `sges` pieces and check what arrives.
    Recv = 1,
    /// Register one region of `len + 2 * GUARD` bytes with `access` and advertise it.
    Expose = 2,
    /// Arm the CQ for solicited events and check which sends raise one.
    Solicited = 3,
    /// Expose a region through a type-2 memory window and check a Send with Invalidate.
    Invalidate = 4,
}

/// Server flag: create an SRQ and receive through it.
pub const F_SRQ: u32 = 1;
/// Server flag: deregister the exposed region before accepting.
pub const F_DEREG: u32 = 2;
/// Server flag: check the outcome and send the verdict back as a Send.
pub const F_CHECK: u32 = 4;
/// Server flag: deregister the exposed region `DEREG_LATE_MS` after accepting, while the
/// client is still writing into it.
pub const F_DEREG_LATE: u32 = 8;
/// When `F_DEREG_LATE` deregisters.
pub const DEREG_LATE_MS: u64 = 300;

/// Guard bytes around each exposed region and scattered segment.
pub const GUARD: usize = 8;
/// Fill value of guard bytes and unwritten memory.
pub const GUARD_BYTE: u8 = 0xee;

/// The connect request's private data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Req {
    /// What to set up.
    pub kind: Kind,
    /// Message or region length.
    pub len: u32,
    /// SGE count of each receive.
    pub sges: u32,
    /// Receives to post.
    pub nrecv: u32,
    /// Access flags of the exposed region.
    pub access: u32,
    /// `F_*`.
    pub flags: u32,
    /// Pattern seed.
    pub seed: u32,
    /// The case name, for the server's log.
    pub name: String,
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    let s = b.get(i.checked_mul(4)?..i.checked_mul(4)?.checked_add(4)?)?;
    Some(u32::from_le_bytes(s.try_into().ok()?))
}

impl Req {
    /// Encodes into at most 96 bytes (well under MPA's private data limit).
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(96);
        for x in [
            MAGIC,
            self.kind as u32,
            self.len,
            self.sges,
            self.nrecv,
            self.access,
            self.flags,
            self.seed,
        ] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend(self.name.bytes().take(64));
        v
    }

    /// Decodes what `encode` produced; `None` for anything else.
    pub fn decode(b: &[u8]) -> Option<Self> {
        if u32_at(b, 0)? != MAGIC {
            return None;
        }
        let kind = match u32_at(b, 1)? {
            0 => Kind::Quit,
            1 => Kind::Recv,
            2 => Kind::Expose,
            3 => Kind::Solicited,
            4 => Kind::Invalidate,
            _ => return None,
        };
        Some(Req {
            kind,
            len: u32_at(b, 2)?,
            sges: u32_at(b, 3)?,
            nrecv: u32_at(b, 4)?,
            access: u32_at(b, 5)?,
            flags: u32_at(b, 6)?,
            seed: u32_at(b, 7)?,
            // Private data may be padded with zeros by the transport.
            name: String::from_utf8_lossy(b.get(32..).unwrap_or(&[]))
                .trim_end_matches('\0')
                .to_string(),
        })
    }
}

/// The accept's private data: the exposed region (zeros when there is none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resp {
    /// Tagged offset of the region's first byte.
    pub addr: u64,
    /// Its STag.
    pub rkey: u32,
    /// Its length.
    pub len: u32,
}

impl Resp {
    /// Encodes into 20 bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = MAGIC.to_le_bytes().to_vec();
        v.extend_from_slice(&self.addr.to_le_bytes());
        v.extend_from_slice(&self.rkey.to_le_bytes());
        v.extend_from_slice(&self.len.to_le_bytes());
        v
    }

    /// Decodes what `encode` produced.
    pub fn decode(b: &[u8]) -> Option<Self> {
        if u32_at(b, 0)? != MAGIC {
            return None;
        }
        let lo = u64::from(u32_at(b, 1)?);
        let hi = u64::from(u32_at(b, 2)?);
        Some(Resp {
            addr: lo | hi << 32,
            rkey: u32_at(b, 3)?,
            len: u32_at(b, 4)?,
        })
    }
}

/// `len` pseudo-random bytes for `seed` (splitmix64 of the seed and the position of each
/// 8-byte word): no period a misplaced, shifted or repeated block could hide in, and the
/// bytes at `i` are the same whatever `len`.
pub fn pattern(seed: u32, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    let mut w = 0u64;
    while out.len() < len {
        let mut z = (u64::from(seed) << 40 ^ w).wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
        w += 1;
    }
    out.truncate(len);
    out
}

/// Regions a scattered buffer is spread over.
pub const NMR: usize = 3;

/// One piece of a scattered buffer: region index, offset, length.
pub type Seg = (usize, usize, usize);

/// Size of each of the `NMR` regions holding a scattered buffer of `len` bytes.
pub fn region_len(len: usize) -> usize {
    len + 16 * GUARD
}

/// Splits `len` bytes into `n` pieces spread round-robin over `NMR` regions at odd offsets,
/// with guard bytes between pieces. `n == 0` means no SGE at all (only for `len == 0`).
pub fn layout(len: usize, n: usize) -> Vec<Seg> {
    let mut next = [GUARD + 1, GUARD + 3, GUARD + 5];
    let mut out = Vec::with_capacity(n);
    let mut left = len;
    for i in 0..n {
        let piece = if i + 1 == n { left } else { len / n };
        left -= piece;
        let r = i % NMR;
        out.push((r, next[r], piece));
        next[r] += piece + GUARD;
    }
    out
}

/// What the `NMR` regions must hold after `data` was scattered into them by `segs`.
pub fn image(len: usize, segs: &[Seg], data: &[u8]) -> Vec<Vec<u8>> {
    let mut img = vec![vec![GUARD_BYTE; region_len(len)]; NMR];
    let mut at = 0;
    for &(r, off, n) in segs {
        img[r][off..off + n].copy_from_slice(&data[at..at + n]);
        at += n;
    }
    img
}

/// Compares one region with what it must hold; the first difference, if any.
pub fn diff(what: &str, got: &[u8], want: &[u8]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} bytes, want {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: byte {i} is {:#04x}, want {:#04x}",
            got[i], want[i]
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn req_round_trips_and_rejects_junk() {
        let r = Req {
            kind: Kind::Expose,
            len: 4097,
            sges: 3,
            nrecv: 1,
            access: 7,
            flags: F_CHECK,
            seed: 9,
            name: "x-1".into(),
        };
        assert_eq!(Req::decode(&r.encode()), Some(r.clone()));
        let mut padded = r.encode();
        padded.resize(200, 0);
        assert_eq!(Req::decode(&padded), Some(r));
        assert_eq!(Req::decode(&[1, 2, 3]), None);
        let s = Resp {
            addr: 0x1234_5678_9abc_def0,
            rkey: 0xdead,
            len: 5,
        };
        assert_eq!(Resp::decode(&s.encode()), Some(s));
    }

    #[test]
    fn layout_covers_every_byte_once() {
        for (len, n) in [(0, 0), (0, 1), (1, 1), (4097, 6), (1 << 20, 5)] {
            let segs = layout(len, n);
            assert_eq!(segs.len(), n);
            assert_eq!(segs.iter().map(|s| s.2).sum::<usize>(), len);
            for &(r, off, l) in &segs {
                assert!(r < NMR && off >= GUARD && off + l + GUARD <= region_len(len));
            }
            let data = pattern(3, len);
            let img = image(len, &segs, &data);
            let marked: usize = img.iter().flatten().filter(|&&b| b != GUARD_BYTE).count();
            assert_eq!(marked, data.iter().filter(|&&b| b != GUARD_BYTE).count());
        }
        assert!(diff("r", &[1, 2], &[1, 3]).unwrap_err().contains("byte 1"));
    }
}
