/*
 * mds/mds_int.h - private to mds/.
 */
#ifndef WEIR_MDS_INT_H
#define WEIR_MDS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "mds.h"
#include "mdlease.h"
#include "common/capa.h"

/* ------------------------------------------------------------ dtx.c: two-MDT changes */

struct kv_batch;
#define NS_DTX_MKDIR 1  /* = WEIR__DTX_OP__DTX_MKDIR */
#define NS_DTX_RMDIR 2  /* = WEIR__DTX_OP__DTX_RMDIR */
#define NS_DTX_LINK 3   /* = WEIR__DTX_OP__DTX_LINK */
#define NS_DTX_UNLINK 4 /* = WEIR__DTX_OP__DTX_UNLINK */
#define NS_DTX_RENAME 5 /* = WEIR__DTX_OP__DTX_RENAME */
/** One two-MDT change, as the namespace asks the coordinator (mds/dtx.c) for it. */
struct ns_dtx {
	uint32_t t_op;            /* NS_DTX_* */
	uint32_t t_mdt;           /* the participant: the MDT of the inode (RENAME: of the
				   * source name's directory) */
	uint64_t t_tx;            /* set by dx_prepare */
	struct weir_fid t_parent; /* MKDIR, RMDIR: the parent (here); RENAME: the source
				   * name's directory (the participant's) */
	struct weir_fid t_fid;    /* RMDIR, LINK, UNLINK: the inode; MKDIR, RENAME: set by
				   * dx_prepare */
	uint32_t t_mode, t_uid, t_gid; /* MKDIR: the new directory's; LINK, RENAME: the
					* caller's uid and gid (t_mode unused) */
	const struct mds_inode *t_pdir; /* MKDIR: the parent, whose default layout the
					 * new directory inherits */
	const struct mds_cred *t_cred; /* LINK, RENAME: the caller (its groups) */
	const char *t_name;       /* RENAME: the source name */
	size_t t_nlen;
	uint8_t t_type;           /* set by dx_prepare for RENAME: the name's DT_* */
	bool t_has_in;            /* set by dx_prepare: t_in holds the inode (RENAME: only
				   * when it is the participant's) */
	struct mds_inode t_in;    /* set by dx_prepare: the participant's inode */
};
struct ns_dtx_ops {
	int (*dx_prepare)(void *arg, struct ns_dtx *t);
	void (*dx_commit_rec)(void *arg, struct kv_batch *b, const struct ns_dtx *t);
	void (*dx_finish)(void *arg, const struct ns_dtx *t, bool committed);
};
/** Set the coordinator (before requests; NULL: remote directories refused). */
void mds_ns_dtx_set(struct mds_ns *ns, const struct ns_dtx_ops *ops, void *arg);
/**
 * mkdir of a directory whose inode MDT \a mdt holds (a remote directory;
 * \a mdt the MDT's own index: a plain mkdir). \return as mds_ns_mkdir(), and
 * -EINVAL (no such MDT), -EHOSTDOWN (it did not answer).
 */
int mds_ns_mkdir_remote(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
			const char *path, uint32_t mode, uint32_t mdt, struct mds_inode *out);
/**
 * The remote directory \a path names: its FID, S_IFDIR, nlink 2 (the rest of
 * its inode is on its MDT). \return 0, -EINVAL (a local object), -ENOENT,
 * and the path errors.
 */
int mds_ns_lookup_remote(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
			 const char *path, struct mds_inode *out);

/* ------------------------------------------------------------ kv.c: the only RocksDB caller */

enum kv_cf {
	KV_CF_DEFAULT = 0, /* filesystem records: version, FID high-water mark */
	KV_CF_INODES,      /* FID(16 BE) -> inode record */
	KV_CF_DENTRIES,    /* parent FID(16 BE) + name hash(8 BE) + name -> dentry record */
	KV_CF_XATTRS,      /* (later) FID + name -> value */
	KV_CF_DESTROY,     /* 'D'|'O' + FID -> destroy record (D ready, O orphan still open) */
	KV_CF_HSM,         /* HSM records, queued actions, DRAs (mds/hsm.h) */
	KV_CF_CHANGELOG,   /* (later) change log */
	KV_CF_CLUSTER,     /* cluster map: OST records */
	KV_CF_NR
};

struct kv;
struct kv_batch;
struct kv_iter;

int kv_open(const char *path, struct kv **out);
void kv_close(struct kv *kv);
/** \return value length (>= 0) copied into \a val (up to \a cap), -ENOENT, -EIO. */
ssize_t kv_get(struct kv *kv, enum kv_cf cf, const void *key, size_t klen, void *val, size_t cap);
struct kv_batch *kv_batch_new(struct kv *kv);
void kv_batch_put(struct kv_batch *b, enum kv_cf cf, const void *key, size_t klen,
		  const void *val, size_t vlen);
void kv_batch_del(struct kv_batch *b, enum kv_cf cf, const void *key, size_t klen);
/**
 * Write atomically to the memtable and the WAL file (not synced), then drop
 * the batch's keys from the read cache. \return 0 or -EIO.
 */
int kv_batch_commit(struct kv *kv, struct kv_batch *b);
void kv_batch_free(struct kv_batch *b);
/**
 * Note that \a b changes what a client may cache of \a fid (\a bits:
 * enum mdl_bits, mds/mdlease.h); kept for the commit's callbacks
 * (ns_batch_commit). Out of memory: the batch remembers it lost a note.
 */
void kv_batch_note(struct kv_batch *b, const struct weir_fid *fid, uint32_t bits);
/**
 * Have \a fn told, on the committing thread right after each batch that
 * changed something a client may cache (kv_batch_note), the FIDs and bits
 * it changed (\a lost: some notes were lost to a lack of memory). Set it
 * before serving.
 */
void mds_ns_on_change_set(struct mds_ns *ns,
			  void (*fn)(void *arg, const struct weir_fid *fids, const uint32_t *bits,
				     size_t nr, bool lost),
			  void *arg);
/** The notes of \a b: \return their number; \a fids and \a bits point into \a b; \a lost: a note was lost. */
size_t kv_batch_notes(const struct kv_batch *b, const struct weir_fid **fids,
		      const uint32_t **bits, bool *lost);
/** Sync the WAL to the device. \return 0 or -EIO. */
int kv_sync(struct kv *kv);
struct kv_iter *kv_iter_new(struct kv *kv, enum kv_cf cf);
void kv_iter_seek(struct kv_iter *it, const void *key, size_t klen);
bool kv_iter_valid(struct kv_iter *it);
const void *kv_iter_key(struct kv_iter *it, size_t *klen);
const void *kv_iter_val(struct kv_iter *it, size_t *vlen);
void kv_iter_next(struct kv_iter *it);
void kv_iter_free(struct kv_iter *it);
/**
 * The read cache (kv.c, top of file): a record of KV_CF_INODES or
 * KV_CF_DENTRIES the caller stored with kv_cache_put(). \a *gen is set on
 * every call, hit or miss: pass it to kv_cache_put() after reading RocksDB.
 * \return value length (copied up to \a cap), or -ENOENT (not cached).
 */
ssize_t kv_cache_get(struct kv *kv, enum kv_cf cf, const void *key, size_t klen, void *val,
		     size_t cap, uint64_t *gen);
/**
 * Cache a record just read from RocksDB, unless a commit touched the cache
 * since kv_cache_get() gave \a gen. Small records only (others are skipped).
 */
void kv_cache_put(struct kv *kv, enum kv_cf cf, const void *key, size_t klen, const void *val,
		  size_t vlen, uint64_t gen);
/**
 * The cache generation now: a writer holding the namespace lock for writing
 * passes it to kv_cache_put() to store a record it has just committed.
 */
