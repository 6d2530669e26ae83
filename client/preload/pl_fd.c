/*
 * client/preload/pl_fd.c - the descriptor table: Weir descriptors (reserved
 * kernel descriptors bound to struct pl_file), the descriptions shared by a
 * process tree (struct pl_sdesc in a memfd), internal descriptors, and what
 * fork, exec and exit do to them. See pl_int.h for the design and locks.
 */
#define _GNU_SOURCE
#include "pl_int.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/util.h"

static pthread_mutex_t pl_tab_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static struct pl_file *_Atomic pl_fdtab[PL_FD_MAX];
static struct pl_file *pl_files; /* every pl_file of this process */
static int pl_fdtop;		 /* highest Weir descriptor bound so far + 1 */

/* ------------------------------------------------------------ internal descriptors */

#define PL_INTERNAL_MAX 64
static atomic_int pl_internal[PL_INTERNAL_MAX]; /* fd + 1; 0 = free entry */

bool pl_internal_has(int fd)
{
	for (int i = 0; i < PL_INTERNAL_MAX; i++)
		if (atomic_load_explicit(&pl_internal[i], memory_order_relaxed) == fd + 1)
			return true;
	return false;
}

void pl_internal_add(int fd)
{
	for (int i = 0; i < PL_INTERNAL_MAX; i++) {
		int z = 0;
		if (atomic_compare_exchange_strong(&pl_internal[i], &z, fd + 1))
			return;
	}
	PL_LOG_ONCE("fd=%d: more than %d internal descriptors; not protected", fd, PL_INTERNAL_MAX);
}

void pl_internal_del(int fd)
{
	for (int i = 0; i < PL_INTERNAL_MAX; i++) {
		int v = fd + 1;
		if (atomic_compare_exchange_strong(&pl_internal[i], &v, 0))
			return;
	}
}

int pl_internal_list(int *fds, int max)
{
	int n = 0;

	for (int i = 0; i < PL_INTERNAL_MAX && n < max; i++) {
		int v = atomic_load(&pl_internal[i]);
		if (v)
			fds[n++] = v - 1;
	}
	return n;
}

int pl_fd_relocate(int fd)
{
	int nfd = PL_REAL(fcntl)(fd, F_DUPFD_CLOEXEC, pl_fd_base);

	if (nfd < 0) {
		pl_internal_add(fd);
		return fd;
	}
	PL_REAL(close)(fd);
	pl_internal_add(nfd);
	return nfd;
}

/* ------------------------------------------------------------ the shared table */

#define PL_SHM_MAGIC   0x4c45525049524557ULL /* "WEIRPREL" */
#define PL_SHM_VERSION 1

struct pl_shm_hdr {
	uint64_t sh_magic;
	uint32_t sh_version;
	uint32_t sh_nr;		 /* slots */
	uint32_t sh_sdesc_size;	 /* sizeof(struct pl_sdesc) */
	uint32_t sh_hint;	 /* where the next free-slot search starts */
	pthread_mutex_t sh_lock; /* slot allocation; process-shared, robust */
};

static struct pl_shm_hdr *pl_shm;
static struct pl_sdesc *pl_sds;
static int pl_shm_memfd = -1;

static size_t pl_shm_size(void)
{
	return sizeof(struct pl_shm_hdr) + (size_t)PL_SD_MAX * sizeof(struct pl_sdesc);
}

static void pl_robust_lock(pthread_mutex_t *m)
{
	if (pthread_mutex_lock(m) == EOWNERDEAD)
		pthread_mutex_consistent(m); /* its holder died mid-call; the state is ours now */
}

void pl_sd_lock(struct pl_sdesc *sd)
{
	pl_robust_lock(&sd->sd_lock);
}

void pl_sd_unlock(struct pl_sdesc *sd)
{
	pthread_mutex_unlock(&sd->sd_lock);
}

static void pl_pshared_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

