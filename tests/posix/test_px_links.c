/*
 * tests/posix/test_px_links.c - POSIX conformance: hard links and link
 * counts, symbolic links (relative and absolute targets, through
 * directories, dangling, ELOOP after 40 hops, readlink), and special files
 * made by mknod (FIFOs, sockets, devices). Cases skip until libweir has the
 * calls (weir_link, weir_symlink, weir_readlink, weir_lstat, weir_mknod).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
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

static void rec_lstat(const struct px_ops *o, struct px_ctx *c, const char *label,
		      const char *path)
{
	struct stat st;
	int rc = o->po_lstat(o, path, &st);
	px_rec_stat(c, label, rc, &st);
}

static void rec_content(const struct px_ops *o, struct px_ctx *c, const char *label,
			const char *path)
{
	char buf[256];
	ssize_t n = px_get(o, path, buf, sizeof(buf));
	px_rec_data(c, label, n, buf);
}

static void rec_readlink(const struct px_ops *o, struct px_ctx *c, const char *label,
			 const char *path, size_t len)
{
	char buf[8192];
	memset(buf, 0, sizeof(buf));
	ssize_t n = o->po_readlink(o, path, buf, len < sizeof(buf) ? len : sizeof(buf));
	if (n < 0 || n > 200)
		px_rc(c, label, n);
	else
		px_rec(c, label, "%zd \"%.*s\"", n, (int)n, buf);
}

static void rec_same(const struct px_ops *o, struct px_ctx *c, const char *label, const char *a,
		     const char *b)
{
	struct stat sa, sb;
	int ra = o->po_stat(o, a, &sa), rb = o->po_stat(o, b, &sb);
	if (ra || rb)
		px_rec(c, label, "-%s -%s", px_errname(ra), px_errname(rb));
	else
		px_bool(c, label, sa.st_ino == sb.st_ino);
}

/* ------------------------------------------------------------ hard links */

static int case_link_nlink(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_link != NULL, "weir_link"))
		return px_skip(c);
	px_rc(c, "put a", px_put(o, P("a"), "shared", 6));
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "link a b", o->po_link(o, P("a"), P("b")));
	px_rc(c, "link a d/c (other dir)", o->po_link(o, P("a"), P("d/c")));
	rec_stat(o, c, "stat a", P("a"));
	rec_stat(o, c, "stat b", P("b"));
	rec_same(o, c, "a and d/c same inode", P("a"), P("d/c"));
	/* a write through one name is read through the others */
	int fd = px_fd(c, "open b", o->po_open(o, P("b"), O_WRONLY, 0));
	if (fd >= 0) {
		px_rc(c, "pwrite via b", o->po_pwrite(o, fd, "SH", 2, 0));
		px_rc(c, "close", o->po_close(o, fd));
	}
	rec_content(o, c, "content via d/c", P("d/c"));
	rec_stat(o, c, "stat d/c after write", P("d/c"));
	px_rc(c, "unlink a", o->po_unlink(o, P("a")));
	rec_stat(o, c, "stat b after unlink a", P("b"));
	rec_content(o, c, "content b", P("b"));
	/* errors */
	px_rc(c, "link to existing name", o->po_link(o, P("b"), P("d/c")));
	px_rc(c, "link onto itself", o->po_link(o, P("b"), P("b")));
	px_rc(c, "link missing", o->po_link(o, P("missing"), P("x")));
	px_rc(c, "link into missing dir", o->po_link(o, P("b"), P("nodir/x")));
	px_rc(c, "link a directory", o->po_link(o, P("d"), P("dl")));
	px_rc(c, "link under a file", o->po_link(o, P("b"), P("b/x")));
	char name[300];
	memset(name, 'n', 256);
	name[256] = 0;
	px_rc(c, "link to 256-byte name", o->po_link(o, P("b"), P(name)));
	px_rc(c, "link to dot", o->po_link(o, P("b"), P("d/.")));
	/* ten more names, removed in another order */
	for (int i = 0; i < 10; i++)
		o->po_link(o, P("b"), px_pf(c, "l%d", i));
	rec_stat(o, c, "stat with 12 names", P("b"));
	for (int i = 9; i >= 0; i -= 2)
		o->po_unlink(o, px_pf(c, "l%d", i));
	rec_stat(o, c, "stat with 7 names", P("b"));
	px_rec_listing(o, c, "listing", P(""));
	return 0;
}

