/*
 * mds/mds.h - the metadata server: interface.
 *
 * Two layers, both usable in-process (the unit tests call the namespace
 * directly; integration tests run the daemon):
 *  - struct mds_ns: one MDT's namespace on RocksDB (mds_ns_*), no network;
 *  - struct mds: the server (RPC dispatch, cluster map, group commit,
 *    destroy queue) around one mds_ns (mds_start / mds_stop).
 * All mds_ns_* calls are thread-safe: mutations are serialised by the
 * namespace lock (docs/lock-ordering.md), reads share it.
 */
#ifndef WEIR_MDS_H
#define WEIR_MDS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/fid.h"
#include "common/layout.h"

struct mds_ns;
struct mds;

/** Inode attributes as the MDT keeps them (disk record: mds/inode.c). */
struct mds_inode {
	struct weir_fid in_fid;
	uint32_t in_mode;   /* st_mode */
	uint32_t in_uid;
	uint32_t in_gid;
	uint32_t in_nlink;
	uint32_t in_flags;  /* MDS_INODE_F_* */
	uint64_t in_size;   /* bytes, last known */
	uint64_t in_blocks; /* 512-byte blocks, last known */
	int64_t in_atime_ns;
	int64_t in_mtime_ns;
	int64_t in_ctime_ns;
	struct weir_fid in_parent; /* directories: the parent (for ".." and rename checks) */
	uint64_t in_rdev;          /* character and block devices: the device number */
	bool in_has_layout;        /* files: always; directories: a default is set */
	struct weir_layout in_layout;
};

/** Some client has (or may have had, before a restart) the file open for writing. */
#define MDS_INODE_F_SIZE_STALE 0x1u
/** HSM: the file has an HSM record (CF hsm 'S', mds/hsm.c). */
#define MDS_INODE_F_HSM 0x2u
/** HSM: the file's data is in S3 only (objects freed, or never written: imported). */
#define MDS_INODE_F_RELEASED 0x4u
/**
 * Never stored: set in mds_ns_open_file()'s \a out when its O_TRUNC dropped
 * a size, blocks or a stale size the objects may still hold. The opener then
 * truncates the objects and sets the size to 0 again (mds_ns_setattr), so the
 * truncate is ordered after the objects' as a setattr's is.
 */
#define MDS_INODE_F_TRUNCATED 0x80000000u

/** Filesystem-wide defaults for new files. */
struct mds_ns_conf {
	const char *nc_path;          /* MDT directory (the RocksDB database) */
	uint32_t nc_def_stripe_count; /* objects per new file, default 1 */
	uint32_t nc_def_stripe_size;  /* bytes, default 1 MiB */
	uint32_t nc_mdt_index;        /* this MDT's index (0 .. WEIR_MDT_MAX - 1); kept in the
				       * MDT at format and checked at every later open: a
				       * mismatch fails the open with -EINVAL */
	bool nc_root_owner_set;       /* a new MDT's root gets the owner below (--root-owner) */
	uint32_t nc_root_uid, nc_root_gid, nc_root_mode; /* mode: permission bits */
	bool nc_pdirops_off;          /* every namespace change alone (--pdirops 0) */
};

/**
 * Open (creating on first use) the MDT at nc_path: RocksDB with the column
 * families of DESIGN.md, the root directory, the FID sequence. Orphans left
 * by a previous run (open-unlinked files) are moved to the destroy queue.
 * \return 0, -EIO (RocksDB refused: the message is logged), -ENOMEM.
 */
int mds_ns_open(const struct mds_ns_conf *conf, struct mds_ns **out);
/** Close; every write so far is synced first. Accepts NULL. */
void mds_ns_close(struct mds_ns *ns);

/* ------------------------------------------------------------ credentials and permissions */

/** Most supplementary groups a request carries (the rest are ignored). */
#define MDS_CRED_MAX_GROUPS 64

/**
 * Who is asking: the wire's Cred after root squash (mds/svc.c). Every
 * mds_ns_* call that takes one checks POSIX permissions against it; a NULL
 * cred is the MDS itself (uid 0, gid 0, every check passes as for root).
 */
struct mds_cred {
	uint32_t cr_uid;
	uint32_t cr_gid;
	uint32_t cr_nr_groups;
	uint32_t cr_groups[MDS_CRED_MAX_GROUPS];
};

/** Permission bits asked of mds_perm_check() (the kernel's MAY_*). */
#define MDS_MAY_EXEC 0x1
#define MDS_MAY_WRITE 0x2
#define MDS_MAY_READ 0x4

