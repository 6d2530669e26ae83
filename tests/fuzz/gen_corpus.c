/*
 * tests/fuzz/gen_corpus.c - write the generated seed corpora of the fuzz
 * harnesses: real protobuf-c messages, packed, as the harnesses read them.
 *
 * Usage: gen_corpus DIR   (make fuzz-corpus: DIR = tests/fuzz/corpus)
 * Writes DIR/mds/, DIR/oss/ (request records, tests/fuzz/fuzz.h: one seed
 * per opcode with a valid body, and sequences a client would send: create,
 * write, lock, HSM...), DIR/frame/ (one frame per opcode, request and
 * reply), DIR/net_server/ and DIR/net_client/ (frame streams with the
 * harnesses' option bytes), DIR/auth/ (handshakes and key files). Files are named "gen-*"; other seeds (found
 * crashes, S3 answers, config files) live beside them and are kept.
 * Output is deterministic: running it again changes nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fid.h"
#include "common/le.h"
#include "fuzz.h"
#include "weir.pb-c.h"

#define OST_IDX 5 /* the index fuzz_oss.c's OST has */
#define SEQ_BUF 65536

static const char *outdir;

static void write_file(const char *sub, const char *name, const void *buf, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", outdir, sub);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/gen-%s", outdir, sub, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* A sequence of request records being built. */
struct seq {
	uint8_t s_buf[SEQ_BUF];
	size_t s_len;
};

static void seq_add(struct seq *s, uint16_t op, const ProtobufCMessage *m, const void *bulk,
		    size_t bulk_len)
{
	uint8_t body[8192];
	size_t n = m ? protobuf_c_message_get_packed_size(m) : 0;
	if (n > sizeof(body))
		abort();
	if (m)
		protobuf_c_message_pack(m, body);
	size_t w = fz_rec_put(s->s_buf + s->s_len, sizeof(s->s_buf) - s->s_len, op, body, n, bulk,
			      bulk_len);
	if (!w)
		abort();
	s->s_len += w;
}

/* ------------------------------------------------------------------ messages */

static Weir__Cred root_cred = WEIR__CRED__INIT;
static Weir__Fid root_fid = WEIR__FID__INIT;

static Weir__Fid *fid(uint64_t seq, uint64_t oid)
{
	static Weir__Fid pool[64];
	static unsigned next;
	Weir__Fid *f = &pool[next++ % 64];
	weir__fid__init(f);
	f->seq = seq;
	f->oid = oid;
	return f;
}

/* The n-th FID the MDS gives a new file or directory (on a fresh MDT). */
#define NEW_FID(n) fid(WEIR_FID_SEQ_NORMAL, (n))
/*
 * The n-th FID the MDS replied during this input: fuzz_mds.c gives a Fid
 * with seq 0 and oid n that value (so does it with session and handle n).
 */
#define REF_FID(n) fid(0, (n))

#define PATHREQ(v, p)                                                                              \
	Weir__PathReq v = WEIR__PATH_REQ__INIT;                                                    \
	v.cred = &root_cred;                                                                       \
	v.at = &root_fid;                                                                          \
	v.path = (char *)(p)

static void add_connect(struct seq *s)
{
	Weir__ConnectReq r = WEIR__CONNECT_REQ__INIT;
	r.version = WEIR_FRAME_VERSION;
	r.client_name = (char *)"fuzz-client";
	seq_add(s, WEIR__WIRE_OP__MDS_CONNECT, &r.base, NULL, 0);
}

static void add_empty(struct seq *s, uint16_t op)
{
	Weir__Empty e = WEIR__EMPTY__INIT;
	seq_add(s, op, &e.base, NULL, 0);
}

static void add_register(struct seq *s, int32_t index)
{
	Weir__OstReg o = WEIR__OST_REG__INIT, *op = &o;
	o.uuid = (char *)"fuzz-ost-seed"; /* not one of fuzz_mds.c's own */
	o.index = index;
	o.total_bytes = 1ULL << 40;
	o.free_bytes = o.avail_bytes = 1ULL << 39;
	o.files = 1000000;
	o.files_free = 999000;
	o.fs_id = 2049;
	static uint8_t secret[32] = "fuzz-ost-seed secret, 32 bytes!";
	o.secret.data = secret;
	o.secret.len = sizeof(secret);
	Weir__OssRegisterReq r = WEIR__OSS_REGISTER_REQ__INIT;
	r.oss_addr = (char *)"127.0.0.1:9";
	r.n_osts = 1;
	r.osts = &op;
	seq_add(s, WEIR__WIRE_OP__MDS_OSS_REGISTER, &r.base, NULL, 0);
}

static void add_path(struct seq *s, uint16_t op, const char *path)
{
	PATHREQ(r, path);
	seq_add(s, op, &r.base, NULL, 0);
}

static void add_getattr(struct seq *s, Weir__Fid *f)
{
	Weir__FidReq r = WEIR__FID_REQ__INIT;
	r.cred = &root_cred;
	r.fid = f;
	seq_add(s, WEIR__WIRE_OP__MDS_GETATTR, &r.base, NULL, 0);
}

static void add_mkdir(struct seq *s, const char *path)
{
	Weir__MkdirReq r = WEIR__MKDIR_REQ__INIT;
	r.cred = &root_cred;
	r.at = &root_fid;
	r.path = (char *)path;
	r.mode = 0755;
	seq_add(s, WEIR__WIRE_OP__MDS_MKDIR, &r.base, NULL, 0);
}

/* an open; \a want: the creator's lease asked for (OpenReq.lease_want; 0:
 * none, and no lease_session either, as a client that asks nothing sends) */
static void add_open_lease(struct seq *s, const char *path, uint32_t flags, uint64_t session,
			   uint32_t want)
{
	Weir__OpenReq r = WEIR__OPEN_REQ__INIT;
	r.cred = &root_cred;
	r.at = &root_fid;
	r.path = (char *)path;
	r.flags = flags;
	r.mode = 0644;
	r.session = session;
	if (want) {
		r.lease_session = session;
		r.lease_want = want;
	}
	seq_add(s, WEIR__WIRE_OP__MDS_OPEN, &r.base, NULL, 0);
}

static void add_open(struct seq *s, const char *path, uint32_t flags, uint64_t session)
{
	add_open_lease(s, path, flags, session, 0);
}

static void add_close(struct seq *s, Weir__Fid *f, uint64_t handle, uint64_t size)
{
	Weir__CloseReq r = WEIR__CLOSE_REQ__INIT;
	r.cred = &root_cred;
	r.fid = f;
	r.handle = handle;
	r.has_size = size != 0;
	r.size = size;
	r.blocks = (size + 511) / 512;
	r.mtime_ns = 1700000000000000000LL;
	seq_add(s, WEIR__WIRE_OP__MDS_CLOSE, &r.base, NULL, 0);
}

static void add_setattr(struct seq *s, Weir__Fid *f, uint32_t valid, uint64_t size)
{
	Weir__SetattrReq r = WEIR__SETATTR_REQ__INIT;
	r.cred = &root_cred;
	r.fid = f;
	r.valid = valid;
	r.mode = 0600;
	r.uid = 1000;
	r.gid = 1000;
	r.size = size;
	r.atime_ns = 1600000000000000000LL;
	r.mtime_ns = 1600000000000000000LL;
	seq_add(s, WEIR__WIRE_OP__MDS_SETATTR, &r.base, NULL, 0);
}

static void add_readdir(struct seq *s, Weir__Fid *dir, uint64_t cookie)
{
	Weir__ReaddirReq r = WEIR__READDIR_REQ__INIT;
	r.cred = &root_cred;
	r.dir = dir;
	r.cookie = cookie;
	r.max_entries = 64;
	seq_add(s, WEIR__WIRE_OP__MDS_READDIR, &r.base, NULL, 0);
}

static void add_unlink(struct seq *s, const char *path, bool dir)
{
	Weir__UnlinkReq r = WEIR__UNLINK_REQ__INIT;
	r.cred = &root_cred;
	r.at = &root_fid;
	r.path = (char *)path;
	r.is_dir = dir;
	seq_add(s, WEIR__WIRE_OP__MDS_UNLINK, &r.base, NULL, 0);
}

static void add_rename(struct seq *s, const char *src, const char *dst, uint32_t flags)
{
	Weir__RenameReq r = WEIR__RENAME_REQ__INIT;
	r.cred = &root_cred;
	r.at = &root_fid;
	r.src = (char *)src;
	r.dst = (char *)dst;
	r.flags = flags;
	seq_add(s, WEIR__WIRE_OP__MDS_RENAME, &r.base, NULL, 0);
}

static void add_set_layout(struct seq *s, const char *path, uint32_t count, bool create)
{
	Weir__Layout lo = WEIR__LAYOUT__INIT;
	lo.pattern = 1;
	lo.stripe_size = 1 << 20;
	lo.stripe_count = count;
	lo.stripe_offset = -1;
	Weir__SetLayoutReq r = WEIR__SET_LAYOUT_REQ__INIT;
	r.cred = &root_cred;
	r.at = &root_fid;
	r.path = (char *)path;
	r.layout = &lo;
	r.create = create;
	r.mode = 0644;
	seq_add(s, WEIR__WIRE_OP__MDS_SET_LAYOUT, &r.base, NULL, 0);
}

static void add_sync(struct seq *s, Weir__Fid *f)
{
	Weir__SyncReq r = WEIR__SYNC_REQ__INIT;
	r.cred = &root_cred;
	r.fid = f;
	r.has_size = f != NULL;
	r.size = 4096;
	r.blocks = 8;
	seq_add(s, WEIR__WIRE_OP__MDS_SYNC, &r.base, NULL, 0);
}

static void add_link(struct seq *s, const char *src, const char *dst)
{
	Weir__LinkReq r = WEIR__LINK_REQ__INIT;
	r.cred = &root_cred;
	r.src_at = &root_fid;
	r.src = (char *)src;
	r.dst_at = &root_fid;
	r.dst = (char *)dst;
	seq_add(s, WEIR__WIRE_OP__MDS_LINK, &r.base, NULL, 0);
}

static void add_symlink(struct seq *s, const char *path, const char *target)
{
	Weir__SymlinkReq r = WEIR__SYMLINK_REQ__INIT;
	r.cred = &root_cred;
	r.at = &root_fid;
	r.path = (char *)path;
	r.target = (char *)target;
	seq_add(s, WEIR__WIRE_OP__MDS_SYMLINK, &r.base, NULL, 0);
}

static void add_mknod(struct seq *s, const char *path, uint32_t mode, uint64_t rdev)
{
	Weir__MknodReq r = WEIR__MKNOD_REQ__INIT;
	r.cred = &root_cred;
	r.at = &root_fid;
	r.path = (char *)path;
	r.mode = mode;
	r.rdev = rdev;
	seq_add(s, WEIR__WIRE_OP__MDS_MKNOD, &r.base, NULL, 0);
}

static void add_access(struct seq *s, const char *path, uint32_t mode)
{
	Weir__AccessReq r = WEIR__ACCESS_REQ__INIT;
	r.cred = &root_cred;
	r.at = &root_fid;
	r.path = (char *)path;
	r.mode = mode;
	seq_add(s, WEIR__WIRE_OP__MDS_ACCESS, &r.base, NULL, 0);
}

static void add_xattr(struct seq *s, uint16_t op, const char *path, const char *name,
		      const char *value, uint32_t xflags)
{
	Weir__XattrReq r = WEIR__XATTR_REQ__INIT;
	r.cred = &root_cred;
	r.at = &root_fid;
	r.path = (char *)path;
	r.name = (char *)name;
	if (value) {
		r.value.data = (uint8_t *)value;
		r.value.len = strlen(value);
	}
	r.xflags = xflags;
	seq_add(s, op, &r.base, NULL, 0);
}

static void add_lease(struct seq *s, uint16_t op, uint64_t session)
{
	Weir__LeaseReq r = WEIR__LEASE_REQ__INIT;
	r.session = session;
	seq_add(s, op, &r.base, NULL, 0);
}

static void add_lock(struct seq *s, uint16_t op, uint64_t session, Weir__Fid *f, uint64_t handle,
		     uint32_t cls, uint32_t type, bool wait)
{
	Weir__LockReq r = WEIR__LOCK_REQ__INIT;
	r.session = session;
	r.fid = f;
	r.handle = handle;
	r.lock_class = cls;
	r.type = type;
	r.start = 0;
	r.len = 4096;
	r.pid = 4242;
	r.wait = wait;
	r.token = 7;
	seq_add(s, op, &r.base, NULL, 0);
}

/* MDS_REPLAY as a client sends it after a restart: one open, one lock */
static void add_replay(struct seq *s, uint64_t session, Weir__Fid *f)
{
	Weir__ReplayOpen o = WEIR__REPLAY_OPEN__INIT, *op = &o;
	Weir__ReplayLock l = WEIR__REPLAY_LOCK__INIT, *lp = &l;
	Weir__ReplayReq r = WEIR__REPLAY_REQ__INIT;
	o.fid = f;
	o.handle = 1;
	o.flags = WEIR__OPEN_FLAG__OF_READ | WEIR__OPEN_FLAG__OF_WRITE;
	l.fid = f;
	l.handle = 1;
	l.lock_class = WEIR__LOCK_CLASS__LC_POSIX;
	l.type = WEIR__LOCK_TYPE__LT_WRLCK;
	l.len = 4096;
	l.pid = 4242;
	r.session = session;
	r.n_opens = 1;
	r.opens = &op;
	r.n_locks = 1;
	r.locks = &lp;
	r.done = true;
	r.old_session = session + 1;
	seq_add(s, WEIR__WIRE_OP__MDS_REPLAY, &r.base, NULL, 0);
}

/* MDS_REPLAY's first part after a host crash: a kept mkdir, then txns_last */
static void add_replay_txn(struct seq *s, uint64_t session, Weir__Fid *f)
{
	Weir__MkdirReq mk = WEIR__MKDIR_REQ__INIT;
	mk.cred = &root_cred;
	mk.at = &root_fid;
	mk.path = "kept";
	mk.mode = 0755;
	uint8_t body[256], xid[WEIR_XID_HDR_SIZE];
	size_t len = protobuf_c_message_pack(&mk.base, body);
	struct weir_xid_hdr x = { .xh_xid = 3, .xh_tag = 1 };
	memset(x.xh_uuid, 0x5a, sizeof(x.xh_uuid));
	weir_xid_encode(&x, xid);
	uint32_t osts[1] = { 0 };
	Weir__Layout lo = WEIR__LAYOUT__INIT;
	lo.pattern = 1;
	lo.stripe_size = 1 << 20;
	lo.stripe_count = 1;
	lo.n_osts = 1;
	lo.osts = osts;
	Weir__ReplayTxn t = WEIR__REPLAY_TXN__INIT, *tp = &t;
	t.op = WEIR__WIRE_OP__MDS_MKDIR;
	t.xid.data = xid;
	t.xid.len = sizeof(xid);
	t.body.data = body;
	t.body.len = len;
	t.transno = 9;
	t.fid = f;
	t.layout = &lo;
	Weir__ReplayReq r = WEIR__REPLAY_REQ__INIT;
	r.session = session;
	r.old_session = session + 1;
	r.n_txns = 1;
	r.txns = &tp;
	r.txns_last = true;
	seq_add(s, WEIR__WIRE_OP__MDS_REPLAY, &r.base, NULL, 0);
}

static void add_capa_renew(struct seq *s, Weir__Fid *f, uint64_t handle, uint64_t session)
{
	Weir__CapaReq r = WEIR__CAPA_REQ__INIT;
	r.cred = &root_cred;
	r.fid = f;
	r.rights = 0xa; /* write and getattr: what an open for writing has */
	r.handle = handle;
	r.session = session;
	seq_add(s, WEIR__WIRE_OP__MDS_CAPA_RENEW, &r.base, NULL, 0);
}

static void add_lease_poll(struct seq *s, uint64_t session, uint64_t ack, uint32_t wait_ms)
{
	Weir__LeasePollReq r = WEIR__LEASE_POLL_REQ__INIT;
	r.session = session;
	r.acks = &ack;
	r.n_acks = ack ? 1 : 0;
	r.wait_ms = wait_ms;
	seq_add(s, WEIR__WIRE_OP__MDS_LEASE_POLL, &r.base, NULL, 0);
}

static void add_getattr_lease(struct seq *s, Weir__Fid *f, uint64_t session, uint32_t want)
{
	Weir__FidReq r = WEIR__FID_REQ__INIT;
	r.cred = &root_cred;
	r.fid = f;
	r.lease_session = session;
	r.lease_want = want;
	seq_add(s, WEIR__WIRE_OP__MDS_GETATTR, &r.base, NULL, 0);
}

/* a LOOKUP of \a path that asks for its walk, leased to session reference \a session */
static void add_lookup_walk(struct seq *s, const char *path, uint64_t session, uint32_t want)
{
	PATHREQ(r, path);
	r.lease_session = session;
	r.lease_want = want;
	r.walk = true;
	seq_add(s, WEIR__WIRE_OP__MDS_LOOKUP, &r.base, NULL, 0);
}

/* readdirplus with leases asked for session reference \a session */
static void add_readdir_plus(struct seq *s, Weir__Fid *dir, uint64_t session, uint32_t want)
{
	Weir__ReaddirReq r = WEIR__READDIR_REQ__INIT;
	r.cred = &root_cred;
	r.dir = dir;
	r.max_entries = 64;
	r.plus = true;
	r.lease_session = session;
	r.lease_want = want;
	seq_add(s, WEIR__WIRE_OP__MDS_READDIR, &r.base, NULL, 0);
}

static void add_dra(struct seq *s, uint16_t op, const char *path)
{
	Weir__DraReq r = WEIR__DRA_REQ__INIT;
	r.cred = &root_cred;
	r.at = &root_fid;
	r.path = (char *)path;
	r.bucket = (char *)"fuzz-bucket";
	r.prefix = (char *)"data/";
	r.flags = WEIR__DRA_FLAG__DF_AUTO_EXPORT;
	seq_add(s, op, &r.base, NULL, 0);
}

static void add_import(struct seq *s, Weir__Fid *dir)
{
	Weir__HsmImportEnt e1 = WEIR__HSM_IMPORT_ENT__INIT, e2 = WEIR__HSM_IMPORT_ENT__INIT;
	Weir__HsmImportEnt *ents[2] = { &e1, &e2 };
	e1.name = (char *)"a.dat";
	e1.size = 123456;
	e1.mtime_ns = 1700000000000000000LL;
	e1.etag = (char *)"\"0123456789abcdef0123456789abcdef\"";
	e1.key = (char *)"data/a.dat";
	e2.name = (char *)"b.dat";
	e2.size = 0;
	e2.etag = (char *)"\"d41d8cd98f00b204e9800998ecf8427e\"";
	e2.key = (char *)"data/b.dat";
	e2.deleted = true;
	Weir__HsmImportReq r = WEIR__HSM_IMPORT_REQ__INIT;
	r.cred = &root_cred;
	r.dra = 1;
	r.dir = dir;
	r.n_ents = 2;
	r.ents = ents;
	r.mode = 0644;
	seq_add(s, WEIR__WIRE_OP__MDS_HSM_IMPORT, &r.base, NULL, 0);
}

static void add_hsm_request(struct seq *s, uint32_t action, Weir__Fid *f)
{
	Weir__HsmRequestReq r = WEIR__HSM_REQUEST_REQ__INIT;
	r.cred = &root_cred;
	r.action = action;
	r.n_fids = 1;
	r.fids = &f;
	seq_add(s, WEIR__WIRE_OP__MDS_HSM_REQUEST, &r.base, NULL, 0);
}

static void add_hsm_state(struct seq *s, const char *path, Weir__Fid *f)
{
	Weir__HsmStateReq r = WEIR__HSM_STATE_REQ__INIT;
	r.cred = &root_cred;
	r.at = &root_fid;
	r.path = (char *)path;
	r.fid = f;
	seq_add(s, WEIR__WIRE_OP__MDS_HSM_STATE, &r.base, NULL, 0);
}

static void add_hsm_queue(struct seq *s)
{
	uint64_t ids[2] = { 1, 2 };
	Weir__HsmQueueReq r = WEIR__HSM_QUEUE_REQ__INIT;
	r.n_ids = 2;
	r.ids = ids;
	seq_add(s, WEIR__WIRE_OP__MDS_HSM_QUEUE, &r.base, NULL, 0);
}

static void add_restore_wait(struct seq *s, Weir__Fid *f)
{
	Weir__HsmRangeReq r = WEIR__HSM_RANGE_REQ__INIT;
	r.cred = &root_cred;
	r.fid = f;
	r.offset = 0;
	r.length = 65536;
	seq_add(s, WEIR__WIRE_OP__MDS_HSM_RESTORE_WAIT, &r.base, NULL, 0);
}

static void add_fetch(struct seq *s, uint64_t session)
{
	Weir__HsmFetchReq r = WEIR__HSM_FETCH_REQ__INIT;
	r.agent = (char *)"fuzz-agent:1";
	r.session = session;
	r.max = 4;
	r.wait_ms = 0;
	seq_add(s, WEIR__WIRE_OP__MDS_HSM_AGENT_FETCH, &r.base, NULL, 0);
}

static void add_progress(struct seq *s, uint64_t id, uint64_t token)
{
	Weir__HsmProgressReq r = WEIR__HSM_PROGRESS_REQ__INIT;
	r.id = id;
	r.offset = 0;
	r.length = 65536;
	r.bytes_done = 65536;
	r.upload_id = (char *)"upload-1";
	r.token = token;
	seq_add(s, WEIR__WIRE_OP__MDS_HSM_AGENT_PROGRESS, &r.base, NULL, 0);
}

static void add_done(struct seq *s, uint64_t id, int32_t rc, uint64_t token)
{
	Weir__HsmDoneReq r = WEIR__HSM_DONE_REQ__INIT;
	r.id = id;
	r.rc = rc;
	r.etag = (char *)"\"0123456789abcdef0123456789abcdef\"";
	r.size = 123456;
	r.mtime_ns = 1700000000000000000LL;
	r.message = (char *)"fuzz";
	r.token = token;
	seq_add(s, WEIR__WIRE_OP__MDS_HSM_AGENT_DONE, &r.base, NULL, 0);
}

/* ------------------------------------------------------------------ OSS messages */

/*
 * A capability for object \a oid's file with every right: its MAC, expiry
 * (0) and key generation (0) are left for fuzz_oss.c to fill in (it signs a
 * capability whose MAC is empty with the key it gave its OSS).
 */
static Weir__Capa *capa_all(uint64_t oid)
{
	static Weir__Capa pool[16];
	static unsigned next;
	Weir__Capa *c = &pool[next++ % 16];
	weir__capa__init(c);
	c->fid = fid(WEIR_FID_SEQ_NORMAL, oid);
	c->rights = 0x1f;
	return c;
}

static void add_obj(struct seq *s, uint16_t op, uint64_t oid, uint32_t flags)
{
	Weir__ObjReq r = WEIR__OBJ_REQ__INIT;
	r.ost = OST_IDX;
	r.fid = fid(WEIR_FID_SEQ_NORMAL, oid);
	r.stripe = 0;
	r.flags = flags;
	r.capa = capa_all(oid);
	seq_add(s, op, &r.base, NULL, 0);
}

/* OST_DESTROY_BATCH of objects oid, oid + 1, ... (n of them, at most 8). */
static void add_destroy_batch(struct seq *s, uint64_t oid, size_t n)
{
	Weir__ObjReq r[8], *rp[8];
	Weir__ObjDestroyBatchReq b = WEIR__OBJ_DESTROY_BATCH_REQ__INIT;
	for (size_t i = 0; i < n && i < 8; i++) {
		weir__obj_req__init(&r[i]);
		r[i].ost = OST_IDX;
		r[i].fid = fid(WEIR_FID_SEQ_NORMAL, oid + i);
		r[i].capa = capa_all(oid + i);
		rp[i] = &r[i];
	}
	b.n_objs = n < 8 ? n : 8;
	b.objs = rp;
	seq_add(s, WEIR__WIRE_OP__OST_DESTROY_BATCH, &b.base, NULL, 0);
}

static void add_io(struct seq *s, uint16_t op, uint64_t oid, uint64_t off, const char *data,
		   uint64_t len)
{
	Weir__ObjIoReq r = WEIR__OBJ_IO_REQ__INIT;
	r.ost = OST_IDX;
	r.fid = fid(WEIR_FID_SEQ_NORMAL, oid);
	r.stripe = 0;
	r.off = off;
	r.len = data ? strlen(data) : len;
	r.capa = capa_all(oid);
	seq_add(s, op, &r.base, data, data ? strlen(data) : 0);
}

static void add_trunc(struct seq *s, uint64_t oid, uint64_t size, uint64_t if_size)
{
	Weir__ObjTruncReq r = WEIR__OBJ_TRUNC_REQ__INIT;
	r.ost = OST_IDX;
	r.fid = fid(WEIR_FID_SEQ_NORMAL, oid);
	r.size = size;
	r.if_size = if_size;
	r.capa = capa_all(oid);
	seq_add(s, WEIR__WIRE_OP__OST_TRUNCATE, &r.base, NULL, 0);
}

static void add_falloc(struct seq *s, uint64_t oid, uint64_t off, uint64_t len, uint32_t mode)
{
	Weir__ObjFallocReq r = WEIR__OBJ_FALLOC_REQ__INIT;
	r.ost = OST_IDX;
	r.fid = fid(WEIR_FID_SEQ_NORMAL, oid);
	r.off = off;
	r.len = len;
	r.mode = mode;
	r.capa = capa_all(oid);
	seq_add(s, WEIR__WIRE_OP__OST_FALLOCATE, &r.base, NULL, 0);
}

static void add_seek(struct seq *s, uint64_t oid, uint64_t off, uint32_t whence)
{
	Weir__ObjSeekReq r = WEIR__OBJ_SEEK_REQ__INIT;
	r.ost = OST_IDX;
	r.fid = fid(WEIR_FID_SEQ_NORMAL, oid);
	r.off = off;
	r.whence = whence;
	r.capa = capa_all(oid);
	seq_add(s, WEIR__WIRE_OP__OST_SEEK, &r.base, NULL, 0);
}

static void add_ost_statfs(struct seq *s)
{
	Weir__OstStatfsReq r = WEIR__OST_STATFS_REQ__INIT;
	r.ost = OST_IDX;
	seq_add(s, WEIR__WIRE_OP__OST_STATFS, &r.base, NULL, 0);
}

/* ------------------------------------------------------------------ corpora */

static struct seq sq;

static void seq_begin(void)
{
	sq.s_len = 0;
}

static void seq_write(const char *sub, const char *name)
{
	write_file(sub, name, sq.s_buf, sq.s_len);
}

/*
 * Write the sequence again as sent by identity \a id of fuzz_mds.c (the
 * high byte of every record's opcode: 2 a mapped user, 4 a squashed guest,
 * 6 a stranger), as NAME-idN.
 */
static void seq_write_as(const char *name, unsigned id)
{
	char n[96];
	const uint8_t *p = sq.s_buf;
	size_t left = sq.s_len;
	struct fz_rec r;
	while (fz_rec_next(&p, &left, &r)) {
		uint8_t *op = (uint8_t *)r.r_body - FZ_REC_HDR;
		op[1] = (uint8_t)id;
	}
	snprintf(n, sizeof(n), "%s-id%u", name, id);
	write_file("mds", n, sq.s_buf, sq.s_len);
}

/*
 * One seed per MDS opcode (a valid body, against a fresh MDT's root), then
 * sequences, whose sessions, handles, FIDs and HSM ids are references to
 * what earlier requests of the same input created (fuzz_mds.c).
 */
static void gen_mds(void)
{
	struct seq *s = &sq;

#define ONE(name, stmt)                                                                            \
	do {                                                                                       \
		seq_begin();                                                                       \
		stmt;                                                                              \
		seq_write("mds", name);                                                            \
	} while (0)
	ONE("connect", add_connect(s));
	ONE("get_clustermap", add_empty(s, WEIR__WIRE_OP__MDS_GET_CLUSTERMAP));
	ONE("oss_register", (add_register(s, -1), add_register(s, 0)));
	ONE("lookup", add_path(s, WEIR__WIRE_OP__MDS_LOOKUP, ""));
	ONE("getattr", add_getattr(s, &root_fid));
	ONE("setattr", add_setattr(s, &root_fid, WEIR__SETATTR_VALID__SA_MODE, 0));
	ONE("open", add_open(s, "f", WEIR__OPEN_FLAG__OF_CREAT | WEIR__OPEN_FLAG__OF_WRITE, 0));
	ONE("close", add_close(s, NEW_FID(1), 1, 0));
	ONE("mkdir", add_mkdir(s, "d"));
	ONE("readdir", add_readdir(s, &root_fid, 0));
	ONE("unlink", add_unlink(s, "f", false));
	ONE("rename", add_rename(s, "f", "g", 0));
	ONE("statfs", add_empty(s, WEIR__WIRE_OP__MDS_STATFS));
	ONE("set_layout", add_set_layout(s, "s", 1, true));
	ONE("sync", add_sync(s, NULL));
	ONE("link", add_link(s, "f", "h"));
	ONE("symlink", add_symlink(s, "l", "f"));
	ONE("readlink", add_path(s, WEIR__WIRE_OP__MDS_READLINK, "l"));
	ONE("mknod", add_mknod(s, "p", 010644, 0));
	ONE("access", add_access(s, "", 7));
	ONE("setxattr", add_xattr(s, WEIR__WIRE_OP__MDS_SETXATTR, "", "user.a", "v", 0));
	ONE("getxattr", add_xattr(s, WEIR__WIRE_OP__MDS_GETXATTR, "", "user.a", NULL, 0));
	ONE("listxattr", add_xattr(s, WEIR__WIRE_OP__MDS_LISTXATTR, "", NULL, NULL, 0));
	ONE("removexattr", add_xattr(s, WEIR__WIRE_OP__MDS_REMOVEXATTR, "", "user.a", NULL, 0));
	ONE("lease_renew", add_lease(s, WEIR__WIRE_OP__MDS_LEASE_RENEW, 1));
	ONE("disconnect", add_lease(s, WEIR__WIRE_OP__MDS_DISCONNECT, 1));
	ONE("lock", add_lock(s, WEIR__WIRE_OP__MDS_LOCK, 1, NEW_FID(1), 1, 0, 2, false));
	ONE("replay", add_replay(s, 1, NEW_FID(1)));
	ONE("replay_txn", add_replay_txn(s, 1, NEW_FID(1)));
	ONE("lock_test", add_lock(s, WEIR__WIRE_OP__MDS_LOCK_TEST, 1, NEW_FID(1), 1, 0, 1, false));
	ONE("lock_cancel",
	    add_lock(s, WEIR__WIRE_OP__MDS_LOCK_CANCEL, 1, NEW_FID(1), 1, 0, 0, false));
	ONE("capa_renew", add_capa_renew(s, NEW_FID(1), 0, 0));
	ONE("lease_poll", add_lease_poll(s, 1, 1, 0));
	ONE("dra_create", add_dra(s, WEIR__WIRE_OP__MDS_DRA_CREATE, "d"));
	ONE("dra_list", add_empty(s, WEIR__WIRE_OP__MDS_DRA_LIST));
	ONE("dra_delete", add_dra(s, WEIR__WIRE_OP__MDS_DRA_DELETE, "d"));
	ONE("hsm_import", add_import(s, NEW_FID(1)));
	ONE("hsm_request", add_hsm_request(s, WEIR__HSM_ACTION__HA_ARCHIVE, NEW_FID(1)));
	ONE("hsm_state", add_hsm_state(s, "f", NULL));
	ONE("hsm_queue", add_hsm_queue(s));
	ONE("hsm_restore_wait", add_restore_wait(s, NEW_FID(1)));
	ONE("hsm_agent_fetch", add_fetch(s, 1));
	ONE("hsm_agent_progress", add_progress(s, 1, 1));
	ONE("hsm_agent_done", add_done(s, 1, 0, 1));
	ONE("ping", seq_add(s, WEIR__WIRE_OP__PING, NULL, "ping!", 5));
	ONE("unknown_op", seq_add(s, 99, NULL, NULL, 0));

	/* sequences: what clients do */
	seq_begin();
	add_mkdir(s, "dir");
	add_path(s, WEIR__WIRE_OP__MDS_LOOKUP, "dir");
	add_open(s, "dir/file", WEIR__OPEN_FLAG__OF_CREAT | WEIR__OPEN_FLAG__OF_WRITE, 0);
	add_setattr(s, REF_FID(2), WEIR__SETATTR_VALID__SA_SIZE | WEIR__SETATTR_VALID__SA_MTIME,
		    8192);
	add_close(s, REF_FID(2), 1, 8192);
	add_readdir(s, REF_FID(1), 0);
	add_getattr(s, REF_FID(2));
	add_rename(s, "dir/file", "dir/file2", WEIR__RENAME_FLAG__RF_NOREPLACE);
	add_link(s, "dir/file2", "dir/file3");
	add_unlink(s, "dir/file2", false);
	add_unlink(s, "dir/file3", false);
	add_unlink(s, "dir", true);
	seq_write("mds", "seq-namespace");
	seq_write_as("seq-namespace", 2);
	seq_write_as("seq-namespace", 4);

	seq_begin();
	add_open(s, "x", WEIR__OPEN_FLAG__OF_CREAT | WEIR__OPEN_FLAG__OF_WRITE, 0);
	add_xattr(s, WEIR__WIRE_OP__MDS_SETXATTR, "x", "user.one", "1",
		  WEIR__XATTR_FLAG__XF_CREATE);
	add_xattr(s, WEIR__WIRE_OP__MDS_SETXATTR, "x", "trusted.two", "22",
		  WEIR__XATTR_FLAG__XF_NONE);
	add_xattr(s, WEIR__WIRE_OP__MDS_SETXATTR, "x", "user.one", "111",
		  WEIR__XATTR_FLAG__XF_REPLACE);
	add_xattr(s, WEIR__WIRE_OP__MDS_LISTXATTR, "x", NULL, NULL, 0);
	add_xattr(s, WEIR__WIRE_OP__MDS_GETXATTR, "x", "user.one", NULL, 0);
	add_xattr(s, WEIR__WIRE_OP__MDS_REMOVEXATTR, "x", "trusted.two", NULL, 0);
	add_symlink(s, "x.lnk", "x");
	add_path(s, WEIR__WIRE_OP__MDS_READLINK, "x.lnk");
	add_access(s, "x.lnk", 4);
	add_mknod(s, "x.blk", 060600, 0x0801);
	add_mknod(s, "x.sock", 0140600, 0);
	seq_write("mds", "seq-xattr-links");
	seq_write_as("seq-xattr-links", 2);
	seq_write_as("seq-xattr-links", 4);

	seq_begin();
	add_register(s, -1);
	add_register(s, 0);
	add_empty(s, WEIR__WIRE_OP__MDS_GET_CLUSTERMAP);
	add_set_layout(s, "striped", 1, true);
	add_open(s, "striped",
		 WEIR__OPEN_FLAG__OF_READ | WEIR__OPEN_FLAG__OF_WRITE | WEIR__OPEN_FLAG__OF_TRUNC,
		 0);
	add_sync(s, REF_FID(1));
	add_empty(s, WEIR__WIRE_OP__MDS_STATFS);
	add_unlink(s, "striped", false);
	seq_write("mds", "seq-ost-layout");

	seq_begin();
	add_connect(s);
	add_open(s, "locked", WEIR__OPEN_FLAG__OF_CREAT | WEIR__OPEN_FLAG__OF_WRITE, 1);
	add_lease(s, WEIR__WIRE_OP__MDS_LEASE_RENEW, 1);
	add_lock(s, WEIR__WIRE_OP__MDS_LOCK, 1, REF_FID(1), 1, WEIR__LOCK_CLASS__LC_POSIX,
		 WEIR__LOCK_TYPE__LT_WRLCK, false);
	add_lock(s, WEIR__WIRE_OP__MDS_LOCK_TEST, 1, REF_FID(1), 1, WEIR__LOCK_CLASS__LC_OFD,
		 WEIR__LOCK_TYPE__LT_RDLCK, false);
	add_lock(s, WEIR__WIRE_OP__MDS_LOCK, 1, REF_FID(1), 1, WEIR__LOCK_CLASS__LC_FLOCK,
		 WEIR__LOCK_TYPE__LT_RDLCK, true);
	add_lock(s, WEIR__WIRE_OP__MDS_LOCK, 1, REF_FID(1), 1, WEIR__LOCK_CLASS__LC_APPEND,
		 WEIR__LOCK_TYPE__LT_WRLCK, false);
	add_lock(s, WEIR__WIRE_OP__MDS_LOCK_CANCEL, 1, REF_FID(1), 1, 0, 0, false);
	add_lock(s, WEIR__WIRE_OP__MDS_LOCK, 1, REF_FID(1), 1, WEIR__LOCK_CLASS__LC_POSIX,
		 WEIR__LOCK_TYPE__LT_UNLCK, false);
	add_capa_renew(s, REF_FID(1), 1, 1);
	add_close(s, REF_FID(1), 1, 0);
	add_lease(s, WEIR__WIRE_OP__MDS_DISCONNECT, 1);
	seq_write("mds", "seq-session-locks");

	/* metadata leases: a lease on a new file, a change of it, the callback polled */
	seq_begin();
	add_connect(s);
	add_open(s, "leased", WEIR__OPEN_FLAG__OF_CREAT | WEIR__OPEN_FLAG__OF_WRITE, 1);
	add_close(s, REF_FID(1), 1, 0);
	add_getattr_lease(s, REF_FID(1), 1, 7);
	add_setattr(s, REF_FID(1), WEIR__SETATTR_VALID__SA_MODE, 0);
	add_lease_poll(s, 1, 0, 0);
	add_lease_poll(s, 1, 1, 10);
	add_lease(s, WEIR__WIRE_OP__MDS_DISCONNECT, 1);
	seq_write("mds", "seq-mdlease");

	/* readdirplus: attributes and leases on the entries, one changed, polled */
	seq_begin();
	add_connect(s);
	add_open(s, "plus", WEIR__OPEN_FLAG__OF_CREAT | WEIR__OPEN_FLAG__OF_WRITE, 1);
	add_close(s, REF_FID(1), 1, 0);
	add_mkdir(s, "plusd");
	add_readdir_plus(s, &root_fid, 1, 7);
	add_setattr(s, REF_FID(1), WEIR__SETATTR_VALID__SA_MODE, 0);
	add_lease_poll(s, 1, 0, 0);
	add_lease_poll(s, 1, 1, 10);
	add_lease(s, WEIR__WIRE_OP__MDS_DISCONNECT, 1);
	seq_write("mds", "seq-readdirplus");

	/* path walks: the directories searched leased, one changed, polled */
	seq_begin();
	add_connect(s);
	add_mkdir(s, "walkd");
	add_open(s, "walkd/f", WEIR__OPEN_FLAG__OF_CREAT | WEIR__OPEN_FLAG__OF_WRITE, 1);
	add_close(s, REF_FID(1), 1, 0);
	add_lookup_walk(s, "walkd/f", 1, 7);
	add_lookup_walk(s, "/walkd//f", 1, 3);
	add_lookup_walk(s, "walkd/../walkd/f", 1, 7);
	add_lookup_walk(s, "walkd/nope", 1, 7);
	add_unlink(s, "walkd/f", false);
	add_lease_poll(s, 1, 0, 0);
	add_lease(s, WEIR__WIRE_OP__MDS_DISCONNECT, 1);
	seq_write("mds", "seq-walk");

	/* the creator's lease: a create for writing leased, opened again for
	 * writing (noted as a change of ATTR), polled, closed */
	seq_begin();
	add_connect(s);
	add_open_lease(s, "crl", WEIR__OPEN_FLAG__OF_CREAT | WEIR__OPEN_FLAG__OF_EXCL |
				 WEIR__OPEN_FLAG__OF_WRITE, 1, 7);
	add_open_lease(s, "crl", WEIR__OPEN_FLAG__OF_CREAT | WEIR__OPEN_FLAG__OF_WRITE, 1, 2);
	add_open_lease(s, "crl-ro", WEIR__OPEN_FLAG__OF_CREAT | WEIR__OPEN_FLAG__OF_READ, 1, 2);
	add_lease_poll(s, 1, 0, 0);
	add_close(s, REF_FID(1), 1, 0);
	add_close(s, REF_FID(1), 2, 0);
	add_lease(s, WEIR__WIRE_OP__MDS_DISCONNECT, 1);
	seq_write("mds", "seq-creator-lease");
	seq_write_as("seq-session-locks", 2);
	seq_write_as("seq-session-locks", 4);

	seq_begin();
	add_connect(s);
	add_mkdir(s, "tier");
	add_dra(s, WEIR__WIRE_OP__MDS_DRA_CREATE, "tier");
	add_empty(s, WEIR__WIRE_OP__MDS_DRA_LIST);
	add_import(s, REF_FID(1));
	add_hsm_state(s, "tier/a.dat", NULL);
	add_restore_wait(s, REF_FID(2));
	add_hsm_request(s, WEIR__HSM_ACTION__HA_RESTORE, REF_FID(2));
	add_hsm_queue(s);
	add_fetch(s, 1);
	add_progress(s, 1, 1);
	add_done(s, 1, 0, 1);
	add_hsm_request(s, WEIR__HSM_ACTION__HA_RELEASE, REF_FID(2));
	add_dra(s, WEIR__WIRE_OP__MDS_DRA_DELETE, "tier");
	seq_write("mds", "seq-hsm");
	seq_write_as("seq-hsm", 2);
	seq_write_as("seq-hsm", 4);
	seq_write_as("seq-hsm", 6);
#undef ONE
}

static void gen_oss(void)
{
	struct seq *s = &sq;
#define ONE(name, stmt)                                                                            \
	do {                                                                                       \
		seq_begin();                                                                       \
		stmt;                                                                              \
		seq_write("oss", name);                                                            \
	} while (0)
	ONE("write", add_io(s, WEIR__WIRE_OP__OST_WRITE, 1, 0, "hello, object", 0));
	ONE("read", add_io(s, WEIR__WIRE_OP__OST_READ, 1, 0, NULL, 4096));
	ONE("getattr", add_obj(s, WEIR__WIRE_OP__OST_GETATTR, 1, 0));
	ONE("truncate", add_trunc(s, 1, 100000, 0));
	ONE("fsync", add_obj(s, WEIR__WIRE_OP__OST_FSYNC, 1, 1));
	ONE("destroy", add_obj(s, WEIR__WIRE_OP__OST_DESTROY, 1, 0));
	ONE("destroy_batch", add_destroy_batch(s, 1, 3));
	ONE("statfs", add_ost_statfs(s));
	ONE("fallocate", add_falloc(s, 1, 0, 65536, 0));
	ONE("seek", add_seek(s, 1, 0, WEIR__SEEK_WHENCE__SK_DATA));
	ONE("ping", seq_add(s, WEIR__WIRE_OP__PING, NULL, "ping!", 5));
	ONE("unknown_op", seq_add(s, 99, NULL, NULL, 0));

	seq_begin();
	add_io(s, WEIR__WIRE_OP__OST_WRITE, 2, 0, "first block of data", 0);
	add_io(s, WEIR__WIRE_OP__OST_WRITE, 2, (1ULL << 40) - 4, "across a 1 TiB segment", 0);
	add_io(s, WEIR__WIRE_OP__OST_READ, 2, (1ULL << 40) - 8, NULL, 64);
	add_obj(s, WEIR__WIRE_OP__OST_GETATTR, 2, 0);
	add_seek(s, 2, 100, WEIR__SEEK_WHENCE__SK_HOLE);
	add_seek(s, 2, 100, WEIR__SEEK_WHENCE__SK_DATA);
	add_falloc(s, 2, 4096, 8192,
		   WEIR__FALLOC_FLAG__FA_PUNCH_HOLE | WEIR__FALLOC_FLAG__FA_KEEP_SIZE);
	add_trunc(s, 2, 10, 0);
	add_obj(s, WEIR__WIRE_OP__OST_FSYNC, 2, 0);
	add_io(s, WEIR__WIRE_OP__OST_READ, 2, 0, NULL, 1 << 20);
	add_obj(s, WEIR__WIRE_OP__OST_DESTROY, 2, 0);
	add_io(s, WEIR__WIRE_OP__OST_READ, 2, 0, NULL, 16);
	seq_write("oss", "seq-object");

	/* what an outsider sends: no capability, a forged one, one for another file */
	seq_begin();
	{
		Weir__ObjIoReq r = WEIR__OBJ_IO_REQ__INIT;
		static uint8_t mac[32] = "not the MAC of this capability!";
		r.ost = OST_IDX;
		r.fid = fid(WEIR_FID_SEQ_NORMAL, 4);
		r.len = 4;
		seq_add(s, WEIR__WIRE_OP__OST_WRITE, &r.base, "evil", 4);
		r.capa = capa_all(4);
		r.capa->mac.data = mac;
		r.capa->mac.len = sizeof(mac);
		r.capa->expiry_s = 4102444800; /* 2100 */
		r.capa->key_gen = 1;
		seq_add(s, WEIR__WIRE_OP__OST_WRITE, &r.base, "evil", 4);
		r.capa = capa_all(5);
		seq_add(s, WEIR__WIRE_OP__OST_WRITE, &r.base, "evil", 4);
	}
	seq_write("oss", "seq-capa-refused");

	seq_begin();
	add_io(s, WEIR__WIRE_OP__OST_WRITE, 3, 1000, "grow", 0);
	add_trunc(s, 3, 0, 1004); /* undo a write's growth, as a client does */
	add_falloc(s, 3, 0, 4096, WEIR__FALLOC_FLAG__FA_KEEP_SIZE);
	add_ost_statfs(s);
	add_obj(s, WEIR__WIRE_OP__OST_DESTROY, 3, 0);
	seq_write("oss", "seq-undo");
#undef ONE
}

/* A whole frame: header, body, bulk. \return its length. */
static size_t frame_of(uint8_t *out, size_t cap, uint16_t op, uint32_t flags, uint64_t reqid,
		       int32_t status, const uint8_t *body, size_t body_len, const uint8_t *bulk,
		       size_t bulk_len)
{
	if (WEIR_FRAME_HDR_SIZE + body_len + bulk_len > cap)
		abort();
	struct weir_frame_hdr h = {
		.fh_opcode = op,
		.fh_flags = flags,
		.fh_status = status,
		.fh_reqid = reqid,
		.fh_body_len = (uint32_t)body_len,
		.fh_bulk_len = bulk_len,
	};
	weir_frame_encode(&h, out);
	if (body_len)
		memcpy(out + WEIR_FRAME_HDR_SIZE, body, body_len);
	if (bulk_len)
		memcpy(out + WEIR_FRAME_HDR_SIZE + body_len, bulk, bulk_len);
	return WEIR_FRAME_HDR_SIZE + body_len + bulk_len;
}

static void gen_server_keyed(const uint8_t *stream, size_t slen);

/*
 * The frames of every single-request seed of mds/ and oss/ (the gen-<name>
 * files just written): for the frame and net_server harnesses.
 */
static void gen_frames(void)
{
	static uint8_t stream[SEQ_BUF], buf[SEQ_BUF];
	size_t slen = 0;
	uint64_t reqid = 1;
	const char *subs[] = { "mds", "oss" };
	static const char *names[] = { "connect",
				      "get_clustermap",
				      "oss_register",
				      "lookup",
				      "getattr",
				      "setattr",
				      "open",
				      "close",
				      "mkdir",
				      "readdir",
				      "unlink",
				      "rename",
				      "statfs",
				      "set_layout",
				      "sync",
				      "link",
				      "symlink",
				      "readlink",
				      "mknod",
				      "access",
				      "setxattr",
				      "getxattr",
				      "listxattr",
				      "removexattr",
				      "lease_renew",
				      "disconnect",
				      "lock",
				      "lock_test",
				      "lock_cancel",
				      "dra_create",
				      "dra_list",
				      "dra_delete",
				      "hsm_import",
				      "hsm_request",
				      "hsm_state",
				      "hsm_queue",
				      "hsm_restore_wait",
				      "hsm_agent_fetch",
				      "hsm_agent_progress",
				      "hsm_agent_done",
				      "ping",
				      "write",
				      "read",
				      "truncate",
				      "fsync",
				      "destroy",
				      "fallocate",
				      "seek",
				      NULL };
	for (size_t si = 0; si < 2; si++) {
		for (size_t i = 0; names[i]; i++) {
			char path[512];
			snprintf(path, sizeof(path), "%s/%s/gen-%s", outdir, subs[si], names[i]);
			FILE *f = fopen(path, "rb");
			if (!f)
				continue;
			size_t n = fread(buf, 1, sizeof(buf), f);
			fclose(f);
			const uint8_t *p = buf;
			struct fz_rec r;
			if (!fz_rec_next(&p, &n, &r))
				continue;
			uint8_t fr[SEQ_BUF];
			char name[128];
			size_t fl = frame_of(fr, sizeof(fr), r.r_op, 0, reqid, 0, r.r_body,
					     r.r_body_len, r.r_bulk, r.r_bulk_len);
			snprintf(name, sizeof(name), "%s-%s", subs[si], names[i]);
			write_file("frame", name, fr, fl);
			if (slen + fl + 1 < sizeof(stream)) {
				memcpy(stream + slen, fr, fl);
				slen += fl;
			}
			/* the server harness: option byte (mend checksums) + the frame */
			uint8_t one[SEQ_BUF];
			one[0] = 1;
			memcpy(one + 1, fr, fl);
			write_file("net_server", name, one, fl + 1);
			reqid++;
		}
	}
	/* all of them on one connection, to the keyless server and the keyed one */
	gen_server_keyed(stream, slen);
	memmove(stream + 1, stream, slen);
	stream[0] = 1;
	write_file("net_server", "all-requests", stream, slen + 1);
	/* one-way requests, then a frame cut short */
	{
		uint8_t fr[256];
		size_t n = 0;
		fr[n++] = 0;
		n += frame_of(fr + n, sizeof(fr) - n, WEIR__WIRE_OP__PING, WEIR_FRAME_F_NOREPLY, 1,
			      0, NULL, 0, (const uint8_t *)"abc", 3);
		n += frame_of(fr + n, sizeof(fr) - n, WEIR__WIRE_OP__PING, 0, 2, 0, NULL, 0, NULL,
			      0);
		size_t cut = frame_of(fr + n, sizeof(fr) - n, WEIR__WIRE_OP__PING, 0, 3, 0, NULL, 0,
				      (const uint8_t *)"0123456789", 10);
		write_file("net_server", "oneway-then-short", fr, n + cut - 4);
	}
}

/* The hello reply of a keyless server (what a keyless client accepts), at \a out. */
static size_t hello_insecure(uint8_t *out, size_t cap)
{
	uint8_t body[128], ns[32];
	memset(ns, 0x5a, sizeof(ns));
	Weir__AuthHelloRep r = WEIR__AUTH_HELLO_REP__INIT;
	r.nonce.data = ns;
	r.nonce.len = sizeof(ns);
	r.insecure = true;
	size_t bl = weir__auth_hello_rep__pack(&r, body);
	return frame_of(out, cap, WEIR__WIRE_OP__AUTH_HELLO, WEIR_FRAME_F_REPLY, FZ_REQID_HELLO, 0,
			body, bl, NULL, 0);
}

/*
 * Replies as a server sends them, for the client harness: a keyless client
 * (option byte 0: the insecure hello reply first) and a keyed one after a
 * genuine handshake (option byte 6); the call's request id is 1.
 */
static void gen_client(void)
{
	uint8_t out[4096], body[1024];
	size_t n;
	for (size_t i = 0; i < fz_nr_ops; i++) {
		const struct fz_op *o = &fz_ops[i];
		ProtobufCMessage *m = calloc(1, o->o_rep->sizeof_message);
		protobuf_c_message_init(o->o_rep, m);
		size_t bl = protobuf_c_message_get_packed_size(m);
		protobuf_c_message_pack(m, body);
		free(m);
		for (int keyed = 0; keyed < 2; keyed++) {
			n = 0;
			out[n++] = keyed ? 6 : 0;
			out[n++] = (uint8_t)i;
			out[n++] = 0x21; /* 512 + 1024 bytes of reply bulk room */
			size_t hs = keyed ? 0 : hello_insecure(out + n, sizeof(out) - n);
			n += hs;
			size_t fl = frame_of(out + n, sizeof(out) - n, o->o_op, WEIR_FRAME_F_REPLY, 1,
					     0, body, bl, (const uint8_t *)"bulk",
					     o->o_op == WEIR__WIRE_OP__OST_READ ? 4 : 0);
			char name[64];
			snprintf(name, sizeof(name), "%s%s", keyed ? "keyed-" : "", o->o_name);
			write_file("net_client", name, out, n + fl);
			if (!keyed) {
				snprintf(name, sizeof(name), "reply-%s", o->o_name);
				write_file("frame", name, out + 3 + hs, fl);
			}
		}
	}
	/* an error status; a reply for another request first; a bulk too large */
	n = 0;
	out[n++] = 0;
	out[n++] = 0;
	out[n++] = 0x01;
	n += hello_insecure(out + n, sizeof(out) - n);
	n += frame_of(out + n, sizeof(out) - n, fz_ops[0].o_op, WEIR_FRAME_F_REPLY, 9, 0, NULL, 0,
		      NULL, 0);
	n += frame_of(out + n, sizeof(out) - n, fz_ops[0].o_op, WEIR_FRAME_F_REPLY, 1,
		      weir_status_from_errno(-ENOENT), NULL, 0, NULL, 0);
	write_file("net_client", "stray-then-error", out, n);
	static uint8_t big[2048];
	n = 0;
	out[n++] = 0;
	out[n++] = 0;
	out[n++] = 0x01;
	n += hello_insecure(out + n, sizeof(out) - n);
	n += frame_of(out + n, sizeof(out) - n, fz_ops[0].o_op, WEIR_FRAME_F_REPLY, 1, 0, NULL, 0,
		      big, sizeof(big));
	write_file("net_client", "bulk-overflow", out, n);
	/* the MDS's reply prefix (net/frame.h, struct weir_txn_hdr): whole, and cut to 8 bytes */
	for (int cut = 0; cut < 2; cut++) {
		uint8_t txn[WEIR_TXN_HDR_SIZE];
		struct weir_txn_hdr t = { 7, 5 };
		weir_txn_encode(&t, txn);
		n = 0;
		out[n++] = 0;
		out[n++] = 0;
		out[n++] = 0x01;
		n += hello_insecure(out + n, sizeof(out) - n);
		n += frame_of(out + n, sizeof(out) - n, fz_ops[0].o_op,
			      WEIR_FRAME_F_REPLY | WEIR_FRAME_F_XID, 1, 0, txn,
			      cut ? 8 : sizeof(txn), NULL, 0);
		write_file("net_client", cut ? "reply-prefix-cut" : "reply-prefix", out, n);
	}
	/* a keyed client and a server that cannot prove the key: insecure, then a wrong proof */
	n = 0;
	out[n++] = 2;
	out[n++] = 0;
	out[n++] = 0;
	n += hello_insecure(out + n, sizeof(out) - n);
	write_file("net_client", "keyed-vs-insecure", out, n);
	{
		uint8_t ns[32], pr[32], b[128];
		memset(ns, 1, sizeof(ns));
		memset(pr, 2, sizeof(pr));
		Weir__AuthHelloRep r = WEIR__AUTH_HELLO_REP__INIT;
		r.nonce.data = ns;
		r.nonce.len = sizeof(ns);
		r.proof.data = pr;
		r.proof.len = sizeof(pr);
		size_t bl = weir__auth_hello_rep__pack(&r, b);
		n = 3;
		n += frame_of(out + n, sizeof(out) - n, WEIR__WIRE_OP__AUTH_HELLO, WEIR_FRAME_F_REPLY,
			      FZ_REQID_HELLO, 0, b, bl, NULL, 0);
		write_file("net_client", "keyed-wrong-proof", out, n);
		/* a keyless client told -EACCES */
		out[0] = 0;
		n = 3 + frame_of(out + 3, sizeof(out) - 3, WEIR__WIRE_OP__AUTH_HELLO,
				 WEIR_FRAME_F_REPLY, FZ_REQID_HELLO, weir_status_from_errno(-EACCES),
				 NULL, 0, NULL, 0);
		write_file("net_client", "hello-refused", out, n);
	}
}

/*
 * The keyed server of the server harness: requests after a genuine handshake
 * (option byte 6); and what an outsider sends: a hello with a key id the
 * server does not know, a forged proof, a request before the handshake, a
 * large frame before it (option byte 3: mended checksums, no handshake).
 */
static void gen_server_keyed(const uint8_t *stream, size_t slen)
{
	static uint8_t out[SEQ_BUF];
	uint8_t body[256], nc[32], kid[8], pr[32];
	memset(nc, 7, sizeof(nc));
	memset(kid, 0xee, sizeof(kid));
	memset(pr, 3, sizeof(pr));
	out[0] = 6;
	memcpy(out + 1, stream, slen);
	write_file("net_server", "keyed-all-requests", out, slen + 1);

	Weir__AuthHello h = WEIR__AUTH_HELLO__INIT;
	h.version = 1;
	h.nonce.data = nc;
	h.nonce.len = sizeof(nc);
	h.key_id.data = kid;
	h.key_id.len = sizeof(kid);
	h.name = (char *)"outsider:1";
	Weir__AuthProof p = WEIR__AUTH_PROOF__INIT;
	p.proof.data = pr;
	p.proof.len = sizeof(pr);
	size_t n = 0;
	out[n++] = 3;
	size_t bl = weir__auth_hello__pack(&h, body);
	n += frame_of(out + n, sizeof(out) - n, WEIR__WIRE_OP__AUTH_HELLO, 0, FZ_REQID_HELLO, 0,
		      body, bl, NULL, 0);
	bl = weir__auth_proof__pack(&p, body);
	n += frame_of(out + n, sizeof(out) - n, WEIR__WIRE_OP__AUTH_PROOF, 0, FZ_REQID_PROOF, 0,
		      body, bl, NULL, 0);
	write_file("net_server", "keyed-unknown-key", out, n);
	n = 1;
	h.key_id.len = 0; /* a keyless client */
	bl = weir__auth_hello__pack(&h, body);
	n += frame_of(out + n, sizeof(out) - n, WEIR__WIRE_OP__AUTH_HELLO, 0, FZ_REQID_HELLO, 0,
		      body, bl, NULL, 0);
	write_file("net_server", "keyed-keyless-hello", out, n);
	n = 1;
	n += frame_of(out + n, sizeof(out) - n, WEIR__WIRE_OP__PING, 0, 1, 0, NULL, 0, NULL, 0);
	write_file("net_server", "keyed-request-first", out, n);
	n = 1;
	n += frame_of(out + n, sizeof(out) - n, WEIR__WIRE_OP__AUTH_HELLO, 0, FZ_REQID_HELLO, 0,
		      NULL, 0, (const uint8_t *)"bulk before the key", 19);
	write_file("net_server", "keyed-bulk-first", out, n);
}

/* Seeds of the auth harness: option byte, then records (see fuzz_auth.c). */
static void gen_auth(void)
{
	uint8_t nc[32], kid[8], pr[32];
	memset(nc, 0x11, sizeof(nc));
	memset(kid, 0x22, sizeof(kid));
	memset(pr, 0x33, sizeof(pr));
	Weir__AuthHello h = WEIR__AUTH_HELLO__INIT;
	h.version = 1;
	h.nonce.data = nc;
	h.nonce.len = sizeof(nc);
	h.key_id.data = kid;
	h.key_id.len = sizeof(kid);
	h.name = (char *)"client:42";
	Weir__AuthProof p = WEIR__AUTH_PROOF__INIT;
	p.proof.data = pr;
	p.proof.len = sizeof(pr);
	Weir__Empty e = WEIR__EMPTY__INIT;
	struct seq *s = &sq;
	static const struct {
		const char *name;
		uint8_t opts;
		const char *ops; /* H hello, K keyless hello, P proof, R a request */
	} seeds[] = {
		{ "keyed-current", 0x0c, "HP" },    /* mended: a genuine handshake */
		{ "keyed-previous", 0x1c, "HPR" },  /* with the key being rotated out */
		{ "keyed-twice", 0x0c, "HPHP" },    /* two connections */
		{ "keyed-forged-proof", 0x08, "HP" }, /* the proof not mended: refused */
		{ "keyed-unknown-key", 0x04, "HP" },
		{ "keyed-keyless-hello", 0x00, "K" },
		{ "keyed-request-first", 0x00, "RH" },
		{ "keyed-hello-twice", 0x0c, "HH" },
		{ "keyed-request-before-proof", 0x0c, "HR" },
		{ "insecure-hello", 0x02, "HR" },
		{ "insecure-no-handshake", 0x02, "RR" },
		{ "insecure-proof", 0x02, "P" },
	};
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		seq_begin();
		s->s_buf[s->s_len++] = seeds[i].opts;
		for (const char *c = seeds[i].ops; *c; c++) {
			h.key_id.len = *c == 'K' ? 0 : sizeof(kid);
			if (*c == 'H' || *c == 'K')
				seq_add(s, WEIR__WIRE_OP__AUTH_HELLO, &h.base, NULL, 0);
			else if (*c == 'P')
				seq_add(s, WEIR__WIRE_OP__AUTH_PROOF, &p.base, NULL, 0);
			else
				seq_add(s, WEIR__WIRE_OP__MDS_STATFS, &e.base, NULL, 0);
		}
		seq_write("auth", seeds[i].name);
	}
	/* key files: one that loads (two keys, comments, blanks, CRLF), bad ones */
	static const struct {
		const char *name, *text;
	} files[] = {
		{ "keyfile-rotation",
		  "# Weir cluster key (weir key gen)\n"
		  "weir-key-v1 key-20261205-061500 "
		  "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n"
		  "\n\t weir-key-v1 old.key_1 "
		  "60303AE22B998861BCE3B28F33EEC1BE758A213C86C93C076DBE9F558C11C752\r\n" },
		{ "keyfile-bad-hex",
		  "weir-key-v1 k 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a0g\n" },
		{ "keyfile-short", "weir-key-v1 k 9f86\n" },
		{ "keyfile-dup-name",
		  "weir-key-v1 k 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n"
		  "weir-key-v1 k 60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752\n" },
		{ "keyfile-bad-name",
		  "weir-key-v1 a/b 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 x\n" },
		{ "keyfile-empty", "# nothing\n\n" },
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		uint8_t buf[1024];
		size_t n = strlen(files[i].text);
		buf[0] = 1;
		memcpy(buf + 1, files[i].text, n);
		write_file("auth", files[i].name, buf, n + 1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	fz_ops_check();
	outdir = argv[1];
	mkdir(outdir, 0755);
	root_fid.seq = WEIR_FID_SEQ_ROOT;
	root_fid.oid = 1;
	gen_mds();
	gen_oss();
	gen_frames();
	gen_client();
	gen_auth();
	return 0;
}
