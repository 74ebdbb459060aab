"""Variational Bayes for Gaussian (Normal-Wishart / Normal-Gamma) and Poisson (Gamma)
emissions: the expected log-likelihood table and the KL against independent computations
(per-dimension Gamma expectations, Monte Carlo under q with scipy densities), the update as
the exact maximiser of the bound, end-to-end fits (monotone bound, VB -> EM as data grow)
and a differential test against hmmlearn's VariationalGaussianHMM."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import digamma

import hiddenstate
from hiddenstate.errors import InvalidInputError
from hiddenstate.families import GaussianEmissions, PoissonEmissions
from hiddenstate.inference import Sequences
from hiddenstate.learn import ConvergenceMonitor
from hiddenstate.learn import fit as learn_fit

CTS = ("spherical", "diag", "full", "tied")
LOG_2PI = np.log(2 * np.pi)


# -- helpers -------------------------------------------------------------------------------------
def random_spd(rng, D, scale=1.0):
    A = rng.standard_normal((D, D))
    return scale * (A @ A.T / D + 0.5 * np.eye(D))


def prior_kwargs(rng, ct, K, D):
    """A proper, non-trivial prior (per-state values where the type allows)."""
    kw = {"means_prior": rng.standard_normal((K, D)), "means_weight": rng.uniform(0.5, 2, K)}
    if ct == "spherical":
        kw.update(covars_prior=rng.uniform(0.5, 2, K), covars_weight=rng.uniform(1, 3, K))
    elif ct == "diag":
        kw.update(covars_prior=rng.uniform(0.5, 2, (K, D)), covars_weight=rng.uniform(1, 3, K))
    elif ct == "full":
        kw.update(covars_prior=np.stack([random_spd(rng, D) for _ in range(K)]),
                  covars_weight=D - 1 + rng.uniform(0.5, 2, K))
    else:
        kw.update(covars_prior=random_spd(rng, D), covars_weight=D + 0.7)
    return kw


def random_q(rng, ct, K, D):
    """An arbitrary posterior of the family's form (not the result of an update)."""
    q = {"means": rng.standard_normal((K, D)), "beta": rng.uniform(0.5, 5, K)}
    if ct == "spherical":
        q.update(dof=rng.uniform(0.5, 6, K), scale=rng.uniform(0.5, 3, K))
    elif ct == "diag":
        q.update(dof=rng.uniform(0.5, 6, K), scale=rng.uniform(0.5, 3, (K, D)))
    elif ct == "full":
        q.update(dof=D - 1 + rng.uniform(0.5, 6, K),
                 scale=np.stack([random_spd(rng, D, 2.0) for _ in range(K)]))
    else:
        q.update(dof=np.asarray(D - 1 + 4.3), scale=random_spd(rng, D, 2.0))
    return q


def draw_precisions(rng, ct, dof, scale, D, M):
    """M draws of a state's precision matrix (M, D, D) under q (independent samplers)."""
    if ct == "spherical":
        lam = rng.gamma(D * dof / 2, 2 / (D * scale), size=M)
        return lam[:, None, None] * np.eye(D)
    if ct == "diag":
        lam = rng.gamma(dof / 2, 2 / scale, size=(M, D))
        return np.einsum("md,de->mde", lam, np.eye(D))
    return stats.wishart(df=dof, scale=np.linalg.inv(scale)).rvs(size=M, random_state=rng)


def state_q(q, ct, k):
    dof = np.broadcast_to(q["dof"], (len(q["beta"]),))[k]
    scale = q["scale"] if ct == "tied" else q["scale"][k]
    return float(dof), scale


def log_precision_density(ct, lam, dof, scale, D):
    """log q(Lambda) of draws lam (M, D, D) with scipy's densities."""
    if ct == "spherical":
        return stats.gamma(D * dof / 2, scale=2 / (D * scale)).logpdf(lam[:, 0, 0])
    if ct == "diag":
        d = np.diagonal(lam, axis1=1, axis2=2)
        return stats.gamma(dof / 2, scale=2 / scale).logpdf(d).sum(axis=1)
    # scipy's Wishart density at the identity gives its normaliser; the kernel
    # |L|^{(nu - D - 1)/2} exp(-tr(S L)/2) is then evaluated for all draws at once (scipy's
    # logpdf on 200k matrices is slow)
    log_norm = (stats.wishart(df=dof, scale=np.linalg.inv(scale)).logpdf(np.eye(D))
                + 0.5 * np.trace(scale))
    return (log_norm + 0.5 * (dof - D - 1) * np.linalg.slogdet(lam)[1]
            - 0.5 * np.einsum("ij,mji->m", scale, lam))


