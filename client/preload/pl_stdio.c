/*
 * client/preload/pl_stdio.c - stdio on Weir files: fopen, fopen64, fdopen,
 * freopen, freopen64, and the standard streams when descriptor 0, 1 or 2
 * is Weir's.
 *
 * glibc's stdio calls read/write through internal aliases the shim cannot
 * interpose, so a Weir FILE* is a fopencookie() stream whose functions call
 * the shim; its _fileno is set to the Weir descriptor, so fileno(), fstat()
 * on it and fclose() behave as with a real file.
 *
 * Standard streams: when descriptor 0/1/2 becomes Weir's (a shell redirect
 * dup2()s a Weir descriptor onto 1; an exec'd program inherits one), the
 * variable stdin/stdout/stderr is pointed at such a stream bound to that
 * descriptor number (after flushing the old one), and back to the original
 * stream when the descriptor becomes local again. Code that saved the old
 * FILE* before the switch (rare) keeps writing to the descriptor through
 * glibc and gets EBADF.
 */
#define _GNU_SOURCE
#include "pl_int.h"

#include <fcntl.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pl_cookie {
	int ck_fd;   /* descriptor it reads and writes (-1: detached) */
	int ck_std;  /* 0..2 when it is the standard stream of that descriptor, else -1 */
	FILE *ck_fp; /* its stream */
	struct pl_cookie *ck_prev, *ck_next; /* every live stream of ours (pl_streams) */
};

static struct pl_cookie *pl_streams; /* under pl_std_lock */

static pthread_mutex_t pl_std_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static FILE *pl_std_orig[3]; /* glibc's streams, while ours stand in */
static FILE *pl_std_ours[3]; /* our stream standing in, or NULL */
static struct pl_cookie *pl_std_ck[3];
/*
 * Our stream of a descriptor that is local again, detached (it fails with
 * EBADF), kept rather than freed: the program may still hold the pointer
 * (a FILE* saved while the redirect was on). It stands in again the next
 * time the descriptor is Weir's.
 */
static FILE *pl_std_spare[3];
static struct pl_cookie *pl_std_spare_ck[3];

static FILE **pl_std_var(int fd)
{
	return fd == 0 ? &stdin : fd == 1 ? &stdout : &stderr;
}

/* ------------------------------------------------------------ cookie functions */

static ssize_t pl_ck_read(void *c, char *buf, size_t n)
{
	struct pl_cookie *ck = c;

	if (ck->ck_fd < 0) {
		errno = EBADF;
		return -1;
	}
	return pl_any_read(ck->ck_fd, buf, n);
}

