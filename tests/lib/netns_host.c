/*
 * tests/lib/netns_host.c - programs and in-process calls on the hosts of
 * netns.h, and th_spawn() and th_proc_stop() (harness_int.h), with which
 * harness.c starts and stops the cluster's servers too.
 *
 * DESIGN. Everything runs on the test's main thread. A program on a host
 * is a child made by fork() that joins the host's network namespace with
 * setns(2) and execs; between fork and exec it makes only
 * async-signal-safe calls, as the test may have threads. A th_host_call()
 * child instead runs a function: it reports over a pipe, one line each,
 * the CUnit failures it adds ("A\t<line>\t<file>\t<condition>") and how it
 * ended ("R\t<rc>", "F" for a fatal assertion, "E\t<errno>" when it could
 * not join the namespace); the parent records the failures again in its
 * own CUnit registry, so they count and print as the test's own.
 */
#define _GNU_SOURCE
#include "netns.h"
#include "netns_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <CUnit/TestDB.h>
#include <CUnit/TestRun.h>

#include "common/util.h"
#include "harness_int.h"

#define TH_RUN_TIMEOUT_MS 120000
#define TH_HOST_STOP_GRACE_MS 10000

extern char **environ;

struct th_call {
	pid_t c_pid;
	int c_fd; /* the child's report */
	char c_first; /* a first byte of it read by th_host_call_start() */
	char c_host[16];
};

/* ------------------------------------------------------------ processes */

int th_spawn(const char *netns, char *const argv[], char *const envp[], int out_fd, pid_t *pid)
{
	char path[PATH_MAX];
	int nsfd = -1;
	int rc;

	if (netns && *netns) {
		snprintf(path, sizeof(path), "/run/netns/%s", netns);
		nsfd = open(path, O_RDONLY | O_CLOEXEC);
		if (nsfd < 0)
			return -errno;
	}
	int nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nullfd < 0) {
		rc = -errno;
		goto out_close_ns;
	}
	char *const *env = envp ? envp : environ;
	pid_t parent = getpid();
	sigset_t none;
	sigemptyset(&none);
	pid_t p = fork();
	if (p < 0) {
		rc = -errno;
		goto out_close_null;
	}
	if (p == 0) {
		/* async-signal-safe calls only */
		int ofd = out_fd >= 0 ? out_fd : nullfd;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		dup2(nullfd, 0);
		dup2(ofd, 1);
		dup2(ofd, 2);
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		static const char m1[] = "harness: setns into the host's namespace failed\n";
		static const char m2[] = "harness: execve failed: no such program or not executable\n";
		if (nsfd >= 0 && setns(nsfd, CLONE_NEWNET) < 0) {
			ssize_t w = write(2, m1, sizeof(m1) - 1);
			(void)w;
			_exit(127);
		}
		execve(argv[0], argv, env);
		ssize_t w = write(2, m2, sizeof(m2) - 1);
		(void)w;
		_exit(127);
	}
	*pid = p;
	rc = 0;
out_close_null:
	close(nullfd);
out_close_ns:
	if (nsfd >= 0)
		close(nsfd);
	return rc;
}

int th_proc_stop(pid_t pid, const char *name, int grace_ms, int *status)
{
	uint64_t deadline = th_now_ms() + (uint64_t)grace_ms;
	int st = 0;

	kill(pid, SIGTERM);
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			return -ECHILD;
		if (th_now_ms() > deadline) {
			fprintf(stderr, "harness: %s (pid %d) ignored SIGTERM for %d ms; SIGKILL\n",
				name, (int)pid, grace_ms);
			kill(pid, SIGKILL);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			if (status)
				*status = st;
			return -ETIMEDOUT;
		}
		th_sleep_ms(10);
	}
	if (status)
		*status = st;
	return 0;
}

static int status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 255;
}

int th_run_capture(const char *netns, char *const argv[], char *const envp[], int timeout_ms,
		   char **out)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid;
	int rc = th_spawn(netns, argv, envp, pfd[1], &pid);
	close(pfd[1]);
	if (rc) {
		close(pfd[0]);
		return rc;
	}
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	uint64_t deadline = th_now_ms() + (uint64_t)timeout_ms;
	int st = 0;
	bool reaped = false, timed_out = false;
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		int n = poll(&p, 1, reaped ? 0 : 100);
		if (n > 0) {
			if (buf && cap - len < 2048) {
				char *nb = realloc(buf, cap * 2);
				if (nb) {
					buf = nb;
					cap *= 2;
				}
			}
			char scratch[2048];
			char *dst = buf && cap - len > 1 ? buf + len : scratch;
			size_t room = buf && cap - len > 1 ? cap - len - 1 : sizeof(scratch);
			ssize_t r = read(pfd[0], dst, room);
			if (r > 0) {
				if (dst != scratch)
					len += (size_t)r;
				continue;
			}
			if (r < 0 && errno == EINTR)
				continue;
			break; /* EOF: every writer is gone */
		}
		if (n < 0 && errno != EINTR)
			break;
		if (reaped)
			break; /* it exited and nothing more is there (a daemon may hold the pipe) */
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			reaped = true;
		else if (th_now_ms() > deadline) {
			timed_out = true;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			break;
		}
	}
	close(pfd[0]);
	if (!reaped)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	if (buf)
		buf[len] = 0;
	if (out)
		*out = buf;
	else
		free(buf);
	return timed_out ? -ETIMEDOUT : status_code(st);
}

