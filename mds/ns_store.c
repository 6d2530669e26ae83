/*
 * mds/ns_store.c - the MDT's bookkeeping around the namespace: the destroy
 * queue and orphans, the cluster column family, the clients known to the
 * MDT (for the recovery window, mds/recovery.c), the write sequence and WAL
 * sync, and opening (formatting on first use) and closing the MDT.
 * Record formats: docs/disk-format.md; helpers shared with ns.c: mds_int.h.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/le.h"
#include "common/log.h"
#include "common/util.h"


/* ------------------------------------------------------------ destroy queue */

int mds_ns_destroy_peek(struct mds_ns *ns, struct mds_destroy_rec *recs, int max)
{
	return mds_ns_destroy_peek_after(ns, NULL, recs, max);
}

int mds_ns_destroy_peek_after(struct mds_ns *ns, const struct weir_fid *after,
			      struct mds_destroy_rec *recs, int max)
{
	struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_DESTROY);
	if (!it)
		return -ENOMEM;
	uint8_t k0[1 + WEIR_FID_BYTES] = { 'D' };
	int n = 0;
	/* from \a after: not over the tombstones of every record done before it */
	if (after)
		weir_fid_pack_be(after, k0 + 1);
	kv_iter_seek(it, k0, after ? sizeof(k0) : 1);
	for (; n < max && kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl != 1 + WEIR_FID_BYTES || k[0] != 'D')
			break;
		if (after && !memcmp(k, k0, sizeof(k0)))
			continue;
		struct weir_fid fid;
		weir_fid_unpack_be(k + 1, &fid);
		const uint8_t *v = kv_iter_val(it, &vl);
		struct mds_inode in;
		if (mds_inode_decode(&fid, v, vl, &in) || !in.in_has_layout)
			continue;
		recs[n].dr_fid = fid;
		recs[n].dr_layout = in.in_layout;
		n++;
	}
	kv_iter_free(it);
	return n;
}

int mds_ns_destroy_done(struct mds_ns *ns, const struct weir_fid *fid)
{
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b)
		return -ENOMEM;
	ns_destroy_del(b, 'D', fid);
	return ns_batch_commit(ns, b);
}

int mds_ns_destroy_compact(struct mds_ns *ns)
{
	return kv_compact(ns->ns_kv, KV_CF_DESTROY);
}

int mds_ns_destroy_done_many(struct mds_ns *ns, const struct weir_fid *fids, int n)
{
	if (n <= 0)
		return 0;
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		ns_destroy_del(b, 'D', &fids[i]);
	return ns_batch_commit(ns, b);
}

/*
 * Orphans (open-unlinked files, open removed directories) that no handle
 * holds open any more are destroyed: at start when no client can come back
 * to replay its opens, else at the end of the recovery window (every open
 * replayed by then holds its orphan; mds/recovery.c).
 */
static int orphans_release(struct mds_ns *ns)
{
	struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_DESTROY);
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	int n = 0;
	if (!it || !b) {
		kv_iter_free(it);
		kv_batch_free(b);
		return -ENOMEM;
	}
	uint8_t k0 = 'O';
	for (kv_iter_seek(it, &k0, 1); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl != 1 + WEIR_FID_BYTES || k[0] != 'O')
			break;
		struct weir_fid fid;
		weir_fid_unpack_be(k + 1, &fid);
		uint32_t openers = 0, writers = 0;
		ns_open_counts(ns, &fid, &openers, &writers);
		if (openers)
			continue; /* a replayed open holds it: its last close destroys it */
		const uint8_t *v = kv_iter_val(it, &vl);
		struct mds_inode in;
		if (mds_inode_decode(&fid, v, vl, &in))
			continue;
		if (ns_inode_destroy(ns, b, &fid))
			continue;
		ns_destroy_del(b, 'O', &fid);
		if (ns_inode_has_objects(&in))
			ns_destroy_put(b, 'D', &in);
		n++;
	}
	kv_iter_free(it);
	if (n)
		WEIR_LOG_NOTICE("orphans=%d: open-unlinked files of the last run queued for destroy",
				n);
	return ns_batch_commit(ns, b);
}

