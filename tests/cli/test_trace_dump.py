"""trace-dump as a user meets it: exit codes (0 ok, 1 usage, 2 bad input), error messages
that name the file and the problem, and outputs that other tools accept.

Run by meson (suite cli) with NT_TRACE_DUMP, NT_DEMO, NT_WORKDIR, NT_RENDER_CASES,
NT_TRACE_IMPORT and NT_CORPUS (the processes test is skipped without the corpus).
Each test lists every check it failed.
"""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import program

TRACE_DUMP, DEMO, RENDER_CASES, TRACE_IMPORT = (
    program(v) for v in ('NT_TRACE_DUMP', 'NT_DEMO', 'NT_RENDER_CASES', 'NT_TRACE_IMPORT'))
CORPUS = os.environ.get('NT_CORPUS', '')
WORK = None  # set by the demo fixture
failures = []


def run(*args):
    p = subprocess.run([TRACE_DUMP, *args], capture_output=True)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def check(name, cond, detail=''):
    print(('ok   ' if cond else 'FAIL ') + name + ('' if cond else ': ' + detail))
    if not cond:
        failures.append(name + (': ' + detail if detail else ''))


def path(name):
    return os.path.join(WORK, name)


def remove_stale(p):
    """A waiting loop must see the file the demo makes, not one a previous run left."""
    if os.path.exists(p):
        os.unlink(p)


@pytest.fixture(scope='module')
def demo(workdir):
    global WORK
    WORK = workdir
    archive = path('demo.ntrace')
    subprocess.run([DEMO, archive, '--threads', '3', '--requests', '50'], check=True,
                   capture_output=True)
    return archive


@pytest.fixture(autouse=True)
def every_check(demo):
    """Runs each test with an empty failure list; fails it naming every failed check."""
    failures.clear()
    yield


def verify():
    assert not failures, '%d failed checks: %s' % (len(failures), '; '.join(failures))


def test_usage_errors(demo):
    archive = demo
    # usage errors: exit 1, one line naming the problem and a pointer to --help on stderr
    # (never the whole help), nothing on stdout
    for args in ([], ['--format'], ['--format', 'xml', archive], ['--bogus', archive],
                 ['--order', 'sideways', archive], ['--format=xml', archive]):
        rc, out, err = run(*args)
        lines = err.splitlines()
        check('usage %r exits 1' % (args,),
              rc == 1 and len(lines) == 2 and lines[1] == "Try 'trace-dump --help'." and
              'usage:' not in err and out == '', 'rc=%d err=%r' % (rc, err[:200]))
    # --opt=value and --opt value mean the same; -- ends the options
    same = [run(*args) for args in (['--format=chrome', archive], ['--format', 'chrome', archive],
                                    ['--format', 'chrome', '--', archive])]
    check('--format=chrome == --format chrome', same[0] == same[1] == same[2] and same[0][0] == 0)
    rc, out, _ = run('--help')
    check('--help exits 0', rc == 0 and 'usage:' in out)
    verify()


def test_unreadable_inputs(demo):
    # unreadable inputs: exit 2 and a message naming the file and the problem
    empty = path('empty.ntrace')
    open(empty, 'wb').close()
    garbage = path('garbage.ntrace')
    open(garbage, 'wb').write(bytes((i * 131 + 7) & 0xff for i in range(5000)))
    missing = path('missing.ntrace')
    nothing = path('no-archives')
    os.makedirs(nothing, exist_ok=True)
    for name, p, want in (('missing', missing, 'No such file'), ('empty', empty, 'empty'),
                          ('garbage', garbage, 'not a nanotrace archive'),
                          ('empty directory', nothing, 'no archives in this directory')):
        rc, out, err = run(p)
        check('%s file exits 2 naming it' % name, rc == 2 and p in err and want in err,
              'rc=%d err=%r' % (rc, err))
    verify()


