/*
 * mds/hsm.c - the HSM coordinator: start-up, data repository associations,
 * import, state, the hooks the namespace calls (open for writing, truncate,
 * unlink, last writer close), and the requests of MDS_HSM_REQUEST and
 * MDS_HSM_RESTORE_WAIT. The action table (queue, agents, completion) is
 * mds/hsm_act.c; records are mds/hsm_store.c.
 *
 * DESIGN. The MDT is the coordinator, as in Lustre: a file's HSM state is
 * its 'S' record (flags, version, archive copy, restore bitmap) plus two
 * inode flag bits (MDS_INODE_F_HSM: has a record; MDS_INODE_F_RELEASED:
 * data in S3 only) written in the same batches, so a getattr needs no
 * second read. Release happens here at once: the file's objects go to the
 * destroy queue in the batch that marks it released, and no restore task
 * is handed out while that 'D' record exists (the destroy thread would
 * remove what the restore writes). A reader of a released file whose
 * restore failed gets EIO for HSM_FAILED_WINDOW_NS, unless the failure said
 * S3 could not be reached: then the reader waits and the restore is queued
 * again HSM_RETRY_NS after the failure (hsm_fin_failed_restore), so an S3
 * outage never sticks. Locks: ns_lock (write for changes) then hs_lock;
 * see mds/hsm.h.
 */
#define _GNU_SOURCE
#include "hsm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/le.h"
#include "common/log.h"
#include "common/util.h"

#define HSM_FAILED_WINDOW_NS (60ULL * 1000000000ULL)
/*
 * A restore that failed because S3 could not be reached is queued again by
 * a reader still waiting (or the next one) this long after the failure: the
 * reader waits through an S3 outage (bounded by its WEIR_RESTORE_TIMEOUT)
 * instead of getting EIO until someone runs `weir hsm restore`.
 */
#define HSM_RETRY_NS (2ULL * 1000000000ULL)

void hsm_lock(struct mds_hsm *h, bool ns_write)
{
	if (ns_write)
		pthread_rwlock_wrlock(&h->hs_ns->ns_lock);
	else
		pthread_rwlock_rdlock(&h->hs_ns->ns_lock);
	pthread_mutex_lock(&h->hs_lock);
}

void hsm_unlock(struct mds_hsm *h)
{
	pthread_mutex_unlock(&h->hs_lock);
	pthread_rwlock_unlock(&h->hs_ns->ns_lock);
}

void hsm_kick(struct mds_hsm *h)
{
	if (h->hs_kick)
		h->hs_kick(h->hs_kick_arg);
}

int hsm_commit(struct mds_hsm *h, struct kv_batch *b)
{
	if (h->hs_fail_commits) {
		h->hs_fail_commits--;
		kv_batch_free(b);
		WEIR_LOG_WARN("hsm: commit failed (fault injected)");
		return -EIO;
	}
	return ns_batch_commit(h->hs_ns, b);
}

const struct mds_hsm_conf *mds_hsm_conf_get(const struct mds_hsm *h)
{
	return &h->hs_conf;
}

/* ------------------------------------------------------------ DRAs */

const struct mds_hsm_dra *hsm_dra_by_id(struct mds_hsm *h, uint32_t id)
{
	for (size_t i = 0; i < h->hs_nr_dras; i++)
		if (h->hs_dras[i].hd_id == id)
			return &h->hs_dras[i];
	return NULL;
}

static const struct mds_hsm_dra *dra_by_root(struct mds_hsm *h, const struct weir_fid *fid)
{
	for (size_t i = 0; i < h->hs_nr_dras; i++)
		if (weir_fid_eq(&h->hs_dras[i].hd_root, fid))
			return &h->hs_dras[i];
	return NULL;
}

bool hsm_any_auto_export(struct mds_hsm *h)
{
	return atomic_load(&h->hs_auto_export);
}

/* The DRA table changed (hs_lock held): recompute hs_auto_export. */
static void hsm_auto_export_update(struct mds_hsm *h)
{
	bool any = false;
	for (size_t i = 0; i < h->hs_nr_dras; i++)
		any |= (h->hs_dras[i].hd_flags & HSM_DF_AUTO_EXPORT) != 0;
	atomic_store(&h->hs_auto_export, any);
}

const struct mds_hsm_dra *hsm_dra_of(struct mds_hsm *h, const struct mds_inode *in)
{
	struct weir_fid root = weir_fid_root(), cur;
	if (!h->hs_nr_dras)
		return NULL;
	if (S_ISDIR(in->in_mode))
		cur = in->in_fid;
	else if (hsm_parent_of(h->hs_ns, in, &cur))
		return NULL;
	for (int depth = 0; depth < 4096; depth++) {
		const struct mds_hsm_dra *d = dra_by_root(h, &cur);
		if (d)
			return d;
		if (weir_fid_eq(&cur, &root))
			return NULL;
		struct mds_inode din;
		if (ns_inode_get(h->hs_ns, &cur, &din))
			return NULL;
		cur = din.in_parent;
	}
	return NULL;
}

