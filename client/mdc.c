/*
 * client/mdc.c - the metadata client (Lustre's mdc): one typed function per
 * namespace MDS operation, the one place libweir builds their protobuf
 * requests and decodes their replies.
 *
 * DESIGN. The path calls (meta.c, ns_posix.c), the FID calls (fidops.c),
 * open files (file.c, io.c) and layouts (layout.c) check their arguments
 * as the API promises, then call wc_mdc_*() with plain C values: a target
 * (struct wc_mdc_target: an object by FID, or a path from a directory),
 * modes, flags, a struct wc_mdc_sattr of changes. A function here fills
 * the request (credentials from wc_cred_init(), FIDs, PathFlag bits), sends
 * it with wc_mds_call() - which gives it its replay id, retries it across
 * MDS outages and keeps it for replay (client/mount.c, client/replay.c) -
 * and decodes the reply into struct wc_attr and struct weir_layout, or
 * copies its bytes out. Each function passes wc_mds_call() the same reply
 * type as the callers did before this layer (the replay list keeps a
 * create's FID from an AttrRep), so the wire and the replay list see
 * exactly what they saw then. The open (wc_mdc_open) is the exception that
 * carries more: the session of the open, its one replay id across a
 * session renewal, and the close of a handle whose reply cannot be decoded.
 *
 * This is the layer a client metadata cache will sit on: every namespace
 * RPC of libweir goes through here. Session, lock, lease, replay, connect,
 * capability and HSM requests are not namespace operations and stay with
 * their files (lease.c, lock.c, replay.c, mount.c, capa.c, hsm.c).
 *
 * Nothing here keeps state or takes a lock: any thread may call anything.
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

/* A wire Fid of \a fid in \a pf, or NULL for no \a fid. */
static Weir__Fid *mdc_pb(const struct weir_fid *fid, Weir__Fid *pf)
{
	if (!fid)
		return NULL;
	wc_fid_to_pb(fid, pf);
	return pf;
}

/*
 * The credentials (\a mcred, the caller's storage) and the (at, path) of
 * target \a mt into request \a mreq: any message with cred, at and path
 * fields (\a mpat: storage for the at Fid).
 */
#define MDC_PATH_FILL(mfs, mreq, mt, mcred, mpat)        \
	do {                                             \
		wc_cred_init((mfs), (mcred));            \
		(mreq).cred = (mcred);                   \
		(mreq).at = mdc_pb((mt)->mt_at, (mpat)); \
		(mreq).path = (char *)(mt)->mt_name;     \
	} while (0)

/* The credentials and the Fid of \a mfid into \a mreq (cred and fid fields), as MDC_PATH_FILL. */
#define MDC_FID_FILL(mfs, mreq, mfid, mcred, mpf)   \
	do {                                        \
		wc_cred_init((mfs), (mcred));       \
		(mreq).cred = (mcred);              \
		(mreq).fid = mdc_pb((mfid), (mpf)); \
	} while (0)

int wc_attr_decode(const Weir__Attr *pa, const Weir__Layout *pl, struct wc_attr *a,
		   struct weir_layout *lo)
{
	if (!pa || !pa->fid) {
		WEIR_LOG_ERROR("reply without attributes");
		return -EPROTO;
	}
	wc_fid_from_pb(pa->fid, &a->a_fid);
	a->a_mode = pa->mode;
	a->a_uid = pa->uid;
	a->a_gid = pa->gid;
	a->a_nlink = pa->nlink;
	a->a_size = pa->size;
	a->a_blocks = pa->blocks;
	a->a_atime_ns = pa->atime_ns;
	a->a_mtime_ns = pa->mtime_ns;
	a->a_ctime_ns = pa->ctime_ns;
	a->a_flags = pa->flags;
	a->a_blksize = pa->blksize;
	a->a_rdev = pa->rdev;
	a->a_size_epoch = pa->size_epoch;
	if (!lo)
		return 0;
	memset(lo, 0, sizeof(*lo));
	if (!pl || pl->stripe_count == 0)
		return 0;
	lo->lo_pattern = pl->pattern;
	lo->lo_stripe_size = pl->stripe_size;
	lo->lo_stripe_count = pl->stripe_count;
	lo->lo_gen = pl->gen;
	if (pl->n_osts != pl->stripe_count || pl->stripe_count > WEIR_LAYOUT_MAX_STRIPES) {
		/* A directory's default may name no OSTs; a file's must name all. */
		if (S_ISDIR(a->a_mode) && pl->n_osts == 0 &&
		    pl->stripe_count <= WEIR_LAYOUT_MAX_STRIPES)
			return 0;
		goto out_bad;
	}
	for (size_t i = 0; i < pl->n_osts; i++)
		lo->lo_osts[i] = pl->osts[i];
	if (weir_layout_check(lo))
		goto out_bad;
	return 0;

out_bad:
	WEIR_LOG_ERROR("fid=" WEIR_FID_F " pattern=%u count=%u size=%u osts=%zu: invalid layout",
		       WEIR_FID_P(&a->a_fid), pl->pattern, pl->stripe_count, pl->stripe_size,
		       pl->n_osts);
	memset(lo, 0, sizeof(*lo));
	return -EPROTO;
}

/*
 * The directory's attributes after a change (AttrRep.parent, OpenRep.parent)
 * into \a parent; a zero FID when the MDS sent none or they do not decode.
 */
static void mdc_parent_decode(const Weir__Attr *pa, struct wc_attr *parent)
{
	memset(parent, 0, sizeof(*parent));
	if (pa && (wc_attr_decode(pa, NULL, parent, NULL) || !S_ISDIR(parent->a_mode)))
		memset(parent, 0, sizeof(*parent));
}

/*
 * One call answered by an AttrRep: the object's attributes into \a a and
 * \a lo (\a a NULL: not wanted; the reply may then carry none, as
 * UNLINK's), the directory's after a change into \a parent
 * (mdc_parent_decode(); NULL: not wanted), the lease granted on the
 * object into \a lease_bits (NULL: not wanted) and, for an UNLINK, the
 * object the name led to into \a unlinked (a zero FID when the reply does
 * not say; NULL: not wanted). Wanting none of \a a, \a parent and
 * \a unlinked, the reply is only checked to be an AttrRep.
 */
