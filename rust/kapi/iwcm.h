/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rsiw's side of the iw_cm (iwcm.c, wrapped by iwcm.rs): cm_id references,
 * event delivery, and the iw_cm verbs the entries implement.
 */
#ifndef RSIW_IWCM_H
#define RSIW_IWCM_H

#include <linux/net.h>
#include <rdma/iw_cm.h>

void rsiw_shim_iw_id_get(struct iw_cm_id *id);
void rsiw_shim_iw_id_put(struct iw_cm_id *id);
int rsiw_shim_iw_event(struct iw_cm_id *id, enum iw_cm_event_type type,
		       int status, struct socket *s, const void *pdata,
		       u8 pdata_len, u8 ird, u8 ord, void *provider_data);

/* --- Rust entries (rust/entry/cm.rs) --- */
int rsiw_rust_iw_connect(struct iw_cm_id *id,
			 struct iw_cm_conn_param *param);
int rsiw_rust_iw_accept(struct iw_cm_id *id,
			struct iw_cm_conn_param *param);
int rsiw_rust_iw_reject(struct iw_cm_id *id, const void *pdata,
			u8 pdata_len);
int rsiw_rust_iw_create_listen(struct iw_cm_id *id, int backlog);
int rsiw_rust_iw_destroy_listen(struct iw_cm_id *id);
void rsiw_rust_iw_add_ref(struct ib_qp *qp);
void rsiw_rust_iw_rem_ref(struct ib_qp *qp);
struct ib_qp *rsiw_rust_iw_get_qp(struct ib_device *dev, int qpn);

#endif /* RSIW_IWCM_H */
