/*
 * tests/integration/test_capa.c - OST capabilities (mds/capa.c, oss/capa.c,
 * client/capa.c) against a real cluster, played as an insider would: a
 * process that holds the cluster key and talks to an OSS directly.
 *
 *   - raw OST_READ, OST_WRITE, OST_TRUNCATE, OST_DESTROY, OST_GETATTR,
 *     OST_SEEK, OST_FALLOCATE and OST_FSYNC without a capability, with one
 *     for another file, with too few rights, with a forged MAC and with an
 *     expired one: -EACCES, and the file is intact;
 *   - MDS_CAPA_RENEW never grants CR_DESTROY and grants READ only to who may
 *     read the file; a capability it grants works for what it allows; the
 *     rights of an open handle it names plus what the caller may do; an
 *     MDS_OPEN's capability has the open's rights and never CR_DESTROY;
 *   - a file held open and used across several capability lifetimes
 *     (--capa-timeout 2s) keeps working: libweir renews unseen, also for a
 *     writer whose file was made read-only and opened read-only meanwhile;
 *   - after an MDS restart the capabilities clients hold still work;
 *   - an OSS that restarted while the MDS is down has no key: it answers
 *     -EAGAIN, and a client's read waits until the MDS is back, then works.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/capa.h"
#include "common/util.h"
#include "harness.h"
#include "net/net.h"
#include "th_weir.h"
#include "weir.pb-c.h"

#define LEN (256 * 1024)

static struct th_cluster *cl;
static weir_fs_t *fs;
static uint8_t data[LEN];

static int suite_init(void)
{
	static const char *const mds_args[] = { "--capa-timeout", "2s", NULL };
	struct th_cluster_opts o = { .tco_nr_oss = 1, .tco_ost_per_oss = 1,
				     .tco_mds_args = mds_args };
	if (th_cluster_mount(&o, &cl, &fs))
		return -1;
	th_fill_pattern(data, LEN, 5);
	if (th_put(fs, "/a", data, LEN) || th_put(fs, "/b", data, LEN))
		return -1;
	return weir_chmod(fs, "/a", 0600);
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

struct obj {
	weir_fid_t fid;
	uint32_t ost;
};

static struct obj obj_of(const char *path)
{
	struct obj o = { 0 };
	struct weir_layout_info li;
	CU_ASSERT_EQUAL_FATAL(weir_path2fid(fs, path, &o.fid), 0);
	CU_ASSERT_EQUAL_FATAL(weir_getstripe(fs, path, &li), 0);
	o.ost = li.wli_objs[0].woi_ost;
	return o;
}

/*
 * An MDS_CAPA_RENEW to the MDS of \a k as uid \a uid naming open handle \a h
 * (0: none; session 0); \return its status, the capability in \a out.
 */
static int renew_on(struct th_cluster *k, const struct obj *o, uint32_t uid, uint32_t rights,
		    uint64_t h, Weir__CapaRep **out)
{
	struct net_conn *c;
	int rc = net_conn_open(th_cluster_mds_addr(k), 2000, &c);
	if (rc)
		return rc;
	Weir__Cred cred = WEIR__CRED__INIT;
	cred.uid = cred.gid = uid;
	Weir__Fid f = WEIR__FID__INIT;
	f.seq = o->fid.seq;
	f.oid = o->fid.oid;
	Weir__CapaReq req = WEIR__CAPA_REQ__INIT;
	req.cred = &cred;
	req.fid = &f;
	req.rights = rights;
	req.handle = h;
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__MDS_CAPA_RENEW, &req.base);
	rc = net_call_run(c, &call);
	*out = rc ? NULL : net_call_unpack(&call, &weir__capa_rep__descriptor);
	if (!rc && !*out)
		rc = -EPROTO;
	net_call_fini(&call);
	net_conn_close(c);
	return rc;
}

static int renew(const struct obj *o, uint32_t uid, uint32_t rights, Weir__CapaRep **out)
{
	return renew_on(cl, o, uid, rights, 0, out);
}

