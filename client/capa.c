/*
 * client/capa.c - the OST capabilities this mount holds (libweir's side of
 * common/capa.h): kept from the MDS's replies, attached to every object
 * request, renewed before they expire and when an OSS refuses one.
 *
 * DESIGN
 * A direct-mapped table per mount, by FID (WC_CAPA_SLOTS entries, one
 * capability each; a collision evicts, which only costs a renewal). Every
 * MDS reply that carries a capability (MDS_OPEN, and the AttrRep of
 * lookups, getattrs and setattrs of regular files) goes through
 * wc_capa_note() (from wc_mds_call); a capability is replaced only by one
 * with at least its rights, or when it is due. Object requests take a copy
 * with wc_capa_get(): a capability with the rights needed that is not within
 * WC_CAPA_MARGIN of its expiry (measured on this host's monotonic clock from
 * the lifetime the MDS announces, so client and MDS clocks need not agree),
 * else a new one from MDS_CAPA_RENEW, asked with the open handle it came
 * with (the MDS then grants the open's rights, as an fd keeps them after a
 * chmod) or by the mount's credentials. An OSS's -EACCES makes the callers
 * forget the capability and retry once with a fresh one (the MDS may have
 * restarted with a new key): the application sees nothing of it.
 * The MDS of an --insecure cluster issues no capabilities (ConnectRep
 * capa_ttl_s 0): requests then carry none.
 * Thread safety: the table is under its own mutex.
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/capa.h"
#include "common/log.h"
#include "common/util.h"

#define WC_CAPA_SLOTS 1024

struct wc_capa_ent {
	struct weir_fid ce_fid;
	uint32_t ce_rights;
	uint32_t ce_gen;
	int64_t ce_expiry_s;
	uint8_t ce_mac[WEIR_CAPA_MAC_LEN];
	uint64_t ce_handle;       /* the open it came with (renewals name it), 0 none */
	uint64_t ce_renew_ns;     /* CLOCK_MONOTONIC: renew from then on */
	bool ce_used;
};

struct wc_capa_tab {
	pthread_mutex_t ct_lock;
	struct wc_capa_ent ct_ents[WC_CAPA_SLOTS];
};

int wc_capa_init(struct weir_fs *fs)
{
	fs->fs_capa = calloc(1, sizeof(*fs->fs_capa));
	if (!fs->fs_capa)
		return -ENOMEM;
	pthread_mutex_init(&fs->fs_capa->ct_lock, NULL);
	return 0;
}

void wc_capa_fini(struct weir_fs *fs)
{
	if (!fs->fs_capa)
		return;
	pthread_mutex_destroy(&fs->fs_capa->ct_lock);
	explicit_bzero(fs->fs_capa, sizeof(*fs->fs_capa));
	free(fs->fs_capa);
	fs->fs_capa = NULL;
}

static struct wc_capa_ent *slot(struct wc_capa_tab *t, const struct weir_fid *fid)
{
	uint64_t h = (fid->fid_seq * 0x9e3779b97f4a7c15ULL) ^ (fid->fid_oid * 0xc2b2ae3d27d4eb4fULL);
	return &t->ct_ents[(h >> 20) % WC_CAPA_SLOTS];
}

/* When to renew a capability the MDS says expires at \a expiry_s, from now. */
static uint64_t renew_at(const struct weir_fs *fs, int64_t expiry_s)
{
	int64_t left = expiry_s - (int64_t)time(NULL); /* the MDS's lifetime, as this host sees it */
	int64_t ttl = fs->fs_capa_ttl_s;
	if (left > ttl || left < 0)
		left = ttl; /* the clocks differ: trust the announced lifetime */
	int64_t margin = WEIR_MIN(ttl / 4, (int64_t)30);
	int64_t ms = (left - margin) * 1000;
	if (ms < 0)
		ms = 0;
	return weir_now_ns() + (uint64_t)ms * 1000000ULL;
}

void wc_capa_note(struct weir_fs *fs, const Weir__Capa *c, uint64_t handle)
{
	if (!fs->fs_capa || !c || !c->fid || c->mac.len != WEIR_CAPA_MAC_LEN)
		return;
	struct weir_fid fid = { c->fid->seq, c->fid->oid };
	struct wc_capa_tab *t = fs->fs_capa;
	pthread_mutex_lock(&t->ct_lock);
	struct wc_capa_ent *e = slot(t, &fid);
	bool same = e->ce_used && weir_fid_eq(&e->ce_fid, &fid);
	bool keep = same && (e->ce_rights & c->rights) == c->rights &&
		    (c->rights & e->ce_rights) != e->ce_rights && weir_now_ns() < e->ce_renew_ns;
	if (!keep) {
		e->ce_fid = fid;
		e->ce_rights = c->rights;
		e->ce_gen = c->key_gen;
		e->ce_expiry_s = c->expiry_s;
		memcpy(e->ce_mac, c->mac.data, WEIR_CAPA_MAC_LEN);
		if (handle || !same)
			e->ce_handle = handle;
		e->ce_renew_ns = renew_at(fs, c->expiry_s);
		e->ce_used = true;
	}
	pthread_mutex_unlock(&t->ct_lock);
}

