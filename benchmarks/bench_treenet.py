"""TreeNet against pgmpy: (a) posterior marginals of every hidden variable of a tree of
106 variables for 10^4 patterns, against pgmpy's BeliefPropagation on the same network and
evidence; (b) one EM iteration on a small network with a latent variable, against pgmpy's
ExpectationMaximization from the same initial parameters. Target: >= 100x on both.

pgmpy is not a dependency of hiddenstate; run the benchmark with an interpreter that has it
(hiddenstate's own dependencies too), e.g.::

    python3.11 -m venv /work/venv-pgmpy
    /work/venv-pgmpy/bin/pip install pgmpy numpy numba scipy scikit-learn
    PYTHONPATH=src /work/venv-pgmpy/bin/python benchmarks/bench_treenet.py

Without pgmpy it times hiddenstate alone and says that the reference was skipped.
pgmpy answers one query (one variable, one pattern) at a time (asking for all hidden
variables at once makes it build their joint table), so it is timed on ``--pgmpy-patterns``
patterns and its time per pattern is scaled to the full batch (stated in the output); both
libraries' answers are compared on those patterns.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_time, cpu_name  # noqa: E402

import hiddenstate as hs  # noqa: E402

try:
    import pandas as pd
    from pgmpy.estimators import ExpectationMaximization
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.inference import BeliefPropagation
    from pgmpy.models import DiscreteBayesianNetwork
    HAVE_PGMPY = True
except ImportError:
    HAVE_PGMPY = False


def tree_spec(branching=5, depth=2, leaves=3, states=4, symbols=6):
    """Root -> ``branching`` children -> ... (``depth`` levels below the root); each bottom
    variable has ``leaves`` observed children."""
    n_states, edges, level = {"h": states}, [], ["h"]
    for _ in range(depth):
        nxt = []
        for p in level:
            for b in range(branching):
                name = f"{p}_{b}"
                n_states[name] = states
                edges.append((p, name))
                nxt.append(name)
        level = nxt
    observed = {}
    for p in level:
        for k in range(leaves):
            observed[f"x{p[1:]}_{k}"] = symbols
            edges.append((p, f"x{p[1:]}_{k}"))
    return {"n_states": n_states, "edges": edges, "observed": observed}


def random_net(spec, rng, conc=0.5):
    net = hs.TreeNet(**spec)
    s = net._structure()
    net.weights_ = {s.edge_name(e): rng.dirichlet(np.full(s.sizes[c], conc), size=s.sizes[p])
                    for e, (p, c) in enumerate(s.edges)}
    net.priors_ = {s.names[r]: rng.dirichlet(np.ones(s.sizes[r])) for r in s.roots}
    return net


def to_pgmpy(net, latents=()):
    model = DiscreteBayesianNetwork([tuple(e) for e in net.edges], latents=set(latents))
    parents = {c: p for p, c in net.edges}
    sizes = {**net.n_states, **net.observed}
    for v, k in sizes.items():
        if v in net.priors_:
            model.add_cpds(TabularCPD(v, k, net.priors_[v][:, None]))
        else:
            p = parents[v]
            model.add_cpds(TabularCPD(v, k, net.weights_[f"{p}->{v}"].T, evidence=[p],
                                      evidence_card=[sizes[p]]))
    return model


def bench_marginals(n_patterns, n_ref, repeats, rng):
    spec = tree_spec()
    net = random_net(spec, rng)
    X, _ = net.sample(n_patterns, random_state=1)
    n_vars = len(spec["n_states"]) + len(spec["observed"])
    t_hs, post = best_time(lambda: net.predict_proba(X), repeats)
    print(f"(a) posterior marginals, tree of {n_vars} variables ({len(spec['n_states'])} "
          f"hidden, 4 states; {len(spec['observed'])} observed, 6 symbols), "
          f"{n_patterns} patterns")
    print(f"    hiddenstate: {t_hs:.3f} s ({t_hs / n_patterns * 1e6:.1f} us per pattern)")
    if not HAVE_PGMPY:
        print("    pgmpy: not installed, reference skipped (see the module docstring)")
        return None
    bp = BeliefPropagation(to_pgmpy(net))
    hidden = list(spec["n_states"])
    obs = list(spec["observed"])
    diff = 0.0
    t0 = time.perf_counter()
    for i in range(n_ref):
        evidence = {o: int(X[i, j]) for j, o in enumerate(obs)}
        for v in hidden:  # one query per variable: a joint query of all 31 needs 4^31 cells
            res = bp.query([v], evidence=evidence, show_progress=False)
            diff = max(diff, float(np.abs(res.values - post[v][i]).max()))
    t_pg = (time.perf_counter() - t0) / n_ref
    print(f"    pgmpy BeliefPropagation: {t_pg * 1e3:.1f} ms per pattern (timed on {n_ref} "
          f"patterns), {t_pg * n_patterns:.1f} s for {n_patterns} scaled")
    print(f"    max |difference| of the marginals on those patterns: {diff:.2e}")
    speedup = t_pg * n_patterns / t_hs
    print(f"    speed-up: {speedup:.0f}x (target >= 100x)")
    return speedup


def bench_em(n_rows, repeats, rng):
    spec = {"n_states": {"H": 3}, "edges": [("H", f"x{i}") for i in range(5)],
            "observed": {f"x{i}": 4 for i in range(5)}}
    teacher = random_net(spec, rng, conc=0.3)
    X, _ = teacher.sample(n_rows, random_state=2)
    init = random_net(spec, rng, conc=1.0)

    def ours():
        net = hs.TreeNet(**spec, n_iter=1, warm_start=True)
        net.weights_, net.priors_ = dict(init.weights_), dict(init.priors_)
        return net.fit(X)

    t_hs, fitted = best_time(ours, repeats)
    print(f"(b) one EM iteration, latent H (3 states) -> 5 observed (4 symbols), {n_rows} rows")
    print(f"    hiddenstate: {t_hs * 1e3:.2f} ms")
    if not HAVE_PGMPY:
        print("    pgmpy: not installed, reference skipped (see the module docstring)")
        return None
    model = to_pgmpy(init, latents=("H",))
    data = pd.DataFrame(X, columns=list(spec["observed"]))
    init_cpds = {c.variable: c for c in model.get_cpds()}

    def theirs():
        est = ExpectationMaximization(model, data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return est.get_parameters(latent_card={"H": 3}, max_iter=1, init_cpds=init_cpds,
                                      show_progress=False, seed=0)

    t_pg, cpds = best_time(theirs, max(1, repeats // 2))
    by_var = {c.variable: c for c in cpds}
    diff = max(float(np.abs(by_var[f"x{i}"].get_values().T - fitted.weights_[f"H->x{i}"]).max())
               for i in range(5))
    print(f"    pgmpy ExpectationMaximization(max_iter=1): {t_pg * 1e3:.1f} ms")
    print(f"    max |difference| of the updated emission tables: {diff:.2e}")
    speedup = t_pg / t_hs
    print(f"    speed-up: {speedup:.0f}x (target >= 100x)")
    return speedup


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--patterns", type=int, default=10_000)
    ap.add_argument("--pgmpy-patterns", type=int, default=3)
    ap.add_argument("--em-rows", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    print(f"CPU: {cpu_name()}; hiddenstate {hs.__version__}"
          + (f"; pgmpy {__import__('pgmpy').__version__}" if HAVE_PGMPY else ""))
    rng = np.random.default_rng(0)
    bench_marginals(args.patterns, args.pgmpy_patterns, args.repeats, rng)
    bench_em(args.em_rows, args.repeats, rng)


if __name__ == "__main__":
    main()
