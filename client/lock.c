/*
 * client/lock.c - weir_fcntl_lock (POSIX and open-file-description
 * byte-range locks), weir_flock, and the append lock behind O_APPEND writes.
 *
 * DESIGN. Locks live on the MDS (mds/lock.c); this file turns the calls
 * into MDS_LOCK / MDS_LOCK_TEST requests. Every request carries a token,
 * unique in the mount, so that sending it again is safe: the MDS answers a
 * token it has answered with the same answer, and a token still queued by
 * re-attaching to the queued request. A blocking request is a long poll:
 * the MDS answers -EAGAIN after about a lease while the request stays
 * queued, and this side sends it again (same token) until it is granted or
 * fails; each RPC is bounded by lease + rpc_timeout_ms. After a broken
 * connection or a timeout the request waits for the MDS as every call does
 * (wc_recover_wait, client/recover.c: backoff, the mount's recovery limit
 * -ETIMEDOUT, a signal -EINTR) and is sent again (the RPC layer
 * reconnects); an MDS that restarted meanwhile answers -ESTALE. -ESTALE (the session
 * is gone) fails the call: -EIO if this mount was evicted (the handle is
 * stale), -ENOLCK if the MDS restarted and this mount could not replay its
 * locks (it came back after the MDS's recovery window, or the MDS kept no
 * window); when it did replay them (client/lease.c), the request is sent
 * again in the new session. A blocking wait the MDS answers is not
 * interrupted by signals (weir_cancel() ends it); a wait for an unreachable
 * MDS is.
 *
 * Several MDTs (docs/dne.md): a lock request goes to the lock manager of
 * the file's MDT, in this mount's session there (the session its handle
 * was opened in), and so does its cancel. MDT k keeps no lock across its
 * restart or this mount's eviction and nothing is replayed there: -ESTALE
 * (or -EINPROGRESS, its recovery window after a restart) from MDT k fails
 * the call with -EIO (the handle is stale). The lock record below holds
 * every MDT's grants, but the replay sends MDT0's only.
 *
 * The mount's own lock record (fs_locks): every grant and unlock the MDS
 * answered is applied, owner by owner, to an in-process copy of the MDS's
 * lock manager (mds/lock.c, linked into libweir: mds_lock_replay() applies
 * one owner's change without looking at other owners, so grants recorded
 * in another order than the MDS made them give the same result); closes
 * drop what the MDS drops at close. After an MDS restart its content is
 * what the mount replays (MDS_REPLAY); after an eviction it is emptied.
 *
 * Cancel (weir_cancel_arm/weir_cancel): each thread has one struct
 * weir_cancel; a waiting request registers its (mount, session, token) in
 * it. weir_cancel() marks it cancelled and sends MDS_LOCK_CANCEL for the
 * registered token: the MDS answers the parked request -ECANCELED, or, if
 * the request has not arrived yet, records that answer for its token, so
 * the request (and any re-send of it) ends at once. A request already
 * granted keeps its grant: the waiter, seeing the mark once its call ended,
 * unlocks what it asked for and returns -EINTR. The waiter also sends the
 * cancel itself when its call comes back still queued with the mark set (a
 * lost cancel). The mark and the registration are under c_lock, so either
 * the waiter unregisters first (its answer stands; the cancel then finds no
 * token) or the cancel sees the token and the waiter sees the mark.
 *
 * Owners: POSIX locks belong to (session, getpid()), or to (session, an
 * explicit owner) with weir_fcntl_lock_owner() (the FUSE daemon's: the
 * kernel's lock owner of the request; sent with bit 63 set, so never a pid);
 * OFD, flock and append locks to (session, MDS handle id). The MDS drops
 * them at close (POSIX: any close of the file by the process; explicit
 * owners: never, their user calls weir_lock_owner_release(), which asks the
 * MDS only when the mount's record shows the owner holds a lock on the
 * file) and at eviction.
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "mds/lock.h"

/* The one session of the mount's own lock record (fs_locks). */
#define WC_LOCK_SELF 1

/* A thread's cancel point (see DESIGN). */
struct weir_cancel {
	pthread_mutex_t c_lock;
	bool c_armed;
	bool c_cancelled;
	struct weir_fs *c_fs; /* the lock request waiting now: c_token 0 when none */
	uint32_t c_mdt;       /* ... on the file's MDT */
	uint64_t c_session;
	uint64_t c_token;
};

