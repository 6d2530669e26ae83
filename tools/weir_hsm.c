/*
 * tools/weir_hsm.c - `weir hsm archive|restore|release|state|queue`: the
 * S3 tier's file commands, shaped like Lustre's `lfs hsm_*`.
 *
 * archive, restore and release take files (and with -r, the regular files
 * below directories), send weir_hsm_request() in batches of
 * WEIR_HSM_REQUEST_MAX, print each refusal with its reason, and (archive,
 * restore, unless --no-wait) follow the queued actions with
 * weir_hsm_queue_get() every 200 ms until each is done or failed, showing
 * files and bytes done and MB/s on stderr. Release is done by the MDS at once.
 */
#define _GNU_SOURCE
#include "weir_cli.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

#define HSM_POLL_MS   200
#define HSM_QUERY_MAX 1024 /* ids per weir_hsm_queue_get() */

#define HSM_FID_F    "[0x%llx:0x%llx:0x0]"
#define HSM_FID_P(f) (unsigned long long)(f).seq, (unsigned long long)(f).oid

/* State of one file of a request. */
enum hf_state { HF_PENDING, HF_DONE, HF_FAILED, HF_ALREADY };

struct hf {
	char *hf_path;
	weir_fid_t hf_fid;
	uint64_t hf_id; /* the action following this file (0: none) */
	int hf_rc;	/* HF_FAILED: why */
	enum hf_state hf_state;
	bool hf_waited; /* its action is followed by hreq_wait() */
};

/** One action being waited for. */
struct ha {
	uint64_t ha_id;
	uint64_t ha_total, ha_done; /* bytes */
	uint32_t ha_state;	    /* WEIR_HSM_* */
	int ha_rc;
	unsigned ha_missing; /* polls in a row the MDS did not report it */
	bool ha_final;	     /* done, failed, or no longer reported */
	bool ha_counted;     /* in the summary's bytes */
};

struct hreq {
	struct wcli *hr_cli;
	enum weir_hsm_action hr_act;
	const char *hr_verb; /* "archive", ... */
	bool hr_recursive, hr_wait, hr_verbose, hr_tty;
	struct hf *hr_files;
	size_t hr_nr, hr_cap;
	unsigned hr_failed_walk;
};

static const char *hsm_act_name(uint32_t a)
{
	switch (a) {
	case WEIR_HSM_ARCHIVE:
		return "archive";
	case WEIR_HSM_RESTORE:
		return "restore";
	case WEIR_HSM_RELEASE:
		return "release";
	default:
		return "?";
	}
}

static const char *hsm_state_name(uint32_t s)
{
	switch (s) {
	case WEIR_HSM_WAITING:
		return "waiting";
	case WEIR_HSM_RUNNING:
		return "running";
	case WEIR_HSM_DONE:
		return "done";
	case WEIR_HSM_FAILED:
		return "failed";
	default:
		return "?";
	}
}

static void hsm_call_err(const struct wcli *cli, const char *path, int rc)
{
	if (rc == -EOPNOTSUPP || rc == -EPROTO)
		wcli_errf(cli, path, "the MDS does not serve HSM requests (-%s)",
			  weir_errno_name(-rc));
	else
		wcli_err(cli, path, rc);
}

/* ------------------------------------------------------------ collecting files */

static int hreq_add(struct hreq *r, const char *path, const weir_fid_t *fid)
{
	if (r->hr_nr == r->hr_cap) {
		size_t c = r->hr_cap ? 2 * r->hr_cap : 256;
		struct hf *n = realloc(r->hr_files, c * sizeof(*n));
		if (!n)
			return -ENOMEM;
		r->hr_files = n;
		r->hr_cap = c;
	}
	memset(&r->hr_files[r->hr_nr], 0, sizeof(r->hr_files[0]));
	r->hr_files[r->hr_nr].hf_path = strdup(path);
	if (!r->hr_files[r->hr_nr].hf_path)
		return -ENOMEM;
	r->hr_files[r->hr_nr].hf_fid = *fid;
	r->hr_nr++;
	return 0;
}

