r"""Sample weights of an HMM fit (``fit(X, lengths, sample_weight=...)``): what they mean and
how the Problem applies them (:class:`SampleWeights`).

**Sequence weights** :math:`v_s` make the objective the weighted sum
:math:`\sum_s v_s \log p(x_s \mid \theta)` (MAP, VT and k-best VT add the log prior to it;
VB's bound has :math:`\sum_s v_s \log \tilde Z_s`). Its EM statistics are each sequence's
expected counts (initial state, transitions, emissions) times :math:`v_s`: an integer
weight is that many copies of the sequence, exactly.

**Observation weights** :math:`w_t` raise each observation's emission term to its weight,

.. math::
    p_w(x_s, z_s) = \pi_{z_0} \prod_{t \ge 1} A_{z_{t-1} z_t}
                    \prod_t p(x_t \mid z_t)^{w_t},

and the objective is :math:`\sum_s v_s \log \sum_z p_w(x_s, z)`. The posteriors of the
E-step are those of :math:`p_w`; the emission statistics of step :math:`t` are its
posterior times :math:`w_t` (times :math:`v_s`); the initial-state and transition counts
are not multiplied by :math:`w_t`: the chain is the same, only what an observation says
about its state and the emission parameters is scaled. An integer :math:`w_t` is
:math:`w_t` copies of :math:`x_t` emitted from the same state at that step (not
:math:`w_t` steps); :math:`w_t = 0` is the same as a missing observation. Every mode
maximises (EM, MAP, VT) or bounds (VB) its weighted objective and never decreases it
(the E-step's bound holds for the unnormalised :math:`p_w` as for a likelihood).

The monitor (``monitor_.history``) records the weighted objective. The initialisation
(k-means, the chain's persistence) reads the data unweighted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._validation import check_sample_weight
from ...inference import EmissionTable, Sequences, fold_rows, weigh_observations


@dataclass(frozen=True)
class SampleWeights:
    """The weights of one data set: ``sequence`` ``(S,)`` and ``observation`` ``(N,)``
    (either may be None: all ones). See the module docstring for their meaning.

    Parameters
    ----------
    sequence : ndarray of shape (n_sequences,) or None
        The weight of each sequence.
    observation : ndarray of shape (n_samples,) or None
        The weight of each observation.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.inference import Sequences
    >>> from hiddenstate.models.hmm.weights import SampleWeights
    >>> w = SampleWeights.of([2, 1], Sequences.from_lengths([3, 4]))
    >>> w.sequence, w.observation is None
    (array([2., 1.]), True)
    >>> w.total(np.array([-1.5, -2.0]))
    -5.0
    """

    sequence: np.ndarray | None
    observation: np.ndarray | None

    @classmethod
    def of(cls, sample_weight, seqs: Sequences, part: bool = False) -> SampleWeights | None:
        """Check ``sample_weight`` (see :func:`hiddenstate._validation.check_sample_weight`).

        Parameters
        ----------
        sample_weight : array-like, dict or None
            One weight per sequence or per observation, or a dict with the keys
            ``"sequence"`` and/or ``"observation"``.
        seqs : hiddenstate.inference.Sequences
            The layout of the data.
        part : bool, default=False
            The data are a partition of a distributed fit (its weights may all be 0).

        Returns
        -------
        SampleWeights or None
            None when there is nothing to weigh (None, or all weights 1).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the weights do not fit the data or are negative, infinite or all zero.
        """
        seq, obs = check_sample_weight(sample_weight, seqs.lengths, part=part)
        if seq is None and obs is None:
            return None
        return cls(seq, obs)

    def total(self, loglik: np.ndarray) -> float:
        """Return :math:`\\sum_s v_s \\ell_s` over the sequences of positive weight.

        Parameters
        ----------
        loglik : ndarray of shape (n_sequences,)
            One value per sequence.

        Returns
        -------
        float
            The weighted sum (a sequence of weight 0 counts for nothing, also at ``-inf``).
        """
        if self.sequence is None:
            return float(loglik.sum())
        live = self.sequence > 0
        return float(np.dot(self.sequence[live], loglik[live]))

    def live(self, values: np.ndarray) -> np.ndarray:
        """Return the entries of ``values`` (one per sequence) of positive weight.

        Parameters
        ----------
        values : ndarray of shape (n_sequences, ...)
            One row per sequence.

        Returns
        -------
        ndarray
            The rows of the sequences whose weight is > 0 (the zero-probability rule is
            applied to those only).
        """
        return values if self.sequence is None else values[self.sequence > 0]

    def table(self, table: EmissionTable, clamp=None) -> tuple[EmissionTable, tuple]:
        """Apply the observation weights to an emission table, then the state labels.

        Parameters
        ----------
        table : hiddenstate.inference.EmissionTable
            The table.
        clamp : callable or None, default=None
            ``clamp(table) -> (table, fold)``: the labels' clamp
            (:func:`~hiddenstate.inference.clamp_states`, its log-likelihoods weighted).

        Returns
        -------
        table : hiddenstate.inference.EmissionTable
            :func:`~hiddenstate.inference.weigh_observations` of it (``table`` itself
            without observation weights), clamped.
        fold : tuple
            What :meth:`posteriors` needs to sum the posteriors back onto ``table``'s rows.
        """
        n_rows = table.emis.shape[0]
        wfold = None
        if self.observation is not None:
            table, wfold = weigh_observations(table, self.observation)
        cfold = None
        if clamp is not None:
            table, cfold = clamp(table)
        return table, (wfold, n_rows, cfold)

    def posteriors(self, post: np.ndarray, fold: tuple) -> np.ndarray:
        """Sum the weighted table's posteriors back onto the original rows.

        Each row times its observation weight (the E-step has multiplied them by the
        sequence weights), summed onto the rows of the table they came from.

        Parameters
        ----------
        post : ndarray of shape (n_rows, n_states)
            The posteriors by row of the weighted, clamped table.
        fold : tuple
            From :meth:`table`.

        Returns
        -------
        ndarray
            The emission statistics' posteriors by row of the original table.
        """
        wfold, n_rows, cfold = fold
        post = fold_rows(post, cfold)
        if self.observation is None:
            return post
        return fold_rows(post * self.observation[:, None], wfold, n_rows)

    def path_weights(self, weights: np.ndarray) -> np.ndarray:
        """Multiply the weights of each sequence's best paths (``(S, k)``) by its weight.

        Parameters
        ----------
        weights : ndarray of shape (n_sequences, k)
            The paths' weights (:func:`hiddenstate.learn.kbest_weights`).

        Returns
        -------
        ndarray
            The weighted path weights.
        """
        if self.sequence is None:
            return weights
        v = self.sequence[:, None]
        return np.where(v > 0, weights * v, 0.0)  # weight 0: nothing, even if impossible

    def prior_data(self, X: np.ndarray, seqs: Sequences) -> np.ndarray:
        """Return a one-row stand-in for ``X`` whose column means are the weighted means.

        What the data-dependent prior defaults of variational Bayes read (the column means
        over the observed entries), so that integer weights give the priors of repeated
        data. Symbols (integer ``X``) are returned as they are (no prior reads them).

        Parameters
        ----------
        X : ndarray
            The validated observations.
        seqs : hiddenstate.inference.Sequences
            Their layout.

        Returns
        -------
        ndarray of shape (1, n_features) or X
            The weighted column means (NaN for a column without an observed entry of
            positive weight).
        """
        if X.dtype.kind != "f":
            return X
        flat = X.reshape(len(X), -1)
        w = self.row_weights(seqs)
        seen = ~np.isnan(flat)
        wt = np.where(seen, w[:, None], 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return ((wt * np.where(seen, flat, 0.0)).sum(axis=0) / wt.sum(axis=0))[None, :]

    def row_weights(self, seqs: Sequences) -> np.ndarray:
        """Return the weight of each observation: its sequence's times its own.

        Parameters
        ----------
        seqs : hiddenstate.inference.Sequences
            The layout of the data.

        Returns
        -------
        ndarray of shape (n_samples,)
            :math:`v_{s(t)} w_t`.
        """
        v = np.ones(len(seqs.lengths)) if self.sequence is None else self.sequence
        w = np.repeat(v, seqs.lengths)
        return w if self.observation is None else w * self.observation

    def n_virtual(self, seqs: Sequences, n_states: int) -> dict:
        """Return the weighted sizes VB centres its start on, per block of the HMM.

        Parameters
        ----------
        seqs : hiddenstate.inference.Sequences
            The layout of the data.
        n_states : int
            The number of (emitting) states.

        Returns
        -------
        dict
            ``startprob``: the summed sequence weights; ``transmat`` and ``emission``: the
            weighted number of observations per state (sequence weights only: a row of
            weight 0 counts as a missing observation does, so that the two fits agree).
        """
        v = np.ones(len(seqs.lengths)) if self.sequence is None else self.sequence
        n = float(np.dot(v, seqs.lengths)) / n_states
        return {"startprob": float(v.sum()), "transmat": n, "emission": n}
