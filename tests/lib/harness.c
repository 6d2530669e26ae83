/*
 * tests/lib/harness.c - see harness.h.
 *
 * DESIGN. Everything runs on the test's main thread. Servers are children
 * made by fork/exec; the child side between fork and exec calls only
 * async-signal-safe functions (tests may hold libweir threads when they
 * restart a server). Every live cluster is in th_live[] so the atexit and
 * fatal-signal handlers can kill its servers and remove its directory; both
 * act only in the process that started the cluster (th_owner).
 */
#define _GNU_SOURCE
#include "harness.h"
#include "harness_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "common/log.h"
#include "common/util.h"
#include "common/key.h"
#include "net/auth.h"
#include "net/net.h"
#include "weir.pb-c.h"

#define TH_MAX_OSS 16
#define TH_MAX_OST_PER_OSS 8
#define TH_MAX_ARGS 64
#define TH_MAX_LIVE 8
#define TH_STOP_GRACE_MS 10000
#define TH_PORT_WAIT_MS 30000
#define TH_LOG_TAIL_LINES 60

extern char **environ;

struct th_server {
	int sv_id;                  /* TH_MDS or OSS index */
	char sv_name[16];           /* "mds", "oss0" */
	pid_t sv_pid;               /* 0 when not running */
	uint16_t sv_port;           /* 0 until first start */
	char sv_addr[64];           /* IP:PORT, 127.0.0.1 unless placed elsewhere */
	char sv_ip[46];             /* th_place.tp_ip, default 127.0.0.1 */
	char sv_netns[64];          /* th_place.tp_netns; "" = the test's namespace */
	char sv_log[PATH_MAX];
	char sv_port_file[PATH_MAX];
	int sv_bad_exit;            /* died or exited uncleanly at some point */
};

struct th_cluster {
	char cl_dir[256];         /* /tmp/weir-test-XXXXXX */
	char cl_bin[PATH_MAX];
	int cl_nr_oss;
	int cl_ost_per_oss;
	int cl_heartbeat_s;
	uint32_t cl_up_timeout_ms;
	const char *const *cl_mds_args;
	const char *const *cl_oss_args;
	const char *const *cl_ost_dirs;  /* th_cluster_opts.tco_ost_dirs */
	bool cl_insecure;                /* th_cluster_opts.tco_insecure */
	char cl_key_file[300];           /* DIR/cluster.key, "" when insecure */
	struct net_auth *cl_auth;        /* the process default while this cluster lives */
	struct th_server cl_mds;
	struct th_server cl_oss[TH_MAX_OSS];
	char cl_client_log[PATH_MAX];
	bool cl_start_failed;       /* th_cluster_start() is cleaning up */
};

static struct th_cluster *th_live[TH_MAX_LIVE];
static pid_t th_owner;
static bool th_keep;
static bool th_handlers_set;
static volatile sig_atomic_t th_in_fatal;
#define TH_MAX_FATAL_HOOKS 4
static void (*th_fatal_hooks[TH_MAX_FATAL_HOOKS])(void); /* th_fatal_hook_add() */
static bool th_any_failure; /* a finished CUnit run had failures */

/* ------------------------------------------------------------ misc */

uint64_t th_rand64(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ULL;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

void th_fill_pattern(void *buf, size_t len, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;
	uint8_t *p = buf;
	while (len >= 8) {
		uint64_t v = th_rand64(&s);
		memcpy(p, &v, 8);
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t v = th_rand64(&s);
		memcpy(p, &v, len);
	}
}

void th_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

uint64_t th_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000ULL + (uint64_t)ts.tv_nsec / 1000000ULL;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	if (remove(path) < 0 && errno != ENOENT)
		fprintf(stderr, "harness: cannot remove %s: %s\n", path, strerror(errno));
	return 0;
}

