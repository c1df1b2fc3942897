"""trace-dump --format perfetto -o FILE: Perfetto's protobuf trace, proven against Perfetto's
own schema (third_party/perfetto/perfetto_trace.proto, vendored).

- Every field number and enum value the writer uses (reader/render/nt_pb.h: NT_PF_FIELDS,
  NT_PF_ENUMS) is the schema's, with a wire type that fits the field's type (protoc
  --descriptor_set_out, read with python3-protobuf).
- Every output decodes with `protoc --decode=perfetto.protos.Trace` without a message.
- Rebuilt as trace_processor builds it (sequences, SEQ_INCREMENTAL_STATE_CLEARED and
  SEQ_NEEDS_INCREMENTAL_STATE, set on every packet that relies on incremental state (a
  sequence clock, a default, an interned id), interned names per sequence,
  TracePacketDefaults, the incremental sequence clock and the ClockSnapshots; packets
  sorted by (time, arrival);
  a SLICE_END ends the innermost open slice of its track, by name and category when it
  has them), every slice, instant and counter value equals trace-dump's own reading of the
  same archive (its Chrome JSON: "ts" exact to the ns, typed "args"), as multisets:
  process, thread, time to the ns, duration, category, name, every argument. Trace2's
  "start".."atexit" and child_start..child_exit are slices on both sides.
- Async spans (issue 26): the slices of each async track (its parent a process track, or
  none for a global id; the id in the track's name) equal the Chrome JSON's b/n/e paired
  per (scope, pid of a local id, id, category, name), instants inside. Flows: flow_ids and
  terminating_flow_ids joined in time order as trace_processor joins them, each point
  resolved to the slice open on its thread (its parent), equal point for point to the
  Chrome JSON's s/t/f resolved as the viewers do.
Inputs: the demo, a bundle of two processes, a Trace2 import of every case of the golden
corpus, a circular demo (gaps and overwrites where Perfetto shows them), request_program's
requests (tests/reader/test_async.py) in one process and in two under trace-record.
Skipped (77) without protoc (protobuf-compiler) or python3-protobuf.
"""
import decimal
import importlib
import json
import math
import os
import re
import stat
import subprocess
import sys

import pytest

from conftest import (import_corpus_case, program, proto_schema, protobuf_tools,
                      two_process_bundle)

TRACE_DUMP, DEMO, TRACE_IMPORT, MAKE_BUNDLE = (
    program(v) for v in ('NT_TRACE_DUMP', 'NT_DEMO', 'NT_TRACE_IMPORT', 'NT_MAKE_BUNDLE'))
CORPUS = os.environ.get('NT_CORPUS', '')
SOURCE = os.environ.get('NT_SOURCE_ROOT') or os.path.join(os.path.dirname(__file__), '..', '..')
PROTO_DIR = os.path.join(SOURCE, 'third_party', 'perfetto')
PB_H = os.path.join(SOURCE, 'reader', 'render', 'nt_pb.h')
PROTOC, pytestmark = protobuf_tools()


@pytest.fixture(scope='module')
def pb(workdir):
    """perfetto_trace_pb2 generated from the vendored schema by protoc."""
    out = os.path.join(workdir, 'perfetto-pb2')
    os.makedirs(out, exist_ok=True)
    subprocess.run([PROTOC, '-I', PROTO_DIR, '--python_out=' + out, 'perfetto_trace.proto'],
                   check=True)
    sys.path.insert(0, out)
    return importlib.import_module('perfetto_trace_pb2')


def dump(*args):
    p = subprocess.run([TRACE_DUMP, *args], capture_output=True)
    return p.returncode, p.stdout.decode('utf-8', 'surrogateescape'), \
        p.stderr.decode('utf-8', 'replace')


def export(archive, out, *extra):
    if os.path.lexists(out):
        os.unlink(out)
    rc, _, err = dump('--format', 'perfetto', '-o', out, *extra, archive)
    return rc, err


def protoc_decode(path):
    with open(path, 'rb') as f:
        p = subprocess.run([PROTOC, '-I', PROTO_DIR, '--decode=perfetto.protos.Trace',
                            'perfetto_trace.proto'], stdin=f, capture_output=True)
    assert p.returncode == 0 and p.stderr == b'', p.stderr.decode(errors='replace')[:2000]
    return p.stdout


# ---- the field numbers ----------------------------------------------------------------------