/** Path flags (the wire's PathFlag bits). */
#define MDS_AT_NOFOLLOW 0x1u /* do not follow a symlink in the last component */
#define MDS_AT_FOLLOW 0x2u   /* link(): follow a symlink in the last component of the source */

/** Symlinks followed in one path walk before -ELOOP (Linux's MAXSYMLINKS). */
#define MDS_MAX_SYMLINKS 40
/** Longest symlink target, bytes (PATH_MAX - 1). */
#define MDS_SYMLINK_MAX 4095
/** Most links to one inode (ext4's EXT4_LINK_MAX). */
#define MDS_LINK_MAX 65000

/*
 * Paths. Every call taking (\a at, \a path) resolves \a path from directory
 * \a at when it is relative (from the root when \a at is NULL or the zero
 * FID), from the root when absolute. "." and ".." work everywhere ("/.." is
 * "/"). Symlinks are followed in every component but the last; the last is
 * followed or not as each call says. Every directory walked through needs
 * search (x) permission. Errors of every path walk: -ENOENT, -ENOTDIR,
 * -ENAMETOOLONG (a name over 255 bytes, a path over 4095), -EACCES (no
 * search permission), -ELOOP (over MDS_MAX_SYMLINKS symlinks), -EINVAL
 * (NULL path), -EIO (a corrupt record).
 */

/**
 * Resolve a path to its inode (stat; lstat with MDS_AT_NOFOLLOW in \a flags).
 * A trailing '/' follows a symlink and requires a directory (-ENOTDIR).
 */
int mds_ns_lookup(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		  const char *path, uint32_t flags, struct mds_inode *out);
struct ns_walk;
/**
 * mds_ns_lookup() that says where a walk crossing to another MDT goes on
 * (docs/dne.md, step 2: MDS_LOOKUP with PF_REDIRECT).
 * \param[out] redir  set when the walk reached another MDT's FID
 * \param[out] rest   then the rest of the path from \a redir ("" for
 *                    \a redir itself; malloc'd, the caller frees it);
 *                    NULL when the path resolved on this MDT into \a out
 * \param[out] walk   NULL, or as mds_ns_lookup_walk()'s (caller-allocated):
 *                    after a redirect, its last step is the name of this
 *                    MDT that holds \a redir (a remote directory), unless
 *                    the walk crossed otherwise (walk->w_broken)
 * \return 0 (resolved, or a redirect), or mds_ns_lookup()'s errors.
 * Thread-safe (ns_lock for reading).
 */
int mds_ns_lookup_redirect(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
			   const char *path, uint32_t flags, struct mds_inode *out,
			   struct weir_fid *redir, char **rest, struct ns_walk *walk);
/**
 * mds_ns_lookup(), also filling \a walk (allocated by the caller; see
 * mds_int.h) with each directory searched and the name found in it, unless
 * the walk followed a symlink or met "." or ".." (walk->w_broken).
 */
int mds_ns_lookup_walk(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		       const char *path, uint32_t flags, struct mds_inode *out,
		       struct ns_walk *walk);
/** Attributes by FID. -ENOENT (also -ESTALE never: an unknown FID is -ENOENT). */
int mds_ns_getattr(struct mds_ns *ns, const struct weir_fid *fid, struct mds_inode *out);

/**
 * access(2): \a mode is F_OK (0) or R_OK|W_OK|X_OK. Root passes every check
 * except X_OK on a non-directory without any x bit. \a flags: MDS_AT_NOFOLLOW.
 * \return 0, -EACCES, -EINVAL (bad mode), and the path errors.
 */
int mds_ns_access(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		  const char *path, uint32_t mode, uint32_t flags);

/** Set-attribute request: MDS_SA_* bits say which fields apply. */
struct mds_setattr {
	uint32_t sa_valid;
	uint32_t sa_mode;
	uint32_t sa_uid;
	uint32_t sa_gid;
	uint64_t sa_size;
	int64_t sa_atime_ns;
	int64_t sa_mtime_ns;
};
#define MDS_SA_MODE 0x1u
#define MDS_SA_UID 0x2u
#define MDS_SA_GID 0x4u
#define MDS_SA_SIZE 0x8u
#define MDS_SA_ATIME 0x10u      /* atime = sa_atime_ns (explicit: owner or root only) */
#define MDS_SA_MTIME 0x20u      /* mtime = sa_mtime_ns (explicit: owner or root only) */
#define MDS_SA_ATIME_NOW 0x80u  /* atime = the MDS's clock */
#define MDS_SA_MTIME_NOW 0x100u /* mtime = the MDS's clock */
#define MDS_SA_KILL_SUID 0x200u /* a write: drop S_ISUID, and S_ISGID (mds_perm_kill_bits),
				 * unless the caller is root (file_remove_privs); by the
				 * owner, a caller with write permission, or while the file
				 * is open for writing, else -EPERM */
