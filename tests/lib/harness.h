/*
 * tests/lib/harness.h - helpers shared by every test binary (linked into all
 * of them): a CUnit runner, and a local cluster for integration tests.
 *
 * A cluster is one weir-mds and N weir-oss processes (M OSTs each), started
 * by fork/exec from $BUILD/bin (BUILD from the environment; when unset, the
 * bin/ directory next to the test binary's tests/ directory), in a fresh
 * directory made by mkdtemp("/tmp/weir-test-XXXXXX"):
 *   DIR/mdt0, DIR/oss<i>/ost<j>   data
 *   DIR/mds.log, DIR/oss<i>.log   each server's stderr (it logs with --log stderr)
 *   DIR/client.log                libweir's log (WEIR_LOG, unless already set)
 *   DIR/<name>.port                port files written by the servers
 * Every server listens on 127.0.0.1 on a free port (port 0), and keeps that
 * port across restarts so clients can reconnect. A cluster can also be
 * spread over several hosts made of network namespaces: see netns.h.
 *
 * Cleanup is unconditional: th_cluster_stop() stops the servers and removes
 * DIR; an atexit handler and handlers for SIGTERM/SIGINT/SIGABRT/SIGSEGV/
 * SIGBUS/SIGFPE kill every server and remove every directory of clusters
 * still running (only in the process that started them, never in a forked
 * child), and the servers get PR_SET_PDEATHSIG(SIGKILL) so even a kill -9 of
 * the test leaves no server behind (its directory, holding harness.pid, is
 * removed by the next th_cluster_start() once that pid is gone). When a
 * test has failed (CUnit counts failures) the tail of each server log is
 * printed before the directory is removed. TH_KEEP=1 keeps the directory.
 *
 * Thread safety: none; call from the test's main thread. Nothing here may be
 * called in a child made by fork() except th_cluster_mds_addr() and the
 * th_server_* getters.
 */
#ifndef WEIR_TESTS_HARNESS_H
#define WEIR_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <CUnit/CUnit.h>

/* ------------------------------------------------------------ CUnit runner */

/** One test: its function and its name. */
struct th_test {
	const char *tt_name;
	void (*tt_fn)(void);
};
/** Table entry naming the function after itself. End a table with TH_TEST_END. */
#define TH_TEST(fn) { #fn, fn }
#define TH_TEST_END { NULL, NULL }

/**
 * Run one suite in CUnit basic mode (CU_BRM_VERBOSE), printing its summary.
 * \param[in] suite  Suite name (the source file's unit).
 * \param[in] init   Suite setup, or NULL; nonzero = every test fails.
 * \param[in] clean  Suite teardown, or NULL; nonzero counts as a failure.
 * \param[in] tests  Table ending with TH_TEST_END.
 * \return the process exit code: 0 when everything passed, else 1.
 */
int th_cunit_run(const char *suite, int (*init)(void), int (*clean)(void),
		 const struct th_test *tests);

/** True once any CUnit assertion has failed in this process. */
bool th_failed(void);

/* ------------------------------------------------------------ cluster */

/** Server ids: TH_MDS, or an OSS index 0..nr_oss-1. */
#define TH_MDS (-1)

/**
 * Where one server runs: a network namespace and the IPv4 address it
 * listens on and advertises. tests/lib/netns.h fills these for a cluster
 * spread over several hosts (th_net_cluster_start()).
 */
struct th_place {
	const char *tp_netns; /* a name under /run/netns; NULL: the test's own namespace */
	const char *tp_ip;    /* NULL: 127.0.0.1 */
};

/** Cluster shape; zero fields take the defaults (1 MDS + 2 OSS x 2 OSTs). */
struct th_cluster_opts {
	int tco_nr_oss;                   /* default 2 */
	int tco_ost_per_oss;              /* default 2 */
	int tco_heartbeat_s;              /* OSS --heartbeat; default 1 */
	uint32_t tco_up_timeout_ms;       /* wait for every OST up; default 30000 */
	const char *const *tco_mds_args;  /* extra weir-mds arguments, NULL-terminated */
	const char *const *tco_oss_args;  /* extra weir-oss arguments, NULL-terminated */
	/* NULL, or one entry per OST, OSS-major (OSS i's OST j at i * ost_per_oss + j):
	 * its directory instead of DIR/oss<i>/ost<j> when not NULL (made if missing,
	 * never removed: e.g. a small tmpfs the test mounted, for a full OST) */
	const char *const *tco_ost_dirs;
	/* NULL (every server here on 127.0.0.1), or 1 + tco_nr_oss entries: [0] the
	 * MDS, [1 + i] OSS i (copied by th_cluster_start()). The harness's own
	 * connections (waiting for the OSTs, th_ost_obj_getattr) and
	 * th_cluster_cli() then run in the MDS's namespace */
	const struct th_place *tco_places;
	/* false (default): the harness makes a cluster key (DIR/cluster.key), gives it to
	 * the servers (--key-file), to this process's raw connections (the net/auth.h
	 * default) and to libweir here and in children (WEIR_KEY_FILE); true: the servers
	 * run --insecure and clients connect without a key (WEIR_INSECURE=1) */
	bool tco_insecure;
};

struct th_cluster;

/** The cluster's key file ("" when it runs insecure). Valid while \a c lives. */
const char *th_cluster_key_file(const struct th_cluster *c);

/**
 * Make the directory, start the MDS then the OSSs, wait until every OST is
 * registered and up in the MDS's cluster map.
 * \param[in]  opts  NULL for the defaults.
 * \param[out] out   The cluster; stop it with th_cluster_stop().
 * \return 0, or a negative errno (logs and their tails are printed):
 * \retval -ENOENT     a server binary is missing (message says where it looked).
 * \retval -ETIMEDOUT  a port file or an OST did not appear in time.
 * \retval -ECHILD     a server exited during start-up.
 */
