/*
 * client/preload/pl_io.c - data calls on Weir descriptors: read, write and
 * their p/v/64/2/_chk variants, and lseek. (Syncs, sizes, space and copies
 * between descriptors are in pl_data.c.)
 *
 * The offset is the shared description's (pl_sdesc): read and write hold
 * its lock across the libweir call, so a read or write at the offset is
 * atomic with respect to the others on the same description, in this and
 * every process that shares it (fork, exec).
 */
#define _GNU_SOURCE
#include "pl_int.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* The fortified entry points (glibc's <bits/unistd.h> declares them only with _FORTIFY_SOURCE). */
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t len, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t len, off64_t off, size_t buflen);

/* Linux's limit on one read or write. */
#define PL_RW_MAX 0x7ffff000UL
/* Largest piece handed to libweir at once. */
#define PL_CHUNK (64UL << 20)

static int pl_acc(struct pl_file *f)
{
	return pl_file_flags(f) & O_ACCMODE;
}

/* After a write on an O_SYNC / O_DSYNC description. */
static int pl_io_sync_after(struct pl_file *f, weir_file_t *fh)
{
	int fl = pl_file_flags(f);

	if ((fl & O_SYNC) == O_SYNC)
		return PL_W(weir_fsync(fh));
	if (fl & O_DSYNC)
		return PL_W(weir_fdatasync(fh));
	return 0;
}

ssize_t pl_io_pread(struct pl_file *f, void *buf, size_t len, uint64_t off)
{
	weir_file_t *fh;
	size_t done = 0;
	int rc;

	if (f->pf_kind == PL_K_PATH || pl_acc(f) == O_WRONLY)
		return -EBADF;
	if (f->pf_kind == PL_K_DIR)
		return -EISDIR;
	if (len > PL_RW_MAX)
		len = PL_RW_MAX;
	rc = pl_file_handle(f, &fh);
	if (rc)
		return rc;
	while (done < len) {
		size_t n = len - done > PL_CHUNK ? PL_CHUNK : len - done;
		ssize_t r = PL_W(weir_pread(fh, (char *)buf + done, n, off + done));
		if (r < 0) {
			if (!done)
				done = (size_t)r;
			break;
		}
		done += (size_t)r;
		if ((size_t)r < n)
			break;
	}
	pl_file_unhandle(f);
	return (ssize_t)done;
}

/* Append \a len bytes atomically (libweir's O_APPEND write); \a end gets the new end. */
static ssize_t pl_io_append(struct pl_file *f, weir_file_t *fh, const void *buf, size_t len,
			    uint64_t *end)
{
	ssize_t n = PL_W(weir_write(fh, buf, len));

	if (n >= 0) {
		int64_t pos = PL_W(weir_lseek(fh, 0, SEEK_CUR));
		if (pos >= 0)
			*end = (uint64_t)pos;
		int rc = pl_io_sync_after(f, fh);
		if (rc)
			return rc;
	}
	return n;
}

/* pwrite; \a append: an O_APPEND description appends whatever \a off says (Linux's pwrite). */
static ssize_t pl_io_pwrite_any(struct pl_file *f, const void *buf, size_t len, uint64_t off,
				bool append)
{
	weir_file_t *fh;
	size_t done = 0;
	int rc;

	if (f->pf_kind == PL_K_PATH || pl_acc(f) == O_RDONLY)
		return -EBADF;
	if (f->pf_kind == PL_K_DIR)
		return -EISDIR;
	if (len > PL_RW_MAX)
		len = PL_RW_MAX;
	rc = pl_file_handle(f, &fh);
	if (rc)
		return rc;
	if (append && (pl_file_flags(f) & O_APPEND)) {
		/* Linux: pwrite on an O_APPEND descriptor appends, whatever the offset */
		uint64_t end;
		ssize_t n = len ? pl_io_append(f, fh, buf, len, &end) : 0;
		pl_file_unhandle(f);
		return n;
	}
	while (done < len) {
		size_t n = len - done > PL_CHUNK ? PL_CHUNK : len - done;
		ssize_t w = PL_W(weir_pwrite(fh, (const char *)buf + done, n, off + done));
		if (w < 0) {
			if (!done)
				done = (size_t)w;
			break;
		}
		done += (size_t)w;
	}
	if ((ssize_t)done > 0) {
		rc = pl_io_sync_after(f, fh);
		if (rc)
			done = (size_t)rc;
	}
	pl_file_unhandle(f);
	return (ssize_t)done;
}

