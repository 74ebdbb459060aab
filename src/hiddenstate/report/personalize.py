"""HTML report of a PROPS personalisation (:func:`hiddenstate.personalize.personalize`).

One self-contained ``index.html`` (PNG plots embedded as base64, the same PNG files beside
it) with:

- a summary table: mean predictive probability and perplexity of PROPS, the streaming HMM
  and the black box alone on the personalisation words (prequential for PROPS and the HMM:
  each word predicted before it is learned from) and on the evaluation words (models
  frozen); the data, the vocabulary and its ``<unk>`` share, the settings;
- learning curves: the running mean of the prequential log-probability over the
  personalisation stream, against the number of words seen;
- PROPS's learned transition matrix and the most probable words of each perturbation state;
- the evaluation text coloured word by word, as in the PROPS paper's figures 3-5: the
  log-likelihood ratio PROPS vs HMM, PROPS vs the black box, and the membership log-odds
  ``log(p_t / (1 - p_t))``, ``p_t`` the filtered probability of the perturbation states.
  Each word's exact number is in its hover title.

Needs matplotlib; every string put into the HTML is escaped.
"""

from __future__ import annotations

import datetime as _dt
import math
from pathlib import Path

import numpy as np

from ..personalize import format_perplexity, hmm_baseline_note
from . import _CSS, _esc, _img, _table, require_matplotlib

__all__ = ["PERSONALIZE_REPORT_FILES", "SECTION_IDS", "write_personalize_report",
           "diverging_hex"]

SECTION_IDS = ("summary", "curves", "transitions", "perturbation", "words")
#: every file :func:`write_personalize_report` may write
PERSONALIZE_REPORT_FILES = frozenset({"index.html", "learning_curves.png",
                                      "props_transmat.png"})

_EXTRA_CSS = """
.words { line-height: 2.0; font-size: .95em; margin: .4em 0 1.2em; }
.w { padding: .05em .12em; border-radius: 3px; }
.w.unk { font-style: italic; text-decoration: underline dotted; }
.legend { display: flex; align-items: center; gap: 0; margin: .3em 0 .2em; font-size: .8em; }
.legend span.sw { display: inline-block; width: 2.6em; text-align: center; padding: .1em 0; }
.legend span.lab { padding: 0 .6em; }
table.models td:not(:first-child), table.models th { text-align: right; }
p.note { font-size: .9em; color: #444; }
"""

_MODEL_NAMES = {"props": "PROPS", "hmm": "HMM (streaming, same number of states)",
                "black_box": "black box alone"}
_COLORS = {"props": "#1f77b4", "hmm": "#ff7f0e", "black_box": "#555555"}


def diverging_hex(values, limit: float, cmap: str = "RdBu") -> list[str]:
    """Background colours (``#rrggbb``) of ``values`` on a diverging map centred at 0 and
    saturating at ``±limit``, blended with white so black text stays readable. Infinite
    values take the end colours."""
    from matplotlib import colormaps

    cm = colormaps[cmap]
    v = np.clip(np.nan_to_num(np.asarray(values, dtype=float), nan=0.0, posinf=limit,
                              neginf=-limit), -limit, limit)
    out = []
    for x in (v / limit + 1.0) / 2.0:
        r, g, b, _ = cm(float(x))
        r, g, b = (0.6 * r + 0.4, 0.6 * g + 0.4, 0.6 * b + 0.4)
        out.append(f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}")
    return out


def _limit(values, floor: float = 1.0, cap: float = 10.0) -> float:
    """Colour-scale limit: the 95th percentile of |finite values|, rounded up, in
    [floor, cap]."""
    v = np.abs(np.asarray(values, dtype=float))
    v = v[np.isfinite(v)]
    if not len(v):
        return floor
    return float(min(cap, max(floor, math.ceil(np.percentile(v, 95)))))


def _legend(limit: float, left: str, right: str, cmap: str = "RdBu", n: int = 9) -> str:
    ticks = np.linspace(-limit, limit, n)
    cols = diverging_hex(ticks, limit, cmap)
    sw = "".join(
        f'<span class="sw" style="background:{c}">'
        f"{'≤' if i == 0 else '≥' if i == n - 1 else ''}{t:+.3g}</span>"
        for i, (c, t) in enumerate(zip(cols, ticks, strict=True)))
    return (f'<div class="legend"><span class="lab">{_esc(left)}</span>{sw}'
            f'<span class="lab">{_esc(right)}</span></div>')


def _fmt_num(x: float, digits: int = 3) -> str:
    if x is None or not math.isfinite(x):
        return "inf" if x is not None and x > 0 else "-inf" if x is not None else "n/a"
    return f"{x:+.{digits}g}" if abs(x) < 1e4 else f"{x:+.3e}"


