/*
 * mds/mdlease.h - metadata leases: what a client may cache of the MDT's
 * namespace (names, attributes, layouts) until the MDS calls it back.
 * Lustre's inodebits locks (LOOKUP, UPDATE, LAYOUT), CephFS's capabilities.
 *
 * The manager is pure (no network, no namespace; tests/unit/mds/
 * test_mdlease.c); mds/mdl_svc.c puts it on the wire and client/mdl.c is
 * the client's side. docs/leases.md has the whole design.
 *
 * Model. A lease is held by a session on one FID, with bits:
 *  - MDL_LOOKUP on a directory: the names in it (a name's FID, a name's
 *    absence, the complete listing);
 *  - MDL_ATTR on any inode: its attributes (mode, owner, times, nlink, the
 *    size of a file nobody has open for writing, xattrs);
 *  - MDL_LAYOUT on a file: its layout.
 * A change (a namespace operation) names what it makes wrong as targets
 * (FID, bits): a create in directory D targets (D, LOOKUP | ATTR); a chmod
 * of F targets (F, ATTR). mdl_change_begin() calls back every lease of
 * another session whose bits meet a target's: the lease turns REVOKING,
 * a callback (FID, cookie) is queued for its session (mc_notify says so),
 * and the change waits until every such lease is acknowledged
 * (mdl_ack()) or its session dropped (eviction). A callback revokes the
 * whole lease (every bit of it on that FID): the client forgets what it
 * cached of the FID. From mdl_change_begin() to mdl_change_end(), no
 * session is granted the target bits on the target FIDs, so nobody caches
 * the state the change is replacing. The changer's own session is not
 * called back: its client drops its own cache for what it changes.
 *
 * Bounds. A session holds at most mc_max_per_session leases: a grant over
 * it calls back the session's least recently granted lease (it counts
 * until acknowledged, so a client that does not answer is bounded by its
 * unanswered callbacks, which mdl_tick() reports for eviction).
 *
 * Thread safety: every function may be called from any thread; one mutex
 * (a leaf) guards the manager. Change callbacks (mdl_change_cb_t) and
 * mc_notify run after it is released, on the thread whose call completed
 * them; they may call back into the manager.
 */
#ifndef WEIR_MDS_MDLEASE_H
#define WEIR_MDS_MDLEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fid.h"

/** Lease bits (the wire will carry them as they are). */
enum mdl_bits {
	MDL_LOOKUP = 1u << 0, /* directories: the names in it */
	MDL_ATTR = 1u << 1,   /* attributes */
	MDL_LAYOUT = 1u << 2, /* files: the layout */
	MDL_ALL = MDL_LOOKUP | MDL_ATTR | MDL_LAYOUT,
};

struct mds_mdl;
struct mdl_change;

/** Configuration (mdl_new() copies it). */
struct mdl_conf {
	uint32_t mc_max_per_session; /* leases one session may hold; 0: 65536 */
	/* Optional: a session has new callbacks to take (mdl_session_callbacks());
	 * called once per call that queued some, after the lock is released. */
	void (*mc_notify)(void *arg, uint64_t session);
	void *mc_notify_arg;
};

/** A callback to deliver to a session: forget \a cb_fid, then mdl_ack(cb_cookie). */
struct mdl_callback {
	struct weir_fid cb_fid;
	uint32_t cb_bits;   /* the bits the session held (it forgets all of them) */
	uint64_t cb_cookie; /* for mdl_ack(); unique in the manager */
};

/** One thing a change makes wrong. */
struct mdl_target {
	struct weir_fid t_fid;
	uint32_t t_bits; /* enum mdl_bits */
};

/** Counters (mdl_stats()). */
struct mdl_stats {
	uint64_t ms_leases;	   /* held and revoking, all sessions */
	uint64_t ms_revoking;	   /* of those, called back and not yet acknowledged */
	uint64_t ms_granted;	   /* grants made (each mdl_grant() that granted bits) */
	uint64_t ms_refused;	   /* grants refused because a change was in progress */
	uint64_t ms_callbacks;	   /* callbacks queued */
	uint64_t ms_acks;	   /* callbacks acknowledged */
	uint64_t ms_lru_revokes;   /* callbacks queued because a session was at its cap */
	uint64_t ms_changes_waited; /* changes that had to wait for callbacks */
};

/**
 * Called once when a change that waited (mdl_change_begin() returned
 * -EINPROGRESS) may go on: \a rc 0 (every lease it waited for was
 * acknowledged or its session dropped) or -ESHUTDOWN (mdl_free()). The
 * change must still be ended with mdl_change_end().
 */
typedef void (*mdl_change_cb_t)(void *arg, int rc);

/** A new manager. \return 0, -ENOMEM, -EINVAL (NULL \a conf or \a out). */
int mdl_new(const struct mdl_conf *conf, struct mds_mdl **out);

/**
 * Free \a m: waiting changes are called back with -ESHUTDOWN first (their
 * struct mdl_change is freed here: do not end them). Accepts NULL.
 */
void mdl_free(struct mds_mdl *m);

/** Make \a session known (before its first grant). \return 0, -ENOMEM, -EEXIST. */
int mdl_session_open(struct mds_mdl *m, uint64_t session);

