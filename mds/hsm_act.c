/*
 * mds/hsm_act.c - the HSM action table: queueing, handing tasks to
 * agents (MDS_HSM_AGENT_FETCH), their progress and completion, requeue of
 * actions whose agent went silent or was evicted, reload after a restart,
 * and the queue listing with its statistics.
 *
 * DESIGN. A pending action lives in memory (a queue in arrival order and
 * two hash tables, by id and by FID: one action per file) and on disk as a
 * 'Q' record, written when it is queued and deleted in the batch that
 * completes it; RUNNING is memory only, so a restarted MDS reloads every
 * action as WAITING, with the restore bitmap of its file's 'S' record and
 * the multipart upload id of an interrupted archive. Restores are handed
 * out before archives (a reader waits for them). A restore is not handed
 * out while its file's objects still have a destroy record; an archive not
 * while a writer has the file open. Finished actions go to a ring of the
 * last HSM_FIN_NR for MDS_HSM_QUEUE. All calls hold hs_lock (and ns_lock
 * for writing where records change).
 *
 * Every hand-out gets a fresh token (a counter from a random start, never
 * reused, never 0): an action given back (timeout, eviction) and handed out
 * again is a new hand-out, and PROGRESS / DONE of the older one (an agent
 * that went silent and came back) must not count: PROGRESS answers cancel,
 * DONE is refused with -ESTALE. A DONE changes records and memory in that
 * order: the 'Q' deletion is committed with the file's record, and only then
 * is the action freed (a failed commit leaves the action as it was).
 */
#define _GNU_SOURCE
#include "hsm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/le.h"
#include "common/log.h"
#include "common/util.h"

#define HSM_ID_CHUNK 65536
#define HSM_KEY_ID_HW "I"
#define NS_PER_S 1000000000ULL

/* ------------------------------------------------------------ table */

static size_t id_slot(uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 52) % HSM_HASH;
}

static size_t fid_slot(const struct weir_fid *f)
{
	return (size_t)(((f->fid_seq * 0x9e3779b97f4a7c15ULL) ^ f->fid_oid) % HSM_HASH);
}

struct hsm_action *hsm_act_by_id(struct mds_hsm *h, uint64_t id)
{
	for (struct hsm_action *a = h->hs_by_id[id_slot(id)]; a; a = a->ha_id_next)
		if (a->ha_id == id)
			return a;
	return NULL;
}

struct hsm_action *hsm_act_by_fid(struct mds_hsm *h, const struct weir_fid *fid)
{
	for (struct hsm_action *a = h->hs_by_fid[fid_slot(fid)]; a; a = a->ha_fid_next)
		if (weir_fid_eq(&a->ha_fid, fid))
			return a;
	return NULL;
}

static void act_link(struct mds_hsm *h, struct hsm_action *a)
{
	struct hsm_action *head = &h->hs_queue;
	a->ha_next = head;
	a->ha_prev = head->ha_prev;
	head->ha_prev->ha_next = a;
	head->ha_prev = a;
	size_t s = id_slot(a->ha_id);
	a->ha_id_next = h->hs_by_id[s];
	h->hs_by_id[s] = a;
	s = fid_slot(&a->ha_fid);
	a->ha_fid_next = h->hs_by_fid[s];
	h->hs_by_fid[s] = a;
	if (a->ha_state == HSM_S_RUNNING)
		h->hs_running++;
	else
		h->hs_waiting++;
}

static void act_unlink(struct mds_hsm *h, struct hsm_action *a)
{
	a->ha_prev->ha_next = a->ha_next;
	a->ha_next->ha_prev = a->ha_prev;
	struct hsm_action **pp = &h->hs_by_id[id_slot(a->ha_id)];
	while (*pp && *pp != a)
		pp = &(*pp)->ha_id_next;
	if (*pp)
		*pp = a->ha_id_next;
	pp = &h->hs_by_fid[fid_slot(&a->ha_fid)];
	while (*pp && *pp != a)
		pp = &(*pp)->ha_fid_next;
	if (*pp)
		*pp = a->ha_fid_next;
	if (a->ha_state == HSM_S_RUNNING)
		h->hs_running--;
	else
		h->hs_waiting--;
}

static void act_set_state(struct mds_hsm *h, struct hsm_action *a, uint32_t state)
{
	if (a->ha_state == state)
		return;
	if (a->ha_state == HSM_S_RUNNING) {
		h->hs_running--;
		h->hs_waiting++;
	} else {
		h->hs_waiting--;
		h->hs_running++;
	}
	a->ha_state = state;
}

static void act_free(struct hsm_action *a)
{
	if (!a)
		return;
	free(a->ha_key);
	free(a->ha_upload_id);
	free(a);
}

static void qrec_put(struct kv_batch *b, const struct hsm_action *a)
{
	struct hsm_qrec *q = calloc(1, sizeof(*q));
	uint8_t key[9], *v = malloc(HSM_QREC_MAX);
	WEIR_ASSERT(q && v); /* 2 KiB */
	q->q_id = a->ha_id;
	q->q_action = a->ha_action;
	q->q_attempts = a->ha_attempts;
	q->q_fid = a->ha_fid;
	q->q_queued_ns = a->ha_queued_ns;
	q->q_bytes_total = a->ha_bytes_total;
	if (a->ha_upload_id)
		snprintf(q->q_upload_id, sizeof(q->q_upload_id), "%s", a->ha_upload_id);
	hsm_qrec_key(a->ha_id, key);
	kv_batch_put(b, KV_CF_HSM, key, sizeof(key), v, hsm_qrec_encode(q, v));
	free(q);
	free(v);
}

/* Persist \a a's record now (attempts, upload id). */
static void qrec_update(struct mds_hsm *h, const struct hsm_action *a)
{
	struct kv_batch *b = kv_batch_new(h->hs_ns->ns_kv);
	if (!b)
		return;
	qrec_put(b, a);
	int rc = ns_batch_commit(h->hs_ns, b);
	if (rc)
		WEIR_LOG_ERROR("action=%llu rc=%d: cannot update the action record",
			       (unsigned long long)a->ha_id, rc);
}

static uint64_t id_alloc(struct mds_hsm *h, struct kv_batch *b)
{
	if (h->hs_next_id >= h->hs_id_hw) {
		uint8_t v[8];
		h->hs_id_hw = h->hs_next_id + HSM_ID_CHUNK;
		weir_put_le64(v, h->hs_id_hw);
		kv_batch_put(b, KV_CF_HSM, HSM_KEY_ID_HW, 1, v, 8);
	}
	return h->hs_next_id++;
}

