/*
 * client/fuse/ops.c - the FUSE low-level operations of weir-fuse, each a
 * thin layer over one or two libweir calls. Errors are libweir's negative
 * errnos, passed to fuse_reply_err() as positive ones.
 *
 * Handles: fi->fh of a file is a struct wf_file (the weir_file_t and how
 * it was opened); of a directory a struct wf_dir (a weir_dir_t stream, the
 * offset it stands at, and the entry that did not fit the last reply, so
 * sequential readdir calls continue the stream exactly, even inside a run of
 * names with equal hash cookies; any other offset is a weir_seekdir()).
 *
 * Directory offsets given to the kernel are weir_telldir() positions (the
 * d_off of each entry: 1 after ".", 2 after "..", else the MDS's cookie),
 * so a seek is weir_seekdir().
 *
 * Caching, with the defaults (no attr_timeout, entry_timeout or
 * negative_timeout): the kernel keeps a file's attributes while this mount
 * holds the MDS's lease on them (wf_attr_tmo; the MDS calls the lease back
 * before any change, and wf_md_inval then has the kernel forget them and
 * the file's cached pages), and names, present or absent, while libweir
 * holds them under the directory's LOOKUP lease (wf_kname_tmo, knames.c: a
 * callback has the kernel forget every name it was given in the directory,
 * docs/leases.md). So a change made by another client is seen by the next
 * call. File data goes through the
 * page cache (unless direct_io): it is dropped at every open (keep_cache 0),
 * at a callback, and whenever getattr shows another size or mtime
 * (FUSE_CAP_AUTO_INVAL_DATA) -- close-to-open coherence. Directory
 * listings are kept by the kernel (cache_readdir) while the directory is
 * leased (wf_opendir), dropped at its callback.
 *
 * Requests per operation (what bounds metadata rates through the mount):
 * the kernel sends a LOOKUP per path component and, with the default
 * permissions=kernel (wf.h, "Permissions"), a GETATTR per directory walked
 * (the root too) and per open; a FLUSH at close (it drops the closer's
 * fcntl locks, and asks the MDS only when the closer holds one on the file;
 * none with -o local_locks: FOPEN_NOFLUSH unless writeback_cache). Open-close
 * of "d/f": GETATTR /, LOOKUP d, GETATTR d, LOOKUP f, GETATTR f, OPEN,
 * FLUSH, RELEASE; with permissions=mds: LOOKUP d, LOOKUP f, OPEN, FLUSH,
 * RELEASE. The caller's groups
 * are read from /proc (wf_cred) with one read(2), and not at all for the
 * calls the MDS checks nothing on (getattr, fsync, flock).
 *
 * Signals: every operation that calls libweir, but release and releasedir
 * (see wf_release), brackets its calls with wf_wait_begin()/wf_wait_end(),
 * before it replies: a FUSE_INTERRUPT (the caller got a signal) then ends a
 * wait for a server that is away (README "Recovery") with -EINTR.
 */
#define _GNU_SOURCE
#include "wf.h"

#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

/* The kernel's FMODE_EXEC, in the flags of the open that execve(2) makes. */
#define WF_FMODE_EXEC 0x20
/* how long after a reply gave the kernel a new node a callback waits for its inode (wf_md_inval) */
#define WF_FRESH_WAIT_NS (1000ULL * 1000000ULL)
_Static_assert(WF_FMODE_EXEC == WEIR_O_EXEC, "libweir's exec flag is the kernel's");

/*
 * What a file's and a directory's fi->fh start with: the libweir handle
 * that fcntl locks go through, and the lock owners that took POSIX locks
 * through it (wf_setlk), whose locks wf_release/wf_releasedir drop: an
 * OFD lock's owner is the kernel's open file, which sends no FLUSH for it,
 * and directories get no FLUSH at all.
 */
struct wf_fhead {
	weir_file_t *h_fh;
	pthread_mutex_t h_lock; /* guards h_owners */
	uint64_t *h_owners;
	unsigned h_nr_owners, h_max_owners;
};

struct wf_file {
	struct wf_fhead ff_h; /* first: wf_fhead_of() */
	bool ff_append;		/* O_APPEND without the writeback cache: weir_write */
	struct weir_cred ff_cred; /* the opener's: libweir's first write drops setuid/setgid
				   * as this caller (direct_io: the kernel sends no SETATTR) */
};

struct wf_dir {
	struct wf_fhead fd_h; /* first: wf_fhead_of(); h_fh is the MDS's open of the
			       * directory: fstat works after rmdir or rename over it */
	pthread_mutex_t fd_lock;
	weir_fid_t fd_fid;
	weir_dir_t *fd_dh;
	off_t fd_pos;	      /* d_off of the last entry replied; 0 at the start */
	bool fd_have_pending; /* fd_pending was read but did not fit the last reply */
	struct weir_dirent fd_pending;
};


static struct wf *wf_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct wf_file *wf_file_of(const struct fuse_file_info *fi)
{
	return (struct wf_file *)(uintptr_t)fi->fh;
}

/* A file's or a directory's fi->fh (both start with a struct wf_fhead). */
static struct wf_fhead *wf_fhead_of(const struct fuse_file_info *fi)
{
	return (struct wf_fhead *)(uintptr_t)fi->fh;
}

static void wf_fhead_init(struct wf_fhead *h, weir_file_t *fh)
{
	h->h_fh = fh;
	pthread_mutex_init(&h->h_lock, NULL);
}

static void wf_fhead_fini(struct wf_fhead *h)
{
	pthread_mutex_destroy(&h->h_lock);
	free(h->h_owners);
	h->h_owners = NULL;
}

static void wf_file_free(struct wf_file *ff)
{
	wf_fhead_fini(&ff->ff_h);
	free(ff);
}

/*
 * The supplementary groups of thread \a tid (the caller of a request): the
 * "Groups:" line of /proc/TID/task/TID/status, read with one read(2) into
 * \a buf (libfuse's fuse_req_getgroups() reads the file twice: it starts
 * with 1 KiB, and the file is about 1.4 KiB). The line comes early in the
 * file: when it is not whole in \a buf, libfuse's reader is used instead.
 * \return the number of groups (the first \a max are stored), or -errno.
 */