static int dras_load(struct mds_hsm *h)
{
	struct kv_iter *it = kv_iter_new(h->hs_ns->ns_kv, KV_CF_HSM);
	if (!it)
		return -ENOMEM;
	int rc = 0;
	for (kv_iter_seek(it, "A", 1); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl != 5 || k[0] != 'A')
			break;
		const uint8_t *v = kv_iter_val(it, &vl);
		struct mds_hsm_dra d;
		if (hsm_dra_decode(v, vl, &d) || d.hd_id != weir_get_be32(k + 1)) {
			WEIR_LOG_ERROR("dra=%u len=%zu: corrupt DRA record; ignored",
				       weir_get_be32(k + 1), vl);
			continue;
		}
		if (h->hs_nr_dras == HSM_DRA_MAX)
			break;
		struct mds_hsm_dra *nd = realloc(h->hs_dras, (h->hs_nr_dras + 1) * sizeof(*nd));
		if (!nd) {
			rc = -ENOMEM;
			break;
		}
		h->hs_dras = nd;
		h->hs_dras[h->hs_nr_dras++] = d;
	}
	kv_iter_free(it);
	hsm_auto_export_update(h);
	return rc;
}

int mds_hsm_dra_create(struct mds_hsm *h, const struct mds_cred *cr, const struct weir_fid *at,
		       const char *path, const char *bucket, const char *prefix, uint32_t flags,
		       struct mds_hsm_dra *out)
{
	struct mds_inode in;
	struct mds_hsm_dra *d = NULL;
	int rc;

	if (!mds_cred_is_root(cr))
		return -EPERM;
	if (!path || !bucket || !hsm_bucket_valid(bucket) ||
	    (flags & ~(HSM_DF_AUTO_EXPORT | HSM_DF_REIMPORT)))
		return -EINVAL;
	prefix = prefix ? prefix : "";
	size_t pl = strnlen(prefix, HSM_KEY_MAX + 1);
	if (pl >= HSM_KEY_MAX || prefix[0] == '/')
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	hsm_lock(h, true);
	rc = ns_resolve_obj(h->hs_ns, cr, at, path, 0, &in);
	if (rc)
		goto out_unlock;
	if (!S_ISDIR(in.in_mode)) {
		rc = -ENOTDIR;
		goto out_unlock;
	}
	if (dra_by_root(h, &in.in_fid)) {
		rc = -EEXIST;
		goto out_unlock;
	}
	/* not inside another association, nor around one */
	if (hsm_dra_of(h, &in)) {
		rc = -EBUSY;
		goto out_unlock;
	}
	for (size_t i = 0; i < h->hs_nr_dras; i++) {
		bool within;
		rc = ns_is_within(h->hs_ns, &h->hs_dras[i].hd_root, &in.in_fid, &within);
		if (!rc && within)
			rc = -EBUSY;
		if (rc)
			goto out_unlock;
	}
	/* nor sharing keys with one: two associations whose bucket and prefix
	 * overlap would build one key for two files */
	snprintf(d->hd_prefix, sizeof(d->hd_prefix), "%s%s", prefix,
		 pl && prefix[pl - 1] != '/' ? "/" : "");
	for (size_t i = 0; i < h->hs_nr_dras; i++) {
		const struct mds_hsm_dra *o = &h->hs_dras[i];
		size_t ol = strlen(o->hd_prefix), nl = strlen(d->hd_prefix);
		if (!strcmp(o->hd_bucket, bucket) &&
		    !strncmp(o->hd_prefix, d->hd_prefix, WEIR_MIN(ol, nl))) {
			WEIR_LOG_INFO("path=%s bucket=%s prefix=%s: overlaps the keys of dra=%u"
				      " (%s, prefix %s); refused", path, bucket, d->hd_prefix,
				      o->hd_id, o->hd_path, o->hd_prefix);
			rc = -EEXIST;
			goto out_unlock;
		}
	}
	if (h->hs_nr_dras >= HSM_DRA_MAX) {
		rc = -ENOSPC;
		goto out_unlock;
	}
	uint32_t id = 1;
	for (size_t i = 0; i < h->hs_nr_dras; i++)
		id = WEIR_MAX(id, h->hs_dras[i].hd_id + 1);
	d->hd_id = id;
	d->hd_root = in.in_fid;
	d->hd_flags = flags;
	d->hd_created_ns = ns_now_ns();
	snprintf(d->hd_bucket, sizeof(d->hd_bucket), "%s", bucket);
	d->hd_path[0] = '/';
	struct weir_fid root = weir_fid_root();
	rc = hsm_path_below(h->hs_ns, &in, &root, d->hd_path + 1, sizeof(d->hd_path) - 1);
	if (rc)
		goto out_unlock;
	struct mds_hsm_dra *nd = realloc(h->hs_dras, (h->hs_nr_dras + 1) * sizeof(*nd));
	if (!nd) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	h->hs_dras = nd;
	uint8_t key[5], *v = malloc(HSM_DRA_REC_MAX);
	struct kv_batch *b = kv_batch_new(h->hs_ns->ns_kv);
	if (!v || !b) {
		free(v);
		kv_batch_free(b);
		rc = -ENOMEM;
		goto out_unlock;
	}
	hsm_dra_key(id, key);
	kv_batch_put(b, KV_CF_HSM, key, sizeof(key), v, hsm_dra_encode(d, v));
	free(v);
	rc = ns_batch_commit(h->hs_ns, b);
	if (rc)
		goto out_unlock;
	h->hs_dras[h->hs_nr_dras++] = *d;
	hsm_auto_export_update(h);
	if (out)
		*out = *d;
	WEIR_LOG_NOTICE("dra=%u path=%s bucket=%s prefix=%s flags=%#x: association created", id,
			d->hd_path, d->hd_bucket, d->hd_prefix, flags);
out_unlock:
	hsm_unlock(h);
	free(d);
	return rc;
}

