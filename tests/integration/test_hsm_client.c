/*
 * tests/integration/test_hsm_client.c - libweir's HSM calls (client/hsm.c)
 * and the restore waits of its data path, on a real cluster without S3:
 * associations, imports (fake listings), state, the coordinator's queue,
 * reads of a released file that time out with WEIR_RESTORE_TIMEOUT, a
 * restore carried out by this test acting as the copytool (MDS agent RPCs
 * plus wc_hsm_open() writes), partial-restore reads, a lost copy (-EIO),
 * truncation of released files, and request errors. The real copytool and
 * S3 are tested by test_hsm.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "client/client_int.h"
#include "harness.h"
#include "th_weir.h"

static struct th_cluster *cl;
static weir_fs_t *fs;
static struct weir_dra dra;      /* the association at /hsm */
static weir_fid_t hsm_dir;       /* its root */

#define MIB (1024ULL * 1024ULL)
#define ETAG "\"0123456789abcdef0123456789abcdef\""
#define MTIME_NS 1700000000123456789LL

static int suite_init(void)
{
	struct th_cluster_opts o = {.tco_nr_oss = 1, .tco_ost_per_oss = 2};

	if (th_cluster_mount(&o, &cl, &fs))
		return -1;
	/* 2 stripes of 1 MiB: a restore chunk (8 MiB) spans both objects */
	if (th_stripe_dir(fs, "/hsm", 2, MIB))
		return -1;
	if (th_rc("weir_dra_create", weir_dra_create(fs, "/hsm", "bucket-one", "pre/fix", 0, &dra)))
		return -1;
	return th_rc("weir_path2fid", weir_path2fid(fs, "/hsm", &hsm_dir)) ? -1 : 0;
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

static bool fid_eq(const weir_fid_t *a, const weir_fid_t *b)
{
	return a->seq == b->seq && a->oid == b->oid;
}

/* Import one released file \a name of \a size bytes into /hsm. \return its result. */
static int import1(const char *name, uint64_t size)
{
	char key[256];
	struct weir_hsm_import_ent e = {0};
	int res = 99;

	snprintf(key, sizeof(key), "pre/fix/%s", name);
	e.hie_name = name;
	e.hie_size = size;
	e.hie_mtime_ns = MTIME_NS;
	e.hie_etag = ETAG;
	e.hie_key = key;
	int rc = weir_hsm_import(fs, dra.dra_id, &hsm_dir, &e, 1, &res);
	CU_ASSERT_EQUAL(rc, 0);
	return rc ? rc : res;
}

static weir_fid_t fid_of(const char *path)
{
	weir_fid_t f = {0, 0};
	CU_ASSERT_EQUAL(weir_path2fid(fs, path, &f), 0);
	return f;
}

static double now_s(void)
{
	return (double)th_now_ms() / 1000.0;
}

/* ------------------------------------------------------------ the fake copytool */

/* What the fake copytool keeps of a task. */
struct task {
	uint64_t id;
	uint64_t token; /* the hand-out, echoed in PROGRESS and DONE */
	uint32_t action;
	uint64_t size;
	uint64_t chunk;
	char key[1025];
	char etag[130];
};

/*
 * MDS_HSM_AGENT_FETCH until a task for \a fid comes (tasks of other files
 * are left running). \return true with \a t filled.
 */
static bool agent_fetch(const weir_fid_t *fid, struct task *t)
{
	uint64_t end = th_now_ms() + 10000;

	while (th_now_ms() < end) {
		Weir__HsmFetchReq req = WEIR__HSM_FETCH_REQ__INIT;
		Weir__HsmFetchRep *rep = NULL;

		req.agent = (char *)"test-agent";
		req.session = wc_session_get(fs, NULL);
		req.max = 1;
		req.wait_ms = 500;
		int rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_HSM_AGENT_FETCH, &req.base,
				     &weir__hsm_fetch_rep__descriptor, (void **)&rep);
		CU_ASSERT_EQUAL(rc, 0);
		if (rc)
			return false;
		bool found = false;
		for (size_t i = 0; i < rep->n_tasks; i++) {
			const Weir__HsmTask *pt = rep->tasks[i];
			if (pt->fid && pt->fid->seq == fid->seq && pt->fid->oid == fid->oid) {
				t->id = pt->id;
				t->token = pt->token;
				t->action = pt->action;
				t->size = pt->size;
				t->chunk = pt->chunk;
				snprintf(t->key, sizeof(t->key), "%s", pt->key);
				snprintf(t->etag, sizeof(t->etag), "%s", pt->etag);
				found = true;
			}
		}
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		if (found)
			return true;
	}
	CU_FAIL("no task for the file within 10 s");
	return false;
}

static int agent_progress(const struct task *t, uint64_t off, uint64_t len)
{
	Weir__HsmProgressReq req = WEIR__HSM_PROGRESS_REQ__INIT;
	Weir__HsmProgressRep *rep = NULL;

	req.id = t->id;
	req.token = t->token;
	req.offset = off;
	req.length = len;
	int rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_HSM_AGENT_PROGRESS, &req.base,
			     &weir__hsm_progress_rep__descriptor, (void **)&rep);
	if (!rc)
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}

