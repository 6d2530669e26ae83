/*
 * tests/posix/test_px_multi.c - POSIX conformance with several clients: each
 * client is a separate process (px_clients_run) and, on Weir, a separate
 * mount of the cluster. O_EXCL and mkdir races (exactly one winner), data
 * coherence (a write that returned on A is read by B, also through a
 * descriptor B opened before it; truncates), namespace coherence (rename,
 * chmod, unlink on A seen by B's next call), a file unlinked by B while A
 * has it open (A keeps reading and writing; on Weir its objects are
 * destroyed after A's close), sizes seen while a writer keeps the file
 * open, and the basics of locks between clients (fcntl, OFD, flock).
 * The same scripts run on the local filesystem (processes of one machine)
 * and the logs are compared.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "px_run.h"

#define P(rel) px_p(c, (rel))

static void pattern(unsigned char *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)((i * 131 + seed * 7 + (i >> 9)) & 0xff);
}

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
	static unsigned char buf[256 * 1024];
	ssize_t n = px_get(o, path, buf, sizeof(buf));
	px_rec_data(c, label, n, buf);
}

/* ------------------------------------------------------------ races */

#define RACERS 8
#define ROUNDS 5

struct race {
	atomic_int ra_won[ROUNDS];
	atomic_int ra_eexist[ROUNDS];
	atomic_int ra_other[ROUNDS];
	atomic_int ra_dir_won;
	atomic_int ra_dir_eexist;
	atomic_int ra_dir_other;
};

static void racer(const struct px_ops *o, struct px_ctx *c, int idx)
{
	struct race *r = c->pc_shared;
	for (int round = 0; round < ROUNDS; round++) {
		px_barrier(c, round, RACERS);
		int fd = o->po_open(o, px_pf(c, "excl%d", round), O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd >= 0) {
			atomic_fetch_add(&r->ra_won[round], 1);
			char b = (char)('A' + idx);
			o->po_write(o, fd, &b, 1);
			o->po_close(o, fd);
		} else if (fd == -EEXIST) {
			atomic_fetch_add(&r->ra_eexist[round], 1);
		} else {
			atomic_fetch_add(&r->ra_other[round], 1);
			px_rc(c, "excl open", fd);
		}
	}
	px_barrier(c, ROUNDS, RACERS);
	int rc = o->po_mkdir(o, P("dir"), 0755);
	if (!rc)
		atomic_fetch_add(&r->ra_dir_won, 1);
	else if (rc == -EEXIST)
		atomic_fetch_add(&r->ra_dir_eexist, 1);
	else
		atomic_fetch_add(&r->ra_dir_other, 1);
}

static int case_excl_race(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "clients", px_clients_run(o, c, RACERS, racer, sizeof(struct race)));
	struct race *r = c->pc_shared;
	for (int round = 0; round < ROUNDS; round++) {
		char label[32];
		snprintf(label, sizeof(label), "round %d", round);
		px_rec(c, label, "won %d, EEXIST %d, other %d", atomic_load(&r->ra_won[round]),
		       atomic_load(&r->ra_eexist[round]), atomic_load(&r->ra_other[round]));
		struct stat st;
		int rc = o->po_stat(o, px_pf(c, "excl%d", round), &st);
		snprintf(label, sizeof(label), "round %d file", round);
		px_rec(c, label, "%s size %lld", rc ? px_errname(rc) : "ok",
		       rc ? -1LL : (long long)st.st_size);
	}
	px_rec(c, "mkdir race", "won %d, EEXIST %d, other %d", atomic_load(&r->ra_dir_won),
	       atomic_load(&r->ra_dir_eexist), atomic_load(&r->ra_dir_other));
	return 0;
}

/* ------------------------------------------------------------ data coherence */

#define DSIZE (100 * 1024)

