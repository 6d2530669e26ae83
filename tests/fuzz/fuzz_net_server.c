/*
 * tests/fuzz/fuzz_net_server.c - libFuzzer harness: the server's frame
 * reading path (net/server.c: receive buffering, header validation, body
 * and bulk reads, dispatch, replies) over a real loopback TCP connection.
 *
 * DESIGN. Two net_servers per process (one loop thread each), one
 * keyless (as --insecure) and one that demands the cluster key, whose handler
 * unpacks each request's body as its opcode's request type (through
 * net_req_unpack(), as every server does) and answers with the request's
 * bulk echoed, as PING does; opcode 0 is answered -EPROTO instead. Each
 * input is sent as the bytes of one connection: connect, send everything,
 * shut the write side, read the replies until the server closes. Every
 * reply must be a well-formed reply frame (weir_frame_decode() accepts it,
 * F_REPLY set) for a request id that was sent. The server reads whatever
 * arrived: frames split across reads, frames after a bad one (refused,
 * connection closed), short frames at EOF.
 * On the keyed server, every request that reaches the handler must come
 * from a connection that proved the key (rq_key_name set): anything else is
 * an authentication bypass, and the harness aborts.
 * Input: byte 0 holds options:
 *   bit 0  the checksum of every frame header in the rest is mended before
 *          sending (walking header, body_len, bulk_len), so that mutated
 *          headers reach the checks after the checksum;
 *   bit 1  send to the keyed server (else the keyless one);
 *   bit 2  with bit 1: run a genuine handshake first (the server's proof is
 *          checked), so that the bytes are requests of an authenticated
 *          connection.
 * The rest is the byte stream.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/key.h"
#include "common/le.h"
#include "fuzz.h"
#include "net/auth.h"
#include "weir.pb-c.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct net_server *fz_srv, *fz_srv_keyed;
static struct sockaddr_in fz_addr, fz_addr_keyed;
static struct net_auth *fz_auth;
static struct weir_keyring fz_kr;

static void srv_handle(struct net_req *rq)
{
	if (rq->rq_srv_arg == &fz_srv_keyed && !rq->rq_key_name[0]) {
		fprintf(stderr,
			"fuzz_net_server: op=%u served on the keyed server without"
			" authentication\n",
			rq->rq_hdr.fh_opcode);
		abort();
	}
	if (rq->rq_peer_sa.ss_family != AF_INET) {
		fprintf(stderr, "fuzz_net_server: request without its peer's address\n");
		abort();
	}
	const struct fz_op *o = fz_op_find(rq->rq_hdr.fh_opcode);
	int rc = rq->rq_hdr.fh_opcode ? 0 : -EPROTO;
	if (o) {
		ProtobufCMessage *m = net_req_unpack(rq, o->o_req);
		if (m)
			protobuf_c_message_free_unpacked(m, NULL);
		else
			rc = -EPROTO;
	}
	struct iovec iov = { rq->rq_bulk, (size_t)rq->rq_hdr.fh_bulk_len };
	net_req_reply(rq, rc, NULL, &iov, rq->rq_bulk ? 1 : 0);
}

static void srv_fini(void)
{
	net_server_stop(fz_srv);
	net_server_stop(fz_srv_keyed);
	net_auth_free(fz_auth);
	fz_srv = fz_srv_keyed = NULL;
}

static void addr_of(const struct net_server *s, struct sockaddr_in *a)
{
	a->sin_family = AF_INET;
	a->sin_port = htons(net_server_port(s));
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	char path[400], why[256] = "";
	const char *dir = fz_scratch("net-server");
	snprintf(path, sizeof(path), "%s/cluster.key", dir);
	fz_kr.kr_nr = 1;
	if (weir_key_generate("fuzz", &fz_kr.kr_keys[0]) ||
	    weir_keyring_save(path, &fz_kr, true) ||
	    net_auth_new(path, false, &fz_auth, why, sizeof(why))) {
		fprintf(stderr, "fuzz_net_server: key: %s\n", why);
		abort();
	}
	struct net_server_conf sc = {
		.sc_listen = "127.0.0.1:0",
		.sc_name = "fuzz",
		.sc_nr_loops = 1,
		.sc_max_inflight = 4,
	};
	struct net_server_ops so = { .so_handle = srv_handle, .so_arg = &fz_srv };
	int rc = net_server_start(&sc, &so, &fz_srv);
	sc.sc_auth = fz_auth;
	so.so_arg = &fz_srv_keyed;
	if (!rc)
		rc = net_server_start(&sc, &so, &fz_srv_keyed);
	if (rc) {
		fprintf(stderr, "fuzz_net_server: cannot start the servers\n");
		abort();
	}
	fz_at_exit(srv_fini);
	addr_of(fz_srv, &fz_addr);
	addr_of(fz_srv_keyed, &fz_addr_keyed);
	return 0;
}

/*
 * Check the replies read back: whole frames only, each a reply. After a
 * reset (\a clean false: the server closed with our bytes unread) the last
 * frame may be cut.
 */
