/*
 * client/preload/pl_int.h - internals of libweir-preload.so, the LD_PRELOAD
 * shim that runs unmodified programs on Weir.
 *
 * DESIGN.
 *  - Interposition: every intercepted libc name (client/preload/symbols.txt,
 *    the only names the .so exports) is defined here with default
 *    visibility; the real libc function is found with dlsym(RTLD_NEXT) on
 *    first use (PL_REAL). A call is Weir's when its path lies under the
 *    prefix WEIR_MOUNT (or resolves there relative to a Weir working
 *    directory or directory descriptor), or when its descriptor is one the
 *    shim handed out; everything else goes straight to libc.
 *  - Recursion: pl_depth (thread-local) counts how deep the thread is in the
 *    shim's own calls into libweir; libweir's threads run with it set (the
 *    pthread_create wrapper). With pl_depth > 0 every interposer passes
 *    straight to libc, so libweir's sockets, log writes and threads never
 *    re-enter the shim. Descriptors libweir creates then are moved above
 *    pl_fd_base and recorded as internal (the application cannot close or
 *    dup2 over them).
 *  - Descriptors: a Weir file the application opens gets a real kernel
 *    descriptor, an O_PATH descriptor of /dev/null, so numbers never collide,
 *    dup/dup2/fcntl(F_DUPFD) and close-on-exec are the kernel's, and a
 *    program that bypasses the shim gets EBADF rather than another file.
 *    pl_fdtab maps the number to a struct pl_file (the open file
 *    description in this process: its libweir handle, path, FID), which
 *    points to a struct pl_sdesc in memory shared by every process of the
 *    tree (the offset and status flags, so a forked or exec'd child and its
 *    parent share one offset, as the kernel's descriptions do).
 *  - fork: the child drops the parent's mount (its threads do not exist
 *    there), mounts again at its first Weir call and re-opens each file by
 *    FID (weir_fid_open). exec: the exec wrappers pass the descriptors that
 *    survive, the shared table and a Weir working directory to the new
 *    image in WEIR_PRELOAD_STATE (pl_proc.c).
 *
 * Locks (order: pl_map_lock -> pl_tab_lock -> pf_lock; sd_lock -> pf_lock;
 * pl_std_lock -> pl_tab_lock; the mount and cwd locks are taken alone):
 *   pl_tab_lock  (recursive) the fd table, the list of pl_files, pf_refs;
 *   pf_lock      (rwlock) pf_fh and pf_dh of one pl_file: held for reading
 *                while a handle is used, for writing to open or swap it;
 *   sd_lock      (process-shared, robust) the offset and flags of one
 *                description, held across a read or write at the offset;
 *   pl_map_lock  the list of mappings (pl_mmap.c);
 *   pl_std_lock  (recursive) the standard streams and the shim's streams;
 *   pl_mount_lock  the mounts (pl_boot.c).
 */
#ifndef WEIR_PRELOAD_PL_INT_H
#define WEIR_PRELOAD_PL_INT_H

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <weir/weir.h>

#include "common/log.h"

/** An intercepted libc name: exported from the .so (everything else is hidden). */
#define PL_EXPORT __attribute__((visibility("default")))

/** Longest Weir path (bytes with the NUL). */
#define PL_PATH_MAX 4096
/** Descriptors above this number are never Weir's (the table's size). */
#define PL_FD_MAX 65536
/** Shared descriptions per process tree. */
#define PL_SD_MAX 4096
/** Environment variable carrying the state across exec. */
#define PL_STATE_ENV "WEIR_PRELOAD_STATE"
/** f_type reported by statfs() for Weir ("WEIR"). */
#define PL_STATFS_MAGIC 0x57454952
/** st_dev of Weir files (libweir's WC_ST_DEV). */
#define PL_ST_DEV 0x57e1

/* ------------------------------------------------------------ recursion, real functions */

/** > 0 while this thread is inside the shim's calls into libweir (or is a libweir thread). */
extern __thread int pl_depth __attribute__((tls_model("initial-exec")));

/** glibc's "buffer overflow detected" abort, for the _chk variants. */
extern void __chk_fail(void) __attribute__((noreturn));