static int wf_groups_read(fuse_req_t req, pid_t tid, uint32_t *groups, int max)
{
	char path[64], buf[4096];
	const char *p, *end;
	ssize_t len;
	int fd, n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)tid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len < 0)
		return -errno;
	buf[len] = '\0';
	p = strstr(buf, "\nGroups:");
	end = p ? strchr(p + 1, '\n') : NULL;
	if (!end) {
		gid_t g[WEIR_CRED_MAX_GROUPS];

		n = fuse_req_getgroups(req, WEIR_CRED_MAX_GROUPS, g);
		for (int i = 0; i < n && i < max; i++)
			groups[i] = (uint32_t)g[i];
		return n;
	}
	for (p += 8; p < end;) {
		char *next;
		unsigned long g = strtoul(p, &next, 10);

		if (next == p)
			break;
		if (n < max)
			groups[n] = (uint32_t)g;
		n++;
		p = next;
	}
	return n;
}

/* What a request needs of its caller's credentials. */
enum wf_cred_need {
	WF_CRED_IDS,	/* uid and gid: the MDS checks nothing (getattr, statfs, fsync) */
	WF_CRED_GROUPS, /* and the supplementary groups: the MDS checks permissions */
};

/*
 * Send the caller's uid, gid and (\a need) groups with this thread's next
 * calls; \a out (may be NULL) gets them, for the checks made here.
 */
static void wf_cred(fuse_req_t req, enum wf_cred_need need, struct weir_cred *out)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct weir_cred c;
	int n = 0;

	memset(&c, 0, offsetof(struct weir_cred, cr_groups));
	c.cr_uid = (uint32_t)ctx->uid;
	c.cr_gid = (uint32_t)ctx->gid;
	if (need == WF_CRED_GROUPS)
		n = wf_groups_read(req, ctx->pid, c.cr_groups, WEIR_CRED_MAX_GROUPS);
	if (n > WEIR_CRED_MAX_GROUPS)
		n = WEIR_CRED_MAX_GROUPS; /* more groups than fit: the first ones */
	c.cr_nr_groups = n > 0 ? (uint32_t)n : 0;
	weir_fid_cred_set(&c);
	if (out)
		*out = c;
}

/* Is \a c in group \a gid? */
static bool wf_cred_in_group(const struct weir_cred *c, uint32_t gid)
{
	if (c->cr_gid == gid)
		return true;
	for (uint32_t i = 0; i < c->cr_nr_groups; i++)
		if (c->cr_groups[i] == gid)
			return true;
	return false;
}

/*
 * The MDS's (and the VFS's) check of \a mask (R_OK 4, W_OK 2, X_OK 1) on \a st
 * for \a c, for the checks no MDS call makes (wf.h, "Permissions"): root
 * passes except execute of a non-directory without any x bit. \return 0 or
 * -EACCES.
 */
