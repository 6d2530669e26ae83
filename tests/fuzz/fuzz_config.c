/*
 * tests/fuzz/fuzz_config.c - libFuzzer harness: the daemons' configuration
 * parser (common/config.c: the INI file through libinih, the command line,
 * defaults, bounds) and the value parsers under it (common/util.c: sizes,
 * durations, HOST:PORT).
 *
 * Input: an INI file, then a NUL byte, then command-line arguments, one per
 * line. The table has one setting of each type, shaped like weir-mds's and
 * weir-oss's (bounds, a required one, a list), in section [mds]. The file
 * is handed over as /proc/self/fd/N of a memfd; any --config argument is
 * pointed at that same file (never at another path: /dev/zero would hang
 * libinih). What the parser prints for bad input goes to /dev/null (the
 * stderr FILE is swapped, not fd 2, so sanitizer reports still show).
 * Checks: the parse returns 0, 1 (--help) or -EINVAL; a successful parse
 * leaves every number within its bounds and the required setting set.
 * Every line of the arguments is also given to weir_parse_size,
 * weir_parse_duration_ms and weir_parse_hostport. The INI file is also
 * loaded as the MDS's node map (mds/nodemap.c, --nodemap): a map that
 * loads is within its bounds, and peers (keys named in it and others,
 * IPv4, IPv6 and IPv4-mapped IPv6 addresses) are matched to groups whose
 * id mapping is applied.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "mds/nodemap.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(fz_err, "fuzz_config: %s:%d: check failed: %s\n", __FILE__,        \
				__LINE__, #c);                                                     \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#define MAX_ARGS 64
#define MAX_LIST 4

static FILE *fz_err, *fz_null;
static int fz_memfd = -1;
static char fz_path[64];

static const char *o_mdt, *o_listen, *o_list[MAX_LIST];
static uint32_t o_threads, o_squash, o_nr_list;
static uint64_t o_size, o_ms;

static struct weir_cfg tab[] = {
	{ "mdt", WEIR_CFG_STR, &o_mdt, NULL, 0, 0, "MDT directory", true, 0, NULL },
	{ "listen", WEIR_CFG_STR, &o_listen, "127.0.0.1:7400", 0, 0, "HOST:PORT", false, 0, NULL },
	{ "threads", WEIR_CFG_U32, &o_threads, "0", 0, 256, "loops", false, 0, NULL },
	{ "root-squash", WEIR_CFG_U32, &o_squash, "0", 0, 1, "0 or 1", false, 0, NULL },
	{ "default-stripe-size", WEIR_CFG_SIZE, &o_size, "1MiB", 65536, 1ULL << 30, "bytes", false,
	  0, NULL },
	{ "lease-time", WEIR_CFG_DURATION, &o_ms, "30s", 500, 3600000, "ms", false, 0, NULL },
	{ "ost", WEIR_CFG_LIST, o_list, NULL, 0, 0, "OST directory", false, MAX_LIST, &o_nr_list },
};
#define NR_TAB (sizeof(tab) / sizeof(tab[0]))

static void tab_reset(void)
{
	free((void *)o_mdt);
	free((void *)o_listen);
	for (uint32_t i = 0; i < o_nr_list; i++)
		free((void *)o_list[i]);
	o_mdt = o_listen = NULL;
	o_nr_list = 0;
	o_threads = o_squash = 0;
	o_size = o_ms = 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_err = stderr;
	fz_null = fopen("/dev/null", "w");
	fz_memfd = memfd_create("fuzz-config", MFD_CLOEXEC);
	if (!fz_null || fz_memfd < 0) {
		perror("fuzz_config: set-up");
		abort();
	}
	snprintf(fz_path, sizeof(fz_path), "/proc/self/fd/%d", fz_memfd);
	weir_log_open("/dev/null");
	weir_log_set_level(WEIR_LOG_LVL_DEBUG); /* weir_cfg_log formats every value */
	return 0;
}

static void values_check(const char *s)
{
	uint64_t v;
	char host[64];
	uint16_t port;
	int rc = weir_parse_size(s, &v);
	CHECK(rc == 0 || rc == -EINVAL || rc == -ERANGE);
	rc = weir_parse_duration_ms(s, &v);
	CHECK(rc == 0 || rc == -EINVAL || rc == -ERANGE);
	rc = weir_parse_hostport(s, host, sizeof(host), &port);
	CHECK(rc == 0 || rc == -EINVAL || rc == -ENAMETOOLONG);
	if (rc == 0)
		CHECK(memchr(host, 0, sizeof(host)) != NULL);
}