static __thread struct weir_cancel *wc_cancel_self; /* allocated at the first arm */
static pthread_key_t wc_cancel_key;
static pthread_once_t wc_cancel_once = PTHREAD_ONCE_INIT;

static void wc_cancel_free(void *p)
{
	struct weir_cancel *c = p;
	pthread_mutex_destroy(&c->c_lock);
	free(c);
}

static void wc_cancel_key_init(void)
{
	if (pthread_key_create(&wc_cancel_key, wc_cancel_free))
		WEIR_LOG_WARN("pthread_key_create failed: cancel points leak at thread exit");
}

weir_cancel_t *weir_cancel_arm(void)
{
	struct weir_cancel *c = wc_cancel_self;

	if (!c) {
		pthread_once(&wc_cancel_once, wc_cancel_key_init);
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		pthread_mutex_init(&c->c_lock, NULL);
		pthread_setspecific(wc_cancel_key, c);
		wc_cancel_self = c;
	}
	pthread_mutex_lock(&c->c_lock);
	c->c_armed = true;
	c->c_cancelled = false;
	c->c_token = 0;
	pthread_mutex_unlock(&c->c_lock);
	return c;
}

bool weir_cancel_disarm(void)
{
	struct weir_cancel *c = wc_cancel_self;
	bool was;

	if (!c)
		return false;
	pthread_mutex_lock(&c->c_lock);
	was = c->c_cancelled;
	c->c_armed = false;
	c->c_cancelled = false;
	c->c_token = 0;
	pthread_mutex_unlock(&c->c_lock);
	return was;
}

/* Ask MDT \a mdt's MDS to end the waiting request \a token of \a session (idempotent). */
static void wc_lock_cancel_send(struct weir_fs *fs, uint32_t mdt, uint64_t session,
				uint64_t token)
{
	Weir__LockReq req = WEIR__LOCK_REQ__INIT;
	req.session = session;
	req.token = token;
	int rc = mdt ? wc_mds_call_mdt_tmo(fs, mdt, WEIR__WIRE_OP__MDS_LOCK_CANCEL, &req.base,
					   NULL, NULL, fs->fs_rpc_timeout_ms)
		     : wc_mds_call(fs, WEIR__WIRE_OP__MDS_LOCK_CANCEL, &req.base, NULL, NULL);
	WEIR_LOG_DEBUG("token=%llu rc=%d: lock wait cancelled", (unsigned long long)token, rc);
}

void weir_cancel(weir_cancel_t *c)
{
	struct weir_fs *fs = NULL;
	uint64_t session = 0, token = 0;
	uint32_t mdt = 0;

	if (!c)
		return;
	pthread_mutex_lock(&c->c_lock);
	if (c->c_armed) {
		c->c_cancelled = true;
		fs = c->c_fs;
		mdt = c->c_mdt;
		session = c->c_session;
		token = c->c_token;
	}
	pthread_mutex_unlock(&c->c_lock);
	if (token)
		wc_lock_cancel_send(fs, mdt, session, token);
}

int wc_cancel_check(void)
{
	struct weir_cancel *c = wc_cancel_self;
	bool cancelled;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->c_lock);
	cancelled = c->c_armed && c->c_cancelled;
	pthread_mutex_unlock(&c->c_lock);
	return cancelled ? -EINTR : 0;
}

/*
 * Register the waiting request \a token in this thread's armed cancel
 * point (\a token 0: unregister). \return -EINTR when it is cancelled (a
 * registration is then not made), else 0.
 */
static int wc_cancel_register(struct weir_fs *fs, uint32_t mdt, uint64_t session,
			      uint64_t token)
{
	struct weir_cancel *c = wc_cancel_self;
	int rc = 0;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->c_lock);
	if (c->c_armed && c->c_cancelled) {
		rc = -EINTR;
		token = 0;
	}
	c->c_fs = fs;
	c->c_mdt = mdt;
	c->c_session = session;
	c->c_token = c->c_armed ? token : 0;
	pthread_mutex_unlock(&c->c_lock);
	return rc;
}

