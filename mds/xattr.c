/*
 * mds/xattr.c - extended attributes and symlink targets: the "xattrs"
 * column family (docs/disk-format.md).
 *
 * Key: FID (16 bytes big-endian) + the attribute's full name ("user.foo").
 * Value: xattr record v1: u8 version = 1, then the value bytes (0..64 KiB).
 * Names never start with a NUL byte, so keys FID + 0x00 + tag are reserved
 * for the MDS's own records of an inode: FID + "\0L" holds a symlink's
 * target (record v1: u8 version = 1, then the target bytes). All keys of an
 * inode are one contiguous range, deleted with the inode (ns_xattrs_del_all,
 * in the batch that deletes the inode record).
 *
 * Permission rules are Linux's (fs/xattr.c: xattr_permission, plus
 * commoncap's CAP_SYS_ADMIN for writing "security."), checked in Linux's
 * order so each failure has its errno. There are no POSIX ACLs: "system."
 * names are -EOPNOTSUPP.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/util.h"

#define XATTR_REC_VERSION 1
#define SYMLINK_REC_VERSION 1
#define XATTR_KEY_MAX (WEIR_FID_BYTES + MDS_XATTR_NAME_MAX)

enum xa_kind {
	XA_USER,
	XA_TRUSTED,
	XA_SECURITY,
	XA_SYSTEM,
	XA_OTHER,
};

static const struct {
	const char *xp_prefix;
	enum xa_kind xp_kind;
} xa_prefixes[] = {
	{ "user.", XA_USER },
	{ "trusted.", XA_TRUSTED },
	{ "security.", XA_SECURITY },
	{ "system.", XA_SYSTEM },
};

/* ------------------------------------------------------------ symlink targets */

static size_t symlink_key(const struct weir_fid *fid, uint8_t *key)
{
	weir_fid_pack_be(fid, key);
	key[WEIR_FID_BYTES] = 0;
	key[WEIR_FID_BYTES + 1] = 'L';
	return WEIR_FID_BYTES + 2;
}

int ns_symlink_get(struct mds_ns *ns, const struct weir_fid *fid, char *buf, size_t cap,
		   size_t *len)
{
	uint8_t key[WEIR_FID_BYTES + 2], val[1 + MDS_SYMLINK_MAX];
	size_t kl = symlink_key(fid, key);
	ssize_t n = kv_get(ns->ns_kv, KV_CF_XATTRS, key, kl, val, sizeof(val));
	struct mds_inode in;
	if (n == -ENOENT && ns_inode_get(ns, fid, &in) == -ENOENT)
		return -ENOENT; /* removed since the caller read it (lookups take no lock) */
	if (n == -ENOENT || (n >= 0 && (n < 2 || (size_t)n > sizeof(val) ||
					val[0] != SYMLINK_REC_VERSION))) {
		WEIR_LOG_ERROR("fid=" WEIR_FID_F " len=%zd: symlink without a valid target record",
			       WEIR_FID_P(fid), n);
		return -EIO;
	}
	if (n < 0)
		return (int)n;
	size_t tl = (size_t)n - 1;
	if (tl + 1 > cap)
		return -ERANGE;
	memcpy(buf, val + 1, tl);
	buf[tl] = '\0';
	*len = tl;
	return 0;
}

void ns_symlink_put(struct kv_batch *b, const struct weir_fid *fid, const char *target,
		    size_t len)
{
	uint8_t key[WEIR_FID_BYTES + 2], val[1 + MDS_SYMLINK_MAX];
	size_t kl = symlink_key(fid, key);
	val[0] = SYMLINK_REC_VERSION;
	memcpy(val + 1, target, len);
	kv_batch_put(b, KV_CF_XATTRS, key, kl, val, 1 + len);
}

int ns_xattrs_del_all(struct mds_ns *ns, struct kv_batch *b, const struct weir_fid *fid)
{
	uint8_t pfx[WEIR_FID_BYTES];
	weir_fid_pack_be(fid, pfx);
	struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_XATTRS);
	if (!it)
		return -ENOMEM;
	for (kv_iter_seek(it, pfx, sizeof(pfx)); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl < sizeof(pfx) || memcmp(k, pfx, sizeof(pfx)))
			break;
		kv_batch_del(b, KV_CF_XATTRS, k, kl);
	}
	kv_iter_free(it);
	return 0;
}

/* ------------------------------------------------------------ names and permissions */

