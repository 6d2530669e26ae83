/*
 * common/log.h - leveled logging.
 *
 * Messages start with key=value fields then prose:
 *   WEIR_LOG_ERROR("op=rename fid=" FID_F " rc=%d: target busy", FID_P(&fid), rc);
 * The macros test the level before evaluating their arguments.
 * Daemons log to stderr or a file; libweir is silent unless WEIR_LOG names a
 * file (or "stderr") -- it never writes to the application's stdout/stderr on
 * its own. Thread safety: all functions are thread-safe (one write(2) per line).
 */
#ifndef WEIR_COMMON_LOG_H
#define WEIR_COMMON_LOG_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

enum weir_log_level {
	WEIR_LOG_NONE = 0,
	WEIR_LOG_LVL_ERROR = 1,
	WEIR_LOG_LVL_WARN = 2,
	WEIR_LOG_LVL_NOTICE = 3,
	WEIR_LOG_LVL_INFO = 4,
	WEIR_LOG_LVL_DEBUG = 5,
};

extern int weir_log_level_cur;

/** Set the threshold; messages above it are dropped without formatting. */
void weir_log_set_level(int level);
/** Parse "error|warn|notice|info|debug". \return the level or -EINVAL. */
int weir_log_parse_level(const char *s);
/**
 * Send log lines to \a path ("stderr" for standard error, NULL to silence).
 * \return 0 or -errno when the file cannot be opened.
 */
int weir_log_open(const char *path);
/** Short tag printed on each line, e.g. "mds" or "oss". Not copied: pass a literal. */
void weir_log_set_ident(const char *ident);

void weir_log_write(int level, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define WEIR_LOG_AT(lvl, ...)                                                                  \
	do {                                                                                   \
		if ((lvl) <= weir_log_level_cur)                                               \
			weir_log_write((lvl), __FILE__, __LINE__, __VA_ARGS__);                \
	} while (0)

#define WEIR_LOG_ERROR(...) WEIR_LOG_AT(WEIR_LOG_LVL_ERROR, __VA_ARGS__)
#define WEIR_LOG_WARN(...) WEIR_LOG_AT(WEIR_LOG_LVL_WARN, __VA_ARGS__)
#define WEIR_LOG_NOTICE(...) WEIR_LOG_AT(WEIR_LOG_LVL_NOTICE, __VA_ARGS__)
#define WEIR_LOG_INFO(...) WEIR_LOG_AT(WEIR_LOG_LVL_INFO, __VA_ARGS__)
#define WEIR_LOG_DEBUG(...) WEIR_LOG_AT(WEIR_LOG_LVL_DEBUG, __VA_ARGS__)

/*
 * Rate limiting, for lines a peer can cause (malformed frames, failed
 * authentications, refused requests): so that no one can fill a server's
 * disk from the network. Each call site of WEIR_LOG_RL() writes at most
 * WEIR_LOG_RL_BURST lines per WEIR_LOG_RL_INTERVAL_S seconds; the lines it
 * drops are counted, and the count is written ("... N similar lines
 * suppressed in the last 5 s") with the next line that gets through, or by
 * weir_log_rl_flush_all() (servers call it from a timer, so a count is never
 * lost for long). The model is the Linux kernel's printk_ratelimit.
 */
#define WEIR_LOG_RL_INTERVAL_S 5
#define WEIR_LOG_RL_BURST 10

struct weir_log_rl {
	pthread_mutex_t rl_lock;
	uint64_t rl_start_ns;    /* CLOCK_MONOTONIC start of the current interval */
	uint32_t rl_printed;     /* lines written in this interval */
	uint32_t rl_suppressed;  /* lines dropped and not yet reported */
	const char *rl_file;     /* call site, for the suppressed-count line */
	int rl_line;
	int rl_level;
	struct weir_log_rl *rl_next; /* list of every limiter that dropped a line */
	bool rl_listed;
};
#define WEIR_LOG_RL_INIT { .rl_lock = PTHREAD_MUTEX_INITIALIZER }

/**
 * Whether a rate-limited line may be written now.
 * \param[in,out] rl   The call site's limiter (static storage).
 * \param[out] suppressed  Lines dropped since the last one written (write
 *                 the count before the line when nonzero).
 * eturn true: write it. Thread-safe.
 */
bool weir_log_rl_allow(struct weir_log_rl *rl, int level, const char *file, int line,
		       uint32_t *suppressed);

/**
 * Write the pending "N similar lines suppressed" counts of every limiter
 * whose interval has ended. Thread-safe; cheap when nothing was dropped.
 */
void weir_log_rl_flush_all(void);

#define WEIR_LOG_RL(lvl, ...)                                                                  \
	do {                                                                                   \
		static struct weir_log_rl rl_site_ = WEIR_LOG_RL_INIT;                         \
		uint32_t rl_sup_;                                                              \
		if ((lvl) <= weir_log_level_cur &&                                             \
		    weir_log_rl_allow(&rl_site_, (lvl), __FILE__, __LINE__, &rl_sup_)) {       \
			if (rl_sup_)                                                           \
				weir_log_write((lvl), __FILE__, __LINE__,                      \
					       "%u similar lines suppressed in the last %d s",  \
					       rl_sup_, WEIR_LOG_RL_INTERVAL_S);               \
			weir_log_write((lvl), __FILE__, __LINE__, __VA_ARGS__);                \
		}                                                                              \
	} while (0)

#define WEIR_LOG_WARN_RL(...) WEIR_LOG_RL(WEIR_LOG_LVL_WARN, __VA_ARGS__)
#define WEIR_LOG_ERROR_RL(...) WEIR_LOG_RL(WEIR_LOG_LVL_ERROR, __VA_ARGS__)

#endif /* WEIR_COMMON_LOG_H */
