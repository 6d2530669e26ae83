/*
 * tests/lib/s3srv.c - s3rver for the S3 tests; see s3srv.h.
 */
#define _GNU_SOURCE
#include "s3srv.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/s3.h"
#include "harness.h"

#define S3SRV_MAX 4

struct th_s3rver {
	pid_t ss_pid;
	uint16_t ss_port;
	char ss_dir[64];
	char ss_log[96];
	char ss_js[PATH_MAX];
	char ss_node[PATH_MAX];
	char ss_endpoint[64];
};

static struct th_s3rver *s3srv_live[S3SRV_MAX];
static bool s3srv_atexit_set;
static pid_t s3srv_owner;

static void s3srv_atexit(void)
{
	if (getpid() != s3srv_owner)
		return;
	for (int i = 0; i < S3SRV_MAX; i++)
		if (s3srv_live[i])
			th_s3rver_free(s3srv_live[i]);
}

static bool is_file(const char *p, bool exec)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && (!exec || access(p, X_OK) == 0);
}

static int find_node(char *out, size_t len)
{
	const char *path = getenv("PATH");
	char buf[4096], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path ? path : "/usr/bin:/bin");
	for (char *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/node", d);
		if (is_file(out, true))
			return 0;
	}
	return -ENOENT;
}

static int find_s3rver(char *out, size_t len)
{
	const char *env = getenv("WEIR_S3RVER"), *b = getenv("BUILD");
	char exe[PATH_MAX], root[PATH_MAX - 64];
	ssize_t n;

	if (env && env[0]) {
		snprintf(out, len, "%s", env);
		return is_file(out, false) ? 0 : -ENOENT;
	}
	if (b && b[0]) {
		char tmp[PATH_MAX - 64];
		snprintf(tmp, sizeof(tmp), "%s", b);
		snprintf(root, sizeof(root), "%s", dirname(tmp));
		snprintf(out, len, "%s/.deps/node_modules/s3rver/bin/s3rver.js", root);
		if (is_file(out, false))
			return 0;
	}
	/* BUILD/tests/<group>/test_x: the repo is four levels up */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *p = exe;
		for (int i = 0; i < 4; i++)
			p = dirname(p);
		snprintf(root, sizeof(root), "%s", p);
		snprintf(out, len, "%s/.deps/node_modules/s3rver/bin/s3rver.js", root);
		if (is_file(out, false))
			return 0;
	}
	return -ENOENT;
}

static int free_port(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	*port = ntohs(a.sin_port);
	close(fd);
	return 0;
}

/* Does an HTTP GET / on the port get any HTTP answer? */
static bool answers(uint16_t port)
{
	char buf[64];
	int fd = th_tcp_connect(port);
	bool ok = false;

	if (fd < 0)
		return false;
	static const char req[] = "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
	struct timeval tv = { 2, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (write(fd, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1 &&
	    read(fd, buf, sizeof(buf)) >= 5 && memcmp(buf, "HTTP/", 5) == 0)
		ok = true;
	close(fd);
	return ok;
}

void th_s3rver_dump_log(const struct th_s3rver *s, int lines)
{
	char cmd[256];
	fprintf(stderr, "----- s3rver log %s (last %d lines)\n", s->ss_log, lines);
	snprintf(cmd, sizeof(cmd), "tail -n %d '%s' >&2", lines, s->ss_log);
	if (system(cmd) != 0)
		fprintf(stderr, "(no log)\n");
}

static int spawn(struct th_s3rver *s)
{
	char port[16], data[96];
	uint64_t t0;
	pid_t pid;

	snprintf(port, sizeof(port), "%u", s->ss_port);
	snprintf(data, sizeof(data), "%s/data", s->ss_dir);
	mkdir(data, 0700);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(s->ss_log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		setenv("NODE_OPTIONS", "--openssl-legacy-provider", 1);
		execl(s->ss_node, "node", s->ss_js, "-d", data, "-a", "127.0.0.1", "-p", port,
		      "--silent", (char *)NULL);
		_exit(127);
	}
	s->ss_pid = pid;
	t0 = th_now_ms();
	while (th_now_ms() - t0 < 20000) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			s->ss_pid = 0;
			fprintf(stderr, "s3rver exited during start-up (status 0x%x)\n", st);
			th_s3rver_dump_log(s, 30);
			return -ECHILD;
		}
		if (answers(s->ss_port))
			return 0;
		th_sleep_ms(50);
	}
	fprintf(stderr, "s3rver did not answer on port %u within 20 s\n", s->ss_port);
	th_s3rver_dump_log(s, 30);
	th_s3rver_stop(s);
	return -ETIMEDOUT;
}

