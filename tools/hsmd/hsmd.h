/*
 * tools/hsmd/hsmd.h - weir-hsmd (the HSM copytool agent), shared by its files.
 *
 * DESIGN. The main thread (main.c) fetches tasks from the MDS
 * (MDS_HSM_AGENT_FETCH, long-poll) and adds them to the scheduler
 * (sched.c). A pool of worker threads runs the tasks' steps: each task is a
 * small state machine, START (one step: HEAD/open/create the upload) -> RUN
 * (its units - restore chunks or multipart parts - any number of workers at
 * once) -> FINISH (one step: complete, verify, MDS_HSM_AGENT_DONE, close).
 * No step waits for another step, so a few tasks can never hold every
 * worker. Workers pick units round-robin over the tasks, so several files
 * move at once and several units of one file are in flight at once.
 *
 * Locks: hd_sched.sd_lock guards the task list and every field of a task
 * marked (L); the other task fields are written by the START step only and
 * read-only afterwards, or belong to the step that is running. Each worker
 * owns its S3 handles (one per bucket; weir_s3 handles are single-threaded)
 * and its I/O buffer.
 */
#ifndef WEIR_TOOLS_HSMD_H
#define WEIR_TOOLS_HSMD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <weir/weir.h>

#include "common/fid.h"
#include "common/s3.h"

/** Largest S3 GET or file read done in one go (a restore chunk is split in pieces). */
#define HD_IO_MAX (16u << 20)
/** S3 handles a worker keeps (one per bucket, least recently used dropped). */
#define HD_S3_CACHE 4
/** How often held tasks are reported alive to the MDS (its hsm_action_timeout is 60 s). */
#define HD_KEEPALIVE_MS 15000
/** Text of a task's error message (sent in HsmDoneReq.message). */
#define HD_MSG_MAX 512

/** Settings, from main.c. */
struct hd_conf {
	const char *hc_mds;          /* HOST:PORT */
	const char *hc_name;         /* agent name */
	uint32_t hc_threads;         /* workers */
	uint64_t hc_part_size;       /* bytes per multipart part */
	uint32_t hc_max_tasks;       /* tasks held at once */
	struct weir_s3_conf hc_s3;   /* sc_bucket empty: set per task */
};

enum hd_phase {
	HP_START,  /* the START step has not run yet */
	HP_RUN,    /* units to move */
	HP_FINISH, /* the FINISH step is due */
};

/** Unit states (hd_task.t_ustate). */
enum { HU_TODO = 0, HU_BUSY = 1, HU_DONE = 2 };

/** One action the MDS gave us. */
struct hd_task {
	/* from the MDS (read-only) */
	uint64_t t_id;
	uint64_t t_token;             /* the hand-out: echoed in PROGRESS and DONE */
	uint32_t t_action;            /* WEIR__HSM_ACTION__HA_ARCHIVE / _RESTORE */
	struct weir_fid t_fid;
	char t_bucket[64];
	char *t_key;
	char t_etag[WEIR_S3_ETAG_MAX]; /* restore: the recorded ETag */
	uint64_t t_size;              /* restore: the recorded size; archive: set by START */
	uint64_t t_chunk;             /* restore: bytes per unit; archive: part size */
	uint64_t t_data_version;
	char t_old_upload[WEIR_S3_UPLOAD_ID_MAX]; /* archive: an upload to abort first */
	uint64_t t_hint;              /* restore: byte offset to fetch first */

	/* state */
	enum hd_phase t_phase;        /* (L) */
	bool t_busy;                  /* (L) a START or FINISH step is running */
	bool t_abandon;               /* (L) give up without DONE (stopping, not ours any more) */
	int t_rc;                     /* (L) first error; 0 */
	char t_msg[HD_MSG_MAX];       /* (L) its message */
	uint64_t t_nr_units;          /* set by START */
	uint8_t *t_ustate;            /* (L) HU_* per unit */
	uint64_t t_cursor;            /* (L) next unit to look at */
	uint64_t t_nr_left;           /* (L) units not HU_DONE */
	uint32_t t_nr_busy;           /* (L) units being moved */
	uint64_t t_bytes;             /* (L) bytes moved by this agent */
	weir_file_t *t_fh;            /* set by START */
	uint64_t t_t0_ns;             /* when START began */

	/* archive */
	char t_upload[WEIR_S3_UPLOAD_ID_MAX]; /* the multipart upload of this attempt ("" none) */
	struct weir_s3_part *t_parts; /* t_nr_units entries */
	char t_put_etag[WEIR_S3_ETAG_MAX];    /* single PUT: its ETag */

	/* restore, -ESTALE: what the object is now */
	struct weir_s3_obj t_cur;

	struct hd_task *t_next;       /* (L) the task list */
};

struct hd_agent;

/** A worker thread and what it owns. */
struct hd_worker {
	struct hd_agent *w_ag;
	pthread_t w_thread;
	unsigned w_idx;
	void *w_buf;                  /* I/O buffer, w_buflen bytes */
	size_t w_buflen;
	struct {
		char hs_bucket[64];
		struct weir_s3 *hs_s3;
		uint64_t hs_used;     /* LRU stamp */
	} w_s3[HD_S3_CACHE];
	uint64_t w_s3_clock;
};

