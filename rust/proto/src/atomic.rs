// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The RFC 7306 §5.1 atomic ALU: masked FetchAdd (§5.1.1), masked CmpSwap (§5.1.2),
//! the Figure 5 field usage, and draft-ietf-storm-rdmap-ext-03 Swap (§5.1.2 there).
//!
//! Everything here is pure arithmetic on 64-bit values already converted from the
//! big-endian wire format (RFC 7306 §5.1.1: "The fields are in big-endian format on
//! the wire") to host order. The read-modify-write itself, its atomicity (§5.3) and
//! the byte order of the target memory are the caller's business.

/// Atomic Operation Code, the low 4 bits of the first word of the Atomic Request
/// header (RFC 7306 §5.2.1, Figure 4; registry in §10.1).
///
/// RFC 7306 has no separate "masked" opcodes: masking is carried in the Add/Swap
/// Mask and Compare Mask fields of every request, and a zero Add Mask / all-ones
/// Compare and Swap Masks give the unmasked operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AOpCode {
    /// 0x0: masked FetchAdd (RFC 7306 §5.1.1).
    FetchAdd,
    /// 0x1: Swap. Only in draft-ietf-storm-rdmap-ext-03 §5.1.2; RFC 7306 §10.1
    /// lists 0x1 as "Reserved". Executed only if the caller opts in (see [`Dialect`]).
    Swap,
    /// 0x2: masked CmpSwap (RFC 7306 §5.1.2).
    CmpSwap,
    /// Any other 4-bit value (the held value is in `0..=15`).
    Unknown(u8),
}

impl AOpCode {
    /// Wire value of FetchAdd.
    pub const FETCH_ADD: u8 = 0x0;
    /// Wire value of Swap (draft-03 only).
    pub const SWAP: u8 = 0x1;
    /// Wire value of CmpSwap.
    pub const CMP_SWAP: u8 = 0x2;

    /// Decodes the first 32-bit word of the Atomic Request header (host order):
    /// the 28 reserved bits are ignored on receive (RFC 7306 §5.2.1).
    pub const fn from_header_word(word: u32) -> Self {
        Self::from_bits((word & 0xf) as u8)
    }

    /// Decodes a 4-bit AOpCode; bits above the low four are ignored.
    pub const fn from_bits(v: u8) -> Self {
        match v & 0xf {
            Self::FETCH_ADD => Self::FetchAdd,
            Self::SWAP => Self::Swap,
            Self::CMP_SWAP => Self::CmpSwap,
            other => Self::Unknown(other),
        }
    }

    /// The 4-bit wire value (reserved bits zero, as RFC 7306 §5.2.1 requires on transmit).
    pub const fn bits(self) -> u8 {
        match self {
            Self::FetchAdd => Self::FETCH_ADD,
            Self::Swap => Self::SWAP,
            Self::CmpSwap => Self::CMP_SWAP,
            Self::Unknown(v) => v & 0xf,
        }
    }
}

/// Which specification decides the set of supported AOpCodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// RFC 7306: FetchAdd and CmpSwap only; 0x1 is reserved and rejected.
    #[default]
    Rfc7306,
    /// draft-ietf-storm-rdmap-ext-03: FetchAdd, Swap and CmpSwap.
    Draft03,
}

/// The four 64-bit operand fields of an Atomic Request header (RFC 7306 Figure 4),
/// in host order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AtomicFields {
    /// "Add or Swap Data".
    pub add_swap_data: u64,
    /// "Add or Swap Mask".
    pub add_swap_mask: u64,
    /// "Compare Data".
    pub compare_data: u64,
    /// "Compare Mask".
    pub compare_mask: u64,
}

impl AtomicFields {
    /// The transmit encoding of an unmasked FetchAdd: Add Mask 0 (a plain 64-bit add,
    /// RFC 7306 §5.1.1), Compare Data 0 and Compare Mask all ones (RFC 7306 §5.2.1).
    pub const fn fetch_add(add: u64) -> Self {
        Self {
            add_swap_data: add,
            add_swap_mask: 0,
            compare_data: 0,
            compare_mask: !0,
        }
    }

    /// The transmit encoding of an unmasked CmpSwap: both masks all ones.
    pub const fn cmp_swap(compare: u64, swap: u64) -> Self {
        Self {
            add_swap_data: swap,
            add_swap_mask: !0,
            compare_data: compare,
            compare_mask: !0,
        }
    }

    /// The transmit encoding of a Swap: Swap Mask and Compare Mask all ones, Compare
    /// Data zero (draft-03 §5.2.1; the receiver ignores all three).
    pub const fn swap(data: u64) -> Self {
        Self {
            add_swap_data: data,
            add_swap_mask: !0,
            compare_data: 0,
            compare_mask: !0,
        }
    }
}

/// A decoded atomic operation holding only the fields its AOpCode uses (RFC 7306
/// Figure 5; draft-03 Figure 5 for Swap). Fields marked "N/A" there are dropped
/// here, so they cannot influence the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicOp {
    /// Masked FetchAdd: uses Add Data and Add Mask.
    FetchAdd {
        /// Add Data.
        add: u64,
        /// Add Mask: a set bit marks the most significant bit of a field.
        mask: u64,
    },
    /// Swap: uses Swap Data only.
    Swap {
        /// Swap Data.
        data: u64,
    },
    /// Masked CmpSwap: uses all four fields.
    CmpSwap {
        /// Compare Data.
        compare: u64,
        /// Compare Mask.
        compare_mask: u64,
        /// Swap Data.
        swap: u64,
        /// Swap Mask.
        swap_mask: u64,
    },
}