static void data_writer(const struct px_ops *o, struct px_ctx *c)
{
	static unsigned char d[DSIZE];
	pattern(d, DSIZE, 1);
	int fd = px_fd(c, "creat", o->po_open(o, P("f"), O_CREAT | O_RDWR, 0644));
	if (fd < 0)
		_exit(1);
	px_rc(c, "pwrite 100K", o->po_pwrite(o, fd, d, DSIZE, 0));
	px_step_post(c, 1);
	px_step_wait(c, 2);
	memset(d, 'B', 5000);
	px_rc(c, "overwrite 5000 at 50000", o->po_pwrite(o, fd, d, 5000, 50000));
	px_step_post(c, 3);
	px_step_wait(c, 4);
	px_rc(c, "ftruncate 70000", o->po_ftruncate(o, fd, 70000));
	px_step_post(c, 5);
	px_step_wait(c, 6);
	px_rc(c, "pwrite past end", o->po_pwrite(o, fd, "tail", 4, 200000));
	px_step_post(c, 7);
	px_step_wait(c, 8);
	px_rc(c, "close", o->po_close(o, fd));
	px_step_post(c, 9);
}

static void data_reader(const struct px_ops *o, struct px_ctx *c)
{
	static unsigned char b[DSIZE + 4096];
	px_step_wait(c, 1);
	int fd = px_fd(c, "open rdonly", o->po_open(o, P("f"), O_RDONLY, 0));
	px_rec_data(c, "read after write", o->po_pread(o, fd, b, sizeof(b), 0), b);
	rec_stat(o, c, "stat after write", P("f"));
	px_step_post(c, 2);
	px_step_wait(c, 3);
	/* the descriptor opened before the overwrite sees it: no stale cache */
	px_rec_data(c, "read after overwrite", o->po_pread(o, fd, b, 8192, 48000), b);
	px_step_post(c, 4);
	px_step_wait(c, 5);
	px_rec_data(c, "read after truncate", o->po_pread(o, fd, b, sizeof(b), 0), b);
	struct stat st;
	int rc = o->po_fstat(o, fd, &st);
	px_rec_stat(c, "fstat after truncate", rc, &st);
	px_step_post(c, 6);
	px_step_wait(c, 7);
	rec_stat(o, c, "stat after write past end", P("f"));
	px_rc(c, "lseek end", o->po_lseek(o, fd, 0, SEEK_END));
	px_rec_data(c, "read tail", o->po_pread(o, fd, b, 16, 199996), b);
	px_step_post(c, 8);
	px_step_wait(c, 9);
	rec_stat(o, c, "stat after close", P("f"));
	o->po_close(o, fd);
}

static void data_client(const struct px_ops *o, struct px_ctx *c, int idx)
{
	if (idx == 0)
		data_writer(o, c);
	else
		data_reader(o, c);
}

static int case_data_coherence(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "clients", px_clients_run(o, c, 2, data_client, 0));
	rec_stat(o, c, "stat at the end", P("f"));
	return 0;
}

/* ------------------------------------------------------------ namespace coherence */

