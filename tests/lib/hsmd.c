/*
 * tests/lib/hsmd.c - weir-hsmd next to a th_cluster; see hsmd.h.
 *
 * DESIGN. Everything runs on the test's main thread. The copytool is a child
 * made by fork/exec, with argv and envp built before fork() so the child
 * calls only async-signal-safe functions between fork and exec (tests hold
 * libweir threads). Live copytools are in hsmd_live[] for the atexit handler,
 * which acts only in the process that started them.
 */
#define _GNU_SOURCE
#include "hsmd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define HSMD_MAX_LIVE	   8
#define HSMD_MAX_ARGS	   64
#define HSMD_MAX_ENV	   512
#define HSMD_STOP_GRACE_MS 10000
#define HSMD_TAIL_LINES	   60

extern char **environ;

struct th_hsmd {
	pid_t hd_pid;	       /* 0 when not running */
	int hd_bad_exit;       /* exited uncleanly at some point */
	char hd_bin[PATH_MAX]; /* the weir-hsmd binary */
	char hd_log[PATH_MAX]; /* its log (in the cluster directory) */
	char hd_store[8192];   /* argv strings */
	char *hd_argv[HSMD_MAX_ARGS];
	char hd_envstore[4 * 1024]; /* our AWS_* strings */
	char *hd_env[HSMD_MAX_ENV];
};

static struct th_hsmd *hsmd_live[HSMD_MAX_LIVE];
static pid_t hsmd_owner;
static bool hsmd_atexit_set;

static void hsmd_atexit(void)
{
	if (getpid() != hsmd_owner)
		return;
	for (int i = 0; i < HSMD_MAX_LIVE; i++)
		if (hsmd_live[i] && hsmd_live[i]->hd_pid > 0) {
			kill(hsmd_live[i]->hd_pid, SIGKILL);
			waitpid(hsmd_live[i]->hd_pid, NULL, 0);
			hsmd_live[i]->hd_pid = 0;
		}
}

/* $BUILD/bin, else the bin/ next to the test binary's tests/ directory */
static int hsmd_find_bin(char *out, size_t len)
{
	const char *b = getenv("BUILD");
	char path[PATH_MAX];

	if (b && *b) {
		if ((size_t)snprintf(path, sizeof(path), "%s/bin/weir-hsmd", b) >= sizeof(path))
			return -ENAMETOOLONG;
	} else {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
		char *slash;

		if (n < 0)
			return -errno;
		path[n] = '\0';
		for (;;) {
			const char *base;

			slash = strrchr(path, '/');
			if (!slash || slash == path)
				return -ENOENT;
			*slash = '\0';
			base = strrchr(path, '/');
			base = base ? base + 1 : path;
			if (!strcmp(base, "tests"))
				break;
		}
		slash = strrchr(path, '/');
		if (!slash)
			return -ENOENT;
		strcpy(slash, "/bin/weir-hsmd");
	}
	snprintf(out, len, "%s", path);
	return access(out, X_OK) == 0 ? 0 : -ENOENT;
}

void th_hsmd_dump_log(const struct th_hsmd *h, int lines)
{
	char cmd[PATH_MAX + 64];

	fflush(stdout);
	fflush(stderr);
	fprintf(stderr, "---------- tail of weir-hsmd (%s) ----------\n", h->hd_log);
	snprintf(cmd, sizeof(cmd), "tail -n %d '%s' >&2", lines, h->hd_log);
	if (system(cmd) != 0)
		fprintf(stderr, "(no log)\n");
}

static void hsmd_note(const struct th_hsmd *h, const char *what)
{
	int fd = open(h->hd_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0)
		return;
	dprintf(fd, "==== harness: %s ====\n", what);
	close(fd);
}

static bool status_clean(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st) == 0;
	return WIFSIGNALED(st) && (WTERMSIG(st) == SIGTERM || WTERMSIG(st) == SIGKILL);
}

static void hsmd_reaped(struct th_hsmd *h, int st, const char *when)
{
	char msg[160];

	if (WIFEXITED(st))
		snprintf(msg, sizeof(msg), "weir-hsmd (pid %d) exited with status %d %s",
			 (int)h->hd_pid, WEXITSTATUS(st), when);
	else if (WIFSIGNALED(st))
		snprintf(msg, sizeof(msg), "weir-hsmd (pid %d) killed by signal %d (%s) %s",
			 (int)h->hd_pid, WTERMSIG(st), strsignal(WTERMSIG(st)), when);
	else
		snprintf(msg, sizeof(msg), "weir-hsmd (pid %d) status 0x%x %s", (int)h->hd_pid, st,
			 when);
	h->hd_pid = 0;
	hsmd_note(h, msg);
	if (!status_clean(st) || !strcmp(when, "unexpectedly")) {
		h->hd_bad_exit = 1;
		fprintf(stderr, "harness: %s\n", msg);
		th_hsmd_dump_log(h, HSMD_TAIL_LINES);
	}
}

