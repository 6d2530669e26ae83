/*
 * common/s3.c - the S3 client's requests: one CURL easy handle per struct
 * weir_s3 (kept between requests, so its connections are reused), SigV4
 * signing by libcurl (CURLOPT_AWS_SIGV4), the payload hash sent by us as
 * x-amz-content-sha256 (curl 7.88 does not add it; S3 requires it), and a
 * retry loop with exponential backoff around every request.
 *
 * Bodies go through CURLOPT_POSTFIELDS (with CURLOPT_CUSTOMREQUEST for PUT),
 * so the bytes curl hashes for the signature are the bytes we hash for the
 * header. See common/s3.h for the API and the error mapping.
 */
#define _GNU_SOURCE
#include "common/s3.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "common/log.h"
#include "common/s3_int.h"
#include "common/util.h"

#define S3_ERRBODY_MAX (64u << 10) /* bytes of an error body kept */
#define S3_BODY_MAX (16u << 20)    /* bytes of a listing/XML answer kept */
#define S3_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct weir_s3 {
	struct weir_s3_conf s_conf;
	CURL *s_curl;
	char s_sigv4[96]; /* "aws:amz:REGION:s3" */
	char s_userpwd[260];
	weir_s3_trace_fn s_trace;
	void *s_trace_arg;
};

/* One request and its answer. */
struct s3_req {
	const char *rq_method;  /* "GET", "PUT", ... */
	const char *rq_key;     /* NULL = the bucket */
	const char *rq_query;   /* canonical query or NULL */
	const void *rq_body;    /* request body or NULL */
	size_t rq_body_len;     /* bytes */
	const char *rq_range;   /* "bytes=a-b" or NULL */
	const char *rq_if_match;
	const char *rq_ctype;   /* Content-Type of the body */
	/* GET data lands here when the answer is 2xx */
	char *rq_sink;
	size_t rq_sink_len;    /* bytes of rq_sink */
	uint64_t rq_sink_skip; /* range start: bytes of a 200 (unranged) answer to skip */
	size_t rq_sink_got;    /* bytes stored */
	uint64_t rq_seen;      /* bytes of body seen */
	/* answer */
	long rs_status;
	char *rs_body; /* 2xx XML answer or error body (NUL-terminated), malloc'd */
	size_t rs_len, rs_cap;
	bool rs_oom;
	uint64_t rs_clen; /* Content-Length */
	bool rs_have_clen;
	char rs_etag[WEIR_S3_ETAG_MAX];
	int64_t rs_mtime;
};

static pthread_once_t s3_once = PTHREAD_ONCE_INIT;
static CURLcode s3_global_rc;

static void s3_global_init(void)
{
	s3_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int copy_field(char *dst, size_t dlen, const char *src)
{
	size_t l = strlen(src);
	if (l >= dlen)
		return -ENAMETOOLONG;
	memcpy(dst, src, l + 1);
	return 0;
}

void weir_s3_conf_init(struct weir_s3_conf *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->sc_region, "us-east-1");
	c->sc_path_style = true;
	c->sc_connect_timeout_ms = 5000;
	c->sc_timeout_ms = 300000;
	c->sc_retries = 5;
	c->sc_retry_base_ms = 100;
	c->sc_retry_budget_ms = 20000;
}

int weir_s3_conf_from_env(struct weir_s3_conf *c)
{
	static const struct {
		const char *env;
		size_t off, len;
	} vars[] = {
		{ "AWS_ACCESS_KEY_ID", offsetof(struct weir_s3_conf, sc_access_key),
		  sizeof(c->sc_access_key) },
		{ "AWS_SECRET_ACCESS_KEY", offsetof(struct weir_s3_conf, sc_secret_key),
		  sizeof(c->sc_secret_key) },
		{ "AWS_ENDPOINT_URL", offsetof(struct weir_s3_conf, sc_endpoint),
		  sizeof(c->sc_endpoint) },
		{ "AWS_DEFAULT_REGION", offsetof(struct weir_s3_conf, sc_region),
		  sizeof(c->sc_region) },
		{ "AWS_REGION", offsetof(struct weir_s3_conf, sc_region), sizeof(c->sc_region) },
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i].env);
		if (!v || !v[0])
			continue;
		if (copy_field((char *)c + vars[i].off, vars[i].len, v) < 0)
			return -ENAMETOOLONG;
	}
	return 0;
}

