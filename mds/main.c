/*
 * mds/main.c - weir-mds: the metadata server daemon. Threads: see
 * mds/server.c. This file parses the settings table, starts the server and
 * waits for SIGTERM/SIGINT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "mds.h"
#include "net/auth.h"

/* Period of malloc_trim(0) in the main thread (s). */
#define MDS_TRIM_S 10

static const char *opt_key_file, *opt_nodemap, *opt_root_owner;
static bool opt_insecure;
static const char *opt_mgs, *opt_advertise;
static uint32_t opt_mdt_index;
static const char *opt_mdt, *opt_listen, *opt_port_file, *opt_log, *opt_log_level, *opt_fsname;
static uint32_t opt_threads, opt_poll_us, opt_def_count, opt_ost_timeout, opt_root_squash;
static uint32_t opt_mdl_max, opt_pdirops;
static uint64_t opt_commit_ms, opt_def_size, opt_lease_ms, opt_capa_ms, opt_recovery_ms;
static uint32_t opt_hsm_high, opt_hsm_low;
static uint64_t opt_hsm_min_age_ms, opt_hsm_interval_ms, opt_hsm_timeout_ms;

static struct weir_cfg cfg[] = {
	{ "mdt", WEIR_CFG_STR, &opt_mdt, NULL, 0, 0,
	  "MDT directory (a RocksDB database; created on first start)", true, 0, NULL },
	{ "listen", WEIR_CFG_STR, &opt_listen, "127.0.0.1:7400", 0, 0,
	  "HOST:PORT to serve on; port 0 picks a free one", false, 0, NULL },
	{ "mdt-index", WEIR_CFG_U32, &opt_mdt_index, "0", 0, 255,
	  "this MDT's index: 0 holds the root and the cluster map; another index joins MDT0's"
	  " cluster (--mgs). Kept in the MDT at its first start and checked after", false, 0,
	  NULL },
	{ "mgs", WEIR_CFG_STR, &opt_mgs, NULL, 0, 0,
	  "with --mdt-index N > 0: HOST:PORT of MDT0's MDS, which this MDT registers with (its"
	  " OST map and capability key come from there)", false, 0, NULL },
	{ "advertise", WEIR_CFG_STR, &opt_advertise, NULL, 0, 0,
	  "host clients and other MDTs reach this MDS at (default: the listen host)", false, 0,
	  NULL },
	{ "port-file", WEIR_CFG_STR, &opt_port_file, NULL, 0, 0,
	  "write the bound port to this file once listening", false, 0, NULL },
	{ "threads", WEIR_CFG_U32, &opt_threads, "0", 0, 256,
	  "event loop threads; 0: half the CPUs this process may use, at least 1", false, 0,
	  NULL },
	{ "poll-us", WEIR_CFG_U32, &opt_poll_us, "200", 0, 10000, WEIR_POLL_US_HELP, false, 0,
	  NULL },
	{ "commit-interval", WEIR_CFG_DURATION, &opt_commit_ms, "1s", 1, 60000,
	  "sync the MDT log at least this often (fsync requests sync at once)", false, 0, NULL },
	{ "fsname", WEIR_CFG_STR, &opt_fsname, "weir", 0, 0, "filesystem name", false, 0, NULL },
	{ "default-stripe-count", WEIR_CFG_U32, &opt_def_count, "1", 1, 128,
	  "stripes of a new file when its directory sets none", false, 0, NULL },
	{ "default-stripe-size", WEIR_CFG_SIZE, &opt_def_size, "1MiB", 65536, 1ULL << 30,
	  "stripe size of a new file when its directory sets none (multiple of 64KiB)", false, 0,
	  NULL },
	{ "ost-timeout", WEIR_CFG_U32, &opt_ost_timeout, "15", 2, 3600,
	  "seconds without a heartbeat after which an OST (or an MDT other than MDT0) is down",
	  false, 0, NULL },
	{ "lease-time", WEIR_CFG_DURATION, &opt_lease_ms, "30s", 500, 3600000,
	  "a client not heard from in this long is evicted (its locks and open handles dropped)",
	  false, 0, NULL },
	{ "md-leases", WEIR_CFG_U32, &opt_mdl_max, "65536", 0, 16777216,
	  "metadata leases one client may hold (names, attributes and layouts it caches until"
	  " the MDS calls them back); 0: grant none", false, 0, NULL },
	{ "recovery-window", WEIR_CFG_DURATION, &opt_recovery_ms, "0s", 0, 3600000,
	  "after a restart, wait at most this long for the clients of the last run to reconnect"
	  " and replay their opens and locks (other requests wait meanwhile); 0s: twice"
	  " --lease-time", false, 0, NULL },
	{ "pdirops", WEIR_CFG_U32, &opt_pdirops, "1", 0, 1,
	  "1: namespace changes run in parallel under name and inode locks; 0: each runs alone"
	  " under the MDT's namespace lock (the behaviour before pdirops, for comparison)", false,
	  0, NULL },
	{ "root-squash", WEIR_CFG_U32, &opt_root_squash, "0", 0, 1,
	  "1: requests from uid 0 / gid 0 run as 65534 (nobody), as NFS's root_squash", false, 0,
	  NULL },
	{ "hsm-high-watermark", WEIR_CFG_U32, &opt_hsm_high, "90", 1, 100,
	  "HSM policy: an OST above this used percentage gets its coldest archived files released",
	  false, 0, NULL },
	{ "hsm-low-watermark", WEIR_CFG_U32, &opt_hsm_low, "75", 0, 100,
	  "HSM policy: ... until it is below this used percentage", false, 0, NULL },
	{ "hsm-min-age", WEIR_CFG_DURATION, &opt_hsm_min_age_ms, "300s", 0, 365ULL * 86400000,
	  "HSM policy: release only files not accessed or modified for this long", false, 0,
	  NULL },
	{ "hsm-policy-interval", WEIR_CFG_DURATION, &opt_hsm_interval_ms, "5s", 100, 3600000,
	  "HSM policy: check OST usage this often", false, 0, NULL },
	{ "hsm-action-timeout", WEIR_CFG_DURATION, &opt_hsm_timeout_ms, "60s", 1000, 86400000,
	  "HSM: a running archive/restore whose agent is silent this long goes back to the queue",
	  false, 0, NULL },
	{ "key-file", WEIR_CFG_STR, &opt_key_file, WEIR_KEY_FILE_DEFAULT, 0, 0,
	  "the cluster key file (mode 0600; make one with `weir key gen FILE`): every peer must"
	  " prove it holds a key in it; re-read when it changes", false, 0, NULL },
	{ "nodemap", WEIR_CFG_STR, &opt_nodemap, NULL, 0, 0,
	  "the node map (INI): groups of clients by key or address, trusted or squashed,"
	  " id maps, admin rights (README: Node maps)", false, 0, NULL },
	{ "root-owner", WEIR_CFG_STR, &opt_root_owner, NULL, 0, 0,
	  "UID:GID[:MODE] of the root directory of a new MDT (default 0:0:0755), so that a"
	  " squashed cluster can be used", false, 0, NULL },
	{ "capa-timeout", WEIR_CFG_DURATION, &opt_capa_ms, "1h", 1000, 7 * 86400000ULL,
	  "lifetime of the OST capabilities the MDS signs (clients renew them unseen)", false,
	  0, NULL },
	{ "insecure", WEIR_CFG_FLAG, &opt_insecure, "no", 0, 0,
	  "run without a cluster key: any host that reaches the port is trusted (trusted"
	  " networks and trials only)", false, 0, NULL },
	{ "log", WEIR_CFG_STR, &opt_log, "stderr", 0, 0, "log file, or stderr", false, 0, NULL },
	{ "log-level", WEIR_CFG_STR, &opt_log_level, "notice", 0, 0,
	  "error, warn, notice, info or debug", false, 0, NULL },
};

