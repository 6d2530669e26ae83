/*
 * mds/capa.c - OST capabilities, the MDS's side: the capability key, signing,
 * and MDS_CAPA_RENEW.
 *
 * DESIGN
 * The MDS checks who may do what (POSIX permissions at open, at setattr); an
 * OSS only checks that a request carries a capability the MDS signed for the
 * object's file, with the right the operation needs, not expired (common/
 * capa.h, oss/capa.c). The key is 32 random bytes made when the MDT is first
 * used with capabilities and kept in it (the "cluster" column family, key
 * "capakey": u8 version 1, u32 LE generation, 32 bytes), so the capabilities
 * clients hold stay valid across an MDS restart; it reaches the OSSs in the
 * reply to their registration (authenticated connections, and only OSTs
 * bound to their secret register) and never a client.
 * An MDS running --insecure signs nothing and hands out no key: its OSSs run
 * --insecure too and check nothing.
 * Expiry: now (rounded up to a whole second) + --capa-timeout, for
 * lifetimes of a minute or more rounded up to a multiple of 64 s so that the
 * capabilities the MDS hands out for one file within a minute are the same
 * bytes (an OSS's cache of checked capabilities keeps hitting).
 * MDS_CAPA_RENEW grants (never CR_DESTROY, which only the MDS's own destroys
 * carry) the rights of the caller's open handle it names, and besides what the
 * caller's credentials (through the node map) may do to the file now.
 * An MDT k > 0 keeps no key of its own: it signs with MDT0's, which the
 * reply to its registration carries (mds/mdt_reg.c).
 * Thread safety: the key is set once at start; signing is reentrant (a keyed
 * HMAC context per thread, common/capa.c).
 */
#define _GNU_SOURCE
#include "mds_int.h"
#include "hsm.h" /* mds_svc_cred */

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/capa.h"
#include "common/key.h"
#include "common/le.h"
#include "common/log.h"
#include "common/util.h"
#include "net/auth.h"
#include "weir.pb-c.h"

#define CAPA_KEY_REC "capakey"
#define CAPA_KEY_REC_VERSION 1
#define CAPA_EXPIRY_ROUND_S 64

int mds_capa_init(struct mds *m)
{
	uint8_t val[1 + 4 + WEIR_CAPA_KEY_LEN];
	size_t vl = 0;

	m->m_capa_on = !net_auth_insecure(net_auth_get_default());
	if (!m->m_capa_on) {
		WEIR_LOG_NOTICE("capabilities: off (the MDS runs --insecure; OSSs check nothing)");
		return 0;
	}
	if (m->m_conf.mc_mdt_index != 0) {
		/* MDT k > 0 signs with MDT0's key (the OSSs know one), which its
		 * registration brought (mds/mdt_reg.c) */
		if (!m->m_mgc_capa_gen) {
			WEIR_LOG_ERROR("capabilities: MDT0 runs --insecure and sent no capability"
				       " key, this MDS does not: run both alike");
			return -EINVAL;
		}
		weir_capa_key_init(&m->m_capa_key, m->m_mgc_capa_key, m->m_mgc_capa_gen);
		explicit_bzero(m->m_mgc_capa_key, sizeof(m->m_mgc_capa_key));
		WEIR_LOG_NOTICE("capabilities: on, lifetime %u s, MDT0's key generation %u",
				m->m_conf.mc_capa_timeout_s, m->m_capa_key.ck_gen);
		return 0;
	}
	int rc = mds_ns_cluster_get(m->m_ns, CAPA_KEY_REC, strlen(CAPA_KEY_REC), val,
				    sizeof(val), &vl);
	if (!rc && vl == sizeof(val) && val[0] == CAPA_KEY_REC_VERSION) {
		weir_capa_key_init(&m->m_capa_key, val + 5, weir_get_le32(val + 1));
	} else if (rc == -ENOENT || (!rc && vl != sizeof(val))) {
		if (!rc)
			WEIR_LOG_WARN("capabilities: a malformed key record (%zu bytes): making a"
				      " new key", vl);
		uint8_t key[WEIR_CAPA_KEY_LEN];
		if (weir_random_bytes(key, sizeof(key)))
			return -EIO;
		weir_capa_key_init(&m->m_capa_key, key, 1);
		explicit_bzero(key, sizeof(key));
		val[0] = CAPA_KEY_REC_VERSION;
		weir_put_le32(val + 1, m->m_capa_key.ck_gen);
		memcpy(val + 5, m->m_capa_key.ck_key, WEIR_CAPA_KEY_LEN);
		rc = mds_ns_cluster_put(m->m_ns, CAPA_KEY_REC, strlen(CAPA_KEY_REC), val,
					sizeof(val));
		explicit_bzero(val, sizeof(val));
		if (rc)
			return rc;
		WEIR_LOG_NOTICE("capabilities: made the MDT's capability key (generation 1)");
	} else if (rc) {
		return rc;
	} else {
		WEIR_LOG_ERROR("capabilities: capability key record of version %u: not this MDS's",
			       val[0]);
		return -EIO;
	}
	explicit_bzero(val, sizeof(val));
	WEIR_LOG_NOTICE("capabilities: on, lifetime %u s, key generation %u",
			m->m_conf.mc_capa_timeout_s, m->m_capa_key.ck_gen);
	return 0;
}

