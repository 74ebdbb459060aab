"""Where the sequences of a distributed fit come from: partitions, each loaded by a worker.

A :class:`Partitions` is an ordered list of sources, each a whole number of sequences with a
name that error messages use ("file data/part-3.npy", "partition 2"). A source is a small
picklable loader (:class:`ArrayPart`, :class:`FilePart`, :class:`ParquetPart`) or a
partition of a Dask bag; the worker that runs it holds the data, the client never sees
them. Order matters: it is the order of the sequences, and the order in which the
statistics are reduced.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import textio
from ..errors import HiddenStateError, InvalidInputError
from ..kernels import chunk_bounds


@dataclass(frozen=True)
class ArrayPart:
    """Sequences held in memory: ``X`` (rows of observations) split by ``lengths``, with
    their ``sample_weight`` (as ``HMM.fit`` takes it, checked by the worker against the
    data; None: all 1). A source of any class may carry a ``sample_weight`` attribute."""

    X: np.ndarray
    lengths: np.ndarray | None
    sample_weight: object = None

    def load(self) -> tuple[np.ndarray, np.ndarray | None]:
        return self.X, self.lengths


@dataclass(frozen=True)
class FilePart:
    """One ``.npy``, CSV or text file read by :func:`hiddenstate.textio.read_data` (one
    sequence, or the sequences of ``lengths_path``; text: one sequence per line, encoded
    with the shared ``vocabulary``)."""

    path: str
    format: str | None = None
    lengths_path: str | None = None
    vocabulary: textio.Vocabulary | None = None
    encoding: str = "utf-8"

    def load(self) -> tuple[np.ndarray, np.ndarray]:
        X, lengths, _ = textio.read_data(self.path, self.format, lengths_path=self.lengths_path,
                                         vocabulary=self.vocabulary, encoding=self.encoding)
        return X, lengths


@dataclass(frozen=True)
class ParquetPart:
    """One Parquet file: a sequence-id column and observation columns, each sequence's
    rows contiguous and in time order."""

    path: str
    sequence_column: str = "sequence"
    columns: tuple[str, ...] | None = None

    def load(self) -> tuple[np.ndarray, np.ndarray]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not os.path.exists(self.path):
            raise InvalidInputError(f"{self.path}: file not found; check the path")
        try:
            table = pq.read_table(self.path)
        except (OSError, pa.ArrowException) as exc:
            raise InvalidInputError(
                f"{self.path}: not a readable Parquet file ({exc}); write it with "
                "pyarrow.parquet.write_table or DataFrame.to_parquet") from exc
        names = table.column_names
        if self.sequence_column not in names:
            raise InvalidInputError(
                f"sequence_column: {self.sequence_column!r} is not a column of {self.path} "
                f"(its columns: {names}); pass sequence_column=")
        columns = list(self.columns) if self.columns is not None else [
            c for c in names if c != self.sequence_column]
        missing = [c for c in columns if c not in names]
        if missing or not columns:
            raise InvalidInputError(
                f"columns: {missing or 'no observation column'} not in {self.path} (its "
                f"columns: {names}); pass the observation columns")
        if table.num_rows == 0:
            raise InvalidInputError(f"X: {self.path} has no rows; drop the file")
        ids = table.column(self.sequence_column).to_numpy(zero_copy_only=False)
        cols = [table.column(c).to_numpy(zero_copy_only=False) for c in columns]
        X = np.column_stack(cols) if len(cols) > 1 else cols[0].reshape(-1, 1)
        starts = np.concatenate(([0], np.flatnonzero(ids[1:] != ids[:-1]) + 1))
        run_ids = ids[starts]
        uniq, counts = np.unique(run_ids, return_counts=True)
        if np.any(counts > 1):
            raise InvalidInputError(
                f"{self.sequence_column}: in {self.path} the rows of sequence "
                f"{uniq[counts > 1][0]!r} are not contiguous; sort the rows by sequence id "
                "(keeping each sequence's rows in time order)")
        return X, np.diff(np.append(starts, len(ids)))


@dataclass(frozen=True)
class Partitions:
    """Ordered data sources (loaders, or Dask bag partitions) and their names.

    The order is that of the sequences, and the order in which the statistics are reduced.
    Made by :func:`from_arrays`, :func:`from_list`, :func:`from_files`,
    :func:`from_parquet` or :func:`from_bag`; :func:`hiddenstate.distributed.fit` takes one
    as its data.

    Parameters
    ----------
    sources : tuple
        One picklable loader per partition (with a ``load()`` method returning
        ``(X, lengths)``), or the Dask Delayed partitions of a bag.
    names : tuple of str
        The partitions' names, used by error messages ("file data/part-3.npy",
        "partition 2").

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import distributed as hsd
    >>> parts = hsd.from_arrays(np.arange(10) % 3, lengths=[4, 4, 2], n_partitions=2)
    >>> len(parts), parts.names
    (2, ('partition 0', 'partition 1'))
    """

    sources: tuple
    names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.sources)


def from_arrays(X, lengths=None, n_partitions: int = 2, sample_weight=None) -> Partitions:
    """Cut one array of concatenated sequences into partitions of whole sequences.

    ``n_partitions`` contiguous groups of whole sequences of about equal total length.

    Parameters
    ----------
    X : array-like
        The observations, the sequences one after the other (as for ``HMM.fit``).
    lengths : array-like of int or None, default=None
        The length of each sequence; None: one sequence.
    n_partitions : int, default=2
        The number of partitions (fewer when there are fewer sequences).
    sample_weight : array-like, dict or None, default=None
        The weights of ``HMM.fit`` (one per sequence or per observation, or a dict of
        both), cut with the data.

    Returns
    -------
    Partitions
        Named ``"partition 0"``, ``"partition 1"``, ...

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``X`` is not a rectangular array, ``lengths`` do not sum to its rows,
        ``n_partitions`` is not an int >= 1 or ``sample_weight`` does not fit the data.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import distributed as hsd
    >>> X = np.array([0, 0, 1, 0, 2, 2, 1, 2, 0, 0, 1, 2, 2, 2, 1, 0])
    >>> parts = hsd.from_arrays(X, [6, 8, 2], n_partitions=2)
    >>> [source.load()[1] for source in parts.sources]
    [array([6, 8]), array([2])]
    """
    from .._validation import check_lengths, check_sample_weight

    X = _array("X", X)
    lengths = check_lengths(lengths, len(X))
    if isinstance(n_partitions, bool) or not isinstance(n_partitions, (int, np.integer)) \
            or n_partitions < 1:
        raise InvalidInputError(f"n_partitions: expected an int >= 1, got {n_partitions!r}")
    seq_w, obs_w = check_sample_weight(sample_weight, lengths)
    cuts = chunk_bounds(lengths, int(n_partitions))
    rows = np.concatenate(([0], np.cumsum(lengths)))

    def weights(a, b):
        if seq_w is None and obs_w is None:
            return None
        return {"sequence": None if seq_w is None else seq_w[a:b],
                "observation": None if obs_w is None else obs_w[rows[a]:rows[b]]}

    parts = tuple(ArrayPart(X[rows[a]:rows[b]], lengths[a:b], weights(a, b))
                  for a, b in zip(cuts[:-1], cuts[1:], strict=True))
    return Partitions(parts, tuple(f"partition {i}" for i in range(len(parts))))


def _array(name: str, X) -> np.ndarray:
    """``X`` as an array of at least one dimension (its values are checked by the worker
    that holds it)."""
    try:
        X = np.asarray(X)
    except ValueError as exc:  # ragged nested lists
        raise InvalidInputError(
            f"{name}: not a rectangular array ({exc}); pass an array of observations "
            "(sequences of different lengths: concatenate them and pass lengths)") from exc
    if X.ndim == 0:
        raise InvalidInputError(f"{name}: expected an array of observations, got a scalar")
    return X


def from_list(arrays: Sequence, lengths: Sequence | None = None,
              sample_weight: Sequence | None = None) -> Partitions:
    """Make one partition of each array.

    Parameters
    ----------
    arrays : list of ndarray
        The partitions' observations.
    lengths : list of array-like of int or None, default=None
        ``lengths[i]`` splits array ``i`` into sequences; None: each array is one sequence.
    sample_weight : list or None, default=None
        ``sample_weight[i]``: the weights of array ``i`` (as ``HMM.fit`` takes them: one per
        sequence or per observation, or a dict of both; None: all 1).

    Returns
    -------
    Partitions
        Named ``"partition 0"``, ``"partition 1"``, ...

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``arrays`` is not a list, an array is ragged, or ``lengths`` or
        ``sample_weight`` is not one entry per array.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import distributed as hsd
    >>> parts = hsd.from_list([np.array([0, 1, 1, 0]), np.array([2, 2, 1, 0, 0])],
    ...                       lengths=[[4], [3, 2]])
    >>> parts.names, parts.sources[1].load()[1]
    (('partition 0', 'partition 1'), [3, 2])
    """
    if not isinstance(arrays, (list, tuple)):
        raise InvalidInputError(
            f"arrays: expected a list of arrays (one partition each), got "
            f"{type(arrays).__name__}")
    if lengths is not None and (not isinstance(lengths, (list, tuple))
                                or len(lengths) != len(arrays)):
        raise InvalidInputError(
            f"lengths: with a list of {len(arrays)} arrays, pass a list of one lengths array "
            "per array, or None for one sequence per array")
    if sample_weight is not None and (not isinstance(sample_weight, (list, tuple))
                                      or len(sample_weight) != len(arrays)):
        raise InvalidInputError(
            f"sample_weight: with a list of {len(arrays)} arrays, pass a list of one weights "
            "entry per array (None: all 1)")
    parts = tuple(ArrayPart(_array(f"partition {i}", a),
                            None if lengths is None else lengths[i],
                            None if sample_weight is None else sample_weight[i])
                  for i, a in enumerate(arrays))
    return Partitions(parts, tuple(f"partition {i}" for i in range(len(parts))))


def _paths(paths) -> list[str]:
    """``paths`` as a non-empty list of path strings."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        raise InvalidInputError(
            f"paths: expected a list of files (one partition each), got the single path "
            f"{paths!r}; pass [path]")
    try:
        paths = list(paths)
    except TypeError:
        raise InvalidInputError(
            f"paths: expected a list of files, got {type(paths).__name__}") from None
    if not paths:
        raise InvalidInputError("paths: no files; pass at least one")
    bad = [p for p in paths if not isinstance(p, (str, os.PathLike))]
    if bad:
        raise InvalidInputError(
            f"paths: expected file paths (str or pathlib.Path), got {type(bad[0]).__name__}")
    return [str(p) for p in paths]