/* ------------------------------------------------------------ programs on a host */

/* argv[0] as a path: as given when it has a '/', else from bin/ then PATH. */
static int resolve(const struct th_net *net, const char *prog, char *buf, size_t len)
{
	if (strchr(prog, '/')) {
		snprintf(buf, len, "%s", prog);
		return access(buf, X_OK) ? -ENOENT : 0;
	}
	if ((size_t)snprintf(buf, len, "%s/%s", net->n_bin, prog) < len && !access(buf, X_OK))
		return 0;
	const char *path = getenv("PATH");
	char dirs[4096];
	snprintf(dirs, sizeof(dirs), "%s", path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (char *save, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if ((size_t)snprintf(buf, len, "%s/%s", d, prog) < len && !access(buf, X_OK))
			return 0;
	}
	fprintf(stderr, "harness: %s: not in %s nor in PATH\n", prog, net->n_bin);
	return -ENOENT;
}

/*
 * Our environment with PATH starting with bin/, and argv with argv[0]
 * resolved: one malloc'ed block (free() *env; argv points into it).
 */
static int prepare(const struct th_net *net, const char *const argv[], char ***argv_out,
		   char ***env_out)
{
	size_t nenv = 0, narg = 0, bytes = 0;
	while (environ[nenv])
		nenv++;
	while (argv[narg])
		narg++;
	if (narg == 0)
		return -EINVAL;
	const char *path = getenv("PATH");
	bytes = PATH_MAX + strlen(net->n_bin) + (path ? strlen(path) : 0) + 16;
	char **env = malloc((nenv + 2 + narg + 1) * sizeof(char *) + bytes);
	if (!env)
		return -ENOMEM;
	char **av = env + nenv + 2;
	char *store = (char *)(av + narg + 1);
	size_t k = 0;
	for (size_t i = 0; i < nenv; i++)
		if (strncmp(environ[i], "PATH=", 5))
			env[k++] = environ[i];
	int l = snprintf(store, bytes - PATH_MAX, "PATH=%s%s%s", net->n_bin, path ? ":" : "",
			 path ? path : "");
	env[k++] = store;
	env[k] = NULL;
	char *prog = store + l + 1;
	int rc = resolve(net, argv[0], prog, PATH_MAX);
	if (rc) {
		free(env);
		return rc;
	}
	av[0] = prog;
	for (size_t i = 1; i <= narg; i++)
		av[i] = (char *)argv[i];
	*argv_out = av;
	*env_out = env;
	return 0;
}

int th_host_spawn(struct th_host *h, const char *const argv[], const char *log, pid_t *pid)
{
	struct th_net *net = h->h_net;
	struct th_proc *slot = NULL;
	for (int i = 0; i < TH_NET_MAX_PROCS && !slot; i++)
		if (!net->n_procs[i].pr_pid)
			slot = &net->n_procs[i];
	if (!slot)
		return -ENOSPC;
	char **av, **env;
	int rc = prepare(net, argv, &av, &env);
	if (rc)
		return rc;
	const char *base = strrchr(av[0], '/') ? strrchr(av[0], '/') + 1 : av[0];
	char logp[PATH_MAX];
	if (!log) {
		snprintf(logp, sizeof(logp), "%s/%s-%s.log", net->n_dir, h->h_name, base);
		log = logp;
	}
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		goto out_free;
	}
	dprintf(fd, "==== harness: on %s (%s):", h->h_name, h->h_ip);
	for (int i = 0; av[i]; i++)
		dprintf(fd, " %s", av[i]);
	dprintf(fd, " ====\n");
	rc = th_spawn(h->h_netns, av, env, fd, pid);
	close(fd);
	if (!rc) {
		slot->pr_pid = *pid;
		slot->pr_host = h;
		snprintf(slot->pr_name, sizeof(slot->pr_name), "%s:%s", h->h_name, base);
	}
out_free:
	free(env);
	return rc;
}

