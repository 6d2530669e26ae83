/*
 * mds/ns.c - one MDT's namespace on RocksDB: records, FIDs, open counts,
 * creation of inodes, open/close, lookup and access, readdir, layouts.
 * Path walks are in ns_walk.c; mkdir, unlink, rename, link, symlink and
 * mknod in ns_link.c; setattr in ns_attr.c; xattrs in xattr.c; permission
 * rules in perm.c; the destroy queue and MDT start in ns_store.c.
 *
 * DESIGN. Every mutation commits one RocksDB write batch (atomic, in the WAL
 * before the call returns; readers see all of it or none). Creates, opens,
 * closes, size updates, mkdir/mknod/symlink, unlink/rmdir, setattr and
 * xattr changes, link and rename hold ns_lock for reading and the
 * fine-grained name and inode locks of what they change (mds/ns_lock.c:
 * pdirops), so they run at once on every event loop; the other mutations
 * (set-layout, the HSM coordinator's, a rename that moves a directory to
 * another parent) hold ns_lock for writing. Lookups hold ns_lock for
 * reading and no other lock:
 * each step of a walk reads committed records, as Linux's ref-walk does.
 * Lock order: ns_lock -> name locks -> inode locks -> (the HSM coordinator's
 * hs_lock, mds/hsm.h) -> ns_fid_lock -> ns_open_lock (docs/lock-ordering.md).
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/le.h"
#include "common/log.h"
#include "common/util.h"
#include "hsm.h"

/* ------------------------------------------------------------ records */

/*
 * Records of directories and of the dentries that name them go through
 * kv.c's read cache: every path walk reads them again (kv.c says how the
 * cache stays coherent with the batches).
 */
static int inode_get(struct mds_ns *ns, const struct weir_fid *fid, struct mds_inode *in,
		     bool use_cache)
{
	uint8_t key[WEIR_FID_BYTES], val[MDS_INODE_REC_MAX];
	uint64_t gen = 0;
	weir_fid_pack_be(fid, key);
	bool cached = true;
	ssize_t n = use_cache ? kv_cache_get(ns->ns_kv, KV_CF_INODES, key, sizeof(key), val,
					     sizeof(val), &gen)
			      : -ENOENT;
	if (n < 0) {
		cached = false;
		n = kv_get(ns->ns_kv, KV_CF_INODES, key, sizeof(key), val, sizeof(val));
	}
	if (n == -ENOENT && weir_fid_mdt(fid) != (int)ns->ns_conf.nc_mdt_index)
		return -EREMOTE; /* another MDT's inode (a remote directory: docs/dne.md) */
	if (n < 0)
		return (int)n;
	if ((size_t)n > sizeof(val))
		return -EIO;
	int rc = mds_inode_decode(fid, val, (size_t)n, in);
	if (!rc && !cached && use_cache && S_ISDIR(in->in_mode))
		kv_cache_put(ns->ns_kv, KV_CF_INODES, key, sizeof(key), val, (size_t)n, gen);
	if (!rc && (in->in_flags & MDS_INODE_F_SIZE_STALE) && ns_clean_is(ns, fid))
		in->in_flags &= ~MDS_INODE_F_SIZE_STALE; /* closed clean; not yet on disk */
	return rc;
}

int ns_inode_get(struct mds_ns *ns, const struct weir_fid *fid, struct mds_inode *in)
{
	return inode_get(ns, fid, in, true);
}

int ns_inode_get_fresh(struct mds_ns *ns, const struct weir_fid *fid, struct mds_inode *in)
{
	return inode_get(ns, fid, in, false);
}

void ns_inode_put(struct kv_batch *b, const struct mds_inode *in)
{
	uint8_t key[WEIR_FID_BYTES], val[MDS_INODE_REC_MAX];
	weir_fid_pack_be(&in->in_fid, key);
	size_t n = mds_inode_encode(in, val);
	kv_batch_put(b, KV_CF_INODES, key, sizeof(key), val, n);
	kv_batch_note(b, &in->in_fid, MDL_ALL); /* attributes, layout; a directory's names */
}

void ns_inode_cache(struct mds_ns *ns, const struct mds_inode *in)
{
	uint8_t key[WEIR_FID_BYTES], val[MDS_INODE_REC_MAX];
	weir_fid_pack_be(&in->in_fid, key);
	size_t n = mds_inode_encode(in, val);
	kv_cache_put(ns->ns_kv, KV_CF_INODES, key, sizeof(key), val, n, kv_cache_gen(ns->ns_kv));
}

void ns_inode_uncache(struct mds_ns *ns, const struct weir_fid *fid)
{
	uint8_t key[WEIR_FID_BYTES];
	weir_fid_pack_be(fid, key);
	kv_cache_drop(ns->ns_kv, KV_CF_INODES, key, sizeof(key));
}

void ns_inode_del(struct kv_batch *b, const struct weir_fid *fid)
{
	uint8_t key[WEIR_FID_BYTES];
	weir_fid_pack_be(fid, key);
	kv_batch_del(b, KV_CF_INODES, key, sizeof(key));
	kv_batch_note(b, fid, MDL_ALL);
}

int ns_inode_destroy(struct mds_ns *ns, struct kv_batch *b, const struct weir_fid *fid)
{
	ns_inode_del(b, fid);
	return ns_xattrs_del_all(ns, b, fid);
}

static int dentry_get(struct mds_ns *ns, const struct weir_fid *parent, const char *name,
		      size_t nlen, struct weir_fid *fid, uint8_t *type, bool use_cache)
{
	uint8_t key[MDS_DENTRY_KEY_MAX], val[MDS_DENTRY_REC_SIZE + 8];
	uint64_t gen = 0;
	size_t kl = mds_dentry_key(parent, name, nlen, key);
	ssize_t n = use_cache ? kv_cache_get(ns->ns_kv, KV_CF_DENTRIES, key, kl, val, sizeof(val),
					     &gen)
			      : -ENOENT;
	if (n >= 0)
		return mds_dentry_decode(val, (size_t)n, fid, type);
	n = kv_get(ns->ns_kv, KV_CF_DENTRIES, key, kl, val, sizeof(val));
	if (n < 0)
		return (int)n;
	int rc = mds_dentry_decode(val, (size_t)n, fid, type);
	if (!rc && use_cache && *type == DT_DIR)
		kv_cache_put(ns->ns_kv, KV_CF_DENTRIES, key, kl, val, (size_t)n, gen);
	return rc;
}

int ns_dentry_get(struct mds_ns *ns, const struct weir_fid *parent, const char *name,
		  size_t nlen, struct weir_fid *fid, uint8_t *type)
{
	return dentry_get(ns, parent, name, nlen, fid, type, true);
}

int ns_dentry_get_fresh(struct mds_ns *ns, const struct weir_fid *parent, const char *name,
			size_t nlen, struct weir_fid *fid, uint8_t *type)
{
	return dentry_get(ns, parent, name, nlen, fid, type, false);
}