static int mdc_call_unlinked(struct weir_fs *fs, uint32_t mdt, uint16_t op,
			     const ProtobufCMessage *req,
			     struct wc_attr *a, struct weir_layout *lo, struct wc_attr *parent,
			     uint32_t *lease_bits, struct weir_fid *unlinked)
{
	Weir__AttrRep *rep = NULL;
	if (parent)
		memset(parent, 0, sizeof(*parent));
	if (unlinked)
		memset(unlinked, 0, sizeof(*unlinked));
	if (lease_bits)
		*lease_bits = 0;
	bool want = a || parent || unlinked;
	int rc = wc_mds_call_mdt(fs, mdt, op, req, &weir__attr_rep__descriptor,
				 want ? (void **)&rep : NULL);
	if (rc || !want)
		return rc;
	if (a) {
		memset(a, 0, sizeof(*a));
		rc = wc_attr_decode(rep->attr, rep->layout, a, lo);
	}
	if (!rc && parent)
		mdc_parent_decode(rep->parent, parent);
	if (!rc && lease_bits)
		*lease_bits = rep->lease_bits;
	if (!rc && unlinked && rep->unlinked) {
		unlinked->fid_seq = rep->unlinked->seq;
		unlinked->fid_oid = rep->unlinked->oid;
	}
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

/* mdc_call_unlinked() without \a unlinked. */
static int mdc_call_change(struct weir_fs *fs, uint32_t mdt, uint16_t op,
			   const ProtobufCMessage *req,
			   struct wc_attr *a, struct weir_layout *lo, struct wc_attr *parent,
			   uint32_t *lease_bits)
{
	return mdc_call_unlinked(fs, mdt, op, req, a, lo, parent, lease_bits, NULL);
}

static int mdc_call_attr(struct weir_fs *fs, uint32_t mdt, uint16_t op,
			 const ProtobufCMessage *req,
			 struct wc_attr *a, struct weir_layout *lo)
{
	return mdc_call_change(fs, mdt, op, req, a, lo, NULL, NULL);
}

/* ------------------------------------------------------------ routing (docs/dne.md, step 2) */

#define MDC_MAX_HOPS 8 /* MDT crossings of one path */

/* The MDT a target goes to: its FID's, its directory's, or MDT0 (from the root). */
static uint32_t mdc_mdt_of(const struct wc_mdc_target *t)
{
	if (!t->mt_fid && t->mt_name && t->mt_name[0] == '/')
		return 0; /* an absolute path: from the root, whatever mt_at */
	const struct weir_fid *f = t->mt_fid ? t->mt_fid : t->mt_at;
	return f ? (uint32_t)weir_fid_mdt(f) : 0;
}

/* wc_mdl_want() for a call to \a mdt: only MDT0 grants this mount leases (client/mdt.c). */
static uint32_t mdc_want(struct weir_fs *fs, uint32_t mdt, uint64_t *session)
{
	if (mdt) {
		*session = 0;
		return 0;
	}
	return wc_mdl_want(fs, session);
}

static uint64_t mdc_cred_key(const Weir__Cred *cred);
static void mdc_walk_put(struct weir_fs *fs, uint64_t t0, uint64_t session, uint64_t key,
			 const Weir__AttrRep *rep);

/*
 * Where a call on a target goes: the MDT of its FID or directory, and,
 * after a walk that crossed to another MDT answered -EREMOTE, the directory
 * on that MDT and the rest of the path (mdc_route_next()).
 */
struct mdc_local {
	struct wc_mdc_target ml_t;
	struct weir_fid ml_dir;
	char ml_path[1024]; /* the directory part (a longer one is not made local) */
};
static const struct wc_mdc_target *mdc_local_ex(struct weir_fs *fs, const struct wc_mdc_target *t,
						struct mdc_local *ml, bool remote_dir);

struct mdc_route {
	const struct wc_mdc_target *rt_t; /* the target as sent now */
	uint32_t rt_mdt;                  /* its MDT */
	struct wc_mdc_target rt_next;     /* after a redirect: (rt_at, rt_path) */
	struct weir_fid rt_at;
	char *rt_path;                    /* malloc'd */
	unsigned rt_hops;
	bool rt_nofollow;                 /* the call never follows a symlink in the last
					   * name (creates, removes, rename, link's target) */
	struct mdc_local rt_ml;           /* a path target made local, its directory on MDT k */
	bool rt_local;                    /* rt_t is rt_ml's */
};

/*
 * Aim \a rt at \a t's MDT. A path whose directory part the name cache
 * resolves to a directory of MDT k (a remote directory, whose name MDT0
 * leased with a walk: mdc_route_next()) goes straight there, as (that
 * directory, last name), without the walk on MDT0 and its redirect.
 */
static void mdc_route_init(struct weir_fs *fs, struct mdc_route *rt,
			   const struct wc_mdc_target *t, bool nofollow, bool cached)
{
	rt->rt_t = t;
	rt->rt_mdt = mdc_mdt_of(t);
	rt->rt_nofollow = nofollow;
	rt->rt_path = NULL;
	rt->rt_hops = 0;
	rt->rt_local = false;
	if (cached && !rt->rt_mdt && !t->mt_fid && atomic_load(&fs->fs_multi_mdt)) {
		const struct wc_mdc_target *lt = mdc_local_ex(fs, t, &rt->rt_ml, true);
		uint32_t mdt = lt != t ? (uint32_t)weir_fid_mdt(&rt->rt_ml.ml_dir) : 0;
		if (mdt) {
			rt->rt_t = lt;
			rt->rt_mdt = mdt;
			rt->rt_local = true;
		}
	}
}

static void mdc_route_fini(struct mdc_route *rt)
{
	free(rt->rt_path);
	rt->rt_path = NULL;
}

/* Does \a path end in a name (not ".", "..", "/", nor a trailing slash)? */
static bool mdc_last_is_name(const char *path)
{
	size_t l = path ? strlen(path) : 0;
	if (!l || path[l - 1] == '/')
		return false;
	const char *sl = strrchr(path, '/');
	const char *last = sl ? sl + 1 : path;
	return strcmp(last, ".") && strcmp(last, "..");
}

/*
 * The call on \a rt's target answered \a *rc. When that is -EREMOTE (its
 * path crosses into a directory of another MDT), ask the same MDT where the
 * walk goes on (MDS_LOOKUP with PF_REDIRECT: a FID of the other MDT and the
 * rest of the path) and aim \a rt there. \return true to send the call
 * again; false with *rc the call's answer (or the redirect's error, or
 * -ELOOP past MDC_MAX_HOPS crossings).
 */
static bool mdc_route_next(struct weir_fs *fs, struct mdc_route *rt, int *rc)
{
	if (*rc != -EREMOTE || rt->rt_t->mt_fid)
		return false;
	if (rt->rt_hops++ >= MDC_MAX_HOPS) {
		WEIR_LOG_WARN_RL("path=%s: more than %d crossings between MDTs; giving up (-ELOOP)",
				 rt->rt_t->mt_name ? rt->rt_t->mt_name : "", MDC_MAX_HOPS);
		*rc = -ELOOP;
		return false;
	}
	Weir__PathReq req = WEIR__PATH_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;
	Weir__AttrRep *rep = NULL;
	MDC_PATH_FILL(fs, req, rt->rt_t, &cred, &pat);
	/* followed as the call follows its last name: a rename must not be
	 * redirected to where a symlink it replaces points */
	bool nofollow = rt->rt_nofollow || (rt->rt_t->mt_pflags & WEIR__PATH_FLAG__PF_NOFOLLOW);
	req.flags = WEIR__PATH_FLAG__PF_REDIRECT | (nofollow ? WEIR__PATH_FLAG__PF_NOFOLLOW : 0);
	/* the walk to the crossing, leased (MDT0 only): the name of the other
	 * MDT's directory is then cached, and mdc_local() sends the next call
	 * under it straight to that MDT */
	uint64_t key = fs->fs_mdl && fs->fs_md_paths && rt->rt_t->mt_name ? mdc_cred_key(&cred) : 0;
	uint64_t t0 = 0;
	if (key) {
		t0 = wc_mdl_stamp(fs); /* first (then the session): client/mdl.c, "Stamps" */
		req.lease_want = mdc_want(fs, rt->rt_mdt, &req.lease_session);
		req.walk = req.lease_want != 0;
	}
	int r = wc_mds_call_mdt(fs, rt->rt_mdt, WEIR__WIRE_OP__MDS_LOOKUP, &req.base,
				&weir__attr_rep__descriptor, (void **)&rep);
	if (!r && req.walk && rep->redirect_at && rep->n_walk)
		mdc_walk_put(fs, t0, req.lease_session, key, rep);
	if (r == -ENOENT || (!r && !rep->redirect_at) ||
	    (!r && rt->rt_nofollow && !(rep->redirect_path && rep->redirect_path[0]) &&
	     mdc_last_is_name(rt->rt_t->mt_name))) {
		/* it resolves on that MDT now (the namespace changed): again
		 * there. So does a call on the last name itself (a create, a
		 * remove, a rename; rt_nofollow) whose inode is another MDT's
		 * (a remote entry): the name's MDT does it (mds/dtx.c) */
		if (rep)
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		return true;
	}
	if (r) {
		*rc = r;
		return false;
	}
	char *path = strdup(rep->redirect_path ? rep->redirect_path : "");
	if (path)
		wc_fid_from_pb(rep->redirect_at, &rt->rt_at);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	if (!path) {
		*rc = -ENOMEM;
		return false;
	}
	uint32_t pflags = rt->rt_t->mt_pflags;
	free(rt->rt_path);
	rt->rt_path = path;
	rt->rt_next = (struct wc_mdc_target){ .mt_at = &rt->rt_at, .mt_name = path,
					      .mt_pflags = pflags };
	rt->rt_t = &rt->rt_next;
	rt->rt_mdt = (uint32_t)weir_fid_mdt(&rt->rt_at);
	WEIR_LOG_DEBUG("walk goes on at MDT%04x: at=" WEIR_FID_F " path=%s", rt->rt_mdt,
		       WEIR_FID_P(&rt->rt_at), path);
	return true;
}

/*
 * A call on two targets (LINK, RENAME: \a rs and \a rd) answered \a *rc:
 * after -EREMOTE each is redirected on its own (mdc_route_next()); the
 * caller sends the call again when both are then on one MDT.
 */
static bool mdc_route_pair(struct weir_fs *fs, struct mdc_route *rs, struct mdc_route *rd,
			   int *rc)
{
	if (*rc != -EREMOTE)
		return false;
	int r1 = *rc, r2 = *rc;
	bool a = mdc_route_next(fs, rs, &r1);
	bool b = mdc_route_next(fs, rd, &r2);
	if (a && b)
		return true;
	*rc = !a ? r1 : r2;
	return false;
}

/* A call on two targets, on the MDT both are on (mdc_routed_pair()). */
typedef int (*mdc_pair_fn)(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *src,
			   const struct wc_mdc_target *dst, void *arg);

int wc_mdc_lookup(struct weir_fs *fs, const struct wc_mdc_target *t, struct wc_attr *a,
		  struct weir_layout *lo);

/*
 * A link or rename whose two names are on different MDTs (docs/dne.md,
 * step 3): sent to the MDT of the new name \a rd, which coordinates it,
 * with the source as that MDT can reach it on another: LINK (\a link) the
 * object's FID (looked up here, the last name followed as the link
 * follows it); RENAME the source's directory FID (looked up here) and its
 * last name. \return the call's answer; -EXDEV for a source that names no
 * single entry (a trailing slash, ".", ".."). (A directory moved across
 * MDTs answers -EXDEV from the MDSs.)
 */
static int mdc_cross_pair(struct weir_fs *fs, const struct wc_mdc_target *src,
			  struct mdc_route *rd, mdc_pair_fn fn, void *arg, bool link)
{
	struct wc_attr a;
	struct weir_fid at;
	char *dir = NULL;
	const char *last;
	int rc;
	if (src->mt_fid) {
		at = *src->mt_fid;
		last = "";
	} else if (link) {
		uint32_t pf = src->mt_pflags & WEIR__PATH_FLAG__PF_FOLLOW
				      ? 0
				      : WEIR__PATH_FLAG__PF_NOFOLLOW;
		rc = wc_mdc_lookup(fs, WC_MDC_PATH(src->mt_at, src->mt_name, pf), &a, NULL);
		if (rc)
			return rc;
		at = a.a_fid;
		last = "";
	} else {
		const char *name = src->mt_name ? src->mt_name : "";
		size_t l = strlen(name);
		if (!l || name[l - 1] == '/')
			return -EXDEV;
		const char *sl = strrchr(name, '/');
		last = sl ? sl + 1 : name;
		if (!strcmp(last, ".") || !strcmp(last, ".."))
			return -EXDEV;
		if (sl) {
			dir = strndup(name, (size_t)(sl - name) + 1); /* "/" for "/x" */
			if (!dir)
				return -ENOMEM;
			rc = wc_mdc_lookup(fs, WC_MDC_PATH(src->mt_at, dir, 0), &a, NULL);
			free(dir);
			if (rc)
				return rc;
			if (!S_ISDIR(a.a_mode))
				return -ENOTDIR;
			at = a.a_fid;
		} else {
			at = src->mt_at ? *src->mt_at : fs->fs_root;
		}
	}
	const struct wc_mdc_target *s =
		WC_MDC_PATH(&at, last, src->mt_pflags & ~(uint32_t)WEIR__PATH_FLAG__PF_FOLLOW);
	WEIR_LOG_DEBUG("%s across MDTs: source at=" WEIR_FID_F " name=%s, sent to MDT%04x",
		       link ? "link" : "rename", WEIR_FID_P(&at), last, rd->rt_mdt);
	do
		rc = fn(fs, rd->rt_mdt, s, rd->rt_t, arg);
	while (mdc_route_next(fs, rd, &rc));
	return rc;
}

/*
 * \a fn on \a src and \a dst (LINK, RENAME), sent again after redirects
 * (mdc_route_pair()); when the two end on different MDTs, to the new name's
 * MDT (mdc_cross_pair(): \a link says which call it is).
 */
static int mdc_routed_pair(struct weir_fs *fs, const struct wc_mdc_target *src,
			   const struct wc_mdc_target *dst, mdc_pair_fn fn, void *arg, bool link)
{
	struct mdc_route rs, rd;
	int rc;
	/* rename follows neither name; link its source with AT_SYMLINK_FOLLOW only */
	bool sfollow = !(src->mt_pflags & WEIR__PATH_FLAG__PF_FOLLOW);
	mdc_route_init(fs, &rs, src, sfollow, true);
	mdc_route_init(fs, &rd, dst, true, true);
	do {
		if (rs.rt_mdt != rd.rt_mdt && rs.rt_local != rd.rt_local) {
			/* one name placed from the cache, the other not (a
			 * deeper path, an uncached directory): both from the
			 * start, where the MDSs' redirects place them */
			mdc_route_init(fs, &rs, src, sfollow, false);
			mdc_route_init(fs, &rd, dst, true, false);
		}
		if (rs.rt_mdt != rd.rt_mdt) {
			rc = mdc_cross_pair(fs, src, &rd, fn, arg, link);
			break;
		}
		rc = fn(fs, rs.rt_mdt, rs.rt_t, rd.rt_t, arg);
	} while (mdc_route_pair(fs, &rs, &rd, &rc));
	mdc_route_fini(&rs);
	mdc_route_fini(&rd);
	return rc;
}

/*
 * `return CALL` with CALL made on \a t's MDT, and again after each
 * redirect: CALL names the target as `rt.rt_t` and the MDT as `rt.rt_mdt`.
 * \a nofollow: the call never follows a symlink in the last name.
 */
#define MDC_ROUTED_NF(type, fs, t, nofollow, CALL)      \
	do {                                             \
		struct mdc_route rt;                     \
		type rv;                                 \
		int rrc;                                 \
		mdc_route_init((fs), &rt, (t), (nofollow), true); \
		for (;;) {                               \
			rv = (CALL);                     \
			rrc = rv < 0 ? (int)rv : 0;      \
			if (!mdc_route_next((fs), &rt, &rrc)) \
				break;                   \
		}                                        \
		mdc_route_fini(&rt);                     \
		return rv < 0 ? (type)rrc : rv;          \
	} while (0)
/* MDC_ROUTED_NF() of a call that follows its last name as mt_pflags say. */
#define MDC_ROUTED(type, fs, t, CALL) MDC_ROUTED_NF(type, fs, t, false, CALL)

/* ------------------------------------------------------------ the metadata cache (client/mdl.c) */

/*
 * The directory of \a t when it names one entry of it (a single name,
 * not "." or ".."): what the name cache keys; NULL otherwise.
 */
static const struct weir_fid *mdc_name_dir(struct weir_fs *fs, const struct wc_mdc_target *t)
{
	const char *n = t->mt_name;
	if (t->mt_fid || !n || !*n || strchr(n, '/') || !strcmp(n, ".") || !strcmp(n, ".."))
		return NULL;
	return t->mt_at ? t->mt_at : &fs->fs_root;
}

/*
 * The last name of \a path into \a out (NAME_MAX + 1 bytes), trailing
 * slashes dropped. \return false for none, ".", ".." or a name too long.
 */
static bool mdc_path_last(const char *path, char *out)
{
	if (!path)
		return false;
	size_t n = strlen(path);
	while (n && path[n - 1] == '/')
		n--;
	size_t b = n;
	while (b && path[b - 1] != '/')
		b--;
	size_t len = n - b;
	if (!len || len > NAME_MAX || (len == 1 && path[b] == '.') ||
	    (len == 2 && path[b] == '.' && path[b + 1] == '.'))
		return false;
	memcpy(out, path + b, len);
	out[len] = '\0';
	return true;
}

/*
 * This mount changed \a t (\a child: the object the name leads to changes
 * too, e.g. its nlink or ctime): the MDS does not call back the changer's
 * own leases, so its cache forgets what it changed here (client/mdl.c).
 */
static void mdc_changed_to(struct weir_fs *fs, const struct wc_mdc_target *t, bool child,
			   uint64_t t0, const struct weir_fid *now, const struct wc_attr *parent,
			   const struct weir_fid *victim);

static void mdc_changed(struct weir_fs *fs, const struct wc_mdc_target *t, bool child)
{
	mdc_changed_to(fs, t, child, 0, NULL, NULL, NULL);
}

/*
 * mdc_changed(), knowing what the name of \a t is after the change (\a now:
 * its FID, a zero FID when the name is gone; NULL: not known), the
 * directory's attributes after it (\a parent, from the reply; NULL or a
 * zero FID: none) and when its request went (\a t0, wc_mdl_stamp()): the
 * cache keeps the result. \a victim: the object the name led to before,
 * from the reply (NULL or a zero FID: not known).
 */
static void mdc_changed_to(struct weir_fs *fs, const struct wc_mdc_target *t, bool child,
			   uint64_t t0, const struct weir_fid *now, const struct wc_attr *parent,
			   const struct weir_fid *victim)
{
	if (!fs->fs_mdl)
		return;
	if (t->mt_fid) {
		wc_mdl_changed(fs, t->mt_fid);
		return;
	}
	if (t->mt_at && t->mt_name && !*t->mt_name) { /* the directory (or file) at itself */
		wc_mdl_changed(fs, t->mt_at);
		return;
	}
	const struct weir_fid *dir = mdc_name_dir(fs, t);
	char last[NAME_MAX + 1];
	if (dir)
		wc_mdl_changed_name(fs, dir, t->mt_name, child, t0, now, parent, victim);
	else if (victim && !weir_fid_is_zero(victim) && parent && !weir_fid_is_zero(&parent->a_fid) &&
		 mdc_path_last(t->mt_name, last))
		/* a path the cache did not resolve, whose reply says which
		 * directory held its last name and which object it led to (an
		 * unlink's): those, nothing else (and nothing kept: no t0) */
		wc_mdl_changed_name(fs, &parent->a_fid, last, child, 0, NULL, NULL, victim);
	else
		wc_mdl_changed(fs, NULL); /* a path: what it named is not known here */
}

/*
 * The key of \a cred in the cache's search rights (wc_mdl_walk): a hash of
 * uid, gid and the groups, never 0. The MDS maps them (node map) the same
 * way for every request of this mount, so equal keys get equal answers.
 */
static uint64_t mdc_cred_key(const Weir__Cred *cred)
{
	uint64_t h = weir_mix64(((uint64_t)cred->uid << 32) ^ cred->gid ^ 0x9e3779b97f4a7c15ULL);
	for (size_t i = 0; i < cred->n_groups; i++)
		h = weir_mix64(h ^ cred->groups[i]);
	return h ? h : 1;
}


/*
 * A path target \a t ("/a/b/c", or "b/c" from mt_at) whose directory part
 * the cache resolves for the caller's credentials (every directory on the
 * way leased and searchable by them, as the MDS proved: wc_mdl_walk()) is
 * the same target as (that directory, "c"): the MDS then walks nothing,
 * and after a change the cache forgets that name only, not everything
 * (a change by a path it cannot place drops the whole cache). A target
 * that names no directory part, ends with '/', ends with "." or "..", or
 * whose directory part the cache does not hold (a symlink on the way: the
 * MDS follows it) is returned as it is. \a remote_dir: a directory part
 * that is a directory of MDT k, known by its name alone (wc_mdl_walk()), is
 * resolved too. \return \a t or &ml->ml_t.
 */
static const struct wc_mdc_target *mdc_local_ex(struct weir_fs *fs, const struct wc_mdc_target *t,
						struct mdc_local *ml, bool remote_dir)
{
	const char *p = t->mt_name;
	if (t->mt_fid || !p || !fs->fs_mdl || !fs->fs_md_paths)
		return t;
	size_t len = strlen(p);
	const char *slash = strrchr(p, '/');
	if (!slash || len > WC_PATH_MAX || p[len - 1] == '/' ||
	    (size_t)(slash - p) >= sizeof(ml->ml_path))
		return t;
	const char *base = slash + 1;
	if (!strcmp(base, ".") || !strcmp(base, "..") || strlen(base) > WC_NAME_MAX)
		return t;
	const char *q = p;
	while (q < slash && *q == '/')
		q++;
	if (q == slash) {
		/* "/c" (or "//c"): the root's name */
		ml->ml_dir = fs->fs_root;
	} else {
		Weir__Cred cred;
		wc_cred_init(fs, &cred);
		uint64_t key = mdc_cred_key(&cred);
		size_t dl = (size_t)(slash - p);
		memcpy(ml->ml_path, p, dl);
		ml->ml_path[dl] = '\0';
		struct wc_attr a;
		if (wc_mdl_walk(fs, key, t->mt_at, ml->ml_path, false, false, remote_dir, &a, NULL) ||
		    !S_ISDIR(a.a_mode))
			return t;
		ml->ml_dir = a.a_fid;
	}
	ml->ml_t = (struct wc_mdc_target){ .mt_at = &ml->ml_dir, .mt_name = base,
					   .mt_pflags = t->mt_pflags };
	return &ml->ml_t;
}

/*
 * mdc_local() for a call already aimed at its MDT: a directory part on
 * MDT0 only (one on MDT k is placed by mdc_route_init(), which picks the
 * MDT).
 */
static const struct wc_mdc_target *mdc_local(struct weir_fs *fs, const struct wc_mdc_target *t,
					     struct mdc_local *ml)
{
	return mdc_local_ex(fs, t, ml, false);
}

/* The walk of a LOOKUP's reply \a rep into the cache (wc_mdl_walk_put). */
static void mdc_walk_put(struct weir_fs *fs, uint64_t t0, uint64_t session, uint64_t key,
			 const Weir__AttrRep *rep)
{
	struct wc_walk_step st[32];
	size_t nr = 0;
	for (size_t i = 0; i < rep->n_walk && nr < 32; i++) {
		const Weir__WalkStep *w = rep->walk[i];
		memset(&st[nr], 0, sizeof(st[nr]));
		if (!w->dir || !w->child || !w->name ||
		    wc_attr_decode(w->dir, NULL, &st[nr].ws_dir, NULL))
			break;
		st[nr].ws_bits = w->lease_bits;
		st[nr].ws_name = w->name;
		wc_fid_from_pb(w->child, &st[nr].ws_child);
		st[nr].ws_child_type = (uint8_t)w->child_type;
		nr++;
	}
	wc_mdl_walk_put(fs, t0, session, key, st, nr);
}

/* ------------------------------------------------------------ lookup, getattr, setattr */

static int mdc_lookup_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *t, struct wc_attr *a,
		  struct weir_layout *lo)
{
	Weir__PathReq req = WEIR__PATH_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;

