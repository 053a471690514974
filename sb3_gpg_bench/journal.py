"""Optuna journal files as committed: ``*.log``, or compressed as ``*.log.gz`` so that no results file weighs on a clone."""

import functools
import gzip
import tempfile
from pathlib import Path
from typing import Any


@functools.cache
def journal_storage(path: str | Path) -> Any:
    """
    :param path: a study's journal file (``*.log``, as ``-optimize --storage`` writes it, or ``*.log.gz``)
    :return: an Optuna ``JournalStorage`` on it; a compressed journal is read from a decompressed copy, so writes to the
        returned storage never reach the committed file
    """
    import optuna
    from optuna.storages.journal import JournalFileBackend

    path = Path(path)
    if path.suffix == ".gz":
        copy = Path(tempfile.mkdtemp(prefix="sb3_gpg_journal_")) / path.stem
        copy.write_bytes(gzip.decompress(path.read_bytes()))
        path = copy
    return optuna.storages.JournalStorage(JournalFileBackend(str(path)))
