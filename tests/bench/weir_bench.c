/*
 * tests/bench/weir_bench.c - weir-bench: IOR/mdtest-style workloads run
 * through libweir and, as the reference, through plain POSIX calls on a local
 * directory of the disk the OSTs use, in the same process and run.
 *
 * DESIGN. One "backend" vtable (libweir or local POSIX) runs each workload;
 * multi-process workloads fork children that each mount (or open) on their
 * own and report through a pipe. Every figure is printed next to its
 * reference and their ratio, and all of them go to a JSON file.
 * Workloads (issue "Speed"; QUICK=1 scales the sizes down):
 *   ref-tcp    loopback TCP throughput, 1 and 2 streams (built-in sender/receiver)
 *   ref-mem    memcpy bandwidth
 *   W1         one client: write (1 MiB and 16 MiB transfers, ending in fsync),
 *              cold read (page cache dropped) and warm read
 *   W2         4 processes: file-per-process and one shared file with N-1
 *              strided 1 MiB blocks, first byte to last fsync
 *   W3         4 KiB random reads, 16 in flight (threads), IOPS and p50/p99
 *   W4         create/stat/open-read-close/unlink of empty files, 1 directory
 *              and 16 directories, 1 and 4 processes; readdir and `ls -l`
 *              (readdir, lstat of each entry) entries/s
 *   W5         dataset epoch: small files written once, read shuffled by 4 processes
 *   W6         (--posix-dir) W1, 4 KiB O_DIRECT random reads (1 and 16 threads) and
 *              W4 through POSIX calls on a FUSE mount, the shim, or a peer filesystem
 *   scale      W4 stat (4 processes) and W3 against servers with 1 and with 2 cores:
 *              `--scale-run CORES` takes one sample against the cluster run.sh
 *              started for CORES (appended to --scale-samples FILE); `--only scale`
 *              reads FILE back and prints the 1-core, 2-core figures and their ratio
 *   dne        W4 create, stat and unlink from 1, 4 and 16 processes, each in a
 *              directory of its own, process r's on MDT r % M, against clusters of
 *              1, 2 and 4 MDTs (docs/dne.md, step 5): `--dne-run M` takes one
 *              sample against the cluster tests/bench/dne.sh started with M MDTs
 *              (appended to --dne-samples FILE); `--only dne` prints FILE's table
 *              and the ratios to 1 MDT
 * Timing uses CLOCK_MONOTONIC; nothing here asserts a speed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <weir/weir.h>

#define MIB (1024ULL * 1024ULL)

/* ------------------------------------------------------------ settings */

static struct {
	const char *mds;
	const char *local_dir; /* reference directory (on the OSTs' disk) */
	const char *json;
	const char *only;      /* comma list of workloads, NULL = all */
	const char *posix_dir; /* W6: run W1/W4 through POSIX calls on this directory */
	const char *label;     /* W6: "fuse" or "shim" */
	const char *ref_json;  /* W6: libweir's results.json, for the ratios */
	const char *peer_json;  /* W6: a peer filesystem's W6 JSON (same run), a column of its own */
	const char *peer_label; /* W6: the peer's --label in that file ("moosefs") */
	const char *cluster_dir; /* mem: weir-local's --dir (mds.pid, mds.log) */
	const char *scale_samples; /* scale: the samples file */
	const char *scale_pin;     /* scale: how the servers were pinned (for the table) */
	int scale_run;             /* scale: cores of the cluster to sample (1 or 2), 0 = none */
	const char *dne_samples;   /* dne: the samples file */
	int dne_run;               /* dne: MDTs of the cluster to sample, 0 = none */
	bool quick;
	uint64_t w1_bytes, w2_bytes, w3_file, w5_files, mem_files;
	uint32_t w3_secs, w4_files, nprocs, runs, scale_files;
} cfg;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool want(const char *w)
{
	if (!cfg.only)
		return true;
	const char *p = strstr(cfg.only, w);
	size_t l = strlen(w);
	return p && (p == cfg.only || p[-1] == ',') && (p[l] == 0 || p[l] == ',');
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "weir-bench: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
	exit(1);
}

/* ------------------------------------------------------------ results */

enum { MAX_RUNS = 16 };

/*
 * One figure: a sample (and its reference) per run; printed and written as
 * the median of the samples, with their min and max.
 */
struct result {
	char name[64];
	char unit[16];
	char ref_name[48];
	double v[MAX_RUNS], r[MAX_RUNS];
	int n;
	bool printed;
};
static struct result results[160];
static int nr_results;

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median of \a n values (the mean of the middle two for an even count). */
static double median(const double *x, int n)
{
	double s[MAX_RUNS];
	if (n <= 0)
		return 0;
	memcpy(s, x, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), cmp_dbl);
	return n & 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static double min_of(const double *x, int n)
{
	double m = n ? x[0] : 0;
	for (int i = 1; i < n; i++)
		m = x[i] < m ? x[i] : m;
	return m;
}

static double max_of(const double *x, int n)
{
	double m = n ? x[0] : 0;
	for (int i = 1; i < n; i++)
		m = x[i] > m ? x[i] : m;
	return m;
}

static struct result *result_find(const char *name)
{
	for (int i = 0; i < nr_results; i++)
		if (!strcmp(results[i].name, name))
			return &results[i];
	return NULL;
}

/* The median so far of figure \a name, or 0. */
static double result_median(const char *name)
{
	struct result *r = result_find(name);
	return r ? median(r->v, r->n) : 0;
}

/* Record one sample of figure \a name (and of its reference); printed by report_flush(). */
static void report(const char *name, const char *unit, double v, const char *ref_name, double ref)
{
	struct result *r = result_find(name);
	if (!r) {
		if (nr_results == (int)(sizeof(results) / sizeof(results[0])))
			return;
		r = &results[nr_results++];
		snprintf(r->name, sizeof(r->name), "%s", name);
		snprintf(r->unit, sizeof(r->unit), "%s", unit);
		snprintf(r->ref_name, sizeof(r->ref_name), "%s", ref_name ? ref_name : "-");
	}
	if (r->n == MAX_RUNS)
		return;
	r->v[r->n] = v;
	r->r[r->n] = ref;
	r->n++;
}

static double peer_lookup(const char *name);

/* Print the figures recorded since the last call: median (and min..max over the runs). */
static void report_flush(void)
{
	for (int i = 0; i < nr_results; i++) {
		struct result *r = &results[i];
		if (r->printed)
			continue;
		r->printed = true;
		double v = median(r->v, r->n), ref = median(r->r, r->n);
		char range[64] = "";
		if (r->n > 1)
			snprintf(range, sizeof(range), "  [%.1f..%.1f, %d runs]", min_of(r->v, r->n),
				 max_of(r->v, r->n), r->n);
		char pc[96] = ""; /* W6 with --peer-json: the peer's figure and ours over it */
		double peer = peer_lookup(r->name);
		if (peer > 0)
			snprintf(pc, sizeof(pc), "  vs %s %12.1f  ratio %5.2f", cfg.peer_label, peer,
				 v / peer);
		if (ref > 0)
			printf("  %-40s %12.1f %-9s  ref %-22s %12.1f  ratio %5.2f%s%s\n", r->name, v,
			       r->unit, r->ref_name, ref, v / ref, pc, range);
		else
			printf("  %-40s %12.1f %-9s%s%s\n", r->name, v, r->unit, pc, range);
	}
	fflush(stdout);
}

