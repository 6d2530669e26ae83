/*
 * tests/posix/test_px_ns.c - POSIX conformance: the namespace. mkdir and
 * rmdir (ENOTEMPTY, link counts), unlink, rename (replacing a file,
 * replacing an empty directory, EINVAL into its own subtree, the
 * ENOTDIR/EISDIR rules, onto itself, "." and ".."), path resolution ("." and
 * "..", "/..", trailing and doubled slashes), readdir (every name exactly
 * once with its d_type, entries created and removed between pages, an empty
 * directory, telldir/seekdir), renameat2 flags and openat. Each case runs on
 * libweir and on the local filesystem; the logs must match.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "px_run.h"

#define P(rel) px_p(c, (rel))

static void rec_stat(const struct px_ops *o, struct px_ctx *c, const char *label,
		     const char *path)
{
	struct stat st;
	int rc = o->po_stat(o, path, &st);
	px_rec_stat(c, label, rc, &st);
}

static void rec_content(const struct px_ops *o, struct px_ctx *c, const char *label,
			const char *path)
{
	char buf[256];
	ssize_t n = px_get(o, path, buf, sizeof(buf));
	px_rec_data(c, label, n, buf);
}

/* Do \a a and \a b name the same inode? Recorded as yes/no (or the stat error). */
static void rec_same(const struct px_ops *o, struct px_ctx *c, const char *label, const char *a,
		     const char *b)
{
	struct stat sa, sb;
	int ra = o->po_stat(o, a, &sa), rb = o->po_stat(o, b, &sb);
	if (ra || rb)
		px_rec(c, label, "-%s -%s", px_errname(ra), px_errname(rb));
	else
		px_bool(c, label, sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev);
}

/* ------------------------------------------------------------ mkdir, rmdir, unlink */

static int case_mkdir_rmdir(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "mkdir d 0751", o->po_mkdir(o, P("d"), 0751));
	rec_stat(o, c, "stat d", P("d"));
	px_rc(c, "mkdir d again", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "touch f", px_touch(o, P("f")));
	px_rc(c, "mkdir over file", o->po_mkdir(o, P("f"), 0755));
	px_rc(c, "mkdir missing parent", o->po_mkdir(o, P("nodir/x"), 0755));
	px_rc(c, "mkdir under file", o->po_mkdir(o, P("f/x"), 0755));
	px_rc(c, "mkdir d/s1", o->po_mkdir(o, P("d/s1"), 0755));
	px_rc(c, "mkdir d/s2", o->po_mkdir(o, P("d/s2"), 0755));
	px_rc(c, "touch d/file", px_touch(o, P("d/file")));
	rec_stat(o, c, "stat d with 2 subdirs", P("d"));
	rec_stat(o, c, "stat case dir", P(""));
	px_rc(c, "rmdir non-empty", o->po_rmdir(o, P("d")));
	px_rc(c, "rmdir file", o->po_rmdir(o, P("f")));
	px_rc(c, "rmdir missing", o->po_rmdir(o, P("missing")));
	px_rc(c, "rmdir under file", o->po_rmdir(o, P("f/x")));
	px_rc(c, "rmdir d/.", o->po_rmdir(o, P("d/.")));
	px_rc(c, "rmdir d/s2/..", o->po_rmdir(o, P("d/s2/..")));
	px_rc(c, "rmdir s1", o->po_rmdir(o, P("d/s1")));
	rec_stat(o, c, "stat d with 1 subdir", P("d"));
	px_rc(c, "rmdir s1 again", o->po_rmdir(o, P("d/s1")));
	px_rc(c, "unlink d/file", o->po_unlink(o, P("d/file")));
	px_rc(c, "rmdir d still has s2", o->po_rmdir(o, P("d")));
	px_rc(c, "rmdir s2", o->po_rmdir(o, P("d/s2")));
	rec_stat(o, c, "stat d empty", P("d"));
	px_rc(c, "rmdir d", o->po_rmdir(o, P("d")));
	rec_stat(o, c, "stat d gone", P("d"));
	rec_stat(o, c, "stat case dir after", P(""));
	px_rc(c, "mkdir mode 0", o->po_mkdir(o, P("m0"), 0));
	rec_stat(o, c, "stat m0", P("m0"));
	px_rc(c, "mkdir mode 01777", o->po_mkdir(o, P("sticky"), 01777));
	rec_stat(o, c, "stat sticky", P("sticky"));
	px_rc(c, "mkdir then file inside mode-0 dir (root)", px_touch(o, P("m0/x")));
	return 0;
}

