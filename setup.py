"""Build of the optional C reader of TREC files (metadata and dependencies: pyproject.toml).

``optional=True``: without a C compiler the install still succeeds and queryeval reads TREC
files with pyarrow and Python instead (same results, slower; see docs/ranking.md).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("queryeval._trecread", ["src/queryeval/_trecread.c"], optional=True),
    ],
)
