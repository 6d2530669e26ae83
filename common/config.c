/*
 * common/config.c - see config.h.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "util.h"

static struct weir_cfg *cfg_find(struct weir_cfg *tab, unsigned nr, const char *name)
{
	for (unsigned i = 0; i < nr; i++)
		if (!strcmp(tab[i].c_name, name))
			return &tab[i];
	return NULL;
}

static int cfg_set(struct weir_cfg *c, const char *val, const char *prog, const char *where)
{
	uint64_t v = 0;
	int rc = 0;
	switch (c->c_type) {
	case WEIR_CFG_STR:
		/* every string setting starts NULL or as a strdup of its default */
		free((void *)*(const char **)c->c_ptr);
		*(const char **)c->c_ptr = strdup(val);
		return 0;
	case WEIR_CFG_LIST: {
		const char **arr = c->c_ptr;
		if (*c->c_list_nr >= c->c_list_max) {
			fprintf(stderr, "%s: %s: at most %u --%s values\n", prog, where,
				c->c_list_max, c->c_name);
			return -EINVAL;
		}
		arr[(*c->c_list_nr)++] = strdup(val);
		return 0;
	}
	case WEIR_CFG_FLAG:
		if (!strcasecmp(val, "yes") || !strcasecmp(val, "true") || !strcmp(val, "1") ||
		    !strcasecmp(val, "on")) {
			*(bool *)c->c_ptr = true;
			return 0;
		}
		if (!strcasecmp(val, "no") || !strcasecmp(val, "false") || !strcmp(val, "0") ||
		    !strcasecmp(val, "off")) {
			*(bool *)c->c_ptr = false;
			return 0;
		}
		fprintf(stderr, "%s: %s: --%s: want yes or no, not '%s'\n", prog, where, c->c_name,
			val);
		return -EINVAL;
	case WEIR_CFG_U32: {
		char *end;
		errno = 0;
		unsigned long long x = strtoull(val, &end, 10);
		if (errno || end == val || *end || val[0] == '-')
			rc = -EINVAL;
		v = x;
		break;
	}
	case WEIR_CFG_SIZE:
		rc = weir_parse_size(val, &v);
		break;
	case WEIR_CFG_DURATION:
		rc = weir_parse_duration_ms(val, &v);
		break;
	}
	if (rc) {
		fprintf(stderr, "%s: %s: --%s: cannot parse '%s'\n", prog, where, c->c_name, val);
		return -EINVAL;
	}
	if (v < c->c_min || v > c->c_max) {
		fprintf(stderr, "%s: %s: --%s %s: out of range [%llu, %llu]\n", prog, where,
			c->c_name, val, (unsigned long long)c->c_min, (unsigned long long)c->c_max);
		return -EINVAL;
	}
	if (c->c_type == WEIR_CFG_U32)
		*(uint32_t *)c->c_ptr = (uint32_t)v;
	else
		*(uint64_t *)c->c_ptr = v;
	return 0;
}

struct ini_ctx {
	struct weir_cfg *tab;
	unsigned nr;
	const char *prog;
	const char *section;
	const char *file;
	int rc;
};

static int ini_cb(void *user, const char *section, const char *name, const char *value)
{
	struct ini_ctx *x = user;
	if (section[0] && strcmp(section, x->section))
		return 1;
	struct weir_cfg *c = cfg_find(x->tab, x->nr, name);
	if (!c) {
		fprintf(stderr, "%s: %s: unknown setting '%s'\n", x->prog, x->file, name);
		x->rc = -EINVAL;
		return 0;
	}
	if (cfg_set(c, value, x->prog, x->file)) {
		x->rc = -EINVAL;
		return 0;
	}
	return 1;
}

static void cfg_help(const struct weir_cfg *tab, unsigned nr, const char *prog,
		     const char *synopsis)
{
	printf("Usage: %s %s\n\nOptions (also settable in an INI file given by --config FILE):\n",
	       prog, synopsis);
	for (unsigned i = 0; i < nr; i++) {
		const struct weir_cfg *c = &tab[i];
		const char *arg = c->c_type == WEIR_CFG_SIZE	   ? "SIZE"
				  : c->c_type == WEIR_CFG_DURATION ? "DURATION"
				  : c->c_type == WEIR_CFG_U32	   ? "N"
				  : c->c_type == WEIR_CFG_FLAG	   ? ""
								   : " VALUE";
		if (c->c_type == WEIR_CFG_SIZE || c->c_type == WEIR_CFG_DURATION ||
		    c->c_type == WEIR_CFG_U32)
			printf("  --%s %s\n      %s", c->c_name, arg, c->c_help);
		else
			printf("  --%s%s\n      %s", c->c_name, arg, c->c_help);
		if (c->c_required)
			printf(" (required)");
		else if (c->c_default)
			printf(" (default: %s)", c->c_default);
		if (c->c_type == WEIR_CFG_LIST)
			printf(" (repeatable)");
		printf("\n");
	}
	printf("  --config FILE\n      read settings from an INI file first\n"
	       "  --help\n      show this help\n"
	       "Sizes take units (64K, 4MiB, 1G); durations take ms, s, m, h (250ms, 30s).\n");
}

