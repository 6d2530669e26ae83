/*
 * mds/reply.c - the reply cache: resent requests are answered, not redone.
 *
 * DESIGN (Lustre's multi-slot reply data, simplified). A client request may
 * start with a replay prefix (net/frame.h, WEIR_FRAME_F_XID): the mount's
 * uuid, the request's xid (the same when the client sends it again after a
 * reset, a refused connect or an MDS restart) and a slot tag. A client uses
 * at most WEIR_XID_MAX_SLOTS tags and reuses one only after the call that
 * held it returned, so one record per (uuid, tag) is enough: while a
 * request with a tag is handled (mds_reply_begin .. mds_reply_end, on its
 * loop thread), every batch it commits through
 * ns_batch_commit() also puts the record "rc/" uuid tag -> (op, xid, time)
 * into KV_CF_DEFAULT: in the same atomic RocksDB write as the change, so
 * the record and the change survive a kill -9 together or not at all.
 *
 * A request whose xid equals its slot's record was applied already: the
 * handler is told (mds_reply_replayed()) and answers without doing it again
 * -- 0 for an unlink, rename, close, setxattr or removexattr; for a create
 * (open, mkdir, mknod, symlink, link) the reply is rebuilt from the
 * namespace as it is now (the open without O_EXCL and O_TRUNC, the others
 * as a lookup of the new name), as Lustre's reconstruct does. An answer is
 * small and partly per session (open handles), so it is rebuilt, not kept.
 * A failed request commits nothing and records nothing: it is done again
 * and fails again.
 *
 * A request whose xid is older than its slot's record is refused with
 * -ECANCELED and not handled: the client takes a slot's xids in increasing
 * order (client/recover.c) and reuses a slot after a call that ended
 * without an answer (its recovery limit, a signal), so this is a copy of a
 * request it gave up on that was still queued here or sent late. Applied,
 * it would overwrite the record of the slot's newer request, whose resend
 * would then be done twice.
 *
 * A resend can arrive on a new connection while the first copy is still
 * being handled (the client's connection broke, the MDS did not restart):
 * mds_reply_begin() waits (up to MDS_REPLY_BUSY_WAIT_MS) until no other
 * request of the same (uuid, tag) is in a handler, so the record is read
 * after the first copy committed.
 *
 * Bounds: WEIR_XID_MAX_SLOTS records per client; MDS_DISCONNECT (umount)
 * deletes the client's records; at start the MDS deletes records not
 * written for MDS_REPLY_MAX_AGE_S (clients gone long ago).
 * Locks: rc_lock guards the in-handler list only; a leaf.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/le.h"
#include "common/log.h"
#include "common/util.h"

#define RC_KEY_PREFIX "rc/"
#define RC_KEY_PREFIX_LEN 3
#define RC_KEY_LEN (RC_KEY_PREFIX_LEN + 16 + 4)
#define RC_VAL_LEN 20
#define RC_VAL_VERSION 1
#define MDS_REPLY_BUSY_WAIT_MS 10000
#define MDS_REPLY_MAX_AGE_S (24 * 3600)

struct rc_active {
	uint8_t ra_uuid[16];
	uint32_t ra_tag;
	struct rc_active *ra_next;
};

struct rc_ctx {
	struct rc_active rx_act;
	uint64_t rx_xid;
	uint16_t rx_op;
	struct net_req *rx_rq;  /* the request (compared, never followed) */
	uint64_t rx_transno;    /* write seq of its last batch; 0: none yet */
	bool rx_slotted;  /* a tagged request: in rc_list */
	bool rx_replayed;
};

static pthread_mutex_t rc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rc_cond = PTHREAD_COND_INITIALIZER;
static struct rc_active *rc_list;
static __thread struct rc_ctx *rc_cur;

static void rc_key(const uint8_t uuid[16], uint32_t tag, uint8_t key[RC_KEY_LEN])
{
	memcpy(key, RC_KEY_PREFIX, RC_KEY_PREFIX_LEN);
	memcpy(key + RC_KEY_PREFIX_LEN, uuid, 16);
	/* big-endian: a client's records sort together */
	key[RC_KEY_PREFIX_LEN + 16] = (uint8_t)(tag >> 24);
	key[RC_KEY_PREFIX_LEN + 17] = (uint8_t)(tag >> 16);
	key[RC_KEY_PREFIX_LEN + 18] = (uint8_t)(tag >> 8);
	key[RC_KEY_PREFIX_LEN + 19] = (uint8_t)tag;
}