static void write_json(void)
{
	if (!cfg.json)
		return;
	FILE *f = fopen(cfg.json, "w");
	if (!f) {
		perror(cfg.json);
		return;
	}
	fprintf(f, "{\n  \"quick\": %s,\n  \"runs\": %u,\n  \"results\": [\n",
		cfg.quick ? "true" : "false", cfg.runs);
	for (int i = 0; i < nr_results; i++) {
		struct result *r = &results[i];
		double v = median(r->v, r->n), ref = median(r->r, r->n), peer = peer_lookup(r->name);
		fprintf(f, "    {\"name\": \"%s\", \"unit\": \"%s\", \"value\": %.3f, "
			   "\"min\": %.3f, \"max\": %.3f, \"runs\": %d, "
			   "\"reference\": \"%s\", \"reference_value\": %.3f, \"ratio\": %.4f",
			r->name, r->unit, v, min_of(r->v, r->n), max_of(r->v, r->n), r->n,
			r->ref_name, ref, ref > 0 ? v / ref : 0.0);
		if (peer > 0)
			fprintf(f, ", \"peer\": \"%s\", \"peer_value\": %.3f, \"peer_ratio\": %.4f",
				cfg.peer_label, peer, v / peer);
		fprintf(f, "}%s\n", i + 1 < nr_results ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	fclose(f);
}

/* WEIR_BENCH_TRACE=1: phase boundaries on stderr in CLOCK_MONOTONIC seconds (for perf --time). */
static void trace(const char *what, double t0, double t1)
{
	if (getenv("WEIR_BENCH_TRACE"))
		fprintf(stderr, "trace %-32s %.6f %.6f\n", what, t0, t1);
}

/* ------------------------------------------------------------ backends */

struct be_file;
struct backend {
	const char *name;
	int (*init)(void);            /* per process */
	void (*fini)(void);
	int (*open)(const char *path, int flags, struct be_file **f);
	ssize_t (*pwrite)(struct be_file *f, const void *b, size_t n, uint64_t off);
	ssize_t (*pread)(struct be_file *f, void *b, size_t n, uint64_t off);
	int (*fsync)(struct be_file *f);
	int (*close)(struct be_file *f);
	int (*stat)(const char *path, struct stat *st);
	int (*unlink)(const char *path);
	int (*mkdir)(const char *path);
	int (*rmdir)(const char *path);
	long (*count_dir)(const char *path); /* readdir all entries, return the count */
	long (*ls_l)(const char *path);      /* readdir and lstat each entry, as `ls -l` */
	void (*path)(char *out, size_t len, const char *rel);
};

/* libweir */
static weir_fs_t *wfs;
static int w_init(void)
{
	return weir_mount(cfg.mds, &wfs);
}
static void w_fini(void)
{
	weir_umount(wfs);
	wfs = NULL;
}
static int w_open(const char *p, int fl, struct be_file **f)
{
	return weir_open(wfs, p, fl, 0644, (weir_file_t **)f);
}
static ssize_t w_pwrite(struct be_file *f, const void *b, size_t n, uint64_t off)
{
	return weir_pwrite((weir_file_t *)f, b, n, off);
}
static ssize_t w_pread(struct be_file *f, void *b, size_t n, uint64_t off)
{
	return weir_pread((weir_file_t *)f, b, n, off);
}
static int w_fsync(struct be_file *f)
{
	return weir_fsync((weir_file_t *)f);
}
static int w_close(struct be_file *f)
{
	return weir_close((weir_file_t *)f);
}
static int w_stat(const char *p, struct stat *st)
{
	return weir_stat(wfs, p, st);
}
static int w_unlink(const char *p)
{
	return weir_unlink(wfs, p);
}
static int w_mkdir(const char *p)
{
	int rc = weir_mkdir(wfs, p, 0755);
	return rc == -EEXIST ? 0 : rc;
}
static int w_rmdir(const char *p)
{
	return weir_rmdir(wfs, p);
}
static long w_count_dir(const char *p)
{
	weir_dir_t *d;
	struct weir_dirent e;
	long n = 0;
	int rc = weir_opendir(wfs, p, &d);
	if (rc)
		return rc;
	while ((rc = weir_readdir(d, &e)) == 1)
		n++;
	weir_closedir(d);
	return rc < 0 ? rc : n;
}
/* `ls -l` through libweir: readdirplus pages, then each entry's attributes by FID */
static long w_ls_l(const char *p)
{
	weir_dir_t *d;
	struct weir_dirent e;
	struct stat st;
	long n = 0;
	int rc = weir_opendir(wfs, p, &d);
	if (rc)
		return rc;
	weir_dir_plus(d, 1);
	while ((rc = weir_readdir(d, &e)) == 1) {
		if (!strcmp(e.d_name, ".") || !strcmp(e.d_name, ".."))
			continue;
		if ((rc = weir_fid_getattr(wfs, &e.d_fid, &st)))
			break;
		n++;
	}
	weir_closedir(d);
	return rc < 0 ? rc : n;
}
static void w_path(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "/bench/%s", rel);
}

/* local POSIX directory */
static int l_init(void)
{
	return 0;
}
static void l_fini(void)
{
}
static int l_open(const char *p, int fl, struct be_file **f)
{
	int fd = open(p, fl | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	*f = (struct be_file *)(intptr_t)(fd + 1);
	return 0;
}
static int l_fd(struct be_file *f)
{
	return (int)(intptr_t)f - 1;
}
static ssize_t l_pwrite(struct be_file *f, const void *b, size_t n, uint64_t off)
{
	ssize_t r = pwrite(l_fd(f), b, n, (off_t)off);
	return r < 0 ? -errno : r;
}
static ssize_t l_pread(struct be_file *f, void *b, size_t n, uint64_t off)
{
	ssize_t r = pread(l_fd(f), b, n, (off_t)off);
	return r < 0 ? -errno : r;
}
static int l_fsync(struct be_file *f)
{
	return fsync(l_fd(f)) ? -errno : 0;
}
static int l_close(struct be_file *f)
{
	return close(l_fd(f)) ? -errno : 0;
}
static int l_stat(const char *p, struct stat *st)
{
	return stat(p, st) ? -errno : 0;
}
static int l_unlink(const char *p)
{
	return unlink(p) ? -errno : 0;
}
static int l_mkdir(const char *p)
{
	return mkdir(p, 0755) && errno != EEXIST ? -errno : 0;
}
static int l_rmdir(const char *p)
{
	return rmdir(p) ? -errno : 0;
}
#include <dirent.h>
static long l_count_dir(const char *p)
{
	DIR *d = opendir(p);
	long n = 0;
	if (!d)
		return -errno;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}
static long l_ls_l(const char *p)
{
	DIR *d = opendir(p);
	struct dirent *de;
	struct stat st;
	long n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
			n = -errno;
			break;
		}
		n++;
	}
	closedir(d);
	return n;
}
static void l_path(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "%s/%s", cfg.local_dir, rel);
}

static const struct backend be_weir = { "weir", w_init, w_fini, w_open, w_pwrite, w_pread,
					 w_fsync, w_close, w_stat, w_unlink, w_mkdir, w_rmdir,
					 w_count_dir, w_ls_l, w_path };
static const struct backend be_local = { "local", l_init, l_fini, l_open, l_pwrite, l_pread,
					  l_fsync, l_close, l_stat, l_unlink, l_mkdir, l_rmdir,
					  l_count_dir, l_ls_l, l_path };

static void drop_caches(void)
{
	sync();
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd >= 0) {
		ssize_t w = write(fd, "3\n", 2);
		(void)w;
		close(fd);
	}
}

static void fill(uint8_t *b, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(b + i, &x, 8);
	}
}

/* ------------------------------------------------------------ references */

static double ref_memcpy(void)
{
	size_t n = 256 * MIB;
	uint8_t *a = malloc(n), *b = malloc(n);
	if (!a || !b)
		die("malloc", -ENOMEM);
	memset(a, 1, n);
	memset(b, 2, n);
	double t0 = now_s();
	int reps = cfg.quick ? 4 : 16;
	for (int i = 0; i < reps; i++)
		memcpy(i & 1 ? a : b, i & 1 ? b : a, n);
	double t = now_s() - t0;
	free(a);
	free(b);
	return (double)n * reps / t / 1e6;
}

/* Loopback TCP: \a streams sender processes to one receiver each; MB/s total. */
static double ref_tcp(int streams)
{
	uint64_t per = (cfg.quick ? 512 : 2048) * MIB / (uint64_t)streams;
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 16) ||
	    getsockname(lfd, (struct sockaddr *)&a, &al))
		die("loopback listen", -errno);
	int pfd[2];
	if (pipe(pfd))
		die("pipe", -errno);
	for (int s = 0; s < streams; s++) {
		if (fork() == 0) { /* receiver */
			int c = accept(lfd, NULL, NULL);
			char *buf = malloc(MIB);
			uint64_t got = 0;
			ssize_t r;
			while (buf && (r = read(c, buf, MIB)) > 0)
				got += (uint64_t)r;
			_exit(got == per ? 0 : 1);
		}
	}
	double t0 = now_s();
	for (int s = 0; s < streams; s++) {
		if (fork() == 0) { /* sender */
			int c = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(c, (struct sockaddr *)&a, sizeof(a)))
				_exit(2);
			char *buf = malloc(MIB);
			memset(buf, 7, MIB);
			for (uint64_t left = per; left;) {
				ssize_t w = write(c, buf, left < MIB ? left : MIB);
				if (w <= 0)
					_exit(3);
				left -= (uint64_t)w;
			}
			close(c);
			_exit(0);
		}
	}
	int bad = 0, st;
	for (int i = 0; i < 2 * streams; i++) {
		wait(&st);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	double t = now_s() - t0;
	close(lfd);
	close(pfd[0]);
	close(pfd[1]);
	if (bad)
		fprintf(stderr, "weir-bench: loopback reference: a stream failed\n");
	return (double)per * streams / t / 1e6;
}

/* ------------------------------------------------------------ W1 streaming */

static double w1_write(const struct backend *be, const char *rel, size_t xfer, uint64_t total)
{
	char p[512];
	struct be_file *f;
	uint8_t *buf = aligned_alloc(4096, xfer);
	fill(buf, xfer, 1);
	be->path(p, sizeof(p), rel);
	int rc = be->open(p, O_CREAT | O_WRONLY | O_TRUNC, &f);
	if (rc)
		die(p, rc);
	double t0 = now_s();
	for (uint64_t off = 0; off < total; off += xfer) {
		ssize_t n = be->pwrite(f, buf, xfer, off);
		if (n != (ssize_t)xfer)
			die("W1 write", n < 0 ? (int)n : -EIO);
	}
	rc = be->fsync(f);
	double t = now_s() - t0;
	if (rc)
		die("W1 fsync", rc);
	be->close(f);
	free(buf);
	return (double)total / t / 1e6;
}

static double w1_read(const struct backend *be, const char *rel, size_t xfer, uint64_t total)
{
	char p[512];
	struct be_file *f;
	uint8_t *buf = aligned_alloc(4096, xfer);
	be->path(p, sizeof(p), rel);
	int rc = be->open(p, O_RDONLY, &f);
	if (rc)
		die(p, rc);
	double t0 = now_s();
	for (uint64_t off = 0; off < total; off += xfer) {
		ssize_t n = be->pread(f, buf, xfer, off);
		if (n != (ssize_t)xfer)
			die("W1 read", n < 0 ? (int)n : -EIO);
	}
	double t = now_s() - t0;
	be->close(f);
	free(buf);
	return (double)total / t / 1e6;
}

