/*
 * oss/slow.c - the OSS's "slow" requests, run off the event loops.
 *
 * OST_TRUNCATE and OST_DESTROY work with plain syscalls (ftruncate, unlink)
 * that can wait for the disk: for pages under writeback (the early
 * writeback of a large write, oss/svc_io.c), or for the blocks of a large
 * file to be freed. On a loop thread such a wait stalls every connection of
 * that loop (36-51 ms measured for a truncate right after 128 MiB of
 * writes). So the loops hand these requests to OSS_SLOW_THREADS "oss-slow"
 * threads, which run the handler and reply (net_req_reply is thread-safe).
 *
 * Ordering: a request handed here may finish after requests the same
 * connection sent later. Weir's clients never pipeline anything behind a
 * truncate or destroy of the same object: they wait for its reply
 * (weir_ftruncate, open with O_TRUNC, the MDS's destroy thread, HSM), and
 * the fd cache's generations keep a concurrent open from caching an fd of
 * a removed file (oss/fdcache.c).
 *
 * Lock: sl_lock (a leaf) guards the queue and the stop flag.
 */
#define _GNU_SOURCE
#include "oss_int.h"

#include <errno.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/util.h"

#define OSS_SLOW_THREADS 2

struct oss_slow_job {
	void (*sj_fn)(struct net_req *rq);
	struct net_req *sj_rq;
	struct oss_slow_job *sj_next;
};

struct oss_slow {
	pthread_mutex_t sl_lock;
	pthread_cond_t sl_cond;
	struct oss_slow_job *sl_head, *sl_tail;
	bool sl_stop;
	uint32_t sl_nr_threads;
	pthread_t sl_threads[OSS_SLOW_THREADS];
};

static void *slow_main(void *arg)
{
	struct oss_slow *sl = arg;
	weir_thread_name("oss-slow");
	pthread_mutex_lock(&sl->sl_lock);
	for (;;) {
		struct oss_slow_job *j = sl->sl_head;
		if (!j) {
			if (sl->sl_stop)
				break;
			pthread_cond_wait(&sl->sl_cond, &sl->sl_lock);
			continue;
		}
		sl->sl_head = j->sj_next;
		if (!sl->sl_head)
			sl->sl_tail = NULL;
		pthread_mutex_unlock(&sl->sl_lock);
		j->sj_fn(j->sj_rq);
		free(j);
		pthread_mutex_lock(&sl->sl_lock);
	}
	pthread_mutex_unlock(&sl->sl_lock);
	return NULL;
}

int oss_slow_start(struct oss *oss)
{
	struct oss_slow *sl = calloc(1, sizeof(*sl));
	if (!sl)
		return -ENOMEM;
	pthread_mutex_init(&sl->sl_lock, NULL);
	pthread_cond_init(&sl->sl_cond, NULL);
	for (uint32_t i = 0; i < OSS_SLOW_THREADS; i++) {
		int rc = pthread_create(&sl->sl_threads[i], NULL, slow_main, sl);
		if (rc) {
			WEIR_LOG_WARN("rc=%d: cannot start an oss-slow thread; %u running", -rc,
				      sl->sl_nr_threads);
			break;
		}
		sl->sl_nr_threads++;
	}
	oss->o_slow = sl;
	return 0;
}

void oss_slow_run(struct oss *oss, void (*fn)(struct net_req *rq), struct net_req *rq)
{
	struct oss_slow *sl = oss->o_slow;
	struct oss_slow_job *j = sl && sl->sl_nr_threads ? malloc(sizeof(*j)) : NULL;
	if (!j) {
		fn(rq); /* no worker (or no memory): on the loop, as before */
		return;
	}
	j->sj_fn = fn;
	j->sj_rq = rq;
	j->sj_next = NULL;
	pthread_mutex_lock(&sl->sl_lock);
	if (sl->sl_stop) {
		pthread_mutex_unlock(&sl->sl_lock);
		free(j);
		fn(rq);
		return;
	}
	if (sl->sl_tail)
		sl->sl_tail->sj_next = j;
	else
		sl->sl_head = j;
	sl->sl_tail = j;
	pthread_cond_signal(&sl->sl_cond);
	pthread_mutex_unlock(&sl->sl_lock);
}

void oss_slow_stop(struct oss *oss)
{
	struct oss_slow *sl = oss->o_slow;
	if (!sl)
		return;
	pthread_mutex_lock(&sl->sl_lock);
	sl->sl_stop = true; /* the threads finish the queue first */
	pthread_cond_broadcast(&sl->sl_cond);
	pthread_mutex_unlock(&sl->sl_lock);
	for (uint32_t i = 0; i < sl->sl_nr_threads; i++)
		pthread_join(sl->sl_threads[i], NULL);
	pthread_cond_destroy(&sl->sl_cond);
	pthread_mutex_destroy(&sl->sl_lock);
	free(sl);
	oss->o_slow = NULL;
}
