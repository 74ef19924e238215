// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Who owns an object a caller names by number: the user process (thread
//! group) that created it, or the kernel; and whether the current caller is
//! that owner.

use super::bindings;
use core::ptr::NonNull;

/// The owner of an object, recorded when it is created.
///
/// # Invariants
///
/// `pid` is `None` for the kernel, or a `struct pid` reference (of a thread
/// group) this value owns, released in drop.
pub(crate) struct Owner {
    pid: Option<NonNull<bindings::pid>>,
}

// SAFETY: a counted `struct pid` may be compared and released from any
// context and any thread.
unsafe impl Send for Owner {}
// SAFETY: as above; nothing is mutated through `&Owner`.
unsafe impl Sync for Owner {}

impl Owner {
    /// The calling context: the caller's thread group if it is a user
    /// process, else the kernel. Process context.
    pub(crate) fn current() -> Self {
        // SAFETY: no preconditions; the result is a counted reference or null.
        let pid = NonNull::new(unsafe { bindings::rsiw_shim_owner_current() });
        // INVARIANT: the reference (if any) is ours, released in drop.
        Self { pid }
    }

    /// The kernel as owner.
    pub(crate) fn kernel() -> Self {
        Self { pid: None }
    }

    /// True if the caller may act for this owner: a user object's own
    /// process (its thread group), whatever its privileges; for a kernel
    /// object, a kernel thread or a task with `CAP_NET_ADMIN` (a kernel ULP
    /// calling from a privileged process). Process context.
    pub(crate) fn is_caller(&self) -> bool {
        match self.pid {
            // SAFETY: `p` is a live counted reference (type invariant).
            Some(p) => unsafe { bindings::rsiw_shim_owner_is_current(p.as_ptr()) },
            // SAFETY: no preconditions.
            None => unsafe { bindings::rsiw_shim_caller_is_privileged() },
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        if let Some(p) = self.pid {
            // SAFETY: our counted reference (type invariant), released once.
            unsafe { bindings::rsiw_shim_owner_put(p.as_ptr()) };
        }
    }
}
