/*
 * client/preload/pl_open.c - the open family, close, the dup family, fcntl
 * (flags, F_DUPFD, locks), lockf, flock, the mkstemp family, close_range,
 * closefrom, isatty and ioctl.
 */
#define _GNU_SOURCE
#include "pl_int.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <termios.h>
#include <unistd.h>

/* The fortified entry points (declared by glibc only with _FORTIFY_SOURCE). */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

/*
 * Open Weir path \a wpath; with \a dir (a directory pl_file) through its
 * handle and \a rel relative to it (openat), else by path.
 */
static int pl_open_weir_in(struct pl_file *dir, const char *rel, const char *wpath, int flags,
			   mode_t mode)
{
	weir_fs_t *fs;
	weir_file_t *fh = NULL, *dh;
	weir_fid_t fid;
	int rc;

	if ((flags & O_TMPFILE) == O_TMPFILE) {
		PL_LOG_ONCE("path=%s: O_TMPFILE is not supported on Weir: EOPNOTSUPP", wpath);
		return -EOPNOTSUPP;
	}
	rc = pl_fs_get(&fs);
	if (rc)
		return rc;
	if (flags & O_PATH) {
		struct stat st;
		rc = pl_stat_weir(wpath, (flags & O_NOFOLLOW) != 0, &st);
		if (!rc && (flags & O_DIRECTORY) && !S_ISDIR(st.st_mode))
			rc = -ENOTDIR;
		if (!rc)
			rc = PL_W(weir_path2fid(fs, wpath, &fid));
		if (rc)
			return rc;
		return pl_fd_install(PL_K_PATH, wpath, &fid,
				     flags & (O_PATH | O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW), NULL);
	}
	if (flags & O_CREAT)
		mode = mode & ~pl_umask_get() & 07777;
	int wflags =
	    flags & (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_DIRECTORY | O_NOFOLLOW);
	if (dir) {
		rc = pl_file_handle(dir, &dh);
		if (rc)
			return rc;
		rc = PL_W(weir_openat(NULL, dh, rel, wflags, mode, &fh));
		pl_file_unhandle(dir);
	} else {
		rc = PL_W(weir_open(fs, wpath, wflags, mode, &fh));
	}
	if (rc == -ENOENT && !(flags & O_NOFOLLOW)) {
		/* through a symlink to a local file: open that one */
		char local[PL_PATH_MAX];
		if (pl_weir_escape(wpath, local)) {
			int fd = PL_REAL(open)(local, flags, mode);
			return fd < 0 ? -errno : fd;
		}
	}
	if (rc)
		return rc;
	rc = PL_W(weir_file_fid(fh, &fid));
	if (rc) {
		PL_W(weir_close(fh));
		return rc;
	}
	return pl_fd_install((flags & O_DIRECTORY) ? PL_K_DIR : PL_K_FILE, wpath, &fid, flags, fh);
}

int pl_open_weir(const char *wpath, int flags, mode_t mode)
{
	return pl_open_weir_in(NULL, NULL, wpath, flags, mode);
}

/* Every open variant: \a at says whether \a dirfd counts (openat). */
static int pl_openat_any(int dirfd, const char *path, int flags, mode_t mode, bool at)
{
	char buf[PL_PATH_MAX];
	int saved = errno;
	int w, fd;

	if (!pl_active()) {
		fd = at ? PL_REAL(openat)(dirfd, path, flags, mode)
			: PL_REAL(open)(path, flags, mode);
		if (fd >= 0 && pl_depth > 0)
			fd = pl_fd_relocate(fd); /* libweir's own (its log) */
		return fd;
	}
	struct pl_file *dir = at ? pl_at_dir(dirfd, path, buf) : NULL;
	if (dir) {
		fd = pl_open_weir_in(dir, path, buf, flags, mode);
		pl_file_put(dir);
		return pl_ret(fd, saved);
	}
	w = pl_resolve(at ? dirfd : AT_FDCWD, path, false, buf);
	if (w == PL_LOCAL)
		return at ? PL_REAL(openat)(dirfd, path, flags, mode)
			  : PL_REAL(open)(path, flags, mode);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(open)(buf, flags, mode);
	if (w < 0)
		return pl_ret(w, saved);
	return pl_ret(pl_open_weir(buf, flags, mode), saved);
}

