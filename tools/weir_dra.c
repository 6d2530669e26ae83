/*
 * tools/weir_dra.c - `weir dra create|list|delete|import`: data repository
 * associations (a directory tied to s3://bucket/prefix) and the import of a
 * bucket listing into the namespace.
 *
 * Import (create --import, and `dra import` to rescan):
 *  1. list every object under the prefix with the S3 client (ListObjectsV2
 *     with continuation; endpoint and credentials from the AWS_* variables);
 *  2. map each key to a path below the association's root (keys ending in
 *     '/' are directory markers; keys that cannot be a path are skipped with
 *     a warning), sort by (directory, name);
 *  3. per directory: make it (weir_mkdir for each missing component), then
 *     send its objects to the MDS in batches of WEIR_HSM_IMPORT_MAX
 *     (weir_hsm_import): released files appear at once, no data is copied;
 *  4. rescan only: walk the association's tree and send deleted entries for
 *     imported files whose key is no longer listed (the MDS removes them if
 *     they are still clean and closed, else keeps them).
 * Progress goes to stderr; the summary ends with objects/s.
 */
#define _GNU_SOURCE
#include "weir_cli.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/s3.h"
#include "common/util.h"

#define DRA_NAME_MAX 255
#define DRA_PATH_MAX 4095

/* ------------------------------------------------------------ messages */

/* Errors of the dra calls, with a hint where the errno alone says little. */
static void dra_err(const struct wcli *cli, const char *path, int rc)
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

/* ------------------------------------------------------------ import: listing */

/** One listed object, mapped to a path below the association's root. */
struct imp_obj {
	char *io_key;	     /* the full S3 key */
	char *io_rel;	     /* key minus prefix, split in place: io_dir and io_name point here */
	const char *io_dir;  /* directory below the root ("" = the root) */
	const char *io_name; /* entry name; "" for a directory marker */
	char *io_etag;
	uint64_t io_size; /* bytes */
	int64_t io_mtime_ns;
};

struct imp {
	struct wcli *im_cli;
	const struct weir_dra *im_dra;
	char im_root[DRA_PATH_MAX + 2]; /* Weir path of the root, no trailing '/' ("" = /) */
	size_t im_prefix_len;
	struct imp_obj *im_objs;
	size_t im_nr, im_cap;
	bool im_tty;
	double im_t0, im_last;
	/* counters */
	uint64_t im_listed, im_skipped, im_dirs, im_errors;
	uint64_t im_res[WEIR_HIR_KEPT + 1];
	/* mkdir cache: the last directory known to exist (below the root) */
	char *im_prev_dir;
	int im_fatal; /* an error that ends the import (-EPERM, no MDS, ...) */
};

static void imp_progress(struct imp *im, const char *what, bool final)
{
	double now = wcli_now();

	if (!final && now - im->im_last < (im->im_tty ? 0.25 : 5.0))
		return;
	im->im_last = now;
	if (!strcmp(what, "list"))
		fprintf(stderr, "%slisted %llu object%s%s", im->im_tty ? "\r" : "",
			(unsigned long long)im->im_listed, im->im_listed == 1 ? "" : "s",
			im->im_tty && !final ? " " : "\n");
	else
		fprintf(stderr,
			"%s%llu created, %llu updated, %llu unchanged, %llu removed, %llu kept,"
			" %llu error%s%s",
			im->im_tty ? "\r" : "", (unsigned long long)im->im_res[WEIR_HIR_CREATED],
			(unsigned long long)im->im_res[WEIR_HIR_UPDATED],
			(unsigned long long)im->im_res[WEIR_HIR_UNCHANGED],
			(unsigned long long)im->im_res[WEIR_HIR_REMOVED],
			(unsigned long long)im->im_res[WEIR_HIR_KEPT],
			(unsigned long long)im->im_errors, im->im_errors == 1 ? "" : "s",
			im->im_tty && !final ? " " : "\n");
}

/* Is \a rel ("a/b/c", no leading or trailing '/') a valid path? Sets *why. */
static bool imp_rel_ok(const char *rel, size_t root_len, const char **why)
{
	const char *p = rel;

	if (root_len + 1 + strlen(rel) > DRA_PATH_MAX) {
		*why = "the path would be longer than 4095 bytes";
		return false;
	}
	for (;;) {
		size_t n = strcspn(p, "/");
		if (n == 0) {
			*why = "empty path component ('//' or a leading '/')";
			return false;
		}
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
			*why = "'.' or '..' component";
			return false;
		}
		if (n > DRA_NAME_MAX) {
			*why = "a component is longer than 255 bytes";
			return false;
		}
		if (!p[n])
			return true;
		p += n + 1;
	}
}