static int case_unlink(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "put f", px_put(o, P("f"), "old", 3));
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "unlink f", o->po_unlink(o, P("f")));
	rec_stat(o, c, "stat f", P("f"));
	px_rc(c, "unlink f again", o->po_unlink(o, P("f")));
	px_rc(c, "unlink dir", o->po_unlink(o, P("d")));
	px_rc(c, "unlink d/.", o->po_unlink(o, P("d/.")));
	px_rc(c, "unlink d/..", o->po_unlink(o, P("d/..")));
	px_rc(c, "unlink missing parent", o->po_unlink(o, P("nodir/x")));
	px_rc(c, "touch g", px_touch(o, P("g")));
	px_rc(c, "unlink under file", o->po_unlink(o, P("g/x")));
	/* the name is free again, for a new, empty file */
	px_rc(c, "touch f", px_touch(o, P("f")));
	rec_stat(o, c, "stat new f", P("f"));
	rec_content(o, c, "content new f", P("f"));
	px_rec_listing(o, c, "listing", P(""));
	return 0;
}

/* ------------------------------------------------------------ rename */

static int case_rename_file(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "put a", px_put(o, P("a"), "AAAA", 4));
	px_rc(c, "put b", px_put(o, P("b"), "BBBBBBBB", 8));
	px_rc(c, "rename a c (new name)", o->po_rename(o, P("a"), P("c")));
	rec_stat(o, c, "stat a", P("a"));
	rec_content(o, c, "content c", P("c"));
	px_rc(c, "rename c b (replace)", o->po_rename(o, P("c"), P("b")));
	rec_stat(o, c, "stat c", P("c"));
	rec_stat(o, c, "stat b", P("b"));
	rec_content(o, c, "content b", P("b"));
	px_rc(c, "mkdir d1", o->po_mkdir(o, P("d1"), 0755));
	px_rc(c, "rename b d1/x (across dirs)", o->po_rename(o, P("b"), P("d1/x")));
	rec_content(o, c, "content d1/x", P("d1/x"));
	px_rc(c, "rename missing", o->po_rename(o, P("missing"), P("y")));
	px_rc(c, "rename to missing dir", o->po_rename(o, P("d1/x"), P("nodir/y")));
	px_rc(c, "put f", px_put(o, P("f"), "F", 1));
	px_rc(c, "rename under file", o->po_rename(o, P("d1/x"), P("f/y")));
	px_rc(c, "rename from under file", o->po_rename(o, P("f/y"), P("z")));
	px_rc(c, "rename onto itself", o->po_rename(o, P("d1/x"), P("d1/x")));
	rec_content(o, c, "content after self", P("d1/x"));
	px_rc(c, "rename with .. in new", o->po_rename(o, P("d1/x"), P("d1/../moved")));
	rec_content(o, c, "content moved", P("moved"));
	px_rec_listing(o, c, "listing", P(""));
	px_rec_listing(o, c, "listing d1", P("d1"));
	return 0;
}

