"""What the running slayer-kb is (``version_stamp``): a client and the warm server it relays to
must be the same install (docs/server.md, "When it stops"). Imported by the relaying client,
so only the standard library's built-ins."""

from __future__ import annotations

import os
import sys

try:  # the built-in SHA-256, without loading OpenSSL through hashlib
    from _sha256 import sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.12 renamed it
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from hashlib import sha256  # type: ignore[assignment]

# The package's code folders, whose files make the version stamp.
PACKAGES = ("core", "catalog", "store", "search", "ops", "cli", "mcp", "daemon")


def version_stamp() -> str:
    """What the running code is: the environment (``sys.prefix``, whichever of its ``python``
    links started it) and Python version, the package's folder, and the size, inode, mtime and
    ctime of every file of the package. A server whose stamp differs from its client's was
    started by another install (an upgrade, an edited checkout): it retires and a new one starts.
    The ctime is what no one can set back: a file rewritten in place to its old size, its mtime
    restored, still changes the stamp (the restoring itself moves the ctime), as does a file
    replaced by another (a new inode); and a stat per file costs no reading of the code."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    digest = sha256(f"{sys.prefix}\0{sys.version}\0{package}\0".encode("utf-8", "surrogateescape"))
    for folder in (package, *(os.path.join(package, sub) for sub in PACKAGES)):
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith((".py", ".so", ".pyd", ".json")):
                try:
                    st = entry.stat()
                except OSError:
                    continue
                digest.update(f"{entry.name}\0{st.st_size}\0{st.st_ino}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0"
                              .encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:24]
