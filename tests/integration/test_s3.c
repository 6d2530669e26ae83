/*
 * tests/integration/test_s3.c - common/s3.c against a real S3-protocol
 * server (s3rver, started by tests/lib/s3srv.c): bucket, PUT/GET (whole and
 * ranged), HEAD, DELETE, ListObjectsV2 across pages, multipart upload and
 * abort, a stopped server, and that every request is SigV4-signed with
 * x-amz-content-sha256. Exits 77 when node or s3rver is not installed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "common/s3.h"
#include "harness.h"
#include "s3srv.h"

static struct th_s3rver *srv;
static struct weir_s3_conf conf;

/* trace: counts requests and checks each is signed */
struct trace {
	int tr_requests;
	int tr_unsigned;
	char tr_last[4096];
};
static struct trace tr;

static void on_trace(void *arg, const char *h, size_t len)
{
	struct trace *t = arg;
	size_t n = len < sizeof(t->tr_last) - 1 ? len : sizeof(t->tr_last) - 1;

	memcpy(t->tr_last, h, n);
	t->tr_last[n] = '\0';
	t->tr_requests++;
	if (!strstr(t->tr_last, "\r\nAuthorization: AWS4-HMAC-SHA256 Credential=S3RVER/") ||
	    !strcasestr(t->tr_last, "\r\nx-amz-content-sha256: ") ||
	    !strcasestr(t->tr_last, "\r\nx-amz-date: ") ||
	    !strstr(t->tr_last, "SignedHeaders=") || !strstr(t->tr_last, "x-amz-content-sha256;") ||
	    strstr(t->tr_last, "x-www-form-urlencoded"))
	{
		if (t->tr_unsigned++ == 0)
			fprintf(stderr, "unsigned request:\n%s\n", t->tr_last);
	}
}

static struct weir_s3 *client(void)
{
	struct weir_s3 *s = NULL;
	CU_ASSERT_FATAL(weir_s3_new(&conf, &s) == 0);
	weir_s3_set_trace(s, on_trace, &tr);
	return s;
}

static void test_s3_put_get_head_delete(void)
{
	struct weir_s3 *s = client();
	size_t len = 3 * 1000 * 1000 + 17;
	char *data = malloc(len), *back = malloc(len), etag[WEIR_S3_ETAG_MAX] = "";
	struct weir_s3_obj o;

	th_fill_pattern(data, len, 7);
	CU_ASSERT_EQUAL(weir_s3_put(s, "dir/a file+x", data, len, etag), 0);
	CU_ASSERT(strlen(etag) > 2 && etag[0] == '"');
	memset(back, 0, len);
	CU_ASSERT_EQUAL(weir_s3_get(s, "dir/a file+x", 0, len, back, NULL), (ssize_t)len);
	CU_ASSERT(memcmp(back, data, len) == 0);
	/* ranged, from the middle; and one running past the end */
	CU_ASSERT_EQUAL(weir_s3_get(s, "dir/a file+x", 1234567, 4096, back, NULL), 4096);
	CU_ASSERT(memcmp(back, data + 1234567, 4096) == 0);
	CU_ASSERT(strstr(tr.tr_last, "\r\nRange: bytes=1234567-1238662\r\n") != NULL);
	CU_ASSERT_EQUAL(weir_s3_get(s, "dir/a file+x", len - 10, 100, back, NULL), 10);
	CU_ASSERT(memcmp(back, data + len - 10, 10) == 0);
	CU_ASSERT_EQUAL(weir_s3_get(s, "dir/a file+x", len + 5, 100, back, NULL), 0);
	/* HEAD */
	CU_ASSERT_EQUAL(weir_s3_head(s, "dir/a file+x", &o), 0);
	CU_ASSERT_EQUAL(o.so_size, len);
	CU_ASSERT_STRING_EQUAL(o.so_etag, etag);
	CU_ASSERT(o.so_mtime > 1600000000);
	/* If-Match with the right ETag reads */
	CU_ASSERT_EQUAL(weir_s3_get(s, "dir/a file+x", 0, 16, back, etag), 16);
	CU_ASSERT(strstr(tr.tr_last, "\r\nIf-Match: ") != NULL);
	/* empty object */
	CU_ASSERT_EQUAL(weir_s3_put(s, "empty", NULL, 0, NULL), 0);
	CU_ASSERT_EQUAL(weir_s3_head(s, "empty", &o), 0);
	CU_ASSERT_EQUAL(o.so_size, 0);
	/* DELETE, then GET and HEAD are -ENOENT; a second DELETE succeeds like S3 */
	CU_ASSERT_EQUAL(weir_s3_delete(s, "dir/a file+x"), 0);
	CU_ASSERT_EQUAL(weir_s3_get(s, "dir/a file+x", 0, 10, back, NULL), -ENOENT);
	CU_ASSERT_EQUAL(weir_s3_head(s, "dir/a file+x", &o), -ENOENT);
	CU_ASSERT_EQUAL(weir_s3_delete(s, "dir/a file+x"), 0);
	CU_ASSERT_EQUAL(weir_s3_delete(s, "empty"), 0);
	free(data);
	free(back);
	weir_s3_free(s);
}

