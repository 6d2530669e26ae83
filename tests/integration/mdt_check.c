/*
 * tests/integration/mdt_check.c - the namespace of several MDTs, checked
 * offline (their MDSs stopped), for the crash tests of two-MDT changes
 * (test_dne_crash.sh).
 *
 * Usage: mdt_check MDT0-DIR [MDT1-DIR ...]   (the directories in index order)
 *
 * Reads every MDT's RocksDB (kv.c, no namespace code) and counts:
 *  - dangling: a dentry whose inode is on no MDT (its FID's MDT by
 *    weir_fid_mdt(), local or remote), or a dentry in a missing directory;
 *  - type: a dentry whose type is not its inode's, or a remote entry (a name
 *    whose inode is another MDT's: a remote directory, or a file linked or
 *    renamed across MDTs) that is a symlink (never made across MDTs);
 *  - orphan: a directory inode (other than the root) that no dentry on any
 *    MDT names, and that no open handle keeps (none survive a stop here);
 *  - double: a directory that two dentries name;
 *  - nlink: a directory whose link count is not 2 + its subdirectories
 *    (local and remote), or a file whose count is not its names;
 *  - dtx: a two-MDT transaction record or a participant's hold left on an
 *    MDT (mds/dtx.c: every one is finished once both MDSs ran a sweep).
 *  - tombstones: counted, not a problem (mds/dtx.c trims them after a while).
 * Prints each problem and a summary line; exit 0 when every count is 0,
 * 1 when not, 2 on a usage or read error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fid.h"
#include "common/le.h"
#include "mds/mds_int.h"

#define MAXM 16

struct ino {
	struct weir_fid fid;
	uint32_t mode, nlink;
	uint32_t names, subdirs;
};

struct mdt {
	struct kv *kv;
	struct ino *in;
	size_t nr, cap;
};

static struct mdt mdts[MAXM];
static int nmdt;
static unsigned long dangling, type, orphan, dbl, nlink, dtx, entries, tomb;

static int fid_cmp(const void *a, const void *b)
{
	const struct weir_fid *x = a, *y = b;
	if (x->fid_seq != y->fid_seq)
		return x->fid_seq < y->fid_seq ? -1 : 1;
	if (x->fid_oid != y->fid_oid)
		return x->fid_oid < y->fid_oid ? -1 : 1;
	return 0;
}

static struct ino *find(const struct weir_fid *f)
{
	int k = weir_fid_mdt(f);
	if (k < 0 || k >= nmdt)
		return NULL;
	struct ino key = { .fid = *f };
	return bsearch(&key, mdts[k].in, mdts[k].nr, sizeof(key), fid_cmp);
}

static int load_inodes(struct mdt *d)
{
	struct kv_iter *it = kv_iter_new(d->kv, KV_CF_INODES);
	if (!it)
		return -ENOMEM;
	for (kv_iter_seek(it, "", 0); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		const uint8_t *v = kv_iter_val(it, &vl);
		struct mds_inode in;
		struct weir_fid f;
		if (kl != WEIR_FID_BYTES)
			continue;
		weir_fid_unpack_be(k, &f);
		if (mds_inode_decode(&f, v, vl, &in))
			continue;
		if (d->nr == d->cap) {
			d->cap = d->cap ? 2 * d->cap : 1024;
			d->in = realloc(d->in, d->cap * sizeof(*d->in));
			if (!d->in)
				return -ENOMEM;
		}
		d->in[d->nr++] = (struct ino){ f, in.in_mode, in.in_nlink, 0, 0 };
	}
	kv_iter_free(it);
	qsort(d->in, d->nr, sizeof(*d->in), fid_cmp);
	return 0;
}

static void scan_dentries(int m)
{
	struct kv_iter *it = kv_iter_new(mdts[m].kv, KV_CF_DENTRIES);
	char b1[WEIR_FID_STR_MAX], b2[WEIR_FID_STR_MAX];
	for (kv_iter_seek(it, "", 0); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		const uint8_t *v = kv_iter_val(it, &vl);
		struct weir_fid parent, child;
		uint8_t t;
		if (kl < 24 || mds_dentry_decode(v, vl, &child, &t))
			continue;
		entries++;
		weir_fid_unpack_be(k, &parent);
		int nl = (int)(kl - 24);
		const char *name = (const char *)k + 24;
		struct ino *p = find(&parent), *c = find(&child);
		if (!p || weir_fid_mdt(&parent) != m) {
			printf("dangling: MDT%d dentry %.*s in missing directory %s\n", m, nl, name,
			       weir_fid_to_str(&parent, b1, sizeof(b1)));
			dangling++;
		}
		if (!c) {
			printf("dangling: MDT%d dentry %.*s -> %s (MDT%d): no inode\n", m, nl, name,
			       weir_fid_to_str(&child, b2, sizeof(b2)), weir_fid_mdt(&child));
			dangling++;
			continue;
		}
		bool remote = weir_fid_mdt(&child) != m;
		if (t != IFTODT(c->mode) || (remote && S_ISLNK(c->mode))) {
			printf("type: MDT%d dentry %.*s type %u, inode mode 0%o%s\n", m, nl, name, t,
			       c->mode, remote ? " (remote)" : "");
			type++;
		}
		c->names++;
		if (S_ISDIR(c->mode) && p)
			p->subdirs++;
	}
	kv_iter_free(it);
}

static void scan_dtx(int m)
{
	struct kv_iter *it = kv_iter_new(mdts[m].kv, KV_CF_DEFAULT);
	for (kv_iter_seek(it, "dtx", 3); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl < 3 || memcmp(k, "dtx", 3))
			break;
		if (kl == 15)
			printf("dtx: MDT%d holds the record of coordinator %u tx %llu\n", m,
			       weir_get_be32(k + 3), (unsigned long long)weir_get_be64(k + 7));
		dtx++;
	}
	/* tombstones of aborts that overtook their PREPARE ("dty": mds/dtx.c),
	 * trimmed after a while: counted, not a problem */
	for (kv_iter_seek(it, "dty", 3); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl < 3 || memcmp(k, "dty", 3))
			break;
		tomb++;
	}
	/* a participant's holds ("dth" + directory FID [+ name]: mds/ns.c) */
	for (kv_iter_seek(it, "dth", 3); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl < 3 || memcmp(k, "dth", 3))
			break;
		printf("dtx: MDT%d holds a name or directory for a transaction (%zu-byte key)\n",
		       m, kl);
		dtx++;
	}
	kv_iter_free(it);
}