def test_field_numbers_are_the_schema(workdir):
    messages, enums, wire = proto_schema(PROTOC, [PROTO_DIR], ['perfetto_trace.proto'],
                                         os.path.join(workdir, 'perfetto.desc'))
    src = open(PB_H).read()
    rows = re.findall(r'X\((PF_\w+), "([\w.]+)", "(\w+)", (\d+), ([VFL])\)', src)
    assert len(rows) >= 50, rows
    bad = []
    for const, msg, field, num, w in rows:
        f = messages.get(msg, {}).get(field)
        if f is None or f.number != int(num) or f.type not in wire[w]:
            bad.append('%s: %s.%s = %s (%s): schema says %s' %
                       (const, msg, field, num, w, f and (f.number, f.type)))
    values = re.findall(r'X\((PF_\w+), "([\w.]+)", (\d+)\)', src)
    assert len(values) >= 8, values
    for const, en, num in values:
        names = {v: k for k, v in enums.get(en, {}).items()}
        if int(num) not in names or not names[int(num)].endswith(const[3:]):
            bad.append('%s: %s = %s: schema has %s' % (const, en, num, names.get(int(num))))
    assert not bad, bad
    # the sequence-scoped clock id is in the range the schema gives them
    assert re.search(r'#define PF_CLOCK_SEQUENCE 64\b', src)


# ---- trace_processor's reading, redone ------------------------------------------------------

def norm_annotation(a, interned):
    name = a.name if a.HasField('name') else interned[3][a.name_iid]
    kind = a.WhichOneof('value')
    if kind is None:
        v = tuple(x.string_value for x in a.array_values)
    elif kind == 'bool_value':
        v = bool(a.bool_value)
    elif kind == 'string_value_iid':
        v = interned[29][a.string_value_iid]
    elif kind == 'pointer_value':
        v = '0x%x' % a.pointer_value
    elif kind == 'double_value':
        d = a.double_value
        v = 'NaN' if math.isnan(d) else 'Infinity' if d == math.inf else \
            '-Infinity' if d == -math.inf else d
    else:
        v = getattr(a, kind)
    return name, v


def relies_on_state(p, te, clock):
    """Whether a TrackEvent packet needs its sequence's incremental state to be read: a
    sequence clock (an incremental one counts from the previous packet), a field taken from
    TracePacketDefaults, or an interned id. Perfetto's schema (TracePacket.SequenceFlags) and
    its synthetic-track-event reference set SEQ_NEEDS_INCREMENTAL_STATE on exactly these
    packets, so a reader that lost the sequence's start skips them instead of misreading."""
    def annotation_iids(a):
        return a.HasField('name_iid') or a.HasField('string_value_iid') or \
            any(map(annotation_iids, a.array_values)) or \
            any(map(annotation_iids, a.dict_entries))
    return (clock >= 64 or not p.HasField('timestamp_clock_id') or
            not te.HasField('track_uuid') or te.HasField('name_iid') or
            len(te.category_iids) > 0 or any(map(annotation_iids, te.debug_annotations)))


def norm_json(v):
    if isinstance(v, list):
        return tuple(v)
    return v


class Rebuilt:
    def __init__(self):
        self.slices, self.instants, self.counters, self.process_instants = [], [], [], []
        self.async_spans, self.flows = [], []
        self.start_mono = None


def args_key(args):
    return tuple(sorted(map(repr, args)))


