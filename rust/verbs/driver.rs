// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! The module's lifetime: registration at load, unregistration of every rsiw
//! device at unload.

use crate::{abi, kapi::registration::Registration, objects::device::Device};
use kernel::prelude::*;

/// The loaded module.
pub(crate) struct RsiwModule {
    _registration: Registration<Device>,
}

impl kernel::Module for RsiwModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // Once, not per connection: the MPA CRC (RFC 5044 §4.4) the engines
        // compute is the kernel's crc32c, checked against known vectors.
        if crate::proto::crc::self_test(&crate::kapi::crc::KernelCrc32c).is_err() {
            pr_err!("the kernel's crc32c fails the MPA CRC test vectors\n");
            return Err(EIO);
        }
        let registration = Registration::new()?;
        pr_info!("loaded, user ABI {}\n", abi::ABI_VERSION);
        Ok(Self {
            _registration: registration,
        })
    }
}
