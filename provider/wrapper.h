/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* What the rsiw provider uses of rdma-core v55's provider interface. */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <infiniband/driver.h>
#include <infiniband/kern-abi.h>
