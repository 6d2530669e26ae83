/*
 * tests/unit/net/test_npoll.c - the adaptive polling window (net/npoll.h):
 * the cpuidle-haltpoll rule, step by step.
 */
#define _GNU_SOURCE
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

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_npoll_starts_closed_grows_from_start_to_max),
		TH_TEST(test_npoll_shrinks_past_max_to_zero),
		TH_TEST(test_npoll_max_zero_never_opens_small_max_caps),
		TH_TEST_END,
	};
	return th_cunit_run("npoll", NULL, NULL, tests);
}
