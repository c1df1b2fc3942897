"""trace-dump --follow against a running nanotrace-demo: it renders while the demo records
(oneshot, circular and streaming file-backed arenas), exits 0 when the demo finishes, and
what it showed equals trace-dump of the finished archive, event for event (the same lines
up to column spacing, each thread's in the same order; a circular archive keeps only its
newest events, which must be the end of what was followed). A killed demo ends the follow
(its pid is gone) with what the file holds; a Trace2 program followed as EVENT, NORMAL or
PERF is byte for byte trace-dump of its finished file; SIGINT stops it at once with exit 130; a
missing or broken archive is exit 2 with a message naming it, a bad command line exit 1.

The demo runs with NANOTRACE_CLOCK=monotonic: a live TSC arena's times use the calibrated
rate, which the finished archive refines (nanotrace_reader.h, LIVE FOLLOW).
Run by meson (suite cli) with NT_TRACE_DUMP, NT_DEMO and NT_WORKDIR.
"""
import json
import os
import signal
import subprocess
import time
from collections import defaultdict

import pytest

from conftest import program

TRACE_DUMP, DEMO = program('NT_TRACE_DUMP'), program('NT_DEMO')
ENV = dict(os.environ, NANOTRACE_CLOCK='monotonic')


@pytest.fixture
def work(workdir, request):
    d = os.path.join(workdir, 'follow-' + request.node.name.replace('[', '-').rstrip(']'))
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    return d


def follow(archive, *extra):
    return subprocess.Popen([TRACE_DUMP, '--follow', '--wait', '30', *extra, archive],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)


