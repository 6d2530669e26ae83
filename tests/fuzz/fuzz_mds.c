/*
 * tests/fuzz/fuzz_mds.c - libFuzzer harness: every MDS request handler, over
 * a real RocksDB MDT.
 *
 * DESIGN. One MDS per process, started by mds_start() on an MDT in a
 * scratch directory (tests/fuzz/fuzz.h) with all of its threads (commit,
 * destroy, lease, HSM); it listens on a loopback port nobody connects to.
 * The MDS holds a cluster key (so it signs OST capabilities) and runs with
 * a node map (FZ_NODEMAP); each request comes with one of a few identities
 * (a key name and an address: the high byte of the record's opcode), so
 * the handlers run for admins, mapped users, squashed guests and strangers.
 * Two OSTs are registered at the start (osts_register()), so that files
 * can be created. Requests name what earlier requests of the same input
 * created by references (refs_apply(): session, handle, HSM action id and
 * token n, Fid {0, n}: the n-th of its kind replied during this input), so
 * that an input stands on its own. Each input is up to FZ_MAX_RECS requests (the record format of fuzz.h),
 * given one after the other to the MDS's dispatcher, mds_svc_handle(), on
 * this thread, as a loop thread would after reading their frames: so the
 * opcode dispatch, the protobuf decoding and validation of every body, the
 * handlers, the namespace and RocksDB all run on fuzzed requests. Replies
 * are captured (fuzz.h), not waited for: most come before the handler
 * returns, parked ones (MDS_SYNC, blocking locks, agent fetches) come later
 * from the MDS's own threads. The namespace outlives inputs (as a server's
 * does), so the fuzzer builds on what earlier inputs created; a crash that
 * needs such state may not reproduce from its one input alone (run the
 * corpus directory first, docs/fuzzing.md).
 * Sanitizers: ASan + UBSan; libFuzzer's per-input leak check is off for
 * this harness (tests/fuzz/run.sh: the MDS keeps state), LeakSanitizer
 * still runs at exit after mds_stop().
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/key.h"
#include "common/util.h"
#include "fuzz.h"
#include "net/auth.h"
#include "mds/mds.h"
#include "mds/mds_int.h"
#include "weir.pb-c.h"

#include "mds/hsm.h" /* after mds_int.h: its server part is outside its guard */

static struct mds *fz_mds;
static struct net_auth *fz_auth;

/*
 * The node map the MDS runs with (mds/nodemap.h), and the identities a
 * request may come with: the high byte of a record's opcode picks one
 * (modulo FZ_NR_IDS; 0, the seeds' and most inputs', is a holder of the
 * cluster key with no address: the default group, trusted and admin).
 */
#define FZ_NODEMAP                                                                             \
	"[nodemap admins]\nkeys = cluster-admin\nroot_squash = no\n\n"                        \
	"[nodemap users]\nkeys = users, users-old\nadmin = no\nroot_squash = yes\n"            \
	"map_uid = 1000:5000\nmap_uid = 0:7\nmap_gid = 100:500\n\n"                            \
	"[nodemap guests]\nranges = 10.0.0.0/8, fd00::/64\ntrusted = no\n"                     \
	"squash_uid = 99\nsquash_gid = 99\nadmin = no\n"
static const struct {
	const char *id_key;  /* the name of the key the connection proved */
	const char *id_addr; /* its peer's address; NULL: none */
} fz_ids[] = {
	{ "", NULL },
	{ "cluster-admin", "127.0.0.1" },
	{ "users", "192.168.7.8" },
	{ "users-old", "::1" },
	{ "", "10.1.2.3" },
	{ "cluster", "fd00::42" },
	{ "stranger", "203.0.113.9" },
};
#define FZ_NR_IDS (sizeof(fz_ids) / sizeof(fz_ids[0]))

