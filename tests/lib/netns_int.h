/*
 * tests/lib/netns_int.h - what netns.c (the network) and netns_host.c (the
 * programs on its hosts) share; not for tests.
 */
#ifndef WEIR_TESTS_NETNS_INT_H
#define WEIR_TESTS_NETNS_INT_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "netns.h"

/** Most programs th_host_spawn() keeps running at once on one network. */
#define TH_NET_MAX_PROCS 64

struct th_host {
	struct th_net *h_net;
	char h_name[16];  /* "client0"; "sw" for the switch */
	char h_netns[64]; /* weirt-<pid>-<k>-<name> */
	char h_path[96];  /* /run/netns/<h_netns> */
	char h_ip[16];    /* 10.213.0.N; "" for the switch */
	bool h_made;      /* its namespace exists (delete it) */
	ino_t h_ino;      /* its namespace's inode, 0 until made */
};

/** A program th_host_spawn() started; pr_pid 0 = free slot. */
struct th_proc {
	pid_t pr_pid;
	struct th_host *pr_host;
	char pr_name[48]; /* "<host>:<program>" for messages */
};

struct th_net {
	char n_tag[32];            /* weirt-<pid>-<k> */
	char n_dir[64];            /* /tmp/weir-test-XXXXXX: logs */
	char n_bin[PATH_MAX];      /* the build's bin/ */
	struct th_host n_switch;   /* the bridge's namespace */
	struct th_host n_hosts[TH_NET_MAX_HOSTS];
	int n_nr_hosts;
	struct th_proc n_procs[TH_NET_MAX_PROCS];
	struct th_net *n_next;     /* the list of networks up (netns.c) */
};

/**
 * Run \a argv (argv[0] a path) in namespace \a netns (NULL: ours) with
 * \a envp (NULL: ours), stdout and stderr into *\a out (malloc'ed,
 * NUL-terminated; may be NULL), killing its process group after
 * \a timeout_ms.
 * \return its exit status, 128 + signal, or -errno (-ETIMEDOUT).
 */
int th_run_capture(const char *netns, char *const argv[], char *const envp[], int timeout_ms,
		   char **out);

/** SIGKILL every program th_host_spawn() started on \a net. Async-signal-safe. */
void th_net_procs_kill(struct th_net *net);
/** th_host_stop() every program still running on \a net. */
void th_net_procs_stop(struct th_net *net);

#endif /* WEIR_TESTS_NETNS_INT_H */