def log_normal(x, mean, prec):
    """log N(x | mean, prec^{-1}) for stacks: x, mean (M, D), prec (M, D, D)."""
    d = x - mean
    D = d.shape[-1]
    return 0.5 * (np.linalg.slogdet(prec)[1] - D * LOG_2PI
                  - np.einsum("mi,mij,mj->m", d, prec, d))


def bound(family, q, X, post):
    """Sum_tk gamma_tk E_q[log p(x_t | k)] - KL(q || p): maximised over q by vb_update."""
    table = family.log_likelihood(family.vb_expected(q), X)
    return float(np.sum(post * table) - family.vb_kl(q))


# -- the expected log-likelihood table -----------------------------------------------------------
@pytest.mark.parametrize("ct", ["diag", "spherical"])
def test_expected_loglik_per_dimension_gamma(ct):
    """Diag/spherical: sum over dimensions of 1/2 E[log l] - 1/2 log 2pi - 1/2 E[l](x-m)^2
    - 1/(2 beta), with E[l] = a/b, E[log l] = psi(a) - log b of the Gamma(a, b) precision."""
    rng = np.random.default_rng(0)
    K, D = 3, 4
    fam = GaussianEmissions(K, D, ct, **prior_kwargs(rng, ct, K, D))
    q = random_q(rng, ct, K, D)
    X = rng.standard_normal((20, D)) * 2
    got = fam.log_likelihood(fam.vb_expected(q), X)
    if ct == "diag":
        a, b = np.broadcast_to(q["dof"][:, None] / 2, (K, D)), q["scale"] / 2
    else:
        a = np.broadcast_to((D * q["dof"] / 2)[:, None], (K, D))
        b = np.broadcast_to((D * q["scale"] / 2)[:, None], (K, D))
    e_log, e_lam = digamma(a) - np.log(b), a / b
    want = np.zeros((len(X), K))
    for k in range(K):
        for d in range(D):
            want[:, k] += (0.5 * e_log[k, d] - 0.5 * LOG_2PI
                           - 0.5 * e_lam[k, d] * (X[:, d] - q["means"][k, d]) ** 2
                           - 0.5 / q["beta"][k])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("ct", CTS)
def test_expected_loglik_monte_carlo(ct):
    """E_q[log N(x | mu, Lambda^{-1})] by 200k draws of (mu, Lambda) from q; 5 sigma."""
    rng = np.random.default_rng(1)
    K, D, M = 2, 3, 200_000
    fam = GaussianEmissions(K, D, ct, **prior_kwargs(rng, ct, K, D))
    q = random_q(rng, ct, K, D)
    X = rng.standard_normal((4, D)) * 1.5
    got = fam.log_likelihood(fam.vb_expected(q), X)
    for k in range(K):
        dof, scale = state_q(q, ct, k)
        lam = draw_precisions(rng, ct, dof, scale, D, M)
        chol = np.linalg.cholesky(np.linalg.inv(q["beta"][k] * lam))
        mu = q["means"][k] + np.einsum("mij,mj->mi", chol, rng.standard_normal((M, D)))
        for t, x in enumerate(X):
            vals = log_normal(np.broadcast_to(x, (M, D)), mu, lam)
            tol = 5 * vals.std() / np.sqrt(M)
            assert abs(got[t, k] - vals.mean()) < tol, (ct, k, t, got[t, k], vals.mean(), tol)