#define MDS_SA_CHOWN 0x400u     /* a chown(2), even with neither UID nor GID: ctime,
				 * S_ISUID and S_ISGID (mds_perm_kill_bits) dropped on
				 * non-directories */

/**
 * setattr: chmod, chown, utimensat, truncate, with the kernel's rules:
 * chmod only by the owner or root (S_ISGID dropped when a non-root caller is
 * not in the file's group); chown only by root, except that the owner may
 * set the group to one of its groups; explicit times only by the owner or
 * root, "now" for both times also by anyone with write permission; both
 * "now" bits without explicit times is the touch case. ctime becomes now.
 * SIZE (the caller holds a handle open for writing; no permission check
 * here) sets mtime too and drops S_ISUID/S_ISGID for non-root callers
 * (the rule of MDS_SA_KILL_SUID).
 * The object: \a path from \a at (\a flags: MDS_AT_NOFOLLOW), or, with
 * \a path NULL, the inode \a at itself (fchmod...).
 * HSM: a size change of a file with an HSM record bumps its data version;
 * of a released file, a truncate to 0 empties it once its old objects are
 * destroyed (-EAGAIN before) and another size queues a restore (-EAGAIN).
 * \return 0, -EPERM, -EACCES, -EISDIR (size of a dir), -EFBIG, -EAGAIN,
 *         path errors.
 */
int mds_ns_setattr(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		   const char *path, uint32_t flags, const struct mds_setattr *sa,
		   struct mds_inode *out);

/**
 * Chooses OSTs for a new file's layout (the cluster map does this in the server):
 * lo->lo_stripe_count of them from \a stripe_offset (-1: round-robin) on.
 * \return 0, -EINVAL (\a stripe_offset names no OST, checked first; a bad
 * count), -ENOSPC (no OST up).
 */
typedef int (*mds_ost_chooser_t)(void *arg, struct weir_layout *lo, int32_t stripe_offset);

/** Open flags, the wire's OpenFlag bits. */
#define MDS_OF_READ 0x1u
#define MDS_OF_WRITE 0x2u
#define MDS_OF_CREAT 0x4u
#define MDS_OF_EXCL 0x8u
#define MDS_OF_TRUNC 0x10u
#define MDS_OF_APPEND 0x20u
#define MDS_OF_DIRECTORY 0x40u
#define MDS_OF_NOFOLLOW 0x80u
#define MDS_OF_HSM 0x100u /* the copytool's open: root only, no dirty marking, close changes nothing */
#define MDS_OF_EXEC 0x200u /* execve(2)'s open: execute permission instead of read (regular files) */

/** Requested layout for a new file: zeros inherit the directory/filesystem default. */
struct mds_layout_req {
	uint32_t lr_stripe_count; /* 0 = inherit; UINT32_MAX = all OSTs */
	uint32_t lr_stripe_size;  /* bytes, 0 = inherit */
	int32_t lr_stripe_offset; /* first OST, -1 = inherit or choose; applies with or
				   * without a count (-i alone: that OST, default count) */
};

/**
 * Open or create. For a new file the layout is: the request's, else the
 * parent's default, else the filesystem's; \a choose fills the OST list.
 * Symlinks in the last component are followed unless MDS_OF_NOFOLLOW or
 * O_CREAT|O_EXCL (then a symlink is -ELOOP / -EEXIST); O_CREAT through a
 * dangling symlink creates its target. Permissions: read/write as asked
 * (O_TRUNC asks write), w+x on the directory to create. New files take the
 * caller's uid and gid (the directory's gid when it is setgid).
 * With MDS_OF_TRUNC on an existing file the size becomes 0, mtime and ctime
 * now, S_ISUID/S_ISGID dropped for non-root callers; when the objects may
 * hold data (a size, blocks, or a stale size) \a out has
 * MDS_INODE_F_TRUNCATED and the caller truncates the objects, then sets the
 * size (mds_ns_setattr), which outdates the size reports of other writers
 * glimpsed before (mds_ns_size_epoch). With MDS_OF_WRITE the inode is marked
 * MDS_INODE_F_SIZE_STALE until mds_ns_close_file() of the last writer.
 * A reader updates atime with relatime's rule (atime <= mtime or ctime, or
 * older than a day); otherwise an open for reading writes nothing.
 * HSM (mds/hsm.h): an open for writing of a file with an HSM record bumps
 * its data version and marks it dirty; O_TRUNC of a released file empties
 * it (no longer released) once its old objects are destroyed, -EAGAIN
 * before. MDS_OF_HSM (the copytool; root only, no MDS_OF_CREAT/TRUNC) opens
 * an existing file without any of this: no dirty marking, no SIZE_STALE,
 * no atime, and counts as a reader. MDS_OF_EXEC (execve's open, with
 * MDS_OF_READ; no WRITE, CREAT or TRUNC) checks execute permission instead
 * of read, and is -EACCES on anything but a regular file.
 * \param[out] created  true when this call created the file.
 * \return 0, -ENOENT, -EEXIST, -EISDIR, -ENOTDIR, -ENAMETOOLONG, -EACCES,
 *         -ELOOP, -EINVAL (bad layout, bad MDS_OF_HSM or MDS_OF_EXEC flags), -ENOSPC (no OST
 *         up), -EPERM (MDS_OF_HSM without root), -EAGAIN (HSM, above), -EIO.
 */
