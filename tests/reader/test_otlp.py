"""trace-dump --format otlp / otlp-json -o FILE: OpenTelemetry's OTLP, proven against the
official schema (third_party/opentelemetry-proto, vendored).

- Every field number the exporter writes (reader/render/nt_render_otlp.h: NT_OT_FIELDS) is
  the schema's, with a wire type that fits the field's type, the schema's JSON name, its
  repeated label and its message type (protoc --descriptor_set_out, read with
  python3-protobuf); SPAN_KIND_INTERNAL is the schema's.
- Every protobuf output decodes with `protoc --decode=nanotrace.otlp.File` (doc/otlp_file.proto
  over the vendored files) with nothing on stderr, and with the Python module generated
  from them.
- Every span, span event, link, attribute and gauge point equals trace-dump's own reading
  of the same archive (its Chrome JSON, as tests/reader/test_perfetto.py reads it):
  Begin/End, Complete and Trace2 process and child slices are spans (time to the ns,
  duration, category as scope, name, every argument with its type); instants and Trace2
  messages are span events of the span open on their thread (or of a zero-length span of
  their own); async spans are spans with their instants as events; each flow's points are
  links from the span of a point to the span of the one before; counters are gauge points.
  Each span's parent is in the output, in the same trace, and a Begin/End child lies in its
  parent's time.
- Each otlp-json line parses with json, names only the schema's fields (ParseDict refuses
  others) and equals the protobuf output's request, field for field.
- The same archive gives the same bytes (ids are derived from it); TRACEPARENT puts every
  root under its parent; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES reach the Resource.
- The exporter's peak heap does not grow with the events (tests/reader/otlp_memory.c).
Inputs: the demo, a bundle of two processes, request_program's async spans and flows in one
process and across two under trace-record, a Trace2 import of every case of the golden
corpus, a circular demo (its losses as resource attributes and a "nanotrace losses" span).
Skipped (77) without protoc (protobuf-compiler) or python3-protobuf.
"""
import base64
import collections
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import (OTLP_PROTOS, import_corpus_case, otlp_python_modules, program,
                      proto_schema, protobuf_tools, two_process_bundle)

TRACE_DUMP, DEMO, TRACE_IMPORT = (
    program(v) for v in ('NT_TRACE_DUMP', 'NT_DEMO', 'NT_TRACE_IMPORT'))
CORPUS = os.environ.get('NT_CORPUS', '')
SOURCE = os.environ.get('NT_SOURCE_ROOT') or os.path.join(os.path.dirname(__file__), '..', '..')
PROTO_DIR = os.path.join(SOURCE, 'third_party', 'opentelemetry-proto')
DOC_DIR = os.path.join(SOURCE, 'doc')
OTLP_H = os.path.join(SOURCE, 'reader', 'render', 'nt_render_otlp.h')
PROTOS = OTLP_PROTOS
PROTOC, pytestmark = protobuf_tools()

# What the exporter adds to every span beside the event's own arguments.
SPAN_EXTRA = ('code.filepath', 'code.lineno', 'thread.id', 'thread.name',
              'nanotrace.async_id', 'nanotrace.async_scope', 'nanotrace.unended',
              'nanotrace.instant', 'trace2.span.type')


@pytest.fixture(scope='module')
def pb(workdir):
    """The vendored protos and doc/otlp_file.proto as Python modules (protoc --python_out)."""
    return otlp_python_modules(PROTOC, SOURCE, os.path.join(workdir, 'otlp-pb2'))


def dump(*args, env=None):
    p = subprocess.run([TRACE_DUMP, *args], capture_output=True, env=env)
    return p.returncode, p.stdout.decode('utf-8', 'surrogateescape'), \
        p.stderr.decode('utf-8', 'replace')


def export(archive, out, fmt='otlp', env=None):
    if os.path.lexists(out):
        os.unlink(out)
    rc, _, err = dump('--format', fmt, '-o', out, archive, env=env)
    assert rc == 0 and err == '', err
    return open(out, 'rb').read()


def protoc_decode(path):
    with open(path, 'rb') as f:
        p = subprocess.run([PROTOC, '-I', PROTO_DIR, '-I', DOC_DIR,
                            '--decode=nanotrace.otlp.File', 'otlp_file.proto'],
                           stdin=f, capture_output=True)
    assert p.returncode == 0 and p.stderr == b'', p.stderr.decode(errors='replace')[:2000]
    return p.stdout


# ---- the field numbers ----------------------------------------------------------------------

