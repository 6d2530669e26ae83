/*
 * tests/posix/test_px_attr.c - POSIX conformance: attributes and
 * permissions. chmod, chown (and the set-id bits it clears), utimensat and
 * the times every change must update, access(2), permission checks on
 * open/create/unlink/rename/lookup for a non-root user (uid 1000, through a
 * second mount with those credentials on Weir, setresuid on Linux), the
 * sticky bit, and extended attributes (create/replace/ENODATA/list/ERANGE,
 * namespaces). Cases skip until libweir has the calls they need.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "px_run.h"

#define P(rel) px_p(c, (rel))
#define USER 1000
#define USER2 2000

static void rec_stat(const struct px_ops *o, struct px_ctx *c, const char *label,
		     const char *path)
{
	struct stat st;
	int rc = o->po_stat(o, path, &st);
	px_rec_stat(c, label, rc, &st);
}

static int need_cred(const struct px_ops *o, struct px_ctx *c)
{
	return px_need(c, o->po_set_cred != NULL, "credential switching");
}

/* ------------------------------------------------------------ chmod, chown */

static int case_chmod(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_chmod != NULL, "weir_chmod"))
		return px_skip(c);
	px_rc(c, "touch f", px_touch(o, P("f")));
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	static const mode_t modes[] = { 0600, 0, 0777, 04755, 02755, 01644, 07777, 0421 };
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		char label[32];
		snprintf(label, sizeof(label), "chmod f %04o", (unsigned)modes[i]);
		px_rc(c, label, o->po_chmod(o, P("f"), modes[i]));
		snprintf(label, sizeof(label), "stat f %04o", (unsigned)modes[i]);
		rec_stat(o, c, label, P("f"));
	}
	px_rc(c, "chmod f with type bits", o->po_chmod(o, P("f"), S_IFDIR | 0710));
	rec_stat(o, c, "stat f", P("f"));
	px_rc(c, "chmod d 01777", o->po_chmod(o, P("d"), 01777));
	rec_stat(o, c, "stat d", P("d"));
	px_rc(c, "chmod d 02750", o->po_chmod(o, P("d"), 02750));
	rec_stat(o, c, "stat d 2", P("d"));
	px_rc(c, "chmod missing", o->po_chmod(o, P("missing"), 0644));
	px_rc(c, "chmod under file", o->po_chmod(o, P("f/x"), 0644));
	/* an open descriptor keeps the access it was opened with */
	px_rc(c, "chmod f 0644", o->po_chmod(o, P("f"), 0644));
	int fd = px_fd(c, "open f rdwr", o->po_open(o, P("f"), O_RDWR, 0));
	if (fd >= 0) {
		px_rc(c, "chmod f 0", o->po_chmod(o, P("f"), 0));
		px_rc(c, "write after chmod 0", o->po_write(o, fd, "x", 1));
		o->po_close(o, fd);
	}
	return 0;
}