int weir_s3_new(const struct weir_s3_conf *conf, struct weir_s3 **out)
{
	struct weir_s3 *s;
	char url[512];
	int rc;

	pthread_once(&s3_once, s3_global_init);
	if (s3_global_rc != CURLE_OK)
		return -ENOMEM;
	if (!conf->sc_bucket[0] || !conf->sc_access_key[0] || !conf->sc_secret_key[0] ||
	    !conf->sc_region[0])
		return -EINVAL;
	rc = weir_s3_url_build(conf, NULL, NULL, url, sizeof(url));
	if (rc < 0)
		return rc == -ENAMETOOLONG ? -EINVAL : rc;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->s_conf = *conf;
	snprintf(s->s_sigv4, sizeof(s->s_sigv4), "aws:amz:%s:s3", conf->sc_region);
	snprintf(s->s_userpwd, sizeof(s->s_userpwd), "%s:%s", conf->sc_access_key,
		 conf->sc_secret_key);
	s->s_curl = curl_easy_init();
	if (!s->s_curl) {
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void weir_s3_free(struct weir_s3 *s)
{
	if (!s)
		return;
	curl_easy_cleanup(s->s_curl);
	explicit_bzero(s->s_userpwd, sizeof(s->s_userpwd));
	explicit_bzero(&s->s_conf, sizeof(s->s_conf));
	free(s);
}

void weir_s3_set_trace(struct weir_s3 *s, weir_s3_trace_fn fn, void *arg)
{
	s->s_trace = fn;
	s->s_trace_arg = arg;
}

/* ------------------------------------------------------------ curl callbacks */

static void body_append(struct s3_req *rq, const char *p, size_t n, size_t max)
{
	if (rq->rs_oom || rq->rs_len + n > max) {
		rq->rs_oom = true;
		return;
	}
	if (rq->rs_len + n + 1 > rq->rs_cap) {
		size_t cap = rq->rs_cap ? rq->rs_cap : 4096;
		char *nb;
		while (cap < rq->rs_len + n + 1)
			cap *= 2;
		nb = realloc(rq->rs_body, cap);
		if (!nb) {
			rq->rs_oom = true;
			return;
		}
		rq->rs_body = nb;
		rq->rs_cap = cap;
	}
	memcpy(rq->rs_body + rq->rs_len, p, n);
	rq->rs_len += n;
	rq->rs_body[rq->rs_len] = '\0';
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct s3_req *rq = arg;
	size_t n = size * nmemb;

	if (rq->rs_status >= 200 && rq->rs_status < 300 && rq->rq_sink) {
		/* data: skip what precedes the range (a server that ignored it), keep the rest */
		uint64_t pos = rq->rq_seen, skip = rq->rs_status == 200 ? rq->rq_sink_skip : 0;
		size_t from = 0;
		if (pos < skip)
			from = (size_t)(skip - pos < n ? skip - pos : n);
		if (from < n && rq->rq_sink_got < rq->rq_sink_len) {
			size_t c = n - from;
			if (c > rq->rq_sink_len - rq->rq_sink_got)
				c = rq->rq_sink_len - rq->rq_sink_got;
			memcpy(rq->rq_sink + rq->rq_sink_got, p + from, c);
			rq->rq_sink_got += c;
		}
		rq->rq_seen += n;
		return n;
	}
	body_append(rq, p, n,
		    rq->rs_status >= 200 && rq->rs_status < 300 ? S3_BODY_MAX : S3_ERRBODY_MAX);
	return n;
}

/* Copy header value \a v (length \a n, trailing space trimmed) into \a out. */
static void hdr_value(const char *v, size_t n, char *out, size_t outlen)
{
	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, v, n);
	out[n] = '\0';
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *arg)
{
	struct s3_req *rq = arg;
	size_t n = size * nmemb;
	char v[128];

	if (n > 5 && strncmp(p, "HTTP/", 5) == 0) {
		/* a new status line (after a 100 Continue, too): start over */
		const char *sp = memchr(p, ' ', n);
		rq->rs_status = sp ? strtol(sp + 1, NULL, 10) : 0;
		rq->rs_have_clen = false;
		rq->rs_etag[0] = '\0';
		return n;
	}
	if (n > 15 && strncasecmp(p, "Content-Length:", 15) == 0) {
		hdr_value(p + 15, n - 15, v, sizeof(v));
		rq->rs_clen = strtoull(v, NULL, 10);
		rq->rs_have_clen = true;
	} else if (n > 5 && strncasecmp(p, "ETag:", 5) == 0) {
		hdr_value(p + 5, n - 5, rq->rs_etag, sizeof(rq->rs_etag));
	} else if (n > 14 && strncasecmp(p, "Last-Modified:", 14) == 0) {
		hdr_value(p + 14, n - 14, v, sizeof(v));
		rq->rs_mtime = (int64_t)curl_getdate(v, NULL);
	}
	return n;
}

static int on_debug(CURL *c, curl_infotype type, char *data, size_t size, void *arg)
{
	struct weir_s3 *s = arg;

	(void)c;
	if (type == CURLINFO_HEADER_OUT && s->s_trace)
		s->s_trace(s->s_trace_arg, data, size);
	return 0;
}

/* ------------------------------------------------------------ one request */

static int hdr_add(struct curl_slist **l, const char *fmt, const char *v)
{
	char line[1200];
	struct curl_slist *n;

	snprintf(line, sizeof(line), fmt, v);
	n = curl_slist_append(*l, line);
	if (!n)
		return -ENOMEM;
	*l = n;
	return 0;
}

static int req_headers(const struct weir_s3 *s, const struct s3_req *rq, struct curl_slist **out)
{
	struct curl_slist *l = NULL;
	char sha[65];
	int rc = 0;

	if (s->s_conf.sc_unsigned_payload)
		strcpy(sha, "UNSIGNED-PAYLOAD");
	else if (rq->rq_body_len)
		weir_s3_sha256_hex(rq->rq_body, rq->rq_body_len, sha);
	else
		strcpy(sha, S3_EMPTY_SHA256);
	rc = rc ?: hdr_add(&l, "x-amz-content-sha256: %s", sha);
	if (rq->rq_range)
		rc = rc ?: hdr_add(&l, "Range: %s", rq->rq_range);
	if (rq->rq_if_match)
		rc = rc ?: hdr_add(&l, "If-Match: %s", rq->rq_if_match);
	/*
	 * Every PUT/POST carries a real Content-Type (curl would add a form
	 * type). No "Header:" removals here: curl 7.88 would sign the removed
	 * header, and S3 would then miss it when checking the signature.
	 */
	if (rq->rq_body || !strcmp(rq->rq_method, "PUT") || !strcmp(rq->rq_method, "POST"))
		rc = rc ?: hdr_add(&l, "Content-Type: %s",
				    rq->rq_ctype ? rq->rq_ctype : "application/octet-stream");
	if (rc) {
		curl_slist_free_all(l);
		return rc;
	}
	*out = l;
	return 0;
}

/* Set up the easy handle for one attempt of \a rq. */
static int req_setup(struct weir_s3 *s, struct s3_req *rq, const char *url,
		     struct curl_slist *hdrs)
{
	CURL *c = s->s_curl;
	CURLcode cc = CURLE_OK;

	curl_easy_reset(c); /* keeps the connection cache */
#define SET(opt, val) cc = cc ? cc : curl_easy_setopt(c, opt, val)
	SET(CURLOPT_URL, url);
	SET(CURLOPT_PATH_AS_IS, 1L); /* keys are opaque: "a/../b" must not become "b" */
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_AWS_SIGV4, s->s_sigv4);
	SET(CURLOPT_USERPWD, s->s_userpwd);
	SET(CURLOPT_HTTPHEADER, hdrs);
	SET(CURLOPT_WRITEFUNCTION, on_write);
	SET(CURLOPT_WRITEDATA, rq);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, rq);
	SET(CURLOPT_CONNECTTIMEOUT_MS, (long)s->s_conf.sc_connect_timeout_ms);
	SET(CURLOPT_TIMEOUT_MS, (long)s->s_conf.sc_timeout_ms);
	SET(CURLOPT_DEBUGFUNCTION, on_debug);
	SET(CURLOPT_DEBUGDATA, s);
	SET(CURLOPT_VERBOSE, s->s_trace ? 1L : 0L);
	if (strcmp(rq->rq_method, "HEAD") == 0) {
		SET(CURLOPT_NOBODY, 1L);
	} else if (rq->rq_body || strcmp(rq->rq_method, "POST") == 0 ||
		   strcmp(rq->rq_method, "PUT") == 0) {
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->rq_body_len);
		SET(CURLOPT_POSTFIELDS, rq->rq_body ? rq->rq_body : "");
		SET(CURLOPT_CUSTOMREQUEST, rq->rq_method);
	} else if (strcmp(rq->rq_method, "GET") != 0) {
		SET(CURLOPT_CUSTOMREQUEST, rq->rq_method);
	}
