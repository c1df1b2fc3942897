"""Live OTLP shipping (ship/, `trace-record --otlp-endpoint`, `nanotrace-manager
--otlp-endpoint`) against a local OTLP/HTTP receiver (http.server on 127.0.0.1, an ephemeral
port) that gunzips every request and decodes it with the official opentelemetry-proto
(third_party/, compiled by protoc).

- What arrives is what `trace-dump --format otlp` makes of the same sections (whether
  trace-record's embedded manager or a daemon wrote the bundle): every request
  of every section of a multi-process recording (request_program's async spans and flows
  across two processes) arrives once, byte for byte and as decoded messages (every span,
  link, span event, attribute and gauge point), with Content-Type application/x-protobuf,
  Content-Encoding gzip when OTEL_EXPORTER_OTLP_COMPRESSION=gzip, the percent-decoded
  OTEL_EXPORTER_OTLP_HEADERS (whose value never reaches stderr), the signal endpoint
  variables used as they are; trace-record's closing line counts what was sent exactly.
- Faults: no receiver at the start (the spool keeps every request; a second run sends them
  first); 503 with Retry-After (the next attempt waits at least that long); a 429 storm
  without Retry-After (each retry after a growing backoff, all sent); a receiver that
  stalls (the OTLP timeout ends the attempt, the retry is sent); one that closes mid-request
  (retried); a non-retryable 400 (dropped, counted exactly, its google.rpc.Status message
  logged); a partial success (logged and counted); a spool that hits its cap (requests and
  spans dropped counted exactly: the spooled plus the dropped are every request and span,
  and the spooled ones are sent by the next run, nothing lost below the cap); a manager
  restarted with a full spool sends it.
- Streaming sections shipped as they are saved, and the reader's export in parts:
  test_ship_stream.py (the same pytest run, these helpers).
- The spool: a 0700 directory, 0600 files; a symbolic link, or one open to others, refused.
- The field numbers ship/nt_ship_pb.c reads are the schema's.
Skipped (77) without protoc (protobuf-compiler) or python3-protobuf.
"""
import difflib
import email.utils
import gzip
import http.server
import importlib
import os
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import threading
import time

import pytest

from conftest import OTLP_PROTOS, otlp_python_modules, program, proto_schema, protobuf_tools

TRACE_RECORD, TRACE_DUMP, REQUESTS, MANAGER = (
    program(v) for v in ('NT_TRACE_RECORD', 'NT_TRACE_DUMP', 'NT_REQUEST_PROGRAM', 'NT_MANAGER'))
SOURCE = os.environ.get('NT_SOURCE_ROOT') or os.path.join(os.path.dirname(__file__), '..', '..')
PROTO_DIR = os.path.join(SOURCE, 'third_party', 'opentelemetry-proto')
PROTOC, pytestmark = protobuf_tools()
PATHS = {'/v1/traces': 'traces', '/custom/traces': 'traces', '/v1/metrics': 'metrics'}
SECRET = 'sec ret,=%'  # OTEL_EXPORTER_OTLP_HEADERS percent-encodes it


# ---- the receiver --------------------------------------------------------------------------