uint64_t kv_cache_gen(struct kv *kv);
/** Forget (cf, key) in the read cache (it stays valid in RocksDB). */
void kv_cache_drop(struct kv *kv, enum kv_cf cf, const void *key, size_t klen);
/** The hash kv.c keeps of (cf, key) for the cache and the commit hook; never 0. */
uint64_t kv_key_hash(enum kv_cf cf, const void *key, size_t klen);
/**
 * Called by kv_batch_commit() after every write (done or failed) that put or
 * deleted keys of KV_CF_INODES or KV_CF_DENTRIES, with their kv_key_hash()es
 * (\a all: too many to list, assume every key). Runs on the committing
 * thread; must not commit.
 */
typedef void (*kv_commit_hook_t)(void *arg, const uint64_t *hashes, size_t n, bool all);
void kv_set_commit_hook(struct kv *kv, kv_commit_hook_t fn, void *arg);
/** RocksDB's estimate of keys in \a cf. */
uint64_t kv_estimate_keys(struct kv *kv, enum kv_cf cf);
/** Log RocksDB's memory in use now (memtables, block cache, table readers). */
void kv_log_memory(struct kv *kv);
/** Compact all of \a cf (drops the tombstones of deleted keys); waits for it. \return 0. */
int kv_compact(struct kv *kv, enum kv_cf cf);

/* ------------------------------------------------------------ inode.c: disk records */

#define MDS_INODE_REC_VERSION 1
#define MDS_INODE_REC_FIXED 96 /* bytes before the layout's OST list */
#define MDS_INODE_REC_MAX (MDS_INODE_REC_FIXED + 4 * WEIR_LAYOUT_MAX_STRIPES)
#define MDS_DENTRY_REC_VERSION 1
#define MDS_DENTRY_REC_SIZE 20
#define MDS_DENTRY_KEY_MAX (16 + 8 + 255)

/** Encode \a in into \a buf (MDS_INODE_REC_MAX bytes). \return bytes used. */
size_t mds_inode_encode(const struct mds_inode *in, uint8_t *buf);
/** Decode; -EIO (logged) when the record is corrupt or of an unknown version. */
int mds_inode_decode(const struct weir_fid *fid, const uint8_t *buf, size_t len,
		     struct mds_inode *in);
void mds_dentry_encode(const struct weir_fid *fid, uint8_t type, uint8_t buf[MDS_DENTRY_REC_SIZE]);
int mds_dentry_decode(const uint8_t *buf, size_t len, struct weir_fid *fid, uint8_t *type);
/** Dentry key of (parent, name). \return key length. */
size_t mds_dentry_key(const struct weir_fid *parent, const char *name, size_t nlen, uint8_t *key);

/* ------------------------------------------------------------ ns.c internals */

/* ------------------------------------------------------------ ns_lock.c: fine-grained locks */

#define NS_LOCK_SLOTS 4096  /* mutexes per class */
#define NS_LOCKSET_MAX 8    /* locks of one class an operation takes */
#define NS_LOCK_CLASSES 2
/** Lock classes, taken in this order (mds/ns_lock.c, docs/lock-ordering.md). */
enum ns_lock_class {
	NS_LOCK_NAME = 0,  /* a (directory, name): the dentry */
	NS_LOCK_INODE = 1, /* an inode record (read-modify-write) */
};
struct ns_lock_slot {
	pthread_mutex_t nl_mutex;
} __attribute__((aligned(64)));
/** The locks of one operation (on the stack; ns_ls_init() first). */
struct ns_lockset {
	uint16_t ls_slot[NS_LOCK_CLASSES][NS_LOCKSET_MAX];
	uint8_t ls_nr[NS_LOCK_CLASSES];
	bool ls_held[NS_LOCK_CLASSES];
};
struct mds_ns;
/** Allocate the tables (mds_ns_open). \return 0 or -ENOMEM. */
int ns_locks_init(struct mds_ns *ns);
void ns_locks_fini(struct mds_ns *ns);
void ns_ls_init(struct ns_lockset *ls);
/** Add the name lock of (\a dir, \a name); before ns_ls_lock(NS_LOCK_NAME). */
void ns_ls_add_name(struct ns_lockset *ls, const struct weir_fid *dir, const char *name,
		    size_t nlen);
/** Add the inode lock of \a fid; before ns_ls_lock(NS_LOCK_INODE). */
void ns_ls_add_inode(struct ns_lockset *ls, const struct weir_fid *fid);
/**
 * Take every lock of class \a c in \a ls, in ascending slot order. The
 * thread must hold no lock of class \a c or a later one (asserted). Blocks.
 */
void ns_ls_lock(struct mds_ns *ns, struct ns_lockset *ls, enum ns_lock_class c);
/** Release class \a c's locks of \a ls if held (the set keeps its slots). */
void ns_ls_unlock(struct mds_ns *ns, struct ns_lockset *ls, enum ns_lock_class c);
/** Release everything held and empty \a ls (for another round). */
void ns_ls_release(struct mds_ns *ns, struct ns_lockset *ls);
/**
 * ns_lock for a namespace change that takes name and inode locks: for
 * reading, or for writing with --pdirops 0 (every change alone, as before
 * pdirops: a fallback and the benchmark's reference). Released with
 * pthread_rwlock_unlock().
 */
void ns_change_lock(struct mds_ns *ns);

struct mds_ns {
	struct kv *ns_kv;
	/* fine-grained locks (ns_lock.c): [NS_LOCK_NAME], [NS_LOCK_INODE] */
	struct ns_lock_slot *ns_locks[NS_LOCK_CLASSES];
	struct mds_ns_conf ns_conf;
	/* converted operations (pdirops, ns_lock.c) and lookups: read; the others: write */
	pthread_rwlock_t ns_lock;
	pthread_mutex_t ns_fid_lock;   /* FID allocation */
	uint64_t ns_next_oid;
	uint64_t ns_oid_hw;            /* persisted high-water mark */
	/* the transno of the last committed batch (persisted in it: NS_KEY_LAST_TRANSNO);
	 * written under ns_txn_lock, read anywhere */
	atomic_uint_fast64_t ns_write_seq;
	pthread_mutex_t ns_txn_lock;   /* numbers and commits a batch; a leaf but RocksDB */
	uint64_t ns_boot_transno;      /* ns_write_seq at open: what survived the last run */
	pthread_mutex_t ns_open_lock;  /* open-count table */
	struct mds_open_ent **ns_open_tab;
	size_t ns_open_buckets;
	atomic_uint_least64_t ns_epoch_seq; /* truncate epochs; starts at the wall clock (ns) */
	struct mds_hsm *ns_hsm;        /* the HSM coordinator (mds/hsm.c), NULL when not started */
	/* closes whose SIZE_STALE clear is not on disk yet (ns_clean.c) */
	pthread_mutex_t ns_clean_lock;
	struct ns_clean_ent **ns_clean_tab;
	atomic_size_t ns_clean_nr;
	size_t ns_clean_cursor;
	/* told after every committed batch what it changed (mds_ns_on_change_set) */
	void (*ns_on_change)(void *arg, const struct weir_fid *fids, const uint32_t *bits,
			     size_t nr, bool lost);
	void *ns_on_change_arg;
	/* two-MDT changes (mds/dtx.c): set once before requests, NULL: none */
	const struct ns_dtx_ops *ns_dtx;
	void *ns_dtx_arg;
	/* holds of two-MDT changes this MDT takes part in (ns_held()) */
	atomic_uint ns_holds;
};

/* keys of the default column family, and the FID reservation chunk */
#define NS_KEY_FS_VERSION "fs_version"
#define NS_KEY_OID_HW "fid_oid_hw"
/* u32 LE: the MDT index given at format (absent in MDTs formatted before issue 16: 0) */
#define NS_KEY_MDT_INDEX "mdt_index"
/* le64: the transno of the last batch (every batch writes it: ns_batch_commit) */
#define NS_KEY_LAST_TRANSNO "last_transno"
/* le64: while a recovery window is open, the boot transno of the run that opened it (a
 * restart within the window keeps it: what was re-run since may be lost again) */
#define NS_KEY_RECOV_FLOOR "recovery_floor"
#define NS_FS_VERSION 1
#define NS_FID_CHUNK 4096 /* FIDs reserved per persisted high-water mark */