int mds_ns_orphans_release(struct mds_ns *ns)
{
	pthread_rwlock_wrlock(&ns->ns_lock);
	int rc = orphans_release(ns);
	pthread_rwlock_unlock(&ns->ns_lock);
	return rc;
}

/* ------------------------------------------------------------ known clients */

/* KV_CF_DEFAULT: NS_KEY_CLIENT + uuid (16 bytes) -> le32 version + the client's name */
#define NS_KEY_CLIENT "client/"
#define NS_CLIENT_REC_VERSION 1
#define NS_CLIENT_KEY_LEN (sizeof(NS_KEY_CLIENT) - 1 + MDS_CLIENT_UUID_LEN)

static void client_key(const uint8_t *uuid, uint8_t *key)
{
	memcpy(key, NS_KEY_CLIENT, sizeof(NS_KEY_CLIENT) - 1);
	memcpy(key + sizeof(NS_KEY_CLIENT) - 1, uuid, MDS_CLIENT_UUID_LEN);
}

int mds_ns_client_put(struct mds_ns *ns, const uint8_t *uuid, const char *name)
{
	uint8_t key[NS_CLIENT_KEY_LEN], val[4 + MDS_CLIENT_NAME_MAX];
	size_t nl = name ? strnlen(name, MDS_CLIENT_NAME_MAX) : 0;
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b)
		return -ENOMEM;
	client_key(uuid, key);
	weir_put_le32(val, NS_CLIENT_REC_VERSION);
	if (nl)
		memcpy(val + 4, name, nl);
	kv_batch_put(b, KV_CF_DEFAULT, key, sizeof(key), val, 4 + nl);
	int rc = ns_batch_commit(ns, b);
	/* synced: after a crash of the host the MDS must wait for this client,
	 * whose acknowledged requests it may have to re-run (mds/recovery.c) */
	return rc ? rc : kv_sync(ns->ns_kv);
}

int mds_ns_client_del(struct mds_ns *ns, const uint8_t *uuid)
{
	uint8_t key[NS_CLIENT_KEY_LEN];
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b)
		return -ENOMEM;
	client_key(uuid, key);
	kv_batch_del(b, KV_CF_DEFAULT, key, sizeof(key));
	return ns_batch_commit(ns, b);
}

int mds_ns_client_list(struct mds_ns *ns, mds_ns_client_fn fn, void *arg)
{
	struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_DEFAULT);
	size_t pl = sizeof(NS_KEY_CLIENT) - 1;
	int n = 0;
	if (!it)
		return -ENOMEM;
	for (kv_iter_seek(it, NS_KEY_CLIENT, pl); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl < pl || memcmp(k, NS_KEY_CLIENT, pl))
			break;
		const uint8_t *v = kv_iter_val(it, &vl);
		if (kl != NS_CLIENT_KEY_LEN || vl < 4 || vl > 4 + MDS_CLIENT_NAME_MAX ||
		    weir_get_le32(v) != NS_CLIENT_REC_VERSION) {
			WEIR_LOG_WARN("mdt=%s: a known-client record is corrupt or of an unknown"
				      " version; ignored", ns->ns_conf.nc_path);
			continue;
		}
		char name[MDS_CLIENT_NAME_MAX + 1];
		memcpy(name, v + 4, vl - 4);
		name[vl - 4] = '\0';
		if (fn)
			fn(arg, k + pl, name);
		n++;
	}
	kv_iter_free(it);
	return n;
}

/* ------------------------------------------------------------ cluster CF */

int mds_ns_cluster_get(struct mds_ns *ns, const void *key, size_t klen, void *val, size_t cap,
		       size_t *vlen)
{
	ssize_t n = kv_get(ns->ns_kv, KV_CF_CLUSTER, key, klen, val, cap);
	if (n < 0)
		return (int)n;
	*vlen = (size_t)n;
	return 0;
}