/* Every regular file below directory \a path, depth-first. */
static int hreq_walk(struct hreq *r, const char *path, unsigned depth)
{
	struct weir_dirent ent;
	char **subs = NULL;
	size_t ns = 0, cs = 0;
	weir_dir_t *dh;
	int rc;

	if (depth > 256) {
		wcli_errf(r->hr_cli, path, "deeper than 256 levels: not walked");
		r->hr_failed_walk++;
		return 0;
	}
	rc = weir_opendir(r->hr_cli->cl_fs, path, &dh);
	if (rc) {
		wcli_err(r->hr_cli, path, rc);
		r->hr_failed_walk++;
		return 0;
	}
	while ((rc = weir_readdir(dh, &ent)) == 1) {
		char *child;

		if (!strcmp(ent.d_name, ".") || !strcmp(ent.d_name, ".."))
			continue;
		if (ent.d_type != DT_DIR && ent.d_type != DT_REG)
			continue; /* symlinks and others: not HSM's business */
		child = wcli_path_join(path, ent.d_name);
		if (!child) {
			rc = -ENOMEM;
			break;
		}
		if (ent.d_type == DT_REG) {
			rc = hreq_add(r, child, &ent.d_fid);
			free(child);
			if (rc)
				break;
			continue;
		}
		if (ns == cs) {
			size_t c = cs ? 2 * cs : 16;
			char **n = realloc(subs, c * sizeof(*n));
			if (!n) {
				free(child);
				rc = -ENOMEM;
				break;
			}
			subs = n;
			cs = c;
		}
		subs[ns++] = child;
	}
	weir_closedir(dh);
	if (rc < 0) {
		wcli_err(r->hr_cli, path, rc);
		r->hr_failed_walk++;
	}
	for (size_t i = 0; i < ns; i++) {
		if (rc != -ENOMEM)
			hreq_walk(r, subs[i], depth + 1);
		free(subs[i]);
	}
	free(subs);
	return rc == -ENOMEM ? rc : 0;
}

