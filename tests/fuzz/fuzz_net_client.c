/*
 * tests/fuzz/fuzz_net_client.c - libFuzzer harness: the client side of a
 * connection against a hostile server, over real loopback TCP: the
 * handshake's answers (net/auth.c: cli_recv, the AuthHelloRep checks) and
 * the reply reading path (net/rpc.c: reply headers, matching by request
 * id, bodies and bulk into the caller's buffers, broken and short replies).
 * Every Weir process is such a client: libweir of the MDS and the OSSs,
 * the MDS of the OSSs (destroys, glimpses), the OSS of the MDS
 * (registration).
 *
 * DESIGN. A server thread of this harness accepts on a loopback socket.
 * Per input: net_conn_open_auth() (which runs the handshake) then one call
 * (the opcode and the reply bulk buffers chosen by the input), while the
 * server thread answers the connection with the input's bytes and shuts
 * its write side; net_call_wait() must then return 0 or a negative errno,
 * a reply body is unpacked as the opcode's reply type (as callers do), and
 * the reply bulk must fit the buffers given. Any further connection in
 * the same input (a reconnect) is closed at once.
 * Input: byte 0 options:
 *   bit 0  mend the header checksums of the frames that follow (as in
 *          fuzz_net_server.c), so that mutated headers get past them;
 *   bit 1  the client holds a cluster key (else it runs keyless, as
 *          --insecure: the bytes must start with an insecure hello reply);
 *   bit 2  with bit 1: the server thread first runs a genuine handshake
 *          (reads the client's hello, proves the key, reads its proof,
 *          accepts it), so that the bytes are what follows it;
 * byte 1 picks the opcode (an index into fz_ops); byte 2: reply bulk
 * buffer sizes (low nibble * 512 and high nibble * 512 bytes, two
 * iovecs); the rest is what the server sends. The first call on a new
 * connection has request id 1; the handshake's frames use request ids
 * 0xfffffffffffffff0 (hello) and 0xfffffffffffffff1 (proof).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/key.h"
#include "fuzz.h"
#include "net/auth.h"
#include "weir.pb-c.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SRV_FDS 8

static int fz_lfd = -1;
static char fz_hostport[64];
static struct net_auth *fz_auth;  /* the keyed client's keys */
static struct weir_keyring fz_kr; /* the same, for the server thread's proofs */

/* the server thread's job for the input being run, under job_lock */
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_cond = PTHREAD_COND_INITIALIZER;
static const uint8_t *job_bytes;
static size_t job_len;
static bool job_handshake; /* run a genuine handshake first */
static bool job_open;	   /* the next connection gets the bytes */
static bool job_busy;	   /* the server thread is answering it */
static int job_fds[MAX_SRV_FDS];
static int job_nr_fds;

/* The server's side of a genuine keyed handshake (net/proto/weir.proto). */
static int srv_handshake(int fd)
{
	struct weir_frame_hdr h;
	uint8_t body[512], nc[32], ns[32], pr[WEIR_HMAC_LEN];
	ssize_t n = fz_recv_frame(fd, &h, body, sizeof(body));
	if (n < 0 || h.fh_opcode != WEIR__WIRE_OP__AUTH_HELLO)
		return -1;
	Weir__AuthHello *hello = weir__auth_hello__unpack(NULL, (size_t)n, body);
	if (!hello || hello->nonce.len != sizeof(nc)) {
		if (hello)
			weir__auth_hello__free_unpacked(hello, NULL);
		return -1;
	}
	memcpy(nc, hello->nonce.data, sizeof(nc));
	weir__auth_hello__free_unpacked(hello, NULL);
	weir_random_bytes(ns, sizeof(ns));
	fz_auth_proof(&fz_kr, "weir-auth-v1 server", nc, ns, pr);
	Weir__AuthHelloRep rep = WEIR__AUTH_HELLO_REP__INIT;
	rep.nonce.data = ns;
	rep.nonce.len = sizeof(ns);
	rep.proof.data = pr;
	rep.proof.len = sizeof(pr);
	if (fz_send_frame(fd, WEIR__WIRE_OP__AUTH_HELLO, WEIR_FRAME_F_REPLY, FZ_REQID_HELLO, 0,
			  &rep.base))
		return -1;
	n = fz_recv_frame(fd, &h, body, sizeof(body));
	if (n < 0 || h.fh_opcode != WEIR__WIRE_OP__AUTH_PROOF)
		return -1;
	return fz_send_frame(fd, WEIR__WIRE_OP__AUTH_PROOF, WEIR_FRAME_F_REPLY, FZ_REQID_PROOF, 0,
			     NULL);
}

