r"""What Gibbs sampling (:mod:`hiddenstate.learn.gibbs`) asks of the HMM's Problem: one exact
draw of the hidden paths with its counts, and the states' exchangeability.

``sample_counts`` draws every sequence's path by forward-filtering backward-sampling
(:func:`hiddenstate.inference.sample_posterior`; Chib 1996, Frühwirth-Schnatter 1994) on
the same emission table as the E-step (clamped at labelled steps), fills missing
observations with draws given the path (the family's ``sample_missing``: Gaussian rows;
categorical and Poisson statistics leave missing entries out exactly), and counts along
the path as Viterbi training does. Its value is the log joint of the data and the path,

.. math::
    \log p(X, z \mid \theta) = \sum_s \Big(\log\pi_{z_{s,0}}
        + \sum_{t\ge1}\log A_{z_{s,t-1} z_{s,t}} + \sum_t \log p(x_{s,t} \mid z_{s,t})\Big).

``state_groups``: the learned states of the chain (after PROPS's source states) are
exchangeable, acting on ``startprob``, both axes of ``transmat`` (not for a structured
chain, whose allowed transitions name the states) and the emission parameters
(the family's ``state_axes``).
"""

from __future__ import annotations

import numpy as np

from ... import inference
from ...kernels.paths import path_log_joint


class HMMSampling:
    """``sample_counts`` and ``state_groups`` of :class:`~.problem.HMMProblem` (see the
    module docstring)."""

    def path_log_joint(self, views, table, states: np.ndarray) -> np.ndarray:
        r""":math:`\log p(x_s, z_s \mid \theta)` of every sequence along ``states`` (-inf for
        a sequence whose states are -1: impossible;
        :func:`hiddenstate.kernels.paths.path_log_joint`)."""
        out = np.empty(len(self.seqs.lengths))
        offset = table.log_offset
        path_log_joint(np.ascontiguousarray(views["startprob"], dtype=np.float64),
                       np.ascontiguousarray(self._chain(views).dense(), dtype=np.float64),
                       table.emis, table.idx, np.zeros(1) if offset is None else offset,
                       offset is not None, self.seqs.bounds, states, out)
        return out

    def sample_counts(self, views, rng):
        """Draw every sequence's hidden path given the parameters ``views``.

        Parameters
        ----------
        views : dict
            The parameters per block.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        log_joint : float
            :math:`\\log p(X, z \\mid \\theta)` of the drawn paths.
        stats : dict
            The counts per block along them.
        states : ndarray of int of shape (n_samples,)
            The paths.

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If a sequence has probability zero under ``views``.
        """
        if getattr(self, "weights", None) is not None:
            from ...errors import InvalidInputError

            raise InvalidInputError(
                "sample_weight: learn='gibbs' draws one hidden path per sequence and takes no "
                "weights (repeat a sequence to count it twice); fit without sample_weight")
        table, fold = self._table(views)
        states = inference.sample_posterior(views["startprob"], self._chain(views).dense(),
                                            table, self.seqs, rng)
        logp = self.path_log_joint(views, table, states)
        self.check_paths(logp)
        X = self.family.sample_missing(views["emission"], self.X, states, rng)
        weights = np.ones((len(self.seqs.lengths), 1))
        stats = self.hard_stats(table, fold, states[None], weights, views, X)
        return float(logp.sum()), stats, states

    @property
    def state_groups(self) -> list:
        """The exchangeable states (see the module docstring), as
        :class:`~hiddenstate.learn.gibbs.StateGroup` objects."""
        from ...learn.gibbs import StateGroup

        inner, n_fixed = self.family.learned_part()
        size = self.family.n_states - n_fixed
        if size < 2:
            return []
        members = [("startprob", (), (0,), n_fixed)]
        if self.transitions is None:
            members.append(("transmat", (), (0, 1), n_fixed))
        for key, axis in inner.state_axes().items():
            if axis is not None:
                members.append((f"emission.{key}", (), (axis,), 0))
        return [StateGroup(size, members)]
