r"""Draws from the conjugate posteriors of the parameter blocks, for ``learn="gibbs"``
(:mod:`hiddenstate.learn.gibbs`): Dirichlet rows, Gamma rates and Normal-Wishart
(Normal-Gamma) means and precisions.

Each block's ``sample_posterior(params, stats, which, rng)`` calls these with the posterior
hyper-parameters of its prior updated by the statistics of one draw of the latent
structure (hard counts): the same updates as variational Bayes' ``vb_update``, which for
hard counts *is* the exact conjugate posterior.

- :func:`dirichlet_rows`: :math:`\theta \sim \mathrm{Dir}(\hat\alpha)` per row, drawn
  through log-Gamma variables (Marsaglia & Tsang 2000 with the boost
  :math:`G_\alpha = G_{\alpha+1} U^{1/\alpha}` for :math:`\alpha < 1`) and normalised in
  log space, so concentrations far below one (sparse priors, the weak-limit HDP) neither
  underflow to a row of zeros nor lose their ratios. An entry whose probability is below the
  smallest normal float64 (about 2.2e-308) is stored as that number: a zero would read as a
  structural zero (a transition that is not allowed) at the next sweep.
- :func:`gamma_rates`: :math:`\lambda \sim \mathrm{Gamma}(\hat a, \text{rate } \hat b)`.
- :func:`normal_wishart`: :math:`\Lambda \sim \mathcal W(\nu, S^{-1})` (covariance-like
  scale :math:`S`, so :math:`\Sigma = \Lambda^{-1} \sim \mathcal W^{-1}(\nu, S)`), then
  :math:`\mu \mid \Lambda \sim N(m, (\beta\Lambda)^{-1})`; diagonal covariances draw one
  Gamma precision per dimension and state, spherical ones one per state, tied covariances
  one Wishart for all states. :func:`covariance_draw` alone and
  :func:`normal_given_covariance` are the two conditionals (when only ``c`` or only ``m`` is
  learned).
"""

from __future__ import annotations

import numpy as np

TINY = np.finfo(np.float64).tiny


