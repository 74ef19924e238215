// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! Loads the built provider the way libibverbs does (dlopen, next to the system
//! libibverbs) and checks that its constructor registers the rsiw driver.
//!
//! The test binary exports its own `verbs_register_driver_34` (see build.rs), which
//! the dynamic linker prefers for the provider's reference: it records the ops the
//! provider registers, then hands them on to the real libibverbs.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// The bindings the provider itself uses.
#[path = "../src/sys.rs"]
mod sys;

const RTLD_NOW: c_int = 2;
const RTLD_GLOBAL: c_int = 0x100;

extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlvsym(handle: *mut c_void, name: *const c_char, version: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
}

/// The ops the provider registered, and how often it did.
static REGISTERED: AtomicPtr<sys::verbs_device_ops> = AtomicPtr::new(std::ptr::null_mut());
static CALLS: AtomicUsize = AtomicUsize::new(0);
/// The system libibverbs' `verbs_register_driver_34`.
static REAL: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Interposes libibverbs' registration call for the provider loaded below.
///
/// # Safety
///
/// Called by the provider's constructor with its 'static ops, after [`REAL`] is set.
#[no_mangle]
pub unsafe extern "C" fn verbs_register_driver_34(ops: *const sys::verbs_device_ops) {
    CALLS.fetch_add(1, Ordering::SeqCst);
    REGISTERED.store(ops.cast_mut(), Ordering::SeqCst);
    let real = REAL.load(Ordering::SeqCst);
    assert!(
        !real.is_null(),
        "libibverbs' verbs_register_driver_34 not resolved"
    );
    // SAFETY: `real` is libibverbs' function of exactly this signature.
    let real: unsafe extern "C" fn(*const sys::verbs_device_ops) =
        unsafe { std::mem::transmute(real) };
    // SAFETY: the ops are 'static, as libibverbs requires.
    unsafe { real(ops) }
}

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated message.
    let e = unsafe { dlerror() };
    if e.is_null() {
        return "?".into();
    }
    // SAFETY: non-null, NUL-terminated (above).
    unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
}

/// The provider cargo built for this test run: `target/<profile>/deps/`, where the
/// test executable is too (cargo builds the lib's cdylib there when a test needs the
/// lib, but copies it to `target/<profile>/` only for `cargo build`).
fn provider_path() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .expect("target/<profile>/deps")
        .join("librsiw_provider.so")
}

#[test]
fn dlopen_registers_the_rsiw_driver() {
    // SAFETY: loading the system libibverbs runs only its own initialisers.
    let ib = unsafe { dlopen(c"libibverbs.so.1".as_ptr(), RTLD_NOW | RTLD_GLOBAL) };
    assert!(
        !ib.is_null(),
        "dlopen libibverbs.so.1: {} (apt-get install libibverbs1)",
        dl_error()
    );
    // SAFETY: valid handle and NUL-terminated strings.
    let real = unsafe {
        dlvsym(
            ib,
            c"verbs_register_driver_34".as_ptr(),
            c"IBVERBS_PRIVATE_34".as_ptr(),
        )
    };
    assert!(
        !real.is_null(),
        "libibverbs has no verbs_register_driver_34@IBVERBS_PRIVATE_34: {}",
        dl_error()
    );
    REAL.store(real, Ordering::SeqCst);

    let so = provider_path();
    assert!(so.exists(), "{} not built", so.display());
    let path = std::ffi::CString::new(so.as_os_str().as_encoded_bytes()).expect("path without NUL");
    // SAFETY: loading the provider runs its constructor, the code under test.
    let h = unsafe { dlopen(path.as_ptr(), RTLD_NOW) };
    assert!(!h.is_null(), "dlopen {}: {}", so.display(), dl_error());

    assert_eq!(
        CALLS.load(Ordering::SeqCst),
        1,
        "the constructor registers exactly once"
    );
    let ops = REGISTERED.load(Ordering::SeqCst);
    // SAFETY: the provider registered 'static ops (checked non-null by the count).
    let ops = unsafe { &*ops };
    // SAFETY: name and the table's modalias are 'static C strings of the provider.
    unsafe {
        assert_eq!(CStr::from_ptr(ops.name), c"rsiw");
        let abi = rsiw_abi::ABI_VERSION;
        assert_eq!(
            (ops.match_min_abi_version, ops.match_max_abi_version),
            (abi, abi)
        );
        let table = std::slice::from_raw_parts(ops.match_table, 2);
        assert_eq!(u32::from(table[0].kind), sys::VERBS_MATCH_MODALIAS);
        assert_eq!(CStr::from_ptr(table[0].u.modalias), c"rdma_device:*Nrsiw*");
        assert_eq!(u32::from(table[1].kind), sys::VERBS_MATCH_SENTINEL);
    }
    assert!(
        ops.alloc_device.is_some() && ops.uninit_device.is_some() && ops.alloc_context.is_some()
    );
}
