/*
 * tests/integration/test_bind.c - bound OSTs (mds/cmap.c, oss/obj.c): an OST
 * is bound at its first registration to its uuid and the secret kept in its
 * directory. Played as an attacker who holds the cluster key would: raw
 * MDS_OSS_REGISTER calls that reuse a live OST's uuid (no secret, a wrong
 * secret, the right secret from another address while the OST is alive)
 * are refused and the map keeps pointing at the real OSS; a new OST without
 * a secret never enters the map; a second weir-oss on an OST directory that
 * another serves refuses to start; once the OST's OSS is dead past the OST
 * timeout, the right secret from another address is accepted (failover),
 * and so is a real weir-oss serving the same OST directory from another
 * port, whose clients then read the data written before; one weir-oss given
 * the same directory twice refuses to start.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/util.h"
#include "harness.h"
#include "net/net.h"
#include "th_weir.h"
#include "weir.pb-c.h"

static struct th_cluster *cl;
static weir_fs_t *fs;
static char uuid0[64];
static uint8_t secret0[32];
static uint32_t idx0; /* the index of oss0's OST (the OSSs register in any order) */

static int read_ost0(void)
{
	char p[512], buf[160];
	snprintf(p, sizeof(p), "%s/oss0/ost0/ost.uuid", th_cluster_dir(cl));
	ssize_t n = weir_file_read_small(p, buf, sizeof(buf));
	if (n < 32)
		return -1;
	memcpy(uuid0, buf, 32);
	uuid0[32] = '\0';
	snprintf(p, sizeof(p), "%s/oss0/ost0/ost.secret", th_cluster_dir(cl));
	n = weir_file_read_small(p, buf, sizeof(buf));
	if (n < 64)
		return -1;
	for (int i = 0; i < 32; i++) {
		unsigned v;
		if (sscanf(buf + 2 * i, "%2x", &v) != 1)
			return -1;
		secret0[i] = (uint8_t)v;
	}
	snprintf(p, sizeof(p), "%s/oss0/ost0/ost.index", th_cluster_dir(cl));
	n = weir_file_read_small(p, buf, sizeof(buf));
	if (n < 1)
		return -1;
	idx0 = (uint32_t)strtoul(buf, NULL, 10);
	return 0;
}

static int suite_init(void)
{
	/* 5 s: heartbeats (1 s) of a loaded machine must not look like a dead OST */
	static const char *const mds_args[] = { "--ost-timeout", "5", NULL };
	struct th_cluster_opts o = { .tco_nr_oss = 2, .tco_ost_per_oss = 1,
				     .tco_mds_args = mds_args };
	if (th_cluster_mount(&o, &cl, &fs))
		return -1;
	return read_ost0();
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

/* A raw registration of one OST (the harness's key: an insider). \return the MDS's status. */
static int reg(const char *uuid, const uint8_t *secret, const char *addr, int32_t index)
{
	struct net_conn *c;
	int rc = net_conn_open(th_cluster_mds_addr(cl), 2000, &c);
	if (rc)
		return rc;
	Weir__OstReg ost = WEIR__OST_REG__INIT, *ostp = &ost;
	ost.uuid = (char *)uuid;
	ost.index = index;
	ost.total_bytes = ost.free_bytes = ost.avail_bytes = 1ULL << 30;
	if (secret) {
		ost.secret.data = (uint8_t *)secret;
		ost.secret.len = 32;
	}
	Weir__OssRegisterReq r = WEIR__OSS_REGISTER_REQ__INIT;
	r.oss_addr = (char *)addr;
	r.n_osts = 1;
	r.osts = &ostp;
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__MDS_OSS_REGISTER, &r.base);
	rc = net_call_run(c, &call);
	net_call_fini(&call);
	net_conn_close(c);
	return rc;
}

