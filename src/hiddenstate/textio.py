"""Turning files into ``(X, lengths)``: a token vocabulary and readers for text, CSV and .npy.

Everything here sits at the public boundary, so every problem with a file is reported as an
:class:`~hiddenstate.errors.InvalidInputError` that names the file (and the line, where
there is one) and says how to fix it.

Formats
-------
text
    One sequence per line, tokens separated by whitespace. Blank lines are skipped (an HMM
    sequence cannot be empty). Tokens are mapped to integer ids by a :class:`Vocabulary`;
    the result is a categorical ``X`` of shape ``(n_tokens, 1)``.
csv
    One observation per row, numbers separated by commas. A blank line ends a sequence.
    Lines starting with ``#`` are comments. A first row in which no field is a number is a
    header and is skipped. Instead of blank lines, sequence lengths can come from a separate
    lengths file.
npy
    A 1-D or 2-D array saved with :func:`numpy.save` (read with ``allow_pickle=False``), plus
    an optional lengths file. A 1-D array is one feature (or one symbol) per row.

A lengths file is either ``.npy`` (1-D integers) or text with whitespace- or comma-separated
integers.

Text and CSV files are UTF-8 unless told otherwise (``encoding=``; ``--encoding`` on the
command line). A byte-order mark is dropped, lines end at ``\\n``, ``\\r\\n`` or ``\\r``,
and a file that does not decode, or holds NUL characters (binary data, UTF-16 read as
UTF-8), is an error naming the file and the line (:func:`read_text_file`).
"""

from __future__ import annotations

import codecs
import json
import os
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from ._bundle import read_json
from ._validation import check_memory
from .errors import InvalidInputError, ModelFileError

__all__ = [
    "UNK",
    "Vocabulary",
    "infer_format",
    "check_encoding",
    "read_text_file",
    "read_text_sequences",
    "read_text",
    "encode_sequences",
    "read_csv",
    "read_npy",
    "read_lengths",
    "read_data",
    "split_sequences",
    "FORMATS",
    "top_symbols",
]

UNK = "<unk>"
FORMATS = ("text", "csv", "npy")
_VOCAB_FORMAT = "hiddenstate.vocabulary"
_VOCAB_VERSION = 1

_EXTENSIONS = {
    ".txt": "text",
    ".text": "text",
    ".tokens": "text",
    ".csv": "csv",
    ".npy": "npy",
}


