/*
 * common/capa.h - OST capabilities: the MAC the MDS signs and the OSS checks
 * (the wire message is weir.Capa, net/proto/weir.proto; the rules are in
 * docs/wire-format.md, "OST capabilities").
 *
 * Lustre's OSS capabilities are the model: the MDS, which checked the
 * caller's permissions, signs (FID, rights, expiry) with a key it shares with
 * the OSSs only; an OSS does an object operation only with a capability that
 * names the object's file, allows the operation and has not expired.
 *
 * DESIGN
 * A key is an immutable struct weir_capa_key (bytes, generation and an id
 * unique in the process). Computing a MAC keeps one keyed HMAC context per
 * thread (OpenSSL's EVP_MAC, re-initialised per MAC without re-keying, about
 * a fifth of the cost of a fresh context), made again when the thread meets
 * another key id, and freed when the thread exits.
 * Thread safety: every function is thread-safe; a key must not change while
 * any thread may use it (make a new one instead).
 */
#ifndef WEIR_COMMON_CAPA_H
#define WEIR_COMMON_CAPA_H

#include <stdint.h>

#include "fid.h"

#define WEIR_CAPA_READ 0x1u     /* OST_READ, OST_SEEK */
#define WEIR_CAPA_WRITE 0x2u    /* OST_WRITE, OST_FALLOCATE (allocate) */
#define WEIR_CAPA_PUNCH 0x4u    /* OST_TRUNCATE, OST_FALLOCATE (punch) */
#define WEIR_CAPA_GETATTR 0x8u  /* OST_GETATTR (the glimpse), OST_FSYNC */
#define WEIR_CAPA_DESTROY 0x10u /* OST_DESTROY: the MDS grants it only to itself */
/** Every right a client may ever be granted (never WEIR_CAPA_DESTROY). */
#define WEIR_CAPA_CLIENT_RIGHTS \
	(WEIR_CAPA_READ | WEIR_CAPA_WRITE | WEIR_CAPA_PUNCH | WEIR_CAPA_GETATTR)
#define WEIR_CAPA_KEY_LEN 32    /* bytes */
#define WEIR_CAPA_MAC_LEN 32    /* bytes */

/** A capability key. Fill with weir_capa_key_init(); never changed afterwards. */
struct weir_capa_key {
	uint8_t ck_key[WEIR_CAPA_KEY_LEN];
	uint32_t ck_gen;          /* Capa.key_gen: the MDT's key generation */
	uint64_t ck_id;           /* unique in this process (per-thread MAC contexts) */
};

/**
 * Set up \a k with \a key (WEIR_CAPA_KEY_LEN bytes, copied) and generation
 * \a gen, and give it a fresh id.
 */
void weir_capa_key_init(struct weir_capa_key *k, const uint8_t *key, uint32_t gen);
/** Wipe \a k's key bytes. Accepts NULL. */
void weir_capa_key_wipe(struct weir_capa_key *k);

/**
 * The MAC of a capability: HMAC-SHA256(key, "weir-capa-v1" || fid seq (u64
 * LE) || fid oid (u64 LE) || rights (u32 LE) || expiry_s (i64 LE) || key
 * generation (u32 LE)).
 * \param[in]  k         The key (its ck_gen is the generation signed).
 * \param[in]  rights    WEIR_CAPA_* bits.
 * \param[in]  expiry_s  Unix seconds.
 * \param[out] mac       WEIR_CAPA_MAC_LEN bytes. On an allocation failure
 *                       inside OpenSSL: random bytes, which nothing matches.
 */
void weir_capa_mac(const struct weir_capa_key *k, const struct weir_fid *fid, uint32_t rights,
		   int64_t expiry_s, uint8_t *mac);

#endif /* WEIR_COMMON_CAPA_H */
