"""Geweke's joint-distribution test ("Getting it right", JASA 2004) of learn="gibbs", for
every model: HMMs with categorical, Gaussian (every covariance type, and with missing
entries), Poisson emissions and the sticky HDP transitions; PROPS's learned blocks (source
states next to learned ones); a PCFG; a PLCG; a program; NaiveBayesHidden; TreeNet.

Two simulators of the joint p(theta, X):

- *marginal-conditional*: theta from the prior (each block's ``sample_posterior`` with zero
  statistics), independently every time;
- *successive-conditional*: a chain that alternates one Gibbs sweep of the model's
  sampler (``problem.sample_counts`` then every block's ``sample_posterior``) with fresh
  data X ~ p(X | theta), simulated here from the model's definition (the HMMs, NBH, the
  tree network and the PROPS rows in NumPy; the grammars and the program by the models'
  own forward samplers, which share no code with the posterior samplers).

If the sampler leaves p(theta | X) invariant, theta's marginal in the chain is the prior:
the means of every parameter entry and of its square agree between the two simulators.
z-tests (the chain's standard error by batch means), |z| < ``Z_MAX`` = 4.5 for every
test function (a correct sampler fails one with probability about 7e-6). Seeds fixed;
short runs in the default suite, long ones marked slow.
"""

from __future__ import annotations

import numpy as np
import pytest

import hiddenstate as hs
from hiddenstate.families import BlackBoxEmissions, CategoricalEmissions
from hiddenstate.inference import Sequences
from hiddenstate.learn.gibbs import flatten
from hiddenstate.models.hmm import HMMProblem
from hiddenstate.models.nbh_problem import NBHProblem
from hiddenstate.programs import Program, ProgramModel, explain, msw
from hiddenstate.programs.problem import LEARNED, ProgramProblem

Z_MAX = 4.5
FAST = (1500, 1500)    # marginal-conditional draws, successive-conditional sweeps
SLOW = (20000, 30000)


@pytest.fixture(autouse=True)
def one_thread():
    """One numba thread: tiny data, where starting a parallel kernel's threads costs more
    than the work; the draws do not depend on the number of threads."""
    import numba
    from threadpoolctl import threadpool_limits

    n = numba.get_num_threads()
    numba.set_num_threads(1)
    with threadpool_limits(1):   # BLAS too: tiny matrices
        yield
    numba.set_num_threads(n)


def zeros_like_stats(stats):
    if isinstance(stats, dict):
        return {k: zeros_like_stats(v) for k, v in stats.items()}
    return np.zeros_like(np.asarray(stats, dtype=np.float64))


def sweep(problem, theta, which, rng):
    _, stats, _ = problem.sample_counts(theta, rng)
    return {name: block.sample_posterior(theta[name], stats[name], which, rng)
            for name, block in problem.blocks.items()}


def values_of(theta) -> np.ndarray:
    v = np.concatenate([np.ravel(a) for _, a in sorted(flatten(theta).items())])
    return np.concatenate([v, v * v])


def batch_se(x: np.ndarray, n_batches: int = 30) -> np.ndarray:
    b = len(x) // n_batches
    means = x[:b * n_batches].reshape(n_batches, b, -1).mean(axis=1)
    return means.std(axis=0, ddof=1) / np.sqrt(n_batches)


def geweke(make_problem, simulate, theta0, which, sizes, seed):
    """Run both simulators; assert that every test function agrees."""
    n_mc, n_sc = sizes
    rng = np.random.default_rng(seed)
    problem = make_problem(simulate(theta0, rng))
    _, stats, _ = problem.sample_counts(theta0, rng)
    zero = zeros_like_stats(stats)
    blocks = problem.blocks

    def prior():
        return {name: block.sample_posterior(theta0[name], zero[name], which, rng)
                for name, block in blocks.items()}

    mc = np.array([values_of(prior()) for _ in range(n_mc)])
    theta = prior()
    sc = []
    for _ in range(n_sc):
        theta = sweep(make_problem(simulate(theta, rng)), theta, which, rng)
        sc.append(values_of(theta))
    sc = np.array(sc)
    se = np.sqrt(mc.var(axis=0, ddof=1) / n_mc + batch_se(sc) ** 2)
    diff = sc.mean(axis=0) - mc.mean(axis=0)
    fixed = se == 0
    assert np.allclose(diff[fixed], 0.0)
    z = diff[~fixed] / se[~fixed]
    assert np.all(np.abs(z) < Z_MAX), f"z = {np.round(z, 2)}"


