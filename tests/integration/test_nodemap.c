/*
 * tests/integration/test_nodemap.c - the node map (mds/nodemap.c) and
 * --root-owner against a real cluster. The servers' key file holds the
 * cluster key and a second key, "guests"; the node map puts the holders of
 * "guests" in an untrusted, non-admin group that runs as 4242:4242. The
 * MDS runs --root-squash 1 with --root-owner 65534:65534:0755, so that the
 * squashed root of the trusted clients can still create under /.
 *
 *   - a guest's files belong to 4242 whatever uid it claims (0 or 1000);
 *   - a guest cannot read another user's 0600 file;
 *   - a guest cannot create a data repository association, queue HSM
 *     requests, fetch HSM actions as a copytool, register an OST or set the
 *     layout of /; the trusted client can (the default group);
 *   - a malformed node map stops weir-mds at start with the line number.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/key.h"
#include "common/util.h"
#include "harness.h"
#include "net/auth.h"
#include "net/net.h"
#include "th_weir.h"
#include "weir.pb-c.h"

static struct th_cluster *cl;
static weir_fs_t *fs;
static char nm_path[128], guest_key[128];

static int suite_init(void)
{
	snprintf(nm_path, sizeof(nm_path), "/tmp/weir-nodemap-%d.ini", (int)getpid());
	static const char nm[] = "# test node map\n"
				 "[nodemap guests]\n"
				 "keys = guests\n"
				 "trusted = no\n"
				 "squash_uid = 4242\n"
				 "squash_gid = 4242\n"
				 "admin = no\n";
	if (weir_file_write_atomic(nm_path, nm, sizeof(nm) - 1))
		return -1;
	static char nm_arg[160];
	snprintf(nm_arg, sizeof(nm_arg), "%s", nm_path);
	static const char *mds_args[] = { "--nodemap", nm_arg, "--root-squash", "1",
					  "--root-owner", "65534:65534:0755", NULL };
	struct th_cluster_opts o = { .tco_nr_oss = 1, .tco_ost_per_oss = 1,
				     .tco_mds_args = mds_args };
	if (th_cluster_mount(&o, &cl, &fs))
		return -1;
	/* add "guests" to the servers' key file (they re-read it), and give the guest
	 * a key file of its own holding only that key */
	struct weir_keyring kr, gk = { .kr_nr = 1 };
	if (weir_keyring_load(th_cluster_key_file(cl), &kr, NULL, 0) ||
	    weir_key_generate("guests", &gk.kr_keys[0]))
		return -1;
	kr.kr_keys[kr.kr_nr++] = gk.kr_keys[0];
	snprintf(guest_key, sizeof(guest_key), "/tmp/weir-guest-%d.key", (int)getpid());
	th_sleep_ms(1100); /* a change is seen at most once a second */
	if (weir_keyring_save(th_cluster_key_file(cl), &kr, false) ||
	    weir_keyring_save(guest_key, &gk, false))
		return -1;
	chmod(th_cluster_key_file(cl), 0640); /* as the harness made it */
	th_sleep_ms(1200);
	return 0;
}

static int suite_clean(void)
{
	unlink(nm_path);
	unlink(guest_key);
	return th_cluster_umount_stop(cl, fs);
}

static weir_fs_t *guest_mount(uint32_t uid)
{
	struct weir_mount_opts mo = { .wmo_size = sizeof(mo), .wmo_key_file = guest_key,
				      .wmo_uid = uid, .wmo_gid = uid };
	weir_fs_t *g = NULL;
	int rc = weir_mount_with(th_cluster_mds_addr(cl), &mo, &g);
	if (rc)
		fprintf(stderr, "\n  guest mount: %d %s\n", rc, weir_mount_error());
	return rc ? NULL : g;
}

/* --root-owner: the squashed root (65534) of a trusted client creates under /. */
static void test_nodemap_root_owner_lets_squashed_root_create(void)
{
	struct stat st;
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/pub", 0755), 0);
	CU_ASSERT_EQUAL(weir_chmod(fs, "/pub", 01777), 0);
	CU_ASSERT_EQUAL(th_put(fs, "/secret", "s3cr3t", 6), 0);
	CU_ASSERT_EQUAL(weir_chmod(fs, "/secret", 0600), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/secret", &st), 0);
	CU_ASSERT_EQUAL(st.st_uid, 65534); /* root squashed */
	CU_ASSERT_EQUAL(weir_stat(fs, "/", &st), 0);
	CU_ASSERT_EQUAL(st.st_uid, 65534);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0755);
}

