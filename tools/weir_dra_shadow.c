/*
 * tools/weir_dra_shadow.c - which listed files of an import are shadowed by
 * a directory of the same name (see weir_dra_shadow.h).
 *
 * The directories are every object's io_dir, sorted; a file's path P is a
 * directory when P is one of them or one starts with "P/". Those that start
 * with "P/" are contiguous in strcmp order but need not follow P at once
 * ("P-x" and "P.x" sort between P and "P/..."), hence a search for "P/".
 */
#include "weir_dra_shadow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int shadow_obj_cmp(const void *a, const void *b)
{
	const struct imp_obj *x = a, *y = b;
	int c = strcmp(x->io_dir, y->io_dir);
	return c ? c : strcmp(x->io_name, y->io_name);
}

static int shadow_str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Index of the first of \a dirs (sorted, \a nd) not below \a s in strcmp order. */
static size_t shadow_lower_bound(const char **dirs, size_t nd, const char *s)
{
	size_t lo = 0, hi = nd;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(dirs[mid], s) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Is \a path (\a plen bytes, in a buffer of at least plen + 2) a directory:
 * one of \a dirs, or a parent of one? \a path is restored before returning.
 */
static bool shadow_is_dir(const char **dirs, size_t nd, char *path, size_t plen)
{
	size_t i = shadow_lower_bound(dirs, nd, path);
	bool found;

	if (i < nd && !strcmp(dirs[i], path))
		return true;
	path[plen] = '/';
	path[plen + 1] = '\0';
	i = shadow_lower_bound(dirs, nd, path);
	found = i < nd && !strncmp(dirs[i], path, plen + 1);
	path[plen] = '\0';
	return found;
}

ssize_t dra_shadow_mark(struct imp_obj *objs, size_t nr)
{
	const char **dirs = malloc((nr ? nr : 1) * sizeof(*dirs));
	size_t nd = 0;
	ssize_t shadowed = 0;

	if (!dirs)
		return -ENOMEM;
	qsort(objs, nr, sizeof(*objs), shadow_obj_cmp);
	for (size_t i = 0; i < nr; i++)
		if (objs[i].io_dir[0])
			dirs[nd++] = objs[i].io_dir;
	qsort(dirs, nd, sizeof(*dirs), shadow_str_cmp);
	for (size_t i = 0; i < nr; i++) {
		struct imp_obj *o = &objs[i];
		size_t dl = strlen(o->io_dir), nl = strlen(o->io_name);
		char *path;

		o->io_shadowed = false;
		if (!nl)
			continue; /* a directory marker */
		path = malloc(dl + 1 + nl + 2); /* room for the '/' of shadow_is_dir() */
		if (!path) {
			free(dirs);
			return -ENOMEM;
		}
		if (dl)
			snprintf(path, dl + 1 + nl + 1, "%s/%s", o->io_dir, o->io_name);
		else
			memcpy(path, o->io_name, nl + 1);
		o->io_shadowed = shadow_is_dir(dirs, nd, path, strlen(path));
		shadowed += o->io_shadowed;
		free(path);
	}
	free(dirs);
	return shadowed;
}