static void ns_client(const struct px_ops *o, struct px_ctx *c, int idx)
{
	if (idx == 0) {
		px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
		px_rc(c, "put d/a", px_put(o, P("d/a"), "from A", 6));
		px_step_post(c, 1);
		px_step_wait(c, 2);
		px_rc(c, "rename d/a d/b", o->po_rename(o, P("d/a"), P("d/b")));
		px_step_post(c, 3);
		px_step_wait(c, 4);
		px_rc(c, "chmod d/b 0600", o->po_chmod(o, P("d/b"), 0600));
		px_rc(c, "truncate d/b 2", o->po_truncate(o, P("d/b"), 2));
		px_step_post(c, 5);
		px_step_wait(c, 6);
		px_rc(c, "unlink d/b", o->po_unlink(o, P("d/b")));
		px_rc(c, "mkdir d/sub", o->po_mkdir(o, P("d/sub"), 0700));
		px_step_post(c, 7);
		px_step_wait(c, 8);
		rec_content(o, c, "B's file", P("d/sub/fromB"));
		px_rc(c, "rmdir d/sub (not empty)", o->po_rmdir(o, P("d/sub")));
		px_step_post(c, 9);
	} else {
		px_step_wait(c, 1);
		rec_stat(o, c, "stat d/a", P("d/a"));
		rec_content(o, c, "content d/a", P("d/a"));
		px_rec_listing(o, c, "listing d", P("d"));
		px_step_post(c, 2);
		px_step_wait(c, 3);
		rec_stat(o, c, "stat d/a after rename", P("d/a"));
		rec_stat(o, c, "stat d/b after rename", P("d/b"));
		px_rec_listing(o, c, "listing d after rename", P("d"));
		px_step_post(c, 4);
		px_step_wait(c, 5);
		rec_stat(o, c, "stat d/b after chmod, truncate", P("d/b"));
		rec_content(o, c, "content d/b", P("d/b"));
		px_step_post(c, 6);
		px_step_wait(c, 7);
		rec_stat(o, c, "stat d/b after unlink", P("d/b"));
		px_try_open(o, c, "open d/b after unlink", P("d/b"), O_RDONLY, 0);
		rec_stat(o, c, "stat d/sub", P("d/sub"));
		px_rc(c, "put d/sub/fromB", px_put(o, P("d/sub/fromB"), "B", 1));
		px_step_post(c, 8);
		px_step_wait(c, 9);
		px_rec_listing(o, c, "listing d at the end", P("d"));
	}
}

static int case_namespace_coherence(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_chmod != NULL, "weir_chmod"))
		return px_skip(c);
	px_rc(c, "clients", px_clients_run(o, c, 2, ns_client, 0));
	return 0;
}

/* ------------------------------------------------------------ open, unlinked elsewhere */

#define USIZE 20000

static void unlinked_client(const struct px_ops *o, struct px_ctx *c, int idx)
{
	static unsigned char d[USIZE + 64], b[USIZE + 64];
	if (idx == 0) {
		pattern(d, USIZE, 2);
		px_rc(c, "put f", px_put(o, P("f"), d, USIZE));
		int fd = px_fd(c, "open rdwr", o->po_open(o, P("f"), O_RDWR, 0));
		px_step_post(c, 1);
		px_step_wait(c, 2);
		ssize_t n = o->po_pread(o, fd, b, sizeof(b), 0);
		px_rc(c, "pread after unlink", n);
		px_bool(c, "data intact", n == USIZE && !memcmp(b, d, USIZE));
		px_rc(c, "pwrite more", o->po_pwrite(o, fd, "more", 4, USIZE));
		px_rec_data(c, "pread tail", o->po_pread(o, fd, b, 16, USIZE - 4), b);
		struct stat st;
		int rc = o->po_fstat(o, fd, &st);
		px_rec_stat(c, "fstat", rc, &st);
		px_rc(c, "ftruncate 10", o->po_ftruncate(o, fd, 10));
		px_rec_data(c, "pread after ftruncate", o->po_pread(o, fd, b, 64, 0), b);
		px_step_post(c, 3);
		px_step_wait(c, 4);
		/* B's new file of that name is another file */
		px_rec_data(c, "pread own after B's create", o->po_pread(o, fd, b, 64, 0), b);
		px_rc(c, "close", o->po_close(o, fd));
		px_step_post(c, 5);
	} else {
		px_step_wait(c, 1);
		px_rc(c, "unlink f", o->po_unlink(o, P("f")));
		rec_stat(o, c, "stat f", P("f"));
		px_step_post(c, 2);
		px_step_wait(c, 3);
		px_rc(c, "put new f", px_put(o, P("f"), "new", 3));
		px_step_post(c, 4);
		px_step_wait(c, 5);
		rec_content(o, c, "content f", P("f"));
		px_rec_listing(o, c, "listing", P(""));
	}
}

static int case_open_unlinked(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "clients", px_clients_run(o, c, 2, unlinked_client, 0));
	return 0;
}

