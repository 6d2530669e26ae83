/*
 * mds/hsm_store.c - on-disk records of the HSM coordinator (CF "hsm",
 * docs/disk-format.md "HSM records") and the path helpers it needs.
 *
 * HSM file record v1, key 'S' + FID (16 BE), little-endian:
 *   0 u8 version=1  1 u8 bucket_len  2 u8 etag_len  3 u8 0
 *   4 u32 flags (HSM_F_*)  8 u32 dra  12 u16 key_len  14 u16 map_len
 *  16 u64 data_version  24 u64 archived_version  32 i64 archived_ns
 *  40 u64 archived_size  48 u64 restore chunk (bytes, 0 none)
 *  56 bucket, key, etag bytes, then map_len bytes of restore bitmap.
 * DRA record v1, key 'A' + id (4 BE):
 *   0 u8 version=1  1 u8 bucket_len  2 u16 prefix_len  4 u32 flags
 *   8 i64 created_ns  16 u64 root seq  24 u64 root oid  32 u16 path_len
 *  34 u16 0  36 u32 id  40 bucket, prefix, path bytes.
 * Action record v1, key 'Q' + id (8 BE):
 *   0 u8 version=1  1 u8 action  2 u8 attempts  3 u8 0  4 u16 upload_id_len
 *   6 u16 0  8 u64 fid seq  16 u64 fid oid  24 i64 queued_ns
 *  32 u64 bytes_total  40 u64 id  48 upload id bytes.
 * Key "I": u64 LE, the action id high-water mark.
 * Key index, key 'K' + bucket + '\0' + S3 key: the FID (16 BE) whose 'S'
 * record holds that bucket/key (written in the batch that sets the record's
 * key, deleted in the one that changes or deletes it). Key "k" (u8 1): the
 * index is complete (built from the 'S' records by an MDT opened without it).
 *
 * Paths: a directory knows its parent (in_parent); a regular file keeps
 * the directory of its name as a hint in the same field (set at creation
 * and rename). The name is found by scanning that directory's entries; a
 * stale hint (a hard link's other name removed) falls back to a scan of
 * every dentry (slow, logged at INFO).
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

#define HSM_REC_VERSION 1
#define HSM_REC_FIXED 56
#define HSM_DRA_VERSION 1
#define HSM_DRA_FIXED 40
#define HSM_QREC_VERSION 1
#define HSM_QREC_FIXED 48
#define HSM_REC_MAX (HSM_REC_FIXED + HSM_BUCKET_MAX + HSM_KEY_MAX + HSM_ETAG_MAX + HSM_MAP_MAX)

_Static_assert(HSM_MAP_MAX <= 0xffff, "bitmap length fits u16");
_Static_assert(HSM_ETAG_MAX <= 0xff && HSM_BUCKET_MAX <= 0xff, "lengths fit u8");
_Static_assert(HSM_QREC_MAX >= HSM_QREC_FIXED + HSM_UPLOAD_ID_MAX, "action record size");
_Static_assert(HSM_DRA_REC_MAX >= HSM_DRA_FIXED + HSM_BUCKET_MAX + HSM_KEY_MAX + NS_PATH_MAX,
	       "DRA record size");

/* ------------------------------------------------------------ file records */

void hsm_rec_init(struct hsm_rec *r)
{
	memset(r, 0, offsetof(struct hsm_rec, hr_map));
}

static void rec_key(const struct weir_fid *fid, uint8_t key[1 + WEIR_FID_BYTES])
{
	key[0] = 'S';
	weir_fid_pack_be(fid, key + 1);
}

