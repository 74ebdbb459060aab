"""learn="gibbs" against the exact posterior on problems small enough to enumerate every
latent configuration (every path, parse, explanation, cluster or joint state of the whole
data set).

Given a configuration z, the parameters' posterior is conjugate (Dirichlet rows,
Normal-Gamma, Gamma), so the exact posterior is the mixture over z of those posteriors,
weighted by the marginal likelihood p(X, z) = prior normaliser ratios (Dirichlet-multinomial,
Normal-Gamma and Gamma-Poisson evidences). Its exact first and second moments are compared
with the sampler's averages over its draws (no relabelling: the exact posterior is
symmetric under relabellings and the chains cross between them on these tiny data) by
z-tests, with Monte Carlo standard errors from batch means (20 batches per chain). The
enumeration is written from the model's definition, without the model's inference code:
paths, trees (``cnf_trees``), left-corner derivations (``lc_derivations``) and program
derivations (``derivations``) of the brute-force helpers.

Level: every entry's |z| must stay below ``Z_MAX`` = 4.5 (a correct sampler fails one
entry with probability about 7e-6; the largest test has about 60 entries, so a false
failure about 1 in 2,500 seeds). The seeds are fixed. The default suite runs short chains
(4,000 draws); the slow versions run 50,000.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from program_brute_force import derivations
from scipy.special import gammaln, logsumexp
from test_plcg import cnf_trees, lc_derivations

import hiddenstate as hs
from hiddenstate.learn import gibbs
from hiddenstate.models.nbh_problem import NBHProblem
from hiddenstate.programs import Program, msw

Z_MAX = 4.5
FAST = {"n_samples": 1300, "burn_in": 300, "n_chains": 4}
SLOW = {"n_samples": 13000, "burn_in": 500, "n_chains": 4}


@pytest.fixture(autouse=True)
def one_thread():
    """One numba thread: the data are a handful of rows, where starting the threads of a
    parallel kernel costs more than the work (milliseconds per call on a loaded machine);
    the draws do not depend on the number of threads."""
    import numba
    from threadpoolctl import threadpool_limits

    n = numba.get_num_threads()
    numba.set_num_threads(1)
    with threadpool_limits(1):   # BLAS too: tiny matrices
        yield
    numba.set_num_threads(n)


class NoGroups:
    """A Problem without ``state_groups``: the draws are not relabelled."""

    state_groups: list = []

    def __init__(self, problem):
        self._problem = problem

    def __getattr__(self, name):
        return getattr(self._problem, name)


def run(problem, start: dict, which: str, options: dict, seed: int = 0) -> dict:
    result = gibbs.sample(NoGroups(problem), lambda c: start, which=which,
                          rng=np.random.default_rng(seed), **options)
    return result.arrays()


def batch_se(x: np.ndarray, n_batches: int = 20) -> np.ndarray:
    """Standard error of the mean of draws ``(C, D, m)`` by batch means."""
    C, D, m = x.shape
    b = D // n_batches
    means = x[:, :b * n_batches].reshape(C, n_batches, b, m).mean(axis=2).reshape(-1, m)
    return means.std(axis=0, ddof=1) / np.sqrt(len(means))


def check_moments(draws: np.ndarray, mean: np.ndarray, second: np.ndarray, what: str):
    """z-tests of the first and second moments of every entry."""
    C, D = draws.shape[:2]
    x = draws.reshape(C, D, -1)
    for f, exact, kind in ((x, mean, "mean"), (x * x, second, "second moment")):
        exact = np.asarray(exact, dtype=np.float64).reshape(-1)
        est = f.mean(axis=(0, 1))
        se = batch_se(f)
        fixed = se == 0
        assert np.allclose(est[fixed], exact[fixed], rtol=1e-9, atol=1e-12), what
        z = (est[~fixed] - exact[~fixed]) / se[~fixed]
        assert np.all(np.abs(z) < Z_MAX), (
            f"{what} {kind}: z = {np.round(z, 2)}; sampler {est[~fixed]}, exact "
            f"{exact[~fixed]}")


# -- the exact mixture of Dirichlets ------------------------------------------------------------
def dirichlet_evidence(alpha: np.ndarray, n: np.ndarray) -> float:
    """log of the Dirichlet-multinomial normaliser ratio over rows (last axis); entries with
    alpha 0 are outside the support."""
    live = alpha > 0
    a = np.where(live, alpha, 1.0)
    an = np.where(live, alpha + n, 1.0)
    return float(np.sum(gammaln(np.where(live, alpha, 0).sum(-1))
                        - gammaln(np.where(live, alpha + n, 0).sum(-1))
                        + np.where(live, gammaln(an) - gammaln(a), 0.0).sum(-1)))


def dirichlet_moments(alpha: np.ndarray, n: np.ndarray):
    a = alpha + n
    s = a.sum(-1, keepdims=True)
    return a / s, a * (a + 1) / (s * (s + 1))


def mixture(configs):
    """``configs``: iterable of (log weight, {name: mean}, {name: second moment}); the
    weighted averages."""
    configs = list(configs)
    lw = np.array([c[0] for c in configs])
    w = np.exp(lw - logsumexp(lw))
    mean = {k: sum(wi * c[1][k] for wi, c in zip(w, configs, strict=True))
            for k in configs[0][1]}
    second = {k: sum(wi * c[2][k] for wi, c in zip(w, configs, strict=True))
              for k in configs[0][2]}
    return mean, second


def dirichlet_mixture(prior: dict, items: list):
    """Exact moments of Dirichlet blocks: ``prior`` {name: alpha}; ``items`` a list (one per
    data item) of lists of explanations, each {name: counts}."""
    def configs():
        for combo in itertools.product(*items):
            lw, mean, second = 0.0, {}, {}
            for name, alpha in prior.items():
                n = sum(e[name] for e in combo)
                lw += dirichlet_evidence(alpha, n)
                mean[name], second[name] = dirichlet_moments(alpha, n)
            yield lw, mean, second

    return mixture(configs())


def counts_of(flat_index: list[int], rows: list[tuple[int, int]], n_params: int) -> np.ndarray:
    out = np.zeros(n_params)
    np.add.at(out, flat_index, 1.0)
    return out


def flat_prior(rows: list[tuple[int, int]], n_params: int, value: float) -> np.ndarray:
    alpha = np.zeros(n_params)
    for lo, m in rows:
        alpha[lo:lo + m] = value
    return alpha


def flat_mixture(alpha: np.ndarray, rows, items: list[list[np.ndarray]]):
    """Exact moments of a flat vector of switches (``rows``: (lo, size) of each)."""
    def configs():
        for combo in itertools.product(*items):
            n = sum(combo)
            lw = 0.0
            mean, second = np.zeros_like(alpha), np.zeros_like(alpha)
            for lo, m in rows:
                a, c = alpha[lo:lo + m], n[lo:lo + m]
                lw += dirichlet_evidence(a, c)
                mean[lo:lo + m], second[lo:lo + m] = dirichlet_moments(a, c)
            yield lw, {"theta": mean}, {"theta": second}

    mean, second = mixture(configs())
    return mean["theta"], second["theta"]


# -- HMM: every path of every sequence -------------------------------------------------------
def hmm_configs(lengths, K):
    """Every joint path of the sequences: (start counts, transition counts, state of every
    observation)."""
    for path in itertools.product(range(K), repeat=int(sum(lengths))):
        z = np.array(path)
        start, trans = np.zeros(K), np.zeros((K, K))
        lo = 0
        for T in lengths:
            start[z[lo]] += 1
            for t in range(lo + 1, lo + T):
                trans[z[t - 1], z[t]] += 1
            lo += T
        yield start, trans, z


def hmm_exact(X, lengths, K, a_start, a_trans, emission):
    """Exact moments of startprob, transmat and the emission parameters; ``emission(z)``
    gives the emission part (log evidence, means, second moments) for the states z."""
    def configs():
        for start, trans, z in hmm_configs(lengths, K):
            lw = dirichlet_evidence(a_start, start) + dirichlet_evidence(a_trans, trans)
            mean, second = {}, {}
            mean["startprob"], second["startprob"] = dirichlet_moments(a_start, start)
            mean["transmat"], second["transmat"] = dirichlet_moments(a_trans, trans)
            le, em, es = emission(z)
            mean.update(em)
            second.update(es)
            yield lw + le, mean, second

    return mixture(configs())


def _check_all(arrays, mean, second, what):
    for name, exact in mean.items():
        check_moments(arrays[name], exact, second[name], f"{what}: {name}")


def _hmm_problem(model, X, lengths, n_features):
    Xv, seqs = model.validate_data(np.asarray(X), lengths, n_features)
    return model.problem(model.emission_family(n_features, Xv), Xv, seqs)


def hmm_categorical(options, seed):
    K, W = 2, 3
    X, lengths = np.array([0, 2, 2, 1, 0, 0]), [4, 2]
    a_start, a_trans = np.array([1.0, 2.0]), np.array([[2.0, 1.0], [1.0, 3.0]])
    a_emis = np.array([[2.0, 1.0, 0.5], [0.5, 1.0, 2.0]])
    model = hs.HMM(n_states=K, learn="gibbs", startprob_prior=a_start,
                   transmat_prior=a_trans, emissionprob_prior=a_emis)
    problem = _hmm_problem(model, X, lengths, W)

    def emission(z):
        n = np.zeros((K, W))
        np.add.at(n, (z, X), 1.0)
        m, s = dirichlet_moments(a_emis, n)
        return (dirichlet_evidence(a_emis, n), {"emission.emissionprob": m},
                {"emission.emissionprob": s})

    mean, second = hmm_exact(X, lengths, K, a_start, a_trans, emission)
    start = {"startprob": np.full(K, 1 / K), "transmat": np.full((K, K), 1 / K),
             "emission": {"emissionprob": np.full((K, W), 1 / W)}}
    _check_all(run(problem, start, "ste", options, seed), mean, second, "categorical HMM")


def hmm_gaussian(options, seed):
    K = 2
    x = np.array([-1.2, 0.3, 2.1, 1.7, -0.4, 2.5])
    lengths = [3, 3]
    a_start, a_trans = np.array([1.0, 1.0]), np.array([[2.0, 1.0], [1.0, 2.0]])
    m0, b0, s0, nu0 = 0.5, 0.5, 2.0, 6.0
    model = hs.HMM(n_states=K, emission="gaussian", covariance_type="diag", learn="gibbs",
                   startprob_prior=a_start, transmat_prior=a_trans, means_prior=m0,
                   means_weight=b0, covars_prior=s0, covars_weight=nu0)
    problem = _hmm_problem(model, x[:, None], lengths, 1)

    def emission(z):
        lw = 0.0
        means, means2, var, var2 = (np.zeros((K, 1)) for _ in range(4))
        for k in range(K):
            xs = x[z == k]
            n = len(xs)
            xbar = xs.mean() if n else 0.0
            beta, nu = b0 + n, nu0 + n
            m = (b0 * m0 + xs.sum()) / beta
            s = s0 + ((xs - xbar) ** 2).sum() + b0 * n / beta * (xbar - m0) ** 2
            lw += (gammaln(nu / 2) - gammaln(nu0 / 2) + nu0 / 2 * np.log(s0 / 2)
                   - nu / 2 * np.log(s / 2) + 0.5 * np.log(b0 / beta)
                   - n / 2 * np.log(2 * np.pi))
            e_var = s / (nu - 2)
            means[k], means2[k] = m, m * m + e_var / beta
            var[k], var2[k] = e_var, (s / 2) ** 2 / ((nu / 2 - 1) * (nu / 2 - 2))
        return (lw, {"emission.means": means, "emission.covars": var},
                {"emission.means": means2, "emission.covars": var2})

    mean, second = hmm_exact(x, lengths, K, a_start, a_trans, emission)
    start = {"startprob": np.full(K, 1 / K), "transmat": np.full((K, K), 1 / K),
             "emission": {"means": np.array([[-1.0], [2.0]]), "covars": np.ones((K, 1))}}
    _check_all(run(problem, start, "stmc", options, seed), mean, second, "Gaussian HMM")


def hmm_poisson(options, seed):
    K = 2
    x = np.array([0.0, 1.0, 4.0, 6.0, 0.0, 5.0])
    lengths = [4, 2]
    a_start, a_trans = np.array([1.0, 1.0]), np.array([[2.0, 1.0], [1.0, 2.0]])
    a0m1, b = 1.0, 0.5            # lambdas_prior (shape - 1) and lambdas_weight (rate)
    model = hs.HMM(n_states=K, emission="poisson", learn="gibbs", startprob_prior=a_start,
                   transmat_prior=a_trans, lambdas_prior=a0m1, lambdas_weight=b)
    problem = _hmm_problem(model, x[:, None], lengths, 1)
    a0 = a0m1 + 1.0

    def emission(z):
        lw = 0.0
        mean, second = np.zeros((K, 1)), np.zeros((K, 1))
        for k in range(K):
            xs = x[z == k]
            S, n = xs.sum(), len(xs)
            lw += (a0 * np.log(b) - gammaln(a0) + gammaln(a0 + S) - (a0 + S) * np.log(b + n)
                   - gammaln(xs + 1).sum())
            mean[k] = (a0 + S) / (b + n)
            second[k] = (a0 + S) * (a0 + S + 1) / (b + n) ** 2
        return lw, {"emission.lambdas": mean}, {"emission.lambdas": second}

    mean, second = hmm_exact(x, lengths, K, a_start, a_trans, emission)
    start = {"startprob": np.full(K, 1 / K), "transmat": np.full((K, K), 1 / K),
             "emission": {"lambdas": np.array([[1.0], [4.0]])}}
    _check_all(run(problem, start, "stl", options, seed), mean, second, "Poisson HMM")


# -- grammars and programs: every parse / derivation -------------------------------------------
TINY_RULES = {"S": [("A", "B"), ("B", "A"), ("S", "A")], "A": [("a",), ("b",)],
              "B": [("a",), ("b",)]}
TINY_SENTENCES = [["a", "b"], ["b", "a"], ["a", "a"], ["a", "b", "a"]]


def pcfg(options, seed, prior=1.5):
    model = hs.PCFG(TINY_RULES, learn="gibbs", prior=prior, random_state=seed,
                    learner_options={**options, "check_convergence": False})
    g = model.grammar()
    index = {(lhs, rhs): p for p, (lhs, rhs) in enumerate(zip(g.param_lhs, g.param_rhs,
                                                              strict=True))}
    rows = [(lo, m) for _, lo, m in g.switches()]

    def rules(t):
        out = []
        for node, _, _ in t.nodes():
            kids = tuple(c if isinstance(c, str) else c.label for c in node.children)
            out.append(index[(node.label, kids)])
        return out

    items = []
    for words in TINY_SENTENCES:
        items.append([counts_of([g.start.index(r)] + rules(t), rows, g.n_params)
                      for r in g.start for t in cnf_trees(g, words, r, 0, len(words))])
    mean, second = flat_mixture(flat_prior(rows, g.n_params, prior), rows, items)
    model.fit(TINY_SENTENCES)
    check_moments(model.posterior_samples_["theta_"], mean, second, "PCFG")


def plcg(options, seed, prior=1.5):
    model = hs.PLCG(TINY_RULES, learn="gibbs", prior=prior, random_state=seed,
                    learner_options={**options, "check_convergence": False})
    lc = model.left_corner()
    rows = [(lo, m) for _, lo, m in lc.spans()]
    model.theta_ = lc.uniform()  # lc_derivations reads theta_ (the structure is what counts)
    items = []
    for words in TINY_SENTENCES:
        ders = lc_derivations(model, words)
        items.append([counts_of([lc.offsets[s] + lc.outcomes[s].index(o) for s, o in ops],
                                rows, lc.n_params) for _, ops, _ in ders])
    mean, second = flat_mixture(flat_prior(rows, lc.n_params, prior), rows, items)
    model.fit(TINY_SENTENCES)
    check_moments(model.posterior_samples_["theta_"], mean, second, "PLCG")


def coins_program():
    prog = Program("coins")
    prog.switch("coin", ["a", "b"], prior=[2.0, 1.0])
    toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"], prior=1.5)

    @prog.goal
    def two(x, y):
        return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]

    return prog, toss, two


def program(options, seed):
    prog, toss, two = coins_program()
    data = [two("h", "h"), two("t", "t"), two("h", "t"), two("h", "h")]
    names = ["coin", toss("a"), toss("b")]
    outcomes = {"coin": ["a", "b"], toss("a"): ["h", "t"], toss("b"): ["h", "t"]}
    lo = {"coin": 0, toss("a"): 2, toss("b"): 4}
    rows = [(0, 2), (2, 2), (4, 2)]
    alpha = np.array([2.0, 1.0, 1.5, 1.5, 1.5, 1.5])
    items = []
    for goal in data:
        ders = derivations(goal, lambda m: 0.0)
        items.append([counts_of([lo[m.switch] + outcomes[m.switch].index(m.outcome)
                                 for m in msws], rows, 6) for _, _, msws in ders])
    mean, second = flat_mixture(alpha, rows, items)
    model = hs.ProgramModel(prog, learn="gibbs", random_state=seed,
                            learner_options={**options, "check_convergence": False})
    model.fit(data)
    draws = np.concatenate([model.posterior_samples_[f"probs_[{n!r}]"] for n in names],
                           axis=2)
    check_moments(draws, mean, second, "program")


# -- NaiveBayesHidden and TreeNet: every cluster / joint state ----------------------------------
def nbh(options, seed):
    C, K, n_values, prior = 2, 2, [2, 3], 1.5
    codes = np.array([[0, 2], [1, 0], [0, -1], [1, 1], [0, 0]])
    y = np.array([0, 0, 1, 1, 0])
    problem = NBHProblem(codes, y, C, K, n_values, prior)
    alpha = {"class": np.full(C, prior), "cluster": np.full((C, K), prior)}
    alpha.update({f"attr:{j}": np.full((C, K, v), prior) for j, v in enumerate(n_values)})
    items = []
    for i in range(len(y)):
        expl = []
        for h in range(K):
            e = {name: np.zeros_like(a) for name, a in alpha.items()}
            e["class"][y[i]] += 1
            e["cluster"][y[i], h] += 1
            for j in range(len(n_values)):
                if codes[i, j] >= 0:
                    e[f"attr:{j}"][y[i], h, codes[i, j]] += 1
            expl.append(e)
        items.append(expl)
    mean, second = dirichlet_mixture(alpha, items)
    start = {name: a / a.sum(-1, keepdims=True) for name, a in alpha.items()}
    _check_all(run(problem, start, "cha", options, seed), mean, second, "NaiveBayesHidden")


def treenet(options, seed, prior=1.5):
    from hiddenstate.models.treenet import _TreeProblem

    net = hs.TreeNet(n_states={"Z": 2, "Y": 2}, edges=[("Z", "Y"), ("Z", "A"), ("Y", "B")],
                     observed={"A": 2, "B": 3})
    X = np.array([[0, 2], [1, 0], [0, -1], [1, 1]])
    s = net._structure()
    evidence, n = net._evidence(s, X, None)
    problem = _TreeProblem(s, evidence, n, prior)
    zv, yv, av, bv = (s.names.index(v) for v in ("Z", "Y", "A", "B"))
    alpha = {name: np.full(shape, prior) for name, shape in (
        ("prior:Z", (2,)), ("weight:Z->Y", (2, 2)), ("weight:Z->A", (2, 2)),
        ("weight:Y->B", (2, 3)))}
    items = []
    for x in X:
        expl = []
        b_values = [x[1]] if x[1] >= 0 else range(3)   # a missing symbol is drawn too
        for z, yy, b in itertools.product(range(2), range(2), b_values):
            e = {name: np.zeros_like(a) for name, a in alpha.items()}
            e["prior:Z"][z] += 1
            e["weight:Z->Y"][z, yy] += 1
            e["weight:Z->A"][z, x[0]] += 1
            e["weight:Y->B"][yy, b] += 1
            expl.append(e)
        items.append(expl)
    mean, second = dirichlet_mixture(alpha, items)
    start = {name: a / a.sum(-1, keepdims=True) for name, a in alpha.items()}
    del zv, yv, av, bv
    _check_all(run(problem, start, "w", options, seed), mean, second, "TreeNet")


CASES = {"hmm-categorical": hmm_categorical, "hmm-gaussian": hmm_gaussian,
         "hmm-poisson": hmm_poisson, "pcfg": pcfg, "plcg": plcg, "program": program,
         "nbh": nbh, "treenet": treenet}


@pytest.mark.parametrize("case", sorted(CASES))
def test_sampler_moments_equal_the_exact_posterior(case):
    CASES[case](FAST, seed=1)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_sampler_moments_equal_the_exact_posterior_long_chains(case):
    CASES[case](SLOW, seed=2)