# -- HMMs ------------------------------------------------------------------------------------
LENGTHS = [4, 3]


def chain_paths(theta, rng, lengths=LENGTHS):
    start = theta["startprob"]
    A = theta["transmat"]["transmat"] if isinstance(theta["transmat"], dict) \
        else theta["transmat"]
    z = []
    for T in lengths:
        s = rng.choice(len(start), p=start)
        z.append(s)
        for _ in range(T - 1):
            s = rng.choice(len(start), p=A[s])
            z.append(s)
    return np.array(z)


def hmm_case(model, n_features, emit, theta0, which):
    seqs_lengths = LENGTHS

    def simulate(theta, rng):
        z = chain_paths(theta, rng)
        return emit(theta["emission"], z, rng)

    def make_problem(X):
        Xv, seqs = model.validate_data(X, seqs_lengths, n_features)
        return model.problem(model.emission_family(n_features, Xv), Xv, seqs)

    return make_problem, simulate, theta0, which


def hmm_start(K, emission):
    return {"startprob": np.full(K, 1 / K), "transmat": np.full((K, K), 1 / K),
            "emission": emission}


def categorical(sizes, seed):
    K, W = 2, 3
    model = hs.HMM(n_states=K, learn="gibbs", startprob_prior=1.5, transmat_prior=2.0,
                   emissionprob_prior=np.array([1.0, 2.0, 1.5]))

    def emit(e, z, rng):
        return np.array([rng.choice(W, p=e["emissionprob"][k]) for k in z])

    geweke(*hmm_case(model, W, emit, hmm_start(K, {"emissionprob": np.full((K, W), 1 / W)}),
                     "ste"), sizes, seed)


def gaussian(covariance_type, missing=False):
    def case(sizes, seed):
        K, D = 2, 2
        scale = {"spherical": 1.5, "diag": np.array([1.0, 2.0]),
                 "full": np.array([[2.0, 0.5], [0.5, 1.0]]),
                 "tied": np.array([[2.0, 0.5], [0.5, 1.0]])}[covariance_type]
        model = hs.HMM(n_states=K, emission="gaussian", covariance_type=covariance_type,
                       learn="gibbs", startprob_prior=1.0, transmat_prior=1.0,
                       means_prior=np.array([0.0, 1.0]), means_weight=0.5,
                       covars_prior=scale, covars_weight=5.0)
        mask = np.zeros((sum(LENGTHS), D), dtype=bool)
        if missing:
            mask[1, 0] = mask[4, 1] = mask[5] = True   # a partial row or two, and an empty one

        def emit(e, z, rng):
            from hiddenstate.families.gaussian import full_covars

            covs = full_covars(e["covars"], covariance_type, K, D)
            x = np.array([rng.multivariate_normal(e["means"][k], covs[k]) for k in z])
            return np.where(mask, np.nan, x)

        covars = {"spherical": np.ones(K), "diag": np.ones((K, D)),
                  "full": np.tile(np.eye(D), (K, 1, 1)), "tied": np.eye(D)}[covariance_type]
        theta0 = hmm_start(K, {"means": np.zeros((K, D)), "covars": covars})
        geweke(*hmm_case(model, D, emit, theta0, "stmc"), sizes, seed)
    return case


def poisson(sizes, seed):
    K, D = 2, 2
    model = hs.HMM(n_states=K, emission="poisson", learn="gibbs", startprob_prior=1.0,
                   transmat_prior=1.0, lambdas_prior=1.0, lambdas_weight=0.5)

    def emit(e, z, rng):
        return rng.poisson(e["lambdas"][z]).astype(np.float64)

    geweke(*hmm_case(model, D, emit, hmm_start(K, {"lambdas": np.ones((K, D))}), "stl"),
           sizes, seed)


