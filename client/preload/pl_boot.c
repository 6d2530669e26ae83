/*
 * client/preload/pl_boot.c - start-up of the shim: configuration from the
 * environment, the real libc functions, the lazy mount, logging, exit and
 * the two interposers that keep libweir's own threads and sockets out of
 * the application's way (pthread_create, socket). See pl_int.h.
 *
 * Start-up is in two steps. The constructor (and the first interposed call,
 * if one comes earlier) runs pl_boot(): it reads WEIR_MOUNT, WEIR_MDS,
 * WEIR_LOG, registers the fork and exit handlers and adopts the descriptors
 * an exec'd parent left (pl_proc.c); it connects to nothing. The mount is
 * made by the first call that needs Weir (pl_fs_get()).
 */
#define _GNU_SOURCE
#include "pl_int.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "net/auth.h"

__thread int pl_depth __attribute__((tls_model("initial-exec")));
struct pl_conf pl_conf;
atomic_bool pl_exiting;
int pl_fd_base = 896;

atomic_bool pl_booted;
static atomic_int pl_boot_state; /* 0 not yet, 1 running, 2 done */
static pthread_mutex_t pl_boot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pl_mount_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint pl_umask_cur;
static bool pl_log_file; /* WEIR_LOG names a file: keep libweir's log there */

void *pl_dlsym(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p) {
		/* Nothing sensible can run without libc's own function. */
		pl_depth++;
		WEIR_LOG_ERROR("sym=%s: not found in the libraries after the shim", name);
		pl_depth--;
	}
	return p;
}

mode_t pl_umask_get(void)
{
	return (mode_t)atomic_load(&pl_umask_cur);
}

/* WEIR_MOUNT: absolute, no trailing '/', not "/" itself. Default "/weir". */
static void pl_conf_load(void)
{
	const char *m = getenv("WEIR_MOUNT");
	const char *mds = getenv("WEIR_MDS");
	size_t n;

	if (!m || !*m)
		m = "/weir";
	n = strlen(m);
	while (n > 1 && m[n - 1] == '/')
		n--;
	if (m[0] != '/' || n <= 1 || n >= sizeof(pl_conf.pc_prefix) - 1 || strstr(m, "/./") ||
	    strstr(m, "/../")) {
		WEIR_LOG_ERROR("WEIR_MOUNT=%s: not an absolute path other than /; the shim is off",
			       m);
		pl_conf.pc_on = false;
		return;
	}
	memcpy(pl_conf.pc_prefix, m, n);
	pl_conf.pc_prefix[n] = '\0';
	pl_conf.pc_prefix_len = n;
	snprintf(pl_conf.pc_mds, sizeof(pl_conf.pc_mds), "%s", mds ? mds : "");
	pl_conf.pc_on = true;
	/* Read the cluster key now, with the credentials the program started
	 * with: the mount comes at the first call, maybe after the program
	 * switched to a user who may not read the key file (net/auth.c keeps
	 * what this process read). */
	const char *ins = getenv("WEIR_INSECURE");
	if (!ins || strcmp(ins, "1")) {
		struct net_auth *a;
		if (!net_auth_new(getenv("WEIR_KEY_FILE"), false, &a, NULL, 0))
			net_auth_free(a);
	}
}

/*
 * Logging: libweir's log (common/log.c) to the file WEIR_LOG names, never
 * to the application's stdout/stderr (WEIR_LOG=stderr is ignored here).
 */
static void pl_log_setup(void)
{
	const char *path = getenv("WEIR_LOG");
	const char *lvl = getenv("WEIR_LOG_LEVEL");

	weir_log_open(NULL); /* silence first: the default would be stderr */
	if (!path || !*path || !strcmp(path, "stderr") || !strcmp(path, "stdout"))
		return;
	if (weir_log_open(path))
		return;
	pl_log_file = true;
	weir_log_set_ident("weir-preload");
	int level = lvl ? weir_log_parse_level(lvl) : WEIR_LOG_LVL_NOTICE;
	weir_log_set_level(level >= 0 ? level : WEIR_LOG_LVL_NOTICE);
}

