/*
 * common/key.c - the key file, key generation and HMAC-SHA256 (OpenSSL).
 * See key.h for the file format.
 */
#define _GNU_SOURCE
#include "key.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#define KEY_MAGIC "weir-key-v1"
#define KEY_FILE_MAX 8192 /* bytes: a key file is a few lines */

static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t len, const char *fmt, ...)
{
	if (!why || !len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

bool weir_key_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (!n || n >= WEIR_KEY_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

void weir_key_set_id(struct weir_key *k)
{
	static const char tag[] = "weir-key-id";
	uint8_t d[SHA256_DIGEST_LENGTH];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned dl = 0;
	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) ||
	    !EVP_DigestUpdate(ctx, tag, sizeof(tag) - 1) ||
	    !EVP_DigestUpdate(ctx, k->wk_key, WEIR_KEY_LEN) || !EVP_DigestFinal_ex(ctx, d, &dl))
		memset(d, 0, sizeof(d)); /* only on allocation failure: an id nobody matches */
	EVP_MD_CTX_free(ctx);
	memcpy(k->wk_id, d, WEIR_KEY_ID_LEN);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parse one "weir-key-v1 NAME HEX" line into \a k. \return 0 or -EINVAL. */
static int parse_line(char *line, struct weir_key *k, const char **what)
{
	char *save = NULL;
	char *magic = strtok_r(line, " \t", &save);
	char *name = strtok_r(NULL, " \t", &save);
	char *hex = strtok_r(NULL, " \t", &save);
	char *extra = strtok_r(NULL, " \t", &save);
	if (!magic || strcmp(magic, KEY_MAGIC)) {
		*what = "does not start with " KEY_MAGIC;
		return -EINVAL;
	}
	if (!name || !hex || extra) {
		*what = "want: " KEY_MAGIC " NAME HEX64";
		return -EINVAL;
	}
	if (!weir_key_name_valid(name)) {
		*what = "bad key name (1-31 of A-Z a-z 0-9 . _ -)";
		return -EINVAL;
	}
	if (strlen(hex) != 2 * WEIR_KEY_LEN) {
		*what = "the key is not 64 hex digits";
		return -EINVAL;
	}
	for (int i = 0; i < WEIR_KEY_LEN; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			*what = "the key is not 64 hex digits";
			return -EINVAL;
		}
		k->wk_key[i] = (uint8_t)(hi << 4 | lo);
	}
	snprintf(k->wk_name, sizeof(k->wk_name), "%s", name);
	weir_key_set_id(k);
	return 0;
}

int weir_keyring_load(const char *path, struct weir_keyring *kr, char *why, size_t why_len)
{
	char buf[KEY_FILE_MAX + 1];
	struct stat st;
	ssize_t got = 0;
	int rc = 0;

	memset(kr, 0, sizeof(*kr));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		say(why, why_len, "%s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		say(why, why_len, "%s: %s", path, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		say(why, why_len, "%s: not a regular file", path);
		goto out_close;
	}
	if (st.st_mode & 027) {
		rc = -EPERM;
		say(why, why_len,
		    "%s: mode %04o lets others read or the group change the cluster key; run chmod"
		    " 600 %s (or 640, with a group of the users allowed to run Weir clients)",
		    path, (unsigned)(st.st_mode & 07777), path);
		goto out_close;
	}
	while (got < KEY_FILE_MAX) {
		ssize_t n = read(fd, buf + got, (size_t)(KEY_FILE_MAX - got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			say(why, why_len, "%s: %s", path, strerror(errno));
			goto out_close;
		}
		if (!n)
			break;
		got += n;
	}
	if (got == KEY_FILE_MAX) {
		rc = -EINVAL;
		say(why, why_len, "%s: larger than %d bytes: not a key file", path, KEY_FILE_MAX);
		goto out_close;
	}
	buf[got] = '\0';
	int lineno = 0;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		while (*line == ' ' || *line == '\t')
			line++;
		size_t l = strlen(line);
		while (l && (line[l - 1] == '\r' || line[l - 1] == ' ' || line[l - 1] == '\t'))
			line[--l] = '\0';
		if (!l || line[0] == '#')
			continue;
		if (kr->kr_nr == WEIR_KEYRING_MAX) {
			rc = -EINVAL;
			say(why, why_len, "%s: more than %d keys", path, WEIR_KEYRING_MAX);
			goto out_wipe;
		}
		const char *what = NULL;
		struct weir_key *k = &kr->kr_keys[kr->kr_nr];
		rc = parse_line(line, k, &what);
		if (rc) {
			say(why, why_len, "%s: line %d: %s", path, lineno, what);
			goto out_wipe;
		}
		for (unsigned i = 0; i < kr->kr_nr; i++)
			if (!strcmp(kr->kr_keys[i].wk_name, k->wk_name)) {
				rc = -EINVAL;
				say(why, why_len, "%s: line %d: key name '%s' used twice", path,
				    lineno, k->wk_name);
				goto out_wipe;
			}
		kr->kr_nr++;
	}
	if (!kr->kr_nr) {
		rc = -EINVAL;
		say(why, why_len, "%s: no key in the file (make one with: weir key gen %s)", path,
		    path);
		goto out_wipe;
	}
	OPENSSL_cleanse(buf, sizeof(buf));
	close(fd);
	return 0;

out_wipe:
	weir_keyring_wipe(kr);
out_close:
	OPENSSL_cleanse(buf, sizeof(buf));
	close(fd);
	return rc;
}

int weir_keyring_save(const char *path, const struct weir_keyring *kr, bool excl)
{
	char tmp[4096];
	char line[160];
	int rc = 0;

	if (excl && !access(path, F_OK))
		return -EEXIST;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	int n = snprintf(line, sizeof(line),
			 "# Weir cluster key file, written %04d-%02d-%02dT%02d:%02d:%02dZ. Keep it secret\n"
			 "# (mode 0600). The first key is used to connect; every key is accepted.\n",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec);
	if (write(fd, line, (size_t)n) != n)
		rc = -EIO;
	for (unsigned i = 0; !rc && i < kr->kr_nr; i++) {
		const struct weir_key *k = &kr->kr_keys[i];
		n = snprintf(line, sizeof(line), KEY_MAGIC " %s ", k->wk_name);
		for (int j = 0; j < WEIR_KEY_LEN; j++)
			n += snprintf(line + n, sizeof(line) - (size_t)n, "%02x", k->wk_key[j]);
		line[n++] = '\n';
		if (write(fd, line, (size_t)n) != n)
			rc = -EIO;
	}
	OPENSSL_cleanse(line, sizeof(line));
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && excl && link(tmp, path))
		rc = -errno; /* link(2) fails with EEXIST: no clobbering a key made meanwhile */
	else if (!rc && !excl && rename(tmp, path))
		rc = -errno;
	if (excl || rc)
		unlink(tmp);
	return rc;
}

