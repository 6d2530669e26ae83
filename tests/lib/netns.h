/*
 * tests/lib/netns.h - several hosts on one machine for integration tests:
 * network namespaces joined by veth pairs to a bridge, programs started on
 * them, libweir clients run in-process from them, and a Weir cluster spread
 * over them.
 *
 * The network. th_net_start() makes, as root, with iproute2's `ip`:
 *   - a "switch" namespace TAG-sw holding the bridge br0 and one end of
 *     each host's veth pair (v-<host>); it has no address;
 *   - one namespace TAG-<host> per host, holding loopback (up) and eth0
 *     (the other end of its veth) with the host's address 10.213.0.N/24;
 * where TAG is "weirt-<pid>-<k>" (this test's pid, its k-th network), so
 * tests running at once (make -j2 test) never meet. Nothing is created in
 * the machine's own namespace: no interface, no address, no route, no
 * firewall rule; the hosts reach each other and nothing else, so the
 * 10.213.0.0/24 range cannot clash with the machine's networks (the start
 * still warns when the machine itself uses it). The standard hosts and
 * their addresses:
 *   mds 10.213.0.11   oss0 .12   oss1 .13   client0 .14   client1 .15
 *   outsider .16
 * and th_net_host_add() adds more (.17 upwards, or an address of your
 * choice in the /24, e.g. for a node map's address ranges). The namespaces
 * are named ones (/run/netns/NAME), so `ip -n TAG-mds ...` and
 * `nsenter --net=/run/netns/TAG-client0 ...` work on them from a shell
 * while a test runs (TH_KEEP=1 keeps the logs, not the network). Programs
 * started here join only the network namespace: a weir-fuse mount made on
 * a host is seen by the test (`ip netns exec` would hide it in a mount
 * namespace of its own).
 *
 * Cleanup. th_net_stop() ends every process still inside the network's
 * namespaces (those it spawned with SIGTERM then SIGKILL, any other with
 * SIGKILL), deletes the namespaces (the veths and the bridge go with them)
 * and checks that nothing still holds one: no mount, no process, no open
 * namespace file. An atexit handler and the harness's fatal-signal
 * handlers (harness.h) do the same for networks still up; every process
 * started on a host gets PR_SET_PDEATHSIG(SIGKILL); and th_net_start()
 * first deletes the namespaces of test processes that are gone (kill -9).
 * Creating and deleting namespaces is serialized between test processes by
 * flock(/tmp/weir-netns.lock) (the first `ip netns add` of a boot mounts
 * /run/netns, which must not race).
 *
 * Logs. Each network has a directory /tmp/weir-test-XXXXXX (removed by
 * th_net_stop(), kept with TH_KEEP=1); th_host_spawn() writes a program's
 * stdout and stderr to DIR/<host>-<program>.log unless told otherwise. A
 * cluster started with th_net_cluster_start() keeps the usual layout of
 * harness.h in its own directory (mds.log, oss<i>.log, client.log).
 *
 * A test that cannot have this (not root, no network namespaces, no veth
 * or bridge support, no `ip`) skips: call th_net_require() first in main(),
 * which exits 77 with the reason.
 *
 * Example (the smoke test is tests/integration/test_netns.c):
 *   th_net_require();
 *   th_net_start(NULL, &net);
 *   th_net_cluster_start(net, NULL, &cl);          MDS on mds, OSS i on oss<i>
 *   th_host_call(th_net_host(net, "client0"), write_fn, &job);  in-process libweir
 *   th_host_run(th_net_host(net, "outsider"),
 *               (const char *[]){ "weir", "--mds", th_cluster_mds_addr(cl), "df", NULL },
 *               &out);                           weir CLI, exit status + output
 *   th_cluster_stop(cl);
 *   th_net_stop(net);
 * For the security tests: server options (--key-file, --insecure, a node
 * map) go in th_cluster_opts.tco_mds_args / tco_oss_args as with one host;
 * files a test makes for its hosts (key files) can live in th_net_dir(); an
 * attacker is a th_host_call() on "outsider" that opens raw connections
 * (net_conn_open() to th_server_addr()) or a libweir mount, and asserts the
 * refusal; a rogue server is th_host_spawn() of weir-oss on "outsider"
 * (the cluster's OST directories are under th_cluster_dir()).
 *
 * Thread safety: none; call from the test's main thread (th_host_enter()
 * moves only the calling thread). In a th_host_call() child use libweir,
 * sockets, th_weir.h and CUnit; of this file only th_host_name(),
 * th_host_ip(), th_host_netns() and th_net_host().
 */
#ifndef WEIR_TESTS_NETNS_H
#define WEIR_TESTS_NETNS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "harness.h"

