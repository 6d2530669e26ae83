/*
 * tests/posix/px_run.h - cases, their result logs, and the runner of the
 * POSIX conformance suite.
 *
 * A case is a function that performs one scenario through a struct px_ops
 * and records what it observes (return codes, errnos, bytes read, the
 * comparable fields of struct stat: type, permission bits, size, link count,
 * owner) as "label = value" lines in its result log. The runner runs every
 * case on the subject (libweir) and on the reference (the local Linux
 * filesystem), each in a fresh process, and compares the two logs line by
 * line: the first difference, with both values, is the case's failure.
 * Cases whose expected result is defined by Weir's documentation rather
 * than by Linux (PX_DIRECT) run on the subject only and check with
 * px_check().
 *
 * Each process running a case gets, in its filesystem, a directory of its
 * own "/<suite>.<case>" (px_p() builds paths in it); the libweir one gets
 * the default layout the case asks for (PX_STRIPED: 64 KiB stripes over
 * every OST), so the same offsets cross stripe and object boundaries.
 *
 * Thread safety: none; one thread per process.
 */
#ifndef WEIR_TESTS_PX_RUN_H
#define WEIR_TESTS_PX_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "px_ops.h"

/** Case flags. */
#define PX_DIRECT 0x1u  /**< subject only; expectations checked with px_check() */
#define PX_STRIPED 0x2u /**< Weir: the case directory stripes over every OST, 64 KiB */
#define PX_ROOTED 0x4u  /**< needs "/" to be the filesystem root on both backends */
#define PX_CREDS 0x8u   /**< needs po_set_cred on both backends */
#define PX_WEIR 0x10u   /**< needs the libweir backend as subject (Weir-only calls) */

/** Largest path px_p() builds. */
#define PX_PATH_MAX 8192

struct px_ctx;

/** One case. \return 0 when it ran, or px_skip() */
typedef int (*px_case_fn)(const struct px_ops *o, struct px_ctx *c);

/** A case in a suite's table (end it with PX_CASE_END). */
struct px_case {
	const char *pc_name; /**< short, unique in the binary: "open_excl" */
	px_case_fn pc_fn;
	unsigned pc_flags;   /**< PX_* */
	/**
	 * NULL, or why a difference is expected for now: names the missing
	 * Weir feature (see the comment at the case). The case still runs and
	 * its difference is printed, but does not fail the suite.
	 */
	const char *pc_xfail;
};
#define PX_CASE(fn, flags) { #fn, case_##fn, (flags), NULL }
#define PX_CASE_XFAIL(fn, flags, why) { #fn, case_##fn, (flags), (why) }
#define PX_CASE_END { NULL, NULL, 0, NULL }

/** Per-process state of a running case. */
struct px_ctx {
	const char *pc_case;      /**< the case's name */
	char pc_dir[300];         /**< "/<suite>.<case>" */
	int pc_log_fd;            /**< where records go (pipe), or -1 */
	char *pc_buf;             /**< or: this buffer (client processes), pc_buf_len bytes */
	size_t pc_buf_len;
	size_t pc_buf_used;
	unsigned pc_nrec;         /**< records so far */
	int pc_fails;             /**< px_check() failures */
	char pc_skip[200];        /**< set by px_skip() */
	int pc_client;            /**< client index in px_clients_run(), else -1 */
	void *pc_shared;          /**< px_clients_run(): memory shared by the clients */
	volatile int *pc_step;    /**< px_clients_run(): the step counter */
	unsigned pc_pathslot;     /**< px_p() ring */
	char pc_paths[8][PX_PATH_MAX];
};

/* ------------------------------------------------------------ paths */

/**
 * "<case dir>/<rel>" (\a rel NULL or "" gives the case directory). The
 * result lives in a ring of 8 buffers: valid for the next 7 calls.
 */
