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
import csv
import json
import os
import re
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
    "read_table",
    "DataFile",
    "MISSING_CELLS",
    "read_npy",
    "read_file",
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

    Parameters
    ----------
    tokens : sequence of str
        The tokens in id order, each a non-empty string without whitespace, no token twice.
        The unknown token is put first when it is not already (without ``counts`` only).
    counts : sequence of int or None, default=None
        The training count of each token (non-negative, one per token; ``tokens[0]`` must
        then be the unknown token); None: zeros.
    unk_token : str, default="<unk>"
        The unknown token, id 0.

    Attributes
    ----------
    tokens : list of str
        The tokens in id order, the unknown token first.
    counts : list of int
        Their training counts (the unknown token's: the tokens mapped to it).
    unk_token : str
        The unknown token.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If a token or the unknown token is empty or holds whitespace, a token repeats, or
        ``counts`` does not match ``tokens``.

    See Also
    --------
    Vocabulary.build : The vocabulary of a corpus.
    read_text : Read a text file and encode it.

    Examples
    --------
    >>> from hiddenstate.textio import Vocabulary
    >>> vocab = Vocabulary.build([["a", "b", "a"], ["c", "a"]])
    >>> vocab.tokens, vocab.counts
    (['<unk>', 'a', 'b', 'c'], [0, 3, 1, 1])
    >>> vocab.encode(["a", "zebra"])               # a word not in it: the unknown id
    array([1, 0])
    >>> vocab.decode([2, 3])
    ['b', 'c']
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
        """Build the vocabulary of the most frequent tokens in ``sequences``.

        Ids follow decreasing count, ties broken alphabetically; the tokens left out count
        for the unknown token.

        Parameters
        ----------
        sequences : iterable of iterables of str
            Token streams (e.g. the output of :func:`read_text_sequences`).
        max_size : int or None, default=None
            Largest vocabulary size *including* the unknown token (>= 2), so a model over
            this vocabulary has exactly ``max_size`` symbols. ``None`` keeps every token.
        min_count : int, default=1
            Tokens seen fewer times than this map to the unknown token.
        unk_token : str, default="<unk>"
            The unknown token.

        Returns
        -------
        Vocabulary
            The unknown token, then the kept tokens by decreasing count.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``max_size`` or ``min_count`` is out of range, or there are no tokens.

        Examples
        --------
        >>> from hiddenstate.textio import Vocabulary
        >>> vocab = Vocabulary.build([["a", "b", "a"], ["c", "a"]], max_size=2)
        >>> vocab.tokens, vocab.counts                # b and c map to <unk>
        (['<unk>', 'a'], [2, 3])
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
        """The id of the unknown token: always 0."""
        return 0

    def unseen_probability(self) -> float:
        r"""Return the probability to reserve for words not seen in training.

        When training tokens were mapped to the unknown token (rare words under
        ``min_count``, words past ``max_size``), the unknown token learns its probability
        from them and nothing more is reserved: 0. When none was (every training word is in
        the vocabulary), Witten & Bell's estimate of the chance that the next token is a
        new word: each of the :math:`V` word types was new once in :math:`N` tokens, so

        .. math::

            P(\text{unseen}) = \frac{V}{N + V}

        (Witten & Bell 1991, method C; Chen & Goodman 1998, §2.5). It is positive whatever
        the counts, so a model that gives the unknown token this probability scores every
        new text finitely. ``hiddenstate fit`` gives it to ``<unk>`` in every state.

        Returns
        -------
        float
            :math:`V / (N + V)` when no training token is the unknown token, else 0.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the vocabulary has no counts (built without them).

        Examples
        --------
        >>> from hiddenstate.textio import Vocabulary
        >>> Vocabulary.build([["a", "b", "a", "b"], ["b", "a"]]).unseen_probability()
        0.25
        >>> Vocabulary.build([["a", "b", "a", "c"]], min_count=2).unseen_probability()
        0.0
        """
        n_tokens = sum(self.counts)
        if n_tokens == 0:
            raise InvalidInputError(
                "counts: the vocabulary has no training counts, so the chance of an unseen "
                "word cannot be estimated; build it with Vocabulary.build")
        if self.counts[0] > 0:
            return 0.0
        n_types = len(self.tokens) - 1
        return n_types / (n_tokens + n_types)

    def id_of(self, token: str) -> int:
        """Return the id of one token.

        Parameters
        ----------
        token : str
            A token.

        Returns
        -------
        int
            Its id; the unknown id (0) when it is not in the vocabulary.

        Examples
        --------
        >>> from hiddenstate.textio import Vocabulary
        >>> vocab = Vocabulary(["the", "cat"])
        >>> vocab.id_of("cat"), vocab.id_of("dog")
        (2, 0)
        """
        return self._index.get(token, 0)

    def encode(self, tokens: Iterable[str]) -> np.ndarray:
        """Encode tokens as ids.

        Parameters
        ----------
        tokens : iterable of str
            The tokens.

        Returns
        -------
        ndarray of shape (n_tokens,), dtype int64
            Their ids; tokens not in the vocabulary get :attr:`unk_id`.
        """
        get = self._index.get
        return np.fromiter((get(t, 0) for t in tokens), dtype=np.int64)

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Decode ids into tokens.

        Parameters
        ----------
        ids : iterable of int
            Ids in ``0 .. len(self) - 1`` (an array of any shape is read flat).

        Returns
        -------
        list of str
            Their tokens.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If an id is out of range.
        """
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
        """Return the vocabulary as a JSON-ready dict, as :meth:`save` writes it.

        Returns
        -------
        dict
            ``format``, ``version``, ``unk_token``, ``tokens`` and ``counts``.
        """
        return {
            "format": _VOCAB_FORMAT,
            "version": _VOCAB_VERSION,
            "unk_token": self.unk_token,
            "tokens": list(self.tokens),
            "counts": list(self.counts),
        }

    @classmethod
    def from_dict(cls, d: dict, source: str = "vocabulary") -> Vocabulary:
        """Build a vocabulary from the dict of :meth:`to_dict`, checking it.

        Parameters
        ----------
        d : dict
            The dict (read from JSON).
        source : str, default="vocabulary"
            What the dict came from, for the error messages (a file name).

        Returns
        -------
        Vocabulary
            The vocabulary.

        Raises
        ------
        hiddenstate.errors.ModelFileError
            If the dict is not a vocabulary of a supported version, or is malformed.
        """
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
        """Write the vocabulary as UTF-8 JSON.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.

        See Also
        --------
        Vocabulary.load : Read it back.

        Examples
        --------
        >>> from hiddenstate.textio import Vocabulary
        >>> vocab = Vocabulary(["the", "cat"])
        >>> vocab.save("vocabulary.json")
        >>> Vocabulary.load("vocabulary.json") == vocab
        True
        """
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=0) + "\n",
                              encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocabulary:
        """Read a vocabulary written by :meth:`save`.

        Parameters
        ----------
        path : str or os.PathLike
            The JSON file.

        Returns
        -------
        Vocabulary
            The vocabulary.

        Raises
        ------
        hiddenstate.errors.ModelFileError
            If the file is missing, is not a vocabulary, or is malformed.
        """
        p = Path(path)
        if not p.is_file():
            raise ModelFileError(
                f"{p}: vocabulary file not found; text models keep it in the model directory "
                "as vocabulary.json (refit with `hiddenstate fit` if it was deleted)"
            )
        return cls.from_dict(read_json(p, "vocabulary"), source=str(p))  # bounded, BOM ok