int main(int argc, char **argv)
{
	char b[WEIR_FID_STR_MAX];
	if (argc < 2 || argc - 1 > MAXM || !strcmp(argv[1], "--help")) {
		fprintf(stderr, "usage: mdt_check MDT0-DIR [MDT1-DIR ...] (MDSs stopped)\n");
		return 2;
	}
	nmdt = argc - 1;
	for (int i = 0; i < nmdt; i++) {
		int rc = kv_open(argv[1 + i], &mdts[i].kv);
		if (!rc)
			rc = load_inodes(&mdts[i]);
		if (rc) {
			fprintf(stderr, "mdt_check: %s: %s\n", argv[1 + i], strerror(-rc));
			return 2;
		}
	}
	for (int i = 0; i < nmdt; i++) {
		scan_dentries(i);
		scan_dtx(i);
	}
	struct weir_fid root = weir_fid_root();
	for (int i = 0; i < nmdt; i++)
		for (size_t j = 0; j < mdts[i].nr; j++) {
			struct ino *x = &mdts[i].in[j];
			const char *f = weir_fid_to_str(&x->fid, b, sizeof(b));
			bool is_root = weir_fid_eq(&x->fid, &root);
			if (S_ISDIR(x->mode)) {
				if (!is_root && x->names == 0 && x->nlink) {
					printf("orphan: MDT%d directory %s has no name\n", i, f);
					orphan++;
				}
				if (x->names > 1) {
					printf("double: MDT%d directory %s has %u names\n", i, f,
					       x->names);
					dbl++;
				}
				if (x->nlink && x->nlink != 2 + x->subdirs) {
					printf("nlink: MDT%d directory %s nlink %u, want %u\n", i, f,
					       x->nlink, 2 + x->subdirs);
					nlink++;
				}
			} else if (x->nlink && x->names != x->nlink) {
				printf("nlink: MDT%d %s nlink %u, %u names\n", i, f, x->nlink, x->names);
				nlink++;
			}
		}
	printf("mdt_check: %d MDTs, %lu entries: dangling %lu type %lu orphan %lu double %lu"
	       " nlink %lu dtx %lu (tombstones %lu)\n", nmdt, entries, dangling, type, orphan, dbl,
	       nlink, dtx, tomb);
	for (int i = 0; i < nmdt; i++) {
		kv_close(mdts[i].kv);
		free(mdts[i].in);
	}
	return dangling || type || orphan || dbl || nlink || dtx ? 1 : 0;
}
