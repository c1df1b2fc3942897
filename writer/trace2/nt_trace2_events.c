/*
 * nt_trace2_events.c - the Trace2 messages other than the lifecycle ones: command, child,
 * exec, def_param, region-with-message, data and printf. Each takes the macro's static
 * call site, whose argument names are fixed: an optional value that is absent is recorded
 * as a None argument (8 bytes) so the names stay in place.
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nt_trace2_internal.h"

#define T2(ev) (NT_KIND_T2_FIRST + NT_T2_##ev)
#define MSG_MAX 2000 /* formatted messages: what fits one record */
/* argv elements copied: more than one record can hold (each takes at least 4 bytes of
 * 2040), so a longer argv is cut by the record budget, which counts it (values_truncated). */
#define MAX_ARGV 510

static const char *nz(const char *s)
{
	return s != NULL ? s : "";
}

static nt_arg none(const char *name)
{
	return (nt_arg){ .name = name, .type = NT_ARG_NONE };
}

static nt_arg str_or_none(const char *name, const char *s)
{
	return s != NULL ? NT_STR(name, s) : none(name);
}

static nt_arg list(const char *name, const char *const *v)
{
	return (nt_arg){ .name = name, .type = NT_ARG_STRING_LIST, .value.ptr = v };
}

/* argv with URL passwords redacted (and "git" prepended when asked), in caller storage. */
typedef struct argv_copy {
	const char *v[MAX_ARGV + 2];
	char redacted[4][512];
} argv_copy;

static const char *const *copy_argv(argv_copy *c, const char *prefix, const char *const *argv)
{
	size_t n = 0, r = 0;
	if (prefix != NULL)
		c->v[n++] = prefix;
	for (size_t i = 0; argv != NULL && argv[i] != NULL && n < MAX_ARGV; i++) {
		const char *a = argv[i];
		if (r < 4) {
			const char *red = nt_t2_redact(a, c->redacted[r], sizeof(c->redacted[r]));
			if (red != a)
				r++;
			a = red;
		}
		c->v[n++] = a;
	}
	c->v[n] = NULL;
	return c->v;
}

void nt_t2_string_(nt_callsite *site, unsigned kind, const char *name, const char *value)
{
	nt_arg a = NT_STR(name, nz(value));
	nt_t2_emit_args_(site, kind, &a, 1);
}

/* cmd_ancestry from /proc: the parent chain's command names, nearest first (Linux). */
static void ancestry_from_proc(void)
{
	static uint16_t site_names[2];
	static nt_callsite site = { .line = __LINE__, .category = "", .name = "",
				    .file = NT_T2_SELF_FILE, .arg_names = site_names, .arg_count = 1,
				    .always = 1 };
	static char names[10][32];
	const char *v[11];
	size_t n = 0;
	pid_t pid = getppid();
	while (pid > 1 && n < 10) {
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			break;
		size_t got = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[got] = '\0';
		/* "pid (comm) state ppid ...": comm may hold spaces and parentheses. */
		char *open = strchr(buf, '('), *close = strrchr(buf, ')');
		if (open == NULL || close == NULL || close < open)
			break;
		snprintf(names[n], sizeof(names[n]), "%.*s", (int)(close - open - 1), open + 1);
		v[n] = names[n];
		n++;
		int ppid = 0;
		if (sscanf(close + 1, " %*c %d", &ppid) != 1)
			break;
		pid = ppid;
	}
	v[n] = NULL;
	nt_arg a = list("ancestry", v);
	nt_t2_emit_args_(&site, T2(CMD_ANCESTRY), &a, 1);
}

void nt_t2_cmd_start_(nt_callsite *site, const char *const *argv)
{
	argv_copy c;
	nt_arg a = list("argv", copy_argv(&c, NULL, argv));
	nt_t2_emit_args_(site, T2(START), &a, 1);
	ancestry_from_proc();
}

void nt_t2_cmd_ancestry_(nt_callsite *site, const char *const *names)
{
	nt_arg a = list("ancestry", names);
	nt_t2_emit_args_(site, T2(CMD_ANCESTRY), &a, 1);
}

