/*
 * tests/integration/test_hsm_import.c - `weir dra create --import` and
 * `weir dra import` when the bucket has a file and a directory of one name
 * (keys `out` and `out/...`): the directory wins and the file is reported
 * as shadowed (Mountpoint for Amazon S3's rule), whatever the order of the
 * listing, at the first import and at a rescan. A real s3rver
 * (tests/lib/s3srv.c), a real cluster, the copytool weir-hsmd (the imported
 * files are read back through libweir), and the weir CLI.
 *
 * s3rver lists a directory's keys before the file of its name (`out/a`
 * before `out`), AWS S3 the other way round; within one listing the import
 * does not depend on it (tests/unit/tools/test_dra_shadow.c tries every
 * order of such keys); here both orders in time are tried: the directory's
 * key after the file was imported, and the file's key after the directory.
 *
 * Cases:
 *  - first import of out, out/shadow_file.txt, out/sub/deep, out-x, out.txt
 *    (names that sort between `out` and `out/`), m and the marker m/: the
 *    directories out and m, every other file; out and m reported shadowed;
 *    exit 0;
 *  - rescan after out/a appears over an imported file out: the file is
 *    removed (reported), the directory made; a second rescan: unchanged;
 *  - rescan after the key out appears over an imported directory out:
 *    shadowed, exit 0; then out/a deleted: the empty directory stays, the
 *    file is in its way (EEXIST, exit 1) until the directory is removed;
 *  - a file out modified in Weir and then out/a in the bucket: the file is
 *    kept with its bytes, the directory's objects are not imported, exit 1.
 *
 * Exits 77 when node or s3rver is not installed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/s3.h"
#include "harness.h"
#include "hsmd.h"
#include "s3srv.h"
#include "th_weir.h"

#define BUCKET "weir-imp"

static struct th_s3rver *srv;
static struct th_cluster *cl;
static struct th_hsmd *hd;
static weir_fs_t *fs;
static struct weir_s3_conf s3c;

/* Put \a key with \a len bytes of pattern \a seed. \return 0 or -errno. */
static int put(const char *key, size_t len, uint64_t seed)
{
	struct weir_s3 *s = NULL;
	char buf[4096];
	int rc;

	if (len > sizeof(buf))
		return -EINVAL;
	th_fill_pattern(buf, len, seed);
	rc = weir_s3_new(&s3c, &s);
	if (!rc)
		rc = weir_s3_put(s, key, buf, len, NULL);
	weir_s3_free(s);
	return th_rc(key, rc);
}

/* Is \a path a file of \a len bytes of pattern \a seed, read through libweir? */
static bool file_is(const char *path, size_t len, uint64_t seed)
{
	char want[4096], back[4097];

	th_fill_pattern(want, len, seed);
	return th_get(fs, path, back, sizeof(back)) == (ssize_t)len && !memcmp(back, want, len);
}

static bool is_dir(const char *path)
{
	struct stat sb;
	return weir_lstat(fs, path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Does the last CLI output hold \a line as a whole line? Prints it when not. */
static bool said(const char *line)
{
	FILE *f = fopen(th_cluster_cli_out(cl), "r");
	char buf[4096];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = '\0';
		found = !strcmp(buf, line);
	}
	fclose(f);
	if (!found)
		fprintf(stderr, "\n  not in the output of weir: \"%s\"\n", line);
	return found;
}

/* Does the summary of the last import count \a counts ("1 removed, ...")? */
static bool summary_has(const char *counts)
{
	FILE *f = fopen(th_cluster_cli_out(cl), "r");
	char buf[4096];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(buf, sizeof(buf), f))
		found = !strncmp(buf, "imported s3://", 14) && strstr(buf, counts);
	fclose(f);
	if (!found)
		fprintf(stderr, "\n  no import summary with \"%s\"\n", counts);
	return found;
}

/* ------------------------------------------------------------ cases */

/* mkdir /NAME; weir dra create /NAME s3://BUCKET/NAME --import. \return its exit status. */
static int create_import(const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/%s", name);
	if (th_rc(path, weir_mkdir(fs, path, 0755)))
		return -1;
	return th_cluster_cli(cl, "dra create /%s s3://" BUCKET "/%s --import", name, name);
}

/* weir dra import /NAME: exit status \a want_rc and a summary with ", COUNTS;"? */
static bool rescan(const char *name, int want_rc, const char *counts)
{
	return th_cluster_cli(cl, "dra import /%s", name) == want_rc && summary_has(counts);
}