bool th_hsmd_alive(struct th_hsmd *h)
{
	int st;
	pid_t r;

	if (h->hd_pid <= 0)
		return false;
	r = waitpid(h->hd_pid, &st, WNOHANG);
	if (r == 0)
		return true;
	if (r == h->hd_pid)
		hsmd_reaped(h, st, "unexpectedly");
	h->hd_pid = 0;
	return false;
}

static int hsmd_spawn(struct th_hsmd *h)
{
	char note[256];
	int logfd, nullfd, rc = 0;
	pid_t parent = getpid(), pid;
	sigset_t none;

	logfd = open(h->hd_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (logfd < 0)
		return -errno;
	nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nullfd < 0) {
		rc = -errno;
		goto out_close_log;
	}
	snprintf(note, sizeof(note), "start: %s --mds %s ...", h->hd_argv[0], h->hd_argv[2]);
	hsmd_note(h, note);
	sigemptyset(&none);
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		goto out_close_null;
	}
	if (pid == 0) {
		/* async-signal-safe calls only */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		dup2(nullfd, 0);
		dup2(logfd, 1);
		dup2(logfd, 2);
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execve(h->hd_argv[0], h->hd_argv, h->hd_env);
		static const char m[] = "harness: execve weir-hsmd failed\n";
		ssize_t w = write(2, m, sizeof(m) - 1);
		(void)w;
		_exit(127);
	}
	h->hd_pid = pid;
	/* a bad option or a missing setting makes it exit at once */
	for (int i = 0; i < 20; i++) {
		th_sleep_ms(10);
		if (!th_hsmd_alive(h)) {
			rc = -ECHILD;
			break;
		}
	}
out_close_null:
	close(nullfd);
out_close_log:
	close(logfd);
	return rc;
}

/* argv: weir-hsmd --mds ADDR --log LOG [--threads N] extra... */
static int hsmd_build_argv(struct th_hsmd *h, const char *mds, unsigned threads,
			   const char *const *extra)
{
	size_t used = 0;
	int n = 0;
#define ADD(...)                                                                                   \
	do {                                                                                       \
		int _l = snprintf(h->hd_store + used, sizeof(h->hd_store) - used, __VA_ARGS__);    \
		if (_l < 0 || (size_t)_l >= sizeof(h->hd_store) - used || n >= HSMD_MAX_ARGS - 1)  \
			return -E2BIG;                                                             \
		h->hd_argv[n++] = h->hd_store + used;                                              \
		used += (size_t)_l + 1;                                                            \
	} while (0)
	ADD("%s", h->hd_bin);
	ADD("--mds");
	ADD("%s", mds);
	ADD("--log");
	ADD("%s", h->hd_log);
	if (threads) {
		ADD("--threads");
		ADD("%u", threads);
	}
	for (const char *const *a = extra; a && *a; a++)
		ADD("%s", *a);
#undef ADD
	h->hd_argv[n] = NULL;
	return 0;
}

/* envp: ours without WEIR_LOG* and AWS_ENDPOINT_URL, plus the AWS_* settings */
static int hsmd_build_env(struct th_hsmd *h, const char *endpoint)
{
	static const char *const defaults[][2] = {
	    {"AWS_ACCESS_KEY_ID", "S3RVER"},
	    {"AWS_SECRET_ACCESS_KEY", "S3RVER"},
	    {"AWS_REGION", "us-east-1"},
	};
	size_t used = 0, n = 0;

	for (char **e = environ; *e; e++) {
		if (!strncmp(*e, "WEIR_LOG=", 9) || !strncmp(*e, "WEIR_LOG_LEVEL=", 15) ||
		    !strncmp(*e, "AWS_ENDPOINT_URL=", 17))
			continue;
		if (n >= HSMD_MAX_ENV - 8)
			return -E2BIG;
		h->hd_env[n++] = *e;
	}
#define ADDENV(...)                                                                                \
	do {                                                                                       \
		int _l =                                                                           \
		    snprintf(h->hd_envstore + used, sizeof(h->hd_envstore) - used, __VA_ARGS__);   \
		if (_l < 0 || (size_t)_l >= sizeof(h->hd_envstore) - used)                         \
			return -E2BIG;                                                             \
		h->hd_env[n++] = h->hd_envstore + used;                                            \
		used += (size_t)_l + 1;                                                            \
	} while (0)
	ADDENV("AWS_ENDPOINT_URL=%s", endpoint);
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		if (!getenv(defaults[i][0]))
			ADDENV("%s=%s", defaults[i][0], defaults[i][1]);
#undef ADDENV
	h->hd_env[n] = NULL;
	return 0;
}

