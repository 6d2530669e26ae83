/*
 * client/mdc.h - the metadata client (Lustre's mdc): one typed function
 * per namespace MDS operation (client/mdc.c). Included by client_int.h.
 *
 * Conventions of every wc_mdc_* function below:
 *  - \a fs is the mount; the request carries the calling thread's
 *    credentials (wc_cred_init(): weir_fid_cred_set()'s, else the mount's).
 *  - The object is named by a struct wc_mdc_target (see there); pointers in
 *    it are borrowed for the call only.
 *  - Attributes out (\a a, may be NULL: the reply is checked, not decoded)
 *    and a layout out (\a lo, may be NULL: not decoded, not checked) are
 *    filled only on success; a reply without attributes or with an invalid
 *    layout is -EPROTO.
 *  - Return 0 (or a byte count), the MDS's -errno, a transport error,
 *    -EPROTO (bad reply), or what wc_mds_call() returns in the MDS's
 *    recovery window (-ETIMEDOUT, -EINTR). Arguments are not checked beyond
 *    what the wire needs: callers check paths and names (wc_path_check()).
 *  - Retries, replay ids and the replay list are wc_mds_call()'s
 *    (client/mount.c, client/replay.c), except where a function says so.
 *  - Thread safety: any thread, concurrently; nothing here holds a lock
 *    across the RPC.
 */
#ifndef WEIR_CLIENT_MDC_H
#define WEIR_CLIENT_MDC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/fid.h"
#include "common/layout.h"
#include "weir.pb-c.h"

struct weir_fs;
struct wc_attr;

/**
 * What an MDS call is about: the object \a mt_fid itself, or else the path
 * \a mt_name looked up from directory \a mt_at (NULL: the root; an absolute
 * path ignores it; "" with \a mt_at names \a mt_at itself, as
 * AT_EMPTY_PATH). \a mt_pflags: PathFlag bits (PF_NOFOLLOW: the last
 * component itself; PF_FOLLOW: LINK's source). Which forms an operation
 * takes is the wire's: each function says.
 */
struct wc_mdc_target {
	const struct weir_fid *mt_fid;
	const struct weir_fid *mt_at;
	const char *mt_name;
	uint32_t mt_pflags;
};

/** A target named by path \a name from directory \a at (may be NULL), PathFlag bits \a pf. */
#define WC_MDC_PATH(at, name, pf) \
	(&(struct wc_mdc_target){ .mt_at = (at), .mt_name = (name), .mt_pflags = (pf) })
/** A target naming object \a fid itself. */
#define WC_MDC_FID(fid) (&(struct wc_mdc_target){ .mt_fid = (fid) })

/** SETATTR's changes: \a sa_valid says which fields count (SetattrValid bits). */
struct wc_mdc_sattr {
	uint32_t sa_valid;
	uint32_t sa_mode;     /* permission bits (SA_MODE) */
	uint32_t sa_uid;      /* SA_UID */
	uint32_t sa_gid;      /* SA_GID */
	uint64_t sa_size;     /* bytes (SA_SIZE) */
	int64_t sa_atime_ns;  /* SA_ATIME, ns since the epoch */
	int64_t sa_mtime_ns;  /* SA_MTIME */
};

/** What a writer reports at CLOSE and SYNC (all zero: nothing). */
struct wc_mdc_report {
	bool mr_has_size;      /* mr_size and mr_blocks are the glimpsed size */
	uint64_t mr_size;      /* bytes */
	uint64_t mr_blocks;    /* 512-byte blocks */
	uint64_t mr_epoch;     /* Attr.size_epoch read before the glimpse */
	int64_t mr_mtime_ns;   /* the handle's last write (client clock); 0: none */
	const uint8_t *mr_objs; /* bitmap of the objects written (stripe i: bit i%8 of byte i/8) */
	size_t mr_objs_len;    /* its bytes; 0: none */
};

