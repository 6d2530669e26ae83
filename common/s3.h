/*
 * common/s3.h - a small S3 client: the foundation of the S3 tier.
 *
 * Built on libcurl (HTTP, connection reuse, SigV4 signing through
 * CURLOPT_AWS_SIGV4 "aws:amz:REGION:s3"), OpenSSL libcrypto (SHA-256 of
 * request payloads, sent as x-amz-content-sha256) and libxml2 (ListObjectsV2
 * pages, CompleteMultipartUpload results and error bodies). Protocol
 * reference: the Amazon S3 API Reference (PutObject, GetObject, HeadObject,
 * DeleteObject, ListObjectsV2, CreateMultipartUpload, UploadPart,
 * CompleteMultipartUpload, AbortMultipartUpload) and "Signature Version 4
 * signing process" (canonical query: parameters sorted by name, names and
 * values URI-encoded with only A-Z a-z 0-9 - _ . ~ left as is).
 *
 * Threads: a struct weir_s3 owns one CURL easy handle and is NOT thread-safe:
 * use one handle per thread (for example one per multipart part uploader).
 * Handles are independent; weir_s3_new() may be called from any thread.
 * Connections are kept open between requests of the same handle.
 *
 * Errors are negative errno values; the S3 error code and message of a
 * failed request are logged (WARN) with the method, bucket and key:
 *   NoSuchKey, NoSuchBucket, NoSuchUpload           -ENOENT
 *   AccessDenied, SignatureDoesNotMatch,
 *   InvalidAccessKeyId (403)                        -EACCES
 *   PreconditionFailed (412)                        -ESTALE
 *   BucketAlreadyOwnedByYou, BucketAlreadyExists    -EEXIST
 *   NotImplemented (501), MethodNotAllowed (405)    -EOPNOTSUPP
 *   other 4xx                                       -EINVAL
 *   5xx (incl. 503 SlowDown) after the retries      -EIO
 *   connection refused / DNS failure after retries  -ECONNREFUSED
 *   timeout after the retries                       -ETIMEDOUT
 *   other transport failures                        -EIO
 * 5xx answers and connection errors are retried with exponential backoff,
 * at most sc_retries times and within sc_retry_budget_ms in all.
 */
#ifndef WEIR_COMMON_S3_H
#define WEIR_COMMON_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WEIR_S3_KEY_MAX 1024       /* bytes of a key, without the NUL (S3's limit) */
#define WEIR_S3_ETAG_MAX 128       /* bytes of an ETag buffer, with quotes and NUL */
#define WEIR_S3_UPLOAD_ID_MAX 1024 /* bytes of an upload id buffer, with NUL */
#define WEIR_S3_PART_MAX 10000     /* highest multipart part number */

/** Client configuration. Strings are copied by weir_s3_new(). */
struct weir_s3_conf {
	char sc_endpoint[256];          /* "http://127.0.0.1:4568" or "https://s3.amazonaws.com" */
	char sc_region[64];             /* signing region, "us-east-1" by default */
	char sc_bucket[64];             /* bucket every request addresses */
	char sc_access_key[128];        /* access key id */
	char sc_secret_key[128];        /* secret access key */
	bool sc_path_style;             /* true: ENDPOINT/BUCKET/KEY; false: BUCKET.HOST/KEY */
	bool sc_unsigned_payload;       /* send UNSIGNED-PAYLOAD instead of the body's SHA-256 */
	uint32_t sc_connect_timeout_ms; /* TCP (+TLS) connect, per attempt; default 5000 */
	uint32_t sc_timeout_ms;         /* whole request, per attempt; 0 = none; default 300000 */
	uint32_t sc_retries;            /* retries after the first attempt; default 5 */
	uint32_t sc_retry_base_ms;      /* first backoff delay, doubled each retry; default 100 */
	uint32_t sc_retry_budget_ms;    /* no retry starts after this since the first; default 20000 */
};

/** One object as listed or HEADed. */
struct weir_s3_obj {
	char so_key[WEIR_S3_KEY_MAX + 1]; /* key (empty for HEAD) */
	uint64_t so_size;                 /* bytes */
	char so_etag[WEIR_S3_ETAG_MAX];   /* ETag as sent, with its quotes */
	int64_t so_mtime;                 /* Last-Modified / LastModified, seconds since the epoch */
};

/** One completed part, for weir_s3_mpu_complete(). */
struct weir_s3_part {
	uint32_t sp_nr;                 /* part number, 1..WEIR_S3_PART_MAX, ascending */
	char sp_etag[WEIR_S3_ETAG_MAX]; /* ETag returned by weir_s3_mpu_part() */
};

struct weir_s3;

