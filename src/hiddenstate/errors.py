"""Exceptions and warnings raised by hiddenstate.

Every error a user can cause at the public boundary is a :class:`HiddenStateError`; the
message names the offending argument and says how to fix it.
"""

from __future__ import annotations


class HiddenStateError(Exception):
    """Base class of every error hiddenstate raises on purpose.

    Each subclass also derives from the built-in exception a Python user would expect
    (:class:`ValueError`, :class:`AttributeError`, :class:`OSError`, ...), so code that
    catches those keeps working. The message names the offending argument and says how to
    fix it.

    See Also
    --------
    InvalidInputError : The most common subclass: a bad argument.

    Examples
    --------
    >>> import hiddenstate as hs
    >>> try:
    ...     hs.load("no-such-model")
    ... except hs.HiddenStateError as err:
    ...     print(type(err).__name__)
    ModelFileError
    """


class InvalidInputError(HiddenStateError, ValueError):
    """An argument has the wrong shape, dtype, range or value.

    Also a :class:`ValueError`. Raised at the public boundary before any computation, for
    data and for parameters a user sets by hand alike.

    Examples
    --------
    >>> from hiddenstate.metrics import tagging_accuracy
    >>> tagging_accuracy([0, 1, 1], [1, 0])
    Traceback (most recent call last):
    ...
    hiddenstate.errors.InvalidInputError: predicted_states: has 2 labels but true_states has 3; ...
    """


class NotFittedError(HiddenStateError, ValueError, AttributeError):
    """A method needs learned parameters that the model does not have yet.

    Also a :class:`ValueError` and an :class:`AttributeError`, as scikit-learn's
    ``NotFittedError`` is, so code written for scikit-learn that catches either keeps
    working. Call ``fit`` first, or set the learned attributes (``startprob_``,
    ``transmat_``, ...) by hand.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> hs.HMM(2).predict(np.zeros((3, 1)))
    Traceback (most recent call last):
    ...
    hiddenstate.errors.NotFittedError: This HMM has no learned parameters yet; ...
    >>> try:
    ...     hs.HMM(2).predict(np.zeros((3, 1)))
    ... except ValueError:
    ...     print("caught as a ValueError, as scikit-learn's")
    caught as a ValueError, as scikit-learn's
    """


class ModelFileError(HiddenStateError, OSError):
    """A saved model is missing, malformed, tampered with or of an unknown version.

    Also an :class:`OSError`. Raised by :func:`hiddenstate.load` and the ``load`` methods.

    Examples
    --------
    >>> import hiddenstate as hs
    >>> hs.load("no-such-model")
    Traceback (most recent call last):
    ...
    hiddenstate.errors.ModelFileError: path: no-such-model is not a saved model ...
    """


class ZeroProbabilityError(HiddenStateError, ValueError):
    """A sequence has probability zero under the model's current parameters.

    Also a :class:`ValueError`. Such a sequence scores ``-inf``; it has no state path and
    no posterior, so decoding and posteriors raise this error.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> model = hs.HMM(2, emission="categorical", init_params="")
    >>> model.startprob_ = np.array([1.0, 0.0])
    >>> model.transmat_ = np.eye(2)
    >>> model.emissionprob_ = np.eye(2)      # state 0 emits only symbol 0
    >>> float(model.score(np.array([[1]])))
    -inf
    >>> model.predict(np.array([[1]]))
    Traceback (most recent call last):
    ...
    hiddenstate.errors.ZeroProbabilityError: X: sequence 0 has probability zero ...
    """


class ProgramError(HiddenStateError, ValueError):
    """A probabilistic program cannot be explained.

    Also a :class:`ValueError`. Raised when a tabled goal depends on itself, the search
    exceeds its goal or depth limit, or a goal's function returns something other than
    alternatives of switch outcomes and goals.

    Examples
    --------
    >>> from hiddenstate.errors import ProgramError
    >>> issubclass(ProgramError, ValueError)
    True
    """


class MissingDependencyError(HiddenStateError, ImportError):
    """An optional dependency (torch, matplotlib, Dask) is not installed.

    Also an :class:`ImportError`. The message says which extra to install
    (``pip install 'hiddenstate[lm]'``, ...).

    Examples
    --------
    >>> from hiddenstate.errors import MissingDependencyError
    >>> issubclass(MissingDependencyError, ImportError)
    True
    """


class InsufficientMemoryError(HiddenStateError, MemoryError):
    """An operation would need more memory than is available.

    Also a :class:`MemoryError`. Checked before allocating: the message says how much
    memory is needed, which argument drives it, and how to reduce it.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.drift import sample_sequences
    >>> teacher = (np.full(2, 0.5), np.eye(2), np.full((2, 2), 0.5))
    >>> sample_sequences(teacher, n=10**9, T=10**6)
    Traceback (most recent call last):
    ...
    hiddenstate.errors.InsufficientMemoryError: T: sampling 1000000000 sequences ...
    """


class NumericalError(HiddenStateError, FloatingPointError):
    """A learning objective became NaN or infinite.

    Also a :class:`FloatingPointError`.

    Examples
    --------
    >>> from hiddenstate.errors import NumericalError
    >>> issubclass(NumericalError, FloatingPointError)
    True
    """


class ClusterError(HiddenStateError, RuntimeError):
    """A Dask cluster did not do what a distributed fit asked of it.

    Raised by :mod:`hiddenstate.distributed` when the cluster is closed, has no worker, keeps
    losing the workers of a partition, or did not answer within the timeout; the message
    names the cluster and what was waited for. Also a :class:`RuntimeError`.

    Examples
    --------
    >>> from hiddenstate.errors import ClusterError, HiddenStateError
    >>> issubclass(ClusterError, HiddenStateError), issubclass(ClusterError, RuntimeError)
    (True, True)
    """


class DegenerateStateWarning(UserWarning):
    """A state received (almost) no posterior mass, or its covariance hit the floor.

    The state keeps its previous parameters (or its covariance is raised to the floor);
    the warning names the state.

    Examples
    --------
    >>> import warnings
    >>> from hiddenstate.errors import DegenerateStateWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", DegenerateStateWarning)  # stop at a dead state
    """


class ParameterOverwriteWarning(UserWarning):
    """``fit`` is about to replace learned parameters that were set by hand.

    Raised when a model's initialisation step (``init_params`` of :class:`~hiddenstate.HMM`
    and :class:`~hiddenstate.PROPS`, ``init`` of the grammars, ``warm_start`` of
    :class:`~hiddenstate.TreeNet`, every fit of :class:`~hiddenstate.NaiveBayesHidden`)
    will draw new values for an attribute the user assigned since the last ``fit`` or
    load. The message names the attributes and the argument that keeps them. Values left by
    a previous ``fit`` or by :func:`hiddenstate.load` are the model's own: refitting them
    does not warn.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate.errors import ParameterOverwriteWarning
    >>> X = np.random.default_rng(0).normal(size=(50, 1))
    >>> m = hs.HMM(2, emission="gaussian", random_state=0)
    >>> m.transmat_ = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = m.fit(X)
    >>> [w.category.__name__ for w in caught]
    ['ParameterOverwriteWarning']
    """


class ConvergenceWarning(UserWarning):
    """The learning objective went down, or the iteration limit was reached.

    Examples
    --------
    >>> import warnings
    >>> from hiddenstate.errors import ConvergenceWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", ConvergenceWarning)  # silence it in a loop
    """
