/*
 * common/util.h - small helpers every Weir component uses: always-on
 * assertions, errno conversion, time, bounded string copies.
 */
#ifndef WEIR_COMMON_UTIL_H
#define WEIR_COMMON_UTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/** Always-on assertion: aborts with file and line. Never use on data from the
 *  network or the disk; return -EPROTO / -EIO instead. */
#define WEIR_ASSERT(cond)                                                                      \
	do {                                                                                   \
		if (!(cond))                                                                   \
			weir_assert_fail(#cond, __FILE__, __LINE__);                           \
	} while (0)

/** Print "weir: assertion failed: EXPR at FILE:LINE" to stderr and abort(); for WEIR_ASSERT only. */
void weir_assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));

#define WEIR_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define WEIR_MIN(a, b) ((a) < (b) ? (a) : (b))
#define WEIR_MAX(a, b) ((a) > (b) ? (a) : (b))

/**
 * The readdir cookie of the directory entry \a name (\a len bytes): FNV-1a
 * 64 (Fowler/Noll/Vo) folded to 63 bits, so it fits a positive off_t
 * (telldir), kept >= 3 (0 is "start", 1 and 2 the client's "." and "..")
 * and < INT64_MAX ("end of directory"). Part of the protocol: the MDS keys
 * and orders a directory's entries by it (docs/disk-format.md), and a client
 * that lists a directory from its cache gives the same order and cookies.
 * Pure, thread-safe.
 */
uint64_t weir_name_cookie(const char *name, size_t len);

/**
 * A 64-bit hash of \a x (MurmurHash3's finaliser): spreads keys such as
 * FIDs and session ids over hash buckets. Pure.
 */
static inline uint64_t weir_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

#define WEIR_KIB (1024ULL)
#define WEIR_MIB (1024ULL * 1024ULL)
#define WEIR_GIB (1024ULL * 1024ULL * 1024ULL)

/** Monotonic clock in nanoseconds. */
uint64_t weir_now_ns(void);
/** Wall clock (CLOCK_REALTIME) in nanoseconds since the epoch. */
uint64_t weir_wall_ns(void);

/**
 * The servers' default number of event loops: half the CPUs this process
 * may run on (sched_getaffinity), at least 1. The other half is left to
 * what runs beside the loops: RocksDB's flushes and compactions, the log
 * sync, the kernel's network processing, and on a shared machine the
 * clients (docs/performance.md, "Round 4"). Thread-safe.
 */
unsigned weir_default_loops(void);

/**
 * Format a return code as "-ENOENT(-2) No such file or directory".
 * \param[in]  rc   0 or a negative errno.
 * \param[out] buf  Caller-owned, at least \a len bytes.
 * \return \a buf.
 */
const char *weir_rc_str(int rc, char *buf, size_t len);
/** Symbolic name of an errno value ("ENOENT"), or "E?" when unknown. */
const char *weir_errno_name(int err);

/**
 * Parse a size with an optional binary unit: "4096", "64K", "4MiB", "1G".
 * \return 0, or -EINVAL for malformed text, -ERANGE on overflow.
 */
int weir_parse_size(const char *s, uint64_t *out);
/**
 * Parse a duration: "250ms", "30s", "2m", plain numbers are seconds.
 * \param[out] out_ms  Milliseconds.
 * \return 0, -EINVAL, or -ERANGE on overflow.
 */
int weir_parse_duration_ms(const char *s, uint64_t *out_ms);
/** Format \a bytes as "1.5 GiB" into \a buf. \return \a buf. */
const char *weir_fmt_size(uint64_t bytes, char *buf, size_t len);

/**
 * Split "HOST:PORT" into its parts. \a host gets at most \a hostlen-1 bytes.
 * \return 0, or -EINVAL when there is no port or it is out of range.
 */
int weir_parse_hostport(const char *s, char *host, size_t hostlen, uint16_t *port);

/** Write all of \a len bytes, retrying on EINTR/short writes. \return 0 or -errno. */
int weir_write_all(int fd, const void *buf, size_t len);
/** Read exactly \a len bytes. \return 0, -EPIPE at a premature EOF, or -errno. */
int weir_read_all(int fd, void *buf, size_t len);

/** Write a small text file atomically (tmp + fsync + rename). \return 0 or -errno. */
int weir_file_write_atomic(const char *path, const void *buf, size_t len);
/** Read a small text file into \a buf (NUL-terminated). \return bytes read or -errno. */
ssize_t weir_file_read_small(const char *path, char *buf, size_t len);
/** mkdir -p. \return 0 or -errno. */
int weir_mkdir_p(const char *path, unsigned mode);

/** Name the calling thread (truncated to 15 bytes). */
void weir_thread_name(const char *name);

#endif /* WEIR_COMMON_UTIL_H */
