/*
 * common/util.c - see util.h.
 */
#define _GNU_SOURCE
#include "util.h"

#include <ctype.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void weir_assert_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "weir: assertion failed: %s at %s:%d\n", expr, file, line);
	abort();
}

uint64_t weir_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

unsigned weir_default_loops(void)
{
	cpu_set_t set;
	int n = 0;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	if (n <= 0)
		n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	return n >= 2 ? (unsigned)n / 2 : 1;
}

uint64_t weir_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static const struct {
	int err;
	const char *name;
} errno_names[] = {
	{ EPERM, "EPERM" },	      { ENOENT, "ENOENT" },	  { ESRCH, "ESRCH" },
	{ EINTR, "EINTR" },	      { EIO, "EIO" },		  { ENXIO, "ENXIO" },
	{ E2BIG, "E2BIG" },	      { EBADF, "EBADF" },	  { EAGAIN, "EAGAIN" },
	{ ENOMEM, "ENOMEM" },	      { EACCES, "EACCES" },	  { EFAULT, "EFAULT" },
	{ EBUSY, "EBUSY" },	      { EEXIST, "EEXIST" },	  { EXDEV, "EXDEV" },
	{ ENODEV, "ENODEV" },	      { ENOTDIR, "ENOTDIR" },	  { EISDIR, "EISDIR" },
	{ EINVAL, "EINVAL" },	      { ENFILE, "ENFILE" },	  { EMFILE, "EMFILE" },
	{ EFBIG, "EFBIG" },	      { ENOSPC, "ENOSPC" },	  { ESPIPE, "ESPIPE" },
	{ EROFS, "EROFS" },	      { EMLINK, "EMLINK" },	  { EPIPE, "EPIPE" },
	{ ERANGE, "ERANGE" },	      { ENAMETOOLONG, "ENAMETOOLONG" },
	{ ENOSYS, "ENOSYS" },	      { ENOTEMPTY, "ENOTEMPTY" }, { ELOOP, "ELOOP" },
	{ ENODATA, "ENODATA" },	      { EPROTO, "EPROTO" },	  { EOVERFLOW, "EOVERFLOW" },
	{ EBADMSG, "EBADMSG" },	      { ENOTSUP, "ENOTSUP" },	  { ECONNREFUSED, "ECONNREFUSED" },
	{ ECONNRESET, "ECONNRESET" }, { ETIMEDOUT, "ETIMEDOUT" }, { EHOSTUNREACH, "EHOSTUNREACH" },
	{ ENOTCONN, "ENOTCONN" },     { ESHUTDOWN, "ESHUTDOWN" }, { EALREADY, "EALREADY" },
	{ ESTALE, "ESTALE" },	      { EDQUOT, "EDQUOT" },	  { ECANCELED, "ECANCELED" },
	{ ENOLINK, "ENOLINK" },	      { EADDRINUSE, "EADDRINUSE" },
	{ EREMOTE, "EREMOTE" },	      { EHOSTDOWN, "EHOSTDOWN" },
};

const char *weir_errno_name(int err)
{
	if (err < 0)
		err = -err;
	for (size_t i = 0; i < WEIR_ARRAY_SIZE(errno_names); i++)
		if (errno_names[i].err == err)
			return errno_names[i].name;
	return "E?";
}

const char *weir_rc_str(int rc, char *buf, size_t len)
{
	if (rc >= 0)
		snprintf(buf, len, "OK(%d)", rc);
	else
		snprintf(buf, len, "-%s(%d) %s", weir_errno_name(-rc), rc, strerror(-rc));
	return buf;
}

int weir_parse_size(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (end == s)
		return -EINVAL;
	uint64_t mul = 1;
	char u = (char)toupper((unsigned char)*end);
	if (*end) {
		switch (u) {
		case 'B': mul = 1; break;
		case 'K': mul = WEIR_KIB; break;
		case 'M': mul = WEIR_MIB; break;
		case 'G': mul = WEIR_GIB; break;
		case 'T': mul = WEIR_GIB * 1024ULL; break;
		default: return -EINVAL;
		}
		end++;
		if (u != 'B') {
			if (!strcasecmp(end, "iB") || !strcasecmp(end, "B"))
				end += strlen(end);
		}
		if (*end)
			return -EINVAL;
	}
	if (v && mul > UINT64_MAX / v)
		return -ERANGE;
	*out = (uint64_t)v * mul;
	return 0;
}

int weir_parse_duration_ms(const char *s, uint64_t *out_ms)
{
	char *end;
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	uint64_t mul;
	if (!*end || !strcmp(end, "s"))
		mul = 1000;
	else if (!strcmp(end, "ms"))
		mul = 1;
	else if (!strcmp(end, "m"))
		mul = 60000;
	else if (!strcmp(end, "h"))
		mul = 3600000;
	else
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -ERANGE;
	*out_ms = (uint64_t)v * mul;
	return 0;
}

const char *weir_fmt_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	unsigned u = 0;
	while (v >= 1024.0 && u + 1 < WEIR_ARRAY_SIZE(units)) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

int weir_parse_hostport(const char *s, char *host, size_t hostlen, uint16_t *port)
{
	if (!s)
		return -EINVAL;
	const char *colon = strrchr(s, ':');
	if (!colon || colon == s)
		return -EINVAL;
	size_t hl = (size_t)(colon - s);
	if (hl + 1 > hostlen)
		return -EINVAL;
	char *end;
	errno = 0;
	if (!isdigit((unsigned char)colon[1]))
		return -EINVAL;
	unsigned long p = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || p > 65535)
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = 0;
	*port = (uint16_t)p;
	return 0;
}

int weir_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int weir_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int weir_file_write_atomic(const char *path, const void *buf, size_t len)
{
	char tmp[4096];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int rc = weir_write_all(fd, buf, len);
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

ssize_t weir_file_read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t got = 0;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int rc = -errno;
			close(fd);
			return rc;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = 0;
	close(fd);
	return (ssize_t)got;
}

int weir_mkdir_p(const char *path, unsigned mode)
{
	char buf[4096];
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

void weir_thread_name(const char *name)
{
	char n[16];
	snprintf(n, sizeof(n), "%s", name);
	pthread_setname_np(pthread_self(), n);
}

uint64_t weir_name_cookie(const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)name[i];
		h *= 0x100000001b3ULL;
	}
	h >>= 1;
	if (h < 3)
		h = 3;
	if (h == INT64_MAX)
		h--;
	return h;
}
