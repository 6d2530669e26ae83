/*
 * tests/fuzz/fuzz_net_client.c - libFuzzer harness: the client's reply
 * reading path (net/rpc.c: reply headers, matching by request id, bodies
 * and bulk into the caller's buffers, broken and short replies) against a
 * hostile server, over a real loopback TCP connection. Every Weir process
 * is such a client: libweir of the MDS and the OSSs, the MDS of the OSSs
 * (destroys, glimpses), the OSS of the MDS (registration).
 *
 * DESIGN. Per input: a net_conn_open() to a socket this harness listens on,
 * one call started (the opcode and the reply bulk buffers chosen by the
 * input), the rest of the input written back as the server's bytes, the
 * server side closed; then net_call_wait() must return (0 or a negative
 * errno, never hang past the call's timeout), and a reply body is unpacked
 * as the opcode's reply type, as callers do.
 * Input: byte 0 options (bit 0: mend the header checksums of the frames
 * that follow, as in fuzz_net_server.c); byte 1 picks the opcode (an index
 * into fz_ops); byte 2: reply bulk buffer sizes (low nibble * 512 and high
 * nibble * 512 bytes, two iovecs); the rest is what the server sends.
 * The first call on a new connection has request id 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
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

static int fz_lfd = -1;
static char fz_hostport[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_scratch("net-client");
	uint16_t port;
	if (net_listen("127.0.0.1:0", &fz_lfd, &port)) {
		fprintf(stderr, "fuzz_net_client: cannot listen\n");
		abort();
	}
	snprintf(fz_hostport, sizeof(fz_hostport), "127.0.0.1:%u", port);
	fz_at_exit(NULL);
	return 0;
}

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

static int accept_one(void)
{
	for (int i = 0; i < 5000; i++) {
		int fd = accept4(fz_lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			return fd;
		if (errno != EAGAIN && errno != EINTR)
			break;
		usleep(200);
	}
	perror("fuzz_net_client: accept");
	abort();
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
		mend(buf, len);
	const struct fz_op *o = &fz_ops[data[1] % fz_nr_ops];
	size_t b0 = (size_t)(data[2] & 15) * 512, b1 = (size_t)(data[2] >> 4) * 512;
	uint8_t *bulk = malloc(b0 + b1 + 1);

	struct net_conn *c;
	if (net_conn_open(fz_hostport, 2000, &c)) {
		fprintf(stderr, "fuzz_net_client: cannot connect\n");
		abort();
	}
	int sfd = accept_one();
	struct iovec iov[2] = {{bulk, b0}, {bulk + b0, b1}};
	struct net_call call;
	net_call_init(&call, o->o_op, NULL);
	call.nc_rep_bulk = iov;
	call.nc_rep_nr_bulk = 2;
	call.nc_timeout_ms = 5000;
	int rc = net_call_start(c, &call);
	if (!rc) {
		for (size_t off = 0; off < len;) {
			ssize_t n = send(sfd, buf + off, len - off, MSG_NOSIGNAL);
			if (n <= 0)
				break;
			off += (size_t)n;
		}
		shutdown(sfd, SHUT_WR); /* EOF after the bytes: no reset to race the reads */
		rc = net_call_wait(&call);
		if (rc > 0) {
			fprintf(stderr, "fuzz_net_client: net_call_wait returned %d\n", rc);
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
	}
	net_call_fini(&call);
	net_conn_close(c);
	close(sfd);
	free(bulk);
	free(buf);
	return 0;
}
