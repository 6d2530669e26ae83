/*
 * client/hsm.c - the HSM (S3 tier) calls of libweir: state, requests, the
 * coordinator's queue, data repository associations and imports, each one
 * MDS RPC (opcodes 70-77); and the restore waits the data path makes before
 * it touches a released file (MDS_HSM_RESTORE_WAIT, polled with backoff).
 *
 * The copying itself is done by copytool agents (tools/hsmd), which open
 * files with wc_hsm_open() (OF_HSM) and talk to the MDS with wc_mds_call().
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"

/* Copy a wire string into a fixed buffer, truncating, always NUL-terminated. */
static void wc_hsm_strcpy(char *dst, size_t cap, const char *src)
{
	size_t len = src ? strnlen(src, cap - 1) : 0;

	if (len)
		memcpy(dst, src, len);
	dst[len] = '\0';
}

static void wc_pub_fid_to_pb(const weir_fid_t *fid, Weir__Fid *pf)
{
	weir__fid__init(pf);
	pf->seq = fid->seq;
	pf->oid = fid->oid;
}

static void wc_pb_to_pub_fid(const Weir__Fid *pf, weir_fid_t *fid)
{
	fid->seq = pf ? pf->seq : 0;
	fid->oid = pf ? pf->oid : 0;
}

/* ------------------------------------------------------------ state */

static int wc_hsm_state_call(struct weir_fs *fs, Weir__HsmStateReq *req, struct weir_hsm_state *st)
{
	Weir__HsmStateRep *rep;
	int rc;

	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_HSM_STATE, &req->base,
			 &weir__hsm_state_rep__descriptor, (void **)&rep);
	if (rc)
		return rc;
	memset(st, 0, sizeof(*st));
	wc_pb_to_pub_fid(rep->fid, &st->hs_fid);
	st->hs_flags = rep->flags;
	st->hs_dra = rep->dra;
	wc_hsm_strcpy(st->hs_bucket, sizeof(st->hs_bucket), rep->bucket);
	wc_hsm_strcpy(st->hs_key, sizeof(st->hs_key), rep->key);
	wc_hsm_strcpy(st->hs_etag, sizeof(st->hs_etag), rep->etag);
	st->hs_data_version = rep->data_version;
	st->hs_archived_version = rep->archived_version;
	st->hs_size = rep->size;
	st->hs_restored = rep->restored_bytes;
	st->hs_archived_ns = rep->archived_ns;
	st->hs_action_id = rep->action_id;
	st->hs_action = rep->action;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

int weir_hsm_state_get(weir_fs_t *fs, const char *path, struct weir_hsm_state *st)
{
	Weir__HsmStateReq req = WEIR__HSM_STATE_REQ__INIT;
	Weir__Cred cred;
	int rc;

	if (!fs || !st)
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.path = (char *)path;
	return wc_hsm_state_call(fs, &req, st);
}

int weir_hsm_state_fid(weir_fs_t *fs, const weir_fid_t *fid, struct weir_hsm_state *st)
{
	Weir__HsmStateReq req = WEIR__HSM_STATE_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf;

	if (!fs || !fid || !st || (fid->seq == 0 && fid->oid == 0))
		return -EINVAL;
	wc_cred_init(fs, &cred);
	wc_pub_fid_to_pb(fid, &pf);
	req.cred = &cred;
	req.fid = &pf;
	return wc_hsm_state_call(fs, &req, st);
}

/* ------------------------------------------------------------ requests */

