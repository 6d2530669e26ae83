/*
 * tools/weir_dra.h - what the `weir dra` files share: tools/weir_dra.c (the
 * commands, their messages, the S3 client set-up) and tools/weir_dra_import.c
 * (the import of a bucket listing).
 */
#ifndef WEIR_TOOLS_DRA_H
#define WEIR_TOOLS_DRA_H

#include "weir_cli.h"

#include "common/s3.h"

#define DRA_NAME_MAX 255
#define DRA_PATH_MAX 4095

/** Print the error \a rc of a dra call on \a path (NULL: none), with a hint. */
void dra_err(const struct wcli *cli, const char *path, int rc);

/**
 * An S3 client for the bucket of \a d, configured from the AWS_* variables.
 * \param[out] out  Free with weir_s3_free().
 * \return 0, or -EINVAL (no endpoint or credentials) and the S3 client's
 *         errors, each reported.
 */
int dra_s3_open(struct wcli *cli, const struct weir_dra *d, struct weir_s3 **out);

/** Report the S3 listing error \a rc of association \a d. */
void dra_s3_err(const struct wcli *cli, const struct weir_dra *d, int rc);

/**
 * Import the listing of association \a d (its root at Weir path \a root); a
 * \a rescan also removes imported files whose objects are gone.
 * \return an exit code: WCLI_EXIT_OK, or WCLI_EXIT_FAIL when an object could
 *         not be applied (skipped and shadowed keys are warnings only).
 */
int dra_import_run(struct wcli *cli, const struct weir_dra *d, const char *root, bool rescan);

#endif /* WEIR_TOOLS_DRA_H */
