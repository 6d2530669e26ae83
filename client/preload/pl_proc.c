/*
 * client/preload/pl_proc.c - processes: fork (and vfork, _Fork), the exec
 * family, posix_spawn, system, popen, _exit, and the state handed to a new
 * program image.
 *
 * fork: pthread_atfork handlers lock the descriptor table across the fork
 * and take the child's references on the shared descriptions; the child
 * forgets the parent's mount and handles (pl_fork_child) and re-opens each
 * file by FID (weir_fid_open) at its first use. vfork is a fork here (the
 * child runs the shim's code, which a vfork child must not).
 *
 * exec: before the new image replaces this one, shared writable mappings
 * are written back and every handle is closed (sizes reported to the MDS);
 * the descriptors that survive exec (no FD_CLOEXEC), the shared table's
 * memfd and a Weir working directory are described in WEIR_PRELOAD_STATE:
 *   1;pid=P;shm=FD;cwd=HEX;f=FD,SLOT,KIND,FLAGS,POS,SEQ,OID,HEXPATH;...;rel=SLOT,...
 * which the new image's shim reads at start-up (pl_state_adopt) and removes
 * from its environment. A program stored in Weir is exec'd from a memfd
 * holding a copy of it (execveat AT_EMPTY_PATH; scripts through /dev/fd/N).
 * posix_spawn, system and popen pass the same state to their child (the
 * parent takes the child's references first).
 */
#define _GNU_SOURCE
#include "pl_int.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

extern char **environ;
pid_t _Fork(void);

/* ------------------------------------------------------------ fork */

void pl_atfork_prepare(void)
{
	pl_fork_prepare();
}

void pl_atfork_parent(void)
{
	pl_fork_parent();
}

void pl_atfork_child(void)
{
	pl_fork_child();
}

PL_EXPORT pid_t fork(void)
{
	pid_t pid = PL_REAL(fork)();

	if (pid < 0 && pl_conf.pc_on)
		pl_fork_failed();
	return pid;
}

PL_EXPORT pid_t vfork(void)
{
	return fork();
}

PL_EXPORT pid_t _Fork(void)
{
	if (!pl_conf.pc_on)
		return PL_REAL(_Fork)();
	pl_fork_prepare();
	pid_t pid = PL_REAL(_Fork)();
	if (pid == 0) {
		pl_fork_child();
	} else {
		pl_fork_parent();
		if (pid < 0)
			pl_fork_failed();
	}
	return pid;
}

/* ------------------------------------------------------------ the state string */

struct pl_buf {
	char *b_s;
	size_t b_len, b_cap;
};

static void pl_buf_add(struct pl_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void pl_buf_add(struct pl_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!b->b_s && b->b_cap)
		return; /* an earlier allocation failed */
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->b_s ? b->b_s + b->b_len : NULL, b->b_s ? b->b_cap - b->b_len : 0,
			      fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->b_s && b->b_len + (size_t)n < b->b_cap)
			break;
		size_t cap = (b->b_cap + (size_t)n + 1) * 2;
		char *s = realloc(b->b_s, cap);
		if (!s) {
			free(b->b_s);
			b->b_s = NULL;
			b->b_cap = 1;
			return;
		}
		b->b_s = s;
		b->b_cap = cap;
	}
	b->b_len += (size_t)n;
}

static void pl_buf_hex(struct pl_buf *b, const char *s)
{
	for (; *s; s++)
		pl_buf_add(b, "%02x", (unsigned char)*s);
}

/* Slots the parent took for a spawned child (given back if the spawn fails). */
struct pl_spawn_refs {
	int sr_slots[256];
	int sr_nr;
};

/*
 * Describe what the next image inherits. \a refs (spawn) takes a reference
 * for the child on each slot it inherits; NULL (exec) lists the slots whose
 * descriptors all close on exec as rel=. \return "WEIR_PRELOAD_STATE=..."
 * (malloc'd) or NULL when there is nothing to pass or no memory.
 */