static int case_chown(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_chown && o->po_chmod, "weir_chown and weir_chmod"))
		return px_skip(c);
	px_rc(c, "touch f", px_touch(o, P("f")));
	px_rc(c, "chown 1000:1000", o->po_chown(o, P("f"), USER, USER));
	rec_stat(o, c, "stat 1", P("f"));
	px_rc(c, "chown -1:2000", o->po_chown(o, P("f"), (uid_t)-1, USER2));
	rec_stat(o, c, "stat 2", P("f"));
	px_rc(c, "chown 3000:-1", o->po_chown(o, P("f"), 3000, (gid_t)-1));
	rec_stat(o, c, "stat 3", P("f"));
	px_rc(c, "chown -1:-1", o->po_chown(o, P("f"), (uid_t)-1, (gid_t)-1));
	rec_stat(o, c, "stat 4", P("f"));
	/* set-id bits: cleared on a non-directory by chown, even root's, even -1:-1 */
	px_rc(c, "chmod 06755", o->po_chmod(o, P("f"), 06755));
	px_rc(c, "chown 0:0", o->po_chown(o, P("f"), 0, 0));
	rec_stat(o, c, "stat after chown of 06755", P("f"));
	px_rc(c, "chmod 06755 again", o->po_chmod(o, P("f"), 06755));
	px_rc(c, "chown -1:-1 again", o->po_chown(o, P("f"), (uid_t)-1, (gid_t)-1));
	rec_stat(o, c, "stat after chown -1:-1", P("f"));
	/* S_ISGID without group-exec is not a set-gid bit (mandatory locking mark): kept */
	px_rc(c, "chmod 02745", o->po_chmod(o, P("f"), 02745));
	px_rc(c, "chown 5:5", o->po_chown(o, P("f"), 5, 5));
	rec_stat(o, c, "stat after chown of 02745", P("f"));
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "chmod d 06755", o->po_chmod(o, P("d"), 06755));
	px_rc(c, "chown d 7:7", o->po_chown(o, P("d"), 7, 7));
	rec_stat(o, c, "stat d after chown", P("d"));
	px_rc(c, "chown missing", o->po_chown(o, P("missing"), 1, 1));
	/* a file made in a set-gid directory takes the directory's group */
	px_rc(c, "chmod d 02777", o->po_chmod(o, P("d"), 02777));
	px_rc(c, "touch d/inherit", px_touch(o, P("d/inherit")));
	rec_stat(o, c, "stat d/inherit", P("d/inherit"));
	px_rc(c, "mkdir d/sub", o->po_mkdir(o, P("d/sub"), 0755));
	rec_stat(o, c, "stat d/sub", P("d/sub"));
	return 0;
}

/* What a non-root owner may and may not change. */
static int case_chown_chmod_as_user(const struct px_ops *o, struct px_ctx *c)
{
	if (need_cred(o, c) || px_need(c, o->po_chown && o->po_chmod, "weir_chown and weir_chmod"))
		return px_skip(c);
	px_rc(c, "touch f", px_touch(o, P("f")));
	px_rc(c, "chown f 1000:1000", o->po_chown(o, P("f"), USER, USER));
	px_rc(c, "touch g (root's)", px_touch(o, P("g")));
	px_rc(c, "as user", o->po_set_cred(o, USER, USER));
	px_rc(c, "chmod own 0600", o->po_chmod(o, P("f"), 0600));
	px_rc(c, "chmod root's", o->po_chmod(o, P("g"), 0777));
	px_rc(c, "chown own to another uid", o->po_chown(o, P("f"), USER2, (gid_t)-1));
	px_rc(c, "chgrp own to a foreign group", o->po_chown(o, P("f"), (uid_t)-1, USER2));
	px_rc(c, "chgrp own to own group", o->po_chown(o, P("f"), (uid_t)-1, USER));
	px_rc(c, "chown own to self", o->po_chown(o, P("f"), USER, (gid_t)-1));
	px_rc(c, "chown root's", o->po_chown(o, P("g"), USER, USER));
	px_rc(c, "chmod own 02755", o->po_chmod(o, P("f"), 02755));
	px_rc(c, "back to root", o->po_set_cred(o, 0, 0));
	rec_stat(o, c, "stat f", P("f"));
	/* the file's group is not one of the user's: S_ISGID dropped by its chmod */
	px_rc(c, "chgrp f 2000", o->po_chown(o, P("f"), (uid_t)-1, USER2));
	px_rc(c, "as user 2", o->po_set_cred(o, USER, USER));
	px_rc(c, "chmod own 02755 foreign group", o->po_chmod(o, P("f"), 02755));
	px_rc(c, "back to root 2", o->po_set_cred(o, 0, 0));
	rec_stat(o, c, "stat f 2", P("f"));
	rec_stat(o, c, "stat g", P("g"));
	return 0;
}

/* ------------------------------------------------------------ times */

