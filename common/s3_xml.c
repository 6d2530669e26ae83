/*
 * common/s3_xml.c - the pure parts of the S3 client (no I/O): URI encoding,
 * canonical query strings, URLs, Range headers, payload hashes, and parsing
 * of ListObjectsV2 pages and error bodies with libxml2.
 *
 * References: Amazon S3 API Reference (ListObjectsV2 response elements,
 * Error responses) and the SigV4 "Create a canonical request" rules.
 */
#define _GNU_SOURCE
#include "common/s3.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <openssl/evp.h>

#include "common/s3_int.h"

int weir_s3_uri_encode(const char *in, bool keep_slash, char *out, size_t outlen)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
		unsigned char c = *p;
		bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~' ||
			    (keep_slash && c == '/');
		if (o + (keep ? 1 : 3) >= outlen)
			return -ENAMETOOLONG;
		if (keep) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (o >= outlen)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return (int)o;
}

struct qenc {
	char *qe_name;
	char *qe_val;
};

static int qenc_cmp(const void *a, const void *b)
{
	const struct qenc *x = a, *y = b;
	int c = strcmp(x->qe_name, y->qe_name);
	return c ? c : strcmp(x->qe_val, y->qe_val);
}

int weir_s3_query_build(const struct weir_s3_qparam *qp, size_t nr, char *out, size_t outlen)
{
	struct qenc *e;
	size_t o = 0, i;
	int rc = 0;

	if (outlen == 0)
		return -ENAMETOOLONG;
	out[0] = '\0';
	if (nr == 0)
		return 0;
	e = calloc(nr, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		const char *v = qp[i].qp_val ? qp[i].qp_val : "";
		size_t nl = strlen(qp[i].qp_name) * 3 + 1, vl = strlen(v) * 3 + 1;
		e[i].qe_name = malloc(nl);
		e[i].qe_val = malloc(vl);
		if (!e[i].qe_name || !e[i].qe_val) {
			rc = -ENOMEM;
			goto out_free;
		}
		weir_s3_uri_encode(qp[i].qp_name, false, e[i].qe_name, nl);
		weir_s3_uri_encode(v, false, e[i].qe_val, vl);
	}
	qsort(e, nr, sizeof(*e), qenc_cmp);
	for (i = 0; i < nr; i++) {
		int n = snprintf(out + o, outlen - o, "%s%s=%s", i ? "&" : "", e[i].qe_name,
				 e[i].qe_val);
		if (n < 0 || (size_t)n >= outlen - o) {
			rc = -ENAMETOOLONG;
			goto out_free;
		}
		o += (size_t)n;
	}
	rc = (int)o;
out_free:
	for (i = 0; i < nr; i++) {
		free(e[i].qe_name);
		free(e[i].qe_val);
	}
	free(e);
	return rc;
}

int weir_s3_url_build(const struct weir_s3_conf *conf, const char *key, const char *query,
		      char *out, size_t outlen)
{
	const char *ep = conf->sc_endpoint, *host;
	char scheme[16], ekey[WEIR_S3_KEY_MAX * 3 + 1];
	size_t sl, hl;
	int n, kl = 0;

	host = strstr(ep, "://");
	if (!host || host == ep || (size_t)(host - ep) >= sizeof(scheme))
		return -EINVAL;
	sl = (size_t)(host - ep);
	memcpy(scheme, ep, sl);
	scheme[sl] = '\0';
	if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https"))
		return -EINVAL;
	host += 3;
	hl = strcspn(host, "/?#");
	if (hl == 0 || conf->sc_bucket[0] == '\0')
		return -EINVAL;
	ekey[0] = '\0';
	if (key && key[0]) {
		if (strlen(key) > WEIR_S3_KEY_MAX)
			return -ENAMETOOLONG;
		kl = weir_s3_uri_encode(key, true, ekey, sizeof(ekey));
		if (kl < 0)
			return kl;
	}
	if (conf->sc_path_style)
		n = snprintf(out, outlen, "%s://%.*s/%s%s%s%s%s", scheme, (int)hl, host,
			     conf->sc_bucket, kl ? "/" : "", ekey, query && query[0] ? "?" : "",
			     query ? query : "");
	else
		n = snprintf(out, outlen, "%s://%s.%.*s/%s%s%s", scheme, conf->sc_bucket, (int)hl,
			     host, ekey, query && query[0] ? "?" : "", query ? query : "");
	if (n < 0 || (size_t)n >= outlen)
		return -ENAMETOOLONG;
	return n;
}

