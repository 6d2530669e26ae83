/*
 * mds/lock.h - the MDS lock manager: POSIX (fcntl) and open-file-description
 * byte-range locks, flock(2) locks and libweir's O_APPEND locks on the files
 * of this MDT, with queued (blocking) requests.
 *
 * Pure: no network and no namespace. The RPC side (mds/lease.c) parks a
 * request by passing a callback; the manager calls it, exactly once, when
 * the request is answered. Usable in-process (tests/unit/mds/test_lock.c).
 *
 * Owners. A lock belongs to an owner: (session, class, id) where id is the
 * process id for MDS_LC_POSIX and the open handle id for the other classes;
 * a POSIX lock taken with an explicit owner (weir_fcntl_lock_owner(): the
 * lock owner of a FUSE request) has that owner as id, with bit 63 set so
 * that it is never a pid (mds_lock_owner_of()).
 * Locks of one owner never conflict with each other; a new lock of an owner
 * replaces (splitting, trimming) what that owner held on the range, and
 * adjacent or overlapping locks of one owner and type are merged, as
 * fcntl(2) specifies. Spaces: POSIX and OFD locks share one byte-range space
 * (they conflict with each other, as on Linux); FLOCK and APPEND locks each
 * have a space of their own (flock and fcntl locks do not interact).
 *
 * Waiting. A conflicting request with lq_wait is queued on its file in
 * arrival order. Whenever locks of a file change, its queue is scanned in
 * order and every waiter compatible with the locks then held is granted (a
 * waiter is never blocked by an earlier waiter, only by held locks, as with
 * Linux's fcntl: no fairness-induced deadlocks). A POSIX request that would
 * wait on an owner that (transitively, across files) waits on the requester
 * fails with -EDEADLK (Linux does the same, for POSIX locks only).
 *
 * Sessions. Every request names a session, which must have been opened with
 * mds_lock_session_open() and not dropped: otherwise -ESTALE. Requests with
 * a nonzero token are answered once: a repeat of a token already answered
 * gets the same answer, and a repeat of a token still queued re-attaches to
 * the queued request (the previous attachment is answered -EAGAIN).
 *
 * Thread safety: every function may be called from any thread; one mutex
 * (a leaf: nothing else is taken under it) guards everything. Callbacks run
 * after it is released, on the thread of the call that completed them.
 */
#ifndef WEIR_MDS_LOCK_H
#define WEIR_MDS_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fid.h"

/** Lock classes: the wire's LockClass values. */
enum mds_lock_class {
	MDS_LC_POSIX = 0,  /* fcntl F_SETLK: owner = (session, pid) */
	MDS_LC_OFD = 1,	   /* fcntl F_OFD_SETLK: owner = (session, handle) */
	MDS_LC_FLOCK = 2,  /* flock(2), whole file: owner = (session, handle) */
	MDS_LC_APPEND = 3, /* O_APPEND writes, whole file, exclusive: owner = (session, handle) */
	MDS_LC_NR
};

/** Bit 63 of an explicit POSIX lock owner id: pids never have it. */
#define MDS_LOCK_OWNER_EXPLICIT (1ULL << 63)

/**
 * The owner id of a lock request (struct mds_lock_req.lq_owner) from its
 * wire fields: \a owner | MDS_LOCK_OWNER_EXPLICIT for a POSIX lock with a
 * nonzero \a owner, (uint32_t)\a pid for other POSIX locks, \a handle for
 * the other classes. Pure.
 */
static inline uint64_t mds_lock_owner_of(uint32_t cls, int32_t pid, uint64_t owner,
					 uint64_t handle)
{
	if (cls != MDS_LC_POSIX)
		return handle;
	return owner ? owner | MDS_LOCK_OWNER_EXPLICIT : (uint64_t)(uint32_t)pid;
}

/** Lock types: the wire's LockType values. */
enum mds_lock_type {
	MDS_LT_UNLCK = 0,
	MDS_LT_RDLCK = 1,
	MDS_LT_WRLCK = 2,
};

/** Last byte of a range that runs to the end of the file. */
#define MDS_LOCK_EOF UINT64_MAX

/** One request. */
struct mds_lock_req {
	struct weir_fid lq_fid;
	uint64_t lq_session;
	uint8_t lq_class;  /* enum mds_lock_class */
	uint8_t lq_type;   /* enum mds_lock_type */
	uint64_t lq_owner; /* mds_lock_owner_of(): pid or explicit owner (POSIX), or handle id */
	int32_t lq_pid;	   /* reported by mds_lock_test() for POSIX locks */
	uint64_t lq_start; /* first byte */
	uint64_t lq_end;   /* last byte, inclusive; MDS_LOCK_EOF: to the end */
	bool lq_wait;	   /* queue on conflict instead of failing */
	uint64_t lq_token; /* 0 or unique per session (see above) */
};

/** A held lock as mds_lock_test()/mds_lock_list() describe it. */
struct mds_lock_desc {
	uint8_t ld_class;
	uint8_t ld_type;
	uint64_t ld_session;
	uint64_t ld_owner;
	int32_t ld_pid; /* POSIX: the pid sent; other classes: -1 */
	uint64_t ld_start;
	uint64_t ld_end; /* inclusive; MDS_LOCK_EOF */
};

/** Answer to a parked request: \a rc as listed at mds_lock_set(). */
typedef void (*mds_lock_cb_t)(void *arg, int rc);

struct mds_lockmgr;

/** A new, empty manager. \return 0 or -ENOMEM. */
int mds_lockmgr_new(struct mds_lockmgr **out);
/** Answer every queued request -ESHUTDOWN, free everything. Accepts NULL. */
void mds_lockmgr_free(struct mds_lockmgr *lm);

