"""A streaming section shipped as its buffers are saved (ship/nt_ship_stream.c, the
manager's on_stream, the reader's nt_otlp_exporter_*), against the receiver and the helpers of
test_ship.py (run in the same pytest invocation):

- A streaming process is shipped as its buffers are saved (trace-record's embedded manager
  and nanotrace-manager --otlp-endpoint): its spans arrive while it waits for input; exited
  or killed, the union of what arrived is trace-dump's export of its section span for span
  (ids included; times within the clock calibration's bound), nothing twice.
- The reader's export in parts (otlp_parts.c: a section cut into parts at record
  boundaries, each the shipper's archive of its range) gives the whole export's spans, ids
  and points.
Skipped (77) without protoc (protobuf-compiler) or python3-protobuf.
"""
import os
import shutil
import signal
import struct
import subprocess
import time

import pytest

from conftest import program
from test_ship import (REQUESTS, TRACE_RECORD, contents, decode, decode_span, env_for,  # noqa: F401
                       expected,
                       fresh_spool, ids, near_times, pb, per_span, pytestmark, receiver,
                       record, sections, start_manager, stop_manager, summary)

OTLP_PARTS = program('NT_OTLP_PARTS')


# ---- a streaming section, shipped as its buffers are saved ---------------------------------

def lost_anything(pb, reqs):
    """Whether the requests say the writer or the export lost events or matched an End
    with no Begin (a Resource's nanotrace.events_dropped*, a losses span's counts)."""
    keys = ('nanotrace.events_dropped', 'nanotrace.events_lost_in_gaps',
            'nanotrace.unmatched_ends', 'nanotrace.spans_too_deep')
    for sig, body in reqs:
        if sig != 'traces':
            continue
        for rs in decode(pb, sig, body).resource_spans:
            attrs = list(rs.resource.attributes)
            for ss in rs.scope_spans:
                attrs += [a for sp in ss.spans if sp.name == 'nanotrace losses'
                          for a in sp.attributes]
            if any(a.key.startswith(keys) and a.value.int_value for a in attrs):
                return True
    return False


def resources(pb, reqs, at_end=False):
    """The Resources of trace requests (at_end: of those holding an unended span or a
    losses span, what an export sends when it ends)."""
    out = []
    for sig, body in reqs:
        if sig != 'traces':
            continue
        for rs in decode(pb, sig, body).resource_spans:
            spans = [sp for ss in rs.scope_spans for sp in ss.spans]
            if not at_end or any(sp.name == 'nanotrace losses' or any(
                    a.key == 'nanotrace.unended' for a in sp.attributes) for sp in spans):
                out.append(rs.resource)
    return out


def served_spans(pb, reqs):
    """The "answer" spans of request_program's serve mode among requests."""
    return [k for k in per_span(pb, reqs) if k[0][1] == 'answer']


def feed(fifo, numbers):
    """Writes request ids (8 bytes each) to the serving process's FIFO, opened once it
    reads (bounded wait)."""
    end = time.monotonic() + 60
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            assert time.monotonic() < end, 'the served process never opened its FIFO'
            time.sleep(0.02)
    os.set_blocking(fd, True)
    for i in numbers:
        os.write(fd, struct.pack('<Q', i))
    return fd


