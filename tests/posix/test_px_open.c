/*
 * tests/posix/test_px_open.c - POSIX conformance: open(2) and its flags
 * (O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_DIRECTORY, access modes), the
 * errors of path lookup (ENOENT, ENOTDIR, EISDIR, ENAMETOOLONG at 256-byte
 * names and 4096-byte paths) and names made of arbitrary bytes; each case
 * runs on libweir and on the local Linux filesystem and the two result logs
 * must match (see px_run.h).
 */
#define _GNU_SOURCE
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
	char buf[4096];
	ssize_t n = px_get(o, path, buf, sizeof(buf));
	px_rec_data(c, label, n, buf);
}

/* ------------------------------------------------------------ O_CREAT, O_EXCL, O_TRUNC */

static int case_creat(const struct px_ops *o, struct px_ctx *c)
{
	px_try_open(o, c, "creat new 0640", P("f"), O_CREAT | O_WRONLY, 0640);
	rec_stat(o, c, "stat new", P("f"));
	px_rc(c, "put 5 bytes", px_put(o, P("g"), "hello", 5));
	/* O_CREAT on an existing file opens it: no truncation, mode unchanged */
	px_try_open(o, c, "creat existing 0600", P("g"), O_CREAT | O_RDWR, 0600);
	rec_stat(o, c, "stat existing", P("g"));
	rec_content(o, c, "content kept", P("g"));
	px_try_open(o, c, "creat mode 0", P("zero"), O_CREAT | O_WRONLY, 0);
	rec_stat(o, c, "stat mode 0", P("zero"));
	px_try_open(o, c, "creat mode 0777", P("all"), O_CREAT | O_RDWR, 0777);
	rec_stat(o, c, "stat mode 0777", P("all"));
	/* a file created O_RDONLY exists and can be opened again */
	px_try_open(o, c, "creat rdonly", P("ro"), O_CREAT | O_RDONLY, 0444);
	rec_stat(o, c, "stat rdonly", P("ro"));
	return 0;
}

static int case_excl(const struct px_ops *o, struct px_ctx *c)
{
	px_try_open(o, c, "excl new", P("f"), O_CREAT | O_EXCL | O_WRONLY, 0644);
	px_try_open(o, c, "excl existing file", P("f"), O_CREAT | O_EXCL | O_WRONLY, 0644);
	px_try_open(o, c, "excl existing rdonly", P("f"), O_CREAT | O_EXCL | O_RDONLY, 0644);
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_try_open(o, c, "excl existing dir", P("d"), O_CREAT | O_EXCL | O_WRONLY, 0644);
	px_try_open(o, c, "excl existing dir rdonly", P("d"), O_CREAT | O_EXCL | O_RDONLY, 0644);
	px_try_open(o, c, "excl missing parent", P("nodir/f"), O_CREAT | O_EXCL | O_WRONLY, 0644);
	px_rc(c, "unlink f", o->po_unlink(o, P("f")));
	px_try_open(o, c, "excl after unlink", P("f"), O_CREAT | O_EXCL | O_WRONLY, 0644);
	rec_stat(o, c, "stat f", P("f"));
	return 0;
}

static int case_trunc(const struct px_ops *o, struct px_ctx *c)
{
	char big[10000];
	memset(big, 'x', sizeof(big));
	px_rc(c, "put 10000", px_put(o, P("f"), big, sizeof(big)));
	px_try_open(o, c, "trunc wronly", P("f"), O_WRONLY | O_TRUNC, 0);
	rec_stat(o, c, "stat after trunc", P("f"));
	px_rc(c, "put 3", px_put(o, P("f"), "abc", 3));
	px_try_open(o, c, "trunc rdwr", P("f"), O_RDWR | O_TRUNC, 0);
	rec_stat(o, c, "stat after trunc rdwr", P("f"));
	rec_content(o, c, "content", P("f"));
	/* O_CREAT|O_TRUNC on an existing file truncates it, keeps its mode */
	px_rc(c, "put 5", px_put(o, P("g"), "hello", 5));
	px_try_open(o, c, "creat trunc existing", P("g"), O_CREAT | O_TRUNC | O_WRONLY, 0600);
	rec_stat(o, c, "stat g", P("g"));
	/* trunc then write through the same descriptor */
	int fd = px_fd(c, "open trunc rdwr", o->po_open(o, P("g"), O_RDWR | O_TRUNC, 0));
	if (fd >= 0) {
		px_rc(c, "write", o->po_write(o, fd, "xyz", 3));
		char b[16];
		px_rec_data(c, "pread", o->po_pread(o, fd, b, sizeof(b), 0), b);
		o->po_close(o, fd);
	}
	rec_stat(o, c, "stat g final", P("g"));
	/* O_TRUNC on a directory is EISDIR */
	px_try_open(o, c, "trunc dir", P(""), O_WRONLY | O_TRUNC, 0);
	return 0;
}

