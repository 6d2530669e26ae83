/*
 * client/recover.c - waiting for a server that went away, and the replay
 * identity of MDS requests (README "Recovery").
 *
 * DESIGN. A call whose server (the MDS, or the OSS of an OST) cannot be
 * reached -- the connect is refused or times out, the host is unreachable,
 * the connection breaks mid-call, the call times out -- is not failed: the
 * caller's loop (wc_mds_call in mount.c, the OST loops of io.c) asks
 * wc_recover_wait() whether to send it again. That sleeps with backoff (10 ms
 * doubling to 1 s; the RPC layer reconnects on the next send) and says yes
 * until the mount's recovery limit (fs_recovery_ms, 0: no limit, like a
 * Lustre hard mount) has passed since the call's first failure, when the
 * call fails with -ETIMEDOUT; a signal delivered to the waiting thread (a
 * handler ran: the sleep returned EINTR) or weir_cancel() of its armed cancel
 * point ends the wait with -EINTR. Only transport failures wait: an error
 * the server sent (nc_rc_remote) is the call's answer, except -EINPROGRESS,
 * the MDS's recovery window, which wc_recovery_wait() (lease.c) waits on
 * through the same wc_recover_backoff(): the same limit (counted from the
 * call's first failure of either kind), the same -EINTR, and no wait at
 * umount.
 *
 * Each target (MDT0000, OSTnnnn) has a "down since" time, 0 while up. The
 * first waiter to see it go away sets it and logs one WARN line; the first
 * call answered by it afterwards clears it and logs one NOTICE line with
 * how long it was gone (compare-and-swap: one line each, whatever the
 * number of threads). Answers and failures of calls sent before the last
 * change are stale and change nothing: an answer to a call sent before the
 * target went away does not mark it back, a failure of a call sent before
 * it was seen back does not mark it away again.
 *
 * Replay identity: a mount has a random 16-byte uuid (fs_uuid) and a
 * counter of request ids (fs_xid). Every MDS request carries (uuid, xid,
 * tag) in the frame's replay prefix (net/frame.h); a request that may change
 * something holds one of WEIR_XID_MAX_SLOTS reply-cache slots (tag) from its
 * first send until its answer, so the MDS can keep, per (uuid, tag), the
 * outcome of the last such request it applied (mds/reply.c). Slots are a
 * bitmap under fs_slot_lock; a caller finding all busy waits on
 * fs_slot_cond. Locks: fs_slot_lock is a leaf.
 *
 * A slot is given back when its call returns, also without an answer (the
 * recovery limit, -EINTR): a copy of that request may still be queued at
 * the MDS, or be handled there after the slot's next request. So a
 * request's xid is taken once it holds its slot: the xids of one slot only
 * grow, and the MDS refuses a request older than its slot's record
 * (-ECANCELED, not applied), which would otherwise be done after the
 * caller was told it failed and overwrite the record of the newer request,
 * whose resend would then be done twice.
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/key.h"
#include "common/log.h"
#include "common/util.h"

#define WC_RECOVER_FIRST_MS 10
#define WC_RECOVER_MAX_MS 1000
#define WC_RECOVER_SLICE_MS 50 /* most one sleep lasts between cancel checks */

int wc_recover_init(struct weir_fs *fs, uint32_t opt_s, int32_t opt_flag)
{
	const char *env = getenv("WEIR_RECOVERY_TIMEOUT");

	if (opt_flag < 0) {
		fs->fs_recovery_ms = 0; /* forever */
	} else if (opt_s) {
		fs->fs_recovery_ms = opt_s > UINT32_MAX / 1000 ? 0 : opt_s * 1000U;
	} else if (env && *env) {
		char *end;
		unsigned long v = strtoul(env, &end, 10);
		if (*end || v > UINT32_MAX / 1000) {
			WEIR_LOG_WARN("WEIR_RECOVERY_TIMEOUT=%s: not a number of seconds; waiting"
				      " without a limit", env);
			v = 0;
		}
		fs->fs_recovery_ms = (uint32_t)v * 1000U;
	} else {
		fs->fs_recovery_ms = 0;
	}
	if (weir_random_bytes(fs->fs_uuid, sizeof(fs->fs_uuid))) {
		/* no entropy source: time and address still tell mounts apart */
		uint64_t t = weir_now_ns() ^ (uint64_t)(uintptr_t)fs;
		memcpy(fs->fs_uuid, &t, 8);
		t = weir_wall_ns();
		memcpy(fs->fs_uuid + 8, &t, 8);
	}
	atomic_store(&fs->fs_xid, 1);
	fs->fs_slot_busy = 0;
	pthread_mutex_init(&fs->fs_slot_lock, NULL);
	pthread_cond_init(&fs->fs_slot_cond, NULL);
	wc_replay_init(fs);
	return 0;
}

void wc_recover_fini(struct weir_fs *fs)
{
	pthread_cond_destroy(&fs->fs_slot_cond);
	pthread_mutex_destroy(&fs->fs_slot_lock);
	wc_replay_fini(fs);
}

void wc_xid_new(struct weir_fs *fs, bool slot, struct weir_xid_hdr *x)
{
	memcpy(x->xh_uuid, fs->fs_uuid, sizeof(x->xh_uuid));
	x->xh_tag = WEIR_XID_NO_TAG;
	if (!slot) {
		x->xh_xid = atomic_fetch_add(&fs->fs_xid, 1);
		return;
	}
	pthread_mutex_lock(&fs->fs_slot_lock);
	while (fs->fs_slot_busy == UINT64_MAX)
		pthread_cond_wait(&fs->fs_slot_cond, &fs->fs_slot_lock);
	uint32_t tag = (uint32_t)__builtin_ctzll(~fs->fs_slot_busy);
	fs->fs_slot_busy |= 1ULL << tag;
	/* the id once the slot is ours: later than every earlier holder's, so
	 * the MDS can tell their copies from ours (see the DESIGN) */
	x->xh_xid = atomic_fetch_add(&fs->fs_xid, 1);
	pthread_mutex_unlock(&fs->fs_slot_lock);
	x->xh_tag = tag;
}

