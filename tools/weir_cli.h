/*
 * tools/weir_cli.h - the `weir` command: shared declarations.
 *
 * The tool is table-driven, like Lustre's lfs: every command is one row of
 * {name, handler, usage, help} in tools/weir.c. A command that has
 * subcommands of its own (`weir dra ...`, `weir hsm archive|restore|...`)
 * keeps its own table and calls wcli_dispatch() on it, which gives it the
 * same help and error handling for free.
 *
 * Exit status: 0 success, 1 an operation failed (each failure printed as
 * "weir CMD: PATH: reason (-EXXX)"), 2 a usage error.
 */
#ifndef WEIR_TOOLS_CLI_H
#define WEIR_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <weir/weir.h>

#define WCLI_EXIT_OK 0
#define WCLI_EXIT_FAIL 1
#define WCLI_EXIT_USAGE 2

struct wcli;

/** One (sub)command. */
struct wcli_cmd {
	const char *cc_name;
	/** Runs the command; argv[0] is the command name. \return a WCLI_EXIT_* code. */
	int (*cc_fn)(struct wcli *cli, int argc, char **argv);
	const char *cc_usage;  /* arguments after the name, e.g. "[-r] LOCAL... PATH" */
	const char *cc_help;   /* first line: one-line summary; then details */
	const struct wcli_cmd *cc_sub; /* subcommand table (then cc_fn is NULL), or NULL */
	size_t cc_nr_sub;
};

/** State of one run of the tool. */
struct wcli {
	const char *cl_mds;         /* --mds or $WEIR_MDS, may be NULL */
	char cl_cmd[64];            /* "put", "hsm archive", ... for messages */
	const struct wcli_cmd *cl_cur;
	weir_fs_t *cl_fs;           /* mounted on first wcli_mount() */
};

/**
 * Find argv[0] in \a table (\a nr rows) and run it, handling "help",
 * "--help" and unknown names. \a prefix is the command path so far ("" at
 * top level, "hsm" for subcommands). \return a WCLI_EXIT_* code.
 */
int wcli_dispatch(struct wcli *cli, const struct wcli_cmd *table, size_t nr, const char *prefix,
		  int argc, char **argv);

/**
 * Mount the filesystem (once). Prints the error itself.
 * \return 0, or the exit code to end with (WCLI_EXIT_USAGE when no MDS
 *         address was given, WCLI_EXIT_FAIL when the mount failed).
 */
int wcli_mount(struct wcli *cli);

/**
 * Format \a ns (nanoseconds since the epoch) as "YYYY-MM-DD HH:MM:SS UTC"
 * into \a buf of \a len bytes (24 are enough; truncated, NUL-terminated).
 */
void wcli_utc_time(int64_t ns, char *buf, size_t len);
/** Print "weir CMD: PATH: reason (-EXXX)" (PATH may be NULL) to stderr. */
void wcli_err(const struct wcli *cli, const char *path, int rc);
/** Print "weir CMD: PATH: message" (PATH may be NULL) to stderr. */
void wcli_errf(const struct wcli *cli, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/** Print "weir CMD: message" and the command's usage line. \return WCLI_EXIT_USAGE. */
int wcli_usage(const struct wcli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Print the current command's full help to stdout. \return WCLI_EXIT_OK. */
int wcli_help_cmd(const struct wcli *cli);
/** After getopt returned '?' or ':': name the bad option, print usage. \return exit code 2. */
int wcli_bad_opt(const struct wcli *cli, char **argv);

/** "dir" + "/" + "name" (no doubled slash), malloc'd; NULL on ENOMEM. */
char *wcli_path_join(const char *dir, const char *name);
/** Last component of \a path, ignoring trailing slashes, malloc'd ("/" for the root). */
char *wcli_basename(const char *path);
/** True when \a path is the root ("/", "//", ...). */
bool wcli_path_is_root(const char *path);
/** Monotonic seconds. */
double wcli_now(void);

/* command handlers */
int wcli_cmd_put(struct wcli *cli, int argc, char **argv);
int wcli_cmd_get(struct wcli *cli, int argc, char **argv);
int wcli_cmd_cat(struct wcli *cli, int argc, char **argv);
int wcli_cmd_ls(struct wcli *cli, int argc, char **argv);
int wcli_cmd_stat(struct wcli *cli, int argc, char **argv);
int wcli_cmd_mkdir(struct wcli *cli, int argc, char **argv);
int wcli_cmd_rm(struct wcli *cli, int argc, char **argv);
int wcli_cmd_rmdir(struct wcli *cli, int argc, char **argv);
int wcli_cmd_mv(struct wcli *cli, int argc, char **argv);
/** weir ln [-s] [-f] TARGET LINK_NAME: a hard (or symbolic) link. */
int wcli_cmd_ln(struct wcli *cli, int argc, char **argv);
int wcli_cmd_path2fid(struct wcli *cli, int argc, char **argv);
int wcli_cmd_setstripe(struct wcli *cli, int argc, char **argv);
int wcli_cmd_getstripe(struct wcli *cli, int argc, char **argv);
int wcli_cmd_df(struct wcli *cli, int argc, char **argv);
/* tools/weir_dra.c: weir dra ... */
int wcli_cmd_dra_create(struct wcli *cli, int argc, char **argv);
int wcli_cmd_dra_list(struct wcli *cli, int argc, char **argv);
int wcli_cmd_dra_delete(struct wcli *cli, int argc, char **argv);
int wcli_cmd_dra_import(struct wcli *cli, int argc, char **argv);
/* tools/weir_hsm.c: weir hsm ... */
int wcli_cmd_hsm_archive(struct wcli *cli, int argc, char **argv);
int wcli_cmd_hsm_restore(struct wcli *cli, int argc, char **argv);
int wcli_cmd_hsm_release(struct wcli *cli, int argc, char **argv);
int wcli_cmd_hsm_state(struct wcli *cli, int argc, char **argv);
int wcli_cmd_hsm_queue(struct wcli *cli, int argc, char **argv);

/* tools/weir_key.c */
int wcli_cmd_key_gen(struct wcli *cli, int argc, char **argv);
int wcli_cmd_key_rotate(struct wcli *cli, int argc, char **argv);
int wcli_cmd_key_retire(struct wcli *cli, int argc, char **argv);
int wcli_cmd_key_show(struct wcli *cli, int argc, char **argv);

#endif /* WEIR_TOOLS_CLI_H */
