/*
 * tests/integration/test_namespace.c - the namespace through libweir on a
 * real cluster: mkdir and paged readdir of 2,500 entries, rename (replacing,
 * atomic under a concurrent reader, across directories), unlink with the
 * objects destroyed on the OSTs afterwards (also on an OSS that predates
 * OST_DESTROY_BATCH), rmdir, the exact errno of
 * every documented failure, and setstripe's first OST (-i alone; an index
 * no OST has refused by the MDS).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "harness.h"
#include "th_weir.h"

static struct th_cluster *cl;
static weir_fs_t *fs;

static int suite_init(void)
{
	return th_cluster_mount(NULL, &cl, &fs) ? -1 : 0;
}

static int suite_clean(void)
{
	return th_cluster_umount_stop(cl, fs);
}

static int touch(const char *path)
{
	weir_file_t *fh = NULL;
	int rc = weir_open(fs, path, O_CREAT | O_WRONLY, 0644, &fh);
	if (rc)
		return rc;
	return weir_close(fh);
}

/* Does directory \a dir list \a name? \return 1, 0, or a negative errno. */
static int dir_has(const char *dir, const char *name)
{
	weir_dir_t *dh = NULL;
	int rc = weir_opendir(fs, dir, &dh);
	if (rc)
		return rc;
	struct weir_dirent de;
	int found = 0;
	while ((rc = weir_readdir(dh, &de)) == 1)
		if (!strcmp(de.d_name, name))
			found++;
	weir_closedir(dh);
	return rc < 0 ? rc : found;
}

/* ------------------------------------------------------------ readdir */

#define NR_FILES 2500
#define NR_SUBDIRS 10

static void test_ns_readdir_2500_entries_each_listed_once(void)
{
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/many", 0755), 0);
	char path[64];
	int bad = 0;
	uint64_t t0 = th_now_ms();
	for (int i = 0; i < NR_FILES; i++) {
		snprintf(path, sizeof(path), "/many/f%05d", i);
		if (touch(path))
			bad++;
	}
	for (int i = 0; i < NR_SUBDIRS; i++) {
		snprintf(path, sizeof(path), "/many/d%d", i);
		if (weir_mkdir(fs, path, 0755))
			bad++;
	}
	uint64_t t1 = th_now_ms();
	CU_ASSERT_EQUAL_FATAL(bad, 0);

	static unsigned char seen[NR_FILES], seen_dir[NR_SUBDIRS];
	memset(seen, 0, sizeof(seen));
	memset(seen_dir, 0, sizeof(seen_dir));
	weir_dir_t *dh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_opendir(fs, "/many", &dh), 0);
	struct weir_dirent de;
	int n = 0, rc, dots = 0, strays = 0, wrong_type = 0;
	while ((rc = weir_readdir(dh, &de)) == 1) {
		n++;
		if (n <= 2) {
			/* "." and ".." come first */
			if (!strcmp(de.d_name, n == 1 ? "." : ".."))
				dots++;
			if (de.d_type != DT_DIR)
				wrong_type++;
			continue;
		}
		int idx;
		char tail;
		if (sscanf(de.d_name, "f%5d%c", &idx, &tail) == 1 && idx >= 0 && idx < NR_FILES &&
		    strlen(de.d_name) == 6) {
			seen[idx]++;
			if (de.d_type != DT_REG)
				wrong_type++;
		} else if (sscanf(de.d_name, "d%d%c", &idx, &tail) == 1 && idx >= 0 &&
			   idx < NR_SUBDIRS) {
			seen_dir[idx]++;
			if (de.d_type != DT_DIR)
				wrong_type++;
		} else {
			printf("\n  unexpected entry \"%s\"\n", de.d_name);
			strays++;
		}
		if (de.d_ino == 0)
			wrong_type++;
	}
	uint64_t t2 = th_now_ms();
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(weir_closedir(dh), 0);
	CU_ASSERT_EQUAL(dots, 2);
	CU_ASSERT_EQUAL(strays, 0);
	CU_ASSERT_EQUAL(wrong_type, 0);
	CU_ASSERT_EQUAL(n, 2 + NR_FILES + NR_SUBDIRS);
	int once = 0;
	for (int i = 0; i < NR_FILES; i++)
		once += seen[i] == 1;
	for (int i = 0; i < NR_SUBDIRS; i++)
		once += seen_dir[i] == 1;
	CU_ASSERT_EQUAL(once, NR_FILES + NR_SUBDIRS);
	printf("(%d creates in %llu ms, listed in %llu ms) ", NR_FILES,
	       (unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1));
	CU_ASSERT_EQUAL(weir_closedir(NULL), 0);
}