int mds_ns_open_file(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		     const char *path, uint32_t flags, uint32_t mode,
		     const struct mds_layout_req *lr, mds_ost_chooser_t choose, void *choose_arg,
		     struct mds_inode *out, bool *created);

/** What a writer reports at close or fsync (mds_ns_close_file, mds_ns_update_size). */
struct mds_write_report {
	bool wr_has_size;  /* wr_size / wr_blocks are the glimpsed values */
	uint64_t wr_size;  /* bytes */
	uint64_t wr_blocks; /* 512-byte blocks */
	int64_t wr_mtime_ns; /* time of the handle's last write (client clock); 0 = none */
	/* with wr_has_size: the truncate epoch (mds_ns_size_epoch) read before
	 * the glimpse began; a size glimpsed under an older epoch is not taken */
	uint64_t wr_size_epoch;
};

/**
 * A handle on \a fid closed. \a was_writer: it had been opened with
 * MDS_OF_WRITE; \a wr (may be NULL) what the writer reports: the size, and
 * the time of its last write, which becomes mtime (and ctime, if later)
 * unless times were set explicitly (setattr) after it.
 * The last writer's close clears MDS_INODE_F_SIZE_STALE, unless the flag
 * was set before this run's first writer opened the file (or an evicted
 * writer could not be glimpsed) and the close reports no size: when that is all
 * it changes (the writer reports nothing new), at once in memory and on
 * disk later, in groups (mds/ns_clean.c; lost in a crash, the flag only
 * makes a stat glimpse). Everything else is in the WAL before the return.
 * The last close of an unlinked file destroys it and queues its objects
 * for destruction.
 */
int mds_ns_close_file(struct mds_ns *ns, const struct weir_fid *fid, bool was_writer,
		      const struct mds_write_report *wr);

/**
 * Note that the size on the OSTs of open file \a fid is not known to any
 * writer still open (an evicted writer could not be glimpsed): its flag
 * MDS_INODE_F_SIZE_STALE is then cleared only by a close that reports a
 * size. (A writer that opens a file whose flag was already set with no
 * other writer of this run open is marked so by mds_ns_open_file itself.)
 * No effect on a file nobody has open. Thread-safe.
 */
void mds_ns_size_unknown(struct mds_ns *ns, const struct weir_fid *fid);

/**
 * Write to disk every flag clear the clean closes of mds_ns_close_file()
 * left in memory (the commit thread calls it every commit interval;
 * mds_ns_close() at the end). Takes the namespace lock for writing, one
 * group of clears at a time. \return flags cleared, or -ENOMEM, -EIO.
 */
int mds_ns_clean_flush(struct mds_ns *ns);
/** Clean closes whose flag clear is in memory only. */
size_t mds_ns_clean_pending(struct mds_ns *ns);

/**
 * The truncate epoch of open file \a fid: an opaque value, never 0, that
 * changes at every truncate (a setattr of the size) while the file is
 * open, and is new for every run of the MDS and every time the file is
 * opened after nobody had it open. A writer reads it (in the getattr reply,
 * Attr.size_epoch) before it glimpses the OSTs and sends it with the size it
 * reports; mds_ns_close_file() and mds_ns_update_size() take the size only
 * if the epoch is still the file's, since a truncate done after the glimpse
 * read the objects makes that size wrong (the size would come back).
 * \return the epoch, or 0 when nobody has \a fid open. Thread-safe.
 */
uint64_t mds_ns_size_epoch(struct mds_ns *ns, const struct weir_fid *fid);

