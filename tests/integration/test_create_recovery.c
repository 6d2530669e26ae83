/*
 * tests/integration/test_create_recovery.c - no false errors from a create
 * around a restart (issue 14, item 4): right after an MDS restart, before
 * the OSSs have registered again, a create waits for the OSTs the MDS knew
 * and gets its full stripe count (it used to fail with ENOSPC, or stripe
 * over fewer OSTs); with one OSS gone for good, a create waits at most the
 * OST timeout after the start and then places the file on the OSTs that
 * are up. During an OSS outage (its OSS killed, the MDS not yet counting
 * its OST down), a create succeeds on the OSTs that serve, or waits, and a
 * create that cannot be placed fails leaving no file: never a file whose
 * layout names the dead OST (it used to be left, 0 bytes, answering EIO).
 *
 * Two OSSs with one OST each; the MDS runs with --ost-timeout 4.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

#define OST_TIMEOUT_S 4

static struct th_cluster *cl;
static weir_fs_t *fs;

static int suite_init(void)
{
	static const char *const mds_args[] = { "--ost-timeout", "4", "--recovery-window", "2s",
						NULL };
	struct th_cluster_opts o;

	memset(&o, 0, sizeof(o));
	o.tco_nr_oss = 2;
	o.tco_ost_per_oss = 1;
	o.tco_mds_args = mds_args;
	if (th_cluster_mount(&o, &cl, &fs))
		return -1;
	/* files in /s get a stripe on each OST */
	if (th_rc("stripe /s", th_stripe_dir(fs, "/s", 2, 1 << 20)))
		return -1;
	return 0;
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

static uint32_t stripes_of(const char *path)
{
	struct weir_layout_info li;
	memset(&li, 0, sizeof(li));
	if (th_rc(path, weir_getstripe(fs, path, &li)))
		return 0;
	return li.wli_stripe_count;
}

/* Create \a path and write a few bytes; \return 0 or the first -errno. */
static int create_write(const char *path)
{
	weir_file_t *fh = NULL;
	int rc = weir_open(fs, path, O_CREAT | O_WRONLY | O_EXCL, 0644, &fh);
	if (rc)
		return rc;
	ssize_t n = weir_pwrite(fh, "hello", 5, 0);
	rc = weir_close(fh);
	return n != 5 ? (n < 0 ? (int)n : -EIO) : rc;
}

/* kill -9 the MDS, start it again, mount anew: the OSSs have not re-registered yet. */
static int mds_restart_now(void)
{
	weir_umount(fs);
	fs = NULL;
	if (th_server_kill(cl, TH_MDS) || th_server_start(cl, TH_MDS))
		return -1;
	return (int)th_rc("weir_mount", weir_mount(th_cluster_mds_addr(cl), &fs));
}

static void test_create_recovery_after_mds_restart_waits_for_known_osts(void)
{
	CU_ASSERT_EQUAL_FATAL(create_write("/s/before"), 0);
	CU_ASSERT_EQUAL(stripes_of("/s/before"), 2);
	CU_ASSERT_EQUAL_FATAL(mds_restart_now(), 0);
	uint64_t t0 = th_now_ms();
	int rc = create_write("/s/after");
	uint64_t ms = th_now_ms() - t0;
	printf("\n  create right after the MDS restart: rc %d after %llu ms\n", rc,
	       (unsigned long long)ms);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(stripes_of("/s/after"), 2);
	CU_ASSERT(ms < OST_TIMEOUT_S * 1000);
	/* many at once, with a default layout too */
	CU_ASSERT_EQUAL(create_write("/after_root"), 0);
	char p[64];
	for (int i = 0; i < 20; i++) {
		snprintf(p, sizeof(p), "/s/many%d", i);
		CU_ASSERT_EQUAL(create_write(p), 0);
		CU_ASSERT_EQUAL(stripes_of(p), 2);
	}
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 10000), 0);
}

static void test_create_recovery_after_mds_restart_oss_gone_waits_ost_timeout(void)
{
	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, 1), 0);
	CU_ASSERT_EQUAL_FATAL(mds_restart_now(), 0);
	uint64_t t0 = th_now_ms();
	int rc = create_write("/s/one_gone");
	uint64_t ms = th_now_ms() - t0;
	printf("\n  create with one OSS gone after the MDS restart: rc %d after %llu ms\n", rc,
	       (unsigned long long)ms);
	/* placed on the OST that came back, once the wait is over */
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(stripes_of("/s/one_gone"), 1);
	CU_ASSERT(ms >= 1000 && ms < (OST_TIMEOUT_S + 3) * 1000);
	/* and no wait any more */
	t0 = th_now_ms();
	CU_ASSERT_EQUAL(create_write("/s/one_gone2"), 0);
	CU_ASSERT(th_now_ms() - t0 < 1000);
	CU_ASSERT_EQUAL_FATAL(th_server_start(cl, 1), 0);
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 10000), 0);
}

static void test_create_recovery_during_oss_outage_no_broken_file(void)
{
	char p[64], back[8];
	struct stat st;
	int ok = 0;

	CU_ASSERT_EQUAL_FATAL(th_cluster_wait_up(cl, 10000), 0);
	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, 1), 0);
	/* one stripe each: half would land on the dead OST by round robin */
	uint64_t t0 = th_now_ms();
	for (int i = 0; i < 10; i++) {
		snprintf(p, sizeof(p), "/outage%d", i);
		int rc = create_write(p);
		CU_ASSERT_EQUAL(rc, 0);
		if (rc) {
			printf("\n  %s: rc %d; stat: %d\n", p, rc, weir_stat(fs, p, &st));
			continue;
		}
		memset(back, 0, sizeof(back));
		CU_ASSERT_EQUAL(th_get(fs, p, back, sizeof(back)), 5);
		CU_ASSERT_EQUAL(memcmp(back, "hello", 5), 0);
		CU_ASSERT_EQUAL(weir_stat(fs, p, &st), 0);
		CU_ASSERT_EQUAL(st.st_size, 5);
		ok++;
	}
	printf("\n  10 one-stripe creates with an OSS down: %d fine in %llu ms\n", ok,
	       (unsigned long long)(th_now_ms() - t0));
	/* two stripes need the dead OST: wait (until the MDS counts it down) or fail cleanly */
	t0 = th_now_ms();
	int rc = create_write("/s/outage");
	printf("  a two-stripe create with an OSS down: rc %d after %llu ms\n", rc,
	       (unsigned long long)(th_now_ms() - t0));
	if (rc == 0) {
		CU_ASSERT_EQUAL(stripes_of("/s/outage"), 1);
		CU_ASSERT_EQUAL(th_get(fs, "/s/outage", back, sizeof(back)), 5);
	} else {
		CU_ASSERT_EQUAL(weir_stat(fs, "/s/outage", &st), -ENOENT);
	}
	CU_ASSERT_EQUAL_FATAL(th_server_start(cl, 1), 0);
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 10000), 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_create_recovery_after_mds_restart_waits_for_known_osts),
		TH_TEST(test_create_recovery_after_mds_restart_oss_gone_waits_ost_timeout),
		TH_TEST(test_create_recovery_during_oss_outage_no_broken_file),
		TH_TEST_END,
	};
	return th_cunit_run("create_recovery", suite_init, suite_clean, tests);
}