/* rename(a, b) where both name the same file: success, and nothing happens (POSIX). */
static int case_link_rename_same_file(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_link != NULL, "weir_link"))
		return px_skip(c);
	px_rc(c, "put a", px_put(o, P("a"), "x", 1));
	px_rc(c, "link a b", o->po_link(o, P("a"), P("b")));
	px_rc(c, "rename a b", o->po_rename(o, P("a"), P("b")));
	rec_stat(o, c, "stat a", P("a"));
	rec_stat(o, c, "stat b", P("b"));
	px_rec_listing(o, c, "listing", P(""));
	/* a third name replacing another file: that file's link count drops */
	px_rc(c, "put other", px_put(o, P("other"), "o", 1));
	px_rc(c, "link other other2", o->po_link(o, P("other"), P("other2")));
	px_rc(c, "rename a other", o->po_rename(o, P("a"), P("other")));
	rec_stat(o, c, "stat other2", P("other2"));
	rec_stat(o, c, "stat b", P("b"));
	return 0;
}

static int case_link_open_unlinked(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_link != NULL, "weir_link"))
		return px_skip(c);
	px_rc(c, "put a", px_put(o, P("a"), "keep me", 7));
	px_rc(c, "link a b", o->po_link(o, P("a"), P("b")));
	int fd = px_fd(c, "open a", o->po_open(o, P("a"), O_RDWR, 0));
	if (fd < 0)
		return 0;
	px_rc(c, "unlink a", o->po_unlink(o, P("a")));
	struct stat st;
	int rc = o->po_fstat(o, fd, &st);
	px_rec_stat(c, "fstat, one name left", rc, &st);
	px_rc(c, "unlink b", o->po_unlink(o, P("b")));
	rc = o->po_fstat(o, fd, &st);
	px_rec_stat(c, "fstat, no name left", rc, &st);
	char buf[16];
	px_rec_data(c, "pread", o->po_pread(o, fd, buf, sizeof(buf), 0), buf);
	px_rc(c, "pwrite", o->po_pwrite(o, fd, "!", 1, 7));
	px_rec_data(c, "pread 2", o->po_pread(o, fd, buf, sizeof(buf), 0), buf);
	px_rc(c, "close", o->po_close(o, fd));
	px_rec_listing(o, c, "listing", P(""));
	return 0;
}

/* ------------------------------------------------------------ symlinks */

static int need_symlinks(const struct px_ops *o, struct px_ctx *c)
{
	int n = px_need(c, o->po_symlink != NULL, "weir_symlink");
	n += px_need(c, o->po_readlink != NULL, "weir_readlink");
	n += px_need(c, o->po_lstat != NULL, "weir_lstat");
	return n;
}

