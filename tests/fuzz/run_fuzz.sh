#!/usr/bin/env bash
# run_fuzz.sh [SECONDS] - builds the fuzz build (clang, libFuzzer, ASan+UBSan) and runs every
# target of tests/fuzz for SECONDS each (default 20: 14 targets, about 5 minutes), one
# after another. Prints one line per target: executions, executions per second and per
# CPU-second of the fuzzing process (user + system: what a shared machine's load does not
# change much), coverage (cov: edges, ft: features), corpus size, and FINDING when
# libFuzzer stopped on a crash, a sanitizer report, a leak or an input that ran longer than
# 10 s (the input is kept as build-fuzz/fuzz-findings/<target>/crash-..., ready to become a
# regression input in tests/fuzz/corpus/<target>/ beside its fix); exits 1 if any did.
# The targets and their flags (-max_len, -entropic=0, -entropic_scale_per_exec_time=1, and
# why) are fuzz_flags.sh's; run_fuzz_parallel.sh runs them all at once, one process per
# core.
#
# Environment: NT_FUZZ_BUILD (default build-fuzz, beside the sources), NT_JOBS (ninja's
# parallel jobs, default 2), NT_FUZZ_TARGETS (default: every target, as fuzz_flags.sh lists
# them), NT_FUZZ_MERGE (1: after a run without a finding, merge what it found into the
# committed corpus, as below).
# The seeds in tests/fuzz/corpus are read, and written only with NT_FUZZ_MERGE=1: what a run
# finds goes to a scratch corpus under the build directory (kept between runs, so a later
# run goes on from it); with NT_FUZZ_MERGE=1 libFuzzer's -merge=1 -use_counters=0 then
# copies into tests/fuzz/corpus/<target> only the inputs that reach edges the corpus does
# not (a merge by features, hit counts included, added 3,791 inputs and 36 MB after one
# 60 s run per target), so the committed corpus stays small and the next run (anyone's,
# CI's) goes on from this one.
# Needs clang and libFuzzer (Debian: clang, libclang-rt-14-dev); without them it says so and
# exits 77 (CI installs both: .ci/packages).
set -u
cd "$(dirname "$0")/../.."
seconds=${1:-20}
build=${NT_FUZZ_BUILD:-build-fuzz}
jobs=${NT_JOBS:-2}
. tests/fuzz/fuzz_flags.sh
targets=${NT_FUZZ_TARGETS:-$fuzz_all_targets}

if ! command -v clang >/dev/null || ! command -v clang++ >/dev/null; then
	echo "SKIP: clang not found (Debian packages clang, libclang-rt-14-dev)"
	exit 77
fi
if [ ! -f "$build/build.ninja" ]; then
	if ! CC=clang CXX=clang++ meson setup "$build" -Dfuzz=true \
		-Db_sanitize=address,undefined -Db_lundef=false >"$build.setup.log" 2>&1; then
		cat "$build.setup.log"
		echo "FAIL: meson setup $build (clang with libFuzzer: libclang-rt-14-dev)"
		exit 1
	fi
fi
programs=()
for t in $targets; do
	programs+=("tests/fuzz/fuzz_$t")
done
if ! ninja -C "$build" -j "$jobs" "${programs[@]}" >"$build.build.log" 2>&1; then
	tail -n 40 "$build.build.log"
	echo "FAIL: building the fuzz targets"
	exit 1
fi

# -max_len for a target, or nothing (libFuzzer's default: its largest seed).
max_len() {
	fuzz_flags "$1" | grep -o -- '-max_len=[0-9]*'
}

# With NT_FUZZ_MERGE=1: the inputs of the scratch corpus that reach new edges, copied into
# the committed one; prints ", N merged into DIR" (nothing without NT_FUZZ_MERGE).
merge() {
	[ "${NT_FUZZ_MERGE:-0}" = 1 ] || return 0
	local dir=tests/fuzz/corpus/$1 before after
	before=$(ls "$dir" | wc -l)
	"$build/tests/fuzz/fuzz_$1" -merge=1 -use_counters=0 "$dir" "$2" $(max_len "$1") \
		>"$build/fuzz-$1.merge.log" 2>&1 ||
		{ echo ", merge FAILED (log: $build/fuzz-$1.merge.log)"; return 0; }
	after=$(ls "$dir" | wc -l)
	echo ", $((after - before)) merged into $dir"
}

failed=0
for t in $targets; do
	work=$build/fuzz-corpus/$t findings=$build/fuzz-findings/$t log=$build/fuzz-$t.log
	mkdir -p "$work" "$findings"
	TIMEFORMAT='%U %S'
	{ time "$build/tests/fuzz/fuzz_$t" "$work" "tests/fuzz/corpus/$t" \
		-max_total_time="$seconds" $(fuzz_flags "$t") -artifact_prefix="$findings/" \
		>"$log" 2>&1; } 2>"$log.cpu"
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	cpu_rate=$(awk -v e="${execs:-0}" '{ printf "%d", ($1 + $2 > 0 ? e / ($1 + $2) : 0) }' \
		"$log.cpu")
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p' <<<"$last")
	if [ "$rc" -ne 0 ] || grep -qE '^(==[0-9]+==ERROR|SUMMARY: )' "$log"; then
		failed=$((failed + 1))
		echo "fuzz_$t: FINDING after ${execs:-?} execs (exit $rc): $(ls "$findings" | tail -n 1)"
		grep -E '^(==[0-9]+==ERROR|SUMMARY: |.*runtime error:)' "$log" | head -n 5 | sed 's/^/  /'
		echo "  log: $log"
	else
		echo "fuzz_$t: ${execs:-?} execs in ${seconds} s (${rate:-?}/s, ${cpu_rate}/CPU-s)," \
			"cov: ${cov:-?}" \
			"ft: ${ft:-?}, corpus ${corp:-?}$(merge "$t" "$work")"
	fi
done
[ "$failed" -eq 0 ]
