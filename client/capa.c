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
 * with wc_capa_get(): a capability with the rights needed that is not due
 * (renew_at(): a quarter of its lifetime before it expires, at most 30 s,
 * measured on this host's monotonic clock, the lifetime taken from the
 * expiry and this host's wall clock, or from the lifetime the MDS announces
 * when the clocks disagree), else a new one from MDS_CAPA_RENEW, asked with
 * the handle of an open of the file by this mount that allows the operation
 * (else the handle the capability came with): the MDS then grants the open's
 * rights, as an fd keeps them after a chmod; without one, the MDS checks the
 * mount's credentials. An OSS's -EACCES makes the callers (client/io.c)
 * forget the capability and retry once with a fresh one (the MDS may have
 * restarted with another key): the application sees nothing of it. An OSS
 * that has no key yet answers -EAGAIN, and the callers wait and resend.
 * The MDS of an --insecure cluster issues no capabilities (ConnectRep
 * capa_ttl_s 0): requests then carry none.
 * Thread safety: the table is under its own mutex (ct_lock), never held
 * while taking another lock or calling the MDS (fs_lock is taken after it is
 * released, to find an open's handle).
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

/*
 * When to renew a capability the MDS says expires at \a expiry_s, as a
 * CLOCK_MONOTONIC time: a quarter of the lifetime before it expires (at most
 * 30 s, at least 500 ms; half the lifetime for lifetimes under 2 s), the
 * lifetime measured in milliseconds against this host's wall clock. A clock
 * that disagrees with the MDS's by more than the lifetime is not trusted:
 * then the announced lifetime counts from now.
 */
static uint64_t renew_at(const struct weir_fs *fs, int64_t expiry_s)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	int64_t ttl_ms = (int64_t)fs->fs_capa_ttl_s * 1000;
	int64_t left_ms = expiry_s * 1000 - now_ms;
	if (left_ms > ttl_ms || left_ms < 0)
		left_ms = ttl_ms;
	int64_t margin_ms = ttl_ms < 2000 ? ttl_ms / 2 : WEIR_MAX(WEIR_MIN(ttl_ms / 4, 30000), 500);
	int64_t ms = WEIR_MAX(left_ms - margin_ms, (int64_t)0);
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

/* The MDS handle of a live open of \a fid by this mount whose mode allows \a need; 0 none. */
static uint64_t wc_capa_open_handle(struct weir_fs *fs, const struct weir_fid *fid, uint32_t need)
{
	uint64_t h = 0;
	pthread_mutex_lock(&fs->fs_lock);
	for (struct weir_file *fh = fs->fs_files; fh && !h; fh = fh->f_next) {
		if (!weir_fid_eq(&fh->f_fid, fid) || wc_file_stale(fh))
			continue;
		if ((need & (WEIR_CAPA_WRITE | WEIR_CAPA_PUNCH)) && !fh->f_write)
			continue;
		if ((need & WEIR_CAPA_READ) && !fh->f_read)
			continue;
		h = fh->f_handle;
	}
	pthread_mutex_unlock(&fs->fs_lock);
	return h;
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
	/* an open of this mount that allows it: its handle makes the MDS grant
	 * the open's rights (as an fd keeps them after a chmod); the entry's
	 * handle may be of a closed file, or gone with a collision */
	uint64_t h = wc_capa_open_handle(fs, fid, need);
	if (h)
		handle = h;

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
	uint32_t mdt = (uint32_t)weir_fid_mdt(fid); /* the file's MDT (client/mdt.c) */
	int rc = wc_mdt_session(fs, mdt, &req.session, NULL);
	if (!rc)
		rc = wc_mds_call_mdt(fs, mdt, WEIR__WIRE_OP__MDS_CAPA_RENEW, &req.base,
				     &weir__capa_rep__descriptor, (void **)&rep);
	if (rc == -EACCES && want != need) {
		/* the rights it had are gone (closed, chmod): what this call needs */
		req.rights = need;
		rc = wc_mds_call_mdt(fs, mdt, WEIR__WIRE_OP__MDS_CAPA_RENEW, &req.base,
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
