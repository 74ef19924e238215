// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Work queue elements in the shared rings: the 128-byte send queue element (all
//! RDMAP operations of RFC 5040 §4 and RFC 7306 §4, §5) and the 128-byte receive
//! queue element.
//!
//! The kernel copies an element out of the ring once and validates the copy
//! ([`Sqe::opcode`], [`Sqe::sge`], [`Sqe::inline_data`] never panic, whatever the
//! bytes); userspace may change the ring under it.

/// Scatter/gather elements in one work request.
pub const MAX_SGE: usize = 6;
/// Bytes of inline data one SQE carries (in place of the SGEs).
pub const MAX_INLINE: usize = MAX_SGE * SGE_SIZE;
/// Size of one [`Sge`].
pub const SGE_SIZE: usize = 16;
/// Size of one [`Sqe`] (ABI 3; 192 before).
pub const SQE_SIZE: usize = 128;
/// Size of one [`Rqe`].
pub const RQE_SIZE: usize = 128;

/// A scatter/gather element as it sits in an SQE or RQE payload.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// Address (user virtual address of a registered region).
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// Local key (STag) of the region.
    pub lkey: u32,
}

impl Sge {
    fn to_bytes(self) -> [u8; SGE_SIZE] {
        let mut b = [0u8; SGE_SIZE];
        let (a, rest) = b.split_at_mut(8);
        a.copy_from_slice(&self.addr.to_ne_bytes());
        let (l, k) = rest.split_at_mut(4);
        l.copy_from_slice(&self.length.to_ne_bytes());
        k.copy_from_slice(&self.lkey.to_ne_bytes());
        b
    }

    fn from_bytes(b: &[u8; SGE_SIZE]) -> Self {
        let [a0, a1, a2, a3, a4, a5, a6, a7, l0, l1, l2, l3, k0, k1, k2, k3] = *b;
        Self {
            addr: u64::from_ne_bytes([a0, a1, a2, a3, a4, a5, a6, a7]),
            length: u32::from_ne_bytes([l0, l1, l2, l3]),
            lkey: u32::from_ne_bytes([k0, k1, k2, k3]),
        }
    }
}

/// SQE opcodes (the values of [`Sqe::opcode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum SqOpcode {
    /// Send (RFC 5040 §5.3).
    Send = 0,
    /// Send with Invalidate of `inv_rkey` at the peer.
    SendInv = 1,
    /// RDMA Write (RFC 5040 §5.1).
    Write = 2,
    /// RDMA Write followed by Immediate Data (RFC 7306 §6), [`Sqe::imm`] 64 bits.
    WriteImm = 3,
    /// RDMA Read (RFC 5040 §5.2).
    Read = 4,
    /// RDMA Read, then local invalidate of `inv_rkey` (READ_WITH_INV).
    ReadInv = 5,
    /// Local invalidate of `inv_rkey`.
    LocalInv = 6,
    /// Atomic Compare and Swap (RFC 7306 §5.2.1.2).
    CmpSwap = 7,
    /// Atomic Fetch and Add (RFC 7306 §5.2.1.1).
    FetchAdd = 8,
    /// Masked Compare and Swap (RFC 7306 §5.2.1.2, masks in [`Sqe::atomic`] 2 and 3).
    MaskedCmpSwap = 9,
    /// Masked Fetch and Add (RFC 7306 §5.2.1.1, Add Mask in [`Sqe::atomic`] 3).
    MaskedFetchAdd = 10,
    /// Send with 64-bit Immediate Data: reserved, no RFC encoding; the kernel
    /// completes it with an error.
    SendImm = 11,
    /// Bind of a type-2 memory window: `rkey` names the window (its index
    /// counts, the key byte may be stale), [`Sqe::inv_rkey`] is its new rkey
    /// (same index, the consumer's key byte), SGE 0 the bound range (address,
    /// length, lkey of a region with MW_BIND), [`Sqe::mw_access`] the window's
    /// `IBV_ACCESS_REMOTE_*` rights. Completes as [`crate::cqe::CqOpcode::BindMw`].
    BindMw = 12,
}