/* glibc counts a short cookie write as an error: write it all. */
static ssize_t pl_ck_write(void *c, const char *buf, size_t n)
{
	struct pl_cookie *ck = c;
	size_t done = 0;

	if (ck->ck_fd < 0) {
		errno = EBADF;
		return 0;
	}
	while (done < n) {
		ssize_t w = pl_any_write(ck->ck_fd, buf + done, n - done);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	return (ssize_t)done;
}

static int pl_ck_seek(void *c, off64_t *pos, int whence)
{
	struct pl_cookie *ck = c;
	off64_t r;

	if (ck->ck_fd < 0) {
		errno = EBADF;
		return -1;
	}
	r = lseek64(ck->ck_fd, *pos, whence);
	if (r < 0)
		return -1;
	*pos = r;
	return 0;
}

static void pl_std_forget(int fd, struct pl_cookie *ck)
{
	pthread_mutex_lock(&pl_std_lock);
	if (pl_std_ck[fd] == ck) {
		pl_std_ours[fd] = NULL;
		pl_std_ck[fd] = NULL;
	}
	if (pl_std_spare_ck[fd] == ck) {
		pl_std_spare[fd] = NULL;
		pl_std_spare_ck[fd] = NULL;
	}
	pthread_mutex_unlock(&pl_std_lock);
}

static int pl_ck_close(void *c)
{
	struct pl_cookie *ck = c;
	int rc = 0;

	if (ck->ck_std >= 0)
		pl_std_forget(ck->ck_std, ck);
	pthread_mutex_lock(&pl_std_lock);
	if (ck->ck_prev)
		ck->ck_prev->ck_next = ck->ck_next;
	else
		pl_streams = ck->ck_next;
	if (ck->ck_next)
		ck->ck_next->ck_prev = ck->ck_prev;
	pthread_mutex_unlock(&pl_std_lock);
	if (ck->ck_fd >= 0)
		rc = pl_fd_close(ck->ck_fd);
	free(ck);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}

static const cookie_io_functions_t pl_ck_funcs = {
    .read = pl_ck_read,
    .write = pl_ck_write,
    .seek = pl_ck_seek,
    .close = pl_ck_close,
};

/*
 * A stream on descriptor \a fd. \a mode: one of r r+ w w+ a a+. \a ckp (may
 * be NULL) gets its cookie. \return NULL with errno on failure.
 */
static FILE *pl_stream_new(int fd, const char *mode, int std, struct pl_cookie **ckp)
{
	struct pl_cookie *ck = malloc(sizeof(*ck));
	FILE *fp;

	if (!ck) {
		errno = ENOMEM;
		return NULL;
	}
	ck->ck_fd = fd;
	ck->ck_std = std;
	fp = fopencookie(ck, mode, pl_ck_funcs);
	if (!fp) {
		free(ck);
		return NULL;
	}
	fp->_fileno = fd; /* fileno(), and so fstat(fileno(fp)), work */
	ck->ck_fp = fp;
	pthread_mutex_lock(&pl_std_lock);
	ck->ck_prev = NULL;
	ck->ck_next = pl_streams;
	if (pl_streams)
		pl_streams->ck_prev = ck;
	pl_streams = ck;
	pthread_mutex_unlock(&pl_std_lock);
	if (ckp)
		*ckp = ck;
	return fp;
}

/* ------------------------------------------------------------ standard streams */

void pl_stdio_before(int fd)
{
	if (fd < 1 || fd > 2)
		return; /* input: nothing to push out */
	FILE *cur = *pl_std_var(fd);
	if (cur)
		fflush(cur);
}

void pl_stdio_after(int fd)
{
	if (fd < 0 || fd > 2)
		return;
	pthread_mutex_lock(&pl_std_lock);
	FILE **var = pl_std_var(fd);
	bool weir = pl_fd_is_weir(fd);
	if (weir && !pl_std_ours[fd]) {
		struct pl_cookie *ck = pl_std_spare_ck[fd];
		FILE *fp = pl_std_spare[fd];
		if (fp) {
			pl_std_spare[fd] = NULL;
			pl_std_spare_ck[fd] = NULL;
			ck->ck_fd = fd;
			ck->ck_std = fd;
			clearerr_unlocked(fp);
		} else {
			fp = pl_stream_new(fd, fd == 0 ? "r" : "w", fd, &ck);
			if (fp && fd == 2)
				setvbuf(fp, NULL, _IONBF, 0);
		}
		if (fp) {
			pl_std_orig[fd] = *var;
			pl_std_ours[fd] = fp;
			pl_std_ck[fd] = ck;
			*var = fp;
		}
	} else if (!weir && pl_std_ours[fd]) {
		FILE *fp = pl_std_ours[fd];
		struct pl_cookie *ck = pl_std_ck[fd];
		pl_std_ours[fd] = NULL;
		pl_std_ck[fd] = NULL;
		if (*var == fp)
			*var = pl_std_orig[fd];
		pl_std_orig[fd] = NULL;
		/* flushed by pl_stdio_before(); drop what is left (unread input) */
		__fpurge(fp);
		ck->ck_fd = -1;
		if (!pl_std_spare[fd]) {
			pl_std_spare[fd] = fp;
			pl_std_spare_ck[fd] = ck;
		}
	}
	pthread_mutex_unlock(&pl_std_lock);
}

void pl_stdio_flush_all(void)
{
	pthread_mutex_lock(&pl_std_lock);
	for (struct pl_cookie *ck = pl_streams; ck; ck = ck->ck_next) {
		/* a stream another thread holds (blocked in a read) is left alone,
		 * as glibc's exit does not wait for stream locks either */
		if (ck->ck_fd >= 0 && ftrylockfile(ck->ck_fp) == 0) {
			fflush_unlocked(ck->ck_fp);
			funlockfile(ck->ck_fp);
		}
	}
	pthread_mutex_unlock(&pl_std_lock);
}

void pl_stdio_boot(void)
{
	for (int fd = 0; fd <= 2; fd++)
		if (pl_fd_is_weir(fd))
			pl_stdio_after(fd);
}

/* ------------------------------------------------------------ fopen family */

/*
 * Parse an fopen mode into open flags and the canonical mode for
 * fopencookie. \return 0 or -EINVAL.
 */
static int pl_mode_parse(const char *mode, int *flags, char canon[3])
{
	int acc, fl = 0;
	bool plus = false;

	if (!mode)
		return -EINVAL;
	switch (mode[0]) {
	case 'r':
		acc = O_RDONLY;
		break;
	case 'w':
		acc = O_WRONLY;
		fl = O_CREAT | O_TRUNC;
		break;
	case 'a':
		acc = O_WRONLY;
		fl = O_CREAT | O_APPEND;
		break;
	default:
		return -EINVAL;
	}
	for (const char *p = mode + 1; *p && *p != ','; p++) {
		if (*p == '+')
			plus = true;
		else if (*p == 'x')
			fl |= O_EXCL;
		else if (*p == 'e')
			fl |= O_CLOEXEC;
	}
	if (plus)
		acc = O_RDWR;
	*flags = acc | fl;
	canon[0] = mode[0];
	canon[1] = plus ? '+' : '\0';
	canon[2] = '\0';
	return 0;
}

static FILE *pl_fopen_weir(const char *wpath, const char *mode)
{
	char canon[3];
	int flags, fd, rc = pl_mode_parse(mode, &flags, canon);

	if (rc) {
		errno = -rc;
		return NULL;
	}
	fd = pl_open_weir(wpath, flags, 0666);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	FILE *fp = pl_stream_new(fd, canon, -1, NULL);
	if (!fp) {
		int e = errno;
		pl_fd_close(fd);
		errno = e;
	}
	return fp;
}

static FILE *pl_fopen_any(const char *path, const char *mode, bool is64)
{
	char wpath[PL_PATH_MAX];
	int saved = errno;
	int w;

	if (!pl_active() || (w = pl_resolve_path(path, wpath)) == PL_LOCAL)
		return is64 ? PL_REAL(fopen64)(path, mode) : PL_REAL(fopen)(path, mode);
	if (w == PL_LOCAL_ABS)
		return is64 ? PL_REAL(fopen64)(wpath, mode) : PL_REAL(fopen)(wpath, mode);
	if (w < 0) {
		errno = -w;
		return NULL;
	}
	FILE *fp = pl_fopen_weir(wpath, mode);
	if (fp)
		errno = saved;
	return fp;
}

PL_EXPORT FILE *fopen(const char *path, const char *mode)
{
	return pl_fopen_any(path, mode, false);
}

PL_EXPORT FILE *fopen64(const char *path, const char *mode)
{
	return pl_fopen_any(path, mode, true);
}

PL_EXPORT FILE *fdopen(int fd, const char *mode)
{
	char canon[3];
	int saved = errno;
	int flags;
	struct pl_file *f;

	if (!pl_fd_is_weir(fd) || !(f = pl_fd_get(fd)))
		return PL_REAL(fdopen)(fd, mode);
	int rc = pl_mode_parse(mode, &flags, canon);
	int have = pl_file_flags(f) & O_ACCMODE;
	int want = flags & O_ACCMODE;
	if (!rc && f->pf_kind == PL_K_PATH)
		rc = -EBADF;
	if (!rc && have != O_RDWR && want != have)
		rc = -EINVAL; /* the descriptor's access does not allow the mode */
	if (!rc && canon[0] == 'a' && !(pl_file_flags(f) & O_APPEND))
		pl_file_setfl(f, pl_file_flags(f) | O_APPEND);
	pl_file_put(f);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	FILE *fp = pl_stream_new(fd, canon, -1, NULL);
	if (fp)
		errno = saved;
	return fp;
}

/* Which standard descriptor \a fp currently is (0..2), or -1. */
static int pl_std_index(FILE *fp)
{
	for (int fd = 0; fd <= 2; fd++)
		if (fp && *pl_std_var(fd) == fp)
			return fd;
	return -1;
}

static bool pl_stream_is_ours(FILE *fp)
{
	/* ours: a cookie stream whose descriptor the shim knows as Weir's */
	return fp && fp->_fileno >= 0 && pl_fd_is_weir(fp->_fileno);
}

static FILE *pl_freopen_any(const char *path, const char *mode, FILE *fp, bool is64)
{
	char wpath[PL_PATH_MAX], canon[3];
	int flags, std, w;

	if (!pl_active())
		return is64 ? PL_REAL(freopen64)(path, mode, fp) : PL_REAL(freopen)(path, mode, fp);
	std = pl_std_index(fp);
	if (!path) {
		/* same file, new mode: only a mode change of our own stream is kept as is */
		if (pl_stream_is_ours(fp) && !pl_mode_parse(mode, &flags, canon))
			return fp;
		return is64 ? PL_REAL(freopen64)(path, mode, fp) : PL_REAL(freopen)(path, mode, fp);
	}
	w = pl_resolve_path(path, wpath);
	if (w < 0) {
		errno = -w;
		return NULL;
	}
	if (w != PL_WEIR && !pl_stream_is_ours(fp))
		return is64 ? PL_REAL(freopen64)(w == PL_LOCAL_ABS ? wpath : path, mode, fp)
			    : PL_REAL(freopen)(w == PL_LOCAL_ABS ? wpath : path, mode, fp);
	if (pl_mode_parse(mode, &flags, canon)) {
		errno = EINVAL;
		return NULL;
	}
	int nfd = w == PL_WEIR ? pl_open_weir(wpath, flags, 0666)
			       : PL_REAL(open)(w == PL_LOCAL_ABS ? wpath : path, flags, 0666);
	if (nfd < 0) {
		if (w != PL_WEIR)
			nfd = -errno;
		errno = -nfd;
		return NULL;
	}
	if (std >= 0) {
		/* a standard stream: the descriptor moves under it, the stream follows */
		fflush(fp);
		int rc = pl_fd_dup(nfd, std, 1, 0);
		pl_fd_close(nfd);
		if (rc < 0) {
			errno = -rc;
			return NULL;
		}
		return *pl_std_var(std);
	}
	/* any other stream: closed, and a new one returned (glibc would reuse the pointer) */
	fclose(fp);
	if (w != PL_WEIR)
		return PL_REAL(fdopen)(nfd, mode);
	FILE *nfp = pl_stream_new(nfd, canon, -1, NULL);
	if (!nfp)
		pl_fd_close(nfd);
	return nfp;
}

PL_EXPORT FILE *freopen(const char *path, const char *mode, FILE *fp)
{
	return pl_freopen_any(path, mode, fp, false);
}

PL_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *fp)
{
	return pl_freopen_any(path, mode, fp, true);
}