static int case_symlink_basic(const struct px_ops *o, struct px_ctx *c)
{
	if (need_symlinks(o, c))
		return px_skip(c);
	px_rc(c, "symlink target l (dangling)", o->po_symlink(o, "target", P("l")));
	rec_lstat(o, c, "lstat l", P("l"));
	rec_stat(o, c, "stat l (dangling)", P("l"));
	rec_readlink(o, c, "readlink l", P("l"), 100);
	rec_readlink(o, c, "readlink l, 3-byte buffer", P("l"), 3);
	px_try_open(o, c, "open dangling", P("l"), O_RDONLY, 0);
	/* O_CREAT through a dangling link creates its target */
	int fd = px_fd(c, "creat through dangling", o->po_open(o, P("l"), O_CREAT | O_WRONLY, 0640));
	if (fd >= 0) {
		px_rc(c, "write", o->po_write(o, fd, "via link", 8));
		o->po_close(o, fd);
	}
	rec_stat(o, c, "stat target", P("target"));
	rec_stat(o, c, "stat l (followed)", P("l"));
	rec_content(o, c, "content via l", P("l"));
	px_try_open(o, c, "creat excl on link", P("l"), O_CREAT | O_EXCL | O_WRONLY, 0644);
	px_try_open(o, c, "open nofollow", P("l"), O_RDONLY | O_NOFOLLOW, 0);
	rec_readlink(o, c, "readlink regular file", P("target"), 100);
	rec_readlink(o, c, "readlink missing", P("missing"), 100);
	rec_readlink(o, c, "readlink dir", P(""), 100);
	px_rc(c, "symlink over existing", o->po_symlink(o, "x", P("l")));
	px_rc(c, "symlink over file", o->po_symlink(o, "x", P("target")));
	px_rc(c, "symlink empty target", o->po_symlink(o, "", P("empty")));
	px_rc(c, "symlink in missing dir", o->po_symlink(o, "x", P("nodir/l")));
	px_rc(c, "mkdir over symlink", o->po_mkdir(o, P("l"), 0755));
	px_rc(c, "rmdir symlink", o->po_rmdir(o, P("l")));
	px_rc(c, "rename l l2", o->po_rename(o, P("l"), P("l2")));
	rec_readlink(o, c, "readlink l2", P("l2"), 100);
	px_rc(c, "unlink l2", o->po_unlink(o, P("l2")));
	rec_stat(o, c, "target survives", P("target"));
	/* targets up to PATH_MAX-1 bytes are kept whole; longer ones refused */
	char *t = malloc(4097);
	if (t) {
		memset(t, 'a', 4096);
		for (int i = 200; i < 4096; i += 200)
			t[i] = '/';
		t[4095] = 0;
		px_rc(c, "symlink 4095-byte target", o->po_symlink(o, t, P("long")));
		char *r = malloc(4200);
		if (r) {
			ssize_t n = o->po_readlink(o, P("long"), r, 4200);
			px_rc(c, "readlink 4095", n);
			px_bool(c, "long target equal", n == 4095 && !memcmp(r, t, 4095));
			free(r);
		}
		rec_lstat(o, c, "lstat long", P("long"));
		t[4095] = 'b';
		t[4096] = 0;
		px_rc(c, "symlink 4096-byte target", o->po_symlink(o, t, P("toolong")));
		free(t);
	}
	px_rec_listing(o, c, "listing", P(""));
	return 0;
}