static int case_rename_dir(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "mkdir src", o->po_mkdir(o, P("src"), 0755));
	px_rc(c, "mkdir src/sub", o->po_mkdir(o, P("src/sub"), 0755));
	px_rc(c, "put src/f", px_put(o, P("src/f"), "inside", 6));
	px_rc(c, "mkdir empty", o->po_mkdir(o, P("empty"), 0700));
	px_rc(c, "mkdir full", o->po_mkdir(o, P("full"), 0755));
	px_rc(c, "touch full/x", px_touch(o, P("full/x")));
	px_rc(c, "touch file", px_touch(o, P("file")));
	/* POSIX: EEXIST or ENOTEMPTY for a non-empty target; Linux ENOTEMPTY */
	px_rc2(c, "dir over non-empty dir", o->po_rename(o, P("src"), P("full")), -ENOTEMPTY,
	       -EEXIST);
	px_rc(c, "dir over file", o->po_rename(o, P("src"), P("file")));
	px_rc(c, "file over dir", o->po_rename(o, P("file"), P("empty")));
	px_rc(c, "dir into own subtree", o->po_rename(o, P("src"), P("src/sub/in")));
	px_rc(c, "dir into own child", o->po_rename(o, P("src"), P("src/in")));
	px_rc(c, "dir onto own child dir", o->po_rename(o, P("src"), P("src/sub")));
	px_rc(c, "dir onto itself", o->po_rename(o, P("src"), P("src")));
	/* a final ".." (see case_rename_dots) */
	px_rc2(c, "dir to its parent's name via ..", o->po_rename(o, P("src/sub"), P("src/sub/..")),
	       -EINVAL, -EBUSY);
	px_rc(c, "dir over empty dir", o->po_rename(o, P("src"), P("empty")));
	rec_stat(o, c, "stat src", P("src"));
	rec_stat(o, c, "stat empty (was src)", P("empty"));
	rec_content(o, c, "content moved", P("empty/f"));
	rec_stat(o, c, "stat moved sub", P("empty/sub"));
	/* link counts of the parents when a directory changes parent */
	px_rc(c, "mkdir p1", o->po_mkdir(o, P("p1"), 0755));
	px_rc(c, "mkdir p2", o->po_mkdir(o, P("p2"), 0755));
	px_rc(c, "mkdir p1/child", o->po_mkdir(o, P("p1/child"), 0755));
	rec_stat(o, c, "p1 before", P("p1"));
	rec_stat(o, c, "p2 before", P("p2"));
	px_rc(c, "move child to p2", o->po_rename(o, P("p1/child"), P("p2/child")));
	rec_stat(o, c, "p1 after", P("p1"));
	rec_stat(o, c, "p2 after", P("p2"));
	rec_same(o, c, "child/.. is p2", P("p2/child/.."), P("p2"));
	px_rc(c, "mkdir p1/c2", o->po_mkdir(o, P("p1/c2"), 0755));
	px_rc(c, "dir over empty dir across parents", o->po_rename(o, P("p2/child"), P("p1/c2")));
	rec_stat(o, c, "p1 final", P("p1"));
	rec_stat(o, c, "p2 final", P("p2"));
	rec_same(o, c, "c2/.. is p1", P("p1/c2/.."), P("p1"));
	px_rec_listing(o, c, "listing", P(""));
	return 0;
}

/*
 * A final "." or "..": POSIX says EINVAL ("either pathname argument contains
 * a final component that is dot or dot-dot"), Linux says EBUSY; either is
 * right, anything else (or success) is not.
 */
static int case_rename_dots(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "mkdir d/sub", o->po_mkdir(o, P("d/sub"), 0755));
	px_rc(c, "touch f", px_touch(o, P("f")));
	px_rc2(c, "rename d/. x", o->po_rename(o, P("d/."), P("x")), -EINVAL, -EBUSY);
	px_rc2(c, "rename d/sub/.. x", o->po_rename(o, P("d/sub/.."), P("x")), -EINVAL, -EBUSY);
	px_rc2(c, "rename f d/.", o->po_rename(o, P("f"), P("d/.")), -EINVAL, -EBUSY);
	px_rc2(c, "rename f d/..", o->po_rename(o, P("f"), P("d/..")), -EINVAL, -EBUSY);
	px_rc2(c, "rename d/sub d/sub/.", o->po_rename(o, P("d/sub"), P("d/sub/.")), -EINVAL,
	       -EBUSY);
	px_rec_listing(o, c, "listing", P(""));
	return 0;
}

/* ------------------------------------------------------------ path resolution */

static int case_dot_dotdot(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "mkdir d/sub", o->po_mkdir(o, P("d/sub"), 0755));
	px_rc(c, "touch d/f", px_touch(o, P("d/f")));
	rec_same(o, c, "d/. is d", P("d/."), P("d"));
	rec_same(o, c, "d/sub/.. is d", P("d/sub/.."), P("d"));
	rec_same(o, c, "d/sub/../sub/./.. is d", P("d/sub/../sub/./.."), P("d"));
	rec_same(o, c, "d/./sub/../f is d/f", P("d/./sub/../f"), P("d/f"));
	rec_same(o, c, "d/.. is the case dir", P("d/.."), P(""));
	rec_stat(o, c, "stat d/f/..", P("d/f/.."));
	rec_stat(o, c, "stat d/f/.", P("d/f/."));
	rec_stat(o, c, "stat d/missing/..", P("d/missing/.."));
	px_rc(c, "mkdir d/.", o->po_mkdir(o, P("d/."), 0755));
	px_rc(c, "mkdir d/sub/..", o->po_mkdir(o, P("d/sub/.."), 0755));
	return 0;
}

