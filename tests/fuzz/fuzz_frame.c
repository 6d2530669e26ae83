/*
 * tests/fuzz/fuzz_frame.c - libFuzzer harness: the frame header codec
 * (net/frame.c), the status table (net/status.c) and the protobuf decoding
 * of every request and reply body type.
 *
 * Input: a frame as on the wire (48-byte header, then the body); a header
 * whose only fault is its checksum is also tried with the checksum mended,
 * so that mutated headers reach the checks after it. Checks:
 *   - weir_frame_decode() never reads past its 48 bytes and, when it
 *     accepts a header, its lengths are within the limits and encoding
 *     the decoded header gives back the same 48 bytes (nothing accepted
 *     is ignored: reserved fields are zero, the checksum covers the rest);
 *   - a header built from arbitrary field values (the first 40 bytes read
 *     as fields) always decodes to the same fields when its lengths and
 *     flags are legal, and is refused with the right errno when not;
 *   - the status mapping is stable: errno -> status -> errno is the identity
 *     on what it returns;
 *   - the body after the header (up to body_len) is unpacked as the
 *     opcode's request type, or reply type when F_REPLY is set, packed
 *     again, and the packed size agrees with protobuf-c's own count.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "common/le.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_ops_check();
	return 0;
}

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "fuzz_frame: %s:%d: check failed: %s\n", __FILE__,         \
				__LINE__, #c);                                                     \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* Does \a m or a message inside it hold unknown fields? */
static bool has_unknown(const ProtobufCMessage *m)
{
	if (m->n_unknown_fields)
		return true;
	const ProtobufCMessageDescriptor *d = m->descriptor;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		const char *base = (const char *)m + f->offset;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
			ProtobufCMessage *const *arr = *(ProtobufCMessage *const *const *)base;
			for (size_t j = 0; j < n; j++)
				if (has_unknown(arr[j]))
					return true;
		} else {
			const ProtobufCMessage *sub = *(ProtobufCMessage *const *)base;
			if (sub && has_unknown(sub))
				return true;
		}
	}
	return false;
}

static void body_check(const struct weir_frame_hdr *h, const uint8_t *body, size_t len)
{
	const struct fz_op *o = fz_op_find(h->fh_opcode);
	if (!o)
		return;
	const ProtobufCMessageDescriptor *d =
	    (h->fh_flags & WEIR_FRAME_F_REPLY) ? o->o_rep : o->o_req;
	ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, len, body);
	if (!m)
		return;
	CHECK(protobuf_c_message_check(m));
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(n ? n : 1);
	if (buf) {
		CHECK(protobuf_c_message_pack(m, buf) == n);
		ProtobufCMessage *m2 = protobuf_c_message_unpack(d, NULL, n, buf);
		/* what we pack, we read back; not always with unknown fields kept:
		 * protobuf-c 1.4 reads a field number 0 written as 0x80 0x00, which
		 * it packs again as 0x00 and then refuses (no Weir code repacks a
		 * received message) */
		CHECK(m2 != NULL || has_unknown(m));
		if (m2)
			protobuf_c_message_free_unpacked(m2, NULL);
		free(buf);
	}
	protobuf_c_message_free_unpacked(m, NULL);
}

static void status_check(int32_t status)
{
	int e = weir_status_to_errno(status);
	CHECK(e <= 0);
	CHECK(weir_status_to_errno(weir_status_from_errno(e)) == e);
	if (status == 0)
		CHECK(e == 0);
}

/* A header built from raw field values: legal ones go through unchanged. */
static void encode_check(const uint8_t *in)
{
	struct weir_frame_hdr h =
				  {
				      .fh_opcode = weir_get_le16(in + 6),
				      .fh_flags = weir_get_le32(in + 8),
				      .fh_status = (int32_t)weir_get_le32(in + 12),
				      .fh_reqid = weir_get_le64(in + 16),
				      .fh_body_len = weir_get_le32(in + 24),
				      .fh_bulk_len = weir_get_le64(in + 32),
				  },
			      d;
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	const char *why = NULL;
	weir_frame_encode(&h, raw);
	int rc = weir_frame_decode(raw, &d, &why);
	CHECK(why != NULL);
	if (h.fh_flags & ~WEIR_FRAME_F_KNOWN) {
		CHECK(rc == -EPROTO);
		return;
	}
	if (h.fh_body_len > WEIR_FRAME_MAX_BODY || h.fh_bulk_len > WEIR_FRAME_MAX_BULK) {
		CHECK(rc == -EMSGSIZE);
		return;
	}
	CHECK(rc == 0);
	CHECK(d.fh_opcode == h.fh_opcode && d.fh_flags == h.fh_flags &&
	      d.fh_status == h.fh_status && d.fh_reqid == h.fh_reqid &&
	      d.fh_body_len == h.fh_body_len && d.fh_bulk_len == h.fh_bulk_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < WEIR_FRAME_HDR_SIZE)
		return 0;
	/* a copy of exactly the header, so ASan sees any read past it */
	uint8_t *hdr = malloc(WEIR_FRAME_HDR_SIZE);
	if (!hdr)
		return 0;
	memcpy(hdr, data, WEIR_FRAME_HDR_SIZE);
	encode_check(hdr);
	struct weir_frame_hdr h;
	const char *why = NULL;
	int rc = weir_frame_decode(hdr, &h, &why);
	CHECK(why != NULL);
	if (rc == -EBADMSG && weir_get_le32(hdr) == WEIR_FRAME_MAGIC) {
		/* a mutated header rarely keeps its checksum: mend it, and go on */
		weir_put_le32(hdr + 40, (uint32_t)crc32(0L, hdr, 40));
		rc = weir_frame_decode(hdr, &h, &why);
		CHECK(rc != -EBADMSG);
	}
	status_check((int32_t)weir_get_le32(hdr + 12));
	if (rc) {
		CHECK(rc == -EBADMSG || rc == -EPROTONOSUPPORT || rc == -EPROTO || rc == -EMSGSIZE);
		free(hdr);
		return 0;
	}
	CHECK(h.fh_body_len <= WEIR_FRAME_MAX_BODY && h.fh_bulk_len <= WEIR_FRAME_MAX_BULK);
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	weir_frame_encode(&h, raw);
	CHECK(memcmp(raw, hdr, WEIR_FRAME_HDR_SIZE) == 0);
	free(hdr);

	size_t body_len = size - WEIR_FRAME_HDR_SIZE;
	if (body_len > h.fh_body_len)
		body_len = h.fh_body_len;
	uint8_t *body = malloc(body_len ? body_len : 1);
	if (body) {
		memcpy(body, data + WEIR_FRAME_HDR_SIZE, body_len);
		body_check(&h, body, body_len);
		free(body);
	}
	return 0;
}
