/*
 * mds/nodemap.c - the node map: the file (libinih), matching a connection
 * to its group, and the identity a request runs as. See nodemap.h.
 */
#define _GNU_SOURCE
#include "nodemap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ini.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"

#define NOBODY 65534u

struct nm_parse {
	struct mds_nodemap *p_nm;
	struct mds_nm_group *p_cur;
	char p_why[256];
	int p_line;
};

static void group_defaults(struct mds_nm_group *g, const char *name)
{
	memset(g, 0, sizeof(*g));
	snprintf(g->ng_name, sizeof(g->ng_name), "%s", name);
	g->ng_trusted = true;
	g->ng_admin = true;
	g->ng_squash_uid = NOBODY;
	g->ng_squash_gid = NOBODY;
}

static int parse_bool(const char *v, bool *out)
{
	if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcmp(v, "1") ||
	    !strcasecmp(v, "on"))
		*out = true;
	else if (!strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcmp(v, "0") ||
		 !strcasecmp(v, "off"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

static int parse_u32(const char *v, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-' || x > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

/* "ADDR/PREFIX" or "ADDR" (a whole address). */
static int parse_range(const char *v, struct mds_nm_range *r)
{
	char a[INET6_ADDRSTRLEN + 8];
	snprintf(a, sizeof(a), "%s", v);
	char *slash = strchr(a, '/');
	unsigned max;
	if (slash)
		*slash = '\0';
	memset(r, 0, sizeof(*r));
	if (inet_pton(AF_INET, a, r->nr_addr) == 1) {
		r->nr_family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, a, r->nr_addr) == 1) {
		r->nr_family = AF_INET6;
		max = 128;
	} else {
		return -EINVAL;
	}
	r->nr_prefix = max;
	if (slash) {
		uint32_t p;
		if (parse_u32(slash + 1, &p) || p > max)
			return -EINVAL;
		r->nr_prefix = p;
	}
	return 0;
}

/* Split a comma list, calling \a fn on each trimmed item. */
static int each_item(const char *v, int (*fn)(struct nm_parse *, const char *), struct nm_parse *p)
{
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", v);
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		while (*t == ' ' || *t == '\t')
			t++;
		size_t n = strlen(t);
		while (n && (t[n - 1] == ' ' || t[n - 1] == '\t'))
			t[--n] = '\0';
		if (!n)
			continue;
		int rc = fn(p, t);
		if (rc)
			return rc;
	}
	return 0;
}

static int add_key(struct nm_parse *p, const char *t)
{
	struct mds_nm_group *g = p->p_cur;
	if (g->ng_nr_keys == MDS_NM_MAX_KEYS || strlen(t) >= sizeof(g->ng_keys[0])) {
		snprintf(p->p_why, sizeof(p->p_why), "too many keys, or a name over 31 characters");
		return -EINVAL;
	}
	snprintf(g->ng_keys[g->ng_nr_keys++], sizeof(g->ng_keys[0]), "%s", t);
	return 0;
}

static int add_range(struct nm_parse *p, const char *t)
{
	struct mds_nm_group *g = p->p_cur;
	if (g->ng_nr_ranges == MDS_NM_MAX_RANGES ||
	    parse_range(t, &g->ng_ranges[g->ng_nr_ranges])) {
		snprintf(p->p_why, sizeof(p->p_why), "'%s': not an address or CIDR range", t);
		return -EINVAL;
	}
	g->ng_nr_ranges++;
	return 0;
}

static int add_map(struct nm_parse *p, const char *v, uint32_t (*tab)[2], unsigned *nr)
{
	char a[64];
	snprintf(a, sizeof(a), "%s", v);
	char *colon = strchr(a, ':');
	uint32_t c, f;
	if (!colon || *nr == MDS_NM_MAX_MAPS) {
		snprintf(p->p_why, sizeof(p->p_why), "'%s': want CLIENT_ID:FS_ID", v);
		return -EINVAL;
	}
	*colon = '\0';
	if (parse_u32(a, &c) || parse_u32(colon + 1, &f)) {
		snprintf(p->p_why, sizeof(p->p_why), "'%s': want CLIENT_ID:FS_ID", v);
		return -EINVAL;
	}
	tab[*nr][0] = c;
	tab[*nr][1] = f;
	(*nr)++;
	return 0;
}

static int ini_cb(void *user, const char *section, const char *name, const char *value)
{
	struct nm_parse *p = user;
	struct mds_nodemap *nm = p->p_nm;
	if (strncmp(section, "nodemap ", 8) || !section[8]) {
		snprintf(p->p_why, sizeof(p->p_why), "section [%s]: want [nodemap NAME]", section);
		return 0;
	}
	if (!p->p_cur || strcmp(p->p_cur->ng_name, section + 8)) {
		for (unsigned i = 0; i < nm->nm_nr; i++)
			if (!strcmp(nm->nm_groups[i].ng_name, section + 8)) {
				snprintf(p->p_why, sizeof(p->p_why), "group '%s' defined twice",
					 section + 8);
				return 0;
			}
		if (nm->nm_nr == MDS_NM_MAX_GROUPS) {
			snprintf(p->p_why, sizeof(p->p_why), "more than %d groups", MDS_NM_MAX_GROUPS);
			return 0;
		}
		p->p_cur = &nm->nm_groups[nm->nm_nr++];
		group_defaults(p->p_cur, section + 8);
	}
	struct mds_nm_group *g = p->p_cur;
	int rc;
	if (!strcmp(name, "keys"))
		rc = each_item(value, add_key, p);
	else if (!strcmp(name, "ranges"))
		rc = each_item(value, add_range, p);
	else if (!strcmp(name, "trusted"))
		rc = parse_bool(value, &g->ng_trusted);
	else if (!strcmp(name, "admin"))
		rc = parse_bool(value, &g->ng_admin);
	else if (!strcmp(name, "root_squash"))
		rc = parse_bool(value, &g->ng_root_squash);
	else if (!strcmp(name, "squash_uid"))
		rc = parse_u32(value, &g->ng_squash_uid);
	else if (!strcmp(name, "squash_gid"))
		rc = parse_u32(value, &g->ng_squash_gid);
	else if (!strcmp(name, "map_uid"))
		rc = add_map(p, value, g->ng_map_uid, &g->ng_nr_map_uid);
	else if (!strcmp(name, "map_gid"))
		rc = add_map(p, value, g->ng_map_gid, &g->ng_nr_map_gid);
	else {
		snprintf(p->p_why, sizeof(p->p_why), "unknown setting '%s'", name);
		return 0;
	}
	if (rc) {
		if (!p->p_why[0])
			snprintf(p->p_why, sizeof(p->p_why), "%s = %s: a bad value", name, value);
		return 0;
	}
	return 1;
}

int mds_nodemap_load(struct mds_nodemap *nm, const char *path, bool root_squash, char *why,
		     size_t why_len)
{
	memset(nm, 0, sizeof(*nm));
	group_defaults(&nm->nm_default, "default");
	nm->nm_default.ng_root_squash = root_squash;
	if (!path)
		return 0;
	FILE *f = fopen(path, "r");
	if (!f) {
		int rc = -errno;
		snprintf(why, why_len, "%s: %s", path, strerror(errno));
		return rc;
	}
	struct nm_parse p = { .p_nm = nm };
	int line = ini_parse_file(f, ini_cb, &p);
	fclose(f);
	if (line) {
		snprintf(why, why_len, "%s: line %d: %s", path, line,
			 p.p_why[0] ? p.p_why : "not INI");
		return -EINVAL;
	}
	for (unsigned i = 0; i < nm->nm_nr; i++)
		if (!nm->nm_groups[i].ng_nr_keys && !nm->nm_groups[i].ng_nr_ranges) {
			snprintf(why, why_len, "%s: group '%s' has neither keys nor ranges", path,
				 nm->nm_groups[i].ng_name);
			return -EINVAL;
		}
	return 0;
}

static bool range_has(const struct mds_nm_range *r, const struct sockaddr_storage *sa)
{
	const uint8_t *a;
	uint8_t v4m[16];
	if (sa->ss_family == AF_INET && r->nr_family == AF_INET) {
		a = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
	} else if (sa->ss_family == AF_INET6) {
		a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		if (r->nr_family == AF_INET) {
			/* an IPv4 peer on a dual-stack socket: ::ffff:a.b.c.d */
			static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
			if (memcmp(a, pfx, 12))
				return false;
			memcpy(v4m, a + 12, 4);
			a = v4m;
		}
	} else {
		return false;
	}
	unsigned bits = r->nr_prefix;
	for (unsigned i = 0; bits; i++) {
		unsigned n = bits >= 8 ? 8 : bits;
		uint8_t mask = (uint8_t)(0xff << (8 - n));
		if ((a[i] & mask) != (r->nr_addr[i] & mask))
			return false;
		bits -= n;
	}
	return true;
}

const struct mds_nm_group *mds_nodemap_match(const struct mds_nodemap *nm, const char *key_name,
					     const struct sockaddr_storage *sa)
{
	for (unsigned i = 0; i < nm->nm_nr; i++) {
		const struct mds_nm_group *g = &nm->nm_groups[i];
		for (unsigned k = 0; key_name && key_name[0] && k < g->ng_nr_keys; k++)
			if (!strcmp(g->ng_keys[k], key_name))
				return g;
		for (unsigned k = 0; sa && k < g->ng_nr_ranges; k++)
			if (range_has(&g->ng_ranges[k], sa))
				return g;
	}
	return &nm->nm_default;
}

static uint32_t map_id(uint32_t (*tab)[2], unsigned nr, uint32_t id)
{
	for (unsigned i = 0; i < nr; i++)
		if (tab[i][0] == id)
			return tab[i][1];
	return id;
}

void mds_nodemap_ids(const struct mds_nm_group *g, uint32_t *uid, uint32_t *gid,
		     uint32_t *groups, uint32_t *nr_groups)
{
	if (!g->ng_trusted) {
		*uid = g->ng_squash_uid;
		*gid = g->ng_squash_gid;
		*nr_groups = 0;
		return;
	}
	struct mds_nm_group *mg = (struct mds_nm_group *)g;
	*uid = map_id(mg->ng_map_uid, g->ng_nr_map_uid, *uid);
	*gid = map_id(mg->ng_map_gid, g->ng_nr_map_gid, *gid);
	for (uint32_t i = 0; i < *nr_groups; i++)
		groups[i] = map_id(mg->ng_map_gid, g->ng_nr_map_gid, groups[i]);
	if (g->ng_root_squash) {
		if (*uid == 0)
			*uid = g->ng_squash_uid;
		if (*gid == 0)
			*gid = g->ng_squash_gid;
		for (uint32_t i = 0; i < *nr_groups; i++)
			if (groups[i] == 0)
				groups[i] = g->ng_squash_gid;
	}
}

void mds_nodemap_log(const struct mds_nodemap *nm)
{
	for (unsigned i = 0; i <= nm->nm_nr; i++) {
		const struct mds_nm_group *g = i < nm->nm_nr ? &nm->nm_groups[i] : &nm->nm_default;
		WEIR_LOG_NOTICE("nodemap group=%s keys=%u ranges=%u trusted=%s admin=%s"
				" root_squash=%s squash=%u:%u maps=%u/%u",
				g->ng_name, g->ng_nr_keys, g->ng_nr_ranges,
				g->ng_trusted ? "yes" : "no", g->ng_admin ? "yes" : "no",
				g->ng_root_squash ? "yes" : "no", g->ng_squash_uid,
				g->ng_squash_gid, g->ng_nr_map_uid, g->ng_nr_map_gid);
	}
}
