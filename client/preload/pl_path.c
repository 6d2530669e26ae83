/*
 * client/preload/pl_path.c - which paths are Weir's, the working directory
 * inside Weir, and the calls that name it: chdir, fchdir, getcwd, getwd,
 * get_current_dir_name, realpath, canonicalize_file_name.
 *
 * A path is Weir's when, made absolute and folded ("//", ".", ".."
 * lexically, as most interception libraries do), it is the prefix or lies
 * below it. A relative path is made absolute from, in order: a Weir
 * directory descriptor, the Weir working directory, or the kernel's working
 * directory (cached; refreshed after every chdir/fchdir the shim sees). A
 * symlink in the local part of a path that points into the prefix is not
 * followed into Weir (the kernel would find nothing there).
 */
#define _GNU_SOURCE
#include "pl_int.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *__getcwd_chk(char *buf, size_t size, size_t buflen);
char *__realpath_chk(const char *path, char *resolved, size_t resolvedlen);

static pthread_rwlock_t pl_cwd_lock = PTHREAD_RWLOCK_INITIALIZER;
static char pl_wcwd[PL_PATH_MAX]; /* the Weir working directory, "" when local */
static char pl_kcwd[PL_PATH_MAX]; /* cached kernel working directory, "" when unknown */

/* Is folded absolute path \a p (\a n bytes) the prefix or below it? */
static bool pl_is_under(const char *p, size_t n)
{
	size_t pl = pl_conf.pc_prefix_len;

	return n >= pl && !memcmp(p, pl_conf.pc_prefix, pl) && (n == pl || p[pl] == '/');
}

/*
 * Fold absolute path \a in into \a out (PL_PATH_MAX bytes): no "//", "."
 * or "..", no trailing '/'. ".." of "/" is "/". \a touched (may be NULL)
 * tells whether the walk passed through the prefix on the way (so that the
 * kernel, which has no such directory, cannot be given the unfolded path).
 * \return 0 or -ENAMETOOLONG.
 */
static int pl_fold(const char *in, char *out, bool *touched)
{
	size_t n = 0;
	const char *p = in;

	if (touched)
		*touched = false;
	out[0] = '/';
	n = 1;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *e = strchrnul(p, '/');
		size_t len = (size_t)(e - p);
		if (len == 1 && p[0] == '.') {
			/* nothing */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 1 && out[n - 1] != '/')
				n--;
			if (n > 1)
				n--; /* the '/' before the dropped name */
		} else {
			if (n + (n > 1) + len >= PL_PATH_MAX)
				return -ENAMETOOLONG;
			if (n > 1)
				out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
			if (touched && !*touched && pl_is_under(out, n))
				*touched = true;
		}
		p = e;
	}
	out[n] = '\0';
	return 0;
}

/* \a abs (folded) under the prefix? Then write its Weir path. */
static bool pl_under_prefix(const char *abs, char *wpath)
{
	size_t pl = pl_conf.pc_prefix_len;

	if (strncmp(abs, pl_conf.pc_prefix, pl) || (abs[pl] != '\0' && abs[pl] != '/'))
		return false;
	if (wpath != abs)
		memmove(wpath, abs[pl] ? abs + pl : "/", strlen(abs[pl] ? abs + pl : "/") + 1);
	else if (abs[pl])
		memmove(wpath, abs + pl, strlen(abs + pl) + 1);
	else
		strcpy(wpath, "/");
	return true;
}

