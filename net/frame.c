/*
 * net/frame.c - see frame.h.
 */
#define _GNU_SOURCE
#include "frame.h"

#include <errno.h>
#include <string.h>
#include <zlib.h>

#include "common/le.h"

_Static_assert(WEIR_FRAME_HDR_SIZE == 48, "frame header is 48 bytes on the wire");

static uint32_t frame_crc(const uint8_t *p)
{
	return (uint32_t)crc32(0L, p, 40);
}

void weir_frame_encode(const struct weir_frame_hdr *h, uint8_t out[WEIR_FRAME_HDR_SIZE])
{
	weir_put_le32(out + 0, WEIR_FRAME_MAGIC);
	weir_put_le16(out + 4, WEIR_FRAME_VERSION);
	weir_put_le16(out + 6, h->fh_opcode);
	weir_put_le32(out + 8, h->fh_flags);
	weir_put_le32(out + 12, (uint32_t)h->fh_status);
	weir_put_le64(out + 16, h->fh_reqid);
	weir_put_le32(out + 24, h->fh_body_len);
	weir_put_le32(out + 28, 0);
	weir_put_le64(out + 32, h->fh_bulk_len);
	weir_put_le32(out + 40, frame_crc(out));
	weir_put_le32(out + 44, 0);
}

int weir_frame_decode(const uint8_t in[WEIR_FRAME_HDR_SIZE], struct weir_frame_hdr *h,
		      const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	h->fh_magic = weir_get_le32(in);
	if (h->fh_magic != WEIR_FRAME_MAGIC) {
		*why = "bad magic";
		return -EBADMSG;
	}
	if (weir_get_le32(in + 40) != frame_crc(in)) {
		*why = "header checksum mismatch";
		return -EBADMSG;
	}
	h->fh_version = weir_get_le16(in + 4);
	if (h->fh_version != WEIR_FRAME_VERSION) {
		*why = "unsupported protocol version";
		return -EPROTONOSUPPORT;
	}
	h->fh_opcode = weir_get_le16(in + 6);
	h->fh_flags = weir_get_le32(in + 8);
	h->fh_status = (int32_t)weir_get_le32(in + 12);
	h->fh_reqid = weir_get_le64(in + 16);
	h->fh_body_len = weir_get_le32(in + 24);
	h->fh_bulk_len = weir_get_le64(in + 32);
	if ((h->fh_flags & ~WEIR_FRAME_F_KNOWN) || weir_get_le32(in + 28) ||
	    weir_get_le32(in + 44)) {
		*why = "unknown flags or nonzero reserved field";
		return -EPROTO;
	}
	if (h->fh_body_len > WEIR_FRAME_MAX_BODY) {
		*why = "body length over the limit";
		return -EMSGSIZE;
	}
	if (h->fh_bulk_len > WEIR_FRAME_MAX_BULK) {
		*why = "bulk length over the limit";
		return -EMSGSIZE;
	}
	*why = "ok";
	return 0;
}

void weir_xid_encode(const struct weir_xid_hdr *x, uint8_t out[WEIR_XID_HDR_SIZE])
{
	memcpy(out, x->xh_uuid, 16);
	weir_put_le64(out + 16, x->xh_xid);
	weir_put_le32(out + 24, x->xh_tag);
	weir_put_le32(out + 28, 0);
}

void weir_txn_encode(const struct weir_txn_hdr *t, uint8_t out[WEIR_TXN_HDR_SIZE])
{
	weir_put_le64(out, t->th_transno);
	weir_put_le64(out + 8, t->th_last_committed);
}

void weir_txn_decode(const uint8_t in[WEIR_TXN_HDR_SIZE], struct weir_txn_hdr *t)
{
	t->th_transno = weir_get_le64(in);
	t->th_last_committed = weir_get_le64(in + 8);
}

int weir_xid_decode(const uint8_t in[WEIR_XID_HDR_SIZE], struct weir_xid_hdr *x)
{
	memcpy(x->xh_uuid, in, 16);
	x->xh_xid = weir_get_le64(in + 16);
	x->xh_tag = weir_get_le32(in + 24);
	if (weir_get_le32(in + 28) ||
	    (x->xh_tag != WEIR_XID_NO_TAG && x->xh_tag >= WEIR_XID_MAX_SLOTS))
		return -EPROTO;
	return 0;
}
