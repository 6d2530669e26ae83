/*
 * tools/weir_layout.c - layout and space commands: setstripe, getstripe, df
 * (output shaped like Lustre's lfs).
 */
#define _GNU_SOURCE
#include "weir_cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/** Filesystem default layout (weir.h: 1 stripe of 1 MiB), for messages. */
#define LAYOUT_FS_DEFAULT_COUNT 1
#define LAYOUT_FS_DEFAULT_SIZE (1024 * 1024)
/** Targets asked of weir df to check an OST index (the MDS has at most 1024 OSTs). */
#define LAYOUT_DF_MAX 1100

static int layout_parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * The OST indexes of the filesystem, from weir df: *nr of them, the lowest in
 * *lo and the highest in *hi; whether \a idx is one. \return 1, 0, or -errno.
 */
static int layout_ost_exists(struct wcli *cli, int32_t idx, size_t *nr, uint32_t *lo,
			     uint32_t *hi)
{
	struct weir_target_info *tgts = calloc(LAYOUT_DF_MAX, sizeof(*tgts));
	size_t n = 0;
	int found = 0;

	*nr = 0;
	*lo = UINT32_MAX;
	*hi = 0;
	if (!tgts)
		return -ENOMEM;
	int rc = weir_df(cli->cl_fs, tgts, LAYOUT_DF_MAX, &n);
	for (size_t i = 0; !rc && i < n && i < LAYOUT_DF_MAX; i++) {
		if (tgts[i].wti_is_mdt)
			continue;
		(*nr)++;
		*lo = WEIR_MIN(*lo, tgts[i].wti_index);
		*hi = WEIR_MAX(*hi, tgts[i].wti_index);
		found |= tgts[i].wti_index == (uint32_t)idx;
	}
	free(tgts);
	return rc ? rc : found;
}

/* Say why the MDS refused a layout (-EINVAL) for \a path. */
static void setstripe_einval(struct wcli *cli, const char *path, const struct weir_stripe_opts *o)
{
	size_t nr;
	uint32_t lo, hi;

	if (o->wso_stripe_offset >= 0 &&
	    layout_ost_exists(cli, o->wso_stripe_offset, &nr, &lo, &hi) == 0) {
		if (nr)
			wcli_errf(cli, path, "-i %d: no OST has that index (this filesystem has %zu"
				  " OST%s, indexes %u to %u; see weir df) (-EINVAL)",
				  o->wso_stripe_offset, nr, nr == 1 ? "" : "s", lo, hi);
		else
			wcli_errf(cli, path, "-i %d: no OST has that index (no OST has"
				  " registered yet; see weir df) (-EINVAL)", o->wso_stripe_offset);
		return;
	}
	wcli_errf(cli, path, "invalid layout: the stripe count must be at most the number of OSTs"
		  " (see weir df) and %d, the stripe size a multiple of 64K up to 1G, and -i an"
		  " existing OST index (-EINVAL)", WEIR_MAX_STRIPES);
}

