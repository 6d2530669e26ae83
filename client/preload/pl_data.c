/*
 * client/preload/pl_data.c - the rest of the data calls on Weir
 * descriptors: fsync, fdatasync, syncfs, sync_file_range, truncate,
 * ftruncate, fallocate, posix_fallocate, posix_fadvise, and
 * copy_file_range, sendfile and splice between any two descriptors when one
 * of them is Weir's (copied through memory: the kernel cannot do it).
 */
#define _GNU_SOURCE
#include "pl_int.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <unistd.h>

/* The bounce buffer of emulated copies. */
#define PL_COPY_CHUNK (8UL << 20)

static int pl_acc(struct pl_file *f)
{
	return pl_file_flags(f) & O_ACCMODE;
}

/* ------------------------------------------------------------ sync */

/* fsync (\a data false) or fdatasync of a Weir descriptor. */
static int pl_sync_fd(int fd, bool data)
{
	int saved = errno;
	struct pl_file *f = pl_fd_get(fd);
	weir_file_t *fh;
	weir_fs_t *fs;
	int rc;

	if (!f)
		return data ? PL_REAL(fdatasync)(fd) : PL_REAL(fsync)(fd);
	if (f->pf_kind == PL_K_PATH) {
		rc = -EBADF;
	} else if (f->pf_kind == PL_K_DIR) {
		rc = pl_fs_get(&fs);
		if (!rc)
			rc = PL_W(weir_fid_fsync(fs, &f->pf_fid));
	} else {
		rc = pl_file_handle(f, &fh);
		if (!rc) {
			rc = data ? PL_W(weir_fdatasync(fh)) : PL_W(weir_fsync(fh));
			pl_file_unhandle(f);
		}
	}
	pl_file_put(f);
	return pl_ret(rc, saved);
}

PL_EXPORT int fsync(int fd)
{
	return pl_sync_fd(fd, false);
}

PL_EXPORT int fdatasync(int fd)
{
	return pl_sync_fd(fd, true);
}

PL_EXPORT int syncfs(int fd)
{
	int saved = errno;
	weir_fs_t *fs;
	int rc;

	if (!pl_fd_is_weir(fd))
		return PL_REAL(syncfs)(fd);
	rc = pl_fs_get(&fs);
	if (!rc)
		rc = PL_W(weir_fid_fsync(fs, NULL));
	return pl_ret(rc, saved);
}

PL_EXPORT int sync_file_range(int fd, off64_t off, off64_t len, unsigned flags)
{
	if (!pl_fd_is_weir(fd))
		return PL_REAL(sync_file_range)(fd, off, len, flags);
	if (off < 0 || len < 0 ||
	    (flags &
	     ~(SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER))) {
		errno = EINVAL;
		return -1;
	}
	/* Writes are on the OSTs once they return: there is nothing to start. */
	return 0;
}

/* ------------------------------------------------------------ size, space */

static int pl_ftruncate_any(int fd, int64_t len, bool is64)
{
	int saved = errno;
	struct pl_file *f = pl_fd_get(fd);
	weir_file_t *fh;
	int rc;

	if (!f)
		return is64 ? PL_REAL(ftruncate64)(fd, len) : PL_REAL(ftruncate)(fd, (off_t)len);
	if (len < 0 || f->pf_kind != PL_K_FILE || pl_acc(f) == O_RDONLY) {
		rc = f->pf_kind == PL_K_PATH ? -EBADF : -EINVAL;
	} else {
		rc = pl_file_handle(f, &fh);
		if (!rc) {
			rc = PL_W(weir_ftruncate(fh, (uint64_t)len));
			pl_file_unhandle(f);
		}
	}
	pl_file_put(f);
	return pl_ret(rc, saved);
}

PL_EXPORT int ftruncate(int fd, off_t len)
{
	return pl_ftruncate_any(fd, len, false);
}

PL_EXPORT int ftruncate64(int fd, off64_t len)
{
	return pl_ftruncate_any(fd, len, true);
}

