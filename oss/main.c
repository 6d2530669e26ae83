/*
 * oss/main.c - weir-oss, the object storage server daemon: parses the
 * settings table (common/config.h: defaults, --config FILE, command line),
 * calls oss_start() and waits for SIGTERM/SIGINT.
 *
 * DESIGN. Threads:
 *   main         parses the command line, opens the log, calls oss_start(),
 *                then waits in sigwait() for SIGTERM/SIGINT and calls
 *                oss_stop(). Both signals are blocked in every thread (the
 *                mask is set before any thread starts), so only sigwait sees
 *                them.
 *   "oss-loopN"  (--threads of them, net/server.c): each owns an epoll set,
 *                its share of the client connections, and one io_uring with
 *                its completion eventfd (oss/uring.c). A request is handled
 *                on the loop that read it (oss/svc.c): checked, its object
 *                opened with a plain syscall, its data I/O queued on that
 *                loop's ring; the completion callback replies from the same
 *                thread. A ring is touched by its loop thread only, so it
 *                needs no lock. Requests on one connection start in arrival
 *                order but may complete (and be replied) in any order; a
 *                client orders dependent I/O by waiting for replies. The
 *                loops share one cache of open segment files
 *                (oss/fdcache.c, --fd-cache; sharded mutexes), which a
 *                destroy or truncate empties of the object's fds before it
 *                unlinks anything.
 *   "oss-reg"    (oss/reg.c) registers with the MDS and heartbeats every
 *                --heartbeat seconds; it writes DIR/ost.index and publishes
 *                an OST's index through an atomic (oss_ost.ot_index) that
 *                the loops read. Nothing else is shared between threads
 *                but the fd cache and the throttle (oss/throttle.c).
 * Shutdown order (oss_stop): the registration thread is stopped and joined,
 * then the loops stop, and each loop's ring is drained (every in-flight I/O
 * completes and is replied to) before the ring is freed.
 */
#define _GNU_SOURCE
#include "oss.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "net/auth.h"

static const char *opt_key_file;
static bool opt_insecure;
static const char *opt_mds, *opt_listen, *opt_advertise, *opt_port_file, *opt_log,
	*opt_log_level;
static const char *opt_osts[OSS_MAX_OSTS];
static uint32_t opt_nr_osts, opt_threads, opt_poll_us, opt_fd_cache;
static uint64_t opt_heartbeat_ms, opt_writeback_min;

/* Every setting, with its default, bounds and help (--help prints this table). */
static struct weir_cfg cfg[] = {
	{ "mds", WEIR_CFG_STR, &opt_mds, NULL, 0, 0, "HOST:PORT of the metadata server", true, 0,
	  NULL },
	{ "ost", WEIR_CFG_LIST, opt_osts, NULL, 0, 0,
	  "OST directory, created and formatted on first use (1..64 of them)", true,
	  OSS_MAX_OSTS, &opt_nr_osts },
	{ "listen", WEIR_CFG_STR, &opt_listen, "127.0.0.1:0", 0, 0,
	  "HOST:PORT to serve on; port 0 picks a free one", false, 0, NULL },
	{ "advertise", WEIR_CFG_STR, &opt_advertise, NULL, 0, 0,
	  "host clients connect to, sent to the MDS (default: the listen host)", false, 0, NULL },
	{ "port-file", WEIR_CFG_STR, &opt_port_file, NULL, 0, 0,
	  "write the bound port to this file (atomically) once listening", false, 0, NULL },
	{ "threads", WEIR_CFG_U32, &opt_threads, "0", 0, OSS_MAX_THREADS,
	  "event loop threads, one io_uring each; 0: half the CPUs this process may use, at "
	  "least 1", false, 0, NULL },
	{ "poll-us", WEIR_CFG_U32, &opt_poll_us, "200", 0, 10000, WEIR_POLL_US_HELP, false, 0,
	  NULL },
	{ "fd-cache", WEIR_CFG_U32, &opt_fd_cache, "1024", 0, 1U << 20,
	  "open object segment files kept across requests (0: none; at most half of "
	  "RLIMIT_NOFILE)", false, 0, NULL },
	{ "writeback-min", WEIR_CFG_SIZE, &opt_writeback_min, "256KiB", 0, 1ULL << 30,
	  "a write of at least this many bytes starts their writeback to disk at once (not "
	  "waited for: the reply still goes once they are in the page cache), so an fsync "
	  "finds little left to write; 0: leave writeback to the kernel", false, 0, NULL },
	{ "heartbeat", WEIR_CFG_DURATION, &opt_heartbeat_ms, "3s", 100, 3600 * 1000,
	  "registration/heartbeat period (plain numbers are seconds)", false, 0, NULL },
	{ "key-file", WEIR_CFG_STR, &opt_key_file, WEIR_KEY_FILE_DEFAULT, 0, 0,
	  "the cluster key file (mode 0600; make one with `weir key gen FILE`): this OSS proves"
	  " it holds the first key to the MDS, and every peer must prove it holds one of its"
	  " keys; re-read when it changes", false, 0, NULL },
	{ "insecure", WEIR_CFG_FLAG, &opt_insecure, "no", 0, 0,
	  "run without a cluster key: any host that reaches the port is trusted (trusted"
	  " networks and trials only)", false, 0, NULL },
	{ "log", WEIR_CFG_STR, &opt_log, "stderr", 0, 0, "log file, or stderr", false, 0, NULL },
	{ "log-level", WEIR_CFG_STR, &opt_log_level, "notice", 0, 0,
	  "error, warn, notice, info or debug", false, 0, NULL },
};

