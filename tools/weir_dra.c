/*
 * tools/weir_dra.c - `weir dra create|list|delete|import`: data repository
 * associations (a directory tied to s3://bucket/prefix); the import of a
 * bucket listing is tools/weir_dra_import.c.
 */
#define _GNU_SOURCE
#include "weir_dra.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"

/* ------------------------------------------------------------ messages */

/* Errors of the dra calls, with a hint where the errno alone says little. */
void dra_err(const struct wcli *cli, const char *path, int rc)
{
	int e = rc < 0 ? -rc : rc;

	switch (e) {
	case EPERM:
		wcli_errf(cli, path,
			  "%s: data repository associations are managed by root (-EPERM)",
			  strerror(e));
		break;
	case EOPNOTSUPP:
	case EPROTO:
		wcli_errf(cli, path, "the MDS does not serve HSM requests (-%s)",
			  weir_errno_name(e));
		break;
	default:
		wcli_err(cli, path, rc);
	}
}

static void dra_flags_str(uint32_t flags, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", (flags & WEIR_DRA_AUTO_EXPORT) ? "auto-export" : "",
		 (flags & WEIR_DRA_AUTO_EXPORT) && (flags & WEIR_DRA_REIMPORT) ? "," : "",
		 (flags & WEIR_DRA_REIMPORT) ? "reimport" : "");
	if (!buf[0])
		snprintf(buf, len, "-");
}

/*
 * Split "s3://BUCKET[/PREFIX]" into its parts. \return 0 or -EINVAL (message
 * printed).
 */
static int dra_url_parse(const struct wcli *cli, const char *url, char *bucket, size_t blen,
			 const char **prefix)
{
	const char *b, *slash;
	size_t n;

	if (strncmp(url, "s3://", 5)) {
		wcli_errf(cli, url, "not an S3 URL: expected s3://BUCKET[/PREFIX]");
		return -EINVAL;
	}
	b = url + 5;
	slash = strchr(b, '/');
	n = slash ? (size_t)(slash - b) : strlen(b);
	if (n < 3 || n >= blen || n > 63) {
		wcli_errf(cli, url, "a bucket name is 3 to 63 characters");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		char c = b[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) {
			wcli_errf(cli, url,
				  "bad bucket name: only a-z, 0-9, '.' and '-' are allowed");
			return -EINVAL;
		}
	}
	memcpy(bucket, b, n);
	bucket[n] = '\0';
	*prefix = slash ? slash + 1 : "";
	if (strlen(*prefix) > WEIR_S3_KEY_MAX - 1) {
		wcli_errf(cli, url, "the prefix is longer than %d bytes", WEIR_S3_KEY_MAX - 1);
		return -EINVAL;
	}
	return 0;
}

/* The association whose root is \a path (by FID). \return 0, -ENOENT (reported), ... */
static int dra_find(struct wcli *cli, const char *path, struct weir_dra *out)
{
	struct weir_dra *dras = NULL;
	weir_fid_t fid;
	size_t nr = 0;
	int rc;

	rc = weir_path2fid(cli->cl_fs, path, &fid);
	if (rc) {
		wcli_err(cli, path, rc);
		return rc;
	}
	rc = weir_dra_list(cli->cl_fs, &dras, &nr);
	if (rc) {
		dra_err(cli, NULL, rc);
		return rc;
	}
	rc = -ENOENT;
	for (size_t i = 0; i < nr; i++) {
		if (dras[i].dra_root.seq == fid.seq && dras[i].dra_root.oid == fid.oid) {
			*out = dras[i];
			rc = 0;
			break;
		}
	}
	free(dras);
	if (rc)
		wcli_errf(cli, path,
			  "not the root of a data repository association"
			  " (see 'weir dra list')");
	return rc;
}

/* ------------------------------------------------------------ S3 */

/* An S3 handle for the association's bucket, configured from AWS_*. */
int dra_s3_open(struct wcli *cli, const struct weir_dra *d, struct weir_s3 **out)
{
	struct weir_s3_conf c;
	int rc;

	weir_s3_conf_init(&c);
	rc = weir_s3_conf_from_env(&c);
	if (rc) {
		wcli_errf(cli, NULL, "an AWS_* environment variable is too long (-%s)",
			  weir_errno_name(-rc));
		return rc;
	}
	if (!c.sc_endpoint[0]) {
		wcli_errf(cli, NULL,
			  "no S3 endpoint: set AWS_ENDPOINT_URL"
			  " (e.g. http://127.0.0.1:4568 or https://s3.us-east-1.amazonaws.com)");
		return -EINVAL;
	}
	if (!c.sc_access_key[0] || !c.sc_secret_key[0]) {
		wcli_errf(cli, NULL,
			  "no S3 credentials: set AWS_ACCESS_KEY_ID and"
			  " AWS_SECRET_ACCESS_KEY");
		return -EINVAL;
	}
	snprintf(c.sc_bucket, sizeof(c.sc_bucket), "%s", d->dra_bucket);
	rc = weir_s3_new(&c, out);
	if (rc)
		wcli_errf(cli, c.sc_endpoint, "cannot make an S3 client: %s (-%s)", strerror(-rc),
			  weir_errno_name(-rc));
	return rc;
}