int weir_random_bytes(void *buf, size_t len)
{
	return RAND_bytes(buf, (int)len) == 1 ? 0 : -EIO;
}

int weir_key_generate(const char *name, struct weir_key *k)
{
	memset(k, 0, sizeof(*k));
	if (name) {
		if (!weir_key_name_valid(name))
			return -EINVAL;
		snprintf(k->wk_name, sizeof(k->wk_name), "%s", name);
	} else {
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(k->wk_name, sizeof(k->wk_name), "key-%Y%m%d-%H%M%S", &tm);
	}
	if (weir_random_bytes(k->wk_key, WEIR_KEY_LEN))
		return -EIO;
	weir_key_set_id(k);
	return 0;
}

const struct weir_key *weir_keyring_find(const struct weir_keyring *kr,
					 const uint8_t id[WEIR_KEY_ID_LEN])
{
	for (unsigned i = 0; i < kr->kr_nr; i++)
		if (!memcmp(kr->kr_keys[i].wk_id, id, WEIR_KEY_ID_LEN))
			return &kr->kr_keys[i];
	return NULL;
}

void weir_keyring_wipe(struct weir_keyring *kr)
{
	if (kr)
		OPENSSL_cleanse(kr, sizeof(*kr));
}

static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;
static EVP_MAC *hmac_alg;

static void hmac_fetch(void)
{
	hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
}

void weir_hmac_sha256(const uint8_t *key, size_t key_len, const struct iovec *iov, int nr,
		      uint8_t out[WEIR_HMAC_LEN])
{
	/* HMAC_CTX is deprecated in OpenSSL 3: EVP_MAC is the interface; the
	 * fetched algorithm is shared by every thread (fetching costs more than
	 * a short MAC). */
	pthread_once(&hmac_once, hmac_fetch);
	EVP_MAC_CTX *ctx = hmac_alg ? EVP_MAC_CTX_new(hmac_alg) : NULL;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0),
		OSSL_PARAM_construct_end(),
	};
	size_t ol = 0;
	bool ok = ctx && EVP_MAC_init(ctx, key, key_len, params);
	for (int i = 0; ok && i < nr; i++)
		ok = EVP_MAC_update(ctx, iov[i].iov_base, iov[i].iov_len);
	ok = ok && EVP_MAC_final(ctx, out, &ol, WEIR_HMAC_LEN) && ol == WEIR_HMAC_LEN;
	if (!ok)
		RAND_bytes(out, WEIR_HMAC_LEN); /* allocation failure: a MAC nobody matches */
	EVP_MAC_CTX_free(ctx);
}

void weir_sha256(const void *p, size_t len, uint8_t out[32])
{
	unsigned dl = 0;
	if (!EVP_Digest(p, len, out, &dl, EVP_sha256(), NULL) || dl != 32)
		RAND_bytes(out, 32); /* allocation failure: a digest nothing matches */
}

bool weir_mem_equal_ct(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}

char *weir_key_id_hex(const uint8_t id[WEIR_KEY_ID_LEN], char out[2 * WEIR_KEY_ID_LEN + 1])
{
	for (int i = 0; i < WEIR_KEY_ID_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", id[i]);
	return out;
}
