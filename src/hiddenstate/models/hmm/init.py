"""How an HMM fit starts: the initial parameters (the chain's persistence measured on the
data, the emission family's data-driven start, the values the user set, the labelled
steps). The restart loop that keeps the best of ``n_init`` runs is every model's
(:func:`hiddenstate.learn.fit_restarts`)."""

from __future__ import annotations

import numpy as np

from ..._validation import check_stochastic
from ...errors import InvalidInputError
from ...inference import Sequences
from ...learn.online import ONLINE_MODES
from .. import _learned
from .chain import check_structure, transitions_of

#: cap on the initial self-transition weight (a start that is nearly absorbing slows EM)
MAX_PERSISTENCE = 0.9
#: the streaming learners' initial self-transition weight (they see no data before starting)
STREAM_PERSISTENCE = 0.5


def _autocorrelation(X: np.ndarray, symbols: bool, bounds: np.ndarray, lag: int) -> float:
    """Lag-``lag`` autocorrelation pooled over the sequences (pairs never cross a boundary)
    and, for vectors, over the standardised features; for symbols that of their one-hot
    indicators, (P(x_{t+lag} = x_t) - sum_w f_w^2) / (1 - sum_w f_w^2). NaN if undefined."""
    n = len(X)
    ends = np.repeat(bounds[1:], np.diff(bounds))
    i = np.flatnonzero(np.arange(n) + lag < ends)
    if symbols:  # pairs with a missing symbol (-1) are left out
        x = np.asarray(X).reshape(-1)
        i = i[(x[i] >= 0) & (x[i + lag] >= 0)]
        if len(i) == 0:
            return float("nan")
        f = np.bincount(x[x >= 0]) / np.count_nonzero(x >= 0)
        f2 = float(f @ f)
        return (float(np.mean(x[i] == x[i + lag])) - f2) / (1.0 - f2) if f2 < 1 else np.nan
    if len(i) == 0:
        return float("nan")
    Z = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    miss = np.isnan(Z)
    if miss.any():  # a missing entry counts as the mean (it adds nothing)
        if miss.all(axis=0).any():
            return float("nan")
        Z = np.where(miss, np.nanmean(Z, axis=0), Z)
    sd = Z.std(axis=0)
    Z = (Z[:, sd > 0] - Z[:, sd > 0].mean(axis=0)) / sd[sd > 0]
    if Z.shape[1] == 0:
        return float("nan")
    return float(np.mean(Z[i] * Z[i + lag]))


def persistence(X: np.ndarray, symbols: bool, bounds: np.ndarray) -> float:
    r"""Moment estimate of how persistent the hidden chain is, in [0, ``MAX_PERSISTENCE``]:
    the ratio :math:`\hat\rho_2 / \hat\rho_1` of the lag-2 and lag-1 autocorrelations of
    the observations (:func:`_autocorrelation`).

    For observations that are a noisy readout of a Markov chain with one non-trivial
    eigenvalue :math:`\lambda` (any 2-state chain; :math:`\lambda I + (1 - \lambda)/K`),
    :math:`\rho_k = R\,\lambda^k` (R < 1: the readout's reliability), so the ratio
    estimates :math:`\lambda` free of R (as for an AR(1) signal plus noise; for other chains
    it is a weighted blend of their eigenvalues). The
    initial transition matrix :math:`\lambda I + (1 - \lambda)/K` has exactly that
    eigenvalue. 0 (flat) unless :math:`\hat\rho_1` exceeds its white-noise band
    :math:`2/\sqrt{n}` and :math:`\hat\rho_2 > 0`: on text, where consecutive words
    rarely repeat, :math:`\hat\rho_1 < 0` and the start is flat.
    """
    r1 = _autocorrelation(X, symbols, bounds, 1)
    r2 = _autocorrelation(X, symbols, bounds, 2)
    if not (r1 > 2.0 / np.sqrt(len(X)) and r2 > 0):   # NaN compares False
        return 0.0
    return float(min(r2 / r1, MAX_PERSISTENCE))