int hsm_rec_get(struct mds_ns *ns, const struct weir_fid *fid, struct hsm_rec *r)
{
	uint8_t key[1 + WEIR_FID_BYTES];
	uint8_t *v = malloc(HSM_REC_MAX);
	if (!v)
		return -ENOMEM;
	rec_key(fid, key);
	hsm_rec_init(r);
	ssize_t n = kv_get(ns->ns_kv, KV_CF_HSM, key, sizeof(key), v, HSM_REC_MAX);
	int rc = 0;
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	size_t len = (size_t)n;
	if (len < HSM_REC_FIXED || len > HSM_REC_MAX || v[0] != HSM_REC_VERSION)
		goto corrupt;
	size_t bl = v[1], el = v[2], kl = weir_get_le16(v + 12), ml = weir_get_le16(v + 14);
	if (bl > HSM_BUCKET_MAX || el > HSM_ETAG_MAX || kl > HSM_KEY_MAX || ml > HSM_MAP_MAX ||
	    HSM_REC_FIXED + bl + kl + el + ml != len)
		goto corrupt;
	r->hr_flags = weir_get_le32(v + 4);
	r->hr_dra = weir_get_le32(v + 8);
	r->hr_map_len = (uint32_t)ml;
	r->hr_data_version = weir_get_le64(v + 16);
	r->hr_archived_version = weir_get_le64(v + 24);
	r->hr_archived_ns = (int64_t)weir_get_le64(v + 32);
	r->hr_archived_size = weir_get_le64(v + 40);
	r->hr_chunk = weir_get_le64(v + 48);
	const uint8_t *p = v + HSM_REC_FIXED;
	memcpy(r->hr_bucket, p, bl);
	r->hr_bucket[bl] = 0;
	p += bl;
	memcpy(r->hr_key, p, kl);
	r->hr_key[kl] = 0;
	p += kl;
	memcpy(r->hr_etag, p, el);
	r->hr_etag[el] = 0;
	p += el;
	memcpy(r->hr_map, p, ml);
	goto out;
corrupt:
	WEIR_LOG_ERROR("fid=" WEIR_FID_F " len=%zd: corrupt HSM record", WEIR_FID_P(fid), n);
	rc = -EIO;
out:
	free(v);
	return rc;
}

void hsm_rec_put(struct kv_batch *b, const struct weir_fid *fid, const struct hsm_rec *r)
{
	uint8_t key[1 + WEIR_FID_BYTES];
	uint8_t *v = malloc(HSM_REC_MAX);
	WEIR_ASSERT(v); /* 10 KiB; an MDS out of memory here cannot keep its records */
	size_t bl = strnlen(r->hr_bucket, HSM_BUCKET_MAX), kl = strnlen(r->hr_key, HSM_KEY_MAX);
	size_t el = strnlen(r->hr_etag, HSM_ETAG_MAX), ml = WEIR_MIN(r->hr_map_len, HSM_MAP_MAX);
	rec_key(fid, key);
	memset(v, 0, HSM_REC_FIXED);
	v[0] = HSM_REC_VERSION;
	v[1] = (uint8_t)bl;
	v[2] = (uint8_t)el;
	weir_put_le32(v + 4, r->hr_flags);
	weir_put_le32(v + 8, r->hr_dra);
	weir_put_le16(v + 12, (uint16_t)kl);
	weir_put_le16(v + 14, (uint16_t)ml);
	weir_put_le64(v + 16, r->hr_data_version);
	weir_put_le64(v + 24, r->hr_archived_version);
	weir_put_le64(v + 32, (uint64_t)r->hr_archived_ns);
	weir_put_le64(v + 40, r->hr_archived_size);
	weir_put_le64(v + 48, r->hr_chunk);
	uint8_t *p = v + HSM_REC_FIXED;
	memcpy(p, r->hr_bucket, bl);
	p += bl;
	memcpy(p, r->hr_key, kl);
	p += kl;
	memcpy(p, r->hr_etag, el);
	p += el;
	memcpy(p, r->hr_map, ml);
	p += ml;
	kv_batch_put(b, KV_CF_HSM, key, sizeof(key), v, (size_t)(p - v));
	free(v);
}

void hsm_rec_del(struct kv_batch *b, const struct weir_fid *fid)
{
	uint8_t key[1 + WEIR_FID_BYTES];
	rec_key(fid, key);
	kv_batch_del(b, KV_CF_HSM, key, sizeof(key));
}

