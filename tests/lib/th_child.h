/*
 * tests/lib/th_child.h - forked libweir client processes for integration
 * tests that need several clients (locks, recovery): checks a child counts
 * (CHECK, CHECK_RC), one-byte steps over pipes between parent and children
 * (post, await), a child's mount, open and fcntl lock, its exit with the
 * number of failed checks, and the parent's spawn and reap.
 * Header-only, included once per test binary, after the includer defined
 * STEP_TIMEOUT_MS (ms a step is waited for) and `static struct th_cluster
 * *cl` (the cluster the children mount).
 */
#ifndef WEIR_TESTS_TH_CHILD_H
#define WEIR_TESTS_TH_CHILD_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

/* ------------------------------------------------------------ child side */

static int fails; /* in a child: failed checks */
static const char *who = "parent";

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "  %s (pid %d): check failed at %s:%d: %s\n", who,         \
				(int)getpid(), __FILE__, __LINE__, #cond);                         \
			fails++;                                                                   \
		}                                                                                  \
	} while (0)

/* Check that \a rc equals \a want, printing both when not. */
#define CHECK_RC(rc, want)                                                                         \
	do {                                                                                       \
		long rc_ = (long)(rc), want_ = (long)(want);                                       \
		if (rc_ != want_) {                                                                \
			fprintf(stderr, "  %s (pid %d): %s:%d: %s = %ld (%s), want %ld\n", who,    \
				(int)getpid(), __FILE__, __LINE__, #rc, rc_,                       \
				rc_ < 0 ? strerror((int)-rc_) : "", want_);                        \
			fails++;                                                                   \
		}                                                                                  \
	} while (0)

static void post(int fd, char step)
{
	if (write(fd, &step, 1) != 1) {
		fprintf(stderr, "  %s: cannot signal step %c\n", who, step);
		_exit(101);
	}
}

static void await(int fd, char step)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char got = 0;
	if (poll(&pfd, 1, STEP_TIMEOUT_MS) != 1 || read(fd, &got, 1) != 1 || got != step) {
		fprintf(stderr, "  %s: waiting for step %c, got '%c'\n", who, step,
			got ? got : '?');
		_exit(102);
	}
}

static weir_fs_t *child_mount(const char *name)
{
	struct weir_mount_opts o;
	weir_fs_t *fs = NULL;
	memset(&o, 0, sizeof(o));
	o.wmo_size = sizeof(o);
	o.wmo_client_name = name;
	who = name;
	int rc = weir_mount_with(th_cluster_mds_addr(cl), &o, &fs);
	if (rc) {
		fprintf(stderr, "  %s: weir_mount: %s\n", name, strerror(-rc));
		_exit(103);
	}
	return fs;
}

static weir_file_t *child_open(weir_fs_t *fs, const char *path, int flags)
{
	weir_file_t *fh = NULL;
	int rc = weir_open(fs, path, flags, 0644, &fh);
	if (rc) {
		fprintf(stderr, "  %s: open %s: %s\n", who, path, strerror(-rc));
		_exit(104);
	}
	return fh;
}

static struct flock mk_flock(short type, off_t start, off_t len)
{
	struct flock fl;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = start;
	fl.l_len = len;
	return fl;
}

static int lk(weir_file_t *fh, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = mk_flock(type, start, len);
	return weir_fcntl_lock(fh, cmd, &fl);
}

static void child_exit(weir_fs_t *fs)
{
	if (fs) {
		int rc = weir_umount(fs);
		if (rc)
			fprintf(stderr, "  %s: weir_umount: %s\n", who, strerror(-rc));
	}
	_exit(fails > 99 ? 99 : fails);
}

/* ------------------------------------------------------------ parent side */

typedef void (*child_fn)(void *arg);

static pid_t spawn(child_fn fn, void *arg)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		fn(arg);
		_exit(fails > 99 ? 99 : fails);
	}
	CU_ASSERT_FATAL(pid > 0);
	return pid;
}

/* Wait for \a pid up to \a timeout_ms (then kill it). \return its exit status, or -1. */
static int reap(pid_t pid, int timeout_ms)
{
	uint64_t end = th_now_ms() + (uint64_t)timeout_ms;
	int st = 0;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		if (r < 0)
			return -1;
		if (th_now_ms() >= end) {
			fprintf(stderr, "  child %d: still running after %d ms; killed\n", (int)pid,
				timeout_ms);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		th_sleep_ms(20);
	}
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "  child %d: killed by signal %d\n", (int)pid, WTERMSIG(st));
		return -1;
	}
	if (WEXITSTATUS(st))
		fprintf(stderr, "  child %d: exit status %d\n", (int)pid, WEXITSTATUS(st));
	return WEXITSTATUS(st);
}

static void mkpipe(int p[2])
{
	CU_ASSERT_FATAL(pipe(p) == 0);
}

static void closepipe(int p[2])
{
	close(p[0]);
	close(p[1]);
}

#endif /* WEIR_TESTS_TH_CHILD_H */