static void run_w1(double tcp1)
{
	const size_t xfers[2] = { MIB, 16 * MIB };
	for (int i = 0; i < 2; i++) {
		char nm[64];
		double wl, ww, rl, rw, wrm;
		be_local.init();
		wl = w1_write(&be_local, "w1.dat", xfers[i], cfg.w1_bytes);
		drop_caches();
		rl = w1_read(&be_local, "w1.dat", xfers[i], cfg.w1_bytes);
		char lp[512];
		be_local.path(lp, sizeof(lp), "w1.dat");
		unlink(lp);
		if (w_init())
			die("mount", -ECONNREFUSED);
		ww = w1_write(&be_weir, "w1.dat", xfers[i], cfg.w1_bytes);
		drop_caches();
		rw = w1_read(&be_weir, "w1.dat", xfers[i], cfg.w1_bytes);
		wrm = w1_read(&be_weir, "w1.dat", xfers[i], cfg.w1_bytes);
		char wp[512];
		be_weir.path(wp, sizeof(wp), "w1.dat");
		weir_unlink(wfs, wp);
		w_fini();
		snprintf(nm, sizeof(nm), "W1 write+fsync %zuMiB xfer", (size_t)(xfers[i] / MIB));
		report(nm, "MB/s", ww, "local dir", wl);
		snprintf(nm, sizeof(nm), "W1 cold read %zuMiB xfer", (size_t)(xfers[i] / MIB));
		report(nm, "MB/s", rw, "local dir", rl);
		snprintf(nm, sizeof(nm), "W1 warm read %zuMiB xfer", (size_t)(xfers[i] / MIB));
		report(nm, "MB/s", wrm, "loopback TCP 1 stream", tcp1);
	}
}

/* ------------------------------------------------------------ W2 checkpoint burst */