	if (t->mt_fid)
		return -EINVAL;
	/* one name, not followed: the name cache's (with the object's attributes) */
	const struct weir_fid *dir = a && (t->mt_pflags & WEIR__PATH_FLAG__PF_NOFOLLOW)
					 ? mdc_name_dir(fs, t)
					 : NULL;
	if (dir && fs->fs_mdl) {
		struct weir_fid f;
		int nrc = wc_mdl_name_get(fs, dir, t->mt_name, &f);
		if (nrc == -ENOENT)
			return -ENOENT;
		if (!nrc && wc_mdl_attr_get(fs, &f, a, lo))
			return 0;
	}
	MDC_PATH_FILL(fs, req, t, &cred, &pat);
	req.flags = t->mt_pflags;
	/* a path walked in the cache, for these credentials (client/mdl.c) */
	uint64_t key = a && fs->fs_mdl && fs->fs_md_paths && t->mt_name ? mdc_cred_key(&cred) : 0;
	if (key) {
		int wrc = wc_mdl_walk(fs, key, t->mt_at, t->mt_name,
				      t->mt_pflags & WEIR__PATH_FLAG__PF_NOFOLLOW, true, false, a, lo);
		if (wrc != -EAGAIN)
			return wrc;
	}
	uint32_t bits = 0;
	uint64_t t0 = 0;
	if (dir || key) {
		t0 = wc_mdl_stamp(fs); /* first (then the session): client/mdl.c, "Stamps" */
		req.lease_want = mdc_want(fs, mdt, &req.lease_session);
		req.walk = key && req.lease_want; /* the directories on the way, leased */
	}
	if (!req.walk) {
		int rc = mdc_call_change(fs, mdt, WEIR__WIRE_OP__MDS_LOOKUP, &req.base, a, lo, NULL,
					 &bits);
		if (!rc && bits)
			wc_mdl_attr_put(fs, t0, req.lease_session, bits, a, lo);
		if (dir && (!rc || rc == -ENOENT))
			wc_mdl_name_put(fs, t0, dir, t->mt_name, rc ? NULL : &a->a_fid,
					rc ? 0 : (uint8_t)IFTODT(a->a_mode));
		return rc;
	}
	Weir__AttrRep *rep = NULL;
	int rc = wc_mds_call_mdt(fs, mdt, WEIR__WIRE_OP__MDS_LOOKUP, &req.base, &weir__attr_rep__descriptor,
			     (void **)&rep);
	if (rc) {
		if (dir && rc == -ENOENT)
			wc_mdl_name_put(fs, t0, dir, t->mt_name, NULL, 0);
		return rc;
	}
	memset(a, 0, sizeof(*a));
	rc = wc_attr_decode(rep->attr, rep->layout, a, lo);
	if (!rc && rep->lease_bits)
		wc_mdl_attr_put(fs, t0, req.lease_session, rep->lease_bits, a, lo);
	if (!rc && rep->n_walk)
		mdc_walk_put(fs, t0, req.lease_session, key, rep);
	else if (!rc && dir) /* an MDS that walks nothing: the name alone, as before */
		wc_mdl_name_put(fs, t0, dir, t->mt_name, &a->a_fid,
				(uint8_t)IFTODT(a->a_mode));
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

int wc_mdc_lookup(struct weir_fs *fs, const struct wc_mdc_target *t, struct wc_attr *a,
		  struct weir_layout *lo)
{
	if (t->mt_fid)
		return -EINVAL;
	MDC_ROUTED(int, fs, t, mdc_lookup_on(fs, rt.rt_mdt, rt.rt_t, a, lo));
}

static int mdc_lookup_layout_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *t, struct wc_attr *a,
			 struct weir_layout *lo, struct wc_mdc_dirdef *dd)
{
	Weir__PathReq req = WEIR__PATH_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;
	Weir__AttrRep *rep;
	int rc;

