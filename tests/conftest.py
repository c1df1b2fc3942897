"""Shared pytest fixtures for nanotrace's Python tests.

meson passes the programs under test as environment variables (tests/*/meson.build):
NT_TRACE_DUMP, NT_TRACE_IMPORT, NT_DEMO, NT_CANONICAL_DUMP, NT_RENDER_CASES, NT_T2_PROGRAM,
NT_T2_TIMING, NT_FLATC, NT_SCHEMA, NT_CORPUS and NT_WORKDIR. Run one file by hand with
`meson test -C build NAME -v`, which sets them.

A run in which a test was skipped and none failed exits 77, which meson counts as SKIP;
pytest's summary (-ra) names each skipped test and why.
"""
import os

import pytest


def program(var):
    """The path in environment variable `var`; a test error (not a skip) when unset."""
    value = os.environ.get(var)
    if not value:
        pytest.fail('%s is not set: run this test through `meson test -C build`' % var,
                    pytrace=False)
    return os.path.abspath(value)


@pytest.fixture(scope='session')
def workdir(tmp_path_factory):
    """NT_WORKDIR (a folder in the build tree) or a fresh temporary folder."""
    value = os.environ.get('NT_WORKDIR')
    if value:
        os.makedirs(value, exist_ok=True)
        return os.path.abspath(value)
    return str(tmp_path_factory.mktemp('work'))


def two_process_bundle(workdir, prefix):
    """A bundle of two demo processes recorded at once (as trace-record writes one): "web"
    (main and 2 workers) and "db" (main and 3 workers); returns its path. Needs NT_DEMO and
    NT_MAKE_BUNDLE."""
    import subprocess
    demo, make_bundle = program('NT_DEMO'), program('NT_MAKE_BUNDLE')
    paths = [os.path.join(workdir, '%s-p%d.ntrace' % (prefix, i)) for i in range(2)]
    procs = [subprocess.Popen([demo, paths[0], '--threads', '2', '--requests', '40'],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen([demo, paths[1], '--threads', '3', '--requests', '30'],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    assert [p.wait() for p in procs] == [0, 0]
    bundle = os.path.join(workdir, '%s-bundle.ntrace' % prefix)
    subprocess.run([make_bundle, bundle, paths[0] + ',name=web', paths[1] + ',name=db'],
                   check=True)
    return bundle


_outcomes = {'passed': 0, 'failed': 0, 'skipped': 0}


def protobuf_tools():
    """protoc's path (None when it is not installed) and the marks that skip a test module
    without protoc (Debian protobuf-compiler) or Python's protobuf (python3-protobuf)."""
    import shutil
    protoc = shutil.which('protoc')
    try:
        import google.protobuf  # noqa: F401
        have_protobuf = True
    except ImportError:
        have_protobuf = False
    return protoc, [
        pytest.mark.skipif(protoc is None, reason='protoc not installed (Debian protobuf-compiler)'),
        pytest.mark.skipif(not have_protobuf, reason='python3-protobuf not installed')]


def import_corpus_case(trace_import, corpus, case, archive):
    """Git's EVENT output of the corpus case `case` made into `archive` by trace-import
    (a file left by an earlier run removed first)."""
    import subprocess
    if os.path.exists(archive):
        os.remove(archive)
    subprocess.run([trace_import, '-o', archive, os.path.join(corpus, case, 'event')],
                   check=True, capture_output=True)
    return archive


# The vendored opentelemetry-proto files the OTLP exporter's messages come from
# (third_party/opentelemetry-proto), relative to that folder.
OTLP_PROTOS = ['opentelemetry/proto/common/v1/common.proto',
               'opentelemetry/proto/resource/v1/resource.proto',
               'opentelemetry/proto/trace/v1/trace.proto',
               'opentelemetry/proto/metrics/v1/metrics.proto',
               'opentelemetry/proto/collector/trace/v1/trace_service.proto',
               'opentelemetry/proto/collector/metrics/v1/metrics_service.proto']


def otlp_python_modules(protoc, source, out):
    """OTLP_PROTOS and doc/otlp_file.proto compiled by protoc --python_out into `out`, which
    is put first on sys.path; returns the otlp_file_pb2 module (the others import by their
    package, opentelemetry.proto...)."""
    import importlib
    import subprocess
    import sys
    os.makedirs(out, exist_ok=True)
    subprocess.run([protoc, '-I', os.path.join(source, 'third_party', 'opentelemetry-proto'),
                    '-I', os.path.join(source, 'doc'), '--python_out=' + out,
                    'otlp_file.proto'] + OTLP_PROTOS, check=True)
    sys.path.insert(0, out)
    return importlib.import_module('otlp_file_pb2')


def proto_schema(protoc, include_dirs, protos, desc):
    """A vendored schema as protoc reads it (compiled to the descriptor set `desc`): its
    messages by full name (each {field name: FieldDescriptorProto}), its enums by full name
    ({value name: number}), and the field types each wire type (V, F, L) may carry."""
    import subprocess
    from google.protobuf import descriptor_pb2
    subprocess.run([protoc] + ['-I' + d for d in include_dirs] +
                   ['--include_imports', '--descriptor_set_out=' + desc] + list(protos),
                   check=True)
    fds = descriptor_pb2.FileDescriptorSet()
    with open(desc, 'rb') as f:
        fds.ParseFromString(f.read())
    messages, enums = {}, {}

    def walk(prefix, msgs, ens):
        for e in ens:
            enums[prefix + e.name] = {v.name: v.number for v in e.value}
        for m in msgs:
            messages[prefix + m.name] = {f.name: f for f in m.field}
            walk(prefix + m.name + '.', m.nested_type, m.enum_type)
    for fd in fds.file:
        walk('', fd.message_type, fd.enum_type)
    F = descriptor_pb2.FieldDescriptorProto
    wire = {'V': {F.TYPE_INT32, F.TYPE_INT64, F.TYPE_UINT32, F.TYPE_UINT64, F.TYPE_BOOL,
                  F.TYPE_ENUM},
            'F': {F.TYPE_FIXED64, F.TYPE_DOUBLE, F.TYPE_SFIXED64},
            'L': {F.TYPE_STRING, F.TYPE_BYTES, F.TYPE_MESSAGE}}
    return messages, enums, wire


def pytest_runtest_logreport(report):
    if report.when == 'call' or report.outcome != 'passed':
        _outcomes[report.outcome] = _outcomes.get(report.outcome, 0) + 1


def pytest_collectreport(report):
    if report.skipped:
        _outcomes['skipped'] += 1


def pytest_sessionfinish(session, exitstatus):
    # A skipped test (a missing tool or corpus) and no failure: exit 77, meson's SKIP, even
    # if other tests passed: the file did not prove everything it claims, and CI must notice.
    if exitstatus in (0, 5) and _outcomes['skipped'] and not _outcomes['failed']:
        session.exitstatus = 77
