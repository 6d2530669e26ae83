/*
 * weir/weir.h - libweir, the Weir client library.
 *
 * A POSIX-shaped API over a Weir filesystem: metadata calls go to the MDS,
 * file data goes straight to the OSTs that hold it, striped by the file's
 * RAID-0 layout, with many RPCs in flight.
 *
 * Conventions for every call:
 *  - Return 0 (or a byte count) on success, a negative errno on failure;
 *    errno is not used.
 *  - Paths are absolute within the filesystem ("/a/b"); a path without a
 *    leading '/' is taken from the root too (the *at calls take relative
 *    paths from a directory handle). A name is any bytes but '/' and NUL,
 *    at most 255 of them; paths are at most 4095 bytes. "." and ".." work
 *    everywhere ("/.." is "/"). Symlinks are followed in every component
 *    but the last; the last as each call says (as its Linux counterpart).
 *  - Errors common to every call taking a path, as Linux returns them:
 *      -ENOENT        a component, or the object, is missing; empty path;
 *      -ENOTDIR       a non-final component is not a directory (or the
 *                     path ends with '/' and the object is not one);
 *      -ENAMETOOLONG  a name over 255 bytes or a path over 4095;
 *      -EACCES        no search (x) permission on a directory of the path;
 *      -ELOOP         more than 40 symlinks met resolving the path.
 *  - Permissions: the MDS checks POSIX mode bits (owner, group and
 *    supplementary groups, other; sticky and setgid directories) against
 *    the mount's credentials (the process's uid, gid and first 64 groups,
 *    or struct weir_mount_opts), as the Linux VFS does; uid 0 overrides
 *    them as root does, unless the MDS runs with --root-squash 1.
 *  - Offsets and lengths are bytes; times are nanoseconds since the epoch.
 *  - Errors common to every call that talks to a server:
 *      -ETIMEDOUT   the server could not be reached (refused, unreachable,
 *                   connection broken, no answer within rpc_timeout_ms), or
 *                   the MDS stayed in its recovery window after a restart,
 *                   for longer than the mount's recovery limit
 *                   (wmo_recovery_timeout_s, WEIR_RECOVERY_TIMEOUT); without
 *                   a limit (the default) the call waits for the server and
 *                   is sent again, with the same request id (README
 *                   "Recovery");
 *      -EINTR       a signal handler ran on the calling thread (or its
 *                   cancel point was cancelled, weir_cancel()) while the call
 *                   waited for a server;
 *      -ENOMEM      out of memory;
 *      -EPROTO      a malformed reply.
 *  - Thread safety: a weir_fs_t and the handles made from it may be used by
 *    many threads at once, except where a call says otherwise.
 *  - libweir never prints to stdout/stderr. Set WEIR_LOG=/path/file (or
 *    "stderr") and WEIR_LOG_LEVEL=error|warn|notice|info|debug to see logs.
 *  - A call alone in flight on its server connection polls for its reply
 *    (non-blocking checks, yielding the CPU in between) for up to an
 *    adaptive window before it sleeps, which saves the wakeup of a quick
 *    reply at the cost of that CPU time: WEIR_POLL_US (microseconds, read
 *    once per process; default 200, 0 never polls) sets the window's
 *    maximum. The window follows Linux's cpuidle-haltpoll rule (net/npoll.h).
 */
#ifndef WEIR_WEIR_H
#define WEIR_WEIR_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A mounted filesystem: connections to its MDS and OSSs. */
typedef struct weir_fs weir_fs_t;
/** An open file. */
typedef struct weir_file weir_file_t;
/** An open directory stream. */
typedef struct weir_dir weir_dir_t;

/** A file identifier: [seq:oid], printed as Lustre does "[0x200000400:0x1:0x0]". */
typedef struct {
	uint64_t seq;
	uint64_t oid;
} weir_fid_t;

/** Largest stripe count of one file. */
#define WEIR_MAX_STRIPES 128

/** Options for weir_mount_with(); zero fields take defaults. */
struct weir_mount_opts {
	size_t wmo_size;            /**< sizeof(struct weir_mount_opts) */
	uint32_t wmo_rpc_timeout_ms; /**< per RPC; default 30000 */
	uint32_t wmo_rpc_max_bytes;  /**< largest data RPC, bytes; 1..16 MiB, default 4 MiB */
	uint32_t wmo_max_inflight;   /**< data RPCs in flight per call; default 16 */
	uint32_t wmo_uid;            /**< credentials sent with requests (the MDS checks
				      *   permissions with them); both 0: the process's
				      *   euid, egid and first 64 groups; otherwise these,
				      *   with no supplementary groups */
	uint32_t wmo_gid;
	const char *wmo_client_name; /**< for server logs; default "libweir-<pid>" */
	const char *wmo_key_file;    /**< the cluster key file (see weir_mount()); NULL: the
				      *   environment's WEIR_KEY_FILE, else /etc/weir/cluster.key */
	uint32_t wmo_insecure;       /**< 1: connect without a key (only to servers that run
				      *   --insecure); 0: the environment's WEIR_INSECURE=1 decides */
	int32_t wmo_recovery_timeout_s; /**< how long a call waits for a server that cannot
				      *   be reached (restarting, failing over) before it
				      *   fails with -ETIMEDOUT, in seconds; 0: the
				      *   environment's WEIR_RECOVERY_TIMEOUT (seconds, 0 =
				      *   forever), else forever (a "hard" mount);
				      *   WEIR_RECOVERY_FOREVER: forever. See "Recovery" */
	uint32_t wmo_md_cache;       /**< 1: weir_fid_lookup() may answer from the metadata
				      *   cache (names and "no such name" under the
				      *   directory's MDS lease) without the MDS checking
				      *   search permission: for a caller that checks it
				      *   itself (weir-fuse with the kernel's
				      *   default_permissions). Attributes are cached
				      *   either way (see "Metadata cache"). Also: a
				      *   handle opened for writing is closed with a
				      *   round trip (not one-way) whose reply leases the
				      *   file's attributes after the close */
	uint32_t wmo_md_no_paths;    /**< 1: weir_stat(), weir_lstat() and weir_fstatat()
				      *   of a path always ask the MDS (no leases on the
				      *   directories walked), for a process that may end
				      *   without weir_umount() (exec, _exit): the MDS
				      *   would hold other clients' changes of those
				      *   directories until its session is evicted (a
				      *   lease); and a file it creates for writing is
				      *   not leased to it at the create (the
				      *   creator's lease, asked only with
				      *   wmo_md_cache). 0 (default): they resolve
				      *   the path in the metadata cache (see
				      *   "Metadata cache") */
};

/** wmo_recovery_timeout_s: wait for a server without a limit, whatever the environment. */
#define WEIR_RECOVERY_FOREVER (-1)

/**
 * Mount: connect to the MDS at \a mds_addr, fetch the cluster map.
 *
 * Every connection (to the MDS and to each OSS) first proves that this
 * client holds the cluster key, and checks that the server does too
 * (HMAC-SHA256 challenge-response; the key never travels). The key file is
 * struct weir_mount_opts.wmo_key_file, else the environment's WEIR_KEY_FILE,
 * else /etc/weir/cluster.key; it must be mode 0600 or stricter. Without a
 * key (WEIR_INSECURE=1 or wmo_insecure) only servers running --insecure
 * accept the client. weir_mount_error() says why a mount failed.
 *
 * \param[in]  mds_addr  "HOST:PORT" of the MDS, e.g. "127.0.0.1:7400".
 * \param[out] fs        The mount; release with weir_umount().
 * \return 0, or:
 * \retval -EINVAL        \a mds_addr is not HOST:PORT, or the key file is malformed.
 * \retval -ENOENT        no key file (and not insecure).
 * \retval -EPERM         the key file is readable by group or others.
 * \retval -EACCES        authentication failed: the cluster key differs, this
 *                        client has none, or the server runs --insecure while
 *                        this client has a key.
 * \retval -ECONNREFUSED  nothing listens there.
 * \retval -EPROTO        the peer does not speak Weir's protocol.
 */
int weir_mount(const char *mds_addr, weir_fs_t **fs);

/**
 * Mount with options. \a opts may be NULL (defaults); its wmo_size must be
 * set to sizeof(struct weir_mount_opts) (older, smaller structs are accepted).
 * \return as weir_mount(), and -EINVAL for out-of-range options.
 */
int weir_mount_with(const char *mds_addr, const struct weir_mount_opts *opts, weir_fs_t **fs);

/**
 * Why the last weir_mount()/weir_mount_with() on this thread failed, as one
 * line for a person ("10.0.0.5:7400: authentication failed: the cluster key
 * differs"), or "" when it did not fail or gave no more than its errno.
 * \return a thread-local string, valid until this thread's next mount.
 * Thread safety: per thread.
 */
const char *weir_mount_error(void);

/**
 * Unmount: close connections and free \a fs. Files and directories still
 * open are closed first (their sizes reported to the MDS). Accepts NULL.
 * \return 0, or the first error met closing open files.
 * Thread safety: no other call may be running on \a fs.
 */
int weir_umount(weir_fs_t *fs);

/* ------------------------------------------------------------ files */

/**
 * Open (and with O_CREAT, create) a file.
 *
 * \param[in]  path   File path.
 * \param[in]  flags  O_RDONLY, O_WRONLY or O_RDWR, or'ed with O_CREAT,
 *                    O_EXCL, O_TRUNC, O_APPEND, O_DIRECTORY, O_NOFOLLOW.
 * \param[in]  mode   Permission bits of a created file.
 * \param[out] fh     The handle; release with weir_close().
 * \return 0, or:
 * \retval -ENOENT   a component is missing (without O_CREAT: the file too).
 * \retval -EEXIST   O_CREAT|O_EXCL and the path exists.
 * \retval -EISDIR   a directory opened for writing.
 * \retval -ENOTDIR  a non-final component is not a directory.
 * \retval -ENAMETOOLONG  a name over 255 bytes or a path over 4095.
 * \retval -ENOSPC   no OST is available to place a new file on.
 * \retval -EACCES   no read/write permission as \a flags ask (O_TRUNC asks
 *                   write), no write+search permission on the directory to
 *                   create in, or no search permission on the path.
 * \retval -ELOOP    O_NOFOLLOW and the path is a symlink; more than 40 symlinks.
 * \retval -EINVAL   O_CREAT with O_DIRECTORY (as Linux 6.4+), or O_ACCMODE.
 * \retval -ENXIO    a socket; -EOPNOTSUPP: a FIFO or a device (libweir opens
 *                   regular files and directories only).
 * Symlinks are followed, also in the last component unless O_NOFOLLOW or
 * O_CREAT|O_EXCL (then an existing symlink is -ELOOP / -EEXIST); O_CREAT
 * through a dangling symlink creates its target. A new file is owned by the
 * mount's uid and gid (the directory's gid when it is setgid) with \a mode
 * & 07777 (no umask is applied). O_TRUNC by a non-root caller clears
 * S_ISUID and S_ISGID. Opening for reading updates atime (relatime rules).
 * A new file gets the layout of its directory's default (weir_setstripe on
 * a directory), else the filesystem default (1 stripe of 1 MiB).
 * WEIR_O_EXEC with O_RDONLY is execve(2)'s open: execute permission is
 * checked instead of read (-EACCES without it, or on a non-regular file),
 * and the handle reads; with O_WRONLY, O_RDWR, O_CREAT or O_TRUNC -EINVAL.
 */
int weir_open(weir_fs_t *fs, const char *path, int flags, mode_t mode, weir_file_t **fh);

