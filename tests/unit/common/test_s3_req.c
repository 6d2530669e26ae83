/*
 * tests/unit/common/test_s3_req.c - common/s3_xml.c without a server: URI
 * encoding, canonical (sorted, encoded) query strings, URLs in path and
 * virtual-host style, Range text, payload hashes, ListObjectsV2 and error
 * body parsing from fixed strings, S3 code -> errno, configuration from the
 * environment.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "common/s3.h"
#include "harness.h"

static void test_s3_uri_encode(void)
{
	char out[256];

	CU_ASSERT_EQUAL(weir_s3_uri_encode("a-Z_0.9~", false, out, sizeof(out)), 8);
	CU_ASSERT_STRING_EQUAL(out, "a-Z_0.9~");
	weir_s3_uri_encode("dir/a b+c=d&é", true, out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "dir/a%20b%2Bc%3Dd%26%C3%A9");
	weir_s3_uri_encode("dir/x", false, out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "dir%2Fx");
	CU_ASSERT_EQUAL(weir_s3_uri_encode("abc", false, out, 3), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(weir_s3_uri_encode(" ", false, out, 3), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(weir_s3_uri_encode(" ", false, out, 4), 3);
}

static void test_s3_query_sorted_and_encoded(void)
{
	char out[512];
	struct weir_s3_qparam qp[] = {
		{ "prefix", "a b/c" },
		{ "list-type", "2" },
		{ "continuation-token", "1/x+y=" },
		{ "max-keys", "1000" },
	};

	CU_ASSERT(weir_s3_query_build(qp, 4, out, sizeof(out)) > 0);
	CU_ASSERT_STRING_EQUAL(out, "continuation-token=1%2Fx%2By%3D&list-type=2&max-keys=1000"
				    "&prefix=a%20b%2Fc");
	struct weir_s3_qparam up[] = { { "uploads", NULL } };
	weir_s3_query_build(up, 1, out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "uploads=");
	struct weir_s3_qparam pn[] = { { "uploadId", "AB~c" }, { "partNumber", "3" } };
	weir_s3_query_build(pn, 2, out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "partNumber=3&uploadId=AB~c");
	CU_ASSERT_EQUAL(weir_s3_query_build(qp, 0, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "");
	CU_ASSERT_EQUAL(weir_s3_query_build(qp, 4, out, 20), -ENAMETOOLONG);
}

static void test_s3_url_styles(void)
{
	struct weir_s3_conf c;
	char out[512];

	weir_s3_conf_init(&c);
	snprintf(c.sc_endpoint, sizeof(c.sc_endpoint), "http://127.0.0.1:4568");
	snprintf(c.sc_bucket, sizeof(c.sc_bucket), "bkt");
	CU_ASSERT(c.sc_path_style);
	weir_s3_url_build(&c, "d/k 1", "list-type=2", out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "http://127.0.0.1:4568/bkt/d/k%201?list-type=2");
	weir_s3_url_build(&c, NULL, NULL, out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "http://127.0.0.1:4568/bkt");
	c.sc_path_style = false;
	snprintf(c.sc_endpoint, sizeof(c.sc_endpoint), "https://s3.eu-west-1.amazonaws.com/");
	weir_s3_url_build(&c, "d/k", "uploads=", out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "https://bkt.s3.eu-west-1.amazonaws.com/d/k?uploads=");
	weir_s3_url_build(&c, "", NULL, out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "https://bkt.s3.eu-west-1.amazonaws.com/");
	snprintf(c.sc_endpoint, sizeof(c.sc_endpoint), "ftp://x");
	CU_ASSERT_EQUAL(weir_s3_url_build(&c, "k", NULL, out, sizeof(out)), -EINVAL);
	snprintf(c.sc_endpoint, sizeof(c.sc_endpoint), "localhost:9000");
	CU_ASSERT_EQUAL(weir_s3_url_build(&c, "k", NULL, out, sizeof(out)), -EINVAL);
	snprintf(c.sc_endpoint, sizeof(c.sc_endpoint), "http://h");
	CU_ASSERT_EQUAL(weir_s3_url_build(&c, "k", NULL, out, 10), -ENAMETOOLONG);
}

static void test_s3_range_and_sha256(void)
{
	char out[64], hex[65];

	CU_ASSERT_EQUAL(weir_s3_range_fmt(0, 1, out, sizeof(out)), 9);
	CU_ASSERT_STRING_EQUAL(out, "bytes=0-0");
	weir_s3_range_fmt(1048576, 4096, out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "bytes=1048576-1052671");
	weir_s3_range_fmt(1ULL << 40, 1ULL << 32, out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "bytes=1099511627776-1103806595071");
	CU_ASSERT_EQUAL(weir_s3_range_fmt(5, 0, out, sizeof(out)), -EINVAL);
	CU_ASSERT_EQUAL(weir_s3_range_fmt(UINT64_MAX, 2, out, sizeof(out)), -EINVAL);
	/* FIPS 180-2 test vectors */
	weir_s3_sha256_hex("abc", 3, hex);
	CU_ASSERT_STRING_EQUAL(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	weir_s3_sha256_hex(NULL, 0, hex);
	CU_ASSERT_STRING_EQUAL(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static const char page[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<Name>bkt</Name><Prefix>d/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>"
	"<IsTruncated>true</IsTruncated>"
	"<Contents><Key>d/a &amp; b</Key><LastModified>2024-01-02T03:04:05.000Z</LastModified>"
	"<ETag>&quot;0cc175b9c0f1b6a831c399e269772661&quot;</ETag><Size>1</Size>"
	"<StorageClass>STANDARD</StorageClass></Contents>"
	"<Contents><Key>d/big</Key><LastModified>2024-01-02T03:04:06.000Z</LastModified>"
	"<ETag>\"abc-3\"</ETag><Size>17179869184</Size></Contents>"
	"<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
	"</ListBucketResult>";

struct got {
	int g_n;
	struct weir_s3_obj g_o[4];
};

static int collect(void *arg, const struct weir_s3_obj *o)
{
	struct got *g = arg;
	if (g->g_n < 4)
		g->g_o[g->g_n] = *o;
	g->g_n++;
	return 0;
}

static void test_s3_list_parse(void)
{
	struct got *g = calloc(1, sizeof(*g));
	char tok[256];
	bool tr = false;

	CU_ASSERT_EQUAL(weir_s3_list_parse(page, strlen(page), collect, g, &tr, tok, sizeof(tok)),
			0);
	CU_ASSERT(tr);
	CU_ASSERT_STRING_EQUAL(tok, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
	CU_ASSERT_EQUAL_FATAL(g->g_n, 2);
	CU_ASSERT_STRING_EQUAL(g->g_o[0].so_key, "d/a & b");
	CU_ASSERT_EQUAL(g->g_o[0].so_size, 1);
	CU_ASSERT_STRING_EQUAL(g->g_o[0].so_etag, "\"0cc175b9c0f1b6a831c399e269772661\"");
	CU_ASSERT_EQUAL(g->g_o[0].so_mtime, 1704164645);
	CU_ASSERT_EQUAL(g->g_o[1].so_size, 17179869184ULL);
	CU_ASSERT_EQUAL(g->g_o[1].so_mtime, 1704164646);

	/* last page: not truncated, no token */
	static const char last[] = "<ListBucketResult><IsTruncated>false</IsTruncated>"
				   "<KeyCount>0</KeyCount></ListBucketResult>";
	g->g_n = 0;
	CU_ASSERT_EQUAL(weir_s3_list_parse(last, strlen(last), collect, g, &tr, tok, sizeof(tok)),
			0);
	CU_ASSERT(!tr);
	CU_ASSERT_STRING_EQUAL(tok, "");
	CU_ASSERT_EQUAL(g->g_n, 0);

	/* malformed pages are -EPROTO, never a crash */
	static const char *const bad[] = {
		"",
		"not xml",
		"<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>k</Key><Size>12x</Size></Contents></ListBucketResult>",
		"<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
		"<Error><Code>NoSuchBucket</Code></Error>",
		"<ListBucketResult><Contents><Key>k",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(weir_s3_list_parse(bad[i], strlen(bad[i]), collect, g, &tr, tok,
						   sizeof(tok)),
				-EPROTO);
	free(g);
}

static void test_s3_error_parse_and_errno(void)
{
	static const char err[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
		"<Message>The specified key does not exist.</Message><Key>k</Key>"
		"<RequestId>4442587FB7D0A2F9</RequestId></Error>";
	char code[32], msg[128];

	CU_ASSERT_EQUAL(weir_s3_error_parse(err, strlen(err), code, sizeof(code), msg, sizeof(msg)),
			0);
	CU_ASSERT_STRING_EQUAL(code, "NoSuchKey");
	CU_ASSERT_STRING_EQUAL(msg, "The specified key does not exist.");
	CU_ASSERT_EQUAL(weir_s3_error_parse("<x/>", 4, code, sizeof(code), msg, sizeof(msg)),
			-EPROTO);
	CU_ASSERT_EQUAL(weir_s3_error_parse("", 0, code, sizeof(code), msg, sizeof(msg)), -EPROTO);
	/* truncated into a small buffer */
	CU_ASSERT_EQUAL(weir_s3_error_parse(err, strlen(err), code, 4, msg, sizeof(msg)), 0);
	CU_ASSERT_STRING_EQUAL(code, "NoS");

	CU_ASSERT_EQUAL(weir_s3_errno(200, NULL), 0);
	CU_ASSERT_EQUAL(weir_s3_errno(404, "NoSuchKey"), -ENOENT);
	CU_ASSERT_EQUAL(weir_s3_errno(404, "NoSuchBucket"), -ENOENT);
	CU_ASSERT_EQUAL(weir_s3_errno(404, "NoSuchUpload"), -ENOENT);
	CU_ASSERT_EQUAL(weir_s3_errno(404, ""), -ENOENT);
	CU_ASSERT_EQUAL(weir_s3_errno(403, "AccessDenied"), -EACCES);
	CU_ASSERT_EQUAL(weir_s3_errno(403, "SignatureDoesNotMatch"), -EACCES);
	CU_ASSERT_EQUAL(weir_s3_errno(403, NULL), -EACCES);
	CU_ASSERT_EQUAL(weir_s3_errno(412, "PreconditionFailed"), -ESTALE);
	CU_ASSERT_EQUAL(weir_s3_errno(409, "BucketAlreadyOwnedByYou"), -EEXIST);
	CU_ASSERT_EQUAL(weir_s3_errno(405, "MethodNotAllowed"), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(weir_s3_errno(501, "NotImplemented"), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(weir_s3_errno(503, "SlowDown"), -EIO);
	CU_ASSERT_EQUAL(weir_s3_errno(500, "InternalError"), -EIO);
	CU_ASSERT_EQUAL(weir_s3_errno(400, "InvalidArgument"), -EINVAL);
	/* an error body in a 200 (CompleteMultipartUpload) */
	CU_ASSERT_EQUAL(weir_s3_errno(200, "InternalError"), -EIO);
}

static void test_s3_conf_from_env(void)
{
	struct weir_s3_conf c;

	weir_s3_conf_init(&c);
	CU_ASSERT_STRING_EQUAL(c.sc_region, "us-east-1");
	CU_ASSERT(c.sc_retries > 0 && c.sc_retry_budget_ms > 0 && c.sc_connect_timeout_ms > 0);
	setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SECRET", 1);
	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9", 1);
	setenv("AWS_REGION", "eu-west-3", 1);
	CU_ASSERT_EQUAL(weir_s3_conf_from_env(&c), 0);
	CU_ASSERT_STRING_EQUAL(c.sc_access_key, "AKID");
	CU_ASSERT_STRING_EQUAL(c.sc_secret_key, "SECRET");
	CU_ASSERT_STRING_EQUAL(c.sc_endpoint, "http://127.0.0.1:9");
	CU_ASSERT_STRING_EQUAL(c.sc_region, "eu-west-3");
	char longv[300];
	memset(longv, 'a', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = '\0';
	setenv("AWS_SECRET_ACCESS_KEY", longv, 1);
	CU_ASSERT_EQUAL(weir_s3_conf_from_env(&c), -ENAMETOOLONG);
	/* a handle needs a bucket; no request is made by weir_s3_new */
	struct weir_s3 *s = NULL;
	weir_s3_conf_init(&c);
	setenv("AWS_SECRET_ACCESS_KEY", "SECRET", 1);
	weir_s3_conf_from_env(&c);
	CU_ASSERT_EQUAL(weir_s3_new(&c, &s), -EINVAL);
	snprintf(c.sc_bucket, sizeof(c.sc_bucket), "b");
	CU_ASSERT_EQUAL(weir_s3_new(&c, &s), 0);
	weir_s3_free(s);
	weir_s3_free(NULL);
}

static const struct th_test tests[] = {
	TH_TEST(test_s3_uri_encode),
	TH_TEST(test_s3_query_sorted_and_encoded),
	TH_TEST(test_s3_url_styles),
	TH_TEST(test_s3_range_and_sha256),
	TH_TEST(test_s3_list_parse),
	TH_TEST(test_s3_error_parse_and_errno),
	TH_TEST(test_s3_conf_from_env),
	TH_TEST_END,
};

int main(void)
{
	return th_cunit_run("s3_req", NULL, NULL, tests);
}