static int pl_truncate_any(const char *path, int64_t len, bool is64)
{
	char wpath[PL_PATH_MAX];
	int saved = errno;
	weir_fs_t *fs;
	int w, rc;

	if (!pl_active() || (w = pl_resolve_path(path, wpath)) == PL_LOCAL)
		return is64 ? PL_REAL(truncate64)(path, len) : PL_REAL(truncate)(path, (off_t)len);
	if (w == PL_LOCAL_ABS)
		return is64 ? PL_REAL(truncate64)(wpath, len)
			    : PL_REAL(truncate)(wpath, (off_t)len);
	if (w < 0)
		return pl_ret(w, saved);
	if (len < 0)
		return pl_ret(-EINVAL, saved);
	rc = pl_fs_get(&fs);
	if (!rc)
		rc = PL_W(weir_truncate(fs, wpath, (uint64_t)len));
	return pl_ret(rc, saved);
}

PL_EXPORT int truncate(const char *path, off_t len)
{
	return pl_truncate_any(path, len, false);
}

PL_EXPORT int truncate64(const char *path, off64_t len)
{
	return pl_truncate_any(path, len, true);
}

/* fallocate on a Weir pl_file. \return 0 or -errno. */
static int pl_fallocate_weir(struct pl_file *f, int mode, int64_t off, int64_t len)
{
	weir_file_t *fh;
	int rc;

	if (off < 0 || len <= 0)
		return -EINVAL;
	if (f->pf_kind == PL_K_PATH || pl_acc(f) == O_RDONLY)
		return -EBADF;
	if (f->pf_kind == PL_K_DIR)
		return -EISDIR;
	rc = pl_file_handle(f, &fh);
	if (rc)
		return rc;
	rc = PL_W(weir_fallocate(fh, mode, (uint64_t)off, (uint64_t)len));
	pl_file_unhandle(f);
	if (rc == -EOPNOTSUPP)
		PL_LOG_ONCE("fallocate mode=%#x: EOPNOTSUPP (Weir allocates, and punches holes "
			    "with KEEP_SIZE, only)",
			    mode);
	return rc;
}

static int pl_fallocate_any(int fd, int mode, int64_t off, int64_t len, bool is64)
{
	int saved = errno;
	struct pl_file *f = pl_fd_get(fd);

	if (!f)
		return is64 ? PL_REAL(fallocate64)(fd, mode, off, len)
			    : PL_REAL(fallocate)(fd, mode, (off_t)off, (off_t)len);
	int rc = pl_fallocate_weir(f, mode, off, len);
	pl_file_put(f);
	return pl_ret(rc, saved);
}

PL_EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
	return pl_fallocate_any(fd, mode, off, len, false);
}

PL_EXPORT int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
	return pl_fallocate_any(fd, mode, off, len, true);
}

/* posix_fallocate returns the error number (errno untouched). */
static int pl_posix_fallocate_any(int fd, int64_t off, int64_t len, bool is64)
{
	struct pl_file *f = pl_fd_get(fd);

	if (!f)
		return is64 ? PL_REAL(posix_fallocate64)(fd, off, len)
			    : PL_REAL(posix_fallocate)(fd, (off_t)off, (off_t)len);
	int rc = pl_fallocate_weir(f, 0, off, len);
	pl_file_put(f);
	return -rc;
}

PL_EXPORT int posix_fallocate(int fd, off_t off, off_t len)
{
	return pl_posix_fallocate_any(fd, off, len, false);
}

PL_EXPORT int posix_fallocate64(int fd, off64_t off, off64_t len)
{
	return pl_posix_fallocate_any(fd, off, len, true);
}

/* Advice only: checked and accepted (libweir has no cache to steer). */
static int pl_fadvise_any(int fd, int64_t off, int64_t len, int advice, bool is64)
{
	if (!pl_fd_is_weir(fd))
		return is64 ? PL_REAL(posix_fadvise64)(fd, off, len, advice)
			    : PL_REAL(posix_fadvise)(fd, (off_t)off, (off_t)len, advice);
	if (len < 0 || advice < POSIX_FADV_NORMAL || advice > POSIX_FADV_NOREUSE)
		return EINVAL;
	return 0;
}

PL_EXPORT int posix_fadvise(int fd, off_t off, off_t len, int advice)
{
	return pl_fadvise_any(fd, off, len, advice, false);
}

PL_EXPORT int posix_fadvise64(int fd, off64_t off, off64_t len, int advice)
{
	return pl_fadvise_any(fd, off, len, advice, true);
}

