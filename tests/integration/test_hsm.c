/*
 * tests/integration/test_hsm.c - the S3 tier end to end (issue 5, "How to
 * prove it"): a real s3rver (tests/lib/s3srv.c), a real cluster (1 MDS +
 * 2 OSS x 2 OSTs), the real copytool weir-hsmd as a process
 * (tests/lib/hsmd.c), libweir's HSM API and the weir CLI for imports.
 *
 * Cases, in this order (later ones reuse files of earlier ones):
 *  - import of a bucket of 1,000 objects of mixed sizes (0 B .. 3 MiB) in
 *    nested prefixes (`weir dra create --import`), all read back by 8 threads
 *    through libweir (each first read restores), bytes equal;
 *  - an object overwritten in S3 after import: default DRA -> EIO and LOST;
 *    --reimport DRA -> the new content and size;
 *  - release refused (never archived -ENODATA, no association -EINVAL, open
 *    -EBUSY, dirty -ENODATA); a modified file archived again: clean, new ETag;
 *  - auto-export: written and closed -> archived, twice;
 *  - a 256 MiB file striped over 4 OSTs archived, released (its OST objects
 *    destroyed), 1 MiB read from its middle returns with restored < size,
 *    then the whole file;
 *  - kill -9 of the copytool in the middle of a restore (the restored chunks
 *    are kept, the action goes back to waiting), restart, right bytes;
 *  - kill -9 of the MDS in the middle of a restore, restart, right bytes;
 *  - kill -9 of the copytool in the middle of a multipart archive, restart:
 *    archived, S3 object right, ETag as HEAD gives it;
 *  - a file written while its archive runs stays dirty (no release), the
 *    next archive holds the new bytes;
 *  - 4 concurrent readers of a released file: one restore action;
 *  - a write into a released file restores it whole first; O_TRUNC needs no
 *    restore;
 *  - `weir dra import` rescan: new, changed, deleted objects, and a file
 *    modified in Weir whose object was deleted is kept;
 *  - S3 stopped: archive fails with a clear error (ECONNREFUSED on the
 *    action, the key in the copytool's log), no release; S3 back: archived;
 *  - over the high watermark with nothing releasable (a cluster of its own):
 *    the MDS and OSSs log the throttling, writes succeed;
 *  - the watermark policy (MDS restarted with a 1% high watermark): archived
 *    clean files released, dirty and never-archived ones kept. Runs last: it
 *    releases every clean file.
 *
 * Exits 77 when node or s3rver is not installed. TH_KEEP=1 keeps the
 * cluster and s3rver directories.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/s3.h"
#include "harness.h"
#include "hsmd.h"
#include "s3srv.h"
#include "th_weir.h"

#define KIB 1024ULL
#define MIB (1024ULL * 1024ULL)

#define BUCKET		    "weir-hsm"
#define HSMD_THREADS	    4
#define NR_IMPORT	    1000
#define IMPORT_PUT_THREADS  4
#define IMPORT_READ_THREADS 8
#define BIG_SIZE	    (256 * MIB)
#define WAIT_MS		    60000 /* longest wait for one archive or restore */

static struct th_s3rver *srv;
static struct th_cluster *cl;
static struct th_hsmd *hd;
static weir_fs_t *fs;
static struct weir_s3_conf s3c;

/*
 * weir-mds arguments: short lease (an evicted copytool's actions go back to
 * waiting quickly) and action timeout; the policy case appends its settings
 * and restarts the MDS (the harness reads this array at every start).
 */
static const char *mds_args[32] = {
	"--lease-time", "3s", "--hsm-action-timeout", "10s", "--hsm-policy-interval", "1s", NULL,
};
#define MDS_ARGS_BASE 6

/* ------------------------------------------------------------ helpers */

static struct weir_s3 *s3_client(void)
{
	struct weir_s3 *s = NULL;

	if (weir_s3_new(&s3c, &s) < 0)
		return NULL;
	return s;
}

static void state_print(const char *what, const struct weir_hsm_state *st)
{
	fprintf(stderr,
		"\n  %s: flags 0x%x dra %u key '%s' etag %s dv %llu av %llu size %llu "
		"restored %llu action %llu/%u\n",
		what, st->hs_flags, st->hs_dra, st->hs_key, st->hs_etag,
		(unsigned long long)st->hs_data_version,
		(unsigned long long)st->hs_archived_version, (unsigned long long)st->hs_size,
		(unsigned long long)st->hs_restored, (unsigned long long)st->hs_action_id,
		st->hs_action);
}

/* State of \a path; on error a zeroed state (flags 0) and a message. */
static struct weir_hsm_state state_of(const char *path)
{
	struct weir_hsm_state st;
	int rc;

	memset(&st, 0, sizeof(st));
	rc = weir_hsm_state_get(fs, path, &st);
	if (rc) {
		th_rc(path, rc);
		memset(&st, 0, sizeof(st));
	}
	return st;
}

/*
 * Wait until (flags & mask) == want for \a path.
 * \return 0, or -ETIMEDOUT (the last state is printed).
 */
static int wait_flags(const char *path, uint32_t mask, uint32_t want, unsigned timeout_ms)
{
	uint64_t t0 = th_now_ms();
	struct weir_hsm_state st;

	for (;;) {
		memset(&st, 0, sizeof(st));
		int rc = weir_hsm_state_get(fs, path, &st);
		if (!rc && (st.hs_flags & mask) == want)
			return 0;
		if (th_now_ms() - t0 > timeout_ms) {
			char what[PATH_MAX + 128];
			snprintf(what, sizeof(what), "%s: flags & 0x%x != 0x%x after %u ms (rc %d)",
				 path, mask, want, timeout_ms, rc);
			state_print(what, &st);
			return -ETIMEDOUT;
		}
		th_sleep_ms(20);
	}
}

/* 0 when \a rc is \a want, else -1 with a message naming both. */
static int expect_rc(const char *what, int rc, int want)
{
	if (rc == want)
		return 0;
	fprintf(stderr, "\n  %s: rc %d (%s), want %d (%s)\n", what, rc, strerror(-rc), want,
		strerror(-want));
	return -1;
}

/* Assert that \a expr (an int rc) is \a want, printing both when not. */
#define ASSERT_RC(expr, want) CU_ASSERT_EQUAL(expect_rc(#expr, (expr), (want)), 0)

static int fid_of(const char *path, weir_fid_t *fid)
{
	return (int)th_rc(path, weir_path2fid(fs, path, fid));
}

/* One action on one path. \return rcs[0] (or the call's error); *id the action. */
static int request1(enum weir_hsm_action act, const char *path, uint64_t *id)
{
	weir_fid_t fid;
	uint64_t ids[1] = {0};
	int rcs[1] = {-EINVAL}, rc;

	rc = fid_of(path, &fid);
	if (rc)
		return rc;
	rc = weir_hsm_request(fs, act, &fid, 1, ids, rcs);
	if (rc)
		return (int)th_rc("weir_hsm_request", rc);
	if (id)
		*id = ids[0];
	return rcs[0];
}

/* Archive \a path and wait until it is archived and clean. \return 0 or -errno. */
static int archive_wait(const char *path)
{
	int rc = request1(WEIR_HSM_ARCHIVE, path, NULL);

	if (rc) {
		fprintf(stderr, "\n  archive %s: rc %d\n", path, rc);
		return rc;
	}
	return wait_flags(path, WEIR_HS_EXISTS | WEIR_HS_ARCHIVED | WEIR_HS_DIRTY,
			  WEIR_HS_EXISTS | WEIR_HS_ARCHIVED, WAIT_MS);
}

/* The action \a id as the MDS reports it; hai_state WEIR_HSM_DONE+1 when unknown. */
static struct weir_hsm_action_info action_of(uint64_t id)
{
	struct weir_hsm_action_info ai;
	struct weir_hsm_queue *q = NULL;

	memset(&ai, 0, sizeof(ai));
	ai.hai_state = WEIR_HSM_FAILED + 1;
	if (weir_hsm_queue_get(fs, &id, 1, &q) == 0) {
		for (size_t i = 0; i < q->hq_nr; i++)
			if (q->hq_actions[i].hai_id == id)
				ai = q->hq_actions[i];
		weir_hsm_queue_free(q);
	}
	return ai;
}

/* Wait until at least one agent is registered with the MDS. */
/* Layout of \a path: OST of each object. \return stripe count, or -errno. */
static int osts_of(const char *path, weir_fid_t *fid, uint32_t *osts, int max)
{
	struct weir_layout_info *li = calloc(1, sizeof(*li));
	int rc;

	if (!li)
		return -ENOMEM;
	rc = (int)th_rc("weir_getstripe", weir_getstripe(fs, path, li));
	if (!rc) {
		*fid = li->wli_fid;
		rc = (int)li->wli_stripe_count;
		for (int i = 0; i < rc && i < max; i++)
			osts[i] = li->wli_objs[i].woi_ost;
	}
	free(li);
	return rc;
}

