/*
 * tests/unit/common/test_util.c - common/util.c: size, duration and
 * HOST:PORT parsing, return-code formatting, small file helpers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/util.h"
#include "harness.h"

/* ------------------------------------------------------------ weir_parse_size */

static void test_parse_size_plain_number_is_bytes(void)
{
	uint64_t v = 1;
	CU_ASSERT_EQUAL(weir_parse_size("0", &v), 0);
	CU_ASSERT_EQUAL(v, 0);
	CU_ASSERT_EQUAL(weir_parse_size("4096", &v), 0);
	CU_ASSERT_EQUAL(v, 4096);
	CU_ASSERT_EQUAL(weir_parse_size("18446744073709551615", &v), 0);
	CU_ASSERT_EQUAL(v, UINT64_MAX);
}

static void test_parse_size_binary_units_multiply(void)
{
	uint64_t v = 0;
	CU_ASSERT_EQUAL(weir_parse_size("64K", &v), 0);
	CU_ASSERT_EQUAL(v, 65536);
	CU_ASSERT_EQUAL(weir_parse_size("64k", &v), 0);
	CU_ASSERT_EQUAL(v, 65536);
	CU_ASSERT_EQUAL(weir_parse_size("4MiB", &v), 0);
	CU_ASSERT_EQUAL(v, 4ULL << 20);
	CU_ASSERT_EQUAL(weir_parse_size("4M", &v), 0);
	CU_ASSERT_EQUAL(v, 4ULL << 20);
	CU_ASSERT_EQUAL(weir_parse_size("4MB", &v), 0);
	CU_ASSERT_EQUAL(v, 4ULL << 20);
	CU_ASSERT_EQUAL(weir_parse_size("1G", &v), 0);
	CU_ASSERT_EQUAL(v, 1ULL << 30);
	CU_ASSERT_EQUAL(weir_parse_size("1GiB", &v), 0);
	CU_ASSERT_EQUAL(v, 1ULL << 30);
	CU_ASSERT_EQUAL(weir_parse_size("2T", &v), 0);
	CU_ASSERT_EQUAL(v, 2ULL << 40);
	CU_ASSERT_EQUAL(weir_parse_size("512B", &v), 0);
	CU_ASSERT_EQUAL(v, 512);
	CU_ASSERT_EQUAL(weir_parse_size("0K", &v), 0);
	CU_ASSERT_EQUAL(v, 0);
}

static void test_parse_size_malformed_text_einval(void)
{
	static const char *bad[] = { "",    "-1",   "K",     "abc", "4X",  "4MiBx",
				     "4 M", "4.5M", "4KiBB", "4iB", "4Mi", "0x10" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 77;
		int rc = weir_parse_size(bad[i], &v);
		if (rc != -EINVAL)
			printf("\n  weir_parse_size(\"%s\") = %d, want -EINVAL\n", bad[i], rc);
		CU_ASSERT_EQUAL(rc, -EINVAL);
		CU_ASSERT_EQUAL(v, 77); /* untouched on error */
	}
	uint64_t v = 0;
	CU_ASSERT_EQUAL(weir_parse_size(NULL, &v), -EINVAL);
}

static void test_parse_size_overflow_erange(void)
{
	uint64_t v = 77;
	CU_ASSERT_EQUAL(weir_parse_size("18446744073709551616", &v), -ERANGE);
	CU_ASSERT_EQUAL(weir_parse_size("99999999999999999999999", &v), -ERANGE);
	CU_ASSERT_EQUAL(weir_parse_size("17179869184G", &v), -ERANGE); /* 2^34 GiB = 2^64 */
	CU_ASSERT_EQUAL(weir_parse_size("16777216T", &v), -ERANGE);    /* 2^24 TiB = 2^64 */
	CU_ASSERT_EQUAL(v, 77);
	CU_ASSERT_EQUAL(weir_parse_size("17179869183G", &v), 0); /* just fits */
	CU_ASSERT_EQUAL(v, 17179869183ULL << 30);
}

/* ------------------------------------------------------------ weir_parse_duration_ms */

static void test_parse_duration_units_convert_to_ms(void)
{
	uint64_t ms = 0;
	CU_ASSERT_EQUAL(weir_parse_duration_ms("250ms", &ms), 0);
	CU_ASSERT_EQUAL(ms, 250);
	CU_ASSERT_EQUAL(weir_parse_duration_ms("30s", &ms), 0);
	CU_ASSERT_EQUAL(ms, 30000);
	CU_ASSERT_EQUAL(weir_parse_duration_ms("1s", &ms), 0);
	CU_ASSERT_EQUAL(ms, 1000);
	CU_ASSERT_EQUAL(weir_parse_duration_ms("2m", &ms), 0);
	CU_ASSERT_EQUAL(ms, 120000);
	CU_ASSERT_EQUAL(weir_parse_duration_ms("1h", &ms), 0);
	CU_ASSERT_EQUAL(ms, 3600000);
	CU_ASSERT_EQUAL(weir_parse_duration_ms("0", &ms), 0);
	CU_ASSERT_EQUAL(ms, 0);
}

