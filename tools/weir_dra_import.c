/*
 * tools/weir_dra_import.c - the import of a bucket listing into the
 * namespace (`weir dra create --import`, `weir dra import`).
 *
 * Import (create --import, and `dra import` to rescan):
 *  1. list every object under the prefix with the S3 client (ListObjectsV2
 *     with continuation; endpoint and credentials from the AWS_* variables);
 *  2. map each key to a path below the association's root (keys ending in
 *     '/' are directory markers; keys that cannot be a path are skipped with
 *     a warning), sort by (directory, name), and mark the files shadowed by a
 *     directory of the same name (weir_dra_shadow.c: the directory wins, in
 *     whatever order the endpoint listed them; each is reported);
 *  3. per directory: make it (weir_mkdir for each missing component; an
 *     imported file of this association in the way, clean and closed, is
 *     removed first: its key is now shadowed), then
 *     send its objects to the MDS in batches of WEIR_HSM_IMPORT_MAX
 *     (weir_hsm_import): released files appear at once, no data is copied;
 *  4. rescan only: walk the association's tree and send deleted entries for
 *     imported files whose key is no longer listed (the MDS removes them if
 *     they are still clean and closed, else keeps them).
 * Progress goes to stderr; the summary ends with objects/s.
 */
#define _GNU_SOURCE
#include "weir_dra.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "weir_dra_shadow.h"

/* ------------------------------------------------------------ import: listing */

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
	uint64_t im_listed, im_skipped, im_shadowed, im_dirs, im_errors;
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

/* ------------------------------------------------------------ import: applying */

/*
 * \a path exists where directory \a rel (below the root) is wanted. A
 * directory: 0. An imported file of this association, clean and closed: its
 * object is now shadowed by the directory, so the file is removed (the MDS
 * checks clean and closed) and the directory made. Anything else is kept:
 * -ENOTDIR (reported).
 */
static int imp_displace(struct imp *im, const char *path, const char *rel)
{
	struct weir_hsm_state *st = NULL;
	char parent[DRA_PATH_MAX + 2];
	const char *slash = strrchr(rel, '/');
	struct stat sb;
	weir_fid_t pfid;
	int rc, res = -1;

	rc = weir_lstat(im->im_cli->cl_fs, path, &sb);
	if (rc || S_ISDIR(sb.st_mode))
		return rc;
	st = malloc(sizeof(*st));
	if (!st)
		return -ENOMEM;
	rc = S_ISREG(sb.st_mode) ? weir_hsm_state_get(im->im_cli->cl_fs, path, st) : -ENOTDIR;
	if (!rc && (!(st->hs_flags & WEIR_HS_IMPORTED) || st->hs_dra != im->im_dra->dra_id))
		rc = -ENOTDIR;
	if (!rc) {
		int n = slash ? snprintf(parent, sizeof(parent), "%s/%.*s", im->im_root,
					 (int)(slash - rel), rel)
			      : snprintf(parent, sizeof(parent), "%s",
					 im->im_root[0] ? im->im_root : "/");
		rc = n < 0 || (size_t)n >= sizeof(parent) ? -ENAMETOOLONG
			 : weir_path2fid(im->im_cli->cl_fs, parent, &pfid);
	}
	if (!rc) {
		struct weir_hsm_import_ent e = {
		    .hie_name = slash ? slash + 1 : rel,
		    .hie_etag = st->hs_etag,
		    .hie_key = st->hs_key,
		    .hie_deleted = true,
		};
		rc = weir_hsm_import(im->im_cli->cl_fs, im->im_dra->dra_id, &pfid, &e, 1, &res);
	}
	if (im->im_tty)
		fputc('\n', stderr);
	if (!rc && res == WEIR_HIR_REMOVED) {
		fprintf(stderr,
			"weir %s: %s: the imported file of s3://%s/%s is removed: the bucket now"
			" has a directory of that name, which shadows it\n",
			im->im_cli->cl_cmd, path, im->im_dra->dra_bucket, st->hs_key);
		im->im_res[WEIR_HIR_REMOVED]++;
		rc = weir_mkdir(im->im_cli->cl_fs, path, 0755);
		if (!rc)
			im->im_dirs++;
	} else {
		const char *why = rc == -ENOTDIR ? "modified in Weir, or not imported from this"
						   " association"
				  : rc		 ? strerror(-rc)
				  : res < 0	 ? strerror(-res)
						 : "open in Weir";
		fprintf(stderr,
			"weir %s: %s: a file is in the way of the directory the bucket has there"
			" (%s); kept\n",
			im->im_cli->cl_cmd, path, why);
		rc = -ENOTDIR;
	}
	free(st);
	return rc;
}

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
		if (rc == -EEXIST)
			rc = imp_displace(im, path, path + strlen(im->im_root) + 1);
		else if (rc == 0)
			im->im_dirs++;
		if (rc)
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
			files += im->im_objs[i].io_name[0] && !im->im_objs[i].io_shadowed;
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
		if (o->io_shadowed) {
			if (im->im_tty)
				fputc('\n', stderr);
			fprintf(stderr,
				"weir %s: warning: s3://%s/%s: shadowed by the directory %s/%s (a"
				" file and a directory of one name: the directory wins); not"
				" imported\n",
				im->im_cli->cl_cmd, im->im_dra->dra_bucket, o->io_key,
				wcli_path_is_root(path) ? "" : path, o->io_name);
			im->im_shadowed++;
			continue;
		}
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
int dra_import_run(struct wcli *cli, const struct weir_dra *d, const char *root, bool rescan)
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
	if (dra_s3_open(cli, d, &s3))
		goto out;

	fprintf(stderr, "weir %s: listing s3://%s/%s ...\n", cli->cl_cmd, d->dra_bucket,
		d->dra_prefix);
	rc = weir_s3_list(s3, d->dra_prefix, 1000, imp_list_cb, &im);
	imp_progress(&im, "list", true);
	if (rc) {
		if (rc == -ENOMEM)
			wcli_err(cli, NULL, rc);
		else
			dra_s3_err(cli, d, rc);
		goto out;
	}
	t_list = wcli_now() - im.im_t0;

	/* directories in order, their objects in batches; shadowed files out */
	if (dra_shadow_mark(im.im_objs, im.im_nr) < 0) {
		wcli_err(cli, NULL, -ENOMEM);
		goto out;
	}
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
	       " Weir), %llu skipped, %llu shadowed, %llu error%s; %llu director%s made; %.2f s,"
	       " %.0f objects/s\n",
	       im.im_fatal ? "import STOPPED:" : "imported", d->dra_bucket, d->dra_prefix, root,
	       (unsigned long long)im.im_listed, im.im_listed == 1 ? "" : "s", t_list,
	       (unsigned long long)im.im_res[WEIR_HIR_CREATED],
	       (unsigned long long)im.im_res[WEIR_HIR_UPDATED],
	       (unsigned long long)im.im_res[WEIR_HIR_UNCHANGED],
	       (unsigned long long)im.im_res[WEIR_HIR_REMOVED],
	       (unsigned long long)im.im_res[WEIR_HIR_KEPT], (unsigned long long)im.im_skipped,
	       (unsigned long long)im.im_shadowed, (unsigned long long)im.im_errors,
	       im.im_errors == 1 ? "" : "s", (unsigned long long)im.im_dirs,
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