static void rec_times(const struct px_ops *o, struct px_ctx *c, const char *label,
		      const char *path)
{
	struct stat st;
	int rc = o->po_stat(o, path, &st);
	if (rc)
		px_rc(c, label, rc);
	else
		px_rec(c, label, "atime=%lld.%09ld mtime=%lld.%09ld", (long long)st.st_atim.tv_sec,
		       st.st_atim.tv_nsec, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

static int case_utimens(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_utimens != NULL, "weir_utimens"))
		return px_skip(c);
	px_rc(c, "touch f", px_touch(o, P("f")));
	struct timespec ts[2] = { { 1000000000, 123456789 }, { 1500000000, 987654321 } };
	px_rc(c, "utimens explicit", o->po_utimens(o, P("f"), ts));
	rec_times(o, c, "times", P("f"));
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_sec = 2000000000;
	ts[1].tv_nsec = 1;
	px_rc(c, "utimens omit atime", o->po_utimens(o, P("f"), ts));
	rec_times(o, c, "times 2", P("f"));
	ts[0] = (struct timespec){ 5, 0 };
	ts[1].tv_nsec = UTIME_OMIT;
	px_rc(c, "utimens omit mtime", o->po_utimens(o, P("f"), ts));
	rec_times(o, c, "times 3", P("f"));
	ts[0] = (struct timespec){ 0, 0 };
	ts[1] = (struct timespec){ 0, 0 };
	px_rc(c, "utimens epoch", o->po_utimens(o, P("f"), ts));
	rec_times(o, c, "times 4", P("f"));
	ts[0].tv_nsec = UTIME_NOW;
	ts[1].tv_nsec = UTIME_NOW;
	time_t before = time(NULL);
	px_rc(c, "utimens now", o->po_utimens(o, P("f"), ts));
	struct stat st;
	int rc = o->po_stat(o, P("f"), &st);
	px_bool(c, "now within 60 s", !rc && st.st_mtim.tv_sec >= before - 60 &&
					   st.st_mtim.tv_sec <= before + 60 &&
					   st.st_atim.tv_sec >= before - 60);
	ts[0] = (struct timespec){ 1, 1000000000 };
	ts[1] = (struct timespec){ 1, 0 };
	px_rc(c, "utimens nsec out of range", o->po_utimens(o, P("f"), ts));
	ts[0] = (struct timespec){ 1, 0 };
	px_rc(c, "utimens missing", o->po_utimens(o, P("missing"), ts));
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	ts[0] = (struct timespec){ 1234567890, 5 };
	ts[1] = (struct timespec){ 1234567891, 6 };
	px_rc(c, "utimens dir", o->po_utimens(o, P("d"), ts));
	rec_times(o, c, "dir times", P("d"));
	return 0;
}

/* The timestamps POSIX says each change marks for update. */
static int case_times_updated(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_utimens && o->po_chmod, "weir_utimens and weir_chmod"))
		return px_skip(c);
	const struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	struct stat st, st2;
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "put d/f", px_put(o, P("d/f"), "x", 1));
	/* a write and a truncate mark mtime and ctime */
	px_rc(c, "age f", o->po_utimens(o, P("d/f"), old));
	px_rc(c, "put again", px_put(o, P("d/f"), "yy", 2));
	o->po_stat(o, P("d/f"), &st);
	px_bool(c, "write: mtime updated", st.st_mtim.tv_sec > 1000000000);
	px_rc(c, "age f 2", o->po_utimens(o, P("d/f"), old));
	px_rc(c, "truncate", o->po_truncate(o, P("d/f"), 100));
	o->po_stat(o, P("d/f"), &st);
	px_bool(c, "truncate: mtime updated", st.st_mtim.tv_sec > 1000000000);
	/* chmod marks ctime, not mtime */
	px_rc(c, "age f 3", o->po_utimens(o, P("d/f"), old));
	o->po_stat(o, P("d/f"), &st);
	usleep(20000);
	px_rc(c, "chmod", o->po_chmod(o, P("d/f"), 0600));
	o->po_stat(o, P("d/f"), &st2);
	px_bool(c, "chmod: ctime updated", st2.st_ctim.tv_sec > st.st_ctim.tv_sec ||
						   (st2.st_ctim.tv_sec == st.st_ctim.tv_sec &&
						    st2.st_ctim.tv_nsec > st.st_ctim.tv_nsec));
	px_bool(c, "chmod: mtime kept", st2.st_mtim.tv_sec == 1000000000);
	/* entries made or removed mark the directory's mtime */
	px_rc(c, "age d", o->po_utimens(o, P("d"), old));
	px_rc(c, "touch d/g", px_touch(o, P("d/g")));
	o->po_stat(o, P("d"), &st);
	px_bool(c, "create: dir mtime updated", st.st_mtim.tv_sec > 1000000000);
	px_rc(c, "age d 2", o->po_utimens(o, P("d"), old));
	px_rc(c, "unlink d/g", o->po_unlink(o, P("d/g")));
	o->po_stat(o, P("d"), &st);
	px_bool(c, "unlink: dir mtime updated", st.st_mtim.tv_sec > 1000000000);
	px_rc(c, "age d 3", o->po_utimens(o, P("d"), old));
	px_rc(c, "rename d/f d/h", o->po_rename(o, P("d/f"), P("d/h")));
	o->po_stat(o, P("d"), &st);
	px_bool(c, "rename: dir mtime updated", st.st_mtim.tv_sec > 1000000000);
	px_rc(c, "age d 4", o->po_utimens(o, P("d"), old));
	px_rc(c, "mkdir d/s", o->po_mkdir(o, P("d/s"), 0755));
	o->po_stat(o, P("d"), &st);
	px_bool(c, "mkdir: dir mtime updated", st.st_mtim.tv_sec > 1000000000);
	/* a new file's times are all "now" */
	time_t now = time(NULL);
	px_rc(c, "touch new", px_touch(o, P("new")));
	o->po_stat(o, P("new"), &st);
	px_bool(c, "new file: times now", st.st_mtim.tv_sec >= now - 60 &&
						  st.st_ctim.tv_sec >= now - 60 &&
						  st.st_atim.tv_sec >= now - 60);
	return 0;
}