bool mds_capa_sign(struct mds *m, const struct weir_fid *fid, uint32_t rights,
		   struct mds_capa_msg *cm)
{
	if (!m->m_capa_on)
		return false;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* the next whole second: a capability lives at least the whole lifetime */
	int64_t now = (int64_t)ts.tv_sec + (ts.tv_nsec ? 1 : 0);
	int64_t exp = now + (int64_t)m->m_conf.mc_capa_timeout_s;
	if (m->m_conf.mc_capa_timeout_s >= CAPA_EXPIRY_ROUND_S) /* short lifetimes (tests): exact */
		exp = (exp + CAPA_EXPIRY_ROUND_S - 1) / CAPA_EXPIRY_ROUND_S * CAPA_EXPIRY_ROUND_S;
	weir__capa__init(&cm->cm_capa);
	weir__fid__init(&cm->cm_fid);
	cm->cm_fid.seq = fid->fid_seq;
	cm->cm_fid.oid = fid->fid_oid;
	cm->cm_capa.fid = &cm->cm_fid;
	cm->cm_capa.rights = rights;
	cm->cm_capa.expiry_s = exp;
	cm->cm_capa.key_gen = m->m_capa_key.ck_gen;
	weir_capa_mac(&m->m_capa_key, fid, rights, exp, cm->cm_mac);
	cm->cm_capa.mac.data = cm->cm_mac;
	cm->cm_capa.mac.len = WEIR_CAPA_MAC_LEN;
	return true;
}

uint32_t mds_capa_rights_of_open(uint32_t of)
{
	uint32_t r = WEIR_CAPA_GETATTR;
	if (of & (MDS_OF_READ | MDS_OF_EXEC))
		r |= WEIR_CAPA_READ;
	if (of & MDS_OF_WRITE)
		r |= WEIR_CAPA_WRITE | WEIR_CAPA_PUNCH;
	if (of & MDS_OF_TRUNC)
		r |= WEIR_CAPA_PUNCH;
	return r;
}

void mds_capa_fill_reg(struct mds *m, void *repv)
{
	Weir__OssRegisterRep *rep = repv;
	if (!m->m_capa_on)
		return;
	rep->capa_key.data = m->m_capa_key.ck_key;
	rep->capa_key.len = WEIR_CAPA_KEY_LEN;
	rep->capa_key_gen = m->m_capa_key.ck_gen;
}

void mds_capa_handle_renew(struct mds *m, struct net_req *rq)
{
	Weir__CapaReq *req = net_req_unpack(rq, &weir__capa_req__descriptor);
	if (!req) {
		net_req_reply(rq, -EPROTO, NULL, NULL, 0);
		return;
	}
	struct weir_fid fid = { req->fid ? req->fid->seq : 0, req->fid ? req->fid->oid : 0 };
	uint32_t want = req->rights & WEIR_CAPA_CLIENT_RIGHTS; /* never DESTROY */
	uint32_t have = 0;
	int rc = 0;
	struct mds_inode in;
	if (!m->m_capa_on) {
		rc = -EOPNOTSUPP;
		goto out;
	}
	if (!req->fid || !want) {
		rc = -EINVAL;
		goto out;
	}
	rc = mds_ns_getattr(m->m_ns, &fid, &in);
	if (!rc && !S_ISREG(in.in_mode))
		rc = -EINVAL;
	if (rc)
		goto out;
	/* an open handle of the caller's session: the open's rights, as its fd keeps them */
	if (req->handle)
		have = mds_svc_handle_rights(m, req->handle, req->session, &fid);
	if (want & ~have) {
		/* no handle, or one that allows less (the client may ask for what a
		 * capability of another open held): what the caller's permissions
		 * allow now, besides */
		struct mds_cred cr;
		mds_svc_cred(m, req->cred, &cr);
		have |= WEIR_CAPA_GETATTR;
		if (!mds_perm_check(&cr, &in, MDS_MAY_READ))
			have |= WEIR_CAPA_READ;
		if (!mds_perm_check(&cr, &in, MDS_MAY_WRITE))
			have |= WEIR_CAPA_WRITE | WEIR_CAPA_PUNCH;
	}
	if (want & ~have) {
		WEIR_LOG_INFO("peer=%s fid=" WEIR_FID_F " rights=%#x have=%#x: capability refused",
			      rq->rq_peer, WEIR_FID_P(&fid), want, have);
		rc = -EACCES;
		goto out;
	}
out:;
	struct mds_capa_msg cm;
	Weir__CapaRep rep = WEIR__CAPA_REP__INIT;
	if (!rc) {
		mds_capa_sign(m, &fid, want, &cm);
		rep.capa = &cm.cm_capa;
	}
	net_req_reply(rq, rc, rc ? NULL : &rep.base, NULL, 0);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}