static uint64_t round_up(uint64_t v, uint64_t m)
{
	return (v + m - 1) / m * m;
}

uint64_t hsm_chunk_size(uint64_t size, uint32_t stripe_size)
{
	uint64_t s = stripe_size ? stripe_size : (1u << 20);
	uint64_t c = round_up(HSM_CHUNK_MIN, s);
	uint64_t d = round_up((size + HSM_CHUNKS_MAX - 1) / HSM_CHUNKS_MAX, s);
	return WEIR_MAX(c, d);
}

void hsm_rec_restore_reset(struct hsm_rec *r, uint64_t size, uint32_t stripe_size)
{
	r->hr_chunk = hsm_chunk_size(size, stripe_size);
	uint64_t nr = (size + r->hr_chunk - 1) / r->hr_chunk;
	r->hr_map_len = (uint32_t)((nr + 7) / 8);
	memset(r->hr_map, 0, r->hr_map_len);
}

bool hsm_rec_chunk_done(const struct hsm_rec *r, uint64_t i)
{
	if (i / 8 >= r->hr_map_len)
		return false;
	return r->hr_map[i / 8] & (1u << (i % 8));
}

uint64_t hsm_rec_restored(const struct hsm_rec *r, uint64_t size)
{
	if (!r->hr_chunk)
		return 0;
	uint64_t nr = (size + r->hr_chunk - 1) / r->hr_chunk, bytes = 0;
	for (uint64_t i = 0; i < nr; i++)
		if (hsm_rec_chunk_done(r, i))
			bytes += WEIR_MIN(r->hr_chunk, size - i * r->hr_chunk);
	return bytes;
}

bool hsm_destroy_pending(struct mds_ns *ns, const struct weir_fid *fid)
{
	uint8_t key[1 + WEIR_FID_BYTES], v[8];
	key[0] = 'D';
	weir_fid_pack_be(fid, key + 1);
	return kv_get(ns->ns_kv, KV_CF_DESTROY, key, sizeof(key), v, sizeof(v)) >= 0;
}

bool hsm_bucket_valid(const char *name)
{
	size_t l = strlen(name);
	if (l < 3 || l > HSM_BUCKET_MAX)
		return false;
	for (size_t i = 0; i < l; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && c != '.' && c != '-')
			return false;
		if (!alnum && (i == 0 || i == l - 1))
			return false;
	}
	return true;
}

/* ------------------------------------------------------------ key index */

#define HSM_KIDX_MAX (2 + HSM_BUCKET_MAX + HSM_KEY_MAX)

static size_t kidx_key(const char *bucket, const char *key, uint8_t *k)
{
	size_t bl = strnlen(bucket, HSM_BUCKET_MAX), kl = strnlen(key, HSM_KEY_MAX);
	k[0] = 'K';
	memcpy(k + 1, bucket, bl);
	k[1 + bl] = 0;
	memcpy(k + 2 + bl, key, kl);
	return 2 + bl + kl;
}

int hsm_key_owner(struct mds_ns *ns, const char *bucket, const char *key, struct weir_fid *fid)
{
	uint8_t k[HSM_KIDX_MAX], v[WEIR_FID_BYTES];
	size_t kl = kidx_key(bucket, key, k);
	ssize_t n = kv_get(ns->ns_kv, KV_CF_HSM, k, kl, v, sizeof(v));
	if (n < 0)
		return (int)n;
	if (n != WEIR_FID_BYTES) {
		WEIR_LOG_ERROR("bucket=%s key=%s len=%zd: corrupt HSM key index entry", bucket, key,
			       n);
		return -EIO;
	}
	weir_fid_unpack_be(v, fid);
	return 0;
}

