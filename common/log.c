/*
 * common/log.c - see log.h.
 */
#define _GNU_SOURCE
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int weir_log_level_cur = WEIR_LOG_LVL_NOTICE;
static int log_fd = 2;
static const char *log_ident = "weir";

void weir_log_set_level(int level)
{
	weir_log_level_cur = level;
}

void weir_log_set_ident(const char *ident)
{
	log_ident = ident;
}

int weir_log_parse_level(const char *s)
{
	static const char *names[] = { "none", "error", "warn", "notice", "info", "debug" };
	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcasecmp(s, names[i]))
			return i;
	return -EINVAL;
}

int weir_log_open(const char *path)
{
	if (!path) {
		weir_log_level_cur = WEIR_LOG_NONE;
		return 0;
	}
	if (!strcmp(path, "stderr")) {
		log_fd = 2;
		return 0;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	log_fd = fd;
	return 0;
}

void weir_log_write(int level, const char *file, int line, const char *fmt, ...)
{
	static const char *lv[] = { "", "ERROR", "WARN", "NOTICE", "INFO", "DEBUG" };
	char buf[2048];
	struct timespec ts;
	struct tm tm;
	int saved = errno;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	int n = snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ %s[%d] %s %s:%d ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, ts.tv_nsec / 1000, log_ident, (int)syscall(SYS_gettid),
			 (level >= 1 && level <= 5) ? lv[level] : "?", base, line);
	if (n < 0)
		n = 0;
	if ((size_t)n < sizeof(buf)) {
		va_list ap;
		va_start(ap, fmt);
		int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
		va_end(ap);
		if (m > 0)
			n += m;
	}
	if ((size_t)n >= sizeof(buf) - 1)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	ssize_t w = write(log_fd, buf, (size_t)n);
	(void)w;
	errno = saved;
}

/* ------------------------------------------------------------ rate limiting */

static pthread_mutex_t rl_list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct weir_log_rl *rl_list; /* limiters that ever dropped a line */

static uint64_t rl_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

bool weir_log_rl_allow(struct weir_log_rl *rl, int level, const char *file, int line,
		       uint32_t *suppressed)
{
	uint64_t now = rl_now_ns();
	bool ok, list = false;

	pthread_mutex_lock(&rl->rl_lock);
	if (!rl->rl_start_ns || now - rl->rl_start_ns >= WEIR_LOG_RL_INTERVAL_S * 1000000000ULL) {
		rl->rl_start_ns = now;
		rl->rl_printed = 0;
	}
	ok = rl->rl_printed < WEIR_LOG_RL_BURST;
	*suppressed = 0;
	if (ok) {
		rl->rl_printed++;
		*suppressed = rl->rl_suppressed;
		rl->rl_suppressed = 0;
	} else {
		rl->rl_suppressed++;
		rl->rl_file = file;
		rl->rl_line = line;
		rl->rl_level = level;
		if (!rl->rl_listed) {
			rl->rl_listed = true;
			list = true;
		}
	}
	pthread_mutex_unlock(&rl->rl_lock);
	if (list) {
		pthread_mutex_lock(&rl_list_lock);
		rl->rl_next = rl_list;
		rl_list = rl;
		pthread_mutex_unlock(&rl_list_lock);
	}
	return ok;
}

void weir_log_rl_flush_all(void)
{
	uint64_t now = rl_now_ns();

	pthread_mutex_lock(&rl_list_lock);
	for (struct weir_log_rl *rl = rl_list; rl; rl = rl->rl_next) {
		uint32_t n = 0;
		pthread_mutex_lock(&rl->rl_lock);
		if (rl->rl_suppressed &&
		    now - rl->rl_start_ns >= WEIR_LOG_RL_INTERVAL_S * 1000000000ULL) {
			n = rl->rl_suppressed;
			rl->rl_suppressed = 0;
			rl->rl_start_ns = now;
			rl->rl_printed = 0;
		}
		pthread_mutex_unlock(&rl->rl_lock);
		if (n && rl->rl_level <= weir_log_level_cur)
			weir_log_write(rl->rl_level, rl->rl_file, rl->rl_line,
				       "%u similar lines suppressed in the last %d s", n,
				       WEIR_LOG_RL_INTERVAL_S);
	}
	pthread_mutex_unlock(&rl_list_lock);
}
