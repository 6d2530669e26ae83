/*
 * tools/weir_ns.c - namespace commands: ls, stat, mkdir, rm, mv, path2fid.
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

#include "common/util.h"

static void ns_mode_str(mode_t m, char out[11])
{
	out[0] = S_ISDIR(m) ? 'd' : S_ISREG(m) ? '-' : S_ISLNK(m) ? 'l' : '?';
	const char *rwx = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[1 + i] = (m & (1U << (8 - i))) ? rwx[i] : '-';
	if (m & S_ISUID)
		out[3] = (m & S_IXUSR) ? 's' : 'S';
	if (m & S_ISGID)
		out[6] = (m & S_IXGRP) ? 's' : 'S';
	if (m & S_ISVTX)
		out[9] = (m & S_IXOTH) ? 't' : 'T';
	out[10] = '\0';
}

static const char *ns_type_str(mode_t m)
{
	if (S_ISREG(m))
		return "regular file";
	if (S_ISDIR(m))
		return "directory";
	if (S_ISLNK(m))
		return "symbolic link";
	return "other";
}

/* ------------------------------------------------------------ ls */

struct ls_opts {
	bool lo_long;
	bool lo_all;
	bool lo_dir;   /* -d: list directories themselves */
};

static void ls_print(const struct ls_opts *o, const char *name, const struct stat *st)
{
	char ms[11], tb[32];
	struct tm tm;
	time_t t;

	if (!o->lo_long) {
		printf("%s\n", name);
		return;
	}
	ns_mode_str(st->st_mode, ms);
	t = st->st_mtim.tv_sec;
	localtime_r(&t, &tm);
	strftime(tb, sizeof(tb), "%Y-%m-%d %H:%M", &tm);
	printf("%s %3lu %5u %5u %12lld %s %s\n", ms, (unsigned long)st->st_nlink,
	       (unsigned)st->st_uid, (unsigned)st->st_gid, (long long)st->st_size, tb, name);
}

static int ls_namecmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* List directory \a path. \return 0 or -errno (already reported). */
static int ls_dir(struct wcli *cli, const struct ls_opts *o, const char *path)
{
	struct weir_dirent ent;
	char **names = NULL;
	size_t nr = 0, cap = 0;
	weir_dir_t *dh;
	int rc, failed = 0;

	rc = weir_opendir(cli->cl_fs, path, &dh);
	if (rc) {
		wcli_err(cli, path, rc);
		return rc;
	}
	while ((rc = weir_readdir(dh, &ent)) == 1) {
		if (ent.d_name[0] == '.' && !o->lo_all)
			continue;
		if (nr == cap) {
			size_t c = cap ? 2 * cap : 64;
			char **n = realloc(names, c * sizeof(*n));
			if (!n) {
				rc = -ENOMEM;
				break;
			}
			names = n;
			cap = c;
		}
		names[nr] = strdup(ent.d_name);
		if (!names[nr]) {
			rc = -ENOMEM;
			break;
		}
		nr++;
	}
	weir_closedir(dh);
	if (rc < 0) {
		wcli_err(cli, path, rc);
		failed = rc;
	}
	if (nr)
		qsort(names, nr, sizeof(*names), ls_namecmp);
	for (size_t i = 0; i < nr; i++) {
		struct stat st;
		memset(&st, 0, sizeof(st));
		if (o->lo_long) {
			char *child = wcli_path_join(path, names[i]);
			rc = child ? weir_lstat(cli->cl_fs, child, &st) : -ENOMEM;
			if (rc) {
				wcli_err(cli, child ? child : path, rc);
				failed = rc;
				free(child);
				continue;
			}
			free(child);
		}
		ls_print(o, names[i], &st);
	}
	for (size_t i = 0; i < nr; i++)
		free(names[i]);
	free(names);
	return failed;
}