/* A raw MDS_OPEN of \a path with OpenFlag bits \a of (as root, no session). */
static int raw_open(const char *path, uint32_t of, Weir__OpenRep **out)
{
	struct net_conn *c;
	int rc = net_conn_open(th_cluster_mds_addr(cl), 2000, &c);
	if (rc)
		return rc;
	Weir__Cred cred = WEIR__CRED__INIT;
	Weir__OpenReq req = WEIR__OPEN_REQ__INIT;
	req.cred = &cred;
	req.path = (char *)path;
	req.flags = of;
	req.mode = 0644;
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__MDS_OPEN, &req.base);
	rc = net_call_run(c, &call);
	*out = rc ? NULL : net_call_unpack(&call, &weir__open_rep__descriptor);
	if (!rc && !*out)
		rc = -EPROTO;
	net_call_fini(&call);
	net_conn_close(c);
	return rc;
}

/*
 * One raw object request to OSS \a oss of cluster \a k: \a op on \a o
 * (stripe 0) with \a capa (NULL: none); OST_FALLOCATE with mode \a fmode
 * (FallocFlag bits) on [0, 4096).
 */
static int raw_on(struct th_cluster *k, int oss, uint16_t op, const struct obj *o,
		  Weir__Capa *capa, uint32_t fmode)
{
	struct net_conn *c;
	int rc = net_conn_open(th_server_addr(k, oss), 2000, &c);
	if (rc)
		return rc;
	Weir__Fid f = WEIR__FID__INIT;
	f.seq = o->fid.seq;
	f.oid = o->fid.oid;
	static uint8_t buf[4096];
	struct iovec iov = { buf, sizeof(buf) };
	struct net_call call;
	Weir__ObjIoReq io = WEIR__OBJ_IO_REQ__INIT;
	Weir__ObjReq ob = WEIR__OBJ_REQ__INIT;
	Weir__ObjTruncReq tr = WEIR__OBJ_TRUNC_REQ__INIT;
	Weir__ObjSeekReq sk = WEIR__OBJ_SEEK_REQ__INIT;
	Weir__ObjFallocReq fa = WEIR__OBJ_FALLOC_REQ__INIT;
	io.ost = ob.ost = tr.ost = sk.ost = fa.ost = o->ost;
	io.fid = ob.fid = tr.fid = sk.fid = fa.fid = &f;
	io.capa = ob.capa = tr.capa = sk.capa = fa.capa = capa;
	io.len = sizeof(buf);
	tr.size = LEN; /* a truncate to its size: the data stays */
	fa.len = 4096;
	fa.mode = fmode;
	if (op == WEIR__WIRE_OP__OST_READ || op == WEIR__WIRE_OP__OST_WRITE) {
		net_call_init(&call, op, &io.base);
		if (op == WEIR__WIRE_OP__OST_WRITE) {
			memset(buf, 0xee, sizeof(buf));
			call.nc_req_bulk = &iov;
			call.nc_req_nr_bulk = 1;
		} else {
			call.nc_rep_bulk = &iov;
			call.nc_rep_nr_bulk = 1;
		}
	} else if (op == WEIR__WIRE_OP__OST_TRUNCATE) {
		net_call_init(&call, op, &tr.base);
	} else if (op == WEIR__WIRE_OP__OST_SEEK) {
		net_call_init(&call, op, &sk.base);
	} else if (op == WEIR__WIRE_OP__OST_FALLOCATE) {
		net_call_init(&call, op, &fa.base);
	} else if (op == WEIR__WIRE_OP__OST_DESTROY_BATCH) { /* of this one object: its rc */
		Weir__ObjReq *objs[1] = { &ob };
		Weir__ObjDestroyBatchReq br = WEIR__OBJ_DESTROY_BATCH_REQ__INIT;
		br.n_objs = 1;
		br.objs = objs;
		net_call_init(&call, op, &br.base);
		rc = net_call_run(c, &call);
		Weir__ObjDestroyBatchRep *rep =
			rc ? NULL : net_call_unpack(&call, &weir__obj_destroy_batch_rep__descriptor);
		if (!rc)
			rc = rep && rep->n_status == 1 ? weir_status_to_errno(rep->status[0]) : -EPROTO;
		if (rep)
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		net_call_fini(&call);
		net_conn_close(c);
		return rc;
	} else {
		net_call_init(&call, op, &ob.base);
	}
	rc = net_call_run(c, &call);
	net_call_fini(&call);
	net_conn_close(c);
	return rc;
}