void ns_dentry_put(struct kv_batch *b, const struct weir_fid *parent, const char *name,
		   size_t nlen, const struct weir_fid *fid, uint8_t type)
{
	uint8_t key[MDS_DENTRY_KEY_MAX], val[MDS_DENTRY_REC_SIZE];
	size_t kl = mds_dentry_key(parent, name, nlen, key);
	mds_dentry_encode(fid, type, val);
	kv_batch_put(b, KV_CF_DENTRIES, key, kl, val, sizeof(val));
	kv_batch_note(b, parent, MDL_LOOKUP);
}

void ns_dentry_del(struct kv_batch *b, const struct weir_fid *parent, const char *name,
		   size_t nlen)
{
	uint8_t key[MDS_DENTRY_KEY_MAX];
	size_t kl = mds_dentry_key(parent, name, nlen, key);
	kv_batch_del(b, KV_CF_DENTRIES, key, kl);
	kv_batch_note(b, parent, MDL_LOOKUP);
}

void ns_destroy_put(struct kv_batch *b, char kind, const struct mds_inode *in)
{
	uint8_t key[1 + WEIR_FID_BYTES], val[MDS_INODE_REC_MAX];
	key[0] = (uint8_t)kind;
	weir_fid_pack_be(&in->in_fid, key + 1);
	size_t n = mds_inode_encode(in, val);
	kv_batch_put(b, KV_CF_DESTROY, key, sizeof(key), val, n);
}

void ns_destroy_del(struct kv_batch *b, char kind, const struct weir_fid *fid)
{
	uint8_t key[1 + WEIR_FID_BYTES];
	key[0] = (uint8_t)kind;
	weir_fid_pack_be(fid, key + 1);
	kv_batch_del(b, KV_CF_DESTROY, key, sizeof(key));
}

/*
 * Every batch gets the next transno and carries it (NS_KEY_LAST_TRANSNO), so
 * after a crash that lost the log's unsynced tail the MDT restarts from the
 * transno of the last batch that survived (ns_boot_transno): a client's kept
 * request with a higher transno was lost and is replayed (mds/recovery.c).
 * The number is taken and the batch committed under ns_txn_lock, so transnos
 * are in log order; ns_write_seq is published after the commit, so a sync that
 * reads seq >= T covers the batch of transno T.
 */
int ns_batch_commit(struct mds_ns *ns, struct kv_batch *b)
{
	uint8_t v[8];
	mds_reply_batch_note(b); /* the reply-cache record, atomically with the change */
	pthread_mutex_lock(&ns->ns_txn_lock);
	uint64_t t = atomic_load(&ns->ns_write_seq) + 1;
	weir_put_le64(v, t);
	kv_batch_put(b, KV_CF_DEFAULT, NS_KEY_LAST_TRANSNO, strlen(NS_KEY_LAST_TRANSNO), v, 8);
	int rc = kv_batch_commit(ns->ns_kv, b);
	if (!rc)
		atomic_store(&ns->ns_write_seq, t);
	pthread_mutex_unlock(&ns->ns_txn_lock);
	if (!rc) {
		mds_reply_batch_done(t);
		mds_reply_committed(); /* a test hook (mds/reply.c) */
		const struct weir_fid *fids;
		const uint32_t *bits;
		bool lost;
		size_t nr = kv_batch_notes(b, &fids, &bits, &lost);
		if ((nr || lost) && ns->ns_on_change)
			ns->ns_on_change(ns->ns_on_change_arg, fids, bits, nr, lost);
	}
	kv_batch_free(b);
	return rc;
}

void mds_ns_on_change_set(struct mds_ns *ns,
			  void (*fn)(void *arg, const struct weir_fid *fids, const uint32_t *bits,
				     size_t nr, bool lost),
			  void *arg)
{
	ns->ns_on_change = fn;
	ns->ns_on_change_arg = arg;
}

uint8_t ns_mode_to_dt(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return DT_DIR;
	case S_IFREG: return DT_REG;
	case S_IFLNK: return DT_LNK;
	case S_IFIFO: return DT_FIFO;
	case S_IFSOCK: return DT_SOCK;
	case S_IFCHR: return DT_CHR;
	case S_IFBLK: return DT_BLK;
	default: return DT_UNKNOWN;
	}
}

int64_t ns_now_ns(void)
{
	return (int64_t)weir_wall_ns();
}

/* ------------------------------------------------------------ FIDs */

/*
 * Make \a hw the FID high-water mark on the MDT, synced: a FID is handed out
 * only below a mark that survives a crash of the host, so a create lost with
 * the unsynced tail of the log never has its FID (and its OST objects, which
 * the client may have written) given to another file after the restart.
 */
static int ns_fid_hw_persist(struct mds_ns *ns, uint64_t hw)
{
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b)
		return -ENOMEM;
	uint8_t v[8];
	weir_put_le64(v, hw);
	kv_batch_put(b, KV_CF_DEFAULT, NS_KEY_OID_HW, strlen(NS_KEY_OID_HW), v, 8);
	int rc = kv_batch_commit(ns->ns_kv, b);
	kv_batch_free(b);
	return rc ? rc : kv_sync(ns->ns_kv);
}

/* mds_ns_replay_set(): what the next create on this thread re-creates */
static __thread bool ns_replay_has_fid, ns_replay_has_lo;
static __thread struct weir_fid ns_replay_fid;
static __thread struct weir_layout ns_replay_lo;

void mds_ns_replay_set(const struct weir_fid *fid, const struct weir_layout *lo)
{
	ns_replay_has_fid = fid != NULL;
	if (fid)
		ns_replay_fid = *fid;
	ns_replay_has_lo = lo != NULL;
	if (lo)
		ns_replay_lo = *lo;
}

int ns_fid_alloc(struct mds_ns *ns, struct weir_fid *fid)
{
	if (ns_replay_has_fid) {
		/* a replayed create: its FID was given before the crash, from a
		 * chunk whose high-water mark was synced, so nobody has it. The
		 * client names it: it must be one this MDT gave and no inode has */
		ns_replay_has_fid = false;
		struct mds_inode in;
		uint64_t seq = weir_fid_mdt_seq(ns->ns_conf.nc_mdt_index);
		pthread_mutex_lock(&ns->ns_fid_lock);
		bool given = ns_replay_fid.fid_oid && ns_replay_fid.fid_oid < ns->ns_oid_hw;
		pthread_mutex_unlock(&ns->ns_fid_lock);
		if (ns_replay_fid.fid_seq != seq || !given)
			return -EINVAL;
		int rc = ns_inode_get(ns, &ns_replay_fid, &in);
		if (rc != -ENOENT)
			return rc ? rc : -EEXIST;
		*fid = ns_replay_fid;
		return 0;
	}
	pthread_mutex_lock(&ns->ns_fid_lock);
	if (ns->ns_next_oid >= ns->ns_oid_hw) {
		/* once per NS_FID_CHUNK creates: one sync of the log */
		uint64_t hw = ns->ns_next_oid + NS_FID_CHUNK;
		int rc = ns_fid_hw_persist(ns, hw);
		if (rc) {
			pthread_mutex_unlock(&ns->ns_fid_lock);
			WEIR_LOG_ERROR_RL("op=fid_alloc rc=%d: cannot persist the FID high-water"
					  " mark; no new FID", rc);
			return rc;
		}
		ns->ns_oid_hw = hw;
	}
	fid->fid_seq = weir_fid_mdt_seq(ns->ns_conf.nc_mdt_index);
	fid->fid_oid = ns->ns_next_oid++;
	pthread_mutex_unlock(&ns->ns_fid_lock);
	return 0;
}