class Receiver:
    """An OTLP/HTTP receiver on 127.0.0.1. plan(i, path) says what attempt i gets:
    ('ok',), ('ok', body), ('status', code, headers, body), ('stall', seconds) (no answer),
    ('kill',) (half the body read, then the connection closed). Every attempt is noted
    (time, path, action); every request answered 2xx is kept gunzipped in `requests`."""

    def __init__(self, plan=None):
        self.plan = plan or (lambda i, path: ('ok',))
        self.attempts, self.requests, self.headers = [], [], []
        self.lock = threading.Lock()
        self.release = threading.Event()
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def do_POST(self):
                with rec.lock:
                    i = len(rec.attempts)
                    action = rec.plan(i, self.path)
                    rec.attempts.append((time.monotonic(), self.path, action[0]))
                n = int(self.headers.get('Content-Length', 0))
                if action[0] == 'kill':
                    self.rfile.read(n // 2)
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                body = self.rfile.read(n)
                if action[0] == 'stall':
                    rec.release.wait(action[1])
                    self.close_connection = True
                    return
                if action[0] == 'status':
                    self.answer(action[1], action[2], action[3])
                    return
                if self.headers.get('Content-Encoding') == 'gzip':
                    body = gzip.decompress(body)
                with rec.lock:
                    rec.requests.append((PATHS.get(self.path, self.path), body))
                    rec.headers.append(dict(self.headers))
                self.answer(200, {}, action[1] if len(action) > 1 else b'')

            def answer(self, code, headers, body):
                self.send_response(code)
                self.send_header('Content-Type', 'application/x-protobuf')
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.server.daemon_threads = True
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, n, seconds=60):
        """Until n requests arrived (bounded)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            with self.lock:
                if len(self.requests) >= n:
                    return
            time.sleep(0.05)
        raise AssertionError('%d of %d requests arrived in %d s' % (len(self.requests), n, seconds))

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def make(plan=None):
        r = Receiver(plan)
        made.append(r)
        return r
    yield make
    for r in made:
        r.stop()


def free_port_url():
    """A loopback URL where nothing listens (a port the kernel just gave and took back)."""
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return 'http://127.0.0.1:%d' % port


# ---- the schema, and what trace-dump says --------------------------------------------------

@pytest.fixture(scope='module')
def pb(workdir):
    file_pb2 = otlp_python_modules(PROTOC, SOURCE, os.path.join(workdir, 'ship-pb2'))
    trace_pb2 = importlib.import_module('opentelemetry.proto.collector.trace.v1.trace_service_pb2')
    metrics_pb2 = importlib.import_module(
        'opentelemetry.proto.collector.metrics.v1.metrics_service_pb2')
    return file_pb2, trace_pb2, metrics_pb2


FRAME = struct.Struct('<IHBBIIHHIQq3Q')  # format/nt_bundle.h's BundleFrame


def sections(bundle, workdir, tag):
    """Each SECTION's archive of a bundle, as a file of its own."""
    data = open(bundle, 'rb').read()
    off, out = 64, []
    while off + FRAME.size <= len(data):
        f = FRAME.unpack_from(data, off)
        kind, name_len, msg_len, size = f[1], f[6], f[7], f[9]
        head = FRAME.size + ((name_len + msg_len + 7) & ~7)
        if kind != 1:
            break
        if size:
            path = os.path.join(workdir, '%s-section%d.ntrace' % (tag, len(out)))
            with open(path, 'wb') as o:
                o.write(data[off + head:off + head + size])
            out.append(path)
        off += head + ((size + 7) & ~7)
    return out


def dumped_requests(pb, archive):
    """The requests `trace-dump --format otlp` makes of an archive: [(signal, bytes)]."""
    out = archive + '.otlp'
    if os.path.exists(out):
        os.unlink(out)
    p = subprocess.run([TRACE_DUMP, '--format', 'otlp', '-o', out, archive], capture_output=True)
    assert p.returncode == 0, p.stderr
    f = pb[0].File()
    f.ParseFromString(open(out, 'rb').read())
    return ([('traces', r.SerializeToString()) for r in f.traces] +
            [('metrics', r.SerializeToString()) for r in f.metrics])


def expected(pb, bundles, workdir, tag):
    reqs = []
    for i, b in enumerate(bundles):
        for s in sections(b, workdir, '%s%d' % (tag, i)):
            reqs += dumped_requests(pb, s)
    return reqs


def decode(pb, signal_, body):
    m = (pb[1].ExportTraceServiceRequest() if signal_ == 'traces'
         else pb[2].ExportMetricsServiceRequest())
    m.ParseFromString(body)
    return m


def contents(pb, reqs):
    """Every span (with its events, links and attributes) and gauge point of requests."""
    spans, points = [], []
    for sig, body in reqs:
        m = decode(pb, sig, body)
        if sig == 'traces':
            for rs in m.resource_spans:
                for ss in rs.scope_spans:
                    spans += [(ss.scope.name, s.SerializeToString()) for s in ss.spans]
        else:
            for rm in m.resource_metrics:
                for sm in rm.scope_metrics:
                    for met in sm.metrics:
                        points += [(met.name, p.SerializeToString())
                                   for p in met.gauge.data_points]
    return sorted(spans), sorted(points)


def span_count(pb, reqs):
    return len(contents(pb, reqs)[0])


def norm(pb, reqs):
    """Requests as a sorted list of (signal, message serialized deterministically): the
    exporter's bytes and protobuf's own encoding of the same message may differ."""
    return sorted((sig, decode(pb, sig, body).SerializeToString(deterministic=True))
                  for sig, body in reqs)


def same(pb, got, want):
    """Received equals trace-dump's: the same requests (as a multiset of decoded messages,
    each serialized again deterministically) and so the same spans, links, events,
    attributes and points."""
    g, w = norm(pb, got), norm(pb, want)
    extra = [str(decode(pb, *r)).splitlines() for r in g if r not in w]
    missing = [str(decode(pb, *r)).splitlines() for r in w if r not in g]
    diff = list(difflib.unified_diff(missing[0], extra[0], lineterm='', n=8)) \
        if extra and missing else []
    assert g == w, '%d requests received, %d expected; %d and %d differ:\n%s' % (
        len(got), len(want), len(extra), len(missing), '\n'.join(diff[:200]))
    assert contents(pb, got) == contents(pb, want)


# ---- running trace-record and the manager --------------------------------------------------