static bool rc_active_find_locked(const uint8_t uuid[16], uint32_t tag)
{
	for (struct rc_active *a = rc_list; a; a = a->ra_next)
		if (a->ra_tag == tag && !memcmp(a->ra_uuid, uuid, 16))
			return true;
	return false;
}

int mds_reply_begin(struct mds *m, struct rc_ctx_buf *buf, const struct weir_xid_hdr *x,
		    struct net_req *rq)
{
	uint16_t op = rq->rq_hdr.fh_opcode;
	_Static_assert(sizeof(struct rc_ctx_buf) >= sizeof(struct rc_ctx), "rc_ctx_buf too small");
	struct rc_ctx *cx = (struct rc_ctx *)buf;
	memset(cx, 0, sizeof(*cx));
	if (x->xh_tag == WEIR_XID_NO_TAG)
		return 0; /* changes nothing: no slot */
	memcpy(cx->rx_act.ra_uuid, x->xh_uuid, 16);
	cx->rx_act.ra_tag = x->xh_tag;
	cx->rx_xid = x->xh_xid;
	cx->rx_op = op;
	cx->rx_rq = rq;
	cx->rx_slotted = true;

	pthread_mutex_lock(&rc_lock);
	if (rc_active_find_locked(x->xh_uuid, x->xh_tag)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += MDS_REPLY_BUSY_WAIT_MS / 1000;
		while (rc_active_find_locked(x->xh_uuid, x->xh_tag))
			if (pthread_cond_timedwait(&rc_cond, &rc_lock, &ts) == ETIMEDOUT)
				break;
	}
	cx->rx_act.ra_next = rc_list;
	rc_list = &cx->rx_act;
	pthread_mutex_unlock(&rc_lock);
	rc_cur = cx;

	uint8_t key[RC_KEY_LEN], val[RC_VAL_LEN];
	rc_key(x->xh_uuid, x->xh_tag, key);
	ssize_t n = kv_get(m->m_ns->ns_kv, KV_CF_DEFAULT, key, sizeof(key), val, sizeof(val));
	if (n == RC_VAL_LEN && val[0] == RC_VAL_VERSION && weir_get_le64(val + 4) > x->xh_xid) {
		/* the client gave this slot up and used it again since: a late copy */
		WEIR_LOG_WARN_RL("xid=%llu tag=%u op=%u: older than the slot's last applied xid"
				 " %llu: a copy the client gave up on; refused (-ECANCELED)",
				 (unsigned long long)x->xh_xid, x->xh_tag, op,
				 (unsigned long long)weir_get_le64(val + 4));
		return -ECANCELED;
	}
	if (n == RC_VAL_LEN && val[0] == RC_VAL_VERSION && weir_get_le64(val + 4) == x->xh_xid) {
		uint16_t was = weir_get_le16(val + 2);
		if (was != op) {
			/* a client bug or a forged prefix: never answer one request with another's */
			WEIR_LOG_WARN("xid=%llu tag=%u op=%u: the reply cache holds op %u for this"
				      " xid; handled as new",
				      (unsigned long long)x->xh_xid, x->xh_tag, op, was);
		} else {
			cx->rx_replayed = true;
			/* its transno is not kept: the current seq is at least it, so
			 * the client keeps the request at least as long as it must */
			cx->rx_transno = mds_ns_write_seq(m->m_ns);
			WEIR_LOG_INFO("xid=%llu tag=%u op=%u: a resent request already applied;"
				      " answered from the reply cache",
				      (unsigned long long)x->xh_xid, x->xh_tag, op);
		}
	} else if (n >= 0 && n != RC_VAL_LEN) {
		WEIR_LOG_WARN("tag=%u: reply-cache record of %zd bytes ignored", x->xh_tag, n);
	}
	return 0;
}

void mds_reply_end(struct rc_ctx_buf *buf)
{
	struct rc_ctx *cx = (struct rc_ctx *)buf;
	if (rc_cur == cx)
		rc_cur = NULL;
	if (!cx->rx_slotted)
		return;
	pthread_mutex_lock(&rc_lock);
	for (struct rc_active **pp = &rc_list; *pp; pp = &(*pp)->ra_next)
		if (*pp == &cx->rx_act) {
			*pp = cx->rx_act.ra_next;
			break;
		}
	pthread_cond_broadcast(&rc_cond);
	pthread_mutex_unlock(&rc_lock);
}

bool mds_reply_replayed(void)
{
	return rc_cur && rc_cur->rx_replayed;
}

