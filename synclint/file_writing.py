"""Replace a file's content without losing it or what the file system knows about it.

``write_text_like(path, text)`` writes ``text`` in the file's own encoding and
BOM (the caller keeps its line endings; libcst preserves them) so that:

* a symbolic link stays a link: the file it points to is rewritten;
* the file's owner, group and mode are kept;
* the write is atomic (a temporary file in the same directory, flushed to disk,
  then renamed over the original), so a crash leaves the old content or the
  new one, never half of each.

Two cases cannot be atomic, and are written in place instead (the file is
truncated and rewritten through its own inode, after the new bytes are ready):
a file with several hard links (a rename would leave the other names on the
old content), and a file the rename could not keep the owner of (a file
owned by someone else, in a directory we may write to), or whose directory
does not let us create the temporary file. Anything that still fails raises
``OSError`` for the caller to report.
"""

from __future__ import annotations

import codecs
import io
import os
import stat
import tempfile
import tokenize
from pathlib import Path


def encoding_of(data: bytes) -> tuple[str, bool]:
    """The encoding of Python source ``data`` (PEP 263 / BOM) and whether it has a UTF-8 BOM."""
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        name, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        name = "utf-8"
    return ("utf-8" if name == "utf-8-sig" else name), bom


def write_text_like(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` (through a symlink) in the file's current encoding and BOM."""
    target = Path(os.path.realpath(path))
    with open(target, "rb") as handle:
        original = handle.read()
    encoding, bom = encoding_of(original)
    try:
        data = (codecs.BOM_UTF8 if bom else b"") + text.encode(encoding)
    except UnicodeEncodeError as error:  # nothing is written: the file keeps its old content
        raise OSError(f"the fixed text cannot be written in the file's encoding ({encoding}): {error}") from error
    write_bytes_keeping_metadata(target, data)


def write_bytes_keeping_metadata(path: str | Path, data: bytes) -> None:
    """Replace the content of the regular file ``path`` (links resolved) with ``data``."""
    target = Path(os.path.realpath(path))
    info = os.stat(target)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"{target}: not a regular file")
    if info.st_nlink > 1:
        _write_in_place(target, data)
        return
    try:
        _replace_atomically(target, data, info)
    except _KeepsNothing:
        _write_in_place(target, data)


class _KeepsNothing(Exception):
    """A rename would lose the owner, or no temporary file can be made next to the target."""


def _replace_atomically(target: Path, data: bytes, info: os.stat_result) -> None:
    try:
        descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".synclint")
    except PermissionError as error:  # a read-only directory: the file itself may still be writable
        raise _KeepsNothing from error
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, stat.S_IMODE(info.st_mode))
        created = os.stat(temporary)
        if (created.st_uid, created.st_gid) != (info.st_uid, info.st_gid):
            try:
                os.chown(temporary, info.st_uid, info.st_gid)
            except (PermissionError, AttributeError) as error:
                raise _KeepsNothing from error
            os.chmod(temporary, stat.S_IMODE(info.st_mode))  # chown may clear setuid/setgid bits
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    _sync_directory(target.parent)


def _write_in_place(target: Path, data: bytes) -> None:
    with open(target, "r+b") as handle:
        handle.write(data)
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())


def _sync_directory(directory: Path) -> None:
    """Make the rename durable (POSIX); a no-op where directories cannot be opened."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