/* The address the cluster map gives OST \a idx ("" if none), and the number of OSTs. */
static int map_addr(uint32_t idx, char *addr, size_t len)
{
	struct net_conn *c;
	addr[0] = '\0';
	if (net_conn_open(th_cluster_mds_addr(cl), 2000, &c))
		return -1;
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__MDS_GET_CLUSTERMAP, NULL);
	int n = -1;
	if (!net_call_run(c, &call)) {
		Weir__ClusterMap *m = net_call_unpack(&call, &weir__cluster_map__descriptor);
		if (m) {
			n = (int)m->n_osts;
			for (size_t i = 0; i < m->n_osts; i++)
				if (m->osts[i]->index == idx)
					snprintf(addr, len, "%s", m->osts[i]->oss_addr);
			weir__cluster_map__free_unpacked(m, NULL);
		}
	}
	net_call_fini(&call);
	net_conn_close(c);
	return n;
}

static int data_ok(const char *path)
{
	uint8_t w[200000], r[sizeof(w)];
	th_fill_pattern(w, sizeof(w), 77);
	if (th_put(fs, path, w, sizeof(w)) || th_get(fs, path, r, sizeof(r)) != (ssize_t)sizeof(w))
		return 0;
	return !memcmp(w, r, sizeof(w));
}

static void test_bind_hijack_of_live_ost_refused(void)
{
	char real[128], now[128];
	int n = map_addr(idx0, real, sizeof(real));
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_STRING_EQUAL(real, th_server_addr(cl, 0));
	uint8_t wrong[32];
	memset(wrong, 0x11, sizeof(wrong));
	CU_ASSERT_EQUAL(reg(uuid0, NULL, "127.0.0.1:9", (int32_t)idx0), -EACCES);    /* no secret */
	CU_ASSERT_EQUAL(reg(uuid0, wrong, "127.0.0.1:9", (int32_t)idx0), -EACCES);   /* a wrong one */
	CU_ASSERT_EQUAL(reg(uuid0, wrong, real, (int32_t)idx0), -EACCES);            /* even from its address */
	CU_ASSERT_EQUAL(reg(uuid0, secret0, "127.0.0.1:9", (int32_t)idx0), -EBUSY);  /* alive elsewhere */
	CU_ASSERT_EQUAL(map_addr(idx0, now, sizeof(now)), 2);
	CU_ASSERT_STRING_EQUAL(now, real);
	CU_ASSERT(data_ok("/after-hijack")); /* data still goes to the real OSS */
}

static void test_bind_new_ost_without_secret_never_listed(void)
{
	char a[128];
	CU_ASSERT_EQUAL(reg("feedfacefeedfacefeedfacefeedface", NULL, "127.0.0.1:9", -1), -EACCES);
	CU_ASSERT_EQUAL(map_addr(idx0, a, sizeof(a)), 2);
	struct weir_target_info t[8];
	size_t n = 0;
	CU_ASSERT_EQUAL(weir_df(fs, t, 8, &n), 0);
	CU_ASSERT_EQUAL(n, 3); /* the MDT and the two real OSTs */
}

static void test_bind_second_oss_on_same_dir_refuses(void)
{
	char dir[512], log[600], cmd[2048];
	snprintf(dir, sizeof(dir), "%s/oss0/ost0", th_cluster_dir(cl));
	snprintf(log, sizeof(log), "%s/second-oss.log", th_cluster_dir(cl));
	snprintf(cmd, sizeof(cmd),
		 "'%s/bin/weir-oss' --mds %s --ost '%s' --listen 127.0.0.1:0 --key-file '%s'"
		 " > '%s' 2>&1",
		 getenv("BUILD") ? getenv("BUILD") : "build", th_cluster_mds_addr(cl), dir,
		 th_cluster_key_file(cl), log);
	int st = system(cmd);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	char out[4096];
	ssize_t n = weir_file_read_small(log, out, sizeof(out));
	CU_ASSERT_FATAL(n > 0);
	char want[128];
	snprintf(want, sizeof(want), "another weir-oss (pid %d) serves this OST directory",
		 (int)th_server_pid(cl, 0));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
	if (!strstr(out, want))
		fprintf(stderr, "\n%s\n", out);
	CU_ASSERT_TRUE(th_server_alive(cl, 0));
	CU_ASSERT(data_ok("/after-second-oss"));
}