/* ------------------------------------------------------------ open counts */

static struct mds_open_ent **open_slot(struct mds_ns *ns, const struct weir_fid *fid)
{
	uint64_t h = (fid->fid_seq * 0x9e3779b97f4a7c15ULL) ^ fid->fid_oid;
	return &ns->ns_open_tab[h % ns->ns_open_buckets];
}

static struct mds_open_ent *open_find(struct mds_ns *ns, const struct weir_fid *fid)
{
	for (struct mds_open_ent *e = *open_slot(ns, fid); e; e = e->oe_next)
		if (weir_fid_eq(&e->oe_fid, fid))
			return e;
	return NULL;
}

/* \a inherited: a writer found SIZE_STALE set (see oe_size_unknown). */
static int open_ref(struct mds_ns *ns, const struct weir_fid *fid, bool writer, bool inherited)
{
	pthread_mutex_lock(&ns->ns_open_lock);
	struct mds_open_ent *e = open_find(ns, fid);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			pthread_mutex_unlock(&ns->ns_open_lock);
			return -ENOMEM;
		}
		e->oe_fid = *fid;
		e->oe_size_epoch = atomic_fetch_add(&ns->ns_epoch_seq, 1) + 1;
		struct mds_open_ent **s = open_slot(ns, fid);
		e->oe_next = *s;
		*s = e;
	}
	if (inherited && !e->oe_writers)
		e->oe_size_unknown = true; /* no writer of this run set the flag */
	e->oe_openers++;
	if (writer)
		e->oe_writers++;
	pthread_mutex_unlock(&ns->ns_open_lock);
	return 0;
}

uint64_t mds_ns_size_epoch(struct mds_ns *ns, const struct weir_fid *fid)
{
	pthread_mutex_lock(&ns->ns_open_lock);
	struct mds_open_ent *e = open_find(ns, fid);
	uint64_t epoch = e ? e->oe_size_epoch : 0;
	pthread_mutex_unlock(&ns->ns_open_lock);
	return epoch;
}

void ns_size_epoch_bump(struct mds_ns *ns, const struct weir_fid *fid)
{
	pthread_mutex_lock(&ns->ns_open_lock);
	struct mds_open_ent *e = open_find(ns, fid);
	if (e)
		e->oe_size_epoch = atomic_fetch_add(&ns->ns_epoch_seq, 1) + 1;
	pthread_mutex_unlock(&ns->ns_open_lock);
}

/*
 * Is \a wr a size report glimpsed before the file's latest truncate? Its
 * size is then no longer true (the truncate may have cut below it after
 * the glimpse read the objects) and must not be taken. Caller holds \a fid's
 * inode lock (truncates bump the epoch under it: mds_ns_setattr).
 */
static bool report_outdated(struct mds_ns *ns, const struct weir_fid *fid,
			    const struct mds_write_report *wr)
{
	return wr && wr->wr_has_size && wr->wr_size_epoch != mds_ns_size_epoch(ns, fid);
}

void mds_ns_size_unknown(struct mds_ns *ns, const struct weir_fid *fid)
{
	pthread_mutex_lock(&ns->ns_open_lock);
	struct mds_open_ent *e = open_find(ns, fid);
	if (e)
		e->oe_size_unknown = true;
	pthread_mutex_unlock(&ns->ns_open_lock);
}

/* What is left of an inode's open state after a close. */
struct open_left {
	uint32_t ol_openers;
	uint32_t ol_writers;
	bool ol_unlinked;
	bool ol_size_unknown;
	int64_t ol_times_ns;
};

/*
 * Drop one reference. \a size_unknown: the closing writer changed the data
 * but could not learn the size (its glimpse failed), so no later close that
 * reports no size may trust the MDS's. Caller holds \a fid's inode lock.
 */
static void open_unref(struct mds_ns *ns, const struct weir_fid *fid, bool writer,
		       bool size_unknown, struct open_left *left)
{
	pthread_mutex_lock(&ns->ns_open_lock);
	struct mds_open_ent **pp = open_slot(ns, fid), *e;
	memset(left, 0, sizeof(*left));
	while ((e = *pp) && !weir_fid_eq(&e->oe_fid, fid))
		pp = &e->oe_next;
	if (e) {
		if (size_unknown)
			e->oe_size_unknown = true;
		if (e->oe_openers)
			e->oe_openers--;
		if (writer && e->oe_writers)
			e->oe_writers--;
		left->ol_openers = e->oe_openers;
		left->ol_writers = e->oe_writers;
		left->ol_unlinked = e->oe_unlinked;
		left->ol_size_unknown = e->oe_size_unknown;
		left->ol_times_ns = e->oe_times_ns;
		if (!e->oe_openers) {
			*pp = e->oe_next;
			free(e);
		}
	}
	pthread_mutex_unlock(&ns->ns_open_lock);
}

static int64_t open_times_get(struct mds_ns *ns, const struct weir_fid *fid)
{
	pthread_mutex_lock(&ns->ns_open_lock);
	struct mds_open_ent *e = open_find(ns, fid);
	int64_t t = e ? e->oe_times_ns : 0;
	pthread_mutex_unlock(&ns->ns_open_lock);
	return t;
}

void ns_open_times_set(struct mds_ns *ns, const struct weir_fid *fid, int64_t now)
{
	pthread_mutex_lock(&ns->ns_open_lock);
	struct mds_open_ent *e = open_find(ns, fid);
	if (e)
		e->oe_times_ns = now;
	pthread_mutex_unlock(&ns->ns_open_lock);
}

void ns_open_counts(struct mds_ns *ns, const struct weir_fid *fid, uint32_t *openers,
		    uint32_t *writers)
{
	pthread_mutex_lock(&ns->ns_open_lock);
	struct mds_open_ent *e = open_find(ns, fid);
	*openers = e ? e->oe_openers : 0;
	*writers = e ? e->oe_writers : 0;
	pthread_mutex_unlock(&ns->ns_open_lock);
}

/* Mark an inode whose last name went away: true if it is still open. */
static bool open_mark_unlinked(struct mds_ns *ns, const struct weir_fid *fid)
{
	pthread_mutex_lock(&ns->ns_open_lock);
	struct mds_open_ent *e = open_find(ns, fid);
	if (e)
		e->oe_unlinked = true;
	pthread_mutex_unlock(&ns->ns_open_lock);
	return e != NULL;
}