# --------------------------------------------------------------------------- helpers


def top_symbols(emissionprob, vocabulary=None, n: int = 10) -> list[list[tuple[str, float]]]:
    """List the ``n`` most probable symbols of every state's emission distribution.

    Used by the reports and the personalisation summary.

    Parameters
    ----------
    emissionprob : array-like of shape (n_states, n_symbols)
        One emission distribution per row.
    vocabulary : Vocabulary or None, default=None
        Decodes the symbols; None: their ids as strings.
    n : int, default=10
        The number of symbols per row.

    Returns
    -------
    list of list of (str, float)
        Per row, ``(symbol, probability)`` pairs, most probable first (ties in id order).

    Examples
    --------
    >>> from hiddenstate.textio import Vocabulary, top_symbols
    >>> vocab = Vocabulary(["the", "cat"])
    >>> top_symbols([[0.1, 0.6, 0.3]], vocab, n=2)
    [[('the', 0.6), ('cat', 0.3)]]
    """
    B = np.asarray(emissionprob, dtype=float)
    out = []
    for row in B:
        order = np.argsort(-row, kind="stable")[:n]
        names = (vocabulary.decode(order) if vocabulary is not None
                 else [str(int(i)) for i in order])
        out.append([(w, float(row[i])) for w, i in zip(names, order, strict=True)])
    return out


def infer_format(path: str | os.PathLike, default: str | None = None) -> str:
    """Tell a file's format from its extension.

    ``.txt``, ``.text`` and ``.tokens`` are text, ``.csv`` is CSV, ``.npy`` is npy (any
    case).

    Parameters
    ----------
    path : str or os.PathLike
        The file name.
    default : str or None, default=None
        The format of any other extension; None: an error.

    Returns
    -------
    str
        ``"text"``, ``"csv"`` or ``"npy"`` (or ``default``).

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the extension is unknown and there is no ``default``.

    Examples
    --------
    >>> from hiddenstate.textio import infer_format
    >>> infer_format("rides.CSV"), infer_format("corpus.dat", default="text")
    ('csv', 'text')
    """
    ext = Path(str(path)).suffix.lower()
    fmt = _EXTENSIONS.get(ext, default)
    if fmt is None:
        raise InvalidInputError(
            f"{_name(path)}: cannot tell the format from the extension {ext or '(none)'!r}; "
            "pass --format text|csv|npy (or format=...)"
        )
    return fmt


