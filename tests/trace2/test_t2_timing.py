"""Trace2 run times do not depend on the writer's start-up TSC calibration.

t2_timing records a thread and a child that each live ~200 ms, with the start-up calibration
made 30% too fast or too slow (the writer's test-only hook), and prints the spans it measured
itself. The t_rel of thread_exit and child_exit, in EVENT and in PERF, must lie within those
spans (0.1% + 1 us of rounding), and no thread may outlive its process (t_rel <= the exit
t_abs). A writer that converts run times with the start-up rate is ~30% off.
"""
import json
import os
import subprocess

import pytest

from conftest import program

PROG, DUMP = program('NT_T2_TIMING'), program('NT_TRACE_DUMP')
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def dump(fmt, path):
    p = subprocess.run([DUMP, '--format', fmt, path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    check(p.returncode == 0, 'trace-dump --format %s: %s' % (fmt, p.stderr.decode()))
    return p.stdout.decode('utf-8').splitlines()


def within(t_rel_us, span, what):
    inner, outer = span
    lo, hi = inner * 0.999 - 1, outer * 1.001 + 1
    check(lo <= t_rel_us <= hi, '%s: t_rel %.6f s, measured %.6f .. %.6f s' %
          (what, t_rel_us / 1e6, inner / 1e6, outer / 1e6))


def perf_t_rel(perf, event, thread):
    for line in perf:
        cols = [c.strip() for c in line.split(' | ')]
        if cols[3] == event and cols[2] == thread:
            return round(float(cols[6]) * 1e6)
    check(False, 'perf has no %s on %s' % (event, thread))
    return -1


def run(tmp, skew):
    d = os.path.join(tmp, 'skew%d' % skew)
    os.mkdir(d)
    env = {k: v for k, v in os.environ.items() if not k.startswith('NANOTRACE')}
    env['NANOTRACE'] = d
    p = subprocess.run([PROG, '--skew', str(skew)], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    out = p.stdout.decode()
    if not check(p.returncode == 0, 't2_timing --skew %d: exit %d: %s' %
                 (skew, p.returncode, p.stderr.decode())):
        return
    if 'clock monotonic' in out:
        pytest.skip('the session does not read the TSC: no calibration to get wrong')
    spans = {}
    for line in out.splitlines():
        what, inner, outer = line.split()
        spans[what] = (int(inner), int(outer))
    events = [json.loads(x) for x in dump('event', d)]
    perf = dump('perf', d)
    th = [e for e in events if e['event'] == 'thread_exit']
    ch = [e for e in events if e['event'] == 'child_exit']
    ex = [e for e in events if e['event'] == 'exit']
    if not check(len(th) == 1 and len(ch) == 1 and len(ex) == 1,
                 'skew %d: want one thread_exit, child_exit and exit: %s' % (skew, events)):
        return
    tag = 'skew %+d%%' % skew
    for name, ev in (('thread', th[0]), ('child', ch[0])):
        t_rel = round(ev['t_rel'] * 1e6)
        within(t_rel, spans[name], '%s %s EVENT' % (tag, name))
        within(perf_t_rel(perf, ev['event'], ev['thread']), spans[name],
               '%s %s PERF' % (tag, name))
    check(th[0]['t_rel'] <= ex[0]['t_abs'], '%s: thread lived %.6f s in a %.6f s process' %
          (tag, th[0]['t_rel'], ex[0]['t_abs']))


@pytest.mark.parametrize('skew', (30, -30, 0))
def test_run_times_ignore_calibration(skew, tmp_path):
    failures.clear()
    run(str(tmp_path), skew)
    assert not failures, '\n'.join(failures)
