/*
 * tests/lib/harness_int.h - pieces of the test harness shared between its
 * files (harness.c: the cluster; netns.c: the hosts), not for tests.
 *
 * Thread safety: as harness.h: the test's main thread only, except where a
 * function says it is async-signal-safe.
 */
#ifndef WEIR_TESTS_HARNESS_INT_H
#define WEIR_TESTS_HARNESS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* ------------------------------------------------------------ harness.c */

/**
 * Install the harness's atexit and fatal-signal handlers (once per
 * process); the process calling it first owns every cluster and host set.
 */
void th_handlers_install(void);

/** Stop every cluster still running (what the atexit handler does), in the owning process. */
void th_clusters_stop_all(void);

/**
 * Add \a fn to what a fatal signal runs in the owning process, after the
 * cluster servers are killed and before the signal is raised again. \a fn
 * must be async-signal-safe. At most 4 hooks; more are ignored (logged).
 */
void th_fatal_hook_add(void (*fn)(void));

/** Whether TH_KEEP asks to keep test directories (read at install time). */
bool th_keep_dirs(void);

/**
 * The directory of the server binaries ($BUILD/bin, else found from the
 * test binary's path) in \a out. \return 0, or -ENOENT (\a out then holds
 * where it looked).
 */
int th_bin_dir(char *out, size_t len);

/**
 * Make a fresh test directory /tmp/weir-test-XXXXXX holding harness.pid
 * (so that a later test removes it once this process is gone), after
 * removing such directories of dead test processes.
 * \param[out] dir  At least 32 bytes.
 * \return 0 or -errno.
 */
int th_tmpdir_new(char *dir, size_t len);

/** rm -rf \a dir from a fatal-signal handler (fork + exec /bin/rm). Async-signal-safe. */
void th_rm_rf_sigsafe(const char *dir);

/**
 * Print the last \a lines lines of the file \a path to stderr under a
 * header naming \a title. Async-signal-safe (one static buffer).
 */
void th_log_tail(const char *title, const char *path, int lines);

/* ------------------------------------------------------------ netns.c, netns_host.c */

/**
 * Move the calling thread into network namespace \a netns (a name under
 * /run/netns; NULL or "" changes nothing) until th_netns_leave(). Sockets
 * made meanwhile belong to that namespace for their whole life.
 * \param[out] saved  The namespace to go back to (-1 when nothing changed).
 * \return 0 or -errno (-ENOENT: no such namespace).
 */
int th_netns_enter(const char *netns, int *saved);
/** Go back to the namespace th_netns_enter() saved; accepts -1. */
void th_netns_leave(int saved);

/**
 * Fork and exec \a argv[0] (a path) with \a envp (NULL: our environment):
 * in network namespace \a netns (NULL: ours), stdin from /dev/null, stdout
 * and stderr to \a out_fd (-1: /dev/null), in a process group of its own,
 * with PR_SET_PDEATHSIG(SIGKILL) so it dies with the test. The child runs
 * only async-signal-safe calls before exec (the test may have threads).
 * An exec or setns failure makes the child write why to \a out_fd and
 * exit 127.
 * \return 0 and *pid, or -errno (-ENOENT: no such namespace).
 */
int th_spawn(const char *netns, char *const argv[], char *const envp[], int out_fd, pid_t *pid);

/**
 * Stop process \a pid (our child): SIGTERM, then SIGKILL after \a grace_ms;
 * reap it.
 * \param[in]  name    For the message when SIGKILL was needed.
 * \param[out] status  Its wait status (may be NULL).
 * \return 0 (it exited after SIGTERM), -ETIMEDOUT (SIGKILL was needed),
 *         -ECHILD (not our child, or already reaped).
 */
int th_proc_stop(pid_t pid, const char *name, int grace_ms, int *status);

#endif /* WEIR_TESTS_HARNESS_INT_H */