/**
 * An open flag of libweir's own: execve(2)'s open of a program (the
 * kernel's __FMODE_EXEC, which FUSE passes in an OPEN's flags, and which no
 * Linux O_* flag uses). See weir_open().
 */
#define WEIR_O_EXEC 0x20

/** weir_open(fs, path, O_CREAT|O_WRONLY|O_TRUNC, mode, fh). */
int weir_creat(weir_fs_t *fs, const char *path, mode_t mode, weir_file_t **fh);

/**
 * Close a handle. A handle that wrote reports the file's size (glimpsed
 * from the OSTs) to the MDS. Frees \a fh even when an error is returned.
 * \return 0, or the error of that final report. Accepts NULL (returns 0).
 */
int weir_close(weir_file_t *fh);

/**
 * Read at an absolute offset.
 * \param[out] buf  Caller-owned, at least \a len bytes.
 * \return Bytes read (short only at end of file; holes read as zeros), or:
 * \retval -EBADF  \a fh is not open for reading.
 * \retval -EIO    an OST holding part of the range failed.
 * \retval -EINVAL \a off + \a len overflows a file offset.
 * \retval -EIO / -ETIMEDOUT  an HSM-released file whose range could not be
 *                 restored (see "HSM: the S3 tier" below).
 * A released file is restored on access: the call waits for its range.
 * Thread safety: may run concurrently on one \a fh.
 */
ssize_t weir_pread(weir_file_t *fh, void *buf, size_t len, uint64_t off);

/**
 * Write at an absolute offset. The range is split by the layout and sent to
 * every OST involved in parallel (up to wmo_rpc_max_bytes per RPC). Returns
 * once every OST has acknowledged its part (written to the object file;
 * weir_fsync() makes it durable on the device). Every other client's reads
 * that start afterwards see the data (there is no client cache). The time
 * of the handle's last write becomes the file's mtime and ctime at
 * weir_close() / weir_fsync(). The first write through a handle by a
 * caller other than root drops S_ISUID, and S_ISGID if S_IXGRP is set (an
 * MDS_SETATTR), as the kernel does.
 *
 * A write that fails changes no size, as write(2) on a full disk: it
 * returns the bytes [off, off + n) written without a gap (n < \a len when an
 * OST filled up or failed part way; the next write gets the error), or an
 * error having written nothing that grew the file. Parts of the range sent
 * in parallel that succeeded past the first byte not written, and made an
 * object longer, are truncated back (to the object's size before the write
 * or the end of the count, whichever is larger; skipped, and logged, when
 * another writer changed that object's size meanwhile), so the file's size
 * is at most max(old size, \a off + n). Bytes past n inside the old size may
 * hold the new data.
 * \return \a len, a short count > 0 (see above), or:
 * \retval -EBADF   \a fh is not open for writing.
 * \retval -ENOSPC  an OST is full (nothing written past the old size).
 * \retval -EFBIG   the range ends beyond 2^63-1.
 * \retval -EIO     an OST failed (bytes inside the old size may have been
 *                  written). An RPC that timed out may still be written
 *                  later by its OST: it is not undone.
 * \retval -ETIMEDOUT  an HSM-released file: its restore did not finish
 *                 within WEIR_RESTORE_TIMEOUT (see "HSM: the S3 tier" below;
 *                 the whole file is restored before the first write).
 * Thread safety: may run concurrently on one \a fh.
 */
ssize_t weir_pwrite(weir_file_t *fh, const void *buf, size_t len, uint64_t off);

/** Read at the handle's position and advance it. Errors as weir_pread(). */
ssize_t weir_read(weir_file_t *fh, void *buf, size_t len);

/**
 * Write at the handle's position and advance it. Errors as weir_pwrite().
 * With O_APPEND each call is atomic across every client: it takes the
 * file's append lock on the MDS (waiting for other appenders), asks the
 * OSTs for the exact end of file (a glimpse), writes there, releases the
 * lock; the position is left at the end of what it wrote. An append so
 * costs two MDS RPCs and one RPC per stripe besides the write itself, and
 * appends to one file are serialised. Writes by weir_pwrite() or by
 * handles without O_APPEND do not take that lock and may interleave.
 * Extra errors with O_APPEND: -EIO (this mount was evicted since the open),
 * -ENOLCK (the MDS restarted while waiting).
 */
ssize_t weir_write(weir_file_t *fh, const void *buf, size_t len);

/**
 * Move the handle's position, as lseek(2).
 * \param[in] whence  SEEK_SET, SEEK_CUR, SEEK_END (glimpses the size), or
 *                    SEEK_DATA / SEEK_HOLE (<unistd.h> with _GNU_SOURCE):
 *                    the first byte of data / of a hole at or after \a off,
 *                    asked of every object on its OST and mapped back through
 *                    the layout. A range no object holds data for is a hole,
 *                    and the end of file is one. Holes are found with the
 *                    OSTs' block granularity (4 KiB on ext4), as on a local
 *                    file; preallocated but unwritten ranges (weir_fallocate)
 *                    are holes on ext4, as there.
 * \return The new position, or:
 * \retval -EINVAL  bad \a whence, a negative result, or SEEK_DATA/SEEK_HOLE on a directory.
 * \retval -ENXIO   SEEK_DATA/SEEK_HOLE with \a off negative or at or past the end
 *                  of file, or SEEK_DATA with no data after \a off.
 * \retval -EIO     an OST failed.
 * Thread safety: may run concurrently with any call; the position of one
 * \a fh is updated atomically with respect to weir_read/weir_write.
 */
int64_t weir_lseek(weir_file_t *fh, int64_t off, int whence);

/**
 * Make the file's data durable on the OSTs (fsync of every object, in
 * parallel) and its size, blocks, mtime and other metadata durable on the
 * MDS (the MDT log synced). Allowed on a read-only handle (then no size is
 * reported).
 * \return 0, -EIO when an OST or the MDS could not sync, or the common
 *         transport errors (-ETIMEDOUT, -ECONNRESET, ...).
 * Thread safety: may run concurrently on one \a fh.
 */
int weir_fsync(weir_file_t *fh);

/**
 * As weir_fsync(), but the OSTs sync only each object's data and what is
 * needed to read it back (fdatasync(2) of every object, in parallel). The
 * file's size is still recorded and synced on the MDS, since finding the
 * data needs it.
 * \return as weir_fsync().
 * Thread safety: may run concurrently on one \a fh.
 */
int weir_fdatasync(weir_file_t *fh);

/**
 * Allocate or deallocate space, as fallocate(2). The file range
 * [\a off, \a off + \a len) is mapped through the layout and each object's part
 * of it is fallocated on its OST, all objects in parallel.
 * \param[in] mode  One of (FALLOC_FL_* from <fcntl.h> with _GNU_SOURCE, or
 *                  <linux/falloc.h>):
 *                  0: allocate the range; the file grows to \a off + \a len
 *                     if it was shorter; new bytes read as zeros.
 *                  FALLOC_FL_KEEP_SIZE: allocate, the size stays.
 *                  FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE: free the
 *                     range: it reads as zeros, st_blocks drops, the size
 *                     stays.
 * \param[in] off   Byte offset of the range.
 * \param[in] len   Bytes, > 0.
 * \return 0, or (checked in this order, as Linux does):
 * \retval -EINVAL      \a len is 0, or \a off or \a len is above 2^63-1.
 * \retval -EOPNOTSUPP  any other \a mode (ZERO_RANGE, COLLAPSE_RANGE, PUNCH_HOLE
 *                      without KEEP_SIZE, ...), or an OST's filesystem lacks it.
 * \retval -EBADF       \a fh is not open for writing.
 * \retval -EISDIR      \a fh is a directory.
 * \retval -EFBIG       \a off + \a len is above 2^63-1.
 * \retval -ENOSPC      an OST is full (objects before it may have been allocated).
 * \retval -EIO         an OST failed.
 * Thread safety: may run concurrently on one \a fh.
 */
int weir_fallocate(weir_file_t *fh, int mode, uint64_t off, uint64_t len);

/**
 * Set the file's size: shrinking drops the bytes past it (they read as
 * zeros if the file grows again); growing leaves a hole.
 * \return 0, or -EBADF (not open for writing), -EFBIG (over 2^63-1).
 */
int weir_ftruncate(weir_file_t *fh, uint64_t size);

/** weir_ftruncate() by path. \return 0, or as weir_open() and weir_ftruncate(). */
int weir_truncate(weir_fs_t *fs, const char *path, uint64_t size);

/**
 * Attributes by path, following a symlink in the last component (stat(2);
 * weir_lstat() does not follow it). st_ino is the FID folded to 64 bits, st_blksize the stripe
 * size, st_size includes every completed write of every client (files open
 * for writing somewhere are glimpsed on the OSTs). st_blocks counts the
 * 512-byte blocks allocated to the file's objects on their OSTs: glimpsed
 * (summed over the objects) while the file is open for writing somewhere,
 * else as recorded by the MDS at the last writer's close or fsync.
 * nlink counts the hard links of a file. st_rdev holds a device's number.
 * A symlink (weir_lstat) has mode S_IFLNK|0777 and the target's length as size.
 * \param[out] st  Caller-owned.
 * \return 0, or the path errors (top of this file).
 */
int weir_stat(weir_fs_t *fs, const char *path, struct stat *st);

/** Attributes of an open file, as weir_stat(). */
int weir_fstat(weir_file_t *fh, struct stat *st);

/** The FID of an open file. */
int weir_file_fid(weir_file_t *fh, weir_fid_t *fid);

/**
 * The FID of a path (one MDS lookup), like `lfs path2fid`.
 * \param[out] fid  Caller-owned.
 * \return 0, -ENOENT, -ENOTDIR, -EINVAL (NULL argument), -ENAMETOOLONG.
 */
int weir_path2fid(weir_fs_t *fs, const char *path, weir_fid_t *fid);

/* ------------------------------------------------------------ namespace */

/**
 * Make a directory, as mkdir(2): mode \a mode & 01777 (no umask is applied:
 * the caller applies its own), owned by the mount's uid and gid, or the
 * parent's gid and S_ISGID when the parent is setgid. Needs write and search
 * permission on the parent.
 * \return 0, -EEXIST (also "/", "." and ".."), -EACCES, and the path errors.
 */
int weir_mkdir(weir_fs_t *fs, const char *path, mode_t mode);

/**
 * As weir_mkdir(), with the new directory's inode on MDT \a mdt (Lustre's
 * `lfs mkdir -i`): a remote directory when \a mdt is not the parent's MDT,
 * made by a two-MDT transaction that a crash of either MDS does not leave
 * half done. \a mdt -1: the parent's MDT (weir_mkdir()).
 * Paths through a remote directory reach the files below it on its MDT
 * (README: Several MDTs); rmdir of it works, rename of it is -EXDEV.
 * \return as weir_mkdir(), and -EINVAL (\a mdt not an MDT of the
 *         filesystem as the parent's MDT knows it, or out of 0..255),
 *         -EHOSTDOWN (that MDT did not answer: nothing is left made).
 * Thread-safe.
 */
int weir_mkdir_mdt(weir_fs_t *fs, const char *path, mode_t mode, int mdt);

/**
 * Remove an empty directory, as rmdir(2). Needs write and search permission
 * on the parent; in a sticky parent, the directory's owner, the parent's
 * owner or root. A symlink to a directory is not followed (-ENOTDIR).
 * \return 0, -ENOTDIR, -ENOTEMPTY (also ".."), -EINVAL ("."), -EBUSY (the
 *         root), -EACCES, -EPERM (sticky), and the path errors.
 */
int weir_rmdir(weir_fs_t *fs, const char *path);

