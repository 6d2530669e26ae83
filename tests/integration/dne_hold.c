/*
 * tests/integration/dne_hold.c - keep a file open on an MDT other than MDT0
 * across time, for test_dne.sh (docs/dne.md, step 2: the session a client
 * makes on MDT k is renewed by its lease thread, and lost when MDT k
 * restarts).
 *
 * Usage: dne_hold MDS-ADDR PATH SECONDS
 *   mounts MDS-ADDR (WEIR_KEY_FILE for the key), opens PATH (created,
 *   read-write), writes "1" at offset 0, prints "opened FID" and flushes,
 *   sleeps SECONDS, writes "2" at offset 1, closes, and prints
 *   "write2=RC close=RC" (0 or a negative errno), then opens PATH again and
 *   prints "reopen=RC size=N".
 * Exit 0 when it ran to the end (whatever the results, which the script
 * checks), 2 on a usage error or when the mount, the open or the first
 * write fails.
 *
 * Usage: dne_hold --route MDS-ADDR DIR
 *   a client that keeps its name cache (the routing of docs/dne.md, step
 *   2): once its cache trusts (a callback poll answered), creates DIR/a,
 *   prints "a=RC" and "ready names=N" (names cached), then for each line read
 *   from standard input (the script changes the cluster meanwhile) creates
 *   DIR/<the line> and prints "<line>=RC [SEQ:OID:0]" (the new file's FID),
 *   or for a line "rename A B" renames DIR/A to DIR/B and prints
 *   "rename=RC", until end of input. Each create must end within 20 s (SIGALRM).
 *
 * Usage: dne_hold --lock MDS-ADDR PATH SECONDS [LINGER]
 *   fcntl locks on a file of any MDT: opens PATH (created, read-write) and
 *   asks a write lock on all of it with F_SETLK, printing "setlk=RC"; on
 *   -EAGAIN asks F_GETLK and prints "getlk=RC type=T pid=P" (T: w, r or u),
 *   then waits with F_SETLKW and prints "setlkw=RC ms=N" (how long it
 *   waited). Holding the lock, prints "held", sleeps SECONDS, closes (which
 *   drops the lock) and prints "closed=RC", then stays mounted LINGER
 *   seconds (default 0: an umount would drop the lock too). The lock calls
 *   must end within 20 s (SIGALRM).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <weir/weir.h>

/* One create of \a dir/\a name, printed as "name=RC [FID]". */
static void route_create(weir_fs_t *fs, const char *dir, const char *name)
{
	char p[4200];
	weir_file_t *fh;
	weir_fid_t fid = { 0 };
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	alarm(20);
	int rc = weir_open(fs, p, O_CREAT | O_EXCL | O_WRONLY, 0644, &fh);
	if (!rc) {
		weir_file_fid(fh, &fid);
		rc = weir_close(fh);
	}
	alarm(0);
	printf("%s=%d [0x%llx:0x%llx:0x0]\n", name, rc, (unsigned long long)fid.seq,
	       (unsigned long long)fid.oid);
	fflush(stdout);
}

static int route_main(const char *mds, const char *dir)
{
	weir_fs_t *fs;
	char line[256];
	int rc = weir_mount(mds, &fs);
	if (rc) {
		fprintf(stderr, "dne_hold: mount %s: %d\n", mds, rc);
		return 2;
	}
	/* the cache trusts nothing before its first callback poll is answered */
	struct weir_md_stats ms = { 0 };
	for (int i = 0; i < 200 && (weir_md_stats(fs, &ms) || !ms.wms_polls); i++)
		usleep(50000);
	route_create(fs, dir, "a");
	weir_md_stats(fs, &ms);
	printf("ready names=%llu\n", (unsigned long long)ms.wms_names);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		char *to = strchr(line, ' ');
		if (!strncmp(line, "rename ", 7) && (to = strchr(line + 7, ' '))) {
			/* "rename A B": DIR/A to DIR/B */
			char a[4200], b[4200];
			*to++ = '\0';
			snprintf(a, sizeof(a), "%s/%s", dir, line + 7);
			snprintf(b, sizeof(b), "%s/%s", dir, to);
			alarm(20);
			rc = weir_rename(fs, a, b);
			alarm(0);
			printf("rename=%d\n", rc);
			fflush(stdout);
		} else if (*line) {
			route_create(fs, dir, line);
		}
	}
	weir_umount(fs);
	return 0;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000L + (t.tv_nsec - t0->tv_nsec) / 1000000L;
}

static int lock_main(const char *mds, const char *path, unsigned secs, unsigned linger)
{
	weir_fs_t *fs;
	weir_file_t *fh;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int rc = weir_mount(mds, &fs);
	if (!rc)
		rc = weir_open(fs, path, O_CREAT | O_RDWR, 0644, &fh);
	if (rc) {
		fprintf(stderr, "dne_hold: mount or open %s: %d\n", path, rc);
		return 2;
	}
	alarm(20);
	rc = weir_fcntl_lock(fh, F_SETLK, &fl);
	printf("setlk=%d\n", rc);
	if (rc == -EAGAIN) {
		struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int grc = weir_fcntl_lock(fh, F_GETLK, &q);
		printf("getlk=%d type=%c pid=%d\n", grc,
		       q.l_type == F_WRLCK ? 'w' : q.l_type == F_RDLCK ? 'r' : 'u', (int)q.l_pid);
		fflush(stdout);
		struct timespec t0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = weir_fcntl_lock(fh, F_SETLKW, &fl);
		printf("setlkw=%d ms=%ld\n", rc, ms_since(&t0));
	}
	alarm(0);
	printf("held\n");
	fflush(stdout);
	sleep(secs);
	printf("closed=%d\n", weir_close(fh));
	fflush(stdout);
	sleep(linger);
	weir_umount(fs);
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "--lock"))
		return lock_main(argv[2], argv[3], (unsigned)atoi(argv[4]),
				 argc == 6 ? (unsigned)atoi(argv[5]) : 0);
	if (argc == 4 && !strcmp(argv[1], "--route"))
		return route_main(argv[2], argv[3]);
	if (argc != 4) {
		fprintf(stderr, "usage: dne_hold MDS-ADDR PATH SECONDS\n");
		return 2;
	}
	weir_fs_t *fs;
	weir_file_t *fh;
	int rc = weir_mount(argv[1], &fs);
	if (rc) {
		fprintf(stderr, "dne_hold: mount %s: %d\n", argv[1], rc);
		return 2;
	}
	rc = weir_open(fs, argv[2], O_CREAT | O_RDWR, 0644, &fh);
	if (rc || weir_pwrite(fh, "1", 1, 0) != 1) {
		fprintf(stderr, "dne_hold: open or first write of %s: %d\n", argv[2], rc);
		weir_umount(fs);
		return 2;
	}
	weir_fid_t fid;
	weir_file_fid(fh, &fid);
	printf("opened [0x%llx:0x%llx:0x0]\n", (unsigned long long)fid.seq,
	       (unsigned long long)fid.oid);
	fflush(stdout);
	sleep((unsigned)atoi(argv[3]));
	ssize_t w = weir_pwrite(fh, "2", 1, 1);
	int crc = weir_close(fh);
	printf("write2=%zd close=%d\n", w < 0 ? w : 0, crc);
	rc = weir_open(fs, argv[2], O_RDONLY, 0, &fh);
	struct stat st = { 0 };
	if (!rc) {
		weir_fstat(fh, &st);
		weir_close(fh);
	}
	printf("reopen=%d size=%lld\n", rc, (long long)st.st_size);
	weir_umount(fs);
	return 0;
}
