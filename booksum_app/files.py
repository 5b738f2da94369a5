"""Atomic file writes: every output is written to a temporary file beside it, then renamed.

A crash or a kill therefore leaves either the old file or the new one, never half a file,
and two writers never share a temporary name. Files get the permissions the umask allows
(``mkstemp`` alone would make every output 0600). Output paths are checked with
:func:`check_writable` before any paid work, so a bad ``-o`` fails in a second, not after
an hour of LLM calls.

Only a regular file (or a new path) is replaced. Anything else that exists at the path (a
FIFO, a character device such as ``/dev/null``, ``/dev/stdout``, a socket's reader) is a
stream: it is opened for writing and written, never renamed over and never chmod'ed, as
``cat > /dev/null`` or ``tee FIFO`` would (renaming over ``/dev/null`` as root would break
the whole machine).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from booksum_app.errors import InputError


def _read_umask() -> int:
    # os.umask can only be read by setting it; done once at import, before any thread starts
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_read_umask()


def available_cores() -> int:
    """Cores this process may run on (affinity and cgroup-pinned CPUs, not the machine's total)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes: a book's identity in job keys and chunk memos."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` exists and is not a regular file or a directory (a FIFO, a device, a socket):
    written in place as a stream, never replaced. Symbolic links are followed (``/dev/stdout``)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # missing (a new file) or unreadable: the atomic path decides
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Fail now if ``path`` cannot be written later: a directory, a parent that is a file, no permission.

    Creates missing parent directories (the user asked for output there) and probes them with
    a temporary file. A stream (:func:`is_stream`) is checked with ``access`` only: opening a
    FIFO would wait for its reader.

    Raises:
        InputError: the path cannot be written; the message says why in one line.
    """
    target = Path(path)
    if target.is_dir():
        raise InputError(f"cannot write {target}: it is a directory; give a file path")
    if is_stream(target):
        if stat.S_ISSOCK(os.stat(target).st_mode):  # open() fails on a socket: only after the paid calls
            raise InputError(f"cannot write {target}: it is a socket; give a file path, a FIFO or a device")
        if not os.access(target, os.W_OK):
            raise InputError(f"cannot write {target}: permission denied; choose another output path")
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".probe", dir=target.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"cannot write {target}: {exc.strerror or exc}; choose another output path") from exc
    return target


def check_writable_dir(path: str | os.PathLike[str]) -> Path:
    """Fail now if files cannot be created inside directory ``path`` (created if missing).

    Raises:
        InputError: not a directory or not writable.
    """
    directory = Path(path)
    if directory.exists() and not directory.is_dir():
        raise InputError(f"cannot write into {directory}: it is a file; give a directory")
    check_writable(directory / ".booksum-probe")
    return directory


def files_in(
    directory: str | os.PathLike[str], *, suffixes: tuple[str, ...] = (), what: str = "directory"
) -> list[Path]:
    """The files directly in ``directory`` (sorted; only those ending in ``suffixes`` when given).

    Every reader of a directory lists it here, so one rule holds for all: a listed symbolic link
    whose target lies outside the directory is refused, whatever it points at (a file, a folder) (``passwd.txt ->
    /etc/passwd`` would otherwise be read as a book or a summary and sent to a model); a link
    that stays inside is read like the file it names. Links are resolved whole (a chain of
    links that leaves the directory anywhere is refused); a dangling link is no file.

    Raises:
        InputError: a listed entry is a link out of the directory, or the directory cannot be read.
    """
    folder = Path(directory)
    root = folder.resolve()
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise InputError(f"cannot read {what} {folder}: {exc.strerror or exc}") from exc
    files = []
    for entry in entries:
        if suffixes and entry.suffix.lower() not in suffixes:
            continue
        if entry.is_symlink() and not entry.resolve().is_relative_to(root):
            raise InputError(
                f"{entry} is a link out of {what} {folder} (its target lies outside); links are not followed: "
                "copy the file in, or remove the link"
            )
        if entry.is_file():
            files.append(entry)
    return files


def _temp_beside(target: Path) -> tuple[int, str]:
    """A new file (mode ``FILE_MODE``) beside ``target``, to be renamed onto it: ``(fd, path)``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    # the pid in the name tells a later run whether its writer is still alive (:func:`recover_interrupted`)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise
    return fd, tmp


def _write_temp(target: Path, text: str) -> str:
    fd, tmp = _temp_beside(target)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary file beside ``path`` for another writer to fill (a C library writing by name);
    leaving the block without an error fsyncs it and renames it onto ``path``, an error removes it."""
    target = Path(path)
    if is_stream(target):  # the writer fills a temporary file; its bytes are then streamed in
        with tempfile.TemporaryDirectory(prefix="booksum-") as folder:
            tmp_path = Path(folder) / target.name
            yield tmp_path
            with open(tmp_path, "rb") as written, open(target, "wb") as stream:
                while block := written.read(1 << 20):
                    stream.write(block)
        return
    fd, tmp = _temp_beside(target)
    try:
        os.close(fd)
        yield Path(tmp)
        with open(tmp, "rb") as written:  # on disk before it has the name readers trust
            os.fsync(written.fileno())
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically, creating parent directories; returns the path.

    A stream (FIFO, device) is written in place instead (:func:`is_stream`)."""
    target = Path(path)
    if is_stream(target):
        _write_stream(target, text)
        return target
    with replacing(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return target


def _write_stream(target: Path, text: str) -> None:
    """Write ``text`` into an existing FIFO or device, in place (opened for writing, not created)."""
    with open(target, "w", encoding="utf-8") as stream:
        stream.write(text)


def atomic_write_texts(files: Mapping[Path, str]) -> list[Path]:
    """Write several files so that they appear together or not at all (e.g. a summary and its record).

    Every file is written to a temporary file first (a full disk fails here, before any target
    changes). Then a journal naming the temporary files and their targets is written (itself
    atomically) beside the first target, and the targets are swapped in this order: the old
    targets but the first are removed, the first is replaced, the others are renamed in; the
    journal is removed last. A reader looking at the targets at any moment therefore sees files
    of one run only, the old run's or the new one's, never a new summary beside an old record;
    a kill between two steps leaves the journal, and the next write to these targets
    (:func:`recover_interrupted`) finishes the swap from it. Targets are checked first, so a
    rename can only fail for reasons outside booksum. Streams among the targets
    (:func:`is_stream`) are written after the swap, in place.

    Raises:
        InputError: a target cannot be written; the message says whether any target changed.
    """
    targets = [check_writable(p) for p in files]
    recover_interrupted(targets)
    temps: list[tuple[str, Path]] = []
    streams = [(t, text) for t, text in zip(targets, files.values(), strict=True) if is_stream(t)]
    journal: Path | None = None
    swapping = False
    try:
        for target, text in zip(targets, files.values(), strict=True):
            if not is_stream(target):
                temps.append((_write_temp(target, text), target))
        if len(temps) > 1:
            if len({target.parent for _, target in temps}) > 1:
                raise ValueError("files written together must share one directory (their journal names siblings)")
            journal = _write_journal(temps)
        swapping = True
        _swap_in(temps)
        if journal is not None:
            journal.unlink()
        for target, text in streams:
            _write_stream(target, text)
    except OSError as exc:
        done = "nothing was written"
        if swapping:
            done = "the swap is unfinished; the next write to these files finishes it"
            if journal is not None:
                temps = []  # the journal and its temporary files are what finishes it
        elif journal is not None:
            journal.unlink(missing_ok=True)
        raise InputError(f"cannot write {exc.filename or 'output'}: {exc.strerror or exc}; {done}") from exc
    finally:
        for tmp, _ in temps:
            Path(tmp).unlink(missing_ok=True)
    return targets


_JOURNAL = ".booksum-swap"
_OWNED = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[^.]*\.(?:tmp|probe|booksum-swap)$")
_MAX_JOURNAL_BYTES = 65_536  # a journal names a few sibling files; anything larger is not one
_TEMP_CHARS = "[a-z0-9_]{8}"  # what tempfile.mkstemp puts between a temporary file's prefix and suffix
_log = logging.getLogger("booksum_app.files")
_reported: set[tuple[str, int, int]] = set()  # journals already said in this process (path, inode, mtime)


def _write_journal(temps: list[tuple[str, Path]]) -> Path:
    """The swap's journal beside the first target, written atomically: present means complete.

    It names the temporary files and their targets by name only: all are siblings of the journal
    (:func:`atomic_write_texts` swaps files of one directory), and recovery reads nothing else."""
    first = temps[0][1]
    journal = first.with_name(f".{first.name}.{os.getpid()}.journal{_JOURNAL}")
    body = json_text({"swap": [[Path(tmp).name, target.name] for tmp, target in temps]})
    tmp = _write_temp(journal, body)
    os.replace(tmp, journal)
    return journal


def _swap_in(temps: list[tuple[str, Path]]) -> None:
    """Rename the (still present) temporary files onto their targets so that the targets present
    at any moment are all old or all new: the old ones but the first go, the first is replaced."""
    pending = [(tmp, target) for tmp, target in temps if os.path.exists(tmp)]
    for _, target in pending[1:]:
        target.unlink(missing_ok=True)
    for tmp, target in pending:
        os.replace(tmp, target)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def recover_interrupted(targets: list[Path]) -> None:
    """Finish what a killed writer of these targets left (same host): a swap whose journal is
    present is completed from it; its lone temporary and probe files (killed before the journal)
    are removed.

    Only files of writers whose process is gone are touched, and only this write's own files:
    siblings of its targets named as booksum names them. A journal is honoured only when every
    file it names is such a sibling (a target of this write, or the temporary file this code
    makes for it), every temporary file is a regular file and every target a regular file or
    absent; the renames go through the directory itself (never a path the journal spells), so
    nothing outside it, and nothing but a regular file in it, is ever replaced. A journal that
    does not fit is said in one line (a ``logging`` warning) and left alone, with its files.
    """
    by_directory: dict[Path, set[str]] = {}
    for target in targets:
        if not is_stream(target):
            by_directory.setdefault(target.parent, set()).add(target.name)
    for directory, names in by_directory.items():
        try:
            folder = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:  # missing (a first write) or unreadable: nothing to recover
            continue
        try:
            _recover_in(folder, directory, names)
        finally:
            os.close(folder)


def _recover_in(folder: int, directory: Path, names: set[str]) -> None:
    """Recovery in one directory, opened as ``folder``, for the targets ``names`` in it."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    dead = [(entry, m) for entry in entries
            if (m := _OWNED.match(entry)) and _owner(m["name"]) in names and not _alive(int(m["pid"]))]
    kept: set[str] = set()  # pids whose journal was left alone: their temporary files stay with it
    for entry, match in dead:  # journals first: their temporary files finish the swap
        if entry.endswith(_JOURNAL):
            problem = _finish_swap(folder, entry, match, names)
            if problem is not None:
                kept.add(match["pid"])
                _say_once(folder, directory / entry, f"{problem}; it was left alone (remove it if no booksum "
                                                    "run was killed while writing there)")
    for entry, match in dead:
        if entry.endswith((".tmp", ".probe")) and match["pid"] not in kept:
            _remove_leftover(folder, directory, entry)


def _remove_leftover(folder: int, directory: Path, entry: str) -> None:
    """Remove a dead writer's temporary file, a regular file (anything else so named is not booksum's)."""
    try:
        if stat.S_ISREG(os.lstat(entry, dir_fd=folder).st_mode):
            os.unlink(entry, dir_fd=folder)
        else:
            _say_once(folder, directory / entry, "is named like a temporary file of booksum but is not a "
                                                 "regular file; it was left alone")
    except FileNotFoundError:
        pass


def _say_once(folder: int, path: Path, what: str) -> None:
    """One warning line about ``path`` (once per process: the outputs check and the write both recover)."""
    try:
        st = os.lstat(path.name, dir_fd=folder)
        seen = (str(path), st.st_ino, st.st_mtime_ns)
    except OSError:
        seen = (str(path), 0, 0)
    if seen not in _reported:
        _reported.add(seen)
        _log.warning("warning: %s %s", path, what)


def _owner(name: str) -> str:
    """The target a temporary file is for: a journal's own temporary file is the journal's target's."""
    inner = _OWNED.match(name)
    return inner["name"] if inner else name


def _finish_swap(folder: int, journal: str, match: re.Match[str], names: set[str]) -> str | None:
    """Complete the swap ``journal`` (in ``folder``) names; why it is not this write's journal, or None."""
    from booksum_app.jsonin import parse_json_or_none

    try:
        handle = os.open(journal, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError as exc:  # a link (ELOOP), gone, unreadable
        return f"is not a readable journal ({exc.strerror or exc})"
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return "is not a regular file"
        body = os.read(handle, _MAX_JOURNAL_BYTES + 1)
    finally:
        os.close(handle)
    if len(body) > _MAX_JOURNAL_BYTES:
        return f"is larger than a journal ({_MAX_JOURNAL_BYTES:,} bytes)"
    pairs = _journal_pairs(parse_json_or_none(body), owner=match["name"], pid=match["pid"], names=names)
    if isinstance(pairs, str):
        return pairs
    for name in (name for pair in pairs for name in pair):  # each a regular file, or absent
        try:
            mode = os.lstat(name, dir_fd=folder).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            return f"names {name}, which is not a regular file"
    pending = [(tmp, target) for tmp, target in pairs if _exists(folder, tmp)]
    for _, target in pending[1:]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target, dir_fd=folder)
    for tmp, target in pending:
        os.replace(tmp, target, src_dir_fd=folder, dst_dir_fd=folder)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(journal, dir_fd=folder)
    return None


def _exists(folder: int, name: str) -> bool:
    try:
        os.lstat(name, dir_fd=folder)
    except FileNotFoundError:
        return False
    return True


def _journal_pairs(data: Any, *, owner: str, pid: str, names: set[str]) -> list[tuple[str, str]] | str:
    """The (temporary, target) names a journal of writer ``pid`` for ``owner`` lists, or why it lists
    anything else: only this write's targets and the temporary names made for them, each once."""
    swap = data.get("swap") if isinstance(data, dict) else None
    if not isinstance(data, dict) or set(data) != {"swap"} or not isinstance(swap, list) or not swap:
        return "is not a journal booksum wrote (torn, or not a list of swaps)"
    if len(swap) > len(names):
        return f"names {len(swap)} files, more than this write's {len(names)}"
    pairs: list[tuple[str, str]] = []
    for pair in swap:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(s, str) for s in pair)):
            return "is not a journal booksum wrote (a swap is not two names)"
        if any(not _beside(s) for s in pair):
            return f"names a path, not a file of its own folder ({_shown(pair)})"
        tmp, target = pair
        if target not in names:
            return f"names {target!r}, which is not a target of this write"
        if not re.fullmatch(rf"\.{re.escape(target)}\.{pid}\.{_TEMP_CHARS}\.tmp", tmp):
            return f"names {tmp!r}, which is not a temporary file booksum made for {target}"
        pairs.append((tmp, target))
    if pairs[0][1] != owner or len({t for _, t in pairs}) < len(pairs):
        return "is not a journal booksum wrote (its targets do not match its name, or repeat)"
    return pairs


def _beside(spelled: str) -> bool:
    """Whether a journal's entry is a bare name (a sibling): a path, ``..`` or an empty name is not."""
    return bool(spelled) and "/" not in spelled and "\0" not in spelled and spelled not in (".", "..")


def _shown(pair: list[str]) -> str:
    return ", ".join(repr(s[:120]) for s in pair)


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> Path:
    """Write ``data`` as indented UTF-8 JSON to ``path`` atomically; returns the path."""
    return atomic_write_text(path, json_text(data))


def json_text(data: Any) -> str:
    """The JSON text booksum writes: UTF-8 (not escaped), indented, one trailing newline."""
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"