def check_encoding(encoding: str) -> str:
    """Check that Python knows a text encoding.

    Parameters
    ----------
    encoding : str
        A codec name (``"utf-8"``, ``"latin-1"``, ``"utf-16"`` ...).

    Returns
    -------
    str
        ``encoding`` itself.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``encoding`` is not a string or not a known codec.

    Examples
    --------
    >>> from hiddenstate.textio import check_encoding
    >>> check_encoding("latin-1")
    'latin-1'
    """
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
    """Read and decode a text file, ready to split into lines.

    - a byte-order mark at the start is dropped (it is not part of the first token);
    - line ends ``\\r\\n`` and ``\\r`` become ``\\n`` (universal newlines, as :func:`open`);
    - bytes that are not valid in ``encoding`` and NUL characters (a binary file, or UTF-16
      read as UTF-8) are an :class:`InvalidInputError` naming the file, the line and the
      fix (``--encoding`` on the command line, ``encoding=`` in Python, with the encoding
      the bytes most likely are);
    - a file too large to read into memory (about :data:`TEXT_BYTES_PER_BYTE` bytes of
      memory per byte of file) is refused before it is read
      (:class:`~hiddenstate.errors.InsufficientMemoryError`).

    Parameters
    ----------
    path : str or os.PathLike
        The file; ``"-"`` reads standard input.
    encoding : str, default="utf-8"
        Its text encoding.

    Returns
    -------
    str
        The decoded text, line ends normalised to ``\\n``.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the file is missing or a directory, does not decode, holds a NUL character, or
        ``encoding`` is unknown.
    hiddenstate.errors.InsufficientMemoryError
        If the file is too large to read into memory (refused before it is read).

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.textio import read_text_file
    >>> _ = Path("windows.txt").write_bytes(b"\\xef\\xbb\\xbfone line\\r\\nanother\\r\\n")
    >>> read_text_file("windows.txt")
    'one line\\nanother\\n'
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
    """Split concatenated rows back into one array per sequence.

    Parameters
    ----------
    X : array-like of shape (n_samples, ...)
        The sequences one after the other.
    lengths : sequence of int
        The length of each sequence (summing to ``len(X)``).

    Returns
    -------
    list of ndarray
        One array per sequence (views of ``X``).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.textio import split_sequences
    >>> split_sequences(np.arange(5), [2, 3])
    [array([0, 1]), array([2, 3, 4])]
    """
    bounds = np.cumsum(np.asarray(lengths, dtype=np.int64))[:-1]
    return np.split(np.asarray(X), bounds)


# --------------------------------------------------------------------------- text


def read_text_sequences(path: str | os.PathLike, encoding: str = "utf-8") -> list[list[str]]:
    """Read the token lists of a text file, one per non-blank line.

    Tokens are separated by whitespace; see :func:`read_text_file` for the encoding,
    byte-order marks and line ends.

    Parameters
    ----------
    path : str or os.PathLike
        The file; ``"-"`` reads standard input.
    encoding : str, default="utf-8"
        Its text encoding.

    Returns
    -------
    list of list of str
        The tokens of each non-blank line.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the file cannot be read as text (:func:`read_text_file`) or holds no token.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.textio import read_text_sequences
    >>> _ = Path("corpus.txt").write_text("the cat sat\\n\\nthe dog\\n")
    >>> read_text_sequences("corpus.txt")
    [['the', 'cat', 'sat'], ['the', 'dog']]
    """
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
    """Encode token lists as the ``(X, lengths)`` of a categorical model.

    Parameters
    ----------
    sequences : sequence of sequence of str
        The token lists (empty ones are dropped).
    vocabulary : Vocabulary
        Maps the tokens to ids (unknown tokens to id 0).

    Returns
    -------
    X : ndarray of shape (n_tokens, 1), dtype int64
        The ids, the sequences one after the other.
    lengths : ndarray of shape (n_sequences,), dtype int64
        The length of each non-empty sequence.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If there is no token.

    Examples
    --------
    >>> from hiddenstate.textio import Vocabulary, encode_sequences
    >>> X, lengths = encode_sequences([["the", "cow"], ["cat"]], Vocabulary(["the", "cat"]))
    >>> X.ravel(), lengths
    (array([1, 0, 2]), array([2, 1]))
    """
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

    One sequence per non-blank line, tokens separated by whitespace. With
    ``vocabulary=None`` a vocabulary is built from the file (``max_size``, ``min_count`` as
    in :meth:`Vocabulary.build`); otherwise the given one encodes it.

    Parameters
    ----------
    path : str or os.PathLike
        The file; ``"-"`` reads standard input.
    vocabulary : Vocabulary or None, default=None
        Encodes the tokens; None: build one from the file.
    max_size : int or None, default=None
        The largest vocabulary built, the unknown token included; None: every token.
    min_count : int, default=1
        Tokens seen fewer times map to the unknown token (a vocabulary built here).
    encoding : str, default="utf-8"
        The file's text encoding.

    Returns
    -------
    X : ndarray of shape (n_tokens, 1), dtype int64
        The token ids, the sequences one after the other.
    lengths : ndarray of shape (n_sequences,), dtype int64
        The number of tokens of each non-blank line.
    vocabulary : Vocabulary
        The vocabulary used.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the file cannot be read as text, holds no token, or an option is out of range.

    See Also
    --------
    read_data : Any supported format.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.textio import read_text
    >>> _ = Path("corpus.txt").write_text("the cat sat\\nthe dog\\n")
    >>> X, lengths, vocab = read_text("corpus.txt")
    >>> X.ravel(), lengths, vocab.tokens
    (array([1, 2, 4, 1, 3]), array([3, 2]), ['<unk>', 'the', 'cat', 'dog', 'sat'])
    """
    seqs = read_text_sequences(path, encoding)
    if vocabulary is None:
        vocabulary = Vocabulary.build(seqs, max_size=max_size, min_count=min_count)
    X, lengths = encode_sequences(seqs, vocabulary)
    return X, lengths, vocabulary