	MDC_PATH_FILL(fs, req, t, &cred, &pat);
	req.flags = t->mt_pflags;
	rc = wc_mds_call_mdt(fs, mdt, WEIR__WIRE_OP__MDS_LOOKUP, &req.base, &weir__attr_rep__descriptor,
			 (void **)&rep);
	if (rc)
		return rc;
	memset(dd, 0, sizeof(*dd));
	rc = wc_attr_decode(rep->attr, NULL, a, NULL);
	if (!rc && S_ISDIR(a->a_mode) && rep->layout) {
		const Weir__Layout *pl = rep->layout;

		dd->dd_set = true;
		dd->dd_pattern = pl->pattern;
		dd->dd_stripe_size = pl->stripe_size;
		dd->dd_stripe_count = pl->stripe_count;
		dd->dd_gen = pl->gen;
		dd->dd_stripe_offset = pl->stripe_offset;
		dd->dd_nr_osts = WEIR_MIN(pl->n_osts, (size_t)WEIR_LAYOUT_MAX_STRIPES);
		if (dd->dd_nr_osts) /* (pl->osts is NULL without OSTs) */
			memcpy(dd->dd_osts, pl->osts, dd->dd_nr_osts * sizeof(dd->dd_osts[0]));
	} else if (!rc && !S_ISDIR(a->a_mode)) {
		rc = wc_attr_decode(rep->attr, rep->layout, a, lo);
	}
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

int wc_mdc_lookup_layout(struct weir_fs *fs, const struct wc_mdc_target *t, struct wc_attr *a,
			 struct weir_layout *lo, struct wc_mdc_dirdef *dd)
{
	MDC_ROUTED(int, fs, t, mdc_lookup_layout_on(fs, rt.rt_mdt, rt.rt_t, a, lo, dd));
}

int wc_mdc_getattr(struct weir_fs *fs, const struct weir_fid *fid, struct wc_attr *a,
		   struct weir_layout *lo)
{
	uint32_t mdt = (uint32_t)weir_fid_mdt(fid); /* its MDT (client/mdt.c) */
	Weir__FidReq req = WEIR__FID_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf;

