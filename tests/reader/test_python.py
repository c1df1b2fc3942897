"""The Python package `nanotrace` (reader/python) against trace-dump, which reads with the
same library: event for event equal to trace-dump's Chrome JSON (demo archives in oneshot,
circular and streaming mode, both orders, Trace2 imports of the ../shared corpus, a
directory of two processes), summary and stats equal to --stats, damaged input raising
nanotrace.Error naming the file and the offset (or skipped and listed), truncated and
bit-flipped archives never crashing the interpreter, closing, bad arguments, and
to_dataframe's columns.

Run by meson (suite reader) with Debian's python3, PYTHONPATH at the build tree's package,
and NT_TRACE_DUMP, NT_TRACE_IMPORT, NT_DEMO, NT_CORPUS, NT_WORKDIR (and NT_STRESS: a streaming
archive whose writers waited for the saver, its blocked figures in stats() and trace-dump).
"""
import decimal
import json
import os
import re
import subprocess
import sys
import types

import pytest

from conftest import import_corpus_case, program

nanotrace = pytest.importorskip('nanotrace')

TRACE_DUMP, TRACE_IMPORT, DEMO = (program(v) for v in ('NT_TRACE_DUMP', 'NT_TRACE_IMPORT',
                                                       'NT_DEMO'))
PHASE = {'begin': 'B', 'end': 'E', 'instant': 'i', 'complete': 'X', 'counter': 'C',
         'region_enter': 'B', 'region_leave': 'E'}
LOW_LEVEL = ('begin', 'end', 'instant', 'complete', 'counter')


def dump(*args):
    p = subprocess.run([TRACE_DUMP, *args], capture_output=True)
    return p.returncode, p.stdout.decode('utf-8', 'surrogateescape'), \
        p.stderr.decode('utf-8', 'surrogateescape')


def record(workdir, name, *args):
    path = os.path.join(workdir, name)
    if os.path.exists(path):
        os.unlink(path)
    subprocess.run([DEMO, path, *args], check=True, capture_output=True)
    return path


@pytest.fixture(scope='module')
def work(workdir):
    d = os.path.join(workdir, 'python')
    os.makedirs(d, exist_ok=True)
    return d


@pytest.fixture(scope='module')
def demo(work):
    return record(work, 'demo.ntrace', '--threads', '3', '--requests', '50')


def chrome_events(*args):
    """trace-dump's Chrome JSON events, without metadata and its "events lost" marks."""
    rc, out, err = dump('--format', 'chrome', *args)
    assert rc == 0, err
    doc = json.loads(out, parse_float=decimal.Decimal)
    return [e for e in doc['traceEvents']
            if e['ph'] != 'M' and not (e.get('cat') == 'nanotrace' and e['name'] == 'events lost')]


def shown(ev, start_ns):
    """What trace-dump's Chrome rendering shows of a Python event (its display rules: a
    Trace2 message with no label is named after its type, in category trace2)."""
    name = ev.name if ev.name or ev.kind in LOW_LEVEL else ev.kind
    cat = ev.category if ev.category or ev.kind in LOW_LEVEL else 'trace2'
    row = {'ph': PHASE.get(ev.kind, 'i'), 'cat': cat, 'name': name, 'pid': ev.process,
           'tid': ev.thread, 'ts': decimal.Decimal(ev.time_ns - start_ns) / 1000}
    if ev.kind == 'complete':
        row['dur'] = decimal.Decimal(ev.duration_ns) / 1000
    return row


def balanced(events):
    """The events Chrome keeps: an End with no open Begin on its thread is left out."""
    open_ = {}
    for ev in events:
        key = (ev.process, ev.thread)
        if PHASE.get(ev.kind) == 'B':
            open_[key] = open_.get(key, 0) + 1
        elif PHASE.get(ev.kind) == 'E':
            if not open_.get(key):
                continue
            open_[key] -= 1
        yield ev