static int agent_done(const struct task *t, int rc, const char *etag, uint64_t size)
{
	Weir__HsmDoneReq req = WEIR__HSM_DONE_REQ__INIT;

	req.id = t->id;
	req.token = t->token;
	req.rc = rc;
	req.etag = (char *)(etag ? etag : "");
	req.size = size;
	req.mtime_ns = MTIME_NS + 1000;
	req.message = (char *)"from test_hsm_client";
	return wc_mds_call(fs, WEIR__WIRE_OP__MDS_HSM_AGENT_DONE, &req.base, NULL, NULL);
}

/* The copytool's write of [off, off+len) of \a data through an OF_HSM handle. */
static int hsm_write(const weir_fid_t *fid, const char *data, uint64_t off, uint64_t len)
{
	struct weir_fid f = {.fid_seq = fid->seq, .fid_oid = fid->oid};
	weir_file_t *fh = NULL;
	int rc = wc_hsm_open(fs, &f, O_WRONLY, &fh);

	CU_ASSERT_EQUAL(rc, 0);
	if (rc)
		return rc;
	ssize_t n = weir_pwrite(fh, data + off, len, off);
	CU_ASSERT_EQUAL(n, (ssize_t)len);
	CU_ASSERT_EQUAL(weir_fsync(fh), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	return n == (ssize_t)len ? 0 : -EIO;
}

/* ------------------------------------------------------------ associations */

static void test_dra_create_list_delete(void)
{
	struct weir_dra d, *v = NULL;
	size_t nr = 0;
	bool seen_hsm = false, seen_two = false;

	CU_ASSERT(dra.dra_id >= 1);
	CU_ASSERT_STRING_EQUAL(dra.dra_bucket, "bucket-one");
	CU_ASSERT_STRING_EQUAL(dra.dra_prefix, "pre/fix/");
	CU_ASSERT(fid_eq(&dra.dra_root, &hsm_dir));
	CU_ASSERT(dra.dra_created_ns > 0);

	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/two", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_dra_create(fs, "/two", "bucket-two", NULL,
					      WEIR_DRA_AUTO_EXPORT | WEIR_DRA_REIMPORT, &d), 0);
	CU_ASSERT_STRING_EQUAL(d.dra_prefix, "");
	CU_ASSERT_EQUAL(d.dra_flags, WEIR_DRA_AUTO_EXPORT | WEIR_DRA_REIMPORT);
	CU_ASSERT_NOT_EQUAL(d.dra_id, dra.dra_id);
	CU_ASSERT_EQUAL_FATAL(weir_dra_list(fs, &v, &nr), 0);
	for (size_t i = 0; i < nr; i++) {
		if (v[i].dra_id == dra.dra_id && !strcmp(v[i].dra_path, "/hsm"))
			seen_hsm = true;
		if (v[i].dra_id == d.dra_id && !strcmp(v[i].dra_bucket, "bucket-two"))
			seen_two = true;
	}
	free(v);
	CU_ASSERT(seen_hsm);
	CU_ASSERT(seen_two);

	/* nested associations, bad arguments */
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/two/sub", 0755), 0);
	CU_ASSERT_EQUAL(weir_dra_create(fs, "/two/sub", "bucket-three", "", 0, NULL), -EBUSY);
	CU_ASSERT_EQUAL(weir_dra_create(fs, "/two", "bucket-three", "", 0, NULL), -EEXIST);
	CU_ASSERT_EQUAL(weir_dra_create(fs, "/two/sub", "b", "", 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(weir_dra_create(fs, "/two/sub", "bucket-three", "", 0x100, NULL), -EINVAL);
	CU_ASSERT_EQUAL(weir_dra_create(fs, "/nope", "bucket-three", "", 0, NULL), -ENOENT);

	/* root only */
	struct weir_cred c;
	memset(&c, 0, sizeof(c));
	c.cr_uid = 1000;
	c.cr_gid = 1000;
	CU_ASSERT_EQUAL(weir_fid_cred_set(&c), 0);
	CU_ASSERT_EQUAL(weir_dra_delete(fs, "/two"), -EPERM);
	CU_ASSERT_EQUAL(weir_fid_cred_set(NULL), 0);

	CU_ASSERT_EQUAL(weir_dra_delete(fs, "/two"), 0);
	CU_ASSERT_EQUAL(weir_dra_delete(fs, "/two"), -EINVAL); /* no association there */
	CU_ASSERT_EQUAL_FATAL(weir_dra_list(fs, &v, &nr), 0);
	for (size_t i = 0; i < nr; i++)
		CU_ASSERT_NOT_EQUAL(v[i].dra_id, d.dra_id);
	free(v);
}

/* ------------------------------------------------------------ import, state */

static void test_import_state_and_stat(void)
{
	struct weir_hsm_state hs;
	struct stat st;

	CU_ASSERT_EQUAL(import1("imp-a", 3 * MIB + 17), WEIR_HIR_CREATED);
	CU_ASSERT_EQUAL(import1("imp-a", 3 * MIB + 17), WEIR_HIR_UNCHANGED);
	weir_fid_t f = fid_of("/hsm/imp-a");

	CU_ASSERT_EQUAL_FATAL(weir_hsm_state_get(fs, "/hsm/imp-a", &hs), 0);
	CU_ASSERT(fid_eq(&hs.hs_fid, &f));
	CU_ASSERT_EQUAL(hs.hs_flags, WEIR_HS_EXISTS | WEIR_HS_ARCHIVED | WEIR_HS_RELEASED |
					     WEIR_HS_IMPORTED);
	CU_ASSERT_EQUAL(hs.hs_dra, dra.dra_id);
	CU_ASSERT_STRING_EQUAL(hs.hs_bucket, "bucket-one");
	CU_ASSERT_STRING_EQUAL(hs.hs_key, "pre/fix/imp-a");
	CU_ASSERT_STRING_EQUAL(hs.hs_etag, ETAG);
	CU_ASSERT_EQUAL(hs.hs_size, 3 * MIB + 17);
	CU_ASSERT_EQUAL(hs.hs_archived_ns, MTIME_NS);

	struct weir_hsm_state hs2;
	CU_ASSERT_EQUAL_FATAL(weir_hsm_state_fid(fs, &f, &hs2), 0);
	CU_ASSERT_EQUAL(hs2.hs_flags, hs.hs_flags);
	CU_ASSERT_STRING_EQUAL(hs2.hs_key, hs.hs_key);

	/* a released file: the MDS's size, no blocks, mode 0644 root */
	CU_ASSERT_EQUAL_FATAL(weir_stat(fs, "/hsm/imp-a", &st), 0);
	CU_ASSERT_EQUAL(st.st_size, (off_t)(3 * MIB + 17));
	CU_ASSERT_EQUAL(st.st_blocks, 0);
	CU_ASSERT(S_ISREG(st.st_mode));
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0644);
	CU_ASSERT_EQUAL((long long)st.st_mtim.tv_sec, MTIME_NS / 1000000000LL);
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/hsm/imp-a", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_fstat(fh, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, (off_t)(3 * MIB + 17));
	CU_ASSERT_EQUAL(st.st_blocks, 0);
	/* SEEK_END is the MDS's size; no holes are reported */
	CU_ASSERT_EQUAL(weir_lseek(fh, 0, SEEK_END), (int64_t)(3 * MIB + 17));
	CU_ASSERT_EQUAL(weir_lseek(fh, 5, SEEK_DATA), 5);
	CU_ASSERT_EQUAL(weir_lseek(fh, 5, SEEK_HOLE), (int64_t)(3 * MIB + 17));
	CU_ASSERT_EQUAL(weir_close(fh), 0);

	/* a file outside any association has no HSM state */
	CU_ASSERT_EQUAL(th_put(fs, "/plain", "x", 1), 0);
	CU_ASSERT_EQUAL(weir_hsm_state_get(fs, "/plain", &hs), 0);
	CU_ASSERT_EQUAL(hs.hs_flags, 0);
	CU_ASSERT_EQUAL(hs.hs_dra, 0);
	CU_ASSERT_EQUAL(weir_hsm_state_get(fs, "/nope", &hs), -ENOENT);

	/* argument checks of the client */
	struct weir_hsm_import_ent e = {.hie_name = "x", .hie_etag = ETAG, .hie_key = "k"};
	int res[2];
	CU_ASSERT_EQUAL(weir_hsm_import(fs, dra.dra_id, &hsm_dir, &e, 0, res), -EINVAL);
	CU_ASSERT_EQUAL(weir_hsm_import(fs, dra.dra_id, &hsm_dir, &e, WEIR_HSM_IMPORT_MAX + 1, res),
			-EINVAL);
	e.hie_key = NULL;
	CU_ASSERT_EQUAL(weir_hsm_import(fs, dra.dra_id, &hsm_dir, &e, 1, res), -EINVAL);
	CU_ASSERT_EQUAL(weir_hsm_state_fid(fs, &(weir_fid_t){0, 0}, &hs), -EINVAL);
}