static int raw(uint16_t op, const struct obj *o, Weir__Capa *capa)
{
	return raw_on(cl, 0, op, o, capa, 0);
}

static bool intact(const char *path)
{
	static uint8_t back[LEN];
	return th_get(fs, path, back, LEN) == LEN && !memcmp(back, data, LEN);
}

static void test_capa_raw_object_ops_without_capability_refused(void)
{
	struct obj a = obj_of("/a");
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, NULL), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_WRITE, &a, NULL), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_TRUNCATE, &a, NULL), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_DESTROY, &a, NULL), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_DESTROY_BATCH, &a, NULL), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_GETATTR, &a, NULL), -EACCES);
	CU_ASSERT(intact("/a"));
}

static void test_capa_wrong_file_rights_mac_refused(void)
{
	struct obj a = obj_of("/a"), b = obj_of("/b");
	Weir__CapaRep *rb = NULL, *ra = NULL;
	CU_ASSERT_EQUAL_FATAL(renew(&b, 0, WEIR_CAPA_READ | WEIR_CAPA_WRITE, &rb), 0);
	/* b's capability on a */
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, rb->capa), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_WRITE, &a, rb->capa), -EACCES);
	/* a's, read only: no write, no truncate, no destroy */
	CU_ASSERT_EQUAL_FATAL(renew(&a, 0, WEIR_CAPA_READ, &ra), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, ra->capa), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_WRITE, &a, ra->capa), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_TRUNCATE, &a, ra->capa), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_DESTROY, &a, ra->capa), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_DESTROY_BATCH, &a, ra->capa), -EACCES);
	/* rights raised by hand, or a flipped MAC bit: the MAC no longer verifies */
	ra->capa->rights |= WEIR_CAPA_WRITE | WEIR_CAPA_DESTROY;
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_DESTROY, &a, ra->capa), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_DESTROY_BATCH, &a, ra->capa), -EACCES);
	ra->capa->rights = WEIR_CAPA_READ;
	ra->capa->mac.data[3] ^= 1;
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, ra->capa), -EACCES);
	ra->capa->mac.data[3] ^= 1;
	ra->capa->expiry_s += 3600; /* a longer life than signed */
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, ra->capa), -EACCES);
	weir__capa_rep__free_unpacked(ra, NULL);
	weir__capa_rep__free_unpacked(rb, NULL);
	CU_ASSERT(intact("/a"));
	CU_ASSERT(intact("/b"));
}

static void test_capa_renew_never_destroy_and_checks_permissions(void)
{
	struct obj a = obj_of("/a");
	Weir__CapaRep *r = NULL;
	CU_ASSERT_EQUAL(renew(&a, 0, WEIR_CAPA_DESTROY, &r), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(renew(&a, 0, WEIR_CAPA_DESTROY | WEIR_CAPA_READ, &r), 0);
	CU_ASSERT_EQUAL(r->capa->rights, WEIR_CAPA_READ);
	weir__capa_rep__free_unpacked(r, NULL);
	/* /a is root's, mode 0600: uid 1000 may stat it (GETATTR), not read or write it */
	CU_ASSERT_EQUAL(renew(&a, 1000, WEIR_CAPA_READ, &r), -EACCES);
	CU_ASSERT_EQUAL(renew(&a, 1000, WEIR_CAPA_WRITE, &r), -EACCES);
	CU_ASSERT_EQUAL_FATAL(renew(&a, 1000, WEIR_CAPA_GETATTR, &r), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_GETATTR, &a, r->capa), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, r->capa), -EACCES);
	weir__capa_rep__free_unpacked(r, NULL);
}