def test_output_errors(demo):
    # an output that cannot be written: exit 2 and the reason, in every format, never a
    # silent loss (a full disk; a reader that went away, with SIGPIPE ignored)
    line = ('{"event":"region_enter","sid":"s","thread":"main",'
            '"time":"2024-01-01T00:00:00.000010Z","nesting":1,"category":"c","label":"l"}\n'
            '{"event":"cmd_name","sid":"s","thread":"main",'
            '"time":"2024-01-01T00:00:00.000020Z","name":"status","hierarchy":"status"}\n')
    log = path('output_errors.event')
    with open(log, 'w') as f:
        f.write(line * 5000)  # several output blocks
    t2 = path('output_errors.ntrace')
    subprocess.run([TRACE_IMPORT, '-o', t2, log], check=True, capture_output=True)
    formats = (['--format', 'text', demo], ['--format', 'chrome', demo], ['--stats', demo],
               ['--format', 'event', t2], ['--format', 'perf', t2], ['--format', 'normal', t2])
    for args in formats:
        if os.path.exists('/dev/full'):
            with open('/dev/full', 'wb') as full:
                p = subprocess.run([TRACE_DUMP, *args], stdout=full,
                                   stderr=subprocess.PIPE)
            err = p.stderr.decode('utf-8', 'replace')
            check('%r into a full disk exits 2 with the reason' % (args,),
                  p.returncode == 2 and 'writing standard output: No space left on device' in err,
                  'rc=%d err=%r' % (p.returncode, err))
        r, w = os.pipe()
        os.close(r)  # closed before trace-dump starts: its first write fails
        p = subprocess.run([TRACE_DUMP, *args], stdout=w, stderr=subprocess.PIPE,
                           preexec_fn=lambda: signal.signal(signal.SIGPIPE, signal.SIG_IGN))
        os.close(w)
        err = p.stderr.decode('utf-8', 'replace')
        rc = p.returncode
        check('%r into a closed pipe exits 2 with the reason' % (args,),
              rc == 2 and 'writing standard output: Broken pipe' in err,
              'rc=%d err=%r' % (rc, err))
    verify()


def test_truncated_archive(demo):
    archive = demo
    data = open(archive, 'rb').read()
    # truncated archive: what is readable is shown, the damage is named with its byte offset
    cut = len(data) - 13
    trunc = path('truncated.ntrace')
    open(trunc, 'wb').write(data[:cut])
    for fmt in ('text', 'chrome'):
        rc, out, err = run('--format', fmt, trunc)
        check('truncated (%s) exits 2 with an offset' % fmt,
              rc == 2 and trunc in err and 'at byte' in err and 'truncated' in err,
              'rc=%d err=%r' % (rc, err))
    rc, out, err = run('--on-corrupt', 'stop', trunc)
    check('truncated with --on-corrupt stop exits 2', rc == 2 and 'at byte' in err, err)
    rc, out, err = run('--stats', trunc)
    check('truncated --stats exits 2', rc == 2 and 'events:' in out, err)
    verify()


def top_level_records(data):
    """(offset, kind, size) of every top-level record after the header (format/nt_record.h:
    kind in byte 0, size in 8-byte words in byte 1, or a large record's bytes at 4..7)."""
    import struct
    size = struct.unpack_from('<I', data, 0)[0]
    off, out = (4 + size + 7) & ~7, []
    while off + 8 <= len(data):
        kind, words = data[off], data[off + 1]
        n = words * 8 if words else struct.unpack_from('<I', data, off + 4)[0]
        if kind == 0 or n < 8 or off + n > len(data):
            break
        out.append((off, kind, n))
        off += n
    return out


def chunk_events(data, off, kind):
    """ChunkHeader.event_count of a Chunk (kind 5) or of a CompressedChunk's (kind 7) copy."""
    import struct
    return struct.unpack_from('<I', data, off + (8 if kind == 7 else 0) + 12)[0]


@pytest.mark.parametrize('compression', ['off', '1'])
def test_cut_at_a_record_boundary(compression):
    """A file cut short between two records is no well-formed shorter archive: trace-dump
    says it is truncated and how many events are missing (what the header counts, less what
    the remaining chunks hold), exits 2, and with --salvage renders what is left and exits 0."""
    archive = path('cut-%s.ntrace' % compression)
    subprocess.run([DEMO, archive, '--threads', '3', '--requests', '40'], check=True,
                   capture_output=True, env=dict(os.environ, NANOTRACE_COMPRESSION=compression))
    data = open(archive, 'rb').read()
    rc, out, err = run('--stats', archive)
    written = int(re.search(r'^written: (\d+) events', out, re.M).group(1))
    check('the whole archive reads cleanly', rc == 0 and err == '', err)
    records = top_level_records(data)
    chunks = [(o, k) for o, k, n in records if k in (5, 7)]
    check('the demo made several chunks', len(chunks) >= 3, str(len(chunks)))
    for o, _ in chunks[1:]:
        held = sum(chunk_events(data, c, k) for c, k in chunks if c < o)
        cut = path('cut.ntrace')
        open(cut, 'wb').write(data[:o])
        rc, out, err = run(cut)
        want = 'its chunks hold %d (%d missing)' % (held, written - held)
        check('cut at %d exits 2' % o, rc == 2, 'rc=%d' % rc)
        check('cut at %d says %s' % (o, want), 'archive is truncated' in err and want in err, err)
        rc, out2, err2 = run('--salvage', '--stats', cut)
        check('cut at %d --salvage exits 0' % o, rc == 0 and 'archive is truncated' in err2,
              'rc=%d %s' % (rc, err2))
        check('cut at %d --salvage reads the %d events left' % (o, held),
              re.search(r'^events: %d$' % held, out2, re.M) is not None, out2[:400])
    verify()