int mds_hsm_dra_list(struct mds_hsm *h, struct mds_hsm_dra **out, size_t *nr)
{
	pthread_mutex_lock(&h->hs_lock);
	size_t n = h->hs_nr_dras;
	struct mds_hsm_dra *d = calloc(n ? n : 1, sizeof(*d));
	if (d && n)
		memcpy(d, h->hs_dras, n * sizeof(*d));
	pthread_mutex_unlock(&h->hs_lock);
	if (!d)
		return -ENOMEM;
	*out = d;
	*nr = n;
	return 0;
}

int mds_hsm_dra_delete(struct mds_hsm *h, const struct mds_cred *cr, const struct weir_fid *at,
		       const char *path)
{
	struct mds_inode in;
	if (!mds_cred_is_root(cr))
		return -EPERM;
	if (!path)
		return -EINVAL;
	hsm_lock(h, true);
	int rc = ns_resolve_obj(h->hs_ns, cr, at, path, 0, &in);
	if (rc)
		goto out_unlock;
	const struct mds_hsm_dra *d = dra_by_root(h, &in.in_fid);
	if (!d) {
		rc = -EINVAL;
		goto out_unlock;
	}
	struct kv_batch *b = kv_batch_new(h->hs_ns->ns_kv);
	if (!b) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	uint8_t key[5];
	hsm_dra_key(d->hd_id, key);
	kv_batch_del(b, KV_CF_HSM, key, sizeof(key));
	rc = ns_batch_commit(h->hs_ns, b);
	if (rc)
		goto out_unlock;
	WEIR_LOG_NOTICE("dra=%u path=%s bucket=%s: association deleted (files and S3 objects kept)",
			d->hd_id, d->hd_path, d->hd_bucket);
	size_t i = (size_t)(d - h->hs_dras);
	memmove(&h->hs_dras[i], &h->hs_dras[i + 1], (h->hs_nr_dras - i - 1) * sizeof(*d));
	h->hs_nr_dras--;
	hsm_auto_export_update(h);
out_unlock:
	hsm_unlock(h);
	return rc;
}

/* ------------------------------------------------------------ open / close */

int mds_hsm_open(struct mds_ns *ns, const struct mds_hsm_conf *conf,
		 void (*kick)(void *arg), void *kick_arg, struct mds_hsm **out)
{
	struct mds_hsm *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->hs_fin = calloc(HSM_FIN_NR, sizeof(*h->hs_fin));
	if (!h->hs_fin) {
		free(h);
		return -ENOMEM;
	}
	h->hs_ns = ns;
	if (conf)
		h->hs_conf = *conf;
	struct mds_hsm_conf *c = &h->hs_conf;
	if (!c->hc_high_pct)
		c->hc_high_pct = 90;
	if (!c->hc_low_pct)
		c->hc_low_pct = 75;
	if (c->hc_low_pct > c->hc_high_pct)
		c->hc_low_pct = c->hc_high_pct;
	if (!c->hc_min_age_set && !c->hc_min_age_s)
		c->hc_min_age_s = 300;
	if (!c->hc_policy_interval_ms)
		c->hc_policy_interval_ms = 5000;
	if (!c->hc_action_timeout_ms)
		c->hc_action_timeout_ms = 60000;
	h->hs_kick = kick;
	h->hs_kick_arg = kick_arg;
	pthread_mutex_init(&h->hs_lock, NULL);
	h->hs_queue.ha_next = h->hs_queue.ha_prev = &h->hs_queue;
	int rc = dras_load(h);
	if (!rc)
		rc = hsm_key_index_build(ns);
	if (!rc)
		rc = hsm_act_load(h);
	if (rc) {
		mds_hsm_close(h);
		return rc;
	}
	ns->ns_hsm = h;
	if (h->hs_nr_dras || h->hs_waiting)
		WEIR_LOG_NOTICE("hsm: %zu associations, %u queued actions reloaded", h->hs_nr_dras,
				h->hs_waiting);
	*out = h;
	return 0;
}

void mds_hsm_close(struct mds_hsm *h)
{
	if (!h)
		return;
	pthread_rwlock_wrlock(&h->hs_ns->ns_lock);
	if (h->hs_ns->ns_hsm == h)
		h->hs_ns->ns_hsm = NULL;
	pthread_rwlock_unlock(&h->hs_ns->ns_lock);
	hsm_act_free_all(h);
	free(h->hs_dras);
	free(h->hs_fin);
	pthread_mutex_destroy(&h->hs_lock);
	free(h);
}

/* ------------------------------------------------------------ import */

struct import_new {
	struct mds_ns *in_ns;
	struct hsm_rec *in_rec;
};

static void import_extra(void *arg, struct kv_batch *b, const struct mds_inode *in)
{
	struct import_new *x = arg;
	hsm_rec_restore_reset(x->in_rec, in->in_size, in->in_layout.lo_stripe_size);
	hsm_rec_put(b, &in->in_fid, x->in_rec);
	hsm_key_update(x->in_ns, b, &in->in_fid, NULL, NULL, x->in_rec->hr_bucket,
		       x->in_rec->hr_key);
}

static bool name_valid(const char *n)
{
	size_t l = strnlen(n, NS_NAME_MAX + 1);
	if (l == 0 || l > NS_NAME_MAX || strchr(n, '/'))
		return false;
	return strcmp(n, ".") && strcmp(n, "..");
}