void hsm_key_update(struct mds_ns *ns, struct kv_batch *b, const struct weir_fid *fid,
		    const char *ob, const char *ok, const char *nb, const char *nk)
{
	uint8_t k[HSM_KIDX_MAX], v[WEIR_FID_BYTES];
	bool had = ok && ok[0], has = nk && nk[0];
	ob = ob ? ob : "";
	nb = nb ? nb : "";
	if (had && has && !strcmp(ob, nb) && !strcmp(ok, nk))
		return;
	if (had) {
		struct weir_fid owner;
		if (!hsm_key_owner(ns, ob, ok, &owner) && weir_fid_eq(&owner, fid))
			kv_batch_del(b, KV_CF_HSM, k, kidx_key(ob, ok, k));
	}
	if (has) {
		weir_fid_pack_be(fid, v);
		kv_batch_put(b, KV_CF_HSM, k, kidx_key(nb, nk, k), v, sizeof(v));
	}
}

int hsm_key_index_build(struct mds_ns *ns)
{
	uint8_t one = 1;
	if (kv_get(ns->ns_kv, KV_CF_HSM, "k", 1, &one, 1) >= 0)
		return 0;
	struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_HSM);
	struct hsm_rec *r = malloc(sizeof(*r));
	struct kv_batch *b = kv_batch_new(ns->ns_kv);
	size_t n = 0, in_batch = 0;
	int rc = 0;
	if (!it || !r || !b) {
		rc = -ENOMEM;
		goto out;
	}
	for (kv_iter_seek(it, "S", 1); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (kl != 1 + WEIR_FID_BYTES || k[0] != 'S')
			break;
		struct weir_fid fid, owner;
		weir_fid_unpack_be(k + 1, &fid);
		if (hsm_rec_get(ns, &fid, r) || !r->hr_key[0] ||
		    hsm_key_owner(ns, r->hr_bucket, r->hr_key, &owner) != -ENOENT)
			continue;
		hsm_key_update(ns, b, &fid, NULL, NULL, r->hr_bucket, r->hr_key);
		n++;
		if (++in_batch == 256) {
			rc = ns_batch_commit(ns, b);
			b = rc ? NULL : kv_batch_new(ns->ns_kv);
			if (!b) {
				rc = rc ? rc : -ENOMEM;
				goto out;
			}
			in_batch = 0;
		}
	}
	kv_batch_put(b, KV_CF_HSM, "k", 1, &one, 1);
	rc = ns_batch_commit(ns, b);
	b = NULL;
	if (!rc && n)
		WEIR_LOG_NOTICE("hsm: S3 key index built (%zu keys)", n);
out:
	kv_batch_free(b);
	kv_iter_free(it);
	free(r);
	return rc;
}

/* ------------------------------------------------------------ DRA and action records */

void hsm_dra_key(uint32_t id, uint8_t key[5])
{
	key[0] = 'A';
	weir_put_be32(key + 1, id);
}

size_t hsm_dra_encode(const struct mds_hsm_dra *d, uint8_t *v)
{
	size_t bl = strnlen(d->hd_bucket, HSM_BUCKET_MAX), pl = strnlen(d->hd_prefix, HSM_KEY_MAX);
	size_t ql = strnlen(d->hd_path, NS_PATH_MAX);
	memset(v, 0, HSM_DRA_FIXED);
	v[0] = HSM_DRA_VERSION;
	v[1] = (uint8_t)bl;
	weir_put_le16(v + 2, (uint16_t)pl);
	weir_put_le32(v + 4, d->hd_flags);
	weir_put_le64(v + 8, (uint64_t)d->hd_created_ns);
	weir_put_le64(v + 16, d->hd_root.fid_seq);
	weir_put_le64(v + 24, d->hd_root.fid_oid);
	weir_put_le16(v + 32, (uint16_t)ql);
	weir_put_le32(v + 36, d->hd_id);
	uint8_t *p = v + HSM_DRA_FIXED;
	memcpy(p, d->hd_bucket, bl);
	p += bl;
	memcpy(p, d->hd_prefix, pl);
	p += pl;
	memcpy(p, d->hd_path, ql);
	p += ql;
	return (size_t)(p - v);
}