static int imp_list_cb(void *arg, const struct weir_s3_obj *o)
{
	struct imp *im = arg;
	struct imp_obj *io;
	const char *why = NULL;
	size_t len;
	char *rel, *slash;

	im->im_listed++;
	imp_progress(im, "list", false);
	if (strlen(o->so_key) < im->im_prefix_len)
		return 0; /* not below the prefix: cannot happen with a prefixed listing */
	len = strlen(o->so_key + im->im_prefix_len);
	if (len == 0)
		return 0; /* the prefix's own directory marker */
	rel = strdup(o->so_key + im->im_prefix_len);
	if (!rel)
		return -ENOMEM;
	if (rel[len - 1] == '/') /* a directory marker */
		rel[len - 1] = '\0';
	if (!imp_rel_ok(rel, strlen(im->im_root), &why)) {
		if (im->im_tty)
			fputc('\n', stderr);
		fprintf(stderr, "weir %s: warning: s3://%s/%s: skipped: %s\n", im->im_cli->cl_cmd,
			im->im_dra->dra_bucket, o->so_key, why);
		im->im_skipped++;
		free(rel);
		return 0;
	}
	if (im->im_nr == im->im_cap) {
		size_t c = im->im_cap ? 2 * im->im_cap : 1024;
		struct imp_obj *n = realloc(im->im_objs, c * sizeof(*n));
		if (!n) {
			free(rel);
			return -ENOMEM;
		}
		im->im_objs = n;
		im->im_cap = c;
	}
	io = &im->im_objs[im->im_nr];
	memset(io, 0, sizeof(*io));
	io->io_key = strdup(o->so_key);
	io->io_etag = strdup(o->so_etag);
	if (!io->io_key || !io->io_etag) {
		free(io->io_key);
		free(io->io_etag);
		free(rel);
		return -ENOMEM;
	}
	io->io_rel = rel;
	if (o->so_key[strlen(o->so_key) - 1] == '/') {
		io->io_dir = rel;
		io->io_name = "";
	} else {
		slash = strrchr(rel, '/');
		if (slash) {
			*slash = '\0';
			io->io_dir = rel;
			io->io_name = slash + 1;
		} else {
			io->io_dir = "";
			io->io_name = rel;
		}
	}
	io->io_size = o->so_size;
	io->io_mtime_ns = o->so_mtime * 1000000000LL;
	im->im_nr++;
	return 0;
}

static int imp_obj_cmp(const void *a, const void *b)
{
	const struct imp_obj *x = a, *y = b;
	int c = strcmp(x->io_dir, y->io_dir);
	return c ? c : strcmp(x->io_name, y->io_name);
}

static int imp_key_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void imp_free(struct imp *im)
{
	for (size_t i = 0; i < im->im_nr; i++) {
		free(im->im_objs[i].io_key);
		free(im->im_objs[i].io_rel);
		free(im->im_objs[i].io_etag);
	}
	free(im->im_objs);
	free(im->im_prev_dir);
}

/* An S3 handle for the association's bucket, configured from AWS_*. */
static int imp_s3_open(struct wcli *cli, const struct weir_dra *d, struct weir_s3 **out)
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

static void imp_s3_err(const struct wcli *cli, const struct weir_dra *d, int rc)
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

/* ------------------------------------------------------------ import: applying */

/* Make directory \a rel below the root, each missing component. */
static int imp_mkdir(struct imp *im, const char *rel)
{
	const char *prev = im->im_prev_dir ? im->im_prev_dir : "";
	size_t len = strlen(rel), k = 0, common;
	char path[DRA_PATH_MAX + 2];
	int rc;

	/* the components shared with the previous directory exist already */
	while (rel[k] && rel[k] == prev[k])
		k++;
	common = k;
	if (!((rel[k] == '/' || !rel[k]) && (prev[k] == '/' || !prev[k])))
		while (common > 0 && rel[common] != '/')
			common--;
	for (size_t e = common + 1; e <= len; e++) {
		if (e < len && rel[e] != '/')
			continue;
		int n = snprintf(path, sizeof(path), "%s/%.*s", im->im_root, (int)e, rel);
		if (n < 0 || (size_t)n >= sizeof(path))
			return -ENAMETOOLONG;
		rc = weir_mkdir(im->im_cli->cl_fs, path, 0755);
		if (rc == 0)
			im->im_dirs++;
		else if (rc != -EEXIST)
			return rc;
	}
	free(im->im_prev_dir);
	im->im_prev_dir = strdup(rel);
	return 0;
}