/* Create the table (pl_tab_lock held): a memfd so exec'd children can map it too. */
static int pl_shm_create(void)
{
	size_t size = pl_shm_size();
	int fd = memfd_create("weir-preload-fds", MFD_CLOEXEC);
	void *p;

	if (fd >= 0) {
		fd = pl_fd_relocate(fd);
		if (PL_REAL(ftruncate)(fd, (off_t)size)) {
			pl_internal_del(fd);
			PL_REAL(close)(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		p = PL_REAL(mmap)(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	else /* no memfd: shared with forked children only */
		p = PL_REAL(mmap)(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				  -1, 0);
	if (p == MAP_FAILED) {
		int rc = -errno;
		if (fd >= 0) {
			pl_internal_del(fd);
			PL_REAL(close)(fd);
		}
		return rc;
	}
	pl_shm = p;
	pl_sds = (struct pl_sdesc *)(pl_shm + 1);
	pl_shm->sh_magic = PL_SHM_MAGIC;
	pl_shm->sh_version = PL_SHM_VERSION;
	pl_shm->sh_nr = PL_SD_MAX;
	pl_shm->sh_sdesc_size = sizeof(struct pl_sdesc);
	pl_pshared_init(&pl_shm->sh_lock);
	for (int i = 0; i < PL_SD_MAX; i++)
		pl_pshared_init(&pl_sds[i].sd_lock);
	pl_shm_memfd = fd;
	return 0;
}

int pl_shm_fd(void)
{
	return pl_shm_memfd;
}

int pl_shm_attach(int fd)
{
	size_t size = pl_shm_size();
	struct stat st;
	void *p;

	if (pl_shm)
		return -EALREADY;
	if (PL_REAL(fstat)(fd, &st) || (size_t)st.st_size != size)
		return -EINVAL;
	p = PL_REAL(mmap)(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	struct pl_shm_hdr *h = p;
	if (h->sh_magic != PL_SHM_MAGIC || h->sh_version != PL_SHM_VERSION ||
	    h->sh_nr != PL_SD_MAX || h->sh_sdesc_size != sizeof(struct pl_sdesc)) {
		PL_REAL(munmap)(p, size);
		return -EINVAL;
	}
	PL_REAL(fcntl)(fd, F_SETFD, FD_CLOEXEC);
	pl_internal_add(fd);
	pl_shm = h;
	pl_sds = (struct pl_sdesc *)(h + 1);
	pl_shm_memfd = fd;
	return 0;
}

/* A free slot with one reference, or -ENFILE. pl_tab_lock held. */
static int pl_sd_alloc(int flags, uint64_t pos, const weir_fid_t *fid)
{
	int rc;

	if (!pl_shm) {
		rc = pl_shm_create();
		if (rc)
			return rc;
	}
	pl_robust_lock(&pl_shm->sh_lock);
	for (uint32_t n = 0; n < PL_SD_MAX; n++) {
		uint32_t i = (pl_shm->sh_hint + n) % PL_SD_MAX;
		struct pl_sdesc *sd = &pl_sds[i];
		if (atomic_load(&sd->sd_refs) != 0)
			continue;
		sd->sd_flags = flags;
		sd->sd_pos = pos;
		sd->sd_fid = *fid;
		atomic_store(&sd->sd_refs, 1);
		pl_shm->sh_hint = (i + 1) % PL_SD_MAX;
		pthread_mutex_unlock(&pl_shm->sh_lock);
		return (int)i;
	}
	pthread_mutex_unlock(&pl_shm->sh_lock);
	PL_LOG_ONCE("more than %d Weir open files in this process tree: ENFILE", PL_SD_MAX);
	return -ENFILE;
}

void pl_sd_release_slot(int slot)
{
	if (pl_shm && slot >= 0 && slot < PL_SD_MAX)
		atomic_fetch_sub(&pl_sds[slot].sd_refs, 1);
}

/* ------------------------------------------------------------ pl_file */

void pl_tab_lock(void)
{
	pthread_mutex_lock(&pl_tab_mutex);
}

void pl_tab_unlock(void)
{
	pthread_mutex_unlock(&pl_tab_mutex);
}

struct pl_file *pl_files_first(void)
{
	return pl_files;
}

int pl_fd_high(void)
{
	return pl_fdtop;
}

struct pl_file *pl_fd_peek_locked(int fd)
{
	if (fd < 0 || fd >= PL_FD_MAX)
		return NULL;
	return atomic_load(&pl_fdtab[fd]);
}

int pl_file_fds(struct pl_file *f, int *fds, int max)
{
	int n = 0;

	for (int fd = 0; fd < pl_fdtop && n < max; fd++)
		if (atomic_load(&pl_fdtab[fd]) == f)
			fds[n++] = fd;
	return n;
}

bool pl_fd_is_weir(int fd)
{
	return fd >= 0 && fd < PL_FD_MAX &&
	       atomic_load_explicit(&pl_fdtab[fd], memory_order_acquire) != NULL;
}

struct pl_file *pl_fd_get(int fd)
{
	struct pl_file *f;

	if (!pl_fd_is_weir(fd))
		return NULL;
	pl_tab_lock();
	f = atomic_load(&pl_fdtab[fd]);
	if (f)
		f->pf_refs++;
	pl_tab_unlock();
	return f;
}

/* A new pl_file with one reference (not yet bound), on \a slot or a new slot. */
static struct pl_file *pl_file_new(enum pl_kind kind, const char *wpath, const weir_fid_t *fid,
				   int flags, uint64_t pos, int slot, int *rc)
{
	struct pl_file *f = calloc(1, sizeof(*f));

	if (!f || !(f->pf_path = strdup(wpath))) {
		free(f);
		*rc = -ENOMEM;
		return NULL;
	}
	if (slot < 0) {
		slot = pl_sd_alloc(flags, pos, fid);
		if (slot < 0) {
			*rc = slot;
			free(f->pf_path);
			free(f);
			return NULL;
		}
	}
	f->pf_refs = 1;
	f->pf_kind = kind;
	f->pf_slot = slot;
	f->pf_sd = &pl_sds[slot];
	f->pf_fid = *fid;
	pthread_rwlock_init(&f->pf_lock, NULL);
	f->pf_next = pl_files;
	if (pl_files)
		pl_files->pf_prev = f;
	pl_files = f;
	return f;
}

/* Close what \a f holds in this process (its handle, its directory stream). */
static void pl_file_drop_handles(struct pl_file *f, bool touch)
{
	if (touch) {
		if (f->pf_fh)
			PL_W(weir_close(f->pf_fh));
		if (f->pf_dh)
			PL_W(weir_closedir(f->pf_dh));
	}
	f->pf_fh = NULL;
	f->pf_fh_flags = 0;
	f->pf_dh = NULL;
	free(f->pf_dpend);
	f->pf_dpend = NULL;
}

void pl_file_put(struct pl_file *f)
{
	if (!f)
		return;
	pl_tab_lock();
	if (--f->pf_refs > 0) {
		pl_tab_unlock();
		return;
	}
	if (f->pf_prev)
		f->pf_prev->pf_next = f->pf_next;
	else
		pl_files = f->pf_next;
	if (f->pf_next)
		f->pf_next->pf_prev = f->pf_prev;
	pl_tab_unlock();
	if (!atomic_load(&pl_exiting)) {
		pl_file_drop_handles(f, true);
		pl_sd_release_slot(f->pf_slot);
	}
	pthread_rwlock_destroy(&f->pf_lock);
	free(f->pf_path);
	free(f);
}

/* Bind \a f (one reference, which the table takes) to a new reserved descriptor. */
static int pl_fd_bind_new(struct pl_file *f, int flags)
{
	int fd = PL_REAL(open)("/dev/null", O_PATH | (flags & O_CLOEXEC));

	if (fd < 0)
		return -errno;
	if (fd >= PL_FD_MAX) {
		PL_REAL(close)(fd);
		PL_LOG_ONCE("fd=%d: Weir descriptors must be below %d: EMFILE", fd, PL_FD_MAX);
		return -EMFILE;
	}
	pl_tab_lock();
	atomic_store(&pl_fdtab[fd], f);
	if (fd >= pl_fdtop)
		pl_fdtop = fd + 1;
	pl_tab_unlock();
	if (fd <= 2)
		pl_stdio_after(fd);
	return fd;
}

int pl_fd_install(enum pl_kind kind, const char *wpath, const weir_fid_t *fid, int flags,
		  weir_file_t *fh)
{
	int acc = flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY | O_CLOEXEC);
	struct pl_file *f;
	int rc = 0;

	pl_tab_lock();
	f = pl_file_new(kind, wpath, fid, acc, 0, -1, &rc);
	if (f) {
		f->pf_fh = fh;
		f->pf_fh_flags = fh ? acc : 0;
	}
	pl_tab_unlock();
	if (!f) {
		if (fh)
			PL_W(weir_close(fh));
		return rc;
	}
	rc = pl_fd_bind_new(f, flags);
	if (rc < 0)
		pl_file_put(f);
	return rc;
}

int pl_fd_adopt(int fd, enum pl_kind kind, const char *wpath, const weir_fid_t *fid, int flags,
		uint64_t pos, int slot)
{
	struct pl_file *f;
	int rc = 0;

	if (fd < 0 || fd >= PL_FD_MAX)
		return -EBADF;
	pl_tab_lock();
	for (f = pl_files; f; f = f->pf_next)
		if (slot >= 0 && f->pf_slot == slot)
			break;
	if (f) {
		f->pf_refs++; /* a second descriptor of the same description */
	} else {
		if (!pl_shm || slot < 0 || slot >= PL_SD_MAX ||
		    atomic_load(&pl_sds[slot].sd_refs) <= 0 ||
		    memcmp(&pl_sds[slot].sd_fid, fid, sizeof(*fid)))
			slot = -1; /* no shared table: a description of our own */
		f = pl_file_new(kind, wpath, fid, flags, pos, slot, &rc);
	}
	if (f) {
		atomic_store(&pl_fdtab[fd], f);
		if (fd >= pl_fdtop)
			pl_fdtop = fd + 1;
	}
	pl_tab_unlock();
	return rc;
}

int pl_fd_close(int fd)
{
	struct pl_file *f;
	int rc;

	if (fd < 0)
		return PL_REAL(close)(fd) ? -errno : 0;
	if (pl_internal_has(fd)) {
		if (pl_depth == 0) {
			PL_LOG_ONCE("fd=%d: close of a descriptor the shim uses: EBADF", fd);
			return -EBADF;
		}
		pl_internal_del(fd);
	}
	pl_tab_lock();
	f = fd < PL_FD_MAX ? atomic_exchange(&pl_fdtab[fd], NULL) : NULL;
	rc = PL_REAL(close)(fd) ? -errno : 0;
	pl_tab_unlock();
	if (f) {
		pl_file_put(f);
		if (fd <= 2)
			pl_stdio_after(fd);
		rc = 0; /* the reserved descriptor is ours to close: it was open */
	}
	return rc;
}

int pl_fd_dup(int oldfd, int newfd, int how, int flags)
{
	struct pl_file *f, *prev = NULL;
	int rc;

	if (pl_internal_has(oldfd))
		return -EBADF;
	if ((how == 1 || how == 2) && pl_internal_has(newfd)) {
		PL_LOG_ONCE("fd=%d: dup2 onto a descriptor the shim uses: EBUSY", newfd);
		return -EBUSY;
	}
	if ((how == 1 || how == 2) && newfd >= 0 && newfd <= 2 && newfd != oldfd)
		pl_stdio_before(newfd);
	pl_tab_lock();
	f = oldfd >= 0 && oldfd < PL_FD_MAX ? atomic_load(&pl_fdtab[oldfd]) : NULL;
	switch (how) {
	case 0:
		rc = PL_REAL(dup)(oldfd);
		break;
	case 1:
		rc = PL_REAL(dup2)(oldfd, newfd);
		break;
	case 2:
		rc = PL_REAL(dup3)(oldfd, newfd, flags);
		break;
	case 3:
		rc = PL_REAL(fcntl)(oldfd, F_DUPFD, newfd);
		break;
	default:
		rc = PL_REAL(fcntl)(oldfd, F_DUPFD_CLOEXEC, newfd);
		break;
	}
	if (rc < 0) {
		rc = -errno;
	} else if (rc != oldfd) {
		if (rc >= PL_FD_MAX) {
			if (f) {
				PL_REAL(close)(rc);
				rc = -EMFILE;
			}
		} else {
			prev = atomic_exchange(&pl_fdtab[rc], f);
			if (f) {
				f->pf_refs++;
				if (rc >= pl_fdtop)
					pl_fdtop = rc + 1;
			}
		}
	}
	pl_tab_unlock();
	pl_file_put(prev);
	if (rc >= 0 && rc <= 2 && rc != oldfd)
		pl_stdio_after(rc);
	return rc;
}

int pl_file_flags(struct pl_file *f)
{
	return __atomic_load_n(&f->pf_sd->sd_flags, __ATOMIC_RELAXED);
}

void pl_file_setfl(struct pl_file *f, int flags)
{
	const int changeable = O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME | O_ASYNC;

	pl_sd_lock(f->pf_sd);
	f->pf_sd->sd_flags = (f->pf_sd->sd_flags & ~changeable) | (flags & changeable);
	pl_sd_unlock(f->pf_sd);
}

/* The flags a handle for \a f must have been opened with. */
static int pl_file_want_flags(struct pl_file *f)
{
	if (f->pf_kind == PL_K_DIR)
		return O_RDONLY | O_DIRECTORY;
	return pl_file_flags(f) & (O_ACCMODE | O_APPEND);
}

int pl_file_handle(struct pl_file *f, weir_file_t **out)
{
	weir_fs_t *fs;
	int rc;

	if (f->pf_kind == PL_K_PATH)
		return -EBADF;
	if (atomic_load(&pl_exiting))
		return -EIO;
	for (;;) {
		int want = pl_file_want_flags(f);
		pthread_rwlock_rdlock(&f->pf_lock);
		if (f->pf_fh && f->pf_fh_flags == want) {
			*out = f->pf_fh;
			return 0;
		}
		pthread_rwlock_unlock(&f->pf_lock);

		rc = pl_fs_get(&fs);
		if (rc)
			return rc;
		pthread_rwlock_wrlock(&f->pf_lock);
		if (!f->pf_fh || f->pf_fh_flags != want) {
			weir_file_t *fh = NULL;
			if (f->pf_fh)
				PL_W(weir_close(f->pf_fh));
			f->pf_fh = NULL;
			rc = PL_W(weir_fid_open(fs, &f->pf_fid, want, &fh));
			if (rc) {
				pthread_rwlock_unlock(&f->pf_lock);
				PL_LOG_DEBUG(
				    "path=%s fid=[%#llx:%#llx] rc=%d: re-open by FID failed",
				    f->pf_path, (unsigned long long)f->pf_fid.seq,
				    (unsigned long long)f->pf_fid.oid, rc);
				return rc == -ENOENT ? -ESTALE : rc;
			}
			f->pf_fh = fh;
			f->pf_fh_flags = want;
		}
		pthread_rwlock_unlock(&f->pf_lock);
	}
}

void pl_file_unhandle(struct pl_file *f)
{
	pthread_rwlock_unlock(&f->pf_lock);
}

int pl_file_stat(struct pl_file *f, struct stat *st)
{
	weir_fs_t *fs;
	int rc = pl_fs_get(&fs);

	if (rc)
		return rc;
	rc = PL_W(weir_fid_getattr(fs, &f->pf_fid, st));
	return rc == -ENOENT ? -ESTALE : rc;
}

/* ------------------------------------------------------------ fork, exec, exit */

static __thread int *pl_fork_slots;
static __thread int pl_fork_nr;

void pl_fork_prepare(void)
{
	int n = 0;

	pl_tab_lock(); /* held across fork: no descriptor changes meanwhile */
	for (struct pl_file *f = pl_files; f; f = f->pf_next)
		n++;
	free(pl_fork_slots);
	pl_fork_slots = n ? calloc((size_t)n, sizeof(int)) : NULL;
	pl_fork_nr = 0;
	for (struct pl_file *f = pl_files; f; f = f->pf_next) {
		atomic_fetch_add(&f->pf_sd->sd_refs, 1); /* the child's reference */
		if (pl_fork_slots)
			pl_fork_slots[pl_fork_nr++] = f->pf_slot;
	}
}

void pl_fork_parent(void)
{
	pl_tab_unlock();
}

void pl_fork_failed(void)
{
	for (int i = 0; i < pl_fork_nr; i++)
		pl_sd_release_slot(pl_fork_slots[i]);
	pl_fork_nr = 0;
}

void pl_fork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

	free(pl_fork_slots);
	pl_fork_slots = NULL;
	pl_fork_nr = 0;
	pl_tab_mutex = fresh;
	for (struct pl_file *f = pl_files; f; f = f->pf_next) {
		/* the parent's handles belong to its mount; re-open here on demand */
		pl_file_drop_handles(f, false);
		pthread_rwlock_init(&f->pf_lock, NULL);
	}
	pl_fs_forget();
	/* The parent's connections: close our copies so its sockets see only it. */
	for (int i = 0; i < PL_INTERNAL_MAX; i++) {
		int fd = atomic_load(&pl_internal[i]) - 1;
		struct stat st;
		if (fd >= 0 && fd != pl_shm_memfd && !PL_REAL(fstat)(fd, &st) &&
		    S_ISSOCK(st.st_mode)) {
			atomic_store(&pl_internal[i], 0);
			PL_REAL(close)(fd);
		}
	}
}

void pl_files_close_handles(void)
{
	pl_tab_lock();
	for (struct pl_file *f = pl_files; f; f = f->pf_next) {
		pthread_rwlock_wrlock(&f->pf_lock);
		pl_file_drop_handles(f, true);
		f->pf_dir_cookie = 0;
		pthread_rwlock_unlock(&f->pf_lock);
	}
	pl_tab_unlock();
}

void pl_files_exit(void)
{
	pl_tab_lock();
	for (struct pl_file *f = pl_files; f; f = f->pf_next) {
		pthread_rwlock_wrlock(&f->pf_lock);
		pl_file_drop_handles(f, true);
		pthread_rwlock_unlock(&f->pf_lock);
		pl_sd_release_slot(f->pf_slot);
	}
	pl_tab_unlock();
}