int hsm_act_queue(struct mds_hsm *h, uint32_t action, const struct mds_inode *in,
		  uint64_t bytes_total, struct hsm_action **out)
{
	struct hsm_action *a = calloc(1, sizeof(*a));
	struct kv_batch *b = kv_batch_new(h->hs_ns->ns_kv);
	int rc;
	if (!a || !b) {
		free(a);
		kv_batch_free(b);
		return -ENOMEM;
	}
	if (action == HSM_A_ARCHIVE && !(in->in_flags & MDS_INODE_F_HSM)) {
		/* from now on, writers bump the version the archive is checked against */
		struct hsm_rec *rec = malloc(sizeof(*rec));
		if (!rec) {
			free(a);
			kv_batch_free(b);
			return -ENOMEM;
		}
		hsm_rec_init(rec);
		rec->hr_data_version = 1;
		hsm_rec_put(b, &in->in_fid, rec);
		free(rec);
		struct mds_inode tmp = *in;
		tmp.in_flags |= MDS_INODE_F_HSM;
		ns_inode_put(b, &tmp);
	}
	uint64_t saved_next = h->hs_next_id, saved_hw = h->hs_id_hw;
	a->ha_id = id_alloc(h, b);
	a->ha_action = action;
	a->ha_fid = in->in_fid;
	a->ha_state = HSM_S_WAITING;
	a->ha_queued_ns = ns_now_ns();
	a->ha_bytes_total = bytes_total;
	qrec_put(b, a);
	rc = ns_batch_commit(h->hs_ns, b);
	if (rc) {
		h->hs_next_id = saved_next;
		h->hs_id_hw = saved_hw;
		free(a);
		return rc;
	}
	act_link(h, a);
	WEIR_LOG_DEBUG("action=%llu fid=" WEIR_FID_F " %s: queued", (unsigned long long)a->ha_id,
		       WEIR_FID_P(&in->in_fid), action == HSM_A_ARCHIVE ? "archive" : "restore");
	if (out)
		*out = a;
	return 0;
}

static void info_fill(const struct hsm_action *a, struct mds_hsm_action_info *ai)
{
	memset(ai, 0, sizeof(*ai));
	ai->ai_id = a->ha_id;
	ai->ai_action = a->ha_action;
	ai->ai_fid = a->ha_fid;
	ai->ai_state = a->ha_state;
	ai->ai_rc = a->ha_rc;
	ai->ai_bytes_total = a->ha_bytes_total;
	ai->ai_bytes_done = a->ha_bytes_done;
	snprintf(ai->ai_agent, sizeof(ai->ai_agent), "%s", a->ha_agent);
	ai->ai_queued_ns = a->ha_queued_ns;
	if (a->ha_key)
		snprintf(ai->ai_key, sizeof(ai->ai_key), "%s", a->ha_key);
}

void hsm_act_qdel(struct kv_batch *b, const struct hsm_action *a)
{
	uint8_t key[9];
	hsm_qrec_key(a->ha_id, key);
	kv_batch_del(b, KV_CF_HSM, key, sizeof(key));
}

void hsm_act_retire(struct mds_hsm *h, struct hsm_action *a, uint32_t state, int32_t rc)
{
	struct hsm_fin *f = &h->hs_fin[h->hs_fin_next++ % HSM_FIN_NR];
	info_fill(a, &f->hf_info);
	f->hf_info.ai_state = state;
	f->hf_info.ai_rc = rc;
	f->hf_mono_ns = weir_now_ns();
	f->hf_healed = false;
	if (state == HSM_S_DONE)
		h->hs_done++;
	else if (rc != -ECANCELED)
		h->hs_failed++;
	act_unlink(h, a);
	act_free(a);
}

void hsm_act_finish(struct mds_hsm *h, struct kv_batch *b, struct hsm_action *a, uint32_t state,
		    int32_t rc)
{
	if (b) {
		hsm_act_qdel(b, a);
	} else {
		/* a 'Q' left behind by a failed commit is reloaded as waiting after a
		 * restart and checked again at its hand-out: harmless */
		struct kv_batch *nb = kv_batch_new(h->hs_ns->ns_kv);
		int rc2 = -ENOMEM;
		if (nb) {
			hsm_act_qdel(nb, a);
			rc2 = ns_batch_commit(h->hs_ns, nb);
		}
		if (rc2)
			WEIR_LOG_ERROR("action=%llu rc=%d: cannot delete the action record",
				       (unsigned long long)a->ha_id, rc2);
	}
	hsm_act_retire(h, a, state, rc);
}

/* Failures that say S3 (or the way to it) was away, not that the copy is bad. */
static bool hsm_rc_transient(int32_t rc)
{
	return rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -EHOSTUNREACH ||
	       rc == -ENETUNREACH || rc == -ECONNRESET || rc == -ECONNABORTED ||
	       rc == -ENOTCONN || rc == -EPIPE || rc == -EAGAIN || rc == -ESHUTDOWN;
}

int hsm_fin_failed_restore(struct mds_hsm *h, const struct weir_fid *fid, uint64_t window_ns,
			   uint64_t retry_ns)
{
	uint64_t now = weir_now_ns();
	const struct hsm_fin *last = NULL;
	for (size_t i = 0; i < HSM_FIN_NR; i++) {
		const struct hsm_fin *f = &h->hs_fin[i];
		if (f->hf_info.ai_id && f->hf_info.ai_action == HSM_A_RESTORE &&
		    f->hf_info.ai_state == HSM_S_FAILED && f->hf_info.ai_rc != -ECANCELED &&
		    !f->hf_healed && weir_fid_eq(&f->hf_info.ai_fid, fid) &&
		    (!last || f->hf_mono_ns > last->hf_mono_ns))
			last = f;
	}
	if (!last)
		return HSM_FIN_NONE;
	if (hsm_rc_transient(last->hf_info.ai_rc))
		return now - last->hf_mono_ns < retry_ns ? HSM_FIN_RETRY_LATER : HSM_FIN_NONE;
	return now - last->hf_mono_ns < window_ns ? HSM_FIN_FAILED : HSM_FIN_NONE;
}

void hsm_fin_heal(struct mds_hsm *h, const struct weir_fid *fid)
{
	for (size_t i = 0; i < HSM_FIN_NR; i++)
		if (weir_fid_eq(&h->hs_fin[i].hf_info.ai_fid, fid))
			h->hs_fin[i].hf_healed = true;
}