/* Join \a base (absolute) and relative \a rel into \a tmp. */
static int pl_join(const char *base, const char *rel, char *tmp)
{
	size_t bl = strlen(base), rl = strlen(rel);

	if (bl + 1 + rl >= 2 * PL_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(tmp, base, bl);
	tmp[bl] = '/';
	memcpy(tmp + bl + 1, rel, rl + 1);
	return 0;
}

int pl_path_visible(const char *wpath, char *out, size_t len)
{
	int n = snprintf(out, len, "%s%s", pl_conf.pc_prefix, strcmp(wpath, "/") ? wpath : "");

	return n < 0 || (size_t)n >= len ? -ERANGE : 0;
}

/*
 * The part of \a abs after the prefix, as written, when \a abs starts with
 * the prefix and never climbs above it (".." stays inside): Weir resolves
 * ".", "..", trailing slashes and symlinks on the way itself, with POSIX's
 * rules ("f/." of a file is ENOTDIR, "d/." cannot be removed, "l/" follows
 * the symlink l). \return the remainder, or NULL (use the folded path).
 */
static const char *pl_raw_rest(const char *abs)
{
	size_t pl = pl_conf.pc_prefix_len;
	int depth = 0;

	if (strncmp(abs, pl_conf.pc_prefix, pl) || (abs[pl] != '/' && abs[pl] != '\0'))
		return NULL;
	for (const char *p = abs + pl; *p;) {
		while (*p == '/')
			p++;
		size_t len = strcspn(p, "/");
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (--depth < 0)
				return NULL; /* above the prefix: the kernel's ".." of /weir */
		} else if (len && !(len == 1 && p[0] == '.')) {
			depth++;
		}
		p += len;
	}
	return abs[pl] ? abs + pl : "/";
}

/*
 * Classify absolute (unfolded) \a abs: PL_WEIR with the Weir path in
 * \a out (as written when possible, see pl_raw_rest(), else folded);
 * PL_LOCAL_ABS with the folded path in \a out when the walk went through
 * the prefix (the kernel, which has no such directory, must get the folded
 * path); else PL_LOCAL (the caller's own path is right).
 */
static int pl_classify(const char *abs, char *out)
{
	bool touched;
	int rc = pl_fold(abs, out, &touched);

	if (rc)
		return rc;
	if (pl_under_prefix(out, out)) {
		const char *raw = pl_raw_rest(abs);
		if (raw && strlen(raw) < PL_PATH_MAX)
			strcpy(out, raw);
		return PL_WEIR;
	}
	return touched ? PL_LOCAL_ABS : PL_LOCAL;
}

/* As pl_classify() for a path built from a Weir base: never the caller's own path. */
static int pl_classify_abs(const char *abs, char *out)
{
	int rc = pl_classify(abs, out);

	return rc == PL_LOCAL ? PL_LOCAL_ABS : rc;
}

/*
 * Could relative \a path lead into the prefix from some local directory?
 * Only when it climbs ("..") or starts with one of the prefix's names (from
 * "/", "weir/x" reaches "/weir"). A cheap filter before a readlink.
 */
static bool pl_may_reach_prefix(const char *path)
{
	const char *pre = pl_conf.pc_prefix;
	size_t first = strcspn(path, "/");

	if (strstr(path, ".."))
		return true;
	for (const char *c = pre + 1; *c;) {
		size_t len = strcspn(c, "/");
		if (len == first && !strncmp(c, path, len))
			return true;
		c += len;
		if (*c == '/')
			c++;
	}
	return false;
}

void pl_kcwd_forget(void)
{
	pthread_rwlock_wrlock(&pl_cwd_lock);
	pl_kcwd[0] = '\0';
	pthread_rwlock_unlock(&pl_cwd_lock);
}

/* The kernel's working directory into \a out. \return 0 or -errno. */
static int pl_kcwd_get(char *out)
{
	pthread_rwlock_rdlock(&pl_cwd_lock);
	if (pl_kcwd[0]) {
		strcpy(out, pl_kcwd);
		pthread_rwlock_unlock(&pl_cwd_lock);
		return 0;
	}
	pthread_rwlock_unlock(&pl_cwd_lock);
	if (!PL_REAL(getcwd)(out, PL_PATH_MAX))
		return -errno;
	pthread_rwlock_wrlock(&pl_cwd_lock);
	strcpy(pl_kcwd, out);
	pthread_rwlock_unlock(&pl_cwd_lock);
	return 0;
}

bool pl_cwd_get(char *out)
{
	bool weir;

	pthread_rwlock_rdlock(&pl_cwd_lock);
	weir = pl_wcwd[0] != '\0';
	if (weir && out)
		strcpy(out, pl_wcwd);
	pthread_rwlock_unlock(&pl_cwd_lock);
	return weir;
}

void pl_cwd_set(const char *wpath)
{
	pthread_rwlock_wrlock(&pl_cwd_lock);
	if (wpath)
		snprintf(pl_wcwd, sizeof(pl_wcwd), "%s", wpath);
	else
		pl_wcwd[0] = '\0';
	pthread_rwlock_unlock(&pl_cwd_lock);
}

