"""trace-dump --format ctf -o DIR: a CTF 1.8 trace that babeltrace2 reads without a warning,
event by event equal to what trace-dump itself reads.

The reference is trace-dump's Chrome JSON of the same archive (its "ts" is exact to the ns,
its args typed); babeltrace2's text output (--clock-cycles: the clock's raw values, which
are CLOCK_MONOTONIC ns) is parsed back into events and the two are compared as multisets
(babeltrace2 and trace-dump break ties of equal times differently): kind, category:name,
pid, tid, time to the nanosecond (a Complete is stamped at its end), duration, every
argument with its type. Inputs: the demo, a Trace2 import of the golden corpus (many
processes), a streaming demo, a circular demo whose losses babeltrace2 must report with
their exact count, and damaged archives. Skipped (77) when babeltrace2 is not installed.
Run by meson (suite reader) with NT_TRACE_DUMP, NT_DEMO, NT_TRACE_IMPORT, NT_MAKE_BUNDLE,
NT_CTF_CASES and NT_CORPUS.
"""
import decimal
import json
import math
import os
import re
import shutil
import stat
import subprocess

import pytest

from conftest import program, two_process_bundle

TRACE_DUMP, DEMO, TRACE_IMPORT, MAKE_BUNDLE, CTF_CASES = (
    program(v) for v in ('NT_TRACE_DUMP', 'NT_DEMO', 'NT_TRACE_IMPORT', 'NT_MAKE_BUNDLE',
                         'NT_CTF_CASES'))
CORPUS = os.environ.get('NT_CORPUS', '')
BABELTRACE = shutil.which('babeltrace2')

pytestmark = pytest.mark.skipif(BABELTRACE is None,
                                reason='babeltrace2 not installed (Debian package babeltrace2)')


# ---- babeltrace2's pretty text, parsed back -----------------------------------------------

_ESCAPES = {'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v',
            '\\': '\\', "'": "'", '"': '"', '?': '?'}


class Enum(tuple):
    """( "label" : container = N )"""


