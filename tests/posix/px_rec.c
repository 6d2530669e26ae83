/*
 * tests/posix/px_rec.c - what cases use: paths in the case directory, the
 * result log (records, one "label = value" line each), helpers, and client
 * processes (px_clients_run) with their shared steps and barriers. See
 * px_run.h; the runner that runs cases and compares logs is px_run.c.
 */
#define _GNU_SOURCE
#include "px_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "tests/lib/harness.h"

#define PX_CASE_TIMEOUT_S 60
#define PX_STEP_TIMEOUT_MS 30000
#define PX_CLIENT_LOG 65536
#define PX_MAX_CLIENTS 16
#define PX_DATA_SUMMARY 160

#define PX_MIN(a, b) ((a) < (b) ? (a) : (b))

/* ------------------------------------------------------------ paths */

const char *px_p(struct px_ctx *c, const char *rel)
{
	char *b = c->pc_paths[c->pc_pathslot++ % 8];
	if (!rel || !rel[0])
		snprintf(b, PX_PATH_MAX, "%s", c->pc_dir);
	else
		snprintf(b, PX_PATH_MAX, "%s/%s", c->pc_dir, rel);
	return b;
}

const char *px_pf(struct px_ctx *c, const char *fmt, ...)
{
	char rel[PX_PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	return px_p(c, rel);
}

/* ------------------------------------------------------------ recording */

/* Append \a s to \a out (capacity \a cap) with control bytes, '\\' and bytes >= 0x7f escaped. */
static size_t px_escape(char *out, size_t cap, size_t used, const char *s, size_t len)
{
	for (size_t i = 0; i < len && used + 5 < cap; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch >= 0x7f || ch == '\\')
			used += (size_t)snprintf(out + used, cap - used, "\\x%02x", ch);
		else
			out[used++] = (char)ch;
	}
	out[used] = 0;
	return used;
}

static void px_emit(struct px_ctx *c, const char *line, size_t len)
{
	if (c->pc_log_fd >= 0) {
		size_t done = 0;
		while (done < len) {
			ssize_t n = write(c->pc_log_fd, line + done, len - done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return;
			done += (size_t)n;
		}
		return;
	}
	if (c->pc_buf && c->pc_buf_used + len < c->pc_buf_len) {
		memcpy(c->pc_buf + c->pc_buf_used, line, len);
		c->pc_buf_used += len;
		c->pc_buf[c->pc_buf_used] = 0;
	}
}

/* Record "label = value" where value is already formatted (escaped here). */
static void px_rec_raw(struct px_ctx *c, const char *label, const char *value, size_t vlen)
{
	static char line[1 << 17];
	size_t used = px_escape(line, sizeof(line), 0, label, strlen(label));
	used += (size_t)snprintf(line + used, sizeof(line) - used, " = ");
	used = px_escape(line, sizeof(line), used, value, vlen);
	if (used + 1 < sizeof(line))
		line[used++] = '\n';
	c->pc_nrec++;
	px_emit(c, line, used);
}

void px_rec(struct px_ctx *c, const char *label, const char *fmt, ...)
{
	static char v[1 << 16];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	px_rec_raw(c, label, v, PX_MIN((size_t)n, sizeof(v) - 1));
}

const char *px_errname(long rc)
{
	static char buf[8][32];
	static unsigned slot;
	char *b = buf[slot++ % 8];
	const char *name = rc < 0 && rc > -4096 ? strerrorname_np((int)-rc) : NULL;
	if (name)
		snprintf(b, 32, "%s", name);
	else
		snprintf(b, 32, "errno %ld", -rc);
	return b;
}

long px_rc(struct px_ctx *c, const char *label, long rc)
{
	if (rc < 0)
		px_rec(c, label, "-%s", px_errname(rc));
	else
		px_rec(c, label, "%ld", rc);
	return rc;
}

int px_fd(struct px_ctx *c, const char *label, int fd)
{
	if (fd < 0)
		px_rec(c, label, "-%s", px_errname(fd));
	else
		px_rec(c, label, "ok");
	return fd;
}

long px_rc2(struct px_ctx *c, const char *label, long rc, int e1, int e2)
{
	if (rc == e1 || rc == e2)
		px_rec(c, label, "-%s|%s", px_errname(e1), px_errname(e2));
	else
		px_rc(c, label, rc);
	return rc;
}

bool px_bool(struct px_ctx *c, const char *label, bool cond)
{
	px_rec(c, label, "%s", cond ? "yes" : "no");
	return cond;
}

static const char *px_type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "reg";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "lnk";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "sock";
	case S_IFCHR:
		return "chr";
	case S_IFBLK:
		return "blk";
	}
	return "?";
}

