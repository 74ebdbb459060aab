"""The scikit-learn estimator API without importing scikit-learn.

Every estimator of :mod:`hiddenstate.models` and :mod:`hiddenstate.programs` subclasses
:class:`BaseEstimator` (and the classifier :class:`ClassifierMixin` too): constructor
arguments are the hyper-parameters, ``get_params`` / ``set_params`` read and write them,
``repr`` shows the ones that differ from their defaults, ``__sklearn_tags__`` answers
scikit-learn's tag queries. That is the whole protocol scikit-learn's tools need
(``sklearn.base.clone``, ``Pipeline``, ``cross_val_score``, ``GridSearchCV``: they call
``get_params``, ``set_params`` and :func:`sklearn.utils.get_tags`, never ``isinstance``),
and scikit-learn documents that an estimator may implement it without inheriting from
``sklearn.base.BaseEstimator``.

Why not inherit from ``sklearn.base.BaseEstimator``: importing it imports most of
scikit-learn and, through it, ``scipy.stats`` (about 0.7 s of the 1.1-2.5 s that ``import
hiddenstate`` took); a user who only fits an HMM never needs them. scikit-learn is imported
here only when one of its own functions is asked for (the tags, ``score`` of a classifier).

What the scikit-learn base class has that this one leaves out: the HTML diagram in Jupyter
(the text repr is shown instead) and metadata routing (``set_fit_request``; ``Pipeline``
without routing passes ``lengths=`` as ``step__lengths``). ``tests/test_sklearn_base.py``
compares every method here with scikit-learn's on twin classes.
"""

from __future__ import annotations

import inspect
import math
import numbers
import re
from pprint import saferepr


class BaseEstimator:
    """Hyper-parameters as constructor arguments, scikit-learn style.

    Subclasses store each ``__init__`` argument, unchanged, as the attribute of the same
    name (no ``*args``).
    """

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The constructor's argument names, sorted (as ``sklearn.base.BaseEstimator``)."""
        init = cls.__init__
        if init is object.__init__:
            return []
        names = []
        for p in inspect.signature(init).parameters.values():
            if p.name == "self" or p.kind == p.VAR_KEYWORD:
                continue
            if p.kind == p.VAR_POSITIONAL:
                raise RuntimeError(f"{cls.__name__}: estimators take their hyper-parameters "
                                   "as named constructor arguments (no *args)")
            names.append(p.name)
        return sorted(names)

    def get_params(self, deep: bool = True) -> dict:
        """Get the hyper-parameters by name (``sklearn.base.BaseEstimator.get_params``).

        Parameters
        ----------
        deep : bool, default=True
            Also return the hyper-parameters of the hyper-parameters that are estimators
            themselves, as ``name__parameter``.

        Returns
        -------
        dict
            The hyper-parameters by name.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> hs.HMM(n_states=3).get_params()["n_states"]
        3
        """
        out = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{key}__{k}", v) for k, v in value.get_params().items())
            out[key] = value
        return out

    def set_params(self, **params):
        """Set hyper-parameters by name (``sklearn.base.BaseEstimator.set_params``).

        Parameters
        ----------
        **params : dict
            The new values by name (``name__parameter`` for a nested estimator's).

        Returns
        -------
        object
            The estimator itself.

        Raises
        ------
        ValueError
            If a name is not a hyper-parameter of the estimator, as scikit-learn's.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> hs.HMM().set_params(n_states=4, learn="map").n_states
        4
        """
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested: dict[str, dict] = {}
        for key, value in params.items():
            key, delim, sub_key = key.partition("__")
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for estimator {self}. Valid "
                                 f"parameters are: {self._get_param_names()!r}.")
            if delim:
                nested.setdefault(key, {})[sub_key] = value
            else:
                setattr(self, key, value)
                valid[key] = value
        for key, sub_params in nested.items():
            valid[key].set_params(**sub_params)
        return self

    def _changed_params(self) -> dict:
        """The hyper-parameters that differ from the constructor's defaults (compared by
        ``repr``, NaN equal to NaN), in the order ``get_params`` gives them."""
        defaults = {name: p.default
                    for name, p in inspect.signature(type(self).__init__).parameters.items()}

        def changed(k, v) -> bool:
            if k not in defaults or defaults[k] is inspect.Parameter.empty:
                return True
            if isinstance(v, BaseEstimator) and type(v) is not type(defaults[k]):
                return True
            return repr(v) != repr(defaults[k]) and not (_is_nan(v) and _is_nan(defaults[k]))

        return {k: v for k, v in self.get_params(deep=False).items() if changed(k, v)}

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        """``Name(param=value, ...)`` with the changed hyper-parameters in name order, in
        scikit-learn's layout: one line up to 80 columns, else as many parameters a line as
        fit, aligned under the first (at most 30 parameters); cut in the middle with ``...``
        beyond about ``N_CHAR_MAX`` non-blank characters. Values print with
        :func:`pprint.saferepr` (dictionaries in key order), as in scikit-learn."""
        name = type(self).__name__
        parts = [f"{k}={saferepr(v)}" for k, v in self._changed_params().items()]
        text = f"{name}({', '.join(parts)})"
        if len(text) > _WIDTH:
            text = name + "(" + _wrap(parts, len(name) + 1) + ")"
        if len("".join(text.split())) > N_CHAR_MAX:
            text = _ellipsis(text, N_CHAR_MAX // 2)
        return text

    def __sklearn_tags__(self):
        """scikit-learn's default estimator tags (asked for by scikit-learn >= 1.6 only, so
        scikit-learn is imported here)."""
        from sklearn.utils import Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    transformer_tags=None, regressor_tags=None, classifier_tags=None)


