/*
 * mds/hsm.h - the HSM coordinator of the MDS (the S3 tier, issue 5):
 * private to mds/. Data repository associations (DRAs), per-file HSM
 * records, the action queue handed to copytool agents, release, import and
 * the watermark policy.
 *
 * Two layers, as the namespace:
 *  - the coordinator proper (hsm.c, hsm_act.c, hsm_store.c) works on a
 *    struct mds_ns and needs no network (tests/unit/mds/test_hsm.c drives it);
 *  - the server side (hsm_svc.c: RPC handlers, parked agent fetches, the
 *    "mds-hsm" thread; hsm_policy.c: the watermark policy) needs a struct mds.
 *
 * Locks (docs/lock-ordering.md): every coordinator call that changes state
 * takes ns_lock for writing, then hs_lock (a mutex guarding the in-memory
 * action table, the DRAs, the statistics and the parked fetches). ns.c's
 * hooks (mds_hsm_on_*) run with ns_lock held for reading and the file's
 * inode lock (mds/ns_lock.c), or ns_lock held for writing, and take hs_lock:
 * what they change of a file's records is that file's.
 * Under hs_lock only ns_open_lock may be taken (open counts). Replies to
 * parked requests are sent after both are released.
 *
 * Records (CF "hsm", docs/disk-format.md): 'S'+FID(16 BE) per-file record,
 * 'Q'+id(8 BE) queued action, 'A'+id(4 BE) DRA, "I" action id high-water,
 * 'K'+bucket+'\0'+key -> FID: which file's record holds an S3 key.
 */
#ifndef WEIR_MDS_HSM_H
#define WEIR_MDS_HSM_H

#ifndef WEIR_MDS_INT_H /* mds_int.h's server part is outside its include guard */
#include "mds_int.h"
#endif

/* HsmFlag bits (the wire's values) */
#define HSM_F_EXISTS 0x1u
#define HSM_F_DIRTY 0x2u
#define HSM_F_RELEASED 0x4u
#define HSM_F_ARCHIVED 0x8u
#define HSM_F_LOST 0x10u
#define HSM_F_IMPORTED 0x20u

/* HsmAction */
#define HSM_A_NONE 0
#define HSM_A_ARCHIVE 1
#define HSM_A_RESTORE 2
#define HSM_A_RELEASE 3

/* HsmActionState */
#define HSM_S_WAITING 0
#define HSM_S_RUNNING 1
#define HSM_S_DONE 2
#define HSM_S_FAILED 3

/* DraFlag */
#define HSM_DF_AUTO_EXPORT 0x1u
#define HSM_DF_REIMPORT 0x2u

/* HsmImportResult */
#define HSM_HIR_CREATED 0
#define HSM_HIR_UPDATED 1
#define HSM_HIR_UNCHANGED 2
#define HSM_HIR_REMOVED 3
#define HSM_HIR_KEPT 4

#define HSM_BUCKET_MAX 63      /* S3 bucket names: 3..63 bytes */
#define HSM_KEY_MAX 1024       /* S3 keys: 1..1024 bytes */
#define HSM_ETAG_MAX 129       /* quotes included */
#define HSM_UPLOAD_ID_MAX 1024
#define HSM_AGENT_MAX 63
#define HSM_DRA_MAX 256        /* associations per MDT */
#define HSM_IMPORT_MAX 1024    /* entries per MDS_HSM_IMPORT */
#define HSM_REQUEST_MAX 4096   /* fids per MDS_HSM_REQUEST */
#define HSM_FETCH_MAX 32       /* tasks per MDS_HSM_AGENT_FETCH */
#define HSM_QUEUE_LIST_MAX 2048 /* pending actions listed by MDS_HSM_QUEUE without ids (a
				 * reply stays under the 4 MiB frame; counts are complete) */
#define HSM_FETCH_WAIT_MAX_MS 5000
#define HSM_CHUNKS_MAX 65536   /* restore chunks per file */
#define HSM_MAP_MAX (HSM_CHUNKS_MAX / 8)
#define HSM_CHUNK_MIN (8ULL << 20)
#define HSM_ATTEMPTS_MAX 5     /* an action fails after this many agent errors */