void px_rec_stat(struct px_ctx *c, const char *label, int rc, const struct stat *st)
{
	if (rc < 0) {
		px_rc(c, label, rc);
		return;
	}
	char size[48] = "";
	/* a directory's st_size is the filesystem's business */
	if (!S_ISDIR(st->st_mode))
		snprintf(size, sizeof(size), " size=%lld", (long long)st->st_size);
	px_rec(c, label, "type=%s mode=%04o nlink=%lu%s uid=%u gid=%u", px_type_name(st->st_mode),
	       (unsigned)(st->st_mode & 07777), (unsigned long)st->st_nlink, size,
	       (unsigned)st->st_uid, (unsigned)st->st_gid);
}

void px_rec_data(struct px_ctx *c, const char *label, long rc, const void *buf)
{
	if (rc < 0) {
		px_rc(c, label, rc);
		return;
	}
	const unsigned char *b = buf;
	size_t n = (size_t)rc;
	char out[PX_DATA_SUMMARY + 64];
	size_t used = (size_t)snprintf(out, sizeof(out), "n=%zu", n);
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	size_t i = 0;
	while (i < n && used < PX_DATA_SUMMARY) {
		size_t j = i;
		while (j < n && b[j] == b[i])
			j++;
		if (j - i >= 8) {
			used += (size_t)snprintf(out + used, sizeof(out) - used, " %02x*%zu", b[i],
						 j - i);
			i = j;
		} else {
			used += (size_t)snprintf(out + used, sizeof(out) - used, "%s%02x",
						 i && b[i - 1] == b[i] ? "" : " ", b[i]);
			i++;
		}
	}
	if (i < n)
		used += (size_t)snprintf(out + used, sizeof(out) - used, " ...");
	snprintf(out + used, sizeof(out) - used, " fnv=%016llx", (unsigned long long)h);
	px_rec(c, label, "%s", out);
}