def _word_panel(words: list[str], unk: np.ndarray, seq_starts: set[int], values: np.ndarray,
                titles: list[str], limit: float, cmap: str = "RdBu") -> str:
    cols = diverging_hex(values, limit, cmap)
    parts = []
    for i, (w, c, t) in enumerate(zip(words, cols, titles, strict=True)):
        if i and i in seq_starts:
            parts.append("<br>")
        cls = "w unk" if unk[i] else "w"
        parts.append(f'<span class="{cls}" style="background:{c}" title="{_esc(t)}">'
                     f"{_esc(w)}</span> ")
    return '<div class="words">' + "".join(parts) + "</div>"


def _plot_curves(curves: dict, path: Path, observed: np.ndarray | None = None) -> Path:
    """Running means of the prequential log-probabilities (over the ``observed`` words
    only, when some are missing)."""
    from .plots import _figure, _save

    if observed is not None:
        curves = {k: np.asarray(v, dtype=float)[observed] for k, v in curves.items()}
    fig = _figure(7.0, 3.8)
    ax = fig.add_subplot()
    for key in ("props", "hmm", "black_box"):
        lp = np.asarray(curves[key], dtype=float)
        n = np.arange(1, len(lp) + 1)
        ax.plot(n, np.cumsum(lp) / n, label=_MODEL_NAMES[key], color=_COLORS[key], lw=1.6)
    ax.set_xlabel("words seen" if observed is None or observed.all()
                  else "observed words seen")
    ax.set_ylabel("running mean of log p(word | past)")
    ax.set_title("Learning curves on the personalisation stream (prequential)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    # zoom past the noisy first words so the later differences are visible
    tails = []
    for c in curves.values():
        run = np.cumsum(np.asarray(c, dtype=float)) / np.arange(1, len(c) + 1)
        tails.append(run[min(len(run) - 1, max(1, len(run) // 20)):])
    lo = min(float(np.min(t)) for t in tails)
    hi = max(float(np.max(t)) for t in tails)
    if math.isfinite(lo) and math.isfinite(hi) and hi > lo:
        pad = 0.08 * (hi - lo)
        ax.set_ylim(lo - pad, hi + pad)
    return _save(fig, path)


def _plot_transmat(A, names: list[str], path: Path) -> Path:
    from .plots import _figure, _save

    A = np.asarray(A, dtype=float)
    K = len(A)
    fig = _figure(2.8 + 1.1 * K, 2.2 + 0.8 * K)
    ax = fig.add_subplot()
    im = ax.imshow(A, cmap="viridis", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(K))
    ax.set_yticks(range(K))
    ax.set_xticklabels(names, rotation=20, fontsize=8)
    ax.set_yticklabels(names, fontsize=8)
    ax.set_xlabel("to state")
    ax.set_ylabel("from state")
    ax.set_title("PROPS transitions P(next | current)")
    for i in range(K):
        for j in range(K):
            ax.text(j, i, f"{A[i, j]:.3f}", ha="center", va="center", fontsize=9,
                    color="black" if A[i, j] > 0.6 else "white")
    fig.colorbar(im, ax=ax, shrink=0.8)
    return _save(fig, path)


def write_personalize_report(result, out_dir, n_words: int = 400,
                             title: str = "PROPS personalisation report") -> Path:
    """Write ``index.html`` and its PNGs for a
    :class:`~hiddenstate.personalize.PersonalizeResult` into ``out_dir``; the evaluation
    text panels show its first ``n_words`` words. Returns the path of ``index.html``."""
    require_matplotlib()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    s = result.summary
    models = s["models"]
    voc = s["vocabulary"]
    sets = s["settings"]
    n_p, n_e = s["n_personalisation_words"], s["n_evaluation_words"]
    parts = []

    # --- summary
    rows = []
    for key in ("props", "hmm", "black_box"):
        m = models[key]
        cells = [f"<b>{_esc(_MODEL_NAMES[key])}</b><br><small>{_esc(m['label'])}</small>"]
        for part in ("personalisation", "evaluation"):
            q = m[part]
            cells += [f"{q['mean_prob']:.4f}", _esc(format_perplexity(q["perplexity"]))]
        rows.append(cells)
    head = ("<thead><tr><th rowspan=2>model</th>"
            f"<th colspan=2>personalisation: first {n_p:,} words (prequential)</th>"
            f"<th colspan=2>evaluation: next {n_e:,} words (frozen)</th></tr><tr>"
            + "<th>mean P(word)</th><th>perplexity</th>" * 2 + "</tr></thead>")
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    model_table = f'<table class="models">{head}<tbody>{body}</tbody></table>'
    unk_note = (
        f"The vocabulary ({voc['size']:,} symbols) is built from "
        f"{'the reference corpus' if voc['built_from'] == 'reference' else 'the loaded source'}"
        f"; every target word outside it is read as <code>{_esc(voc['unk_token'])}</code> "
        f"({voc['personalisation_unk_share']:.1%} of the personalisation words, "
        f"{voc['evaluation_unk_share']:.1%} of the evaluation words"
        + (f"; {voc['reference_unk_share']:.1%} of the reference"
           if voc["reference_unk_share"] is not None else "")
        + "). All three models predict the symbol <code>&lt;unk&gt;</code>, not the word "
          "behind it, so the numbers are comparable with each other but not with models over "
          "a larger vocabulary.")
    data_rows = [
        ["reference corpus", _esc(s["reference"] if s["reference"] is not None
                                  else "(not used: source loaded)")],
        ["target text", _esc(s["target"])],
        ["black box", _esc(s["source"]["description"])
         + (f", trained on {s['source']['trained_on_words']:,} reference words"
            if s["source"]["trained_on_words"] else "")
         + (f", loaded from {_esc(s['source']['loaded_from'])}"
            if s["source"]["loaded_from"] else "")],
        ["vocabulary", f"{voc['size']:,} symbols (<code>--vocab-size</code> "
                       f"{sets['vocab_size']:,})"],
        ["<code>&lt;unk&gt;</code> share",
         f"personalisation {voc['personalisation_unk_share']:.1%}, evaluation "
         f"{voc['evaluation_unk_share']:.1%}"],
        ["PROPS", f"1 source state + {sets['perturbation_states']} perturbation states, "
                  "online EM (Cappé 2011)"],
        ["baseline HMM", f"{sets['hmm_states']} states, categorical emissions, online EM"],
        ["sequences", f"personalisation {s['n_personalisation_sequences']}, evaluation "
                      f"{s['n_evaluation_sequences']} (one per line of the target)"],
        ["seed, lower-casing", f"{sets['seed']}, {'yes' if sets['lowercase'] else 'no'}"],
    ]
    mem = s["membership"]
    parts.append(
        '<section id="summary"><h2>Summary</h2>' + model_table
        + '<p class="note">Mean P(word) is the average predictive probability '
          "p(y<sub>t</sub> | y<sub>&lt;t</sub>); perplexity is exp(&minus;mean log p). On the "
          "personalisation words PROPS and the HMM are scored <em>prequentially</em>: each "
          "word is predicted by the parameters learned from the words before it, then learned "
          "from. On the evaluation words both are frozen. The black box never changes.</p>"
        + f'<p class="note">{unk_note}</p>'
        + (f'<p class="note">{_esc(note)}</p>'
           if (note := hmm_baseline_note(s)) is not None else "")
        + f'<p class="note">On the evaluation words PROPS puts on average '
          f"{mem['mean_perturbation_prob']:.1%} of its filtered probability on the "
          f"perturbation states; {mem['share_words_perturbation']:.1%} of the words are more "
          "likely user-specific than reference-like.</p>"
        + _table(["", ""], data_rows, "summary") + "</section>")

    # --- learning curves
    p = _plot_curves(result.curves, out / "learning_curves.png",
                     result.personalisation.observed)
    parts.append('<section id="curves"><h2>Learning curves</h2>'
                 "<p>Running mean of the prequential log-probability over the personalisation "
                 "stream (x: words seen). The black box does not learn; PROPS starts from it "
                 "and improves as the perturbation states and transitions are learned; the "
                 "HMM starts from nothing.</p>"
                 + _img(p, "running mean log-probability per word seen") + "</section>")

    # --- transitions
    names = models["props"]["state_names"]
    A = np.asarray(models["props"]["transmat"])
    p = _plot_transmat(A, names, out / "props_transmat.png")
    trows = [[_esc(names[i])] + [f"{v:.4f}" for v in A[i]] for i in range(len(A))]
    trows.append(["<i>start</i>"] + [f"{v:.4f}" for v in models["props"]["startprob"]])
    parts.append('<section id="transitions"><h2>PROPS transition matrix</h2>'
                 "<p>Row: current state, column: next state. The initial distribution "
                 "(last row) is kept uniform.</p>"
                 + _img(p, "PROPS transition matrix")
                 + _table(["from \\ to"] + names, trows) + "</section>")

    # --- perturbation states
    prow = [[_esc(names[k + 1]),
             " ".join(f"<code>{_esc(w)}</code>&nbsp;{pr:.3f}" for w, pr in top)]
            for k, top in enumerate(models["props"]["top_symbols"])]
    parts.append('<section id="perturbation"><h2>Top words of the perturbation states</h2>'
                 "<p>The ten most probable symbols of each learned emission row.</p>"
                 + _table(["state", "top 10 words (probability)"], prow) + "</section>")

    # --- coloured evaluation text
    sc = result.scores
    ev = result.evaluation
    m = min(n_words, len(ev))
    words = ev.words[:m]
    unk = ev.X[:m] == result.vocabulary.unk_id
    starts = set(np.concatenate(([0], np.cumsum(ev.lengths)))[:-1].tolist())
    lp_props, lp_hmm = sc.props_log_prob[:m], sc.hmm_log_prob[:m]
    lp_src, odds, pp = sc.source_log_prob[:m], sc.membership_log_odds[:m], \
        sc.perturbation_prob[:m]
    unk_sfx = [" — missing (no emission term; predicted with probability 1)" if x < 0
               else " — <unk>: not in the reference vocabulary" if u else ""
               for x, u in zip(ev.X[:m], unk, strict=True)]

    def llr_panel(a, b, bname):
        d = a - b
        lim = _limit(d)
        titles = [f"{w}: log P(PROPS) − log P({bname}) = {_fmt_num(x)} "
                  f"(P(PROPS) = {math.exp(pa):.3g}, P({bname}) = {math.exp(pb):.3g}){sfx}"
                  for w, x, pa, pb, sfx in zip(words, d, a, b, unk_sfx, strict=True)]
        return (_legend(lim, f"{bname} more likely", "PROPS more likely")
                + _word_panel(words, unk, starts, d, titles, lim))

    lim_odds = _limit(odds)
    odds_titles = [f"{w}: log-odds of the perturbation states = {_fmt_num(x)} "
                   f"(p_t = {q:.4f}){sfx}"
                   for w, x, q, sfx in zip(words, odds, pp, unk_sfx, strict=True)]
    more = f" (the first {m:,} of {len(ev):,})" if m < len(ev) else ""
    parts.append(
        f'<section id="words"><h2>The evaluation text, word by word{more}</h2>'
        "<p>Each word is coloured by a number (hover over it to read the number); a line "
        "break marks the start of a new sequence (line of the target); "
        "<span class=\"w unk\">italic underlined</span> words are "
        "<code>&lt;unk&gt;</code> for the models. Colours saturate at the ends of the "
        "legend.</p>"
        "<h3>Log-likelihood ratio, PROPS vs the HMM</h3>"
        "<p>log p<sub>PROPS</sub>(y<sub>t</sub> | y<sub>&lt;t</sub>) &minus; "
        "log p<sub>HMM</sub>(y<sub>t</sub> | y<sub>&lt;t</sub>): blue where PROPS predicts "
        "the word better. The HMM learned from the same words with nothing to start "
        "from.</p>" + llr_panel(lp_props, lp_hmm, "HMM")
        + "<h3>Log-likelihood ratio, PROPS vs the black box</h3>"
          "<p>log p<sub>PROPS</sub> &minus; log f(y<sub>t</sub> | y<sub>&lt;t</sub>): "
          "blue where personalisation helped, red where it cost.</p>"
        + llr_panel(lp_props, lp_src, "black box")
        + "<h3>Membership log-odds</h3>"
          "<p>log(p<sub>t</sub> / (1 &minus; p<sub>t</sub>)), p<sub>t</sub> = P(z<sub>t</sub> "
          "&isin; perturbation states | y<sub>&le;t</sub>) (the filtered posterior): blue "
          "where PROPS believes the user writes like themselves, red where like the "
          "reference corpus (infinite values are clipped for colouring only).</p>"
        + _legend(lim_odds, "reference-like", "user-specific")
        + _word_panel(words, unk, starts, odds, odds_titles, lim_odds)
        + "</section>")

    from .._version import __version__

    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    intro = (f"PROPS personalised the black box ({_esc(s['source']['description'])}) to the "
             f"first {n_p:,} words of <code>{_esc(s['target'])}</code> and was evaluated on the "
             f"next {n_e:,}, against a streaming HMM and the black box alone. Written by "
             f"hiddenstate {_esc(__version__)} on {_esc(stamp)}; the numbers are in "
             '<a href="summary.json">summary.json</a>.')
    doc = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           f"<title>{_esc(title)}</title><style>{_CSS}{_EXTRA_CSS}</style></head><body>"
           f"<h1>{_esc(title)}</h1><p>{intro}</p>" + "".join(parts) + "</body></html>\n")
    index = out / "index.html"
    index.write_text(doc, encoding="utf-8")
    return index

