/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared declarations of the kernel-verbs test module: one connection's two
 * ends, the FRWR region helper, completion waits and result reporting.
 */
#ifndef RSIW_KV_H
#define RSIW_KV_H

#include <linux/scatterlist.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

/* Pages in every FRWR region: enough that transfers cross page boundaries. */
#define KV_PAGES 4
#define KV_REGION (KV_PAGES * PAGE_SIZE)
/* Every wait is bounded: a broken device fails a case, never hangs insmod. */
#define KV_CM_MS 10000
#define KV_WC_MS 5000

/* One end of a connection: its cm_id, verbs objects and a DMA-mapped scratch buffer. */
struct kv_end {
	const char *name;
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	bool qp_created;
	bool connected;
	spinlock_t lock;
	wait_queue_head_t wq;
	unsigned long events;	/* bit n: RDMA_CM_EVENT n was delivered */
	int ev_status;
	void *buf;		/* KV_REGION bytes, for SEND/RECV and READ/WRITE locals */
	u64 dma;
};

/* A connection: the accepted (server) end and the connecting (client) end. */
struct kv_conn {
	struct kv_end srv;
	struct kv_end cli;
};

/* A fast-registration region of KV_PAGES separate pages. */
struct kv_frmr {
	struct ib_mr *mr;
	struct page *pages[KV_PAGES];
	struct scatterlist sg[KV_PAGES];
	int mapped;	/* ib_dma_map_sg result, 0 if not mapped */
};

/* Module parameters. */
extern char *kv_dev;
extern char *kv_addr;
extern int kv_port;
extern bool kv_atomics;
extern bool kv_noinv;
extern bool kv_hostile;

/* kv_main.c: results. */
void kv_pass(const char *name);
__printf(2, 3) void kv_fail(const char *name, const char *fmt, ...);
/* kv_check: report one case from a condition; returns the condition. */
#define kv_check(name, cond, fmt, ...) \
	((cond) ? (kv_pass(name), true) : (kv_fail(name, fmt, ##__VA_ARGS__), false))

/* kv_conn.c: listener, connections, completions. */
int kv_listen_start(void);
void kv_listen_stop(void);
int kv_connect(struct kv_conn *c);
void kv_disconnect(struct kv_conn *c);
u64 kv_next_wr_id(void);
int kv_wait_wc(struct kv_end *e, u64 wr_id, struct ib_wc *wc, unsigned int ms);
int kv_post_send_wait(struct kv_end *e, struct ib_send_wr *wr, struct ib_wc *wc);
int kv_post_recv(struct kv_end *e, u64 wr_id, u32 offset, u32 len);
struct ib_sge kv_sge(struct kv_end *e, u32 offset, u32 len);
int kv_post_rdma(struct kv_end *e, enum ib_wr_opcode op, u64 wr_id, struct ib_sge *sge,
		 u64 raddr, u32 rkey, u32 inv);
int kv_send(struct kv_end *e, enum ib_wr_opcode op, u32 offset, u32 len, u32 inv,
	    struct ib_wc *wc);
const char *kv_wc_str(const struct ib_wc *wc);

/* kv_mr.c: FRWR regions. */
int kv_frmr_alloc(struct kv_end *e, struct kv_frmr *f);
int kv_frmr_reg(struct kv_end *e, struct kv_frmr *f, int access);
int kv_frmr_setup(struct kv_end *e, struct kv_frmr *f, int access);
int kv_frmr_local_inv(struct kv_end *e, struct kv_frmr *f, struct ib_wc *wc);
void kv_frmr_free(struct kv_end *e, struct kv_frmr *f);
void kv_frmr_fill(struct kv_end *e, struct kv_frmr *f, u8 seed);
long kv_frmr_check(struct kv_end *e, struct kv_frmr *f, u32 offset, u32 len, u8 seed,
		   u32 start);
long kv_buf_check(const void *p, u32 len, u8 seed, u32 start);
void kv_frmr_sync_cpu(struct ib_device *dev, struct kv_frmr *f);
u64 *kv_frmr_word(struct kv_frmr *f, u32 offset);
void kv_fill_at(void *p, u32 len, u8 seed, u32 start);
void kv_sync_cpu(struct kv_end *e);
void kv_sync_dev(struct kv_end *e);

/* kv_cases.c: shared case helpers; kv_why holds the last helper's failure reason. */
extern char kv_why[160];
#define kv_set_why(fmt, ...) snprintf(kv_why, sizeof(kv_why), fmt, ##__VA_ARGS__)
bool kv_wc_ok(int rv, const struct ib_wc *wc, enum ib_wc_opcode op, const char *what);
bool kv_connect_case(struct kv_conn *c, const char *name);
bool kv_read_fails(struct kv_end *e, struct ib_sge *sink, u64 raddr, u32 rkey);

/* kv_cases.c / kv_atomic.c: the cases, each on a fresh connection. */
void kv_run_basic(void);
void kv_run_read_inv(void);
void kv_run_send_inv(void);
void kv_run_atomics(void);
void kv_run_hostile(void);
u64 kv_masked_fadd(u64 orig, u64 add, u64 mask);
u64 kv_masked_cswap(u64 orig, u64 cmp, u64 cmask, u64 swap, u64 smask);

#endif
