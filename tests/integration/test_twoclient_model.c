/*
 * tests/integration/test_twoclient_model.c - a randomized model check of file
 * sizes and data under two clients that take turns on the same files.
 *
 * DESIGN. Two clients, A and B, act on a few files, one operation at a time:
 * writes at random offsets and lengths (some crossing stripes), ftruncate and
 * truncate by path to random sizes, opens with O_TRUNC, fsync, fstat, whole
 * reads, and closes. The expected content of every file is kept in memory
 * (the model). Operations never overlap in time, so the model is exact:
 * every size a client sees and every byte it reads must equal it.
 *
 * Handles stay open across operations at random, and closes run on a
 * background thread (libweir), or are the kernel's asynchronous FUSE
 * releases (two mounts): a writer's close, whose glimpsed size the MDS takes,
 * then races with the other client's next operation. That race is how a
 * truncate through one mount used to be undone by a write through the other
 * (issue 12, item 1: the close reported a size glimpsed before the truncate).
 * Every WEIR_MODEL_DRAIN operations every handle is closed and waited for,
 * and each file's size is checked by path by both clients with nothing open:
 * the size the MDS stores, as `weir ls -l` shows it.
 *
 * Subjects:
 *   test_twoclient_model                      libweir: starts a cluster (2 OSS x 2 OSTs),
 *                                             two weir_mount()s in this process, files
 *                                             striped over every OST in 64 KiB stripes
 *   test_twoclient_model --paths DIR_A DIR_B  two directories that name the same place
 *                                             (two FUSE mounts: tests/integration/test_fuse.sh)
 * Environment: WEIR_MODEL_OPS operations (default 3000, the short mode that
 * make test runs; the long mode is e.g. WEIR_MODEL_OPS=2000000),
 * WEIR_MODEL_SEED (default 1), WEIR_MODEL_FILES (default 3),
 * WEIR_MODEL_DRAIN (default 250).
 * On a mismatch it prints the seed, the operation's number and the last
 * operations, and fails (exit 1).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

#define KIB 1024ULL
#define MODEL_MAX_SIZE (1536 * KIB) /* sizes stay below; 6 rounds of 4 x 64 KiB stripes */
#define MODEL_MAX_FILES 8
#define SLOTS 2    /* handles a client may keep open per file */
#define HISTORY 24 /* operations printed on a mismatch */

/* ------------------------------------------------------------ subjects */

/* One way to reach the files: libweir, or two directories (mounts). */
struct subj {
	const char *s_name;
	int (*s_open)(struct subj *s, int cl, const char *rel, int flags, void **h);
	ssize_t (*s_pwrite)(void *h, const void *buf, size_t len, uint64_t off);
	ssize_t (*s_pread)(void *h, void *buf, size_t len, uint64_t off);
	int (*s_ftruncate)(void *h, uint64_t size);
	int (*s_fsync)(void *h);
	int (*s_fstat_size)(void *h, uint64_t *size);
	int (*s_close)(void *h);
	int (*s_truncate)(struct subj *s, int cl, const char *rel, uint64_t size);
	int (*s_stat_size)(struct subj *s, int cl, const char *rel, uint64_t *size);
	/* a mount's page cache: data another client overwrote may be seen
	 * only at the next open (close-to-open, README "FUSE mount"), so
	 * whole reads go through a new descriptor; sizes are always exact */
	bool s_close_to_open;
	weir_fs_t *s_fs[2];    /* libweir */
	const char **s_dir;    /* paths: the two directories; NULL for libweir */
};

static void subj_path(struct subj *s, int cl, const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", s->s_dir ? s->s_dir[cl] : "", rel);
}

/* ---- libweir: handles are weir_file_t *, paths are under "/" */

static int lw_open(struct subj *s, int cl, const char *rel, int flags, void **h)
{
	char p[256];
	subj_path(s, cl, rel, p, sizeof(p));
	return weir_open(s->s_fs[cl], p, flags, 0644, (weir_file_t **)h);
}

static ssize_t lw_pwrite(void *h, const void *buf, size_t len, uint64_t off)
{
	return weir_pwrite(h, buf, len, off);
}

