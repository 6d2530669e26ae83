/*
 * common/capa.c - see capa.h.
 */
#include "capa.h"

#include <string.h>

#include "key.h"
#include "le.h"

void weir_capa_mac(const uint8_t *key, const struct weir_fid *fid, uint32_t rights,
		   int64_t expiry_s, uint32_t key_gen, uint8_t *mac)
{
	static const char tag[] = "weir-capa-v1";
	uint8_t b[8 + 8 + 4 + 8 + 4];
	weir_put_le64(b, fid->fid_seq);
	weir_put_le64(b + 8, fid->fid_oid);
	weir_put_le32(b + 16, rights);
	weir_put_le64(b + 20, (uint64_t)expiry_s);
	weir_put_le32(b + 28, key_gen);
	struct iovec iov[2] = { { (void *)tag, sizeof(tag) - 1 }, { b, sizeof(b) } };
	weir_hmac_sha256(key, WEIR_CAPA_KEY_LEN, iov, 2, mac);
}
