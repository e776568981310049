"""Only the optional C accelerator lives here; everything else is in pyproject.toml."""

import os

from setuptools import Extension, setup

# optional: without a C compiler (or on Windows, which has no fstatat) the package installs
# without it and filestat.py stats the files in Python, about three times slower.
ext_modules = (
    [Extension("slayer_kb.store._fstat", ["slayer_kb/store/_fstat.c"], optional=True, extra_compile_args=["-O2"])]
    if os.name == "posix"
    else []
)

setup(ext_modules=ext_modules)