static int case_symlink_dir(const struct px_ops *o, struct px_ctx *c)
{
	if (need_symlinks(o, c))
		return px_skip(c);
	px_rc(c, "mkdir real", o->po_mkdir(o, P("real"), 0755));
	px_rc(c, "mkdir real/sub", o->po_mkdir(o, P("real/sub"), 0755));
	px_rc(c, "put real/f", px_put(o, P("real/f"), "real f", 6));
	px_rc(c, "mkdir other", o->po_mkdir(o, P("other"), 0755));
	px_rc(c, "symlink real dl", o->po_symlink(o, "real", P("dl")));
	px_rc(c, "symlink ../real other/up", o->po_symlink(o, "../real", P("other/up")));
	rec_stat(o, c, "stat dl", P("dl"));
	rec_lstat(o, c, "lstat dl", P("dl"));
	rec_lstat(o, c, "lstat dl/ (trailing slash follows)", P("dl/"));
	rec_content(o, c, "content dl/f", P("dl/f"));
	rec_content(o, c, "content other/up/f", P("other/up/f"));
	px_rc(c, "creat dl/new", px_put(o, P("dl/new"), "n", 1));
	rec_stat(o, c, "stat real/new", P("real/new"));
	px_rc(c, "mkdir dl/d2", o->po_mkdir(o, P("dl/d2"), 0755));
	px_rec_listing(o, c, "listing via dl", P("dl"));
	/* ".." after a symlink is the parent of its target, not of the link */
	rec_same(o, c, "other/up/.. is the case dir", P("other/up/.."), P(""));
	rec_same(o, c, "dl/sub/.. is real", P("dl/sub/.."), P("real"));
	px_rc(c, "rmdir dl", o->po_rmdir(o, P("dl")));
	px_rc(c, "rmdir dl/", o->po_rmdir(o, P("dl/")));
	px_rc(c, "rename dl/sub dl/sub2", o->po_rename(o, P("dl/sub"), P("dl/sub2")));
	px_rc(c, "unlink dl", o->po_unlink(o, P("dl")));
	rec_stat(o, c, "real survives", P("real"));
	/* a link to a file with a trailing slash */
	px_rc(c, "symlink real/f fl", o->po_symlink(o, "real/f", P("fl")));
	rec_stat(o, c, "stat fl/", P("fl/"));
	rec_lstat(o, c, "lstat fl", P("fl"));
	/* trailing slashes on a link to a directory */
	px_rc(c, "symlink real dl2", o->po_symlink(o, "real", P("dl2")));
	px_rc(c, "unlink dl2/", o->po_unlink(o, P("dl2/")));
	px_rc(c, "rename dl2/ dl3", o->po_rename(o, P("dl2/"), P("dl3")));
	px_rc(c, "mkdir dl2/", o->po_mkdir(o, P("dl2/"), 0755));
	px_rc(c, "symlink x new/", o->po_symlink(o, "x", P("new/")));
	rec_lstat(o, c, "lstat dl2", P("dl2"));
	rec_lstat(o, c, "lstat dl3", P("dl3"));
	px_rec_listing(o, c, "listing", P(""));
	return 0;
}

/* What follows a symlink and what acts on the link itself. */
static int case_symlink_follow_rules(const struct px_ops *o, struct px_ctx *c)
{
	if (need_symlinks(o, c) || px_need(c, o->po_link && o->po_chmod, "weir_link and weir_chmod"))
		return px_skip(c);
	px_rc(c, "put t", px_put(o, P("t"), "target", 6));
	px_rc(c, "symlink t l", o->po_symlink(o, "t", P("l")));
	px_rc(c, "link l l2 (the link itself)", o->po_link(o, P("l"), P("l2")));
	rec_lstat(o, c, "lstat l2", P("l2"));
	rec_lstat(o, c, "lstat l", P("l"));
	rec_stat(o, c, "stat t", P("t"));
	px_rc(c, "chmod via l", o->po_chmod(o, P("l"), 0600));
	rec_stat(o, c, "stat t after chmod", P("t"));
	rec_lstat(o, c, "lstat l after chmod", P("l"));
	px_rc(c, "truncate via l", o->po_truncate(o, P("l"), 3));
	rec_stat(o, c, "stat t after truncate", P("t"));
	px_rc(c, "symlink missing/x dang", o->po_symlink(o, "missing/x", P("dang")));
	px_try_open(o, c, "creat through link into missing dir", P("dang"), O_CREAT | O_WRONLY,
		    0644);
	px_rc(c, "chmod dangling", o->po_chmod(o, P("dang"), 0600));
	px_rc(c, "truncate dangling", o->po_truncate(o, P("dang"), 0));
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "put d/f", px_put(o, P("d/f"), "f", 1));
	px_rc(c, "symlink d dl", o->po_symlink(o, "d", P("dl")));
	/* O_NOFOLLOW only concerns the last component */
	px_try_open(o, c, "nofollow through dl/f", P("dl/f"), O_RDONLY | O_NOFOLLOW, 0);
	px_try_open(o, c, "nofollow on dl", P("dl"), O_RDONLY | O_NOFOLLOW, 0);
	px_try_open(o, c, "nofollow directory on dl", P("dl"), O_RDONLY | O_NOFOLLOW | O_DIRECTORY,
		    0);
	px_try_open(o, c, "directory via dl", P("dl"), O_RDONLY | O_DIRECTORY, 0);
	px_rc(c, "rename over a symlink", o->po_rename(o, P("t"), P("l")));
	rec_lstat(o, c, "lstat l after rename over it", P("l"));
	rec_lstat(o, c, "lstat l2 (other name of the old link)", P("l2"));
	px_rec_listing(o, c, "listing", P(""));
	return 0;
}