struct th_net;
struct th_host;
struct th_call;

/** The standard hosts, in the order th_net_start() makes them. */
#define TH_NET_HOST_MDS "mds"
#define TH_NET_HOST_OSS0 "oss0"
#define TH_NET_HOST_OSS1 "oss1"
#define TH_NET_HOST_CLIENT0 "client0"
#define TH_NET_HOST_CLIENT1 "client1"
#define TH_NET_HOST_OUTSIDER "outsider"

/** Most hosts one network holds. */
#define TH_NET_MAX_HOSTS 32

/** The network's first three octets; a host's address is TH_NET_PREFIX ".N". */
#define TH_NET_PREFIX "10.213.0"

/* ------------------------------------------------------------ the network */

/**
 * Whether this machine can make the network: root (CAP_SYS_ADMIN and
 * CAP_NET_ADMIN), network namespaces, veth and bridge links (tried in a
 * throwaway namespace), iproute2's ip, a writable /run. Cached.
 * \param[out] why  The reason when not (may be NULL).
 * \return 0, or -EPERM / -EOPNOTSUPP / -ENOENT with \a why filled.
 */
int th_net_available(char *why, size_t len);

/** th_net_available(), or print "SKIP: <reason>" and exit(77). */
void th_net_require(void);

/** Options of th_net_start(); zero fields take the defaults. */
struct th_net_opts {
	/* host names, NULL-terminated; NULL: mds oss0 oss1 client0 client1 outsider.
	 * A name is 1 to 12 of [a-z0-9_]; host i gets TH_NET_PREFIX.(11 + i) */
	const char *const *tno_hosts;
};

/**
 * Make the switch, the hosts and their links (see the top of this file),
 * after deleting the namespaces of dead test processes.
 * \param[in]  opts  NULL for the standard hosts.
 * \param[out] out   The network; th_net_stop() it.
 * \return 0 or a negative errno, after a message naming the command that
 *         failed and what it printed (what was made is removed):
 * \retval -EOPNOTSUPP  th_net_available() says no (the reason is printed).
 * \retval -EINVAL      a bad host name, or two hosts of one name.
 * \retval -EIO         an `ip` command failed.
 */
int th_net_start(const struct th_net_opts *opts, struct th_net **out);

/**
 * Stop and remove everything: processes spawned on the hosts (SIGTERM,
 * SIGKILL after 10 s), then any other process still in a namespace of the
 * network (SIGKILL), the namespaces, the directory (unless TH_KEEP=1).
 * Stop clusters on it with th_cluster_stop() first, to check how their
 * servers exit. Accepts NULL.
 * \return 0, or -EBUSY when a namespace was still held 5 s later (a
 *         process, a mount or an open namespace file: printed).
 */
int th_net_stop(struct th_net *net);

/**
 * Count the namespaces of the network whose tag is \a tag (th_net_tag())
 * under /run/netns: 1 + its number of hosts while it is up, 0 once it is
 * gone (th_net_stop() also checks that nothing holds one of them).
 * \param[in] print  Print each one found.
 */
int th_net_leftovers(const char *tag, bool print);

/** "weirt-<pid>-<k>": the prefix of the network's namespace names. Valid until th_net_stop(). */
const char *th_net_tag(const struct th_net *net);
/** The network's log directory. Valid until th_net_stop(). */
const char *th_net_dir(const struct th_net *net);
/** The host called \a name, or NULL. Valid until th_net_stop(). */
struct th_host *th_net_host(const struct th_net *net, const char *name);

/**
 * Add a host to a running network.
 * \param[in]  name  1 to 12 of [a-z0-9_], not already used.
 * \param[in]  ip    An unused address in TH_NET_PREFIX.0/24, or NULL: the next free one.
 * \param[out] out   The host (may be NULL).
 * \return 0, -EINVAL (bad or used name or address), -ENOSPC, -EIO.
 */
int th_net_host_add(struct th_net *net, const char *name, const char *ip, struct th_host **out);

/* ------------------------------------------------------------ a host */

/** Its name ("client0"). */
const char *th_host_name(const struct th_host *h);
/** Its IPv4 address ("10.213.0.14"). */
const char *th_host_ip(const struct th_host *h);
/** Its namespace's name, for `ip netns exec NAME` or `ip -n NAME`. */
const char *th_host_netns(const struct th_host *h);