impl SqOpcode {
    /// The opcode for a wire byte, `None` for values this ABI does not define.
    pub const fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::Send,
            1 => Self::SendInv,
            2 => Self::Write,
            3 => Self::WriteImm,
            4 => Self::Read,
            5 => Self::ReadInv,
            6 => Self::LocalInv,
            7 => Self::CmpSwap,
            8 => Self::FetchAdd,
            9 => Self::MaskedCmpSwap,
            10 => Self::MaskedFetchAdd,
            11 => Self::SendImm,
            12 => Self::BindMw,
            _ => return None,
        })
    }
}

/// [`Sqe::flags`]: complete with a CQE even if the QP's `sq_sig_all` is off.
pub const SQE_SIGNALED: u8 = 1 << 0;
/// [`Sqe::flags`]: the Send carries the Solicited Event bit (RFC 5040 §5.3).
pub const SQE_SOLICITED: u8 = 1 << 1;
/// [`Sqe::flags`]: wait for all earlier Read/Atomic responses (RFC 5040 §5.2).
pub const SQE_FENCE: u8 = 1 << 2;
/// [`Sqe::flags`]: the payload holds `inline_len` bytes of data, not SGEs.
pub const SQE_INLINE: u8 = 1 << 3;
/// Every [`Sqe::flags`] bit this ABI defines; the kernel rejects others.
pub const SQE_FLAGS_ALL: u8 = SQE_SIGNALED | SQE_SOLICITED | SQE_FENCE | SQE_INLINE;

/// Send queue element (128 bytes): a 32-byte header and the payload.
///
/// The header's last word, `ex`, holds what one operation needs beyond the
/// common fields (no operation needs two of these): the 64-bit Immediate
/// Data of WriteImm ([`Sqe::imm`]), the STag to invalidate of SendInv,
/// ReadInv and LocalInv ([`Sqe::inv_rkey`]), a BindMw's new rkey and access
/// rights ([`Sqe::inv_rkey`], [`Sqe::mw_access`]). An Atomic's four operands
/// follow its one SGE in the payload ([`Sqe::atomic`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sqe {
    /// The user's work request id, returned in the CQE.
    pub wr_id: u64,
    /// A [`SqOpcode`] value.
    pub opcode: u8,
    /// `SQE_*` flags.
    pub flags: u8,
    /// SGEs used in `payload` (0..=[`MAX_SGE`]); ignored with [`SQE_INLINE`].
    pub num_sge: u8,
    /// Bytes of inline data in `payload` with [`SQE_INLINE`] (≤ [`MAX_INLINE`]).
    pub inline_len: u8,
    /// Remote STag of Write/Read/Atomic; the window of BindMw.
    pub rkey: u32,
    /// Remote address (tagged offset) of Write/Read/Atomic.
    pub remote_addr: u64,
    /// The operation's extra word (see the type's description).
    pub ex: u64,
    /// [`MAX_SGE`] SGEs of 16 bytes, or the inline data; an Atomic's
    /// operands behind SGE 0.
    pub payload: [u8; MAX_INLINE],
}

impl Default for Sqe {
    fn default() -> Self {
        Self {
            wr_id: 0,
            opcode: 0,
            flags: 0,
            num_sge: 0,
            inline_len: 0,
            rkey: 0,
            remote_addr: 0,
            ex: 0,
            payload: [0; MAX_INLINE],
        }
    }
}

/// Where an Atomic's operands start in [`Sqe::payload`]: behind its one SGE.
const ATOMIC_AT: usize = SGE_SIZE;
/// An Atomic's operands: add or swap data, compare data, swap mask, compare
/// mask or (Masked Fetch and Add) Add Mask (RFC 7306 §5.2.1).
pub const ATOMIC_OPERANDS: usize = 4;

/// Why an SQE is not a work request rsiw can execute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqeError {
    /// Unknown opcode, or one with no iWARP encoding (Send with Immediate).
    Opcode,
    /// Flag bits this ABI does not define.
    Flags,
    /// Inline data too long, or inline on an operation without local data.
    Inline,
    /// Too many SGEs, or the wrong SGEs for the operation.
    Sges,
}

