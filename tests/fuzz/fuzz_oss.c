/*
 * tests/fuzz/fuzz_oss.c - libFuzzer harness: every OSS request handler, over
 * a real OST directory and a real io_uring.
 *
 * DESIGN. One OSS per process, started by oss_start() on one OST directory
 * in a scratch directory whose index (FZ_OST_IDX) is already known, so it
 * serves without an MDS (its registration fails quietly in the background,
 * as in tests/unit/oss/test_svc.c). The fuzzer's thread plays an event loop
 * of its own: it has an io_uring made by oss_uring_new() for fz_loop (a loop
 * that does not exist; fuzz.h captures the completion eventfd it registers),
 * gives each request of an input to the OSS's so_handle as a loop thread
 * would, and then runs the ring's completions itself until the reply came
 * (data I/O replies from the completion callbacks on this thread; truncate
 * and destroy from the oss-slow threads). A request not answered within
 * FZ_REPLY_TIMEOUT_MS is a bug: the harness aborts.
 * Objects outlive inputs, as on a server. Disk: a fallocate that would
 * reserve more than FZ_FALLOC_MAX bytes, and any write or fallocate while
 * the scratch filesystem has under FZ_MIN_AVAIL bytes free, is skipped
 * (the checks before the disk are still fuzzed through the other fields).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "common/util.h"
#include "fuzz.h"
#include "oss/oss.h"
#include "oss/oss_int.h"
#include "weir.pb-c.h"

#define FZ_OST_IDX	    5
#define FZ_REPLY_TIMEOUT_MS 20000
#define FZ_FALLOC_MAX	    (64ULL << 20)
#define FZ_MIN_AVAIL	    (4ULL << 30)

static struct oss *fz_oss;
static struct oss_uring *fz_ring;
static struct net_server_ops fz_srv_ops;
static char fz_ost[300];
static unsigned long fz_sent;

static void oss_fini(void)
{
	oss_uring_free(fz_ring); /* drains: callbacks reply */
	fz_ring = NULL;
	oss_stop(fz_oss);
	fz_oss = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	char path[400];
	const char *dir = fz_scratch("oss");
	snprintf(fz_ost, sizeof(fz_ost), "%s/ost0", dir);
	snprintf(path, sizeof(path), "%s/ost.index", fz_ost);
	if (mkdir(fz_ost, 0755) || weir_file_write_atomic(path, "5\n", 2)) {
		perror("fuzz_oss: OST directory");
		abort();
	}
	struct oss_conf c;
	oss_conf_init(&c);
	c.oc_mds = "127.0.0.1:1"; /* nobody: registration retries in the background */
	c.oc_osts[0] = fz_ost;
	c.oc_nr_osts = 1;
	c.oc_nr_threads = 1;
	c.oc_heartbeat_ms = 3600 * 1000;
	int rc = oss_start(&c, &fz_oss);
	if (!rc)
		rc = oss_uring_new(fz_loop, &fz_ring);
	if (rc || fz_loop_fd.lf_fd < 0) {
		fprintf(stderr, "fuzz_oss: start: %d\n", rc);
		abort();
	}
	oss_svc_ops(fz_oss, &fz_srv_ops);
	fz_at_exit(oss_fini);
	return 0;
}

/* Would this request reserve much disk, or is the disk nearly full? */
static bool disk_hog(const struct fz_rec *r)
{
	static unsigned calls;
	static bool low;
	if (r->r_op != WEIR__WIRE_OP__OST_WRITE && r->r_op != WEIR__WIRE_OP__OST_FALLOCATE)
		return false;
	if (calls++ % 256 == 0) {
		struct statvfs sv;
		low =
		    statvfs(fz_ost, &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize < FZ_MIN_AVAIL;
		if (low)
			fprintf(stderr, "fuzz_oss: under %llu bytes free: writes skipped\n",
				(unsigned long long)FZ_MIN_AVAIL);
	}
	if (low)
		return true;
	if (r->r_op != WEIR__WIRE_OP__OST_FALLOCATE)
		return false;
	Weir__ObjFallocReq *f = (Weir__ObjFallocReq *)protobuf_c_message_unpack(
	    &weir__obj_falloc_req__descriptor, NULL, r->r_body_len, r->r_body);
	bool hog = f && !(f->mode & WEIR__FALLOC_FLAG__FA_PUNCH_HOLE) && f->len > FZ_FALLOC_MAX &&
		   f->off + f->len >= f->off; /* an overflowing range is refused before the disk */
	if (f)
		protobuf_c_message_free_unpacked(&f->base, NULL);
	return hog;
}

/* Run this thread's ring until the request just sent is answered. */
static void wait_reply(uint16_t op)
{
	uint64_t deadline = weir_now_ns() + FZ_REPLY_TIMEOUT_MS * 1000000ULL;
	while (atomic_load(&fz_replies) < fz_sent) {
		struct pollfd pf[2] = { { .fd = fz_loop_fd.lf_fd, .events = POLLIN },
					{ .fd = fz_reply_efd, .events = POLLIN } };
		int n = poll(pf, 2, 100);
		if (n > 0 && pf[0].revents)
			fz_loop_fd.lf_cb(fz_loop_fd.lf_arg);
		if (n > 0 && pf[1].revents) {
			eventfd_t v;
			eventfd_read(fz_reply_efd, &v);
		}
		if (weir_now_ns() > deadline) {
			fprintf(stderr, "fuzz_oss: op=%u: no reply in %d ms\n", op,
				FZ_REPLY_TIMEOUT_MS);
			abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_rec r;
	for (int i = 0; i < FZ_MAX_RECS && fz_rec_next(&data, &size, &r); i++) {
		if (disk_hog(&r))
			continue;
		struct net_req *rq = fz_req_new(&r, fz_oss, fz_ring);
		if (!rq)
			break;
		fz_sent++;
		fz_srv_ops.so_handle(rq);
		wait_reply(r.r_op);
	}
	return 0;
}
