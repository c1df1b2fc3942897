/*
 * nt_trace2_events.c - the Trace2 messages other than the lifecycle ones: command, child,
 * exec, def_param, region-with-message, data and printf. Each takes the macro's static
 * call site, whose argument names are fixed: an optional value that is absent is recorded
 * as a None argument (8 bytes) so the names stay in place. Names, places and counts come
 * from the field table (T2_A, NT_T2_NARGS).
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

#define T2(ev) (NT_KIND_T2_FIRST + NT_T2E_##ev)
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
	return s != NULL ? nt_arg_str(name, s) : none(name);
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
	nt_arg a = nt_arg_str(name, nz(value)); /* cmd_path, cmd_mode: one key, named by the macro */
	nt_t2_emit_args_(site, kind, &a, 1);
}

/* cmd_ancestry from /proc: the parent chain's command names, nearest first (Linux). */
static void ancestry_from_proc(void)
{
	static uint16_t site_names[NT_T2_NARGS(CMD_ANCESTRY) + 1];
	static nt_callsite site = { .line = __LINE__, .category = "", .name = "",
				    .file = NT_T2_SELF_FILE, .arg_names = site_names,
				    .arg_count = NT_T2_NARGS(CMD_ANCESTRY), .always = 1 };
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
	nt_t2_cmd_ancestry_(&site, v);
}

void nt_t2_cmd_start_(nt_callsite *site, const char *const *argv)
{
	argv_copy c;
	nt_arg a[NT_T2_NARGS(START)] = { T2_A(START, argv, list, copy_argv(&c, NULL, argv)) };
	nt_t2_emit_args_(site, T2(START), a, NT_T2_NARGS(START));
	ancestry_from_proc();
}

void nt_t2_cmd_ancestry_(nt_callsite *site, const char *const *names)
{
	nt_arg a[NT_T2_NARGS(CMD_ANCESTRY)] = { T2_A(CMD_ANCESTRY, ancestry, list, names) };
	nt_t2_emit_args_(site, T2(CMD_ANCESTRY), a, NT_T2_NARGS(CMD_ANCESTRY));
}

void nt_t2_cmd_error_(nt_callsite *site, const char *fmt, ...)
{
	char msg[MSG_MAX];
	nt_arg a[NT_T2_NARGS(ERROR)] = { T2_A(ERROR, msg, none), T2_A(ERROR, fmt, none) };
	/* Git records the message and the format only for a non-empty format. */
	if (fmt != NULL && fmt[0] != '\0') {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		T2_SET(a, ERROR, msg, nt_arg_str, msg);
		T2_SET(a, ERROR, fmt, nt_arg_str, fmt);
	}
	nt_t2_emit_args_(site, T2(ERROR), a, NT_T2_NARGS(ERROR));
}

void nt_t2_cmd_name_(nt_callsite *site, const char *name)
{
	const char *parent = secure_getenv("NANOTRACE_PARENT_NAME");
	size_t room = sizeof(nt_T2.hierarchy) - strlen(nz(name)) - 2; /* '/' and the NUL */
	if (parent != NULL && strlen(nz(name)) < sizeof(nt_T2.hierarchy) - 2 &&
	    strlen(parent) > room) {
		/* Cut, the hierarchy would lose this command's own name: it starts afresh. */
		char shown[NT_ENV_SHOWN_MAX];
		nt_env_warn("NANOTRACE_PARENT_NAME='%s' is longer than %zu bytes; "
			    "the hierarchy starts at this command", nt_env_shown(parent, shown), room);
		parent = NULL;
	}
	if (parent != NULL && parent[0] != '\0')
		snprintf(nt_T2.hierarchy, sizeof(nt_T2.hierarchy), "%s/%s", parent, nz(name));
	else
		snprintf(nt_T2.hierarchy, sizeof(nt_T2.hierarchy), "%s", nz(name));
	setenv("NANOTRACE_PARENT_NAME", nt_T2.hierarchy, 1);
	nt_arg a[NT_T2_NARGS(CMD_NAME)] = { T2_A(CMD_NAME, name, nt_arg_str, nz(name)),
					    T2_A(CMD_NAME, hierarchy, nt_arg_str, nt_T2.hierarchy) };
	nt_t2_emit_args_(site, T2(CMD_NAME), a, NT_T2_NARGS(CMD_NAME));
}