/** Settings (weir-mds --hsm-*). */
struct mds_hsm_conf {
	uint32_t hc_high_pct;            /* release when an OST is above this used %, default 90 */
	uint32_t hc_low_pct;             /* ... until below this, default 75 */
	uint64_t hc_min_age_s;           /* candidates not accessed/modified for this long, 300 */
	bool hc_min_age_set;             /* hc_min_age_s applies even when 0 */
	uint64_t hc_policy_interval_ms;  /* policy pass period, 5000 */
	uint64_t hc_action_timeout_ms;   /* a running action silent this long goes back, 60000 */
};

/** A data repository association. */
struct mds_hsm_dra {
	uint32_t hd_id;
	struct weir_fid hd_root;
	char hd_path[NS_PATH_MAX + 1];
	char hd_bucket[HSM_BUCKET_MAX + 1];
	char hd_prefix[HSM_KEY_MAX + 1];
	uint32_t hd_flags;               /* HSM_DF_* */
	int64_t hd_created_ns;
};

/** The per-file HSM record ('S'), decoded. */
struct hsm_rec {
	uint32_t hr_flags;               /* HSM_F_* */
	uint32_t hr_dra;                 /* DRA id at the last archive/import, 0 none */
	uint64_t hr_data_version;
	uint64_t hr_archived_version;
	int64_t hr_archived_ns;
	uint64_t hr_archived_size;       /* bytes of the archive copy */
	uint64_t hr_chunk;               /* restore: bytes per chunk (0: no restore state) */
	uint32_t hr_map_len;             /* bytes of hr_map in use */
	char hr_bucket[HSM_BUCKET_MAX + 1];
	char hr_key[HSM_KEY_MAX + 1];
	char hr_etag[HSM_ETAG_MAX + 1];
	uint8_t hr_map[HSM_MAP_MAX];     /* restore: chunk i done = bit i%8 of byte i/8 */
};

/** One import entry (HsmImportEnt, checked by the caller for NULLs). */
struct mds_hsm_import_ent {
	const char *ie_name;
	uint64_t ie_size;
	int64_t ie_mtime_ns;
	const char *ie_etag;
	const char *ie_key;
	bool ie_deleted;
};

/** HSM state of a file (MDS_HSM_STATE). */
struct mds_hsm_state {
	struct weir_fid st_fid;
	uint32_t st_flags;
	uint32_t st_dra;
	char st_bucket[HSM_BUCKET_MAX + 1];
	char st_key[HSM_KEY_MAX + 1];
	char st_etag[HSM_ETAG_MAX + 1];
	uint64_t st_data_version, st_archived_version, st_size, st_restored;
	int64_t st_archived_ns;
	uint64_t st_action_id;
	uint32_t st_action;
};

/** An action as MDS_HSM_QUEUE shows it. */
struct mds_hsm_action_info {
	uint64_t ai_id;
	uint32_t ai_action;
	struct weir_fid ai_fid;
	uint32_t ai_state;
	int32_t ai_rc;
	uint64_t ai_bytes_total, ai_bytes_done;
	char ai_agent[HSM_AGENT_MAX + 1];
	int64_t ai_queued_ns;
	char ai_key[HSM_KEY_MAX + 1];
};

/** MDS_HSM_QUEUE's answer (mds_hsm_queue_get; free with mds_hsm_queue_free). */
struct mds_hsm_queue_info {
	struct mds_hsm_action_info *qi_actions;
	size_t qi_nr;
	uint64_t qi_backlog_bytes, qi_archived_bytes, qi_restored_bytes;
	uint64_t qi_archive_bps, qi_restore_bps, qi_done, qi_failed;
	uint32_t qi_agents, qi_waiting, qi_running;
};

/** A task handed to an agent (MDS_HSM_AGENT_FETCH). */
struct mds_hsm_task {
	uint64_t tk_id;
	uint32_t tk_action;
	struct weir_fid tk_fid;
	char tk_bucket[HSM_BUCKET_MAX + 1];
	char tk_key[HSM_KEY_MAX + 1];
	char tk_etag[HSM_ETAG_MAX + 1];
	uint64_t tk_size;
	uint64_t tk_chunk;
	uint32_t tk_map_len;
	uint8_t tk_map[HSM_MAP_MAX];
	uint64_t tk_hint;
	uint64_t tk_data_version;
	char tk_upload_id[HSM_UPLOAD_ID_MAX + 1];
	uint32_t tk_dra_flags;
	uint64_t tk_token;               /* this hand-out: PROGRESS and DONE must echo it */
};