int mds_ns_cluster_put(struct mds_ns *ns, const void *key, size_t klen, const void *val,
		       size_t vlen)
{
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b)
		return -ENOMEM;
	kv_batch_put(b, KV_CF_CLUSTER, key, klen, val, vlen);
	return ns_batch_commit(ns, b);
}

int mds_ns_cluster_scan(struct mds_ns *ns, const void *pfx, size_t plen,
			void (*cb)(void *arg, const void *k, size_t kl, const void *v, size_t vl),
			void *arg)
{
	struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_CLUSTER);
	if (!it)
		return -ENOMEM;
	for (kv_iter_seek(it, pfx, plen); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const void *k = kv_iter_key(it, &kl);
		if (kl < plen || memcmp(k, pfx, plen))
			break;
		const void *v = kv_iter_val(it, &vl);
		cb(arg, k, kl, v, vl);
	}
	kv_iter_free(it);
	return 0;
}

/* ------------------------------------------------------------ open / close / sync */

uint64_t mds_ns_nr_inodes(struct mds_ns *ns)
{
	return kv_estimate_keys(ns->ns_kv, KV_CF_INODES);
}

uint64_t mds_ns_write_seq(struct mds_ns *ns)
{
	return atomic_load(&ns->ns_write_seq);
}

uint64_t mds_ns_boot_transno(struct mds_ns *ns)
{
	return ns->ns_boot_transno;
}

int mds_ns_recovery_floor(struct mds_ns *ns, bool set)
{
	uint8_t v[8];
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	if (!b)
		return -ENOMEM;
	if (set) {
		weir_put_le64(v, ns->ns_boot_transno);
		kv_batch_put(b, KV_CF_DEFAULT, NS_KEY_RECOV_FLOOR, strlen(NS_KEY_RECOV_FLOOR), v, 8);
	} else {
		kv_batch_del(b, KV_CF_DEFAULT, NS_KEY_RECOV_FLOOR, strlen(NS_KEY_RECOV_FLOOR));
	}
	int rc = ns_batch_commit(ns, b);
	return rc || !set ? rc : kv_sync(ns->ns_kv);
}

int mds_ns_sync(struct mds_ns *ns, uint64_t *synced_seq)
{
	uint64_t seq = atomic_load(&ns->ns_write_seq);
	int rc = kv_sync(ns->ns_kv);
	if (!rc && synced_seq)
		*synced_seq = seq;
	return rc;
}