static char *pl_state_build(struct pl_spawn_refs *refs)
{
	struct pl_buf b = {0};
	char wcwd[PL_PATH_MAX];
	bool any = false;

	pl_buf_add(&b, "%s=1;pid=%d", PL_STATE_ENV, (int)getpid());
	if (pl_cwd_get(wcwd)) {
		pl_buf_add(&b, ";cwd=");
		pl_buf_hex(&b, wcwd);
		any = true;
	}
	pl_tab_lock();
	if (pl_shm_fd() >= 0)
		pl_buf_add(&b, ";shm=%d", pl_shm_fd());
	for (struct pl_file *f = pl_files_first(); f; f = f->pf_next) {
		int fds[64], n = pl_file_fds(f, fds, 64), kept = 0;
		for (int i = 0; i < n; i++) {
			int fl = PL_REAL(fcntl)(fds[i], F_GETFD);
			if (fl < 0 || (fl & FD_CLOEXEC))
				continue;
			pl_buf_add(&b, ";f=%d,%d,%d,%d,%llu,%llu,%llu,", fds[i], f->pf_slot,
				   (int)f->pf_kind, f->pf_sd->sd_flags,
				   (unsigned long long)f->pf_sd->sd_pos,
				   (unsigned long long)f->pf_fid.seq,
				   (unsigned long long)f->pf_fid.oid);
			pl_buf_hex(&b, f->pf_path);
			kept++;
			any = true;
		}
		if (refs && kept && refs->sr_nr < 256) {
			atomic_fetch_add(&f->pf_sd->sd_refs, 1);
			refs->sr_slots[refs->sr_nr++] = f->pf_slot;
		}
		if (!refs && !kept && n) {
			pl_buf_add(&b, ";rel=%d", f->pf_slot);
			any = true;
		}
	}
	pl_tab_unlock();
	if (!any) {
		free(b.b_s);
		return NULL;
	}
	return b.b_s;
}

/*
 * The shared table's memfd survives the next exec (\a on) or not. Other
 * threads forking meanwhile may inherit it too; it is only a descriptor.
 */
static void pl_shm_inherit(bool on)
{
	int fd = pl_shm_fd();

	if (fd >= 0)
		PL_REAL(fcntl)(fd, F_SETFD, on ? 0 : FD_CLOEXEC);
}

static void pl_spawn_refs_undo(struct pl_spawn_refs *refs)
{
	for (int i = 0; i < refs->sr_nr; i++)
		pl_sd_release_slot(refs->sr_slots[i]);
	refs->sr_nr = 0;
}

/* \a envp with our variable replaced by \a var (or removed when NULL). Malloc'd array. */
static char **pl_env_with(char *const *envp, char *var)
{
	size_t n = 0, len = strlen(PL_STATE_ENV);

	for (char *const *e = envp; e && *e; e++)
		n++;
	char **out = malloc((n + 2) * sizeof(*out));
	if (!out)
		return NULL;
	size_t j = 0;
	for (char *const *e = envp; e && *e; e++)
		if (strncmp(*e, PL_STATE_ENV, len) || (*e)[len] != '=')
			out[j++] = *e;
	if (var)
		out[j++] = var;
	out[j] = NULL;
	return out;
}

/* Unhex \a in (2n chars) into \a out (n + 1 bytes). \return 0 or -EINVAL. */
static int pl_unhex(const char *in, size_t n2, char *out, size_t cap)
{
	if (n2 % 2 || n2 / 2 >= cap)
		return -EINVAL;
	for (size_t i = 0; i < n2; i += 2) {
		unsigned v;
		char t[3] = {in[i], in[i + 1], 0};
		if (sscanf(t, "%2x", &v) != 1)
			return -EINVAL;
		out[i / 2] = (char)v;
	}
	out[n2 / 2] = '\0';
	return 0;
}

/* Is \a fd an O_PATH descriptor of /dev/null (one of our reserved ones)? */
static bool pl_fd_is_reserved(int fd)
{
	struct stat st;
	int fl = PL_REAL(fcntl)(fd, F_GETFL);

	return fl >= 0 && (fl & O_PATH) && !PL_REAL(fstat)(fd, &st) && S_ISCHR(st.st_mode) &&
	       st.st_rdev == makedev(1, 3);
}