def demo(archive, mode, ms, *extra):
    return subprocess.Popen([DEMO, archive, '--mode', mode, '--duration-ms', str(ms),
                             '--threads', '4', *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)


def events(text):
    """Event lines, spacing normalized, by thread column (gap lines left out)."""
    lines = [l.split() for l in text.splitlines()[1:] if l and not l.startswith('--')]
    by_thread = defaultdict(list)
    for words in lines:
        by_thread[words[1]].append(' '.join(words))
    return lines, by_thread


def dump(archive):
    p = subprocess.run([TRACE_DUMP, archive], capture_output=True, env=ENV)
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout.decode('utf-8', 'replace')


def finish(f, timeout=60):
    out, err = f.communicate(timeout=timeout)
    return f.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')


@pytest.mark.parametrize('mode', ['oneshot', 'streaming'])
def test_follow_equals_final(work, mode):
    archive = os.path.join(work, 'a.ntrace')
    f = follow(archive)  # started first: it waits for the file to appear
    time.sleep(0.2)
    d = demo(archive, mode, 1000)
    assert d.wait(timeout=60) == 0, d.stderr.read().decode()
    rc, out, err = finish(f)
    assert rc == 0, err
    final = dump(archive)
    assert out.splitlines()[0].split() == final.splitlines()[0].split()
    got, got_by = events(out)
    want, want_by = events(final)
    assert len(got) == len(want) and len(want) > 1000
    assert got_by == want_by  # each thread's events, in order, each once
    assert sorted(map(' '.join, got)) == sorted(map(' '.join, want))
    gaps = [l for l in out.splitlines() if l.startswith('-- gap')]
    assert gaps == [l for l in final.splitlines() if l.startswith('-- gap')]


def test_follow_circular(work):
    archive = os.path.join(work, 'c.ntrace')
    f = follow(archive)
    time.sleep(0.2)
    d = demo(archive, 'circular', 1000, '--buffer-size', '262144')
    assert d.wait(timeout=60) == 0, d.stderr.read().decode()
    rc, out, err = finish(f)
    assert rc == 0, err
    _, got_by = events(out)
    _, want_by = events(dump(archive))
    assert set(want_by) <= set(got_by)
    for thread, want in want_by.items():
        got = got_by[thread]
        assert got[len(got) - len(want):] == want, thread  # the newest: what was followed last
    # The demo overwrites far more than a poll can copy: followed, those are gaps.
    assert 'lost before they could be shown' in err


def test_follow_killed_writer(work):
    archive = os.path.join(work, 'k.ntrace')
    d = demo(archive, 'oneshot', 60000)
    for _ in range(500):
        if os.path.exists(archive):
            break
        time.sleep(0.01)
    f = follow(archive)
    time.sleep(0.7)
    d.send_signal(signal.SIGKILL)
    d.wait()
    start = time.monotonic()
    rc, out, err = finish(f, timeout=10)
    assert time.monotonic() - start < 5
    assert rc == 0 and 'ended without finishing' in err, err
    _, got_by = events(out)
    _, want_by = events(dump(archive))
    assert got_by == want_by


def test_follow_sigint(work):
    archive = os.path.join(work, 'i.ntrace')
    d = demo(archive, 'streaming', 60000)
    try:
        f = follow(archive)
        time.sleep(0.8)
        f.send_signal(signal.SIGINT)
        start = time.monotonic()
        rc, out, err = finish(f, timeout=10)
        assert time.monotonic() - start < 2
        assert rc == 130, err
        assert out.splitlines()[0].split()[0] == 'TIME(s)' and len(out.splitlines()) > 1
    finally:
        d.kill()
        d.wait()


def test_follow_refusals(work):
    missing = os.path.join(work, 'missing.ntrace')
    p = subprocess.run([TRACE_DUMP, '--follow', '--wait', '0.2', missing], capture_output=True)
    assert p.returncode == 2 and b'missing.ntrace: does not exist' in p.stderr
    junk = os.path.join(work, 'junk.ntrace')
    with open(junk, 'wb') as fh:
        fh.write(b'not an archive\n' * 100)
    p = subprocess.run([TRACE_DUMP, '--follow', junk], capture_output=True, timeout=10)
    assert p.returncode == 2 and b'junk.ntrace' in p.stderr
    for args in (['--follow'], ['--follow', junk, junk], ['--follow', '--format', 'chrome', junk],
                 ['--follow', '--interval', '0', junk], ['--follow', '--stats', junk]):
        p = subprocess.run([TRACE_DUMP, *args], capture_output=True, timeout=10)
        assert p.returncode == 1 and p.stderr.startswith(b'trace-dump: '), args


@pytest.mark.parametrize('fmt', ['event', 'normal', 'perf'])
def test_follow_trace2(work, fmt):
    """A Trace2 program (t2_program: every message, threads, a child) followed as Git's
    EVENT, NORMAL or PERF: byte for byte what trace-dump renders from the finished file."""
    t2 = program('NT_T2_PROGRAM')
    archive = os.path.join(work, 't2.ntrace')
    f = follow(archive, '--format', fmt, '--interval', '1')
    time.sleep(0.2)
    p = subprocess.run([t2, '--threads', '3'], env=dict(ENV, NANOTRACE=archive),
                       capture_output=True, timeout=60)
    assert p.returncode == 3, p.stderr.decode()  # t2_program exits 3 on purpose
    rc, out, err = finish(f)
    assert rc == 0, err
    final = subprocess.run([TRACE_DUMP, '--format', fmt, archive], capture_output=True, env=ENV)
    assert final.returncode == 0
    want = final.stdout.decode('utf-8', 'replace')
    assert out.count('\n') > 20
    if out != want:
        # The contract (nanotrace_reader.h, LIVE FOLLOW): a poll is merged by time, and an
        # event published after another thread's later one was delivered comes in a later
        # poll (a writer preempted between its clock read and its store): the same lines,
        # each thread's in its order, so only lines of different threads may trade places.
        assert sorted(out.splitlines()) == sorted(want.splitlines())
        if fmt != 'normal':  # NORMAL lines do not name their thread
            assert by_thread(out, fmt) == by_thread(want, fmt)


def by_thread(text, fmt):
    """Each thread's lines of a Trace2 rendering, in order (EVENT's "thread" key, PERF's
    third column)."""
    lines = defaultdict(list)
    for line in text.splitlines():
        thread = json.loads(line)['thread'] if fmt == 'event' else line.split('|')[2].strip()
        lines[thread].append(line)
    return lines