static void pl_exit_handler(void)
{
	if (atomic_load(&pl_exiting))
		return;
	/* Our streams first (a Weir stdout's last buffer), then mappings, then handles. */
	pl_stdio_flush_all();
	pl_mmap_flush_all();
	pl_files_exit();
	atomic_store(&pl_exiting, true);
}

void pl_boot(void)
{
	if (atomic_load_explicit(&pl_boot_state, memory_order_acquire) == 2)
		return;
	pl_depth++;
	pthread_mutex_lock(&pl_boot_lock);
	if (atomic_load(&pl_boot_state) != 0) {
		/* done, or re-entered by this thread while booting */
		pthread_mutex_unlock(&pl_boot_lock);
		pl_depth--;
		return;
	}
	atomic_store(&pl_boot_state, 1);
	pl_log_setup();
	pl_conf_load();

	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		rlim_t top = rl.rlim_cur < 4096 ? rl.rlim_cur : 4096;
		pl_fd_base = top > 256 ? (int)(top - 128) : (int)top / 2;
	}
	mode_t um = umask(0);
	umask(um);
	atomic_store(&pl_umask_cur, (unsigned)um);

	if (pl_conf.pc_on) {
		pthread_atfork(pl_atfork_prepare, pl_atfork_parent, pl_atfork_child);
		atexit(pl_exit_handler);
		pl_state_adopt();
		pl_stdio_boot();
		WEIR_LOG_INFO("prefix=%s mds=%s pid=%d: shim ready", pl_conf.pc_prefix,
			      pl_conf.pc_mds[0] ? pl_conf.pc_mds : "(unset)", (int)getpid());
	}
	atomic_store_explicit(&pl_boot_state, 2, memory_order_release);
	atomic_store_explicit(&pl_booted, true, memory_order_release);
	pthread_mutex_unlock(&pl_boot_lock);
	pl_depth--;
}

__attribute__((constructor)) static void pl_ctor(void)
{
	pl_boot();
}

/*
 * Mounts by credentials: a mount sends the ids the process had when it was
 * made, so a process that changes its effective ids (a setuid helper, a
 * test dropping root) gets a mount of its own for the new ones, as the
 * kernel would check the new ids.
 */
#define PL_MOUNTS_MAX 8
#define PL_GROUPS_MAX 32

struct pl_mount {
	weir_fs_t *pm_fs;
	uid_t pm_uid;
	gid_t pm_gid;
	int pm_nr_groups;
	gid_t pm_groups[PL_GROUPS_MAX];
};

static struct pl_mount pl_mounts[PL_MOUNTS_MAX];
static int pl_nr_mounts;
static struct pl_mount *_Atomic pl_mount_last;

static bool pl_mount_matches(const struct pl_mount *m, uid_t uid, gid_t gid, int ng,
			     const gid_t *groups)
{
	return m->pm_uid == uid && m->pm_gid == gid && m->pm_nr_groups == ng &&
	       !memcmp(m->pm_groups, groups, (size_t)ng * sizeof(gid_t));
}