#define NR_LIST 1050
struct seen {
	unsigned char sn_count[NR_LIST];
	int sn_bad;
	int sn_total;
};

static int on_obj(void *arg, const struct weir_s3_obj *o)
{
	struct seen *sn = arg;
	unsigned i;

	sn->sn_total++;
	if (sscanf(o->so_key, "list/k%05u", &i) != 1 || i >= NR_LIST || o->so_size != i % 37 ||
	    o->so_etag[0] != '"' || o->so_mtime < 1600000000) {
		sn->sn_bad++;
		return 0;
	}
	sn->sn_count[i]++;
	return 0;
}

static int stop_at_3(void *arg, const struct weir_s3_obj *o)
{
	(void)o;
	return ++*(int *)arg == 3 ? 42 : 0;
}

static void test_s3_list_pages(void)
{
	struct weir_s3 *s = client();
	char buf[64], key[32];
	struct seen *sn = calloc(1, sizeof(*sn));
	int before, n = 0;

	memset(buf, 'x', sizeof(buf));
	for (unsigned i = 0; i < NR_LIST; i++) {
		snprintf(key, sizeof(key), "list/k%05u", i);
		CU_ASSERT_EQUAL_FATAL(weir_s3_put(s, key, buf, i % 37, NULL), 0);
	}
	CU_ASSERT_EQUAL(weir_s3_put(s, "other/x", buf, 1, NULL), 0);
	/* pages of 1000 (default) and of 100: 2 and 11 requests */
	before = tr.tr_requests;
	CU_ASSERT_EQUAL(weir_s3_list(s, "list/", 0, on_obj, sn), 0);
	CU_ASSERT_EQUAL(tr.tr_requests - before, 2);
	CU_ASSERT(strstr(tr.tr_last, "continuation-token=") != NULL);
	CU_ASSERT_EQUAL(sn->sn_bad, 0);
	CU_ASSERT_EQUAL(sn->sn_total, NR_LIST);
	for (unsigned i = 0; i < NR_LIST; i++)
		CU_ASSERT_EQUAL(sn->sn_count[i], 1);
	memset(sn, 0, sizeof(*sn));
	before = tr.tr_requests;
	CU_ASSERT_EQUAL(weir_s3_list(s, "list/", 100, on_obj, sn), 0);
	CU_ASSERT_EQUAL(tr.tr_requests - before, 11);
	CU_ASSERT_EQUAL(sn->sn_total, NR_LIST);
	for (unsigned i = 0; i < NR_LIST; i++)
		CU_ASSERT_EQUAL(sn->sn_count[i], 1);
	/* the callback stops it */
	CU_ASSERT_EQUAL(weir_s3_list(s, "list/", 2, stop_at_3, &n), 42);
	CU_ASSERT_EQUAL(n, 3);
	/* an empty prefix */
	memset(sn, 0, sizeof(*sn));
	CU_ASSERT_EQUAL(weir_s3_list(s, "nothing/", 0, on_obj, sn), 0);
	CU_ASSERT_EQUAL(sn->sn_total, 0);
	free(sn);
	weir_s3_free(s);
}

