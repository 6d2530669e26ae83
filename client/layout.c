/*
 * client/layout.c - weir_setstripe / weir_getstripe (as `lfs setstripe` and
 * `lfs getstripe`); their MDS calls are client/mdc.c's.
 */
#define _GNU_SOURCE
#include "client_int.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

/* The caller's options, possibly from an older, smaller struct. */
static int wc_stripe_opts_load(const struct weir_stripe_opts *in, struct weir_stripe_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->wso_stripe_offset = -1;
	if (!in || in->wso_size < offsetof(struct weir_stripe_opts, wso_stripe_size))
		return -EINVAL;
	memcpy(o, in, WEIR_MIN(in->wso_size, sizeof(*o)));
	if (in->wso_size < offsetof(struct weir_stripe_opts, wso_stripe_offset) + sizeof(int32_t))
		o->wso_stripe_offset = -1;
	return 0;
}

int weir_setstripe(weir_fs_t *fs, const char *path, const struct weir_stripe_opts *opts)
{
	struct wc_mdc_stripe want;
	struct weir_stripe_opts o;
	uint32_t count;
	int rc;

	if (!fs)
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	rc = wc_stripe_opts_load(opts, &o);
	if (rc)
		return rc;
	if (o.wso_stripe_size % WEIR_LAYOUT_STRIPE_ALIGN ||
	    o.wso_stripe_size > WEIR_LAYOUT_MAX_STRIPE_SIZE || o.wso_stripe_offset < -1)
		return -EINVAL;
	count = o.wso_stripe_count;
	if (count == (uint32_t)-1) {
		rc = wc_map_nr_osts(fs);
		if (rc < 0)
			return rc;
		if (rc == 0)
			return -ENOSPC;
		count = (uint32_t)WEIR_MIN(rc, WEIR_MAX_STRIPES);
	} else if (count > WEIR_MAX_STRIPES) {
		return -EINVAL;
	}
	want.ms_pattern = WEIR_LAYOUT_PATTERN_RAID0;
	want.ms_stripe_size = (uint32_t)o.wso_stripe_size;
	want.ms_stripe_count = count;
	want.ms_stripe_offset = o.wso_stripe_offset;
	/* a new file if the path does not exist (mode 0644) */
	return wc_mdc_set_layout(fs, WC_MDC_PATH(NULL, path, 0), &want, true, 0644, NULL, NULL);
}

/* A directory's default layout straight from the reply (it may name no OSTs). */
static void wc_getstripe_dir(const struct wc_mdc_dirdef *dd, struct weir_layout_info *info)
{
	info->wli_is_dir = 1;
	info->wli_stripe_offset = -1;
	if (!dd->dd_set ||
	    (!dd->dd_stripe_count && !dd->dd_stripe_size && dd->dd_stripe_offset < 0))
		return;
	info->wli_pattern = dd->dd_pattern;
	info->wli_stripe_size = dd->dd_stripe_size;
	info->wli_stripe_count = WEIR_MIN(dd->dd_stripe_count, (uint32_t)WEIR_MAX_STRIPES);
	info->wli_gen = dd->dd_gen;
	info->wli_stripe_offset = dd->dd_stripe_offset;
	for (size_t i = 0; i < dd->dd_nr_osts && i < info->wli_stripe_count; i++)
		info->wli_objs[i].woi_ost = dd->dd_osts[i];
	if (dd->dd_nr_osts)
		info->wli_stripe_offset = (int32_t)dd->dd_osts[0];
}

int weir_getstripe(weir_fs_t *fs, const char *path, struct weir_layout_info *info)
{
	struct wc_objop ops[WEIR_LAYOUT_MAX_STRIPES];
	struct wc_mdc_dirdef dd;
	struct weir_layout lo;
	struct wc_attr a;
	int rc;

	if (!fs || !info)
		return -EINVAL;
	rc = wc_path_check(path);
	if (rc)
		return rc;
	memset(info, 0, sizeof(*info));
	rc = wc_mdc_lookup_layout(fs, WC_MDC_PATH(NULL, path, 0), &a, &lo, &dd);
	if (rc)
		return rc;
	if (S_ISDIR(a.a_mode))
		wc_getstripe_dir(&dd, info);
	info->wli_fid.seq = a.a_fid.fid_seq;
	info->wli_fid.oid = a.a_fid.fid_oid;
	if (info->wli_is_dir)
		return 0;
	info->wli_pattern = lo.lo_pattern;
	info->wli_stripe_size = lo.lo_stripe_size;
	info->wli_stripe_count = lo.lo_stripe_count;
	info->wli_gen = lo.lo_gen;
	info->wli_stripe_offset = lo.lo_stripe_count ? (int32_t)lo.lo_osts[0] : -1;
	memset(ops, 0, sizeof(ops));
	rc = wc_obj_run(fs, &a.a_fid, &lo, WEIR__WIRE_OP__OST_GETATTR, ops);
	for (uint32_t i = 0; i < lo.lo_stripe_count; i++) {
		info->wli_objs[i].woi_ost = lo.lo_osts[i];
		info->wli_objs[i].woi_size = ops[i].oo_size;
		info->wli_objs[i].woi_blocks = ops[i].oo_blocks;
	}
	return rc ? -EIO : 0;
}