/* ------------------------------------------------------------ the mount's own lock record */

int wc_lock_self_init(struct weir_fs *fs)
{
	int rc = mds_lockmgr_new(&fs->fs_locks);
	if (!rc)
		rc = mds_lock_session_open(fs->fs_locks, WC_LOCK_SELF);
	if (rc) {
		mds_lockmgr_free(fs->fs_locks);
		fs->fs_locks = NULL;
	}
	return rc;
}

void wc_lock_self_fini(struct weir_fs *fs)
{
	mds_lockmgr_free(fs->fs_locks);
	fs->fs_locks = NULL;
}

void wc_lock_self_reset(struct weir_fs *fs)
{
	if (!fs->fs_locks)
		return;
	mds_lock_session_drop(fs->fs_locks, WC_LOCK_SELF, -ESTALE);
	if (mds_lock_session_open(fs->fs_locks, WC_LOCK_SELF))
		WEIR_LOG_WARN("mds=%s: cannot reset the lock record; locks will not be replayed",
			      fs->fs_mds_addr);
}

void wc_lock_self_close(struct weir_file *fh)
{
	if (fh->f_fs->fs_locks)
		mds_lock_close(fh->f_fs->fs_locks, &fh->f_fid, WC_LOCK_SELF, (int32_t)getpid(),
			       fh->f_handle);
}

/* The MDS granted \a req (an MDS_LOCK, an unlock too) on \a fh: record it. */
static void wc_lock_self_note(struct weir_file *fh, const Weir__LockReq *req)
{
	struct mds_lock_req q;
	struct weir_fs *fs = fh->f_fs;
	if (!fs->fs_locks || req->lock_class >= MDS_LC_NR)
		return;
	memset(&q, 0, sizeof(q));
	q.lq_fid = fh->f_fid;
	q.lq_session = WC_LOCK_SELF;
	q.lq_class = (uint8_t)req->lock_class;
	q.lq_type = (uint8_t)req->type;
	q.lq_pid = req->pid;
	q.lq_owner = mds_lock_owner_of(req->lock_class, req->pid, req->owner, fh->f_handle);
	q.lq_start = req->start;
	if (req->len == 0 || __builtin_add_overflow(req->start, req->len - 1, &q.lq_end))
		q.lq_end = MDS_LOCK_EOF;
	int rc = mds_lock_replay(fs->fs_locks, &q);
	if (rc)
		WEIR_LOG_WARN("fid=" WEIR_FID_F " rc=%d: lock not recorded; it will not be replayed"
			      " after an MDS restart", WEIR_FID_P(&fh->f_fid), rc);
}

struct wc_replay_locks {
	struct mds_lock_held *rl_held;
	Weir__ReplayLock *rl_msgs;
	Weir__ReplayLock **rl_ptrs;
	Weir__Fid *rl_fids;
};

void wc_lock_replay_free(struct wc_replay_locks *rl)
{
	if (!rl)
		return;
	free(rl->rl_held);
	free(rl->rl_msgs);
	free(rl->rl_ptrs);
	free(rl->rl_fids);
	free(rl);
}

