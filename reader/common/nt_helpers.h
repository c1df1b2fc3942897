/* nt_helpers.h - whether the reader library may start helper threads (not installed): the
 * one reading of NANOTRACE_READER_AHEAD (nanotrace_reader.h, DECOMPRESSING AHEAD) and of
 * the CPUs the process may run on, for decode's helpers (nt_ahead_plan) and the renderers'
 * (nt_render_lines). */
#ifndef NT_HELPERS_H
#define NT_HELPERS_H

/* NANOTRACE_READER_AHEAD: -1 when unset, "auto", or a value it does not take (then one line
 * on stderr, once per process); else 0 ("0" or "off": no helper) or the number of buffers
 * it forces (1..NT_READER_AHEAD_MAX_BUFFERS: helpers whatever the CPUs). Cost: a getenv. */
int nt_helpers_env(void);

/* The CPUs the process may run on (sched_getaffinity); 1 when that cannot be read. Cost: a
 * system call. */
int nt_helpers_cpus(void);

#endif /* NT_HELPERS_H */