/**
 * Trace hook: called with the text of every request header block sent
 * (request line, then headers, CRLF-separated, as on the wire).
 * \param[in] arg   The argument given to weir_s3_set_trace().
 * \param[in] hdrs  Not NUL-terminated; valid during the call only.
 * \param[in] len   Bytes of \a hdrs.
 */
typedef void (*weir_s3_trace_fn)(void *arg, const char *hdrs, size_t len);

/**
 * Listing callback: called once per object, in key order.
 * \param[in] arg  As given to weir_s3_list().
 * \param[in] obj  Valid during the call only.
 * \return 0 to go on, nonzero to stop the listing (weir_s3_list returns it).
 */
typedef int (*weir_s3_list_fn)(void *arg, const struct weir_s3_obj *obj);

/** Fill \a c with the defaults (region us-east-1, path style, timeouts, retries). */
void weir_s3_conf_init(struct weir_s3_conf *c);

/**
 * Set the fields of \a c from the environment: AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL (endpoint), AWS_REGION (or
 * AWS_DEFAULT_REGION). Unset variables leave their field alone.
 * \return 0, or -ENAMETOOLONG when a value does not fit its field (\a c is
 *         then partly updated).
 */
int weir_s3_conf_from_env(struct weir_s3_conf *c);

/**
 * Make a client handle.
 * \param[in]  conf  Copied; endpoint, bucket and both keys must be set.
 * \param[out] out   Free with weir_s3_free().
 * \return 0, -EINVAL (a required field is empty, the endpoint is not http(s)://),
 *         -ENOMEM.
 * Thread safety: any thread; the first call initialises libcurl globally.
 */
int weir_s3_new(const struct weir_s3_conf *conf, struct weir_s3 **out);

/** Free a handle and close its connections. Accepts NULL. */
void weir_s3_free(struct weir_s3 *s);

/** Install (or with NULL remove) a trace hook on \a s; see weir_s3_trace_fn. */
void weir_s3_set_trace(struct weir_s3 *s, weir_s3_trace_fn fn, void *arg);

/**
 * Create the handle's bucket (CreateBucket; in sc_region unless us-east-1).
 * \return 0, -EEXIST (already exists), or the errors listed at the top.
 */
int weir_s3_bucket_create(struct weir_s3 *s);

/**
 * Store an object (PutObject) from a buffer.
 * \param[in]  key   Object key, at most WEIR_S3_KEY_MAX bytes.
 * \param[in]  buf   \a len bytes, not retained (may be NULL when \a len is 0).
 * \param[out] etag  WEIR_S3_ETAG_MAX bytes for the new ETag, or NULL.
 * \return 0, -ENAMETOOLONG, or the errors listed at the top.
 */
int weir_s3_put(struct weir_s3 *s, const char *key, const void *buf, size_t len, char *etag);

/**
 * Read bytes [off, off + len) of an object (ranged GetObject, "Range:
 * bytes=off-(off+len-1)") into a caller buffer.
 * \param[out] buf      At least \a len bytes.
 * \param[in]  len      Bytes wanted; 0 returns 0 without a request.
 * \param[in]  if_etag  When not NULL, sent as If-Match: a changed object
 *                      fails with -ESTALE instead of returning new bytes.
 * \return Bytes read (short only at the end of the object; 0 when \a off is
 *         at or past it), or -ENOENT, -ESTALE, or the errors listed at the top.
 */
ssize_t weir_s3_get(struct weir_s3 *s, const char *key, uint64_t off, size_t len, void *buf,
		    const char *if_etag);

/**
 * HeadObject: size, ETag, Last-Modified of \a key into \a obj (so_key is set
 * to \a key). \return 0, -ENOENT, or the errors listed at the top.
 */
int weir_s3_head(struct weir_s3 *s, const char *key, struct weir_s3_obj *obj);

/**
 * DeleteObject. Like S3, deleting a key that does not exist succeeds.
 * \return 0 or the errors listed at the top.
 */
int weir_s3_delete(struct weir_s3 *s, const char *key);

/**
 * List every object whose key starts with \a prefix (ListObjectsV2, pages of
 * up to \a page_keys keys, following NextContinuationToken), calling \a fn
 * once per object in key order.
 * \param[in] prefix     "" or NULL for the whole bucket.
 * \param[in] page_keys  max-keys per page, 1..1000; 0 = 1000.
 * \return 0 when all were listed, the nonzero value \a fn returned to stop,
 *         -EPROTO (malformed page), or the errors listed at the top.
 */
int weir_s3_list(struct weir_s3 *s, const char *prefix, uint32_t page_keys, weir_s3_list_fn fn,
		 void *arg);

