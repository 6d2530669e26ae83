/*
 * mds/ns_walk.c - path resolution on the MDT: components, ".", "..",
 * symlinks, search permission, trailing slashes (Linux fs/namei.c's rules).
 *
 * A path is walked from the root (absolute, or no directory given) or from
 * a directory FID (openat's dirfd). Every directory walked through needs
 * search (x) permission of the caller, checked before looking a name up in
 * it (so a missing name under an unsearchable directory is -EACCES, as on
 * Linux). A symlink met in a non-final component is always followed: its
 * target replaces it in the rest of the path (relative targets from the
 * link's directory, absolute ones from the Weir root), at most
 * MDS_MAX_SYMLINKS times per walk (-ELOOP). The final component is followed
 * when the caller asks, or when the path ends with '/', except for calls
 * that create or remove the final name (NS_RES_PARENT), which look at the
 * trailing slash themselves. A directory removed while open (st_nlink 0,
 * ns_dir_release) is empty, and a name to be made in it is -ENOENT, as
 * Linux's IS_DEADDIR. The caller holds ns_lock (read or write) and no name
 * or inode lock: creates and unlinks commit while a walk runs (mds/ns_lock.c),
 * so each step reads committed records and a name whose inode went between
 * the two reads is read again (removed: missing; renamed over: the new one).
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool is_dot(const char *n, size_t l)
{
	return l == 1 && n[0] == '.';
}

static bool is_dotdot(const char *n, size_t l)
{
	return l == 2 && n[0] == '.' && n[1] == '.';
}

/*
 * Split off the next component of *pp into (name, len); skips slashes.
 * *last: no component follows; *slash: the last one is followed by '/'.
 */
static bool next_comp(const char **pp, const char **name, size_t *len, bool *last, bool *slash)
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
	const char *q = e;
	while (*q == '/')
		q++;
	*name = p;
	*len = (size_t)(e - p);
	*last = *q == '\0';
	*slash = *last && q != e;
	*pp = e;
	return true;
}

/* ".." of directory \a cur, in place ("/.." is "/"). */
static int step_parent(struct mds_ns *ns, struct mds_inode *cur)
{
	struct weir_fid root = weir_fid_root();
	if (weir_fid_eq(&cur->in_fid, &root))
		return 0;
	struct weir_fid parent = cur->in_parent, self = cur->in_fid;
	bool removed = cur->in_nlink == 0; /* open, and its parent may be gone too */
	int rc = ns_inode_get(ns, &parent, cur);
	if (rc == -ENOENT && !removed) {
		/* removed since the walk read it (walks take no lock), or damage */
		struct mds_inode again;
		int rc2 = ns_inode_get_fresh(ns, &self, &again);
		if (rc2 && rc2 != -ENOENT)
			return rc2;
		return rc2 == -ENOENT || again.in_nlink == 0 ? -ENOENT : -EIO;
	}
	return rc;
}

/* Replace the walk's path by the target of symlink \a link followed by \a rest. */
static int splice_link(struct mds_ns *ns, const struct mds_inode *link, const char *rest,
		       char **buf, const char **p)
{
	char target[MDS_SYMLINK_MAX + 1];
	size_t tlen;
	int rc = ns_symlink_get(ns, &link->in_fid, target, sizeof(target), &tlen);
	if (rc)
		return rc;
	size_t rl = strlen(rest);
	char *nb = malloc(tlen + rl + 1);
	if (!nb)
		return -ENOMEM;
	memcpy(nb, target, tlen);
	memcpy(nb + tlen, rest, rl + 1);
	free(*buf);
	*buf = nb;
	*p = nb;
	return 0;
}

static void res_last(struct ns_res *r, enum ns_last last, const char *n, size_t l, bool slash)
{
	r->r_last = last;
	r->r_slash = slash;
	r->r_nlen = last == NS_LAST_NORM ? l : 0;
	if (last == NS_LAST_NORM)
		memcpy(r->r_name, n, l);
	r->r_name[r->r_nlen] = '\0';
}

/*
 * The walk reached \a fid, another MDT's: it goes on there with \a rest
 * (docs/dne.md, step 2). \return -EREMOTE, or -ENOMEM.
 */
