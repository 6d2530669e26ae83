/*
 * tests/integration/test_netns.c - the several-hosts harness (tests/lib/
 * netns.h) itself: a cluster across network namespaces (MDS on host mds,
 * one OSS with two OSTs on each of oss0 and oss1, registered over the
 * bridge); a striped file written by an in-process client on client0 and
 * read back byte-exact on client1; the outsider host reaches the MDS, and
 * without the cluster key is refused (test_secnet tries every door from
 * there); programs spawned, run
 * and stopped on hosts; CUnit failures in a host's child reach the test;
 * nothing is added to the machine's own namespace; and nothing is left
 * behind after a clean stop, a SIGTERM, or a kill -9 (swept by the next
 * test).
 *
 * Skips (77) where network namespaces cannot be made (not root, ...).
 * The binary also runs as its own helper: "test_netns --hold-net" starts
 * a network, prints its tag and waits to be killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/util.h"
#include "harness.h"
#include "netns.h"
#include "th_weir.h"

#define KIB 1024ULL
#define MIB (1024ULL * 1024ULL)
#define FILE_LEN (3 * MIB + 12345)

static struct th_net *net;
static struct th_cluster *cl;
static unsigned root_links; /* interfaces of the machine's namespace before the network */

static unsigned count_links(void)
{
	struct if_nameindex *ni = if_nameindex();
	unsigned n = 0;
	for (struct if_nameindex *i = ni; i && i->if_index; i++)
		n++;
	if (ni)
		if_freenameindex(ni);
	return n;
}

static int suite_init(void)
{
	root_links = count_links();
	if (th_net_start(NULL, &net))
		return -1;
	/* one OSS with two OSTs on each oss host */
	struct th_cluster_opts o = { .tco_ost_per_oss = 2 };
	return th_net_cluster_start(net, &o, &cl) ? -1 : 0;
}

static int suite_clean(void)
{
	int rc = th_cluster_stop(cl);
	return th_net_stop(net) || rc ? -1 : 0;
}

static struct th_host *host(const char *name)
{
	struct th_host *h = th_net_host(net, name);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	return h;
}

/* The inode of \a pid's network namespace ("self" when 0), or 0. */
static ino_t pid_netns(pid_t pid)
{
	char p[64];
	struct stat st;
	if (pid)
		snprintf(p, sizeof(p), "/proc/%d/ns/net", (int)pid);
	else
		snprintf(p, sizeof(p), "/proc/thread-self/ns/net");
	return stat(p, &st) ? 0 : st.st_ino;
}

static ino_t host_netns(const struct th_host *h)
{
	char p[160];
	struct stat st;
	snprintf(p, sizeof(p), "/run/netns/%s", th_host_netns(h));
	return stat(p, &st) ? 0 : st.st_ino;
}

/* "IP" of an "IP:PORT" starts \a addr. */
static bool addr_on(const char *addr, const struct th_host *h)
{
	size_t l = strlen(th_host_ip(h));
	return !strncmp(addr, th_host_ip(h), l) && addr[l] == ':';
}

/* The local address of a connection from here to \a addr, in \a ip. */
static int local_ip_to(struct th_host *h, const char *addr, char *ip, size_t len)
{
	int fd = th_host_tcp_connect(h, addr, 5000);
	if (fd < 0)
		return fd;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int rc = getsockname(fd, (struct sockaddr *)&sa, &sl) ? -errno : 0;
	if (!rc)
		inet_ntop(AF_INET, &sa.sin_addr, ip, (socklen_t)len);
	close(fd);
	return rc;
}

/* ------------------------------------------------------------ the cluster */