void pl_state_adopt(void)
{
	const char *env = getenv(PL_STATE_ENV);
	char *s, *save = NULL;
	bool exec_self;
	int pid = -1;

	if (!env)
		return;
	s = strdup(env);
	unsetenv(PL_STATE_ENV); /* for us only: our children get a fresh one */
	if (!s)
		return;
	if (strncmp(s, "1;pid=", 6) || sscanf(s + 6, "%d", &pid) != 1 ||
	    (pid != getpid() && pid != getppid()))
		goto out; /* not left for this process */
	exec_self = pid == getpid();
	for (char *tok = strtok_r(s, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		if (!strncmp(tok, "shm=", 4)) {
			int fd = atoi(tok + 4);
			if (pl_shm_attach(fd))
				PL_LOG_DEBUG("shm=%d: inherited table not usable", fd);
		} else if (!strncmp(tok, "cwd=", 4)) {
			char cwd[PL_PATH_MAX];
			if (!pl_unhex(tok + 4, strlen(tok + 4), cwd, sizeof(cwd)))
				pl_cwd_set(cwd);
		} else if (!strncmp(tok, "rel=", 4)) {
			if (exec_self)
				pl_sd_release_slot(atoi(tok + 4));
		} else if (!strncmp(tok, "f=", 2)) {
			int fd, slot, kind, flags, off = 0;
			unsigned long long pos, seq, oid;
			char path[PL_PATH_MAX];
			if (sscanf(tok + 2, "%d,%d,%d,%d,%llu,%llu,%llu,%n", &fd, &slot, &kind,
				   &flags, &pos, &seq, &oid, &off) != 7 ||
			    !off)
				continue;
			const char *hex = tok + 2 + off;
			if (pl_unhex(hex, strlen(hex), path, sizeof(path)) || kind < PL_K_FILE ||
			    kind > PL_K_PATH || !pl_fd_is_reserved(fd))
				continue;
			weir_fid_t fid = {.seq = seq, .oid = oid};
			int rc = pl_fd_adopt(fd, (enum pl_kind)kind, path, &fid, flags, pos, slot);
			if (rc)
				PL_LOG_DEBUG("fd=%d rc=%d: inherited descriptor not adopted", fd,
					     rc);
		}
	}
out:
	free(s);
}

/* ------------------------------------------------------------ exec */

/* Everything an exec does before the real one. \return the new environment (malloc'd). */
static char **pl_exec_prepare(char *const *envp, char **var, int *shm_fd)
{
	*shm_fd = -1;
	*var = NULL;
	if (!pl_conf.pc_on)
		return pl_env_with(envp, NULL);
	pl_mmap_flush_all();
	*var = pl_state_build(NULL);
	pl_files_close_handles();
	if (*var && pl_shm_fd() >= 0) {
		*shm_fd = pl_shm_fd();
		pl_shm_inherit(true); /* the new image maps the same table */
	}
	return pl_env_with(envp, *var);
}

/* The exec failed: undo what pl_exec_prepare() changed. */
static void pl_exec_undo(char **env, char *var, int shm_fd)
{
	int e = errno;

	if (shm_fd >= 0)
		PL_REAL(fcntl)(shm_fd, F_SETFD, FD_CLOEXEC);
	free(env);
	free(var);
	errno = e;
}

/*
 * A copy of Weir file \a wpath (or of open Weir descriptor \a fd when
 * \a wpath is NULL) in a memfd. \return the memfd or -errno.
 */
static int pl_exec_memfd(const char *wpath, int fd)
{
	struct stat st;
	struct pl_file *f;
	char head[2] = {0};
	int rc, src = fd, mfd = -1;

	if (wpath) {
		rc = pl_stat_weir(wpath, false, &st);
		if (rc)
			return rc;
		if (!S_ISREG(st.st_mode))
			return -EACCES;
		rc = pl_access_weir(wpath, X_OK, true);
		if (rc)
			return rc;
		src = pl_open_weir(wpath, O_RDONLY | O_CLOEXEC, 0);
		if (src < 0)
			return src;
	}
	f = pl_fd_get(src);
	if (!f) {
		rc = -EBADF;
		goto out_close;
	}
	rc = (int)pl_io_pread(f, head, 2, 0);
	bool script = rc == 2 && head[0] == '#' && head[1] == '!';
	mfd = memfd_create(strrchr(f->pf_path, '/') + 1, script ? 0 : MFD_CLOEXEC);
	if (mfd < 0) {
		rc = -errno;
		goto out_put;
	}
	char *buf = malloc(1 << 20);
	if (!buf) {
		rc = -ENOMEM;
		goto out_put;
	}
	uint64_t off = 0;
	for (;;) {
		ssize_t n = pl_io_pread(f, buf, 1 << 20, off);
		if (n < 0) {
			rc = (int)n;
			break;
		}
		if (n == 0) {
			rc = 0;
			break;
		}
		if (PL_REAL(pwrite)(mfd, buf, (size_t)n, (off_t)off) != n) {
			rc = -EIO;
			break;
		}
		off += (uint64_t)n;
	}
	free(buf);
out_put:
	pl_file_put(f);
out_close:
	if (wpath)
		pl_fd_close(src);
	if (rc < 0 && mfd >= 0)
		PL_REAL(close)(mfd);
	return rc < 0 ? rc : mfd;
}

static int pl_execve_local(const char *path, char *const argv[], char *const envp[], bool search);

static int pl_execve_weir(const char *wpath, int fd, char *const argv[], char *const envp[])
{
	char real[PL_PATH_MAX];
	char *var;
	int shm;

	if (wpath) {
		/* a symlink in Weir may lead to a local program (a venv's bin/python) */
		int rc = pl_realpath_weir(wpath, real);
		if (rc == -EXDEV)
			return pl_execve_local(real, argv, envp, false);
		if (rc)
			return rc;
	}
	int mfd = pl_exec_memfd(wpath, fd);

	if (mfd < 0)
		return mfd;
	char **env = pl_exec_prepare(envp, &var, &shm);
	if (!env) {
		PL_REAL(close)(mfd);
		return -ENOMEM;
	}
	PL_REAL(execveat)(mfd, "", argv, env, AT_EMPTY_PATH);
	int rc = -errno;
	pl_exec_undo(env, var, shm);
	PL_REAL(close)(mfd);
	return rc;
}

/* execve of a local \a path (already resolved). */
static int pl_execve_local(const char *path, char *const argv[], char *const envp[], bool search)
{
	char *var;
	int shm;
	char **env = pl_exec_prepare(envp, &var, &shm);

	if (!env)
		return -ENOMEM;
	if (search)
		PL_REAL(execvpe)(path, argv, env);
	else
		PL_REAL(execve)(path, argv, env);
	int rc = -errno;
	pl_exec_undo(env, var, shm);
	return rc;
}

PL_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	char wpath[PL_PATH_MAX];
	int w;

	if (!pl_active())
		return PL_REAL(execve)(path, argv, envp);
	w = pl_resolve_path(path, wpath);
	if (w < 0)
		return pl_ret(w, 0);
	if (w == PL_WEIR)
		return pl_ret(pl_execve_weir(wpath, -1, argv, envp), 0);
	return pl_ret(pl_execve_local(w == PL_LOCAL_ABS ? wpath : path, argv, envp, false), 0);
}

