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
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weir/weir.h>

int main(int argc, char **argv)
{
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