bool px_check(struct px_ctx *c, bool cond, const char *fmt, ...)
{
	if (cond)
		return true;
	char v[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	c->pc_fails++;
	px_rec(c, "FAIL", "%s", v);
	return false;
}

int px_need(struct px_ctx *c, bool have, const char *what)
{
	if (have)
		return 0;
	size_t used = strlen(c->pc_skip);
	snprintf(c->pc_skip + used, sizeof(c->pc_skip) - used, "%s%s", used ? ", " : "", what);
	return 1;
}

int px_skip(struct px_ctx *c)
{
	(void)c;
	return PX_SKIPPED;
}

/* ------------------------------------------------------------ helpers for cases */

int px_put(const struct px_ops *o, const char *path, const void *buf, size_t len)
{
	int fd = o->po_open(o, path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0)
		return fd;
	size_t done = 0;
	while (done < len) {
		ssize_t n = o->po_pwrite(o, fd, (const char *)buf + done, len - done,
					 (int64_t)done);
		if (n <= 0) {
			o->po_close(o, fd);
			return n < 0 ? (int)n : -EIO;
		}
		done += (size_t)n;
	}
	return o->po_close(o, fd);
}

ssize_t px_get(const struct px_ops *o, const char *path, void *buf, size_t len)
{
	int fd = o->po_open(o, path, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	size_t done = 0;
	while (done < len) {
		ssize_t n = o->po_pread(o, fd, (char *)buf + done, len - done, (int64_t)done);
		if (n < 0) {
			o->po_close(o, fd);
			return n;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	o->po_close(o, fd);
	return (ssize_t)done;
}

int px_try_open(const struct px_ops *o, struct px_ctx *c, const char *label, const char *path,
		int flags, mode_t mode)
{
	int fd = px_fd(c, label, o->po_open(o, path, flags, mode));
	if (fd >= 0)
		o->po_close(o, fd);
	return fd;
}

int px_try_opendir(const struct px_ops *o, struct px_ctx *c, const char *label, const char *path)
{
	int dh = px_fd(c, label, o->po_opendir(o, path));
	if (dh >= 0)
		o->po_closedir(o, dh);
	return dh;
}

int px_touch(const struct px_ops *o, const char *path)
{
	int fd = o->po_open(o, path, O_CREAT | O_WRONLY, 0644);
	if (fd < 0)
		return fd;
	return o->po_close(o, fd);
}

int px_mkdir_striped(const struct px_ops *o, const char *path, uint32_t count, uint64_t size)
{
	int rc = o->po_mkdir(o, path, 0755);
	if (rc || !o->po_stripe_dir)
		return rc;
	return o->po_stripe_dir(o, path, count, size);
}

static int px_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct px_dirent *)a)->pd_name, ((const struct px_dirent *)b)->pd_name);
}

static char px_dt_char(unsigned char t)
{
	switch (t) {
	case DT_REG:
		return 'f';
	case DT_DIR:
		return 'd';
	case DT_LNK:
		return 'l';
	case DT_FIFO:
		return 'p';
	case DT_SOCK:
		return 's';
	case DT_CHR:
		return 'c';
	case DT_BLK:
		return 'b';
	}
	return '?';
}

int px_rec_listing(const struct px_ops *o, struct px_ctx *c, const char *label, const char *path)
{
	int dh = o->po_opendir(o, path);
	if (dh < 0)
		return (int)px_rc(c, label, dh);
	size_t cap = 64, n = 0;
	struct px_dirent *ents = malloc(cap * sizeof(*ents));
	int rc;
	while (ents && (rc = o->po_readdir(o, dh, &ents[n])) == 1) {
		if (++n == cap) {
			cap *= 2;
			struct px_dirent *m = realloc(ents, cap * sizeof(*ents));
			if (!m) {
				free(ents);
				ents = NULL;
			}
			ents = m;
		}
	}
	o->po_closedir(o, dh);
	if (!ents)
		return (int)px_rc(c, label, -ENOMEM);
	if (rc < 0) {
		free(ents);
		return (int)px_rc(c, label, rc);
	}
	qsort(ents, n, sizeof(*ents), px_name_cmp);
	size_t vcap = n * 260 + 16, used = 0;
	char *v = malloc(vcap);
	if (!v) {
		free(ents);
		return (int)px_rc(c, label, -ENOMEM);
	}
	v[0] = 0;
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(v + used, vcap - used, "%s%s:%c", i ? " " : "",
					 ents[i].pd_name, px_dt_char(ents[i].pd_type));
	px_rec_raw(c, label, v, used);
	free(v);
	free(ents);
	return (int)n;
}

/* ------------------------------------------------------------ client processes */

struct px_shm {
	atomic_int ps_step;
	atomic_int ps_barrier[16];
};

void px_step_post(struct px_ctx *c, int step)
{
	struct px_shm *sh = (struct px_shm *)(void *)c->pc_step;
	atomic_store(&sh->ps_step, step);
}

