/*
 * mds/ns_lock.c - the namespace's fine-grained locks (Lustre's pdirops):
 * name locks and inode locks, so that creates, opens, closes and unlinks of
 * different names run at once on every event loop of the MDS.
 *
 * DESIGN (docs/lock-ordering.md, "MDS namespace").
 *  - ns_lock (rwlock) stays: the operations converted to fine locks
 *    (creates, opens, closes, unlink/rmdir, setattr, xattrs, link, rename)
 *    take it for reading, like lookups; the others (set-layout, the HSM
 *    coordinator's changes, the clean-flag flush) still take it for writing,
 *    which shuts every converted operation out. A rename that moves a
 *    directory to another parent takes it for writing too (Lustre's rename
 *    lock): its loop check reads the ancestors of the target, which only
 *    such renames change. With --pdirops 0 (nc_pdirops_off) every change
 *    takes it for writing (ns_change_lock); the fine locks are then never
 *    contended, but still taken.
 *  - Name locks (class 1): a table of NS_LOCK_SLOTS mutexes indexed by a
 *    hash of (directory FID, name). An operation that adds or removes the
 *    name, or relies on its absence, holds its lock from the lookup that
 *    decided until after its commit: nothing else changes that dentry
 *    meanwhile. Two names of one directory hash to different slots (a
 *    collision only serialises), so creates of different names in one
 *    directory run at once.
 *  - Inode locks (class 2): a second table indexed by a hash of the FID.
 *    Every read-modify-write of an inode record holds its lock from the
 *    read through the commit: a directory's mtime and link count (creates,
 *    mkdirs and unlinks in it), a file's link count, size, flags and times.
 *    The record is read again under the lock: what the path walk found
 *    before may be old. A directory's emptiness (rmdir) is checked under
 *    its inode lock, and a create in it reads it again under the same lock
 *    (an rmdir that came first leaves it gone or with no links: -ENOENT).
 *  - Order: ns_lock, then the class-1 locks of the operation, all at once
 *    in ascending slot order, then the class-2 locks, all at once in
 *    ascending slot order, then the leaves (ns_fid_lock, ns_open_lock,
 *    ns_clean_lock, ns_txn_lock). A thread that holds class-2 locks never
 *    waits for a class-1 lock, and every set is taken in one order: no
 *    deadlock. ns_ls_lock() checks the order (the class-2 set of a thread
 *    is taken once, after its class-1 set).
 *  - Commits still go one at a time through ns_txn_lock (transnos in log
 *    order, mds/ns.c); what runs in parallel is everything before them:
 *    the path walk, permission checks, FID and OST choice, encoding.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* what this thread holds, to check the order (a bit per class) */
static __thread unsigned ns_ls_held_classes;

int ns_locks_init(struct mds_ns *ns)
{
	for (int c = 0; c < NS_LOCK_CLASSES; c++) {
		ns->ns_locks[c] = aligned_alloc(64, NS_LOCK_SLOTS * sizeof(struct ns_lock_slot));
		if (!ns->ns_locks[c])
			return -ENOMEM;
		for (size_t i = 0; i < NS_LOCK_SLOTS; i++)
			pthread_mutex_init(&ns->ns_locks[c][i].nl_mutex, NULL);
	}
	return 0;
}

void ns_locks_fini(struct mds_ns *ns)
{
	for (int c = 0; c < NS_LOCK_CLASSES; c++) {
		if (!ns->ns_locks[c])
			continue;
		for (size_t i = 0; i < NS_LOCK_SLOTS; i++)
			pthread_mutex_destroy(&ns->ns_locks[c][i].nl_mutex);
		free(ns->ns_locks[c]);
		ns->ns_locks[c] = NULL;
	}
}

void ns_change_lock(struct mds_ns *ns)
{
	if (ns->ns_conf.nc_pdirops_off)
		pthread_rwlock_wrlock(&ns->ns_lock);
	else
		pthread_rwlock_rdlock(&ns->ns_lock);
}

void ns_ls_init(struct ns_lockset *ls)
{
	memset(ls, 0, sizeof(*ls));
}

static void ls_add(struct ns_lockset *ls, int c, uint32_t slot)
{
	assert(!ls->ls_held[c] && ls->ls_nr[c] < NS_LOCKSET_MAX);
	for (unsigned i = 0; i < ls->ls_nr[c]; i++)
		if (ls->ls_slot[c][i] == slot)
			return;
	ls->ls_slot[c][ls->ls_nr[c]++] = (uint16_t)slot;
}

void ns_ls_add_name(struct ns_lockset *ls, const struct weir_fid *dir, const char *name,
		    size_t nlen)
{
	uint64_t h = weir_mix64(dir->fid_seq ^ weir_mix64(dir->fid_oid));
	h ^= weir_name_cookie(name, nlen);
	ls_add(ls, NS_LOCK_NAME, (uint32_t)(weir_mix64(h) % NS_LOCK_SLOTS));
}

void ns_ls_add_inode(struct ns_lockset *ls, const struct weir_fid *fid)
{
	uint64_t h = weir_mix64(fid->fid_seq ^ weir_mix64(fid->fid_oid));
	ls_add(ls, NS_LOCK_INODE, (uint32_t)(h % NS_LOCK_SLOTS));
}

static int slot_cmp(const void *a, const void *b)
{
	uint16_t x = *(const uint16_t *)a, y = *(const uint16_t *)b;
	return (x > y) - (x < y);
}

void ns_ls_lock(struct mds_ns *ns, struct ns_lockset *ls, enum ns_lock_class c)
{
	/* the order: nothing of this class or a later one held by this thread */
	assert(!(ns_ls_held_classes >> c));
	assert(!ls->ls_held[c]);
	qsort(ls->ls_slot[c], ls->ls_nr[c], sizeof(ls->ls_slot[c][0]), slot_cmp);
	for (unsigned i = 0; i < ls->ls_nr[c]; i++)
		pthread_mutex_lock(&ns->ns_locks[c][ls->ls_slot[c][i]].nl_mutex);
	ls->ls_held[c] = true;
	ns_ls_held_classes |= 1u << c;
}

void ns_ls_unlock(struct mds_ns *ns, struct ns_lockset *ls, enum ns_lock_class c)
{
	if (!ls->ls_held[c])
		return;
	for (unsigned i = ls->ls_nr[c]; i-- > 0;)
		pthread_mutex_unlock(&ns->ns_locks[c][ls->ls_slot[c][i]].nl_mutex);
	ls->ls_held[c] = false;
	ns_ls_held_classes &= ~(1u << c);
}

void ns_ls_release(struct mds_ns *ns, struct ns_lockset *ls)
{
	ns_ls_unlock(ns, ls, NS_LOCK_INODE);
	ns_ls_unlock(ns, ls, NS_LOCK_NAME);
	ns_ls_init(ls);
}