def rebuild(pb, path):
    """The trace as trace_processor builds it: resolves sequences, interning, defaults and
    clocks, sorts by (time, arrival), and pairs slice ends with begins per track."""
    trace = pb.Trace()
    trace.ParseFromString(open(path, 'rb').read())
    tracks, seqs, evs = {}, {}, []
    out = Rebuilt()
    for i, p in enumerate(trace.packet):
        sid = p.trusted_packet_sequence_id
        assert sid, 'packet %d has no trusted_packet_sequence_id' % i
        st = seqs.setdefault(sid, {'valid': False})
        if p.sequence_flags & 1:
            st.update(valid=True, interned={1: {}, 2: {}, 3: {}, 29: {}}, defaults=None,
                      clocks={}, snap={})
        if p.sequence_flags & 2:
            assert st['valid'], 'packet %d needs incremental state its sequence lacks' % i
        if p.HasField('trace_packet_defaults'):
            st['defaults'] = p.trace_packet_defaults
        if p.HasField('interned_data'):
            d = p.interned_data
            for field, entries in ((1, d.event_categories), (2, d.event_names),
                                   (3, d.debug_annotation_names),
                                   (29, d.debug_annotation_string_values)):
                for e in entries:
                    assert e.iid not in st['interned'][field], 'iid %d twice' % e.iid
                    st['interned'][field][e.iid] = e.str.decode('utf-8') if field == 29 \
                        else e.name
        if p.HasField('clock_snapshot'):
            clocks = {c.clock_id: c for c in p.clock_snapshot.clocks}
            if p.clock_snapshot.primary_trace_clock:
                assert p.clock_snapshot.primary_trace_clock == 3  # MONOTONIC
                out.start_mono = clocks[3].timestamp
            for cid, c in clocks.items():
                if cid >= 64:
                    assert 3 in clocks, 'a sequence clock needs MONOTONIC beside it'
                    st['clocks'][cid] = c.timestamp  # the next delta counts from here
                    st['snap'][cid] = (c.timestamp, clocks[3].timestamp, c.is_incremental)
        if p.HasField('track_descriptor'):
            td = p.track_descriptor
            tracks[td.uuid] = td
        if not p.HasField('track_event'):
            continue
        defaults = st.get('defaults')
        if p.HasField('timestamp_clock_id'):
            clock = p.timestamp_clock_id
        elif defaults is not None and defaults.HasField('timestamp_clock_id'):
            clock = defaults.timestamp_clock_id
        else:
            clock = 6  # BOOTTIME: nothing here may fall back to it
        if clock >= 64:
            snap_value, snap_mono, incremental = st['snap'][clock]
            assert incremental
            st['clocks'][clock] += p.timestamp
            ts = st['clocks'][clock] - snap_value + snap_mono
        else:
            assert clock == 3, 'timestamp on clock %d' % clock
            ts = p.timestamp
        te = p.track_event
        track = te.track_uuid if te.HasField('track_uuid') else \
            defaults.track_event_defaults.track_uuid
        assert p.sequence_flags & 2 or not relies_on_state(p, te, clock), \
            'packet %d relies on incremental state without SEQ_NEEDS_INCREMENTAL_STATE' % i
        interned = st.get('interned', {1: {}, 2: {}, 3: {}, 29: {}})
        name = te.name if te.HasField('name') else \
            interned[2][te.name_iid] if te.HasField('name_iid') else None
        cats = list(te.categories) + [interned[1][c] for c in te.category_iids]
        args = [norm_annotation(a, interned) for a in te.debug_annotations]
        value = te.double_counter_value if te.HasField('double_counter_value') else \
            te.counter_value
        flow = (tuple(te.flow_ids), tuple(te.terminating_flow_ids))
        evs.append((ts, i, te.type, track, name, ','.join(cats) or None, args, value, flow))
    evs.sort(key=lambda e: (e[0], e[1]))
    stacks = {}

    def owner(uuid):
        td = tracks[uuid]
        while not td.HasField('thread') and td.HasField('parent_uuid'):
            td = tracks[td.parent_uuid]
        return (td.thread.pid, td.thread.tid) if td.HasField('thread') else \
            (td.process.pid, None)

    def async_scope(uuid):
        """(scope, pid, id) of an async span's track, or None for any other track."""
        td = tracks[uuid]
        if td.HasField('thread') or td.HasField('process') or td.HasField('counter'):
            return None
        parent = tracks[td.parent_uuid] if td.HasField('parent_uuid') else None
        if parent is not None and parent.HasField('thread'):
            return None  # a Trace2 child's track
        _, _, hex_id = td.name.rpartition(' ')
        return ('local', parent.process.pid, hex_id) if parent is not None else \
            ('global', None, hex_id)

    active, chains = {}, []  # flows as trace_processor joins them (MaybeParseTrackEventFlows)

    def flow_point(flow, point):
        starts, ends = flow
        for fid in starts:
            if fid in active:
                active[fid].append(('t',) + point)
            else:
                active[fid] = [('s',) + point]
                chains.append(active[fid])
        for fid in ends:  # a terminating id of no active flow is ignored
            if fid in active:
                active.pop(fid).append(('f',) + point)

    for ts, _, typ, track, name, cat, args, value, flow in evs:
        rel = ts - out.start_mono
        scope = async_scope(track)
        if scope is not None:
            stack = stacks.setdefault(track, [])
            if typ == 1:
                stack.append([rel, name, cat, list(args), []])
            elif typ == 3 and stack:
                stack[-1][4].append((rel, args_key(args)))
            elif typ == 3:  # an async instant of no open span: a span of its own, no time
                out.async_spans.append((*scope, cat, name, None, None, (),
                                        ((rel, args_key(args)),)))
            elif typ == 2 and stack:
                b = stack.pop()
                out.async_spans.append((*scope, b[2], b[1], b[0], rel - b[0],
                                        args_key(b[3] + args), tuple(b[4])))
            continue
        pid, tid = owner(track)
        if flow != ((), ()):
            assert typ == 3 and tid is not None, 'flow ids on a non-instant or off a thread'
            top = stacks.get(track) and stacks[track][-1]
            bound = (top[1], args_key(top[3])) if top else None
            flow_point(flow, (pid, tid, rel, cat, name, args_key(args), bound))
            continue
        if typ == 1:
            stacks.setdefault(track, []).append([rel, name, cat, list(args)])
        elif typ == 2:
            stack = stacks.get(track, [])
            for k in range(len(stack) - 1, -1, -1):
                if name is None or (stack[k][1] == name and stack[k][2] == cat):
                    b = stack.pop(k)
                    out.slices.append((pid, tid, b[0], rel - b[0], b[2], b[1],
                                       tuple(sorted(map(repr, b[3] + args)))))
                    break
        elif typ == 3:
            row = (pid, tid, rel, cat, name, tuple(sorted(map(repr, args))))
            (out.instants if tid is not None else out.process_instants).append(row)
        elif typ == 4:
            out.counters.append((pid, tid, tracks[track].name, rel, value))
    for track, stack in stacks.items():
        scope = async_scope(track)
        for b in stack:  # never ended: "did not end"
            if scope is not None:
                out.async_spans.append((*scope, b[2], b[1], b[0], None, args_key(b[3]),
                                        tuple(b[4])))
                continue
            pid, tid = owner(track)
            out.slices.append((pid, tid, b[0], None, b[2], b[1], tuple(sorted(map(repr, b[3])))))
    out.flows = [(c[0][4], c[0][5], tuple(c)) for c in chains]
    return out, tracks


