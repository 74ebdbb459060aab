r"""``learn="gibbs"`` for :class:`~hiddenstate.HMM` (and PROPS): the fit, the names of the
draws and the posterior over the number of states.

The sampler is :func:`hiddenstate.learn.gibbs.sample` on the model's Problem
(:class:`~.problem.HMMProblem`, whose ``sample_counts`` draws the paths by
forward-filtering backward-sampling); every chain starts where a restart of the batch modes
would (:func:`~.init.initial_params`). ``posterior_samples_`` holds ``startprob_``,
``transmat_`` and the emission parameters by their attribute names (``covars_`` in the
stored form of ``covariance_type``); a sticky HDP-HMM adds ``hdp_beta`` (the global state
weights) and the concentrations ``hdp_alpha``, ``hdp_kappa``, ``hdp_gamma``.
"""

from __future__ import annotations

import numpy as np

from ...errors import InvalidInputError
from ...families.hdp import HDP_OPTIONS
from ...learn.gibbs_fit import PosteriorSampling, clear_gibbs, fit_gibbs, gibbs_options
from .hdp import STICKY_HDP, check_sticky, is_sticky

#: the entries of ``posterior_samples_`` that are the sticky HDP's, not attributes
HDP_NAMES = {"beta": "hdp_beta", "alpha": "hdp_alpha", "kappa": "hdp_kappa",
             "gamma": "hdp_gamma"}


def gibbs_extra_options(model) -> dict:
    """The model's own ``learner_options`` under ``learn="gibbs"`` (the sticky HDP's; an
    HSMM's HDP)."""
    return model._gibbs_extra_options()


def check_gibbs_hyperparameters(model) -> None:
    """The hyper-parameters ``learn="gibbs"`` adds or restricts: ``learner_options`` (the
    sampler's, and the sticky HDP's), ``n_init`` (chains replace restarts) and
    ``transmat_prior``."""
    if model.n_init != 1:
        raise InvalidInputError(
            "n_init: learn='gibbs' runs chains, not restarts; use n_init=1 and "
            "learner_options={'n_chains': ...}")
    if isinstance(model.transmat_prior, str):
        model._check_gibbs_transmat_prior()
    gibbs_options(model, gibbs_extra_options(model))


def fit_hmm_gibbs(model, problem, start, n_features, rng, callback=None):
    """Sample the posterior of ``model`` on ``problem`` and set its fitted attributes to the
    posterior mean (see :mod:`hiddenstate.learn.gibbs_fit`).

    Also the :class:`~hiddenstate.HSMM`'s: its transitions between segments are stored as
    their allowed entries (``model._gibbs_transitions()``, the off-diagonal ones) and its
    block ``durations`` adds the duration parameters by their attribute names. A
    transition block whose parameters are a dict (the sticky HDP-HMM's, the HDP-HSMM's)
    adds its global weights and concentrations (:data:`HDP_NAMES`), and its Problem gives
    its starting dict (``start_params``) and its matrix (``dense_transmat``).
    ``transmat_`` is the posterior mean of the matrices of the draws."""
    transitions = model._gibbs_transitions()
    hdp = callable(getattr(problem, "start_params", None))
    own = getattr(problem, "dense_transmat", None)

    def dense(transmat):
        if own is not None:
            return own(transmat)
        if isinstance(transmat, dict):
            transmat = transmat["transmat"]
        return transmat if transitions is None else transitions.dense(transmat)

    def to_attrs(draw):
        out = {"startprob_": draw["startprob"], "transmat_": dense(draw["transmat"])}
        for block in ("emission", "durations"):
            for key, value in draw.get(block, {}).items():
                out[key + "_"] = value
        if hdp:
            out.update({HDP_NAMES[k]: np.asarray(draw["transmat"][k], dtype=np.float64)
                        for k in HDP_NAMES})
        return out

    def chain_start(c):
        params = start(c)
        return problem.start_params(params) if hdp else params

    clear_gibbs(model)
    result = fit_gibbs(model, problem, chain_start, model.learned_letters(), rng, to_attrs,
                       callback, gibbs_extra_options(model))
    model.n_features_ = n_features
    mean = result.mean
    model.assign_params(mean["startprob"],
                        model.posterior_samples_["transmat_"].mean(axis=(0, 1)),
                        mean["emission"])
    for key, value in mean.get("durations", {}).items():
        setattr(model, key + "_", value)
    model._set_posterior_(None)
    return model


class HMMGibbs(PosteriorSampling):
    """What a Gibbs fit adds to :class:`~hiddenstate.HMM` (a base of it): the draws'
    assignment and the posterior over the number of states in use."""

    #: the priors ``transmat_prior`` may name (under ``learn="gibbs"``)
    named_transmat_priors = (STICKY_HDP,)

    def _gibbs_extra_options(self) -> dict:
        """The model's own ``learner_options`` under ``learn="gibbs"``: the sticky HDP's."""
        return dict(HDP_OPTIONS) if is_sticky(self) else {}

    def _check_gibbs_transmat_prior(self) -> None:
        """A ``transmat_prior`` given by name under ``learn="gibbs"``: ``"sticky-hdp"``."""
        if self.transmat_prior != STICKY_HDP:
            raise InvalidInputError(
                f"transmat_prior: {self.transmat_prior!r} is not a prior; pass a Dirichlet "
                f"concentration or {STICKY_HDP!r}")
        check_sticky(self)

    def _gibbs_transitions(self):
        """The allowed transitions the transition block stores (None: the dense matrix)."""
        return self._transitions()

    def _gibbs_assign(self, draw: dict) -> None:
        """Set the parameters to one draw of ``posterior_samples_`` (by name)."""
        emission = {key: draw[key + "_"] for key in self._emission_keys().values()}
        self.assign_params(draw["startprob_"], draw["transmat_"], emission)

    def n_states_posterior(self) -> np.ndarray:
        """Return the posterior distribution of the number of states in use.

        After a sticky HDP-HMM fit (``learn="gibbs"``, ``transmat_prior="sticky-hdp"``; an
        HDP-HSMM: :class:`~hiddenstate.HSMM` with ``transmat_prior="hdp"``): the share of
        the kept draws whose hidden paths use ``k`` distinct states (each holding at least
        ``min_share`` of the observations).

        Returns
        -------
        ndarray of shape (n_states + 1,)
            ``p[k]``, the posterior probability of ``k`` states in use.

        Raises
        ------
        NotFittedError
            Unless the model was fitted as a sticky HDP-HMM.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> rng = np.random.default_rng(0)
        >>> X = np.concatenate([rng.normal(m, 0.3, 100) for m in (0, 3, 0, 3)])[:, None]
        >>> model = hs.HMM(n_states=6, emission="gaussian", learn="gibbs",
        ...                transmat_prior="sticky-hdp", random_state=0,
        ...                learner_options={"n_samples": 200, "burn_in": 100,
        ...                                 "n_chains": 2, "check_convergence": False})
        >>> int(np.argmax(model.fit(X).n_states_posterior()))
        2
        """
        stats = self.__dict__.get("sample_stats_") or {}
        used = stats.get("n_states_used")
        if used is None:
            from ...errors import NotFittedError

            raise NotFittedError(
                f"This {type(self).__name__} has no draws of the number of states; fit it "
                "with learn='gibbs' and transmat_prior='sticky-hdp' (an HSMM: 'hdp')")
        counts = np.bincount(np.asarray(used, dtype=np.int64).ravel(),
                             minlength=self.n_states + 1)
        return counts / counts.sum()