/* Did the last `weir dra CMD` warn that the object KEY (= its path) is shadowed? */
static bool said_shadowed(const char *cmd, const char *key)
{
	char line[1024];

	snprintf(line, sizeof(line),
		 "weir dra %s: warning: s3://" BUCKET "/%s: shadowed by the directory /%s (a file"
		 " and a directory of one name: the directory wins); not imported",
		 cmd, key, key);
	return said(line);
}

#define KEPT_SKIPPED " kept (modified or open in Weir), 0 skipped, "

static void test_import_file_and_dir_of_one_name_dir_wins(void)
{
	CU_ASSERT_EQUAL(put("sh1/out", 100, 1), 0);
	CU_ASSERT_EQUAL(put("sh1/out/shadow_file.txt", 200, 2), 0);
	CU_ASSERT_EQUAL(put("sh1/out/sub/deep", 300, 3), 0);
	CU_ASSERT_EQUAL(put("sh1/out-x", 400, 4), 0);
	CU_ASSERT_EQUAL(put("sh1/out.txt", 500, 5), 0);
	CU_ASSERT_EQUAL(put("sh1/m", 600, 6), 0);
	CU_ASSERT_EQUAL(put("sh1/m/", 0, 7), 0);

	CU_ASSERT_EQUAL(create_import("sh1"), 0);
	CU_ASSERT(said_shadowed("create", "sh1/out"));
	CU_ASSERT(said_shadowed("create", "sh1/m"));
	CU_ASSERT(summary_has(" 4 created, 0 updated, 0 unchanged, 0 removed, 0" KEPT_SKIPPED
			      "2 shadowed, 0 errors; 3 directories made;"));
	CU_ASSERT(is_dir("/sh1/out"));
	CU_ASSERT(is_dir("/sh1/out/sub"));
	CU_ASSERT(is_dir("/sh1/m"));
	CU_ASSERT(file_is("/sh1/out/shadow_file.txt", 200, 2));
	CU_ASSERT(file_is("/sh1/out/sub/deep", 300, 3));
	CU_ASSERT(file_is("/sh1/out-x", 400, 4));
	CU_ASSERT(file_is("/sh1/out.txt", 500, 5));

	/* a rescan changes nothing and says the same */
	CU_ASSERT(rescan("sh1", 0, " 0 created, 0 updated, 4 unchanged, 0 removed, 0" KEPT_SKIPPED
		  "2 shadowed, 0 errors;"));
	CU_ASSERT(said_shadowed("import", "sh1/out"));
}

static void test_import_rescan_dir_key_after_file_removes_imported_file(void)
{
	CU_ASSERT_EQUAL(put("sh2/out", 100, 21), 0);
	CU_ASSERT_EQUAL_FATAL(create_import("sh2"), 0);
	CU_ASSERT(file_is("/sh2/out", 100, 21));

	CU_ASSERT_EQUAL(put("sh2/out/a", 200, 22), 0);
	CU_ASSERT(rescan("sh2", 0, " 1 created, 0 updated, 0 unchanged, 1 removed, 0" KEPT_SKIPPED
		  "1 shadowed, 0 errors; 1 directory made;"));
	CU_ASSERT(said("weir dra import: /sh2/out: the imported file of s3://" BUCKET "/sh2/out is"
		       " removed: the bucket now has a directory of that name, which shadows it"));
	CU_ASSERT(said_shadowed("import", "sh2/out"));
	CU_ASSERT(is_dir("/sh2/out"));
	CU_ASSERT(file_is("/sh2/out/a", 200, 22));

	CU_ASSERT(rescan("sh2", 0, " 0 created, 0 updated, 1 unchanged, 0 removed, 0" KEPT_SKIPPED
		  "1 shadowed, 0 errors; 0 directories made;"));
}