def json_args(args):
    """args as Chrome writes them, read back (doubles compared as JSON numbers, pointers
    as Chrome's hexadecimal strings)."""
    args = {k: '0x%x' % v if isinstance(v, nanotrace.Pointer) else v for k, v in args.items()}
    return json.loads(json.dumps(args), parse_float=decimal.Decimal)


def assert_equal_to_chrome(paths, order):
    dump_args = ['--order', order, *paths]
    expected = chrome_events(*dump_args)
    with nanotrace.open(paths, order=order) as trace:
        start = trace.summary['start_monotonic_ns']
        got = list(balanced(trace))
        assert not trace.errors
    assert len(got) == len(expected)
    assert len(expected) > 0
    for i, (ev, want) in enumerate(zip(got, expected)):
        row = shown(ev, start)
        for key, value in row.items():
            assert want[key] == value, (i, key, want, ev)
        if ev.kind in LOW_LEVEL:  # Trace2 messages show some values converted (t_rel)
            assert json_args(ev.args) == want.get('args', {}), (i, want, ev)
    return got


@pytest.mark.parametrize('order', ['time', 'stream'])
def test_demo_equals_trace_dump(demo, order):
    events = assert_equal_to_chrome([demo], order)
    kinds = {ev.kind for ev in events}
    assert {'begin', 'end', 'instant', 'complete', 'counter'} <= kinds
    assert any(ev.args for ev in events)
    first = events[0]
    assert first.thread_name and first.process_name == 'nanotrace-demo'
    assert isinstance(first, nanotrace.Event)
    assert 'Event(time_ns=' in repr(first)


def test_orders_hold_the_same_events(demo):
    with nanotrace.open(demo) as trace:
        by_time = [(e.offset, e.time_ns, e.name) for e in trace.events('time')]
        by_stream = [(e.offset, e.time_ns, e.name) for e in trace.events('stream')]
    assert sorted(by_time) == sorted(by_stream)
    assert [t for _, t, _ in by_time] == sorted(t for _, t, _ in by_time)


@pytest.mark.parametrize('mode', ['circular', 'streaming'])
def test_circular_and_streaming(work, mode):
    path = record(work, mode + '.ntrace', '--mode', mode, '--buffer-size', '65536',
                  '--threads', '3', '--requests', '3000')
    for order in ('time', 'stream'):
        assert_equal_to_chrome([path], order)
    trace = nanotrace.open(path)
    stats = trace.stats()
    assert_stats_match(trace, path)
    if mode == 'circular':
        assert stats['overwritten'] > 0 or stats['wraps'] > 0
    list(trace)
    assert len(trace.gaps) == stats['gaps']
    assert sum(g[1] for g in trace.gaps) == stats['gap_events']


