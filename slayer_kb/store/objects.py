"""git's object database, written directly for the blobs and trees of a commit.

Why not ``git hash-object`` / ``update-index`` / ``write-tree``: at 10,000 memories those three
subprocesses cost ~25 ms of a save, mostly ``write-tree`` re-reading and rewriting a private
index. A change touches a handful of trees (the path from the root to each changed file), so
building exactly those trees here and writing them as loose objects - the format every git reads
and that ``git gc`` packs later - does the same work without the index. Many blobs at once (a
cascade) go into one pack instead, indexed by ``git index-pack``. Objects are read loose when
they are, and through ``git cat-file --batch`` otherwise.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import os
import re
import struct
import uuid
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import StoreError

TREE_MODE = b"40000"
FILE_MODE = b"100644"
# git's own default for loose objects (core.looseCompression): fast, and gc recompresses anyway.
_LOOSE_LEVEL = 1
_CREATE_ATTEMPTS = 8  # retries when a concurrent prune removes the fan-out folder
_HASH_SIZES = {"sha1": 20, "sha256": 32}
_TREE_CACHE = 8
_COMMIT_CACHE = 8
# A large tree is compressed in runs of about this many entries, each on its own: a long-lived
# process recompresses only the run a save changed (a 100,000-entry tree: 1 ms, not 55).
_RUN = 512
# From this many blobs in one commit, they are written as one pack instead of loose objects.
PACK_BLOBS = 500
_PACK_BLOB = 3

# An object git's ``cat-file --batch`` answered: its id, its kind and its bytes.
Named = tuple[str, str, bytes]


class ObjectStore:
    """git's objects in ``objects_dir``: written loose (or, many blobs at once, as a pack handed
    to ``index_pack``); read loose, else through ``cat_files(names, missing_ok)``, which answers
    ``(id, kind, data)`` for each object named (None for one missing, when ``missing_ok``)."""

    def __init__(
        self,
        objects_dir: Path,
        hash_name: str,
        cat_files: Callable[[list[str], bool], list[Named | None]],
        index_pack: Callable[[bytes], None],
    ) -> None:
        if hash_name not in _HASH_SIZES:
            raise StoreError(f"The repository uses the {hash_name} object format, which slayer-kb does not support.")
        self.dir = objects_dir
        self.hash_name = hash_name
        self._cat_files = cat_files
        self._index_pack = index_pack
        self._entry = re.compile(rb"(\d+) ([^\0]+)\0.{%d}" % _HASH_SIZES[hash_name], re.DOTALL)
        self._trees: dict[str, Tree] = {}
        self._commits: dict[str, bytes] = {}

    # -- objects ----------------------------------------------------------------------------

    def empty_tree(self) -> str:
        """The empty tree's id, which git knows whether or not it is stored: what an unborn HEAD's
        first commit is compared with, named without writing anything."""
        return hashlib.new(self.hash_name, b"tree 0\0").hexdigest()

    def write(self, kind: str, data: bytes) -> str:
        """Store an object (if it is not stored yet) and return its id."""
        raw = b"%s %d\0%s" % (kind.encode(), len(data), data)
        return self._store(hashlib.new(self.hash_name, raw).hexdigest(), lambda: zlib.compress(raw, _LOOSE_LEVEL))

    def _write_tree(self, tree: Tree) -> str:
        if len(tree.keys) <= _RUN:
            return self.write("tree", tree.data())
        data = tree.data()
        header = b"tree %d\0" % len(data)
        digest = hashlib.new(self.hash_name, header)
        digest.update(data)
        return self._store(digest.hexdigest(), lambda: tree.deflated(header, data))

    def _store(self, oid: str, body: Callable[[], bytes]) -> str:
        folder = self.dir / oid[:2]
        path = folder / oid[2:]
        if path.exists():
            # As git does: a fresh timestamp keeps a reused (perhaps unreachable) object from a
            # concurrent gc's prune until the commit that needs it is published.
            with contextlib.suppress(OSError):
                os.utime(path)
            return oid
        tmp = folder / f"tmp_obj_{uuid.uuid4().hex}"
        try:
            self._create(tmp, body())
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StoreError(f"Cannot write a git object in {self.dir}: {exc.strerror}; nothing was saved.") from None
        return oid

    @staticmethod
    def _create(tmp: Path, body: bytes) -> None:
        """Write a read-only file in a fan-out folder that a concurrent prune may remove.

        ``git prune-packed`` (run by every repack) removes fan-out folders it emptied; one can
        vanish between our ``mkdir`` and ``open``. git's own object writer retries then, as here.
        """
        for attempt in range(_CREATE_ATTEMPTS):
            try:
                # mkdir(exist_ok=True) raises FileExistsError when the folder was there for its
                # mkdir and gone for its is_dir check: the same race, seen a step earlier.
                tmp.parent.mkdir(exist_ok=True)
                with open(tmp, "xb") as handle:
                    handle.write(body)
                break
            except (FileNotFoundError, FileExistsError):
                if attempt == _CREATE_ATTEMPTS - 1:
                    raise
        os.chmod(tmp, 0o444)  # git's loose objects are read-only

    def write_blobs(self, blobs: list[bytes]) -> list[str]:
        """Store blobs and return their ids; many at once go into one pack.

        Thousands of loose objects are thousands of new files, and creating files is the slow
        part of a cascade on a cold disk; a pack is one file, which ``git index-pack`` indexes.
        """
        if len(blobs) < PACK_BLOBS:
            return [self.write("blob", data) for data in blobs]
        oids = [hashlib.new(self.hash_name, b"blob %d\0%s" % (len(data), data)).hexdigest() for data in blobs]
        unique = dict(zip(oids, blobs, strict=True))  # two memories may hold the same bytes
        body = bytearray(b"PACK" + struct.pack(">II", 2, len(unique)))
        for data in unique.values():
            body += _pack_entry_header(_PACK_BLOB, len(data)) + zlib.compress(data, _LOOSE_LEVEL)
        body += hashlib.new(self.hash_name, body).digest()
        self._index_pack(bytes(body))
        return oids

    def read(self, kind: str, oid: str) -> bytes:
        return self.read_many(kind, [oid])[oid]

    def read_many(self, kind: str, oids: Iterable[str]) -> dict[str, bytes]:
        """``{oid: data}`` for objects of one kind: loose ones read here, the rest (packed) in
        one ``git cat-file --batch``, however many there are."""
        out: dict[str, bytes] = {}
        packed: list[str] = []
        for oid in dict.fromkeys(oids):
            try:
                raw = zlib.decompress((self.dir / oid[:2] / oid[2:]).read_bytes())
            except (OSError, zlib.error):
                packed.append(oid)
                continue
            header, _, data = raw.partition(b"\0")
            kind_found, _, size = header.partition(b" ")
            found = kind_found.decode("ascii", "replace") if size == b"%d" % len(data) else "damaged object"
            out[oid] = self._checked(kind, oid, found, data)
        if packed:
            for oid, answer in zip(packed, self._cat_files(packed, False), strict=True):
                _, found, data = answer or (oid, "missing object", b"")  # never missing: git refused it
                out[oid] = self._checked(kind, oid, found, data)
        return out

    @staticmethod
    def _checked(kind: str, oid: str, found: str, data: bytes) -> bytes:
        if found != kind:
            raise StoreError(f"git object {oid} is not a {kind}; run 'git fsck' on the repository.")
        return data

    def commit(self, oid: str) -> bytes:
        """Commit ``oid``'s bytes. A commit never changes under its id, and a walk asks one
        commit for its parents, then for its tree (a sync's look for colliding ids does so twice
        over): kept, a packed one costs one ``git cat-file`` process, not one a question."""
        data = self._commits.get(oid)
        if data is None:
            data = self.read("commit", oid)
            self._keep_commit(oid, data)
        return data

    def _keep_commit(self, oid: str, data: bytes) -> None:
        self._commits[oid] = data
        while len(self._commits) > _COMMIT_CACHE:
            del self._commits[next(iter(self._commits))]

    def preload(self, commit: str, folders: Iterable[str]) -> None:
        """Read ``commit``, its root tree and the trees of ``folders`` (paths in the repository;
        "" the root) and of the folders above them, as they are in it, in one ``git cat-file``
        when the commit is packed: a commit's reads walk from it to its tree and down, each read
        a process of its own when it is not loose. A folder the commit lacks is left to the
        reads that follow, as is a commit git has not."""
        if commit in self._commits or (self.dir / commit[:2] / commit[2:]).exists():
            return
        paths = {"/".join(parts[:depth]) for parts in (folder.split("/") for folder in folders if _plain(folder))
                 for depth in range(1, len(parts) + 1)}
        if len(paths) >= _TREE_CACHE:  # more than the cache keeps: read as they are asked for
            return
        names = [commit, f"{commit}^{{tree}}", *(f"{commit}:{path}" for path in sorted(paths))]
        answers = self._cat_files(names, True)
        if answers[0] is None or answers[0][1] != "commit":
            return
        self._keep_commit(commit, answers[0][2])
        for answer in answers[1:]:
            if answer is not None and answer[1] == "tree" and answer[0] not in self._trees:
                self._remember(answer[0], Tree.parse(answer[2], self._entry))

    def tree_of(self, commit: str) -> str:
        first = self.commit(commit).split(b"\n", 1)[0]
        if not first.startswith(b"tree "):
            raise StoreError(f"git commit {commit} has no tree; run 'git fsck' on the repository.")
        return first[5:].decode()

    def parents(self, commit: str) -> list[str]:
        header = self.commit(commit).split(b"\n\n", 1)[0]
        return [line[7:].decode() for line in header.split(b"\n") if line.startswith(b"parent ")]

    def added_files(self, old: str, new: str, folder: str) -> list[str]:
        """The names of the files directly in ``folder`` (a path inside both trees) that tree
        ``new`` has and tree ``old`` has not."""
        old_folder, new_folder = self._folder(old, folder), self._folder(new, folder)
        if new_folder is None or old_folder == new_folder:
            return []
        added = set(self.tree(new_folder).keys).difference(self.tree(old_folder).keys if old_folder else ())
        return sorted(k.decode("utf-8", "surrogateescape") for k in added if not k.endswith(b"/"))

    def names_in(self, tree: str | None, folder: str) -> list[bytes]:
        """The names of the files directly in ``folder`` (a path inside tree ``tree``; None: the
        empty tree), in git's order, as bytes: as ``os.listdir`` gives them for a bytes path."""
        found = self._folder(tree, folder) if tree is not None else None
        return [] if found is None else [k for k in self.tree(found).keys if not k.endswith(b"/")]

    def blobs_at(self, tree: str | None, paths: Iterable[str]) -> dict[str, str | None]:
        """``{path: blob id}`` of files in tree ``tree`` (None: the empty tree); None for a
        path that is not a file there."""
        out: dict[str, str | None] = {}
        for path in paths:
            folder, _, name = path.rpartition("/")
            parent = self._folder(tree, folder) if tree is not None else None
            out[path] = None if parent is None else self.tree(parent).blob(name.encode("utf-8", "surrogateescape"))
        return out

    def clashes(self, tree: str | None, paths: Iterable[str]) -> dict[str, str]:
        """``{path: what is in the way}`` for the files ``paths`` that setting in ``tree`` would
        delete something else: a file where a folder of the path must be (``update_tree``
        replaces it), or a folder where the file must be (with all it holds)."""
        found: dict[str, str] = {}
        for path in paths:
            current, parts = tree, path.split("/")
            for depth, part in enumerate(parts[:-1]):
                if current is None:
                    break
                parsed = self.tree(current)
                if parsed.blob(part.encode("utf-8", "surrogateescape")) is not None:
                    found[path] = f"the file {'/'.join(parts[:depth + 1])}"
                    break
                current = parsed.subtree(part.encode("utf-8", "surrogateescape"))
            else:
                if current is not None and self.tree(current).subtree(parts[-1].encode("utf-8", "surrogateescape")):
                    found[path] = f"the folder {path}/"
        return found

    def warm_up(self, commit: str, folder: str) -> None:
        """Parse the trees from ``commit``'s root down to ``folder`` and compress their runs now:
        a long-lived process's first commit then costs what its next ones do."""
        tree: str | None = self.tree_of(commit)
        names = [part.encode("utf-8", "surrogateescape") for part in folder.split("/") if part]
        while tree is not None:
            parsed = self.tree(tree)
            parsed.compressed_runs()
            tree = parsed.subtree(names.pop(0)) if names else None

    def _folder(self, tree: str | None, folder: str) -> str | None:
        for part in filter(None, folder.split("/")):
            if tree is None:
                break
            tree = self.tree(tree).subtree(part.encode("utf-8", "surrogateescape"))
        return tree

    # -- trees ------------------------------------------------------------------------------

    def tree(self, oid: str) -> Tree:
        cached = self._trees.get(oid)
        if cached is None:
            cached = Tree.parse(self.read("tree", oid), self._entry)
            self._remember(oid, cached)
        return cached

    def _remember(self, oid: str, tree: Tree) -> None:
        # A long-lived process saves again and again on top of the tree it wrote last; keeping
        # the few latest parsed saves re-reading a 100,000-entry tree each time.
        self._trees[oid] = tree
        while len(self._trees) > _TREE_CACHE:
            del self._trees[next(iter(self._trees))]

    def update_tree(self, tree: str | None, changes: Mapping[str, str | None]) -> str:
        """The tree ``tree`` (None: empty) with each path set to a blob id, or removed for None."""
        encoded = {path.encode("utf-8", "surrogateescape"): blob for path, blob in changes.items()}
        return self._update(tree, encoded) or self.write("tree", b"")

    def _update(self, oid: str | None, changes: Mapping[bytes, str | None]) -> str | None:
        tree = self.tree(oid).copy() if oid else Tree([], [])
        below: dict[bytes, dict[bytes, str | None]] = {}
        for path, blob in changes.items():
            name, slash, rest = path.partition(b"/")
            if slash:
                below.setdefault(name, {})[rest] = blob
            elif blob is None:
                tree.remove(name)  # a file; a folder of that name stays, as with git rm
            else:
                tree.set(name, FILE_MODE, bytes.fromhex(blob))
        for name, sub_changes in below.items():
            new = self._update(tree.subtree(name), sub_changes)
            if new is None:
                tree.remove(name + b"/")  # git keeps no empty folders
            else:
                tree.set(name, TREE_MODE, bytes.fromhex(new))
        if not tree.keys:
            return None
        new_oid = self._write_tree(tree)
        self._remember(new_oid, tree)
        return new_oid