/* ------------------------------------------------------------ access, permissions */

static int case_access_root(const struct px_ops *o, struct px_ctx *c)
{
	if (px_need(c, o->po_access && o->po_chmod, "weir_access and weir_chmod"))
		return px_skip(c);
	px_rc(c, "touch f", px_touch(o, P("f")));
	px_rc(c, "F_OK", o->po_access(o, P("f"), F_OK));
	px_rc(c, "F_OK missing", o->po_access(o, P("missing"), F_OK));
	px_rc(c, "F_OK under file", o->po_access(o, P("f/x"), F_OK));
	px_rc(c, "chmod 0", o->po_chmod(o, P("f"), 0));
	px_rc(c, "R_OK|W_OK on 0000 (root)", o->po_access(o, P("f"), R_OK | W_OK));
	px_rc(c, "X_OK on 0000 (root)", o->po_access(o, P("f"), X_OK));
	px_rc(c, "chmod 0644", o->po_chmod(o, P("f"), 0644));
	px_rc(c, "X_OK on 0644 (root)", o->po_access(o, P("f"), X_OK));
	px_rc(c, "chmod 0001", o->po_chmod(o, P("f"), 0001));
	px_rc(c, "X_OK on 0001 (root)", o->po_access(o, P("f"), X_OK));
	px_rc(c, "mkdir d 0", o->po_mkdir(o, P("d"), 0));
	px_rc(c, "X_OK on dir 0000 (root)", o->po_access(o, P("d"), X_OK));
	px_rc(c, "bad mode", o->po_access(o, P("f"), 0100));
	return 0;
}