int pl_resolve(int dirfd, const char *path, bool empty_ok, char *out)
{
	char tmp[2 * PL_PATH_MAX];
	char base[PL_PATH_MAX];
	int rc;

	if (!path)
		return PL_LOCAL; /* libc reports EFAULT */
	if (path[0] == '/') {
		/* fast path: most absolute paths are nowhere near the prefix */
		if (!strstr(path, pl_conf.pc_prefix + 1) && !strstr(path, ".."))
			return PL_LOCAL;
		return pl_classify(path, out);
	}
	if (dirfd != AT_FDCWD && pl_fd_is_weir(dirfd)) {
		struct pl_file *f = pl_fd_get(dirfd);
		if (!f)
			return PL_LOCAL;
		if (f->pf_kind == PL_K_FILE && path[0]) {
			struct stat st;
			rc = pl_file_stat(f, &st);
			if (!rc && !S_ISDIR(st.st_mode))
				rc = -ENOTDIR;
			if (rc) {
				pl_file_put(f);
				return rc;
			}
		}
		rc = pl_path_visible(f->pf_path, base, sizeof(base));
		pl_file_put(f);
		if (rc)
			return -ENAMETOOLONG;
		if (!path[0])
			return empty_ok ? pl_classify_abs(base, out) : -ENOENT;
		rc = pl_join(base, path, tmp);
		return rc ? rc : pl_classify_abs(tmp, out);
	}
	if (dirfd != AT_FDCWD) {
		/* relative to a local directory: it may be an ancestor of the prefix */
		if (!pl_may_reach_prefix(path))
			return PL_LOCAL;
		char link[64];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
		ssize_t n = PL_REAL(readlink)(link, base, sizeof(base) - 1);
		if (n <= 0 || base[0] != '/')
			return PL_LOCAL;
		base[n] = '\0';
		if (pl_join(base, path, tmp))
			return PL_LOCAL;
		rc = pl_classify(tmp, out);
		return rc < 0 ? PL_LOCAL : rc;
	}
	if (pl_cwd_get(base)) {
		char vis[PL_PATH_MAX];
		if (pl_path_visible(base, vis, sizeof(vis)))
			return -ENAMETOOLONG;
		if (!path[0])
			return empty_ok ? pl_classify_abs(vis, out) : -ENOENT;
		rc = pl_join(vis, path, tmp);
		return rc ? rc : pl_classify_abs(tmp, out);
	}
	if (!path[0])
		return PL_LOCAL;
	/* Local working directory: a relative path may still climb into the prefix. */
	if (pl_kcwd_get(base))
		return PL_LOCAL;
	if (pl_join(base, path, tmp))
		return PL_LOCAL;
	rc = pl_classify(tmp, out);
	return rc < 0 ? PL_LOCAL : rc;
}

struct pl_file *pl_at_dir(int dirfd, const char *path, char *wpath)
{
	char vis[PL_PATH_MAX], tmp[2 * PL_PATH_MAX];
	struct pl_file *f;

	if (dirfd == AT_FDCWD || !path || !path[0] || path[0] == '/' || !pl_active() ||
	    !pl_fd_is_weir(dirfd))
		return NULL;
	f = pl_fd_get(dirfd);
	if (!f)
		return NULL;
	/* a handle is needed (not O_PATH), and the path must stay inside Weir */
	if (f->pf_kind == PL_K_PATH || pl_path_visible(f->pf_path, vis, sizeof(vis)) ||
	    pl_join(vis, path, tmp) || !pl_raw_rest(tmp) ||
	    strlen(pl_raw_rest(tmp)) >= PL_PATH_MAX) {
		pl_file_put(f);
		return NULL;
	}
	strcpy(wpath, pl_raw_rest(tmp));
	return f;
}

int pl_resolve_path(const char *path, char *wpath)
{
	return pl_resolve(AT_FDCWD, path, false, wpath);
}

const char *pl_path_split(const char *wpath, char *parent)
{
	const char *slash = strrchr(wpath, '/');
	size_t n = (size_t)(slash - wpath);

	if (n == 0) {
		strcpy(parent, "/");
	} else {
		memcpy(parent, wpath, n);
		parent[n] = '\0';
	}
	return slash + 1;
}

/* ------------------------------------------------------------ interposers */