@dataclass
class Tree:
    """A tree's entries in git's order: ``keys`` to search (a subtree's name with a '/' appended,
    which is how git orders it) and ``chunks``, each entry's bytes as the tree object holds them.
    ``runs`` cut the entries, in order, into runs of about ``_RUN``: each run's entry count and its
    raw deflate stream once made (None until then, and again once an entry in it changed)."""

    keys: list[bytes]
    chunks: list[bytes]
    runs: list[tuple[int, bytes | None]] = field(default_factory=list)

    @classmethod
    def parse(cls, data: bytes, entry: re.Pattern[bytes]) -> Tree:
        keys, chunks = [], []
        for m in entry.finditer(data):
            # Some old tools wrote folders as 040000; git reads them, and so must this, or a
            # save would rebuild such a folder from nothing.
            folder = m.group(1).lstrip(b"0") == TREE_MODE
            keys.append(m.group(2) + b"/" if folder else m.group(2))
            chunks.append(m.group(0))
        runs: list[tuple[int, bytes | None]] = [(min(_RUN, len(keys) - at), None) for at in range(0, len(keys), _RUN)]
        return cls(keys, chunks, runs)

    def copy(self) -> Tree:
        return Tree(list(self.keys), list(self.chunks), list(self.runs))

    def data(self) -> bytes:
        return b"".join(self.chunks)

    def deflated(self, header: bytes, data: bytes) -> bytes:
        """The loose object of ``header`` + ``data`` (this tree's bytes) as zlib stores it: the
        runs' streams, each ended by a full flush so that it stands alone, between the header's
        and an empty final block, and the checksum of the whole (RFC 1950/1951)."""
        return b"".join([
            b"\x78\x01", _deflate_run(header), *self.compressed_runs(),
            b"\x03\x00",  # a final, empty block of fixed Huffman codes
            struct.pack(">I", zlib.adler32(data, zlib.adler32(header))),
        ])

    def compressed_runs(self) -> list[bytes]:
        """Each run's raw deflate stream, made now for the runs that have none."""
        out = []
        at = 0
        for n, (count, done) in enumerate(self.runs):
            if done is None:
                done = _deflate_run(b"".join(self.chunks[at : at + count]))
                self.runs[n] = (count, done)
            out.append(done)
            at += count
        return out

    def _changed(self, at: int, delta: int) -> None:
        """Entry ``at`` was inserted (``delta`` 1) or removed (-1): its run must be compressed
        again; a run grown to twice ``_RUN`` is cut in two, an emptied one dropped."""
        start = 0
        for n, (count, _done) in enumerate(self.runs):
            if at < start + count or n == len(self.runs) - 1:
                count += delta
                if count <= 0:
                    del self.runs[n]
                elif count > 2 * _RUN:
                    self.runs[n : n + 1] = [(count // 2, None), (count - count // 2, None)]
                else:
                    self.runs[n] = (count, None)
                return
            start += count
        self.runs.append((delta, None))  # the first entry of an empty tree

    def _find(self, key: bytes) -> int | None:
        at = bisect.bisect_left(self.keys, key)
        return at if at < len(self.keys) and self.keys[at] == key else None

    def subtree(self, name: bytes) -> str | None:
        return self._oid(name + b"/")

    def blob(self, name: bytes) -> str | None:
        """The id of the file ``name`` (a regular file, an executable or a symlink)."""
        return self._oid(name)

    def _oid(self, key: bytes) -> str | None:
        at = self._find(key)
        if at is None:
            return None
        chunk = self.chunks[at]
        return chunk[chunk.index(b"\0") + 1 :].hex()

    def remove(self, key: bytes) -> None:
        at = self._find(key)
        if at is not None:
            del self.keys[at], self.chunks[at]
            self._changed(at, -1)

    def set(self, name: bytes, mode: bytes, oid: bytes) -> None:
        # A file may replace a folder of the same name, or the other way round.
        self.remove(name)
        self.remove(name + b"/")
        key = name + b"/" if mode == TREE_MODE else name
        at = bisect.bisect_left(self.keys, key)
        self.keys.insert(at, key)
        self.chunks.insert(at, b"%s %s\0%s" % (mode, name, oid))
        self._changed(at, 1)


def _deflate_run(data: bytes) -> bytes:
    """``data`` as a raw deflate stream that needs nothing before it and ends on a byte."""
    compressor = zlib.compressobj(_LOOSE_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)


def _plain(folder: str) -> bool:
    """A folder ``cat-file`` takes on a line of its own as ``REV:PATH`` (others are read by id)."""
    return folder.isascii() and folder.isprintable() and bool(folder)


def _pack_entry_header(kind: int, size: int) -> bytes:
    """A pack entry's type and size: 4 bits of size after the type, then 7 bits a byte."""
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)
