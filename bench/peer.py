"""basic-memory, the closest file-based peer, set up for the side-by-side (``Runner.peer`` in
measure.py times it): the corpus's memories as its markdown notes, indexed by its CLI.

basic-memory needs Python 3.12 or later and about a hundred packages. The bench installs it once
into its own virtual environment in the cache folder (never into slayer-kb's) and keeps each
size's indexed notes there, under a home folder of their own, so the user's basic-memory
configuration is never touched. When it cannot be installed, the figures say why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from slayer_kb.core.memory import loads

# Indexing 10,000 notes took basic-memory about 20 minutes here; 100,000 would take hours.
MAX_SIZE = 10_000
# The version measured: another would move the figures.
VERSION = "0.24.1"
VENV = f"basic-memory-{VERSION}-venv"
PROJECT = "bench"


def python312() -> str | None:
    """A Python interpreter of version 3.12 or later, or None."""
    candidates = [sys.executable] + [p for p in (shutil.which("python3.13"), shutil.which("python3.12")) if p]
    # pyenv's shims run only the version selected here; its installed versions run anywhere.
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += sorted(str(p) for p in pyenv.glob("3.*/bin/python3"))[::-1]
    for python in candidates:
        proc = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 12))"],
                              capture_output=True, text=True, check=False)
        if proc.returncode == 0 and proc.stdout.strip() == "True":
            return python
    return None


def install(cache: Path) -> Path | str:
    """The ``bm`` program, installed once into ``cache``; or why it cannot be."""
    venv = cache / VENV
    bm = venv / "bin" / "bm"
    if bm.exists():
        return bm
    python = python312()
    if python is None:
        return "basic-memory needs Python 3.12 or later, and none was found"
    try:
        subprocess.run([python, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"basic-memory=={VERSION}"],
                       check=True, capture_output=True, timeout=1800)
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(venv, ignore_errors=True)
        tail = (exc.stderr or b"").decode(errors="replace").strip().splitlines()[-1:]
        return f"could not install basic-memory ({' '.join(tail) or exc.returncode})"
    except (subprocess.TimeoutExpired, OSError) as exc:
        shutil.rmtree(venv, ignore_errors=True)
        return f"could not install basic-memory ({exc})"
    return bm if bm.exists() else "basic-memory installed no 'bm' program"


def notes_of(root: Path, notes: Path) -> int:
    """Write every memory of the KB at ``root`` as a markdown note in ``notes``: its id as the
    title, its learning as the body. Returns how many."""
    notes.mkdir(parents=True, exist_ok=True)
    count = 0
    for path in sorted((root / "memories").glob("*.yaml")):
        memory = loads(path.read_text(encoding="utf-8"), path.stem)
        learning = memory.learning.rstrip("\n")
        body = learning if not memory.title else f"{memory.title}\n\n{learning}"
        (notes / f"{memory.id}.md").write_text(
            f"---\ntitle: memory {memory.id}\ntype: note\n---\n\n{body}\n", encoding="utf-8")
        count += 1
    return count


def prepare(bm: Path, root: Path, place: Path, size: int) -> dict[str, str] | str:
    """The environment under which ``bm`` serves this corpus as project ``bench`` (made and
    indexed once, then kept); or why it could not be."""
    home, notes = place / "home", place / "notes"
    env = {**os.environ, "HOME": str(home)}
    if (home / ".basic-memory" / "memory.db").exists() and (place / "indexed").exists():
        return env
    shutil.rmtree(place, ignore_errors=True)
    home.mkdir(parents=True)
    if notes_of(root, notes) < size:
        return f"the corpus has fewer than {size} memories"
    proc = subprocess.run([str(bm), "project", "add", PROJECT, str(notes)], env=env, cwd=place,
                          capture_output=True, text=True, timeout=3600, check=False)
    if proc.returncode != 0:
        return f"basic-memory could not index the notes: {(proc.stderr or proc.stdout).strip()[-300:]}"
    (place / "indexed").write_text("ok\n", encoding="utf-8")
    return env