#define NS_NAME_MAX 255
#define NS_PATH_MAX 4095

/* record helpers shared by the ns*.c files (ns.c) */
int ns_inode_get(struct mds_ns *ns, const struct weir_fid *fid, struct mds_inode *in);
/** ns_inode_get() from RocksDB, not from kv.c's read cache (a lock-free walk's second look). */
int ns_inode_get_fresh(struct mds_ns *ns, const struct weir_fid *fid, struct mds_inode *in);
void ns_inode_put(struct kv_batch *b, const struct mds_inode *in);
/**
 * Keep \a in, just committed, in kv.c's read cache; only with its inode lock
 * (or ns_lock for writing) held since before the commit (no other write of
 * it in between).
 */
void ns_inode_cache(struct mds_ns *ns, const struct mds_inode *in);
/** Forget \a fid's record in kv.c's read cache. */
void ns_inode_uncache(struct mds_ns *ns, const struct weir_fid *fid);
void ns_inode_del(struct kv_batch *b, const struct weir_fid *fid);
/**
 * Under the name lock of \a r's last component: is the dentry still what the
 * walk found (absent, or naming r_in)? \return 0, -EAGAIN (changed: release
 * the locks and walk again), or a read error.
 */
struct ns_res;
int ns_name_recheck(struct mds_ns *ns, const struct ns_res *r);
/**
 * Add the name lock of \a r's last component to \a ls, take the set's name
 * locks (none held yet) and ns_name_recheck(). \return as ns_name_recheck();
 * the locks stay held in every case (the caller releases \a ls).
 */
int ns_name_lock(struct mds_ns *ns, struct ns_lockset *ls, const struct ns_res *r);
/**
 * ns_resolve_obj(), then the object's inode lock (added to \a ls and taken:
 * the caller holds ns_lock for reading and no inode lock) and its record
 * read again under it into \a in. A path whose object was destroyed
 * meanwhile is walked again. \return as ns_resolve_obj(); -EAGAIN after
 * NS_RETRY_MAX walks. The caller releases \a ls (ns_ls_release) in every case.
 */
int ns_resolve_obj_locked(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
			  const char *path, uint32_t at_flags, struct mds_inode *in,
			  struct ns_lockset *ls);
#define NS_RETRY_MAX 1000
/**
 * Count one more walk of \a op after a change under it (in \a *tries). \return true while
 * under NS_RETRY_MAX; false (logged, rate-limited) when the caller should
 * give up with -EAGAIN (names that change without end under the walk).
 */
bool ns_retry(unsigned *tries, const char *op);
/** Has \a in OST objects to destroy? (A directory's layout is only a default.) */
static inline bool ns_inode_has_objects(const struct mds_inode *in)
{
	return in->in_has_layout && !S_ISDIR(in->in_mode);
}
/** Delete an inode for good in \a b: its record, its xattrs and symlink target. */
int ns_inode_destroy(struct mds_ns *ns, struct kv_batch *b, const struct weir_fid *fid);
int ns_dentry_get(struct mds_ns *ns, const struct weir_fid *parent, const char *name,
		  size_t nlen, struct weir_fid *fid, uint8_t *type);
/** ns_dentry_get() from RocksDB, not from kv.c's read cache. */
int ns_dentry_get_fresh(struct mds_ns *ns, const struct weir_fid *parent, const char *name,
			size_t nlen, struct weir_fid *fid, uint8_t *type);
void ns_dentry_put(struct kv_batch *b, const struct weir_fid *parent, const char *name,
		   size_t nlen, const struct weir_fid *fid, uint8_t type);
void ns_dentry_del(struct kv_batch *b, const struct weir_fid *parent, const char *name,
		   size_t nlen);
uint8_t ns_mode_to_dt(uint32_t mode);
/** Destroy-queue records: kind 'D' (objects to destroy) or 'O' (orphan, still open). */
void ns_destroy_put(struct kv_batch *b, char kind, const struct mds_inode *in);
void ns_destroy_del(struct kv_batch *b, char kind, const struct weir_fid *fid);
/** Commit and free \a b; counts a write. \return 0 or -EIO. */
int ns_batch_commit(struct mds_ns *ns, struct kv_batch *b);
void ns_inode_new(struct mds_inode *in, const struct weir_fid *fid, uint32_t mode);
int64_t ns_now_ns(void);
/**
 * A new FID for an inode. Every NS_FID_CHUNK FIDs it first persists and syncs
 * a new high-water mark (so no FID is ever handed out twice, even across a
 * crash of the host). \return 0, or -EIO/-ENOSPC/-ENOMEM when the mark
 * could not be made durable (no FID).
 */
int ns_fid_alloc(struct mds_ns *ns, struct weir_fid *fid);
/** A non-directory lost one name in \a b: one link less, or released at the last. */
int ns_inode_unlink(struct mds_ns *ns, struct kv_batch *b, struct mds_inode *in, int64_t now);
/**
 * An empty directory lost its name in \a b (rmdir, or replaced by rename):
 * st_nlink 0, and kept as an orphan while some handle has it open (fstat
 * still answers; nothing can be created in it), else destroyed.
 */
int ns_dir_release(struct mds_ns *ns, struct kv_batch *b, struct mds_inode *in, int64_t now);
int ns_dir_is_empty(struct mds_ns *ns, const struct weir_fid *dir, bool *empty);
/** may_linkat() (fs.protected_hardlinks = 1): may \a cr link \a in? \return 0 or -EPERM. */
int ns_may_linkat(const struct mds_cred *cr, const struct mds_inode *in);
/*
 * Holds of a two-MDT change's participant (mds/dtx.c): between its PREPARE
 * and its RESOLVE the participant keeps what it promised. A directory held
 * (DTX_RMDIR: checked empty) takes no new name: ns_dir_dead() says it is
 * removed. A name held (DTX_RENAME: moving to another MDT) is not changed
 * here: ns_name_recheck() answers -EBUSY. Each hold is a key of the default
 * column family ("dth" + directory FID [+ name]), written in the batch of
 * the participant's record, so it outlives a restart; ns_holds counts them,
 * so that the checks read nothing while there is none.
 */
#define NS_HOLD_KEY_MAX (3 + WEIR_FID_BYTES + 256)
/** The hold key of \a dir (\a nlen 0) or of its name \a name into \a key. \return its length. */
size_t ns_hold_key(const struct weir_fid *dir, const char *name, size_t nlen, uint8_t *key);
/** Put (\a on) or delete the hold of \a dir [\a name] in \a b. */
void ns_hold_set(struct kv_batch *b, const struct weir_fid *dir, const char *name, size_t nlen,
		 bool on);
/** Is \a dir [\a name] held? (Reads the key only while some hold exists.) */
bool ns_held(struct mds_ns *ns, const struct weir_fid *dir, const char *name, size_t nlen);
/** Is the hold key of \a dir [\a name] there (read whatever ns_holds says)? */
bool ns_hold_present(struct mds_ns *ns, const struct weir_fid *dir, const char *name, size_t nlen);
/** One hold fewer in ns_holds (never below 0: a record written before holds had none). */
void ns_hold_dropped(struct mds_ns *ns);
/** Under its inode lock: is directory \a dir removed (st_nlink 0) or held for an rmdir? */
bool ns_dir_dead(struct mds_ns *ns, const struct mds_inode *dir);
/** Is directory \a dir \a top or inside its subtree? */
int ns_is_within(struct mds_ns *ns, const struct weir_fid *dir, const struct weir_fid *top,
		 bool *within);
/** Note that times of \a fid were set explicitly now (a writer's close must not undo it). */
void ns_open_times_set(struct mds_ns *ns, const struct weir_fid *fid, int64_t now);
/** Handles open on \a fid now (HSM: archive and release checks). Takes ns_open_lock. */
/*
 * A truncate of \a fid (setattr of the size): give its open entry, if any,
 * a new truncate epoch so size reports glimpsed before it are not taken
 * (mds_ns_size_epoch). Caller holds ns_lock for writing.
 */
