"""Read a source file safely: regular files only, and none above the size limit.

Opening a FIFO, a socket or a terminal for reading blocks (or never ends), so
the file is opened without blocking and checked with ``fstat`` on the open
descriptor (no window between the check and the read). A file larger than the
limit is refused before it is read: libcst's tree of a Python file takes about
1 GB per MB of source (measured in ``benchmarks/bench_large_file.py``), so one
huge generated file would otherwise exhaust the machine's memory.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

#: Default ``max-file-size``: files larger than this get one SL000 instead of a check.
DEFAULT_MAX_FILE_SIZE = 1024 * 1024

_UNITS = {"": 1, "B": 1, "KB": 1000, "KIB": 1024, "MB": 1000**2, "MIB": 1024**2, "GB": 1000**3, "GIB": 1024**3}


# One line of Python source: ended by \r\n, \r or \n, or the last line without an end.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of ``text`` as Python (and every finding's line number) counts them:
    ended by ``\n``, ``\r\n`` or ``\r`` only. ``str.splitlines`` also splits at form
    feeds, vertical tabs and Unicode separators, which are whitespace or text inside a
    Python line: every line after one would be off by one."""
    lines = _LINE.findall(text)
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


class SourceReadError(OSError):
    """The file cannot be read as a source (the message says why; reported as SL000)."""


class SourceTooLarge(SourceReadError):
    """The file is over the size limit (read nothing of it)."""


def parse_size(value: int | str) -> int:
    """Bytes in ``value``: an integer, or a string such as ``"512KB"``, ``"2MiB"`` (0: no limit)."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"a size cannot be negative: {value}")
        return value
    text = str(value).strip().upper().replace(" ", "")
    number = text.rstrip("KMGIB")
    unit = text[len(number) :]
    if not number.isdigit() or unit not in _UNITS:
        raise ValueError(f"not a size: {value!r} (use bytes, or a number with KB, MB, KiB or MiB)")
    return int(number) * _UNITS[unit]


def read_source(path: str | Path, max_size: int = DEFAULT_MAX_FILE_SIZE) -> bytes:
    """The bytes of ``path``; SourceReadError if it is not a regular file, too large, or unreadable.

    ``max_size`` 0 means no limit.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise SourceReadError(error.errno, f"cannot read: {error.strerror or error}") from error
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise SourceReadError(f"not a regular file ({_kind(info.st_mode)}); pass `-` to read standard input")
        if max_size and info.st_size > max_size:
            raise SourceTooLarge(
                f"file too large to check: {info.st_size:,} bytes, over the limit of {max_size:,} "
                "(raise `max-file-size` or pass --max-file-size)"
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(descriptor, True)
        chunks = []
        while chunk := os.read(descriptor, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except SourceReadError:
        raise
    except OSError as error:
        raise SourceReadError(error.errno, f"cannot read: {error.strerror or error}") from error
    finally:
        os.close(descriptor)


def python_encoding(data: bytes) -> str:
    """The PEP 263 encoding of Python source ``data`` (``utf-8-sig`` with a BOM).

    A cookie naming a codec this Python does not know (``# -*- coding: future_fstrings
    -*-``, whose package registers it at start-up to rewrite f-strings for old Pythons,
    over UTF-8 text) reads as UTF-8, as ruff reads every file. SyntaxError, as
    :func:`tokenize.detect_encoding` raises, for non-UTF-8 bytes with no cookie."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if "unknown encoding" not in str(error):
            raise
        encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
    return encoding


def python_text(data: bytes) -> str | None:
    """The text of Python source ``data`` in its PEP 263 encoding (a BOM dropped); None
    when it cannot be decoded (the check reports that; project-wide passes skip it)."""
    try:
        return data.decode(python_encoding(data))
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def message_of(error: SourceReadError) -> str:
    """The text of a SourceReadError (``OSError`` keeps ``errno, strerror`` pairs apart)."""
    return error.strerror if error.strerror else str(error)
