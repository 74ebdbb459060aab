"""learn="gibbs" in the estimators: options and bad input, chains independent of the
number of threads, the relabelling of exchangeable states, the posterior-predictive scores
against their definition, saving and loading the draws, the ArviZ diagnostics, and the
sticky HDP-HMM's number of states on data of known K (the exact posteriors and Geweke's
test are in test_gibbs_exact.py and test_gibbs_geweke.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone

import hiddenstate as hs
from hiddenstate.errors import ConvergenceWarning, InvalidInputError, NotFittedError
from hiddenstate.learn.gibbs import StateGroup, relabel_draws

QUICK = {"n_samples": 60, "burn_in": 20, "n_chains": 2, "check_convergence": False}


@pytest.fixture(autouse=True)
def one_thread():
    """Small data: one numba and BLAS thread (the draws do not depend on it)."""
    import numba
    from threadpoolctl import threadpool_limits

    n = numba.get_num_threads()
    numba.set_num_threads(1)
    with threadpool_limits(1):
        yield
    numba.set_num_threads(n)


def two_state_data(T=300, seed=1):
    teacher = hs.HMM(n_states=2, n_features=3)
    teacher.startprob_ = [0.6, 0.4]
    teacher.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
    teacher.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
    return teacher.sample(T, random_state=seed)


# -- options and bad input ---------------------------------------------------------------------
@pytest.mark.parametrize("options, name", [
    ({"n_samples": 0}, "n_samples"),
    ({"n_samples": 100, "burn_in": 100}, "burn_in"),
    ({"n_samples": 100, "burn_in": 200}, "burn_in"),
    ({"thin": 0}, "thin"),
    ({"n_chains": 1.5}, "n_chains"),
    ({"n_samples": True}, "n_samples"),
    ({"chains": 4}, "learner_options"),
])
def test_bad_options_name_the_option(options, name):
    X, _ = two_state_data(50)
    for model in (hs.HMM(n_states=2, learn="gibbs", learner_options=options),
                  hs.PCFG({"S": [("a",)]}, learn="gibbs", learner_options=options)):
        data = X if isinstance(model, hs.HMM) else [["a"]]
        with pytest.raises(InvalidInputError, match=f"^{name}"):
            model.fit(data)


@pytest.mark.parametrize("kwargs, name", [
    ({"transmat_prior": 0.0}, "transmat_prior"),
    ({"emissionprob_prior": -1.0}, "emissionprob_prior"),
    ({"n_init": 3}, "n_init"),
    ({"transmat_prior": "sticky"}, "transmat_prior"),
])
def test_bad_priors_name_the_prior(kwargs, name):
    X, _ = two_state_data(50)
    with pytest.raises(InvalidInputError, match=f"^{name}"):
        hs.HMM(n_states=2, learn="gibbs", learner_options=QUICK, **kwargs).fit(X)


def test_improper_gaussian_and_poisson_priors_are_refused():
    X = np.random.default_rng(0).normal(size=(40, 2))
    with pytest.raises(InvalidInputError, match="^means_weight: learn='gibbs'"):
        hs.HMM(n_states=2, emission="gaussian", learn="gibbs", means_weight=0.0,
               learner_options=QUICK).fit(X)
    with pytest.raises(InvalidInputError, match="^covars_weight: learn='gibbs'"):
        hs.HMM(n_states=2, emission="gaussian", covariance_type="full", learn="gibbs",
               covars_weight=0.5, learner_options=QUICK).fit(X)
    with pytest.raises(InvalidInputError, match="^lambdas_weight: learn='gibbs'"):
        hs.HMM(n_states=2, emission="poisson", learn="gibbs", lambdas_weight=0.0,
               learner_options=QUICK).fit(np.abs(np.round(X * 3)))


def test_other_models_refuse_bad_priors_and_options():
    with pytest.raises(InvalidInputError, match="^prior"):
        hs.PCFG({"S": [("a",)]}, learn="gibbs", prior=-1.0).fit([["a"]])
    with pytest.raises(InvalidInputError, match="^learner_options: only learn='gibbs'"):
        hs.PCFG({"S": [("a",)]}, learn="em", learner_options={"n_samples": 5}).fit([["a"]])
    with pytest.raises(InvalidInputError, match="^n_init: learn='gibbs'"):
        hs.NaiveBayesHidden(n_clusters=2, learn="gibbs", n_init=2).fit([["a"]], ["y"])
    with pytest.raises(InvalidInputError, match="^prior"):
        hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A")], observed={"A": 2},
                   learn="gibbs", prior=0.0).fit([[0]])


def test_a_family_without_a_conjugate_posterior_refuses():
    X = np.random.default_rng(0).normal(size=(40, 1))
    with pytest.raises(InvalidInputError, match="^learn: 'gibbs' .* GMMEmissions has none"):
        hs.HMM(n_states=2, emission="gmm", n_mix=2, learn="gibbs",
               learner_options=QUICK).fit(X)


def test_a_problem_without_a_sampler_refuses():
    from hiddenstate.learn import gibbs

    class NoSampler:
        blocks, letters = {}, {}

    with pytest.raises(InvalidInputError, match="^learn: 'gibbs' .* NoSampler cannot"):
        gibbs.sample(NoSampler(), lambda c: {}, which="", rng=np.random.default_rng(0))


def test_the_batch_learner_refuses_gibbs():
    from hiddenstate import learn

    for run in (lambda: learn.fit(None, "gibbs", {}, learn.ConvergenceMonitor(1e-4, 10),
                                  "s"),
                lambda: learn.fit_restarts(None, "gibbs", lambda r: {}, which="s")):
        with pytest.raises(InvalidInputError) as err:
            run()
        text = str(err.value)
        assert text.startswith("learn: 'gibbs' (Gibbs sampling)")
        for words in ("conjugate posterior", "docs/gibbs.md", "learn='vb'", "learn='map'"):
            assert words in text


def test_sticky_hdp_needs_gibbs_and_valid_options():
    X, _ = two_state_data(50)
    with pytest.raises(InvalidInputError, match="^transmat_prior: 'sticky-hdp' is a prior "):
        hs.HMM(n_states=3, learn="map", transmat_prior="sticky-hdp").fit(X)
    with pytest.raises(InvalidInputError, match="^kappa: alpha and kappa"):
        hs.HMM(n_states=3, learn="gibbs", transmat_prior="sticky-hdp",
               learner_options={"alpha": 1.0}).fit(X)
    with pytest.raises(InvalidInputError, match="^gamma_prior"):
        hs.HMM(n_states=3, learn="gibbs", transmat_prior="sticky-hdp",
               learner_options={"gamma_prior": (1.0, -1.0)}).fit(X)
    with pytest.raises(InvalidInputError, match="^transmat_prior: 'sticky-hdp' draws every"):
        hs.HMM(n_states=3, learn="gibbs", transmat_prior="sticky-hdp",
               topology="left-right").fit(X)
    with pytest.raises(InvalidInputError, match="^learner_options: 'alpha' is not an option"):
        hs.HMM(n_states=3, learn="gibbs", learner_options={"alpha": 1.0}).fit(X)


# -- chains -----------------------------------------------------------------------------------
def test_draws_do_not_depend_on_the_number_of_threads():
    X, _ = two_state_data(200)
    runs = [hs.HMM(n_states=2, learn="gibbs", random_state=3,
                   learner_options={**QUICK, "n_chains": 3, "n_jobs": n_jobs}).fit(X)
            for n_jobs in (1, 3)]
    for name, value in runs[0].posterior_samples_.items():
        assert np.array_equal(value, runs[1].posterior_samples_[name])
    assert np.array_equal(runs[0].sample_log_joint_, runs[1].sample_log_joint_)
    again = clone(runs[0]).fit(X)
    assert np.array_equal(again.transmat_, runs[0].transmat_)


def test_thinning_and_burn_in_keep_the_right_sweeps():
    X, _ = two_state_data(100)
    model = hs.HMM(n_states=2, learn="gibbs", random_state=0,
                   learner_options={"n_samples": 50, "burn_in": 10, "thin": 4, "n_chains": 2,
                                    "check_convergence": False}).fit(X)
    assert model.posterior_samples_["transmat_"].shape == (2, 10, 2, 2)
    history = np.array(model.monitor_.history)
    assert len(history) == 50
    # chain 0's kept log joints are its sweeps 10, 14, ..., 46 (the state at their start)
    assert np.array_equal(model.sample_log_joint_[0], history[10::4])


def test_path_log_joint_equals_enumeration():
    """The log joint the sampler records for a drawn path, log p(x, z), against the
    brute-force value of that path (tests/brute_force.py), Gaussian (scaled table) and
    categorical (by-symbol table)."""
    from brute_force import path_log_joint

    rng = np.random.default_rng(5)
    for emission, X in (("categorical", rng.integers(0, 3, size=7)),
                        ("gaussian", rng.normal(size=(7, 2)) * 30)):
        model = hs.HMM(n_states=3, emission=emission, learn="gibbs")
        Xv, seqs = model.validate_data(X, [4, 3], 3 if emission == "categorical" else 2)
        family = model.emission_family(3 if emission == "categorical" else 2, Xv)
        problem = model.problem(family, Xv, seqs)
        start, trans = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3), 3)
        emis = ({"emissionprob": rng.dirichlet(np.ones(3), 3)} if emission == "categorical"
                else {"means": rng.normal(size=(3, 2)) * 30, "covars": np.full((3, 2), 40.0)})
        views = {"startprob": start, "transmat": trans, "emission": emis}
        log_e = family.log_likelihood(emis, Xv)
        logp, _, states = problem.sample_counts(views, rng)
        want = 0.0
        for lo, hi in ((0, 4), (4, 7)):
            paths, lp = path_log_joint(start, trans, log_e[lo:hi])
            want += lp[np.flatnonzero((paths == states[lo:hi]).all(axis=1))[0]]
        assert logp == pytest.approx(want, rel=1e-12)


def test_path_log_joint_kernel_with_tiny_factors_and_long_paths():
    """The kernel multiplies probabilities and takes a log only when the product runs low:
    against the sum of logs on paths whose factors range from 1 down to a subnormal
    (1e-310), over 5,000 steps, with a log offset; -inf for a zero factor or a -1 state."""
    from hiddenstate.kernels.paths import path_log_joint

    rng = np.random.default_rng(11)
    K, W, N = 3, 4, 5000
    start = np.array([0.5, 0.5 - 1e-200, 1e-200])
    trans = np.array([[1 - 2e-160, 1e-160, 1e-160], [0.3, 0.4, 0.3], [1e-310, 0.5, 0.5]])
    emis = np.array([[0.9, 1e-120, 0.05], [0.05, 0.5, 1e-300], [0.05, 0.5, 0.5],
                     [1e-180, 1e-5, 0.45]])
    idx = rng.integers(0, W, N)
    states = rng.integers(0, K, N)
    offset = rng.normal(size=N)
    bounds = np.array([0, 1, 1200, 4000, N])
    for has_offset in (False, True):
        out = np.empty(4)
        path_log_joint(start, trans, emis, idx, offset, has_offset, bounds, states, out)
        for s, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            z = states[lo:hi]
            want = (np.log(start[z[0]]) + np.log(trans[z[:-1], z[1:]]).sum()
                    + np.log(emis[idx[lo:hi], z]).sum() + has_offset * offset[lo:hi].sum())
            assert out[s] == pytest.approx(want, rel=1e-12)
    bad = states.copy()
    bad[2000] = -1
    zero = emis.copy()
    zero[idx[10], states[10]] = 0.0
    for e, z in ((emis, bad), (zero, states)):
        out = np.empty(4)
        path_log_joint(start, trans, e, idx, offset, False, bounds, z, out)
        assert np.isneginf(out[2 if z is bad else 1]) and np.isfinite(out[0])


# -- relabelling --------------------------------------------------------------------------------
def test_align_states_recovers_known_permutations():
    rng = np.random.default_rng(0)
    K = 4
    truth = {"startprob": rng.dirichlet(np.ones(K)), "transmat": rng.dirichlet(np.ones(K), K),
             "emission": {"means": np.arange(K)[:, None] * 3.0, "covars": np.ones((K, 1))}}
    group = StateGroup(K, [("startprob", (), (0,), 0), ("transmat", (), (0, 1), 0),
                           ("emission.means", (), (0,), 0), ("emission.covars", (), (0,), 0)])
    draws, perms = [], []
    for _ in range(30):
        p = rng.permutation(K)
        noisy = {"startprob": truth["startprob"][p],
                 "transmat": truth["transmat"][np.ix_(p, p)],
                 "emission": {"means": truth["emission"]["means"][p]
                              + 0.1 * rng.standard_normal((K, 1)),
                              "covars": truth["emission"]["covars"][p]}}
        draws.append(noisy)
        perms.append(p)
    out, found = relabel_draws([draws], [group], (0, 0))
    ref = np.argsort(perms[0])   # the reference's labels: draw 0's
    for d, p in enumerate(perms):
        assert np.array_equal(p[found[0][0, d]], perms[0])
        assert np.allclose(out[0][d]["transmat"], truth["transmat"][np.ix_(perms[0],
                                                                           perms[0])])
    del ref


def test_fitted_states_are_relabelled_across_chains():
    """Two well separated states: every chain, whatever its start, ends with the same
    labels after relabelling, so the posterior mean is a sharp estimate, not an average of
    the two states."""
    rng = np.random.default_rng(0)
    z = np.repeat([0, 1, 0, 1], 50)
    X = np.array([-3.0, 3.0])[z][:, None] + rng.normal(size=(200, 1))
    model = hs.HMM(n_states=2, emission="gaussian", learn="gibbs", random_state=0,
                   learner_options={**QUICK, "n_chains": 4}).fit(X)
    means = model.posterior_samples_["means_"][..., 0]       # (chains, draws, K)
    assert np.all(np.abs(means - means[:1, :1]) < 1.0)
    assert sorted(np.round(model.means_.ravel())) == [-3.0, 3.0]
    perms = [np.argsort(m) for m in model.posterior_samples_["means_"][:, -1, :, 0]]
    assert all(np.array_equal(p, perms[0]) for p in perms)


# -- scores ---------------------------------------------------------------------------------------
def plug_in_scores(model, X, *args):
    """log p(x_i | theta_s) of every draw, by setting each draw's parameters by hand on a
    fresh copy fitted with EM (no posterior_samples_)."""
    rows = []
    samples = model.posterior_samples_
    n_chains, n_draws = model.sample_log_joint_.shape
    for c in range(n_chains):
        for d in range(n_draws):
            copy = clone(model).set_params(learn="em", learner_options=None)
            copy.n_features_ = model.n_features_
            if isinstance(model, hs.HMM):
                emission = {k: samples[k + "_"][c, d] for k in model._emission_keys().values()}
                copy.assign_params(samples["startprob_"][c, d], samples["transmat_"][c, d],
                                   emission)
            else:
                copy.theta_ = samples["theta_"][c, d]
            rows.append(copy.score_samples(X, *args))
    return np.array(rows)


def test_posterior_predictive_scores_are_the_average_of_the_draws():
    X, _ = two_state_data(120)
    model = hs.HMM(n_states=2, learn="gibbs", random_state=0, learner_options=QUICK)
    model.fit(X, lengths=[60, 60])
    rows = plug_in_scores(model, X, [60, 60])
    want = np.log(np.mean(np.exp(rows - rows.max(axis=0)), axis=0)) + rows.max(axis=0)
    got = model.score_samples(X, [60, 60])
    assert np.allclose(got, want, rtol=1e-12)
    assert model.score(X, [60, 60]) == got.sum()
    # the point estimate's own score is another number: the plug-in at the posterior mean
    plug = clone(model).set_params(learn="em", learner_options=None)
    plug.assign_params(model.startprob_, model.transmat_, model.emission_params())
    assert not np.allclose(plug.score_samples(X, [60, 60]), got)
    # the model is left as it was
    assert np.array_equal(model.score_samples(X, [60, 60]), got)


def test_pcfg_posterior_predictive():
    rules = {"S": [("A", "B"), ("B", "A")], "A": [("a",), ("b",)], "B": [("a",), ("b",)]}
    sentences = [["a", "b"], ["b", "a"], ["a", "a"]]
    model = hs.PCFG(rules, learn="gibbs", random_state=0, learner_options=QUICK)
    model.fit(sentences)
    rows = plug_in_scores(model, sentences)
    want = np.log(np.mean(np.exp(rows), axis=0))
    assert np.allclose(model.score_samples(sentences), want, rtol=1e-12)


def test_refitting_with_another_mode_forgets_the_draws():
    X, _ = two_state_data(100)
    model = hs.HMM(n_states=2, learn="gibbs", random_state=0, learner_options=QUICK).fit(X)
    assert hasattr(model, "posterior_samples_")
    model.set_params(learn="em", learner_options=None).fit(X)
    assert not hasattr(model, "posterior_samples_")
    with pytest.raises(NotFittedError):
        _ = model.best_sample_


def test_best_sample_has_the_highest_log_joint():
    X, _ = two_state_data(100)
    model = hs.HMM(n_states=2, learn="gibbs", random_state=0, learner_options=QUICK).fit(X)
    c, d = np.unravel_index(np.argmax(model.sample_log_joint_), model.sample_log_joint_.shape)
    assert np.array_equal(model.best_sample_["transmat_"],
                          model.posterior_samples_["transmat_"][c, d])
    assert np.allclose(model.transmat_, model.posterior_samples_["transmat_"].mean(axis=(0, 1)))


# -- saving ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["hmm", "treenet", "program"])
def test_saved_draws_score_as_before(tmp_path, which):
    if which == "hmm":
        X, _ = two_state_data(80)
        model = hs.HMM(n_states=2, learn="gibbs", random_state=0, learner_options=QUICK)
        model.fit(X)
        score = lambda m: m.score_samples(X)   # noqa: E731
    elif which == "treenet":
        X = np.random.default_rng(0).integers(0, 3, size=(40, 2))
        model = hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
                           observed={"A": 3, "B": 3}, learn="gibbs", random_state=0,
                           learner_options=QUICK).fit(X)
        score = lambda m: m.score_samples(X)   # noqa: E731
    else:
        from hiddenstate.programs import Program, msw

        prog = Program("coins")
        prog.switch("coin", ["a", "b"])
        toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])

        @prog.goal
        def two(x, y):
            return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]

        goals = [two("h", "h"), two("t", "t"), two("h", "t")]
        model = hs.ProgramModel(prog, learn="gibbs", random_state=0,
                                learner_options=QUICK).fit(goals)
        score = lambda m: m.score_samples(goals)   # noqa: E731
    model.save(tmp_path / "m")
    loaded = hs.load(tmp_path / "m", **({"program": model.program} if which == "program"
                                        else {}))
    assert np.array_equal(score(loaded), score(model))
    for name, value in model.posterior_samples_.items():
        assert np.array_equal(loaded.posterior_samples_[name], value)


# -- diagnostics ---------------------------------------------------------------------------------
def test_inference_data_and_convergence_report():
    pytest.importorskip("arviz")
    X, _ = two_state_data(200)
    model = hs.HMM(n_states=2, learn="gibbs", random_state=0,
                   learner_options={"n_samples": 400, "burn_in": 100, "n_chains": 2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X)
    idata = model.to_inference_data()
    assert idata.posterior["transmat_"].shape == (2, 300, 2, 2)
    assert idata.sample_stats["lp"].shape == (2, 300)
    report = model.convergence_
    assert len(report["names"]) == len(report["r_hat"]) == len(report["ess_bulk"])
    assert "transmat_[0, 1]" in report["names"]


def test_a_chain_too_short_to_converge_warns():
    pytest.importorskip("arviz")
    X, _ = two_state_data(300)
    model = hs.HMM(n_states=2, learn="gibbs", random_state=0,
                   learner_options={"n_samples": 12, "burn_in": 2, "n_chains": 2})
    with pytest.warns(ConvergenceWarning, match="chains have not converged"):
        model.fit(X)
    assert model.monitor_.converged is False


# -- the sticky HDP-HMM: the number of states ------------------------------------------------------
def sticky_data(K: int, T: int, seed: int, sep: float = 4.0):
    """A sticky chain of K states (each holding at least 5% of the steps), unit Gaussian
    noise around means ``sep`` apart."""
    rng = np.random.default_rng(seed)
    while True:
        A = np.full((K, K), 0.05 / max(K - 1, 1))
        np.fill_diagonal(A, 0.95 if K > 1 else 1.0)
        z = [rng.integers(K)]
        for _ in range(T - 1):
            z.append(rng.choice(K, p=A[z[-1]]))
        z = np.array(z)
        if np.bincount(z, minlength=K).min() >= 0.05 * T:
            return (sep * z + rng.normal(size=T))[:, None]


def hdp_mode(K, T, seed, sweeps, sep=4.0):
    model = hs.HMM(n_states=10, emission="gaussian", learn="gibbs",
                   transmat_prior="sticky-hdp", random_state=0,
                   learner_options={"n_samples": sweeps, "burn_in": sweeps // 3,
                                    "n_chains": 2, "check_convergence": False})
    model.fit(sticky_data(K, T, seed, sep))
    p = model.n_states_posterior()
    return int(np.argmax(p)), p


@pytest.mark.parametrize("K", [1, 3])
def test_sticky_hdp_finds_the_number_of_states(K):
    mode, p = hdp_mode(K, 500, seed=0, sweeps=450)
    assert mode == K, p.round(2)


@pytest.mark.slow
@pytest.mark.parametrize("K, seed", [(1, 1), (3, 1), (5, 0), (5, 1), (8, 0), (8, 1)])
def test_sticky_hdp_finds_the_number_of_states_long(K, seed):
    mode, p = hdp_mode(K, 1200, seed=seed, sweeps=1500, sep=5.0)
    assert mode == K, p.round(2)


def test_report_has_a_gibbs_section(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("arviz")
    from hiddenstate.report import REPORT_FILES, write_report

    X, _ = two_state_data(150)
    model = hs.HMM(n_states=2, learn="gibbs", random_state=0,
                   learner_options={"n_samples": 60, "burn_in": 20, "n_chains": 2,
                                    "check_convergence": False}).fit(X)
    index = write_report(model, tmp_path, X=X)
    page = index.read_text()
    assert 'id="gibbs"' in page and "R-hat" in page and "2 chains of 40 kept draws" in page
    written = {p.name for p in tmp_path.iterdir()}
    assert {"gibbs_trace.png", "gibbs_rank.png"} <= written <= REPORT_FILES