/* Name checks done before the path is looked at: -ERANGE (empty, over 255 bytes). */
static int xa_name_len(const char *name, size_t *len)
{
	if (!name)
		return -EINVAL;
	*len = strnlen(name, MDS_XATTR_NAME_MAX + 1);
	if (*len == 0 || *len > MDS_XATTR_NAME_MAX)
		return -ERANGE;
	return 0;
}

static enum xa_kind xa_classify(const char *name, bool *empty_suffix)
{
	*empty_suffix = false;
	for (size_t i = 0; i < sizeof(xa_prefixes) / sizeof(xa_prefixes[0]); i++) {
		size_t pl = strlen(xa_prefixes[i].xp_prefix);
		if (!strncmp(name, xa_prefixes[i].xp_prefix, pl)) {
			*empty_suffix = name[pl] == '\0';
			return xa_prefixes[i].xp_kind;
		}
	}
	return XA_OTHER;
}

/*
 * xattr_permission(), the capability check of "security." writes, then
 * the name's handler: -EOPNOTSUPP (no such namespace here), -EINVAL ("user.").
 */
static int xa_access(const struct mds_cred *cr, const struct mds_inode *in, const char *name,
		     bool write)
{
	bool empty;
	enum xa_kind k = xa_classify(name, &empty);
	bool root = mds_cred_is_root(cr);
	int rc = 0;

	switch (k) {
	case XA_SECURITY:
	case XA_SYSTEM:
		break;
	case XA_TRUSTED:
		if (!root)
			return write ? -EPERM : -ENODATA;
		break;
	case XA_USER:
		if (!S_ISREG(in->in_mode) && !S_ISDIR(in->in_mode))
			return write ? -EPERM : -ENODATA;
		if (S_ISDIR(in->in_mode) && (in->in_mode & S_ISVTX) && write &&
		    !mds_perm_owner(cr, in))
			return -EPERM;
		/* fall through */
	case XA_OTHER:
		rc = mds_perm_check(cr, in, write ? MDS_MAY_WRITE : MDS_MAY_READ);
		if (rc)
			return rc;
		break;
	}
	if (write && k == XA_SECURITY && !root)
		return -EPERM;
	if (k == XA_SYSTEM || k == XA_OTHER)
		return -EOPNOTSUPP;
	if (empty)
		return -EINVAL;
	return 0;
}

static size_t xa_key(const struct weir_fid *fid, const char *name, size_t nlen, uint8_t *key)
{
	weir_fid_pack_be(fid, key);
	memcpy(key + WEIR_FID_BYTES, name, nlen);
	return WEIR_FID_BYTES + nlen;
}

/* ------------------------------------------------------------ calls */

int mds_ns_setxattr(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		    const char *path, uint32_t flags, const char *name, const void *value,
		    size_t len, int xflags)
{
	uint8_t key[XATTR_KEY_MAX];
	struct mds_inode in;
	size_t nlen;
	int rc;

	if (xflags & ~(MDS_XATTR_CREATE | MDS_XATTR_REPLACE))
		return -EINVAL;
	rc = xa_name_len(name, &nlen);
	if (rc)
		return rc;
	if (len > MDS_XATTR_SIZE_MAX)
		return -E2BIG;
	if (len && !value)
		return -EINVAL;
	uint8_t *val = malloc(1 + len);
	if (!val)
		return -ENOMEM;
	val[0] = XATTR_REC_VERSION;
	if (len)
		memcpy(val + 1, value, len);
	struct ns_lockset ls;
	ns_ls_init(&ls);
	ns_change_lock(ns);
	rc = ns_resolve_obj_locked(ns, cr, at, path, flags, &in, &ls);
	if (!rc)
		rc = xa_access(cr, &in, name, true);
	if (rc)
		goto out_unlock;
	size_t kl = xa_key(&in.in_fid, name, nlen, key);
	uint8_t probe;
	ssize_t n = kv_get(ns->ns_kv, KV_CF_XATTRS, key, kl, &probe, 1);
	if (n < 0 && n != -ENOENT) {
		rc = (int)n;
		goto out_unlock;
	}
	if (n >= 0 && (xflags & MDS_XATTR_CREATE)) {
		rc = -EEXIST;
		goto out_unlock;
	}
	if (n < 0 && (xflags & MDS_XATTR_REPLACE)) {
		rc = -ENODATA;
		goto out_unlock;
	}
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	kv_batch_put(b, KV_CF_XATTRS, key, kl, val, 1 + len);
	in.in_ctime_ns = ns_now_ns();
	ns_inode_put(b, &in);
	rc = ns_batch_commit(ns, b);
out_unlock:
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	free(val);
	return rc;
}