/**
 * Remove a name of a file (any non-directory, a symlink itself), as
 * unlink(2). When it was the last name, the file goes: at once, or at the
 * last close if some client has it open; its objects are destroyed on the
 * OSTs afterwards (the MDS's destroy queue). Other hard links keep it.
 * Permissions as weir_rmdir().
 * \return 0, -EISDIR (a directory, also "/", "." and ".."), -ENOTDIR ("file/"),
 *         -EACCES, -EPERM (sticky), -EBUSY (the name is being renamed to
 *         another MDT, for milliseconds), -EHOSTDOWN (the file is on another
 *         MDT, which did not answer: nothing removed), and the path errors.
 */
int weir_unlink(weir_fs_t *fs, const char *path);

/**
 * Rename atomically, as rename(2): weir_rename2() with \a flags 0.
 */
int weir_rename(weir_fs_t *fs, const char *oldpath, const char *newpath);

/** One directory entry. */
struct weir_dirent {
	uint64_t d_ino;     /**< FID folded to 64 bits */
	uint64_t d_off;     /**< position after this entry: weir_telldir() after it */
	uint8_t d_type;     /**< DT_REG, DT_DIR, ... */
	weir_fid_t d_fid;
	char d_name[256];   /**< NUL-terminated */
};

/**
 * Open a directory for listing (a symlink to one is followed). Entries are
 * fetched from the MDS in pages; the first page is read here, so a missing
 * read permission fails now. Later pages come from the mount's metadata
 * cache when it knows the directory whole (docs/leases.md), in the same
 * order and with the same cookies.
 * \return 0, -EACCES (no read permission), and the path errors.
 */
int weir_opendir(weir_fs_t *fs, const char *path, weir_dir_t **dh);

/**
 * Next entry ("." and ".." come first).
 * \param[out] ent  Caller-owned.
 * \return 1 with \a ent filled, 0 at the end, or a negative errno.
 * Thread safety: one thread per \a dh at a time.
 */
int weir_readdir(weir_dir_t *dh, struct weir_dirent *ent);

/** Close a directory stream. Accepts NULL. \return 0. */
int weir_closedir(weir_dir_t *dh);

/**
 * Readdirplus: the pages weir_readdir() fetches from now on (up to 1024
 * entries each) carry every entry's attributes, which the mount's metadata
 * cache keeps under the leases the MDS grants with them (names too, under
 * the directory's LOOKUP lease, with wmo_md_cache). weir_fid_getattr() and
 * weir_fid_lookup() of the listed entries then answer without an MDS call
 * until a change calls the lease back: `ls -l` in one READDIR per 1024
 * entries instead of one GETATTR per entry. Without the cache
 * (WEIR_MD_CACHE=0, `weir-mds --md-leases 0`) nothing changes. A page
 * already fetched and not yet read from (weir_opendir()'s first) is fetched
 * again with attributes by the next weir_readdir(); one partly read is
 * unaffected.
 * \param[in] on  nonzero: readdirplus; 0: names only (the default).
 * \return 0, or -EINVAL (\a dh NULL).
 * Thread safety: one thread per \a dh at a time.
 */
int weir_dir_plus(weir_dir_t *dh, int on);

/**
 * The position of a directory stream, as telldir(3): 0 at the start, 1
 * after ".", 2 after "..", else the MDS's cookie of the last entry
 * returned (a stable 63-bit hash of its name, >= 3). A position stays valid
 * while entries are created and removed: weir_seekdir() to it resumes after
 * that name, and an entry present throughout a listing is returned exactly
 * once.
 * \return The position (>= 0), or -EINVAL (NULL).
 * Thread safety: one thread per \a dh at a time.
 */
int64_t weir_telldir(weir_dir_t *dh);

/**
 * Move a directory stream to \a pos from weir_telldir() (or a d_off), as
 * seekdir(3). A negative \a pos is ignored. The next weir_readdir()
 * fetches a page from the MDS.
 * Thread safety: one thread per \a dh at a time.
 */
void weir_seekdir(weir_dir_t *dh, int64_t pos);

/** weir_seekdir(dh, 0): list again from ".". Accepts NULL. */
void weir_rewinddir(weir_dir_t *dh);

/**
 * Filesystem totals: blocks are f_bsize (4096) bytes, summed over the OSTs
 * that are up; files from the MDT.
 * \return 0 or a negative errno.
 */
int weir_statfs(weir_fs_t *fs, struct statvfs *sv);

/* ------------------------------------------------------------ POSIX namespace */

/*
 * Links, symlinks, special files, permissions, times, extended attributes
 * and calls relative to a directory handle, with Linux's semantics and
 * errno values. Each is one MDS RPC. Besides the errors listed per call:
 * the path errors and the common transport errors (top of this file), and
 * -EINVAL for a NULL argument not documented as optional.
 * Thread safety: any thread, any time.
 */

/**
 * Attributes by path without following a symlink in the last component
 * (lstat(2)): a symlink itself is S_IFLNK|0777 with st_size its target's
 * length. Otherwise as weir_stat().
 */
int weir_lstat(weir_fs_t *fs, const char *path, struct stat *st);

/**
 * Check access to \a path as access(2) with the mount's credentials.
 * \param[in] mode  F_OK (exists), or R_OK | W_OK | X_OK. Root passes every
 *                  check but X_OK on a non-directory without any x bit.
 * \return 0, -EACCES (denied), -EINVAL (bad \a mode), and the path errors.
 */
int weir_access(weir_fs_t *fs, const char *path, int mode);

/**
 * Change permission bits (mode & 07777), as chmod(2); follows symlinks.
 * Only the owner or root may; S_ISGID is dropped when a non-root caller is
 * not in the file's group. ctime becomes now.
 * \return 0, -EPERM (not the owner), and the path errors.
 */
int weir_chmod(weir_fs_t *fs, const char *path, mode_t mode);

/** weir_chmod() of an open file (fchmod(2)). \return as weir_chmod(), -EIO (evicted handle). */
int weir_fchmod(weir_file_t *fh, mode_t mode);

/**
 * Change owner and group, as chown(2); (uid_t)-1 / (gid_t)-1 keep one.
 * Only root may change the owner; the owner may set the group to its own
 * gid or one of its groups. On a non-directory, S_ISUID and (if group-exec)
 * S_ISGID are cleared by every chown, even by root or with both -1, as on
 * Linux. ctime becomes now.
 * \return 0, -EPERM, and the path errors.
 */
int weir_chown(weir_fs_t *fs, const char *path, uid_t uid, gid_t gid);

/** weir_chown() without following a symlink in the last component (lchown(2)). */
int weir_lchown(weir_fs_t *fs, const char *path, uid_t uid, gid_t gid);

/** weir_chown() of an open file (fchown(2)). \return as weir_chown(), -EIO (evicted handle). */
int weir_fchown(weir_file_t *fh, uid_t uid, gid_t gid);

/**
 * Set access and modification times, as utimensat(2) without flags
 * (symlinks followed).
 * \param[in] ts  ts[0] atime, ts[1] mtime; tv_nsec UTIME_NOW (the MDS's
 *                clock) or UTIME_OMIT (unchanged) allowed; NULL: both now.
 *                Both UTIME_OMIT: returns 0 at once, the path not looked at.
 * Permission: explicit times (or one NOW with one OMIT) need the owner or
 * root; both now also anyone with write permission. ctime becomes now.
 * \return 0, -EINVAL (tv_nsec out of range), -EPERM, -EACCES, path errors.
 */
int weir_utimens(weir_fs_t *fs, const char *path, const struct timespec ts[2]);

/** weir_utimens() of an open file (futimens(3)). \return as weir_utimens(), -EIO. */
int weir_futimens(weir_file_t *fh, const struct timespec ts[2]);

/**
 * Make a hard link \a newpath to the file \a oldpath, as link(2) (a
 * symlink at \a oldpath is linked itself, not followed). Both names then
 * share one inode: st_nlink counts them, removing one keeps the file.
 * Like Linux with fs.protected_hardlinks=1, a non-root caller that does not
 * own the file needs it to be a regular file, not setuid, not setgid and
 * group-executable, that it may read and write. Needs write and search
 * permission on the new name's directory.
 * \return 0, -EEXIST (\a newpath exists), -EPERM (a directory; protected),
 *         -EMLINK (65000 links already), -EACCES, and the path errors.
 *         The new name may be on another MDT than the file (a two-MDT
 *         transaction: README, Several MDTs); then also -EXDEV (a symlink
 *         is not linked across MDTs) and -EHOSTDOWN (the file's MDT did not
 *         answer: nothing made).
 */
int weir_link(weir_fs_t *fs, const char *oldpath, const char *newpath);

/**
 * Make a symlink \a linkpath holding \a target, as symlink(2). The target
 * is stored as given (1..4095 bytes, not checked): a relative one resolves
 * from the link's directory, an absolute one from the Weir root.
 * \return 0, -ENOENT (empty \a target), -ENAMETOOLONG (\a target over 4095
 *         bytes), -EEXIST, -EACCES, and the path errors.
 */
int weir_symlink(weir_fs_t *fs, const char *target, const char *linkpath);

/**
 * Read a symlink's target, as readlink(2): the last component is not
 * followed.
 * \param[out] buf  Caller-owned, \a len bytes; gets the target truncated to
 *                  \a len bytes, without a NUL.
 * \return Bytes placed in \a buf, or -EINVAL (not a symlink; \a len 0), and
 *         the path errors.
 */
ssize_t weir_readlink(weir_fs_t *fs, const char *path, char *buf, size_t len);

/**
 * Make a special file, as mknod(2): \a mode's type S_IFIFO or S_IFSOCK (a
 * name only: such files cannot be opened through libweir), S_IFCHR or
 * S_IFBLK (root only; \a dev is kept as st_rdev), or S_IFREG / 0 (an empty
 * regular file with the default layout); permission bits \a mode & 07777.
 * \return 0, -EPERM (S_IFDIR; a device by a non-root caller), -EINVAL
 *         (another type), -EEXIST, -EACCES, -ENOSPC (S_IFREG: no OST up),
 *         and the path errors.
 */
int weir_mknod(weir_fs_t *fs, const char *path, mode_t mode, dev_t dev);

/**
 * Rename atomically, as renameat2(2) (symlinks at either name are renamed,
 * not followed).
 * \param[in] flags  0: replace \a newpath if it exists (a non-directory by a
 *                   non-directory, an empty directory by a directory);
 *                   RENAME_NOREPLACE: fail if it exists; RENAME_EXCHANGE:
 *                   swap the two existing entries (of any types), ".." of
 *                   swapped directories and the parents' link counts
 *                   following. (<stdio.h> with _GNU_SOURCE, or <linux/fs.h>.)
 * Two names of one inode: nothing happens, 0. Permissions: write and search
 * on both directories, the sticky rule on the source and a replaced target,
 * write permission on a directory that changes parent.
 * \return 0, -ENOENT, -EEXIST (NOREPLACE), -EISDIR / -ENOTDIR (type
 *         mismatch), -ENOTEMPTY, -EINVAL (a directory into its own subtree;
 *         unknown flags, NOREPLACE with EXCHANGE, RENAME_WHITEOUT: not
 *         supported), -EBUSY ("/", "." or ".." as either name; or the
 *         source being renamed to another MDT by another call), -EACCES,
 *         -EPERM (sticky), and the path errors. A file moves between MDTs
 *         (its name does; the inode stays: README, Several MDTs); -EXDEV for
 *         a directory, a symlink or an exchange between MDTs, and for a
 *         rename between MDTs over a name whose file is on yet another MDT;
 *         -EHOSTDOWN when the other MDT did not answer (nothing changed).
 */
