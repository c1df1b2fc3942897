"""The benchmark programs' command lines (bench/nt_bench_opts.h) and their scratch files
(bench/nt_bench_scratch.h): a word that is no option, a missing value, a value that is no
whole number or lies outside its range is refused by name with exit status 2, never run
with a default instead; and a run leaves nothing in $TMPDIR, its files having lived in a
private directory of its own."""
import os
import stat
import subprocess
import tempfile

import pytest

from conftest import program

BENCH = os.environ['NT_BENCH_DIR']
NAMES = ['nt_bench', 'nt_bench_args', 'nt_bench_blocking', 'nt_bench_bundle',
         'nt_bench_manager', 'nt_bench_reader', 'nt_bench_saver', 'nt_bench_ship',
         'nt_bench_soak', 'nt_bench_t2event']


def run(name, *args, env=None):
    return subprocess.run([os.path.join(BENCH, name), *args], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.parametrize('name', NAMES)
def test_unknown_option_is_refused_with_usage(name):
    p = run(name, '--bogus')
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "%s: unknown option '--bogus'" % name in p.stderr, p.stderr
    assert 'usage: %s' % name in p.stderr, p.stderr


@pytest.mark.parametrize('args,why', [
    (['--reps', '0'], "--reps needs a whole number from 1 to 15, not '0'"),
    (['--reps', '3x'], "--reps needs a whole number from 1 to 15, not '3x'"),
    (['--reps', '-1'], "--reps needs a whole number from 1 to 15, not '-1'"),
    (['--events', '99999999999999999999'], "--events needs a whole number"),
    (['--events'], '--events needs a value (N)'),
])
def test_bad_values_are_refused_by_name(args, why):
    p = run('nt_bench_saver', *args)
    assert p.returncode == 2, (args, p.returncode, p.stderr)
    assert why in p.stderr, (args, p.stderr)


def test_a_run_keeps_its_files_in_a_private_directory_and_leaves_nothing():
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TMPDIR=tmp)
        p = subprocess.Popen([os.path.join(BENCH, 'nt_bench_saver'), '--events', '600000',
                              '--reps', '1'], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, env=env)
        modes = set()
        while p.poll() is None:
            for name in os.listdir(tmp):
                try:
                    modes.add((name[:9], stat.S_IMODE(os.lstat(os.path.join(tmp, name)).st_mode)))
                except FileNotFoundError:
                    pass
        assert p.wait() == 0, p.stderr.read()
        assert modes == {('nt-bench-', 0o700)}, modes
        assert os.listdir(tmp) == [], os.listdir(tmp)
        p = run('nt_bench_bundle', '--trace-record', program('NT_TRACE_RECORD'),
                '--sections', '3', '--events', '5', '--reps', '1', env=env)
        assert p.returncode == 0, p.stderr
        assert os.listdir(tmp) == [], os.listdir(tmp)
