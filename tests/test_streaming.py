"""Streaming learners through the estimator: one pass, partial_fit, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError
from hiddenstate.learn.online import ONLINE_MODES


def _teacher():
    t = hs.HMM(2, init_params="")
    t.startprob_ = np.array([0.6, 0.4])
    t.transmat_ = np.array([[0.9, 0.1], [0.2, 0.8]])
    t.emissionprob_ = np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]])
    t.n_features_ = 3
    return t


def _stream(mode):
    length = 3 if mode in ("bona", "mpa") else 40  # BOnA/MPA enumerate paths
    X, _ = _teacher().sample(length * 60, random_state=np.random.default_rng(1))
    return X, [length] * 60, length


@pytest.mark.parametrize("mode", ONLINE_MODES)
def test_stream_in_pieces_and_through_a_checkpoint_equals_one_pass(tmp_path, mode):
    X, lengths, length = _stream(mode)
    whole = hs.HMM(2, learn=mode, random_state=0).fit(X, lengths)
    cut = 23 * length
    part = hs.HMM(2, learn=mode, random_state=0)
    part.partial_fit(X[:cut], lengths[:23])
    part.save(tmp_path / "ckpt")
    resumed = hs.load(tmp_path / "ckpt")
    resumed.partial_fit(X[cut:], lengths[23:])
    for attr in ("startprob_", "transmat_", "emissionprob_"):
        assert np.array_equal(getattr(resumed, attr), getattr(whole, attr)), attr
    # learning happened: the stream moved the parameters off their initial values
    init = hs.HMM(2, learn=mode, random_state=0).partial_fit(X[:length], lengths[:1])
    assert not np.array_equal(whole.transmat_, init.transmat_) or \
        not np.array_equal(whole.emissionprob_, init.emissionprob_)


def test_online_em_cut_mid_sequence_continues_exactly(tmp_path):
    X, lengths, _ = _stream("online-em")
    whole = hs.HMM(2, learn="online-em", random_state=0).fit(X, lengths)
    cut = 40 * 10 + 17  # inside the 11th sequence
    a = hs.HMM(2, learn="online-em", random_state=0)
    a.partial_fit(X[:cut], [40] * 10 + [17])
    a.save(tmp_path / "mid")
    b = hs.load(tmp_path / "mid")
    b.partial_fit(X[cut:], [23] + [40] * 49, continues=True)
    assert np.array_equal(b.transmat_, whole.transmat_)
    assert np.array_equal(b.emissionprob_, whole.emissionprob_)


def test_streaming_errors_name_the_argument():
    X = np.array([[0], [1], [2], [1]])
    with pytest.raises(InvalidInputError, match="partial_fit"):
        hs.HMM(2).partial_fit(X)
    with pytest.raises(InvalidInputError, match="n_init"):
        hs.HMM(2, learn="bwo", n_init=3).fit(X)
    with pytest.raises(InvalidInputError, match="learner_options"):
        hs.HMM(2, learner_options={"eta": 0.1}).fit(X)
    with pytest.raises(InvalidInputError, match="continues"):
        hs.HMM(2, learn="online-em").partial_fit(X, continues=True)
    m = hs.HMM(2, learn="bwo", random_state=0).partial_fit(X, [2, 2])
    with pytest.raises(InvalidInputError, match="continues"):
        m.partial_fit(X, [2, 2], continues=True)