/* The files named by argv[first..argc), expanded with -r. */
static int hreq_collect(struct hreq *r, int argc, char **argv, int first)
{
	for (int i = first; i < argc; i++) {
		struct stat st;
		weir_fid_t fid;
		int rc = weir_stat(r->hr_cli->cl_fs, argv[i], &st);

		if (rc) {
			wcli_err(r->hr_cli, argv[i], rc);
			r->hr_failed_walk++;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			if (!r->hr_recursive) {
				wcli_errf(r->hr_cli, argv[i],
					  "is a directory (use -r for the files"
					  " below it)");
				r->hr_failed_walk++;
				continue;
			}
			rc = hreq_walk(r, argv[i], 0);
		} else if (!S_ISREG(st.st_mode)) {
			wcli_errf(r->hr_cli, argv[i],
				  "not a regular file: only files have an"
				  " S3 copy");
			r->hr_failed_walk++;
			continue;
		} else {
			rc = weir_path2fid(r->hr_cli->cl_fs, argv[i], &fid);
			if (rc) {
				wcli_err(r->hr_cli, argv[i], rc);
				r->hr_failed_walk++;
				continue;
			}
			rc = hreq_add(r, argv[i], &fid);
		}
		if (rc) {
			wcli_err(r->hr_cli, argv[i], rc);
			return rc;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ refusals */

/* Print why \a f was refused or failed, as clearly as its state allows. */
static void hreq_report(struct hreq *r, const struct hf *f, bool failed_later)
{
	struct weir_hsm_state st;
	int e = -f->hf_rc;
	const char *why = NULL;

	bool pending = (e == ENODATA || e == EBUSY) && r->hr_act == WEIR_HSM_RELEASE &&
		       !weir_hsm_state_fid(r->hr_cli->cl_fs, &f->hf_fid, &st) &&
		       st.hs_action_id && st.hs_action == WEIR_HSM_ARCHIVE;

	if (pending) {
		/* an archive queued (auto-export, or archive --no-wait) and not done yet */
		wcli_errf(r->hr_cli, f->hf_path,
			  "no verified archive copy yet: its archive (action %llu) is pending;"
			  " wait for it with 'weir hsm archive %s' (it waits for the pending"
			  " one), then release (-%s)",
			  (unsigned long long)st.hs_action_id, f->hf_path, weir_errno_name(e));
		return;
	}
	if (e == ENODATA && r->hr_act == WEIR_HSM_RELEASE) {
		why = "no verified archive copy (dirty or never archived)";
		if (!weir_hsm_state_fid(r->hr_cli->cl_fs, &f->hf_fid, &st)) {
			if (st.hs_flags & WEIR_HS_LOST)
				why =
				    "its archive copy is lost (the S3 object changed or vanished)";
			else if (st.hs_flags & WEIR_HS_DIRTY)
				why = "no verified archive copy: modified since its last archive"
				      " (dirty); archive it first";
			else if (!(st.hs_flags & WEIR_HS_EXISTS))
				why = "no verified archive copy: never archived; archive it first";
		}
	} else if (e == EBUSY) {
		why = r->hr_act == WEIR_HSM_RELEASE ? "the file is open; release needs it closed"
						      " by every client"
						    : "the file is open for writing; try again"
						      " after it is closed";
	} else if (e == EINVAL && !failed_later) {
		why = "not under a data repository association (see 'weir dra list'), or not a"
		      " regular file";
	} else if ((e == EIO || e == ESTALE) && failed_later && r->hr_act == WEIR_HSM_RESTORE &&
		   !weir_hsm_state_fid(r->hr_cli->cl_fs, &f->hf_fid, &st) &&
		   (st.hs_flags & WEIR_HS_LOST)) {
		why = "the S3 object changed or vanished behind Weir's back; the file is marked"
		      " lost and its reads fail with EIO";
	} else if (e == ECANCELED) {
		why = "cancelled (the file was removed or changed)";
	} else if (failed_later && (e == ENOENT || e == EACCES || e == ECONNREFUSED ||
				    e == ETIMEDOUT || e == EOPNOTSUPP)) {
		/* the copytool's S3 error, after its retries: the detail is in its log */
		why = e == ENOENT ? "S3 answered no such bucket or key"
		    : e == EACCES ? "S3 refused access (credentials, policy)"
		    : e == EOPNOTSUPP ? "S3 does not support a request the copytool made"
				      : "the copytool could not reach S3";
		wcli_errf(r->hr_cli, f->hf_path, "failed: %s (-%s); the copytool's log (weir-hsmd"
			  " --log) has the S3 error", why, weir_errno_name(e));
		return;
	}
	if (why)
		wcli_errf(r->hr_cli, f->hf_path, "%s%s (-%s)", failed_later ? "failed: " : "", why,
			  weir_errno_name(e));
	else
		wcli_errf(r->hr_cli, f->hf_path, "%s%s (-%s)", failed_later ? "failed: " : "",
			  strerror(e), weir_errno_name(e));
}

/* Send the requests; each file gets an id, or is already done / refused. */
static int hreq_send(struct hreq *r)
{
	weir_fid_t *fids = malloc(WEIR_HSM_REQUEST_MAX * sizeof(*fids));
	uint64_t *ids = malloc(WEIR_HSM_REQUEST_MAX * sizeof(*ids));
	int *rcs = malloc(WEIR_HSM_REQUEST_MAX * sizeof(*rcs));
	int rc = 0;

	if (!fids || !ids || !rcs) {
		rc = -ENOMEM;
		wcli_err(r->hr_cli, NULL, rc);
		goto out;
	}
	for (size_t base = 0; base < r->hr_nr; base += WEIR_HSM_REQUEST_MAX) {
		size_t n = r->hr_nr - base;
		if (n > WEIR_HSM_REQUEST_MAX)
			n = WEIR_HSM_REQUEST_MAX;
		for (size_t i = 0; i < n; i++)
			fids[i] = r->hr_files[base + i].hf_fid;
		rc = weir_hsm_request(r->hr_cli->cl_fs, r->hr_act, fids, n, ids, rcs);
		if (rc) {
			hsm_call_err(r->hr_cli, NULL, rc);
			for (size_t i = 0; i < n; i++) {
				r->hr_files[base + i].hf_state = HF_FAILED;
				r->hr_files[base + i].hf_rc = rc;
			}
			if (rc == -EOPNOTSUPP || rc == -EPROTO)
				goto out;
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			struct hf *f = &r->hr_files[base + i];
			f->hf_id = ids[i];
			f->hf_rc = rcs[i];
			if (rcs[i] == -EALREADY) {
				f->hf_state = HF_ALREADY;
				if (r->hr_verbose)
					printf("%s: already %s\n", f->hf_path,
					       r->hr_act == WEIR_HSM_ARCHIVE   ? "archived"
					       : r->hr_act == WEIR_HSM_RELEASE ? "released"
									       : "present");
			} else if (rcs[i]) {
				f->hf_state = HF_FAILED;
				hreq_report(r, f, false);
			} else if (!ids[i] || r->hr_act == WEIR_HSM_RELEASE) {
				f->hf_state = HF_DONE;
				if (r->hr_verbose)
					printf("%s: %s\n", f->hf_path,
					       r->hr_act == WEIR_HSM_RELEASE ? "released" : "done");
			} else {
				f->hf_state = HF_PENDING;
				if (r->hr_verbose)
					printf("%s: %s queued as action %llu\n", f->hf_path,
					       r->hr_verb, (unsigned long long)ids[i]);
			}
		}
	}
	rc = 0;
out:
	free(fids);
	free(ids);
	free(rcs);
	return rc;
}

/* ------------------------------------------------------------ waiting */

static int ha_cmp(const void *a, const void *b)
{
	const struct ha *x = a, *y = b;
	return x->ha_id < y->ha_id ? -1 : x->ha_id > y->ha_id;
}

static struct ha *ha_find(struct ha *has, size_t nr, uint64_t id)
{
	struct ha key = {.ha_id = id};
	return bsearch(&key, has, nr, sizeof(*has), ha_cmp);
}

/** What a wait follows. */
struct hwait {
	struct ha *hw_has; /* sorted by id, unique */
	size_t hw_nr, hw_left;
	uint64_t *hw_ids; /* scratch for one query */
	uint32_t hw_agents;
	bool hw_running; /* some action is running */
};

/* Ask the MDS about every action not yet final; mark those that ended. */
static int hwait_poll(struct hreq *r, struct hwait *w)
{
	w->hw_agents = 0;
	w->hw_running = false;
	for (size_t base = 0; base < w->hw_nr; base += HSM_QUERY_MAX) {
		struct weir_hsm_queue *q = NULL;
		size_t n = 0,
		       end = base + HSM_QUERY_MAX < w->hw_nr ? base + HSM_QUERY_MAX : w->hw_nr;
		int rc;

		for (size_t i = base; i < end; i++)
			if (!w->hw_has[i].ha_final)
				w->hw_ids[n++] = w->hw_has[i].ha_id;
		if (!n)
			continue;
		rc = weir_hsm_queue_get(r->hr_cli->cl_fs, w->hw_ids, n, &q);
		if (rc)
			return rc;
		w->hw_agents = q->hq_agents;
		for (size_t i = base; i < end; i++)
			if (!w->hw_has[i].ha_final)
				w->hw_has[i].ha_missing++;
		for (size_t k = 0; k < q->hq_nr; k++) {
			const struct weir_hsm_action_info *ai = &q->hq_actions[k];
			struct ha *h = ha_find(w->hw_has, w->hw_nr, ai->hai_id);

			if (!h || h->ha_final)
				continue;
			h->ha_missing = 0;
			h->ha_state = ai->hai_state;
			h->ha_rc = ai->hai_rc;
			h->ha_total = ai->hai_bytes_total;
			h->ha_done = ai->hai_bytes_done;
			if (ai->hai_state == WEIR_HSM_RUNNING)
				w->hw_running = true;
		}
		weir_hsm_queue_free(q);
	}
	/* an action the MDS stopped reporting (finished and forgotten) is final too:
	 * the file's state says how it ended */
	for (size_t i = 0; i < w->hw_nr; i++) {
		struct ha *h = &w->hw_has[i];
		if (!h->ha_final && (h->ha_state == WEIR_HSM_DONE ||
				     h->ha_state == WEIR_HSM_FAILED || h->ha_missing >= 2)) {
			h->ha_final = true;
			w->hw_left--;
		}
	}
	return 0;
}

/* Is the file's state what a successful action leaves? */
static bool hreq_state_ok(struct hreq *r, const struct hf *f, struct weir_hsm_state *st)
{
	memset(st, 0, sizeof(*st));
	if (weir_hsm_state_fid(r->hr_cli->cl_fs, &f->hf_fid, st))
		return false;
	if (r->hr_act == WEIR_HSM_ARCHIVE)
		return (st->hs_flags & WEIR_HS_ARCHIVED) && !(st->hs_flags & WEIR_HS_DIRTY);
	return !(st->hs_flags & WEIR_HS_RELEASED);
}

/* File \a f's action \a h ended: done or failed, and why. */
static void hreq_settle(struct hreq *r, struct hf *f, const struct ha *h)
{
	struct weir_hsm_state st;

	if (h->ha_state == WEIR_HSM_FAILED && !h->ha_missing) {
		f->hf_rc = h->ha_rc ? h->ha_rc : -EIO;
		f->hf_state = HF_FAILED;
	} else if (!h->ha_missing && r->hr_act == WEIR_HSM_RESTORE) {
		f->hf_state = HF_DONE;
	} else if (hreq_state_ok(r, f, &st)) {
		/* an archive is checked always: done means archived and clean */
		f->hf_state = HF_DONE;
	} else {
		f->hf_state = HF_FAILED;
		if (r->hr_act == WEIR_HSM_RESTORE && (st.hs_flags & WEIR_HS_LOST)) {
			f->hf_rc = -EIO;
		} else {
			f->hf_rc = -EAGAIN;
			if (r->hr_tty)
				fputc('\n', stderr);
			if (r->hr_act == WEIR_HSM_ARCHIVE && (st.hs_flags & WEIR_HS_DIRTY))
				wcli_errf(r->hr_cli, f->hf_path,
					  "modified while it was being"
					  " archived: still dirty (archive it again)");
			else
				wcli_errf(r->hr_cli, f->hf_path,
					  "the action ended but the file is"
					  " not %s (state 0x%x)",
					  r->hr_act == WEIR_HSM_ARCHIVE ? "archived" : "restored",
					  st.hs_flags);
			return;
		}
	}
	if (f->hf_state == HF_FAILED) {
		if (r->hr_tty)
			fputc('\n', stderr);
		hreq_report(r, f, true);
	} else if (r->hr_verbose) {
		if (r->hr_tty)
			fputc('\n', stderr);
		printf("%s: %s done\n", f->hf_path, r->hr_verb);
		fflush(stdout);
	}
}

static void hreq_progress(struct hreq *r, size_t files_done, size_t files, uint64_t done,
			  uint64_t total, double rate, bool final)
{
	char a[32], b[32];

	weir_fmt_size(done, a, sizeof(a));
	weir_fmt_size(total, b, sizeof(b));
	fprintf(stderr, "%s%s: %zu/%zu files, %s / %s, %.1f MB/s%s", r->hr_tty ? "\r" : "",
		r->hr_verb, files_done, files, a, b, rate / 1e6,
		r->hr_tty && !final ? "   " : "\n");
	fflush(stderr);
}

/* The final line: files and bytes moved, MB/s, files/s, and what did not go. */
static void hreq_summary(struct hreq *r, const struct hwait *w, double el)
{
	size_t ok = 0, failed = 0, refused = 0, already = 0, waited = 0;
	const char *already_word = r->hr_act == WEIR_HSM_ARCHIVE ? "archived" : "present";
	uint64_t bytes = 0;
	char b[32];

	for (size_t i = 0; i < r->hr_nr; i++) {
		const struct hf *f = &r->hr_files[i];
		struct ha *h;

		ok += f->hf_state == HF_DONE;
		failed += f->hf_state == HF_FAILED && f->hf_waited;
		refused += f->hf_state == HF_FAILED && !f->hf_waited;
		already += f->hf_state == HF_ALREADY;
		waited += f->hf_waited;
		if (f->hf_state != HF_DONE || !f->hf_waited || !w->hw_nr)
			continue;
		h = ha_find(w->hw_has, w->hw_nr, f->hf_id);
		if (h && !h->ha_counted) {
			bytes += h->ha_total;
			h->ha_counted = true;
		}
	}
	if (!waited) {
		printf("nothing to %s", r->hr_verb);
		if (ok)
			printf("; %zu done", ok);
		if (already)
			printf("; %zu already %s", already, already_word);
	} else {
		weir_fmt_size(bytes, b, sizeof(b));
		printf("%s %zu file%s, %s in %.2f s: %.1f MB/s, %.1f files/s",
		       r->hr_act == WEIR_HSM_ARCHIVE ? "archived" : "restored", ok,
		       ok == 1 ? "" : "s", b, el, el > 0 ? (double)bytes / el / 1e6 : 0.0,
		       el > 0 ? (double)ok / el : 0.0);
		if (already)
			printf("; %zu already %s", already, already_word);
		if (failed)
			printf("; %zu FAILED", failed);
	}
	if (refused)
		printf("; %zu refused", refused);
	printf("\n");
}

/* Follow the pending actions until each is done or failed, then print the summary. */
static int hreq_wait(struct hreq *r)
{
	struct hwait w = {0};
	size_t files = 0;
	uint64_t first_done = 0;
	double t0 = wcli_now(), t_first = 0, last_line = t0, t_idle = 0;
	bool first = true, warned = false;
	int rc = 0;

	for (size_t i = 0; i < r->hr_nr; i++)
		if (r->hr_files[i].hf_state == HF_PENDING) {
			r->hr_files[i].hf_waited = true;
			files++;
		}
	if (files) {
		w.hw_has = calloc(files, sizeof(*w.hw_has));
		w.hw_ids = calloc(files, sizeof(*w.hw_ids));
		if (!w.hw_has || !w.hw_ids) {
			rc = -ENOMEM;
			wcli_err(r->hr_cli, NULL, rc);
			goto out;
		}
	}
	for (size_t i = 0; i < r->hr_nr; i++)
		if (r->hr_files[i].hf_waited)
			w.hw_has[w.hw_nr++].ha_id = r->hr_files[i].hf_id;
	if (w.hw_nr)
		qsort(w.hw_has, w.hw_nr, sizeof(*w.hw_has), ha_cmp);
	/* unique ids (an action may be shared: two names of one file, a reader's restore) */
	w.hw_left = 0;
	for (size_t i = 0; i < w.hw_nr; i++)
		if (!w.hw_left || w.hw_has[w.hw_left - 1].ha_id != w.hw_has[i].ha_id)
			w.hw_has[w.hw_left++] = w.hw_has[i];
	w.hw_nr = w.hw_left;
	while (w.hw_left) {
		uint64_t done = 0, total = 0;
		size_t fdone = 0;
		double now, rate;

		rc = hwait_poll(r, &w);
		if (rc) {
			if (r->hr_tty)
				fputc('\n', stderr);
			hsm_call_err(r->hr_cli, NULL, rc);
			wcli_errf(r->hr_cli, NULL,
				  "stopped waiting; the actions stay queued (see"
				  " 'weir hsm queue')");
			goto out;
		}
		for (size_t i = 0; i < r->hr_nr; i++) {
			struct hf *f = &r->hr_files[i];
			struct ha *h;

			if (f->hf_waited && f->hf_state == HF_PENDING &&
			    (h = ha_find(w.hw_has, w.hw_nr, f->hf_id)) && h->ha_final)
				hreq_settle(r, f, h);
			fdone += f->hf_waited && f->hf_state != HF_PENDING;
		}
		for (size_t i = 0; i < w.hw_nr; i++) {
			const struct ha *h = &w.hw_has[i];
			total += h->ha_total;
			done +=
			    h->ha_final && h->ha_state == WEIR_HSM_DONE ? h->ha_total : h->ha_done;
		}
		now = wcli_now();
		if (first) {
			first = false;
			first_done = done;
			t_first = now;
		}
		rate = now > t_first && done > first_done
			   ? (double)(done - first_done) / (now - t_first)
			   : 0;
		if (r->hr_tty) {
			hreq_progress(r, fdone, files, done, total, rate, !w.hw_left);
		} else if (now - last_line >= 5.0 && w.hw_left) {
			hreq_progress(r, fdone, files, done, total, rate, true);
			last_line = now;
		}
		if (!w.hw_left)
			break;
		/* nobody to do the work: say so once, and keep waiting */
		if (!w.hw_agents && !w.hw_running) {
			if (!t_idle)
				t_idle = now;
			if (!warned && now - t_idle > 10.0) {
				if (r->hr_tty)
					fputc('\n', stderr);
				fprintf(stderr,
					"weir %s: no copytool agent is running (start"
					" weir-hsmd): the actions wait in the queue. Interrupting"
					" this command leaves them queued.\n",
					r->hr_cli->cl_cmd);
				warned = true;
			}
		} else {
			t_idle = 0;
		}
		usleep(HSM_POLL_MS * 1000);
	}
	hreq_summary(r, &w, wcli_now() - t0);
out:
	free(w.hw_has);
	free(w.hw_ids);
	return rc;
}

/* ------------------------------------------------------------ archive, restore, release */

static int hsm_cmd_act(struct wcli *cli, int argc, char **argv, enum weir_hsm_action act)
{
	static const struct option longopts[] = {
	    {"recursive", no_argument, NULL, 'r'},
	    {"no-wait", no_argument, NULL, 'W'},
	    {"verbose", no_argument, NULL, 'v'},
	    {NULL, 0, NULL, 0},
	};
	struct hreq r = {
	    .hr_cli = cli,
	    .hr_act = act,
	    .hr_verb = hsm_act_name(act),
	    .hr_wait = act != WEIR_HSM_RELEASE,
	    .hr_tty = isatty(STDERR_FILENO),
	};
	size_t ok = 0, bad = 0, already = 0, queued = 0;
	int c, rc, ret = WCLI_EXIT_FAIL;

	while ((c = getopt_long(argc, argv, "rv", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			r.hr_recursive = true;
			break;
		case 'W':
			r.hr_wait = false;
			break;
		case 'v':
			r.hr_verbose = true;
			break;
		default:
			return wcli_bad_opt(cli, argv);
		}
	}
	if (optind >= argc)
		return wcli_usage(cli, "needs at least one path");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	if (hreq_collect(&r, argc, argv, optind))
		goto out;
	if (!r.hr_nr) {
		if (!r.hr_failed_walk)
			printf("no regular files to %s\n", r.hr_verb);
		ret = r.hr_failed_walk ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
		goto out;
	}
	if (hreq_send(&r))
		goto out;
	if (r.hr_wait) {
		if (hreq_wait(&r))
			goto out;
	} else {
		for (size_t i = 0; i < r.hr_nr; i++) {
			ok += r.hr_files[i].hf_state == HF_DONE;
			queued += r.hr_files[i].hf_state == HF_PENDING;
			bad += r.hr_files[i].hf_state == HF_FAILED;
			already += r.hr_files[i].hf_state == HF_ALREADY;
		}
		if (act == WEIR_HSM_RELEASE)
			printf("released %zu file%s", ok, ok == 1 ? "" : "s");
		else
			printf("queued %zu %s action%s (follow them with 'weir hsm queue')", queued,
			       r.hr_verb, queued == 1 ? "" : "s");
		if (already)
			printf("; %zu already %s", already,
			       act == WEIR_HSM_ARCHIVE	 ? "archived"
			       : act == WEIR_HSM_RELEASE ? "released"
							 : "present");
		if (bad)
			printf("; %zu refused", bad);
		printf("\n");
	}
	ret = WCLI_EXIT_OK;
	for (size_t i = 0; i < r.hr_nr; i++)
		if (r.hr_files[i].hf_state == HF_FAILED)
			ret = WCLI_EXIT_FAIL;
	if (r.hr_failed_walk)
		ret = WCLI_EXIT_FAIL;
out:
	for (size_t i = 0; i < r.hr_nr; i++)
		free(r.hr_files[i].hf_path);
	free(r.hr_files);
	return ret;
}

int wcli_cmd_hsm_archive(struct wcli *cli, int argc, char **argv)
{
	return hsm_cmd_act(cli, argc, argv, WEIR_HSM_ARCHIVE);
}

int wcli_cmd_hsm_restore(struct wcli *cli, int argc, char **argv)
{
	return hsm_cmd_act(cli, argc, argv, WEIR_HSM_RESTORE);
}

int wcli_cmd_hsm_release(struct wcli *cli, int argc, char **argv)
{
	return hsm_cmd_act(cli, argc, argv, WEIR_HSM_RELEASE);
}

/* ------------------------------------------------------------ state */

int wcli_cmd_hsm_state(struct wcli *cli, int argc, char **argv)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} words[] = {
	    {WEIR_HS_EXISTS, "exists"},	    {WEIR_HS_ARCHIVED, "archived"},
	    {WEIR_HS_RELEASED, "released"}, {WEIR_HS_DIRTY, "dirty"},
	    {WEIR_HS_LOST, "lost"},	    {WEIR_HS_IMPORTED, "imported"},
	};
	struct weir_hsm_state st;
	int rc, failed = 0;

	if (getopt(argc, argv, "") != -1)
		return wcli_bad_opt(cli, argv);
	if (optind >= argc)
		return wcli_usage(cli, "needs at least one path");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	for (int i = optind; i < argc; i++) {
		char tb[64], a[32], b[32];

		rc = weir_hsm_state_get(cli->cl_fs, argv[i], &st);
		if (rc) {
			hsm_call_err(cli, argv[i], rc);
			failed = 1;
			continue;
		}
		printf("%s: (0x%08x)", argv[i], st.hs_flags);
		for (size_t k = 0; k < WEIR_ARRAY_SIZE(words); k++)
			if (st.hs_flags & words[k].bit)
				printf(" %s", words[k].name);
		if (st.hs_dra)
			printf(", dra:%u", st.hs_dra);
		printf("\n");
		printf("  fid:          " HSM_FID_F "\n", HSM_FID_P(st.hs_fid));
		if (st.hs_key[0])
			printf("  key:          s3://%s/%s\n", st.hs_bucket, st.hs_key);
		if (st.hs_etag[0])
			printf("  etag:         %s\n", st.hs_etag);
		printf("  data version: %llu", (unsigned long long)st.hs_data_version);
		if (st.hs_flags & WEIR_HS_EXISTS)
			printf(" (archive copy holds %llu)",
			       (unsigned long long)st.hs_archived_version);
		printf("\n");
		if (st.hs_archived_ns) {
			wcli_utc_time(st.hs_archived_ns, tb, sizeof(tb));
			printf("  archived:     %s%s\n", tb,
			       (st.hs_flags & WEIR_HS_IMPORTED) ? " (the object's LastModified)"
								: "");
		}
		weir_fmt_size(st.hs_size, a, sizeof(a));
		printf("  size:         %llu (%s)\n", (unsigned long long)st.hs_size, a);
		if ((st.hs_flags & WEIR_HS_RELEASED) && st.hs_restored) {
			weir_fmt_size(st.hs_restored, b, sizeof(b));
			printf("  restored:     %s of %s\n", b, a);
		}
		if (st.hs_action_id)
			printf("  action:       %s #%llu pending\n", hsm_act_name(st.hs_action),
			       (unsigned long long)st.hs_action_id);
	}
	return failed ? WCLI_EXIT_FAIL : WCLI_EXIT_OK;
}

/* ------------------------------------------------------------ queue */

static int hai_cmp(const void *a, const void *b)
{
	const struct weir_hsm_action_info *x = a, *y = b;
	return x->hai_id < y->hai_id ? -1 : x->hai_id > y->hai_id;
}

int wcli_cmd_hsm_queue(struct wcli *cli, int argc, char **argv)
{
	struct weir_hsm_queue *q = NULL;
	char a[32], b[32];
	int rc;

	if (getopt(argc, argv, "") != -1)
		return wcli_bad_opt(cli, argv);
	if (optind < argc)
		return wcli_usage(cli, "takes no arguments");
	rc = wcli_mount(cli);
	if (rc)
		return rc;
	rc = weir_hsm_queue_get(cli->cl_fs, NULL, 0, &q);
	if (rc) {
		hsm_call_err(cli, NULL, rc);
		return WCLI_EXIT_FAIL;
	}
	if (q->hq_nr) {
		qsort(q->hq_actions, q->hq_nr, sizeof(*q->hq_actions), hai_cmp);
		printf("%8s  %-7s  %-7s  %-28s  %21s  %-20s  %s\n", "ID", "ACTION", "STATE", "FID",
		       "BYTES DONE/TOTAL", "AGENT", "KEY");
	}
	for (size_t i = 0; i < q->hq_nr; i++) {
		const struct weir_hsm_action_info *ai = &q->hq_actions[i];
		char fid[64], bytes[80];

		snprintf(fid, sizeof(fid), HSM_FID_F, HSM_FID_P(ai->hai_fid));
		weir_fmt_size(ai->hai_bytes_done, a, sizeof(a));
		weir_fmt_size(ai->hai_bytes_total, b, sizeof(b));
		snprintf(bytes, sizeof(bytes), "%s/%s", a, b);
		printf("%8llu  %-7s  %-7s  %-28s  %21s  %-20s  %s\n",
		       (unsigned long long)ai->hai_id, hsm_act_name(ai->hai_action),
		       hsm_state_name(ai->hai_state), fid, bytes,
		       ai->hai_agent[0] ? ai->hai_agent : "-", ai->hai_key);
	}
	if (q->hq_nr)
		printf("\n");
	weir_fmt_size(q->hq_backlog_bytes, a, sizeof(a));
	printf("waiting %u, running %u, backlog %s (%llu bytes)\n", q->hq_waiting, q->hq_running, a,
	       (unsigned long long)q->hq_backlog_bytes);
	printf("archive %.1f MB/s, restore %.1f MB/s (last 10 s); agents %u\n",
	       (double)q->hq_archive_bps / 1e6, (double)q->hq_restore_bps / 1e6, q->hq_agents);
	weir_fmt_size(q->hq_archived_bytes, a, sizeof(a));
	weir_fmt_size(q->hq_restored_bytes, b, sizeof(b));
	printf("since the MDS started: %llu actions done, %llu failed; %s archived, %s restored\n",
	       (unsigned long long)q->hq_done, (unsigned long long)q->hq_failed, a, b);
	weir_hsm_queue_free(q);
	return WCLI_EXIT_OK;
}