void hsm_rate_add(struct mds_hsm *h, int which, uint64_t bytes)
{
	uint64_t sec = weir_now_ns() / NS_PER_S;
	size_t s = sec % HSM_RATE_SECS;
	if (h->hs_rate_sec[s] != sec) {
		h->hs_rate_sec[s] = sec;
		h->hs_rate[0][s] = h->hs_rate[1][s] = 0;
	}
	h->hs_rate[which][s] += bytes;
	if (which == 0)
		h->hs_archived_bytes += bytes;
	else
		h->hs_restored_bytes += bytes;
}

static uint64_t rate_get(struct mds_hsm *h, int which)
{
	uint64_t sec = weir_now_ns() / NS_PER_S, sum = 0;
	for (size_t s = 0; s < HSM_RATE_SECS; s++)
		if (h->hs_rate_sec[s] + HSM_RATE_SECS > sec)
			sum += h->hs_rate[which][s];
	return sum / HSM_RATE_SECS;
}

int hsm_act_load(struct mds_hsm *h)
{
	struct mds_ns *ns = h->hs_ns;
	uint8_t v[8];
	ssize_t n = kv_get(ns->ns_kv, KV_CF_HSM, HSM_KEY_ID_HW, 1, v, sizeof(v));
	h->hs_next_id = h->hs_id_hw = (n == 8) ? weir_get_le64(v) : 1;
	if (!h->hs_next_id)
		h->hs_next_id = h->hs_id_hw = 1;
	/* tokens of an earlier run are never met again: a random start */
	if (getrandom(&h->hs_next_token, sizeof(h->hs_next_token), GRND_NONBLOCK) !=
	    sizeof(h->hs_next_token))
		h->hs_next_token = weir_wall_ns() ^ ((uint64_t)getpid() << 32);
	struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_HSM);
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	struct hsm_qrec *q = malloc(sizeof(*q));
	int rc = 0, dropped = 0;
	if (!it || !b || !q) {
		rc = -ENOMEM;
		goto out;
	}
	for (kv_iter_seek(it, "Q", 1); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl != 9 || k[0] != 'Q')
			break;
		const uint8_t *val = kv_iter_val(it, &vl);
		struct mds_inode in;
		bool keep = !hsm_qrec_decode(val, vl, q) && q->q_id == weir_get_be64(k + 1) &&
			    !ns_inode_get(ns, &q->q_fid, &in) && S_ISREG(in.in_mode) &&
			    !hsm_act_by_fid(h, &q->q_fid);
		if (keep && q->q_action == HSM_A_RESTORE && !(in.in_flags & MDS_INODE_F_RELEASED))
			keep = false;
		if (!keep) {
			kv_batch_del(b, KV_CF_HSM, k, kl);
			dropped++;
			continue;
		}
		struct hsm_action *a = calloc(1, sizeof(*a));
		if (!a) {
			rc = -ENOMEM;
			break;
		}
		a->ha_id = q->q_id;
		a->ha_action = q->q_action;
		a->ha_fid = q->q_fid;
		a->ha_state = HSM_S_WAITING;
		a->ha_attempts = q->q_attempts;
		a->ha_queued_ns = q->q_queued_ns;
		a->ha_bytes_total = q->q_bytes_total;
		if (q->q_upload_id[0])
			a->ha_upload_id = strdup(q->q_upload_id);
		if (a->ha_id >= h->hs_next_id)
			h->hs_next_id = h->hs_id_hw = a->ha_id + 1;
		act_link(h, a);
	}
	if (dropped)
		WEIR_LOG_NOTICE("hsm: %d queued actions of removed or changed files dropped", dropped);
out:
	if (!rc && b)
		rc = ns_batch_commit(ns, b);
	else
		kv_batch_free(b);
	kv_iter_free(it);
	free(q);
	return rc;
}

void hsm_act_free_all(struct mds_hsm *h)
{
	struct hsm_action *head = &h->hs_queue;
	if (!head->ha_next)
		return;
	while (head->ha_next != head) {
		struct hsm_action *a = head->ha_next;
		act_unlink(h, a);
		act_free(a);
	}
}

/* ------------------------------------------------------------ agents */

static void agent_seen(struct mds_hsm *h, const char *name, uint64_t session)
{
	uint64_t now = weir_now_ns();
	struct hsm_agent *slot = &h->hs_agents[0];
	for (size_t i = 0; i < HSM_AGENTS_NR; i++) {
		struct hsm_agent *ag = &h->hs_agents[i];
		if (!strncmp(ag->ag_name, name, HSM_AGENT_MAX) && ag->ag_session == session) {
			slot = ag;
			break;
		}
		if (ag->ag_seen_ns < slot->ag_seen_ns)
			slot = ag;
	}
	snprintf(slot->ag_name, sizeof(slot->ag_name), "%s", name);
	slot->ag_session = session;
	slot->ag_seen_ns = now;
}

static void task_start(struct mds_hsm *h, struct hsm_action *a, const char *agent,
		       uint64_t session, struct mds_hsm_task *tk)
{
	if (!++h->hs_next_token)
		h->hs_next_token++;
	a->ha_token = tk->tk_token = h->hs_next_token;
	act_set_state(h, a, HSM_S_RUNNING);
	snprintf(a->ha_agent, sizeof(a->ha_agent), "%s", agent);
	a->ha_session = session;
	a->ha_heard_ns = weir_now_ns();
}

