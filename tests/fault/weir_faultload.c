/*
 * tests/fault/weir_faultload.c - one application process of the fault test
 * (tests/fault/faults.sh): it works on a Weir filesystem while servers are
 * killed, restarted and paused, and counts every call that failed, every
 * byte that came back wrong, and the longest time one call took (a stall).
 *
 * DESIGN. Three ways to reach the filesystem, one loop:
 *   --api MDS   libweir's calls (weir_open, weir_pwrite, weir_fcntl_lock, ...)
 *   --posix     libc's calls on --dir, which is a path in a FUSE mount or,
 *               with LD_PRELOAD=libweir-preload.so, under the shim's prefix.
 * Each iteration k of worker ID writes a file of a size and content that
 * depend only on (ID, k) to DIR/wID/fN.tmp, fsyncs and closes it, renames
 * it over DIR/wID/fN (N = k mod 8), reads back the file a previous
 * iteration left there (it must hold exactly what that iteration wrote),
 * and every fourth iteration unlinks one. With --lockfile it then takes
 * an fcntl write lock on the first 8 bytes of that shared file, reads the
 * counter there, holds the lock for --lock-hold-ms, writes counter + 1 and
 * unlocks: when every worker is done the counter must equal the sum of the
 * increments they report, which holds only if the lock excluded the others
 * the whole time (across server restarts too).
 * A call that fails is counted, its errno logged, and the iteration given
 * up (the next one starts afresh); EINTR is counted apart (a signal
 * interrupted a wait, which the test allows). The loop ends when --stop
 * FILE exists (a local path the test creates) or after --seconds.
 * At the end one line of JSON goes to stdout:
 *   {"id":..,"mode":"api|posix","iters":..,"calls":..,"failed":..,
 *    "eintr":..,"wrong":..,"bytes_verified":..,"lock_incs":..,
 *    "max_stall_ms":..,"max_stall_op":".."}
 * Exit status: 0 when nothing failed and nothing was wrong, 1 otherwise,
 * 2 on bad usage or when the filesystem could not be reached at all.
 *
 * --probe stat|read PATH is the recovery benchmark's client (tests/bench/
 * recovery.sh): instead of the loop above it stats PATH (an MDS request) or
 * reads its first 4 KiB (an OST request), one call after another, and logs
 * one line per call to --probe-log: "START_NS END_NS RC" (CLOCK_REALTIME,
 * so the script can compare them with the time of its kill -9).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "weir/weir.h"

#define FL_SLOTS     8
#define FL_MAX_SIZE  (1024 * 1024)
#define FL_PATH_MAX  1024

/* ------------------------------------------------------------ the two ways in */

struct fl_ops {
	const char *name;
	int (*open)(const char *path, int flags, mode_t mode, void **fh); /* -errno */
	ssize_t (*pwrite)(void *fh, const void *buf, size_t len, uint64_t off);
	ssize_t (*pread)(void *fh, void *buf, size_t len, uint64_t off);
	int (*fsync)(void *fh);
	int (*close)(void *fh);
	int (*rename)(const char *from, const char *to);
	int (*unlink)(const char *path);
	int (*mkdir)(const char *path, mode_t mode);
	int (*lock)(void *fh, int cmd, struct flock *fl);
};

static weir_fs_t *fl_fs;

static int api_open(const char *path, int flags, mode_t mode, void **fh)
{
	return weir_open(fl_fs, path, flags, mode, (weir_file_t **)fh);
}
static ssize_t api_pwrite(void *fh, const void *buf, size_t len, uint64_t off)
{
	return weir_pwrite(fh, buf, len, off);
}
static ssize_t api_pread(void *fh, void *buf, size_t len, uint64_t off)
{
	return weir_pread(fh, buf, len, off);
}
static int api_fsync(void *fh)
{
	return weir_fsync(fh);
}
static int api_close(void *fh)
{
	return weir_close(fh);
}
static int api_rename(const char *from, const char *to)
{
	return weir_rename(fl_fs, from, to);
}
static int api_unlink(const char *path)
{
	return weir_unlink(fl_fs, path);
}
static int api_mkdir(const char *path, mode_t mode)
{
	return weir_mkdir(fl_fs, path, mode);
}
static int api_lock(void *fh, int cmd, struct flock *fl)
{
	return weir_fcntl_lock(fh, cmd, fl);
}

static const struct fl_ops fl_api = {
	"api", api_open, api_pwrite, api_pread, api_fsync, api_close,
	api_rename, api_unlink, api_mkdir, api_lock,
};