SUMMARY = re.compile(
    r'otlp: (\d+) requests sent \((\d+) spans, (\d+) data points, (\d+) bytes\), (\d+) retries; '
    r'(\d+) left in the spool \((\d+) bytes, sent by the next run\); dropped: (\d+) past the '
    r"spool's cap \((\d+) spans, (\d+) data points\), (\d+) refused by the receiver \((\d+) "
    r'spans, (\d+) data points\), (\d+) unwritable, (\d+) unreadable; (\d+) spans, (\d+) data '
    r'points rejected \(partial success\); (\d+) of (\d+) sections not exported')
KEYS = ('sent', 'sent_spans', 'sent_points', 'sent_bytes', 'retries', 'left', 'left_bytes',
        'dropped_full', 'dropped_full_spans', 'dropped_full_points', 'dropped_http',
        'dropped_http_spans', 'dropped_http_points', 'dropped_io', 'dropped_bad',
        'rejected_spans', 'rejected_points', 'sections_failed', 'sections')


def summary(stderr):
    m = SUMMARY.findall(stderr)
    assert len(m) == 1, stderr
    return dict(zip(KEYS, map(int, m[0])))


def env_for(workdir, **extra):
    env = dict(os.environ, NANOTRACE_MANAGER=os.path.join(workdir, 'no-manager', 'm.sock'),
               OTEL_EXPORTER_OTLP_COMPRESSION='gzip')
    for k in list(env):
        if k.startswith('OTEL_') and k != 'OTEL_EXPORTER_OTLP_COMPRESSION':
            del env[k]
    env.update(extra)
    return env


def record(workdir, tag, url, spool, n=60, extra=(), env=None, tail_s=0, cmd=None,
             plain=False):
    """trace-record --otlp-endpoint url (--otlp when url is None, neither when plain) of
    request_program's requests across two processes (then `sleep tail_s` in the traced
    shell, so that shipping happens while it records); returns (bundle, stderr)."""
    bundle = os.path.join(workdir, tag + '.ntrace')
    if os.path.exists(bundle):
        os.unlink(bundle)
    command = cmd or ['sh', '-c', '"$0" %d pipe && sleep %s' % (n, tail_s), REQUESTS]
    ship = ([] if plain else ['--otlp'] if url is None else ['--otlp-endpoint', url])
    ship += [] if plain else ['--otlp-spool', spool]
    p = subprocess.run([TRACE_RECORD, '-o', bundle, *ship, *extra, '--', *command],
                       env=env or env_for(workdir), capture_output=True, timeout=120)
    err = p.stderr.decode(errors='replace')
    assert p.returncode == 0, err
    return bundle, err


def fresh_spool(workdir, tag):
    spool = os.path.join(workdir, tag + '-spool')
    shutil.rmtree(spool, ignore_errors=True)
    return spool


def spool_files(spool):
    return sorted(f for f in os.listdir(spool) if f.startswith('r-'))


# ---- the tests -----------------------------------------------------------------------------

def test_field_numbers_are_the_schema(workdir):
    messages, _, _ = proto_schema(PROTOC, [PROTO_DIR], OTLP_PROTOS,
                                  os.path.join(workdir, 'ship.desc'))
    src = open(os.path.join(SOURCE, 'ship', 'nt_ship_pb.c')).read()
    defs = dict(re.findall(r'#define (PB_\w+) (\d+)', src))
    want = {'PB_REQ_RESOURCE': [('ExportTraceServiceRequest', 'resource_spans'),
                                ('ExportMetricsServiceRequest', 'resource_metrics')],
            'PB_RES_SCOPE': [('ResourceSpans', 'scope_spans'),
                             ('ResourceMetrics', 'scope_metrics')],
            'PB_SCOPE_ITEMS': [('ScopeSpans', 'spans'), ('ScopeMetrics', 'metrics')],
            'PB_METRIC_GAUGE': [('Metric', 'gauge')],
            'PB_GAUGE_POINTS': [('Gauge', 'data_points')],
            'PB_RESP_PARTIAL': [('ExportTraceServiceResponse', 'partial_success'),
                                ('ExportMetricsServiceResponse', 'partial_success')],
            'PB_PARTIAL_REJECTED': [('ExportTracePartialSuccess', 'rejected_spans'),
                                    ('ExportMetricsPartialSuccess', 'rejected_data_points')],
            'PB_PARTIAL_MESSAGE': [('ExportTracePartialSuccess', 'error_message'),
                                   ('ExportMetricsPartialSuccess', 'error_message')]}
    full = messages
    for define, places in want.items():
        for msg, field in places:
            assert full[msg][field].number == int(defs[define]), (define, msg, field)
    # google.rpc.Status is not vendored: its message is field 2 (googleapis' status.proto)
    assert defs['PB_STATUS_MESSAGE'] == '2'