static int case_append(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "put abc", px_put(o, P("f"), "abc", 3));
	int fd = px_fd(c, "open append", o->po_open(o, P("f"), O_WRONLY | O_APPEND, 0));
	if (fd < 0)
		return 0;
	px_rc(c, "lseek 0", o->po_lseek(o, fd, 0, SEEK_SET));
	px_rc(c, "write def", o->po_write(o, fd, "def", 3));
	px_rc(c, "position after write", o->po_lseek(o, fd, 0, SEEK_CUR));
	/* another descriptor (same client) extends the file: the next append goes after it */
	int fd2 = px_fd(c, "open plain", o->po_open(o, P("f"), O_WRONLY, 0));
	if (fd2 >= 0) {
		px_rc(c, "pwrite at 6 by plain", o->po_pwrite(o, fd2, "0123456789", 10, 6));
		o->po_close(o, fd2);
	}
	px_rc(c, "write ghi", o->po_write(o, fd, "ghi", 3));
	px_rc(c, "position after write 2", o->po_lseek(o, fd, 0, SEEK_CUR));
	/* a truncate by path: the next append starts at the new end */
	px_rc(c, "truncate 4", o->po_truncate(o, P("f"), 4));
	px_rc(c, "write JK", o->po_write(o, fd, "JK", 2));
	px_rc(c, "close", o->po_close(o, fd));
	rec_content(o, c, "content", P("f"));
	/* O_APPEND|O_RDWR reads from its position, writes at the end */
	fd = px_fd(c, "open rdwr append", o->po_open(o, P("f"), O_RDWR | O_APPEND, 0));
	if (fd >= 0) {
		char b[8] = { 0 };
		px_rec_data(c, "read 2 at start", o->po_read(o, fd, b, 2), b);
		px_rc(c, "write !", o->po_write(o, fd, "!", 1));
		px_rc(c, "position", o->po_lseek(o, fd, 0, SEEK_CUR));
		o->po_close(o, fd);
	}
	rec_content(o, c, "content final", P("f"));
	/* O_CREAT|O_APPEND on a new file */
	fd = px_fd(c, "creat append", o->po_open(o, P("n"), O_CREAT | O_WRONLY | O_APPEND, 0644));
	if (fd >= 0) {
		px_rc(c, "write 1", o->po_write(o, fd, "one,", 4));
		px_rc(c, "write 2", o->po_write(o, fd, "two", 3));
		o->po_close(o, fd);
	}
	rec_content(o, c, "content new", P("n"));
	return 0;
}

/* ------------------------------------------------------------ O_DIRECTORY, access modes */

static int case_directory(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "touch f", px_touch(o, P("f")));
	px_try_open(o, c, "dir O_DIRECTORY", P("d"), O_RDONLY | O_DIRECTORY, 0);
	px_try_open(o, c, "file O_DIRECTORY", P("f"), O_RDONLY | O_DIRECTORY, 0);
	px_try_open(o, c, "missing O_DIRECTORY", P("m"), O_RDONLY | O_DIRECTORY, 0);
	px_try_open(o, c, "dir rdonly", P("d"), O_RDONLY, 0);
	px_try_open(o, c, "dir wronly", P("d"), O_WRONLY, 0);
	px_try_open(o, c, "dir rdwr", P("d"), O_RDWR, 0);
	px_try_open(o, c, "dir creat wronly", P("d"), O_CREAT | O_WRONLY, 0644);
	px_try_open(o, c, "dir creat rdonly", P("d"), O_CREAT | O_RDONLY, 0644);
	px_try_open(o, c, "root O_DIRECTORY", "/", O_RDONLY | O_DIRECTORY, 0);
	int fd = px_fd(c, "open dir", o->po_open(o, P("d"), O_RDONLY | O_DIRECTORY, 0));
	if (fd >= 0) {
		char b[16];
		px_rc(c, "read dir fd", o->po_read(o, fd, b, sizeof(b)));
		px_rc(c, "pread dir fd", o->po_pread(o, fd, b, sizeof(b), 0));
		px_rc(c, "write dir fd", o->po_write(o, fd, "x", 1));
		struct stat st;
		int rc = o->po_fstat(o, fd, &st);
		px_rec_stat(c, "fstat dir fd", rc, &st);
		px_rc(c, "fsync dir fd", o->po_fsync(o, fd));
		px_rc2(c, "ftruncate dir fd", o->po_ftruncate(o, fd, 0), -EBADF, -EINVAL);
		px_rc(c, "close dir fd", o->po_close(o, fd));
	}
	return 0;
}