def us_to_ns(v):
    return int(decimal.Decimal(str(v)) * 1000)


def reference(archive):
    """trace-dump's own reading (its Chrome JSON) in the same terms."""
    rc, text, err = dump('--format', 'chrome', archive)
    assert rc == 0, err
    doc = json.loads(text)
    ref = Rebuilt()
    stacks, procs, children = {}, {}, {}
    spans, flows = {}, {}
    for e in doc['traceEvents']:
        if e['ph'] == 'M':
            continue
        key = (e['pid'], e['tid'])
        ts = us_to_ns(e['ts'])
        args = [(k, norm_json(v)) for k, v in e.get('args', {}).items()]
        ph, name, cat = e['ph'], e['name'], e['cat']
        if ph in 'bne':  # by (scope, pid of a local id, id), category and name
            (scope, value), = e['id2'].items()
            span = (scope, e['pid'] if scope == 'local' else None, value)
            stack = spans.setdefault((span, cat, name), [])
            if ph == 'b':
                stack.append([ts, args, []])
            elif ph == 'n' and stack:
                stack[-1][2].append((ts, args_key(args)))
            elif ph == 'n':
                ref.async_spans.append((*span, cat, name, None, None, (),
                                        ((ts, args_key(args)),)))
            elif ph == 'e' and stack:  # an end never begun: otherData counts it
                b = stack.pop()
                ref.async_spans.append((*span, cat, name, b[0], ts - b[0],
                                        args_key(b[1] + args), tuple(b[2])))
            continue
        if ph in 'stf':  # bound to the slice open on the thread ("bp":"e" for "f")
            top = stacks.get(key) and stacks[key][-1]
            bound = (top[1], args_key(top[3])) if top else None
            flows.setdefault((cat, name, e['id']), []).append(
                (ph, *key, ts, cat, name, args_key(args), bound))
            continue
        if ph == 'i' and cat == 'trace2' and name == 'start':
            ph, name = 'B', 'process'
            procs[key] = procs.get(key, 0) + 1
        elif ph == 'i' and cat == 'trace2' and name == 'atexit' and procs.get(key):
            procs[key] -= 1
            st = stacks[key]
            k = max(j for j in range(len(st)) if st[j][1] == 'process')
            b = st.pop(k)
            ref.slices.append((*key, b[0], ts - b[0], b[2], b[1],
                               tuple(sorted(map(repr, b[3] + args)))))
            continue
        elif ph == 'i' and cat == 'trace2' and name in ('child_start', 'child_exit'):
            cid = (key, e['args']['child_id'])
            if name == 'child_start':
                children[cid] = [ts, 'child', cat, args]
                continue
            if cid in children:
                b = children.pop(cid)
                ref.slices.append((*key, b[0], ts - b[0], b[2], b[1],
                                   tuple(sorted(map(repr, b[3] + args)))))
                continue
        if ph == 'B':
            stacks.setdefault(key, []).append([ts, name, cat, args])
        elif ph == 'E':
            b = stacks[key].pop()
            ref.slices.append((*key, b[0], ts - b[0], b[2], b[1],
                               tuple(sorted(map(repr, b[3] + args)))))
        elif ph == 'X':
            ref.slices.append((*key, ts, us_to_ns(e['dur']), cat, name,
                               tuple(sorted(map(repr, args)))))
        elif ph == 'i':
            ref.instants.append((*key, ts, cat, name, tuple(sorted(map(repr, args)))))
        elif ph == 'C':
            for k, v in e.get('args', {}).items():
                if isinstance(v, str) and v.startswith('0x'):
                    v = int(v, 16)
                if isinstance(v, (int, float)):
                    ref.counters.append((*key, '%s %s' % (name, k), ts, int(v)
                                         if isinstance(v, bool) else v))
    for key, st in stacks.items():
        for b in st:
            ref.slices.append((*key, b[0], None, b[2], b[1], tuple(sorted(map(repr, b[3])))))
    for cid, b in children.items():
        ref.slices.append((*cid[0], b[0], None, b[2], b[1], tuple(sorted(map(repr, b[3])))))
    for (span, cat, name), stack in spans.items():
        for b in stack:
            ref.async_spans.append((*span, cat, name, b[0], None, args_key(b[1]), tuple(b[2])))
    ref.flows = [(cat, name, tuple(points)) for (cat, name, _), points in flows.items()]
    return ref, doc['otherData']