/** What MDS_HSM_AGENT_PROGRESS answers. */
struct mds_hsm_progress_rep {
	bool pr_has_want;
	uint64_t pr_want;
	bool pr_cancel;
};

struct mds_hsm;

/* ------------------------------------------------------------ hsm.c: the coordinator */

/**
 * Attach a coordinator to \a ns (ns->ns_hsm): load the DRAs and the queued
 * actions (as WAITING). \a kick (may be NULL) is called, without locks,
 * whenever work may be handed out (the server's dispatcher).
 * \return 0, -ENOMEM, -EIO.
 */
int mds_hsm_open(struct mds_ns *ns, const struct mds_hsm_conf *conf,
		 void (*kick)(void *arg), void *kick_arg, struct mds_hsm **out);
/** Detach from the namespace and free. Accepts NULL. */
void mds_hsm_close(struct mds_hsm *h);
/** The settings in effect (defaults filled in). */
const struct mds_hsm_conf *mds_hsm_conf_get(const struct mds_hsm *h);

/**
 * DRAs: create (root; a directory not inside/around another DRA: -EBUSY; a
 * bucket + prefix overlapping another DRA's, one prefix a prefix of the
 * other in the same bucket: -EEXIST). -EPERM, -EINVAL, -EEXIST, -EBUSY, -ENOSPC.
 */
int mds_hsm_dra_create(struct mds_hsm *h, const struct mds_cred *cr, const struct weir_fid *at,
		       const char *path, const char *bucket, const char *prefix, uint32_t flags,
		       struct mds_hsm_dra *out);
/** Copy of every DRA (malloc'd; the caller frees \a *out). */
int mds_hsm_dra_list(struct mds_hsm *h, struct mds_hsm_dra **out, size_t *nr);
/** Remove the DRA rooted at \a path (root only). -EPERM, -ENOENT, -EINVAL (not a DRA root). */
int mds_hsm_dra_delete(struct mds_hsm *h, const struct mds_cred *cr, const struct weir_fid *at,
		       const char *path);

/**
 * Import \a n (<= HSM_IMPORT_MAX) listing entries into directory \a dir of
 * DRA \a dra (root only); results[i] is an HSM_HIR_* or a -errno.
 * \return 0 or the -errno of the call itself (-EPERM, -ENOENT, -EINVAL, -E2BIG).
 */
int mds_hsm_import(struct mds_hsm *h, const struct mds_cred *cr, uint32_t dra,
		   const struct weir_fid *dir, const struct mds_hsm_import_ent *ents, size_t n,
		   uint32_t mode, mds_ost_chooser_t choose, void *choose_arg, int32_t *results);

/**
 * Archive / restore (queued) or release (done now) of \a n fids.
 * ids[i]: the action (0 none), rcs[i]: 0 or -errno (see HsmRequestRep).
 * \param[out] released  Files released (the caller kicks the destroy thread).
 * \return 0, -EINVAL (bad action, n > HSM_REQUEST_MAX).
 */
int mds_hsm_request(struct mds_hsm *h, const struct mds_cred *cr, uint32_t action,
		    const struct weir_fid *fids, size_t n, uint64_t *ids, int32_t *rcs,
		    size_t *released);

/** The HSM state of \a fid, or of \a path from \a at when \a fid is NULL. */
int mds_hsm_state_get(struct mds_hsm *h, const struct mds_cred *cr, const struct weir_fid *at,
		      const char *path, const struct weir_fid *fid, struct mds_hsm_state *st);

/** Actions \a ids (or the first HSM_QUEUE_LIST_MAX pending if \a nids is 0) and statistics. */
int mds_hsm_queue_get(struct mds_hsm *h, const uint64_t *ids, size_t nids,
		      struct mds_hsm_queue_info *qi);
void mds_hsm_queue_free(struct mds_hsm_queue_info *qi);

/**
 * A reader of [off, off+len) (len 0: to the end) of \a fid: is the file
 * released, and is the range restored? Queues one restore per file and
 * records \a off as the hint. -EIO when the archive copy is lost or the
 * restore failed; -EACCES without read permission; -ENOENT.
 */
