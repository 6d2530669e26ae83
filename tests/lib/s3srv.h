/*
 * tests/lib/s3srv.h - start a real S3-protocol server (the npm package
 * s3rver, installed by deploy/deps.sh under .deps/) for the S3 tests.
 *
 * The server listens on 127.0.0.1 on a free port, keeps its data in a fresh
 * mkdtemp("/tmp/weir-s3-XXXXXX") directory, accepts the credentials
 * S3RVER/S3RVER, and runs with NODE_OPTIONS=--openssl-legacy-provider (on
 * Node.js >= 17 its continuation-token listings fail with 500 without it).
 * It gets PR_SET_PDEATHSIG(SIGKILL), and an atexit handler stops every
 * server still running, so a dying test leaves no server behind.
 *
 * Where s3rver is looked for: $WEIR_S3RVER (the s3rver.js script), else
 * <repo>/.deps/node_modules/s3rver/bin/s3rver.js, the repo found from $BUILD
 * (its parent) or from the test binary's path. node from $PATH.
 *
 * Thread safety: none; call from the test's main thread.
 */
#ifndef WEIR_TESTS_S3SRV_H
#define WEIR_TESTS_S3SRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct th_s3rver;
struct weir_s3_conf;

/**
 * Start s3rver and wait (up to 20 s) until it answers HTTP.
 * \param[out] out   Stop it with th_s3rver_stop().
 * \param[out] why   Reason of a failure, \a whylen bytes (for the skip message).
 * \return 0, -ENOENT (node or s3rver not installed: the test should exit 77),
 *         -ETIMEDOUT or -ECHILD (it did not come up; its log is printed).
 */
int th_s3rver_start(struct th_s3rver **out, char *why, size_t whylen);

/**
 * A test's main(): th_s3rver_start(), then the AWS_* environment pointed at
 * the server for this process and the programs it runs (AWS_ENDPOINT_URL,
 * the S3RVER credentials, AWS_REGION us-east-1), and \a conf set from it.
 * \param[in]  test    The test's name, for the messages.
 * \param[in]  bucket  The bucket of \a conf.
 * \param[out] conf    An S3 client configuration for the server.
 * \param[out] out     As for th_s3rver_start().
 * \return 0, else the exit code for main(): 77 (not installed; "SKIP: why"
 *         printed) or 1 (it did not start; printed).
 */
int th_s3rver_start_env(const char *test, const char *bucket, struct weir_s3_conf *conf,
			struct th_s3rver **out);

/** Stop the server (SIGTERM, SIGKILL after 5 s); the directory stays until _free. \return 0/-ESRCH. */
int th_s3rver_stop(struct th_s3rver *s);

/** Start it again on the same port and directory (after th_s3rver_stop()). \return as _start. */
int th_s3rver_restart(struct th_s3rver *s);

/** Stop (if running), remove its directory (unless TH_KEEP=1), free. Accepts NULL. */
void th_s3rver_free(struct th_s3rver *s);

/** "http://127.0.0.1:PORT"; valid until th_s3rver_free(). */
const char *th_s3rver_endpoint(const struct th_s3rver *s);

/** Print the tail of its log to stderr. */
void th_s3rver_dump_log(const struct th_s3rver *s, int lines);

#endif /* WEIR_TESTS_S3SRV_H */