int mds_ns_reopen(struct mds_ns *ns, const struct weir_fid *fid, bool writer)
{
	struct mds_inode in;
	struct ns_lockset ls;
	ns_ls_init(&ls);
	ns_ls_add_inode(&ls, fid);
	ns_change_lock(ns);
	ns_ls_lock(ns, &ls, NS_LOCK_INODE);
	int rc = ns_inode_get(ns, fid, &in);
	if (!rc) {
		/* a writer of the last run left SIZE_STALE set: see oe_size_unknown */
		bool inherited = writer && (in.in_flags & MDS_INODE_F_SIZE_STALE);
		rc = open_ref(ns, fid, writer, inherited);
	}
	if (!rc && in.in_nlink == 0)
		open_mark_unlinked(ns, fid); /* an orphan: destroyed at its last close */
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

/*
 * An inode lost its last link (a directory: its name) in batch \a b: orphan
 * it if open, else destroy it (record, xattrs) and queue a file's objects.
 */
static int inode_release(struct mds_ns *ns, struct kv_batch *b, struct mds_inode *in,
			 int64_t now)
{
	in->in_nlink = 0;
	in->in_ctime_ns = now;
	if ((in->in_flags & MDS_INODE_F_HSM) && !S_ISDIR(in->in_mode))
		mds_hsm_on_destroy(ns, b, &in->in_fid); /* the S3 copy is kept */
	if (open_mark_unlinked(ns, &in->in_fid)) {
		ns_inode_put(b, in);
		ns_destroy_put(b, 'O', in);
		return 0;
	}
	if (ns_inode_has_objects(in))
		ns_destroy_put(b, 'D', in);
	return ns_inode_destroy(ns, b, &in->in_fid);
}

int ns_dir_release(struct mds_ns *ns, struct kv_batch *b, struct mds_inode *in, int64_t now)
{
	return inode_release(ns, b, in, now);
}

int ns_inode_unlink(struct mds_ns *ns, struct kv_batch *b, struct mds_inode *in, int64_t now)
{
	if (in->in_nlink > 1) {
		in->in_nlink--;
		in->in_ctime_ns = now;
		ns_inode_put(b, in);
		return 0;
	}
	return inode_release(ns, b, in, now);
}

/* ------------------------------------------------------------ creation */

int ns_dir_is_empty(struct mds_ns *ns, const struct weir_fid *dir, bool *empty)
{
	uint8_t key[24];
	weir_fid_pack_be(dir, key);
	memset(key + 16, 0, 8);
	struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_DENTRIES);
	if (!it)
		return -ENOMEM;
	kv_iter_seek(it, key, sizeof(key));
	*empty = true;
	if (kv_iter_valid(it)) {
		size_t kl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl >= 16 && !memcmp(k, key, 16))
			*empty = false;
	}
	kv_iter_free(it);
	return 0;
}

int ns_is_within(struct mds_ns *ns, const struct weir_fid *dir, const struct weir_fid *top,
		 bool *within)
{
	struct weir_fid root = weir_fid_root(), cur = *dir;
	*within = false;
	for (int depth = 0; depth < 4096; depth++) {
		if (weir_fid_eq(&cur, top)) {
			*within = true;
			return 0;
		}
		if (weir_fid_eq(&cur, &root))
			return 0;
		struct mds_inode in;
		int rc = ns_inode_get(ns, &cur, &in);
		if (rc)
			return rc == -ENOENT ? -EIO : rc;
		cur = in.in_parent;
	}
	return -ELOOP;
}

static int layout_for_new(struct mds_ns *ns, const struct mds_inode *parent,
			  const struct mds_layout_req *lr, mds_ost_chooser_t choose, void *arg,
			  struct weir_layout *lo)
{
	uint32_t count = ns->ns_conf.nc_def_stripe_count;
	uint32_t size = ns->ns_conf.nc_def_stripe_size;
	int32_t off = -1;
	if (parent->in_has_layout) {
		if (parent->in_layout.lo_stripe_count)
			count = parent->in_layout.lo_stripe_count;
		if (parent->in_layout.lo_stripe_size)
			size = parent->in_layout.lo_stripe_size;
		off = (int32_t)parent->in_layout.lo_osts[0];
	}
	/* the request's fields override the directory's, each on its own (-i alone too) */
	if (lr && lr->lr_stripe_count)
		count = lr->lr_stripe_count;
	if (lr && (lr->lr_stripe_count || lr->lr_stripe_offset >= 0))
		off = lr->lr_stripe_offset;
	if (lr && lr->lr_stripe_size)
		size = lr->lr_stripe_size;
	if (size == 0 || size % WEIR_LAYOUT_STRIPE_ALIGN || size > WEIR_LAYOUT_MAX_STRIPE_SIZE)
		return -EINVAL;
	memset(lo, 0, sizeof(*lo));
	lo->lo_pattern = WEIR_LAYOUT_PATTERN_RAID0;
	lo->lo_stripe_size = size;
	lo->lo_stripe_count = count;
	if (ns_replay_has_lo) {
		/* a replayed create: the OSTs its objects (and their data) are on */
		ns_replay_has_lo = false;
		*lo = ns_replay_lo;
		return weir_layout_check(lo);
	}
	if (!choose)
		return -ENOSPC;
	int rc = choose(arg, lo, off);
	if (rc == MDS_RC_PARK && ns_replay_has_fid)
		return -EAGAIN; /* a parked re-run would lose its FID: it fails instead */
	if (rc)
		return rc;
	return weir_layout_check(lo);
}

void ns_inode_new(struct mds_inode *in, const struct weir_fid *fid, uint32_t mode)
{
	memset(in, 0, sizeof(*in));
	in->in_fid = *fid;
	in->in_mode = mode;
	in->in_atime_ns = in->in_mtime_ns = in->in_ctime_ns = ns_now_ns();
}

int ns_create_locked(struct mds_ns *ns, const struct mds_cred *cr, struct mds_inode *dir,
		     const char *name, size_t nlen, const struct ns_new *nn,
		     struct ns_lockset *ls, struct mds_inode *out)
{
	uint32_t mode = nn->nn_mode;
	struct weir_layout lo;
	int rc;