/* libc's calls: the fd is kept in the pointer (+1, so fd 0 is not NULL) */
static int px_fd(void *fh)
{
	return (int)(intptr_t)fh - 1;
}
static int px_open(const char *path, int flags, mode_t mode, void **fh)
{
	int fd = open(path, flags, mode);
	if (fd < 0)
		return -errno;
	*fh = (void *)(intptr_t)(fd + 1);
	return 0;
}
static ssize_t px_pwrite(void *fh, const void *buf, size_t len, uint64_t off)
{
	ssize_t n = pwrite(px_fd(fh), buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}
static ssize_t px_pread(void *fh, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(px_fd(fh), buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}
static int px_fsync(void *fh)
{
	return fsync(px_fd(fh)) ? -errno : 0;
}
static int px_close(void *fh)
{
	return close(px_fd(fh)) ? -errno : 0;
}
static int px_rename(const char *from, const char *to)
{
	return rename(from, to) ? -errno : 0;
}
static int px_unlink(const char *path)
{
	return unlink(path) ? -errno : 0;
}
static int px_mkdir(const char *path, mode_t mode)
{
	return mkdir(path, mode) ? -errno : 0;
}
static int px_lock(void *fh, int cmd, struct flock *fl)
{
	return fcntl(px_fd(fh), cmd, fl) ? -errno : 0;
}

static const struct fl_ops fl_posix = {
	"posix", px_open, px_pwrite, px_pread, px_fsync, px_close,
	px_rename, px_unlink, px_mkdir, px_lock,
};

/* ------------------------------------------------------------ accounting */

struct fl_stats {
	uint64_t iters, calls, failed, eintr, wrong, bytes_verified, lock_incs;
	double max_stall_ms;
	char max_stall_op[64];
};

static struct fl_stats st;
static const struct fl_ops *ops;
static int fl_id;
static bool fl_verbose;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void wall_stamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, len, "%02d:%02d:%02d.%03ld", tm.tm_hour, tm.tm_min, tm.tm_sec,
		 ts.tv_nsec / 1000000);
}

/* Account one call that started at \a t0 and returned \a rc; true if it failed. */
static bool fl_done(const char *what, const char *path, double t0, long long rc)
{
	double ms = now_ms() - t0;
	st.calls++;
	if (ms > st.max_stall_ms) {
		st.max_stall_ms = ms;
		snprintf(st.max_stall_op, sizeof(st.max_stall_op), "%s", what);
	}
	if (rc >= 0)
		return false;
	char ts[32];
	wall_stamp(ts, sizeof(ts));
	if (rc == -EINTR) {
		st.eintr++;
		fprintf(stderr, "%s faultload[%d]: %s %s: interrupted (EINTR) after %.0f ms\n", ts,
			fl_id, what, path, ms);
	} else {
		st.failed++;
		fprintf(stderr, "%s faultload[%d]: %s %s: FAILED: %s (%lld) after %.0f ms\n", ts,
			fl_id, what, path, strerror((int)-rc), rc, ms);
	}
	return true;
}

#define CALL(what, path, expr)                                                                     \
	({                                                                                         \
		double t0_ = now_ms();                                                             \
		long long rc_ = (long long)(expr);                                                 \
		fl_done(what, path, t0_, rc_);                                                     \
		rc_;                                                                               \
	})

/* ------------------------------------------------------------ content */

/* size of iteration k of worker id: 1 byte to 1 MiB, some odd */
static size_t fl_size(int id, uint64_t k)
{
	uint64_t x = (uint64_t)id * 0x9E3779B97F4A7C15ULL ^ (k + 1) * 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 29;
	switch (x % 4) {
	case 0:
		return 4096;
	case 1:
		return 1 + (x >> 8) % 65536;
	case 2:
		return 256 * 1024 + 123;
	default:
		return FL_MAX_SIZE;
	}
}

/* byte i of iteration k's file: a function of (id, k, i) */
static void fl_fill(uint8_t *buf, size_t len, int id, uint64_t k)
{
	uint64_t x = ((uint64_t)id << 40) ^ (k * 0x2545F4914F6CDD1DULL) ^ 0xA5A5A5A5ULL;
	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		buf[i] = (uint8_t)(x >> (8 * (i % 8)));
	}
}

/* ------------------------------------------------------------ the loop */

/* a path under DIR; main() refused a DIR too long for these */
#define PATHF(buf, ...)                                                                            \
	do {                                                                                       \
		if ((size_t)snprintf(buf, sizeof(buf), __VA_ARGS__) >= sizeof(buf))                \
			abort();                                                                   \
	} while (0)

