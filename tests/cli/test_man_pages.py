"""Each tool's man page (doc/man/TOOL.1) against the tool itself: every long option the tool's
--help lists is documented in the page and the page documents no option the tool lacks; each
option the page names is accepted by the tool (not refused as unrecognized); the page has the
sections a user looks for; groff renders it without a warning (skipped when groff is missing);
--version names the tool, the release and a format version; a usage error is one line plus
"Try 'TOOL --help'." and exit status 1, as each page's EXIT STATUS says."""
import os
import re
import shutil
import subprocess

import pytest

MAN_DIR = os.environ['NT_MAN_DIR']
TOOLS = {name: os.environ[var] for name, var in (
    ('trace-dump', 'NT_TRACE_DUMP'), ('trace-import', 'NT_TRACE_IMPORT'),
    ('trace-record', 'NT_TRACE_RECORD'), ('nanotrace-manager', 'NT_MANAGER'),
    ('nanotrace-demo', 'NT_DEMO'))}

# An option line of --help: indented, an optional "-x, " then the long option first.
HELP_OPTION = re.compile(r'^\s+(?:-[A-Za-z], )?(--[a-z][a-z0-9-]*)', re.M)
# An option the page defines: a .TP tag line ("\-\-name" in troff).
MAN_OPTION = re.compile(r'^\.TP\n\.(?:B|BR|BI)\s+(?:\\-[A-Za-z] ?"?, "? ?)?(\\-\\-[a-z][a-z0-9\\-]*)',
                        re.M)


def run(tool, *args):
    return subprocess.run([TOOLS[tool], *args], capture_output=True, text=True, timeout=20,
                          env=dict(os.environ, NANOTRACE_MANAGER=''))


def help_options(tool):
    p = run(tool, '--help')
    assert p.returncode == 0 and p.stderr == '', (tool, p.returncode, p.stderr)
    return set(HELP_OPTION.findall(p.stdout))


def page(tool):
    with open(os.path.join(MAN_DIR, tool + '.1'), encoding='utf-8') as f:
        return f.read()


def man_options(tool):
    return {m.replace('\\-', '-') for m in MAN_OPTION.findall(page(tool))}


@pytest.mark.parametrize('tool', sorted(TOOLS))
def test_page_and_help_list_the_same_options(tool):
    in_help, in_page = help_options(tool), man_options(tool)
    assert len(in_help) >= 3, (tool, in_help)  # the regular expression found the list
    assert in_help - in_page == set(), '%s: in --help, not in the man page' % tool
    assert in_page - in_help == set(), '%s: in the man page, not in --help' % tool


@pytest.mark.parametrize('tool', sorted(TOOLS))
def test_every_documented_option_is_accepted(tool):
    # getopt_long's refusal of an unknown option; a known one fails later, for another reason
    for opt in man_options(tool):
        p = run(tool, opt + '=1' if opt not in ('--help', '--version') else opt, '--bogus-option')
        assert 'unrecognized option \'%s' % opt not in p.stderr, (tool, opt, p.stderr)
    p = run(tool, '--bogus-option')
    assert "unrecognized option '--bogus-option'" in p.stderr, (tool, p.stderr)


@pytest.mark.parametrize('tool', sorted(TOOLS))
def test_page_sections(tool):
    text = page(tool)
    for section in ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'OPTIONS', 'EXIT STATUS', 'EXAMPLES'):
        assert re.search(r'^\.SH "?%s"?$' % section, text, re.M), (tool, section)
    assert re.search(r'^\.TH %s 1 ' % tool.upper(), text, re.M), tool
    # the codes the page documents include the usage error the tool really returns
    status = text.split('.SH EXIT STATUS', 1)[1].split('.SH', 1)[0]
    assert '.B 1\nUsage error' in status or '.B 1\nA usage error' in status, tool


@pytest.mark.parametrize('tool', sorted(TOOLS))
def test_page_renders_without_warnings(tool):
    if shutil.which('groff') is None:
        pytest.skip('groff not installed (Debian package groff-base)')
    p = subprocess.run(['groff', '-man', '-ww', '-z', os.path.join(MAN_DIR, tool + '.1')],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stderr == '', (tool, p.stderr)


@pytest.mark.parametrize('tool', sorted(TOOLS))
def test_version_and_usage_error(tool):
    p = run(tool, '--version')
    first = p.stdout.splitlines()[0] if p.stdout else ''
    assert p.returncode == 0 and re.fullmatch(r'%s \(nanotrace\) \d+\.\d+\.\d+' % tool, first), \
        (tool, p.stdout)
    assert re.search(r'format \d+\.\d+', p.stdout), (tool, p.stdout)
    p = run(tool, '--bogus-option')
    lines = p.stderr.splitlines()
    assert p.returncode == 1 and p.stdout == '' and len(lines) == 2 and \
        lines[1] == "Try '%s --help'." % tool, (tool, p.returncode, p.stderr)
    if tool in ('trace-dump', 'trace-import'):  # issue 25 item 16: the name, not the path
        assert lines[0].startswith(tool + ': '), lines[0]
