/*
 * client/preload/pl_dir.c - directory streams: opendir, fdopendir, readdir
 * (and 64, _r), closedir, rewinddir, telldir, seekdir, dirfd, getdents64,
 * scandir (and 64, at).
 *
 * A Weir DIR* is a struct pl_dir of our own (recognised by its first eight
 * bytes, which no glibc DIR can hold: there they are a descriptor number and
 * a lock word). The listing's position belongs to the descriptor's pl_file,
 * as the kernel keeps it in the open file description, so readdir and
 * getdents64 on one descriptor share it; positions are libweir's stable
 * cookies (weir_telldir), so telldir/seekdir work and survive fork (the
 * child re-opens the listing and seeks to the cookie).
 */
#define _GNU_SOURCE
#include "pl_int.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PL_DIR_MAGIC 0x5745495244495230ULL /* no fd + lock word reads like this */

struct pl_dir {
	uint64_t pd_magic;	 /* PL_DIR_MAGIC */
	int pd_fd;		 /* the Weir descriptor (dirfd()) */
	pthread_mutex_t pd_lock; /* pd_ent */
	struct dirent64 pd_ent;	 /* what readdir() last returned */
};

_Static_assert(sizeof(struct dirent) == sizeof(struct dirent64), "x86_64: dirent64 is dirent");

/* The kernel's getdents64 record. */
struct pl_linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static struct pl_dir *pl_dir_of(DIR *d)
{
	struct pl_dir *pd = (struct pl_dir *)d;

	if (!d || pd->pd_magic != PL_DIR_MAGIC)
		return NULL;
	return pd;
}

/* ------------------------------------------------------------ the stream of a pl_file */

int pl_dir_seek(struct pl_file *f, uint64_t cookie)
{
	pthread_rwlock_wrlock(&f->pf_lock);
	free(f->pf_dpend);
	f->pf_dpend = NULL;
	if (f->pf_dh)
		PL_WV(weir_seekdir(f->pf_dh, (int64_t)cookie));
	f->pf_dir_cookie = cookie;
	pthread_rwlock_unlock(&f->pf_lock);
	return 0;
}

/*
 * Next entry of \a f's listing into \a ent (a pending one first).
 * \return 1, 0 at the end, or -errno.
 */
static int pl_dir_next(struct pl_file *f, struct weir_dirent *ent)
{
	weir_fs_t *fs;
	int rc;

	if (f->pf_kind == PL_K_PATH)
		return -EBADF;
	pthread_rwlock_wrlock(&f->pf_lock);
	if (f->pf_dpend) {
		*ent = *f->pf_dpend;
		free(f->pf_dpend);
		f->pf_dpend = NULL;
		f->pf_dir_cookie = ent->d_off;
		pthread_rwlock_unlock(&f->pf_lock);
		return 1;
	}
	if (!f->pf_dh) {
		rc = pl_fs_get(&fs);
		if (!rc)
			rc = PL_W(weir_fid_opendir(fs, &f->pf_fid, &f->pf_dh));
		if (rc) {
			f->pf_dh = NULL;
			pthread_rwlock_unlock(&f->pf_lock);
			return rc == -ENOENT ? -ESTALE : rc;
		}
		if (f->pf_dir_cookie)
			PL_WV(weir_seekdir(f->pf_dh, (int64_t)f->pf_dir_cookie));
	}
	rc = PL_W(weir_readdir(f->pf_dh, ent));
	if (rc == 1)
		f->pf_dir_cookie = ent->d_off;
	pthread_rwlock_unlock(&f->pf_lock);
	return rc;
}

/* Give back an entry pl_dir_next() returned (it becomes the next one again). */
static void pl_dir_unget(struct pl_file *f, const struct weir_dirent *ent, uint64_t before)
{
	pthread_rwlock_wrlock(&f->pf_lock);
	free(f->pf_dpend);
	f->pf_dpend = malloc(sizeof(*ent));
	if (f->pf_dpend)
		*f->pf_dpend = *ent;
	f->pf_dir_cookie = before;
	pthread_rwlock_unlock(&f->pf_lock);
}