static uint8_t *wbuf, *rbuf, *ebuf;
static uint64_t last_k[FL_SLOTS]; /* iteration whose content slot N holds, +1; 0: none */

/* write iteration k into slot k % FL_SLOTS: .tmp, fsync, close, rename */
static int fl_write(const char *dir, uint64_t k)
{
	char tmp[FL_PATH_MAX], dst[FL_PATH_MAX];
	unsigned slot = k % FL_SLOTS;
	size_t len = fl_size(fl_id, k);
	void *fh = NULL;
	long long rc;

	PATHF(tmp, "%s/f%u.tmp", dir, slot);
	PATHF(dst, "%s/f%u", dir, slot);
	fl_fill(wbuf, len, fl_id, k);
	rc = CALL("create", tmp, ops->open(tmp, O_CREAT | O_TRUNC | O_WRONLY, 0644, &fh));
	if (rc < 0)
		return -1;
	size_t off = 0;
	while (off < len) {
		rc = CALL("write", tmp, ops->pwrite(fh, wbuf + off, len - off, off));
		if (rc <= 0) {
			if (rc == 0)
				fl_done("write", tmp, now_ms(), -EIO);
			ops->close(fh);
			return -1;
		}
		off += (size_t)rc;
	}
	rc = CALL("fsync", tmp, ops->fsync(fh));
	long long crc = CALL("close", tmp, ops->close(fh));
	if (rc < 0 || crc < 0)
		return -1;
	if (CALL("rename", dst, ops->rename(tmp, dst)) < 0) {
		last_k[slot] = 0; /* the rename may or may not have happened */
		return -1;
	}
	last_k[slot] = k + 1;
	return 0;
}

/* read slot s back: it must hold exactly what iteration last_k[s] - 1 wrote */
static int fl_verify(const char *dir, unsigned slot)
{
	char path[FL_PATH_MAX];
	void *fh = NULL;
	long long rc;

	if (!last_k[slot])
		return 0;
	uint64_t k = last_k[slot] - 1;
	size_t len = fl_size(fl_id, k);
	PATHF(path, "%s/f%u", dir, slot);
	rc = CALL("open", path, ops->open(path, O_RDONLY, 0, &fh));
	if (rc < 0)
		return -1;
	size_t off = 0;
	for (;;) {
		rc = CALL("read", path, ops->pread(fh, rbuf + off, FL_MAX_SIZE + 1 - off, off));
		if (rc < 0) {
			ops->close(fh);
			return -1;
		}
		if (rc == 0 || off + (size_t)rc > FL_MAX_SIZE)
			break;
		off += (size_t)rc;
	}
	if (CALL("close", path, ops->close(fh)) < 0)
		return -1;
	fl_fill(ebuf, len, fl_id, k);
	if (off != len || memcmp(rbuf, ebuf, len)) {
		size_t i = 0;
		while (i < len && i < off && rbuf[i] == ebuf[i])
			i++;
		st.wrong++;
		fprintf(stderr,
			"faultload[%d]: %s: WRONG: %zu bytes, iteration %" PRIu64
			" wrote %zu; first difference at byte %zu\n",
			fl_id, path, off, k, len, i);
		return -1;
	}
	st.bytes_verified += len;
	return 0;
}

static int fl_unlink(const char *dir, unsigned slot)
{
	char path[FL_PATH_MAX];
	if (!last_k[slot])
		return 0;
	PATHF(path, "%s/f%u", dir, slot);
	long long rc = CALL("unlink", path, ops->unlink(path));
	last_k[slot] = 0; /* gone, or unknown after a failure */
	if (rc < 0)
		return -1;
	return 0;
}