def test_sections_arrive_as_trace_dump_exports_them(pb, workdir, receiver):
    rec = receiver()
    spool = fresh_spool(workdir, 'live')
    secret = ''.join('%%%02X' % b if chr(b) in ' ,=%' else chr(b) for b in SECRET.encode())
    env = env_for(workdir, OTEL_EXPORTER_OTLP_HEADERS='x-team = a%2Cb , x-api-key=' + secret,
                  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=rec.url + '/custom/traces')
    # --otlp-endpoint wins over every endpoint variable: nothing reaches the receiver, the
    # requests wait in the spool (no receiver at the start)
    bundle, err = record(workdir, 'live', free_port_url(), spool, n=200,
                         env=dict(env, OTEL_EXPORTER_OTLP_TIMEOUT='300'))
    want = expected(pb, [bundle], workdir, 'live')
    assert len(sections(bundle, workdir, 'live-count')) == 2
    assert rec.attempts == []
    s = summary(err)
    assert s['sent'] == 0 and s['left'] == len(want) == len(spool_files(spool)), err
    assert s['retries'] >= 1 and s['sections'] == 2 and s['sections_failed'] == 0
    for f in spool_files(spool):
        assert stat.S_IMODE(os.stat(os.path.join(spool, f)).st_mode) == 0o600
    # a run without --otlp ships nothing and leaves the spool alone
    env2 = dict(env, OTEL_EXPORTER_OTLP_ENDPOINT=rec.url)
    record(workdir, 'live-plain', '', spool, n=10, env=env2, cmd=None, plain=True)
    assert len(spool_files(spool)) == len(want)
    # --otlp: the endpoints the variables name (the signal's used as it is); the first run's
    # requests are sent first
    bundle2, err2 = record(workdir, 'live2', None, spool, env=env2,
                           cmd=[REQUESTS, '20', 'global'])
    want2 = expected(pb, [bundle2], workdir, 'live2')
    got = rec.requests
    same(pb, got, want + want2)
    assert norm(pb, got[:len(want)]) == norm(pb, want)
    s2 = summary(err2)
    assert s2['sent'] == len(want + want2) and s2['left'] == 0 and s2['dropped_full'] == 0
    assert s2['sent_spans'] == span_count(pb, want + want2) and s2['retries'] == 0
    assert {p for _, p, _ in rec.attempts} <= {'/custom/traces', '/v1/metrics'}
    assert '/custom/traces' in {p for _, p, _ in rec.attempts}
    spans, _ = contents(pb, want)
    links = sum(len(decode_span(s).links) for _, s in spans)
    events = sum(len(decode_span(s).events) for _, s in spans)
    attributes = sum(len(decode_span(s).attributes) for _, s in spans)
    assert links >= 200 and events >= 200 and attributes > len(spans), (links, events)
    # A process alone (run 2) is what trace-dump makes of the whole bundle, ids included
    # (each derived from its own section: doc/otlp.md)
    assert per_span(pb, want2) == per_span(pb, dumped_requests(pb, bundle2))
    assert len(per_span(pb, want2)) >= 3 * 20
    assert ids(pb, want2) == ids(pb, dumped_requests(pb, bundle2))
    # Two processes shipped apart keep every span id and parent of the whole bundle's
    # export; what crosses them (links, a root joining the other's flow) is the bundle's
    shipped, whole = ids(pb, want), ids(pb, dumped_requests(pb, bundle))
    assert shipped.keys() == whole.keys() and len(shipped) >= 2 * 200
    assert all(shipped[k][1] == whole[k][1] for k in shipped), 'parents'
    assert sum(shipped[k] == whole[k] for k in shipped) > len(shipped) // 2
    for h in rec.headers:
        assert h['Content-Type'] == 'application/x-protobuf'
        assert h['Content-Encoding'] == 'gzip'
        assert h['x-api-key'] == SECRET and h['x-team'] == 'a,b'
    assert SECRET not in err + err2 and secret not in err + err2
    assert stat.S_IMODE(os.stat(spool).st_mode) == 0o700
    assert [f for f in os.listdir(spool) if f != '.lock'] == []


def per_span(pb, reqs, timeless=False):
    """Every span as (pid, name, times, attributes, events, its parent's and its links'
    such keys), a sorted list: span and trace ids are left out, since they are derived from
    each event's place in what was exported (a section alone, or the whole bundle).
    timeless: without the span's and its events' times (see span_times)."""
    spans, pid_of = {}, {}
    for sig, body in reqs:
        if sig != 'traces':
            continue
        for rs in decode(pb, sig, body).resource_spans:
            pid = [a.value.int_value for a in rs.resource.attributes if a.key == 'process.pid']
            for ss in rs.scope_spans:
                for sp in ss.spans:
                    pid_of[sp.span_id] = pid[0]
                    spans[sp.span_id] = sp

    def key(sid):
        sp = spans.get(sid)
        if sp is None:
            return None
        times = () if timeless else (sp.start_time_unix_nano, sp.end_time_unix_nano)
        return (pid_of[sid], sp.name, *times, repr(sp.attributes))
    out = []
    for sid, sp in spans.items():
        links = sorted(repr(key(l.span_id)) for l in sp.links)
        events = repr(sp.events)
        if timeless:
            events = re.sub(r'time_unix_nano: \d+', '', events)
        out.append((key(sid), events, repr(key(sp.parent_span_id)), links))
    return sorted(out)