static void *srv_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pf = { .fd = fz_lfd, .events = POLLIN };
		if (poll(&pf, 1, -1) <= 0)
			continue;
		int fd = accept4(fz_lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		pthread_mutex_lock(&job_lock);
		bool mine = job_open && job_nr_fds < MAX_SRV_FDS;
		if (mine) {
			job_open = false;
			job_busy = true;
			job_fds[job_nr_fds++] = fd;
		}
		pthread_mutex_unlock(&job_lock);
		if (!mine) {
			close(fd); /* a reconnect: refused */
			continue;
		}
		if (!job_handshake || !srv_handshake(fd))
			fz_send_all(fd, job_bytes, job_len);
		shutdown(fd, SHUT_WR); /* EOF after the bytes; closed once the client is done */
		pthread_mutex_lock(&job_lock);
		job_busy = false;
		pthread_cond_broadcast(&job_cond);
		pthread_mutex_unlock(&job_lock);
	}
	return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	char path[400], why[256] = "";
	const char *dir = fz_scratch("net-client");
	uint16_t port;
	snprintf(path, sizeof(path), "%s/cluster.key", dir);
	fz_kr.kr_nr = 1;
	if (weir_key_generate("fuzz", &fz_kr.kr_keys[0]) || weir_keyring_save(path, &fz_kr, true) ||
	    net_auth_new(path, false, &fz_auth, why, sizeof(why)) ||
	    net_listen("127.0.0.1:0", &fz_lfd, &port)) {
		fprintf(stderr, "fuzz_net_client: set-up failed: %s\n", why);
		abort();
	}
	snprintf(fz_hostport, sizeof(fz_hostport), "127.0.0.1:%u", port);
	pthread_t t;
	if (pthread_create(&t, NULL, srv_main, NULL))
		abort();
	pthread_detach(t);
	fz_at_exit(NULL);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	size_t len = size - 3;
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 3, len);
	if (data[0] & 1)
		fz_mend(buf, len);
	bool keyed = data[0] & 2;
	const struct fz_op *o = &fz_ops[data[1] % fz_nr_ops];
	size_t b0 = (size_t)(data[2] & 15) * 512, b1 = (size_t)(data[2] >> 4) * 512;
	uint8_t *bulk = malloc(b0 + b1 + 1);

	pthread_mutex_lock(&job_lock);
	job_bytes = buf;
	job_len = len;
	job_handshake = keyed && (data[0] & 4);
	job_open = true;
	job_nr_fds = 0;
	pthread_mutex_unlock(&job_lock);

	struct net_conn *c = NULL;
	int rc = net_conn_open_auth(fz_hostport, 2000, keyed ? fz_auth : NULL, &c);
	if (rc > 0) {
		fprintf(stderr, "fuzz_net_client: net_conn_open returned %d\n", rc);
		abort();
	}
	if (!rc) {
		struct iovec iov[2] = { { bulk, b0 }, { bulk + b0, b1 } };
		struct net_call call;
		net_call_init(&call, o->o_op, NULL);
		call.nc_rep_bulk = iov;
		call.nc_rep_nr_bulk = 2;
		call.nc_timeout_ms = 5000;
		rc = net_call_start(c, &call);
		if (!rc)
			rc = net_call_wait(&call);
		if (rc > 0) {
			fprintf(stderr, "fuzz_net_client: the call returned %d\n", rc);
			abort();
		}
		if (!rc && call.nc_rep_bulk_len > b0 + b1) {
			fprintf(stderr,
				"fuzz_net_client: %llu bulk bytes in %zu bytes of buffers\n",
				(unsigned long long)call.nc_rep_bulk_len, b0 + b1);
			abort();
		}
		if (!rc) {
			ProtobufCMessage *m = net_call_unpack(&call, o->o_rep);
			if (m)
				protobuf_c_message_free_unpacked(m, NULL);
		}
		net_call_fini(&call);
		net_conn_close(c);
	}

	/* the server thread is done with this input's connections: close them */
	pthread_mutex_lock(&job_lock);
	job_open = false;
	while (job_busy)
		pthread_cond_wait(&job_cond, &job_lock);
	for (int i = 0; i < job_nr_fds; i++)
		close(job_fds[i]);
	job_nr_fds = 0;
	job_bytes = NULL;
	pthread_mutex_unlock(&job_lock);
	free(bulk);
	free(buf);
	return 0;
}