/** Start accepting requests of \a session (nonzero). \return 0, -ENOMEM, -EEXIST. */
int mds_lock_session_open(struct mds_lockmgr *lm, uint64_t session);
/**
 * Drop \a session: free all its locks (granting what then can be), answer
 * its queued requests \a rc, and refuse its later requests with -ESTALE.
 * \return the number of locks and queued requests dropped.
 */
size_t mds_lock_session_drop(struct mds_lockmgr *lm, uint64_t session, int rc);

/**
 * Set, change or remove (MDS_LT_UNLCK) a lock.
 * \return 0 done; -EINPROGRESS: queued, and \a cb(\a arg, rc) will be called
 *         once later with rc 0 (granted), -EAGAIN (still queued after the
 *         poll interval of mds_lock_tick(); send the same token again to keep
 *         waiting), -EBADF (its handle was closed), -ECANCELED
 *         (mds_lock_cancel()), the \a rc of mds_lock_session_drop(), or
 *         -ESHUTDOWN; or an error now:
 * \retval -EAGAIN   a conflicting lock is held and lq_wait is false.
 * \retval -EDEADLK  waiting would deadlock (POSIX requests only).
 * \retval -ESTALE   the session is unknown or dropped.
 * \retval -EINVAL   bad class, type or range (start > end; APPEND not exclusive).
 * \retval -ENOLCK   out of memory.
 * A flock conversion (holding one type, asking the other) first drops the
 * lock held, as Linux does: on -EAGAIN the owner holds nothing.
 */
int mds_lock_set(struct mds_lockmgr *lm, const struct mds_lock_req *rq, mds_lock_cb_t cb,
		 void *arg);

/**
 * Cancel the request of \a session with \a token (nonzero): if it is
 * queued, it leaves the queue and is answered -ECANCELED; if it has not
 * arrived yet, it will be answered -ECANCELED when it does (the token is
 * recorded as answered); if it was answered already (granted, say), nothing
 * changes: undoing a grant is the requester's unlock.
 * \return 0, -EINVAL (a zero session or token), -ESTALE (no such session).
 */
int mds_lock_cancel(struct mds_lockmgr *lm, uint64_t session, uint64_t token);

/**
 * F_GETLK: find a lock of another owner that conflicts with \a rq (its type
 * must be RDLCK or WRLCK).
 * \param[out] found  true when one exists; \a out then describes it.
 * \return 0, -ESTALE, -EINVAL.
 */
int mds_lock_test(struct mds_lockmgr *lm, const struct mds_lock_req *rq, bool *found,
		  struct mds_lock_desc *out);

/**
 * A handle closed: drop the POSIX locks of (\a session, \a pid) on \a fid
 * (POSIX's rule: any close by the process; not those of explicit owners,
 * which their holder drops, see weir_lock_owner_release()) and the OFD, flock and append
 * locks of (\a session, \a handle); queued requests of that handle are
 * answered -EBADF. \return the number of locks dropped.
 */
size_t mds_lock_close(struct mds_lockmgr *lm, const struct weir_fid *fid, uint64_t session,
		      int32_t pid, uint64_t handle);

/**
 * Make the owner of \a rq hold exactly what it asks on its range, without
 * looking at other owners' locks (no conflict check, no waiting, no token):
 * recovery's lock replay (the lock was granted before the MDS restarted, so
 * nobody else can hold it), and libweir's own record of what its mount
 * holds (client/lock.c), which applies each grant the MDS made in whatever
 * order they come back. Queued requests it unblocks (an unlock) are granted.
 * \return 0, -ESTALE (no such session), -EINVAL (as mds_lock_set()), -ENOLCK.
 */
int mds_lock_replay(struct mds_lockmgr *lm, const struct mds_lock_req *rq);

/** One held lock with its file, as mds_lock_session_locks() lists it. */
struct mds_lock_held {
	struct weir_fid lh_fid;
	struct mds_lock_desc lh_desc;
};

/**
 * The locks \a session holds, every file and class, in no order.
 * \param[out] out  Up to \a max are filled (may be NULL when \a max is 0).
 * \return the number held (may exceed \a max: call again with more room).
 */
size_t mds_lock_session_locks(struct mds_lockmgr *lm, uint64_t session,
			      struct mds_lock_held *out, size_t max);

/**
 * Housekeeping, called about every second: a parked request attached for
 * \a poll_ns is answered -EAGAIN (it stays queued); a queued request nobody
 * re-attached to for \a orphan_ns is removed.
 */
void mds_lock_tick(struct mds_lockmgr *lm, uint64_t now_ns, uint64_t poll_ns, uint64_t orphan_ns);

/**
 * The locks held on \a fid in the space of class \a cls, sorted by start
 * then owner. \param[out] out  Up to \a max are filled.
 * \return the number held (may exceed \a max).
 */
size_t mds_lock_list(struct mds_lockmgr *lm, const struct weir_fid *fid, uint8_t cls,
		     struct mds_lock_desc *out, size_t max);
/** Queued requests, every file. */
/**
 * Whether the owner (\a session, \a cls, \a owner: an lq_owner value) holds
 * any lock on \a fid. Queued requests do not count.
 */
bool mds_lock_owner_holds(struct mds_lockmgr *lm, const struct weir_fid *fid, uint64_t session,
			  uint8_t cls, uint64_t owner);

size_t mds_lock_nr_waiters(struct mds_lockmgr *lm);
/** Held locks, every file and class (at most 2^20: beyond, -ENOLCK). */
size_t mds_lock_nr_locks(struct mds_lockmgr *lm);

#endif /* WEIR_MDS_LOCK_H */