def test_blocked_waits_in_every_rendering(work, demo):
    """A streaming archive whose 2 writers waited for the saver (stress --blocking: it
    writes until the header counts a wait, and drops nothing): stats() has the header's
    totals and each thread's, which add up to them; trace-dump --stats, Chrome's otherData,
    OTLP's resource attributes and the Python stats agree. In a bundle behind a process
    that never waited, the bundle's totals are still that archive's (they were the first
    section's: none)."""
    stress = os.environ.get('NT_STRESS')
    if not stress:
        pytest.skip('the stress program is not built (cmocka missing)')
    path = os.path.join(work, 'blocking.ntrace')
    if os.path.exists(path):
        os.unlink(path)
    subprocess.run([stress, '--mode', 'streaming', '--threads', '2', '--events', '100000',
                    '--buffer', '65536', '--blocking', '10000000', '--keep', path],
                   check=True, capture_output=True)
    trace = nanotrace.open(path)
    st = trace.stats()
    b = st['blocked']
    assert b['waits'] > 0 and b['ns'] > 0 and b['timeout_us'] == 10000000
    assert st['dropped']['total'] == 0 and b['ended_in_drop'] == 0
    for key in ('waits', 'ended_in_drop', 'ns'):
        assert sum(t['blocked'][key] for t in st['threads']) == b[key], key
    assert_stats_match(trace, path)
    text = stats_text(path)
    assert [b['waits'], b['ended_in_drop'], b['timeout_us']] == field(
        text, r'^blocked: (\d+) waits for the saver, .* in all, (\d+) ended in a drop '
              r'\(timeout (\d+) us\)$')
    shown = {int(i): (int(w), int(d)) for i, w, d in re.findall(
        r'^  thread (\d+) .*: \d+ events, blocked (\d+) waits .*, (\d+) ended in a drop$',
        text, re.M)}
    assert shown == {t['index']: (t['blocked']['waits'], t['blocked']['ended_in_drop'])
                     for t in st['threads'] if t['blocked']['waits']}
    rc, out, err = dump('--format', 'chrome', path)
    assert rc == 0, err
    other = json.loads(out)['otherData']
    assert other['blocked'] == {'waits': b['waits'], 'ended_in_drop': b['ended_in_drop'],
                                'ns': b['ns'], 'timeout_us': b['timeout_us']}
    otlp = path + '.otlp.json'
    rc, out, err = dump('--format', 'otlp-json', '-o', otlp, path)
    assert rc == 0, err
    with open(otlp) as f:
        first = json.loads(f.readline())
    os.unlink(otlp)
    attrs = {a['key']: a['value'] for a in first['resourceSpans'][0]['resource']['attributes']}
    assert {k: int(attrs[k]['intValue']) for k in
            ('nanotrace.blocked_waits', 'nanotrace.blocked_ns')} == {
        'nanotrace.blocked_waits': b['waits'], 'nanotrace.blocked_ns': b['ns']}
    assert 'nanotrace.blocked_timeouts' not in attrs  # none ran out: zero is left out
    bundle = os.path.join(work, 'blocking.ntbundle')
    subprocess.run([program('NT_MAKE_BUNDLE'), bundle, demo, path], check=True)
    with nanotrace.open(bundle) as both:
        assert both.stats()['blocked'] == b
    text = stats_text(bundle)
    assert [b['waits'], b['ended_in_drop'], b['timeout_us']] == field(
        text, r'^blocked: (\d+) waits for the saver, .* in all, (\d+) ended in a drop '
              r'\(timeout (\d+) us\)$')
    rc, out, err = dump('--format', 'chrome', bundle)
    assert rc == 0, err
    assert json.loads(out)['otherData']['blocked'] == other['blocked']
    os.unlink(bundle)
    os.unlink(path)


def trace2_cases():
    corpus = os.environ.get('NT_CORPUS', '')
    if not os.path.isdir(corpus):
        return []
    return sorted(c for c in os.listdir(corpus) if os.path.isfile(os.path.join(corpus, c, 'event')))


def test_trace2_corpus(work):
    cases = trace2_cases()
    if not cases:
        pytest.skip('the ../shared/corpus Trace2 cases are missing (NT_CORPUS)')
    corpus = os.environ['NT_CORPUS']
    for case in cases:
        archive = import_corpus_case(TRACE_IMPORT, corpus, case,
                                     os.path.join(work, 't2-%s.ntrace' % case))
        events = assert_equal_to_chrome([archive], 'time')
        assert events[0].kind == 'version', case
        assert all(ev.kind not in LOW_LEVEL for ev in events), case


def test_many_processes(work, demo):
    d = os.path.join(work, 'two')
    os.makedirs(d, exist_ok=True)
    for name in os.listdir(d):
        os.unlink(os.path.join(d, name))
    record(d, 'a.ntrace', '--threads', '2', '--requests', '20')
    record(d, 'b.ntrace', '--threads', '1', '--requests', '30')
    events = assert_equal_to_chrome([d], 'time')
    assert len({ev.process for ev in events}) == 2
    with nanotrace.open(d) as trace:
        sections = trace.summary['sections']
        assert [s['name'] for s in sections] == ['nanotrace-demo'] * 2
        assert len({s['pid'] for s in sections}) == 2
        assert trace.stats()['events'] == len(events)