/** The agent. */
struct hd_agent {
	struct hd_conf *ag_conf;
	weir_fs_t *ag_fs;
	atomic_bool ag_stop;          /* a signal came: fetch no more, abandon what is unfinished */

	pthread_mutex_t ag_lock;      /* the task list below */
	pthread_cond_t ag_cond;       /* work to pick, a task ended, or stopping */
	struct hd_task *ag_tasks;
	struct hd_task *ag_rr;        /* where the next round-robin scan starts */
	uint32_t ag_nr_tasks;
	uint32_t ag_nr_workers_live;

	struct hd_worker *ag_workers; /* hc_threads */
	uint64_t ag_done, ag_failed;  /* (ag_lock) tasks finished since start */
};

/* ---- sched.c */

/** Start the workers. \return 0 or -errno. */
int hd_sched_start(struct hd_agent *ag);
/** Stop: abandon unfinished tasks, wait for the workers (called after ag_stop is set). */
void hd_sched_stop(struct hd_agent *ag);
/**
 * Add a task from the MDS (copied). A task already held with the same token
 * is skipped; one held with another token (the MDS gave the action back and
 * handed it out again) is abandoned and the new one runs.
 * \return 0, 1 (skipped), -EPROTO (malformed), -ENOMEM.
 */
int hd_sched_add(struct hd_agent *ag, const void *pb_task);
/**
 * Wait until fewer than hc_max_tasks tasks are held, or stopping, or
 * \a timeout_ms passed. \return free slots (0 after a timeout).
 */
uint32_t hd_sched_wait_slots(struct hd_agent *ag, uint32_t timeout_ms);
/**
 * Tell the MDS every held task is alive (an empty PROGRESS each), so that a
 * long step (a slow part, CompleteMultipartUpload of many parts) does not
 * let hsm_action_timeout give the action to another agent. Called by the
 * fetch loop every HD_KEEPALIVE_MS.
 */
void hd_sched_keepalive(struct hd_agent *ag);
/** Wake every thread waiting in the scheduler (after setting ag_stop). */
void hd_sched_kick(struct hd_agent *ag);
/**
 * The worker's S3 handle for \a bucket (made on first use).
 * \return 0, -EINVAL, -ENOMEM.
 */
int hd_worker_s3(struct hd_agent *ag, struct hd_worker *w, const char *bucket,
		 struct weir_s3 **out);
/** Make the worker's buffer at least \a len bytes. \return 0 or -ENOMEM. */
int hd_worker_buf(struct hd_worker *w, size_t len);
/** Record the task's first error (rc < 0) with a message. Takes ag_lock. */
void hd_task_fail(struct hd_agent *ag, struct hd_task *t, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/**
 * MDS_HSM_AGENT_PROGRESS for \a t. Restore: \a off / \a len, a range now
 * fsynced. Archive: \a bytes_done and \a upload_id. A "want" in the reply
 * moves the task's cursor; "cancel" (or an action that is no longer ours)
 * marks the task abandoned.
 * \return 0, or -ECANCELED when the task is to stop; transport errors are
 *         logged and return 0 (DONE reports the whole result later).
 */
int hd_progress(struct hd_agent *ag, struct hd_task *t, uint64_t off, uint64_t len,
		uint64_t bytes_done, const char *upload_id);
/**
 * MDS_HSM_AGENT_DONE for \a t, retried on transport errors for up to 30 s.
 * \return 0 or the last error (logged).
 */
int hd_done(struct hd_agent *ag, struct hd_task *t, int rc, const char *etag, uint64_t size,
	    int64_t mtime_ns, const char *msg);
/** "s3://bucket/key" of \a t into \a buf. \return \a buf. */
const char *hd_task_url(const struct hd_task *t, char *buf, size_t len);
/** ETags equal, ignoring surrounding quotes (some servers and importers drop them). */
bool hd_etag_eq(const char *a, const char *b);
/** Log the one INFO line of a finished task. */
void hd_task_log_done(const struct hd_task *t, uint64_t bytes);

/* ---- restore.c: the steps of a restore */

/** START: HEAD + ETag check, open, unit map from done_map. \return 0 or -errno (recorded). */
int hd_restore_start(struct hd_agent *ag, struct hd_worker *w, struct hd_task *t);
/** One chunk: ranged GETs, write, fsync, PROGRESS. \return 0 or -errno (recorded). */
int hd_restore_unit(struct hd_agent *ag, struct hd_worker *w, struct hd_task *t, uint64_t unit);
/** FINISH: close, DONE (unless abandoned). */
void hd_restore_finish(struct hd_agent *ag, struct hd_worker *w, struct hd_task *t);

/* ---- archive.c: the steps of an archive */

/** START: abort a left-over upload, open, single PUT or multipart create. */
int hd_archive_start(struct hd_agent *ag, struct hd_worker *w, struct hd_task *t);
/** One part: read it from the file, UploadPart, PROGRESS. */
int hd_archive_unit(struct hd_agent *ag, struct hd_worker *w, struct hd_task *t, uint64_t unit);
/** FINISH: complete, HEAD to verify, DONE; on failure abort the upload, DONE with the error. */
void hd_archive_finish(struct hd_agent *ag, struct hd_worker *w, struct hd_task *t);

#endif /* WEIR_TOOLS_HSMD_H */
