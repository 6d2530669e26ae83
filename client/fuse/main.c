/*
 * client/fuse/main.c - weir-fuse: mount a Weir filesystem with FUSE.
 *
 *   weir-fuse MOUNTPOINT [-o mds=HOST:PORT,OPTIONS] [-f] [-d] [-s]
 *
 * Mount options: libfuse mounts nosuid,nodev unless -o suid / -o dev (root
 * only); fsname= and subtype= are weir-fuse's (defaults weir:HOST:PORT and
 * weir), escaped into the list handed to libfuse. A MOUNTPOINT that is a
 * mount point already is refused (-o overmount stacks anyway).
 *
 * Threads: the main thread parses options, (unless -f) forks the daemon,
 * mounts libweir and the FUSE session, then runs fuse_session_loop_mt,
 * whose worker threads (up to max_threads) serve requests (ops.c). SIGTERM,
 * SIGINT and SIGHUP end the loop (libfuse's handlers); so does an unmount
 * from outside (fusermount3 -u, umount). The main thread then unmounts the
 * session, closes what is still open and unmounts libweir.
 *
 * SIGUSR1 logs the metadata cache's counters (a thread in sigwait; every
 * other thread blocks the signal), as the unmount does.
 *
 * Daemon start-up: the parent waits on a pipe until the child has mounted
 * (exit 0) or failed (its message is on the terminal, exit 1), so
 * `weir-fuse ... && ls MOUNTPOINT` works, and the child never forks after
 * libweir started its threads.
 */
#define _GNU_SOURCE
#include "wf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

#define WF_OPT(t, f, v)                                                                            \
	{                                                                                          \
		t, offsetof(struct wf_conf, f), v                                                  \
	}

static const struct fuse_opt wf_opt_spec[] = {
    WF_OPT("mds=%s", co_mds, 0),
    WF_OPT("key_file=%s", co_key_file, 0),
    WF_OPT("insecure", co_insecure, 1),
    WF_OPT("direct_io", co_direct_io, 1),
    WF_OPT("writeback_cache", co_writeback, 1),
    WF_OPT("no_writeback_cache", co_writeback, 0),
    WF_OPT("attr_timeout=%lf", co_attr_timeout, 0),
    WF_OPT("entry_timeout=%lf", co_entry_timeout, 0),
    WF_OPT("negative_timeout=%lf", co_negative_timeout, 0),
    WF_OPT("readdirplus=yes", co_readdirplus, 1),
    WF_OPT("readdirplus=no", co_readdirplus, 0),
    WF_OPT("max_threads=%u", co_max_threads, 0),
    WF_OPT("readahead=%s", co_readahead_str, 0),
    WF_OPT("default_permissions", co_default_perms, 1),
    WF_OPT("permissions=kernel", co_mds_perms, 0),
    WF_OPT("permissions=mds", co_mds_perms, 1),
    WF_OPT("permissions=%s", co_perms_bad, 0), /* (matches the two above too) */
    WF_OPT("fsname=%s", co_fsname, 0),
    WF_OPT("subtype=%s", co_subtype, 0),
    WF_OPT("overmount", co_overmount, 1),
    WF_OPT("recovery_timeout=%d", co_recovery_timeout, 0),
    WF_OPT("soft", co_soft, 1),
    WF_OPT("hard", co_soft, 0),
    WF_OPT("local_locks", co_local_locks, 1),
    FUSE_OPT_END};

