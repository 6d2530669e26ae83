/*
 * tests/lib/th_weir.h - small libweir helpers for integration tests
 * (header-only, so unit tests that link harness.o do not need libweir).
 * Each returns 0 / a byte count, or a negative errno like libweir does.
 */
#ifndef WEIR_TESTS_TH_WEIR_H
#define WEIR_TESTS_TH_WEIR_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weir/weir.h>

#include "harness.h"

/** Print "what: -ENOENT(-2) ..." when rc is an error; \return rc. */
static inline long th_rc(const char *what, long rc)
{
	if (rc < 0)
		fprintf(stderr, "\n  %s: %s (%ld)\n", what, strerror((int)-rc), rc);
	return rc;
}

/**
 * Start a cluster (\a opts may be NULL: the defaults) and mount a client
 * on it: the usual suite_init. \return 0, or -1 after a log line (what
 * started is left in *cl / *fs for th_cluster_umount_stop()).
 */
static inline int th_cluster_mount(const struct th_cluster_opts *opts, struct th_cluster **cl,
				   weir_fs_t **fs)
{
	if (th_cluster_start(opts, cl))
		return -1;
	return th_rc("weir_mount", weir_mount(th_cluster_mds_addr(*cl), fs)) ? -1 : 0;
}

/**
 * Wait up to \a timeout_ms until the MDS of \a fs has heard from a copytool
 * agent (weir_hsm_queue_get().hq_agents > 0). \return 0 or -ETIMEDOUT (logged).
 */
static inline int th_wait_agent(weir_fs_t *fs, unsigned timeout_ms)
{
	uint64_t t0 = th_now_ms();

	for (;;) {
		struct weir_hsm_queue *q = NULL;
		int rc = weir_hsm_queue_get(fs, NULL, 0, &q);
		uint32_t agents = rc ? 0 : q->hq_agents;

		weir_hsm_queue_free(q);
		if (agents > 0)
			return 0;
		if (th_now_ms() - t0 > timeout_ms) {
			fprintf(stderr, "\n  no copytool agent registered after %u ms (rc %d)\n",
				timeout_ms, rc);
			return -ETIMEDOUT;
		}
		th_sleep_ms(50);
	}
}

/** Unmount \a fs (may be NULL) and stop \a cl: the usual suite_clean. \return 0 or -1. */
static inline int th_cluster_umount_stop(struct th_cluster *cl, weir_fs_t *fs)
{
	int rc = fs ? weir_umount(fs) : 0;
	if (rc)
		th_rc("weir_umount", rc);
	return th_cluster_stop(cl) || rc ? -1 : 0;
}

/**
 * Mount a new client on \a cl, then unmount the old *fs (its errors, as
 * after a server crash, ignored) and put the new one in its place.
 * \return 0, or -1 after a log line (*fs unchanged).
 */
static inline int th_remount(struct th_cluster *cl, weir_fs_t **fs)
{
	weir_fs_t *nfs = NULL;
	int rc = weir_mount(th_cluster_mds_addr(cl), &nfs);
	if (rc)
		return (int)th_rc("weir_mount after restart", rc);
	if (*fs)
		weir_umount(*fs);
	*fs = nfs;
	return 0;
}

/** Create or truncate \a path and write \a len bytes of \a buf at 0. */
static inline int th_put(weir_fs_t *fs, const char *path, const void *buf, size_t len)
{
	weir_file_t *fh = NULL;
	int rc = weir_open(fs, path, O_CREAT | O_WRONLY | O_TRUNC, 0644, &fh);
	if (rc)
		return (int)th_rc(path, rc);
	size_t done = 0;
	while (done < len) {
		size_t n = len - done > (64u << 20) ? (64u << 20) : len - done;
		ssize_t w = weir_pwrite(fh, (const char *)buf + done, n, done);
		if (w < 0) {
			weir_close(fh);
			return (int)th_rc("weir_pwrite", w);
		}
		if (w == 0) {
			weir_close(fh);
			return -EIO;
		}
		done += (size_t)w;
	}
	return (int)th_rc("weir_close", weir_close(fh));
}

/** Read up to \a len bytes of \a path from offset 0. \return bytes read. */
static inline ssize_t th_get(weir_fs_t *fs, const char *path, void *buf, size_t len)
{
	weir_file_t *fh = NULL;
	int rc = weir_open(fs, path, O_RDONLY, 0, &fh);
	if (rc)
		return th_rc(path, rc);
	size_t done = 0;
	while (done < len) {
		ssize_t r = weir_pread(fh, (char *)buf + done, len - done, done);
		if (r < 0) {
			weir_close(fh);
			return th_rc("weir_pread", r);
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	weir_close(fh);
	return (ssize_t)done;
}

/** Set the default layout of directory \a path (creating it if missing). */
static inline int th_stripe_dir(weir_fs_t *fs, const char *path, uint32_t count, uint64_t size)
{
	int rc = weir_mkdir(fs, path, 0755);
	if (rc && rc != -EEXIST)
		return (int)th_rc(path, rc);
	struct weir_stripe_opts so;
	memset(&so, 0, sizeof(so));
	so.wso_size = sizeof(so);
	so.wso_stripe_count = count;
	so.wso_stripe_size = size;
	so.wso_stripe_offset = -1;
	return (int)th_rc("weir_setstripe", weir_setstripe(fs, path, &so));
}

/** Size of \a path by weir_stat, or a negative errno. */
static inline long long th_size(weir_fs_t *fs, const char *path)
{
	struct stat st;
	int rc = weir_stat(fs, path, &st);
	return rc ? rc : (long long)st.st_size;
}

/** Index of the first differing byte, or -1 when equal. */
static inline long th_diff_at(const void *a, const void *b, size_t len)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < len; i++)
		if (x[i] != y[i])
			return (long)i;
	return -1;
}

#endif /* WEIR_TESTS_TH_WEIR_H */