static int case_access_mode(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "put", px_put(o, P("f"), "0123456789", 10));
	char b[16];
	int fd = px_fd(c, "open rdonly", o->po_open(o, P("f"), O_RDONLY, 0));
	if (fd >= 0) {
		px_rc(c, "write on rdonly", o->po_write(o, fd, "x", 1));
		px_rc(c, "pwrite on rdonly", o->po_pwrite(o, fd, "x", 1, 0));
		/* POSIX: EBADF or EINVAL ("not open for writing"); Linux says EINVAL */
		px_rc2(c, "ftruncate on rdonly", o->po_ftruncate(o, fd, 0), -EBADF, -EINVAL);
		px_rec_data(c, "read on rdonly", o->po_read(o, fd, b, 4), b);
		px_rc(c, "fsync on rdonly", o->po_fsync(o, fd));
		o->po_close(o, fd);
	}
	fd = px_fd(c, "open wronly", o->po_open(o, P("f"), O_WRONLY, 0));
	if (fd >= 0) {
		px_rc(c, "read on wronly", o->po_read(o, fd, b, 4));
		px_rc(c, "pread on wronly", o->po_pread(o, fd, b, 4, 0));
		px_rc(c, "write on wronly", o->po_write(o, fd, "AB", 2));
		px_rc(c, "ftruncate on wronly", o->po_ftruncate(o, fd, 8));
		o->po_close(o, fd);
	}
	fd = px_fd(c, "open rdwr", o->po_open(o, P("f"), O_RDWR, 0));
	if (fd >= 0) {
		px_rc(c, "pwrite on rdwr", o->po_pwrite(o, fd, "cd", 2, 2));
		px_rec_data(c, "pread on rdwr", o->po_pread(o, fd, b, sizeof(b), 0), b);
		o->po_close(o, fd);
	}
	/* nothing written through the read-only descriptor */
	rec_content(o, c, "content", P("f"));
	return 0;
}

/* ------------------------------------------------------------ lookup errors */

static int case_lookup_errors(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "touch f", px_touch(o, P("f")));
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_try_open(o, c, "missing", P("missing"), O_RDONLY, 0);
	px_try_open(o, c, "missing wronly", P("missing"), O_WRONLY, 0);
	px_try_open(o, c, "missing parent creat", P("nodir/x"), O_CREAT | O_WRONLY, 0644);
	px_try_open(o, c, "missing grandparent", P("nodir/sub/x"), O_RDONLY, 0);
	px_try_open(o, c, "file as dir", P("f/x"), O_RDONLY, 0);
	px_try_open(o, c, "file as dir creat", P("f/x"), O_CREAT | O_WRONLY, 0644);
	px_try_open(o, c, "file as dir deeper", P("f/x/y"), O_RDONLY, 0);
	px_try_open(o, c, "file as dir dot", P("f/."), O_RDONLY, 0);
	px_try_open(o, c, "file as dir dotdot", P("f/.."), O_RDONLY, 0);
	px_try_open(o, c, "empty path", "", O_RDONLY, 0);
	px_try_open(o, c, "empty path creat", "", O_CREAT | O_WRONLY, 0644);
	px_try_open(o, c, "dir then missing", P("d/missing"), O_RDONLY, 0);
	px_try_open(o, c, "creat in dir", P("d/new"), O_CREAT | O_WRONLY, 0644);
	return 0;
}

/* A name of \a len bytes of \a ch. */
static char *name_of(char *buf, size_t len, char ch)
{
	memset(buf, ch, len);
	buf[len] = 0;
	return buf;
}