/* ------------------------------------------------------------ restore waits */

static void test_released_waits_time_out(void)
{
	char buf[4096];
	double t0;
	weir_file_t *fh = NULL;

	CU_ASSERT_EQUAL(import1("timeout", MIB), WEIR_HIR_CREATED);
	CU_ASSERT_EQUAL(setenv("WEIR_RESTORE_TIMEOUT", "1", 1), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/hsm/timeout", O_RDWR, 0, &fh), 0);
	/* at and past the end of file: no wait */
	t0 = now_s();
	CU_ASSERT_EQUAL(weir_pread(fh, buf, sizeof(buf), MIB), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, buf, sizeof(buf), 5 * MIB), 0);
	CU_ASSERT(now_s() - t0 < 0.5);
	/* no copytool runs: the read waits WEIR_RESTORE_TIMEOUT, then -ETIMEDOUT */
	t0 = now_s();
	CU_ASSERT_EQUAL(weir_pread(fh, buf, sizeof(buf), 100), -ETIMEDOUT);
	double dt = now_s() - t0;
	CU_ASSERT(dt >= 0.9 && dt < 5.0);
	/* the read queued a restore */
	struct weir_hsm_state hs;
	CU_ASSERT_EQUAL(weir_hsm_state_get(fs, "/hsm/timeout", &hs), 0);
	CU_ASSERT_EQUAL(hs.hs_action, WEIR_HSM_RESTORE);
	CU_ASSERT_NOT_EQUAL(hs.hs_action_id, 0);
	struct weir_hsm_queue *q = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_hsm_queue_get(fs, &hs.hs_action_id, 1, &q), 0);
	CU_ASSERT_EQUAL(q->hq_nr, 1);
	if (q->hq_nr == 1) {
		CU_ASSERT_EQUAL(q->hq_actions[0].hai_id, hs.hs_action_id);
		CU_ASSERT_EQUAL(q->hq_actions[0].hai_action, WEIR_HSM_RESTORE);
		CU_ASSERT(fid_eq(&q->hq_actions[0].hai_fid, &hs.hs_fid));
		CU_ASSERT_EQUAL(q->hq_actions[0].hai_state, WEIR_HSM_WAITING);
		/* the key is set when an agent takes the action */
		CU_ASSERT(!q->hq_actions[0].hai_key[0] ||
			  !strcmp(q->hq_actions[0].hai_key, "pre/fix/timeout"));
	}
	CU_ASSERT(q->hq_waiting >= 1);
	weir_hsm_queue_free(q);
	q = NULL;
	CU_ASSERT_EQUAL(weir_hsm_queue_get(fs, NULL, 0, &q), 0);
	CU_ASSERT(q && q->hq_nr >= 1);
	weir_hsm_queue_free(q);
	/* writes, fallocate and non-zero truncates wait for the whole file */
	CU_ASSERT_EQUAL(weir_pwrite(fh, "y", 1, 0), -ETIMEDOUT);
	CU_ASSERT_EQUAL(weir_fallocate(fh, 0, 0, 4096), -ETIMEDOUT);
	CU_ASSERT_EQUAL(weir_ftruncate(fh, 10), -ETIMEDOUT);
	CU_ASSERT_EQUAL(weir_truncate(fs, "/hsm/timeout", 10), -ETIMEDOUT);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	/* nothing changed */
	struct stat st;
	CU_ASSERT_EQUAL(weir_stat(fs, "/hsm/timeout", &st), 0);
	CU_ASSERT_EQUAL(st.st_size, (off_t)MIB);
	CU_ASSERT_EQUAL(unsetenv("WEIR_RESTORE_TIMEOUT"), 0);
}