def test_bundle_sections_closed_between_visits(work, demo):
    """A bundle of more than 64 processes keeps most sections closed between visits
    (nanotrace_reader.h): the package reads it exactly as with every section open (events in
    both orders, summary with each section 'opened', stats), and --stats agrees."""
    other = record(work, 'closed-b.ntrace', '--threads', '1', '--requests', '15')
    bundle = os.path.join(work, 'closed.ntbundle')
    sections = ['%s,pid=%d,name=p%d' % ((demo, other)[i % 2], 1000 + i, i) for i in range(80)]
    subprocess.run([program('NT_MAKE_BUNDLE'), bundle, *sections], check=True)

    def fields(ev):
        return (ev.offset, ev.time_ns, ev.kind, ev.category, ev.name, ev.thread, ev.process,
                ev.id, ev.args)

    def read(mode):
        os.environ['NANOTRACE_READER_SECTIONS'] = mode
        try:
            with nanotrace.open(bundle) as trace:
                return ([fields(ev) for ev in trace.events('stream')],
                        [fields(ev) for ev in trace.events('time')],
                        trace.summary, trace.stats())
        finally:
            del os.environ['NANOTRACE_READER_SECTIONS']

    closed, opened = read('closed'), read('open')
    assert closed == opened
    summary, stats = closed[2], closed[3]
    assert [(s['pid'], s['name'], s['opened']) for s in summary['sections']] == \
        [(1000 + i, 'p%d' % i, True) for i in range(80)]
    assert_stats_match_counts(stats, stats_text(bundle))


def assert_stats_match_counts(st, text):
    assert [st['events']] == field(text, r'^events: (\d+)$')
    assert [st['written']] == field(text, r'^written: (\d+) events')
    assert len(st['threads']) == field(text, r'^threads: (\d+)$')[0]


def stats_text(path):
    rc, out, err = dump('--stats', path)
    assert rc == 0, err
    return out


def field(text, pattern):
    m = re.search(pattern, text, re.M)
    assert m, (pattern, text)
    return [int(g) for g in m.groups()]


def assert_stats_match(trace, path):
    text = stats_text(path)
    st = trace.stats()
    assert [st['events']] == field(text, r'^events: (\d+)$')
    rec = st['records']
    names = ('begin', 'end', 'instant', 'complete', 'counter', 'timestamp', 'chunk', 'string',
             'thread', 'callsite')
    assert [rec.get(n, 0) for n in names] == field(
        text, r'^records: ' + ', '.join(n + r' (\d+)' for n in names) + '$')
    threads = re.findall(r'^  thread (\d+) (.*) \(pid (\d+), tid (\d+)\): (\d+) events'
                         r'(?:, blocked .*)?$', text, re.M)
    assert [(str(t['index']), t['name'], str(t['pid']), str(t['tid']), str(t['events']))
            for t in st['threads']] == threads
    assert [st['written']] == field(text, r'^written: (\d+) events')
    d = st['dropped']
    assert [d['total'], d['rolling_full'], d['durable_full'], d['stopped'], d['not_saved']] == field(
        text, r'^dropped: (\d+) events \(rolling full (\d+), durable full (\d+), stopped (\d+), '
              r'not saved (\d+)\)')
    assert [st['overwritten']] == field(text, r'^overwritten: (\d+) events')
    assert [st['wraps']] == field(text, r'^wraps: (\d+)')
    assert [st['gaps'], st['gap_events']] == field(text, r'^gaps: (\d+) \((\d+) events lost')
    assert [st['durable_dropped']] == field(text, r'^durable dropped: (\d+) records')
    assert [st['values_truncated']] == field(text, r'^values truncated: (\d+) events')
    assert [st['strings'], st['callsites'], st['chunks']] == field(
        text, r'^strings: (\d+), call sites: (\d+), chunks: (\d+)')
    b = st['bytes']
    assert [b['file'], b['header'], b['durable'], b['chunk']] == field(
        text, r'^bytes: file (\d+), header (\d+), durable (\d+), chunks (\d+)')
    assert [st['compressed_chunks'], st['chunks'], b['chunk'],
            st['chunk_bytes_uncompressed']] == field(
        text, r'^compression: (\d+) of (\d+) chunks compressed \([^)]*\); chunks (\d+) bytes '
              r'in the file, (\d+) uncompressed')
    s = trace.summary
    assert [s['pid']] == field(text, r'^process: .* \(pid (\d+)\)$')
    assert re.search(r'^process: %s \(pid' % re.escape(s['process_name']), text, re.M)
    assert [s['ticks_per_second']] == field(text, r'^clock: \w+, (\d+) ticks/s$')
    assert [s['file_bytes']] == field(text, r'^bytes: file (\d+)')