/* Unlink an imported file whose object is gone. Locks held. */
static int import_remove(struct mds_hsm *h, struct mds_inode *dir, const char *name,
			 struct mds_inode *in)
{
	struct kv_batch *b = kv_batch_new(h->hs_ns->ns_kv);
	if (!b)
		return -ENOMEM;
	int64_t now = ns_now_ns();
	ns_dentry_del(b, &dir->in_fid, name, strlen(name));
	pthread_mutex_unlock(&h->hs_lock); /* the unlink hook takes it */
	int rc = ns_inode_unlink(h->hs_ns, b, in, now);
	pthread_mutex_lock(&h->hs_lock);
	dir->in_mtime_ns = dir->in_ctime_ns = now;
	ns_inode_put(b, dir);
	if (rc) {
		kv_batch_free(b);
		return rc;
	}
	return ns_batch_commit(h->hs_ns, b);
}

/* A changed object of an imported clean closed file: new metadata, released. Locks held. */
static int import_update(struct mds_hsm *h, struct mds_inode *in, struct hsm_rec *rec,
			 const struct mds_hsm_import_ent *e)
{
	struct kv_batch *b = kv_batch_new(h->hs_ns->ns_kv);
	if (!b)
		return -ENOMEM;
	struct hsm_action *a = hsm_act_by_fid(h, &in->in_fid);
	if (a)
		hsm_act_qdel(b, a);
	if (!(in->in_flags & MDS_INODE_F_RELEASED))
		ns_destroy_put(b, 'D', in); /* the restored bytes are of the old version */
	in->in_flags |= MDS_INODE_F_RELEASED | MDS_INODE_F_HSM;
	in->in_size = e->ie_size;
	in->in_blocks = 0;
	in->in_mtime_ns = e->ie_mtime_ns;
	in->in_ctime_ns = ns_now_ns();
	rec->hr_flags = (rec->hr_flags | HSM_F_RELEASED | HSM_F_EXISTS | HSM_F_ARCHIVED) &
			~(HSM_F_LOST | HSM_F_DIRTY);
	snprintf(rec->hr_etag, sizeof(rec->hr_etag), "%s", e->ie_etag);
	hsm_key_update(h->hs_ns, b, &in->in_fid, rec->hr_bucket, rec->hr_key, rec->hr_bucket,
		       e->ie_key);
	snprintf(rec->hr_key, sizeof(rec->hr_key), "%s", e->ie_key);
	rec->hr_archived_size = e->ie_size;
	rec->hr_archived_ns = e->ie_mtime_ns;
	rec->hr_archived_version = rec->hr_data_version;
	hsm_rec_restore_reset(rec, e->ie_size, in->in_layout.lo_stripe_size);
	ns_inode_put(b, in);
	hsm_rec_put(b, &in->in_fid, rec);
	int rc = hsm_commit(h, b);
	if (!rc && a)
		hsm_act_retire(h, a, HSM_S_FAILED, -ECANCELED);
	if (!rc)
		hsm_fin_heal(h, &in->in_fid); /* readers may restore the new version at once */
	return rc;
}

