"""queryeval: evaluate how well AI data assistants find the right data."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("queryeval")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