/* A restore done by this test as the copytool, chunk by chunk. */
static void test_restore_by_hand(void)
{
	const uint64_t size = 8 * MIB + 300000;
	char *data = malloc(size), *buf = malloc(size + MIB); /* reads ask past the end */
	struct weir_hsm_state hs;
	struct stat st;
	weir_file_t *fh = NULL;

	CU_ASSERT_FATAL(data && buf);
	th_fill_pattern(data, size, 42);
	memset(data + 8 * MIB - 8192, 0, 8192); /* the end of chunk 0: a hole, not written */
	CU_ASSERT_EQUAL(import1("big", size), WEIR_HIR_CREATED);
	weir_fid_t f = fid_of("/hsm/big");
	CU_ASSERT_EQUAL(setenv("WEIR_RESTORE_TIMEOUT", "1", 1), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/hsm/big", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, buf, 4096, 0), -ETIMEDOUT); /* queues the restore */

	struct task tk, *t = &tk;
	CU_ASSERT_FATAL(agent_fetch(&f, &tk));
	CU_ASSERT_EQUAL(t->action, WEIR__HSM_ACTION__HA_RESTORE);
	CU_ASSERT_EQUAL(t->size, size);
	CU_ASSERT_STRING_EQUAL(t->key, "pre/fix/big");
	CU_ASSERT_STRING_EQUAL(t->etag, ETAG);
	CU_ASSERT_EQUAL(t->chunk, 8 * MIB);
	uint64_t chunk = t->chunk ? t->chunk : 8 * MIB;

	/* chunk 0, but its last 8 KiB (zeros: left as a hole) */
	CU_ASSERT_EQUAL(hsm_write(&f, data, 0, chunk - 8192), 0);
	CU_ASSERT_EQUAL(agent_progress(t, 0, chunk), 0);
	/* the copytool's handle changed neither size nor mtime nor the flags */
	CU_ASSERT_EQUAL(weir_stat(fs, "/hsm/big", &st), 0);
	CU_ASSERT_EQUAL(st.st_size, (off_t)size);
	CU_ASSERT_EQUAL(st.st_blocks, 0);
	CU_ASSERT_EQUAL((long long)st.st_mtim.tv_sec, MTIME_NS / 1000000000LL);
	CU_ASSERT_EQUAL(weir_hsm_state_fid(fs, &f, &hs), 0);
	CU_ASSERT(hs.hs_flags & WEIR_HS_RELEASED);
	CU_ASSERT(!(hs.hs_flags & WEIR_HS_DIRTY));
	CU_ASSERT_EQUAL(hs.hs_restored, chunk);

	/* reads inside chunk 0 work, the hole at its end reads whole (zeros) */
	CU_ASSERT_EQUAL(weir_pread(fh, buf, chunk, 0), (ssize_t)chunk);
	CU_ASSERT_EQUAL(th_diff_at(buf, data, chunk), -1);
	CU_ASSERT_EQUAL(weir_pread(fh, buf, 4096, chunk - 4096), 4096);
	CU_ASSERT_EQUAL(th_diff_at(buf, data + chunk - 4096, 4096), -1);
	/* a read reaching into chunk 1 still waits */
	CU_ASSERT_EQUAL(weir_pread(fh, buf, 8192, chunk - 4096), -ETIMEDOUT);

	/* the rest, then the end of the action */
	CU_ASSERT_EQUAL(hsm_write(&f, data, chunk, size - chunk), 0);
	CU_ASSERT_EQUAL(agent_progress(t, chunk, size - chunk), 0);
	/* ready but maybe still released: the read returns exactly up to the MDS size */
	CU_ASSERT_EQUAL(weir_pread(fh, buf, 1 * MIB, size - 1000), 1000);
	CU_ASSERT_EQUAL(th_diff_at(buf, data + size - 1000, 1000), -1);
	CU_ASSERT_EQUAL(agent_done(t, 0, ETAG, 0), 0);

	memset(buf, 0xee, size + MIB);
	CU_ASSERT_EQUAL(weir_pread(fh, buf, size + 4096, 0), (ssize_t)size);
	CU_ASSERT_EQUAL(th_diff_at(buf, data, size), -1);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_hsm_state_fid(fs, &f, &hs), 0);
	CU_ASSERT_EQUAL(hs.hs_flags, WEIR_HS_EXISTS | WEIR_HS_ARCHIVED | WEIR_HS_IMPORTED);
	CU_ASSERT_EQUAL(weir_stat(fs, "/hsm/big", &st), 0);
	CU_ASSERT_EQUAL(st.st_size, (off_t)size);
	CU_ASSERT_EQUAL((long long)st.st_mtim.tv_sec, MTIME_NS / 1000000000LL);
	/* a new reader needs no MDS restore answer any more */
	CU_ASSERT_EQUAL(th_get(fs, "/hsm/big", buf, size), (ssize_t)size);
	CU_ASSERT_EQUAL(th_diff_at(buf, data, size), -1);
	CU_ASSERT_EQUAL(unsetenv("WEIR_RESTORE_TIMEOUT"), 0);
	free(data);
	free(buf);
}

