/*
 * tests/lib/hsmd.h - run the HSM copytool (weir-hsmd) as a process next to a
 * th_cluster, for the S3 tier tests and the tier benchmark.
 *
 * weir-hsmd comes from the cluster's bin directory ($BUILD/bin, as the
 * harness finds it). It is started with
 *   weir-hsmd --mds <cluster MDS> --threads N --log DIR/hsmd<k>.log [extra...]
 * and with AWS_ENDPOINT_URL set to the S3 endpoint given, AWS_ACCESS_KEY_ID
 * and AWS_SECRET_ACCESS_KEY S3RVER (s3rver's credentials) unless already set
 * in the environment, AWS_REGION us-east-1 unless set; stdout/stderr go to
 * the same log. DIR is the cluster's directory, so stop the copytool before
 * th_cluster_stop() (which removes DIR): th_hsmd_free() first.
 *
 * The copytool gets PR_SET_PDEATHSIG(SIGKILL), and an atexit handler kills
 * every copytool still running, so a dying test leaves none behind. When a
 * test has failed (th_failed()), th_hsmd_free() prints the tail of the log;
 * an unexpected exit found by th_hsmd_alive() prints it too.
 *
 * Readiness: weir-hsmd has no port; it long-polls the MDS. Tests that need
 * to know it is registered ask the MDS (weir_hsm_queue_get().hq_agents), which
 * this module does not do so that it needs no libweir.
 *
 * Thread safety: none; call from the test's main thread.
 */
#ifndef WEIR_TESTS_HSMD_H
#define WEIR_TESTS_HSMD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct th_cluster;
struct th_hsmd;

/**
 * Start weir-hsmd for cluster \a c.
 * \param[in]  c         A running cluster (its MDS address and directory are used).
 * \param[in]  endpoint  S3 endpoint, "http://127.0.0.1:PORT" (th_s3rver_endpoint()).
 * \param[in]  threads   --threads; 0 leaves the copytool's default.
 * \param[in]  extra     More arguments, NULL-terminated, or NULL. The array and its
 *                       strings must stay valid until th_hsmd_free() (restarts
 *                       reuse them).
 * \param[out] out       Free with th_hsmd_free().
 * \return 0, -ENOENT (no weir-hsmd binary: the message says where it looked),
 *         -ECHILD (it exited within its first 200 ms; the log is printed),
 *         -ENOMEM, or another negative errno of fork().
 */
int th_hsmd_start(struct th_cluster *c, const char *endpoint, unsigned threads,
		  const char *const *extra, struct th_hsmd **out);

/** kill -9 the copytool and reap it. \return 0, or -ESRCH when it was not running. */
int th_hsmd_kill(struct th_hsmd *h);

/**
 * SIGTERM, SIGKILL after 10 s; reap.
 * \return 0 (exit status 0 or killed by SIGTERM), -ECHILD (another status:
 *         the log tail is printed), -ESRCH (not running).
 */
int th_hsmd_stop(struct th_hsmd *h);

/**
 * Start it again with the same arguments and environment (appends to the
 * same log). \return 0, -EALREADY (running), or as th_hsmd_start().
 */
int th_hsmd_restart(struct th_hsmd *h);

/** True while it runs; reaps it (and prints its log tail) when it has exited. */
bool th_hsmd_alive(struct th_hsmd *h);

/** Its pid, 0 when not running. */
pid_t th_hsmd_pid(const struct th_hsmd *h);

/** Path of its log file. */
const char *th_hsmd_log(const struct th_hsmd *h);

/** Print the last \a lines lines of its log to stderr. */
void th_hsmd_dump_log(const struct th_hsmd *h, int lines);

/**
 * Does its log contain \a needle (plain substring, case-sensitive)?
 * \return 1 yes, 0 no, or a negative errno when the log cannot be read.
 */
int th_hsmd_log_grep(const struct th_hsmd *h, const char *needle);

/**
 * Stop it (SIGTERM) if running, print its log tail when a test has failed,
 * free. Accepts NULL. \return as th_hsmd_stop(), 0 when it was not running.
 */
int th_hsmd_free(struct th_hsmd *h);

#endif /* WEIR_TESTS_HSMD_H */