def test_summary_and_stats_equal_dump_stats(demo):
    with nanotrace.open(demo) as trace:
        assert_stats_match(trace, demo)
        s = trace.summary
        assert s['events_written'] == trace.stats()['events'] == sum(1 for _ in trace)
        assert [t['name'] for t in s['threads']][0] == 'main'


def cut(src, dst, size):
    with open(src, 'rb') as f:
        data = f.read(size)
    with open(dst, 'wb') as f:
        f.write(data)
    return dst


def test_damage_raises_with_the_offset(work, demo):
    size = os.path.getsize(demo)
    damaged = cut(demo, os.path.join(work, 'cut.ntrace'), size * 3 // 4)
    rc, _, err = dump('--on-corrupt', 'stop', damaged)
    assert rc == 2
    first = err.splitlines()[0][len('trace-dump: '):]
    with pytest.raises(nanotrace.Error) as e:
        for _ in nanotrace.open(damaged):
            pass
    assert str(e.value) == first
    assert re.search(r' at byte %d$' % e.value.offset, str(e.value))
    assert isinstance(e.value, ValueError)
    with pytest.raises(nanotrace.Error):
        nanotrace.open(damaged).stats()
    # skip: what is readable, the damage listed as trace-dump lists it
    rc, out, err = dump('--order', 'stream', damaged)
    skipped = nanotrace.open(damaged, on_corrupt='skip')
    events = list(skipped.events('stream'))
    assert len(events) == len(re.findall(r'^ *-?\d+\.\d{9} ', out, re.M)) > 0
    assert ['trace-dump: %s: %s at byte %d' % (damaged, m, o) for o, m in skipped.errors] \
        == err.splitlines()
    st = skipped.stats()
    assert st['damaged'] == len(skipped.errors)
    # stats() carries the damage itself (issue 25 item 4): what and where, as trace-dump says
    assert ['trace-dump: %s: %s at byte %d' % (damaged, m, o) for o, m in st['damage']] \
        == err.splitlines()
    assert any('missing' in m for _, m in st['damage']) and st['saving_stopped'] is None


def test_garbage_and_missing(work):
    garbage = os.path.join(work, 'garbage.ntrace')
    with open(garbage, 'wb') as f:
        f.write(b'\x00this is not an archive' * 40)
    rc, _, err = dump(garbage)
    with pytest.raises(nanotrace.Error) as e:
        nanotrace.open(garbage)
    assert rc == 2 and err.strip() == 'trace-dump: ' + str(e.value)
    assert garbage in str(e.value)
    missing = os.path.join(work, 'no-such.ntrace')
    with pytest.raises(nanotrace.Error, match=re.escape(missing)):
        nanotrace.open(missing)
    empty = os.path.join(work, 'empty.ntrace')
    open(empty, 'wb').close()
    with pytest.raises(nanotrace.Error, match='empty'):
        nanotrace.open(empty)


FUZZ_CHILD = r'''
import os, random, sys
import nanotrace
src, out = sys.argv[1], sys.argv[2]
data = open(src, 'rb').read()
rng = random.Random(int(sys.argv[3]))
cases = [data[:n] for n in sorted(set(rng.randrange(len(data)) for _ in range(150)))]
for _ in range(250):
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    cases.append(bytes(b))
outcomes = {'open refused': 0, 'read whole': 0, 'damage raised': 0}
for case in cases:
    with open(out, 'wb') as f:
        f.write(case)
    for policy in ('stop', 'skip'):
        try:
            t = nanotrace.open(out, on_corrupt=policy)
        except nanotrace.Error as e:
            assert str(e), 'an empty message'
            outcomes['open refused'] += 1
            continue
        for order in ('time', 'stream'):
            try:
                for ev in t.events(order):
                    ev.args; ev.name; ev.kind
                outcomes['read whole'] += 1
            except nanotrace.Error as e:
                assert policy == 'stop' and ' at byte ' in str(e), str(e)
                outcomes['damage raised'] += 1
        try:
            t.stats(); t.summary
        except nanotrace.Error:
            assert policy == 'stop'
        t.close()
print(outcomes)
'''


@pytest.mark.parametrize('compressed', [True, False])
def test_truncated_and_bit_flipped_never_crash(work, compressed):
    env = dict(os.environ)
    if not compressed:
        env['NANOTRACE_COMPRESSION'] = '0'
    name = 'fuzz-src-%d.ntrace' % compressed
    src = os.path.join(work, name)
    if os.path.exists(src):
        os.unlink(src)
    subprocess.run([DEMO, src, '--threads', '2', '--requests', '20'], check=True,
                   capture_output=True, env=env)
    p = subprocess.run([sys.executable, '-c', FUZZ_CHILD, src,
                        os.path.join(work, 'fuzz-case-%d.ntrace' % compressed), str(int(compressed))],
                       capture_output=True, text=True, env=os.environ)
    assert p.returncode == 0, p.stderr[-3000:]
    outcomes = eval(p.stdout.strip().splitlines()[-1])  # a dict the child printed
    assert outcomes['open refused'] > 0 and outcomes['damage raised'] > 0, outcomes


def test_close_and_context(demo):
    trace = nanotrace.open(demo)
    it = iter(trace)
    next(it)
    trace.close()
    assert trace.closed
    with pytest.raises(ValueError, match='closed'):
        next(it)
    with pytest.raises(ValueError, match='closed'):
        list(trace)
    with pytest.raises(ValueError, match='closed'):
        trace.summary
    trace.close()  # twice is fine
    with nanotrace.open(demo) as t:
        a, b = iter(t), iter(t)  # two visits of one reader, interleaved
        assert [next(a).offset for _ in range(5)] == [next(b).offset for _ in range(5)]
    assert t.closed


def test_bad_arguments(demo):
    with pytest.raises(ValueError, match='order'):
        nanotrace.open(demo, order='sideways')
    with pytest.raises(ValueError, match='on_corrupt'):
        nanotrace.open(demo, on_corrupt='ignore')
    with pytest.raises(ValueError, match='order'):
        nanotrace.open(demo).events('backwards')
    with pytest.raises(TypeError):
        nanotrace.open(42)
    ev = next(iter(nanotrace.open(demo)))
    with pytest.raises(AttributeError):
        ev.name = 'x'


def test_to_dataframe_columns(demo, monkeypatch):
    """The package's part: columns and rows handed to pandas.DataFrame (a stand-in module
    records them, so this runs without pandas)."""
    made = {}

    def frame(data, columns):
        made['data'], made['columns'] = data, columns
        return 'frame'
    monkeypatch.setitem(sys.modules, 'pandas', types.SimpleNamespace(DataFrame=frame))
    with nanotrace.open(demo) as trace:
        assert trace.to_dataframe() == 'frame'
        events = list(trace)
    assert made['columns'] == ['time_ns', 'kind', 'category', 'name', 'thread', 'process', 'id',
                                 'args']
    assert made['data']['time_ns'] == [e.time_ns for e in events]
    assert made['data']['args'] == [e.args for e in events]
    monkeypatch.setitem(sys.modules, 'pandas', None)
    with pytest.raises(ImportError, match='pandas'):
        nanotrace.open(demo).to_dataframe()


def test_bench_program_runs(work):
    """bench/nt_bench_python.py (the events/s figure of the README) runs and prints its
    keys; its figures are never judged here."""
    bench = os.environ.get('NT_BENCH_PYTHON')
    if not bench:
        pytest.fail('NT_BENCH_PYTHON is not set: run this test through meson', pytrace=False)
    p = subprocess.run([sys.executable, bench, '--demo', DEMO, '--trace-dump', TRACE_DUMP,
                        '--events', '4000', '--reps', '1', '--json'], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    for order in ('time', 'stream'):
        for what in ('count', 'fields', 'c_visit'):
            assert res['%s_%s_mev_s' % (what, order)] > 0
    assert res['events'] > 0
    bad = subprocess.run([sys.executable, bench, '--demo', DEMO, '--reps', '0'],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and '--reps' in bad.stderr


MEMORY_CHILD = r'''
import resource, sys
import nanotrace
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t = nanotrace.open(sys.argv[1])
before, n = rss(), 0
for order in ('time', 'stream'):
    for ev in t.events(order):
        ev.args
        n += 1
print(n, rss() - before)
'''


def test_iteration_memory_is_bounded(work):
    """Events stream: reading every event in both orders grows the interpreter by less than
    the archive's own size plus 8 MiB (the Event objects of a list of them would take
    hundreds of bytes each)."""
    path = record(work, 'memory.ntrace', '--threads', '4', '--requests', '4000',
                  '--buffer-size', str(64 << 20))
    p = subprocess.run([sys.executable, '-c', MEMORY_CHILD, path], capture_output=True,
                       text=True, check=True)
    events, grown = map(int, p.stdout.split())
    assert events > 200000
    assert grown < os.path.getsize(path) + (8 << 20), (events, grown)
    assert grown < events * 100 // 2, (events, grown)


@pytest.mark.parametrize('scope', ['process', 'global'])
def test_async_and_flow_ids(work, scope):
    """event.id and event.id_scope of async and flow events (request_program's requests),
    against trace-dump's Chrome JSON: the async id in "id2" {local|global}, every flow event
    of one id under one Chrome "id"."""
    path = os.path.join(work, 'requests-%s.ntrace' % scope)
    if os.path.exists(path):
        os.unlink(path)
    subprocess.run([program('NT_REQUEST_PROGRAM'), '50'] + (['global'] if scope == 'global'
                                                           else []),
                   env=dict(os.environ, NANOTRACE=path), check=True)
    with nanotrace.open(path) as trace:
        events = list(trace.events('time'))
    phase = {'async_begin': 'b', 'async_instant': 'n', 'async_end': 'e', 'flow_begin': 's',
             'flow_step': 't', 'flow_end': 'f'}
    ours = [(phase[e.kind], e.id, e.id_scope) for e in events if e.kind in phase]
    assert all(e.id == 0 and e.id_scope is None for e in events if e.kind not in phase)
    theirs = [e for e in chrome_events(path) if e['ph'] in 'bnestf']
    assert len(ours) == len(theirs) == 50 * 6
    flow_ids = {}
    for (ph, ident, id_scope), c in zip(ours, theirs):
        assert ph == c['ph'] and id_scope == scope
        if ph in 'bne':
            assert c['id2'] == {'local' if scope == 'process' else 'global': hex(ident)}
        else:
            assert flow_ids.setdefault(ident, c['id']) == c['id']
    assert sorted(flow_ids) == list(range(1, 51)) and len(set(flow_ids.values())) == 50
    os.unlink(path)
