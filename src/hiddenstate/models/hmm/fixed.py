r"""Partly fixed parameters of an HMM (``HMM(fixed=...)``): their checks, the chain's fixed
blocks and the starting point that honours them.

``fixed`` maps a parameter's name (the attribute without its trailing underscore:
``"startprob"``, ``"transmat"``, ``"emissionprob"``, ``"means"``, ``"covars"``,
``"lambdas"``) to an array of the parameter's shape (``covars`` in the covariance type's
own shape) holding the fixed values, NaN for the entries that are learned. Every batch
mode keeps the fixed entries and learns the others by constrained M-steps: a categorical
row's free entries share the mass its fixed entries leave (rows stay normalised; see
:mod:`hiddenstate.families.fixed`), Gaussian covariances are estimated about the fixed
means. Variational Bayes keeps a Dirichlet posterior over each row's free part and treats
a fixed Poisson rate as known; it does not fix Gaussian means or covariances (refused).
The streaming learners do not take fixed values (refused). ``fit`` starts from values
that honour them (the fixed entries set, each row's free entries rescaled).
"""

from __future__ import annotations

import numpy as np

from ...errors import InvalidInputError
from ...families.fixed import as_fixed, check_fixed_rows, impose_rows

#: the parameters of the chain that may have fixed entries
CHAIN_KEYS = ("startprob", "transmat")


def check_fixed_argument(fixed) -> None:
    """``fixed``: None or a dict of parameter names to arrays (checked in detail against
    the model's shapes when it is used)."""
    if fixed is None:
        return
    if not isinstance(fixed, dict) or not all(isinstance(k, str) for k in fixed):
        raise InvalidInputError(
            f"fixed: expected a dict of parameter names to arrays (NaN: free), e.g. "
            f"{{'transmat': [[nan, 0.3], [nan, nan]]}}, got {type(fixed).__name__}")


def chain_fixed(model) -> dict:
    """The fixed entries of ``startprob`` and ``transmat`` (validated; None: nothing fixed),
    a transition that ``topology``/``transmat_mask`` forbids fixed at 0 only."""
    fixed = getattr(model, "fixed", None) or {}
    K = model.n_states
    out = {}
    for key, shape in (("startprob", (K,)), ("transmat", (K, K))):
        arr = None if key not in fixed else as_fixed(fixed[key], shape, key)
        out[key] = None if arr is None else check_fixed_rows(arr, key)
    transitions = model._transitions()
    if out["transmat"] is not None and transitions is not None:
        bad = ~transitions.mask() & ~np.isnan(out["transmat"]) & (out["transmat"] != 0)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise InvalidInputError(
                f"fixed['transmat']: fixes transition ({i}, {j}), which topology / "
                "transmat_mask do not allow; leave it NaN (or 0)")
    return out


def emission_fixed(model) -> dict:
    """The fixed entries of the emission parameters, as given (the family checks them)."""
    fixed = getattr(model, "fixed", None) or {}
    return {k: v for k, v in fixed.items() if k not in CHAIN_KEYS}


def impose_start(model, family, startprob, transmat, emission, values: bool):
    """The starting point with the fixed entries set and each row's free entries rescaled
    (``transmat`` as the allowed entries when ``values`` and the model is structured)."""
    fixed = chain_fixed(model)
    startprob = impose_rows(startprob, fixed["startprob"])
    if fixed["transmat"] is not None:
        transitions = model._transitions()
        if transitions is not None and values:
            transmat = transitions.gather(impose_rows(transitions.dense(transmat),
                                                      fixed["transmat"]))
        else:
            transmat = impose_rows(transmat, fixed["transmat"])
    return startprob, transmat, family.impose_fixed(emission)