static void test_parse_duration_plain_number_is_seconds(void)
{
	uint64_t ms = 0;
	CU_ASSERT_EQUAL(weir_parse_duration_ms("5", &ms), 0);
	CU_ASSERT_EQUAL(ms, 5000);
	CU_ASSERT_EQUAL(weir_parse_duration_ms("86400", &ms), 0);
	CU_ASSERT_EQUAL(ms, 86400000ULL);
}

static void test_parse_duration_malformed_text_einval(void)
{
	static const char *bad[] = { "", "-1", "ms", "s", "5x", "5 s", "5sec", "5S", "1.5s", "5mss" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t ms = 77;
		int rc = weir_parse_duration_ms(bad[i], &ms);
		if (rc != -EINVAL)
			printf("\n  weir_parse_duration_ms(\"%s\") = %d, want -EINVAL\n", bad[i], rc);
		CU_ASSERT_EQUAL(rc, -EINVAL);
		CU_ASSERT_EQUAL(ms, 77);
	}
	uint64_t ms = 0;
	CU_ASSERT_EQUAL(weir_parse_duration_ms(NULL, &ms), -EINVAL);
	CU_ASSERT_EQUAL(weir_parse_duration_ms("99999999999999999999999", &ms), -EINVAL);
}

/* ------------------------------------------------------------ weir_parse_hostport */

static void test_parse_hostport_valid_splits(void)
{
	char host[64];
	uint16_t port = 0;
	CU_ASSERT_EQUAL(weir_parse_hostport("127.0.0.1:7400", host, sizeof(host), &port), 0);
	CU_ASSERT_STRING_EQUAL(host, "127.0.0.1");
	CU_ASSERT_EQUAL(port, 7400);
	CU_ASSERT_EQUAL(weir_parse_hostport("localhost:0", host, sizeof(host), &port), 0);
	CU_ASSERT_STRING_EQUAL(host, "localhost");
	CU_ASSERT_EQUAL(port, 0);
	CU_ASSERT_EQUAL(weir_parse_hostport("h:65535", host, sizeof(host), &port), 0);
	CU_ASSERT_STRING_EQUAL(host, "h");
	CU_ASSERT_EQUAL(port, 65535);
	/* the last colon separates the port */
	CU_ASSERT_EQUAL(weir_parse_hostport("::1:80", host, sizeof(host), &port), 0);
	CU_ASSERT_STRING_EQUAL(host, "::1");
	CU_ASSERT_EQUAL(port, 80);
}

static void test_parse_hostport_malformed_einval(void)
{
	static const char *bad[] = { "",	    "nohost",	  ":7400",	"host:",
				     "host:65536", "host:-1",	  "host:12x",	"host:99999999999",
				     "127.0.0.1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char host[64] = "untouched";
		uint16_t port = 77;
		int rc = weir_parse_hostport(bad[i], host, sizeof(host), &port);
		if (rc != -EINVAL)
			printf("\n  weir_parse_hostport(\"%s\") = %d, want -EINVAL\n", bad[i], rc);
		CU_ASSERT_EQUAL(rc, -EINVAL);
		CU_ASSERT_EQUAL(port, 77);
	}
	char host[64];
	uint16_t port;
	CU_ASSERT_EQUAL(weir_parse_hostport(NULL, host, sizeof(host), &port), -EINVAL);
}

static void test_parse_hostport_host_too_long_einval(void)
{
	char host[4];
	uint16_t port = 0;
	CU_ASSERT_EQUAL(weir_parse_hostport("abcd:80", host, sizeof(host), &port), -EINVAL);
	CU_ASSERT_EQUAL(weir_parse_hostport("abc:80", host, sizeof(host), &port), 0);
	CU_ASSERT_STRING_EQUAL(host, "abc");
	CU_ASSERT_EQUAL(port, 80);
}

/* ------------------------------------------------------------ weir_rc_str */

static void test_rc_str_negative_errno_formats_name_number_text(void)
{
	char b[128];
	CU_ASSERT_STRING_EQUAL(weir_rc_str(-ENOENT, b, sizeof(b)),
			       "-ENOENT(-2) No such file or directory");
	CU_ASSERT_STRING_EQUAL(weir_rc_str(-EIO, b, sizeof(b)), "-EIO(-5) Input/output error");
	CU_ASSERT_STRING_EQUAL(weir_rc_str(-ENOTEMPTY, b, sizeof(b)),
			       "-ENOTEMPTY(-39) Directory not empty");
	CU_ASSERT_STRING_EQUAL(weir_rc_str(-ETIMEDOUT, b, sizeof(b)),
			       "-ETIMEDOUT(-110) Connection timed out");
	CU_ASSERT_PTR_EQUAL(weir_rc_str(-EPROTO, b, sizeof(b)), b);
}

static void test_rc_str_zero_and_unknown_format(void)
{
	char b[128];
	CU_ASSERT_STRING_EQUAL(weir_rc_str(0, b, sizeof(b)), "OK(0)");
	CU_ASSERT_STRING_EQUAL(weir_rc_str(-4000, b, sizeof(b)), "-E?(-4000) Unknown error 4000");
}