int wc_lock_replay_fill(struct weir_fs *fs, struct wc_replay_locks **out, Weir__ReplayLock ***locks,
			size_t *nr)
{
	struct wc_replay_locks *rl = calloc(1, sizeof(*rl));
	size_t n = 0, max = 0;
	*out = NULL;
	*locks = NULL;
	*nr = 0;
	if (!rl)
		return -ENOMEM;
	for (;;) {
		n = fs->fs_locks ? mds_lock_session_locks(fs->fs_locks, WC_LOCK_SELF, rl->rl_held,
							  max) : 0;
		if (n <= max)
			break;
		max = n + 16;
		free(rl->rl_held);
		rl->rl_held = calloc(max, sizeof(*rl->rl_held));
		if (!rl->rl_held) {
			wc_lock_replay_free(rl);
			return -ENOMEM;
		}
	}
	if (n) {
		rl->rl_msgs = calloc(n, sizeof(*rl->rl_msgs));
		rl->rl_ptrs = calloc(n, sizeof(*rl->rl_ptrs));
		rl->rl_fids = calloc(n, sizeof(*rl->rl_fids));
		if (!rl->rl_msgs || !rl->rl_ptrs || !rl->rl_fids) {
			wc_lock_replay_free(rl);
			return -ENOMEM;
		}
	}
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		const struct mds_lock_held *h = &rl->rl_held[i];
		if (weir_fid_mdt(&h->lh_fid) != 0)
			continue; /* MDT k's: not replayed (docs/dne.md) */
		Weir__ReplayLock *m = &rl->rl_msgs[j];
		weir__replay_lock__init(m);
		wc_fid_to_pb(&h->lh_fid, &rl->rl_fids[j]);
		m->fid = &rl->rl_fids[j];
		m->lock_class = h->lh_desc.ld_class;
		m->type = h->lh_desc.ld_type;
		m->handle = h->lh_desc.ld_class == MDS_LC_POSIX ? 0 : h->lh_desc.ld_owner;
		m->pid = h->lh_desc.ld_pid;
		if (h->lh_desc.ld_class == MDS_LC_POSIX &&
		    (h->lh_desc.ld_owner & MDS_LOCK_OWNER_EXPLICIT))
			m->owner = h->lh_desc.ld_owner; /* weir_fcntl_lock_owner()'s */
		m->start = h->lh_desc.ld_start;
		m->len = h->lh_desc.ld_end == MDS_LOCK_EOF ? 0
							    : h->lh_desc.ld_end - h->lh_desc.ld_start + 1;
		rl->rl_ptrs[j++] = m;
	}
	*out = rl;
	*locks = rl->rl_ptrs;
	*nr = j;
	return 0;
}

/* ------------------------------------------------------------ lock requests */

static bool wc_lock_transient(int rc)
{
	return rc == -ECONNRESET || rc == -ETIMEDOUT || rc == -ECONNREFUSED || rc == -EHOSTUNREACH;
}

/*
 * Send \a req (MDS_LOCK or MDS_LOCK_TEST) for \a fh until it has an
 * answer (see DESIGN). \a rep (may be NULL) gets the reply.
 */
