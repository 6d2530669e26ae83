/*
 * tools/weir_dra_shadow.h - the listed objects of an import and the rule
 * for a file and a directory of one name (`weir dra import`).
 *
 * Depends on libc only, so that tests/unit/tools/test_dra_shadow.c links it
 * alone.
 */
#ifndef WEIR_TOOLS_DRA_SHADOW_H
#define WEIR_TOOLS_DRA_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** One listed object, mapped to a path below the association's root. */
struct imp_obj {
	char *io_key;	     /* the full S3 key */
	char *io_rel;	     /* key minus prefix, split in place: io_dir and io_name point here */
	const char *io_dir;  /* directory below the root ("" = the root) */
	const char *io_name; /* entry name; "" for a directory marker */
	char *io_etag;
	uint64_t io_size; /* bytes */
	int64_t io_mtime_ns;
	bool io_shadowed; /* a file whose path is also a directory: not imported */
};

/**
 * Sort \a objs by (directory, name) and mark as shadowed every file (a
 * non-empty io_name) whose path below the root is also a directory: the
 * io_dir of another object (a directory marker "a/" included) or a parent
 * of one. The directory wins, as in Mountpoint for Amazon S3
 * (awslabs/mountpoint-s3, doc/SEMANTICS.md, "Files will be shadowed by
 * directories with the same name"): keys `out` and `out/x` give a directory
 * `out` holding `x`, and the object `out` is not imported. Names that sort
 * between the two (`out-x`, `out.txt`) are no matter, and neither is the
 * order of \a objs: the result is the same for every order the endpoint
 * lists keys in.
 *
 * \param[in,out] objs  \a nr objects; sorted and io_shadowed set in place.
 * \return the number of shadowed files, or -ENOMEM.
 * Thread safety: none needed (touches only \a objs).
 */
ssize_t dra_shadow_mark(struct imp_obj *objs, size_t nr);

#endif /* WEIR_TOOLS_DRA_SHADOW_H */