int weir_rename2(weir_fs_t *fs, const char *oldpath, const char *newpath, unsigned int flags);

/**
 * The *at calls: \a dir is a directory handle (weir_open() of a directory,
 * O_RDONLY, O_DIRECTORY if wished) a relative path starts from, as a dirfd
 * does; NULL means the root (AT_FDCWD: Weir has no current directory). An
 * absolute path ignores \a dir. \a fs may be NULL when \a dir is given (its
 * mount is used). Extra error: -ENOTDIR (\a dir is not a directory and the
 * path is relative).
 */

/**
 * openat(2): as weir_open() with the path from \a dir.
 * \return as weir_open().
 */
int weir_openat(weir_fs_t *fs, weir_file_t *dir, const char *path, int flags, mode_t mode,
		weir_file_t **fh);

/** mkdirat(2): as weir_mkdir() with the path from \a dir. */
int weir_mkdirat(weir_fs_t *fs, weir_file_t *dir, const char *path, mode_t mode);

/**
 * unlinkat(2): as weir_unlink(), or weir_rmdir() with AT_REMOVEDIR in
 * \a flags. \return as those, -EINVAL (other flags).
 */
int weir_unlinkat(weir_fs_t *fs, weir_file_t *dir, const char *path, int flags);

/**
 * fstatat(2): as weir_stat(), or weir_lstat() with AT_SYMLINK_NOFOLLOW;
 * with AT_EMPTY_PATH an empty \a path means \a dir itself (the root if NULL).
 * \return as weir_stat(), -EINVAL (other flags).
 */
int weir_fstatat(weir_fs_t *fs, weir_file_t *dir, const char *path, struct stat *st, int flags);

/**
 * renameat2(2): as weir_rename2() with \a oldpath from \a olddir and
 * \a newpath from \a newdir.
 */
int weir_renameat(weir_fs_t *fs, weir_file_t *olddir, const char *oldpath, weir_file_t *newdir,
		  const char *newpath, unsigned int flags);

/**
 * linkat(2): as weir_link() with the paths from their directories;
 * AT_SYMLINK_FOLLOW in \a flags links the target of a symlink at \a oldpath.
 * \return as weir_link(), -EINVAL (other flags).
 */
int weir_linkat(weir_fs_t *fs, weir_file_t *olddir, const char *oldpath, weir_file_t *newdir,
		const char *newpath, int flags);

/*
 * Extended attributes, as setxattr(2) & co. Namespaces: "user." (regular
 * files and directories only; read/write permission on the file; in a
 * sticky directory only its owner or root may change them), "trusted."
 * (root only: others see none, get -ENODATA reading and -EPERM writing),
 * "security." (anyone reads, root writes). No POSIX ACLs: "system." names
 * are -EOPNOTSUPP, as is any other prefix. Names are 1..255 bytes, values
 * 0..65536 bytes. They are kept on the MDT and removed with the file.
 * The l* calls do not follow a symlink in the last component, the f* calls
 * act on an open handle (-EIO when the mount was evicted since its open).
 * Errors of every xattr call besides the path errors:
 *   -ERANGE      an empty name or one over 255 bytes;
 *   -EOPNOTSUPP  an unknown namespace; -EINVAL: "user." alone;
 *   -EACCES      no read (get) / write (set, remove) permission ("user.");
 *   -EPERM       a write the namespace forbids (see above).
 */

/**
 * Set attribute \a name to \a size bytes of \a value (0..65536).
 * \param[in] flags  0, XATTR_CREATE (fail with -EEXIST if it exists) or
 *                   XATTR_REPLACE (fail with -ENODATA if it does not).
 * ctime becomes now.
 * \return 0, -EEXIST, -ENODATA, -E2BIG (\a size over 65536), -EINVAL (other
 *         flags), and the xattr errors.
 */
int weir_setxattr(weir_fs_t *fs, const char *path, const char *name, const void *value,
		  size_t size, int flags);
/** weir_setxattr() on a symlink itself (user.* there is -EPERM, as on Linux). */
int weir_lsetxattr(weir_fs_t *fs, const char *path, const char *name, const void *value,
		   size_t size, int flags);
/** weir_setxattr() on an open file. */
int weir_fsetxattr(weir_file_t *fh, const char *name, const void *value, size_t size,
		   int flags);

/**
 * Get attribute \a name.
 * \param[out] value  Caller-owned, \a size bytes; with \a size 0 nothing is
 *                    copied and the value's size is returned.
 * \return The value's size in bytes, or -ENODATA (no such attribute, or
 *         "trusted." for a non-root caller), -ERANGE (\a size too small),
 *         and the xattr errors.
 */
ssize_t weir_getxattr(weir_fs_t *fs, const char *path, const char *name, void *value,
		      size_t size);
/** weir_getxattr() on a symlink itself. */
ssize_t weir_lgetxattr(weir_fs_t *fs, const char *path, const char *name, void *value,
		       size_t size);
/** weir_getxattr() on an open file. */
ssize_t weir_fgetxattr(weir_file_t *fh, const char *name, void *value, size_t size);

/**
 * The names of the attributes the caller may see, each NUL-terminated, in
 * byte order of the names.
 * \param[out] list  Caller-owned, \a size bytes; \a size 0 asks for the size.
 * \return The list's size in bytes, or -ERANGE (\a size too small), -E2BIG
 *         (the list is over 65536 bytes), and the path errors.
 */
ssize_t weir_listxattr(weir_fs_t *fs, const char *path, char *list, size_t size);
/** weir_listxattr() of a symlink itself. */
ssize_t weir_llistxattr(weir_fs_t *fs, const char *path, char *list, size_t size);
/** weir_listxattr() of an open file. */
ssize_t weir_flistxattr(weir_file_t *fh, char *list, size_t size);

/**
 * Remove attribute \a name. ctime becomes now.
 * \return 0, -ENODATA (no such attribute), and the xattr errors.
 */
int weir_removexattr(weir_fs_t *fs, const char *path, const char *name);
/** weir_removexattr() on a symlink itself. */
int weir_lremovexattr(weir_fs_t *fs, const char *path, const char *name);
/** weir_removexattr() on an open file. */
int weir_fremovexattr(weir_file_t *fh, const char *name);

/* ------------------------------------------------------------ layouts */

/** Requested striping; 0 / -1 fields take the directory or filesystem default. */
struct weir_stripe_opts {
	size_t wso_size;          /**< sizeof(struct weir_stripe_opts) */
	uint32_t wso_stripe_count; /**< objects; 0 = default; (uint32_t)-1 = all OSTs */
	uint64_t wso_stripe_size;  /**< bytes, multiple of 64 KiB; 0 = default */
	int32_t wso_stripe_offset; /**< OST index of the first object, with or without a
				    *   count (alone: that OST, the default count);
				    *   -1 = MDS chooses */
};

/**
 * Set striping, like `lfs setstripe`: on a directory, the default layout of
 * files created in it later; on a path that does not exist, create an empty
 * file (mode 0644) with that layout.
 * \return 0, or:
 * \retval -EEXIST  \a path is an existing file (its layout is fixed).
 * \retval -EINVAL  stripe size not a multiple of 64 KiB, count over the
 *                  number of OSTs or WEIR_MAX_STRIPES, an OST index that
 *                  names no OST (checked by the MDS, for a directory too).
 */
int weir_setstripe(weir_fs_t *fs, const char *path, const struct weir_stripe_opts *opts);

/** One object of a file's layout. */
struct weir_obj_info {
	uint32_t woi_ost;      /**< OST index */
	uint64_t woi_size;     /**< object size on the OST, bytes (0 if not created yet) */
	uint64_t woi_blocks;   /**< 512-byte blocks allocated on the OST */
};

/** A file's layout, from weir_getstripe(). */
struct weir_layout_info {
	uint32_t wli_pattern;      /**< 1 = RAID-0 */
	uint32_t wli_stripe_size;  /**< bytes */
	uint32_t wli_stripe_count;
	uint32_t wli_gen;
	int wli_is_dir;            /**< 1: a directory's default (count, size 0 and offset
				    *   -1 when none is set; a 0 field: the default's) */
	weir_fid_t wli_fid;
	struct weir_obj_info wli_objs[WEIR_MAX_STRIPES]; /**< wli_stripe_count of them */
	int32_t wli_stripe_offset; /**< OST index of object 0; -1 = none set (a directory's
				    *   default that lets the MDS choose) */
};

/**
 * Get a file's layout and each object's size on its OST (asked of the OSTs),
 * like `lfs getstripe`; on a directory, its default layout.
 * \param[out] info  Caller-owned.
 * \return 0, -ENOENT, -EIO (an OST did not answer for its object).
 */
int weir_getstripe(weir_fs_t *fs, const char *path, struct weir_layout_info *info);

/* ------------------------------------------------------------ targets */

/** One MDT or OST, from weir_df(). */
struct weir_target_info {
	char wti_name[16];     /**< "MDT0000", "OST0003" */
	uint32_t wti_index;
	int wti_is_mdt;
	int wti_up;            /**< 1 when heard from recently */
	uint32_t wti_fs_shared_with; /**< OSTs: 1 + the index of an earlier OST on the same
				      *   filesystem (same OSS host, same device), whose space
				      *   this is too: count it once; 0 = none (filled
				      *   what was padding: the struct's size is unchanged) */
	uint64_t wti_total;    /**< bytes */
	uint64_t wti_free;     /**< bytes */
	uint64_t wti_avail;    /**< bytes available to unprivileged users */
	uint64_t wti_files;    /**< inodes */
	uint64_t wti_files_free;
	char wti_addr[64];     /**< server "HOST:PORT" */
};

/**
 * Space per target, like `lfs df`. OSTs on one filesystem each report all
 * of it; wti_fs_shared_with marks all but the first, so that a sum counts
 * each filesystem once (as weir_statfs() does).
 * \param[out] tgts  Caller-owned array of \a max entries.
 * \param[out] nr    Targets that exist (may exceed \a max; only \a max filled).
 * \return 0 or a negative errno.
 */
int weir_df(weir_fs_t *fs, struct weir_target_info *tgts, size_t max, size_t *nr);

/** The MDT's recovery window after a restart, from weir_mdt_recovery(). */
struct weir_recovery_info {
	int wri_recovering;     /**< 1 while the window lasts: requests other than the
				 *   clients' replays wait (they are not failed) */
	uint32_t wri_clients;   /**< clients of the MDS's last run it waits for */
	uint32_t wri_recovered; /**< ... of which have reconnected and replayed */
	uint32_t wri_left_s;    /**< seconds until it ends anyway (the missing are evicted) */
};

/**
 * Is the MDT in its recovery window (README: Recovery)? One MDS_STATFS.
 * \param[out] ri  Filled; all zero when it is not recovering.
 * \return 0 or a negative errno.
 */
int weir_mdt_recovery(weir_fs_t *fs, struct weir_recovery_info *ri);

/* ------------------------------------------------------------ FID-based calls */

/*
 * The namespace by (directory FID, name) instead of by path, for programs
 * that keep their own table of inodes: the FUSE daemon (weir-fuse), NFS
 * gateways, tools. Each call is one MDS RPC (a directory FID travels as the
 * request's `at`), plus a glimpse of the OSTs when a file's size must be
 * exact (it is open for writing somewhere). A FID stays valid until the
 * file or directory is removed; afterwards calls on it fail with -ENOENT.
 *
 * A name is one path component: 1..255 bytes, no '/'. The final name is
 * never followed as a symlink. Attributes come back in a struct stat exactly
 * as weir_stat() fills it (st_ino is the FID folded to 64 bits).
 *
 * Credentials: the mount's (struct weir_mount_opts), unless the calling
 * thread set others with weir_fid_cred_set(); they then apply to every
 * libweir call of that thread that sends credentials (opens, namespace and
 * attribute calls; data I/O goes through handles opened with them).
 *
 * Errors: besides those listed per call, the common transport errors of
 * every call (see the top of this file), and -EINVAL for a NULL argument
 * that is not documented as optional.
 */