	if (S_ISREG(mode)) {
		rc = layout_for_new(ns, dir, nn->nn_lr, nn->nn_choose, nn->nn_choose_arg, &lo);
		if (rc)
			return rc;
	}
	/* inode_init_owner() and mode_strip_sgid() */
	uint32_t gid = mds_cred_gid(cr);
	if (dir->in_mode & S_ISGID) {
		gid = dir->in_gid;
		if (S_ISDIR(mode))
			mode |= S_ISGID;
		else if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) &&
			 !mds_cred_is_root(cr) && !mds_cred_in_group(cr, gid))
			mode &= ~(uint32_t)S_ISGID;
	}
	struct weir_fid fid;
	rc = ns_fid_alloc(ns, &fid);
	if (rc)
		return rc;
	/* the directory's record, read again under its inode lock: creates of
	 * other names in it commit meanwhile, and an rmdir or a chmod may have
	 * come first. The new inode's lock too: nobody knows its FID before the
	 * commit, but from then on an open or a setattr by path may find it, and
	 * the caller still has its open count and cache entry to set */
	ns_ls_add_inode(ls, &dir->in_fid);
	ns_ls_add_inode(ls, &fid);
	ns_ls_lock(ns, ls, NS_LOCK_INODE);
	struct weir_fid dfid = dir->in_fid; /* (ns_inode_get clears its output first) */
	rc = ns_inode_get(ns, &dfid, dir);
	if (!rc && (!S_ISDIR(dir->in_mode) || ns_dir_dead(ns, dir)))
		rc = -ENOENT; /* removed since the walk (Linux: IS_DEADDIR), or being removed */
	if (!rc && cr)
		rc = mds_perm_may_create(cr, dir);
	struct kv_batch *b = rc ? NULL : kv_batch_new(ns->ns_kv);
	if (!b)
		return rc ? rc : -ENOMEM;
	ns_inode_new(out, &fid, mode);
	out->in_uid = mds_cred_uid(cr);
	out->in_gid = gid;
	out->in_nlink = 1;
	out->in_flags = nn->nn_flags;
	if (S_ISREG(mode)) {
		out->in_has_layout = true;
		out->in_layout = lo;
		out->in_parent = dir->in_fid; /* a hint for HSM keys (mds/hsm_store.c) */
		out->in_size = nn->nn_size;
		if (nn->nn_mtime_ns)
			out->in_atime_ns = out->in_mtime_ns = nn->nn_mtime_ns;
	} else if (S_ISDIR(mode)) {
		out->in_nlink = 2;
		out->in_parent = dir->in_fid;
		out->in_size = 4096;
		/* a new directory inherits its parent's default layout (as in Lustre) */
		out->in_has_layout = dir->in_has_layout;
		out->in_layout = dir->in_layout;
		dir->in_nlink++;
	} else if (S_ISLNK(mode)) {
		out->in_size = nn->nn_tlen;
		ns_symlink_put(b, &fid, nn->nn_target, nn->nn_tlen);
	} else if (S_ISCHR(mode) || S_ISBLK(mode)) {
		out->in_rdev = nn->nn_rdev;
	}
	ns_inode_put(b, out);
	if (nn->nn_extra)
		nn->nn_extra(nn->nn_extra_arg, b, out);
	ns_dentry_put(b, &dir->in_fid, name, nlen, &fid, ns_mode_to_dt(mode));
	dir->in_mtime_ns = dir->in_ctime_ns = out->in_ctime_ns;
	ns_inode_put(b, dir);
	rc = ns_batch_commit(ns, b);
	if (!rc)
		ns_inode_cache(ns, dir); /* the next create in it walks through it */
	return rc;
}

int ns_name_lock(struct mds_ns *ns, struct ns_lockset *ls, const struct ns_res *r)
{
	ns_ls_add_name(ls, &r->r_dir.in_fid, r->r_name, r->r_nlen);
	ns_ls_lock(ns, ls, NS_LOCK_NAME);
	return ns_name_recheck(ns, r);
}

size_t ns_hold_key(const struct weir_fid *dir, const char *name, size_t nlen, uint8_t *key)
{
	memcpy(key, "dth", 3);
	weir_fid_pack_be(dir, key + 3);
	if (nlen) /* (a directory's hold: no name, maybe NULL) */
		memcpy(key + 3 + WEIR_FID_BYTES, name, nlen);
	return 3 + WEIR_FID_BYTES + nlen;
}

void ns_hold_set(struct kv_batch *b, const struct weir_fid *dir, const char *name, size_t nlen,
		 bool on)
{
	uint8_t key[NS_HOLD_KEY_MAX], one = 1;
	size_t kl = ns_hold_key(dir, name, nlen, key);
	if (on)
		kv_batch_put(b, KV_CF_DEFAULT, key, kl, &one, 1);
	else
		kv_batch_del(b, KV_CF_DEFAULT, key, kl);
}

bool ns_held(struct mds_ns *ns, const struct weir_fid *dir, const char *name, size_t nlen)
{
	return atomic_load(&ns->ns_holds) && ns_hold_present(ns, dir, name, nlen);
}

bool ns_hold_present(struct mds_ns *ns, const struct weir_fid *dir, const char *name, size_t nlen)
{
	uint8_t key[NS_HOLD_KEY_MAX], v;
	size_t kl = ns_hold_key(dir, name, nlen, key);
	return kv_get(ns->ns_kv, KV_CF_DEFAULT, key, kl, &v, 1) >= 0;
}

void ns_hold_dropped(struct mds_ns *ns)
{
	unsigned n = atomic_load(&ns->ns_holds);
	while (n && !atomic_compare_exchange_weak(&ns->ns_holds, &n, n - 1))
		;
}

bool ns_dir_dead(struct mds_ns *ns, const struct mds_inode *dir)
{
	return dir->in_nlink == 0 || ns_held(ns, &dir->in_fid, NULL, 0);
}

int ns_name_recheck(struct mds_ns *ns, const struct ns_res *r)
{
	struct weir_fid fid;
	uint8_t type;
	if (r->r_exists && ns_held(ns, &r->r_dir.in_fid, r->r_name, r->r_nlen))
		return -EBUSY; /* moving to another MDT (mds/dtx.c) */
	int rc = ns_dentry_get(ns, &r->r_dir.in_fid, r->r_name, r->r_nlen, &fid, &type);
	if (rc == -ENOENT)
		return r->r_exists ? -EAGAIN : 0;
	if (rc)
		return rc;
	return r->r_exists && weir_fid_eq(&fid, &r->r_in.in_fid) ? 0 : -EAGAIN;
}

int ns_resolve_obj_locked(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
			  const char *path, uint32_t at_flags, struct mds_inode *in,
			  struct ns_lockset *ls)
{
	unsigned tries = 0;
	for (;;) {
		int rc = ns_resolve_obj(ns, cr, at, path, at_flags, in);
		if (rc)
			return rc;
		struct weir_fid fid = in->in_fid; /* (ns_inode_get clears its output first) */
		ns_ls_add_inode(ls, &fid);
		ns_ls_lock(ns, ls, NS_LOCK_INODE);
		rc = ns_inode_get(ns, &fid, in);
		if (rc != -ENOENT || !path)
			return rc; /* by FID: gone is -ENOENT */
		/* its last name went and it was destroyed since the walk: walk again */
		ns_ls_release(ns, ls);
		if (!ns_retry(&tries, "resolve"))
			return -EAGAIN;
	}
}

bool ns_retry(unsigned *tries, const char *op)
{
	if (++*tries < NS_RETRY_MAX)
		return true;
	WEIR_LOG_WARN_RL("op=%s tries=%u: the name kept changing under the walk (-EAGAIN)", op,
			 *tries);
	return false;
}

/* ------------------------------------------------------------ open/close */

/* relatime: update atime if it is not after mtime/ctime, or a day old. */
static bool atime_due(const struct mds_inode *in, int64_t now)
{
	return in->in_atime_ns <= in->in_mtime_ns || in->in_atime_ns <= in->in_ctime_ns ||
	       now - in->in_atime_ns >= 24LL * 3600 * 1000000000LL;
}

/*
 * Checks and updates of an existing inode opened (may_open, handle_truncate,
 * relatime). \a truncated: O_TRUNC dropped what the objects may hold.
 */
static int open_existing(struct mds_ns *ns, const struct mds_cred *cr, uint32_t flags,
			 struct mds_inode *in, bool *truncated)
{
	bool hsm_open = flags & MDS_OF_HSM;
	bool writer = (flags & MDS_OF_WRITE) && !hsm_open;
	int mask = 0;

