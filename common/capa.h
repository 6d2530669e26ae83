/*
 * common/capa.h - OST capabilities: the MAC the MDS signs and the OSS checks
 * (the wire message is weir.Capa, net/proto/weir.proto).
 *
 * Lustre's OSS capabilities are the model: the MDS, which checked the
 * caller's permissions, signs (FID, rights, expiry) with a key it shares with
 * the OSSs only; an OSS does an object operation only with a capability that
 * names the object's file, allows the operation and has not expired.
 * Thread safety: the functions are thread-safe.
 */
#ifndef WEIR_COMMON_CAPA_H
#define WEIR_COMMON_CAPA_H

#include <stdint.h>

#include "fid.h"

#define WEIR_CAPA_READ 0x1u     /* OST_READ, OST_SEEK */
#define WEIR_CAPA_WRITE 0x2u    /* OST_WRITE, OST_FSYNC, OST_FALLOCATE (allocate) */
#define WEIR_CAPA_PUNCH 0x4u    /* OST_TRUNCATE, OST_FALLOCATE (punch, zero) */
#define WEIR_CAPA_GETATTR 0x8u  /* OST_GETATTR */
#define WEIR_CAPA_DESTROY 0x10u /* OST_DESTROY: the MDS's own */
#define WEIR_CAPA_KEY_LEN 32    /* bytes */
#define WEIR_CAPA_MAC_LEN 32    /* bytes */

/**
 * The MAC of a capability.
 * \param[in]  key       WEIR_CAPA_KEY_LEN bytes.
 * \param[in]  expiry_s  Unix seconds.
 * \param[out] mac       WEIR_CAPA_MAC_LEN bytes.
 */
void weir_capa_mac(const uint8_t *key, const struct weir_fid *fid, uint32_t rights,
		   int64_t expiry_s, uint32_t key_gen, uint8_t *mac);

#endif /* WEIR_COMMON_CAPA_H */
