"""hiddenstate.distributed on a LocalCluster (2 worker processes): every batch mode and
family gives the local fit's numbers to 1e-12 relative whatever the partitioning; a worker
killed mid-fit changes nothing; Parquet, file lists and bags; a bad partition raises the
local error naming it."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

import hiddenstate as hs
from hiddenstate import cli
from hiddenstate.errors import InvalidInputError
from hiddenstate.learn import merge_statistics

distributed = pytest.importorskip(
    "distributed", reason="Dask's distributed scheduler is not installed (the dask extra)")
hsd = pytest.importorskip("hiddenstate.distributed")

RTOL = 1e-12
N_SEQ, T = 12, 40


@pytest.fixture(scope="module")
def client():
    with hsd.local_client(2) as c:
        yield c


def _data(emission: str, seed: int = 0):
    """Sequences from a sticky 3-state HMM: ``(X, lengths)``."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(T // 2, 2 * T, size=N_SEQ)
    gen = hs.HMM(3, emission=emission, random_state=seed, init_params="")
    gen.startprob_ = np.full(3, 1 / 3)
    gen.transmat_ = 0.8 * np.eye(3) + 0.2 / 3
    if emission == "categorical":
        gen.emissionprob_ = rng.dirichlet(np.ones(6), size=3)
    elif emission == "gmm":
        gen = hs.HMM(3, emission="gmm", n_mix=2, random_state=seed, init_params="")
        gen.startprob_, gen.transmat_ = np.full(3, 1 / 3), 0.8 * np.eye(3) + 0.2 / 3
        gen.weights_ = np.array([[0.6, 0.4], [0.5, 0.5], [0.3, 0.7]])
        gen.means_ = np.array([[[-3.0, 0.0], [-1.5, 1.0]], [[0.0, 2.0], [1.0, 0.5]],
                               [[3.0, -1.0], [2.0, -2.5]]])
        gen.covars_ = np.full((3, 2, 2), 0.4)
    elif emission == "gaussian":
        gen.means_ = np.array([[-2.0, 0.0], [0.0, 1.5], [2.5, -1.0]])
        gen.covars_ = np.full((3, 2), 0.5)
    else:
        gen.lambdas_ = np.array([[1.0, 4.0], [6.0, 1.5], [12.0, 8.0]])
    seqs = [gen.sample(int(n), random_state=seed + 1 + i)[0] for i, n in enumerate(lengths)]
    return np.concatenate(seqs), lengths


def _model(emission: str, learn: str, **kw):
    kw = {"n_iter": 6, "tol": -np.inf, "random_state": 7, **kw}
    if learn == "kvt":
        kw["k_best"] = 2
    if learn in ("vt", "kvt"):
        kw["tol"] = 1e-4
    if emission in ("gaussian", "gmm"):
        kw["covariance_type"] = kw.get("covariance_type", "diag")
    if emission == "gmm":
        kw["n_mix"] = 2
    return hs.HMM(3, emission=emission, learn=learn, **kw)


def _assert_same(a, b, rtol=RTOL):
    np.testing.assert_allclose(a.monitor_.history, b.monitor_.history, rtol=rtol, atol=0)
    assert a.monitor_.converged == b.monitor_.converged
    for name, arr in a.learned_arrays().items():
        np.testing.assert_allclose(b.learned_arrays()[name], arr, rtol=rtol, atol=0,
                                   err_msg=name)


#: every mode and every family in the default run; the whole grid with -m slow
_QUICK = [("em", "categorical"), ("map", "gaussian"), ("vb", "poisson"), ("vt", "gaussian"),
          ("kvt", "categorical")]
_GRID = [pytest.param(learn, emission, marks=() if (learn, emission) in _QUICK
                      else pytest.mark.slow)
         for learn in ("em", "map", "vb", "vt", "kvt")
         for emission in ("categorical", "gaussian", "poisson")]


@pytest.mark.parametrize(("learn", "emission"), _GRID)
def test_same_as_local_fit_for_every_mode_and_family(client, emission, learn):
    X, lengths = _data(emission)
    local = _model(emission, learn, n_init=2).fit(X, lengths)
    dist = hsd.fit(_model(emission, learn, n_init=2), X, client, lengths=lengths,
                   n_partitions=3)
    _assert_same(local, dist)


@pytest.mark.parametrize("learn", ["em", "map", "vb", "vt", "kvt"])
def test_gmm_matches_local_fit_in_every_mode(client, learn):
    """A Gaussian mixture's statistics are taken about per-partition reference points:
    without its own merge_statistics the partitions' sums were added as they were (a
    log-likelihood history 11.7x off with 2 partitions, Viterbi training stopped after 2
    iterations)."""
    X, lengths = _data("gmm", 5)
    local = _model("gmm", learn).fit(X, lengths)
    dist = hsd.fit(_model("gmm", learn), X, client, lengths=lengths, n_partitions=2)
    _assert_same(local, dist)
    assert len(dist.monitor_.history) > 2


