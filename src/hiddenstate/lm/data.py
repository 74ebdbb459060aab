"""Language-modelling text: the Mikolov PTB and WikiText-2 files, and sentence streams.

Token policy (the Mikolov / Merity convention, also hmm-lm's): every line of a file is
whitespace-split and followed by one ``<eos>`` token, blank lines included (WikiText-2 has
them), so PTB train has 929,589 tokens. The vocabulary is built from the training file
(:class:`~hiddenstate.textio.Vocabulary`: id 0 is ``<unk>``, the rest by decreasing count);
the files already write ``<unk>`` for rare words, and a validation or test word that is not
in the training vocabulary (there are none in PTB or WikiText-2) maps to ``<unk>``. Every
token, ``<eos>`` included, is predicted and counted in the perplexity.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InvalidInputError
from ..textio import Vocabulary, read_text_file

__all__ = ["EOS", "CORPORA", "TokenIds", "load_corpus", "read_lm_file", "sentence_streams",
           "vocabulary_difference"]

EOS = "<eos>"
#: file names of the corpora under ``shared/data``
CORPORA = {
    "ptb": ("ptb", "ptb.{}.txt"),
    "wikitext-2": ("wikitext-2", "wiki.{}.tokens"),
}


class TokenIds(np.ndarray):
    r"""Token ids (int64) that remember the vocabulary that encoded them.

    ``.vocabulary`` is the :class:`~hiddenstate.textio.Vocabulary`, so a model can refuse
    ids of another vocabulary (:func:`read_lm_file` returns them). Slices keep the
    vocabulary; arithmetic and comparisons give plain arrays.

    Parameters
    ----------
    ids : array-like of int
        The token ids.
    vocabulary : hiddenstate.textio.Vocabulary or None
        The vocabulary that encoded them.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.lm import read_lm_file
    >>> _ = Path("train.txt").write_text("the cat sat\na dog ran\n" * 20)
    >>> ids, vocabulary = read_lm_file("train.txt")
    >>> type(ids).__name__, ids[:3].vocabulary is vocabulary
    ('TokenIds', True)
    >>> vocabulary.decode(ids[:4])
    ['the', 'cat', 'sat', '<eos>']
    """

    vocabulary: Vocabulary | None

    def __new__(cls, ids, vocabulary: Vocabulary | None) -> TokenIds:
        obj = np.asarray(ids, dtype=np.int64).view(cls)
        obj.vocabulary = vocabulary
        return obj

    def __array_finalize__(self, obj) -> None:
        self.vocabulary = getattr(obj, "vocabulary", None)

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        arr = np.asarray(arr)
        return arr[()] if return_scalar else arr


def vocabulary_difference(theirs: Vocabulary, ours: Vocabulary) -> str | None:
    """None when the two vocabularies give every word the same id, else a sentence saying
    how ``theirs`` differs from ``ours`` (for error messages)."""
    if theirs is ours or list(theirs.tokens) == list(ours.tokens):
        return None
    a, b = set(theirs.tokens), set(ours.tokens)
    extra, missing = sorted(a - b), sorted(b - a)
    if not extra and not missing:
        return (f"the same {len(a)} words with other ids (a vocabulary built from another "
                "text)")
    parts = [f"{len(theirs)} words"]
    if extra:
        parts.append(f"{len(extra)} not in the model's vocabulary (e.g. "
                     f"{', '.join(repr(w) for w in extra[:3])})")
    if missing:
        parts.append(f"{len(missing)} of the model's {len(ours)} words missing (e.g. "
                     f"{', '.join(repr(w) for w in missing[:3])})")
    return ", ".join(parts)


def _lines(path, encoding: str = "utf-8") -> list[list[str]]:
    text = read_text_file(path, encoding)
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return [line.split() + [EOS] for line in lines]


def read_lm_file(path, vocabulary: Vocabulary | None = None, encoding: str = "utf-8"
                 ) -> tuple[TokenIds, Vocabulary]:
    r"""Read a text file as token ids, one ``<eos>`` after every line.

    Parameters
    ----------
    path : str or os.PathLike
        The file: one sentence per line, tokens separated by whitespace.
    vocabulary : hiddenstate.textio.Vocabulary or None, default=None
        The vocabulary to encode with (words it lacks become ``<unk>``); None: built from
        this file.
    encoding : str, default="utf-8"
        The file's text encoding.

    Returns
    -------
    ids : TokenIds
        The token ids (they know their vocabulary).
    vocabulary : hiddenstate.textio.Vocabulary
        The vocabulary.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the vocabulary has no ``<eos>``, or the file cannot be read in ``encoding``.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.lm import read_lm_file
    >>> _ = Path("train.txt").write_text("the cat sat\na dog ran\n")
    >>> ids, vocabulary = read_lm_file("train.txt")
    >>> vocabulary.decode(ids)
    ['the', 'cat', 'sat', '<eos>', 'a', 'dog', 'ran', '<eos>']
    """
    lines = _lines(path, encoding)
    if vocabulary is None:
        vocabulary = Vocabulary.build(lines)
    if EOS not in vocabulary:
        raise InvalidInputError(f"vocabulary: has no {EOS!r} token; build it with read_lm_file")
    ids = vocabulary.encode(t for line in lines for t in line)
    return TokenIds(ids, vocabulary), vocabulary


def load_corpus(name: str, root="../shared/data") -> dict:
    """Read the train, validation and test splits of a corpus.

    ``"ptb"`` (``ptb/ptb.{train,valid,test}.txt``) or ``"wikitext-2"``
    (``wikitext-2/wiki.{train,valid,test}.tokens``) under ``root``; the vocabulary is built
    from the training split.

    Parameters
    ----------
    name : {"ptb", "wikitext-2"}
        The corpus.
    root : str or os.PathLike, default="../shared/data"
        The folder that holds the corpora.

    Returns
    -------
    dict
        ``{"train", "valid", "test": TokenIds, "vocabulary": Vocabulary}``.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``name`` is unknown or the corpus is not under ``root``.

    Examples
    --------
    >>> from hiddenstate.lm import load_corpus
    >>> corpus = load_corpus("ptb", root="../shared/data")  # doctest: +SKIP
    >>> len(corpus["vocabulary"])  # doctest: +SKIP
    10000
    """
    if name not in CORPORA:
        raise InvalidInputError(f"name: expected one of {sorted(CORPORA)}, got {name!r}")
    folder, pattern = CORPORA[name]
    base = Path(root) / folder
    if not base.is_dir():
        raise InvalidInputError(f"root: {base} does not exist; pass the shared data folder")
    train, vocab = read_lm_file(base / pattern.format("train"))
    out = {"train": train, "vocabulary": vocab}
    for split in ("valid", "test"):
        out[split], _ = read_lm_file(base / pattern.format(split), vocab)
    return out


def sentence_streams(ids: np.ndarray, eos_id: int, n_streams: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Split a token-id stream into streams that each start a sentence.

    At most ``n_streams`` contiguous streams, each starting after an ``<eos>`` (so the streams
    are independent), of nearly equal length, padded at the end with ``eos_id``.

    Parameters
    ----------
    ids : array-like of int
        The token ids.
    eos_id : int
        The id of ``<eos>``.
    n_streams : int
        The largest number of streams.

    Returns
    -------
    tokens : ndarray of int64 of shape (n_streams, length)
        The streams.
    valid : ndarray of bool of shape (n_streams, length)
        False on the padding.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``ids`` is not a non-empty 1-D array.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.lm import sentence_streams
    >>> tokens, valid = sentence_streams(np.array([5, 1, 0, 6, 0, 7, 8, 0]), eos_id=0,
    ...                                  n_streams=2)
    >>> tokens
    array([[5, 1, 0, 6, 0],
           [7, 8, 0, 0, 0]])
    >>> valid.sum(axis=1)
    array([5, 3])
    """
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 1 or len(ids) == 0:
        raise InvalidInputError("X: expected a non-empty 1-D array of token ids")
    starts = np.concatenate(([0], np.flatnonzero(ids[:-1] == eos_id) + 1))
    targets = np.arange(1, n_streams) * len(ids) / n_streams
    cut = np.unique(starts[np.clip(np.searchsorted(starts, targets), 0, len(starts) - 1)])
    bounds = np.unique(np.concatenate(([0], cut, [len(ids)])))
    B = len(bounds) - 1
    L = int(np.diff(bounds).max())
    tokens = np.full((B, L), eos_id, dtype=np.int64)
    valid = np.zeros((B, L), dtype=bool)
    for b in range(B):
        n = bounds[b + 1] - bounds[b]
        tokens[b, :n] = ids[bounds[b]:bounds[b + 1]]
        valid[b, :n] = True
    return tokens, valid
