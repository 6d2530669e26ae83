/*
 * tools/hsmd/sched.c - weir-hsmd's scheduler: the task list, the worker
 * threads and the agent RPCs (progress, done). See hsmd.h for the design.
 *
 * A worker takes ag_lock, scans the tasks round-robin from ag_rr for a step
 * it may run (a START, a unit, or a FINISH), marks it taken, drops the lock,
 * runs it, and takes the lock again to record the outcome. Unit order within
 * a restore: the first HU_TODO unit at or after t_cursor (wrapping), so the
 * hint chunk goes first, then the file in order from there; a PROGRESS
 * reply's "want" moves t_cursor.
 */
#define _GNU_SOURCE
#include "hsmd.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_int.h"
#include "common/log.h"
#include "common/util.h"
#include "weir.pb-c.h"

/** Most units a task may have (a bigger map is a malformed task). */
#define HD_UNITS_MAX (1ull << 26)
/** How long a DONE is retried on transport errors. */
#define HD_DONE_RETRY_MS 30000

enum hd_step { HS_NONE, HS_START, HS_UNIT, HS_FINISH };

const char *hd_task_url(const struct hd_task *t, char *buf, size_t len)
{
	snprintf(buf, len, "s3://%s/%s", t->t_bucket, t->t_key);
	return buf;
}

void hd_task_fail(struct hd_agent *ag, struct hd_task *t, int rc, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&ag->ag_lock);
	if (!t->t_rc) {
		t->t_rc = rc;
		va_start(ap, fmt);
		vsnprintf(t->t_msg, sizeof(t->t_msg), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&ag->ag_lock);
}

void hd_task_log_done(const struct hd_task *t, uint64_t bytes)
{
	char url[WEIR_S3_KEY_MAX + 80];
	double secs = (double)(weir_now_ns() - t->t_t0_ns) / 1e9;
	double mbs = secs > 0 ? (double)bytes / 1e6 / secs : 0;

	WEIR_LOG_INFO("%s fid=" WEIR_FID_F " key=%s bytes=%llu %.1f MB/s in %.2f s: done",
		      t->t_action == WEIR__HSM_ACTION__HA_ARCHIVE ? "archive" : "restore",
		      WEIR_FID_P(&t->t_fid), hd_task_url(t, url, sizeof(url)),
		      (unsigned long long)bytes, mbs, secs);
}

int hd_worker_buf(struct hd_worker *w, size_t len)
{
	void *p;

	if (len <= w->w_buflen)
		return 0;
	p = realloc(w->w_buf, len);
	if (!p)
		return -ENOMEM;
	w->w_buf = p;
	w->w_buflen = len;
	return 0;
}

int hd_worker_s3(struct hd_agent *ag, struct hd_worker *w, const char *bucket,
		 struct weir_s3 **out)
{
	struct weir_s3_conf c = ag->ag_conf->hc_s3;
	unsigned victim = 0;
	int rc;

	for (unsigned i = 0; i < HD_S3_CACHE; i++) {
		if (w->w_s3[i].hs_s3 && !strcmp(w->w_s3[i].hs_bucket, bucket)) {
			w->w_s3[i].hs_used = ++w->w_s3_clock;
			*out = w->w_s3[i].hs_s3;
			return 0;
		}
		if (w->w_s3[i].hs_used < w->w_s3[victim].hs_used)
			victim = i;
	}
	if (strlen(bucket) >= sizeof(c.sc_bucket))
		return -EINVAL;
	snprintf(c.sc_bucket, sizeof(c.sc_bucket), "%s", bucket);
	weir_s3_free(w->w_s3[victim].hs_s3);
	w->w_s3[victim].hs_s3 = NULL;
	rc = weir_s3_new(&c, &w->w_s3[victim].hs_s3);
	if (rc)
		return rc;
	snprintf(w->w_s3[victim].hs_bucket, sizeof(w->w_s3[victim].hs_bucket), "%s", bucket);
	w->w_s3[victim].hs_used = ++w->w_s3_clock;
	*out = w->w_s3[victim].hs_s3;
	return 0;
}

bool hd_etag_eq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la >= 2 && a[0] == '"' && a[la - 1] == '"') {
		a++;
		la -= 2;
	}
	if (lb >= 2 && b[0] == '"' && b[lb - 1] == '"') {
		b++;
		lb -= 2;
	}
	return la == lb && !strncasecmp(a, b, la);
}

