#!/usr/bin/env bash
# run_fuzz_parallel.sh SECONDS JOBS [DIR] - runs every fuzz target at once, JOBS libFuzzer
# processes in all (one per core is the intent): each target gets JOBS / targets of them,
# and the first JOBS % targets of the list (slowest first) one more; a target never gets
# none (JOBS below the number of targets still starts one each).
#
# Builds nothing: it runs the fuzz binaries already built (tests/fuzz/run_fuzz.sh 1 builds
# them; NT_FUZZ_BUILD, default build-fuzz), so it runs where clang is not installed (the
# binaries need libstdc++, libzstd and glibc at run time: ldd). Each process goes on from
# the committed corpus (tests/fuzz/corpus/<target>, only read) and writes what it finds to
# DIR/corpus/<target> (default DIR: $OUT when set, else build-fuzz/fuzz-parallel), which
# the processes of one target share (libFuzzer reloads it every few seconds, so they feed
# each other); a finding goes to DIR/findings/<target>/ (crash-, leak-, timeout-, oom-...),
# each process's log to DIR/logs/<target>.<n>.log. Flags as run_fuzz.sh's (fuzz_flags).
#
# Prints one line per target: executions summed over its processes, their CPU seconds
# (user + system, summed: the machine may be shared), executions per CPU-second, the
# highest cov: and ft: of its processes, the inputs it added to DIR/corpus/<target>, and
# FINDING with the files and the sanitizer's summary line when any process stopped on one.
# Exits 1 on a finding, 2 on a usage or setup error, 0 otherwise. To keep what a run found,
# merge DIR/corpus/<target> into the committed corpus where clang is (run_fuzz.sh's
# NT_FUZZ_MERGE=1 does it for its own scratch corpus; by hand:
#   build-fuzz/tests/fuzz/fuzz_T -merge=1 -use_counters=0 tests/fuzz/corpus/T DIR/corpus/T
# with the target's -max_len).
set -u
cd "$(dirname "$0")/../.."
. tests/fuzz/fuzz_flags.sh
if [ $# -lt 2 ] || ! [ "$1" -gt 0 ] 2>/dev/null || ! [ "$2" -gt 0 ] 2>/dev/null; then
	echo "usage: $0 SECONDS JOBS [DIR]" >&2
	exit 2
fi
seconds=$1 jobs=$2
dir=${3:-${OUT:-build-fuzz/fuzz-parallel}}
build=${NT_FUZZ_BUILD:-build-fuzz}
targets=${NT_FUZZ_TARGETS:-$fuzz_slowest_first}
ntargets=$(wc -w <<<"$targets")
for t in $targets; do
	if [ ! -x "$build/tests/fuzz/fuzz_$t" ]; then
		echo "$0: $build/tests/fuzz/fuzz_$t is not built (run tests/fuzz/run_fuzz.sh 1 first)" >&2
		exit 2
	fi
done
mkdir -p "$dir/logs" || exit 2

i=0
for t in $targets; do
	n=$((jobs / ntargets + (i < jobs % ntargets ? 1 : 0)))
	[ "$n" -ge 1 ] || n=1
	i=$((i + 1))
	mkdir -p "$dir/corpus/$t" "$dir/findings/$t"
	ls "$dir/corpus/$t" | wc -l >"$dir/logs/$t.before"
	for ((k = 0; k < n; k++)); do
		log=$dir/logs/$t.$k.log
		(
			TIMEFORMAT='%U %S'
			{ time "$build/tests/fuzz/fuzz_$t" "$dir/corpus/$t" "tests/fuzz/corpus/$t" \
				-max_total_time="$seconds" $(fuzz_flags "$t") \
				-artifact_prefix="$dir/findings/$t/" >"$log" 2>&1; } 2>"$log.cpu"
		) &
	done
done
wait

failed=0
for t in $targets; do
	execs=0 cpu=0 cov=0 ft=0 bad=""
	for log in "$dir/logs/$t".*.log; do
		e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
		execs=$((execs + ${e:-0}))
		cpu=$(awk -v a="$cpu" '{ print a + $1 + $2 }' "$log.cpu")
		last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
		c=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
		f=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
		[ "${c:-0}" -gt "$cov" ] && cov=$c
		[ "${f:-0}" -gt "$ft" ] && ft=$f
		if grep -qE '^(==[0-9]+==ERROR|SUMMARY: )' "$log" || [ -z "$e" ]; then
			bad="$bad $log"
		fi
	done
	added=$(($(ls "$dir/corpus/$t" | wc -l) - $(cat "$dir/logs/$t.before")))
	rate=$(awk -v e="$execs" -v c="$cpu" 'BEGIN { printf "%d", (c > 0 ? e / c : 0) }')
	line="fuzz_$t: $execs execs, $(printf '%.1f' "$cpu") CPU-s ($rate/CPU-s), cov: $cov ft: $ft, $added new inputs"
	found=$(ls "$dir/findings/$t")
	if [ -n "$found" ] || [ -n "$bad" ]; then
		failed=1
		echo "$line: FINDING"
		for f in $found; do echo "  $dir/findings/$t/$f"; done
		for log in $bad; do
			echo "  log: $log"
			grep -E '^(==[0-9]+==ERROR|SUMMARY: |.*runtime error:)' "$log" | head -n 3 |
				sed 's/^/    /'
		done
	else
		echo "$line"
	fi
done
exit "$failed"
