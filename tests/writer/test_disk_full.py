"""A full disk at the end of a traced run: a Trace2 program traced into a file
(NANOTRACE=<file>) on a tmpfs with room for its arena but not for the finished archive. The
exit-time finish fails; one stderr line names the file and the reason; the program's output
and exit status are its own; the file is still the arena as recorded, which trace-dump reads
with every event. Needs root (a private mount namespace with a small tmpfs): skipped
otherwise, and CI runs as root.
"""
import os
import shutil
import subprocess

import pytest

from conftest import program

T2_PROGRAM, TRACE_DUMP = program('NT_T2_PROGRAM'), program('NT_TRACE_DUMP')


def in_small_tmpfs(kib, script):
    """Runs `script` (sh) with a tmpfs of `kib` KiB at $FS, in a mount namespace of its own."""
    fs = '/tmp/nt-disk-full-%d' % os.getpid()
    os.makedirs(fs, exist_ok=True)
    try:
        return subprocess.run(
            ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
             'mount -t tmpfs -o size=%dk,mode=0700 tmpfs "$FS" && %s' % (kib, script)],
            capture_output=True, env=dict(os.environ, FS=fs, T2=T2_PROGRAM, DUMP=TRACE_DUMP))
    finally:
        os.rmdir(fs)


def test_finish_at_exit_on_a_full_disk_is_said_and_leaves_a_readable_arena():
    if os.geteuid() != 0 or shutil.which('unshare') is None:
        pytest.skip('needs root and unshare(1) to mount a small tmpfs')
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