def test_point_parameters_unchanged():
    """Without the variational keys the table is the plain Gaussian log density."""
    rng = np.random.default_rng(2)
    K, D = 2, 3
    X = rng.standard_normal((10, D))
    means = rng.standard_normal((K, D))
    covs = np.stack([random_spd(rng, D) for _ in range(K)])
    fam = GaussianEmissions(K, D, "full")
    got = fam.log_likelihood({"means": means, "covars": covs}, X)
    want = np.stack([stats.multivariate_normal(means[k], covs[k]).logpdf(X)
                     for k in range(K)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-12)


# -- KL(q || p) ----------------------------------------------------------------------------------
@pytest.mark.parametrize("ct", CTS)
def test_kl_monte_carlo(ct):
    """KL = E_q[log q(mu, Lambda) - log p(mu, Lambda)] by 200k draws, scipy's Gamma/Wishart
    log densities; 5 sigma."""
    rng = np.random.default_rng(3)
    K, D, M = 2, 3, 200_000
    kw = prior_kwargs(rng, ct, K, D)
    fam = GaussianEmissions(K, D, ct, **kw)
    p = fam._vb_prior()
    q = random_q(rng, ct, K, D)
    got = fam.vb_kl(q)
    total = np.zeros(M)
    shared = None
    for k in range(K):
        dof, scale = state_q(q, ct, k)
        dof0, scale0 = state_q(p, ct, k)
        if ct != "tied" or shared is None:
            lam = draw_precisions(rng, ct, dof, scale, D, M)
            total += (log_precision_density(ct, lam, dof, scale, D)
                      - log_precision_density(ct, lam, dof0, scale0, D))
            shared = lam
        lam = shared
        chol = np.linalg.cholesky(np.linalg.inv(q["beta"][k] * lam))
        mu = q["means"][k] + np.einsum("mij,mj->mi", chol, rng.standard_normal((M, D)))
        total += (log_normal(mu, np.broadcast_to(q["means"][k], (M, D)), q["beta"][k] * lam)
                  - log_normal(mu, np.broadcast_to(p["means"][k], (M, D)), p["beta"][k] * lam))
    tol = 5 * total.std() / np.sqrt(M)
    assert abs(got - total.mean()) < tol, (got, total.mean(), tol)


@pytest.mark.parametrize("ct", CTS)
def test_kl_zero_at_prior(ct):
    rng = np.random.default_rng(4)
    fam = GaussianEmissions(3, 2, ct, **prior_kwargs(rng, ct, 3, 2))
    assert abs(fam.vb_kl(fam._vb_prior())) < 1e-12
    assert fam.vb_kl(random_q(rng, ct, 3, 2)) > 0


def test_wishart_kl_matches_hmmlearn_helper():
    """Our Wishart KL against hmmlearn's independent implementation (Ji et al. 2006)."""
    from hmmlearn import _kl_divergence as hkl

    from hiddenstate.families.gaussian import _kl_wishart

    rng = np.random.default_rng(5)
    for D in (1, 2, 4):
        S, S0 = random_spd(rng, D, 3.0), random_spd(rng, D)
        nu, nu0 = D + 3.3, D - 0.5
        np.testing.assert_allclose(_kl_wishart(nu, S, nu0, S0),
                                   hkl.kl_wishart_distribution(nu, S, nu0, S0), rtol=1e-11)


def test_poisson_table_and_kl():
    """E_q[log Poisson(x | l)] in closed form vs Monte Carlo and Gamma KL vs Monte Carlo."""
    rng = np.random.default_rng(6)
    K, D, M = 2, 3, 400_000
    fam = PoissonEmissions(K, D, lambdas_prior=rng.uniform(-0.5, 2, (K, D)),
                           lambdas_weight=rng.uniform(0.1, 2, D))
    q = {"lambdas_shape": rng.uniform(0.5, 20, (K, D)), "lambdas_rate": rng.uniform(0.5, 5, (K, D))}
    X = rng.poisson(3, size=(5, D)).astype(float)
    got = fam.log_likelihood(fam.vb_expected(q), X)
    lam = rng.gamma(q["lambdas_shape"], 1 / q["lambdas_rate"], size=(M, K, D))
    for t, x in enumerate(X):
        vals = stats.poisson(lam).logpmf(x).sum(axis=2)  # (M, K)
        tol = 5 * vals.std(axis=0) / np.sqrt(M)
        assert np.all(np.abs(got[t] - vals.mean(axis=0)) < tol)
    a0 = fam.lambdas_prior + 1.0
    b0 = np.broadcast_to(fam.lambdas_weight, (K, D))
    ratio = (stats.gamma(q["lambdas_shape"], scale=1 / q["lambdas_rate"]).logpdf(lam)
             - stats.gamma(a0, scale=1 / b0).logpdf(lam)).sum(axis=(1, 2))
    assert abs(fam.vb_kl(q) - ratio.mean()) < 5 * ratio.std() / np.sqrt(M)


# -- the update maximises the bound --------------------------------------------------------------
def perturb(rng, q, eps):
    out = {}
    for key, v in q.items():
        v = np.asarray(v, dtype=np.float64)
        if key == "means":
            out[key] = v + eps * rng.standard_normal(v.shape)
        elif key == "scale" and v.ndim >= 2 and v.shape[-1] == v.shape[-2]:
            B = np.eye(v.shape[-1]) + eps * rng.standard_normal(v.shape)
            out[key] = B @ v @ np.swapaxes(B, -1, -2)  # stays positive definite
        else:
            out[key] = v * np.exp(eps * rng.standard_normal(v.shape))
    return out


@pytest.mark.parametrize("ct", CTS)
def test_update_maximises_bound(ct):
    """For fixed posteriors gamma, vb_update is the argmax over q of
    sum gamma E_q[log p(x | k)] - KL(q || p): every perturbation lowers it (this ties the
    table, the KL and the update together, q-dependent constants included)."""
    rng = np.random.default_rng(7)
    K, D, N = 3, 2, 60
    fam = GaussianEmissions(K, D, ct, **prior_kwargs(rng, ct, K, D))
    X = rng.standard_normal((N, D)) * 2 + 1
    post = rng.dirichlet(np.ones(K), size=N)
    best = fam.vb_update(None, fam.statistics(X, post), "mc")
    f_best = bound(fam, best, X, post)
    for eps in (1e-1, 1e-3):
        for _ in range(20):
            assert bound(fam, perturb(rng, best, eps), X, post) < f_best


def test_poisson_update_maximises_bound():
    rng = np.random.default_rng(8)
    K, D, N = 3, 2, 50
    fam = PoissonEmissions(K, D, lambdas_prior=0.5, lambdas_weight=0.2)
    X = rng.poisson(4, size=(N, D)).astype(float)
    post = rng.dirichlet(np.ones(K), size=N)
    best = fam.vb_update(None, fam.statistics(X, post), "l")
    f_best = bound(fam, best, X, post)
    for eps in (1e-1, 1e-3):
        for _ in range(20):
            assert bound(fam, perturb(rng, best, eps), X, post) < f_best


@pytest.mark.parametrize("ct", CTS)
def test_init_which_and_mean(ct):
    """vb_init is centred on params as n_virtual grows; vb_mean is a valid check_params
    input; letters outside which keep their part of q."""
    rng = np.random.default_rng(9)
    K, D = 3, 2
    fam = GaussianEmissions(K, D, ct, **prior_kwargs(rng, ct, K, D))
    theta = fam.check_params(fam.vb_mean(random_q(rng, ct, K, D)))
    back = fam.vb_mean(fam.vb_init(theta, 1e9))
    for key in theta:
        np.testing.assert_allclose(back[key], theta[key], rtol=1e-7, atol=1e-7)
    q = fam.vb_init(theta, 10.0)
    X = rng.standard_normal((30, D))
    s = fam.statistics(X, rng.dirichlet(np.ones(K), size=30))
    assert fam.vb_update(q, s, "") is q
    only_m = fam.vb_update(q, s, "m")
    np.testing.assert_array_equal(only_m["scale"], q["scale"])
    np.testing.assert_array_equal(only_m["dof"], q["dof"])
    only_c = fam.vb_update(q, s, "c")
    np.testing.assert_array_equal(only_c["means"], q["means"])
    np.testing.assert_array_equal(only_c["beta"], q["beta"])
    assert not np.array_equal(only_c["scale"], q["scale"])


# -- improper priors -----------------------------------------------------------------------------
@pytest.mark.parametrize(("kwargs", "name"), [
    ({"means_weight": 0.0}, "means_weight"),
    ({"covars_weight": 1.0}, "covars_weight"),  # full, D = 3: needs > 2
    ({"covars_prior": 0.0}, "covars_prior"),
    ({"covars_prior": -np.eye(3)}, "covars_prior"),
])
def test_improper_gaussian_prior_is_refused(kwargs, name):
    X = np.random.default_rng(10).standard_normal((50, 3))
    base = {"means_prior": 0.0, "means_weight": 1.0, "covars_prior": 1.0, "covars_weight": 3.0}
    model = hiddenstate.HMM(2, emission="gaussian", covariance_type="full", learn="vb",
                            random_state=0, **{**base, **kwargs})
    with pytest.raises(InvalidInputError, match=name):
        model.fit(X)


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"lambdas_weight": 0.0}, "lambdas_weight"), ({"lambdas_prior": -1.0}, "lambdas_prior")])
def test_improper_poisson_prior_is_refused(kwargs, name):
    X = np.random.default_rng(11).poisson(3, size=(50, 2))
    model = hiddenstate.HMM(2, emission="poisson", learn="vb", random_state=0,
                            **{"lambdas_prior": 0.0, "lambdas_weight": 1.0, **kwargs})
    with pytest.raises(InvalidInputError, match=name):
        model.fit(X)


