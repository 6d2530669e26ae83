/*
 * tests/integration/test_secnet.c - cluster security across real network
 * namespaces (tests/lib/netns.h): the MDS, two OSSs, two clients and an
 * outsider are hosts of their own, joined by a bridge. The cluster runs
 * with a key (the harness's); the outsider has none, or another cluster's.
 *
 *   - the outsider cannot mount, read, write or destroy objects on an OSS,
 *     register an OST, claim uid 0 or fetch HSM actions: every connection it
 *     makes is refused at the handshake (-EACCES), and the weir CLI says so;
 *   - a trusted client on another host does all of it (I/O, setstripe on /,
 *     a second client reads what the first wrote);
 *   - key rotation: the servers' key file gets a new key first and keeps the
 *     old one: clients with the old key and with the new one work; after the
 *     old key is retired, a client with it is refused and the new one works.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/key.h"
#include "common/util.h"
#include "harness.h"
#include "harness_int.h"
#include "net/auth.h"
#include "net/frame.h"
#include "net/net.h"
#include "netns.h"
#include "th_weir.h"
#include "weir.pb-c.h"

static struct th_net *net;
static struct th_cluster *cl;
static char other_key[160], old_key[160], new_key[160];

static int suite_init(void)
{
	struct th_cluster_opts o = { .tco_nr_oss = 2, .tco_ost_per_oss = 1 };
	if (th_net_start(NULL, &net) || th_net_cluster_start(net, &o, &cl))
		return -1;
	struct weir_keyring kr = { .kr_nr = 1 };
	snprintf(other_key, sizeof(other_key), "%s/other.key", th_net_dir(net));
	if (weir_key_generate("other", &kr.kr_keys[0]) ||
	    weir_keyring_save(other_key, &kr, false))
		return -1;
	return 0;
}

static int suite_clean(void)
{
	int rc = th_cluster_stop(cl);
	th_net_stop(net);
	return rc;
}

struct job {
	const char *key_file; /* NULL: the harness's; "" : none (insecure) */
	const char *path;
	int rc;
};

static weir_fs_t *mount_as(const struct job *j, int *rc)
{
	struct weir_mount_opts mo = { .wmo_size = sizeof(mo) };
	if (j->key_file && !j->key_file[0])
		mo.wmo_insecure = 1;
	else if (j->key_file)
		mo.wmo_key_file = j->key_file;
	weir_fs_t *fs = NULL;
	*rc = weir_mount_with(th_cluster_mds_addr(cl), &mo, &fs);
	return *rc ? NULL : fs;
}

/* On a client host: mount, write j->path, read it back. \return 0 or -errno. */
static int client_rw(void *arg)
{
	struct job *j = arg;
	int rc;
	weir_fs_t *fs = mount_as(j, &rc);
	if (!fs)
		return rc;
	static uint8_t w[300000], r[300000];
	th_fill_pattern(w, sizeof(w), 9);
	rc = th_put(fs, j->path, w, sizeof(w));
	if (!rc && (th_get(fs, j->path, r, sizeof(r)) != (ssize_t)sizeof(r) ||
		    memcmp(w, r, sizeof(w))))
		rc = -EIO;
	weir_umount(fs);
	return rc;
}

/* On a client host: read j->path and compare. */
static int client_read(void *arg)
{
	struct job *j = arg;
	int rc;
	weir_fs_t *fs = mount_as(j, &rc);
	if (!fs)
		return rc;
	static uint8_t w[300000], r[300000];
	th_fill_pattern(w, sizeof(w), 9);
	rc = th_get(fs, j->path, r, sizeof(r)) == (ssize_t)sizeof(r) && !memcmp(w, r, sizeof(w))
		     ? 0
		     : -EIO;
	struct weir_stripe_opts so = { .wso_size = sizeof(so), .wso_stripe_count = 2,
				       .wso_stripe_offset = -1 };
	if (!rc)
		rc = weir_setstripe(fs, "/", &so); /* an admin operation */
	weir_umount(fs);
	return rc;
}

static void test_secnet_trusted_clients_do_everything(void)
{
	struct job a = { .path = "/from-client0" };
	CU_ASSERT_EQUAL(th_host_call(th_net_host(net, TH_NET_HOST_CLIENT0), client_rw, &a), 0);
	CU_ASSERT_EQUAL(th_host_call(th_net_host(net, TH_NET_HOST_CLIENT1), client_read, &a), 0);
}