void dra_s3_err(const struct wcli *cli, const struct weir_dra *d, int rc)
{
	char url[1200];
	const char *why;

	snprintf(url, sizeof(url), "s3://%s/%s", d->dra_bucket, d->dra_prefix);
	switch (-rc) {
	case ENOENT:
		why = "no such bucket";
		break;
	case EACCES:
		why = "access denied: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY";
		break;
	case ECONNREFUSED:
		why = "cannot connect to the S3 endpoint (AWS_ENDPOINT_URL)";
		break;
	case ETIMEDOUT:
		why = "the S3 endpoint did not answer in time";
		break;
	case EIO:
		why = "the S3 server kept failing (5xx) after the retries";
		break;
	default:
		why = strerror(-rc);
	}
	wcli_errf(cli, url, "listing failed: %s (-%s)", why, weir_errno_name(-rc));
}

/* ------------------------------------------------------------ commands */

static int dra_check_stop(void *arg, const struct weir_s3_obj *obj)
{
	(void)arg;
	(void)obj;
	return 1; /* one object is enough */
}

/*
 * Can the bucket of \a d be listed under its prefix with this environment's
 * S3 settings? A missing bucket would otherwise show only later, as archives
 * failing in the copytool's log. \return 0 or -errno (reported).
 */
static int dra_check_bucket(struct wcli *cli, const struct weir_dra *d)
{
	struct weir_s3 *s3 = NULL;
	int rc = dra_s3_open(cli, d, &s3);

	if (rc) {
		fprintf(stderr, "weir %s: (--no-check skips this check)\n", cli->cl_cmd);
		return rc;
	}
	rc = weir_s3_list(s3, d->dra_prefix, 1, dra_check_stop, NULL);
	weir_s3_free(s3);
	if (rc < 0) {
		dra_s3_err(cli, d, rc);
		fprintf(stderr, "weir %s: no association made (%s, or --no-check)\n", cli->cl_cmd,
			rc == -ENOENT ? "create the bucket first" : "fix the S3 settings above");
		return rc;
	}
	return 0;
}

/* Name the associations \a path may overlap: above, below or at it, or on \a bucket. */
static void dra_conflicts_show(struct wcli *cli, const char *path, const char *bucket)
{
	struct weir_dra *dras = NULL;
	size_t nr = 0, plen = strlen(path);

	if (weir_dra_list(cli->cl_fs, &dras, &nr))
		return;
	for (size_t i = 0; i < nr; i++) {
		const char *q = dras[i].dra_path;
		size_t qlen = strlen(q), n = plen < qlen ? plen : qlen;
		const char *longer = plen > qlen ? path : q;
		bool nested = !strncmp(q, path, n) &&
			      (plen == qlen || longer[n] == '/' || (n && longer[n - 1] == '/'));
		if (nested || !strcmp(dras[i].dra_bucket, bucket))
			fprintf(stderr, "  association %u: %s -> s3://%s/%s\n", dras[i].dra_id, q,
				dras[i].dra_bucket, dras[i].dra_prefix);
	}
	free(dras);
}

int wcli_cmd_dra_create(struct wcli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"import", no_argument, NULL, 'I'},
	    {"auto-export", no_argument, NULL, 'A'},
	    {"reimport", no_argument, NULL, 'R'},
	    {"no-check", no_argument, NULL, 'N'},
	    {NULL, 0, NULL, 0},
	};
	struct weir_dra d;
	bool check = true;
	char bucket[64], url[1200], fl[32];
	const char *prefix;
	bool import = false;
	unsigned flags = 0;
	int c, rc;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'I':
			import = true;
			break;
		case 'A':
			flags |= WEIR_DRA_AUTO_EXPORT;
			break;
		case 'R':
			flags |= WEIR_DRA_REIMPORT;
			break;
		case 'N':
			check = false;
			break;
		default:
			return wcli_bad_opt(cli, argv);
		}
	}
	if (argc - optind != 2)
		return wcli_usage(cli, "needs a directory and an s3:// URL");
	if (dra_url_parse(cli, argv[optind + 1], bucket, sizeof(bucket), &prefix))
		return WCLI_EXIT_USAGE;
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	memset(&d, 0, sizeof(d));
	if (check) {
		snprintf(d.dra_bucket, sizeof(d.dra_bucket), "%s", bucket);
		snprintf(d.dra_prefix, sizeof(d.dra_prefix), "%s%s", prefix,
			 prefix[0] && prefix[strlen(prefix) - 1] != '/' ? "/" : "");
		if (dra_check_bucket(cli, &d))
			return WCLI_EXIT_FAIL;
		memset(&d, 0, sizeof(d));
	}
	rc = weir_dra_create(cli->cl_fs, argv[optind], bucket, prefix, flags, &d);
	if (rc) {
		if (rc == -EEXIST || rc == -EBUSY) {
			wcli_errf(cli, argv[optind],
				  "overlaps an existing association: the same directory, one inside"
				  " or above it, or the same bucket with an overlapping prefix (-%s)",
				  weir_errno_name(-rc));
			dra_conflicts_show(cli, argv[optind], bucket);
		}
		else if (rc == -EINVAL)
			wcli_errf(cli, argv[optind], "bad bucket name, prefix or flags (-EINVAL)");
		else
			dra_err(cli, argv[optind], rc);
		return WCLI_EXIT_FAIL;
	}
	dra_flags_str(d.dra_flags, fl, sizeof(fl));
	snprintf(url, sizeof(url), "s3://%s/%s", d.dra_bucket, d.dra_prefix);
	printf("association %u: %s -> %s (flags: %s)\n", d.dra_id, argv[optind], url, fl);
	fflush(stdout);
	if (!import)
		return WCLI_EXIT_OK;
	rc = dra_import_run(cli, &d, argv[optind], false);
	if (rc)
		fprintf(stderr,
			"weir %s: the association was made; run 'weir dra import %s' to"
			" import again\n",
			cli->cl_cmd, argv[optind]);
	return rc;
}