ssize_t pl_io_pwrite(struct pl_file *f, const void *buf, size_t len, uint64_t off)
{
	return pl_io_pwrite_any(f, buf, len, off, true);
}

ssize_t pl_io_pwrite_at(struct pl_file *f, const void *buf, size_t len, uint64_t off)
{
	return pl_io_pwrite_any(f, buf, len, off, false);
}

ssize_t pl_io_read(struct pl_file *f, void *buf, size_t len)
{
	struct pl_sdesc *sd = f->pf_sd;
	ssize_t n;

	pl_sd_lock(sd);
	n = pl_io_pread(f, buf, len, sd->sd_pos);
	if (n > 0)
		sd->sd_pos += (uint64_t)n;
	pl_sd_unlock(sd);
	return n;
}

ssize_t pl_io_write(struct pl_file *f, const void *buf, size_t len)
{
	struct pl_sdesc *sd = f->pf_sd;
	weir_file_t *fh;
	ssize_t n;

	pl_sd_lock(sd);
	if (len && f->pf_kind == PL_K_FILE && pl_acc(f) != O_RDONLY &&
	    (pl_file_flags(f) & O_APPEND)) {
		n = pl_file_handle(f, &fh);
		if (!n) {
			if (len > PL_RW_MAX)
				len = PL_RW_MAX;
			n = pl_io_append(f, fh, buf, len, &sd->sd_pos);
			pl_file_unhandle(f);
		}
	} else {
		n = pl_io_pwrite(f, buf, len, sd->sd_pos);
		if (n > 0)
			sd->sd_pos += (uint64_t)n;
	}
	pl_sd_unlock(sd);
	return n;
}

int64_t pl_io_lseek(struct pl_file *f, int64_t off, int whence)
{
	struct pl_sdesc *sd = f->pf_sd;
	int64_t pos = -EINVAL;

	if (f->pf_kind == PL_K_PATH)
		return -EBADF;
	if (f->pf_kind == PL_K_DIR || (f->pf_kind == PL_K_FILE && (f->pf_dh || f->pf_dir_cookie))) {
		/* directories: positions are readdir cookies (telldir/seekdir) */
		if (whence == SEEK_SET && off >= 0) {
			int rc = pl_dir_seek(f, (uint64_t)off);
			return rc ? rc : off;
		}
		if (whence == SEEK_CUR && off == 0)
			return (int64_t)f->pf_dir_cookie;
		return -EINVAL;
	}
	pl_sd_lock(sd);
	switch (whence) {
	case SEEK_SET:
		pos = off;
		break;
	case SEEK_CUR:
		pos = (int64_t)sd->sd_pos + off;
		break;
	case SEEK_END: {
		struct stat st;
		int rc = pl_file_stat(f, &st);
		pos = rc ? rc : (int64_t)st.st_size + off;
		if (rc)
			goto out;
		break;
	}
	case SEEK_DATA:
	case SEEK_HOLE: {
		weir_file_t *fh;
		int rc = pl_file_handle(f, &fh);
		if (rc) {
			pos = rc;
			goto out;
		}
		pos = PL_W(weir_lseek(fh, off, whence));
		pl_file_unhandle(f);
		if (pos < 0)
			goto out;
		break;
	}
	default:
		goto out;
	}
	if (pos < 0) {
		pos = -EINVAL;
		goto out;
	}
	sd->sd_pos = (uint64_t)pos;
out:
	pl_sd_unlock(sd);
	return pos;
}

ssize_t pl_any_read(int fd, void *buf, size_t len)
{
	struct pl_file *f = pl_fd_get(fd);
	int saved = errno;

	if (!f)
		return PL_REAL(read)(fd, buf, len);
	ssize_t n = pl_io_read(f, buf, len);
	pl_file_put(f);
	return pl_ret_ssize(n, saved);
}

ssize_t pl_any_write(int fd, const void *buf, size_t len)
{
	struct pl_file *f = pl_fd_get(fd);
	int saved = errno;

	if (!f)
		return PL_REAL(write)(fd, buf, len);
	ssize_t n = pl_io_write(f, buf, len);
	pl_file_put(f);
	return pl_ret_ssize(n, saved);
}

