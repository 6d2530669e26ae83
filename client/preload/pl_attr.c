/*
 * client/preload/pl_attr.c - changing attributes: chmod, fchmod, fchmodat,
 * lchmod, the chown family, and times (utimensat, futimens, utimes,
 * lutimes, futimes, futimesat, utime). By path through libweir's path calls;
 * by descriptor through the file's FID (weir_fid_setattr), which works for
 * every kind of Weir descriptor.
 */
#define _GNU_SOURCE
#include "pl_int.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <utime.h>

/* ------------------------------------------------------------ chmod, chown */

/*
 * An attribute change on a path or descriptor. \a fd >= 0 with an empty
 * path (or \a path NULL) acts on the descriptor.
 */
enum pl_attr_op { PL_A_CHMOD, PL_A_CHOWN, PL_A_TIMES };

struct pl_attr {
	enum pl_attr_op pa_op;
	mode_t pa_mode;
	uid_t pa_uid;
	gid_t pa_gid;
	const struct timespec *pa_ts; /* NULL: both now */
};

static int pl_attr_fh(struct pl_file *f, const struct pl_attr *a)
{
	weir_fs_t *fs;
	int rc = pl_fs_get(&fs);

	if (rc)
		return rc;
	if (a->pa_op == PL_A_CHOWN) {
		/* by FID: works for every kind of descriptor, O_PATH too */
		struct stat in;
		unsigned valid = 0;
		memset(&in, 0, sizeof(in));
		if (a->pa_uid != (uid_t)-1) {
			in.st_uid = a->pa_uid;
			valid |= WEIR_SETATTR_UID;
		}
		if (a->pa_gid != (gid_t)-1) {
			in.st_gid = a->pa_gid;
			valid |= WEIR_SETATTR_GID;
		}
		return PL_W(weir_fid_setattr(fs, &f->pf_fid, &in, valid, NULL));
	}
	if (a->pa_op == PL_A_CHMOD) {
		struct stat in;
		memset(&in, 0, sizeof(in));
		in.st_mode = a->pa_mode & 07777;
		return PL_W(weir_fid_setattr(fs, &f->pf_fid, &in, WEIR_SETATTR_MODE, NULL));
	}
	/* times */
	struct stat in;
	unsigned valid = 0;
	memset(&in, 0, sizeof(in));
	for (int i = 0; i < 2; i++) {
		long ns = a->pa_ts ? a->pa_ts[i].tv_nsec : UTIME_NOW;
		if (ns == UTIME_OMIT)
			continue;
		if (ns == UTIME_NOW) {
			valid |= i ? WEIR_SETATTR_MTIME_NOW : WEIR_SETATTR_ATIME_NOW;
			continue;
		}
		if (ns < 0 || ns > 999999999)
			return -EINVAL;
		if (i)
			in.st_mtim = a->pa_ts[1];
		else
			in.st_atim = a->pa_ts[0];
		valid |= i ? WEIR_SETATTR_MTIME : WEIR_SETATTR_ATIME;
	}
	if (!valid)
		return 0;
	return PL_W(weir_fid_setattr(fs, &f->pf_fid, &in, valid, NULL));
}

/* Path variant: \a nofollow acts on a symlink itself. */
static int pl_attr_path(const char *wpath, bool nofollow, const struct pl_attr *a)
{
	weir_fs_t *fs;
	int rc = pl_fs_get(&fs);

	if (rc)
		return rc;
	switch (a->pa_op) {
	case PL_A_CHMOD:
		if (nofollow) {
			struct stat st;
			rc = pl_stat_weir(wpath, true, &st);
			if (!rc && S_ISLNK(st.st_mode))
				return -EOPNOTSUPP; /* Linux: no modes on symlinks */
			if (rc)
				return rc;
		}
		return PL_W(weir_chmod(fs, wpath, a->pa_mode & 07777));
	case PL_A_CHOWN:
		return nofollow ? PL_W(weir_lchown(fs, wpath, a->pa_uid, a->pa_gid))
				: PL_W(weir_chown(fs, wpath, a->pa_uid, a->pa_gid));
	case PL_A_TIMES:
		if (nofollow) {
			/* the link itself: by FID, found without following it */
			struct stat st;
			rc = pl_stat_weir(wpath, true, &st);
			if (rc)
				return rc;
			if (S_ISLNK(st.st_mode)) {
				char parent[PL_PATH_MAX];
				weir_fid_t dir, fid;
				const char *name = pl_path_split(wpath, parent);
				rc = PL_W(weir_path2fid(fs, parent, &dir));
				if (!rc)
					rc = PL_W(weir_fid_lookup(fs, &dir, name, &fid, NULL));
				if (rc)
					return rc;
				struct pl_file tmp;
				memset(&tmp, 0, sizeof(tmp));
				tmp.pf_fid = fid;
				return pl_attr_fh(&tmp, a);
			}
		}
		return PL_W(weir_utimens(fs, wpath, a->pa_ts));
	}
	return -EINVAL;
}

