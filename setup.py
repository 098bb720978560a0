"""Build of the optional C extensions (metadata and dependencies: pyproject.toml): the TREC
file reader (``_trecread``) and the flattener of ``{qid: {docid: value}}`` dicts (``_dictflat``).

``optional=True``: without a C compiler the install still succeeds and queryeval reads TREC
files, and flattens dicts, with pyarrow and Python instead (same results, slower; see docs/ranking.md). ``-O3``
comes after any ``CFLAGS`` from the environment, which would otherwise replace Python's own
optimisation flags (an unoptimised build reads at half the speed).
"""

import sys

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "queryeval._trecread",
            [
                "src/queryeval/_trecread.c",
                "src/queryeval/_trecread_read.c",
                "src/queryeval/_trecread_file.c",
                "src/queryeval/_trecread_scan.c",
                "src/queryeval/_trecread_num.c",
                "src/queryeval/_trecread_dict.c",
            ],
            depends=[
                "src/queryeval/_trecread.h",
                "src/queryeval/_trecread_dict.h",
                "src/queryeval/_trecread_num.h",
            ],
            extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
            optional=True,
        ),
        Extension(
            "queryeval._dictflat",
            ["src/queryeval/_dictflat.c"],
            extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
            optional=True,
        ),
    ],
)