/** Most supplementary groups in a struct weir_cred. */
#define WEIR_CRED_MAX_GROUPS 32

/** Credentials sent with requests (the MDS records them as owners of new files). */
struct weir_cred {
	uint32_t cr_uid;
	uint32_t cr_gid;
	uint32_t cr_nr_groups;                    /**< entries of cr_groups used */
	uint32_t cr_groups[WEIR_CRED_MAX_GROUPS]; /**< supplementary groups */
};

/**
 * Set the credentials the calling thread's libweir calls send, on every
 * mount, until changed; NULL returns to each mount's own. For servers that
 * act for many users (weir-fuse sets each request's caller).
 * \param[in] cred  Copied; may be NULL.
 * \return 0, or -EINVAL (cr_nr_groups over WEIR_CRED_MAX_GROUPS).
 * Thread safety: affects only the calling thread (thread-local storage).
 */
int weir_fid_cred_set(const struct weir_cred *cred);

/**
 * The FID of the filesystem's root directory (known since the mount; no RPC).
 * \param[out] root  Caller-owned.
 * \return 0 or -EINVAL.
 */
int weir_fid_getroot(weir_fs_t *fs, weir_fid_t *root);

/**
 * Look up \a name in directory \a dir (one MDS lookup; ".." of the root is
 * the root).
 * \param[out] out  The FID found; may be NULL.
 * \param[out] st   Its attributes (exact size: glimpsed when stale); may be NULL.
 * \return 0, or:
 * \retval -ENOENT        no such name, or \a dir no longer exists.
 * \retval -ENOTDIR       \a dir is not a directory.
 * \retval -EINVAL        \a name contains '/'.
 * \retval -ENAMETOOLONG  \a name is over 255 bytes.
 */
int weir_fid_lookup(weir_fs_t *fs, const weir_fid_t *dir, const char *name, weir_fid_t *out,
		    struct stat *st);

/**
 * Attributes of \a fid, as weir_stat() gives them.
 * \param[out] st  Caller-owned.
 * \return 0, -ENOENT (removed), -EIO (an OST did not answer a glimpse).
 */
int weir_fid_getattr(weir_fs_t *fs, const weir_fid_t *fid, struct stat *st);

/** \name Bits of weir_fid_setattr()'s \a valid. */
/** @{ */
#define WEIR_SETATTR_MODE 0x01u      /**< permission bits from st_mode (type bits ignored) */
#define WEIR_SETATTR_UID 0x02u       /**< st_uid */
#define WEIR_SETATTR_GID 0x04u       /**< st_gid */
#define WEIR_SETATTR_SIZE 0x08u      /**< st_size: truncate or extend (regular files) */
#define WEIR_SETATTR_ATIME 0x10u     /**< st_atim */
#define WEIR_SETATTR_MTIME 0x20u     /**< st_mtim */
#define WEIR_SETATTR_ATIME_NOW 0x40u /**< atime = the MDS's current time (UTIME_NOW) */
#define WEIR_SETATTR_MTIME_NOW 0x80u /**< mtime = the MDS's current time (UTIME_NOW) */
/**
 * Drop S_ISUID, and S_ISGID (when group-exec, or when the caller is not in
 * the file's group), as a write by the caller does (the kernel's
 * file_remove_privs); nothing for root. Allowed to the owner, to a caller
 * with write permission, and while some handle has the file open for
 * writing; else -EPERM. The other fields of \a attr are not used.
 */
#define WEIR_SETATTR_KILL_PRIV 0x100u
#define WEIR_SETATTR_ALL 0x1ffu
/** @} */

/**
 * Change attributes of \a fid: chmod, chown, truncate and utimens in one
 * call. A size change truncates (or extends, leaving a hole) every object on
 * its OST first, then records the size on the MDS, as weir_ftruncate() does;
 * the other changes are one MDS update. ctime becomes the MDS's time.
 * \param[in]  attr   Source of the fields \a valid names; may be NULL when
 *                    \a valid has only the *_NOW bits.
 * \param[in]  valid  WEIR_SETATTR_* bits.
 * \param[out] st     The attributes afterwards; may be NULL.
 * \return 0, or:
 * \retval -ENOENT  \a fid was removed.
 * \retval -EINVAL  unknown bits in \a valid, a negative size, or a size
 *                  change of something other than a regular file.
 * \retval -EISDIR  a size change of a directory.
 * \retval -EFBIG   a size over 2^63-1.
 * \retval -EIO     an OST failed to truncate its object.
 * \retval -EPERM / -EACCES  the caller may not (the MDS's rules, as Linux's:
 *                  the owner or root for mode, owner and explicit times;
 *                  write permission is enough for the *_NOW times and size).
 * Not atomic with respect to a size change: the objects may be truncated
 * when the MDS update then fails.
 */
int weir_fid_setattr(weir_fs_t *fs, const weir_fid_t *fid, const struct stat *attr,
		     unsigned valid, struct stat *st);

/**
 * Open an existing file or directory by FID, as weir_open() opens a path.
 * The handle works with every weir_file_t call and is freed by weir_close().
 * \param[in]  flags  As weir_open(); O_CREAT and O_EXCL are ignored.
 * \param[out] fh     The handle.
 * \return 0, or:
 * \retval -ENOENT      \a fid was removed.
 * \retval -EISDIR      a directory opened for writing.
 * \retval -ENOTDIR     O_DIRECTORY and \a fid is not a directory.
 * \retval -EOPNOTSUPP  neither a regular file nor a directory.
 * \retval -EINVAL      the zero FID, or O_ACCMODE flags that are invalid.
 */
int weir_fid_open(weir_fs_t *fs, const weir_fid_t *fid, int flags, weir_file_t **fh);

/**
 * Create (or, without O_EXCL, open) file \a name in directory \a dir and
 * open it: weir_open() of (dir, name) with O_CREAT added. A new file gets
 * its directory's default layout.
 * \param[in]  flags  As weir_open(); O_CREAT is implied.
 * \param[in]  mode   Permission bits of a created file.
 * \param[out] fh     The handle (its FID: weir_file_fid()).
 * \param[out] st     The file's attributes; may be NULL.
 * \return 0, or:
 * \retval -EEXIST        O_EXCL and \a name exists (also for "." and "..").
 * \retval -EISDIR        \a name is a directory and \a flags ask for writing.
 * \retval -ENOENT        \a dir was removed.
 * \retval -ENOTDIR       \a dir is not a directory.
 * \retval -ENOSPC        no OST to place the file on.
 * \retval -EINVAL / -ENAMETOOLONG  a bad \a name (see weir_fid_lookup()).
 */
int weir_fid_create(weir_fs_t *fs, const weir_fid_t *dir, const char *name, int flags,
		    mode_t mode, weir_file_t **fh, struct stat *st);

/**
 * Make directory \a name in \a dir. It inherits \a dir's default layout.
 * \param[out] out  Its FID; may be NULL.
 * \param[out] st   Its attributes; may be NULL.
 * \return 0, -EEXIST, -ENOENT (\a dir removed), -ENOTDIR, -EINVAL / -ENAMETOOLONG (bad \a name).
 */
int weir_fid_mkdir(weir_fs_t *fs, const weir_fid_t *dir, const char *name, mode_t mode,
		   weir_fid_t *out, struct stat *st);

/**
 * Remove the name \a name (not a directory) from \a dir; the file's objects
 * are destroyed after its last close, as weir_unlink().
 * \return 0, -ENOENT, -EISDIR (a directory, or ".."), -EINVAL ("." or a '/'),
 *         -ENOTDIR (\a dir is not a directory).
 */
int weir_fid_unlink(weir_fs_t *fs, const weir_fid_t *dir, const char *name);

/**
 * Remove the empty directory \a name from \a dir.
 * \return 0, -ENOENT, -ENOTDIR (not a directory), -ENOTEMPTY (also for ".."),
 *         -EINVAL ("."), -EBUSY (the root).
 */
int weir_fid_rmdir(weir_fs_t *fs, const weir_fid_t *dir, const char *name);

/**
 * Rename (\a olddir, \a oldname) to (\a newdir, \a newname) atomically on the
 * MDS (one RPC naming both directory FIDs), replacing the target as
 * weir_rename() does.
 * \param[in] flags  renameat2(2) flags, passed to the MDS as they are:
 *                   0, RENAME_NOREPLACE (1: -EEXIST if the target exists),
 *                   RENAME_EXCHANGE (2: swap the two, both must exist).
 * \return 0, or as weir_rename(), and -EINVAL for unsupported \a flags,
 *         -EEXIST (RENAME_NOREPLACE), -ENOENT (RENAME_EXCHANGE, no target).
 */
int weir_fid_rename(weir_fs_t *fs, const weir_fid_t *olddir, const char *oldname,
		    const weir_fid_t *newdir, const char *newname, unsigned flags);

/**
 * Make every metadata change so far (of \a fid, or of the whole MDT when
 * \a fid is NULL) durable on the MDT's device, like fsync(2) of a directory
 * or syncfs(2). File data is synced with weir_fsync() on a handle.
 * \return 0, or -EIO.
 */
int weir_fid_fsync(weir_fs_t *fs, const weir_fid_t *fid);

/**
 * Open directory \a fid for listing with weir_readdir() (entries "." and
 * ".." first), weir_telldir(), weir_seekdir() and weir_closedir(). Read
 * permission is checked by the first weir_readdir() that asks the MDS (its
 * first page always does; later ones may come from the mount's cache, as
 * for weir_opendir()).
 * When the caller may read but not search the directory, ".." carries the
 * directory's own FID (finding its parent needs search permission).
 * \param[out] dh  The stream.
 * \return 0, -ENOENT (removed), -ENOTDIR.
 */
int weir_fid_opendir(weir_fs_t *fs, const weir_fid_t *fid, weir_dir_t **dh);

/**
 * Open a stream on the directory \a fh is open on, as fdopendir(3): \a fh
 * was opened with O_RDONLY (and O_DIRECTORY, or on a directory), so the
 * MDS checked read permission then, and the stream may list from the
 * mount's cache at once: a directory the cache knows completely (this
 * mount made it, or read it whole under its leases, docs/leases.md) is
 * listed without an MDS call, in the MDS's order and with its cookies.
 * The stream does not own \a fh (close both; either first).
 * \param[out] dh  The stream.
 * \return 0, -EINVAL (NULL), -ENOTDIR (\a fh is not a directory's), -EBADF
 *         (not open for reading), -ENOENT (removed), -ENOMEM.
 * Thread safety: as weir_fid_opendir().
 */
int weir_fdopendir(weir_file_t *fh, weir_dir_t **dh);

/**
 * Make symbolic link \a name in \a dir pointing to \a target (stored as
 * given; resolved by whoever follows it: relative targets from the link's
 * directory, absolute ones from the Weir root).
 * \param[in]  target  1..4095 bytes.
 * \param[out] out     The link's FID; may be NULL.
 * \param[out] st      Its attributes (S_IFLNK, st_size the target's length); may be NULL.
 * \return 0, -EEXIST, -ENOENT (\a dir removed, or an empty \a target),
 *         -ENOTDIR, -ENAMETOOLONG (\a name or \a target too long), -EINVAL.
 */