def test_field_numbers_are_the_schema(workdir):
    from google.protobuf import descriptor_pb2
    messages, enums, wire = proto_schema(PROTOC, [PROTO_DIR], PROTOS,
                                         os.path.join(workdir, 'otlp.desc'))
    src = open(OTLP_H).read().replace('\\\n', ' ')
    F = descriptor_pb2.FieldDescriptorProto
    kinds = {'MSG': {F.TYPE_MESSAGE}, 'STR': {F.TYPE_STRING}, 'HEX': {F.TYPE_BYTES},
             'U32': {F.TYPE_UINT32}, 'ENUM': {F.TYPE_ENUM}, 'BOOL': {F.TYPE_BOOL},
             'I64S': {F.TYPE_INT64}, 'F64S': {F.TYPE_FIXED64}, 'S64S': {F.TYPE_SFIXED64},
             'DBL': {F.TYPE_DOUBLE}}
    rows = re.findall(r'X\((OT_\w+),\s*(\w+),\s*"([\w.]+)",\s*"(\w+)",\s*"(\w+)",\s*(\d+),'
                      r'\s*([VFL]),\s*(\w+),\s*(\w+),\s*(ONE|REP)\)', src)
    assert len(rows) >= 45, rows
    # the sub message constants name messages: OT_M_X for proto message names
    by_const = {m: p for _, m, p, *_ in rows}
    bad = []
    for const, m, msg, field, jname, num, w, jk, sub, rep in rows:
        f = messages.get(msg, {}).get(field)
        if f is None:
            bad.append('%s: %s.%s is not in the schema' % (const, msg, field))
            continue
        if f.number != int(num) or f.type not in wire[w] or f.type not in kinds[jk]:
            bad.append('%s: %s.%s = %s (%s, %s): schema says %s' %
                       (const, msg, field, num, w, jk, (f.number, f.type)))
        if f.json_name != jname:
            bad.append('%s: JSON name %s, schema %s' % (const, jname, f.json_name))
        if (f.label == F.LABEL_REPEATED) != (rep == 'REP'):
            bad.append('%s: repeated is %s in the schema' % (const, f.label == F.LABEL_REPEATED))
        if jk == 'MSG' and not f.type_name.endswith('.' + by_const.get(sub, '?')):
            bad.append('%s: of type %s, the row says %s' % (const, f.type_name, sub))
    assert not bad, bad
    for kind in ('INTERNAL', 'SERVER'):
        value = re.search(r'#define OT_SPAN_KIND_%s (\d+)' % kind, src)
        assert enums['Span.SpanKind']['SPAN_KIND_' + kind] == int(value.group(1)), kind


# ---- the output, read back --------------------------------------------------------------------

def anyvalue(v):
    kind = v.WhichOneof('value')
    if kind == 'array_value':
        return tuple(anyvalue(x) for x in v.array_value.values)
    return getattr(v, kind) if kind else None


def attrs(kvs):
    return [(kv.key, anyvalue(kv.value)) for kv in kvs]


class Read:
    """What an OTLP file holds, in the terms of test_perfetto's reference."""
    def __init__(self):
        self.spans = {}                # span id -> (trace id, parent, pid, scope, span)
        self.resources = {}            # pid -> attributes
        self.points = []               # (pid, tid, metric, time, value)
        self.requests = []             # (signal, request message)


def read(pb, data):
    f = pb.File()
    f.ParseFromString(data)
    out = Read()
    for req in f.traces:
        out.requests.append(('traces', req))
        for rs in req.resource_spans:
            res = dict(attrs(rs.resource.attributes))
            pid = res.get('process.pid')
            out.resources.setdefault(pid, res)
            assert out.resources[pid] == res, 'one Resource per process'
            for ss in rs.scope_spans:
                for s in ss.spans:
                    assert len(s.trace_id) == 16 and len(s.span_id) == 8
                    assert s.span_id not in out.spans, 'span id twice'
                    out.spans[s.span_id] = (s.trace_id, s.parent_span_id, pid,
                                            ss.scope.name, s)
    for req in f.metrics:
        out.requests.append(('metrics', req))
        for rm in req.resource_metrics:
            pid = dict(attrs(rm.resource.attributes)).get('process.pid')
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    for p in m.gauge.data_points:
                        v = p.as_int if p.WhichOneof('value') == 'as_int' else p.as_double
                        tid = dict(attrs(p.attributes))['thread.id']
                        out.points.append((pid, tid, m.name, p.time_unix_nano, v))
    return out


def reference(archive):
    sys.path.insert(0, os.path.dirname(__file__))
    import test_perfetto
    return test_perfetto.reference(archive)


def norm(v):
    if isinstance(v, float) and v != v:
        return 'NaN'
    if v in (float('inf'), float('-inf')):
        return 'Infinity' if v > 0 else '-Infinity'
    return v