static void peer(struct sockaddr_storage *ss, const char *a)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(a, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		inet_pton(AF_INET6, a, &s6->sin6_addr);
	} else if (a[0]) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		inet_pton(AF_INET, a, &s4->sin_addr);
	}
}

static void nodemap_check(void)
{
	static struct mds_nodemap nm;
	char why[256] = "";
	int rc = mds_nodemap_load(&nm, fz_path, false, why, sizeof(why));
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc) {
		CHECK(why[0] != '\0');
		return;
	}
	CHECK(nm.nm_nr <= MDS_NM_MAX_GROUPS);
	for (unsigned i = 0; i < nm.nm_nr; i++) {
		const struct mds_nm_group *g = &nm.nm_groups[i];
		CHECK(g->ng_nr_keys <= MDS_NM_MAX_KEYS && g->ng_nr_ranges <= MDS_NM_MAX_RANGES);
		CHECK(g->ng_nr_map_uid <= MDS_NM_MAX_MAPS && g->ng_nr_map_gid <= MDS_NM_MAX_MAPS);
		CHECK(memchr(g->ng_name, 0, sizeof(g->ng_name)) != NULL);
		for (unsigned j = 0; j < g->ng_nr_ranges; j++) {
			const struct mds_nm_range *r = &g->ng_ranges[j];
			CHECK(r->nr_family == AF_INET || r->nr_family == AF_INET6);
			CHECK(r->nr_prefix <= (r->nr_family == AF_INET ? 32u : 128u));
		}
	}
	static const char *addrs[] = { "", "10.1.2.3", "192.168.0.1", "::1", "fd00::1",
				       "::ffff:10.1.2.3", "2001:db8::7" };
	static const char *keys[] = { "", "cluster", "users", "guests", "admin" };
	for (size_t a = 0; a < sizeof(addrs) / sizeof(addrs[0]); a++) {
		struct sockaddr_storage ss;
		peer(&ss, addrs[a]);
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			const struct mds_nm_group *g = mds_nodemap_match(&nm, keys[k], &ss);
			CHECK(g != NULL);
			uint32_t uid = (uint32_t)(a * 1000), gid = 100, groups[4] = { 0, 100, 1000, 5 };
			uint32_t nr = 4;
			mds_nodemap_ids(g, &uid, &gid, groups, &nr);
			CHECK(nr <= 4);
		}
	}
	mds_nodemap_log(&nm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t ini_len = nul ? (size_t)(nul - data) : size;
	if (ftruncate(fz_memfd, 0) || pwrite(fz_memfd, data, ini_len, 0) != (ssize_t)ini_len)
		abort();

	nodemap_check();

	/* the arguments: lines after the NUL, in one NUL-terminated copy */
	size_t alen = nul ? size - ini_len - 1 : 0;
	char *args = malloc(alen + 1);
	if (!args)
		return 0;
	memcpy(args, nul ? (const char *)nul + 1 : "", alen);
	args[alen] = 0;
	char *argv[MAX_ARGS + 3];
	char cfgeq[80];
	snprintf(cfgeq, sizeof(cfgeq), "--config=%s", fz_path);
	int argc = 0;
	argv[argc++] = (char *)"weir-fuzz";
	argv[argc++] = (char *)"--config";
	argv[argc++] = fz_path;
	for (char *save = NULL, *a = strtok_r(args, "\n", &save); a && argc < MAX_ARGS + 3;
	     a = strtok_r(NULL, "\n", &save)) {
		values_check(a);
		if (!strncmp(a, "--config=", 9))
			a = cfgeq;
		else if (argc > 0 && !strcmp(argv[argc - 1], "--config"))
			a = fz_path;
		argv[argc++] = a;
	}

	FILE *out = stdout;
	stderr = fz_null;
	stdout = fz_null;
	int rc = weir_cfg_parse(tab, NR_TAB, "weir-fuzz", "mds", "[options]", argc, argv);
	stdout = out;
	stderr = fz_err;
	CHECK(rc == 0 || rc == 1 || rc == -EINVAL);
	if (rc == 0) {
		CHECK(o_mdt != NULL);
		CHECK(o_threads <= 256 && o_squash <= 1);
		CHECK(o_size >= 65536 && o_size <= (1ULL << 30));
		CHECK(o_ms >= 500 && o_ms <= 3600000);
		CHECK(o_nr_list <= MAX_LIST);
		weir_cfg_log(tab, NR_TAB, "weir-fuzz");
	}
	tab_reset();
	free(args);
	return 0;
}