def multiset_diff(a, b):
    from collections import Counter
    ca, cb = Counter(a), Counter(b)
    return list((ca - cb).elements())[:5], list((cb - ca).elements())[:5]


def compare(pb, archive, out, flows=True):
    """The Perfetto file of `archive` equals trace-dump's reading, event for event: slices,
    instants, counters, async spans and (unless `flows` is false) every flow, point by
    point with the slice each point binds."""
    protoc_decode(out)
    got, tracks = rebuild(pb, out)
    ref, other = reference(archive)
    assert got.start_mono is not None, 'no ClockSnapshot making MONOTONIC the trace clock'
    failures = []
    for what in ('slices', 'instants', 'counters', 'async_spans') + (('flows',) if flows else ()):
        extra, missing = multiset_diff(getattr(got, what), getattr(ref, what))
        if extra or missing:
            failures.append('%s: perfetto only %r; trace-dump only %r' % (what, extra, missing))
    assert not failures, '; '.join(failures)
    n = len(got.slices) + len(got.instants) + len(got.counters)
    assert n > 0
    return got, tracks, other


def losses_of(got):
    """The "nanotrace losses" instants' counts, by pid."""
    out = {}
    for pid, _, _, cat, name, args in got.process_instants:
        assert (cat, name) == ('nanotrace', 'nanotrace losses')
        out[pid] = dict(eval(a) for a in args)
    return out


# ---- the cases ---------------------------------------------------------------------------------

def test_demo(pb, workdir):
    archive = os.path.join(workdir, 'pf-demo.ntrace')
    subprocess.run([DEMO, archive, '--threads', '3', '--requests', '50'], check=True,
                   capture_output=True)
    out = os.path.join(workdir, 'pf-demo.pftrace')
    rc, err = export(archive, out)
    assert rc == 0 and err == '', err
    assert stat.S_IMODE(os.lstat(out).st_mode) == 0o600
    got, tracks, other = compare(pb, archive, out)
    threads = {(t.thread.pid, t.thread.tid, t.thread.thread_name) for t in tracks.values()
               if t.HasField('thread')}
    assert len(threads) == 4 and ('main' in {n for _, _, n in threads}), threads
    procs = [t.process for t in tracks.values() if t.HasField('process')]
    assert [p.process_name for p in procs] == ['nanotrace-demo'], procs
    assert got.counters, 'the demo records counters'
    assert losses_of(got) == {}, 'an intact archive has no losses to show'
    # counter tracks: one per thread, counter name and argument, under the thread's track
    names = {(t.parent_uuid, t.name) for t in tracks.values() if t.HasField('counter')}
    assert len(names) == len([t for t in tracks.values() if t.HasField('counter')])
    # both orders give the same events
    out2 = os.path.join(workdir, 'pf-demo-stream.pftrace')
    rc, err = export(archive, out2, '--order', 'stream')
    assert rc == 0, err
    got2, _, _ = compare(pb, archive, out2)


