"""Black-box predictive sources for PROPS: the protocol (:class:`Source`), an adapter for a
plain callable, an interpolated Kneser-Ney n-gram model and (with the ``torch`` extra) an
LSTM language model."""

from .base import CallableSource, Source, check_distribution, sequence_log_probs

__all__ = ["CallableSource", "Source", "check_distribution", "sequence_log_probs"]