static void imp_count(struct imp *im, const char *dirpath, const char *name, int res)
{
	if (res >= 0 && res <= WEIR_HIR_KEPT) {
		im->im_res[res]++;
		return;
	}
	im->im_errors++;
	if (im->im_tty)
		fputc('\n', stderr);
	if (res == -EEXIST)
		fprintf(stderr,
			"weir %s: %s/%s: not imported: something other than an imported"
			" file is in the way (-EEXIST)\n",
			im->im_cli->cl_cmd, wcli_path_is_root(dirpath) ? "" : dirpath, name);
	else
		fprintf(stderr, "weir %s: %s/%s: not imported: %s (-%s)\n", im->im_cli->cl_cmd,
			wcli_path_is_root(dirpath) ? "" : dirpath, name, strerror(-res),
			weir_errno_name(-res));
}

/* Send \a n entries of directory \a dirpath (\a fid) to the MDS. */
static void imp_send(struct imp *im, const char *dirpath, const weir_fid_t *fid,
		     const struct weir_hsm_import_ent *ents, size_t n, int *res)
{
	int rc;

	if (!n)
		return;
	if (im->im_fatal)
		return;
	rc = weir_hsm_import(im->im_cli->cl_fs, im->im_dra->dra_id, fid, ents, n, res);
	if (rc) {
		if (im->im_tty)
			fputc('\n', stderr);
		dra_err(im->im_cli, dirpath, rc);
		im->im_errors += n;
		/* errors of the whole call that no other directory would escape */
		if (rc == -EPERM || rc == -EOPNOTSUPP || rc == -EPROTO || rc == -ECONNREFUSED ||
		    rc == -ETIMEDOUT || rc == -ECONNRESET || rc == -EHOSTUNREACH || rc == -ENOMEM)
			im->im_fatal = rc;
		return;
	}
	for (size_t i = 0; i < n; i++)
		imp_count(im, dirpath, ents[i].hie_name, res[i]);
	imp_progress(im, "apply", false);
}

/* Objects [first, end) all have the same io_dir: make it, import them. */
static void imp_dir(struct imp *im, size_t first, size_t end, struct weir_hsm_import_ent *ents,
		    int *res)
{
	const char *rel = im->im_objs[first].io_dir;
	char path[DRA_PATH_MAX + 2];
	weir_fid_t fid;
	size_t n = 0;
	int rc;

	int plen;
	if (rel[0])
		plen = snprintf(path, sizeof(path), "%s/%s", im->im_root, rel);
	else
		plen = snprintf(path, sizeof(path), "%s", im->im_root[0] ? im->im_root : "/");
	rc = plen < 0 || (size_t)plen >= sizeof(path) ? -ENAMETOOLONG : imp_mkdir(im, rel);
	if (!rc)
		rc = weir_path2fid(im->im_cli->cl_fs, path, &fid);
	if (rc) {
		size_t files = 0;
		for (size_t i = first; i < end; i++)
			files += im->im_objs[i].io_name[0] != '\0';
		if (im->im_tty)
			fputc('\n', stderr);
		wcli_errf(im->im_cli, path,
			  "cannot make the directory: %s (-%s); %zu object%s"
			  " not imported",
			  strerror(-rc), weir_errno_name(-rc), files, files == 1 ? "" : "s");
		im->im_errors += files ? files : 1;
		if (rc == -EACCES || rc == -EPERM || rc == -ECONNREFUSED || rc == -ETIMEDOUT)
			im->im_fatal = rc;
		return;
	}
	for (size_t i = first; i < end; i++) {
		const struct imp_obj *o = &im->im_objs[i];
		if (!o->io_name[0])
			continue; /* a directory marker: made above */
		ents[n] = (struct weir_hsm_import_ent){
		    .hie_name = o->io_name,
		    .hie_size = o->io_size,
		    .hie_mtime_ns = o->io_mtime_ns,
		    .hie_etag = o->io_etag,
		    .hie_key = o->io_key,
		    .hie_deleted = false,
		};
		if (++n == WEIR_HSM_IMPORT_MAX) {
			imp_send(im, path, &fid, ents, n, res);
			n = 0;
		}
	}
	imp_send(im, path, &fid, ents, n, res);
}

/* ------------------------------------------------------------ import: deletions (rescan) */

struct imp_del {
	char *id_name;
	char *id_key;
	char *id_etag;
};

/*
 * Walk directory \a path (\a fid) below the root: imported files of this
 * association whose key was not listed are sent as deleted entries.
 */