def warn_overwritten(model, family) -> None:
    """Warn (:class:`~hiddenstate.errors.ParameterOverwriteWarning`) when ``init_params``
    is about to replace parameters the user set by hand (not those a ``fit`` or a load
    left), as hmmlearn does, naming them and the ``init_params`` that keeps them."""
    pairs = {"s": "startprob_", "t": "transmat_"}
    pairs.update({letter: "_covars_" if key == "covars" else key + "_"
                  for letter, key in family.letters.items()})
    init = model.init_params
    hand = _learned.set_by_hand(model, [a for letter, a in pairs.items() if letter in init])
    letters = "".join(letter for letter, a in pairs.items() if a in hand)
    keep = "".join(c for c in init if c not in letters)
    _learned.warn_replaced(
        model, hand, "init_params",
        f"init_params={init!r} initialises {letters!r}: pass init_params={keep!r} to start "
        "from the values you set (or delete them to silence this)")


def initial_params(model, X, family, rng: np.random.Generator, seqs: Sequences,
                   values: bool = False, warn: bool = False):
    """Initial ``(startprob, transmat, emission)`` of ``model`` (its ``init_params``: the
    others are the values the user set) from the data ``X``; a structured model's ``transmat``
    is restricted to the allowed transitions (rows renormalised), and with ``values``
    returned as its allowed entries only (no ``(K, K)`` array). ``warn``: first
    :func:`warn_overwritten` (once per fit: the first restart)."""
    if warn:
        warn_overwritten(model, family)
    K = model.n_states
    transitions = transitions_of(model)
    init = model.init_params
    if "s" in init:
        startprob = np.full(K, 1.0 / K)
    else:
        startprob = user_param(model, "startprob_", "s")
    if "t" in init:
        # lambda I + (1 - lambda) / K: the symmetric chain whose state autocorrelation
        # decays like the data's (flat on text, sticky on persistent series); chosen on
        # the panel of experiments/defaults_panel.py (see docs/hmm.md). Streaming
        # learners start from a fixed lambda, so that a stream fed in one call or many
        # starts alike.
        s = (STREAM_PERSISTENCE if model.learn in ONLINE_MODES
             else persistence(*family.autocorrelation_data(X), seqs.bounds))
        if transitions is None:
            transmat = s * np.eye(K) + (1.0 - s) / K
        else:
            v = (s * (transitions.rows == transitions.indices) + (1.0 - s) / K)
            transmat = v / transitions.row_sums(v)[transitions.rows]
    else:
        transmat = user_param(model, "transmat_", "t")
        transmat = check_stochastic(transmat, (K, K), "transmat_")
        if transitions is not None:
            transmat = check_structure(transmat, transitions)
    startprob = check_stochastic(startprob, (K,), "startprob_")
    if transitions is not None and not values:
        transmat = transitions.dense(transmat)
    # data-driven initialisation (k-means for Gaussians) only when something needs it
    drawn = family.initialize(X, rng) if set(init) & set(family.letters) else {}
    emis = {}
    for letter, key in family.letters.items():
        if letter in init:
            emis[key] = drawn[key]
        else:
            attr = "_covars_" if key == "covars" else key + "_"
            emis[key] = user_param(model, attr, letter)
    return startprob, transmat, family.check_params(emis)


def user_param(model, attr: str, letter: str) -> np.ndarray:
    """A copy of the parameter ``attr`` the user set (its letter is not in
    ``init_params``)."""
    if not _learned.has(model, attr):
        name = attr.strip("_") + "_"
        raise InvalidInputError(
            f"init_params: {letter!r} is not in init_params={model.init_params!r}, so "
            f"{name} must be set before fit; set it or add {letter!r} to init_params")
    return _learned.raw(model, attr).copy()  # the learners may update it in place


def labelled_start(family, X: np.ndarray, states: np.ndarray, emis: dict,
                   init_params: str) -> dict:
    """The initial emission parameters moved to the labelled steps (``states >= 0``) by
    the family (:meth:`~hiddenstate.families.EmissionFamily.labelled_start`)."""
    lab = np.flatnonzero(states >= 0)
    if not len(lab):
        return emis
    return family.labelled_start(emis, X[lab], states[lab], init_params)