@pytest.mark.parametrize(("emission", "learn"), [
    ("poisson", "em"), ("poisson", "vb"), ("gaussian", "vb"),
    pytest.param("gaussian", "em", marks=pytest.mark.slow)])
def test_missing_values_in_some_partitions_match_local_fit(client, emission, learn):
    """Partitions with and without missing values: the merged ``seen`` counts are the
    whole data's (a partition without missing counts has none of its own: a KeyError
    'seen' before every family merged its own statistics), and VB's data-mean priors
    average each column over its observed entries (the column sums included NaN, so the
    prior mean of that column became 0: ELBO history 2e-3 off for Poisson, 6.8e-3 for
    Gaussian)."""
    X, lengths = _data(emission, 6)
    X = X.astype(np.float64)
    first = int(lengths[:3].sum())
    X[:first:4, 0] = np.nan
    local = _model(emission, learn).fit(X, lengths)
    dist = hsd.fit(_model(emission, learn), X, client, lengths=lengths, n_partitions=3)
    _assert_same(local, dist)


def test_several_categorical_features_with_different_alphabets_per_partition(client):
    """Each partition sees part of each feature's alphabet ((5, 2) and (2, 6)): the fit's
    alphabets are the largest per feature, (5, 6) (max() over the tuples picked (5, 2) and
    the second partition failed with a symbol out of range)."""
    rng = np.random.default_rng(11)
    a = np.column_stack([rng.integers(0, 5, 150), rng.integers(0, 2, 150)])
    b = np.column_stack([rng.integers(0, 2, 120), rng.integers(0, 6, 120)])
    kw = {"n_iter": 5, "tol": -np.inf, "random_state": 3}
    local = hs.HMM(2, emission="categorical", **kw).fit(np.concatenate([a, b]), [150, 120])
    dist = hsd.fit(hs.HMM(2, emission="categorical", **kw), [a, b], client)
    assert dist.emissionprob_.shape == (2, 2, 6)
    _assert_same(local, dist)


@pytest.mark.parametrize("covariance_type", [
    "full", pytest.param("tied", marks=pytest.mark.slow),
    pytest.param("spherical", marks=pytest.mark.slow)])
def test_gaussian_covariance_types_match_local_fit(client, covariance_type):
    X, lengths = _data("gaussian", 1)
    X = X + 1e6  # far from the origin: the merged statistics must keep their digits
    local = _model("gaussian", "map", covariance_type=covariance_type).fit(X, lengths)
    dist = hsd.fit(_model("gaussian", "map", covariance_type=covariance_type), X, client,
                   lengths=lengths, n_partitions=4)
    _assert_same(local, dist, rtol=1e-10 if covariance_type == "spherical" else RTOL)


@pytest.mark.parametrize("n_partitions", [
    1, 5, pytest.param(2, marks=pytest.mark.slow), pytest.param(N_SEQ, marks=pytest.mark.slow)])
def test_any_number_of_partitions_gives_the_local_fit(client, n_partitions):
    X, lengths = _data("categorical", 2)
    local = _model("categorical", "em", n_iter=10).fit(X, lengths)
    dist = hsd.fit(_model("categorical", "em", n_iter=10), X, client, lengths=lengths,
                   n_partitions=n_partitions)
    _assert_same(local, dist)


def test_merged_gaussian_statistics_are_those_of_the_whole_data():
    """Statistics of two halves merged give the M-step of the whole (about different
    reference points: the halves' medians differ by far more than their spread)."""
    rng = np.random.default_rng(3)
    for ct in ("diag", "full"):
        fam = hs.HMM(2, emission="gaussian", covariance_type=ct).emission_family(3)
        X = rng.normal(size=(200, 3)) * 0.01 + 1e4
        X[100:] += 5.0
        post = rng.dirichlet(np.ones(2), size=200)
        whole = fam.statistics(X, post)
        a, b = fam.statistics(X[:100], post[:100]), fam.statistics(X[100:], post[100:])
        merged = merge_statistics({"e": fam}, {"e": a}, {"e": b})["e"]
        params = fam.initialize(X, np.random.default_rng(0))
        got, _ = fam.mstep(params, merged, "mc")
        want, _ = fam.mstep(params, whole, "mc")
        for key in want:
            np.testing.assert_allclose(got[key], want[key], rtol=1e-9, atol=0, err_msg=key)


def _kill_one_worker(client) -> int:
    pids = client.run(os.getpid)
    victim = sorted(pids.values())[0]
    os.kill(victim, signal.SIGKILL)
    return victim


def test_a_worker_killed_mid_fit_changes_nothing(client):
    X, lengths = _data("gaussian", 4)
    clean = hsd.fit(_model("gaussian", "em", n_iter=8), X, client, lengths=lengths,
                    n_partitions=4)
    killed = []

    def kill_at_3(iteration, objective):
        if iteration == 3 and not killed:
            killed.append(_kill_one_worker(client))

    hurt = hsd.fit(_model("gaussian", "em", n_iter=8), X, client, lengths=lengths,
                   n_partitions=4, callback=kill_at_3)
    assert killed and killed[0] not in client.run(os.getpid).values()
    np.testing.assert_array_equal(hurt.monitor_.history, clean.monitor_.history)
    for name, arr in clean.learned_arrays().items():
        np.testing.assert_array_equal(hurt.learned_arrays()[name], arr)