# -- end to end ----------------------------------------------------------------------------------
TRUE = {
    "startprob": np.array([0.5, 0.3, 0.2]),
    "transmat": np.array([[0.8, 0.1, 0.1], [0.15, 0.75, 0.1], [0.1, 0.2, 0.7]]),
    "means": np.array([[0.0, 0.0], [3.0, 2.0], [-2.0, 3.0]]),
    "covars": np.array([[[0.6, 0.2], [0.2, 0.5]], [[0.4, -0.1], [-0.1, 0.8]],
                        [[0.7, 0.0], [0.0, 0.3]]]),
}
VB_PRIORS = {"means_prior": 0.0, "means_weight": 1.0, "covars_prior": 0.1,
             "covars_weight": 2.0}


def sample_true(n, seed):
    gen = hiddenstate.HMM(3, emission="gaussian", covariance_type="full")
    gen.startprob_, gen.transmat_ = TRUE["startprob"], TRUE["transmat"]
    gen.means_, gen.covars_, gen.n_features_ = TRUE["means"], TRUE["covars"], 2
    return gen.sample(n, random_state=seed)[0]


def true_covars(ct):
    c = TRUE["covars"]
    return {"full": c, "tied": c.mean(axis=0), "diag": np.diagonal(c, axis1=1, axis2=2),
            "spherical": np.diagonal(c, axis1=1, axis2=2).mean(axis=1)}[ct]


