"""``queryeval view``: a local, read-only web viewer for a folder of runs (Starlette on
uvicorn, loopback by default, every asset shipped in the package). See docs/viewer.md."""
