r"""Upward and downward passes of a tree or DAG network over a batch of patterns (Funk 2015).

Pure functions of the structure, the parameters and the evidence; no validation (the
estimator checks its inputs). Notation (equation numbers are Funk's):

- ``weights[e]`` ``(N_p, N_c)``: the arrow ``p -> c``'s non-negative factors
  :math:`P(c_j \mid p_i)`; ``rows[e]``: the same, each row normalised to sum to one. For a
  child with one parent the two are equal (its conditional probability table); a child with
  several parents draws from the normalised element-wise product of its parents' rows
  (eq. 8), for which any row scaling cancels.
- ``prior[v]`` ``(N_v,)`` for each root: :math:`P(v)` (the single-state root node's row).
- ``evidence[v]``: ``(n, N_v)`` likelihood :math:`P(X_v \mid v)` of the evidence attached to
  ``v`` (one-hot for an observed symbol, ones for a missing one, the user's likelihood for
  soft evidence), or None (no evidence: ones).

Upward pass (eq. 1, 2, 6): :math:`\hat v \propto e_v \odot \prod_c W_{vc}\hat c`. Each
message :math:`W_{vc}\hat c` whose largest entry is above one or tiny is scaled per pattern
to a largest entry of one, and so is a running product that gets small, with the log of
the factor kept, so that in a tree :math:`\log P(X) = \sum_{\text{roots}} \log(\pi_r\cdot\hat
r) + \sum \log(\text{scales})` stays exact however deep or wide the tree and whatever the
scale of the evidence and factors (subnormal or near the float64 maximum): a message is
computed from :math:`\hat c` as it is, never from a normalised copy in which an entry that
matters could have underflowed. In a DAG the same pass is Funk's optimistic approximation: a
child with several parents sends each parent the message of its own rows, as if it were that
parent's only child.

Downward pass: exact posterior marginals in a tree (eq. 3) and expected arrow counts for EM,
both through the child's posterior given its parent's state :math:`q(c_j \mid p_i, X) =
W_{ij}\hat c_j / \sum_k W_{ik}\hat c_k`, a distribution (nothing is divided by a message
entry that can be subnormal); posterior samples (eq. 5, 7; eq. 16 for a child with several
parents), whose importance weight :math:`p(z, X)/q(z)` equals :math:`P(X)` for every sample
in a tree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.tree import (
    absorb_message,
    down_arrow,
    max_message,
    rescale_small,
    scale_message,
)
from .structure import Structure


@dataclass
class Upward:
    """The upward values ``up[v]`` (``n``, ``N_v``): :math:`\\hat v` of every pattern up to a
    positive factor of that pattern (all zero for an impossible pattern); the logs of the
    factors are summed in ``log_norm``."""

    up: list
    log_norm: np.ndarray


def normalise_rows(weights: list) -> list:
    """Each factor matrix with its rows scaled to sum to one (all-zero rows stay zero). A
    row is first divided by its largest entry, so factors near the float64 maximum (whose
    sum would overflow) or subnormal ones keep their ratios (a row's scale cancels in
    eq. 8)."""
    out = []
    for w in weights:
        top = w.max(axis=1, keepdims=True)
        w = w / np.where(top > 0, top, 1.0)
        out.append(w / np.where(top > 0, w.sum(axis=1, keepdims=True), 1.0))
    return out


def upward(s: Structure, rows: list, evidence: list, n: int) -> Upward:
    """Upward values of every variable, children before parents (eq. 6). A message whose
    largest entry is above one or tiny is scaled per pattern to a largest entry of one, and
    the running product of a variable's messages is rescaled whenever it gets small; the
    scale factors join ``log_norm``, so a
    variable with hundreds of children does not underflow and extreme evidence does not
    overflow."""
    up: list = [None] * s.n_vars
    log_norm = np.zeros(n)
    for v in reversed(range(s.n_vars)):
        if evidence[v] is None:
            u = np.ones((n, s.sizes[v]))
        else:
            u = evidence[v].copy()
            rescale_small(u, log_norm)
        for c in s.children[v]:
            e = s.edge_index[(v, c)]
            msg = up[c] @ rows[e].T
            scale_message(msg, up[c], rows[e], log_norm)
            absorb_message(u, msg, log_norm)
        up[v] = u
    return Upward(up, log_norm)


def log_evidence(s: Structure, prior: dict, upw: Upward) -> np.ndarray:
    """:math:`\\log P(X)` per pattern (exact in a tree; -inf for an impossible pattern): each
    root's :math:`\\pi_r \\cdot \\hat r` is the message to a parent of one state."""
    out = upw.log_norm.copy()
    for r in s.roots:
        w = prior[r][None, :]
        msg = upw.up[r] @ w.T
        scale_message(msg, upw.up[r], w, out)
        with np.errstate(divide="ignore"):  # 0 where out is already -inf
            out += np.log(msg[:, 0])
    return out


