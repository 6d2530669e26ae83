/*
 * mds/commit.c - group commit of the MDT log (DESIGN.md, "Durability rules").
 *
 * DESIGN. One thread, "mds-commit", owns syncing the RocksDB WAL. Every
 * metadata write is in the WAL file before its reply (kv_batch_commit, not
 * synced). This thread syncs the WAL every mc_commit_interval_ms, and at
 * once when a client's fsync/syncfs (MDS_SYNC) is waiting: such a request
 * is parked with the write sequence number current at its arrival and is
 * answered, from this thread, when a sync covering that number completes.
 * Requests that arrive while a sync runs ride the next one together, so
 * many fsyncs cost one device sync. A round with no fsync waiting first
 * writes the flag clears of clean closes still held in memory
 * (mds/ns_clean.c), so they reach the WAL within a commit interval or so. Lock: m_commit_lock guards the
 * waiter list and m_synced_seq; it is never held across the sync itself
 * nor across the namespace lock.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"

static void *commit_main(void *arg)
{
	struct mds *m = arg;
	weir_thread_name("mds-commit");
	pthread_mutex_lock(&m->m_commit_lock);
	while (!atomic_load(&m->m_stop)) {
		if (!m->m_commit_kick) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t ns = (uint64_t)ts.tv_nsec + m->m_conf.mc_commit_interval_ms * 1000000ULL;
			ts.tv_sec += (time_t)(ns / 1000000000ULL);
			ts.tv_nsec = (long)(ns % 1000000000ULL);
			pthread_cond_timedwait(&m->m_commit_cond, &m->m_commit_lock, &ts);
		}
		m->m_commit_kick = false;
		if (!m->m_waiters && mds_ns_clean_pending(m->m_ns)) {
			/* clean closes: their flag clears go to disk (mds/ns_clean.c);
			 * not while an fsync waits: this takes the namespace lock,
			 * which a stream of lookups may hold off (the clears are soft
			 * state: they ride a later round, or a full group) */
			pthread_mutex_unlock(&m->m_commit_lock);
			mds_ns_clean_flush(m->m_ns);
			pthread_mutex_lock(&m->m_commit_lock);
		}
		uint64_t have = mds_ns_write_seq(m->m_ns);
		if (have <= m->m_synced_seq && !m->m_waiters)
			continue;
		pthread_mutex_unlock(&m->m_commit_lock);
		uint64_t synced = 0;
		int rc = mds_ns_sync(m->m_ns, &synced);
		if (rc)
			WEIR_LOG_ERROR("op=commit rc=%d: MDT log sync failed", rc);
		pthread_mutex_lock(&m->m_commit_lock);
		if (!rc && synced > m->m_synced_seq)
			__atomic_store_n(&m->m_synced_seq, synced, __ATOMIC_RELEASE);
		/* answer the waiters this sync covers (all of them on error) */
		struct mds_sync_waiter *done = NULL, **pp = &m->m_waiters;
		while (*pp) {
			struct mds_sync_waiter *w = *pp;
			if (rc || w->sw_seq <= m->m_synced_seq) {
				/* the reply prefix tells the client what this sync covered */
				w->sw_rq->rq_rep_last_committed = mds_commit_synced_seq(m);
				*pp = w->sw_next;
				w->sw_next = done;
				done = w;
			} else {
				pp = &w->sw_next;
			}
		}
		pthread_mutex_unlock(&m->m_commit_lock);
		while (done) {
			struct mds_sync_waiter *w = done;
			done = w->sw_next;
			net_req_reply(w->sw_rq, rc ? -EIO : 0, NULL, NULL, 0);
			free(w);
		}
		pthread_mutex_lock(&m->m_commit_lock);
	}
	pthread_mutex_unlock(&m->m_commit_lock);
	return NULL;
}

void mds_commit_wait_async(struct mds *m, struct net_req *rq)
{
	struct mds_sync_waiter *w = calloc(1, sizeof(*w));
	if (!w) {
		net_req_reply(rq, -ENOMEM, NULL, NULL, 0);
		return;
	}
	w->sw_rq = rq;
	w->sw_seq = mds_ns_write_seq(m->m_ns);
	pthread_mutex_lock(&m->m_commit_lock);
	if (w->sw_seq <= m->m_synced_seq) {
		rq->rq_rep_last_committed = mds_commit_synced_seq(m);
		pthread_mutex_unlock(&m->m_commit_lock);
		free(w);
		net_req_reply(rq, 0, NULL, NULL, 0);
		return;
	}
	w->sw_next = m->m_waiters;
	m->m_waiters = w;
	m->m_commit_kick = true;
	pthread_cond_signal(&m->m_commit_cond);
	pthread_mutex_unlock(&m->m_commit_lock);
}

uint64_t mds_commit_synced_seq(struct mds *m)
{
	uint64_t s = __atomic_load_n(&m->m_synced_seq, __ATOMIC_ACQUIRE);
	/* in the recovery window, transnos of this run may equal those of
	 * requests the crash lost and the clients have yet to replay: a reply
	 * must not tell them those are safe (mds/recovery.c) */
	uint64_t boot = mds_ns_boot_transno(m->m_ns);
	if (s > boot && mds_recovery_active(m))
		s = boot;
	return s;
}

int mds_commit_start(struct mds *m)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->m_commit_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&m->m_commit_lock, NULL);
	__atomic_store_n(&m->m_synced_seq, mds_ns_write_seq(m->m_ns), __ATOMIC_RELEASE);
	return -pthread_create(&m->m_commit_thread, NULL, commit_main, m);
}

void mds_commit_stop(struct mds *m)
{
	pthread_mutex_lock(&m->m_commit_lock);
	m->m_commit_kick = true;
	pthread_cond_signal(&m->m_commit_cond);
	pthread_mutex_unlock(&m->m_commit_lock);
	pthread_join(m->m_commit_thread, NULL);
	/* final sync, then answer anyone still waiting */
	int rc = mds_ns_sync(m->m_ns, NULL);
	while (m->m_waiters) {
		struct mds_sync_waiter *w = m->m_waiters;
		m->m_waiters = w->sw_next;
		net_req_reply(w->sw_rq, rc ? -EIO : 0, NULL, NULL, 0);
		free(w);
	}
	pthread_cond_destroy(&m->m_commit_cond);
	pthread_mutex_destroy(&m->m_commit_lock);
}
