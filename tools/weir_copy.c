/*
 * tools/weir_copy.c - `weir put`, `weir get` and `weir cat`.
 *
 * put/get first walk the sources and make a plan (one item per directory
 * and file, in pre-order, with sizes), then carry it out: the walk costs the
 * metadata calls once and gives the byte total for the progress line.
 * Data moves through one buffer of 4 MiB, or a multiple of the file's
 * stripe width when that is larger (so every OST of a file works at once),
 * with read(2)/write(2) on the local side and weir_pread/weir_pwrite on
 * Weir's.
 */
#define _GNU_SOURCE
#include "weir_cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

#define XFER_BUF_MIN (4ULL * WEIR_MIB)
#define XFER_BUF_MAX (64ULL * WEIR_MIB)
#define XFER_PROGRESS_MIN (64ULL * WEIR_MIB)

struct xitem {
	char *xi_src;
	char *xi_dst;
	bool xi_dir;
	bool xi_link; /* a symbolic link: recreated with the same target */
	uint64_t xi_size;  /* bytes, at plan time */
	mode_t xi_mode;
};

struct xfer {
	struct wcli *x_cli;
	bool x_put;        /* local -> Weir; else Weir -> local */
	bool x_recursive;
	bool x_verbose;
	struct xitem *x_items;
	size_t x_nr;
	size_t x_cap;
	uint64_t x_total;  /* bytes planned */
	uint64_t x_done;   /* bytes copied */
	uint64_t x_files;
	double x_t0;
	double x_last;     /* last progress print */
	bool x_progress;
	bool x_failed;
	char *x_buf;
	size_t x_buflen;
};

static int xfer_add(struct xfer *x, const char *src, const char *dst, bool dir, uint64_t size,
		    mode_t mode)
{
	if (x->x_nr == x->x_cap) {
		size_t cap = x->x_cap ? 2 * x->x_cap : 64;
		struct xitem *n = realloc(x->x_items, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		x->x_items = n;
		x->x_cap = cap;
	}
	struct xitem *it = &x->x_items[x->x_nr];
	it->xi_src = strdup(src);
	it->xi_dst = strdup(dst);
	if (!it->xi_src || !it->xi_dst) {
		free(it->xi_src);
		free(it->xi_dst);
		return -ENOMEM;
	}
	it->xi_dir = dir;
	it->xi_link = S_ISLNK(mode);
	it->xi_size = size;
	it->xi_mode = mode;
	x->x_nr++;
	if (!dir)
		x->x_total += size;
	return 0;
}

static int xfer_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void xfer_names_free(char **names, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		free(names[i]);
	free(names);
}

static int xfer_names_add(char ***names, size_t *nr, size_t *cap, const char *name)
{
	if (*nr == *cap) {
		size_t c = *cap ? 2 * *cap : 32;
		char **n = realloc(*names, c * sizeof(*n));
		if (!n)
			return -ENOMEM;
		*names = n;
		*cap = c;
	}
	(*names)[*nr] = strdup(name);
	if (!(*names)[*nr])
		return -ENOMEM;
	(*nr)++;
	return 0;
}

/* Sorted names in local directory \a path, without . and .. */
static int xfer_local_names(const char *path, char ***out, size_t *nr_out)
{
	char **names = NULL;
	size_t nr = 0, cap = 0;
	struct dirent *de;
	int rc = 0;
	DIR *d = opendir(path);

	if (!d)
		return -errno;
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		rc = xfer_names_add(&names, &nr, &cap, de->d_name);
		if (rc)
			break;
	}
	if (!rc && errno)
		rc = -errno;
	closedir(d);
	if (rc) {
		xfer_names_free(names, nr);
		return rc;
	}
	if (nr)
		qsort(names, nr, sizeof(*names), xfer_strcmp);
	*out = names;
	*nr_out = nr;
	return 0;
}