/* ------------------------------------------------------------ read, write */

PL_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	if (!pl_fd_is_weir(fd))
		return PL_REAL(read)(fd, buf, len);
	return pl_any_read(fd, buf, len);
}

PL_EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return read(fd, buf, len);
}

PL_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	if (!pl_fd_is_weir(fd)) {
		/* libweir never writes to the application's stdin/stdout/stderr */
		if (pl_depth > 0 && fd >= 0 && fd <= 2)
			return (ssize_t)len;
		return PL_REAL(write)(fd, buf, len);
	}
	return pl_any_write(fd, buf, len);
}

static ssize_t pl_pread_any(int fd, void *buf, size_t len, int64_t off, bool is64)
{
	int saved = errno;
	struct pl_file *f = pl_fd_get(fd);

	if (!f)
		return is64 ? PL_REAL(pread64)(fd, buf, len, off)
			    : PL_REAL(pread)(fd, buf, len, (off_t)off);
	ssize_t n = off < 0 ? -EINVAL : pl_io_pread(f, buf, len, (uint64_t)off);
	pl_file_put(f);
	return pl_ret_ssize(n, saved);
}

static ssize_t pl_pwrite_any(int fd, const void *buf, size_t len, int64_t off, bool is64)
{
	int saved = errno;
	struct pl_file *f = pl_fd_get(fd);

	if (!f)
		return is64 ? PL_REAL(pwrite64)(fd, buf, len, off)
			    : PL_REAL(pwrite)(fd, buf, len, (off_t)off);
	ssize_t n = off < 0 ? -EINVAL : pl_io_pwrite(f, buf, len, (uint64_t)off);
	pl_file_put(f);
	return pl_ret_ssize(n, saved);
}

PL_EXPORT ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	return pl_pread_any(fd, buf, len, off, false);
}

PL_EXPORT ssize_t pread64(int fd, void *buf, size_t len, off64_t off)
{
	return pl_pread_any(fd, buf, len, off, true);
}

PL_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t len, off_t off, size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return pl_pread_any(fd, buf, len, off, false);
}

PL_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t len, off64_t off, size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return pl_pread_any(fd, buf, len, off, true);
}

PL_EXPORT ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return pl_pwrite_any(fd, buf, len, off, false);
}

PL_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off)
{
	return pl_pwrite_any(fd, buf, len, off, true);
}

/* ------------------------------------------------------------ vectors */

static ssize_t pl_iov_total(const struct iovec *iov, int cnt)
{
	size_t t = 0;

	if (cnt < 0 || cnt > IOV_MAX)
		return -EINVAL;
	for (int i = 0; i < cnt; i++) {
		if (iov[i].iov_len > SSIZE_MAX - t)
			return -EINVAL;
		t += iov[i].iov_len;
	}
	return (ssize_t)t;
}

/* Read into \a iov at \a off (\a off < 0: at the offset, advancing it). */
static ssize_t pl_readv_weir(struct pl_file *f, const struct iovec *iov, int cnt, int64_t off)
{
	struct pl_sdesc *sd = f->pf_sd;
	ssize_t total = pl_iov_total(iov, cnt), done = 0;

	if (total < 0)
		return total;
	if (off < 0)
		pl_sd_lock(sd);
	uint64_t pos = off < 0 ? sd->sd_pos : (uint64_t)off;
	for (int i = 0; i < cnt; i++) {
		if (!iov[i].iov_len)
			continue;
		ssize_t n = pl_io_pread(f, iov[i].iov_base, iov[i].iov_len, pos + (uint64_t)done);
		if (n < 0) {
			if (!done)
				done = n;
			break;
		}
		done += n;
		if ((size_t)n < iov[i].iov_len)
			break;
	}
	if (off < 0) {
		if (done > 0)
			sd->sd_pos += (uint64_t)done;
		pl_sd_unlock(sd);
	}
	return done;
}