void nt_t2_cmd_alias_(nt_callsite *site, const char *alias, const char *const *argv)
{
	nt_arg a[NT_T2_NARGS(ALIAS)] = { T2_A(ALIAS, alias, nt_arg_str, nz(alias)),
					 T2_A(ALIAS, argv, list, argv) };
	nt_t2_emit_args_(site, T2(ALIAS), a, NT_T2_NARGS(ALIAS));
}

void nt_t2_def_param_(nt_callsite *site, const char *scope, const char *param, const char *value)
{
	char buf[512];
	nt_arg a[NT_T2_NARGS(DEF_PARAM)] = {
		T2_A(DEF_PARAM, scope, nt_arg_str, nz(scope)), T2_A(DEF_PARAM, param, nt_arg_str, nz(param)),
		T2_A(DEF_PARAM, value, str_or_none, nt_t2_redact(value, buf, sizeof(buf))) };
	nt_t2_emit_args_(site, T2(DEF_PARAM), a, NT_T2_NARGS(DEF_PARAM));
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
	const char *patterns = secure_getenv("NANOTRACE_CONFIG_PARAMS");
	if (patterns == NULL || patterns[0] == '\0' || keys == NULL)
		return;
	for (unsigned i = 0; i < n; i++)
		if (keys[i] != NULL && matches_patterns(patterns, keys[i]))
			nt_t2_def_param_(site, scope, keys[i], values ? values[i] : NULL);
}

void nt_t2_list_env_vars_(nt_callsite *site)
{
	const char *names = secure_getenv("NANOTRACE_ENV_VARS");
	char name[256];
	while (next_item(&names, name, sizeof(name))) {
		const char *v = getenv(name);
		if (v != NULL && v[0] != '\0')
			nt_t2_def_param_(site, "command", name, v);
	}
}

void nt_t2_def_repo_(nt_callsite *site, int repo, const char *worktree)
{
	nt_arg a[1 + NT_T2_NARGS(DEF_REPO)] = {
		nt_arg_u64(NT_T2_ARG_REPO, (uint32_t)(repo < 0 ? 0 : repo)),
		T2_A1(DEF_REPO, worktree, nt_arg_str, nz(worktree)) };
	nt_t2_emit_args_(site, T2(DEF_REPO), a, 1 + NT_T2_NARGS(DEF_REPO));
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
	const char *cls = hook_name ? "hook" : child_class ? child_class : "?";
	nt_arg a[NT_T2_NARGS(CHILD_START)] = {
		T2_A(CHILD_START, child_id, nt_arg_i64, id), T2_A(CHILD_START, child_class, nt_arg_str, cls),
		T2_A(CHILD_START, hook_name, str_or_none, hook_name),
		T2_A(CHILD_START, cd, str_or_none, cd), T2_A(CHILD_START, use_shell, nt_arg_bool, use_shell),
		T2_A(CHILD_START, argv, list, copy_argv(&c, git_cmd ? "git" : NULL, argv)) };
	nt_t2_emit_args_(site, T2(CHILD_START), a, NT_T2_NARGS(CHILD_START));
}

void nt_t2_child_end_(nt_callsite *site, unsigned kind, nt_trace2_child *child, int pid,
		      int code, const char *ready)
{
	int id = child ? child->id : -1;
	nt_arg run = child ? nt_t2_t_rel_since(child->start_ticks)
			   : nt_arg_u64(NT_T2_ARG_T_REL_TICKS, 0);
	if (kind == (unsigned)T2(CHILD_READY)) {
		nt_arg a[NT_T2_NARGS(CHILD_READY)] = {
			T2_A(CHILD_READY, child_id, nt_arg_i64, id), T2_A(CHILD_READY, pid, nt_arg_i64, pid),
			T2_A(CHILD_READY, ready, nt_arg_str, nz(ready)), T2_RUNTIME(CHILD_READY, run) };
		nt_t2_emit_args_(site, kind, a, NT_T2_NARGS(CHILD_READY));
	} else {
		nt_arg a[NT_T2_NARGS(CHILD_EXIT)] = {
			T2_A(CHILD_EXIT, child_id, nt_arg_i64, id), T2_A(CHILD_EXIT, pid, nt_arg_i64, pid),
			T2_A(CHILD_EXIT, code, nt_arg_i64, code), T2_RUNTIME(CHILD_EXIT, run) };
		nt_t2_emit_args_(site, kind, a, NT_T2_NARGS(CHILD_EXIT));
	}
}

