/*
 * tests/fuzz/fuzz_net_server.c - libFuzzer harness: the server's frame
 * reading path (net/server.c: receive buffering, header validation, body
 * and bulk reads, dispatch, replies) over a real loopback TCP connection.
 *
 * DESIGN. One net_server per process (one loop thread) whose handler
 * unpacks each request's body as its opcode's request type (through
 * net_req_unpack(), as every server does) and answers with the request's
 * bulk echoed, as PING does; opcode 0 is answered -EPROTO instead. Each
 * input is sent as the bytes of one connection: connect, send everything,
 * shut the write side, read the replies until the server closes. Every
 * reply must be a well-formed reply frame (weir_frame_decode() accepts it,
 * F_REPLY set) for a request id that was sent. The server reads whatever
 * arrived: frames split across reads, frames after a bad one (refused,
 * connection closed), short frames at EOF.
 * Input: byte 0 holds options; bit 0 set: the checksum of every frame
 * header in the rest is mended before sending (walking header, body_len,
 * bulk_len), so that mutated headers reach the checks after the checksum.
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
#include <zlib.h>

#include "common/le.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct net_server *fz_srv;
static struct sockaddr_in fz_addr;

static void srv_handle(struct net_req *rq)
{
	const struct fz_op *o = fz_op_find(rq->rq_hdr.fh_opcode);
	int rc = rq->rq_hdr.fh_opcode ? 0 : -EPROTO;
	if (o) {
		ProtobufCMessage *m = net_req_unpack(rq, o->o_req);
		if (m)
			protobuf_c_message_free_unpacked(m, NULL);
		else
			rc = -EPROTO;
	}
	struct iovec iov = {rq->rq_bulk, (size_t)rq->rq_hdr.fh_bulk_len};
	net_req_reply(rq, rc, NULL, &iov, rq->rq_bulk ? 1 : 0);
}

static void srv_fini(void)
{
	net_server_stop(fz_srv);
	fz_srv = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_scratch("net-server");
	struct net_server_conf sc = {
	    .sc_listen = "127.0.0.1:0",
	    .sc_name = "fuzz",
	    .sc_nr_loops = 1,
	    .sc_max_inflight = 4,
	};
	struct net_server_ops so = {.so_handle = srv_handle};
	if (net_server_start(&sc, &so, &fz_srv)) {
		fprintf(stderr, "fuzz_net_server: cannot start the server\n");
		abort();
	}
	fz_at_exit(srv_fini);
	fz_addr.sin_family = AF_INET;
	fz_addr.sin_port = htons(net_server_port(fz_srv));
	fz_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return 0;
}

/* Mend the header checksums of the frames in \a p (the stream as the server will parse it). */
static void mend(uint8_t *p, size_t len)
{
	size_t off = 0;
	while (len - off >= WEIR_FRAME_HDR_SIZE) {
		uint8_t *h = p + off;
		weir_put_le32(h + 40, (uint32_t)crc32(0L, h, 40));
		uint64_t skip =
		    WEIR_FRAME_HDR_SIZE + (uint64_t)weir_get_le32(h + 24) + weir_get_le64(h + 32);
		if (skip > len - off)
			break;
		off += skip;
	}
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
		mend(buf, len);
	/* the largest request id among the headers, for the replies' check */
	uint64_t max_reqid = 0;
	for (size_t off = 0; len - off >= WEIR_FRAME_HDR_SIZE && off < len; off++)
		if (weir_get_le32(buf + off) == WEIR_FRAME_MAGIC) {
			uint64_t id = weir_get_le64(buf + off + 16);
			if (id > max_reqid)
				max_reqid = id;
		}

	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&fz_addr, sizeof(fz_addr)) < 0) {
		perror("fuzz_net_server: connect");
		abort();
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (size_t off = 0; off < len;) {
		ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL);
		if (n <= 0)
			break; /* the server refused a frame and closed */
		off += (size_t)n;
	}
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