static void test_rc_str_small_buffer_truncates_nul_terminated(void)
{
	char b[8];
	memset(b, 'x', sizeof(b));
	weir_rc_str(-ENOENT, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "-ENOENT");
}

static void test_errno_name_known_and_unknown(void)
{
	CU_ASSERT_STRING_EQUAL(weir_errno_name(ENOENT), "ENOENT");
	CU_ASSERT_STRING_EQUAL(weir_errno_name(-ENOENT), "ENOENT");
	CU_ASSERT_STRING_EQUAL(weir_errno_name(ECONNREFUSED), "ECONNREFUSED");
	CU_ASSERT_STRING_EQUAL(weir_errno_name(4000), "E?");
}

/* ------------------------------------------------------------ small helpers */

static void test_fmt_size_units_scale(void)
{
	char b[32];
	CU_ASSERT_STRING_EQUAL(weir_fmt_size(0, b, sizeof(b)), "0 B");
	CU_ASSERT_STRING_EQUAL(weir_fmt_size(1023, b, sizeof(b)), "1023 B");
	CU_ASSERT_STRING_EQUAL(weir_fmt_size(1536, b, sizeof(b)), "1.5 KiB");
	CU_ASSERT_STRING_EQUAL(weir_fmt_size(3ULL << 30, b, sizeof(b)), "3.0 GiB");
}

static void test_file_write_atomic_roundtrip_reads_back(void)
{
	char dir[] = "/tmp/weir-unit-XXXXXX";
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/port", dir);
	CU_ASSERT_EQUAL(weir_file_write_atomic(path, "7400\n", 5), 0);
	char buf[64];
	CU_ASSERT_EQUAL(weir_file_read_small(path, buf, sizeof(buf)), 5);
	CU_ASSERT_STRING_EQUAL(buf, "7400\n");
	/* a short buffer keeps len-1 bytes and the NUL */
	CU_ASSERT_EQUAL(weir_file_read_small(path, buf, 3), 2);
	CU_ASSERT_STRING_EQUAL(buf, "74");
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	CU_ASSERT_EQUAL(access(tmp, F_OK), -1); /* no temporary left behind */
	snprintf(path, sizeof(path), "%s/missing", dir);
	CU_ASSERT_EQUAL(weir_file_read_small(path, buf, sizeof(buf)), -ENOENT);
	char deep[160];
	snprintf(deep, sizeof(deep), "%s/a/b/c", dir);
	CU_ASSERT_EQUAL(weir_mkdir_p(deep, 0755), 0);
	CU_ASSERT_EQUAL(weir_mkdir_p(deep, 0755), 0); /* exists: still 0 */
	CU_ASSERT_EQUAL(access(deep, F_OK), 0);
	CU_ASSERT_EQUAL(th_rm_rf(dir), 0);
	CU_ASSERT_EQUAL(access(dir, F_OK), -1);
}

/*
 * The readdir cookie is on disk (the MDS's dentry keys) and on the wire
 * (a client lists from its cache in the same order): pinned values of
 * FNV-1a 64 >> 1, and the reserved values avoided.
 */
static void test_name_cookie_is_pinned(void)
{
	CU_ASSERT_EQUAL(weir_name_cookie("", 0), 0x65f94e7242111192ULL);
	CU_ASSERT_EQUAL(weir_name_cookie("a", 1), 0x57b1ee264300f646ULL);
	CU_ASSERT_EQUAL(weir_name_cookie("f07", 3), 0x6eafe68c7fb6906aULL);
	CU_ASSERT_EQUAL(weir_name_cookie("f07x", 3), weir_name_cookie("f07", 3)); /* len bytes only */
	char nm[16];
	for (int i = 0; i < 10000; i++) {
		int n = snprintf(nm, sizeof(nm), "n%d", i);
		uint64_t c = weir_name_cookie(nm, (size_t)n);
		CU_ASSERT(c >= 3 && c < (uint64_t)INT64_MAX);
	}
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_parse_size_plain_number_is_bytes),
		TH_TEST(test_name_cookie_is_pinned),
		TH_TEST(test_parse_size_binary_units_multiply),
		TH_TEST(test_parse_size_malformed_text_einval),
		TH_TEST(test_parse_size_overflow_erange),
		TH_TEST(test_parse_duration_units_convert_to_ms),
		TH_TEST(test_parse_duration_plain_number_is_seconds),
		TH_TEST(test_parse_duration_malformed_text_einval),
		TH_TEST(test_parse_hostport_valid_splits),
		TH_TEST(test_parse_hostport_malformed_einval),
		TH_TEST(test_parse_hostport_host_too_long_einval),
		TH_TEST(test_rc_str_negative_errno_formats_name_number_text),
		TH_TEST(test_rc_str_zero_and_unknown_format),
		TH_TEST(test_rc_str_small_buffer_truncates_nul_terminated),
		TH_TEST(test_errno_name_known_and_unknown),
		TH_TEST(test_fmt_size_units_scale),
		TH_TEST(test_file_write_atomic_roundtrip_reads_back),
		TH_TEST_END,
	};
	return th_cunit_run("util", NULL, NULL, tests);
}
