/*
 * nt_trace2.c - the Trace2 layer's process and thread lifecycle: initialize, version,
 * thread names, exit, atexit and signal (git/git trace2.c, trace2/tr2_tls.c).
 *
 * Trace2 messages are ordinary records of the arena (kinds 32..61) with call sites, so
 * they cost what low-level events cost; the reader derives nesting and t_rel from them.
 * What only the process knows is recorded explicitly: the SID and process start (a
 * ProcessRecord), the run time of children and threads (in ticks, converted by the reader
 * like every other tick, never with the writer's start-up rate), and the exit code.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nt_trace2_internal.h"

nt_t2_process nt_T2;
int nt_trace2_enabled_;

static __thread nt_t2_thread nt_T2_tls __attribute__((tls_model("initial-exec")));
static pthread_mutex_t t2_lock = PTHREAD_MUTEX_INITIALIZER;

const char *nt_trace2_sid(void)
{
	return nt_T2.sid;
}

static void name_thread(nt_t2_thread *t, const char *base)
{
	char name[64];
	uint32_t id = __atomic_add_fetch(&nt_T2.next_thread_id, 1, __ATOMIC_RELAXED);
	snprintf(name, sizeof(name), "th%02u:%s", id, base);
	name[NT_T2_THREAD_NAME_MAX] = '\0'; /* Git truncates to 24 for every target */
	nt_thread_set_name(name);
	t->named = 1;
	t->start_ticks = nt_now();
}

nt_t2_thread *nt_t2_self(void)
{
	nt_t2_thread *t = &nt_T2_tls;
	if (__builtin_expect(!t->named, 0))
		name_thread(t, "unknown");
	return t;
}

void nt_t2_emit_(nt_callsite *site, unsigned kind)
{
	if (__builtin_expect(!nt_T2_tls.named, 0))
		nt_t2_self();
	nt_emit_(site, kind);
}

void nt_t2_emit_args_(nt_callsite *site, unsigned kind, const nt_arg *args, uint32_t n)
{
	if (__builtin_expect(!nt_T2_tls.named, 0))
		nt_t2_self();
	nt_emit_args_(site, kind, args, n);
}

const char *nt_t2_redact(const char *s, char *buf, size_t cap)
{
	const char *p;
	if (s == NULL || !nt_T2.redact)
		return s;
	if (strncmp(s, "https://", 8) == 0)
		p = s + 8;
	else if (strncmp(s, "http://", 7) == 0)
		p = s + 7;
	else
		return s;
	size_t at = strcspn(p, "@/");
	if (p[at] != '@')
		return s;
	const char *colon = memchr(p, ':', at);
	if (colon == NULL)
		return s;
	snprintf(buf, cap, "%.*s:<REDACTED>%s", (int)(colon - s), s, p + at);
	return buf;
}

/* The session's clock (TSC or not) is chosen by nt_start(), which may come later: read both
 * clocks now, and take the session's once it runs. */
static nt_clock_snapshot clock_start;

void nt_t2_initialize_clock_(void)
{
	if (!nt_T2.clock_started) {
		nt_clock_snapshot_now(&clock_start);
		nt_T2.clock_started = 1;
	}
}

/* ---- exit and signals ------------------------------------------------------------------ */

static void atexit_message(void)
{
	if (!nt_trace2_is_enabled())
		return;
	/* Git unwinds open regions (without messages) so that atexit is not nested; the reader
	 * does the same when it sees atexit. */
	nt_t2_timers_atexit();
	static uint16_t names[NT_T2_NARGS(ATEXIT) + 1];
	static nt_callsite site = { .line = __LINE__, .category = "", .name = "",
				    .file = NT_T2_SELF_FILE, .arg_names = names,
				    .arg_count = NT_T2_NARGS(ATEXIT), .always = 1 };
	nt_arg a[NT_T2_NARGS(ATEXIT)] = { T2_A(ATEXIT, code, nt_arg_i64, nt_T2.exit_code) };
	nt_t2_emit_args_(&site, NT_KIND_T2_FIRST + NT_T2E_ATEXIT, a, NT_T2_NARGS(ATEXIT));
	__atomic_store_n(&nt_trace2_enabled_, 0, __ATOMIC_RELAXED);
	nt_t2_forward_end(); /* NANOTRACE_EVENT: the last lines, atexit's among them */
	/* A session started from NANOTRACE is finished by the exit handler nt_start installed,
	 * which runs after this one (atexit handlers run in reverse order). */
}

static nt_callsite signal_site;
static uint16_t signal_names[NT_T2_NARGS(SIGNAL) + 1];

/* In the fatal-signal handler: the call site was registered at initialization, so this is
 * the lock-free event path. */
static void signal_message(int sig)
{
	if (!nt_trace2_is_enabled() || !nt_T2_tls.named)
		return;
	nt_arg a[NT_T2_NARGS(SIGNAL)] = { T2_A(SIGNAL, signo, nt_arg_i64, sig) };
	nt_emit_args_(&signal_site, NT_KIND_T2_FIRST + NT_T2E_SIGNAL, a, NT_T2_NARGS(SIGNAL));
	__atomic_store_n(&nt_trace2_enabled_, 0, __ATOMIC_RELAXED);
}

int nt_t2_cmd_exit_(nt_callsite *site, int code)
{
	nt_T2.exit_code = code;
	if (nt_trace2_is_enabled()) {
		nt_arg a[NT_T2_NARGS(EXIT)] = { T2_A(EXIT, code, nt_arg_i64, code) };
		nt_t2_emit_args_(site, NT_KIND_T2_FIRST + NT_T2E_EXIT, a, NT_T2_NARGS(EXIT));
	}
	return code;
}