/**
 * Record what a writer reports (fsync; a close of an unknown handle) without
 * closing. A size glimpsed under an outdated truncate epoch is not taken
 * (the file then stays marked stale until a close reports a size).
 * \return 0, -ENOENT, -ENOMEM, -EIO.
 */
int mds_ns_update_size(struct mds_ns *ns, const struct weir_fid *fid,
		       const struct mds_write_report *wr);

/**
 * mkdir. Mode bits are \a mode & 01777; a setgid parent gives its gid and
 * S_ISGID. w+x on the parent. -EEXIST, -EACCES, and the path errors.
 */
int mds_ns_mkdir(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		 const char *path, uint32_t mode, struct mds_inode *out);

/**
 * mknod: a FIFO, socket, character or block device (rdev kept), or with
 * S_IFREG / type 0 a regular file (with a layout, as mds_ns_open_file).
 * \return 0, -EPERM (S_IFDIR; a device by a non-root caller), -EINVAL
 *         (unknown type), -EEXIST, -EACCES, -ENOSPC, and the path errors.
 */
int mds_ns_mknod(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		 const char *path, uint32_t mode, uint64_t rdev, mds_ost_chooser_t choose,
		 void *choose_arg, struct mds_inode *out);

/**
 * unlink (is_dir false) or rmdir (true): w+x on the parent; in a sticky
 * directory only the owner of the entry or of the directory, or root.
 * Removing one name of a file with other links keeps the file.
 * \return 0, -ENOENT, -EISDIR, -ENOTDIR, -ENOTEMPTY, -EBUSY (root; a name
 * held by a two-MDT change), -EINVAL (rmdir "."), -EACCES, -EPERM (sticky).
 * A name whose inode is another MDT's (a remote directory or entry) is
 * removed with that MDT (mds/dtx.c): also -EHOSTDOWN (it did not answer;
 * undone).
 */
int mds_ns_unlink(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		  const char *path, bool is_dir);
/** What mds_ns_unlink_fid() did. */
struct mds_unlink_res {
	struct weir_fid ur_gone;  /* the object the name led to */
	struct mds_inode ur_dir;  /* the directory that held the name, after the change */
};
/**
 * As mds_ns_unlink(), only when the name is still the file \a expect (NULL:
 * any): a client undoing its own create never removes a file another
 * client put under that name since. \param[out] res  NULL, or what the
 * unlink did (set on success only). \return as mds_ns_unlink(), and
 * -ESTALE when the name is another file (nothing removed).
 */
int mds_ns_unlink_fid(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		      const char *path, bool is_dir, const struct weir_fid *expect,
		      struct mds_unlink_res *res);

/** renameat2 flags (Linux's values). */
#define MDS_RENAME_NOREPLACE 0x1u
#define MDS_RENAME_EXCHANGE 0x2u
#define MDS_RENAME_WHITEOUT 0x4u

/**
 * rename, as renameat2(2): \a src from \a src_at to \a dst from \a dst_at;
 * replaces the target (a file by a non-directory, an empty directory by a
 * directory) unless MDS_RENAME_NOREPLACE (-EEXIST); MDS_RENAME_EXCHANGE
 * swaps two existing entries atomically (either may be a directory).
 * Permissions: as unlink on the source's directory and on a replaced
 * target's, w+x to create in the target directory, w on a directory that
 * changes parent. Same inode under both names: nothing to do.
 * \return 0, -ENOENT, -EEXIST, -EISDIR / -ENOTDIR (type mismatch),
 *         -ENOTEMPTY, -EINVAL (a directory into its own subtree; bad
 *         flags; WHITEOUT is not supported), -EBUSY ("/", ".", ".."; a name
 *         held by a two-MDT change), -EACCES, -EPERM (sticky), and the path
 *         errors. A source in another MDT's directory (\a src_at of that
 *         MDT, one name) is a rename across MDTs (mds/dtx.c): -EXDEV for a
 *         directory, a symlink, an exchange, or a replaced remote entry;
 *         -EHOSTDOWN (the other MDT did not answer; undone), -EINVAL (no
 *         such MDT).
 */
int mds_ns_rename(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *src_at,
		  const char *src, const struct weir_fid *dst_at, const char *dst, uint32_t flags);
/**
 * mds_ns_rename(), telling what it changed: \a moved (may be NULL) gets the
 * FID of the object \a src named, \a victim (may be NULL) that of the one
 * \a dst named before (replaced, or with RENAME_EXCHANGE swapped); each is
 * 0:0 when there is none or the rename failed (or changed nothing).
 */