static int case_access_user(const struct px_ops *o, struct px_ctx *c)
{
	if (need_cred(o, c) || px_need(c, o->po_access && o->po_chmod, "weir_access and weir_chmod"))
		return px_skip(c);
	static const struct {
		const char *name;
		mode_t mode;
	} files[] = { { "m600", 0600 }, { "m644", 0644 }, { "m755", 0755 }, { "m000", 0 },
		      { "m604", 0604 }, { "m060", 060 },  { "m002", 02 } };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		px_touch(o, P(files[i].name));
		o->po_chmod(o, P(files[i].name), files[i].mode);
	}
	px_rc(c, "mkdir priv 0700", o->po_mkdir(o, P("priv"), 0700));
	px_rc(c, "touch priv/f", px_touch(o, P("priv/f")));
	px_rc(c, "mkdir xonly 0711", o->po_mkdir(o, P("xonly"), 0711));
	px_rc(c, "touch xonly/f", px_touch(o, P("xonly/f")));
	px_rc(c, "as user", o->po_set_cred(o, USER, USER));
	static const int modes[] = { F_OK, R_OK, W_OK, X_OK, R_OK | W_OK };
	static const char *const mname[] = { "F", "R", "W", "X", "RW" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		for (size_t m = 0; m < 5; m++) {
			char label[48];
			snprintf(label, sizeof(label), "%s %s_OK", files[i].name, mname[m]);
			px_rc(c, label, o->po_access(o, P(files[i].name), modes[m]));
		}
	}
	px_rc(c, "priv/f F_OK", o->po_access(o, P("priv/f"), F_OK));
	px_rc(c, "priv R_OK", o->po_access(o, P("priv"), R_OK));
	px_rc(c, "xonly/f R_OK", o->po_access(o, P("xonly/f"), R_OK));
	px_rc(c, "xonly R_OK", o->po_access(o, P("xonly"), R_OK));
	px_rc(c, "xonly X_OK", o->po_access(o, P("xonly"), X_OK));
	px_rc(c, "back to root", o->po_set_cred(o, 0, 0));
	return 0;
}

/* Mode bits enforced on every call for a non-root user. */
static int case_permissions_enforced(const struct px_ops *o, struct px_ctx *c)
{
	if (need_cred(o, c) || px_need(c, o->po_chmod && o->po_chown, "weir_chmod and weir_chown"))
		return px_skip(c);
	px_rc(c, "mkdir pub 0777", o->po_mkdir(o, P("pub"), 0777));
	px_rc(c, "mkdir priv 0700", o->po_mkdir(o, P("priv"), 0700));
	px_rc(c, "mkdir ro 0755", o->po_mkdir(o, P("ro"), 0755));
	px_rc(c, "mkdir xonly 0711", o->po_mkdir(o, P("xonly"), 0711));
	px_rc(c, "mkdir sticky 01777", o->po_mkdir(o, P("sticky"), 01777));
	px_rc(c, "put priv/f", px_put(o, P("priv/f"), "p", 1));
	px_rc(c, "put ro/f", px_put(o, P("ro/f"), "r", 1));
	px_rc(c, "touch xonly/f", px_touch(o, P("xonly/f")));
	px_rc(c, "put secret", px_put(o, P("secret"), "s", 1));
	px_rc(c, "chmod secret 0600", o->po_chmod(o, P("secret"), 0600));
	px_rc(c, "touch sticky/rootfile", px_touch(o, P("sticky/rootfile")));
	px_rc(c, "chmod sticky/rootfile 0666", o->po_chmod(o, P("sticky/rootfile"), 0666));

	px_rc(c, "as user", o->po_set_cred(o, USER, USER));
	px_try_open(o, c, "open secret rdonly", P("secret"), O_RDONLY, 0);
	px_try_open(o, c, "open ro/f wronly", P("ro/f"), O_WRONLY, 0);
	px_try_open(o, c, "open ro/f rdonly", P("ro/f"), O_RDONLY, 0);
	px_try_open(o, c, "creat ro/new", P("ro/new"), O_CREAT | O_WRONLY, 0644);
	px_rc(c, "mkdir ro/nd", o->po_mkdir(o, P("ro/nd"), 0755));
	px_rc(c, "unlink ro/f", o->po_unlink(o, P("ro/f")));
	px_rc(c, "rename ro/f pub/f", o->po_rename(o, P("ro/f"), P("pub/f")));
	struct stat st;
	px_rc(c, "stat priv/f", o->po_stat(o, P("priv/f"), &st));
	px_try_opendir(o, c, "opendir priv", P("priv"));
	px_rc(c, "stat xonly/f", o->po_stat(o, P("xonly/f"), &st));
	px_try_opendir(o, c, "opendir xonly", P("xonly"));
	px_rc(c, "truncate secret", o->po_truncate(o, P("secret"), 0));
	px_rc(c, "truncate ro/f", o->po_truncate(o, P("ro/f"), 0));
	px_rc(c, "chmod secret", o->po_chmod(o, P("secret"), 0644));
	px_try_open(o, c, "creat pub/mine", P("pub/mine"), O_CREAT | O_WRONLY, 0640);
	rec_stat(o, c, "stat pub/mine", P("pub/mine"));
	px_rc(c, "mkdir pub/mydir", o->po_mkdir(o, P("pub/mydir"), 0700));
	rec_stat(o, c, "stat pub/mydir", P("pub/mydir"));
	px_rc(c, "unlink sticky/rootfile", o->po_unlink(o, P("sticky/rootfile")));
	px_rc(c, "rename sticky/rootfile", o->po_rename(o, P("sticky/rootfile"), P("sticky/x")));
	px_try_open(o, c, "write sticky/rootfile (0666)", P("sticky/rootfile"), O_WRONLY, 0);
	px_rc(c, "touch sticky/userfile", px_touch(o, P("sticky/userfile")));
	px_rc(c, "rename own in sticky", o->po_rename(o, P("sticky/userfile"), P("sticky/u2")));
	px_rc(c, "unlink own in sticky", o->po_unlink(o, P("sticky/u2")));
	if (o->po_utimens) {
		struct timespec ts[2] = { { 1, 0 }, { 1, 0 } };
		px_rc(c, "utimens explicit on root's 0666", o->po_utimens(o, P("sticky/rootfile"), ts));
		ts[0].tv_nsec = UTIME_NOW;
		ts[1].tv_nsec = UTIME_NOW;
		px_rc(c, "utimens now on root's 0666", o->po_utimens(o, P("sticky/rootfile"), ts));
		px_rc(c, "utimens now on root's 0600", o->po_utimens(o, P("secret"), ts));
	}
	/* another user may remove it from a plain 0777 directory */
	px_rc(c, "as user 2", o->po_set_cred(o, USER2, USER2));
	px_rc(c, "unlink pub/mine as user 2", o->po_unlink(o, P("pub/mine")));
	px_rc(c, "rmdir pub/mydir as user 2", o->po_rmdir(o, P("pub/mydir")));
	px_rc(c, "back to root", o->po_set_cred(o, 0, 0));
	px_rec_listing(o, c, "listing pub", P("pub"));
	return 0;
}