int mds_ns_getxattr(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		    const char *path, uint32_t flags, const char *name, void *buf, size_t cap,
		    size_t *len)
{
	uint8_t key[XATTR_KEY_MAX];
	struct mds_inode in;
	size_t nlen;
	int rc;

	rc = xa_name_len(name, &nlen);
	if (rc)
		return rc;
	uint8_t *val = malloc(1 + MDS_XATTR_SIZE_MAX);
	if (!val)
		return -ENOMEM;
	pthread_rwlock_rdlock(&ns->ns_lock);
	rc = ns_resolve_obj(ns, cr, at, path, flags, &in);
	if (!rc)
		rc = xa_access(cr, &in, name, false);
	if (rc)
		goto out_unlock;
	size_t kl = xa_key(&in.in_fid, name, nlen, key);
	ssize_t n = kv_get(ns->ns_kv, KV_CF_XATTRS, key, kl, val, 1 + MDS_XATTR_SIZE_MAX);
	if (n == -ENOENT) {
		/* unlinked and destroyed since the walk (which takes no lock)? */
		struct weir_fid fid = in.in_fid;
		rc = ns_inode_get_fresh(ns, &fid, &in) == -ENOENT ? -ENOENT : -ENODATA;
		goto out_unlock;
	}
	if (n < 0) {
		rc = (int)n;
		goto out_unlock;
	}
	if (n < 1 || n > 1 + MDS_XATTR_SIZE_MAX || val[0] != XATTR_REC_VERSION) {
		WEIR_LOG_ERROR("fid=" WEIR_FID_F " name=%s len=%zd: corrupt xattr record",
			       WEIR_FID_P(&in.in_fid), name, n);
		rc = -EIO;
		goto out_unlock;
	}
	*len = (size_t)n - 1;
	if (*len > cap) {
		rc = -ERANGE;
		goto out_unlock;
	}
	memcpy(buf, val + 1, *len);
out_unlock:
	pthread_rwlock_unlock(&ns->ns_lock);
	free(val);
	return rc;
}

int mds_ns_listxattr(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		     const char *path, uint32_t flags, char *buf, size_t cap, size_t *len)
{
	struct mds_inode in;
	uint8_t pfx[WEIR_FID_BYTES];

	*len = 0;
	pthread_rwlock_rdlock(&ns->ns_lock);
	int rc = ns_resolve_obj(ns, cr, at, path, flags, &in);
	if (rc)
		goto out_unlock;
	struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_XATTRS);
	if (!it) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	weir_fid_pack_be(&in.in_fid, pfx);
	for (kv_iter_seek(it, pfx, sizeof(pfx)); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl < sizeof(pfx) || memcmp(k, pfx, sizeof(pfx)))
			break;
		size_t nl = kl - sizeof(pfx);
		const char *name = (const char *)k + sizeof(pfx);
		if (nl == 0 || name[0] == '\0')
			continue; /* the MDS's own records (symlink target) */
		if (nl > MDS_XATTR_NAME_MAX) {
			rc = -EIO;
			break;
		}
		bool empty;
		if (xa_classify(name, &empty) == XA_TRUSTED && !mds_cred_is_root(cr))
			continue;
		if (*len + nl + 1 > cap) {
			rc = -E2BIG;
			break;
		}
		memcpy(buf + *len, name, nl);
		buf[*len + nl] = '\0';
		*len += nl + 1;
	}
	kv_iter_free(it);
	struct weir_fid fid = in.in_fid;
	if (ns_inode_get_fresh(ns, &fid, &in) == -ENOENT) {
		rc = -ENOENT; /* destroyed (its xattrs with it) since the walk, which takes no lock */
		*len = 0;
	}
out_unlock:
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

