/*
 * net/status.c - errno <-> weir.WireStatus, one table. The wire values are
 * fixed by net/proto/weir.proto; the host's errno values are looked up here,
 * so a host with other errno numbers still speaks the same wire statuses.
 */
#define _GNU_SOURCE
#include "frame.h"

#include <errno.h>
#include <stddef.h>

#include "weir.pb-c.h"

static const struct {
	int err;
	int32_t ws;
} status_table[] = {
	{ EPERM, WEIR__WIRE_STATUS__WS_EPERM },
	{ ENOENT, WEIR__WIRE_STATUS__WS_ENOENT },
	{ EINTR, WEIR__WIRE_STATUS__WS_EINTR },
	{ EIO, WEIR__WIRE_STATUS__WS_EIO },
	{ ENXIO, WEIR__WIRE_STATUS__WS_ENXIO },
	{ E2BIG, WEIR__WIRE_STATUS__WS_E2BIG },
	{ EBADF, WEIR__WIRE_STATUS__WS_EBADF },
	{ EAGAIN, WEIR__WIRE_STATUS__WS_EAGAIN },
	{ ENOMEM, WEIR__WIRE_STATUS__WS_ENOMEM },
	{ EACCES, WEIR__WIRE_STATUS__WS_EACCES },
	{ EFAULT, WEIR__WIRE_STATUS__WS_EFAULT },
	{ EBUSY, WEIR__WIRE_STATUS__WS_EBUSY },
	{ EEXIST, WEIR__WIRE_STATUS__WS_EEXIST },
	{ EXDEV, WEIR__WIRE_STATUS__WS_EXDEV },
	{ ENODEV, WEIR__WIRE_STATUS__WS_ENODEV },
	{ ENOTDIR, WEIR__WIRE_STATUS__WS_ENOTDIR },
	{ EISDIR, WEIR__WIRE_STATUS__WS_EISDIR },
	{ EINVAL, WEIR__WIRE_STATUS__WS_EINVAL },
	{ ENFILE, WEIR__WIRE_STATUS__WS_ENFILE },
	{ EMFILE, WEIR__WIRE_STATUS__WS_EMFILE },
	{ EFBIG, WEIR__WIRE_STATUS__WS_EFBIG },
	{ ENOSPC, WEIR__WIRE_STATUS__WS_ENOSPC },
	{ ESPIPE, WEIR__WIRE_STATUS__WS_ESPIPE },
	{ EROFS, WEIR__WIRE_STATUS__WS_EROFS },
	{ EMLINK, WEIR__WIRE_STATUS__WS_EMLINK },
	{ EPIPE, WEIR__WIRE_STATUS__WS_EPIPE },
	{ ERANGE, WEIR__WIRE_STATUS__WS_ERANGE },
	{ EDEADLK, WEIR__WIRE_STATUS__WS_EDEADLK },
	{ ENAMETOOLONG, WEIR__WIRE_STATUS__WS_ENAMETOOLONG },
	{ ENOLCK, WEIR__WIRE_STATUS__WS_ENOLCK },
	{ ENOSYS, WEIR__WIRE_STATUS__WS_ENOSYS },
	{ ENOTEMPTY, WEIR__WIRE_STATUS__WS_ENOTEMPTY },
	{ ELOOP, WEIR__WIRE_STATUS__WS_ELOOP },
	{ ENODATA, WEIR__WIRE_STATUS__WS_ENODATA },
	{ EREMOTE, WEIR__WIRE_STATUS__WS_EREMOTE },
	{ ENOLINK, WEIR__WIRE_STATUS__WS_ENOLINK },
	{ EPROTO, WEIR__WIRE_STATUS__WS_EPROTO },
	{ EBADMSG, WEIR__WIRE_STATUS__WS_EBADMSG },
	{ EOVERFLOW, WEIR__WIRE_STATUS__WS_EOVERFLOW },
	{ EOPNOTSUPP, WEIR__WIRE_STATUS__WS_EOPNOTSUPP },
	{ ESHUTDOWN, WEIR__WIRE_STATUS__WS_ESHUTDOWN },
	{ ETIMEDOUT, WEIR__WIRE_STATUS__WS_ETIMEDOUT },
	{ ECONNREFUSED, WEIR__WIRE_STATUS__WS_ECONNREFUSED },
	{ EHOSTDOWN, WEIR__WIRE_STATUS__WS_EHOSTDOWN },
	{ EINPROGRESS, WEIR__WIRE_STATUS__WS_EINPROGRESS },
	{ ESTALE, WEIR__WIRE_STATUS__WS_ESTALE },
	{ EDQUOT, WEIR__WIRE_STATUS__WS_EDQUOT },
	{ ECANCELED, WEIR__WIRE_STATUS__WS_ECANCELED },
};

int32_t weir_status_from_errno(int rc)
{
	if (rc >= 0)
		return WEIR__WIRE_STATUS__WS_OK;
	if (rc == -EOPNOTSUPP || rc == -ENOTSUP)
		return WEIR__WIRE_STATUS__WS_EOPNOTSUPP;
	for (size_t i = 0; i < sizeof(status_table) / sizeof(status_table[0]); i++)
		if (status_table[i].err == -rc)
			return status_table[i].ws;
	return WEIR__WIRE_STATUS__WS_EIO;
}

int weir_status_to_errno(int32_t status)
{
	if (status == WEIR__WIRE_STATUS__WS_OK)
		return 0;
	for (size_t i = 0; i < sizeof(status_table) / sizeof(status_table[0]); i++)
		if (status_table[i].ws == status)
			return -status_table[i].err;
	return -EIO;
}