static int wf_perm_check(const struct weir_cred *c, const struct stat *st, int mask)
{
	unsigned mode = st->st_mode;

	mask &= R_OK | W_OK | X_OK;
	if (c->cr_uid == 0) {
		if (S_ISDIR(mode) || !(mask & X_OK) || (mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
			return 0;
		return -EACCES;
	}
	if (c->cr_uid == st->st_uid)
		mode >>= 6;
	else if (wf_cred_in_group(c, st->st_gid))
		mode >>= 3;
	return ((unsigned)mask & ~mode & 7) ? -EACCES : 0;
}

/* Check \a mask on \a fid's fresh attributes (the caller's credentials set by wf_cred). */
static int wf_perm_fid(struct wf *wf, const struct weir_cred *c, const weir_fid_t *fid,
		       int mask)
{
	struct stat st;
	int rc = weir_fid_getattr(wf->wf_fs, fid, &st);

	return rc ? rc : wf_perm_check(c, &st, mask);
}

static void wf_reply_rc(fuse_req_t req, int rc)
{
	fuse_reply_err(req, rc < 0 ? -rc : 0);
}

/*
 * How long the kernel may keep \a fid's attributes: -o attr_timeout when
 * given; else, while this mount holds the MDS's lease on them, as long as
 * libweir trusts its leases (the MDS calls a lease back before any change,
 * and wf_md_inval() then tells the kernel), else 0.
 */
static double wf_attr_tmo(struct wf *wf, const weir_fid_t *fid)
{
	uint32_t ms = 0;
	if (wf->wf_conf.co_attr_timeout > 0)
		return wf->wf_conf.co_attr_timeout;
	if (!wf->wf_conf.co_kperm) /* permissions=mds: the kernel keeps nothing */
		return 0;
	if (!(weir_md_leased(wf->wf_fs, fid, &ms) & 2))
		return 0;
	return ms / 1000.0;
}

void wf_md_inval(void *arg, const weir_fid_t *fid, unsigned bits)
{
	struct wf *wf = arg;
	struct fuse_session *se = atomic_load(&wf->wf_se);
	fuse_ino_t ino = se ? wf_node_find(wf, fid) : 0;

	/* the names the kernel keeps in it, when a directory's names are called back */
	if (bits & 1)
		wf_knames_inval(wf, fid, ino);
	if (!ino)
		return;
	/* attributes and cached pages (offset 0, length 0: all of them); the
	 * kernel also bumps the inode's attribute version, so a reply already
	 * on its way with the old attributes is not taken */
	int rc = fuse_lowlevel_notify_inval_inode(se, ino, 0, 0);
	/*
	 * Not in the kernel: if a reply just gave it the node new, with a
	 * timeout (wf_entry_fill), the kernel may not have made the inode from
	 * it yet; it does within moments, or forgets the node: try again until
	 * one of the two (WF_FRESH_WAIT_NS at most after the reply).
	 */
	uint64_t fresh;
	while (rc == -ENOENT && (fresh = wf_node_fresh(wf, fid, ino)) &&
	       weir_now_ns() - fresh < WF_FRESH_WAIT_NS) {
		struct timespec ts = { 0, 100 * 1000 };
		nanosleep(&ts, NULL);
		rc = fuse_lowlevel_notify_inval_inode(se, ino, 0, 0);
	}
	if (rc && rc != -ENOENT)
		WEIR_LOG_DEBUG("fid=[%#llx:%#llx] rc=%d: kernel invalidation", (unsigned long long)fid->seq,
			       (unsigned long long)fid->oid, rc);
}

/*
 * Fill \a e for \a fid, the name \a name of \a dir (adding a lookup to its
 * node): the kernel keeps the name while the mount holds the directory's
 * lease (wf_kname_tmo). \return 0 or -ENOMEM.
 */
static int wf_entry_fill(struct wf *wf, const weir_fid_t *dir, const char *name,
			 const weir_fid_t *fid, const struct stat *st, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	/* the kernel may make a new inode from this reply (one it did not
	 * know, or dropped with its FORGET still on the way): a callback before
	 * it does would find nothing to invalidate, so the node is marked
	 * fresh before the lease is read, and wf_md_inval() tries again until
	 * the kernel has the inode (or forgot the node) */
	e->ino = wf_node_get(wf, fid, wf->wf_conf.co_attr_timeout <= 0 && wf->wf_conf.co_kperm);
	if (!e->ino)
		return -ENOMEM;
	double tmo = wf_attr_tmo(wf, fid);
	e->generation = 1;
	e->attr = *st;
	e->attr_timeout = tmo;
	e->entry_timeout = wf->wf_conf.co_entry_timeout > 0 ? wf->wf_conf.co_entry_timeout
							   : wf_kname_tmo(wf, dir, name, fid);
	return 0;
}

static void wf_reply_entry(fuse_req_t req, struct wf *wf, const weir_fid_t *dir,
			   const char *name, const weir_fid_t *fid, const struct stat *st)
{
	struct fuse_entry_param e;
	int rc = wf_entry_fill(wf, dir, name, fid, st, &e);

	if (rc) {
		wf_reply_rc(req, rc);
		return;
	}
	if (fuse_reply_entry(req, &e))
		wf_node_forget(wf, e.ino, 1); /* the kernel did not take it */
}

/* ------------------------------------------------------------ init */

static void wf_init(void *userdata, struct fuse_conn_info *conn)
{
	struct wf *wf = userdata;

	conn->max_write = WF_MAX_IO;
	if (conn->max_readahead > WF_MAX_IO)
		conn->max_readahead = WF_MAX_IO;
	/* large requests: libfuse asks the kernel for max_pages from max_write */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	conn->want &= ~(unsigned)(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
	if (wf->wf_conf.co_readdirplus && (conn->capable & FUSE_CAP_READDIRPLUS))
		conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	if (wf->wf_conf.co_writeback) {
		if (conn->capable & FUSE_CAP_WRITEBACK_CACHE)
			conn->want |= FUSE_CAP_WRITEBACK_CACHE;
		else
			WEIR_LOG_WARN("the kernel has no FUSE writeback cache; writing through");
	}
	/* flock(2) locks are the MDS's (weir_flock on our handle: same owner),
	 * and so are fcntl locks (wf_setlk), unless -o local_locks keeps them in
	 * the kernel, local to this mount */
	conn->want &= ~(unsigned)FUSE_CAP_POSIX_LOCKS;
	if (!wf->wf_conf.co_local_locks) {
		if (conn->capable & FUSE_CAP_POSIX_LOCKS)
			conn->want |= FUSE_CAP_POSIX_LOCKS;
		else
			WEIR_LOG_WARN("the kernel cannot pass fcntl locks to FUSE: they stay local"
				      " to this mount");
	}
	if (conn->capable & FUSE_CAP_FLOCK_LOCKS)
		conn->want |= FUSE_CAP_FLOCK_LOCKS;
	conn->want &=
	    ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	/* the kernel asks again after time_gran: timestamps have nanoseconds */
	conn->time_gran = 1;
	WEIR_LOG_NOTICE("op=init proto=%u.%u max_write=%u max_readahead=%u want=%#x",
			conn->proto_major, conn->proto_minor, conn->max_write, conn->max_readahead,
			conn->want);
}

/* ------------------------------------------------------------ names */

/* Once, at the first request (FUSE_INIT has been answered by then). */
static void wf_first_request(struct wf *wf)
{
	if (wf->wf_conf.co_readahead && !atomic_load(&wf->wf_ra_done) &&
	    !atomic_exchange(&wf->wf_ra_done, true))
		wf_readahead_raise(wf->wf_mnt, wf->wf_conf.co_readahead);
}

static void wf_wait_begin(fuse_req_t req);
static void wf_wait_end(fuse_req_t req);
static void wf_owner_forget(struct wf_fhead *h, uint64_t owner);
static void wf_owners_release(struct wf_fhead *h);

static void wf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct wf *wf = wf_of(req);
	weir_fid_t dir, fid;
	struct stat st;
	int rc;

	wf_first_request(wf);
	wf_node_fid(wf, parent, &dir);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	/*
	 * A name the cache holds under the directory's lease (the kernel
	 * checked search permission): no MDS call for the name, and a getattr
	 * by FID at most, which checks nothing, so the caller's groups are
	 * not read from /proc (about 12 us each). Else the MDS's lookup.
	 */
	bool absent = false;
	rc = -EAGAIN;
	if (weir_md_name_leased(wf->wf_fs, &dir, name, &fid, NULL) == 1) {
		wf_cred(req, WF_CRED_IDS, NULL);
		absent = !fid.seq && !fid.oid;
		rc = absent ? -ENOENT : weir_fid_getattr(wf->wf_fs, &fid, &st);
	}
	if (rc && !absent) { /* (also a getattr that failed: the MDS's lookup says why) */
		wf_cred(req, WF_CRED_GROUPS, NULL);
		rc = weir_fid_lookup(wf->wf_fs, &dir, name, &fid, &st);
	}
	wf_wait_end(req);
	if (rc == -ENOENT) {
		/* "no such name" kept by the kernel: -o negative_timeout, or under the lease */
		double tmo = wf->wf_conf.co_negative_timeout > 0 ? wf->wf_conf.co_negative_timeout
			   : wf->wf_conf.co_entry_timeout > 0	  ? 0
								  : wf_kname_tmo(wf, &dir, name, NULL);
		if (tmo > 0) {
			struct fuse_entry_param e;
			memset(&e, 0, sizeof(e));
			e.entry_timeout = tmo;
			fuse_reply_entry(req, &e);
			return;
		}
	}
	if (rc) {
		wf_reply_rc(req, rc);
		return;
	}
	wf_reply_entry(req, wf, &dir, name, &fid, &st);
}

static void wf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	wf_node_forget(wf_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void wf_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct wf *wf = wf_of(req);

	for (size_t i = 0; i < count; i++)
		wf_node_forget(wf, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void wf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct wf *wf = wf_of(req);
	weir_fid_t fid;
	struct stat st;
	int rc;

	(void)fi;
	wf_first_request(wf);
	wf_cred(req, WF_CRED_IDS, NULL);
	wf_node_fid(wf, ino, &fid);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	rc = weir_fid_getattr(wf->wf_fs, &fid, &st);
	wf_wait_end(req);
	if (rc)
		wf_reply_rc(req, rc);
	else
		fuse_reply_attr(req, &st, wf_attr_tmo(wf, &fid));
}

/*
 * Is this mode change the kernel's drop of setuid/setgid for a caller that
 * may not chmod? Without handle_killpriv, fuse_setattr() sends a write's,
 * truncate's or chown's file_remove_privs() as a SETATTR of the mode it
 * knows less S_ISUID, and S_ISGID when group-exec: a regular file, not the
 * caller's, losing only those bits. The MDS gets WEIR_SETATTR_KILL_PRIV
 * instead, which it allows to writers (pjdfstest chmod/12.t). \return true
 * for such a change (one GETATTR, for non-root callers' mode changes only).
 */
static bool wf_setattr_is_kill(struct wf *wf, const struct weir_cred *c, const weir_fid_t *fid,
			       const struct stat *attr)
{
	struct stat st;
	unsigned cur, want, gone;

	if (c->cr_uid == 0 || weir_fid_getattr(wf->wf_fs, fid, &st))
		return false;
	if (!S_ISREG(st.st_mode) || st.st_uid == c->cr_uid)
		return false;
	cur = st.st_mode & 07777;
	want = attr->st_mode & 07777;
	gone = cur & ~want;
	return gone && !(gone & ~(unsigned)(S_ISUID | S_ISGID)) && !(want & ~cur);
}

static void wf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct wf *wf = wf_of(req);
	struct weir_cred cred;
	weir_fid_t fid;
	struct stat st;
	unsigned valid = 0;
	int rc;

	if (to_set & FUSE_SET_ATTR_MODE)
		valid |= WEIR_SETATTR_MODE;
	if (to_set & FUSE_SET_ATTR_UID)
		valid |= WEIR_SETATTR_UID;
	if (to_set & FUSE_SET_ATTR_GID)
		valid |= WEIR_SETATTR_GID;
	if (to_set & FUSE_SET_ATTR_SIZE)
		valid |= WEIR_SETATTR_SIZE;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		valid |= WEIR_SETATTR_ATIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		valid |= WEIR_SETATTR_ATIME;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		valid |= WEIR_SETATTR_MTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		valid |= WEIR_SETATTR_MTIME;
	/* FUSE_SET_ATTR_CTIME: the MDS sets ctime itself on every change */
	wf_cred(req, WF_CRED_GROUPS, &cred);
	wf_node_fid(wf, ino, &fid);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	if ((valid & WEIR_SETATTR_MODE) && wf_setattr_is_kill(wf, &cred, &fid, attr))
		valid = (valid & ~WEIR_SETATTR_MODE) | WEIR_SETATTR_KILL_PRIV;
	rc = 0;
	if ((valid & WEIR_SETATTR_SIZE) && !fi && !wf->wf_conf.co_kperm) {
		/* truncate(2) by path: the VFS's write check (through an open file,
		 * the open checked it); the MDS does not check a size change */
		rc = wf_perm_fid(wf, &cred, &fid, W_OK);
	}
	if (!rc && valid)
		rc = weir_fid_setattr(wf->wf_fs, &fid, attr, valid, &st);
	else if (!rc)
		rc = weir_fid_getattr(wf->wf_fs, &fid, &st);
	wf_wait_end(req);
	if (rc)
		wf_reply_rc(req, rc);
	else
		fuse_reply_attr(req, &st, wf->wf_conf.co_attr_timeout);
}

static void wf_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct wf *wf = wf_of(req);
	weir_fid_t dir, fid;
	struct stat st;
	int rc;

	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_node_fid(wf, parent, &dir);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	rc = weir_fid_mkdir(wf->wf_fs, &dir, name, mode, &fid, &st);
	wf_wait_end(req);
	if (rc)
		wf_reply_rc(req, rc);
	else
		wf_reply_entry(req, wf, &dir, name, &fid, &st);
}

static void wf_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct wf *wf = wf_of(req);
	weir_fid_t dir;

	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_node_fid(wf, parent, &dir);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	int rc = weir_fid_unlink(wf->wf_fs, &dir, name);
	wf_wait_end(req);
	wf_reply_rc(req, rc);
}