def arg_key(pairs):
    """Arguments as the reference keeps them: sorted reprs; pointers and unsigned values are
    int64 bits in OTLP, compared as the reference's numbers (pointers "0x..")."""
    return tuple(sorted(repr((k, norm(v))) for k, v in pairs))


def ref_arg_key(pairs, ptr_as_int=True):
    out = []
    for k, v in pairs:
        if isinstance(v, str) and re.fullmatch(r'0x[0-9a-f]+', v) and ptr_as_int:
            v = int(v, 16)
            v = v - (1 << 64) if v >= 1 << 63 else v
        elif isinstance(v, int) and not isinstance(v, bool) and v >= 1 << 63:
            v -= 1 << 64
        out.append((k, v))
    return arg_key(out)


def span_kind(s, a):
    """'async', 'event' (a zero-length span made for one event), 'losses' or 'span'."""
    if s.name == 'nanotrace losses':
        return 'losses'
    if 'nanotrace.async_id' in a:
        return 'async'
    if a.get('nanotrace.instant'):
        assert s.start_time_unix_nano == s.end_time_unix_nano and \
            len(s.events) + len(s.links) <= 1 and not [k for k in a if k not in SPAN_EXTRA]
        return 'event'
    return 'span'


def own_args(a, s=None):
    """A span's attributes less the exporter's own and those its Trace2 data events made
    ("<category>.<key>", checked in test_trace2_import)."""
    data = {'%s.%s' % (dict(attrs(e.attributes)).get('nanotrace.category'), e.name)
            for e in (s.events if s is not None else ())}
    return arg_key((k, v) for k, v in a if k not in SPAN_EXTRA and k not in data)


def event_args(e):
    return arg_key((k, v) for k, v in attrs(e.attributes) if k != 'nanotrace.category')


def offsets(got, ref):
    """CLOCK_REALTIME (OTLP) minus the reference's clock, per process, from the data: the
    earliest span start of each side."""
    mine, theirs = collections.defaultdict(list), collections.defaultdict(list)
    for _, _, pid, _, s in got.spans.values():
        if span_kind(s, dict(attrs(s.attributes))) == 'span':
            mine[pid].append(s.start_time_unix_nano)
    for sl in ref.slices:
        theirs[sl[0]].append(sl[2])
    return {pid: min(mine[pid]) - min(theirs[pid]) for pid in mine if theirs.get(pid)}


