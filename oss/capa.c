/*
 * oss/capa.c - OST capabilities, the OSS's side: the key from the MDS and the
 * check of every object request (common/capa.h; the MDS's side is
 * mds/capa.c).
 *
 * DESIGN
 * The key arrives with every registration reply (oss/reg.c, the "oss-reg"
 * thread). A new one (bytes or generation differ) is made into an immutable
 * struct weir_capa_key, kept on a list until oss_stop, and published through
 * an atomic pointer, so the loop threads read it without a lock; its fresh
 * ck_id voids what the loops' caches hold. A request's capability must name
 * the request's FID, hold the right its opcode needs, be signed with the
 * current key generation and not have expired (the OSS's wall clock: servers
 * keep their clocks in step, NTP, as Kerberos and Lustre's capabilities also
 * assume). The HMAC is not recomputed for a capability this thread has
 * already checked: a small direct-mapped cache per thread, keyed by the MAC,
 * keeps the fields each verified MAC was for and the id of the key (a hit
 * needs them all equal, and the expiry is still checked), so a stream of
 * requests under one open costs one HMAC.
 * Until the first key arrives (an OSS that just started and has not reached
 * the MDS yet), object requests are answered -EAGAIN: libweir waits and
 * resends (client/io.c). With --insecure the OSS checks nothing (and its MDS
 * signs nothing).
 * Refusals are -EACCES, logged by the caller (oss_svc_fail) rate-limited.
 */
#define _GNU_SOURCE
#include "oss_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/key.h"
#include "common/log.h"
#include "net/auth.h"

#define CAPA_CACHE 64 /* entries per thread; a power of two */

struct oss_capa_keyent {
	struct weir_capa_key ke_key;
	struct oss_capa_keyent *ke_next;
};

struct capa_seen {
	uint8_t cs_mac[WEIR_CAPA_MAC_LEN];
	uint64_t cs_seq, cs_oid;
	uint64_t cs_key_id;       /* weir_capa_key.ck_id it verified under; 0: empty */
	uint32_t cs_rights;
	int64_t cs_expiry_s;
};

static __thread struct capa_seen capa_cache[CAPA_CACHE];

void oss_capa_init(struct oss *oss)
{
	pthread_mutex_init(&oss->o_capa_lock, NULL);
	atomic_store(&oss->o_capa_key, NULL);
	oss->o_capa_keys = NULL;
	oss->o_capa_off = net_auth_insecure(net_auth_get_default());
	if (oss->o_capa_off)
		WEIR_LOG_NOTICE("capabilities: not checked (the OSS runs --insecure)");
}

void oss_capa_fini(struct oss *oss)
{
	atomic_store(&oss->o_capa_key, NULL);
	while (oss->o_capa_keys) {
		struct oss_capa_keyent *e = oss->o_capa_keys;
		oss->o_capa_keys = e->ke_next;
		weir_capa_key_wipe(&e->ke_key);
		free(e);
	}
	pthread_mutex_destroy(&oss->o_capa_lock);
}

void oss_capa_set_key(struct oss *oss, const uint8_t *key, size_t len, uint32_t gen)
{
	if (len != WEIR_CAPA_KEY_LEN) {
		WEIR_LOG_ERROR("op=register mds=%s len=%zu: a capability key of the wrong length;"
			       " ignored", oss->o_mds ? oss->o_mds : "-", len);
		return;
	}
	pthread_mutex_lock(&oss->o_capa_lock);
	const struct weir_capa_key *cur = atomic_load(&oss->o_capa_key);
	if (cur && cur->ck_gen == gen && weir_mem_equal_ct(cur->ck_key, key, len)) {
		pthread_mutex_unlock(&oss->o_capa_lock);
		return;
	}
	struct oss_capa_keyent *e = calloc(1, sizeof(*e));
	if (!e) {
		pthread_mutex_unlock(&oss->o_capa_lock);
		WEIR_LOG_ERROR("op=register: no memory for the capability key; keeping the old one");
		return;
	}
	weir_capa_key_init(&e->ke_key, key, gen);
	e->ke_next = oss->o_capa_keys;
	oss->o_capa_keys = e;
	atomic_store(&oss->o_capa_key, &e->ke_key); /* release: the loops see it filled */
	pthread_mutex_unlock(&oss->o_capa_lock);
	WEIR_LOG_NOTICE("capabilities: key generation %u from the MDS%s", gen,
			cur ? " (a new key: capabilities signed with the old one are refused)" : "");
}

int oss_capa_check(struct oss *oss, const Weir__Capa *c, const struct weir_fid *fid,
		   uint32_t need, const char **why)
{
	uint8_t mac[WEIR_CAPA_MAC_LEN];

	if (oss->o_capa_off)
		return 0;
	const struct weir_capa_key *k = atomic_load(&oss->o_capa_key);
	if (!k) {
		*why = "this OSS has no capability key yet (not registered with the MDS since "
		       "it started): try again";
		return -EAGAIN;
	}
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
		*why = "a malformed capability (MAC length)";
		return -EACCES;
	}
	if (c->key_gen != k->ck_gen) {
		*why = "the capability was signed with another key generation";
		return -EACCES;
	}
	struct capa_seen *cs = &capa_cache[c->mac.data[0] & (CAPA_CACHE - 1)];
	if (cs->cs_key_id == k->ck_id && cs->cs_seq == fid->fid_seq &&
	    cs->cs_oid == fid->fid_oid && cs->cs_rights == c->rights &&
	    cs->cs_expiry_s == c->expiry_s && !memcmp(cs->cs_mac, c->mac.data, WEIR_CAPA_MAC_LEN))
		return 0;
	weir_capa_mac(k, fid, c->rights, c->expiry_s, mac);
	if (!weir_mem_equal_ct(mac, c->mac.data, WEIR_CAPA_MAC_LEN)) {
		*why = "a forged capability (the MAC does not verify)";
		return -EACCES;
	}
	memcpy(cs->cs_mac, mac, sizeof(mac));
	cs->cs_seq = fid->fid_seq;
	cs->cs_oid = fid->fid_oid;
	cs->cs_rights = c->rights;
	cs->cs_expiry_s = c->expiry_s;
	cs->cs_key_id = k->ck_id;
	return 0;
}