void nt_t2_cmd_error_(nt_callsite *site, const char *fmt, ...)
{
	char msg[MSG_MAX];
	nt_arg a[2] = { none("msg"), none("fmt") };
	/* Git records the message and the format only for a non-empty format. */
	if (fmt != NULL && fmt[0] != '\0') {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		a[0] = NT_STR("msg", msg);
		a[1] = NT_STR("fmt", fmt);
	}
	nt_t2_emit_args_(site, T2(ERROR), a, 2);
}

void nt_t2_cmd_name_(nt_callsite *site, const char *name)
{
	const char *parent = getenv("NANOTRACE_PARENT_NAME");
	if (parent != NULL && parent[0] != '\0')
		snprintf(nt_T2.hierarchy, sizeof(nt_T2.hierarchy), "%s/%s", parent, nz(name));
	else
		snprintf(nt_T2.hierarchy, sizeof(nt_T2.hierarchy), "%s", nz(name));
	setenv("NANOTRACE_PARENT_NAME", nt_T2.hierarchy, 1);
	nt_arg a[2] = { NT_STR("name", nz(name)), NT_STR("hierarchy", nt_T2.hierarchy) };
	nt_t2_emit_args_(site, T2(CMD_NAME), a, 2);
}

void nt_t2_cmd_alias_(nt_callsite *site, const char *alias, const char *const *argv)
{
	nt_arg a[2] = { NT_STR("alias", nz(alias)), list("argv", argv) };
	nt_t2_emit_args_(site, T2(ALIAS), a, 2);
}

void nt_t2_def_param_(nt_callsite *site, const char *scope, const char *param, const char *value)
{
	char buf[512];
	nt_arg a[3] = { NT_STR("scope", nz(scope)), NT_STR("param", nz(param)),
			str_or_none("value", nt_t2_redact(value, buf, sizeof(buf))) };
	nt_t2_emit_args_(site, T2(DEF_PARAM), a, 3);
}

/* The next item of a comma-separated list, trimmed of blanks, into buf (items too long for
 * it are skipped). Returns 0 at the end of the list. */
static int next_item(const char **list, char *buf, size_t cap)
{
	const char *p = *list;
	while (p != NULL && *p != '\0') {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		*list = end ? end + 1 : NULL;
		while (n > 0 && (*p == ' ' || *p == '\t'))
			p++, n--;
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n > 0 && n < cap) {
			memcpy(buf, p, n);
			buf[n] = '\0';
			return 1;
		}
		p = *list;
	}
	return 0;
}

/* Does `key` match one of the comma-separated globs, ignoring case? */
static int matches_patterns(const char *patterns, const char *key)
{
	char pat[256];
	while (next_item(&patterns, pat, sizeof(pat)))
		if (fnmatch(pat, key, FNM_CASEFOLD) == 0)
			return 1;
	return 0;
}

void nt_t2_list_config_(nt_callsite *site, const char *scope, const char *const *keys,
			const char *const *values, unsigned n)
{
	const char *patterns = getenv("NANOTRACE_CONFIG_PARAMS");
	if (patterns == NULL || patterns[0] == '\0' || keys == NULL)
		return;
	for (unsigned i = 0; i < n; i++)
		if (keys[i] != NULL && matches_patterns(patterns, keys[i]))
			nt_t2_def_param_(site, scope, keys[i], values ? values[i] : NULL);
}

void nt_t2_list_env_vars_(nt_callsite *site)
{
	const char *names = getenv("NANOTRACE_ENV_VARS");
	char name[256];
	while (next_item(&names, name, sizeof(name))) {
		const char *v = getenv(name);
		if (v != NULL && v[0] != '\0')
			nt_t2_def_param_(site, "command", name, v);
	}
}

void nt_t2_def_repo_(nt_callsite *site, int repo, const char *worktree)
{
	nt_arg a[2] = { NT_U32("repo", (uint32_t)(repo < 0 ? 0 : repo)),
			NT_STR("worktree", nz(worktree)) };
	nt_t2_emit_args_(site, T2(DEF_REPO), a, 2);
}

