/*
 * mds/inode.c - on-disk records of the MDT (docs/disk-format.md).
 *
 * Inode record, version 1, little-endian (CF "inodes", key = FID 16 BE):
 *   0 u8 version  1 u8 has_layout  2 u16 reserved
 *   4 u32 mode  8 u32 uid  12 u32 gid  16 u32 nlink  20 u32 flags
 *  24 u64 size  32 u64 blocks  40 i64 atime_ns  48 i64 mtime_ns  56 i64 ctime_ns
 *  64 u64 parent seq  72 u64 parent oid
 *  80 u32 pattern  84 u32 stripe_size  88 u32 stripe_count  92 u32 layout gen
 *  96 u32 ost[stripe_count]
 * A directory's record holds its default layout for new files instead (when
 * has_layout): stripe_count may be UINT32_MAX ("all OSTs"), byte 92 holds
 * the requested first OST as an i32 (-1 = any), and no OST list follows.
 * A character or block device (no layout) keeps its rdev at 80 (u64).
 * Dentry record, version 1 (CF "dentries", key = parent FID 16 BE + name
 * hash 8 BE + name bytes): 0 u8 version, 1 u8 DT_* type, 2 u16 reserved,
 *   4 u64 seq, 12 u64 oid.
 */
#define _GNU_SOURCE
#include "mds_int.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "common/le.h"
#include "common/log.h"
#include "common/util.h"

_Static_assert(MDS_INODE_REC_FIXED == 96, "inode record fixed part is 96 bytes");
_Static_assert(MDS_DENTRY_REC_SIZE == 20, "dentry record is 20 bytes");

size_t mds_inode_encode(const struct mds_inode *in, uint8_t *b)
{
	memset(b, 0, MDS_INODE_REC_FIXED);
	b[0] = MDS_INODE_REC_VERSION;
	b[1] = in->in_has_layout ? 1 : 0;
	weir_put_le32(b + 4, in->in_mode);
	weir_put_le32(b + 8, in->in_uid);
	weir_put_le32(b + 12, in->in_gid);
	weir_put_le32(b + 16, in->in_nlink);
	weir_put_le32(b + 20, in->in_flags & ~MDS_INODE_F_TRUNCATED); /* reply-only bit */
	weir_put_le64(b + 24, in->in_size);
	weir_put_le64(b + 32, in->in_blocks);
	weir_put_le64(b + 40, (uint64_t)in->in_atime_ns);
	weir_put_le64(b + 48, (uint64_t)in->in_mtime_ns);
	weir_put_le64(b + 56, (uint64_t)in->in_ctime_ns);
	weir_put_le64(b + 64, in->in_parent.fid_seq);
	weir_put_le64(b + 72, in->in_parent.fid_oid);
	size_t len = MDS_INODE_REC_FIXED;
	if (in->in_has_layout && S_ISDIR(in->in_mode)) {
		const struct weir_layout *lo = &in->in_layout;
		weir_put_le32(b + 80, lo->lo_pattern);
		weir_put_le32(b + 84, lo->lo_stripe_size);
		weir_put_le32(b + 88, lo->lo_stripe_count);
		weir_put_le32(b + 92, lo->lo_osts[0]);
	} else if (in->in_has_layout) {
		const struct weir_layout *lo = &in->in_layout;
		weir_put_le32(b + 80, lo->lo_pattern);
		weir_put_le32(b + 84, lo->lo_stripe_size);
		weir_put_le32(b + 88, lo->lo_stripe_count);
		weir_put_le32(b + 92, lo->lo_gen);
		for (uint32_t i = 0; i < lo->lo_stripe_count && i < WEIR_LAYOUT_MAX_STRIPES; i++)
			weir_put_le32(b + 96 + 4 * i, lo->lo_osts[i]);
		len += 4 * (size_t)lo->lo_stripe_count;
	} else if (S_ISCHR(in->in_mode) || S_ISBLK(in->in_mode)) {
		weir_put_le64(b + 80, in->in_rdev);
	}
	return len;
}