def span_times(pb, reqs, names=None):
    """Each span's (start, end) (of those named one of `names`, when given), sorted by the
    span's name and attributes."""
    out = []
    for sig, body in reqs:
        if sig == 'traces':
            for rs in decode(pb, sig, body).resource_spans:
                for ss in rs.scope_spans:
                    out += [((sp.name, repr(sp.attributes)),
                             (sp.start_time_unix_nano, sp.end_time_unix_nano)) for sp in ss.spans
                            if names is None or sp.name in names]
    return [t for _, t in sorted(out)]


def near_times(pb, got, want, names=None):
    """A streaming section's spans shipped as it was saved have the times of its export but
    for the clock's calibration: the live parts' header is the provider's at its first
    save, the section's the one it ended with, which may be finer (doc/otlp.md). At most
    1 us + 100 ppm of the time since the first span apart."""
    g, w = span_times(pb, got, names), span_times(pb, want, names)
    assert len(g) == len(w)
    t0 = min(t for t, _ in w)
    for a, b in zip(g, w):
        for x, y in zip(a, b):
            assert abs(x - y) <= 1000 + (y - t0) // 10000, (a, b)


SLICES = ('accept', 'process', 'answer')


def slices(pb, reqs):
    """request_program's slices (accept, process, answer), each with what its own thread
    decides (pid, name, attributes; times: near_times), a sorted list: what a multi-threaded streaming
    section shipped as it is saved has as trace-dump's export has (the spans one thread's
    events make never depend on the order in which two threads' saves came)."""
    return sorted(k[0] for k in per_span(pb, reqs, timeless=True) if k[0][1] in SLICES)


def ids(pb, reqs):
    """span id -> (trace id, parent span id) of every span of the requests but the
    "nanotrace losses" ones (what an export found lost differs with what it read)."""
    out = {}
    for sig, body in reqs:
        if sig == 'traces':
            for rs in decode(pb, sig, body).resource_spans:
                for ss in rs.scope_spans:
                    for sp in ss.spans:
                        if sp.name != 'nanotrace losses':
                            out[sp.span_id] = (sp.trace_id, sp.parent_span_id)
    return out


def decode_span(data):
    from opentelemetry.proto.trace.v1 import trace_pb2
    s = trace_pb2.Span()
    s.ParseFromString(data)
    return s