/* Each of cfg.nprocs children writes its share; \return GB/s from first byte to last fsync. */
static double w2_run(const struct backend *be, bool shared)
{
	int pfd[2];
	if (pipe(pfd))
		die("pipe", -errno);
	uint64_t per = cfg.w2_bytes;
	double t0 = now_s();
	for (uint32_t r = 0; r < cfg.nprocs; r++) {
		if (fork() == 0) {
			char rel[64], p[512];
			struct be_file *f;
			if (be->init())
				_exit(2);
			snprintf(rel, sizeof(rel), shared ? "w2.shared" : "w2.%u", r);
			be->path(p, sizeof(p), rel);
			if (be->open(p, O_CREAT | O_WRONLY, &f))
				_exit(3);
			uint8_t *buf = malloc(MIB);
			fill(buf, MIB, r);
			for (uint64_t i = 0; i < per / MIB; i++) {
				uint64_t off = shared ? (i * cfg.nprocs + r) * MIB : i * MIB;
				if (be->pwrite(f, buf, MIB, off) != (ssize_t)MIB)
					_exit(4);
			}
			if (be->fsync(f) || be->close(f))
				_exit(5);
			be->fini();
			_exit(0);
		}
	}
	int bad = 0, st;
	for (uint32_t r = 0; r < cfg.nprocs; r++) {
		wait(&st);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	double t = now_s() - t0;
	close(pfd[0]);
	close(pfd[1]);
	if (bad)
		die("W2 child failed", -EIO);
	return (double)per * cfg.nprocs / t / 1e6;
}

static void w2_cleanup(const struct backend *be)
{
	char p[512], rel[64];
	be->init();
	for (uint32_t r = 0; r < cfg.nprocs; r++) {
		snprintf(rel, sizeof(rel), "w2.%u", r);
		be->path(p, sizeof(p), rel);
		be->unlink(p);
	}
	be->path(p, sizeof(p), "w2.shared");
	be->unlink(p);
	be->fini();
}

static void run_w2(double w1_write_ref)
{
	double fpp = w2_run(&be_weir, false);
	w2_cleanup(&be_weir);
	double shr = w2_run(&be_weir, true);
	w2_cleanup(&be_weir);
	double lfpp = w2_run(&be_local, false);
	w2_cleanup(&be_local);
	report("W2 burst file-per-process", "MB/s", fpp, "W1 write (weir)", w1_write_ref);
	report("W2 burst shared N-1 strided", "MB/s", shr, "W1 write (weir)", w1_write_ref);
	report("W2 burst file-per-process (local)", "MB/s", lfpp, NULL, 0);
}

/* ------------------------------------------------------------ W3 random read */

struct w3_arg {
	const struct backend *be;
	struct be_file *f;
	double deadline;
	uint64_t n;
	uint32_t *lat_us; /* samples */
	uint64_t cap;
	unsigned seed;
};

static void *w3_thread(void *p)
{
	struct w3_arg *a = p;
	uint8_t buf[4096];
	uint64_t blocks = cfg.w3_file / 4096;
	while (now_s() < a->deadline) {
		uint64_t off = ((uint64_t)rand_r(&a->seed) * 65536ULL + (uint64_t)rand_r(&a->seed)) %
			       blocks * 4096;
		double t0 = now_s();
		if (a->be->pread(a->f, buf, 4096, off) != 4096)
			break;
		if (a->n < a->cap)
			a->lat_us[a->n] = (uint32_t)((now_s() - t0) * 1e6);
		a->n++;
	}
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* W3 on \a be (a fresh file, page cache dropped): \a fig gets IOPS, p50 and p99 in us. */
static void w3_measure(const struct backend *be, const char *label, double fig[3])
{
	char p[512];
	struct be_file *f;
	be->path(p, sizeof(p), "w3.dat");
	/* the file */
	int rc = be->open(p, O_CREAT | O_WRONLY | O_TRUNC, &f);
	if (rc)
		die(p, rc);
	uint8_t *buf = malloc(16 * MIB);
	fill(buf, 16 * MIB, 3);
	for (uint64_t off = 0; off < cfg.w3_file; off += 16 * MIB)
		if (be->pwrite(f, buf, 16 * MIB, off) != (ssize_t)(16 * MIB))
			die("W3 fill", -EIO);
	be->fsync(f);
	be->close(f);
	free(buf);
	drop_caches();
	if (be->open(p, O_RDONLY, &f))
		die(p, -EIO);
	enum { T = 16 };
	struct w3_arg args[T];
	pthread_t th[T];
	double dl = now_s() + cfg.w3_secs;
	for (int i = 0; i < T; i++) {
		args[i] = (struct w3_arg){ be, f, dl, 0, NULL, 1 << 20, (unsigned)i * 7919 + 1 };
		args[i].lat_us = malloc(sizeof(uint32_t) * args[i].cap);
		pthread_create(&th[i], NULL, w3_thread, &args[i]);
	}
	uint64_t total = 0, ns = 0;
	double t0 = dl - cfg.w3_secs;
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		total += args[i].n;
		ns += args[i].n < args[i].cap ? args[i].n : args[i].cap;
	}
	uint32_t *all = malloc(sizeof(uint32_t) * (ns ? ns : 1));
	uint64_t k = 0;
	for (int i = 0; i < T; i++) {
		uint64_t m = args[i].n < args[i].cap ? args[i].n : args[i].cap;
		memcpy(all + k, args[i].lat_us, m * sizeof(uint32_t));
		k += m;
		free(args[i].lat_us);
	}
	qsort(all, ns, sizeof(uint32_t), cmp_u32);
	char nm[64];
	snprintf(nm, sizeof(nm), "W3 (%s)", label);
	trace(nm, t0, now_s());
	fig[0] = (double)total / cfg.w3_secs;
	fig[1] = ns ? all[ns / 2] : 0;
	fig[2] = ns ? all[ns * 99 / 100] : 0;
	free(all);
	be->close(f);
	be->unlink(p);
}

static void w3_run(const struct backend *be, const char *label)
{
	char nm[64];
	double fig[3];
	w3_measure(be, label, fig);
	snprintf(nm, sizeof(nm), "W3 4KiB random read IOPS (%s)", label);
	report(nm, "IOPS", fig[0], NULL, 0);
	snprintf(nm, sizeof(nm), "W3 p50 latency (%s)", label);
	report(nm, "us", fig[1], NULL, 0);
	snprintf(nm, sizeof(nm), "W3 p99 latency (%s)", label);
	report(nm, "us", fig[2], NULL, 0);
}

/* ------------------------------------------------------------ W4 metadata */

enum { W4_CREATE, W4_STAT, W4_ORC, W4_UNLINK, W4_NR };
static const char *w4_names[W4_NR] = { "create", "stat", "open-read-close", "unlink" };

/* Child \a r of \a nprocs runs phase \a ph over its share of files. */
static int w4_child(const struct backend *be, int ph, uint32_t r, uint32_t nprocs, uint32_t ndirs)
{
	char p[512], rel[96];
	for (uint32_t i = r; i < cfg.w4_files; i += nprocs) {
		snprintf(rel, sizeof(rel), "w4/d%u/f%u", i % ndirs, i);
		be->path(p, sizeof(p), rel);
		struct be_file *f;
		struct stat st;
		uint8_t b[16];
		int rc = 0;
		switch (ph) {
		case W4_CREATE:
			rc = be->open(p, O_CREAT | O_EXCL | O_WRONLY, &f);
			if (!rc)
				rc = be->close(f);
			break;
		case W4_STAT:
			rc = be->stat(p, &st);
			break;
		case W4_ORC:
			rc = be->open(p, O_RDONLY, &f);
			if (!rc) {
				be->pread(f, b, sizeof(b), 0);
				rc = be->close(f);
			}
			break;
		case W4_UNLINK:
			rc = be->unlink(p);
			break;
		}
		if (rc)
			return 1;
	}
	return 0;
}

static double w4_phase(const struct backend *be, int ph, uint32_t nprocs, uint32_t ndirs)
{
	double t0 = now_s();
	for (uint32_t r = 0; r < nprocs; r++) {
		if (fork() == 0) {
			if (be->init())
				_exit(2);
			int rc = w4_child(be, ph, r, nprocs, ndirs);
			be->fini();
			_exit(rc);
		}
	}
	int bad = 0, st;
	for (uint32_t r = 0; r < nprocs; r++) {
		wait(&st);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	if (bad)
		die("W4 child failed", -EIO);
	double t1 = now_s();
	char nm[64];
	snprintf(nm, sizeof(nm), "W4 %s %s %up %udir", be->name, w4_names[ph], nprocs, ndirs);
	trace(nm, t0, t1);
	return cfg.w4_files / (t1 - t0);
}

/*
 * Repeated stats: \a nprocs processes each mount, stat their share of the
 * cfg.w4_files files of w4/d0 once (cold), wait for each other, then stat
 * it W4_AGAIN_PASSES times more, timed. \return the warm stats/s of all together: every warm stat over
 * the span from the first process's start to the last one's end (each
 * process notes its own in a shared page).
 */
#define W4_AGAIN_PASSES 5
static double w4_stat_again(const struct backend *be, uint32_t nprocs)
{
	double *span = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (span == MAP_FAILED)
		die("W4 stat again: mmap", -errno);
	uint32_t *ready = (uint32_t *)&span[510]; /* (span uses 2 x 256 doubles at most) */
	*ready = 0;
	nprocs = nprocs > 200 ? 200 : nprocs; /* span and the barrier share one page */
	for (uint32_t r = 0; r < nprocs; r++) {
		if (fork() == 0) {
			if (be->init() || w4_child(be, W4_STAT, r, nprocs, 1))
				_exit(2);
			/* every process cold first: the others' cold passes load the MDS */
			__atomic_add_fetch(ready, 1, __ATOMIC_SEQ_CST);
			while (__atomic_load_n(ready, __ATOMIC_SEQ_CST) < nprocs)
				usleep(1000);
			span[2 * r] = now_s();
			for (int k = 0; k < W4_AGAIN_PASSES; k++)
				if (w4_child(be, W4_STAT, r, nprocs, 1))
					_exit(1);
			span[2 * r + 1] = now_s();
			be->fini();
			_exit(0);
		}
	}
	int bad = 0, st;
	for (uint32_t r = 0; r < nprocs; r++) {
		wait(&st);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	if (bad)
		die("W4 stat again: a child failed", -EIO);
	double t0 = span[0], t1 = span[1];
	for (uint32_t r = 1; r < nprocs; r++) {
		t0 = span[2 * r] < t0 ? span[2 * r] : t0;
		t1 = span[2 * r + 1] > t1 ? span[2 * r + 1] : t1;
	}
	munmap(span, 4096);
	char nm[64];
	snprintf(nm, sizeof(nm), "W4 %s stat again %up 1dir", be->name, nprocs);
	trace(nm, t0, t1);
	return (double)cfg.w4_files * W4_AGAIN_PASSES / (t1 - t0);
}

/*
 * `ls -l` (readdir, then lstat of each entry) and a plain readdir of the
 * directory \a rel of \a be, full of cfg.w4_files files: entries/s into
 * \a ls_rate and \a readdir_rate.
 */
static void w4_listings(const struct backend *be, const char *rel, double *ls_rate,
			double *readdir_rate)
{
	char p[512];
	be->init();
	be->path(p, sizeof(p), rel);
	double t0 = now_s();
	long n = be->ls_l(p);
	double t1 = now_s();
	if (n < 0)
		die("W4 ls -l", (int)n);
	*ls_rate = n / (t1 - t0);
	n = be->count_dir(p);
	if (n < 0)
		die("W4 readdir", (int)n);
	*readdir_rate = n / (now_s() - t1);
	be->fini();
}

static void w4_run(const struct backend *be, double *out /* [2 procs][2 layouts][W4_NR] */,
		   double *readdir_rate, double *ls_rate, double *again /* [2 procs] */)
{
	char p[512], rel[64];
	uint32_t procs[2] = { 1, cfg.nprocs }, dirs[2] = { 1, 16 };
	be->init();
	be->path(p, sizeof(p), "w4");
	be->mkdir(p);
	for (uint32_t d = 0; d < 16; d++) {
		snprintf(rel, sizeof(rel), "w4/d%u", d);
		be->path(p, sizeof(p), rel);
		be->mkdir(p);
	}
	be->fini();
	for (int pi = 0; pi < 2; pi++)
		for (int di = 0; di < 2; di++)
			for (int ph = 0; ph < W4_NR; ph++) {
				out[(pi * 2 + di) * W4_NR + ph] = w4_phase(be, ph, procs[pi], dirs[di]);
				if (ph == W4_ORC && pi == 0 && di == 0) /* the big directory, full */
					w4_listings(be, "w4/d0", ls_rate, readdir_rate);
				if (ph == W4_STAT && di == 0)
					again[pi] = w4_stat_again(be, procs[pi]);
			}
}

static void run_w4(void)
{
	double w[16], l[16], wr = 0, lr = 0, wls = 0, lls = 0, wa[2] = { 0, 0 }, la[2] = { 0, 0 };
	w4_run(&be_weir, w, &wr, &wls, wa);
	w4_run(&be_local, l, &lr, &lls, la);
	uint32_t procs[2] = { 1, cfg.nprocs }, dirs[2] = { 1, 16 };
	for (int pi = 0; pi < 2; pi++)
		for (int di = 0; di < 2; di++)
			for (int ph = 0; ph < W4_NR; ph++) {
				char nm[64];
				snprintf(nm, sizeof(nm), "W4 %s %up %udir", w4_names[ph], procs[pi],
					 dirs[di]);
				int k = (pi * 2 + di) * W4_NR + ph;
				report(nm, "ops/s", w[k], "local dir", l[k]);
			}
	report("W4 readdir", "entries/s", wr, "local dir", lr);
	report("W4 ls -l", "entries/s", wls, "local dir", lls);
	for (int pi = 0; pi < 2; pi++) {
		char nm[64];
		snprintf(nm, sizeof(nm), "W4 stat again %up 1dir", procs[pi]);
		report(nm, "ops/s", wa[pi], "local dir", la[pi]);
	}
}

/* ------------------------------------------------------------ W5 dataset epoch */

static double w5_run(const struct backend *be, double *files_s)
{
	char p[512], rel[64];
	uint64_t n = cfg.w5_files;
	const size_t fsz = 128 * 1024;
	uint8_t *buf = malloc(fsz);
	fill(buf, fsz, 5);
	be->init();
	be->path(p, sizeof(p), "w5");
	be->mkdir(p);
	for (uint64_t i = 0; i < n; i++) {
		struct be_file *f;
		snprintf(rel, sizeof(rel), "w5/s%06llu", (unsigned long long)i);
		be->path(p, sizeof(p), rel);
		if (be->open(p, O_CREAT | O_WRONLY | O_TRUNC, &f) ||
		    be->pwrite(f, buf, fsz, 0) != (ssize_t)fsz || be->close(f))
			die("W5 write", -EIO);
	}
	be->fini();
	drop_caches();
	double t0 = now_s();
	for (uint32_t r = 0; r < cfg.nprocs; r++) {
		if (fork() == 0) {
			if (be->init())
				_exit(2);
			unsigned seed = r + 1;
			uint8_t *b = malloc(fsz);
			for (uint64_t i = r; i < n; i += cfg.nprocs) {
				struct be_file *f;
				uint64_t k = ((uint64_t)rand_r(&seed) * 65536 + (uint64_t)rand_r(&seed)) % n;
				snprintf(rel, sizeof(rel), "w5/s%06llu", (unsigned long long)k);
				be->path(p, sizeof(p), rel);
				if (be->open(p, O_RDONLY, &f) || be->pread(f, b, fsz, 0) != (ssize_t)fsz ||
				    be->close(f))
					_exit(3);
			}
			be->fini();
			_exit(0);
		}
	}
	int bad = 0, st;
	for (uint32_t r = 0; r < cfg.nprocs; r++) {
		wait(&st);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	double t = now_s() - t0;
	if (bad)
		die("W5 reader failed", -EIO);
	be->init();
	for (uint64_t i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "w5/s%06llu", (unsigned long long)i);
		be->path(p, sizeof(p), rel);
		be->unlink(p);
	}
	be->fini();
	free(buf);
	*files_s = n / t;
	return (double)n * fsz / t / 1e6;
}

static void run_w5(void)
{
	double wf, lf;
	double wm = w5_run(&be_weir, &wf);
	double lm = w5_run(&be_local, &lf);
	report("W5 epoch shuffled read files", "files/s", wf, "local dir", lf);
	report("W5 epoch shuffled read bytes", "MB/s", wm, "local dir", lm);
}

/* ------------------------------------------------------------ W6 ways in */

/* The value of figure \a name in the JSON file \a path (read once into *\a doc), or 0. */
static double json_lookup(const char *path, char **doc, const char *name)
{
	if (!*doc && path) {
		FILE *f = fopen(path, "r");
		if (f) {
			*doc = calloc(1, 1 << 20);
			if (*doc)
				fread(*doc, 1, (1 << 20) - 1, f);
			fclose(f);
		}
	}
	if (!*doc)
		return 0;
	char key[128];
	snprintf(key, sizeof(key), "\"name\": \"%s\"", name);
	const char *p = strstr(*doc, key);
	if (!p || !(p = strstr(p, "\"value\": ")))
		return 0;
	return strtod(p + 9, NULL);
}

/* The value of figure \a name in the libweir run's JSON, or 0. */
static double ref_lookup(const char *name)
{
	static char *doc;
	return json_lookup(cfg.ref_json, &doc, name);
}

/*
 * W6 figure \a name ("W6 LABEL rest") as the peer measured it ("W6 PEER
 * rest", from --peer-json), or 0 (no peer, not a W6 figure, not in the file).
 */
static double peer_lookup(const char *name)
{
	static char *doc;
	char pre[64], pname[128];
	if (!cfg.peer_json || !cfg.peer_label || !cfg.label)
		return 0;
	snprintf(pre, sizeof(pre), "W6 %s ", cfg.label);
	if (strncmp(name, pre, strlen(pre)))
		return 0;
	snprintf(pname, sizeof(pname), "W6 %s %s", cfg.peer_label, name + strlen(pre));
	return json_lookup(cfg.peer_json, &doc, pname);
}

/* One W6 random reader: 4 KiB preads with O_DIRECT on its own descriptor. */
struct w6_rr {
	const char *rr_path;
	uint64_t rr_size;  /* bytes of the file */
	double rr_until;   /* now_s() at which to stop */
	uint64_t rr_seed;
	uint64_t rr_ops;   /* out: reads of 4 KiB done */
	int rr_err;        /* out: 0 or -errno */
	pthread_t rr_th;
};

static void *w6_rr_thread(void *p)
{
	struct w6_rr *a = p;
	void *buf = NULL;
	int fd = open(a->rr_path, O_RDONLY | O_DIRECT);
	if (fd < 0) {
		a->rr_err = -errno;
		return NULL;
	}
	if (posix_memalign(&buf, 4096, 4096)) {
		close(fd);
		a->rr_err = -ENOMEM;
		return NULL;
	}
	uint64_t blocks = a->rr_size / 4096, x = a->rr_seed * 0x9e3779b97f4a7c15ULL + 1;
	while (!a->rr_err && now_s() < a->rr_until) {
		for (int k = 0; k < 16; k++) { /* the clock every 16 reads */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			ssize_t n = pread(fd, buf, 4096, (off_t)((x % blocks) * 4096));
			if (n != 4096) {
				a->rr_err = n < 0 ? -errno : -EIO;
				break;
			}
			a->rr_ops++;
		}
	}
	free(buf);
	close(fd);
	return NULL;
}

/*
 * W6: 4 KiB reads at random aligned offsets of \a path (\a size bytes)
 * with O_DIRECT (no page cache: each read reaches the filesystem), from
 * \a nthreads threads at once (the reads in flight), for \a secs seconds.
 * \return reads/s, or 0 when the filesystem refuses O_DIRECT (\a err: why).
 */
static double w6_randread(const char *path, uint64_t size, int nthreads, double secs, int *err)
{
	struct w6_rr rr[16];
	double t0 = now_s();
	uint64_t ops = 0;
	*err = 0;
	nthreads = nthreads > 16 ? 16 : nthreads;
	for (int i = 0; i < nthreads; i++) {
		rr[i] = (struct w6_rr){ .rr_path = path, .rr_size = size, .rr_until = t0 + secs,
					.rr_seed = 77 + (uint64_t)i };
		if (pthread_create(&rr[i].rr_th, NULL, w6_rr_thread, &rr[i]))
			die("W6 randread: pthread_create", -EAGAIN);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(rr[i].rr_th, NULL);
		ops += rr[i].rr_ops;
		if (rr[i].rr_err && !*err)
			*err = rr[i].rr_err;
	}
	return *err ? 0 : (double)ops / (now_s() - t0);
}

/*
 * W6: W1 (1 MiB transfers), 4 KiB random reads with O_DIRECT (1 and 16 in
 * flight, on W1's file) and W4 (one process, one directory) through POSIX
 * calls on cfg.posix_dir -- a FUSE mount, or a path the LD_PRELOAD shim
 * serves -- each next to libweir's figure from the same `make bench`.
 */
static void run_w6(void)
{
	char nm[96], ref[96];
	cfg.local_dir = cfg.posix_dir;
	mkdir(cfg.posix_dir, 0755);
	double w = w1_write(&be_local, "w1.dat", MIB, cfg.w1_bytes);
	drop_caches();
	double rc = w1_read(&be_local, "w1.dat", MIB, cfg.w1_bytes);
	double rw = w1_read(&be_local, "w1.dat", MIB, cfg.w1_bytes);
	char p[512];
	be_local.path(p, sizeof(p), "w1.dat");
	static const int rr_threads[] = { 1, 16 };
	double rr[2];
	int rr_err = 0;
	for (int i = 0; i < 2 && !rr_err; i++)
		rr[i] = w6_randread(p, cfg.w1_bytes, rr_threads[i], cfg.quick ? 3 : 10, &rr_err);
	unlink(p);
	snprintf(nm, sizeof(nm), "W6 %s W1 write+fsync 1MiB", cfg.label);
	report(nm, "MB/s", w, "libweir", ref_lookup("W1 write+fsync 1MiB xfer"));
	snprintf(nm, sizeof(nm), "W6 %s W1 cold read 1MiB", cfg.label);
	report(nm, "MB/s", rc, "libweir", ref_lookup("W1 cold read 1MiB xfer"));
	snprintf(nm, sizeof(nm), "W6 %s W1 warm read 1MiB", cfg.label);
	report(nm, "MB/s", rw, "libweir", ref_lookup("W1 warm read 1MiB xfer"));
	if (rr_err) {
		printf("  W6 %s randread 4KiB O_DIRECT: skipped (%s)\n", cfg.label,
		       strerror(-rr_err));
	} else {
		for (int i = 0; i < 2; i++) {
			snprintf(nm, sizeof(nm), "W6 %s randread 4KiB O_DIRECT %d in flight",
				 cfg.label, rr_threads[i]);
			report(nm, "IOPS", rr[i], NULL, 0);
		}
	}
	be_local.path(p, sizeof(p), "w4");
	mkdir(p, 0755);
	be_local.path(p, sizeof(p), "w4/d0");
	mkdir(p, 0755);
	for (int ph = 0; ph < W4_NR; ph++) {
		double t0 = now_s();
		if (w4_child(&be_local, ph, 0, 1, 1))
			die("W6 metadata", -EIO);
		double r = cfg.w4_files / (now_s() - t0);
		snprintf(nm, sizeof(nm), "W6 %s W4 %s 1p 1dir", cfg.label, w4_names[ph]);
		snprintf(ref, sizeof(ref), "W4 %s 1p 1dir", w4_names[ph]);
		report(nm, "ops/s", r, "libweir", ref_lookup(ref));
		if (ph == W4_ORC) { /* the directory full: ls -l, then readdir */
			double ls, rd;
			w4_listings(&be_local, "w4/d0", &ls, &rd);
			snprintf(nm, sizeof(nm), "W6 %s W4 ls -l", cfg.label);
			report(nm, "entries/s", ls, "libweir", ref_lookup("W4 ls -l"));
			snprintf(nm, sizeof(nm), "W6 %s W4 readdir", cfg.label);
			report(nm, "entries/s", rd, "libweir", ref_lookup("W4 readdir"));
		}
	}
}

/* ------------------------------------------------------------ memory */

/* Field \a key ("VmRSS", "VmHWM") of /proc/PID/status (\a pid 0: this process) in KiB, or -1. */
static long proc_kib(pid_t pid, const char *key)
{
	char p[64], line[256];
	long v = -1;
	size_t kl = strlen(key);
	if (pid)
		snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	else
		snprintf(p, sizeof(p), "/proc/self/status");
	FILE *f = fopen(p, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* The weir-mds pid weir-local recorded in cfg.cluster_dir, or 0. */
static pid_t mds_pid(void)
{
	char p[512];
	long pid = 0;
	snprintf(p, sizeof(p), "%s/mds.pid", cfg.cluster_dir);
	FILE *f = fopen(p, "r");
	if (f) {
		if (fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	return (pid_t)pid;
}

/*
 * RocksDB's configured caches as weir-mds logged them at start ("RocksDB
 * caches=<MiB>MiB (...)"): copies the description into \a desc, \return MiB or 0.
 */
static unsigned long long mds_kv_caches(char *desc, size_t len)
{
	char p[512], line[512];
	unsigned long long mib = 0;
	snprintf(desc, len, "unknown (no \"RocksDB caches=\" line in the MDS log)");
	snprintf(p, sizeof(p), "%s/mds.log", cfg.cluster_dir);
	FILE *f = fopen(p, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *c = strstr(line, "RocksDB caches=");
		if (!c)
			continue;
		mib = strtoull(c + 15, NULL, 10);
		c[strcspn(c, "\n")] = 0;
		snprintf(desc, len, "%s", c + 15);
	}
	fclose(f);
	return mib;
}

/*
 * RocksDB's memory in use in weir-mds \a pid now, in KiB: SIGUSR1 makes it log
 * "RocksDB memory=<KiB>KiB (...)"; 
eturn the newest such figure or -1.
 */
static long mds_kv_memory(pid_t pid)
{
	char p[512], line[512];
	long kib = -1, seen = 0, before = 0;
	snprintf(p, sizeof(p), "%s/mds.log", cfg.cluster_dir);
	for (int pass = 0; pass < 2; pass++) {
		FILE *f = fopen(p, "r");
		if (!f)
			return -1;
		seen = 0;
		while (fgets(line, sizeof(line), f)) {
			char *c = strstr(line, "RocksDB memory=");
			if (c) {
				seen++;
				kib = strtol(c + 15, NULL, 10);
			}
		}
		fclose(f);
		if (pass == 0) {
			before = seen;
			if (kill(pid, SIGUSR1))
				return -1;
			for (int i = 0; i < 20; i++) { /* up to 2 s for the line */
				usleep(100000);
				f = fopen(p, "r");
				if (!f)
					return -1;
				seen = 0;
				while (fgets(line, sizeof(line), f))
					seen += strstr(line, "RocksDB memory=") != NULL;
				fclose(f);
				if (seen > before)
					break;
			}
		}
	}
	return seen > before ? kib : -1;
}

struct mem_arg {
	uint64_t from, to, first, stride;
	int rc;
};

static void *mem_create_thread(void *p)
{
	struct mem_arg *a = p;
	char path[128];
	for (uint64_t i = a->from + a->first; i < a->to && !a->rc; i += a->stride) {
		weir_file_t *f;
		snprintf(path, sizeof(path), "/bench/mem/f%llu", (unsigned long long)i);
		a->rc = weir_open(wfs, path, O_CREAT | O_EXCL | O_WRONLY, 0644, &f);
		if (!a->rc)
			a->rc = weir_close(f);
	}
	return NULL;
}

/* Create empty files /bench/mem/f<from..to-1>: cfg.nprocs processes of 4 threads each. */
static double mem_create(uint64_t from, uint64_t to)
{
	enum { T = 4 };
	double t0 = now_s();
	for (uint32_t r = 0; r < cfg.nprocs; r++) {
		if (fork() == 0) {
			struct mem_arg a[T];
			pthread_t th[T];
			int rc = 0;
			if (w_init())
				_exit(2);
			for (int t = 0; t < T; t++) {
				a[t] = (struct mem_arg){ from, to, r * T + (uint64_t)t,
							 (uint64_t)cfg.nprocs * T, 0 };
				pthread_create(&th[t], NULL, mem_create_thread, &a[t]);
			}
			for (int t = 0; t < T; t++) {
				pthread_join(th[t], NULL);
				rc |= a[t].rc;
			}
			w_fini();
			_exit(rc ? 1 : 0);
		}
	}
	int bad = 0, st;
	for (uint32_t r = 0; r < cfg.nprocs; r++) {
		wait(&st);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	if (bad)
		die("mem: a create failed", -EIO);
	double t1 = now_s();
	trace("mem creates", t0, t1);
	return (double)(to - from) / (t1 - t0);
}

/* A fresh process streams a \a bytes file (1 MiB writes, fsync, 1 MiB reads); \return its VmHWM KiB. */
static long mem_client_stream(uint64_t bytes)
{
	int pfd[2];
	long hwm = -1;
	if (pipe(pfd))
		die("pipe", -errno);
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		if (w_init())
			_exit(2);
		double w = w1_write(&be_weir, "mem.dat", MIB, bytes);
		double r = w1_read(&be_weir, "mem.dat", MIB, bytes);
		char p[512];
		be_weir.path(p, sizeof(p), "mem.dat");
		weir_unlink(wfs, p);
		long v = w > 0 && r > 0 ? proc_kib(0, "VmHWM") : -1;
		w_fini();
		if (write(pfd[1], &v, sizeof(v)) != sizeof(v))
			_exit(3);
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], &hwm, sizeof(hwm)) != sizeof(hwm))
		hwm = -1;
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	return hwm;
}

/*
 * Memory (issue "Speed": server memory flat from 1,000 to N files per MDT
 * aside from RocksDB's caches; client memory independent of file size):
 * weir-mds VmRSS after 1,000 and after cfg.mem_files empty files in one
 * directory, and weir-bench's peak RSS streaming a small and a large file.
 * Run once (the files accumulate); leaves the files for the cluster's end.
 */
static void run_mem(void)
{
	char nm[96], desc[256];
	pid_t pid = cfg.cluster_dir ? mds_pid() : 0;
	if (pid > 0) {
		if (w_init())
			die(cfg.mds, -ECONNREFUSED);
		weir_mkdir(wfs, "/bench/mem", 0755);
		w_fini();
		mem_create(0, 1000);
		sleep(1);
		long r1 = proc_kib(pid, "VmRSS"), k1 = mds_kv_memory(pid);
		double rate = mem_create(1000, cfg.mem_files);
		sleep(1);
		long rn = proc_kib(pid, "VmRSS"), kn = mds_kv_memory(pid);
		mds_kv_caches(desc, sizeof(desc));
		unsigned long long nf = (unsigned long long)cfg.mem_files;
		report("MEM MDS RSS 1000 files", "KiB", (double)r1, NULL, 0);
		snprintf(nm, sizeof(nm), "MEM MDS RSS %llu files", nf);
		report(nm, "KiB", (double)rn, "MDS RSS 1000 files", (double)r1);
		if (k1 >= 0 && kn >= 0) {
			report("MEM MDS RocksDB in use 1000 files", "KiB", (double)k1, NULL, 0);
			snprintf(nm, sizeof(nm), "MEM MDS RocksDB in use %llu files", nf);
			report(nm, "KiB", (double)kn, NULL, 0);
			report("MEM MDS RSS - RocksDB 1000 files", "KiB", (double)(r1 - k1), NULL, 0);
			snprintf(nm, sizeof(nm), "MEM MDS RSS - RocksDB %llu files", nf);
			report(nm, "KiB", (double)(rn - kn), "RSS - RocksDB 1000 files",
			       (double)(r1 - k1));
		}
		report("MEM creates (4 procs x 4 threads)", "ops/s", rate, NULL, 0);
		report_flush();
		double growth = (double)(rn - r1) / 1024;
		printf("  MDS RSS growth %.1f MiB (%+.1f%%), of which RocksDB %.1f MiB; RocksDB's "
		       "configured caches: %s\n", growth, 100.0 * (double)(rn - r1) / (double)r1,
		       k1 >= 0 && kn >= 0 ? (double)(kn - k1) / 1024 : -1.0, desc);
	} else {
		printf("  MEM MDS RSS: skipped (no --cluster-dir with mds.pid)\n");
	}
	uint64_t small = 16 * MIB, large = cfg.w1_bytes;
	long hs = mem_client_stream(small), hl = mem_client_stream(large);
	snprintf(nm, sizeof(nm), "MEM client peak RSS %lluMiB file",
		 (unsigned long long)(small / MIB));
	report(nm, "KiB", (double)hs, NULL, 0);
	char ref[48];
	snprintf(ref, sizeof(ref), "client %lluMiB file", (unsigned long long)(small / MIB));
	snprintf(nm, sizeof(nm), "MEM client peak RSS %lluMiB file",
		 (unsigned long long)(large / MIB));
	report(nm, "KiB", (double)hl, ref, (double)hs);
	report_flush();
}

/* ------------------------------------------------------------ scale: 1 and 2 cores */

enum { SCALE_FIGS = 5 };
static const struct {
	const char *name, *unit;
} scale_figs[SCALE_FIGS] = {
	{ "W4 stat 4p 1dir", "ops/s" },
	{ "W4 create 4p 1dir", "ops/s" },
	{ "W3 4KiB random read IOPS", "IOPS" },
	{ "W3 p50 latency", "us" },
	{ "W3 p99 latency", "us" },
};

/* Stat passes over the scale step's files (its stat phase lasts about a second in QUICK). */
static uint32_t scale_passes(void)
{
	return cfg.quick ? 5 : 10;
}

/* cfg.nprocs processes stat the files of w4/d0 scale_passes() times over; \return stats/s. */
static double scale_stat(void)
{
	uint32_t passes = scale_passes();
	double t0 = now_s();
	for (uint32_t r = 0; r < cfg.nprocs; r++) {
		if (fork() == 0) {
			if (w_init())
				_exit(2);
			int rc = 0;
			for (uint32_t k = 0; k < passes && !rc; k++)
				rc = w4_child(&be_weir, W4_STAT, r, cfg.nprocs, 1);
			w_fini();
			_exit(rc);
		}
	}
	int bad = 0, st;
	for (uint32_t r = 0; r < cfg.nprocs; r++) {
		wait(&st);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	if (bad)
		die("scale: a stat child failed", -EIO);
	double t1 = now_s();
	trace("scale W4 stat 4p 1dir", t0, t1);
	return (double)cfg.w4_files * passes / (t1 - t0);
}

/*
 * One sample of the scale step against the cluster at cfg.mds, which run.sh
 * started with cfg.scale_run cores (server threads, and CPUs when pinned):
 * W4 create then stat (4 processes, one directory), then W3 (weir only).
 * Appends "CORES<TAB>figure<TAB>value" lines to cfg.scale_samples.
 */
static void run_scale_sample(void)
{
	double fig[SCALE_FIGS], w3[3];
	char p[512];
	if (w_init())
		die(cfg.mds, -ECONNREFUSED);
	be_weir.path(p, sizeof(p), "w4");
	w_mkdir(p);
	be_weir.path(p, sizeof(p), "w4/d0");
	w_mkdir(p);
	w_fini();
	fig[1] = w4_phase(&be_weir, W4_CREATE, cfg.nprocs, 1);
	fig[0] = scale_stat();
	if (w_init())
		die(cfg.mds, -ECONNREFUSED);
	w3_measure(&be_weir, "weir", w3);
	w_fini();
	memcpy(fig + 2, w3, sizeof(w3));
	FILE *f = fopen(cfg.scale_samples, "a");
	if (!f)
		die(cfg.scale_samples, -errno);
	for (int i = 0; i < SCALE_FIGS; i++)
		fprintf(f, "%d\t%s\t%.3f\n", cfg.scale_run, scale_figs[i].name, fig[i]);
	fclose(f);
	printf("  scale sample, %d core%s: W4 stat 4p %.1f ops/s, create 4p %.1f ops/s; "
	       "W3 %.1f IOPS, p50 %.0f us, p99 %.0f us\n", cfg.scale_run,
	       cfg.scale_run > 1 ? "s" : "", fig[0], fig[1], fig[2], fig[3], fig[4]);
	fflush(stdout);
}

/* "median [min..max]" of \a n samples into \a out. */
static void scale_cell(char *out, size_t len, const double *x, int n)
{
	if (!n)
		snprintf(out, len, "-");
	else if (n == 1)
		snprintf(out, len, "%.1f", x[0]);
	else
		snprintf(out, len, "%.1f [%.0f..%.0f]", median(x, n), min_of(x, n), max_of(x, n));
}

/*
 * The scale step's table: each figure with 1 core and with 2 cores (medians
 * of the samples in cfg.scale_samples, [min..max]) and their ratio; recorded
 * as "SCALE <figure> (1 core)" and "SCALE <figure> (2 cores)", the latter
 * with the 1-core median as its reference.
 */
static void run_scale_report(void)
{
	static double v[2][SCALE_FIGS][MAX_RUNS];
	int n[2][SCALE_FIGS] = { { 0 } };
	char line[256];
	FILE *f = fopen(cfg.scale_samples, "r");
	if (!f) {
		printf("  scale: no samples (%s: %s)\n", cfg.scale_samples, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char *name, *val, *end;
		long cores = strtol(line, &end, 10);
		if (*end != '\t' || (cores != 1 && cores != 2))
			continue;
		name = end + 1;
		val = strchr(name, '\t');
		if (!val)
			continue;
		*val++ = 0;
		for (int i = 0; i < SCALE_FIGS; i++) {
			int *k = &n[cores - 1][i];
			if (!strcmp(name, scale_figs[i].name) && *k < MAX_RUNS)
				v[cores - 1][i][(*k)++] = strtod(val, NULL);
		}
	}
	fclose(f);
	printf("  scale: servers with --threads 1 and --threads 2; %s\n",
	       cfg.scale_pin ? cfg.scale_pin : "servers not pinned");
	printf("  W4: %u processes create %u files in one directory, then stat them %u times "
	       "over; W3: 16 threads, 4 KiB reads of a %llu MiB file for %u s\n", cfg.nprocs,
	       cfg.scale_files, scale_passes(), (unsigned long long)(cfg.w3_file / MIB), cfg.w3_secs);
	printf("  %-34s %-28s %-28s %s\n", "figure (median [min..max])", "1 core", "2 cores",
	       "2 cores / 1 core");
	for (int i = 0; i < SCALE_FIGS; i++) {
		char nm[64], c1[48], c2[48], fn[64];
		double m1 = median(v[0][i], n[0][i]), m2 = median(v[1][i], n[1][i]);
		snprintf(nm, sizeof(nm), "SCALE %s (1 core)", scale_figs[i].name);
		for (int k = 0; k < n[0][i]; k++)
			report(nm, scale_figs[i].unit, v[0][i][k], NULL, 0);
		snprintf(nm, sizeof(nm), "SCALE %s (2 cores)", scale_figs[i].name);
		for (int k = 0; k < n[1][i]; k++)
			report(nm, scale_figs[i].unit, v[1][i][k], "1 core", m1);
		scale_cell(c1, sizeof(c1), v[0][i], n[0][i]);
		scale_cell(c2, sizeof(c2), v[1][i], n[1][i]);
		snprintf(fn, sizeof(fn), "%s (%s)", scale_figs[i].name, scale_figs[i].unit);
		if (m1 > 0 && n[1][i])
			printf("  %-34s %-28s %-28s %5.2f\n", fn, c1, c2, m2 / m1);
		else
			printf("  %-34s %-28s %-28s -\n", fn, c1, c2);
	}
	for (int i = 0; i < nr_results; i++) /* printed above */
		results[i].printed = true;
	fflush(stdout);
}

/* ------------------------------------------------------------ dne: 1, 2 and 4 MDTs */

enum { DNE_PROCS = 3, DNE_PH = 3, DNE_MAX_MDTS = 8 };
static const uint32_t dne_procs[DNE_PROCS] = { 1, 4, 16 };
static const int dne_ph[DNE_PH] = { W4_CREATE, W4_STAT, W4_UNLINK };

/* The dne step's file count, shared by the processes of each phase. */
static uint32_t dne_files(void)
{
	return cfg.quick ? 4000 : 20000;
}

/*
 * One sample of the dne step against the cluster at cfg.mds, which
 * tests/bench/dne.sh started with cfg.dne_run MDTs: directories w4/d0..d15,
 * d<r> made on MDT r % MDTs (weir_mkdir_mdt: a remote directory for r % MDTs
 * > 0), then for 1, 4 and 16 processes W4 create, stat and unlink of
 * dne_files() files, process r in d<r> only (w4_phase with as many
 * directories as processes). Appends "MDTS<TAB>figure<TAB>value" lines to
 * cfg.dne_samples.
 */
static void run_dne_sample(void)
{
	char p[512];
	uint32_t mdts = (uint32_t)cfg.dne_run;
	if (w_init())
		die(cfg.mds, -ECONNREFUSED);
	weir_mkdir(wfs, "/bench", 0755);
	be_weir.path(p, sizeof(p), "w4");
	w_mkdir(p);
	for (uint32_t r = 0; r < dne_procs[DNE_PROCS - 1]; r++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "w4/d%u", r);
		be_weir.path(p, sizeof(p), rel);
		int rc = weir_mkdir_mdt(wfs, p, 0755, (int)(r % mdts));
		if (rc && rc != -EEXIST)
			die(p, rc);
	}
	w_fini();
	FILE *f = fopen(cfg.dne_samples, "a");
	if (!f)
		die(cfg.dne_samples, -errno);
	printf("  dne sample, %u MDT%s:", mdts, mdts > 1 ? "s" : "");
	for (int pi = 0; pi < DNE_PROCS; pi++) {
		for (int k = 0; k < DNE_PH; k++) {
			double v = w4_phase(&be_weir, dne_ph[k], dne_procs[pi], dne_procs[pi]);
			fprintf(f, "%u\tW4 %s %up\t%.3f\n", mdts, w4_names[dne_ph[k]], dne_procs[pi], v);
			printf(" %s %up %.0f", w4_names[dne_ph[k]], dne_procs[pi], v);
		}
	}
	printf(" ops/s\n");
	fclose(f);
	fflush(stdout);
}

/*
 * The dne step's table: each figure (W4 create, stat, unlink with 1, 4 and
 * 16 processes) with each MDT count found in cfg.dne_samples (medians
 * [min..max]) and the ratio of each to 1 MDT; recorded as
 * "DNE W4 <op> <N>p (<M> MDT)", those of M > 1 with 1 MDT's median as their
 * reference.
 */
static void run_dne_report(void)
{
	static double v[DNE_MAX_MDTS + 1][DNE_PROCS * DNE_PH][MAX_RUNS];
	int n[DNE_MAX_MDTS + 1][DNE_PROCS * DNE_PH];
	char line[256], nm[128];
	memset(n, 0, sizeof(n));
	FILE *f = fopen(cfg.dne_samples, "r");
	if (!f) {
		printf("  dne: no samples (%s: %s)\n", cfg.dne_samples, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char *end, *val;
		long m = strtol(line, &end, 10);
		if (*end != '\t' || m < 1 || m > DNE_MAX_MDTS || !(val = strchr(end + 1, '\t')))
			continue;
		*val++ = 0;
		for (int i = 0; i < DNE_PROCS * DNE_PH; i++) {
			snprintf(nm, sizeof(nm), "W4 %s %up", w4_names[dne_ph[i % DNE_PH]],
				 dne_procs[i / DNE_PH]);
			int *k = &n[m][i];
			if (!strcmp(end + 1, nm) && *k < MAX_RUNS)
				v[m][i][(*k)++] = strtod(val, NULL);
		}
	}
	fclose(f);
	printf("  dne: W4 with each process in a directory of its own, process r's on MDT r %% "
	       "MDTs (remote directories); %u files per phase; medians [min..max] in ops/s,\n"
	       "  and each over 1 MDT's\n", dne_files());
	printf("  %-22s", "figure");
	for (int m = 1; m <= DNE_MAX_MDTS; m++)
		if (n[m][0])
			printf(" %-26s", m == 1 ? "1 MDT" : (snprintf(nm, sizeof(nm), "%d MDTs", m), nm));
	printf("\n");
	for (int i = 0; i < DNE_PROCS * DNE_PH; i++) {
		char fig[48];
		snprintf(fig, sizeof(fig), "W4 %s %up", w4_names[dne_ph[i % DNE_PH]],
			 dne_procs[i / DNE_PH]);
		double m1 = median(v[1][i], n[1][i]);
		printf("  %-22s", fig);
		for (int m = 1; m <= DNE_MAX_MDTS; m++) {
			if (!n[m][0])
				continue;
			char cell[64], rat[16] = "";
			double mm = median(v[m][i], n[m][i]);
			scale_cell(cell, sizeof(cell), v[m][i], n[m][i]);
			if (m > 1 && m1 > 0 && n[m][i])
				snprintf(rat, sizeof(rat), " x%.2f", mm / m1);
			char both[96];
			snprintf(both, sizeof(both), "%s%s", cell, rat);
			printf(" %-26s", both);
			snprintf(nm, sizeof(nm), "DNE %s (%d MDT%s)", fig, m, m > 1 ? "s" : "");
			for (int k = 0; k < n[m][i]; k++)
				report(nm, "ops/s", v[m][i][k], m > 1 ? "1 MDT" : NULL, m > 1 ? m1 : 0);
		}
		printf("\n");
	}
	for (int i = 0; i < nr_results; i++) /* printed above */
		results[i].printed = true;
	fflush(stdout);
}

/* ------------------------------------------------------------ main */

static void usage(FILE *f)
{
	fprintf(f, "usage: weir-bench --mds HOST:PORT --local DIR [--quick] [--json FILE]\n"
		   "                  [--only LIST] [--runs N] [--cluster-dir DIR]\n"
		   "                  [--scale-samples FILE] [--scale-pin TEXT]\n"
		   "                  [--dne-samples FILE]\n"
		   "       weir-bench --mds HOST:PORT --scale-run CORES --scale-samples FILE [--quick]\n"
		   "       weir-bench --mds HOST:PORT --dne-run MDTS --dne-samples FILE [--quick]\n"
		   "       weir-bench --posix-dir DIR --label NAME [--ref-json FILE] [--quick]\n"
		   "                  [--runs N] [--peer-json FILE --peer-label PEER]\n\n"
		   "Runs IOR/mdtest-style workloads through libweir and the same workloads on\n"
		   "the local directory DIR (put it on the disk the OSTs use), and prints each\n"
		   "figure with its reference and their ratio. LIST: comma-separated from\n"
		   "ref,w1,w2,w3,w4,w5,mem,scale,dne. --quick scales every workload down (about 2\n"
		   "minutes).\n"
		   "Each workload runs N times (default 3, 1 with --quick); every figure is the\n"
		   "median of its runs, with [min..max]. mem runs once: weir-mds's VmRSS after\n"
		   "1,000 and after 1,000,000 (--quick: 100,000) empty files in one directory\n"
		   "(the pid and log from --cluster-dir, weir-local's --dir), and this client's\n"
		   "peak RSS streaming a 16 MiB and a 4 GiB (--quick: 256 MiB) file.\n"
		   "Dropping the page cache for cold reads needs root (else reads are warm).\n"
		   "The second form is W6: W1 and W4 through POSIX calls on DIR (a FUSE mount,\n"
		   "or a path under the LD_PRELOAD shim's prefix), compared with libweir's\n"
		   "figures read from FILE (the first form's --json output); with --peer-json,\n"
		   "each figure also next to a peer filesystem's W6 run from the same bench\n"
		   "(that run's --json output, its --label PEER: tests/bench/peer-moosefs.sh).\n"
		   "scale: the --scale-run form takes one sample (W4 create and stat with 4\n"
		   "processes in one directory, stat repeated 5 (full: 10) times over 4,000\n"
		   "(full: 20,000) files; then W3) against a cluster whose servers run CORES\n"
		   "threads (tests/bench/run.sh starts it, pinned to CORES CPUs) and appends it\n"
		   "to FILE; the first form with scale in LIST prints FILE's 1-core and 2-core\n"
		   "medians and their ratio (TEXT says how the servers were pinned).\n"
		   "dne: the --dne-run form takes one sample (W4 create, stat and unlink of\n"
		   "4,000 (full: 20,000) files from 1, 4 and 16 processes, process r in a\n"
		   "directory of its own made on MDT r %% MDTS) against a cluster of MDTS MDTs\n"
		   "(tests/bench/dne.sh starts one for 1, 2 and 4) and appends it to FILE;\n"
		   "the first form with dne in LIST prints FILE's medians per MDT count and\n"
		   "their ratios to 1 MDT.\n"
		   "WEIR_BENCH_TRACE=1 prints each W3/W4/mem phase's CLOCK_MONOTONIC start and\n"
		   "end on stderr (for `perf record -k CLOCK_MONOTONIC` and `perf report --time`);\n"
		   "WEIR_BENCH_W4_FILES=N sets W4's file count.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mds", required_argument, NULL, 'm' },  { "local", required_argument, NULL, 'l' },
		{ "quick", no_argument, NULL, 'q' },      { "json", required_argument, NULL, 'j' },
		{ "only", required_argument, NULL, 'o' }, { "help", no_argument, NULL, 'h' },
		{ "posix-dir", required_argument, NULL, 'P' }, { "label", required_argument, NULL, 'L' },
		{ "ref-json", required_argument, NULL, 'R' }, { "runs", required_argument, NULL, 'r' },
		{ "cluster-dir", required_argument, NULL, 'C' },
		{ "scale-run", required_argument, NULL, 'S' },
		{ "scale-samples", required_argument, NULL, 'F' },
		{ "scale-pin", required_argument, NULL, 'N' },
		{ "peer-json", required_argument, NULL, 'J' },
		{ "peer-label", required_argument, NULL, 'B' },
		{ "dne-run", required_argument, NULL, 'D' },
		{ "dne-samples", required_argument, NULL, 'E' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	long runs = 0;
	cfg.mds = getenv("WEIR_MDS");
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm': cfg.mds = optarg; break;
		case 'l': cfg.local_dir = optarg; break;
		case 'q': cfg.quick = true; break;
		case 'j': cfg.json = optarg; break;
		case 'o': cfg.only = optarg; break;
		case 'P': cfg.posix_dir = optarg; break;
		case 'L': cfg.label = optarg; break;
		case 'R': cfg.ref_json = optarg; break;
		case 'C': cfg.cluster_dir = optarg; break;
		case 'S':
			cfg.scale_run = (int)strtol(optarg, NULL, 10);
			if (cfg.scale_run != 1 && cfg.scale_run != 2) {
				fprintf(stderr, "weir-bench: --scale-run: 1 or 2\n");
				return 2;
			}
			break;
		case 'F': cfg.scale_samples = optarg; break;
		case 'D':
			cfg.dne_run = (int)strtol(optarg, NULL, 10);
			if (cfg.dne_run < 1 || cfg.dne_run > DNE_MAX_MDTS) {
				fprintf(stderr, "weir-bench: --dne-run: 1 to %d\n", DNE_MAX_MDTS);
				return 2;
			}
			break;
		case 'E': cfg.dne_samples = optarg; break;
		case 'N': cfg.scale_pin = optarg; break;
		case 'J': cfg.peer_json = optarg; break;
		case 'B': cfg.peer_label = optarg; break;
		case 'r':
			runs = strtol(optarg, NULL, 10);
			if (runs < 1 || runs > MAX_RUNS) {
				fprintf(stderr, "weir-bench: --runs: 1 to %d\n", MAX_RUNS);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (cfg.posix_dir) /* W6 mode: no libweir, POSIX calls only */
		cfg.quick = cfg.quick || getenv("QUICK");
	cfg.runs = runs ? (uint32_t)runs : cfg.quick ? 1 : 3;
	if (cfg.posix_dir) {
		cfg.w1_bytes = (cfg.quick ? 256 : 4096) * MIB;
		cfg.w4_files = cfg.quick ? 2000 : 100000;
		if (!cfg.label)
			cfg.label = "posix";
		for (uint32_t k = 0; k < cfg.runs; k++)
			run_w6();
		report_flush();
		write_json();
		return 0;
	}
	/* steps that need the cluster at cfg.mds (scale brings its own samples) */
	bool need_fs = want("ref") || want("w1") || want("w2") || want("w3") || want("w4") ||
		       want("w5") || want("mem");
	if ((cfg.scale_run && (!cfg.mds || !cfg.scale_samples)) ||
	    (cfg.dne_run && (!cfg.mds || !cfg.dne_samples)) ||
	    (!cfg.scale_run && !cfg.dne_run && need_fs && (!cfg.mds || !cfg.local_dir))) {
		usage(stderr);
		return 2;
	}
	cfg.nprocs = 4;
	cfg.w1_bytes = (cfg.quick ? 256 : 4096) * MIB;
	cfg.w2_bytes = (cfg.quick ? 64 : 1024) * MIB;
	cfg.w3_file = (cfg.quick ? 256 : 4096) * MIB;
	cfg.w3_secs = cfg.quick ? 3 : 20;
	cfg.w4_files = cfg.quick ? 2000 : 100000;
	if (getenv("WEIR_BENCH_W4_FILES")) /* for profiling: longer W4 phases */
		cfg.w4_files = (uint32_t)strtoul(getenv("WEIR_BENCH_W4_FILES"), NULL, 10);
	cfg.w5_files = cfg.quick ? 1000 : 20000;
	cfg.mem_files = cfg.quick ? 100000 : 1000000;
	cfg.scale_files = cfg.quick ? 4000 : 20000;
	if (cfg.scale_run) {
		cfg.w4_files = cfg.scale_files; /* the W4 code's file count, in this form only */
		if (w_init())
			die(cfg.mds, -ECONNREFUSED);
		weir_mkdir(wfs, "/bench", 0755);
		w_fini();
		run_scale_sample();
		return 0;
	}
	if (cfg.dne_run) {
		cfg.w4_files = dne_files(); /* the W4 code's file count, in this form only */
		run_dne_sample();
		return 0;
	}
	if (need_fs) {
		char p[512];
		mkdir(cfg.local_dir, 0755);
		snprintf(p, sizeof(p), "%s/w4", cfg.local_dir);
		mkdir(p, 0755);
		if (w_init())
			die(cfg.mds, -ECONNREFUSED);
		weir_mkdir(wfs, "/bench", 0755);
		w_fini();
	}

	printf("weir-bench%s: figure (median of %u run%s), reference measured in this run, ratio\n",
	       cfg.quick ? " (QUICK)" : "", cfg.runs, cfg.runs > 1 ? "s" : "");
	uint32_t k;
	if (want("ref") || want("w1")) {
		for (k = 0; k < cfg.runs; k++)
			report("ref loopback TCP 1 stream", "MB/s", ref_tcp(1), NULL, 0);
	}
	if (want("ref")) {
		for (k = 0; k < cfg.runs; k++) {
			report("ref loopback TCP 2 streams", "MB/s", ref_tcp(2), NULL, 0);
			report("ref memcpy", "MB/s", ref_memcpy(), NULL, 0);
		}
	}
	report_flush();
	double tcp1 = result_median("ref loopback TCP 1 stream");
	if (want("w1")) {
		for (k = 0; k < cfg.runs; k++)
			run_w1(tcp1);
		report_flush();
	}
	if (want("w2")) {
		double w1w = result_median("W1 write+fsync 1MiB xfer");
		for (k = 0; k < cfg.runs; k++)
			run_w2(w1w);
		report_flush();
	}
	if (want("w3")) {
		for (k = 0; k < cfg.runs; k++) {
			if (w_init())
				die(cfg.mds, -ECONNREFUSED);
			w3_run(&be_weir, "weir");
			w_fini();
			w3_run(&be_local, "local dir");
		}
		report_flush();
	}
	if (want("w4")) {
		for (k = 0; k < cfg.runs; k++)
			run_w4();
		report_flush();
	}
	if (want("w5")) {
		for (k = 0; k < cfg.runs; k++)
			run_w5();
		report_flush();
	}
	if (want("mem"))
		run_mem();
	if (want("scale")) {
		if (cfg.scale_samples)
			run_scale_report();
		else
			printf("  scale: skipped (no --scale-samples; tests/bench/run.sh takes them)\n");
	}
	if (want("dne")) {
		if (cfg.dne_samples)
			run_dne_report();
		else
			printf("  dne: skipped (no --dne-samples; tests/bench/dne.sh takes them)\n");
	}
	write_json();
	return 0;
}
