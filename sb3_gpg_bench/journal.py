"""Optuna journal files as committed: ``*.log``, or compressed as ``*.log.gz`` so that no results file weighs on a clone."""

import atexit
import functools
import gzip
import shutil
import tempfile
from pathlib import Path
from typing import Any


def journal_storage(path: str | Path) -> Any:
    """
    :param path: a study's journal file (``*.log``, as ``-optimize --storage`` writes it, or ``*.log.gz``)
    :return: an Optuna ``JournalStorage`` on it; a compressed journal is read from a decompressed copy (one per file
        and process, removed at exit), so writes to the returned storage never reach the committed file
    """
    return _storage(Path(path).resolve())


@functools.cache
def _storage(path: Path) -> Any:
    import optuna
    from optuna.storages.journal import JournalFileBackend

    if path.suffix == ".gz":
        folder = tempfile.mkdtemp(prefix="sb3_gpg_journal_")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        copy = Path(folder) / path.stem
        copy.write_bytes(gzip.decompress(path.read_bytes()))
        path = copy
    return optuna.storages.JournalStorage(JournalFileBackend(str(path)))