/**
 * CreateMultipartUpload for \a key.
 * \param[out] upload_id  WEIR_S3_UPLOAD_ID_MAX bytes.
 * \return 0, -EPROTO (no UploadId in the answer), or the errors at the top.
 */
int weir_s3_mpu_create(struct weir_s3 *s, const char *key, char *upload_id);

/**
 * UploadPart \a part_nr (1..WEIR_S3_PART_MAX) of \a upload_id from a buffer.
 * Every part but the last must be at least 5 MiB on real S3. Parts may be
 * uploaded in any order and in parallel, each through its own handle.
 * \param[out] etag  WEIR_S3_ETAG_MAX bytes: the part's ETag, for completion.
 * \return 0, -EINVAL (part number), -ENOENT (no such upload), or the errors
 *         listed at the top.
 */
int weir_s3_mpu_part(struct weir_s3 *s, const char *key, const char *upload_id, uint32_t part_nr,
		     const void *buf, size_t len, char *etag);

/**
 * CompleteMultipartUpload with \a nr parts in ascending part order. Like
 * real S3, an error body in a 200 answer is an error.
 * \param[out] etag  WEIR_S3_ETAG_MAX bytes for the object's ETag, or NULL.
 * \return 0, -EINVAL (no parts, or not ascending), -ENOENT (no such upload),
 *         -EPROTO, -ENOMEM, or the errors listed at the top.
 */
int weir_s3_mpu_complete(struct weir_s3 *s, const char *key, const char *upload_id,
			 const struct weir_s3_part *parts, size_t nr, char *etag);

/**
 * AbortMultipartUpload: frees the stored parts of \a upload_id.
 * \return 0, -ENOENT (NoSuchUpload: already completed or aborted),
 *         -EOPNOTSUPP (the server does not implement it), or the errors
 *         listed at the top.
 */
int weir_s3_mpu_abort(struct weir_s3 *s, const char *key, const char *upload_id);

/* ------------------------------------------------------------------------
 * Request construction and answer parsing, exposed for unit tests (no I/O).
 */

/** One query parameter; qp_val NULL is sent as "name=" (the canonical form). */
struct weir_s3_qparam {
	const char *qp_name;
	const char *qp_val;
};

/**
 * URI-encode \a in as SigV4 asks: A-Z a-z 0-9 - _ . ~ kept, every other
 * byte %XX (upper-case hex); '/' kept when \a keep_slash.
 * \return length written (without the NUL), or -ENAMETOOLONG when \a out
 *         (\a outlen bytes) is too small.
 */
int weir_s3_uri_encode(const char *in, bool keep_slash, char *out, size_t outlen);

/**
 * Canonical query string: the \a nr parameters encoded, sorted by encoded
 * name then value, joined by '&'. \a nr 0 gives "".
 * \return length, -ENAMETOOLONG, or -ENOMEM.
 */
int weir_s3_query_build(const struct weir_s3_qparam *qp, size_t nr, char *out, size_t outlen);

/**
 * Request URL for \a key (NULL or "" = the bucket itself) and canonical
 * query \a query (NULL or "" = none), path-style or virtual-host-style as
 * \a conf says. \return length, -EINVAL (bad endpoint), -ENAMETOOLONG.
 */
int weir_s3_url_build(const struct weir_s3_conf *conf, const char *key, const char *query,
		      char *out, size_t outlen);

/** "bytes=OFF-LAST" for \a len > 0 bytes at \a off. \return length or -EINVAL/-ENAMETOOLONG. */
int weir_s3_range_fmt(uint64_t off, uint64_t len, char *out, size_t outlen);

/** Lower-case hex SHA-256 of \a len bytes (65 bytes with the NUL into \a hex). */
void weir_s3_sha256_hex(const void *buf, size_t len, char hex[65]);

/**
 * Parse one ListObjectsV2 answer, calling \a fn per Contents entry.
 * \param[out] truncated  IsTruncated.
 * \param[out] token      NextContinuationToken ("" when none), \a toklen bytes.
 * \return 0, -EPROTO (not a ListBucketResult, or an entry without Key/Size or
 *         with a key too long), or the nonzero value of \a fn.
 */
int weir_s3_list_parse(const char *xml, size_t len, weir_s3_list_fn fn, void *arg,
		       bool *truncated, char *token, size_t toklen);

/**
 * Parse an S3 <Error> body: Code and Message (each truncated to its buffer).
 * \return 0, or -EPROTO when \a xml is not an Error document.
 */
int weir_s3_error_parse(const char *xml, size_t len, char *code, size_t codelen, char *msg,
			size_t msglen);

/** The negative errno for HTTP \a status with S3 error \a code ("" or NULL if none). */
int weir_s3_errno(long status, const char *code);

#endif /* WEIR_COMMON_S3_H */