/* Hand out restore \a a. \return 0 (task filled), -EAGAIN (not now), 1 (finished: skip). */
static int handout_restore(struct mds_hsm *h, struct hsm_action *a, struct hsm_rec *rec,
			   struct mds_hsm_task *tk)
{
	struct mds_ns *ns = h->hs_ns;
	struct mds_inode in;
	if (hsm_destroy_pending(ns, &a->ha_fid))
		return -EAGAIN;
	int rc = ns_inode_get(ns, &a->ha_fid, &in);
	if (!rc)
		rc = hsm_rec_get(ns, &a->ha_fid, rec);
	if (rc) {
		hsm_act_finish(h, NULL, a, HSM_S_FAILED, rc);
		return 1;
	}
	if (!(in.in_flags & MDS_INODE_F_RELEASED) || !(rec->hr_flags & HSM_F_RELEASED)) {
		hsm_act_finish(h, NULL, a, HSM_S_DONE, 0); /* nothing left to restore */
		return 1;
	}
	if (rec->hr_flags & HSM_F_LOST) {
		hsm_act_finish(h, NULL, a, HSM_S_FAILED, -EIO);
		return 1;
	}
	/* a restore state of another size (none yet, a re-import) starts afresh */
	uint64_t chunk = hsm_chunk_size(in.in_size, in.in_layout.lo_stripe_size);
	uint64_t nr_chunks = (in.in_size + chunk - 1) / chunk;
	if (rec->hr_chunk != chunk || rec->hr_map_len != (nr_chunks + 7) / 8) {
		struct kv_batch *b = kv_batch_new(ns->ns_kv);
		if (!b)
			return -EAGAIN;
		hsm_rec_restore_reset(rec, in.in_size, in.in_layout.lo_stripe_size);
		hsm_rec_put(b, &a->ha_fid, rec);
		if (ns_batch_commit(ns, b))
			return -EAGAIN;
	}
	const struct mds_hsm_dra *d = hsm_dra_by_id(h, rec->hr_dra);
	memset(tk, 0, offsetof(struct mds_hsm_task, tk_map));
	tk->tk_id = a->ha_id;
	tk->tk_action = HSM_A_RESTORE;
	tk->tk_fid = a->ha_fid;
	snprintf(tk->tk_bucket, sizeof(tk->tk_bucket), "%s", rec->hr_bucket);
	snprintf(tk->tk_key, sizeof(tk->tk_key), "%s", rec->hr_key);
	snprintf(tk->tk_etag, sizeof(tk->tk_etag), "%s", rec->hr_etag);
	tk->tk_size = in.in_size;
	tk->tk_chunk = rec->hr_chunk;
	tk->tk_map_len = rec->hr_map_len;
	memcpy(tk->tk_map, rec->hr_map, rec->hr_map_len);
	tk->tk_hint = a->ha_has_hint ? a->ha_hint : 0;
	tk->tk_dra_flags = d ? d->hd_flags : 0;
	tk->tk_upload_id[0] = 0;
	a->ha_bytes_total = in.in_size;
	a->ha_bytes_done = hsm_rec_restored(rec, in.in_size);
	free(a->ha_key);
	a->ha_key = strdup(rec->hr_key);
	return 0;
}

/*
 * May archive \a a write s3://bucket/key? Not when another file's record
 * holds that key (a file archived, then renamed: the key was built from its
 * old path; its copy, maybe its only one, would be overwritten), nor while
 * another file's archive to it runs. \return 0, -EEXIST (logged), -EAGAIN.
 */
static int key_check(struct mds_hsm *h, const struct hsm_action *a, const char *bucket,
		     const char *key)
{
	struct hsm_action *head = &h->hs_queue;
	for (struct hsm_action *o = head->ha_next; o != head; o = o->ha_next)
		if (o != a && o->ha_action == HSM_A_ARCHIVE && o->ha_state == HSM_S_RUNNING &&
		    o->ha_key && !strcmp(o->ha_key, key) && !strcmp(o->ha_bucket, bucket) &&
		    !weir_fid_eq(&o->ha_fid, &a->ha_fid))
			return -EAGAIN;
	struct weir_fid owner;
	int rc = hsm_key_owner(h->hs_ns, bucket, key, &owner);
	if (rc == -ENOENT || (!rc && weir_fid_eq(&owner, &a->ha_fid)))
		return 0;
	if (rc)
		return -EAGAIN;
	struct hsm_rec *orec = malloc(sizeof(*orec));
	if (!orec)
		return -EAGAIN;
	rc = hsm_rec_get(h->hs_ns, &owner, orec);
	bool taken = !rc && !strcmp(orec->hr_bucket, bucket) && !strcmp(orec->hr_key, key);
	free(orec);
	if (rc && rc != -ENOENT)
		return -EAGAIN;
	if (!taken)
		return 0; /* a stale entry: the owner's record moved on */
	WEIR_LOG_ERROR("action=%llu fid=" WEIR_FID_F " key=s3://%s/%s: that key holds the archive"
		       " copy of fid=" WEIR_FID_F " (renamed since it was archived?); archive"
		       " failed (EEXIST): rename this file, or archive the other one first",
		       (unsigned long long)a->ha_id, WEIR_FID_P(&a->ha_fid), bucket, key,
		       WEIR_FID_P(&owner));
	return -EEXIST;
}

static int handout_archive(struct mds_hsm *h, struct hsm_action *a, struct hsm_rec *rec,
			   struct mds_hsm_task *tk)
{
	struct mds_ns *ns = h->hs_ns;
	struct mds_inode in;
	uint32_t openers, writers;
	ns_open_counts(ns, &a->ha_fid, &openers, &writers);
	if (writers)
		return -EAGAIN;
	int rc = ns_inode_get(ns, &a->ha_fid, &in);
	if (!rc)
		rc = hsm_rec_get(ns, &a->ha_fid, rec);
	if (rc == -ENOENT && !(in.in_flags & MDS_INODE_F_HSM)) {
		hsm_rec_init(rec);
		rc = 0;
	}
	if (rc) {
		hsm_act_finish(h, NULL, a, HSM_S_FAILED, rc);
		return 1;
	}
	if (rec->hr_flags & HSM_F_RELEASED) {
		hsm_act_finish(h, NULL, a, HSM_S_DONE, 0);
		return 1;
	}
	const struct mds_hsm_dra *d = hsm_dra_of(h, &in);
	if (!d) {
		WEIR_LOG_WARN("action=%llu fid=" WEIR_FID_F ": file no longer under an association;"
			      " archive failed", (unsigned long long)a->ha_id,
			      WEIR_FID_P(&a->ha_fid));
		hsm_act_finish(h, NULL, a, HSM_S_FAILED, -EINVAL);
		return 1;
	}
	char *path = malloc(NS_PATH_MAX + 1);
	if (!path)
		return -EAGAIN;
	rc = hsm_path_below(ns, &in, &d->hd_root, path, NS_PATH_MAX + 1);
	size_t pl = strlen(d->hd_prefix);
	if (!rc && pl + strlen(path) > HSM_KEY_MAX)
		rc = -ENAMETOOLONG;
	if (rc) {
		WEIR_LOG_WARN("action=%llu fid=" WEIR_FID_F " rc=%d: no S3 key for the file;"
			      " archive failed", (unsigned long long)a->ha_id,
			      WEIR_FID_P(&a->ha_fid), rc);
		free(path);
		hsm_act_finish(h, NULL, a, HSM_S_FAILED, rc);
		return 1;
	}
	memset(tk, 0, offsetof(struct mds_hsm_task, tk_map));
	tk->tk_id = a->ha_id;
	tk->tk_action = HSM_A_ARCHIVE;
	tk->tk_fid = a->ha_fid;
	snprintf(tk->tk_bucket, sizeof(tk->tk_bucket), "%s", d->hd_bucket);
	snprintf(tk->tk_key, sizeof(tk->tk_key), "%s%s", d->hd_prefix, path);
	free(path);
	rc = key_check(h, a, tk->tk_bucket, tk->tk_key);
	if (rc == -EEXIST) {
		hsm_act_finish(h, NULL, a, HSM_S_FAILED, rc);
		return 1;
	}
	if (rc)
		return rc;
	tk->tk_size = in.in_size;
	tk->tk_data_version = rec->hr_data_version;
	tk->tk_map_len = 0;
	tk->tk_dra_flags = d->hd_flags;
	snprintf(tk->tk_upload_id, sizeof(tk->tk_upload_id), "%s",
		 a->ha_upload_id ? a->ha_upload_id : "");
	free(a->ha_key);
	a->ha_key = strdup(tk->tk_key);
	if (!a->ha_key)
		return -EAGAIN;
	snprintf(a->ha_bucket, sizeof(a->ha_bucket), "%s", d->hd_bucket);
	a->ha_dra = d->hd_id;
	a->ha_data_version = rec->hr_data_version;
	a->ha_bytes_total = in.in_size;
	a->ha_bytes_done = 0;
	return 0;
}