int hsm_dra_decode(const uint8_t *v, size_t len, struct mds_hsm_dra *d)
{
	memset(d, 0, sizeof(*d));
	if (len < HSM_DRA_FIXED || v[0] != HSM_DRA_VERSION)
		return -EIO;
	size_t bl = v[1], pl = weir_get_le16(v + 2), ql = weir_get_le16(v + 32);
	if (bl > HSM_BUCKET_MAX || pl > HSM_KEY_MAX || ql > NS_PATH_MAX ||
	    HSM_DRA_FIXED + bl + pl + ql != len)
		return -EIO;
	d->hd_flags = weir_get_le32(v + 4);
	d->hd_created_ns = (int64_t)weir_get_le64(v + 8);
	d->hd_root.fid_seq = weir_get_le64(v + 16);
	d->hd_root.fid_oid = weir_get_le64(v + 24);
	d->hd_id = weir_get_le32(v + 36);
	const uint8_t *p = v + HSM_DRA_FIXED;
	memcpy(d->hd_bucket, p, bl);
	p += bl;
	memcpy(d->hd_prefix, p, pl);
	p += pl;
	memcpy(d->hd_path, p, ql);
	return 0;
}

void hsm_qrec_key(uint64_t id, uint8_t key[9])
{
	key[0] = 'Q';
	weir_put_be64(key + 1, id);
}

size_t hsm_qrec_encode(const struct hsm_qrec *q, uint8_t *v)
{
	size_t ul = strnlen(q->q_upload_id, HSM_UPLOAD_ID_MAX);
	memset(v, 0, HSM_QREC_FIXED);
	v[0] = HSM_QREC_VERSION;
	v[1] = (uint8_t)q->q_action;
	v[2] = (uint8_t)WEIR_MIN(q->q_attempts, 255u);
	weir_put_le16(v + 4, (uint16_t)ul);
	weir_put_le64(v + 8, q->q_fid.fid_seq);
	weir_put_le64(v + 16, q->q_fid.fid_oid);
	weir_put_le64(v + 24, (uint64_t)q->q_queued_ns);
	weir_put_le64(v + 32, q->q_bytes_total);
	weir_put_le64(v + 40, q->q_id);
	memcpy(v + HSM_QREC_FIXED, q->q_upload_id, ul);
	return HSM_QREC_FIXED + ul;
}

int hsm_qrec_decode(const uint8_t *v, size_t len, struct hsm_qrec *q)
{
	memset(q, 0, sizeof(*q));
	if (len < HSM_QREC_FIXED || v[0] != HSM_QREC_VERSION)
		return -EIO;
	size_t ul = weir_get_le16(v + 4);
	if (ul > HSM_UPLOAD_ID_MAX || HSM_QREC_FIXED + ul != len)
		return -EIO;
	q->q_action = v[1];
	q->q_attempts = v[2];
	q->q_fid.fid_seq = weir_get_le64(v + 8);
	q->q_fid.fid_oid = weir_get_le64(v + 16);
	q->q_queued_ns = (int64_t)weir_get_le64(v + 24);
	q->q_bytes_total = weir_get_le64(v + 32);
	q->q_id = weir_get_le64(v + 40);
	memcpy(q->q_upload_id, v + HSM_QREC_FIXED, ul);
	if (q->q_action != HSM_A_ARCHIVE && q->q_action != HSM_A_RESTORE)
		return -EIO;
	return 0;
}

/* ------------------------------------------------------------ paths */

/*
 * Find the directory entry naming \a fid: among \a dir's entries, or with
 * \a dir NULL among every entry (the slow search for a file whose parent
 * hint is stale). Fills \a parent (may be NULL) and \a name (\a nlen bytes,
 * NUL-terminated). \return 0, -ENOENT, -ENOMEM.
 */
