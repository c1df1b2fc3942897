"""Streaming's blocking disposition under trace-record: NANOTRACE_BLOCKING_TIMEOUT in the
traced command's environment reaches its provider session (nt_start() reads it when the
trace manager initializes it), whose writers then wait for the manager's saver instead of
dropping: 2 unpaced writers through a 64 KiB buffer lose nothing, and `trace-dump --stats`
shows the section's waits (its header's totals, equal to the sum of its threads'). Without
the variable the section records no blocking (the default: never wait).

Run by meson (suite manager) with NT_TRACE_RECORD, NT_TRACE_DUMP, NT_PROVIDER_PROG.
"""
import os
import re
import subprocess

from conftest import program

RECORD, DUMP, PROG = (program('NT_TRACE_RECORD'), program('NT_TRACE_DUMP'),
                      program('NT_PROVIDER_PROG'))
THREADS, EVENTS = 2, 100000


def record(tmp_path, name, blocking):
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path), TMPDIR=str(tmp_path))
    env.pop('NANOTRACE_MANAGER', None)  # trace-record embeds a manager
    env.pop('NANOTRACE_BLOCKING_TIMEOUT', None)
    if blocking:
        env['NANOTRACE_BLOCKING_TIMEOUT'] = blocking
    out = str(tmp_path / name)
    p = subprocess.run([RECORD, '-o', out, '--buffering-mode', 'streaming', '--buffer-size',
                        '64K', '--', PROG, '--sync', '--threads', str(THREADS), '--events',
                        str(EVENTS), '--finish'], env=env, capture_output=True, text=True,
                       timeout=150)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([DUMP, '--stats', out], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_blocking_provider_loses_nothing(tmp_path):
    text = record(tmp_path, 'blocking.ntrace', '10000000')
    m = re.search(r'events decoded (\d+), dropped (\d+) ', text)
    assert m, text
    assert (int(m.group(1)), int(m.group(2))) == (THREADS * EVENTS, 0), text
    m = re.search(r'^    blocked: (\d+) waits for the saver, .* in all, (\d+) ended in a drop '
                  r'\(timeout (\d+) us\)$', text, re.M)
    assert m, text
    waits, dropped_waits, timeout = (int(g) for g in m.groups())
    assert dropped_waits == 0 and timeout == 10000000, text
    per_thread = [int(w) for w in re.findall(r'^  thread \d+ .*: \d+ events, blocked (\d+) '
                                             r'waits', text, re.M)]
    assert sum(per_thread) == waits, text
    # the bundle's own line: every section's waits (its one provider's)
    m = re.search(r'^blocked: (\d+) waits for the saver, .* in all, (\d+) ended in a drop '
                  r'\(timeout (\d+) us\)$', text, re.M)
    assert m and tuple(int(g) for g in m.groups()) == (waits, dropped_waits, timeout), text


def test_without_the_variable_nothing_waits(tmp_path):
    text = record(tmp_path, 'default.ntrace', None)
    assert 'blocked' not in text, text