void ns_size_epoch_bump(struct mds_ns *ns, const struct weir_fid *fid);
void ns_open_counts(struct mds_ns *ns, const struct weir_fid *fid, uint32_t *openers,
		    uint32_t *writers);

/** What to create (ns_create_locked). */
struct ns_new {
	uint32_t nn_mode;          /* S_IFMT | permission bits, already masked for the call */
	uint64_t nn_rdev;          /* devices */
	const char *nn_target;     /* symlinks: the target, nn_tlen bytes */
	size_t nn_tlen;
	uint32_t nn_flags;         /* MDS_INODE_F_* of a new file */
	const struct mds_layout_req *nn_lr; /* regular files */
	mds_ost_chooser_t nn_choose;
	void *nn_choose_arg;
	/* HSM import: size and mtime of the new file, and more records for its batch */
	uint64_t nn_size;
	int64_t nn_mtime_ns;       /* 0: now */
	void (*nn_extra)(void *arg, struct kv_batch *b, const struct mds_inode *in);
	void *nn_extra_arg;
	/* 1 + the MDT that makes a new directory's inode (a remote directory:
	 * mds_ns_mkdir_remote); 0: this MDT */
	uint32_t nn_remote_mdt1;
};
/**
 * Create (dir, name) -> a new inode in one batch. The caller holds ns_lock
 * (for reading: with the name's lock in \a ls, held since it found the name
 * free; or for writing) and has checked the permission on its copy of \a dir.
 * Takes the inode locks of \a dir and of the new FID into \a ls (the caller
 * releases them with ns_ls_release(), after what it does with the new inode:
 * its open count, its cache entry), reads \a dir again under its lock
 * (-ENOENT when removed since the walk) and checks may_create on it again.
 * Owner: the caller's uid, gid (the directory's when it is setgid; then new
 * directories get S_ISGID too, and a non-member's S_ISGID is dropped from
 * files). Updates \a dir (nlink, times) in memory and on disk.
 */
int ns_create_locked(struct mds_ns *ns, const struct mds_cred *cr, struct mds_inode *dir,
		     const char *name, size_t nlen, const struct ns_new *nn,
		     struct ns_lockset *ls, struct mds_inode *out);

/* ------------------------------------------------------------ ns_clean.c: deferred flag clears */

#define NS_CLEAN_BATCH 64  /* flag clears per batch written */
#define NS_CLEAN_MAX 4096  /* FIDs held at most; beyond, a close writes its own batch */

int ns_clean_init(struct mds_ns *ns);
void ns_clean_fini(struct mds_ns *ns);
/** Did \a fid's last writer close clean, with the flag not yet cleared on disk? */
bool ns_clean_is(struct mds_ns *ns, const struct weir_fid *fid);
/**
 * Note a clean last close of \a in, whose record on disk is \a in with
 * SIZE_STALE set (its inode lock held). \return 0, -ENOSPC, -ENOMEM.
 */
int ns_clean_add(struct mds_ns *ns, const struct mds_inode *in);
/** \a fid is being opened for writing (its inode lock held): no longer clean. */
void ns_clean_forget(struct mds_ns *ns, const struct weir_fid *fid);
/**
 * Clear on disk the flags of up to \a max (at most NS_CLEAN_BATCH) FIDs of
 * the set, in one batch; ns_lock held for writing. \return flags cleared, or -errno.
 */
int ns_clean_flush_locked(struct mds_ns *ns, size_t max);
/**
 * Write one full group of clean flags (NS_CLEAN_BATCH) if there is one,
 * taking ns_lock for writing: the caller holds no namespace lock. (A close
 * that fills a group calls it after releasing its locks.)
 */
void ns_clean_flush_group(struct mds_ns *ns);
/** Close of a file handle (mds_ns_close_file); \a *queued: objects were queued for destroy. */
int ns_close_file(struct mds_ns *ns, const struct weir_fid *fid, bool was_writer,
		  const struct mds_write_report *wr, bool *queued);

/* ------------------------------------------------------------ ns_walk.c: path resolution */

enum ns_last {
	NS_LAST_NORM,   /* a name */
	NS_LAST_ROOT,   /* no name at all: "/", or "" from a directory handle */
	NS_LAST_DOT,    /* "." */
	NS_LAST_DOTDOT, /* ".." */
};

#define NS_RES_FOLLOW 0x1u /* follow a symlink in the last component */
#define NS_RES_PARENT 0x2u /* create/remove calls: a trailing slash does not follow */
#define NS_RES_REDIRECT 0x4u /* -EREMOTE: copy the rest of the path (r_redir_rest) */

/** Result of ns_resolve(). */
struct ns_res {
	struct mds_inode r_dir;   /* the directory holding the last component */
	char r_name[NS_NAME_MAX + 1]; /* the last component (NS_LAST_NORM) */
	size_t r_nlen;
	enum ns_last r_last;
	bool r_slash;             /* the path ended with '/' */
	bool r_exists;            /* r_in is the object */
	bool r_remote;            /* (NS_RES_PARENT) the last component's inode is on another
				   * MDT (a remote directory): r_in holds only its FID and
				   * S_IFDIR; the walk says -EREMOTE for any other use */
	struct mds_inode r_in;
	uint8_t r_type;           /* DT_* of the dentry */
	struct weir_fid r_redir;  /* -EREMOTE: the other MDT's FID where the walk goes on (a
				   * remote directory, the parent of this MDT's top one, or
				   * the root) */
	char *r_redir_rest;       /* -EREMOTE with NS_RES_REDIRECT: the rest of the path from
				   * r_redir, no leading '/' ("": r_redir itself); malloc'd,
				   * the caller frees it; NULL otherwise */
};

/* The names a successful walk went through (ns_resolve_walk), for the
 * client's cache of paths (AttrRep.walk). */
#define NS_WALK_MAX 32
struct ns_walk_step {
	struct mds_inode ws_dir;      /* the directory searched (the caller could search it) */
	char ws_name[NS_NAME_MAX + 1];
	struct weir_fid ws_child;
	uint8_t ws_type;              /* DT_* */
};
struct ns_walk {
	uint32_t w_nr;
	bool w_broken; /* a symlink followed, ".", "..", or over NS_WALK_MAX: no walk */
	struct ns_walk_step w_steps[NS_WALK_MAX];
};

/**
 * Resolve \a path from \a at (NS_RES_* \a flags), checking search permission
 * of every directory on the way, following symlinks in every component but
 * the last (that one with NS_RES_FOLLOW, or with a trailing slash unless
 * NS_RES_PARENT). A missing last component is not an error (r_exists false);
 * a non-directory reached with a trailing slash is -ENOTDIR (unless
 * NS_RES_PARENT). Caller holds ns_lock.
 */
int ns_resolve(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
	       const char *path, uint32_t flags, struct ns_res *r);
/** ns_resolve(), recording each name found in \a w (w_nr 0 and w_broken false first). */
int ns_resolve_walk(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		    const char *path, uint32_t flags, struct ns_res *r, struct ns_walk *w);
/**
 * The object of an attribute call: \a path from \a at (\a at_flags:
 * MDS_AT_NOFOLLOW) as lookup() resolves it, or, with \a path NULL, inode \a at.
 */
int ns_resolve_obj(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		   const char *path, uint32_t at_flags, struct mds_inode *in);

/* ------------------------------------------------------------ perm.c: POSIX permissions */

bool mds_cred_is_root(const struct mds_cred *cr);
uint32_t mds_cred_uid(const struct mds_cred *cr);
uint32_t mds_cred_gid(const struct mds_cred *cr);
/** Is \a gid the caller's gid or one of its groups? */
bool mds_cred_in_group(const struct mds_cred *cr, uint32_t gid);
/** generic_permission(): \a mask of MDS_MAY_*. \return 0 or -EACCES. */
int mds_perm_check(const struct mds_cred *cr, const struct mds_inode *in, int mask);
/**
 * The setuid/setgid bits a write, truncate or chown by \a cr takes from \a in
 * (fs/attr.c: setattr_should_drop_suidgid without its CAP_FSETID test, which
 * the callers make): S_ISUID; S_ISGID when group-exec is set, or when \a cr
 * is neither root nor in the file's group (Linux 6.2+, setattr_should_drop_sgid).
 */