def compare(pb, archive, data):
    """The OTLP file equals trace-dump's reading of the same archive (see the docstring)."""
    got = read(pb, data)
    ref, other = reference(archive)
    off = offsets(got, ref)
    spread = max(off.values()) - min(off.values()) if off else 0
    assert spread < 10**6, 'the processes disagree on the clocks: %r' % off
    spans, events, links = (collections.Counter() for _ in range(3))
    asyncs = collections.defaultdict(list)
    for sid, (trace, parent, pid, scope, s) in got.spans.items():
        if parent:
            assert parent in got.spans, 'parent of %s not exported' % s.name
            assert got.spans[parent][0] == trace, 'a child in another trace than its parent'
        a = dict(attrs(s.attributes))
        kind, tid, o = span_kind(s, a), a.get('thread.id'), off.get(pid, 0)
        dur = None if a.get('nanotrace.unended') else s.end_time_unix_nano - s.start_time_unix_nano
        for link in s.links:
            t = got.spans.get(link.span_id)
            assert t is not None and t[0] == link.trace_id, 'a link to a span not exported'
            if kind == 'span' and span_kind(t[4], dict(attrs(t[4].attributes))) == 'span':
                links[(dict(attrs(link.attributes))['nanotrace.flow'], s.name, t[4].name)] += 1
        if kind == 'async':
            asyncs[(a['nanotrace.async_scope'], pid if a['nanotrace.async_scope'] == 'process'
                    else None, a['nanotrace.async_id'], scope, s.name,
                    s.start_time_unix_nano - o, own_args(attrs(s.attributes)))].append(
                (dur, sorted((e.time_unix_nano - o, e.name, event_args(e)) for e in s.events)))
            continue
        for e in s.events:
            cat = dict(attrs(e.attributes)).get('nanotrace.category', '')
            events[(pid, tid, e.time_unix_nano - o, cat, e.name, event_args(e))] += 1
        if kind == 'span':
            spans[(pid, tid, s.start_time_unix_nano - o, dur, scope, s.name,
                   own_args(attrs(s.attributes), s))] += 1
        # (a Trace2 child process may outlive the region that started it)
        if kind == 'span' and parent and got.spans[parent][2] == pid and dur is not None \
                and (scope, s.name) != ('trace2', 'child'):
            p = got.spans[parent][4]
            if span_kind(p, dict(attrs(p.attributes))) == 'span' and \
                    not dict(attrs(p.attributes)).get('nanotrace.unended'):
                assert p.start_time_unix_nano <= s.start_time_unix_nano and \
                    s.end_time_unix_nano <= p.end_time_unix_nano, 'a child outside its parent'
    exp = collections.Counter((pid, tid, ts, dur, cat, name, ref_arg_key(eval(x) for x in a))
                              for pid, tid, ts, dur, cat, name, a in ref.slices)
    diff(spans, exp, 'spans')
    # async spans: a global id's span may end in another process, whose clock offset
    # differs by the spread: durations and instants' times are equal within it
    exp = collections.defaultdict(list)
    for scope, pid, ident, cat, name, ts, dur, a, inst in ref.async_spans:
        if ts is None:
            continue
        sc = 'process' if scope == 'local' else 'global'
        exp[(sc, pid if sc == 'process' else None, int(ident, 16), cat, name, ts,
             ref_arg_key(eval(x) for x in a))].append(
            (dur, sorted((t, name, ref_arg_key(eval(x) for x in ia)) for t, ia in inst)))
    diff(collections.Counter({k: len(v) for k, v in asyncs.items()}),
         collections.Counter({k: len(v) for k, v in exp.items()}), 'async spans')
    for k, mine in asyncs.items():
        for (d1, e1), (d2, e2) in zip(sorted(mine, key=repr), sorted(exp[k], key=repr)):
            assert (d1 is None) == (d2 is None) and (d1 is None or abs(d1 - d2) <= spread), k
            assert [x[1:] for x in e1] == [x[1:] for x in e2], k
            assert all(abs(x[0] - y[0]) <= spread for x, y in zip(e1, e2)), k
    exp = collections.Counter((pid, tid, ts, cat, name, ref_arg_key(eval(x) for x in a))
                              for pid, tid, ts, cat, name, a in ref.instants)
    diff(events, exp, 'span events')
    exp = collections.Counter()
    for cat, name, points in ref.flows:
        for before, after in zip(points, points[1:]):
            if before[7] and after[7]:
                exp[(name, after[7][0], before[7][0])] += 1
    diff(links, exp, 'links')
    exp = collections.Counter((pid, tid, name.replace(' ', '.'), ts, v)
                              for pid, tid, name, ts, v in ref.counters)
    diff(collections.Counter((pid, tid, m, t - off.get(pid, 0), v)
                             for pid, tid, m, t, v in got.points), exp, 'gauge points')
    assert sum(spans.values()) + sum(events.values()) > 0
    return got, other


def diff(got, exp, what):
    extra, missing = list((got - exp).elements())[:4], list((exp - got).elements())[:4]
    assert not extra and not missing, '%s: otlp only %r; trace-dump only %r' % (
        what, extra, missing)


def json_matches(pb, data, jsonl):
    """Each JSON line is the protobuf output's request, field for field."""
    from google.protobuf import json_format
    f = pb.File()
    f.ParseFromString(data)
    msgs = [('traces', r) for r in f.traces] + [('metrics', r) for r in f.metrics]
    lines = jsonl.decode('utf-8').splitlines()
    assert len(lines) == len(msgs) and lines
    # the Collector's otlpjsonfile receiver reads lines of up to 1 MiB (max_log_size)
    assert max(len(line.encode()) for line in lines) < 1 << 20

    def ids_to_b64(o):
        if isinstance(o, dict):
            return {k: base64.b64encode(bytes.fromhex(v)).decode() if
                    k in ('traceId', 'spanId', 'parentSpanId') else ids_to_b64(v)
                    for k, v in o.items()}
        if isinstance(o, list):
            return [ids_to_b64(x) for x in o]
        return o
    traces = iter(r for s, r in msgs if s == 'traces')
    metrics = iter(r for s, r in msgs if s == 'metrics')
    for line in lines:
        doc = json.loads(line)
        assert set(doc) in ({'resourceSpans'}, {'resourceMetrics'}), set(doc)
        want = next(traces) if 'resourceSpans' in doc else next(metrics)
        parsed = type(want)()
        json_format.ParseDict(ids_to_b64(doc), parsed)  # refuses a name not in the schema
        assert parsed == want
        for s in (s for rs in doc.get('resourceSpans', []) for ss in rs['scopeSpans']
                  for s in ss['spans']):
            assert re.fullmatch(r'[0-9a-f]{32}', s['traceId'])
            assert isinstance(s['startTimeUnixNano'], str) and isinstance(s['kind'], int)


