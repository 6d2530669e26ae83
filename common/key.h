/*
 * common/key.h - cluster keys: the key file, key generation, HMAC-SHA256.
 *
 * A Weir cluster key is 32 random bytes shared by every server and client
 * of one cluster (Lustre's shared-key "SSK" and BeeGFS's connAuthFile are
 * the models). It never travels on the wire: connections prove they hold it
 * by an HMAC-SHA256 challenge-response (net/auth.c).
 *
 * The key file (default /etc/weir/cluster.key) is text, mode 0600, or 0640
 * with a group of the users allowed to run libweir programs and the
 * LD_PRELOAD shim (they read it themselves); never readable by others:
 *
 *   # comments and blank lines are ignored
 *   weir-key-v1 NAME HEX64
 *
 * one line per key. The first key is the current one: the key this host
 * connects with. Every key in the file is accepted from peers, which is how
 * a key is rotated without downtime (`weir key rotate` puts a new key first
 * and keeps the old one; `weir key retire` drops all but the first). NAME
 * ([A-Za-z0-9._-], at most 31 characters) is for logs and node maps; the
 * key id sent in handshakes is derived from the key bytes, never the name.
 *
 * Thread safety: every function is thread-safe (no shared state).
 */
#ifndef WEIR_COMMON_KEY_H
#define WEIR_COMMON_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define WEIR_KEY_LEN 32        /* bytes of key material */
#define WEIR_KEY_ID_LEN 8      /* bytes of a key id */
#define WEIR_KEY_NAME_MAX 32   /* bytes of a name, NUL included */
#define WEIR_KEYRING_MAX 8     /* keys in one file */
#define WEIR_HMAC_LEN 32       /* bytes of an HMAC-SHA256 */
#define WEIR_KEY_FILE_DEFAULT "/etc/weir/cluster.key"

struct weir_key {
	char wk_name[WEIR_KEY_NAME_MAX];
	uint8_t wk_key[WEIR_KEY_LEN];
	uint8_t wk_id[WEIR_KEY_ID_LEN]; /* SHA-256("weir-key-id" || key), first 8 bytes */
};

struct weir_keyring {
	unsigned kr_nr;                          /* keys; kr_keys[0] is the current one */
	struct weir_key kr_keys[WEIR_KEYRING_MAX];
};

/**
 * Read a key file.
 *
 * \param[in]  path  The key file.
 * \param[out] kr    Filled on success (caller-owned; wipe with weir_keyring_wipe()).
 * \param[out] why   Caller's buffer for a one-line reason on failure (may be NULL).
 * \param[in]  why_len  Bytes in \a why.
 * \return 0, or a negative errno:
 * \retval -ENOENT  no such file.
 * \retval -EPERM   the file is readable by others or writable by its group
 *                  (mode & 027): 0600, or 0640 for a group of client users.
 * \retval -EINVAL  a line is malformed, a name repeats, no key, or more
 *                  than WEIR_KEYRING_MAX keys (\a why says which line).
 * \retval -errno   of open/read.
 */
int weir_keyring_load(const char *path, struct weir_keyring *kr, char *why, size_t why_len);

/**
 * Write \a kr to \a path (mode 0600, through a temporary file renamed over
 * it, so a reader never sees half a file).
 * \param[in] excl  Refuse with -EEXIST when \a path exists.
 * \return 0 or a negative errno of the file calls.
 */
int weir_keyring_save(const char *path, const struct weir_keyring *kr, bool excl);

/**
 * Make a new random key (OpenSSL RAND_bytes).
 * \param[in]  name  Its name; NULL: "key-YYYYMMDD-HHMMSS" (UTC).
 * \param[out] k     The key.
 * \return 0, -EINVAL (a bad name), -EIO (no randomness).
 */
int weir_key_generate(const char *name, struct weir_key *k);

/** Whether \a name is a valid key name. */
bool weir_key_name_valid(const char *name);

/** Fill k->wk_id from k->wk_key. */
void weir_key_set_id(struct weir_key *k);

/**
 * The key of \a kr whose id is \a id. \return a pointer into \a kr, or NULL.
 */
const struct weir_key *weir_keyring_find(const struct weir_keyring *kr,
					 const uint8_t id[WEIR_KEY_ID_LEN]);

/** Zero the key material (OPENSSL_cleanse). Accepts NULL. */
void weir_keyring_wipe(struct weir_keyring *kr);

/**
 * HMAC-SHA256 of the concatenation of \a nr buffers.
 * \param[in]  key, key_len  The HMAC key.
 * \param[out] out           WEIR_HMAC_LEN bytes.
 */
void weir_hmac_sha256(const uint8_t *key, size_t key_len, const struct iovec *iov, int nr,
		      uint8_t out[WEIR_HMAC_LEN]);

/** SHA-256 of \a len bytes at \a p into \a out (32 bytes). */
void weir_sha256(const void *p, size_t len, uint8_t out[32]);

/** Constant-time comparison of \a len bytes. \return true when equal. */
bool weir_mem_equal_ct(const void *a, const void *b, size_t len);

/** Fill \a buf with \a len cryptographically random bytes. \return 0 or -EIO. */
int weir_random_bytes(void *buf, size_t len);

/** Hex of a key id (16 characters + NUL) into \a out. \return \a out. */
char *weir_key_id_hex(const uint8_t id[WEIR_KEY_ID_LEN], char out[2 * WEIR_KEY_ID_LEN + 1]);

#endif /* WEIR_COMMON_KEY_H */
