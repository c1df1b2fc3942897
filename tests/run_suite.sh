#!/usr/bin/env bash
# The whole test suite: builds nanotrace three ways and runs every test in each.
#   plain        -O2 with assertions
#   asan-ubsan   AddressSanitizer + UndefinedBehaviorSanitizer (every error is fatal)
#   tsan         ThreadSanitizer (atomics mapped to __atomic builtins; see writer/core/nt_atomic.h)
# Ends with one line "N passed, N failed", followed by ", N skipped" when tests skipped (a
# missing optional tool: tests/README.md); exits non-zero if anything failed.
# With CI=true a skipped test counts as failed: CI installs everything (.ci/packages), so a
# skip there is a missing install step.
# NT_JOBS=N caps the parallel jobs (default: all cores).
set -u
cd "$(dirname "$0")/.."
jobs=${NT_JOBS:-$(nproc)}
passed=0
failed=0
skipped=0

# In CI a missing tool fails configuration outright (meson_options.txt).
ci_opts=()
if [ "${CI:-}" = true ]; then
	ci_opts=(-Dcmocka=enabled -Dflatc=enabled)
fi

run_config() {
	local name=$1 dir=build-suite-$1
	shift
	echo "=== $name"
	if [ ! -f "$dir/build.ninja" ]; then
		if ! meson setup "$dir" "${ci_opts[@]}" "$@" >"$dir.setup.log" 2>&1; then
			cat "$dir.setup.log"
			echo "FAIL: meson setup ($name)"
			failed=$((failed + 1))
			return
		fi
	fi
	if ! ninja -C "$dir" -j "$jobs" >"$dir.build.log" 2>&1; then
		tail -n 40 "$dir.build.log"
		echo "FAIL: build ($name)"
		failed=$((failed + 1))
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
		return
	fi
	passed=$((passed + ok))
	failed=$((failed + fail))
	if [ "$skip" -gt 0 ]; then
		grep -E '^ *[0-9]+/[0-9]+ .* SKIP ' "$dir.test.log" | sed "s/^/SKIPPED ($name): /"
		if [ "${CI:-}" = true ]; then
			echo "FAIL: $skip skipped in $name: CI installs every tool (.ci/packages), nothing may skip"
			failed=$((failed + skip))
		else
			skipped=$((skipped + skip))
		fi
	fi
}

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

run_config plain
run_config asan-ubsan -Db_sanitize=address,undefined -Db_lundef=false
run_config tsan -Db_sanitize=thread -Db_lundef=false

if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