static void wf_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct wf *wf = wf_of(req);
	weir_fid_t dir;

	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_node_fid(wf, parent, &dir);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	int rc = weir_fid_rmdir(wf->wf_fs, &dir, name);
	wf_wait_end(req);
	wf_reply_rc(req, rc);
}

static void wf_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct wf *wf = wf_of(req);
	weir_fid_t odir, ndir;

	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_node_fid(wf, parent, &odir);
	wf_node_fid(wf, newparent, &ndir);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	int rc = weir_fid_rename(wf->wf_fs, &odir, name, &ndir, newname, flags);
	wf_wait_end(req);
	if (!rc) /* before the reply: the kernel moves its names after it */
		wf_kname_moved(wf, &odir, parent, name, &ndir, newparent, newname,
			       (flags & RENAME_EXCHANGE) != 0);
	wf_reply_rc(req, rc);
}

/* ------------------------------------------------------------ files */

/* libweir open flags for the kernel's \a flags. */
static int wf_open_flags(const struct wf *wf, int flags, bool *append)
{
	int of = flags & (O_ACCMODE | O_TRUNC | O_APPEND);

	*append = false;
	if (wf->wf_conf.co_writeback) {
		/* the kernel reads pages around partial writes, and appends itself */
		if ((of & O_ACCMODE) == O_WRONLY)
			of = (of & ~O_ACCMODE) | O_RDWR;
		of &= ~O_APPEND;
	} else if (of & O_APPEND) {
		*append = true;
	}
	return of;
}

static int wf_file_new(weir_file_t *fh, bool append, const struct weir_cred *cred,
		       struct fuse_file_info *fi, const struct wf *wf)
{
	struct wf_file *ff = calloc(1, sizeof(*ff));

	if (!ff)
		return -ENOMEM;
	wf_fhead_init(&ff->ff_h, fh);
	ff->ff_append = append;
	ff->ff_cred = *cred;
	fi->fh = (uint64_t)(uintptr_t)ff;
	fi->direct_io = wf->wf_conf.co_direct_io ? 1 : 0;
	fi->keep_cache = 0;
	/* a FLUSH at every close(2) drops the closer's fcntl locks (wf_flush);
	 * with -o local_locks (the kernel's own) it has nothing to do unless the
	 * kernel buffers writes: no FLUSH request then */
	fi->noflush = wf->wf_conf.co_writeback || !wf->wf_conf.co_local_locks ? 0 : 1;
	return 0;
}

