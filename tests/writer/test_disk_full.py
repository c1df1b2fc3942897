"""Issue 15's disk-full and I/O-error rule, write path by write path.

As root, on a small tmpfs in a private mount namespace (skipped otherwise; CI runs as root):
  - a Trace2 program traced into a file (NANOTRACE=<file>) whose exit-time finish meets a
    full disk: one stderr line names the file and the reason; the program's output and exit
    status are its own; the file is still the arena as recorded, with every event, and says
    why saving stopped, which trace-dump reads with a warning line and exit 0;
  - the streaming saver filling the file system mid-run (nanotrace-demo --mode streaming):
    the archive is the saved stream, the events it lacks counted as not saved, never as
    truncation; trace-dump exits 0 with the warning;
  - nt_finish() of an arena in memory on a full disk (test_save_failure's own check, run
    there: nt_last_error() names the path and the reason, the archive keeps what was saved
    and accounts for every event);
  - trace-import -o and trace-dump into a full file system, in every format: the path (or
    standard output) and the reason, exit 2, and no file or temporary file left behind.
Without root, EFBIG past RLIMIT_FSIZE (SIGXFSZ ignored) stands for the failed write:
trace-import -o and trace-dump in every format, the same messages and exits.
"""
import os
import resource
import shutil
import signal
import subprocess

import re

import pytest

from conftest import program

T2_PROGRAM, TRACE_DUMP = program('NT_T2_PROGRAM'), program('NT_TRACE_DUMP')
TRACE_IMPORT, DEMO = program('NT_TRACE_IMPORT'), program('NT_DEMO')
FORMATS = (['--format', 'text'], ['--format', 'chrome'], ['--stats'],
           ['--format', 'normal'], ['--format', 'perf'], ['--format', 'event'])
ENOSPC, EFBIG = os.strerror(28), os.strerror(27)


def in_small_tmpfs(kib, script):
    """Runs `script` (sh) with a tmpfs of `kib` KiB at $FS, in a mount namespace of its own."""
    fs = '/tmp/nt-disk-full-%d' % os.getpid()
    os.makedirs(fs, exist_ok=True)
    try:
        return subprocess.run(
            ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
             'mount -t tmpfs -o size=%dk,mode=0700 tmpfs "$FS" && %s' % (kib, script)],
            capture_output=True,
            env=dict(os.environ, FS=fs, T2=T2_PROGRAM, DUMP=TRACE_DUMP, IMPORT=TRACE_IMPORT,
                     DEMO=DEMO, SAVE_FAILURE=os.environ.get('NT_SAVE_FAILURE', '')))
    finally:
        os.rmdir(fs)


def need_root():
    if os.geteuid() != 0 or shutil.which('unshare') is None:
        pytest.skip('needs root and unshare(1) to mount a small tmpfs')


def text(p):
    return p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def saving_stopped(line):
    """(reason, N) of a "saving stopped: REASON; N events not saved" line, or None."""
    m = re.search(r'saving stopped: ([^;]+); (\d+) events not saved', line)
    return (m.group(1), int(m.group(2))) if m else None


def test_finish_at_exit_on_a_full_disk_is_said_and_leaves_a_readable_arena():
    need_root()
    plain = subprocess.run([T2_PROGRAM, 'basic'], capture_output=True,
                           env={k: v for k, v in os.environ.items()
                                if not k.startswith('NANOTRACE')})
    # 72 KiB: the 64 KiB arena (and its header) fits, the finished archive beside it does not.
    p = in_small_tmpfs(72, 'NANOTRACE="$FS/t.ntrace" NANOTRACE_BUFFER_SIZE=64K "$T2" basic; '
                           'echo "status $?" >&2; "$DUMP" --stats "$FS/t.ntrace"; '
                           'echo "dump $?" >&2')
    err = p.stderr.decode('utf-8', 'replace')
    out = p.stdout.decode('utf-8', 'replace')
    lines = [ln for ln in err.splitlines() if 'could not finish' in ln]
    assert len(lines) == 1, err
    assert "/t.ntrace' at exit" in lines[0] and 'No space left on device' in lines[0], lines[0]
    assert 'status %d' % plain.returncode in err, err
    assert plain.stdout.decode() in out, 'the program printed something else'
    assert 'dump 0' in err, err
    assert 'layout: arena' in out and 'final state: recording' in out, out
    events = [ln for ln in out.splitlines() if ln.startswith('events: ')]
    assert events and int(events[0].split()[1]) > 0, out
    # The arena records why saving stopped: trace-dump warns once and exits 0.
    warn = [ln for ln in err.splitlines() if ln.startswith('trace-dump: ')]
    assert len(warn) == 1 and warn[0].endswith('/t.ntrace: saving stopped: %s; 0 events '
                                               'not saved' % ENOSPC), err
    assert 'saving stopped: %s; 0 events not saved' % ENOSPC in out, out
    assert 'is truncated' not in err + out, err