int mds_hsm_fetch(struct mds_hsm *h, const char *agent, uint64_t session, uint32_t max,
		  struct mds_hsm_task *tasks, uint32_t *nr)
{
	*nr = 0;
	max = WEIR_MIN(max ? max : 1, HSM_FETCH_MAX);
	struct hsm_rec *rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	hsm_lock(h, true);
	agent_seen(h, agent, session);
	uint64_t now = weir_now_ns();
	static const uint32_t order[2] = { HSM_A_RESTORE, HSM_A_ARCHIVE };
	for (int pass = 0; pass < 2 && *nr < max; pass++) {
		struct hsm_action *head = &h->hs_queue, *a = head->ha_next, *next;
		for (; a != head && *nr < max; a = next) {
			next = a->ha_next;
			if (a->ha_state != HSM_S_WAITING || a->ha_action != order[pass] ||
			    now < a->ha_not_before_ns)
				continue;
			int rc = a->ha_action == HSM_A_RESTORE
					 ? handout_restore(h, a, rec, &tasks[*nr])
					 : handout_archive(h, a, rec, &tasks[*nr]);
			if (rc)
				continue;
			task_start(h, a, agent, session, &tasks[*nr]);
			WEIR_LOG_INFO("action=%llu fid=" WEIR_FID_F " agent=%s key=%s: %s handed out",
				      (unsigned long long)a->ha_id, WEIR_FID_P(&a->ha_fid), agent,
				      tasks[*nr].tk_key,
				      a->ha_action == HSM_A_RESTORE ? "restore" : "archive");
			(*nr)++;
		}
	}
	hsm_unlock(h);
	free(rec);
	return 0;
}

/* ------------------------------------------------------------ progress and completion */

int mds_hsm_progress(struct mds_hsm *h, uint64_t id, uint64_t token, uint64_t off, uint64_t len,
		     uint64_t bytes_done, const char *upload_id, struct mds_hsm_progress_rep *rep)
{
	memset(rep, 0, sizeof(*rep));
	if (upload_id && strnlen(upload_id, HSM_UPLOAD_ID_MAX + 1) > HSM_UPLOAD_ID_MAX)
		return -EINVAL;
	struct hsm_rec *rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	int rc = 0;
	hsm_lock(h, true);
	struct hsm_action *a = hsm_act_by_id(h, id);
	if (!a) {
		rc = -ENOENT;
		goto out_unlock;
	}
	if (a->ha_state != HSM_S_RUNNING || a->ha_token != token || a->ha_cancel) {
		/* given back (timeout, eviction), maybe handed out again (another
		 * token): not this agent's any more; or a truncate waits for this
		 * agent to stop writing */
		rep->pr_cancel = true;
		goto out_unlock;
	}
	a->ha_heard_ns = weir_now_ns();
	if (a->ha_action == HSM_A_ARCHIVE) {
		if (bytes_done > a->ha_bytes_done) {
			hsm_rate_add(h, 0, bytes_done - a->ha_bytes_done);
			a->ha_bytes_done = bytes_done;
		}
		if (upload_id && upload_id[0] &&
		    (!a->ha_upload_id || strcmp(a->ha_upload_id, upload_id))) {
			char *u = strdup(upload_id);
			if (!u) {
				rc = -ENOMEM;
				goto out_unlock;
			}
			free(a->ha_upload_id);
			a->ha_upload_id = u;
			qrec_update(h, a);
		}
		goto out_unlock;
	}
	struct mds_inode in;
	rc = ns_inode_get(h->hs_ns, &a->ha_fid, &in);
	if (!rc)
		rc = hsm_rec_get(h->hs_ns, &a->ha_fid, rec);
	if (rc)
		goto out_unlock;
	if (len) {
		uint64_t size = in.in_size, chunk = rec->hr_chunk;
		uint64_t end = (off + len < off || off + len > size) ? size : off + len;
		if (!chunk || off % chunk || off >= size) {
			rc = -EINVAL;
			goto out_unlock;
		}
		uint64_t before = hsm_rec_restored(rec, size);
		for (uint64_t i = off / chunk; i * chunk < end; i++) {
			uint64_t ce = WEIR_MIN((i + 1) * chunk, size);
			if (ce <= end && i / 8 < rec->hr_map_len)
				rec->hr_map[i / 8] |= (uint8_t)(1u << (i % 8));
		}
		uint64_t after = hsm_rec_restored(rec, size);
		if (after > before) {
			struct kv_batch *b = kv_batch_new(h->hs_ns->ns_kv);
			if (!b) {
				rc = -ENOMEM;
				goto out_unlock;
			}
			hsm_rec_put(b, &a->ha_fid, rec);
			rc = ns_batch_commit(h->hs_ns, b);
			if (rc)
				goto out_unlock;
			hsm_rate_add(h, 1, after - before);
		}
		a->ha_bytes_done = after;
	}
	if (a->ha_has_hint && hsm_rec_chunk_done(rec, a->ha_hint / rec->hr_chunk))
		a->ha_has_hint = false;
	if (a->ha_has_hint) {
		rep->pr_has_want = true;
		rep->pr_want = a->ha_hint;
	}
out_unlock:
	hsm_unlock(h);
	free(rec);
	return rc;
}