static int walk_redirect(struct ns_res *r, uint32_t flags, const struct weir_fid *fid,
			 const char *rest)
{
	r->r_redir = *fid;
	if (flags & NS_RES_REDIRECT) {
		while (*rest == '/')
			rest++;
		free(r->r_redir_rest);
		r->r_redir_rest = strdup(rest);
		if (!r->r_redir_rest)
			return -ENOMEM;
	}
	return -EREMOTE;
}

/* Record in \a w (NULL: none) that \a dir's name \a n (\a l bytes) is \a fid of \a type. */
static void walk_note(struct ns_walk *w, const struct mds_inode *dir, const char *n, size_t l,
		      const struct weir_fid *fid, uint8_t type)
{
	if (!w || w->w_broken)
		return;
	if (w->w_nr >= NS_WALK_MAX) {
		w->w_broken = true;
		return;
	}
	struct ns_walk_step *st = &w->w_steps[w->w_nr++];
	st->ws_dir = *dir;
	memcpy(st->ws_name, n, l);
	st->ws_name[l] = '\0';
	st->ws_child = *fid;
	st->ws_type = type;
}

int ns_resolve(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
	       const char *path, uint32_t flags, struct ns_res *r)
{
	return ns_resolve_walk(ns, cr, at, path, flags, r, NULL);
}

