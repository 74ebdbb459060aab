"""The learned parameters of an HMM as attributes (``startprob_``, ``transmat_``, the
emission family's, the VB posteriors): their storage, validation at first use after a
change (:mod:`hiddenstate.models._learned`), and ``n_features_``. :class:`HMMParameters`
is a base of :class:`~.estimator.HMM`; the hooks among its methods (``check_is_fitted``,
``validation_key``) are listed in :mod:`.estimator`."""

from __future__ import annotations

import numpy as np

from ..._validation import check_choice, check_positive_int, check_stochastic
from ...errors import InvalidInputError, NotFittedError
from ...families import COVARIANCE_TYPES, FAMILIES
from ...families.gaussian import full_covars
from ...families.mixed import LETTERS as MIXED_LETTERS
from ...families.mixed import check_spec, is_mixed, n_columns
from ...families.multinomial import check_n_trials
from .. import _learned
from .._learned import LearnedArray
from .chain import check_structure
from .hyperparameters import as_n_features, check_n_features
from .priors import GAUSSIAN


def mixed_n_features(model) -> tuple[int, ...] | None:
    """A mixed model's per-column number of features known without data: 1 for a
    non-categorical column, a categorical column's alphabet from ``emissionprob_`` (the
    largest for several); None when it has categorical columns and no ``emissionprob_``."""
    spec = check_spec(model.emission)
    out = [1] * n_columns(spec)
    if "categorical" in spec:
        if not _learned.has(model, "emissionprob_"):
            return None
        W = _learned.raw(model, "emissionprob_").shape[-1]
        for c in spec["categorical"]:
            out[c] = W
    return tuple(out)


#: suffix of the VB posterior hyper-parameters' attributes
POSTERIOR_SUFFIX = "_posterior_"


