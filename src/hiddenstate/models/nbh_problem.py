r"""Naive Bayes with a hidden cluster per class (NBH; Sato 2011, Kojima & Sato's "Viterbi
training in PRISM", section 5) as :func:`hiddenstate.learn.fit` sees it.

The joint distribution of a class :math:`c`, a hidden cluster :math:`h` and categorical
attributes :math:`a_1..a_d` (eq. 7 of the paper) is

.. math:: p(c, h, a) = \pi_c\, \rho_{c h} \prod_j \theta^{(j)}_{c h a_j},

so every parameter is a categorical switch: the class prior :math:`\pi` (one row), the
cluster prior :math:`\rho_{c\cdot}` (one row per class) and, per attribute, one row
:math:`\theta^{(j)}_{c h \cdot}` per (class, cluster). Each is a
:class:`~hiddenstate.families.DirichletRows` block. A missing attribute is summed out, which
leaves its factor equal to one. Classes are observed in training; the cluster is the hidden
variable: sum-product over :math:`h` gives expected counts (EM, MAP, VB), max-product the
Viterbi cluster of each sample (VT) or its k best clusters (k-best VT).

Attributes are stored one-hot, ``(n, sum_j V_j)``, as a sparse matrix (one entry per
present attribute, so memory grows with the rows and attributes, not with the number of
distinct values), and the log-joint of every (class, cluster) is one sparse-dense product;
a missing attribute (an empty block of its row) contributes nothing.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ..families import DirichletRows
from ..learn import check_possible, kbest_weights


def one_hot(codes: np.ndarray, n_values: list[int]) -> sparse.csr_matrix:
    """``(n, sum V_j)`` sparse indicator of each attribute's value; ``-1`` (missing) gives
    no entry."""
    offsets = np.concatenate([[0], np.cumsum(n_values)]).astype(np.int64)
    rows, cols = np.nonzero(codes >= 0)
    return sparse.csr_matrix(
        (np.ones(len(rows)), (rows, offsets[cols] + codes[rows, cols])),
        shape=(len(codes), int(offsets[-1])))


def logsumexp_rows(a: np.ndarray) -> np.ndarray:
    """log of the sum of exp over the last axis, shifted by the row maximum; a row of
    ``-inf`` gives ``-inf``."""
    top = a.max(axis=-1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(a - safe[..., None]).sum(axis=-1))


def log_joint(params: dict, onehot: sparse.csr_matrix, n_values: list[int]) -> np.ndarray:
    r""":math:`\log p(c, h, a_i)` of every sample, class and cluster: ``(n, C, K)``.

    A value of probability zero gives ``-inf`` (exactly: the zero entries are counted by a
    second product instead of multiplying ``log 0`` by the indicators)."""
    pi, rho = params["class"], params["cluster"]
    C, K = rho.shape
    theta = np.concatenate([params[f"attr:{j}"].reshape(C * K, v)
                            for j, v in enumerate(n_values)], axis=1)  # (C K, sum V)
    zero = theta <= 0
    with np.errstate(divide="ignore"):
        log_theta = np.where(zero, 0.0, np.log(np.where(zero, 1.0, theta)))
        prior = np.log(pi)[:, None] + np.log(rho)  # (C, K)
    out = (onehot @ log_theta.T).reshape(-1, C, K) + prior
    if zero.any():
        hits = (onehot @ zero.T.astype(np.float64)).reshape(-1, C, K)
        out[hits > 0] = -np.inf
    return out


class NBHProblem:
    """NBH on labelled training data: blocks ``class``, ``cluster``, ``attr:<j>``.

    ``codes`` ``(n, d)`` attribute value indices (``-1``: missing), ``y`` ``(n,)`` class
    indices, ``prior`` the Dirichlet concentration of every row."""

    def __init__(self, codes: np.ndarray, y: np.ndarray, n_classes: int, n_clusters: int,
                 n_values: list[int], prior: float):
        self.y, self.n_values = y, list(n_values)
        self.C, self.K = n_classes, n_clusters
        self.onehot = one_hot(codes, self.n_values)
        n = len(y)
        self.class_counts = np.bincount(y, minlength=n_classes).astype(np.float64)
        self.by_class = [np.flatnonzero(y == c) for c in range(n_classes)]
        self.onehot_by_class = [self.onehot[rows] for rows in self.by_class]
        self.blocks = {"class": DirichletRows("class", "c", prior),
                       "cluster": DirichletRows("cluster", "h", prior)}
        self.letters = {"class": "c", "cluster": "h"}
        self.n_virtual = {"class": float(n), "cluster": n / n_classes}
        self.n_observations = n  # samples
        for j in range(len(self.n_values)):
            key = f"attr:{j}"
            self.blocks[key] = DirichletRows(key, "a", prior)
            self.letters[key] = "a"
            self.n_virtual[key] = n / (n_classes * n_clusters)

    def log_joint_observed(self, params: dict) -> np.ndarray:
        r""":math:`\log p(c_i, h, a_i)` at each sample's own class: ``(n, K)`` (the
        samples of each class against that class's rows only)."""
        out = np.empty((len(self.y), self.K))
        for c, rows in enumerate(self.by_class):
            class_params = {name: value[c:c + 1] for name, value in params.items()}
            out[rows] = log_joint(class_params, self.onehot_by_class[c], self.n_values)[:, 0]
        check_possible(np.where(np.all(np.isneginf(out), axis=1), -np.inf, 0.0),
                       "training sample", "a value the parameters give probability zero at "
                       "its class", "check hand-set parameters or use a prior (learn='map')")
        return out

    def stats(self, resp: np.ndarray) -> dict:
        """Counts per block from cluster weights ``resp`` ``(n, K)`` of each sample (its
        class is observed)."""
        per_value = np.empty((self.C, self.K, self.onehot.shape[1]))
        cluster = np.empty((self.C, self.K))
        for c, rows in enumerate(self.by_class):
            per_value[c] = (self.onehot_by_class[c].T @ resp[rows]).T
            cluster[c] = resp[rows].sum(axis=0)
        out = {"class": self.class_counts.copy(), "cluster": cluster}
        start = 0
        for j, v in enumerate(self.n_values):
            out[f"attr:{j}"] = per_value[:, :, start:start + v]
            start += v
        return out

    def expected_counts(self, views: dict) -> tuple[float, dict]:
        """Sum-product over the hidden cluster: (log-likelihood, expected counts)."""
        lj = self.log_joint_observed(views)
        ll = logsumexp_rows(lj)
        return float(ll.sum()), self.stats(np.exp(lj - ll[:, None]))

    def sample_counts(self, views: dict, rng) -> tuple[float, dict, np.ndarray]:
        r"""Gibbs sampling: each sample's cluster drawn from its posterior given its class
        and attributes, :math:`\sum_i \log p(c_i, h_i, a_i)` and the counts."""
        lj = self.log_joint_observed(views)
        top = lj.max(axis=1, keepdims=True)
        cdf = np.cumsum(np.exp(lj - top), axis=1)
        u = (1.0 - rng.random(len(lj))) * cdf[:, -1]
        h = np.minimum((cdf < u[:, None]).sum(axis=1), self.K - 1)
        resp = np.zeros_like(lj)
        resp[np.arange(len(lj)), h] = 1.0
        return float(lj[np.arange(len(lj)), h].sum()), self.stats(resp), h

    @property
    def state_groups(self) -> list:
        """The clusters of each class are exchangeable (one group per class)."""
        from ..learn.gibbs import StateGroup

        if self.K < 2:
            return []
        return [StateGroup(self.K, [("cluster", (c,), (0,), 0)]
                           + [(f"attr:{j}", (c,), (0,), 0) for j in range(len(self.n_values))])
                for c in range(self.C)]

    def path_counts(self, views: dict, k: int) -> tuple[float, dict, np.ndarray]:
        """Max-product: each sample's ``k`` best clusters (ties to the lower index), their
        log-mass and counts weighted by their normalised probabilities; ``k = 1`` is the
        Viterbi cluster."""
        lj = self.log_joint_observed(views)
        k = min(k, self.K)
        best = np.argsort(-lj, axis=1, kind="stable")[:, :k]
        weights, log_mass = kbest_weights(np.take_along_axis(lj, best, axis=1))
        resp = np.zeros_like(lj)
        np.put_along_axis(resp, best, weights, axis=1)
        return float(log_mass.sum()), self.stats(resp), best