	if (a && wc_mdl_attr_get(fs, fid, a, lo))
		return 0;
	MDC_FID_FILL(fs, req, fid, &cred, &pf);
	uint32_t bits = 0;
	uint64_t t0 = 0;
	if (a) {
		t0 = wc_mdl_stamp(fs); /* first (then the session): client/mdl.c, "Stamps" */
		req.lease_want = mdc_want(fs, mdt, &req.lease_session);
	}
	int rc = mdc_call_change(fs, mdt, WEIR__WIRE_OP__MDS_GETATTR, &req.base, a, lo, NULL, &bits);
	if (!rc && bits)
		wc_mdl_attr_put(fs, t0, req.lease_session, bits, a, lo);
	return rc;
}

static int mdc_setattr_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *t,
		   const struct wc_mdc_sattr *sa, struct wc_attr *a, struct weir_layout *lo)
{
	Weir__SetattrReq req = WEIR__SETATTR_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf, pat;
	struct mdc_local ml;

	t = mdc_local(fs, t, &ml);

	if (t->mt_fid) {
		req.fid = mdc_pb(t->mt_fid, &pf);
	} else {
		req.at = mdc_pb(t->mt_at, &pat);
		req.path = (char *)t->mt_name;
		req.flags = t->mt_pflags;
	}
	req.valid = sa->sa_valid;
	req.mode = sa->sa_mode;
	req.uid = sa->sa_uid;
	req.gid = sa->sa_gid;
	req.size = sa->sa_size;
	req.atime_ns = sa->sa_atime_ns;
	req.mtime_ns = sa->sa_mtime_ns;
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	struct wc_attr tmp;
	struct wc_attr *ap = a ? a : &tmp;
	int rc = mdc_call_attr(fs, mdt, WEIR__WIRE_OP__MDS_SETATTR, &req.base, ap, lo);
	/*
	 * The object changes, not its name nor its directory: by FID, that
	 * entry; by name, the object the reply names (a name may have led
	 * through a symlink to another object: chmod of "lnk" changes the
	 * directory it points to, whose search rights the cache may hold).
	 * Without the reply, what changed is not known: everything goes.
	 */
	if (rc == -EREMOTE)
		return rc; /* nothing changed: the call goes on at another MDT */
	if (t->mt_fid)
		mdc_changed(fs, t, true);
	else
		wc_mdl_changed(fs, rc ? NULL : &ap->a_fid);
	return rc;
}

int wc_mdc_setattr(struct weir_fs *fs, const struct wc_mdc_target *t,
		   const struct wc_mdc_sattr *sa, struct wc_attr *a, struct weir_layout *lo)
{
	MDC_ROUTED(int, fs, t, mdc_setattr_on(fs, rt.rt_mdt, rt.rt_t, sa, a, lo));
}

/* ------------------------------------------------------------ open, close, sync */

/* O_* flags as OpenFlag bits. */
static uint32_t mdc_open_flags(int flags)
{
	int acc = flags & O_ACCMODE;
	uint32_t of = 0;

	if (acc == O_RDONLY || acc == O_RDWR)
		of |= WEIR__OPEN_FLAG__OF_READ;
	if (acc == O_WRONLY || acc == O_RDWR)
		of |= WEIR__OPEN_FLAG__OF_WRITE;
	if (flags & O_CREAT)
		of |= WEIR__OPEN_FLAG__OF_CREAT;
	if (flags & O_EXCL)
		of |= WEIR__OPEN_FLAG__OF_EXCL;
	if (flags & O_TRUNC)
		of |= WEIR__OPEN_FLAG__OF_TRUNC;
	if (flags & O_APPEND)
		of |= WEIR__OPEN_FLAG__OF_APPEND;
	if (flags & O_DIRECTORY)
		of |= WEIR__OPEN_FLAG__OF_DIRECTORY;
	if (flags & O_NOFOLLOW)
		of |= WEIR__OPEN_FLAG__OF_NOFOLLOW;
	if (flags & WEIR_O_EXEC)
		of |= WEIR__OPEN_FLAG__OF_EXEC; /* the MDS refuses it with anything but reading */
	return of;
}

static int mdc_open_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *t, int flags, mode_t mode,
		bool hsm, struct wc_mdc_opened *o)
{
	Weir__Fid pat;
	Weir__OpenReq req = WEIR__OPEN_REQ__INIT;
	Weir__Layout want = WEIR__LAYOUT__INIT;
	Weir__Cred cred;
	Weir__OpenRep *rep;
	struct mdc_local ml;
	int rc;

	if (hsm) {
		/* the copytool's open: as root, whatever the mount's credentials */
		weir__cred__init(&cred);
	} else {
		t = mdc_local(fs, t, &ml);
		wc_cred_init(fs, &cred);
	}
	o->mo_uid = cred.uid;
	want.stripe_count = 0;
	want.stripe_offset = -1;
	req.cred = &cred;
	req.path = (char *)t->mt_name;
	req.at = mdc_pb(t->mt_at, &pat); /* weir_openat() (client/ns_posix.c) */
	req.flags = mdc_open_flags(flags);
	if (hsm)
		req.flags |= WEIR__OPEN_FLAG__OF_HSM;
	req.mode = (uint32_t)(mode & 07777);
	req.layout = &want;
	/* one replay id for both sends: a create the MDS applied before it
	 * restarted is answered from its reply cache, not -EEXIST */
	struct weir_xid_hdr xid;
	wc_xid_new(fs, true, &xid);
	uint64_t t0 = wc_mdl_stamp(fs); /* first (then the session): client/mdl.c, "Stamps" */
	/* a create for writing: the creator may lease the new file's
	 * attributes, on a mount that caches names and walks paths (weir-fuse's).
	 * A process that may end without unmounting (the shim's, or any libweir
	 * program's by default) would leave a lease on each file it made,
	 * holding the next change of it by another client until the MDS evicts
	 * the session. */
	bool want_lease = !hsm && (flags & O_CREAT) && (flags & O_ACCMODE) != O_RDONLY &&
			  wc_mdl_names(fs) && fs->fs_md_paths;
	struct wc_mdt *md;
	rc = mdt ? wc_mdt_get_wait(fs, mdt, &md) : 0; /* an MDT k away: waited for */
	if (!rc)
		rc = wc_mdt_session(fs, mdt, &req.session, &o->mo_epoch);
	if (rc) {
		wc_xid_put(fs, &xid);
		return rc;
	}
	if (want_lease && (req.lease_want = mdc_want(fs, mdt, &req.lease_session)))
		req.lease_want &= WEIR__MDL_BITS__MDL_ATTR;
	rc = wc_mds_call_xid_mdt(fs, mdt, WEIR__WIRE_OP__MDS_OPEN, &req.base, &weir__open_rep__descriptor,
			     (void **)&rep, &xid);
	if (rc == -ESTALE && !wc_mdt_session_lost(fs, mdt, req.session) &&
	    !wc_mdt_session(fs, mdt, &req.session, &o->mo_epoch)) {
		/* evicted (or the MDS restarted): open again in the new session */
		if (req.lease_want)
			req.lease_session = req.session;
		rc = wc_mds_call_xid_mdt(fs, mdt, WEIR__WIRE_OP__MDS_OPEN, &req.base,
				     &weir__open_rep__descriptor, (void **)&rep, &xid);
	}
	wc_xid_put(fs, &xid);
	/* a create, a truncate, an open for writing (the file's size turns the
	 * OSTs'): what this mount cached of it is out of date */
	bool changes = (flags & (O_CREAT | O_TRUNC)) || (flags & O_ACCMODE) != O_RDONLY;
	if (rc == -EREMOTE)
		return rc; /* nothing changed: the call goes on at another MDT */
	if (changes && rc) {
		/* (the MDS may have applied it: a timeout, a signal) a truncate or a
		 * create, through a symlink maybe, of an object not known here */
		if (flags & (O_CREAT | O_TRUNC))
			wc_mdl_changed(fs, NULL);
		else
			mdc_changed(fs, t, false);
	}
	if (rc)
		return rc;
	memset(o->mo_attr, 0, sizeof(*o->mo_attr));
	rc = wc_attr_decode(rep->attr, rep->layout, o->mo_attr, o->mo_layout);
	memset(o->mo_objs, 0, sizeof(o->mo_objs));
	if (rep->layout && rep->layout->objects.len)
		memcpy(o->mo_objs, rep->layout->objects.data,
		       WEIR_MIN(rep->layout->objects.len, sizeof(o->mo_objs)));
	o->mo_handle = rep->handle;
	o->mo_created = rep->created;
	memset(&o->mo_dir_parent, 0, sizeof(o->mo_dir_parent));
	if (rep->dir_parent) {
		o->mo_dir_parent.fid_seq = rep->dir_parent->seq;
		o->mo_dir_parent.fid_oid = rep->dir_parent->oid;
	}
	uint32_t bits = rep->created ? rep->lease_bits & WEIR__MDL_BITS__MDL_ATTR : 0;
	struct wc_attr parent;
	mdc_parent_decode(rep->created ? rep->parent : NULL, &parent);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	/*
	 * A new name; the object itself below, by its FID. The name is the new
	 * file's only when the create did not follow a symlink left dangling
	 * there (O_EXCL and O_NOFOLLOW follow none).
	 */
	bool at_name = !rc && o->mo_created && (flags & (O_EXCL | O_NOFOLLOW));
	if (changes)
		mdc_changed_to(fs, t, false, t0, at_name ? &o->mo_attr->a_fid : NULL,
			       rc ? NULL : &parent, NULL);
	/* a create that may have followed a dangling symlink made a name in a
	 * directory not known here, which may be cached as absent (the MDS does
	 * not call back the changer): with names cached, drop everything */
	if (!rc && o->mo_created && !at_name && wc_mdl_names(fs))
		wc_mdl_changed(fs, NULL);
	if (changes && !rc && bits && req.lease_want) {
		/*
		 * The creator's lease: the file is open for writing (its size
		 * the OSTs' for anyone else), but the MDS calls the lease back
		 * before another open for writing, and this mount's own first
		 * write through any handle drops it (wc_file_touch): until then
		 * the size at the create, 0, is exact.
		 */
		struct wc_attr a = *o->mo_attr;
		a.a_flags &= ~(uint32_t)WEIR__ATTR_FLAG__AF_SIZE_STALE;
		wc_mdl_changed_put(fs, t0, req.lease_session, bits, &a, o->mo_layout);
	} else if (changes && !rc) {
		wc_mdl_changed(fs, &o->mo_attr->a_fid);
	} else if (changes) {
		wc_mdl_changed(fs, NULL); /* a reply not understood: what changed is not known */
	}
	if (rc && !weir_fid_is_zero(&o->mo_attr->a_fid))
		wc_mdc_close(fs, &o->mo_attr->a_fid, o->mo_handle, NULL, false, false);
	return rc;
}