/* Sorted names in Weir directory \a path, without . and .. */
static int xfer_weir_names(weir_fs_t *fs, const char *path, char ***out, size_t *nr_out)
{
	struct weir_dirent ent;
	char **names = NULL;
	size_t nr = 0, cap = 0;
	weir_dir_t *dh;
	int rc;

	rc = weir_opendir(fs, path, &dh);
	if (rc)
		return rc;
	while ((rc = weir_readdir(dh, &ent)) == 1) {
		if (!strcmp(ent.d_name, ".") || !strcmp(ent.d_name, ".."))
			continue;
		rc = xfer_names_add(&names, &nr, &cap, ent.d_name);
		if (rc)
			break;
	}
	weir_closedir(dh);
	if (rc) {
		xfer_names_free(names, nr);
		return rc;
	}
	if (nr)
		qsort(names, nr, sizeof(*names), xfer_strcmp);
	*out = names;
	*nr_out = nr;
	return 0;
}

static void xfer_fail(struct xfer *x, const char *path, int rc)
{
	wcli_err(x->x_cli, path, rc);
	x->x_failed = true;
}

/* Plan the copy of \a src (local for put, Weir for get) to \a dst. */
static void xfer_plan(struct xfer *x, const char *src, const char *dst, bool top)
{
	struct stat st;
	char **names = NULL;
	size_t nr = 0;
	int rc;

	if (x->x_put)
		rc = (top ? stat(src, &st) : lstat(src, &st)) ? -errno : 0;
	else
		rc = top ? weir_stat(x->x_cli->cl_fs, src, &st) : weir_lstat(x->x_cli->cl_fs, src, &st);
	if (rc) {
		xfer_fail(x, src, rc);
		return;
	}
	if (S_ISREG(st.st_mode)) {
		rc = xfer_add(x, src, dst, false, (uint64_t)st.st_size, st.st_mode);
		if (rc)
			xfer_fail(x, src, rc);
		return;
	}
	if (S_ISLNK(st.st_mode)) { /* only below the top: a top-level link is followed */
		rc = xfer_add(x, src, dst, false, 0, st.st_mode);
		if (rc)
			xfer_fail(x, src, rc);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		wcli_errf(x->x_cli, src, "not a regular file, directory or symlink; skipped (-%s)",
			  weir_errno_name(EOPNOTSUPP));
		x->x_failed = true;
		return;
	}
	if (!x->x_recursive) {
		wcli_errf(x->x_cli, src, "%s; use -r to copy it (-EISDIR)", strerror(EISDIR));
		x->x_failed = true;
		return;
	}
	rc = xfer_add(x, src, dst, true, 0, st.st_mode);
	if (!rc)
		rc = x->x_put ? xfer_local_names(src, &names, &nr)
			      : xfer_weir_names(x->x_cli->cl_fs, src, &names, &nr);
	if (rc) {
		xfer_fail(x, src, rc);
		return;
	}
	for (size_t i = 0; i < nr; i++) {
		char *s = wcli_path_join(src, names[i]);
		char *d = wcli_path_join(dst, names[i]);
		if (s && d)
			xfer_plan(x, s, d, false);
		else
			xfer_fail(x, src, -ENOMEM);
		free(s);
		free(d);
	}
	xfer_names_free(names, nr);
}

static void xfer_progress(struct xfer *x, bool final)
{
	double now, el;

	if (!x->x_progress)
		return;
	now = wcli_now();
	if (!final && now - x->x_last < 0.25)
		return;
	x->x_last = now;
	el = now - x->x_t0;
	unsigned pct = x->x_total ? (unsigned)(x->x_done * 100 / x->x_total) : 100;
	fprintf(stderr, "\r%10.1f MiB of %.1f MiB  %3u%%  %8.1f MB/s ",
		(double)x->x_done / (double)WEIR_MIB, (double)x->x_total / (double)WEIR_MIB,
		pct > 100 ? 100 : pct, el > 0 ? (double)x->x_done / el / 1e6 : 0.0);
	if (final)
		fputc('\n', stderr);
}