static struct th_proc *proc_of(struct th_net *net, pid_t pid)
{
	for (int i = 0; i < TH_NET_MAX_PROCS; i++)
		if (pid > 0 && net->n_procs[i].pr_pid == pid)
			return &net->n_procs[i];
	return NULL;
}

static int proc_stop(struct th_proc *pr)
{
	int st = 0;
	int rc = th_proc_stop(pr->pr_pid, pr->pr_name, TH_HOST_STOP_GRACE_MS, &st);
	pr->pr_pid = 0;
	if (rc == -ECHILD)
		return rc;
	if ((WIFEXITED(st) && WEXITSTATUS(st) == 0) || (WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM))
		return 0;
	return status_code(st);
}

int th_host_stop(struct th_host *h, pid_t pid)
{
	struct th_proc *pr = proc_of(h->h_net, pid);
	if (!pr || pr->pr_host != h)
		return -ECHILD;
	return proc_stop(pr);
}

void th_net_procs_stop(struct th_net *net)
{
	for (int i = 0; i < TH_NET_MAX_PROCS; i++)
		if (net->n_procs[i].pr_pid)
			proc_stop(&net->n_procs[i]);
}

void th_net_procs_kill(struct th_net *net)
{
	for (int i = 0; i < TH_NET_MAX_PROCS; i++)
		if (net->n_procs[i].pr_pid > 0)
			kill(net->n_procs[i].pr_pid, SIGKILL);
}

int th_host_run(struct th_host *h, const char *const argv[], char **out)
{
	char **av, **env;
	int rc = prepare(h->h_net, argv, &av, &env);
	if (rc)
		return rc;
	char *o = NULL;
	rc = th_run_capture(h->h_netns, av, env, TH_RUN_TIMEOUT_MS, &o);
	if (rc == -ETIMEDOUT)
		fprintf(stderr, "harness: on %s: %s ran over %d s; killed\n", h->h_name, av[0],
			TH_RUN_TIMEOUT_MS / 1000);
	if (!out && rc != 0) {
		fprintf(stderr, "harness: on %s: %s: status %d; its output:\n%s", h->h_name,
			av[0], rc, o ? o : "");
		free(o);
	} else if (out) {
		*out = o ? o : strdup("");
	} else {
		free(o);
	}
	free(env);
	return rc;
}

int th_host_sh(struct th_host *h, char **out, const char *fmt, ...)
{
	va_list ap;
	char *cmd = NULL;

	va_start(ap, fmt);
	int l = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	if (l < 0)
		return -ENOMEM;
	int rc = th_host_run(h, (const char *const[]){ "/bin/sh", "-c", cmd, NULL }, out);
	free(cmd);
	return rc;
}

/* ------------------------------------------------------------ in-process calls */

/* The child of th_host_call_start(): never returns. */
static void call_child(int nsfd, int wfd, int (*fn)(void *), void *arg, unsigned nrec0)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (setns(nsfd, CLONE_NEWNET) < 0) {
		dprintf(wfd, "E\t%d\n", errno);
		_exit(126);
	}
	close(nsfd);
	dprintf(wfd, "S\n"); /* on the host: th_host_call_start() returns */
	/* a fatal assertion jumps here, not back into the parent's CUnit run */
	static jmp_buf jb;
	volatile int fatal = 0, rc = 0;
	CU_pTest t = CU_get_current_test();
	if (t)
		t->pJumpBuf = &jb;
	if (t && setjmp(jb))
		fatal = 1;
	else
		rc = fn(arg);
	unsigned k = 0;
	for (CU_pFailureRecord f = CU_get_failure_list(); f; f = f->pNext, k++) {
		if (k < nrec0)
			continue;
		char cond[512];
		snprintf(cond, sizeof(cond), "%s", f->strCondition ? f->strCondition : "");
		for (char *c = cond; *c; c++)
			if (*c == '\n' || *c == '\t')
				*c = ' ';
		dprintf(wfd, "A\t%u\t%s\t%s\n", f->uiLineNumber,
			f->strFileName ? f->strFileName : "?", cond);
	}
	if (fatal)
		dprintf(wfd, "F\n");
	else
		dprintf(wfd, "R\t%d\n", rc);
	fflush(stdout);
	fflush(stderr);
	_exit(0);
}

