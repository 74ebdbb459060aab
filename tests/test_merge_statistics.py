"""``merge_statistics`` is part of every family's contract: for every emission family and
feature, the E-step statistics of any split of the sequences into parts, merged with
:func:`hiddenstate.learn.merge_statistics`, equal the statistics of the whole data to
1e-12 (relative, per array), for the expected counts (EM, MAP, VB) and the path counts
(Viterbi training, k best paths) alike.

Statistics taken about a reference point (Gaussian and Gaussian-mixture ``shift``) are
compared in a form that does not depend on the point: the posterior mass, the weighted mean
``shift + obs / n`` and the centred second moments ``obs**2 - obs**2 / n`` (or
``S - s1 s1^T / n``); statistics kept as rows (the Newton M-steps of RegressionHMM's
logistic emissions and softmax transitions) are compared as a multiset of rows. Each case
draws 4 seeded random splits into 2 to 4 parts (a part is any set of sequences, not only a
contiguous run) and merges the parts in a random order.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

import hiddenstate as hs
from hiddenstate.families import BlackBoxEmissions, CategoricalEmissions, GaussianEmissions
from hiddenstate.inference import Sequences
from hiddenstate.learn import merge_statistics
from hiddenstate.models.hmm import HMMProblem
from hiddenstate.models.hmm.weights import SampleWeights

RTOL = 1e-12
K, N_SEQ = 3, 9
N_SPLITS = 4


def _sticky(K: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full(K, 1.0 / K), 0.7 * np.eye(K) + 0.3 / K


def _generator(emission: str, rng: np.random.Generator, **kw) -> hs.HMM:
    """A 3-state HMM with distinct states to draw the data from (and to run the E-step
    at)."""
    m = hs.HMM(K, emission=emission, init_params="", **kw)
    m.startprob_, m.transmat_ = _sticky(K)
    if emission == "categorical":
        m.emissionprob_ = rng.dirichlet(np.ones(5), size=K)
    elif emission == "multinomial":
        m.emissionprob_ = rng.dirichlet(np.ones(4), size=K)
    elif emission == "poisson":
        m.lambdas_ = np.array([[1.0, 5.0], [7.0, 0.5], [15.0, 9.0]])
    elif emission == "gaussian":
        m.means_ = np.array([[-3.0, 0.0], [0.0, 2.0], [3.0, -2.0]])
        m.covars_ = {"spherical": np.array([0.5, 1.0, 0.8]),
                     "diag": np.array([[0.5, 1.0], [1.2, 0.3], [0.8, 0.8]]),
                     "full": np.array([[[1.0, 0.3], [0.3, 0.5]]] * K),
                     "tied": np.array([[1.0, 0.3], [0.3, 0.5]])}[m.covariance_type]
    elif emission == "gmm":
        M = m.n_mix
        m.weights_ = rng.dirichlet(np.ones(M) * 3, size=K)
        m.means_ = rng.normal(scale=3.0, size=(K, M, 2))
        m.covars_ = {"diag": np.full((K, M, 2), 0.6),
                     "full": np.tile(np.array([[0.8, 0.2], [0.2, 0.6]]), (K, M, 1, 1)),
                     "tied": np.tile(np.array([[1.0, 0.2], [0.2, 0.6]]), (K, 1, 1))
                     }[m.covariance_type]
    return m


def _draw(gen: hs.HMM, rng: np.random.Generator, offsets: bool) -> tuple:
    """``N_SEQ`` sequences from ``gen`` (with ``offsets``: each shifted by its own constant,
    so that the parts' reference points differ) and their hidden states."""
    lengths = rng.integers(15, 40, size=N_SEQ)
    xs, zs = [], []
    for i, n in enumerate(lengths):
        x, z = gen.sample(int(n), random_state=int(rng.integers(2**31)))
        if offsets:
            x = x + 1e3 + 4.0 * i
        xs.append(x)
        zs.append(z)
    return np.concatenate(xs), lengths, np.concatenate(zs)


def _missing(X: np.ndarray, lengths, rng, marker) -> np.ndarray:
    """Missing entries in the first half of the sequences only (so that some parts have
    none): 15% of the entries, and two whole rows."""
    X = X.astype(np.float64 if marker is np.nan else X.dtype, copy=True)
    first = int(np.sum(lengths[:N_SEQ // 2]))
    holes = rng.random(X[:first].shape) < 0.15
    X[:first][holes] = marker
    X[[1, 3]] = marker
    return X


def _case(name: str):
    """``(model, X, lengths, states)``: the model at its E-step parameters, the data, and
    partial state labels or None."""
    rng = np.random.default_rng(sum(map(ord, name)))
    kind, _, feature = name.partition("+")
    if kind == "mixed":  # Gaussian, categorical and Poisson columns (families.mixed)
        gen = hs.HMM(K, emission={"gaussian": [0, 1], "categorical": [2], "poisson": [3]},
                     n_features=[1, 1, 5, 1], init_params="")
        gen.startprob_, gen.transmat_ = _sticky(K)
        gen.means_ = np.array([[-3.0, 0.0], [0.0, 2.0], [3.0, -2.0]])
        gen.covars_ = np.array([[0.5, 1.0], [1.2, 0.3], [0.8, 0.8]])
        gen.emissionprob_ = rng.dirichlet(np.ones(5), size=K)
        gen.lambdas_ = np.array([[1.0], [7.0], [15.0]])
        X, lengths, z = _draw(gen, rng, False)
    elif kind == "multi-categorical":
        gen = hs.HMM(K, emission="categorical", n_features=(5, 4), init_params="")
        gen.startprob_, gen.transmat_ = _sticky(K)
        B = np.zeros((2, K, 5))
        B[0] = rng.dirichlet(np.ones(5), size=K)
        B[1, :, :4] = rng.dirichlet(np.ones(4), size=K)
        gen.emissionprob_ = B
        X, lengths, z = _draw(_generator("categorical", rng), rng, False)
        X = np.column_stack([X[:, 0] % 5, (z * 2 + rng.integers(0, 2, size=len(z))) % 4])
    else:
        emission, _, option = kind.partition("-")
        kw = {"covariance_type": option} if option else {}
        if emission == "gmm":
            kw["n_mix"] = 2
        if emission == "multinomial":
            kw["n_trials"] = 6
        gen = _generator(emission, rng, **kw)
        shifted = emission in ("gaussian", "gmm")
        X, lengths, z = _draw(gen, rng, shifted)
        if shifted:
            gen.means_ = gen.means_ + 1e3 + 16.0   # amid the shifted sequences
        if emission == "categorical":
            X = X[:, 0]
    states = None
    if feature == "weights":  # sequence and observation weights (models.hmm.weights)
        gen.sample_weight_ = {"sequence": rng.uniform(0, 3, len(lengths)),
                              "observation": rng.uniform(0, 2, len(X))}
    if feature == "missing":
        X = _missing(X, lengths, rng, np.nan if X.dtype.kind == "f" else -1)
    elif feature == "labels":
        states = np.where(rng.random(len(X)) < 0.3, z, -1)
    return gen, X, lengths, states


def _vb_model(gen: hs.HMM) -> hs.HMM:
    """``gen`` with learn="vb" (its data-mean priors: Gaussian ``means_prior``, Poisson
    ``lambdas_weight``), at the same parameters."""
    m = clone(gen).set_params(learn="vb")
    for name, value in gen.learned_arrays().items():
        setattr(m, name, value)
    return m


CASES = ["categorical", "multi-categorical", "gaussian-spherical", "gaussian-diag",
         "gaussian-full", "gaussian-tied", "poisson", "gmm-diag", "gmm-full", "gmm-tied",
         "multinomial", "categorical+missing", "multi-categorical+missing",
         "gaussian-full+missing", "gaussian-diag+missing", "poisson+missing",
         "gmm-diag+missing", "categorical+labels", "gaussian-diag+labels", "mixed",
         "mixed+missing", "categorical+weights", "gaussian-full+weights", "mixed+weights"]
#: the cases also run with learn="vb" (data-mean priors, the E-step at exp E_q[log theta])
VB_CASES = ["categorical", "gaussian-diag", "gaussian-full", "poisson", "gmm-diag",
            "gaussian-diag+missing", "poisson+missing", "mixed", "mixed+missing"]


def _canonical(stats) -> dict:
    """Statistics in a form that does not depend on a reference point (see the module
    docstring); arrays by key."""
    if not isinstance(stats, dict):
        return {"counts": np.asarray(stats)}
    if any(isinstance(value, dict) for value in stats.values()):  # a mixed family's groups
        return {f"{group}.{key}": value for group, part in stats.items()
                for key, value in _canonical(part).items()}
    out = {key: np.asarray(value) for key, value in stats.items()}
    if "phi" in out:   # rows (logistic emissions, softmax transitions): compared as a multiset
        rows = [k for k in ("phi", "post", "r") if k in out and out[k].ndim == 2]
        order = np.lexsort(np.hstack([out[k] for k in rows]).T)
        for k in rows:
            out[k] = out[k][order]
    if "shift" in out:
        n = out.pop("post")
        shift, s1 = out.pop("shift"), out.pop("obs")
        live = n > 0
        safe = np.where(live, n, 1.0)[:, None]
        out["post"] = n
        out["mean"] = np.where(live[:, None], shift + s1 / safe, 0.0)
        if "obs**2" in out:
            out["obs**2"] = out["obs**2"] - s1 * s1 / safe
        if "obs*obs.T" in out:
            out["obs*obs.T"] = out["obs*obs.T"] - np.einsum("ki,kj->kij", s1, s1) / safe[:, None]
    return out


def _assert_equal_stats(got: dict, want: dict, what: str) -> None:
    assert got.keys() == want.keys(), what
    for block in want:
        g, w = _canonical(got[block]), _canonical(want[block])
        assert g.keys() == w.keys(), (what, block, sorted(g), sorted(w))
        for key in w:
            scale = max(float(np.max(np.abs(w[key]), initial=0.0)), 1e-300)
            err = float(np.max(np.abs(g[key] - w[key]), initial=0.0))
            assert err <= RTOL * scale, (what, block, key, err / scale)


def _problem(model, family, X, seqs, states, rows=None, seq_ids=None):
    """The model's Problem on ``X`` (with the case's sample weights, those of the
    sequences ``seq_ids`` and rows ``rows`` for a part)."""
    weights = getattr(model, "sample_weight_", None)
    if weights is not None and rows is not None:
        weights = {"sequence": weights["sequence"][seq_ids],
                   "observation": weights["observation"][rows]}
    return model.problem(family, X, seqs, states,
                         SampleWeights.of(weights, seqs, part=True))


def _splits(rng: np.random.Generator):
    for _ in range(N_SPLITS):
        n_parts = int(rng.integers(2, 5))
        while True:
            part = rng.integers(0, n_parts, size=N_SEQ)
            if len(np.unique(part)) == n_parts:
                break
        yield [np.flatnonzero(part == p) for p in rng.permutation(n_parts)]


def _rows(lengths: np.ndarray, seq_ids: np.ndarray) -> np.ndarray:
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    return np.concatenate([np.arange(bounds[i], bounds[i + 1]) for i in seq_ids])


def _views(model, problem):
    """The parameters the E-step runs at: the model's, or (VB) exp E_q[log theta] of the
    posterior centred on them."""
    startprob, transmat, emis = model.checked_params()
    theta = {"startprob": startprob, "transmat": transmat, "emission": emis}
    if model.learn != "vb":
        return theta
    return {name: block.vb_expected(block.vb_init(theta[name], problem.n_virtual[name]))
            for name, block in problem.blocks.items()}


def _check_case(model, X, lengths, states, seed: int) -> None:
    seqs = Sequences.from_lengths(lengths)
    Xv = model.validate_data(X, lengths, model.n_features_)[0]
    family = model.emission_family(model.n_features_, Xv)   # with the data-mean priors
    whole = _problem(model, family, Xv, seqs, states)
    views = _views(model, whole)
    rng = np.random.default_rng(seed)
    for kind in ("expected", "paths"):
        def estep(problem, kind=kind):
            if kind == "expected":
                return problem.expected_counts(views)
            return problem.path_counts(views, 2)[:2]

        want_value, want = estep(whole)
        for parts in _splits(rng):
            value, merged = 0.0, None
            for seq_ids in parts:
                rows = _rows(lengths, seq_ids)
                sub = _problem(model, family, Xv[rows], Sequences.from_lengths(lengths[seq_ids]),
                               None if states is None else states[rows], rows, seq_ids)
                v, stats = estep(sub)
                value += v
                merged = stats if merged is None else merge_statistics(whole.blocks, merged,
                                                                       stats)
            assert abs(value - want_value) <= RTOL * abs(want_value)
            _assert_equal_stats(merged, want, f"{kind}, parts {[list(p) for p in parts]}")


@pytest.mark.parametrize("name", CASES)
def test_merged_statistics_of_any_split_equal_those_of_the_whole(name):
    model, X, lengths, states = _case(name)
    _check_case(model, X, lengths, states, seed=CASES.index(name))


@pytest.mark.parametrize("name", VB_CASES)
def test_merged_statistics_under_vb_data_mean_priors(name):
    gen, X, lengths, states = _case(name)
    _check_case(_vb_model(gen), X, lengths, states, seed=100 + VB_CASES.index(name))


@pytest.mark.parametrize("inner", ["categorical", "gaussian"])
def test_merged_statistics_with_source_states(inner):
    """PROPS's family (:class:`BlackBoxEmissions`): two source columns before the inner
    family's states merge as the inner family's statistics."""
    rng = np.random.default_rng(11)
    lengths = rng.integers(15, 40, size=N_SEQ)
    n = int(lengths.sum())
    log_f = np.log(rng.dirichlet(np.ones(3), size=n)[:, :2])
    if inner == "categorical":
        fam_in, y = CategoricalEmissions(2, 4), rng.integers(0, 4, size=n)
        params = {"emissionprob": rng.dirichlet(np.ones(4), size=2)}
    else:
        fam_in = GaussianEmissions(2, 2, "full")
        y = rng.normal(size=(n, 2)) + 1e3 + np.repeat(np.arange(N_SEQ), lengths)[:, None]
        params = {"means": np.full((2, 2), 1e3 + 4.0) + rng.normal(size=(2, 2)),
                  "covars": np.tile(np.eye(2) * 9.0, (2, 1, 1))}
    family = BlackBoxEmissions(2, fam_in)
    X = BlackBoxEmissions.join(log_f, y)
    startprob, transmat = _sticky(4)
    views = {"startprob": startprob, "transmat": transmat, "emission": params}
    whole = HMMProblem(family, X, Sequences.from_lengths(lengths), 1.0, 1.0)
    want_value, want = whole.expected_counts(views)
    for parts in _splits(np.random.default_rng(12)):
        merged, value = None, 0.0
        for seq_ids in parts:
            rows = _rows(lengths, seq_ids)
            v, stats = HMMProblem(family, X[rows], Sequences.from_lengths(lengths[seq_ids]),
                                  1.0, 1.0).expected_counts(views)
            value += v
            merged = stats if merged is None else merge_statistics(whole.blocks, merged, stats)
        assert abs(value - want_value) <= RTOL * abs(want_value)
        _assert_equal_stats(merged, want, str(parts))


def test_merged_statistics_of_the_sticky_hdp_transitions():
    """The sticky HDP-HMM's transition block (learn="gibbs"): its statistics (transition and
    start counts, a dict) of any split, merged, equal the whole data's."""
    rng = np.random.default_rng(13)
    gen = _generator("categorical", rng)
    X, lengths, _ = _draw(gen, rng, False)
    model = hs.HMM(K, learn="gibbs", transmat_prior="sticky-hdp", n_features=5)
    seqs = Sequences.from_lengths(lengths)
    Xv = model.validate_data(X[:, 0], lengths, 5)[0]
    family = model.emission_family(5, Xv)
    whole = model.problem(family, Xv, seqs)
    views = whole.start_params({"startprob": gen.startprob_, "transmat": gen.transmat_,
                                "emission": {"emissionprob": gen.emissionprob_}})
    want_value, want = whole.expected_counts(views)
    assert set(want["transmat"]) == {"trans", "start"}
    for parts in _splits(np.random.default_rng(14)):
        merged, value = None, 0.0
        for seq_ids in parts:
            rows = _rows(lengths, seq_ids)
            sub = model.problem(family, Xv[rows], Sequences.from_lengths(lengths[seq_ids]))
            v, stats = sub.expected_counts(views)
            value += v
            merged = stats if merged is None else merge_statistics(whole.blocks, merged, stats)
        assert abs(value - want_value) <= RTOL * abs(want_value)
        _assert_equal_stats(merged, want, str(parts))


def test_merged_statistics_of_the_hdp_hsmm_transitions():
    """The HDP-HSMM's transition block (learn="gibbs", transmat_prior="hdp"): its statistics
    (moves between segments, start counts, time steps per state) of any split, merged,
    equal the whole data's."""
    rng = np.random.default_rng(15)
    gen = _generator("categorical", rng)
    X, lengths, _ = _draw(gen, rng, False)
    model = hs.HSMM(K, learn="gibbs", transmat_prior="hdp", n_features=5, max_duration=12)
    seqs = Sequences.from_lengths(lengths)
    Xv = model.validate_data(X[:, 0], lengths, 5)[0]
    family = model.emission_family(5, Xv)
    whole = model.problem(family, Xv, seqs)
    A = np.full((K, K), 1.0 / (K - 1))
    np.fill_diagonal(A, 0.0)
    views = whole.start_params({
        "startprob": gen.startprob_, "transmat": whole.transitions.gather(A),
        "emission": {"emissionprob": gen.emissionprob_},
        "durations": whole.blocks["durations"].initialize(np.linspace(0.6, 0.9, K))})
    want_value, want = whole.expected_counts(views)
    assert set(want["transmat"]) == {"trans", "start", "visits"}
    assert want["transmat"]["visits"].sum() == pytest.approx(len(Xv), rel=1e-12)
    for parts in _splits(np.random.default_rng(16)):
        merged, value = None, 0.0
        for seq_ids in parts:
            rows = _rows(lengths, seq_ids)
            sub = model.problem(family, Xv[rows], Sequences.from_lengths(lengths[seq_ids]))
            v, stats = sub.expected_counts(views)
            value += v
            merged = stats if merged is None else merge_statistics(whole.blocks, merged, stats)
        assert abs(value - want_value) <= RTOL * abs(want_value)
        _assert_equal_stats(merged, want, str(parts))


def test_every_family_must_merge_its_statistics():
    """No silent default: a family without ``merge_statistics`` cannot be built."""
    from hiddenstate.families.base import EmissionFamily

    assert "merge_statistics" in EmissionFamily.__abstractmethods__

    class Bare(EmissionFamily):
        def validate_X(self, X, fitted_n_features):
            return X

        def infer_n_features(self, X):
            return 1

        def log_likelihood(self, params, X):
            return np.zeros((len(X), self.n_states))

        def statistics(self, X, post):
            return {}

        def mstep(self, params, stats, which):
            return params, []

        def log_prior(self, params):
            return 0.0

        def initialize(self, X, rng):
            return {}

        def check_params(self, params):
            return params

        def sample(self, params, states, rng):
            return states

    with pytest.raises(TypeError, match="merge_statistics"):
        Bare(2, 1)


#: the HSMM's duration families (with Gaussian, categorical-with-missing and labelled data)
HSMM_CASES = ["nonparametric+gaussian-diag", "poisson+categorical+missing",
              "negative-binomial+gaussian-full", "geometric+gaussian-diag+labels",
              "nonparametric+poisson"]


@pytest.mark.parametrize("name", HSMM_CASES)
@pytest.mark.parametrize("learn", ["em", "vb"])
def test_merged_hsmm_statistics_of_any_split_equal_those_of_the_whole(name, learn):
    """An HSMM's E-step over parts of the sequences (its own ``max_duration``, so parts
    whose longest sequence is shorter still give statistics of the same shape), merged,
    equals the whole data's: durations (complete and censored), transitions between
    segments and emissions, for expected and path counts."""
    duration, _, rest = name.partition("+")
    if learn == "vb" and duration == "negative-binomial":
        pytest.skip("negative-binomial durations have no variational Bayes")
    gen, X, lengths, states = _case(rest)
    K = gen.n_states
    model = hs.HSMM(K, duration=duration, emission=gen.emission, max_duration=25,
                    learn=learn, covariance_type=gen.covariance_type,
                    n_features=gen.n_features_ if gen.emission == "categorical" else None)
    Xv = model.validate_data(X, lengths, gen.n_features_)[0]
    family = model.emission_family(gen.n_features_, Xv)
    model.__dict__["_fit_max_duration"] = 25
    whole = model.problem(family, Xv, Sequences.from_lengths(lengths), states)
    dfam = whole.blocks["durations"]
    A = np.full((K, K), 1.0 / (K - 1)) - np.eye(K) / (K - 1)
    theta = {"startprob": np.full(K, 1.0 / K), "transmat": whole.transitions.gather(A),
             "emission": gen.emission_params(),
             "durations": dfam.initialize(np.linspace(0.6, 0.9, K))}
    if duration == "negative-binomial":
        theta["durations"]["duration_shapes"] = np.array([1.0, 3.0, 2.0])
    views = theta if learn != "vb" else {
        n: b.vb_expected(b.vb_init(theta[n], whole.n_virtual[n]))
        for n, b in whole.blocks.items()}
    rng = np.random.default_rng(HSMM_CASES.index(name))
    for kind in ("expected", "paths"):
        def estep(problem, kind=kind):
            if kind == "expected":
                return problem.expected_counts(views)
            return problem.path_counts(views, 2)[:2]

        want_value, want = estep(whole)
        for parts in _splits(rng):
            value, merged = 0.0, None
            for seq_ids in parts:
                rows = _rows(lengths, seq_ids)
                sub = model.problem(family, Xv[rows], Sequences.from_lengths(lengths[seq_ids]),
                                    None if states is None else states[rows])
                v, stats = estep(sub)
                value += v
                merged = stats if merged is None else merge_statistics(whole.blocks, merged,
                                                                       stats)
            assert abs(value - want_value) <= RTOL * abs(want_value)
            _assert_equal_stats(merged, want, f"{kind}, parts {[list(p) for p in parts]}")


# -- RegressionHMM's blocks: linear-regression (MNIW) and logistic emissions, softmax
# transitions. Their data are the laid-out rows [y | inputs | lags | 1]; the linear family
# sums about the column means of the whole data (the family's fixed reference point).
REGRESSION_CASES = ["linear+inputs", "ar2", "ar2-vb", "logistic+softmax", "linear+softmax"]


def _regression_case(name: str):
    rng = np.random.default_rng(sum(map(ord, name)))
    kind, _, extra = name.partition("+")
    emission = "logistic" if kind == "logistic" else "linear"
    n_lags = 2 if kind.startswith("ar2") else 0
    M = 0 if kind.startswith("ar2") else 2
    gen = hs.RegressionHMM(K, emission=emission, n_lags=n_lags,
                           transitions="softmax" if extra == "softmax" else "fixed",
                           learn="vb" if kind.endswith("vb") else "em")
    gen.startprob_, gen.transmat_ = _sticky(K)
    if extra == "softmax":
        gen.transition_coef_ = rng.normal(size=(K, K, M)) * (1 - np.eye(K))[..., None]
    if emission == "logistic":
        gen.coef_ = rng.normal(size=(K, 3, M)) * (np.arange(3) > 0)[None, :, None]
        gen.intercept_ = rng.normal(size=(K, 3)) * (np.arange(3) > 0)
    else:
        D = 2
        gen.coef_ = rng.normal(scale=0.3, size=(K, D, M + n_lags * D))
        gen.intercept_ = 1e3 + rng.normal(size=(K, D))      # far from the origin
        gen.covars_ = np.tile(np.array([[1.0, 0.3], [0.3, 0.5]]), (K, 1, 1))
    lengths = rng.integers(15, 40, size=N_SEQ)
    xs, us = [], []
    for n in lengths:
        u = rng.normal(size=(n, M))
        x, _ = gen.sample(int(n), random_state=int(rng.integers(2**31)),
                          inputs=u if M else None,
                          history=1e3 + rng.normal(size=(n_lags, 2)) if n_lags else None)
        xs.append(x)
        us.append(u)
    return gen, np.concatenate(xs), lengths, np.concatenate(us)


@pytest.mark.parametrize("name", REGRESSION_CASES)
def test_merged_statistics_of_the_regression_blocks(name):
    model, X, lengths, U = _regression_case(name)
    d = model._design(X, lengths, U if U.shape[1] else None, model.n_features_,
                      model.n_inputs_)
    family = model.emission_family(model.n_features_, d.Z, n_inputs=d.n_inputs)
    whole = model.problem(family, d.Z, d.seqs, U=d.U)
    views = model._params()
    if model.learn == "vb":
        views = {b: whole.blocks[b].vb_expected(whole.blocks[b].vb_init(
            views[b], whole.n_virtual[b])) for b in views}
    rng = np.random.default_rng(REGRESSION_CASES.index(name))
    lens = d.seqs.lengths
    for kind in ("expected", "paths"):
        def estep(problem, kind=kind):
            if kind == "expected":
                return problem.expected_counts(views)
            return problem.path_counts(views, 1)[:2]

        want_value, want = estep(whole)
        for parts in _splits(rng):
            value, merged = 0.0, None
            for seq_ids in parts:
                rows = _rows(lens, seq_ids)
                sub = model.problem(family, d.Z[rows], Sequences.from_lengths(lens[seq_ids]),
                                    U=d.U[rows])
                v, stats = estep(sub)
                value += v
                merged = stats if merged is None else merge_statistics(whole.blocks, merged,
                                                                       stats)
            assert abs(value - want_value) <= RTOL * abs(want_value)
            _assert_equal_stats(merged, want, f"{kind}, parts {[list(p) for p in parts]}")
