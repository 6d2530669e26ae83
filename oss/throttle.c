/*
 * oss/throttle.c - HSM backpressure on writers (the S3 tier, issue 5).
 *
 * DESIGN. When the MDS's watermark policy finds an OST over its high
 * watermark with nothing it can release (mds/hsm_policy.c), its heartbeat
 * reply asks this OSS to slow that OST's writers (OssRegisterRep.throttle_ms,
 * 10 to 100 ms; oss/reg.c stores it in ot_throttle_ms). Each OST_WRITE on a
 * throttled OST is done as usual, but its reply is handed to the
 * "oss-throttle" thread, which sends it when the delay has passed: a client
 * writing synchronously slows down, nothing fails, and the loops never
 * sleep (reads and other OSTs are not delayed). The thread keeps the held
 * replies in a list sorted by due time, guarded by tt_lock (a leaf: the
 * reply is sent after it is released). oss_throttle_stop() sends every held
 * reply at once, and afterwards replies are not held any more; the state
 * is freed by oss_throttle_fini() once the loops have stopped. Changes of an
 * OST's throttle are logged when they happen, and the number of delayed
 * writes every 10 s while any are.
 */
#define _GNU_SOURCE
#include "oss_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"

#define THROTTLE_MAX_MS 100
#define THROTTLE_LOG_NS (10ULL * 1000000000ULL)

struct throttle_ent {
	uint64_t te_due_ns;            /* monotonic */
	void (*te_fn)(void *arg);
	void *te_arg;
	struct throttle_ent *te_next;
};

struct oss_throttle {
	pthread_mutex_t tt_lock;       /* everything below */
	pthread_cond_t tt_cond;
	struct throttle_ent *tt_list;  /* by due time */
	bool tt_stop;
	bool tt_running;
	pthread_t tt_thread;
	uint64_t tt_delayed;           /* writes delayed since the last log line */
	uint64_t tt_logged_ns;
};

static void *throttle_main(void *arg)
{
	struct oss_throttle *tt = arg;
	weir_thread_name("oss-throttle");
	pthread_mutex_lock(&tt->tt_lock);
	while (!tt->tt_stop) {
		uint64_t now = weir_now_ns();
		struct throttle_ent *e = tt->tt_list;
		if (e && e->te_due_ns <= now) {
			tt->tt_list = e->te_next;
			pthread_mutex_unlock(&tt->tt_lock);
			e->te_fn(e->te_arg);
			free(e);
			pthread_mutex_lock(&tt->tt_lock);
			continue;
		}
		if (tt->tt_delayed && now - tt->tt_logged_ns >= THROTTLE_LOG_NS) {
			WEIR_LOG_NOTICE("throttle: %llu write replies delayed in the last %llus (HSM"
					" backpressure: an OST is over its high watermark)",
					(unsigned long long)tt->tt_delayed,
					(unsigned long long)((now - tt->tt_logged_ns) / 1000000000ULL));
			tt->tt_delayed = 0;
			tt->tt_logged_ns = now;
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t wait_ns = e ? e->te_due_ns - now : 1000000000ULL;
		uint64_t ns = (uint64_t)ts.tv_nsec + wait_ns;
		ts.tv_sec += (time_t)(ns / 1000000000ULL);
		ts.tv_nsec = (long)(ns % 1000000000ULL);
		pthread_cond_timedwait(&tt->tt_cond, &tt->tt_lock, &ts);
	}
	/* stopping: send everything held now */
	struct throttle_ent *list = tt->tt_list;
	tt->tt_list = NULL;
	pthread_mutex_unlock(&tt->tt_lock);
	while (list) {
		struct throttle_ent *e = list;
		list = e->te_next;
		e->te_fn(e->te_arg);
		free(e);
	}
	return NULL;
}

void oss_throttle_start(struct oss *oss)
{
	struct oss_throttle *tt = calloc(1, sizeof(*tt));
	if (!tt) {
		WEIR_LOG_WARN("throttle: out of memory; HSM backpressure disabled");
		return;
	}
	pthread_mutex_init(&tt->tt_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&tt->tt_cond, &ca);
	pthread_condattr_destroy(&ca);
	tt->tt_logged_ns = weir_now_ns();
	int rc = pthread_create(&tt->tt_thread, NULL, throttle_main, tt);
	if (rc) {
		WEIR_LOG_WARN("throttle: cannot start its thread (%d); HSM backpressure disabled", rc);
		pthread_cond_destroy(&tt->tt_cond);
		pthread_mutex_destroy(&tt->tt_lock);
		free(tt);
		return;
	}
	tt->tt_running = true;
	oss->o_throttle = tt;
}

void oss_throttle_stop(struct oss *oss)
{
	struct oss_throttle *tt = oss->o_throttle;
	if (!tt)
		return;
	pthread_mutex_lock(&tt->tt_lock);
	tt->tt_stop = true;
	pthread_cond_signal(&tt->tt_cond);
	pthread_mutex_unlock(&tt->tt_lock);
	pthread_join(tt->tt_thread, NULL);
	/* the loops may still finish writes and call oss_throttle_defer(), which
	 * now replies at once: tt stays until oss_throttle_fini() */
}

void oss_throttle_fini(struct oss *oss)
{
	struct oss_throttle *tt = oss->o_throttle;
	if (!tt)
		return;
	oss->o_throttle = NULL;
	pthread_cond_destroy(&tt->tt_cond);
	pthread_mutex_destroy(&tt->tt_lock);
	free(tt);
}

void oss_throttle_defer(struct oss *oss, uint32_t ms, void (*fn)(void *arg), void *arg)
{
	struct oss_throttle *tt = oss->o_throttle;
	struct throttle_ent *e = (tt && ms) ? calloc(1, sizeof(*e)) : NULL;
	if (!e) {
		fn(arg); /* not throttled, or no memory: never fail the write */
		return;
	}
	e->te_due_ns = weir_now_ns() + (uint64_t)WEIR_MIN(ms, (uint32_t)THROTTLE_MAX_MS) * 1000000ULL;
	e->te_fn = fn;
	e->te_arg = arg;
	pthread_mutex_lock(&tt->tt_lock);
	if (tt->tt_stop) {
		pthread_mutex_unlock(&tt->tt_lock);
		free(e);
		fn(arg);
		return;
	}
	struct throttle_ent **pp = &tt->tt_list;
	while (*pp && (*pp)->te_due_ns <= e->te_due_ns)
		pp = &(*pp)->te_next;
	e->te_next = *pp;
	*pp = e;
	tt->tt_delayed++;
	if (tt->tt_list == e)
		pthread_cond_signal(&tt->tt_cond);
	pthread_mutex_unlock(&tt->tt_lock);
}

void oss_throttle_set(struct oss_ost *ot, uint32_t ms)
{
	ms = WEIR_MIN(ms, (uint32_t)THROTTLE_MAX_MS);
	uint32_t old = atomic_exchange(&ot->ot_throttle_ms, ms);
	if (old == ms)
		return;
	if (ms)
		WEIR_LOG_WARN("ost=%d dir=%s: the MDS throttles writers: each write reply delayed"
			      " %u ms (over the HSM high watermark, nothing releasable)",
			      atomic_load(&ot->ot_index), ot->ot_dir, ms);
	else
		WEIR_LOG_NOTICE("ost=%d dir=%s: writers no longer throttled",
				atomic_load(&ot->ot_index), ot->ot_dir);
}