int weir_cfg_parse(struct weir_cfg *tab, unsigned nr, const char *prog, const char *section,
		   const char *synopsis, int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			cfg_help(tab, nr, prog, synopsis);
			return 1;
		}
	for (unsigned i = 0; i < nr; i++)
		if (tab[i].c_default && tab[i].c_type != WEIR_CFG_LIST &&
		    cfg_set(&tab[i], tab[i].c_default, prog, "default"))
			return -EINVAL;
	/* the file first, so the command line wins */
	for (int i = 1; i < argc; i++) {
		const char *file = NULL;
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			file = argv[i + 1];
		else if (!strncmp(argv[i], "--config=", 9))
			file = argv[i] + 9;
		if (!file)
			continue;
		struct ini_ctx x = { tab, nr, prog, section, file, 0 };
		int r = ini_parse(file, ini_cb, &x);
		if (r < 0) {
			fprintf(stderr, "%s: %s: cannot read config file\n", prog, file);
			return -EINVAL;
		}
		if (r > 0 && !x.rc) {
			fprintf(stderr, "%s: %s:%d: syntax error\n", prog, file, r);
			return -EINVAL;
		}
		if (x.rc)
			return x.rc;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--", 2)) {
			fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog, a);
			return -EINVAL;
		}
		char name[64];
		const char *val = NULL;
		const char *eq = strchr(a, '=');
		size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
		if (nl >= sizeof(name)) {
			fprintf(stderr, "%s: unknown option '%s' (see --help)\n", prog, a);
			return -EINVAL;
		}
		memcpy(name, a + 2, nl);
		name[nl] = 0;
		struct weir_cfg *c = cfg_find(tab, nr, name);
		if (eq)
			val = eq + 1;
		else if (c && c->c_type == WEIR_CFG_FLAG)
			val = "yes"; /* a flag alone: on */
		else if (i + 1 < argc)
			val = argv[++i];
		if (!strcmp(name, "config"))
			continue;
		if (!c) {
			fprintf(stderr, "%s: unknown option '--%s' (see --help)\n", prog, name);
			return -EINVAL;
		}
		if (!val) {
			fprintf(stderr, "%s: option '--%s' needs a value\n", prog, name);
			return -EINVAL;
		}
		if (cfg_set(c, val, prog, "command line"))
			return -EINVAL;
	}
	for (unsigned i = 0; i < nr; i++) {
		const struct weir_cfg *c = &tab[i];
		bool set = c->c_type == WEIR_CFG_LIST ? *c->c_list_nr > 0
			   : c->c_type == WEIR_CFG_STR ? *(const char **)c->c_ptr != NULL
						       : true;
		if (c->c_required && !set) {
			fprintf(stderr, "%s: --%s is required (see --help)\n", prog, c->c_name);
			return -EINVAL;
		}
	}
	return 0;
}

void weir_cfg_log(const struct weir_cfg *tab, unsigned nr, const char *prog)
{
	char line[1536];
	size_t off = 0;
	off += (size_t)snprintf(line, sizeof(line), "%s configuration:", prog);
	for (unsigned i = 0; i < nr && off < sizeof(line); i++) {
		const struct weir_cfg *c = &tab[i];
		switch (c->c_type) {
		case WEIR_CFG_STR: {
			const char *s = *(const char **)c->c_ptr;
			off += (size_t)snprintf(line + off, sizeof(line) - off, " %s=%s", c->c_name,
						s ? s : "-");
			break;
		}
		case WEIR_CFG_LIST: {
			const char **arr = c->c_ptr;
			for (uint32_t j = 0; j < *c->c_list_nr && off < sizeof(line); j++)
				off += (size_t)snprintf(line + off, sizeof(line) - off, " %s=%s",
							c->c_name, arr[j]);
			break;
		}
		case WEIR_CFG_U32:
			off += (size_t)snprintf(line + off, sizeof(line) - off, " %s=%u", c->c_name,
						*(uint32_t *)c->c_ptr);
			break;
		case WEIR_CFG_FLAG:
			off += (size_t)snprintf(line + off, sizeof(line) - off, " %s=%s", c->c_name,
						*(bool *)c->c_ptr ? "yes" : "no");
			break;
		case WEIR_CFG_SIZE:
			off += (size_t)snprintf(line + off, sizeof(line) - off, " %s=%llu", c->c_name,
						(unsigned long long)*(uint64_t *)c->c_ptr);
			break;
		case WEIR_CFG_DURATION:
			off += (size_t)snprintf(line + off, sizeof(line) - off, " %s=%llums",
						c->c_name,
						(unsigned long long)*(uint64_t *)c->c_ptr);
			break;
		}
	}
	WEIR_LOG_NOTICE("%s", line);
}