static mode_t pl_va_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

PL_EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = pl_va_mode(flags, ap);
	va_end(ap);
	return pl_openat_any(AT_FDCWD, path, flags, mode, false);
}

PL_EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = pl_va_mode(flags, ap);
	va_end(ap);
	return pl_openat_any(AT_FDCWD, path, flags | O_LARGEFILE, mode, false);
}

PL_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = pl_va_mode(flags, ap);
	va_end(ap);
	return pl_openat_any(dirfd, path, flags, mode, true);
}

PL_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = pl_va_mode(flags, ap);
	va_end(ap);
	return pl_openat_any(dirfd, path, flags | O_LARGEFILE, mode, true);
}

PL_EXPORT int creat(const char *path, mode_t mode)
{
	return pl_openat_any(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, false);
}

PL_EXPORT int creat64(const char *path, mode_t mode)
{
	return pl_openat_any(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC | O_LARGEFILE, mode,
			     false);
}

/* The fortified variants: called without a mode, so O_CREAT is a program bug. */
PL_EXPORT int __open_2(const char *path, int flags)
{
	if (flags & O_CREAT)
		__chk_fail();
	return pl_openat_any(AT_FDCWD, path, flags, 0, false);
}

PL_EXPORT int __open64_2(const char *path, int flags)
{
	if (flags & O_CREAT)
		__chk_fail();
	return pl_openat_any(AT_FDCWD, path, flags | O_LARGEFILE, 0, false);
}

PL_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	if (flags & O_CREAT)
		__chk_fail();
	return pl_openat_any(dirfd, path, flags, 0, true);
}

PL_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	if (flags & O_CREAT)
		__chk_fail();
	return pl_openat_any(dirfd, path, flags | O_LARGEFILE, 0, true);
}

/* ------------------------------------------------------------ close, dup */

PL_EXPORT int close(int fd)
{
	int saved = errno;

	if (!pl_fd_is_weir(fd) && !pl_internal_has(fd))
		return PL_REAL(close)(fd);
	if (fd <= 2 && pl_fd_is_weir(fd))
		pl_stdio_before(fd); /* a Weir stdout's buffer goes out while it still can */
	return pl_ret(pl_fd_close(fd), saved);
}

static bool pl_fd_special(int fd)
{
	return pl_fd_is_weir(fd) || pl_internal_has(fd);
}

PL_EXPORT int dup(int fd)
{
	int saved = errno;

	if (!pl_fd_special(fd))
		return PL_REAL(dup)(fd);
	return pl_ret(pl_fd_dup(fd, -1, 0, 0), saved);
}

PL_EXPORT int dup2(int oldfd, int newfd)
{
	int saved = errno;

	if (!pl_fd_special(oldfd) && !pl_fd_special(newfd))
		return PL_REAL(dup2)(oldfd, newfd);
	return pl_ret(pl_fd_dup(oldfd, newfd, 1, 0), saved);
}

PL_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	int saved = errno;

	if (!pl_fd_special(oldfd) && !pl_fd_special(newfd))
		return PL_REAL(dup3)(oldfd, newfd, flags);
	return pl_ret(pl_fd_dup(oldfd, newfd, 2, flags), saved);
}

/* ------------------------------------------------------------ fcntl, locks */