/* Weir: the objects of a file unlinked while open stay until the last close, then go. */
static void destroy_client(const struct px_ops *o, struct px_ctx *c, int idx)
{
	static unsigned char d[1 << 20], b[1 << 20];
	if (idx == 0) {
		pattern(d, sizeof(d), 3);
		px_check(c, px_put(o, P("f"), d, sizeof(d)) == 0, "put f");
		int nobj = 0;
		int id = px_weir_objects_remember(o, P("f"), &nobj);
		px_check(c, id >= 0 && nobj == 4, "layout of f: id %d, %d objects (want 4)", id, nobj);
		int n = px_weir_objects_existing(o, id);
		px_check(c, n == nobj, "objects before unlink: %d of %d", n, nobj);
		int fd = o->po_open(o, P("f"), O_RDONLY, 0);
		px_check(c, fd >= 0, "open: %s", px_errname(fd));
		px_step_post(c, 1);
		px_step_wait(c, 2);
		usleep(1500 * 1000); /* time for a destroy queue to (wrongly) run */
		n = px_weir_objects_existing(o, id);
		px_check(c, n == nobj, "objects while open after unlink: %d of %d", n, nobj);
		ssize_t r = o->po_pread(o, fd, b, sizeof(b), 0);
		px_check(c, r == (ssize_t)sizeof(b) && !memcmp(b, d, sizeof(b)),
			 "read after unlink: %zd", r);
		px_check(c, o->po_close(o, fd) == 0, "close");
		n = px_weir_objects_gone(o, id, 30000);
		px_check(c, n == 0, "objects 30 s after the last close: %d left", n);
	} else {
		px_step_wait(c, 1);
		int rc = o->po_unlink(o, P("f"));
		px_check(c, rc == 0, "unlink: %s", px_errname(rc));
		px_step_post(c, 2);
	}
}

static int case_unlinked_objects_destroyed(const struct px_ops *o, struct px_ctx *c)
{
	int rc = px_clients_run(o, c, 2, destroy_client, 0);
	px_check(c, rc == 0, "clients: %s", px_errname(rc));
	return 0;
}

/*
 * Weir: objects follow the inode, not the name: a file with a second hard
 * link keeps its objects when one name goes; a file replaced by rename
 * loses them.
 */
static int case_objects_follow_links(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_link != NULL, "weir_link"))
		return px_skip(c);
	static unsigned char d[256 * 1024];
	pattern(d, sizeof(d), 4);
	px_check(c, px_put(o, P("a"), d, sizeof(d)) == 0, "put a");
	int nobj = 0;
	int id = px_weir_objects_remember(o, P("a"), &nobj);
	px_check(c, id >= 0 && nobj == 4, "layout of a: %d objects", nobj);
	int rc = o->po_link(o, P("a"), P("b"));
	px_check(c, rc == 0, "link a b: %s", px_errname(rc));
	rc = o->po_unlink(o, P("a"));
	px_check(c, rc == 0, "unlink a: %s", px_errname(rc));
	usleep(1500 * 1000);
	int n = px_weir_objects_existing(o, id);
	px_check(c, n == nobj, "objects with one name left: %d of %d", n, nobj);
	static unsigned char r[256 * 1024];
	ssize_t got = px_get(o, P("b"), r, sizeof(r));
	px_check(c, got == (ssize_t)sizeof(r) && !memcmp(r, d, sizeof(r)), "read b: %zd", got);
	/* replaced by rename: the old inode's objects go */
	px_check(c, px_put(o, P("c"), "new", 3) == 0, "put c");
	rc = o->po_rename(o, P("c"), P("b"));
	px_check(c, rc == 0, "rename c b: %s", px_errname(rc));
	n = px_weir_objects_gone(o, id, 30000);
	px_check(c, n == 0, "objects 30 s after the last name went: %d left", n);
	return 0;
}

/* ------------------------------------------------------------ sizes while open */