uint32_t mds_perm_kill_bits(const struct mds_cred *cr, const struct mds_inode *in);
/** What a write or truncate by \a cr drops (file_remove_privs): none for root
 * (CAP_FSETID) or a non-regular file, else mds_perm_kill_bits(). */
uint32_t mds_perm_write_kill_bits(const struct mds_cred *cr, const struct mds_inode *in);
/** The owner, or root (inode_owner_or_capable). */
bool mds_perm_owner(const struct mds_cred *cr, const struct mds_inode *in);
/** may_create: w+x on \a dir. \return 0 or -EACCES. */
int mds_perm_may_create(const struct mds_cred *cr, const struct mds_inode *dir);
/**
 * may_delete: w+x on \a dir, then the sticky rule (-EPERM), then the type:
 * \a is_dir asks a directory (-ENOTDIR), else a non-directory (-EISDIR).
 */
int mds_perm_may_delete(const struct mds_cred *cr, const struct mds_inode *dir,
			const struct mds_inode *victim, bool is_dir);

/* ------------------------------------------------------------ xattr.c: xattrs CF */

/** The target of symlink \a fid into \a buf (\a cap bytes, NUL added). \return 0, -EIO. */
int ns_symlink_get(struct mds_ns *ns, const struct weir_fid *fid, char *buf, size_t cap,
		   size_t *len);
void ns_symlink_put(struct kv_batch *b, const struct weir_fid *fid, const char *target,
		    size_t len);
/** Delete every key of \a fid in the xattrs CF (xattrs, symlink target) in \a b. */
int ns_xattrs_del_all(struct mds_ns *ns, struct kv_batch *b, const struct weir_fid *fid);

struct mds_open_ent {
	struct weir_fid oe_fid;
	uint32_t oe_openers;
	uint32_t oe_writers;
	bool oe_unlinked;
	/* the size on the OSTs may exceed the MDS's: SIZE_STALE was already set
	 * when the first writer of this run opened it (a writer of an earlier
	 * run, before a restart), or an evicted writer could not be glimpsed;
	 * then only a close that reports a size may clear the flag */
	bool oe_size_unknown;
	int64_t oe_times_ns;  /* MDS clock of the last explicit setattr of times while open */
	/* the truncate epoch (ns_size_epoch_bump): a new value from
	 * ns_epoch_seq when the entry is made and at every truncate; a
	 * writer's size report glimpsed under another epoch is not taken */
	uint64_t oe_size_epoch;
	struct mds_open_ent *oe_next;
};

#endif /* WEIR_MDS_INT_H */

/* ------------------------------------------------------------ the server (svc.c, cmap.c, commit.c, destroy.c) */

#include "net/net.h"

#define MDS_MAX_OSTS 1024
#define MDS_UUID_MAX 64
#define MDS_ADDR_MAX 128

struct mds_ost {
	bool mo_exists;
	char mo_uuid[MDS_UUID_MAX];
	char mo_addr[MDS_ADDR_MAX];
	bool mo_bound;            /* mo_secret_sha is the OST's (bound at its first registration) */
	uint8_t mo_secret_sha[32]; /* SHA-256 of the OST's secret (OstReg.secret) */
	uint64_t mo_total;       /* bytes */
	uint64_t mo_free;        /* bytes */
	uint64_t mo_avail;       /* bytes */
	uint64_t mo_files;
	uint64_t mo_files_free;
	uint64_t mo_fs_id;        /* its filesystem on the OSS's host (OstReg.fs_id); 0 unknown */
	uint64_t mo_seen_mono_ns; /* 0: not heard from since start */
	bool mo_from_mdt;         /* in the map the MDT held at start (creates wait for it: cmap.c) */
	int64_t mo_seen_wall_ns;
	uint32_t mo_throttle_ms;  /* HSM policy: writers' delay per write, sent with the heartbeat */
};

/** A target's space and inode figures (bytes; inodes), as statfs reports them. */
struct mds_space {
	uint64_t sp_total, sp_free, sp_avail, sp_files, sp_files_free;
};

/** One MDT in the cluster map (mdt_reg.c). */
struct mds_mdt {
	bool mm_exists;
	char mm_uuid[40];
	char mm_addr[MDS_ADDR_MAX];
	uint8_t mm_secret_sha[32];  /* SHA-256 of its secret (MdtRegisterReq.secret) */
	uint64_t mm_seen_mono_ns;   /* 0: not heard from since start */
	int64_t mm_seen_wall_ns;
	struct mds_space mm_space;  /* as its last heartbeat said */
	bool mm_recovering;
	bool mm_up;                 /* MDT k > 0's copy: as MDT0 last said */
};

struct mds_sync_waiter {
	struct net_req *sw_rq;
	uint64_t sw_seq;
	struct mds_sync_waiter *sw_next;
};

struct mds_handle {
	uint64_t h_id;
	struct weir_fid h_fid;
	bool h_writer;
	uint32_t h_rights;  /* the OST capability rights of the open (capa.c) */
	uint64_t h_session; /* 0: opened without a session (never evicted) */
	struct mds_handle *h_next;
};

#define MDS_HANDLE_BUCKETS 4096

/** A client mount's session (lease.c). */
struct mds_session {
	uint64_t se_id;
	uint64_t se_expire_ns;  /* monotonic; the lease ends then unless renewed */
	char se_peer[64];
	char se_name[64];
	struct mds_session *se_next;
};

#define MDS_SESSION_BUCKETS 256