/// SGE `i` of a payload, `None` beyond [`MAX_SGE`].
fn payload_sge(payload: &[u8; MAX_INLINE], i: usize) -> Option<Sge> {
    let start = i.checked_mul(SGE_SIZE)?;
    let bytes = payload.get(start..start.checked_add(SGE_SIZE)?)?;
    let arr: &[u8; SGE_SIZE] = bytes.try_into().ok()?;
    Some(Sge::from_bytes(arr))
}

/// Stores SGE `i` into a payload; `false` beyond [`MAX_SGE`].
fn payload_set_sge(payload: &mut [u8; MAX_INLINE], i: usize, sge: Sge) -> bool {
    let Some(start) = i.checked_mul(SGE_SIZE) else {
        return false;
    };
    let Some(end) = start.checked_add(SGE_SIZE) else {
        return false;
    };
    match payload.get_mut(start..end) {
        Some(slot) => {
            slot.copy_from_slice(&sge.to_bytes());
            true
        }
        None => false,
    }
}

impl Sqe {
    /// The opcode, `None` if the byte is not a [`SqOpcode`].
    pub const fn opcode(&self) -> Option<SqOpcode> {
        SqOpcode::from_u8(self.opcode)
    }

    /// SGE `i`, `None` beyond [`MAX_SGE`] (whatever `num_sge` says).
    pub fn sge(&self, i: usize) -> Option<Sge> {
        payload_sge(&self.payload, i)
    }

    /// Stores SGE `i`; `false` beyond [`MAX_SGE`].
    pub fn set_sge(&mut self, i: usize, sge: Sge) -> bool {
        payload_set_sge(&mut self.payload, i, sge)
    }

    /// WriteImm's Immediate Data (RFC 7306 §6: 64 bits; verbs' 32-bit
    /// `imm_data` travels in the low-order, last four bytes on the wire).
    pub const fn imm(&self) -> u64 {
        self.ex
    }

    /// Sets [`Self::imm`].
    pub fn set_imm(&mut self, imm: u64) {
        self.ex = imm;
    }

    /// The STag to invalidate (SendInv at the peer, ReadInv/LocalInv
    /// locally); a BindMw's new rkey.
    pub const fn inv_rkey(&self) -> u32 {
        self.ex as u32
    }

    /// Sets [`Self::inv_rkey`], keeping [`Self::mw_access`].
    pub fn set_inv_rkey(&mut self, rkey: u32) {
        self.ex = (self.ex & !u64::from(u32::MAX)) | u64::from(rkey);
    }

    /// A BindMw's `IBV_ACCESS_REMOTE_*` rights.
    pub const fn mw_access(&self) -> u32 {
        (self.ex >> 32) as u32
    }

    /// Sets [`Self::mw_access`], keeping [`Self::inv_rkey`].
    pub fn set_mw_access(&mut self, access: u32) {
        self.ex = (self.ex & u64::from(u32::MAX)) | (u64::from(access) << 32);
    }

    /// An Atomic's operands (native-endian words behind SGE 0).
    pub fn atomic(&self) -> [u64; ATOMIC_OPERANDS] {
        let mut out = [0u64; ATOMIC_OPERANDS];
        for (i, o) in out.iter_mut().enumerate() {
            let at = ATOMIC_AT + i * 8;
            if let Some(Ok(b)) = self.payload.get(at..at + 8).map(<[u8; 8]>::try_from) {
                *o = u64::from_ne_bytes(b);
            }
        }
        out
    }

    /// Sets [`Self::atomic`].
    pub fn set_atomic(&mut self, ops: [u64; ATOMIC_OPERANDS]) {
        for (i, v) in ops.iter().enumerate() {
            let at = ATOMIC_AT + i * 8;
            if let Some(dst) = self.payload.get_mut(at..at + 8) {
                dst.copy_from_slice(&v.to_ne_bytes());
            }
        }
    }