static int wc_lock_call(struct weir_file *fh, uint16_t op, Weir__LockReq *req, Weir__LockRep **rep)
{
	struct weir_fs *fs = fh->f_fs;
	Weir__LockRep *r = NULL;
	Weir__Fid pf;
	unsigned epoch;
	struct wc_wait w = { 0 }; /* waits for an unreachable MDS: the mount's limit */
	int rc;

	/* the lock manager of the file's MDT, with this mount's session there
	 * (the handle's: docs/dne.md, step 2) */
	uint32_t mdt = (uint32_t)weir_fid_mdt(&fh->f_fid);
	struct wc_target *tgt = &fs->fs_mdt;
	if (mdt) {
		struct wc_mdt *md;
		rc = wc_mdt_get(fs, mdt, &md);
		if (!rc)
			rc = wc_mdt_session(fs, mdt, &req->session, &epoch);
		if (rc)
			return rc == -ESTALE ? -EIO : rc;
		tgt = &md->md_tgt;
	} else {
		req->session = wc_session_get(fs, &epoch);
	}
	if (epoch != fh->f_epoch)
		return -EIO;
	if (!req->session)
		return -ENOLCK;
	wc_fid_to_pb(&fh->f_fid, &pf);
	req->fid = &pf;
	req->handle = fh->f_handle;
	req->token = atomic_fetch_add(&fs->fs_lock_token, 1) + 1;
	if (req->wait && wc_cancel_register(fs, mdt, req->session, req->token))
		return -EINTR; /* cancelled before anything was sent */
	for (;;) {
		uint64_t budget_ms = (uint64_t)fs->fs_lease_ms + fs->fs_rpc_timeout_ms;
		uint32_t tmo =
		    req->wait ? (uint32_t)WEIR_MIN(budget_ms, UINT32_MAX) : fs->fs_rpc_timeout_ms;
		uint64_t sent_ns = weir_now_ns();
		rc = mdt ? wc_mds_call_mdt_tmo(fs, mdt, op, &req->base, &weir__lock_rep__descriptor,
					       (void **)&r, tmo)
			 : wc_mds_call_tmo(fs, op, &req->base, &weir__lock_rep__descriptor,
					   (void **)&r, tmo);
		if (rc == -EAGAIN && req->wait) {
			/* still queued: poll again */
			if (wc_cancel_check())
				wc_lock_cancel_send(fs, mdt, req->session, req->token); /* lost? */
			continue;
		}
		if ((rc == -ESTALE || rc == -EINPROGRESS) && mdt) {
			/* MDT k keeps no locks across its restart or an eviction,
			 * and replays nothing: the handle is stale (-EINPROGRESS:
			 * MDT k restarted and is in its recovery window) */
			wc_mdt_session_lost(fs, mdt, req->session);
			rc = -EIO;
			break;
		}
		if (rc == -ESTALE) {
			wc_session_lost(fs, req->session);
			uint64_t now_sess = wc_session_get(fs, NULL);
			if (!wc_file_stale(fh) && now_sess && now_sess != req->session &&
			    wc_session_replayed(fs, now_sess)) {
				/* the MDS restarted and this mount replayed its locks into
				 * the new session: the request never reached the old MDS
				 * (or its answer was lost with it); send it again there */
				WEIR_LOG_INFO("fid=" WEIR_FID_F " token=%llu: MDS restarted; lock"
					      " request sent again in the recovered session",
					      WEIR_FID_P(&fh->f_fid), (unsigned long long)req->token);
				req->session = now_sess;
				req->token = atomic_fetch_add(&fs->fs_lock_token, 1) + 1;
				if (req->wait && wc_cancel_register(fs, 0, req->session, req->token)) {
					rc = -EINTR;
					break;
				}
				continue;
			}
			rc = wc_file_stale(fh) ? -EIO : -ENOLCK;
			break;
		}
		if (!wc_lock_transient(rc))
			break;
		/* the MDS is unreachable: wait for it as every call does (client/
		 * recover.c): until it is back, the mount's recovery limit
		 * (-ETIMEDOUT) or a signal (-EINTR; a request queued at an MDS
		 * that was only stopped is then dropped at this handle's close) */
		int wrc = wc_recover_wait(fs, tgt, &w, rc, sent_ns);
		if (wrc) {
			rc = wrc;
			break;
		}
		WEIR_LOG_INFO("fid=" WEIR_FID_F " token=%llu rc=%d: lock request sent again",
			      WEIR_FID_P(&fh->f_fid), (unsigned long long)req->token, rc);
		if (req->wait && wc_cancel_check())
			wc_lock_cancel_send(fs, mdt, req->session, req->token);
	}
	if (rc == 0 && op == WEIR__WIRE_OP__MDS_LOCK)
		wc_lock_self_note(fh, req); /* for the replay after MDT0's restart, and
					     * what weir_lock_owner_release() drops */
	if (req->wait) {
		bool cancelled = wc_cancel_register(fs, 0, 0, 0) != 0;
		if (rc == -ECANCELED) {
			rc = -EINTR;
		} else if (rc == 0 && cancelled) {
			/* the grant crossed the cancel: give it back */
			Weir__LockReq un = *req;
			un.type = WEIR__LOCK_TYPE__LT_UNLCK;
			un.wait = false;
			int urc = wc_lock_call(fh, WEIR__WIRE_OP__MDS_LOCK, &un, NULL);
			WEIR_LOG_INFO("fid=" WEIR_FID_F " token=%llu rc=%d: lock granted as the wait"
				      " was cancelled; released",
				      WEIR_FID_P(&fh->f_fid), (unsigned long long)req->token, urc);
			rc = -EINTR;
		}
	}
	req->fid = NULL;
	if (rc == 0 && rep)
		*rep = r;
	else if (r)
		protobuf_c_message_free_unpacked(&r->base, NULL);
	return rc;
}

