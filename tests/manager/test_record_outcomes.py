"""What trace-record says and leaves when things go wrong (issue 25): a command that cannot
be run, a trace-record killed with SIGKILL before it, output names that are no file, its
messages' wording.
Run by meson (suite manager) with NT_MANAGER, NT_TRACE_RECORD, NT_PROVIDER_PROG, NT_WORKDIR.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from mgr_support import MANAGER, PROG, TRACE_RECORD  # noqa: E402


def embedded_env(tmp_path):
    """No manager on the default path: trace-record embeds one, its socket in tmp_path."""
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path / 'xdg'), TMPDIR=str(tmp_path))
    env.pop('NANOTRACE_MANAGER', None)
    return env


def record(tmp_path, *args):
    return subprocess.run([TRACE_RECORD, *args], env=embedded_env(tmp_path),
                          capture_output=True, text=True, timeout=60, cwd=str(tmp_path))


def test_a_command_that_cannot_be_run_leaves_no_archive(tmp_path):
    out = tmp_path / 'out' / 'missing.ntbundle'
    out.parent.mkdir()
    p = record(tmp_path, '-o', str(out), '--', './missing')
    assert p.returncode == 127, p.stderr
    assert p.stderr == ("trace-record: cannot run './missing': No such file or directory; "
                        "nothing is recorded\n"), p.stderr
    assert os.listdir(out.parent) == [], 'an archive or its temporary file was left'
    # A command that runs and exits 127 itself is recorded as any other.
    p = record(tmp_path, '-o', str(out), '--', 'sh', '-c', 'exit 127')
    assert p.returncode == 127 and os.path.exists(out), p.stderr


def test_one_process_is_one_process(tmp_path):
    out = tmp_path / 'one.ntbundle'
    p = record(tmp_path, '-o', str(out), '--', PROG, '--events', '10')
    assert p.returncode == 0 and 'wrote %s: 1 process, ' % out in p.stderr, p.stderr


def test_output_that_names_no_file_is_a_usage_error(tmp_path):
    (tmp_path / 'adir').mkdir()
    for out in ('', str(tmp_path / 'adir'), str(tmp_path / 'nodir') + '/'):
        p = record(tmp_path, '-o', out, '--', 'true')
        assert p.returncode == 1, (out, p.returncode, p.stderr)
        assert "-o '%s'" % out in p.stderr, (out, p.stderr)
    assert sorted(os.listdir(tmp_path)) == ['adir'], os.listdir(tmp_path)


def test_unknown_options_name_the_program_not_its_path(tmp_path):
    for tool, name in ((TRACE_RECORD, 'trace-record'), (MANAGER, 'nanotrace-manager')):
        p = subprocess.run([tool, '--bogus-option'], capture_output=True, text=True, timeout=10)
        assert p.returncode == 1, p.stderr
        assert p.stderr.startswith("%s: unrecognized option '--bogus-option'\n" % name), \
            p.stderr


def test_what_a_killed_trace_record_left_is_found(tmp_path):
    # SIGKILL leaves trace-record no chance: its embedded manager's private socket directory
    # and the bundle under its hidden temporary name stay. The next trace-record removes the
    # directory (nobody listens there) and names the bundle (nothing holds it).
    out = tmp_path / 'out' / 'run.ntbundle'
    out.parent.mkdir()
    rec = subprocess.Popen([TRACE_RECORD, '-o', str(out), '--', PROG, '--sync', '--events',
                            '100', '--hold-ms', '60000'], env=embedded_env(tmp_path),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           start_new_session=True)
    deadline = time.time() + 30
    dirs = []
    while not dirs:
        dirs = [n for n in os.listdir(tmp_path) if n.startswith('nanotrace-record-')]
        assert time.time() < deadline and rec.poll() is None, 'trace-record did not start'
        time.sleep(0.05)
    time.sleep(0.5)  # the provider registers and records
    os.killpg(rec.pid, signal.SIGKILL)
    rec.wait(10)
    rec.stderr.close()
    left = [n for n in os.listdir(out.parent) if n.startswith('.run.ntbundle.')]
    assert len(left) == 1 and not os.path.exists(out), os.listdir(out.parent)
    assert os.path.exists(tmp_path / dirs[0] / 'manager.sock')
    p = record(tmp_path, '-o', str(out), '--', 'true')
    assert p.returncode == 0, p.stderr
    named = [line for line in p.stderr.splitlines() if left[0] in line]
    assert len(named) == 1 and 'unfinished recording' in named[0], p.stderr
    assert [n for n in os.listdir(tmp_path) if n.startswith('nanotrace-record-')] == [], \
        os.listdir(tmp_path)
    assert os.path.exists(out.parent / left[0]), 'the left recording was removed'
