// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw's side of the iw_cm (iwcm.rs): cm_id references and event delivery.
 */
#include "bindings.h"

void rsiw_shim_iw_id_get(struct iw_cm_id *id)
{
	id->add_ref(id);
}

void rsiw_shim_iw_id_put(struct iw_cm_id *id)
{
	id->rem_ref(id);
}

int rsiw_shim_iw_event(struct iw_cm_id *id, enum iw_cm_event_type type,
		       int status, struct socket *s, const void *pdata,
		       u8 pdata_len, u8 ird, u8 ord, void *provider_data)
{
	/* iw_cm copies private data before returning. */
	struct iw_cm_event ev = {
		.event = type,
		.status = status,
		.private_data = (void *)pdata,
		.private_data_len = pdata ? pdata_len : 0,
		.ird = ird,
		.ord = ord,
		.provider_data = provider_data,
	};

	if (s)
		rsiw_shim_sock_names(s, &ev.local_addr, &ev.remote_addr);
	return id->event_handler(id, &ev);
}