/* Make sure the buffer suits a file of \a size bytes at Weir path \a wpath. */
static int xfer_buf_fit(struct xfer *x, const char *wpath, uint64_t size)
{
	uint64_t want = XFER_BUF_MIN;

	if (size > XFER_BUF_MIN) {
		struct weir_layout_info *li = malloc(sizeof(*li));
		if (li && !weir_getstripe(x->x_cli->cl_fs, wpath, li) && !li->wli_is_dir &&
		    li->wli_stripe_count && li->wli_stripe_size) {
			uint64_t ss = li->wli_stripe_size;
			uint64_t width = ss * li->wli_stripe_count;
			want = (WEIR_MAX(want, width) + width - 1) / width * width;
			if (want > XFER_BUF_MAX)
				want = WEIR_MAX(XFER_BUF_MAX / ss * ss, ss);
		}
		free(li);
	}
	if (want <= x->x_buflen)
		return 0;
	void *b;
	if (posix_memalign(&b, 4096, (size_t)want))
		return -ENOMEM;
	free(x->x_buf);
	x->x_buf = b;
	x->x_buflen = (size_t)want;
	return 0;
}

/* read(2) until \a len bytes or EOF. \return bytes or -errno. */
static ssize_t xfer_read_full(int fd, char *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static int xfer_put_file(struct xfer *x, const struct xitem *it)
{
	weir_fs_t *fs = x->x_cli->cl_fs;
	weir_file_t *fh;
	uint64_t off = 0;
	int fd, rc;

	fd = open(it->xi_src, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		xfer_fail(x, it->xi_src, -errno);
		return -1;
	}
	rc = weir_open(fs, it->xi_dst, O_WRONLY | O_CREAT | O_TRUNC, it->xi_mode & 07777, &fh);
	if (rc) {
		xfer_fail(x, it->xi_dst, rc);
		goto out_close_fd;
	}
	rc = xfer_buf_fit(x, it->xi_dst, it->xi_size);
	if (rc)
		xfer_fail(x, it->xi_dst, rc);
	while (!rc) {
		ssize_t n = xfer_read_full(fd, x->x_buf, x->x_buflen);
		if (n < 0) {
			xfer_fail(x, it->xi_src, (int)n);
			rc = (int)n;
			break;
		}
		if (n == 0)
			break;
		/* a short count (a full OST) is followed by the write of the rest,
		 * which reports the error */
		ssize_t w = 0;
		for (ssize_t put = 0; put < n; put += w) {
			w = weir_pwrite(fh, x->x_buf + put, (size_t)(n - put), off + (uint64_t)put);
			if (w <= 0) {
				w = w ? w : -EIO;
				break;
			}
		}
		if (w < 0) {
			xfer_fail(x, it->xi_dst, (int)w);
			rc = (int)w;
			break;
		}
		off += (uint64_t)n;
		x->x_done += (uint64_t)n;
		xfer_progress(x, false);
	}
	int rc2 = weir_close(fh);
	if (rc2 && !rc) {
		xfer_fail(x, it->xi_dst, rc2);
		rc = rc2;
	}
out_close_fd:
	close(fd);
	return rc;
}

static int xfer_get_file(struct xfer *x, const struct xitem *it)
{
	weir_fs_t *fs = x->x_cli->cl_fs;
	weir_file_t *fh;
	uint64_t off = 0;
	int fd, rc;

	rc = weir_open(fs, it->xi_src, O_RDONLY, 0, &fh);
	if (rc) {
		xfer_fail(x, it->xi_src, rc);
		return rc;
	}
	fd = open(it->xi_dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, it->xi_mode & 07777);
	if (fd < 0) {
		rc = -errno;
		xfer_fail(x, it->xi_dst, rc);
		goto out_close_fh;
	}
	rc = xfer_buf_fit(x, it->xi_src, it->xi_size);
	if (rc)
		xfer_fail(x, it->xi_dst, rc);
	while (!rc) {
		ssize_t n = weir_pread(fh, x->x_buf, x->x_buflen, off);
		if (n < 0) {
			xfer_fail(x, it->xi_src, (int)n);
			rc = (int)n;
			break;
		}
		if (n == 0)
			break;
		rc = weir_write_all(fd, x->x_buf, (size_t)n);
		if (rc) {
			xfer_fail(x, it->xi_dst, rc);
			break;
		}
		off += (uint64_t)n;
		x->x_done += (uint64_t)n;
		xfer_progress(x, false);
		if ((size_t)n < x->x_buflen)
			break; /* short only at end of file */
	}
	if (close(fd) && !rc) {
		rc = -errno;
		xfer_fail(x, it->xi_dst, rc);
	}
out_close_fh:
	weir_close(fh);
	return rc;
}

/* Make the target directory of a planned directory item. */
static int xfer_mkdir(struct xfer *x, const struct xitem *it)
{
	mode_t mode = (it->xi_mode & 07777) | 0700;
	struct stat st;
	int rc;

	if (x->x_put) {
		rc = weir_mkdir(x->x_cli->cl_fs, it->xi_dst, mode);
		if (rc == -EEXIST)
			rc = weir_stat(x->x_cli->cl_fs, it->xi_dst, &st) ? -EEXIST
				: S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	} else {
		rc = mkdir(it->xi_dst, mode) ? -errno : 0;
		if (rc == -EEXIST)
			rc = stat(it->xi_dst, &st) ? -EEXIST : S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	}
	if (rc)
		xfer_fail(x, it->xi_dst, rc);
	return rc;
}

/* Is \a path \a dir itself or below it? */
static bool xfer_under(const char *path, const char *dir)
{
	size_t l = strlen(dir);
	return !strncmp(path, dir, l) && (path[l] == '\0' || path[l] == '/');
}

/* Recreate symlink \a it (same target text) on the other side. */
static int xfer_link(struct xfer *x, const struct xitem *it)
{
	char target[4096];
	ssize_t n;
	int rc;

	if (x->x_put)
		n = readlink(it->xi_src, target, sizeof(target) - 1);
	else
		n = weir_readlink(x->x_cli->cl_fs, it->xi_src, target, sizeof(target) - 1);
	if (n < 0) {
		rc = x->x_put ? -errno : (int)n;
		xfer_fail(x, it->xi_src, rc);
		return rc;
	}
	target[n] = '\0';
	if (x->x_put) {
		rc = weir_symlink(x->x_cli->cl_fs, target, it->xi_dst);
	} else {
		rc = symlink(target, it->xi_dst) ? -errno : 0;
	}
	if (rc)
		xfer_fail(x, it->xi_dst, rc);
	return rc;
}

static void xfer_run(struct xfer *x)
{
	const char *skip = NULL; /* a directory that could not be made */

	x->x_t0 = wcli_now();
	x->x_progress = x->x_total >= XFER_PROGRESS_MIN &&
			(isatty(STDERR_FILENO) || (getenv("WEIR_PROGRESS") &&
						   !strcmp(getenv("WEIR_PROGRESS"), "1")));
	for (size_t i = 0; i < x->x_nr; i++) {
		const struct xitem *it = &x->x_items[i];
		if (skip && xfer_under(it->xi_dst, skip))
			continue;
		skip = NULL;
		if (it->xi_dir) {
			if (xfer_mkdir(x, it))
				skip = it->xi_dst;
			continue;
		}
		int rc = it->xi_link   ? xfer_link(x, it)
			 : x->x_put    ? xfer_put_file(x, it)
				       : xfer_get_file(x, it);
		if (!rc) {
			x->x_files++;
			if (x->x_verbose)
				printf("'%s' -> '%s'\n", it->xi_src, it->xi_dst);
		}
	}
	xfer_progress(x, true);
	if (x->x_verbose || x->x_progress) {
		double el = wcli_now() - x->x_t0;
		char sz[32];
		fprintf(stderr, "copied %llu file%s, %s (%llu bytes) in %.2f s (%.1f MB/s)\n",
			(unsigned long long)x->x_files, x->x_files == 1 ? "" : "s",
			weir_fmt_size(x->x_done, sz, sizeof(sz)), (unsigned long long)x->x_done, el,
			el > 0 ? (double)x->x_done / el / 1e6 : 0.0);
	}
}

/* The destination of source \a src: inside \a dest when it is a directory. */
static char *xfer_target(const char *src, const char *dest, bool dest_is_dir)
{
	if (!dest_is_dir)
		return strdup(dest);
	char *base = wcli_basename(src);
	if (!base)
		return NULL;
	char *t = (!strcmp(base, "/") || !strcmp(base, ".") || !strcmp(base, ".."))
			  ? strdup(dest)
			  : wcli_path_join(dest, base);
	free(base);
	return t;
}

static int xfer_main(struct wcli *cli, int argc, char **argv, bool put)
{
	static const struct option longopts[] = {
		{ "recursive", no_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	struct xfer x;
	struct stat st;
	bool dest_is_dir;
	int c, rc;

	memset(&x, 0, sizeof(x));
	x.x_cli = cli;
	x.x_put = put;
	while ((c = getopt_long(argc, argv, "rRv", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
		case 'R':
			x.x_recursive = true;
			break;
		case 'v':
			x.x_verbose = true;
			break;
		default:
			return wcli_bad_opt(cli, argv);
		}
	}
	if (argc - optind < 2)
		return wcli_usage(cli, "needs a source and a destination");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	const char *dest = argv[argc - 1];
	int nsrc = argc - optind - 1;
	if (put)
		dest_is_dir = !weir_stat(cli->cl_fs, dest, &st) && S_ISDIR(st.st_mode);
	else
		dest_is_dir = !stat(dest, &st) && S_ISDIR(st.st_mode);
	if (nsrc > 1 && !dest_is_dir) {
		wcli_err(cli, dest, -ENOTDIR);
		return WCLI_EXIT_FAIL;
	}
	for (int i = optind; i < argc - 1; i++) {
		char *target = xfer_target(argv[i], dest, dest_is_dir);
		if (!target) {
			xfer_fail(&x, argv[i], -ENOMEM);
			continue;
		}
		xfer_plan(&x, argv[i], target, true);
		free(target);
	}
	xfer_run(&x);
	for (size_t i = 0; i < x.x_nr; i++) {
		free(x.x_items[i].xi_src);
		free(x.x_items[i].xi_dst);
	}
	free(x.x_items);
	free(x.x_buf);
	return x.x_failed ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

int wcli_cmd_put(struct wcli *cli, int argc, char **argv)
{
	return xfer_main(cli, argc, argv, true);
}

int wcli_cmd_get(struct wcli *cli, int argc, char **argv)
{
	return xfer_main(cli, argc, argv, false);
}

int wcli_cmd_cat(struct wcli *cli, int argc, char **argv)
{
	const size_t buflen = XFER_BUF_MIN;
	int failed = 0;
	char *buf;
	int rc;

	if (getopt(argc, argv, "") != -1)
		return wcli_usage(cli, NULL);
	if (optind >= argc)
		return wcli_usage(cli, "needs a path");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	buf = malloc(buflen);
	if (!buf) {
		wcli_err(cli, NULL, -ENOMEM);
		return WCLI_EXIT_FAIL;
	}
	for (int i = optind; i < argc; i++) {
		weir_file_t *fh;
		uint64_t off = 0;

		rc = weir_open(cli->cl_fs, argv[i], O_RDONLY, 0, &fh);
		if (rc) {
			wcli_err(cli, argv[i], rc);
			failed = 1;
			continue;
		}
		for (;;) {
			ssize_t n = weir_pread(fh, buf, buflen, off);
			if (n < 0) {
				wcli_err(cli, argv[i], (int)n);
				failed = 1;
				break;
			}
			if (n == 0)
				break;
			fflush(stdout);
			rc = weir_write_all(STDOUT_FILENO, buf, (size_t)n);
			if (rc) {
				wcli_err(cli, "standard output", rc);
				failed = 1;
				break;
			}
			off += (uint64_t)n;
			if ((size_t)n < buflen)
				break;
		}
		weir_close(fh);
	}
	free(buf);
	return failed ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}