int pl_weir_escape(const char *wpath, char *local)
{
	return pl_realpath_weir(wpath, local) == -EXDEV;
}

/* The working directory becomes \a wpath, made canonical as the kernel's is. */
static int pl_chdir_weir(const char *wpath)
{
	char vis[PL_PATH_MAX];
	struct stat st;
	int rc = pl_realpath_weir(wpath, vis);

	if (rc == -EXDEV) {
		/* a symlink to a local directory: the kernel's working directory moves */
		if (PL_REAL(chdir)(vis))
			return -errno;
		pl_cwd_set(NULL);
		pl_kcwd_forget();
		return 0;
	}
	if (rc)
		return rc;
	const char *canon = vis[pl_conf.pc_prefix_len] ? vis + pl_conf.pc_prefix_len : "/";
	rc = pl_stat_weir(canon, false, &st);
	if (!rc && !S_ISDIR(st.st_mode))
		rc = -ENOTDIR;
	if (!rc)
		rc = pl_access_weir(canon, X_OK, false);
	if (!rc)
		pl_cwd_set(canon);
	return rc;
}

PL_EXPORT int chdir(const char *path)
{
	char wpath[PL_PATH_MAX];
	int saved = errno;
	int w, rc;

	if (!pl_active())
		return PL_REAL(chdir)(path);
	w = pl_resolve_path(path, wpath);
	if (w == PL_WEIR)
		return pl_ret(pl_chdir_weir(wpath), saved);
	if (w < 0)
		return pl_ret(w, saved);
	rc = PL_REAL(chdir)(w == PL_LOCAL_ABS ? wpath : path);
	if (rc == 0) {
		pl_cwd_set(NULL);
		pl_kcwd_forget();
	}
	return rc;
}

PL_EXPORT int fchdir(int fd)
{
	int saved = errno;
	struct pl_file *f;
	int rc;

	if (!pl_active() || !(f = pl_fd_get(fd))) {
		rc = PL_REAL(fchdir)(fd);
		if (rc == 0 && pl_depth == 0) {
			pl_cwd_set(NULL);
			pl_kcwd_forget();
		}
		return rc;
	}
	struct stat st;
	rc = pl_file_stat(f, &st);
	if (!rc && !S_ISDIR(st.st_mode))
		rc = -ENOTDIR;
	if (!rc)
		rc = pl_chdir_weir(f->pf_path);
	pl_file_put(f);
	return pl_ret(rc, saved);
}

/* The Weir working directory as the application sees it, into buf (or malloc'd). */
static char *pl_getcwd_weir(char *buf, size_t size, const char *wcwd)
{
	char vis[PL_PATH_MAX];
	size_t need;

	if (pl_path_visible(wcwd, vis, sizeof(vis))) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	need = strlen(vis) + 1;
	if (!buf) {
		buf = malloc(size > need ? size : need);
		if (!buf) {
			errno = ENOMEM;
			return NULL;
		}
		size = size > need ? size : need;
	}
	if (size < need) {
		errno = size ? ERANGE : EINVAL;
		return NULL;
	}
	memcpy(buf, vis, need);
	return buf;
}

PL_EXPORT char *getcwd(char *buf, size_t size)
{
	char wcwd[PL_PATH_MAX];

	if (!pl_active() || !pl_cwd_get(wcwd))
		return PL_REAL(getcwd)(buf, size);
	return pl_getcwd_weir(buf, size, wcwd);
}

PL_EXPORT char *__getcwd_chk(char *buf, size_t size, size_t buflen)
{
	if (size > buflen)
		__chk_fail();
	return getcwd(buf, size);
}

PL_EXPORT char *getwd(char *buf)
{
	char wcwd[PL_PATH_MAX];

	if (!pl_active() || !pl_cwd_get(wcwd))
		return PL_REAL(getcwd)(buf, PATH_MAX);
	return pl_getcwd_weir(buf, PATH_MAX, wcwd);
}

PL_EXPORT char *get_current_dir_name(void)
{
	char wcwd[PL_PATH_MAX];

	if (!pl_active() || !pl_cwd_get(wcwd))
		return PL_REAL(get_current_dir_name)();
	return pl_getcwd_weir(NULL, 0, wcwd);
}

