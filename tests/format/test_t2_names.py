"""One name, one meaning: no Trace2 message's enum constant (format/nt_format.h generates
NT_T2E_<ID> from the NT_T2_EVENTS list) is also a macro of an installed header, and the
macros of nanotrace_trace2.h are named NT_T2_<...> without clashing with any enumerator.

Run by meson (suite format) with NT_SOURCE_ROOT; reads the headers, runs nothing.
"""
import os
import re

ROOT = os.environ.get('NT_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..'))
HEADERS = ['format', os.path.join('writer', 'include', 'nanotrace'),
           os.path.join('reader', 'include', 'nanotrace')]


def read(rel):
    with open(os.path.join(ROOT, rel), encoding='utf-8') as f:
        return f.read()


def enum_constants():
    text = read(os.path.join('format', 'nt_format.h'))
    ids = re.findall(r'^\s*X\(([A-Z0-9_]+),', text, re.M)
    prefix = re.search(r'#define NT_T2_ENUM_\(id, name\) (\w+)##id,', text)
    assert ids and prefix, 'NT_T2_EVENTS or its enum generator not found in nt_format.h'
    return {prefix.group(1) + i for i in ids}


def macro_names():
    names = {}
    for folder in HEADERS:
        for f in sorted(os.listdir(os.path.join(ROOT, folder))):
            if f.endswith('.h'):
                rel = os.path.join(folder, f)
                for m in re.finditer(r'^\s*#\s*define\s+(\w+)', read(rel), re.M):
                    names.setdefault(m.group(1), rel)
    return names


def test_no_name_is_both_an_enum_constant_and_a_macro():
    consts, macros = enum_constants(), macro_names()
    both = sorted('%s (%s)' % (n, macros[n]) for n in consts & set(macros))
    assert not both, 'both an nt_t2_event constant and a macro: ' + ', '.join(both)


def test_every_trace2_message_macro_is_no_enum_constant():
    macros = macro_names()
    t2 = {n for n, f in macros.items() if f.endswith('nanotrace_trace2.h') and
          n.startswith('NT_T2_')}
    assert len(t2) >= 17, 'found only %d NT_T2_ macros: is the header still parsed?' % len(t2)
    assert not t2 & enum_constants()
