r"""Funk's stochastic EM on log weights (Funk 2015, eq. 17-20, ``train1``/``train2``).

For a child :math:`D` with sampled parent states :math:`B_i, C_j` the model's prediction is
the normalised product :math:`P(D \mid B_i, C_j) \propto P(D|B_i)P(D|C_j)` (eq. 17), and the
gradient of :math:`\sum_k \bar P(D_k) \log P(D_k \mid B_i, C_j)` with respect to every
parent's log weight row is the same vector (eq. 20):

.. math::
    \nabla_{\log P(D|B_i)} = \nabla_{\log P(D|C_j)}
        = P(D \mid B_i, C_j, X) - P(D \mid B_i, C_j),

"posterior minus predicted", where the posterior is the distribution the downward pass
sampled :math:`D` from (eq. 16). A root's prior gets its posterior minus the prior. One
step of stochastic EM on a mini-batch: upward pass, one downward sample per pattern, then
each sampled parent row moves by ``learning_rate`` times the batch mean of that vector.

Options: ``soft_normalization`` (Funk's soft constraint: the prediction of a child with
several parents is the *unnormalised* product of its parents' rows, so the same rule also
pulls that product towards summing to one; it is the gradient of the unnormalised
divergence :math:`\sum_k \bar P_k \log f_k - f_k`, whose curvature grows with
:math:`f`, so the error is clipped to [-1, 1], the range of the normalised rule) and
``balance`` (the state-usage option: while training, each hidden variable's sampling
distribution is multiplied by :math:`(N_v \bar u_v)^{-\beta}`, with :math:`\bar u_v` a
running average of how often each state was drawn, so over-used states are drawn less and
every state gets a chance to compete; Funk mentions a trick of this kind without details).
"""

from __future__ import annotations

import numpy as np

from . import passes
from .structure import Structure

#: per-batch decay of the running state-usage averages of ``balance``
USAGE_DECAY = 0.99


def prediction(s: Structure, weights: list, prior: dict, draw: passes.Draw, v: int,
               soft_normalization: bool) -> np.ndarray:
    """What the model predicts for ``v`` given its sampled parents ``(n, N_v)``: its
    conditional table row (eq. 17), or with ``soft_normalization`` and several parents the
    unnormalised product of the parents' factor rows."""
    ps = s.parents[v]
    if not ps:
        return np.broadcast_to(prior[v], (len(draw.z), s.sizes[v]))
    if len(ps) > 1 and soft_normalization:
        with np.errstate(divide="ignore"):
            lw = sum(np.log(weights[s.edge_index[(p, v)]])[draw.z[:, p]] for p in ps)
        return np.exp(lw)
    return np.exp(draw.log_cpt[v])


def gradients(s: Structure, weights: list, prior: dict, draw: passes.Draw,
              soft_normalization: bool) -> tuple[list, dict]:
    """Batch-summed eq. 20 for every arrow ``(N_p, N_c)`` and every root prior: row ``i`` of
    an arrow ``p -> v`` gets the sum, over patterns whose sample put ``p`` in state ``i``, of
    posterior minus predicted of ``v``."""
    # a sample inconsistent with the evidence (possible in a DAG) teaches nothing
    valid = np.isfinite(draw.log_weight)[:, None]
    err = []
    for v in range(s.n_vars):
        pred = prediction(s, weights, prior, draw, v, soft_normalization)
        # the normalised rule's error lies in [-1, 1]; the soft rule's prediction is not
        # bounded, and a product far above one would throw the weights out (a 30-epoch run
        # of the word network diverged without this), so its error is clipped to that range
        err.append(np.where(valid, np.clip(draw.cond[v] - pred, -1.0, 1.0), 0.0))
    n = len(draw.z)
    onehot: dict = {}  # the sampled state of each parent, one-hot (n, N_p)
    g_w = []
    for p, c in s.edges:
        if p not in onehot:
            onehot[p] = np.zeros((n, s.sizes[p]))
            onehot[p][np.arange(n), draw.z[:, p]] = 1.0
        g_w.append(onehot[p].T @ err[c])
    g_prior = {r: err[r].sum(axis=0) for r in s.roots}
    return g_w, g_prior


def apply(s: Structure, weights: list, prior: dict, g_w: list, g_prior: dict,
          step: float) -> tuple[list, dict]:
    """Move log weights by ``step * gradient`` (multiplicatively on the factors, so
    structural zeros stay zero); rows of single-parent children and the priors are
    renormalised (a row's scale does not change the model). A step too large for float64
    leaves inf or NaN, which the estimator reports (naming ``learning_rate``)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _apply(s, weights, prior, g_w, g_prior, step)


def _apply(s, weights, prior, g_w, g_prior, step):
    new_w = []
    for e, (_, c) in enumerate(s.edges):
        w = weights[e] * np.exp(step * g_w[e])
        if len(s.parents[c]) == 1:
            w = w / w.sum(axis=1, keepdims=True)
        new_w.append(w)
    new_prior = {}
    for r in s.roots:
        p = prior[r] * np.exp(step * g_prior[r])
        new_prior[r] = p / p.sum()
    return new_w, new_prior


def usage_bias(s: Structure, usage: list, balance: float) -> list:
    """Log-scale sampling bias ``-balance * log(N_v * usage_v)`` of each hidden variable
    (the usage floored at the smallest normal float, so that a state unused for a very long
    stream keeps a finite bias)."""
    out = [None] * s.n_vars
    if balance > 0:
        tiny = np.finfo(np.float64).tiny
        for v in s.hidden:
            out[v] = -balance * np.log(np.maximum(s.sizes[v] * usage[v], tiny))
    return out


def update_usage(s: Structure, usage: list, z: np.ndarray) -> list:
    out = list(usage)
    for v in s.hidden:
        freq = np.bincount(z[:, v], minlength=s.sizes[v]) / len(z)
        out[v] = USAGE_DECAY * usage[v] + (1.0 - USAGE_DECAY) * freq
    return out


def step(s: Structure, weights: list, prior: dict, evidence: list, n: int,
         rng: np.random.Generator, learning_rate: float, soft_normalization: bool,
         balance: float, usage: list):
    """One mini-batch of stochastic EM. Returns the new ``(weights, prior, usage)``, the
    log importance weight of each pattern's sample under the parameters *before* the step
    (log P(X) in a tree without ``balance``; a stochastic lower bound in expectation
    otherwise) and the upward pass's log-evidence of each pattern (exact in a tree; in a
    DAG -inf only for a pattern of probability zero, whose sample is meaningless)."""
    rows = passes.normalise_rows(weights)
    upw = passes.upward(s, rows, evidence, n)
    bias = usage_bias(s, usage, balance)
    draw = passes.sample_down(s, rows, prior, upw.up, evidence, n, rng, keep=True,
                              bias=bias if balance > 0 else None)
    g_w, g_prior = gradients(s, weights, prior, draw, soft_normalization)
    new_w, new_prior = apply(s, weights, prior, g_w, g_prior, learning_rate / n)
    return (new_w, new_prior, update_usage(s, usage, draw.z), draw.log_weight,
            passes.log_evidence(s, prior, upw))