/* Done rc 0 of an archive. Locks held. */
static int done_archive(struct mds_hsm *h, struct hsm_action *a, struct mds_inode *in,
			struct hsm_rec *rec, const char *etag, bool *requeue)
{
	struct mds_ns *ns = h->hs_ns;
	uint32_t openers, writers;
	int rc = (in->in_flags & MDS_INODE_F_HSM) ? hsm_rec_get(ns, &in->in_fid, rec) : -ENOENT;
	if (rc == -ENOENT) {
		hsm_rec_init(rec);
		rc = 0;
	}
	if (rc)
		return rc;
	if (!a->ha_key)
		return -EINVAL;
	char *old = malloc(HSM_BUCKET_MAX + 1 + HSM_KEY_MAX + 1); /* the key it had */
	struct kv_batch *b = old ? kv_batch_new(ns->ns_kv) : NULL;
	if (!b) {
		free(old);
		return -ENOMEM;
	}
	snprintf(old, HSM_BUCKET_MAX + 1, "%s", rec->hr_bucket);
	snprintf(old + HSM_BUCKET_MAX + 1, HSM_KEY_MAX + 1, "%s", rec->hr_key);
	struct weir_fid owner;
	if (!hsm_key_owner(ns, a->ha_bucket, a->ha_key, &owner) &&
	    !weir_fid_eq(&owner, &in->in_fid))
		WEIR_LOG_WARN("action=%llu fid=" WEIR_FID_F " key=s3://%s/%s: the key was also"
			      " recorded for fid=" WEIR_FID_F "; it is this file's now",
			      (unsigned long long)a->ha_id, WEIR_FID_P(&in->in_fid), a->ha_bucket,
			      a->ha_key, WEIR_FID_P(&owner));
	ns_open_counts(ns, &in->in_fid, &openers, &writers);
	bool current = rec->hr_data_version == a->ha_data_version && !writers;
	rec->hr_flags |= HSM_F_EXISTS;
	snprintf(rec->hr_etag, sizeof(rec->hr_etag), "%s", etag);
	snprintf(rec->hr_key, sizeof(rec->hr_key), "%s", a->ha_key);
	snprintf(rec->hr_bucket, sizeof(rec->hr_bucket), "%s", a->ha_bucket);
	rec->hr_dra = a->ha_dra;
	rec->hr_archived_version = a->ha_data_version;
	rec->hr_archived_ns = ns_now_ns();
	rec->hr_archived_size = in->in_size;
	if (current) {
		rec->hr_flags |= HSM_F_ARCHIVED;
		rec->hr_flags &= ~(HSM_F_DIRTY | HSM_F_LOST);
	} else {
		rec->hr_flags |= HSM_F_DIRTY;
		rec->hr_flags &= ~HSM_F_ARCHIVED;
		WEIR_LOG_INFO("action=%llu fid=" WEIR_FID_F " key=%s: modified while archived;"
			      " the file stays dirty", (unsigned long long)a->ha_id,
			      WEIR_FID_P(&in->in_fid), a->ha_key);
		const struct mds_hsm_dra *d = hsm_dra_of(h, in);
		*requeue = d && (d->hd_flags & HSM_DF_AUTO_EXPORT);
	}
	if (!(in->in_flags & MDS_INODE_F_HSM)) {
		in->in_flags |= MDS_INODE_F_HSM;
		ns_inode_put(b, in);
	}
	hsm_rec_put(b, &in->in_fid, rec);
	hsm_key_update(ns, b, &in->in_fid, old, old + HSM_BUCKET_MAX + 1, rec->hr_bucket,
		       rec->hr_key);
	hsm_act_qdel(b, a);
	rc = hsm_commit(h, b);
	if (rc) {
		*requeue = false;
		goto out;
	}
	if (a->ha_bytes_total > a->ha_bytes_done)
		hsm_rate_add(h, 0, a->ha_bytes_total - a->ha_bytes_done);
	WEIR_LOG_INFO("action=%llu fid=" WEIR_FID_F " key=%s etag=%s size=%llu: archived",
		      (unsigned long long)a->ha_id, WEIR_FID_P(&in->in_fid), a->ha_key, etag,
		      (unsigned long long)in->in_size);
	hsm_act_retire(h, a, HSM_S_DONE, 0);
out:
	free(old);
	return rc;
}

/* Done rc 0 of a restore. Locks held. */
static int done_restore(struct mds_hsm *h, struct hsm_action *a, struct mds_inode *in,
			struct hsm_rec *rec)
{
	struct mds_ns *ns = h->hs_ns;
	int rc = hsm_rec_get(ns, &in->in_fid, rec);
	if (rc)
		return rc;
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b)
		return -ENOMEM;
	uint64_t before = hsm_rec_restored(rec, in->in_size);
	rec->hr_flags &= ~HSM_F_RELEASED;
	rec->hr_chunk = 0;
	rec->hr_map_len = 0;
	in->in_flags &= ~MDS_INODE_F_RELEASED;
	if (!in->in_blocks)
		in->in_blocks = (in->in_size + 511) / 512;
	ns_inode_put(b, in);
	hsm_rec_put(b, &in->in_fid, rec);
	hsm_act_qdel(b, a);
	rc = hsm_commit(h, b);
	if (rc)
		return rc;
	if (in->in_size > before)
		hsm_rate_add(h, 1, in->in_size - before);
	WEIR_LOG_INFO("action=%llu fid=" WEIR_FID_F " key=%s size=%llu: restored",
		      (unsigned long long)a->ha_id, WEIR_FID_P(&in->in_fid), rec->hr_key,
		      (unsigned long long)in->in_size);
	hsm_act_retire(h, a, HSM_S_DONE, 0);
	return 0;
}

