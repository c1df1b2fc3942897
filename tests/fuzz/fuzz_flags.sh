# fuzz_flags.sh - sourced by run_fuzz.sh and run_fuzz_parallel.sh: the fuzz targets and the
# libFuzzer flags and sanitizer options every run of them uses, said once.

# Every target, in the order run_fuzz.sh runs them, and the same slowest first (executions
# per CPU-second, SECURITY.md): run_fuzz_parallel.sh gives the spare cores to the first.
fuzz_all_targets="open render_text render_chrome render_perfetto render_otlp render_trace2 render_ctf
	compress bundle bundle_dir follow import env wire wire_msg"
fuzz_slowest_first="bundle follow wire_msg render_trace2 render_chrome render_perfetto render_otlp
	render_text render_ctf open bundle_dir compress wire import env"

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

# The flags of a run of target $1:
# -timeout=10: an input that runs 10 s is a hang (inputs are at most tens of KiB).
# -max_len: the archive targets' inputs are cut at 8 KiB (16 KiB for the several files of
#   bundle and bundle_dir): a reader's work grows with the events an input holds, and small
#   archives keep a target at thousands of inputs a second; their larger seeds (live arenas
#   of 64 KiB) are read whole by the replay tests and by follow, whose files must fit their
#   headers.
# -entropic=0 for the reader targets: libFuzzer's entropic scheduling counts every feature
#   of every execution in a table of 2 Mi entries (UpdateFeatureFrequency, AddRareFeature):
#   perf put it at 25 to 50 % of their time (clang 14). The same executions from the
#   committed corpus (-runs=N -seed=7, one process, 2026-11-27) took render_trace2 (30,000)
#   17.4 CPU-s with it and 14.3 without, reaching cov: 5313 and 5323 (ft: 20238 and 20246);
#   import (20,000) 5.6 and 4.3, cov: 3980 both; bundle reached cov: 4436 and 4434 (its time
#   is mostly its files' system calls, where the load of a shared machine decides more than
#   the flag). Not for wire, wire_msg and env: the manager's targets spend their time in
#   system calls, and without entropic scheduling libFuzzer chose longer inputs (wire,
#   20,000: 5.4 CPU-s with it, 6.9 without; wire_msg likewise), at the same coverage.
# -entropic_scale_per_exec_time=1 for wire and wire_msg: entropic scheduling then gives an
#   input energy in inverse proportion to its execution time (libFuzzer: "up to 30x"), so
#   the manager's cheap paths are fuzzed more often and its costly ones (saver threads,
#   stream files) no less in coverage. 20,000 executions from the committed corpus
#   (-seed=7, 2026-11-28, 2-core AMD EPYC guest) took wire_msg 13.1 and 12.8 CPU-s
#   without it, 2.6 and 2.3 with it (cov: 2000 each time, ft: 9784 and 9897 against 8950
#   and 8906); wire 12.7 and 12.9, 3.5 and 4.5 (cov: 2812 against 2809 and 2811). What
#   counts is what a run of a given length finds: 60 s each, two at a time on the two
#   cores, from the committed corpus, wire_msg ran 93,678 executions without it (1,719 a
#   CPU-second) and 478,433 with it (8,627), reaching cov: 2001 both and ft: 10075 and
#   9940; wire 117,400 (2,123) and 395,404 (6,954), cov: 2818 and 2853, ft: 12800 and
#   12578. (It makes a run with -seed= no longer repeat itself.)
# -max_len=4096 for wire_msg: a step costs the manager and the peers system calls, and
#   libFuzzer lets inputs grow to the largest seed (9.7 KiB): 20,000 executions took 17.0
#   CPU-s at that length and 10.1 at 4 KiB (dozens of messages still), cov: 1855 and 1829.
#   And for wire, for the same reason: long runs slowed to 350-700 a second as its inputs
#   grew to the largest seed. 30,000 executions from the committed corpus (-seed=7, beside
#   two fuzzers, 2026-11-28) took 29.6 CPU-s uncapped and 17.2 at 4 KiB (1,014 and 1,745 a
#   CPU-second), cov: 2732 and 2707; the seeds over 4 KiB are still replayed whole
#   (replay_wire, every CI run), so what only they reach stays tested.
fuzz_flags() {
	local len=
	case $1 in
	open | render_* | compress) len=-max_len=8192 ;;
	bundle | bundle_dir) len=-max_len=16384 ;;
	wire | wire_msg) len=-max_len=4096 ;;
	esac
	local entropic=-entropic=0
	case $1 in
	wire | wire_msg) entropic=-entropic_scale_per_exec_time=1 ;;
	env) entropic= ;;
	esac
	echo -timeout=10 -print_final_stats=1 $entropic $len
}