int weir_hsm_request(weir_fs_t *fs, enum weir_hsm_action act, const weir_fid_t *fids, size_t n,
		     uint64_t *ids, int *rcs)
{
	Weir__HsmRequestReq req = WEIR__HSM_REQUEST_REQ__INIT;
	Weir__HsmRequestRep *rep = NULL;
	Weir__Cred cred;
	Weir__Fid *pfs = NULL;
	Weir__Fid **pps = NULL;
	int rc;

	if (!fs || !fids || n == 0 || n > WEIR_HSM_REQUEST_MAX)
		return -EINVAL;
	if (act != WEIR_HSM_ARCHIVE && act != WEIR_HSM_RESTORE && act != WEIR_HSM_RELEASE)
		return -EINVAL;
	pfs = calloc(n, sizeof(*pfs));
	pps = calloc(n, sizeof(*pps));
	rc = -ENOMEM;
	if (!pfs || !pps)
		goto out;
	for (size_t i = 0; i < n; i++) {
		wc_pub_fid_to_pb(&fids[i], &pfs[i]);
		pps[i] = &pfs[i];
	}
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.action = (uint32_t)act;
	req.n_fids = n;
	req.fids = pps;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_HSM_REQUEST, &req.base,
			 &weir__hsm_request_rep__descriptor, (void **)&rep);
	wc_mdl_changed(fs, NULL); /* a release changes the files' attributes (client/mdl.c) */
	if (rc)
		goto out;
	if (rep->n_rc != n || (rep->n_ids != n && rep->n_ids != 0)) {
		WEIR_LOG_ERROR("hsm request of %zu files: reply has %zu ids, %zu rcs", n,
			       rep->n_ids, rep->n_rc);
		rc = -EPROTO;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (ids)
			ids[i] = rep->n_ids ? rep->ids[i] : 0;
		if (rcs)
			rcs[i] = rep->rc[i] > 0 ? -EPROTO : rep->rc[i];
	}
out:
	if (rep)
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	free(pps);
	free(pfs);
	return rc;
}

/* ------------------------------------------------------------ queue */

int weir_hsm_queue_get(weir_fs_t *fs, const uint64_t *ids, size_t nids,
		       struct weir_hsm_queue **out)
{
	Weir__HsmQueueReq req = WEIR__HSM_QUEUE_REQ__INIT;
	Weir__HsmQueueRep *rep = NULL;
	struct weir_hsm_queue *q = NULL;
	int rc;

	if (!fs || !out || (!ids && nids))
		return -EINVAL;
	*out = NULL;
	req.n_ids = nids;
	req.ids = (uint64_t *)ids;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_HSM_QUEUE, &req.base,
			 &weir__hsm_queue_rep__descriptor, (void **)&rep);
	if (rc)
		return rc;
	rc = -ENOMEM;
	q = calloc(1, sizeof(*q));
	if (!q)
		goto out;
	if (rep->n_actions) {
		q->hq_actions = calloc(rep->n_actions, sizeof(*q->hq_actions));
		if (!q->hq_actions)
			goto out;
	}
	for (size_t i = 0; i < rep->n_actions; i++) {
		const Weir__HsmActionInfo *pa = rep->actions[i];
		struct weir_hsm_action_info *ai = &q->hq_actions[i];

		ai->hai_id = pa->id;
		ai->hai_action = pa->action;
		wc_pb_to_pub_fid(pa->fid, &ai->hai_fid);
		ai->hai_state = pa->state;
		ai->hai_rc = pa->rc;
		ai->hai_bytes_total = pa->bytes_total;
		ai->hai_bytes_done = pa->bytes_done;
		wc_hsm_strcpy(ai->hai_agent, sizeof(ai->hai_agent), pa->agent);
		ai->hai_queued_ns = pa->queued_ns;
		wc_hsm_strcpy(ai->hai_key, sizeof(ai->hai_key), pa->key);
	}
	q->hq_nr = rep->n_actions;
	q->hq_backlog_bytes = rep->backlog_bytes;
	q->hq_archived_bytes = rep->archived_bytes;
	q->hq_restored_bytes = rep->restored_bytes;
	q->hq_archive_bps = rep->archive_bps;
	q->hq_restore_bps = rep->restore_bps;
	q->hq_done = rep->done;
	q->hq_failed = rep->failed;
	q->hq_agents = rep->agents;
	q->hq_waiting = rep->waiting;
	q->hq_running = rep->running;
	*out = q;
	q = NULL;
	rc = 0;
out:
	weir_hsm_queue_free(q);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

void weir_hsm_queue_free(struct weir_hsm_queue *q)
{
	if (!q)
		return;
	free(q->hq_actions);
	free(q);
}

/* ------------------------------------------------------------ associations */

static void wc_dra_from_pb(const Weir__Dra *pd, struct weir_dra *d)
{
	memset(d, 0, sizeof(*d));
	d->dra_id = pd->id;
	wc_pb_to_pub_fid(pd->root, &d->dra_root);
	wc_hsm_strcpy(d->dra_path, sizeof(d->dra_path), pd->path);
	wc_hsm_strcpy(d->dra_bucket, sizeof(d->dra_bucket), pd->bucket);
	wc_hsm_strcpy(d->dra_prefix, sizeof(d->dra_prefix), pd->prefix);
	d->dra_flags = pd->flags;
	d->dra_created_ns = pd->created_ns;
}