static void test_capa_expired_refused(void)
{
	struct obj a = obj_of("/a");
	Weir__CapaRep *r = NULL;
	Weir__CapaRep *w = NULL;
	CU_ASSERT_EQUAL_FATAL(renew(&a, 0, WEIR_CAPA_READ, &r), 0);
	CU_ASSERT_EQUAL_FATAL(renew(&a, 0, WEIR_CAPA_WRITE | WEIR_CAPA_PUNCH, &w), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, r->capa), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_TRUNCATE, &a, w->capa), 0); /* to its size */
	th_sleep_ms(3200); /* --capa-timeout 2s */
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, r->capa), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_WRITE, &a, w->capa), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_TRUNCATE, &a, w->capa), -EACCES);
	weir__capa_rep__free_unpacked(r, NULL);
	weir__capa_rep__free_unpacked(w, NULL);
	CU_ASSERT(intact("/a"));
}

/* OST_SEEK, OST_FALLOCATE (allocate, punch) and OST_FSYNC need their rights too. */
static void test_capa_seek_fallocate_fsync_refused(void)
{
	struct obj a = obj_of("/a");
	const uint32_t punch = WEIR__FALLOC_FLAG__FA_PUNCH_HOLE | WEIR__FALLOC_FLAG__FA_KEEP_SIZE;
	Weir__CapaRep *r = NULL;
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_SEEK, &a, NULL), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_FSYNC, &a, NULL), -EACCES);
	CU_ASSERT_EQUAL(raw_on(cl, 0, WEIR__WIRE_OP__OST_FALLOCATE, &a, NULL, 0), -EACCES);
	CU_ASSERT_EQUAL(raw_on(cl, 0, WEIR__WIRE_OP__OST_FALLOCATE, &a, NULL, punch), -EACCES);
	/* write only: allocate, but no punch, truncate, read, seek, fsync */
	CU_ASSERT_EQUAL_FATAL(renew(&a, 0, WEIR_CAPA_WRITE, &r), 0);
	CU_ASSERT_EQUAL(r->capa->rights, WEIR_CAPA_WRITE);
	CU_ASSERT_EQUAL(raw_on(cl, 0, WEIR__WIRE_OP__OST_FALLOCATE, &a, r->capa,
			       WEIR__FALLOC_FLAG__FA_KEEP_SIZE), 0);
	CU_ASSERT_EQUAL(raw_on(cl, 0, WEIR__WIRE_OP__OST_FALLOCATE, &a, r->capa, punch), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_TRUNCATE, &a, r->capa), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_READ, &a, r->capa), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_SEEK, &a, r->capa), -EACCES);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_FSYNC, &a, r->capa), -EACCES);
	weir__capa_rep__free_unpacked(r, NULL);
	/* getattr (what every capability of a file holds): fsync, not seek */
	CU_ASSERT_EQUAL_FATAL(renew(&a, 0, WEIR_CAPA_GETATTR, &r), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_FSYNC, &a, r->capa), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_SEEK, &a, r->capa), -EACCES);
	weir__capa_rep__free_unpacked(r, NULL);
	/* read: seek */
	CU_ASSERT_EQUAL_FATAL(renew(&a, 0, WEIR_CAPA_READ, &r), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_SEEK, &a, r->capa), 0);
	weir__capa_rep__free_unpacked(r, NULL);
	CU_ASSERT(intact("/a"));
}