int pl_fs_get(weir_fs_t **out)
{
	gid_t groups[PL_GROUPS_MAX];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int ng = getgroups(PL_GROUPS_MAX, groups);
	struct pl_mount *m = atomic_load_explicit(&pl_mount_last, memory_order_acquire);
	weir_fs_t *fs = NULL;
	int rc = 0;

	if (ng < 0)
		ng = 0;
	if (m && pl_mount_matches(m, uid, gid, ng, groups)) {
		*out = m->pm_fs;
		return 0;
	}
	if (atomic_load(&pl_exiting))
		return -EIO;
	if (!pl_conf.pc_mds[0]) {
		/* EDESTADDRREQ names what is missing (ENODEV said "No such device") */
		PL_LOG_ONCE("WEIR_MDS is not set: set it to the MDS's HOST:PORT; until then calls"
			    " under %s fail with EDESTADDRREQ (Destination address required)",
			    pl_conf.pc_prefix);
		return -EDESTADDRREQ;
	}
	pthread_mutex_lock(&pl_mount_lock);
	for (int i = 0; i < pl_nr_mounts; i++)
		if (pl_mount_matches(&pl_mounts[i], uid, gid, ng, groups))
			m = &pl_mounts[i];
	if (m && pl_mount_matches(m, uid, gid, ng, groups)) {
		fs = m->pm_fs;
	} else if (pl_nr_mounts == PL_MOUNTS_MAX) {
		PL_LOG_ONCE("uid=%u gid=%u: more than %d credentials in one process: EMFILE",
			    (unsigned)uid, (unsigned)gid, PL_MOUNTS_MAX);
		rc = -EMFILE;
		m = NULL;
	} else {
		struct weir_mount_opts o;
		char name[64];

		memset(&o, 0, sizeof(o));
		o.wmo_size = sizeof(o);
		snprintf(name, sizeof(name), "preload-%d", (int)getpid());
		o.wmo_client_name = name;
		/*
		 * No leases for path walks: the shim never unmounts (a process
		 * execs, exits or is killed with its mount), and the leases of a
		 * session that is gone hold other clients' changes of those
		 * directories until the MDS evicts it (a lease time).
		 */
		o.wmo_md_no_paths = 1;
		/* the process's own ids and groups are taken at mount time */
		rc = PL_W(weir_mount_with(pl_conf.pc_mds, &o, &fs));
		/* libweir set its log up from WEIR_LOG; keep ours (never stderr) */
		pl_depth++;
		if (!pl_log_file)
			weir_log_open(NULL);
		else
			weir_log_set_ident("weir-preload");
		if (rc)
			WEIR_LOG_ERROR("mds=%s rc=%d: mount failed; calls under %s fail with it",
				       pl_conf.pc_mds, rc, pl_conf.pc_prefix);
		else
			WEIR_LOG_INFO("mds=%s pid=%d uid=%u gid=%u: mounted", pl_conf.pc_mds,
				      (int)getpid(), (unsigned)uid, (unsigned)gid);
		pl_depth--;
		m = NULL;
		if (!rc) {
			m = &pl_mounts[pl_nr_mounts++];
			m->pm_fs = fs;
			m->pm_uid = uid;
			m->pm_gid = gid;
			m->pm_nr_groups = ng;
			memcpy(m->pm_groups, groups, (size_t)ng * sizeof(gid_t));
		}
	}
	if (m)
		atomic_store_explicit(&pl_mount_last, m, memory_order_release);
	pthread_mutex_unlock(&pl_mount_lock);
	if (!rc)
		*out = fs;
	return rc;
}

void pl_fs_forget(void)
{
	/* The parent's mounts are unusable here (their threads are not in this
	 * process); leave their memory alone and mount again on demand. */
	atomic_store(&pl_mount_last, NULL);
	pl_nr_mounts = 0;
	pthread_mutex_init(&pl_mount_lock, NULL);
}

/* ------------------------------------------------------------ interposers */

PL_EXPORT mode_t umask(mode_t mask)
{
	mode_t old = PL_REAL(umask)(mask);
	atomic_store(&pl_umask_cur, (unsigned)(mask & 0777));
	return old;
}

struct pl_thread_start {
	void *(*ts_fn)(void *);
	void *ts_arg;
};

static void *pl_thread_main(void *p)
{
	struct pl_thread_start ts = *(struct pl_thread_start *)p;

	free(p);
	pl_depth = 1; /* a libweir thread: never intercepted */
	return ts.ts_fn(ts.ts_arg);
}

/* Threads libweir starts (the lease thread) run with pl_depth set. */
PL_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			     void *arg)
{
	if (pl_depth == 0)
		return PL_REAL(pthread_create)(th, attr, fn, arg);
	struct pl_thread_start *ts = malloc(sizeof(*ts));
	if (!ts)
		return EAGAIN;
	ts->ts_fn = fn;
	ts->ts_arg = arg;
	int rc = PL_REAL(pthread_create)(th, attr, pl_thread_main, ts);
	if (rc)
		free(ts);
	return rc;
}

/* libweir's sockets go above pl_fd_base, out of the application's numbers. */
PL_EXPORT int socket(int domain, int type, int protocol)
{
	int fd = PL_REAL(socket)(domain, type, protocol);

	if (fd >= 0 && pl_depth > 0)
		fd = pl_fd_relocate(fd);
	return fd;
}
