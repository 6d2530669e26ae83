/*
 * mds/ns.c - one MDT's namespace on RocksDB: path walk, open/create,
 * mkdir, unlink/rmdir, rename, readdir, setattr, layouts, open counts,
 * orphans and the destroy queue.
 *
 * DESIGN. Every mutation runs under ns_lock held for writing and commits one
 * RocksDB write batch (atomic, in the WAL before the call returns); reads
 * take ns_lock for reading, so a path walk never sees half of a rename.
 * One exclusive lock per MDT is the simple first version: an unsynced batch
 * costs ~5 us, so it caps an MDT near 200k mutations/s, well above what the
 * RPC path delivers today. Finer locking (per-directory) comes with
 * striped directories.
 * Lock order: ns_lock -> ns_fid_lock -> ns_open_lock (docs/lock-ordering.md).
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

#define NS_NAME_MAX 255
#define NS_PATH_MAX 4095

/* ------------------------------------------------------------ records */

int ns_inode_get(struct mds_ns *ns, const struct weir_fid *fid, struct mds_inode *in)
{
	uint8_t key[WEIR_FID_BYTES], val[MDS_INODE_REC_MAX];
	weir_fid_pack_be(fid, key);
	ssize_t n = kv_get(ns->ns_kv, KV_CF_INODES, key, sizeof(key), val, sizeof(val));
	if (n < 0)
		return (int)n;
	if ((size_t)n > sizeof(val))
		return -EIO;
	return mds_inode_decode(fid, val, (size_t)n, in);
}

void ns_inode_put(struct kv_batch *b, const struct mds_inode *in)
{
	uint8_t key[WEIR_FID_BYTES], val[MDS_INODE_REC_MAX];
	weir_fid_pack_be(&in->in_fid, key);
	size_t n = mds_inode_encode(in, val);
	kv_batch_put(b, KV_CF_INODES, key, sizeof(key), val, n);
}

void ns_inode_del(struct kv_batch *b, const struct weir_fid *fid)
{
	uint8_t key[WEIR_FID_BYTES];
	weir_fid_pack_be(fid, key);
	kv_batch_del(b, KV_CF_INODES, key, sizeof(key));
}

static int dentry_get(struct mds_ns *ns, const struct weir_fid *parent, const char *name,
		      size_t nlen, struct weir_fid *fid, uint8_t *type)
{
	uint8_t key[MDS_DENTRY_KEY_MAX], val[MDS_DENTRY_REC_SIZE + 8];
	size_t kl = mds_dentry_key(parent, name, nlen, key);
	ssize_t n = kv_get(ns->ns_kv, KV_CF_DENTRIES, key, kl, val, sizeof(val));
	if (n < 0)
		return (int)n;
	return mds_dentry_decode(val, (size_t)n, fid, type);
}

static void dentry_put(struct kv_batch *b, const struct weir_fid *parent, const char *name,
		       size_t nlen, const struct weir_fid *fid, uint8_t type)
{
	uint8_t key[MDS_DENTRY_KEY_MAX], val[MDS_DENTRY_REC_SIZE];
	size_t kl = mds_dentry_key(parent, name, nlen, key);
	mds_dentry_encode(fid, type, val);
	kv_batch_put(b, KV_CF_DENTRIES, key, kl, val, sizeof(val));
}