@pytest.mark.parametrize("ct", CTS)
def test_vb_bound_never_decreases(ct):
    X = sample_true(1500, 12)
    model = hiddenstate.HMM(3, emission="gaussian", covariance_type=ct, learn="vb", n_iter=40,
                            tol=-np.inf, random_state=3, **VB_PRIORS).fit(X)
    h = np.asarray(model.monitor_.history)
    assert len(h) == 40 and np.all(np.isfinite(h))
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[:-1])), np.diff(h).min()
    assert h[-1] > h[0]
    shapes = {"means": (3, 2), "beta": (3,), "dof": () if ct == "tied" else (3,),
              "scale": true_covars(ct).shape}
    for key, shape in shapes.items():
        assert getattr(model, key + "_posterior_").shape == shape


def test_poisson_vb_bound_never_decreases():
    rng = np.random.default_rng(13)
    z = np.repeat(rng.integers(0, 3, 60), 25)
    X = rng.poisson(np.array([[1.0, 8.0], [6.0, 2.0], [15.0, 15.0]])[z])
    model = hiddenstate.HMM(3, emission="poisson", learn="vb", n_iter=60, tol=-np.inf,
                            random_state=0, lambdas_prior=0.0, lambdas_weight=1e-2).fit(X)
    h = np.asarray(model.monitor_.history)
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[:-1])), np.diff(h).min()
    assert model.lambdas_shape_posterior_.shape == model.lambdas_rate_posterior_.shape == (3, 2)
    np.testing.assert_allclose(model.lambdas_,
                               model.lambdas_shape_posterior_ / model.lambdas_rate_posterior_)


def _fit_from(mode, ct, X, emission="gaussian", **priors):
    model = hiddenstate.HMM(3, emission=emission, covariance_type=ct, learn=mode, n_iter=300,
                            tol=1e-9, init_params="", **priors)
    model.startprob_ = np.array([0.4, 0.3, 0.3])
    model.transmat_ = np.full((3, 3), 0.1) + 0.7 * np.eye(3)
    if emission == "gaussian":
        model.means_ = TRUE["means"] + 0.3
        model.covars_ = true_covars(ct) * 1.5
    else:
        model.lambdas_ = np.array([[2.0, 6.0], [5.0, 3.0], [12.0, 12.0]])
    return model.fit(X)


@pytest.mark.parametrize("ct", CTS)
def test_vb_approaches_em_as_data_grow(ct):
    """VB's posterior mean and EM's estimate from the same start differ by O(1/n)."""
    gaps = []
    for n in (300, 30_000):
        X = sample_true(n, 14)
        em = _fit_from("em", ct, X)
        vb = _fit_from("vb", ct, X, **VB_PRIORS)
        gaps.append(max(np.abs(vb.means_ - em.means_).max(),
                        np.abs(vb.covars_ - em.covars_).max(),
                        np.abs(vb.transmat_ - em.transmat_).max()))
    assert gaps[1] < gaps[0] / 10, gaps
    assert gaps[1] < 2e-3, gaps