int wc_mdc_open(struct weir_fs *fs, const struct wc_mdc_target *t, int flags, mode_t mode,
		bool hsm, struct wc_mdc_opened *o)
{
	MDC_ROUTED(int, fs, t, mdc_open_on(fs, rt.rt_mdt, rt.rt_t, flags, mode, hsm, o));
}

int wc_mdc_close(struct weir_fs *fs, const struct weir_fid *fid, uint64_t handle,
		 const struct wc_mdc_report *r, bool oneway, bool lease)
{
	uint32_t mdt = (uint32_t)weir_fid_mdt(fid); /* its MDT (client/mdt.c) */
	Weir__CloseReq req = WEIR__CLOSE_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf;

	MDC_FID_FILL(fs, req, fid, &cred, &pf);
	req.handle = handle;
	if (r) {
		req.has_size = r->mr_has_size;
		req.size = r->mr_size;
		req.blocks = r->mr_blocks;
		req.size_epoch = r->mr_epoch;
		req.mtime_ns = r->mr_mtime_ns; /* the MDS makes it the mtime (and ctime) */
		req.objects_written.len = r->mr_objs_len; /* a lost one then reads -EIO */
		req.objects_written.data = (uint8_t *)r->mr_objs;
	}
	/* with pid: drops the process's locks */
	if (wc_mdt_session(fs, mdt, &req.session, NULL))
		req.session = 0;
	req.pid = (int32_t)getpid();
	uint64_t t0 = 0;
	if (lease && !oneway) {
		t0 = wc_mdl_stamp(fs); /* first (then the session): client/mdl.c, "Stamps" */
		req.lease_want = mdc_want(fs, mdt, &req.lease_session);
	}
	Weir__AttrRep *rep = NULL;
	int rc = oneway ? wc_mds_oneway_mdt(fs, mdt, WEIR__WIRE_OP__MDS_CLOSE, &req.base)
			: wc_mds_call_mdt(fs, mdt, WEIR__WIRE_OP__MDS_CLOSE, &req.base,
				      req.lease_want ? &weir__attr_rep__descriptor : NULL,
				      req.lease_want ? (void **)&rep : NULL);
	struct wc_attr a;
	struct weir_layout lo;
	uint32_t bits = 0;
	memset(&a, 0, sizeof(a));
	if (!rc && rep && rep->attr && rep->lease_bits &&
	    !wc_attr_decode(rep->attr, rep->layout, &a, &lo) && weir_fid_eq(&a.a_fid, fid))
		bits = rep->lease_bits;
	if (rep)
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	/* a writer's close: the size and times change (what the reply leased
	 * replaces what was cached, when nothing touched the file since t0) */
	if (bits)
		wc_mdl_changed_put(fs, t0, req.lease_session, bits, &a, &lo);
	else if (r)
		wc_mdl_changed(fs, fid);
	else
		wc_mdl_closed(fs, fid);
	return rc;
}

int wc_mdc_sync(struct weir_fs *fs, const struct weir_fid *fid, const struct wc_mdc_report *r)
{
	uint32_t mdt = fid ? (uint32_t)weir_fid_mdt(fid) : 0; /* its MDT (client/mdt.c) */
	Weir__SyncReq req = WEIR__SYNC_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf;

	MDC_FID_FILL(fs, req, fid, &cred, &pf);
	if (r) {
		req.has_size = r->mr_has_size;
		req.size = r->mr_size;
		req.blocks = r->mr_blocks;
		req.size_epoch = r->mr_epoch;
		req.mtime_ns = r->mr_mtime_ns;
		req.objects_written.len = r->mr_objs_len;
		req.objects_written.data = (uint8_t *)r->mr_objs;
	}
	int rc = wc_mds_call_mdt(fs, mdt, WEIR__WIRE_OP__MDS_SYNC, &req.base, NULL, NULL);
	if (fid && r)
		wc_mdl_changed(fs, fid);
	return rc;
}

/* ------------------------------------------------------------ create, link, remove */

/*
 * MKDIR, MKNOD or SYMLINK \a op of \a t, sent after \a t0 (wc_mdl_stamp()):
 * the cache keeps the new name, the directory's attributes after it, and
 * what the reply leased (MKDIR asked with \a session: a directory this
 * mount made is known empty).
 */
static int mdc_make(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *t, uint16_t op,
		    const ProtobufCMessage *req, uint64_t t0, uint64_t session, struct wc_attr *a,
		    struct weir_layout *lo)
{
	struct wc_attr na, parent;
	struct weir_layout nlo;
	uint32_t bits = 0;
	if (!a)
		a = &na;
	if (!lo)
		lo = &nlo;
	int rc = mdc_call_change(fs, mdt, op, req, a, lo, &parent, &bits);
	if (rc == -EREMOTE)
		return rc; /* nothing changed: the call goes on at another MDT */
	mdc_changed_to(fs, t, false, t0, rc ? NULL : &a->a_fid, rc ? NULL : &parent, NULL);
	if (!rc && bits) {
		wc_mdl_attr_put(fs, t0, session, bits, a, lo);
		if (S_ISDIR(a->a_mode))
			wc_mdl_dir_made(fs, t0, &a->a_fid);
	}
	return rc;
}

static int mdc_mkdir_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *t,
			mode_t mode, int where, struct wc_attr *a, struct weir_layout *lo)
{
	Weir__MkdirReq req = WEIR__MKDIR_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;
	struct mdc_local ml;

	t = mdc_local(fs, t, &ml);

	MDC_PATH_FILL(fs, req, t, &cred, &pat);
	req.mode = (uint32_t)(mode & 07777);
	req.mdt_index = where >= 0 ? (uint32_t)where + 1 : 0;
	uint64_t t0 = wc_mdl_stamp(fs);
	/* a lease on the new directory: this mount then knows it empty */
	req.lease_want = mdc_name_dir(fs, t) ? mdc_want(fs, mdt, &req.lease_session) : 0;
	return mdc_make(fs, mdt, t, WEIR__WIRE_OP__MDS_MKDIR, &req.base, t0, req.lease_session, a,
			lo);
}

int wc_mdc_mkdir(struct weir_fs *fs, const struct wc_mdc_target *t, mode_t mode, int mdt,
		 struct wc_attr *a, struct weir_layout *lo)
{
	MDC_ROUTED_NF(int, fs, t, true, mdc_mkdir_on(fs, rt.rt_mdt, rt.rt_t, mode, mdt, a, lo));
}

static int mdc_mknod_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *t, mode_t mode, dev_t rdev,
		 struct wc_attr *a, struct weir_layout *lo)
{
	Weir__MknodReq req = WEIR__MKNOD_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;
	struct mdc_local ml;

	t = mdc_local(fs, t, &ml);

	MDC_PATH_FILL(fs, req, t, &cred, &pat);
	req.mode = (uint32_t)mode;
	req.rdev = (uint64_t)rdev;
	uint64_t t0 = wc_mdl_stamp(fs);
	return mdc_make(fs, mdt, t, WEIR__WIRE_OP__MDS_MKNOD, &req.base, t0, 0, a, lo);
}

int wc_mdc_mknod(struct weir_fs *fs, const struct wc_mdc_target *t, mode_t mode, dev_t rdev,
		 struct wc_attr *a, struct weir_layout *lo)
{
	MDC_ROUTED_NF(int, fs, t, true, mdc_mknod_on(fs, rt.rt_mdt, rt.rt_t, mode, rdev, a, lo));
}