int th_host_call_start(struct th_host *h, int (*fn)(void *arg), void *arg, struct th_call **out)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "/run/netns/%s", h->h_netns);
	struct th_call *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	snprintf(c->c_host, sizeof(c->c_host), "%s", h->h_name);
	int rc;
	int nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0) {
		rc = -errno;
		goto out_free;
	}
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		rc = -errno;
		goto out_close_ns;
	}
	unsigned nrec0 = CU_get_number_of_failure_records();
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(pfd[0]);
		close(pfd[1]);
		goto out_close_ns;
	}
	if (pid == 0) {
		close(pfd[0]);
		call_child(nsfd, pfd[1], fn, arg, nrec0);
	}
	close(pfd[1]);
	close(nsfd);
	c->c_pid = pid;
	c->c_fd = pfd[0];
	/* wait until it is on the host ("S"), or has said why not ("E") */
	char ch = 0;
	ssize_t r;
	while ((r = read(c->c_fd, &ch, 1)) < 0 && errno == EINTR)
		;
	if (r != 1 || ch != 'S') {
		c->c_first = r == 1 ? ch : 0;
		return th_host_call_wait(c);
	}
	*out = c;
	return 0;

out_close_ns:
	close(nsfd);
out_free:
	free(c);
	return rc;
}

/* Record one "A\t<line>\t<file>\t<condition>" report as a CUnit failure here. */
static void call_failure(const struct th_call *c, char *rec)
{
	char *save;
	char *line = strtok_r(rec + 2, "\t", &save);
	char *file = strtok_r(NULL, "\t", &save);
	char *cond = strtok_r(NULL, "", &save);
	char msg[640];
	snprintf(msg, sizeof(msg), "[on host %s] %s", c->c_host, cond ? cond : "");
	CU_assertImplementation(CU_FALSE, line ? (unsigned)strtoul(line, NULL, 10) : 0, msg,
				file ? file : "?", "", CU_FALSE);
}

int th_host_call_wait(struct th_call *c)
{
	if (!c)
		return -EINVAL;
	/* the report is small; read it all, then reap */
	char *rep = NULL;
	size_t len = 0, cap = 0;
	if (c->c_first) {
		rep = malloc(4096);
		if (rep) {
			rep[len++] = c->c_first;
			cap = 4096;
		}
	}
	for (;;) {
		if (cap - len < 1024) {
			char *n = realloc(rep, cap + 4096);
			if (!n)
				break;
			rep = n;
			cap += 4096;
		}
		ssize_t r = read(c->c_fd, rep + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(c->c_fd);
	int st = 0;
	while (waitpid(c->c_pid, &st, 0) < 0 && errno == EINTR)
		;
	int rc = -ECHILD;
	bool ended = false;
	if (rep) {
		rep[len] = 0;
		char *save;
		for (char *l = strtok_r(rep, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			if (l[0] == 'A' && l[1] == '\t') {
				call_failure(c, l);
			} else if (l[0] == 'R' && l[1] == '\t') {
				rc = (int)strtol(l + 2, NULL, 10);
				ended = true;
			} else if (l[0] == 'F') {
				rc = -ECANCELED;
				ended = true;
			} else if (l[0] == 'E' && l[1] == '\t') {
				rc = -(int)strtol(l + 2, NULL, 10);
				ended = true;
				fprintf(stderr, "harness: cannot join host %s's namespace: %s\n",
					c->c_host, strerror(-rc));
			}
		}
	}
	if (!ended)
		fprintf(stderr, "harness: the call on host %s (pid %d) ended without finishing: "
				"status %d\n", c->c_host, (int)c->c_pid, status_code(st));
	free(rep);
	free(c);
	return rc;
}

int th_host_call(struct th_host *h, int (*fn)(void *arg), void *arg)
{
	struct th_call *c;
	int rc = th_host_call_start(h, fn, arg, &c);
	return rc ? rc : th_host_call_wait(c);
}

/* ------------------------------------------------------------ sockets */

int th_host_enter(const struct th_host *h, int *saved)
{
	return th_netns_enter(h->h_netns, saved);
}

void th_host_leave(int saved)
{
	th_netns_leave(saved);
}

int th_host_tcp_connect(struct th_host *h, const char *addr, int timeout_ms)
{
	char host[64];
	uint16_t port;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	if (weir_parse_hostport(addr, host, sizeof(host), &port) ||
	    inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -EINVAL;
	sa.sin_port = htons(port);
	int saved;
	int rc = th_host_enter(h, &saved);
	if (rc)
		return rc;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	rc = fd < 0 ? -errno : 0;
	th_host_leave(saved);
	if (rc)
		return rc;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		if (rc == -EINPROGRESS) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			int n;
			while ((n = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
				;
			int err = 0;
			socklen_t el = sizeof(err);
			if (n == 0)
				rc = -ETIMEDOUT;
			else if (n < 0)
				rc = -errno;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
				rc = -errno;
			else
				rc = -err;
		}
	}
	if (rc) {
		close(fd);
		return rc;
	}
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

const char *th_host_name(const struct th_host *h)
{
	return h->h_name;
}

const char *th_host_ip(const struct th_host *h)
{
	return h->h_ip;
}

const char *th_host_netns(const struct th_host *h)
{
	return h->h_netns;
}