static void test_ns_readdir_empty_dir_only_dots(void)
{
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/empty", 0755), 0);
	weir_dir_t *dh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_opendir(fs, "/empty", &dh), 0);
	struct weir_dirent de;
	CU_ASSERT_EQUAL(weir_readdir(dh, &de), 1);
	CU_ASSERT_STRING_EQUAL(de.d_name, ".");
	CU_ASSERT_EQUAL(weir_readdir(dh, &de), 1);
	CU_ASSERT_STRING_EQUAL(de.d_name, "..");
	CU_ASSERT_EQUAL(weir_readdir(dh, &de), 0);
	CU_ASSERT_EQUAL(weir_readdir(dh, &de), 0); /* stays at the end */
	weir_closedir(dh);
}

/* ------------------------------------------------------------ attributes */

static void test_ns_stat_modes_types_inodes(void)
{
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/attr", 0750), 0);
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/attr/f", O_CREAT | O_WRONLY, 0640, &fh), 0);
	weir_fid_t fid;
	CU_ASSERT_EQUAL(weir_file_fid(fh, &fid), 0);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(touch("/attr/g"), 0);
	struct stat sd, sf, sg, sr;
	CU_ASSERT_EQUAL_FATAL(weir_stat(fs, "/attr", &sd), 0);
	CU_ASSERT_EQUAL_FATAL(weir_stat(fs, "/attr/f", &sf), 0);
	CU_ASSERT_EQUAL_FATAL(weir_stat(fs, "/attr/g", &sg), 0);
	CU_ASSERT_EQUAL_FATAL(weir_stat(fs, "/", &sr), 0);
	CU_ASSERT_TRUE(S_ISDIR(sd.st_mode));
	CU_ASSERT_TRUE(S_ISDIR(sr.st_mode));
	CU_ASSERT_TRUE(S_ISREG(sf.st_mode));
	CU_ASSERT_EQUAL(sd.st_mode & 07777, 0750);
	CU_ASSERT_EQUAL(sf.st_mode & 07777, 0640);
	CU_ASSERT_EQUAL(sf.st_size, 0);
	CU_ASSERT_NOT_EQUAL(sf.st_ino, 0);
	CU_ASSERT_NOT_EQUAL(sf.st_ino, sg.st_ino);
	CU_ASSERT_NOT_EQUAL(sf.st_ino, sd.st_ino);
	CU_ASSERT_NOT_EQUAL(sd.st_ino, sr.st_ino);
	CU_ASSERT_EQUAL(sf.st_uid, getuid());
	CU_ASSERT_NOT_EQUAL(sf.st_mtime, 0);
	CU_ASSERT_FALSE(fid.seq == 0 && fid.oid == 0);
	/* the same inode by path as through the handle */
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/attr/f", O_RDONLY, 0, &fh), 0);
	struct stat sh;
	CU_ASSERT_EQUAL(weir_fstat(fh, &sh), 0);
	CU_ASSERT_EQUAL(sh.st_ino, sf.st_ino);
	weir_close(fh);
}

/* ------------------------------------------------------------ rename */