def _name(path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


# --------------------------------------------------------------------------- vocabulary


class Vocabulary:
    """A fixed mapping between tokens and integer ids, with an explicit unknown token.

    Id 0 is always the unknown token (``"<unk>"`` by default); the other ids follow in order
    of decreasing training count, ties broken alphabetically, so the same corpus always gives
    the same ids. Encoding maps every token that is not in the vocabulary to the unknown id;
    a corpus token that *is* the unknown token (WikiText writes ``<unk>`` for rare words)
    maps there too.

    Saved as JSON (:meth:`save` / :meth:`load`), never pickle.
    """

    def __init__(self, tokens: Sequence[str], counts: Sequence[int] | None = None,
                 unk_token: str = UNK):
        tokens = list(tokens)
        if not isinstance(unk_token, str) or not unk_token or any(c.isspace() for c in unk_token):
            raise InvalidInputError(
                f"unk_token: expected a non-empty string without whitespace, got {unk_token!r}"
            )
        if not tokens or tokens[0] != unk_token:
            tokens = [unk_token] + [t for t in tokens if t != unk_token]
            if counts is not None:
                raise InvalidInputError(
                    "tokens: when counts are given, tokens[0] must be the unknown token "
                    f"{unk_token!r}"
                )
        for i, t in enumerate(tokens):
            if not isinstance(t, str) or not t or any(c.isspace() for c in t):
                raise InvalidInputError(
                    f"tokens: entry {i} ({t!r}) is not a non-empty string without whitespace"
                )
        index = {t: i for i, t in enumerate(tokens)}
        if len(index) != len(tokens):
            dup = next(t for t in tokens if tokens.count(t) > 1)
            raise InvalidInputError(
                f"tokens: {dup!r} appears more than once; tokens must be unique"
            )
        if counts is None:
            counts = [0] * len(tokens)
        counts = [int(c) for c in counts]
        if len(counts) != len(tokens) or any(c < 0 for c in counts):
            raise InvalidInputError(
                f"counts: expected {len(tokens)} non-negative integers (one per token), "
                f"got {len(counts)}"
            )
        self.unk_token = unk_token
        self.tokens: list[str] = tokens
        self.counts: list[int] = counts
        self._index = index

    # ---- construction
    @classmethod
    def build(cls, sequences: Iterable[Iterable[str]], max_size: int | None = None,
              min_count: int = 1, unk_token: str = UNK) -> Vocabulary:
        """Vocabulary of the most frequent tokens in ``sequences``.

        Parameters
        ----------
        sequences : iterable of iterables of str
            Token streams (e.g. the output of :func:`read_text_sequences`).
        max_size : int, optional
            Largest vocabulary size *including* the unknown token, so a model over this
            vocabulary has exactly ``max_size`` symbols. ``None`` keeps every token.
        min_count : int
            Tokens seen fewer times than this map to the unknown token.
        """
        if max_size is not None and (isinstance(max_size, bool) or int(max_size) != max_size
                                     or max_size < 2):
            raise InvalidInputError(
                f"max_size: expected an integer >= 2 (the unknown token plus at least one word), "
                f"got {max_size!r}"
            )
        if isinstance(min_count, bool) or int(min_count) != min_count or min_count < 1:
            raise InvalidInputError(f"min_count: expected an integer >= 1, got {min_count!r}")
        counter: Counter[str] = Counter()
        for seq in sequences:
            counter.update(seq)
        if not counter:
            raise InvalidInputError("sequences: no tokens; pass at least one non-empty sequence")
        unk_count = counter.pop(unk_token, 0)
        ranked = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
        kept = [(t, c) for t, c in ranked if c >= min_count]
        if max_size is not None:
            kept = kept[: int(max_size) - 1]
        kept_set = {t for t, _ in kept}
        unk_count += sum(c for t, c in ranked if t not in kept_set)
        return cls([unk_token] + [t for t, _ in kept], [unk_count] + [c for _, c in kept],
                   unk_token=unk_token)

    # ---- mapping
    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: object) -> bool:
        return token in self._index

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Vocabulary) and self.tokens == other.tokens
                and self.counts == other.counts and self.unk_token == other.unk_token)

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)}, unk_token={self.unk_token!r})"

    @property
    def unk_id(self) -> int:
        return 0

    def id_of(self, token: str) -> int:
        """Id of ``token``; the unknown id when it is not in the vocabulary."""
        return self._index.get(token, 0)

    def encode(self, tokens: Iterable[str]) -> np.ndarray:
        """1-D int64 ids of ``tokens``; unknown tokens get :attr:`unk_id`."""
        get = self._index.get
        return np.fromiter((get(t, 0) for t in tokens), dtype=np.int64)

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens of integer ``ids``."""
        out = []
        n = len(self.tokens)
        for i in np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids).ravel():
            i = int(i)
            if not 0 <= i < n:
                raise InvalidInputError(
                    f"ids: {i} is out of range for a vocabulary of {n} tokens"
                )
            out.append(self.tokens[i])
        return out

    # ---- persistence
    def to_dict(self) -> dict:
        return {
            "format": _VOCAB_FORMAT,
            "version": _VOCAB_VERSION,
            "unk_token": self.unk_token,
            "tokens": list(self.tokens),
            "counts": list(self.counts),
        }

    @classmethod
    def from_dict(cls, d: dict, source: str = "vocabulary") -> Vocabulary:
        if not isinstance(d, dict) or d.get("format") != _VOCAB_FORMAT:
            raise ModelFileError(
                f"{source}: not a hiddenstate vocabulary (missing \"format\": "
                f"\"{_VOCAB_FORMAT}\"); write it with Vocabulary.save"
            )
        if d.get("version") != _VOCAB_VERSION:
            raise ModelFileError(
                f"{source}: vocabulary version {d.get('version')!r} is not supported "
                f"(expected {_VOCAB_VERSION}); upgrade hiddenstate or rebuild the vocabulary"
            )
        tokens, counts, unk = d.get("tokens"), d.get("counts"), d.get("unk_token")
        if not isinstance(tokens, list) or not isinstance(counts, list) or not isinstance(unk, str):
            raise ModelFileError(
                f"{source}: \"tokens\" and \"counts\" must be lists and \"unk_token\" a string"
            )
        if not all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
            raise ModelFileError(f"{source}: \"counts\" must be integers")
        try:
            return cls(tokens, counts, unk_token=unk)
        except InvalidInputError as exc:
            raise ModelFileError(f"{source}: malformed vocabulary ({exc})") from exc

    def save(self, path: str | os.PathLike) -> None:
        """Write the vocabulary as UTF-8 JSON."""
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=0) + "\n",
                              encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocabulary:
        """Read a vocabulary written by :meth:`save`."""
        p = Path(path)
        if not p.is_file():
            raise ModelFileError(
                f"{p}: vocabulary file not found; text models keep it in the model directory "
                "as vocabulary.json (refit with `hiddenstate fit` if it was deleted)"
            )
        return cls.from_dict(read_json(p, "vocabulary"), source=str(p))  # bounded, BOM ok


# --------------------------------------------------------------------------- helpers


def top_symbols(emissionprob, vocabulary=None, n: int = 10) -> list[list[tuple[str, float]]]:
    """The ``n`` most probable symbols of every row of ``emissionprob`` (a state's emission
    distribution) as ``(symbol, probability)`` lists, most probable first; symbols are
    decoded by ``vocabulary`` (else their ids as strings). Used by the reports and the
    personalisation summary."""
    B = np.asarray(emissionprob, dtype=float)
    out = []
    for row in B:
        order = np.argsort(-row, kind="stable")[:n]
        names = (vocabulary.decode(order) if vocabulary is not None
                 else [str(int(i)) for i in order])
        out.append([(w, float(row[i])) for w, i in zip(names, order, strict=True)])
    return out


def infer_format(path: str | os.PathLike, default: str | None = None) -> str:
    """``"text"``, ``"csv"`` or ``"npy"`` from the file extension (or ``default``)."""
    ext = Path(str(path)).suffix.lower()
    fmt = _EXTENSIONS.get(ext, default)
    if fmt is None:
        raise InvalidInputError(
            f"{_name(path)}: cannot tell the format from the extension {ext or '(none)'!r}; "
            "pass --format text|csv|npy (or format=...)"
        )
    return fmt


def check_encoding(encoding: str) -> str:
    """``encoding`` if Python knows it (``"utf-8"``, ``"latin-1"``, ``"utf-16"`` ...), else an
    :class:`InvalidInputError` naming it."""
    if not isinstance(encoding, str):
        raise InvalidInputError(f"encoding: expected a name such as 'utf-8', got {encoding!r}")
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise InvalidInputError(
            f"encoding: unknown text encoding {encoding!r}; pass e.g. utf-8, latin-1, cp1252 "
            "or utf-16") from None
    return encoding


#: memory needed to read one byte of a text or CSV file into tokens or rows (measured:
#: 12-17 on WikiText-2 and on numeric CSV; the Python strings and lists cost the most)
TEXT_BYTES_PER_BYTE = 16
#: standard input is read in pieces of this size, the memory checked after each
_STDIN_CHUNK = 1 << 24


def _check_text_memory(name: str, n_bytes: int) -> None:
    """Refuse (:class:`~hiddenstate.errors.InsufficientMemoryError`) a text or CSV file
    too large to read into memory, before it is read."""
    check_memory({name: TEXT_BYTES_PER_BYTE * n_bytes},
                 f"reading {n_bytes / 2**20:,.0f} MiB of text from {name}",
                 {name: "split it into smaller files (and fit in pieces with partial_fit "
                        "in Python)"})


def _read_stdin_bytes() -> bytes | str:
    stream = sys.stdin
    if not hasattr(stream, "buffer"):
        return stream.read()
    chunks, total = [], 0
    while True:
        chunk = stream.buffer.read(_STDIN_CHUNK)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        _check_text_memory("<stdin>", total)
        chunks.append(chunk)


def _guess_encoding(data: bytes) -> str:
    """An encoding that decodes ``data`` into what it most likely says, for the advice of
    an error: UTF-16 by its byte-order mark or by the NUL bytes of ASCII letters, cp1252
    where its printable range 0x80-0x9f occurs, latin-1 otherwise (it decodes anything)."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    head = data[:4096]
    if len(head) >= 2 and head.count(0) >= len(head) // 4:
        even, odd = head[0::2].count(0), head[1::2].count(0)
        if max(even, odd) >= 3 * min(even, odd) + 1:
            return "utf-16-be" if even > odd else "utf-16-le"
    if any(0x80 <= b <= 0x9F for b in head):
        try:
            data.decode("cp1252")
            return "cp1252"
        except UnicodeDecodeError:
            pass
    return "latin-1"