void nt_t2_child_start_(nt_callsite *site, nt_trace2_child *child, const char *child_class,
			const char *hook_name, const char *cd, int use_shell, int git_cmd,
			const char *const *argv)
{
	argv_copy c;
	int id = (int)__atomic_fetch_add(&nt_T2.next_child_id, 1, __ATOMIC_RELAXED);
	if (child != NULL) {
		child->id = id;
		child->start_ticks = nt_now();
	}
	nt_arg a[6] = { NT_I32("child_id", id),
			NT_STR("child_class", hook_name ? "hook" : child_class ? child_class : "?"),
			str_or_none("hook_name", hook_name), str_or_none("cd", cd),
			NT_BOOL("use_shell", use_shell),
			list("argv", copy_argv(&c, git_cmd ? "git" : NULL, argv)) };
	nt_t2_emit_args_(site, T2(CHILD_START), a, 6);
}

void nt_t2_child_end_(nt_callsite *site, unsigned kind, nt_trace2_child *child, int pid,
		      int code, const char *ready)
{
	nt_arg a[4] = { NT_I32("child_id", child ? child->id : -1), NT_I32("pid", pid),
			kind == (unsigned)T2(CHILD_READY) ? NT_STR("ready", nz(ready))
							   : NT_I32("code", code),
			child ? nt_t2_t_rel_since(child->start_ticks)
			      : NT_U64(NT_T2_ARG_T_REL_TICKS, 0) };
	nt_t2_emit_args_(site, kind, a, 4);
}

int nt_t2_exec_(nt_callsite *site, const char *exe, const char *const *argv)
{
	int id = (int)__atomic_fetch_add(&nt_T2.next_exec_id, 1, __ATOMIC_RELAXED);
	if (!nt_trace2_is_enabled())
		return id;
	argv_copy c;
	nt_arg a[3] = { NT_I32("exec_id", id), str_or_none("exe", exe),
			list("argv", copy_argv(&c, NULL, argv)) };
	nt_t2_emit_args_(site, T2(EXEC), a, 3);
	return id;
}

void nt_t2_exec_result_(nt_callsite *site, int exec_id, int code)
{
	nt_arg a[2] = { NT_I32("exec_id", exec_id), NT_I32("code", code) };
	nt_t2_emit_args_(site, T2(EXEC_RESULT), a, 2);
}

void nt_t2_region_printf_(nt_callsite *site, unsigned kind, int repo, const char *fmt, ...)
{
	char msg[MSG_MAX];
	nt_arg a[2] = { repo >= 0 ? NT_U32("repo", (uint32_t)repo) : none("repo"), none("msg") };
	if (fmt != NULL && fmt[0] != '\0') {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		a[1] = NT_STR("msg", msg);
	}
	nt_t2_emit_args_(site, kind, a, 2);
}

/* repo >= 0 only on the macro's explicit-repository site (its second argument). */
void nt_t2_data_(nt_callsite *site, unsigned kind, int repo, const char *value)
{
	nt_arg a[2] = { NT_STR("value", nz(value)), NT_U32("repo", (uint32_t)repo) };
	nt_t2_emit_args_(site, kind, a, repo >= 0 ? 2 : 1);
}

void nt_t2_data_intmax_(nt_callsite *site, unsigned kind, int repo, int64_t value)
{
	nt_arg a[2] = { NT_I64("value", value), NT_U32("repo", (uint32_t)repo) };
	nt_t2_emit_args_(site, kind, a, repo >= 0 ? 2 : 1);
}

void nt_t2_printf_(nt_callsite *site, const char *fmt, ...)
{
	char msg[MSG_MAX];
	nt_arg a = none("msg");
	if (fmt != NULL && fmt[0] != '\0') {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		a = NT_STR("msg", msg);
	}
	nt_t2_emit_args_(site, T2(PRINTF), &a, 1);
}