int wcli_cmd_ls(struct wcli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "directory", no_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	struct ls_opts o = { 0 };
	char *deflt[] = { "/" };
	char **paths;
	int nr, c, rc, failed = 0;

	while ((c = getopt_long(argc, argv, "lad", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			o.lo_long = true;
			break;
		case 'a':
			o.lo_all = true;
			break;
		case 'd':
			o.lo_dir = true;
			break;
		default:
			return wcli_bad_opt(cli, argv);
		}
	}
	paths = optind < argc ? argv + optind : deflt;
	nr = optind < argc ? argc - optind : 1;
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	for (int i = 0; i < nr; i++) {
		struct stat st;
		rc = weir_stat(cli->cl_fs, paths[i], &st);
		if (rc) {
			wcli_err(cli, paths[i], rc);
			failed = 1;
			continue;
		}
		if (!S_ISDIR(st.st_mode) || o.lo_dir) {
			ls_print(&o, paths[i], &st);
			continue;
		}
		if (nr > 1)
			printf("%s%s:\n", i ? "\n" : "", paths[i]);
		if (ls_dir(cli, &o, paths[i]))
			failed = 1;
	}
	return failed ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

/* ------------------------------------------------------------ stat */

static void stat_time(const char *label, const struct timespec *ts)
{
	char tb[64];
	struct tm tm;
	time_t t = ts->tv_sec;

	gmtime_r(&t, &tm);
	strftime(tb, sizeof(tb), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s: %lld.%09ld (%s.%09ld UTC)\n", label, (long long)ts->tv_sec, ts->tv_nsec, tb,
	       ts->tv_nsec);
}

int wcli_cmd_stat(struct wcli *cli, int argc, char **argv)
{
	int rc, failed = 0;

	if (getopt(argc, argv, "") != -1)
		return wcli_usage(cli, NULL);
	if (optind >= argc)
		return wcli_usage(cli, "needs a path");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	for (int i = optind; i < argc; i++) {
		struct stat st;
		weir_fid_t fid;
		char ms[11];

		rc = weir_path2fid(cli->cl_fs, argv[i], &fid);
		if (!rc)
			rc = weir_lstat(cli->cl_fs, argv[i], &st);
		if (rc) {
			wcli_err(cli, argv[i], rc);
			failed = 1;
			continue;
		}
		ns_mode_str(st.st_mode, ms);
		printf("  File: %s\n", argv[i]);
		printf("   FID: [0x%llx:0x%llx:0x0]\n", (unsigned long long)fid.seq,
		       (unsigned long long)fid.oid);
		printf("  Type: %s\n", ns_type_str(st.st_mode));
		printf("  Size: %-15lld Blocks: %-10lld %s: %ld\n", (long long)st.st_size,
		       (long long)st.st_blocks, S_ISREG(st.st_mode) ? "Stripe size" : "IO Block",
		       (long)st.st_blksize);
		printf("  Mode: (%04o/%s)  Links: %lu  Uid: %u  Gid: %u\n",
		       (unsigned)(st.st_mode & 07777), ms, (unsigned long)st.st_nlink,
		       (unsigned)st.st_uid, (unsigned)st.st_gid);
		printf(" Inode: %llu  Device: %#llx\n", (unsigned long long)st.st_ino,
		       (unsigned long long)st.st_dev);
		stat_time("Access", &st.st_atim);
		stat_time("Modify", &st.st_mtim);
		stat_time("Change", &st.st_ctim);
	}
	return failed ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

/* ------------------------------------------------------------ mkdir */

/* An existing \a path for mkdir -p: 0 when a directory, -ENOTDIR, -EEXIST. */
static int exists_as_dir(weir_fs_t *fs, const char *path)
{
	struct stat st;
	int rc = weir_stat(fs, path, &st);
	return rc ? -EEXIST : S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* mkdir -p: every missing component of \a path. */
static int mkdir_parents(weir_fs_t *fs, const char *path, mode_t mode)
{
	char *buf = strdup(path);
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	size_t len = strlen(buf);
	for (size_t i = 1; i <= len && !rc; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		if (buf[i - 1] == '/')
			continue;
		char save = buf[i];
		buf[i] = '\0';
		rc = weir_mkdir(fs, buf, save ? (mode | 0300) : mode);
		if (rc == -EEXIST)
			rc = exists_as_dir(fs, buf);
		buf[i] = save;
	}
	free(buf);
	return rc;
}

int wcli_cmd_mkdir(struct wcli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "parents", no_argument, NULL, 'p' },
		{ "mdt-index", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	bool parents = false;
	int c, rc, failed = 0, mdt = -1;
	mode_t mask = umask(0);

	umask(mask);
	while ((c = getopt_long(argc, argv, "pi:", longopts, NULL)) != -1) {
		if (c == 'p') {
			parents = true;
		} else if (c == 'i') {
			char *end;
			long v = strtol(optarg, &end, 0);
			if (!*optarg || *end || v < 0 || v > 255)
				return wcli_usage(cli, "-i wants an MDT index, 0..255");
			mdt = (int)v;
		} else {
			return wcli_usage(cli, NULL);
		}
	}
	if (optind >= argc)
		return wcli_usage(cli, "needs a path");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	for (int i = optind; i < argc; i++) {
		mode_t mode = 0777 & ~mask;
		rc = mdt >= 0 ? weir_mkdir_mdt(cli->cl_fs, argv[i], mode, mdt)
			      : weir_mkdir(cli->cl_fs, argv[i], mode);
		if (parents && rc == -ENOENT && mdt >= 0) {
			/* the parents on their parents' MDTs, the directory on MDT mdt */
			char *dup = strdup(argv[i]), *slash = dup ? strrchr(dup, '/') : NULL;
			rc = -ENOMEM;
			if (slash && slash != dup) {
				*slash = '\0';
				rc = mkdir_parents(cli->cl_fs, dup, mode);
			}
			free(dup);
			if (!rc || rc == -ENOMEM)
				rc = rc ? rc : weir_mkdir_mdt(cli->cl_fs, argv[i], mode, mdt);
		} else if (parents && rc == -ENOENT) {
			rc = mkdir_parents(cli->cl_fs, argv[i], mode);
		}
		if (parents && rc == -EEXIST) {
			rc = exists_as_dir(cli->cl_fs, argv[i]);
			if (rc == -ENOTDIR)
				rc = -EEXIST;
		}
		if (rc) {
			wcli_err(cli, argv[i], rc);
			failed = 1;
		}
	}
	return failed ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

/* ------------------------------------------------------------ rm */

struct rm_opts {
	bool ro_recursive;
	bool ro_force;
	bool ro_failed;
};

static void rm_report(struct wcli *cli, struct rm_opts *o, const char *path, int rc)
{
	if (rc == -ENOENT && o->ro_force)
		return;
	wcli_err(cli, path, rc);
	o->ro_failed = true;
}

/* Remove the tree at \a path, depth-first. */
static void rm_tree(struct wcli *cli, struct rm_opts *o, const char *path)
{
	struct weir_dirent ent;
	struct {
		char *name;
		bool dir;
	} *ents = NULL;
	size_t nr = 0, cap = 0;
	weir_dir_t *dh;
	int rc;

	rc = weir_opendir(cli->cl_fs, path, &dh);
	if (rc) {
		rm_report(cli, o, path, rc);
		return;
	}
	while ((rc = weir_readdir(dh, &ent)) == 1) {
		if (!strcmp(ent.d_name, ".") || !strcmp(ent.d_name, ".."))
			continue;
		if (nr == cap) {
			size_t c = cap ? 2 * cap : 64;
			void *n = realloc(ents, c * sizeof(*ents));
			if (!n) {
				rc = -ENOMEM;
				break;
			}
			ents = n;
			cap = c;
		}
		ents[nr].name = strdup(ent.d_name);
		ents[nr].dir = ent.d_type == DT_DIR;
		if (!ents[nr].name) {
			rc = -ENOMEM;
			break;
		}
		nr++;
	}
	weir_closedir(dh);
	if (rc < 0)
		rm_report(cli, o, path, rc);
	for (size_t i = 0; i < nr; i++) {
		char *child = wcli_path_join(path, ents[i].name);
		if (!child) {
			rm_report(cli, o, path, -ENOMEM);
		} else if (ents[i].dir) {
			rm_tree(cli, o, child);
		} else {
			rc = weir_unlink(cli->cl_fs, child);
			if (rc == -EISDIR)
				rm_tree(cli, o, child);
			else if (rc)
				rm_report(cli, o, child, rc);
		}
		free(child);
		free(ents[i].name);
	}
	free(ents);
	rc = weir_rmdir(cli->cl_fs, path);
	if (rc)
		rm_report(cli, o, path, rc);
}

int wcli_cmd_rmdir(struct wcli *cli, int argc, char **argv)
{
	int rc, failed = 0;
	if (argc > 1 && argv[1][0] == '-' && argv[1][1])
		return wcli_bad_opt(cli, argv);
	if (argc < 2)
		return wcli_usage(cli, "needs a path");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	for (int i = 1; i < argc; i++) {
		rc = weir_rmdir(cli->cl_fs, argv[i]);
		if (rc) {
			wcli_err(cli, argv[i], rc);
			failed = 1;
		}
	}
	return failed ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

int wcli_cmd_rm(struct wcli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "recursive", no_argument, NULL, 'r' },
		{ "force", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	struct rm_opts o = { 0 };
	int c, rc;

	while ((c = getopt_long(argc, argv, "rRf", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
		case 'R':
			o.ro_recursive = true;
			break;
		case 'f':
			o.ro_force = true;
			break;
		default:
			return wcli_bad_opt(cli, argv);
		}
	}
	if (optind >= argc)
		return o.ro_force ? WCLI_EXIT_OK : wcli_usage(cli, "needs a path");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	for (int i = optind; i < argc; i++) {
		const char *p = argv[i];
		struct stat st;

		if (wcli_path_is_root(p)) {
			wcli_errf(cli, p, "refusing to remove the root (-%s)", weir_errno_name(EBUSY));
			o.ro_failed = true;
			continue;
		}
		/* lstat: rm -r of a symlink to a directory removes the link only */
		rc = weir_lstat(cli->cl_fs, p, &st);
		if (rc) {
			rm_report(cli, &o, p, rc);
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			rc = weir_unlink(cli->cl_fs, p);
			if (rc)
				rm_report(cli, &o, p, rc);
		} else if (!o.ro_recursive) {
			rm_report(cli, &o, p, -EISDIR);
		} else {
			rm_tree(cli, &o, p);
		}
	}
	return o.ro_failed ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

/* ------------------------------------------------------------ mv */

/*
 * The name mv and ln make for \a src given \a to: inside \a to (named as
 * \a src's last component) when \a to is an existing directory, else \a to.
 * \return a malloc'd path, or NULL without memory.
 */
static char *dest_name(struct wcli *cli, const char *src, const char *to)
{
	struct stat st;
	if (!weir_stat(cli->cl_fs, to, &st) && S_ISDIR(st.st_mode)) {
		char *base = wcli_basename(src);
		char *dst = base ? wcli_path_join(to, base) : NULL;
		free(base);
		return dst;
	}
	return strdup(to);
}

int wcli_cmd_mv(struct wcli *cli, int argc, char **argv)
{
	char *dst;
	int rc;

	if (getopt(argc, argv, "") != -1)
		return wcli_usage(cli, NULL);
	if (argc - optind != 2)
		return wcli_usage(cli, "needs exactly SRC and DST");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	const char *src = argv[optind], *to = argv[optind + 1];
	dst = dest_name(cli, src, to);
	if (!dst) {
		wcli_err(cli, src, -ENOMEM);
		return WCLI_EXIT_FAIL;
	}
	rc = weir_rename(cli->cl_fs, src, dst);
	if (rc) {
		char both[2 * 4096 + 8];
		snprintf(both, sizeof(both), "%s -> %s", src, dst);
		if (rc == -EINVAL)
			wcli_errf(cli, both, "cannot move a directory into a subdirectory of itself"
				  " (-EINVAL)");
		else
			wcli_err(cli, both, rc);
	}
	free(dst);
	return rc ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

/* ------------------------------------------------------------ ln */

int wcli_cmd_ln(struct wcli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "symbolic", no_argument, NULL, 's' },
					      { "force", no_argument, NULL, 'f' },
					      { NULL, 0, NULL, 0 } };
	bool sym = false, force = false;
	char *dst;
	int c, rc;

	while ((c = getopt_long(argc, argv, "sf", opts, NULL)) != -1) {
		if (c == 's')
			sym = true;
		else if (c == 'f')
			force = true;
		else
			return wcli_usage(cli, NULL);
	}
	if (argc - optind != 2)
		return wcli_usage(cli, "needs exactly TARGET and LINK_NAME");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	const char *target = argv[optind], *to = argv[optind + 1];
	dst = dest_name(cli, target, to);
	if (!dst) {
		wcli_err(cli, target, -ENOMEM);
		return WCLI_EXIT_FAIL;
	}
	if (force) {
		rc = weir_unlink(cli->cl_fs, dst);
		if (rc && rc != -ENOENT) {
			wcli_err(cli, dst, rc);
			free(dst);
			return WCLI_EXIT_FAIL;
		}
	}
	rc = sym ? weir_symlink(cli->cl_fs, target, dst) : weir_link(cli->cl_fs, target, dst);
	if (rc) {
		char both[2 * 4096 + 8];
		snprintf(both, sizeof(both), "%s -> %s", dst, target);
		wcli_err(cli, both, rc);
	}
	free(dst);
	return rc ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

/* ------------------------------------------------------------ path2fid */

int wcli_cmd_path2fid(struct wcli *cli, int argc, char **argv)
{
	int rc, failed = 0;

	if (getopt(argc, argv, "") != -1)
		return wcli_usage(cli, NULL);
	if (optind >= argc)
		return wcli_usage(cli, "needs a path");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	for (int i = optind; i < argc; i++) {
		weir_fid_t fid;
		rc = weir_path2fid(cli->cl_fs, argv[i], &fid);
		if (rc) {
			wcli_err(cli, argv[i], rc);
			failed = 1;
			continue;
		}
		if (argc - optind > 1)
			printf("%s: ", argv[i]);
		printf("[0x%llx:0x%llx:0x0]\n", (unsigned long long)fid.seq,
		       (unsigned long long)fid.oid);
	}
	return failed ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}
