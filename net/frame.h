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
/**
 * The body starts with a struct weir_xid_hdr (WEIR_XID_HDR_SIZE bytes, then
 * the protobuf message): the client's replay identity, for the MDS's reply
 * cache (docs/wire-format.md, "Replay"). Only clients send it, only to the MDS.
 * On a reply (with WEIR_FRAME_F_REPLY) it means the body starts with a struct
 * weir_txn_hdr (WEIR_TXN_HDR_SIZE bytes, then the protobuf message, if any):
 * the MDS answers so every request that carried the replay prefix.
 */
#define WEIR_FRAME_F_XID 0x4U
#define WEIR_FRAME_F_KNOWN 0x7U /* every flag this version understands */

/** Bytes of the replay prefix of a WEIR_FRAME_F_XID body. */
#define WEIR_XID_HDR_SIZE 32
/** Most reply-cache slots (tags) of one client. */
#define WEIR_XID_MAX_SLOTS 64
/** xh_tag of a request that has no reply-cache slot (it changes nothing). */
#define WEIR_XID_NO_TAG 0xffffffffU

/**
 * The replay prefix (little-endian, 32 bytes):
 *   0  u8[16] uuid  the mount's identity, random at mount, the same for its life
 *  16  u64 xid      the request's id, chosen by the client; the same when resent
 *  24  u32 tag      reply-cache slot, < WEIR_XID_MAX_SLOTS, or WEIR_XID_NO_TAG
 *  28  u32 flags    0
 */
struct weir_xid_hdr {
	uint8_t xh_uuid[16];
	uint64_t xh_xid;
	uint32_t xh_tag;
};

/** Encode \a x into WEIR_XID_HDR_SIZE bytes at \a out. */
void weir_xid_encode(const struct weir_xid_hdr *x, uint8_t out[WEIR_XID_HDR_SIZE]);
/**
 * Decode a replay prefix. \return 0, or -EPROTO when the tag is out of range
 * or the flags are not 0.
 */
int weir_xid_decode(const uint8_t in[WEIR_XID_HDR_SIZE], struct weir_xid_hdr *x);

/** Bytes of the reply prefix of a WEIR_FRAME_F_XID reply body. */
#define WEIR_TXN_HDR_SIZE 16

/**
 * The reply prefix (little-endian, 16 bytes), on every reply to a request
 * that carried a replay prefix, error replies included (then it is the whole
 * body):
 *   0  u64 transno         the MDS write sequence of the batch that applied
 *                          the request (the last, if it made several); 0 when
 *                          it changed nothing
 *   8  u64 last_committed  the write sequence the MDS had synced to its log
 *                          when it took the request: every request with a
 *                          transno <= it survives a host crash of the MDS
 * A client keeps what it needs to replay a request while transno >
 * last_committed (client/replay.c). Both only grow within one MDS instance.
 */
struct weir_txn_hdr {
	uint64_t th_transno;
	uint64_t th_last_committed;
};

/** Encode \a t into WEIR_TXN_HDR_SIZE bytes at \a out. */
void weir_txn_encode(const struct weir_txn_hdr *t, uint8_t out[WEIR_TXN_HDR_SIZE]);
/** Decode a reply prefix (every value is valid). */
void weir_txn_decode(const uint8_t in[WEIR_TXN_HDR_SIZE], struct weir_txn_hdr *t);

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