def log_gamma_draws(shape: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""``log G`` for :math:`G \sim \mathrm{Gamma}(\text{shape}, 1)`, elementwise; ``-inf``
    where ``shape`` is 0. Accurate for any positive shape: below one, :math:`\log G =
    \log G' + \log(U)/\text{shape}` with :math:`G' \sim \mathrm{Gamma}(\text{shape} + 1)`.

    Parameters
    ----------
    shape : ndarray
        Shapes, >= 0.
    rng : numpy.random.Generator
        The generator.

    Returns
    -------
    ndarray
        The log draws, shaped like ``shape``.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families.posterior_draws import log_gamma_draws
    >>> out = log_gamma_draws(np.array([1e-4, 2.0, 0.0]), np.random.default_rng(0))
    >>> bool(out[0] < -100), bool(np.isfinite(out[1])), out[2]
    (True, True, np.float64(-inf))
    """
    shape = np.asarray(shape, dtype=np.float64)
    small = shape < 1.0
    boosted = np.where(small, shape + 1.0, shape)
    with np.errstate(divide="ignore", over="ignore"):   # a shape of 1e-310: -inf, exactly
        out = np.log(rng.standard_gamma(np.where(boosted > 0, boosted, 1.0)))
        u = 1.0 - rng.random(shape.shape)  # in (0, 1]
        out = np.where(small & (shape > 0), out + np.log(u) / np.where(small, shape, 1.0), out)
    return np.where(shape > 0, out, -np.inf)


def dirichlet_rows(alpha: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""One :math:`\mathrm{Dir}(\alpha)` draw per row (rows along the last axis).

    Entries with :math:`\alpha = 0` are outside the support and are exactly 0; every
    other entry is at least the smallest normal float64 (see the module docstring).

    Parameters
    ----------
    alpha : ndarray
        Concentrations, >= 0, each row with at least one positive entry.
    rng : numpy.random.Generator
        The generator.

    Returns
    -------
    ndarray
        Rows summing to one, shaped like ``alpha``.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families.posterior_draws import dirichlet_rows
    >>> rows = dirichlet_rows(np.array([[2.0, 3.0, 0.0], [1e-3, 1e-3, 1e-3]]),
    ...                       np.random.default_rng(0))
    >>> rows.sum(axis=1), rows[0, 2], bool(np.all(rows[1] > 0))
    (array([1., 1.]), np.float64(0.0), True)
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    logg = log_gamma_draws(alpha, rng)
    top = logg.max(axis=-1, keepdims=True)
    w = np.exp(logg - top)
    out = w / w.sum(axis=-1, keepdims=True)
    return np.where(alpha > 0, np.maximum(out, TINY), 0.0)


def gamma_rates(shape: np.ndarray, rate: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r""":math:`\lambda \sim \mathrm{Gamma}(\text{shape}, \text{rate})`, elementwise (positive
    shapes and rates; a draw below the smallest normal float64 is stored as it).

    Parameters
    ----------
    shape, rate : ndarray
        The Gamma shape and rate (inverse scale), broadcastable.
    rng : numpy.random.Generator
        The generator.

    Returns
    -------
    ndarray
        The draws.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families.posterior_draws import gamma_rates
    >>> draws = gamma_rates(np.full(20000, 4.0), np.full(20000, 2.0), np.random.default_rng(0))
    >>> round(float(draws.mean()), 1)
    2.0
    """
    shape, rate = np.broadcast_arrays(np.asarray(shape, dtype=np.float64),
                                      np.asarray(rate, dtype=np.float64))
    return np.maximum(np.exp(log_gamma_draws(shape, rng) - np.log(rate)), TINY)


def inverse_wishart(dof: float, scale: np.ndarray, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`\Sigma \sim \mathcal W^{-1}(\nu, S)` (i.e. :math:`\Lambda = \Sigma^{-1} \sim
    \mathcal W(\nu, S^{-1})`), returned with a square root :math:`R` of :math:`\Lambda`
    (:math:`\Lambda = RR^\top`).

    Bartlett's decomposition: :math:`\Lambda = CAA^\top C^\top` with :math:`CC^\top =
    S^{-1}` (here :math:`C = L^{-\top}` for the Cholesky factor :math:`L` of :math:`S`) and
    :math:`A` lower triangular, :math:`A_{ii}^2 \sim \chi^2_{\nu - i}`, standard normal
    entries below the diagonal.

    Parameters
    ----------
    dof : float
        Degrees of freedom :math:`\nu > D - 1`.
    scale : ndarray of shape (D, D)
        The symmetric positive definite scale :math:`S`.
    rng : numpy.random.Generator
        The generator.

    Returns
    -------
    covariance : ndarray of shape (D, D)
        :math:`\Sigma`.
    root : ndarray of shape (D, D)
        :math:`R = CA`, a square root of :math:`\Sigma^{-1}`.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families.posterior_draws import inverse_wishart
    >>> rng = np.random.default_rng(0)
    >>> S = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> mean = np.mean([inverse_wishart(10.0, S, rng)[0] for _ in range(4000)], axis=0)
    >>> bool(np.allclose(mean, S / (10.0 - 2 - 1), rtol=0.05))
    True
    """
    D = scale.shape[0]
    C = np.linalg.inv(np.linalg.cholesky(scale)).T
    A = np.tril(rng.standard_normal((D, D)), -1)
    A[np.diag_indices(D)] = np.sqrt(2.0 * rng.standard_gamma(0.5 * (dof - np.arange(D))))
    root = C @ A
    inv = np.linalg.inv(root)
    cov = inv.T @ inv
    return 0.5 * (cov + cov.T), root


def covariance_draw(dof, scale: np.ndarray, covariance_type: str, rng: np.random.Generator
                    ) -> tuple[np.ndarray, list]:
    r"""Covariances from their (inverse) Wishart / Gamma posterior, with what the means'
    draw needs: per state, the precision per dimension (diag, spherical: a (D,) vector) or a
    square root of the precision matrix (full; one for tied).

    Parameters
    ----------
    dof : ndarray of shape (K,), or a scalar for tied covariances
        :math:`\nu`.
    scale : ndarray
        :math:`S` in the shape of ``covars``.
    covariance_type : {"spherical", "diag", "full", "tied"}
        The form of the covariances.
    rng : numpy.random.Generator
        The generator.

    Returns
    -------
    covars : ndarray
        :math:`\Lambda_k^{-1}` in the shape of ``covars``.
    precision : ndarray or list of ndarray
        (K, D) precisions (diag, spherical) or the precision roots (full: K of them; tied:
        one).
    """
    ct = covariance_type
    if ct == "diag":
        prec = gamma_rates(0.5 * dof[:, None], 0.5 * scale, rng)
        return 1.0 / prec, prec
    if ct == "spherical":
        prec = gamma_rates(0.5 * dof, 0.5 * scale, rng)  # dof and scale already times D
        return 1.0 / prec, prec
    if ct == "tied":
        cov, root = inverse_wishart(float(dof), scale, rng)
        return cov, [root]
    K = scale.shape[0]
    covars = np.empty_like(scale)
    roots = []
    for k in range(K):
        covars[k], root = inverse_wishart(float(dof[k]), scale[k], rng)
        roots.append(root)
    return covars, roots


def normal_wishart(m: np.ndarray, beta: np.ndarray, dof, scale: np.ndarray,
                   covariance_type: str, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray]:
    r"""Means and covariances from their Normal-Wishart posterior (the parametrisation of
    :mod:`hiddenstate.families.gaussian`'s variational posterior ``q``).

    Parameters
    ----------
    m : ndarray of shape (K, D)
        The posterior means :math:`m`.
    beta : ndarray of shape (K,)
        :math:`\beta`.
    dof : ndarray of shape (K,), or a scalar for tied covariances
        :math:`\nu`.
    scale : ndarray
        :math:`S` in the shape of ``covars`` (spherical (K,), diag (K, D), full (K, D, D),
        tied (D, D)).
    covariance_type : {"spherical", "diag", "full", "tied"}
        The form of the covariances.
    rng : numpy.random.Generator
        The generator.

    Returns
    -------
    means : ndarray of shape (K, D)
        :math:`\mu_k \sim N(m_k, (\beta_k\Lambda_k)^{-1})`.
    covars : ndarray
        :math:`\Lambda_k^{-1}`, in the shape of ``covars``.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families.posterior_draws import normal_wishart
    >>> rng = np.random.default_rng(0)
    >>> draws = [normal_wishart(np.zeros((1, 1)), np.array([4.0]), np.array([6.0]),
    ...                         np.array([[2.0]]), "diag", rng) for _ in range(20000)]
    >>> round(float(np.mean([c[0, 0] for _, c in draws])), 1)   # E[sigma^2] = s/(nu - 2)
    0.5
    """
    K, D = m.shape
    ct = covariance_type
    if ct == "spherical":  # one precision per state: D nu/2 shape, D s/2 rate
        covars, prec = covariance_draw(D * np.asarray(dof), D * scale, ct, rng)
    else:
        covars, prec = covariance_draw(dof, scale, ct, rng)
    if ct in ("diag", "spherical"):
        p = prec if ct == "diag" else prec[:, None]
        return m + rng.standard_normal((K, D)) / np.sqrt(beta[:, None] * p), covars
    roots = prec if ct == "full" else prec * K
    z = rng.standard_normal((K, D))
    means = np.empty((K, D))
    for k in range(K):
        means[k] = m[k] + np.linalg.solve(roots[k].T, z[k]) / np.sqrt(beta[k])
    return means, covars


def normal_given_covariance(m: np.ndarray, beta: np.ndarray, covars: np.ndarray,
                            covariance_type: str, rng: np.random.Generator) -> np.ndarray:
    r""":math:`\mu_k \sim N(m_k, \Sigma_k/\beta_k)` for fixed covariances (the conditional
    of the means when only ``m`` is learned).

    Parameters
    ----------
    m : ndarray of shape (K, D)
        The posterior means.
    beta : ndarray of shape (K,)
        :math:`\beta`.
    covars : ndarray
        The covariances, in the shape of ``covars``.
    covariance_type : {"spherical", "diag", "full", "tied"}
        Their form.
    rng : numpy.random.Generator
        The generator.

    Returns
    -------
    ndarray of shape (K, D)
        The means.
    """
    K, D = m.shape
    z = rng.standard_normal((K, D))
    if covariance_type == "diag":
        return m + z * np.sqrt(covars / beta[:, None])
    if covariance_type == "spherical":
        return m + z * np.sqrt(covars / beta)[:, None]
    full = np.broadcast_to(covars, (K, D, D))
    chol = np.linalg.cholesky(full)
    return m + np.einsum("kij,kj->ki", chol, z) / np.sqrt(beta)[:, None]