/* Absolute targets resolve from the filesystem's root (needs PX_ROOTED). */
static int case_symlink_absolute(const struct px_ops *o, struct px_ctx *c)
{
	if (need_symlinks(o, c))
		return px_skip(c);
	px_rc(c, "put t", px_put(o, P("t"), "absolute", 8));
	px_rc(c, "symlink /case/t abs", o->po_symlink(o, P("t"), P("abs")));
	rec_content(o, c, "content via abs", P("abs"));
	px_rc(c, "symlink / root", o->po_symlink(o, "/", P("root")));
	char p[400];
	snprintf(p, sizeof(p), "root%s/t", c->pc_dir);
	rec_content(o, c, "content via root/<case>/t", P(p));
	rec_same(o, c, "root/.. is /", P("root/.."), "/");
	px_rc(c, "symlink /../.. up", o->po_symlink(o, "/../..", P("up")));
	rec_same(o, c, "up is /", P("up"), "/");
	px_rc(c, "symlink /missing dangling", o->po_symlink(o, "/px-missing-target", P("dang")));
	rec_stat(o, c, "stat dangling absolute", P("dang"));
	return 0;
}

static int case_symlink_loops(const struct px_ops *o, struct px_ctx *c)
{
	if (need_symlinks(o, c))
		return px_skip(c);
	px_rc(c, "symlink self", o->po_symlink(o, "self", P("self")));
	rec_stat(o, c, "stat self", P("self"));
	rec_lstat(o, c, "lstat self", P("self"));
	px_rc(c, "symlink a->b", o->po_symlink(o, "b", P("a")));
	px_rc(c, "symlink b->a", o->po_symlink(o, "a", P("b")));
	rec_stat(o, c, "stat a", P("a"));
	rec_stat(o, c, "stat a/x", P("a/x"));
	px_try_open(o, c, "open a", P("a"), O_RDONLY, 0);
	px_try_open(o, c, "creat a", P("a"), O_CREAT | O_WRONLY, 0644);
	px_rc(c, "mkdir a/x", o->po_mkdir(o, P("a/x"), 0755));
	px_rc(c, "unlink a (the link itself)", o->po_unlink(o, P("a")));
	/* chains: 40 hops resolve, 41 do not (Linux MAXSYMLINKS) */
	px_rc(c, "put end", px_put(o, P("end"), "end", 3));
	char name[32], target[32];
	for (int i = 1; i <= 41; i++) {
		snprintf(name, sizeof(name), "c%02d", i);
		if (i == 1)
			snprintf(target, sizeof(target), "end");
		else
			snprintf(target, sizeof(target), "c%02d", i - 1);
		o->po_symlink(o, target, P(name));
	}
	rec_stat(o, c, "stat c39 (39 hops)", P("c39"));
	rec_stat(o, c, "stat c40 (40 hops)", P("c40"));
	rec_stat(o, c, "stat c41 (41 hops)", P("c41"));
	rec_content(o, c, "read c40", P("c40"));
	px_try_open(o, c, "open c41", P("c41"), O_RDONLY, 0);
	/* hops count across the whole path: a directory link in front adds one */
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "symlink d dl", o->po_symlink(o, "d", P("dl")));
	px_rc(c, "symlink ../c39 d/c39", o->po_symlink(o, "../c39", P("d/c39")));
	rec_stat(o, c, "stat dl/c39 (41 hops)", P("dl/c39"));
	rec_stat(o, c, "stat d/c39 (40 hops)", P("d/c39"));
	return 0;
}

