"""nanotrace's Trace.to_dataframe() with the real pandas (Debian: python3-pandas): a
separate test so that, where pandas is not installed, only this one is SKIP (test_python
checks the package's own part of to_dataframe without pandas)."""
import os

import pytest

from conftest import program

nanotrace = pytest.importorskip('nanotrace')
pandas = pytest.importorskip('pandas', reason='pandas is not installed (Debian: python3-pandas)')


def test_to_dataframe_with_pandas(workdir):
    import subprocess
    demo = os.path.join(workdir, 'pandas-demo.ntrace')
    if os.path.exists(demo):
        os.unlink(demo)
    subprocess.run([program('NT_DEMO'), demo, '--threads', '2', '--requests', '10'], check=True,
                   capture_output=True)
    with nanotrace.open(demo) as trace:
        df = trace.to_dataframe()
        events = list(trace)
    assert isinstance(df, pandas.DataFrame) and len(df) == len(events)
    assert list(df.columns) == ['time_ns', 'kind', 'category', 'name', 'thread', 'process', 'id',
                                'args']
    assert list(df['time_ns']) == [e.time_ns for e in events]
    assert list(df['args']) == [e.args for e in events]