static void size_client(const struct px_ops *o, struct px_ctx *c, int idx)
{
	if (idx == 0) {
		int fd = px_fd(c, "creat", o->po_open(o, P("f"), O_CREAT | O_WRONLY, 0644));
		static const int64_t sizes[] = { 1, 65536, 65537, 300000, 1 << 20 };
		for (int i = 0; i < 5; i++) {
			px_rc(c, "pwrite last byte", o->po_pwrite(o, fd, "s", 1, sizes[i] - 1));
			px_step_post(c, 2 * i + 1);
			px_step_wait(c, 2 * i + 2);
		}
		px_rc(c, "ftruncate 1000", o->po_ftruncate(o, fd, 1000));
		px_step_post(c, 11);
		px_step_wait(c, 12);
		px_rc(c, "close", o->po_close(o, fd));
	} else {
		for (int i = 0; i < 5; i++) {
			px_step_wait(c, 2 * i + 1);
			rec_stat(o, c, "stat while writer open", P("f"));
			int fd = o->po_open(o, P("f"), O_RDONLY, 0);
			px_rc(c, "lseek end", fd < 0 ? fd : o->po_lseek(o, fd, 0, SEEK_END));
			if (fd >= 0)
				o->po_close(o, fd);
			px_step_post(c, 2 * i + 2);
		}
		px_step_wait(c, 11);
		rec_stat(o, c, "stat after shrink", P("f"));
		px_step_post(c, 12);
	}
}

static int case_size_while_open(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "clients", px_clients_run(o, c, 2, size_client, 0));
	rec_stat(o, c, "stat at the end", P("f"));
	return 0;
}

/* ------------------------------------------------------------ O_APPEND from several clients */

#define APPENDERS 4
#define RECORDS 100
#define RECLEN 100

static void appender(const struct px_ops *o, struct px_ctx *c, int idx)
{
	char rec[RECLEN];
	int fd = px_fd(c, "open append", o->po_open(o, P("log"), O_WRONLY | O_APPEND, 0));
	px_barrier(c, 0, APPENDERS);
	int bad = 0;
	for (int i = 0; i < RECORDS && fd >= 0; i++) {
		memset(rec, 'a' + idx, sizeof(rec));
		snprintf(rec, sizeof(rec), "%d:%03d:", idx, i);
		rec[RECLEN - 1] = '\n';
		bad += o->po_write(o, fd, rec, sizeof(rec)) != RECLEN;
	}
	px_rec(c, "short or failed writes", "%d", bad);
	if (fd >= 0)
		px_rc(c, "close", o->po_close(o, fd));
}

/* Every write with O_APPEND lands whole at the end of the file: none overwrites another. */
static int case_append_clients(const struct px_ops *o, struct px_ctx *c)
{
	px_rc(c, "touch log", px_touch(o, P("log")));
	px_rc(c, "clients", px_clients_run(o, c, APPENDERS, appender, 0));
	const size_t total = APPENDERS * RECORDS * RECLEN;
	char *b = malloc(total + RECLEN);
	if (!b)
		return 0;
	ssize_t n = px_get(o, P("log"), b, total + RECLEN);
	px_rc(c, "size", n);
	int whole = 0, per[APPENDERS] = { 0 };
	for (ssize_t off = 0; off + RECLEN <= n; off += RECLEN) {
		int who, seq;
		char *r = b + off;
		if (sscanf(r, "%d:%d:", &who, &seq) != 2 || who < 0 || who >= APPENDERS ||
		    r[RECLEN - 1] != '\n' || r[RECLEN - 2] != 'a' + who)
			continue;
		whole++;
		per[who]++;
	}
	px_rec(c, "whole records", "%d", whole);
	px_rec(c, "per client", "%d %d %d %d", per[0], per[1], per[2], per[3]);
	free(b);
	return 0;
}

/* ------------------------------------------------------------ locks */

static struct flock lk(short type, off_t start, off_t len)
{
	struct flock fl;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = start;
	fl.l_len = len;
	return fl;
}