/* "/" and "/..": the root is its own parent (needs "/" to be the filesystem's root). */
static int case_root_dotdot(const struct px_ops *o, struct px_ctx *c)
{
	rec_same(o, c, "/.. is /", "/..", "/");
	rec_same(o, c, "/../.. is /", "/../..", "/");
	rec_same(o, c, "/./. is /", "/./.", "/");
	rec_same(o, c, "//// is /", "////", "/");
	char p[400];
	snprintf(p, sizeof(p), "/../..%s", c->pc_dir);
	rec_same(o, c, "/../../<case> is <case>", p, c->pc_dir);
	snprintf(p, sizeof(p), "%s/../..", c->pc_dir);
	rec_same(o, c, "<case>/../.. is /", p, "/");
	struct stat st;
	int rc = o->po_stat(o, "/..", &st);
	px_rc(c, "stat /..", rc);
	px_rec(c, "type of /..", "%s", S_ISDIR(st.st_mode) ? "dir" : "other");
	int fd = px_fd(c, "open /.. rdonly", o->po_open(o, "/..", O_RDONLY | O_DIRECTORY, 0));
	if (fd >= 0)
		o->po_close(o, fd);
	px_rc(c, "rmdir /", o->po_rmdir(o, "/"));
	px_rc(c, "rmdir /..", o->po_rmdir(o, "/.."));
	px_rc(c, "mkdir /", o->po_mkdir(o, "/", 0755));
	px_rc(c, "mkdir /..", o->po_mkdir(o, "/..", 0755));
	snprintf(p, sizeof(p), "%s/x", c->pc_dir);
	px_rc(c, "rename / into case", o->po_rename(o, "/", p));
	px_rc(c, "unlink /", o->po_unlink(o, "/"));
	return 0;
}

static int case_trailing_slash(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "touch f", px_touch(o, P("f")));
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	rec_stat(o, c, "stat f/", P("f/"));
	rec_stat(o, c, "stat d/", P("d/"));
	rec_stat(o, c, "stat d//", P("d//"));
	rec_stat(o, c, "stat missing/", P("missing/"));
	int fd = px_fd(c, "open f/", o->po_open(o, P("f/"), O_RDONLY, 0));
	if (fd >= 0)
		o->po_close(o, fd);
	fd = px_fd(c, "creat new/", o->po_open(o, P("new/"), O_CREAT | O_WRONLY, 0644));
	if (fd >= 0)
		o->po_close(o, fd);
	rec_stat(o, c, "stat new", P("new"));
	fd = px_fd(c, "open d/ rdonly", o->po_open(o, P("d/"), O_RDONLY, 0));
	if (fd >= 0)
		o->po_close(o, fd);
	px_rc(c, "mkdir e/", o->po_mkdir(o, P("e/"), 0755));
	rec_stat(o, c, "stat e", P("e"));
	px_rc(c, "unlink f/", o->po_unlink(o, P("f/")));
	rec_stat(o, c, "stat f still", P("f"));
	px_rc(c, "rmdir e/", o->po_rmdir(o, P("e/")));
	px_rc(c, "rmdir f/", o->po_rmdir(o, P("f/")));
	px_rc(c, "rename d/ d2/", o->po_rename(o, P("d/"), P("d2/")));
	px_rc(c, "rename f g/", o->po_rename(o, P("f"), P("g/")));
	px_rc(c, "rename f/ g", o->po_rename(o, P("f/"), P("g")));
	px_rc(c, "truncate f/", o->po_truncate(o, P("f/"), 0));
	px_rec_listing(o, c, "listing", P(""));
	return 0;
}

static int case_double_slash(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "put d//f", px_put(o, P("d//f"), "x", 1));
	rec_stat(o, c, "stat d/f", P("d/f"));
	rec_stat(o, c, "stat .//d///f", P(".//d///f"));
	px_rc(c, "mkdir d//e//", o->po_mkdir(o, P("d//e//"), 0755));
	px_rc(c, "rename d//f d///e//g", o->po_rename(o, P("d//f"), P("d///e//g")));
	px_rec_listing(o, c, "listing d/e", P("d/e"));
	return 0;
}