int wcli_cmd_setstripe(struct wcli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "stripe-count", required_argument, NULL, 'c' },
		{ "stripe-size", required_argument, NULL, 'S' },
		{ "stripe-index", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	struct weir_stripe_opts o;
	int c, rc, failed = 0;
	long v;
	uint64_t sz;

	memset(&o, 0, sizeof(o));
	o.wso_size = sizeof(o);
	o.wso_stripe_offset = -1;
	while ((c = getopt_long(argc, argv, "c:S:s:i:o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (layout_parse_int(optarg, -1, WEIR_MAX_STRIPES, &v))
				return wcli_usage(cli, "bad stripe count '%s' (-1, 0 or 1..%d)",
						  optarg, WEIR_MAX_STRIPES);
			o.wso_stripe_count = v == -1 ? UINT32_MAX : (uint32_t)v;
			break;
		case 'S':
		case 's':
			if (weir_parse_size(optarg, &sz) || sz % (64 * 1024) || sz > (1ULL << 30))
				return wcli_usage(cli, "bad stripe size '%s' (a multiple of 64K, "
						  "at most 1G)", optarg);
			o.wso_stripe_size = sz;
			break;
		case 'i':
		case 'o':
			if (layout_parse_int(optarg, -1, INT32_MAX, &v))
				return wcli_usage(cli, "bad OST index '%s'", optarg);
			o.wso_stripe_offset = (int32_t)v;
			break;
		default:
			return wcli_bad_opt(cli, argv);
		}
	}
	if (optind >= argc)
		return wcli_usage(cli, "needs a path");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	for (int i = optind; i < argc; i++) {
		rc = weir_setstripe(cli->cl_fs, argv[i], &o);
		if (rc == -EEXIST) {
			wcli_errf(cli, argv[i], "is an existing file; its layout is fixed once created"
				  " (setstripe works on a directory or a new path) (-EEXIST)");
		} else if (rc == -EINVAL) {
			setstripe_einval(cli, argv[i], &o);
		} else if (rc) {
			wcli_err(cli, argv[i], rc);
		}
		if (rc)
			failed = 1;
	}
	return failed ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

static const char *layout_pattern_str(uint32_t p)
{
	return p == 1 ? "raid0" : "unknown";
}

static void getstripe_dir(const struct weir_layout_info *li)
{
	if (!li->wli_stripe_count && !li->wli_stripe_size && li->wli_stripe_offset < 0) {
		printf("no default layout (filesystem default: stripe_count: %d stripe_size: %d "
		       "pattern: raid0 stripe_offset: -1)\n",
		       LAYOUT_FS_DEFAULT_COUNT, LAYOUT_FS_DEFAULT_SIZE);
		return;
	}
	printf("stripe_count:  %u stripe_size:   %u pattern:       %s stripe_offset: %d\n",
	       li->wli_stripe_count, li->wli_stripe_size, layout_pattern_str(li->wli_pattern),
	       li->wli_stripe_offset);
}

static void getstripe_file(const struct weir_layout_info *li)
{
	char fid[64];

	snprintf(fid, sizeof(fid), "[0x%llx:0x%llx:0x0]", (unsigned long long)li->wli_fid.seq,
		 (unsigned long long)li->wli_fid.oid);
	printf("lmm_fid:           %s\n", fid);
	printf("lmm_stripe_count:  %u\n", li->wli_stripe_count);
	printf("lmm_stripe_size:   %u\n", li->wli_stripe_size);
	printf("lmm_pattern:       %s\n", layout_pattern_str(li->wli_pattern));
	printf("lmm_layout_gen:    %u\n", li->wli_gen);
	printf("lmm_stripe_offset: %d\n", li->wli_stripe_offset);
	printf("\t%6s\t%-28s\t%14s\t%6s\n", "obdidx", "objid", "size", "stripe");
	for (uint32_t i = 0; i < li->wli_stripe_count && i < WEIR_MAX_STRIPES; i++)
		printf("\t%6u\t%-28s\t%14llu\t%6u\n", li->wli_objs[i].woi_ost, fid,
		       (unsigned long long)li->wli_objs[i].woi_size, i);
}

int wcli_cmd_getstripe(struct wcli *cli, int argc, char **argv)
{
	struct weir_layout_info *li;
	int rc, failed = 0;

	if (getopt(argc, argv, "") != -1)
		return wcli_usage(cli, NULL);
	if (optind >= argc)
		return wcli_usage(cli, "needs a path");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	li = malloc(sizeof(*li));
	if (!li) {
		wcli_err(cli, NULL, -ENOMEM);
		return WCLI_EXIT_FAIL;
	}
	for (int i = optind; i < argc; i++) {
		rc = weir_getstripe(cli->cl_fs, argv[i], li);
		if (rc && rc != -EIO) {
			wcli_err(cli, argv[i], rc);
			failed = 1;
			continue;
		}
		printf("%s\n", argv[i]);
		if (li->wli_is_dir)
			getstripe_dir(li);
		else
			getstripe_file(li);
		if (rc) {
			/* the layout is known; some OST did not answer for its object */
			wcli_err(cli, argv[i], rc);
			failed = 1;
		}
	}
	free(li);
	return failed ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

/* ------------------------------------------------------------ df */

static const char *df_size(uint64_t v, bool human, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	if (!human) {
		snprintf(buf, len, "%llu", (unsigned long long)v);
		return buf;
	}
	if (v < 1024) {
		snprintf(buf, len, "%lluB", (unsigned long long)v);
		return buf;
	}
	double d = (double)v / 1024.0;
	int u = 0;
	while (d >= 1024.0 && units[u + 1]) {
		d /= 1024.0;
		u++;
	}
	snprintf(buf, len, "%.1f%c", d, units[u]);
	return buf;
}

static void df_row(const char *uuid, uint64_t total, uint64_t free_b, uint64_t avail,
		   bool human, const char *mnt)
{
	char t[32], u[32], a[32], pct[8];
	uint64_t used = total >= free_b ? total - free_b : 0;

	if (used + avail)
		snprintf(pct, sizeof(pct), "%llu%%",
			 (unsigned long long)((used * 100 + used + avail - 1) / (used + avail)));
	else
		snprintf(pct, sizeof(pct), "-");
	printf("%-24s %15s %15s %15s %4s %s\n", uuid, df_size(total, human, t, sizeof(t)),
	       df_size(used, human, u, sizeof(u)), df_size(avail, human, a, sizeof(a)), pct, mnt);
}

/*
 * Add OST \a t, which shares the filesystem of an earlier OST, to the note
 * \a buf (" OST0000 OST0001", then "; OST0002 OST0003" for another filesystem):
 * the group's first OST the first time it is seen.
 */
static void df_shared_note(const struct weir_target_info *tgts, size_t nr,
			   const struct weir_target_info *t, char *buf, size_t *len, size_t cap)
{
	uint32_t first = t->wti_fs_shared_with - 1;
	bool seen = false;

	/* an earlier OST of this group already in the note (it lists them in order) */
	for (size_t i = 0; i < nr && &tgts[i] != t; i++)
		seen |= !tgts[i].wti_is_mdt && tgts[i].wti_fs_shared_with == first + 1;
	if (!seen && *len < cap)
		*len += (size_t)snprintf(buf + *len, cap - *len, "%s OST%04x", *len ? ";" : "",
					 first & 0xffff);
	if (*len < cap)
		*len += (size_t)snprintf(buf + *len, cap - *len, " %s", t->wti_name);
	if (*len > cap - 1)
		*len = cap - 1;
}

int wcli_cmd_df(struct wcli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "human-readable", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct weir_target_info *tgts = NULL;
	size_t nr = 0, max = 64;
	uint64_t tot = 0, fr = 0, av = 0;
	bool human = false;
	char shared[256] = "";
	size_t sl = 0;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c != 'h')
			return wcli_usage(cli, NULL);
		human = true;
	}
	if (optind < argc)
		return wcli_usage(cli, "takes no paths");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	for (;;) {
		struct weir_target_info *n = realloc(tgts, max * sizeof(*tgts));
		if (!n) {
			rc = -ENOMEM;
			break;
		}
		tgts = n;
		rc = weir_df(cli->cl_fs, tgts, max, &nr);
		if (rc || nr <= max)
			break;
		max = nr;
	}
	if (rc) {
		wcli_err(cli, cli->cl_mds, rc);
		free(tgts);
		return WCLI_EXIT_FAIL;
	}
	struct weir_recovery_info ri;
	if (weir_mdt_recovery(cli->cl_fs, &ri))
		memset(&ri, 0, sizeof(ri)); /* an older MDS: no window to show */
	printf("%-24s %15s %15s %15s %4s %s\n", "UUID", human ? "bytes" : "bytes", "Used",
	       "Available", "Use%", "Mounted on");
	/* MDTs first, then OSTs, as lfs df */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < nr; i++) {
			const struct weir_target_info *t = &tgts[i];
			char uuid[64], mnt[160];
			if (!!t->wti_is_mdt != (pass == 0))
				continue;
			snprintf(uuid, sizeof(uuid), "weir-%s_UUID", t->wti_name);
			snprintf(mnt, sizeof(mnt), "%s[%s:%u]", cli->cl_mds,
				 t->wti_is_mdt ? "MDT" : "OST", t->wti_index);
			if (!t->wti_up) {
				printf("%-24s : inactive device\n", uuid);
				continue;
			}
			if (t->wti_is_mdt && ri.wri_recovering)
				/* after a restart, until its clients have replayed */
				snprintf(mnt + strlen(mnt), sizeof(mnt) - strlen(mnt),
					 " recovering (%u/%u clients, %u s left)", ri.wri_recovered,
					 ri.wri_clients, ri.wri_left_s);
			df_row(uuid, t->wti_total, t->wti_free, t->wti_avail, human, mnt);
			if (!t->wti_is_mdt && t->wti_fs_shared_with) {
				/* the same disk as an earlier OST: in the summary once */
				df_shared_note(tgts, nr, t, shared, &sl, sizeof(shared));
			} else if (!t->wti_is_mdt) {
				tot += t->wti_total;
				fr += t->wti_free;
				av += t->wti_avail;
			}
		}
	}
	printf("\n");
	df_row("filesystem_summary:", tot, fr, av, human, cli->cl_mds);
	if (sl)
		printf("OSTs on one filesystem are counted once in the summary:%s\n", shared);
	free(tgts);
	return WCLI_EXIT_OK;
}