/* Objects of \a fid (stripes on \a osts) that still exist on their OSTs, or -errno. */
static int objs_present(const weir_fid_t *fid, const uint32_t *osts, int nr)
{
	int n = 0;

	for (int i = 0; i < nr; i++) {
		bool exists = true;
		int rc =
		    th_ost_obj_getattr(cl, osts[i], fid->seq, fid->oid, (uint32_t)i, &exists, NULL);
		if (rc)
			return rc;
		n += exists;
	}
	return n;
}

static int wait_objs_gone(const weir_fid_t *fid, const uint32_t *osts, int nr, unsigned ms)
{
	uint64_t t0 = th_now_ms();
	int n;

	while ((n = objs_present(fid, osts, nr)) != 0) {
		if (th_now_ms() - t0 > ms) {
			fprintf(stderr,
				"\n  %d of %d objects of "
				"[0x%llx:0x%llx] still on their "
				"OSTs after %u ms\n",
				n, nr, (unsigned long long)fid->seq, (unsigned long long)fid->oid,
				ms);
			return n < 0 ? n : -ETIMEDOUT;
		}
		th_sleep_ms(50);
	}
	return 0;
}

/* Open \a path read-only and read \a len bytes at \a off. \return bytes or -errno. */
static ssize_t read_at(const char *path, void *buf, size_t len, uint64_t off)
{
	weir_file_t *fh = NULL;
	size_t done = 0;
	int rc = weir_open(fs, path, O_RDONLY, 0, &fh);

	if (rc)
		return rc;
	while (done < len) {
		ssize_t r = weir_pread(fh, (char *)buf + done, len - done, off + done);
		if (r < 0) {
			weir_close(fh);
			return r;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	weir_close(fh);
	return (ssize_t)done;
}

/* ------------------------------------------------------------ import 1,000 objects */

/* Size and key of import object \a i: 0 B .. 16 KiB mostly, some 64-576 KiB, ten 1-3 MiB. */
static size_t imp_size(unsigned i)
{
	if (i % 100 == 7)
		return (size_t)(1 + i % 3) * MIB + i;
	if (i % 10 == 3)
		return (size_t)(1 + i % 8) * 64 * KIB + i;
	if (i % 50 == 0)
		return 0;
	return ((size_t)i * 7919u) % (16 * KIB);
}

static const char *const imp_dirs[] = {"", "a/", "a/b/", "c/d/e/"};

static void imp_rel(unsigned i, char *buf, size_t len)
{
	snprintf(buf, len, "%sf%04u.dat", imp_dirs[i % 4], i);
}

struct imp_job {
	unsigned ij_first, ij_step;
	_Atomic int *ij_bad;
	_Atomic int *ij_done;
	int ij_rc; /* first error */
};

static void *imp_put_thread(void *arg)
{
	struct imp_job *j = arg;
	struct weir_s3 *s = s3_client();
	char key[256], rel[128];
	void *buf = malloc(4 * MIB);

	if (!s || !buf) {
		j->ij_rc = -ENOMEM;
		goto out;
	}
	for (unsigned i = j->ij_first; i < NR_IMPORT; i += j->ij_step) {
		size_t len = imp_size(i);
		int rc;

		th_fill_pattern(buf, len, 1000 + i);
		imp_rel(i, rel, sizeof(rel));
		snprintf(key, sizeof(key), "imp/%s", rel);
		rc = weir_s3_put(s, key, buf, len, NULL);
		if (rc && !j->ij_rc)
			j->ij_rc = rc;
	}
out:
	free(buf);
	weir_s3_free(s);
	return NULL;
}

static void *imp_read_thread(void *arg)
{
	struct imp_job *j = arg;
	char path[256], rel[128];
	void *want = malloc(4 * MIB), *got = malloc(4 * MIB);

	if (!want || !got) {
		j->ij_rc = -ENOMEM;
		goto out;
	}
	for (unsigned i = j->ij_first; i < NR_IMPORT; i += j->ij_step) {
		size_t len = imp_size(i);
		ssize_t n;

		imp_rel(i, rel, sizeof(rel));
		snprintf(path, sizeof(path), "/imp/%s", rel);
		th_fill_pattern(want, len, 1000 + i);
		n = read_at(path, got, len + 1, 0); /* + 1: nothing past the end */
		if (n != (ssize_t)len || memcmp(want, got, len) != 0) {
			if (atomic_fetch_add(j->ij_bad, 1) < 5)
				fprintf(stderr, "\n  %s: read %zd of %zu bytes%s\n", path, n, len,
					n == (ssize_t)len ? ", content differs" : "");
		}
		atomic_fetch_add(j->ij_done, 1);
	}
out:
	free(want);
	free(got);
	return NULL;
}

static void test_hsm_import_1000(void)
{
	pthread_t th[IMPORT_READ_THREADS];
	struct imp_job jobs[IMPORT_READ_THREADS];
	_Atomic int bad = 0, done = 0;
	char path[256], rel[128];
	uint64_t t0 = th_now_ms(), t1, t2;
	int wrong_size = 0, wrong_state = 0;

	/* upload the bucket's objects, 4 streams */
	memset(jobs, 0, sizeof(jobs));
	for (int t = 0; t < IMPORT_PUT_THREADS; t++) {
		jobs[t].ij_first = (unsigned)t;
		jobs[t].ij_step = IMPORT_PUT_THREADS;
		CU_ASSERT_FATAL(pthread_create(&th[t], NULL, imp_put_thread, &jobs[t]) == 0);
	}
	for (int t = 0; t < IMPORT_PUT_THREADS; t++) {
		pthread_join(th[t], NULL);
		CU_ASSERT_EQUAL(jobs[t].ij_rc, 0);
	}
	t1 = th_now_ms();
	/* import: the tree appears at once, with sizes, released */
	CU_ASSERT_EQUAL_FATAL(th_rc("mkdir /imp", weir_mkdir(fs, "/imp", 0755)), 0);
	CU_ASSERT_EQUAL_FATAL(th_cluster_cli(cl, "dra create /imp s3://" BUCKET "/imp --import"), 0);
	t2 = th_now_ms();
	for (unsigned i = 0; i < NR_IMPORT; i++) {
		struct stat st;
		struct weir_hsm_state hs;

		imp_rel(i, rel, sizeof(rel));
		snprintf(path, sizeof(path), "/imp/%s", rel);
		if (weir_stat(fs, path, &st) != 0 || (size_t)st.st_size != imp_size(i) ||
		    st.st_blocks != 0 || !S_ISREG(st.st_mode)) {
			if (wrong_size++ < 5)
				fprintf(stderr,
					"\n  %s: stat rc %d size %lld (want %zu) blocks %lld\n",
					path, weir_stat(fs, path, &st), (long long)st.st_size,
					imp_size(i), (long long)st.st_blocks);
			continue;
		}
		if (i % 37 == 0) {
			memset(&hs, 0, sizeof(hs));
			const uint32_t want =
			    WEIR_HS_EXISTS | WEIR_HS_ARCHIVED | WEIR_HS_RELEASED | WEIR_HS_IMPORTED;
			if (weir_hsm_state_get(fs, path, &hs) || hs.hs_flags != want ||
			    strcmp(hs.hs_key + 4, rel) || strncmp(hs.hs_key, "imp/", 4) ||
			    hs.hs_etag[0] != '"') {
				if (wrong_state++ < 3)
					state_print(path, &hs);
			}
		}
	}
	CU_ASSERT_EQUAL(wrong_size, 0);
	CU_ASSERT_EQUAL(wrong_state, 0);

	/* read every file through libweir, 8 readers: each first read restores */
	memset(jobs, 0, sizeof(jobs));
	for (int t = 0; t < IMPORT_READ_THREADS; t++) {
		jobs[t].ij_first = (unsigned)t;
		jobs[t].ij_step = IMPORT_READ_THREADS;
		jobs[t].ij_bad = &bad;
		jobs[t].ij_done = &done;
		CU_ASSERT_FATAL(pthread_create(&th[t], NULL, imp_read_thread, &jobs[t]) == 0);
	}
	for (int t = 0; t < IMPORT_READ_THREADS; t++) {
		pthread_join(th[t], NULL);
		CU_ASSERT_EQUAL(jobs[t].ij_rc, 0);
	}
	CU_ASSERT_EQUAL(atomic_load(&done), NR_IMPORT);
	CU_ASSERT_EQUAL(atomic_load(&bad), 0);
	/* restored files are not released any more, and keep their archive copy */
	CU_ASSERT_EQUAL(wait_flags("/imp/c/d/e/f0007.dat", WEIR_HS_RELEASED | WEIR_HS_ARCHIVED,
				   WEIR_HS_ARCHIVED, 10000),
			0);
	fprintf(stderr, "\n  import: upload %llu ms, import %llu ms, read+restore %llu ms ",
		(unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1),
		(unsigned long long)(th_now_ms() - t2));
}

/* ------------------------------------------------------------ changed behind our back */

static void test_hsm_overwritten_object(void)
{
	struct weir_s3 *s = s3_client();
	size_t old_len = 300 * KIB + 5, new_len = 700 * KIB + 11;
	char *old = malloc(old_len), *nw = malloc(new_len), *back = malloc(new_len + 4096);
	struct weir_hsm_state st;
	ssize_t n;

	CU_ASSERT_FATAL(s && old && nw && back);
	th_fill_pattern(old, old_len, 51);
	th_fill_pattern(nw, new_len, 52);
	CU_ASSERT_EQUAL(weir_s3_put(s, "ow/x.dat", old, old_len, NULL), 0);
	CU_ASSERT_EQUAL(weir_s3_put(s, "owr/x.dat", old, old_len, NULL), 0);
	CU_ASSERT_EQUAL(weir_s3_put(s, "ow/empty", "", 0, NULL), 0);
	CU_ASSERT_EQUAL(weir_s3_put(s, "owr/empty", "", 0, NULL), 0);
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/ow", 0755), 0);
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/owr", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(th_cluster_cli(cl, "dra create /ow s3://" BUCKET "/ow --import"), 0);
	CU_ASSERT_EQUAL_FATAL(th_cluster_cli(cl, "dra create /owr s3://" BUCKET "/owr --import --reimport"),
			      0);
	CU_ASSERT_EQUAL(th_size(fs, "/ow/x.dat"), (long long)old_len);
	CU_ASSERT_EQUAL(th_size(fs, "/owr/x.dat"), (long long)old_len);
	/* overwritten in S3 with other bytes and another size, behind Weir's back */
	CU_ASSERT_EQUAL(weir_s3_put(s, "ow/x.dat", nw, new_len, NULL), 0);
	CU_ASSERT_EQUAL(weir_s3_put(s, "owr/x.dat", nw, new_len, NULL), 0);
	/* empty objects too: no byte to restore, but the ETag is checked all the same */
	CU_ASSERT_EQUAL(weir_s3_put(s, "ow/empty", "tampered", 8, NULL), 0);
	CU_ASSERT_EQUAL(weir_s3_put(s, "owr/empty", "tampered", 8, NULL), 0);
	CU_ASSERT_EQUAL(read_at("/ow/empty", back, 100, 0), -EIO);
	n = read_at("/owr/empty", back, 100, 0);
	CU_ASSERT(n == 8 && memcmp(back, "tampered", 8) == 0);

	/* default DRA: never served stale: EIO, marked lost */
	n = read_at("/ow/x.dat", back, old_len, 0);
	CU_ASSERT_EQUAL(n, -EIO);
	if (n != -EIO)
		fprintf(stderr, "\n  /ow/x.dat: read gave %zd, want -EIO\n", n);
	st = state_of("/ow/x.dat");
	CU_ASSERT(st.hs_flags & WEIR_HS_LOST);
	CU_ASSERT(st.hs_flags & WEIR_HS_RELEASED);
	if (!(st.hs_flags & WEIR_HS_LOST))
		state_print("/ow/x.dat", &st);
	CU_ASSERT_EQUAL(read_at("/ow/x.dat", back, 100, 1000), -EIO); /* and stays so */
	/* until a rescan takes the new version: read at once, no manual restore */
	CU_ASSERT_EQUAL(th_cluster_cli(cl, "dra import /ow"), 0);
	n = read_at("/ow/x.dat", back, new_len + 4096, 0);
	CU_ASSERT(n == (ssize_t)new_len && memcmp(back, nw, new_len) == 0);
	if (n != (ssize_t)new_len)
		fprintf(stderr, "\n  /ow/x.dat after rescan: read gave %zd, want %zu\n", n, new_len);

	/* --reimport DRA: the new version is imported and read */
	n = read_at("/owr/x.dat", back, new_len + 4096, 0);
	CU_ASSERT_EQUAL(n, (ssize_t)new_len);
	CU_ASSERT(n == (ssize_t)new_len && memcmp(back, nw, new_len) == 0);
	if (n != (ssize_t)new_len)
		fprintf(stderr, "\n  /owr/x.dat: read gave %zd, want %zu\n", n, new_len);
	CU_ASSERT_EQUAL(th_size(fs, "/owr/x.dat"), (long long)new_len);
	st = state_of("/owr/x.dat");
	CU_ASSERT_EQUAL(st.hs_flags & (WEIR_HS_LOST | WEIR_HS_DIRTY), 0);
	free(old);
	free(nw);
	free(back);
	weir_s3_free(s);
}

/* ------------------------------------------------------------ release refused; re-archive */

static void test_hsm_release_refused_and_rearchive(void)
{
	const size_t len = 3 * MIB + 77;
	char *buf = malloc(len), *back = malloc(len);
	struct weir_hsm_state a, b;
	weir_file_t *fh = NULL;
	struct weir_s3 *s = s3_client();

	CU_ASSERT_FATAL(buf && back && s);
	th_fill_pattern(buf, len, 61);
	CU_ASSERT_EQUAL(th_put(fs, "/arc/never", buf, 4096), 0);
	CU_ASSERT_EQUAL(th_put(fs, "/arc/mod", buf, len), 0);
	CU_ASSERT_EQUAL(th_put(fs, "/noassoc", buf, 10), 0);

	/* never archived; not under an association */
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/never", NULL), -ENODATA);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/noassoc", NULL), -EINVAL);
	ASSERT_RC(request1(WEIR_HSM_ARCHIVE, "/noassoc", NULL), -EINVAL);
	CU_ASSERT_EQUAL(state_of("/arc/never").hs_flags & WEIR_HS_RELEASED, 0);

	/* archived: the S3 object holds the bytes, under prefix + path */
	CU_ASSERT_EQUAL_FATAL(archive_wait("/arc/mod"), 0);
	a = state_of("/arc/mod");
	CU_ASSERT_STRING_EQUAL(a.hs_key, "arc/mod");
	CU_ASSERT_STRING_EQUAL(a.hs_bucket, BUCKET);
	CU_ASSERT(a.hs_etag[0] == '"');
	CU_ASSERT_EQUAL(a.hs_archived_version, a.hs_data_version);
	CU_ASSERT_EQUAL(a.hs_size, len);
	memset(back, 0, len);
	CU_ASSERT_EQUAL(weir_s3_get(s, "arc/mod", 0, len, back, NULL), (ssize_t)len);
	CU_ASSERT(memcmp(back, buf, len) == 0);
	/* a second archive of a clean archived file */
	ASSERT_RC(request1(WEIR_HSM_ARCHIVE, "/arc/mod", NULL), -EALREADY);

	/* open (even read-only): busy */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/arc/mod", O_RDONLY, 0, &fh), 0);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/mod", NULL), -EBUSY);
	weir_close(fh);

	/* modified after archive: dirty, release refused */
	buf[5] ^= 0x5a;
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/arc/mod", O_WRONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, buf + 5, 1, 5), 1);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	b = state_of("/arc/mod");
	CU_ASSERT_EQUAL(b.hs_flags & (WEIR_HS_DIRTY | WEIR_HS_EXISTS | WEIR_HS_RELEASED),
			WEIR_HS_DIRTY | WEIR_HS_EXISTS);
	CU_ASSERT(b.hs_data_version != b.hs_archived_version);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/mod", NULL), -ENODATA);
	CU_ASSERT_EQUAL(state_of("/arc/mod").hs_flags & WEIR_HS_RELEASED, 0);

	/* archived again: clean, a new ETag, the new bytes in S3 */
	CU_ASSERT_EQUAL_FATAL(archive_wait("/arc/mod"), 0);
	b = state_of("/arc/mod");
	CU_ASSERT(strcmp(a.hs_etag, b.hs_etag) != 0);
	CU_ASSERT_EQUAL(b.hs_archived_version, b.hs_data_version);
	CU_ASSERT(b.hs_data_version != a.hs_data_version);
	memset(back, 0, len);
	CU_ASSERT_EQUAL(weir_s3_get(s, "arc/mod", 0, len, back, NULL), (ssize_t)len);
	CU_ASSERT(memcmp(back, buf, len) == 0);
	/* now it can be released, and reads back right */
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/mod", NULL), 0);
	CU_ASSERT(state_of("/arc/mod").hs_flags & WEIR_HS_RELEASED);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/mod", NULL), -EALREADY);
	memset(back, 0, len);
	CU_ASSERT_EQUAL(th_get(fs, "/arc/mod", back, len), (ssize_t)len);
	CU_ASSERT(memcmp(back, buf, len) == 0);
	free(buf);
	free(back);
	weir_s3_free(s);
}