int mds_hsm_restore_wait(struct mds_hsm *h, const struct mds_cred *cr,
			 const struct weir_fid *fid, uint64_t off, uint64_t len, bool *released,
			 bool *ready);

/** An agent asks for up to \a max tasks (none ready: *nr = 0). */
int mds_hsm_fetch(struct mds_hsm *h, const char *agent, uint64_t session, uint32_t max,
		  struct mds_hsm_task *tasks, uint32_t *nr);
/**
 * Progress of running action \a id, hand-out \a token. An action not running
 * or handed out again since (another token) is answered cancel (rep->pr_cancel).
 * \return 0, -ENOENT: unknown (answer cancel), -EINVAL: bad range.
 */
int mds_hsm_progress(struct mds_hsm *h, uint64_t id, uint64_t token, uint64_t off, uint64_t len,
		     uint64_t bytes_done, const char *upload_id, struct mds_hsm_progress_rep *rep);
/**
 * Completion of action \a id, hand-out \a token, with \a rc (see HsmDoneReq).
 * A restore's rc 0 counts only when every chunk was reported (else an agent
 * error). \return 0, -ENOENT, -EINVAL, -ESTALE (an older hand-out's token or
 * an action not running: refused, logged, nothing changes), or the -errno of
 * a record update that failed (the action stays as it was).
 */
int mds_hsm_done(struct mds_hsm *h, uint64_t id, uint64_t token, int32_t rc, const char *etag,
		 uint64_t size, int64_t mtime_ns, const char *msg);
/** Running actions of agent session \a session go back to WAITING. \return how many. */
size_t mds_hsm_session_evicted(struct mds_hsm *h, uint64_t session);
/** Running actions silent for hc_action_timeout_ms go back to WAITING. \return how many. */
size_t mds_hsm_expire(struct mds_hsm *h);
/** Bytes of every waiting or running action not yet moved. */
uint64_t mds_hsm_backlog(struct mds_hsm *h);

/* ------------------------ hooks from ns.c (the file's inode lock, or ns_lock for writing) */

/**
 * A non-OF_HSM open for writing (\a trunc false), or a truncate / O_TRUNC to
 * \a new_size (\a trunc true) of \a in, which has MDS_INODE_F_HSM: bump the
 * data version, mark dirty, and add the record to \a b. A truncate to 0 of a
 * released file clears RELEASED (in->in_flags too) unless its destroy
 * record still exists (-EAGAIN); another size change of a released file
 * queues a restore and is -EAGAIN.
 */
int mds_hsm_on_modify(struct mds_ns *ns, struct kv_batch *b, struct mds_inode *in, bool trunc,
		      uint64_t new_size);
/** The last name of \a fid went away: delete its record, cancel its actions (in \a b). */
void mds_hsm_on_destroy(struct mds_ns *ns, struct kv_batch *b, const struct weir_fid *fid);
/** The last writer closed \a in: queue an archive under a DF_AUTO_EXPORT DRA. */
void mds_hsm_on_writer_close(struct mds_ns *ns, const struct mds_inode *in);

/* ------------------------------------------------------------ hsm_store.c: records and paths */

void hsm_rec_init(struct hsm_rec *r);
/** Read the 'S' record of \a fid. \return 0, -ENOENT, -EIO (corrupt, logged). */
int hsm_rec_get(struct mds_ns *ns, const struct weir_fid *fid, struct hsm_rec *r);
void hsm_rec_put(struct kv_batch *b, const struct weir_fid *fid, const struct hsm_rec *r);
void hsm_rec_del(struct kv_batch *b, const struct weir_fid *fid);
/** Restore chunk size of a file (max(8 MiB, size/65536), multiples of the stripe size). */
uint64_t hsm_chunk_size(uint64_t size, uint32_t stripe_size);
/** Start a fresh restore state for a file of \a size bytes: chunk set, bitmap zero. */
void hsm_rec_restore_reset(struct hsm_rec *r, uint64_t size, uint32_t stripe_size);
/** Bytes of the file in done chunks. */
uint64_t hsm_rec_restored(const struct hsm_rec *r, uint64_t size);
bool hsm_rec_chunk_done(const struct hsm_rec *r, uint64_t i);
/** Does the objects' destroy record ('D') of \a fid exist? */
bool hsm_destroy_pending(struct mds_ns *ns, const struct weir_fid *fid);
/** Path of \a in below directory \a top ("" for top itself). -ENOENT: not below, -ENAMETOOLONG. */
int hsm_path_below(struct mds_ns *ns, const struct mds_inode *in, const struct weir_fid *top,
		   char *buf, size_t cap);