static void wf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct wf *wf = wf_of(req);
	struct weir_cred cred;
	weir_file_t *fh;
	weir_fid_t fid;
	bool append;
	int rc, of;

	wf_cred(req, WF_CRED_GROUPS, &cred);
	wf_node_fid(wf, ino, &fid);
	WEIR_LOG_DEBUG("op=open flags=%#x", (unsigned)fi->flags);
	of = wf_open_flags(wf, fi->flags, &append);
	if (fi->flags & WF_FMODE_EXEC)
		of |= WEIR_O_EXEC; /* execve(2): the MDS checks execute, not read (generic/126) */
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	rc = weir_fid_open(wf->wf_fs, &fid, of, &fh);
	wf_wait_end(req);
	if (rc) {
		wf_reply_rc(req, rc);
		return;
	}
	rc = wf_file_new(fh, append, &cred, fi, wf);
	if (rc) {
		weir_close(fh);
		wf_reply_rc(req, rc);
		return;
	}
	if ((of & O_ACCMODE) != O_RDONLY || (of & O_TRUNC)) {
		/* open for writing: the size turns the OSTs' (no lease any more),
		 * but the MDS calls back other mounts only: the kernel here
		 * forgets the attributes it keeps (offset -1: not the pages) */
		struct fuse_session *se = atomic_load(&wf->wf_se);
		if (se && wf_attr_tmo(wf, &fid) == 0)
			fuse_lowlevel_notify_inval_inode(se, ino, -1, 0);
	}
	if (fuse_reply_open(req, fi)) {
		weir_close(fh); /* interrupted: no release will come */
		wf_file_free(wf_file_of(fi));
	}
}

static void wf_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct wf *wf = wf_of(req);
	struct fuse_entry_param e;
	struct weir_cred cred;
	weir_file_t *fh;
	weir_fid_t dir, fid;
	struct stat st;
	bool append;
	int rc;

	if (!S_ISREG(mode)) {
		wf_reply_rc(req, -EOPNOTSUPP);
		return;
	}
	wf_cred(req, WF_CRED_GROUPS, &cred);
	wf_node_fid(wf, parent, &dir);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	/* O_NOFOLLOW: the kernel resolved the path (a symlink there now, made
	 * since its lookup, gives ELOOP), so the name is the new file's and
	 * libweir keeps it cached, the directory's completeness too */
	rc = weir_fid_create(wf->wf_fs, &dir, name,
			     wf_open_flags(wf, fi->flags, &append) | (fi->flags & O_EXCL) |
				     O_NOFOLLOW,
			     mode & 07777, &fh, &st);
	wf_wait_end(req);
	if (rc) {
		wf_reply_rc(req, rc);
		return;
	}
	weir_file_fid(fh, &fid);
	rc = wf_file_new(fh, append, &cred, fi, wf);
	if (!rc)
		rc = wf_entry_fill(wf, &dir, name, &fid, &st, &e);
	if (rc) {
		if (fi->fh)
			wf_file_free(wf_file_of(fi));
		weir_close(fh);
		wf_reply_rc(req, rc);
		return;
	}
	if (fuse_reply_create(req, &e, fi)) {
		wf_node_forget(wf, e.ino, 1);
		weir_close(fh);
		wf_file_free(wf_file_of(fi));
	}
}

static void wf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct wf_file *ff = wf_file_of(fi);
	uint64_t t0 = weir_now_ns();
	ssize_t n;
	char *buf;

	(void)ino;
	if (size > WF_MAX_IO)
		size = WF_MAX_IO;
	buf = malloc(size ? size : 1);
	if (!buf) {
		wf_reply_rc(req, -ENOMEM);
		return;
	}
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	n = weir_pread(ff->ff_h.h_fh, buf, size, (uint64_t)off);
	wf_wait_end(req);
	/* the request sizes and service times the kernel's readahead gives */
	WEIR_LOG_DEBUG("op=read off=%lld size=%zu rc=%zd us=%llu", (long long)off, size, n,
		       (unsigned long long)(weir_now_ns() - t0) / 1000);
	if (n < 0)
		wf_reply_rc(req, (int)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void wf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct wf_file *ff = wf_file_of(fi);
	uint64_t t0 = weir_now_ns();
	ssize_t n;

	(void)ino;
	weir_fid_cred_set(&ff->ff_cred);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	if (ff->ff_append)
		n = weir_write(ff->ff_h.h_fh, buf, size); /* at the end of file, as O_APPEND */
	else
		n = weir_pwrite(ff->ff_h.h_fh, buf, size, (uint64_t)off);
	wf_wait_end(req);
	WEIR_LOG_DEBUG("op=write off=%lld size=%zu rc=%zd us=%llu", (long long)off, size, n,
		       (unsigned long long)(weir_now_ns() - t0) / 1000);
	if (n < 0)
		wf_reply_rc(req, (int)n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void wf_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct wf *wf = wf_of(req);

	/* writes are synchronous to the OSTs, and the size is glimpsed while
	 * the file is open: nothing is left to push at close(2). What is left
	 * is POSIX's rule for fcntl locks: the close drops the closer's locks
	 * on the file, whatever descriptor took them (fi->lock_owner is the
	 * closer's file table, the owner wf_setlk used) */
	(void)ino;
	if (!wf->wf_conf.co_local_locks && fi->lock_owner) {
		struct wf_fhead *h = wf_fhead_of(fi);
		wf_owner_forget(h, fi->lock_owner);
		wf_cred(req, WF_CRED_IDS, NULL);
		wf_wait_begin(req); /* a wait for recovery ends at a signal */
		int rc = weir_lock_owner_release(h->h_fh, fi->lock_owner);
		wf_wait_end(req);
		if (rc && rc != -EIO)
			WEIR_LOG_WARN("op=flush owner=%#llx rc=%d: fcntl locks not released; they go"
				      " when the MDS evicts this mount or it unmounts",
				      (unsigned long long)fi->lock_owner, rc);
	}
	fuse_reply_err(req, 0);
}

static void wf_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct wf_file *ff = wf_file_of(fi);
	int rc;

	(void)ino;
	weir_fid_cred_set(NULL); /* the close is the daemon's, whoever closed last */
	/* not interruptible (no wf_wait_begin): the kernel sends RELEASE in the
	 * background once close(2) has returned, so no caller waits on it and
	 * no FUSE_INTERRUPT comes; and a close cut short would leave the file
	 * open on the MDS (an unlinked one unremoved) until the session ends.
	 * It waits for the MDS as long as the recovery limit lets it */
	wf_owners_release(&ff->ff_h);
	rc = weir_close(ff->ff_h.h_fh);
	if (rc)
		WEIR_LOG_WARN("op=release rc=%d: close failed", rc);
	wf_file_free(ff);
	fuse_reply_err(req, 0);
}

static void wf_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct wf_file *ff = wf_file_of(fi);

	(void)ino;
	wf_cred(req, WF_CRED_IDS, NULL);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	int rc = datasync ? weir_fdatasync(ff->ff_h.h_fh) : weir_fsync(ff->ff_h.h_fh);
	wf_wait_end(req);
	wf_reply_rc(req, rc);
}