static int import_one(struct mds_hsm *h, const struct mds_hsm_dra *d, struct mds_inode *dir,
		      const struct mds_hsm_import_ent *e, uint32_t mode, mds_ost_chooser_t choose,
		      void *choose_arg, struct hsm_rec *rec)
{
	struct mds_ns *ns = h->hs_ns;
	struct weir_fid fid;
	uint8_t type;
	size_t nlen;

	if (!e->ie_name || !name_valid(e->ie_name) || !e->ie_key || !e->ie_etag)
		return -EINVAL;
	nlen = strlen(e->ie_name);
	size_t kl = strnlen(e->ie_key, HSM_KEY_MAX + 1), el = strnlen(e->ie_etag, HSM_ETAG_MAX + 1);
	/* an ETag is what every restore checks the object against: none, no check */
	if (kl == 0 || kl > HSM_KEY_MAX || el > HSM_ETAG_MAX || (el == 0 && !e->ie_deleted) ||
	    e->ie_size > (uint64_t)WEIR_MAX_FILE_OFF)
		return -EINVAL;
	int rc = ns_dentry_get(ns, &dir->in_fid, e->ie_name, nlen, &fid, &type);
	if (rc == -ENOENT) {
		if (e->ie_deleted)
			return HSM_HIR_UNCHANGED;
		hsm_rec_init(rec);
		rec->hr_flags = HSM_F_EXISTS | HSM_F_ARCHIVED | HSM_F_RELEASED | HSM_F_IMPORTED;
		rec->hr_dra = d->hd_id;
		rec->hr_data_version = rec->hr_archived_version = 1;
		rec->hr_archived_ns = e->ie_mtime_ns;
		rec->hr_archived_size = e->ie_size;
		snprintf(rec->hr_bucket, sizeof(rec->hr_bucket), "%s", d->hd_bucket);
		snprintf(rec->hr_key, sizeof(rec->hr_key), "%s", e->ie_key);
		snprintf(rec->hr_etag, sizeof(rec->hr_etag), "%s", e->ie_etag);
		struct import_new x = { ns, rec };
		struct ns_new nn = {
			.nn_mode = S_IFREG | (mode & 07777),
			.nn_flags = MDS_INODE_F_HSM | MDS_INODE_F_RELEASED,
			.nn_choose = choose,
			.nn_choose_arg = choose_arg,
			.nn_size = e->ie_size,
			.nn_mtime_ns = e->ie_mtime_ns ? e->ie_mtime_ns : ns_now_ns(),
			.nn_extra = import_extra,
			.nn_extra_arg = &x,
		};
		struct mds_inode out;
		struct ns_lockset ls; /* never contended: ns_lock is held for writing */
		ns_ls_init(&ls);
		rc = ns_create_locked(ns, NULL, dir, e->ie_name, nlen, &nn, &ls, &out);
		ns_ls_release(ns, &ls);
		return rc ? rc : HSM_HIR_CREATED;
	}
	if (rc)
		return rc;
	struct mds_inode in;
	rc = ns_inode_get(ns, &fid, &in);
	if (rc)
		return rc == -ENOENT ? -EIO : rc;
	if (!S_ISREG(in.in_mode))
		return -EEXIST;
	if (!(in.in_flags & MDS_INODE_F_HSM) || hsm_rec_get(ns, &fid, rec)) {
		WEIR_LOG_NOTICE("dra=%u fid=" WEIR_FID_F " name=%s: a file not from the bucket is in"
				" the way of object %s; kept", d->hd_id, WEIR_FID_P(&fid),
				e->ie_name, e->ie_key);
		return HSM_HIR_KEPT;
	}
	if (!e->ie_deleted && !strcmp(rec->hr_etag, e->ie_etag) && !(rec->hr_flags & HSM_F_LOST))
		return HSM_HIR_UNCHANGED;
	uint32_t openers, writers;
	ns_open_counts(ns, &fid, &openers, &writers);
	bool clean = (rec->hr_flags & HSM_F_IMPORTED) && !(rec->hr_flags & HSM_F_DIRTY) &&
		     openers == 0;
	if (!clean) {
		WEIR_LOG_NOTICE("dra=%u fid=" WEIR_FID_F " key=%s: object %s in S3 but the file is"
				" modified or open in Weir; kept", d->hd_id, WEIR_FID_P(&fid),
				e->ie_key, e->ie_deleted ? "deleted" : "changed");
		return HSM_HIR_KEPT;
	}
	if (e->ie_deleted) {
		rc = import_remove(h, dir, e->ie_name, &in);
		return rc ? rc : HSM_HIR_REMOVED;
	}
	rc = import_update(h, &in, rec, e);
	return rc ? rc : HSM_HIR_UPDATED;
}

int mds_hsm_import(struct mds_hsm *h, const struct mds_cred *cr, uint32_t dra,
		   const struct weir_fid *dir, const struct mds_hsm_import_ent *ents, size_t n,
		   uint32_t mode, mds_ost_chooser_t choose, void *choose_arg, int32_t *results)
{
	struct mds_inode din;
	bool within;
	int rc;

	if (!mds_cred_is_root(cr))
		return -EPERM;
	if (n > HSM_IMPORT_MAX)
		return -E2BIG;
	if (!dir || weir_fid_is_zero(dir))
		return -EINVAL;
	struct hsm_rec *rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	mode = (mode & 07777) ? (mode & 07777) : 0644;
	hsm_lock(h, true);
	const struct mds_hsm_dra *dp = hsm_dra_by_id(h, dra);
	if (!dp) {
		rc = -ENOENT;
		goto out_unlock;
	}
	struct mds_hsm_dra d = *dp;
	rc = ns_inode_get(h->hs_ns, dir, &din);
	if (rc)
		goto out_unlock;
	if (!S_ISDIR(din.in_mode)) {
		rc = -ENOTDIR;
		goto out_unlock;
	}
	rc = ns_is_within(h->hs_ns, dir, &d.hd_root, &within);
	if (!rc && !within)
		rc = -EINVAL;
	if (rc)
		goto out_unlock;
	size_t counts[5] = { 0 }, errors = 0;
	for (size_t i = 0; i < n; i++) {
		results[i] = import_one(h, &d, &din, &ents[i], mode, choose, choose_arg, rec);
		if (results[i] >= 0 && results[i] <= HSM_HIR_KEPT)
			counts[results[i]]++;
		else
			errors++;
	}
	WEIR_LOG_INFO("dra=%u dir=" WEIR_FID_F " entries=%zu: import created=%zu updated=%zu"
		      " unchanged=%zu removed=%zu kept=%zu errors=%zu", dra, WEIR_FID_P(dir), n,
		      counts[0], counts[1], counts[2], counts[3], counts[4], errors);
out_unlock:
	hsm_unlock(h);
	free(rec);
	return rc;
}

/* ------------------------------------------------------------ state */