def start_manager(sock, *args, env):
    p = subprocess.Popen([MANAGER, '--foreground', '--socket', sock, *args], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    end = time.monotonic() + 30
    while not os.path.exists(sock):
        assert p.poll() is None and time.monotonic() < end, p.stderr.read().decode()
        time.sleep(0.02)
    return p


def stop_manager(p):
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    err = err.decode(errors='replace')
    assert p.returncode == 0, err
    return err


def spooled(spool):
    """The requests in a spool, as the receiver would decode them."""
    return [('metrics' if f[28] == 'm' else 'traces', open(os.path.join(spool, f), 'rb').read())
            for f in spool_files(spool)]


def test_retry_after_is_honoured(pb, workdir, receiver):
    for tag, value in (('ra-secs', lambda: '1'),
                       ('ra-date', lambda: email.utils.formatdate(time.time() + 2, usegmt=True))):
        rec = receiver(lambda i, path, v=value: ('status', 503, {'Retry-After': v()}, b'')
                       if i == 0 else ('ok',))
        spool = fresh_spool(workdir, tag)
        bundle, err = record(workdir, tag, rec.url, spool)
        want = expected(pb, [bundle], workdir, tag)
        same(pb, rec.requests, want)
        s = summary(err)
        assert s['retries'] == 1 and s['sent'] == len(want) and s['left'] == 0, err
        (t0, _, a0), (t1, _, _) = rec.attempts[:2]
        assert a0 == 'status' and t1 - t0 >= 0.9, (tag, t1 - t0)  # at least the second asked
        assert 'HTTP 503: retrying in' in err


def test_429_storm_backs_off_and_sends_everything(pb, workdir, receiver):
    storm = 4
    rec = receiver(lambda i, path: ('status', 429, {}, b'') if i < storm else ('ok',))
    spool = fresh_spool(workdir, 'storm')
    bundle, err = record(workdir, 'storm', rec.url, spool)
    want = expected(pb, [bundle], workdir, 'storm')
    same(pb, rec.requests, want)
    s = summary(err)
    assert s['retries'] == storm and s['sent'] == len(want) and s['left'] == 0, err
    times = [t for t, _, _ in rec.attempts]
    # the k-th wait is drawn in [d/2, d], d = 250 ms doubling (nt_ship_send.c): at least
    # 125 ms * 2^k, whatever the load
    for k in range(storm):
        assert times[k + 1] - times[k] >= 0.125 * 2 ** k * 0.95, (k, times)


def test_stalled_receiver_times_out_and_is_retried(pb, workdir, receiver):
    rec = receiver(lambda i, path: ('stall', 30) if i == 0 else ('ok',))
    spool = fresh_spool(workdir, 'stall')
    env = env_for(workdir, OTEL_EXPORTER_OTLP_TIMEOUT='1000')
    bundle, err = record(workdir, 'stall', rec.url, spool, env=env, tail_s=6)
    want = expected(pb, [bundle], workdir, 'stall')
    same(pb, rec.requests, want)
    s = summary(err)
    assert s['retries'] >= 1 and s['sent'] == len(want) and s['left'] == 0, err
    assert rec.attempts[0][2] == 'stall' and rec.attempts[1][0] - rec.attempts[0][0] >= 0.9


@pytest.mark.parametrize('mode', ['oneshot', 'streaming'])
def test_receiver_closing_mid_request_is_retried(pb, workdir, receiver, mode):
    # a streaming section is shipped as it is saved (its requests are its saves')
    rec = receiver(lambda i, path: ('kill',) if i == 0 else ('ok',))
    spool = fresh_spool(workdir, 'kill-' + mode)
    bundle, err = record(workdir, 'kill-' + mode, rec.url, spool, extra=['-m', mode])
    want = expected(pb, [bundle], workdir, 'kill-' + mode)
    s = summary(err)
    if mode == 'oneshot':
        same(pb, rec.requests, want)  # each once: the cut request again, whole
        assert s['sent'] == len(want)
    else:  # each once: every thread's slices, as trace-dump exports them
        assert slices(pb, rec.requests) == slices(pb, want) and len(slices(pb, want)) >= 3 * 60
        near_times(pb, rec.requests, want, SLICES)
        assert s['sent'] == len(rec.requests)
    assert s['retries'] >= 1 and s['left'] == 0, err


def rpc_status(code, message):
    """A google.rpc.Status (code = 1, message = 2), OTLP/HTTP's error body."""
    m = message.encode()
    return bytes([0x08, code, 0x12, len(m)]) + m


def test_refusal_dropped_and_partial_success_counted(pb, workdir, receiver):
    partial = pb[1].ExportTraceServiceResponse()
    partial.partial_success.rejected_spans = 3
    partial.partial_success.error_message = 'three spans too old'
    rec = receiver(lambda i, path:
                   ('status', 400, {}, rpc_status(3, 'bad request here')) if i == 0 else
                   ('ok', partial.SerializeToString()) if i == 1 else ('ok',))
    spool = fresh_spool(workdir, 'refused')
    bundle, err = record(workdir, 'refused', rec.url, spool)
    want = expected(pb, [bundle], workdir, 'refused')
    s = summary(err)
    assert s['dropped_http'] == 1 and s['retries'] == 0 and s['left'] == 0, err
    assert s['sent'] == len(want) - 1 == len(rec.requests)
    # the one refused is the one missing, its spans counted exactly
    got = norm(pb, rec.requests)
    lost = [r for r in norm(pb, want) if r not in got]
    assert len(lost) == 1 and s['dropped_http_spans'] == span_count(pb, lost)
    assert s['sent_spans'] + s['dropped_http_spans'] == span_count(pb, want)
    assert 'HTTP 400: bad request here; dropped' in err
    assert s['rejected_spans'] == 3 and 'rejected 3 spans: three spans too old' in err


def test_spool_cap_drops_exactly_and_keeps_the_rest(pb, workdir, receiver):
    spool = fresh_spool(workdir, 'cap')
    cap = 200 * 1024
    env = env_for(workdir, OTEL_EXPORTER_OTLP_TIMEOUT='300')
    bundle, err = record(workdir, 'cap', free_port_url(), spool, n=1500, env=env,
                         extra=['--otlp-spool-size', str(cap)])
    want = expected(pb, [bundle], workdir, 'cap')
    s = summary(err)
    kept = spooled(spool)
    assert s['left'] == len(kept) >= 1 and s['dropped_full'] >= 1, err
    assert s['left'] + s['dropped_full'] == len(want)
    assert sum(len(b) for _, b in kept) <= cap
    assert span_count(pb, kept) + s['dropped_full_spans'] == span_count(pb, want)
    assert "past the spool's cap" in err
    # what the cap kept is sent by the next run, whole: nothing below the cap is lost
    rec = receiver()
    bundle2, err2 = record(workdir, 'cap2', rec.url, spool, n=10)
    same(pb, rec.requests, kept + expected(pb, [bundle2], workdir, 'cap2'))
    assert summary(err2)['left'] == 0


def test_manager_restarted_with_a_full_spool_sends_it(pb, workdir, receiver):
    spool = fresh_spool(workdir, 'mgr')
    sock_dir = os.path.join(workdir, 'mgr-sock')
    shutil.rmtree(sock_dir, ignore_errors=True)
    os.makedirs(sock_dir, mode=0o700)
    sock = os.path.join(sock_dir, 'm.sock')
    env = env_for(workdir, OTEL_EXPORTER_OTLP_TIMEOUT='300')
    cap = 200 * 1024
    mgr = start_manager(sock, '--otlp-endpoint', free_port_url(), '--otlp-spool', spool,
                        '--otlp-spool-size', str(cap), env=env)
    bundle = os.path.join(workdir, 'mgr.ntrace')
    try:
        if os.path.exists(bundle):
            os.unlink(bundle)
        p = subprocess.run([TRACE_RECORD, '-o', bundle, '--', REQUESTS, '1500', 'pipe'],
                           env=dict(env, NANOTRACE_MANAGER=sock), capture_output=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
    finally:
        log = stop_manager(mgr)
    want = expected(pb, [bundle], workdir, 'mgr')
    s = summary(log)
    kept = spooled(spool)
    assert s['left'] == len(kept) >= 1 and s['dropped_full'] >= 1, log
    assert s['left'] + s['dropped_full'] == len(want) and s['sent'] == 0
    assert span_count(pb, kept) + s['dropped_full_spans'] == span_count(pb, want)
    # restarted, it sends the spool without any trace
    rec = receiver()
    mgr = start_manager(sock, '--otlp-endpoint', rec.url, '--otlp-spool', spool, env=env)
    try:
        rec.wait_for(len(kept))
    finally:
        log2 = stop_manager(mgr)
    same(pb, rec.requests, kept)
    assert 'earlier run left' in log2 and summary(log2)['sent'] == len(kept)


def test_stalled_collector_never_blocks_the_manager(pb, workdir, receiver):
    """A daemon whose collector holds its first request unanswered records a whole new
    trace meanwhile (shown by order, not time: the second recording ends while that request
    is still the only one the receiver saw); released, everything arrives."""
    rec = receiver(lambda i, path: ('stall', 120) if i == 0 else ('ok',))
    sock_dir = os.path.join(workdir, 'stalled-sock')
    shutil.rmtree(sock_dir, ignore_errors=True)
    os.makedirs(sock_dir, mode=0o700)
    sock = os.path.join(sock_dir, 'm.sock')
    env = env_for(workdir, OTEL_EXPORTER_OTLP_TIMEOUT='120000')
    spool = fresh_spool(workdir, 'stalled')
    mgr = start_manager(sock, '--otlp-endpoint', rec.url, '--otlp-spool', spool, env=env)
    try:
        bundles = []
        for k in range(2):
            bundle, _ = record(workdir, 'stalled%d' % k, '', spool, plain=True,
                               env=dict(env, NANOTRACE_MANAGER=sock))
            bundles.append(bundle)
            end = time.monotonic() + 60
            while not rec.attempts and time.monotonic() < end:
                time.sleep(0.02)
        assert [a for _, _, a in rec.attempts] == ['stall']
        want = expected(pb, bundles, workdir, 'stalled')
        rec.release.set()
        rec.wait_for(len(want))
    finally:
        log = stop_manager(mgr)
    same(pb, rec.requests, want)
    assert summary(log)['retries'] >= 1


def test_trace_record_ships_what_a_daemon_writes(pb, workdir, receiver):
    """trace-record --otlp-endpoint follows the bundle a nanotrace-manager daemon (without
    shipping of its own) writes through the descriptor it passed."""
    sock_dir = os.path.join(workdir, 'daemon-sock')
    shutil.rmtree(sock_dir, ignore_errors=True)
    os.makedirs(sock_dir, mode=0o700)
    sock = os.path.join(sock_dir, 'm.sock')
    env = env_for(workdir)
    mgr = start_manager(sock, env=env)
    rec = receiver()
    spool = fresh_spool(workdir, 'daemon')
    try:
        bundle, err = record(workdir, 'daemon', rec.url, spool,
                             env=dict(env, NANOTRACE_MANAGER=sock))
    finally:
        stop_manager(mgr)
    want = expected(pb, [bundle], workdir, 'daemon')
    same(pb, rec.requests, want)
    assert summary(err)['sent'] == len(want) and len(want) >= 2


def test_one_sender_per_spool(pb, workdir, receiver):
    """While another program holds the spool's lock (its sender), trace-record only adds to
    the spool; the cap is judged by what the directory holds, whoever wrote it."""
    import fcntl
    spool = fresh_spool(workdir, 'locked')
    os.makedirs(spool, mode=0o700)
    rec = receiver()
    env = env_for(workdir, OTEL_EXPORTER_OTLP_TIMEOUT='500')
    with open(os.path.join(spool, '.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        bundle, err = record(workdir, 'locked', rec.url, spool, env=env)
        want = expected(pb, [bundle], workdir, 'locked')
        assert rec.attempts == [] and summary(err)['left'] == len(want) == len(spooled(spool))
        # a planted request of another program's fills the spool: judged full with it
        with open(os.path.join(spool, 'r-0000000000000002-00000000-t-zzzzzz'), 'wb') as f:
            f.write(b'\0' * 150000)
        kept = len(spool_files(spool))
        cap = sum(os.path.getsize(os.path.join(spool, f)) for f in spool_files(spool)) + 100
        bundle2, err2 = record(workdir, 'locked2', rec.url, spool, env=env,
                               extra=['--otlp-spool-size', str(cap)])
        s2 = summary(err2)
        assert s2['dropped_full'] == len(expected(pb, [bundle2], workdir, 'locked2')) >= 1
        assert len(spool_files(spool)) == kept
    os.unlink(os.path.join(spool, 'r-0000000000000002-00000000-t-zzzzzz'))
    # the lock free, the next run sends the first run's requests
    bundle3, err3 = record(workdir, 'locked3', rec.url, spool)
    same(pb, rec.requests, want + expected(pb, [bundle3], workdir, 'locked3'))


def test_spool_plants_never_sent_or_followed(pb, workdir, receiver):
    """A crash's half-written request (an old .tmp- file) is removed unsent; a symbolic link
    named as a request is dropped as unreadable, never followed (its target untouched)."""
    spool = fresh_spool(workdir, 'plant')
    os.makedirs(spool, mode=0o700)
    half = os.path.join(spool, '.tmp-abcdef')
    with open(half, 'wb') as f:
        f.write(b'\x0a\xff\xff')
    os.utime(half, (time.time() - 3600, time.time() - 3600))
    target = os.path.join(workdir, 'plant-target')
    with open(target, 'wb') as f:
        f.write(b'not yours')
    os.symlink(target, os.path.join(spool, 'r-0000000000000001-00000000-t-abcdef'))
    rec = receiver()
    bundle, err = record(workdir, 'plant', rec.url, spool)
    same(pb, rec.requests, expected(pb, [bundle], workdir, 'plant'))
    s = summary(err)
    assert s['dropped_bad'] == 1 and s['left'] == 0, err
    assert os.listdir(spool) == ['.lock'] and open(target, 'rb').read() == b'not yours'


def test_spool_refused_when_not_private(workdir):
    base = os.path.join(workdir, 'refuse')
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(os.path.join(base, 'real'), mode=0o700)
    os.symlink(os.path.join(base, 'real'), os.path.join(base, 'link'))
    os.makedirs(os.path.join(base, 'open'))
    os.chmod(os.path.join(base, 'open'), 0o755)
    for name, why in (('link', 'is a symbolic link'),
                      ('open', 'is open to group or others')):
        p = subprocess.run([TRACE_RECORD, '-o', os.path.join(base, name + '.ntrace'),
                            '--otlp-endpoint', free_port_url(), '--otlp-spool',
                            os.path.join(base, name), '--', 'true'],
                           env=env_for(workdir), capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and why in p.stderr and 'refused' in p.stderr, p.stderr
        assert not os.path.exists(os.path.join(base, name + '.ntrace'))
    # a malformed variable is named
    p = subprocess.run([TRACE_RECORD, '-o', os.path.join(base, 'x.ntrace'), '--otlp',
                        '--otlp-spool', os.path.join(base, 'new'), '--', 'true'],
                       env=env_for(workdir, OTEL_EXPORTER_OTLP_COMPRESSION='brotli'),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and 'OTEL_EXPORTER_OTLP_COMPRESSION' in p.stderr, p.stderr
    for var, value in (('OTEL_EXPORTER_OTLP_HEADERS', 'k=v,secretnokey'),
                       ('OTEL_EXPORTER_OTLP_METRICS_HEADERS', 'bad name=v'),
                       ('OTEL_EXPORTER_OTLP_TIMEOUT', '10s'),
                       ('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'grpc'),
                       ('OTEL_EXPORTER_OTLP_ENDPOINT', 'ftp://collector')):
        p = subprocess.run([TRACE_RECORD, '-o', os.path.join(base, 'x.ntrace'), '--otlp',
                            '--otlp-spool', os.path.join(base, 'new'), '--', 'true'],
                           env=env_for(workdir, **{var: value}), capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 2 and var in p.stderr, (var, p.stderr)
        assert 'secretnokey' not in p.stderr  # a header list is never quoted