int nt_t2_exec_(nt_callsite *site, const char *exe, const char *const *argv)
{
	int id = (int)__atomic_fetch_add(&nt_T2.next_exec_id, 1, __ATOMIC_RELAXED);
	if (!nt_trace2_is_enabled())
		return id;
	argv_copy c;
	nt_arg a[NT_T2_NARGS(EXEC)] = { T2_A(EXEC, exec_id, nt_arg_i64, id),
					T2_A(EXEC, exe, str_or_none, exe),
					T2_A(EXEC, argv, list, copy_argv(&c, NULL, argv)) };
	nt_t2_emit_args_(site, T2(EXEC), a, NT_T2_NARGS(EXEC));
	return id;
}

void nt_t2_exec_result_(nt_callsite *site, int exec_id, int code)
{
	nt_arg a[NT_T2_NARGS(EXEC_RESULT)] = { T2_A(EXEC_RESULT, exec_id, nt_arg_i64, exec_id),
					       T2_A(EXEC_RESULT, code, nt_arg_i64, code) };
	nt_t2_emit_args_(site, T2(EXEC_RESULT), a, NT_T2_NARGS(EXEC_RESULT));
}

/* region_enter and region_leave record the same arguments (the repository, then msg). */
NT_STATIC_ASSERT(NT_T2_NARGS(REGION_ENTER) == 1 && NT_T2_NARGS(REGION_LEAVE) == 1 &&
			 NT_T2_AT(REGION_ENTER, msg) == 0 && NT_T2_AT(REGION_LEAVE, msg) == 0,
		 "region_enter and region_leave record msg alone");

void nt_t2_region_printf_(nt_callsite *site, unsigned kind, int repo, const char *fmt, ...)
{
	char msg[MSG_MAX];
	nt_arg a[1 + NT_T2_NARGS(REGION_ENTER)] = {
		repo >= 0 ? nt_arg_u64(NT_T2_ARG_REPO, (uint32_t)repo) : none(NT_T2_ARG_REPO),
		T2_A1(REGION_ENTER, msg, none) };
	if (fmt != NULL && fmt[0] != '\0') {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		a[1 + NT_T2_AT(REGION_ENTER, msg)] = nt_arg_str(NT_T2_NAME(REGION_ENTER, msg), msg);
	}
	nt_t2_emit_args_(site, kind, a, 1 + NT_T2_NARGS(REGION_ENTER));
}

/* data and data_json record the same arguments: value, then the repository, which only the
 * macro's explicit-repository site records (repo >= 0). */
NT_STATIC_ASSERT(NT_T2_NARGS(DATA) == 1 && NT_T2_NARGS(DATA_JSON) == 1 &&
			 NT_T2_AT(DATA, value) == 0 && NT_T2_AT(DATA_JSON, value) == 0,
		 "data and data_json record value alone");

static void data_emit(nt_callsite *site, unsigned kind, int repo, nt_arg value)
{
	nt_arg a[NT_T2_NARGS(DATA) + 1] = { [NT_T2_AT(DATA, value)] = value,
					    [NT_T2_NARGS(DATA)] = nt_arg_u64(NT_T2_ARG_REPO, (uint32_t)repo) };
	nt_t2_emit_args_(site, kind, a, NT_T2_NARGS(DATA) + (repo >= 0));
}

void nt_t2_data_(nt_callsite *site, unsigned kind, int repo, const char *value)
{
	data_emit(site, kind, repo, nt_arg_str(NT_T2_NAME(DATA, value), nz(value)));
}

void nt_t2_data_intmax_(nt_callsite *site, unsigned kind, int repo, int64_t value)
{
	data_emit(site, kind, repo, nt_arg_i64(NT_T2_NAME(DATA, value), value));
}

void nt_t2_printf_(nt_callsite *site, const char *fmt, ...)
{
	char msg[MSG_MAX];
	nt_arg a[NT_T2_NARGS(PRINTF)] = { T2_A(PRINTF, msg, none) };
	if (fmt != NULL && fmt[0] != '\0') {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		T2_SET(a, PRINTF, msg, nt_arg_str, msg);
	}
	nt_t2_emit_args_(site, T2(PRINTF), a, NT_T2_NARGS(PRINTF));
}