static void test_netns_cluster_servers_on_their_hosts(void)
{
	struct th_host *mds = host(TH_NET_HOST_MDS);
	CU_ASSERT(addr_on(th_cluster_mds_addr(cl), mds));
	CU_ASSERT_EQUAL(pid_netns(th_server_pid(cl, TH_MDS)), host_netns(mds));
	CU_ASSERT_NOT_EQUAL(host_netns(mds), pid_netns(0));
	CU_ASSERT_EQUAL_FATAL(th_cluster_nr_oss(cl), 2);
	for (int i = 0; i < 2; i++) {
		struct th_host *oss = host(i ? TH_NET_HOST_OSS1 : TH_NET_HOST_OSS0);
		CU_ASSERT(addr_on(th_server_addr(cl, i), oss));
		CU_ASSERT_EQUAL(pid_netns(th_server_pid(cl, i)), host_netns(oss));
	}
	/* the MDS's map lists each OST at its OSS host's address (weir df, run on host mds) */
	CU_ASSERT_EQUAL_FATAL(th_cluster_cli(cl, "df"), 0);
	char out[8192];
	ssize_t n = weir_file_read_small(th_cluster_cli_out(cl), out, sizeof(out));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "OST0003"));
}

struct io_job {
	const char *ij_mds;
	const char *ij_path;
	uint8_t *ij_buf;
	size_t ij_len;
	const char *ij_expect_ip; /* the client host's address */
	ino_t ij_expect_ns;
};

static int client_on_host_check(const struct io_job *j)
{
	CU_ASSERT_EQUAL(pid_netns(0), j->ij_expect_ns);
	/* the connection to the MDS comes from the client host's address */
	int fd = -1;
	char host_s[64];
	uint16_t port;
	sscanf(j->ij_mds, "%63[^:]:%hu", host_s, &port);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	inet_pton(AF_INET, host_s, &sa.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	socklen_t sl = sizeof(sa);
	CU_ASSERT_EQUAL(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
	CU_ASSERT_STRING_EQUAL(ip, j->ij_expect_ip);
	close(fd);
	return 0;
}

static int writer(void *arg)
{
	struct io_job *j = arg;
	client_on_host_check(j);
	weir_fs_t *fs = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_mount(j->ij_mds, &fs), 0);
	CU_ASSERT_EQUAL(th_stripe_dir(fs, "/striped", 4, 64 * KIB), 0);
	int rc = th_put(fs, j->ij_path, j->ij_buf, j->ij_len);
	CU_ASSERT_EQUAL(rc, 0);
	struct weir_layout_info li;
	CU_ASSERT_EQUAL(weir_getstripe(fs, j->ij_path, &li), 0);
	CU_ASSERT_EQUAL(li.wli_stripe_count, 4);
	for (uint32_t i = 0; i < li.wli_stripe_count && i < 4; i++)
		CU_ASSERT(li.wli_objs[i].woi_size > 0);
	CU_ASSERT_EQUAL(weir_umount(fs), 0);
	return rc;
}

static int reader(void *arg)
{
	struct io_job *j = arg;
	client_on_host_check(j);
	weir_fs_t *fs = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_mount(j->ij_mds, &fs), 0);
	uint8_t *r = malloc(j->ij_len + 100);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	ssize_t got = th_get(fs, j->ij_path, r, j->ij_len + 100);
	CU_ASSERT_EQUAL(got, (ssize_t)j->ij_len);
	long at = th_diff_at(j->ij_buf, r, j->ij_len);
	if (at >= 0)
		printf("\n  first difference at byte %ld\n", at);
	CU_ASSERT_EQUAL(at, -1);
	free(r);
	CU_ASSERT_EQUAL(weir_umount(fs), 0);
	return got == (ssize_t)j->ij_len && at < 0 ? 0 : -EIO;
}

static void test_netns_striped_file_written_on_client0_reads_back_on_client1(void)
{
	uint8_t *buf = malloc(FILE_LEN);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	th_fill_pattern(buf, FILE_LEN, 1313);
	struct th_host *c0 = host(TH_NET_HOST_CLIENT0), *c1 = host(TH_NET_HOST_CLIENT1);
	struct io_job j = { .ij_mds = th_cluster_mds_addr(cl),
			    .ij_path = "/striped/f",
			    .ij_buf = buf,
			    .ij_len = FILE_LEN,
			    .ij_expect_ip = th_host_ip(c0),
			    .ij_expect_ns = host_netns(c0) };
	CU_ASSERT_EQUAL(th_host_call(c0, writer, &j), 0);
	j.ij_expect_ip = th_host_ip(c1);
	j.ij_expect_ns = host_netns(c1);
	CU_ASSERT_EQUAL(th_host_call(c1, reader, &j), 0);
	free(buf);
}