int mds_hsm_state_get(struct mds_hsm *h, const struct mds_cred *cr, const struct weir_fid *at,
		      const char *path, const struct weir_fid *fid, struct mds_hsm_state *st)
{
	struct mds_inode in;
	struct hsm_rec *rec = malloc(sizeof(*rec));
	int rc;

	if (!rec)
		return -ENOMEM;
	memset(st, 0, sizeof(*st));
	hsm_lock(h, false);
	if (fid)
		rc = ns_inode_get(h->hs_ns, fid, &in);
	else
		rc = ns_resolve_obj(h->hs_ns, cr, at, path ? path : "", 0, &in);
	if (rc)
		goto out_unlock;
	st->st_fid = in.in_fid;
	st->st_size = in.in_size;
	const struct mds_hsm_dra *d = S_ISREG(in.in_mode) || S_ISDIR(in.in_mode)
					      ? hsm_dra_of(h, &in) : NULL;
	if (d) {
		st->st_dra = d->hd_id;
		snprintf(st->st_bucket, sizeof(st->st_bucket), "%s", d->hd_bucket);
	}
	if (in.in_flags & MDS_INODE_F_HSM) {
		rc = hsm_rec_get(h->hs_ns, &in.in_fid, rec);
		if (rc == -ENOENT) {
			rc = 0;
		} else if (!rc) {
			st->st_flags = rec->hr_flags;
			if (!d) {
				st->st_dra = rec->hr_dra;
				snprintf(st->st_bucket, sizeof(st->st_bucket), "%s", rec->hr_bucket);
			}
			snprintf(st->st_key, sizeof(st->st_key), "%s", rec->hr_key);
			snprintf(st->st_etag, sizeof(st->st_etag), "%s", rec->hr_etag);
			st->st_data_version = rec->hr_data_version;
			st->st_archived_version = rec->hr_archived_version;
			st->st_archived_ns = rec->hr_archived_ns;
			if (rec->hr_flags & HSM_F_RELEASED)
				st->st_restored = hsm_rec_restored(rec, in.in_size);
		}
	}
	struct hsm_action *a = hsm_act_by_fid(h, &in.in_fid);
	if (a) {
		st->st_action_id = a->ha_id;
		st->st_action = a->ha_action;
	}
out_unlock:
	hsm_unlock(h);
	free(rec);
	return rc;
}

/* ------------------------------------------------------------ hooks from the namespace */

int mds_hsm_on_modify(struct mds_ns *ns, struct kv_batch *b, struct mds_inode *in, bool trunc,
		      uint64_t new_size)
{
	struct mds_hsm *h = ns->ns_hsm;
	struct hsm_rec *rec = malloc(sizeof(*rec));
	int rc;

	if (!rec)
		return -ENOMEM;
	rc = hsm_rec_get(ns, &in->in_fid, rec);
	if (rc == -ENOENT) {
		hsm_rec_init(rec); /* flag without a record: start one */
		rc = 0;
	}
	if (rc)
		goto out;
	if (h)
		pthread_mutex_lock(&h->hs_lock);
	if ((in->in_flags & MDS_INODE_F_RELEASED) && trunc) {
		if (new_size != 0) {
			/* the data must come back first (libweir restores before truncating) */
			if (h && !hsm_act_by_fid(h, &in->in_fid) &&
			    !hsm_act_queue(h, HSM_A_RESTORE, in, in->in_size, NULL))
				hsm_kick(h);
			rc = -EAGAIN;
			goto out_unlock;
		}
		if (hsm_destroy_pending(ns, &in->in_fid)) {
			rc = -EAGAIN; /* the old objects are still being destroyed */
			goto out_unlock;
		}
		struct hsm_action *a = h ? hsm_act_by_fid(h, &in->in_fid) : NULL;
		if (a && a->ha_state == HSM_S_RUNNING) {
			/* an agent may still be writing chunks of the old data: they
			 * would land after the truncate. Ask it to stop; the truncate
			 * is retried (-EAGAIN) until its DONE ends the action. */
			a->ha_cancel = true;
			rc = -EAGAIN;
			goto out_unlock;
		}
		if (a)
			hsm_act_finish(h, b, a, HSM_S_FAILED, -ECANCELED);
		in->in_flags &= ~MDS_INODE_F_RELEASED;
		rec->hr_flags &= ~HSM_F_RELEASED;
		rec->hr_chunk = 0;
		rec->hr_map_len = 0;
	}
	rec->hr_data_version++;
	if (rec->hr_flags & HSM_F_EXISTS)
		rec->hr_flags |= HSM_F_DIRTY;
	rec->hr_flags &= ~HSM_F_IMPORTED;
	in->in_flags |= MDS_INODE_F_HSM;
	hsm_rec_put(b, &in->in_fid, rec);
out_unlock:
	if (h)
		pthread_mutex_unlock(&h->hs_lock);
out:
	free(rec);
	return rc;
}

void mds_hsm_on_destroy(struct mds_ns *ns, struct kv_batch *b, const struct weir_fid *fid)
{
	struct mds_hsm *h = ns->ns_hsm;
	struct hsm_rec *rec = malloc(sizeof(*rec));
	if (rec && !hsm_rec_get(ns, fid, rec))
		hsm_key_update(ns, b, fid, rec->hr_bucket, rec->hr_key, NULL, NULL);
	else if (!rec)
		WEIR_LOG_WARN("fid=" WEIR_FID_F ": out of memory; its S3 key index entry stays"
			      " (a stale entry, ignored)", WEIR_FID_P(fid));
	free(rec);
	hsm_rec_del(b, fid);
	if (!h)
		return;
	pthread_mutex_lock(&h->hs_lock);
	struct hsm_action *a;
	while ((a = hsm_act_by_fid(h, fid)))
		hsm_act_finish(h, b, a, HSM_S_FAILED, -ECANCELED);
	pthread_mutex_unlock(&h->hs_lock);
}