PL_EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

/* execvp's search, with Weir directories in PATH served by the shim. */
PL_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	char wpath[PL_PATH_MAX], cand[PL_PATH_MAX];
	const char *path;
	bool weir_in_path = false;

	if (!pl_active())
		return PL_REAL(execvpe)(file, argv, envp);
	if (!*file || strchr(file, '/'))
		return execve(file, argv, envp);
	path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	for (const char *p = path; *p;) {
		const char *e = strchrnul(p, ':');
		snprintf(cand, sizeof(cand), "%.*s/%s", (int)(e - p), p, file);
		if (pl_resolve_path(cand, wpath) == PL_WEIR)
			weir_in_path = true;
		p = *e ? e + 1 : e;
	}
	if (!weir_in_path)
		return pl_ret(pl_execve_local(file, argv, envp, true), 0);
	int last = -ENOENT;
	for (const char *p = path;;) {
		const char *e = strchrnul(p, ':');
		snprintf(cand, sizeof(cand), "%.*s%s%s", (int)(e - p), p, e == p ? "" : "/", file);
		int w = pl_resolve_path(cand, wpath);
		int rc = w == PL_WEIR ? pl_execve_weir(wpath, -1, argv, envp)
			 : w >= 0
			     ? pl_execve_local(w == PL_LOCAL_ABS ? wpath : cand, argv, envp, false)
			     : w;
		if (rc != -ENOENT && rc != -ENOTDIR)
			last = rc;
		if (rc != -ENOENT && rc != -ENOTDIR && rc != -EACCES)
			return pl_ret(rc, 0);
		if (!*e)
			break;
		p = e + 1;
	}
	return pl_ret(last, 0);
}

