"""Compressed archives from the command line: trace-record's sections (oneshot and streaming)
and trace-import's archives are compressed by default, --compression-level chooses the level
(0 or off: none; a bad value is a usage error), and the compressed archive renders exactly as
the uncompressed one. `trace-dump --stats` states the compression.

Run by meson (suite manager) with NT_TRACE_RECORD, NT_TRACE_IMPORT, NT_TRACE_DUMP,
NT_PROVIDER_PROG, NT_WORKDIR.
"""
import os
import re
import subprocess

from conftest import program

RECORD, IMPORT, DUMP, PROG = (program('NT_TRACE_RECORD'), program('NT_TRACE_IMPORT'),
                              program('NT_TRACE_DUMP'), program('NT_PROVIDER_PROG'))


def recorder_env(tmp_path):
    """No manager on the default path: trace-record embeds one."""
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path), TMPDIR=str(tmp_path))
    env.pop('NANOTRACE_MANAGER', None)
    return env


def stats(path):
    p = subprocess.run([DUMP, '--stats', path], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    m = re.search(r'^compression: (\d+) of (\d+) chunks compressed .*chunks (\d+) bytes in the '
                  r'file, (\d+) uncompressed', p.stdout, re.M)
    assert m, p.stdout
    events = int(re.search(r'^events: (\d+)$', p.stdout, re.M).group(1))
    # Every event made is decoded or counted as dropped (the gaps the drops leave between
    # chunks count them again).
    events += int(re.search(r'^dropped: (\d+) events', p.stdout, re.M).group(1))
    assert 'damaged places' not in p.stdout, p.stdout
    return events, int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4))


def dump(path, fmt):
    """What trace-dump prints, the archive's name (Chrome's otherData) left out."""
    p = subprocess.run([DUMP, '--format', fmt, path], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.replace(path.encode(), b'ARCHIVE')


def record(tmp_path, name, mode, *extra):
    out = str(tmp_path / name)
    p = subprocess.run([RECORD, '-o', out, '--buffering-mode', mode, '--buffer-size', '256K',
                        *extra, '--', PROG, '--sync', '--threads', '2', '--events', '30000',
                        '--finish'], env=recorder_env(tmp_path), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return out


def test_trace_record_sections_compressed(tmp_path):
    for mode in ('oneshot', 'streaming'):
        plain = stats(record(tmp_path, mode + '-off', mode, '--compression-level', 'off'))
        default = stats(record(tmp_path, mode + '-default', mode))
        level3 = stats(record(tmp_path, mode + '-3', mode, '--compression-level', '3'))
        assert plain[1] == 0, (mode, plain)
        assert plain[0] == default[0] == level3[0] == 60000, (mode, plain, default, level3)
        for s in (default, level3):
            assert s[1] > 0, (mode, s)
            # A streaming saver stores pieces uncompressed while writers outrun it (a loaded
            # machine): only the stopped arena's save is sure to be compressed whole.
            assert mode == 'streaming' or s[3] * 2 < s[4], (mode, s)


def test_a_short_process_chunk_is_saved_to_its_records_end(tmp_path):
    """A chunk closed early (here: the process ends after 40 events) is saved up to the end
    of its records, not as the whole chunk of mostly zeros: a reader decompresses and
    checksums every byte a piece holds, and a bundle of thousands of short processes is
    made of such chunks (runtime/nt_arena_saver.c, closed_chunk_end)."""
    for mode in ('oneshot', 'streaming'):
        out = str(tmp_path / ('short-' + mode))
        p = subprocess.run([RECORD, '-o', out, '--buffering-mode', mode, '--buffer-size', '256K',
                            '--', PROG, '--sync', '--threads', '1', '--events', '40', '--finish'],
                           env=recorder_env(tmp_path), capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        events, z, chunks, disk, plain = stats(out)
        assert events == 40 and z == chunks == 1, (mode, events, z, chunks)
        # 40 header bytes and 40 instants of at most 16 bytes each; the chunk is 4 KiB at
        # the least (it was saved whole before).
        assert 40 + 40 * 4 <= plain <= 40 + 40 * 16, (mode, plain)


def test_trace_record_bad_level(tmp_path):
    for bad in ('23', 'fast', '1.5', ''):
        p = subprocess.run([RECORD, '-o', str(tmp_path / 'x'), '--compression-level', bad,
                            '--', 'true'], env=recorder_env(tmp_path), capture_output=True,
                           text=True, timeout=30)
        assert p.returncode == 1, (bad, p.stderr)
        assert '--compression-level' in p.stderr, (bad, p.stderr)


def event_stream(n):
    sid = '20261121T230246.862871Z-H0a7c9cdf-P000063f5'
    lines = ['{"event":"version","sid":"%s","thread":"main","time":"2026-11-21T23:02:46.000000Z",'
             '"file":"common-main.c","line":50,"evt":"3","exe":"2.39.5"}' % sid]
    for i in range(n):
        t = '2026-11-21T23:02:46.%06dZ' % (i + 1)
        lines.append('{"event":"region_enter","sid":"%s","thread":"main","time":"%s",'
                     '"file":"a.c","line":%d,"nesting":1,"category":"index","label":"do_%d"}'
                     % (sid, t, 10 + i % 7, i % 5))
        lines.append('{"event":"region_leave","sid":"%s","thread":"main","time":"%s",'
                     '"file":"a.c","line":%d,"t_rel":0.000001,"nesting":1,"category":"index",'
                     '"label":"do_%d"}' % (sid, t, 20 + i % 7, i % 5))
    return '\n'.join(lines) + '\n'


def test_trace_import_compressed(tmp_path):
    src = tmp_path / 'events.json'
    src.write_text(event_stream(20000))
    outs = {}
    for level in (None, '0', 'off', '1', '19', '-5'):
        out = str(tmp_path / ('import-%s.ntrace' % level))
        args = [IMPORT, '-o', out] + (['--compression-level', level] if level else []) + [str(src)]
        p = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, (level, p.stderr)
        outs[level] = out
        events, z, chunks, disk, plain = stats(out)
        assert events == 40001, (level, events)
        if level in ('0', 'off'):
            assert z == 0 and disk == plain, (level, z, disk, plain)
        else:
            assert z > 0 and disk * 2 < plain, (level, z, disk, plain)
    want = {fmt: dump(outs['0'], fmt) for fmt in ('event', 'normal', 'perf', 'text', 'chrome')}
    for level, out in outs.items():
        for fmt, text in want.items():
            assert dump(out, fmt) == text, (level, fmt)
    for bad in ('23', 'x', '--'):
        p = subprocess.run([IMPORT, '-o', str(tmp_path / 'bad.ntrace'), '--compression-level',
                            bad, str(src)], capture_output=True, text=True, timeout=30)
        assert p.returncode == 1, (bad, p.stderr)
        assert '--compression-level' in p.stderr