int th_cluster_start(const struct th_cluster_opts *opts, struct th_cluster **out);

/**
 * Stop every server (SIGTERM, SIGKILL after 10 s), print log tails when a
 * test has failed or a server exited uncleanly, remove the directory (unless
 * TH_KEEP=1), free. Accepts NULL.
 * \return 0, or -ECHILD when a server had died or exited with a failure
 *         status (a crash, or a sanitizer report at exit).
 */
int th_cluster_stop(struct th_cluster *c);

/** The MDS as "IP:PORT" (127.0.0.1 unless placed). Valid until th_cluster_stop(). */
const char *th_cluster_mds_addr(const struct th_cluster *c);
/** The cluster's directory. */
const char *th_cluster_dir(const struct th_cluster *c);

/**
 * Run the weir CLI against \a c: "BIN/weir --mds ADDR <args>" through
 * /bin/sh (quote paths in \a fmt), stdout and stderr to DIR/cli.out, which
 * is printed when the status is not 0; in the MDS's network namespace when
 * the cluster is placed on several hosts.
 * \return its exit status (128 + signal when killed), or -1 when it could
 *         not run. The output stays in th_cluster_cli_out() until the next run.
 */
int th_cluster_cli(const struct th_cluster *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/** The file holding the output of the last th_cluster_cli(). */
const char *th_cluster_cli_out(const struct th_cluster *c);
/** Number of OSSs / OSTs per OSS / OSTs in all. */
int th_cluster_nr_oss(const struct th_cluster *c);
int th_cluster_nr_osts(const struct th_cluster *c);

/**
 * Wait until the MDS answers MDS_GET_CLUSTERMAP with every one of the
 * cluster's OSTs in state TS_UP.
 * \return 0, -ETIMEDOUT (and the last map is printed).
 */
int th_cluster_wait_up(struct th_cluster *c, uint32_t timeout_ms);

/** Pid of server \a id, or 0 when it is not running. */
pid_t th_server_pid(const struct th_cluster *c, int id);
/** The port server \a id listens on (kept across restarts). */
uint16_t th_server_port(const struct th_cluster *c, int id);
/** "IP:PORT" of server \a id (127.0.0.1 unless placed). */
const char *th_server_addr(const struct th_cluster *c, int id);
/** True when server \a id is running (not exited, not a zombie; reaps it otherwise). */
bool th_server_alive(struct th_cluster *c, int id);

/**
 * Stop server \a id: SIGTERM, SIGKILL after 10 s; reaps it.
 * \return 0 (clean exit or killed by SIGTERM), -ECHILD (exit status nonzero
 *         or another signal; the log tail is printed), -ESRCH (not running).
 */
int th_server_stop(struct th_cluster *c, int id);
/** kill -9 server \a id and reap it. \return 0 or -ESRCH. */
int th_server_kill(struct th_cluster *c, int id);
/**
 * (Re)start server \a id on its data directories and its port. Waits for its
 * port file; for the MDS not for the OSTs (call th_cluster_wait_up()).
 * \return 0, -EALREADY (running), -ETIMEDOUT, -ECHILD (it exited).
 */
int th_server_start(struct th_cluster *c, int id);
/**
 * Server \a id's last death was the test's doing (a fault hook made it die):
 * do not count it as an unclean exit at th_cluster_stop().
 */
void th_server_exit_expected(struct th_cluster *c, int id);
/** th_server_kill() (if running) + th_server_start() + th_cluster_wait_up(). */
int th_server_restart(struct th_cluster *c, int id);

/** Print the last \a lines lines of every log of the cluster to stderr. */
void th_cluster_dump_logs(const struct th_cluster *c, int lines);

/* ------------------------------------------------------------ raw protocol */

/**
 * Look up object (\a fid_seq:\a fid_oid, \a stripe) of OST \a ost in the OST's
 * directory (the cluster's own, found by its ost.index; oss/obj.c's format).
 * \param[out] exists  Whether the object exists.
 * \param[out] size    Its size in bytes (may be NULL).
 * \return 0 or a negative errno.
 */
/** The path of segment 0 of that object in its OST's directory. \return 0 or -ENODEV. */
int th_ost_obj_path(struct th_cluster *c, uint32_t ost, uint64_t fid_seq, uint64_t fid_oid,
		    uint32_t stripe, char *p, size_t len);
int th_ost_obj_getattr(struct th_cluster *c, uint32_t ost, uint64_t fid_seq, uint64_t fid_oid,
		       uint32_t stripe, bool *exists, uint64_t *size);

/** Connect a plain blocking TCP socket to "127.0.0.1:port". \return fd or -errno. */
int th_tcp_connect(uint16_t port);
/**
 * Wait up to \a timeout_ms for the peer to close \a fd (reading and dropping
 * anything it sends). \return 1 closed, 0 still open at the timeout.
 */
int th_tcp_wait_closed(int fd, int timeout_ms);

/* ------------------------------------------------------------ misc */

/** Fill \a buf with bytes from a fast PRNG seeded by \a seed (same seed, same bytes). */
void th_fill_pattern(void *buf, size_t len, uint64_t seed);
/** xorshift64* step: the next pseudo-random number of state \a s (nonzero). */
uint64_t th_rand64(uint64_t *s);
/** Sleep \a ms milliseconds. */
void th_sleep_ms(unsigned ms);
/** Monotonic clock in milliseconds. */
uint64_t th_now_ms(void);
/** rm -rf \a path (no symlinks followed). \return 0 or -errno. */
int th_rm_rf(const char *path);

#endif /* WEIR_TESTS_HARNESS_H */