/* ------------------------------------------------------------ mknod */

static int case_mknod_fifo_socket(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_mknod != NULL, "weir_mknod"))
		return px_skip(c);
	px_rc(c, "mknod fifo", o->po_mknod(o, P("fifo"), S_IFIFO | 0640, 0));
	px_rc(c, "mknod sock", o->po_mknod(o, P("sock"), S_IFSOCK | 0600, 0));
	px_rc(c, "mknod reg", o->po_mknod(o, P("reg"), S_IFREG | 0644, 0));
	px_rc(c, "mknod type 0 (regular)", o->po_mknod(o, P("zero"), 0644, 0));
	rec_stat(o, c, "stat fifo", P("fifo"));
	rec_stat(o, c, "stat sock", P("sock"));
	rec_stat(o, c, "stat reg", P("reg"));
	rec_stat(o, c, "stat zero", P("zero"));
	px_rc(c, "mknod existing", o->po_mknod(o, P("fifo"), S_IFIFO | 0644, 0));
	px_rc(c, "mknod dir type", o->po_mknod(o, P("dir"), S_IFDIR | 0755, 0));
	px_rc(c, "mknod bad type", o->po_mknod(o, P("bad"), 0170000 | 0644, 0));
	px_rc(c, "mknod missing parent", o->po_mknod(o, P("nodir/f"), S_IFIFO | 0644, 0));
	px_rec_listing(o, c, "listing", P(""));
	px_rc(c, "rename fifo", o->po_rename(o, P("fifo"), P("fifo2")));
	rec_stat(o, c, "stat fifo2", P("fifo2"));
	px_rc(c, "unlink fifo2", o->po_unlink(o, P("fifo2")));
	px_rc(c, "unlink sock", o->po_unlink(o, P("sock")));
	px_rc(c, "mkdir over fifo name", o->po_mkdir(o, P("fifo2"), 0755));
	return 0;
}

static int case_mknod_devices(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_mknod != NULL, "weir_mknod"))
		return px_skip(c);
	px_rc(c, "mknod chr 1:3", o->po_mknod(o, P("null"), S_IFCHR | 0666, makedev(1, 3)));
	px_rc(c, "mknod blk 7:0", o->po_mknod(o, P("loop"), S_IFBLK | 0660, makedev(7, 0)));
	struct stat st;
	int rc = o->po_stat(o, P("null"), &st);
	px_rec_stat(c, "stat chr", rc, &st);
	if (!rc)
		px_rec(c, "rdev chr", "%u:%u", major(st.st_rdev), minor(st.st_rdev));
	rc = o->po_stat(o, P("loop"), &st);
	px_rec_stat(c, "stat blk", rc, &st);
	if (!rc)
		px_rec(c, "rdev blk", "%u:%u", major(st.st_rdev), minor(st.st_rdev));
	px_rec_listing(o, c, "listing", P(""));
	return 0;
}

int main(void)
{
	static const struct px_case cases[] = {
		PX_CASE(link_nlink, 0),
		PX_CASE(link_rename_same_file, 0),
		PX_CASE(link_open_unlinked, 0),
		PX_CASE(symlink_basic, 0),
		PX_CASE(symlink_dir, 0),
		PX_CASE(symlink_absolute, PX_ROOTED),
		PX_CASE(symlink_loops, 0),
		PX_CASE(symlink_follow_rules, 0),
		PX_CASE(mknod_fifo_socket, 0),
		PX_CASE(mknod_devices, 0),
		PX_CASE_END,
	};
	return px_main("links", cases);
}