int wcli_cmd_dra_list(struct wcli *cli, int argc, char **argv)
{
	struct weir_dra *dras = NULL;
	size_t nr = 0, wp = 4, wu = 6;
	int rc;

	if (getopt(argc, argv, "") != -1)
		return wcli_bad_opt(cli, argv);
	if (optind < argc)
		return wcli_usage(cli, "takes no arguments");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	rc = weir_dra_list(cli->cl_fs, &dras, &nr);
	if (rc) {
		dra_err(cli, NULL, rc);
		return WCLI_EXIT_FAIL;
	}
	for (size_t i = 0; i < nr; i++) {
		size_t u = 5 + strlen(dras[i].dra_bucket) + 1 + strlen(dras[i].dra_prefix);
		if (strlen(dras[i].dra_path) > wp)
			wp = strlen(dras[i].dra_path);
		if (u > wu)
			wu = u;
	}
	if (!nr) {
		printf("no data repository associations (make one with 'weir dra create')\n");
		return WCLI_EXIT_OK;
	}
	printf("%4s  %-*s  %-*s  %-20s  %s\n", "ID", (int)wp, "PATH", (int)wu, "S3 URL", "FLAGS",
	       "CREATED");
	for (size_t i = 0; i < nr; i++) {
		char url[1200], fl[32], tb[32];

		wcli_utc_time(dras[i].dra_created_ns, tb, sizeof(tb));
		dra_flags_str(dras[i].dra_flags, fl, sizeof(fl));
		snprintf(url, sizeof(url), "s3://%s/%s", dras[i].dra_bucket, dras[i].dra_prefix);
		printf("%4u  %-*s  %-*s  %-20s  %s\n", dras[i].dra_id, (int)wp, dras[i].dra_path,
		       (int)wu, url, fl, tb);
	}
	free(dras);
	return WCLI_EXIT_OK;
}

int wcli_cmd_dra_delete(struct wcli *cli, int argc, char **argv)
{
	int rc, failed = 0;

	if (getopt(argc, argv, "") != -1)
		return wcli_bad_opt(cli, argv);
	if (optind >= argc)
		return wcli_usage(cli, "needs the directory of an association");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	for (int i = optind; i < argc; i++) {
		rc = weir_dra_delete(cli->cl_fs, argv[i]);
		if (rc == -ENOENT || rc == -EINVAL) {
			struct stat st;
			if (weir_stat(cli->cl_fs, argv[i], &st) == 0)
				wcli_errf(cli, argv[i],
					  "not the root of a data repository"
					  " association (see 'weir dra list') (-%s)",
					  weir_errno_name(-rc));
			else
				wcli_err(cli, argv[i], rc);
			failed = 1;
		} else if (rc) {
			dra_err(cli, argv[i], rc);
			failed = 1;
		} else {
			printf("%s: association removed (files and S3 objects kept)\n", argv[i]);
		}
	}
	return failed ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

int wcli_cmd_dra_import(struct wcli *cli, int argc, char **argv)
{
	struct weir_dra d;
	int rc, failed = 0;

	if (getopt(argc, argv, "") != -1)
		return wcli_bad_opt(cli, argv);
	if (optind >= argc)
		return wcli_usage(cli, "needs the directory of an association");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	for (int i = optind; i < argc; i++) {
		if (dra_find(cli, argv[i], &d)) {
			failed = 1;
			continue;
		}
		if (dra_import_run(cli, &d, argv[i], true))
			failed = 1;
	}
	return failed ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}
