/*
 * common/fid.h - the 128-bit file identifier.
 *
 * A FID is (sequence, object id), as in Lustre (lustre_idl.h, struct lu_fid,
 * without the version word). A sequence range belongs to exactly one MDT, so a
 * FID routes to its MDT with no lookup. Printed as Lustre prints them:
 * "[0x200000400:0x1:0x0]" (the third word is always 0 in Weir).
 */
#ifndef WEIR_COMMON_FID_H
#define WEIR_COMMON_FID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct weir_fid {
	uint64_t fid_seq; /* sequence: high bits select the MDT */
	uint64_t fid_oid; /* object id within the sequence */
};

/** The root directory of the filesystem (Lustre's FID_SEQ_ROOT:1). */
#define WEIR_FID_SEQ_ROOT 0x200000007ULL
/** First sequence for normal files on MDT 0 (Lustre's FID_SEQ_NORMAL). */
#define WEIR_FID_SEQ_NORMAL 0x200000400ULL
/** MDTs one filesystem may have (indexes 0 .. WEIR_MDT_MAX - 1). */
#define WEIR_MDT_MAX 256
/** Bytes of a FID on disk and in RocksDB keys. */
#define WEIR_FID_BYTES 16

#define WEIR_FID_F "[0x%llx:0x%llx:0x0]"
#define WEIR_FID_P(f) (unsigned long long)(f)->fid_seq, (unsigned long long)(f)->fid_oid
/** Longest string weir_fid_to_str() writes, with its NUL. */
#define WEIR_FID_STR_MAX 48

static inline struct weir_fid weir_fid_root(void)
{
	struct weir_fid f = { WEIR_FID_SEQ_ROOT, 1 };
	return f;
}
static inline bool weir_fid_eq(const struct weir_fid *a, const struct weir_fid *b)
{
	return a->fid_seq == b->fid_seq && a->fid_oid == b->fid_oid;
}
static inline bool weir_fid_is_zero(const struct weir_fid *f)
{
	return f->fid_seq == 0 && f->fid_oid == 0;
}

/**
 * The sequence of MDT \a mdt's FIDs: WEIR_FID_SEQ_NORMAL + mdt * 2^32 (the
 * sequence -> MDT table is this formula, the same on every node).
 */
static inline uint64_t weir_fid_mdt_seq(uint32_t mdt)
{
	return WEIR_FID_SEQ_NORMAL + (uint64_t)mdt * 0x100000000ULL;
}
/**
 * The MDT that holds \a f: the root and every sequence below the first
 * normal one are MDT0's. \return 0 .. WEIR_MDT_MAX - 1, or -1 for a
 * sequence of no MDT (a FID no MDT ever made).
 */
static inline int weir_fid_mdt(const struct weir_fid *f)
{
	if (f->fid_seq < WEIR_FID_SEQ_NORMAL)
		return 0;
	uint64_t i = (f->fid_seq - WEIR_FID_SEQ_NORMAL) >> 32;
	return i < WEIR_MDT_MAX ? (int)i : -1;
}

/** Big-endian 16 bytes (sorts like the numbers); for RocksDB keys. */
void weir_fid_pack_be(const struct weir_fid *f, uint8_t out[WEIR_FID_BYTES]);
void weir_fid_unpack_be(const uint8_t in[WEIR_FID_BYTES], struct weir_fid *f);

/** "[0x200000400:0x2a:0x0]". \return \a buf. */
const char *weir_fid_to_str(const struct weir_fid *f, char *buf, size_t len);
/**
 * Parse the printed form, with or without brackets ("0x200000400:0x2a:0x0"
 * or "0x200000400:0x2a"). \return 0 or -EINVAL.
 */
int weir_fid_parse(const char *s, struct weir_fid *f);

/**
 * Fold a FID to a 64-bit inode number for st_ino: the same fold as Lustre's
 * fid_flatten() (lustre/include/lustre_fid.h): (seq << 24) + ((seq >> 24) *
 * 0xffffff) + oid, with 0 mapped to 1. Unique while oid < 2^24 per sequence,
 * and well spread beyond.
 */
uint64_t weir_fid_flatten(const struct weir_fid *f);

#endif /* WEIR_COMMON_FID_H */