def from_files(paths: Sequence, lengths: Sequence | None = None, format: str | None = None,
               vocabulary: textio.Vocabulary | None = None,
               encoding: str = "utf-8") -> Partitions:
    """Make one partition of each ``.npy``, CSV or text file.

    The files are read by the workers with :func:`hiddenstate.textio.read_data` (a missing
    or unreadable file is reported naming it).

    Parameters
    ----------
    paths : list of str or os.PathLike
        The data files.
    lengths : list of str or os.PathLike or None, default=None
        ``lengths[i]``: the lengths file of file ``i``; None: each file is one sequence
        (text files: one sequence per line).
    format : {"npy", "csv", "text"} or None, default=None
        The files' format; None: from each file's extension.
    vocabulary : hiddenstate.textio.Vocabulary or None, default=None
        The vocabulary shared by every partition, needed for text files (build it with
        ``hiddenstate.textio.Vocabulary.build``).
    encoding : str, default="utf-8"
        The encoding of CSV and text files.

    Returns
    -------
    Partitions
        Named ``"file PATH"``.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``paths`` is a single path, empty or holds something else than paths,
        ``lengths`` is not one file per data file, or text files come without a
        ``vocabulary``.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import distributed as hsd
    >>> np.save("part-0.npy", np.array([0, 1, 1, 0]))
    >>> np.save("part-1.npy", np.array([2, 2, 1]))
    >>> parts = hsd.from_files(["part-0.npy", "part-1.npy"])
    >>> parts.names
    ('file part-0.npy', 'file part-1.npy')
    >>> X, lengths = parts.sources[1].load()
    >>> X.ravel(), lengths
    (array([2, 2, 1]), array([3]))
    """
    paths = _paths(paths)
    if lengths is not None and len(lengths) != len(paths):
        raise InvalidInputError(
            f"lengths: pass one lengths file per data file ({len(paths)}), got {len(lengths)}")
    fmts = [format or textio.infer_format(p) for p in paths]
    if "text" in fmts and vocabulary is None:
        raise InvalidInputError(
            "vocabulary: text files are encoded with one vocabulary shared by every "
            "partition; build it (hiddenstate.textio.Vocabulary.build) and pass vocabulary=")
    parts = tuple(FilePart(p, f, None if lengths is None else str(lengths[i]), vocabulary,
                           encoding) for i, (p, f) in enumerate(zip(paths, fmts, strict=True)))
    return Partitions(parts, tuple(f"file {p}" for p in paths))