/* ------------------------------------------------------------ copies between descriptors */

/* One side of a copy: at *off (advanced) when \a off is set, else at the offset. */
static ssize_t pl_copy_read(int fd, void *buf, size_t len, int64_t *off)
{
	struct pl_file *f = pl_fd_get(fd);
	ssize_t n;

	if (!f) {
		n = off ? PL_REAL(pread64)(fd, buf, len, *off) : PL_REAL(read)(fd, buf, len);
		n = n < 0 ? -errno : n;
	} else {
		n = off ? pl_io_pread(f, buf, len, (uint64_t)*off) : pl_io_read(f, buf, len);
		pl_file_put(f);
	}
	if (n > 0 && off)
		*off += n;
	return n;
}

static ssize_t pl_copy_write(int fd, const void *buf, size_t len, int64_t *off)
{
	struct pl_file *f = pl_fd_get(fd);
	size_t done = 0;

	while (done < len) {
		ssize_t n;
		if (!f) {
			n = off ? PL_REAL(pwrite64)(fd, (const char *)buf + done, len - done, *off)
				: PL_REAL(write)(fd, (const char *)buf + done, len - done);
			n = n < 0 ? -errno : n;
		} else {
			n = off ? pl_io_pwrite(f, (const char *)buf + done, len - done,
					       (uint64_t)*off)
				: pl_io_write(f, (const char *)buf + done, len - done);
		}
		if (n <= 0) {
			pl_file_put(f);
			return done ? (ssize_t)done : (n ? n : -EIO);
		}
		done += (size_t)n;
		if (off)
			*off += n;
	}
	pl_file_put(f);
	return (ssize_t)done;
}

/* Copy up to \a len bytes with a bounce buffer: read once, write it all. */
static ssize_t pl_copy(int in, int64_t *off_in, int out, int64_t *off_out, size_t len)
{
	size_t n = len > PL_COPY_CHUNK ? PL_COPY_CHUNK : len;
	char *buf;
	ssize_t r;

	if (!n)
		return 0;
	buf = malloc(n);
	if (!buf)
		return -ENOMEM;
	r = pl_copy_read(in, buf, n, off_in);
	if (r > 0) {
		ssize_t w = pl_copy_write(out, buf, (size_t)r, off_out);
		if (w < r)
			r = w; /* an error, or a short write (the rest was read but not written) */
	}
	free(buf);
	return r;
}

PL_EXPORT ssize_t copy_file_range(int in, off64_t *off_in, int out, off64_t *off_out, size_t len,
				  unsigned flags)
{
	int saved = errno;

	if (!pl_fd_is_weir(in) && !pl_fd_is_weir(out))
		return PL_REAL(copy_file_range)(in, off_in, out, off_out, len, flags);
	if (flags)
		return pl_ret_ssize(-EINVAL, saved);
	if ((off_in && *off_in < 0) || (off_out && *off_out < 0))
		return pl_ret_ssize(-EINVAL, saved);
	return pl_ret_ssize(pl_copy(in, off_in, out, off_out, len), saved);
}

static ssize_t pl_sendfile_any(int out, int in, int64_t *off, size_t count, bool is64)
{
	int saved = errno;

	if (!pl_fd_is_weir(in) && !pl_fd_is_weir(out)) {
		if (is64)
			return PL_REAL(sendfile64)(out, in, off, count);
		return PL_REAL(sendfile)(out, in, (off_t *)off, count);
	}
	if (off && *off < 0)
		return pl_ret_ssize(-EINVAL, saved);
	return pl_ret_ssize(pl_copy(in, off, out, NULL, count), saved);
}

PL_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
	return pl_sendfile_any(out, in, (int64_t *)off, count, false);
}

PL_EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t count)
{
	return pl_sendfile_any(out, in, off, count, true);
}

PL_EXPORT ssize_t splice(int in, off64_t *off_in, int out, off64_t *off_out, size_t len,
			 unsigned flags)
{
	int saved = errno;

	if (!pl_fd_is_weir(in) && !pl_fd_is_weir(out))
		return PL_REAL(splice)(in, off_in, out, off_out, len, flags);
	/* the kernel needs a pipe on one side; copying through memory is equivalent */
	return pl_ret_ssize(pl_copy(in, off_in, out, off_out, len), saved);
}