int th_rm_rf(const char *path)
{
	if (nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* ------------------------------------------------------------ CUnit runner */

/*
 * The in-process log (common/log.c: stderr by default) of a test binary goes
 * to a file, printed only when a test fails: the WARN and ERROR lines that
 * fault tests provoke on purpose stay out of a passing `make test`. Not when
 * WEIR_LOG names a destination (the user's choice, or a cluster's client.log).
 */
static char th_log_path[PATH_MAX];

static void th_log_capture_start(const char *suite)
{
	const char *wl = getenv("WEIR_LOG");

	if (wl && *wl)
		return;
	snprintf(th_log_path, sizeof(th_log_path), "/tmp/weir-test-log-%s-%d", suite,
		 (int)getpid());
	if (weir_log_open(th_log_path))
		th_log_path[0] = '\0';
}

static void th_log_capture_end(bool bad)
{
	if (!th_log_path[0])
		return;
	if (bad)
		th_log_tail("the test's log", th_log_path, 200);
	weir_log_open("stderr");
	if (getenv("TH_KEEP") && atoi(getenv("TH_KEEP")) > 0)
		fprintf(stderr, "kept %s\n", th_log_path);
	else
		unlink(th_log_path);
	th_log_path[0] = '\0';
}

bool th_failed(void)
{
	return th_any_failure || CU_get_number_of_failures() > 0 ||
	       CU_get_number_of_suites_failed() > 0;
}

int th_cunit_run(const char *suite, int (*init)(void), int (*clean)(void),
		 const struct th_test *tests)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* keep stdout and stderr lines in order */
	/* a broken pipe on a raw socket must be an error, not a death */
	signal(SIGPIPE, SIG_IGN);
	if (CU_initialize_registry() != CUE_SUCCESS) {
		fprintf(stderr, "CU_initialize_registry: %s\n", CU_get_error_msg());
		return 1;
	}
	CU_pSuite s = CU_add_suite(suite, init, clean);
	if (!s) {
		fprintf(stderr, "CU_add_suite: %s\n", CU_get_error_msg());
		CU_cleanup_registry();
		return 1;
	}
	for (const struct th_test *t = tests; t->tt_name; t++) {
		if (!CU_add_test(s, t->tt_name, t->tt_fn)) {
			fprintf(stderr, "CU_add_test %s: %s\n", t->tt_name, CU_get_error_msg());
			CU_cleanup_registry();
			return 1;
		}
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	th_log_capture_start(suite);
	CU_basic_run_tests();
	unsigned nfail = CU_get_number_of_failures();
	unsigned ntests_failed = CU_get_number_of_tests_failed();
	unsigned nsuites_failed = CU_get_number_of_suites_failed();
	unsigned nrun = CU_get_number_of_tests_run();
	size_t ntests = 0;
	for (const struct th_test *t = tests; t->tt_name; t++)
		ntests++;
	CU_cleanup_registry();
	printf("\n");
	th_any_failure = th_any_failure || nfail || ntests_failed || nsuites_failed;
	int bad = nfail || ntests_failed || nsuites_failed || nrun != ntests;
	th_log_capture_end(bad);
	if (nrun != ntests)
		printf("%s: only %u of %zu tests ran\n", suite, nrun, ntests);
	printf("%s: %s\n", suite, bad ? "FAILED" : "OK");
	fflush(stdout);
	return bad ? 1 : 0;
}

/* ------------------------------------------------------------ logs */

void th_log_tail(const char *title, const char *path, int lines)
{
	static char buf[32768];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	off_t start = end > (off_t)sizeof(buf) ? end - (off_t)sizeof(buf) : 0;
	ssize_t n = pread(fd, buf, sizeof(buf), start);
	close(fd);
	if (n <= 0)
		return;
	ssize_t i = n;
	if (buf[i - 1] == '\n')
		i--;
	int seen = 0;
	while (i > 0) {
		if (buf[i - 1] == '\n' && ++seen >= lines)
			break;
		i--;
	}
	const char *h1 = "---------- tail of ";
	const char *h2 = " ----------\n";
	ssize_t w;
	w = write(2, h1, strlen(h1));
	w = write(2, title, strlen(title));
	w = write(2, " (", 2);
	w = write(2, path, strlen(path));
	w = write(2, ")", 1);
	w = write(2, h2, strlen(h2));
	w = write(2, buf + i, (size_t)(n - i));
	if (buf[n - 1] != '\n')
		w = write(2, "\n", 1);
	(void)w;
}

void th_cluster_dump_logs(const struct th_cluster *c, int lines)
{
	fflush(stdout);
	fflush(stderr);
	th_log_tail(c->cl_mds.sv_name, c->cl_mds.sv_log, lines);
	for (int i = 0; i < c->cl_nr_oss; i++)
		th_log_tail(c->cl_oss[i].sv_name, c->cl_oss[i].sv_log, lines);
	th_log_tail("libweir", c->cl_client_log, lines);
}

static void log_note(const struct th_server *sv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void log_note(const struct th_server *sv, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	int fd = open(sv->sv_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	dprintf(fd, "==== harness: %s ====\n", msg);
	close(fd);
}

/* ------------------------------------------------------------ cleanup hooks */

static void kill_all_children(void)
{
	for (int k = 0; k < TH_MAX_LIVE; k++) {
		struct th_cluster *c = th_live[k];
		if (!c)
			continue;
		if (c->cl_mds.sv_pid > 0)
			kill(c->cl_mds.sv_pid, SIGKILL);
		for (int i = 0; i < c->cl_nr_oss; i++)
			if (c->cl_oss[i].sv_pid > 0)
				kill(c->cl_oss[i].sv_pid, SIGKILL);
	}
}

static void fatal_signal(int sig)
{
	if (getpid() != th_owner || th_in_fatal) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	th_in_fatal = 1;
	const char *m = "\nharness: fatal signal; killing servers, removing test directories\n";
	ssize_t w = write(2, m, strlen(m));
	(void)w;
	kill_all_children();
	for (int k = 0; k < TH_MAX_LIVE; k++) {
		struct th_cluster *c = th_live[k];
		if (!c)
			continue;
		th_log_tail(c->cl_mds.sv_name, c->cl_mds.sv_log, TH_LOG_TAIL_LINES);
		for (int i = 0; i < c->cl_nr_oss; i++)
			th_log_tail(c->cl_oss[i].sv_name, c->cl_oss[i].sv_log, TH_LOG_TAIL_LINES);
		th_log_tail("libweir", c->cl_client_log, TH_LOG_TAIL_LINES);
		if (!th_keep)
			th_rm_rf_sigsafe(c->cl_dir);
	}
	for (int k = 0; k < TH_MAX_FATAL_HOOKS; k++)
		if (th_fatal_hooks[k])
			th_fatal_hooks[k]();
	signal(sig, SIG_DFL);
	raise(sig);
}

void th_rm_rf_sigsafe(const char *dir)
{
	pid_t p = fork();
	if (p == 0) {
		char *argv[] = { "rm", "-rf", (char *)dir, NULL };
		execv("/bin/rm", argv);
		_exit(127);
	}
	if (p > 0)
		waitpid(p, NULL, 0);
}

void th_fatal_hook_add(void (*fn)(void))
{
	for (int k = 0; k < TH_MAX_FATAL_HOOKS; k++) {
		if (th_fatal_hooks[k] == fn)
			return;
		if (!th_fatal_hooks[k]) {
			th_fatal_hooks[k] = fn;
			return;
		}
	}
	fprintf(stderr, "harness: more than %d fatal-signal hooks; one ignored\n",
		TH_MAX_FATAL_HOOKS);
}

bool th_keep_dirs(void)
{
	return th_keep;
}

static void atexit_cleanup(void)
{
	th_clusters_stop_all();
}

void th_clusters_stop_all(void)
{
	if (getpid() != th_owner)
		return;
	for (int k = 0; k < TH_MAX_LIVE; k++)
		if (th_live[k]) {
			fprintf(stderr, "harness: cluster %s still running at exit; stopping it\n",
				th_live[k]->cl_dir);
			th_cluster_stop(th_live[k]);
		}
}

void th_handlers_install(void)
{
	if (th_handlers_set)
		return;
	th_handlers_set = true;
	th_owner = getpid();
	const char *k = getenv("TH_KEEP");
	th_keep = k && *k && strcmp(k, "0") != 0;
	atexit(atexit_cleanup);
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGABRT, SIGSEGV, SIGBUS, SIGFPE };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa = { 0 };
		sa.sa_handler = fatal_signal;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_RESETHAND | SA_NODEFER;
		sigaction(sigs[i], &sa, NULL);
	}
	signal(SIGPIPE, SIG_IGN);
}

/* ------------------------------------------------------------ binaries */

int th_bin_dir(char *out, size_t len)
{
	const char *b = getenv("BUILD");
	char path[PATH_MAX];
	if (b && *b) {
		if ((size_t)snprintf(path, sizeof(path), "%s/bin", b) >= sizeof(path))
			return -ENAMETOOLONG;
	} else {
		/* .../BUILD/tests/<kind>/test_x: go up to the "tests" directory */
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
		if (n < 0)
			return -errno;
		path[n] = 0;
		char *slash;
		for (;;) {
			slash = strrchr(path, '/');
			if (!slash || slash == path)
				return -ENOENT;
			*slash = 0;
			const char *base = strrchr(path, '/');
			base = base ? base + 1 : path;
			if (!strcmp(base, "tests"))
				break;
		}
		slash = strrchr(path, '/');
		if (!slash)
			return -ENOENT;
		strcpy(slash, "/bin");
	}
	if (!realpath(path, out)) {
		snprintf(out, len, "%s", path);
		return -ENOENT;
	}
	return 0;
}

/* ------------------------------------------------------------ processes */

static struct th_server *server_of(struct th_cluster *c, int id)
{
	if (id == TH_MDS)
		return &c->cl_mds;
	if (id < 0 || id >= c->cl_nr_oss)
		return NULL;
	return &c->cl_oss[id];
}

static const struct th_server *server_of_c(const struct th_cluster *c, int id)
{
	return server_of((struct th_cluster *)c, id);
}

static bool status_clean(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st) == 0;
	if (WIFSIGNALED(st))
		return WTERMSIG(st) == SIGTERM || WTERMSIG(st) == SIGKILL;
	return false;
}

static void describe_status(const struct th_server *sv, int st, char *buf, size_t len)
{
	if (WIFEXITED(st))
		snprintf(buf, len, "%s (pid %d) exited with status %d", sv->sv_name, sv->sv_pid,
			 WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "%s (pid %d) killed by signal %d (%s)", sv->sv_name, sv->sv_pid,
			 WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		snprintf(buf, len, "%s (pid %d) status 0x%x", sv->sv_name, sv->sv_pid, st);
}

/* Reap \a sv if it has exited. \return true when it is still running. */
static bool server_check(struct th_server *sv)
{
	if (sv->sv_pid <= 0)
		return false;
	int st;
	pid_t r = waitpid(sv->sv_pid, &st, WNOHANG);
	if (r == 0)
		return true;
	if (r == sv->sv_pid) {
		char msg[160];
		describe_status(sv, st, msg, sizeof(msg));
		fprintf(stderr, "harness: %s unexpectedly\n", msg);
		log_note(sv, "%s unexpectedly", msg);
		th_log_tail(sv->sv_name, sv->sv_log, TH_LOG_TAIL_LINES);
		sv->sv_bad_exit = 1;
	}
	sv->sv_pid = 0;
	return false;
}

/* The directory of OSS \a i's OST \a j, in \a buf. */
static const char *ost_dir(const struct th_cluster *c, int i, int j, char *buf, size_t len)
{
	const char *d = c->cl_ost_dirs ? c->cl_ost_dirs[i * c->cl_ost_per_oss + j] : NULL;
	if (d)
		snprintf(buf, len, "%s", d);
	else
		snprintf(buf, len, "%s/oss%d/ost%d", c->cl_dir, i, j);
	return buf;
}

/*
 * Make the cluster's key (or set up insecure operation) and make it this
 * process's: raw connections (the net/auth.h default), libweir here and in
 * children (WEIR_KEY_FILE / WEIR_INSECURE).
 */
static int cluster_auth_setup(struct th_cluster *c)
{
	char why[256];
	int rc;
	if (c->cl_insecure) {
		c->cl_key_file[0] = '\0';
		unsetenv("WEIR_KEY_FILE");
		setenv("WEIR_INSECURE", "1", 1);
		rc = net_auth_new(NULL, true, &c->cl_auth, why, sizeof(why));
	} else {
		/* one key for every cluster of this process: a mount of one cluster
		 * made while another one is the newest still authenticates */
		static struct weir_keyring kr = { .kr_nr = 0 };
		snprintf(c->cl_key_file, sizeof(c->cl_key_file), "%s/cluster.key", c->cl_dir);
		rc = kr.kr_nr ? 0 : weir_key_generate("test", &kr.kr_keys[0]);
		if (!rc) {
			kr.kr_nr = 1;
			rc = weir_keyring_save(c->cl_key_file, &kr, true);
		}
		if (rc)
			return rc;
		/* tests switch to nobody (65534) and run the shim there: a site gives
		 * the users who run clients the key through its group (mode 0640) */
		if (!geteuid() && (chown(c->cl_key_file, 0, 65534) || chmod(c->cl_key_file, 0640)))
			return -errno;
		setenv("WEIR_KEY_FILE", c->cl_key_file, 1);
		unsetenv("WEIR_INSECURE");
		rc = net_auth_new(c->cl_key_file, false, &c->cl_auth, why, sizeof(why));
	}
	if (rc)
		return rc;
	net_auth_set_default(c->cl_auth);
	return 0;
}

const char *th_cluster_key_file(const struct th_cluster *c)
{
	return c->cl_key_file;
}

static int build_argv(struct th_cluster *c, struct th_server *sv, char **argv, char *store,
		      size_t store_len)
{
	int n = 0;
	size_t used = 0;
#define ADD(...)                                                                               \
	do {                                                                                   \
		int _l = snprintf(store + used, store_len - used, __VA_ARGS__);                \
		if (_l < 0 || (size_t)_l >= store_len - used || n >= TH_MAX_ARGS - 1)          \
			return -E2BIG;                                                         \
		argv[n++] = store + used;                                                      \
		used += (size_t)_l + 1;                                                        \
	} while (0)
	if (sv->sv_id == TH_MDS) {
		ADD("%s/weir-mds", c->cl_bin);
		ADD("--mdt");
		ADD("%s/mdt0", c->cl_dir);
		ADD("--listen");
		ADD("%s:%u", sv->sv_ip, sv->sv_port);
		ADD("--port-file");
		ADD("%s", sv->sv_port_file);
		ADD("--threads");
		ADD("2");
		ADD("--log");
		ADD("stderr");
		if (c->cl_insecure) {
			ADD("--insecure");
		} else {
			ADD("--key-file");
			ADD("%s", c->cl_key_file);
		}
		for (const char *const *a = c->cl_mds_args; a && *a; a++)
			ADD("%s", *a);
	} else {
		ADD("%s/weir-oss", c->cl_bin);
		ADD("--mds");
		ADD("%s", c->cl_mds.sv_addr);
		for (int j = 0; j < c->cl_ost_per_oss; j++) {
			char d[PATH_MAX + 32];
			ADD("--ost");
			ADD("%s", ost_dir(c, sv->sv_id, j, d, sizeof(d)));
		}
		ADD("--listen");
		ADD("%s:%u", sv->sv_ip, sv->sv_port);
		ADD("--port-file");
		ADD("%s", sv->sv_port_file);
		ADD("--threads");
		ADD("2");
		ADD("--log");
		ADD("stderr");
		ADD("--heartbeat");
		ADD("%d", c->cl_heartbeat_s);
		if (c->cl_insecure) {
			ADD("--insecure");
		} else {
			ADD("--key-file");
			ADD("%s", c->cl_key_file);
		}
		for (const char *const *a = c->cl_oss_args; a && *a; a++)
			ADD("%s", *a);
	}
#undef ADD
	argv[n] = NULL;
	return n;
}

/* The environment for servers: ours without the libweir log variables. */
static char **server_env(void)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 1, sizeof(*env));
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "WEIR_LOG=", 9) || !strncmp(environ[i], "WEIR_LOG_LEVEL=", 15))
			continue;
		env[k++] = environ[i];
	}
	env[k] = NULL;
	return env;
}