struct mds {
	struct mds_conf m_conf;
	/* OST capabilities (capa.c): set at start */
	bool m_capa_on;
	struct weir_capa_key m_capa_key; /* its generation is ck_gen */
	struct mds_ns *m_ns;
	struct mds_nodemap *m_nodemap; /* the node map (nodemap.c): read-only once started */
	struct net_server *m_srv;
	int64_t m_boot_ns;
	uint16_t m_port_bound;    /* the listening port (known before the loops start) */
	atomic_bool m_stop;
	/* cluster map (cmap.c) */
	pthread_mutex_t m_cmap_lock;
	struct mds_ost *m_osts;   /* MDS_MAX_OSTS slots, by index */
	uint32_t m_osts_end;      /* one past the highest index that ever existed */
	uint64_t m_cmap_gen;
	uint32_t m_rr;            /* round-robin start for new layouts */
	/* MDTs (mdt_reg.c), under m_cmap_lock: on MDT0 the registered ones; on an
	 * MDT k > 0 the copy of MDT0's list its last registration brought */
	struct mds_mdt *m_mdts;   /* WEIR_MDT_MAX slots, by index */
	/* MDT k > 0: the registration with MDT0 (mdt_reg.c, thread "mds-mgc") */
	pthread_t m_mgc_thread;
	bool m_mgc_running;
	pthread_mutex_t m_mgc_lock;  /* m_mgc_stop and its condition (a leaf) */
	pthread_cond_t m_mgc_cond;
	bool m_mgc_stop;
	uint8_t m_mgc_capa_key[WEIR_CAPA_KEY_LEN]; /* from the first registration */
	uint32_t m_mgc_capa_gen;  /* 0: none (MDT0 runs --insecure) */
	_Atomic uint32_t m_mgc_period_ms; /* the heartbeat MDT0 asked for; 0: not said */
	char m_mdt_addr[MDS_ADDR_MAX]; /* HOST:PORT sent to MDT0 (--advertise or the listen host) */
	char m_mdt_uuid[40];      /* this MDT's uuid (kept in it: "mdtident") */
	/* two-MDT changes (dtx.c) */
	pthread_mutex_t m_dtx_lock;  /* the fields below; a leaf */
	pthread_cond_t m_dtx_cond;
	bool m_dtx_kick, m_dtx_stop, m_dtx_running, m_dtx_inited;
	pthread_t m_dtx_thread;
	uint64_t *m_dtx_inflight;    /* txs a request is working on (the thread skips them) */
	struct net_conn **m_dtx_conn; /* WEIR_MDT_MAX cached connections to the other MDTs */
	char (*m_dtx_addr)[MDS_ADDR_MAX]; /* ... and the address each was opened to */
	uint64_t m_dtx_floor;        /* tx ids below it are covered by the persisted floor */
	_Atomic uint64_t m_dtx_next; /* the next tx id */
	uint8_t m_mdt_secret[32]; /* ... and its secret */
	/* creates parked while the OSTs of the map re-register after a start (cmap.c) */
	uint64_t m_cmap_wait_end_ns;       /* monotonic: start + mc_ost_timeout_s (at most
					    * MDS_CMAP_WAIT_MAX_S) */
	pthread_mutex_t m_cmap_park_lock;  /* the list and the thread's flags (a leaf) */
	pthread_cond_t m_cmap_park_cond;
	struct mds_cmap_park *m_cmap_parked;
	pthread_t m_cmap_park_thread;
	bool m_cmap_park_running;          /* the thread was started (join it) */
	bool m_cmap_park_stop;
	/* group commit (commit.c) */
	pthread_t m_commit_thread;
	pthread_mutex_t m_commit_lock;
	pthread_cond_t m_commit_cond;
	struct mds_sync_waiter *m_waiters;
	bool m_commit_kick;
	uint64_t m_synced_seq;       /* write seq the last WAL sync covered; written under
				      * m_commit_lock with __atomic_store_n, read with
				      * mds_commit_synced_seq() */
	/* destroy queue (destroy.c) */
	pthread_t m_destroy_thread;
	pthread_mutex_t m_destroy_lock;
	pthread_cond_t m_destroy_cond;
	bool m_destroy_kick;
	/* open handles (svc.c) */
	pthread_mutex_t m_handle_lock;
	struct mds_handle *m_handles[MDS_HANDLE_BUCKETS];
	uint64_t m_next_handle;
	/* sessions, leases and locks (lease.c, lock.c) */
	struct mds_lockmgr *m_locks;
	pthread_mutex_t m_sess_lock;
	/* when mds-lease began its current sleep (monotonic; 0 while it is
	 * awake), and how long that sleep may last (the tick it asks for and
	 * a quarter lease) before that means the MDS itself was stopped
	 * (mds/lease.c); written under m_sess_lock with atomic stores, read
	 * without it by mds_stalled_since() */
	uint64_t m_lease_seen_ns;
	uint64_t m_lease_late_ns;
	pthread_cond_t m_lease_cond;
	bool m_lease_kick;
	struct mds_session *m_sessions[MDS_SESSION_BUCKETS];
	uint64_t m_sess_base;      /* random; session ids are m_sess_base + n */
	uint64_t m_sess_next;
	pthread_t m_lease_thread;
	bool m_lease_running;
	/* the recovery window and the known clients (recovery.c) */
	struct mds_recovery *m_recov;
	/* HSM coordinator (hsm*.c): the core is m_ns->ns_hsm */
	struct mds_hsm *m_hsm;
	struct hsm_srv *m_hsm_srv;
	/* metadata leases (mdl_svc.c); NULL with --md-leases 0 */
	struct mdl_svc *m_mdl;
};

/* mdl_svc.c: metadata leases on the wire (docs/leases.md) */
struct mdl_svc;
struct mds_xid;
/** Start granting leases (before serving). \return 0 or -ENOMEM. */
int mds_mdl_start(struct mds *m);
/** Answer parked polls, send held replies, free. Accepts a stopped one. */
void mds_mdl_stop(struct mds *m);
/** A new session of the mount \a uuid (16 bytes; else not mapped). */
void mds_mdl_session_new(struct mds *m, uint64_t session, const uint8_t *uuid, size_t uuid_len);
/** \a session ended (evicted, disconnected): its leases and parked poll go. */
void mds_mdl_session_end(struct mds *m, uint64_t session);
/** MDS_LEASE_POLL. */
void mds_mdl_handle_poll(struct mds *m, struct net_req *rq);
/** The lease thread's pass: answers polls that waited their time. */
void mds_mdl_tick(struct mds *m);
/** Sessions that left a callback unanswered for a lease (to evict): up to \a max into \a out. */
size_t mds_mdl_late(struct mds *m, uint64_t *out, size_t max);
/** mdl_gen() of the running manager (0 without one): read before the namespace. */
uint64_t mds_mdl_gen(struct mds *m);
/**
 * Grant \a session (0: none asked) what it may have of \a want on \a in
 * (the policy: LOOKUP on directories, LAYOUT on regular files, no ATTR or
 * LAYOUT while the file is open for writing or released).
 * \return the bits granted (AttrRep.lease_bits).
 */
uint32_t mds_mdl_grant(struct mds *m, uint64_t session, uint32_t want, uint64_t gen,
		       const struct mds_inode *in);
/**
 * mds_mdl_grant() for the open that just created \a in for writing: what
 * it asks of ATTR and LAYOUT although the file is open for writing (op_open
 * asks ATTR only), since its creator is
 * its only opener (any other open for writing is noted, mds_mdl_note(), and
 * calls the lease back before its reply). \return the bits granted.
 */
uint32_t mds_mdl_grant_creator(struct mds *m, uint64_t session, uint32_t want, uint64_t gen,
			       const struct mds_inode *in);
/**
 * The running request changes \a bits (MdlBits) of \a fid without writing
 * it (an open for writing of a file already open for writing): as a
 * committed batch's change, called back before its reply (the requester's
 * session excepted), or at once with no request running.
 */
void mds_mdl_note(struct mds *m, const struct weir_fid *fid, uint32_t bits);
/**
 * A request that may change the namespace begins (mds_svc_rerun, before
 * its handler, on its thread): what its commits change is called back
 * before its reply goes. \return a token for mds_mdl_pending_end() (NULL:
 * nothing to end: no manager, or out of memory).
 */
void *mds_mdl_pending_begin(struct mds *m, struct net_req *rq, const struct mds_xid *x);
/** Its handler returned (\a rq may be answered or not yet). Accepts NULL. */
void mds_mdl_pending_end(void *pending);
/** Leases per session the clients are told (ConnectRep.mdl_max); 0: none granted. */
uint32_t mds_mdl_max(const struct mds *m);
/** The manager's counters (zeros without one). */
void mds_mdl_stats(struct mds *m, struct mdl_stats *out);

/* cmap.c */
int mds_cmap_init(struct mds *m);
void mds_cmap_fini(struct mds *m);
void mds_cmap_handle_register(struct mds *m, struct net_req *rq);
void mds_cmap_handle_get(struct mds *m, struct net_req *rq);
/**
 * Build the ClusterMap (a Weir__ClusterMap *: OSTs and MDTs) under
 * m_cmap_lock. \return 0 (free it with mds_cmap_map_free) or -ENOMEM.
 */
int mds_cmap_map_build(struct mds *m, void *map);
void mds_cmap_map_free(void *map);

/* mdt_reg.c: MDTs other than MDT0 join the cluster (DNE) */
/**
 * Load the MDT list (MDT0) or this MDT's identity (MDT k > 0: uuid and
 * secret, made at its first start), after mds_cmap_init().
 * \return 0 or -errno (logged).
 */
int mds_mdt_init(struct mds *m);
void mds_mdt_fini(struct mds *m);
/** Is MDT \a idx up in the cluster map (as statfs shows it)? Takes m_cmap_lock. */
bool mds_mdt_up(struct mds *m, uint32_t idx);
/** This MDT's space: its directory's filesystem, and an inode estimate. Thread-safe. */
void mds_mdt_space(struct mds *m, struct mds_space *sp);
/**
 * MDT k > 0: register with MDT0 (mc_mgs) now, retrying each second for up
 * to MDS_MGC_START_WAIT_S, so that the MDT serves with the OST map and the
 * capability key. MDT0: nothing. \return 0, or -ETIMEDOUT / the refusal
 * (logged).
 */
