"""File safety: atomic writes, writable checks, the real target of a path, partial paths.

What a results file and a plot both need so that a reader never sees a
half-written file and a run never starts when its file cannot be written:
:func:`write_atomic` (a temporary file, fsync, rename), :func:`check_writable`
(checked before a run: a probe file is created and removed), :func:`real_target`
(symbolic links followed; a directory, device or FIFO refused with
:class:`NotARegularFile`).  Nothing here imports pytest.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


def partial_path(path: Path) -> Path:
    """Where an incomplete run's results go when ``path`` already holds a file."""
    return path.with_name(path.name + ".partial")


class NotARegularFile(OSError):
    """A path to write that exists and is not a regular file; ``str()`` says what it is."""

    def __init__(self, text: str) -> None:
        super().__init__(errno.EEXIST, text)

    def __str__(self) -> str:
        return str(self.strerror)


def _kind(mode: int) -> str:
    """``a FIFO``, ``a character device``, ...: what a file that is not a regular one is."""
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


#: The largest file :func:`read_regular` reads (bytes): a results file of every cell of
#: every test is far smaller.
MAX_READ = 256 * 1024 * 1024


def read_regular(path: Path, limit: int = MAX_READ) -> bytes:
    """The bytes of the file ``path``, never hanging or reading without end.

    Raises :class:`NotARegularFile` for a directory, a device (``/dev/zero``, ``/dev/full``)
    or a socket, ``ValueError`` past ``limit`` bytes, ``OSError`` as ``open`` does.  A FIFO
    or pipe (a shell's ``<(...)``) is read: opened without blocking, so one with no writer
    reads as empty instead of waiting for one.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise NotARegularFile(f"{path} is {_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"{path} is larger than {limit // (1024 * 1024)} MiB")
    return data


def real_target(path: Path) -> Path:
    """``path`` with every symbolic link resolved: the file a write must replace.

    Raises ``OSError`` when ``path`` exists but is not a regular file (a
    directory, a device, a FIFO, ...), or is a link that never ends (a loop).
    """
    path = Path(path)
    real = Path(os.path.realpath(path))
    try:
        mode = os.lstat(real).st_mode
    except FileNotFoundError:
        return real  # nothing there yet (or a link to a file not created yet)
    if not stat.S_ISREG(mode):
        if stat.S_ISLNK(mode):
            raise NotARegularFile(f"{path} is a symbolic link that does not resolve (a loop)")
        via = f" (a symbolic link to {real})" if os.path.islink(path) else ""
        raise NotARegularFile(f"{path}{via} is {_kind(mode)}, not a regular file")
    return real


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` (str as UTF-8, or bytes) to ``path`` through a temporary file and a rename.

    The file appears whole or not at all (``os.replace`` is atomic on POSIX
    and Windows); the temporary file is removed if anything fails, even
    KeyboardInterrupt.  An existing file's permission bits are kept.  A
    symbolic link is followed: the file it points to is replaced, the link
    stays.  A ``path`` that is not a regular file (a device, a FIFO, a
    directory) is never replaced.  Raises ``OSError``.
    """
    path = real_target(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8") if isinstance(text, str) else text)
            f.flush()
            os.fsync(f.fileno())
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable; not possible everywhere (Windows)
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def check_writable(path: Path) -> str | None:
    """Why ``path`` cannot receive a results file, or None (checked before a run starts).

    A symbolic link is judged by the file it points to.  Refused: a path that
    exists but is not a regular file (a directory, a device such as
    ``/dev/full``, a FIFO), a directory that does not exist, and a directory
    in which no file can be created (tried: a file is created and removed).
    """
    path = Path(path)
    try:
        real = real_target(path)
    except NotARegularFile as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot examine it: {exc.strerror or exc}"
    parent = real.parent
    shown = f"{parent} (where the symbolic link {path} points)" if os.path.islink(path) \
        else f"{parent}"
    if not parent.is_dir():
        return f"directory {shown} does not exist"
    try:  # access() says yes to root, and does not know /proc or a full file system
        fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{real.name}.", suffix=".probe")
    except OSError as exc:
        return f"cannot create a file in directory {shown}: {exc.strerror or exc}"
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass
    return None