/* ------------------------------------------------------------ auto-export */

static void test_hsm_auto_export(void)
{
	const size_t len = 1 * MIB + 3;
	char *buf = malloc(len), *back = malloc(len);
	struct weir_s3 *s = s3_client();
	struct weir_hsm_state st;

	CU_ASSERT_FATAL(buf && back && s);
	th_fill_pattern(buf, len, 71);
	CU_ASSERT_EQUAL(th_put(fs, "/auto/sub/ckpt.bin", buf, len), 0);
	/* queued at close, archived by the copytool without a request */
	CU_ASSERT_EQUAL(wait_flags("/auto/sub/ckpt.bin",
				   WEIR_HS_EXISTS | WEIR_HS_ARCHIVED | WEIR_HS_DIRTY,
				   WEIR_HS_EXISTS | WEIR_HS_ARCHIVED, 20000),
			0);
	st = state_of("/auto/sub/ckpt.bin");
	CU_ASSERT_STRING_EQUAL(st.hs_key, "auto/sub/ckpt.bin");
	memset(back, 0, len);
	CU_ASSERT_EQUAL(weir_s3_get(s, "auto/sub/ckpt.bin", 0, len, back, NULL), (ssize_t)len);
	CU_ASSERT(memcmp(back, buf, len) == 0);
	/* written again: archived again, with the new bytes */
	buf[0] ^= 1;
	CU_ASSERT_EQUAL(th_put(fs, "/auto/sub/ckpt.bin", buf, len), 0);
	CU_ASSERT_EQUAL(wait_flags("/auto/sub/ckpt.bin",
				   WEIR_HS_EXISTS | WEIR_HS_ARCHIVED | WEIR_HS_DIRTY,
				   WEIR_HS_EXISTS | WEIR_HS_ARCHIVED, 20000),
			0);
	CU_ASSERT(strcmp(state_of("/auto/sub/ckpt.bin").hs_etag, st.hs_etag) != 0);
	memset(back, 0, len);
	CU_ASSERT_EQUAL(weir_s3_get(s, "auto/sub/ckpt.bin", 0, len, back, NULL), (ssize_t)len);
	CU_ASSERT(memcmp(back, buf, len) == 0);
	free(buf);
	free(back);
	weir_s3_free(s);
}