/** The parent directory of \a in (files: the hint if that directory exists, else searched). */
int hsm_parent_of(struct mds_ns *ns, const struct mds_inode *in, struct weir_fid *parent);
/** Is \a name a valid S3 bucket name (3..63 of [a-z0-9.-], alnum at both ends)? */
bool hsm_bucket_valid(const char *name);
/**
 * The key index ('K' + bucket + '\0' + key -> FID): the file whose record
 * holds s3://bucket/key. \return 0 (*fid set), -ENOENT, -EIO.
 */
int hsm_key_owner(struct mds_ns *ns, const char *bucket, const char *key, struct weir_fid *fid);
/**
 * In \a b: \a fid's record goes from key \a ob / \a ok to \a nb / \a nk
 * (a NULL or empty key: none). The old entry is deleted only if \a fid owns
 * it. Call wherever a record's key is set, changed or deleted.
 */
void hsm_key_update(struct mds_ns *ns, struct kv_batch *b, const struct weir_fid *fid,
		    const char *ob, const char *ok, const char *nb, const char *nk);
/** Build the key index of an MDT written without it (once; marker "k"). \return 0, -errno. */
int hsm_key_index_build(struct mds_ns *ns);

/** Encoded DRA record ('A'+id): \return bytes in \a buf (cap >= HSM_DRA_REC_MAX). */
#define HSM_DRA_REC_MAX (40 + HSM_BUCKET_MAX + HSM_KEY_MAX + NS_PATH_MAX + 8)
size_t hsm_dra_encode(const struct mds_hsm_dra *d, uint8_t *buf);
int hsm_dra_decode(const uint8_t *buf, size_t len, struct mds_hsm_dra *d);
void hsm_dra_key(uint32_t id, uint8_t key[5]);

/** A queued action as persisted ('Q'+id). */
struct hsm_qrec {
	uint64_t q_id;
	uint32_t q_action;
	uint32_t q_attempts;
	struct weir_fid q_fid;
	int64_t q_queued_ns;
	uint64_t q_bytes_total;
	char q_upload_id[HSM_UPLOAD_ID_MAX + 1];
};
#define HSM_QREC_MAX (48 + HSM_UPLOAD_ID_MAX)
size_t hsm_qrec_encode(const struct hsm_qrec *q, uint8_t *buf);
int hsm_qrec_decode(const uint8_t *buf, size_t len, struct hsm_qrec *q);
void hsm_qrec_key(uint64_t id, uint8_t key[9]);

/* ------------------------------------------------------------ hsm_svc.c / hsm_policy.c: the server */

/** Start the coordinator of server \a m (after the namespace, before the network). */
int mds_hsm_start(struct mds *m, const struct mds_hsm_conf *conf);
/** Stop the "mds-hsm" thread and answer parked fetches (after the network stopped). */
void mds_hsm_stop(struct mds *m);
/** Agent session evicted (lease.c). */
void mds_hsm_evicted(struct mds *m, uint64_t session);
/** Wake the dispatcher (new work, a writer closed, a destroy finished). */
void mds_hsm_kick(struct mds *m);
/** One pass of the watermark policy (hsm_policy.c). */
void mds_hsm_policy_pass(struct mds *m);

/** The request's Cred (a Weir__Cred, may be NULL) after root squash (svc.c). */
void mds_svc_cred(const struct mds *m, const void *cred, struct mds_cred *cr);