static ssize_t lw_pread(void *h, void *buf, size_t len, uint64_t off)
{
	return weir_pread(h, buf, len, off);
}

static int lw_ftruncate(void *h, uint64_t size)
{
	return weir_ftruncate(h, size);
}

static int lw_fsync(void *h)
{
	return weir_fsync(h);
}

static int lw_fstat_size(void *h, uint64_t *size)
{
	struct stat st;
	int rc = weir_fstat(h, &st);
	*size = rc ? 0 : (uint64_t)st.st_size;
	return rc;
}

static int lw_close(void *h)
{
	return weir_close(h);
}

static int lw_truncate(struct subj *s, int cl, const char *rel, uint64_t size)
{
	char p[256];
	subj_path(s, cl, rel, p, sizeof(p));
	return weir_truncate(s->s_fs[cl], p, size);
}

static int lw_stat_size(struct subj *s, int cl, const char *rel, uint64_t *size)
{
	char p[256];
	struct stat st;
	subj_path(s, cl, rel, p, sizeof(p));
	int rc = weir_stat(s->s_fs[cl], p, &st);
	*size = rc ? 0 : (uint64_t)st.st_size;
	return rc;
}

/* ---- paths: handles are descriptors (+1, so that none is NULL) */

static int fd_of(void *h)
{
	return (int)(intptr_t)h - 1;
}

static int px_open(struct subj *s, int cl, const char *rel, int flags, void **h)
{
	char p[512];
	subj_path(s, cl, rel, p, sizeof(p));
	int fd = open(p, flags, 0644);
	if (fd < 0)
		return -errno;
	*h = (void *)(intptr_t)(fd + 1);
	return 0;
}