void px_step_wait(struct px_ctx *c, int step)
{
	struct px_shm *sh = (struct px_shm *)(void *)c->pc_step;
	uint64_t deadline = th_now_ms() + PX_STEP_TIMEOUT_MS;
	while (atomic_load(&sh->ps_step) < step) {
		if (th_now_ms() > deadline) {
			px_rec(c, "sync", "timeout waiting for step %d (at %d)", step,
			       atomic_load(&sh->ps_step));
			_exit(3);
		}
		usleep(500);
	}
}

void px_barrier(struct px_ctx *c, int id, int nr)
{
	struct px_shm *sh = (struct px_shm *)(void *)c->pc_step;
	uint64_t deadline = th_now_ms() + PX_STEP_TIMEOUT_MS;
	atomic_fetch_add(&sh->ps_barrier[id & 15], 1);
	while (atomic_load(&sh->ps_barrier[id & 15]) < nr) {
		if (th_now_ms() > deadline) {
			px_rec(c, "sync", "timeout at barrier %d", id);
			_exit(3);
		}
		usleep(200);
	}
}

int px_clients_run(const struct px_ops *o, struct px_ctx *c, int nr, px_client_fn fn,
		   size_t shared_len)
{
	if (nr < 1 || nr > PX_MAX_CLIENTS)
		return (int)px_rc(c, "clients", -EINVAL);
	size_t hdr = (sizeof(struct px_shm) + 63) & ~(size_t)63;
	size_t len = hdr + (size_t)nr * PX_CLIENT_LOG + shared_len;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return (int)px_rc(c, "clients", -errno);
	o->po_detach(o);
	fflush(NULL);
	pid_t pids[PX_MAX_CLIENTS];
	for (int i = 0; i < nr; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			pids[i] = 0;
			continue;
		}
		if (pids[i] == 0) {
			static struct px_ctx cc;
			cc = *c;
			cc.pc_log_fd = -1;
			cc.pc_buf = m + hdr + (size_t)i * PX_CLIENT_LOG;
			cc.pc_buf_len = PX_CLIENT_LOG;
			cc.pc_buf_used = 0;
			cc.pc_client = i;
			cc.pc_shared = m + hdr + (size_t)nr * PX_CLIENT_LOG;
			cc.pc_step = (volatile int *)(void *)m;
			alarm(PX_CASE_TIMEOUT_S - 10);
			fn(o, &cc, i);
			o->po_detach(o);
			fflush(NULL);
			_exit(cc.pc_fails ? 1 : 0);
		}
	}
	int bad = 0;
	uint64_t deadline = th_now_ms() + (PX_CASE_TIMEOUT_S - 5) * 1000ULL;
	for (int i = 0; i < nr; i++) {
		char label[32];
		snprintf(label, sizeof(label), "c%d exit", i);
		if (!pids[i]) {
			px_rc(c, label, -EAGAIN);
			bad = -ECHILD;
			continue;
		}
		int st = 0;
		pid_t r;
		while ((r = waitpid(pids[i], &st, WNOHANG)) == 0 && th_now_ms() < deadline)
			usleep(2000);
		if (r == 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], &st, 0);
			px_rec(c, label, "timeout");
			bad = -ETIMEDOUT;
		} else if (WIFSIGNALED(st)) {
			px_rec(c, label, "signal %d", WTERMSIG(st));
			bad = -ECHILD;
		} else if (WEXITSTATUS(st) > 1) {
			px_rec(c, label, "status %d", WEXITSTATUS(st));
			bad = -ECHILD;
		}
	}
	/* each client's records, in client order */
	for (int i = 0; i < nr; i++) {
		char *log = m + hdr + (size_t)i * PX_CLIENT_LOG;
		char *save = NULL;
		for (char *line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char pre[16];
			int n = snprintf(pre, sizeof(pre), "c%d: ", i);
			px_emit(c, pre, (size_t)n);
			px_emit(c, line, strlen(line));
			px_emit(c, "\n", 1);
			if (strstr(line, "FAIL = ") == line)
				c->pc_fails++;
		}
	}
	c->pc_shared = m + hdr + (size_t)nr * PX_CLIENT_LOG;
	return bad;
}