def check(pb, workdir, archive, name):
    out = os.path.join(workdir, name + '.otlp')
    data = export(archive, out)
    protoc_decode(out)
    got, other = compare(pb, archive, data)
    jsonl = export(archive, os.path.join(workdir, name + '.jsonl'), 'otlp-json')
    json_matches(pb, data, jsonl)
    assert export(archive, out) == data, 'the same archive gives the same bytes'
    return got, other, data


# ---- the cases ---------------------------------------------------------------------------------

def test_demo(pb, workdir):
    archive = os.path.join(workdir, 'ot-demo.ntrace')
    subprocess.run([DEMO, archive, '--threads', '3', '--requests', '50'], check=True,
                   capture_output=True)
    got, _, _ = check(pb, workdir, archive, 'ot-demo')
    res = list(got.resources.values())[0]
    assert res['telemetry.sdk.name'] == 'nanotrace' and res['service.name']
    assert got.points, 'the demo has counters'


def test_bundle(pb, workdir):
    bundle = two_process_bundle(workdir, 'ot')
    got, _, _ = check(pb, workdir, bundle, 'ot-bundle')
    names = {r['service.name'] for r in got.resources.values()}
    assert names == {'web', 'db'}, names


def request_archive(workdir, name, n, *extra):
    path = os.path.join(workdir, name + '.ntrace')
    if os.path.exists(path):
        os.remove(path)
    env = dict(os.environ, NANOTRACE=path, NANOTRACE_MODE='oneshot', NANOTRACE_BUFFER_SIZE='64M')
    subprocess.run([program('NT_REQUEST_PROGRAM'), str(n), *extra], env=env, check=True)
    return path


@pytest.mark.parametrize('scope', ['process', 'global'])
def test_async_spans_and_flows(pb, workdir, scope):
    n = 200
    archive = request_archive(workdir, 'ot-requests-' + scope, n,
                              *(['global'] if scope == 'global' else []))
    got, _, _ = check(pb, workdir, archive, 'ot-requests-' + scope)
    asyncs = [s for _, _, _, _, s in got.spans.values()
              if 'nanotrace.async_id' in dict(attrs(s.attributes))]
    assert len(asyncs) == n
    linked = [s for _, _, _, _, s in got.spans.values() if s.links]
    assert len(linked) == 2 * n, 'process and answer link to the step before'


def test_async_spans_and_flows_across_two_processes(pb, workdir):
    n = 200
    bundle = os.path.join(workdir, 'ot-requests-pipe.ntbundle')
    if os.path.exists(bundle):
        os.remove(bundle)
    subprocess.run([program('NT_TRACE_RECORD'), '-o', bundle, '--buffer-size', '64M', '--',
                    program('NT_REQUEST_PROGRAM'), str(n), 'pipe'], check=True,
                   capture_output=True)
    got, _, _ = check(pb, workdir, bundle, 'ot-requests-pipe')
    cross = 0
    for _, _, pid, _, s in got.spans.values():
        for link in s.links:
            cross += got.spans[link.span_id][2] != pid
    assert cross >= n, 'each request hands over to the other process'
    # a root whose first event ends a flow joins the flow's trace
    joined = sum(1 for t, parent, _, _, s in got.spans.values()
                 for link in s.links if not parent and link.trace_id == t)
    assert joined > 0


def test_trace2_import(pb, workdir):
    if not os.path.isdir(CORPUS):
        pytest.skip('golden corpus not found: %s' % (CORPUS or 'NT_CORPUS unset'))
    cases = sorted(c for c in os.listdir(CORPUS)
                   if os.path.isfile(os.path.join(CORPUS, c, 'event')))
    assert cases
    for case in cases:
        archive = import_corpus_case(TRACE_IMPORT, CORPUS, case,
                                     os.path.join(workdir, 'ot-t2-%s.ntrace' % case))
        got, _, _ = check(pb, workdir, archive, 'ot-t2-' + case)
        procs = [s for _, p, _, _, s in got.spans.values() if s.name == 'process']
        assert procs, case
        # trace2receiver's conventions: a git process is a SERVER span, every span says its
        # Trace2 type, a process's Resource carries its SID
        assert all(s.kind == 2 and dict(attrs(s.attributes))['trace2.span.type'] == 'process'
                   for s in procs), case
        for _, _, _, scope, s in got.spans.values():
            t = dict(attrs(s.attributes)).get('trace2.span.type')
            assert (s.kind == 2) == (t == 'process'), (case, s.name)
            if scope == 'trace2' and s.name == 'child':
                assert t == 'child', case
        sids = [r.get('trace2.cmd.sid') for r in got.resources.values()
                if r.get('process.pid') in {pid for _, _, pid, _, s in got.spans.values()
                                            if s.name == 'process'}]
        assert sids and all(sids) and all(r.get('service.instance.id') == r.get('trace2.cmd.sid')
                                          for r in got.resources.values()), case
        # data messages: an attribute "<category>.<key>" of their span too
        for _, _, _, _, s in got.spans.values():
            a = dict(attrs(s.attributes))
            for e in s.events:
                ea = dict(attrs(e.attributes))
                if 'value' in ea and e.name != 'data' and ea.get('nanotrace.category') \
                        and '%s.%s' % (ea['nanotrace.category'], e.name) in a:
                    assert ('%s.%s' % (ea['nanotrace.category'], e.name)) in a