class ClassifierMixin:
    """A classifier for scikit-learn: the tags say ``"classifier"`` (so ``cross_val_score``
    stratifies its folds). Unlike scikit-learn's mixin it gives no ``score``: a hiddenstate
    estimator's ``score`` is its log-likelihood (``docs/estimator-contract.md``). Put it before
    :class:`BaseEstimator` in the bases."""

    #: what ``sklearn.base.is_classifier`` reads before scikit-learn 1.6
    _estimator_type = "classifier"

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags

        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags()
        tags.target_tags.required = True
        return tags



_WIDTH = 80       # scikit-learn's pretty printer: pprint's default width,
_MAX_PARAMS = 30  # and the number of parameters it shows


def _wrap(parts: list[str], indent: int) -> str:
    """``parts`` joined by ``", "``, a new line (indented) when the next part would pass
    the width: scikit-learn's ``_EstimatorPrettyPrinter`` in compact mode, whose closing
    parenthesis counts against the last line."""
    width = max_width = _WIDTH - indent + 1
    newline = ",\n" + " " * indent
    out, delim = [], ""
    for i, part in enumerate(parts):
        if i == _MAX_PARAMS:
            out.append(", ...")
            break
        if i == len(parts) - 1:
            width -= 1
            max_width -= 1
        w = len(part) + 2
        if width < w:
            width = max_width
            if delim:
                delim = newline
        if width >= w:
            width -= w
            out += [delim, part]
            delim = ", "
        else:  # wider than a line: on a line of its own
            out += [delim, part]
            delim = newline
    return "".join(out)


def _ellipsis(text: str, keep: int) -> str:
    """``text`` with the middle replaced by ``...``, keeping about ``keep`` non-blank
    characters at each end, the right end starting at a line start when the cut spans
    lines (scikit-learn's ``BaseEstimator.__repr__``)."""
    regex = rf"^(\s*\S){{{keep}}}"
    left = re.match(regex, text).end()
    right = re.match(regex, text[::-1]).end()
    if "\n" in text[left:-right]:
        right = re.match(regex + r"[^\n]*\n", text[::-1]).end()
    if left + 3 < len(text) - right:
        text = text[:left] + "..." + text[-right:]
    return text


def _is_nan(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, numbers.Integral) \
        and math.isnan(x)