static void rec_getlk(const struct px_ops *o, struct px_ctx *c, const char *label, int fd,
		      enum px_lock_kind kind, short type, off_t start, off_t len)
{
	struct flock fl = lk(type, start, len);
	int rc = o->po_lock(o, fd, kind, F_GETLK, &fl);
	if (rc)
		px_rc(c, label, rc);
	else if (fl.l_type == F_UNLCK)
		px_rec(c, label, "unlocked");
	else
		px_rec(c, label, "%s %lld+%lld", fl.l_type == F_WRLCK ? "write" : "read",
		       (long long)fl.l_start, (long long)fl.l_len);
}

static int setlk(const struct px_ops *o, int fd, enum px_lock_kind kind, int cmd, short type,
		 off_t start, off_t len)
{
	struct flock fl = lk(type, start, len);
	return o->po_lock(o, fd, kind, cmd, &fl);
}

struct lock_shared {
	atomic_int ls_released; /* set by A just before it unlocks */
};

static void lock_client(const struct px_ops *o, struct px_ctx *c, int idx)
{
	struct lock_shared *sh = c->pc_shared;
	int fd = px_fd(c, "open", o->po_open(o, P("f"), O_RDWR, 0));
	if (idx == 0) {
		px_rc(c, "posix write 0+100", setlk(o, fd, PX_LK_POSIX, F_SETLK, F_WRLCK, 0, 100));
		px_rc(c, "ofd read 200+50", setlk(o, fd, PX_LK_OFD, F_SETLK, F_RDLCK, 200, 50));
		px_rc(c, "flock ex", setlk(o, fd, PX_LK_FLOCK, F_SETLK, F_WRLCK, 0, 0));
		px_step_post(c, 1);
		px_step_wait(c, 2);
		usleep(300 * 1000);
		atomic_store(&sh->ls_released, 1);
		px_rc(c, "posix unlock", setlk(o, fd, PX_LK_POSIX, F_SETLK, F_UNLCK, 0, 100));
		px_rc(c, "flock un", setlk(o, fd, PX_LK_FLOCK, F_SETLK, F_UNLCK, 0, 0));
		px_step_wait(c, 3);
		px_rc(c, "close", o->po_close(o, fd));
		px_step_post(c, 4);
	} else {
		px_step_wait(c, 1);
		px_rc(c, "posix write 50+10", setlk(o, fd, PX_LK_POSIX, F_SETLK, F_WRLCK, 50, 10));
		px_rc(c, "posix read 50+10", setlk(o, fd, PX_LK_POSIX, F_SETLK, F_RDLCK, 50, 10));
		px_rc(c, "posix write 100+100", setlk(o, fd, PX_LK_POSIX, F_SETLK, F_WRLCK, 100, 100));
		rec_getlk(o, c, "getlk write 0+150", fd, PX_LK_POSIX, F_WRLCK, 0, 150);
		rec_getlk(o, c, "getlk read 210+1", fd, PX_LK_POSIX, F_RDLCK, 210, 1);
		rec_getlk(o, c, "getlk write 210+1", fd, PX_LK_POSIX, F_WRLCK, 210, 1);
		px_rc(c, "ofd write 220+1", setlk(o, fd, PX_LK_OFD, F_SETLK, F_WRLCK, 220, 1));
		px_rc(c, "ofd read 220+1", setlk(o, fd, PX_LK_OFD, F_SETLK, F_RDLCK, 220, 1));
		px_rc(c, "flock sh nb", setlk(o, fd, PX_LK_FLOCK, F_SETLK, F_RDLCK, 0, 0));
		px_step_post(c, 2);
		/* blocks until A unlocks */
		px_rc(c, "posix write 0+10 wait", setlk(o, fd, PX_LK_POSIX, F_SETLKW, F_WRLCK, 0, 10));
		px_bool(c, "granted after A's unlock", atomic_load(&sh->ls_released) == 1);
		px_rc(c, "flock ex wait", setlk(o, fd, PX_LK_FLOCK, F_SETLKW, F_WRLCK, 0, 0));
		px_step_post(c, 3);
		px_step_wait(c, 4);
		/* A closed: its OFD lock is gone */
		rec_getlk(o, c, "ofd getlk write 200+50", fd, PX_LK_OFD, F_WRLCK, 200, 50);
		px_rc(c, "close", o->po_close(o, fd));
	}
}