static int dentry_of(struct mds_ns *ns, const struct weir_fid *dir, const struct weir_fid *fid,
		     struct weir_fid *parent, char *name, size_t *nlen)
{
	uint8_t key[WEIR_FID_BYTES];
	struct kv_iter *it = kv_iter_new(ns->ns_kv, KV_CF_DENTRIES);
	int rc = -ENOENT;
	if (!it)
		return -ENOMEM;
	if (dir)
		weir_fid_pack_be(dir, key);
	else
		WEIR_LOG_INFO("fid=" WEIR_FID_F ": parent unknown; searching every directory"
			      " entry", WEIR_FID_P(fid));
	for (kv_iter_seek(it, key, dir ? sizeof(key) : 0); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = kv_iter_key(it, &kl);
		if (dir && (kl < 24 || memcmp(k, key, sizeof(key))))
			break;
		const uint8_t *v = kv_iter_val(it, &vl);
		struct weir_fid f;
		uint8_t type;
		if (kl < 24 || kl - 24 > NS_NAME_MAX || mds_dentry_decode(v, vl, &f, &type))
			continue;
		if (weir_fid_eq(&f, fid)) {
			if (parent)
				weir_fid_unpack_be(k, parent);
			*nlen = kl - 24;
			memcpy(name, k + 24, *nlen);
			name[*nlen] = 0;
			rc = 0;
			break;
		}
	}
	kv_iter_free(it);
	return rc;
}

static int parent_and_name(struct mds_ns *ns, const struct mds_inode *in, struct weir_fid *parent,
			   char *name, size_t *nlen)
{
	if (!weir_fid_is_zero(&in->in_parent)) {
		int rc = dentry_of(ns, &in->in_parent, &in->in_fid, NULL, name, nlen);
		if (rc != -ENOENT) {
			*parent = in->in_parent;
			return rc;
		}
		if (S_ISDIR(in->in_mode))
			return -EIO; /* a directory not in its parent: corrupt */
	}
	return dentry_of(ns, NULL, &in->in_fid, parent, name, nlen);
}

int hsm_parent_of(struct mds_ns *ns, const struct mds_inode *in, struct weir_fid *parent)
{
	char name[NS_NAME_MAX + 1];
	size_t nlen;
	struct weir_fid root = weir_fid_root();
	if (weir_fid_eq(&in->in_fid, &root)) {
		*parent = root;
		return 0;
	}
	if (S_ISDIR(in->in_mode)) {
		*parent = in->in_parent;
		return 0;
	}
	/* a file's hint, when its directory still exists (no scan: this runs at
	 * every last writer close under an auto-export association) */
	struct mds_inode din;
	if (!weir_fid_is_zero(&in->in_parent) && !ns_inode_get(ns, &in->in_parent, &din) &&
	    S_ISDIR(din.in_mode)) {
		*parent = in->in_parent;
		return 0;
	}
	return parent_and_name(ns, in, parent, name, &nlen);
}

int hsm_path_below(struct mds_ns *ns, const struct mds_inode *in, const struct weir_fid *top,
		   char *buf, size_t cap)
{
	struct weir_fid root = weir_fid_root();
	char name[NS_NAME_MAX + 1];
	size_t pos = cap - 1, nlen;
	struct mds_inode cur = *in;
	int rc;

	if (cap < 2)
		return -ENAMETOOLONG;
	buf[pos] = 0;
	for (int depth = 0; depth < 4096; depth++) {
		if (weir_fid_eq(&cur.in_fid, top)) {
			if (pos < cap - 1)
				pos++; /* drop the leading '/' */
			memmove(buf, buf + pos, cap - pos);
			return 0;
		}
		if (weir_fid_eq(&cur.in_fid, &root))
			return -ENOENT;
		struct weir_fid parent;
		rc = parent_and_name(ns, &cur, &parent, name, &nlen);
		if (rc)
			return rc;
		if (nlen + 1 > pos)
			return -ENAMETOOLONG;
		pos -= nlen;
		memcpy(buf + pos, name, nlen);
		buf[--pos] = '/';
		rc = ns_inode_get(ns, &parent, &cur);
		if (rc)
			return rc == -ENOENT ? -EIO : rc;
	}
	return -ELOOP;
}