def test_bundle(pb, workdir):
    bundle = two_process_bundle(workdir, 'pf')
    out = os.path.join(workdir, 'pf-bundle.pftrace')
    rc, err = export(bundle, out)
    assert rc == 0 and err == '', err
    got, tracks, _ = compare(pb, bundle, out)
    procs = {t.process.process_name for t in tracks.values() if t.HasField('process')}
    assert procs == {'web', 'db'}, procs
    pids = {s[0] for s in got.slices}
    assert len(pids) == 2, pids


def test_trace2_import(pb, workdir):
    if not os.path.isdir(CORPUS):
        pytest.skip('golden corpus not found: %s' % (CORPUS or 'NT_CORPUS unset'))
    cases = sorted(c for c in os.listdir(CORPUS)
                   if os.path.isfile(os.path.join(CORPUS, c, 'event')))
    assert len(cases) > 10, cases
    process_slices = child_slices = 0
    for case in cases:
        archive = import_corpus_case(TRACE_IMPORT, CORPUS, case,
                                     os.path.join(workdir, 'pf-t2-%s.ntrace' % case))
        out = os.path.join(workdir, 'pf-t2-%s.pftrace' % case)
        rc, err = export(archive, out)
        assert rc == 0 and err == '', (case, err)
        got, _, _ = compare(pb, archive, out)
        process_slices += sum(1 for s in got.slices if s[5] == 'process')
        child_slices += sum(1 for s in got.slices if s[5] == 'child')
    assert process_slices > 10 and child_slices > 0, (process_slices, child_slices)


def test_losses(pb, workdir):
    """A circular demo: each gap an "events lost" instant on its thread with its count, and
    the header's overwrites and the gaps' sum in "nanotrace losses" on the process track."""
    archive = os.path.join(workdir, 'pf-circular.ntrace')
    subprocess.run([DEMO, archive, '--mode', 'circular', '--buffer-size', '65536',
                    '--duration-ms', '200'], check=True, capture_output=True)
    out = os.path.join(workdir, 'pf-circular.pftrace')
    rc, err = export(archive, out)
    assert rc == 0 and err == '', err
    got, _, other = compare(pb, archive, out)
    _, stats, _ = dump('--stats', archive)
    overwritten = int(re.search(r'^overwritten: (\d+)', stats, re.M).group(1))
    assert overwritten > 0, 'the circular demo lost nothing: the test proves nothing'
    gaps = sum(dict(eval(a) for a in i[5])['lost'] for i in got.instants
               if i[4] == 'events lost')
    losses = losses_of(got)
    assert list(losses) and all(v.get('events_overwritten') == overwritten
                                for v in losses.values()), (losses, overwritten)
    assert gaps == other.get('events_lost_in_gaps', 0)
    if gaps:
        assert list(losses.values())[0]['events_lost_in_gaps'] == gaps
    assert list(losses.values())[0].get('unmatched_ends', 0) == other['unmatched_ends']