static void id_set(struct net_req *rq, unsigned id)
{
	id %= FZ_NR_IDS;
	snprintf(rq->rq_key_name, sizeof(rq->rq_key_name), "%s", fz_ids[id].id_key);
	memset(&rq->rq_peer_sa, 0, sizeof(rq->rq_peer_sa));
	const char *a = fz_ids[id].id_addr;
	if (!a)
		return;
	if (strchr(a, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&rq->rq_peer_sa;
		s6->sin6_family = AF_INET6;
		inet_pton(AF_INET6, a, &s6->sin6_addr);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&rq->rq_peer_sa;
		s4->sin_family = AF_INET;
		inet_pton(AF_INET, a, &s4->sin_addr);
	}
}

/* Give the MDS one request made of \a m, as the fuzzer's requests are given. */
static void fz_send(uint16_t op, const ProtobufCMessage *m)
{
	uint8_t body[1024];
	size_t n = protobuf_c_message_get_packed_size(m);
	if (n > sizeof(body))
		abort();
	protobuf_c_message_pack(m, body);
	struct fz_rec r = { .r_op = op, .r_body = body, .r_body_len = n };
	struct net_req *rq = fz_req_new(&r, fz_mds, NULL);
	if (!rq)
		abort();
	mds_svc_handle(rq);
}

/*
 * Register FZ_NR_OSTS OSTs (indexes 0, 1, ...; nobody serves them at their
 * address, which refuses connections) as an OSS does, with their secrets
 * (bound OSTs): once to get their
 * indexes, once more under them to be up. They stay up for the whole run
 * (mc_ost_timeout_s is long), so that creates place files on them.
 */
#define FZ_NR_OSTS 2
#define FZ_REF_BODY_MAX 65536
static void osts_register(void)
{
	Weir__OstReg o[FZ_NR_OSTS], *op[FZ_NR_OSTS];
	char uuid[FZ_NR_OSTS][32];
	uint8_t secret[FZ_NR_OSTS][32];
	for (int i = 0; i < FZ_NR_OSTS; i++)
		memset(secret[i], 0x51 + i, sizeof(secret[i]));
	Weir__OssRegisterReq r = WEIR__OSS_REGISTER_REQ__INIT;
	r.oss_addr = (char *)"127.0.0.1:9";
	r.n_osts = FZ_NR_OSTS;
	r.osts = op;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < FZ_NR_OSTS; i++) {
			weir__ost_reg__init(&o[i]);
			snprintf(uuid[i], sizeof(uuid[i]), "fuzz-ost-%04d", i);
			o[i].uuid = uuid[i];
			o[i].index = pass ? i : -1;
			o[i].total_bytes = 1ULL << 40;
			o[i].free_bytes = o[i].avail_bytes = 1ULL << 39;
			o[i].files = o[i].files_free = 1000000;
			o[i].secret.data = secret[i];
			o[i].secret.len = sizeof(secret[i]);
			op[i] = &o[i];
		}
		fz_send(WEIR__WIRE_OP__MDS_OSS_REGISTER, &r.base);
	}
}

static void mds_fini(void)
{
	mds_stop(fz_mds);
	fz_mds = NULL;
	net_auth_set_default(NULL);
	net_auth_free(fz_auth);
	fz_auth = NULL;
}

/* ------------------------------------------------------------ references */

/*
 * What the server made during this input, in order: the sessions of
 * ConnectRep, the handles of OpenRep, the FIDs of every Attr and directory
 * entry replied, HSM action ids and hand-out tokens. A request field that
 * names the k-th of these (1 <= k <= FZ_REFS) is given its value (refs_apply).
 */
#define FZ_REFS 16
enum { REF_SESSION, REF_HANDLE, REF_FID, REF_ACTION, REF_TOKEN, REF_KINDS };
struct ref_fid {
	uint64_t seq, oid;
};
static pthread_mutex_t refs_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t refs[REF_KINDS][FZ_REFS];
static struct ref_fid ref_fids[FZ_REFS];
static unsigned nr_refs[REF_KINDS];

/* Record \a v as the next of kind \a k, once. Called with refs_lock held. */
static void ref_add(int k, uint64_t v)
{
	for (unsigned i = 0; i < nr_refs[k]; i++)
		if (refs[k][i] == v)
			return;
	if (nr_refs[k] < FZ_REFS)
		refs[k][nr_refs[k]++] = v;
}