/* one exclusive increment of the shared counter */
static int fl_lock_inc(const char *lockfile, unsigned hold_ms)
{
	void *fh = NULL;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 8 };
	uint64_t v = 0;
	long long rc;
	int ret = -1;

	if (CALL("open", lockfile, ops->open(lockfile, O_RDWR, 0, &fh)) < 0)
		return -1;
	if (CALL("lock", lockfile, ops->lock(fh, F_SETLKW, &fl)) < 0)
		goto out;
	rc = CALL("read", lockfile, ops->pread(fh, &v, sizeof(v), 0));
	if (rc >= 0 && rc != sizeof(v) && rc != 0) {
		fl_done("read", lockfile, now_ms(), -EIO);
		rc = -EIO;
	}
	if (rc >= 0) {
		uint64_t before = v;
		struct timespec ts = { .tv_sec = hold_ms / 1000,
				       .tv_nsec = (long)(hold_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		/* still ours: nobody else wrote while we held the lock */
		rc = CALL("read", lockfile, ops->pread(fh, &v, sizeof(v), 0));
		if (rc >= 0 && v != before) {
			st.wrong++;
			fprintf(stderr,
				"faultload[%d]: %s: LOCK NOT EXCLUSIVE: counter moved from %" PRIu64
				" to %" PRIu64 " while this worker held the write lock\n",
				fl_id, lockfile, before, v);
		}
		v = before + 1;
		/* counted once the OSS acknowledged the write: an acknowledged
		 * byte survives a kill -9, fsync or not */
		if (rc >= 0 && CALL("write", lockfile, ops->pwrite(fh, &v, sizeof(v), 0)) == sizeof(v)) {
			st.lock_incs++;
			if (CALL("fsync", lockfile, ops->fsync(fh)) == 0)
				ret = 0;
		}
	}
	fl.l_type = F_UNLCK;
	CALL("unlock", lockfile, ops->lock(fh, F_SETLK, &fl));
out:
	CALL("close", lockfile, ops->close(fh));
	return ret;
}

static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* the recovery benchmark's client: one call after another, each logged */
static int fl_probe(const char *what, const char *path, const char *logpath, const char *stop,
		    unsigned seconds)
{
	bool rd = !strcmp(what, "read");
	void *fh = NULL;
	FILE *log = fopen(logpath, "w");
	if (!log) {
		fprintf(stderr, "faultload: %s: %s\n", logpath, strerror(errno));
		return 2;
	}
	if (!rd && strcmp(what, "stat")) {
		fprintf(stderr, "faultload: --probe %s: stat or read\n", what);
		return 2;
	}
	if (rd) {
		int rc = ops->open(path, O_RDONLY, 0, &fh);
		if (rc) {
			fprintf(stderr, "faultload: open %s: %s\n", path, strerror(-rc));
			return 2;
		}
	}
	double end = now_ms() + seconds * 1e3;
	while (!(stop && access(stop, F_OK) == 0) && now_ms() < end) {
		uint64_t t0 = real_ns();
		long long rc;
		if (rd) {
			rc = ops->pread(fh, rbuf, 4096, 0);
		} else if (ops == &fl_api) {
			struct stat sb;
			rc = weir_stat(fl_fs, path, &sb);
		} else {
			struct stat sb;
			rc = stat(path, &sb) ? -errno : 0;
		}
		uint64_t t1 = real_ns();
		fprintf(log, "%" PRIu64 " %" PRIu64 " %lld\n", t0, t1, rc < 0 ? rc : 0);
		if (rc < 0) { /* a client that fails at once: do not spin */
			struct timespec ts = { 0, 2000000 };
			nanosleep(&ts, NULL);
		}
	}
	if (fh)
		ops->close(fh);
	fclose(log);
	return 0;
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s (--api MDS | --posix) --dir DIR --id N [options]\n"
		"\n"
		"One application process of Weir's fault test (tests/fault/faults.sh): writes,\n"
		"fsyncs, renames, reads back and checks files under DIR/wN, and increments a\n"
		"counter under an fcntl lock, counting failed calls, wrong bytes and the\n"
		"longest call, until --stop FILE exists or --seconds pass. Prints one JSON\n"
		"line at the end; exit 0 only if nothing failed and nothing was wrong.\n"
		"\n"
		"  --api MDS         use libweir (mount HOST:PORT; key from $WEIR_KEY_FILE)\n"
		"  --posix           use libc calls (DIR in a FUSE mount, or under the shim)\n"
		"  --dir DIR         directory to work in (DIR/wN is made)\n"
		"  --id N            worker number (names its directory and its data)\n"
		"  --stop FILE       end when this local file exists\n"
		"  --seconds S       end after S seconds (default 60)\n"
		"  --lockfile PATH   also increment the 8-byte counter at PATH under a lock\n"
		"  --lock-hold-ms M  hold the lock this long each time (default 20)\n"
		"  --verbose         log each iteration\n"
		"  --probe stat|read PATH  instead: stat PATH or read its first 4 KiB, call\n"
		"                    after call, logging \"START_NS END_NS RC\" lines to\n"
		"  --probe-log FILE  (the recovery benchmark, tests/bench/recovery.sh)\n"
		"  -h, --help        this text\n",
		argv0);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "api", required_argument, NULL, 'a' },   { "posix", no_argument, NULL, 'p' },
		{ "dir", required_argument, NULL, 'd' },   { "id", required_argument, NULL, 'i' },
		{ "stop", required_argument, NULL, 's' },  { "seconds", required_argument, NULL, 'S' },
		{ "lockfile", required_argument, NULL, 'l' },
		{ "lock-hold-ms", required_argument, NULL, 'H' },
		{ "verbose", no_argument, NULL, 'v' },     { "help", no_argument, NULL, 'h' },
		{ "probe", required_argument, NULL, 'P' },
		{ "probe-log", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 }
	};
	const char *mds = NULL, *dir = NULL, *stop = NULL, *lockfile = NULL;
	const char *probe = NULL, *probe_log = NULL;
	unsigned seconds = 60, hold_ms = 20;
	int c;

	fl_id = -1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'a': mds = optarg; ops = &fl_api; break;
		case 'p': ops = &fl_posix; break;
		case 'd': dir = optarg; break;
		case 'i': fl_id = atoi(optarg); break;
		case 's': stop = optarg; break;
		case 'S': seconds = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'l': lockfile = optarg; break;
		case 'H': hold_ms = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'v': fl_verbose = true; break;
		case 'P': probe = optarg; break;
		case 'L': probe_log = optarg; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	if (probe && ops && probe_log && optind == argc - 1)
		dir = argv[optind++], fl_id = 0; /* --probe's PATH */
	if (!ops || !dir || fl_id < 0 || optind != argc || (probe && !probe_log)) {
		usage(stderr, argv[0]);
		return 2;
	}
	if (ops == &fl_api) {
		int rc = weir_mount(mds, &fl_fs);
		if (rc) {
			fprintf(stderr, "faultload[%d]: mount %s: %s\n", fl_id, mds, strerror(-rc));
			return 2;
		}
	}
	wbuf = malloc(FL_MAX_SIZE);
	rbuf = malloc(FL_MAX_SIZE + 1);
	ebuf = malloc(FL_MAX_SIZE);
	if (!wbuf || !rbuf || !ebuf)
		return 2;

	if (probe)
		return fl_probe(probe, dir, probe_log, stop, seconds);

	char wdir[FL_PATH_MAX];
	if (strlen(dir) > FL_PATH_MAX - 64) {
		fprintf(stderr, "faultload[%d]: --dir: path too long\n", fl_id);
		return 2;
	}
	PATHF(wdir, "%s/w%d", dir, fl_id);
	int rc = ops->mkdir(wdir, 0755);
	if (rc && rc != -EEXIST) {
		fprintf(stderr, "faultload[%d]: mkdir %s: %s\n", fl_id, wdir, strerror(-rc));
		return 2;
	}

	double end = now_ms() + seconds * 1e3;
	for (uint64_t k = 0;; k++) {
		if (stop && access(stop, F_OK) == 0)
			break;
		if (now_ms() > end)
			break;
		st.iters++;
		if (fl_write(wdir, k) == 0)
			fl_verify(wdir, (unsigned)((k + FL_SLOTS - 3) % FL_SLOTS));
		if (k % 4 == 3)
			fl_unlink(wdir, (unsigned)((k + 1) % FL_SLOTS));
		if (lockfile)
			fl_lock_inc(lockfile, hold_ms);
		if (fl_verbose)
			fprintf(stderr, "faultload[%d]: iteration %" PRIu64 " done\n", fl_id, k);
	}
	/* finally every slot still holding a file is checked once more */
	for (unsigned s = 0; s < FL_SLOTS; s++)
		fl_verify(wdir, s);

	printf("{\"id\":%d,\"mode\":\"%s\",\"iters\":%" PRIu64 ",\"calls\":%" PRIu64
	       ",\"failed\":%" PRIu64 ",\"eintr\":%" PRIu64 ",\"wrong\":%" PRIu64
	       ",\"bytes_verified\":%" PRIu64 ",\"lock_incs\":%" PRIu64
	       ",\"max_stall_ms\":%.1f,\"max_stall_op\":\"%s\"}\n",
	       fl_id, getenv("LD_PRELOAD") && ops == &fl_posix ? "shim" : ops->name, st.iters,
	       st.calls, st.failed, st.eintr, st.wrong, st.bytes_verified, st.lock_incs,
	       st.max_stall_ms, st.max_stall_op);
	fflush(stdout);
	if (fl_fs)
		weir_umount(fl_fs);
	free(wbuf);
	free(rbuf);
	free(ebuf);
	return st.failed || st.wrong ? 1 : 0;
}