static void test_nodemap_guest_runs_as_squash_ids(void)
{
	uint32_t claims[] = { 0, 1000 };
	for (int i = 0; i < 2; i++) {
		weir_fs_t *g = guest_mount(claims[i]);
		CU_ASSERT_PTR_NOT_NULL_FATAL(g);
		char p[64];
		struct stat st;
		snprintf(p, sizeof(p), "/pub/g%u", claims[i]);
		CU_ASSERT_EQUAL(th_put(g, p, "guest", 5), 0);
		CU_ASSERT_EQUAL(weir_stat(g, p, &st), 0);
		CU_ASSERT_EQUAL(st.st_uid, 4242);
		CU_ASSERT_EQUAL(st.st_gid, 4242);
		weir_file_t *fh = NULL;
		CU_ASSERT_EQUAL(weir_open(g, "/secret", O_RDONLY, 0, &fh), -EACCES);
		CU_ASSERT_EQUAL(weir_mkdir(g, "/top", 0755), -EACCES); /* / is 65534's, 0755 */
		weir_umount(g);
	}
}

static void test_nodemap_guest_no_admin_operations(void)
{
	weir_fs_t *g = guest_mount(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	struct weir_dra d;
	CU_ASSERT_EQUAL(weir_mkdir(g, "/pub/dra", 0777), 0);
	CU_ASSERT_EQUAL(weir_dra_create(g, "/pub/dra", "bucket", "", 0, &d), -EPERM);
	weir_fid_t fid;
	uint64_t id;
	int rcs;
	CU_ASSERT_EQUAL(weir_path2fid(g, "/pub/g0", &fid), 0);
	CU_ASSERT_EQUAL(weir_hsm_request(g, WEIR_HSM_ARCHIVE, &fid, 1, &id, &rcs), -EPERM);
	struct weir_stripe_opts so = { .wso_size = sizeof(so), .wso_stripe_count = 1,
				       .wso_stripe_offset = -1 };
	CU_ASSERT_EQUAL(weir_setstripe(g, "/", &so), -EPERM);
	CU_ASSERT_EQUAL(weir_setstripe(g, "/pub/dra", &so), 0); /* its own directory: fine */
	weir_umount(g);
	/* the trusted client (the default group) may */
	CU_ASSERT_EQUAL(weir_setstripe(fs, "/", &so), 0);

	/* a copytool holding the guests key: no HSM actions; an OSS: no registration */
	struct net_auth *a;
	struct net_conn *c;
	CU_ASSERT_EQUAL_FATAL(net_auth_new(guest_key, false, &a, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(net_conn_open_auth(th_cluster_mds_addr(cl), 2000, a, &c), 0);
	Weir__HsmFetchReq f = WEIR__HSM_FETCH_REQ__INIT;
	f.agent = (char *)"intruder";
	f.max = 1;
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__MDS_HSM_AGENT_FETCH, &f.base);
	CU_ASSERT_EQUAL(net_call_run(c, &call), -EPERM);
	net_call_fini(&call);
	Weir__OssRegisterReq r = WEIR__OSS_REGISTER_REQ__INIT;
	r.oss_addr = (char *)"127.0.0.1:9";
	net_call_init(&call, WEIR__WIRE_OP__MDS_OSS_REGISTER, &r.base);
	CU_ASSERT_EQUAL(net_call_run(c, &call), -EPERM);
	net_call_fini(&call);
	net_conn_close(c);
	net_auth_free(a);
}

static void test_nodemap_malformed_file_stops_mds(void)
{
	char bad[128], cmd[1024], out[4096];
	snprintf(bad, sizeof(bad), "/tmp/weir-nodemap-bad-%d.ini", (int)getpid());
	static const char txt[] = "[nodemap a]\nkeys = x\ntrusted = perhaps\n";
	CU_ASSERT_EQUAL_FATAL(weir_file_write_atomic(bad, txt, sizeof(txt) - 1), 0);
	snprintf(cmd, sizeof(cmd),
		 "'%s/bin/weir-mds' --mdt /tmp/weir-nm-mdt-%d --listen 127.0.0.1:0 --insecure"
		 " --nodemap %s > %s.out 2>&1",
		 getenv("BUILD") ? getenv("BUILD") : "build", (int)getpid(), bad, bad);
	int st = system(cmd);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	char outp[160];
	snprintf(outp, sizeof(outp), "%s.out", bad);
	ssize_t n = weir_file_read_small(outp, out, sizeof(out));
	CU_ASSERT(n > 0 && strstr(out, "line 3: trusted = perhaps: a bad value"));
	if (n > 0 && !strstr(out, "line 3"))
		fprintf(stderr, "\n%s\n", out);
	unlink(bad);
	unlink(outp);
	snprintf(cmd, sizeof(cmd), "rm -rf /tmp/weir-nm-mdt-%d", (int)getpid());
	CU_ASSERT_EQUAL(system(cmd), 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_nodemap_root_owner_lets_squashed_root_create),
		TH_TEST(test_nodemap_guest_runs_as_squash_ids),
		TH_TEST(test_nodemap_guest_no_admin_operations),
		TH_TEST(test_nodemap_malformed_file_stops_mds),
		TH_TEST_END,
	};
	return th_cunit_run("nodemap", suite_init, suite_clean, tests);
}