static void imp_walk(struct imp *im, char **keys, const char *path, const weir_fid_t *fid,
		     unsigned depth, struct weir_hsm_import_ent *ents, int *res)
{
	struct weir_hsm_state *st = malloc(sizeof(*st));
	struct imp_del *dels = NULL;
	struct weir_dirent *subs = NULL;
	size_t nd = 0, cd = 0, ns = 0, cs = 0, n = 0;
	struct weir_dirent ent;
	weir_dir_t *dh = NULL;
	int rc;

	if (!st)
		goto out_nomem;
	if (depth > 256) {
		wcli_errf(im->im_cli, path, "directory tree deeper than 256 levels: not walked");
		im->im_errors++;
		goto out;
	}
	rc = weir_fid_opendir(im->im_cli->cl_fs, fid, &dh);
	while (!rc && (rc = weir_readdir(dh, &ent)) == 1) {
		rc = 0;
		if (!strcmp(ent.d_name, ".") || !strcmp(ent.d_name, ".."))
			continue;
		if (ent.d_type == DT_DIR) {
			if (ns == cs) {
				size_t c = cs ? 2 * cs : 16;
				struct weir_dirent *x = realloc(subs, c * sizeof(*x));
				if (!x)
					goto out_nomem;
				subs = x;
				cs = c;
			}
			subs[ns++] = ent;
			continue;
		}
		if (ent.d_type != DT_REG)
			continue;
		rc = weir_hsm_state_fid(im->im_cli->cl_fs, &ent.d_fid, st);
		if (rc == -ENOENT) {
			rc = 0;
			continue;
		}
		if (rc)
			break;
		if (!(st->hs_flags & WEIR_HS_IMPORTED) || st->hs_dra != im->im_dra->dra_id ||
		    !st->hs_key[0])
			continue;
		const char *k = st->hs_key;
		if (bsearch(&k, keys, im->im_nr, sizeof(*keys), imp_key_cmp))
			continue;
		if (nd == cd) {
			size_t c = cd ? 2 * cd : 16;
			struct imp_del *x = realloc(dels, c * sizeof(*x));
			if (!x)
				goto out_nomem;
			dels = x;
			cd = c;
		}
		dels[nd].id_name = strdup(ent.d_name);
		dels[nd].id_key = strdup(st->hs_key);
		dels[nd].id_etag = strdup(st->hs_etag);
		nd++;
		if (!dels[nd - 1].id_name || !dels[nd - 1].id_key || !dels[nd - 1].id_etag)
			goto out_nomem;
	}
	weir_closedir(dh);
	dh = NULL;
	if (rc < 0) {
		if (im->im_tty)
			fputc('\n', stderr);
		wcli_errf(im->im_cli, path, "cannot walk for deleted objects: %s (-%s)",
			  strerror(-rc), weir_errno_name(-rc));
		im->im_errors++;
	}
	for (size_t i = 0; i < nd; i++) {
		ents[n++] = (struct weir_hsm_import_ent){
		    .hie_name = dels[i].id_name,
		    .hie_etag = dels[i].id_etag,
		    .hie_key = dels[i].id_key,
		    .hie_deleted = true,
		};
		if (n == WEIR_HSM_IMPORT_MAX) {
			imp_send(im, path, fid, ents, n, res);
			n = 0;
		}
	}
	imp_send(im, path, fid, ents, n, res);
	for (size_t i = 0; i < ns; i++) {
		char *child = wcli_path_join(path, subs[i].d_name);
		if (!child)
			goto out_nomem;
		imp_walk(im, keys, child, &subs[i].d_fid, depth + 1, ents, res);
		free(child);
	}
	goto out;
out_nomem:
	wcli_err(im->im_cli, path, -ENOMEM);
	im->im_errors++;
out:
	weir_closedir(dh);
	for (size_t i = 0; i < nd; i++) {
		free(dels[i].id_name);
		free(dels[i].id_key);
		free(dels[i].id_etag);
	}
	free(dels);
	free(subs);
	free(st);
}

/*
 * Import the listing of association \a d (root at Weir path \a root); a
 * rescan also removes files whose objects are gone. \return an exit code.
 */