/*
 * realpath of a Weir path into \a out (the application's path): every
 * component must exist; symlinks are followed (relative to their directory;
 * absolute targets as the application names them), up to 40 of them.
 * \return 0, -errno, or -EXDEV when a symlink leads out of Weir: then \a out
 * is the local path that remains to be resolved.
 */
int pl_realpath_weir(const char *wpath, char *out)
{
	char cur[PL_PATH_MAX], next[PL_PATH_MAX], link[PL_PATH_MAX];
	char todo[2 * PL_PATH_MAX], tmp[3 * PL_PATH_MAX];
	int hops = 0;

	if (snprintf(todo, sizeof(todo), "%s", wpath) >= (int)sizeof(todo))
		return -ENAMETOOLONG;
	strcpy(cur, "/");
	for (;;) {
		char *p = todo, name[NAME_MAX + 1];
		while (*p == '/')
			p++;
		if (!*p)
			break;
		char *e = strchrnul(p, '/');
		size_t len = (size_t)(e - p);
		if (len > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, p, len);
		name[len] = '\0';
		memmove(todo, e, strlen(e) + 1); /* todo: "" or "/rest" */
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			char *s = strrchr(cur, '/');
			if (s == cur)
				cur[1] = '\0';
			else
				*s = '\0';
			continue;
		}
		if (snprintf(next, sizeof(next), "%s%s%s", cur, cur[1] ? "/" : "", name) >=
		    (int)sizeof(next))
			return -ENAMETOOLONG;
		struct stat st;
		int rc = pl_stat_weir(next, true, &st);
		if (rc)
			return rc;
		if (!S_ISLNK(st.st_mode)) {
			if (todo[0] && !S_ISDIR(st.st_mode))
				return -ENOTDIR;
			strcpy(cur, next);
			continue;
		}
		if (++hops > 40)
			return -ELOOP;
		ssize_t n = pl_readlink_weir(next, link, sizeof(link) - 1);
		if (n < 0)
			return (int)n;
		link[n] = '\0';
		if (link[0] == '/') {
			/* an absolute target names the application's namespace */
			char folded[PL_PATH_MAX];
			if (pl_fold(link, folded, NULL))
				return -ENAMETOOLONG;
			if (!pl_under_prefix(folded, folded)) {
				/* it leads out of Weir: \a out gets the local path to go on with */
				if (snprintf(out, PL_PATH_MAX, "%s%s", link, todo) >= PL_PATH_MAX)
					return -ENAMETOOLONG;
				return -EXDEV;
			}
			strcpy(cur, "/");
			snprintf(tmp, sizeof(tmp), "%s%s", folded, todo);
		} else {
			snprintf(tmp, sizeof(tmp), "%s%s", link, todo);
		}
		if (strlen(tmp) >= sizeof(todo))
			return -ENAMETOOLONG;
		strcpy(todo, tmp);
	}
	return pl_path_visible(cur, out, PL_PATH_MAX) ? -ENAMETOOLONG : 0;
}

PL_EXPORT char *realpath(const char *path, char *resolved)
{
	char wpath[PL_PATH_MAX], vis[PL_PATH_MAX];
	int saved = errno;
	int w, rc;

	if (!pl_active())
		return PL_REAL(realpath)(path, resolved);
	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	w = pl_resolve_path(path, wpath);
	if (w == PL_LOCAL)
		return PL_REAL(realpath)(path, resolved);
	if (w == PL_LOCAL_ABS)
		return PL_REAL(realpath)(wpath, resolved);
	if (w < 0) {
		errno = -w;
		return NULL;
	}
	rc = pl_realpath_weir(wpath, vis);
	if (rc == -EXDEV) /* a symlink leads out of Weir: the kernel resolves the rest */
		return PL_REAL(realpath)(vis, resolved);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	if (strlen(vis) >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (!resolved) {
		resolved = strdup(vis);
		if (!resolved)
			errno = ENOMEM;
		else
			errno = saved;
		return resolved;
	}
	strcpy(resolved, vis);
	errno = saved;
	return resolved;
}

PL_EXPORT char *__realpath_chk(const char *path, char *resolved, size_t resolvedlen)
{
	if (resolved && resolvedlen < PATH_MAX)
		__chk_fail();
	return realpath(path, resolved);
}

PL_EXPORT char *canonicalize_file_name(const char *path)
{
	return realpath(path, NULL);
}