static int read_port_file(const char *path, uint16_t *port)
{
	char buf[128];
	ssize_t n = weir_file_read_small(path, buf, sizeof(buf));
	if (n <= 0)
		return n < 0 ? (int)n : -EAGAIN;
	const char *p = strrchr(buf, ':');
	p = p ? p + 1 : buf;
	while (*p == ' ' || *p == '\t')
		p++;
	char *end;
	errno = 0;
	unsigned long v = strtoul(p, &end, 10);
	while (*end == '\n' || *end == ' ' || *end == '\r')
		end++;
	if (errno || end == p || *end || v == 0 || v > 65535)
		return -EAGAIN; /* not complete yet, or garbage: keep waiting */
	*port = (uint16_t)v;
	return 0;
}

static int server_spawn(struct th_cluster *c, struct th_server *sv)
{
	char *argv[TH_MAX_ARGS];
	char store[8192];
	int rc = build_argv(c, sv, argv, store, sizeof(store));
	if (rc < 0)
		return rc;
	if (access(argv[0], X_OK) < 0) {
		fprintf(stderr, "harness: %s: %s (set BUILD to the build directory)\n", argv[0],
			strerror(errno));
		return -ENOENT;
	}
	char cmd[1024] = "";
	size_t cl = 0;
	for (int i = 0; argv[i] && cl < sizeof(cmd) - 2; i++)
		cl += (size_t)snprintf(cmd + cl, sizeof(cmd) - cl, "%s%s", i ? " " : "", argv[i]);
	log_note(sv, "start: %s", cmd);
	unlink(sv->sv_port_file);

	int logfd = open(sv->sv_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (logfd < 0)
		return -errno;
	char **env = server_env();
	pid_t pid = 0;
	rc = env ? th_spawn(sv->sv_netns, argv, env, logfd, &pid) : -ENOMEM;
	if (!rc)
		sv->sv_pid = pid;
	free(env);
	close(logfd);
	return rc;
}

/* Wait for the port file of a just-spawned server. */
static int server_wait_port(struct th_server *sv)
{
	uint64_t deadline = th_now_ms() + TH_PORT_WAIT_MS;
	for (;;) {
		uint16_t port = 0;
		if (read_port_file(sv->sv_port_file, &port) == 0) {
			if (sv->sv_port && port != sv->sv_port) {
				fprintf(stderr, "harness: %s came up on port %u, asked for %u\n",
					sv->sv_name, port, sv->sv_port);
				return -EPROTO;
			}
			sv->sv_port = port;
			snprintf(sv->sv_addr, sizeof(sv->sv_addr), "%s:%u", sv->sv_ip, port);
			return 0;
		}
		if (!server_check(sv)) {
			fprintf(stderr, "harness: %s exited before writing %s\n", sv->sv_name,
				sv->sv_port_file);
			return -ECHILD;
		}
		if (th_now_ms() > deadline) {
			fprintf(stderr, "harness: %s wrote no port file %s within %d ms\n",
				sv->sv_name, sv->sv_port_file, TH_PORT_WAIT_MS);
			th_log_tail(sv->sv_name, sv->sv_log, TH_LOG_TAIL_LINES);
			return -ETIMEDOUT;
		}
		th_sleep_ms(10);
	}
}

int th_server_start(struct th_cluster *c, int id)
{
	struct th_server *sv = server_of(c, id);
	if (!sv)
		return -EINVAL;
	if (server_check(sv))
		return -EALREADY;
	int rc = -EADDRINUSE;
	/* a fixed port can be briefly busy after a kill: retry a few times */
	for (int attempt = 0; attempt < 5 && rc; attempt++) {
		if (attempt)
			th_sleep_ms(500);
		rc = server_spawn(c, sv);
		if (rc)
			return rc;
		rc = server_wait_port(sv);
		if (rc == -ECHILD && sv->sv_port) {
			sv->sv_bad_exit = 0; /* maybe EADDRINUSE: try again */
			continue;
		}
		if (rc)
			break;
	}
	if (rc && sv->sv_pid > 0)
		th_server_kill(c, id);
	if (rc)
		sv->sv_bad_exit = 1;
	return rc;
}

/*
 * Server \a id when it is running (noting in its log that the harness does
 * \a what to it), else NULL with *rc -EINVAL (no such server) or -ESRCH.
 */
static struct th_server *server_running(struct th_cluster *c, int id, const char *what, int *rc)
{
	struct th_server *sv = server_of(c, id);
	*rc = !sv ? -EINVAL : !server_check(sv) ? -ESRCH : 0;
	if (*rc)
		return NULL;
	log_note(sv, "%s pid %d", what, sv->sv_pid);
	return sv;
}

void th_server_exit_expected(struct th_cluster *c, int id)
{
	struct th_server *sv = server_of(c, id);
	if (sv)
		sv->sv_bad_exit = 0;
}

int th_server_kill(struct th_cluster *c, int id)
{
	int rc;
	struct th_server *sv = server_running(c, id, "kill -9", &rc);
	if (!sv)
		return rc;
	kill(sv->sv_pid, SIGKILL);
	while (waitpid(sv->sv_pid, NULL, 0) < 0 && errno == EINTR)
		;
	sv->sv_pid = 0;
	return 0;
}

int th_server_stop(struct th_cluster *c, int id)
{
	int rc;
	struct th_server *sv = server_running(c, id, "SIGTERM", &rc);
	if (!sv)
		return rc;
	int st = 0;
	rc = th_proc_stop(sv->sv_pid, sv->sv_name, TH_STOP_GRACE_MS, &st);
	if (rc == -ETIMEDOUT) {
		log_note(sv, "no exit %d ms after SIGTERM; SIGKILL", TH_STOP_GRACE_MS);
		sv->sv_bad_exit = 1;
	}
	if (rc) {
		sv->sv_pid = 0;
		return -ECHILD;
	}
	if (!status_clean(st)) {
		char msg[160];
		describe_status(sv, st, msg, sizeof(msg));
		fprintf(stderr, "harness: after SIGTERM, %s\n", msg);
		log_note(sv, "after SIGTERM, %s", msg);
		th_log_tail(sv->sv_name, sv->sv_log, TH_LOG_TAIL_LINES);
		sv->sv_bad_exit = 1;
		rc = -ECHILD;
	}
	sv->sv_pid = 0;
	return rc;
}

int th_server_restart(struct th_cluster *c, int id)
{
	if (th_server_pid(c, id))
		th_server_kill(c, id);
	int rc = th_server_start(c, id);
	if (rc)
		return rc;
	return th_cluster_wait_up(c, c->cl_up_timeout_ms);
}

pid_t th_server_pid(const struct th_cluster *c, int id)
{
	const struct th_server *sv = server_of_c(c, id);
	return sv ? sv->sv_pid : 0;
}

uint16_t th_server_port(const struct th_cluster *c, int id)
{
	const struct th_server *sv = server_of_c(c, id);
	return sv ? sv->sv_port : 0;
}

const char *th_server_addr(const struct th_cluster *c, int id)
{
	const struct th_server *sv = server_of_c(c, id);
	return sv ? sv->sv_addr : "";
}

bool th_server_alive(struct th_cluster *c, int id)
{
	struct th_server *sv = server_of(c, id);
	if (!sv || !server_check(sv))
		return false;
	return kill(sv->sv_pid, 0) == 0;
}

/* ------------------------------------------------------------ cluster map */

/*
 * Connect to \a addr from where the MDS runs (its network namespace, when
 * the cluster is placed on several hosts): the harness acts as an admin on
 * the MDS's host.
 */
static int conn_open(const struct th_cluster *c, const char *addr, struct net_conn **nc)
{
	int saved;
	int rc = th_netns_enter(c->cl_mds.sv_netns, &saved);
	if (rc)
		return rc;
	rc = net_conn_open(addr, 2000, nc);
	th_netns_leave(saved);
	return rc;
}

static int get_clustermap(const struct th_cluster *c, Weir__ClusterMap **out)
{
	struct net_conn *nc;
	int rc = conn_open(c, c->cl_mds.sv_addr, &nc);
	if (rc)
		return rc;
	Weir__Empty req = WEIR__EMPTY__INIT;
	struct net_call call;
	net_call_init(&call, WEIR__WIRE_OP__MDS_GET_CLUSTERMAP, &req.base);
	call.nc_timeout_ms = 5000;
	rc = net_call_run(nc, &call);
	if (!rc) {
		*out = net_call_unpack(&call, &weir__cluster_map__descriptor);
		if (!*out)
			rc = -EPROTO;
	}
	net_call_fini(&call);
	net_conn_close(nc);
	return rc;
}

static bool addr_has_port(const char *addr, uint16_t port)
{
	const char *p = addr ? strrchr(addr, ':') : NULL;
	return p && strtoul(p + 1, NULL, 10) == port;
}

/* \return true when \a m shows every OST of \a c up. */
static bool map_all_up(const struct th_cluster *c, const Weir__ClusterMap *m)
{
	int up = 0;
	bool have_addr = false;
	for (size_t i = 0; i < m->n_osts; i++) {
		if (m->osts[i]->state == WEIR__TARGET_STATE__TS_UP)
			up++;
		if (m->osts[i]->oss_addr && m->osts[i]->oss_addr[0])
			have_addr = true;
	}
	if (up < c->cl_nr_oss * c->cl_ost_per_oss)
		return false;
	if (!have_addr)
		return true;
	/* each OSS has all of its OSTs up, registered from its current port */
	for (int s = 0; s < c->cl_nr_oss; s++) {
		int n = 0;
		for (size_t i = 0; i < m->n_osts; i++)
			if (m->osts[i]->state == WEIR__TARGET_STATE__TS_UP &&
			    addr_has_port(m->osts[i]->oss_addr, c->cl_oss[s].sv_port))
				n++;
		if (n < c->cl_ost_per_oss)
			return false;
	}
	return true;
}

/*
 * Each OST in \a m answers OST_STATFS at its OSS: the OSS has learnt the
 * index the MDS gave it (the MDS may list an OST as up a moment before).
 * \return 0 or the first error.
 */
static int map_probe_osts(const struct th_cluster *c, const Weir__ClusterMap *m)
{
	for (size_t i = 0; i < m->n_osts; i++) {
		struct net_conn *nc;
		int rc = conn_open(c, m->osts[i]->oss_addr, &nc);
		if (rc)
			return rc;
		Weir__OstStatfsReq req = WEIR__OST_STATFS_REQ__INIT;
		req.ost = m->osts[i]->index;
		struct net_call call;
		net_call_init(&call, WEIR__WIRE_OP__OST_STATFS, &req.base);
		call.nc_timeout_ms = 5000;
		rc = net_call_run(nc, &call);
		net_call_fini(&call);
		net_conn_close(nc);
		if (rc)
			return rc;
	}
	return 0;
}

static void map_print(const Weir__ClusterMap *m)
{
	fprintf(stderr, "harness: cluster map gen %llu, %zu OSTs:\n", (unsigned long long)m->gen,
		m->n_osts);
	for (size_t i = 0; i < m->n_osts; i++)
		fprintf(stderr, "  OST%04x uuid=%s oss=%s state=%d\n", m->osts[i]->index,
			m->osts[i]->uuid, m->osts[i]->oss_addr, m->osts[i]->state);
}

int th_cluster_wait_up(struct th_cluster *c, uint32_t timeout_ms)
{
	uint64_t deadline = th_now_ms() + timeout_ms;
	int last_rc = 0;
	for (;;) {
		Weir__ClusterMap *m = NULL;
		int rc = get_clustermap(c, &m);
		if (!rc) {
			bool ok = map_all_up(c, m);
			if (ok) {
				rc = map_probe_osts(c, m);
				ok = rc == 0;
				last_rc = rc;
			}
			if (ok || th_now_ms() > deadline) {
				if (!ok) {
					char b[96];
					fprintf(stderr, "harness: not every OST up after %u ms (%s)\n",
						timeout_ms, weir_rc_str(last_rc, b, sizeof(b)));
					map_print(m);
				}
				protobuf_c_message_free_unpacked(&m->base, NULL);
				return ok ? 0 : -ETIMEDOUT;
			}
			protobuf_c_message_free_unpacked(&m->base, NULL);
		} else {
			last_rc = rc;
		}
		if (!server_check(&c->cl_mds)) {
			fprintf(stderr, "harness: the MDS is not running\n");
			return -ECHILD;
		}
		for (int i = 0; i < c->cl_nr_oss; i++)
			if (!server_check(&c->cl_oss[i])) {
				fprintf(stderr, "harness: %s is not running\n", c->cl_oss[i].sv_name);
				return -ECHILD;
			}
		if (th_now_ms() > deadline) {
			char b[96];
			fprintf(stderr, "harness: MDS_GET_CLUSTERMAP to %s failed for %u ms: %s\n",
				c->cl_mds.sv_addr, timeout_ms, weir_rc_str(last_rc, b, sizeof(b)));
			return -ETIMEDOUT;
		}
		th_sleep_ms(100);
	}
}

int th_ost_obj_path(struct th_cluster *c, uint32_t ost, uint64_t fid_seq, uint64_t fid_oid,
		    uint32_t stripe, char *p, size_t len)
{
	char d[PATH_MAX + 32], buf[32];
	bool found = false;
	for (int i = 0; i < c->cl_nr_oss && !found; i++)
		for (int j = 0; j < c->cl_ost_per_oss && !found; j++) {
			ost_dir(c, i, j, d, sizeof(d));
			snprintf(p, len, "%s/ost.index", d);
			ssize_t n = weir_file_read_small(p, buf, sizeof(buf));
			found = n > 0 && strtoul(buf, NULL, 10) == ost;
		}
	if (!found)
		return -ENODEV;
	unsigned hh = (unsigned)((fid_oid ^ fid_seq ^ (uint64_t)stripe * 0x9e3779b9ULL) & 0xff);
	snprintf(p, len, "%s/O/%02x/%llx-%llx-%u", d, hh, (unsigned long long)fid_seq,
		 (unsigned long long)fid_oid, stripe);
	return 0;
}

int th_ost_obj_getattr(struct th_cluster *c, uint32_t ost, uint64_t fid_seq, uint64_t fid_oid,
		       uint32_t stripe, bool *exists, uint64_t *size)
{
	/* in the OST's directory itself (oss/obj.c's format): the OSS answers only
	 * requests that carry the MDS's capabilities */
	char p[PATH_MAX + 128];
	int rc = th_ost_obj_path(c, ost, fid_seq, fid_oid, stripe, p, sizeof(p));
	if (rc)
		return rc;
	struct stat st;
	if (stat(p, &st)) {
		if (errno != ENOENT)
			return -errno;
		*exists = false;
		if (size)
			*size = 0;
		return 0;
	}
	*exists = true;
	if (size)
		*size = (uint64_t)st.st_size; /* segment 0: enough below 1 TiB */
	return 0;
}

/* ------------------------------------------------------------ raw sockets */

int th_tcp_connect(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int th_tcp_wait_closed(int fd, int timeout_ms)
{
	uint64_t deadline = th_now_ms() + (uint64_t)timeout_ms;
	char buf[4096];
	for (;;) {
		uint64_t now = th_now_ms();
		if (now >= deadline)
			return 0;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int n = poll(&p, 1, (int)(deadline - now));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
			return 1;
	}
}

/* ------------------------------------------------------------ cluster */

static void live_add(struct th_cluster *c)
{
	for (int k = 0; k < TH_MAX_LIVE; k++)
		if (!th_live[k]) {
			th_live[k] = c;
			return;
		}
}

static void live_del(struct th_cluster *c)
{
	for (int k = 0; k < TH_MAX_LIVE; k++)
		if (th_live[k] == c)
			th_live[k] = NULL;
}

/*
 * Remove the directories of earlier test processes that died without
 * cleaning up (kill -9): each holds harness.pid naming its owner.
 */
static void reap_stale_dirs(void)
{
	DIR *d = opendir("/tmp");
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "weir-test-", 10))
			continue;
		char path[PATH_MAX], buf[32];
		snprintf(path, sizeof(path), "/tmp/%s/harness.pid", de->d_name);
		if (weir_file_read_small(path, buf, sizeof(buf)) <= 0)
			continue;
		long pid = strtol(buf, NULL, 10);
		struct stat st;
		if (pid <= 0 || (kill((pid_t)pid, 0) < 0 && errno == ESRCH)) {
			snprintf(path, sizeof(path), "/tmp/%s", de->d_name);
			if (!lstat(path, &st) && st.st_uid == getuid()) {
				fprintf(stderr, "harness: removing %s, left by dead test pid %ld\n",
					path, pid);
				th_rm_rf(path);
			}
		}
	}
	closedir(d);
}