/* ------------------------------------------------------------ 256 MiB striped file */

static char *big;      /* BIG_SIZE bytes: the file's content */
static char *big_back; /* BIG_SIZE bytes */

static void test_hsm_big_file_partial_read(void)
{
	const uint64_t mid = BIG_SIZE / 2 + 12345;
	weir_fid_t fid, fid2;
	uint32_t osts[8];
	struct weir_hsm_state st;
	struct stat sb;
	int nr;
	uint64_t t0;

	CU_ASSERT_FATAL(big && big_back);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/arc/s4/big", big, BIG_SIZE), 0);
	nr = osts_of("/arc/s4/big", &fid, osts, 8);
	CU_ASSERT_EQUAL_FATAL(nr, 4);
	CU_ASSERT_EQUAL(objs_present(&fid, osts, nr), 4);
	t0 = th_now_ms();
	CU_ASSERT_EQUAL_FATAL(archive_wait("/arc/s4/big"), 0);
	fprintf(stderr, "\n  256 MiB archived in %llu ms ", (unsigned long long)(th_now_ms() - t0));

	/* release: objects destroyed; name, size, layout kept; no blocks */
	CU_ASSERT_EQUAL_FATAL(request1(WEIR_HSM_RELEASE, "/arc/s4/big", NULL), 0);
	st = state_of("/arc/s4/big");
	CU_ASSERT(st.hs_flags & WEIR_HS_RELEASED);
	CU_ASSERT_EQUAL(weir_stat(fs, "/arc/s4/big", &sb), 0);
	CU_ASSERT_EQUAL((uint64_t)sb.st_size, BIG_SIZE);
	CU_ASSERT_EQUAL(sb.st_blocks, 0);
	CU_ASSERT_EQUAL(wait_objs_gone(&fid, osts, nr, 15000), 0);
	CU_ASSERT_EQUAL(osts_of("/arc/s4/big", &fid2, osts, 8), 4);

	/* a 1 MiB read from the middle returns before the whole file is back */
	memset(big_back, 0, MIB);
	t0 = th_now_ms();
	CU_ASSERT_EQUAL(read_at("/arc/s4/big", big_back, MIB, mid), (ssize_t)MIB);
	CU_ASSERT(memcmp(big_back, big + mid, MIB) == 0);
	CU_ASSERT_EQUAL(weir_hsm_state_fid(fs, &fid, &st), 0);
	fprintf(stderr, "\n  1 MiB from the middle after %llu ms, %llu of %llu bytes restored ",
		(unsigned long long)(th_now_ms() - t0), (unsigned long long)st.hs_restored,
		(unsigned long long)BIG_SIZE);
	CU_ASSERT(st.hs_flags & WEIR_HS_RELEASED);
	CU_ASSERT(st.hs_restored < BIG_SIZE);

	/* then the whole file */
	memset(big_back, 0, BIG_SIZE);
	CU_ASSERT_EQUAL(th_get(fs, "/arc/s4/big", big_back, BIG_SIZE), (ssize_t)BIG_SIZE);
	CU_ASSERT_EQUAL(th_diff_at(big_back, big, BIG_SIZE), -1);
	fprintf(stderr, "\n  whole file after %llu ms ", (unsigned long long)(th_now_ms() - t0));
	CU_ASSERT_EQUAL(wait_flags("/arc/s4/big",
				   WEIR_HS_RELEASED | WEIR_HS_ARCHIVED | WEIR_HS_DIRTY,
				   WEIR_HS_ARCHIVED, 10000),
			0);
	CU_ASSERT_EQUAL(objs_present(&fid, osts, nr), 4);
}

/* ------------------------------------------------------------ kill -9 of the copytool */

static void test_hsm_restore_survives_copytool_kill(void)
{
	struct weir_hsm_state st;
	weir_fid_t fid;
	uint32_t osts[8];
	uint64_t id = 0, t0, at_kill = 0;
	int nr;

	CU_ASSERT_FATAL(big && big_back);
	nr = osts_of("/arc/s4/big", &fid, osts, 8);
	CU_ASSERT_EQUAL_FATAL(nr, 4);
	if (!(state_of("/arc/s4/big").hs_flags & WEIR_HS_ARCHIVED)) {
		/* the previous case failed before archiving */
		CU_ASSERT_EQUAL_FATAL(th_put(fs, "/arc/s4/big", big, BIG_SIZE), 0);
		CU_ASSERT_EQUAL_FATAL(archive_wait("/arc/s4/big"), 0);
	}
	CU_ASSERT_EQUAL_FATAL(request1(WEIR_HSM_RELEASE, "/arc/s4/big", NULL), 0);
	CU_ASSERT_EQUAL(wait_objs_gone(&fid, osts, nr, 15000), 0);

	/* a prefetch restore; kill -9 the copytool once some but not all is back */
	CU_ASSERT_EQUAL_FATAL(request1(WEIR_HSM_RESTORE, "/arc/s4/big", &id), 0);
	CU_ASSERT(id != 0);
	t0 = th_now_ms();
	for (;;) {
		memset(&st, 0, sizeof(st));
		CU_ASSERT_EQUAL_FATAL(weir_hsm_state_fid(fs, &fid, &st), 0);
		if (st.hs_restored > 0 || !(st.hs_flags & WEIR_HS_RELEASED))
			break;
		if (th_now_ms() - t0 > WAIT_MS) {
			state_print("restore did not start", &st);
			CU_FAIL_FATAL("restore did not start");
		}
		th_sleep_ms(5);
	}
	CU_ASSERT_EQUAL(th_hsmd_kill(hd), 0);
	at_kill = st.hs_restored;
	fprintf(stderr, "\n  copytool killed with %llu of %llu bytes restored ",
		(unsigned long long)at_kill, (unsigned long long)BIG_SIZE);
	CU_ASSERT(st.hs_flags & WEIR_HS_RELEASED);
	CU_ASSERT(at_kill < BIG_SIZE);
	/* nothing moves while no copytool runs; what was restored stays restored */
	th_sleep_ms(500);
	st = state_of("/arc/s4/big");
	CU_ASSERT(st.hs_flags & WEIR_HS_RELEASED);
	CU_ASSERT(st.hs_restored >= at_kill);
	/* once the dead copytool's session is evicted, its restore waits for another one */
	t0 = th_now_ms();
	while (action_of(id).hai_state == WEIR_HSM_RUNNING && th_now_ms() - t0 < 20000)
		th_sleep_ms(50);
	st = state_of("/arc/s4/big");
	CU_ASSERT_EQUAL(action_of(id).hai_state, WEIR_HSM_WAITING);
	CU_ASSERT(st.hs_restored >= at_kill);
	fprintf(stderr, "\n  back to waiting %llu ms after the kill, %llu bytes restored kept ",
		(unsigned long long)(th_now_ms() - t0 + 500), (unsigned long long)st.hs_restored);

	/* a new copytool finishes it (after the dead one's session is evicted) */
	t0 = th_now_ms();
	CU_ASSERT_EQUAL_FATAL(th_hsmd_restart(hd), 0);
	CU_ASSERT_EQUAL(wait_flags("/arc/s4/big", WEIR_HS_RELEASED, 0, WAIT_MS), 0);
	fprintf(stderr, "\n  restore finished %llu ms after the restart ",
		(unsigned long long)(th_now_ms() - t0));
	struct weir_hsm_action_info ai = action_of(id);
	CU_ASSERT(ai.hai_state == WEIR_HSM_DONE || ai.hai_state == WEIR_HSM_FAILED + 1);
	CU_ASSERT_EQUAL(ai.hai_rc, 0);
	memset(big_back, 0, BIG_SIZE);
	CU_ASSERT_EQUAL(th_get(fs, "/arc/s4/big", big_back, BIG_SIZE), (ssize_t)BIG_SIZE);
	CU_ASSERT_EQUAL(th_diff_at(big_back, big, BIG_SIZE), -1);
	CU_ASSERT_EQUAL(objs_present(&fid, osts, nr), 4);
}