#undef SET
	return cc == CURLE_OK ? 0 : -EINVAL;
}

static bool curl_retryable(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

static int curl_errno(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

static void req_reset_answer(struct s3_req *rq)
{
	rq->rs_status = 0;
	rq->rs_len = 0;
	if (rq->rs_body)
		rq->rs_body[0] = '\0';
	rq->rs_oom = false;
	rq->rs_have_clen = false;
	rq->rs_etag[0] = '\0';
	rq->rs_mtime = -1;
	rq->rq_sink_got = 0;
	rq->rq_seen = 0;
}

/* Log a failed answer with its S3 code and message; return its errno. */
static int req_fail(struct weir_s3 *s, const struct s3_req *rq, int attempts)
{
	char code[64] = "", msg[256] = "";

	if (rq->rs_len)
		weir_s3_error_parse(rq->rs_body, rq->rs_len, code, sizeof(code), msg,
				    sizeof(msg));
	int rc = weir_s3_errno(rq->rs_status, code);
	/* a missing key is routine for HEAD/GET callers: log it at DEBUG */
	if ((rc == -ENOENT && (!strcmp(code, "NoSuchKey") || !strcmp(rq->rq_method, "HEAD"))) ||
	    rq->rs_status == 416)
		WEIR_LOG_DEBUG("op=s3 method=%s bucket=%s key=%s status=%ld code=%s",
			       rq->rq_method, s->s_conf.sc_bucket, rq->rq_key ? rq->rq_key : "",
			       rq->rs_status, code);
	else
		WEIR_LOG_WARN("op=s3 method=%s bucket=%s key=%s status=%ld code=%s attempts=%d "
			      "rc=%d S3 error: %s",
			      rq->rq_method, s->s_conf.sc_bucket, rq->rq_key ? rq->rq_key : "",
			      rq->rs_status, code[0] ? code : "-", attempts, rc,
			      msg[0] ? msg : "(no message)");
	return rc;
}

/*
 * Run \a rq with retries. \return 0 on a 2xx answer (in rq->rs_*), else the
 * mapped negative errno (logged). rq->rs_body must be freed by the caller.
 */
static int req_run(struct weir_s3 *s, struct s3_req *rq)
{
	const struct weir_s3_conf *cf = &s->s_conf;
	struct curl_slist *hdrs = NULL;
	uint64_t t0 = weir_now_ns(), delay_ms = cf->sc_retry_base_ms ?: 1;
	char url[WEIR_S3_KEY_MAX * 3 + 1024];
	int rc, attempt;

	rc = weir_s3_url_build(cf, rq->rq_key, rq->rq_query, url, sizeof(url));
	if (rc < 0)
		return rc;
	rc = req_headers(s, rq, &hdrs);
	if (rc < 0)
		return rc;
	for (attempt = 1;; attempt++) {
		CURLcode cc;
		bool retry;
		uint64_t spent_ms;

		req_reset_answer(rq);
		rc = req_setup(s, rq, url, hdrs);
		if (rc < 0)
			break;
		cc = curl_easy_perform(s->s_curl);
		if (cc == CURLE_OK && rq->rs_oom) {
			rc = -ENOMEM;
			break;
		}
		if (cc == CURLE_OK && rq->rs_status >= 200 && rq->rs_status < 300) {
			rc = 0;
			break;
		}
		retry = cc != CURLE_OK ? curl_retryable(cc) : rq->rs_status >= 500;
		spent_ms = (weir_now_ns() - t0) / 1000000;
		if (!retry || (uint32_t)(attempt - 1) >= cf->sc_retries ||
		    spent_ms + delay_ms > cf->sc_retry_budget_ms) {
			if (cc != CURLE_OK) {
				rc = curl_errno(cc);
				WEIR_LOG_WARN("op=s3 method=%s bucket=%s key=%s attempts=%d rc=%d "
					      "transport error: %s",
					      rq->rq_method, cf->sc_bucket,
					      rq->rq_key ? rq->rq_key : "", attempt, rc,
					      curl_easy_strerror(cc));
			} else {
				rc = req_fail(s, rq, attempt);
			}
			break;
		}
		WEIR_LOG_INFO("op=s3 method=%s key=%s attempt=%d status=%ld curl=%d retry_in_ms=%" PRIu64,
			      rq->rq_method, rq->rq_key ? rq->rq_key : "", attempt, rq->rs_status,
			      (int)cc, delay_ms);
		/* jitter: 50..100% of the delay, so parallel clients spread out */
		{
			uint64_t d = delay_ms / 2 + (uint64_t)rand() % (delay_ms / 2 + 1);
			struct timespec ts = { (time_t)(d / 1000), (long)(d % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}
		delay_ms = delay_ms * 2 > 5000 ? 5000 : delay_ms * 2;
	}
	curl_slist_free_all(hdrs);
	return rc;
}

static void req_done(struct s3_req *rq)
{
	free(rq->rs_body);
	rq->rs_body = NULL;
}

static int key_check(const char *key)
{
	if (!key || !key[0])
		return -EINVAL;
	return strlen(key) > WEIR_S3_KEY_MAX ? -ENAMETOOLONG : 0;
}

/* ------------------------------------------------------------ operations */

int weir_s3_bucket_create(struct weir_s3 *s)
{
	struct s3_req rq = { .rq_method = "PUT" };
	char body[256];
	int rc;

	if (strcmp(s->s_conf.sc_region, "us-east-1") != 0) {
		snprintf(body, sizeof(body),
			 "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
			 "<LocationConstraint>%s</LocationConstraint></CreateBucketConfiguration>",
			 s->s_conf.sc_region);
		rq.rq_body = body;
		rq.rq_body_len = strlen(body);
		rq.rq_ctype = "application/xml";
	}
	rc = req_run(s, &rq);
	req_done(&rq);
	return rc;
}

int weir_s3_put(struct weir_s3 *s, const char *key, const void *buf, size_t len, char *etag)
{
	struct s3_req rq = { .rq_method = "PUT", .rq_key = key, .rq_body = len ? buf : NULL,
			     .rq_body_len = len };
	int rc = key_check(key);

	if (rc < 0)
		return rc;
	rc = req_run(s, &rq);
	if (rc == 0 && etag)
		copy_field(etag, WEIR_S3_ETAG_MAX, rq.rs_etag);
	req_done(&rq);
	return rc;
}

ssize_t weir_s3_get(struct weir_s3 *s, const char *key, uint64_t off, size_t len, void *buf,
		    const char *if_etag)
{
	char range[64];
	struct s3_req rq = { .rq_method = "GET", .rq_key = key, .rq_range = range,
			     .rq_if_match = if_etag, .rq_sink = buf, .rq_sink_len = len,
			     .rq_sink_skip = off };
	int rc = key_check(key);

	if (rc < 0)
		return rc;
	if (len == 0)
		return 0;
	rc = weir_s3_range_fmt(off, len, range, sizeof(range));
	if (rc < 0)
		return rc;
	rc = req_run(s, &rq);
	if (rc == -EINVAL && rq.rs_status == 416) {
		rc = 0; /* InvalidRange: off is at or past the end */
		rq.rq_sink_got = 0;
	}
	req_done(&rq);
	return rc < 0 ? rc : (ssize_t)rq.rq_sink_got;
}

int weir_s3_head(struct weir_s3 *s, const char *key, struct weir_s3_obj *obj)
{
	struct s3_req rq = { .rq_method = "HEAD", .rq_key = key };
	int rc = key_check(key);

	if (rc < 0)
		return rc;
	rc = req_run(s, &rq);
	if (rc == 0) {
		memset(obj, 0, sizeof(*obj));
		copy_field(obj->so_key, sizeof(obj->so_key), key);
		obj->so_size = rq.rs_have_clen ? rq.rs_clen : 0;
		copy_field(obj->so_etag, sizeof(obj->so_etag), rq.rs_etag);
		obj->so_mtime = rq.rs_mtime;
		if (!rq.rs_have_clen)
			rc = -EPROTO;
	}
	req_done(&rq);
	return rc;
}

int weir_s3_delete(struct weir_s3 *s, const char *key)
{
	struct s3_req rq = { .rq_method = "DELETE", .rq_key = key };
	int rc = key_check(key);

	if (rc < 0)
		return rc;
	rc = req_run(s, &rq);
	req_done(&rq);
	return rc;
}

int weir_s3_list(struct weir_s3 *s, const char *prefix, uint32_t page_keys, weir_s3_list_fn fn,
		 void *arg)
{
	char token[2048] = "", query[8192], mk[16];
	bool truncated = true;
	int rc = 0;

	if (page_keys == 0 || page_keys > 1000)
		page_keys = 1000;
	snprintf(mk, sizeof(mk), "%u", page_keys);
	while (truncated && rc == 0) {
		struct weir_s3_qparam qp[4] = { { "list-type", "2" }, { "max-keys", mk } };
		size_t nr = 2;
		struct s3_req rq = { .rq_method = "GET", .rq_query = query };

		if (prefix && prefix[0])
			qp[nr++] = (struct weir_s3_qparam){ "prefix", prefix };
		if (token[0])
			qp[nr++] = (struct weir_s3_qparam){ "continuation-token", token };
		rc = weir_s3_query_build(qp, nr, query, sizeof(query));
		if (rc < 0)
			break;
		rc = req_run(s, &rq);
		if (rc == 0) {
			char next[sizeof(token)];
			rc = weir_s3_list_parse(rq.rs_body ? rq.rs_body : "", rq.rs_len, fn, arg,
						&truncated, next, sizeof(next));
			if (rc == -EPROTO)
				WEIR_LOG_WARN("op=s3 method=LIST bucket=%s prefix=%s "
					      "malformed ListObjectsV2 answer (%zu bytes)",
					      s->s_conf.sc_bucket, prefix ? prefix : "", rq.rs_len);
			memcpy(token, next, sizeof(token));
		}
		req_done(&rq);
	}
	return rc;
}

int weir_s3_mpu_create(struct weir_s3 *s, const char *key, char *upload_id)
{
	struct s3_req rq = { .rq_method = "POST", .rq_key = key, .rq_query = "uploads=" };
	int rc = key_check(key);

	if (rc < 0)
		return rc;
	rc = req_run(s, &rq);
	if (rc == 0) {
		rc = s3_xml_text(rq.rs_body ? rq.rs_body : "", rq.rs_len,
				 "InitiateMultipartUploadResult", "UploadId", upload_id,
				 WEIR_S3_UPLOAD_ID_MAX);
		if (rc == 0 && !upload_id[0])
			rc = -EPROTO;
		if (rc < 0) {
			WEIR_LOG_WARN("op=s3 method=POST key=%s no UploadId in the answer", key);
			rc = -EPROTO;
		}
	}
	req_done(&rq);
	return rc;
}

/* Query "partNumber=N&uploadId=ID" or "uploadId=ID" (nr 0), canonical. */
static int mpu_query(const char *upload_id, uint32_t nr, char *out, size_t outlen)
{
	char n[16];
	struct weir_s3_qparam qp[2] = { { "uploadId", upload_id }, { "partNumber", n } };

	snprintf(n, sizeof(n), "%u", nr);
	return weir_s3_query_build(qp, nr ? 2 : 1, out, outlen);
}

int weir_s3_mpu_part(struct weir_s3 *s, const char *key, const char *upload_id, uint32_t part_nr,
		     const void *buf, size_t len, char *etag)
{
	char query[WEIR_S3_UPLOAD_ID_MAX * 3 + 64];
	struct s3_req rq = { .rq_method = "PUT", .rq_key = key, .rq_query = query,
			     .rq_body = len ? buf : NULL, .rq_body_len = len };
	int rc = key_check(key);

	if (rc < 0)
		return rc;
	if (part_nr < 1 || part_nr > WEIR_S3_PART_MAX)
		return -EINVAL;
	rc = mpu_query(upload_id, part_nr, query, sizeof(query));
	if (rc < 0)
		return rc;
	rc = req_run(s, &rq);
	if (rc == 0) {
		if (!rq.rs_etag[0])
			rc = -EPROTO;
		else
			copy_field(etag, WEIR_S3_ETAG_MAX, rq.rs_etag);
	}
	req_done(&rq);
	return rc;
}

int weir_s3_mpu_complete(struct weir_s3 *s, const char *key, const char *upload_id,
			 const struct weir_s3_part *parts, size_t nr, char *etag)
{
	char query[WEIR_S3_UPLOAD_ID_MAX * 3 + 64], *body, *p;
	size_t cap, i;
	int rc = key_check(key);

	if (rc < 0)
		return rc;
	if (nr == 0 || nr > WEIR_S3_PART_MAX)
		return -EINVAL;
	for (i = 0; i < nr; i++)
		if (parts[i].sp_nr < 1 || parts[i].sp_nr > WEIR_S3_PART_MAX ||
		    (i && parts[i].sp_nr <= parts[i - 1].sp_nr) || strpbrk(parts[i].sp_etag, "<&"))
			return -EINVAL;
	rc = mpu_query(upload_id, 0, query, sizeof(query));
	if (rc < 0)
		return rc;
	cap = 128 + nr * (64 + WEIR_S3_ETAG_MAX);
	body = malloc(cap);
	if (!body)
		return -ENOMEM;
	p = body + sprintf(body, "<CompleteMultipartUpload "
				 "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	for (i = 0; i < nr; i++)
		p += sprintf(p, "<Part><PartNumber>%u</PartNumber><ETag>%s</ETag></Part>",
			     parts[i].sp_nr, parts[i].sp_etag);
	p += sprintf(p, "</CompleteMultipartUpload>");

	struct s3_req rq = { .rq_method = "POST", .rq_key = key, .rq_query = query,
			     .rq_body = body, .rq_body_len = (size_t)(p - body),
			     .rq_ctype = "application/xml" };
	rc = req_run(s, &rq);
	if (rc == 0) {
		/* real S3 may answer 200 and put the error in the body */
		char code[64], msg[256], tag[WEIR_S3_ETAG_MAX];
		const char *b = rq.rs_body ? rq.rs_body : "";
		if (weir_s3_error_parse(b, rq.rs_len, code, sizeof(code), msg, sizeof(msg)) == 0) {
			rc = weir_s3_errno(500, code);
			WEIR_LOG_WARN("op=s3 method=POST key=%s complete failed code=%s rc=%d "
				      "S3 error: %s",
				      key, code, rc, msg);
		} else if (s3_xml_text(b, rq.rs_len, "CompleteMultipartUploadResult", "ETag", tag,
				       sizeof(tag)) == 0) {
			if (etag)
				copy_field(etag, WEIR_S3_ETAG_MAX, tag);
		} else {
			WEIR_LOG_WARN("op=s3 method=POST key=%s complete: unexpected answer", key);
			rc = -EPROTO;
		}
	}
	req_done(&rq);
	free(body);
	return rc;
}

int weir_s3_mpu_abort(struct weir_s3 *s, const char *key, const char *upload_id)
{
	char query[WEIR_S3_UPLOAD_ID_MAX * 3 + 64];
	struct s3_req rq = { .rq_method = "DELETE", .rq_key = key, .rq_query = query };
	int rc = key_check(key);

	if (rc < 0)
		return rc;
	if (!upload_id || !upload_id[0])
		return -EINVAL;
	rc = mpu_query(upload_id, 0, query, sizeof(query));
	if (rc < 0)
		return rc;
	rc = req_run(s, &rq);
	req_done(&rq);
	return rc;
}