static void test_netns_outsider_reaches_the_mds(void)
{
	struct th_host *out_h = host(TH_NET_HOST_OUTSIDER);
	char ip[INET_ADDRSTRLEN] = "";
	CU_ASSERT_EQUAL(local_ip_to(out_h, th_cluster_mds_addr(cl), ip, sizeof(ip)), 0);
	CU_ASSERT_STRING_EQUAL(ip, th_host_ip(out_h));
	/* it reaches it, but without the cluster key it is refused at the handshake
	 * (the security tests, test_secnet, try every door) */
	char *out = NULL;
	int st = th_host_sh(out_h, &out, "env -u WEIR_KEY_FILE WEIR_INSECURE=1 weir --mds %s df",
			    th_cluster_mds_addr(cl));
	CU_ASSERT_EQUAL(st, 1);
	CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "authentication failed"));
	if (st != 1 || !out || !strstr(out, "authentication failed"))
		printf("\n  weir df on outsider: %s\n", out ? out : "");
	free(out);
	/* nothing listens on the outsider: a connection to it is refused, not lost */
	char addr[64];
	snprintf(addr, sizeof(addr), "%s:7", th_host_ip(out_h));
	CU_ASSERT_EQUAL(th_host_tcp_connect(host(TH_NET_HOST_CLIENT0), addr, 5000),
			-ECONNREFUSED);
}

/* ------------------------------------------------------------ programs */

