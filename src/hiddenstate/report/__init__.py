"""HTML report of a fitted HMM: one ``index.html`` with its PNG plots embedded (base64) and
the same PNG files beside it.

Sections: a summary table (data size, states, iterations, convergence, final
log-likelihood, perplexity for categorical models), the log-likelihood per EM iteration, the
transition matrix (a heat map and one row per state: start probability, staying
probability, most likely next state), the emissions (most probable symbols of every state for
categorical models, means per state for Gaussian models, rates for Poisson models), for
Gaussian, Gaussian-mixture and Poisson models the series over time coloured by decoded state
with posterior bands, the state occupancy and, for text models, a few decoded sentences
coloured by state, in the words as written (those outside the vocabulary marked).

Needs matplotlib (``pip install 'hiddenstate[plot]'``); every string put into the HTML is
escaped.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import math
from pathlib import Path

import numpy as np

from ..errors import HiddenStateError
from ..learn import OBJECTIVES
from ..textio import top_symbols

__all__ = ["REPORT_FILES", "write_report", "require_matplotlib", "top_symbols"]

SECTION_IDS = ("summary", "loglik", "transitions", "emissions", "timeline", "occupancy",
               "examples")
#: every file :func:`write_report` may write
REPORT_FILES = frozenset({"index.html", "loglik.png", "transmat.png", "top_symbols.png",
                          "means.png", "categories.png", "rates.png", "occupancy.png",
                          "states.png", "gibbs_trace.png", "gibbs_rank.png", "n_states.png"})
#: emission families whose series the report plots over time (a mean and a variance per
#: state and feature)
TIMELINE_FAMILIES = ("gaussian", "gmm", "poisson")


def require_matplotlib() -> None:
    """Raise a clear error when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise HiddenStateError(
            "report: matplotlib is not installed; pip install 'hiddenstate[plot]' "
            "(or leave out --report)"
        ) from exc


def _esc(value) -> str:
    return html.escape(str(value), quote=True)


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{_esc(alt)}">'
            f'<figcaption>{_esc(alt)} (<a href="{_esc(path.name)}">{_esc(path.name)}</a>)'
            "</figcaption></figure>")