int weir_fid_symlink(weir_fs_t *fs, const weir_fid_t *dir, const char *name, const char *target,
		     weir_fid_t *out, struct stat *st);

/**
 * The target of symbolic link \a fid, as readlink(2): not NUL-terminated,
 * truncated to \a len bytes.
 * \param[out] buf  Caller-owned, \a len bytes.
 * \return Bytes placed in \a buf, or -ENOENT, -EINVAL (not a symlink).
 */
ssize_t weir_fid_readlink(weir_fs_t *fs, const weir_fid_t *fid, char *buf, size_t len);

/**
 * Make a new name (\a newdir, \a newname) for the existing non-directory
 * \a fid (a hard link); its link count goes up by one.
 * \param[out] st  The object's attributes afterwards; may be NULL.
 * \return 0, -EEXIST, -ENOENT (\a fid or \a newdir removed), -EPERM (a
 *         directory), -EMLINK (too many links), -ENOTDIR, -EINVAL / -ENAMETOOLONG.
 */
int weir_fid_link(weir_fs_t *fs, const weir_fid_t *fid, const weir_fid_t *newdir,
		  const char *newname, struct stat *st);

/**
 * Make a special file, as mknod(2): \a mode is S_IFIFO, S_IFSOCK, S_IFCHR,
 * S_IFBLK or S_IFREG (an empty regular file with the default layout) or'ed
 * with permission bits; \a rdev is the device number of S_IFCHR / S_IFBLK.
 * Weir stores these; it serves no data for FIFOs, sockets or devices (the
 * kernel or the application does).
 * \param[out] out  Its FID; may be NULL.
 * \param[out] st   Its attributes; may be NULL.
 * \return 0, -EEXIST, -ENOENT, -ENOTDIR, -EINVAL (another type), -EPERM
 *         (devices by a non-root caller).
 */
int weir_fid_mknod(weir_fs_t *fs, const weir_fid_t *dir, const char *name, mode_t mode,
		   dev_t rdev, weir_fid_t *out, struct stat *st);

/**
 * The value of extended attribute \a name ("user.x", "trusted.x",
 * "security.x") of \a fid, as getxattr(2).
 * \param[out] buf  Caller-owned, \a len bytes; with \a len 0 only the size is returned.
 * \return The value's size in bytes, or:
 * \retval -ENODATA  no such attribute.
 * \retval -ERANGE   \a len is not 0 and smaller than the value, or \a name over 255 bytes.
 * \retval -EOPNOTSUPP  a namespace other than user., trusted., security.
 */
ssize_t weir_fid_getxattr(weir_fs_t *fs, const weir_fid_t *fid, const char *name, void *buf,
			  size_t len);

/**
 * The names of the extended attributes of \a fid, each NUL-terminated, as
 * listxattr(2) (only those the caller may see).
 * \param[out] buf  Caller-owned, \a len bytes; with \a len 0 only the size is returned.
 * \return The list's size in bytes, or -ERANGE (\a len too small), -ENOENT.
 */
ssize_t weir_fid_listxattr(weir_fs_t *fs, const weir_fid_t *fid, char *buf, size_t len);

/**
 * Set extended attribute \a name of \a fid to \a len bytes of \a value, as
 * setxattr(2).
 * \param[in] flags  0, XATTR_CREATE or XATTR_REPLACE (<sys/xattr.h>).
 * \return 0, or:
 * \retval -EEXIST   XATTR_CREATE and the attribute exists.
 * \retval -ENODATA  XATTR_REPLACE and it does not.
 * \retval -E2BIG    \a len over 64 KiB.
 * \retval -ERANGE   \a name over 255 bytes.
 * \retval -EPERM / -EACCES  the caller may not (trusted.* needs root).
 * \retval -EOPNOTSUPP  an unsupported namespace.
 */
int weir_fid_setxattr(weir_fs_t *fs, const weir_fid_t *fid, const char *name, const void *value,
		      size_t len, int flags);

/**
 * Remove extended attribute \a name of \a fid, as removexattr(2).
 * \return 0, -ENODATA (no such attribute), -ERANGE, -EPERM / -EACCES, -EOPNOTSUPP.
 */
int weir_fid_removexattr(weir_fs_t *fs, const weir_fid_t *fid, const char *name);

/* ------------------------------------------------------------ locks and leases */

/*
 * Locks are kept by the MDS of the file, so they hold across every client
 * of the filesystem. A mount has a session on the MDS with a lease (the
 * MDS's --lease-time, 30 s by default) that libweir renews from a thread
 * every third of it. A mount not heard from for a whole lease (its process
 * died, stopped, or was cut off) is evicted: its locks are released, its
 * open handles closed on the MDS. If that mount is still alive, it notices
 * at its next renewal or lock call and reconnects with a new session
 * automatically: handles opened before the eviction then fail with -EIO
 * (weir_close() still frees them), new opens work. Locks are not recovered
 * across an MDS restart: the mount reconnects with a new session, its
 * handles stay usable, but every lock it held is gone (a blocked lock call
 * fails with -ENOLCK).
 */

/**
 * Byte-range locks, as fcntl(2) with F_SETLK, F_SETLKW, F_GETLK (POSIX
 * "process-associated" locks) and F_OFD_SETLK, F_OFD_SETLKW, F_OFD_GETLK
 * (open file description locks; the F_OFD_* values need _GNU_SOURCE before
 * <fcntl.h>).
 *
 * Owners: a POSIX lock belongs to the calling process (its pid) on this
 * mount, an OFD lock to \a fh. Locks of one owner never conflict with each
 * other: a new lock replaces what the owner held on the range, splitting
 * or trimming older ones, and adjacent or overlapping locks of one type
 * merge (so a read lock can be upgraded to a write lock and back, a range
 * unlocked in the middle, ...). Read locks of different owners share; a
 * write lock excludes every other owner. POSIX and OFD locks conflict with
 * each other; neither interacts with weir_flock() locks.
 * Release: POSIX locks when the process unlocks them or closes ANY handle
 * of the file (POSIX's rule, even a handle that took no lock); OFD locks
 * when unlocked or \a fh is closed; both when the mount ends or is evicted.
 * Two processes of one mount (after fork()) cannot share a weir_fs_t: give
 * each its own mount.
 *
 * \param[in]     fh   An open handle (a directory handle too).
 * \param[in]     cmd  One of the six commands above.
 * \param[in,out] fl   l_type F_RDLCK, F_WRLCK or F_UNLCK (F_UNLCK only to
 *                     set); l_whence SEEK_SET, SEEK_CUR (the handle's
 *                     position) or SEEK_END (the size, glimpsed); l_start;
 *                     l_len (0: to the end of the file, however it grows;
 *                     negative: the l_len bytes before l_start). For the
 *                     OFD commands l_pid must be 0.
 *                     F_GETLK / F_OFD_GETLK: if a lock of another owner
 *                     conflicts with the one described, \a fl is overwritten
 *                     with it (l_whence SEEK_SET, l_len 0 when it runs to the
 *                     end, l_pid the holder's pid as its client sent it, so
 *                     the pid on another node; -1 for an OFD lock); else
 *                     only l_type becomes F_UNLCK.
 * \return 0, or:
 * \retval -EAGAIN    F_SETLK / F_OFD_SETLK: a conflicting lock is held.
 * \retval -EDEADLK   F_SETLKW: waiting would deadlock: the holder waits,
 *                    directly or through other owners and files, for a
 *                    lock this process holds (POSIX locks only, like Linux).
 * \retval -EBADF     a read lock on a handle not open for reading, or a
 *                    write lock on one not open for writing.
 * \retval -EINVAL    bad \a cmd, l_type, l_whence, a range starting before
 *                    0, F_UNLCK with a GETLK command, l_pid not 0 with an
 *                    OFD command, NULL argument.
 * \retval -EOVERFLOW l_start + l_len overflows a file offset.
 * \retval -EIO       \a fh was opened before this mount was evicted, or
 *                    (a file of an MDT other than MDT0, whose locks are not
 *                    replayed) before that MDT restarted.
 * \retval -ENOLCK    the session was lost while waiting (MDS restart), or
 *                    the MDS is out of memory.
 * Blocking: F_SETLKW / F_OFD_SETLKW wait as long as the conflict lasts;
 * requests waiting on one file are granted in arrival order as they become
 * compatible. The wait is not interrupted by signals, only by weir_cancel()
 * (-EINTR, see there). A lost connection to the MDS is retried for up to a lease plus rpc_timeout_ms, then its error
 * (-ECONNRESET, -ETIMEDOUT, ...) is returned.
 * Thread safety: any thread, any handle, at once.
 */
int weir_fcntl_lock(weir_file_t *fh, int cmd, struct flock *fl);

/**
 * POSIX byte-range locks (F_SETLK, F_SETLKW, F_GETLK) held by an owner the
 * caller names instead of the calling process: for a daemon that locks on
 * behalf of others, as weir-fuse does with the kernel's lock owner of each
 * request (a process's file table), so that fcntl locks taken through
 * different FUSE mounts exclude each other cluster-wide.
 * Everything is as weir_fcntl_lock() with a POSIX command (merging, splitting,
 * conflicts with other owners' POSIX and OFD locks, waiting, -EDEADLK
 * across owners, cancelling), except:
 *  - the owner is (this mount, \a owner); two owners that differ only in
 *    bit 63 are the same owner. weir_fcntl_lock()'s process owners are
 *    others.
 *  - the lock's pid (reported by F_GETLK, here and on other nodes) is
 *    \a fl->l_pid as given (the process the daemon acts for).
 *  - closing a handle does not release the owner's locks: the caller does,
 *    with weir_lock_owner_release() (a FUSE daemon at FLUSH, which the
 *    kernel sends at every close(2), with the closer's lock owner). The
 *    mount's end and an eviction release them as all locks.
 *  - an MDS restart: they are replayed with the others (README "Recovery").
 * \param[in]     fh     An open handle of the file (a directory's too); read
 *                       locks need it open for reading, write locks for writing.
 * \param[in]     cmd    F_SETLK, F_SETLKW or F_GETLK.
 * \param[in,out] fl     As weir_fcntl_lock(); l_pid is the holder's pid (any value).
 * \param[in]     owner  The owner, not 0 (any 64-bit id the caller keeps unique).
 * \return as weir_fcntl_lock(); -EINVAL also for \a owner 0 or another \a cmd.
 * Thread safety: as weir_fcntl_lock().
 */
int weir_fcntl_lock_owner(weir_file_t *fh, int cmd, struct flock *fl, uint64_t owner);

/**
 * Release every POSIX lock that \a owner (weir_fcntl_lock_owner()) holds on
 * \a fh's file, whatever handle it took them through: POSIX's rule that any
 * close of a file by a process drops the process's locks on it. Sends
 * nothing to the MDS when this mount has no lock of \a owner on the file
 * (its record of the MDS's grants), so calling it at every close is cheap.
 * A lock request of \a owner still in flight meanwhile may be granted after
 * it (the kernel's own close has the same race).
 * \return 0, or -EINVAL (NULL \a fh, \a owner 0), -EIO (\a fh opened
 *         before this mount was evicted: its locks are gone), and the MDS
 *         errors of weir_fcntl_lock() (-ETIMEDOUT, -EINTR, ...).
 * Thread safety: any thread, any handle, at once.
 */
int weir_lock_owner_release(weir_file_t *fh, uint64_t owner);