int ns_resolve_walk(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		    const char *path, uint32_t flags, struct ns_res *r, struct ns_walk *w)
{
	struct weir_fid root = weir_fid_root();
	char *buf = NULL;
	int hops = 0, rc;

	r->r_exists = false;
	r->r_remote = false;
	r->r_redir_rest = NULL;
	memset(&r->r_redir, 0, sizeof(r->r_redir));
	r->r_type = DT_UNKNOWN;
	res_last(r, NS_LAST_ROOT, NULL, 0, false);
	if (!path)
		return -EINVAL;
	size_t plen = strnlen(path, NS_PATH_MAX + 1);
	if (plen > NS_PATH_MAX)
		return -ENAMETOOLONG;
	bool has_at = at && !weir_fid_is_zero(at);
	if (plen == 0 && !has_at)
		return -ENOENT; /* open("") */
	const struct weir_fid *start = (path[0] == '/' || !has_at) ? &root : at;
	rc = ns_inode_get(ns, start, &r->r_dir);
	if (rc == -EREMOTE) /* the root, or a directory of another MDT */
		return walk_redirect(r, flags, start, path);
	if (rc)
		return rc;
	if (plen == 0) {
		/* the directory handle itself (AT_EMPTY_PATH) */
		r->r_in = r->r_dir;
		r->r_exists = true;
		r->r_type = ns_mode_to_dt(r->r_in.in_mode);
		return 0;
	}
	const char *p = path;
	for (;;) {
		const char *n;
		size_t l;
		bool last, slash;
		if (!next_comp(&p, &n, &l, &last, &slash)) {
			/* "/" (possibly reached through a symlink to it) */
			r->r_in = r->r_dir;
			r->r_exists = true;
			r->r_type = DT_DIR;
			res_last(r, NS_LAST_ROOT, NULL, 0, true);
			break;
		}
		if (!S_ISDIR(r->r_dir.in_mode)) {
			rc = -ENOTDIR;
			break;
		}
		rc = mds_perm_check(cr, &r->r_dir, MDS_MAY_EXEC);
		if (rc)
			break;
		if (is_dot(n, l) || is_dotdot(n, l)) {
			bool dd = is_dotdot(n, l);
			if (w)
				w->w_broken = true;
			if (dd) {
				struct weir_fid up = r->r_dir.in_parent;
				rc = step_parent(ns, &r->r_dir);
				if (rc == -EREMOTE) /* above this MDT's top directory */
					rc = walk_redirect(r, flags, &up, p);
				if (rc)
					break;
			}
			if (last) {
				r->r_in = r->r_dir;
				r->r_exists = true;
				r->r_type = DT_DIR;
				res_last(r, dd ? NS_LAST_DOTDOT : NS_LAST_DOT, NULL, 0, slash);
				break;
			}
			continue;
		}
		if (l > NS_NAME_MAX) {
			rc = -ENAMETOOLONG;
			break;
		}
		struct weir_fid fid;
		uint8_t type;
		unsigned gone = 0;
	lookup:
		/* a second look bypasses the read cache: a commit may be between
		 * RocksDB's write and the cache's invalidation (mds/kv.c) */
		rc = gone ? ns_dentry_get_fresh(ns, &r->r_dir.in_fid, n, l, &fid, &type)
			  : ns_dentry_get(ns, &r->r_dir.in_fid, n, l, &fid, &type);
		if (rc == -ENOENT && last && r->r_dir.in_nlink == 0)
			break; /* a removed directory, still open: nothing is made in it */
		if (rc == -ENOENT && last) {
			res_last(r, NS_LAST_NORM, n, l, slash);
			rc = 0;
			break;
		}
		if (rc)
			break;
		if (weir_fid_mdt(&fid) != (int)ns->ns_conf.nc_mdt_index) {
			/* a remote directory, or a remote entry (a name made by a
			 * link or rename across MDTs): its inode is on another MDT
			 * (docs/dne.md); the dentry's type is all this MDT knows */
			if (last && (flags & NS_RES_PARENT)) {
				memset(&r->r_in, 0, sizeof(r->r_in));
				r->r_in.in_fid = fid;
				r->r_in.in_mode = type == DT_UNKNOWN ? S_IFDIR : DTTOIF(type);
				r->r_in.in_nlink = S_ISDIR(r->r_in.in_mode) ? 2 : 1;
				r->r_exists = true;
				r->r_remote = true;
				r->r_type = type;
				res_last(r, NS_LAST_NORM, n, l, slash);
				break;
			}
			if ((slash || !last) && type != DT_DIR && type != DT_LNK &&
			    type != DT_UNKNOWN) {
				rc = -ENOTDIR; /* "file/", "file/x": a remote entry's type says */
				break;
			}
			/* the name itself is this MDT's: a walk records it, so a
			 * client may send its next call to that FID directly */
			walk_note(w, &r->r_dir, n, l, &fid, type);
			rc = walk_redirect(r, flags, &fid, p); /* the client goes on there */
			break;
		}
		rc = ns_inode_get(ns, &fid, &r->r_in);
		if (rc == -ENOENT && gone++ < 8)
			goto lookup; /* unlinked since the name was read (no lock): read it again */
		if (rc) {
			rc = rc == -ENOENT ? -EIO : rc; /* a dentry without its inode */
			break;
		}
		walk_note(w, &r->r_dir, n, l, &fid, type);
		bool follow = !last || (flags & NS_RES_FOLLOW) ||
			      (slash && !(flags & NS_RES_PARENT));
		if (S_ISLNK(r->r_in.in_mode) && follow) {
			if (w)
				w->w_broken = true;
			if (++hops > MDS_MAX_SYMLINKS) {
				rc = -ELOOP;
				break;
			}
			rc = splice_link(ns, &r->r_in, p, &buf, &p);
			if (rc == -ENOENT && gone++ < 8) {
				/* the symlink was removed since its name was read (a
				 * walk takes no lock): read the name again, which an
				 * O_CREAT then makes (test_pdirops's race) */
				hops--;
				goto lookup;
			}
			if (rc)
				break;
			if (p[0] == '/') {
				rc = ns_inode_get(ns, &root, &r->r_dir);
				if (rc == -EREMOTE) /* the root is MDT0's */
					rc = walk_redirect(r, flags, &root, p);
				if (rc)
					break;
			}
			continue;
		}
		if (last) {
			r->r_exists = true;
			r->r_type = type;
			res_last(r, NS_LAST_NORM, n, l, slash);
			break;
		}
		r->r_dir = r->r_in; /* a non-directory fails at the next step: -ENOTDIR */
	}
	free(buf);
	if (!rc && r->r_slash && r->r_exists && !(flags & NS_RES_PARENT) &&
	    !S_ISDIR(r->r_in.in_mode))
		rc = -ENOTDIR;
	return rc;
}

int ns_resolve_obj(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		   const char *path, uint32_t at_flags, struct mds_inode *in)
{
	if (!path) {
		if (!at || weir_fid_is_zero(at))
			return -EINVAL;
		struct weir_fid fid = *at; /* \a at may be &in->in_fid, which the get clears */
		return ns_inode_get(ns, &fid, in);
	}
	struct ns_res *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	int rc = ns_resolve(ns, cr, at, path, (at_flags & MDS_AT_NOFOLLOW) ? 0 : NS_RES_FOLLOW, r);
	if (!rc && !r->r_exists)
		rc = -ENOENT;
	if (!rc)
		*in = r->r_in;
	free(r);
	return rc;
}