/* A lock request on Weir descriptor \a f: SEEK_CUR made absolute with our offset. */
static int pl_lock(struct pl_file *f, int cmd, struct flock *fl)
{
	weir_file_t *fh;
	struct flock l = *fl;
	int rc;

	if (l.l_whence == SEEK_CUR) {
		pl_sd_lock(f->pf_sd);
		l.l_start += (off_t)f->pf_sd->sd_pos;
		pl_sd_unlock(f->pf_sd);
		l.l_whence = SEEK_SET;
	}
	rc = pl_file_handle(f, &fh);
	if (rc)
		return rc;
	rc = PL_W(weir_fcntl_lock(fh, cmd, &l));
	pl_file_unhandle(f);
	if (!rc && (cmd == F_GETLK || cmd == F_OFD_GETLK)) {
		if (l.l_type == F_UNLCK)
			fl->l_type = F_UNLCK; /* only l_type changes when nothing conflicts */
		else
			*fl = l;
	}
	return rc;
}

static int pl_fcntl_weir(struct pl_file *f, int fd, int cmd, void *arg)
{
	switch (cmd) {
	case F_DUPFD:
		return pl_fd_dup(fd, (int)(intptr_t)arg, 3, 0);
	case F_DUPFD_CLOEXEC:
		return pl_fd_dup(fd, (int)(intptr_t)arg, 4, 0);
	case F_GETFD:
	case F_SETFD: {
		/* close-on-exec is the reserved descriptor's own flag */
		int rc = PL_REAL(fcntl)(fd, cmd, (int)(intptr_t)arg);
		return rc < 0 ? -errno : rc;
	}
	case F_GETFL:
		return pl_file_flags(f) | O_LARGEFILE;
	case F_SETFL:
		if (f->pf_kind == PL_K_PATH)
			return -EBADF;
		pl_file_setfl(f, (int)(intptr_t)arg);
		return 0;
	case F_GETLK:
	case F_SETLK:
	case F_SETLKW:
	case F_OFD_GETLK:
	case F_OFD_SETLK:
	case F_OFD_SETLKW:
		if (!arg)
			return -EFAULT;
		if (f->pf_kind == PL_K_PATH)
			return -EBADF;
		return pl_lock(f, cmd, arg);
	case F_GETOWN:
		return 0;
	default:
		PL_LOG_ONCE("fcntl cmd=%d on a Weir descriptor is not supported: EINVAL", cmd);
		return -EINVAL;
	}
}

static int pl_fcntl(int fd, int cmd, void *arg, bool is64)
{
	int saved = errno;
	struct pl_file *f;
	int rc;

	if (!pl_fd_is_weir(fd) || !(f = pl_fd_get(fd)))
		return is64 ? PL_REAL(fcntl64)(fd, cmd, arg) : PL_REAL(fcntl)(fd, cmd, arg);
	rc = pl_fcntl_weir(f, fd, cmd, arg);
	pl_file_put(f);
	return pl_ret(rc, saved);
}

PL_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return pl_fcntl(fd, cmd, arg, false);
}

PL_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return pl_fcntl(fd, cmd, arg, true);
}

/* lockf(3) as glibc defines it on top of fcntl: from the current offset. */
static int pl_lockf(int fd, int cmd, off_t len)
{
	struct flock fl = {.l_whence = SEEK_CUR, .l_start = 0, .l_len = len};
	int saved = errno;
	struct pl_file *f = pl_fd_get(fd);
	int rc;

	if (!f)
		return PL_REAL(lockf)(fd, cmd, len);
	switch (cmd) {
	case F_TEST:
		fl.l_type = F_RDLCK;
		rc = pl_lock(f, F_GETLK, &fl);
		if (!rc && fl.l_type != F_UNLCK && fl.l_pid != getpid())
			rc = -EACCES;
		break;
	case F_ULOCK:
		fl.l_type = F_UNLCK;
		rc = pl_lock(f, F_SETLK, &fl);
		break;
	case F_LOCK:
		fl.l_type = F_WRLCK;
		rc = pl_lock(f, F_SETLKW, &fl);
		break;
	case F_TLOCK:
		fl.l_type = F_WRLCK;
		rc = pl_lock(f, F_SETLK, &fl);
		break;
	default:
		rc = -EINVAL;
		break;
	}
	pl_file_put(f);
	return pl_ret(rc, saved);
}