def sticky_hdp(sizes, seed):
    L, W = 3, 3
    model = hs.HMM(n_states=L, learn="gibbs", transmat_prior="sticky-hdp",
                   startprob_prior=1.0, emissionprob_prior=1.0,
                   learner_options={"alpha_kappa_prior": (4.0, 1.0), "rho_prior": (2.0, 2.0),
                                    "gamma_prior": (3.0, 1.0)})

    def emit(e, z, rng):
        return np.array([rng.choice(W, p=e["emissionprob"][k]) for k in z])

    make_problem, simulate, _, which = hmm_case(model, W, emit, None, "ste")
    probe = make_problem(np.zeros(sum(LENGTHS), dtype=np.int64))
    theta0 = probe.start_params(hmm_start(L, {"emissionprob": np.full((L, W), 1 / W)}))
    geweke(make_problem, simulate, theta0, which, sizes, seed)


def props_blocks(sizes, seed):
    """One source state (a fixed unigram model) and two learned perturbation states."""
    Ks, Kp, W = 1, 2, 3
    f = np.array([0.5, 0.3, 0.2])

    def simulate(theta, rng):
        z = chain_paths(theta, rng)
        y = np.array([rng.choice(W, p=f if k < Ks else theta["emission"]["emissionprob"]
                                 [k - Ks]) for k in z])
        return y

    def make_problem(y):
        family = BlackBoxEmissions(Ks, CategoricalEmissions(Kp, W, emissionprob_prior=1.5))
        rows = family.join(np.log(f[y])[:, None], y)
        return HMMProblem(family, rows, Sequences.from_lengths(LENGTHS), 1.0, 2.0)

    theta0 = hmm_start(Ks + Kp, {"emissionprob": np.full((Kp, W), 1 / W)})
    geweke(make_problem, simulate, theta0, "ste", sizes, seed)


# -- grammars and programs ------------------------------------------------------------------------
GRAMMAR = {"S": [("A", "B"), ("B", "A")], "A": [("a",), ("b",)],
           "B": [("a",), ("b",), ("C", "C")], "C": [("a",), ("b",)]}


def pcfg(sizes, seed):
    from hiddenstate.models.pcfg import _PCFGProblem

    model = hs.PCFG(GRAMMAR, learn="gibbs", prior=1.5)
    g = model.grammar()
    base = model._theta(g)
    shell = _PCFGProblem(model, g, np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64),
                         base, 1.5)

    def simulate(theta, rng):
        model.theta_ = shell.flat(theta)
        return [w for w, _ in model.sample(3, random_state=rng)]

    def make_problem(sentences):
        words, offsets, _ = model._encode(g, sentences)
        return _PCFGProblem(model, g, words, offsets, base, 1.5)

    geweke(make_problem, simulate, shell.views(base), "r", sizes, seed)


def plcg(sizes, seed):
    model = hs.PLCG(GRAMMAR, learn="gibbs", prior=1.5)
    lc = model.left_corner()
    base = lc.uniform()
    program = model._program(lc, 1.5)
    g = model.grammar()

    def make_problem(sentences):
        words, offsets, _ = model._encode(g, sentences)
        return ProgramProblem(model._graph(lc, words, offsets), program.switches, base)

    # every switch of the left-corner program is in a block only when some sentence uses
    # it: take the blocks of a sentence set that uses every switch
    full = make_problem([["a", "b"], ["b", "a"], ["a", "a", "b"], ["b", "a", "b"],
                         ["a", "b", "b"], ["b", "b", "a"]])

    def make_full(sentences):
        p = make_problem(sentences)
        p.blocks, p.index, p.letters = full.blocks, full.index, full.letters
        return p

    def simulate(theta, rng):
        model.theta_ = full.flat(theta)
        return [w for w, _ in model.sample(3, random_state=rng)]

    geweke(make_full, simulate, full.views(base), LEARNED, sizes, seed)