def marginals(s: Structure, rows: list, prior: dict, upw: Upward) -> list:
    """Exact posterior marginals :math:`P(v \\mid X)` ``(n, N_v)`` of every variable of a
    tree (eq. 3: :math:`P(c_j|X) = \\sum_i P(p_i|X)\\, q(c_j \\mid p_i, X)`; a root is the
    child of a parent of one state with the prior as its row); all zero for an impossible
    pattern."""
    post: list = [None] * s.n_vars
    for v in range(s.n_vars):
        n, size = upw.up[v].shape
        post[v] = np.empty((n, size))
        if not s.parents[v]:
            down_arrow(np.ones((n, 1)), prior[v][None, :], upw.up[v], post[v],
                       np.zeros((1, size)))
        else:
            p = s.parents[v][0]
            down_arrow(post[p], rows[s.edge_index[(p, v)]], upw.up[v], post[v],
                       np.zeros((s.sizes[p], size)))
    return post


def edge_counts(s: Structure, rows: list, upw: Upward, post: list) -> list:
    """Expected counts :math:`\\sum_X P(p_i, c_j \\mid X) = \\sum_X P(p_i|X)\\, q(c_j \\mid
    p_i, X)` of every arrow of a tree ``(N_p, N_c)``."""
    out = []
    for e, (p, c) in enumerate(s.edges):
        counts = np.zeros(rows[e].shape)
        down_arrow(post[p], rows[e], upw.up[c], np.empty(upw.up[c].shape), counts)
        out.append(counts)
    return out


def max_product(s: Structure, rows: list, prior: dict, evidence: list, n: int):
    """Most probable joint state of the hidden variables of every pattern of a tree
    (max-product, log space; observed leaves are summed, so a missing symbol is
    marginalised): ``(log p(X, z*) (n,), z* (n, n_vars))`` with an observed leaf's column
    holding its symbol (-1 if missing); ties go to the lowest state."""
    observed = set(s.observed)
    lu: list = [None] * s.n_vars
    arg: list = [None] * len(s.edges)
    total = np.zeros(n)
    with np.errstate(divide="ignore"):
        log_rows = [np.log(r) for r in rows]
        for v in reversed(range(s.n_vars)):
            u = np.zeros((n, s.sizes[v])) if evidence[v] is None else np.log(evidence[v])
            for c in s.children[v]:
                e = s.edge_index[(v, c)]
                if c in observed:  # not part of z*: a missing symbol is summed out
                    u += np.log(evidence[c] @ rows[e].T)
                    continue
                m = np.empty((n, s.sizes[v]))
                arg[e] = np.empty((n, s.sizes[v]), dtype=np.int64)
                max_message(log_rows[e], lu[c], m, arg[e])
                u += m
            top = u.max(axis=1)
            finite = np.isfinite(top)
            u -= np.where(finite, top, 0.0)[:, None]
            total += top
            lu[v] = u
        z = np.zeros((n, s.n_vars), dtype=np.int64)
        rows_n = np.arange(n)
        for r in s.roots:
            score = lu[r] + np.log(prior[r])
            z[:, r] = score.argmax(axis=1)
            total += score[rows_n, z[:, r]]
    for v in range(s.n_vars):
        for c in s.children[v]:
            if c in observed:
                known = (evidence[c] > 0).sum(axis=1) == 1
                z[:, c] = np.where(known, evidence[c].argmax(axis=1), -1)
            else:
                z[:, c] = arg[s.edge_index[(v, c)]][rows_n, z[:, v]]
    return total, z