static int ns_format_or_load(struct mds_ns *ns)
{
	uint8_t v[8];
	int rc;
	ssize_t n = kv_get(ns->ns_kv, KV_CF_DEFAULT, NS_KEY_FS_VERSION, strlen(NS_KEY_FS_VERSION),
			   v, sizeof(v));
	if (n == -ENOENT) {
		struct kv_batch *b = kv_batch_new(ns->ns_kv);
		if (!b)
			return -ENOMEM;
		if (ns->ns_conf.nc_mdt_index == 0) {
			/* the root is MDT0's; other MDTs hold remote directories */
			struct mds_inode root;
			struct weir_fid rf = weir_fid_root();
			ns_inode_new(&root, &rf, S_IFDIR | 0755);
			if (ns->ns_conf.nc_root_owner_set) { /* --root-owner: for a squashed cluster */
				root.in_uid = ns->ns_conf.nc_root_uid;
				root.in_gid = ns->ns_conf.nc_root_gid;
				root.in_mode = S_IFDIR | (ns->ns_conf.nc_root_mode & 07777);
			}
			root.in_nlink = 2;
			root.in_parent = rf;
			root.in_size = 4096;
			ns_inode_put(b, &root);
		}
		weir_put_le32(v, ns->ns_conf.nc_mdt_index);
		kv_batch_put(b, KV_CF_DEFAULT, NS_KEY_MDT_INDEX, strlen(NS_KEY_MDT_INDEX), v, 4);
		weir_put_le32(v, NS_FS_VERSION);
		kv_batch_put(b, KV_CF_DEFAULT, NS_KEY_FS_VERSION, strlen(NS_KEY_FS_VERSION), v, 4);
		ns->ns_next_oid = 1;
		ns->ns_oid_hw = 1 + NS_FID_CHUNK;
		weir_put_le64(v, ns->ns_oid_hw);
		kv_batch_put(b, KV_CF_DEFAULT, NS_KEY_OID_HW, strlen(NS_KEY_OID_HW), v, 8);
		rc = ns_batch_commit(ns, b);
		if (!rc)
			rc = kv_sync(ns->ns_kv);
		if (!rc)
			WEIR_LOG_NOTICE("mdt=%s: formatted a new MDT, MDT%04x (disk format %d)",
					ns->ns_conf.nc_path, ns->ns_conf.nc_mdt_index,
					NS_FS_VERSION);
		return rc;
	}
	if (n < 0)
		return (int)n;
	if (n != 4 || weir_get_le32(v) != NS_FS_VERSION) {
		WEIR_LOG_ERROR("mdt=%s: unknown disk format version; refusing to serve it",
			       ns->ns_conf.nc_path);
		return -EIO;
	}
	/* the index it was formatted with (none: an MDT of before issue 16, MDT0) */
	n = kv_get(ns->ns_kv, KV_CF_DEFAULT, NS_KEY_MDT_INDEX, strlen(NS_KEY_MDT_INDEX), v,
		   sizeof(v));
	if (n != -ENOENT && n != 4) {
		WEIR_LOG_ERROR("mdt=%s: MDT index record corrupt", ns->ns_conf.nc_path);
		return -EIO;
	}
	uint32_t had = n == 4 ? weir_get_le32(v) : 0;
	if (had != ns->ns_conf.nc_mdt_index) {
		WEIR_LOG_ERROR("mdt=%s: this is MDT%04x, not MDT%04x: start it with --mdt-index %u",
			       ns->ns_conf.nc_path, had, ns->ns_conf.nc_mdt_index, had);
		return -EINVAL;
	}
	n = kv_get(ns->ns_kv, KV_CF_DEFAULT, NS_KEY_OID_HW, strlen(NS_KEY_OID_HW), v, sizeof(v));
	if (n != 8) {
		WEIR_LOG_ERROR("mdt=%s: FID high-water mark missing or corrupt", ns->ns_conf.nc_path);
		return -EIO;
	}
	/* restart after the last reserved chunk: FIDs are never reused */
	ns->ns_next_oid = weir_get_le64(v);
	ns->ns_oid_hw = ns->ns_next_oid;
	/* transnos go on from the last batch that survived (an MDT of before has none) */
	n = kv_get(ns->ns_kv, KV_CF_DEFAULT, NS_KEY_LAST_TRANSNO, strlen(NS_KEY_LAST_TRANSNO), v,
		   sizeof(v));
	if (n == 8)
		atomic_store(&ns->ns_write_seq, weir_get_le64(v));
	else if (n != -ENOENT) {
		WEIR_LOG_ERROR("mdt=%s: last transno corrupt", ns->ns_conf.nc_path);
		return -EIO;
	}
	ns->ns_boot_transno = atomic_load(&ns->ns_write_seq);
	/* a restart in a recovery window: requests numbered above the first
	 * crash's boot transno were lost, or re-run and maybe lost again */
	n = kv_get(ns->ns_kv, KV_CF_DEFAULT, NS_KEY_RECOV_FLOOR, strlen(NS_KEY_RECOV_FLOOR), v,
		   sizeof(v));
	if (n == 8 && weir_get_le64(v) < ns->ns_boot_transno)
		ns->ns_boot_transno = weir_get_le64(v);
	/* what a killed process left in the page cache is on disk before a
	 * reply says last_committed = ns_boot_transno */
	rc = kv_sync(ns->ns_kv);
	if (rc)
		return rc;
	/* clients of the last run may replay opens of orphans: they wait for recovery */
	int nc = mds_ns_client_list(ns, NULL, NULL);
	if (nc > 0) {
		WEIR_LOG_INFO("mdt=%s clients=%d: orphans kept until the recovery window ends",
			      ns->ns_conf.nc_path, nc);
		return 0;
	}
	return orphans_release(ns);
}

