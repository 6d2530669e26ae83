/*
 * oss/capa.c - OST capabilities, the OSS's side: the key from the MDS and the
 * check of every object request (common/capa.h; the MDS's side is
 * mds/capa.c).
 *
 * DESIGN
 * The key arrives with every registration reply (oss/reg.c) and is kept
 * under o_capa_lock. A request's capability must name the request's FID,
 * hold the right its opcode needs, be signed with the current key and not
 * have expired (the OSS's wall clock: servers keep their clocks in step,
 * NTP, as Kerberos and Lustre's capabilities also assume). The HMAC is not
 * recomputed for a capability this loop thread has already checked: a small
 * direct-mapped cache per thread, keyed by the MAC, keeps the fields each
 * verified MAC was for (a hit needs them all equal, and the expiry is still
 * checked), so a stream of requests under one open costs one HMAC.
 * With --insecure the OSS checks nothing (and its MDS signs nothing).
 * Refusals are -EACCES with a rate-limited log line.
 */
#define _GNU_SOURCE
#include "oss_int.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "common/capa.h"
#include "common/key.h"
#include "common/log.h"
#include "net/auth.h"

#define CAPA_CACHE 64 /* entries per thread; a power of two */

struct capa_seen {
	uint8_t cs_mac[WEIR_CAPA_MAC_LEN];
	uint64_t cs_seq, cs_oid;
	uint32_t cs_rights, cs_gen;
	int64_t cs_expiry_s;
	bool cs_valid;
};

static __thread struct capa_seen capa_cache[CAPA_CACHE];

void oss_capa_init(struct oss *oss)
{
	pthread_mutex_init(&oss->o_capa_lock, NULL);
	oss->o_capa_off = net_auth_insecure(net_auth_get_default());
	if (oss->o_capa_off)
		WEIR_LOG_NOTICE("capabilities: not checked (the OSS runs --insecure)");
}

void oss_capa_fini(struct oss *oss)
{
	explicit_bzero(oss->o_capa_key, sizeof(oss->o_capa_key));
	pthread_mutex_destroy(&oss->o_capa_lock);
}

void oss_capa_set_key(struct oss *oss, const uint8_t *key, size_t len, uint32_t gen)
{
	if (len != WEIR_CAPA_KEY_LEN)
		return;
	pthread_mutex_lock(&oss->o_capa_lock);
	bool changed = !oss->o_capa_have || oss->o_capa_gen != gen ||
		       memcmp(oss->o_capa_key, key, len);
	memcpy(oss->o_capa_key, key, len);
	oss->o_capa_gen = gen;
	oss->o_capa_have = true;
	pthread_mutex_unlock(&oss->o_capa_lock);
	if (changed)
		WEIR_LOG_NOTICE("capabilities: key generation %u from the MDS", gen);
}

int oss_capa_check(struct oss *oss, const Weir__Capa *c, const struct weir_fid *fid,
		   uint32_t need, const char **why)
{
	uint8_t key[WEIR_CAPA_KEY_LEN], mac[WEIR_CAPA_MAC_LEN];
	uint32_t gen;

	if (oss->o_capa_off)
		return 0;
	if (!c || !c->fid) {
		*why = "no capability (only the MDS grants access to objects)";
		return -EACCES;
	}
	if (c->fid->seq != fid->fid_seq || c->fid->oid != fid->fid_oid) {
		*why = "the capability is for another file";
		return -EACCES;
	}
	if ((c->rights & need) != need) {
		*why = "the capability does not allow this operation";
		return -EACCES;
	}
	if (c->expiry_s <= (int64_t)time(NULL)) {
		*why = "the capability has expired";
		return -EACCES;
	}
	if (c->mac.len != WEIR_CAPA_MAC_LEN) {
		*why = "a malformed capability";
		return -EACCES;
	}
	pthread_mutex_lock(&oss->o_capa_lock);
	bool have = oss->o_capa_have;
	gen = oss->o_capa_gen;
	if (have)
		memcpy(key, oss->o_capa_key, sizeof(key));
	pthread_mutex_unlock(&oss->o_capa_lock);
	if (!have) {
		/* just started: its first registration brings the key; clients retry */
		*why = "this OSS has no capability key yet (not registered with the MDS)";
		return -EAGAIN;
	}
	if (c->key_gen != gen) {
		explicit_bzero(key, sizeof(key));
		*why = "the capability was signed with another key";
		return -EACCES;
	}
	struct capa_seen *cs = &capa_cache[c->mac.data[0] & (CAPA_CACHE - 1)];
	if (cs->cs_valid && cs->cs_seq == fid->fid_seq && cs->cs_oid == fid->fid_oid &&
	    cs->cs_rights == c->rights && cs->cs_gen == gen && cs->cs_expiry_s == c->expiry_s &&
	    !memcmp(cs->cs_mac, c->mac.data, WEIR_CAPA_MAC_LEN)) {
		explicit_bzero(key, sizeof(key));
		return 0;
	}
	weir_capa_mac(key, fid, c->rights, c->expiry_s, gen, mac);
	explicit_bzero(key, sizeof(key));
	if (!weir_mem_equal_ct(mac, c->mac.data, WEIR_CAPA_MAC_LEN)) {
		*why = "a forged capability (the MAC does not verify)";
		return -EACCES;
	}
	memcpy(cs->cs_mac, mac, sizeof(mac));
	cs->cs_seq = fid->fid_seq;
	cs->cs_oid = fid->fid_oid;
	cs->cs_rights = c->rights;
	cs->cs_gen = gen;
	cs->cs_expiry_s = c->expiry_s;
	cs->cs_valid = true;
	return 0;
}