/* Write \a iov, gathered into one buffer (so an O_APPEND write stays whole). */
static ssize_t pl_writev_weir(struct pl_file *f, const struct iovec *iov, int cnt, int64_t off)
{
	ssize_t total = pl_iov_total(iov, cnt);
	char *buf;
	size_t at = 0;

	if (total <= 0)
		return total;
	if ((size_t)total > PL_CHUNK)
		total = (ssize_t)PL_CHUNK; /* a short write, as the kernel may do */
	buf = malloc((size_t)total);
	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < cnt && at < (size_t)total; i++) {
		size_t n = iov[i].iov_len;
		if (n > (size_t)total - at)
			n = (size_t)total - at;
		memcpy(buf + at, iov[i].iov_base, n);
		at += n;
	}
	ssize_t w = off < 0 ? pl_io_write(f, buf, (size_t)total)
			    : pl_io_pwrite(f, buf, (size_t)total, (uint64_t)off);
	free(buf);
	return w;
}

static ssize_t pl_vec(int fd, const struct iovec *iov, int cnt, int64_t off, bool wr, int which)
{
	int saved = errno;
	struct pl_file *f = pl_fd_get(fd);

	if (!f) {
		switch (which) {
		case 0:
			return wr ? PL_REAL(writev)(fd, iov, cnt) : PL_REAL(readv)(fd, iov, cnt);
		case 1:
			return wr ? PL_REAL(pwritev)(fd, iov, cnt, (off_t)off)
				  : PL_REAL(preadv)(fd, iov, cnt, (off_t)off);
		default:
			return wr ? PL_REAL(pwritev64)(fd, iov, cnt, off)
				  : PL_REAL(preadv64)(fd, iov, cnt, off);
		}
	}
	ssize_t n = which && off < 0 ? -EINVAL
		    : wr	     ? pl_writev_weir(f, iov, cnt, which ? off : -1)
				     : pl_readv_weir(f, iov, cnt, which ? off : -1);
	pl_file_put(f);
	return pl_ret_ssize(n, saved);
}

PL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	return pl_vec(fd, iov, cnt, -1, false, 0);
}

PL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	return pl_vec(fd, iov, cnt, -1, true, 0);
}

PL_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return pl_vec(fd, iov, cnt, off, false, 1);
}

PL_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return pl_vec(fd, iov, cnt, off, true, 1);
}

PL_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	return pl_vec(fd, iov, cnt, off, false, 2);
}

PL_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	return pl_vec(fd, iov, cnt, off, true, 2);
}

/* preadv2/pwritev2: offset -1 means the file offset; RWF_* hints are ignored. */
static ssize_t pl_vec2(int fd, const struct iovec *iov, int cnt, int64_t off, int flags, bool wr)
{
	int saved = errno;
	struct pl_file *f = pl_fd_get(fd);

	if (!f)
		return wr ? PL_REAL(pwritev64v2)(fd, iov, cnt, off, flags)
			  : PL_REAL(preadv64v2)(fd, iov, cnt, off, flags);
	ssize_t n = off < -1 ? -EINVAL
		    : wr     ? pl_writev_weir(f, iov, cnt, off)
			     : pl_readv_weir(f, iov, cnt, off);
	pl_file_put(f);
	return pl_ret_ssize(n, saved);
}

PL_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return pl_vec2(fd, iov, cnt, off, flags, false);
}

PL_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return pl_vec2(fd, iov, cnt, off, flags, true);
}

PL_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
	return pl_vec2(fd, iov, cnt, off, flags, false);
}

PL_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
	return pl_vec2(fd, iov, cnt, off, flags, true);
}

/* ------------------------------------------------------------ lseek */

static int64_t pl_lseek_any(int fd, int64_t off, int whence, bool is64)
{
	int saved = errno;
	struct pl_file *f = pl_fd_get(fd);

	if (!f)
		return is64 ? PL_REAL(lseek64)(fd, off, whence)
			    : PL_REAL(lseek)(fd, (off_t)off, whence);
	int64_t pos = pl_io_lseek(f, off, whence);
	pl_file_put(f);
	if (pos < 0) {
		errno = (int)-pos;
		return -1;
	}
	errno = saved;
	return pos;
}

PL_EXPORT off_t lseek(int fd, off_t off, int whence)
{
	return (off_t)pl_lseek_any(fd, off, whence, false);
}

PL_EXPORT off64_t lseek64(int fd, off64_t off, int whence)
{
	return pl_lseek_any(fd, off, whence, true);
}