int th_tmpdir_new(char *dir, size_t len)
{
	char pidf[PATH_MAX], pidbuf[32];

	reap_stale_dirs();
	if ((size_t)snprintf(dir, len, "/tmp/weir-test-XXXXXX") >= len)
		return -ENAMETOOLONG;
	if (!mkdtemp(dir))
		return -errno;
	snprintf(pidf, sizeof(pidf), "%s/harness.pid", dir);
	int pl = snprintf(pidbuf, sizeof(pidbuf), "%d\n", (int)getpid());
	int rc = weir_file_write_atomic(pidf, pidbuf, (size_t)pl);
	if (rc)
		th_rm_rf(dir);
	return rc;
}

static void server_setup(struct th_cluster *c, struct th_server *sv, int id,
			 const struct th_place *place)
{
	sv->sv_id = id;
	snprintf(sv->sv_ip, sizeof(sv->sv_ip), "%s",
		 place && place->tp_ip ? place->tp_ip : "127.0.0.1");
	snprintf(sv->sv_netns, sizeof(sv->sv_netns), "%s",
		 place && place->tp_netns ? place->tp_netns : "");
	if (id == TH_MDS)
		snprintf(sv->sv_name, sizeof(sv->sv_name), "mds");
	else
		snprintf(sv->sv_name, sizeof(sv->sv_name), "oss%d", id);
	snprintf(sv->sv_log, sizeof(sv->sv_log), "%s/%s.log", c->cl_dir, sv->sv_name);
	snprintf(sv->sv_port_file, sizeof(sv->sv_port_file), "%s/%s.port", c->cl_dir,
		 sv->sv_name);
}

