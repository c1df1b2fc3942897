"""The maps describe the tree as it is: tests/README.md has a row for every test meson runs,
and README.md's Layout and ARCHITECTURE.md's table name every source folder.

Run by meson (suite format) with NT_SOURCE_ROOT and NT_BUILD_ROOT; reads files, runs nothing."""
import json
import os
import re
import subprocess

ROOT = os.environ.get('NT_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..'))
BUILD = os.environ.get('NT_BUILD_ROOT', '')


def read(rel):
    with open(os.path.join(ROOT, rel), encoding='utf-8') as f:
        return f.read()


def source_folders():
    """Every folder that holds tracked code, to the depth the maps use (writer/core, bench)."""
    out = subprocess.run(['git', '-C', ROOT, 'ls-files', '-co', '--exclude-standard'],
                         capture_output=True, text=True, check=True).stdout.split()
    folders = set()
    for f in out:
        if not re.search(r'\.(c|h|cpp|py|h\.in)$', f) or f.startswith(('tests/', 'build')):
            continue
        parts = f.split('/')[:-1]
        if not parts:
            continue
        if parts[0] in ('writer', 'reader', 'manager') and len(parts) > 1:
            folders.add('/'.join(parts[:2]))
        else:
            folders.add(parts[0])
    return folders


def test_every_test_has_a_claim_row():
    """A test nobody can find the purpose of is a test nobody keeps true."""
    intro = os.path.join(BUILD, 'meson-info', 'intro-tests.json')
    assert os.path.exists(intro), 'NT_BUILD_ROOT must name a configured build: ' + intro
    with open(intro) as f:
        names = {t['name'] for t in json.load(f)}
    table = read('tests/README.md').split('## Which test proves which claim', 1)[1]
    rows = set(re.findall(r'^\| `([^`]+)`', table, re.M)) | {
        n for cell in re.findall(r'^\| (`[^|]+`) \|', table, re.M)
        for n in re.findall(r'`([^`]+)`', cell)}
    missing = []
    for name in sorted(names):
        stem = name.split('-')[0]
        if name in rows or stem in rows or stem + '-*' in rows:
            continue
        missing.append(name)
    assert not missing, 'tests/README.md has no row for: ' + ', '.join(missing)


def test_readme_layout_names_every_folder():
    layout = read('README.md').split('## Layout', 1)[1]
    missing = [d for d in sorted(source_folders())
               if not re.search(r'^' + re.escape(d) + r'/', layout, re.M)]
    assert not missing, "README.md's Layout does not name: " + ', '.join(missing)


def test_architecture_names_every_folder():
    arch = read('ARCHITECTURE.md')
    missing = [d for d in sorted(source_folders()) if '`' + d + '/' not in arch]
    assert not missing, 'ARCHITECTURE.md does not name: ' + ', '.join(missing)