struct reader_arg {
	const char *ra_path;
	size_t ra_len;
	char *ra_buf;
	ssize_t ra_rc;
};

static void *reader(void *p)
{
	struct reader_arg *ra = p;
	weir_file_t *fh = NULL;

	ra->ra_rc = weir_open(fs, ra->ra_path, O_RDONLY, 0, &fh);
	if (ra->ra_rc)
		return NULL;
	ra->ra_rc = weir_pread(fh, ra->ra_buf, ra->ra_len, 0);
	weir_close(fh);
	return NULL;
}

/* A reader with no time limit waits until the copytool finishes. */
static void test_reader_waits_for_restore(void)
{
	const uint64_t size = 200000;
	char *data = malloc(size), *buf = calloc(1, size);
	pthread_t th;

	CU_ASSERT_FATAL(data && buf);
	th_fill_pattern(data, size, 7);
	CU_ASSERT_EQUAL(import1("waited", size), WEIR_HIR_CREATED);
	weir_fid_t f = fid_of("/hsm/waited");
	struct reader_arg ra = {
		.ra_path = "/hsm/waited", .ra_len = size, .ra_buf = buf, .ra_rc = -1,
	};
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, reader, &ra), 0);
	struct task t;
	if (agent_fetch(&f, &t)) {
		th_sleep_ms(300); /* the reader polls meanwhile */
		CU_ASSERT_EQUAL(hsm_write(&f, data, 0, size), 0);
		CU_ASSERT_EQUAL(agent_progress(&t, 0, size), 0);
		CU_ASSERT_EQUAL(agent_done(&t, 0, ETAG, 0), 0);
	}
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(ra.ra_rc, (ssize_t)size);
	CU_ASSERT_EQUAL(th_diff_at(buf, data, size), -1);
	free(data);
	free(buf);
}

