/*
 * tests/fuzz/fuzz_mds.c - libFuzzer harness: every MDS request handler, over
 * a real RocksDB MDT.
 *
 * DESIGN. One MDS per process, started by mds_start() on an MDT in a
 * scratch directory (tests/fuzz/fuzz.h) with all of its threads (commit,
 * destroy, lease, HSM); it listens on a loopback port nobody connects to.
 * Two OSTs are registered at the start (osts_register()), so that files
 * can be created. Each input is up to FZ_MAX_RECS requests (the record format of fuzz.h),
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
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "mds/mds.h"
#include "mds/mds_int.h"
#include "weir.pb-c.h"

#include "mds/hsm.h" /* after mds_int.h: its server part is outside its guard */

static struct mds *fz_mds;

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
 * address, which refuses connections) as an OSS does: once to get their
 * indexes, once more under them to be up. They stay up for the whole run
 * (mc_ost_timeout_s is long), so that creates place files on them.
 */
#define FZ_NR_OSTS 2
static void osts_register(void)
{
	Weir__OstReg o[FZ_NR_OSTS], *op[FZ_NR_OSTS];
	char uuid[FZ_NR_OSTS][32];
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
			op[i] = &o[i];
		}
		fz_send(WEIR__WIRE_OP__MDS_OSS_REGISTER, &r.base);
	}
}

static void mds_fini(void)
{
	mds_stop(fz_mds);
	fz_mds = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	static char mdt[300];
	const char *dir = fz_scratch("mds");
	snprintf(mdt, sizeof(mdt), "%s/mdt", dir);
	struct mds_conf mc = {
		.mc_mdt_dir = mdt,
		.mc_listen = "127.0.0.1:0",
		.mc_threads = 1,
		.mc_lease_ms = 2000, /* sessions the fuzzer opens end soon */
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
	fz_at_exit(mds_fini);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_rec r;
	for (int i = 0; i < FZ_MAX_RECS && fz_rec_next(&data, &size, &r); i++) {
		struct net_req *rq = fz_req_new(&r, fz_mds, NULL);
		if (!rq)
			break;
		mds_svc_handle(rq);
	}
	return 0;
}