/** A layout asked for (SET_LAYOUT); zeros inherit, \a ms_stripe_offset -1: any OST. */
struct wc_mdc_stripe {
	uint32_t ms_pattern;
	uint32_t ms_stripe_size;   /* bytes */
	uint32_t ms_stripe_count;
	int32_t ms_stripe_offset;  /* first OST index; -1: the MDS picks */
};

/** One entry of a READDIR page (wc_mdc_dirent_get()). */
struct wc_mdc_dirent {
	const char *de_name;       /* 1..255 bytes, no '/'; points into the page */
	struct weir_fid de_fid;
	uint8_t de_type;           /* DT_* */
	uint64_t de_cookie;        /* a later page resumes after this entry */
};

/** One READDIR page (wc_mdc_readdir()); its entries are read with wc_mdc_dirent_get(). */
struct wc_mdc_dirpage {
	size_t dp_nr;              /* entries */
	bool dp_eof;               /* no entries after these */
	bool dp_long;              /* more entries than asked for: the page ends in a run
				    * of equal cookies (which the MDS may cut short) */
	Weir__ReaddirRep *dp_rep;  /* the reply; NULL: no page held */
};

/** A directory's default layout as the MDS sent it (wc_mdc_lookup_layout()). */
struct wc_mdc_dirdef {
	bool dd_set;               /* the reply had a layout */
	uint32_t dd_pattern;
	uint32_t dd_stripe_size;   /* bytes */
	uint32_t dd_stripe_count;
	uint32_t dd_gen;
	int32_t dd_stripe_offset;  /* -1: the MDS picks */
	size_t dd_nr_osts;         /* entries of dd_osts (a default may name none) */
	uint32_t dd_osts[WEIR_LAYOUT_MAX_STRIPES];
};

/** The reply to wc_mdc_open(). */
struct wc_mdc_opened {
	struct wc_attr *mo_attr;   /* in: where the attributes go (not NULL) */
	struct weir_layout *mo_layout; /* in: where the layout goes (not NULL) */
	uint8_t mo_objs[WEIR_LAYOUT_MAX_STRIPES / 8]; /* objects known to exist (Layout.objects) */
	uint64_t mo_handle;        /* the MDS's open handle (for wc_mdc_close()) */
	bool mo_created;           /* O_CREAT made the file */
	struct weir_fid mo_dir_parent; /* a directory: its parent (".."), zero when not told */
	unsigned mo_epoch;         /* fs_epoch of the session the open was made in */
	uint32_t mo_uid;           /* the uid the open was sent with */
};

/**
 * Decode an AttrRep-like pair. \a pl may be NULL (no layout: count 0);
 * \a lo may be NULL (not decoded).
 * \return 0 or -EPROTO (missing attr or an invalid layout).
 */
int wc_attr_decode(const Weir__Attr *pa, const Weir__Layout *pl, struct wc_attr *a,
		   struct weir_layout *lo);

/** MDS_LOOKUP. \a t: path form only (mt_fid set: -EINVAL). */
int wc_mdc_lookup(struct weir_fs *fs, const struct wc_mdc_target *t, struct wc_attr *a,
		  struct weir_layout *lo);
/** MDS_GETATTR of \a fid. */
int wc_mdc_getattr(struct weir_fs *fs, const struct weir_fid *fid, struct wc_attr *a,
		   struct weir_layout *lo);
/**
 * MDS_SETATTR of \a t (either form) with the changes \a sa. One call: a
 * caller retrying -EAGAIN (HSM) calls again.
 */
int wc_mdc_setattr(struct weir_fs *fs, const struct wc_mdc_target *t,
		   const struct wc_mdc_sattr *sa, struct wc_attr *a, struct weir_layout *lo);