/* The S3 object changed behind Weir's back (no DF_REIMPORT): reads fail -EIO. */
static void test_lost_copy_gives_eio(void)
{
	char buf[100];
	struct weir_hsm_state hs;
	weir_file_t *fh = NULL;

	CU_ASSERT_EQUAL(import1("lost", 5000), WEIR_HIR_CREATED);
	weir_fid_t f = fid_of("/hsm/lost");
	CU_ASSERT_EQUAL(setenv("WEIR_RESTORE_TIMEOUT", "1", 1), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/hsm/lost", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, buf, sizeof(buf), 0), -ETIMEDOUT);
	struct task t;
	if (agent_fetch(&f, &t))
		CU_ASSERT_EQUAL(agent_done(&t, -ESTALE, "\"another-etag\"", 6000), 0);
	CU_ASSERT_EQUAL(unsetenv("WEIR_RESTORE_TIMEOUT"), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, buf, sizeof(buf), 0), -EIO);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_hsm_state_fid(fs, &f, &hs), 0);
	CU_ASSERT(hs.hs_flags & WEIR_HS_LOST);
}

/* O_TRUNC and truncate to 0 of a released file need no restore. */
static void test_truncate_released(void)
{
	struct weir_hsm_state hs;
	struct stat st;
	weir_file_t *fh = NULL;

	CU_ASSERT_EQUAL(setenv("WEIR_RESTORE_TIMEOUT", "1", 1), 0);
	CU_ASSERT_EQUAL(import1("trunc1", 4 * MIB), WEIR_HIR_CREATED);
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/hsm/trunc1", O_WRONLY | O_TRUNC, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "new", 3, 0), 3);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/hsm/trunc1", &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 3);
	CU_ASSERT_EQUAL(weir_hsm_state_get(fs, "/hsm/trunc1", &hs), 0);
	CU_ASSERT(!(hs.hs_flags & WEIR_HS_RELEASED));
	CU_ASSERT(hs.hs_flags & WEIR_HS_DIRTY);

	CU_ASSERT_EQUAL(import1("trunc2", 4 * MIB), WEIR_HIR_CREATED);
	CU_ASSERT_EQUAL(weir_truncate(fs, "/hsm/trunc2", 0), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/hsm/trunc2", &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 0);
	CU_ASSERT_EQUAL(weir_hsm_state_get(fs, "/hsm/trunc2", &hs), 0);
	CU_ASSERT(!(hs.hs_flags & WEIR_HS_RELEASED));

	CU_ASSERT_EQUAL(import1("trunc3", 4 * MIB), WEIR_HIR_CREATED);
	weir_fid_t f = fid_of("/hsm/trunc3");
	struct stat in = {0};
	CU_ASSERT_EQUAL(weir_fid_setattr(fs, &f, &in, WEIR_SETATTR_SIZE, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 0);
	char buf[16];
	CU_ASSERT_EQUAL(th_get(fs, "/hsm/trunc3", buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(unsetenv("WEIR_RESTORE_TIMEOUT"), 0);
}

/* Archive \a path by hand (the test is the agent; no bytes go anywhere), then release it. */
static void archive_release(const char *path, const char *data, uint64_t size, bool release)
{
	weir_fid_t f = fid_of(path);
	uint64_t id = 0;
	int rc = 1;
	struct task t;

	CU_ASSERT_EQUAL(weir_hsm_request(fs, WEIR_HSM_ARCHIVE, &f, 1, &id, &rc), 0);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_FATAL(agent_fetch(&f, &t));
	CU_ASSERT_EQUAL(t.id, id);
	CU_ASSERT_EQUAL(t.action, WEIR__HSM_ACTION__HA_ARCHIVE);
	/* the copytool reads through its OF_HSM handle */
	struct weir_fid wf = {.fid_seq = f.seq, .fid_oid = f.oid};
	weir_file_t *fh = NULL;
	char *buf = malloc(size + 1);
	CU_ASSERT_EQUAL_FATAL(wc_hsm_open(fs, &wf, O_RDONLY, &fh), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, buf, size + 1, 0), (ssize_t)size);
	CU_ASSERT_EQUAL(th_diff_at(buf, data, size), -1);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	free(buf);
	CU_ASSERT_EQUAL(agent_done(&t, 0, "\"etag-by-hand\"", 0), 0);
	struct weir_hsm_state hs;
	CU_ASSERT_EQUAL(weir_hsm_state_fid(fs, &f, &hs), 0);
	CU_ASSERT_EQUAL(hs.hs_flags, WEIR_HS_EXISTS | WEIR_HS_ARCHIVED);
	if (!release)
		return;
	CU_ASSERT_EQUAL(weir_hsm_request(fs, WEIR_HSM_RELEASE, &f, 1, &id, &rc), 0);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(weir_hsm_state_fid(fs, &f, &hs), 0);
	CU_ASSERT_EQUAL(hs.hs_flags, WEIR_HS_EXISTS | WEIR_HS_ARCHIVED | WEIR_HS_RELEASED);
}

struct writer_arg {
	const char *wa_path;
	_Atomic long wa_rc; /* -1000 until the writer is done */
};

static void *writer(void *p)
{
	struct writer_arg *wa = p;
	weir_file_t *fh = NULL;
	long n;

	n = weir_open(fs, wa->wa_path, O_RDWR, 0, &fh);
	if (!n) {
		n = weir_pwrite(fh, "Z", 1, 1000);
		int rc = weir_close(fh);
		if (n == 1 && rc)
			n = rc;
	}
	atomic_store(&wa->wa_rc, n);
	return NULL;
}

/*
 * A file written in Weir: archived, released (its objects destroyed), then
 * written again: the write waits for the whole restore. Another one is
 * opened with O_TRUNC right after its release (its objects may still be
 * queued for destruction: the MDS answers EAGAIN and libweir retries).
 */
static void test_archive_release_write_trunc(void)
{
	const uint64_t size = 3 * MIB + 123;
	char *data = malloc(size), *buf = malloc(size + 1);
	struct stat st;
	struct weir_hsm_state hs;
	pthread_t th;

	CU_ASSERT_FATAL(data && buf);
	th_fill_pattern(data, size, 99);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/hsm/cycle", data, size), 0);
	archive_release("/hsm/cycle", data, size, true);
	weir_fid_t f = fid_of("/hsm/cycle");
	CU_ASSERT_EQUAL(weir_stat(fs, "/hsm/cycle", &st), 0);
	CU_ASSERT_EQUAL(st.st_size, (off_t)size);
	CU_ASSERT_EQUAL(st.st_blocks, 0);

	struct writer_arg wa = {.wa_path = "/hsm/cycle", .wa_rc = -1000};
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, writer, &wa), 0);
	struct task t;
	if (agent_fetch(&f, &t)) { /* handed out once the old objects are gone */
		CU_ASSERT_EQUAL(t.action, WEIR__HSM_ACTION__HA_RESTORE);
		CU_ASSERT_EQUAL(t.size, size);
		th_sleep_ms(200);
		CU_ASSERT_EQUAL(atomic_load(&wa.wa_rc), -1000); /* still waiting */
		CU_ASSERT_EQUAL(hsm_write(&f, data, 0, size), 0);
		CU_ASSERT_EQUAL(agent_progress(&t, 0, size), 0);
		CU_ASSERT_EQUAL(agent_done(&t, 0, ETAG, 0), 0);
	}
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(atomic_load(&wa.wa_rc), 1);
	data[1000] = 'Z';
	CU_ASSERT_EQUAL(th_get(fs, "/hsm/cycle", buf, size + 1), (ssize_t)size);
	CU_ASSERT_EQUAL(th_diff_at(buf, data, size), -1);
	CU_ASSERT_EQUAL(weir_hsm_state_fid(fs, &f, &hs), 0);
	CU_ASSERT_EQUAL(hs.hs_flags & (WEIR_HS_EXISTS | WEIR_HS_DIRTY | WEIR_HS_RELEASED),
			WEIR_HS_EXISTS | WEIR_HS_DIRTY);
	CU_ASSERT_EQUAL(weir_stat(fs, "/hsm/cycle", &st), 0);
	CU_ASSERT(st.st_blocks > 0);

	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/hsm/cycle2", data, size), 0);
	archive_release("/hsm/cycle2", data, size, true);
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/hsm/cycle2", O_RDWR | O_TRUNC, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "abc", 3, 0), 3);
	CU_ASSERT_EQUAL(weir_pread(fh, buf, 100, 0), 3);
	CU_ASSERT_EQUAL(memcmp(buf, "abc", 3), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/hsm/cycle2"), 3);
	CU_ASSERT_EQUAL(weir_hsm_state_get(fs, "/hsm/cycle2", &hs), 0);
	CU_ASSERT_EQUAL(hs.hs_flags & (WEIR_HS_EXISTS | WEIR_HS_DIRTY | WEIR_HS_RELEASED),
			WEIR_HS_EXISTS | WEIR_HS_DIRTY);
	free(data);
	free(buf);
}

struct trunc_arg {
	_Atomic long ta_rc; /* -1000 until done */
};

static void *trunc_opener(void *p)
{
	struct trunc_arg *ta = p;
	weir_file_t *fh = NULL;
	long rc = weir_open(fs, "/hsm/cycle3", O_WRONLY | O_TRUNC, 0, &fh);

	if (!rc)
		rc = weir_close(fh);
	atomic_store(&ta->ta_rc, rc);
	return NULL;
}

/*
 * O_TRUNC of a released file whose old objects cannot be destroyed yet (the
 * OSS is down): the MDS answers EAGAIN, libweir retries until the objects
 * are gone (the OSS is back), then the open succeeds.
 */
static void test_trunc_retries_while_objects_destroyed(void)
{
	char data[5000];
	struct trunc_arg ta = {.ta_rc = -1000};
	pthread_t th;
	int rc = 1;
	uint64_t id;

	th_fill_pattern(data, sizeof(data), 5);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/hsm/cycle3", data, sizeof(data)), 0);
	archive_release("/hsm/cycle3", data, sizeof(data), false);
	weir_fid_t f = fid_of("/hsm/cycle3");
	CU_ASSERT_EQUAL_FATAL(th_server_stop(cl, 0), 0);
	CU_ASSERT_EQUAL(weir_hsm_request(fs, WEIR_HSM_RELEASE, &f, 1, &id, &rc), 0);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, trunc_opener, &ta), 0);
	th_sleep_ms(1500);
	CU_ASSERT_EQUAL(atomic_load(&ta.ta_rc), -1000); /* retrying */
	CU_ASSERT_EQUAL(th_server_start(cl, 0), 0);
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 30000), 0);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(atomic_load(&ta.ta_rc), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/hsm/cycle3"), 0);
	struct weir_hsm_state hs;
	CU_ASSERT_EQUAL(weir_hsm_state_fid(fs, &f, &hs), 0);
	CU_ASSERT(!(hs.hs_flags & WEIR_HS_RELEASED));
}