def from_parquet(paths: Sequence, sequence_column: str = "sequence",
                 columns: Sequence[str] | None = None) -> Partitions:
    """Make one partition of each Parquet file; each sequence lies within one file.

    Each file has a sequence-id column and observation columns, each sequence's rows
    contiguous and in time order; the workers read the files with ``pyarrow``.

    Parameters
    ----------
    paths : list of str or os.PathLike
        The Parquet files.
    sequence_column : str, default="sequence"
        The column of sequence ids.
    columns : list of str or None, default=None
        The observation columns; None: every other column.

    Returns
    -------
    Partitions
        Named ``"file PATH"``.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``paths`` is a single path, empty or holds something else than paths, or
        ``sequence_column`` or ``columns`` is not a column name or list of them.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import pyarrow.parquet as pq
    >>> from hiddenstate import distributed as hsd
    >>> table = pa.table({"sequence": [0, 0, 0, 1, 1], "x": [0.5, 1.0, 1.5, 2.0, 2.5]})
    >>> pq.write_table(table, "part-0.parquet")
    >>> parts = hsd.from_parquet(["part-0.parquet"])
    >>> X, lengths = parts.sources[0].load()
    >>> X.shape, lengths
    ((5, 1), array([3, 2]))
    """
    paths = _paths(paths)
    if not isinstance(sequence_column, str):
        raise InvalidInputError(
            f"sequence_column: expected a column name (str), got {sequence_column!r}")
    if isinstance(columns, str):
        raise InvalidInputError(f"columns: expected a list of column names; pass [{columns!r}]")
    cols = None if columns is None else tuple(columns)
    return Partitions(tuple(ParquetPart(p, sequence_column, cols) for p in paths),
                      tuple(f"file {p}" for p in paths))