/* ------------------------------------------------------------ DIR* */

/* A stream on Weir descriptor \a fd (which it then owns). \return NULL with errno. */
static DIR *pl_fdopendir_weir(int fd)
{
	struct pl_file *f = pl_fd_get(fd);
	struct pl_dir *pd;
	int rc = 0;

	if (!f) {
		errno = EBADF;
		return NULL;
	}
	if (f->pf_kind == PL_K_PATH) {
		rc = -EBADF;
	} else if (f->pf_kind == PL_K_FILE) {
		struct stat st;
		rc = pl_file_stat(f, &st);
		if (!rc && !S_ISDIR(st.st_mode))
			rc = -ENOTDIR;
	}
	pl_file_put(f);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->pd_magic = PL_DIR_MAGIC;
	pd->pd_fd = fd;
	pthread_mutex_init(&pd->pd_lock, NULL);
	return (DIR *)pd;
}

PL_EXPORT DIR *opendir(const char *path)
{
	char wpath[PL_PATH_MAX];
	int saved = errno;
	int w, fd;

	if (!pl_active())
		return PL_REAL(opendir)(path);
	w = pl_resolve_path(path, wpath);
	if (w == PL_LOCAL)
		return PL_REAL(opendir)(path);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(opendir)(wpath);
	if (w < 0) {
		errno = -w;
		return NULL;
	}
	fd = pl_open_weir(wpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	DIR *d = pl_fdopendir_weir(fd);
	if (!d) {
		int e = errno;
		pl_fd_close(fd);
		errno = e;
		return NULL;
	}
	errno = saved;
	return d;
}

PL_EXPORT DIR *fdopendir(int fd)
{
	int saved = errno;

	if (!pl_fd_is_weir(fd))
		return PL_REAL(fdopendir)(fd);
	DIR *d = pl_fdopendir_weir(fd);
	if (d)
		errno = saved;
	return d;
}

/* readdir of a Weir stream into pd_ent. \return the entry, or NULL (errno set on errors). */
static struct dirent64 *pl_readdir_weir(struct pl_dir *pd)
{
	struct weir_dirent ent;
	int saved = errno;
	struct pl_file *f = pl_fd_get(pd->pd_fd);
	int rc;

	if (!f) {
		errno = EBADF;
		return NULL;
	}
	rc = pl_dir_next(f, &ent);
	pl_file_put(f);
	if (rc <= 0) {
		errno = rc < 0 ? -rc : saved; /* end: errno untouched */
		return NULL;
	}
	struct dirent64 *de = &pd->pd_ent;
	de->d_ino = ent.d_ino;
	de->d_off = (int64_t)ent.d_off;
	de->d_reclen = sizeof(*de);
	de->d_type = ent.d_type;
	snprintf(de->d_name, sizeof(de->d_name), "%s", ent.d_name);
	errno = saved;
	return de;
}

PL_EXPORT struct dirent *readdir(DIR *d)
{
	struct pl_dir *pd = pl_dir_of(d);

	if (!pd)
		return PL_REAL(readdir)(d);
	return (struct dirent *)pl_readdir_weir(pd);
}

PL_EXPORT struct dirent64 *readdir64(DIR *d)
{
	struct pl_dir *pd = pl_dir_of(d);

	if (!pd)
		return PL_REAL(readdir64)(d);
	return pl_readdir_weir(pd);
}

static int pl_readdir_r_weir(struct pl_dir *pd, struct dirent64 *entry, struct dirent64 **result)
{
	int saved = errno;

	pthread_mutex_lock(&pd->pd_lock);
	errno = 0;
	struct dirent64 *de = pl_readdir_weir(pd);
	int err = de ? 0 : errno;
	if (de)
		memcpy(entry, de, sizeof(*entry));
	pthread_mutex_unlock(&pd->pd_lock);
	*result = de ? entry : NULL;
	errno = saved;
	return err;
}

/* readdir_r is deprecated; programs still call it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
PL_EXPORT int readdir_r(DIR *d, struct dirent *entry, struct dirent **result)
{
	struct pl_dir *pd = pl_dir_of(d);

	if (!pd)
		return PL_REAL(readdir_r)(d, entry, result);
	return pl_readdir_r_weir(pd, (struct dirent64 *)entry, (struct dirent64 **)result);
}

PL_EXPORT int readdir64_r(DIR *d, struct dirent64 *entry, struct dirent64 **result)
{
	struct pl_dir *pd = pl_dir_of(d);

	if (!pd)
		return PL_REAL(readdir64_r)(d, entry, result);
	return pl_readdir_r_weir(pd, entry, result);
}
#pragma GCC diagnostic pop

PL_EXPORT int closedir(DIR *d)
{
	struct pl_dir *pd = pl_dir_of(d);
	int saved = errno;

	if (!pd)
		return PL_REAL(closedir)(d);
	int rc = pl_fd_close(pd->pd_fd);
	pd->pd_magic = 0;
	pthread_mutex_destroy(&pd->pd_lock);
	free(pd);
	return pl_ret(rc, saved);
}

/* Seek a Weir stream; \a pos 0 rewinds. */
static void pl_dir_seek_fd(int fd, long pos)
{
	struct pl_file *f = pl_fd_get(fd);

	if (f) {
		pl_dir_seek(f, pos > 0 ? (uint64_t)pos : 0);
		pl_file_put(f);
	}
}

PL_EXPORT void rewinddir(DIR *d)
{
	struct pl_dir *pd = pl_dir_of(d);

	if (!pd) {
		PL_REAL(rewinddir)(d);
		return;
	}
	pl_dir_seek_fd(pd->pd_fd, 0);
}

PL_EXPORT long telldir(DIR *d)
{
	struct pl_dir *pd = pl_dir_of(d);

	if (!pd)
		return PL_REAL(telldir)(d);
	struct pl_file *f = pl_fd_get(pd->pd_fd);
	long pos = -1;
	if (f) {
		pthread_rwlock_rdlock(&f->pf_lock);
		pos = (long)f->pf_dir_cookie;
		pthread_rwlock_unlock(&f->pf_lock);
		pl_file_put(f);
	} else {
		errno = EBADF;
	}
	return pos;
}

PL_EXPORT void seekdir(DIR *d, long pos)
{
	struct pl_dir *pd = pl_dir_of(d);

	if (!pd) {
		PL_REAL(seekdir)(d, pos);
		return;
	}
	pl_dir_seek_fd(pd->pd_fd, pos);
}

PL_EXPORT int dirfd(DIR *d)
{
	struct pl_dir *pd = pl_dir_of(d);

	if (!pd)
		return PL_REAL(dirfd)(d);
	return pd->pd_fd;
}

/* ------------------------------------------------------------ getdents64 */

static ssize_t pl_getdents_weir(struct pl_file *f, char *buf, size_t len)
{
	struct weir_dirent ent;
	size_t at = 0;

	for (;;) {
		uint64_t before = f->pf_dir_cookie;
		int rc = pl_dir_next(f, &ent);
		if (rc < 0)
			return at ? (ssize_t)at : rc;
		if (rc == 0)
			break;
		size_t nl = strlen(ent.d_name);
		size_t reclen =
		    (offsetof(struct pl_linux_dirent64, d_name) + nl + 1 + 7) & ~(size_t)7;
		if (at + reclen > len) {
			pl_dir_unget(f, &ent, before);
			if (!at)
				return -EINVAL; /* the buffer cannot hold one entry */
			break;
		}
		struct pl_linux_dirent64 *d = (struct pl_linux_dirent64 *)(buf + at);
		d->d_ino = ent.d_ino;
		d->d_off = (int64_t)ent.d_off;
		d->d_reclen = (unsigned short)reclen;
		d->d_type = ent.d_type;
		memcpy(d->d_name, ent.d_name, nl + 1);
		memset(d->d_name + nl + 1, 0,
		       reclen - offsetof(struct pl_linux_dirent64, d_name) - nl - 1);
		at += reclen;
	}
	return (ssize_t)at;
}

PL_EXPORT ssize_t getdents64(int fd, void *buf, size_t len)
{
	int saved = errno;
	struct pl_file *f = pl_fd_get(fd);

	if (!f)
		return PL_REAL(getdents64)(fd, buf, len);
	ssize_t n = pl_getdents_weir(f, buf, len);
	pl_file_put(f);
	return pl_ret_ssize(n, saved);
}

/* ------------------------------------------------------------ scandir */

typedef int (*pl_filter_fn)(const struct dirent *);
typedef int (*pl_compar_fn)(const struct dirent **, const struct dirent **);

/* scandir over our own opendir/readdir (glibc's calls its internal opendir). */
static int pl_scandir_weir(DIR *d, struct dirent ***out, pl_filter_fn filter, pl_compar_fn cmp)
{
	struct dirent **list = NULL, *de;
	size_t n = 0, cap = 0;
	int saved = errno;

	errno = 0;
	while ((de = readdir(d))) {
		if (filter && !filter(de))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 32;
			struct dirent **nl = realloc(list, cap * sizeof(*nl));
			if (!nl)
				goto out_nomem;
			list = nl;
		}
		list[n] = malloc(sizeof(*de));
		if (!list[n])
			goto out_nomem;
		memcpy(list[n++], de, sizeof(*de));
	}
	if (errno) {
		int e = errno;
		while (n)
			free(list[--n]);
		free(list);
		closedir(d);
		errno = e;
		return -1;
	}
	closedir(d);
	if (cmp && n > 1)
		qsort(list, n, sizeof(*list), (int (*)(const void *, const void *))cmp);
	*out = list;
	errno = saved;
	return (int)n;

out_nomem:
	while (n)
		free(list[--n]);
	free(list);
	closedir(d);
	errno = ENOMEM;
	return -1;
}

