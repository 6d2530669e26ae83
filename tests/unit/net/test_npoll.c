/*
 * tests/unit/net/test_npoll.c - the adaptive polling window (net/npoll.h):
 * the cpuidle-haltpoll rule, step by step.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "net/npoll.h"

#define US 1000ULL

static void test_npoll_starts_closed_grows_from_start_to_max(void)
{
	struct net_poll p;
	net_poll_init(&p, 200);
	CU_ASSERT_EQUAL(p.np_max_ns, 200 * US);
	CU_ASSERT_EQUAL(p.np_win_ns, 0);
	/* an event 30 us after the wait began: a window would have caught it */
	net_poll_adjust(&p, 30 * US);
	CU_ASSERT_EQUAL(p.np_win_ns, NET_POLL_GROW_START_NS);
	/* caught within the window: no change */
	net_poll_adjust(&p, 20 * US);
	CU_ASSERT_EQUAL(p.np_win_ns, NET_POLL_GROW_START_NS);
	/* later than the window, within the maximum: doubles, up to the maximum */
	net_poll_adjust(&p, 120 * US);
	CU_ASSERT_EQUAL(p.np_win_ns, 2 * NET_POLL_GROW_START_NS);
	net_poll_adjust(&p, 150 * US);
	CU_ASSERT_EQUAL(p.np_win_ns, 200 * US);
	net_poll_adjust(&p, 199 * US);
	CU_ASSERT_EQUAL(p.np_win_ns, 200 * US);
}

static void test_npoll_shrinks_past_max_to_zero(void)
{
	struct net_poll p;
	net_poll_init(&p, 200);
	net_poll_adjust(&p, 100 * US);
	net_poll_adjust(&p, 100 * US);
	CU_ASSERT_EQUAL(p.np_win_ns, 2 * NET_POLL_GROW_START_NS);
	/* an event after the maximum (a slow reply, an idle loop): halves */
	net_poll_adjust(&p, 5000 * US);
	CU_ASSERT_EQUAL(p.np_win_ns, NET_POLL_GROW_START_NS);
	for (int i = 0; i < 20; i++)
		net_poll_adjust(&p, 1000000 * US);
	CU_ASSERT_EQUAL(p.np_win_ns, 0); /* under 1 us it closes */
}

static void test_npoll_max_zero_never_opens_small_max_caps(void)
{
	struct net_poll p;
	net_poll_init(&p, 0);
	for (int i = 0; i < 5; i++)
		net_poll_adjust(&p, (uint64_t)i * US);
	CU_ASSERT_EQUAL(p.np_win_ns, 0);
	net_poll_init(&p, 20); /* a maximum under the growth start */
	net_poll_adjust(&p, 10 * US);
	CU_ASSERT_EQUAL(p.np_win_ns, 20 * US);
}

/* ------------------------------------------------------------ net_poll_wait */

static int pipe_check(void *arg)
{
	struct pollfd pfd = { .fd = *(int *)arg, .events = POLLIN };
	return poll(&pfd, 1, 0) > 0;
}

static int pipe_block(void *arg)
{
	struct pollfd pfd = { .fd = *(int *)arg, .events = POLLIN };
	return poll(&pfd, 1, 5000) > 0 ? 1 : -ETIMEDOUT;
}

static int pipe_wfd = -1;
static uint64_t yield_spin_ns;
static int yields;

/* A yield during which "another thread" ran for yield_spin_ns; the
 * first one also makes the pipe readable. */
static int busy_yield(void)
{
	uint64_t t = weir_now_ns();
	while (weir_now_ns() - t < yield_spin_ns)
		;
	if (yields++ == 0 && pipe_wfd >= 0)
		CU_ASSERT_EQUAL(write(pipe_wfd, "x", 1), 1);
	return 0;
}

/*
 * A yield that took longer than NET_POLL_YIELD_NS (the CPU was wanted)
 * stops polling and halves the window, and the halving stands: the wait's
 * length (which a longer window would have caught) must not grow it back.
 * A quick yield keeps polling; the event then caught leaves the window be.
 */
static void test_npoll_wait_contended_yield_halves_and_stays(void)
{
	int fds[2];
	CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
	struct net_poll p;
	net_poll_init(&p, 200);
	p.np_win_ns = 200 * US;
	p.np_yield = busy_yield;
	pipe_wfd = fds[1];
	yields = 0;
	yield_spin_ns = 150 * US; /* > NET_POLL_YIELD_NS; the wait then lasts
				    * longer than the halved window */
	CU_ASSERT_EQUAL(net_poll_wait(&p, 0, pipe_check, pipe_block, &fds[0]), 1);
	CU_ASSERT_EQUAL(yields, 1);
	CU_ASSERT_EQUAL(p.np_win_ns, 100 * US);

	char c;
	CU_ASSERT_EQUAL(read(fds[0], &c, 1), 1);
	yields = 0;
	yield_spin_ns = 1 * US; /* nobody else wanted the CPU */
	CU_ASSERT_EQUAL(net_poll_wait(&p, 0, pipe_check, pipe_block, &fds[0]), 1);
	CU_ASSERT_EQUAL(yields, 1); /* ready at the next check */
	CU_ASSERT_EQUAL(p.np_win_ns, 100 * US);
	CU_ASSERT_EQUAL(read(fds[0], &c, 1), 1);
	pipe_wfd = -1;
	close(fds[1]);
	close(fds[0]);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_npoll_starts_closed_grows_from_start_to_max),
		TH_TEST(test_npoll_shrinks_past_max_to_zero),
		TH_TEST(test_npoll_max_zero_never_opens_small_max_caps),
		TH_TEST(test_npoll_wait_contended_yield_halves_and_stays),
		TH_TEST_END,
	};
	return th_cunit_run("npoll", NULL, NULL, tests);
}