/*
 * A directory the user may read but not search (r-- for others): listing it
 * works (open(2) needs read permission on it and search permission on its
 * ancestors only), reaching anything inside does not.
 */
static int case_permissions_read_only_dir(const struct px_ops *o, struct px_ctx *c)
{
	if (need_cred(o, c))
		return px_skip(c);
	px_rc(c, "mkdir ronly 0744", o->po_mkdir(o, P("ronly"), 0744));
	px_rc(c, "touch ronly/f", px_touch(o, P("ronly/f")));
	px_rc(c, "mkdir ronly/sub", o->po_mkdir(o, P("ronly/sub"), 0755));
	px_rc(c, "as user", o->po_set_cred(o, USER, USER));
	px_try_opendir(o, c, "opendir ronly", P("ronly"));
	int dh = o->po_opendir(o, P("ronly"));
	if (dh >= 0) {
		struct px_dirent de;
		int n = 0;
		while (o->po_readdir(o, dh, &de) == 1)
			n++;
		px_rc(c, "entries", n);
		o->po_closedir(o, dh);
	}
	px_try_open(o, c, "open ronly O_DIRECTORY", P("ronly"), O_RDONLY | O_DIRECTORY, 0);
	struct stat st;
	px_rc(c, "stat ronly", o->po_stat(o, P("ronly"), &st));
	px_rc(c, "stat ronly/f", o->po_stat(o, P("ronly/f"), &st));
	px_rc(c, "stat ronly/.", o->po_stat(o, P("ronly/."), &st));
	px_rc(c, "stat ronly/..", o->po_stat(o, P("ronly/.."), &st));
	px_try_opendir(o, c, "opendir ronly/.", P("ronly/."));
	px_try_opendir(o, c, "opendir ronly/sub", P("ronly/sub"));
	px_rc(c, "back to root", o->po_set_cred(o, 0, 0));
	return 0;
}

/* ------------------------------------------------------------ xattrs */