const char *px_p(struct px_ctx *c, const char *rel);
/** As px_p(), printf-style. */
const char *px_pf(struct px_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------ recording */

/** Record "label = <printf>". Newlines and other control bytes are escaped. */
void px_rec(struct px_ctx *c, const char *label, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** Record a return code: "0", a count, or an errno name ("-ENOENT"). \return rc. */
long px_rc(struct px_ctx *c, const char *label, long rc);

/**
 * Record a descriptor-returning call: "ok" (>= 0) or the errno name.
 * \return \a fd unchanged.
 */
int px_fd(struct px_ctx *c, const char *label, int fd);

/**
 * Record a call for which POSIX allows either of two errnos (\a e1, \a e2,
 * negative): both are recorded as "-E1|E2"; anything else as px_rc().
 */
long px_rc2(struct px_ctx *c, const char *label, long rc, int e1, int e2);

/** Record a boolean observation "yes" / "no". \return cond. */
bool px_bool(struct px_ctx *c, const char *label, bool cond);

/**
 * Record a stat result: the errno, or "type=reg mode=0644 nlink=1 size=N
 * uid=U gid=G" (what is comparable between filesystems; never inode numbers,
 * times, blocks or st_blksize).
 */
void px_rec_stat(struct px_ctx *c, const char *label, int rc, const struct stat *st);

/**
 * Record data read: the errno, or "n=N <summary>" where the summary shows
 * runs of one byte compactly ("00*4096") and the rest as hex, truncated,
 * followed by a hash of all n bytes.
 */
void px_rec_data(struct px_ctx *c, const char *label, long rc, const void *buf);

/**
 * Direct check (PX_DIRECT cases, and things every filesystem must do):
 * records "FAIL: <printf>" and counts a failure when \a cond is false.
 * \return cond.
 */
bool px_check(struct px_ctx *c, bool cond, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** The errno name of a negative errno ("ENOENT"), or its number. */
const char *px_errname(long rc);

/* ------------------------------------------------------------ needs */

/**
 * Note that the case needs something the backend lacks. \return 0 when
 * \a have, else remembers \a what ("weir_link") and returns 1.
 */
int px_need(struct px_ctx *c, bool have, const char *what);

/** Mark the case skipped (after px_need()). \return the value a case returns to skip. */
int px_skip(struct px_ctx *c);

/** Returned by a case that skipped. */
#define PX_SKIPPED 77

/* ------------------------------------------------------------ helpers for cases */

/** Create (or truncate) \a path with \a len bytes of \a buf. \return 0 or -errno. */
int px_put(const struct px_ops *o, const char *path, const void *buf, size_t len);
/** Read up to \a len bytes of \a path from 0. \return bytes or -errno. */
ssize_t px_get(const struct px_ops *o, const char *path, void *buf, size_t len);
/** po_open(), recorded as px_fd(), closed again if it opened. \return the open's result. */
int px_try_open(const struct px_ops *o, struct px_ctx *c, const char *label, const char *path,
		int flags, mode_t mode);
/** po_opendir(), recorded as px_fd(), closed again if it opened. \return its result. */
int px_try_opendir(const struct px_ops *o, struct px_ctx *c, const char *label, const char *path);
/** Create an empty file (O_CREAT|O_WRONLY, 0644). \return 0 or -errno. */
int px_touch(const struct px_ops *o, const char *path);
/**
 * mkdir \a path (0755) and, on Weir, give it a default layout of \a count
 * stripes of \a size bytes ((uint32_t)-1: every OST). \return 0 or -errno.
 */
int px_mkdir_striped(const struct px_ops *o, const char *path, uint32_t count, uint64_t size);
/**
 * List directory \a path into "name:type name:type ..." sorted by name
 * ("." and ".." included), recorded under \a label; also returns the count.
 */
int px_rec_listing(const struct px_ops *o, struct px_ctx *c, const char *label,
		   const char *path);

/* ------------------------------------------------------------ client processes */

/** A client process's script: \a idx is 0..nr-1. */
typedef void (*px_client_fn)(const struct px_ops *o, struct px_ctx *c, int idx);

/**
 * Run \a nr client processes (fork; each is a separate client: with
 * libweir, its own mount) executing \a fn, each recording into its own log;
 * once all have exited, append their logs to the case's log in client order,
 * each line prefixed "c<idx>: ". The case's own backend state is detached
 * first (po_detach). Clients share \a shared_len zeroed bytes (c->pc_shared,
 * also readable by the case afterwards) and a step counter for
 * px_step_post() / px_step_wait().
 * \return 0, or -ETIMEDOUT / -ECHILD when a client hung or died (recorded).
 */
int px_clients_run(const struct px_ops *o, struct px_ctx *c, int nr, px_client_fn fn,
		   size_t shared_len);

/** Client side: set the shared step counter to \a step. */
void px_step_post(struct px_ctx *c, int step);
/** Client side: wait (up to 30 s; else record and exit) until the step counter is >= \a step. */
void px_step_wait(struct px_ctx *c, int step);
/** Client side: count this client in at barrier \a id and wait until all \a nr clients did. */
void px_barrier(struct px_ctx *c, int id, int nr);

/* ------------------------------------------------------------ runner */

/**
 * The test binary's main: start a cluster (unless PX_SUBJECT_ROOT names a
 * mount to test instead), run every case of \a cases on both backends as
 * one CUnit test each, print a "case NAME: ok|DIFF ...|skipped (...)" line
 * per case, stop the cluster. \a suite names the binary's area ("open").
 * \return the exit code.
 */
int px_main(const char *suite, const struct px_case *cases);

#endif /* WEIR_TESTS_PX_RUN_H */