int weir_dra_create(weir_fs_t *fs, const char *path, const char *bucket, const char *prefix,
		    unsigned flags, struct weir_dra *out)
{
	Weir__DraReq req = WEIR__DRA_REQ__INIT;
	Weir__DraRep *rep;
	Weir__Cred cred;
	size_t blen;
	int rc;

	if (!fs || !bucket)
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	blen = strnlen(bucket, 64);
	if (blen < 3 || blen > 63 || (prefix && strnlen(prefix, 1025) > 1024))
		return -EINVAL;
	if (flags & ~(unsigned)(WEIR_DRA_AUTO_EXPORT | WEIR_DRA_REIMPORT))
		return -EINVAL;
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.path = (char *)path;
	req.bucket = (char *)bucket;
	req.prefix = (char *)(prefix ? prefix : "");
	req.flags = flags;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_DRA_CREATE, &req.base, &weir__dra_rep__descriptor,
			 (void **)&rep);
	wc_mdl_changed(fs, NULL); /* the directory's attributes (client/mdl.c) */
	if (rc)
		return rc;
	if (!rep->dra) {
		WEIR_LOG_ERROR("dra create %s: reply without the association", path);
		rc = -EPROTO;
	} else if (out) {
		wc_dra_from_pb(rep->dra, out);
	}
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

int weir_dra_list(weir_fs_t *fs, struct weir_dra **out, size_t *nr)
{
	Weir__Empty req = WEIR__EMPTY__INIT;
	Weir__DraListRep *rep;
	struct weir_dra *v = NULL;
	int rc;

	if (!fs || !out || !nr)
		return -EINVAL;
	*out = NULL;
	*nr = 0;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_DRA_LIST, &req.base,
			 &weir__dra_list_rep__descriptor, (void **)&rep);
	if (rc)
		return rc;
	if (rep->n_dras) {
		v = calloc(rep->n_dras, sizeof(*v));
		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < rep->n_dras; i++)
			wc_dra_from_pb(rep->dras[i], &v[i]);
	}
	*out = v;
	*nr = rep->n_dras;
out:
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

int weir_dra_delete(weir_fs_t *fs, const char *path)
{
	Weir__DraReq req = WEIR__DRA_REQ__INIT;
	Weir__Cred cred;
	int rc;

	if (!fs)
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.path = (char *)path;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_DRA_DELETE, &req.base, NULL, NULL);
	wc_mdl_changed(fs, NULL); /* the directory's attributes (client/mdl.c) */
	return rc;
}

/* ------------------------------------------------------------ import */

int weir_hsm_import(weir_fs_t *fs, uint32_t dra, const weir_fid_t *dir,
		    const struct weir_hsm_import_ent *ents, size_t n, int *results)
{
	Weir__HsmImportReq req = WEIR__HSM_IMPORT_REQ__INIT;
	Weir__HsmImportRep *rep = NULL;
	Weir__HsmImportEnt *pe = NULL;
	Weir__HsmImportEnt **pps = NULL;
	Weir__Cred cred;
	Weir__Fid pdir;
	int rc;

	if (!fs || !dir || !ents || n == 0 || n > WEIR_HSM_IMPORT_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!ents[i].hie_name || !ents[i].hie_etag || !ents[i].hie_key)
			return -EINVAL;
	pe = calloc(n, sizeof(*pe));
	pps = calloc(n, sizeof(*pps));
	rc = -ENOMEM;
	if (!pe || !pps)
		goto out;
	for (size_t i = 0; i < n; i++) {
		weir__hsm_import_ent__init(&pe[i]);
		pe[i].name = (char *)ents[i].hie_name;
		pe[i].size = ents[i].hie_size;
		pe[i].mtime_ns = ents[i].hie_mtime_ns;
		pe[i].etag = (char *)ents[i].hie_etag;
		pe[i].key = (char *)ents[i].hie_key;
		pe[i].deleted = ents[i].hie_deleted;
		pps[i] = &pe[i];
	}
	wc_cred_init(fs, &cred);
	wc_pub_fid_to_pb(dir, &pdir);
	req.cred = &cred;
	req.dra = dra;
	req.dir = &pdir;
	req.n_ents = n;
	req.ents = pps;
	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_HSM_IMPORT, &req.base,
			 &weir__hsm_import_rep__descriptor, (void **)&rep);
	wc_mdl_changed(fs, NULL); /* names and files made, changed, removed (client/mdl.c) */
	if (rc)
		goto out;
	if (rep->n_result != n) {
		WEIR_LOG_ERROR("hsm import of %zu entries: reply has %zu results", n,
			       rep->n_result);
		rc = -EPROTO;
		goto out;
	}
	if (results)
		for (size_t i = 0; i < n; i++)
			results[i] = rep->result[i];