def test_poisson_vb_approaches_em_as_data_grow():
    gaps = []
    rng = np.random.default_rng(15)
    rates = np.array([[1.0, 8.0], [6.0, 2.0], [15.0, 15.0]])
    for n in (300, 30_000):
        z = np.repeat(rng.integers(0, 3, n // 10), 10)
        X = rng.poisson(rates[z])
        em = _fit_from("em", None, X, emission="poisson")
        vb = _fit_from("vb", None, X, emission="poisson", lambdas_prior=0.0, lambdas_weight=1e-2)
        gaps.append(np.abs(vb.lambdas_ - em.lambdas_).max())
    assert gaps[1] < gaps[0] / 10, gaps


# -- differential test against hmmlearn ----------------------------------------------------------
class _StartAt:
    """A block whose variational posterior starts at a given q (hmmlearn's init_params='')."""

    def __init__(self, block, q0):
        self._block, self._q0 = block, q0

    def vb_init(self, params, n_virtual):
        return self._q0

    def __getattr__(self, name):
        return getattr(self._block, name)


def run_ours(ct, X, lengths, priors, q0, n_iter):
    K, D = q0["startprob"].shape[0], X.shape[1]
    model = hiddenstate.HMM(K, emission="gaussian", covariance_type=ct, learn="vb",
                            startprob_prior=priors["startprob"],
                            transmat_prior=priors["transmat"], **priors["emission"])
    family = model.emission_family(D)
    problem = model.problem(family, X, Sequences.from_lengths(np.asarray(lengths)))
    problem.blocks = {name: _StartAt(b, q0[name]) for name, b in problem.blocks.items()}
    theta = {"startprob": np.full(K, 1 / K), "transmat": np.full((K, K), 1 / K),
             "emission": family.vb_mean(q0["emission"])}
    return learn_fit(problem, "vb", theta, ConvergenceMonitor(-np.inf, n_iter), "stmc")


def hmmlearn_setup(ct, K, D, seed):
    """Priors and an arbitrary initial posterior, in our keys."""
    rng = np.random.default_rng(seed)
    emis = prior_kwargs(rng, ct, K, D)
    if ct == "tied":
        emis["covars_weight"] = float(emis["covars_weight"])
    priors = {"startprob": rng.uniform(0.5, 2, K), "transmat": rng.uniform(0.5, 2, (K, K)),
              "emission": emis}
    q_emis = random_q(rng, ct, K, D)
    q_emis["means"] = TRUE["means"][:K, :D] + 0.2 * rng.standard_normal((K, D))
    q_emis["beta"] = q_emis["beta"] + 50
    q_emis["dof"] = np.asarray(q_emis["dof"] + 50)
    q_emis["scale"] = q_emis["scale"] * 20
    q0 = {"startprob": rng.uniform(0.5, 3, K), "transmat": rng.uniform(1, 30, (K, K)),
          "emission": q_emis}
    return priors, q0


def make_hmmlearn(ct, priors, q0, n_iter, cls=None):
    from hmmlearn.vhmm import VariationalGaussianHMM

    K = len(q0["startprob"])
    hl = (cls or VariationalGaussianHMM)(K, covariance_type=ct, n_iter=n_iter, tol=-np.inf,
                                         init_params="", params="stmc", implementation="log")
    e, qe = priors["emission"], q0["emission"]
    D = qe["means"].shape[1]
    hl.startprob_prior_, hl.transmat_prior_ = priors["startprob"], priors["transmat"]
    hl.means_prior_ = np.broadcast_to(e["means_prior"], (K, D)).copy()
    hl.beta_prior_ = np.broadcast_to(e["means_weight"], (K,)).copy()
    hl.dof_prior_ = (float(e["covars_weight"]) if ct == "tied"
                     else np.broadcast_to(e["covars_weight"], (K,)).copy())
    hl.scale_prior_ = np.asarray(e["covars_prior"], dtype=float)
    hl.startprob_posterior_, hl.transmat_posterior_ = q0["startprob"], q0["transmat"]
    hl.means_posterior_, hl.beta_posterior_ = qe["means"], qe["beta"]
    hl.dof_posterior_ = float(qe["dof"]) if ct == "tied" else qe["dof"]
    hl.scale_posterior_ = qe["scale"]
    return hl


def assert_same_posterior(ours, hl, rtol=1e-8):
    np.testing.assert_allclose(ours["startprob"], hl.startprob_posterior_, rtol=rtol)
    np.testing.assert_allclose(ours["transmat"], hl.transmat_posterior_, rtol=rtol)
    for key in ("means", "beta", "dof", "scale"):
        np.testing.assert_allclose(ours["emission"][key], getattr(hl, key + "_posterior_"),
                                   rtol=rtol, atol=rtol * np.abs(ours["emission"][key]).max())


@pytest.mark.parametrize(("ct", "D"), [("full", 2), ("tied", 2), ("diag", 1),
                                       ("spherical", 1)])
def test_against_hmmlearn(ct, D):
    """Same priors, same initial posterior: hmmlearn's bound history (which leaves out
    -D/2 log 2pi per observation) and its posteriors after 8 iterations, to 1e-8.
    Diagonal and spherical agree only for D = 1 (see the next test)."""
    K, n_iter = 3, 8
    X = sample_true(500, 16)[:, :D]
    lengths = [200, 300]
    priors, q0 = hmmlearn_setup(ct, K, D, 17)
    ours = run_ours(ct, X, lengths, priors, q0, n_iter)
    hl = make_hmmlearn(ct, priors, q0, n_iter)
    hl.fit(X, lengths)
    theirs = np.asarray(hl.monitor_.history) - 0.5 * len(X) * D * LOG_2PI
    np.testing.assert_allclose(ours.monitor.history, theirs, rtol=1e-8)
    assert_same_posterior(ours.posterior, hl)


@pytest.mark.parametrize("ct", ["diag", "spherical"])
def test_against_hmmlearn_diag_spherical(ct):
    """For D > 1 hmmlearn scores diag(s) / s*I as a D-dimensional Wishart: its table differs
    from the Normal-Gamma one by a per-state constant,
    1/2 (sum_i psi((nu - i)/2) - D psi(nu/2)) (diag) or ... - D psi(D nu/2) + D log D
    (spherical), plus -D/2 log 2pi. With that constant added to hmmlearn's table, the
    updates (ours and hmmlearn's) give the same posteriors."""
    from hmmlearn.vhmm import VariationalGaussianHMM

    K, D, n_iter = 3, 2, 8
    X = sample_true(500, 18)
    lengths = [250, 250]
    priors, q0 = hmmlearn_setup(ct, K, D, 19)

    def correction(dof):
        i = np.arange(D)[:, None]
        wishart = digamma(0.5 * (dof - i)).sum(axis=0)
        gamma = (D * digamma(0.5 * dof) if ct == "diag"
                 else D * digamma(0.5 * D * dof) - D * np.log(D))
        return 0.5 * (gamma - wishart) - 0.5 * D * LOG_2PI

    fam = GaussianEmissions(K, D, ct, **priors["emission"])
    hl = make_hmmlearn(ct, priors, q0, 1)
    hl.n_features = D
    hl._check()
    np.testing.assert_allclose(
        fam.log_likelihood(fam.vb_expected(q0["emission"]), X),
        hl._compute_subnorm_log_likelihood(X) + correction(q0["emission"]["dof"]), rtol=1e-11)

    class Patched(VariationalGaussianHMM):
        def _compute_subnorm_log_likelihood(self, X):
            return super()._compute_subnorm_log_likelihood(X) + correction(self.dof_posterior_)

    ours = run_ours(ct, X, lengths, priors, q0, n_iter)
    hl = make_hmmlearn(ct, priors, q0, n_iter, cls=Patched)
    hl.fit(X, lengths)
    assert_same_posterior(ours.posterior, hl)


def test_categorical_against_hmmlearn_variational():
    """hs.HMM(emission="categorical", learn="vb") is hmmlearn's VariationalCategoricalHMM:
    same priors, same initial posterior, 8 iterations: the ELBO history and the Dirichlet
    posteriors agree to 1e-10 (hmmlearn's categorical bound has no constant to add)."""
    from hmmlearn.vhmm import VariationalCategoricalHMM

    rng = np.random.default_rng(3)
    K, W, n_iter = 3, 5, 8
    X = rng.integers(0, W, 500)
    lengths = [200, 300]
    priors = {"startprob": rng.uniform(0.5, 2, K), "transmat": rng.uniform(0.5, 2, (K, K)),
              "emissionprob": rng.uniform(0.2, 2, (K, W))}
    q0 = {"startprob": rng.uniform(0.5, 3, K), "transmat": rng.uniform(1, 30, (K, K)),
          "emission": {"emissionprob": rng.uniform(1, 30, (K, W))}}

    model = hiddenstate.HMM(K, emission="categorical", n_features=W, learn="vb",
                            startprob_prior=priors["startprob"],
                            transmat_prior=priors["transmat"],
                            emissionprob_prior=priors["emissionprob"])
    family = model.emission_family(W)
    problem = model.problem(family, X, Sequences.from_lengths(np.asarray(lengths)))
    problem.blocks = {name: _StartAt(b, q0[name]) for name, b in problem.blocks.items()}
    theta = {"startprob": np.full(K, 1 / K), "transmat": np.full((K, K), 1 / K),
             "emission": family.vb_mean(q0["emission"])}
    ours = learn_fit(problem, "vb", theta, ConvergenceMonitor(-np.inf, n_iter), "ste")

    hl = VariationalCategoricalHMM(K, n_features=W, n_iter=n_iter, tol=-np.inf,
                                   init_params="", params="ste", implementation="log")
    hl.startprob_prior_, hl.transmat_prior_ = priors["startprob"], priors["transmat"]
    hl.emissionprob_prior_ = priors["emissionprob"]
    hl.startprob_posterior_, hl.transmat_posterior_ = q0["startprob"], q0["transmat"]
    hl.emissionprob_posterior_ = q0["emission"]["emissionprob"]
    hl.fit(X[:, None], lengths)

    np.testing.assert_allclose(ours.monitor.history, hl.monitor_.history, rtol=1e-10)
    assert ours.monitor.history[-1] > ours.monitor.history[0] + 1  # EM moved the bound
    np.testing.assert_allclose(ours.posterior["startprob"], hl.startprob_posterior_,
                               rtol=1e-10)
    np.testing.assert_allclose(ours.posterior["transmat"], hl.transmat_posterior_, rtol=1e-10)
    np.testing.assert_allclose(ours.posterior["emission"]["emissionprob"],
                               hl.emissionprob_posterior_, rtol=1e-10)


# -- missing entries -----------------------------------------------------------------------------
def _rows_with_missing(rng, D):
    X = rng.standard_normal((5, D)) * 1.5
    X[0, 0] = np.nan                 # every pattern size: D-1, D-2, 1 observed, none, all
    X[1, 1:3] = np.nan
    X[2, :D - 1] = np.nan
    X[3] = np.nan
    return X


@pytest.mark.parametrize("ct", CTS)
def test_expected_loglik_with_missing_entries_monte_carlo(ct):
    """A row with observed dimensions o gets E_q[log N(x_o | mu_o, Sigma_oo)], Sigma =
    Lambda^{-1}, by 200k draws of (mu, Lambda) from q; 5 sigma (full/tied: the marginal
    Wishart of Sigma_oo^{-1}; diag/spherical: per observed dimension)."""
    rng = np.random.default_rng(31)
    K, D, M = 2, 4, 200_000
    fam = GaussianEmissions(K, D, ct, **prior_kwargs(rng, ct, K, D))
    q = random_q(rng, ct, K, D)
    X = _rows_with_missing(rng, D)
    got = fam.log_likelihood(fam.vb_expected(q), X)
    assert np.all(got[3] == 0.0)
    for k in range(K):
        dof, scale = state_q(q, ct, k)
        lam = draw_precisions(rng, ct, dof, scale, D, M)
        cov = np.linalg.inv(lam)
        chol = np.linalg.cholesky(cov / q["beta"][k])
        mu = q["means"][k] + np.einsum("mij,mj->mi", chol, rng.standard_normal((M, D)))
        for t, x in enumerate(X):
            o = ~np.isnan(x)
            if not o.any():
                continue
            prec_oo = np.linalg.inv(cov[:, o][:, :, o])
            vals = log_normal(np.broadcast_to(x[o], (M, o.sum())), mu[:, o], prec_oo)
            tol = 5 * vals.std() / np.sqrt(M)
            assert abs(got[t, k] - vals.mean()) < tol, (ct, k, t, got[t, k], vals.mean(), tol)


@pytest.mark.parametrize("ct", ["diag", "spherical"])
def test_missing_entries_diag_spherical_unchanged(ct):
    """Diagonal and spherical views are as before, bit for bit: the marginal density of the
    observed dimensions plus the per-dimension offset times |o|/D (exact for them)."""
    rng = np.random.default_rng(32)
    K, D = 3, 4
    fam = GaussianEmissions(K, D, ct, **prior_kwargs(rng, ct, K, D))
    view = fam.vb_expected(random_q(rng, ct, K, D))
    assert set(view) == {"means", "covars", "log_offset"}
    X = _rows_with_missing(rng, D)
    plain = fam.log_likelihood({"means": view["means"], "covars": view["covars"]}, X)
    n_obs = (~np.isnan(X)).sum(axis=1)
    want = np.where(n_obs[:, None] > 0,
                    plain + view["log_offset"][None] * n_obs[:, None] / D, 0.0)
    got = fam.log_likelihood(view, X)
    np.testing.assert_array_equal(got[n_obs < D], want[n_obs < D])  # complete rows: the kernel
    np.testing.assert_allclose(got[n_obs == D], want[n_obs == D], rtol=1e-15)


@pytest.mark.parametrize("ct", CTS)
def test_vb_bound_with_missing_entries(ct):
    """30% of the entries missing: the bound rises at every iteration until it has
    converged (a rise below 1e-9 relative). After that it may drift by less than 1e-9
    relative (measured: 7e-12 full): the E-step's term E_q[log N(x_o | mu_o, Sigma_oo)] is
    exact, but the Normal-Wishart update with the missing dimensions' conditional moments
    (under E_q[Lambda]) is not the exact maximiser of that collapsed bound (which has no
    conjugate form), only of the mean-field bound with q(x_m) free."""
    X = sample_true(1500, 12)
    X[np.random.default_rng(16).random(X.shape) < 0.3] = np.nan
    model = hiddenstate.HMM(3, emission="gaussian", covariance_type=ct, learn="vb", n_iter=40,
                            tol=-np.inf, random_state=3, **VB_PRIORS).fit(X)
    h = np.asarray(model.monitor_.history)
    rel = np.diff(h) / np.abs(h[1:])
    converged = np.flatnonzero(rel < 1e-9)
    first = converged[0] if len(converged) else len(rel)
    assert first > 5 and np.all(rel[:first] > 0), rel
    assert np.all(np.abs(rel[first:]) < 1e-9), rel[first:]
    assert np.isfinite(model.score(X))
