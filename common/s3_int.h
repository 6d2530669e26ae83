/*
 * common/s3_int.h - private to common/s3.c and common/s3_xml.c.
 */
#ifndef WEIR_COMMON_S3_INT_H
#define WEIR_COMMON_S3_INT_H

#include <stddef.h>

/**
 * Text of the first element named \a name anywhere in the XML document
 * \a xml whose root element is \a root (NULL = any root).
 * \return 0, -ENOENT (no such element), -EPROTO (not XML / other root),
 *         -ENAMETOOLONG (truncated into \a out of \a outlen bytes).
 */
int s3_xml_text(const char *xml, size_t len, const char *root, const char *name, char *out,
		size_t outlen);

#endif /* WEIR_COMMON_S3_INT_H */
