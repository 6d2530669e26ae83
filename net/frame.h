/*
 * net/frame.h - the fixed frame header that starts every Weir message.
 *
 * Layout (little-endian, 48 bytes, version 1; docs/wire-format.md):
 *   0  u32 magic      "WEIR" = 0x52494557
 *   4  u16 version    1
 *   6  u16 opcode     weir.WireOp
 *   8  u32 flags      WEIR_FRAME_F_*
 *  12  i32 status     weir.WireStatus in replies (0 in requests)
 *  16  u64 reqid      chosen by the sender of a request, echoed in its reply
 *  24  u32 body_len   bytes of protobuf body after the header
 *  28  u32 reserved   0
 *  32  u64 bulk_len   bytes of raw bulk data after the body
 *  40  u32 hdr_crc    CRC-32 (zlib polynomial) of bytes 0..39
 *  44  u32 pad        0
 * Lengths are bounded by WEIR_FRAME_MAX_BODY and WEIR_FRAME_MAX_BULK; a frame
 * that breaks any rule is refused and its connection closed.
 */
#ifndef WEIR_NET_FRAME_H
#define WEIR_NET_FRAME_H

#include <stdint.h>

#define WEIR_FRAME_MAGIC 0x52494557U
#define WEIR_FRAME_VERSION 1
#define WEIR_FRAME_HDR_SIZE 48
/** Largest protobuf body: 4 MiB (a readdir page of long names fits well within). */
#define WEIR_FRAME_MAX_BODY (4U * 1024U * 1024U)
/** Largest bulk payload: 16 MiB, the largest single object I/O RPC. */
#define WEIR_FRAME_MAX_BULK (16ULL * 1024ULL * 1024ULL)

#define WEIR_FRAME_F_REPLY 0x1U
/** A request the sender wants no reply to (net_call_send_oneway()). */
#define WEIR_FRAME_F_NOREPLY 0x2U
#define WEIR_FRAME_F_KNOWN 0x3U /* every flag this version understands */

struct weir_frame_hdr {
	uint32_t fh_magic;
	uint16_t fh_version;
	uint16_t fh_opcode;
	uint32_t fh_flags;
	int32_t fh_status;
	uint64_t fh_reqid;
	uint32_t fh_body_len; /* bytes */
	uint64_t fh_bulk_len; /* bytes */
};

/**
 * Encode \a h into 48 bytes, filling magic, version and the checksum.
 * \param[out] out  Caller-owned, WEIR_FRAME_HDR_SIZE bytes.
 */
void weir_frame_encode(const struct weir_frame_hdr *h, uint8_t out[WEIR_FRAME_HDR_SIZE]);

/**
 * Decode and validate a received header.
 * \return 0, or a negative errno saying what is wrong:
 * \retval -EBADMSG   bad magic or checksum
 * \retval -EPROTONOSUPPORT  unknown version
 * \retval -EPROTO    unknown flags or nonzero reserved fields
 * \retval -EMSGSIZE  body_len or bulk_len over its bound
 * \a why (may be NULL) gets a static string for the log line.
 */
int weir_frame_decode(const uint8_t in[WEIR_FRAME_HDR_SIZE], struct weir_frame_hdr *h,
		      const char **why);

/**
 * Map a negative errno to a weir.WireStatus value and back (table in
 * net/status.c). Unknown errnos go out as WS_EIO; unknown statuses come in as
 * -EIO. 0 maps to WS_OK and back.
 */
int32_t weir_status_from_errno(int rc);
int weir_status_to_errno(int32_t status);

#endif /* WEIR_NET_FRAME_H */