/* ------------------------------------------------------------------ RPCs */

/* Errors that say the connection (not the request) failed: worth a retry. */
static bool hd_rc_transport(int rc)
{
	return rc == -ECONNRESET || rc == -ETIMEDOUT || rc == -ECONNREFUSED ||
	       rc == -EHOSTUNREACH || rc == -ENOTCONN || rc == -EPIPE || rc == -EAGAIN ||
	       rc == -ESHUTDOWN || rc == -ECONNABORTED;
}

/* The MDS no longer has this action running on us. */
static bool hd_rc_not_ours(int rc)
{
	return rc == -ENOENT || rc == -ESTALE || rc == -ECANCELED || rc == -EPERM;
}

int hd_progress(struct hd_agent *ag, struct hd_task *t, uint64_t off, uint64_t len,
		uint64_t bytes_done, const char *upload_id)
{
	Weir__HsmProgressReq req = WEIR__HSM_PROGRESS_REQ__INIT;
	Weir__HsmProgressRep *rep = NULL;
	char b[64];
	int rc;

	req.id = t->t_id;
	req.token = t->t_token;
	req.offset = off;
	req.length = len;
	req.bytes_done = bytes_done;
	req.upload_id = (char *)(upload_id ? upload_id : "");
	rc = wc_mds_call(ag->ag_fs, WEIR__WIRE_OP__MDS_HSM_AGENT_PROGRESS, &req.base,
			 &weir__hsm_progress_rep__descriptor, (void **)&rep);
	if (rc) {
		if (hd_rc_not_ours(rc)) {
			WEIR_LOG_NOTICE("action=%llu fid=" WEIR_FID_F ": progress: %s: the MDS no "
					"longer has it running here; dropping it",
					(unsigned long long)t->t_id, WEIR_FID_P(&t->t_fid),
					weir_rc_str(rc, b, sizeof(b)));
			pthread_mutex_lock(&ag->ag_lock);
			t->t_abandon = true;
			pthread_mutex_unlock(&ag->ag_lock);
			return -ECANCELED;
		}
		WEIR_LOG_WARN("action=%llu fid=" WEIR_FID_F ": progress not recorded: %s (going on)",
			      (unsigned long long)t->t_id, WEIR_FID_P(&t->t_fid),
			      weir_rc_str(rc, b, sizeof(b)));
		return 0;
	}
	pthread_mutex_lock(&ag->ag_lock);
	if (rep->cancel) {
		t->t_abandon = true;
		rc = -ECANCELED;
	} else if (rep->has_want && t->t_action == WEIR__HSM_ACTION__HA_RESTORE && t->t_chunk &&
		   rep->want < t->t_size) {
		t->t_cursor = rep->want / t->t_chunk;
	}
	pthread_mutex_unlock(&ag->ag_lock);
	if (rc)
		WEIR_LOG_NOTICE("action=%llu fid=" WEIR_FID_F ": cancelled by the MDS",
				(unsigned long long)t->t_id, WEIR_FID_P(&t->t_fid));
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

int hd_done(struct hd_agent *ag, struct hd_task *t, int rc, const char *etag, uint64_t size,
	    int64_t mtime_ns, const char *msg)
{
	Weir__HsmDoneReq req = WEIR__HSM_DONE_REQ__INIT;
	uint64_t t0 = weir_now_ns();
	uint32_t delay_ms = 100;
	char b[64];
	int crc;

	req.id = t->t_id;
	req.token = t->t_token;
	req.rc = rc;
	req.etag = (char *)(etag ? etag : "");
	req.size = size;
	req.mtime_ns = mtime_ns;
	req.message = (char *)(msg ? msg : "");
	for (;;) {
		/* the MDS answers DONE with no body */
		crc = wc_mds_call(ag->ag_fs, WEIR__WIRE_OP__MDS_HSM_AGENT_DONE, &req.base, NULL,
				  NULL);
		if (!crc || !hd_rc_transport(crc) ||
		    weir_now_ns() - t0 > (uint64_t)HD_DONE_RETRY_MS * 1000000)
			break;
		if (atomic_load(&ag->ag_stop) && weir_now_ns() - t0 > 2000000000ull)
			break;
		WEIR_LOG_INFO("action=%llu: done not delivered (%s); retrying in %u ms",
			      (unsigned long long)t->t_id, weir_rc_str(crc, b, sizeof(b)), delay_ms);
		struct timespec ts = { delay_ms / 1000, (long)(delay_ms % 1000) * 1000000 };
		nanosleep(&ts, NULL);
		if (delay_ms < 2000)
			delay_ms *= 2;
	}
	if (crc && rc == -ECANCELED && hd_rc_not_ours(crc))
		WEIR_LOG_INFO("action=%llu fid=" WEIR_FID_F ": no longer ours (%s); dropped",
			      (unsigned long long)t->t_id, WEIR_FID_P(&t->t_fid),
			      weir_rc_str(crc, b, sizeof(b)));
	else if (crc)
		WEIR_LOG_WARN("action=%llu fid=" WEIR_FID_F ": the MDS did not take the result "
			      "(rc=%d): %s; it will hand the action out again",
			      (unsigned long long)t->t_id, WEIR_FID_P(&t->t_fid), rc,
			      weir_rc_str(crc, b, sizeof(b)));
	return crc;
}

/* The task of hand-out \a id / \a token, or NULL. Called with ag_lock. */
static struct hd_task *hd_task_find(struct hd_agent *ag, uint64_t id, uint64_t token)
{
	struct hd_task *t;

	for (t = ag->ag_tasks; t; t = t->t_next)
		if (t->t_id == id && t->t_token == token)
			return t;
	return NULL;
}

void hd_sched_keepalive(struct hd_agent *ag)
{
	struct hd_ka {
		uint64_t ka_id;
		uint64_t ka_token;
		uint64_t ka_bytes;
		bool ka_archive;
		char ka_upload[WEIR_S3_UPLOAD_ID_MAX];
	} *ka;
	size_t nr = 0, max;
	struct hd_task *t;

	pthread_mutex_lock(&ag->ag_lock);
	max = ag->ag_nr_tasks;
	ka = max ? calloc(max, sizeof(*ka)) : NULL;
	for (t = ag->ag_tasks; ka && t && nr < max; t = t->t_next) {
		if (t->t_abandon)
			continue;
		ka[nr].ka_id = t->t_id;
		ka[nr].ka_token = t->t_token;
		ka[nr].ka_archive = t->t_action == WEIR__HSM_ACTION__HA_ARCHIVE;
		ka[nr].ka_bytes = t->t_bytes;
		/* t_upload is written by START only, and START is not running when t_busy is clear */
		if (ka[nr].ka_archive && !t->t_busy && t->t_phase == HP_RUN)
			memcpy(ka[nr].ka_upload, t->t_upload, sizeof(ka[nr].ka_upload));
		nr++;
	}
	pthread_mutex_unlock(&ag->ag_lock);
	if (nr)
		WEIR_LOG_DEBUG("keepalive: %zu actions held", nr);
	for (size_t i = 0; i < nr; i++) {
		Weir__HsmProgressReq req = WEIR__HSM_PROGRESS_REQ__INIT;
		Weir__HsmProgressRep *rep = NULL;
		int rc;

		req.id = ka[i].ka_id;
		req.token = ka[i].ka_token;
		req.bytes_done = ka[i].ka_archive ? ka[i].ka_bytes : 0;
		req.upload_id = ka[i].ka_upload;
		rc = wc_mds_call(ag->ag_fs, WEIR__WIRE_OP__MDS_HSM_AGENT_PROGRESS, &req.base,
				 &weir__hsm_progress_rep__descriptor, (void **)&rep);
		if (rc || !rep->cancel) {
			if (rep)
				protobuf_c_message_free_unpacked(&rep->base, NULL);
			continue;
		}
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		pthread_mutex_lock(&ag->ag_lock);
		t = hd_task_find(ag, ka[i].ka_id, ka[i].ka_token);
		if (t)
			t->t_abandon = true;
		pthread_mutex_unlock(&ag->ag_lock);
		WEIR_LOG_NOTICE("action=%llu: cancelled by the MDS; dropping it",
				(unsigned long long)ka[i].ka_id);
	}
	free(ka);
}

/* ---------------------------------------------------------------- tasks */

static void hd_task_free(struct hd_task *t)
{
	if (!t)
		return;
	free(t->t_key);
	free(t->t_ustate);
	free(t->t_parts);
	free(t);
}

/* Copy a quoted string field into a fixed buffer. \return 0 or -EPROTO (too long). */
static int hd_copy(char *dst, size_t len, const char *src)
{
	if (!src)
		src = "";
	if (strlen(src) >= len)
		return -EPROTO;
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

/* Build a task from the wire. \return 0, -EPROTO, -ENOMEM. */
static int hd_task_new(const Weir__HsmTask *pt, struct hd_task **out)
{
	struct hd_task *t = calloc(1, sizeof(*t));
	int rc = -EPROTO;

	if (!t)
		return -ENOMEM;
	t->t_id = pt->id;
	t->t_token = pt->token;
	t->t_action = pt->action;
	if (pt->action != WEIR__HSM_ACTION__HA_ARCHIVE &&
	    pt->action != WEIR__HSM_ACTION__HA_RESTORE)
		goto out_free;
	if (!pt->fid || !pt->key || !pt->key[0] || strlen(pt->key) > WEIR_S3_KEY_MAX ||
	    !pt->bucket || !pt->bucket[0])
		goto out_free;
	t->t_fid.fid_seq = pt->fid->seq;
	t->t_fid.fid_oid = pt->fid->oid;
	if (hd_copy(t->t_bucket, sizeof(t->t_bucket), pt->bucket) ||
	    hd_copy(t->t_etag, sizeof(t->t_etag), pt->etag) ||
	    hd_copy(t->t_old_upload, sizeof(t->t_old_upload), pt->upload_id))
		goto out_free;
	t->t_key = strdup(pt->key);
	if (!t->t_key) {
		rc = -ENOMEM;
		goto out_free;
	}
	t->t_size = pt->size;
	t->t_chunk = pt->chunk;
	t->t_hint = pt->hint;
	t->t_data_version = pt->data_version;
	if (t->t_action == WEIR__HSM_ACTION__HA_RESTORE && t->t_size) {
		if (!t->t_chunk)
			goto out_free;
		t->t_nr_units = (t->t_size - 1) / t->t_chunk + 1;
		if (t->t_nr_units > HD_UNITS_MAX)
			goto out_free;
		t->t_ustate = calloc(t->t_nr_units, 1);
		if (!t->t_ustate) {
			rc = -ENOMEM;
			goto out_free;
		}
		for (uint64_t i = 0; i < t->t_nr_units; i++) {
			if (i / 8 < pt->done_map.len && (pt->done_map.data[i / 8] >> (i % 8)) & 1)
				t->t_ustate[i] = HU_DONE;
			else
				t->t_nr_left++;
		}
		t->t_cursor = t->t_hint < t->t_size ? t->t_hint / t->t_chunk : 0;
	}
	t->t_phase = HP_START;
	*out = t;
	return 0;
out_free:
	hd_task_free(t);
	return rc;
}

int hd_sched_add(struct hd_agent *ag, const void *pb_task)
{
	const Weir__HsmTask *pt = pb_task;
	struct hd_task *t, *x;
	int rc;

	pthread_mutex_lock(&ag->ag_lock);
	x = hd_task_find(ag, pt->id, pt->token);
	if (!x) {
		/* an older hand-out of the action (given back while we were silent):
		 * its PROGRESS and DONE no longer count; drop it, run this one */
		for (struct hd_task *o = ag->ag_tasks; o; o = o->t_next) {
			if (o->t_id != pt->id || o->t_abandon)
				continue;
			o->t_abandon = true;
			WEIR_LOG_NOTICE("action=%llu fid=" WEIR_FID_F ": handed out again (token "
					"%llu, was %llu); dropping the older task",
					(unsigned long long)pt->id, WEIR_FID_P(&o->t_fid),
					(unsigned long long)pt->token,
					(unsigned long long)o->t_token);
		}
	}
	pthread_mutex_unlock(&ag->ag_lock);
	if (x) {
		WEIR_LOG_DEBUG("action=%llu: the same hand-out again; going on",
			       (unsigned long long)pt->id);
		return 1;
	}
	rc = hd_task_new(pt, &t);
	if (rc)
		return rc;
	pthread_mutex_lock(&ag->ag_lock);
	t->t_next = ag->ag_tasks;
	ag->ag_tasks = t;
	ag->ag_nr_tasks++;
	pthread_cond_broadcast(&ag->ag_cond);
	pthread_mutex_unlock(&ag->ag_lock);
	WEIR_LOG_DEBUG("action=%llu %s fid=" WEIR_FID_F " key=%s size=%llu: taken",
		       (unsigned long long)t->t_id,
		       t->t_action == WEIR__HSM_ACTION__HA_ARCHIVE ? "archive" : "restore",
		       WEIR_FID_P(&t->t_fid), t->t_key, (unsigned long long)t->t_size);
	return 0;
}

uint32_t hd_sched_wait_slots(struct hd_agent *ag, uint32_t timeout_ms)
{
	struct timespec ts;
	uint64_t ns;
	uint32_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	ns = (uint64_t)ts.tv_nsec + (uint64_t)timeout_ms * 1000000;
	ts.tv_sec += (time_t)(ns / 1000000000);
	ts.tv_nsec = (long)(ns % 1000000000);
	pthread_mutex_lock(&ag->ag_lock);
	while (ag->ag_nr_tasks >= ag->ag_conf->hc_max_tasks && !atomic_load(&ag->ag_stop))
		if (pthread_cond_timedwait(&ag->ag_cond, &ag->ag_lock, &ts) == ETIMEDOUT)
			break;
	n = ag->ag_conf->hc_max_tasks > ag->ag_nr_tasks
		    ? ag->ag_conf->hc_max_tasks - ag->ag_nr_tasks : 0;
	pthread_mutex_unlock(&ag->ag_lock);
	return n;
}

void hd_sched_kick(struct hd_agent *ag)
{
	pthread_mutex_lock(&ag->ag_lock);
	pthread_cond_broadcast(&ag->ag_cond);
	pthread_mutex_unlock(&ag->ag_lock);
}

/* Next HU_TODO unit at or after t_cursor, wrapping. Called with ag_lock. \return false: none. */
static bool hd_unit_next(struct hd_task *t, uint64_t *unit)
{
	uint64_t n = t->t_nr_units, c = t->t_cursor < n ? t->t_cursor : 0;

	for (uint64_t k = 0; k < n; k++) {
		uint64_t i = c + k < n ? c + k : c + k - n;
		if (t->t_ustate[i] == HU_TODO) {
			*unit = i;
			return true;
		}
	}
	return false;
}

/* Can a worker take a step of \a t? Called with ag_lock; marks the step taken. */
static enum hd_step hd_task_pick(struct hd_agent *ag, struct hd_task *t, uint64_t *unit)
{
	bool stopping = atomic_load(&ag->ag_stop);

	if (t->t_busy)
		return HS_NONE;
	switch (t->t_phase) {
	case HP_START:
		if (stopping || t->t_abandon) {
			t->t_abandon = true;
			t->t_phase = HP_FINISH;
			break;
		}
		t->t_busy = true;
		return HS_START;
	case HP_RUN:
		if (stopping && !t->t_rc && t->t_nr_left)
			t->t_abandon = true;
		if (!t->t_rc && !t->t_abandon && hd_unit_next(t, unit)) {
			t->t_ustate[*unit] = HU_BUSY;
			t->t_nr_busy++;
			t->t_cursor = *unit + 1;
			return HS_UNIT;
		}
		if (t->t_nr_busy || (t->t_nr_left && !t->t_rc && !t->t_abandon))
			return HS_NONE;
		t->t_phase = HP_FINISH;
		break;
	case HP_FINISH:
		break;
	}
	t->t_busy = true;
	return HS_FINISH;
}

/* Find a step, round-robin over the tasks. Called with ag_lock. */
static enum hd_step hd_pick(struct hd_agent *ag, struct hd_task **tp, uint64_t *unit)
{
	struct hd_task *start = ag->ag_rr ? ag->ag_rr : ag->ag_tasks, *t = start;

	if (!t)
		return HS_NONE;
	do {
		enum hd_step s = hd_task_pick(ag, t, unit);
		if (s != HS_NONE) {
			*tp = t;
			ag->ag_rr = t->t_next;
			return s;
		}
		t = t->t_next ? t->t_next : ag->ag_tasks;
	} while (t != start);
	return HS_NONE;
}

/* Unlink \a t from the list. Called with ag_lock. */
static void hd_task_unlink(struct hd_agent *ag, struct hd_task *t)
{
	struct hd_task **pp;

	for (pp = &ag->ag_tasks; *pp; pp = &(*pp)->t_next)
		if (*pp == t) {
			*pp = t->t_next;
			break;
		}
	if (ag->ag_rr == t)
		ag->ag_rr = t->t_next;
	ag->ag_nr_tasks--;
}

static void hd_step_run(struct hd_agent *ag, struct hd_worker *w, struct hd_task *t,
			enum hd_step s, uint64_t unit, int *rc)
{
	bool ar = t->t_action == WEIR__HSM_ACTION__HA_ARCHIVE;

	*rc = 0;
	switch (s) {
	case HS_START:
		t->t_t0_ns = weir_now_ns();
		*rc = ar ? hd_archive_start(ag, w, t) : hd_restore_start(ag, w, t);
		break;
	case HS_UNIT:
		*rc = ar ? hd_archive_unit(ag, w, t, unit) : hd_restore_unit(ag, w, t, unit);
		break;
	case HS_FINISH:
		if (ar)
			hd_archive_finish(ag, w, t);
		else
			hd_restore_finish(ag, w, t);
		break;
	case HS_NONE:
		break;
	}
}

static void *hd_worker_main(void *arg)
{
	struct hd_worker *w = arg;
	struct hd_agent *ag = w->w_ag;
	char name[16];

	snprintf(name, sizeof(name), "hsmd-w%u", w->w_idx);
	weir_thread_name(name);
	pthread_mutex_lock(&ag->ag_lock);
	for (;;) {
		struct hd_task *t = NULL;
		uint64_t unit = 0;
		enum hd_step s = hd_pick(ag, &t, &unit);
		int rc;

		if (s == HS_NONE) {
			if (atomic_load(&ag->ag_stop) && !ag->ag_nr_tasks)
				break;
			pthread_cond_wait(&ag->ag_cond, &ag->ag_lock);
			continue;
		}
		pthread_mutex_unlock(&ag->ag_lock);
		hd_step_run(ag, w, t, s, unit, &rc);
		pthread_mutex_lock(&ag->ag_lock);
		switch (s) {
		case HS_START:
			t->t_busy = false;
			t->t_phase = t->t_rc || t->t_abandon ? HP_FINISH : HP_RUN;
			break;
		case HS_UNIT:
			t->t_nr_busy--;
			if (rc && !t->t_rc && !t->t_abandon && !atomic_load(&ag->ag_stop)) {
				t->t_rc = rc; /* a step that failed without saying why */
				snprintf(t->t_msg, sizeof(t->t_msg), "unit %llu failed",
					 (unsigned long long)unit);
			}
			if (rc) {
				t->t_ustate[unit] = HU_TODO;
			} else {
				t->t_ustate[unit] = HU_DONE;
				t->t_nr_left--;
			}
			break;
		case HS_FINISH:
			hd_task_unlink(ag, t);
			if (!t->t_abandon && t->t_rc)
				ag->ag_failed++;
			else if (!t->t_abandon)
				ag->ag_done++;
			hd_task_free(t);
			break;
		case HS_NONE:
			break;
		}
		pthread_cond_broadcast(&ag->ag_cond);
	}
	ag->ag_nr_workers_live--;
	pthread_cond_broadcast(&ag->ag_cond);
	pthread_mutex_unlock(&ag->ag_lock);
	for (unsigned i = 0; i < HD_S3_CACHE; i++)
		weir_s3_free(w->w_s3[i].hs_s3);
	free(w->w_buf);
	return NULL;
}

int hd_sched_start(struct hd_agent *ag)
{
	uint32_t n = ag->ag_conf->hc_threads;
	int rc;

	ag->ag_workers = calloc(n, sizeof(*ag->ag_workers));
	if (!ag->ag_workers)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct hd_worker *w = &ag->ag_workers[i];
		w->w_idx = i;
		w->w_ag = ag;
		pthread_mutex_lock(&ag->ag_lock);
		ag->ag_nr_workers_live++;
		pthread_mutex_unlock(&ag->ag_lock);
		rc = pthread_create(&w->w_thread, NULL, hd_worker_main, w);
		if (rc) {
			pthread_mutex_lock(&ag->ag_lock);
			ag->ag_nr_workers_live--;
			pthread_mutex_unlock(&ag->ag_lock);
			ag->ag_conf->hc_threads = i;
			return -rc;
		}
	}
	return 0;
}

void hd_sched_stop(struct hd_agent *ag)
{
	hd_sched_kick(ag);
	for (uint32_t i = 0; i < ag->ag_conf->hc_threads; i++)
		pthread_join(ag->ag_workers[i].w_thread, NULL);
	free(ag->ag_workers);
	ag->ag_workers = NULL;
}
