#!/usr/bin/env bash
# The whole test suite: builds nanotrace five ways and runs every test in each, then fuzzes
# every libFuzzer target for 20 s (tests/fuzz/run_fuzz.sh) and prints the benchmark report.
#   plain              gcc/g++, -O2 with assertions
#   asan-ubsan         gcc/g++, AddressSanitizer + UndefinedBehaviorSanitizer (every error is
#                      fatal)
#   tsan               gcc/g++, ThreadSanitizer (atomics mapped to __atomic builtins; see
#                      writer/core/nt_atomic.h)
#   clang              clang/clang++, -O2 with assertions
#   clang-asan-ubsan   clang/clang++, AddressSanitizer + UndefinedBehaviorSanitizer
# Every build is -Werror (meson.build) and compiles C as gnu11 and C++ as C++17.
# Ends with one line "N passed, N failed", followed by ", N skipped" when tests skipped (a
# missing optional tool: tests/README.md), after "=== failed" and a line per failure when
# anything failed (each test with its configuration); exits non-zero if anything failed.
# With CI=true a skipped test counts as failed: CI installs everything (.ci/packages), so a
# skip there is a missing install step.
# NT_JOBS=N caps the parallel jobs (default: all cores).
set -u
cd "$(dirname "$0")/.."
jobs=${NT_JOBS:-$(nproc)}
passed=0
failed=0
skipped=0
# What failed, a line each, repeated just before the last line: a log read from its end
# (CI shows the tail) names them.
failed_names=()
# Why, in a few lines per configuration: each failed test's own failure lines (a Python
# check's "FAIL", an assertion, cmocka's error, a sanitizer's summary), since CI keeps only
# the tail of the log.
failed_why=()

# In CI a missing tool fails configuration outright (meson_options.txt).
ci_opts=()
if [ "${CI:-}" = true ]; then
	ci_opts=(-Dcmocka=enabled -Dflatc=enabled)
fi

# tool_missing NAME WHY: a step whose tool is not installed. Outside CI it is skipped, like a
# missing test tool; CI installs every tool (.ci/packages), so there it fails.
tool_missing() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL ($1): $2: CI installs it (.ci/packages)"
		failed=$((failed + 1))
		failed_names+=("$1: $2")
	else
		echo "SKIPPED ($1): $2"
		skipped=$((skipped + 1))
	fi
}

# run_config NAME CC CXX [MESON_SETUP_OPTIONS...]: build build-suite-NAME with compilers CC and
# CXX (set at setup; an existing build directory keeps its compilers) and run every test.
run_config() {
	local name=$1 dir=build-suite-$1 c=$2 cxx=$3
	shift 3
	local start=$SECONDS
	echo "=== $name ($c, $cxx)"
	if ! command -v "$c" >/dev/null || ! command -v "$cxx" >/dev/null; then
		tool_missing "$name" "$c or $cxx not found (Debian packages gcc, g++, clang)"
		return
	fi
	if [ ! -f "$dir/build.ninja" ]; then
		if ! CC=$c CXX=$cxx meson setup "$dir" "${ci_opts[@]}" "$@" >"$dir.setup.log" 2>&1; then
			cat "$dir.setup.log"
			echo "FAIL: meson setup ($name)"
			failed=$((failed + 1))
			failed_names+=("$name: meson setup")
			return
		fi
	fi
	if ! ninja -C "$dir" -j "$jobs" >"$dir.build.log" 2>&1; then
		tail -n 40 "$dir.build.log"
		echo "FAIL: build ($name)"
		failed=$((failed + 1))
		failed_names+=("$name: build")
		return
	fi
	meson test -C "$dir" --num-processes "$jobs" --print-errorlogs 2>&1 | tee "$dir.test.log" |
		grep -E '^ *[0-9]+/[0-9]+ ' || true
	local ok fail skip
	ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$dir.test.log" | tail -n 1)
	fail=$(awk '/^(Fail|Unexpected Pass|Timeout): /{s += $2} END {print s + 0}' "$dir.test.log")
	skip=$(awk '/^Skipped: /{s += $2} END {print s + 0}' "$dir.test.log")
	if [ -z "$ok" ]; then
		echo "FAIL: meson test ($name) did not finish"
		failed=$((failed + 1))
		failed_names+=("$name: meson test did not finish")
		return
	fi
	passed=$((passed + ok))
	failed=$((failed + fail))
	local line # each failed test once (meson repeats it in its summary)
	while IFS= read -r line; do
		failed_names+=("$name: $line")
	done < <(grep -E '^ *[0-9]+/[0-9]+ .* (FAIL|TIMEOUT|UNEXPECTEDPASS|ERROR) ' "$dir.test.log" |
		 sed -E 's/^ *[0-9]+\/[0-9]+ +//; s/  +/ /g' | awk '!seen[$0]++')
	while IFS= read -r line; do
		failed_why+=("$name: ${line:0:300}")
	done < <(grep -E '^(FAIL |ERROR: |E +[A-Za-z]*Error|SUMMARY: |WARNING: ThreadSanitizer)|error: Failure|\[  FAILED  \] [a-z_]' \
		 "$dir.test.log" | awk '!seen[$0]++' | head -n 8)
	echo "--- $name: $ok passed, $fail failed, $skip skipped in $((SECONDS - start)) s"
	if [ "$skip" -gt 0 ]; then
		grep -E '^ *[0-9]+/[0-9]+ .* SKIP ' "$dir.test.log" | sed "s/^/SKIPPED ($name): /"
		if [ "${CI:-}" = true ]; then
			echo "FAIL: $skip skipped in $name: CI installs every tool (.ci/packages), nothing may skip"
			failed=$((failed + skip))
			failed_names+=("$name: $skip skipped (CI installs every tool)")
		else
			skipped=$((skipped + skip))
		fi
	fi
}

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