int th_cluster_start(const struct th_cluster_opts *opts, struct th_cluster **out)
{
	struct th_cluster_opts def = { 0 };
	if (!opts)
		opts = &def;
	th_handlers_install();
	struct th_cluster *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cl_nr_oss = opts->tco_nr_oss > 0 ? opts->tco_nr_oss : 2;
	c->cl_ost_per_oss = opts->tco_ost_per_oss > 0 ? opts->tco_ost_per_oss : 2;
	c->cl_heartbeat_s = opts->tco_heartbeat_s > 0 ? opts->tco_heartbeat_s : 1;
	c->cl_up_timeout_ms = opts->tco_up_timeout_ms ? opts->tco_up_timeout_ms : 30000;
	c->cl_mds_args = opts->tco_mds_args;
	c->cl_oss_args = opts->tco_oss_args;
	c->cl_ost_dirs = opts->tco_ost_dirs;
	c->cl_insecure = opts->tco_insecure;
	if (c->cl_nr_oss > TH_MAX_OSS || c->cl_ost_per_oss > TH_MAX_OST_PER_OSS) {
		free(c);
		return -EINVAL;
	}
	int rc = th_bin_dir(c->cl_bin, sizeof(c->cl_bin));
	if (rc) {
		fprintf(stderr, "harness: no server binaries in %s (set BUILD=build dir)\n",
			c->cl_bin);
		free(c);
		return rc;
	}
	rc = th_tmpdir_new(c->cl_dir, sizeof(c->cl_dir));
	if (rc) {
		free(c);
		return rc;
	}
	live_add(c);
	snprintf(c->cl_client_log, sizeof(c->cl_client_log), "%s/client.log", c->cl_dir);
	const char *wl = getenv("WEIR_LOG");
	if (!wl || !*wl) {
		setenv("WEIR_LOG", c->cl_client_log, 1);
		if (!getenv("WEIR_LOG_LEVEL"))
			setenv("WEIR_LOG_LEVEL", "info", 1);
	}

	rc = cluster_auth_setup(c);
	if (rc) {
		fprintf(stderr, "harness: cannot make the cluster key: %s\n", strerror(-rc));
		th_rm_rf(c->cl_dir);
		live_del(c);
		free(c);
		return rc;
	}

	const struct th_place *pl = opts->tco_places;
	server_setup(c, &c->cl_mds, TH_MDS, pl ? &pl[0] : NULL);
	for (int i = 0; i < c->cl_nr_oss; i++)
		server_setup(c, &c->cl_oss[i], i, pl ? &pl[1 + i] : NULL);

	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/mdt0", c->cl_dir);
	rc = weir_mkdir_p(p, 0755);
	for (int i = 0; !rc && i < c->cl_nr_oss; i++)
		for (int j = 0; !rc && j < c->cl_ost_per_oss; j++) {
			rc = weir_mkdir_p(ost_dir(c, i, j, p, sizeof(p)), 0755);
		}
	if (rc)
		goto out_stop;

	fprintf(stderr, "harness: starting 1 MDS + %d OSS x %d OST in %s (binaries: %s)\n",
		c->cl_nr_oss, c->cl_ost_per_oss, c->cl_dir, c->cl_bin);
	uint64_t t0 = th_now_ms();
	rc = th_server_start(c, TH_MDS);
	if (rc)
		goto out_stop;
	for (int i = 0; i < c->cl_nr_oss; i++) {
		rc = server_spawn(c, &c->cl_oss[i]);
		if (rc)
			goto out_stop;
	}
	for (int i = 0; i < c->cl_nr_oss; i++) {
		rc = server_wait_port(&c->cl_oss[i]);
		if (rc)
			goto out_stop;
	}
	rc = th_cluster_wait_up(c, c->cl_up_timeout_ms);
	if (rc)
		goto out_stop;
	fprintf(stderr, "harness: cluster up in %llu ms: MDS %s\n",
		(unsigned long long)(th_now_ms() - t0), c->cl_mds.sv_addr);
	*out = c;
	return 0;

out_stop:
	fprintf(stderr, "harness: cluster start failed (rc=%d)\n", rc);
	c->cl_start_failed = true;
	th_cluster_stop(c);
	return rc;
}

