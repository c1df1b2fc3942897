"""trace-dump's and trace-import's progress lines (reader/tools/nt_progress.h): with stderr on a terminal (a pty)
and the output in a file, a line "trace-dump: N MB written, S s" appears at most every 100 ms
and is erased at the end; the output is byte for byte what a run without it writes; there is
no line with --no-progress, with stderr piped, or with stdout on the terminal too."""
import os
import pty
import re
import select
import subprocess
import time

import pytest

TRACE_DUMP = os.environ['NT_TRACE_DUMP']
TRACE_IMPORT = os.environ['NT_TRACE_IMPORT']
DEMO = os.environ['NT_DEMO']
LINE = re.compile(rb'\rtrace-dump: (\d+\.\d) MB written, (\d+\.\d) s\x1b\[K')
ERASE = b'\r\x1b[K'


@pytest.fixture(scope='module')
def archive(tmp_path_factory):
    # about two million events: a render of a few hundred ms, several progress updates
    path = str(tmp_path_factory.mktemp('progress') / 'big.ntrace')
    subprocess.run([DEMO, path, '--threads', '4', '--requests', '80000',
                    '--buffer-size', str(512 << 20)], check=True, capture_output=True,
                   timeout=120)
    return path


def run_on_pty(args, stdout_path, stdout_on_tty=False, tool=TRACE_DUMP):
    """Runs trace-dump with stderr (and stdout when asked) on a new pty; returns the exit
    status, what the terminal received and the wall time."""
    master, slave = pty.openpty()
    out = open(stdout_path, 'wb') if not stdout_on_tty else slave
    t0 = time.monotonic()
    p = subprocess.Popen([tool, *args], stdout=out, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    if out is not slave:
        out.close()
    got = b''
    while True:
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        got += chunk
    rc = p.wait(timeout=60)
    os.close(master)
    return rc, got, time.monotonic() - t0


def test_progress_line_on_a_terminal(archive, tmp_path):
    plain = tmp_path / 'plain.txt'
    with open(plain, 'wb') as f:
        p = subprocess.run([TRACE_DUMP, archive], stdout=f, stderr=subprocess.PIPE, timeout=120)
    assert p.returncode == 0 and p.stderr == b'', p.stderr  # piped stderr: no line
    shown = tmp_path / 'shown.txt'
    rc, tty, wall = run_on_pty([archive], str(shown))
    assert rc == 0, tty
    assert shown.read_bytes() == plain.read_bytes()  # the line never touches the output
    lines = LINE.findall(tty)
    size = os.path.getsize(plain)
    # a run this long spends more than 100 ms writing (else the archive is too small to
    # show anything: make it bigger); ~0.6 s on an idle machine
    assert wall > 0.25, wall
    assert len(lines) >= 1, (wall, tty[:500])
    # at most one line per 100 ms, never more bytes than were written, erased at the end
    assert len(lines) <= wall / 0.1 + 1, (len(lines), wall)
    mbs = [float(m) for m, _ in lines]
    assert mbs == sorted(mbs) and all(m * 1e6 <= size + 5e4 for m in mbs), (mbs, size)
    if lines:
        assert tty.endswith(ERASE), tty[-100:]
    assert LINE.sub(b'', tty).replace(ERASE, b'') == b'', tty[:500]  # nothing else


def test_no_progress_when_asked_or_output_on_the_terminal(archive, tmp_path):
    rc, tty, _ = run_on_pty(['--no-progress', archive], str(tmp_path / 'a.txt'))
    assert rc == 0 and tty == b'', tty[:200]
    # stdout on the terminal as well: the line would mix with the output
    rc, tty, _ = run_on_pty(['--stats', archive], None, stdout_on_tty=True)
    assert rc == 0 and b'events:' in tty and b'MB written' not in tty, tty[:300]


IMPORT_LINE = re.compile(rb'\rtrace-import: (\d+\.\d) of (\d+\.\d) MB imported \((\d+)%\), '
                         rb'(\d+\.\d) s\x1b\[K')


def test_import_progress_line_on_a_terminal(tmp_path):
    """trace-import shows how much of its input it has imported, of the total, when stderr
    is a terminal; the archive is the same as without the line; none when stderr is piped
    or with --no-progress."""
    corpus = os.environ.get('NT_CORPUS', '')
    events = sorted((os.path.getsize(os.path.join(corpus, d, 'event')), os.path.join(corpus, d, 'event'))
                    for d in (os.listdir(corpus) if os.path.isdir(corpus) else [])
                    if os.path.isfile(os.path.join(corpus, d, 'event')))
    if not events:
        pytest.skip('golden corpus not found: %s' % (corpus or 'NT_CORPUS unset'))
    one = open(events[-1][1], 'rb').read()
    big = tmp_path / 'big.event'
    with open(big, 'wb') as f:  # about 120 MB: an import of most of a second
        for _ in range(max(1, (120 << 20) // len(one))):
            f.write(one)
    size = os.path.getsize(big)
    plain = tmp_path / 'plain.ntrace'
    p = subprocess.run([TRACE_IMPORT, '-o', str(plain), str(big)], stderr=subprocess.PIPE,
                       timeout=300)
    assert p.returncode == 0 and p.stderr == b'', p.stderr  # piped stderr: no line
    shown = tmp_path / 'shown.ntrace'
    rc, tty, wall = run_on_pty(['-o', str(shown), str(big)], os.devnull, tool=TRACE_IMPORT)
    assert rc == 0, tty
    assert shown.read_bytes() == plain.read_bytes()
    lines = IMPORT_LINE.findall(tty)
    assert wall > 0.25, wall  # else the input is too small to show anything: make it bigger
    assert len(lines) >= 1, (wall, tty[:500])
    assert len(lines) <= wall / 0.1 + 1, (len(lines), wall)
    done = [float(d) for d, _, _, _ in lines]
    assert done == sorted(done), done
    for d, total, pct, _ in lines:
        assert abs(float(total) * 1e6 - size) <= 1e5, (total, size)
        assert float(d) <= float(total), (d, total)
        assert abs(int(pct) - 100 * float(d) / float(total)) <= 1, (d, total, pct)
    assert tty.endswith(ERASE), tty[-100:]
    assert IMPORT_LINE.sub(b'', tty).replace(ERASE, b'') == b'', tty[:500]
    quiet = tmp_path / 'quiet.ntrace'
    rc, tty, _ = run_on_pty(['--no-progress', '-o', str(quiet), str(big)], os.devnull,
                            tool=TRACE_IMPORT)
    assert rc == 0 and tty == b'', tty[:200]