	if ((flags & MDS_OF_CREAT) && S_ISDIR(in->in_mode))
		return -EISDIR;
	if ((flags & MDS_OF_DIRECTORY) && !S_ISDIR(in->in_mode))
		return -ENOTDIR;
	if (S_ISLNK(in->in_mode))
		return -ELOOP; /* the last component not followed: O_NOFOLLOW */
	if (S_ISDIR(in->in_mode) && (writer || (flags & MDS_OF_TRUNC)))
		return -EISDIR;
	if (flags & MDS_OF_EXEC) {
		/* do_open_execat(): MAY_EXEC, not MAY_READ, and only a regular file */
		if (!S_ISREG(in->in_mode))
			return -EACCES;
		mask |= MDS_MAY_EXEC;
	} else if (flags & MDS_OF_READ) {
		mask |= MDS_MAY_READ;
	}
	if ((flags & MDS_OF_WRITE) || (flags & MDS_OF_TRUNC))
		mask |= MDS_MAY_WRITE;
	int rc = mds_perm_check(cr, in, mask);
	if (rc)
		return rc;
	if (S_ISSOCK(in->in_mode))
		return -ENXIO; /* as Linux: a socket cannot be opened */
	if (!S_ISREG(in->in_mode))
		return 0;
	if (hsm_open)
		return 0; /* the copytool: no dirty marking, no times (mds/hsm.c) */
	bool dirty = false;
	int64_t now = ns_now_ns();
	/* what the objects may hold, before anything below changes it */
	bool had_data = in->in_size || in->in_blocks || (in->in_flags & MDS_INODE_F_SIZE_STALE);
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b)
		return -ENOMEM;
	if (writer && (in->in_flags & MDS_INODE_F_HSM)) {
		/* data_version, dirty; a truncated released file is emptied or -EAGAIN */
		rc = mds_hsm_on_modify(ns, b, in, flags & MDS_OF_TRUNC, 0);
		if (rc) {
			kv_batch_free(b);
			return rc;
		}
		dirty = true;
	}
	if (writer && !(in->in_flags & MDS_INODE_F_SIZE_STALE)) {
		/* a clean close not yet on disk hid the flag: it holds again */
		ns_clean_forget(ns, &in->in_fid);
		in->in_flags |= MDS_INODE_F_SIZE_STALE;
		dirty = true;
	}
	if (writer && (flags & MDS_OF_TRUNC)) {
		*truncated = had_data;
		in->in_size = 0;
		in->in_blocks = 0;
		in->in_mtime_ns = in->in_ctime_ns = now;
		in->in_mode &= ~mds_perm_write_kill_bits(cr, in);
		dirty = true;
	}
	if ((flags & MDS_OF_READ) && atime_due(in, now)) {
		in->in_atime_ns = now;
		dirty = true;
	}
	if (!dirty) {
		kv_batch_free(b);
		return 0;
	}
	ns_inode_put(b, in);
	return ns_batch_commit(ns, b);
}

int mds_ns_open_file(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		     const char *path, uint32_t flags, uint32_t mode,
		     const struct mds_layout_req *lr, mds_ost_chooser_t choose, void *choose_arg,
		     struct mds_inode *out, bool *created)
{
	bool writer = (flags & MDS_OF_WRITE) && !(flags & MDS_OF_HSM);
	bool excl = (flags & (MDS_OF_CREAT | MDS_OF_EXCL)) == (MDS_OF_CREAT | MDS_OF_EXCL);
	uint32_t rf = (excl || (flags & MDS_OF_NOFOLLOW)) ? 0 : NS_RES_FOLLOW;
	struct ns_res *r;
	int rc;

	*created = false;
	if ((flags & MDS_OF_CREAT) && (flags & MDS_OF_DIRECTORY))
		return -EINVAL; /* as Linux since 6.4, before the path is looked at */
	if ((flags & MDS_OF_EXEC) && (flags & (MDS_OF_WRITE | MDS_OF_CREAT | MDS_OF_TRUNC)))
		return -EINVAL; /* an exec open only reads an existing file */
	if (flags & MDS_OF_HSM) {
		/* the copytool's open of an existing file, as root */
		if (flags & (MDS_OF_CREAT | MDS_OF_TRUNC))
			return -EINVAL;
		if (!cr || cr->cr_uid != 0)
			return -EPERM;
	}
	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	struct ns_lockset ls;
	unsigned tries = 0;
	ns_ls_init(&ls);
	ns_change_lock(ns);
again:
	rc = ns_resolve(ns, cr, at, path, rf | ((flags & MDS_OF_CREAT) ? NS_RES_PARENT : 0), r);
	if (!rc && r->r_remote) /* a remote directory (docs/dne.md) */
		rc = (flags & MDS_OF_EXCL) ? -EEXIST : -EREMOTE;
	if (rc)
		goto out_unlock;
	if ((flags & MDS_OF_CREAT) && r->r_last == NS_LAST_NORM && r->r_slash) {
		rc = -EISDIR; /* open("name/", O_CREAT), existing or not */
		goto out_unlock;
	}
	if (!r->r_exists) {
		if (!(flags & MDS_OF_CREAT)) {
			rc = -ENOENT;
			goto out_unlock;
		}
		rc = mds_perm_may_create(cr, &r->r_dir);
		if (rc)
			goto out_unlock;
		rc = ns_name_lock(ns, &ls, r); /* still free? */
		if (rc == -EAGAIN && ns_retry(&tries, "open_create")) {
			ns_ls_release(ns, &ls);
			goto again; /* made meanwhile: open it, or -EEXIST */
		}
		if (rc)
			goto out_unlock;
		struct ns_new nn = {
			.nn_mode = S_IFREG | (mode & 07777),
			.nn_flags = writer ? MDS_INODE_F_SIZE_STALE : 0,
			.nn_lr = lr,
			.nn_choose = choose,
			.nn_choose_arg = choose_arg,
		};
		rc = ns_create_locked(ns, cr, &r->r_dir, r->r_name, r->r_nlen, &nn, &ls, out);
		if (rc)
			goto out_unlock;
		*created = true;
		rc = open_ref(ns, &out->in_fid, writer, false);
		if (!rc)
			ns_inode_cache(ns, out); /* for its close; dropped at the last one */
		goto out_unlock;
	}
	if (excl) {
		rc = -EEXIST;
		goto out_unlock;
	}
	/* the inode's lock, and its record read again under it */
	ns_ls_add_inode(&ls, &r->r_in.in_fid);
	ns_ls_lock(ns, &ls, NS_LOCK_INODE);
	rc = ns_inode_get(ns, &r->r_in.in_fid, out);
	if (rc == -ENOENT && ns_retry(&tries, "open")) {
		ns_ls_release(ns, &ls);
		goto again; /* its last name went and it was destroyed meanwhile */
	}
	if (rc)
		goto out_unlock;
	/* (a clean close not yet on disk does not count: lookups hide its flag) */
	bool inherited = writer && (out->in_flags & MDS_INODE_F_SIZE_STALE) &&
			 !(flags & MDS_OF_TRUNC);
	bool truncated = false;
	rc = open_existing(ns, cr, flags, out, &truncated);
	if (!rc)
		rc = open_ref(ns, &out->in_fid, writer, inherited);
	if (!rc && S_ISREG(out->in_mode))
		ns_inode_cache(ns, out); /* getattrs and the close read it again */
	if (!rc && truncated)
		out->in_flags |= MDS_INODE_F_TRUNCATED; /* for the reply only */
out_unlock:
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	free(r);
	return rc;
}