static void ref_add_fid(const Weir__Fid *f)
{
	if (!f)
		return;
	for (unsigned i = 0; i < nr_refs[REF_FID]; i++)
		if (ref_fids[i].seq == f->seq && ref_fids[i].oid == f->oid)
			return;
	if (nr_refs[REF_FID] < FZ_REFS)
		ref_fids[nr_refs[REF_FID]++] = (struct ref_fid){ f->seq, f->oid };
}

static void reply_hook(const struct net_req *rq, int rc, const ProtobufCMessage *body)
{
	(void)rq;
	if (rc || !body)
		return;
	const ProtobufCMessageDescriptor *d = body->descriptor;
	pthread_mutex_lock(&refs_lock);
	if (d == &weir__connect_rep__descriptor) {
		ref_add(REF_SESSION, ((const Weir__ConnectRep *)body)->session);
	} else if (d == &weir__open_rep__descriptor) {
		const Weir__OpenRep *o = (const void *)body;
		ref_add(REF_HANDLE, o->handle);
		ref_add_fid(o->attr ? o->attr->fid : NULL);
	} else if (d == &weir__attr_rep__descriptor) {
		const Weir__AttrRep *a = (const void *)body;
		ref_add_fid(a->attr ? a->attr->fid : NULL);
	} else if (d == &weir__readdir_rep__descriptor) {
		const Weir__ReaddirRep *r = (const void *)body;
		for (size_t i = 0; i < r->n_entries; i++)
			ref_add_fid(r->entries[i]->fid);
	} else if (d == &weir__hsm_state_rep__descriptor) {
		ref_add_fid(((const Weir__HsmStateRep *)body)->fid);
	} else if (d == &weir__hsm_request_rep__descriptor) {
		const Weir__HsmRequestRep *r = (const void *)body;
		for (size_t i = 0; i < r->n_ids; i++)
			ref_add(REF_ACTION, r->ids[i]);
	} else if (d == &weir__hsm_fetch_rep__descriptor) {
		const Weir__HsmFetchRep *r = (const void *)body;
		for (size_t i = 0; i < r->n_tasks; i++) {
			ref_add(REF_ACTION, r->tasks[i]->id);
			ref_add(REF_TOKEN, r->tasks[i]->token);
			ref_add_fid(r->tasks[i]->fid);
		}
	}
	pthread_mutex_unlock(&refs_lock);
}

static void refs_reset(void)
{
	pthread_mutex_lock(&refs_lock);
	memset(nr_refs, 0, sizeof(nr_refs));
	pthread_mutex_unlock(&refs_lock);
}

/* The value of reference \a v of kind \a k, or \a v itself when it names none. */
static uint64_t ref_get(int k, uint64_t v)
{
	return v >= 1 && v <= nr_refs[k] ? refs[k][v - 1] : v;
}

static bool fid_map(Weir__Fid *f)
{
	if (!f || f->seq || f->oid < 1 || f->oid > nr_refs[REF_FID])
		return false;
	struct ref_fid rf = ref_fids[f->oid - 1];
	f->seq = rf.seq;
	f->oid = rf.oid;
	return true;
}

/*
 * Give the references in \a r's body their values: top-level uint64 fields
 * named session and handle (and id, token in the HSM agent's messages),
 * and every Fid field with seq 0 and oid k (the k-th FID replied). A body
 * that does not unpack, or names nothing, is left as it is.
 * \return the new body's length in \a buf, or 0 when unchanged.
 */
