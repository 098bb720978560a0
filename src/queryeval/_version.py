"""The installed version of queryeval (a leaf module: anything may import it)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("queryeval")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"
