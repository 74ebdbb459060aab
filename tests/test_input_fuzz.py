"""Property tests: whatever a user passes, fit/score either work and return finite numbers or
raise a HiddenStateError subclass (never a NaN, a numba traceback or a bare numpy error)."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hiddenstate as hs
from hiddenstate.errors import DegenerateStateWarning, HiddenStateError

_floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
_arrays = st.one_of(
    hnp.arrays(np.int64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=12),
               elements=st.integers(-3, 8)),
    hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=12),
               elements=_floats),
)
_lengths = st.one_of(st.none(), st.lists(st.integers(-2, 12), min_size=0, max_size=4))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(X=_arrays, lengths=_lengths, emission=st.sampled_from(["categorical", "gaussian",
                                                             "poisson"]))
def test_fit_either_works_or_raises_hiddenstate_error(X, lengths, emission):
    model = hs.HMM(2, emission=emission, n_iter=3, random_state=0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateStateWarning)
            model.fit(X, lengths)
    except HiddenStateError:
        return
    assert np.all(np.isfinite(model.transmat_))
    assert np.all(np.isfinite(model.startprob_))
    assert np.isfinite(model.score(X, lengths))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(X=_arrays, lengths=_lengths, learn=st.sampled_from(["online-em", "em", "vt"]),
       continued=st.booleans())
def test_props_either_works_or_raises_hiddenstate_error(X, lengths, learn, continued):
    """PROPS with a history-dependent source over 6 symbols: any data and lengths either
    learn finite parameters (streaming or batch, continued or not) or raise a
    HiddenStateError."""
    from hiddenstate.sources import CallableSource

    def f(history):
        p = np.full(6, 0.1)
        p[(history[-1] + 1) % 6 if len(history) else 0] = 0.5
        return p

    model = hs.PROPS([CallableSource(f, 6)], n_perturbation_states=1, learn=learn, n_iter=3,
                     random_state=0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateStateWarning)
            model.fit(X, lengths)
            if continued and learn == "online-em":
                model.partial_fit(X, lengths, continues=True)
    except HiddenStateError:
        return
    assert np.all(np.isfinite(model.transmat_)) and np.all(np.isfinite(model.emissionprob_))
    assert np.isfinite(model.score(X, lengths))
    assert np.all(np.isfinite(model.token_scores(X, lengths).log_prob))