def test_refusals(pb, workdir):
    archive = os.path.join(workdir, 'pf-demo.ntrace')
    if not os.path.exists(archive):
        subprocess.run([DEMO, archive, '--threads', '1', '--requests', '5'], check=True,
                       capture_output=True)
    for args in (['--format', 'perfetto', archive], ['--format', 'perfetto', '--stats', '-o',
                                                      os.path.join(workdir, 'x'), archive]):
        rc, _, err = dump(*args)
        assert rc == 1 and "Try 'trace-dump --help'." in err, (args, err)
    victim = os.path.join(workdir, 'pf-victim')
    open(victim, 'w').write('mine')
    link = os.path.join(workdir, 'pf-link')
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(victim, link)
    rc, _, err = dump('--format', 'perfetto', '-o', link, archive)
    assert rc == 2 and link in err and 'symbolic link' in err, err
    assert open(victim).read() == 'mine' and os.path.islink(link)
    rc, _, err = dump('--format', 'perfetto', '-o', os.path.join(workdir, 'no', 'dir', 'f'),
                      archive)
    assert rc == 2 and 'No such file or directory' in err, err
    # a damaged archive: reported with its offset, exit 2; the file holds what was read
    data = bytearray(open(archive, 'rb').read())
    data[len(data) // 2:len(data) // 2 + 64] = b'\xff' * 64
    bad = os.path.join(workdir, 'pf-damaged.ntrace')
    open(bad, 'wb').write(bytes(data))
    out = os.path.join(workdir, 'pf-damaged.pftrace')
    rc, err = export(bad, out)
    assert rc == 2 and 'at byte' in err, err
    protoc_decode(out)
    # the damage is on the process track, each place with its offset, as stderr said it
    got, _ = rebuild(pb, out)
    losses = list(losses_of(got).values())
    said = re.findall(r'at byte (\d+)', err)
    assert losses and losses[0]['damaged_places'] == len(said), (losses, err)
    assert [re.match(r'offset (\d+): ', d).group(1) for d in losses[0]['damage']] == said
    rc, err = export(bad, out, '--salvage')
    assert rc == 0, err


def test_string_values_interned_within_bounds(pb, workdir):
    """String argument values are interned per sequence while short and while the sequence
    holds fewer than 1024 (nt_render_perfetto.h: PF_VALUE_MAX, PF_VALUES_MAX): past either
    bound they are written whole, and every value still reads back as trace-dump reads it."""
    sid = '20261121T230246.881007Z-H0a7c9cdf-P00006405'
    lines = ['{"event":"version","sid":"%s","thread":"main","time":"2026-11-21T23:02:46.000001Z",'
             '"file":"common-main.c","line":50,"evt":"3","exe":"2.39.5"}' % sid]

    def data(i, value):
        return ('{"event":"data","sid":"%s","thread":"main","time":"2026-11-21T23:02:46.%06dZ",'
                '"file":"x.c","line":1,"repo":1,"t_abs":0.1,"t_rel":0.1,"nesting":1,'
                '"category":"c","key":"k","value":"%s"}' % (sid, 10 + i, value))
    values = ['x' * 64, 'y' * 65, 'x' * 64, 'caf\u00e9']   # at, past the length bound
    values += ['v%d' % i for i in range(1500)]           # past the cap: the last ones whole
    values += ['v%d' % i for i in range(0, 1500, 7)]     # repeats: interned ones by iid
    lines += [data(i, v) for i, v in enumerate(values)]
    events = os.path.join(workdir, 'pf-values.event')
    open(events, 'w', encoding='utf-8').write('\n'.join(lines) + '\n')
    archive = os.path.join(workdir, 'pf-values.ntrace')
    subprocess.run([TRACE_IMPORT, '-o', archive, events], check=True, capture_output=True)
    out = os.path.join(workdir, 'pf-values.pftrace')
    rc, err = export(archive, out)
    assert rc == 0 and err == '', err
    got, _, _ = compare(pb, archive, out)
    seen = [dict(eval(a) for a in i[5]).get('value') for i in got.instants if i[4] == 'k']
    assert sorted(seen) == sorted(values), (len(seen), len(values))
    trace = pb.Trace()
    trace.ParseFromString(open(out, 'rb').read())
    interned = [e.str for p in trace.packet
                for e in p.interned_data.debug_annotation_string_values]
    whole = [a.string_value for p in trace.packet for a in p.track_event.debug_annotations
             if a.HasField('string_value')]
    assert len(interned) == 1024 and len(set(interned)) == 1024, len(interned)
    assert b'y' * 65 not in interned and 'y' * 65 in whole and b'x' * 64 in interned
    assert 'v1499' in whole and 'v0' not in whole


# ---- async spans and flows (issue 26) ----------------------------------------------------------

def request_archive(workdir, name, n, *extra, size='64M'):
    """tests/support/request_program's requests (as tests/reader/test_async.py runs it): an
    async span "request" and a flow "handoff" through the slices accept, process, answer."""
    path = os.path.join(workdir, name + '.ntrace')
    if os.path.exists(path):
        os.remove(path)
    env = dict(os.environ, NANOTRACE=path, NANOTRACE_MODE='oneshot', NANOTRACE_BUFFER_SIZE=size)
    subprocess.run([program('NT_REQUEST_PROGRAM'), str(n), *extra], env=env, check=True)
    return path


def check_requests(got, n, scope):
    """Every request: one span with its instant, one flow binding its own three slices."""
    assert len(got.flows) == n, 'flows rebuilt: %d of %d' % (len(got.flows), n)
    reqs = set()
    for cat, name, points in got.flows:
        assert (cat, name) == ('req', 'handoff')
        assert [p[0] for p in points] == ['s', 't', 'f'], points
        assert [p[7][0] for p in points] == ['accept', 'process', 'answer'], points
        assert len({p[7][1] for p in points}) == 1, points  # one request's "req"
        reqs.add(points[0][7][1])
    assert len(reqs) == n
    assert len(got.async_spans) == n
    assert all(s[0] == scope and s[3:5] == ('req', 'request') and s[6] is not None and
               len(s[8]) == 1 for s in got.async_spans), got.async_spans[:3]


def without_flow_ids(pb, path, out):
    """The same file with every flow id dropped: what the flows comparison must catch."""
    trace = pb.Trace()
    trace.ParseFromString(open(path, 'rb').read())
    for p in trace.packet:
        if p.HasField('track_event'):
            p.track_event.ClearField('flow_ids')
            p.track_event.ClearField('terminating_flow_ids')
    open(out, 'wb').write(trace.SerializeToString())


@pytest.mark.parametrize('scope', ['process', 'global'])
def test_async_spans_and_flows(pb, workdir, scope):
    n = 300
    archive = request_archive(workdir, 'pf-requests-' + scope, n,
                              *(['global'] if scope == 'global' else []))
    out = os.path.join(workdir, 'pf-requests-%s.pftrace' % scope)
    rc, err = export(archive, out)
    assert rc == 0 and err == '', err
    got, tracks, _ = compare(pb, archive, out)
    check_requests(got, n, 'local' if scope == 'process' else 'global')
    assert losses_of(got) == {}, 'every request is whole: nothing unpaired to show'
    # the span tracks: a child of the process track for process-scoped ids, global else
    procs = {u for u, t in tracks.items() if t.HasField('process')}
    spans = [t for t in tracks.values() if t.name.startswith('request 0x')]
    assert len(spans) == n and all((t.parent_uuid in procs) == (scope == 'process')
                                   for t in spans)
    # the comparison fails when the flow ids are dropped
    bare = os.path.join(workdir, 'pf-requests-bare.pftrace')
    without_flow_ids(pb, out, bare)
    with pytest.raises(AssertionError, match='flows: perfetto only'):
        compare(pb, archive, bare)


def test_async_spans_and_flows_across_two_processes(pb, workdir):
    """trace-record over request_program's pipe form: the answering process is another, the
    id global, so each request's span and flow join across the bundle's two sections."""
    n = 300
    bundle = os.path.join(workdir, 'pf-requests-pipe.ntbundle')
    if os.path.exists(bundle):
        os.remove(bundle)
    subprocess.run([program('NT_TRACE_RECORD'), '-o', bundle, '--buffer-size', '64M', '--',
                    program('NT_REQUEST_PROGRAM'), str(n), 'pipe'], check=True,
                   capture_output=True)
    out = os.path.join(workdir, 'pf-requests-pipe.pftrace')
    rc, err = export(bundle, out)
    assert rc == 0 and err == '', err
    got, _, _ = compare(pb, bundle, out)
    check_requests(got, n, 'global')
    assert all(len({p[1] for p in points}) == 2 for _, _, points in got.flows)


def test_unpaired_spans_and_flows_said_never_connected(pb, workdir):
    """A buffer far too small: requests lose events. The losses instant says what cannot be
    paired, as Chrome JSON's otherData does, and no flow joins two requests' slices."""
    archive = request_archive(workdir, 'pf-requests-small', 20000, size='64K')
    out = os.path.join(workdir, 'pf-requests-small.pftrace')
    rc, err = export(archive, out)
    assert rc == 0 and err == '', err
    # Chrome's viewers draw no arrow from a step whose begin was lost; Perfetto's flow ids
    # start the flow there: flows are compared by what they bind, below.
    got, _, other = compare(pb, archive, out, flows=False)
    keys = ('async_unended', 'async_unbegun', 'flows_unfinished', 'flow_points_unbegun')
    losses = list(losses_of(got).values())[0]
    assert sum(other.get(k, 0) for k in keys) > 0, other
    assert {k: losses.get(k, 0) for k in keys} == {k: other.get(k, 0) for k in keys}
    for _, _, points in got.flows:
        assert len({p[7][1] for p in points if p[7]}) <= 1, points
