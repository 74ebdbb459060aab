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
    """int64 token ids that remember the :class:`~hiddenstate.textio.Vocabulary` that
    encoded them (``.vocabulary``), so a model can refuse ids of another vocabulary
    (:func:`read_lm_file` returns them). Slices keep the vocabulary; arithmetic and
    comparisons give plain arrays."""

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
    """Token ids of a file (one ``<eos>`` after every line; :class:`TokenIds`, which know
    their vocabulary) and the vocabulary (built from this file when ``vocabulary`` is
    None); ``encoding``: the file's text encoding."""
    lines = _lines(path, encoding)
    if vocabulary is None:
        vocabulary = Vocabulary.build(lines)
    if EOS not in vocabulary:
        raise InvalidInputError(f"vocabulary: has no {EOS!r} token; build it with read_lm_file")
    ids = vocabulary.encode(t for line in lines for t in line)
    return TokenIds(ids, vocabulary), vocabulary


def load_corpus(name: str, root="../shared/data") -> dict:
    """``{"train", "valid", "test": ids, "vocabulary": Vocabulary}`` of ``"ptb"`` or
    ``"wikitext-2"`` under ``root``."""
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
    """Split ``ids`` into at most ``n_streams`` contiguous streams, each starting after an
    ``<eos>`` (so each starts a sentence and the streams are independent), of nearly equal
    length; returns ``(tokens (B, L), valid (B, L))``, padded at the end with ``eos_id``
    and ``valid`` False."""
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
