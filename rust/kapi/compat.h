/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What differs in the C API between the kernel lines rsiw builds for (6.12
 * and 7.x), in one place; the Rust side's differences are in compat.rs, under
 * the same line (Kbuild's rsiw_k7 cfg is LINUX_VERSION_CODE >= 7.0 here).
 */
#ifndef RSIW_COMPAT_H
#define RSIW_COMPAT_H

#include <linux/version.h>

#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
#define RSIW_K7 1
#endif

#ifdef RSIW_K7
/* 7.x: ib_umem_get() of a user address is ib_umem_get_va(). */
#define rsiw_ib_umem_get(dev, addr, len, access) ib_umem_get_va(dev, addr, len, access)
#else
#define rsiw_ib_umem_get(dev, addr, len, access) ib_umem_get(dev, addr, len, access)
#endif

#ifdef RSIW_K7
/* 7.x: kernel_bind()/kernel_connect() take a struct sockaddr_unsized. */
typedef struct sockaddr_unsized rsiw_sockaddr;
#else
typedef struct sockaddr rsiw_sockaddr;
#endif

/*
 * 7.x: a per-CPU workqueue says so (WQ_PERCPU; without it or WQ_UNBOUND,
 * alloc_workqueue() warns); 6.12's are per-CPU unless WQ_UNBOUND.
 */
#ifdef RSIW_K7
#define RSIW_WQ_PERCPU WQ_PERCPU
#else
#define RSIW_WQ_PERCPU 0
#endif

/* 6.16 renamed from_timer() to timer_container_of(). */
#ifndef timer_container_of
#define timer_container_of(var, t, field) from_timer(var, t, field)
#endif

#endif
