/*
 * common/config.h - daemon settings: one table per daemon with name, type,
 * default, bounds, unit and help (the Redis config table shape). Values come
 * from the defaults, then an INI file (--config FILE, parsed by libinih,
 * keys without a section or in the daemon's section), then the command line
 * (--name VALUE or --name=VALUE), later ones winning. --help prints the table.
 */
#ifndef WEIR_COMMON_CONFIG_H
#define WEIR_COMMON_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

enum weir_cfg_type {
	WEIR_CFG_STR,      /* const char * */
	WEIR_CFG_U32,      /* uint32_t, plain number */
	WEIR_CFG_SIZE,     /* uint64_t bytes, "4MiB" */
	WEIR_CFG_DURATION, /* uint64_t milliseconds, "250ms", "30s" */
	WEIR_CFG_LIST,     /* repeatable string: appended to a const char *[] */
	WEIR_CFG_FLAG,     /* bool: "--name" alone sets it; "--name=no"; INI: yes/no, true/false, 1/0 */
};

struct weir_cfg {
	const char *c_name;     /* "commit-interval" */
	enum weir_cfg_type c_type;
	void *c_ptr;            /* where the value goes */
	const char *c_default;  /* text, parsed like user input; NULL = none/required */
	uint64_t c_min, c_max;  /* bounds for numbers (in the value's unit) */
	const char *c_help;
	bool c_required;
	/* WEIR_CFG_LIST only: capacity and count */
	uint32_t c_list_max;
	uint32_t *c_list_nr;
};

/** Help text of the servers' poll-us setting (net_server_conf.sc_poll_us). */
#define WEIR_POLL_US_HELP                                                                      \
	"after work, an event loop keeps checking for the next request for up to this many "   \
	"microseconds before it sleeps (adaptive: less when requests come later; saves a "   \
	"wakeup per request, costs that CPU; 0: never)"

/**
 * Parse defaults, --config FILE and the command line into the table.
 * \param[in] section  INI section whose keys apply (e.g. "mds"); keys outside
 *                     any section apply too.
 * \return 0; 1 when --help was printed (exit 0); -EINVAL after printing a
 *         clear error to stderr (exit 2).
 */
int weir_cfg_parse(struct weir_cfg *tab, unsigned nr, const char *prog, const char *section,
		   const char *synopsis, int argc, char **argv);

/** Log the effective configuration (NOTICE), one line. */
void weir_cfg_log(const struct weir_cfg *tab, unsigned nr, const char *prog);

#endif /* WEIR_COMMON_CONFIG_H */