def test_losses(pb, workdir):
    archive = os.path.join(workdir, 'ot-circular.ntrace')
    subprocess.run([DEMO, archive, '--mode', 'circular', '--buffer-size', '65536',
                    '--threads', '4', '--requests', '3000'], check=True, capture_output=True)
    out = os.path.join(workdir, 'ot-circular.otlp')
    data = export(archive, out)
    protoc_decode(out)
    got = read(pb, data)
    rc, stats, _ = dump('--stats', archive)
    over = int(re.search(r'overwritten[^0-9]*(\d+)', stats).group(1)) if \
        re.search(r'overwritten[^0-9]*(\d+)', stats) else 0
    res = list(got.resources.values())[0]
    assert res.get('nanotrace.events_overwritten', 0) == over and over > 0, (res, over)
    losses = [s for _, _, _, _, s in got.spans.values() if s.name == 'nanotrace losses']
    assert len(losses) == 1
    la = dict(attrs(losses[0].attributes))
    _, other = reference(archive)
    assert la.get('nanotrace.events_lost_in_gaps', 0) == other.get('events_lost_in_gaps', 0)
    assert la.get('nanotrace.unmatched_ends', 0) == other.get('unmatched_ends', 0)


def test_damage(pb, workdir):
    """Damaged chunks: the losses span counts them and carries their messages, as Chrome's
    otherData does; exit 2, 0 with --salvage."""
    archive = os.path.join(workdir, 'ot-damaged.ntrace')
    subprocess.run([DEMO, archive, '--threads', '2', '--requests', '200'], check=True,
                   capture_output=True)
    data = bytearray(open(archive, 'rb').read())
    for i in range(len(data) // 3, len(data) // 3 + 2000, 97):
        data[i] ^= 0x5a
    open(archive, 'wb').write(data)
    out = os.path.join(workdir, 'ot-damaged.otlp')
    rc, _, err = dump('--format', 'otlp', '-o', out, archive)
    assert rc == 2 and 'damaged' in err
    rc, chrome, _ = dump('--format', 'chrome', '--salvage', archive)
    other = json.loads(chrome)['otherData']
    assert other.get('damaged_places', 0) > 0
    rc, _, err = dump('--format', 'otlp', '--salvage', '-o', out, archive)
    assert rc == 0
    got = read(pb, open(out, 'rb').read())
    losses = [s for _, _, _, _, s in got.spans.values() if s.name == 'nanotrace losses']
    a = attrs(losses[0].attributes)
    assert dict(a)['nanotrace.damaged_places'] == other['damaged_places']
    assert [v for k, v in a if k == 'nanotrace.damage'] == [
        'offset %d: %s' % (d['offset'], d['message']) for d in other['damage']][:16]


def test_environment(pb, workdir):
    archive = os.path.join(workdir, 'ot-env.ntrace')
    subprocess.run([DEMO, archive, '--threads', '1', '--requests', '5'], check=True,
                   capture_output=True)
    tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    env = dict(os.environ, OTEL_SERVICE_NAME='checkout', TRACEPARENT=tp,
               OTEL_RESOURCE_ATTRIBUTES='deployment.environment=prod,team=a%2Cb')
    got = read(pb, export(archive, os.path.join(workdir, 'ot-env.otlp'), env=env))
    res = list(got.resources.values())[0]
    assert res['service.name'] == 'checkout'
    assert res['deployment.environment'] == 'prod' and res['team'] == 'a,b'
    for trace, parent, _, _, s in got.spans.values():
        assert trace.hex() == tp[3:35]
        assert parent, 'every span has a parent: the TRACEPARENT one for roots'
    roots = [s for _, p, _, _, s in got.spans.values() if p.hex() == tp[36:52]]
    assert roots
    for bad in ('ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
                '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x',
                '00-00000000000000000000000000000000-b7ad6b7169203331-01',
                '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
                '00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01', tp + '0'):
        got = read(pb, export(archive, os.path.join(workdir, 'ot-env.otlp'),
                              env=dict(env, TRACEPARENT=bad)))
        assert all(t.hex() != tp[3:35] for t, _, _, _, _ in got.spans.values()), bad
        assert any(not p for _, p, _, _, _ in got.spans.values()), 'roots are roots: ' + bad
    env['OTEL_RESOURCE_ATTRIBUTES'] = 'novalue,x=1'
    got = read(pb, export(archive, os.path.join(workdir, 'ot-env.otlp'), env=env))
    res = list(got.resources.values())[0]
    assert 'x' not in res and res['nanotrace.otel_resource_attributes_invalid'] is True


def roots_under(got, pid):
    """The (trace id, parent id) pairs of the process's root spans: a span whose parent is
    no span of the export."""
    return {(t.hex(), p.hex()) for t, p, spid, _, _ in got.spans.values()
            if spid == pid and p not in got.spans}


def test_recorded_traceparent(pb, workdir):
    """A process started with TRACEPARENT keeps it in its archive (format 2.4): its roots go
    under that parent whoever exports it, the exporter's own TRACEPARENT only for processes
    that recorded none; a newer version is read by its first four fields (W3C), an invalid
    value is not recorded. Through trace-record (sections), a direct archive and --stats."""
    tps = {'a': '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
           'b': '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-newer',
           'none': '00-00000000000000000000000000000000-b7ad6b7169203331-01'}
    mine = '00-11111111111111111111111111111111-2222222222222222-01'
    bundle = os.path.join(workdir, 'ot-tp.ntbundle')
    if os.path.exists(bundle):
        os.remove(bundle)
    req = program('NT_REQUEST_PROGRAM')
    script = ' & '.join('TRACEPARENT=%s %s 20' % (tps[k], req) for k in tps) + '; wait'
    subprocess.run([program('NT_TRACE_RECORD'), '-o', bundle, '--', 'sh', '-c', script],
                   check=True, capture_output=True)
    rc, out, err = dump('--stats', bundle)
    assert rc == 0, err
    shown = re.findall(r'^ *traceparent: (\S+) ', out, re.M)
    assert sorted(shown) == sorted([tps['a'], tps['b']]), out
    got = read(pb, export(bundle, os.path.join(workdir, 'ot-tp.otlp'),
                          env=dict(os.environ, TRACEPARENT=mine)))
    pids = {spid for _, _, spid, _, _ in got.spans.values()}
    assert len(pids) == 3
    parents = {}
    for pid in pids:
        roots = roots_under(got, pid)
        assert len(roots) == 1, roots  # every root of the process under one parent
        parents[pid] = roots.pop()
    want = {(tps[k][3:35], tps[k][36:52]) for k in ('a', 'b')} | {(mine[3:35], mine[36:52])}
    assert set(parents.values()) == want, parents
    # without the exporter's own, the process that recorded none has roots of its own
    got = read(pb, export(bundle, os.path.join(workdir, 'ot-tp.otlp'),
                          env={k: v for k, v in os.environ.items() if k != 'TRACEPARENT'}))
    kept = [p for pid in pids for _, p in roots_under(got, pid)]
    assert sorted(p for p in kept if p) == sorted(tps[k][36:52] for k in ('a', 'b'))
    assert '' in kept
    # a direct archive, and one whose value is kept whole past the 55 characters
    archive = os.path.join(workdir, 'ot-tp.ntrace')
    subprocess.run([DEMO, archive, '--threads', '1', '--requests', '5'], check=True,
                   capture_output=True, env=dict(os.environ, TRACEPARENT=tps['b']))
    rc, out, err = dump('--stats', archive)
    assert rc == 0 and 'traceparent: %s (' % tps['b'] in out, out + err
    got = read(pb, export(archive, os.path.join(workdir, 'ot-tp1.otlp')))
    (pid,) = {spid for _, _, spid, _, _ in got.spans.values()}
    assert roots_under(got, pid) == {(tps['b'][3:35], tps['b'][36:52])}


def test_nesting_past_the_bound(pb, workdir):
    """A Trace2 log nesting regions deeper than a thread's open spans are kept (256, the
    process span included): the deeper ones are counted on the losses span, every region
    kept is a span under its parent, and data messages inside go to the deepest one kept."""
    depth, bound = 300, int(re.search(r'#define OT_DEPTH_MAX (\d+)',
                                      open(OTLP_H).read()).group(1))
    sid = '20261127T000000.000000Z-Hdeadbeef-P00001234'
    lines, t = [], [0]

    def ev(name, **kw):
        d = {'event': name, 'sid': sid, 'thread': 'main', 'file': 'x.c', 'line': 1,
             'time': '2026-11-27T00:00:%09.6fZ' % (t[0] / 1e6)}
        d.update(kw)
        lines.append(json.dumps(d))
        t[0] += 100
    ev('version', evt='3', exe='2.39.5')
    ev('start', t_abs=0.0, argv=['git', 'status'])
    for i in range(depth):
        ev('region_enter', t_rel=0.0, nesting=i + 1, category='c', label='r%d' % i)
        ev('data', t_abs=0.0, t_rel=0.0, nesting=i + 2, category='c', key='k', value=str(i))
    for i in reversed(range(depth)):
        ev('region_leave', t_rel=0.0, nesting=i + 1, category='c', label='r%d' % i)
    ev('atexit', t_abs=1.0, code=0)
    log = os.path.join(workdir, 'ot-deep.event')
    open(log, 'w').write('\n'.join(lines) + '\n')
    archive = os.path.join(workdir, 'ot-deep.ntrace')
    if os.path.exists(archive):
        os.remove(archive)
    subprocess.run([TRACE_IMPORT, '-o', archive, log], check=True, capture_output=True)
    got = read(pb, export(archive, os.path.join(workdir, 'ot-deep.otlp')))
    spans = [s for _, _, _, _, s in got.spans.values()]
    regions = [s for s in spans if s.name.startswith('r')]
    assert len(regions) == bound - 1  # the process span is the first of the bound
    losses = [s for s in spans if s.name == 'nanotrace losses']
    assert dict(attrs(losses[0].attributes))['nanotrace.spans_too_deep'] == depth + 1 - bound
    for _, parent, _, _, s in got.spans.values():
        assert not parent or parent in got.spans
    deepest = max(regions, key=lambda s: int(s.name[1:]))
    values = [dict(attrs(e.attributes))['value'] for e in deepest.events if e.name == 'k']
    assert values == [str(i) for i in range(bound - 2, depth)], values


def test_memory_does_not_grow_with_events(workdir):
    """The exporter's peak heap (tests/reader/otlp_memory.c: glibc's mallinfo2 at every
    request and at the end) for an archive of 20 times the events of another, from the same
    program: within 1 MiB of it, where one byte kept per event would add 5 MiB."""
    peaks, events = [], []
    for n in (1000, 20000):
        archive = os.path.join(workdir, 'ot-mem-%d.ntrace' % n)
        subprocess.run([DEMO, archive, '--threads', '2', '--requests', str(n),
                        '--buffer-size', '67108864'], check=True, capture_output=True)
        rc, stats, err = dump('--stats', archive)
        assert rc == 0, err
        events.append(int(re.search(r'^events: (\d+)', stats, re.M).group(1)))
        p = subprocess.run([program('NT_OTLP_MEMORY'), archive], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        requests, _, heap = map(int, p.stdout.split())
        peaks.append(heap)
        assert requests >= 1 and heap > 0, p.stdout
    assert events[1] >= 15 * events[0], events
    assert peaks[1] <= peaks[0] + (1 << 20), (peaks, events)


def test_refusals(workdir):
    archive = os.path.join(workdir, 'ot-ref.ntrace')
    subprocess.run([DEMO, archive, '--threads', '1', '--requests', '5'], check=True,
                   capture_output=True)
    rc, _, err = dump('--format', 'otlp', archive)
    assert rc == 1 and 'need -o' in err and "Try 'trace-dump --help'" in err
    rc, _, err = dump('--format', 'otlp-json', '--stats', '-o', '/dev/null', archive)
    assert rc == 1
    rc, _, err = dump('--format', 'otlp-protobuf', '-o', 'x', archive)
    assert rc == 1 and "unknown format 'otlp-protobuf'" in err and 'otlp-json' in err
    link = os.path.join(workdir, 'ot-link.otlp')
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(os.path.join(workdir, 'ot-target'), link)
    rc, _, err = dump('--format', 'otlp', '-o', link, archive)
    assert rc == 2 and 'ot-link.otlp' in err and not os.path.exists(
        os.path.join(workdir, 'ot-target'))
    rc, _, err = dump('--format', 'otlp-json', '-o', os.path.join(workdir, 'no', 'dir'), archive)
    assert rc == 2 and 'no/dir' in err
    out = os.path.join(workdir, 'ot-mode.otlp')
    export(archive, out)
    assert os.stat(out).st_mode & 0o777 == 0o600