static int case_name_too_long(const struct px_ops *o, struct px_ctx *c)
{
	char n255[256], n256[257], rel[600];
	name_of(n255, 255, 'a');
	name_of(n256, 256, 'b');
	px_try_open(o, c, "creat 255-byte name", P(n255), O_CREAT | O_WRONLY, 0644);
	rec_stat(o, c, "stat 255-byte name", P(n255));
	px_try_open(o, c, "creat 256-byte name", P(n256), O_CREAT | O_WRONLY, 0644);
	px_try_open(o, c, "open 256-byte name", P(n256), O_RDONLY, 0);
	rec_stat(o, c, "stat 256-byte name", P(n256));
	px_rc(c, "mkdir 256-byte name", o->po_mkdir(o, P(n256), 0755));
	px_rc(c, "unlink 256-byte name", o->po_unlink(o, P(n256)));
	px_rc(c, "rename to 256-byte name", o->po_rename(o, P(n255), P(n256)));
	/* a too-long component in the middle */
	snprintf(rel, sizeof(rel), "%s/x", n256);
	px_try_open(o, c, "256-byte dir component", P(rel), O_CREAT | O_WRONLY, 0644);
	px_rec_listing(o, c, "listing", c->pc_dir);
	px_rc(c, "mkdir over 255-byte file", o->po_mkdir(o, P(n255), 0755));
	px_rc(c, "unlink 255-byte name", o->po_unlink(o, P(n255)));
	px_rc(c, "mkdir 255-byte dir", o->po_mkdir(o, P(n255), 0755));
	snprintf(rel, sizeof(rel), "%s/%s", n255, n255);
	px_try_open(o, c, "creat 255/255", P(rel), O_CREAT | O_WRONLY, 0644);
	px_rec_listing(o, c, "listing 255", P(n255));
	return 0;
}

/*
 * Paths near PATH_MAX: Linux takes a path of up to 4095 bytes (4096 with its
 * NUL) and refuses 4096 and more with ENAMETOOLONG, whatever the components.
 * Needs the real path given to both backends: PX_ROOTED.
 */
static int case_path_too_long(const struct px_ops *o, struct px_ctx *c)
{
	char comp[201], *path = malloc(PX_PATH_MAX);
	if (!path)
		return 0;
	name_of(comp, 200, 'd');
	/* nest 200-byte directories while another still leaves room for a name */
	snprintf(path, PX_PATH_MAX, "%s", c->pc_dir);
	int depth = 0;
	while (strlen(path) + 201 + 2 <= 4095) {
		size_t l = strlen(path);
		snprintf(path + l, PX_PATH_MAX - l, "/%s", comp);
		int rc = o->po_mkdir(o, path, 0755);
		if (rc) {
			px_rc(c, "mkdir nested", rc);
			free(path);
			return 0;
		}
		depth++;
	}
	px_rec(c, "depth", "%d", depth);
	size_t base = strlen(path);
	/* a file name that makes the path exactly 4095 bytes: fine */
	size_t nlen = 4095 - base - 1;
	px_rec(c, "last name length", "%zu", nlen);
	path[base] = '/';
	name_of(path + base + 1, nlen, 'f');
	px_rec(c, "path length", "%zu", strlen(path));
	px_try_open(o, c, "creat at 4095 bytes", path, O_CREAT | O_WRONLY, 0644);
	struct stat st;
	int rc = o->po_stat(o, path, &st);
	px_rec_stat(c, "stat at 4095 bytes", rc, &st);
	/* the same file as a 4096-byte path (one doubled slash): too long */
	memmove(path + base + 1, path + base, nlen + 2);
	px_rec(c, "path length", "%zu", strlen(path));
	rc = o->po_stat(o, path, &st);
	px_rec_stat(c, "stat at 4096 bytes", rc, &st);
	px_try_open(o, c, "open at 4096 bytes", path, O_RDONLY, 0);
	/* far over */
	size_t l = strlen(path);
	while (l < 5000) {
		path[l++] = '/';
		path[l] = 0;
	}
	path[l++] = 'z';
	path[l] = 0;
	rc = o->po_stat(o, path, &st);
	px_rec_stat(c, "stat at 5001 bytes", rc, &st);
	px_rc(c, "mkdir at 5001 bytes", o->po_mkdir(o, path, 0755));
	free(path);
	return 0;
}

/* ------------------------------------------------------------ names */

