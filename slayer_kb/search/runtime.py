"""onnxruntime, imported with its telemetry off: the one way slayer-kb imports it."""

from __future__ import annotations

import os
from typing import Any


def onnxruntime() -> Any:
    """The ``onnxruntime`` module. From 1.32 on Linux its import writes a device id for its
    telemetry under ``~/.cache/Microsoft/DeveloperTools`` (making the home folder, as root, where
    ``HOME`` named none): slayer-kb keeps and sends nothing of the kind. A user's own setting of
    ``ORT_DISABLE_TELEMETRY`` stands."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime as module

    return module