static void replies_check(const uint8_t *p, size_t len, uint64_t max_reqid, bool clean)
{
	size_t off = 0;
	while (len - off >= WEIR_FRAME_HDR_SIZE) {
		struct weir_frame_hdr h;
		const char *why;
		int rc = weir_frame_decode(p + off, &h, &why);
		if (rc || !(h.fh_flags & WEIR_FRAME_F_REPLY) || h.fh_reqid > max_reqid) {
			fprintf(stderr, "fuzz_net_server: bad reply frame at %zu: rc=%d %s\n", off,
				rc, why);
			abort();
		}
		off += WEIR_FRAME_HDR_SIZE + h.fh_body_len + h.fh_bulk_len;
		if (off > len && !clean)
			return;
		if (off > len) {
			fprintf(stderr, "fuzz_net_server: reply frame cut short\n");
			abort();
		}
	}
	if (off != len && clean) {
		fprintf(stderr, "fuzz_net_server: %zu stray bytes after the replies\n", len - off);
		abort();
	}
}

/* A genuine keyed handshake, the client's side; the server must prove the key. */
static void client_handshake(int fd)
{
	uint8_t nc[32], pr[32], body[512];
	struct weir_frame_hdr h;
	weir_random_bytes(nc, sizeof(nc));
	Weir__AuthHello hello = WEIR__AUTH_HELLO__INIT;
	hello.version = 1;
	hello.nonce.data = nc;
	hello.nonce.len = sizeof(nc);
	hello.key_id.data = fz_kr.kr_keys[0].wk_id;
	hello.key_id.len = WEIR_KEY_ID_LEN;
	hello.name = (char *)"fuzz";
	ssize_t n = -EPIPE;
	h.fh_status = 0;
	if (!fz_send_frame(fd, WEIR__WIRE_OP__AUTH_HELLO, 0, FZ_REQID_HELLO, 0, &hello.base))
		n = fz_recv_frame(fd, &h, body, sizeof(body));
	Weir__AuthHelloRep *rep =
		n < 0 || h.fh_status ? NULL : weir__auth_hello_rep__unpack(NULL, (size_t)n, body);
	if (!rep || rep->nonce.len != 32 || rep->proof.len != 32) {
		fprintf(stderr,
			"fuzz_net_server: the keyed server did not answer a genuine hello"
			" (rc=%zd status=%d)\n",
			n, (int)h.fh_status);
		abort();
	}
	fz_auth_proof(&fz_kr, "weir-auth-v1 server", nc, rep->nonce.data, pr);
	if (memcmp(pr, rep->proof.data, sizeof(pr))) {
		fprintf(stderr, "fuzz_net_server: the server's proof is wrong\n");
		abort();
	}
	Weir__AuthProof p = WEIR__AUTH_PROOF__INIT;
	fz_auth_proof(&fz_kr, "weir-auth-v1 client", nc, rep->nonce.data, pr);
	weir__auth_hello_rep__free_unpacked(rep, NULL);
	p.proof.data = pr;
	p.proof.len = sizeof(pr);
	n = -EPIPE;
	h.fh_status = 0;
	if (!fz_send_frame(fd, WEIR__WIRE_OP__AUTH_PROOF, 0, FZ_REQID_PROOF, 0, &p.base))
		n = fz_recv_frame(fd, &h, body, sizeof(body));
	if (n < 0 || h.fh_status) {
		fprintf(stderr,
			"fuzz_net_server: the keyed server did not accept a genuine proof"
			" (rc=%zd status=%d)\n",
			n, (int)h.fh_status);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t len = size - 1;
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, len);
	if (data[0] & 1)
		fz_mend(buf, len);
	/* the largest request id among the headers, for the replies' check */
	uint64_t max_reqid = 0;
	for (size_t off = 0; len - off >= WEIR_FRAME_HDR_SIZE && off < len; off++)
		if (weir_get_le32(buf + off) == WEIR_FRAME_MAGIC) {
			uint64_t id = weir_get_le64(buf + off + 16);
			if (id > max_reqid)
				max_reqid = id;
		}

	bool keyed = data[0] & 2;
	const struct sockaddr_in *to = keyed ? &fz_addr_keyed : &fz_addr;
	int fd = fz_connect((const struct sockaddr *)to, sizeof(*to));
	if (fd < 0) {
		fprintf(stderr, "fuzz_net_server: connect: %s\n", strerror(-fd));
		abort();
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (keyed && (data[0] & 4))
		client_handshake(fd);
	fz_send_all(fd, buf, len); /* fails when the server refused a frame and closed */
	shutdown(fd, SHUT_WR);
	size_t cap = 65536, got = 0;
	uint8_t *rep = malloc(cap);
	bool clean = false;
	for (;;) {
		if (got == cap) {
			uint8_t *r2 = realloc(rep, cap * 2);
			if (!r2)
				break;
			rep = r2;
			cap *= 2;
		}
		ssize_t n = recv(fd, rep + got, cap - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		clean = n == 0;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	replies_check(rep, got, max_reqid, clean);
	free(rep);
	free(buf);
	return 0;
}
