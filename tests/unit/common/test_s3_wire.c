/*
 * tests/unit/common/test_s3_wire.c - the S3 client against a scripted HTTP
 * responder on a loopback socket: what s3rver cannot show. Retries of 503
 * SlowDown and 500 answers with backoff and their limit, a retry after the
 * server closed the connection mid-answer, connection reuse between
 * requests, virtual-host addressing on the wire (Host: BUCKET.localhost),
 * and every attempt signed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/s3.h"
#include "harness.h"

#define RS_MAX 8

/* One scripted answer; close_early: send half the headers and close. */
struct rs_answer {
	int ra_status;
	const char *ra_code;  /* S3 error code of the XML body, NULL: no body */
	bool ra_close_early;
};

struct responder {
	int r_lfd;
	uint16_t r_port;
	pthread_t r_thread;
	struct rs_answer r_script[RS_MAX];
	int r_nr_script;
	/* what was seen */
	int r_requests;
	int r_conns;
	int r_unsigned;
	char r_host[RS_MAX][128];
	char r_line[RS_MAX][256];
};

/* Read one request (headers, then Content-Length bytes). \return 0, or -1 at EOF. */
static int rs_read_request(int fd, char *hdr, size_t cap)
{
	size_t len = 0;
	long clen = 0;

	while (len + 1 < cap) {
		ssize_t n = read(fd, hdr + len, 1);
		if (n <= 0)
			return -1;
		len++;
		if (len >= 4 && !memcmp(hdr + len - 4, "\r\n\r\n", 4))
			break;
	}
	hdr[len] = '\0';
	const char *cl = strcasestr(hdr, "\r\nContent-Length:");
	if (cl)
		clen = strtol(cl + 17, NULL, 10);
	while (clen > 0) {
		char buf[4096];
		ssize_t n = read(fd, buf, clen < (long)sizeof(buf) ? (size_t)clen : sizeof(buf));
		if (n <= 0)
			return -1;
		clen -= n;
	}
	return 0;
}

static void rs_header_value(const char *hdr, const char *name, char *out, size_t cap)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\r\n%s:", name);
	const char *p = strcasestr(hdr, pat);
	out[0] = '\0';
	if (!p)
		return;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	size_t n = strcspn(p, "\r\n");
	snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
}

