"""Helpers of the hiddenstate.lm tests: a vocabulary and random sentence streams."""

from __future__ import annotations

import numpy as np

from hiddenstate.lm.data import EOS
from hiddenstate.textio import Vocabulary


def vocab(n_words: int) -> Vocabulary:
    """``<unk>`` (id 0), ``<eos>`` (id 1) and ``w0 .. w{n_words - 3}``."""
    return Vocabulary(["<unk>", EOS] + [f"w{i}" for i in range(n_words - 2)])


def stream(rng, n_words: int, n_sent: int, max_len: int = 7) -> np.ndarray:
    """``n_sent`` sentences of 1 .. ``max_len - 1`` random words (ids >= 2), each followed
    by ``<eos>`` (id 1)."""
    out = []
    for _ in range(n_sent):
        out += list(rng.integers(2, n_words, size=rng.integers(1, max_len))) + [1]
    return np.array(out, dtype=np.int64)