/* ---- initialize ------------------------------------------------------------------------ */

static void write_process_record(void)
{
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	nt_write_process_record(nt_T2.sid, NT_PROCESS_UTC_OFFSET_KNOWN, nt_T2.start_ticks,
				(int32_t)tm.tm_gmtoff);
}

/* A fork() child's own session started: its durable records, and its own forwarder. */
static void fork_child_started(void)
{
	write_process_record();
	nt_t2_forward_begin();
}

/* NANOTRACE_REDACT: "0" keeps URL passwords; unset, empty or "1" redacts them; anything
 * else gets one line and the safe default, redaction. */
static int nt_t2_redact_from_env(void)
{
	const char *v = secure_getenv("NANOTRACE_REDACT");
	if (v == NULL || v[0] == '\0' || strcmp(v, "1") == 0)
		return 1;
	if (strcmp(v, "0") == 0)
		return 0;
	char shown[NT_ENV_SHOWN_MAX];
	nt_env_warn("NANOTRACE_REDACT='%s' is not 0 or 1; passwords in URLs are redacted",
		    nt_env_shown(v, shown));
	return 1;
}

int nt_t2_initialize_(nt_callsite *site, const char *version)
{
	pthread_mutex_lock(&t2_lock);
	if (nt_T2.initialized) {
		pthread_mutex_unlock(&t2_lock);
		return nt_T2.enabled;
	}
	nt_T2.initialized = 1;
	nt_t2_initialize_clock_();
	nt_T2.redact = nt_t2_redact_from_env();
	nt_t2_make_sid(nt_T2.sid, sizeof(nt_T2.sid));
	int too_many = 0;
	if (!nt_is_recording()) {
		nt_T2.started_session = nt_t2_env_start(&too_many);
		if (!nt_T2.started_session) {
			pthread_mutex_unlock(&t2_lock);
			return 0;
		}
	} else {
		nt_t2_forward_wanted(); /* the program's own session: its file is followed */
	}
	/* Children inherit the SID chain, even through programs that know nothing of it. */
	setenv("NANOTRACE_PARENT_SID", nt_T2.sid, 1);

	nt_T2.start_ticks = nt_clock_snapshot_ticks(&clock_start);
	write_process_record();
	nt_t2_thread *t = &nt_T2_tls;
	t->named = 1;
	t->is_main = 1;
	t->start_ticks = nt_T2.start_ticks;
	nt_thread_set_name("main");

	nt_T2.enabled = 1;
	__atomic_store_n(&nt_trace2_enabled_, 1, __ATOMIC_RELEASE);
	nt_arg args[NT_T2_NARGS(VERSION)] = {
		T2_A(VERSION, evt, nt_arg_str, "4"),
		T2_A(VERSION, exe, nt_arg_str, version ? version : NT_VERSION_STRING) };
	nt_t2_emit_args_(site, NT_KIND_T2_FIRST + NT_T2E_VERSION, args, NT_T2_NARGS(VERSION));
	if (too_many) {
		/* too_many_files has no keys; it uses version's call site, whose argument names
		 * stay, with absent values. */
		for (int i = 0; i < NT_T2_NARGS(VERSION); i++)
			args[i].type = NT_ARG_NONE;
		nt_t2_emit_args_(site, NT_KIND_T2_FIRST + NT_T2E_TOO_MANY_FILES, args,
				 NT_T2_NARGS(VERSION));
	}

	signal_site = (nt_callsite){ .line = __LINE__, .category = "", .name = "",
				     .file = NT_T2_SELF_FILE, .arg_names = signal_names,
				     .arg_count = NT_T2_NARGS(SIGNAL), .always = 1 };
	nt_arg sa[NT_T2_NARGS(SIGNAL)] = { T2_A(SIGNAL, signo, nt_arg_i64, 0) };
	nt_callsite_resolve(&signal_site, sa);
	nt_core_set_hooks(&(nt_core_hooks){ .on_fatal_signal = signal_message,
					    .on_durable_cleared = write_process_record,
					    .fork_child_path = nt_t2_fork_child_path,
					    .on_fork_child_started = fork_child_started });
	atexit(atexit_message);
	nt_t2_forward_begin(); /* after the version message: the listener's first line */
	pthread_mutex_unlock(&t2_lock);
	return 1;
}

/* ---- threads --------------------------------------------------------------------------- */

void nt_t2_thread_start_(nt_callsite *site, nt_callsite *main_site, const char *name)
{
	nt_t2_thread *t = &nt_T2_tls;
	if (t->is_main) {
		/* Git turns this into a region on the main thread. */
		nt_t2_region_printf_(main_site, NT_KIND_T2_FIRST + NT_T2E_REGION_ENTER, -1,
				     "thread-proc on main: %s", name ? name : "");
		return;
	}
	name_thread(t, name ? name : "");
	nt_t2_emit_(site, NT_KIND_T2_FIRST + NT_T2E_THREAD_START);
}

void nt_t2_thread_exit_(nt_callsite *site, nt_callsite *main_site)
{
	nt_t2_thread *t = nt_t2_self();
	if (t->is_main) {
		nt_t2_region_printf_(main_site, NT_KIND_T2_FIRST + NT_T2E_REGION_LEAVE, -1, "%s",
				     "thread-proc on main");
		return;
	}
	nt_t2_timers_thread_exit();
	nt_arg a[NT_T2_NARGS(THREAD_EXIT)] = {
		T2_RUNTIME(THREAD_EXIT, nt_t2_t_rel_since(t->start_ticks)) };
	nt_t2_emit_args_(site, NT_KIND_T2_FIRST + NT_T2E_THREAD_EXIT, a, NT_T2_NARGS(THREAD_EXIT));
}