PL_EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

PL_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (!pl_active())
		return PL_REAL(fexecve)(fd, argv, envp);
	if (pl_fd_is_weir(fd))
		return pl_ret(pl_execve_weir(NULL, fd, argv, envp), 0);
	char *var;
	int shm;
	char **env = pl_exec_prepare(envp, &var, &shm);
	if (!env)
		return pl_ret(-ENOMEM, 0);
	PL_REAL(fexecve)(fd, argv, env);
	pl_exec_undo(env, var, shm);
	return -1;
}

PL_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
		       int flags)
{
	char wpath[PL_PATH_MAX];
	int w;

	if (!pl_active())
		return PL_REAL(execveat)(dirfd, path, argv, envp, flags);
	if ((flags & AT_EMPTY_PATH) && !*path && pl_fd_is_weir(dirfd))
		return pl_ret(pl_execve_weir(NULL, dirfd, argv, envp), 0);
	w = pl_resolve(dirfd, path, false, wpath);
	if (w < 0)
		return pl_ret(w, 0);
	if (w == PL_WEIR)
		return pl_ret(pl_execve_weir(wpath, -1, argv, envp), 0);
	if (w == PL_LOCAL_ABS)
		return pl_ret(pl_execve_local(wpath, argv, envp, false), 0);
	char *var;
	int shm;
	char **env = pl_exec_prepare(envp, &var, &shm);
	if (!env)
		return pl_ret(-ENOMEM, 0);
	PL_REAL(execveat)(dirfd, path, argv, env, flags);
	pl_exec_undo(env, var, shm);
	return -1;
}

/* The execl family: the variadic list as an argv array (leaked only if exec fails). */
static char **pl_va_argv(const char *arg0, va_list ap, char ***envp)
{
	va_list cp;
	size_t n = 1;

	va_copy(cp, ap);
	while (va_arg(cp, char *))
		n++;
	va_end(cp);
	char **argv = malloc((n + 1) * sizeof(*argv));
	if (!argv)
		return NULL;
	argv[0] = (char *)arg0;
	for (size_t i = 1; i <= n; i++)
		argv[i] = va_arg(ap, char *);
	if (envp)
		*envp = va_arg(ap, char **);
	return argv;
}

PL_EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	char **argv = pl_va_argv(arg, ap, NULL);
	va_end(ap);
	if (!argv)
		return pl_ret(-ENOMEM, 0);
	int rc = execve(path, argv, environ);
	free(argv);
	return rc;
}

PL_EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	char **argv = pl_va_argv(arg, ap, NULL);
	va_end(ap);
	if (!argv)
		return pl_ret(-ENOMEM, 0);
	int rc = execvpe(file, argv, environ);
	free(argv);
	return rc;
}

PL_EXPORT int execle(const char *path, const char *arg, ...)
{
	char **envp = NULL;
	va_list ap;
	va_start(ap, arg);
	char **argv = pl_va_argv(arg, ap, &envp);
	va_end(ap);
	if (!argv)
		return pl_ret(-ENOMEM, 0);
	int rc = execve(path, argv, envp);
	free(argv);
	return rc;
}

/* ------------------------------------------------------------ spawn, system, popen */