class HMMParameters:
    """The parameter attributes of :class:`~.estimator.HMM` and the methods that read,
    set and validate them (the class it is mixed into provides ``n_states``,
    ``emission``, the hyper-parameters and the hooks ``resolve_n_features`` and
    ``emission_family``)."""

    # Assigning one stores a float64 copy; reading one gives a read-only view; the
    # parameters are validated at their first use after any assignment (see _learned).
    startprob_ = LearnedArray()
    transmat_ = LearnedArray()
    emissionprob_ = LearnedArray()
    means_ = LearnedArray()
    _covars_ = LearnedArray("covars_")  # covars_ in the covariance type's own shape
    lambdas_ = LearnedArray()
    weights_ = LearnedArray()

    @property
    def covars_(self) -> np.ndarray:
        """The covariances as ``(n_states, n_features, n_features)`` matrices (read-only).

        hmmlearn's getter; set it in the covariance type's own shape. For ``emission="gmm"`` in
        the stored shape (hmmlearn's GMMHMM ``covars_``).
        """
        if not _learned.has(self, "_covars_"):
            raise AttributeError("covars_")
        stored = _learned.raw(self, "_covars_")
        if self.emission == "gmm":
            out = stored.view()
            out.flags.writeable = False
            return out
        K = self.n_states
        D = _learned.raw(self, "means_").shape[-1] if _learned.has(self, "means_") \
            else stored.shape[-1]
        try:
            out = full_covars(stored, self.covariance_type, K, D)
        except (ValueError, IndexError, KeyError, TypeError) as exc:
            raise InvalidInputError(
                f"covars_: shape {stored.shape} does not fit covariance_type="
                f"{self.covariance_type!r} with {K} states and {D} features ({exc})") from exc
        if out is stored:
            out = out.view()
        out.flags.writeable = False
        return out

    @covars_.setter
    def covars_(self, value) -> None:
        self._covars_ = value

    @property
    def n_features_(self) -> int:
        """The number of symbols (categorical) or features.

        Set by ``fit``; with parameters set by hand, the ``n_features`` argument, or what
        :meth:`resolve_n_features` knows, or the number of columns of ``emissionprob_``,
        ``means_`` or ``lambdas_``.
        """
        stored = self.__dict__.get("_fitted_n_features")
        if stored is not None:
            return stored
        if self.n_features is not None:
            return as_n_features(self.n_features)
        inferred = self.resolve_n_features()
        if inferred is None:
            inferred = self._inferred_n_features()
        if inferred is None:
            raise AttributeError("n_features_")
        return inferred

    @n_features_.setter
    def n_features_(self, value) -> None:
        self.__dict__["_fitted_n_features"] = value
        _learned.invalidate(self)

    def _inferred_n_features(self) -> int | None:
        """Columns of the first 2-D emission parameter (``covars_`` aside; a mixture's
        ``means_`` (K, M, D)), if any; a mixed model's per-column tuple (its categorical
        columns' alphabets from ``emissionprob_``)."""
        if is_mixed(self.emission):
            return mixed_n_features(self)
        for attr in self._emission_attrs():
            if attr not in ("_covars_", "weights_") and _learned.has(self, attr):
                arr = _learned.raw(self, attr)
                if arr.ndim == 3 and attr == "emissionprob_":  # several features
                    return (arr.shape[2],) * arr.shape[0]
                if arr.ndim == (3 if self.emission == "gmm" else 2):
                    return arr.shape[-1]
        return None

    def _emission_keys(self) -> dict[str, str]:
        """The emission family's parameters: letter -> key."""
        if is_mixed(self.emission):
            return {letter: key for kind in check_spec(self.emission)
                    for letter, key in MIXED_LETTERS[kind].items()}
        return FAMILIES[self.emission].letters

    def _emission_attrs(self) -> list[str]:
        return ["_covars_" if key == "covars" else key + "_"
                for key in self._emission_keys().values()]

    def emission_params(self) -> dict:
        """**Entry point.** Return the emission parameters by family key.

        Returns
        -------
        dict of str to ndarray
            The stored arrays (do not modify them).
        """
        return {key: _learned.raw(self, "_covars_" if key == "covars" else key + "_")
                for key in self._emission_keys().values()}

    def checked_params(self) -> tuple[np.ndarray, np.ndarray, dict]:
        """**Entry point.** Return the validated parameters.

        Validated once per change (see :func:`hiddenstate.models._learned.checked`).

        Returns
        -------
        startprob : ndarray of shape (n_states,)
            The initial distribution.
        transmat : ndarray of shape (n_states, n_states)
            The transition matrix.
        emission : dict of str to ndarray
            The emission parameters by family key. The stored arrays, which the model's
            computations read and never modify.

        Raises
        ------
        NotFittedError
            Unless every parameter is set.
        hiddenstate.errors.InvalidInputError
            If a parameter is invalid.
        """
        self.check_is_fitted()
        return (_learned.raw(self, "startprob_"), _learned.raw(self, "transmat_"),
                self.emission_params())

    def assign_params(self, startprob, transmat, emission_params: dict) -> None:
        """Set ``startprob_``, ``transmat_`` and the emission parameters at once.

        What ``fit`` and the streaming learners call with what they learned: the values
        become the model's own, so a later ``fit`` replaces them without a
        :class:`~hiddenstate.errors.ParameterOverwriteWarning` (values assigned to the
        attributes by hand get one).

        Parameters
        ----------
        startprob : array-like of shape (n_states,)
            The initial distribution.
        transmat : array-like of shape (n_states, n_states)
            The transition matrix.
        emission_params : dict of str to array-like
            The emission parameters by family key.
        """
        self.startprob_ = startprob
        self.transmat_ = transmat
        names = ["startprob_", "transmat_"]
        for key, value in emission_params.items():
            names.append("_covars_" if key == "covars" else key + "_")
            setattr(self, names[-1], value)
        _learned.mark_own(self, names)

    def check_is_fitted(self) -> None:
        """**Hook.** Check that every parameter is set, then validate them.

        The parameters are validated at their first use after a change.

        Raises
        ------
        NotFittedError
            Unless every parameter is set.
        hiddenstate.errors.InvalidInputError
            If a parameter is invalid; the message names it.
        """
        needed = ["startprob_", "transmat_"]
        if (isinstance(self.emission, str) and self.emission in FAMILIES) or is_mixed(
                self.emission):
            needed += self._emission_attrs()
        missing = [a for a in needed if not _learned.has(self, a)]
        if missing:
            name = "covars_" if missing[0] == "_covars_" else missing[0]
            if len(missing) == len(needed):
                raise NotFittedError(
                    f"This {type(self).__name__} has no learned parameters yet; call fit "
                    f"first, or set {', '.join(n.lstrip('_') for n in needed)} by hand")
            raise NotFittedError(
                f"{name}: not set; set it (or call fit) before using {type(self).__name__}")
        _learned.checked(self)

    def validation_key(self) -> tuple:
        """**Hook.** Return what the parameters are validated against.

        The number of states, the emission family and its shape arguments (checked here, as they
        are cheap); the parameters are validated again when it changes (see
        :mod:`hiddenstate.models._learned`).

        Returns
        -------
        tuple
            The key.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If one of these hyper-parameters is invalid.
        """
        K = check_positive_int(self.n_states, "n_states")
        emission = self.emission
        ct = None
        if is_mixed(emission):
            spec = check_spec(emission)
            emission = tuple(spec.items())
            if "gaussian" in spec:
                ct = check_choice(self.covariance_type, "covariance_type", COVARIANCE_TYPES)
        else:
            check_choice(self.emission, "emission", FAMILIES)
        if self.emission in GAUSSIAN:
            ct = check_choice(self.covariance_type, "covariance_type", COVARIANCE_TYPES)
        check_n_features(self.n_features, self.emission)
        if self.emission == "gmm":
            ct = (ct, check_positive_int(self.n_mix, "n_mix"))
        if self.emission == "multinomial":
            ct = check_n_trials(self.n_trials)
            ct = ct if ct is None or np.ndim(ct) == 0 else tuple(ct.tolist())
        try:
            W = self.n_features_
        except AttributeError:
            attr = next((a for a in self._emission_attrs() if a != "_covars_"), "")
            shape = _learned.raw(self, attr).shape if _learned.has(self, attr) else None
            raise InvalidInputError(
                f"{attr}: expected shape (n_states, n_features), got {shape}; or pass "
                "n_features") from None
        W = (tuple(check_positive_int(w, "n_features_") for w in W) if isinstance(W, tuple)
             else check_positive_int(W, "n_features_"))
        return K, emission, ct, W

    def _check_learned(self) -> None:
        """Validate the learned parameters against the hyper-parameters: shapes for
        ``n_states`` states and ``n_features_`` features, probabilities that are
        finite, non-negative and sum to one, the emission family's own checks (positive
        variances, symmetric positive-definite covariances, non-negative rates). Used at
        the first use of changed parameters and when loading a saved model."""
        K = check_positive_int(self.n_states, "n_states")
        check_stochastic(_learned.raw(self, "startprob_"), (K,), "startprob_")
        transmat = check_stochastic(_learned.raw(self, "transmat_"), (K, K), "transmat_")
        check_structure(transmat, self._transitions())
        self.emission_family(self.n_features_).check_params(self.emission_params())

    def permute_states(self, perm) -> HMMParameters:
        """Reorder the hidden states: state ``j`` becomes what state ``perm[j]`` was.

        Applied to every learned parameter (``startprob_``, both axes of ``transmat_``, the
        emission parameters of every family and column group) and to the variational
        posteriors (``*_posterior_``), so the model describes the same distribution:
        ``score_samples`` is unchanged (to rounding) and ``predict`` gives the new numbers
        of the same states. :func:`hiddenstate.align_states` finds ``perm``. A streaming
        learner's state (``learner_state_``) is dropped (a following ``partial_fit`` starts a
        new learner, as a first call does); ``monitor_`` is kept. Hyper-parameters that
        number the states are not changed: ``fixed`` is refused, and so is a permutation
        that moves a transition outside ``topology``/``transmat_mask``; array-valued
        priors keep their order.

        Parameters
        ----------
        perm : array-like of int of shape (n_states,)
            A permutation of ``0 .. n_states - 1``.

        Returns
        -------
        HMM
            The model itself, permuted.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``perm`` is not a permutation of the states, or moves a source state of a
            PROPS model, or the model fixes values (``fixed``) or restricts its transitions
            in a way the permutation does not keep.
        NotFittedError
            If the parameters are not set.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> model = hs.HMM(2, n_features=3)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> X = np.array([0, 0, 2, 2, 1])
        >>> before = model.predict(X)
        >>> model.permute_states([1, 0]).emissionprob_
        array([[0.1, 0.3, 0.6],
               [0.7, 0.2, 0.1]])
        >>> bool(np.all(model.predict(X) == 1 - before))
        True
        """
        startprob, transmat, emission = self.checked_params()
        K = len(startprob)
        perm = np.asarray(perm)
        if perm.shape != (K,) or perm.dtype.kind not in "iu" or not np.array_equal(
                np.sort(perm), np.arange(K)):
            raise InvalidInputError(
                f"perm: expected a permutation of 0 .. {K - 1} (one entry per state), got "
                f"{np.asarray(perm).tolist()!r:.80}")
        if getattr(self, "fixed", None):
            raise InvalidInputError(
                "fixed: its values number the states, which permute_states would move; "
                "drop them (set_params(fixed=None)) or permute them too, then permute")
        transitions = self._transitions()
        if transitions is not None:
            mask = transitions.mask()
            if not np.array_equal(mask[np.ix_(perm, perm)], mask):
                raise InvalidInputError(
                    "perm: moves allowed transitions outside topology / transmat_mask; a "
                    "structured model can only be permuted in ways that keep its structure")
        family, n_fixed = self.emission_family(self.n_features_).learned_part()
        if n_fixed and not np.array_equal(perm[:n_fixed], np.arange(n_fixed)):
            raise InvalidInputError(
                f"perm: the first {n_fixed} states are source states and must stay in place")
        inner = perm[n_fixed:] - n_fixed
        posterior = {a[:-len(POSTERIOR_SUFFIX)]: getattr(self, a)
                     for a in self._posterior_attrs()}
        self.assign_params(startprob[perm], transmat[np.ix_(perm, perm)],
                           family.permute_states(emission, inner))
        for key, value in posterior.items():
            if key == "startprob":
                new = value[perm]
            elif key == "transmat":
                dense = value if transitions is None else transitions.dense(value)
                new = dense[np.ix_(perm, perm)]
                new = new if transitions is None else transitions.gather(new)
            else:
                new = family.permute_states({key: value}, inner)[key]
            setattr(self, key + POSTERIOR_SUFFIX, np.ascontiguousarray(new))
        if hasattr(self, "learner_state_"):
            del self.learner_state_
        return self

    def _set_posterior_(self, posterior: dict | None) -> None:
        """VB posterior hyper-parameters as ``<name>_posterior_`` attributes."""
        for attr in self._posterior_attrs():
            delattr(self, attr)
        if posterior is None:
            return
        for name, value in posterior.items():
            items = value.items() if isinstance(value, dict) else [(name, value)]
            for key, arr in items:
                setattr(self, key + POSTERIOR_SUFFIX, np.asarray(arr, dtype=np.float64))

    def _posterior_attrs(self) -> list[str]:
        return sorted(a for a in vars(self) if a.endswith(POSTERIOR_SUFFIX))
