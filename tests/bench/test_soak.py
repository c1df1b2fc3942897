"""The streaming soak (bench/nt_bench_soak.c) in its smoke size: two writers at full rate for
a few seconds into one streaming session whose saver shares their CPUs. What is checked is
the soak's own verdict, never a speed: every event made is decoded or counted as dropped,
exactly, and private memory stays flat."""
import json
import subprocess

from conftest import program

SOAK = program('NT_BENCH_SOAK')


def test_soak_accounts_for_every_event_in_flat_memory():
    p = subprocess.run([SOAK, '--threads', '2', '--seconds', '4', '--json'],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r['soak_accounted'] is True, r
    assert r['soak_made'] > 0 and r['soak_decoded'] > 0, r
    assert r['soak_decoded'] + r['soak_dropped'] == r['soak_made'], r
    if r['soak_memory_flat'] is None:  # a ThreadSanitizer build: its shadow memory grows
        assert 'ThreadSanitizer' in r['soak_memory_flat_reason'], r
    else:
        assert r['soak_memory_flat'] is True, r
        assert r['soak_private_kb_max'] <= r['soak_private_kb_start'] + 4096, r


def test_soak_refuses_bad_arguments():
    for args in (['--threads', '0'], ['--seconds', '1'], ['--seconds', 'x'], ['--bogus']):
        p = subprocess.run([SOAK, *args], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, (args, p.returncode)
        assert 'nt_bench_soak' in p.stderr or 'usage' in p.stderr, (args, p.stderr)