static int case_lookup_errors(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "touch f", px_touch(o, P("f")));
	rec_stat(o, c, "stat missing", P("missing"));
	rec_stat(o, c, "stat missing/x", P("missing/x"));
	rec_stat(o, c, "stat f/x", P("f/x"));
	rec_stat(o, c, "stat empty path", "");
	px_try_opendir(o, c, "opendir missing", P("missing"));
	px_try_opendir(o, c, "opendir file", P("f"));
	px_try_opendir(o, c, "opendir f/x", P("f/x"));
	px_rc(c, "mkdir empty path", o->po_mkdir(o, "", 0755));
	px_rc(c, "rmdir empty path", o->po_rmdir(o, ""));
	px_rc(c, "unlink empty path", o->po_unlink(o, ""));
	px_rc(c, "rename empty paths", o->po_rename(o, "", P("z")));
	return 0;
}

/* ------------------------------------------------------------ readdir */

static int case_readdir_all_once(const struct px_ops *o, struct px_ctx *c)
{
	char name[64];
	int bad = 0;
	/* more than one page of entries on Weir (1024 per page) */
	for (int i = 0; i < 1500; i++) {
		snprintf(name, sizeof(name), "f%04d", i);
		bad += px_touch(o, P(name)) != 0;
	}
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "d%02d", i);
		bad += o->po_mkdir(o, P(name), 0755) != 0;
	}
	px_rec(c, "creates failed", "%d", bad);
	/* sorted "name:type" of every entry: a name missing or twice shows */
	px_rc(c, "entries", px_rec_listing(o, c, "listing", P("")));
	rec_stat(o, c, "stat dir", P(""));
	return 0;
}

static int case_readdir_empty(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "mkdir e", o->po_mkdir(o, P("e"), 0755));
	px_rec_listing(o, c, "listing", P("e"));
	int dh = px_fd(c, "opendir", o->po_opendir(o, P("e")));
	if (dh < 0)
		return 0;
	struct px_dirent de;
	int n = 0, rc;
	while ((rc = o->po_readdir(o, dh, &de)) == 1)
		n++;
	px_rc(c, "entries", n);
	px_rc(c, "end", rc);
	px_rc(c, "after end", o->po_readdir(o, dh, &de));
	px_rc(c, "after end again", o->po_readdir(o, dh, &de));
	px_rc(c, "closedir", o->po_closedir(o, dh));
	return 0;
}

/*
 * Entries created and removed while a listing is between pages: POSIX
 * leaves open whether those appear, but every other entry must appear
 * exactly once, and no entry twice.
 */
static int case_readdir_while_changing(const struct px_ops *o, struct px_ctx *c)
{
	enum { NR = 2600, DEL_FROM = 2000, DEL_TO = 2200, NR_NEW = 200 };
	static unsigned char seen[NR], seen_new[NR_NEW];
	char name[64];
	int bad = 0;
	for (int i = 0; i < NR; i++) {
		snprintf(name, sizeof(name), "f%04d", i);
		bad += px_touch(o, P(name)) != 0;
	}
	px_rec(c, "creates failed", "%d", bad);
	int dh = px_fd(c, "opendir", o->po_opendir(o, P("")));
	if (dh < 0)
		return 0;
	struct px_dirent de;
	int n = 0, rc = 1, dots = 0, strays = 0, twice = 0;
	memset(seen, 0, sizeof(seen));
	memset(seen_new, 0, sizeof(seen_new));
	for (;;) {
		if (n == 1100) {
			/* between pages (Weir pages hold 1024): remove some, add some */
			for (int i = DEL_FROM; i < DEL_TO; i++) {
				snprintf(name, sizeof(name), "f%04d", i);
				bad += o->po_unlink(o, P(name)) != 0;
			}
			for (int i = 0; i < NR_NEW; i++) {
				snprintf(name, sizeof(name), "g%03d", i);
				bad += px_touch(o, P(name)) != 0;
			}
		}
		rc = o->po_readdir(o, dh, &de);
		if (rc != 1)
			break;
		n++;
		int idx;
		char tail;
		if (!strcmp(de.pd_name, ".") || !strcmp(de.pd_name, "..")) {
			dots++;
		} else if (sscanf(de.pd_name, "f%4d%c", &idx, &tail) == 1 && idx >= 0 && idx < NR) {
			twice += seen[idx]++ > 0;
		} else if (sscanf(de.pd_name, "g%3d%c", &idx, &tail) == 1 && idx >= 0 &&
			   idx < NR_NEW) {
			twice += seen_new[idx]++ > 0;
		} else {
			strays++;
		}
	}
	px_rc(c, "end", rc);
	px_rc(c, "closedir", o->po_closedir(o, dh));
	px_rec(c, "changes failed", "%d", bad);
	int stable_once = 0;
	for (int i = 0; i < NR; i++)
		if (i < DEL_FROM || i >= DEL_TO)
			stable_once += seen[i] == 1;
	px_rec(c, "unchanged entries seen once", "%d of %d", stable_once, NR - (DEL_TO - DEL_FROM));
	px_rec(c, "entries seen twice", "%d", twice);
	px_rec(c, "dots", "%d", dots);
	px_rec(c, "strays", "%d", strays);
	/* a new listing shows exactly the final state */
	int total = px_rec_listing(o, c, "listing after", P(""));
	px_rc(c, "entries after", total);
	return 0;
}