static int need_xattr(const struct px_ops *o, struct px_ctx *c)
{
	return px_need(c, o->po_setxattr && o->po_getxattr && o->po_listxattr && o->po_removexattr,
		       "weir_setxattr, weir_getxattr, weir_listxattr, weir_removexattr");
}

static void rec_get(const struct px_ops *o, struct px_ctx *c, const char *label, const char *path,
		    const char *name, size_t len)
{
	char buf[512];
	memset(buf, 0, sizeof(buf));
	ssize_t n = o->po_getxattr(o, path, name, len ? buf : NULL, len);
	if (len)
		px_rec_data(c, label, n, buf);
	else
		px_rc(c, label, n);
}

/* The list, its names sorted (the order is the filesystem's). */
static void rec_list(const struct px_ops *o, struct px_ctx *c, const char *label, const char *path)
{
	char buf[4096], out[4096] = "";
	ssize_t n = o->po_listxattr(o, path, buf, sizeof(buf));
	if (n < 0) {
		px_rc(c, label, n);
		return;
	}
	const char *names[128];
	int k = 0;
	for (ssize_t i = 0; i < n && k < 128; i += (ssize_t)strlen(buf + i) + 1)
		names[k++] = buf + i;
	for (int i = 1; i < k; i++)
		for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			const char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	size_t used = 0;
	for (int i = 0; i < k; i++)
		used += (size_t)snprintf(out + used, sizeof(out) - used, "%s%s", i ? "," : "",
					 names[i]);
	px_rec(c, label, "%zd bytes: %s", n, out);
}

static int case_xattr_basic(const struct px_ops *o, struct px_ctx *c)
{
	if (need_xattr(o, c))
		return px_skip(c);
	char f[PX_PATH_MAX];
	snprintf(f, sizeof(f), "%s", P("f"));
	px_rc(c, "touch f", px_touch(o, f));
	rec_list(o, c, "list empty", f);
	px_rc(c, "set user.a v1", o->po_setxattr(o, f, "user.a", "v1", 2, 0));
	rec_get(o, c, "get user.a", f, "user.a", 64);
	rec_get(o, c, "size of user.a", f, "user.a", 0);
	px_rc(c, "create existing", o->po_setxattr(o, f, "user.a", "x", 1, XATTR_CREATE));
	px_rc(c, "replace missing", o->po_setxattr(o, f, "user.b", "x", 1, XATTR_REPLACE));
	px_rc(c, "replace existing", o->po_setxattr(o, f, "user.a", "value2", 6, XATTR_REPLACE));
	rec_get(o, c, "get user.a 2", f, "user.a", 64);
	px_rc(c, "create new", o->po_setxattr(o, f, "user.b", "bee", 3, XATTR_CREATE));
	rec_get(o, c, "get missing", f, "user.none", 64);
	rec_get(o, c, "get into small buffer", f, "user.a", 3);
	px_rc(c, "set empty value", o->po_setxattr(o, f, "user.empty", "", 0, 0));
	rec_get(o, c, "get empty", f, "user.empty", 64);
	static const char bin[] = { 0, 1, 2, 0, (char)0xff, 0 };
	px_rc(c, "set binary", o->po_setxattr(o, f, "user.bin", bin, sizeof(bin), 0));
	rec_get(o, c, "get binary", f, "user.bin", 64);
	rec_list(o, c, "list", f);
	char small[4];
	px_rc(c, "list into small buffer", o->po_listxattr(o, f, small, sizeof(small)));
	px_rc(c, "list size", o->po_listxattr(o, f, NULL, 0));
	px_rc(c, "remove user.a", o->po_removexattr(o, f, "user.a"));
	px_rc(c, "remove user.a again", o->po_removexattr(o, f, "user.a"));
	rec_list(o, c, "list after remove", f);
	/* names and namespaces */
	char longname[300];
	snprintf(longname, sizeof(longname), "user.");
	memset(longname + 5, 'n', 251);
	longname[256] = 0;
	px_rc(c, "set 256-byte name", o->po_setxattr(o, f, longname, "x", 1, 0));
	longname[255] = 0;
	px_rc(c, "set 255-byte name", o->po_setxattr(o, f, longname, "x", 1, 0));
	px_rc(c, "set user. alone", o->po_setxattr(o, f, "user.", "x", 1, 0));
	px_rc(c, "set empty name", o->po_setxattr(o, f, "", "x", 1, 0));
	px_rc(c, "set unknown namespace", o->po_setxattr(o, f, "foo.bar", "x", 1, 0));
	rec_get(o, c, "get unknown namespace", f, "foo.bar", 64);
	px_rc(c, "set trusted.t (root)", o->po_setxattr(o, f, "trusted.t", "tt", 2, 0));
	rec_get(o, c, "get trusted.t (root)", f, "trusted.t", 64);
	char *big = calloc(1, 65537);
	if (big) {
		px_rc(c, "set 65537-byte value", o->po_setxattr(o, f, "user.big", big, 65537, 0));
		free(big);
	}
	px_rc(c, "set on missing", o->po_setxattr(o, P("missing"), "user.a", "x", 1, 0));
	rec_get(o, c, "get on missing", P("missing"), "user.a", 64);
	/* on a directory; kept across rename; gone with the file */
	px_rc(c, "mkdir d", o->po_mkdir(o, P("d"), 0755));
	px_rc(c, "set on dir", o->po_setxattr(o, P("d"), "user.dir", "D", 1, 0));
	rec_get(o, c, "get on dir", P("d"), "user.dir", 64);
	px_rc(c, "rename f g", o->po_rename(o, P("f"), P("g")));
	rec_list(o, c, "list after rename", P("g"));
	px_rc(c, "unlink g", o->po_unlink(o, P("g")));
	px_rc(c, "touch g again", px_touch(o, P("g")));
	rec_list(o, c, "list of new g", P("g"));
	return 0;
}