def read_text_file(path: str | os.PathLike, encoding: str = "utf-8") -> str:
    """The decoded text of a file (``"-"``: standard input), ready to split into lines.

    - a byte-order mark at the start is dropped (it is not part of the first token);
    - line ends ``\\r\\n`` and ``\\r`` become ``\\n`` (universal newlines, as :func:`open`);
    - bytes that are not valid in ``encoding`` and NUL characters (a binary file, or UTF-16
      read as UTF-8) are an :class:`InvalidInputError` naming the file, the line and the
      fix (``--encoding`` on the command line, ``encoding=`` in Python, with the encoding
      the bytes most likely are);
    - a file too large to read into memory (about :data:`TEXT_BYTES_PER_BYTE` bytes of
      memory per byte of file) is refused before it is read
      (:class:`~hiddenstate.errors.InsufficientMemoryError`).
    """
    check_encoding(encoding)
    name = _name(path)
    if str(path) == "-":
        data = _read_stdin_bytes()
    else:
        p = _existing_file(path, "file")
        _check_text_memory(name, p.stat().st_size)
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise InvalidInputError(f"{p}: cannot read ({exc.strerror or exc})") from None
    if isinstance(data, bytes):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            npy = "; a NumPy file needs --format npy" if data[:6] == b"\x93NUMPY" else ""
            raise InvalidInputError(
                f"{name}: not {encoding} text (line {line}, byte 0x{data[exc.start]:02x}); "
                f"pass the file's encoding with --encoding (e.g. --encoding "
                f"{_guess_encoding(data)}; encoding= in Python) or re-encode it as UTF-8"
                f"{npy}") from None
    else:
        text = data
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    nul = text.find("\x00")
    if nul >= 0:
        where = f"{name}, line {text.count(chr(10), 0, nul) + 1}: contains a NUL character"
        guess = _guess_encoding(data) if isinstance(data, bytes) else "latin-1"
        if guess.startswith("utf-16"):
            raise InvalidInputError(
                f"{where}, so it is UTF-16 text or binary; if it is text, pass --encoding "
                f"{guess} (encoding= in Python)")
        raise InvalidInputError(f"{where}, so it looks binary; pass a text file")
    return text