/* A raw MDS_CLOSE of handle \a h of \a fid (as root, no size). */
static void raw_close(const weir_fid_t *fid, uint64_t h)
{
	struct net_conn *c;
	if (net_conn_open(th_cluster_mds_addr(cl), 2000, &c))
		return;
	Weir__Cred cred = WEIR__CRED__INIT;
	Weir__Fid f = WEIR__FID__INIT;
	f.seq = fid->seq;
	f.oid = fid->oid;
	Weir__CloseReq req = WEIR__CLOSE_REQ__INIT;
	req.cred = &cred;
	req.fid = &f;
	req.handle = h;
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__MDS_CLOSE, &req.base);
	CU_ASSERT_EQUAL(net_call_run(c, &call), 0);
	net_call_fini(&call);
	net_conn_close(c);
}

/*
 * An open's capability has the open's rights (never CR_DESTROY); a renewal
 * naming the open's handle gets them even when the caller's permissions no
 * longer allow them, and besides what the caller's permissions allow.
 */
static void test_capa_open_rights_and_renewal_by_handle(void)
{
	Weir__OpenRep *o = NULL;
	Weir__CapaRep *r = NULL;
	const uint32_t rw = WEIR__OPEN_FLAG__OF_READ | WEIR__OPEN_FLAG__OF_WRITE;
	CU_ASSERT_EQUAL_FATAL(raw_open("/t", rw | WEIR__OPEN_FLAG__OF_CREAT |
					     WEIR__OPEN_FLAG__OF_TRUNC, &o), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o->capa);
	CU_ASSERT_EQUAL(o->capa->rights, WEIR_CAPA_READ | WEIR_CAPA_WRITE | WEIR_CAPA_PUNCH |
						 WEIR_CAPA_GETATTR);
	struct obj t = { .ost = o->layout ? o->layout->osts[0] : 0 };
	t.fid.seq = o->attr->fid->seq;
	t.fid.oid = o->attr->fid->oid;
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_WRITE, &t, o->capa), 0);
	CU_ASSERT_EQUAL(raw(WEIR__WIRE_OP__OST_DESTROY, &t, o->capa), -EACCES);
	raw_close(&t.fid, o->handle);
	weir__open_rep__free_unpacked(o, NULL);

	/* /a: root's, 0600. Open for reading (as root): the handle allows READ */
	struct obj a = obj_of("/a");
	CU_ASSERT_EQUAL_FATAL(raw_open("/a", WEIR__OPEN_FLAG__OF_READ, &o), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o->capa);
	CU_ASSERT_EQUAL(o->capa->rights, WEIR_CAPA_READ | WEIR_CAPA_GETATTR);
	uint64_t h = o->handle;
	weir__open_rep__free_unpacked(o, NULL);
	/* uid 1000 may not read /a, but with the handle of an open that may, it is granted */
	CU_ASSERT_EQUAL(renew_on(cl, &a, 1000, WEIR_CAPA_READ, 0, &r), -EACCES);
	CU_ASSERT_EQUAL_FATAL(renew_on(cl, &a, 1000, WEIR_CAPA_READ, h, &r), 0);
	CU_ASSERT_EQUAL(r->capa->rights, WEIR_CAPA_READ);
	weir__capa_rep__free_unpacked(r, NULL);
	/* more than the handle allows: only what the credentials allow besides */
	CU_ASSERT_EQUAL(renew_on(cl, &a, 1000, WEIR_CAPA_READ | WEIR_CAPA_WRITE, h, &r), -EACCES);
	CU_ASSERT_EQUAL_FATAL(renew_on(cl, &a, 0, WEIR_CAPA_READ | WEIR_CAPA_WRITE, h, &r), 0);
	CU_ASSERT_EQUAL(r->capa->rights, WEIR_CAPA_READ | WEIR_CAPA_WRITE);
	weir__capa_rep__free_unpacked(r, NULL);
	/* a handle of another file, or one closed, gives nothing */
	struct obj b = obj_of("/b");
	CU_ASSERT_EQUAL(renew_on(cl, &b, 1000, WEIR_CAPA_WRITE, h, &r), -EACCES);
	raw_close(&a.fid, h);
	CU_ASSERT_EQUAL(renew_on(cl, &a, 1000, WEIR_CAPA_READ, h, &r), -EACCES);
	CU_ASSERT(intact("/a"));
}