def program(sizes, seed):
    prog = Program("coins")
    prog.switch("coin", ["a", "b"], prior=[2.0, 1.0])
    toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"], prior=1.5)

    @prog.goal
    def two(x, y):
        return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]

    @prog.sampler
    def toss_twice(draw):
        c = draw("coin")
        return two(draw(toss(c)), draw(toss(c)))

    model = ProgramModel(prog)
    base = model._theta()
    table = prog.switches
    all_goals = [two(x, y) for x in "ht" for y in "ht"]

    def make_problem(goals):
        return ProgramProblem(explain(prog, goals), table, base)

    shell = make_problem(all_goals)

    def simulate(theta, rng):
        flat = shell.flat(theta)
        model.probs_ = {n: flat[table.offsets[s]:table.offsets[s + 1]]
                        for s, n in enumerate(table.names)}
        return model.sample(3, random_state=rng)

    def make_full(goals):
        p = make_problem(goals)
        p.blocks, p.index, p.letters = shell.blocks, shell.index, shell.letters
        return p

    geweke(make_full, simulate, shell.views(base), LEARNED, sizes, seed)


# -- NaiveBayesHidden and TreeNet ---------------------------------------------------------------
def nbh(sizes, seed):
    C, K, n_values, prior = 2, 2, [2, 3], 1.5

    def simulate(theta, rng):
        n = 5
        y = np.array([rng.choice(C, p=theta["class"]) for _ in range(n)])
        h = np.array([rng.choice(K, p=theta["cluster"][c]) for c in y])
        codes = np.array([[rng.choice(v, p=theta[f"attr:{j}"][c, k])
                           for j, v in enumerate(n_values)] for c, k in zip(y, h, strict=True)])
        codes[0, 1] = -1   # a missing attribute
        return codes, y

    def make_problem(data):
        return NBHProblem(data[0], data[1], C, K, n_values, prior)

    theta0 = {"class": np.full(C, 1 / C), "cluster": np.full((C, K), 1 / K)}
    theta0.update({f"attr:{j}": np.full((C, K, v), 1 / v) for j, v in enumerate(n_values)})
    geweke(make_problem, simulate, theta0, "cha", sizes, seed)


def treenet(sizes, seed):
    from hiddenstate.models.treenet import _TreeProblem

    net = hs.TreeNet(n_states={"Z": 2, "Y": 2}, edges=[("Z", "Y"), ("Z", "A"), ("Y", "B")],
                     observed={"A": 2, "B": 3})
    s = net._structure()

    def simulate(theta, rng):
        X = []
        for _ in range(4):
            z = rng.choice(2, p=theta["prior:Z"])
            yy = rng.choice(2, p=theta["weight:Z->Y"][z])
            X.append([rng.choice(2, p=theta["weight:Z->A"][z]),
                      rng.choice(3, p=theta["weight:Y->B"][yy])])
        X = np.array(X)
        X[0, 1] = -1   # a missing symbol
        return X

    def make_problem(X):
        evidence, n = net._evidence(s, X, None)
        return _TreeProblem(s, evidence, n, 1.5)

    theta0 = {"prior:Z": np.full(2, 0.5), "weight:Z->Y": np.full((2, 2), 0.5),
              "weight:Z->A": np.full((2, 2), 0.5), "weight:Y->B": np.full((2, 3), 1 / 3)}
    geweke(make_problem, simulate, theta0, "w", sizes, seed)


CASES = {"hmm-categorical": categorical, "hmm-poisson": poisson,
         **{f"hmm-gaussian-{ct}": gaussian(ct) for ct in ("spherical", "diag", "full", "tied")},
         "hmm-gaussian-missing": gaussian("full", missing=True),
         "hmm-sticky-hdp": sticky_hdp, "props": props_blocks, "pcfg": pcfg, "plcg": plcg,
         "program": program, "nbh": nbh, "treenet": treenet}


@pytest.mark.parametrize("case", sorted(CASES))
def test_geweke_successive_conditional_matches_the_prior(case):
    CASES[case](FAST, seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_geweke_successive_conditional_matches_the_prior_long(case):
    CASES[case](SLOW, seed=1)