/**
 * MDS_OPEN of \a t (path form) with O_* \a flags and permission bits \a mode
 * (for a create), in this mount's session: on -ESTALE (evicted, or the MDS
 * restarted) the session is renewed (wc_session_lost()) and the open sent
 * once more with the same replay id, so a create the MDS applied before it
 * restarted is answered from its reply cache. \a hsm: the copytool's open
 * (OF_HSM, root credentials). \a o gets the reply; a reply that cannot be
 * decoded is -EPROTO, the handle it opened closed again.
 * \return 0 or -errno; on an error \a o's outputs are undefined.
 */
int wc_mdc_open(struct weir_fs *fs, const struct wc_mdc_target *t, int flags, mode_t mode,
		bool hsm, struct wc_mdc_opened *o);
/**
 * MDS_CLOSE of open \a handle of \a fid, with the process's pid and the
 * session (the MDS drops the process's locks on it). \a r: what a writer
 * reports (may be NULL). \a oneway: sent without waiting for a reply
 * (wc_mds_oneway(): \return 0 once queued). \a lease: (not \a oneway) ask
 * for a lease on the file's attributes after the close, cached when granted
 * (what the mount cached of the file before is dropped either way when \a r
 * is given).
 */
int wc_mdc_close(struct weir_fs *fs, const struct weir_fid *fid, uint64_t handle,
		 const struct wc_mdc_report *r, bool oneway, bool lease);
/** MDS_SYNC of \a fid (NULL: the whole MDT), with a writer's report \a r (may be NULL). */
int wc_mdc_sync(struct weir_fs *fs, const struct weir_fid *fid, const struct wc_mdc_report *r);
/**
 * MDS_MKDIR of \a t (path form), permission bits \a mode & 07777, on MDT
 * \a mdt (>= 0: a remote directory when another MDT than the parent's; -1:
 * the parent's MDT).
 */
int wc_mdc_mkdir(struct weir_fs *fs, const struct wc_mdc_target *t, mode_t mode, int mdt,
		 struct wc_attr *a, struct weir_layout *lo);
/** MDS_MKNOD of \a t (path form): \a mode type and permission bits, \a rdev for devices. */
int wc_mdc_mknod(struct weir_fs *fs, const struct wc_mdc_target *t, mode_t mode, dev_t rdev,
		 struct wc_attr *a, struct weir_layout *lo);
/** MDS_SYMLINK: the new link \a t (path form) holding \a target (1..4095 bytes). */
int wc_mdc_symlink(struct weir_fs *fs, const struct wc_mdc_target *t, const char *target,
		   struct wc_attr *a, struct weir_layout *lo);
/**
 * MDS_READLINK of \a t (path form; mt_pflags as given, callers send
 * PF_NOFOLLOW): up to \a len bytes of the target into \a buf, truncated
 * silently and without a NUL (readlink(2)). \a buf may be NULL when \a len is 0.
 * \return the bytes copied, or -errno (-EPROTO: an empty or over-long target).
 */
ssize_t wc_mdc_readlink(struct weir_fs *fs, const struct wc_mdc_target *t, char *buf,
			size_t len);
/**
 * MDS_LINK: a new name \a dst (path form) for \a src (path form; its
 * mt_pflags go in LinkReq.flags: PF_FOLLOW).
 */
int wc_mdc_link(struct weir_fs *fs, const struct wc_mdc_target *src,
		const struct wc_mdc_target *dst, struct wc_attr *a, struct weir_layout *lo);
/**
 * MDS_UNLINK of \a t (path form); \a is_dir: rmdir. \a if_fid (may be NULL):
 * only when the name still is that file, else -ESTALE (a create undone).
 */
int wc_mdc_unlink(struct weir_fs *fs, const struct wc_mdc_target *t, bool is_dir,
		  const struct weir_fid *if_fid);
/**
 * MDS_RENAME of \a src to \a dst (both path form), RenameFlag bits \a flags.
 * A \a dst without mt_at under a \a src with one is from the root (sent as
 * the root FID: the wire's unset dst_at means "as src").
 */
int wc_mdc_rename(struct weir_fs *fs, const struct wc_mdc_target *src,
		  const struct wc_mdc_target *dst, uint32_t flags);