static int case_readdir_types(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "touch f", px_touch(o, P("f")));
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "put g", px_put(o, P("g"), "data", 4));
	px_rc(c, "mkdir d/inner", o->po_mkdir(o, P("d/inner"), 0755));
	px_rec_listing(o, c, "listing", P(""));
	px_rec_listing(o, c, "listing d", P("d"));
	px_rec_listing(o, c, "listing via d/inner/..", P("d/inner/.."));
	return 0;
}

static int case_telldir_seekdir(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_telldir && o->po_seekdir, "weir_telldir and weir_seekdir"))
		return px_skip(c);
	char name[32], first[10][256];
	for (int i = 0; i < 60; i++) {
		snprintf(name, sizeof(name), "e%02d", i);
		px_touch(o, P(name));
	}
	int dh = px_fd(c, "opendir", o->po_opendir(o, P("")));
	if (dh < 0)
		return 0;
	struct px_dirent de;
	for (int i = 0; i < 20; i++)
		o->po_readdir(o, dh, &de);
	int64_t pos = o->po_telldir(o, dh);
	px_bool(c, "telldir >= 0", pos >= 0);
	int got = 0;
	for (int i = 0; i < 10 && o->po_readdir(o, dh, &de) == 1; i++)
		snprintf(first[got++], 256, "%s", de.pd_name);
	px_rc(c, "read after tell", got);
	px_rc(c, "seekdir", o->po_seekdir(o, dh, pos));
	int same = 0;
	for (int i = 0; i < got && o->po_readdir(o, dh, &de) == 1; i++)
		same += !strcmp(first[i], de.pd_name);
	px_rc(c, "same entries after seekdir", same);
	int rest = 0;
	while (o->po_readdir(o, dh, &de) == 1)
		rest++;
	px_rc(c, "rest", rest);
	/* back to the start */
	px_rc(c, "seekdir start", o->po_seekdir(o, dh, 0) < 0 ? -1 : 0);
	px_rc(c, "closedir", o->po_closedir(o, dh));
	return 0;
}

/* ------------------------------------------------------------ renameat2, openat */

static int case_rename2_flags(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_rename2 != NULL, "weir_rename2"))
		return px_skip(c);
	px_rc(c, "put a", px_put(o, P("a"), "AAA", 3));
	px_rc(c, "put b", px_put(o, P("b"), "BB", 2));
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "touch d/in", px_touch(o, P("d/in")));
	px_rc(c, "noreplace onto existing", o->po_rename2(o, P("a"), P("b"), RENAME_NOREPLACE));
	rec_content(o, c, "b kept", P("b"));
	px_rc(c, "noreplace to new name", o->po_rename2(o, P("a"), P("c"), RENAME_NOREPLACE));
	rec_stat(o, c, "stat a", P("a"));
	px_rc(c, "noreplace onto itself", o->po_rename2(o, P("c"), P("c"), RENAME_NOREPLACE));
	px_rc(c, "exchange files", o->po_rename2(o, P("b"), P("c"), RENAME_EXCHANGE));
	rec_content(o, c, "b after exchange", P("b"));
	rec_content(o, c, "c after exchange", P("c"));
	px_rc(c, "exchange file and dir", o->po_rename2(o, P("b"), P("d"), RENAME_EXCHANGE));
	rec_stat(o, c, "stat b (was d)", P("b"));
	rec_stat(o, c, "stat d (was b)", P("d"));
	rec_stat(o, c, "stat b/in", P("b/in"));
	px_rc(c, "exchange with missing", o->po_rename2(o, P("c"), P("nope"), RENAME_EXCHANGE));
	px_rc(c, "exchange into own subtree", o->po_rename2(o, P("b"), P("b/in"), RENAME_EXCHANGE));
	px_rc(c, "both flags", o->po_rename2(o, P("c"), P("d"), RENAME_NOREPLACE | RENAME_EXCHANGE));
	px_rc(c, "unknown flag", o->po_rename2(o, P("c"), P("e"), 0x80000000u));
	px_rc(c, "no flags", o->po_rename2(o, P("c"), P("e"), 0));
	px_rec_listing(o, c, "listing", P(""));
	return 0;
}