def from_bag(bag) -> Partitions:
    """Make one partition of each partition of a Dask bag of sequences, in the bag's order.

    Parameters
    ----------
    bag : dask.bag.Bag
        A bag whose elements are sequences (arrays of observations).

    Returns
    -------
    Partitions
        Named ``"bag partition 0"``, ``"bag partition 1"``, ...

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``bag`` is not a Dask bag.

    Examples
    --------
    >>> import dask.bag
    >>> import numpy as np
    >>> from hiddenstate import distributed as hsd
    >>> sequences = [np.array([0, 1, 1]), np.array([2, 2]), np.array([1, 0, 0, 2])]
    >>> hsd.from_bag(dask.bag.from_sequence(sequences, npartitions=2)).names
    ('bag partition 0', 'bag partition 1')
    """
    if not callable(getattr(bag, "to_delayed", None)):
        raise InvalidInputError(
            f"bag: expected a dask.bag.Bag of sequences, got {type(bag).__name__}; "
            "dask.bag.from_sequence(sequences, npartitions=...) makes one")
    parts = tuple(bag.to_delayed())
    return Partitions(parts, tuple(f"bag partition {i}" for i in range(len(parts))))


def as_partitions(data, lengths=None, n_partitions: int = 2,
                  sample_weight=None) -> Partitions:
    """``data`` in any of the accepted forms as :class:`Partitions` (``sample_weight``
    with an array or a list of arrays only)."""
    if sample_weight is not None and not (
            isinstance(data, np.ndarray) or (isinstance(data, (list, tuple)) and data
                                             and all(isinstance(d, np.ndarray) for d in data))):
        raise InvalidInputError(
            "sample_weight: given with an array or a list of arrays only; for files, bags "
            "or Partitions, give each source a sample_weight attribute (see ArrayPart)")
    if isinstance(data, Partitions):
        return data
    if type(data).__module__.startswith("dask.bag"):
        return from_bag(data)
    if isinstance(data, np.ndarray):
        return from_arrays(data, lengths, n_partitions, sample_weight)
    if isinstance(data, (list, tuple)) and data:
        if all(isinstance(d, (str, os.PathLike)) for d in data):
            if all(Path(d).suffix.lower() == ".parquet" for d in data):
                if lengths is not None:
                    raise InvalidInputError(
                        "lengths: Parquet files give their sequences by a sequence-id column; "
                        "drop lengths")
                return from_parquet(data)
            return from_files(data, lengths)
        if all(isinstance(d, np.ndarray) for d in data):
            return from_list(data, lengths, sample_weight)
    raise InvalidInputError(
        f"data: expected an array (+ lengths), a list of arrays, a list of .npy/.csv/text or "
        f".parquet paths, a Dask bag of sequences or Partitions, got "
        f"{type(data).__name__}")


def named(name: str, fn, *args):
    """``fn(*args)``, a :class:`HiddenStateError` re-raised as the same class with
    ``name`` (the partition or file) in front of its message."""
    try:
        return fn(*args)
    except HiddenStateError as exc:
        message = str(exc)
        if name.startswith("file ") and message.startswith(name[5:] + ":"):
            raise  # the message names the file already
        raise type(exc)(f"{name}: {message}") from exc
