/*
 * common/layout.h - file layouts and the RAID-0 stripe arithmetic.
 *
 * A RAID-0 layout deals a file's bytes round-robin to lo_stripe_count
 * objects in chunks of lo_stripe_size bytes: file stripe number s lives in
 * object (s % count) at object offset (s / count) * size. This is Lustre's
 * LOV_PATTERN_RAID0 (lustre/lov/lov_offset.c); the names below follow it.
 *
 * Every function here is pure arithmetic: thread-safe, no allocation.
 */
#ifndef WEIR_COMMON_LAYOUT_H
#define WEIR_COMMON_LAYOUT_H

#include <stdint.h>

#define WEIR_LAYOUT_PATTERN_RAID0 1
/** Most stripes one layout may have (also bounded by the number of OSTs). */
#define WEIR_LAYOUT_MAX_STRIPES 128
/** Stripe sizes are multiples of this (Lustre's LOV_MIN_STRIPE_SIZE). */
#define WEIR_LAYOUT_STRIPE_ALIGN (64U * 1024U)
/** Largest stripe size accepted. */
#define WEIR_LAYOUT_MAX_STRIPE_SIZE (1U << 30)
/** Largest file offset (POSIX off_t). */
#define WEIR_MAX_FILE_OFF INT64_MAX

struct weir_layout {
	uint32_t lo_pattern;      /* WEIR_LAYOUT_PATTERN_RAID0 */
	uint32_t lo_stripe_size;  /* bytes per stripe chunk */
	uint32_t lo_stripe_count; /* objects, 1..WEIR_LAYOUT_MAX_STRIPES */
	uint32_t lo_gen;          /* layout generation, bumped on change */
	uint32_t lo_osts[WEIR_LAYOUT_MAX_STRIPES]; /* OST index of object i */
};

/**
 * Check a layout's fields.
 * \return 0, or -EINVAL (bad pattern, count 0 or too large, stripe size not
 *         a multiple of 64 KiB or above 1 GiB, the same OST twice).
 */
int weir_layout_check(const struct weir_layout *lo);

/** Object index (0..count-1) and object offset holding file byte \a off. */
void weir_layout_file_to_obj(const struct weir_layout *lo, uint64_t off, uint32_t *idx,
			     uint64_t *obj_off);

/** File offset of byte \a obj_off of object \a idx. */
uint64_t weir_layout_obj_to_file(const struct weir_layout *lo, uint32_t idx, uint64_t obj_off);

/**
 * Smallest offset in object \a idx whose file offset is >= \a file_off.
 * The object bytes a file extent [a, b) touches are exactly the object
 * extent [obj_lower_bound(a), obj_lower_bound(b)), which is contiguous.
 * Also the size object \a idx has when the file is truncated to \a file_off.
 */
uint64_t weir_layout_obj_lower_bound(const struct weir_layout *lo, uint32_t idx,
				     uint64_t file_off);

/** File size implied by object \a idx being \a obj_size bytes long (0 stays 0). */
uint64_t weir_layout_file_size(const struct weir_layout *lo, uint32_t idx, uint64_t obj_size);

/** Longest run of file bytes from \a off that stay inside one stripe chunk. */
static inline uint64_t weir_layout_chunk_left(const struct weir_layout *lo, uint64_t off)
{
	return lo->lo_stripe_size - off % lo->lo_stripe_size;
}

#endif /* WEIR_COMMON_LAYOUT_H */
