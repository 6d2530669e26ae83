/*
 * common/layout.c - see layout.h.
 */
#define _GNU_SOURCE
#include "layout.h"

#include <errno.h>

int weir_layout_check(const struct weir_layout *lo)
{
	if (lo->lo_pattern != WEIR_LAYOUT_PATTERN_RAID0)
		return -EINVAL;
	if (lo->lo_stripe_count == 0 || lo->lo_stripe_count > WEIR_LAYOUT_MAX_STRIPES)
		return -EINVAL;
	if (lo->lo_stripe_size == 0 || lo->lo_stripe_size % WEIR_LAYOUT_STRIPE_ALIGN ||
	    lo->lo_stripe_size > WEIR_LAYOUT_MAX_STRIPE_SIZE)
		return -EINVAL;
	for (uint32_t i = 0; i < lo->lo_stripe_count; i++)
		for (uint32_t j = i + 1; j < lo->lo_stripe_count; j++)
			if (lo->lo_osts[i] == lo->lo_osts[j])
				return -EINVAL;
	return 0;
}

void weir_layout_file_to_obj(const struct weir_layout *lo, uint64_t off, uint32_t *idx,
			     uint64_t *obj_off)
{
	uint64_t ss = lo->lo_stripe_size;
	uint64_t s = off / ss;
	*idx = (uint32_t)(s % lo->lo_stripe_count);
	*obj_off = (s / lo->lo_stripe_count) * ss + off % ss;
}

uint64_t weir_layout_obj_to_file(const struct weir_layout *lo, uint32_t idx, uint64_t obj_off)
{
	uint64_t ss = lo->lo_stripe_size;
	uint64_t row = obj_off / ss;
	return (row * lo->lo_stripe_count + idx) * ss + obj_off % ss;
}

uint64_t weir_layout_obj_lower_bound(const struct weir_layout *lo, uint32_t idx,
				     uint64_t file_off)
{
	uint64_t ss = lo->lo_stripe_size;
	uint64_t s = file_off / ss;
	uint64_t row = s / lo->lo_stripe_count;
	uint32_t col = (uint32_t)(s % lo->lo_stripe_count);
	if (col == idx)
		return row * ss + file_off % ss;
	if (col < idx)
		return row * ss;
	return (row + 1) * ss;
}

uint64_t weir_layout_file_size(const struct weir_layout *lo, uint32_t idx, uint64_t obj_size)
{
	if (obj_size == 0)
		return 0;
	return weir_layout_obj_to_file(lo, idx, obj_size - 1) + 1;
}