/**
 * Whole-file advisory locks, as flock(2): \a op is LOCK_SH (shared),
 * LOCK_EX (exclusive) or LOCK_UN (unlock), LOCK_SH and LOCK_EX optionally
 * or'ed with LOCK_NB (from <sys/file.h>). The lock belongs to \a fh: another
 * handle, in this process or any other, conflicts with it; it goes when
 * unlocked, when \a fh is closed, or when the mount ends or is evicted.
 * Converting (LOCK_SH to LOCK_EX or back) first releases the lock held and
 * then takes the new one, as Linux does: it is not atomic, and on
 * -EWOULDBLOCK no lock is held any more. Independent of weir_fcntl_lock().
 * Handles need not be open for reading or writing.
 * \return 0, or:
 * \retval -EWOULDBLOCK  LOCK_NB and another handle holds a conflicting lock.
 * \retval -EINVAL       \a op is not one of the above.
 * \retval -EIO          \a fh was opened before this mount was evicted.
 * \retval -ENOLCK       the session was lost while waiting (MDS restart).
 * Blocking and thread safety as weir_fcntl_lock().
 */
int weir_flock(weir_file_t *fh, int op);

/* ------------------------------------------------------------ metadata cache */

/*
 * Metadata cache. When the MDS grants metadata leases (weir-mds
 * --md-leases, on by default), a mount keeps what the MDS leased it: the
 * attributes of the files and directories it looked up or stat'ed by FID
 * (weir_fid_getattr(), weir_fid_lookup()), and, with
 * weir_mount_opts.wmo_md_cache, the names it looked up in a directory and
 * the names it found absent. The MDS calls a lease back before any change
 * that would make it wrong completes, from any client: when a call that
 * changed something returns, no mount still caches what it changed, and
 * the next call anywhere sees the change. A thread of the mount
 * ("weir-mdl") keeps a long poll at the MDS for the callbacks. Files open
 * for writing somewhere, and files released to S3, are not cached (their
 * sizes are the OSTs'). Without contact with the MDS for most of a lease,
 * and after an eviction or an MDS restart, the cache is dropped.
 * weir_stat(), weir_lstat() and weir_fstatat() of a path resolve it in the
 * cache (unless wmo_md_no_paths): the MDS's answer to the first call lists
 * the directories it searched, leased, and proves that the calling
 * thread's credentials may search them; later calls with the same
 * credentials walk the cached names without the MDS until a lease on the
 * way is called back. Symlinks to follow, "." and ".." go to the MDS. A
 * mount holds leases until weir_umount(): a process that ends without it
 * holds other clients' changes of what it leased until the MDS evicts its
 * session (a lease time). WEIR_MD_CACHE=0 turns the cache off.
 */

/**
 * Called by the mount's callback thread for each lease the MDS calls back,
 * before the mount acknowledges it: \a fid and the lease bits it had (1:
 * the names of a directory, 2: attributes, 4: the layout). Must not wait
 * for a call of this mount to the MDS (it holds the acknowledgement, and
 * with it the change some client waits for). weir-fuse tells the kernel
 * to forget the inode's attributes and cached pages.
 */
typedef void (*weir_md_inval_fn)(void *arg, const weir_fid_t *fid, unsigned bits);

/**
 * Set (\a fn NULL: clear) the callback hook of \a fs.
 * \return 0, -EINVAL (NULL \a fs), -EOPNOTSUPP (no metadata cache on this mount).
 * Thread safety: any thread; the hook runs on the callback thread.
 */
int weir_md_inval_set(weir_fs_t *fs, weir_md_inval_fn fn, void *arg);

/**
 * The lease bits \a fs holds on \a fid now (0: none): what a FUSE daemon
 * may tell the kernel to keep (attributes with 2).
 * \param[out] valid_ms  (may be NULL) how long, in ms, the mount may trust
 *                       its leases without hearing from the MDS again: a
 *                       daemon gives the kernel no longer a timeout (a
 *                       callback comes before any change; this bounds what
 *                       a mount cut off from the MDS keeps).
 * Thread safety: any.
 */
unsigned weir_md_leased(weir_fs_t *fs, const weir_fid_t *fid, uint32_t *valid_ms);

/**
 * Whether \a fs caches \a name of directory \a dir under the MDS's lease
 * on the directory's names (only with weir_mount_opts.wmo_md_cache): what
 * a FUSE daemon may let the kernel keep as a name (or as "no such name").
 * A name is cached when a lookup by the mount asked the MDS under the
 * lease, and when the mount itself created or removed it (its own change
 * does not end its lease). Counts no hit or miss.
 * \param[out] fid       the FID the name leads to; all zero: no such name.
 * \param[out] valid_ms  (may be NULL) as weir_md_leased().
 * \return 1 cached (\a fid set), 0 not cached (or NULL arguments).
 * Thread safety: any.
 */
int weir_md_name_leased(weir_fs_t *fs, const weir_fid_t *dir, const char *name, weir_fid_t *fid,
			uint32_t *valid_ms);

/** Counters of the metadata cache (weir_md_stats()). */
struct weir_md_stats {
	uint32_t wms_enabled;	/**< 1: the mount caches (the MDS grants leases) */
	uint64_t wms_hits;	/**< lookups and getattrs answered from the cache */
	uint64_t wms_misses;	/**< ... that asked the MDS */
	uint64_t wms_callbacks; /**< leases the MDS called back */
	uint64_t wms_polls;	/**< callback polls answered */
	uint64_t wms_entries;	/**< FIDs cached now */
	uint64_t wms_names;	/**< names cached now (absent ones too) */
	uint64_t wms_listings;	/**< directory listings (or their rest) served from the cache */
};

/** Fill \a st. \return 0 or -EINVAL. Thread safety: any. */
int weir_md_stats(weir_fs_t *fs, struct weir_md_stats *st);

/* ------------------------------------------------------------ cancelling a wait */

/** A thread's cancel point (weir_cancel_arm()). */
typedef struct weir_cancel weir_cancel_t;

/**
 * Make the waits of the calling thread cancellable from another thread,
 * until weir_cancel_disarm(): what a FUSE daemon needs for FUSE_INTERRUPT,
 * or an application for a timeout. The waits that end at weir_cancel():
 * the lock waits (weir_flock() without LOCK_NB, weir_fcntl_lock() with
 * F_SETLKW or F_OFD_SETLKW, the lock an O_APPEND weir_write() takes) and the
 * restore waits of released files (see "HSM"). A cancelled call returns
 * -EINTR and leaves no lock behind: its request leaves the MDS's queue, and
 * a grant that crossed the cancel is released again (as an unlock of the
 * range asked for: a POSIX or OFD lock the owner held on that range before
 * is released too; a flock conversion had dropped the old lock already, as
 * on Linux). A call made while cancelled returns -EINTR before it waits.
 * Arming again resets the point.
 * \return the thread's cancel point, for weir_cancel(); NULL when out of
 *         memory (the waits are then not cancellable).
 * Thread safety: per thread (each thread has its own point).
 */
weir_cancel_t *weir_cancel_arm(void);

/**
 * End the cancellable stretch of the calling thread (weir_cancel_arm()).
 * \return true when weir_cancel() was called since the arm.
 * Call weir_cancel() on the point no more after this (a FUSE daemon:
 * unregister its interrupt callback first).
 */
bool weir_cancel_disarm(void);

/**
 * Cancel the current and later waits of the thread that armed \a c (until
 * it disarms); a no-op when it is not armed. May send one MDS request (a
 * lock request waiting there is dropped from its queue), so it may take up
 * to rpc_timeout_ms. The mount of that wait must stay mounted meanwhile.
 * Thread safety: any thread, while \a c is armed.
 */
void weir_cancel(weir_cancel_t *c);

/* ------------------------------------------------------------ HSM: the S3 tier */

/*
 * Hierarchical storage management, in Lustre's shape. A data repository
 * association (DRA) ties a directory tree to s3://bucket/prefix. Files under
 * it can be archived (copied to their S3 key by a copytool agent,
 * weir-hsmd), released (their OST objects freed; name, size, attributes and
 * layout kept) and restored (copied back from S3, on access or ahead of
 * time). The MDS is the coordinator: it keeps each file's HSM state and the
 * queue of actions; agents do the copying.
 *
 * Reading a released file: weir_pread() (and every read path built on it)
 * first asks the MDS whether the range it reads is restored; when it is not,
 * the MDS queues a restore (one per file, however many readers wait) and
 * the reader polls with backoff (1 ms doubling to 100 ms) until its range
 * is ready, then reads it. Only the range read is waited for. Writing,
 * weir_fallocate() and a truncate to a non-zero size of a released file
 * first wait for the whole file. An open with O_TRUNC or a truncate to 0
 * needs no data: the file becomes empty at once (the MDS may ask libweir to
 * retry for a moment while the released objects are still being destroyed;
 * this is done with backoff, 10 ms to 200 ms, for up to 60 s, then -EAGAIN).
 * Such waits end with:
 *   -EIO        the restore failed for good (the S3 copy is lost, changed
 *               behind Weir's back, or the restore failed 5 times);
 *   -ETIMEDOUT  the environment variable WEIR_RESTORE_TIMEOUT (seconds,
 *               read at each wait; default 0: no limit, the MDS reports
 *               failures) ran out; a WARN log line names the file.
 *   -EACCES     the caller may not read the file (restores need read
 *               permission, also before a write);
 *   a transport error, when the MDS stays unreachable for 60 s in a row
 *               (shorter outages, e.g. an MDS restart, are waited out);
 *   -EINTR      weir_cancel() of the waiting thread (weir_cancel_arm()).
 * A released file reports its MDS size and st_blocks 0 in weir_stat() and
 * weir_fstat(); SEEK_DATA / SEEK_HOLE see it as all data (no holes).
 *
 * Calls of this section besides those above: the common errors (top of
 * this file), -EINVAL for a NULL argument not documented as optional, and
 * -EOPNOTSUPP or -EPROTO when the MDS does not serve HSM requests.
 * Thread safety: every call here may run on any thread at any time; the
 * structures they fill are the caller's.
 */

/** weir_hsm_state.hs_flags bits (the words of `lfs hsm_state`). */
#define WEIR_HS_EXISTS   0x1  /**< an archive copy exists in S3 */
#define WEIR_HS_DIRTY    0x2  /**< modified since the archive copy was made */
#define WEIR_HS_RELEASED 0x4  /**< OST objects freed: restored on access */
#define WEIR_HS_ARCHIVED 0x8  /**< the archive copy is complete, verified and current */
#define WEIR_HS_LOST     0x10 /**< the archive copy is gone or changed in S3: reads fail -EIO */
#define WEIR_HS_IMPORTED 0x20 /**< created by an import, never modified in Weir */

/** HSM actions. */
enum weir_hsm_action {
	WEIR_HSM_ARCHIVE = 1, /**< copy the file to its S3 key (queued for an agent) */
	WEIR_HSM_RESTORE = 2, /**< copy the S3 object back (queued for an agent) */
	WEIR_HSM_RELEASE = 3, /**< free the OST objects (done by the MDS at once) */
};

/** States of a queued action (weir_hsm_action_info.hai_state). */
#define WEIR_HSM_WAITING 0 /**< queued, no agent has it */
#define WEIR_HSM_RUNNING 1 /**< an agent works on it */
#define WEIR_HSM_DONE    2
#define WEIR_HSM_FAILED  3 /**< hai_rc says why */