/* Does directory \a dir list \a name exactly once? */
static int listed_times(const struct px_ops *o, const char *dir, const char *name)
{
	int dh = o->po_opendir(o, dir);
	if (dh < 0)
		return dh;
	struct px_dirent de;
	int n = 0, rc;
	while ((rc = o->po_readdir(o, dh, &de)) == 1)
		n += !strcmp(de.pd_name, name);
	o->po_closedir(o, dh);
	return rc < 0 ? rc : n;
}

static int case_name_bytes(const struct px_ops *o, struct px_ctx *c)
{
	/* every byte 0x01..0xff except '/': 254 bytes in one name */
	char name[256], name2[256];
	size_t k = 0;
	for (int b = 1; b <= 255; b++)
		if (b != '/')
			name[k++] = (char)b;
	name[k] = 0;
	px_try_open(o, c, "creat all-bytes name", P(name), O_CREAT | O_WRONLY, 0644);
	rec_stat(o, c, "stat all-bytes name", P(name));
	px_rc(c, "put all-bytes name", px_put(o, P(name), "payload", 7));
	rec_content(o, c, "content", P(name));
	px_rc(c, "listed once", listed_times(o, c->pc_dir, name));
	/* the reversed bytes as a second name, reached by rename */
	for (size_t i = 0; i < k; i++)
		name2[i] = name[k - 1 - i];
	name2[k] = 0;
	px_rc(c, "rename to reversed", o->po_rename(o, P(name), P(name2)));
	px_rc(c, "old listed", listed_times(o, c->pc_dir, name));
	px_rc(c, "new listed", listed_times(o, c->pc_dir, name2));
	px_rc(c, "mkdir all-bytes name", o->po_mkdir(o, P(name), 0700));
	rec_stat(o, c, "stat dir all-bytes", P(name));
	/* single odd bytes and names that look special */
	static const char *const odd[] = { "\x01", "\xff", " ", "\n", "...", ".a", "a.",
					   "-", "\\", "*", "\xc3\x28", "\xed\xa0\x80", "%s%n",
					   NULL };
	for (int i = 0; odd[i]; i++) {
		char label[64];
		snprintf(label, sizeof(label), "odd name %d", i);
		px_try_open(o, c, label, P(odd[i]), O_CREAT | O_EXCL | O_WRONLY, 0644);
		snprintf(label, sizeof(label), "odd name %d listed", i);
		px_rc(c, label, listed_times(o, c->pc_dir, odd[i]));
	}
	px_rec_listing(o, c, "listing", c->pc_dir);
	px_rc(c, "unlink reversed", o->po_unlink(o, P(name2)));
	px_rc(c, "rmdir all-bytes", o->po_rmdir(o, P(name)));
	return 0;
}

static int case_dot_names(const struct px_ops *o, struct px_ctx *c)
{
	/* "." and ".." can never be created as files */
	px_try_open(o, c, "creat .", P("."), O_CREAT | O_WRONLY, 0644);
	px_try_open(o, c, "creat ..", P(".."), O_CREAT | O_WRONLY, 0644);
	px_try_open(o, c, "creat excl .", P("."), O_CREAT | O_EXCL | O_RDONLY, 0644);
	px_try_open(o, c, "open . rdonly", P("."), O_RDONLY, 0);
	px_try_open(o, c, "open .. rdonly", P(".."), O_RDONLY, 0);
	px_rc(c, "mkdir sub", o->po_mkdir(o, P("sub"), 0755));
	px_rc(c, "touch via ..", px_touch(o, P("sub/../viadots")));
	rec_stat(o, c, "stat viadots", P("viadots"));
	rec_stat(o, c, "stat sub/./.", P("sub/./."));
	return 0;
}

int main(void)
{
	static const struct px_case cases[] = {
		PX_CASE(creat, 0),
		PX_CASE(excl, 0),
		PX_CASE(trunc, 0),
		PX_CASE(append, PX_STRIPED),
		PX_CASE(directory, 0),
		PX_CASE(access_mode, 0),
		PX_CASE(lookup_errors, 0),
		PX_CASE(name_too_long, 0),
		PX_CASE(path_too_long, PX_ROOTED),
		PX_CASE(name_bytes, 0),
		PX_CASE(dot_names, 0),
		PX_CASE_END,
	};
	return px_main("open", cases);
}
