r"""Aligning the hidden states of a fitted HMM with a reference model or with labels (label
switching: the states of two fits are the same only up to a permutation).

:func:`align_states` finds the permutation that maximises the expected agreement of the
states on data, by the Hungarian algorithm (:func:`scipy.optimize.linear_sum_assignment`)
on the cost

.. math::
    C_{ij} = -\sum_t P_\text{model}(z_t = i \mid X)\, Q_t(j),

with :math:`Q_t(j)` the reference model's posterior :math:`P_\text{ref}(z_t = j \mid X)`
or, for labels, :math:`[\ell_t = j]`: :math:`-C_{ij}` is the expected number of steps at
which the model is in state :math:`i` while the reference is in state (or the label is)
:math:`j`. ``model.permute_states(perm)`` (:meth:`hiddenstate.HMM.permute_states`) then
renumbers every parameter of the model. Posteriors rather than decoded paths: the cost
counts how sure each assignment is, and a state that the decoded path never visits still
gets a place.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from ._validation import check_positive_int, check_states
from .errors import InvalidInputError


def align_states(model, reference=None, *, labels=None, X=None, lengths=None,
                 n_samples: int = 1000, random_state=0) -> np.ndarray:
    r"""Find the permutation of a fitted model's states that best matches a reference.

    The Hungarian algorithm on the expected agreement of the states (see
    :mod:`hiddenstate.align`). Pass ``model.permute_states(perm)`` the result.

    Parameters
    ----------
    model : hiddenstate.HMM
        The fitted model whose states are to be renumbered.
    reference : hiddenstate.HMM or None, default=None
        A model of the same observations with as many states (a teacher, another fit);
        None: align with ``labels``.
    labels : array-like of int of shape (n_samples,) or None, default=None
        The reference state of each observation of ``X`` (``0 .. n_states - 1``; ``-1``:
        unknown, left out).
    X : array-like or None, default=None
        The observations the states are compared on (needed with ``labels``); None with a
        reference model: ``n_samples`` observations drawn from the reference.
    lengths : array-like of int or None, default=None
        The length of each sequence of ``X``; None: one sequence.
    n_samples : int, default=1000
        The observations drawn from ``reference`` when ``X`` is None.
    random_state : int, numpy.random.Generator or None, default=0
        The seed of that draw.

    Returns
    -------
    ndarray of int of shape (n_states,)
        ``perm``: the model's state ``perm[j]`` corresponds to reference state (label)
        ``j``.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If neither or both of ``reference`` and ``labels`` are given, the models differ in
        their number of states, ``labels`` come without ``X`` or do not fit it.
    NotFittedError
        If a model has no parameters.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> teacher = hs.HMM(2, n_features=3)
    >>> teacher.startprob_ = [0.6, 0.4]
    >>> teacher.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
    >>> teacher.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
    >>> X, states = teacher.sample(500, random_state=1)
    >>> model = hs.HMM(2, n_iter=100, random_state=3).fit(X)
    >>> perm = hs.align_states(model, labels=states, X=X)
    >>> model.permute_states(perm).emissionprob_.round(1)
    array([[0.8, 0.2, 0. ],
           [0.1, 0.4, 0.6]])
    >>> bool(np.all(hs.align_states(model, teacher) == [0, 1]))
    True
    """
    if (reference is None) == (labels is None):
        raise InvalidInputError(
            "reference: pass a reference model or labels= (the state of each observation "
            "of X), not both and not neither")
    K = check_positive_int(model.n_states, "model.n_states")
    if reference is not None:
        if reference.n_states != K:
            raise InvalidInputError(
                f"reference: has {reference.n_states} states, the model {K}; align models "
                "with as many states")
        if X is None:
            check_positive_int(n_samples, "n_samples")
            X, _ = reference.sample(n_samples, random_state=random_state)
            lengths = None
        target = reference.predict_proba(X, lengths)
    else:
        if X is None:
            raise InvalidInputError(
                "X: labels give the state of each observation of X; pass X (and lengths)")
        n = len(model.validate_data(X, lengths, model.n_features_)[0])
        states = check_states(labels, n, K, "labels")
        target = np.zeros((n, K))
        seen = states >= 0
        target[np.flatnonzero(seen), states[seen]] = 1.0
    post = model.predict_proba(X, lengths)
    cost = -(post.T @ target)
    rows, cols = linear_sum_assignment(cost)
    perm = np.empty(K, dtype=np.int64)
    perm[cols] = rows
    return perm