def _string(s, i):
    out = []
    i += 1
    while s[i] != '"':
        if s.startswith('\\x', i):  # a control byte
            out.append(chr(int(s[i + 2:i + 4], 16)))
            i += 4
        elif s[i] == '\\':
            out.append(_ESCAPES.get(s[i + 1], '\\' + s[i + 1]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return ''.join(out), i + 1


def _value(s, i):
    c = s[i]
    if c == '{':
        i += 2
        fields = {}
        while s[i] != '}':
            m = re.compile(r'([^ =]+) = ').match(s, i)
            fields[m.group(1)], i = _value(s, m.end())
            if s.startswith(', ', i):
                i += 2
            else:
                i += 1  # the space before "}"
        return fields, i + 1
    if c == '[':
        i += 2
        items = []
        while s[i] != ']':
            m = re.compile(r'\[\d+\] = ').match(s, i)
            v, i = _value(s, m.end())
            items.append(v)
            i += 2 if s.startswith(', ', i) else 1
        return items, i + 1
    if c == '(':
        label, i = _string(s, i + 2)
        m = re.compile(r' : container = (-?\d+) \)').match(s, i)
        return Enum((label, int(m.group(1)))), m.end()
    if c == '"':
        return _string(s, i)
    m = re.compile(r'0x[0-9a-fA-F]+|[-+0-9.eEinfa]+').match(s, i)
    t = m.group(0)
    if t.startswith('0x'):
        return int(t, 16), m.end()
    if re.fullmatch(r'-?\d+', t):
        return int(t), m.end()
    return float(t), m.end()


def parse_bt_line(line):
    m = re.match(r'\[(\d+)\] (.*?): (?=\{ pid = )', line)
    assert m, 'unexpected babeltrace2 line: %r' % line
    i, parts = m.end(), []
    while i < len(line):
        v, i = _value(line, i)
        parts.append(v)
        i += 2 if line.startswith(', ', i) else 0
        if i < len(line) and line[i] != '{':
            break
    packet, ectx, payload = parts
    return int(m.group(1)), m.group(2), packet, ectx, payload


def babeltrace(ctf_dir, clock='--clock-cycles'):
    p = subprocess.run([BABELTRACE, clock, '--no-delta', ctf_dir],
                       capture_output=True)
    return p.returncode, p.stdout.decode('utf-8', 'surrogateescape'), \
        p.stderr.decode('utf-8', 'replace')


def bt_count(ctf_dir):
    p = subprocess.run([BABELTRACE, '-c', 'sink.utils.counter', ctf_dir], capture_output=True,
                       text=True)
    m = re.findall(r'^\s*([\d,]+) Event messages', p.stdout, re.M)  # it counts as it goes
    return int(m[-1].replace(',', '')) if m else None


# ---- trace-dump's own reading: Chrome JSON ---------------------------------------------------

PHASE = {'begin': 'B', 'end': 'E', 'instant': 'i', 'complete': 'X', 'counter': 'C',
         'trace2_region_enter': 'B', 'trace2_region_leave': 'E'}


def dump(*args):
    p = subprocess.run([TRACE_DUMP, *args], capture_output=True)
    return p.returncode, p.stdout.decode('utf-8', 'surrogateescape'), \
        p.stderr.decode('utf-8', 'replace')


def us_to_ns(v):
    return int(decimal.Decimal(str(v)) * 1000)


def chrome_events(archive):
    rc, out, err = dump('--format', 'chrome', archive)
    assert rc == 0, err
    doc = json.loads(out)
    evs = [e for e in doc['traceEvents']
           if e['ph'] != 'M' and not (e.get('cat') == 'nanotrace' and e['name'] == 'events lost')]
    return evs, doc['otherData']


def env_of(ctf_dir):
    text = open(os.path.join(ctf_dir, 'metadata'), errors='surrogateescape').read()
    env = dict(re.findall(r'^\t(\w+) = (\d+);$', text.split('env {')[1].split('};')[0], re.M))
    clock = text.split('clock {')[1].split('};')[0]
    offset = int(re.search(r'offset_s = (-?\d+);', clock).group(1)) * 10**9 + \
        int(re.search(r'\toffset = (\d+);', clock).group(1))
    return {k: int(v) for k, v in env.items()}, offset


def same_value(ref, got):
    if isinstance(ref, bool):
        return isinstance(got, Enum) and got[0] == ('true' if ref else 'false')
    if isinstance(ref, float) or ref in ('NaN', 'Infinity', '-Infinity'):
        r = float(ref.replace('Infinity', 'inf')) if isinstance(ref, str) else ref
        if math.isnan(r):
            return isinstance(got, float) and math.isnan(got)
        # babeltrace2's pretty sink prints doubles with %g (6 significant digits)
        return isinstance(got, (int, float)) and math.isclose(r, got, rel_tol=1e-5)
    if isinstance(ref, str) and ref.startswith('0x') and isinstance(got, int):
        return int(ref, 16) == got  # a pointer: hexadecimal on both sides
    if isinstance(ref, list) and isinstance(got, list):
        return len(ref) == len(got) and all(map(same_value, ref, got))
    if isinstance(got, str):
        # CTF strings keep the archive's bytes; trace-dump's JSON shows invalid UTF-8 as U+FFFD
        got = got.encode('utf-8', 'surrogateescape').decode('utf-8', 'replace')
    return ref == got


def canonical_ref(e, start):
    name = '%s:%s' % (e['cat'], e['name'])
    ts = us_to_ns(e['ts'])
    dur = us_to_ns(e['dur']) if e['ph'] == 'X' else None
    return (ts, e['pid'], e['tid'], e['ph'], name, dur)


def discarded(err):
    """The counts of babeltrace2's loss warnings, one per gap ("1 event", "2 events")."""
    return [int(x) for x in re.findall(r'^WARNING: Tracer discarded (\d+) events? between ',
                                       err, re.M)]


def compare(archive, ctf_dir, expect_warnings=False, rename=None):
    """Every event of the archive (per trace-dump) is one of babeltrace2's, and the other way
    round; returns (babeltrace2's events, stderr, env, trace-dump's otherData)."""
    failures = []
    rc, out, err = babeltrace(ctf_dir)
    assert rc == 0, err
    env, offset = env_of(ctf_dir)
    # the only thing babeltrace2 may say: the losses, each thread's, exactly
    warned = discarded(err)
    assert len(warned) == len(err.splitlines()), 'babeltrace2 said: %s' % err[:2000]
    assert sum(warned) == env['events_lost_in_gaps'] + env['events_lost_at_stream_ends'], \
        (warned, env['events_lost_in_gaps'], env['events_lost_at_stream_ends'])
    if not expect_warnings:
        assert err == '', 'babeltrace2 said: %s' % err[:2000]
    start = env['start_monotonic_ns']
    assert offset == env['start_realtime_ns'] - start, 'clock offset is realtime - monotonic'
    ref, other = chrome_events(archive)
    got = {}
    for line in out.splitlines():
        cycles, name, packet, ectx, payload = parse_bt_line(line)
        kind = payload.pop('nt_kind')[0]
        dur = payload.pop('nt_duration_ns', None)
        ph = PHASE.get(kind, 'i')
        ts = cycles - start - (dur or 0)  # a Complete is stamped at its end
        assert (ectx['vpid'], ectx['vtid']) == (packet['pid'], packet['tid'])
        # raw bytes of a name as trace-dump's JSON shows them
        name = name.encode('utf-8', 'surrogateescape').decode('utf-8', 'replace')
        key = (ts, ectx['vpid'], ectx['vtid'], ph, name, dur)
        got.setdefault(key, []).append(payload)
    nref = 0
    for e in ref:
        key = canonical_ref(e, start)
        cands = got.get(key)
        nref += 1
        if not cands:
            failures.append('missing in babeltrace2: %r' % (key,))
            continue
        args = {(rename or {}).get(k, k): v for k, v in e.get('args', {}).items()}
        for i, p in enumerate(cands):
            p = {k: v for k, v in p.items() if not (k.endswith('_count') and
                                                    isinstance(p.get(k[:-6]), list))}
            if p.keys() == args.keys() and all(same_value(args[k], p[k]) for k in args):
                del cands[i]
                break
        else:
            failures.append('arguments differ at %r: trace-dump %r, babeltrace2 %r' %
                            (key, args, cands))
    left = sum(len(v) for v in got.values())
    unmatched = other.get('unmatched_ends', 0)
    if left != unmatched:  # chrome leaves out Ends whose Begin was lost; CTF keeps them
        failures.append('%d babeltrace2 events beyond trace-dump\'s %d (unmatched ends %d)'
                        % (left, nref, unmatched))
    assert not failures, '%d differences: %s' % (len(failures), '; '.join(failures[:5]))
    assert bt_count(ctf_dir) == nref + unmatched == env['events']
    return nref + unmatched, err, env, other


def export(archive, ctf_dir, *extra):
    shutil.rmtree(ctf_dir, ignore_errors=True)
    return dump('--format', 'ctf', '-o', ctf_dir, *extra, archive)


def first_last(ctf_dir):
    """babeltrace2's first and last timestamps (ns of the clock, wall time with offset)."""
    _, out, _ = babeltrace(ctf_dir)
    cyc = [int(l[1:21]) for l in out.splitlines()]
    return min(cyc), max(cyc)


@pytest.fixture(scope='module')
def work(workdir):
    return workdir


def report(what, archive, ctf_dir, n):
    rc, stats, _ = dump('--stats', archive)
    events = re.search(r'^events: (\d+)', stats, re.M).group(1)
    lo, hi = first_last(ctf_dir)
    env, _ = env_of(ctf_dir)
    print('%s: babeltrace2 %d events, first %d ns, last %d ns (clock); trace-dump %s events, '
          'start_monotonic_ns %d' % (what, n, lo, hi, events, env['start_monotonic_ns']))


def test_demo(work):
    archive = os.path.join(work, 'ctf-demo.ntrace')
    subprocess.run([DEMO, archive, '--threads', '3', '--requests', '50'], check=True,
                   capture_output=True)
    out = os.path.join(work, 'ctf-demo')
    rc, _, err = export(archive, out)
    assert rc == 0 and err == '', err
    n, _, env, _ = compare(archive, out)
    report('demo', archive, out, n)
    assert stat.S_IMODE(os.lstat(out).st_mode) == 0o700
    files = sorted(os.listdir(out))
    assert 'metadata' in files and len(files) == 1 + 4  # main and three workers
    for f in files:
        assert stat.S_IMODE(os.lstat(os.path.join(out, f)).st_mode) == 0o600, f
    assert env['timestamps_clamped'] == 0 and env['damage_reports'] == 0
    # the clock's offset makes babeltrace2's default output wall-clock time
    _, secs, _ = babeltrace(out, '--clock-seconds')
    first = decimal.Decimal(secs.splitlines()[0][1:].split(']')[0])
    lo, _ = first_last(out)
    assert int(first * 10**9) == lo + env['start_realtime_ns'] - env['start_monotonic_ns']


def test_trace2_import(work):
    if not os.path.isdir(CORPUS):
        pytest.skip('golden corpus not found: %s' % (CORPUS or 'NT_CORPUS unset'))
    cases = sorted(c for c in os.listdir(CORPUS)
                   if os.path.isfile(os.path.join(CORPUS, c, 'event')))
    assert len(cases) > 10, cases
    for case in cases:  # every case of git's: many processes, raw bytes, unknown keys
        events = os.path.join(CORPUS, case, 'event')
        archive = os.path.join(work, 'ctf-t2-%s.ntrace' % case)
        subprocess.run([TRACE_IMPORT, '-o', archive, events], check=True, capture_output=True)
        out = os.path.join(work, 'ctf-t2-%s' % case)
        rc, _, err = export(archive, out)
        assert rc == 0 and err == '', err
        n, _, env, _ = compare(archive, out)
        report('trace2 import %s' % case, archive, out, n)
        pids = set(re.findall(rb'"sid":"([^"]*)"', open(events, 'rb').read()))
        assert len([f for f in os.listdir(out) if f.startswith('stream-')]) >= len(pids) > 0


def test_bundle(work):
    """Two processes in one bundle (trace-record's archive): a stream per thread, each
    naming its process by the section's name, every event as trace-dump reads it."""
    bundle = two_process_bundle(work, 'ctf')
    out = os.path.join(work, 'ctf-bundle')
    rc, _, err = export(bundle, out)
    assert rc == 0 and err == '', err
    n, _, env, _ = compare(bundle, out)
    assert env['processes'] == 2
    _, text, _ = babeltrace(out)
    seen = {(p['procname'], p['pid']) for _, _, p, _, _ in map(parse_bt_line, text.splitlines())}
    assert {name for name, _ in seen} == {'web', 'db'} and len(seen) == 2, seen
    assert len([f for f in os.listdir(out) if f.startswith('stream-')]) == 3 + 4


def test_edges(work):
    """300 threads (more streams than stay open), every argument type at its edges, names
    that are no TSDL identifiers or collide once made one, dynamic names, and a Complete
    recorded after the one nested in it (stamped at their ends: nothing is clamped)."""
    archive = os.path.join(work, 'ctf-cases.ntrace')
    subprocess.run([CTF_CASES, archive], check=True)
    out = os.path.join(work, 'ctf-cases')
    rc, _, err = export(archive, out)
    assert rc == 0 and err == '', err
    # the field names a viewer shows: '-' made '_', then made unique ("_2"), as are the
    # payload's own nt_kind and TSDL's keyword _Bool
    rename = {'nt_kind': 'nt_kind_2', 'Bool': 'Bool_2', 'a-b': 'a_b', 'a_b': 'a_b_2'}
    n, _, env, _ = compare(archive, out, rename=rename)
    assert n == 300 * 8 and env['timestamps_clamped'] == 0
    assert len([f for f in os.listdir(out) if f.startswith('stream-')]) == 300


def test_streaming(work):
    archive = os.path.join(work, 'ctf-stream.ntrace')
    subprocess.run([DEMO, archive, '--mode', 'streaming', '--buffer-size', '262144',
                    '--threads', '4', '--requests', '2000'], check=True, capture_output=True)
    out = os.path.join(work, 'ctf-stream')
    rc, _, err = export(archive, out)
    assert rc == 0 and err == '', err
    n, _, env, _ = compare(archive, out, expect_warnings=True)
    report('streaming demo', archive, out, n)
    _, stats, _ = dump('--stats', archive)
    lost = int(re.search(r'^gaps: \d+ \((\d+) events lost', stats, re.M).group(1))
    assert env['events_lost_in_gaps'] == lost


def test_losses_reported(work):
    """A circular demo loses events between chunks: babeltrace2 reports each thread's, with
    trace-dump's exact count, and reads everything else."""
    archive = os.path.join(work, 'ctf-circular.ntrace')
    subprocess.run([DEMO, archive, '--mode', 'circular', '--buffer-size', '65536',
                    '--duration-ms', '200'], check=True, capture_output=True)
    out = os.path.join(work, 'ctf-circular')
    rc, _, err = export(archive, out)
    assert rc == 0 and err == '', err
    n, bt_err, env, _ = compare(archive, out, expect_warnings=True)
    _, stats, _ = dump('--stats', archive)
    lost = int(re.search(r'^gaps: \d+ \((\d+) events lost', stats, re.M).group(1))
    assert lost > 0, 'the circular demo lost nothing: the test proves nothing'
    warned = discarded(bt_err)
    assert lost == env['events_lost_in_gaps'], (lost, env)
    # the overwrites before the oldest chunk kept: no gap shows them, the stream's end does
    header = (int(re.search(r'^overwritten: (\d+)', stats, re.M).group(1)) +
              int(re.search(r'^dropped: (\d+)', stats, re.M).group(1)))
    assert sum(warned) == header == lost + env['events_lost_at_stream_ends'], (warned, header)
    assert all(l.startswith('WARNING: Tracer discarded') for l in bt_err.splitlines())


def test_drops_and_missing_events_reported(work):
    """Issue 25 item 4: a oneshot arena's drops (no gap shows them) and a truncated archive's
    missing events reach babeltrace2 as discarded events, and the metadata's env counts
    them by reason."""
    archive = os.path.join(work, 'ctf-oneshot-drops.ntrace')
    subprocess.run([DEMO, archive, '--mode', 'oneshot', '--buffer-size', '65536',
                    '--duration-ms', '200'], check=True, capture_output=True)
    _, stats, _ = dump('--stats', archive)
    dropped = int(re.search(r'^dropped: (\d+) events \(rolling full (\d+)', stats, re.M).group(1))
    assert dropped > 0, 'the oneshot demo dropped nothing: the test proves nothing'
    out = os.path.join(work, 'ctf-oneshot-drops')
    rc, _, err = export(archive, out)
    assert rc == 0 and err == '', err
    n, bt_err, env, _ = compare(archive, out, expect_warnings=True)
    assert discarded(bt_err) == [dropped], bt_err
    assert env['events_dropped_rolling_full'] == env['events_dropped'] == dropped, env
    # cut in half: the header's count less what the chunks still hold is discarded
    data = open(os.path.join(work, 'ctf-demo.ntrace'), 'rb').read()
    cut = os.path.join(work, 'ctf-cut.ntrace')
    open(cut, 'wb').write(data[:len(data) // 2])
    out = os.path.join(work, 'ctf-cut')
    rc, _, err = export(cut, out)
    missing = re.search(r'\((\d+) missing\)', err)
    assert rc == 2 and missing, err
    rc, _, bt_err = babeltrace(out)
    assert rc == 0 and discarded(bt_err) == [int(missing.group(1))], bt_err


def test_damage(work):
    """A damaged chunk: reported with its offset and exit 2; with --on-corrupt stop nothing is
    left; skipping, the trace holds the rest and its metadata counts the damage."""
    archive = os.path.join(work, 'ctf-demo.ntrace')
    data = bytearray(open(archive, 'rb').read())
    bad = os.path.join(work, 'ctf-damaged.ntrace')
    # 64 bytes in the middle of the file, inside the chunks, made garbage
    data[len(data) // 2:len(data) // 2 + 64] = b'\xff' * 64
    open(bad, 'wb').write(bytes(data))
    out = os.path.join(work, 'ctf-damaged')
    rc, _, err = export(bad, out, '--on-corrupt', 'stop')
    assert rc == 2 and 'at byte' in err and 'nothing is left' in err, err
    assert not os.path.exists(out)
    rc, _, err = export(bad, out)
    assert rc == 2 and 'at byte' in err and 'damage_reports' in err, err
    env, _ = env_of(out)
    assert env['damage_reports'] > 0
    # Events the damage cost are discarded in the last packet where their count is known
    # (how many depends on where the garbage lands in this run's layout): babeltrace2 warns
    # of those losses and of nothing else, and never of more events than the archive made.
    brc, _, bt_err = babeltrace(out)
    warned = sum(discarded(bt_err))
    assert brc == 0 and len(discarded(bt_err)) == len(bt_err.splitlines()), bt_err
    rc, stats, _ = dump('--stats', archive)
    made = int(re.search(r'^events: (\d+)', stats, re.M).group(1))
    assert warned <= made, (warned, made, bt_err)
    rc, _, err = export(bad, out, '--salvage')
    assert rc == 0, err


def test_refusals(work):
    archive = os.path.join(work, 'ctf-demo.ntrace')
    # usage: ctf needs -o, -o needs ctf
    for args in (['--format', 'ctf', archive], ['-o', os.path.join(work, 'x'), archive]):
        rc, _, err = dump(*args)
        assert rc == 1 and "Try 'trace-dump --help'." in err, (args, err)
    # a directory with something in it is never mixed with an export
    full = os.path.join(work, 'ctf-full')
    shutil.rmtree(full, ignore_errors=True)
    os.mkdir(full)
    open(os.path.join(full, 'keep'), 'w').write('mine')
    rc, _, err = dump('--format', 'ctf', '-o', full, archive)
    assert rc == 2 and full in err and 'not empty' in err, err
    assert os.listdir(full) == ['keep']
    # a link at DIR is refused, whatever it points to, and its target untouched
    target = os.path.join(work, 'ctf-victim')
    shutil.rmtree(target, ignore_errors=True)
    os.mkdir(target)
    link = os.path.join(work, 'ctf-link')
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(target, link)
    rc, _, err = dump('--format', 'ctf', '-o', link, archive)
    assert rc == 2 and link in err, err
    assert os.listdir(target) == []
    # a file at DIR
    rc, _, err = dump('--format', 'ctf', '-o', os.path.join(full, 'keep'), archive)
    assert rc == 2 and 'not a directory' in err, err
    # an existing empty directory is used
    rc, _, err = dump('--format', 'ctf', '-o', target, archive)
    assert rc == 0 and 'metadata' in os.listdir(target), err
    # a directory that cannot be made: its path and the reason
    rc, _, err = dump('--format', 'ctf', '-o', os.path.join(work, 'no', 'such', 'dir'), archive)
    assert rc == 2 and 'No such file or directory' in err, err


def test_disk_full(work):
    """A full disk: exit 2 naming the file and the reason, and nothing left behind. Needs
    root (a private mount namespace with a 64 KiB tmpfs), like test_disk_full."""
    if os.geteuid() != 0 or shutil.which('unshare') is None:
        pytest.skip('needs root and unshare(1) to mount a small tmpfs')
    archive = os.path.join(work, 'ctf-big.ntrace')  # an export of about 1.5 MB
    subprocess.run([DEMO, archive, '--threads', '2', '--requests', '3000'], check=True,
                   capture_output=True)
    fs = os.path.join(work, 'ctf-fs')
    os.makedirs(fs, exist_ok=True)
    script = ('mount -t tmpfs -o size=64k,mode=0700 tmpfs "$FS" && '
              '"$TD" --format ctf -o "$FS/out" "$A"; echo "rc=$?"; ls -A "$FS"')
    p = subprocess.run(['unshare', '--mount', '--propagation', 'private', 'sh', '-c', script],
                       env=dict(os.environ, FS=fs, TD=TRACE_DUMP, A=archive),
                       capture_output=True, text=True)
    assert 'rc=2' in p.stdout, (p.stdout, p.stderr)
    assert os.path.join(fs, 'out') in p.stderr and 'No space left on device' in p.stderr, \
        p.stderr
    assert p.stdout.strip().splitlines()[-1] == 'rc=2', 'left behind: %r' % p.stdout