def wait_answers(pb, rec, proc, n=1, seconds=60):
    """Until the receiver decoded n "answer" spans (bounded); the recording must still run."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with rec.lock:
            reqs = list(rec.requests)
        if len(served_spans(pb, reqs)) >= n:
            return
        assert proc.poll() is None, 'the recording ended before anything was shipped'
        time.sleep(0.05)
    raise AssertionError('no span of the streaming process arrived while it recorded')


@pytest.mark.parametrize('manager', ['embedded', 'daemon'])
@pytest.mark.parametrize('end', ['exit', 'kill'])
def test_streaming_section_shipped_as_it_is_saved(pb, workdir, receiver, manager, end):
    """A streaming process (request_program serve: one thread, a slice "serve" open
    throughout, a slice "answer" per id it reads from a FIFO this test feeds) is shipped
    while it records: spans of it arrive while it waits for more input (shown by order: the
    test feeds the rest only then). Whether it then exits or is killed, the union of what
    arrived is trace-dump's export of its section, span for span, and nothing twice (the
    section is not shipped again when it ends); its one thread visits its events in the
    same order, so span ids and parents match too (doc/otlp.md). Killed, what was saved is
    shipped and "serve" arrives ended nanotrace.unended. Through trace-record's embedded
    manager and through nanotrace-manager --otlp-endpoint."""
    tag = 'stream-%s-%s' % (manager, end)
    rec = receiver()
    spool = fresh_spool(workdir, tag)
    fifo, pidfile = (os.path.join(workdir, tag + x) for x in ('.fifo', '.pid'))
    for f in (fifo, pidfile):
        if os.path.lexists(f):
            os.unlink(f)
    os.mkfifo(fifo, 0o600)
    bundle = os.path.join(workdir, tag + '.ntrace')
    if os.path.exists(bundle):
        os.unlink(bundle)
    env = env_for(workdir)
    mgr = None
    ship = ['--otlp-endpoint', rec.url, '--otlp-spool', spool]
    if manager == 'daemon':
        sock_dir = os.path.join(workdir, tag + '-sock')
        shutil.rmtree(sock_dir, ignore_errors=True)
        os.makedirs(sock_dir, mode=0o700)
        sock = os.path.join(sock_dir, 'm.sock')
        mgr = start_manager(sock, *ship, env=env)
        env, ship = dict(env, NANOTRACE_MANAGER=sock), []
    cmd = [TRACE_RECORD, '-o', bundle, '--buffering-mode', 'streaming', '--buffer-size', '4M',
           *ship, '--', 'sh', '-c', 'echo $$ > "$1"; exec "$0" 1 serve < "$2"', REQUESTS,
           pidfile, fifo]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        fd = feed(fifo, range(1, 20001))
        wait_answers(pb, rec, proc)
        if end == 'kill':
            os.kill(int(open(pidfile).read()), signal.SIGKILL)
        else:
            for i in range(20001, 30001):
                os.write(fd, struct.pack('<Q', i))
        os.close(fd)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log = stop_manager(mgr) if mgr else None
    err = err.decode(errors='replace')
    # trace-record's status is its command's (a killed one's: the signal's); a sanitizer's
    # report would show on stderr (the daemon's log: stop_manager checks its status)
    assert (proc.returncode == 0) == (end == 'exit'), err
    assert 'Sanitizer' not in err and 'runtime error' not in err, err
    err = log if mgr else err
    want = expected(pb, [bundle], workdir, tag)
    s = summary(err)
    assert s['sections'] == 1 and s['sections_failed'] == 0 and s['left'] == 0, err
    got = rec.requests
    assert per_span(pb, got, timeless=True) == per_span(pb, want, timeless=True)
    near_times(pb, got, want)
    assert ids(pb, got) == ids(pb, want)
    assert served_spans(pb, want)
    serve = [decode_span(sp) for _, sp in contents(pb, got)[0]
             if decode_span(sp).name == 'serve']
    assert len(serve) == 1
    unended = [a.value.bool_value for a in serve[0].attributes if a.key == 'nanotrace.unended']
    # "serve" ends with the process or, killed, unended; unless the writer lost events (a
    # lost Begin's End would end it): then as the section's export has it (above)
    if not lost_anything(pb, want):
        assert unended == ([True] if end == 'kill' else [])
    # what the end sends (the unended spans, the losses span) has the section's own
    # Resource: the header it ended with (its loss counts to the end)
    final = {r.SerializeToString() for r in resources(pb, want)}
    assert len(final) == 1
    assert {r.SerializeToString() for r in resources(pb, got, at_end=True)} <= final
    if end == 'kill':
        assert resources(pb, got, at_end=True)


def file_requests(pb, path):
    """The requests of a doc/otlp_file.proto File: [(signal, bytes)]."""
    f = pb[0].File()
    f.ParseFromString(open(path, 'rb').read())
    return ([('traces', r.SerializeToString()) for r in f.traces] +
            [('metrics', r.SerializeToString()) for r in f.metrics])


@pytest.mark.parametrize('mode', ['oneshot', 'streaming'])
def test_export_in_parts_is_the_whole_export(pb, workdir, mode):
    """The reader's incremental exporter (nt_otlp_exporter_add per part) against
    nt_otlp_export, at the unit level (tests/ship/otlp_parts.c, no manager, no network):
    each section of a two-process recording (request_program pipe: five threads, async
    spans and flows across them, global ids) cut into 1 to 7 parts at record boundaries,
    each part the shipper's archive of its range (nt_ship_part_build), both visited in
    stream order, gives every span (its attributes, events, links and parent) with the same
    ids and the same gauge points; spans open across parts end where they end, nothing
    twice, and the losses span says the same (no gap invented at a part's first chunk)."""
    tag = 'parts-' + mode
    # streaming with a small buffer: several saves (and, when the writers outrun them, gaps)
    small = ['-b', '64K'] if mode == 'streaming' else []
    bundle, _ = record(workdir, tag, '', '', n=3000, plain=True, extra=['-m', mode, *small])
    for i, sec in enumerate(sections(bundle, workdir, tag)):
        whole_out, parts_out = sec + '.whole', sec + '.parts'
        for k in (1, 2, 3, 7):
            p = subprocess.run([OTLP_PARTS, sec, str(k), whole_out, parts_out],
                               capture_output=True)
            assert p.returncode == 0, p.stderr
            whole, parts = file_requests(pb, whole_out), file_requests(pb, parts_out)
            assert per_span(pb, parts) == per_span(pb, whole), (i, k)
            assert ids(pb, parts) == ids(pb, whole), (i, k)
            assert contents(pb, parts) == contents(pb, whole), (i, k)
            assert per_span(pb, whole)