static void test_ns_rename_file_over_file_replaces(void)
{
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/rn", 0755), 0);
	CU_ASSERT_EQUAL(th_put(fs, "/rn/a", "AAAA", 4), 0);
	CU_ASSERT_EQUAL(th_put(fs, "/rn/b", "BBBBBBBB", 8), 0);
	CU_ASSERT_EQUAL(weir_rename(fs, "/rn/a", "/rn/b"), 0);
	struct stat st;
	CU_ASSERT_EQUAL(weir_stat(fs, "/rn/a", &st), -ENOENT);
	char buf[16] = { 0 };
	CU_ASSERT_EQUAL(th_get(fs, "/rn/b", buf, sizeof(buf)), 4);
	CU_ASSERT_EQUAL(memcmp(buf, "AAAA", 4), 0);
	CU_ASSERT_EQUAL(dir_has("/rn", "a"), 0);
	CU_ASSERT_EQUAL(dir_has("/rn", "b"), 1);
	/* rename onto itself is a no-op */
	CU_ASSERT_EQUAL(weir_rename(fs, "/rn/b", "/rn/b"), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/rn/b"), 4);
}

struct watcher {
	atomic_int wa_stop;
	atomic_int wa_loops;
	int wa_missing;
	int wa_bad_size;
};

static void *watch_main(void *arg)
{
	struct watcher *w = arg;
	while (!atomic_load(&w->wa_stop)) {
		struct stat st;
		int rc = weir_stat(fs, "/rn/target", &st);
		if (rc == -ENOENT)
			w->wa_missing++;
		else if (rc || st.st_size != 8)
			w->wa_bad_size++;
		atomic_fetch_add(&w->wa_loops, 1);
	}
	return NULL;
}

static void test_ns_rename_replace_atomic_for_concurrent_reader(void)
{
	CU_ASSERT_EQUAL_FATAL(th_put(fs, "/rn/target", "gen 0000", 8), 0);
	struct watcher w = { .wa_missing = 0 };
	atomic_init(&w.wa_stop, 0);
	atomic_init(&w.wa_loops, 0);
	pthread_t t;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, watch_main, &w), 0);
	/* let the watcher get going first (a slow sanitizer build may start it late) */
	for (int i = 0; i < 1000 && atomic_load(&w.wa_loops) == 0; i++)
		usleep(1000);
	int bad = 0;
	for (int i = 1; i <= 60; i++) {
		char src[32], data[16];
		snprintf(src, sizeof(src), "/rn/src%d", i);
		snprintf(data, sizeof(data), "gen %04d", i);
		if (th_put(fs, src, data, 8) || weir_rename(fs, src, "/rn/target"))
			bad++;
	}
	atomic_store(&w.wa_stop, 1);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(atomic_load(&w.wa_loops) > 0);
	CU_ASSERT_EQUAL(w.wa_missing, 0);
	CU_ASSERT_EQUAL(w.wa_bad_size, 0);
	char buf[16] = { 0 };
	CU_ASSERT_EQUAL(th_get(fs, "/rn/target", buf, sizeof(buf)), 8);
	CU_ASSERT_STRING_EQUAL(buf, "gen 0060");
}