    /// Checks that the SQE is a work request rsiw can execute on a QP allowing
    /// `max_sge` SGEs and `max_inline` inline bytes; returns its opcode. The
    /// kernel runs this on its copy of every user SQE, the provider on every
    /// SQE it builds.
    pub fn validate(&self, max_sge: u32, max_inline: u32) -> Result<SqOpcode, SqeError> {
        use SqOpcode as O;
        let op = match self.opcode() {
            None | Some(O::SendImm) => return Err(SqeError::Opcode),
            Some(op) => op,
        };
        if self.flags & !SQE_FLAGS_ALL != 0 {
            return Err(SqeError::Flags);
        }
        let carries_data = matches!(op, O::Send | O::SendInv | O::Write | O::WriteImm);
        if self.flags & SQE_INLINE != 0 {
            let fits = u32::from(self.inline_len) <= max_inline && self.inline_data().is_some();
            return if carries_data && fits {
                Ok(op)
            } else {
                Err(SqeError::Inline)
            };
        }
        if u32::from(self.num_sge) > max_sge || usize::from(self.num_sge) > MAX_SGE {
            return Err(SqeError::Sges);
        }
        let sges_ok = match op {
            // One sink buffer per Read Request (RFC 5040 §4.4).
            O::Read | O::ReadInv => self.num_sge <= 1,
            // RFC 7306 §5.2.1: the original 64-bit value comes back into one buffer.
            O::CmpSwap | O::FetchAdd | O::MaskedCmpSwap | O::MaskedFetchAdd => {
                self.num_sge == 1 && self.sge(0).map(|s| s.length) == Some(8)
            }
            O::LocalInv => self.num_sge == 0,
            O::BindMw => self.num_sge == 1,
            _ => true,
        };
        if sges_ok {
            Ok(op)
        } else {
            Err(SqeError::Sges)
        }
    }

    /// The inline data, `None` if `inline_len` exceeds [`MAX_INLINE`].
    pub fn inline_data(&self) -> Option<&[u8]> {
        self.payload.get(..usize::from(self.inline_len))
    }

    /// Appends `data` to the inline data; `false` (nothing changed) if it does
    /// not fit in [`MAX_INLINE`].
    pub fn push_inline(&mut self, data: &[u8]) -> bool {
        let start = usize::from(self.inline_len);
        let Some(end) = start.checked_add(data.len()) else {
            return false;
        };
        let Ok(len) = u8::try_from(end) else {
            return false;
        };
        match self.payload.get_mut(start..end) {
            Some(dst) => {
                dst.copy_from_slice(data);
                self.inline_len = len;
                true
            }
            None => false,
        }
    }
}

/// Receive queue element (128 bytes), for the RQ and the SRQ.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rqe {
    /// The user's work request id, returned in the CQE.
    pub wr_id: u64,
    /// SGEs used in `payload` (0..=[`MAX_SGE`]).
    pub num_sge: u8,
    /// Reserved, zero.
    pub reserved: [u8; 23],
    /// [`MAX_SGE`] SGEs of 16 bytes.
    pub payload: [u8; MAX_SGE * SGE_SIZE],
}

impl Default for Rqe {
    fn default() -> Self {
        Self {
            wr_id: 0,
            num_sge: 0,
            reserved: [0; 23],
            payload: [0; MAX_INLINE],
        }
    }
}

impl Rqe {
    /// SGE `i`, `None` beyond [`MAX_SGE`] (whatever `num_sge` says).
    pub fn sge(&self, i: usize) -> Option<Sge> {
        payload_sge(&self.payload, i)
    }

