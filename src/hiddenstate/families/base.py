"""The seam between models and emission distributions (hmmlearn's template methods, made
explicit: ``_compute_log_likelihood`` / ``_accumulate_sufficient_statistics`` /
``_do_mstep``)."""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod

import numpy as np

from ..errors import InvalidInputError
from ..inference import EmissionTable

#: posterior mass below which a state counts as unvisited by the M-step (it keeps its
#: parameters). Any larger mass is a sum of normal floating-point posteriors that carries
#: full relative precision, so its weighted means are exact to rounding however small it is
#: (freezing a state at, say, 1e-10 would stop EM from moving a state that starts far from
#: the data, as hmmlearn does); below it the sums are made of subnormal numbers.
DEAD_MASS = 1e-290


class EmissionFamily(ABC):
    """The seam between the models and the emission distributions: one per hidden state.

    A family holds its configuration (number of states and features, covariance type...),
    never learned values: parameters travel as a ``dict`` of arrays whose keys are the
    estimator's attribute names without the trailing underscore. This is hmmlearn's
    template methods made explicit (``_compute_log_likelihood`` ->
    :meth:`log_likelihood`, ``_accumulate_sufficient_statistics`` -> :meth:`statistics`,
    ``_do_mstep`` -> :meth:`mstep`); every learning mode of :class:`hiddenstate.HMM` (EM,
    MAP, VB, Viterbi training, the streaming learners) talks to the emissions only through
    these methods, so a new family subclasses this one and implements the abstract methods
    (the variational ones where it has a conjugate treatment; the defaults refuse
    ``learn="vb"``).

    Parameters
    ----------
    n_states : int
        The number of hidden states.
    n_features : int
        The number of features (of symbols for categorical emissions).

    See Also
    --------
    hiddenstate.HMM : Builds the family of its ``emission`` (:data:`FAMILIES`).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import EmissionFamily, PoissonEmissions
    >>> family = PoissonEmissions(n_states=2, n_features=1)
    >>> isinstance(family, EmissionFamily), family.letters
    (True, {'l': 'lambdas'})
    >>> params = {"lambdas": np.array([[1.0], [10.0]])}
    >>> family.log_likelihood(params, np.array([[0.0], [10.0]])).round(3)
    array([[ -1.   , -10.   ],
           [-16.104,  -2.079]])
    """

    #: hmmlearn's ``params`` / ``init_params`` letters this family owns, letter -> key
    letters: dict[str, str] = {}
    #: whether ``table(params, X[rows], occupied)`` gives, row for row, the numbers that
    #: :func:`~hiddenstate.inference.emission_table` computes from :meth:`log_likelihood`
    #: for rows whose states are ``occupied`` (it then rebuilds such rows with ``table``)
    table_rows_exact: bool = False

    def __init__(self, n_states: int, n_features: int):
        self.n_states = n_states
        self.n_features = n_features

    @abstractmethod
    def validate_X(self, X, fitted_n_features: int | None) -> np.ndarray:
        """Check the observations and convert them to the form the other methods read.

        Parameters
        ----------
        X : array-like
            The observations as the user passed them.
        fitted_n_features : int or None
            The number of features (symbols) of a fitted model, which ``X`` must match;
            None: not fitted yet.

        Returns
        -------
        ndarray
            The validated observations.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``X`` is not valid data of this family (the message names ``X``).
        """

    @abstractmethod
    def infer_n_features(self, X: np.ndarray) -> int:
        """Return the number of features (of symbols for categorical) that data imply.

        Parameters
        ----------
        X : ndarray
            Observations as :meth:`validate_X` returns them (rows ``(N, D)``; symbols
            ``(N,)`` for categorical emissions).

        Returns
        -------
        int
            The number of features.
        """

    @abstractmethod
    def log_likelihood(self, params: dict, X: np.ndarray) -> np.ndarray:
        r"""Compute the log-likelihood of every observation under every state.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"emissionprob"``, ``"means"``, ``"covars"``, ...).
        X : ndarray
            Observations as :meth:`validate_X` returns them (rows ``(N, D)``; symbols
            ``(N,)`` for categorical emissions).

        Returns
        -------
        ndarray of shape (n_samples, n_states)
            :math:`\log p(x_t \mid z_t = k)`. A missing entry has no emission term (a row
            with nothing observed: 0).
        """

    def table(self, params: dict, X: np.ndarray,
              occupied: np.ndarray | None = None) -> EmissionTable:
        """Return the emission probabilities in the kernels' form.

        Dense and scaled per row by default (see
        :meth:`hiddenstate.inference.EmissionTable.from_log_likelihood` and
        :func:`hiddenstate.inference.emission_table`).

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"emissionprob"``, ``"means"``, ``"covars"``, ...).
        X : ndarray
            Observations as :meth:`validate_X` returns them (rows ``(N, D)``; symbols
            ``(N,)`` for categorical emissions).
        occupied : ndarray of bool, shape (n_states,), or None, default=None
            The states the chain can be in; the others get probability 0 and take no part
            in the row scaling. None: every state.

        Returns
        -------
        hiddenstate.inference.EmissionTable
            The table the forward-backward and Viterbi kernels read.
        """
        return EmissionTable.from_log_likelihood(self.log_likelihood(params, X), occupied)

    @abstractmethod
    def statistics(self, X: np.ndarray, post: np.ndarray) -> dict:
        r"""Compute the sufficient statistics from the E-step's posteriors.

        Parameters
        ----------
        X : ndarray
            Observations as :meth:`validate_X` returns them (rows ``(N, D)``; symbols
            ``(N,)`` for categorical emissions).
        post : ndarray of shape (n_samples, n_states)
            The E-step's state posteriors :math:`\gamma_{tk}` (a family with
            ``table_by_symbol``: summed by symbol, ``(n_symbols, n_states)``).

        Returns
        -------
        dict
            The sufficient statistics (see :meth:`mstep`).
        """

    @abstractmethod
    def merge_statistics(self, a: dict, b: dict) -> dict:
        """Combine the statistics of two disjoint sets of observations.

        The result is what :meth:`statistics` returns for their union, to rounding (the
        reduce step of an E-step run over partitions; see
        :func:`hiddenstate.learn.merge_statistics`). Every family writes its own: a plain
        sum is right only for statistics that are sums over observations with the same
        keys in every part (not for statistics taken about a per-part reference point,
        nor for keys present only where entries are missing).

        Parameters
        ----------
        a, b : dict
            The statistics of two disjoint sets of observations.

        Returns
        -------
        dict
            The statistics of the union.
        """

    def statistics_at(self, params: dict, X: np.ndarray, post: np.ndarray) -> dict:
        r"""Compute the statistics with the E-step's parameters at hand.

        For a family whose statistics also depend on the parameters of the E-step (a
        mixture's component responsibilities, a Gaussian's rows with missing entries);
        the others ignore ``params`` and return :meth:`statistics`.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"emissionprob"``, ``"means"``, ``"covars"``, ...).
        X : ndarray
            Observations as :meth:`validate_X` returns them (rows ``(N, D)``; symbols
            ``(N,)`` for categorical emissions).
        post : ndarray of shape (n_samples, n_states)
            The E-step's state posteriors :math:`\gamma_{tk}` (a family with
            ``table_by_symbol``: summed by symbol, ``(n_symbols, n_states)``).

        Returns
        -------
        dict
            The sufficient statistics (see :meth:`mstep`).
        """
        return self.statistics(X, post)

    @abstractmethod
    def mstep(self, params: dict, stats: dict, which: str) -> tuple[dict, list[int]]:
        """Update the parameters whose letter is in ``which`` from the statistics.

        The maximum-likelihood estimate, or the MAP estimate under the family's prior.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"emissionprob"``, ``"means"``, ``"covars"``, ...).
        stats : dict
            Sufficient statistics from :meth:`statistics` (merged over parts of the data by
            :meth:`merge_statistics`).
        which : str
            The hmmlearn letters of the parameters to update; the others are kept.

        Returns
        -------
        params : dict of str to ndarray
            The updated parameters.
        degenerate : list of int
            The states whose estimate was degenerate (no posterior mass, or a covariance
            floored) and kept or repaired.
        """

    @abstractmethod
    def log_prior(self, params: dict) -> float:
        r"""Compute the log prior density of the parameters under the family's prior.

        The MAP and Viterbi-training objectives add it to the data term.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"emissionprob"``, ``"means"``, ``"covars"``, ...).

        Returns
        -------
        float
            :math:`\log p(\text{params})`, up to a constant (0 for a flat prior).
        """

    # -- variational Bayes: q(params) in the conjugate family -----------------------------------
    # A family without a conjugate variational treatment keeps these defaults, which refuse.
    def _no_vb(self):
        raise InvalidInputError(
            f"learn: 'vb' is not available for {type(self).__name__}; use 'em', 'map', 'vt' "
            "or 'kvt'")

    def vb_init(self, params: dict, n_virtual: float) -> dict:
        """Build variational posterior hyper-parameters centred on ``params``.

        As if each state had been estimated from ``n_virtual`` observations.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"emissionprob"``, ``"means"``, ``"covars"``, ...).
        n_virtual : float
            The number of pseudo-observations per state.

        Returns
        -------
        dict
            The variational posterior's hyper-parameters.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family has no variational treatment (the default).
        """
        self._no_vb()

    def vb_update(self, q: dict, stats: dict, which: str) -> dict:
        """Update the variational posterior: the prior's hyper-parameters plus the statistics.

        Blocks whose letter is not in ``which`` keep ``q``.

        Parameters
        ----------
        q : dict
            The variational posterior's hyper-parameters (from :meth:`vb_init` /
            :meth:`vb_update`).
        stats : dict
            Sufficient statistics from :meth:`statistics` (merged over parts of the data by
            :meth:`merge_statistics`).
        which : str
            The hmmlearn letters of the parameters to update; the others are kept.

        Returns
        -------
        dict
            The variational posterior's hyper-parameters.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family has no variational treatment (the default).
        """
        self._no_vb()

    def vb_expected(self, q: dict) -> dict:
        r"""Return the parameters the E-step uses under the variational posterior.

        ``table(vb_expected(q), X)`` must give :math:`\exp E_q[\log p(x_t \mid z_t = k)]`.

        Parameters
        ----------
        q : dict
            The variational posterior's hyper-parameters (from :meth:`vb_init` /
            :meth:`vb_update`).

        Returns
        -------
        dict
            Parameters (possibly with extra keys such as ``log_offset``) that
            :meth:`log_likelihood` reads.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family has no variational treatment (the default).
        """
        self._no_vb()

    def vb_kl(self, q: dict) -> float:
        r"""Compute the KL divergence of the variational posterior from the prior.

        Parameters
        ----------
        q : dict
            The variational posterior's hyper-parameters (from :meth:`vb_init` /
            :meth:`vb_update`).

        Returns
        -------
        float
            :math:`\mathrm{KL}(q \,\|\, p)`, summed over states.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family has no variational treatment (the default).
        """
        self._no_vb()

    def vb_mean(self, q: dict) -> dict:
        """Return the point estimate reported as the learned parameters: the posterior mean.

        Parameters
        ----------
        q : dict
            The variational posterior's hyper-parameters (from :meth:`vb_init` /
            :meth:`vb_update`).

        Returns
        -------
        dict of str to ndarray
            The parameters, keyed as ``params``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family has no variational treatment (the default).
        """
        self._no_vb()

    # -- Gibbs sampling: a draw from the conjugate posterior ------------------------------------
    def sample_posterior(self, params: dict, stats: dict, which: str,
                         rng: np.random.Generator) -> dict:
        """Draw the parameters from their conjugate posterior given hard statistics.

        ``learn="gibbs"`` (:mod:`hiddenstate.learn.gibbs`) calls it with the statistics of
        one draw of the hidden states (:meth:`statistics_at` of one-hot posteriors); the
        parameters whose letter is not in ``which`` keep their value. A family without a
        conjugate prior keeps this default, which refuses.

        Parameters
        ----------
        params : dict of str to ndarray
            The current parameters (those not learned are returned as they are).
        stats : dict
            The statistics of the drawn states.
        which : str
            The hmmlearn letters of the parameters to draw.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        dict of str to ndarray
            The drawn parameters, keyed as ``params``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family has no conjugate posterior (the default).
        """
        raise InvalidInputError(
            f"learn: 'gibbs' draws every learned parameter block from its conjugate "
            f"posterior, and {type(self).__name__} has none; use 'em', 'map', 'vb' or 'vt'")

    def state_axes(self) -> dict:
        """Return the axis of each parameter array that indexes the states.

        Gibbs sampling relabels exchangeable states through it
        (:func:`hiddenstate.learn.gibbs.relabel_draws`). The default: axis 0 of every
        parameter.

        Returns
        -------
        dict of str to int or None
            Parameter key -> its state axis (None: shared by every state).
        """
        return {key: 0 for key in self.letters.values()}

    def sample_missing(self, params: dict, X: np.ndarray, states: np.ndarray,
                       rng: np.random.Generator) -> np.ndarray:
        """Fill the missing entries of ``X`` with draws given the hidden states.

        Gibbs sampling's data augmentation: a family whose statistics leave missing entries
        out exactly (categorical, Poisson: the features are independent given the state)
        keeps this default, which returns ``X``.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters.
        X : ndarray
            The observations (missing entries marked as :meth:`validate_X` marks them).
        states : ndarray of int of shape (n_samples,)
            The drawn hidden state of every row.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        ndarray
            ``X``, or a copy with its missing entries drawn.
        """
        return X

    @abstractmethod
    def initialize(self, X: np.ndarray, rng: np.random.Generator) -> dict:
        """Draw data-driven random initial parameters for every key.

        Parameters
        ----------
        X : ndarray
            Observations as :meth:`validate_X` returns them (rows ``(N, D)``; symbols
            ``(N,)`` for categorical emissions).
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        dict of str to ndarray
            The parameters, keyed as ``params``.
        """

    @abstractmethod
    def check_params(self, params: dict) -> dict:
        """Check parameters a user set by hand (shapes, ranges).

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"emissionprob"``, ``"means"``, ``"covars"``, ...).

        Returns
        -------
        dict of str to ndarray
            The parameters as float64 arrays.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a parameter has the wrong shape or a value out of range (the message names
            the attribute, e.g. ``means_``).
        """

    @abstractmethod
    def sample(self, params: dict, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Draw one observation per entry of ``states``.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"emissionprob"``, ``"means"``, ``"covars"``, ...).
        states : ndarray of int, shape (n,)
            The hidden state of each observation to draw.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        ndarray of shape (n, ...)
            The observations, one row per state.
        """

    # -- fixed entries (HMM(fixed=...); see :mod:`hiddenstate.families.fixed`) -------------------
    #: the fixed entries by parameter key (NaN: free), set by :meth:`fix`; empty: none
    fixed: dict = {}
    #: the keys whose fixed entries :meth:`fix` accepts (categorical rows: renormalised)
    fixable: tuple[str, ...] = ()

    def fix(self, fixed: dict) -> None:
        """Fix entries of the parameters: every mode keeps them and learns the rest.

        Parameters
        ----------
        fixed : dict of str to array-like
            Parameter key -> an array of the parameter's shape, NaN for the free entries.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a key cannot be fixed in this family or an array does not fit (the message
            names ``fixed[key]``).
        """
        bad = sorted(set(fixed) - set(self.fixable))
        if bad:
            can = ", ".join(repr(k) for k in self.fixable) or "nothing"
            raise InvalidInputError(
                f"fixed: {bad[0]!r} cannot be fixed in {type(self).__name__} (it fixes "
                f"{can}); fix the parameters by their names without the trailing underscore")
        self.fixed = {key: arr for key, value in fixed.items()
                      if (arr := self.check_fixed(key, value)) is not None}

    def check_fixed(self, key: str, value) -> np.ndarray | None:
        """Check the fixed entries of the parameter ``key``.

        Parameters
        ----------
        key : str
            A key of :attr:`fixable`.
        value : array-like
            The fixed values (NaN: free).

        Returns
        -------
        ndarray or None
            The fixed values as float64; None when nothing is fixed.
        """
        raise NotImplementedError

    def impose_fixed(self, params: dict) -> dict:
        """Return parameters that honour :attr:`fixed` (a starting point, for example).

        The fixed entries set; the free entries of categorical rows scaled to the mass
        left (:func:`~hiddenstate.families.fixed.impose_rows`).

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters.

        Returns
        -------
        dict of str to ndarray
            The parameters (new arrays for the keys with fixed entries).
        """
        from .fixed import impose, impose_rows

        out = dict(params)
        for key, value in self.fixed.items():
            how = impose_rows if key == "emissionprob" else impose
            out[key] = how(np.asarray(params[key], dtype=np.float64), value)
        return out

    # -- the order of the states -------------------------------------------------------------
    def state_axis(self, key: str, value: np.ndarray) -> int | None:
        """Return the axis of the states of a parameter or variational posterior array.

        Parameters
        ----------
        key : str
            Its key (``"means"``, ``"covars"``, a VB posterior key such as ``"beta"``).
        value : ndarray
            The array.

        Returns
        -------
        int or None
            The axis (0 for every family's per-state arrays); None for an array shared by
            every state.
        """
        return 0

    def permute_states(self, values: dict, perm: np.ndarray) -> dict:
        """Reorder the states of emission parameters (or their VB posteriors).

        State ``j`` of the result is state ``perm[j]`` of ``values``.

        Parameters
        ----------
        values : dict of str to ndarray
            Parameters or variational posterior hyper-parameters, by key.
        perm : ndarray of int of shape (n_states,)
            A permutation of the states.

        Returns
        -------
        dict of str to ndarray
            The reordered arrays (shared arrays as they are).

        Examples
        --------
        >>> import numpy as np
        >>> from hiddenstate.families import PoissonEmissions
        >>> PoissonEmissions(2, 1).permute_states({"lambdas": np.array([[1.0], [5.0]])},
        ...                                       np.array([1, 0]))
        {'lambdas': array([[5.],
               [1.]])}
        """
        out = {}
        for key, value in values.items():
            value = np.asarray(value)
            axis = self.state_axis(key, value)
            out[key] = value if axis is None else np.take(value, perm, axis=axis)
        return out

    def n_free_parameters(self) -> int:
        """Return the number of free parameters of the emissions, for AIC and BIC.

        Returns
        -------
        int
            The number of free parameters.
        """
        raise NotImplementedError

    # -- what the HMM estimator asks of a family (defaults for an ordinary family) ------------
    #: the emission table has one row per symbol (:meth:`EmissionTable.from_symbols
    #: <hiddenstate.inference.EmissionTable.from_symbols>`), not one per observation
    table_by_symbol: bool = False

    @property
    def parameter_columns(self) -> int:
        """The columns of the emission parameter per state, as stored.

        The memory checks count ``n_states x parameter_columns`` numbers.
        """
        return self.n_features

    def table_build_copies(self) -> int:
        """Return how many ``(N, K)`` arrays are alive at once while :meth:`table` builds.

        Measured; the memory checks count them.

        Returns
        -------
        int
            The number of ``(N, K)`` arrays (4 by default).
        """
        return 4

    def learned_part(self) -> tuple[EmissionFamily, int]:
        """Return the family of the learned states and the number of fixed states before them.

        The fixed states are the source states of :class:`~.blackbox.BlackBoxEmissions`.

        Returns
        -------
        family : EmissionFamily
            The family of the states whose emissions are learned; ``self`` for an
            ordinary family.
        n_fixed : int
            The number of fixed states before them; 0 for an ordinary family.
        """
        return self, 0

    def split(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Split rows into the fixed states' log-likelihood columns and the learned observations.

        Parameters
        ----------
        X : ndarray
            Observations as :meth:`validate_X` returns them (rows ``(N, D)``; symbols
            ``(N,)`` for categorical emissions).

        Returns
        -------
        log_f : ndarray of shape (n_samples, n_fixed)
            The fixed states' log-likelihood columns that travel with the data; ``(N, 0)``
            for an ordinary family.
        X : ndarray
            What the learned family reads; ``X`` itself for an ordinary family.
        """
        return np.empty((len(X), 0)), X

    def autocorrelation_data(self, X: np.ndarray) -> tuple[np.ndarray, bool]:
        """Return the observations whose autocorrelation measures how persistent the chain is.

        See :func:`hiddenstate.models.hmm.init.persistence`.

        Parameters
        ----------
        X : ndarray
            Observations as :meth:`validate_X` returns them (rows ``(N, D)``; symbols
            ``(N,)`` for categorical emissions).

        Returns
        -------
        data : ndarray
            The observations to correlate.
        symbols : bool
            Whether they are symbols (compared by equality) rather than numbers
            (standardised per column).
        """
        return X, False

    def labelled_start(self, params: dict, X: np.ndarray, states: np.ndarray,
                       init_params: str) -> dict:
        r"""Move the initial parameters towards the observations of labelled steps.

        For each state, the mean of its labelled observations with the initial value as
        one more pseudo-observation, :math:`(\sum_{t: s_t = k} v_t + p_k)/(n_k + 1)` (see
        :func:`labelled_mean`), for the parameters whose letter is in ``init_params`` and
        that are such a mean (categorical rows, Gaussian means, Poisson rates); the others,
        and families without such a parameter, are kept. Without it a few labels cannot
        pull EM out of the local optimum a random start falls into.

        Parameters
        ----------
        params : dict of str to ndarray
            The initial parameters.
        X : ndarray
            The observations of the labelled steps.
        states : ndarray of int
            Their labels (all >= 0).
        init_params : str
            The hmmlearn letters of the parameters being initialised.

        Returns
        -------
        dict of str to ndarray
            The parameters, keyed as ``params``.
        """
        return params

    # -- what online EM asks of a family of numbers ------------------------------------------
    def statistic_vector(self) -> tuple[str, int | None] | None:
        """Tell how online EM accumulates this family's statistics, one vector per state.

        See :mod:`hiddenstate.learn.online.online_em`.

        Returns
        -------
        tuple of (str, int or None) or None
            ``(kind, n_mix)`` with ``kind`` ``"counts"`` (1, x), ``"diag"`` (1, x - a,
            (x - a)**2) or ``"full"`` (1, x - a, vec((x - a)(x - a)^T)) about a reference
            point a, and ``n_mix`` the number of mixture components, each with its own
            vector (None: no mixture). None when online EM has no such form for the family
            (symbols take the lazy path, see :attr:`alphabets`).
        """
        return None

    def streaming_mstep_family(self, params: dict, emissionprob_prior) -> EmissionFamily:
        """Return the family whose :meth:`mstep` online EM runs on its running statistics.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"emissionprob"``, ``"means"``, ``"covars"``, ...).
        emissionprob_prior : callable
            ``emissionprob_prior(emissionprob) -> alpha``, the learner's Dirichlet prior
            for categorical rows.

        Returns
        -------
        EmissionFamily
            This family (its own conjugate prior), or for categorical emission rows a copy
            whose Dirichlet prior is ``emissionprob_prior(params["emissionprob"])``
            (alpha > 1: a category not seen before the first M-step stays possible).
        """
        return self

    # -- families of symbols: what the streaming learners ask ---------------------------------
    #: the alphabet of each categorical feature of a family of symbols, whose emission rows
    #: the streaming learners update per symbol; None for a family of other observations
    alphabets: tuple[int, ...] | None = None
    #: the emission rows of a family of symbols have a leading axis of features
    #: ``(F, K, W)`` (several features), which the learners' per-feature state keeps too
    feature_axis: bool = False

    def _not_symbols(self):
        raise InvalidInputError(
            f"emission: {type(self).__name__} does not emit symbols; the per-symbol "
            "streaming learners take categorical emissions")

    def feature_rows(self, emissionprob: np.ndarray) -> list[np.ndarray]:
        """Split the emission parameter of a family of symbols into each feature's rows.

        Parameters
        ----------
        emissionprob : ndarray
            The emission parameter.

        Returns
        -------
        list of ndarray
            Each feature's emission rows ``(K, W_f)``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family does not emit symbols.
        """
        self._not_symbols()

    def from_feature_rows(self, rows: list[np.ndarray]) -> np.ndarray:
        """Build the emission parameter from each feature's rows: the inverse of feature_rows.

        Parameters
        ----------
        rows : list of ndarray
            Each feature's emission rows ``(K, W_f)``.

        Returns
        -------
        ndarray
            The emission parameter (a new array).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family does not emit symbols.
        """
        self._not_symbols()

    def validate_symbols(self, X) -> np.ndarray:
        """Check symbols against the family's alphabets.

        Parameters
        ----------
        X : array-like
            The symbols (``-1``: missing).

        Returns
        -------
        ndarray of int64
            The symbols in the layout :meth:`log_likelihood` reads.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a symbol is outside the alphabets, or the family does not emit symbols.
        """
        self._not_symbols()

    def stream_symbols(self, X: np.ndarray) -> np.ndarray:
        """Lay each row's symbols out as columns of the features' alphabets side by side.

        What online EM's lazy categorical kernel reads.

        Parameters
        ----------
        X : ndarray
            The symbols, one column per feature (``-1``: missing).

        Returns
        -------
        ndarray of shape (n_samples, n_features), dtype int64
            Each row's symbol of every feature as a column of the features' alphabets laid
            side by side (feature ``f`` starts at ``sum(alphabets[:f])``), ``-1`` where
            missing.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a symbol is outside the alphabets, or the family does not emit symbols.
        """
        self._not_symbols()


def labelled_mean(p0: np.ndarray, V: np.ndarray, states: np.ndarray) -> np.ndarray:
    r""":math:`(\sum_{t: s_t = k} v_t + p_k)/(n_k + 1)` per state ``k`` and column, over the
    rows of ``V`` (one per labelled step, ``states`` their labels; a NaN entry counts for
    nothing): the initial value ``p0`` (K, C) moved toward the mean of the labelled values
    (:meth:`EmissionFamily.labelled_start`)."""
    seen = ~np.isnan(V)
    S, n = np.zeros(p0.shape), np.zeros(p0.shape)
    np.add.at(S, states, np.where(seen, V, 0.0))
    np.add.at(n, states, seen.astype(np.float64))
    return (S + p0) / (n + 1.0)


def fill_missing(X: np.ndarray) -> np.ndarray:
    """``X`` with each missing entry (NaN) replaced by its column's mean over the observed
    entries, for initialisations (k-means) that need complete rows; ``X`` itself when
    nothing is missing. A column with no observed entry is an error."""
    miss = np.isnan(X)
    if not miss.any():
        return X
    empty = miss.all(axis=0)
    if empty.any():
        raise InvalidInputError(
            f"X: column {int(np.flatnonzero(empty)[0])} has no observed value (all NaN); "
            "drop it or pass initial parameters with init_params")
    return np.where(miss, np.nanmean(X, axis=0), X)


def reference_point(X: np.ndarray) -> np.ndarray:
    """A point amid the rows of ``X`` (``(D,)``): the column medians of evenly spaced rows
    (fewer than 2048). A data value itself (or the mean of two), so that the reference of
    ``X + c`` is that of ``X`` plus ``c`` up to rounding; robust to outlying rows; cheap (the
    median of every row of 10^5 x 5 data costs 8 ms)."""
    return np.median(X[::max(1, len(X) // 1024)], axis=0)


def kmeans(X: np.ndarray, n_clusters: int, rng: np.random.Generator):
    """k-means (scikit-learn, one k-means++ start seeded from ``rng``) on ``X`` taken
    relative to :func:`reference_point`, so that the clustering of ``X + c`` is that of
    ``X`` up to the rounding of ``X + c`` itself. Returns ``(centres, labels)`` in the frame
    of ``X``. Fewer distinct points than clusters is allowed (some clusters repeat a
    point)."""
    from sklearn.cluster import KMeans

    ref = reference_point(X)
    with np.errstate(over="ignore", invalid="ignore"):
        centred = X - ref
    if not np.all(np.isfinite(centred)):
        raise InvalidInputError(
            "X: the values are too far apart for float64 (their differences overflow); "
            "rescale the data, e.g. divide it by its largest absolute value")
    km = KMeans(n_clusters=n_clusters, n_init=1, random_state=int(rng.integers(2**31 - 1)))
    with warnings.catch_warnings():  # fewer distinct points than clusters is fine here
        warnings.simplefilter("ignore")
        km.fit(centred)
    return km.cluster_centers_ + ref, km.labels_
