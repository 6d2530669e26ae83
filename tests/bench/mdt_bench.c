/*
 * tests/bench/mdt_bench.c - weir-mdt-bench: one MDT's namespace calls from
 * several threads in one process (no RPC, no network), with the MDS's
 * parallel operations (pdirops: name and inode locks under a shared
 * namespace lock, mds/ns_lock.c) and, as the reference measured in the same
 * run, with every change alone under the exclusive lock (--pdirops 0).
 *
 * Each round opens a fresh MDT (RocksDB in DIR), makes one directory, and
 * runs three phases with T threads, each thread on its own share of the
 * names, all in that one directory (the case pdirops is for: different names
 * of one directory): create (open O_CREAT|O_EXCL for writing, then the
 * writer's close, as a client's create does), lookup (a path walk of each
 * file), unlink. Each figure is calls per second of wall time, the median
 * of --runs rounds. The commits are in RocksDB's log (not synced), as
 * between two syncs of the MDS's commit thread.
 *
 * Usage: weir-mdt-bench --dir DIR [--files N] [--threads LIST] [--runs N]
 *                       [--quick]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "mds/mds.h"

#define MAX_THREADS 64
#define MAX_RUNS 9

enum phase { PH_CREATE, PH_LOOKUP, PH_UNLINK, PH_NR };
static const char *const phase_name[PH_NR] = { "create", "lookup", "unlink" };

struct job {
	pthread_t j_thread;
	struct mds_ns *j_ns;
	unsigned j_id;
	unsigned j_files;
	enum phase j_phase;
	pthread_barrier_t *j_start;
	bool j_private;   /* its own directory /d/tN, else /d */
	long j_errors;
};