void mds_hsm_on_writer_close(struct mds_ns *ns, const struct mds_inode *in)
{
	struct mds_hsm *h = ns->ns_hsm;
	bool kick = false;
	if (!h || !S_ISREG(in->in_mode))
		return;
	/* the common close: no HSM record (so no action) and no auto-export
	 * association; the coordinator's lock stays off the hot path */
	if (!(in->in_flags & MDS_INODE_F_HSM) && !hsm_any_auto_export(h))
		return;
	pthread_mutex_lock(&h->hs_lock);
	if (hsm_act_by_fid(h, &in->in_fid)) {
		kick = true; /* a waiting archive may go now */
		goto out_unlock;
	}
	if (!hsm_any_auto_export(h))
		goto out_unlock;
	const struct mds_hsm_dra *d = hsm_dra_of(h, in);
	if (!d || !(d->hd_flags & HSM_DF_AUTO_EXPORT))
		goto out_unlock;
	struct hsm_rec *rec = malloc(sizeof(*rec));
	if (!rec)
		goto out_unlock;
	int rc = (in->in_flags & MDS_INODE_F_HSM) ? hsm_rec_get(ns, &in->in_fid, rec) : -ENOENT;
	bool clean = !rc && (rec->hr_flags & HSM_F_ARCHIVED) && !(rec->hr_flags & HSM_F_DIRTY) &&
		     !(rec->hr_flags & HSM_F_LOST);
	free(rec);
	if (clean || (rc && rc != -ENOENT))
		goto out_unlock;
	rc = hsm_act_queue(h, HSM_A_ARCHIVE, in, in->in_size, NULL);
	if (rc)
		WEIR_LOG_WARN("dra=%u fid=" WEIR_FID_F " rc=%d: cannot queue the auto-export",
			      d->hd_id, WEIR_FID_P(&in->in_fid), rc);
	else
		kick = true;
out_unlock:
	pthread_mutex_unlock(&h->hs_lock);
	if (kick)
		hsm_kick(h);
}

/* ------------------------------------------------------------ requests */

static int req_archive(struct mds_hsm *h, const struct mds_cred *cr, struct mds_inode *in,
		       struct hsm_rec *rec, uint64_t *id)
{
	if (!mds_perm_owner(cr, in))
		return -EPERM;
	if (!hsm_dra_of(h, in))
		return -EINVAL;
	int rc = (in->in_flags & MDS_INODE_F_HSM) ? hsm_rec_get(h->hs_ns, &in->in_fid, rec) : -ENOENT;
	if (rc == -ENOENT)
		hsm_rec_init(rec);
	else if (rc)
		return rc;
	struct hsm_action *a = hsm_act_by_fid(h, &in->in_fid);
	if (a && a->ha_action == HSM_A_ARCHIVE) {
		*id = a->ha_id;
		return 0;
	}
	if (a)
		return -EBUSY;
	if (rec->hr_flags & HSM_F_RELEASED)
		return -EALREADY;
	if ((rec->hr_flags & HSM_F_ARCHIVED) && !(rec->hr_flags & (HSM_F_DIRTY | HSM_F_LOST)))
		return -EALREADY;
	uint32_t openers, writers;
	ns_open_counts(h->hs_ns, &in->in_fid, &openers, &writers);
	if (writers)
		return -EBUSY;
	rc = hsm_act_queue(h, HSM_A_ARCHIVE, in, in->in_size, &a);
	if (!rc)
		*id = a->ha_id;
	return rc;
}

static int req_restore(struct mds_hsm *h, const struct mds_cred *cr, struct mds_inode *in,
		       struct hsm_rec *rec, uint64_t *id)
{
	int rc = mds_perm_check(cr, in, MDS_MAY_READ);
	if (rc)
		return rc;
	if (!(in->in_flags & MDS_INODE_F_RELEASED))
		return -EALREADY;
	rc = hsm_rec_get(h->hs_ns, &in->in_fid, rec);
	if (rc)
		return rc == -ENOENT ? -EALREADY : rc;
	if (rec->hr_flags & HSM_F_LOST)
		return -EIO;
	struct hsm_action *a = hsm_act_by_fid(h, &in->in_fid);
	if (a) {
		*id = a->ha_id;
		return a->ha_action == HSM_A_RESTORE ? 0 : -EBUSY;
	}
	rc = hsm_act_queue(h, HSM_A_RESTORE, in, in->in_size, &a);
	if (!rc)
		*id = a->ha_id;
	return rc;
}