static int dra_import_run(struct wcli *cli, const struct weir_dra *d, const char *root, bool rescan)
{
	struct weir_hsm_import_ent *ents = NULL;
	struct weir_s3 *s3 = NULL;
	struct imp im;
	char **keys = NULL;
	int *res = NULL;
	double t_list;
	int rc, ret = WCLI_EXIT_FAIL;

	memset(&im, 0, sizeof(im));
	im.im_cli = cli;
	im.im_dra = d;
	snprintf(im.im_root, sizeof(im.im_root), "%s%s", root[0] == '/' ? "" : "/", root);
	for (size_t l = strlen(im.im_root); l > 0 && im.im_root[l - 1] == '/'; l--)
		im.im_root[l - 1] = '\0';
	im.im_prefix_len = strlen(d->dra_prefix);
	im.im_tty = isatty(STDERR_FILENO);
	im.im_t0 = im.im_last = wcli_now();
	ents = calloc(WEIR_HSM_IMPORT_MAX, sizeof(*ents));
	res = calloc(WEIR_HSM_IMPORT_MAX, sizeof(*res));
	if (!ents || !res) {
		wcli_err(cli, NULL, -ENOMEM);
		goto out;
	}
	if (imp_s3_open(cli, d, &s3))
		goto out;

	fprintf(stderr, "weir %s: listing s3://%s/%s ...\n", cli->cl_cmd, d->dra_bucket,
		d->dra_prefix);
	rc = weir_s3_list(s3, d->dra_prefix, 1000, imp_list_cb, &im);
	imp_progress(&im, "list", true);
	if (rc) {
		if (rc == -ENOMEM)
			wcli_err(cli, NULL, rc);
		else
			imp_s3_err(cli, d, rc);
		goto out;
	}
	t_list = wcli_now() - im.im_t0;

	/* directories in order, their objects in batches */
	qsort(im.im_objs, im.im_nr, sizeof(*im.im_objs), imp_obj_cmp);
	im.im_last = im.im_tty ? 0 : wcli_now();
	for (size_t i = 0; i < im.im_nr;) {
		size_t end = i + 1;
		while (end < im.im_nr && !strcmp(im.im_objs[end].io_dir, im.im_objs[i].io_dir))
			end++;
		if (im.im_fatal)
			break;
		imp_dir(&im, i, end, ents, res);
		i = end;
	}

	if (rescan && !im.im_fatal) {
		weir_fid_t rootfid = d->dra_root;
		keys = malloc((im.im_nr ? im.im_nr : 1) * sizeof(*keys));
		if (!keys) {
			wcli_err(cli, NULL, -ENOMEM);
			goto out;
		}
		for (size_t i = 0; i < im.im_nr; i++)
			keys[i] = im.im_objs[i].io_key;
		qsort(keys, im.im_nr, sizeof(*keys), imp_key_cmp);
		imp_walk(&im, keys, im.im_root[0] ? im.im_root : "/", &rootfid, 0, ents, res);
	}
	imp_progress(&im, "apply", true);

	double el = wcli_now() - im.im_t0;
	printf("%s s3://%s/%s into %s: %llu object%s listed in %.2f s; %llu created,"
	       " %llu updated, %llu unchanged, %llu removed, %llu kept (modified or open in"
	       " Weir), %llu skipped, %llu error%s; %llu director%s made; %.2f s, %.0f objects/s\n",
	       im.im_fatal ? "import STOPPED:" : "imported", d->dra_bucket, d->dra_prefix, root,
	       (unsigned long long)im.im_listed, im.im_listed == 1 ? "" : "s", t_list,
	       (unsigned long long)im.im_res[WEIR_HIR_CREATED],
	       (unsigned long long)im.im_res[WEIR_HIR_UPDATED],
	       (unsigned long long)im.im_res[WEIR_HIR_UNCHANGED],
	       (unsigned long long)im.im_res[WEIR_HIR_REMOVED],
	       (unsigned long long)im.im_res[WEIR_HIR_KEPT], (unsigned long long)im.im_skipped,
	       (unsigned long long)im.im_errors, im.im_errors == 1 ? "" : "s",
	       (unsigned long long)im.im_dirs,
	       im.im_dirs == 1 ? "y" : "ies", el, el > 0 ? (double)im.im_listed / el : 0.0);
	if (im.im_fatal)
		fprintf(stderr,
			"weir %s: import stopped at the first error above (-%s); run"
			" 'weir dra import %s' again once it is fixed\n",
			cli->cl_cmd, weir_errno_name(-im.im_fatal), root);
	ret = im.im_errors ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
out:
	free(keys);
	imp_free(&im);
	weir_s3_free(s3);
	free(ents);
	free(res);
	return ret;
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
	int rc = imp_s3_open(cli, d, &s3);

	if (rc) {
		fprintf(stderr, "weir %s: (--no-check skips this check)\n", cli->cl_cmd);
		return rc;
	}
	rc = weir_s3_list(s3, d->dra_prefix, 1, dra_check_stop, NULL);
	weir_s3_free(s3);
	if (rc < 0) {
		imp_s3_err(cli, d, rc);
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