/* Done -ESTALE of a restore: the object changed in S3. Locks held. \return true: requeued. */
static int done_stale(struct mds_hsm *h, struct hsm_action *a, struct mds_inode *in,
		      struct hsm_rec *rec, const char *etag, uint64_t size, int64_t mtime_ns,
		      bool *requeued)
{
	struct mds_ns *ns = h->hs_ns;
	int rc = hsm_rec_get(ns, &in->in_fid, rec);
	if (rc)
		return rc;
	const struct mds_hsm_dra *d = hsm_dra_by_id(h, rec->hr_dra);
	if (!d)
		d = hsm_dra_of(h, in);
	char *path = malloc(NS_PATH_MAX + 2);
	struct weir_fid root = weir_fid_root();
	if (path) {
		path[0] = '/';
		if (hsm_path_below(ns, in, &root, path + 1, NS_PATH_MAX + 1))
			snprintf(path, NS_PATH_MAX + 2, "?");
	}
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		free(path);
		return -ENOMEM;
	}
	bool reimport = d && (d->hd_flags & HSM_DF_REIMPORT) && (rec->hr_flags & HSM_F_IMPORTED) &&
			!(rec->hr_flags & HSM_F_DIRTY) && etag[0] &&
			size <= (uint64_t)WEIR_MAX_FILE_OFF;
	char old_etag[HSM_ETAG_MAX + 1];
	snprintf(old_etag, sizeof(old_etag), "%s", rec->hr_etag);
	if (reimport) {
		/* chunks of the old version may be in the objects already: they are
		 * destroyed first (the restore waits for the 'D' record, as after a
		 * release) so none of them shows through the new version */
		ns_destroy_put(b, 'D', in);
		in->in_size = size;
		in->in_blocks = 0;
		if (mtime_ns)
			in->in_mtime_ns = mtime_ns;
		in->in_ctime_ns = ns_now_ns();
		snprintf(rec->hr_etag, sizeof(rec->hr_etag), "%s", etag);
		rec->hr_archived_size = size;
		rec->hr_archived_ns = mtime_ns;
		hsm_rec_restore_reset(rec, size, in->in_layout.lo_stripe_size);
		ns_inode_put(b, in);
		hsm_rec_put(b, &in->in_fid, rec);
	} else {
		rec->hr_flags |= HSM_F_LOST;
		rec->hr_flags &= ~HSM_F_ARCHIVED;
		hsm_rec_put(b, &in->in_fid, rec);
		hsm_act_qdel(b, a);
	}
	rc = hsm_commit(h, b);
	if (rc)
		goto out;
	if (reimport) {
		WEIR_LOG_NOTICE("action=%llu fid=" WEIR_FID_F " path=%s key=%s etag=%s new_etag=%s"
				" size=%llu: object changed in S3; re-imported, restoring the new"
				" version", (unsigned long long)a->ha_id, WEIR_FID_P(&in->in_fid),
				path ? path : "?", rec->hr_key, old_etag, etag,
				(unsigned long long)size);
		act_set_state(h, a, HSM_S_WAITING);
		a->ha_bytes_total = size;
		a->ha_bytes_done = 0;
		a->ha_agent[0] = 0;
		*requeued = true;
	} else {
		WEIR_LOG_ERROR("action=%llu fid=" WEIR_FID_F " path=%s key=%s etag=%s s3_etag=%s:"
			       " the archive copy changed in S3 behind Weir's back; file marked"
			       " lost, its reads fail with EIO", (unsigned long long)a->ha_id,
			       WEIR_FID_P(&in->in_fid), path ? path : "?", rec->hr_key,
			       rec->hr_etag, etag[0] ? etag : "(none)");
		hsm_act_retire(h, a, HSM_S_FAILED, -ESTALE);
	}
out:
	free(path);
	return rc;
}

/* Has every chunk of a released file of \a size bytes been reported? */
static bool restore_complete(const struct hsm_rec *rec, uint64_t size)
{
	if (!size)
		return true;
	if (!rec->hr_chunk)
		return false;
	uint64_t nr = (size + rec->hr_chunk - 1) / rec->hr_chunk;
	for (uint64_t i = 0; i < nr; i++)
		if (!hsm_rec_chunk_done(rec, i))
			return false;
	return true;
}

int mds_hsm_done(struct mds_hsm *h, uint64_t id, uint64_t token, int32_t rc_agent,
		 const char *etag, uint64_t size, int64_t mtime_ns, const char *msg)
{
	bool kick = false, requeue = false;
	struct mds_inode in;
	char b[96];
	etag = etag ? etag : "";
	msg = msg ? msg : "";
	if (rc_agent > 0 || strnlen(etag, HSM_ETAG_MAX + 1) > HSM_ETAG_MAX)
		return -EINVAL;
	struct hsm_rec *rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	hsm_lock(h, true);
	struct hsm_action *a = hsm_act_by_id(h, id);
	int rc = 0;
	if (!a) {
		rc = -ENOENT;
		goto out_unlock;
	}
	if (a->ha_state != HSM_S_RUNNING || a->ha_token != token) {
		/* an agent that went silent (its action was given back, maybe handed
		 * to another agent since) answering its old hand-out */
		WEIR_LOG_WARN("action=%llu fid=" WEIR_FID_F " token=%llu rc=%s: completion of an"
			      " older hand-out (the action is %s, token %llu); refused",
			      (unsigned long long)id, WEIR_FID_P(&a->ha_fid),
			      (unsigned long long)token, weir_rc_str(rc_agent, b, sizeof(b)),
			      a->ha_state == HSM_S_RUNNING ? "running" : "waiting",
			      (unsigned long long)a->ha_token);
		rc = -ESTALE;
		goto out_unlock;
	}
	if (a->ha_cancel) {
		/* the agent has stopped writing (whatever it reports): the waiting
		 * truncate may go on */
		hsm_act_finish(h, NULL, a, HSM_S_FAILED, -ECANCELED);
		goto out_unlock;
	}
	if (rc_agent == -ECANCELED) {
		/* the agent gives the action up (it stops): back to waiting now */
		WEIR_LOG_INFO("action=%llu fid=" WEIR_FID_F " agent=%s: given up by the agent; back"
			      " to waiting", (unsigned long long)id, WEIR_FID_P(&a->ha_fid),
			      a->ha_agent);
		act_set_state(h, a, HSM_S_WAITING);
		kick = true;
		goto out_unlock;
	}
	uint32_t action = a->ha_action;
	struct weir_fid fid = a->ha_fid;
	rc = ns_inode_get(h->hs_ns, &a->ha_fid, &in);
	if (rc) {
		hsm_act_finish(h, NULL, a, HSM_S_FAILED, rc);
		goto out_unlock;
	}
	if (rc_agent == 0 && action == HSM_A_ARCHIVE && !etag[0])
		rc_agent = -EPROTO; /* no verified copy without the ETag read back */
	if (rc_agent == 0 && action == HSM_A_RESTORE) {
		rc = hsm_rec_get(h->hs_ns, &fid, rec);
		if (rc)
			goto out_unlock;
		if (!restore_complete(rec, in.in_size)) {
			rc_agent = -EPROTO; /* the file would come back with holes */
			msg = "done before every chunk was reported";
		}
	}
	if (rc_agent == 0) {
		rc = action == HSM_A_ARCHIVE ? done_archive(h, a, &in, rec, etag, &requeue)
					     : done_restore(h, a, &in, rec);
		if (rc)
			WEIR_LOG_ERROR("action=%llu fid=" WEIR_FID_F " rc=%s: cannot record the"
				       " completion; the action stays running",
				       (unsigned long long)id, WEIR_FID_P(&fid),
				       weir_rc_str(rc, b, sizeof(b)));
		if (!rc && requeue && !hsm_act_by_fid(h, &fid) &&
		    !hsm_act_queue(h, HSM_A_ARCHIVE, &in, in.in_size, NULL))
			kick = true;
		goto out_unlock;
	}
	if (rc_agent == -ESTALE && action == HSM_A_RESTORE) {
		rc = done_stale(h, a, &in, rec, etag, size, mtime_ns, &kick);
		goto out_unlock;
	}
	a->ha_attempts++;
	a->ha_rc = rc_agent;
	if (a->ha_attempts >= HSM_ATTEMPTS_MAX) {
		WEIR_LOG_ERROR("action=%llu fid=" WEIR_FID_F " agent=%s rc=%s attempts=%u: %s failed:"
			       " %s", (unsigned long long)id, WEIR_FID_P(&fid), a->ha_agent,
			       weir_rc_str(rc_agent, b, sizeof(b)), a->ha_attempts,
			       action == HSM_A_ARCHIVE ? "archive" : "restore", msg);
		hsm_act_finish(h, NULL, a, HSM_S_FAILED, rc_agent);
		goto out_unlock;
	}
	uint64_t backoff_s = WEIR_MIN(1ULL << a->ha_attempts, 60ULL);
	WEIR_LOG_WARN("action=%llu fid=" WEIR_FID_F " agent=%s rc=%s attempts=%u: %s failed (%s);"
		      " retry in %llus", (unsigned long long)id, WEIR_FID_P(&fid), a->ha_agent,
		      weir_rc_str(rc_agent, b, sizeof(b)), a->ha_attempts,
		      action == HSM_A_ARCHIVE ? "archive" : "restore", msg,
		      (unsigned long long)backoff_s);
	act_set_state(h, a, HSM_S_WAITING);
	a->ha_not_before_ns = weir_now_ns() + backoff_s * NS_PER_S;
	qrec_update(h, a);
out_unlock:
	hsm_unlock(h);
	free(rec);
	if (kick)
		hsm_kick(h);
	return rc;
}