int th_s3rver_start_env(const char *test, const char *bucket, struct weir_s3_conf *conf,
			struct th_s3rver **out)
{
	char why[256];
	int rc = th_s3rver_start(out, why, sizeof(why));

	if (rc == -ENOENT) {
		printf("SKIP: %s\n", why);
		return 77;
	}
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", test, why);
		return 1;
	}
	setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
	setenv("AWS_ENDPOINT_URL", th_s3rver_endpoint(*out), 1);
	setenv("AWS_REGION", "us-east-1", 1);
	weir_s3_conf_init(conf);
	if (weir_s3_conf_from_env(conf) < 0)
		return 1;
	snprintf(conf->sc_bucket, sizeof(conf->sc_bucket), "%s", bucket);
	return 0;
}

int th_s3rver_start(struct th_s3rver **out, char *why, size_t whylen)
{
	struct th_s3rver *s = calloc(1, sizeof(*s));
	int rc, slot = -1;

	if (!s)
		return -ENOMEM;
	if (find_node(s->ss_node, sizeof(s->ss_node)) < 0) {
		snprintf(why, whylen, "node is not installed (run deploy/deps.sh)");
		free(s);
		return -ENOENT;
	}
	if (find_s3rver(s->ss_js, sizeof(s->ss_js)) < 0) {
		snprintf(why, whylen, "s3rver is not installed under .deps/ (run deploy/deps.sh)");
		free(s);
		return -ENOENT;
	}
	for (int i = 0; i < S3SRV_MAX; i++)
		if (!s3srv_live[i]) {
			slot = i;
			break;
		}
	snprintf(s->ss_dir, sizeof(s->ss_dir), "/tmp/weir-s3-XXXXXX");
	if (slot < 0 || !mkdtemp(s->ss_dir)) {
		snprintf(why, whylen, "cannot make a directory for s3rver");
		free(s);
		return -EMFILE;
	}
	snprintf(s->ss_log, sizeof(s->ss_log), "%s/s3rver.log", s->ss_dir);
	if (!s3srv_atexit_set) {
		s3srv_owner = getpid();
		atexit(s3srv_atexit);
		s3srv_atexit_set = true;
	}
	s3srv_live[slot] = s;
	for (int attempt = 0; attempt < 3; attempt++) {
		rc = free_port(&s->ss_port);
		if (rc == 0)
			rc = spawn(s);
		if (rc == 0)
			break;
	}
	if (rc < 0) {
		snprintf(why, whylen, "s3rver did not start: %s", strerror(-rc));
		th_s3rver_free(s);
		return rc;
	}
	snprintf(s->ss_endpoint, sizeof(s->ss_endpoint), "http://127.0.0.1:%u", s->ss_port);
	*out = s;
	return 0;
}

int th_s3rver_stop(struct th_s3rver *s)
{
	uint64_t t0;
	int st;

	if (!s->ss_pid)
		return -ESRCH;
	kill(s->ss_pid, SIGTERM);
	t0 = th_now_ms();
	while (waitpid(s->ss_pid, &st, WNOHANG) == 0) {
		if (th_now_ms() - t0 > 5000) {
			kill(s->ss_pid, SIGKILL);
			waitpid(s->ss_pid, &st, 0);
			break;
		}
		th_sleep_ms(20);
	}
	s->ss_pid = 0;
	return 0;
}

int th_s3rver_restart(struct th_s3rver *s)
{
	if (s->ss_pid)
		return -EALREADY;
	return spawn(s);
}

void th_s3rver_free(struct th_s3rver *s)
{
	const char *keep = getenv("TH_KEEP");

	if (!s)
		return;
	th_s3rver_stop(s);
	if (th_failed())
		th_s3rver_dump_log(s, 20);
	if (!(keep && strcmp(keep, "1") == 0))
		th_rm_rf(s->ss_dir);
	for (int i = 0; i < S3SRV_MAX; i++)
		if (s3srv_live[i] == s)
			s3srv_live[i] = NULL;
	free(s);
}

const char *th_s3rver_endpoint(const struct th_s3rver *s)
{
	return s->ss_endpoint;
}
