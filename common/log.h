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

#include <stdarg.h>

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

#endif /* WEIR_COMMON_LOG_H */