/* On the outsider: every door, with \a j->key_file (none, or another cluster's). */
static int outsider(void *arg)
{
	struct job *j = arg;
	int rc, bad = 0;
	weir_fs_t *fs = mount_as(j, &rc);
	if (fs || rc != -EACCES) {
		fprintf(stderr, "outsider mount: %d\n", rc);
		bad++;
		weir_umount(fs);
	}
	struct net_auth *a = NULL;
	if (j->key_file[0])
		rc = net_auth_new(j->key_file, false, &a, NULL, 0);
	else
		rc = net_auth_new(NULL, true, &a, NULL, 0);
	if (rc)
		return -999;
	/* the OSS (raw object requests), and the MDS (OST registration, HSM agent) */
	const char *addrs[] = { th_server_addr(cl, 0), th_server_addr(cl, 1),
				th_cluster_mds_addr(cl) };
	for (int i = 0; i < 3; i++) {
		struct net_conn *c = NULL;
		rc = net_conn_open_auth(addrs[i], 2000, a, &c);
		if (rc != -EACCES) {
			fprintf(stderr, "outsider connect %s: %d\n", addrs[i], rc);
			bad++;
		}
		net_conn_close(c);
	}
	net_auth_free(a);
	return bad ? -EPERM : 0;
}

static void test_secnet_outsider_refused_everywhere(void)
{
	struct job none = { .key_file = "" }, other = { .key_file = other_key };
	CU_ASSERT_EQUAL(th_host_call(th_net_host(net, TH_NET_HOST_OUTSIDER), outsider, &none), 0);
	CU_ASSERT_EQUAL(th_host_call(th_net_host(net, TH_NET_HOST_OUTSIDER), outsider, &other), 0);
	/* the weir CLI on the outsider says why */
	char *out = NULL, cmd[512];
	snprintf(cmd, sizeof(cmd), "WEIR_KEY_FILE=%s weir --mds %s df", other_key,
		 th_cluster_mds_addr(cl));
	int st = th_host_sh(th_net_host(net, TH_NET_HOST_OUTSIDER), &out, "%s", cmd);
	CU_ASSERT_EQUAL(st, 1);
	char want[160];
	snprintf(want, sizeof(want), "weir: %s: authentication failed: the cluster key differs (-EACCES)",
		 th_cluster_mds_addr(cl));
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, want));
	if (out && !strstr(out, want))
		fprintf(stderr, "\n%s\n", out);
	free(out);
	/* a raw request without the handshake from the outsider: the socket is closed */
	int fd = th_host_tcp_connect(th_net_host(net, TH_NET_HOST_OUTSIDER), th_server_addr(cl, 0),
				     2000);
	CU_ASSERT_FATAL(fd >= 0);
	uint8_t raw[WEIR_FRAME_HDR_SIZE];
	struct weir_frame_hdr h = { .fh_opcode = WEIR__WIRE_OP__OST_DESTROY, .fh_reqid = 1 };
	weir_frame_encode(&h, raw);
	CU_ASSERT_EQUAL(weir_write_all(fd, raw, sizeof(raw)), 0);
	CU_ASSERT_EQUAL(th_tcp_wait_closed(fd, 5000), 1);
	close(fd);
	/* and the data is intact for the trusted */
	struct job a = { .path = "/from-client0" };
	CU_ASSERT_EQUAL(th_host_call(th_net_host(net, TH_NET_HOST_CLIENT1), client_read, &a), 0);
}

/* count of lines of \a path that contain \a needle (0 when unreadable) */
static int grep_count(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[4096];
	int n = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			n++;
	fclose(f);
	return n;
}

/*
 * The outsider runs the real servers with another cluster's key: a weir-oss
 * that tries to register a new OST, and a weir-hsmd that asks for HSM
 * actions. Neither gets in: the MDS lists only its own 2 OSTs, both programs
 * log the refusal, the MDS logs the refused peers.
 */