static ssize_t px_pwrite(void *h, const void *buf, size_t len, uint64_t off)
{
	ssize_t n = pwrite(fd_of(h), buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

static ssize_t px_pread(void *h, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) { /* a FUSE read may come back short before the end */
		ssize_t n = pread(fd_of(h), (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int px_ftruncate(void *h, uint64_t size)
{
	return ftruncate(fd_of(h), (off_t)size) ? -errno : 0;
}

static int px_fsync(void *h)
{
	return fsync(fd_of(h)) ? -errno : 0;
}

static int px_fstat_size(void *h, uint64_t *size)
{
	struct stat st;
	if (fstat(fd_of(h), &st))
		return -errno;
	*size = (uint64_t)st.st_size;
	return 0;
}

static int px_close(void *h)
{
	return close(fd_of(h)) ? -errno : 0;
}

static int px_truncate(struct subj *s, int cl, const char *rel, uint64_t size)
{
	char p[512];
	subj_path(s, cl, rel, p, sizeof(p));
	return truncate(p, (off_t)size) ? -errno : 0;
}

static int px_stat_size(struct subj *s, int cl, const char *rel, uint64_t *size)
{
	char p[512];
	struct stat st;
	subj_path(s, cl, rel, p, sizeof(p));
	if (stat(p, &st))
		return -errno;
	*size = (uint64_t)st.st_size;
	return 0;
}

/* ------------------------------------------------------------ closes in the background */

/*
 * One thread closes the handles the model run lets go of, in order, while the
 * run goes on: as the kernel sends FUSE_RELEASE after close(2) has returned.
 */
struct closer {
	pthread_mutex_t c_lock;
	pthread_cond_t c_cond;
	void *c_q[256];
	unsigned c_head, c_tail; /* c_q[c_head % 256] is the next to close */
	bool c_busy, c_stop;
	int c_err; /* the first close that failed */
	struct subj *c_subj;
	pthread_t c_thread;
};

static void *closer_main(void *arg)
{
	struct closer *c = arg;
	pthread_mutex_lock(&c->c_lock);
	for (;;) {
		while (c->c_head == c->c_tail && !c->c_stop)
			pthread_cond_wait(&c->c_cond, &c->c_lock);
		if (c->c_head == c->c_tail)
			break;
		void *h = c->c_q[c->c_head % 256];
		c->c_busy = true;
		pthread_mutex_unlock(&c->c_lock);
		int rc = c->c_subj->s_close(h);
		pthread_mutex_lock(&c->c_lock);
		c->c_head++;
		c->c_busy = false;
		if (rc && !c->c_err)
			c->c_err = rc;
		pthread_cond_broadcast(&c->c_cond);
	}
	pthread_mutex_unlock(&c->c_lock);
	return NULL;
}

static void closer_put(struct closer *c, void *h)
{
	pthread_mutex_lock(&c->c_lock);
	while (c->c_tail - c->c_head >= 256)
		pthread_cond_wait(&c->c_cond, &c->c_lock);
	c->c_q[c->c_tail++ % 256] = h;
	pthread_cond_broadcast(&c->c_cond);
	pthread_mutex_unlock(&c->c_lock);
}

/* Wait until every queued close is done. \return the first close error, or 0. */
static int closer_drain(struct closer *c)
{
	pthread_mutex_lock(&c->c_lock);
	while (c->c_head != c->c_tail || c->c_busy)
		pthread_cond_wait(&c->c_cond, &c->c_lock);
	int rc = c->c_err;
	pthread_mutex_unlock(&c->c_lock);
	return rc;
}

/* ------------------------------------------------------------ the model run */

struct mfile {
	char mf_rel[64];
	uint8_t *mf_data; /* MODEL_MAX_SIZE bytes; mf_size of them are the file */
	uint64_t mf_size;
	void *mf_h[2][SLOTS]; /* open handles per client (NULL: none) */
};

struct run {
	struct subj *r_subj;
	struct closer r_closer;
	struct mfile r_files[MODEL_MAX_FILES];
	unsigned r_nr_files;
	uint64_t r_rng;
	uint64_t r_seed;
	uint64_t r_op; /* number of the operation running */
	char r_hist[HISTORY][128];
	uint8_t *r_buf; /* MODEL_MAX_SIZE + 64 KiB */
	uint64_t r_stat[8];
};

enum { MS_WRITE, MS_TRUNC, MS_OTRUNC, MS_CHECK, MS_READ, MS_CLOSE, MS_DRAIN, MS_FSYNC };

static uint64_t rnd(struct run *r, uint64_t n)
{
	return n ? th_rand64(&r->r_rng) % n : 0;
}

static void hist(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hist(struct run *r, const char *fmt, ...)
{
	va_list ap;
	char *h = r->r_hist[r->r_op % HISTORY];
	int n = snprintf(h, 24, "#%" PRIu64 " ", r->r_op);
	va_start(ap, fmt);
	vsnprintf(h + n, sizeof(r->r_hist[0]) - (size_t)n, fmt, ap);
	va_end(ap);
}

static int fail(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct run *r, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "\n  model check (%s) FAILED at operation %" PRIu64 " (WEIR_MODEL_SEED=%" PRIu64
		"): ", r->r_subj->s_name, r->r_op, r->r_seed);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n  the last operations:\n");
	uint64_t first = r->r_op >= HISTORY - 1 ? r->r_op - (HISTORY - 1) : 0;
	for (uint64_t i = first; i <= r->r_op; i++)
		fprintf(stderr, "    %s\n", r->r_hist[i % HISTORY]);
	return -1;
}

static int check_rc(struct run *r, const char *what, long rc)
{
	if (rc < 0)
		return fail(r, "%s: %s (%ld)", what, strerror((int)-rc), rc);
	return 0;
}

/* Set the model's size, zero-filling what a truncate or a write past the end adds. */
static void model_resize(struct mfile *f, uint64_t size)
{
	if (size > f->mf_size)
		memset(f->mf_data + f->mf_size, 0, size - f->mf_size);
	f->mf_size = size;
}

/* A handle of client \a cl on \a f: one kept open, or a new O_RDWR one. */
static int handle_get(struct run *r, int cl, struct mfile *f, void **h, int *slot)
{
	int free_slot = -1;
	for (int i = 0; i < SLOTS; i++) {
		if (f->mf_h[cl][i] && rnd(r, 2)) {
			*h = f->mf_h[cl][i];
			*slot = i;
			return 0;
		}
		if (!f->mf_h[cl][i] && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0) {
		*slot = (int)rnd(r, SLOTS);
		*h = f->mf_h[cl][*slot];
		return 0;
	}
	int rc = r->r_subj->s_open(r->r_subj, cl, f->mf_rel, O_RDWR, h);
	if (rc)
		return check_rc(r, "open O_RDWR", rc);
	*slot = free_slot;
	f->mf_h[cl][free_slot] = *h;
	return 0;
}

/* After an operation on \a h: keep it open, or let the closer close it. */
static void handle_done(struct run *r, int cl, struct mfile *f, int slot)
{
	if (rnd(r, 3) == 0)
		return; /* kept for a later operation */
	closer_put(&r->r_closer, f->mf_h[cl][slot]);
	f->mf_h[cl][slot] = NULL;
}

static int compare(struct run *r, struct mfile *f, int cl, void *h)
{
	ssize_t n = r->r_subj->s_pread(h, r->r_buf, f->mf_size + 64 * KIB, 0);
	if (check_rc(r, "pread", n))
		return -1;
	if ((uint64_t)n != f->mf_size)
		return fail(r, "%s: client %c read %zd bytes, the model has %" PRIu64, f->mf_rel,
			    'A' + cl, n, f->mf_size);
	long at = th_diff_at(r->r_buf, f->mf_data, (size_t)n);
	if (at >= 0)
		return fail(r, "%s: client %c read byte %ld as %#x, the model has %#x", f->mf_rel,
			    'A' + cl, at, r->r_buf[at], f->mf_data[at]);
	return 0;
}

static int op_write(struct run *r, int cl, struct mfile *f)
{
	void *h;
	int slot;
	/* mostly small writes; some span several 64 KiB stripes */
	uint64_t len = rnd(r, 8) ? 1 + rnd(r, 64 * KIB) : 1 + rnd(r, 320 * KIB);
	uint64_t off = rnd(r, MODEL_MAX_SIZE - len);
	uint64_t seed = th_rand64(&r->r_rng);
	hist(r, "%c write %s off=%" PRIu64 " len=%" PRIu64, 'A' + cl, f->mf_rel, off, len);
	if (handle_get(r, cl, f, &h, &slot))
		return -1;
	th_fill_pattern(r->r_buf, len, seed);
	ssize_t n = r->r_subj->s_pwrite(h, r->r_buf, len, off);
	if (check_rc(r, "pwrite", n))
		return -1;
	if ((uint64_t)n != len)
		return fail(r, "short write: %zd of %" PRIu64, n, len);
	if (off + len > f->mf_size)
		model_resize(f, off + len);
	memcpy(f->mf_data + off, r->r_buf, len);
	handle_done(r, cl, f, slot);
	return 0;
}

static int op_truncate(struct run *r, int cl, struct mfile *f)
{
	uint64_t size = rnd(r, 4) == 0 ? 0 : rnd(r, MODEL_MAX_SIZE);
	int rc;
	if (rnd(r, 3) == 0) {
		hist(r, "%c truncate %s %" PRIu64 " (path)", 'A' + cl, f->mf_rel, size);
		rc = r->r_subj->s_truncate(r->r_subj, cl, f->mf_rel, size);
		if (check_rc(r, "truncate", rc))
			return -1;
	} else {
		void *h;
		int slot;
		hist(r, "%c ftruncate %s %" PRIu64, 'A' + cl, f->mf_rel, size);
		if (handle_get(r, cl, f, &h, &slot))
			return -1;
		rc = r->r_subj->s_ftruncate(h, size);
		if (check_rc(r, "ftruncate", rc))
			return -1;
		handle_done(r, cl, f, slot);
	}
	model_resize(f, size);
	return 0;
}

static int op_open_trunc(struct run *r, int cl, struct mfile *f)
{
	void *h;
	hist(r, "%c open O_TRUNC %s", 'A' + cl, f->mf_rel);
	int rc = r->r_subj->s_open(r->r_subj, cl, f->mf_rel, O_WRONLY | O_TRUNC, &h);
	if (check_rc(r, "open O_TRUNC", rc))
		return -1;
	model_resize(f, 0);
	closer_put(&r->r_closer, h);
	return 0;
}

static int op_check(struct run *r, int cl, struct mfile *f, bool read_all)
{
	void *h;
	int slot;
	uint64_t size;
	hist(r, "%c %s %s (model %" PRIu64 ")", 'A' + cl, read_all ? "read" : "fstat", f->mf_rel,
	     f->mf_size);
	if (handle_get(r, cl, f, &h, &slot))
		return -1;
	int rc = r->r_subj->s_fstat_size(h, &size);
	if (check_rc(r, "fstat", rc))
		return -1;
	if (size != f->mf_size)
		return fail(r, "%s: client %c's fstat says %" PRIu64 " bytes, the model has %" PRIu64,
			    f->mf_rel, 'A' + cl, size, f->mf_size);
	if (read_all && r->r_subj->s_close_to_open) {
		void *h2;
		if (check_rc(r, "open O_RDONLY",
			     r->r_subj->s_open(r->r_subj, cl, f->mf_rel, O_RDONLY, &h2)))
			return -1;
		rc = compare(r, f, cl, h2);
		closer_put(&r->r_closer, h2);
		if (rc)
			return -1;
	} else if (read_all && compare(r, f, cl, h)) {
		return -1;
	}
	handle_done(r, cl, f, slot);
	return 0;
}

static int op_fsync(struct run *r, int cl, struct mfile *f)
{
	void *h;
	int slot;
	hist(r, "%c fsync %s", 'A' + cl, f->mf_rel);
	if (handle_get(r, cl, f, &h, &slot))
		return -1;
	if (check_rc(r, "fsync", r->r_subj->s_fsync(h)))
		return -1;
	handle_done(r, cl, f, slot);
	return 0;
}

static void op_close(struct run *r, int cl, struct mfile *f)
{
	int slot = (int)rnd(r, SLOTS);
	hist(r, "%c close %s slot %d", 'A' + cl, f->mf_rel, slot);
	if (f->mf_h[cl][slot]) {
		closer_put(&r->r_closer, f->mf_h[cl][slot]);
		f->mf_h[cl][slot] = NULL;
	}
}

/*
 * Close everything and wait; then, with no handle open anywhere, each file's
 * size by path from both clients is the one the MDS stores.
 */
static int op_drain(struct run *r)
{
	hist(r, "drain: close all, stat by path");
	for (unsigned i = 0; i < r->r_nr_files; i++)
		for (int cl = 0; cl < 2; cl++)
			for (int s = 0; s < SLOTS; s++)
				if (r->r_files[i].mf_h[cl][s]) {
					closer_put(&r->r_closer, r->r_files[i].mf_h[cl][s]);
					r->r_files[i].mf_h[cl][s] = NULL;
				}
	int rc = closer_drain(&r->r_closer);
	if (check_rc(r, "a close", rc))
		return -1;
	for (unsigned i = 0; i < r->r_nr_files; i++) {
		struct mfile *f = &r->r_files[i];
		for (int cl = 0; cl < 2; cl++) {
			uint64_t size;
			rc = r->r_subj->s_stat_size(r->r_subj, cl, f->mf_rel, &size);
			if (check_rc(r, "stat", rc))
				return -1;
			if (size != f->mf_size)
				return fail(r, "%s: with nothing open, client %c's stat says %" PRIu64
					    " bytes, the model has %" PRIu64,
					    f->mf_rel, 'A' + cl, size, f->mf_size);
		}
	}
	return 0;
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);
	return v && *v ? strtoull(v, NULL, 0) : def;
}

/*
 * Run the model on \a s: files "model/f<i>" (the directory exists), each
 * created empty by client A. \return 0 when every check held, else -1.
 */
static int model_run(struct subj *s, const char *dir)
{
	static struct run r; /* large; one run at a time */
	uint64_t nr_ops = env_u64("WEIR_MODEL_OPS", 3000);
	uint64_t drain_every = env_u64("WEIR_MODEL_DRAIN", 250);
	int rc = -1;

	memset(&r, 0, sizeof(r));
	r.r_subj = s;
	r.r_seed = env_u64("WEIR_MODEL_SEED", 1);
	r.r_rng = r.r_seed * 0x9e3779b97f4a7c15ULL + 1;
	r.r_nr_files = (unsigned)env_u64("WEIR_MODEL_FILES", 3);
	if (r.r_nr_files < 1 || r.r_nr_files > MODEL_MAX_FILES)
		r.r_nr_files = 3;
	if (!drain_every)
		drain_every = 250;
	r.r_buf = malloc(MODEL_MAX_SIZE + 64 * KIB);
	if (!r.r_buf)
		return -1;
	pthread_mutex_init(&r.r_closer.c_lock, NULL);
	pthread_cond_init(&r.r_closer.c_cond, NULL);
	r.r_closer.c_subj = s;
	if (pthread_create(&r.r_closer.c_thread, NULL, closer_main, &r.r_closer)) {
		free(r.r_buf);
		return -1;
	}
	for (unsigned i = 0; i < r.r_nr_files; i++) {
		struct mfile *f = &r.r_files[i];
		void *h;
		snprintf(f->mf_rel, sizeof(f->mf_rel), "%s/f%u", dir, i);
		f->mf_data = calloc(1, MODEL_MAX_SIZE);
		if (!f->mf_data || check_rc(&r, "create", s->s_open(s, 0, f->mf_rel,
							    O_CREAT | O_TRUNC | O_RDWR, &h)))
			goto out;
		closer_put(&r.r_closer, h);
	}
	uint64_t t0 = th_now_ms();
	for (r.r_op = 0; r.r_op < nr_ops; r.r_op++) {
		int cl = (int)rnd(&r, 2);
		struct mfile *f = &r.r_files[rnd(&r, r.r_nr_files)];
		uint64_t p = rnd(&r, 100);
		int err = 0;
		if ((r.r_op + 1) % drain_every == 0) {
			err = op_drain(&r);
			r.r_stat[MS_DRAIN]++;
		} else if (p < 34) {
			err = op_write(&r, cl, f);
			r.r_stat[MS_WRITE]++;
		} else if (p < 54) {
			err = op_truncate(&r, cl, f);
			r.r_stat[MS_TRUNC]++;
		} else if (p < 58) {
			err = op_open_trunc(&r, cl, f);
			r.r_stat[MS_OTRUNC]++;
		} else if (p < 80) {
			err = op_check(&r, cl, f, false);
			r.r_stat[MS_CHECK]++;
		} else if (p < 86) {
			err = op_check(&r, cl, f, true);
			r.r_stat[MS_READ]++;
		} else if (p < 89) {
			err = op_fsync(&r, cl, f);
			r.r_stat[MS_FSYNC]++;
		} else {
			op_close(&r, cl, f);
			r.r_stat[MS_CLOSE]++;
		}
		if (err)
			goto out;
		if (nr_ops >= 100000 && r.r_op && r.r_op % 100000 == 0)
			fprintf(stderr, "  model check (%s): %" PRIu64 " operations...\n",
				s->s_name, r.r_op);
	}
	if (op_drain(&r))
		goto out;
	for (unsigned i = 0; i < r.r_nr_files; i++) {
		void *h;
		if (check_rc(&r, "open", s->s_open(s, 1, r.r_files[i].mf_rel, O_RDONLY, &h)))
			goto out;
		int bad = compare(&r, &r.r_files[i], 1, h);
		s->s_close(h);
		if (bad)
			goto out;
	}
	fprintf(stderr,
		"  model check (%s, WEIR_MODEL_SEED=%" PRIu64 "): %" PRIu64 " operations in %.1f s"
		" (writes %" PRIu64 ", truncates %" PRIu64 ", O_TRUNC opens %" PRIu64
		", fstats %" PRIu64 ", reads %" PRIu64 ", fsyncs %" PRIu64 ", closes %" PRIu64
		", drains %" PRIu64 "): every size and byte as the model\n",
		s->s_name, r.r_seed, nr_ops, (double)(th_now_ms() - t0) / 1000.0,
		r.r_stat[MS_WRITE], r.r_stat[MS_TRUNC], r.r_stat[MS_OTRUNC], r.r_stat[MS_CHECK],
		r.r_stat[MS_READ], r.r_stat[MS_FSYNC], r.r_stat[MS_CLOSE], r.r_stat[MS_DRAIN]);
	rc = 0;
out:
	for (unsigned i = 0; i < r.r_nr_files; i++)
		for (int cl = 0; cl < 2; cl++)
			for (int sl = 0; sl < SLOTS; sl++)
				if (r.r_files[i].mf_h[cl][sl])
					closer_put(&r.r_closer, r.r_files[i].mf_h[cl][sl]);
	closer_drain(&r.r_closer);
	pthread_mutex_lock(&r.r_closer.c_lock);
	r.r_closer.c_stop = true;
	pthread_cond_broadcast(&r.r_closer.c_cond);
	pthread_mutex_unlock(&r.r_closer.c_lock);
	pthread_join(r.r_closer.c_thread, NULL);
	for (unsigned i = 0; i < r.r_nr_files; i++)
		free(r.r_files[i].mf_data);
	free(r.r_buf);
	return rc;
}

/* ------------------------------------------------------------ libweir: the CUnit suite */

static struct th_cluster *cl;

static int suite_init(void)
{
	return th_cluster_start(NULL, &cl) ? -1 : 0;
}

static int suite_clean(void)
{
	return th_cluster_stop(cl) ? -1 : 0;
}

static void test_twoclient_model_libweir_sizes_and_data_match(void)
{
	struct subj s = {
		.s_name = "libweir",
		.s_open = lw_open,
		.s_pwrite = lw_pwrite,
		.s_pread = lw_pread,
		.s_ftruncate = lw_ftruncate,
		.s_fsync = lw_fsync,
		.s_fstat_size = lw_fstat_size,
		.s_close = lw_close,
		.s_truncate = lw_truncate,
		.s_stat_size = lw_stat_size,
	};
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(th_rc("weir_mount", weir_mount(th_cluster_mds_addr(cl),
								     &s.s_fs[i])), 0);
	/* every OST, 64 KiB stripes: writes and truncates cross objects */
	CU_ASSERT_EQUAL_FATAL(th_stripe_dir(s.s_fs[0], "/model", (uint32_t)-1, 64 * KIB), 0);
	CU_ASSERT_EQUAL(model_run(&s, "model"), 0);
	CU_ASSERT_EQUAL(weir_umount(s.s_fs[0]), 0);
	CU_ASSERT_EQUAL(weir_umount(s.s_fs[1]), 0);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--paths")) {
		/* two mounts of one cluster: the files go in "model" under each */
		const char *dirs[2] = { argv[2], argv[3] };
		struct subj s = {
			.s_name = "paths",
			.s_open = px_open,
			.s_pwrite = px_pwrite,
			.s_pread = px_pread,
			.s_ftruncate = px_ftruncate,
			.s_fsync = px_fsync,
			.s_fstat_size = px_fstat_size,
			.s_close = px_close,
			.s_truncate = px_truncate,
			.s_stat_size = px_stat_size,
			.s_close_to_open = true,
			.s_dir = dirs,
		};
		char p[512];
		snprintf(p, sizeof(p), "%s/model", dirs[0]);
		if (mkdir(p, 0755) && errno != EEXIST) {
			perror(p);
			return 1;
		}
		return model_run(&s, "model") ? 1 : 0;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: %s                       (libweir, starts a cluster)\n"
				"       %s --paths DIR_A DIR_B   (two mounts of one cluster)\n",
			argv[0], argv[0]);
		return 2;
	}
	static const struct th_test tests[] = {
		TH_TEST(test_twoclient_model_libweir_sizes_and_data_match),
		TH_TEST_END,
	};
	return th_cunit_run("twoclient_model", suite_init, suite_clean, tests);
}