/* Failover: the OST's OSS is dead past the OST timeout; its secret from elsewhere is accepted. */
static void test_bind_failover_after_timeout_accepted(void)
{
	char now[128];
	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, 0), 0);
	th_sleep_ms(6000); /* --ost-timeout 5 */
	uint8_t wrong[32];
	memset(wrong, 0x22, sizeof(wrong));
	CU_ASSERT_EQUAL(reg(uuid0, wrong, "127.0.0.1:19", (int32_t)idx0), -EACCES); /* still bound */
	CU_ASSERT_EQUAL(reg(uuid0, secret0, "127.0.0.1:19", (int32_t)idx0), 0);
	CU_ASSERT_EQUAL(map_addr(idx0, now, sizeof(now)), 2);
	CU_ASSERT_STRING_EQUAL(now, "127.0.0.1:19");
	/* the real OSS comes back and takes its OST again once the impostor address is silent */
	CU_ASSERT_EQUAL(th_server_start(cl, 0), 0);
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 20000), 0);
	CU_ASSERT_EQUAL(map_addr(idx0, now, sizeof(now)), 2);
	CU_ASSERT_STRING_EQUAL(now, th_server_addr(cl, 0));
}

/* The test's bin directory (as the harness finds it). */
static const char *bin_dir(char *buf, size_t len)
{
	snprintf(buf, len, "%s/bin", getenv("BUILD") ? getenv("BUILD") : "build");
	return buf;
}

static void test_bind_same_dir_twice_in_one_oss_refuses(void)
{
	char dir[512], log[600], cmd[2048], bin[256];
	snprintf(dir, sizeof(dir), "%s/twice-ost", th_cluster_dir(cl));
	snprintf(log, sizeof(log), "%s/twice-oss.log", th_cluster_dir(cl));
	snprintf(cmd, sizeof(cmd),
		 "'%s/weir-oss' --mds %s --ost '%s' --ost '%s/' --listen 127.0.0.1:0"
		 " --key-file '%s' > '%s' 2>&1",
		 bin_dir(bin, sizeof(bin)), th_cluster_mds_addr(cl), dir, dir,
		 th_cluster_key_file(cl), log);
	int st = system(cmd);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	char out[4096];
	ssize_t n = weir_file_read_small(log, out, sizeof(out));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "this OST directory is given twice (--ost)"));
	if (!strstr(out, "given twice"))
		fprintf(stderr, "\n%s\n", out);
}

/* Start a weir-oss of our own on OST directory \a dir, on a new port. \return its pid or -1. */
static pid_t oss_spawn(const char *dir, const char *log)
{
	char bin[256], exe[300];
	snprintf(exe, sizeof(exe), "%s/weir-oss", bin_dir(bin, sizeof(bin)));
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	FILE *f = freopen(log, "w", stderr);
	if (!f)
		_exit(127);
	dup2(2, 1);
	execl(exe, exe, "--mds", th_cluster_mds_addr(cl), "--ost", dir, "--listen",
	      "127.0.0.1:0", "--heartbeat", "1", "--key-file", th_cluster_key_file(cl),
	      (char *)NULL);
	_exit(127);
}

/*
 * A copy of a live OST's directory served by another weir-oss (the lock
 * cannot see it): the MDS refuses it every heartbeat (-EBUSY) and the OST
 * stays where it is, instead of flipping between the two addresses.
 */
static void test_bind_copy_of_live_ost_refused_no_flip(void)
{
	char now[128], src[512], copy[512], log[600], cmd[1200];
	snprintf(src, sizeof(src), "%s/oss0/ost0", th_cluster_dir(cl));
	snprintf(copy, sizeof(copy), "%s/ost0-copy", th_cluster_dir(cl));
	snprintf(log, sizeof(log), "%s/copy-oss.log", th_cluster_dir(cl));
	snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s'", src, copy);
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
	const char *old = th_server_addr(cl, 0);
	pid_t pid = oss_spawn(copy, log);
	CU_ASSERT_FATAL(pid > 0);
	int flips = 0;
	for (int i = 0; i < 20; i++) { /* 4 s: 4 heartbeats of each OSS */
		th_sleep_ms(200);
		if (map_addr(idx0, now, sizeof(now)) != 2 || strcmp(now, old))
			flips++;
	}
	CU_ASSERT_EQUAL(flips, 0);
	CU_ASSERT_EQUAL(waitpid(pid, NULL, WNOHANG), 0); /* it runs, refused */
	char out[16384];
	ssize_t n = weir_file_read_small(log, out, sizeof(out));
	CU_ASSERT(n > 0 && strstr(out, "the MDS refused the OST: it is alive at another address"));
	if (n > 0 && !strstr(out, "alive at another address"))
		fprintf(stderr, "\n%s\n", out);
	kill(pid, SIGTERM);
	CU_ASSERT_EQUAL(waitpid(pid, NULL, 0), pid);
	CU_ASSERT_EQUAL(th_rm_rf(copy), 0);
	CU_ASSERT(data_ok("/after-copy"));
}