/* ------------------------------------------------------------ kill -9 of the MDS mid-restore */

static void test_hsm_restore_survives_mds_kill(void)
{
	struct weir_hsm_state st;
	weir_fid_t fid;
	uint32_t osts[8];
	uint64_t t0;
	int nr;

	CU_ASSERT_FATAL(big && big_back);
	nr = osts_of("/arc/s4/big", &fid, osts, 8);
	CU_ASSERT_EQUAL_FATAL(nr, 4);
	CU_ASSERT_EQUAL_FATAL(wait_flags("/arc/s4/big",
					 WEIR_HS_ARCHIVED | WEIR_HS_DIRTY | WEIR_HS_RELEASED,
					 WEIR_HS_ARCHIVED, 1000),
			      0);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/s4/big", NULL), 0);
	CU_ASSERT_EQUAL(wait_objs_gone(&fid, osts, nr, 15000), 0);
	ASSERT_RC(request1(WEIR_HSM_RESTORE, "/arc/s4/big", NULL), 0);
	t0 = th_now_ms();
	for (;;) {
		memset(&st, 0, sizeof(st));
		CU_ASSERT_EQUAL_FATAL(weir_hsm_state_fid(fs, &fid, &st), 0);
		if (st.hs_restored > 0 || !(st.hs_flags & WEIR_HS_RELEASED))
			break;
		if (th_now_ms() - t0 > WAIT_MS)
			CU_FAIL_FATAL("restore did not start");
		th_sleep_ms(5);
	}
	/* the coordinator dies; its queue and the restored chunks are on the MDT */
	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, TH_MDS), 0);
	fprintf(stderr, "\n  MDS killed with %llu of %llu bytes restored ",
		(unsigned long long)st.hs_restored, (unsigned long long)BIG_SIZE);
	CU_ASSERT(st.hs_restored < BIG_SIZE);
	th_sleep_ms(300);
	CU_ASSERT_EQUAL_FATAL(th_server_start(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_cluster_wait_up(cl, 30000), 0);
	t0 = th_now_ms();
	CU_ASSERT_EQUAL(wait_flags("/arc/s4/big", WEIR_HS_RELEASED, 0, WAIT_MS), 0);
	fprintf(stderr, "\n  restore finished %llu ms after the MDS restart ",
		(unsigned long long)(th_now_ms() - t0));
	memset(big_back, 0, BIG_SIZE);
	CU_ASSERT_EQUAL(th_get(fs, "/arc/s4/big", big_back, BIG_SIZE), (ssize_t)BIG_SIZE);
	CU_ASSERT_EQUAL(th_diff_at(big_back, big, BIG_SIZE), -1);
	CU_ASSERT(th_hsmd_alive(hd));
}

/* ------------------------------------------------------------ kill -9 mid-archive */

static void test_hsm_archive_survives_copytool_kill(void)
{
	const size_t len = 64 * MIB + 4097; /* 9 parts of 8 MiB */
	struct weir_hsm_action_info ai;
	struct weir_hsm_state st;
	struct weir_s3_obj o;
	struct weir_s3 *s = s3_client();
	uint64_t id = 0, t0;

	CU_ASSERT_FATAL(s && big && big_back);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/arc/s4/mpu", big + 777, len), 0);
	ASSERT_RC(request1(WEIR_HSM_ARCHIVE, "/arc/s4/mpu", &id), 0);
	CU_ASSERT_FATAL(id != 0);
	t0 = th_now_ms();
	for (;;) {
		ai = action_of(id);
		if (ai.hai_bytes_done > 0 || ai.hai_state == WEIR_HSM_DONE ||
		    ai.hai_state == WEIR_HSM_FAILED)
			break;
		if (th_now_ms() - t0 > WAIT_MS)
			CU_FAIL_FATAL("archive did not start");
		th_sleep_ms(5);
	}
	CU_ASSERT_EQUAL(th_hsmd_kill(hd), 0);
	fprintf(stderr, "\n  copytool killed with %llu of %llu bytes uploaded (state %u) ",
		(unsigned long long)ai.hai_bytes_done, (unsigned long long)ai.hai_bytes_total,
		ai.hai_state);
	CU_ASSERT_EQUAL(ai.hai_state, WEIR_HSM_RUNNING);
	CU_ASSERT(ai.hai_bytes_done < len);
	st = state_of("/arc/s4/mpu");
	CU_ASSERT_EQUAL(st.hs_flags & WEIR_HS_ARCHIVED, 0);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/s4/mpu", NULL), -ENODATA);

	/* a new copytool starts the upload again and completes it */
	CU_ASSERT_EQUAL_FATAL(th_hsmd_restart(hd), 0);
	CU_ASSERT_EQUAL(wait_flags("/arc/s4/mpu", WEIR_HS_EXISTS | WEIR_HS_ARCHIVED | WEIR_HS_DIRTY,
				   WEIR_HS_EXISTS | WEIR_HS_ARCHIVED, WAIT_MS),
			0);
	st = state_of("/arc/s4/mpu");
	CU_ASSERT_EQUAL(weir_s3_head(s, "arc/s4/mpu", &o), 0);
	CU_ASSERT_EQUAL(o.so_size, len);
	CU_ASSERT_STRING_EQUAL(o.so_etag, st.hs_etag);
	memset(big_back, 0, len);
	CU_ASSERT_EQUAL(weir_s3_get(s, "arc/s4/mpu", 0, len, big_back, NULL), (ssize_t)len);
	CU_ASSERT_EQUAL(th_diff_at(big_back, big + 777, len), -1);
	weir_s3_free(s);
}

/* ------------------------------------------------------------ modified during its archive */