/**
 * \a session is gone (eviction, disconnect): its leases go, revoking ones
 * too, and the changes waiting for them go on. Unknown sessions: a no-op.
 * \return the number of leases dropped.
 */
size_t mdl_session_drop(struct mds_mdl *m, uint64_t session);

/**
 * Grant \a session the \a bits on \a fid (added to what it holds there),
 * and make the lease the session's most recently used.
 * \return the bits granted now: \a bits, or 0 when the session is unknown,
 *         a change on \a fid with any of \a bits is in progress, the
 *         session's lease on \a fid is being called back, or memory ran out.
 *         A partial grant is never made. The client caches only what was granted.
 *         Also 0 when a change touched \a fid (or a FID in its hash bucket)
 *         after \a read_gen (mdl_gen()).
 */
uint32_t mdl_grant(struct mds_mdl *m, uint64_t session, const struct weir_fid *fid,
		   uint32_t bits, uint64_t read_gen);

/**
 * The generation of changes: take it before reading what a grant will
 * cover, and pass it to mdl_grant(), which refuses when a change on (a
 * FID hashing with) \a fid began since: what was read may be what the
 * change replaced, and its callbacks went out before this lease existed.
 */
uint64_t mdl_gen(struct mds_mdl *m);

/**
 * A change nobody waits for (the MDS's own: eviction, destroy, HSM):
 * calls back the leases meeting \a targets as mdl_change_begin() does, and
 * ends at once (grants are refused only to reads that began before it).
 * \return 0, -ENOMEM, -EINVAL.
 */
int mdl_invalidate(struct mds_mdl *m, uint64_t session, const struct mdl_target *targets,
		   size_t nr);

/**
 * Begin a change by \a session (0: the MDS itself) that makes \a targets
 * wrong. Leases of other sessions meeting a target are called back.
 * \param[out] out  The change, for mdl_change_end() (always set on 0 and
 *                  -EINPROGRESS; set before \a cb can run, which may be
 *                  before this returns, on another thread).
 * \return 0: nothing to wait for, go on; -EINPROGRESS: \a cb(\a arg, 0) is
 *         called once the callbacks are answered or their sessions dropped
 *         (from the mdl_ack() or mdl_session_drop() call that completes
 *         it, on its thread: possibly before this call returns, never from
 *         within it); -ENOMEM; -EINVAL (NULL \a targets,
 *         \a cb or \a out, \a nr 0 or more than 16).
 */
int mdl_change_begin(struct mds_mdl *m, uint64_t session, const struct mdl_target *targets,
		     size_t nr, mdl_change_cb_t cb, void *arg, struct mdl_change **out);

/**
 * The change is applied (or given up): grants on its targets are allowed
 * again. Frees \a c. Must be called once for every change begun: after its
 * callback, or before it to give up waiting (the callback is then never
 * called; the leases called back stay called back). Accepts NULL.
 */
void mdl_change_end(struct mds_mdl *m, struct mdl_change *c);

/**
 * Up to \a max of \a session's callbacks not yet acknowledged, oldest
 * first, into \a out, for a poll's answer: the new ones (no longer
 * queued: mdl_session_has_callbacks() turns false) and those delivered
 * before, again (an answer lost with a connection; a client acknowledges
 * what it received in its next poll, before this is called for it, and
 * takes a callback twice harmlessly). \return how many were written.
 */
size_t mdl_session_callbacks(struct mds_mdl *m, uint64_t session, struct mdl_callback *out,
			     size_t max);

/**
 * \a session forgot the lease of callback \a cookie: it goes, and the
 * changes waiting for it go on when it was their last.
 * \return 0, or -ENOENT (no such callback of this session: already
 *         acknowledged, dropped, or another session's).
 */
int mdl_ack(struct mds_mdl *m, uint64_t session, uint64_t cookie);

/**
 * Sessions with a callback queued more than \a timeout_ns before \a now_ns
 * and not acknowledged: up to \a max of them into \a out (each once),
 * for the caller to evict (then mdl_session_drop()). Times are
 * CLOCK_MONOTONIC ns as mdl_now_ns() gives.
 * \return how many sessions are late (may exceed \a max).
 */
size_t mdl_late_sessions(struct mds_mdl *m, uint64_t now_ns, uint64_t timeout_ns, uint64_t *out,
			 size_t max);

/**
 * Whether \a session has callbacks not yet acknowledged. A poll comes with
 * the acknowledgements of everything its client received, so what is left
 * then was never delivered (more than one answer holds) or was lost: the
 * poll is answered at once rather than parked.
 */
bool mdl_session_has_callbacks(struct mds_mdl *m, uint64_t session);

/** What \a session holds on \a fid now (REVOKING leases: 0). */
uint32_t mdl_held(struct mds_mdl *m, uint64_t session, const struct weir_fid *fid);

/** The counters. */
void mdl_stats(struct mds_mdl *m, struct mdl_stats *out);

/** CLOCK_MONOTONIC in ns (what the manager stamps callbacks with). */
uint64_t mdl_now_ns(void);

#endif /* WEIR_MDS_MDLEASE_H */