int mds_mgc_start(struct mds *m);
/** MDT k > 0: start "mds-mgc", which registers again every heartbeat (after the loops). */
int mds_mgc_run(struct mds *m);
/** Stop "mds-mgc" (first, in every stop and unwind). Accepts a never-started one. */
void mds_mgc_stop(struct mds *m);
/* dtx.c */
/** Start the coordinator ("mds-dtx": finishes what a crash left) and set the ns hooks. */
int mds_dtx_start(struct mds *m);
void mds_dtx_stop(struct mds *m);
void mds_dtx_fini(struct mds *m);
/** MDS_DTX_PREPARE / MDS_DTX_RESOLVE: the participant's side. */
void mds_dtx_handle_prepare(struct mds *m, struct net_req *rq);
void mds_dtx_handle_resolve(struct mds *m, struct net_req *rq);

/** MDS_MDT_REGISTER on MDT0. */
void mds_mdt_handle_register(struct mds *m, struct net_req *rq);
/**
 * Add the MdtInfo rows to a ClusterMap being built, this MDT's with the
 * figures \a self (mds_mdt_space(), read before the lock). Caller holds
 * m_cmap_lock.
 */
int mds_mdt_map_fill(struct mds *m, void *map, const struct mds_space *self);
void mds_mdt_map_free(void *map);
/**
 * The MDT rows of a StatfsRep other than this MDT's own (\a ts, \a tp:
 * room for WEIR_MDT_MAX, \a names: 16 bytes each). Caller holds
 * m_cmap_lock. \return the rows filled.
 */
size_t mds_mdt_statfs_rows(struct mds *m, void *ts, void **tp, char *names);
/** mds_ost_chooser_t for mds_ns_*: fills lo->lo_osts. */
int mds_cmap_choose(void *arg, struct weir_layout *lo, int32_t stripe_offset);
/**
 * The MDS itself did not run from \a last_ns to \a now_ns (monotonic ns;
 * mds/lease.c saw it): the OSTs that were up at \a last_ns count as seen
 * at \a now_ns, so their heartbeats, still queued, need not have arrived
 * for creates to be placed on them. Takes m_cmap_lock; thread-safe.
 */
void mds_cmap_stalled(struct mds *m, uint64_t last_ns, uint64_t now_ns);
/**
 * Is the MDS in a stop that mds-lease has not yet woken from (it slept far
 * past its tick: SIGSTOP, a paused VM)? Right after such a stop the other
 * threads may run before mds-lease notices it (mds_cmap_stalled()), and
 * must not take silence during the stop for a dead peer.
 * \param now  monotonic ns (weir_now_ns()).
 * \return when the stop began (monotonic ns), or 0 when there is none.
 * Lock-free; thread-safe.
 */
uint64_t mds_stalled_since(const struct mds *m, uint64_t now);
/**
 * As mds_cmap_choose(), for a client's create: while OSTs the map knew at
 * start have not registered again (up to mc_ost_timeout_s after the start),
 * \return MDS_RC_PARK instead: the handler parks the request with
 * mds_cmap_park(), nothing having been written.
 */
int mds_cmap_choose_wait(void *arg, struct weir_layout *lo, int32_t stripe_offset);
#define MDS_RC_PARK (-EINPROGRESS)
/**
 * Park \a rq until the OSTs of the map are back or the wait ends, then run
 * it again through mds_svc_rerun(), with its replay prefix (on the thread
 * "mds-ostwait").
 * \return 0 (parked: the caller must not touch \a rq again), or -EAGAIN
 *         (the wait is over already: run it again now).
 */
int mds_cmap_park(struct mds *m, struct net_req *rq);
/** Answer parked requests -ESHUTDOWN and join the thread (mds_stop(), first). */
void mds_cmap_park_stop(struct mds *m);
/** Copy the address of OST \a idx if it is up. \return 0, -ENODEV (unknown), -EHOSTDOWN. */
int mds_cmap_ost_addr(struct mds *m, uint32_t idx, char *addr, size_t len);
bool mds_cmap_ost_up(struct mds *m, const struct mds_ost *o);
/**
 * Fill one TargetStat (\a t) of a StatfsRep: \a name (16 bytes, the
 * caller's) gets "MDT0001"/"OST0003"; \a addr is copied (NULL or "": none).
 */
void mds_statfs_row(void *t, char *name, bool is_mdt, uint32_t idx,
		    const struct mds_space *sp, const char *addr);
/** Fill the targets of a StatfsRep (allocates; free with mds_cmap_statfs_free). */
int mds_cmap_statfs(struct mds *m, void *rep);
void mds_cmap_statfs_free(void *rep);

/* commit.c */
int mds_commit_start(struct mds *m);
void mds_commit_stop(struct mds *m);
/** Reply to \a rq once every write so far is synced (group commit). */
void mds_commit_wait_async(struct mds *m, struct net_req *rq);
/**
 * The last_committed of a reply prefix: the transno the last WAL sync
 * covered (m_synced_seq), but no more than the MDT's boot transno while the
 * recovery window is open. Any thread.
 */
uint64_t mds_commit_synced_seq(struct mds *m);

/* destroy.c */
int mds_destroy_start(struct mds *m);
void mds_destroy_stop(struct mds *m);
void mds_destroy_kick(struct mds *m);

/* svc.c */
/** A request's replay prefix as mds_svc_handle() took it off its body. */
struct mds_xid {
	bool x_has; /* false: the request had none */
	struct weir_xid_hdr x_hdr;
};
/** Handle one request (net_server_ops.so_handle): its replay prefix, then mds_svc_rerun(). */
void mds_svc_handle(struct net_req *rq);
/**
 * Handle \a rq whose replay prefix was taken off already: the recovery
 * gate, then its handler, inside mds_reply_begin()/mds_reply_end() when
 * \a x has one (so a parked create run again still writes its reply-cache
 * record). \a x (NULL: none) is read only until the handler starts.
 */
void mds_svc_rerun(struct net_req *rq, const struct mds_xid *x);
/**
 * The replay prefix of the request this thread is handling (NULL outside
 * mds_svc_rerun()): what a park copies to run the request again with it.
 */
const struct mds_xid *mds_svc_cur_xid(void);

/**
 * May \a session use open handle \a id on \a fid for a lock? False when the
 * handle exists and belongs to another session or file; an unknown id (a
 * handle from before an MDS restart) is accepted.
 */
bool mds_svc_handle_usable(struct mds *m, uint64_t id, uint64_t session,
			   const struct weir_fid *fid);
/** Remove every open handle of \a session; \return them as a list the caller frees. */
struct mds_handle *mds_svc_handles_take(struct mds *m, uint64_t session);

/* lease.c: sessions, leases, eviction, and the lock RPCs (the manager is lock.c) */
#include "lock.h"
/** The lock manager, the session table and the "mds-lease" thread. \return 0 or -errno. */
int mds_lease_start(struct mds *m);
/** Stop the lease thread (before the destroy thread stops). */
void mds_lease_stop(struct mds *m);
/** After the network stopped: answer parked lock requests, free the tables. */
void mds_lease_fini(struct mds *m);
/** A new session for a connecting client. \return 0 or -ENOMEM. */
int mds_session_new(struct mds *m, const char *peer, const char *name, uint64_t *id);
/** Renew \a id's lease. \return 0, or -ESTALE (unknown, expired or evicted). */
int mds_session_touch(struct mds *m, uint64_t id);
/** Is \a id a live session? (no renewal) */
bool mds_session_alive(struct mds *m, uint64_t id);
/** Drop the locks of a closing handle (POSIX locks of \a pid, OFD/flock/append of the handle). */
void mds_lease_on_close(struct mds *m, const struct weir_fid *fid, uint64_t session, int32_t pid,
			uint64_t handle);