static void wf_usage(const char *prog)
{
	printf("usage: %s MOUNTPOINT [-o OPTION[,OPTION...]] [-f] [-d] [-s]\n"
	       "\n"
	       "Mount a Weir filesystem with FUSE. Unmount with `fusermount3 -u MOUNTPOINT`\n"
	       "(or umount, or SIGTERM to the daemon).\n"
	       "\n"
	       "Weir options:\n"
	       "    -o mds=HOST:PORT        the MDS (default: $WEIR_MDS)\n"
	       "    -o key_file=FILE        the cluster key file (default: $WEIR_KEY_FILE, else\n"
	       "                            /etc/weir/cluster.key)\n"
	       "    -o insecure             connect without a key (servers running --insecure)\n"
	       "    -o direct_io            no page cache for file data: every read and write\n"
	       "                            goes to the OSTs (shared writable mmap is refused)\n"
	       "    -o writeback_cache      the kernel buffers writes and sends them in large\n"
	       "                            batches (faster small writes; other clients see\n"
	       "                            them at fsync/close, not at write)\n"
	       "    -o attr_timeout=SECS    how long the kernel trusts attributes (default:\n"
	       "                            while the MDS leases them to this mount, which it\n"
	       "                            calls back before any change; else 0)\n"
	       "    -o entry_timeout=SECS   how long the kernel trusts names (default: while\n"
	       "                            the MDS leases them, called back before any\n"
	       "                            change; else 0)\n"
	       "    -o negative_timeout=SECS  how long it trusts \"no such name\" (default:\n"
	       "                            as names)\n"
	       "    -o readdirplus=yes|no   attributes with listings (default yes)\n"
	       "    -o max_threads=N        worker threads (default 16)\n"
	       "    -o readahead=SIZE       the kernel's readahead of sequential reads, in\n"
	       "                            1 MiB requests (default 4M; 0: the kernel's own)\n"
	       "    -o permissions=kernel|mds  who checks permissions (default kernel: the\n"
	       "                            kernel's default_permissions, one GETATTR per\n"
	       "                            directory walked and per open, then the MDS again;\n"
	       "                            mds: the MDS alone, fewer requests, only with\n"
	       "                            timeouts of 0; \"dir/.\" and \"dir/..\" then pass a\n"
	       "                            directory without search permission)\n"
	       "    -o allow_other          let other users in (root, or user_allow_other\n"
	       "                            in /etc/fuse.conf)\n"
	       "    -o dev, -o suid         honour device nodes and setuid/setgid bits\n"
	       "                            (root only; default nodev,nosuid, the safe\n"
	       "                            choice for a filesystem other clients write)\n"
	       "    -o fsname=NAME          the source shown in /proc/mounts (default\n"
	       "                            weir:HOST:PORT)\n"
	       "    -o subtype=NAME         the type shown is fuse.NAME (default weir)\n"
	       "    -o overmount            mount even if MOUNTPOINT is a mount point already\n"
	       "                            (default: refuse, not stack a second mount)\n"
	       "    -o recovery_timeout=SECS  how long a call waits for a server that cannot be\n"
	       "                            reached (restart, failover) before it fails with\n"
	       "                            ETIMEDOUT; 0: forever (default: $WEIR_RECOVERY_TIMEOUT,\n"
	       "                            else forever: a \"hard\" mount)\n"
	       "    -o soft                 recovery_timeout=30 unless given; -o hard: forever\n"
	       "    -o local_locks          fcntl(2) locks stay in this kernel, local to this\n"
	       "                            mount (default: the MDS's, so they exclude the\n"
	       "                            locks taken through every mount and libweir, on\n"
	       "                            any node; a FLUSH request at each close(2) then\n"
	       "                            drops the closer's). flock(2) locks are always\n"
	       "                            the MDS's\n"
	       "\n"
	       "The defaults keep Weir's coherence: a change made by another client is\n"
	       "seen by the next call (README.md, \"Metadata leases\"). Set WEIR_LOG=FILE\n"
	       "(and WEIR_LOG_LEVEL) for a log. See README.md, \"FUSE mount\".\n"
	       "\n"
	       "FUSE options:\n"
	       "    -h, --help              print this help\n"
	       "    -V, --version           print the version\n"
	       "    -d, -o debug            FUSE debug output (implies -f)\n"
	       "    -f                      stay in the foreground\n"
	       "    -s                      one thread serves every request\n"
	       "    -o clone_fd             one /dev/fuse descriptor per worker thread\n"
	       "    -o max_idle_threads=N   idle worker threads kept (default -1: all)\n"
	       "    -o allow_root           let root in too (beside the user who mounted)\n"
	       "    -o auto_unmount         unmount when the daemon ends, however it ends\n"
	       "\n"
	       "Signals: SIGTERM, SIGINT, SIGHUP unmount; SIGUSR1 logs the metadata cache's\n"
	       "counters (hits, misses, callbacks, listings served, entries, names).\n",
	       prog);
	/* (not fuse_cmdline_help(): its max_threads default is not weir-fuse's) */
}

