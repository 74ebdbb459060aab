"""Saving and restoring an :class:`~.estimator.HMM`: the learned arrays and scalars it writes,
how it sets them back, and the checks a restored model passes. :class:`HMMStorage` is a base
of :class:`~.estimator.HMM`; its ``check_learner_state`` is a hook listed in :mod:`.estimator`."""

from __future__ import annotations

import numpy as np

from ...errors import InvalidInputError
from ...learn.online import ONLINE_MODES, StateRecord
from .. import _learned
from .parameters import POSTERIOR_SUFFIX

#: the key prefix of a streaming learner's state in a saved model
_STATE_PREFIX = "learner_state_."


class HMMStorage:
    """``save`` and what :func:`hiddenstate.load` calls on :class:`~.estimator.HMM`."""

    # -- persistence ----------------------------------------------------------------------------
    def learned_arrays(self) -> dict[str, np.ndarray]:
        """**Entry point.** Return the learned arrays by attribute name (what :meth:`save` writes).

        Returns
        -------
        dict of str to ndarray
            The parameters, VB posteriors and the array entries of a streaming learner's state
            (``learner_state_.<key>``).

        Raises
        ------
        NotFittedError
            Before ``fit``.
        """
        self.check_is_fitted()
        out = {"startprob_": self.startprob_, "transmat_": self.transmat_}
        for key in self._emission_keys().values():
            attr = "_covars_" if key == "covars" else key + "_"
            out[attr] = getattr(self, attr)
        for attr in self._posterior_attrs():
            out[attr] = getattr(self, attr)
        for key, value in getattr(self, "learner_state_", {}).items():
            if isinstance(value, np.ndarray):
                out[_STATE_PREFIX + key] = value
        return out

    def learned_scalars(self) -> dict:
        """**Entry point.** Return the scalars of a streaming learner's state (saved as JSON).

        Returns
        -------
        dict
            ``learner_state_.<key>`` -> value; empty for a batch mode.
        """
        return {_STATE_PREFIX + k: v for k, v in getattr(self, "learner_state_", {}).items()
                if not isinstance(v, np.ndarray)}

    def set_learned(self, arrays: dict, scalars: dict) -> None:
        """**Entry point.** Restore what :meth:`learned_arrays`, :meth:`learned_scalars` returned.

        Parameters
        ----------
        arrays : dict of str to ndarray
            The arrays, by attribute name.
        scalars : dict
            The scalar entries of the learner's state.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a parameter is missing, or a name is not a learned attribute.
        """
        missing = sorted(n for n in self.learned_attribute_names(arrays)
                         if n not in arrays and not n.endswith(POSTERIOR_SUFFIX))
        if missing:
            raise InvalidInputError(f"{missing[0]}: missing from the saved arrays")
        state = {}
        for key, value in {**arrays, **scalars}.items():
            if key.startswith(_STATE_PREFIX):
                state[key[len(_STATE_PREFIX):]] = value
            elif key in self.learned_attribute_names(arrays):
                setattr(self, key, value)
            else:
                raise InvalidInputError(f"{key}: not a learned attribute of {type(self).__name__}")
        if state:
            self.learner_state_ = state
        _learned.mark_own(self, self.learned_attribute_names(arrays))  # a fit's values

    def learned_attribute_names(self, arrays: dict) -> set[str]:
        """**Entry point.** Return the names a saved model may set: parameters and VB posteriors.

        Parameters
        ----------
        arrays : dict of str to ndarray
            The saved arrays (their VB posterior names are accepted).

        Returns
        -------
        set of str
            The attribute names.
        """
        names = {"startprob_", "transmat_"}
        names |= {"_covars_" if k == "covars" else k + "_" for k in self._emission_keys().values()}
        names |= {a for a in arrays if a.endswith(POSTERIOR_SUFFIX) and a.isidentifier()}
        return names

    def _check_loaded(self) -> None:
        """Validate what a saved model (or a hand-set learner state) brings besides the
        parameters: :meth:`_check_learned`, finite VB posteriors and the streaming
        learner's state (recorded, so that ``partial_fit`` does not check it again)."""
        self._check_learned()
        for attr in self._posterior_attrs():
            value = getattr(self, attr)
            if not (isinstance(value, np.ndarray) and value.dtype == np.float64
                    and np.all(np.isfinite(value))):
                raise InvalidInputError(f"{attr}: VB posterior parameters must be finite floats")
        if hasattr(self, "learner_state_"):
            self.check_learner_state(self.learner_state_)
            self._checked_state = StateRecord(self.learner_state_)

    def check_learner_state(self, state) -> None:
        """**Hook.** Validate a streaming learner's state against the learner and the parameters.

        With its options (see the learners' ``check_state``); called when a saved model
        or a hand-set ``learner_state_`` is first used.

        Parameters
        ----------
        state : dict
            The learner's state.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``learn`` is not a streaming learner, or the state does not fit it.
        """
        if self.learn not in ONLINE_MODES:
            raise InvalidInputError(
                f"learner_state_: a streaming learner's state, but learn={self.learn!r} is "
                "not a streaming learner; delete learner_state_ or restore learn")
        theta = {"startprob": self.startprob_, "transmat": self.transmat_,
                 "emission": self.emission_params()}
        self.make_learner().check_state(state, theta, self.emission_family(self.n_features_),
                                        "learner_state_.")

    def save(self, path) -> None:
        """Save the model to the directory ``path``.

        ``model.json`` + ``arrays.<token>.npz`` (no pickle), written atomically: ``path`` then
        holds the previous model or this one (see :mod:`hiddenstate._bundle`).
        :func:`hiddenstate.load` reads it back.

        Parameters
        ----------
        path : str or os.PathLike
            The directory.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> model.save("hmm-model")
        >>> hs.load("hmm-model").score([0, 1, 2]) == model.score([0, 1, 2])
        True
        """
        from .._saving import save

        save(self, path)