# --------------------------------------------------------------------------- lengths


def read_lengths(path: str | os.PathLike) -> np.ndarray:
    """Read sequence lengths from a ``.npy`` file or a text file of integers.

    A text file holds whole numbers separated by whitespace, commas or newlines; a
    ``.npy`` file a 1-D integer array (floats with integer values are accepted).

    Parameters
    ----------
    path : str or os.PathLike
        The lengths file.

    Returns
    -------
    ndarray of shape (n_sequences,), dtype int64
        The lengths, each >= 1.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the file is missing, unreadable, empty, not 1-D, or holds a non-integer or a
        length < 1.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.textio import read_lengths
    >>> _ = Path("lengths.txt").write_text("2, 3\\n4\\n")
    >>> read_lengths("lengths.txt")
    array([2, 3, 4])
    """
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

#: cells read as missing values (NaN) in CSV input: pandas' defaults and ``?`` (UCI's mark)
MISSING_CELLS = ("", "NA", "N/A", "n/a", "#N/A", "#N/A N/A", "#NA", "<NA>", "NaN", "nan",
                 "-NaN", "-nan", "NULL", "null", "None", "1.#IND", "-1.#IND", "1.#QNAN",
                 "-1.#QNAN", "?")


class DataFile:
    """The contents of a data file: the observations and what the file says about them.

    Returned by :func:`read_table` (CSV) and :func:`read_file` (any format).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The observations, the sequences one after the other (CSV: float64, NaN for a
        missing cell).
    lengths : ndarray of shape (n_sequences,), dtype int64
        The length of each sequence.
    vocabulary : Vocabulary or None, default=None
        Text: the vocabulary that encoded the tokens.
    tokens : list of list of str or None, default=None
        Text: the tokens of each sequence as written (before a word outside the vocabulary
        became the unknown token).
    columns : list of str or None, default=None
        CSV: the name of each data column (its header, else ``"column N"``, counted from 1).
    index : ndarray of shape (n_samples,) or None, default=None
        CSV: the index column, one label per row (``datetime64`` for dates, float64 for
        numbers, strings otherwise).
    index_name : str or None, default=None
        CSV: the index column's name.

    Attributes
    ----------
    oov : list of ndarray or None
        Text: per sequence, the positions of the tokens outside the vocabulary (read as the
        unknown token); None for numbers.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.textio import read_file
    >>> _ = Path("corpus.txt").write_text("the cat sat\\nthe gnu sat\\n")
    >>> from hiddenstate.textio import Vocabulary
    >>> data = read_file("corpus.txt", vocabulary=Vocabulary(["the", "cat", "sat"]))
    >>> data.tokens[1], data.X[3:, 0], data.oov
    (['the', 'gnu', 'sat'], array([1, 0, 3]), [array([], dtype=int64), array([1])])
    """

    def __init__(self, X: np.ndarray, lengths: np.ndarray, vocabulary: Vocabulary | None = None,
                 tokens: list[list[str]] | None = None, columns: list[str] | None = None,
                 index: np.ndarray | None = None, index_name: str | None = None):
        self.X = X
        self.lengths = lengths
        self.vocabulary = vocabulary
        self.tokens = tokens
        self.columns = columns
        self.index = index
        self.index_name = index_name

    @property
    def oov(self) -> list[np.ndarray] | None:
        """Per text sequence, the positions of its tokens outside the vocabulary."""
        if self.tokens is None or self.vocabulary is None:
            return None
        return [np.flatnonzero([t not in self.vocabulary or t == self.vocabulary.unk_token
                                for t in seq]).astype(np.int64) for seq in self.tokens]

    def __repr__(self) -> str:
        return (f"DataFile(n_samples={len(self.X)}, n_sequences={len(self.lengths)}, "
                f"columns={self.columns!r}, index_name={self.index_name!r})")