/* Append "KEY PREFIX VALUE" to the -o list \a opts, commas escaped. \return 0 or -1. */
static int wf_add_opt(char **opts, const char *key, const char *prefix, const char *value)
{
	char *o;
	int rc;

	if (asprintf(&o, "%s%s%s", key, prefix, value) < 0)
		return -1;
	rc = fuse_opt_add_opt_escaped(opts, o);
	free(o);
	return rc;
}

/* Undo /proc/self/mountinfo's octal escapes (\040 for a space...) in place. */
static void wf_unescape(char *s)
{
	char *d = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = 0;
}

/*
 * Is \a mnt a mount point already? \return true with what is mounted
 * there in \a what ("SOURCE, type TYPE" of the topmost mount).
 */
static bool wf_mounted(const char *mnt, char *what, size_t cap)
{
	static char line[3 * PATH_MAX];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	bool found = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] - TYPE SOURCE SUPER */
		char point[PATH_MAX], type[64], src[PATH_MAX];
		const char *sep = strstr(line, " - ");
		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 ||
		    sscanf(sep + 3, "%63s %4095s", type, src) != 2)
			continue;
		wf_unescape(point);
		if (strcmp(point, mnt))
			continue;
		wf_unescape(src);
		snprintf(what, cap, "%.200s, type %.40s", src, type);
		found = true;
	}
	fclose(f);
	return found;
}

void wf_readahead_raise(const char *mnt, uint64_t bytes)
{
	char line[4096], dev[32] = "", path[128];
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char mdev[32], mpoint[PATH_MAX];
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... (spaces in paths are \040) */
		if (sscanf(line, "%*u %*u %31s %*s %4095s", mdev, mpoint) == 2 &&
		    !strcmp(mpoint, mnt))
			snprintf(dev, sizeof(dev), "%s", mdev);
	}
	fclose(f);
	if (!dev[0])
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%llu\n", (unsigned long long)(bytes / 1024)) < 0)
		WEIR_LOG_INFO("bdi=%s: cannot set the readahead: %s", dev, strerror(errno));
	else
		WEIR_LOG_INFO("bdi=%s read_ahead_kb=%llu", dev, (unsigned long long)(bytes / 1024));
	if (f)
		fclose(f);
}

/* Fork; the parent exits with the child's start-up status. \return the pipe to report on. */
static int wf_daemonize(void)
{
	int pfd[2];
	pid_t pid;
	char c = 1;

	if (pipe(pfd)) {
		perror("weir-fuse: pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("weir-fuse: fork");
		exit(1);
	}
	if (pid > 0) {
		close(pfd[1]);
		if (read(pfd[0], &c, 1) != 1)
			c = 1;
		_exit(c);
	}
	close(pfd[0]);
	setsid();
	return pfd[1];
}

/* Tell the waiting parent how start-up went, and detach from the terminal. */
static void wf_daemon_ready(int fd, int status)
{
	char c = (char)status;
	int null;

	if (fd < 0)
		return;
	if (status == 0) {
		null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			if (null > 2)
				close(null);
		}
	}
	if (write(fd, &c, 1) != 1)
		(void)0; /* the parent is gone: nothing to tell */
	close(fd);
}

/* Log the metadata cache's counters (SIGUSR1, unmount). */
static void wf_md_stats_log(struct wf *wf, const char *mnt)
{
	struct weir_md_stats ms;
	if (!weir_md_stats(wf->wf_fs, &ms) && ms.wms_enabled)
		WEIR_LOG_NOTICE("mountpoint=%s: metadata cache: %llu hits, %llu misses, %llu callbacks,"
				" %llu listings, %llu entries, %llu names",
				mnt, (unsigned long long)ms.wms_hits,
				(unsigned long long)ms.wms_misses,
				(unsigned long long)ms.wms_callbacks,
				(unsigned long long)ms.wms_listings,
				(unsigned long long)ms.wms_entries, (unsigned long long)ms.wms_names);
}

