/*
 * tests/lib/th_auth.c - see th_auth.h. The handshake's inputs are in
 * net/proto/weir.proto ("the handshake"); this is an independent writing of
 * the client side, so a test can also check what the server proves.
 */
#define _GNU_SOURCE
#include "th_auth.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "harness.h"
#include "net/frame.h"
#include "weir.pb-c.h"

static int raw_send(int fd, uint16_t op, const ProtobufCMessage *m)
{
	uint8_t raw[WEIR_FRAME_HDR_SIZE], body[512];
	size_t len = m ? protobuf_c_message_pack(m, body) : 0;
	struct weir_frame_hdr h = { .fh_opcode = op, .fh_reqid = 7, .fh_body_len = (uint32_t)len };
	weir_frame_encode(&h, raw);
	if (weir_write_all(fd, raw, sizeof(raw)) || (len && weir_write_all(fd, body, len)))
		return -EIO;
	return 0;
}

static int raw_recv(int fd, int *status, uint8_t *body, size_t *len)
{
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	struct weir_frame_hdr h;
	if (weir_read_all(fd, raw, sizeof(raw)) || weir_frame_decode(raw, &h, NULL) ||
	    h.fh_body_len > *len || weir_read_all(fd, body, h.fh_body_len))
		return -EIO;
	*len = h.fh_body_len;
	*status = weir_status_to_errno(h.fh_status);
	return 0;
}

static void proof(const struct weir_key *k, const char *tag, const uint8_t *nc,
		  const uint8_t *ns, uint8_t *out)
{
	struct iovec iov[4] = { { (void *)tag, strlen(tag) },
				{ (void *)k->wk_id, WEIR_KEY_ID_LEN },
				{ (void *)nc, 32 },
				{ (void *)ns, 32 } };
	weir_hmac_sha256(k->wk_key, WEIR_KEY_LEN, iov, 4, out);
}

int th_auth_raw(int fd, const struct weir_key *k, const uint8_t *nc, const uint8_t *replay,
		uint8_t *sent)
{
	struct weir_keyring kr = { 0 };
	uint8_t my_nc[32], body[512];
	int status = 0, rc;
	if (!k) {
		const char *f = getenv("WEIR_KEY_FILE");
		if (!f || weir_keyring_load(f, &kr, NULL, 0))
			return -ENOKEY;
		k = &kr.kr_keys[0];
	}
	if (!nc) {
		weir_random_bytes(my_nc, sizeof(my_nc));
		nc = my_nc;
	}
	Weir__AuthHello h = WEIR__AUTH_HELLO__INIT;
	h.version = 1;
	h.nonce.data = (uint8_t *)nc;
	h.nonce.len = 32;
	h.key_id.data = (uint8_t *)k->wk_id;
	h.key_id.len = WEIR_KEY_ID_LEN;
	h.name = (char *)"test-raw";
	size_t len = sizeof(body);
	rc = raw_send(fd, WEIR__WIRE_OP__AUTH_HELLO, &h.base);
	if (!rc)
		rc = raw_recv(fd, &status, body, &len);
	if (!rc && status)
		rc = status;
	Weir__AuthHelloRep *r = rc ? NULL : weir__auth_hello_rep__unpack(NULL, len, body);
	if (!rc && (!r || r->nonce.len != 32 || r->proof.len != 32))
		rc = -EPROTO;
	if (!rc) {
		uint8_t want[32], mine[32];
		proof(k, "weir-auth-v1 server", nc, r->nonce.data, want);
		if (memcmp(want, r->proof.data, 32))
			rc = -EPROTO; /* the server did not prove the key */
		proof(k, "weir-auth-v1 client", nc, r->nonce.data, mine);
		if (sent)
			memcpy(sent, mine, 32);
		Weir__AuthProof p = WEIR__AUTH_PROOF__INIT;
		p.proof.data = (uint8_t *)(replay ? replay : mine);
		p.proof.len = 32;
		len = sizeof(body);
		if (!rc)
			rc = raw_send(fd, WEIR__WIRE_OP__AUTH_PROOF, &p.base);
		if (!rc)
			rc = raw_recv(fd, &status, body, &len);
		if (!rc)
			rc = status;
	}
	if (r)
		weir__auth_hello_rep__free_unpacked(r, NULL);
	weir_keyring_wipe(&kr);
	return rc;
}

int th_tcp_connect_auth(uint16_t port)
{
	int fd = th_tcp_connect(port);
	if (fd < 0)
		return fd;
	int rc = th_auth_raw(fd, NULL, NULL, NULL, NULL);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}