int mds_ns_rename_fids(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *src_at,
		       const char *src, const struct weir_fid *dst_at, const char *dst,
		       uint32_t flags, struct weir_fid *moved, struct weir_fid *victim);

/**
 * link(2)/linkat(2): a new name \a dst for the inode of \a src (its last
 * symlink followed only with MDS_AT_FOLLOW in \a flags). Like Linux with
 * fs.protected_hardlinks=1, a non-root caller that does not own the source
 * needs it to be a regular file, not setuid, not setgid+group-exec, that it
 * may read and write.
 * \return 0, -EEXIST, -EPERM (a directory; protected), -EMLINK (over
 *         MDS_LINK_MAX links), -EACCES, -ENOENT, and the path errors. A
 *         source that is another MDT's inode (\a src_at its FID, \a src "")
 *         is linked across MDTs (mds/dtx.c): also -EXDEV (a symlink),
 *         -EHOSTDOWN (that MDT did not answer; undone), -EINVAL (no such MDT).
 */
int mds_ns_link(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *src_at,
		const char *src, const struct weir_fid *dst_at, const char *dst, uint32_t flags,
		struct mds_inode *out);

/**
 * symlink(2): a symlink \a path holding \a target (1..MDS_SYMLINK_MAX bytes,
 * stored as given; relative targets resolve from the link's directory,
 * absolute ones from the Weir root). Mode S_IFLNK|0777, size the target's length.
 * \return 0, -ENOENT (empty target), -ENAMETOOLONG (target too long),
 *         -EEXIST, -EACCES, and the path errors.
 */
int mds_ns_symlink(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		   const char *path, const char *target, struct mds_inode *out);

/**
 * readlink(2): copy the target of symlink \a path (the last component not
 * followed) into \a buf (\a cap bytes, at least MDS_SYMLINK_MAX + 1), NUL-terminated.
 * \param[out] len  The target's length.
 * \return 0, -EINVAL (not a symlink), and the path errors.
 */
int mds_ns_readlink(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		    const char *path, char *buf, size_t cap, size_t *len);

/* ------------------------------------------------------------ extended attributes (mds/xattr.c) */

/** Longest xattr name and value (Linux's XATTR_NAME_MAX, XATTR_SIZE_MAX). */
#define MDS_XATTR_NAME_MAX 255
#define MDS_XATTR_SIZE_MAX 65536
/** Longest listxattr reply (Linux's XATTR_LIST_MAX). */
#define MDS_XATTR_LIST_MAX 65536
/** setxattr flags (Linux's values). */
#define MDS_XATTR_CREATE 0x1
#define MDS_XATTR_REPLACE 0x2

/*
 * Extended attributes in the namespaces "user." (regular files and
 * directories; read/write permission on the inode; in a sticky directory
 * only its owner or root may write), "trusted." (root only: others get
 * -ENODATA reading and -EPERM writing) and "security." (anyone reads, root
 * writes). Other names: -EOPNOTSUPP; an empty name or one over 255 bytes:
 * -ERANGE; "user." alone: -EINVAL. The object is \a path from \a at
 * (MDS_AT_NOFOLLOW: lgetxattr & co.) or, with \a path NULL, the inode \a at.
 */

/**
 * setxattr: \a len bytes (<= MDS_XATTR_SIZE_MAX) of \a value; \a xflags
 * MDS_XATTR_CREATE (-EEXIST if present) / MDS_XATTR_REPLACE (-ENODATA if
 * absent). ctime becomes now.
 * \return 0, -EEXIST, -ENODATA, -E2BIG, -EINVAL (bad flags), -EPERM,
 *         -EACCES, -EOPNOTSUPP, -ERANGE, and the path errors.
 */
int mds_ns_setxattr(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		    const char *path, uint32_t flags, const char *name, const void *value,
		    size_t len, int xflags);
/**
 * getxattr: the value into \a buf (\a cap >= MDS_XATTR_SIZE_MAX bytes).
 * \param[out] len  Bytes of the value.
 * \return 0, -ENODATA (no such attribute, or not visible to the caller),
 *         -EACCES, -EOPNOTSUPP, -ERANGE, and the path errors.
 */
int mds_ns_getxattr(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		    const char *path, uint32_t flags, const char *name, void *buf, size_t cap,
		    size_t *len);
/**
 * listxattr: the names the caller may see ("trusted." only for root), each
 * NUL-terminated, into \a buf (\a cap bytes).
 * \param[out] len  Bytes of the list.
 * \return 0, -E2BIG (the list exceeds \a cap), and the path errors.
 */