void mds_reply_batch_note(struct kv_batch *b)
{
	struct rc_ctx *cx = rc_cur;
	if (!cx)
		return;
	uint8_t key[RC_KEY_LEN], val[RC_VAL_LEN];
	rc_key(cx->rx_act.ra_uuid, cx->rx_act.ra_tag, key);
	val[0] = RC_VAL_VERSION;
	val[1] = 0;
	weir_put_le16(val + 2, cx->rx_op);
	weir_put_le64(val + 4, cx->rx_xid);
	weir_put_le64(val + 12, weir_wall_ns());
	kv_batch_put(b, KV_CF_DEFAULT, key, sizeof(key), val, sizeof(val));
}

void mds_reply_batch_done(uint64_t seq)
{
	if (rc_cur)
		rc_cur->rx_transno = seq;
}

void mds_reply_prepare(struct net_req *rq)
{
	/* on the handler's thread, inside mds_reply_begin()..end(); a reply
	 * from another thread (a parked request) keeps transno 0: such
	 * requests (MDS_SYNC, a wait for the cluster map) change nothing */
	if (rc_cur && rc_cur->rx_rq == rq)
		rq->rq_rep_transno = rc_cur->rx_transno;
}

static const char *rc_fault_path;
static pthread_once_t rc_fault_once = PTHREAD_ONCE_INIT;

static void rc_fault_init(void)
{
	const char *p = getenv("WEIR_MDS_FAULT_FILE");
	rc_fault_path = p && *p ? p : NULL;
}

void mds_reply_committed(void)
{
	struct rc_ctx *cx = rc_cur;
	pthread_once(&rc_fault_once, rc_fault_init);
	if (!rc_fault_path || !cx || !cx->rx_slotted)
		return;
	FILE *f = fopen(rc_fault_path, "r");
	if (!f)
		return;
	unsigned op = 0;
	int n = fscanf(f, "%u", &op);
	fclose(f);
	if (n != 1 || op != cx->rx_op)
		return;
	unlink(rc_fault_path);
	WEIR_LOG_WARN("op=%u xid=%llu: fault hook (WEIR_MDS_FAULT_FILE): dying after the commit,"
		      " before the reply", op, (unsigned long long)cx->rx_xid);
	raise(SIGKILL);
}

int mds_reply_forget(struct mds *m, const uint8_t uuid[16])
{
	struct kv_batch *b = kv_batch_new(m->m_ns->ns_kv);
	if (!b)
		return -ENOMEM;
	uint8_t key[RC_KEY_LEN];
	for (uint32_t tag = 0; tag < WEIR_XID_MAX_SLOTS; tag++) {
		rc_key(uuid, tag, key);
		kv_batch_del(b, KV_CF_DEFAULT, key, sizeof(key));
	}
	int rc = kv_batch_commit(m->m_ns->ns_kv, b);
	kv_batch_free(b);
	return rc;
}

int mds_reply_gc(struct mds *m)
{
	struct kv *kv = m->m_ns->ns_kv;
	struct kv_iter *it = kv_iter_new(kv, KV_CF_DEFAULT);
	if (!it)
		return -ENOMEM;
	struct kv_batch *b = kv_batch_new(kv);
	if (!b) {
		kv_iter_free(it);
		return -ENOMEM;
	}
	uint64_t now = weir_wall_ns(), kept = 0, dropped = 0;
	uint64_t max_age = (uint64_t)MDS_REPLY_MAX_AGE_S * 1000000000ULL;
	for (kv_iter_seek(it, RC_KEY_PREFIX, RC_KEY_PREFIX_LEN); kv_iter_valid(it);
	     kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl < RC_KEY_PREFIX_LEN || memcmp(k, RC_KEY_PREFIX, RC_KEY_PREFIX_LEN))
			break;
		const uint8_t *v = kv_iter_val(it, &vl);
		uint64_t at = vl == RC_VAL_LEN ? weir_get_le64(v + 12) : 0;
		if (kl != RC_KEY_LEN || vl != RC_VAL_LEN || at + max_age < now) {
			kv_batch_del(b, KV_CF_DEFAULT, k, kl);
			dropped++;
		} else {
			kept++;
		}
	}
	kv_iter_free(it);
	int rc = dropped ? kv_batch_commit(kv, b) : 0;
	kv_batch_free(b);
	WEIR_LOG_INFO("reply cache: %llu records kept, %llu older than %u s dropped (rc=%d)",
		      (unsigned long long)kept, (unsigned long long)dropped, MDS_REPLY_MAX_AGE_S,
		      rc);
	return rc;
}