def _existing_file(path, what: str = "file") -> Path:
    """``path`` as a Path if it is a readable file; else an error naming it."""
    p = Path(path)
    if not p.exists():
        raise InvalidInputError(f"{p}: {what} not found; check the path")
    if p.is_dir():
        raise InvalidInputError(f"{p}: is a folder, not a {what}; pass a file")
    if not os.access(p, os.R_OK):
        raise InvalidInputError(f"{p}: not readable (permission denied); check its permissions")
    return p


def _read_lines(path: str | os.PathLike, encoding: str = "utf-8") -> list[str]:
    """The lines of a text file: split at ``\\n``, ``\\r\\n`` or ``\\r`` only (not at the
    other characters :meth:`str.splitlines` breaks at, such as form feeds), so line numbers
    are the ones an editor shows."""
    lines = read_text_file(path, encoding).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def split_sequences(X: np.ndarray, lengths: Sequence[int]) -> list[np.ndarray]:
    """Split concatenated rows back into one array per sequence."""
    bounds = np.cumsum(np.asarray(lengths, dtype=np.int64))[:-1]
    return np.split(np.asarray(X), bounds)


# --------------------------------------------------------------------------- text


def read_text_sequences(path: str | os.PathLike, encoding: str = "utf-8") -> list[list[str]]:
    """Token lists, one per non-blank line of a text file (``"-"`` is stdin); see
    :func:`read_text_file` for the encoding, byte-order marks and line ends."""
    seqs = [line.split() for line in _read_lines(path, encoding)]
    seqs = [s for s in seqs if s]
    if not seqs:
        raise InvalidInputError(
            f"{_name(path)}: empty (no tokens); text input needs one whitespace-separated "
            "sequence per line"
        )
    return seqs