/* ------------------------------------------------------------ liveness */

static size_t give_back(struct mds_hsm *h, uint64_t session, uint64_t timeout_ns)
{
	size_t n = 0;
	pthread_mutex_lock(&h->hs_lock);
	/* now under the lock: an action handed out (ha_heard_ns set) just before
	 * must not look heard "in the future", which the unsigned difference
	 * below would take for a silence of centuries */
	uint64_t now = weir_now_ns();
	struct hsm_action *head = &h->hs_queue;
	for (struct hsm_action *a = head->ha_next; a != head; a = a->ha_next) {
		if (a->ha_state != HSM_S_RUNNING)
			continue;
		if (session ? a->ha_session != session
			    : a->ha_heard_ns >= now || now - a->ha_heard_ns < timeout_ns)
			continue;
		WEIR_LOG_WARN("action=%llu fid=" WEIR_FID_F " agent=%s: %s; back to waiting",
			      (unsigned long long)a->ha_id, WEIR_FID_P(&a->ha_fid), a->ha_agent,
			      session ? "agent evicted" : "agent silent past hsm-action-timeout");
		act_set_state(h, a, HSM_S_WAITING);
		n++;
	}
	pthread_mutex_unlock(&h->hs_lock);
	if (n)
		hsm_kick(h);
	return n;
}

size_t mds_hsm_session_evicted(struct mds_hsm *h, uint64_t session)
{
	return session ? give_back(h, session, 0) : 0;
}

size_t mds_hsm_expire(struct mds_hsm *h)
{
	return give_back(h, 0, h->hs_conf.hc_action_timeout_ms * 1000000ULL);
}

uint64_t mds_hsm_backlog(struct mds_hsm *h)
{
	uint64_t sum = 0;
	pthread_mutex_lock(&h->hs_lock);
	struct hsm_action *head = &h->hs_queue;
	for (struct hsm_action *a = head->ha_next; a != head; a = a->ha_next)
		if (a->ha_bytes_total > a->ha_bytes_done)
			sum += a->ha_bytes_total - a->ha_bytes_done;
	pthread_mutex_unlock(&h->hs_lock);
	return sum;
}

/* ------------------------------------------------------------ queue listing */

int mds_hsm_queue_get(struct mds_hsm *h, const uint64_t *ids, size_t nids,
		      struct mds_hsm_queue_info *qi)
{
	memset(qi, 0, sizeof(*qi));
	pthread_mutex_lock(&h->hs_lock);
	size_t cap = nids ? nids
			  : WEIR_MIN((size_t)h->hs_waiting + h->hs_running, (size_t)HSM_QUEUE_LIST_MAX);
	qi->qi_actions = calloc(cap ? cap : 1, sizeof(*qi->qi_actions));
	if (!qi->qi_actions) {
		pthread_mutex_unlock(&h->hs_lock);
		return -ENOMEM;
	}
	struct hsm_action *head = &h->hs_queue;
	if (!nids) {
		for (struct hsm_action *a = head->ha_next; a != head && qi->qi_nr < cap;
		     a = a->ha_next)
			info_fill(a, &qi->qi_actions[qi->qi_nr++]);
	}
	for (size_t i = 0; i < nids; i++) {
		struct hsm_action *a = hsm_act_by_id(h, ids[i]);
		if (a) {
			info_fill(a, &qi->qi_actions[qi->qi_nr++]);
			continue;
		}
		/* the newest finished entry of that id */
		for (size_t k = 0; k < HSM_FIN_NR; k++) {
			const struct hsm_fin *f = &h->hs_fin[(h->hs_fin_next + HSM_FIN_NR - 1 - k) %
							    HSM_FIN_NR];
			if (ids[i] && f->hf_info.ai_id == ids[i]) {
				qi->qi_actions[qi->qi_nr++] = f->hf_info;
				break;
			}
		}
	}
	uint64_t now = weir_now_ns();
	for (struct hsm_action *a = head->ha_next; a != head; a = a->ha_next)
		if (a->ha_bytes_total > a->ha_bytes_done)
			qi->qi_backlog_bytes += a->ha_bytes_total - a->ha_bytes_done;
	qi->qi_archived_bytes = h->hs_archived_bytes;
	qi->qi_restored_bytes = h->hs_restored_bytes;
	qi->qi_archive_bps = rate_get(h, 0);
	qi->qi_restore_bps = rate_get(h, 1);
	qi->qi_done = h->hs_done;
	qi->qi_failed = h->hs_failed;
	qi->qi_waiting = h->hs_waiting;
	qi->qi_running = h->hs_running;
	for (size_t i = 0; i < HSM_AGENTS_NR; i++)
		if (h->hs_agents[i].ag_seen_ns && now - h->hs_agents[i].ag_seen_ns < 10 * NS_PER_S)
			qi->qi_agents++;
	pthread_mutex_unlock(&h->hs_lock);
	return 0;
}

void mds_hsm_queue_free(struct mds_hsm_queue_info *qi)
{
	free(qi->qi_actions);
	qi->qi_actions = NULL;
	qi->qi_nr = 0;
}