def _split(X, lengths, cuts):
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    return [(X[bounds[a]:bounds[b]], lengths[a:b]) for a, b in
            zip(cuts[:-1], cuts[1:], strict=True)]


def test_parquet_files_with_a_sequence_id_column(client, tmp_path):
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed")
    X, lengths = _data("poisson", 5)
    paths = []
    for i, (Xp, lp) in enumerate(_split(X, lengths, [0, 5, 6, N_SEQ])):
        ids = np.repeat(np.arange(len(lp)) + 100 * i, lp)
        table = pa.table({"sequence": ids, "a": Xp[:, 0], "b": Xp[:, 1]})
        paths.append(tmp_path / f"part-{i}.parquet")
        pq.write_table(table, paths[-1])
    local = _model("poisson", "vb").fit(X, lengths)
    dist = hsd.fit(_model("poisson", "vb"), paths, client)
    _assert_same(local, dist)
    # rows of one sequence split in two runs: the error names the file
    bad = pa.table({"sequence": [0, 0, 1, 0], "a": [1.0, 2, 3, 4], "b": [0.0, 1, 2, 3]})
    pq.write_table(bad, tmp_path / "bad.parquet")
    with pytest.raises(InvalidInputError, match=r"bad\.parquet.*not contiguous"):
        hsd.fit(_model("poisson", "em"), [paths[0], tmp_path / "bad.parquet"], client)


def test_npy_file_list_and_dask_bag(client, tmp_path):
    db = pytest.importorskip("dask.bag", reason="dask.bag is not installed")
    X, lengths = _data("categorical", 6)
    seqs = [x for x, _ in _split(X, lengths, np.arange(N_SEQ + 1))]
    paths = []
    for i, s in enumerate(seqs):
        paths.append(tmp_path / f"seq-{i}.npy")
        np.save(paths[-1], s)
    local = _model("categorical", "map").fit(X, lengths)
    _assert_same(local, hsd.fit(_model("categorical", "map"), paths, client))
    bag = db.from_sequence(seqs, npartitions=3)
    _assert_same(local, hsd.fit(_model("categorical", "map"), bag, client))


def test_a_bad_partition_raises_the_local_error_naming_it(client, tmp_path):
    X, lengths = _data("categorical", 8)
    parts = _split(X, lengths, [0, 4, 8, N_SEQ])
    bad = parts[1][0].copy()
    bad[3] = -2
    with pytest.raises(InvalidInputError) as local:
        _model("categorical", "em").fit(bad, parts[1][1])
    paths = []
    for i, (Xp, _) in enumerate(parts):
        paths.append(tmp_path / f"p{i}.npy")
        np.save(paths[-1], bad if i == 1 else Xp)
    with pytest.raises(InvalidInputError) as remote:
        hsd.fit(_model("categorical", "em"), paths, client)
    assert str(remote.value) == f"file {paths[1]}: {local.value}"
    arrays = [bad if i == 1 else Xp for i, (Xp, _) in enumerate(parts)]
    with pytest.raises(InvalidInputError, match=r"^partition 1: "):
        hsd.fit(_model("categorical", "em"), arrays, client,
                lengths=[lp for _, lp in parts])


def test_progress_bar_counts_every_iteration_of_every_restart(client, capsys):
    X, lengths = _data("categorical")
    seen = []
    hsd.fit(_model("categorical", "em", n_iter=3, n_init=2), X, client, lengths=lengths,
            progress=True, callback=lambda i, v: seen.append(i))
    assert seen == [1, 2, 3, 1, 2, 3]
    err = capsys.readouterr().err
    assert "fit init 1/2" in err and "fit init 2/2" in err and "3/3" in err


def test_streaming_modes_are_refused(client):
    X, lengths = _data("categorical")
    with pytest.raises(InvalidInputError, match="learn: the distributed fit runs the batch"):
        hsd.fit(hs.HMM(3, learn="bwo"), X, client, lengths=lengths)


def test_cli_scheduler_gives_the_local_fit(client, tmp_path, capsys):
    X, lengths = _data("gaussian", 9)
    np.save(tmp_path / "x.npy", X)
    np.savetxt(tmp_path / "len.txt", lengths, fmt="%d")
    common = [tmp_path / "x.npy", "--lengths", tmp_path / "len.txt", "--n-states", "3",
              "--n-iter", "5", "--random-state", "1", "--no-progress"]
    assert cli.main([str(a) for a in ["fit", *common, "--out", tmp_path / "local"]]) == 0
    address = client.scheduler.address
    assert cli.main([str(a) for a in ["fit", *common, "--out", tmp_path / "dist",
                                      "--scheduler", address, "--partitions", "3"]]) == 0
    capsys.readouterr()
    _assert_same(cli.load_model_dir(tmp_path / "local")[0],
                 cli.load_model_dir(tmp_path / "dist")[0])
