"""The HSMM's batch modes on a Dask cluster (:func:`hiddenstate.distributed.fit`): the
statistics of the partitions, merged, give the local fit's numbers to 1e-12 relative."""

from __future__ import annotations

import numpy as np
import pytest

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError

pytest.importorskip("distributed", reason="Dask's distributed scheduler is not installed "
                                          "(the dask extra)")
hsd = pytest.importorskip("hiddenstate.distributed")

RTOL = 1e-12


@pytest.fixture(scope="module")
def client():
    with hsd.local_client(2) as c:
        yield c


def _data():
    m = hs.HSMM(3, duration="poisson", emission="gaussian", max_duration=30)
    m.startprob_ = [0.4, 0.3, 0.3]
    m.transmat_ = [[0.0, 0.7, 0.3], [0.5, 0.0, 0.5], [0.6, 0.4, 0.0]]
    m.means_, m.covars_ = [[-2.0], [0.0], [2.0]], [[1.0], [1.0], [1.0]]
    m.duration_rates_ = [6.0, 3.0, 9.0]
    lengths = np.random.default_rng(0).integers(20, 60, size=10)
    X = np.concatenate([m.sample(int(n), random_state=i)[0] for i, n in enumerate(lengths)])
    return X, lengths


@pytest.mark.parametrize(("duration", "learn"), [
    ("nonparametric", "em"), ("poisson", "vb"), ("negative-binomial", "map"),
    ("geometric", "vt"), ("nonparametric", "kvt")])
def test_distributed_fit_equals_the_local_fit(client, duration, learn):
    X, lengths = _data()
    kw = {"n_states": 3, "duration": duration, "emission": "gaussian", "max_duration": 30,
          "learn": learn, "k_best": 2, "n_iter": 5, "tol": -np.inf, "random_state": 3}
    local = hs.HSMM(**kw).fit(X, lengths)
    remote = hsd.fit(hs.HSMM(**kw), X, client, lengths=lengths, n_partitions=3)
    np.testing.assert_allclose(remote.monitor_.history, local.monitor_.history, rtol=RTOL,
                               atol=0)
    for name, arr in local.learned_arrays().items():
        np.testing.assert_allclose(remote.learned_arrays()[name], arr, rtol=RTOL, atol=1e-300,
                                   err_msg=name)


def test_the_distributed_fit_needs_max_duration(client):
    X, lengths = _data()
    with pytest.raises(InvalidInputError, match="max_duration"):
        hsd.fit(hs.HSMM(3, emission="gaussian"), X, client, lengths=lengths)