static void test_secnet_outsider_servers_refused(void)
{
	struct th_host *o = th_net_host(net, TH_NET_HOST_OUTSIDER);
	char ost[PATH_MAX], oss_log[PATH_MAX], hsm_log[PATH_MAX];
	snprintf(ost, sizeof(ost), "%s/outsider-ost", th_net_dir(net));
	snprintf(oss_log, sizeof(oss_log), "%s/outsider-oss.log", th_net_dir(net));
	snprintf(hsm_log, sizeof(hsm_log), "%s/outsider-hsmd.log", th_net_dir(net));
	char listen[64];
	snprintf(listen, sizeof(listen), "%s:0", th_host_ip(o));
	pid_t oss = 0, hsm = 0;
	CU_ASSERT_EQUAL_FATAL(th_host_spawn(o,
					    (const char *const[]){ "weir-oss", "--mds",
								   th_cluster_mds_addr(cl), "--ost", ost,
								   "--listen", listen, "--key-file",
								   other_key, "--heartbeat", "1",
								   "--log", "stderr", NULL },
					    oss_log, &oss),
			      0);
	CU_ASSERT_EQUAL_FATAL(th_host_spawn(o,
					    (const char *const[]){ "weir-hsmd", "--mds",
								   th_cluster_mds_addr(cl), "--key-file",
								   other_key, "--threads", "1",
								   "--s3-endpoint", "http://127.0.0.1:9",
								   "--s3-access-key-id", "x",
								   "--s3-secret-access-key", "y",
								   "--log", "stderr", NULL },
					    hsm_log, &hsm),
			      0);
	/* a few heartbeats' time: each tries and is refused */
	for (int i = 0; i < 50 && (grep_count(oss_log, "authentication failed") == 0 ||
				   grep_count(hsm_log, "authentication failed") == 0);
	     i++)
		th_sleep_ms(100);
	th_sleep_ms(2000);
	CU_ASSERT(grep_count(oss_log, "authentication failed") >= 1);
	CU_ASSERT(grep_count(oss_log, "refused this OSS's cluster key") >= 1);
	CU_ASSERT_EQUAL(grep_count(oss_log, "ost.secret) is not the one"), 0);
	CU_ASSERT(grep_count(hsm_log, "authentication failed") >= 1);
	if (grep_count(hsm_log, "authentication failed") < 1 ||
	    grep_count(oss_log, "authentication failed") < 1) {
		th_log_tail("outsider weir-oss", oss_log, 10);
		th_log_tail("outsider weir-hsmd", hsm_log, 10);
	}
	/* the MDS's view, from a trusted client: its own two OSTs, nothing else */
	char *out = NULL;
	int st = th_host_sh(th_net_host(net, TH_NET_HOST_CLIENT0), &out, "weir --mds %s df",
			    th_cluster_mds_addr(cl));
	CU_ASSERT_EQUAL(st, 0);
	int n = 0;
	for (const char *p = out; p && (p = strstr(p, "OST")); p += 3)
		if (strncmp(p, "OST0000", 7) && strncmp(p, "OST0001", 7) && strncmp(p, "OST_", 4) &&
		    p[3] >= '0' && p[3] <= '9')
			n++;
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "OST0000"));
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "OST0001"));
	CU_ASSERT_PTR_NULL(out && strstr(out, "OST0002"));
	if (st || !out || strstr(out, "OST0002"))
		fprintf(stderr, "\n%s\n", out ? out : "");
	free(out);
	/* the refusals, on the MDS's side, name the outsider's address */
	char mds_log[PATH_MAX];
	snprintf(mds_log, sizeof(mds_log), "%s/mds.log", th_cluster_dir(cl));
	char peer[64];
	snprintf(peer, sizeof(peer), "peer=%s:", th_host_ip(o));
	CU_ASSERT(grep_count(mds_log, peer) >= 1);
	th_host_stop(o, oss);
	th_host_stop(o, hsm);
}

static void test_secnet_rotation_old_key_until_retired(void)
{
	const char *kf = th_cluster_key_file(cl);
	struct weir_keyring cur, nk = { .kr_nr = 1 }, both = { .kr_nr = 2 };
	CU_ASSERT_EQUAL_FATAL(weir_keyring_load(kf, &cur, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(weir_key_generate("next", &nk.kr_keys[0]), 0);
	both.kr_keys[0] = nk.kr_keys[0];
	both.kr_keys[1] = cur.kr_keys[0];
	snprintf(old_key, sizeof(old_key), "%s/old.key", th_net_dir(net));
	snprintf(new_key, sizeof(new_key), "%s/new.key", th_net_dir(net));
	CU_ASSERT_EQUAL_FATAL(weir_keyring_save(old_key, &cur, false), 0);
	CU_ASSERT_EQUAL_FATAL(weir_keyring_save(new_key, &nk, false), 0);
	/* step 1: the servers accept both (they re-read the file within a second) */
	th_sleep_ms(1100);
	CU_ASSERT_EQUAL_FATAL(weir_keyring_save(kf, &both, false), 0);
	chmod(kf, 0640);
	th_sleep_ms(1200);
	struct job o1 = { .key_file = old_key, .path = "/rot-old" };
	struct job n1 = { .key_file = new_key, .path = "/rot-new" };
	CU_ASSERT_EQUAL(th_host_call(th_net_host(net, TH_NET_HOST_CLIENT0), client_rw, &o1), 0);
	CU_ASSERT_EQUAL(th_host_call(th_net_host(net, TH_NET_HOST_CLIENT1), client_rw, &n1), 0);
	/* step 3: the old key retired: refused; the new one works */
	CU_ASSERT_EQUAL_FATAL(weir_keyring_save(kf, &nk, false), 0);
	chmod(kf, 0640);
	th_sleep_ms(1200);
	CU_ASSERT_EQUAL(th_host_call(th_net_host(net, TH_NET_HOST_CLIENT0), client_rw, &o1),
			-EACCES);
	CU_ASSERT_EQUAL(th_host_call(th_net_host(net, TH_NET_HOST_CLIENT1), client_rw, &n1), 0);
	/* the servers themselves moved: the OSSs still register (their file is the same) */
	CU_ASSERT_EQUAL(th_cluster_wait_up(cl, 10000), 0);
}

int main(void)
{
	th_net_require();
	static const struct th_test tests[] = {
		TH_TEST(test_secnet_trusted_clients_do_everything),
		TH_TEST(test_secnet_outsider_refused_everywhere),
		TH_TEST(test_secnet_outsider_servers_refused),
		TH_TEST(test_secnet_rotation_old_key_until_retired),
		TH_TEST_END,
	};
	return th_cunit_run("secnet", suite_init, suite_clean, tests);
}