/**
 * MDS_READDIR: one page of directory \a dir after \a cookie (0: from the
 * start), at most \a max entries, into \a page (the caller's: release it
 * with wc_mdc_dirpage_free(); on an error it holds none). Entries are
 * checked as they are read (wc_mdc_dirent_get()). With \a plus
 * (readdirplus, at most 1024 entries a page) the MDS sends each entry's
 * attributes and leases on them: what it leased goes into the metadata
 * cache (client/mdl.c), the attributes and, under the directory's LOOKUP
 * lease, the names; weir_fid_getattr() and weir_fid_lookup() of the
 * entries then answer without the MDS.
 * \return 0 or -errno (-EPROTO: an empty page without eof).
 */
int wc_mdc_readdir(struct weir_fs *fs, const struct weir_fid *dir, uint64_t cookie,
		   uint32_t max, bool plus, struct wc_mdc_dirpage *page);
/**
 * Entry \a i (< dp_nr) of \a page into \a e (its name valid while the page is held).
 * \return 0 or -EPROTO (no name, a name over 255 bytes or with a '/', no FID).
 */
int wc_mdc_dirent_get(const struct wc_mdc_dirpage *page, size_t i, struct wc_mdc_dirent *e);
/** Release what \a page holds (none: nothing); it then holds none. */
void wc_mdc_dirpage_free(struct wc_mdc_dirpage *page);
/** MDS_ACCESS of \a t (path form): F_OK or R_OK|W_OK|X_OK \a mode. */
int wc_mdc_access(struct weir_fs *fs, const struct wc_mdc_target *t, int mode);
/**
 * MDS_GETXATTR of \a name of \a t (either form), as getxattr(2): \a size 0
 * asks for the value's size; else the value into \a buf.
 * \return its bytes, -ERANGE (over \a size), or -errno.
 */
ssize_t wc_mdc_getxattr(struct weir_fs *fs, const struct wc_mdc_target *t, const char *name,
			void *buf, size_t size);
/** MDS_LISTXATTR of \a t (either form): the NUL-terminated names, as wc_mdc_getxattr(). */
ssize_t wc_mdc_listxattr(struct weir_fs *fs, const struct wc_mdc_target *t, void *buf,
			 size_t size);
/** MDS_SETXATTR of \a t (either form): \a size bytes of \a value, XattrFlag bits \a xflags. */
int wc_mdc_setxattr(struct weir_fs *fs, const struct wc_mdc_target *t, const char *name,
		    const void *value, size_t size, uint32_t xflags);
/** MDS_REMOVEXATTR of \a name of \a t (either form). */
int wc_mdc_removexattr(struct weir_fs *fs, const struct wc_mdc_target *t, const char *name);
/**
 * MDS_SET_LAYOUT of \a t (path form) to \a s; \a create: make an empty file
 * with permission bits \a mode when the path does not exist.
 */
int wc_mdc_set_layout(struct weir_fs *fs, const struct wc_mdc_target *t,
		      const struct wc_mdc_stripe *s, bool create, mode_t mode, struct wc_attr *a,
		      struct weir_layout *lo);
/**
 * MDS_LOOKUP of \a t (path form) for getstripe: a file's layout into \a lo
 * (checked as wc_attr_decode()), or a directory's default into \a dd as
 * the reply has it (not checked: it may name no OSTs, and it keeps
 * stripe_offset, which struct weir_layout lacks); dd_set false for a file.
 */
int wc_mdc_lookup_layout(struct weir_fs *fs, const struct wc_mdc_target *t, struct wc_attr *a,
			 struct weir_layout *lo, struct wc_mdc_dirdef *dd);
/** MDS_STATFS: \a rep, the caller's (free with protobuf_c_message_free_unpacked()). */
int wc_mdc_statfs(struct weir_fs *fs, Weir__StatfsRep **rep);

#endif /* WEIR_CLIENT_MDC_H */