void mds_hsm_handle_dra_create(struct mds *m, struct net_req *rq);
void mds_hsm_handle_dra_list(struct mds *m, struct net_req *rq);
void mds_hsm_handle_dra_delete(struct mds *m, struct net_req *rq);
void mds_hsm_handle_import(struct mds *m, struct net_req *rq);
void mds_hsm_handle_request(struct mds *m, struct net_req *rq);
void mds_hsm_handle_state(struct mds *m, struct net_req *rq);
void mds_hsm_handle_queue(struct mds *m, struct net_req *rq);
void mds_hsm_handle_restore_wait(struct mds *m, struct net_req *rq);
void mds_hsm_handle_fetch(struct mds *m, struct net_req *rq);
void mds_hsm_handle_progress(struct mds *m, struct net_req *rq);
void mds_hsm_handle_done(struct mds *m, struct net_req *rq);


/* ------------------------------------------------------------ internals shared by hsm*.c */

/** A pending action (waiting or running), in memory; persisted as 'Q'. */
struct hsm_action {
	uint64_t ha_id;
	uint32_t ha_action;            /* HSM_A_ARCHIVE or HSM_A_RESTORE */
	struct weir_fid ha_fid;
	uint32_t ha_state;             /* HSM_S_WAITING or HSM_S_RUNNING */
	int32_t ha_rc;                 /* last agent error */
	uint32_t ha_attempts;          /* agent errors so far */
	uint64_t ha_bytes_total, ha_bytes_done;
	char ha_agent[HSM_AGENT_MAX + 1];
	uint64_t ha_session;           /* the running agent's session */
	int64_t ha_queued_ns;          /* wall clock */
	uint64_t ha_heard_ns;          /* monotonic: last word from the agent */
	uint64_t ha_not_before_ns;     /* monotonic: retry backoff */
	uint64_t ha_data_version;      /* archive: version handed out */
	uint64_t ha_token;             /* the current hand-out (0: never handed out) */
	bool ha_cancel;                /* restore: a truncate waits; PROGRESS answers cancel and the
					* agent's DONE -ECANCELED (after its last write) ends it */
	bool ha_has_hint;              /* restore: a reader waits at ha_hint */
	uint64_t ha_hint;
	char ha_bucket[HSM_BUCKET_MAX + 1]; /* archive: at hand-out */
	uint32_t ha_dra;
	char *ha_key;                  /* archive: computed at hand-out (malloc'd) */
	char *ha_upload_id;            /* archive: multipart upload in progress (malloc'd) */
	struct hsm_action *ha_prev, *ha_next;        /* queue order */
	struct hsm_action *ha_id_next, *ha_fid_next; /* hash chains */
};

/** A finished action, kept for MDS_HSM_QUEUE and failed-restore answers. */
struct hsm_fin {
	struct mds_hsm_action_info hf_info;
	uint64_t hf_mono_ns;
	bool hf_healed;                /* a failed restore whose file was re-imported since */
};

#define HSM_HASH 4096
#define HSM_FIN_NR 256
#define HSM_AGENTS_NR 64
#define HSM_RATE_SECS 10

struct hsm_agent {
	char ag_name[HSM_AGENT_MAX + 1];
	uint64_t ag_session;
	uint64_t ag_seen_ns;           /* monotonic */
};

struct mds_hsm {
	struct mds_ns *hs_ns;
	struct mds_hsm_conf hs_conf;
	void (*hs_kick)(void *arg);
	void *hs_kick_arg;
	atomic_bool hs_auto_export;    /* some DRA has HSM_DF_AUTO_EXPORT (set under hs_lock,
					* read without it by the writer-close hook) */
	pthread_mutex_t hs_lock;       /* everything below */
	struct mds_hsm_dra *hs_dras;
	size_t hs_nr_dras;
	uint64_t hs_next_id, hs_id_hw; /* action ids; hw persisted as "I" */
	uint64_t hs_next_token;        /* hand-out tokens: random start, + 1 each, never 0 */
	struct hsm_action hs_queue;    /* list head (circular) */
	struct hsm_action *hs_by_id[HSM_HASH];
	struct hsm_action *hs_by_fid[HSM_HASH];
	uint32_t hs_waiting, hs_running;
	struct hsm_fin *hs_fin;        /* ring of HSM_FIN_NR */
	size_t hs_fin_next;
	struct hsm_agent hs_agents[HSM_AGENTS_NR];
	uint64_t hs_archived_bytes, hs_restored_bytes, hs_done, hs_failed;
	uint64_t hs_rate_sec[HSM_RATE_SECS];      /* monotonic second of each bucket */
	uint64_t hs_rate[2][HSM_RATE_SECS];       /* [0] archive, [1] restore bytes */
	/* the policy's own state (hsm_policy.c; only its caller, the mds-hsm thread) */
	uint64_t hs_pol_cooldown[MDS_MAX_OSTS];   /* monotonic: OST left alone until then */
	uint64_t hs_pol_warned[MDS_MAX_OSTS];     /* monotonic: last "nothing releasable" */
	/* fault injection (unit tests): the next N hsm_commit calls fail with -EIO */
	uint32_t hs_fail_commits;
};