static int case_openat(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_openat != NULL, "weir_openat"))
		return px_skip(c);
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "put d/f", px_put(o, P("d/f"), "in d", 4));
	px_rc(c, "put top", px_put(o, P("top"), "top", 3));
	int dfd = px_fd(c, "open d", o->po_open(o, P("d"), O_RDONLY | O_DIRECTORY, 0));
	if (dfd < 0)
		return 0;
	int fd = px_fd(c, "openat f", o->po_openat(o, dfd, "f", O_RDONLY, 0));
	char b[16];
	if (fd >= 0) {
		px_rec_data(c, "read f", o->po_read(o, fd, b, sizeof(b)), b);
		o->po_close(o, fd);
	}
	fd = px_fd(c, "openat ../top", o->po_openat(o, dfd, "../top", O_RDONLY, 0));
	if (fd >= 0) {
		px_rec_data(c, "read top", o->po_read(o, fd, b, sizeof(b)), b);
		o->po_close(o, fd);
	}
	fd = px_fd(c, "openat creat new", o->po_openat(o, dfd, "new", O_CREAT | O_WRONLY, 0600));
	if (fd >= 0)
		o->po_close(o, fd);
	rec_stat(o, c, "stat d/new", P("d/new"));
	fd = px_fd(c, "openat absolute", o->po_openat(o, dfd, P("top"), O_RDONLY, 0));
	if (fd >= 0)
		o->po_close(o, fd);
	fd = px_fd(c, "openat missing", o->po_openat(o, dfd, "missing", O_RDONLY, 0));
	if (fd >= 0)
		o->po_close(o, fd);
	/* the directory moves: names stay relative to it */
	px_rc(c, "rename d e", o->po_rename(o, P("d"), P("e")));
	fd = px_fd(c, "openat after rename", o->po_openat(o, dfd, "f", O_RDONLY, 0));
	if (fd >= 0)
		o->po_close(o, fd);
	fd = px_fd(c, "openat creat after rename",
		   o->po_openat(o, dfd, "made", O_CREAT | O_WRONLY, 0644));
	if (fd >= 0)
		o->po_close(o, fd);
	px_rec_listing(o, c, "listing e", P("e"));
	/* a file descriptor of a file is not a directory */
	int ffd = px_fd(c, "open top", o->po_open(o, P("top"), O_RDONLY, 0));
	if (ffd >= 0) {
		fd = px_fd(c, "openat on a file fd", o->po_openat(o, ffd, "x", O_RDONLY, 0));
		if (fd >= 0)
			o->po_close(o, fd);
		o->po_close(o, ffd);
	}
	o->po_close(o, dfd);
	return 0;
}

int main(void)
{
	static const struct px_case cases[] = {
		PX_CASE(mkdir_rmdir, 0),
		PX_CASE(unlink, 0),
		PX_CASE(rename_file, 0),
		PX_CASE(rename_dir, 0),
		PX_CASE(rename_dots, 0),
		PX_CASE(dot_dotdot, 0),
		PX_CASE(root_dotdot, PX_ROOTED),
		PX_CASE(trailing_slash, 0),
		PX_CASE(double_slash, 0),
		PX_CASE(lookup_errors, 0),
		PX_CASE(readdir_all_once, 0),
		PX_CASE(readdir_empty, 0),
		PX_CASE(readdir_while_changing, 0),
		PX_CASE(readdir_types, 0),
		PX_CASE(telldir_seekdir, 0),
		PX_CASE(rename2_flags, 0),
		PX_CASE(openat, 0),
		PX_CASE_END,
	};
	return px_main("ns", cases);
}