void mds_lease_handle_renew(struct mds *m, struct net_req *rq);
void mds_lease_handle_disconnect(struct mds *m, struct net_req *rq);
void mds_lock_handle_set(struct mds *m, struct net_req *rq);
void mds_lock_handle_test(struct mds *m, struct net_req *rq);
void mds_lock_handle_cancel(struct mds *m, struct net_req *rq);

/* ------------------------------------------------------------ recovery (recovery.c, ns_store.c) */

#define MDS_CLIENT_UUID_LEN 16
#define MDS_CLIENT_NAME_MAX 63

/** Known-client records of the MDT (ns_store.c; format: docs/disk-format.md). */
int mds_ns_client_put(struct mds_ns *ns, const uint8_t *uuid, const char *name);
int mds_ns_client_del(struct mds_ns *ns, const uint8_t *uuid);
typedef void (*mds_ns_client_fn)(void *arg, const uint8_t *uuid, const char *name);
/** Call \a fn (may be NULL) for every known client. \return how many, or -errno. */
int mds_ns_client_list(struct mds_ns *ns, mds_ns_client_fn fn, void *arg);
/** Destroy the orphans no open handle holds (end of the recovery window). \return 0 or -errno. */
int mds_ns_orphans_release(struct mds_ns *ns);
/**
 * Count again an open handle of the last run that a client replayed: the
 * open count of \a fid (an orphan, nlink 0, stays until its last close).
 * \return 0, -ENOENT (the inode is gone), -ENOMEM, -EIO.
 */
int mds_ns_reopen(struct mds_ns *ns, const struct weir_fid *fid, bool writer);

/**
 * The recovery window (recovery.c). mds_recovery_start() reads the clients
 * the MDT knows; with any, the MDS serves only their reconnects and replays
 * until all are back or mc_recovery_window_ms passes.
 */
int mds_recovery_start(struct mds *m);
void mds_recovery_fini(struct mds *m);
/** Before dispatch: true when the request was answered (-EINPROGRESS) or parked. */
bool mds_recovery_gate(struct mds *m, struct net_req *rq);
/**
 * A client connected with session \a session: remember it (on the MDT too).
 * \param[out] recovering  it is known and must replay (MDS_REPLAY).
 * \param[out] evicted     it missed the last window: its state is gone.
 */
void mds_recovery_connect(struct mds *m, const uint8_t *uuid, size_t uuid_len, const char *name,
			  uint64_t session, bool *recovering, bool *evicted);
/** A client's session of the last run -> its session now (else \a session itself). */
uint64_t mds_recovery_session_map(struct mds *m, uint64_t session);
/** Session \a session ended (disconnect or eviction): forget its client. */
void mds_recovery_session_end(struct mds *m, uint64_t session);
/** The lease thread's tick: ends the window when it is due. */
void mds_recovery_tick(struct mds *m);
/** MDS_REPLAY. */
void mds_recovery_handle_replay(struct mds *m, struct net_req *rq);
/** Is the recovery window open now? */
bool mds_recovery_active(struct mds *m);
/*
 * Unit tests only (tests/unit/mds/test_recovery_window.c): when set, called
 * by MDS_REPLAY once it found the window open and its client expected, just
 * before it replays anything. NULL in the servers.
 */
extern void (*mds_recovery_replay_hook)(struct mds *m);
/** Fill the recovery fields of the MDT's TargetStat (\a tsv). */
void mds_recovery_statfs(struct mds *m, void *tsv);
/** Re-create open handle \a id of the last run. \return 0, -EEXIST, -ENOMEM. */
int mds_svc_handle_restore(struct mds *m, uint64_t id, const struct weir_fid *fid, bool writer,
			   uint64_t session, uint32_t rights);
/**
 * Close handle \a id of \a fid (opened by \a session) as a close without
 * a report would (mds/recovery.c: the handles of re-run opens).
 * \return 0, or -ENOENT when there is no such handle.
 */
int mds_svc_handle_drop(struct mds *m, uint64_t id, const struct weir_fid *fid,
			uint64_t session);
/** Evict session \a id at the lease thread's next pass. */
void mds_session_expire(struct mds *m, uint64_t id);
/** Wake the lease thread now. */
void mds_lease_kick(struct mds *m);

/** Drop the file's object map in batch \a b (its objects are destroyed: an HSM release). */
void ns_objmap_del(struct kv_batch *b, const struct weir_fid *fid);

/* ------------------------------------------------------------ the node map */

#include "nodemap.h"
/** The node-map group of the request this thread is handling (set by mds_svc_handle()). */
const struct mds_nm_group *mds_svc_group(const struct mds *m);

/* ------------------------------------------------------------ capa.c */

#include "weir.pb-c.h"

/** A signed capability and the storage its message points into. */
struct mds_capa_msg {
	Weir__Capa cm_capa;
	Weir__Fid cm_fid;
	uint8_t cm_mac[WEIR_CAPA_MAC_LEN];
};
/** Load or make the capability key (after the MDT is open). \return 0 or -errno. */
int mds_capa_init(struct mds *m);
/**
 * Sign a capability for \a fid with \a rights (WEIR_CAPA_*), expiring
 * mc_capa_timeout_s from now. \return false when the MDS issues none (--insecure).
 */
bool mds_capa_sign(struct mds *m, const struct weir_fid *fid, uint32_t rights,
		   struct mds_capa_msg *cm);
/** The capability rights of an open with MDS_OF_* flags \a of. */
uint32_t mds_capa_rights_of_open(uint32_t of);
/** Put the key into an OssRegisterRep (\a repv) when the MDS issues capabilities. */
void mds_capa_fill_reg(struct mds *m, void *repv);
/** MDS_CAPA_RENEW. */
void mds_capa_handle_renew(struct mds *m, struct net_req *rq);
/** The rights of open handle \a id if it is \a session's on \a fid, else 0. */
uint32_t mds_svc_handle_rights(struct mds *m, uint64_t id, uint64_t session,
			       const struct weir_fid *fid);

/* ---- reply.c: the reply cache (resent requests answered, not redone) */

/** Room for reply.c's per-request state, on the handler's stack. */
struct rc_ctx_buf {
	uint64_t rcb_space[10];
};
/**
 * Start handling a request with replay prefix \a x on this thread: wait
 * while another copy of it is in a handler, then look its slot's record up.
 * End with mds_reply_end() on the same thread, whatever it returned.
 * \return 0: handle it; -ECANCELED: its xid is older than the slot's record
 *         (a copy the client gave up on): answer that, do not handle it.
 */
int mds_reply_begin(struct mds *m, struct rc_ctx_buf *buf, const struct weir_xid_hdr *x,
		    struct net_req *rq);
void mds_reply_end(struct rc_ctx_buf *buf);
/** The request being handled on this thread was applied before (answer, do not redo). */
bool mds_reply_replayed(void);
/** Called by ns_batch_commit(): add the handled request's record to \a b. */
void mds_reply_batch_note(struct kv_batch *b);
/**
 * Called by ns_batch_commit() after a commit made write seq \a seq: the
 * request being handled on this thread gets it as its transno.
 */
void mds_reply_batch_done(uint64_t seq);
/**
 * net_req.rq_rep_prepare of a request with a replay prefix: fill the reply
 * prefix's transno from this thread's request state (mds_reply_begin()).
 */
void mds_reply_prepare(struct net_req *rq);
/**
 * Called by ns_batch_commit() after a commit. Test hook: when the file named
 * by the environment's WEIR_MDS_FAULT_FILE exists and holds the opcode of
 * the tagged request being handled, delete it and die by SIGKILL (the change
 * is in the WAL, the reply never leaves): a reset the client must ride.
 */
void mds_reply_committed(void);
/** Delete every record of client \a uuid (its umount). \return 0 or -errno. */
int mds_reply_forget(struct mds *m, const uint8_t uuid[16]);
/** At start: delete records older than a day. \return 0 or -errno. */
int mds_reply_gc(struct mds *m);