/* Resolve a struct flock's range against \a fh into [*start, *start+*len) (len 0: to EOF). */
static int wc_flock_range(struct weir_file *fh, const struct flock *fl, uint64_t *start,
			  uint64_t *len)
{
	int64_t base, s, e;
	int rc = 0;

	switch (fl->l_whence) {
	case SEEK_SET:
		base = 0;
		break;
	case SEEK_CUR:
		pthread_mutex_lock(&fh->f_pos_lock);
		base = (int64_t)WEIR_MIN(fh->f_pos, (uint64_t)INT64_MAX);
		pthread_mutex_unlock(&fh->f_pos_lock);
		break;
	case SEEK_END: {
		uint64_t size = 0, blocks;
		rc = fh->f_is_dir ? 0 : wc_file_size(fh, &size, &blocks, NULL);
		if (rc)
			return rc;
		base = (int64_t)WEIR_MIN(size, (uint64_t)INT64_MAX);
		break;
	}
	default:
		return -EINVAL;
	}
	if (__builtin_add_overflow(base, (int64_t)fl->l_start, &s) || s < 0)
		return -EINVAL;
	if (fl->l_len > 0) {
		if (__builtin_add_overflow(s, (int64_t)fl->l_len - 1, &e))
			return -EOVERFLOW;
	} else if (fl->l_len < 0) {
		/* POSIX: [start + len, start - 1] */
		e = s - 1;
		if (__builtin_add_overflow(s, (int64_t)fl->l_len, &s) || s < 0)
			return -EINVAL;
	} else {
		*start = (uint64_t)s;
		*len = 0;
		return 0;
	}
	*start = (uint64_t)s;
	*len = (uint64_t)(e - s) + 1;
	return 0;
}

static uint32_t wc_lock_type(short t)
{
	switch (t) {
	case F_RDLCK:
		return WEIR__LOCK_TYPE__LT_RDLCK;
	case F_WRLCK:
		return WEIR__LOCK_TYPE__LT_WRLCK;
	default:
		return WEIR__LOCK_TYPE__LT_UNLCK;
	}
}

/*
 * weir_fcntl_lock() and weir_fcntl_lock_owner(): \a owner 0 is the calling
 * process (POSIX commands) or \a fh (OFD ones); else the explicit owner,
 * with \a fl->l_pid as the holder's pid.
 */
static int wc_fcntl_lock(weir_file_t *fh, int cmd, struct flock *fl, uint64_t owner)
{
	Weir__LockReq req = WEIR__LOCK_REQ__INIT;
	Weir__LockRep *rep = NULL;
	bool ofd, get;
	uint64_t start, len;
	int rc;

	if (!fh || !fl)
		return -EINVAL;
	switch (cmd) {
	case F_SETLK:
	case F_SETLKW:
	case F_GETLK:
		ofd = false;
		break;
	case F_OFD_SETLK:
	case F_OFD_SETLKW:
	case F_OFD_GETLK:
		ofd = true;
		break;
	default:
		return -EINVAL;
	}
	get = cmd == F_GETLK || cmd == F_OFD_GETLK;
	if (fl->l_type != F_RDLCK && fl->l_type != F_WRLCK && fl->l_type != F_UNLCK)
		return -EINVAL;
	if (get && fl->l_type == F_UNLCK)
		return -EINVAL;
	if (ofd && fl->l_pid != 0)
		return -EINVAL; /* Linux: l_pid must be 0 for OFD commands */
	if (wc_file_stale(fh))
		return -EIO;
	if (!get &&
	    ((fl->l_type == F_RDLCK && !fh->f_read) || (fl->l_type == F_WRLCK && !fh->f_write)))
		return -EBADF;
	rc = wc_flock_range(fh, fl, &start, &len);
	if (rc)
		return rc;
	req.lock_class = ofd ? WEIR__LOCK_CLASS__LC_OFD : WEIR__LOCK_CLASS__LC_POSIX;
	req.type = wc_lock_type(fl->l_type);
	req.start = start;
	req.len = len;
	req.pid = owner ? (int32_t)fl->l_pid : (int32_t)getpid();
	req.owner = owner;
	req.wait = cmd == F_SETLKW || cmd == F_OFD_SETLKW;
	rc = wc_lock_call(fh, get ? WEIR__WIRE_OP__MDS_LOCK_TEST : WEIR__WIRE_OP__MDS_LOCK, &req,
			  &rep);
	if (rc)
		return rc;
	if (get) {
		if (rep->conflict) {
			fl->l_type = rep->type == WEIR__LOCK_TYPE__LT_WRLCK ? F_WRLCK : F_RDLCK;
			fl->l_whence = SEEK_SET;
			fl->l_start = (off_t)WEIR_MIN(rep->start, (uint64_t)INT64_MAX);
			fl->l_len = (off_t)WEIR_MIN(rep->len, (uint64_t)INT64_MAX);
			fl->l_pid = (pid_t)rep->pid;
		} else {
			fl->l_type = F_UNLCK;
		}
	}
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

int weir_fcntl_lock(weir_file_t *fh, int cmd, struct flock *fl)
{
	return wc_fcntl_lock(fh, cmd, fl, 0);
}

int weir_fcntl_lock_owner(weir_file_t *fh, int cmd, struct flock *fl, uint64_t owner)
{
	if (!owner || (cmd != F_SETLK && cmd != F_SETLKW && cmd != F_GETLK))
		return -EINVAL;
	return wc_fcntl_lock(fh, cmd, fl, owner);
}

int weir_lock_owner_release(weir_file_t *fh, uint64_t owner)
{
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET };

	if (!fh || !owner)
		return -EINVAL;
	/* the mount's record has every lock the MDS granted: nothing to drop
	 * (the common close) costs no request */
	if (fh->f_fs->fs_locks &&
	    !mds_lock_owner_holds(fh->f_fs->fs_locks, &fh->f_fid, WC_LOCK_SELF, MDS_LC_POSIX,
				  owner | MDS_LOCK_OWNER_EXPLICIT))
		return 0;
	/* an unlock of POSIX locks needs no read or write access (-EBADF) */
	return wc_fcntl_lock(fh, F_SETLK, &fl, owner);
}