static void test_hsm_modified_during_archive(void)
{
	const size_t len = 64 * MIB;
	struct weir_hsm_action_info ai;
	struct weir_hsm_state st;
	struct weir_s3 *s = s3_client();
	weir_file_t *fh = NULL;
	char *want = malloc(len);
	uint64_t id = 0, t0;

	CU_ASSERT_FATAL(s && want && big && big_back);
	memcpy(want, big + 333, len);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/arc/s4/race", want, len), 0);
	ASSERT_RC(request1(WEIR_HSM_ARCHIVE, "/arc/s4/race", &id), 0);
	t0 = th_now_ms();
	do {
		ai = action_of(id);
		if (th_now_ms() - t0 > WAIT_MS)
			CU_FAIL_FATAL("archive did not start");
		th_sleep_ms(2);
	} while (ai.hai_state == WEIR_HSM_WAITING);
	/* a writer changes the file while the copytool uploads it */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/arc/s4/race", O_WRONLY, 0, &fh), 0);
	memcpy(want + len - 10, "raced!", 6);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "raced!", 6, len - 10), 6);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	fprintf(stderr, "\n  written during the archive (state %u, %llu bytes uploaded) ",
		ai.hai_state, (unsigned long long)ai.hai_bytes_done);
	/* that archive must not make the file clean: it may hold the old bytes */
	t0 = th_now_ms();
	while ((ai = action_of(id)).hai_state < WEIR_HSM_DONE && th_now_ms() - t0 < WAIT_MS)
		th_sleep_ms(20);
	st = state_of("/arc/s4/race");
	CU_ASSERT(st.hs_flags & WEIR_HS_DIRTY);
	CU_ASSERT(st.hs_archived_version != st.hs_data_version);
	if (!(st.hs_flags & WEIR_HS_DIRTY))
		state_print("/arc/s4/race after a raced archive", &st);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/s4/race", NULL), -ENODATA);
	/* archived again: clean, with the written bytes */
	CU_ASSERT_EQUAL_FATAL(archive_wait("/arc/s4/race"), 0);
	memset(big_back, 0, len);
	CU_ASSERT_EQUAL(weir_s3_get(s, "arc/s4/race", 0, len, big_back, NULL), (ssize_t)len);
	CU_ASSERT_EQUAL(th_diff_at(big_back, want, len), -1);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/s4/race", NULL), 0);
	memset(big_back, 0, len);
	CU_ASSERT_EQUAL(th_get(fs, "/arc/s4/race", big_back, len), (ssize_t)len);
	CU_ASSERT_EQUAL(th_diff_at(big_back, want, len), -1);
	free(want);
	weir_s3_free(s);
}

/* ------------------------------------------------------------ concurrent readers, one restore */

struct conc_reader {
	const char *cr_path;
	size_t cr_len;
	const char *cr_want;
	ssize_t cr_got;
	int cr_same;
};

static void *conc_read_thread(void *arg)
{
	struct conc_reader *r = arg;
	char *buf = malloc(r->cr_len);

	if (!buf) {
		r->cr_got = -ENOMEM;
		return NULL;
	}
	r->cr_got = read_at(r->cr_path, buf, r->cr_len, 0);
	r->cr_same = r->cr_got == (ssize_t)r->cr_len && memcmp(buf, r->cr_want, r->cr_len) == 0;
	free(buf);
	return NULL;
}

static void test_hsm_concurrent_readers_one_restore(void)
{
	const size_t len = 24 * MIB + 5;
	struct conc_reader rd[4];
	pthread_t th[4];
	struct weir_hsm_queue *q0 = NULL, *q1 = NULL;

	CU_ASSERT_FATAL(big != NULL);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/arc/s4/conc", big + 4096, len), 0);
	CU_ASSERT_EQUAL_FATAL(archive_wait("/arc/s4/conc"), 0);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/s4/conc", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(weir_hsm_queue_get(fs, NULL, 0, &q0), 0);
	for (int i = 0; i < 4; i++) {
		rd[i] = (struct conc_reader){"/arc/s4/conc", len, big + 4096, 0, 0};
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, conc_read_thread, &rd[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(rd[i].cr_got, (ssize_t)len);
		CU_ASSERT(rd[i].cr_same);
	}
	CU_ASSERT_EQUAL(wait_flags("/arc/s4/conc", WEIR_HS_RELEASED, 0, 10000), 0);
	CU_ASSERT_EQUAL_FATAL(weir_hsm_queue_get(fs, NULL, 0, &q1), 0);
	/* four readers, one restore action */
	CU_ASSERT_EQUAL(q1->hq_done - q0->hq_done, 1);
	CU_ASSERT_EQUAL(q1->hq_failed, q0->hq_failed);
	if (q1->hq_done - q0->hq_done != 1)
		fprintf(stderr, "\n  actions done during the 4 reads: %llu\n",
			(unsigned long long)(q1->hq_done - q0->hq_done));
	weir_hsm_queue_free(q0);
	weir_hsm_queue_free(q1);
}

/* ------------------------------------------------------------ writes to released files */

static void test_hsm_write_released(void)
{
	const size_t len = 5 * MIB + 3;
	char *want = malloc(len), *back = malloc(len);
	weir_file_t *fh = NULL;
	struct weir_hsm_state st;
	struct stat sb;

	CU_ASSERT_FATAL(want && back);
	th_fill_pattern(want, len, 101);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/arc/wr", want, len), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/arc/tr", want, len), 0);
	CU_ASSERT_EQUAL_FATAL(archive_wait("/arc/wr"), 0);
	CU_ASSERT_EQUAL_FATAL(archive_wait("/arc/tr"), 0);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/wr", NULL), 0);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/tr", NULL), 0);

	/* a write into a released file: the whole file comes back first */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/arc/wr", O_WRONLY, 0, &fh), 0);
	memcpy(want + MIB, "patched!", 8);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "patched!", 8, MIB), 8);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	memset(back, 0, len);
	CU_ASSERT_EQUAL(th_get(fs, "/arc/wr", back, len), (ssize_t)len);
	CU_ASSERT_EQUAL(th_diff_at(back, want, len), -1);
	st = state_of("/arc/wr");
	CU_ASSERT_EQUAL(st.hs_flags & (WEIR_HS_RELEASED | WEIR_HS_DIRTY | WEIR_HS_EXISTS),
			WEIR_HS_DIRTY | WEIR_HS_EXISTS);

	/* O_TRUNC needs no data: empty at once, dirty */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/arc/tr", O_WRONLY | O_TRUNC, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "new", 3, 0), 3);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/arc/tr", &sb), 0);
	CU_ASSERT_EQUAL(sb.st_size, 3);
	CU_ASSERT_EQUAL(th_get(fs, "/arc/tr", back, 16), 3);
	CU_ASSERT(memcmp(back, "new", 3) == 0);
	st = state_of("/arc/tr");
	CU_ASSERT_EQUAL(st.hs_flags & (WEIR_HS_RELEASED | WEIR_HS_DIRTY), WEIR_HS_DIRTY);
	free(want);
	free(back);
}

/* ------------------------------------------------------------ import rescan */

