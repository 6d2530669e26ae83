/*
 * tests/fuzz/fuzz_s3_xml.c - libFuzzer harness: the S3 XML answer parsers
 * (common/s3_xml.c) that read what an S3 server sends: ListObjectsV2 pages,
 * Error documents, InitiateMultipartUpload and CompleteMultipartUpload
 * results.
 *
 * Each input is one answer body (not NUL-terminated, in a buffer of exactly
 * its size, so ASan sees any read past it) given to every parser with the
 * buffer sizes common/s3.c uses, and again with tiny ones (truncation).
 * Checks: the parsers return 0 or a negative errno; every string they fill
 * is NUL-terminated within its buffer; a listing entry has a key and a size.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/s3.h"
#include "common/s3_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "fuzz_s3_xml: %s:%d: check failed: %s\n", __FILE__,        \
				__LINE__, #c);                                                     \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static int list_cb(void *arg, const struct weir_s3_obj *o)
{
	unsigned *n = arg;
	CHECK(memchr(o->so_key, 0, sizeof(o->so_key)) != NULL);
	CHECK(memchr(o->so_etag, 0, sizeof(o->so_etag)) != NULL);
	(*n)++;
	return *n >= 1000 ? 1 : 0; /* a callback that stops the listing */
}

static void text_check(const char *xml, size_t len, const char *root, const char *name,
		       size_t outlen)
{
	char *out = malloc(outlen);
	if (!out)
		return;
	memset(out, 'x', outlen);
	int rc = s3_xml_text(xml, len, root, name, out, outlen);
	CHECK(rc <= 0);
	if (rc == 0 || rc == -ENAMETOOLONG)
		CHECK(memchr(out, 0, outlen) != NULL);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *xml = malloc(size ? size : 1);
	if (!xml)
		return 0;
	memcpy(xml, data, size);

	static const size_t toklens[] = { 2048, 4 };
	for (size_t i = 0; i < 2; i++) {
		char *token = malloc(toklens[i]);
		bool truncated;
		unsigned n = 0;
		int rc = weir_s3_list_parse(xml, size, list_cb, &n, &truncated, token, toklens[i]);
		CHECK(rc <= 1); /* 1: list_cb stopped it */
		CHECK(memchr(token, 0, toklens[i]) != NULL);
		free(token);
	}

	char code[64], msg[256], c2[2], m2[1];
	int rc = weir_s3_error_parse(xml, size, code, sizeof(code), msg, sizeof(msg));
	CHECK(rc <= 0);
	CHECK(memchr(code, 0, sizeof(code)) && memchr(msg, 0, sizeof(msg)));
	CHECK(weir_s3_errno(200, code) <= 0 && weir_s3_errno(500, code) < 0);
	rc = weir_s3_error_parse(xml, size, c2, sizeof(c2), m2, sizeof(m2));
	CHECK(rc <= 0 && !m2[0] && memchr(c2, 0, sizeof(c2)));

	text_check(xml, size, "InitiateMultipartUploadResult", "UploadId", WEIR_S3_UPLOAD_ID_MAX);
	text_check(xml, size, "CompleteMultipartUploadResult", "ETag", WEIR_S3_ETAG_MAX);
	text_check(xml, size, NULL, "Key", 3);
	free(xml);
	return 0;
}