static int choose_ost0(void *arg, struct weir_layout *lo, int32_t off)
{
	(void)arg;
	(void)off;
	if (lo->lo_stripe_count == UINT32_MAX || lo->lo_stripe_count == 0)
		lo->lo_stripe_count = 1;
	for (uint32_t i = 0; i < lo->lo_stripe_count; i++)
		lo->lo_osts[i] = i;
	return 0;
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	char path[64];
	pthread_barrier_wait(j->j_start);
	for (unsigned i = 0; i < j->j_files; i++) {
		if (j->j_private)
			snprintf(path, sizeof(path), "/d/t%u/f%u", j->j_id, i);
		else
			snprintf(path, sizeof(path), "/d/t%u-%u", j->j_id, i);
		struct mds_inode in;
		bool created;
		int rc;
		switch (j->j_phase) {
		case PH_CREATE:
			rc = mds_ns_open_file(j->j_ns, NULL, NULL, path,
					      MDS_OF_CREAT | MDS_OF_EXCL | MDS_OF_WRITE, 0644, NULL,
					      choose_ost0, NULL, &in, &created);
			if (!rc)
				rc = mds_ns_close_file(j->j_ns, &in.in_fid, true, NULL);
			break;
		case PH_LOOKUP:
			rc = mds_ns_lookup(j->j_ns, NULL, NULL, path, 0, &in);
			break;
		default:
			rc = mds_ns_unlink(j->j_ns, NULL, NULL, path, false);
			break;
		}
		if (rc)
			j->j_errors++;
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One round: fresh MDT, the three phases with \a threads threads. */
static int round_run(const char *dir, bool pdirops, unsigned threads, unsigned files,
		     bool private_dirs, double rate[PH_NR])
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/mdt-%s-%u", dir, pdirops ? "pdirops" : "excl", threads);
	struct mds_ns_conf c = { .nc_path = path, .nc_pdirops_off = !pdirops };
	struct mds_ns *ns;
	int rc = mds_ns_open(&c, &ns);
	if (rc) {
		fprintf(stderr, "weir-mdt-bench: cannot open an MDT in %s: %s\n", path,
			strerror(-rc));
		return rc;
	}
	struct mds_inode d;
	rc = mds_ns_mkdir(ns, NULL, NULL, "/d", 0755, &d);
	if (rc) {
		fprintf(stderr, "weir-mdt-bench: mkdir: %s\n", strerror(-rc));
		mds_ns_close(ns);
		return rc;
	}
	for (unsigned t = 0; private_dirs && t < threads && !rc; t++) {
		char sub[32];
		snprintf(sub, sizeof(sub), "/d/t%u", t);
		rc = mds_ns_mkdir(ns, NULL, NULL, sub, 0755, &d);
	}
	struct job jobs[MAX_THREADS];
	pthread_barrier_t start;
	for (int ph = 0; ph < PH_NR && !rc; ph++) {
		pthread_barrier_init(&start, NULL, threads + 1);
		for (unsigned t = 0; t < threads; t++) {
			jobs[t] = (struct job){ .j_ns = ns, .j_id = t, .j_files = files / threads,
						.j_phase = (enum phase)ph, .j_start = &start,
						.j_private = private_dirs };
			if (pthread_create(&jobs[t].j_thread, NULL, job_main, &jobs[t])) {
				fprintf(stderr, "weir-mdt-bench: cannot start a thread\n");
				exit(1);
			}
		}
		pthread_barrier_wait(&start);
		double t0 = now_s();
		long errors = 0;
		for (unsigned t = 0; t < threads; t++) {
			pthread_join(jobs[t].j_thread, NULL);
			errors += jobs[t].j_errors;
		}
		double el = now_s() - t0;
		pthread_barrier_destroy(&start);
		rate[ph] = (double)(files / threads * threads) / el;
		if (errors) {
			fprintf(stderr, "weir-mdt-bench: %s: %ld calls failed\n", phase_name[ph],
				errors);
			rc = -EIO;
		}
	}
	mds_ns_close(ns);
	snprintf(path, sizeof(path), "rm -rf '%s/mdt-%s-%u'", dir, pdirops ? "pdirops" : "excl",
		 threads);
	if (system(path) != 0)
		fprintf(stderr, "weir-mdt-bench: could not remove a round's MDT\n");
	return rc;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: weir-mdt-bench --dir DIR [--files N] [--threads LIST] [--runs N]"
		   " [--quick]\n\n"
		   "Times one MDT's namespace calls from several threads in one process (no RPC):\n"
		   "create (open O_CREAT|O_EXCL + close), lookup and unlink of N files in one\n"
		   "directory, with the MDS's parallel operations (pdirops) and, as the reference\n"
		   "of the same run, with every change alone under the MDT's exclusive lock\n"
		   "(weir-mds --pdirops 0). LIST: thread counts, comma-separated (default 1,2,4).\n"
		   "N: files per round (default 40000; --quick 8000). Each figure is the median of\n"
		   "--runs rounds (default 3; --quick 1), each on a fresh MDT under DIR.\n"
		   "--private-dirs: each thread in a directory of its own (else all in one).\n");
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *list = "1,2,4";
	unsigned files = 0, runs = 0;
	bool quick = false, private_dirs = false;
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },   { "files", required_argument, NULL, 'n' },
		{ "threads", required_argument, NULL, 't' }, { "runs", required_argument, NULL, 'r' },
		{ "quick", no_argument, NULL, 'q' },        { "help", no_argument, NULL, 'h' },
		{ "private-dirs", no_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'd': dir = optarg; break;
		case 'n': files = (unsigned)strtoul(optarg, NULL, 10); break;
		case 't': list = optarg; break;
		case 'r': runs = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'q': quick = true; break;
		case 'p': private_dirs = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!dir) {
		usage(stderr);
		return 2;
	}
	if (!files)
		files = quick ? 8000 : 40000;
	if (!runs)
		runs = quick ? 1 : 3;
	if (runs > MAX_RUNS)
		runs = MAX_RUNS;
	if (!(runs & 1))
		runs++; /* a median of an odd count */
	unsigned tl[16], nt = 0;
	for (const char *p = list; *p && nt < 16;) {
		unsigned v = (unsigned)strtoul(p, (char **)&p, 10);
		if (v < 1 || v > MAX_THREADS) {
			fprintf(stderr, "weir-mdt-bench: --threads: 1 to %d each\n", MAX_THREADS);
			return 2;
		}
		tl[nt++] = v;
		if (*p == ',')
			p++;
		else if (*p)
			break;
	}
	if (weir_mkdir_p(dir, 0755)) {
		fprintf(stderr, "weir-mdt-bench: cannot make %s\n", dir);
		return 1;
	}
	weir_log_set_level(WEIR_LOG_LVL_WARN);

	printf("mdt: one MDT in process (RocksDB under %s), %u files %s, median of %u round(s);"
	       " reference: the same calls with every change alone (--pdirops 0)\n",
	       dir, files, private_dirs ? "in a directory per thread" : "in one directory", runs);
	printf("  %-8s %-7s %14s %14s %8s %10s\n", "phase", "threads", "exclusive/s", "pdirops/s",
	       "ratio", "vs first");
	double med[2][16][PH_NR];
	for (unsigned i = 0; i < nt; i++) {
		double r[2][MAX_RUNS][PH_NR];
		/* the two modes alternate, each first in every other round */
		for (unsigned k = 0; k < runs; k++)
			for (int m = 0; m < 2; m++) {
				int mode = (int)((k + (unsigned)m) & 1);
				if (round_run(dir, mode == 1, tl[i], files, private_dirs, r[mode][k]))
					return 1;
			}
		for (int mode = 0; mode < 2; mode++)
			for (int ph = 0; ph < PH_NR; ph++) {
				double v[MAX_RUNS];
				for (unsigned k = 0; k < runs; k++)
					v[k] = r[mode][k][ph];
				qsort(v, runs, sizeof(v[0]), dbl_cmp);
				med[mode][i][ph] = v[runs / 2];
			}
	}
	for (int ph = 0; ph < PH_NR; ph++)
		for (unsigned i = 0; i < nt; i++)
			printf("  %-8s %-7u %14.0f %14.0f %8.2f %10.2f\n", phase_name[ph], tl[i],
			       med[0][i][ph], med[1][i][ph], med[1][i][ph] / med[0][i][ph],
			       med[1][i][ph] / med[1][0][ph]);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	printf("  (ratio: pdirops / exclusive at that thread count; vs first: pdirops against its"
	       " first thread count, %u; lookups take the same shared lock in both modes; the"
	       " exclusive mode still takes the fine locks, uncontended; %ld CPUs online)\n",
	       tl[0], cpus);
	return 0;
}