int weir_flock(weir_file_t *fh, int op)
{
	Weir__LockReq req = WEIR__LOCK_REQ__INIT;
	bool nb = op & LOCK_NB;
	int rc;

	if (!fh)
		return -EINVAL;
	switch (op & ~LOCK_NB) {
	case LOCK_SH:
		req.type = WEIR__LOCK_TYPE__LT_RDLCK;
		break;
	case LOCK_EX:
		req.type = WEIR__LOCK_TYPE__LT_WRLCK;
		break;
	case LOCK_UN:
		req.type = WEIR__LOCK_TYPE__LT_UNLCK;
		break;
	default:
		return -EINVAL;
	}
	if (wc_file_stale(fh))
		return -EIO;
	req.lock_class = WEIR__LOCK_CLASS__LC_FLOCK;
	req.pid = (int32_t)getpid();
	req.wait = !nb && req.type != WEIR__LOCK_TYPE__LT_UNLCK;
	rc = wc_lock_call(fh, WEIR__WIRE_OP__MDS_LOCK, &req, NULL);
	return rc == -EAGAIN ? -EWOULDBLOCK : rc;
}

ssize_t wc_append_write(struct weir_file *fh, const void *buf, size_t len)
{
	Weir__LockReq req = WEIR__LOCK_REQ__INIT;
	Weir__LockRep *rep = NULL;
	uint64_t size, blocks;
	ssize_t n;
	int rc;

	req.lock_class = WEIR__LOCK_CLASS__LC_APPEND;
	req.type = WEIR__LOCK_TYPE__LT_WRLCK;
	req.pid = (int32_t)getpid();
	req.wait = true;
	rc = wc_lock_call(fh, WEIR__WIRE_OP__MDS_LOCK, &req, &rep);
	if (rc)
		return rc;
	uint64_t base = rep->size;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	/* no other append can run now: the end of file is the glimpsed size */
	rc = wc_glimpse(fh->f_fs, &fh->f_fid, &fh->f_layout, base, &size, &blocks);
	n = rc ? rc : weir_pwrite(fh, buf, len, size);
	if (n > 0)
		fh->f_pos = size + (uint64_t)n;

	Weir__LockReq un = WEIR__LOCK_REQ__INIT;
	un.lock_class = WEIR__LOCK_CLASS__LC_APPEND;
	un.type = WEIR__LOCK_TYPE__LT_UNLCK;
	un.pid = req.pid;
	rc = wc_lock_call(fh, WEIR__WIRE_OP__MDS_LOCK, &un, NULL);
	if (rc)
		WEIR_LOG_WARN("fid=" WEIR_FID_F " rc=%d: append unlock failed; the lock goes at"
			      " close or eviction",
			      WEIR_FID_P(&fh->f_fid), rc);
	return n;
}