int weir_s3_range_fmt(uint64_t off, uint64_t len, char *out, size_t outlen)
{
	int n;

	if (len == 0 || off + len < off)
		return -EINVAL;
	n = snprintf(out, outlen, "bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
	if (n < 0 || (size_t)n >= outlen)
		return -ENAMETOOLONG;
	return n;
}

void weir_s3_sha256_hex(const void *buf, size_t len, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[32];
	unsigned int mdlen = 0;

	EVP_Digest(len ? buf : "", len, md, &mdlen, EVP_sha256(), NULL);
	for (unsigned int i = 0; i < 32; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[64] = '\0';
}

static xmlDocPtr xml_read(const char *xml, size_t len)
{
	if (len > INT32_MAX)
		return NULL;
	return xmlReadMemory(xml, (int)len, "s3.xml", NULL,
			     XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
}

static bool node_is(const xmlNode *n, const char *name)
{
	return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

/* Copy the text of \a n into \a out; -ENAMETOOLONG when it did not fit. */
static int node_text(xmlNode *n, char *out, size_t outlen)
{
	xmlChar *t = xmlNodeGetContent(n);
	size_t l;
	int rc = 0;

	if (!t) {
		out[0] = '\0';
		return 0;
	}
	l = strlen((const char *)t);
	if (l >= outlen) {
		l = outlen - 1;
		rc = -ENAMETOOLONG;
	}
	memcpy(out, t, l);
	out[l] = '\0';
	xmlFree(t);
	return rc;
}

static xmlNode *find_elem(xmlNode *n, const char *name)
{
	for (; n; n = n->next) {
		xmlNode *f;
		if (node_is(n, name))
			return n;
		f = find_elem(n->children, name);
		if (f)
			return f;
	}
	return NULL;
}

int s3_xml_text(const char *xml, size_t len, const char *root, const char *name, char *out,
		size_t outlen)
{
	xmlDocPtr doc = xml_read(xml, len);
	xmlNode *r, *n;
	int rc;

	if (!doc)
		return -EPROTO;
	r = xmlDocGetRootElement(doc);
	if (!r || (root && !node_is(r, root))) {
		rc = -EPROTO;
		goto out_doc;
	}
	n = find_elem(r, name);
	rc = n ? node_text(n, out, outlen) : -ENOENT;
out_doc:
	xmlFreeDoc(doc);
	return rc;
}

/* ISO 8601 "2026-11-02T10:11:12.000Z" -> seconds since the epoch, -1 when malformed. */
static int64_t iso8601_parse(const char *s)
{
	struct tm tm = { 0 };
	const char *e = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);

	if (!e)
		return -1;
	return (int64_t)timegm(&tm);
}

static int list_entry(xmlNode *c, weir_s3_list_fn fn, void *arg)
{
	struct weir_s3_obj o;
	bool have_key = false, have_size = false;
	char tmp[64];

	memset(&o, 0, sizeof(o));
	o.so_mtime = -1;
	for (xmlNode *n = c->children; n; n = n->next) {
		if (node_is(n, "Key")) {
			if (node_text(n, o.so_key, sizeof(o.so_key)) < 0)
				return -EPROTO;
			have_key = true;
		} else if (node_is(n, "Size")) {
			char *end;
			if (node_text(n, tmp, sizeof(tmp)) < 0 || !tmp[0])
				return -EPROTO;
			errno = 0;
			o.so_size = strtoull(tmp, &end, 10);
			if (errno || *end || tmp[0] == '-')
				return -EPROTO;
			have_size = true;
		} else if (node_is(n, "ETag")) {
			node_text(n, o.so_etag, sizeof(o.so_etag));
		} else if (node_is(n, "LastModified")) {
			if (node_text(n, tmp, sizeof(tmp)) == 0)
				o.so_mtime = iso8601_parse(tmp);
		}
	}
	if (!have_key || !have_size)
		return -EPROTO;
	return fn(arg, &o);
}

int weir_s3_list_parse(const char *xml, size_t len, weir_s3_list_fn fn, void *arg,
		       bool *truncated, char *token, size_t toklen)
{
	xmlDocPtr doc = xml_read(xml, len);
	xmlNode *r;
	int rc = 0;
	char tmp[16];

	*truncated = false;
	if (toklen)
		token[0] = '\0';
	if (!doc)
		return -EPROTO;
	r = xmlDocGetRootElement(doc);
	if (!r || !node_is(r, "ListBucketResult")) {
		rc = -EPROTO;
		goto out_doc;
	}
	for (xmlNode *n = r->children; n && rc == 0; n = n->next) {
		if (node_is(n, "Contents")) {
			rc = list_entry(n, fn, arg);
		} else if (node_is(n, "IsTruncated")) {
			node_text(n, tmp, sizeof(tmp));
			*truncated = strcmp(tmp, "true") == 0;
		} else if (node_is(n, "NextContinuationToken")) {
			if (node_text(n, token, toklen) < 0)
				rc = -EPROTO;
		}
	}
	if (rc == 0 && *truncated && (!toklen || !token[0]))
		rc = -EPROTO; /* truncated without a way to go on */
out_doc:
	xmlFreeDoc(doc);
	return rc;
}

int weir_s3_error_parse(const char *xml, size_t len, char *code, size_t codelen, char *msg,
			size_t msglen)
{
	xmlDocPtr doc = xml_read(xml, len);
	xmlNode *r;
	int rc = 0;

	if (codelen)
		code[0] = '\0';
	if (msglen)
		msg[0] = '\0';
	if (!doc)
		return -EPROTO;
	r = xmlDocGetRootElement(doc);
	if (!r || !node_is(r, "Error")) {
		rc = -EPROTO;
		goto out_doc;
	}
	for (xmlNode *n = r->children; n; n = n->next) {
		if (node_is(n, "Code") && codelen)
			node_text(n, code, codelen);
		else if (node_is(n, "Message") && msglen)
			node_text(n, msg, msglen);
	}
out_doc:
	xmlFreeDoc(doc);
	return rc;
}

int weir_s3_errno(long status, const char *code)
{
	static const struct {
		const char *c;
		int e;
	} map[] = {
		{ "NoSuchKey", -ENOENT },
		{ "NoSuchBucket", -ENOENT },
		{ "NoSuchUpload", -ENOENT },
		{ "AccessDenied", -EACCES },
		{ "SignatureDoesNotMatch", -EACCES },
		{ "InvalidAccessKeyId", -EACCES },
		{ "PreconditionFailed", -ESTALE },
		{ "BucketAlreadyOwnedByYou", -EEXIST },
		{ "BucketAlreadyExists", -EEXIST },
		{ "NotImplemented", -EOPNOTSUPP },
		{ "MethodNotAllowed", -EOPNOTSUPP },
	};

	if (status >= 200 && status < 300 && (!code || !code[0]))
		return 0;
	if (code && code[0])
		for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
			if (strcmp(code, map[i].c) == 0)
				return map[i].e;
	if (status >= 500 && status != 501)
		return -EIO;
	switch (status) {
	case 404:
		return -ENOENT;
	case 401:
	case 403:
		return -EACCES;
	case 412:
		return -ESTALE;
	case 405:
	case 501:
		return -EOPNOTSUPP;
	case 409:
		return -EEXIST;
	default:
		return status >= 200 && status < 300 ? -EIO : -EINVAL;
	}
}