def stats_numbers(out):
    events = int(re.search(r'^events: (\d+)', out, re.M).group(1))
    written = int(re.search(r'^written: (\d+)', out, re.M).group(1))
    dropped = re.search(r'^dropped: (\d+) events \(.*not saved (\d+)\)', out, re.M)
    return events, written, int(dropped.group(1)), int(dropped.group(2))


def test_streaming_saver_fills_the_disk_mid_run():
    need_root()
    # 1 MiB: the 64 KiB arena fits, the stream of 1.5 s of requests does not.
    p = in_small_tmpfs(1024, '"$DEMO" "$FS/s.ntrace" --mode streaming --buffer-size 65536 '
                             '--duration-ms 1500; echo "demo $?" >&2; '
                             '"$DUMP" --stats "$FS/s.ntrace"; echo "dump $?" >&2; '
                             'echo "== text"; "$DUMP" "$FS/s.ntrace" | tail -n 1; '
                             'echo "== chrome"; "$DUMP" --format chrome "$FS/s.ntrace" | tail -n 1')
    out, err = text(p)
    out, rendered = out.split('== text\n')
    last_text, chrome = rendered.split('== chrome\n')
    said = [ln for ln in err.splitlines() if ln.startswith('nanotrace-demo: ')]
    assert len(said) == 1 and "/s.ntrace'" in said[0] and ENOSPC in said[0], err
    assert 'not saved' in said[0], said
    assert 'dump 0' in err and 'is truncated' not in err + out, err
    assert 'layout: stream' in out, out
    events, written, dropped, unsaved = stats_numbers(out)
    assert events == written > 0 and unsaved > 0 and dropped >= unsaved, out
    warn = [saving_stopped(ln) for ln in err.splitlines() if ln.startswith('trace-dump: ')]
    assert warn == [(ENOSPC, unsaved)] * 3, err
    # Every renderer shows it where it shows drops.
    assert saving_stopped(out) == (ENOSPC, unsaved), out
    assert last_text.startswith('-- ') and saving_stopped(last_text) == (ENOSPC, unsaved), last_text
    assert '"dropped_unsaved":%d' % unsaved in chrome, chrome
    assert '"saving_stopped":"saving stopped: %s; %d events not saved"' % (ENOSPC, unsaved) in chrome, chrome


def test_finish_of_a_memory_arena_on_a_full_disk_keeps_what_was_saved():
    need_root()
    exe = os.environ.get('NT_SAVE_FAILURE')
    if not exe:
        pytest.skip('test_save_failure was not built (cmocka missing)')
    # 256 KiB: a fifth of the archive test_save_failure records.
    p = in_small_tmpfs(256, 'NT_SAVE_FAILURE_FULL_DIR="$FS" "$SAVE_FAILURE"; '
                            'echo "test $?" >&2; "$DUMP" --stats "$FS/mem.ntrace"; '
                            'echo "dump $?" >&2')
    out, err = text(p)
    assert 'test 0' in err, out + err
    assert 'dump 0' in err and 'is truncated' not in err + out, err
    events, written, dropped, unsaved = stats_numbers(out)
    assert 0 < events == written and unsaved > 0 and dropped == unsaved, out
    assert saving_stopped(out) == (ENOSPC, unsaved), out