static void test_netns_host_run_spawn_stop(void)
{
	struct th_host *c0 = host(TH_NET_HOST_CLIENT0), *c1 = host(TH_NET_HOST_CLIENT1);
	char *out = NULL;
	CU_ASSERT_EQUAL(th_host_sh(c0, &out, "PATH=$PATH:/usr/sbin:/sbin; echo on $(ip -4 -o "
					     "addr show dev eth0 | awk '{print $4}'); exit 3"),
			3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	char want[64];
	snprintf(want, sizeof(want), "on %s/24\n", th_host_ip(c0));
	CU_ASSERT_STRING_EQUAL(out, want);
	free(out);
	out = NULL;
	CU_ASSERT_EQUAL(th_host_run(c0, (const char *const[]){ "no-such-program-here", NULL },
				    &out), -ENOENT);
	free(out);

	pid_t pid = 0;
	CU_ASSERT_EQUAL_FATAL(th_host_spawn(c1, (const char *const[]){ "sleep", "60", NULL }, NULL,
					    &pid), 0);
	th_sleep_ms(100); /* past its exec */
	CU_ASSERT_EQUAL(pid_netns(pid), host_netns(c1));
	CU_ASSERT_EQUAL(th_host_stop(c0, pid), -ECHILD); /* not c0's */
	CU_ASSERT_EQUAL(th_host_stop(c1, pid), 0);
	CU_ASSERT_EQUAL(th_host_stop(c1, pid), -ECHILD); /* gone */
	CU_ASSERT_NOT_EQUAL(kill(pid, 0), 0);
	/* its log is where the header says */
	char log[512];
	snprintf(log, sizeof(log), "%s/client1-sleep.log", th_net_dir(net));
	CU_ASSERT_EQUAL(access(log, R_OK), 0);
}

static int fails_twice(void *arg)
{
	(void)arg;
	CU_ASSERT_EQUAL(1 + 1, 3);
	CU_ASSERT_FATAL(arg == (void *)1);
	CU_ASSERT(0); /* not reached */
	return 0;
}

static int returns_7(void *arg)
{
	(void)arg;
	return 7;
}

/* "--inner-run": a CUnit run of its own whose host calls fail on purpose */
static struct th_net *inner_net;

static int inner_init(void)
{
	static const char *const solo[] = { "solo", NULL };
	struct th_net_opts o = { .tno_hosts = solo };
	return th_net_start(&o, &inner_net) ? -1 : 0;
}

static int inner_clean(void)
{
	return th_net_stop(inner_net) ? -1 : 0;
}

static void inner_test(void)
{
	struct th_host *h = th_net_host(inner_net, "solo");
	CU_ASSERT_EQUAL(th_host_call(h, fails_twice, NULL), -ECANCELED);
	CU_ASSERT_EQUAL(th_host_call(h, returns_7, NULL), 7);
}

static int inner_run(void)
{
	static const struct th_test inner[] = { TH_TEST(inner_test), TH_TEST_END };
	return th_cunit_run("inner", inner_init, inner_clean, inner);
}

/*
 * Start this binary with \a arg, its stdout (and stderr when \a err) into a
 * pipe whose read end is *\a rfd. \return its pid, or -1.
 */
static pid_t self_exec(const char *arg, bool err, int *rfd)
{
	int pfd[2];
	if (pipe(pfd))
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		if (err)
			dup2(pfd[1], 2);
		close(pfd[0]);
		close(pfd[1]);
		execl("/proc/self/exe", "test_netns", arg, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	if (pid < 0)
		close(pfd[0]);
	*rfd = pfd[0];
	return pid;
}

/* Run this binary with \a arg, its stdout and stderr into \a buf. \return its wait status. */
static int run_self(const char *arg, char *buf, size_t len)
{
	int fd;
	pid_t pid = self_exec(arg, true, &fd);
	if (pid < 0)
		return -1;
	size_t n = 0;
	ssize_t r;
	while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = 0;
	close(fd);
	int st = -1;
	waitpid(pid, &st, 0);
	return st;
}

/* A CUnit run (in a process of its own): failures in its host calls count there. */
static void test_netns_host_call_failures_reach_the_test(void)
{
	static char buf[65536];
	int st = run_self("--inner-run", buf, sizeof(buf));
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "asserts      4      4      2      2"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "test_netns.c:"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "[on host solo] CU_ASSERT_EQUAL(1 + 1,3)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "[on host solo] arg == (void *)1"));
	CU_ASSERT_PTR_NULL(strstr(buf, "[on host solo] 0"));
	if (th_failed())
		printf("\n  the inner run said:\n%s\n", buf);
}

/* ------------------------------------------------------------ the machine */

static void test_netns_machine_namespace_untouched(void)
{
	CU_ASSERT_EQUAL(count_links(), root_links);
	struct ifaddrs *ifa = NULL;
	CU_ASSERT_EQUAL_FATAL(getifaddrs(&ifa), 0);
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		char a[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a, sizeof(a));
		CU_ASSERT(strncmp(a, TH_NET_PREFIX ".", strlen(TH_NET_PREFIX) + 1) != 0);
	}
	freeifaddrs(ifa);
}

/* Start "test_netns --hold-net" and read the tag it prints. \return its pid. */
static pid_t start_holder(char *tag, size_t len)
{
	int fd;
	pid_t pid = self_exec("--hold-net", false, &fd);
	if (pid < 0)
		return -1;
	FILE *f = fdopen(fd, "r");
	char line[128] = "";
	if (!f || !fgets(line, sizeof(line), f))
		line[0] = 0;
	if (f)
		fclose(f);
	line[strcspn(line, "\n")] = 0;
	if (strncmp(line, "TAG ", 4)) {
		fprintf(stderr, "\n  the holder said '%s'\n", line);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	snprintf(tag, len, "%.40s", line + 4);
	return pid;
}

static void test_netns_sigterm_removes_the_network(void)
{
	char tag[64];
	pid_t pid = start_holder(tag, sizeof(tag));
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT(th_net_leftovers(tag, false) == 7); /* the switch and the 6 hosts */
	kill(pid, SIGTERM);
	int st = 0;
	waitpid(pid, &st, 0);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	CU_ASSERT_EQUAL(th_net_leftovers(tag, true), 0);
}

static void test_netns_kill9_leftovers_swept_by_next_start(void)
{
	char tag[64];
	pid_t pid = start_holder(tag, sizeof(tag));
	CU_ASSERT_FATAL(pid > 0);
	kill(pid, SIGKILL);
	/* dead but not reaped: no sweep (ours or a parallel test's) takes them yet */
	siginfo_t si;
	CU_ASSERT_EQUAL(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	CU_ASSERT(th_net_leftovers(tag, false) == 7);
	waitpid(pid, NULL, 0);
	struct th_net *n2 = NULL;
	static const char *const one[] = { "solo", NULL };
	struct th_net_opts o = { .tno_hosts = one };
	CU_ASSERT_EQUAL_FATAL(th_net_start(&o, &n2), 0);
	CU_ASSERT_EQUAL(th_net_leftovers(tag, true), 0);
	CU_ASSERT_STRING_EQUAL(th_host_ip(th_net_host(n2, "solo")), TH_NET_PREFIX ".11");
	CU_ASSERT_NOT_EQUAL(strcmp(th_net_tag(n2), th_net_tag(net)), 0);
	CU_ASSERT_EQUAL(th_net_stop(n2), 0);
}

static int sleeps(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return 0;
}

/*
 * th_net_stop() kills what is still on a host (here a call nobody waits
 * for), and reports a namespace something still holds (here an open file).
 */
static void test_netns_stop_kills_leftovers_and_reports_holders(void)
{
	static const char *const two[] = { "left", "held", NULL };
	struct th_net_opts o = { .tno_hosts = two };
	struct th_net *n2 = NULL;
	CU_ASSERT_EQUAL_FATAL(th_net_start(&o, &n2), 0);
	char tag[64], path[160];
	snprintf(tag, sizeof(tag), "%s", th_net_tag(n2));
	struct th_call *call = NULL;
	CU_ASSERT_EQUAL_FATAL(th_host_call_start(th_net_host(n2, "left"), sleeps, NULL, &call), 0);
	snprintf(path, sizeof(path), "/run/netns/%s", th_host_netns(th_net_host(n2, "held")));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(th_net_stop(n2), -EBUSY);
	CU_ASSERT_EQUAL(th_host_call_wait(call), -ECHILD); /* SIGKILLed by th_net_stop() */
	CU_ASSERT_EQUAL(th_net_leftovers(tag, true), 0);
	close(fd); /* the last hold: the namespace goes now */
}

/* Last: stop everything, and nothing is left. */
static void test_netns_clean_stop_leaves_nothing(void)
{
	char tag[64];
	snprintf(tag, sizeof(tag), "%s", th_net_tag(net));
	CU_ASSERT(th_net_leftovers(tag, false) == 7);
	/* a program still running on a host is stopped too */
	pid_t pid = 0;
	CU_ASSERT_EQUAL(th_host_spawn(host(TH_NET_HOST_OSS0),
				      (const char *const[]){ "sleep", "60", NULL }, NULL, &pid),
			0);
	CU_ASSERT_EQUAL(th_cluster_stop(cl), 0);
	cl = NULL;
	CU_ASSERT_EQUAL(th_net_stop(net), 0); /* checks no process, mount or fd holds one */
	net = NULL;
	CU_ASSERT_EQUAL(th_net_leftovers(tag, true), 0);
	CU_ASSERT_NOT_EQUAL(kill(pid, 0), 0);
	CU_ASSERT_EQUAL(count_links(), root_links);
}

/* "--hold-net": the helper of the two tests above. */
static int hold_net(void)
{
	struct th_net *n = NULL;
	if (th_net_start(NULL, &n))
		return 1;
	printf("TAG %s\n", th_net_tag(n));
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	th_net_require();
	if (argc > 1 && !strcmp(argv[1], "--hold-net"))
		return hold_net();
	if (argc > 1 && !strcmp(argv[1], "--inner-run"))
		return inner_run();
	static const struct th_test tests[] = {
		TH_TEST(test_netns_cluster_servers_on_their_hosts),
		TH_TEST(test_netns_striped_file_written_on_client0_reads_back_on_client1),
		TH_TEST(test_netns_outsider_reaches_the_mds),
		TH_TEST(test_netns_host_run_spawn_stop),
		TH_TEST(test_netns_host_call_failures_reach_the_test),
		TH_TEST(test_netns_machine_namespace_untouched),
		TH_TEST(test_netns_sigterm_removes_the_network),
		TH_TEST(test_netns_kill9_leftovers_swept_by_next_start),
		TH_TEST(test_netns_stop_kills_leftovers_and_reports_holders),
		TH_TEST(test_netns_clean_stop_leaves_nothing),
		TH_TEST_END,
	};
	return th_cunit_run("netns", suite_init, suite_clean, tests);
}