static void wf_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct wf_file *ff = wf_file_of(fi);

	(void)ino;
	if (off < 0 || len <= 0) {
		wf_reply_rc(req, -EINVAL);
		return;
	}
	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	int rc = weir_fallocate(ff->ff_h.h_fh, mode, (uint64_t)off, (uint64_t)len);
	wf_wait_end(req);
	wf_reply_rc(req, rc);
}

static void wf_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct wf_file *ff = wf_file_of(fi);
	int64_t pos;

	(void)ino;
	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		wf_reply_rc(req, -EINVAL); /* the kernel handles the others */
		return;
	}
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	pos = weir_lseek(ff->ff_h.h_fh, off, whence);
	wf_wait_end(req);
	if (pos < 0)
		wf_reply_rc(req, (int)pos);
	else
		fuse_reply_lseek(req, pos);
}

/* ------------------------------------------------------------ directories */

static void wf_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct wf *wf = wf_of(req);
	struct wf_dir *d;
	int rc;

	d = calloc(1, sizeof(*d));
	if (!d) {
		wf_reply_rc(req, -ENOMEM);
		return;
	}
	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_node_fid(wf, ino, &d->fd_fid);
	/* open(2) of a directory: the MDS checks read permission, and keeps the
	 * directory while it is open (removed, it still answers getattr with
	 * st_nlink 0, as Linux: xfstests generic/035) */
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	rc = weir_fid_open(wf->wf_fs, &d->fd_fid, O_RDONLY | O_DIRECTORY, &d->fd_h.h_fh);
	if (!rc)
		rc = weir_fdopendir(d->fd_h.h_fh, &d->fd_dh); /* may list from the cache */
	wf_wait_end(req);
	if (rc) {
		wf_reply_rc(req, rc); /* first: an interrupted caller does not wait for the close */
		if (d->fd_h.h_fh)
			weir_close(d->fd_h.h_fh);
		free(d);
		return;
	}
	pthread_mutex_init(&d->fd_lock, NULL);
	wf_fhead_init(&d->fd_h, d->fd_h.h_fh);
	fi->fh = (uint64_t)(uintptr_t)d;
	/*
	 * The kernel keeps the listing (FOPEN_CACHE_DIR) while this mount holds
	 * the directory's LOOKUP and ATTR leases: any change of its names
	 * elsewhere calls them back first, and wf_md_inval then drops the
	 * cached listing with the directory's pages (and the kernel resets it
	 * itself when the directory's mtime moves, or this mount changes it).
	 */
	bool keep = wf->wf_conf.co_kperm && wf->wf_conf.co_entry_timeout <= 0 &&
		    (weir_md_leased(wf->wf_fs, &d->fd_fid, NULL) & 3) == 3;
	fi->cache_readdir = keep;
	fi->keep_cache = keep;
	if (fuse_reply_open(req, fi)) {
		weir_closedir(d->fd_dh);
		weir_close(d->fd_h.h_fh);
		pthread_mutex_destroy(&d->fd_lock);
		wf_fhead_fini(&d->fd_h);
		free(d);
	}
}

/* The next entry of \a d: the pending one, else from the stream. \return 1, 0 (end), -errno. */
static int wf_dir_next(struct wf_dir *d, struct weir_dirent *ent)
{
	if (d->fd_have_pending) {
		*ent = d->fd_pending;
		d->fd_have_pending = false;
		return 1;
	}
	return weir_readdir(d->fd_dh, ent);
}

static void wf_readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			      struct fuse_file_info *fi, bool plus)
{
	struct wf *wf = wf_of(req);
	struct wf_dir *d = (struct wf_dir *)(uintptr_t)fi->fh;
	struct weir_dirent ent;
	size_t used = 0;
	char *buf;
	int rc = 0;
	weir_fid_t dfid;

	wf_node_fid(wf, ino, &dfid);
	buf = malloc(size ? size : 1);
	if (!buf) {
		wf_reply_rc(req, -ENOMEM);
		return;
	}
	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	pthread_mutex_lock(&d->fd_lock);
	/* pages with attributes, cached under leases: the getattr of each entry
	 * below, and the kernel's later lookups, then ask no MDS */
	if (plus)
		weir_dir_plus(d->fd_dh, 1);
	if (off != d->fd_pos) {
		/* rewinddir or seekdir: positions are weir_telldir()'s */
		weir_seekdir(d->fd_dh, off);
		d->fd_pos = off;
		d->fd_have_pending = false;
	}
	for (;;) {
		struct fuse_entry_param e;
		off_t eoff;
		size_t len;
		bool dot;

		rc = wf_dir_next(d, &ent);
		if (rc <= 0)
			break;
		eoff = (off_t)ent.d_off;
		dot = !strcmp(ent.d_name, ".") || !strcmp(ent.d_name, "..");
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = ent.d_ino;
		e.attr.st_mode = (mode_t)(DTTOIF(ent.d_type));
		if (plus && !dot) {
			struct stat st;

			rc = weir_fid_getattr(wf->wf_fs, &ent.d_fid, &st);
			if (rc == -ENOENT) {
				d->fd_pos = eoff; /* removed since the listing: skip it */
				continue;
			}
			if (rc == 0)
				rc = wf_entry_fill(wf, &dfid, ent.d_name, &ent.d_fid, &st, &e);
			if (rc) {
				/* kept for the next call to retry (after an EINTR too) */
				d->fd_pending = ent;
				d->fd_have_pending = true;
				break;
			}
		}
		if (plus)
			len = fuse_add_direntry_plus(req, buf + used, size - used, ent.d_name, &e,
						     eoff);
		else
			len = fuse_add_direntry(req, buf + used, size - used, ent.d_name, &e.attr,
						eoff);
		if (len > size - used) {
			if (plus && !dot)
				wf_node_forget(wf, e.ino, 1);
			d->fd_pending = ent;
			d->fd_have_pending = true;
			rc = 0;
			break;
		}
		used += len;
		d->fd_pos = eoff;
	}
	pthread_mutex_unlock(&d->fd_lock);
	wf_wait_end(req);
	if (rc < 0 && used == 0)
		wf_reply_rc(req, rc);
	else
		fuse_reply_buf(req, buf, used); /* an error after some entries: next call */
	free(buf);
}

static void wf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	wf_readdir_common(req, ino, size, off, fi, false);
}

static void wf_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	wf_readdir_common(req, ino, size, off, fi, true);
}

