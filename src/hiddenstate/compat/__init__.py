"""Drop-in replacements for other HMM libraries' estimators, backed by hiddenstate.

``from hiddenstate.compat import hmmlearn as hmm`` gives hmmlearn 0.3.3's
``CategoricalHMM``, ``GaussianHMM`` and ``PoissonHMM`` (see
``docs/migrating-from-hmmlearn.md``). Submodules are imported on demand.
"""

__all__ = ["hmmlearn"]
