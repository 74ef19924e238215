// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! FetchAdd, CmpSwap and the masked forms against the reference ALU (RFC 7306 §5.1).

use super::*;

/// RFC 7306 §5.1.1: FetchAdd returns the original and stores original + add (Add Mask 0).
pub(super) fn fetch_add_random(env: &Env) -> Result<(), String> {
    let (mut c, t) = pair(env, ATOMIC_ACCESS, 0)?;
    let res = Mr::new(&c.pd, 8, ffi::LOCAL_WRITE, 0).map_err(io)?;
    let mut rng = Rng::new("atomic-fetch-add-random");
    for i in 0..64u64 {
        let (orig, add) = (rng.next(), if i % 8 == 0 { !0 } else { rng.next() });
        t.set_word(orig)?;
        let op = Op::FetchAdd(t.word_addr(), c.resp.rkey, add);
        let got = atomic(&mut c, &res, i, op, ffi::OP_FETCH_ADD)?;
        let want = masked_fetch_add(orig, add, 0);
        let now = t.word()?;
        if got != orig || now != want {
            return Err(format!(
                "FetchAdd {add:#x} on {orig:#x}: returned {got:#x}, memory {now:#x}; reference {orig:#x}, {want:#x}"
            ));
        }
    }
    c.close()
}

/// RFC 7306 §5.1.2: CmpSwap returns the original; swaps only on a match.
pub(super) fn cmp_swap_random(env: &Env) -> Result<(), String> {
    let (mut c, t) = pair(env, ATOMIC_ACCESS, 0)?;
    let res = Mr::new(&c.pd, 8, ffi::LOCAL_WRITE, 0).map_err(io)?;
    let mut rng = Rng::new("atomic-cmp-swap-random");
    for i in 0..64u64 {
        let orig = rng.next();
        // Every other compare matches; the others differ in one random bit or entirely.
        let cmp = match i % 4 {
            0 | 2 => orig,
            1 => orig ^ (1 << (rng.next() % 64)),
            _ => rng.next(),
        };
        let swap = rng.next();
        t.set_word(orig)?;
        let op = Op::CmpSwap(t.word_addr(), c.resp.rkey, cmp, swap);
        let got = atomic(&mut c, &res, i, op, ffi::OP_COMP_SWAP)?;
        let want = masked_cmp_swap(orig, cmp, !0, swap, !0).unwrap_or(orig);
        let now = t.word()?;
        if got != orig || now != want {
            return Err(format!(
                "CmpSwap({cmp:#x}, {swap:#x}) on {orig:#x}: returned {got:#x}, memory {now:#x}; reference {orig:#x}, {want:#x}"
            ));
        }
    }
    c.close()
}

/// RFC 7306 §5.1 through the provider's direct verbs (`rsiwdv.h`): 64 masked FetchAdds and
/// CmpSwaps with random operands and masks equal the reference ALU, value and memory.
pub(super) fn masked_random(env: &Env) -> Result<(), String> {
    let dv = crate::dv::Dv::load()?;
    let (mut c, t) = pair(env, ATOMIC_ACCESS, 0)?;
    let res = Mr::new(&c.pd, 8, ffi::LOCAL_WRITE, 0).map_err(io)?;
    let mut rng = Rng::new("atomic-masked-random-dv");
    let (mut matched, mut missed) = (0, 0);
    for i in 0..64u64 {
        let orig = rng.next();
        let (a, am) = (rng.next(), rng.next() & rng.next());
        let cm = rng.next();
        // Every other CmpSwap differs from the word only outside the compare mask.
        let cmp = if i % 4 < 2 {
            orig ^ (rng.next() & !cm)
        } else {
            rng.next()
        };
        t.set_word(orig)?;
        res.write(0, &[0xa5; 8]).map_err(io)?;
        let (want, op) = if i % 2 == 0 {
            dv.masked_fetch_add(
                &c.qp,
                i,
                &sge8(&res),
                (t.word_addr(), c.resp.rkey),
                (a, am),
                ffi::SIGNALED,
            )?;
            (masked_fetch_add(orig, a, am), ffi::OP_FETCH_ADD)
        } else {
            dv.masked_cmp_swap(
                &c.qp,
                i,
                &sge8(&res),
                (t.word_addr(), c.resp.rkey),
                (cmp, cm),
                (a, am),
                ffi::SIGNALED,
            )?;
            let r = masked_cmp_swap(orig, cmp, cm, a, am);
            if r.is_some() {
                matched += 1
            } else {
                missed += 1
            }
            (r.unwrap_or(orig), ffi::OP_COMP_SWAP)
        };
        wait::expect_ok(&mut c.pend, &c.cq, i, op, None)?;
        let got = u64::from_ne_bytes(
            res.read(0, 8)
                .map_err(io)?
                .try_into()
                .map_err(|_| "short")?,
        );
        let now = t.word()?;
        if got != orig || now != want {
            return Err(format!(
                "op {i}: orig {orig:#x}, operands {a:#x}/{am:#x}/{cmp:#x}/{cm:#x}: returned {got:#x}, memory {now:#x}, reference {want:#x}"
            ));
        }
    }
    if matched == 0 || missed == 0 {
        return Err(format!(
            "CmpSwap outcomes: {matched} matches, {missed} misses"
        ));
    }
    c.close()
}