int th_cluster_stop(struct th_cluster *c)
{
	if (!c)
		return 0;
	int rc = 0;
	/* OSSs first, so they do not log the MDS going away */
	for (int i = 0; i < c->cl_nr_oss; i++) {
		int r = th_server_stop(c, i);
		if (r == -ECHILD || c->cl_oss[i].sv_bad_exit)
			rc = -ECHILD;
	}
	int r = th_server_stop(c, TH_MDS);
	if (r == -ECHILD || c->cl_mds.sv_bad_exit)
		rc = -ECHILD;
	if (th_failed() || rc || c->cl_start_failed) {
		fprintf(stderr, "\nharness: %s; server logs follow\n",
			c->cl_start_failed ? "the cluster did not start"
			: rc		   ? "a server exited uncleanly"
					   : "a test failed");
		th_cluster_dump_logs(c, TH_LOG_TAIL_LINES);
	}
	if (th_keep) {
		fprintf(stderr, "\nharness: TH_KEEP set: keeping %s\n", c->cl_dir);
	} else {
		int rrc = th_rm_rf(c->cl_dir);
		if (rrc)
			fprintf(stderr, "harness: rm -rf %s: %s\n", c->cl_dir, strerror(-rrc));
	}
	live_del(c);
	if (net_auth_get_default() == c->cl_auth) {
		/* another live cluster's keys (and environment) become this process's */
		struct th_cluster *o = NULL;
		for (int k = 0; k < TH_MAX_LIVE && !o; k++)
			o = th_live[k];
		net_auth_set_default(o ? o->cl_auth : NULL);
		if (o && o->cl_insecure) {
			unsetenv("WEIR_KEY_FILE");
			setenv("WEIR_INSECURE", "1", 1);
		} else if (o) {
			setenv("WEIR_KEY_FILE", o->cl_key_file, 1);
			unsetenv("WEIR_INSECURE");
		}
	}
	net_auth_free(c->cl_auth);
	free(c);
	return rc;
}