void wc_capa_forget(struct weir_fs *fs, const struct weir_fid *fid)
{
	if (!fs->fs_capa)
		return;
	pthread_mutex_lock(&fs->fs_capa->ct_lock);
	struct wc_capa_ent *e = slot(fs->fs_capa, fid);
	if (e->ce_used && weir_fid_eq(&e->ce_fid, fid))
		e->ce_renew_ns = 0; /* due: the next use renews (keeping its handle) */
	pthread_mutex_unlock(&fs->fs_capa->ct_lock);
}

static void buf_fill(struct wc_capa_buf *b, const struct wc_capa_ent *e)
{
	weir__capa__init(&b->cb_capa);
	weir__fid__init(&b->cb_fid);
	b->cb_fid.seq = e->ce_fid.fid_seq;
	b->cb_fid.oid = e->ce_fid.fid_oid;
	b->cb_capa.fid = &b->cb_fid;
	b->cb_capa.rights = e->ce_rights;
	b->cb_capa.expiry_s = e->ce_expiry_s;
	b->cb_capa.key_gen = e->ce_gen;
	memcpy(b->cb_mac, e->ce_mac, WEIR_CAPA_MAC_LEN);
	b->cb_capa.mac.data = b->cb_mac;
	b->cb_capa.mac.len = WEIR_CAPA_MAC_LEN;
	b->cb_set = true;
}

int wc_capa_get(struct weir_fs *fs, const struct weir_fid *fid, uint32_t need,
		struct wc_capa_buf *b)
{
	b->cb_set = false;
	if (!fs->fs_capa_ttl_s || !fs->fs_capa)
		return 0; /* an --insecure MDS issues none: requests carry none */
	struct wc_capa_tab *t = fs->fs_capa;
	uint64_t handle = 0;
	uint32_t want = need;
	pthread_mutex_lock(&t->ct_lock);
	struct wc_capa_ent *e = slot(t, fid);
	if (e->ce_used && weir_fid_eq(&e->ce_fid, fid)) {
		if ((e->ce_rights & need) == need && weir_now_ns() < e->ce_renew_ns) {
			buf_fill(b, e);
			pthread_mutex_unlock(&t->ct_lock);
			return 0;
		}
		handle = e->ce_handle;
		want |= e->ce_rights; /* keep what it allowed */
	}
	pthread_mutex_unlock(&t->ct_lock);

	Weir__CapaReq req = WEIR__CAPA_REQ__INIT;
	Weir__Cred cred = WEIR__CRED__INIT;
	Weir__Fid pf = WEIR__FID__INIT;
	Weir__CapaRep *rep = NULL;
	wc_cred_init(fs, &cred);
	pf.seq = fid->fid_seq;
	pf.oid = fid->fid_oid;
	req.cred = &cred;
	req.fid = &pf;
	req.rights = want;
	req.handle = handle;
	req.session = wc_session_get(fs, NULL);
	int rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_CAPA_RENEW, &req.base,
			     &weir__capa_rep__descriptor, (void **)&rep);
	if (rc == -EACCES && want != need) {
		/* the rights it had are gone (closed, chmod): what this call needs */
		req.rights = need;
		rc = wc_mds_call(fs, WEIR__WIRE_OP__MDS_CAPA_RENEW, &req.base,
				 &weir__capa_rep__descriptor, (void **)&rep);
	}
	if (!rc && (!rep->capa || !rep->capa->fid || rep->capa->mac.len != WEIR_CAPA_MAC_LEN))
		rc = -EPROTO;
	if (!rc) {
		wc_capa_note(fs, rep->capa, handle);
		struct wc_capa_ent tmp = {
			.ce_fid = *fid,
			.ce_rights = rep->capa->rights,
			.ce_gen = rep->capa->key_gen,
			.ce_expiry_s = rep->capa->expiry_s,
		};
		memcpy(tmp.ce_mac, rep->capa->mac.data, WEIR_CAPA_MAC_LEN);
		buf_fill(b, &tmp);
	} else {
		WEIR_LOG_WARN("fid=" WEIR_FID_F " rights=%#x rc=%d: no capability from the MDS",
			      WEIR_FID_P(fid), need, rc);
	}
	if (rep)
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	return rc;
}