int mds_ns_listxattr(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		     const char *path, uint32_t flags, char *buf, size_t cap, size_t *len);
/**
 * removexattr: as setxattr.
 * \return 0, -ENODATA, -EPERM, -EACCES, -EOPNOTSUPP, -ERANGE, and the path errors.
 */
int mds_ns_removexattr(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		       const char *path, uint32_t flags, const char *name);

/* ------------------------------------------------------------ directories */

/** One readdir entry. */
struct mds_dirent {
	char de_name[256];
	struct weir_fid de_fid;
	uint8_t de_type;     /* DT_* */
	uint64_t de_cookie;  /* resume after this entry */
};

/**
 * List directory \a dir after \a cookie (0 = from the start), in hash order,
 * up to \a max entries (more only to finish a run of equal hashes, so a
 * cookie never splits one). "." and ".." are not returned. Needs read
 * permission on \a dir.
 * \param[out] ents  Caller-owned array of \a cap entries (\a cap >= \a max + 16).
 * \param[out] nr    Entries filled. \param[out] eof  true when the listing ended.
 * \return 0, -ENOENT, -ENOTDIR, -EACCES.
 */
int mds_ns_readdir(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *dir,
		   uint64_t cookie, uint32_t max, struct mds_dirent *ents, uint32_t cap,
		   uint32_t *nr, bool *eof);

/**
 * Set a layout: on a directory, its default for new files (count, size 0
 * and offset -1 clear it; its owner or root only); on a missing path with
 * \a create, a new empty file with that layout (w+x on the parent). A first
 * OST (lr_stripe_offset >= 0) must exist in the cluster map (\a choose says).
 * \return 0, -EEXIST (an existing file), -ENOENT, -EINVAL (bad size or count,
 *         no OST with that index), -EPERM, -EACCES.
 */
int mds_ns_set_layout(struct mds_ns *ns, const struct mds_cred *cr, const struct weir_fid *at,
		      const char *path, const struct mds_layout_req *lr, bool create,
		      uint32_t mode, mds_ost_chooser_t choose, void *choose_arg,
		      struct mds_inode *out);

/** Inodes in use (an estimate from RocksDB). */
uint64_t mds_ns_nr_inodes(struct mds_ns *ns);

/**
 * Sequence number of the last write made durable-on-reply (in the WAL).
 * mds_ns_sync() syncs the WAL to the device and returns the sequence it covers.
 */
uint64_t mds_ns_write_seq(struct mds_ns *ns);
/**
 * The transno of the last batch that survived the last run (the MDT's
 * ns_write_seq at open): a client's request answered with a higher one was
 * lost with the log's unsynced tail and must be replayed. Any thread.
 */
uint64_t mds_ns_boot_transno(struct mds_ns *ns);
/**
 * Record (\a set, synced) or remove the recovery floor: while a recovery
 * window is open the MDT keeps its boot transno, so a restart before the
 * window closed starts from the same one (mds_ns_boot_transno()).
 * \return 0 or -errno from RocksDB.
 */
int mds_ns_recovery_floor(struct mds_ns *ns, bool set);
/**
 * Make the next create on this thread re-create a lost one: it takes  fid
 * instead of a new FID and, for a regular file,  lo (when not NULL)
 * instead of choosing OSTs (mds/recovery.c, the re-run of a client's kept
 * request). mds_ns_replay_set(NULL, NULL) clears what the create did not
 * take. Thread-local; the caller keeps ownership of both.
 */
void mds_ns_replay_set(const struct weir_fid *fid, const struct weir_layout *lo);
int mds_ns_sync(struct mds_ns *ns, uint64_t *synced_seq);

/** One record of the destroy queue: the objects of a removed file. */
struct mds_destroy_rec {
	struct weir_fid dr_fid;
	struct weir_layout dr_layout;
};
/**
 * Up to \a max records from the destroy queue, oldest-keyed first.
 * \return number filled (>= 0) or a negative errno.
 */
int mds_ns_destroy_peek(struct mds_ns *ns, struct mds_destroy_rec *recs, int max);
/**
 * As mds_ns_destroy_peek(), but only records keyed after \a after (NULL: from
 * the first), so a pass over a long queue does not scan the deletions of the
 * records it finished before (RocksDB tombstones) again for every batch.
 */
int mds_ns_destroy_peek_after(struct mds_ns *ns, const struct weir_fid *after,
			      struct mds_destroy_rec *recs, int max);
/** Remove a record once every object is destroyed. */
int mds_ns_destroy_done(struct mds_ns *ns, const struct weir_fid *fid);
/**
 * Compact the destroy queue's column family: a scan of the queue then skips
 * no tombstones of records already done. \return 0 or a negative errno.
 */
