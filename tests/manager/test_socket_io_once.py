"""Socket I/O is written once (issue 24): runtime/nt_sock.c is the only file of the product
(every folder but tests/, whose fake peers craft hostile messages by hand) that calls
sendmsg() or recvmsg() or reads SO_PEERCRED; writer, manager and trace-record go through it."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
THE_UNIT = ROOT / 'runtime' / 'nt_sock.c'
SOURCES = ('.c', '.h', '.cc', '.cpp')
CALLS = re.compile(r'\b(sendmsg|recvmsg)\s*\(|\bSO_PEERCRED\b')
# Comments and string literals (a log line may name SO_PEERCRED) are not calls.
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', re.S)


def product_sources():
    for path in sorted(ROOT.rglob('*')):
        rel = path.relative_to(ROOT)
        if path.suffix not in SOURCES or not path.is_file():
            continue
        if rel.parts[0] in ('tests', 'subprojects') or rel.parts[0].startswith(('build', '.')):
            continue
        yield path


def test_only_the_unit_does_socket_io():
    offenders = []
    for path in product_sources():
        if path == THE_UNIT:
            continue
        code = COMMENT.sub('', path.read_text(errors='replace'))
        for m in CALLS.finditer(code):
            line = code.count('\n', 0, m.start()) + 1
            offenders.append(f'{path.relative_to(ROOT)}: {m.group(0).strip()} (line {line} '
                             'without comments and strings)')
    assert offenders == [], 'socket I/O outside runtime/nt_sock.c:\n' + '\n'.join(offenders)


def test_the_unit_is_there_and_does_it():
    code = COMMENT.sub('', THE_UNIT.read_text())
    for what in ('sendmsg(', 'recvmsg(', 'SO_PEERCRED', 'MSG_CMSG_CLOEXEC'):
        assert what in code, f'runtime/nt_sock.c does not use {what}'


def test_every_user_links_the_unit():
    for user in ('writer/core/nt_registry_wire.c', 'writer/core/nt_stream.c',
                 'manager/core/nt_mgr_loop.c', 'manager/core/nt_mgr_path.c',
                 'manager/core/nt_mgr_saver.c', 'manager/core/nt_mgr_base.c',
                 'manager/tools/nt_record_manager.c'):
        assert '#include "runtime/nt_sock.h"' in (ROOT / user).read_text(), user
