#!/usr/bin/env python3
"""nt_report.py - nanotrace beside the peers a user would pick, in one run: a table on the
terminal, one JSON object (--json: the last line) and an SVG plot of ns/event per thread by
thread count (nanotrace, LTTng-UST, the floor).

    python3 bench/nt_report.py [--build DIR] [--quick | --smoke] [--json] [--svg FILE]

It runs the C programs of bench/ (the measurements stay in C, next to the code they
measure) and merges their JSON:
  nt_bench_peers   the floor, nanotrace and LTTng-UST at 1-16 threads, interleaved rounds,
                   ratios with their spread; bytes per event on disk; streaming (--part)
  nt_bench_manager the trace manager's streaming sections beside oneshot (--part sections)
  nt_bench_reader  decode in both orders, every trace-dump rendering, the reader's memory,
                   bytes per event of Chrome JSON and Perfetto (mixed shape)
  nt_bench_bundle  a bundle trace-record made of many short processes beside one archive
                   of the same events: text and --stats, the reader's memory (issue 29;
                   20,000 sections in the full report, 2,000 in --quick)
and the demo's Chrome JSON and Perfetto renderings by trace-dump itself (issue 28), the
instructions per event of bench/nt_bench_instr under valgrind's callgrind (nt_report_instr.py),
and drives what C should not: LTTng's own session daemon in a private LTTNG_HOME (as root,
inside a private mount namespace, so the traced process registers with this daemon and no
system one), and babeltrace2 reading the LTTng trace of the same events. Python's standard
library only (Debian's python3).

A peer that is not installed is reported as such (null with a "<key>_reason" in the JSON),
never as a failure; a bench program that crashes is a failure (exit 1).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import nt_report_instr
import nt_report_svg

HERE = os.path.dirname(os.path.abspath(__file__))

# Every key issue 14 asks the JSON to carry (numbers, or null beside "<key>_reason").
KEYS = [
    'ns_per_event_1t', 'floor_ns', 'ratio_1t', 'ratio_mixed_1t', 'ratio_threads_max',
    'lttng_ns_per_event_1t', 'speedup_vs_lttng', 'bytes_per_event_mixed',
    'lttng_bytes_per_event_mixed', 'disk_bytes_per_event_zone', 'disk_bytes_per_event_mixed',
    'streaming_lost_pct_1t_mixed', 'saver_mb_s', 'plain_write_mb_s', 'reader_mev_s_stream',
    'reader_mev_s_time', 'babeltrace2_mev_s', 'reader_speedup_vs_babeltrace2',
    'render_text_mev_s', 'render_chrome_mev_s', 'render_trace2_normal_mev_s',
    'render_trace2_perf_mev_s', 'render_trace2_event_mev_s', 'reader_anon_kb_1m',
    'reader_anon_kb_10m',
    'import_mb_s',  # issue 15: trace-import reads >= 100 MB/s
    # issue 28: Perfetto's protobuf against Chrome JSON, mixed shape and demo, same run
    # (goals: >= 5x fewer bytes per event, >= 2x the rendering speed)
    'render_perfetto_mev_s', 'chrome_bytes_per_event_mixed', 'perfetto_bytes_per_event_mixed',
    'perfetto_size_ratio_mixed', 'perfetto_speedup_mixed', 'chrome_bytes_per_event_demo',
    'perfetto_bytes_per_event_demo', 'perfetto_size_ratio_demo', 'render_chrome_demo_mev_s',
    'render_perfetto_demo_mev_s', 'perfetto_speedup_demo',
    # issue 26: an arg-less async begin+end pair and a flow step in a scope, each ÷ BEGIN/END
    # in the same repetitions (goal: within 1.15), and their bytes per event on disk
    'async_vs_zone', 'flow_vs_zone', 'disk_bytes_per_event_async', 'disk_bytes_per_event_flow',
    # issue 29: instructions per event (callgrind), floor / zone / mixed, and each ÷ the floor
    'instr_per_event_floor', 'instr_per_event_zone', 'instr_per_event_mixed',
    'instr_ratio_zone', 'instr_ratio_mixed',
    # issue 29: streaming's blocking disposition, 2 unpaced writers, mixed shape, default
    # arena: events lost without and with waiting for the saver, ns per event of each, and
    # the time blocked (a round's total and its longest-waiting thread)
    'blocking_off_lost', 'blocking_off_lost_pct', 'blocking_off_ns_per_event',
    'blocking_on_lost', 'blocking_on_lost_pct', 'blocking_on_ns_per_event', 'blocking_on_waits',
    'blocking_on_waits_ended_in_drop', 'blocking_on_blocked_ms',
    'blocking_on_blocked_ms_max_thread',
    # issue 29: a bundle of short processes (bundle20k_sections of them: 20,000 in the full
    # report) against one archive of the same events, same run (goals: text >= 0.5 of the
    # single archive's events/s, --stats <= 2x its time, memory <= the limit)
    'bundle20k_text_mev_s', 'bundle20k_text_vs_single', 'bundle20k_stats_s',
    'bundle20k_stats_vs_single', 'bundle20k_reader_kb', 'bundle20k_reader_kb_limit',
    # issue 29: one writer at full rate, streaming beside oneshot with the same events, same
    # rounds: bytes per event on disk (goal: within 1.2x), events lost (goal: 0 with a free
    # core) and the writer's ns/event (goal: within 1.05x; the worse shape)
    'streaming_disk_bytes_per_event_zone', 'streaming_disk_bytes_per_event_mixed',
    'streaming_vs_oneshot_bytes_zone', 'streaming_vs_oneshot_bytes_mixed',
    'streaming_lost_pct_zone', 'streaming_lost_pct_mixed', 'streaming_ns_vs_oneshot',
    # and the trace manager's streaming sections (trace-record -m streaming) beside oneshot
    'manager_streaming_disk_bytes_per_event_zone', 'manager_streaming_disk_bytes_per_event_mixed',
    'manager_streaming_vs_oneshot_bytes_zone', 'manager_streaming_vs_oneshot_bytes_mixed',
    'manager_streaming_lost_pct_zone', 'manager_streaming_lost_pct_mixed',
    # issue 27: live OTLP shipping (ship/), one shipper to a loopback receiver: spans/s
    # exported and sent (protobuf + gzip, and without gzip) and bytes per span on the wire
    'ship_spans_s_gzip', 'ship_bytes_per_span_gzip', 'ship_spans_s_none',
    'ship_bytes_per_span_none', 'ship_gzip_size_ratio',
    # issue 27: NANOTRACE_EVENT=af_unix:... (Git's Trace2 socket target): the Trace2 region
    # macros' CPU ns per message on the calling thread, target on ÷ archive alone (goal:
    # within 1.5), the same in wall time, and the forwarder's CPU in a quiet program
    't2_event_archive_ns', 't2_event_target_ns', 't2_event_target_ratio',
    't2_event_target_wall_ratio', 't2_event_private_ratio', 't2_event_forward_cpu_pct',
]

# Sizes per mode: rounds and events per thread of the scaling part, streaming ms, events of
# the reader benchmark and of the LTTng trace babeltrace2 reads, repetitions, the bundle's
# processes (50 events each; trace-record starts about 400 a second on 2 cores).
MODES = {
    'full': dict(rounds=9, events=2000000, stream_ms=2000, read_events=3000000, reps=5,
                 demo_requests=40000, bundle_sections=20000,
                 stream_events=8000000),
    'quick': dict(rounds=5, events=500000, stream_ms=500, read_events=1000000, reps=3,
                  demo_requests=10000, bundle_sections=2000,
                  stream_events=2000000),
    'smoke': dict(rounds=3, events=20000, stream_ms=100, read_events=30000, reps=1,
                  demo_requests=200, bundle_sections=20,
                  stream_events=20000),
}


class BenchError(Exception):
    """A bench program failed (crashed, or wrote no JSON): the report fails."""


class PeerError(Exception):
    """A peer could not be set up here (its daemon, its session): reported, not a failure."""


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def run_program(cmd, env=None, timeout=600):
    """Runs a bench program; echoes its text; returns its last line parsed as JSON."""
    log('$ ' + ' '.join(cmd))
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    lines = p.stdout.rstrip('\n').split('\n')
    for line in lines[:-1]:
        log('  ' + line)
    if p.stderr.strip():
        log(p.stderr.rstrip())
    if p.returncode != 0:
        raise BenchError('%s exited with status %d' % (cmd[0], p.returncode))
    try:
        return json.loads(lines[-1])
    except ValueError:
        raise BenchError('%s: the last line is not a JSON object: %r' % (cmd[0], lines[-1][:200]))


def null(out, key, reason):
    out[key] = None
    out[key + '_reason'] = reason


# ---- LTTng-UST: its own session daemon, a session per measurement ---------------------------

class Lttng:
    """A private lttng-sessiond and the lttng commands that talk to it."""

    def __init__(self, home):
        self.home = home
        self.env = dict(os.environ, LTTNG_HOME=home, LTTNG_UST_REGISTER_TIMEOUT='10000')
        for var in ('LTTNG_UST_ALLOW_BLOCKING', 'LTTNG_UST_DEBUG'):
            self.env.pop(var, None)
        self.pid = None

    def cmd(self, *args, check=True):
        p = subprocess.run(['lttng'] + list(args), env=self.env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        if check and p.returncode != 0:
            raise PeerError('lttng %s: %s' % (' '.join(args), p.stdout.strip()))
        return p.stdout

    def start_daemon(self):
        # The daemon must not hold our stdout: the caller reads it to its end.
        p = subprocess.run(['lttng-sessiond', '--daemonize', '--no-kernel', '--quiet'],
                           env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           timeout=60)
        if p.returncode != 0:
            raise PeerError('lttng-sessiond --daemonize --no-kernel exited with status %d'
                            % p.returncode)
        rundir = '/run/lttng' if os.geteuid() == 0 else os.path.join(self.home, '.lttng')
        try:
            with open(os.path.join(rundir, 'lttng-sessiond.pid')) as f:
                self.pid = int(f.read().strip())
        except (OSError, ValueError) as e:
            raise PeerError('lttng-sessiond started but left no pid file: %s' % e)

    def stop_daemon(self):
        if self.pid is None:
            return
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        for _ in range(100):
            if not alive(self.pid):
                return
            time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)

    def record(self, name, output, program, settle=1.2):
        """One session (userspace channel, discard mode, default sub-buffers, the bench's
        events) around `program`. Returns (program's stdout, events lttng discarded)."""
        self.cmd('create', name, '--output=' + output)
        try:
            self.cmd('enable-channel', '--userspace', '--session=' + name, '--discard', 'ch')
            self.cmd('enable-event', '--userspace', '--session=' + name, '--channel=ch',
                     'nt_bench:*')
            self.cmd('start', name)
            log('$ ' + ' '.join(program))
            p = subprocess.run(program, env=self.env, stdout=subprocess.PIPE, text=True,
                               timeout=900)
            # The consumer samples its statistics every second (the monitor timer): wait
            # for one sample so the discarded count is complete.
            time.sleep(settle)
            self.cmd('stop', name)
            listing = self.cmd('list', name)
        finally:
            self.cmd('destroy', name, check=False)
        if p.returncode == 2:
            raise PeerError('the traced process did not register with the bench\'s '
                            'lttng-sessiond (its nt_bench:* events were not enabled)')
        if p.returncode != 0:
            raise BenchError('%s exited with status %d under LTTng' % (program[0], p.returncode))
        discarded = sum(int(n) for n in re.findall(r'Discarded events:\s*(\d+)', listing))
        return p.stdout, discarded


def alive(pid):
    """True while `pid` runs (a zombie is not running)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def stream_bytes(trace):
    """Bytes of the CTF stream files under `trace` (no metadata, no index)."""
    total = 0
    for root, dirs, files in os.walk(trace):
        dirs[:] = [d for d in dirs if d != 'index']
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files if f != 'metadata')
    return total


def dir_bytes(trace):
    """Bytes of every file under `trace`: streams, metadata and indexes."""
    return sum(os.path.getsize(os.path.join(root, f))
               for root, _, files in os.walk(trace) for f in files)


def babeltrace2(trace, reps, out):
    """babeltrace2 over `trace`: decode to a counting sink and text to /dev/null, ev/s."""
    bt = shutil.which('babeltrace2')
    if bt is None:
        return None
    counts, decode, text = [], [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        p = subprocess.run([bt, trace, '--component=sink.utils.counter', '-p', 'step=+0'],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           timeout=900)
        decode.append(time.perf_counter() - t0)
        m = re.findall(r'(\d+) Event messages', p.stdout)
        if p.returncode != 0 or not m:
            raise PeerError('babeltrace2 counter sink failed (status %d)' % p.returncode)
        counts.append(int(m[-1]))
        t0 = time.perf_counter()
        with open(os.devnull, 'w') as devnull:
            rc = subprocess.run([bt, trace], stdout=devnull, stderr=subprocess.DEVNULL,
                                timeout=900).returncode
        text.append(time.perf_counter() - t0)
        if rc != 0:
            raise PeerError('babeltrace2 text output failed (status %d)' % rc)
    events = counts[-1]
    out['babeltrace2_events'] = events
    out['babeltrace2_mev_s'] = events / median(decode) / 1e6
    out['babeltrace2_text_mev_s'] = events / median(text) / 1e6
    return events


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def lttng_measure(args, size):
    """The LTTng part, run in the process that owns the private daemon. Returns a dict."""
    peers = os.path.join(args.build, 'bench', 'nt_bench_peers')
    home = tempfile.mkdtemp(prefix='nt-bench-lttng-')  # mode 0700, an unpredictable name
    lt = Lttng(home)
    out = {}
    try:
        lt.start_daemon()
        text, discarded = lt.record('scaling', os.path.join(home, 'scaling'), [
            peers, '--part', 'scaling', '--lttng', '--rounds', str(size['rounds']),
            '--events', str(size['events']), '--max-threads', str(args.max_threads),
            '--band', str(args.band), '--json'])
        lines = text.rstrip('\n').split('\n')
        for line in lines[:-1]:
            log('  ' + line)
        out['scaling'] = json.loads(lines[-1])
        made = out['scaling'].get('lttng_events_made') or 0
        out['lttng_discarded_events_scaling'] = discarded
        out['lttng_discarded_pct_scaling'] = 100.0 * discarded / made if made else None
        shutil.rmtree(os.path.join(home, 'scaling'), ignore_errors=True)
        n = size['read_events'] // 3 * 3
        trace = os.path.join(home, 'mixed')
        text, discarded = lt.record('mixed', trace, [peers, '--lttng-record', str(n)])
        log('  ' + text.strip())
        out['lttng_events_made_mixed'] = n
        out['lttng_discarded_events_mixed'] = discarded
        lt.stop_daemon()
        try:
            events = babeltrace2(trace, size['reps'], out)
        except PeerError as e:
            out['babeltrace2_error'] = str(e)
            events = None
        if events is None:
            out.setdefault('babeltrace2_missing', 'babeltrace2_error' not in out)
            # Without babeltrace2 the recorded count is what was made less what LTTng dropped.
            events = n - discarded
        if events > 0:
            out['lttng_bytes_per_event_mixed'] = stream_bytes(trace) / events
            out['lttng_dir_bytes_per_event_mixed'] = dir_bytes(trace) / events
    finally:
        lt.stop_daemon()
        shutil.rmtree(home, ignore_errors=True)
    return out


def lttng_part(args, size):
    """Runs lttng_measure where the traced process can only reach the bench's own daemon,
    or says why LTTng-UST is not measured. Returns (dict or None, reason)."""
    peers = os.path.join(args.build, 'bench', 'nt_bench_peers')
    has = subprocess.run([peers, '--has-lttng'], stdout=subprocess.PIPE, text=True).stdout
    if has.strip() != '1':
        return None, 'LTTng-UST: not installed (built without lttng-ust: liblttng-ust-dev)'
    for tool in ('lttng', 'lttng-sessiond'):
        if shutil.which(tool) is None:
            return None, 'LTTng-UST: not installed (%s not found: lttng-tools)' % tool
    if os.geteuid() != 0:
        # A user's session daemon lives in $LTTNG_HOME/.lttng: the private home isolates it.
        return measure_or_reason(args, size)
    # As root the daemon, the lttng client and liblttng-ust use /run/lttng: give them a
    # private one (and a private /dev/shm) in a mount namespace of their own.
    if shutil.which('unshare') is None or shutil.which('mount') is None:
        return fallback_global(args, size, 'no unshare(1) or mount(8) on PATH')
    cmd = ['unshare', '--mount', '--propagation', 'private', '--', sys.executable,
           os.path.abspath(__file__), '--lttng-inner'] + sys.argv[1:]
    log('$ ' + ' '.join(cmd[:6]) + ' ... --lttng-inner')
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=1800)
    if p.returncode == 0:
        return json.loads(p.stdout.strip().split('\n')[-1]), None
    if p.returncode == 4:
        return None, 'LTTng-UST: not measured: ' + p.stdout.strip().split('\n')[-1]
    if p.returncode != 3:
        raise BenchError('the LTTng part failed (status %d)' % p.returncode)
    return fallback_global(args, size, 'this process may not make a private mount namespace')


def fallback_global(args, size, why):
    """No private mount namespace (`why`): the global run directory, but only if no other
    session daemon owns it."""
    probe = subprocess.run(['lttng', 'list'], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    if probe.returncode == 0:
        return None, ('LTTng-UST: not measured: a system lttng-sessiond is running and '
                      + why)
    return measure_or_reason(args, size)


def measure_or_reason(args, size):
    try:
        return lttng_measure(args, size), None
    except PeerError as e:
        return None, 'LTTng-UST: not measured: %s' % e


def lttng_inner(args, size):
    """In the private mount namespace: fresh /run and /dev/shm, then the measurement.
    Exits 3 when the namespace cannot be set up (the caller falls back)."""
    for target in ('/run', '/dev/shm'):
        if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'mode=0755', 'nt-bench', target],
                          stderr=subprocess.DEVNULL).returncode != 0:
            sys.exit(3)
    try:
        result = lttng_measure(args, size)
    except PeerError as e:
        print(e)
        sys.exit(4)
    except BenchError as e:
        log('nt_report: %s' % e)
        sys.exit(1)
    print(json.dumps(result))
    sys.exit(0)


# ---- the report ----------------------------------------------------------------------------

def merge_lttng(report, lt, reason):
    if lt is None:
        for key in ('lttng_ns_per_event_1t', 'speedup_vs_lttng', 'lttng_bytes_per_event_mixed'):
            null(report, key, reason)
        null(report, 'babeltrace2_mev_s', reason + '; babeltrace2 has no LTTng trace to read')
        return
    scaling = lt.pop('scaling')
    # The LTTng run measured nanotrace and the floor too, in the same rounds: its figures are
    # the report's (every ratio within one run).
    report.update(scaling)
    report.update(lt)
    if 'lttng_bytes_per_event_mixed' not in report:
        null(report, 'lttng_bytes_per_event_mixed', 'the LTTng trace holds no event')
    if lt.get('babeltrace2_error'):
        null(report, 'babeltrace2_mev_s', 'babeltrace2: ' + lt['babeltrace2_error'])
    elif lt.get('babeltrace2_missing'):
        null(report, 'babeltrace2_mev_s', 'babeltrace2: not installed')


def demo_formats(args, size):
    """Issue 28 on the demo (nanotrace-demo, 2 worker threads): bytes per event and events/s
    of trace-dump's Chrome JSON and Perfetto renderings, each into a file of the same folder,
    median of the repetitions, interleaved. Events: trace-dump --stats's count."""
    demo = os.path.join(args.build, 'writer', 'nanotrace-demo')
    dump = os.path.join(args.build, 'reader', 'trace-dump')
    out = {}
    with tempfile.TemporaryDirectory(prefix='nt-report-demo-') as d:
        archive = os.path.join(d, 'demo.ntrace')
        subprocess.run([demo, archive, '--threads', '2', '--requests',
                        str(size['demo_requests'])], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=600)
        stats = subprocess.run([dump, '--stats', archive], check=True, capture_output=True,
                               text=True).stdout
        events = int(re.search(r'^events: (\d+)', stats, re.M).group(1))
        json_path, pf_path = os.path.join(d, 'demo.json'), os.path.join(d, 'demo.pftrace')
        times = {'chrome': [], 'perfetto': []}
        for _ in range(max(size['reps'], 3)):
            for fmt in ('chrome', 'perfetto'):
                t0 = time.perf_counter()
                if fmt == 'chrome':
                    with open(json_path, 'wb') as f:
                        subprocess.run([dump, '--format', 'chrome', archive], stdout=f,
                                       check=True, timeout=600)
                else:
                    subprocess.run([dump, '--format', 'perfetto', '-o', pf_path, archive],
                                   check=True, timeout=600)
                times[fmt].append(time.perf_counter() - t0)
        log('  demo: %d events; chrome %d bytes, perfetto %d bytes' % (
            events, os.path.getsize(json_path), os.path.getsize(pf_path)))
        out['chrome_bytes_per_event_demo'] = os.path.getsize(json_path) / events
        out['perfetto_bytes_per_event_demo'] = os.path.getsize(pf_path) / events
        out['render_chrome_demo_mev_s'] = events / median(times['chrome']) / 1e6
        out['render_perfetto_demo_mev_s'] = events / median(times['perfetto']) / 1e6
    out['perfetto_size_ratio_demo'] = (out['chrome_bytes_per_event_demo'] /
                                       out['perfetto_bytes_per_event_demo'])
    out['perfetto_speedup_demo'] = (out['render_perfetto_demo_mev_s'] /
                                    out['render_chrome_demo_mev_s'])
    return out


def perfetto_ratios(report):
    """The mixed shape's ratios, from nt_bench_reader's figures of the same run."""
    cb, pb = report.get('chrome_bytes_per_event_mixed'), report.get('perfetto_bytes_per_event_mixed')
    if cb and pb and cb > 0 and pb > 0:
        report['perfetto_size_ratio_mixed'] = cb / pb
    c, p = report.get('render_chrome_mev_s'), report.get('render_perfetto_mev_s')
    if c and p and c > 0 and p > 0:
        report['perfetto_speedup_mixed'] = p / c


def async_flow(args, size):
    """nt_bench_args's async and flow cases beside BEGIN/END (zone), same repetitions; its
    other keys (its own floor, shapes the scaling part measures) stay out of the report."""
    args_bench = os.path.join(args.build, 'bench', 'nt_bench_args')
    got = run_program([args_bench, '--reps', str(size['reps']), '--events', str(size['events']),
                       '--json'])
    keys = {'async_vs_zone': 'async_vs_zone', 'flow_vs_zone': 'flow_vs_zone',
            'disk_file_bytes_async': 'disk_bytes_per_event_async',
            'disk_file_bytes_flow': 'disk_bytes_per_event_flow'}
    out = {ours: got[theirs] for theirs, ours in keys.items() if theirs in got}
    for key in ('async_vs_zone', 'flow_vs_zone'):
        if key not in out and 'floor_spread' in got:  # it ran, and withheld its ratios
            null(out, key, 'floors spread %.2fx, beyond the band of %.2fx: ratios not trusted'
                 % (got['floor_spread'], got.get('floor_band', 0)))
    return out


def blocking(args, size):
    """nt_bench_blocking: 2 unpaced streaming writers without and with blocking (issue 29)."""
    prog = os.path.join(args.build, 'bench', 'nt_bench_blocking')
    return run_program([prog, '--threads', '2', '--events', str(size['events']), '--reps',
                        str(size['reps']), '--json'])


def trace2_event(args, size):
    """nt_bench_t2event: the Trace2 macros with NANOTRACE_EVENT's socket target beside an
    archive alone, and the forwarder's CPU in a quiet program (issue 27)."""
    prog = os.path.join(args.build, 'bench', 'nt_bench_t2event')
    return run_program([prog, '--rounds', str(size['reps']), '--pairs',
                        str(size['events'] // 4), '--quiet-ms',
                        str(min(size['stream_ms'], 1000)), '--reader-dir',
                        os.path.join(args.build, 'reader'), '--json'])


def measure(args, size):
    report = {'mode': args.mode}
    peers = os.path.join(args.build, 'bench', 'nt_bench_peers')
    reader = os.path.join(args.build, 'bench', 'nt_bench_reader')
    lt, reason = lttng_part(args, size)
    if lt is None:
        log(reason)
        report.update(run_program([
            peers, '--part', 'scaling', '--rounds', str(size['rounds']), '--events',
            str(size['events']), '--max-threads', str(args.max_threads), '--band',
            str(args.band), '--json']))
        report['lttng_ns_per_event_1t_reason'] = reason
        report['speedup_vs_lttng_reason'] = reason
    merge_lttng(report, lt, reason)
    report.update(run_program([peers, '--part', 'disk', '--events', str(size['events']),
                               '--stream-ms', str(size['stream_ms']), '--stream-events',
                               str(size['stream_events']), '--stream-rounds',
                               str(size['reps']), '--json']))
    report.update(run_program([
        os.path.join(args.build, 'bench', 'nt_bench_manager'), '--trace-record',
        os.path.join(args.build, 'manager', 'trace-record'), '--part', 'sections', '--reps',
        str(size['reps']), '--shape-events', str(size['stream_events']), '--json']))
    report.update(run_program([reader, '--events', str(size['read_events']), '--reps',
                               str(size['reps']), '--json']))
    perfetto_ratios(report)
    report.update(run_program([
        os.path.join(args.build, 'bench', 'nt_bench_bundle'), '--trace-record',
        os.path.join(args.build, 'manager', 'trace-record'), '--sections',
        str(size['bundle_sections']), '--events', '50', '--reps', str(max(size['reps'], 3)),
        '--json']))
    report.update(async_flow(args, size))
    report.update(nt_report_instr.instructions(args.build))
    report.update(blocking(args, size))
    report.update(run_program([os.path.join(args.build, 'bench', 'nt_bench_ship'), '--events',
                               str(size['events']), '--reps', str(max(size['reps'], 3)),
                               '--json']))
    report.update(trace2_event(args, size))
    try:
        report.update(demo_formats(args, size))
    except (subprocess.CalledProcessError, AttributeError) as e:
        raise BenchError('the demo formats (issue 28): %s' % e)
    bt = report.get('babeltrace2_mev_s')
    if bt:
        report['reader_speedup_vs_babeltrace2'] = report['reader_mev_s_stream'] / bt
    else:
        null(report, 'reader_speedup_vs_babeltrace2',
             report.get('babeltrace2_mev_s_reason', 'babeltrace2 not measured'))
    for key in KEYS:
        if key not in report:
            null(report, key, 'no bench program reported it')
    return report


def fmt(report, key, unit='', digits=2):
    v = report.get(key)
    if v is None:
        return 'n/a (%s)' % report.get(key + '_reason', 'not measured')
    s = '%.*f%s' % (digits, v, unit)
    lo, hi = report.get(key + '_min'), report.get(key + '_max')
    if lo is not None and hi is not None:
        s += ' [%.*f-%.*f]' % (digits, lo, digits, hi)
    return s


def shapes(report, key, unit, digits=2):
    """`key`_zone / `key`_mixed, as one table cell."""
    return '%s / %s' % (fmt(report, key + '_zone', unit, digits),
                        fmt(report, key + '_mixed', unit, digits))


def print_table(r):
    rows = [
        ('floor (clock + 16 B store), 1 thread', fmt(r, 'floor_ns', ' ns')),
        ('begin/end event, 1 thread', fmt(r, 'ns_per_event_1t', ' ns')),
        ('  ÷ floor (median [min-max] of rounds)', fmt(r, 'ratio_1t', '', 3)),
        ('mixed event, 1 thread', fmt(r, 'ns_per_event_mixed_1t', ' ns')),
        ('  ÷ floor', fmt(r, 'ratio_mixed_1t', '', 3)),
        ('instructions per event: floor / zone / mixed', '%s / %s / %s' % (
            fmt(r, 'instr_per_event_floor', '', 1), fmt(r, 'instr_per_event_zone', '', 1),
            fmt(r, 'instr_per_event_mixed', '', 1))),
        ('worst per-thread cost ÷ 1 thread (mixed)', fmt(r, 'ratio_threads_max', '', 3)),
        ('async begin+end / flow step, ÷ begin/end', '%s / %s' % (
            fmt(r, 'async_vs_zone', '', 3), fmt(r, 'flow_vs_zone', '', 3))),
        ('  file bytes per event: async / flow', '%s / %s' % (
            fmt(r, 'disk_bytes_per_event_async', ' B', 3),
            fmt(r, 'disk_bytes_per_event_flow', ' B', 3))),
        ('LTTng-UST mixed event, 1 thread', fmt(r, 'lttng_ns_per_event_1t', ' ns')),
        ('  nanotrace faster by', fmt(r, 'speedup_vs_lttng', 'x', 1)),
        ('LTTng-UST events discarded (scaling run)', fmt(r, 'lttng_discarded_pct_scaling', '%', 1)),
        ('record bytes per mixed event', fmt(r, 'bytes_per_event_mixed', ' B', 3)),
        ('LTTng-UST stream bytes per mixed event', fmt(r, 'lttng_bytes_per_event_mixed', ' B', 3)),
        ('file bytes per event: zone / mixed', '%s / %s' % (
            fmt(r, 'disk_bytes_per_event_zone', ' B', 3), fmt(r, 'disk_bytes_per_event_mixed', ' B', 3))),
        ('streaming 1 thread, mixed, default arena: lost', fmt(r, 'streaming_lost_pct_1t_mixed', '%', 2)),
        ('streaming 2 threads, mixed: lost, never wait / wait', '%s / %s' % (
            fmt(r, 'blocking_off_lost_pct', '%', 2), fmt(r, 'blocking_on_lost_pct', '%', 2))),
        ('  ns per event, never wait / wait', '%s / %s' % (
            fmt(r, 'blocking_off_ns_per_event', ' ns'), fmt(r, 'blocking_on_ns_per_event', ' ns'))),
        ('  blocked: a round / its longest thread', '%s / %s' % (
            fmt(r, 'blocking_on_blocked_ms', ' ms', 1),
            fmt(r, 'blocking_on_blocked_ms_max_thread', ' ms', 1))),
        ('streaming file bytes per event: zone / mixed',
         shapes(r, 'streaming_disk_bytes_per_event', ' B', 3)),
        ('  ÷ oneshot, same events: zone / mixed', shapes(r, 'streaming_vs_oneshot_bytes', 'x')),
        ('  lost: zone / mixed (worst round)', shapes(r, 'streaming_lost_pct', '%')),
        ('  writer ns/event ÷ oneshot (worse shape)', fmt(r, 'streaming_ns_vs_oneshot', 'x', 3)),
        ('trace-record streaming sections ÷ oneshot: zone / mixed',
         shapes(r, 'manager_streaming_vs_oneshot_bytes', 'x')),
        ('  lost: zone / mixed (worst round)', shapes(r, 'manager_streaming_lost_pct', '%')),
        ('  saver / plain write(2), same folder', '%s / %s' % (
            fmt(r, 'saver_mb_s', ' MB/s', 1), fmt(r, 'plain_write_mb_s', ' MB/s', 1))),
        ('decode, stream / time order', '%s / %s' % (
            fmt(r, 'reader_mev_s_stream', ' M ev/s', 1), fmt(r, 'reader_mev_s_time', ' M ev/s', 1))),
        ('babeltrace2 decode (counter sink)', fmt(r, 'babeltrace2_mev_s', ' M ev/s', 2)),
        ('babeltrace2 text', fmt(r, 'babeltrace2_text_mev_s', ' M ev/s', 2)),
        ('  nanotrace decode faster by', fmt(r, 'reader_speedup_vs_babeltrace2', 'x', 1)),
        ('trace-dump text / chrome', '%s / %s' % (
            fmt(r, 'render_text_mev_s', ' M ev/s'), fmt(r, 'render_chrome_mev_s', ' M ev/s'))),
        ('trace-dump perfetto (mixed)', fmt(r, 'render_perfetto_mev_s', ' M ev/s')),
        ('  faster than chrome by (mixed / demo)', '%s / %s' % (
            fmt(r, 'perfetto_speedup_mixed', 'x'), fmt(r, 'perfetto_speedup_demo', 'x'))),
        ('bytes per event chrome / perfetto (mixed)', '%s / %s' % (
            fmt(r, 'chrome_bytes_per_event_mixed', ' B', 1),
            fmt(r, 'perfetto_bytes_per_event_mixed', ' B', 1))),
        ('bytes per event chrome / perfetto (demo)', '%s / %s' % (
            fmt(r, 'chrome_bytes_per_event_demo', ' B', 1),
            fmt(r, 'perfetto_bytes_per_event_demo', ' B', 1))),
        ('  perfetto smaller by (mixed / demo)', '%s / %s' % (
            fmt(r, 'perfetto_size_ratio_mixed', 'x', 1), fmt(r, 'perfetto_size_ratio_demo', 'x', 1))),
        ('Trace2 normal / perf / event', '%s / %s / %s' % (
            fmt(r, 'render_trace2_normal_mev_s'), fmt(r, 'render_trace2_perf_mev_s'),
            fmt(r, 'render_trace2_event_mev_s'))),
        ('trace-import (Git EVENT JSON)', fmt(r, 'import_mb_s', ' MB/s', 1)),
        ('OTLP shipping gzip / none', '%s / %s' % (
            fmt(r, 'ship_spans_s_gzip', ' spans/s', 0), fmt(r, 'ship_spans_s_none', ' spans/s', 0))),
        ('  bytes per span on the wire gzip / none', '%s / %s' % (
            fmt(r, 'ship_bytes_per_span_gzip', ' B', 1),
            fmt(r, 'ship_bytes_per_span_none', ' B', 1))),
        ('Trace2 region, af_unix target on ÷ archive alone: CPU / wall', '%s / %s' % (
            fmt(r, 't2_event_target_ratio', '', 3), fmt(r, 't2_event_target_wall_ratio', '', 3))),
        ('reader private memory, 1 M / 10 M events', '%s / %s' % (
            fmt(r, 'reader_anon_kb_1m', ' KiB', 0), fmt(r, 'reader_anon_kb_10m', ' KiB', 0))),
        ('bundle of %s processes: text, ÷ one archive' % r.get('bundle20k_sections', '?'),
         '%s, %s' % (fmt(r, 'bundle20k_text_mev_s', ' M ev/s'),
                     fmt(r, 'bundle20k_text_vs_single', '', 3))),
        ('  --stats, ÷ one archive', '%s, %s' % (
            fmt(r, 'bundle20k_stats_s', ' s', 3), fmt(r, 'bundle20k_stats_vs_single', 'x'))),
        ('  reader private memory / limit', '%s / %s' % (
            fmt(r, 'bundle20k_reader_kb', ' KiB', 0),
            fmt(r, 'bundle20k_reader_kb_limit', ' KiB', 0))),
    ]
    print('nanotrace report (%s mode)' % r['mode'])
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print('  %-*s  %s' % (width, k, v))
    sc = r.get('scaling', {})
    if sc.get('skipped_threads'):
        print('  thread counts skipped (more than the CPUs online): %s' %
              ', '.join(str(t) for t in sc['skipped_threads']))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--build', default=os.path.join(os.path.dirname(HERE), 'build'),
                    help='the meson build folder (default: build/ beside bench/)')
    group = ap.add_mutually_exclusive_group()
    group.add_argument('--quick', dest='mode', action='store_const', const='quick',
                       help='smaller sizes: under 2 minutes on 2 cores (CI)')
    group.add_argument('--smoke', dest='mode', action='store_const', const='smoke',
                       help='tiny sizes: every path once, figures meaningless (tests)')
    ap.add_argument('--json', action='store_true', help='print one JSON object, last line')
    ap.add_argument('--svg', metavar='FILE', help='write the thread-scaling plot to FILE')
    ap.add_argument('--max-threads', type=int, default=16)
    ap.add_argument('--band', type=float, default=1.25,
                    help="the floor's rounds may spread by this factor (max/min) before its "
                    'ratios are withheld (default 1.25)')
    ap.add_argument('--lttng-inner', action='store_true', help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.mode = args.mode or 'full'
    args.build = os.path.abspath(args.build)
    size = MODES[args.mode]
    if args.lttng_inner:
        lttng_inner(args, size)
    try:
        report = measure(args, size)
    except (BenchError, subprocess.TimeoutExpired, OSError) as e:
        log('nt_report: %s' % e)
        return 1
    print_table(report)
    if args.svg:
        nt_report_svg.write(args.svg, report)
        print('  plot: %s' % args.svg)
    if args.json:
        print(json.dumps(report, sort_keys=True))
    return 0


if __name__ == '__main__':
    sys.exit(main())