out:
	if (rep)
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	free(pps);
	free(pe);
	return rc;
}

/* ------------------------------------------------------------ restore waits */

/* Transport errors during a wait: the MDS may be restarting. */
static bool wc_hsm_transient(int rc)
{
	return rc == -ECONNRESET || rc == -ECONNREFUSED || rc == -EHOSTUNREACH ||
	       rc == -ETIMEDOUT || rc == -EAGAIN;
}

/* Consecutive transport failures tolerated while waiting, ns. */
#define WC_HSM_TRANSIENT_NS (60ULL * 1000000000ULL)

static void wc_hsm_sleep_ms(uint64_t ms)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ms / 1000),
		.tv_nsec = (long)(ms % 1000) * 1000000L,
	};

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* WEIR_RESTORE_TIMEOUT in ns (0: no limit). Read at each wait. */
static uint64_t wc_hsm_timeout_ns(void)
{
	const char *s = getenv("WEIR_RESTORE_TIMEOUT");
	char *end;
	double v;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || v < 0 || v > 1e9) {
		WEIR_LOG_WARN("WEIR_RESTORE_TIMEOUT=%s: not a number of seconds; no limit", s);
		return 0;
	}
	return (uint64_t)(v * 1e9);
}

/* One MDS_HSM_RESTORE_WAIT. \return 0 with *released and *ready, or -errno. */
static int wc_hsm_ask(struct weir_fs *fs, Weir__HsmRangeReq *req, bool *released, bool *ready)
{
	Weir__HsmRangeRep *rep;
	int rc;

	rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_HSM_RESTORE_WAIT, &req->base,
			 &weir__hsm_range_rep__descriptor, (void **)&rep);
	if (rc)
		return rc;
	*released = rep->released;
	*ready = rep->ready;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

