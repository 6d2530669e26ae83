/*
 * common/capa.c - the MAC of OST capabilities (see capa.h).
 */
#define _GNU_SOURCE
#include "capa.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "le.h"

static atomic_uint_fast64_t capa_next_id = 1;

/* The fetched HMAC algorithm (shared), and the key that frees a thread's context. */
static pthread_once_t capa_once = PTHREAD_ONCE_INIT;
static EVP_MAC *capa_alg;
static pthread_key_t capa_tls_key;
static bool capa_tls_key_ok;

/* This thread's keyed context and the id of the key it holds (0: none). */
static __thread EVP_MAC_CTX *capa_ctx;
static __thread uint64_t capa_ctx_id;

static void capa_ctx_free(void *p)
{
	EVP_MAC_CTX_free(p);
}

static void capa_setup(void)
{
	capa_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
	capa_tls_key_ok = !pthread_key_create(&capa_tls_key, capa_ctx_free);
}

void weir_capa_key_init(struct weir_capa_key *k, const uint8_t *key, uint32_t gen)
{
	memcpy(k->ck_key, key, WEIR_CAPA_KEY_LEN);
	k->ck_gen = gen;
	k->ck_id = atomic_fetch_add(&capa_next_id, 1);
}

void weir_capa_key_wipe(struct weir_capa_key *k)
{
	if (k)
		OPENSSL_cleanse(k->ck_key, sizeof(k->ck_key));
}

/* This thread's context, ready for a MAC under \a k; NULL on failure. */
static EVP_MAC_CTX *capa_ctx_get(const struct weir_capa_key *k)
{
	pthread_once(&capa_once, capa_setup);
	if (!capa_alg)
		return NULL;
	if (!capa_ctx) {
		capa_ctx = EVP_MAC_CTX_new(capa_alg);
		if (!capa_ctx)
			return NULL;
		if (capa_tls_key_ok)
			pthread_setspecific(capa_tls_key, capa_ctx); /* freed at thread exit */
		capa_ctx_id = 0;
	}
	if (capa_ctx_id == k->ck_id)
		return EVP_MAC_init(capa_ctx, NULL, 0, NULL) ? capa_ctx : NULL; /* same key */
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0),
		OSSL_PARAM_construct_end(),
	};
	capa_ctx_id = 0;
	if (!EVP_MAC_init(capa_ctx, k->ck_key, WEIR_CAPA_KEY_LEN, params))
		return NULL;
	capa_ctx_id = k->ck_id;
	return capa_ctx;
}

void weir_capa_mac(const struct weir_capa_key *k, const struct weir_fid *fid, uint32_t rights,
		   int64_t expiry_s, uint8_t *mac)
{
	static const char tag[] = "weir-capa-v1";
	uint8_t b[8 + 8 + 4 + 8 + 4];
	size_t ol = 0;

	weir_put_le64(b, fid->fid_seq);
	weir_put_le64(b + 8, fid->fid_oid);
	weir_put_le32(b + 16, rights);
	weir_put_le64(b + 20, (uint64_t)expiry_s);
	weir_put_le32(b + 28, k->ck_gen);
	EVP_MAC_CTX *ctx = capa_ctx_get(k);
	bool ok = ctx && EVP_MAC_update(ctx, (const unsigned char *)tag, sizeof(tag) - 1) &&
		  EVP_MAC_update(ctx, b, sizeof(b)) &&
		  EVP_MAC_final(ctx, mac, &ol, WEIR_CAPA_MAC_LEN) && ol == WEIR_CAPA_MAC_LEN;
	if (!ok) {
		capa_ctx_id = 0; /* key it again next time */
		RAND_bytes(mac, WEIR_CAPA_MAC_LEN);
	}
}