PL_EXPORT int scandirat(int dirfd, const char *path, struct dirent ***out, pl_filter_fn filter,
			pl_compar_fn cmp)
{
	char wpath[PL_PATH_MAX];
	int w;

	if (!pl_active())
		return PL_REAL(scandirat)(dirfd, path, out, filter, cmp);
	w = pl_resolve(dirfd, path, false, wpath);
	if (w == PL_LOCAL)
		return PL_REAL(scandirat)(dirfd, path, out, filter, cmp);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(scandir)(wpath, out, filter, cmp);
	if (w < 0) {
		errno = -w;
		return -1;
	}
	int fd = pl_open_weir(wpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	DIR *d = pl_fdopendir_weir(fd);
	if (!d) {
		int e = errno;
		pl_fd_close(fd);
		errno = e;
		return -1;
	}
	return pl_scandir_weir(d, out, filter, cmp);
}

PL_EXPORT int scandir(const char *path, struct dirent ***out, pl_filter_fn filter, pl_compar_fn cmp)
{
	return scandirat(AT_FDCWD, path, out, filter, cmp);
}

PL_EXPORT int scandir64(const char *path, struct dirent64 ***out,
			int (*filter)(const struct dirent64 *),
			int (*cmp)(const struct dirent64 **, const struct dirent64 **))
{
	return scandirat(AT_FDCWD, path, (struct dirent ***)out, (pl_filter_fn)filter,
			 (pl_compar_fn)cmp);
}

PL_EXPORT int scandirat64(int dirfd, const char *path, struct dirent64 ***out,
			  int (*filter)(const struct dirent64 *),
			  int (*cmp)(const struct dirent64 **, const struct dirent64 **))
{
	return scandirat(dirfd, path, (struct dirent ***)out, (pl_filter_fn)filter,
			 (pl_compar_fn)cmp);
}
