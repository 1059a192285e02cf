"""The installed version of relanon, read once from the package metadata (the bottom layer needs it too)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("relanon")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