/*
 * Log why the MDT directory \a path could not be made (\a rc from mkdir):
 * the deepest part of the path that exists and what is wrong with it, so
 * that the message names the path to fix.
 */
static void ns_mdt_dir_explain(const char *path, int rc)
{
	char part[4096], b[96];
	struct stat st;
	const char *why = "cannot be made there";

	snprintf(part, sizeof(part), "%s", path);
	while (stat(part, &st) < 0) {
		char *sl = strrchr(part, '/');
		if (!sl) {
			snprintf(part, sizeof(part), ".");
		} else if (sl == part) {
			part[1] = '\0';
		} else {
			*sl = '\0';
			continue;
		}
		if (stat(part, &st) < 0)
			break;
	}
	if (!S_ISDIR(st.st_mode))
		why = "is not a directory";
	else if (access(part, W_OK | X_OK))
		why = "is a directory this user may not write to";
	WEIR_LOG_ERROR("mdt=%s rc=%s: cannot make the MDT directory: %s %s (uid %u)", path,
		       weir_rc_str(rc, b, sizeof(b)), part, why, (unsigned)geteuid());
}

int mds_ns_open(const struct mds_ns_conf *conf, struct mds_ns **out)
{
	struct mds_ns *ns = calloc(1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	ns->ns_conf = *conf;
	if (!ns->ns_conf.nc_def_stripe_count)
		ns->ns_conf.nc_def_stripe_count = 1;
	if (!ns->ns_conf.nc_def_stripe_size)
		ns->ns_conf.nc_def_stripe_size = 1024 * 1024;
	/* writers first: a setattr or rename is not starved by a stream of creates
	 * and lookups on every loop (nobody takes ns_lock twice: no recursion) */
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&ns->ns_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&ns->ns_fid_lock, NULL);
	pthread_mutex_init(&ns->ns_txn_lock, NULL);
	pthread_mutex_init(&ns->ns_open_lock, NULL);
	ns->ns_open_buckets = 4096;
	/* epochs of this run never equal one a client kept from an earlier run */
	atomic_init(&ns->ns_epoch_seq, (uint64_t)ns_now_ns());
	ns->ns_open_tab = calloc(ns->ns_open_buckets, sizeof(*ns->ns_open_tab));
	int rc = ns->ns_open_tab ? 0 : -ENOMEM;
	if (!rc)
		rc = ns_locks_init(ns);
	if (!rc) {
		struct stat st;
		rc = weir_mkdir_p(conf->nc_path, 0755);
		if (!rc && (stat(conf->nc_path, &st) < 0 || !S_ISDIR(st.st_mode)))
			rc = -ENOTDIR; /* an existing file of that name */
		if (rc)
			ns_mdt_dir_explain(conf->nc_path, rc);
	}
	if (!rc)
		rc = kv_open(conf->nc_path, &ns->ns_kv);
	if (!rc)
		rc = ns_clean_init(ns);
	if (!rc)
		rc = ns_format_or_load(ns);
	if (rc) {
		mds_ns_close(ns);
		return rc;
	}
	*out = ns;
	return 0;
}

void mds_ns_close(struct mds_ns *ns)
{
	if (!ns)
		return;
	if (ns->ns_kv)
		mds_ns_clean_flush(ns); /* the flag clears still in memory */
	kv_close(ns->ns_kv);
	ns_clean_fini(ns);
	if (ns->ns_open_tab) {
		for (size_t i = 0; i < ns->ns_open_buckets; i++)
			while (ns->ns_open_tab[i]) {
				struct mds_open_ent *e = ns->ns_open_tab[i];
				ns->ns_open_tab[i] = e->oe_next;
				free(e);
			}
		free(ns->ns_open_tab);
	}
	ns_locks_fini(ns);
	pthread_rwlock_destroy(&ns->ns_lock);
	pthread_mutex_destroy(&ns->ns_fid_lock);
	pthread_mutex_destroy(&ns->ns_txn_lock);
	pthread_mutex_destroy(&ns->ns_open_lock);
	free(ns);
}
