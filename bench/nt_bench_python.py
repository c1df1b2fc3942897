#!/usr/bin/python3
"""nt_bench_python - how fast the Python package `nanotrace` reads events (issue 16: at
least 2 M events/s), beside the C library's own visit of the same archive:

  count      `for ev in trace: n += 1` (the Event objects made, nothing read from them)
  fields     every event's time_ns, kind, category, name, thread, process and args read
  c_visit    trace-dump --stats on the same archive (a C visit, the process started included)

in time and stream order, interleaved, each the median of --reps runs, per wall-clock second
and (keys *_cpu_mev_s) per CPU second of the iterating thread, which a busy machine
disturbs less (a decompressing helper thread's time is not counted). The archive is a
nanotrace-demo recording (request-server shape: Begin/End pairs, instants and counters with
arguments, complete events) of about --events events, made first in a private folder.

    PYTHONPATH=build/reader/python /usr/bin/python3 bench/nt_bench_python.py \\
        --demo build/writer/nanotrace-demo --trace-dump build/reader/trace-dump [--json]

Figures are printed, never judged (a benchmark, not a test).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import nanotrace


def make_archive(demo, folder, events):
    path = os.path.join(folder, 'bench.ntrace')
    threads = 4
    # about 10 events per request (tests/README: the demo's shape), bounded by its limits
    requests = max(1, min(1000000, events // (10 * threads)))
    arena = max(1 << 22, min(1 << 32, events * 64))
    subprocess.run([demo, path, '--threads', str(threads), '--requests', str(requests),
                    '--buffer-size', str(arena)], check=True, capture_output=True)
    return path


def run_count(trace, order):
    n = 0
    t0, c0 = time.perf_counter(), time.thread_time()
    for _ in trace.events(order):
        n += 1
    return n, time.perf_counter() - t0, time.thread_time() - c0


def run_fields(trace, order):
    n = 0
    t0, c0 = time.perf_counter(), time.thread_time()
    for ev in trace.events(order):
        ev.time_ns, ev.kind, ev.category, ev.name, ev.thread, ev.process, ev.args
        n += 1
    return n, time.perf_counter() - t0, time.thread_time() - c0


def run_c_visit(trace_dump, path, order):
    t0 = time.perf_counter()
    subprocess.run([trace_dump, '--stats', '--order', order, path], check=True,
                   stdout=subprocess.DEVNULL)
    return None, time.perf_counter() - t0, None


def measure(path, trace_dump, reps):
    trace = nanotrace.open(path)
    events = trace.stats()['events']
    kinds = [('count', run_count), ('fields', run_fields)]
    samples = {}
    for _ in range(reps):  # interleaved: drift hits every figure alike
        for order in ('time', 'stream'):
            for name, fn in kinds:
                n, dt, cpu = fn(trace, order)
                if n != events:
                    sys.exit('nt_bench_python: %s read %d events of %d' % (name, n, events))
                samples.setdefault('%s_%s' % (name, order), []).append(dt)
                samples.setdefault('%s_%s_cpu' % (name, order), []).append(cpu)
            if trace_dump:
                _, dt, _ = run_c_visit(trace_dump, path, order)
                samples.setdefault('c_visit_%s' % order, []).append(dt)
    trace.close()
    out = {'events': events, 'reps': reps}
    for key, dts in samples.items():
        out[key + '_mev_s'] = round(events / max(statistics.median(dts), 1e-9) / 1e6, 3)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--demo', required=True, help='nanotrace-demo, to record the archive')
    ap.add_argument('--trace-dump', help='trace-dump, for the C visit beside (optional)')
    ap.add_argument('--events', type=int, default=2000000, help='about how many (default 2 M)')
    ap.add_argument('--reps', type=int, default=5, help='runs per figure (median; default 5)')
    ap.add_argument('--json', action='store_true', help='one JSON object instead of lines')
    a = ap.parse_args()
    if a.events < 1 or a.reps < 1:
        ap.error('--events and --reps must be at least 1')
    with tempfile.TemporaryDirectory(prefix='nt-bench-python-') as folder:
        res = measure(make_archive(a.demo, folder, a.events), a.trace_dump, a.reps)
    res['python'] = sys.version.split()[0]
    res['executable'] = sys.executable
    if a.json:
        print(json.dumps(res, sort_keys=True))
        return
    print('nanotrace Python package, %d events, median of %d, Python %s (%s)' % (
        res['events'], a.reps, res['python'], res['executable']))
    for order in ('time', 'stream'):
        line = '  %-6s  count %6.2f M ev/s   fields %6.2f M ev/s' % (
            order, res['count_%s_mev_s' % order], res['fields_%s_mev_s' % order])
        if 'c_visit_%s_mev_s' % order in res:
            line += '   trace-dump --stats %6.2f M ev/s' % res['c_visit_%s_mev_s' % order]
        print(line)
        print('          per CPU second of the iterating thread: count %6.2f M ev/s   fields '
              '%6.2f M ev/s' % (res['count_%s_cpu_mev_s' % order],
                                res['fields_%s_cpu_mev_s' % order]))


if __name__ == '__main__':
    main()