def test_text_stats_chrome_agree(demo):
    archive = demo
    # text: header plus one aligned line per event
    rc, out, err = run(archive)
    lines = out.splitlines()
    check('text exits 0 silently', rc == 0 and err == '', err)
    check('text has a header line', lines and lines[0].split()[:3] == ['TIME(s)', 'THREAD', 'PH'])
    events_text = len(lines) - 1
    name_col = lines[0].index('NAME')
    check('text columns are aligned',
          all(len(l) > name_col and l[name_col - 2:name_col] == '  ' for l in lines[1:]))

    # stats: "events: N" agrees with the text dump
    rc, out, err = run('--stats', os.path.join(OLD_FORMATS, archive))
    stats = dict(l.split(': ', 1) for l in out.splitlines() if ': ' in l and not l.startswith(' '))
    check('stats exits 0', rc == 0, err)
    check('stats events equals text lines', stats.get('events') == str(events_text),
          '%r vs %d' % (stats.get('events'), events_text))
    check('stats reports drops and wraps', 'dropped' in stats and 'wraps' in stats)

    # chrome: valid JSON a trace viewer accepts
    rc, out, err = run('--format', 'chrome', archive)
    check('chrome exits 0', rc == 0, err)
    try:
        doc = json.loads(out)
        evs = doc['traceEvents']
        phases = {e['ph'] for e in evs}
        real = [e for e in evs if e['ph'] != 'M']
        check('chrome has every event', len(real) == events_text, '%d vs %d' % (len(real), events_text))
        check('chrome phases are Chrome phases', phases <= {'M', 'B', 'E', 'X', 'i', 'C'}, str(phases))
        check('chrome names threads', any(e['ph'] == 'M' and e['name'] == 'thread_name' for e in evs))
        check('chrome events carry pid, tid, ts in us',
              all(isinstance(e['ts'], (int, float)) and 'pid' in e and 'tid' in e for e in real))
        ts = [e['ts'] for e in real]
        check('chrome events are in timestamp order', ts == sorted(ts))
        check('chrome complete events have dur', all('dur' in e for e in real if e['ph'] == 'X'))
        be = {}
        for e in real:
            if e['ph'] in 'BE':
                be[e['tid']] = be.get(e['tid'], 0) + (1 if e['ph'] == 'B' else -1)
        check('chrome begin/end balance per thread', all(v == 0 for v in be.values()), str(be))
    except (ValueError, KeyError) as exc:
        check('chrome output is valid JSON', False, str(exc))

    # stream order gives the same events
    rc, out, err = run('--order', 'stream', archive)
    check('stream order shows the same number of events', len(out.splitlines()) - 1 == events_text)
    verify()


def test_sigkilled_demo_reads(demo):
    # a demo killed with SIGKILL mid-run leaves an archive trace-dump reads without complaint
    for mode in ('oneshot', 'circular', 'streaming'):
        killed = path('killed-%s.ntrace' % mode)
        remove_stale(killed)
        proc = subprocess.Popen([DEMO, killed, '--mode', mode, '--buffer-size', '262144',
                                 '--duration-ms', '5000'], stderr=subprocess.DEVNULL)
        for _ in range(200):  # until the arena file exists
            if os.path.exists(killed):
                break
            time.sleep(0.01)
        time.sleep(0.15)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        rc, out, err = run('--stats', killed)
        stats = dict(l.split(': ', 1) for l in out.splitlines() if ': ' in l and not l.startswith(' '))
        check('SIGKILLed %s demo: archive reads cleanly' % mode, rc == 0 and err == '', err)
        if mode == 'streaming':
            check('streaming stats count saved halves', int(stats.get('halves saved', '0')) > 0,
                  str(stats.get('halves saved')))
        check('SIGKILLed %s demo: stats say it never finished' % mode,
              stats.get('layout', '').startswith('arena') and stats.get('ended by', '').startswith('unknown')
              and int(stats.get('events', '0')) > 0, str(stats.get('layout')))
        # an arena keeps its durable records apart from its chunks: both are counted
        recs = {k: int(v) for k, v in (kv.split(' ') for kv in stats.get('records', '').split(', '))}
        check('SIGKILLed %s demo: stats count its thread, string and chunk records' % mode,
              recs.get('thread', 0) >= int(stats.get('threads', '1')) > 0 and
              recs.get('string', 0) > 0 and recs.get('chunk', 0) > 0, stats.get('records', ''))
        if mode == 'streaming':  # the saved stream repeats the arena's durable records
            defined = int(stats.get('strings', '0').split(',')[0])
            check('SIGKILLed streaming demo: each string counted once, not each record',
                  0 < defined < recs.get('string', 0), '%d strings, records %s' %
                  (defined, stats.get('records', '')))
        rc, out, err = run('--format', 'chrome', killed)
        try:
            json.loads(out)
            check('SIGKILLed %s demo: chrome JSON is valid' % mode, rc == 0)
        except ValueError as exc:
            check('SIGKILLed %s demo: chrome JSON is valid' % mode, False, str(exc))
    verify()