static void wf_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct wf_dir *d = (struct wf_dir *)(uintptr_t)fi->fh;

	(void)ino;
	weir_closedir(d->fd_dh);
	/* the close is the daemon's, and not interruptible, as wf_release's */
	weir_fid_cred_set(NULL);
	wf_owners_release(&d->fd_h);
	weir_close(d->fd_h.h_fh);
	pthread_mutex_destroy(&d->fd_lock);
	wf_fhead_fini(&d->fd_h);
	free(d);
	fuse_reply_err(req, 0);
}

static void wf_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct wf *wf = wf_of(req);
	weir_fid_t fid;

	(void)datasync;
	(void)fi;
	wf_cred(req, WF_CRED_IDS, NULL);
	wf_node_fid(wf, ino, &fid);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	int rc = weir_fid_fsync(wf->wf_fs, &fid);
	wf_wait_end(req);
	wf_reply_rc(req, rc);
}

/*
 * access(2), faccessat(2) and chdir(2) without default_permissions (with it
 * the kernel answers them itself): the check on fresh attributes.
 */
static void wf_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct wf *wf = wf_of(req);
	struct weir_cred cred;
	weir_fid_t fid;

	wf_cred(req, WF_CRED_GROUPS, &cred);
	wf_node_fid(wf, ino, &fid);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	int rc = wf_perm_fid(wf, &cred, &fid, mask);
	wf_wait_end(req);
	wf_reply_rc(req, rc);
}

static void wf_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct wf *wf = wf_of(req);
	struct statvfs sv;
	int rc;

	(void)ino;
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	rc = weir_statfs(wf->wf_fs, &sv);
	wf_wait_end(req);
	if (rc)
		wf_reply_rc(req, rc);
	else
		fuse_reply_statfs(req, &sv);
}

/* ------------------------------------------------------------ links, nodes, xattrs */

static void wf_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct wf *wf = wf_of(req);
	weir_fid_t dir, fid;
	struct stat st;
	int rc;

	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_node_fid(wf, parent, &dir);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	rc = weir_fid_symlink(wf->wf_fs, &dir, name, link, &fid, &st);
	wf_wait_end(req);
	if (rc)
		wf_reply_rc(req, rc);
	else
		wf_reply_entry(req, wf, &dir, name, &fid, &st);
}

static void wf_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct wf *wf = wf_of(req);
	char buf[PATH_MAX + 1];
	weir_fid_t fid;
	ssize_t n;

	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_node_fid(wf, ino, &fid);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	n = weir_fid_readlink(wf->wf_fs, &fid, buf, sizeof(buf) - 1);
	wf_wait_end(req);
	if (n < 0) {
		wf_reply_rc(req, (int)n);
		return;
	}
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
}

static void wf_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct wf *wf = wf_of(req);
	weir_fid_t fid, dir;
	struct stat st;
	int rc;

	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_node_fid(wf, ino, &fid);
	wf_node_fid(wf, newparent, &dir);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	rc = weir_fid_link(wf->wf_fs, &fid, &dir, newname, &st);
	wf_wait_end(req);
	if (rc)
		wf_reply_rc(req, rc);
	else
		wf_reply_entry(req, wf, &dir, newname, &fid, &st);
}

static void wf_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct wf *wf = wf_of(req);
	weir_fid_t dir, fid;
	struct stat st;
	int rc;

	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_node_fid(wf, parent, &dir);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	rc = weir_fid_mknod(wf->wf_fs, &dir, name, mode, rdev, &fid, &st);
	wf_wait_end(req);
	if (rc)
		wf_reply_rc(req, rc);
	else
		wf_reply_entry(req, wf, &dir, name, &fid, &st);
}

/* Reply to getxattr/listxattr: the size when \a size is 0, else the bytes. */
static void wf_reply_xattr(fuse_req_t req, ssize_t n, const void *buf, size_t size)
{
	if (n < 0)
		wf_reply_rc(req, (int)n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

/*
 * The kernel asks for security.capability before every write to a FUSE file
 * (to drop file capabilities, as file_remove_privs does). Files almost never
 * have one, so its absence is remembered for WF_NOCAP_NS after the MDS said
 * so, instead of one MDS RPC per write(2); a setxattr or removexattr through
 * this mount forgets it at once, one through another client within that time.
 */
#define WF_NOCAP_NS 1000000000ULL

static bool wf_is_cap(const char *name)
{
	return !strcmp(name, "security.capability");
}

static void wf_xattr_changed(fuse_ino_t ino, const char *name)
{
	struct wf_node *n = wf_node_of(ino);

	if (n && wf_is_cap(name))
		atomic_store(&n->wn_nocap_ns, 0);
}

static void wf_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct wf *wf = wf_of(req);
	struct wf_node *node = wf_is_cap(name) ? wf_node_of(ino) : NULL;
	weir_fid_t fid;
	char *buf = NULL;
	ssize_t n;

	if (node && atomic_load(&node->wn_nocap_ns) > weir_now_ns()) {
		wf_reply_rc(req, -ENODATA);
		return;
	}
	if (size && !(buf = malloc(size))) {
		wf_reply_rc(req, -ENOMEM);
		return;
	}
	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_node_fid(wf, ino, &fid);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	n = weir_fid_getxattr(wf->wf_fs, &fid, name, buf, size);
	wf_wait_end(req);
	if (node && (n == -ENODATA || n == -EOPNOTSUPP))
		atomic_store(&node->wn_nocap_ns, weir_now_ns() + WF_NOCAP_NS);
	wf_reply_xattr(req, n, buf, size);
	free(buf);
}

static void wf_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct wf *wf = wf_of(req);
	weir_fid_t fid;
	char *buf = NULL;
	ssize_t n;

	if (size && !(buf = malloc(size))) {
		wf_reply_rc(req, -ENOMEM);
		return;
	}
	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_node_fid(wf, ino, &fid);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	n = weir_fid_listxattr(wf->wf_fs, &fid, buf, size);
	wf_wait_end(req);
	wf_reply_xattr(req, n, buf, size);
	free(buf);
}

static void wf_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct wf *wf = wf_of(req);
	weir_fid_t fid;

	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_node_fid(wf, ino, &fid);
	wf_xattr_changed(ino, name);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	int rc = weir_fid_setxattr(wf->wf_fs, &fid, name, value, size, flags);
	wf_wait_end(req);
	wf_reply_rc(req, rc);
}

static void wf_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct wf *wf = wf_of(req);
	weir_fid_t fid;

	wf_cred(req, WF_CRED_GROUPS, NULL);
	wf_node_fid(wf, ino, &fid);
	wf_xattr_changed(ino, name);
	wf_wait_begin(req); /* a wait for recovery ends at a signal */
	int rc = weir_fid_removexattr(wf->wf_fs, &fid, name);
	wf_wait_end(req);
	wf_reply_rc(req, rc);
}