def _is_number(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _ragged_row(body: str, n_rows: int, n_cols: int) -> int | None:
    """The first row of ``body`` (``n_rows`` lines) whose number of comma-separated fields
    is not ``n_cols`` (quotes respected), or None. Without quotes, the total number of
    commas settles the common case without a pass over the lines (pandas refuses a row
    with too many fields, so a right total means no row has too few)."""
    quoted = '"' in body
    if not quoted and body.count(",") == n_rows * (n_cols - 1):
        return None
    lines = body.split("\n")
    counts = (np.fromiter((len(r) for r in csv.reader(lines)), dtype=np.int64, count=n_rows)
              if quoted else
              np.fromiter((ln.count(",") + 1 for ln in lines), dtype=np.int64, count=n_rows))
    bad = np.flatnonzero(counts != n_cols)
    return int(bad[0]) if bad.size else None


def _resolve_column(spec, header: list[str] | None, n_cols: int, option: str,
                    name: str) -> int:
    """The 0-based position of the column ``spec``: a header name, else a position counted
    from 1."""
    text = str(spec).strip()
    if header is not None and text in header:
        return header.index(text)
    if text.lstrip("-").isdigit():
        pos = int(text)
        if 1 <= pos <= n_cols:
            return pos - 1
        raise InvalidInputError(
            f"{option}: column {pos} does not exist; {name} has {n_cols} columns, counted "
            "from 1")
    known = (f"its columns are {', '.join(repr(h) for h in header)}" if header is not None
             else "it has no header row, so columns are named by position, counted from 1")
    raise InvalidInputError(f"{option}: no column {text!r} in {name} ({known})")


def _as_dates(values):
    """``values`` (a Series of strings, none missing) as datetime64[ns] if every one is a date, else
    None. ISO 8601 first; else the format pandas infers from the first value."""
    import warnings

    import pandas as pd

    if any(_is_number(v) for v in values.iloc[:1000]):
        return None
    for fmt in ("ISO8601", None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out = pd.to_datetime(values, format=fmt, errors="coerce")
            except (ValueError, TypeError, OverflowError):
                continue
        if not out.isna().any():
            return out.to_numpy(dtype="datetime64[ns]")
    return None


def read_table(path: str | os.PathLike, lengths_path: str | os.PathLike | None = None,
               encoding: str = "utf-8", *, columns: Sequence[str | int] | None = None,
               index_column: str | int | None = None) -> DataFile:
    """Read CSV rows into a :class:`DataFile`: numeric data columns, an index, missing cells.

    - A blank line ends a sequence (several count as one); lines starting with ``#`` are
      comments; a first row in which no field is a number is a header.
    - A cell in :data:`MISSING_CELLS` (empty, ``NA``, ``nan``, ``?``, ...) is a missing value:
      NaN, which the Gaussian, Gaussian-mixture and Poisson families skip (a categorical
      model reads it as the missing symbol, -1).
    - ``columns`` chooses the data columns, by header name or position counted from 1;
      without it every column is data except the index column.
    - ``index_column`` names a column of dates or row labels that is not data (a report
      plots the series against it); without it a column whose every cell is a date (ISO
      8601, or a format pandas recognises) is taken as the index.

    Any other cell that is not a number is an error naming its line and column. Parsing is
    pandas' (imported here only: reading a million rows takes about 0.4 s, against 7 s for
    a field-by-field Python reader).

    Parameters
    ----------
    path : str or os.PathLike
        The CSV file; ``"-"`` reads standard input.
    lengths_path : str or os.PathLike or None, default=None
        A lengths file (:func:`read_lengths`) instead of blank lines.
    encoding : str, default="utf-8"
        The file's text encoding.
    columns : sequence of str or int, or None, default=None
        The data columns, in order: header names or positions counted from 1.
    index_column : str or int or None, default=None
        The index column (a name or a position counted from 1).

    Returns
    -------
    DataFile
        ``X`` (float64, NaN where a cell is missing), ``lengths``, ``columns``, ``index``
        and ``index_name``.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the file cannot be read as text, a data cell is not a number or is infinite,
        rows differ in length, a column named does not exist (or is both data and index),
        there is no row, or the lengths do not add up to the number of rows (or come with
        blank-line separators too).

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.textio import read_table
    >>> _ = Path("prices.csv").write_text(
    ...     "Date,Price,Volume\\n2024-01-02,10.5,300\\n2024-01-03,,310\\n2024-01-04,11.0,NA\\n")
    >>> data = read_table("prices.csv", columns=["Price"])
    >>> data.X.ravel(), data.columns, data.index_name
    (array([10.5,  nan, 11. ]), ['Price'], 'Date')
    >>> data.index[0]
    np.datetime64('2024-01-02T00:00:00.000000000')
    """
    import io

    import pandas as pd

    name = _name(path)
    text = read_text_file(path, encoding)
    text = text[:-1] if text.endswith("\n") else text
    if text and not ("\n\n" in text or "#" in text or "\n " in text or "\n\t" in text
                     or text[0].isspace()):  # no blank or comment line: no pass over lines
        lines = None
        head, _, rest = text.partition("\n")
        n_lines, blank_lines = text.count("\n") + 1, []
        kept = None
    else:
        lines = text.split("\n")
        stripped = [ln.strip() for ln in lines]
        blank_lines = [i for i, s in enumerate(stripped) if not s]
        kept = [i for i, s in enumerate(stripped) if s and s[0] != "#"]
        if not kept:
            raise InvalidInputError(
                f"{name}: empty (no numeric rows); CSV input needs one comma-separated row "
                "per observation")
        head = lines[kept[0]]
    first = [f.strip() for f in next(csv.reader([head]))]
    has_header = not any(_is_number(f) for f in first) and not all(
        f in MISSING_CELLS for f in first)
    header = first if has_header else None
    if kept is None:
        rows = np.arange(1 if has_header else 0, n_lines, dtype=np.int64)
        body = rest if has_header else text
    else:
        rows = np.asarray(kept[1:] if has_header else kept, dtype=np.int64)
        body = "\n".join(lines[i] for i in rows)
    if not len(rows):
        raise InvalidInputError(
            f"{name}: empty (no numeric rows); CSV input needs one comma-separated row per "
            "observation")
    n_cols = len(header) if header is not None else len(first)
    i = _ragged_row(body, len(rows), n_cols)
    if i is not None:
        have = len(next(csv.reader([body.split("\n")[i]])))
        raise InvalidInputError(
            f"{name}, line {rows[i] + 1}: has {have} columns but "
            f"{'the header has' if header is not None else 'earlier rows have'} {n_cols}; "
            "every row needs the same number of comma-separated values")
    # sequences: a blank line (not a comment) between two rows starts a new one
    before = np.searchsorted(np.asarray(blank_lines, dtype=np.int64), rows)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(before) > 0) + 1, [len(rows)]))
    lengths = np.diff(starts).astype(np.int64)

    try:
        frame = pd.read_csv(io.StringIO(body), header=None,
                            names=list(range(n_cols)), skipinitialspace=True,
                            keep_default_na=False, na_values=list(MISSING_CELLS),
                            dtype=None, engine="c", low_memory=False)
    except (ValueError, pd.errors.ParserError) as exc:
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if m is None:
            raise InvalidInputError(f"{name}: not readable as CSV ({exc})") from None
        raise InvalidInputError(
            f"{name}, line {rows[int(m.group(2)) - 1] + 1}: has {m.group(3)} columns but "
            f"{'the header has' if header is not None else 'earlier rows have'} {n_cols}; "
            "every row needs the same number of comma-separated values") from None
    labels = header if header is not None else [f"column {j + 1}" for j in range(n_cols)]

    index_pos = None if index_column is None else _resolve_column(
        index_column, header, n_cols, "index_column", name)
    if columns is not None:
        if isinstance(columns, (str, int)):
            columns = [columns]
        data_pos = [_resolve_column(c, header, n_cols, "columns", name) for c in columns]
        if not data_pos:
            raise InvalidInputError("columns: empty; name at least one data column")
        if len(set(data_pos)) != len(data_pos):
            dup = next(labels[p] for p in data_pos if data_pos.count(p) > 1)
            raise InvalidInputError(f"columns: {dup!r} is named twice; name each column once")
        if index_pos is not None and index_pos in data_pos:
            raise InvalidInputError(
                f"index_column: {labels[index_pos]!r} is also a data column; a column is "
                "either data or the index")
    else:
        data_pos = [j for j in range(n_cols) if j != index_pos]
    index = None
    if index_pos is None:  # a column of dates that is not data: the index
        for j in range(n_cols):
            col = frame[j]
            if j in data_pos and columns is not None:
                continue
            if pd.api.types.is_numeric_dtype(col) or col.isna().all():
                continue
            dates = _as_dates(col.dropna().astype(str))
            if dates is not None and not col.isna().any():
                index_pos, index = j, dates
                if columns is None:
                    data_pos.remove(j)
                break
    elif not pd.api.types.is_numeric_dtype(frame[index_pos]):
        col = frame[index_pos]
        dates = None if col.isna().any() else _as_dates(col.astype(str))
        index = dates if dates is not None else col.astype(str).to_numpy(dtype=object)
    else:
        index = frame[index_pos].to_numpy(dtype=np.float64)
    if not data_pos:
        raise InvalidInputError(
            f"{name}: no data column (the only column, {labels[index_pos]!r}, is the index)")

    X = np.empty((len(frame), len(data_pos)), dtype=np.float64)
    for out_j, j in enumerate(data_pos):
        col = frame[j]
        if pd.api.types.is_numeric_dtype(col):
            X[:, out_j] = col.to_numpy(dtype=np.float64, na_value=np.nan)
            continue
        values = pd.to_numeric(col, errors="coerce")
        wrong = np.flatnonzero(values.isna().to_numpy() & col.notna().to_numpy())
        r = int(wrong[0])
        hint = ("; choose the data columns with --columns (columns= in Python), or pass "
                "--index-column for a column of labels")
        raise InvalidInputError(
            f"{name}, line {rows[r] + 1}, column {j + 1}"
            f"{f' ({header[j]!r})' if header is not None else ''}: {str(col.iloc[r])!r} is "
            f"not a number; CSV data must be numeric (missing cells may be empty or NA){hint}")
    inf = np.isinf(X)
    if inf.any():
        r, j = (int(v) for v in np.argwhere(inf)[0])
        raise InvalidInputError(
            f"{name}, line {rows[r] + 1}, column {data_pos[j] + 1}: infinite value; mark a "
            "missing value with an empty cell or NA")
    if lengths_path is not None:
        if len(lengths) > 1:
            raise InvalidInputError(
                f"{name}: sequences are separated by blank lines and a lengths file "
                f"({lengths_path}) was also given; use one or the other")
        lengths = read_lengths(lengths_path)
        _check_total(lengths, len(X), path, lengths_path)
    return DataFile(X, lengths, columns=[labels[j] for j in data_pos], index=index,
                    index_name=None if index_pos is None else labels[index_pos])


