"""Where spill files live, and the private directory that holds them.

Spill files hold row values of open transactions, so nobody but the service's own user may list,
read or plant them. :func:`default_spill_dir` is the ONE default of the ``spill_dir`` key (the config
model and the reader contract both use it); it is never a shared ``/tmp`` path.

:class:`PrivateDir` is a source's own directory under it (``<spill_dir>/<source>``). Created mode
0700, then opened once (never through a symlink) and checked on the open handle: owned by this
process's user and no permission bit for group or other, else refused with the fix. Every later
file operation is relative to that handle, so replacing the path afterwards (the parent may be a
shared volume) cannot redirect a file. Files are created exclusively (``O_EXCL``), mode 0600.
"""

from __future__ import annotations

import errno
import logging
import os
import stat

from cdc.errors import SpillError

log = logging.getLogger(__name__)

CONTAINER_STATE = "/var/lib/cdc"  # the image's state directory (deploy/Dockerfile), a volume in Kubernetes
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def default_spill_dir() -> str:
    """``$CDC_STATE_DIR/spill``; else ``/var/lib/cdc/spill`` where ``/var/lib/cdc`` is a writable
    directory (the container image); else ``$XDG_STATE_HOME/cdc/spill`` (``~/.local/state/cdc/spill``)."""
    state = os.environ.get("CDC_STATE_DIR")
    if state:
        return os.path.join(state, "spill")
    if os.path.isdir(CONTAINER_STATE) and os.access(CONTAINER_STATE, os.W_OK):
        return os.path.join(CONTAINER_STATE, "spill")
    xdg = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(xdg, "cdc", "spill")


class PrivateDir:
    """A directory only this user can enter, held open; files are named relative to it.

    Raises :class:`SpillError` at construction when the directory cannot be made or opened, is a
    symlink, belongs to another user or grants group/other any permission.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                pass
            self._fd = os.open(path, _OPEN_DIR)
        except OSError as exc:
            why = "it is a symbolic link" if os.path.islink(path) else exc.strerror
            raise SpillError(f"cannot use spill directory {path}: {why}. Point spill_dir at a directory this "
                             f"user (uid {os.geteuid()}) can create", directory=path) from None
        st = os.fstat(self._fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            os.close(self._fd)
            raise SpillError(
                f"spill directory {path} is owned by uid {st.st_uid} with mode {stat.filemode(st.st_mode)} "
                f"({st.st_mode & 0o7777:04o}); spill files hold row data, so it must belong to this process's user "
                f"(uid {os.geteuid()}) with no group or other permissions. Fix: remove it (the service creates "
                f"it 0700), or `chown {os.geteuid()} {path} && chmod 700 {path}`",
                directory=path, owner=st.st_uid, mode=f"{st.st_mode & 0o7777:04o}")

    def where(self, name: str) -> str:
        return os.path.join(self.path, name)

    def create(self, name: str, data: bytes) -> None:
        """Write a new file (never an existing one) of ``data``, mode 0600; a failed write leaves no file.
        Raises :class:`SpillError` naming the file, the byte count and, on a full disk, the directory."""
        try:
            fd = os.open(name, _CREATE, 0o600, dir_fd=self._fd)
        except OSError as exc:
            raise SpillError(f"cannot create spill file {self.where(name)}: {exc.strerror}",
                             path=self.where(name)) from None
        try:
            with open(fd, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            self.remove(name)
            full = (f"; the file system holding {self.path} is full: free space there or point spill_dir at a "
                    f"larger volume" if exc.errno in _DISK_FULL else "")
            raise SpillError(f"cannot write {len(data)} bytes to spill file {self.where(name)}: {exc.strerror}{full}",
                             path=self.where(name), directory=self.path, nbytes=len(data)) from None

    def read(self, name: str) -> bytes:
        """The bytes of a file this directory holds (OSError as raised)."""
        with open(os.open(name, _READ, dir_fd=self._fd), "rb") as fh:
            return fh.read()

    def remove(self, name: str) -> None:
        try:
            os.unlink(name, dir_fd=self._fd)
        except FileNotFoundError:
            pass

    def sweep(self) -> tuple[int, int]:
        """Remove every file left in the directory (an earlier process's spill: its transactions will be
        read again from the source); returns (files, bytes) removed."""
        files = nbytes = 0
        for entry in os.scandir(self._fd):
            if not entry.is_dir(follow_symlinks=False):
                nbytes += entry.stat(follow_symlinks=False).st_size
                self.remove(entry.name)
                files += 1
        return files, nbytes

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
