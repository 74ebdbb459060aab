"""What a Python list of lists means to ``hs.HMM`` (issue 21).

``hs.HMM(2).fit([["the", "cat"], ["a", "dog", "ran"]])`` raised NumPy's "inhomogeneous
shape" error, and ``hs.HMM(2).fit([[0, 1, 2], [1, 2, 0]])`` silently became one 2-step
sequence of 3 features. Arrays and nested lists are rows ``(n_samples, n_features)``, as in
NumPy, scikit-learn and hmmlearn; the inputs that would be misread as rows are refused with
a message that shows the spelling that works, and these tests run that spelling."""

from __future__ import annotations

import re

import numpy as np
import pytest

import hiddenstate as hs
from hiddenstate import textio
from hiddenstate.errors import InvalidInputError


def _error(X, **kw) -> str:
    with pytest.raises(InvalidInputError) as info:
        hs.HMM(2, random_state=0, n_iter=5, **kw).fit(X)
    return str(info.value)


def test_words_point_to_the_vocabulary_and_its_advice_works():
    sentences = [["the", "cat"], ["a", "dog", "ran"], ["the", "dog"]]
    for X in (sentences, sentences[0], np.array(["the", "cat"])):
        msg = _error(X)
        assert msg.startswith("X: holds words (strings such as 'the')")
        assert "hiddenstate.textio.Vocabulary.build(sentences)" in msg
    vocab = textio.Vocabulary.build(sentences)
    X, lengths = textio.encode_sequences(sentences, vocab)
    model = hs.HMM(2, n_features=len(vocab), random_state=0, n_iter=5).fit(X, lengths)
    assert model.emissionprob_.shape == (2, len(vocab))


def _separately(model, seqs) -> float:
    """The log-likelihood of each sequence scored on its own, summed."""
    return sum(model.score(np.asarray(s).reshape(len(s), -1)) for s in seqs)


def test_a_ragged_list_of_sequences_is_refused_and_the_advice_scores_each_sequence():
    seqs = [[0, 1, 2, 1], [1, 2], [2, 0, 0]]
    for X in (seqs, [np.array(s) for s in seqs]):
        msg = _error(X)
        assert "a list of 3 sequences of different lengths (4, 2, 3)" in msg
        assert "np.concatenate" in msg and "lengths = [len(s) for s in seqs]" in msg
    # the spelling of the message: the sequences one after another, with their lengths
    X = np.concatenate([np.asarray(s).reshape(len(s), -1) for s in seqs])
    lengths = [len(s) for s in seqs]
    model = hs.HMM(2, random_state=0, n_iter=5).fit(X, lengths)
    assert model.score(X, lengths) == pytest.approx(_separately(model, seqs), rel=1e-12)
    # a list of 2-D sequences too, even of equal shapes
    msg = _error([np.zeros((4, 2)), np.ones((4, 2))], emission="gaussian")
    assert "a list of 2 arrays of 2 dimensions is a list of sequences" in msg


def test_equal_length_integer_lists_show_both_readings_and_both_work():
    X = [[0, 1, 2], [1, 2, 0]]
    msg = _error(X)
    assert msg.startswith("X: a list of 2 lists of 3 integers is ambiguous")
    both = re.findall(r"fit\(([^;]*?)\)(?:;| \(or)", msg)
    assert both == ["np.concatenate(X)[:, None], lengths=[3] * 2", "np.asarray(X)"]
    # as two sequences of three symbols
    seqs_model = hs.HMM(2, random_state=0, n_iter=5).fit(np.concatenate(X)[:, None],
                                                          lengths=[3] * 2)
    assert seqs_model.n_features_ == 3
    total = seqs_model.score(np.concatenate(X)[:, None], [3, 3])
    assert total == pytest.approx(_separately(seqs_model, X), rel=1e-12)
    # as two observations of three categorical features (what the list used to mean)
    rows_model = hs.HMM(2, random_state=0, n_iter=5).fit(np.asarray(X))
    assert rows_model.emissionprob_.shape == (3, 2, 3)
    # given lengths, or features declared, the rows are meant
    hs.HMM(2, random_state=0, n_iter=5).fit(X, lengths=[2])
    hs.HMM(2, random_state=0, n_iter=5, n_features=(3, 3, 3)).fit(X)
    # a model of one feature scoring such a list: the same message
    with pytest.raises(InvalidInputError, match="ambiguous"):
        seqs_model.score(X)


def test_what_still_reads_as_rows():
    """hmmlearn's column of symbols and rows of real numbers keep their meaning."""
    col = hs.HMM(2, random_state=0, n_iter=5).fit([[0], [1], [2], [1]])
    arr = hs.HMM(2, random_state=0, n_iter=5).fit(np.array([[0], [1], [2], [1]]))
    assert col.score([[0], [1], [2], [1]]) == arr.score(np.array([[0], [1], [2], [1]]))
    rows = [[0.5, 1.0], [2.0, 3.0], [1.0, 1.5], [2.5, 2.0]]
    g = hs.HMM(2, emission="gaussian", random_state=0, n_iter=5).fit(rows)
    assert g.n_features_ == 2
    assert g.score(rows) == g.score(np.array(rows))
    flat = hs.HMM(2, random_state=0, n_iter=5).fit([0, 1, 2, 1])
    assert flat.score([0, 1, 2, 1]) == col.score([[0], [1], [2], [1]])
