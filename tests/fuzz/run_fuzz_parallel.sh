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
# Exits 1 on a finding, 2 on a usage or setup error, 0 otherwise.
#
# NT_FUZZ_SCRATCH: where the scratch corpora go instead of DIR/corpus (they grow to tens of
# MB: keep them out of a DIR that is copied back). NT_FUZZ_MERGE=1: after a run without a
# finding, DIR/new/<target> gets the inputs of the scratch corpus that reach edges the
# committed corpus does not (libFuzzer -merge=1 -use_counters=0, as run_fuzz.sh merges; the
# binaries do it, no clang needed): copy them into tests/fuzz/corpus/<target> and commit.
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
scratch=${NT_FUZZ_SCRATCH:-$dir/corpus}
mkdir -p "$dir/logs" || exit 2

i=0
for t in $targets; do
	n=$((jobs / ntargets + (i < jobs % ntargets ? 1 : 0)))
	[ "$n" -ge 1 ] || n=1
	i=$((i + 1))
	mkdir -p "$scratch/$t" "$dir/findings/$t"
	ls "$scratch/$t" | wc -l >"$dir/logs/$t.before"
	for ((k = 0; k < n; k++)); do
		log=$dir/logs/$t.$k.log
		(
			TIMEFORMAT='%U %S'
			{ time "$build/tests/fuzz/fuzz_$t" "$scratch/$t" "tests/fuzz/corpus/$t" \
				-max_total_time="$seconds" $(fuzz_flags "$t") \
				-artifact_prefix="$dir/findings/$t/" >"$log" 2>&1; } 2>"$log.cpu"
		) &
	done
done
wait

# With NT_FUZZ_MERGE=1: DIR/new/<target> made to hold the scratch corpus's inputs that
# reach edges the committed corpus does not: the committed inputs are copied in, the merge
# adds to them, and the copies are removed again. Prints ", N new in DIR/new/<target>".
merge() {
	[ "${NT_FUZZ_MERGE:-0}" = 1 ] || return 0
	local new=$dir/new/$1 f
	rm -rf "$new" && mkdir -p "$new" && cp tests/fuzz/corpus/$1/* "$new/" || return 0
	if ! "$build/tests/fuzz/fuzz_$1" -merge=1 -use_counters=0 \
		$(fuzz_flags "$1" | grep -o -- '-max_len=[0-9]*') "$new" "$scratch/$1" \
		>"$dir/logs/$1.merge.log" 2>&1; then
		echo ", merge FAILED (log: $dir/logs/$1.merge.log)"
		return 0
	fi
	for f in tests/fuzz/corpus/$1/*; do rm -f "$new/${f##*/}"; done
	echo ", $(ls "$new" | wc -l) new in $new"
}

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
	added=$(($(ls "$scratch/$t" | wc -l) - $(cat "$dir/logs/$t.before")))
	rate=$(awk -v e="$execs" -v c="$cpu" 'BEGIN { printf "%d", (c > 0 ? e / c : 0) }')
	line="fuzz_$t: $execs execs, $(printf '%.1f' "$cpu") CPU-s ($rate/CPU-s),"
	line="$line cov: $cov ft: $ft, $added new inputs"
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
		echo "$line$(merge "$t")"
	fi
done
exit "$failed"