static void test_s3_multipart(void)
{
	struct weir_s3 *s = client();
	const size_t part = 5u << 20, last = 123457, len = 3 * part + last;
	char *data = malloc(len), *back = malloc(len), id[WEIR_S3_UPLOAD_ID_MAX],
	     etag[WEIR_S3_ETAG_MAX] = "";
	struct weir_s3_part parts[4];
	struct weir_s3_obj o;

	th_fill_pattern(data, len, 99);
	CU_ASSERT_EQUAL_FATAL(weir_s3_mpu_create(s, "big/obj", id), 0);
	CU_ASSERT(strstr(tr.tr_last, "POST /weir-test/big/obj?uploads= ") != NULL);
	/* parts out of order, as parallel uploaders would finish */
	for (int i = 3; i >= 0; i--) {
		parts[i].sp_nr = (uint32_t)i + 1;
		CU_ASSERT_EQUAL(weir_s3_mpu_part(s, "big/obj", id, parts[i].sp_nr,
						 data + (size_t)i * part, i == 3 ? last : part,
						 parts[i].sp_etag),
				0);
	}
	CU_ASSERT(strstr(tr.tr_last, "?partNumber=1&uploadId=") != NULL);
	CU_ASSERT_EQUAL(weir_s3_mpu_complete(s, "big/obj", id, parts, 4, etag), 0);
	CU_ASSERT(etag[0] == '"');
	CU_ASSERT_EQUAL(weir_s3_head(s, "big/obj", &o), 0);
	CU_ASSERT_EQUAL(o.so_size, len);
	memset(back, 0, len);
	CU_ASSERT_EQUAL(weir_s3_get(s, "big/obj", 0, len, back, NULL), (ssize_t)len);
	CU_ASSERT(memcmp(back, data, len) == 0);
	/* parts not ascending are refused before any request */
	struct weir_s3_part bad[2] = { parts[1], parts[0] };
	CU_ASSERT_EQUAL(weir_s3_mpu_complete(s, "big/obj", id, bad, 2, NULL), -EINVAL);
	free(data);
	free(back);
	weir_s3_free(s);
}

static void test_s3_multipart_abort(void)
{
	struct weir_s3 *s = client();
	char id[WEIR_S3_UPLOAD_ID_MAX], etag[WEIR_S3_ETAG_MAX], want[2048];
	int rc;

	CU_ASSERT_EQUAL_FATAL(weir_s3_mpu_create(s, "aborted", id), 0);
	CU_ASSERT_EQUAL(weir_s3_mpu_part(s, "aborted", id, 1, "abc", 3, etag), 0);
	rc = weir_s3_mpu_abort(s, "aborted", id);
	/* the request is AbortMultipartUpload as real S3 defines it */
	snprintf(want, sizeof(want), "DELETE /weir-test/aborted?uploadId=%s HTTP/1.1\r\n", id);
	CU_ASSERT(strncmp(tr.tr_last, want, strlen(want)) == 0);
	/*
	 * Real S3 answers 204 (0). s3rver does not implement it and answers 405
	 * MethodNotAllowed, which must surface as -EOPNOTSUPP, not as success:
	 * the test accepts exactly these two and nothing that hides a failure.
	 */
	CU_ASSERT(rc == 0 || rc == -EOPNOTSUPP);
	if (rc == -EOPNOTSUPP)
		fprintf(stderr, "note: server lacks AbortMultipartUpload (s3rver): -EOPNOTSUPP\n");
	/* the abort never created or deleted an object */
	struct weir_s3_obj o;
	CU_ASSERT_EQUAL(weir_s3_head(s, "aborted", &o), -ENOENT);
	CU_ASSERT_EQUAL(weir_s3_mpu_abort(s, "aborted", ""), -EINVAL);
	weir_s3_free(s);
}

static void test_s3_errors(void)
{
	struct weir_s3_conf c = conf;
	struct weir_s3 *s = NULL;
	char buf[16];

	/* no such bucket */
	snprintf(c.sc_bucket, sizeof(c.sc_bucket), "no-such-bucket");
	CU_ASSERT_FATAL(weir_s3_new(&c, &s) == 0);
	CU_ASSERT_EQUAL(weir_s3_get(s, "k", 0, 4, buf, NULL), -ENOENT);
	weir_s3_free(s);
	/* bad configuration */
	c = conf;
	c.sc_access_key[0] = '\0';
	CU_ASSERT_EQUAL(weir_s3_new(&c, &s), -EINVAL);
	c = conf;
	snprintf(c.sc_endpoint, sizeof(c.sc_endpoint), "ftp://x");
	CU_ASSERT_EQUAL(weir_s3_new(&c, &s), -EINVAL);
}