int mds_ns_removexattr(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		       const char *path, uint32_t flags, const char *name)
{
	uint8_t key[XATTR_KEY_MAX];
	struct mds_inode in;
	size_t nlen;
	int rc;

	rc = xa_name_len(name, &nlen);
	if (rc)
		return rc;
	struct ns_lockset ls;
	ns_ls_init(&ls);
	ns_change_lock(ns);
	rc = ns_resolve_obj_locked(ns, cr, at, path, flags, &in, &ls);
	if (!rc)
		rc = xa_access(cr, &in, name, true);
	if (rc)
		goto out_unlock;
	size_t kl = xa_key(&in.in_fid, name, nlen, key);
	uint8_t probe;
	ssize_t n = kv_get(ns->ns_kv, KV_CF_XATTRS, key, kl, &probe, 1);
	if (n < 0) {
		rc = n == -ENOENT ? -ENODATA : (int)n;
		goto out_unlock;
	}
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	kv_batch_del(b, KV_CF_XATTRS, key, kl);
	in.in_ctime_ns = ns_now_ns();
	ns_inode_put(b, &in);
	rc = ns_batch_commit(ns, b);
out_unlock:
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

/* ------------------------------------------------------------ the objects a file has */

/*
 * Which objects of a regular file were written (missing data is an error):
 * a bitmap, bit i (byte i/8, LSB first) for the object of stripe i, that
 * writers report at close and fsync (CloseReq/SyncReq.objects_written). A
 * reader that finds such an object gone from its OST reads -EIO, not zeros;
 * an object never reported stays a hole. Record FID + 0x00 + 'O' in the
 * "xattrs" column family (deleted with the inode, like every record of the
 * FID's range), value version 1: u8 version, then the bitmap.
 */
#define OBJMAP_REC_VERSION 1
#define OBJMAP_BYTES (WEIR_LAYOUT_MAX_STRIPES / 8)

static size_t objmap_key(const struct weir_fid *fid, uint8_t *key)
{
	weir_fid_pack_be(fid, key);
	key[WEIR_FID_BYTES] = 0;
	key[WEIR_FID_BYTES + 1] = 'O';
	return WEIR_FID_BYTES + 2;
}

int mds_ns_objmap_get(struct mds_ns *ns, const struct weir_fid *fid, uint8_t *bits, size_t cap,
		      size_t *len)
{
	uint8_t key[WEIR_FID_BYTES + 2], val[1 + OBJMAP_BYTES];
	size_t kl = objmap_key(fid, key);
	*len = 0;
	ssize_t n = kv_get(ns->ns_kv, KV_CF_XATTRS, key, kl, val, sizeof(val));
	if (n == -ENOENT)
		return 0;
	if (n < 0)
		return (int)n;
	if (n < 1 || (size_t)n > sizeof(val) || val[0] != OBJMAP_REC_VERSION) {
		WEIR_LOG_WARN("fid=" WEIR_FID_F " len=%zd: a malformed object map; ignored",
			      WEIR_FID_P(fid), n);
		return 0;
	}
	*len = WEIR_MIN((size_t)n - 1, cap);
	memcpy(bits, val + 1, *len);
	return 0;
}

int mds_ns_objmap_or(struct mds_ns *ns, const struct weir_fid *fid, const uint8_t *bits,
		     size_t len, bool clear)
{
	uint8_t key[WEIR_FID_BYTES + 2], val[1 + OBJMAP_BYTES] = { OBJMAP_REC_VERSION };
	size_t kl = objmap_key(fid, key), have = 0;
	struct mds_inode in;
	int rc = 0;
	len = WEIR_MIN(len, (size_t)OBJMAP_BYTES);
	struct ns_lockset ls;
	ns_ls_init(&ls);
	ns_ls_add_inode(&ls, fid);
	ns_change_lock(ns);
	ns_ls_lock(ns, &ls, NS_LOCK_INODE); /* an unlink destroys the map with the inode */
	if (ns_inode_get(ns, fid, &in) || !S_ISREG(in.in_mode))
		goto out; /* gone meanwhile: nothing to record */
	if (!clear) {
		rc = mds_ns_objmap_get(ns, fid, val + 1, OBJMAP_BYTES, &have);
		bool news = false;
		for (size_t i = 0; !rc && i < len; i++) {
			news |= (bits[i] & ~val[1 + i]) != 0;
			val[1 + i] |= bits[i];
		}
		if (rc || !news)
			goto out; /* nothing new: no write */
	}
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out;
	}
	if (clear)
		kv_batch_del(b, KV_CF_XATTRS, key, kl);
	else
		kv_batch_put(b, KV_CF_XATTRS, key, kl, val, 1 + WEIR_MAX(len, have));
	rc = ns_batch_commit(ns, b);
out:
	ns_ls_release(ns, &ls);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

void ns_objmap_del(struct kv_batch *b, const struct weir_fid *fid)
{
	uint8_t key[WEIR_FID_BYTES + 2];
	kv_batch_del(b, KV_CF_XATTRS, key, objmap_key(fid, key));
}