/* The SIGUSR1 thread: the signal is blocked everywhere, and taken here. */
struct wf_usr1 {
	struct wf *u_wf;
	const char *u_mnt;
	sigset_t u_set;
	atomic_bool u_stop;
};

static void *wf_usr1_main(void *arg)
{
	struct wf_usr1 *u = arg;
	int sig;
	while (sigwait(&u->u_set, &sig) == 0 && !atomic_load(&u->u_stop))
		wf_md_stats_log(u->u_wf, u->u_mnt);
	return NULL;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	struct fuse_loop_config *lcfg = NULL;
	struct fuse_session *se = NULL;
	struct weir_mount_opts mo;
	struct wf wf;
	char mnt[PATH_MAX];
	char *mopts = NULL, what[256];
	int ready_fd = -1;
	int rc, ret = 1;

	memset(&wf, 0, sizeof(wf));
	memset(&opts, 0, sizeof(opts));
	wf.wf_conf.co_readdirplus = 1;
	wf.wf_conf.co_max_threads = 16;
	wf.wf_conf.co_recovery_timeout = -1; /* not given */
	wf.wf_conf.co_soft = -1;
	wf.wf_conf.co_readahead = WF_READAHEAD;
	if (fuse_opt_parse(&args, &wf.wf_conf, wf_opt_spec, NULL) == -1)
		return 2;
	if (fuse_parse_cmdline(&args, &opts) != 0)
		return 2;
	if (opts.show_help) {
		wf_usage(argv[0]);
		ret = 0;
		goto out_args;
	}
	if (opts.show_version) {
		printf("weir-fuse (libfuse %s)\n", fuse_pkgversion());
		ret = 0;
		goto out_args;
	}
	if (!opts.mountpoint) {
		fprintf(stderr, "weir-fuse: no mount point (see --help)\n");
		ret = 2;
		goto out_args;
	}
	if (!realpath(opts.mountpoint, mnt)) {
		fprintf(stderr, "weir-fuse: %s: %s\n", opts.mountpoint, strerror(errno));
		goto out_args;
	}
	if (!wf.wf_conf.co_mds) {
		const char *env = getenv("WEIR_MDS");
		wf.wf_conf.co_mds = env && *env ? strdup(env) : NULL;
	}
	if (!wf.wf_conf.co_mds) {
		fprintf(stderr, "weir-fuse: no MDS: give -o mds=HOST:PORT or set WEIR_MDS\n");
		ret = 2;
		goto out_args;
	}
	if (wf.wf_conf.co_attr_timeout < 0 || wf.wf_conf.co_entry_timeout < 0 ||
	    wf.wf_conf.co_negative_timeout < 0 || wf.wf_conf.co_max_threads < 1 ||
	    wf.wf_conf.co_max_threads > 1024) {
		fprintf(stderr, "weir-fuse: timeouts must be >= 0 and max_threads 1..1024\n");
		ret = 2;
		goto out_args;
	}
	if (wf.wf_conf.co_readahead_str &&
	    (weir_parse_size(wf.wf_conf.co_readahead_str, &wf.wf_conf.co_readahead) ||
	     wf.wf_conf.co_readahead > 1024ULL * 1024 * 1024)) {
		fprintf(stderr, "weir-fuse: readahead=%s: a size up to 1G expected\n",
			wf.wf_conf.co_readahead_str);
		ret = 2;
		goto out_args;
	}
	if (wf.wf_conf.co_perms_bad && strcmp(wf.wf_conf.co_perms_bad, "kernel") &&
	    strcmp(wf.wf_conf.co_perms_bad, "mds")) {
		fprintf(stderr, "weir-fuse: permissions=%s: kernel or mds expected\n",
			wf.wf_conf.co_perms_bad);
		ret = 2;
		goto out_args;
	}
	/* cached names, missing names or attributes skip the MDS's checks: then
	 * the kernel checks (wf.h) */
	if (wf.wf_conf.co_mds_perms &&
	    (wf.wf_conf.co_default_perms || wf.wf_conf.co_attr_timeout > 0 ||
	     wf.wf_conf.co_entry_timeout > 0 || wf.wf_conf.co_negative_timeout > 0)) {
		fprintf(stderr, "weir-fuse: permissions=mds needs attr_timeout=0, entry_timeout=0, "
				"negative_timeout=0 and no default_permissions\n");
		ret = 2;
		goto out_args;
	}
	wf.wf_conf.co_kperm = !wf.wf_conf.co_mds_perms;
	if (!wf.wf_conf.co_overmount && wf_mounted(mnt, what, sizeof(what))) {
		fprintf(stderr, "weir-fuse: %s is a mount point already (%s): unmount it first,"
				" or give -o overmount to mount over it\n", mnt, what);
		goto out_args;
	}
	/* /proc/mounts shows "weir:HOST:PORT MOUNTPOINT fuse.weir" unless told */
	if (wf_add_opt(&mopts, "fsname=", wf.wf_conf.co_fsname ? "" : "weir:",
		       wf.wf_conf.co_fsname ? wf.wf_conf.co_fsname : wf.wf_conf.co_mds) ||
	    wf_add_opt(&mopts, "subtype=", "",
		       wf.wf_conf.co_subtype ? wf.wf_conf.co_subtype : "weir") ||
	    (wf.wf_conf.co_kperm && fuse_opt_add_opt(&mopts, "default_permissions")) ||
	    fuse_opt_add_arg(&args, "-o") || fuse_opt_add_arg(&args, mopts)) {
		fprintf(stderr, "weir-fuse: out of memory\n");
		goto out_args;
	}

	if (!opts.foreground)
		ready_fd = wf_daemonize();

	/* SIGUSR1 for wf_usr1_main only: blocked before any other thread starts */
	struct wf_usr1 usr1 = { .u_wf = &wf, .u_mnt = mnt };
	pthread_t usr1_thread;
	bool usr1_started = false;
	sigemptyset(&usr1.u_set);
	sigaddset(&usr1.u_set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1.u_set, NULL);

	memset(&mo, 0, sizeof(mo));
	mo.wmo_size = sizeof(mo);
	mo.wmo_client_name = "weir-fuse";
	mo.wmo_key_file = wf.wf_conf.co_key_file;
	mo.wmo_insecure = wf.wf_conf.co_insecure ? 1 : 0;
	/* README "Recovery": given, else soft (30 s) or hard (forever), else the environment */
	if (wf.wf_conf.co_recovery_timeout > 0)
		mo.wmo_recovery_timeout_s = wf.wf_conf.co_recovery_timeout;
	else if (wf.wf_conf.co_recovery_timeout == 0 || wf.wf_conf.co_soft == 0)
		mo.wmo_recovery_timeout_s = WEIR_RECOVERY_FOREVER;
	else if (wf.wf_conf.co_soft == 1)
		mo.wmo_recovery_timeout_s = WF_SOFT_RECOVERY_S;
	/* names from libweir's cache only when the kernel checks search permission */
	mo.wmo_md_cache = wf.wf_conf.co_kperm ? 1 : 0;
	rc = weir_mount_with(wf.wf_conf.co_mds, &mo, &wf.wf_fs);
	if (rc) {
		if (weir_mount_error()[0])
			fprintf(stderr, "weir-fuse: cannot mount %s: %s (-%s)\n", wf.wf_conf.co_mds,
				weir_mount_error(), weir_errno_name(-rc));
		else
			fprintf(stderr, "weir-fuse: cannot mount %s: %s\n", wf.wf_conf.co_mds,
				strerror(-rc));
		goto out_ready;
	}
	weir_fid_getroot(wf.wf_fs, &wf.wf_root);
	if (wf_nodes_init(&wf)) {
		fprintf(stderr, "weir-fuse: out of memory\n");
		goto out_umount;
	}
	if (wf_knames_init(&wf)) {
		fprintf(stderr, "weir-fuse: out of memory\n");
		goto out_nodes;
	}
	se = fuse_session_new(&args, &wf_ops, sizeof(wf_ops), &wf);
	if (!se)
		goto out_knames;
	/* metadata callbacks reach the kernel (-EOPNOTSUPP: the MDS grants no leases) */
	atomic_store(&wf.wf_se, se);
	weir_md_inval_set(wf.wf_fs, wf_md_inval, &wf);
	if (fuse_set_signal_handlers(se))
		goto out_session;
	if (fuse_session_mount(se, mnt)) {
		fprintf(stderr, "weir-fuse: cannot mount on %s\n", mnt);
		goto out_signals;
	}
	WEIR_LOG_NOTICE("mds=%s mountpoint=%s direct_io=%d writeback_cache=%d attr_timeout=%g "
			"entry_timeout=%g readahead=%llu permissions=%s: mounted",
			wf.wf_conf.co_mds, mnt, wf.wf_conf.co_direct_io, wf.wf_conf.co_writeback,
			wf.wf_conf.co_attr_timeout, wf.wf_conf.co_entry_timeout,
			(unsigned long long)wf.wf_conf.co_readahead,
			wf.wf_conf.co_kperm ? "kernel" : "mds");
	snprintf(wf.wf_mnt, sizeof(wf.wf_mnt), "%s", mnt);
	usr1_started = pthread_create(&usr1_thread, NULL, wf_usr1_main, &usr1) == 0;
	wf_daemon_ready(ready_fd, 0);
	ready_fd = -1;
	if (chdir("/"))
		(void)0;

	if (opts.singlethread) {
		ret = fuse_session_loop(se);
	} else {
		lcfg = fuse_loop_cfg_create();
		if (!lcfg) {
			ret = 1;
		} else {
			fuse_loop_cfg_set_clone_fd(lcfg, (unsigned)opts.clone_fd);
			fuse_loop_cfg_set_max_threads(lcfg, wf.wf_conf.co_max_threads);
			fuse_loop_cfg_set_idle_threads(lcfg, opts.max_idle_threads);
			ret = fuse_session_loop_mt(se, lcfg);
			fuse_loop_cfg_destroy(lcfg);
		}
	}
	/* libfuse returns the number of the signal that ended the loop: a clean stop */
	if (ret == SIGTERM || ret == SIGINT || ret == SIGHUP)
		ret = 0;
	ret = ret ? 1 : 0;
	if (usr1_started) {
		atomic_store(&usr1.u_stop, true);
		pthread_kill(usr1_thread, SIGUSR1);
		pthread_join(usr1_thread, NULL);
	}
	wf_md_stats_log(&wf, mnt);
	WEIR_LOG_NOTICE("mountpoint=%s: unmounting", mnt);
	/* no callback and no kernel notification from here on: the unmount
	 * closes the device, whose descriptor number may be reused */
	weir_md_inval_set(wf.wf_fs, NULL, NULL); /* returns once no callback runs */
	wf_knames_fini(&wf);
	atomic_store(&wf.wf_se, NULL);
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	weir_md_inval_set(wf.wf_fs, NULL, NULL); /* returns once no callback runs */
	wf_knames_fini(&wf); /* its thread uses the session */
	atomic_store(&wf.wf_se, NULL);
	fuse_session_destroy(se);
out_knames:
	wf_knames_fini(&wf); /* (again after the session: nothing left) */
out_nodes:
	wf_nodes_fini(&wf);
out_umount:
	weir_umount(wf.wf_fs);
out_ready:
	wf_daemon_ready(ready_fd, 1);
out_args:
	free(opts.mountpoint);
	free(wf.wf_conf.co_mds);
	free(wf.wf_conf.co_key_file);
	free(wf.wf_conf.co_readahead_str);
	free(wf.wf_conf.co_fsname);
	free(wf.wf_conf.co_subtype);
	free(mopts);
	fuse_opt_free_args(&args);
	return ret;
}