static void test_ns_rename_across_dirs_moves_entry(void)
{
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/rn/d1", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/rn/d2", 0755), 0);
	CU_ASSERT_EQUAL(th_put(fs, "/rn/d1/x", "moving", 6), 0);
	struct stat before, after;
	CU_ASSERT_EQUAL(weir_stat(fs, "/rn/d1/x", &before), 0);
	CU_ASSERT_EQUAL(weir_rename(fs, "/rn/d1/x", "/rn/d2/y"), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, "/rn/d1/x", &after), -ENOENT);
	CU_ASSERT_EQUAL(weir_stat(fs, "/rn/d2/y", &after), 0);
	CU_ASSERT_EQUAL(after.st_ino, before.st_ino); /* the same file */
	CU_ASSERT_EQUAL(dir_has("/rn/d1", "x"), 0);
	CU_ASSERT_EQUAL(dir_has("/rn/d2", "y"), 1);
	char buf[8] = { 0 };
	CU_ASSERT_EQUAL(th_get(fs, "/rn/d2/y", buf, sizeof(buf)), 6);
	CU_ASSERT_EQUAL(memcmp(buf, "moving", 6), 0);

	/* a directory with contents moves whole */
	CU_ASSERT_EQUAL(weir_rename(fs, "/rn/d2", "/rn/d1/d2moved"), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/rn/d1/d2moved/y"), 6);
	CU_ASSERT_EQUAL(th_size(fs, "/rn/d2/y"), -ENOENT);
	/* a directory over an empty directory */
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/rn/emptydir", 0755), 0);
	CU_ASSERT_EQUAL(weir_rename(fs, "/rn/d1/d2moved", "/rn/emptydir"), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/rn/emptydir/y"), 6);
}

static void test_ns_rename_errors_exact_errno(void)
{
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/re", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/re/dir", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/re/dir/sub", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/re/full", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(touch("/re/full/f"), 0);
	CU_ASSERT_EQUAL_FATAL(touch("/re/file"), 0);
	CU_ASSERT_EQUAL(weir_rename(fs, "/re/missing", "/re/x"), -ENOENT);
	CU_ASSERT_EQUAL(weir_rename(fs, "/re/file", "/re/nodir/x"), -ENOENT);
	CU_ASSERT_EQUAL(weir_rename(fs, "/re/file", "/re/dir"), -EISDIR);
	CU_ASSERT_EQUAL(weir_rename(fs, "/re/dir", "/re/file"), -ENOTDIR);
	CU_ASSERT_EQUAL(weir_rename(fs, "/re/dir", "/re/full"), -ENOTEMPTY);
	CU_ASSERT_EQUAL(weir_rename(fs, "/re/dir", "/re/dir/sub/inside"), -EINVAL);
	CU_ASSERT_EQUAL(weir_rename(fs, "/re/file/x", "/re/y"), -ENOTDIR);
	CU_ASSERT_EQUAL(weir_rename(fs, "/", "/re/root"), -EBUSY);
	/* nothing moved */
	CU_ASSERT_EQUAL(dir_has("/re", "dir"), 1);
	CU_ASSERT_EQUAL(dir_has("/re", "file"), 1);
	CU_ASSERT_EQUAL(dir_has("/re/full", "f"), 1);
}

/* ------------------------------------------------------------ unlink */

/* Create a 4-stripe file of \a size bytes; give its FID and OSTs. */
static void make_striped(const char *path, size_t size, weir_fid_t *fid, uint32_t osts[4])
{
	uint8_t *buf = malloc(size);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	th_fill_pattern(buf, size, size);
	CU_ASSERT_EQUAL_FATAL(th_put(fs, path, buf, size), 0);
	free(buf);
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, path, O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_file_fid(fh, fid), 0);
	weir_close(fh);
	struct weir_layout_info li;
	CU_ASSERT_EQUAL_FATAL(weir_getstripe(fs, path, &li), 0);
	CU_ASSERT_EQUAL_FATAL(li.wli_stripe_count, 4);
	for (int i = 0; i < 4; i++)
		osts[i] = li.wli_objs[i].woi_ost;
}

/* \return how many of the 4 objects exist, or a negative errno. */
static int objects_existing(const weir_fid_t *fid, const uint32_t osts[4])
{
	int n = 0;
	for (uint32_t i = 0; i < 4; i++) {
		bool exists = false;
		int rc = th_ost_obj_getattr(cl, osts[i], fid->seq, fid->oid, i, &exists, NULL);
		if (rc)
			return (int)th_rc("OST_GETATTR", rc);
		n += exists;
	}
	return n;
}

static int wait_objects_gone(const weir_fid_t *fid, const uint32_t osts[4], unsigned timeout_ms)
{
	uint64_t deadline = th_now_ms() + timeout_ms;
	int n;
	while ((n = objects_existing(fid, osts)) > 0 && th_now_ms() < deadline)
		th_sleep_ms(200);
	return n;
}

static void test_ns_unlink_enoent_after_objects_destroyed(void)
{
	CU_ASSERT_EQUAL_FATAL(th_stripe_dir(fs, "/ul", 4, 64 * 1024), 0);
	weir_fid_t fid;
	uint32_t osts[4];
	make_striped("/ul/victim", 1 << 20, &fid, osts);
	/* the probe sees the objects before the unlink */
	CU_ASSERT_EQUAL_FATAL(objects_existing(&fid, osts), 4);
	CU_ASSERT_EQUAL(weir_unlink(fs, "/ul/victim"), 0);
	struct stat st;
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL(weir_stat(fs, "/ul/victim", &st), -ENOENT);
	CU_ASSERT_EQUAL(weir_open(fs, "/ul/victim", O_RDONLY, 0, &fh), -ENOENT);
	CU_ASSERT_EQUAL(weir_unlink(fs, "/ul/victim"), -ENOENT);
	CU_ASSERT_EQUAL(dir_has("/ul", "victim"), 0);
	uint64_t t0 = th_now_ms();
	CU_ASSERT_EQUAL(wait_objects_gone(&fid, osts, 30000), 0);
	printf("(objects destroyed after %llu ms) ", (unsigned long long)(th_now_ms() - t0));
	/* the name can be reused at once, for a new file */
	CU_ASSERT_EQUAL(th_put(fs, "/ul/victim", "new", 3), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/ul/victim"), 3);
}

/* Does the MDS's log hold \a what? */
static bool mds_log_has(const char *what)
{
	char path[512], *line = NULL;
	size_t cap = 0;
	bool found = false;
	snprintf(path, sizeof(path), "%s/mds.log", th_cluster_dir(cl));
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0)
		found = strstr(line, what) != NULL;
	free(line);
	fclose(f);
	return found;
}

