/* SPDX-License-Identifier: GPL-2.0 */
/* rsiw work placement: which CPU runs a connection's work item. */
#ifndef RSIW_WQ_H
#define RSIW_WQ_H

#include <linux/workqueue.h>

int rsiw_shim_wq_init(void);
void rsiw_shim_wq_exit(void);
bool rsiw_shim_queue_tx_work(struct work_struct *w, unsigned int hint);
bool rsiw_shim_queue_rx_work(struct work_struct *w);

#endif