static int case_xattr_as_user(const struct px_ops *o, struct px_ctx *c)
{
	if (need_cred(o, c) || need_xattr(o, c) || px_need(c, o->po_chmod != NULL, "weir_chmod"))
		return px_skip(c);
	px_rc(c, "touch pub", px_touch(o, P("pub")));
	px_rc(c, "touch priv", px_touch(o, P("priv")));
	px_rc(c, "chmod priv 0600", o->po_chmod(o, P("priv"), 0600));
	px_rc(c, "set pub user.a", o->po_setxattr(o, P("pub"), "user.a", "A", 1, 0));
	px_rc(c, "set pub trusted.t", o->po_setxattr(o, P("pub"), "trusted.t", "T", 1, 0));
	px_rc(c, "set priv user.a", o->po_setxattr(o, P("priv"), "user.a", "A", 1, 0));
	px_rc(c, "as user", o->po_set_cred(o, USER, USER));
	rec_get(o, c, "get pub user.a", P("pub"), "user.a", 64);
	px_rc(c, "set pub user.b (no write)", o->po_setxattr(o, P("pub"), "user.b", "B", 1, 0));
	px_rc(c, "remove pub user.a (no write)", o->po_removexattr(o, P("pub"), "user.a"));
	rec_get(o, c, "get priv user.a (no read)", P("priv"), "user.a", 64);
	rec_get(o, c, "get pub trusted.t", P("pub"), "trusted.t", 64);
	px_rc(c, "set pub trusted.u", o->po_setxattr(o, P("pub"), "trusted.u", "U", 1, 0));
	rec_list(o, c, "list pub as user", P("pub"));
	px_rc(c, "back to root", o->po_set_cred(o, 0, 0));
	rec_list(o, c, "list pub as root", P("pub"));
	return 0;
}

int main(void)
{
	static const struct px_case cases[] = {
		PX_CASE(chmod, 0),
		PX_CASE(chown, 0),
		PX_CASE(chown_chmod_as_user, PX_CREDS),
		PX_CASE(utimens, 0),
		PX_CASE(times_updated, 0),
		PX_CASE(access_root, 0),
		PX_CASE(access_user, PX_CREDS),
		PX_CASE(permissions_enforced, PX_CREDS),
		PX_CASE(permissions_read_only_dir, PX_CREDS),
		PX_CASE(xattr_basic, 0),
		PX_CASE(xattr_as_user, PX_CREDS),
		PX_CASE_END,
	};
	return px_main("attr", cases);
}