/*
 * The MDS destroys an unlinked file's objects with one OST_DESTROY_BATCH
 * per OSS; an OSS from before that opcode (played by OSS 0 with
 * WEIR_OSS_TEST_NO_DESTROY_BATCH) answers it -EOPNOTSUPP, and the MDS then
 * destroys that OSS's objects one OST_DESTROY each, the other OSS's still
 * in a batch. A file striped over every OST has objects on both.
 */
static void test_ns_unlink_destroys_on_an_oss_without_destroy_batch(void)
{
	weir_fid_t fid;
	uint32_t osts[4];
	CU_ASSERT_EQUAL_FATAL(setenv("WEIR_OSS_TEST_NO_DESTROY_BATCH", "1", 1), 0);
	int rc = th_server_restart(cl, 0);
	unsetenv("WEIR_OSS_TEST_NO_DESTROY_BATCH");
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	make_striped("/ul/old-oss", 1 << 20, &fid, osts);
	CU_ASSERT_EQUAL_FATAL(objects_existing(&fid, osts), 4);
	CU_ASSERT_EQUAL(weir_unlink(fs, "/ul/old-oss"), 0);
	CU_ASSERT_EQUAL(wait_objects_gone(&fid, osts, 30000), 0);
	CU_ASSERT(mds_log_has("no OST_DESTROY_BATCH there"));
	CU_ASSERT_EQUAL(th_server_restart(cl, 0), 0); /* a current OSS again */
}

static void test_ns_unlink_open_file_keeps_data_until_close(void)
{
	weir_fid_t fid;
	uint32_t osts[4];
	const size_t size = 512 * 1024;
	make_striped("/ul/held", size, &fid, osts);
	uint8_t *want = malloc(size), *got = malloc(size);
	CU_ASSERT_PTR_NOT_NULL_FATAL(want);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	th_fill_pattern(want, size, size);
	weir_file_t *fh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_open(fs, "/ul/held", O_RDONLY, 0, &fh), 0);
	CU_ASSERT_EQUAL(weir_unlink(fs, "/ul/held"), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/ul/held"), -ENOENT);
	th_sleep_ms(3000); /* give a destroy queue time to (wrongly) run */
	CU_ASSERT_EQUAL(weir_pread(fh, got, size, 0), (ssize_t)size);
	CU_ASSERT_EQUAL(th_diff_at(want, got, size), -1);
	CU_ASSERT_EQUAL(objects_existing(&fid, osts), 4);
	CU_ASSERT_EQUAL(weir_close(fh), 0);
	CU_ASSERT_EQUAL(wait_objects_gone(&fid, osts, 30000), 0);
	free(want);
	free(got);
}

static void test_ns_rmdir_nonempty_enotempty_empty_removed(void)
{
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/rd", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/rd/sub", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(touch("/rd/sub/f"), 0);
	CU_ASSERT_EQUAL(weir_rmdir(fs, "/rd"), -ENOTEMPTY);
	CU_ASSERT_EQUAL(weir_rmdir(fs, "/rd/sub"), -ENOTEMPTY);
	CU_ASSERT_EQUAL(weir_unlink(fs, "/rd/sub/f"), 0);
	CU_ASSERT_EQUAL(weir_rmdir(fs, "/rd/sub"), 0);
	CU_ASSERT_EQUAL(th_size(fs, "/rd/sub"), -ENOENT);
	CU_ASSERT_EQUAL(weir_rmdir(fs, "/rd/sub"), -ENOENT);
	CU_ASSERT_EQUAL(weir_rmdir(fs, "/rd"), 0);
	CU_ASSERT_EQUAL(dir_has("/", "rd"), 0);
}

/* ------------------------------------------------------------ errnos */