static void dentry_del(struct kv_batch *b, const struct weir_fid *parent, const char *name,
		       size_t nlen)
{
	uint8_t key[MDS_DENTRY_KEY_MAX];
	size_t kl = mds_dentry_key(parent, name, nlen, key);
	kv_batch_del(b, KV_CF_DENTRIES, key, kl);
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

int ns_batch_commit(struct mds_ns *ns, struct kv_batch *b)
{
	int rc = kv_batch_commit(ns->ns_kv, b);
	if (!rc)
		atomic_fetch_add(&ns->ns_write_seq, 1);
	kv_batch_free(b);
	return rc;
}

static uint8_t mode_to_dt(uint32_t mode)
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

static int fid_alloc(struct mds_ns *ns, struct kv_batch *b, struct weir_fid *fid)
{
	pthread_mutex_lock(&ns->ns_fid_lock);
	if (ns->ns_next_oid >= ns->ns_oid_hw) {
		ns->ns_oid_hw = ns->ns_next_oid + NS_FID_CHUNK;
		uint8_t v[8];
		weir_put_le64(v, ns->ns_oid_hw);
		/* in the same batch as the inode that uses it: a FID handed out
		 * is always below a persisted high-water mark */
		kv_batch_put(b, KV_CF_DEFAULT, NS_KEY_OID_HW, strlen(NS_KEY_OID_HW), v, 8);
	}
	fid->fid_seq = WEIR_FID_SEQ_NORMAL + ns->ns_conf.nc_mdt_index * 0x100000000ULL;
	fid->fid_oid = ns->ns_next_oid++;
	pthread_mutex_unlock(&ns->ns_fid_lock);
	return 0;
}

/* ------------------------------------------------------------ path walk */

/* Split off the next component of *pp into (name, len); skips slashes. */
static bool next_comp(const char **pp, const char **name, size_t *len)
{
	const char *p = *pp;
	while (*p == '/')
		p++;
	if (!*p) {
		*pp = p;
		return false;
	}
	const char *e = p;
	while (*e && *e != '/')
		e++;
	*name = p;
	*len = (size_t)(e - p);
	*pp = e;
	return true;
}

static bool is_dot(const char *n, size_t l)
{
	return l == 1 && n[0] == '.';
}

static bool is_dotdot(const char *n, size_t l)
{
	return l == 2 && n[0] == '.' && n[1] == '.';
}

/* Step from directory \a cur into component (n, l); \a cur is replaced. */
static int walk_step(struct mds_ns *ns, struct mds_inode *cur, const char *n, size_t l)
{
	if (!S_ISDIR(cur->in_mode))
		return -ENOTDIR;
	if (l > NS_NAME_MAX)
		return -ENAMETOOLONG;
	if (is_dot(n, l))
		return 0;
	struct weir_fid next;
	if (is_dotdot(n, l)) {
		struct weir_fid root = weir_fid_root();
		next = weir_fid_eq(&cur->in_fid, &root) ? root : cur->in_parent;
	} else {
		uint8_t type;
		int rc = dentry_get(ns, &cur->in_fid, n, l, &next, &type);
		if (rc)
			return rc;
	}
	int rc = ns_inode_get(ns, &next, cur);
	return rc == -ENOENT ? -EIO : rc; /* a dentry without its inode is corruption */
}

static int walk_start(struct mds_ns *ns, const struct weir_fid *at, const char *path,
		      struct mds_inode *cur)
{
	if (!path)
		return -EINVAL;
	if (!path[0] && (!at || weir_fid_is_zero(at)))
		return -ENOENT; /* open("") */
	if (strnlen(path, NS_PATH_MAX + 1) > NS_PATH_MAX)
		return -ENAMETOOLONG;
	struct weir_fid root = weir_fid_root();
	const struct weir_fid *start = (path[0] == '/' || !at || weir_fid_is_zero(at)) ? &root : at;
	return ns_inode_get(ns, start, cur);
}

/* Resolve a whole path. */
static int walk_full(struct mds_ns *ns, const struct weir_fid *at, const char *path,
		     struct mds_inode *out)
{
	int rc = walk_start(ns, at, path, out);
	if (rc)
		return rc;
	const char *p = path, *n;
	size_t l;
	while (next_comp(&p, &n, &l)) {
		rc = walk_step(ns, out, n, l);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Resolve all but the last component: \a parent is the directory, (\a name,
 * \a nlen) the last name. A path with no last component (the root, "/")
 * gives nlen 0.
 */
static int walk_parent(struct mds_ns *ns, const struct weir_fid *at, const char *path,
		       struct mds_inode *parent, const char **name, size_t *nlen)
{
	int rc = walk_start(ns, at, path, parent);
	if (rc)
		return rc;
	const char *p = path, *n = NULL, *nn;
	size_t l = 0, nl;
	bool have = next_comp(&p, &n, &l);
	while (have) {
		bool more = next_comp(&p, &nn, &nl);
		if (!more)
			break;
		rc = walk_step(ns, parent, n, l);
		if (rc)
			return rc;
		n = nn;
		l = nl;
	}
	if (!S_ISDIR(parent->in_mode))
		return -ENOTDIR;
	if (l > NS_NAME_MAX)
		return -ENAMETOOLONG;
	*name = have ? n : "";
	*nlen = have ? l : 0;
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

static int open_ref(struct mds_ns *ns, const struct weir_fid *fid, bool writer)
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
		struct mds_open_ent **s = open_slot(ns, fid);
		e->oe_next = *s;
		*s = e;
	}
	e->oe_openers++;
	if (writer)
		e->oe_writers++;
	pthread_mutex_unlock(&ns->ns_open_lock);
	return 0;
}

/* Drop one reference; report what is left. Caller holds ns_lock for writing. */
static void open_unref(struct mds_ns *ns, const struct weir_fid *fid, bool writer,
		       uint32_t *openers, uint32_t *writers, bool *unlinked)
{
	pthread_mutex_lock(&ns->ns_open_lock);
	struct mds_open_ent **pp = open_slot(ns, fid), *e;
	*openers = *writers = 0;
	*unlinked = false;
	while ((e = *pp) && !weir_fid_eq(&e->oe_fid, fid))
		pp = &e->oe_next;
	if (e) {
		if (e->oe_openers)
			e->oe_openers--;
		if (writer && e->oe_writers)
			e->oe_writers--;
		*openers = e->oe_openers;
		*writers = e->oe_writers;
		*unlinked = e->oe_unlinked;
		if (!e->oe_openers) {
			*pp = e->oe_next;
			free(e);
		}
	}
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

/* A file lost its last link in batch \a b: orphan it if open, else queue its objects. */
static void file_release(struct mds_ns *ns, struct kv_batch *b, struct mds_inode *in)
{
	in->in_nlink = 0;
	in->in_ctime_ns = ns_now_ns();
	if (open_mark_unlinked(ns, &in->in_fid)) {
		ns_inode_put(b, in);
		ns_destroy_put(b, 'O', in);
	} else {
		ns_inode_del(b, &in->in_fid);
		if (in->in_has_layout)
			ns_destroy_put(b, 'D', in);
	}
}

/* ------------------------------------------------------------ open/close */

static int dir_is_empty(struct mds_ns *ns, const struct weir_fid *dir, bool *empty)
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
	if (lr && lr->lr_stripe_count) {
		count = lr->lr_stripe_count;
		off = lr->lr_stripe_offset;
	}
	if (lr && lr->lr_stripe_size)
		size = lr->lr_stripe_size;
	if (size == 0 || size % WEIR_LAYOUT_STRIPE_ALIGN || size > WEIR_LAYOUT_MAX_STRIPE_SIZE)
		return -EINVAL;
	memset(lo, 0, sizeof(*lo));
	lo->lo_pattern = WEIR_LAYOUT_PATTERN_RAID0;
	lo->lo_stripe_size = size;
	lo->lo_stripe_count = count;
	if (!choose)
		return -ENOSPC;
	int rc = choose(arg, lo, off);
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

static int create_locked(struct mds_ns *ns, struct mds_inode *parent, const char *name,
			 size_t nlen, uint32_t mode, uint32_t extra_flags,
			 const struct mds_layout_req *lr, mds_ost_chooser_t choose, void *arg,
			 struct mds_inode *out)
{
	struct weir_layout lo;
	int rc = layout_for_new(ns, parent, lr, choose, arg, &lo);
	if (rc)
		return rc;
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b)
		return -ENOMEM;
	struct weir_fid fid;
	fid_alloc(ns, b, &fid);
	ns_inode_new(out, &fid, S_IFREG | (mode & 07777));
	out->in_nlink = 1;
	out->in_flags = extra_flags;
	out->in_has_layout = true;
	out->in_layout = lo;
	ns_inode_put(b, out);
	dentry_put(b, &parent->in_fid, name, nlen, &fid, mode_to_dt(out->in_mode));
	parent->in_mtime_ns = parent->in_ctime_ns = out->in_ctime_ns;
	ns_inode_put(b, parent);
	return ns_batch_commit(ns, b);
}

int mds_ns_open_file(struct mds_ns *ns, const struct weir_fid *at, const char *path,
		     uint32_t flags, uint32_t mode, const struct mds_layout_req *lr,
		     mds_ost_chooser_t choose, void *choose_arg, struct mds_inode *out,
		     bool *created)
{
	struct mds_inode parent;
	const char *name;
	size_t nlen;
	bool writer = flags & MDS_OF_WRITE;
	int rc;

	*created = false;
	pthread_rwlock_wrlock(&ns->ns_lock);
	rc = walk_parent(ns, at, path, &parent, &name, &nlen);
	if (rc)
		goto out_unlock;
	if (nlen == 0 || is_dot(name, nlen) || is_dotdot(name, nlen)) {
		/* the root, ".", ".." are directories */
		rc = walk_full(ns, at, path, out);
		if (rc)
			goto out_unlock;
		goto existing;
	}
	struct weir_fid fid;
	uint8_t type;
	rc = dentry_get(ns, &parent.in_fid, name, nlen, &fid, &type);
	if (rc == -ENOENT) {
		if (!(flags & MDS_OF_CREAT))
			goto out_unlock;
		if (flags & MDS_OF_DIRECTORY) {
			rc = -EINVAL;
			goto out_unlock;
		}
		rc = create_locked(ns, &parent, name, nlen, mode,
				   writer ? MDS_INODE_F_SIZE_STALE : 0, lr, choose, choose_arg, out);
		if (rc)
			goto out_unlock;
		*created = true;
		rc = open_ref(ns, &out->in_fid, writer);
		goto out_unlock;
	}
	if (rc)
		goto out_unlock;
	rc = ns_inode_get(ns, &fid, out);
	if (rc)
		goto out_unlock;
	if ((flags & (MDS_OF_CREAT | MDS_OF_EXCL)) == (MDS_OF_CREAT | MDS_OF_EXCL)) {
		rc = -EEXIST;
		goto out_unlock;
	}
existing:
	if (S_ISDIR(out->in_mode) && writer) {
		rc = -EISDIR;
		goto out_unlock;
	}
	if ((flags & MDS_OF_DIRECTORY) && !S_ISDIR(out->in_mode)) {
		rc = -ENOTDIR;
		goto out_unlock;
	}
	if (writer && S_ISREG(out->in_mode)) {
		bool dirty = false;
		if (!(out->in_flags & MDS_INODE_F_SIZE_STALE)) {
			out->in_flags |= MDS_INODE_F_SIZE_STALE;
			dirty = true;
		}
		if ((flags & MDS_OF_TRUNC) && out->in_size) {
			out->in_size = 0;
			out->in_blocks = 0;
			out->in_mtime_ns = out->in_ctime_ns = ns_now_ns();
			dirty = true;
		}
		if (dirty) {
			struct kv_batch *b = kv_batch_new(ns->ns_kv);
			if (!b) {
				rc = -ENOMEM;
				goto out_unlock;
			}
			ns_inode_put(b, out);
			rc = ns_batch_commit(ns, b);
			if (rc)
				goto out_unlock;
		}
	}
	rc = open_ref(ns, &out->in_fid, writer);
out_unlock:
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

int mds_ns_close_file(struct mds_ns *ns, const struct weir_fid *fid, bool was_writer,
		      bool has_size, uint64_t size, uint64_t blocks)
{
	uint32_t openers, writers;
	bool unlinked;
	struct mds_inode in;
	int rc;

	pthread_rwlock_wrlock(&ns->ns_lock);
	open_unref(ns, fid, was_writer, &openers, &writers, &unlinked);
	rc = ns_inode_get(ns, fid, &in);
	if (rc)
		goto out_unlock;
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	bool dirty = false;
	if (was_writer && has_size) {
		in.in_size = size;
		in.in_blocks = blocks;
		dirty = true;
	}
	if (was_writer && writers == 0 && (in.in_flags & MDS_INODE_F_SIZE_STALE)) {
		in.in_flags &= ~MDS_INODE_F_SIZE_STALE;
		dirty = true;
	}
	if (unlinked && openers == 0) {
		/* last close of an open-unlinked file: now its objects can go */
		ns_inode_del(b, fid);
		ns_destroy_del(b, 'O', fid);
		if (in.in_has_layout)
			ns_destroy_put(b, 'D', &in);
	} else if (dirty) {
		ns_inode_put(b, &in);
	}
	rc = ns_batch_commit(ns, b);
out_unlock:
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

int mds_ns_update_size(struct mds_ns *ns, const struct weir_fid *fid, uint64_t size,
		       uint64_t blocks)
{
	struct mds_inode in;
	pthread_rwlock_wrlock(&ns->ns_lock);
	int rc = ns_inode_get(ns, fid, &in);
	if (!rc && (in.in_size != size || in.in_blocks != blocks)) {
		struct kv_batch *b = kv_batch_new(ns->ns_kv);
		if (!b) {
			rc = -ENOMEM;
		} else {
			in.in_size = size;
			in.in_blocks = blocks;
			ns_inode_put(b, &in);
			rc = ns_batch_commit(ns, b);
		}
	}
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

/* ------------------------------------------------------------ lookups */

int mds_ns_lookup(struct mds_ns *ns, const struct weir_fid *at, const char *path,
		  struct mds_inode *out)
{
	pthread_rwlock_rdlock(&ns->ns_lock);
	int rc = walk_full(ns, at, path, out);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

int mds_ns_getattr(struct mds_ns *ns, const struct weir_fid *fid, struct mds_inode *out)
{
	pthread_rwlock_rdlock(&ns->ns_lock);
	int rc = ns_inode_get(ns, fid, out);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

int mds_ns_setattr(struct mds_ns *ns, const struct weir_fid *fid, const struct mds_setattr *sa,
		   struct mds_inode *out)
{
	pthread_rwlock_wrlock(&ns->ns_lock);
	int rc = ns_inode_get(ns, fid, out);
	if (rc)
		goto out_unlock;
	if ((sa->sa_valid & MDS_SA_SIZE) && S_ISDIR(out->in_mode)) {
		rc = -EISDIR;
		goto out_unlock;
	}
	if ((sa->sa_valid & MDS_SA_SIZE) && sa->sa_size > (uint64_t)WEIR_MAX_FILE_OFF) {
		rc = -EFBIG;
		goto out_unlock;
	}
	int64_t now = ns_now_ns();
	if (sa->sa_valid & MDS_SA_MODE)
		out->in_mode = (out->in_mode & S_IFMT) | (sa->sa_mode & 07777);
	if (sa->sa_valid & MDS_SA_UID)
		out->in_uid = sa->sa_uid;
	if (sa->sa_valid & MDS_SA_GID)
		out->in_gid = sa->sa_gid;
	if (sa->sa_valid & MDS_SA_SIZE) {
		out->in_size = sa->sa_size;
		out->in_mtime_ns = now;
	}
	if (sa->sa_valid & MDS_SA_ATIME)
		out->in_atime_ns = sa->sa_atime_ns;
	if (sa->sa_valid & MDS_SA_MTIME)
		out->in_mtime_ns = sa->sa_mtime_ns;
	out->in_ctime_ns = now;
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	ns_inode_put(b, out);
	rc = ns_batch_commit(ns, b);
out_unlock:
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

/* ------------------------------------------------------------ mkdir / unlink / rename */

int mds_ns_mkdir(struct mds_ns *ns, const struct weir_fid *at, const char *path, uint32_t mode,
		 struct mds_inode *out)
{
	struct mds_inode parent;
	const char *name;
	size_t nlen;
	pthread_rwlock_wrlock(&ns->ns_lock);
	int rc = walk_parent(ns, at, path, &parent, &name, &nlen);
	if (rc)
		goto out_unlock;
	if (nlen == 0 || is_dot(name, nlen) || is_dotdot(name, nlen)) {
		rc = -EEXIST;
		goto out_unlock;
	}
	struct weir_fid fid;
	uint8_t type;
	rc = dentry_get(ns, &parent.in_fid, name, nlen, &fid, &type);
	if (rc == 0)
		rc = -EEXIST;
	if (rc != -ENOENT)
		goto out_unlock;
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	fid_alloc(ns, b, &fid);
	ns_inode_new(out, &fid, S_IFDIR | (mode & 07777));
	out->in_nlink = 2;
	out->in_parent = parent.in_fid;
	out->in_size = 4096;
	/* a new directory inherits its parent's default layout (as in Lustre) */
	out->in_has_layout = parent.in_has_layout;
	out->in_layout = parent.in_layout;
	ns_inode_put(b, out);
	dentry_put(b, &parent.in_fid, name, nlen, &fid, mode_to_dt(out->in_mode));
	parent.in_nlink++;
	parent.in_mtime_ns = parent.in_ctime_ns = out->in_ctime_ns;
	ns_inode_put(b, &parent);
	rc = ns_batch_commit(ns, b);
out_unlock:
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

int mds_ns_unlink(struct mds_ns *ns, const struct weir_fid *at, const char *path, bool is_dir)
{
	struct mds_inode parent, in;
	const char *name;
	size_t nlen;
	pthread_rwlock_wrlock(&ns->ns_lock);
	int rc = walk_parent(ns, at, path, &parent, &name, &nlen);
	if (rc)
		goto out_unlock;
	if (nlen == 0) {
		rc = is_dir ? -EBUSY : -EISDIR;
		goto out_unlock;
	}
	if (is_dot(name, nlen) || is_dotdot(name, nlen)) {
		rc = is_dir ? (is_dot(name, nlen) ? -EINVAL : -ENOTEMPTY) : -EISDIR;
		goto out_unlock;
	}
	struct weir_fid fid;
	uint8_t type;
	rc = dentry_get(ns, &parent.in_fid, name, nlen, &fid, &type);
	if (rc)
		goto out_unlock;
	rc = ns_inode_get(ns, &fid, &in);
	if (rc)
		goto out_unlock;
	if (is_dir && !S_ISDIR(in.in_mode)) {
		rc = -ENOTDIR;
		goto out_unlock;
	}
	if (!is_dir && S_ISDIR(in.in_mode)) {
		rc = -EISDIR;
		goto out_unlock;
	}
	if (is_dir) {
		bool empty;
		rc = dir_is_empty(ns, &fid, &empty);
		if (rc)
			goto out_unlock;
		if (!empty) {
			rc = -ENOTEMPTY;
			goto out_unlock;
		}
	}
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	dentry_del(b, &parent.in_fid, name, nlen);
	if (is_dir) {
		ns_inode_del(b, &fid);
		parent.in_nlink--;
	} else {
		file_release(ns, b, &in);
	}
	parent.in_mtime_ns = parent.in_ctime_ns = ns_now_ns();
	ns_inode_put(b, &parent);
	rc = ns_batch_commit(ns, b);
out_unlock:
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

/* Is directory \a dir inside the subtree of \a top (or \a top itself)? */
static int is_within(struct mds_ns *ns, const struct weir_fid *dir, const struct weir_fid *top,
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
			return rc;
		cur = in.in_parent;
	}
	return -ELOOP;
}

int mds_ns_rename(struct mds_ns *ns, const struct weir_fid *at, const char *src, const char *dst)
{
	struct mds_inode p1, p2, sin, din;
	const char *n1, *n2;
	size_t l1, l2;
	struct weir_fid sfid, dfid;
	uint8_t stype, dtype;
	bool have_dst;

	pthread_rwlock_wrlock(&ns->ns_lock);
	int rc = walk_parent(ns, at, src, &p1, &n1, &l1);
	if (rc)
		goto out_unlock;
	rc = walk_parent(ns, at, dst, &p2, &n2, &l2);
	if (rc)
		goto out_unlock;
	if (l1 == 0 || l2 == 0) {
		rc = -EBUSY;
		goto out_unlock;
	}
	if (is_dot(n1, l1) || is_dotdot(n1, l1) || is_dot(n2, l2) || is_dotdot(n2, l2)) {
		rc = -EINVAL;
		goto out_unlock;
	}
	rc = dentry_get(ns, &p1.in_fid, n1, l1, &sfid, &stype);
	if (rc)
		goto out_unlock;
	rc = ns_inode_get(ns, &sfid, &sin);
	if (rc)
		goto out_unlock;
	rc = dentry_get(ns, &p2.in_fid, n2, l2, &dfid, &dtype);
	if (rc && rc != -ENOENT)
		goto out_unlock;
	have_dst = rc == 0;
	rc = 0;
	if (have_dst && weir_fid_eq(&sfid, &dfid))
		goto out_unlock; /* same inode: nothing to do (POSIX) */
	bool sdir = S_ISDIR(sin.in_mode);
	if (sdir) {
		bool within;
		rc = is_within(ns, &p2.in_fid, &sfid, &within);
		if (rc)
			goto out_unlock;
		if (within) {
			rc = -EINVAL;
			goto out_unlock;
		}
	}
	if (have_dst) {
		rc = ns_inode_get(ns, &dfid, &din);
		if (rc)
			goto out_unlock;
		bool ddir = S_ISDIR(din.in_mode);
		if (sdir && !ddir) {
			rc = -ENOTDIR;
			goto out_unlock;
		}
		if (!sdir && ddir) {
			rc = -EISDIR;
			goto out_unlock;
		}
		if (ddir) {
			bool empty;
			rc = dir_is_empty(ns, &dfid, &empty);
			if (rc)
				goto out_unlock;
			if (!empty) {
				rc = -ENOTEMPTY;
				goto out_unlock;
			}
		}
	}
	bool same_parent = weir_fid_eq(&p1.in_fid, &p2.in_fid);
	struct mds_inode *pdst = same_parent ? &p1 : &p2;
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	int64_t now = ns_now_ns();
	dentry_del(b, &p1.in_fid, n1, l1);
	dentry_put(b, &pdst->in_fid, n2, l2, &sfid, stype);
	if (have_dst) {
		if (S_ISDIR(din.in_mode)) {
			ns_inode_del(b, &dfid);
			pdst->in_nlink--;
		} else {
			file_release(ns, b, &din);
		}
	}
	if (sdir && !same_parent) {
		p1.in_nlink--;
		pdst->in_nlink++;
		sin.in_parent = pdst->in_fid;
	}
	sin.in_ctime_ns = now;
	ns_inode_put(b, &sin);
	p1.in_mtime_ns = p1.in_ctime_ns = now;
	pdst->in_mtime_ns = pdst->in_ctime_ns = now;
	ns_inode_put(b, &p1);
	if (!same_parent)
		ns_inode_put(b, pdst);
	rc = ns_batch_commit(ns, b);
out_unlock:
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

/* ------------------------------------------------------------ readdir */

int mds_ns_readdir(struct mds_ns *ns, const struct weir_fid *dir, uint64_t cookie, uint32_t max,
		   struct mds_dirent *ents, uint32_t cap, uint32_t *nr, bool *eof)
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

int mds_ns_set_layout(struct mds_ns *ns, const struct weir_fid *at, const char *path,
		      const struct mds_layout_req *lr, bool create, uint32_t mode,
		      mds_ost_chooser_t choose, void *choose_arg, struct mds_inode *out)
{
	struct mds_inode parent;
	const char *name;
	size_t nlen;
	pthread_rwlock_wrlock(&ns->ns_lock);
	int rc = walk_parent(ns, at, path, &parent, &name, &nlen);
	if (rc)
		goto out_unlock;
	struct weir_fid fid;
	uint8_t type;
	if (nlen == 0 || is_dot(name, nlen) || is_dotdot(name, nlen)) {
		rc = walk_full(ns, at, path, out);
	} else {
		rc = dentry_get(ns, &parent.in_fid, name, nlen, &fid, &type);
		if (!rc)
			rc = ns_inode_get(ns, &fid, out);
	}
	if (rc == -ENOENT) {
		if (!create)
			goto out_unlock;
		rc = create_locked(ns, &parent, name, nlen, mode ? mode : 0644, 0, lr, choose,
				   choose_arg, out);
		goto out_unlock;
	}
	if (rc)
		goto out_unlock;
	if (!S_ISDIR(out->in_mode)) {
		rc = -EEXIST;
		goto out_unlock;
	}
	/* a directory: its default layout for new files */
	uint32_t sz = lr->lr_stripe_size;
	if (sz % WEIR_LAYOUT_STRIPE_ALIGN || sz > WEIR_LAYOUT_MAX_STRIPE_SIZE ||
	    (lr->lr_stripe_count > WEIR_LAYOUT_MAX_STRIPES && lr->lr_stripe_count != UINT32_MAX)) {
		rc = -EINVAL;
		goto out_unlock;
	}
	if (lr->lr_stripe_count == 0 && sz == 0) {
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
	return rc;
}

