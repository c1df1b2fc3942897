/*
 * nt_bench_instr - the event loops whose instructions bench/nt_report_instr.py counts under
 * valgrind's callgrind: a count of instructions is the same on a loaded machine as on an idle
 * one, where a time is not, so it says where an event's cost goes beyond the floor's.
 *
 *   nt_bench_instr CASE EVENTS
 * CASE is floor (a clock read and a 16-byte store, nt_bench_floor.h), zone (NT_BEGIN +
 * NT_END without arguments) or mixed (NT_BEGIN + NT_INSTANT with two int64 + NT_END); each
 * runs in its own function, named CASE_case, that callgrind's --toggle-collect selects.
 * One thread, a circular session (never full). Exit 2 on bad arguments, 1 when the session
 * cannot start, 3 when its clock is not the TSC (the counts would be the other clock's
 * system call, not the event's: valgrind makes the TSC look unusable on some hosts).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanotrace/nanotrace.h>
#include "nt_bench_floor.h"
#include "writer/core/nt_clock.h"

__attribute__((noinline)) static void floor_case(uint64_t n)
{
	(void)floor_loop(n);
}

__attribute__((noinline)) static void zone_case(uint64_t n)
{
	for (uint64_t i = 0; i < n / 2; i++) {
		NT_BEGIN("bench", "zone");
		NT_END("bench", "zone");
	}
}

__attribute__((noinline)) static void mixed_case(uint64_t n)
{
	for (uint64_t i = 0; i < n / 3; i++) {
		NT_BEGIN("bench", "work");
		NT_INSTANT("bench", "step", NT_I64("i", i), NT_I64("j", i * 7));
		NT_END("bench", "work");
	}
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*run)(uint64_t);
	} cases[] = { { "floor", floor_case }, { "zone", zone_case }, { "mixed", mixed_case } };
	uint64_t events = argc == 3 ? strtoull(argv[2], NULL, 10) : 0;
	size_t c = 0;
	while (argc == 3 && c < sizeof(cases) / sizeof(cases[0]) && strcmp(argv[1], cases[c].name))
		c++;
	if (argc != 3 || c == sizeof(cases) / sizeof(cases[0]) || events < 6 || events > 1000000000ull) {
		fprintf(stderr, "usage: nt_bench_instr floor|zone|mixed EVENTS (6..1e9)\n");
		return 2;
	}
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = NT_MODE_CIRCULAR;
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "nt_bench_instr: %s\n", nt_last_error());
		return 1;
	}
	if (!nt_clock_use_tsc_) {
		fprintf(stderr, "nt_bench_instr: the session's clock is not the TSC\n");
		return 3;
	}
	cases[c].run(events);
	return 0;
}