/* FUSE_INTERRUPT of a request waiting in libweir: end the wait (-EINTR). */
static void wf_interrupted(fuse_req_t req, void *data)
{
	(void)req;
	weir_cancel(data);
}

/*
 * Make the libweir waits of \a req's call interruptible by the signals of
 * its caller: the kernel then sends FUSE_INTERRUPT, which libfuse hands to
 * wf_interrupted() on another worker thread. End with wf_wait_end().
 */
static void wf_wait_begin(fuse_req_t req)
{
	weir_cancel_t *c = weir_cancel_arm();
	if (c)
		fuse_req_interrupt_func(req, wf_interrupted, c); /* calls it now if already */
}

static void wf_wait_end(fuse_req_t req)
{
	/* returns once a running wf_interrupted() has (libfuse holds req's lock) */
	fuse_req_interrupt_func(req, NULL, NULL);
	weir_cancel_disarm();
}

/* ------------------------------------------------------------ fcntl locks */

/* Remember that \a owner took a lock through \a h. \return 0 or -ENOLCK. */
static int wf_owner_note(struct wf_fhead *h, uint64_t owner)
{
	int rc = 0;

	pthread_mutex_lock(&h->h_lock);
	for (unsigned i = 0; i < h->h_nr_owners; i++)
		if (h->h_owners[i] == owner)
			goto out;
	if (h->h_nr_owners == h->h_max_owners) {
		unsigned max = h->h_max_owners ? 2 * h->h_max_owners : 4;
		uint64_t *o = realloc(h->h_owners, max * sizeof(*o));
		if (!o) {
			rc = -ENOLCK;
			goto out;
		}
		h->h_owners = o;
		h->h_max_owners = max;
	}
	h->h_owners[h->h_nr_owners++] = owner;
out:
	pthread_mutex_unlock(&h->h_lock);
	return rc;
}

/* \a owner's locks were dropped (its close): forget it in \a h. */
static void wf_owner_forget(struct wf_fhead *h, uint64_t owner)
{
	pthread_mutex_lock(&h->h_lock);
	for (unsigned i = 0; i < h->h_nr_owners; i++) {
		if (h->h_owners[i] == owner) {
			h->h_owners[i] = h->h_owners[--h->h_nr_owners];
			break;
		}
	}
	pthread_mutex_unlock(&h->h_lock);
}

/*
 * The last close of \a h (RELEASE, RELEASEDIR): drop the locks of the
 * owners that took some through it and did not close since (an OFD lock's
 * owner, the open file itself; a directory's lockers). A POSIX owner that
 * closed \a h was forgotten then (wf_flush), so locks it took since through
 * another descriptor stay. Each costs a request only when the owner still
 * holds a lock on the file (weir_lock_owner_release).
 */
static void wf_owners_release(struct wf_fhead *h)
{
	for (unsigned i = 0; i < h->h_nr_owners; i++) {
		int rc = weir_lock_owner_release(h->h_fh, h->h_owners[i]);
		if (rc && rc != -EIO)
			WEIR_LOG_WARN("op=release owner=%#llx rc=%d: fcntl locks not released;"
				      " they go when the MDS evicts this mount or it unmounts",
				      (unsigned long long)h->h_owners[i], rc);
	}
	h->h_nr_owners = 0;
}

/*
 * F_GETLK, F_SETLK, F_SETLKW (and the OFD commands, which the kernel sends
 * as these with the open file as owner): the MDS's POSIX locks, owned by
 * the kernel's lock owner of the request, so fcntl locks taken through
 * different mounts, on any nodes, exclude each other as locks taken through
 * libweir and the shim do. A wait ends at a signal with -EINTR, no lock
 * left on the MDS.
 */
static void wf_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     struct flock *lock)
{
	int rc;

	(void)ino;
	wf_cred(req, WF_CRED_IDS, NULL);
	wf_wait_begin(req);
	rc = weir_fcntl_lock_owner(wf_fhead_of(fi)->h_fh, F_GETLK, lock, fi->lock_owner);
	wf_wait_end(req);
	if (rc)
		wf_reply_rc(req, rc);
	else
		fuse_reply_lock(req, lock);
}

static void wf_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     struct flock *lock, int sleep)
{
	struct wf_fhead *h = wf_fhead_of(fi);
	int rc = 0;

	(void)ino;
	wf_cred(req, WF_CRED_IDS, NULL);
	if (lock->l_type != F_UNLCK)
		rc = wf_owner_note(h, fi->lock_owner);
	if (!rc) {
		wf_wait_begin(req);
		rc = weir_fcntl_lock_owner(h->h_fh, sleep ? F_SETLKW : F_SETLK, lock,
					   fi->lock_owner);
		wf_wait_end(req);
	}
	wf_reply_rc(req, rc);
}

static void wf_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	int rc;

	(void)ino;
	wf_cred(req, WF_CRED_IDS, NULL);
	/* an flock lock belongs to the open file description: our handle. A
	 * wait ends at a signal with -EINTR, no lock left on the MDS (the
	 * kernel restarts the call unless the handler says otherwise), as with
	 * flock(2) on a local file */
	wf_wait_begin(req);
	rc = weir_flock(wf_fhead_of(fi)->h_fh, op); /* a directory's too */
	wf_wait_end(req);
	wf_reply_rc(req, rc);
}

const struct fuse_lowlevel_ops wf_ops = {
    .init = wf_init,
    .lookup = wf_lookup,
    .forget = wf_forget,
    .forget_multi = wf_forget_multi,
    .getattr = wf_getattr,
    .setattr = wf_setattr,
    .mkdir = wf_mkdir,
    .unlink = wf_unlink,
    .rmdir = wf_rmdir,
    .rename = wf_rename,
    .open = wf_open,
    .create = wf_create,
    .read = wf_read,
    .write = wf_write,
    .flush = wf_flush,
    .release = wf_release,
    .fsync = wf_fsync,
    .fallocate = wf_fallocate,
    .lseek = wf_lseek,
    .opendir = wf_opendir,
    .readdir = wf_readdir,
    .readdirplus = wf_readdirplus,
    .releasedir = wf_releasedir,
    .fsyncdir = wf_fsyncdir,
    .statfs = wf_statfs,
    .access = wf_access,
    .symlink = wf_symlink,
    .readlink = wf_readlink,
    .link = wf_link,
    .mknod = wf_mknod,
    .getxattr = wf_getxattr,
    .listxattr = wf_listxattr,
    .setxattr = wf_setxattr,
    .removexattr = wf_removexattr,
    .flock = wf_flock,
    .getlk = wf_getlk,
    .setlk = wf_setlk,
};