def _table(header: list[str], rows: list[list], cls: str = "") -> str:
    """An HTML table in a box that scrolls sideways when it is wider than the page, and
    down when it has more than 20 rows (its header stays in view): readable at 45+ states."""
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    box = "tablebox tall" if len(rows) > 20 else "tablebox"
    return (f'<div class="{box}"><table class="{_esc(cls)}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _fmt(x, digits: int = 6) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    return f"{float(x):.{digits}g}"


_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif;
       max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: .92em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
table.summary td:first-child { font-weight: 600; }
figure { margin: .5em 0 1.5em; } img { max-width: 100%; }
figcaption { font-size: .85em; color: #666; }
.tok { padding: 0 .15em; border-radius: 3px; margin: 0 .05em; line-height: 1.9; }
.tok sub { font-size: .65em; color: #444; }
p.seq { margin: .4em 0 .9em; }
code { background: #f4f4f4; padding: 0 .2em; }
.tablebox { overflow-x: auto; max-width: 100%; }
.tablebox.tall { max-height: 32em; overflow-y: auto; }
.tablebox.tall thead th { position: sticky; top: 0; }
.tok.oov { font-style: italic; text-decoration: underline dotted; }
"""


def write_report(model, out_dir, *, X=None, lengths=None, vocabulary=None,
                 source: str | None = None, fit_seconds: float | None = None,
                 title: str = "hiddenstate report", n_top: int = 10,
                 n_examples: int = 3, tokens=None, index=None, index_name: str | None = None,
                 feature_names=None, unseen_probability: float | None = None,
                 n_series: int = 3) -> Path:
    """Write ``index.html`` and PNG plots for a fitted ``model`` into ``out_dir``.

    ``X, lengths`` (the training data, as passed to ``fit``) give the summary's data size,
    final log-likelihood, perplexity, the state occupancy, the series over time and the
    decoded examples; without them those parts are left out; data of probability zero
    under the model raises :class:`~hiddenstate.errors.ZeroProbabilityError`.
    ``vocabulary`` (a :class:`hiddenstate.textio.Vocabulary`) names the symbols of a text
    model; ``tokens`` (the words of each sequence as written) shows them in the examples,
    those outside the vocabulary marked. ``index`` (one label per row: dates or numbers)
    and ``index_name`` are the x axis of the series over time (first ``n_series``
    sequences), ``feature_names`` name the columns; ``unseen_probability`` is the share of
    each state's probability reserved for words not seen in training. Returns the path of
    ``index.html``.
    """
    require_matplotlib()
    from . import plots

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    K = int(model.n_states)
    emission = model.emission
    history = list(getattr(getattr(model, "monitor_", None), "history", []) or [])
    mode = getattr(model, "learn", "em")
    objective = OBJECTIVES.get(mode, "objective")
    converged = getattr(getattr(model, "monitor_", None), "converged", None)

    loglik = n_obs = n_seq = None
    occupancy = post = None
    if X is not None:
        lengths = (np.array([len(X)], dtype=np.int64) if lengths is None
                   else np.asarray(lengths, dtype=np.int64))
        # raises ZeroProbabilityError naming the first sequence the model cannot produce
        post = model.predict_proba(X, lengths)
        loglik = model.score(X, lengths)
        occupancy = post.mean(axis=0)
        n_obs, n_seq = int(lengths.sum()), len(lengths)

    # --- summary
    rows: list[tuple[str, str]] = []
    if source is not None:
        rows.append(("data", _esc(source)))
    if n_seq is not None:
        rows.append(("sequences", _fmt(n_seq)))
        rows.append(("observations", _fmt(n_obs)))
    rows.append(("emission", _esc(emission)))
    rows.append(("hidden states", _fmt(K)))
    n_features = getattr(model, "n_features_", None)
    if emission == "categorical":
        rows.append(("symbols", _fmt(n_features)))
    else:
        rows.append(("features", _fmt(n_features)))
        if emission in ("gaussian", "gmm"):
            rows.append(("covariance type", _esc(model.covariance_type)))
        if emission == "gmm":
            rows.append(("mixture components per state", _fmt(model.n_mix)))
    if vocabulary is not None and X is not None:
        unk = float(np.mean(np.asarray(X).reshape(len(X), -1)[:, 0] == vocabulary.unk_id))
        rows.append(("unknown-word share", _esc(f"{unk:.2%} of tokens are {vocabulary.unk_token}")))
    if unseen_probability:
        rows.append(("probability of an unseen word", _esc(
            f"{unseen_probability:.4g} in every state (Witten-Bell: no training word was "
            f"rare enough to stand for unseen words)")))
    rows.append(("EM iterations", f"{len(history)} (limit {_fmt(model.n_iter)}, "
                                  f"tol {_esc(model.tol)})"))
    rows.append(("converged", _fmt(converged) if converged is not None else "n/a"))
    if getattr(model, "n_init", 1) != 1:
        rows.append(("random restarts", _fmt(model.n_init)))
    rows.append(("random state", _esc(model.random_state)))
    if loglik is not None:
        rows.append(("final log-likelihood", _fmt(loglik, 10)))
        rows.append(("log-likelihood per observation", _fmt(loglik / n_obs)))
        if emission == "categorical":
            label = "per-token perplexity" if vocabulary is not None else "perplexity"
            rows.append((label, _fmt(math.exp(-loglik / n_obs), 6)))
    elif history:
        rows.append((f"last training objective ({objective})", _fmt(history[-1], 10)))
    if fit_seconds is not None:
        rows.append(("fit time", f"{float(fit_seconds):.2f} s"))
    parts = [f'<section id="summary"><h2>Summary</h2>'
             f'{_table(["quantity", "value"], [list(r) for r in rows], "summary")}</section>']

    # --- log-likelihood
    if history:
        p = plots.plot_loglik(history, out / "loglik.png", n_obs, objective)
        parts.append('<section id="loglik"><h2>Training objective per iteration</h2>'
                     f"<p>Learning mode <code>{html.escape(mode)}</code>: "
                     f"{html.escape(objective)} at the parameters entering each iteration"
                     + ("; a sampler's trace wanders." if mode == "gibbs"
                        else "; it never decreases.") + "</p>"
                     f"{_img(p, objective + ' per iteration')}</section>")

    # --- transitions
    p = plots.plot_transmat(model.transmat_, out / "transmat.png")
    A = np.asarray(model.transmat_, dtype=float)
    others = np.where(np.eye(K, dtype=bool), -1.0, A)
    nxt = np.argmax(others, axis=1)
    start = _table(["state", "start probability", "stays (P(k → k))",
                    "most likely next state"],
                   [[str(k), f"{float(model.startprob_[k]):.3f}", f"{A[k, k]:.3f}",
                     f"{int(nxt[k])} ({A[k, nxt[k]]:.3f})" if K > 1 else "n/a"]
                    for k in range(K)])
    parts.append('<section id="transitions"><h2>Transition matrix</h2>'
                 f"{_img(p, 'transition-matrix heat map')}{start}</section>")

    # --- emissions
    occ_cell = (lambda k: f"{occupancy[k]:.3f}") if occupancy is not None else (lambda k: "")
    if emission == "categorical":
        top = top_symbols(model.emissionprob_, vocabulary, n_top)
        p = plots.plot_top_symbols(top, out / "top_symbols.png")
        trows = [[str(k), occ_cell(k),
                  " ".join(f"<code>{_esc(w)}</code>&nbsp;{pr:.3f}" for w, pr in top[k])]
                 for k in range(K)]
        what = "words" if vocabulary is not None else "symbols"
        parts.append(f'<section id="emissions"><h2>Top {what} per state</h2>'
                     f"{_img(p, f'most probable {what} per state')}"
                     f"{_table(['state', 'occupancy', f'top {n_top} {what} (probability)'], trows)}"
                     "</section>")
    elif emission == "gaussian":
        means = np.asarray(model.means_)
        cov = np.asarray(model.covars_)
        sd = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1)) if cov.ndim == 3 else np.sqrt(cov)
        p = plots.plot_state_matrix(means, out / "means.png", "Means per state")
        trows = [[str(k), occ_cell(k),
                  ", ".join(f"{m:.4g} &plusmn; {s:.3g}"
                            for m, s in zip(means[k], np.broadcast_to(sd[k], means[k].shape),
                                            strict=True))]
                 for k in range(K)]
        parts.append('<section id="emissions"><h2>Means per state</h2>'
                     f"{_img(p, 'means per state')}"
                     f"{_table(['state', 'occupancy', 'mean ± sd per feature'], trows)}"
                     "</section>")
    elif emission == "gmm":   # each state's mixture mean sum_m w_km mu_km
        weights = np.asarray(model.weights_)
        means = np.einsum("km,kmd->kd", weights, np.asarray(model.means_))
        p = plots.plot_state_matrix(means, out / "means.png", "Mixture means per state")
        trows = [[str(k), occ_cell(k), ", ".join(f"{m:.4g}" for m in means[k]),
                  ", ".join(f"{w:.3f}" for w in weights[k])] for k in range(K)]
        parts.append('<section id="emissions"><h2>Mixture means per state</h2>'
                     f"{_img(p, 'mixture means per state')}"
                     + _table(["state", "occupancy", "mixture mean per feature", "weights"],
                              trows)
                     + "</section>")
    elif emission == "multinomial":
        probs = np.asarray(model.emissionprob_)
        p = plots.plot_state_matrix(probs, out / "categories.png",
                                    "Category probabilities per state", cmap="viridis",
                                    center=False)
        trows = [[str(k), occ_cell(k), ", ".join(f"{v:.3f}" for v in probs[k])]
                 for k in range(K)]
        parts.append('<section id="emissions"><h2>Category probabilities per state</h2>'
                     f"{_img(p, 'category probabilities per state')}"
                     f"{_table(['state', 'occupancy', 'probability per category'], trows)}"
                     "</section>")
    elif emission == "poisson":
        lam = np.asarray(model.lambdas_)
        p = plots.plot_state_matrix(lam, out / "rates.png", "Poisson rates per state",
                                    cmap="viridis", center=False)
        trows = [[str(k), occ_cell(k), ", ".join(f"{v:.4g}" for v in lam[k])]
                 for k in range(K)]
        parts.append('<section id="emissions"><h2>Rates per state</h2>'
                     f"{_img(p, 'Poisson rates per state')}"
                     f"{_table(['state', 'occupancy', 'rate per feature'], trows)}</section>")

    # --- the series over time
    if post is not None and emission in TIMELINE_FAMILIES:
        parts.append(_timeline(model, out, X, lengths, post, index, index_name, feature_names,
                               n_series, plots))

    # --- occupancy
    if occupancy is not None:
        p = plots.plot_occupancy(occupancy, out / "occupancy.png")
        parts.append('<section id="occupancy"><h2>State occupancy</h2>'
                     "<p>Average posterior probability of each state over the data.</p>"
                     f"{_img(p, 'state occupancy')}</section>")

    # --- Gibbs sampling: traces, ranks, diagnostics (report/gibbs.py)
    if getattr(model, "posterior_samples_", None) is not None:
        from .gibbs import gibbs_section

        parts.append(gibbs_section(model, out, _img, _table))

    # --- decoded examples (text)
    if vocabulary is not None and X is not None and n_examples > 0:
        colors = plots.state_colors_hex(K)
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        m = min(n_examples, len(lengths))
        _, states = model.decode(X[: bounds[m]], lengths[:m], algorithm="viterbi")
        lines = []
        for i in range(m):
            ids = np.asarray(X[bounds[i]:bounds[i + 1]]).reshape(-1)[:80]
            st = states[bounds[i]:bounds[i + 1]][:80]
            words = (list(tokens[i][:80]) if tokens is not None
                     else vocabulary.decode(ids))
            toks = "".join(_token_html(w, int(k), colors[int(k)],
                                       oov=tokens is not None and j == vocabulary.unk_id
                                       and w != vocabulary.unk_token,
                                       unk=vocabulary.unk_token)
                           for w, j, k in zip(words, ids, st, strict=True))
            more = " &hellip;" if bounds[i + 1] - bounds[i] > 80 else ""
            lines.append(f'<p class="seq">{toks}{more}</p>')
        oov_note = (f" Words outside the model's vocabulary, which it reads as "
                    f"<code>{_esc(vocabulary.unk_token)}</code>, are shown as written, in "
                    '<span class="tok oov">italics, underlined</span>.'
                    if tokens is not None else "")
        parts.append('<section id="examples"><h2>Decoded examples</h2>'
                     f"<p>The first {m} sequences, each word tagged with its Viterbi state."
                     f"{oov_note}</p>" + "".join(lines) + "</section>")

    from .._version import __version__

    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    doc = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<link rel="icon" href="data:,">'  # no favicon request (a 404 where it is served)
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_esc(title)}</h1>"
        f"<p>A {K}-state {_esc(emission)} HMM, written by hiddenstate {_esc(__version__)} "
        f"on {_esc(stamp)}.</p>"
        + "".join(parts) + "</body></html>\n"
    )
    index = out / "index.html"
    index.write_text(doc, encoding="utf-8")
    return index


def _token_html(word: str, state: int, color: str, oov: bool, unk: str) -> str:
    cls = "tok oov" if oov else "tok"
    tip = f"state {state}" + (f"; outside the vocabulary, read as {unk}" if oov else "")
    return (f'<span class="{cls}" style="background:{color}" title="{_esc(tip)}">'
            f"{_esc(word)}<sub>{state}</sub></span> ")


def _state_moments(model) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, variance)`` of each state's emission, per feature, both ``(K, D)``:
    a Gaussian's mean and the diagonal of its covariance; a Gaussian mixture's moments
    (:math:`\\sum_m w_m \\mu_m` and :math:`\\sum_m w_m (\\sigma_m^2 + \\mu_m^2)` minus the
    squared mean); a Poisson rate, which is both."""
    emission = model.emission
    if emission == "poisson":
        lam = np.asarray(model.lambdas_, dtype=float)
        return lam, lam
    if emission == "gaussian":
        cov = np.asarray(model.covars_, dtype=float)
        return np.asarray(model.means_, dtype=float), np.diagonal(cov, axis1=-2, axis2=-1)
    w = np.asarray(model.weights_, dtype=float)                   # (K, M)
    mu = np.asarray(model.means_, dtype=float)                    # (K, M, D)
    cov = np.asarray(model.covars_, dtype=float)
    kind = model.covariance_type
    if kind == "spherical":
        var = np.broadcast_to(cov[:, :, None], mu.shape)
    elif kind == "diag":
        var = cov
    elif kind == "full":
        var = np.diagonal(cov, axis1=-2, axis2=-1)
    else:  # tied: one covariance per state, shared by its components
        var = np.broadcast_to(np.diagonal(cov, axis1=-2, axis2=-1)[:, None, :], mu.shape)
    mean = np.einsum("km,kmd->kd", w, mu)
    second = np.einsum("km,kmd->kd", w, var + mu ** 2)
    return mean, second - mean ** 2


def _timeline(model, out: Path, X, lengths, post, index, index_name, feature_names,
              n_series: int, plots) -> str:
    """The section of the series over time: the first ``n_series`` sequences coloured by
    their Viterbi states, with the posterior predictive band and the stacked posteriors."""
    mean, var = _state_moments(model)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    m = min(n_series, len(lengths))
    _, states = model.decode(X[: bounds[m]], lengths[:m], algorithm="viterbi")
    Xf = np.asarray(X, dtype=float).reshape(len(X), -1)
    idx = None if index is None else np.asarray(index)
    usable = idx is not None and idx.dtype.kind in "Mfiu"
    series = []
    for i in range(m):
        a, b = bounds[i], bounds[i + 1]
        g = post[a:b]
        mu_t = g @ mean
        sd_t = np.sqrt(np.maximum(g @ (var + mean ** 2) - mu_t ** 2, 0.0))
        series.append({"number": i, "x": idx[a:b] if usable else None, "X": Xf[a:b],
                       "states": states[a:b], "posterior": g, "mean": mu_t, "sd": sd_t})
    p = plots.plot_states_over_time(series, out / "states.png", int(model.n_states),
                                    feature_names=feature_names,
                                    index_name=index_name if usable else None)
    which = (f"the first {m} of {len(lengths)} sequences" if len(lengths) > m
             else ("the sequence" if m == 1 else f"the {m} sequences"))
    return ('<section id="timeline"><h2>States over time</h2>'
            f"<p>{which.capitalize()}: each feature coloured by its Viterbi state (the most "
            "likely path), with the posterior predictive band: the states' means and "
            "variances averaged under the posterior P(state | all the data), mean &plusmn; 2 "
            "sd. Below each sequence, the posteriors stacked: how sure the model is of the "
            "state at each step. Missing values leave gaps.</p>"
            f"{_img(p, 'series coloured by decoded state, with posterior bands')}</section>")