/**
 * Start a program on \a h in the background.
 * \param[in]  argv  NULL-terminated; argv[0] without a '/' is looked up in
 *                   the build's bin/ directory first, then in PATH (the
 *                   program's PATH also starts with bin/).
 * \param[in]  log   File for its stdout and stderr (appended), or NULL:
 *                   th_net_dir()/<host>-<basename of argv[0]>.log.
 * \param[out] pid   Its pid; stop it with th_host_stop().
 * \return 0 or a negative errno (-ENOENT: no such program; -ENOSPC: more
 *         than 64 programs running on the network).
 */
int th_host_spawn(struct th_host *h, const char *const argv[], const char *log, pid_t *pid);

/**
 * Stop a program th_host_spawn() started: SIGTERM, SIGKILL after 10 s.
 * \return 0 when it exited with status 0 or was ended by the SIGTERM;
 *         else its exit status, or 128 + the signal that ended it (137:
 *         SIGKILL was needed); -ECHILD when \a pid is not one of \a h's.
 */
int th_host_stop(struct th_host *h, pid_t pid);

/**
 * Run a program on \a h to its end (at most 120 s; then its process group
 * is killed).
 * \param[in]  argv  As th_host_spawn().
 * \param[out] out   NULL, or its stdout and stderr together, NUL-terminated,
 *                   malloc'ed (free() it); when NULL and the status is not
 *                   0, the output is printed to stderr.
 * \return its exit status, 128 + signal when a signal ended it, or a
 *         negative errno (-ENOENT: no such program; -ETIMEDOUT).
 */
int th_host_run(struct th_host *h, const char *const argv[], char **out);

/** th_host_run() of "/bin/sh -c <formatted command>" (PATH starts with bin/). */
int th_host_sh(struct th_host *h, char **out, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/**
 * Run \a fn(\a arg) in a child process that has joined \a h's network
 * namespace: a libweir client (or any socket code) in-process, as if on
 * that host. The child is made by fork(), so call it before this process
 * has libweir threads of its own (or mind what fork() keeps of them); it
 * has a copy of this process's memory, so \a arg may point anywhere, but
 * what it changes stays in the child.
 *
 * CUnit assertions in \a fn count: each failure is recorded again in this
 * process with its file and line (its condition prefixed with the host),
 * and a fatal one ends the child. Its stdout and stderr are ours.
 * \return what \a fn returned; or -ECANCELED (a fatal assertion ended it),
 *         -ECHILD (the child died: a signal, or an exit() in \a fn;
 *         printed), or -errno (fork, setns).
 */
int th_host_call(struct th_host *h, int (*fn)(void *arg), void *arg);

/**
 * th_host_call() without waiting: returns once the child is on \a h, and
 * it runs while this process goes on (e.g. two clients at once, stepped
 * through pipes made before).
 * \param[out] out  Wait for it with th_host_call_wait() (th_net_stop()
 *                  kills it if it is still running then).
 * \return 0, or -errno (nothing to wait for).
 */
int th_host_call_start(struct th_host *h, int (*fn)(void *arg), void *arg, struct th_call **out);
/** Wait for a th_host_call_start() child and free \a call. \return as th_host_call(). */
int th_host_call_wait(struct th_call *call);

/**
 * Connect a blocking TCP socket from \a h to \a addr ("IP:PORT"), waiting
 * up to \a timeout_ms.
 * \return the socket (close() it), or -errno (-ECONNREFUSED, -ETIMEDOUT,
 *         -ENETUNREACH, -EINVAL for a bad address).
 */
int th_host_tcp_connect(struct th_host *h, const char *addr, int timeout_ms);

/**
 * Move the calling thread into \a h's network namespace until
 * th_host_leave(): sockets it makes meanwhile (net_conn_open(), socket())
 * are \a h's for their whole life. Do not call libweir's weir_mount()
 * here: its threads would stay in \a h (use th_host_call()).
 * \param[out] saved  Give it to th_host_leave().
 * \return 0 or -errno.
 */
int th_host_enter(const struct th_host *h, int *saved);
/** Go back to the namespace th_host_enter() left. */
void th_host_leave(int saved);

/* ------------------------------------------------------------ a cluster on it */

/**
 * th_cluster_start() with the MDS on host "mds" and OSS i on host
 * "oss<i>" (\a opts as harness.h; tco_nr_oss defaults to the number of
 * oss<i> hosts, 2 on the standard network; tco_places must be NULL): each
 * server listens on its host's address, the OSSs register with the MDS
 * over the bridge, and th_cluster_mds_addr() is "10.213.0.11:PORT". The
 * harness's own connections and th_cluster_cli() run on host "mds".
 * \return as th_cluster_start(); -EINVAL when a host is missing.
 */
int th_net_cluster_start(struct th_net *net, const struct th_cluster_opts *opts,
			 struct th_cluster **out);

#endif /* WEIR_TESTS_NETNS_H */
