/* SPDX-License-Identifier: GPL-2.0 */
/* rsiw TX work placement: which CPU runs a connection's TX work item. */
#ifndef RSIW_SHIM_WQ_H
#define RSIW_SHIM_WQ_H

#include <linux/workqueue.h>

bool rsiw_shim_queue_tx_work(struct work_struct *w, unsigned int hint);

#endif
