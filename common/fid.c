/*
 * common/fid.c - see fid.h.
 */
#define _GNU_SOURCE
#include "fid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "le.h"

void weir_fid_pack_be(const struct weir_fid *f, uint8_t out[WEIR_FID_BYTES])
{
	weir_put_be64(out, f->fid_seq);
	weir_put_be64(out + 8, f->fid_oid);
}

void weir_fid_unpack_be(const uint8_t in[WEIR_FID_BYTES], struct weir_fid *f)
{
	f->fid_seq = weir_get_be64(in);
	f->fid_oid = weir_get_be64(in + 8);
}

const char *weir_fid_to_str(const struct weir_fid *f, char *buf, size_t len)
{
	snprintf(buf, len, WEIR_FID_F, WEIR_FID_P(f));
	return buf;
}

int weir_fid_parse(const char *s, struct weir_fid *f)
{
	char *end;
	if (*s == '[')
		s++;
	errno = 0;
	unsigned long long seq = strtoull(s, &end, 16);
	if (errno || end == s || *end != ':')
		return -EINVAL;
	s = end + 1;
	unsigned long long oid = strtoull(s, &end, 16);
	if (errno || end == s)
		return -EINVAL;
	if (*end == ':') {
		s = end + 1;
		unsigned long long ver = strtoull(s, &end, 16);
		if (errno || end == s || ver != 0)
			return -EINVAL;
	}
	if (*end == ']')
		end++;
	if (*end)
		return -EINVAL;
	f->fid_seq = seq;
	f->fid_oid = oid;
	return 0;
}

uint64_t weir_fid_flatten(const struct weir_fid *f)
{
	uint64_t ino = (f->fid_seq << 24) + ((f->fid_seq >> 24) * 0xffffffULL) + f->fid_oid;
	return ino ? ino : 1;
}
