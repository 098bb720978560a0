"""The version of queryeval (a leaf module: anything may import it). The one place it is
written: pyproject.toml reads it from here (``[tool.setuptools.dynamic]``), so the installed
metadata says the same, and importing it costs no metadata lookup (``importlib.metadata``
took about 30 ms of every process start, the sandboxed workers' included)."""

__version__ = "0.1.0"