/* Any attribute call. \return 1 = not Weir's (use libc), else 0 / -errno. */
static int pl_attr_at(int dirfd, const char *path, int flags, int fd, const struct pl_attr *a)
{
	char wpath[PL_PATH_MAX];
	struct pl_file *f;
	int w, rc;

	if (!pl_active())
		return 1;
	if (fd >= 0 || ((flags & AT_EMPTY_PATH) && path && !*path)) {
		f = pl_fd_get(fd >= 0 ? fd : dirfd);
		if (!f)
			return 1;
		rc = pl_attr_fh(f, a);
		pl_file_put(f);
		return rc;
	}
	w = pl_resolve(dirfd, path, false, wpath);
	if (w == PL_LOCAL)
		return 1;
	if (w == PL_LOCAL_ABS) {
		switch (a->pa_op) {
		case PL_A_CHMOD:
			rc = PL_REAL(fchmodat)(AT_FDCWD, wpath, a->pa_mode, flags);
			break;
		case PL_A_CHOWN:
			rc = PL_REAL(fchownat)(AT_FDCWD, wpath, a->pa_uid, a->pa_gid, flags);
			break;
		default:
			rc = PL_REAL(utimensat)(AT_FDCWD, wpath, a->pa_ts, flags);
			break;
		}
		return rc ? -errno : 0;
	}
	if (w < 0)
		return w;
	return pl_attr_path(wpath, (flags & AT_SYMLINK_NOFOLLOW) != 0, a);
}

PL_EXPORT int chmod(const char *path, mode_t mode)
{
	struct pl_attr a = {.pa_op = PL_A_CHMOD, .pa_mode = mode};
	int saved = errno;
	int rc = pl_attr_at(AT_FDCWD, path, 0, -1, &a);

	return rc == 1 ? PL_REAL(chmod)(path, mode) : pl_ret(rc, saved);
}

PL_EXPORT int lchmod(const char *path, mode_t mode)
{
	struct pl_attr a = {.pa_op = PL_A_CHMOD, .pa_mode = mode};
	int saved = errno;
	int rc = pl_attr_at(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, -1, &a);

	return rc == 1 ? PL_REAL(lchmod)(path, mode) : pl_ret(rc, saved);
}

PL_EXPORT int fchmod(int fd, mode_t mode)
{
	struct pl_attr a = {.pa_op = PL_A_CHMOD, .pa_mode = mode};
	int saved = errno;
	int rc = pl_fd_is_weir(fd) ? pl_attr_at(AT_FDCWD, NULL, 0, fd, &a) : 1;

	return rc == 1 ? PL_REAL(fchmod)(fd, mode) : pl_ret(rc, saved);
}

PL_EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
	struct pl_attr a = {.pa_op = PL_A_CHMOD, .pa_mode = mode};
	int saved = errno;
	int rc = pl_attr_at(dirfd, path, flags, -1, &a);

	return rc == 1 ? PL_REAL(fchmodat)(dirfd, path, mode, flags) : pl_ret(rc, saved);
}

PL_EXPORT int chown(const char *path, uid_t uid, gid_t gid)
{
	struct pl_attr a = {.pa_op = PL_A_CHOWN, .pa_uid = uid, .pa_gid = gid};
	int saved = errno;
	int rc = pl_attr_at(AT_FDCWD, path, 0, -1, &a);

	return rc == 1 ? PL_REAL(chown)(path, uid, gid) : pl_ret(rc, saved);
}

PL_EXPORT int lchown(const char *path, uid_t uid, gid_t gid)
{
	struct pl_attr a = {.pa_op = PL_A_CHOWN, .pa_uid = uid, .pa_gid = gid};
	int saved = errno;
	int rc = pl_attr_at(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, -1, &a);

	return rc == 1 ? PL_REAL(lchown)(path, uid, gid) : pl_ret(rc, saved);
}

PL_EXPORT int fchown(int fd, uid_t uid, gid_t gid)
{
	struct pl_attr a = {.pa_op = PL_A_CHOWN, .pa_uid = uid, .pa_gid = gid};
	int saved = errno;
	int rc = pl_fd_is_weir(fd) ? pl_attr_at(AT_FDCWD, NULL, 0, fd, &a) : 1;

	return rc == 1 ? PL_REAL(fchown)(fd, uid, gid) : pl_ret(rc, saved);
}