/*
 * A writer whose file is made read-only, and then opened read-only by the
 * same mount once the writer's capability is due: its writes go on (the
 * renewal names the writer's open, not the newest one).
 */
static void test_capa_writer_renews_after_chmod_and_read_only_open(void)
{
	struct weir_mount_opts mo = { .wmo_size = sizeof(mo), .wmo_uid = 1000, .wmo_gid = 1000 };
	weir_fs_t *u = NULL;
	weir_file_t *w = NULL, *r = NULL;
	static uint8_t buf[65536], back[65536];
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/u", 0777), 0);
	CU_ASSERT_EQUAL_FATAL(weir_chmod(fs, "/u", 0777), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mount_with(th_cluster_mds_addr(cl), &mo, &u), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(u, "/u/w", O_CREAT | O_RDWR, 0644, &w), 0);
	th_fill_pattern(buf, sizeof(buf), 11);
	CU_ASSERT_EQUAL(weir_pwrite(w, buf, sizeof(buf), 0), sizeof(buf));
	CU_ASSERT_EQUAL(weir_chmod(u, "/u/w", 0444), 0);
	th_sleep_ms(2600); /* the open's capability (2 s) is due */
	CU_ASSERT_EQUAL_FATAL(weir_open(u, "/u/w", O_RDONLY, 0, &r), 0);
	th_fill_pattern(buf, sizeof(buf), 12);
	CU_ASSERT_EQUAL(weir_pwrite(w, buf, sizeof(buf), sizeof(buf)), sizeof(buf));
	CU_ASSERT_EQUAL(weir_pread(r, back, sizeof(back), sizeof(buf)), sizeof(back));
	CU_ASSERT_EQUAL(memcmp(buf, back, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(weir_close(r), 0);
	CU_ASSERT_EQUAL(weir_close(w), 0);
	CU_ASSERT_EQUAL(weir_umount(u), 0);
}

/* An open file used across three capability lifetimes: every call succeeds. */
static void test_capa_renewed_unseen_while_open(void)
{
	weir_file_t *fh;
	static uint8_t buf[65536], back[65536];
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/renew", O_CREAT | O_RDWR, 0644, &fh), 0);
	uint64_t t0 = th_now_ms();
	int n = 0, bad = 0;
	while (th_now_ms() - t0 < 9000) {
		th_fill_pattern(buf, sizeof(buf), (uint64_t)n);
		if (weir_pwrite(fh, buf, sizeof(buf), (uint64_t)n * sizeof(buf)) != sizeof(buf))
			bad++;
		if (weir_pread(fh, back, sizeof(back), (uint64_t)n * sizeof(buf)) != sizeof(back) ||
		    memcmp(buf, back, sizeof(buf)))
			bad++;
		n++;
		th_sleep_ms(200);
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(n > 20);
	CU_ASSERT_EQUAL(weir_fsync(fh), 0);
	CU_ASSERT_EQUAL(weir_ftruncate(fh, 1000), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
}

/* The capability key lives in the MDT: after an MDS restart, what clients hold still works. */
static void test_capa_survive_mds_restart(void)
{
	weir_file_t *fh;
	static uint8_t back[LEN];
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/b", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pread(fh, back, LEN, 0), LEN);
	CU_ASSERT_EQUAL_FATAL(th_server_restart(cl, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_cluster_wait_up(cl, 20000), 0);
	memset(back, 0, LEN);
	CU_ASSERT_EQUAL(weir_pread(fh, back, LEN, 0), LEN);
	CU_ASSERT_EQUAL(memcmp(back, data, LEN), 0);
	weir_close(fh);
}

static atomic_int reader_done;
static weir_file_t *reader_fh;
static ssize_t reader_rc;
static uint8_t reader_buf[LEN];

static void *reader_main(void *arg)
{
	(void)arg;
	reader_rc = weir_pread(reader_fh, reader_buf, LEN, 0);
	atomic_store(&reader_done, 1);
	return NULL;
}

/*
 * An OSS restarted while the MDS is down has no capability key: it answers
 * -EAGAIN (a raw request with a good capability), a client's read waits,
 * and both go through once the MDS is back (same key: it is in the MDT).
 */
static void test_capa_keyless_oss_eagain_client_waits(void)
{
	struct th_cluster *k = NULL;
	weir_fs_t *kf = NULL;
	struct th_cluster_opts o = { .tco_nr_oss = 1, .tco_ost_per_oss = 1 };
	Weir__CapaRep *r = NULL;
	pthread_t th;
	CU_ASSERT_EQUAL_FATAL(th_cluster_mount(&o, &k, &kf), 0);
	CU_ASSERT_EQUAL_FATAL(th_put(kf, "/k", data, LEN), 0);
	CU_ASSERT_EQUAL_FATAL(weir_open(kf, "/k", O_RDONLY, 0, &reader_fh), 0);
	CU_ASSERT_EQUAL(weir_pread(reader_fh, reader_buf, LEN, 0), LEN);
	struct obj ko = { 0 };
	struct weir_layout_info li;
	CU_ASSERT_EQUAL_FATAL(weir_path2fid(kf, "/k", &ko.fid), 0);
	CU_ASSERT_EQUAL_FATAL(weir_getstripe(kf, "/k", &li), 0);
	ko.ost = li.wli_objs[0].woi_ost;
	CU_ASSERT_EQUAL_FATAL(renew_on(k, &ko, 0, WEIR_CAPA_READ, 0, &r), 0);
	CU_ASSERT_EQUAL(raw_on(k, 0, WEIR__WIRE_OP__OST_READ, &ko, r->capa, 0), 0);

	CU_ASSERT_EQUAL_FATAL(th_server_stop(k, TH_MDS), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_kill(k, 0), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_start(k, 0), 0);
	CU_ASSERT_EQUAL(raw_on(k, 0, WEIR__WIRE_OP__OST_READ, &ko, r->capa, 0), -EAGAIN);
	atomic_store(&reader_done, 0);
	memset(reader_buf, 0, LEN);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, reader_main, NULL), 0);
	th_sleep_ms(1500);
	CU_ASSERT_EQUAL(atomic_load(&reader_done), 0); /* waiting, not failed */
	CU_ASSERT_EQUAL(th_server_start(k, TH_MDS), 0);
	CU_ASSERT_EQUAL(th_cluster_wait_up(k, 20000), 0);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(reader_rc, LEN);
	CU_ASSERT_EQUAL(memcmp(reader_buf, data, LEN), 0);
	CU_ASSERT_EQUAL(raw_on(k, 0, WEIR__WIRE_OP__OST_READ, &ko, r->capa, 0), 0);
	weir__capa_rep__free_unpacked(r, NULL);
	weir_close(reader_fh);
	CU_ASSERT_EQUAL(th_cluster_umount_stop(k, kf), 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_capa_raw_object_ops_without_capability_refused),
		TH_TEST(test_capa_wrong_file_rights_mac_refused),
		TH_TEST(test_capa_renew_never_destroy_and_checks_permissions),
		TH_TEST(test_capa_expired_refused),
		TH_TEST(test_capa_seek_fallocate_fsync_refused),
		TH_TEST(test_capa_open_rights_and_renewal_by_handle),
		TH_TEST(test_capa_writer_renews_after_chmod_and_read_only_open),
		TH_TEST(test_capa_renewed_unseen_while_open),
		TH_TEST(test_capa_survive_mds_restart),
		TH_TEST(test_capa_keyless_oss_eagain_client_waits),
		TH_TEST_END,
	};
	return th_cunit_run("capa", suite_init, suite_clean, tests);
}