/// Why an atomic request cannot be executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicError {
    /// The AOpCode is not supported in this [`Dialect`]. RFC 7306 §5.2.1 rule 4:
    /// an error MUST be surfaced; the RDMAP layer answers with a Terminate.
    UnsupportedOpcode(u8),
    /// The target ULP buffer address is not 64-bit aligned. RFC 7306 §5.1.1/§5.1.2:
    /// memory MUST NOT be modified; §8.2: Terminate "Remote Operation Error,
    /// Catastrophic error, localized to RDMAP Stream".
    Misaligned,
}

/// Result of applying an [`AtomicOp`] to the original remote value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The value read; returned to the Requester as "Original Remote Data Value"
    /// in every case (RFC 7306 §5.2.2).
    pub original: u64,
    /// The value the target holds afterwards (equal to `original` when `write` is false).
    pub new: u64,
    /// Whether the operation stores `new`: always for FetchAdd and Swap, only on a
    /// compare match for CmpSwap (RFC 7306 §5.1.2: otherwise memory is not changed).
    pub write: bool,
}

/// Masked FetchAdd, word-parallel (RFC 7306 §5.1.1).
///
/// A set Add Mask bit `i` discards the carry out of bit `i`. Clearing the mask bits
/// from both operands before adding stops every carry chain at the next mask bit
/// (it lands there as a plain 1 and goes no further); XOR-ing the operands' own
/// mask-position bits back in then gives `a ^ b ^ carry_in` at those positions,
/// which is exactly what the pseudocode computes there. A carry out of bit 63 is
/// lost either way (64-bit arithmetic).
#[inline]
pub const fn masked_fetch_add(original: u64, add: u64, mask: u64) -> u64 {
    (original & !mask).wrapping_add(add & !mask) ^ ((original ^ add) & mask)
}

/// Masked CmpSwap (RFC 7306 §5.1.2): `Some(new)` if `original` equals `compare`
/// in every bit of `compare_mask`, `None` (memory untouched) otherwise.
#[inline]
pub const fn masked_cmp_swap(
    original: u64,
    compare: u64,
    compare_mask: u64,
    swap: u64,
    swap_mask: u64,
) -> Option<u64> {
    if (compare ^ original) & compare_mask == 0 {
        Some((original & !swap_mask) | (swap & swap_mask))
    } else {
        None
    }
}

/// True if `addr`, the resolved ULP buffer address of the target, is 64-bit
/// aligned as RFC 7306 §5.1.1, §5.1.2 and §8.2 require.
#[inline]
pub const fn is_aligned(addr: u64) -> bool {
    addr & 7 == 0
}

impl AtomicOp {
    /// Decodes an AOpCode and the four request fields, keeping only what Figure 5
    /// says the opcode uses.
    pub const fn decode(
        op: AOpCode,
        f: &AtomicFields,
        dialect: Dialect,
    ) -> Result<Self, AtomicError> {
        match (op, dialect) {
            (AOpCode::FetchAdd, _) => Ok(Self::FetchAdd {
                add: f.add_swap_data,
                mask: f.add_swap_mask,
            }),
            // draft-03 Figure 5: Swap Mask, Compare Data and Compare Mask are N/A.
            (AOpCode::Swap, Dialect::Draft03) => Ok(Self::Swap {
                data: f.add_swap_data,
            }),
            (AOpCode::CmpSwap, _) => Ok(Self::CmpSwap {
                compare: f.compare_data,
                compare_mask: f.compare_mask,
                swap: f.add_swap_data,
                swap_mask: f.add_swap_mask,
            }),
            // RFC 7306 §5.2.1 rule 4.
            (AOpCode::Swap, Dialect::Rfc7306) | (AOpCode::Unknown(_), _) => {
                Err(AtomicError::UnsupportedOpcode(op.bits()))
            }
        }
    }

    /// Computes the operation's effect on `original`.
    pub const fn apply(&self, original: u64) -> Outcome {
        match *self {
            Self::FetchAdd { add, mask } => Outcome {
                original,
                new: masked_fetch_add(original, add, mask),
                write: true,
            },
            Self::Swap { data } => Outcome {
                original,
                new: data,
                write: true,
            },
            Self::CmpSwap {
                compare,
                compare_mask,
                swap,
                swap_mask,
            } => match masked_cmp_swap(original, compare, compare_mask, swap, swap_mask) {
                Some(new) => Outcome {
                    original,
                    new,
                    write: true,
                },
                None => Outcome {
                    original,
                    new: original,
                    write: false,
                },
            },
        }
    }
}

/// Validates and executes one atomic request against the value `original` found
/// at the 8-byte-aligned address `addr`: alignment first, so a misaligned request
/// never yields a value to store.
pub const fn execute(
    op: AOpCode,
    fields: &AtomicFields,
    dialect: Dialect,
    addr: u64,
    original: u64,
) -> Result<Outcome, AtomicError> {
    if !is_aligned(addr) {
        return Err(AtomicError::Misaligned);
    }
    match AtomicOp::decode(op, fields, dialect) {
        Ok(decoded) => Ok(decoded.apply(original)),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[path = "atomic_test.rs"]
mod test;