/* hsm.c */
void hsm_lock(struct mds_hsm *h, bool ns_write);
void hsm_unlock(struct mds_hsm *h);
void hsm_kick(struct mds_hsm *h);
/** ns_batch_commit of a coordinator batch (frees \a b; honours hs_fail_commits). */
int hsm_commit(struct mds_hsm *h, struct kv_batch *b);
const struct mds_hsm_dra *hsm_dra_by_id(struct mds_hsm *h, uint32_t id);
/** The DRA \a in is under (a directory: itself included). NULL: none. Locks held. */
const struct mds_hsm_dra *hsm_dra_of(struct mds_hsm *h, const struct mds_inode *in);
bool hsm_any_auto_export(struct mds_hsm *h);

/* hsm_act.c: the action table (hs_lock held unless said) */
struct hsm_action *hsm_act_by_id(struct mds_hsm *h, uint64_t id);
struct hsm_action *hsm_act_by_fid(struct mds_hsm *h, const struct weir_fid *fid);
/**
 * Queue \a action on \a fid (ns_lock held for writing, or for reading with
 * the file's inode lock: the close hook's auto-export): persisted in its own
 * batch. An archive of a file without a record creates one (data_version 1)
 * and sets MDS_INODE_F_HSM on the inode. \return 0 or -errno.
 */
int hsm_act_queue(struct mds_hsm *h, uint32_t action, const struct mds_inode *in,
		  uint64_t bytes_total, struct hsm_action **out);
/**
 * Remove \a a (deleting its 'Q' in \a b, or in its own batch when \a b is
 * NULL) into the ring. With \a b the caller commits later: use it only where
 * a failed commit leaves nothing wrong (the namespace's hooks: the 'Q' left on
 * disk is checked again at reload); else hsm_act_qdel + commit + hsm_act_retire.
 */
void hsm_act_finish(struct mds_hsm *h, struct kv_batch *b, struct hsm_action *a, uint32_t state,
		    int32_t rc);
/** Add the deletion of \a a's 'Q' record to \a b (then commit, then hsm_act_retire). */
void hsm_act_qdel(struct kv_batch *b, const struct hsm_action *a);
/** Memory side of a finish whose 'Q' deletion was committed: into the ring, unlink, free. */
void hsm_act_retire(struct mds_hsm *h, struct hsm_action *a, uint32_t state, int32_t rc);
/** Load the 'Q' records at start. */
int hsm_act_load(struct mds_hsm *h);
void hsm_act_free_all(struct mds_hsm *h);
/** What the last failed restore of a file says to its next reader (hsm_fin_failed_restore). */
enum {
	HSM_FIN_NONE = 0,        /* none that counts: queue a restore */
	HSM_FIN_FAILED = 1,      /* the copy is bad (within the window): -EIO */
	HSM_FIN_RETRY_LATER = 2, /* S3 was unreachable less than retry_ns ago: wait */
};
/**
 * The last failed restore of \a fid: one that failed because S3 could not
 * be reached (-ECONNREFUSED, -ETIMEDOUT, ...) never sticks: it is retried by
 * the next reader once \a retry_ns have passed; any other failure answers
 * -EIO for \a window_ns. \return HSM_FIN_*.
 */
int hsm_fin_failed_restore(struct mds_hsm *h, const struct weir_fid *fid, uint64_t window_ns,
			   uint64_t retry_ns);
/** \a fid has a new archive copy (re-import): its failed restores no longer answer EIO. */
void hsm_fin_heal(struct mds_hsm *h, const struct weir_fid *fid);
void hsm_rate_add(struct mds_hsm *h, int which, uint64_t bytes);

#endif /* WEIR_MDS_HSM_H */