int mds_ns_destroy_compact(struct mds_ns *ns);
/** Remove \a n records (one RocksDB batch). \return 0 or a negative errno. */
int mds_ns_destroy_done_many(struct mds_ns *ns, const struct weir_fid *fids, int n);

/**
 * The objects of regular file \a fid known to have been written (a bitmap,
 * bit i for stripe i's object; mds/xattr.c): readers get it with the
 * layout, so an object gone from its OST reads -EIO, not zeros.
 * get: \a *len bytes (0: none recorded). or: OR \a bits in (\a clear: drop
 * the record, as an HSM release does). \return 0 or -errno.
 */
int mds_ns_objmap_get(struct mds_ns *ns, const struct weir_fid *fid, uint8_t *bits, size_t cap,
		      size_t *len);
int mds_ns_objmap_or(struct mds_ns *ns, const struct weir_fid *fid, const uint8_t *bits,
		     size_t len, bool clear);

/** Read/write a small value in the cluster column family (the cluster map). */
int mds_ns_cluster_get(struct mds_ns *ns, const void *key, size_t klen, void *val, size_t cap,
		       size_t *vlen);
int mds_ns_cluster_put(struct mds_ns *ns, const void *key, size_t klen, const void *val,
		       size_t vlen);
/** Iterate the cluster CF: \a cb per key with prefix \a pfx. */
int mds_ns_cluster_scan(struct mds_ns *ns, const void *pfx, size_t plen,
			void (*cb)(void *arg, const void *k, size_t kl, const void *v, size_t vl),
			void *arg);

/* ------------------------------------------------------------ server */

struct mds_conf {
	const char *mc_mdt_dir;
	const char *mc_listen;         /* HOST:PORT */
	uint32_t mc_mdt_index;         /* this MDT's index (--mdt-index), 0 .. WEIR_MDT_MAX - 1 */
	const char *mc_mgs;            /* MDT k > 0: HOST:PORT of MDT0's MDS (--mgs) */
	const char *mc_advertise;      /* MDT k > 0: host clients reach it at (--advertise);
					* NULL: the listen host */
	uint32_t mc_threads;           /* event loops */
	uint32_t mc_poll_us;           /* most a loop polls before sleeping, us; 0: never
					* (net_server_conf.sc_poll_us) */
	uint64_t mc_commit_interval_ms;
	uint32_t mc_def_stripe_count;
	uint32_t mc_def_stripe_size;
	const char *mc_fsname;
	uint32_t mc_ost_timeout_s;     /* an OST not heard from in this long is down */
	bool mc_root_squash;           /* uid/gid 0 of requests become 65534 (nobody) */
	uint32_t mc_capa_timeout_s;    /* lifetime of OST capabilities, seconds (0: 3600) */
	const char *mc_nodemap;        /* the node map file (--nodemap), NULL: none */
	bool mc_root_owner_set;        /* --root-owner UID:GID[:MODE] for a new MDT's root */
	uint32_t mc_root_uid, mc_root_gid, mc_root_mode;
	bool mc_pdirops_off;           /* --pdirops 0: every namespace change alone */
	uint32_t mc_lease_ms;          /* a client session not heard from in this long is evicted */
	uint32_t mc_mdl_max;           /* metadata leases per client session (0: 65536) */
	bool mc_mdl_off;               /* grant no metadata leases (clients cache nothing) */
	uint32_t mc_recovery_window_ms; /* after a restart, wait this long at most for the known
					 * clients to reconnect and replay; 0: 2 x mc_lease_ms */
	/* HSM (mds/hsm*.c); zeros take the defaults */
	uint32_t mc_hsm_high_pct;      /* OST used % that starts releases (90) */
	uint32_t mc_hsm_low_pct;       /* ... until below (75) */
	uint64_t mc_hsm_min_age_s;     /* release only files idle this long (300 unless set) */
	bool mc_hsm_min_age_set;       /* mc_hsm_min_age_s applies even when 0 */
	uint64_t mc_hsm_policy_interval_ms; /* 5000 */
	uint64_t mc_hsm_action_timeout_ms;  /* 60000 */
};

/** Start serving. \return 0 or a negative errno (logged). */
int mds_start(const struct mds_conf *conf, struct mds **out);
/** The bound TCP port. */
uint16_t mds_port(const struct mds *m);
/** Stop: sync the MDT, stop threads, close. */
void mds_stop(struct mds *m);
/** Log the memory RocksDB uses now (weir-mds does on SIGUSR1; `make bench` reads it). */
void mds_log_memory(struct mds *m);

#endif /* WEIR_MDS_H */