def read_csv(path: str | os.PathLike, lengths_path: str | os.PathLike | None = None,
             encoding: str = "utf-8", *, columns: Sequence[str | int] | None = None,
             index_column: str | int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Read numeric CSV rows into ``(X, lengths)``.

    :func:`read_table` without the index and the column names: a blank line ends a
    sequence, ``#`` lines are comments, a first row with no numeric field is a header, a
    missing cell (empty, ``NA``, ``nan``, ...) is NaN, and a column of dates is an index,
    not data.

    Parameters
    ----------
    path : str or os.PathLike
        The CSV file; ``"-"`` reads standard input.
    lengths_path : str or os.PathLike or None, default=None
        A lengths file (:func:`read_lengths`) instead of blank lines.
    encoding : str, default="utf-8"
        The file's text encoding.
    columns : sequence of str or int, or None, default=None
        The data columns: header names or positions counted from 1 (default: all but the
        index).
    index_column : str or int or None, default=None
        A column of dates or labels that is not data.

    Returns
    -------
    X : ndarray of shape (n_samples, n_columns), dtype float64
        The rows (NaN where a cell is missing).
    lengths : ndarray of shape (n_sequences,), dtype int64
        The length of each sequence.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        As :func:`read_table`.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.textio import read_csv
    >>> _ = Path("rides.csv").write_text("speed,power\\n1,2\\n3,4\\n\\n5,6\\n")
    >>> X, lengths = read_csv("rides.csv")
    >>> X.shape, lengths
    ((3, 2), array([2, 1]))
    """
    data = read_table(path, lengths_path, encoding, columns=columns, index_column=index_column)
    return data.X, data.lengths


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
    """Read a ``.npy`` array into ``(X, lengths)``.

    A 1-D array becomes one column. The dtype is kept (integer symbols stay integers;
    booleans become int64). Read with ``allow_pickle=False``: object arrays are refused.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.npy`` file (:func:`numpy.save`).
    lengths_path : str or os.PathLike or None, default=None
        A lengths file (:func:`read_lengths`); None: one sequence.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The array.
    lengths : ndarray of shape (n_sequences,), dtype int64
        The length of each sequence.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the file is missing, not a single numeric ``.npy`` array, not 1-D or 2-D, empty,
        holds NaN or inf, or the lengths do not add up to its rows.

    Examples
    --------
    >>> import numpy as np
    >>> from pathlib import Path
    >>> from hiddenstate.textio import read_npy
    >>> np.save("symbols.npy", np.array([0, 1, 1, 0, 2]))
    >>> _ = Path("lengths.txt").write_text("2 3\\n")
    >>> X, lengths = read_npy("symbols.npy", "lengths.txt")
    >>> X.shape, lengths
    ((5, 1), array([2, 3]))
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


def read_file(path: str | os.PathLike, fmt: str | None = None, *,
              lengths_path: str | os.PathLike | None = None,
              vocabulary: Vocabulary | None = None, max_size: int | None = None,
              min_count: int = 1, encoding: str = "utf-8",
              columns: Sequence[str | int] | None = None,
              index_column: str | int | None = None) -> DataFile:
    """Read any supported format into a :class:`DataFile`: the one reader of the command line.

    Text: :func:`read_text` (the tokens as written are kept in ``tokens``); CSV:
    :func:`read_table` (column choice, index column, missing cells); npy: :func:`read_npy`.

    Parameters
    ----------
    path : str or os.PathLike
        The data file; ``"-"`` reads standard input (text and CSV).
    fmt : {"text", "csv", "npy"} or None, default=None
        The format; None: from the extension (:func:`infer_format`).
    lengths_path : str or os.PathLike or None, default=None
        A lengths file for CSV and npy input (text has one sequence per line).
    vocabulary : Vocabulary or None, default=None
        Text only: encodes the tokens; None: build one from the file.
    max_size : int or None, default=None
        Text only: the largest vocabulary built, the unknown token included.
    min_count : int, default=1
        Text only: tokens seen fewer times map to the unknown token.
    encoding : str, default="utf-8"
        The text encoding of text and CSV files (see :func:`read_text_file`).
    columns : sequence of str or int, or None, default=None
        CSV only: the data columns (:func:`read_table`).
    index_column : str or int or None, default=None
        CSV only: the index column (:func:`read_table`).

    Returns
    -------
    DataFile
        The observations and what the file says about them.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the format is unknown, a lengths file comes with text, ``columns`` or
        ``index_column`` with anything but CSV, npy is read from stdin, or the reader
        refuses the file.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.textio import read_file
    >>> _ = Path("rides.csv").write_text("when,speed\\n2024-05-01,3.5\\n2024-05-02,\\n")
    >>> data = read_file("rides.csv")
    >>> data.X.ravel(), data.index_name
    (array([3.5, nan]), 'when')
    """
    fmt = infer_format(path) if fmt is None else fmt
    if fmt not in FORMATS:
        raise InvalidInputError(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if fmt != "csv" and (columns is not None or index_column is not None):
        raise InvalidInputError(
            f"columns: only CSV input has named columns, and {_name(path)} is {fmt}; drop "
            "--columns/--index-column")
    if fmt == "text":
        if lengths_path is not None:
            raise InvalidInputError(
                "--lengths: text input has one sequence per line; drop the lengths file"
            )
        seqs = read_text_sequences(path, encoding)
        if vocabulary is None:
            vocabulary = Vocabulary.build(seqs, max_size=max_size, min_count=min_count)
        X, lengths = encode_sequences(seqs, vocabulary)
        return DataFile(X, lengths, vocabulary=vocabulary, tokens=seqs)
    if fmt == "csv":
        return read_table(path, lengths_path, encoding, columns=columns,
                          index_column=index_column)
    if str(path) == "-":
        raise InvalidInputError("-: .npy input cannot come from stdin; pass a file path")
    X, lengths = read_npy(path, lengths_path)
    return DataFile(X, lengths)


def read_data(path: str | os.PathLike, fmt: str | None = None, *,
              lengths_path: str | os.PathLike | None = None,
              vocabulary: Vocabulary | None = None,
              max_size: int | None = None, min_count: int = 1, encoding: str = "utf-8"
              ) -> tuple[np.ndarray, np.ndarray, Vocabulary | None]:
    """Read any supported format into ``(X, lengths, vocabulary)``.

    :func:`read_file` without what the file says beyond the observations.

    Parameters
    ----------
    path : str or os.PathLike
        The data file; ``"-"`` reads standard input (text and CSV).
    fmt : {"text", "csv", "npy"} or None, default=None
        The format; None: from the extension (:func:`infer_format`).
    lengths_path : str or os.PathLike or None, default=None
        A lengths file for CSV and npy input (text has one sequence per line).
    vocabulary : Vocabulary or None, default=None
        Text only: encodes the tokens; None: build one from the file.
    max_size : int or None, default=None
        Text only: the largest vocabulary built, the unknown token included.
    min_count : int, default=1
        Text only: tokens seen fewer times map to the unknown token.
    encoding : str, default="utf-8"
        The text encoding of text and CSV files (see :func:`read_text_file`).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The observations, the sequences one after the other.
    lengths : ndarray of shape (n_sequences,), dtype int64
        The length of each sequence.
    vocabulary : Vocabulary or None
        The vocabulary of text input; None for CSV and npy.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the format is unknown, a lengths file comes with text, npy is read from stdin,
        or the reader refuses the file.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.textio import read_data
    >>> _ = Path("rides.csv").write_text("1,2\\n3,4\\n")
    >>> X, lengths, vocab = read_data("rides.csv")
    >>> X.shape, lengths, vocab
    ((2, 2), array([2]), None)
    """
    data = read_file(path, fmt, lengths_path=lengths_path, vocabulary=vocabulary,
                     max_size=max_size, min_count=min_count, encoding=encoding)
    return data.X, data.lengths, data.vocabulary


def iter_rows_csv(X: np.ndarray) -> Iterator[str]:
    """CSV lines for the rows of a 2-D numeric array (``repr`` precision)."""
    X = np.asarray(X)
    for row in X.reshape(len(X), -1):
        yield ",".join(repr(v.item()) for v in row)