static int pl_spawn_any(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[],
			bool search)
{
	char wpath[PL_PATH_MAX], proc[64];
	struct pl_spawn_refs refs = {.sr_nr = 0};
	int mfd = -1, rc;

	if (!pl_active())
		return search ? PL_REAL(posix_spawnp)(pid, path, fa, attr, argv, envp)
			      : PL_REAL(posix_spawn)(pid, path, fa, attr, argv, envp);
	if (!search || strchr(path, '/')) {
		int w = pl_resolve_path(path, wpath);
		if (w < 0)
			return -w;
		if (w == PL_WEIR) {
			mfd = pl_exec_memfd(wpath, -1);
			if (mfd < 0)
				return -mfd;
			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", mfd);
			path = proc;
			search = false;
		} else if (w == PL_LOCAL_ABS) {
			path = wpath;
		}
	}
	pl_mmap_flush_all();
	char *var = pl_state_build(&refs);
	char **env = pl_env_with(envp, var);
	if (!env) {
		rc = ENOMEM;
	} else {
		if (var)
			pl_shm_inherit(true);
		rc = search ? PL_REAL(posix_spawnp)(pid, path, fa, attr, argv, env)
			    : PL_REAL(posix_spawn)(pid, path, fa, attr, argv, env);
		if (var)
			pl_shm_inherit(false);
	}
	if (rc)
		pl_spawn_refs_undo(&refs);
	free(env);
	free(var);
	if (mfd >= 0)
		PL_REAL(close)(mfd);
	return rc;
}

PL_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return pl_spawn_any(pid, path, fa, attr, argv, envp, false);
}

PL_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return pl_spawn_any(pid, file, fa, attr, argv, envp, true);
}

static pthread_mutex_t pl_env_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * system() and popen() spawn /bin/sh inside glibc with the process's own
 * environment: the state goes there for the duration of the call.
 */
static char *pl_env_push(struct pl_spawn_refs *refs)
{
	char *var = pl_state_build(refs);

	if (var) {
		pthread_mutex_lock(&pl_env_lock);
		setenv(PL_STATE_ENV, var + strlen(PL_STATE_ENV) + 1, 1);
		pl_shm_inherit(true);
	}
	return var;
}

static void pl_env_pop(char *var)
{
	if (var) {
		pl_shm_inherit(false);
		unsetenv(PL_STATE_ENV);
		pthread_mutex_unlock(&pl_env_lock);
		free(var);
	}
}

PL_EXPORT int system(const char *cmd)
{
	struct pl_spawn_refs refs = {.sr_nr = 0};

	if (!pl_active() || !cmd)
		return PL_REAL(system)(cmd);
	pl_mmap_flush_all();
	char *var = pl_env_push(&refs);
	int rc = PL_REAL(system)(cmd);
	pl_env_pop(var);
	if (rc == -1)
		pl_spawn_refs_undo(&refs);
	return rc;
}

PL_EXPORT FILE *popen(const char *cmd, const char *mode)
{
	struct pl_spawn_refs refs = {.sr_nr = 0};

	if (!pl_active())
		return PL_REAL(popen)(cmd, mode);
	pl_mmap_flush_all();
	char *var = pl_env_push(&refs);
	FILE *fp = PL_REAL(popen)(cmd, mode);
	pl_env_pop(var);
	if (!fp)
		pl_spawn_refs_undo(&refs);
	return fp;
}

/* ------------------------------------------------------------ _exit */

/* exit() runs the shim's atexit handler; _exit() skips it: close handles here. */
static void pl_exit_quick(void)
{
	if (!pl_conf.pc_on || atomic_load(&pl_exiting))
		return;
	pl_mmap_flush_all();
	pl_files_exit();
	atomic_store(&pl_exiting, true);
}

PL_EXPORT void _exit(int status)
{
	pl_exit_quick();
	PL_REAL(_exit)(status);
	__builtin_unreachable();
}

PL_EXPORT void _Exit(int status)
{
	pl_exit_quick();
	PL_REAL(_Exit)(status);
	__builtin_unreachable();
}