int main(int argc, char **argv)
{
	int rc = weir_cfg_parse(cfg, WEIR_ARRAY_SIZE(cfg), "weir-mds", "mds",
				"--mdt DIR [--listen HOST:PORT] [options]", argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (opt_hsm_low > opt_hsm_high) {
		fprintf(stderr, "weir-mds: --hsm-low-watermark must not exceed --hsm-high-watermark\n");
		return 2;
	}
	if ((opt_mdt_index == 0) != (opt_mgs == NULL)) {
		fprintf(stderr, "weir-mds: %s\n",
			opt_mdt_index ? "--mdt-index N > 0 needs --mgs HOST:PORT (MDT0's MDS)"
				      : "--mgs is for MDTs other than MDT0 (--mdt-index N > 0)");
		return 2;
	}
	if (opt_def_size % 65536) {
		fprintf(stderr, "weir-mds: --default-stripe-size must be a multiple of 64KiB\n");
		return 2;
	}
	int lvl = weir_log_parse_level(opt_log_level);
	if (lvl < 0) {
		fprintf(stderr, "weir-mds: --log-level %s: use error, warn, notice, info or debug\n",
			opt_log_level);
		return 2;
	}
	weir_log_set_level(lvl);
	weir_log_set_ident("weir-mds");
	rc = weir_log_open(opt_log);
	if (rc) {
		fprintf(stderr, "weir-mds: --log %s: %s\n", opt_log, strerror(-rc));
		return 1;
	}
	weir_cfg_log(cfg, WEIR_ARRAY_SIZE(cfg), "weir-mds");
	struct net_auth *auth;
	net_auth_set_name("weir-mds");
	if (net_auth_setup("weir-mds", opt_key_file, opt_insecure, &auth))
		return 1;
	/*
	 * Freed blocks of 1 MiB and more go back to the kernel at once: RocksDB's
	 * memtable arenas are such blocks, and glibc's adaptive threshold would
	 * otherwise keep a flushed memtable's memory in the heap (RSS that grows
	 * with the files written, aside from RocksDB's caches).
	 */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1); /* log RocksDB's memory in use */
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* threads inherit: signals come to sigwait */
	signal(SIGPIPE, SIG_IGN);

	unsigned ro_uid = 0, ro_gid = 0, ro_mode = 0755;
	if (opt_root_owner) {
		char extra;
		int n = sscanf(opt_root_owner, "%u:%u:%o%c", &ro_uid, &ro_gid, &ro_mode, &extra);
		if ((n != 2 && n != 3) || ro_mode > 07777) {
			fprintf(stderr, "weir-mds: --root-owner %s: want UID:GID or UID:GID:MODE"
				" (octal), e.g. 1000:1000:0755\n", opt_root_owner);
			return 2;
		}
	}
	struct mds_conf mc = {
		.mc_nodemap = opt_nodemap,
		.mc_root_owner_set = opt_root_owner != NULL,
		.mc_root_uid = ro_uid,
		.mc_root_gid = ro_gid,
		.mc_root_mode = ro_mode,
		.mc_mdt_dir = opt_mdt,
		.mc_listen = opt_listen,
		.mc_mdt_index = opt_mdt_index,
		.mc_mgs = opt_mgs,
		.mc_advertise = opt_advertise,
		.mc_threads = opt_threads,
		.mc_poll_us = opt_poll_us,
		.mc_commit_interval_ms = opt_commit_ms,
		.mc_def_stripe_count = opt_def_count,
		.mc_def_stripe_size = (uint32_t)opt_def_size,
		.mc_fsname = opt_fsname,
		.mc_ost_timeout_s = opt_ost_timeout,
		.mc_root_squash = opt_root_squash != 0,
		.mc_pdirops_off = opt_pdirops == 0,
		.mc_lease_ms = (uint32_t)opt_lease_ms,
		.mc_mdl_max = opt_mdl_max,
		.mc_mdl_off = opt_mdl_max == 0,
		.mc_recovery_window_ms = (uint32_t)opt_recovery_ms,
		.mc_capa_timeout_s = (uint32_t)(opt_capa_ms / 1000),
		.mc_hsm_high_pct = opt_hsm_high,
		.mc_hsm_low_pct = opt_hsm_low,
		.mc_hsm_min_age_s = opt_hsm_min_age_ms / 1000,
		.mc_hsm_min_age_set = true,
		.mc_hsm_policy_interval_ms = opt_hsm_interval_ms,
		.mc_hsm_action_timeout_ms = opt_hsm_timeout_ms,
	};
	struct mds *m;
	rc = mds_start(&mc, &m);
	if (rc) {
		char b[96];
		fprintf(stderr, "weir-mds: cannot start: %s (see the log)\n",
			weir_rc_str(rc, b, sizeof(b)));
		return 1;
	}
	if (opt_port_file) {
		char buf[16];
		int n = snprintf(buf, sizeof(buf), "%u\n", mds_port(m));
		rc = weir_file_write_atomic(opt_port_file, buf, (size_t)n);
		if (rc) {
			fprintf(stderr, "weir-mds: --port-file %s: %s\n", opt_port_file,
				strerror(-rc));
			mds_stop(m);
			return 1;
		}
	}
	/*
	 * The main thread waits for signals and, every MDS_TRIM_S seconds,
	 * gives back to the kernel the free pages glibc keeps inside its arenas
	 * (malloc_trim(0) releases whole free pages anywhere in them, not only
	 * at the top): RocksDB's block cache and table readers churn small
	 * blocks, and the holes they leave would otherwise stay in the RSS
	 * (about 5 MiB after 1,000,000 creates, "MEM" in make bench).
	 */
	int sig = 0;
	for (;;) {
		struct timespec tmo = { .tv_sec = MDS_TRIM_S };
		sig = sigtimedwait(&set, NULL, &tmo);
		if (sig < 0) {
			if (errno == EAGAIN) {
				malloc_trim(0);
				weir_log_rl_flush_all();
			}
			if (errno == EAGAIN || errno == EINTR)
				continue;
			break;
		}
		if (sig != SIGUSR1)
			break;
		mds_log_memory(m);
		struct mallinfo2 mi = mallinfo2();
		WEIR_LOG_NOTICE("malloc: arena %zu KiB (in use %zu KiB, free %zu KiB, releasable"
				" %zu KiB), mmapped %zu KiB in %zu blocks", mi.arena >> 10,
				mi.uordblks >> 10, mi.fordblks >> 10, mi.keepcost >> 10,
				mi.hblkhd >> 10, mi.hblks);
	}
	WEIR_LOG_NOTICE("signal=%d: stopping", sig);
	mds_stop(m);
	net_auth_free(auth);
	return 0;
}