    /// Stores SGE `i`; `false` beyond [`MAX_SGE`].
    pub fn set_sge(&mut self, i: usize, sge: Sge) -> bool {
        payload_set_sge(&mut self.payload, i, sge)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    #[test]
    fn sqe_layout() {
        assert_eq!(size_of::<Sqe>(), SQE_SIZE);
        assert_eq!(align_of::<Sqe>(), 8);
        assert_eq!(offset_of!(Sqe, wr_id), 0);
        assert_eq!(offset_of!(Sqe, opcode), 8);
        assert_eq!(offset_of!(Sqe, flags), 9);
        assert_eq!(offset_of!(Sqe, num_sge), 10);
        assert_eq!(offset_of!(Sqe, inline_len), 11);
        assert_eq!(offset_of!(Sqe, rkey), 12);
        assert_eq!(offset_of!(Sqe, remote_addr), 16);
        assert_eq!(offset_of!(Sqe, ex), 24);
        assert_eq!(offset_of!(Sqe, payload), 32);
        // The header leaves exactly MAX_SGE SGEs of room.
        assert_eq!(SQE_SIZE - offset_of!(Sqe, payload), MAX_SGE * SGE_SIZE);
    }

    #[test]
    fn shared_words_do_not_overlap() {
        let mut s = Sqe::default();
        s.set_inv_rkey(0x1234_5678);
        s.set_mw_access(0x9abc_def0);
        assert_eq!((s.inv_rkey(), s.mw_access()), (0x1234_5678, 0x9abc_def0));
        s.set_inv_rkey(7);
        assert_eq!((s.inv_rkey(), s.mw_access()), (7, 0x9abc_def0));
        s.set_imm(0x0102_0304_0506_0708);
        assert_eq!(s.imm(), 0x0102_0304_0506_0708);
        // Atomic operands behind SGE 0, which keeps its place.
        let g = Sge {
            addr: 0x1000,
            length: 8,
            lkey: 3,
        };
        assert!(s.set_sge(0, g));
        s.set_atomic([1, 2, u64::MAX, 4]);
        assert_eq!(s.atomic(), [1, 2, u64::MAX, 4]);
        assert_eq!(s.sge(0), Some(g));
        #[cfg(target_endian = "little")]
        assert_eq!(&s.payload[16..24], &[1, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn rqe_and_sge_layout() {
        assert_eq!(size_of::<Rqe>(), RQE_SIZE);
        assert_eq!(offset_of!(Rqe, num_sge), 8);
        assert_eq!(offset_of!(Rqe, payload), 32);
        assert_eq!(size_of::<Sge>(), SGE_SIZE);
        assert_eq!(offset_of!(Sge, length), 8);
        assert_eq!(offset_of!(Sge, lkey), 12);
    }

    #[test]
    fn sge_roundtrip_and_position() {
        let mut sqe = Sqe::default();
        let s = Sge {
            addr: 0x1122_3344_5566_7788,
            length: 0x99aa_bbcc,
            lkey: 0xdead_beef,
        };
        assert!(sqe.set_sge(5, s));
        assert!(!sqe.set_sge(6, s));
        assert_eq!(sqe.sge(5), Some(s));
        assert_eq!(sqe.sge(0), Some(Sge::default()));
        assert_eq!(sqe.sge(6), None);
        assert_eq!(sqe.sge(usize::MAX), None);
        // Native-endian fields at 80..96 of the payload (x86: little-endian).
        #[cfg(target_endian = "little")]
        assert_eq!(
            &sqe.payload[80..96],
            &[
                0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xcc, 0xbb, 0xaa, 0x99, 0xef, 0xbe,
                0xad, 0xde
            ]
        );
        let mut rqe = Rqe::default();
        assert!(rqe.set_sge(0, s));
        assert_eq!(rqe.sge(0), Some(s));
    }

    #[test]
    fn inline_data_bounded() {
        let mut sqe = Sqe::default();
        assert!(sqe.push_inline(&[1, 2, 3]));
        assert!(sqe.push_inline(&[4]));
        assert_eq!(sqe.inline_data(), Some(&[1u8, 2, 3, 4][..]));
        assert!(!sqe.push_inline(&[0; MAX_INLINE]));
        assert_eq!(sqe.inline_len, 4);
        assert!(sqe.push_inline(&[9; MAX_INLINE - 4]));
        assert_eq!(sqe.inline_data().map(|d| d.len()), Some(MAX_INLINE));
        sqe.inline_len = MAX_INLINE as u8 + 1;
        assert_eq!(sqe.inline_data(), None);
        sqe.inline_len = u8::MAX;
        assert_eq!(sqe.inline_data(), None);
    }

    fn sqe(op: SqOpcode, flags: u8, sges: &[u32]) -> Sqe {
        let mut s = Sqe {
            opcode: op as u8,
            flags,
            num_sge: sges.len() as u8,
            ..Default::default()
        };
        for (i, &l) in sges.iter().enumerate() {
            s.set_sge(
                i,
                Sge {
                    addr: 0,
                    length: l,
                    lkey: 1,
                },
            );
        }
        s
    }

    #[test]
    fn validate_accepts_what_rsiw_executes() {
        // (opcode, flags, SGE lengths, max SGEs, max inline)
        let cases = [
            (SqOpcode::Send, SQE_SIGNALED, &[1, 2][..], 2, 0),
            (SqOpcode::Read, 0, &[4096], 6, 0),
            (SqOpcode::FetchAdd, 0, &[8], 6, 0),
            (SqOpcode::LocalInv, 0, &[], 6, 0),
            // A bind names exactly one range.
            (SqOpcode::BindMw, 0, &[4096], 6, 96),
        ];
        for (op, flags, sges, max_sge, max_inline) in cases {
            assert_eq!(
                sqe(op, flags, sges).validate(max_sge, max_inline),
                Ok(op),
                "{op:?}"
            );
        }
        let mut w = sqe(SqOpcode::Write, SQE_INLINE, &[]);
        assert!(w.push_inline(&[7; 40]));
        assert_eq!(w.validate(1, 64), Ok(SqOpcode::Write));
    }

    #[test]
    fn validate_refuses_with_reason() {
        // (opcode, flags, SGE lengths, max SGEs, expected error)
        let cases = [
            (SqOpcode::SendImm, 0, &[][..], 6, SqeError::Opcode),
            (SqOpcode::Send, 0x80, &[], 6, SqeError::Flags),
            (SqOpcode::Send, 0, &[1, 1, 1], 2, SqeError::Sges),
            (SqOpcode::Read, 0, &[1, 1], 6, SqeError::Sges),
            (SqOpcode::CmpSwap, 0, &[4], 6, SqeError::Sges),
            (SqOpcode::LocalInv, 0, &[1], 6, SqeError::Sges),
            (SqOpcode::BindMw, 0, &[], 6, SqeError::Sges),
            (SqOpcode::BindMw, 0, &[1, 2], 6, SqeError::Sges),
            (SqOpcode::BindMw, SQE_INLINE, &[], 6, SqeError::Inline),
            (SqOpcode::Read, SQE_INLINE, &[], 6, SqeError::Inline),
        ];
        for (op, flags, sges, max_sge, err) in cases {
            assert_eq!(
                sqe(op, flags, sges).validate(max_sge, 96),
                Err(err),
                "{op:?} flags {flags:#x} sges {sges:?}"
            );
        }
        let mut bad = sqe(SqOpcode::Send, 0, &[]);
        bad.opcode = 99;
        assert_eq!(bad.validate(6, 96), Err(SqeError::Opcode));
        let mut long = sqe(SqOpcode::Send, SQE_INLINE, &[]);
        assert!(long.push_inline(&[0; 65]));
        assert_eq!(long.validate(6, 64), Err(SqeError::Inline));
        // A num_sge beyond the payload never reads past it.
        let mut huge = sqe(SqOpcode::Send, 0, &[]);
        huge.num_sge = 200;
        assert_eq!(huge.validate(u32::MAX, 96), Err(SqeError::Sges));
        long.inline_len = u8::MAX;
        assert_eq!(long.validate(6, u32::MAX), Err(SqeError::Inline));
    }

    #[test]
    fn opcodes() {
        for v in 0..=12u8 {
            assert_eq!(SqOpcode::from_u8(v).map(|o| o as u8), Some(v));
        }
        assert_eq!(SqOpcode::from_u8(13), None);
        assert_eq!(SqOpcode::from_u8(0xff), None);
        let sqe = Sqe {
            opcode: 200,
            ..Default::default()
        };
        assert_eq!(sqe.opcode(), None);
    }
}