static void test_import_rescan_file_key_after_dir_is_shadowed(void)
{
	struct weir_s3 *s = NULL;

	CU_ASSERT_EQUAL(put("sh3/out/a", 200, 31), 0);
	CU_ASSERT_EQUAL_FATAL(create_import("sh3"), 0);
	CU_ASSERT_EQUAL(put("sh3/out", 100, 32), 0);
	CU_ASSERT(rescan("sh3", 0, " 0 created, 0 updated, 1 unchanged, 0 removed, 0" KEPT_SKIPPED
		  "1 shadowed, 0 errors;"));
	CU_ASSERT(said_shadowed("import", "sh3/out"));
	CU_ASSERT(is_dir("/sh3/out"));
	CU_ASSERT(file_is("/sh3/out/a", 200, 31));

	/* the directory's key gone: the directory stays (empty), the file is in its way */
	CU_ASSERT_EQUAL_FATAL(weir_s3_new(&s3c, &s), 0);
	CU_ASSERT_EQUAL(weir_s3_delete(s, "sh3/out/a"), 0);
	weir_s3_free(s);
	CU_ASSERT(rescan("sh3", 1, " 0 created, 0 updated, 0 unchanged, 1 removed, 0" KEPT_SKIPPED
		  "0 shadowed, 1 error;"));
	CU_ASSERT(said("weir dra import: /sh3/out: not imported: something other than an imported"
		       " file is in the way (-EEXIST)"));
	CU_ASSERT(is_dir("/sh3/out"));
	/* rmdir, rescan: the file */
	CU_ASSERT_EQUAL(weir_rmdir(fs, "/sh3/out"), 0);
	CU_ASSERT(rescan("sh3", 0, " 1 created, 0 updated, 0 unchanged, 0 removed, 0" KEPT_SKIPPED
		  "0 shadowed, 0 errors;"));
	CU_ASSERT(file_is("/sh3/out", 100, 32));
}

static void test_import_modified_file_in_the_way_is_kept(void)
{
	weir_file_t *fh = NULL;
	char back[16];

	CU_ASSERT_EQUAL(put("sh4/out", 100, 41), 0);
	CU_ASSERT_EQUAL_FATAL(create_import("sh4"), 0);
	/* Weir's own bytes now (O_TRUNC needs no restore) */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/sh4/out", O_WRONLY | O_TRUNC, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_pwrite(fh, "mine", 4, 0), 4);
	CU_ASSERT_EQUAL(weir_close(fh), 0);

	CU_ASSERT_EQUAL(put("sh4/out/a", 200, 42), 0);
	CU_ASSERT(rescan("sh4", 1, " 1 shadowed, 1 error;"));
	CU_ASSERT(said("weir dra import: /sh4/out: a file is in the way of the directory the"
		       " bucket has there (modified in Weir, or not imported from this"
		       " association); kept"));
	CU_ASSERT(said("weir dra import: /sh4/out: cannot make the directory: Not a directory"
		       " (-ENOTDIR); 1 object not imported"));
	CU_ASSERT_EQUAL(th_get(fs, "/sh4/out", back, sizeof(back)), 4);
	CU_ASSERT(!memcmp(back, "mine", 4));
}

/* ------------------------------------------------------------ suite */

static int suite_init(void)
{
	struct th_cluster_opts o = {.tco_nr_oss = 1, .tco_ost_per_oss = 1};
	struct weir_s3 *s = NULL;
	int rc;

	if (th_cluster_mount(&o, &cl, &fs))
		return -1;
	rc = weir_s3_new(&s3c, &s);
	if (!rc)
		rc = weir_s3_bucket_create(s);
	weir_s3_free(s);
	if (rc && rc != -EEXIST) {
		th_rc("create bucket", rc);
		return -1;
	}
	if (th_hsmd_start(cl, th_s3rver_endpoint(srv), 2, NULL, &hd))
		return -1;
	return th_wait_agent(fs, 15000) ? -1 : 0;
}

static int suite_clean(void)
{
	int rc = th_hsmd_free(hd) ? -1 : 0;

	hd = NULL;
	return th_cluster_umount_stop(cl, fs) ? -1 : rc;
}

static const struct th_test tests[] = {
	TH_TEST(test_import_file_and_dir_of_one_name_dir_wins),
	TH_TEST(test_import_rescan_dir_key_after_file_removes_imported_file),
	TH_TEST(test_import_rescan_file_key_after_dir_is_shadowed),
	TH_TEST(test_import_modified_file_in_the_way_is_kept),
	TH_TEST_END,
};

int main(void)
{
	/* the AWS_* environment: for this process's S3 handles and for the weir CLI */
	int rc = th_s3rver_start_env("test_hsm_import", BUCKET, &s3c, &srv);

	if (rc)
		return rc;
	rc = th_cunit_run("hsm_import", suite_init, suite_clean, tests);
	th_s3rver_free(srv);
	return rc;
}