static int case_locks_between_clients(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_lock != NULL, "weir_fcntl_lock and weir_flock"))
		return px_skip(c);
	px_rc(c, "put f", px_put(o, P("f"), "0123456789", 10));
	px_rc(c, "clients", px_clients_run(o, c, 2, lock_client, sizeof(struct lock_shared)));
	return 0;
}

/* One process: its POSIX locks never conflict with each other, OFD locks of two descriptors do. */
static int case_locks_one_process(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_lock != NULL, "weir_fcntl_lock and weir_flock"))
		return px_skip(c);
	px_rc(c, "put f", px_put(o, P("f"), "0123456789", 10));
	int a = px_fd(c, "open a", o->po_open(o, P("f"), O_RDWR, 0));
	int b = px_fd(c, "open b", o->po_open(o, P("f"), O_RDWR, 0));
	int r = px_fd(c, "open r (rdonly)", o->po_open(o, P("f"), O_RDONLY, 0));
	px_rc(c, "posix write a", setlk(o, a, PX_LK_POSIX, F_SETLK, F_WRLCK, 0, 0));
	px_rc(c, "posix write b (same process)", setlk(o, b, PX_LK_POSIX, F_SETLK, F_WRLCK, 0, 5));
	px_rc(c, "ofd write a 100+1", setlk(o, a, PX_LK_OFD, F_SETLK, F_WRLCK, 100, 1));
	px_rc(c, "ofd write b 100+1", setlk(o, b, PX_LK_OFD, F_SETLK, F_WRLCK, 100, 1));
	px_rc(c, "flock ex a", setlk(o, a, PX_LK_FLOCK, F_SETLK, F_WRLCK, 0, 0));
	px_rc(c, "flock ex b", setlk(o, b, PX_LK_FLOCK, F_SETLK, F_WRLCK, 0, 0));
	px_rc(c, "posix write on rdonly", setlk(o, r, PX_LK_POSIX, F_SETLK, F_WRLCK, 0, 1));
	px_rc(c, "posix bad type", setlk(o, a, PX_LK_POSIX, F_SETLK, 99, 0, 1));
	px_rc(c, "posix negative start", setlk(o, a, PX_LK_POSIX, F_SETLK, F_RDLCK, -5, 1));
	/* closing any descriptor drops the process's POSIX locks */
	px_rc(c, "close r", o->po_close(o, r));
	rec_getlk(o, c, "ofd getlk via b after close r", b, PX_LK_OFD, F_WRLCK, 0, 10);
	px_rc(c, "close a", o->po_close(o, a));
	px_rc(c, "flock ex b after close a", setlk(o, b, PX_LK_FLOCK, F_SETLK, F_WRLCK, 0, 0));
	px_rc(c, "ofd write b 100+1 after close a", setlk(o, b, PX_LK_OFD, F_SETLK, F_WRLCK, 100, 1));
	px_rc(c, "close b", o->po_close(o, b));
	return 0;
}

int main(void)
{
	static const struct px_case cases[] = {
		PX_CASE(excl_race, 0),
		PX_CASE(data_coherence, PX_STRIPED),
		PX_CASE(namespace_coherence, 0),
		PX_CASE(open_unlinked, PX_STRIPED),
		PX_CASE(unlinked_objects_destroyed, PX_STRIPED | PX_DIRECT | PX_WEIR),
		PX_CASE(objects_follow_links, PX_STRIPED | PX_DIRECT | PX_WEIR),
		PX_CASE(size_while_open, PX_STRIPED),
		PX_CASE(append_clients, PX_STRIPED),
		PX_CASE(locks_between_clients, 0),
		PX_CASE(locks_one_process, 0),
		PX_CASE_END,
	};
	return px_main("multi", cases);
}