/* Apply what a writer reports to \a in; \return true if \a in changed. */
static bool write_report_apply(const struct mds_write_report *wr, int64_t times_ns,
			       struct mds_inode *in)
{
	bool dirty = false;
	if (!wr)
		return false;
	/*
	 * A report never shrinks the size: only a truncate (setattr, O_TRUNC)
	 * does. Two writers A and B: A glimpses, B writes more and closes, then
	 * A's older, smaller report arrives -- keeping the larger size keeps B's
	 * bytes visible. Blocks follow the newest report that is not behind.
	 */
	if (wr->wr_has_size && wr->wr_size >= in->in_size &&
	    (in->in_size != wr->wr_size || in->in_blocks != wr->wr_blocks)) {
		in->in_size = wr->wr_size;
		in->in_blocks = wr->wr_blocks;
		dirty = true;
	}
	/* the last write's time, unless times were set explicitly after it */
	int64_t t = wr->wr_mtime_ns;
	if (t > 0 && t > times_ns && t != in->in_mtime_ns) {
		in->in_mtime_ns = wr->wr_mtime_ns;
		if (in->in_ctime_ns < wr->wr_mtime_ns)
			in->in_ctime_ns = wr->wr_mtime_ns;
		dirty = true;
	}
	return dirty;
}

int ns_close_file(struct mds_ns *ns, const struct weir_fid *fid, bool was_writer,
		  const struct mds_write_report *wr, bool *queued)
{
	struct mds_write_report taken;
	struct open_left left;
	struct mds_inode in;
	int rc;

	if (queued)
		*queued = false;
	bool flush = false;
	struct ns_lockset ls;
	ns_ls_init(&ls);
	ns_ls_add_inode(&ls, fid);
	ns_change_lock(ns);
	ns_ls_lock(ns, &ls, NS_LOCK_INODE);
	/* a size glimpsed before a truncate that came since is not taken: the
	 * writer then knows no size, as when its glimpse failed */
	bool outdated = was_writer && report_outdated(ns, fid, wr);
	if (wr) {
		taken = *wr;
		taken.wr_has_size = wr->wr_has_size && !outdated;
		wr = &taken;
	}
	/* a writer that changed the data and reports no size (its glimpse
	 * failed, or is outdated): the MDS's size may be behind the OSTs */
	open_unref(ns, fid, was_writer,
		   was_writer && wr && (outdated || (wr->wr_mtime_ns && !wr->wr_has_size)), &left);
	rc = ns_inode_get(ns, fid, &in);
	if (rc) {
		if (rc == -ENOENT)
			rc = 0; /* a directory removed while open: nothing left to update */
		goto out_unlock;
	}
	bool dirty = was_writer && write_report_apply(wr, left.ol_times_ns, &in);
	/* a writer that reports no size knows nothing of bytes an earlier
	 * writer may have left on the OSTs (oe_size_unknown): then the flag
	 * stays, and stats keep glimpsing, until a close reports a size */
	bool clear = was_writer && left.ol_writers == 0 && (in.in_flags & MDS_INODE_F_SIZE_STALE) &&
		     (!left.ol_size_unknown || (wr && wr->wr_has_size));
	bool last_unlinked = left.ol_unlinked && left.ol_openers == 0;
	if (left.ol_openers == 0 && !S_ISDIR(in.in_mode))
		ns_inode_uncache(ns, fid); /* cached while open (mds_ns_open_file) */
	bool hsm_close = was_writer && left.ol_writers == 0 && ns->ns_hsm && !last_unlinked;
	if (clear)
		in.in_flags &= ~MDS_INODE_F_SIZE_STALE;
	if (clear && !dirty && !last_unlinked && !ns_clean_add(ns, &in)) {
		/* only the flag changes: in memory now, on disk with a group (ns_clean.c) */
		/* a full group: written under ns_lock for writing, after this */
		flush = atomic_load(&ns->ns_clean_nr) >= NS_CLEAN_BATCH;
		goto out_hsm;
	}
	if (!dirty && !clear && !last_unlinked)
		goto out_hsm; /* a reader's close writes nothing */
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	if (last_unlinked) {
		/* last close of an open-unlinked file: now its objects can go */
		ns_destroy_del(b, 'O', fid);
		if (ns_inode_has_objects(&in))
			ns_destroy_put(b, 'D', &in);
		rc = ns_inode_destroy(ns, b, fid);
	} else {
		ns_inode_put(b, &in);
	}
	if (rc) {
		kv_batch_free(b);
		goto out_unlock;
	}
	rc = ns_batch_commit(ns, b);
	if (rc)
		goto out_unlock;
	if (queued)
		*queued = last_unlinked && ns_inode_has_objects(&in);
out_hsm:
	if (hsm_close)
		mds_hsm_on_writer_close(ns, &in); /* auto-export; a waiting archive may go */
out_unlock:
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	if (flush)
		ns_clean_flush_group(ns);
	return rc;
}

int mds_ns_close_file(struct mds_ns *ns, const struct weir_fid *fid, bool was_writer,
		      const struct mds_write_report *wr)
{
	return ns_close_file(ns, fid, was_writer, wr, NULL);
}