void wc_xid_put(struct weir_fs *fs, struct weir_xid_hdr *x)
{
	if (x->xh_tag == WEIR_XID_NO_TAG)
		return;
	pthread_mutex_lock(&fs->fs_slot_lock);
	fs->fs_slot_busy &= ~(1ULL << x->xh_tag);
	pthread_cond_signal(&fs->fs_slot_cond);
	pthread_mutex_unlock(&fs->fs_slot_lock);
	x->xh_tag = WEIR_XID_NO_TAG;
}

bool wc_recover_retryable(int rc)
{
	switch (rc) {
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -ECONNABORTED:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -EHOSTDOWN:
	case -ENETDOWN:
	case -ETIMEDOUT:
	case -EPIPE:
	case -ENOTCONN:
		return true;
	default:
		return false;
	}
}

void wc_target_down(struct weir_fs *fs, struct wc_target *t, int rc, uint64_t sent_ns)
{
	uint64_t zero = 0, now = weir_now_ns();
	(void)fs;
	if (atomic_load(&t->t_up_ns) > sent_ns)
		return; /* answered since this call was sent: a stale failure */
	if (atomic_compare_exchange_strong(&t->t_down_ns, &zero, now ? now : 1)) {
		char eb[64];
		WEIR_LOG_WARN("target=%s addr=%s rc=%s: %s is unreachable; calls wait for it"
			      " (recovery)",
			      t->t_name, t->t_addr, weir_rc_str(rc, eb, sizeof(eb)), t->t_name);
	}
}

void wc_target_up_slow(struct wc_target *t, uint64_t sent_ns)
{
	uint64_t since = atomic_load(&t->t_down_ns);
	if (since && since < sent_ns && atomic_compare_exchange_strong(&t->t_down_ns, &since, 0)) {
		uint64_t gone = weir_now_ns() - since;
		atomic_store(&t->t_up_ns, weir_now_ns());
		WEIR_LOG_NOTICE("target=%s addr=%s: %s is back after %llu.%03llu s", t->t_name,
				t->t_addr, t->t_name, (unsigned long long)(gone / 1000000000ULL),
				(unsigned long long)(gone / 1000000ULL % 1000ULL));
	}
}

void wc_target_init(struct wc_target *t, const char *kind, uint32_t index, const char *addr)
{
	snprintf(t->t_name, sizeof(t->t_name), "%s%04X", kind, index);
	snprintf(t->t_addr, sizeof(t->t_addr), "%s", addr);
	atomic_store(&t->t_down_ns, 0);
	atomic_store(&t->t_up_ns, 0);
}

/* Sleep \a ms, in slices that look at the cancel point. \return 0 or -EINTR. */
static int wc_recover_sleep(uint32_t ms)
{
	while (ms) {
		int rc = wc_cancel_check();
		if (rc)
			return rc;
		uint32_t n = WEIR_MIN(ms, (uint32_t)WC_RECOVER_SLICE_MS);
		struct timespec ts = { 0, (long)n * 1000000L };
		/* never restarted by SA_RESTART: a handler that ran here ends the wait */
		if (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == EINTR)
			return -EINTR;
		ms -= n;
	}
	return wc_cancel_check();
}

int wc_recover_backoff(struct weir_fs *fs, struct wc_wait *w, const char *name, int rc,
		       const char *what)
{
	uint64_t now = weir_now_ns();
	if (!w->w_start_ns) {
		w->w_start_ns = now;
		w->w_delay_ms = 0;
	}
	uint64_t limit_ns = (uint64_t)fs->fs_recovery_ms * 1000000ULL;
	if (limit_ns && now - w->w_start_ns >= limit_ns) {
		WEIR_LOG_WARN(
		    "target=%s rc=%d: %s after the recovery limit of %u ms; the call fails"
		    " (-ETIMEDOUT)",
		    name, rc, what, fs->fs_recovery_ms);
		return -ETIMEDOUT;
	}
	w->w_delay_ms = w->w_delay_ms ? WEIR_MIN(w->w_delay_ms * 2, (uint32_t)WC_RECOVER_MAX_MS)
				      : WC_RECOVER_FIRST_MS;
	uint32_t ms = w->w_delay_ms;
	if (limit_ns) {
		uint64_t left_ms = (w->w_start_ns + limit_ns - now + 999999ULL) / 1000000ULL;
		ms = (uint32_t)WEIR_MIN((uint64_t)ms, left_ms);
	}
	int src = wc_recover_sleep(ms);
	if (src) {
		WEIR_LOG_INFO("target=%s: wait for recovery interrupted (-EINTR)", name);
		return src;
	}
	return 0;
}

int wc_recover_wait(struct weir_fs *fs, struct wc_target *t, struct wc_wait *w, int rc,
		    uint64_t sent_ns)
{
	if (!wc_recover_retryable(rc))
		return rc;
	if (atomic_load(&fs->fs_umounting))
		return rc; /* umount does not wait for a server that is away */
	if (t)
		wc_target_down(fs, t, rc, sent_ns);
	return wc_recover_backoff(fs, w, t ? t->t_name : "?", rc, "still unreachable");
}
