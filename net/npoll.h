/*
 * net/npoll.h - adaptive polling before a thread sleeps on its sockets,
 * private to net/.
 *
 * A thread about to block waiting for a request (a server loop in
 * epoll_wait) or for a reply (a client in poll) first checks without
 * blocking, over and over (yielding the CPU between checks), for up to a
 * window of time; only then does it sleep. When the event comes within the
 * window the thread was never descheduled, so nobody pays the wakeup: on
 * an idle CPU that is the exit from the idle state, which in a VM whose
 * guest does not halt-poll costs a trip through the hypervisor (about
 * 100 us per wakeup measured on the 2-vCPU VM of docs/performance.md,
 * against a 15-30 us request).
 *
 * The window adapts with the rule of Linux's cpuidle-haltpoll governor
 * (drivers/cpuidle/governors/haltpoll.c, adjust_poll_limit): after each
 * wait of idle_ns (from its start to the event, polling plus sleeping), if
 * the event came later than the window but within the maximum, a longer
 * window would have caught it: double it (at least NET_POLL_GROW_START_NS);
 * if it came after the maximum, polling is a waste here: halve it (under
 * 1 us it is 0). A thread whose events come quickly (a ping-pong client and
 * its server) so polls; one whose events come rarely or slowly (a bulk
 * reply, an idle loop) soon does not. The cost is CPU: at most the window
 * per wait. Polling is only worth it on a CPU nobody else wants (haltpoll
 * polls only in the idle loop): between checks the thread yields, and a
 * yield that took longer than NET_POLL_YIELD_NS means another thread ran
 * meanwhile (the CPU is contended), so the wait stops polling, sleeps, and
 * halves the window.
 *
 * Not thread-safe: one per waiting role (a server loop, a connection's
 * receive side).
 */
#ifndef WEIR_NET_NPOLL_H
#define WEIR_NET_NPOLL_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/util.h"

/** Window after the first growth from 0 (haltpoll's guest_halt_poll_grow_start). */
#define NET_POLL_GROW_START_NS 50000ULL
/** Default maximum window, us (haltpoll's guest_halt_poll_ns is 200 us). */
#define NET_POLL_DEFAULT_US 200U
/** Largest maximum window a setting may ask for, us. */
#define NET_POLL_MAX_US 10000U
/** A sched_yield() longer than this (ns) ran another thread: the CPU is wanted. */
#define NET_POLL_YIELD_NS 20000ULL

struct net_poll {
	uint64_t np_max_ns; /* 0: never poll */
	uint64_t np_win_ns; /* current window, 0..np_max_ns */
	int (*np_yield)(void); /* sched_yield; a test may time its own */
};

static inline void net_poll_init(struct net_poll *p, uint32_t max_us)
{
	p->np_max_ns = (uint64_t)max_us * 1000ULL;
	p->np_win_ns = 0;
	p->np_yield = sched_yield;
}

/** Adjust the window after a wait of \a idle_ns (see the file comment). */
static inline void net_poll_adjust(struct net_poll *p, uint64_t idle_ns)
{
	if (idle_ns > p->np_win_ns && idle_ns <= p->np_max_ns) {
		uint64_t v = p->np_win_ns * 2;
		if (v < NET_POLL_GROW_START_NS)
			v = NET_POLL_GROW_START_NS;
		p->np_win_ns = v < p->np_max_ns ? v : p->np_max_ns;
	} else if (idle_ns > p->np_max_ns) {
		p->np_win_ns /= 2;
		if (p->np_win_ns < 1000)
			p->np_win_ns = 0;
	}
}

/**
 * Yield between two checks of a polling wait.
 * \return true to go on polling; false when another thread took the CPU
 *         meanwhile (the window is then halved: stop polling and sleep).
 */
static inline bool net_poll_yield(struct net_poll *p)
{
	uint64_t t = weir_now_ns();
	p->np_yield();
	if (weir_now_ns() - t <= NET_POLL_YIELD_NS)
		return true;
	p->np_win_ns /= 2;
	if (p->np_win_ns < 1000)
		p->np_win_ns = 0;
	return false;
}

/**
 * One wait, polling first. Calls \a check(arg) -- which must not block and
 * returns >0 when ready, 0 when not yet, <0 on error -- over and over,
 * yielding in between, until it is not 0, the window has passed, \a
 * until_ns (CLOCK_MONOTONIC ns, 0 = none) has come, or a yield showed the
 * CPU contended; then, if it never said ready or error, \a block(arg),
 * which sleeps until ready, its own timeout or an error and returns like
 * \a check. The window is then adjusted from the whole wait's length
 * (net_poll_adjust), except after a contended yield, whose halving stands.
 * \return the last result of \a check or \a block.
 */
static inline int net_poll_wait(struct net_poll *p, uint64_t until_ns, int (*check)(void *arg),
				int (*block)(void *arg), void *arg)
{
	uint64_t t0 = weir_now_ns();
	bool contended = false;
	int n = 0;
	if (p->np_win_ns) {
		uint64_t end = t0 + p->np_win_ns;
		if (until_ns && until_ns < end)
			end = until_ns;
		while ((n = check(arg)) == 0 && weir_now_ns() < end) {
			if (!net_poll_yield(p)) {
				contended = true;
				break;
			}
		}
	}
	if (n == 0)
		n = block(arg);
	if (!contended)
		net_poll_adjust(p, weir_now_ns() - t0);
	return n;
}

#endif /* WEIR_NET_NPOLL_H */