int mds_inode_decode(const struct weir_fid *fid, const uint8_t *b, size_t len,
		     struct mds_inode *in)
{
	memset(in, 0, sizeof(*in));
	if (len < MDS_INODE_REC_FIXED || b[0] != MDS_INODE_REC_VERSION) {
		WEIR_LOG_ERROR("fid=" WEIR_FID_F " len=%zu version=%u: corrupt inode record",
			       WEIR_FID_P(fid), len, len ? b[0] : 0);
		return -EIO;
	}
	in->in_fid = *fid;
	in->in_has_layout = b[1] != 0;
	in->in_mode = weir_get_le32(b + 4);
	in->in_uid = weir_get_le32(b + 8);
	in->in_gid = weir_get_le32(b + 12);
	in->in_nlink = weir_get_le32(b + 16);
	in->in_flags = weir_get_le32(b + 20);
	in->in_size = weir_get_le64(b + 24);
	in->in_blocks = weir_get_le64(b + 32);
	in->in_atime_ns = (int64_t)weir_get_le64(b + 40);
	in->in_mtime_ns = (int64_t)weir_get_le64(b + 48);
	in->in_ctime_ns = (int64_t)weir_get_le64(b + 56);
	in->in_parent.fid_seq = weir_get_le64(b + 64);
	in->in_parent.fid_oid = weir_get_le64(b + 72);
	if (in->in_has_layout && S_ISDIR(in->in_mode)) {
		struct weir_layout *lo = &in->in_layout;
		lo->lo_pattern = weir_get_le32(b + 80);
		lo->lo_stripe_size = weir_get_le32(b + 84);
		lo->lo_stripe_count = weir_get_le32(b + 88);
		lo->lo_osts[0] = weir_get_le32(b + 92);
		if (len != MDS_INODE_REC_FIXED) {
			WEIR_LOG_ERROR("fid=" WEIR_FID_F " len=%zu: corrupt directory record",
				       WEIR_FID_P(fid), len);
			return -EIO;
		}
	} else if (in->in_has_layout) {
		struct weir_layout *lo = &in->in_layout;
		lo->lo_pattern = weir_get_le32(b + 80);
		lo->lo_stripe_size = weir_get_le32(b + 84);
		lo->lo_stripe_count = weir_get_le32(b + 88);
		lo->lo_gen = weir_get_le32(b + 92);
		if (lo->lo_stripe_count > WEIR_LAYOUT_MAX_STRIPES ||
		    len != MDS_INODE_REC_FIXED + 4 * (size_t)lo->lo_stripe_count) {
			WEIR_LOG_ERROR("fid=" WEIR_FID_F " count=%u len=%zu: corrupt layout",
				       WEIR_FID_P(fid), lo->lo_stripe_count, len);
			return -EIO;
		}
		for (uint32_t i = 0; i < lo->lo_stripe_count; i++)
			lo->lo_osts[i] = weir_get_le32(b + 96 + 4 * i);
	} else if (S_ISCHR(in->in_mode) || S_ISBLK(in->in_mode)) {
		in->in_rdev = weir_get_le64(b + 80);
	}
	return 0;
}

void mds_dentry_encode(const struct weir_fid *fid, uint8_t type, uint8_t b[MDS_DENTRY_REC_SIZE])
{
	memset(b, 0, MDS_DENTRY_REC_SIZE);
	b[0] = MDS_DENTRY_REC_VERSION;
	b[1] = type;
	weir_put_le64(b + 4, fid->fid_seq);
	weir_put_le64(b + 12, fid->fid_oid);
}

int mds_dentry_decode(const uint8_t *b, size_t len, struct weir_fid *fid, uint8_t *type)
{
	if (len != MDS_DENTRY_REC_SIZE || b[0] != MDS_DENTRY_REC_VERSION) {
		WEIR_LOG_ERROR("len=%zu: corrupt dentry record", len);
		return -EIO;
	}
	*type = b[1];
	fid->fid_seq = weir_get_le64(b + 4);
	fid->fid_oid = weir_get_le64(b + 12);
	return 0;
}

size_t mds_dentry_key(const struct weir_fid *parent, const char *name, size_t nlen, uint8_t *key)
{
	weir_fid_pack_be(parent, key);
	weir_put_be64(key + 16, weir_name_cookie(name, nlen));
	memcpy(key + 24, name, nlen);
	return 24 + nlen;
}
