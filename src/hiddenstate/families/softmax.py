r"""Softmax (multinomial logistic) regression with posterior-weighted targets: the Newton
M-step shared by the logistic-regression emissions (:mod:`.logistic`) and the input-driven
transitions (:class:`SoftmaxTransitions`, an IOHMM's transition block).

Both M-steps maximise, over the coefficient rows :math:`w_c` (one per category ``c`` of the
softmax: an emitted category, or a destination state),

.. math::
    Q(W) = \sum_c w_c^\top S_c - \sum_t r_t \log \sum_{c} e^{w_c^\top \phi_t}
           - \tfrac12 \sum_c w_c^\top \Lambda w_c,
    \qquad S_c = \sum_t R_{tc}\,\phi_t,\quad r_t = \sum_c R_{tc},

with :math:`R_{tc}` the E-step's soft counts (the posterior of state ``k`` times the
indicator of the emitted category; or :math:`\xi_t(i, c)` for the transitions out of state
``i``) and :math:`\Lambda` the precision of a zero-mean Gaussian prior (0 for maximum
likelihood). One category, the *reference*, keeps :math:`w = 0`: the softmax is unchanged by
adding a vector to every row, so this makes the coefficients identifiable without a prior.
:math:`Q` is concave; :func:`softmax_newton` maximises it by Newton's method (IRLS) with a
backtracking line search that accepts a step only if it raises :math:`Q` (Armijo), so every
M-step returns coefficients at which :math:`Q` is at least its value at the start: the
learner is a generalised EM whose objective never decreases (Dempster, Laird & Rubin 1977,
sec. 3), checked in ``tests/test_regression_hmm.py``. The statistics are the rows
themselves (:math:`\phi_t`, :math:`r_t`) besides the sums :math:`S`, so they merge by
concatenation (exactly), not by a fixed-size sum.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError

#: most Newton iterations per M-step (a converged fit needs a handful)
MAX_NEWTON = 100
#: a Newton decrement below this fraction of max(1, |Q|) ends the iterations
NEWTON_TOL = 1e-12


def logsumexp(x: np.ndarray, axis: int = -1, keepdims: bool = False) -> np.ndarray:
    r""":math:`\log\sum e^x` along ``axis``, shifted by the maximum (scipy's, without its
    array-API overhead, which dominated the Newton iterations on small arrays)."""
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


def _objective(W, S, r, phi, precision, allowed, fi):
    logits = np.einsum("tp,cp->tc", phi, W[allowed])
    lse = logsumexp(logits, axis=1) if logits.shape[1] else np.zeros(len(phi))
    penalty = 0.5 * np.einsum("cp,pq,cq->", W[fi], precision, W[fi])
    return float(np.sum(W[fi] * S[fi]) - np.einsum("t,t->", r, lse) - penalty)


def softmax_newton(S: np.ndarray, r: np.ndarray, phi: np.ndarray, W: np.ndarray,
                   precision: np.ndarray, free: np.ndarray, allowed: np.ndarray | None = None,
                   max_iter: int = MAX_NEWTON) -> tuple[np.ndarray, bool]:
    r"""Maximise the weighted softmax-regression objective by Newton's method.

    See the module docstring for :math:`Q`. Rows of ``W`` that are not ``free`` keep their
    value (the reference category); categories not ``allowed`` take no part in the softmax
    (probability 0, e.g. a structural zero of a transition matrix).

    Parameters
    ----------
    S : ndarray of shape (C, P)
        :math:`S_c = \sum_t R_{tc}\phi_t`.
    r : ndarray of shape (n,)
        :math:`r_t = \sum_c R_{tc}`, the weight of each row.
    phi : ndarray of shape (n, P)
        The design rows.
    W : ndarray of shape (C, P)
        The starting coefficients.
    precision : ndarray of shape (P, P)
        :math:`\Lambda`, the prior precision of each free row (zeros: maximum likelihood).
    free : ndarray of bool of shape (C,)
        The rows to optimise.
    allowed : ndarray of bool of shape (C,) or None, default=None
        The categories in the softmax; None: all.
    max_iter : int, default=100
        The most Newton iterations.

    Returns
    -------
    W : ndarray of shape (C, P)
        The coefficients, with :math:`Q(W) \ge Q(W_{start})`.
    converged : bool
        Whether the Newton decrement fell below :data:`NEWTON_TOL` (False: e.g. separable
        data, whose maximum-likelihood coefficients grow without bound; use a prior).

    Examples
    --------
    Logistic regression (category 0 the reference) of 4 weighted rows:

    >>> import numpy as np
    >>> from hiddenstate.families.softmax import softmax_newton
    >>> phi = np.array([[-1.0, 1.0], [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]])
    >>> y = np.array([0, 1, 0, 1])
    >>> R = np.eye(2)[y]
    >>> W, ok = softmax_newton(R.T @ phi, R.sum(axis=1), phi, np.zeros((2, 2)),
    ...                        np.zeros((2, 2)), np.array([False, True]))
    >>> ok, W[1].round(4)   # the slope and intercept of the maximum-likelihood fit
    (True, array([ 0.9082, -0.4541]))
    """
    W = np.array(W, dtype=np.float64)
    C, P = W.shape
    allowed = np.ones(C, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    free = np.asarray(free, dtype=bool) & allowed
    fi = np.flatnonzero(free)
    F = len(fi)
    if F == 0:
        return W, True
    ai = np.flatnonzero(allowed)
    pos = np.searchsorted(ai, fi)  # column of each free row among the allowed ones
    q = _objective(W, S, r, phi, precision, allowed, fi)
    for _ in range(max_iter):
        logits = np.einsum("tp,cp->tc", phi, W[allowed])   # no BLAS: see .regression
        p = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))[:, pos]  # (n, F)
        rp = r[:, None] * p
        g = S[fi] - np.einsum("tc,tp->cp", rp, phi) - W[fi] @ precision
        H = np.zeros((F, P, F, P))
        for a in range(F):
            for b in range(a, F):
                w = -rp[:, a] * p[:, b]
                if a == b:
                    w = w + rp[:, a]
                block = np.einsum("t,tp,tq->pq", w, phi, phi)
                if a == b:
                    block = block + precision
                H[a, :, b, :] = block
                H[b, :, a, :] = block.T
        H = H.reshape(F * P, F * P)   # minus the Hessian: positive semi-definite
        step = np.linalg.lstsq(H, g.reshape(-1), rcond=None)[0].reshape(F, P)
        decrement = float(g.reshape(-1) @ step.reshape(-1))
        if not decrement > NEWTON_TOL * max(1.0, abs(q)):
            return W, True
        s = 1.0
        while s > 1e-12:
            trial = W.copy()
            trial[fi] += s * step
            q_trial = _objective(trial, S, r, phi, precision, allowed, fi)
            if q_trial >= q + 1e-4 * s * decrement:
                W, q = trial, q_trial
                break
            s *= 0.5
        else:   # no step raises Q: at its maximum to working precision
            return W, True
    return W, False


class SoftmaxTransitions:
    r"""Input-driven transitions (an IOHMM): the next state regressed on the inputs.

    A softmax regression on the inputs of the step the chain moves into:

    .. math::
        P(z_t = j \mid z_{t-1} = i, u_t) = \frac{A_{ij}\, e^{w_{ij}^\top u_t}}
                                            {\sum_{j'} A_{ij'}\, e^{w_{ij'}^\top u_t}}

    with ``transmat`` :math:`A` (the transition matrix at inputs zero) and ``coef``
    :math:`w` of shape ``(K, K, M)``; the self-transition is each row's reference,
    :math:`w_{ii} = 0` (``coef[i, j]`` changes the log-odds of moving from ``i`` to ``j``
    rather than staying, per unit of input). A zero entry of :math:`A` stays zero (a
    structural zero); a row whose self-transition is zero takes its first allowed entry as
    reference. The M-step is :func:`softmax_newton` per row ``i`` on the statistics
    :math:`S_{ij} = \sum_t \xi_t(i, j)\,[u_t, 1]` and :math:`r_t = \gamma_{t-1}(i)`.

    The prior (``learn="map"``, ``"vt"``): a Dirichlet(``transmat_prior``) on each row of
    :math:`A`, i.e. :math:`\alpha_{ij} - 1` pseudo-transitions at inputs zero (as the fixed
    chain's Dirichlet rows), and a zero-mean Gaussian of precision ``coef_weight`` on every
    :math:`w_{ij}`. No conjugate prior exists, so ``learn="vb"`` is refused.

    Parameters
    ----------
    n_states : int
        The number of states K.
    n_inputs : int
        The number of inputs M.
    transmat_prior : float or array-like of shape (K, K), default=1.0
        The Dirichlet concentration of each row of ``transmat`` (1: flat).
    coef_weight : float, default=0.0
        The prior precision of the coefficients (0: flat).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import SoftmaxTransitions
    >>> block = SoftmaxTransitions(n_states=2, n_inputs=1)
    >>> params = {"transmat": np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...           "coef": np.array([[[0.0], [2.0]], [[0.0], [0.0]]])}
    >>> block.matrices(params, np.array([[0.0], [1.0]]))[:, 0].round(3)   # out of state 0
    array([[0.9  , 0.1  ],
           [0.549, 0.451]])
    """

    letters = "t"

    def __init__(self, n_states: int, n_inputs: int, transmat_prior=1.0,
                 coef_weight: float = 0.0):
        self.n_states = n_states
        self.n_inputs = n_inputs
        self.transmat_prior = transmat_prior
        self.coef_weight = coef_weight

    def matrices(self, params: dict, U: np.ndarray) -> np.ndarray:
        r"""The transition matrix of each row's inputs.

        Parameters
        ----------
        params : dict
            ``transmat`` (K, K) and ``coef`` (K, K, M).
        U : ndarray of shape (n, M)
            The inputs of the step each move goes into.

        Returns
        -------
        ndarray of shape (n, K, K)
            :math:`A_t`, rows summing to one.
        """
        A = params["transmat"]
        with np.errstate(divide="ignore"):
            logits = np.log(A)[None] + np.einsum("tm,ijm->tij", U, params["coef"])
        logits -= logits.max(axis=2, keepdims=True)
        np.exp(logits, out=logits)
        logits /= logits.sum(axis=2, keepdims=True)
        return logits

    def merge_statistics(self, a: dict, b: dict) -> dict:
        """Combine the statistics of two disjoint sets of sequences.

        Parameters
        ----------
        a, b : dict
            ``xi_phi`` (summed), ``r`` and ``phi`` (rows, concatenated).

        Returns
        -------
        dict
            The statistics of the union.
        """
        return {"xi_phi": a["xi_phi"] + b["xi_phi"], "r": np.concatenate([a["r"], b["r"]]),
                "phi": np.concatenate([a["phi"], b["phi"]])}

    def _alpha(self) -> np.ndarray:
        K = self.n_states
        return np.broadcast_to(np.asarray(self.transmat_prior, dtype=np.float64), (K, K))

    def _precision(self) -> np.ndarray:
        M = self.n_inputs
        return np.diag(np.r_[np.full(M, float(self.coef_weight)), 0.0])

    def mstep(self, params: dict, stats: dict, which: str) -> tuple[dict, list[int]]:
        """Update ``transmat`` and ``coef`` (letter ``t``) row by row by Newton's method.

        Parameters
        ----------
        params : dict
            ``transmat`` and ``coef``.
        stats : dict
            ``xi_phi`` (K, K, M + 1), ``r`` (n, K), ``phi`` (n, M + 1).
        which : str
            The letters to update.

        Returns
        -------
        params : dict
            The updated parameters (each row's :math:`Q` at least its starting value).
        degenerate : list of int
            The rows whose Newton iterations did not converge (separable transitions:
            use ``learn="map"``).
        """
        if "t" not in which:
            return params, []
        K, M = self.n_states, self.n_inputs
        A = params["transmat"].copy()
        coef = params["coef"].copy()
        alpha = self._alpha()
        precision = self._precision()
        bad = []
        for i in range(K):
            allowed = A[i] > 0
            ref = i if allowed[i] else int(np.flatnonzero(allowed)[0])
            W = np.zeros((K, M + 1))
            with np.errstate(divide="ignore"):
                W[allowed, M] = np.log(A[i, allowed]) - np.log(A[i, ref])
            W[allowed, :M] = coef[i, allowed] - coef[i, ref]
            extra = np.where(allowed, alpha[i] - 1.0, 0.0)
            S = stats["xi_phi"][i].copy()
            S[:, M] += extra   # Dirichlet pseudo-transitions at inputs 0
            r = np.r_[stats["r"][:, i], extra.sum()]
            phi = np.vstack([stats["phi"], np.r_[np.zeros(M), 1.0]])
            free = allowed.copy()
            free[ref] = False
            W, ok = softmax_newton(S, r, phi, W, precision, free, allowed)
            if not ok:
                bad.append(i)
            logits = np.where(allowed, W[:, M], -np.inf)
            A[i] = np.exp(logits - logsumexp(logits))
            coef[i] = np.where(allowed[:, None], W[:, :M], 0.0)
        return {"transmat": A, "coef": coef}, bad

    def log_prior(self, params: dict) -> float:
        r"""Compute :math:`\sum_{ij} (\alpha_{ij} - 1)\log A_{ij} - \tfrac\kappa2\|w\|^2`.

        Parameters
        ----------
        params : dict
            ``transmat`` and ``coef``.

        Returns
        -------
        float
            The log prior up to a constant (0 for the flat prior).
        """
        A = params["transmat"]
        alpha = self._alpha()
        with np.errstate(divide="ignore", invalid="ignore"):
            dirichlet = np.where(A > 0, (alpha - 1.0) * np.log(A), 0.0).sum()
        return float(dirichlet - 0.5 * self.coef_weight * np.sum(params["coef"] ** 2))

    def _no_vb(self):
        raise InvalidInputError(
            "learn: 'vb' is not available with transitions='softmax' (a softmax regression "
            "has no conjugate prior); use 'em', 'map' or 'vt'")

    def vb_init(self, params, n_virtual):
        """Refuse: a softmax regression has no conjugate prior.

        Parameters
        ----------
        params : dict
            ``transmat`` and ``coef``.
        n_virtual : float
            Not used.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            Always (``learn="vb"`` is not available).
        """
        self._no_vb()

    def vb_update(self, q, stats, which):
        """Refuse: a softmax regression has no conjugate prior.

        Parameters
        ----------
        q : dict
            Not used.
        stats : dict
            Not used.
        which : str
            Not used.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            Always.
        """
        self._no_vb()

    def vb_expected(self, q):
        """Refuse: a softmax regression has no conjugate prior.

        Parameters
        ----------
        q : dict
            Not used.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            Always.
        """
        self._no_vb()

    def vb_kl(self, q):
        """Refuse: a softmax regression has no conjugate prior.

        Parameters
        ----------
        q : dict
            Not used.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            Always.
        """
        self._no_vb()

    def vb_mean(self, q):
        """Refuse: a softmax regression has no conjugate prior.

        Parameters
        ----------
        q : dict
            Not used.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            Always.
        """
        self._no_vb()