PL_EXPORT int lockf(int fd, int cmd, off_t len)
{
	return pl_lockf(fd, cmd, len);
}

PL_EXPORT int lockf64(int fd, int cmd, off64_t len)
{
	return pl_lockf(fd, cmd, (off_t)len);
}

PL_EXPORT int flock(int fd, int op)
{
	int saved = errno;
	struct pl_file *f = pl_fd_get(fd);
	weir_file_t *fh;
	int rc;

	if (!f)
		return PL_REAL(flock)(fd, op);
	rc = f->pf_kind == PL_K_PATH ? -EBADF : pl_file_handle(f, &fh);
	if (!rc) {
		rc = PL_W(weir_flock(fh, op));
		pl_file_unhandle(f);
	}
	pl_file_put(f);
	return pl_ret(rc, saved);
}

/* ------------------------------------------------------------ mkstemp family */

/* Fill the six X's before \a suffixlen bytes of suffix. \return 0 or -EINVAL. */
static int pl_tmpl_fill(char *tmpl, int suffixlen)
{
	static const char az[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	size_t n = strlen(tmpl);
	unsigned char rnd[6];

	if (suffixlen < 0 || n < 6 + (size_t)suffixlen)
		return -EINVAL;
	char *x = tmpl + n - suffixlen - 6;
	if (strncmp(x, "XXXXXX", 6))
		return -EINVAL;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		for (int i = 0; i < 6; i++)
			rnd[i] = (unsigned char)random();
	for (int i = 0; i < 6; i++)
		x[i] = az[rnd[i] % (sizeof(az) - 1)];
	return 0;
}

/* mkstemp and friends for a Weir template; \a dir: mkdtemp. \return fd/0 or -errno. */
static int pl_mktemp_weir(char *tmpl, int suffixlen, int flags, bool dir)
{
	size_t n = strlen(tmpl);
	char keep[PL_PATH_MAX], wpath[PL_PATH_MAX];
	int rc = -EEXIST;

	if (n >= sizeof(keep))
		return -ENAMETOOLONG;
	memcpy(keep, tmpl, n + 1);
	for (int tries = 0; tries < 100 && rc == -EEXIST; tries++) {
		memcpy(tmpl, keep, n + 1);
		rc = pl_tmpl_fill(tmpl, suffixlen);
		if (rc)
			break;
		int w = pl_resolve_path(tmpl, wpath);
		if (w != PL_WEIR)
			return w < 0 ? w : -EXDEV;
		if (dir)
			rc = pl_mkdir_weir(wpath, 0700);
		else
			rc = pl_open_weir(wpath, (flags & ~O_ACCMODE) | O_RDWR | O_CREAT | O_EXCL,
					  0600);
	}
	if (rc < 0)
		memcpy(tmpl, keep, n + 1);
	return rc;
}

/* Is template \a tmpl (with its X's as they are) a Weir path? */
static bool pl_tmpl_is_weir(const char *tmpl)
{
	char wpath[PL_PATH_MAX];

	return pl_active() && tmpl && pl_resolve_path(tmpl, wpath) == PL_WEIR;
}

PL_EXPORT int mkostemps(char *tmpl, int suffixlen, int flags)
{
	int saved = errno;

	if (!pl_tmpl_is_weir(tmpl))
		return PL_REAL(mkostemps)(tmpl, suffixlen, flags);
	return pl_ret(pl_mktemp_weir(tmpl, suffixlen, flags, false), saved);
}

PL_EXPORT int mkostemps64(char *tmpl, int suffixlen, int flags)
{
	return mkostemps(tmpl, suffixlen, flags);
}

PL_EXPORT int mkstemp(char *tmpl)
{
	return mkostemps(tmpl, 0, 0);
}

PL_EXPORT int mkstemp64(char *tmpl)
{
	return mkostemps(tmpl, 0, 0);
}

PL_EXPORT int mkostemp(char *tmpl, int flags)
{
	return mkostemps(tmpl, 0, flags);
}

PL_EXPORT int mkostemp64(char *tmpl, int flags)
{
	return mkostemps(tmpl, 0, flags);
}

PL_EXPORT int mkstemps(char *tmpl, int suffixlen)
{
	return mkostemps(tmpl, suffixlen, 0);
}

PL_EXPORT int mkstemps64(char *tmpl, int suffixlen)
{
	return mkostemps(tmpl, suffixlen, 0);
}

PL_EXPORT char *mkdtemp(char *tmpl)
{
	int saved = errno;
	int rc;

	if (!pl_tmpl_is_weir(tmpl))
		return PL_REAL(mkdtemp)(tmpl);
	rc = pl_mktemp_weir(tmpl, 0, 0, true);
	if (rc < 0) {
		errno = -rc;
		return NULL;
	}
	errno = saved;
	return tmpl;
}

/* ------------------------------------------------------------ close_range, closefrom */

static int pl_cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

PL_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	int keep[64], nkeep = 0, nint;

	if (!pl_active() || (flags & CLOSE_RANGE_CLOEXEC) || first > last)
		return PL_REAL(close_range)(first, last, flags);
	/* Weir descriptors: unbind them (their reserved descriptors close here too) */
	for (unsigned fd = first; fd <= last && fd < (unsigned)pl_fd_high(); fd++)
		if (pl_fd_is_weir((int)fd))
			pl_fd_close((int)fd);
	/* the shim's own descriptors stay: close the ranges around them */
	nint = pl_internal_list(keep, 64);
	for (int i = 0; i < nint; i++)
		if ((unsigned)keep[i] >= first && (unsigned)keep[i] <= last)
			keep[nkeep++] = keep[i];
	qsort(keep, (size_t)nkeep, sizeof(int), pl_cmp_int);
	unsigned lo = first;
	for (int i = 0; i < nkeep; i++) {
		if ((unsigned)keep[i] > lo &&
		    PL_REAL(close_range)(lo, (unsigned)keep[i] - 1, flags))
			return -1;
		lo = (unsigned)keep[i] + 1;
	}
	if (lo > last || lo == 0)
		return 0;
	return PL_REAL(close_range)(lo, last, flags);
}