@dataclass
class Draw:
    """One downward sample per pattern: states ``z`` ``(n, n_vars)``, ``log_p`` = log p(z, X)
    under the model (eq. 8), ``log_q`` = log of the proposal that drew it, and (when asked)
    for every variable its sampling distribution ``cond[v]`` = q(v | sampled parents, X)
    (eq. 5 / 16) and the model's ``log_cpt[v]`` = log P(v | sampled parents)."""

    z: np.ndarray
    log_p: np.ndarray
    log_q: np.ndarray
    cond: list | None = None
    log_cpt: list | None = None

    @property
    def log_weight(self) -> np.ndarray:
        """log p(z, X) / q(z): log P(X) for every sample of a tree; -inf for a sample
        inconsistent with the evidence."""
        with np.errstate(invalid="ignore"):
            out = self.log_p - self.log_q
        return np.where(np.isfinite(self.log_p), out, -np.inf)


def _log_softmax_rows(x: np.ndarray) -> np.ndarray:
    top = x.max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return x - (np.log(np.exp(x - top).sum(axis=1, keepdims=True)) + top)


def categorical(prob: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per row of (unnormalised) probabilities; never a zero-probability index of
    a row with positive mass."""
    cdf = np.cumsum(prob, axis=1)
    u = (1.0 - rng.random(len(prob))) * cdf[:, -1]
    return np.minimum((cdf < u[:, None]).sum(axis=1), prob.shape[1] - 1)


def sample_down(s: Structure, rows: list, prior: dict, up: list | None, evidence: list,
                n: int, rng: np.random.Generator | None, keep: bool = False,
                bias: list | None = None, fixed: np.ndarray | None = None) -> Draw:
    """Sample every variable top-down from q(v | parents, X) ∝ P(v | parents) ⊙ v̂ (eq. 5,
    7; eq. 16 with the normalised product of eq. 8 for several parents). With ``up=None``
    (and no evidence) this draws from the model (generation). ``bias[v]`` (log scale) is
    added to the sampling distribution of ``v`` (the state-usage option of stochastic EM);
    the weights stay exact for the proposal actually used. With ``fixed`` ``(n, n_vars)``
    nothing is drawn: the states are taken from it and everything else is computed for them
    (their proposal probability, their joint, the conditionals)."""
    z = np.zeros((n, s.n_vars), dtype=np.int64) if fixed is None else fixed
    log_p = np.zeros(n)
    log_q = np.zeros(n)
    cond = [None] * s.n_vars if keep else None
    log_cpt = [None] * s.n_vars if keep else None
    rows_n = np.arange(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_rows = [np.log(r) for r in rows]
        for v in range(s.n_vars):
            ps = s.parents[v]
            if not ps:
                lc = np.broadcast_to(np.log(prior[v]), (n, s.sizes[v]))
            elif len(ps) == 1:
                lc = log_rows[s.edge_index[(ps[0], v)]][z[:, ps[0]]]
            else:
                lc = sum(log_rows[s.edge_index[(p, v)]][z[:, p]] for p in ps)
                lc = _log_softmax_rows(lc)
            lq = lc if up is None else lc + np.log(up[v])
            if bias is not None and bias[v] is not None:
                lq = lq + bias[v]
            lq = _log_softmax_rows(lq)
            q = np.exp(lq)
            q = np.where(np.isfinite(lq), q, 0.0)
            if fixed is None:
                z[:, v] = categorical(q, rng)
            zv = z[:, v]
            log_p += lc[rows_n, zv]
            if evidence[v] is not None:
                log_p += np.log(evidence[v][rows_n, zv])
            log_q += lq[rows_n, zv]
            if keep:
                cond[v] = q
                log_cpt[v] = lc
    return Draw(z, log_p, log_q, cond, log_cpt)


def log_joint(s: Structure, rows: list, prior: dict, evidence: list, z: np.ndarray):
    """log p(z, X) of given joint states ``z`` (n, n_vars) (eq. 8 for several parents)."""
    n = len(z)
    rows_n = np.arange(n)
    out = np.zeros(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        for v in range(s.n_vars):
            ps = s.parents[v]
            if not ps:
                out += np.log(prior[v])[z[:, v]]
            elif len(ps) == 1:
                out += np.log(rows[s.edge_index[(ps[0], v)]])[z[:, ps[0]], z[:, v]]
            else:
                lc = sum(np.log(rows[s.edge_index[(p, v)]])[z[:, p]] for p in ps)
                out += _log_softmax_rows(lc)[rows_n, z[:, v]]
            if evidence[v] is not None:
                out += np.log(evidence[v][rows_n, z[:, v]])
    return np.where(np.isnan(out), -np.inf, out)