/* An import of one object says "1 object", not "1 objects" (weir dra import's summary). */
static void test_hsm_import_one_object_singular(void)
{
	struct weir_s3 *s = s3_client();
	char text[4096];

	CU_ASSERT_FATAL(s != NULL);
	CU_ASSERT_EQUAL(weir_s3_put(s, "one/only", "x", 1, NULL), 0);
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/one", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(th_cluster_cli(cl, "dra create /one s3://" BUCKET "/one"), 0);
	CU_ASSERT_EQUAL_FATAL(th_cluster_cli(cl, "dra import /one"), 0);
	FILE *f = fopen(th_cluster_cli_out(cl), "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "listed 1 object\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "1 created, 0 updated, 0 unchanged, 0 removed, 0 kept,"
					    " 0 errors\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, " into /one: 1 object listed in "));
	CU_ASSERT_PTR_NULL(strstr(text, "1 objects "));
	if (!strstr(text, " into /one: 1 object listed in ") || strstr(text, "1 objects "))
		fprintf(stderr, "\n  weir dra import /one said:\n%s\n", text);
	weir_s3_free(s);
	CU_ASSERT_EQUAL(th_size(fs, "/one/only"), 1);
}

static void test_hsm_import_rescan(void)
{
	struct weir_s3 *s = s3_client();
	char a[1000], b[3000], c[500], nb[5000], nw[777], back[8192];
	struct stat sb;
	weir_file_t *fh = NULL;

	CU_ASSERT_FATAL(s != NULL);
	th_fill_pattern(a, sizeof(a), 111);
	th_fill_pattern(b, sizeof(b), 112);
	th_fill_pattern(c, sizeof(c), 113);
	th_fill_pattern(nb, sizeof(nb), 114);
	th_fill_pattern(nw, sizeof(nw), 115);
	CU_ASSERT_EQUAL(weir_s3_put(s, "scan/a", a, sizeof(a), NULL), 0);
	CU_ASSERT_EQUAL(weir_s3_put(s, "scan/b", b, sizeof(b), NULL), 0);
	CU_ASSERT_EQUAL(weir_s3_put(s, "scan/sub/c", c, sizeof(c), NULL), 0);
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/scan", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(th_cluster_cli(cl, "dra create /scan s3://" BUCKET "/scan --import"), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/scan/sub/c"), (long long)sizeof(c));
	/* c is modified in Weir (restored first, then dirty) */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/scan/sub/c", O_WRONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "C", 1, 0), 1);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	c[0] = 'C';

	/* the bucket changes: a new object, b overwritten, a and c deleted */
	CU_ASSERT_EQUAL(weir_s3_put(s, "scan/new", nw, sizeof(nw), NULL), 0);
	CU_ASSERT_EQUAL(weir_s3_put(s, "scan/b", nb, sizeof(nb), NULL), 0);
	CU_ASSERT_EQUAL(weir_s3_delete(s, "scan/a"), 0);
	CU_ASSERT_EQUAL(weir_s3_delete(s, "scan/sub/c"), 0);
	CU_ASSERT_EQUAL_FATAL(th_cluster_cli(cl, "dra import /scan"), 0);

	CU_ASSERT_EQUAL(weir_stat(fs, "/scan/a", &sb), -ENOENT);
	CU_ASSERT_EQUAL(th_size(fs, "/scan/new"), (long long)sizeof(nw));
	CU_ASSERT_EQUAL(th_get(fs, "/scan/new", back, sizeof(back)), (ssize_t)sizeof(nw));
	CU_ASSERT(memcmp(back, nw, sizeof(nw)) == 0);
	CU_ASSERT_EQUAL(th_size(fs, "/scan/b"), (long long)sizeof(nb));
	CU_ASSERT_EQUAL(th_get(fs, "/scan/b", back, sizeof(back)), (ssize_t)sizeof(nb));
	CU_ASSERT(memcmp(back, nb, sizeof(nb)) == 0);
	/* modified in Weir: kept, with its bytes */
	CU_ASSERT_EQUAL(th_get(fs, "/scan/sub/c", back, sizeof(back)), (ssize_t)sizeof(c));
	CU_ASSERT(memcmp(back, c, sizeof(c)) == 0);
	weir_s3_free(s);
}

/* ------------------------------------------------------------ S3 down */

static void test_hsm_s3_down(void)
{
	const size_t len = 2 * MIB + 9;
	char *buf = malloc(len), *back = malloc(len);
	struct weir_hsm_action_info ai = {0};
	struct weir_hsm_state st;
	struct weir_s3 *s = NULL;
	uint64_t id = 0, t0;
	bool failed_seen = false;

	CU_ASSERT_FATAL(buf && back);
	th_fill_pattern(buf, len, 81);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/arc/down.bin", buf, len), 0);
	CU_ASSERT_EQUAL_FATAL(th_s3rver_stop(srv), 0);

	/* the archive fails with a clear error; the file is never released */
	ASSERT_RC(request1(WEIR_HSM_ARCHIVE, "/arc/down.bin", &id), 0);
	CU_ASSERT(id != 0);
	t0 = th_now_ms();
	while (th_now_ms() - t0 < 45000) {
		ai = action_of(id);
		if (ai.hai_rc < 0 || ai.hai_state == WEIR_HSM_FAILED) {
			failed_seen = true;
			break;
		}
		th_sleep_ms(100);
	}
	fprintf(stderr, "\n  archive with S3 down: action state %u rc %d after %llu ms ",
		ai.hai_state, ai.hai_rc, (unsigned long long)(th_now_ms() - t0));
	CU_ASSERT(failed_seen);
	CU_ASSERT(ai.hai_rc == -ECONNREFUSED || ai.hai_rc == -EIO || ai.hai_rc == -ETIMEDOUT);
	CU_ASSERT_EQUAL(th_hsmd_log_grep(hd, "arc/down.bin"), 1);
	st = state_of("/arc/down.bin");
	CU_ASSERT_EQUAL(st.hs_flags & (WEIR_HS_ARCHIVED | WEIR_HS_RELEASED), 0);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/down.bin", NULL), -ENODATA);

	/* S3 back: the archive succeeds (retried, or asked again after a final failure) */
	CU_ASSERT_EQUAL_FATAL(th_s3rver_restart(srv), 0);
	if (action_of(id).hai_state == WEIR_HSM_FAILED)
		ASSERT_RC(request1(WEIR_HSM_ARCHIVE, "/arc/down.bin", NULL), 0);
	CU_ASSERT_EQUAL(wait_flags("/arc/down.bin",
				   WEIR_HS_EXISTS | WEIR_HS_ARCHIVED | WEIR_HS_DIRTY,
				   WEIR_HS_EXISTS | WEIR_HS_ARCHIVED, WAIT_MS),
			0);
	s = s3_client();
	CU_ASSERT_FATAL(s != NULL);
	memset(back, 0, len);
	CU_ASSERT_EQUAL(weir_s3_get(s, "arc/down.bin", 0, len, back, NULL), (ssize_t)len);
	CU_ASSERT(memcmp(back, buf, len) == 0);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/down.bin", NULL), 0);
	memset(back, 0, len);
	CU_ASSERT_EQUAL(th_get(fs, "/arc/down.bin", back, len), (ssize_t)len);
	CU_ASSERT(memcmp(back, buf, len) == 0);
	weir_s3_free(s);
	free(buf);
	free(back);
}

/*
 * A restore that failed because S3 was down does not stick: a read while S3
 * is down waits (here bounded by WEIR_RESTORE_TIMEOUT) or fails, and once S3
 * answers again the next read restores the file and returns its bytes,
 * without anyone running `weir hsm restore`.
 */
static void test_hsm_restore_retried_after_s3_down(void)
{
	const size_t len = 300 * 1024 + 7;
	char *buf = malloc(len), *back = malloc(len);

	CU_ASSERT_FATAL(buf && back);
	th_fill_pattern(buf, len, 82);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/arc/rdown.bin", buf, len), 0);
	CU_ASSERT_EQUAL_FATAL(archive_wait("/arc/rdown.bin"), 0);
	ASSERT_RC(request1(WEIR_HSM_RELEASE, "/arc/rdown.bin", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(wait_flags("/arc/rdown.bin", WEIR_HS_RELEASED, WEIR_HS_RELEASED,
					 WAIT_MS), 0);
	CU_ASSERT_EQUAL_FATAL(th_s3rver_stop(srv), 0);

	/* a restore fails for want of S3 */
	uint64_t id = 0, t0 = th_now_ms();
	struct weir_hsm_action_info ai = {0};
	ASSERT_RC(request1(WEIR_HSM_RESTORE, "/arc/rdown.bin", &id), 0);
	while (th_now_ms() - t0 < 120000) {
		ai = action_of(id);
		if (ai.hai_state == WEIR_HSM_FAILED)
			break;
		th_sleep_ms(100);
	}
	fprintf(stderr, "\n  restore with S3 down: state %u rc %d after %llu ms ", ai.hai_state,
		ai.hai_rc, (unsigned long long)(th_now_ms() - t0));
	CU_ASSERT_EQUAL(ai.hai_state, WEIR_HSM_FAILED);

	/* S3 down: a read waits (and gives up at WEIR_RESTORE_TIMEOUT) or fails */
	setenv("WEIR_RESTORE_TIMEOUT", "4", 1);
	t0 = th_now_ms();
	ssize_t n = th_get(fs, "/arc/rdown.bin", back, len);
	fprintf(stderr, "\n  read with S3 down: %zd after %llu ms ", n,
		(unsigned long long)(th_now_ms() - t0));
	CU_ASSERT(n < 0);

	/* S3 back: the next read restores it, with the right bytes */
	CU_ASSERT_EQUAL_FATAL(th_s3rver_restart(srv), 0);
	setenv("WEIR_RESTORE_TIMEOUT", "60", 1);
	t0 = th_now_ms();
	memset(back, 0, len);
	n = th_get(fs, "/arc/rdown.bin", back, len);
	unsetenv("WEIR_RESTORE_TIMEOUT");
	fprintf(stderr, "\n  read with S3 back: %zd after %llu ms ", n,
		(unsigned long long)(th_now_ms() - t0));
	CU_ASSERT_EQUAL(n, (ssize_t)len);
	CU_ASSERT(memcmp(back, buf, len) == 0);
	free(buf);
	free(back);
}

/* ------------------------------------------------------------ backpressure */

/* Does file \a path contain \a needle? 1, 0, or -errno. */
static int file_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int found = 0;

	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/*
 * Over the high watermark with nothing releasable (no association at all):
 * the MDS logs a WARN and throttles writers, the OSSs log it, writes are
 * slowed, never failed. A cluster of its own, so the rest is not throttled.
 */
static void test_hsm_throttle_nothing_releasable(void)
{
	static const char *const args[] = {
		"--hsm-high-watermark", "1", "--hsm-low-watermark", "0", "--hsm-policy-interval",
		"500ms", NULL,
	};
	struct th_cluster_opts o = { 0 };
	struct th_cluster *c2 = NULL;
	weir_fs_t *fs2 = NULL;
	const size_t len = 8 * MIB + 1;
	char *buf = malloc(len), *back = malloc(len), path[PATH_MAX];
	uint64_t t0;
	int warned = 0, oss_warned = 0;

	CU_ASSERT_FATAL(buf && back);
	o.tco_mds_args = args;
	CU_ASSERT_EQUAL_FATAL(th_cluster_start(&o, &c2), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mount(th_cluster_mds_addr(c2), &fs2), 0);
	snprintf(path, sizeof(path), "%s/mds.log", th_cluster_dir(c2));
	t0 = th_now_ms();
	while (th_now_ms() - t0 < 15000 && !(warned = file_has(path, "nothing releasable") == 1))
		th_sleep_ms(100);
	CU_ASSERT(warned);
	CU_ASSERT_EQUAL(file_has(path, "writers are throttled"), 1);
	/* the OSSs learn it from their next heartbeat reply */
	t0 = th_now_ms();
	while (th_now_ms() - t0 < 15000 && oss_warned == 0) {
		for (int i = 0; i < th_cluster_nr_oss(c2); i++) {
			snprintf(path, sizeof(path), "%s/oss%d.log", th_cluster_dir(c2), i);
			oss_warned += file_has(path, "the MDS throttles writers") == 1;
		}
		th_sleep_ms(100);
	}
	CU_ASSERT(oss_warned > 0);
	/* writes still succeed (slowed), with the right bytes */
	th_fill_pattern(buf, len, 121);
	t0 = th_now_ms();
	CU_ASSERT_EQUAL(th_put(fs2, "/w", buf, len), 0);
	fprintf(stderr, "\n  8 MiB written while throttled in %llu ms ",
		(unsigned long long)(th_now_ms() - t0));
	CU_ASSERT_EQUAL(th_get(fs2, "/w", back, len), (ssize_t)len);
	CU_ASSERT(memcmp(back, buf, len) == 0);
	CU_ASSERT_EQUAL(weir_umount(fs2), 0);
	CU_ASSERT_EQUAL(th_cluster_stop(c2), 0);
	free(buf);
	free(back);
}

/* ------------------------------------------------------------ watermark policy (last) */

static void test_hsm_policy_release(void)
{
	static const char *const pol[] = {
	    "--hsm-high-watermark", "1", "--hsm-low-watermark", "0", "--hsm-min-age", "0s", NULL,
	};
	const size_t len = 512 * KIB;
	char *buf = malloc(len), *back = malloc(len);
	weir_fid_t fa;
	uint32_t osts[8];
	weir_file_t *fh = NULL;
	int nr, i;

	CU_ASSERT_FATAL(buf && back);
	th_fill_pattern(buf, len, 91);
	CU_ASSERT_EQUAL(th_put(fs, "/arc/pol/a", buf, len), 0);
	CU_ASSERT_EQUAL(th_put(fs, "/arc/pol/b", buf, len), 0);
	CU_ASSERT_EQUAL(th_put(fs, "/arc/pol/c", buf, len), 0);
	CU_ASSERT_EQUAL(th_put(fs, "/arc/pol/d", buf, len), 0);
	CU_ASSERT_EQUAL_FATAL(archive_wait("/arc/pol/a"), 0);
	CU_ASSERT_EQUAL_FATAL(archive_wait("/arc/pol/b"), 0);
	CU_ASSERT_EQUAL_FATAL(archive_wait("/arc/pol/c"), 0);
	nr = osts_of("/arc/pol/a", &fa, osts, 8);
	CU_ASSERT(nr > 0);
	/* c is modified after its archive: dirty; d was never archived */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/arc/pol/c", O_WRONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "x", 1, 0), 1);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT(state_of("/arc/pol/c").hs_flags & WEIR_HS_DIRTY);

	/* the MDS again, with every OST over its high watermark (the disk is > 1% used) */
	for (i = 0; pol[i]; i++)
		mds_args[MDS_ARGS_BASE + i] = pol[i];
	mds_args[MDS_ARGS_BASE + i] = NULL;
	CU_ASSERT_EQUAL_FATAL(th_server_stop(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_start(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_cluster_wait_up(cl, 30000), 0);

	CU_ASSERT_EQUAL(wait_flags("/arc/pol/a", WEIR_HS_RELEASED, WEIR_HS_RELEASED, 20000), 0);
	CU_ASSERT_EQUAL(wait_flags("/arc/pol/b", WEIR_HS_RELEASED, WEIR_HS_RELEASED, 20000), 0);
	if (nr > 0)
		CU_ASSERT_EQUAL(wait_objs_gone(&fa, osts, nr, 15000), 0);
	/* another policy pass or two: dirty and never-archived files stay */
	th_sleep_ms(2500);
	CU_ASSERT_EQUAL(state_of("/arc/pol/c").hs_flags & WEIR_HS_RELEASED, 0);
	CU_ASSERT_EQUAL(state_of("/arc/pol/d").hs_flags & WEIR_HS_RELEASED, 0);
	/* released by the policy, still readable */
	memset(back, 0, len);
	CU_ASSERT_EQUAL(th_get(fs, "/arc/pol/b", back, len), (ssize_t)len);
	CU_ASSERT(memcmp(back, buf, len) == 0);
	free(buf);
	free(back);
}

/* ------------------------------------------------------------ suite */

static int suite_init(void)
{
	struct th_cluster_opts o = {0};
	struct weir_s3 *s;
	int rc;

	o.tco_mds_args = mds_args;
	if (th_cluster_mount(&o, &cl, &fs))
		return -1;
	s = s3_client();
	if (!s)
		return -1;
	rc = weir_s3_bucket_create(s);
	weir_s3_free(s);
	if (rc && rc != -EEXIST) {
		th_rc("create bucket", rc);
		return -1;
	}
	if (th_hsmd_start(cl, th_s3rver_endpoint(srv), HSMD_THREADS, NULL, &hd))
		return -1;
	if (th_wait_agent(fs, 15000))
		return -1;
	/* /arc: archives and releases; /arc/s4: striped over the 4 OSTs; /auto: auto-export */
	if (weir_mkdir(fs, "/arc", 0755) || weir_mkdir(fs, "/auto", 0755))
		return -1;
	if (th_rc("dra /arc", weir_dra_create(fs, "/arc", BUCKET, "arc", 0, NULL)) ||
	    th_rc("dra /auto",
		  weir_dra_create(fs, "/auto", BUCKET, "auto/", WEIR_DRA_AUTO_EXPORT, NULL)))
		return -1;
	if (th_stripe_dir(fs, "/arc/s4", 4, MIB) || weir_mkdir(fs, "/arc/pol", 0755) ||
	    weir_mkdir(fs, "/auto/sub", 0755))
		return -1;
	big = malloc(BIG_SIZE);
	big_back = malloc(BIG_SIZE);
	if (!big || !big_back)
		return -1;
	th_fill_pattern(big, BIG_SIZE, 4242);
	return 0;
}

static int suite_clean(void)
{
	int rc = 0;

	if (th_hsmd_free(hd))
		rc = -1;
	hd = NULL;
	if (fs && weir_umount(fs))
		rc = -1;
	if (th_cluster_stop(cl))
		rc = -1;
	free(big);
	free(big_back);
	return rc;
}

static const struct th_test tests[] = {
	TH_TEST(test_hsm_import_1000),
	TH_TEST(test_hsm_overwritten_object),
	TH_TEST(test_hsm_release_refused_and_rearchive),
	TH_TEST(test_hsm_auto_export),
	TH_TEST(test_hsm_big_file_partial_read),
	TH_TEST(test_hsm_restore_survives_copytool_kill),
	TH_TEST(test_hsm_restore_survives_mds_kill),
	TH_TEST(test_hsm_archive_survives_copytool_kill),
	TH_TEST(test_hsm_modified_during_archive),
	TH_TEST(test_hsm_concurrent_readers_one_restore),
	TH_TEST(test_hsm_write_released),
	TH_TEST(test_hsm_import_one_object_singular),
	TH_TEST(test_hsm_import_rescan),
	TH_TEST(test_hsm_s3_down),
	TH_TEST(test_hsm_restore_retried_after_s3_down),
	TH_TEST(test_hsm_throttle_nothing_releasable),
	TH_TEST(test_hsm_policy_release), /* last: releases every archived clean file */
	TH_TEST_END,
};

int main(void)
{
	/* the AWS_* environment: for this process's S3 handles and for the weir CLI */
	int rc = th_s3rver_start_env("test_hsm", BUCKET, &s3c, &srv);

	if (rc)
		return rc;
	rc = th_cunit_run("hsm", suite_init, suite_clean, tests);
	th_s3rver_free(srv);
	return rc;
}