/* ------------------------------------------------------------ requests */

static void test_request_errors(void)
{
	weir_fid_t fids[3];
	uint64_t ids[3];
	int rcs[3];

	CU_ASSERT_EQUAL(th_put(fs, "/hsm/fresh", "hello", 5), 0);
	fids[0] = fid_of("/hsm/fresh");
	fids[1] = fid_of("/plain");     /* not under an association */
	fids[2] = fid_of("/hsm");       /* not a regular file */
	CU_ASSERT_EQUAL(weir_hsm_request(fs, WEIR_HSM_RELEASE, fids, 1, ids, rcs), 0);
	CU_ASSERT_EQUAL(rcs[0], -ENODATA); /* never archived */
	CU_ASSERT_EQUAL(ids[0], 0);
	CU_ASSERT_EQUAL(weir_hsm_request(fs, WEIR_HSM_ARCHIVE, fids + 1, 2, ids, rcs), 0);
	CU_ASSERT_EQUAL(rcs[0], -EINVAL);
	CU_ASSERT_EQUAL(rcs[1], -EINVAL);
	CU_ASSERT_EQUAL(ids[0], 0);

	CU_ASSERT_EQUAL(weir_hsm_request(fs, WEIR_HSM_ARCHIVE, fids, 1, ids, rcs), 0);
	CU_ASSERT_EQUAL(rcs[0], 0);
	CU_ASSERT_NOT_EQUAL(ids[0], 0);
	struct weir_hsm_queue *q = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_hsm_queue_get(fs, ids, 1, &q), 0);
	CU_ASSERT_EQUAL(q->hq_nr, 1);
	if (q->hq_nr == 1) {
		CU_ASSERT_EQUAL(q->hq_actions[0].hai_action, WEIR_HSM_ARCHIVE);
		CU_ASSERT(fid_eq(&q->hq_actions[0].hai_fid, &fids[0]));
		CU_ASSERT_EQUAL(q->hq_actions[0].hai_state, WEIR_HSM_WAITING);
		CU_ASSERT_EQUAL(q->hq_actions[0].hai_bytes_total, 5);
	}
	weir_hsm_queue_free(q);
	/* a second archive shares the queued action */
	uint64_t id2 = 0;
	int rc2 = 1;
	CU_ASSERT_EQUAL(weir_hsm_request(fs, WEIR_HSM_ARCHIVE, fids, 1, &id2, &rc2), 0);
	CU_ASSERT_EQUAL(rc2, 0);
	CU_ASSERT_EQUAL(id2, ids[0]);
	/* ids and rcs are optional */
	CU_ASSERT_EQUAL(weir_hsm_request(fs, WEIR_HSM_RESTORE, fids, 1, NULL, NULL), 0);

	/* the call's own errors */
	CU_ASSERT_EQUAL(weir_hsm_request(fs, WEIR_HSM_ARCHIVE, fids, 0, ids, rcs), -EINVAL);
	CU_ASSERT_EQUAL(weir_hsm_request(fs, (enum weir_hsm_action)9, fids, 1, ids, rcs), -EINVAL);
	CU_ASSERT_EQUAL(weir_hsm_request(fs, WEIR_HSM_ARCHIVE, NULL, 1, ids, rcs), -EINVAL);
	CU_ASSERT_EQUAL(weir_hsm_queue_get(fs, NULL, 1, &q), -EINVAL);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_dra_create_list_delete),
		TH_TEST(test_import_state_and_stat),
		TH_TEST(test_released_waits_time_out),
		TH_TEST(test_restore_by_hand),
		TH_TEST(test_reader_waits_for_restore),
		TH_TEST(test_lost_copy_gives_eio),
		TH_TEST(test_truncate_released),
		TH_TEST(test_archive_release_write_trunc),
		TH_TEST(test_trunc_retries_while_objects_destroyed),
		TH_TEST(test_request_errors),
		TH_TEST_END,
	};
	return th_cunit_run("hsm_client", suite_init, suite_clean, tests);
}