/** A file's HSM state (weir_hsm_state_get()). Strings are NUL-terminated. */
struct weir_hsm_state {
	weir_fid_t hs_fid;
	uint32_t hs_flags;            /**< WEIR_HS_* bits; 0: never archived */
	uint32_t hs_dra;              /**< its association's id; 0: not under one */
	char hs_bucket[64];           /**< "" when not under an association */
	char hs_key[1025];            /**< the archive copy's S3 key; "" none */
	char hs_etag[130];            /**< its ETag as S3 gives it (quotes included) */
	uint64_t hs_data_version;     /**< changes at every open for writing and truncate */
	uint64_t hs_archived_version; /**< the data version the archive copy holds */
	uint64_t hs_size;             /**< bytes */
	uint64_t hs_restored;         /**< a released file under restore: bytes restored so far */
	int64_t hs_archived_ns;       /**< when the copy was made (imports: the object's
				       *   LastModified), ns since the epoch */
	uint64_t hs_action_id;        /**< a pending or running action on the file; 0 none */
	uint32_t hs_action;           /**< its enum weir_hsm_action */
};

/**
 * The HSM state of a file by path (symlinks followed), like `lfs hsm_state`.
 * \param[out] st  Caller-owned; filled entirely.
 * \return 0, the path errors, -EACCES (no search permission on the path),
 *         or -EOPNOTSUPP / -EPROTO (an MDS without HSM).
 */
int weir_hsm_state_get(weir_fs_t *fs, const char *path, struct weir_hsm_state *st);

/**
 * The HSM state of a file by FID.
 * \param[out] st  Caller-owned; filled entirely.
 * \return 0, -ENOENT (\a fid was removed), -EINVAL (NULL or the zero FID),
 *         -EOPNOTSUPP / -EPROTO (an MDS without HSM).
 */
int weir_hsm_state_fid(weir_fs_t *fs, const weir_fid_t *fid, struct weir_hsm_state *st);

/** Most FIDs in one weir_hsm_request(). */
#define WEIR_HSM_REQUEST_MAX 4096

/**
 * Ask for an action on each of \a n files. WEIR_HSM_ARCHIVE and
 * WEIR_HSM_RESTORE are queued for the agents (an action already queued on
 * a file is shared) and this returns at once: follow them with
 * weir_hsm_queue_get() or weir_hsm_state_fid(). WEIR_HSM_RELEASE is done by
 * the MDS before this returns.
 * Archive and release need the file's owner or root, restore read permission.
 * \param[in]  fids  \a n FIDs of regular files, 1 <= \a n <= WEIR_HSM_REQUEST_MAX.
 * \param[out] ids   \a n entries, caller-owned; may be NULL: ids[i] gets the
 *                   action queued for fids[i] (0 when nothing was queued,
 *                   always for a release).
 * \param[out] rcs   \a n entries, caller-owned; may be NULL: rcs[i] gets 0 or
 *                   the error for fids[i]:
 *                   -EINVAL     not a regular file, or not under an association;
 *                   -EBUSY      open for writing (release: open at all);
 *                   -ENODATA    release without a current verified archive copy
 *                               (never archived, dirty, or lost);
 *                   -EALREADY   archive of a clean archived file, release of a
 *                               released one, restore of a present one;
 *                   -ENOENT     removed; -EPERM / -EACCES: not allowed.
 * \return 0 when the request was processed (look at \a rcs), or the error of
 *         the call itself: -EINVAL (bad \a act, \a n 0 or over the maximum,
 *         NULL \a fids), -EOPNOTSUPP / -EPROTO (an MDS without HSM).
 */
int weir_hsm_request(weir_fs_t *fs, enum weir_hsm_action act, const weir_fid_t *fids, size_t n,
		     uint64_t *ids, int *rcs);

/** One queued (or recently finished) action. */
struct weir_hsm_action_info {
	uint64_t hai_id;
	uint32_t hai_action;          /**< enum weir_hsm_action */
	weir_fid_t hai_fid;
	uint32_t hai_state;           /**< WEIR_HSM_WAITING, _RUNNING, _DONE, _FAILED */
	int hai_rc;                   /**< WEIR_HSM_FAILED: a negative errno */
	uint64_t hai_bytes_total;     /**< bytes to move */
	uint64_t hai_bytes_done;      /**< bytes moved so far */
	char hai_agent[64];           /**< the agent running it ("" none), NUL-terminated */
	int64_t hai_queued_ns;        /**< when it was queued, ns since the epoch */
	char hai_key[1025];           /**< its S3 key, NUL-terminated */
};

/** The coordinator's queue and counters (weir_hsm_queue_get()). */
struct weir_hsm_queue {
	struct weir_hsm_action_info *hq_actions; /**< hq_nr entries */
	size_t hq_nr;
	uint64_t hq_backlog_bytes;  /**< bytes of every waiting or running action not yet moved */
	uint64_t hq_archived_bytes; /**< since the MDS started */
	uint64_t hq_restored_bytes; /**< since the MDS started */
	uint64_t hq_archive_bps;    /**< bytes/s over the last 10 s */
	uint64_t hq_restore_bps;    /**< bytes/s over the last 10 s */
	uint64_t hq_done;           /**< actions finished since the MDS started */
	uint64_t hq_failed;         /**< actions failed since the MDS started */
	uint32_t hq_agents;         /**< agents heard from in the last 10 s */
	uint32_t hq_waiting;        /**< actions waiting */
	uint32_t hq_running;        /**< actions running */
};

/**
 * The coordinator's queue, like `lfs hsm_action` plus throughput figures.
 * \param[in]  ids   Only these actions (pending or recently finished; those
 *                   the MDS no longer knows are left out); NULL or \a nids
 *                   0: every pending action.
 * \param[out] out   A new queue, owned by the caller: free it with
 *                   weir_hsm_queue_free().
 * \return 0, -EINVAL (NULL \a out, or \a ids NULL with \a nids > 0), -ENOMEM,
 *         -EOPNOTSUPP / -EPROTO (an MDS without HSM).
 */
int weir_hsm_queue_get(weir_fs_t *fs, const uint64_t *ids, size_t nids,
		       struct weir_hsm_queue **out);

/** Free a queue from weir_hsm_queue_get(). Accepts NULL. */
void weir_hsm_queue_free(struct weir_hsm_queue *q);

/** weir_dra.dra_flags bits. */
#define WEIR_DRA_AUTO_EXPORT 0x1 /**< files closed after writing are queued for archive */
#define WEIR_DRA_REIMPORT    0x2 /**< an imported, never-modified file whose object changed in
				  *   S3 is imported again (else it is marked lost: -EIO) */

/** A data repository association. Strings are NUL-terminated. */
struct weir_dra {
	uint32_t dra_id;          /**< >= 1 */
	weir_fid_t dra_root;      /**< the associated directory */
	char dra_path[4096];      /**< its path when the association was made (for display) */
	char dra_bucket[64];
	char dra_prefix[1025];    /**< "" or ending in '/': a file's key is prefix + its path
				   *   below the root (at archive time) */
	uint32_t dra_flags;       /**< WEIR_DRA_* bits */
	int64_t dra_created_ns;   /**< ns since the epoch */
};

/**
 * Associate directory \a path with s3://\a bucket/\a prefix. Root only.
 * \param[in]  bucket  S3 bucket name, 3..63 bytes.
 * \param[in]  prefix  Key prefix, "" or NULL for none; a '/' is appended
 *                     unless it ends with one; at most 1024 bytes.
 * \param[in]  flags   WEIR_DRA_* bits.
 * \param[out] out     The association made; may be NULL. Caller-owned.
 * \return 0, the path errors, or:
 * \retval -EPERM    the caller is not root.
 * \retval -ENOTDIR  \a path is not a directory.
 * \retval -EEXIST   \a path is already an association's root, or another
 *                   association on \a bucket has an overlapping prefix (one a
 *                   prefix of the other; an empty prefix covers the bucket).
 * \retval -EBUSY    \a path is inside, or contains, another association.
 * \retval -EINVAL   a bad bucket name (3..63 of [a-z0-9.-], alphanumeric at
 *                   both ends), a prefix starting with '/' or too long, bad flags.
 * \retval -ENOSPC   the filesystem has 256 associations already.
 * \retval -EOPNOTSUPP / -EPROTO  an MDS without HSM.
 */
int weir_dra_create(weir_fs_t *fs, const char *path, const char *bucket, const char *prefix,
		    unsigned flags, struct weir_dra *out);

/**
 * Every association of the filesystem.
 * \param[out] out  A new array of *\a nr entries (NULL when there are none),
 *                  owned by the caller: release it with free().
 * \param[out] nr   Entries in *\a out.
 * \return 0, -ENOMEM, -EOPNOTSUPP / -EPROTO (an MDS without HSM).
 */
int weir_dra_list(weir_fs_t *fs, struct weir_dra **out, size_t *nr);

/**
 * Remove the association of directory \a path (its root). Root only. The
 * files stay as they are (released files stay released and are restored
 * on access only while the S3 copies remain); the S3 objects are kept.
 * \return 0, the path errors, -EINVAL (\a path is no association's root),
 *         -EPERM (not root), -EOPNOTSUPP / -EPROTO (an MDS without HSM).
 */
int weir_dra_delete(weir_fs_t *fs, const char *path);

/** One object of a bucket listing, for weir_hsm_import(). */
struct weir_hsm_import_ent {
	const char *hie_name;   /**< entry name in the directory (one component) */
	uint64_t hie_size;      /**< bytes */
	int64_t hie_mtime_ns;   /**< the object's LastModified, ns since the epoch */
	const char *hie_etag;   /**< as S3 gives it, quotes included */
	const char *hie_key;    /**< the full S3 key */
	bool hie_deleted;       /**< the object is gone from the bucket: remove the entry if
				 *   it is an imported, clean, closed file */
};

/** Most entries in one weir_hsm_import(). */
#define WEIR_HSM_IMPORT_MAX 1024

/** weir_hsm_import() per-entry results (>= 0; errors are negative errno). */
#define WEIR_HIR_CREATED   0 /**< a new released file */
#define WEIR_HIR_UPDATED   1 /**< an imported file whose object changed: new size/mtime/ETag */
#define WEIR_HIR_UNCHANGED 2 /**< same ETag */
#define WEIR_HIR_REMOVED   3 /**< hie_deleted and the entry was removed */
#define WEIR_HIR_KEPT      4 /**< deleted or changed in S3 but modified or open in Weir:
			      *   left alone (logged by the MDS) */

/**
 * Create, update or remove released files in directory \a dir from a bucket
 * listing, without copying data (the files are restored on access). New
 * files are owned by root, mode 0644, with \a dir's default layout. Root
 * only. Directories are made with weir_fid_mkdir() (or weir_mkdir()).
 * \param[in]  dra      The association (weir_dra.dra_id) \a dir is in.
 * \param[in]  dir      An existing directory inside that association's tree.
 * \param[in]  ents     \a n entries, 1 <= \a n <= WEIR_HSM_IMPORT_MAX.
 * \param[out] results  \a n entries, caller-owned; may be NULL: a WEIR_HIR_*
 *                      value per entry, or a negative errno (-EEXIST: a
 *                      non-file is in the way; -EINVAL / -ENAMETOOLONG: a bad
 *                      name, or an empty ETag on an entry that is not
 *                      hie_deleted -- the ETag is what every restore checks).
 * \return 0 (look at \a results), or:
 * \retval -EINVAL   \a n 0 or over WEIR_HSM_IMPORT_MAX, a NULL string in an
 *                   entry, \a dir outside association \a dra.
 * \retval -ENOENT   no association \a dra, or \a dir was removed.
 * \retval -ENOTDIR  \a dir is not a directory.
 * \retval -EPERM    the caller is not root.
 * \retval -EOPNOTSUPP / -EPROTO  an MDS without HSM.
 */
int weir_hsm_import(weir_fs_t *fs, uint32_t dra, const weir_fid_t *dir,
		    const struct weir_hsm_import_ent *ents, size_t n, int *results);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_WEIR_H */