static size_t refs_apply(const struct fz_rec *r, uint8_t *buf, size_t cap)
{
	const struct fz_op *o = fz_op_find(r->r_op);
	if (!o)
		return 0;
	ProtobufCMessage *m = protobuf_c_message_unpack(o->o_req, NULL, r->r_body_len, r->r_body);
	if (!m)
		return 0;
	bool agent = o->o_req == &weir__hsm_progress_req__descriptor ||
		     o->o_req == &weir__hsm_done_req__descriptor;
	bool changed = false;
	pthread_mutex_lock(&refs_lock);
	for (unsigned i = 0; i < o->o_req->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &o->o_req->fields[i];
		char *at = (char *)m + f->offset;
		if (f->type == PROTOBUF_C_TYPE_UINT64 && f->label != PROTOBUF_C_LABEL_REPEATED) {
			int k = !strcmp(f->name, "session")	    ? REF_SESSION
				: !strcmp(f->name, "handle")	    ? REF_HANDLE
				: agent && !strcmp(f->name, "id")    ? REF_ACTION
				: agent && !strcmp(f->name, "token") ? REF_TOKEN
								     : -1;
			uint64_t *v = (uint64_t *)at;
			if (k >= 0 && ref_get(k, *v) != *v) {
				*v = ref_get(k, *v);
				changed = true;
			}
		} else if (f->type == PROTOBUF_C_TYPE_MESSAGE && f->descriptor == &weir__fid__descriptor) {
			if (f->label == PROTOBUF_C_LABEL_REPEATED) {
				size_t n = *(size_t *)((char *)m + f->quantifier_offset);
				Weir__Fid **arr = *(Weir__Fid ***)at;
				for (size_t j = 0; j < n; j++)
					changed |= fid_map(arr[j]);
			} else {
				changed |= fid_map(*(Weir__Fid **)at);
			}
		}
	}
	pthread_mutex_unlock(&refs_lock);
	size_t n = 0;
	if (changed && protobuf_c_message_get_packed_size(m) <= cap)
		n = protobuf_c_message_pack(m, buf);
	protobuf_c_message_free_unpacked(m, NULL);
	return n;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	static char mdt[300], nodemap[300], key[300];
	char why[256] = "";
	const char *dir = fz_scratch("mds");
	snprintf(mdt, sizeof(mdt), "%s/mdt", dir);
	snprintf(nodemap, sizeof(nodemap), "%s/nodemap.ini", dir);
	snprintf(key, sizeof(key), "%s/cluster.key", dir);
	/* a keyed MDS (so it signs capabilities) with a node map */
	struct weir_keyring kr = { .kr_nr = 1 };
	if (weir_key_generate("cluster", &kr.kr_keys[0]) || weir_keyring_save(key, &kr, true) ||
	    net_auth_new(key, false, &fz_auth, why, sizeof(why)) ||
	    weir_file_write_atomic(nodemap, FZ_NODEMAP, strlen(FZ_NODEMAP))) {
		fprintf(stderr, "fuzz_mds: set-up: %s\n", why);
		abort();
	}
	net_auth_set_default(fz_auth);
	struct mds_conf mc = {
		.mc_mdt_dir = mdt,
		.mc_listen = "127.0.0.1:0",
		.mc_threads = 1,
		.mc_lease_ms = 2000,          /* sessions the fuzzer opens end soon */
		.mc_ost_timeout_s = 1u << 30, /* registered OSTs stay up */
		.mc_nodemap = nodemap,
	};
	int rc = mds_start(&mc, &fz_mds);
	if (rc) {
		fprintf(stderr, "fuzz_mds: mds_start: %d\n", rc);
		abort();
	}
	/* session ids 1, 2, ... and HSM hand-out tokens 1, 2, ... instead of random
	 * starts, so that the seeds (tests/fuzz/gen_corpus.c) name live ones */
	pthread_mutex_lock(&fz_mds->m_sess_lock);
	fz_mds->m_sess_base = 0;
	pthread_mutex_unlock(&fz_mds->m_sess_lock);
	pthread_mutex_lock(&fz_mds->m_hsm->hs_lock);
	fz_mds->m_hsm->hs_next_token = 0;
	pthread_mutex_unlock(&fz_mds->m_hsm->hs_lock);
	osts_register();
	fz_reply_hook = reply_hook;
	fz_at_exit(mds_fini);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[FZ_REF_BODY_MAX];
	struct fz_rec r;
	refs_reset();
	for (int i = 0; i < FZ_MAX_RECS && fz_rec_next(&data, &size, &r); i++) {
		unsigned id = r.r_op >> 8;
		r.r_op &= 0xff;
		size_t n = refs_apply(&r, buf, sizeof(buf));
		if (n) {
			r.r_body = buf;
			r.r_body_len = n;
		}
		struct net_req *rq = fz_req_new(&r, fz_mds, NULL);
		if (!rq)
			break;
		id_set(rq, id);
		mds_svc_handle(rq);
	}
	return 0;
}