PL_EXPORT void closefrom(int lowfd)
{
	if (lowfd < 0)
		lowfd = 0;
	close_range((unsigned)lowfd, ~0U, 0);
}

/* ------------------------------------------------------------ isatty, ioctl */

PL_EXPORT int isatty(int fd)
{
	if (!pl_fd_is_weir(fd))
		return PL_REAL(isatty)(fd);
	errno = ENOTTY;
	return 0;
}

PL_EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	int saved = errno;
	struct pl_file *f;
	int rc;

	if (!pl_fd_is_weir(fd) || !(f = pl_fd_get(fd)))
		return PL_REAL(ioctl)(fd, req, arg);
	switch (req) {
	case FIOCLEX:
	case FIONCLEX:
		rc = PL_REAL(fcntl)(fd, F_SETFD, req == FIOCLEX ? FD_CLOEXEC : 0) ? -errno : 0;
		break;
	case FIONREAD: {
		struct stat st;
		rc = pl_file_stat(f, &st);
		if (!rc) {
			uint64_t pos = f->pf_sd->sd_pos;
			uint64_t left = (uint64_t)st.st_size > pos ? (uint64_t)st.st_size - pos : 0;
			*(int *)arg = left > INT_MAX ? INT_MAX : (int)left;
		}
		break;
	}
	case FICLONE:
	case FICLONERANGE:
	case FIDEDUPERANGE:
		rc = -EOPNOTSUPP; /* no reflinks: copy instead (cp does) */
		break;
	case TCGETS:
	case TIOCGWINSZ:
	case TIOCGPGRP:
		rc = -ENOTTY;
		break;
	default:
		PL_LOG_ONCE("ioctl req=%#lx on a Weir descriptor is not supported: ENOTTY", req);
		rc = -ENOTTY;
		break;
	}
	pl_file_put(f);
	return pl_ret(rc, saved);
}