static void *rs_main(void *arg)
{
	struct responder *r = arg;
	static char hdr[65536];

	for (;;) {
		int fd = accept(r->r_lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		r->r_conns++;
		while (rs_read_request(fd, hdr, sizeof(hdr)) == 0) {
			int i = r->r_requests++;
			if (i < RS_MAX) {
				rs_header_value(hdr, "Host", r->r_host[i], sizeof(r->r_host[i]));
				snprintf(r->r_line[i], sizeof(r->r_line[i]), "%.*s",
					 (int)strcspn(hdr, "\r\n"), hdr);
			}
			if (!strstr(hdr, "\r\nAuthorization: AWS4-HMAC-SHA256 Credential=AK/") ||
			    !strcasestr(hdr, "\r\nx-amz-content-sha256: "))
				r->r_unsigned++;
			struct rs_answer a = i < r->r_nr_script ? r->r_script[i]
							       : r->r_script[r->r_nr_script - 1];
			char body[512] = "", out[1024];
			if (a.ra_code)
				snprintf(body, sizeof(body),
					 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s"
					 "</Code><Message>scripted</Message></Error>", a.ra_code);
			int n = snprintf(out, sizeof(out),
					 "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n%s"
					 "Content-Type: application/xml\r\n\r\n%s", a.ra_status,
					 strlen(body), a.ra_status == 200 ? "ETag: \"e1\"\r\n" : "",
					 body);
			if (a.ra_close_early) {
				(void)!write(fd, out, 12);
				break;
			}
			if (write(fd, out, (size_t)n) != n)
				break;
		}
		close(fd);
	}
}

static void rs_start(struct responder *r, const struct rs_answer *script, int nr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);

	memset(r, 0, sizeof(*r));
	memcpy(r->r_script, script, (size_t)nr * sizeof(*script));
	r->r_nr_script = nr;
	r->r_lfd = socket(AF_INET, SOCK_STREAM, 0);
	CU_ASSERT_FATAL(r->r_lfd >= 0);
	CU_ASSERT_FATAL(bind(r->r_lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CU_ASSERT_FATAL(listen(r->r_lfd, 8) == 0);
	CU_ASSERT_FATAL(getsockname(r->r_lfd, (struct sockaddr *)&sa, &sl) == 0);
	r->r_port = ntohs(sa.sin_port);
	CU_ASSERT_FATAL(pthread_create(&r->r_thread, NULL, rs_main, r) == 0);
}

static void rs_stop(struct responder *r)
{
	shutdown(r->r_lfd, SHUT_RDWR);
	close(r->r_lfd);
	pthread_join(r->r_thread, NULL);
}

static struct weir_s3 *rs_client(const struct responder *r, bool path_style, uint32_t retries)
{
	struct weir_s3_conf c;
	struct weir_s3 *s = NULL;

	weir_s3_conf_init(&c);
	snprintf(c.sc_endpoint, sizeof(c.sc_endpoint), "http://%s:%u",
		 path_style ? "127.0.0.1" : "localhost", r->r_port);
	snprintf(c.sc_bucket, sizeof(c.sc_bucket), "bkt");
	snprintf(c.sc_access_key, sizeof(c.sc_access_key), "AK");
	snprintf(c.sc_secret_key, sizeof(c.sc_secret_key), "SK");
	c.sc_path_style = path_style;
	c.sc_retries = retries;
	c.sc_retry_base_ms = 5;
	CU_ASSERT_FATAL(weir_s3_new(&c, &s) == 0);
	return s;
}

/* 503 SlowDown, then 500, then 200: one call, three signed attempts. */
static void test_s3_retries_slowdown_then_succeeds(void)
{
	static const struct rs_answer script[] = {
		{ 503, "SlowDown", false }, { 500, "InternalError", false }, { 200, NULL, false },
	};
	struct responder r;
	char etag[WEIR_S3_ETAG_MAX] = "";

	rs_start(&r, script, 3);
	struct weir_s3 *s = rs_client(&r, true, 5);
	CU_ASSERT_EQUAL(weir_s3_put(s, "k", "abc", 3, etag), 0);
	CU_ASSERT_STRING_EQUAL(etag, "\"e1\"");
	weir_s3_free(s);
	rs_stop(&r);
	CU_ASSERT_EQUAL(r.r_requests, 3);
	CU_ASSERT_EQUAL(r.r_unsigned, 0);
	CU_ASSERT_STRING_EQUAL(r.r_line[2], "PUT /bkt/k HTTP/1.1");
}

/* 503 for ever: sc_retries + 1 attempts, then -EIO. */
static void test_s3_retries_are_bounded(void)
{
	static const struct rs_answer script[] = { { 503, "SlowDown", false } };
	struct responder r;
	char etag[WEIR_S3_ETAG_MAX] = "";

	rs_start(&r, script, 1);
	struct weir_s3 *s = rs_client(&r, true, 2);
	CU_ASSERT_EQUAL(weir_s3_put(s, "k", "abc", 3, etag), -EIO);
	weir_s3_free(s);
	rs_stop(&r);
	CU_ASSERT_EQUAL(r.r_requests, 3);
}

/* A 4xx is an answer, not a hiccup: no retry. */
static void test_s3_client_errors_not_retried(void)
{
	static const struct rs_answer script[] = { { 403, "AccessDenied", false } };
	struct responder r;
	char etag[WEIR_S3_ETAG_MAX] = "";

	rs_start(&r, script, 1);
	struct weir_s3 *s = rs_client(&r, true, 5);
	CU_ASSERT_EQUAL(weir_s3_put(s, "k", "abc", 3, etag), -EACCES);
	weir_s3_free(s);
	rs_stop(&r);
	CU_ASSERT_EQUAL(r.r_requests, 1);
}

/* The server drops the connection mid-answer: retried on a new connection. */
static void test_s3_connection_drop_retried(void)
{
	static const struct rs_answer script[] = { { 200, NULL, true }, { 200, NULL, false } };
	struct responder r;
	char etag[WEIR_S3_ETAG_MAX] = "";

	rs_start(&r, script, 2);
	struct weir_s3 *s = rs_client(&r, true, 5);
	CU_ASSERT_EQUAL(weir_s3_put(s, "k", "abc", 3, etag), 0);
	weir_s3_free(s);
	rs_stop(&r);
	CU_ASSERT_EQUAL(r.r_requests, 2);
	CU_ASSERT_EQUAL(r.r_conns, 2);
}

/* Requests of one handle share one kept-alive connection. */
static void test_s3_connection_reused(void)
{
	static const struct rs_answer script[] = { { 200, NULL, false } };
	struct responder r;
	char etag[WEIR_S3_ETAG_MAX] = "";

	rs_start(&r, script, 1);
	struct weir_s3 *s = rs_client(&r, true, 5);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(weir_s3_put(s, "k", "abc", 3, etag), 0);
	weir_s3_free(s);
	rs_stop(&r);
	CU_ASSERT_EQUAL(r.r_requests, 4);
	CU_ASSERT_EQUAL(r.r_conns, 1);
}

/* Virtual-host style: the bucket is in the Host header, not in the path. */
static void test_s3_virtual_host_on_the_wire(void)
{
	static const struct rs_answer script[] = { { 200, NULL, false } };
	struct responder r;
	char etag[WEIR_S3_ETAG_MAX] = "", host[64];

	rs_start(&r, script, 1);
	struct weir_s3 *s = rs_client(&r, false, 1);
	int rc = weir_s3_put(s, "dir/a b", "abc", 3, etag);
	weir_s3_free(s);
	rs_stop(&r);
	if (rc == -ECONNREFUSED && r.r_requests == 0) {
		/* this libcurl does not resolve *.localhost to loopback itself */
		printf("(bkt.localhost does not resolve here: virtual-host wire check skipped) ");
		return;
	}
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(r.r_requests, 1);
	snprintf(host, sizeof(host), "bkt.localhost:%u", r.r_port);
	CU_ASSERT_STRING_EQUAL(r.r_host[0], host);
	CU_ASSERT_STRING_EQUAL(r.r_line[0], "PUT /dir/a%20b HTTP/1.1");
	CU_ASSERT_EQUAL(r.r_unsigned, 0);
}

static const struct th_test tests[] = {
	TH_TEST(test_s3_retries_slowdown_then_succeeds),
	TH_TEST(test_s3_retries_are_bounded),
	TH_TEST(test_s3_client_errors_not_retried),
	TH_TEST(test_s3_connection_drop_retried),
	TH_TEST(test_s3_connection_reused),
	TH_TEST(test_s3_virtual_host_on_the_wire),
	TH_TEST_END,
};

int main(void)
{
	return th_cunit_run("s3_wire", NULL, NULL, tests);
}
