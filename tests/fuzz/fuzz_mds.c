/*
 * tests/fuzz/fuzz_mds.c - libFuzzer harness: every MDS request handler, over
 * a real RocksDB MDT.
 *
 * DESIGN. One MDS per process, started by mds_start() on an MDT in a
 * scratch directory (tests/fuzz/fuzz.h) with all of its threads (commit,
 * destroy, lease, HSM); it listens on a loopback port nobody connects to.
 * Each input is up to FZ_MAX_RECS requests (the record format of fuzz.h),
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

#include "mds/hsm.h" /* after mds_int.h: its server part is outside its guard */

static struct mds *fz_mds;

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