def import_input(path, n=4000):
    """Git EVENT lines: a version line and n regions, about 2 KiB per 10 regions."""
    sid = '20261121T230246.862871Z-H0a7c9cdf-P000063f5'
    head = ('{"event":"version","sid":"%s","thread":"main","time":"2026-11-21T23:02:46.000000Z",'
            '"file":"common-main.c","line":50,"evt":"3","exe":"2.39.5"}\n' % sid)
    region = ('{"event":"region_%s","sid":"%s","thread":"main","time":"2026-11-21T23:02:46.%06dZ",'
              '"file":"a.c","line":%d,%s"nesting":1,"category":"index","label":"do_%d"}\n')
    with open(path, 'w') as f:
        f.write(head)
        for i in range(n):
            f.write(region % ('enter', sid, i + 1, 10 + i % 7, '', i % 5))
            f.write(region % ('leave', sid, i + 1, 20 + i % 7, '"t_rel":0.000001,', i % 5))


def test_import_and_dump_into_a_full_disk(tmp_path):
    need_root()
    src = str(tmp_path / 'events.json')
    import_input(src)
    good = str(tmp_path / 'good.ntrace')
    assert subprocess.run([TRACE_IMPORT, '-o', good, src], capture_output=True).returncode == 0
    # A full tmpfs: a filler takes every block; then each writer meets ENOSPC.
    script = ['head -c 1M /dev/zero > "$FS/filler" 2>/dev/null; '
              '"$IMPORT" --compression-level off -o "$FS/out.ntrace" "%s"; echo "import $?" >&2'
              % src]
    for i, args in enumerate(FORMATS):
        script.append('echo "case %d" >&2; "$DUMP" %s "%s" > "$FS/dump%d"; echo "exit $?" >&2'
                      % (i, ' '.join(args), good, i))
    script.append('rm -f "$FS"/dump*; ls -A "$FS" >&2')
    p = in_small_tmpfs(64, '; '.join(script))
    out, err = text(p)
    lines = err.splitlines()
    said = [ln for ln in lines if ln.startswith('trace-import: ')]
    assert len(said) == 1 and '/out.ntrace: ' + ENOSPC in said[0], err
    assert 'import 2' in lines, err
    assert lines[-1] == 'filler', 'a file was left behind: %r' % lines[-1]
    for i, args in enumerate(FORMATS):
        case = lines[lines.index('case %d' % i) + 1:]
        assert case[0] == 'trace-dump: writing standard output: %s' % ENOSPC, (args, err)
        assert case[1] == 'exit 2', (args, err)


def limited(bytes_):
    """A child's preexec: files at most `bytes_`, SIGXFSZ ignored (a write fails, EFBIG)."""
    def set_limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (bytes_, resource.RLIM_INFINITY))
    return set_limit


def test_import_and_dump_past_the_file_size_limit(tmp_path):
    src = str(tmp_path / 'events.json')
    import_input(src)
    out = str(tmp_path / 'out.ntrace')
    p = subprocess.run([TRACE_IMPORT, '--compression-level', 'off', '-o', out, src],
                       capture_output=True, text=True, preexec_fn=limited(8192))
    assert p.returncode == 2, p.stderr
    assert p.stderr == 'trace-import: %s: %s\n' % (out, EFBIG), p.stderr
    assert os.listdir(str(tmp_path)) == ['events.json'], 'a file was left behind'
    p = subprocess.run([TRACE_IMPORT, '-o', out, src], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for args in FORMATS:
        with open(str(tmp_path / 'dump'), 'wb') as f:
            p = subprocess.run([TRACE_DUMP, *args, out], stdout=f, stderr=subprocess.PIPE,
                               text=True, preexec_fn=limited(0))
        assert p.returncode == 2, (args, p.stderr)
        assert p.stderr == 'trace-dump: writing standard output: %s\n' % EFBIG, (args, p.stderr)