run_config plain gcc g++
run_config asan-ubsan gcc g++ -Db_sanitize=address,undefined -Db_lundef=false
run_config tsan gcc g++ -Db_sanitize=thread -Db_lundef=false
run_config clang clang clang++
run_config clang-asan-ubsan clang clang++ -Db_sanitize=address,undefined -Db_lundef=false

# Coverage-guided fuzzing (tests/fuzz): every libFuzzer target for NT_FUZZ_SECONDS (default 20)
# on the clang ASan+UBSan fuzz build, one after another (12 targets: about 4 minutes plus the
# build); a finding fails the suite. Without clang it is a skip, like a missing compiler.
run_fuzz() {
	local start=$SECONDS
	echo "=== fuzz (${NT_FUZZ_SECONDS:-20} s per target, build-suite-fuzz)"
	NT_FUZZ_BUILD=build-suite-fuzz NT_JOBS=$jobs bash tests/fuzz/run_fuzz.sh "${NT_FUZZ_SECONDS:-20}"
	local rc=$?
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
		echo "--- fuzz: no finding in $((SECONDS - start)) s"
	elif [ "$rc" -eq 77 ]; then
		tool_missing fuzz "clang not found (Debian packages clang, libclang-rt-14-dev)"
	else
		echo "FAIL: fuzz"
		failed=$((failed + 1))
		failed_names+=("fuzz: a finding or a failed build (above)")
	fi
}
run_fuzz

# The benchmark report, quick size, on the plain build: every run (CI included) prints
# nanotrace's ratios beside LTTng-UST and babeltrace2 (bench/nt_report.py). A peer that is
# not installed is reported as such, not a failure; a bench program that fails is.
run_report() {
	local dir=build-suite-plain start=$SECONDS
	echo "=== bench report (quick, $dir)"
	if [ ! -x "$dir/bench/nt_bench_peers" ]; then
		echo "FAIL: bench report: $dir/bench/nt_bench_peers was not built"
		failed=$((failed + 1))
		failed_names+=("bench report: nt_bench_peers was not built")
		return
	fi
	if python3 bench/nt_report.py --build "$dir" --quick --svg "$dir/nt_report.svg" --json; then
		passed=$((passed + 1))
		echo "--- bench report: $dir/nt_report.svg in $((SECONDS - start)) s"
	else
		echo "FAIL: bench report"
		failed=$((failed + 1))
		failed_names+=("bench report: a benchmark failed (above)")
	fi
}
run_report

if [ "${#failed_names[@]}" -gt 0 ]; then
	echo "=== failed"
	printf '  %s\n' "${failed_names[@]}"
fi
if [ "${#failed_why[@]}" -gt 0 ]; then
	echo "=== why (the failed tests' own lines; the whole logs: build-suite-*.test.log)"
	printf '  %s\n' "${failed_why[@]}"
fi
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