/* Checks the table cannot express. \return 0 or 2 (usage error, printed). */
static int args_check(void)
{
	char host[256];
	uint16_t port;

	if (weir_parse_hostport(opt_mds, host, sizeof(host), &port) || !port) {
		fprintf(stderr, "weir-oss: --mds %s: want HOST:PORT\n", opt_mds);
		return 2;
	}
	if (weir_parse_hostport(opt_listen, host, sizeof(host), &port)) {
		fprintf(stderr, "weir-oss: --listen %s: want HOST:PORT\n", opt_listen);
		return 2;
	}
	if (opt_advertise && (!opt_advertise[0] || strpbrk(opt_advertise, " /"))) {
		fprintf(stderr, "weir-oss: --advertise '%s': want a host name or address\n",
			opt_advertise);
		return 2;
	}
	if (weir_log_parse_level(opt_log_level) < 0) {
		fprintf(stderr, "weir-oss: --log-level %s: use error, warn, notice, info or "
			"debug\n", opt_log_level);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct oss_conf conf;
	struct oss *oss;
	sigset_t sigs;
	char rcs[96];
	int sig = 0;

	int rc = weir_cfg_parse(cfg, WEIR_ARRAY_SIZE(cfg), "weir-oss", "oss",
				"--mds HOST:PORT --ost DIR [--ost DIR ...] [options]", argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	rc = args_check();
	if (rc)
		return rc;
	weir_log_set_ident("weir-oss");
	weir_log_set_level(weir_log_parse_level(opt_log_level));
	rc = weir_log_open(opt_log);
	if (rc) {
		fprintf(stderr, "weir-oss: --log %s: %s\n", opt_log, strerror(-rc));
		return 1;
	}
	weir_cfg_log(cfg, WEIR_ARRAY_SIZE(cfg), "weir-oss");
	struct net_auth *auth;
	net_auth_set_name("weir-oss");
	if (net_auth_setup("weir-oss", opt_key_file, opt_insecure, &auth))
		return 1;

	oss_conf_init(&conf);
	conf.oc_mds = opt_mds;
	for (uint32_t i = 0; i < opt_nr_osts; i++)
		conf.oc_osts[i] = opt_osts[i];
	conf.oc_nr_osts = opt_nr_osts;
	conf.oc_listen = opt_listen;
	conf.oc_advertise = opt_advertise;
	conf.oc_port_file = opt_port_file;
	conf.oc_nr_threads = opt_threads ? opt_threads : WEIR_MIN(weir_default_loops(),
								       (unsigned)OSS_MAX_THREADS);
	conf.oc_poll_us = opt_poll_us;
	conf.oc_fd_cache = opt_fd_cache;
	conf.oc_writeback_min = opt_writeback_min;
	conf.oc_heartbeat_ms = (uint32_t)opt_heartbeat_ms;
	conf.oc_log = opt_log;
	conf.oc_log_level = opt_log_level;

	/* before any thread exists, so every thread inherits the mask */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	rc = oss_start(&conf, &oss);
	if (rc) {
		WEIR_LOG_ERROR("rc=%s: weir-oss failed to start",
			       weir_rc_str(rc, rcs, sizeof(rcs)));
		if (strcmp(opt_log, "stderr"))
			fprintf(stderr, "weir-oss: cannot start: %s (see the log)\n",
				weir_rc_str(rc, rcs, sizeof(rcs)));
		return 1;
	}
	for (;;) {
		/* every few seconds: the counts of rate-limited log lines */
		struct timespec tmo = { .tv_sec = WEIR_LOG_RL_INTERVAL_S };
		sig = sigtimedwait(&sigs, NULL, &tmo);
		if (sig > 0)
			break;
		weir_log_rl_flush_all();
	}
	WEIR_LOG_NOTICE("signal=%s: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	oss_stop(oss);
	net_auth_free(auth);
	return 0;
}