def test_killed_streaming_copy_cut_short(demo):
    """A streaming demo killed after saving part of its stream: its header counts the saved
    stream's events (kept with the stream's end), so the file reads cleanly, and a copy cut
    short inside the saved stream is reported as truncated with the number missing."""
    killed = path('killed-stream-cut.ntrace')
    remove_stale(killed)
    proc = subprocess.Popen([DEMO, killed, '--mode', 'streaming', '--buffer-size', '262144',
                             '--duration-ms', '8000'], stderr=subprocess.DEVNULL)
    arena = None
    for _ in range(600):  # until a saved stream of 200 KiB follows the arena
        time.sleep(0.01)
        if not os.path.exists(killed):
            continue
        if arena is None:
            arena = os.path.getsize(killed)
        elif os.path.getsize(killed) > arena + 200 * 1024:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    rc, out, err = run('--stats', killed)
    written = int(re.search(r'^written: (\d+) events', out, re.M).group(1))
    check('killed streaming demo reads cleanly', rc == 0 and err == '', err)
    check('its header counts the saved events', written > 0, out[:600])
    data = open(killed, 'rb').read()
    tail = len(data) - (arena or len(data))
    check('a saved stream follows the arena', tail > 16 * 1024, '%d bytes' % tail)
    cut = path('killed-stream-cut-short.ntrace')
    open(cut, 'wb').write(data[:len(data) - tail // 2])  # inside the saved stream
    rc, out, err = run('--stats', cut)
    check('the copy cut short exits 2', rc == 2, 'rc=%d' % rc)
    m = re.search(r'archive is truncated: its header counts (\d+) events written, its chunks '
                  r'hold (\d+) \((\d+) missing\)', err)
    check('the copy cut short is truncated, with the number missing',
          m is not None and int(m.group(1)) == written and
          int(m.group(1)) - int(m.group(2)) == int(m.group(3)) > 0, err)
    verify()


@pytest.mark.parametrize('mode', ['oneshot', 'circular'])
def test_killed_arena_copy_cut_short(mode):
    """A oneshot or circular demo killed while it records: its arena's header counts the
    events of the chunks that closed, as they close, so the killed file reads cleanly, and a
    copy that lost whole chunk slots (cut short) is reported as truncated with the events of
    the closed chunks it lost (at least: a chunk still open at the kill is in no count),
    exits 2, and --salvage reads what is left."""
    killed = path('killed-%s-cut.ntrace' % mode)
    remove_stale(killed)
    proc = subprocess.Popen([DEMO, killed, '--mode', mode, '--buffer-size', str(1 << 20),
                             '--duration-ms', '8000'], stderr=subprocess.DEVNULL)
    for _ in range(400):  # until a dozen chunks (circular: and a wrap), however loaded
        time.sleep(0.02)
        if not os.path.exists(killed):
            continue
        rc, out, _ = run('--stats', killed)
        m = re.search(r', chunks: (\d+)', out)
        w = re.search(r'^wraps: (\d+)', out, re.M)
        if m and int(m.group(1)) >= 12 and (mode == 'oneshot' or (w and int(w.group(1)) > 0)):
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    rc, out, err = run('--stats', killed)
    check('killed %s demo reads cleanly' % mode, rc == 0 and err == '', err)
    written = int(re.search(r'^written: (\d+) events', out, re.M).group(1))
    over = re.search(r'^overwritten: (\d+) events', out, re.M)
    closed = written - (int(over.group(1)) if over else 0)
    events = int(re.search(r'^events: (\d+)$', out, re.M).group(1))
    check('its header counts the closed chunks\' events', 0 < closed <= events,
          '%d closed, %d events' % (closed, events))
    g = re.search(r'durable (\d+) B, chunks 2 x \d+ x (\d+) B', out)
    durable, cs = (int(x) for x in g.groups())
    rolling = 4096 + durable  # NT_ARENA_HEADER_BYTES, then the durable region
    used = int(re.search(r', chunks: (\d+)', out).group(1))
    data = open(killed, 'rb').read()
    # Slots past `keep` go; with at most one chunk open per thread (5), each cut loses
    # closed ones too.
    for keep in (2, used // 3):
        cut = path('killed-%s-cut-short.ntrace' % mode)
        open(cut, 'wb').write(data[:rolling + keep * cs])
        rc, out, err = run('--stats', cut)
        check('%s cut to %d slots exits 2' % (mode, keep), rc == 2, 'rc=%d %s' % (rc, err))
        m = re.search(r'arena is truncated: its header counts (\d+) events in closed chunks, '
                      r'its slots hold (\d+) \(at least (\d+) missing\)', err)
        rc, out2, err2 = run('--salvage', '--stats', cut)
        left = re.search(r'^events: (\d+)$', out2, re.M)
        check('%s cut to %d slots --salvage reads the rest' % (mode, keep),
              rc == 0 and left is not None, 'rc=%d %s' % (rc, err2))
        if m is None or left is None:
            check('%s cut to %d slots says how many are missing' % (mode, keep), False, err)
            continue
        counted, held, missing = (int(x) for x in m.groups())
        lost = events - int(left.group(1))
        check('%s cut to %d slots: %d counted, %d held, at least %d missing of the %d lost'
              % (mode, keep, counted, held, missing, lost),
              counted == closed and counted - held == missing and 0 < missing <= lost, err)
    verify()


def test_sigterm_recorded(demo):
    # SIGTERM: the process dies of SIGTERM and the archive says so
    term = path('term.ntrace')
    remove_stale(term)
    proc = subprocess.Popen([DEMO, term, '--duration-ms', '5000'], stderr=subprocess.DEVNULL)
    # Signal it once it records (events in the live archive), however loaded the machine is.
    for _ in range(500):
        if os.path.exists(term) and re.search(r'^events: [1-9]', run('--stats', term)[1], re.M):
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    code = proc.wait()
    rc, out, err = run('--stats', term)
    check('SIGTERM demo dies of SIGTERM and the archive records it',
          code == -signal.SIGTERM and 'ended by: signal 15' in out, 'code %d, %r' % (code, out[-300:]))
    verify()


def test_losses_shown(demo):
    # losses show where they happened
    small = path('gaps.ntrace')
    subprocess.run([DEMO, small, '--mode', 'circular', '--buffer-size', '65536', '--duration-ms', '200'],
                   check=True, capture_output=True)
    rc, out, err = run(small)
    check('circular losses are marked in text', rc == 0 and '-- gap: ' in out and 'lost' in out, err)
    rc, out, err = run('--format', 'chrome', small)
    check('circular losses are instant events in chrome',
          rc == 0 and any(e.get('name') == 'events lost' and e['ph'] == 'i' and e['args']['lost'] > 0
                          for e in json.loads(out)['traceEvents']))
    rc, out, err = run('--stats', small)
    check('stats count gaps and drop reasons', 'gaps: ' in out and 'rolling full' in out, out)
    verify()


# Chrome JSON and --stats say only what the archive proves.
def stats_of(p):
    out = run('--stats', p)[1]
    return dict(l.split(': ', 1) for l in out.splitlines() if ': ' in l and not l.startswith(' '))


def unmatched(st):
    m = re.match(r'(\d+) ends without a begin .*, (\d+) begins without an end$',
                 st.get('unmatched', ''))
    return (int(m.group(1)), int(m.group(2))) if m else None


def chrome_doc(p):
    rc, out, err = run('--format', 'chrome', p)
    check('chrome of %s exits 0' % os.path.basename(p), rc == 0, err)
    return json.loads(out)


def ends_before_begins(evs):
    """Ends a viewer would meet with nothing open on their (pid, tid)."""
    depth, orphans = {}, 0
    for e in evs:
        key = (e['pid'], e['tid'])
        if e['ph'] == 'B':
            depth[key] = depth.get(key, 0) + 1
        elif e['ph'] == 'E':
            if depth.get(key, 0) == 0:
                orphans += 1
            else:
                depth[key] -= 1
    return orphans


def test_circular_orphan_ends(demo):
    # circular: the wrap overwrote the Begins of "outer" and of the request the oldest chunk
    # starts in; their Ends survive
    circ = path('circular-orphans.ntrace')
    subprocess.run([RENDER_CASES, 'circular', circ], check=True)
    text_ends = sum(1 for l in run(circ)[1].splitlines()[1:] if l.split()[2:3] == ['E'])
    doc = chrome_doc(circ)
    evs = doc['traceEvents']
    chrome_ends = sum(1 for e in evs if e['ph'] == 'E')
    st_unmatched = unmatched(stats_of(circ))
    check('circular chrome: no E without a B on its thread', ends_before_begins(evs) == 0,
          '%d orphan ends' % ends_before_begins(evs))
    check('circular stats count the orphan ends chrome leaves out',
          st_unmatched is not None and st_unmatched[0] >= 1 and
          st_unmatched[0] == text_ends - chrome_ends, '%r, text %d, chrome %d' %
          (st_unmatched, text_ends, chrome_ends))
    check('circular chrome otherData carries the same count',
          st_unmatched is not None and doc['otherData'].get('unmatched_ends') == st_unmatched[0],
          str(doc['otherData']))
    verify()


def test_stray_end_and_counter_series(demo):
    # a user's stray NT_END and unended NT_BEGIN; two threads' counters of one name
    thr = path('threads.ntrace')
    subprocess.run([RENDER_CASES, 'threads', thr], check=True)
    check('stats count a stray end and an unended begin', unmatched(stats_of(thr)) == (1, 1),
          str(stats_of(thr).get('unmatched')))
    doc = chrome_doc(thr)
    evs = doc['traceEvents']
    check('chrome leaves out the stray end, keeps the unended begin',
          not any(e.get('name') == 'stray' for e in evs) and
          any(e.get('name') == 'unfinished' and e['ph'] == 'B' for e in evs) and
          doc['otherData'].get('unmatched_ends') == 1 and doc['otherData'].get('unended_begins') == 1,
          str(doc['otherData']))
    series = {}
    for e in evs:
        if e['ph'] == 'C' and e['name'] == 'heap':
            # Trace Event Format: a counter series is (pid, name, id)
            series.setdefault((e['pid'], e['name'], e.get('id')), set()).add(e['tid'])
    check('two threads\' same-named counters are two series, one thread each',
          len(series) == 2 and all(len(t) == 1 for t in series.values()), str(series))
    verify()


def test_processes_counted(demo):
    if not os.path.isdir(CORPUS):
        pytest.skip('golden corpus not found: %s' % (CORPUS or 'NT_CORPUS unset'))
    # processes: what the archive holds, not the reader's table size
    for case in ('version', 'fetch_local'):
        events_file = os.path.join(CORPUS, case, 'event')
        sids = {json.loads(l)['sid'] for l in open(events_file, 'rb') if l.strip()}
        imported = path('%s.ntrace' % case)
        subprocess.run([TRACE_IMPORT, '-o', imported, events_file], check=True)
        st = stats_of(imported)
        m = re.search(r', processes (\d+)$', st.get('trace2', ''))
        check('stats of %s count its %d processes' % (case, len(sids)),
              m is not None and int(m.group(1)) == len(sids), str(m and m.group(0)))
        check('stats of imported %s claim no arena' % case, st.get('mode', '').startswith('none'),
              st.get('mode', ''))
    verify()


def test_demo_options(demo):
    # the demo documents and checks its options
    p = subprocess.run([DEMO, '--help'], capture_output=True, text=True)
    check('demo --help documents its options', p.returncode == 0 and all(
        o in p.stdout for o in ('--mode', '--buffer-size', '--duration-ms', 'streaming')))
    for bad in (['x.ntrace', '--mode', 'weird'], ['x.ntrace', '--buffer-size', '12'],
                ['x.ntrace', '--duration-ms', '-5'], []):
        p = subprocess.run([DEMO, *bad], capture_output=True, text=True, cwd=WORK)
        check('demo rejects %r' % (bad,), p.returncode == 1 and 'nanotrace-demo:' in p.stderr)
    p = subprocess.run([DEMO, '/nonexistent-dir/x.ntrace'], capture_output=True, text=True)
    check('demo names an unwritable output', p.returncode == 1 and '/nonexistent-dir/x.ntrace' in p.stderr,
          p.stderr)

    verify()


OLD_FORMATS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'reader', 'data')


@pytest.mark.parametrize('fixture', ['format-1.1-plain', 'format-1.1-zstd'])
def test_format_1_archives_read_as_before(fixture):
    """Archives of format 1.1 (no compact records; one with its chunks zstd-compressed, one
    plain), recorded by the 1.1 writer and rendered by the 1.1 trace-dump into the .txt and
    .json beside them, render byte for byte the same with this reader."""
    archive = fixture + '.ntrace'  # named as when the renderings were made (Chrome's otherData)
    for args, suffix in (([], '.txt'), (['--format', 'chrome'], '.json')):
        p = subprocess.run([TRACE_DUMP, *args, archive], capture_output=True, text=True,
                           cwd=OLD_FORMATS)
        rc, out, err = p.returncode, p.stdout, p.stderr
        want = open(os.path.join(OLD_FORMATS, fixture + suffix)).read()
        check('%s%s exit 0' % (fixture, suffix), rc == 0, err)
        check('%s%s as 1.1 rendered it' % (fixture, suffix), out == want,
              'first difference at byte %d' % next(
                  (i for i, (a, b) in enumerate(zip(out, want)) if a != b),
                  min(len(out), len(want))))
    rc, out, err = run('--stats', os.path.join(OLD_FORMATS, archive))
    check('%s --stats names format 1.1' % fixture, '(format 1.1)' in out, out[:300])
    verify()


def test_control_bytes_in_names_never_reach_the_terminal(demo):
    """An archive is untrusted: a name holding ESC (a terminal escape sequence) or another
    control byte is shown as '?' by the text format and --stats; Chrome JSON escapes it."""
    data = open(demo, 'rb').read()
    hostile = data.replace(b'worker-0', b'worker\x1b0').replace(b'request', b'req\x07est')
    check('the demo names were found', hostile != data)
    archive = path('control-bytes.ntrace')
    open(archive, 'wb').write(hostile)
    for args in ([], ['--stats']):
        p = subprocess.run([TRACE_DUMP, *args, archive], capture_output=True)
        out = p.stdout
        check('%s exits 0' % (args or 'text'), p.returncode == 0, p.stderr.decode())
        check('%s shows no control byte' % (args or 'text'),
              not any(b < 0x20 and b not in (0x0a,) or b == 0x7f for b in out), repr(out[:200]))
        check('%s shows worker?0' % (args or 'text'), b'worker?0' in out, repr(out[:300]))
    p = subprocess.run([TRACE_DUMP, '--format', 'chrome', archive], capture_output=True)
    check('chrome escapes ESC', b'worker\\u001b0' in p.stdout and b'\x1b' not in p.stdout,
          repr(p.stdout[:200]))
    verify()


def oneshot_that_dropped():
    """A oneshot demo whose arena filled: its header counts drops no gap shows."""
    p = path('dropped.ntrace')
    remove_stale(p)
    subprocess.run([DEMO, p, '--mode', 'oneshot', '--buffer-size', '65536', '--duration-ms',
                    '200'], check=True, capture_output=True)
    m = re.search(r'^dropped: (\d+) events \(rolling full (\d+)', run('--stats', p)[1], re.M)
    assert m and int(m.group(1)) > 0, 'the demo dropped nothing'
    return p, int(m.group(1))


def test_oneshot_drops_are_said_by_every_renderer(demo):
    """Issue 25 item 3: a oneshot arena that dropped events says so in text, in --follow's
    text, and on stderr for Git's formats (whose stdout stays Git's bytes)."""
    p, dropped = oneshot_that_dropped()
    said = '-- lost: %d events dropped (rolling full %d' % (dropped, dropped)
    rc, out, err = run(p)
    check('text ends with the drops', rc == 0 and out.splitlines()[-1].startswith(said),
          out.splitlines()[-1])
    rc, out, err = run('--follow', p)
    check('--follow text ends with the drops', rc == 0 and out.splitlines()[-1].startswith(said),
          out.splitlines()[-1] + err)
    for args in (['--format', 'event', p], ['--follow', '--format', 'normal', p]):
        rc, out, err = run(*args)
        check('%s: drops on stderr' % ' '.join(args[:-1]),
              rc == 0 and out == '' and 'lost: %d events dropped' % dropped in err, err)
    rc, out, err = run(demo)
    check('an archive that lost nothing says nothing', '-- lost' not in out, out[-300:])
    verify()


def test_trace2_format_of_no_trace2_says_so(demo):
    """Issue 25 item 5: a Trace2 format of an archive with no Trace2 message writes nothing
    (git's bytes: none) but says why on stderr, exit 0 (trace-dump.1)."""
    for fmt in ('normal', 'perf', 'event'):
        for args in (['--format', fmt, demo], ['--follow', '--format', fmt, demo]):
            rc, out, err = run(*args)
            lines = err.splitlines()
            check('%s: one line on stderr' % ' '.join(args[:-1]),
                  rc == 0 and out == '' and len(lines) == 1 and 'no Trace2 messages' in lines[0]
                  and demo in lines[0], repr((rc, out[:100], err)))
    events_file = os.path.join(CORPUS, 'alias_git', 'event')
    if os.path.isfile(events_file):
        imported = path('t2-has.ntrace')
        remove_stale(imported)
        subprocess.run([TRACE_IMPORT, '-o', imported, events_file], check=True,
                       capture_output=True)
        rc, out, err = run('--format', 'event', imported)
        check('Trace2 present: nothing said', rc == 0 and out and err == '', err)
    verify()


def test_chrome_other_data_carries_the_damage(demo):
    """Issue 25 item 4: Chrome's otherData says what the trace lacks: drops by reason, events
    lost in gaps, and a truncated archive's damage with its missing events; an intact
    archive's otherData gains no key."""
    p, dropped = oneshot_that_dropped()
    other = json.loads(run('--format', 'chrome', p)[1])['otherData']
    check('drops by reason', other.get('events_dropped_by_reason', {}).get('rolling_full')
          == dropped == other['events_dropped'], str(other))
    data = open(demo, 'rb').read()
    cut = path('half.ntrace')
    open(cut, 'wb').write(data[:len(data) // 2])
    rc, out, err = run('--format', 'chrome', cut)
    other = json.loads(out)['otherData']
    missing = re.search(r'\((\d+) missing\)', err)
    check('truncated: damage listed with its missing events',
          rc == 2 and missing and other.get('damaged_places') == len(err.splitlines())
          and any(missing.group(0) in d['message'] for d in other.get('damage', [])), str(other))
    other = json.loads(run('--format', 'chrome', demo)[1])['otherData']
    check('intact: no new keys', set(other) == {'producer', 'archive', 'processes',
          'events_dropped', 'events_overwritten', 'wraps', 'unmatched_ends',
          'unended_begins'}, str(other))
    verify()


def test_c1_controls_in_names_never_reach_the_terminal(demo):
    """Issue 25 item 7: C1 controls (0xc2 0x9b is CSI as UTF-8) and raw 0x9b in a thread's
    name are shown as '?' in text (event lines and gap lines), --stats and error lines; Chrome
    JSON escapes them (\\u009b). Singular counts say "1 event"."""
    src = path('c1-circular.ntrace')
    remove_stale(src)
    subprocess.run([DEMO, src, '--mode', 'circular', '--buffer-size', '65536',
                    '--duration-ms', '200'], check=True, capture_output=True)
    data = open(src, 'rb').read()
    hostile = data.replace(b'worker-1', b'wor\x9bker1')
    for i in (b'0', b'2', b'3'):
        hostile = hostile.replace(b'worker-' + i, b'worke\xc2\x9b' + i)
    check('the demo names were found', hostile.count(b'\x9b') >= 4)
    archive = path('c1-names.ntrace')
    open(archive, 'wb').write(hostile)
    c1 = re.compile(rb'\xc2[\x80-\x9f]|[\x80-\x9f]')
    for args in ([], ['--stats'], ['--order', 'stream']):
        p = subprocess.run([TRACE_DUMP, *args, archive], capture_output=True)
        check('%s exits 0' % args, p.returncode == 0, p.stderr.decode())
        bad = [l for l in p.stdout.split(b'\n') if c1.search(l.decode('utf-8', 'replace')
                                                              .encode('latin-1', 'replace'))
               or b'\x9b' in l]
        check('%s shows no C1 control' % args, bad == [], repr(bad[:2]))
        # a circular arena keeps the last events only: which threads they are depends on
        # timing, so any of the renamed threads shown escaped will do (--stats lists all)
        shown = [n for n in (b'worke?', b'wor?ker1') if n in p.stdout]
        check('%s shows a renamed thread escaped' % args,
              shown and (args != ['--stats'] or len(shown) == 2), repr(p.stdout[-300:]))
    p = subprocess.run([TRACE_DUMP, archive], capture_output=True)
    check('gap lines name the thread escaped', re.search(
        rb'^-- gap: \d+ events? of thread (worke\?\d|wor\?ker1):', p.stdout, re.M) is not None,
        repr(p.stdout[-500:]))
    check('no "1 events"', b' 1 events ' not in p.stdout)
    p = subprocess.run([TRACE_DUMP, '--format', 'chrome', archive], capture_output=True)
    check('chrome escapes C1', b'worke\\u009b0' in p.stdout and b'\xc2\x9b' not in p.stdout,
          repr(p.stdout[:300]))
    verify()
