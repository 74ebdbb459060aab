"""An input-driven HMM as the batch learner's Problem (``transitions="softmax"``): blocks
``startprob`` (Dirichlet rows), ``transmat`` (a :class:`~hiddenstate.families.SoftmaxTransitions`
regression of the next state on the inputs) and ``emission``; the E-step runs the
time-varying chain (:mod:`hiddenstate.time_varying`). With fixed transitions the model is
the HMM's own Problem (:class:`~hiddenstate.models.hmm.HMMProblem`) on the rows of
:mod:`.design`."""

from __future__ import annotations

import numpy as np

from ... import inference, time_varying
from ...families import DirichletRows, SoftmaxTransitions
from ...inference import Sequences
from ..hmm.problem import check_possible


class InputDrivenProblem:
    """The IOHMM as the generic learner sees it (see :mod:`hiddenstate.learn.batch`).

    Parameters
    ----------
    family : hiddenstate.families.EmissionFamily
        The emission family.
    Z : ndarray
        The modelled rows (:mod:`.design`).
    seqs : hiddenstate.inference.Sequences
        Their layout.
    U : ndarray of shape (n, M)
        The inputs of every row (the move into row ``t`` reads ``U[t]``).
    startprob_prior, transmat_prior : float or array-like
        The Dirichlet priors of the initial distribution and of the transitions at inputs 0.
    coef_weight : float
        The precision of the Gaussian prior of the transition coefficients.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> m = hs.RegressionHMM(2, transitions="softmax")
    >>> u = np.array([[0.0], [1.0], [-1.0], [2.0]])
    >>> d = m._design(np.array([[0.1], [2.0], [-1.5], [3.0]]), None, u)
    >>> problem = m.problem(m.emission_family(1, d.Z, n_inputs=1), d.Z, d.seqs, U=d.U)
    >>> views = {"startprob": np.array([0.5, 0.5]),
    ...          "transmat": {"transmat": np.array([[0.9, 0.1], [0.1, 0.9]]),
    ...                       "coef": np.zeros((2, 2, 1))},
    ...          "emission": {"coef": np.array([[[1.0]], [[-1.0]]]),
    ...                       "intercept": np.zeros((2, 1)), "covars": np.ones((2, 1, 1))}}
    >>> loglik, stats = problem.expected_counts(views)
    >>> round(loglik, 3), stats["transmat"]["xi_phi"].shape   # K x K x (inputs + 1)
    (-5.707, (2, 2, 2))
    """

    def __init__(self, family, Z: np.ndarray, seqs: Sequences, U: np.ndarray,
                 startprob_prior, transmat_prior, coef_weight: float):
        self.family = family
        self.X = Z
        self.seqs = seqs
        self.U = U
        K = family.n_states
        self.transitions = SoftmaxTransitions(K, U.shape[1], transmat_prior, coef_weight)
        self.blocks = {"startprob": DirichletRows("startprob", "s", startprob_prior),
                       "transmat": self.transitions, "emission": family}
        self.letters = {"startprob": "s", "transmat": "t",
                        "emission": "".join(family.letters)}
        n = len(Z) / K
        self.n_virtual = {"startprob": len(seqs.lengths), "transmat": n, "emission": n}
        self.n_observations = len(Z)   # the modelled rows (the stop rule's tol is per row)
        inner = np.ones(len(Z), dtype=bool)
        inner[seqs.bounds[:-1]] = False
        self._moves = np.flatnonzero(inner)   # rows entered by a transition
        self._full = np.column_stack([U, np.ones(len(Z))])   # [u_t, 1] of every row
        self._design = self._full[self._moves]

    def _inference(self, views):
        startprob = views["startprob"]
        transmats = self.transitions.matrices(views["transmat"], self.U)
        table = inference.emission_table(self.family, views["emission"], self.X, startprob,
                                         views["transmat"]["transmat"], self.seqs)
        return startprob, transmats, table

    def _transition_stats(self, xi_design, prev_post):
        return {"xi_phi": xi_design, "r": prev_post, "phi": self._design}

    def expected_counts(self, views):
        r"""Sum-product: the E-step over the time-varying chain.

        Parameters
        ----------
        views : dict
            The parameters per block.

        Returns
        -------
        loglik : float
            :math:`\log p(X)`, summed over the sequences.
        stats : dict
            The statistics per block (the transitions': ``xi_phi``
            :math:`\sum_t\xi_t(i, j)[u_t, 1]`, and the rows ``r`` and ``phi``).
        """
        startprob, transmats, table = self._inference(views)
        post = time_varying.forward_backward(startprob, transmats, np.arange(len(self.X)),
                                             table, self.seqs, self._full)
        check_possible(post.loglik)
        stats = {"startprob": post.start,
                 "transmat": self._transition_stats(post.xi_design,
                                                    post.post[self._moves - 1]),
                 "emission": self.family.statistics_at(views["emission"], self.X, post.post)}
        return float(post.loglik.sum()), stats

    def path_counts(self, views, k):
        r"""Max-product: the statistics along each sequence's Viterbi path.

        Parameters
        ----------
        views : dict
            The parameters per block.
        k : int
            The paths per sequence (1: k-best paths of a time-varying chain are refused by
            the estimator).

        Returns
        -------
        value : float
            :math:`\log p(X, z^*)`, summed.
        stats : dict
            The hard-count statistics per block.
        paths : ndarray of shape (1, n_samples)
            The paths.
        """
        startprob, transmats, table = self._inference(views)
        logp, states = time_varying.viterbi(startprob, transmats, np.arange(len(self.X)),
                                            table, self.seqs)
        check_possible(logp)
        K = self.family.n_states
        onehot = np.eye(K)[states]
        start = onehot[self.seqs.bounds[:-1]].sum(axis=0)
        src, dst = states[self._moves - 1], states[self._moves]
        xi = np.zeros((K, K, self._design.shape[1]))
        np.add.at(xi, (src, dst), self._design)
        stats = {"startprob": start,
                 "transmat": self._transition_stats(xi, onehot[self._moves - 1]),
                 "emission": self.family.statistics_at(views["emission"], self.X, onehot)}
        return float(logp.sum()), stats, states[None]