int wc_hsm_wait_range(struct weir_fs *fs, const struct weir_fid *fid, uint64_t off,
		      uint64_t len, bool whole, bool *released)
{
	Weir__HsmRangeReq req = WEIR__HSM_RANGE_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf;
	uint64_t start = weir_now_ns(), tmo = wc_hsm_timeout_ns(), fail_since = 0;
	uint64_t delay_ms = 1;
	unsigned long long o = off, l = len;
	unsigned polls = 0;
	int rc;

	wc_cred_init(fs, &cred);
	wc_fid_to_pb(fid, &pf);
	req.cred = &cred;
	req.fid = &pf;
	req.offset = off;
	req.length = len;
	for (;;) {
		bool rel = true, ready = false;

		rc = wc_hsm_ask(fs, &req, &rel, &ready);
		uint64_t now = weir_now_ns();
		/* whole: until the MDS has cleared RELEASED (the agent's
		 * completion), as a size change needs; else the range is enough */
		if (!rc && (!rel || (ready && !whole))) {
			*released = rel;
			if (polls)
				WEIR_LOG_DEBUG("fid=" WEIR_FID_F " off=%llu len=%llu: restored"
					       " after %u polls, %llu ms", WEIR_FID_P(fid), o, l,
					       polls, (unsigned long long)(now - start) / 1000000);
			return 0;
		}
		if (rc && !wc_hsm_transient(rc)) {
			if (rc == -EIO)
				WEIR_LOG_WARN("fid=" WEIR_FID_F ": restore failed (archive copy"
					      " lost or unreadable): -EIO", WEIR_FID_P(fid));
			else
				WEIR_LOG_INFO("fid=" WEIR_FID_F " off=%llu len=%llu rc=%d: restore"
					      " wait failed", WEIR_FID_P(fid), o, l, rc);
			return rc;
		}
		if (!rc) {
			fail_since = 0;
		} else if (!fail_since) {
			fail_since = now;
		} else if (now - fail_since >= WC_HSM_TRANSIENT_NS) {
			WEIR_LOG_WARN("fid=" WEIR_FID_F " rc=%d: MDS unreachable for 60 s while"
				      " waiting for a restore", WEIR_FID_P(fid), rc);
			return rc;
		}
		if (polls++ == 0)
			WEIR_LOG_DEBUG("fid=" WEIR_FID_F " off=%llu len=%llu: waiting for restore",
				       WEIR_FID_P(fid), o, l);
		uint64_t sleep_ms = delay_ms;
		if (tmo && now - start >= tmo) {
			WEIR_LOG_WARN("fid=" WEIR_FID_F " off=%llu len=%llu: restore not ready"
				      " after %.3f s (WEIR_RESTORE_TIMEOUT): -ETIMEDOUT",
				      WEIR_FID_P(fid), o, l, (double)(now - start) / 1e9);
			return -ETIMEDOUT;
		}
		if (wc_cancel_check()) {
			WEIR_LOG_INFO("fid=" WEIR_FID_F " off=%llu len=%llu: restore wait"
				      " cancelled: -EINTR", WEIR_FID_P(fid), o, l);
			return -EINTR;
		}
		if (tmo)
			sleep_ms = WEIR_MIN(sleep_ms, (tmo - (now - start) + 999999) / 1000000);
		wc_hsm_sleep_ms(sleep_ms);
		delay_ms = WEIR_MIN(delay_ms * 2, 100);
	}
}

int wc_hsm_read_prep(struct weir_file *fh, uint64_t off, uint64_t len, uint64_t *nbytes)
{
	uint64_t size = atomic_load(&fh->f_rel_size);
	bool released = true;
	int rc;

	*nbytes = UINT64_MAX;
	if (size == 0) {
		/* an empty released file: nothing to read, but its S3 object is
		 * checked first (changed behind Weir's back: EIO or re-import) */
		rc = wc_hsm_wait_range(fh->f_fs, &fh->f_fid, 0, 0, true, &released);
		if (rc)
			return rc;
		atomic_store(&fh->f_released, false);
		return 0; /* read as a present file: its size may have changed (re-import) */
	}
	if (off >= size) {
		/* at or past the end: the size may have changed since the open */
		struct wc_attr a;

		rc = wc_getattr(fh->f_fs, &fh->f_fid, &a, NULL);
		if (rc)
			return rc;
		if (!wc_attr_released(&a)) {
			atomic_store(&fh->f_released, false);
			return 0;
		}
		size = a.a_size;
		atomic_store(&fh->f_rel_size, size);
		if (off >= size) {
			*nbytes = 0;
			return 0;
		}
	}
	uint64_t n = WEIR_MIN(len, size - off);
	rc = wc_hsm_wait_range(fh->f_fs, &fh->f_fid, off, n, false, &released);
	if (rc)
		return rc;
	if (!released) {
		atomic_store(&fh->f_released, false);
		return 0;
	}
	*nbytes = n;
	return 0;
}

int wc_hsm_write_prep(struct weir_file *fh)
{
	bool released = true;
	int rc;

	if (fh->f_hsm || !atomic_load(&fh->f_released))
		return 0;
	rc = wc_hsm_wait_range(fh->f_fs, &fh->f_fid, 0, 0, true, &released);
	if (rc)
		return rc;
	/* every byte is on the OSTs and the MDS cleared RELEASED: no more
	 * waits through this handle */
	atomic_store(&fh->f_released, false);
	return 0;
}

/* How long an -EAGAIN open/truncate of a released file is retried, ns. */
#define WC_HSM_AGAIN_NS (60ULL * 1000000000ULL)

bool wc_hsm_again(uint64_t start_ns, uint32_t *delay_ms)
{
	if (weir_now_ns() - start_ns >= WC_HSM_AGAIN_NS)
		return false;
	*delay_ms = *delay_ms ? WEIR_MIN(*delay_ms * 2, 200U) : 10U;
	wc_hsm_sleep_ms(*delay_ms);
	return true;
}