int mds_ns_update_size(struct mds_ns *ns, const struct weir_fid *fid,
		       const struct mds_write_report *wr)
{
	struct mds_write_report taken;
	struct mds_inode in;
	struct ns_lockset ls;
	ns_ls_init(&ls);
	ns_ls_add_inode(&ls, fid);
	ns_change_lock(ns);
	ns_ls_lock(ns, &ls, NS_LOCK_INODE);
	if (report_outdated(ns, fid, wr)) {
		/* a truncate came after its glimpse: the mtime only */
		mds_ns_size_unknown(ns, fid);
		taken = *wr;
		taken.wr_has_size = false;
		wr = &taken;
	}
	int rc = ns_inode_get(ns, fid, &in);
	if (!rc && write_report_apply(wr, open_times_get(ns, fid), &in)) {
		struct kv_batch *b = kv_batch_new(ns->ns_kv);
		if (!b) {
			rc = -ENOMEM;
		} else {
			ns_inode_put(b, &in);
			rc = ns_batch_commit(ns, b);
		}
	}
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

/* ------------------------------------------------------------ lookups */

int mds_ns_lookup(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		  const char *path, uint32_t flags, struct mds_inode *out)
{
	pthread_rwlock_rdlock(&ns->ns_lock);
	int rc = ns_resolve_obj(ns, cr, at, path ? path : "", flags, out);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

int mds_ns_lookup_redirect(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
			   const char *path, uint32_t flags, struct mds_inode *out,
			   struct weir_fid *redir, char **rest, struct ns_walk *walk)
{
	*rest = NULL;
	struct ns_res *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	uint32_t rf = NS_RES_REDIRECT | ((flags & MDS_AT_NOFOLLOW) ? 0 : NS_RES_FOLLOW);
	pthread_rwlock_rdlock(&ns->ns_lock);
	int rc = ns_resolve_walk(ns, cr, at, path ? path : "", rf, r, walk);
	pthread_rwlock_unlock(&ns->ns_lock);
	if (rc == -EREMOTE && r->r_redir_rest) {
		*redir = r->r_redir;
		*rest = r->r_redir_rest;
		r->r_redir_rest = NULL;
		rc = 0;
	} else if (!rc && !r->r_exists) {
		rc = -ENOENT;
	} else if (!rc) {
		*out = r->r_in;
	}
	free(r->r_redir_rest);
	free(r);
	return rc;
}

int mds_ns_lookup_walk(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		       const char *path, uint32_t flags, struct mds_inode *out,
		       struct ns_walk *walk)
{
	if (!path)
		return mds_ns_lookup(ns, cr, at, path, flags, out);
	struct ns_res *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_rwlock_rdlock(&ns->ns_lock);
	int rc = ns_resolve_walk(ns, cr, at, path, (flags & MDS_AT_NOFOLLOW) ? 0 : NS_RES_FOLLOW, r,
				 walk);
	pthread_rwlock_unlock(&ns->ns_lock);
	if (!rc && !r->r_exists)
		rc = -ENOENT;
	if (!rc)
		*out = r->r_in;
	free(r);
	return rc;
}

int mds_ns_getattr(struct mds_ns *ns, const struct weir_fid *fid, struct mds_inode *out)
{
	pthread_rwlock_rdlock(&ns->ns_lock);
	int rc = ns_inode_get(ns, fid, out);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

int mds_ns_access(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		  const char *path, uint32_t mode, uint32_t flags)
{
	struct mds_inode in;
	if (mode & ~(uint32_t)7)
		return -EINVAL;
	pthread_rwlock_rdlock(&ns->ns_lock);
	int rc = ns_resolve_obj(ns, cr, at, path ? path : "", flags, &in);
	pthread_rwlock_unlock(&ns->ns_lock);
	if (rc || !mode)
		return rc;
	/* R_OK 4, W_OK 2, X_OK 1: the MAY_* values */
	return mds_perm_check(cr, &in, (int)mode);
}

/* ------------------------------------------------------------ readdir */

int mds_ns_readdir(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *dir,
		   uint64_t cookie, uint32_t max, struct mds_dirent *ents, uint32_t cap,
		   uint32_t *nr, bool *eof)
{
	struct mds_inode din;
	*nr = 0;
	*eof = false;
	pthread_rwlock_rdlock(&ns->ns_lock);
	int rc = ns_inode_get(ns, dir, &din);
	if (rc)
		goto out_unlock;
	if (!S_ISDIR(din.in_mode)) {
		rc = -ENOTDIR;
		goto out_unlock;
	}
	rc = mds_perm_check(cr, &din, MDS_MAY_READ);
	if (rc)
		goto out_unlock;
	struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_DENTRIES);
	if (!it) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	uint8_t key[24];
	weir_fid_pack_be(dir, key);
	weir_put_be64(key + 16, cookie >= (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : cookie + 1);
	kv_iter_seek(it, key, sizeof(key));
	uint64_t last_hash = 0;
	*eof = true;
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl < 24 || memcmp(k, key, 16))
			break;
		uint64_t h = weir_get_be64(k + 16);
		if (*nr >= max && h != last_hash) {
			*eof = false;
			break;
		}
		if (*nr >= cap) { /* a pathological run of equal hashes */
			*eof = false;
			break;
		}
		size_t nl = kl - 24;
		if (nl > NS_NAME_MAX) {
			rc = -EIO;
			break;
		}
		struct mds_dirent *de = &ents[*nr];
		const uint8_t *v = kv_iter_val(it, &vl);
		rc = mds_dentry_decode(v, vl, &de->de_fid, &de->de_type);
		if (rc)
			break;
		memcpy(de->de_name, k + 24, nl);
		de->de_name[nl] = 0;
		de->de_cookie = h;
		last_hash = h;
		(*nr)++;
	}
	kv_iter_free(it);
out_unlock:
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

/* ------------------------------------------------------------ layouts */

int mds_ns_set_layout(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		      const char *path, const struct mds_layout_req *lr, bool create,
		      uint32_t mode, mds_ost_chooser_t choose, void *choose_arg,
		      struct mds_inode *out)
{
	/* the request itself first, as a syscall checks its arguments */
	uint32_t sz = lr->lr_stripe_size;
	if (sz % WEIR_LAYOUT_STRIPE_ALIGN || sz > WEIR_LAYOUT_MAX_STRIPE_SIZE ||
	    (lr->lr_stripe_count > WEIR_LAYOUT_MAX_STRIPES && lr->lr_stripe_count != UINT32_MAX) ||
	    lr->lr_stripe_offset < -1)
		return -EINVAL;
	struct ns_res *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_rwlock_wrlock(&ns->ns_lock);
	int rc = ns_resolve(ns, cr, at, path, NS_RES_FOLLOW, r);
	if (rc)
		goto out_unlock;
	if (!r->r_exists) {
		if (!create) {
			rc = -ENOENT;
			goto out_unlock;
		}
		rc = mds_perm_may_create(cr, &r->r_dir);
		if (rc)
			goto out_unlock;
		struct ns_new nn = {
			.nn_mode = S_IFREG | ((mode ? mode : 0644) & 07777),
			.nn_lr = lr,
			.nn_choose = choose,
			.nn_choose_arg = choose_arg,
		};
		struct ns_lockset ls; /* never contended: ns_lock is held for writing */
		ns_ls_init(&ls);
		rc = ns_create_locked(ns, cr, &r->r_dir, r->r_name, r->r_nlen, &nn, &ls, out);
		ns_ls_release(ns, &ls);
		goto out_unlock;
	}
	*out = r->r_in;
	if (!S_ISDIR(out->in_mode)) {
		rc = -EEXIST;
		goto out_unlock;
	}
	if (!mds_perm_owner(cr, out)) {
		rc = -EPERM;
		goto out_unlock;
	}
	/* a directory: its default layout for new files; a first OST must exist */
	if (lr->lr_stripe_offset >= 0) {
		struct weir_layout probe = { .lo_stripe_count = 1 };
		rc = choose ? choose(choose_arg, &probe, lr->lr_stripe_offset) : -EINVAL;
		if (rc == -EINVAL)
			goto out_unlock;
		rc = 0; /* exists; whether it is up now matters only when a file is made */
	}
	if (lr->lr_stripe_count == 0 && sz == 0 && lr->lr_stripe_offset < 0) {
		out->in_has_layout = false;
		memset(&out->in_layout, 0, sizeof(out->in_layout));
	} else {
		out->in_has_layout = true;
		memset(&out->in_layout, 0, sizeof(out->in_layout));
		out->in_layout.lo_pattern = WEIR_LAYOUT_PATTERN_RAID0;
		out->in_layout.lo_stripe_size = sz;
		out->in_layout.lo_stripe_count = lr->lr_stripe_count;
		out->in_layout.lo_osts[0] = (uint32_t)lr->lr_stripe_offset;
	}
	out->in_ctime_ns = ns_now_ns();
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	ns_inode_put(b, out);
	rc = ns_batch_commit(ns, b);
out_unlock:
	pthread_rwlock_unlock(&ns->ns_lock);
	free(r);
	return rc;
}