int th_hsmd_start(struct th_cluster *c, const char *endpoint, unsigned threads,
		  const char *const *extra, struct th_hsmd **out)
{
	struct th_hsmd *h;
	int rc, slot = -1, k;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	rc = hsmd_find_bin(h->hd_bin, sizeof(h->hd_bin));
	if (rc) {
		fprintf(stderr, "harness: no weir-hsmd at %s (set BUILD to the build directory)\n",
			h->hd_bin);
		goto out_free;
	}
	for (int i = 0; i < HSMD_MAX_LIVE; i++)
		if (!hsmd_live[i]) {
			slot = i;
			break;
		}
	if (slot < 0) {
		rc = -EMFILE;
		goto out_free;
	}
	/* hsmd0.log, hsmd1.log, ...: one per copytool of the cluster */
	for (k = 0; k < 100; k++) {
		struct stat st;

		snprintf(h->hd_log, sizeof(h->hd_log), "%s/hsmd%d.log", th_cluster_dir(c), k);
		if (stat(h->hd_log, &st) < 0)
			break;
	}
	rc = hsmd_build_argv(h, th_cluster_mds_addr(c), threads, extra);
	if (!rc)
		rc = hsmd_build_env(h, endpoint);
	if (rc)
		goto out_free;
	if (!hsmd_atexit_set) {
		hsmd_owner = getpid();
		atexit(hsmd_atexit);
		hsmd_atexit_set = true;
	}
	hsmd_live[slot] = h;
	rc = hsmd_spawn(h);
	if (rc) {
		hsmd_live[slot] = NULL;
		goto out_free;
	}
	*out = h;
	return 0;

out_free:
	free(h);
	return rc;
}

int th_hsmd_restart(struct th_hsmd *h)
{
	if (th_hsmd_alive(h))
		return -EALREADY;
	return hsmd_spawn(h);
}

int th_hsmd_kill(struct th_hsmd *h)
{
	if (!th_hsmd_alive(h))
		return -ESRCH;
	hsmd_note(h, "kill -9");
	kill(h->hd_pid, SIGKILL);
	while (waitpid(h->hd_pid, NULL, 0) < 0 && errno == EINTR)
		;
	h->hd_pid = 0;
	return 0;
}

int th_hsmd_stop(struct th_hsmd *h)
{
	uint64_t deadline;
	int st = 0;

	if (!th_hsmd_alive(h))
		return -ESRCH;
	hsmd_note(h, "SIGTERM");
	kill(h->hd_pid, SIGTERM);
	deadline = th_now_ms() + HSMD_STOP_GRACE_MS;
	for (;;) {
		pid_t r = waitpid(h->hd_pid, &st, WNOHANG);

		if (r == h->hd_pid)
			break;
		if (r < 0 && errno != EINTR) {
			h->hd_pid = 0;
			return -ECHILD;
		}
		if (th_now_ms() > deadline) {
			fprintf(stderr, "harness: weir-hsmd ignored SIGTERM for %d ms; SIGKILL\n",
				HSMD_STOP_GRACE_MS);
			kill(h->hd_pid, SIGKILL);
			while (waitpid(h->hd_pid, &st, 0) < 0 && errno == EINTR)
				;
			hsmd_reaped(h, st, "after SIGTERM and SIGKILL");
			h->hd_bad_exit = 1;
			return -ECHILD;
		}
		th_sleep_ms(10);
	}
	hsmd_reaped(h, st, "after SIGTERM");
	return status_clean(st) ? 0 : -ECHILD;
}

pid_t th_hsmd_pid(const struct th_hsmd *h)
{
	return h->hd_pid;
}

const char *th_hsmd_log(const struct th_hsmd *h)
{
	return h->hd_log;
}

int th_hsmd_log_grep(const struct th_hsmd *h, const char *needle)
{
	FILE *f = fopen(h->hd_log, "r");
	char line[8192];
	int found = 0;

	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

int th_hsmd_free(struct th_hsmd *h)
{
	int rc = 0;

	if (!h)
		return 0;
	if (th_hsmd_alive(h))
		rc = th_hsmd_stop(h);
	if (th_failed() && !h->hd_bad_exit)
		th_hsmd_dump_log(h, HSMD_TAIL_LINES);
	for (int i = 0; i < HSMD_MAX_LIVE; i++)
		if (hsmd_live[i] == h)
			hsmd_live[i] = NULL;
	free(h);
	return rc;
}