/** dlsym(RTLD_NEXT, name); logs (once) when missing. */
void *pl_dlsym(const char *name);

/** The next definition of libc function \a fn (resolved on first use, then cached). */
#define PL_REAL(fn)                                                                                \
	({                                                                                         \
		static __typeof__(fn) *pl_real_;                                                   \
		__typeof__(fn) *pl_r_ = __atomic_load_n(&pl_real_, __ATOMIC_ACQUIRE);              \
		if (!pl_r_) {                                                                      \
			pl_r_ = (__typeof__(fn) *)pl_dlsym(#fn);                                   \
			__atomic_store_n(&pl_real_, pl_r_, __ATOMIC_RELEASE);                      \
		}                                                                                  \
		pl_r_;                                                                             \
	})

/** Evaluate a libweir call with pl_depth raised (so libc calls inside it pass through). */
#define PL_W(call)                                                                                 \
	({                                                                                         \
		pl_depth++;                                                                        \
		__typeof__(call) pl_w_ = (call);                                                   \
		pl_depth--;                                                                        \
		pl_w_;                                                                             \
	})

/** PL_W for a libweir call returning nothing. */
#define PL_WV(call)                                                                                \
	do {                                                                                       \
		pl_depth++;                                                                        \
		call;                                                                              \
		pl_depth--;                                                                        \
	} while (0)

/** 0 / count, or -1 with errno = -rc. On success errno is restored to \a saved. */
static inline int pl_ret(int rc, int saved)
{
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	errno = saved;
	return rc;
}

static inline ssize_t pl_ret_ssize(ssize_t rc, int saved)
{
	if (rc < 0) {
		errno = (int)-rc;
		return -1;
	}
	errno = saved;
	return rc;
}

/* ------------------------------------------------------------ pl_boot.c */

struct pl_conf {
	char pc_prefix[PL_PATH_MAX]; /* WEIR_MOUNT without a trailing '/', e.g. "/weir" */
	size_t pc_prefix_len;
	char pc_mds[256]; /* WEIR_MDS, "" when unset */
	bool pc_on;	  /* a usable prefix is configured */
};
extern struct pl_conf pl_conf;
/** Set once the process has begun exiting: Weir calls then fail with EIO. */
extern atomic_bool pl_exiting;
/** Lowest number internal descriptors are moved to. */
extern int pl_fd_base;
/** Set once pl_boot() has finished. */
extern atomic_bool pl_booted;

/** Read the environment, adopt inherited state (idempotent, cheap after the first call). */
void pl_boot(void);
/** True when interposers should look at this call (booted, configured, not nested). */
static inline bool pl_active(void)
{
	if (pl_depth)
		return false;
	if (!atomic_load_explicit(&pl_booted, memory_order_acquire))
		pl_boot();
	return pl_conf.pc_on;
}
/**
 * The process's mount, made on first use (again in a forked child).
 * \return 0, -EDESTADDRREQ (WEIR_MDS unset), or weir_mount's error (logged once).
 */
int pl_fs_get(weir_fs_t **fs);
/** Forget the mount without touching it (a forked child: its threads are gone). */
void pl_fs_forget(void);
/** The umask as last set (kept by the umask() interposer). */
mode_t pl_umask_get(void);

/**
 * Log a message about something the shim cannot do, once per call site
 * (it keeps its own flag). Never to the application's stdout/stderr.
 */
#define PL_LOG_ONCE(...)                                                                           \
	do {                                                                                       \
		static atomic_bool pl_once_;                                                       \
		if (!atomic_exchange(&pl_once_, true)) {                                           \
			pl_depth++;                                                                \
			WEIR_LOG_WARN(__VA_ARGS__);                                                \
			pl_depth--;                                                                \
		}                                                                                  \
	} while (0)
#define PL_LOG_DEBUG(...)                                                                          \
	do {                                                                                       \
		pl_depth++;                                                                        \
		WEIR_LOG_DEBUG(__VA_ARGS__);                                                       \
		pl_depth--;                                                                        \
	} while (0)

/* ------------------------------------------------------------ pl_fd.c */

enum pl_kind {
	PL_K_FILE = 1, /* opened for I/O (may turn out to be a directory: EISDIR) */
	PL_K_DIR,      /* O_DIRECTORY, or opened by opendir() */
	PL_K_PATH,     /* O_PATH: no handle */
};

/** One open file description's shared part (in memory shared by the process tree). */
struct pl_sdesc {
	atomic_int sd_refs; /* processes' pl_files using it; 0 = free slot */
	int sd_flags;	    /* O_* status flags and access mode */
	uint64_t sd_pos;    /* file offset, bytes */
	weir_fid_t sd_fid;
	pthread_mutex_t sd_lock; /* process-shared, robust */
};

/** An open file description as seen by this process. */
struct pl_file {
	int pf_refs; /* fds in pl_fdtab + calls in flight; under pl_tab_lock */
	enum pl_kind pf_kind;
	int pf_slot; /* index of pf_sd in the shared table */
	struct pl_sdesc *pf_sd;
	char *pf_path; /* Weir path when opened (absolute) */
	weir_fid_t pf_fid;
	pthread_rwlock_t pf_lock;     /* pf_fh, pf_fh_flags, pf_dh */
	weir_file_t *pf_fh;	      /* this process's handle, opened on demand */
	int pf_fh_flags;	      /* flags pf_fh was opened with */
	weir_dir_t *pf_dh;	      /* directory stream (getdents64/readdir), on demand */
	uint64_t pf_dir_cookie;	      /* d_off of the last entry returned */
	struct weir_dirent *pf_dpend; /* an entry read but not yet returned, or NULL */
	struct pl_file *pf_next;      /* every pl_file of the process */
	struct pl_file *pf_prev;
};

/**
 * The pl_file behind Weir descriptor \a fd, with a reference (pl_file_put()),
 * or NULL when \a fd is not Weir's. Lock-free for non-Weir descriptors.
 */
struct pl_file *pl_fd_get(int fd);
/** True when \a fd is a Weir descriptor (no reference taken). */
bool pl_fd_is_weir(int fd);
/** Drop a reference; the last one closes the handle and frees. */
void pl_file_put(struct pl_file *f);
/**
 * Make a pl_file for an opened Weir object (takes ownership of \a fh, may be
 * NULL) with a fresh shared slot, and bind it to a new reserved descriptor.
 * \return the descriptor, or -errno (-EMFILE, -ENFILE, -ENOMEM); on error
 *         \a fh is closed.
 */
int pl_fd_install(enum pl_kind kind, const char *wpath, const weir_fid_t *fid, int flags,
		  weir_file_t *fh);
/**
 * close(2) of descriptor \a fd: unbind (and free when last) a Weir one.
 * \return 0, -EBADF (not open or internal), or the real close's -errno.
 */
int pl_fd_close(int fd);
/**
 * dup2/dup3/F_DUPFD for any descriptor whose source or target is Weir's or
 * internal. \a how: 0 dup, 1 dup2, 2 dup3 (\a flags O_CLOEXEC), 3 F_DUPFD,
 * 4 F_DUPFD_CLOEXEC (\a newfd = lowest).
 * \return the new descriptor or -errno.
 */
int pl_fd_dup(int oldfd, int newfd, int how, int flags);
/** The libweir handle of \a f, opened now if needed. \return 0 or -errno; read-lock held on
 * success. */
int pl_file_handle(struct pl_file *f, weir_file_t **fh);
/** Release the read lock taken by pl_file_handle(). */
void pl_file_unhandle(struct pl_file *f);
/** Lock / unlock the shared description (robust, process-shared). */
void pl_sd_lock(struct pl_sdesc *sd);
void pl_sd_unlock(struct pl_sdesc *sd);
/** Current status flags (O_ACCMODE | O_APPEND | ...). */
int pl_file_flags(struct pl_file *f);
/** Replace the changeable status flags (F_SETFL). */
void pl_file_setfl(struct pl_file *f, int flags);
/** Attributes of an open Weir object (handle or FID). \return 0 or -errno. */
int pl_file_stat(struct pl_file *f, struct stat *st);

/** Internal descriptors (libweir's sockets and log, the shared table). */
bool pl_internal_has(int fd);
void pl_internal_add(int fd);
void pl_internal_del(int fd);
/** Copy up to \a max internal descriptors into \a fds. \return how many. */
int pl_internal_list(int *fds, int max);
/** Move a just-created internal descriptor above pl_fd_base. \return the new number. */
int pl_fd_relocate(int fd);

/** Visit every pl_file (pl_tab_lock held): fork, exec, exit. */
void pl_tab_lock(void);
void pl_tab_unlock(void);
struct pl_file *pl_files_first(void);
/** The descriptor numbers bound to \a f (pl_tab_lock held). \return how many (up to \a max). */
int pl_file_fds(struct pl_file *f, int *fds, int max);
/** Number of the highest Weir descriptor + 1 (pl_tab_lock held). */
int pl_fd_high(void);
/** The pl_file bound to \a fd without a reference (pl_tab_lock held). */
struct pl_file *pl_fd_peek_locked(int fd);

/* shared table, fork, exec (pl_fd.c) */
/** The shared table's memfd (-1 when none or anonymous). */
int pl_shm_fd(void);
/** Attach the shared table inherited on memfd \a fd. \return 0 or -errno. */
int pl_shm_attach(int fd);
/** Before fork: take the child's references. After: pl_fork_parent/pl_fork_child. */
void pl_fork_prepare(void);
void pl_fork_parent(void);
void pl_fork_child(void);
/** fork() failed: give back what pl_fork_prepare() took. */
void pl_fork_failed(void);
/** Close every handle (they are re-opened on demand): before exec. */
void pl_files_close_handles(void);
/** Bind an inherited descriptor (exec): a pl_file on slot \a slot or a new one. */
int pl_fd_adopt(int fd, enum pl_kind kind, const char *wpath, const weir_fid_t *fid, int flags,
		uint64_t pos, int slot);
/** Drop one reference of shared slot \a slot (exec closed its last descriptor). */
void pl_sd_release_slot(int slot);
/** At exit: close every handle, release every slot. */
void pl_files_exit(void);

/* ------------------------------------------------------------ pl_path.c */

/** Where a path lives. */
enum pl_where {
	PL_LOCAL = 0,	  /* libc, with the caller's own arguments */
	PL_WEIR = 1,	  /* Weir: the Weir path was written */
	PL_LOCAL_ABS = 2, /* libc, with the absolute local path written (AT_FDCWD) */
};
/**
 * Resolve \a path (relative to \a dirfd, AT_FDCWD or a descriptor) the way
 * the kernel would, with Weir under the prefix. "." and ".." are folded
 * lexically. "" is -ENOENT for a Weir \a dirfd unless \a empty_ok (then the
 * result is \a dirfd's own path).
 * \param[out] out  PL_PATH_MAX bytes: the absolute Weir path ("/a/b") for
 *                  PL_WEIR, the absolute local path for PL_LOCAL_ABS.
 * \return PL_WEIR, PL_LOCAL, PL_LOCAL_ABS, or -ENOENT, -ENAMETOOLONG,
 *         -ENOTDIR (a Weir \a dirfd that is not a directory).
 */
int pl_resolve(int dirfd, const char *path, bool empty_ok, char *out);
/**
 * For the *at calls libweir has with a directory handle (openat, fstatat,
 * mkdirat, unlinkat, renameat, linkat): when \a dirfd is a Weir directory
 * descriptor with a handle and \a path is relative (and stays inside Weir),
 * \return its pl_file (a reference) and write the joined path (for names
 * only: the call itself goes through the handle, so it follows the
 * directory if it was renamed); else NULL (resolve by path).
 */
struct pl_file *pl_at_dir(int dirfd, const char *path, char *wpath);
/** pl_resolve(AT_FDCWD, ...) for the common case. */
int pl_resolve_path(const char *path, char *wpath);
/** Split \a wpath into its parent (written to \a parent) and return the last name. */
const char *pl_path_split(const char *wpath, char *parent);
/** Write the application-visible path of \a wpath (prefix + path) to \a out. \return -ERANGE if too
 * small. */
int pl_path_visible(const char *wpath, char *out, size_t len);
/** The Weir working directory (copied to \a out), or false when the cwd is local. */
bool pl_cwd_get(char *out);
/**
 * realpath of Weir path \a wpath into \a out (PL_PATH_MAX bytes, the
 * application's path). \return 0, -errno, or -EXDEV when a symlink leads
 * out of Weir (\a out is then the local path left to resolve).
 */
int pl_realpath_weir(const char *wpath, char *out);
/**
 * Does Weir path \a wpath lead out of Weir through a symlink (one stored
 * with a local absolute target)? Then \a local (PL_PATH_MAX bytes) is the
 * local path it names. Called after Weir said -ENOENT for a path it
 * followed. \return 1 or 0.
 */
int pl_weir_escape(const char *wpath, char *local);
/** Set the Weir working directory (NULL: local again). */
void pl_cwd_set(const char *wpath);
/** The kernel's working directory changed (or may have): forget the cached one. */
void pl_kcwd_forget(void);

/* ------------------------------------------------------------ pl_stdio.c */

/** Before descriptor 0/1/2 changes: flush the stream written through it. */
void pl_stdio_before(int fd);
/** After descriptor 0/1/2 changed: point stdin/stdout/stderr at a Weir stream or back. */
void pl_stdio_after(int fd);
/** Exit: flush the shim's own streams (those on Weir descriptors) while they can write. */
void pl_stdio_flush_all(void);
/** Boot: swap streams of inherited Weir descriptors 0/1/2. */
void pl_stdio_boot(void);

/* ------------------------------------------------------------ pl_mmap.c */

/** Write every shared writable mapping back (exit, exec). */
void pl_mmap_flush_all(void);

/* ------------------------------------------------------------ pl_io.c (used by others) */

ssize_t pl_io_read(struct pl_file *f, void *buf, size_t len);
ssize_t pl_io_write(struct pl_file *f, const void *buf, size_t len);
ssize_t pl_io_pread(struct pl_file *f, void *buf, size_t len, uint64_t off);
ssize_t pl_io_pwrite(struct pl_file *f, const void *buf, size_t len, uint64_t off);
/** pwrite at \a off even on an O_APPEND description (mmap write-back). */
ssize_t pl_io_pwrite_at(struct pl_file *f, const void *buf, size_t len, uint64_t off);
int64_t pl_io_lseek(struct pl_file *f, int64_t off, int whence);
/** read(2) on any descriptor (Weir or not) with errno semantics. */
ssize_t pl_any_read(int fd, void *buf, size_t len);
/** write(2) on any descriptor. */
ssize_t pl_any_write(int fd, const void *buf, size_t len);

/* ------------------------------------------------------------ pl_open.c (used by others) */

/**
 * Open Weir path \a wpath as open(2) would, bind a descriptor.
 * \return the descriptor or -errno.
 */
int pl_open_weir(const char *wpath, int flags, mode_t mode);

/* ------------------------------------------------------------ pl_stat.c (used by others) */

/** stat of a Weir path; \a nofollow for lstat. \return 0 or -errno. */
int pl_stat_weir(const char *wpath, bool nofollow, struct stat *st);
/** access(2) check of Weir path \a wpath for \a mode (R_OK...), effective ids if \a eff. */
int pl_access_weir(const char *wpath, int mode, bool eff);

/* ------------------------------------------------------------ pl_ns.c (used by others) */

/** mkdir of a Weir path, with the umask applied. \return 0 or -errno. */
int pl_mkdir_weir(const char *wpath, mode_t mode);
/** readlink of a Weir path; absolute targets come back with the prefix. \return bytes or -errno. */
ssize_t pl_readlink_weir(const char *wpath, char *buf, size_t len);

/* ------------------------------------------------------------ pl_proc.c */

/** Boot: adopt the descriptors and working directory an exec'ing parent described. */
void pl_state_adopt(void);
/** pthread_atfork handlers (registered at boot). */
void pl_atfork_prepare(void);
void pl_atfork_parent(void);
void pl_atfork_child(void);

/* ------------------------------------------------------------ pl_dir.c (used by others) */

/** Rewind / position the directory stream of \a f at \a cookie (0: start). */
int pl_dir_seek(struct pl_file *f, uint64_t cookie);

#endif /* WEIR_PRELOAD_PL_INT_H */
