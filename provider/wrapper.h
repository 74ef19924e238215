/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* What the rsiw provider uses of rdma-core v55's provider interface. */
#include <errno.h>
#include <stdlib.h>
#include <infiniband/driver.h>
#include <infiniband/kern-abi.h>