static int mdc_symlink_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *t, const char *target,
		   struct wc_attr *a, struct weir_layout *lo)
{
	Weir__SymlinkReq req = WEIR__SYMLINK_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;
	struct mdc_local ml;

	t = mdc_local(fs, t, &ml);

	MDC_PATH_FILL(fs, req, t, &cred, &pat);
	req.target = (char *)target;
	uint64_t t0 = wc_mdl_stamp(fs);
	return mdc_make(fs, mdt, t, WEIR__WIRE_OP__MDS_SYMLINK, &req.base, t0, 0, a, lo);
}

int wc_mdc_symlink(struct weir_fs *fs, const struct wc_mdc_target *t, const char *target,
		   struct wc_attr *a, struct weir_layout *lo)
{
	MDC_ROUTED_NF(int, fs, t, true, mdc_symlink_on(fs, rt.rt_mdt, rt.rt_t, target, a, lo));
}

static ssize_t mdc_readlink_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *t, char *buf,
			size_t len)
{
	Weir__PathReq req = WEIR__PATH_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;
	Weir__ReadlinkRep *rep;
	size_t tlen;
	int rc;

	MDC_PATH_FILL(fs, req, t, &cred, &pat);
	req.flags = t->mt_pflags;
	rc = wc_mds_call_mdt(fs, mdt, WEIR__WIRE_OP__MDS_READLINK, &req.base,
			 &weir__readlink_rep__descriptor, (void **)&rep);
	if (rc)
		return rc;
	tlen = rep->target ? strlen(rep->target) : 0;
	if (tlen == 0 || tlen > WC_PATH_MAX) {
		WEIR_LOG_ERROR("path=%s len=%zu: bad symlink target in reply", t->mt_name, tlen);
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		return -EPROTO;
	}
	tlen = WEIR_MIN(tlen, len); /* truncated silently, no NUL: readlink(2) */
	if (tlen)
		memcpy(buf, rep->target, tlen);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return (ssize_t)tlen;
}

ssize_t wc_mdc_readlink(struct weir_fs *fs, const struct wc_mdc_target *t, char *buf,
			size_t len)
{
	MDC_ROUTED(ssize_t, fs, t, mdc_readlink_on(fs, rt.rt_mdt, rt.rt_t, buf, len));
}

static int mdc_link_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *src,
		const struct wc_mdc_target *dst, struct wc_attr *a, struct weir_layout *lo)
{
	Weir__LinkReq req = WEIR__LINK_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid psrc, pdst;
	struct mdc_local mls, mld;

	src = mdc_local(fs, src, &mls);
	dst = mdc_local(fs, dst, &mld);

	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.src_at = mdc_pb(src->mt_at, &psrc);
	req.src = (char *)src->mt_name;
	req.dst_at = mdc_pb(dst->mt_at, &pdst);
	req.dst = (char *)dst->mt_name;
	req.flags = src->mt_pflags;
	struct wc_attr tmp;
	struct wc_attr *ap = a ? a : &tmp;
	int rc = mdc_call_attr(fs, mdt, WEIR__WIRE_OP__MDS_LINK, &req.base, ap, lo);
	if (rc == -EREMOTE)
		return rc; /* nothing changed: the call goes on at another MDT */
	mdc_changed(fs, src, true); /* its nlink */
	mdc_changed(fs, dst, false);
	/* the object linked, which the source name may lead to through a
	 * symlink (AT_SYMLINK_FOLLOW): by the reply's FID; without it, what
	 * changed is not known */
	wc_mdl_changed(fs, rc ? NULL : &ap->a_fid);
	return rc;
}

/* mdc_link_on() as an mdc_pair_fn: \a arg is { a, lo }. */
struct mdc_link_out {
	struct wc_attr *lk_a;
	struct weir_layout *lk_lo;
};

static int mdc_link_pair(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *src,
			 const struct wc_mdc_target *dst, void *arg)
{
	struct mdc_link_out *o = arg;
	return mdc_link_on(fs, mdt, src, dst, o->lk_a, o->lk_lo);
}

int wc_mdc_link(struct weir_fs *fs, const struct wc_mdc_target *src,
		const struct wc_mdc_target *dst, struct wc_attr *a, struct weir_layout *lo)
{
	struct mdc_link_out o = { a, lo };
	return mdc_routed_pair(fs, src, dst, mdc_link_pair, &o, true);
}

static int mdc_unlink_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *t, bool is_dir,
		  const struct weir_fid *if_fid)
{
	Weir__UnlinkReq req = WEIR__UNLINK_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat, pf;
	struct mdc_local ml;

	t = mdc_local(fs, t, &ml);

	MDC_PATH_FILL(fs, req, t, &cred, &pat);
	req.is_dir = is_dir;
	req.fid = mdc_pb(if_fid, &pf);
	uint64_t t0 = wc_mdl_stamp(fs);
	struct wc_attr parent;
	struct weir_fid unlinked;
	int rc = mdc_call_unlinked(fs, mdt, WEIR__WIRE_OP__MDS_UNLINK, &req.base, NULL, NULL, &parent,
				   NULL, &unlinked);
	static const struct weir_fid gone; /* zero: the name is no more */
	/* the name, and the object's nlink (by the reply's FID when the name
	 * was not cached) */
	if (rc == -EREMOTE)
		return rc; /* nothing changed: the call goes on at another MDT */
	mdc_changed_to(fs, t, true, t0, rc ? NULL : &gone, rc ? NULL : &parent,
		       rc ? NULL : &unlinked);
	return rc;
}

int wc_mdc_unlink(struct weir_fs *fs, const struct wc_mdc_target *t, bool is_dir,
		  const struct weir_fid *if_fid)
{
	MDC_ROUTED_NF(int, fs, t, true, mdc_unlink_on(fs, rt.rt_mdt, rt.rt_t, is_dir, if_fid));
}

static int mdc_rename_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *src,
		  const struct wc_mdc_target *dst, uint32_t flags)
{
	Weir__RenameReq req = WEIR__RENAME_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid psrc, pdst;
	struct mdc_local mls, mld;

	src = mdc_local(fs, src, &mls);
	dst = mdc_local(fs, dst, &mld);

	const struct weir_fid *dst_at = dst->mt_at;
	if (!dst_at && src->mt_at)
		dst_at = &fs->fs_root; /* from the root: say so, unset means "as at" */
	req.at = mdc_pb(src->mt_at, &psrc);
	req.dst_at = mdc_pb(dst_at, &pdst);
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.src = (char *)src->mt_name;
	req.dst = (char *)dst->mt_name;
	req.flags = flags;
	Weir__RenameRep *rep = NULL;
	int rc = wc_mds_call_mdt(fs, mdt, WEIR__WIRE_OP__MDS_RENAME, &req.base, &weir__rename_rep__descriptor,
			     (void **)&rep);
	/* the moved object's ctime, a victim's nlink: forgotten by FID when the
	 * reply names them, else with whatever the cache holds (mdc_changed()) */
	if (rc == -EREMOTE) {
		if (rep)
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		return rc; /* nothing changed: the call goes on at another MDT */
	}
	bool known = !rc && rep && rep->moved;
	if (known) {
		struct weir_fid f;
		wc_fid_from_pb(rep->moved, &f);
		wc_mdl_changed(fs, &f);
		if (rep->victim) {
			wc_fid_from_pb(rep->victim, &f);
			wc_mdl_changed(fs, &f);
		}
	}
	if (rep)
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	mdc_changed(fs, src, !known);
	mdc_changed(fs, dst, !known);
	return rc;
}

/* mdc_rename_on() as an mdc_pair_fn: \a arg is the flags. */
static int mdc_rename_pair(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *src,
			   const struct wc_mdc_target *dst, void *arg)
{
	return mdc_rename_on(fs, mdt, src, dst, *(uint32_t *)arg);
}

int wc_mdc_rename(struct weir_fs *fs, const struct wc_mdc_target *src,
		  const struct wc_mdc_target *dst, uint32_t flags)
{
	return mdc_routed_pair(fs, src, dst, mdc_rename_pair, &flags, false);
}

/* ------------------------------------------------------------ readdir, access */

/*
 * Readdirplus: what the MDS leased of the entries of \a page into the
 * metadata cache. \a t0 and \a session: the request's (wc_mdl_stamp(),
 * wc_mdl_want()).
 */
static void mdc_readdir_cache(struct weir_fs *fs, const struct weir_fid *dir, uint64_t t0,
			      uint64_t session, const Weir__ReaddirRep *rep)
{
	struct wc_attr a;
	struct weir_layout lo;
	for (size_t i = 0; i < rep->n_entries; i++) {
		const Weir__Dirent *de = rep->entries[i];
		const Weir__AttrRep *ar = de->attr;
		if (!de->name || !de->fid || !*de->name || strlen(de->name) > WC_NAME_MAX ||
		    strchr(de->name, '/'))
			continue; /* (weir_readdir() fails on it) */
		struct weir_fid f;
		wc_fid_from_pb(de->fid, &f);
		/* the name, under the directory's LOOKUP lease, whatever its
		 * inode's lease: every name of a listing read whole is cached
		 * (wc_mdl_dir_listed()) */
		wc_mdl_name_put(fs, t0, dir, de->name, &f, (uint8_t)de->type);
		if (!ar || !ar->attr || !ar->lease_bits)
			continue;
		memset(&a, 0, sizeof(a));
		if (wc_attr_decode(ar->attr, ar->layout, &a, &lo))
			continue;
		if (!weir_fid_eq(&f, &a.a_fid))
			continue; /* not the entry's inode: nothing cached from it */
		wc_mdl_attr_put(fs, t0, session, ar->lease_bits, &a, &lo);
	}
}

