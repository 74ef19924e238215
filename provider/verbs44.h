/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The system's (Debian 12: rdma-core 44) public verbs header, for layout checks. */
#include <infiniband/verbs.h>