static void test_ns_errors_exact_errno(void)
{
	struct stat st;
	weir_file_t *fh = NULL;
	weir_dir_t *dh = NULL;
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/e", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(touch("/e/f"), 0);

	/* ENOENT */
	CU_ASSERT_EQUAL(weir_stat(fs, "/nope", &st), -ENOENT);
	CU_ASSERT_EQUAL(weir_stat(fs, "/nope/x", &st), -ENOENT);
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/nope/x", 0755), -ENOENT);
	CU_ASSERT_EQUAL(weir_open(fs, "/e/missing", O_RDONLY, 0, &fh), -ENOENT);
	CU_ASSERT_EQUAL(weir_open(fs, "/nope/x", O_CREAT | O_WRONLY, 0644, &fh), -ENOENT);
	CU_ASSERT_EQUAL(weir_unlink(fs, "/e/missing"), -ENOENT);
	CU_ASSERT_EQUAL(weir_rmdir(fs, "/e/missing"), -ENOENT);
	CU_ASSERT_EQUAL(weir_opendir(fs, "/e/missing", &dh), -ENOENT);
	/* EEXIST */
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/e", 0755), -EEXIST);
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/e/f", 0755), -EEXIST);
	CU_ASSERT_EQUAL(weir_open(fs, "/e/f", O_CREAT | O_EXCL | O_WRONLY, 0644, &fh), -EEXIST);
	CU_ASSERT_EQUAL(weir_open(fs, "/e", O_CREAT | O_EXCL | O_WRONLY, 0644, &fh), -EEXIST);
	/* ENOTDIR */
	CU_ASSERT_EQUAL(weir_stat(fs, "/e/f/x", &st), -ENOTDIR);
	CU_ASSERT_EQUAL(weir_mkdir(fs, "/e/f/x", 0755), -ENOTDIR);
	CU_ASSERT_EQUAL(weir_open(fs, "/e/f/x", O_CREAT | O_WRONLY, 0644, &fh), -ENOTDIR);
	CU_ASSERT_EQUAL(weir_opendir(fs, "/e/f", &dh), -ENOTDIR);
	CU_ASSERT_EQUAL(weir_rmdir(fs, "/e/f"), -ENOTDIR);
	CU_ASSERT_EQUAL(weir_open(fs, "/e/f", O_RDONLY | O_DIRECTORY, 0, &fh), -ENOTDIR);
	/* EISDIR */
	CU_ASSERT_EQUAL(weir_unlink(fs, "/e"), -EISDIR);
	CU_ASSERT_EQUAL(weir_open(fs, "/e", O_WRONLY, 0, &fh), -EISDIR);
	CU_ASSERT_EQUAL(weir_open(fs, "/e", O_RDWR, 0, &fh), -EISDIR);
	/* EBUSY: the root */
	CU_ASSERT_EQUAL(weir_rmdir(fs, "/"), -EBUSY);
	/* ENAMETOOLONG: 256 bytes of name; 255 is fine */
	char name[300];
	name[0] = '/';
	memset(name + 1, 'n', 256);
	name[257] = 0;
	CU_ASSERT_EQUAL(weir_mkdir(fs, name, 0755), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(weir_open(fs, name, O_CREAT | O_WRONLY, 0644, &fh), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(weir_stat(fs, name, &st), -ENAMETOOLONG);
	name[256] = 0;
	CU_ASSERT_EQUAL(weir_mkdir(fs, name, 0755), 0);
	CU_ASSERT_EQUAL(weir_stat(fs, name, &st), 0);
	CU_ASSERT_EQUAL(weir_rmdir(fs, name), 0);
	/* a path over 4095 bytes */
	char *longp = malloc(5000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(longp);
	size_t k = 0;
	while (k < 4200) {
		memcpy(longp + k, "/abcdefgh", 9);
		k += 9;
	}
	longp[k] = 0;
	CU_ASSERT_EQUAL(weir_stat(fs, longp, &st), -ENAMETOOLONG);
	free(longp);
	/* the directory itself is still fine */
	CU_ASSERT_EQUAL(weir_stat(fs, "/e", &st), 0);
	CU_ASSERT_TRUE(S_ISDIR(st.st_mode));
}

/* ------------------------------------------------------------ layouts */

static int setstripe_index(const char *path, uint32_t count, int32_t idx)
{
	struct weir_stripe_opts so;
	memset(&so, 0, sizeof(so));
	so.wso_size = sizeof(so);
	so.wso_stripe_count = count;
	so.wso_stripe_offset = idx;
	return weir_setstripe(fs, path, &so);
}

/* The first OST of \a path's layout (file or directory default), or -100 - -errno. */
static int32_t first_ost(const char *path)
{
	struct weir_layout_info li;
	int rc = weir_getstripe(fs, path, &li);
	return rc ? -100 + rc : li.wli_stripe_offset;
}

/* -i alone (count 0): the file's object 0 on that OST, the count the default (1). */
static void test_ns_setstripe_index_alone_places_first_object(void)
{
	struct weir_layout_info li;
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/si", 0755), 0);
	for (int32_t i = 0; i < 4; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/si/f%d", i);
		CU_ASSERT_EQUAL_FATAL(setstripe_index(p, 0, i), 0);
		CU_ASSERT_EQUAL_FATAL(weir_getstripe(fs, p, &li), 0);
		CU_ASSERT_EQUAL(li.wli_stripe_count, 1);
		CU_ASSERT_EQUAL(li.wli_objs[0].woi_ost, (uint32_t)i);
	}
	/* a directory's index alone is kept, and its new files start there */
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/si/d", 0755), 0);
	CU_ASSERT_EQUAL_FATAL(setstripe_index("/si/d", 0, 3), 0);
	CU_ASSERT_EQUAL(first_ost("/si/d"), 3);
	for (int i = 0; i < 3; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/si/d/n%d", i);
		CU_ASSERT_EQUAL_FATAL(touch(p), 0);
		CU_ASSERT_EQUAL(first_ost(p), 3);
	}
}

/* An index no OST has (4 OSTs: 0..3) is refused by the MDS: files and directories. */
static void test_ns_setstripe_missing_ost_index_einval(void)
{
	struct stat st;
	CU_ASSERT_EQUAL_FATAL(weir_mkdir(fs, "/sm", 0755), 0);
	CU_ASSERT_EQUAL(setstripe_index("/sm", 0, 4), -EINVAL);
	CU_ASSERT_EQUAL(setstripe_index("/sm", 2, 1023), -EINVAL);
	CU_ASSERT_EQUAL(setstripe_index("/sm", 0, 70000), -EINVAL);
	CU_ASSERT_EQUAL(first_ost("/sm"), -1); /* nothing stored */
	CU_ASSERT_EQUAL(setstripe_index("/sm/f", 0, 4), -EINVAL);
	CU_ASSERT_EQUAL(setstripe_index("/sm/g", 1, 9), -EINVAL);
	CU_ASSERT_EQUAL(weir_stat(fs, "/sm/f", &st), -ENOENT);
	CU_ASSERT_EQUAL(weir_stat(fs, "/sm/g", &st), -ENOENT);
	/* files are still made in the directory */
	CU_ASSERT_EQUAL(touch("/sm/h"), 0);
}

int main(void)
{
	static const struct th_test tests[] = {
		TH_TEST(test_ns_readdir_2500_entries_each_listed_once),
		TH_TEST(test_ns_readdir_empty_dir_only_dots),
		TH_TEST(test_ns_stat_modes_types_inodes),
		TH_TEST(test_ns_rename_file_over_file_replaces),
		TH_TEST(test_ns_rename_replace_atomic_for_concurrent_reader),
		TH_TEST(test_ns_rename_across_dirs_moves_entry),
		TH_TEST(test_ns_rename_errors_exact_errno),
		TH_TEST(test_ns_unlink_enoent_after_objects_destroyed),
		TH_TEST(test_ns_unlink_destroys_on_an_oss_without_destroy_batch),
		TH_TEST(test_ns_unlink_open_file_keeps_data_until_close),
		TH_TEST(test_ns_rmdir_nonempty_enotempty_empty_removed),
		TH_TEST(test_ns_errors_exact_errno),
		TH_TEST(test_ns_setstripe_index_alone_places_first_object),
		TH_TEST(test_ns_setstripe_missing_ost_index_einval),
		TH_TEST_END,
	};
	return th_cunit_run("namespace", suite_init, suite_clean, tests);
}