PL_EXPORT int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags)
{
	struct pl_attr a = {.pa_op = PL_A_CHOWN, .pa_uid = uid, .pa_gid = gid};
	int saved = errno;
	int rc = pl_attr_at(dirfd, path, flags, -1, &a);

	return rc == 1 ? PL_REAL(fchownat)(dirfd, path, uid, gid, flags) : pl_ret(rc, saved);
}

/* ------------------------------------------------------------ times */

PL_EXPORT int utimensat(int dirfd, const char *path, const struct timespec ts[2], int flags)
{
	struct pl_attr a = {.pa_op = PL_A_TIMES, .pa_ts = ts};
	int saved = errno;
	int rc;

	const char *volatile pv = path; /* declared nonnull, but the syscall takes NULL */
	if (!pv)			/* futimens(dirfd) as the syscall spells it */
		rc = pl_fd_is_weir(dirfd) ? pl_attr_at(AT_FDCWD, NULL, 0, dirfd, &a) : 1;
	else
		rc = pl_attr_at(dirfd, path, flags, -1, &a);
	return rc == 1 ? PL_REAL(utimensat)(dirfd, path, ts, flags) : pl_ret(rc, saved);
}

PL_EXPORT int futimens(int fd, const struct timespec ts[2])
{
	struct pl_attr a = {.pa_op = PL_A_TIMES, .pa_ts = ts};
	int saved = errno;
	int rc = pl_fd_is_weir(fd) ? pl_attr_at(AT_FDCWD, NULL, 0, fd, &a) : 1;

	return rc == 1 ? PL_REAL(futimens)(fd, ts) : pl_ret(rc, saved);
}

/* timeval pair -> timespec pair (NULL stays NULL). */
static const struct timespec *pl_tv2ts(const struct timeval tv[2], struct timespec ts[2])
{
	if (!tv)
		return NULL;
	for (int i = 0; i < 2; i++) {
		ts[i].tv_sec = tv[i].tv_sec;
		ts[i].tv_nsec = tv[i].tv_usec * 1000;
		if (tv[i].tv_usec < 0 || tv[i].tv_usec >= 1000000)
			ts[i].tv_nsec = -1; /* rejected below with EINVAL */
	}
	return ts;
}

static int pl_utimes_any(int dirfd, const char *path, int fd, const struct timeval tv[2], int flags)
{
	struct timespec ts[2];
	struct pl_attr a = {.pa_op = PL_A_TIMES, .pa_ts = pl_tv2ts(tv, ts)};

	return pl_attr_at(dirfd, path, flags, fd, &a);
}

PL_EXPORT int utimes(const char *path, const struct timeval tv[2])
{
	int saved = errno;
	int rc = pl_utimes_any(AT_FDCWD, path, -1, tv, 0);

	return rc == 1 ? PL_REAL(utimes)(path, tv) : pl_ret(rc, saved);
}

PL_EXPORT int lutimes(const char *path, const struct timeval tv[2])
{
	int saved = errno;
	int rc = pl_utimes_any(AT_FDCWD, path, -1, tv, AT_SYMLINK_NOFOLLOW);

	return rc == 1 ? PL_REAL(lutimes)(path, tv) : pl_ret(rc, saved);
}

PL_EXPORT int futimes(int fd, const struct timeval tv[2])
{
	int saved = errno;
	int rc = pl_fd_is_weir(fd) ? pl_utimes_any(AT_FDCWD, NULL, fd, tv, 0) : 1;

	return rc == 1 ? PL_REAL(futimes)(fd, tv) : pl_ret(rc, saved);
}

PL_EXPORT int futimesat(int dirfd, const char *path, const struct timeval tv[2])
{
	int saved = errno;
	int rc = pl_utimes_any(dirfd, path, -1, tv, 0);

	return rc == 1 ? PL_REAL(futimesat)(dirfd, path, tv) : pl_ret(rc, saved);
}

PL_EXPORT int utime(const char *path, const struct utimbuf *ub)
{
	struct timespec ts[2];
	struct pl_attr a = {.pa_op = PL_A_TIMES, .pa_ts = NULL};
	int saved = errno;

	if (ub) {
		ts[0].tv_sec = ub->actime;
		ts[0].tv_nsec = 0;
		ts[1].tv_sec = ub->modtime;
		ts[1].tv_nsec = 0;
		a.pa_ts = ts;
	}
	int rc = pl_attr_at(AT_FDCWD, path, 0, -1, &a);
	return rc == 1 ? PL_REAL(utime)(path, ub) : pl_ret(rc, saved);
}