int wc_mdc_readdir(struct weir_fs *fs, const struct weir_fid *dir, uint64_t cookie,
		   uint32_t max, bool plus, struct wc_mdc_dirpage *page)
{
	uint32_t mdt = (uint32_t)weir_fid_mdt(dir); /* its MDT (client/mdt.c) */
	Weir__ReaddirReq req = WEIR__READDIR_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pf;
	Weir__ReaddirRep *rep;
	int rc;

	memset(page, 0, sizeof(*page));
	wc_cred_init(fs, &cred);
	req.cred = &cred;
	req.dir = mdc_pb(dir, &pf);
	req.cookie = cookie;
	uint64_t t0 = 0;
	if (plus && fs->fs_mdl && !mdt) { /* without the cache, attributes would go unused */
		req.plus = true;
		t0 = wc_mdl_stamp(fs); /* first (then the session): client/mdl.c, "Stamps" */
		req.lease_want = mdc_want(fs, mdt, &req.lease_session);
		max = WEIR_MIN(max, 1024u);
	}
	req.max_entries = max;
	rc = wc_mds_call_mdt(fs, mdt, WEIR__WIRE_OP__MDS_READDIR, &req.base,
			 &weir__readdir_rep__descriptor, (void **)&rep);
	if (rc)
		return rc;
	if (rep->n_entries == 0 && !rep->eof) {
		WEIR_LOG_ERROR("dir=" WEIR_FID_F ": empty readdir page without eof",
			       WEIR_FID_P(dir));
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		return -EPROTO;
	}
	if (req.lease_want)
		mdc_readdir_cache(fs, dir, t0, req.lease_session, rep);
	page->dp_rep = rep;
	page->dp_nr = rep->n_entries;
	page->dp_eof = rep->eof;
	page->dp_long = rep->n_entries > max;
	return 0;
}

int wc_mdc_dirent_get(const struct wc_mdc_dirpage *page, size_t i, struct wc_mdc_dirent *e)
{
	const Weir__Dirent *de = page->dp_rep->entries[i];
	size_t nlen = de->name ? strlen(de->name) : 0;

	if (nlen == 0 || nlen > WC_NAME_MAX || strchr(de->name, '/') || !de->fid)
		return -EPROTO;
	e->de_name = de->name;
	wc_fid_from_pb(de->fid, &e->de_fid);
	e->de_type = (uint8_t)de->type;
	e->de_cookie = de->cookie;
	return 0;
}

void wc_mdc_dirpage_free(struct wc_mdc_dirpage *page)
{
	if (page->dp_rep)
		protobuf_c_message_free_unpacked(&page->dp_rep->base, NULL);
	memset(page, 0, sizeof(*page));
}

static int mdc_access_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *t, int mode)
{
	Weir__AccessReq req = WEIR__ACCESS_REQ__INIT;
	Weir__Cred cred;
	Weir__Fid pat;

	MDC_PATH_FILL(fs, req, t, &cred, &pat);
	req.mode = (uint32_t)mode;
	req.flags = t->mt_pflags;
	return wc_mds_call_mdt(fs, mdt, WEIR__WIRE_OP__MDS_ACCESS, &req.base, NULL, NULL);
}

int wc_mdc_access(struct weir_fs *fs, const struct wc_mdc_target *t, int mode)
{
	MDC_ROUTED(int, fs, t, mdc_access_on(fs, rt.rt_mdt, rt.rt_t, mode));
}

/* ------------------------------------------------------------ xattrs */

/* One xattr RPC on \a t (by XattrReq.fid, or by path); \a rep may be NULL. */
static int mdc_xattr_call_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *t, uint16_t op,
			  Weir__XattrReq *req, Weir__XattrRep **rep)
{
	Weir__Cred cred;
	Weir__Fid pf, pat;

	if (t->mt_fid) {
		req->fid = mdc_pb(t->mt_fid, &pf);
	} else {
		req->at = mdc_pb(t->mt_at, &pat);
		req->path = (char *)t->mt_name;
		req->flags = t->mt_pflags;
	}
	wc_cred_init(fs, &cred);
	req->cred = &cred;
	return wc_mds_call_mdt(fs, mdt, op, &req->base, rep ? &weir__xattr_rep__descriptor : NULL,
			   (void **)rep);
}

static int mdc_xattr_call(struct weir_fs *fs, const struct wc_mdc_target *t, uint16_t op,
			  Weir__XattrReq *req, Weir__XattrRep **rep)
{
	MDC_ROUTED(int, fs, t, mdc_xattr_call_on(fs, rt.rt_mdt, rt.rt_t, op, req, rep));
}

/* GETXATTR or LISTXATTR: the reply's bytes into \a buf, as getxattr(2) sizes it. */
static ssize_t mdc_xattr_get(struct weir_fs *fs, const struct wc_mdc_target *t, uint16_t op,
			     const char *name, void *buf, size_t size)
{
	Weir__XattrReq req = WEIR__XATTR_REQ__INIT;
	Weir__XattrRep *rep;

	if (name)
		req.name = (char *)name;
	int rc = mdc_xattr_call(fs, t, op, &req, &rep);
	if (rc)
		return rc;
	size_t n = rep->value.len;
	ssize_t ret = (ssize_t)n;
	if (size && n > size)
		ret = -ERANGE; /* size 0 asks for the size only */
	else if (size && n)
		memcpy(buf, rep->value.data, n);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return ret;
}

ssize_t wc_mdc_getxattr(struct weir_fs *fs, const struct wc_mdc_target *t, const char *name,
			void *buf, size_t size)
{
	return mdc_xattr_get(fs, t, WEIR__WIRE_OP__MDS_GETXATTR, name, buf, size);
}

ssize_t wc_mdc_listxattr(struct weir_fs *fs, const struct wc_mdc_target *t, void *buf,
			 size_t size)
{
	return mdc_xattr_get(fs, t, WEIR__WIRE_OP__MDS_LISTXATTR, NULL, buf, size);
}

int wc_mdc_setxattr(struct weir_fs *fs, const struct wc_mdc_target *t, const char *name,
		    const void *value, size_t size, uint32_t xflags)
{
	Weir__XattrReq req = WEIR__XATTR_REQ__INIT;

	req.name = (char *)name;
	req.value.data = (uint8_t *)value;
	req.value.len = size;
	req.xflags = xflags;
	int rc = mdc_xattr_call(fs, t, WEIR__WIRE_OP__MDS_SETXATTR, &req, NULL);
	mdc_changed(fs, t, true); /* its ctime */
	return rc;
}

int wc_mdc_removexattr(struct weir_fs *fs, const struct wc_mdc_target *t, const char *name)
{
	Weir__XattrReq req = WEIR__XATTR_REQ__INIT;

	req.name = (char *)name;
	int rc = mdc_xattr_call(fs, t, WEIR__WIRE_OP__MDS_REMOVEXATTR, &req, NULL);
	mdc_changed(fs, t, true);
	return rc;
}

/* ------------------------------------------------------------ layouts, statfs */

static int mdc_set_layout_on(struct weir_fs *fs, uint32_t mdt, const struct wc_mdc_target *t,
		      const struct wc_mdc_stripe *s, bool create, mode_t mode, struct wc_attr *a,
		      struct weir_layout *lo)
{
	Weir__SetLayoutReq req = WEIR__SET_LAYOUT_REQ__INIT;
	Weir__Layout pl = WEIR__LAYOUT__INIT;
	Weir__Cred cred;
	Weir__Fid pat;

	pl.pattern = s->ms_pattern;
	pl.stripe_size = s->ms_stripe_size;
	pl.stripe_count = s->ms_stripe_count;
	pl.stripe_offset = s->ms_stripe_offset;
	MDC_PATH_FILL(fs, req, t, &cred, &pat);
	req.layout = &pl;
	req.create = create;
	req.mode = (uint32_t)mode;
	int rc = mdc_call_attr(fs, mdt, WEIR__WIRE_OP__MDS_SET_LAYOUT, &req.base, a, lo);
	mdc_changed(fs, t, true);
	return rc;
}

int wc_mdc_set_layout(struct weir_fs *fs, const struct wc_mdc_target *t,
		      const struct wc_mdc_stripe *s, bool create, mode_t mode, struct wc_attr *a,
		      struct weir_layout *lo)
{
	MDC_ROUTED(int, fs, t, mdc_set_layout_on(fs, rt.rt_mdt, rt.rt_t, s, create, mode, a, lo));
}

int wc_mdc_statfs(struct weir_fs *fs, Weir__StatfsRep **rep)
{
	Weir__Empty req = WEIR__EMPTY__INIT;
	return wc_mds_call(fs, WEIR__WIRE_OP__MDS_STATFS, &req.base, &weir__statfs_rep__descriptor,
			   (void **)rep);
}