const char *th_cluster_mds_addr(const struct th_cluster *c)
{
	return c->cl_mds.sv_addr;
}

const char *th_cluster_dir(const struct th_cluster *c)
{
	return c->cl_dir;
}

const char *th_cluster_cli_out(const struct th_cluster *c)
{
	static char out[PATH_MAX];

	snprintf(out, sizeof(out), "%s/cli.out", c->cl_dir);
	return out;
}

int th_cluster_cli(const struct th_cluster *c, const char *fmt, ...)
{
	char args[2048], cmd[PATH_MAX * 2 + 2048 + 64];
	const char *out = th_cluster_cli_out(c);
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "'%s/weir' --mds %s %s >'%s' 2>&1", c->cl_bin,
		 th_cluster_mds_addr(c), args, out);
	int saved;
	if (th_netns_enter(c->cl_mds.sv_netns, &saved))
		return -1;
	st = system(cmd);
	th_netns_leave(saved);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "\n  weir %s: status 0x%x; its output:\n", args, st);
		snprintf(cmd, sizeof(cmd), "cat '%s' >&2", out);
		if (system(cmd) != 0)
			fprintf(stderr, "  (none)\n");
		return st == -1 ? -1 : (WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	return 0;
}

int th_cluster_nr_oss(const struct th_cluster *c)
{
	return c->cl_nr_oss;
}

int th_cluster_nr_osts(const struct th_cluster *c)
{
	return c->cl_nr_oss * c->cl_ost_per_oss;
}