/* last: stops the server */
static void test_s3_server_stopped(void)
{
	struct weir_s3_conf c = conf;
	struct weir_s3 *s = NULL;
	char buf[16];
	uint64_t t0;
	int before;

	c.sc_retries = 3;
	c.sc_retry_base_ms = 50;
	c.sc_retry_budget_ms = 2000;
	CU_ASSERT_FATAL(weir_s3_new(&c, &s) == 0);
	weir_s3_set_trace(s, on_trace, &tr);
	CU_ASSERT_EQUAL(weir_s3_put(s, "k", "x", 1, NULL), 0);
	CU_ASSERT_EQUAL(weir_s3_get(s, "k", 0, 1, buf, NULL), 1); /* stored before the stop */
	th_s3rver_stop(srv);
	t0 = th_now_ms();
	before = tr.tr_requests;
	CU_ASSERT_EQUAL(weir_s3_get(s, "k", 0, 1, buf, NULL), -ECONNREFUSED);
	CU_ASSERT(th_now_ms() - t0 < 5000);
	CU_ASSERT_EQUAL(tr.tr_requests, before); /* nothing was sent */
	t0 = th_now_ms();
	CU_ASSERT_EQUAL(weir_s3_put(s, "k2", "x", 1, NULL), -ECONNREFUSED);
	CU_ASSERT(th_now_ms() - t0 < 5000);
	/* it comes back on the same port: the same handle works again */
	CU_ASSERT_EQUAL_FATAL(th_s3rver_restart(srv), 0);
	/* (s3rver may answer its first requests before it serves its files:
	 * once a run answered "partial file" past the 2 s budget) */
	ssize_t got = -1;
	buf[0] = 0;
	t0 = th_now_ms();
	while ((got = weir_s3_get(s, "k", 0, 1, buf, NULL)) != 1 && th_now_ms() - t0 < 15000)
		th_sleep_ms(200);
	if (got != 1)
		printf("\n    GET after the restart: %zd\n", got);
	CU_ASSERT_EQUAL(got, 1);
	CU_ASSERT_EQUAL(buf[0], 'x');
	weir_s3_free(s);
}

static void test_s3_every_request_signed(void)
{
	CU_ASSERT(tr.tr_requests > NR_LIST);
	CU_ASSERT_EQUAL(tr.tr_unsigned, 0);
}

/*
 * S3 keys are opaque: "a/../b" is its own key, not "b". libcurl normalises
 * dot segments of a URL path unless told not to (CURLOPT_PATH_AS_IS); the
 * request line must carry the key as written.
 */
static void test_s3_dot_segments_kept(void)
{
	struct weir_s3 *s = client();
	struct weir_s3_obj o;

	/* s3rver itself resolves dot segments (it finds "k"), so only the
	 * request line is ours to check; real S3 keeps the key as sent. */
	(void)weir_s3_head(s, "dots/../k", &o);
	CU_ASSERT_PTR_NOT_NULL(strstr(tr.tr_last, "/dots/../k HTTP/"));
	(void)weir_s3_head(s, "dots/./k", &o);
	CU_ASSERT_PTR_NOT_NULL(strstr(tr.tr_last, "/dots/./k HTTP/"));
	weir_s3_free(s);
}

static const struct th_test tests[] = {
	TH_TEST(test_s3_put_get_head_delete),
	TH_TEST(test_s3_list_pages),
	TH_TEST(test_s3_multipart),
	TH_TEST(test_s3_multipart_abort),
	TH_TEST(test_s3_errors),
	TH_TEST(test_s3_server_stopped),
	TH_TEST(test_s3_every_request_signed),
	TH_TEST(test_s3_dot_segments_kept),
	TH_TEST_END,
};

int main(void)
{
	struct weir_s3 *s;
	int rc = th_s3rver_start_env("test_s3", "weir-test", &conf, &srv);

	if (rc)
		return rc;
	if (weir_s3_new(&conf, &s) < 0)
		return 1;
	weir_s3_set_trace(s, on_trace, &tr);
	rc = weir_s3_bucket_create(s);
	weir_s3_free(s);
	if (rc < 0) {
		fprintf(stderr, "test_s3: create bucket: %d\n", rc);
		th_s3rver_free(srv);
		return 1;
	}
	rc = th_cunit_run("s3", NULL, NULL, tests);
	th_s3rver_free(srv);
	return rc;
}