/*
 * The real failover: OSS 0 dies, and past the OST timeout a weir-oss on
 * another port serves the same OST directory; the MDS moves the OST there
 * and clients read what was written before.
 */
static void test_bind_failover_real_oss_other_address(void)
{
	static uint8_t w[3 << 20], r[sizeof(w)];
	char now[128], dir[512], log[600];
	th_fill_pattern(w, sizeof(w), 4242);
	CU_ASSERT_EQUAL_FATAL(th_stripe_dir(fs, "/fo", 2, 1 << 20), 0); /* both OSTs */
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/fo/f", w, sizeof(w)), 0);
	const char *old = th_server_addr(cl, 0);
	CU_ASSERT_EQUAL(map_addr(idx0, now, sizeof(now)), 2);
	CU_ASSERT_STRING_EQUAL(now, old);

	CU_ASSERT_EQUAL_FATAL(th_server_kill(cl, 0), 0);
	snprintf(dir, sizeof(dir), "%s/oss0/ost0", th_cluster_dir(cl));
	snprintf(log, sizeof(log), "%s/failover-oss.log", th_cluster_dir(cl));
	pid_t pid = oss_spawn(dir, log);
	CU_ASSERT_FATAL(pid > 0);
	/* refused while the MDS still counts the old address alive, then accepted */
	uint64_t t0 = th_now_ms();
	bool moved = false;
	while (!moved && th_now_ms() - t0 < 20000) {
		th_sleep_ms(200);
		moved = map_addr(idx0, now, sizeof(now)) == 2 && strcmp(now, old) && now[0];
	}
	CU_ASSERT_TRUE(moved);
	if (!moved)
		th_cluster_dump_logs(cl, 30);
	CU_ASSERT_EQUAL(waitpid(pid, NULL, WNOHANG), 0); /* it runs */
	/* the clients' data is where it was */
	memset(r, 0, sizeof(r));
	CU_ASSERT_EQUAL(th_get(fs, "/fo/f", r, sizeof(r)), (ssize_t)sizeof(r));
	CU_ASSERT_EQUAL(th_diff_at(w, r, sizeof(w)), -1);
	CU_ASSERT(data_ok("/fo/after-failover"));

	/* hand the OST back to the harness's OSS 0 (its old address), for the rest */
	kill(pid, SIGTERM);
	CU_ASSERT_EQUAL(waitpid(pid, NULL, 0), pid);
	CU_ASSERT_EQUAL(th_server_start(cl, 0), 0);
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 20000), 0);
	CU_ASSERT_EQUAL(map_addr(idx0, now, sizeof(now)), 2);
	CU_ASSERT_STRING_EQUAL(now, old);
	memset(r, 0, sizeof(r));
	CU_ASSERT_EQUAL(th_get(fs, "/fo/f", r, sizeof(r)), (ssize_t)sizeof(r));
	CU_ASSERT_EQUAL(th_diff_at(w, r, sizeof(w)), -1);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_bind_hijack_of_live_ost_refused),
		TH_TEST(test_bind_new_ost_without_secret_never_listed),
		TH_TEST(test_bind_second_oss_on_same_dir_refuses),
		TH_TEST(test_bind_failover_after_timeout_accepted),
		TH_TEST(test_bind_same_dir_twice_in_one_oss_refuses),
		TH_TEST(test_bind_copy_of_live_ost_refused_no_flip),
		TH_TEST(test_bind_failover_real_oss_other_address),
		TH_TEST_END,
	};
	return th_cunit_run("bind", suite_init, suite_clean, tests);
}