def encode_sequences(sequences: Sequence[Sequence[str]], vocabulary: Vocabulary
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``(X, lengths)`` with ``X`` of shape ``(n_tokens, 1)`` int64 from token lists."""
    seqs = [s for s in sequences if len(s)]
    if not seqs:
        raise InvalidInputError("sequences: no tokens; pass at least one non-empty sequence")
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    X = vocabulary.encode(t for s in seqs for t in s)
    return X[:, None], lengths


def read_text(path: str | os.PathLike, vocabulary: Vocabulary | None = None, *,
              max_size: int | None = None, min_count: int = 1, encoding: str = "utf-8"
              ) -> tuple[np.ndarray, np.ndarray, Vocabulary]:
    """Read a text file into ``(X, lengths, vocabulary)``.

    With ``vocabulary=None`` a vocabulary is built from the file (``max_size``,
    ``min_count`` as in :meth:`Vocabulary.build`); otherwise the given one encodes it.
    """
    seqs = read_text_sequences(path, encoding)
    if vocabulary is None:
        vocabulary = Vocabulary.build(seqs, max_size=max_size, min_count=min_count)
    X, lengths = encode_sequences(seqs, vocabulary)
    return X, lengths, vocabulary


# --------------------------------------------------------------------------- lengths


def read_lengths(path: str | os.PathLike) -> np.ndarray:
    """Sequence lengths from a ``.npy`` file or a text file of integers."""
    p = _existing_file(path, "lengths file")
    if p.suffix.lower() == ".npy":
        arr = _load_npy(p, what="lengths")
    else:
        text = " ".join(_read_lines(p)).replace(",", " ").split()
        try:
            arr = np.array([int(tok) for tok in text], dtype=np.int64)
        except ValueError as exc:
            raise InvalidInputError(
                f"{p}: lengths must be whole numbers separated by spaces, commas or newlines "
                f"({exc})"
            ) from exc
    arr = np.asarray(arr)
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidInputError(
            f"{p}: expected a non-empty 1-D list of sequence lengths, got shape {arr.shape}"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise InvalidInputError(f"{p}: lengths must be integers, got dtype {arr.dtype}")
    if np.any(arr <= 0):
        i = int(np.flatnonzero(arr <= 0)[0])
        raise InvalidInputError(
            f"{p}: length {i} is {int(arr[i])}; every sequence needs at least one row"
        )
    return arr.astype(np.int64)


def _check_total(lengths: np.ndarray, n_rows: int, data_path, lengths_path) -> None:
    total = int(lengths.sum())
    if total != n_rows:
        raise InvalidInputError(
            f"{lengths_path}: lengths add up to {total} but {_name(data_path)} has {n_rows} "
            "rows; the lengths must sum to the number of rows"
        )


# --------------------------------------------------------------------------- csv


def _parse_float(field: str) -> float | None:
    try:
        return float(field)
    except ValueError:
        return None


def read_csv(path: str | os.PathLike, lengths_path: str | os.PathLike | None = None,
             encoding: str = "utf-8") -> tuple[np.ndarray, np.ndarray]:
    """Read numeric CSV rows into ``(X, lengths)``; ``X`` is float64 ``(n, n_columns)``.

    A blank line ends a sequence (several blank lines count as one). ``#`` lines are
    comments. A first row with no numeric field is a header and is skipped. With
    ``lengths_path`` the file must not also be split by blank lines.
    """
    name = _name(path)
    lines = _read_lines(path, encoding)
    rows: list[list[float]] = []
    lengths: list[int] = []
    current = 0
    n_cols: int | None = None
    seen_data = False
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if line.startswith("#"):
            continue
        if not line:
            if current:
                lengths.append(current)
                current = 0
            continue
        fields = [f.strip() for f in line.split(",")]
        values = [_parse_float(f) for f in fields]
        if not seen_data:
            seen_data = True
            if all(v is None for v in values):
                continue  # header row
        bad = [i for i, v in enumerate(values) if v is None]
        if bad:
            col = bad[0]
            raise InvalidInputError(
                f"{name}, line {lineno}, column {col + 1}: {fields[col]!r} is not a number; "
                "CSV input must be numeric (comma-separated; only the first row may be a header)"
            )
        if n_cols is None:
            n_cols = len(values)
        elif len(values) != n_cols:
            raise InvalidInputError(
                f"{name}, line {lineno}: has {len(values)} columns but earlier rows have "
                f"{n_cols}; every row needs the same number of comma-separated values"
            )
        if not all(np.isfinite(v) for v in values):
            raise InvalidInputError(
                f"{name}, line {lineno}: contains NaN or inf; remove or impute missing values"
            )
        rows.append(values)  # type: ignore[arg-type]
        current += 1
    if current:
        lengths.append(current)
    if not rows:
        raise InvalidInputError(
            f"{name}: empty (no numeric rows); CSV input needs one comma-separated row per "
            "observation"
        )
    X = np.asarray(rows, dtype=np.float64)
    if lengths_path is not None:
        if len(lengths) > 1:
            raise InvalidInputError(
                f"{name}: sequences are separated by blank lines and a lengths file "
                f"({lengths_path}) was also given; use one or the other"
            )
        lens = read_lengths(lengths_path)
        _check_total(lens, len(X), path, lengths_path)
        return X, lens
    return X, np.asarray(lengths, dtype=np.int64)


# --------------------------------------------------------------------------- npy


#: largest ``.npy`` header read (numpy.save writes 128 bytes or a few more)
_MAX_NPY_HEADER = 10000


def _npy_header(p: Path, fh, what: str) -> tuple[tuple, np.dtype]:
    """Shape and dtype from the header of an open ``.npy`` file, checked before a byte of
    data is read: a NumPy header, a numeric dtype (never Python objects, which need
    pickle), as many bytes as the shape says, and memory for them."""
    magic = fh.read(6)
    if magic != b"\x93NUMPY":
        if magic[:4] == b"PK\x03\x04":
            raise InvalidInputError(
                f"{p}: is a .npz archive (several arrays); pass a single array saved with "
                "numpy.save")
        raise InvalidInputError(
            f"{p}: not a .npy file (it does not start with a NumPy header); write the {what} "
            "with numpy.save, or pass --format text or csv if the file is text")
    fh.seek(0)
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(
                fh, max_header_size=_MAX_NPY_HEADER)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(
                fh, max_header_size=_MAX_NPY_HEADER)
        else:
            raise InvalidInputError(
                f"{p}: .npy format version {version} is not read here (numeric arrays are "
                "saved as version 1.0 by numpy.save)")
    except (ValueError, EOFError, OSError) as exc:
        raise InvalidInputError(
            f"{p}: its NumPy header is damaged ({exc}); write the {what} with numpy.save"
        ) from None
    if dtype.hasobject or dtype.kind not in "biuf":
        why = " (reading it needs pickle, which hiddenstate never runs)" if dtype.hasobject \
            else ""
        raise InvalidInputError(
            f"{p}: dtype {dtype} is not numeric{why}; save integers (symbols) or floats with "
            "numpy.save")
    n_bytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    have = os.fstat(fh.fileno()).st_size - fh.tell()
    if have < n_bytes:
        raise InvalidInputError(
            f"{p}: truncated: its header says shape {tuple(shape)} of {dtype} ({n_bytes:,} "
            f"bytes) but the file holds {have:,} bytes of data; write it again with numpy.save")
    check_memory({str(p): float(n_bytes)}, f"reading the {what} in {p}",
                 {str(p): "pass a smaller array (fit in pieces with partial_fit in Python)"})
    return tuple(shape), dtype


def _load_npy(p: Path, what: str) -> np.ndarray:
    p = _existing_file(p, "file")
    try:
        with open(p, "rb") as fh:
            _npy_header(p, fh, what)
            fh.seek(0)
            arr = np.load(fh, allow_pickle=False)
    except InvalidInputError:
        raise
    except (ValueError, OSError, EOFError) as exc:
        raise InvalidInputError(
            f"{p}: not a valid .npy file ({exc.strerror if isinstance(exc, OSError) else exc});"
            " write it with numpy.save") from None
    return arr


def read_npy(path: str | os.PathLike, lengths_path: str | os.PathLike | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """Read a ``.npy`` array into ``(X, lengths)``; a 1-D array becomes one column.

    The dtype is kept (integer symbols stay integers).
    """
    p = Path(path)
    X = _load_npy(p, what="data")
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise InvalidInputError(
            f"{p}: expected a 1-D or 2-D array (n_samples, n_features), got shape {X.shape}"
        )
    if X.shape[0] == 0:
        raise InvalidInputError(f"{p}: empty (0 rows); pass at least one observation")
    if X.dtype.kind == "f" and not np.all(np.isfinite(X)):
        row = int(np.argwhere(~np.isfinite(X))[0][0])
        raise InvalidInputError(f"{p}: contains NaN or inf (first in row {row}); remove them")
    if X.dtype.kind == "b":
        X = X.astype(np.int64)
    if lengths_path is None:
        return X, np.array([X.shape[0]], dtype=np.int64)
    lens = read_lengths(lengths_path)
    _check_total(lens, X.shape[0], path, lengths_path)
    return X, lens


# --------------------------------------------------------------------------- dispatch


def read_data(path: str | os.PathLike, fmt: str | None = None, *,
              lengths_path: str | os.PathLike | None = None,
              vocabulary: Vocabulary | None = None,
              max_size: int | None = None, min_count: int = 1, encoding: str = "utf-8"
              ) -> tuple[np.ndarray, np.ndarray, Vocabulary | None]:
    """Read any supported format into ``(X, lengths, vocabulary)``.

    ``vocabulary`` is ``None`` for CSV and npy input. ``fmt=None`` infers the format from
    the extension. ``encoding`` applies to text and CSV (see :func:`read_text_file`).
    """
    fmt = infer_format(path) if fmt is None else fmt
    if fmt not in FORMATS:
        raise InvalidInputError(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if fmt == "text":
        if lengths_path is not None:
            raise InvalidInputError(
                "--lengths: text input has one sequence per line; drop the lengths file"
            )
        return read_text(path, vocabulary, max_size=max_size, min_count=min_count,
                         encoding=encoding)
    if fmt == "csv":
        X, lengths = read_csv(path, lengths_path, encoding)
    else:
        if str(path) == "-":
            raise InvalidInputError("-: .npy input cannot come from stdin; pass a file path")
        X, lengths = read_npy(path, lengths_path)
    return X, lengths, None


def iter_rows_csv(X: np.ndarray) -> Iterator[str]:
    """CSV lines for the rows of a 2-D numeric array (``repr`` precision)."""
    X = np.asarray(X)
    for row in X.reshape(len(X), -1):
        yield ",".join(repr(v.item()) for v in row)
