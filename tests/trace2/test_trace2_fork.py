"""test_trace2_fork: a Trace2 program (NANOTRACE=<directory>) forks a child that records
without exec (t2_program --fork). The child gets a new SID "<parent SID>/<own>", as Git gives
its child processes, and its own archive in the directory, named by its SID's last component
like every per-process file there; its header names the parent's pid, and the parent's counts
the child. Every renderer reads the child's archive: Trace2's normal, perf and event, text,
chrome and --stats.
"""
import json
import os
import subprocess

from conftest import program

PROG, DUMP = program('NT_T2_PROGRAM'), program('NT_TRACE_DUMP')


def dump(*args):
    p = subprocess.run([DUMP] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.returncode == 0, 'trace-dump %s: exit %d: %s' % (args, p.returncode,
                                                             p.stderr.decode())
    return p.stdout.decode('utf-8')


def sids(path):
    return {json.loads(line)['sid'] for line in dump('--format', 'event', path).splitlines()}


def test_fork_child_has_its_own_sid_and_archive(tmp_path):
    d = str(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith('NANOTRACE')}
    env['NANOTRACE'] = d
    p = subprocess.run([PROG, '--fork', '--threads', '1'], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    assert p.returncode == 3 and b'fork() child failed' not in p.stderr, p.stderr.decode()
    stats = {n: dump('--stats', os.path.join(d, n)) for n in os.listdir(d)}
    forked = [n for n, s in stats.items() if 'forked from: pid' in s]
    # Three forks: the --fork child and run_child's two fork()+exec() (those leave no file of
    # their own; the exec'd t2_program --child records into its own, by its own SID).
    parents = [n for n, s in stats.items() if 'children forked: 3 while recording' in s]
    assert len(forked) == 1 and len(parents) == 1, stats
    child, parent = os.path.join(d, forked[0]), os.path.join(d, parents[0])
    (parent_sid,), (child_sid,) = sids(parent), sids(child)
    assert child_sid.startswith(parent_sid + '/'), (parent_sid, child_sid)
    assert forked[0] == child_sid.rsplit('/', 1)[1], (forked[0], child_sid)
    event = dump('--format', 'event', child)
    assert '"category":"forked","key":"role","value":"fork-child"' in event, event
    assert '"event":"exit"' in event
    # NORMAL has no regions or data (as Git's): the child's exit is there.
    assert ' exit elapsed:' in dump('--format', 'normal', child)
    assert 'fork-child' in dump('--format', 'perf', child)
    assert 'fork-child' in dump('--format', 'text', child)
    json.loads(dump('--format', 'chrome', child))
    assert 'fork-child' not in dump('--format', 'event', parent)