/* Release now: one batch marks the file released and queues its objects. Locks held. */
static int req_release(struct mds_hsm *h, const struct mds_cred *cr, struct mds_inode *in,
		       struct hsm_rec *rec)
{
	if (!mds_perm_owner(cr, in))
		return -EPERM;
	if (in->in_flags & MDS_INODE_F_RELEASED)
		return -EALREADY;
	int rc = (in->in_flags & MDS_INODE_F_HSM) ? hsm_rec_get(h->hs_ns, &in->in_fid, rec) : -ENOENT;
	if (rc && rc != -ENOENT)
		return rc;
	/* never archived: outside any association that is -EINVAL (the wire's order) */
	if ((rc || !(rec->hr_flags & HSM_F_EXISTS)) && !hsm_dra_of(h, in))
		return -EINVAL;
	if (rc)
		return -ENODATA;
	if (rec->hr_flags & HSM_F_RELEASED)
		return -EALREADY;
	if (!(rec->hr_flags & HSM_F_ARCHIVED) || (rec->hr_flags & (HSM_F_DIRTY | HSM_F_LOST)))
		return -ENODATA;
	if (rec->hr_archived_version != rec->hr_data_version || !rec->hr_etag[0])
		return -ENODATA;
	uint32_t openers, writers;
	ns_open_counts(h->hs_ns, &in->in_fid, &openers, &writers);
	if (openers || hsm_act_by_fid(h, &in->in_fid))
		return -EBUSY;
	struct kv_batch *b = kv_batch_new(h->hs_ns->ns_kv);
	if (!b)
		return -ENOMEM;
	rec->hr_flags |= HSM_F_RELEASED;
	hsm_rec_restore_reset(rec, in->in_size, in->in_layout.lo_stripe_size);
	in->in_flags |= MDS_INODE_F_RELEASED;
	ns_destroy_put(b, 'D', in);
	ns_objmap_del(b, &in->in_fid); /* its objects go: a restore's writes record them again */
	in->in_blocks = 0;
	ns_inode_put(b, in);
	hsm_rec_put(b, &in->in_fid, rec);
	rc = ns_batch_commit(h->hs_ns, b);
	if (!rc)
		WEIR_LOG_INFO("fid=" WEIR_FID_F " size=%llu key=%s: released",
			      WEIR_FID_P(&in->in_fid), (unsigned long long)in->in_size,
			      rec->hr_key);
	return rc;
}

int mds_hsm_request(struct mds_hsm *h, const struct mds_cred *cr, uint32_t action,
		    const struct weir_fid *fids, size_t n, uint64_t *ids, int32_t *rcs,
		    size_t *released)
{
	bool kick = false;
	*released = 0;
	if (n > HSM_REQUEST_MAX ||
	    (action != HSM_A_ARCHIVE && action != HSM_A_RESTORE && action != HSM_A_RELEASE))
		return -EINVAL;
	struct hsm_rec *rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	hsm_lock(h, true);
	for (size_t i = 0; i < n; i++) {
		struct mds_inode in;
		int rc = ns_inode_get(h->hs_ns, &fids[i], &in);
		ids[i] = 0;
		if (!rc && !S_ISREG(in.in_mode))
			rc = -EINVAL;
		if (!rc && action == HSM_A_ARCHIVE)
			rc = req_archive(h, cr, &in, rec, &ids[i]);
		else if (!rc && action == HSM_A_RESTORE)
			rc = req_restore(h, cr, &in, rec, &ids[i]);
		else if (!rc)
			rc = req_release(h, cr, &in, rec);
		if (!rc && action == HSM_A_RELEASE)
			(*released)++;
		else if (!rc)
			kick = true;
		rcs[i] = rc;
	}
	hsm_unlock(h);
	free(rec);
	if (kick)
		hsm_kick(h);
	return 0;
}

/* ------------------------------------------------------------ readers of released files */

int mds_hsm_restore_wait(struct mds_hsm *h, const struct mds_cred *cr,
			 const struct weir_fid *fid, uint64_t off, uint64_t len, bool *released,
			 bool *ready)
{
	struct mds_inode in;
	bool kick = false;
	*released = false;
	*ready = false;
	struct hsm_rec *rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	hsm_lock(h, true);
	int rc = ns_inode_get(h->hs_ns, fid, &in);
	if (!rc)
		rc = mds_perm_check(cr, &in, MDS_MAY_READ);
	if (rc)
		goto out_unlock;
	if (!(in.in_flags & MDS_INODE_F_RELEASED)) {
		*ready = true;
		goto out_unlock;
	}
	rc = hsm_rec_get(h->hs_ns, fid, rec);
	if (rc == -ENOENT) {
		rc = 0;
		*ready = true;
		goto out_unlock;
	}
	if (rc)
		goto out_unlock;
	*released = true;
	if (rec->hr_flags & HSM_F_LOST) {
		rc = -EIO;
		goto out_unlock;
	}
	uint64_t size = in.in_size;
	uint64_t end = (len == 0 || off + len < off || off + len > size) ? size : off + len;
	if (!rec->hr_chunk)
		hsm_rec_restore_reset(rec, size, in.in_layout.lo_stripe_size);
	/* an empty released file has no chunk to wait for, but its object may
	 * have changed in S3 all the same: it is served only once a restore
	 * has checked the ETag (and cleared RELEASED) */
	*ready = size != 0;
	for (uint64_t i = off / rec->hr_chunk; off < end && i <= (end - 1) / rec->hr_chunk; i++)
		if (!hsm_rec_chunk_done(rec, i)) {
			*ready = false;
			break;
		}
	if (*ready)
		goto out_unlock;
	struct hsm_action *a = hsm_act_by_fid(h, fid);
	if (!a) {
		int fin = hsm_fin_failed_restore(h, fid, HSM_FAILED_WINDOW_NS, HSM_RETRY_NS);
		if (fin == HSM_FIN_FAILED) {
			rc = -EIO;
			goto out_unlock;
		}
		if (fin == HSM_FIN_RETRY_LATER)
			goto out_unlock; /* not ready: the reader polls, and queues it then */
		rc = hsm_act_queue(h, HSM_A_RESTORE, &in, size, &a);
		if (rc)
			goto out_unlock;
		kick = true;
	}
	if (a->ha_action == HSM_A_RESTORE) {
		a->ha_has_hint = true;
		a->ha_hint = off / rec->hr_chunk * rec->hr_chunk;
	}
out_unlock:
	hsm_unlock(h);
	free(rec);
	if (kick)
		hsm_kick(h);
	return rc;
}
