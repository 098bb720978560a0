"""trec_eval 10.0 breadth, second part: gains for ``Rndcg`` and ``rbp`` (and ``ndcg_rel``, ``G``),
``ndcg_rel``, ``G``, ``binG``, ``Rprec_mult``, ``relative_P``, ``set_relative_P``, ``set_map``,
``gm_bpref``, ``num_nonrel_judged_ret`` and ``utility``.

Three oracles: pytrec_eval (trec_eval's C code) for what it can take (it cannot take gains,
which abort it, nor utility's coefficients); a trec_eval 10.0 binary built from source, whose
printed values on the small files in tests/trec_more/ are recorded below; and a line-by-line
Python transcription of trec_eval 10.0's C loops on random runs. Plus hand-computed values.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from helpers.trec_measures import QRELS, RUN, _random_pair, _ranked
from queryeval.metrics.ranking import evaluate, parse_metric, parse_metrics, trec_eval_lines
from queryeval.suite.trec import evaluate_files

DATA = Path(__file__).parents[1] / "trec_more"

# ------------------------------------------------------------------------------ pytrec_eval

# ours -> (pytrec_eval measure, its key); several of our spellings on purpose
PYTREC_MORE = {
    "ndcg_rel": ("ndcg_rel", "ndcg_rel"),
    "G": ("G", "G"),
    "binG": ("binG", "binG"),
    "set_relative_P": ("set_relative_P", "set_relative_P"),
    "set_map": ("set_map", "set_map"),
    "gm_bpref": ("gm_bpref", "gm_bpref"),
    "num_nonrel_judged_ret": ("num_nonrel_judged_ret", "num_nonrel_judged_ret"),
    "utility": ("utility", "utility"),
    "map@5": ("map_cut", "map_cut_5"),
    "map_cut_100": ("map_cut", "map_cut_100"),
    "relative_P@5": ("relative_P", "relative_P_5"),
    "relative_P_15": ("relative_P", "relative_P_15"),
    "relative_P.3": ("relative_P.3,7", "relative_P_3"),
    "relative_P@7": ("relative_P.3,7", "relative_P_7"),
    **{f"Rprec_mult_{x / 5:.2f}": ("Rprec_mult", f"Rprec_mult_{x / 5:.2f}") for x in range(1, 11)},
    "Rprec_mult@0.33": ("Rprec_mult.0.33,1.5,3", "Rprec_mult_0.33"),
    "Rprec_mult.1.5": ("Rprec_mult.0.33,1.5,3", "Rprec_mult_1.50"),
    "Rprec_mult_3": ("Rprec_mult.0.33,1.5,3", "Rprec_mult_3.00"),
}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("level", "judged_only"), [(1, False), (2, False), (1, True), (2, True)])
def test_equal_to_pytrec_eval(seed: int, level: int, judged_only: bool) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = _random_pair(seed + 20)
    res = evaluate(qrels, run, list(PYTREC_MORE), per_query=True, missing_query="skip",
                   relevance_level=level, judged_only=judged_only)
    ref: dict[str, dict[str, dict[str, float]]] = {}
    for measure in {m for m, _ in PYTREC_MORE.values()}:  # one evaluator each (see the other file)
        ref[measure] = pytrec_eval.RelevanceEvaluator(
            qrels, {measure}, relevance_level=level, judged_docs_only_flag=judged_only
        ).evaluate(run)
    for ours, (measure, key) in PYTREC_MORE.items():
        assert res.qids == sorted(ref[measure])
        want = [ref[measure][q][key] for q in res.qids]
        np.testing.assert_allclose(res.per_query[ours], want, rtol=0, atol=1e-12, err_msg=ours)


# ------------------------------------------------------------- the trec_eval 10.0 binary
# Built from usnistgov/trec_eval at f425365 ("Updating CHANGELOG for version 10.0"): `git
# archive HEAD | tar -x -C /tmp/trec_eval && make -C /tmp/trec_eval` (gcc, its Makefile's
# flags), then from the repository root, for each key (OPTION, MEASURE) below:
#     /tmp/trec_eval/trec_eval -q [OPTION] -m MEASURE \
#         tests/trec_more/qrels.txt tests/trec_more/run.txt
# Values are trec_eval's printed ones, per printed name; "-nan" is printed where trec_eval
# divides 0 by 0 (Rndcg with no positive gain for a query that has a relevant judgement).
TREC_EVAL_OUT = {
    ('', 'Rndcg', 'Rndcg'):
        'q0=0.5311 q1=0.2269 q10=0.1186 q11=0.3863 q2=0.2281 q3=0.1934 q4=0.0000 q5=0.2281 '
        'q6=0.0000 q7=0.0000 q8=0.0759 all=0.1808',
    ('', 'Rndcg.1=3,2=9', 'Rndcg_1=3,2=9'):
        'q0=0.3362 q1=0.2269 q10=0.1186 q11=0.3807 q2=0.3649 q3=0.1934 q4=0.0000 q5=0.3028 '
        'q6=0.0000 q7=0.0000 q8=0.0420 all=0.1787',
    ('', 'Rndcg.0=1,1=2,3=-1', 'Rndcg_0=1,1=2,3=-1'):
        'q0=0.1049 q1=0.4624 q10=0.1209 q11=0.5868 q2=0.5419 q3=0.1934 q4=0.0000 q5=0.4163 '
        'q6=0.0000 q7=0.0000 q8=-0.0673 all=0.2145',
    ('', 'Rndcg.2=0,3=10', 'Rndcg_2=0,3=10'):
        'q0=0.5494 q1=0.2269 q10=0.1186 q11=0.2223 q2=0.1373 q3=-nan q4=0.0000 q5=0.1369 '
        'q6=0.0000 q7=0.0000 q8=0.1978 all=-nan',
    ('', 'Rndcg.1=-1,2=-2,3=-3', 'Rndcg_1=-1,2=-2,3=-3'):
        'q0=-nan q1=-nan q10=-nan q11=-nan q2=-nan q3=-nan q4=-nan q5=-nan q6=0.0000 '
        'q7=0.0000 q8=-nan all=-nan',
    ('', 'rbp.p=0.8,1=3,2=9', 'rbp_p=0.8,1=3,2=9'):
        'q0=0.2245 q1=0.0453 q10=0.0273 q11=0.1558 q2=0.1197 q3=0.0819 q4=0.0000 q5=0.1872 '
        'q6=0.0000 q7=0.0000 q8=0.0427 all=0.0804',
    ('', 'rbp.0=-1', 'rbp_0=-1'):
        'q0=0.2791 q1=0.1159 q10=0.0656 q11=0.1724 q2=0.1853 q3=0.0656 q4=0.0000 q5=0.1741 '
        'q6=0.0000 q7=0.0000 q8=0.0810 all=0.1035',
    ('', 'rbp.0=1,1=2', 'rbp_0=1,1=2'):
        'q0=0.2986 q1=0.2877 q10=0.1061 q11=0.2139 q2=0.2718 q3=0.0656 q4=0.0000 q5=0.1919 '
        'q6=0.0000 q7=0.0814 q8=0.0810 all=0.1453',
    ('', 'rbp.1=-2,2=-1,3=-0.5', 'rbp_1=-2,2=-1,3=-0.5'):
        'q0=0.2157 q1=0.3435 q10=0.0810 q11=0.0359 q2=0.2392 q3=0.0328 q4=0.0000 q5=0.0723 '
        'q6=0.0000 q7=0.1629 q8=0.0607 all=0.1131',
    ('', 'rbp.5=10', 'rbp_5=10'):
        'q0=0.0772 q1=0.0116 q10=0.0066 q11=0.0393 q2=0.0455 q3=0.0131 q4=0.0000 q5=0.0432 '
        'q6=0.0000 q7=0.0000 q8=0.0243 all=0.0237',
    ('', 'ndcg_rel', 'ndcg_rel'):
        'q0=0.5433 q1=0.2563 q10=0.2372 q11=0.4222 q2=0.3380 q3=0.3869 q4=0.0000 q5=0.3513 '
        'q6=0.0000 q7=0.0000 q8=0.2387 all=0.2522',
    ('', 'ndcg_rel.1=3,2=9', 'ndcg_rel_1=3,2=9'):
        'q0=0.3576 q1=0.2563 q10=0.2372 q11=0.4099 q2=0.3757 q3=0.3869 q4=0.0000 q5=0.4181 '
        'q6=0.0000 q7=0.0000 q8=0.0886 all=0.2300',
    ('', 'ndcg_rel.0=1,1=2,3=-1', 'ndcg_rel_0=1,1=2,3=-1'):
        'q0=0.1857 q1=0.4246 q10=0.2314 q11=0.7830 q2=0.6259 q3=0.3869 q4=0.0000 q5=0.4412 '
        'q6=0.0000 q7=0.3477 q8=0.0000 all=0.3115',
    ('', 'ndcg_rel.1=-1,2=-2,3=-3', 'ndcg_rel_1=-1,2=-2,3=-3'):
        'q0=0.0000 q1=0.0000 q10=0.0000 q11=0.0000 q2=0.0000 q3=0.0000 q4=0.0000 q5=0.0000 '
        'q6=0.0000 q7=0.0000 q8=0.0000 all=0.0000',
    ('', 'G', 'G'):
        'q0=0.3543 q1=0.1865 q10=0.1934 q11=0.2592 q2=0.2306 q3=0.3869 q4=0.0000 q5=0.3318 '
        'q6=0.0000 q7=0.0000 q8=0.1175 all=0.1873',
    ('', 'G.1=5,2=7', 'G_1=5,2=7'):
        'q0=0.1848 q1=0.1223 q10=0.1505 q11=0.2324 q2=0.2646 q3=0.3869 q4=0.0000 q5=0.2331 '
        'q6=0.0000 q7=0.0000 q8=0.0187 all=0.1449',
    ('', 'G.0=1,1=2,3=-1', 'G_0=1,1=2,3=-1'):
        'q0=0.1234 q1=0.2688 q10=0.1290 q11=0.4411 q2=0.3980 q3=0.3869 q4=0.0000 q5=0.2412 '
        'q6=0.0000 q7=0.1885 q8=-0.0210 all=0.1960',
    ('', 'utility.2,-1,-0.5,0.25', 'utility_2,-1,-0.5,0.25'):
        'q0=1.0000 q1=-6.7500 q10=-5.2500 q11=0.5000 q2=-0.2500 q3=-14.5000 q4=-4.0000 '
        'q5=-3.7500 q6=-3.7500 q7=-8.7500 q8=-6.0000 all=-4.6818',
    ('', 'Rprec_mult.0.33,2.5', 'Rprec_mult_0.33'):
        'q0=0.6667 q1=0.0000 q10=0.0000 q11=1.0000 q2=0.3333 q3=0.0000 q4=0.0000 q5=0.5000 '
        'q6=0.0000 q7=0.0000 q8=0.3333 all=0.2576',
    ('', 'Rprec_mult.0.33,2.5', 'Rprec_mult_2.50'):
        'q0=0.2778 q1=0.2000 q10=0.2000 q11=0.2667 q2=0.3333 q3=0.0000 q4=0.0000 q5=0.3077 '
        'q6=0.0000 q7=0.0000 q8=0.0500 all=0.1487',
    ('', 'relative_P.3,7', 'relative_P_3'):
        'q0=0.6667 q1=0.0000 q10=0.0000 q11=0.6667 q2=0.3333 q3=0.0000 q4=0.0000 q5=0.3333 '
        'q6=0.0000 q7=0.0000 q8=0.3333 all=0.2121',
    ('', 'relative_P.3,7', 'relative_P_7'):
        'q0=0.5714 q1=0.2500 q10=0.5000 q11=0.5000 q2=0.2857 q3=1.0000 q4=0.0000 q5=0.6000 '
        'q6=0.0000 q7=0.0000 q8=0.1429 all=0.3500',
    ('', 'binG', 'binG'):
        'q0=0.3934 q1=0.1865 q10=0.1934 q11=0.4696 q2=0.3740 q3=0.3869 q4=0.0000 q5=0.3809 '
        'q6=0.0000 q7=0.0000 q8=0.0625 all=0.2225',
    ('', 'set_map', 'set_map'):
        'q0=0.3571 q1=0.1111 q10=0.0833 q11=0.3333 q2=0.3673 q3=0.0714 q4=0.0000 q5=0.2667 '
        'q6=0.0000 q7=0.0000 q8=0.0417 all=0.1484',
    ('', 'set_relative_P', 'set_relative_P'):
        'q0=0.7143 q1=0.5000 q10=0.5000 q11=0.6667 q2=0.8571 q3=1.0000 q4=0.0000 q5=0.8000 '
        'q6=0.0000 q7=0.0000 q8=0.3333 all=0.4883',
    ('', 'num_nonrel_judged_ret', 'num_nonrel_judged_ret'):
        'q0=1 q1=5 q10=1 q11=0 q2=3 q3=0 q4=0 q5=0 q6=0 q7=2 q8=0 all=12',
    ('', 'gm_bpref', 'gm_bpref'):
        'all=0.0206',
    ('', '11pt_avg.0.2,0.5,0.8', '11pt_avg_0.2,0.5,0.8'):
        'q0=0.4583 q1=0.1574 q10=0.1333 q11=0.5000 q2=0.6410 q3=0.2000 q4=0.0000 q5=0.5000 '
        'q6=0.0000 q7=0.0000 q8=0.0000 all=0.2355',
    ('', '11pt_avg.0,.35,.35,1', '11pt_avg_0,.35,.35,1'):
        'q0=0.5625 q1=0.1875 q10=0.1500 q11=0.7500 q2=0.4808 q3=0.2000 q4=0.0000 q5=0.3750 '
        'q6=0.0000 q7=0.0000 q8=0.0833 all=0.2536',
    ('-l2', 'Rndcg.1=3,2=9', 'Rndcg_1=3,2=9'):
        'q0=0.3362 q1=0.0000 q10=0.0000 q11=0.3807 q2=0.3649 q3=0.1934 q4=0.0000 q5=0.3028 '
        'q6=0.0000 q7=0.0000 q8=0.0420 all=0.1473',
    ('-l2', 'utility.2,-1,-0.5,0.25', 'utility_2,-1,-0.5,0.25'):
        'q0=-0.5000 q1=-11.2500 q10=-7.5000 q11=-7.7500 q2=-9.2500 q3=-14.5000 q4=-4.0000 '
        'q5=-9.0000 q6=-3.7500 q7=-8.7500 q8=-1.5000 all=-7.0682',
    ('-l2', 'Rprec_mult.0.33,2.5', 'Rprec_mult_0.33'):
        'q0=0.5000 q1=0.0000 q10=0.0000 q11=0.0000 q2=0.0000 q3=0.0000 q4=0.0000 q5=0.0000 '
        'q6=0.0000 q7=0.0000 q8=0.0000 all=0.0455',
    ('-l2', 'Rprec_mult.0.33,2.5', 'Rprec_mult_2.50'):
        'q0=0.4000 q1=0.0000 q10=0.0000 q11=0.0000 q2=0.1000 q3=0.0000 q4=0.0000 q5=0.2000 '
        'q6=0.0000 q7=0.0000 q8=0.2000 all=0.0818',
    ('-l2', 'relative_P.3,7', 'relative_P_3'):
        'q0=0.3333 q1=0.0000 q10=0.0000 q11=0.0000 q2=0.0000 q3=0.0000 q4=0.0000 q5=0.0000 '
        'q6=0.0000 q7=0.0000 q8=0.5000 all=0.0758',
    ('-l2', 'relative_P.3,7', 'relative_P_7'):
        'q0=0.7500 q1=0.0000 q10=0.0000 q11=0.0000 q2=0.0000 q3=1.0000 q4=0.0000 q5=0.5000 '
        'q6=0.0000 q7=0.0000 q8=0.5000 all=0.2500',
    ('-l2', 'binG', 'binG'):
        'q0=0.4762 q1=0.0000 q10=0.0000 q11=0.1577 q2=0.2117 q3=0.3869 q4=0.0000 q5=0.3820 '
        'q6=0.0000 q7=0.0000 q8=0.2500 all=0.1695',
    ('-l2', 'set_map', 'set_map'):
        'q0=0.4000 q1=0.0000 q10=0.0000 q11=0.0625 q2=0.1607 q3=0.0714 q4=0.0000 q5=0.1667 '
        'q6=0.0000 q7=0.0000 q8=0.1667 all=0.0935',
    ('-l2', 'set_relative_P', 'set_relative_P'):
        'q0=1.0000 q1=0.0000 q10=0.0000 q11=0.5000 q2=0.7500 q3=1.0000 q4=0.0000 q5=1.0000 '
        'q6=0.0000 q7=0.0000 q8=0.5000 all=0.4318',
    ('-l2', 'num_nonrel_judged_ret', 'num_nonrel_judged_ret'):
        'q0=2 q1=7 q10=2 q11=3 q2=6 q3=0 q4=0 q5=2 q6=0 q7=2 q8=0 all=24',
    ('-l2', 'gm_bpref', 'gm_bpref'):
        'all=0.0005',
    ('-l2', '11pt_avg.0.2,0.5,0.8', '11pt_avg_0.2,0.5,0.8'):
        'q0=0.5000 q1=0.0000 q10=0.0000 q11=0.0833 q2=0.2308 q3=0.2000 q4=0.0000 q5=0.2500 '
        'q6=0.0000 q7=0.0000 q8=0.2222 all=0.1351',
    ('-J', 'Rndcg.1=3,2=9', 'Rndcg_1=3,2=9'):
        'q0=0.4988 q1=0.2603 q10=0.3869 q11=0.4081 q2=0.4339 q3=1.0000 q4=0.0000 q5=0.5530 '
        'q6=0.0000 q7=0.0000 q8=0.2507 all=0.3447',
    ('-J', 'rbp.p=0.8,1=3,2=9', 'rbp_p=0.8,1=3,2=9'):
        'q0=0.3470 q1=0.0601 q10=0.0533 q11=0.1968 q2=0.1877 q3=0.2000 q4=0.0000 q5=0.3035 '
        'q6=0.0000 q7=0.0000 q8=0.0667 all=0.1286',
    ('-J', 'ndcg_rel.1=3,2=9', 'ndcg_rel_1=3,2=9'):
        'q0=0.5309 q1=0.3026 q10=0.3869 q11=0.4710 q2=0.4252 q3=1.0000 q4=0.0000 q5=0.7124 '
        'q6=0.0000 q7=0.0000 q8=0.1886 all=0.3652',
    ('-J', 'G.1=5,2=7', 'G_1=5,2=7'):
        'q0=0.2506 q1=0.1337 q10=0.1781 q11=0.2887 q2=0.2946 q3=1.0000 q4=0.0000 q5=0.6400 '
        'q6=0.0000 q7=0.0000 q8=0.0290 all=0.2559',
    ('-J', 'binG', 'binG'):
        'q0=0.7143 q1=0.2141 q10=0.3155 q11=0.6667 q2=0.4604 q3=1.0000 q4=0.0000 q5=0.8000 '
        'q6=0.0000 q7=0.0000 q8=0.1250 all=0.3905',
    ('-J', 'Rprec_mult.0.33,2.5', 'Rprec_mult_0.33'):
        'q0=1.0000 q1=0.0000 q10=0.0000 q11=1.0000 q2=0.3333 q3=1.0000 q4=0.0000 q5=1.0000 '
        'q6=0.0000 q7=0.0000 q8=0.3333 all=0.4242',
    ('-J', 'Rprec_mult.0.33,2.5', 'Rprec_mult_2.50'):
        'q0=0.2778 q1=0.2000 q10=0.2000 q11=0.2667 q2=0.3333 q3=0.3333 q4=0.0000 q5=0.3077 '
        'q6=0.0000 q7=0.0000 q8=0.0500 all=0.1790',
    ('-J', 'relative_P.3,7', 'relative_P_3'):
        'q0=1.0000 q1=0.3333 q10=0.5000 q11=1.0000 q2=0.3333 q3=1.0000 q4=0.0000 q5=1.0000 '
        'q6=0.0000 q7=0.0000 q8=0.3333 all=0.5000',
    ('-J', 'relative_P.3,7', 'relative_P_7'):
        'q0=0.7143 q1=0.5000 q10=0.5000 q11=0.6667 q2=0.5714 q3=1.0000 q4=0.0000 q5=0.8000 '
        'q6=0.0000 q7=0.0000 q8=0.1429 all=0.4450',
    ('-J', 'num_nonrel_judged_ret', 'num_nonrel_judged_ret'):
        'q0=1 q1=5 q10=1 q11=0 q2=3 q3=0 q4=0 q5=0 q6=0 q7=2 q8=0 all=12',
    ('-J', '11pt_avg.0.2,0.5,0.8', '11pt_avg_0.2,0.5,0.8'):
        'q0=0.6667 q1=0.2063 q10=0.3333 q11=0.6667 q2=0.7778 q3=1.0000 q4=-nan q5=1.0000 '
        'q6=-nan q7=0.0000 q8=0.0000 all=-nan',
}


@pytest.mark.parametrize(("option", "measure", "printed"), sorted(TREC_EVAL_OUT))
def test_equal_to_trec_eval_binary(option: str, measure: str, printed: str) -> None:
    """Our value for trec_eval's printed name (which we accept as a spelling), per query and
    on ``all``, to the 4 printed decimals. Where trec_eval prints -nan we score 0 (its -nan
    then spoils its mean, which we do not compare)."""
    want = dict(item.split("=", 1) for item in TREC_EVAL_OUT[(option, measure, printed)].split())
    res = evaluate_files(DATA / "qrels.txt", DATA / "run.txt", [printed], per_query=True,
                         missing_query="skip", relevance_level=2 if option == "-l2" else 1,
                         judged_only=option == "-J")
    spec = parse_metric(printed)
    nan_seen = False
    for qid, text in want.items():
        if qid == "all":
            continue
        got = res.query(qid)[printed]
        if text.endswith("nan"):
            nan_seen = True
            assert got == 0.0, (qid, got)
        elif spec.aggregate == "sum":
            assert got == int(text), (qid, got, text)
        else:
            assert f"{got:6.4f}" == text.rjust(6), (qid, got, text)
    got = res.means[printed]
    if not nan_seen:
        assert (str(int(got)) if spec.aggregate == "sum" else f"{got:6.4f}") == want["all"]
    if spec.aggregate != "gm":
        assert set(want) - {"all"} == set(res.qids)  # every query printed (not gm_bpref)


# ------------------------------------------------------- transcription of trec_eval 10.0

def _gain_table(qrels_q: dict[str, int], gains: dict[int, float]):
    """setup_gains (gain_init.c): named levels first, then levels 0..max_rel not named, with
    their judgement counts; sorted by gain ascending (exactly; see docs/ranking.md)."""
    top = max(qrels_q.values(), default=-1)
    counts = [sum(1 for r in qrels_q.values() if r == lvl) for lvl in range(max(top + 1, 0))]
    table = [[lvl, g, counts[lvl] if lvl <= top else 0] for lvl, g in gains.items()]
    table += [[lvl, float(lvl), counts[lvl]] for lvl in range(top + 1) if lvl not in gains]
    table.sort(key=lambda row: row[1])
    return table


def _get_gain(rel: int, table) -> float:
    return next((g for lvl, g, _ in table if lvl == rel), 0.0)


def _oracle_more(qrels_q, run_q, measure: str, arg, level: int, judged_only: bool) -> float:
    rels = _ranked(qrels_q, run_q, judged_only)
    num_ret = len(rels)
    num_rel = sum(1 for r in qrels_q.values() if r >= level)
    num_rel_ret = sum(1 for r in rels if r >= level)
    nan = float("nan")
    if measure == "utility":  # m_utility.c, -N 0
        a, b, c, d = arg
        return (a * num_rel_ret + b * (num_ret - num_rel_ret) + c * (num_rel - num_rel_ret)
                + d * (0 + num_rel_ret - num_ret - num_rel))
    if measure == "rbp":  # m_rbp.c; min and max start at 0 (see _gains.table_range)
        p, gains = arg
        table = _gain_table(qrels_q, gains)
        lo = min([0.0] + [g for _, g, _ in table])
        hi = max([0.0] + [g for _, g, _ in table])
        if lo < 0 or hi > 1:
            table = [[lvl, (g - lo) / (hi - lo), n] for lvl, g, n in table]
        total, cur = 0.0, 1.0
        for r in rels:
            total += _get_gain(r, table) * cur
            cur *= p
        return (1 - p) * total
    table = _gain_table(qrels_q, arg or {})
    cur = len(table) - 1
    ideal_gain = table[cur][1] if cur >= 0 else 0.0
    at_level = 0

    def step() -> None:  # the ideal walk shared by m_Rndcg.c, m_ndcg_rel.c and m_G.c
        nonlocal cur, ideal_gain, at_level
        at_level += 1
        while cur >= 0 and at_level > table[cur][2]:
            at_level = 1
            cur -= 1
            ideal_gain = table[cur][1] if cur >= 0 else 0.0

    i = 0
    if measure == "Rndcg":
        dcg = idcg = total = 0.0
        n_terms = 0
        old = ideal_gain
        if num_rel == 0:
            return 0.0
        while i < num_ret and ideal_gain > 0:
            g = _get_gain(rels[i], table)
            step()
            if old != ideal_gain:
                if idcg > 0:
                    total += dcg / idcg
                    n_terms += 1
                old = ideal_gain
            dcg += g / math.log2(i + 2)
            if ideal_gain > 0:
                idcg += ideal_gain / math.log2(i + 2)
            i += 1
        if i < num_ret:
            while i < num_ret:
                dcg += _get_gain(rels[i], table) / math.log2(i + 2)
                i += 1
            if idcg > 0:
                total += dcg / idcg
                n_terms += 1
        while ideal_gain > 0:
            step()
            if old != ideal_gain:
                if idcg > 0:
                    total += dcg / idcg
                    n_terms += 1
                old = ideal_gain
            if ideal_gain > 0:
                idcg += ideal_gain / math.log2(i + 2)
            i += 1
        return total / n_terms if n_terms else nan
    if measure == "ndcg_rel":
        dcg = idcg = total = 0.0
        n_ideal = n_found = 0
        while i < num_ret and ideal_gain > 0:
            g = _get_gain(rels[i], table)
            dcg += g / math.log2(i + 2)
            step()
            if ideal_gain > 0:
                n_ideal += 1
                idcg += ideal_gain / math.log2(i + 2)
            if g > 0:
                total += dcg / idcg
                n_found += 1
            i += 1
        while i < num_ret:
            g = _get_gain(rels[i], table)
            dcg += g / math.log2(i + 2)
            if g > 0:
                total += dcg / idcg
                n_found += 1
            i += 1
        while ideal_gain > 0:
            step()
            if ideal_gain > 0:
                n_ideal += 1
                idcg += ideal_gain / math.log2(i + 2)
            i += 1
        total += (n_ideal - n_found) * dcg / idcg if idcg > 0 else nan
        return total / n_ideal if total > 0 else 0.0
    if measure == "G":
        got = s_res = s_ideal = s_cost = 0.0
        while i < num_ret and ideal_gain > 0:
            g = _get_gain(rels[i], table)
            s_res += g
            step()
            if ideal_gain > 0:
                s_ideal += ideal_gain
            s_cost += ideal_gain if ideal_gain >= 1.0 else 1.0
            if g != 0:
                got += g / math.log2(2 + s_cost - s_res)
            i += 1
        while i < num_ret:
            g = _get_gain(rels[i], table)
            s_res += g
            s_cost += 1.0
            if g != 0:
                got += g / math.log2(2 + s_cost - s_res)
            i += 1
        while ideal_gain > 0:
            step()
            if ideal_gain > 0:
                s_ideal += ideal_gain
        return got / s_ideal if s_ideal > 0 else 0.0
    raise AssertionError(measure)


GAIN_SPECS = ["", "1=3,2=9", "0=1,1=2,3=-1", "2=0,3=10", "1=5,2=7", "1=-1,2=-2,3=-3", "6=4"]


def _gains(spec: str) -> dict[int, float]:
    return {int(a): float(b) for a, b in (p.split("=") for p in spec.split(","))} if spec else {}


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize(("level", "judged_only"), [(1, False), (2, True), (0, False)])
@pytest.mark.parametrize("measure", ["Rndcg", "ndcg_rel", "G"])
def test_gain_measures_equal_the_transcription(seed, level, judged_only, measure) -> None:
    qrels, run = _random_pair(seed + 30)
    names = [f"{measure}.{s}" if s else measure for s in GAIN_SPECS]
    res = evaluate(qrels, run, names, per_query=True, relevance_level=level,
                   judged_only=judged_only)
    for name, spec in zip(names, GAIN_SPECS, strict=True):
        want = [_oracle_more(qrels[q], run.get(q, {}), measure, _gains(spec), level, judged_only)
                for q in res.qids]
        want = np.nan_to_num(want, nan=0.0)  # trec_eval's 0/0 (Rndcg): we score 0
        np.testing.assert_allclose(res.per_query[name], want, rtol=0, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("judged_only", [False, True])
def test_rbp_gains_equal_the_transcription(seed: int, judged_only: bool) -> None:
    qrels, run = _random_pair(seed + 40)
    cases = {f"rbp.{s}": (0.9, _gains(s)) for s in GAIN_SPECS if s}
    cases.update({"rbp.p=0.8,1=3,2=9": (0.8, {1: 3.0, 2: 9.0}),
                  "rbp_0=1,1=2,p=0.5": (0.5, {0: 1.0, 1: 2.0}),
                  "rbp.0=0.5,1=0.7,2=0.8,3=0.9": (0.9, {0: 0.5, 1: 0.7, 2: 0.8, 3: 0.9}),
                  "rbp.p=0.7": (0.7, {})})
    res = evaluate(qrels, run, list(cases), per_query=True, judged_only=judged_only)
    for name, arg in cases.items():
        want = [_oracle_more(qrels[q], run.get(q, {}), "rbp", arg, 1, judged_only)
                for q in res.qids]
        np.testing.assert_allclose(res.per_query[name], want, rtol=0, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("level", [1, 2])
def test_utility_equals_the_transcription(level: int) -> None:
    qrels, run = _random_pair(50)
    cases = {"utility": (1, -1, 0, 0), "utility.2,-1,-0.5,0.25": (2, -1, -0.5, 0.25),
             "utility_0,0,0,1": (0, 0, 0, 1)}
    res = evaluate(qrels, run, list(cases), per_query=True, relevance_level=level)
    for name, arg in cases.items():
        want = [_oracle_more(qrels[q], run.get(q, {}), "utility", arg, level, False)
                for q in res.qids]
        np.testing.assert_allclose(res.per_query[name], want, rtol=0, atol=1e-12, err_msg=name)


# ---------------------------------------------------------------------- by hand
# QRELS/RUN of test_trec_measures: ranking d (judged -1), c (0), e (not judged), b (2), a (1);
# f (1) is not retrieved. num_rel 3, num_ret 5, num_rel_ret 2.
L3, L5, L6 = math.log2(3), math.log2(5), math.log2(6)


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("set_map", 2 * 2 / (5 * 3)),
        ("set_relative_P", 2 / 3),  # 2 / min(5, 3)
        ("utility", 2 - 3),
        ("utility.2,-1,-0.5,0.25", 2 * 2 - 3 - 0.5 * 1 + 0.25 * (0 + 2 - 5 - 3)),
        ("relative_P@3", 0.0), ("relative_P@4", 1 / 3), ("relative_P_2", 0.0),
        ("relative_P.10", 2 / 3),
        ("Rprec_mult_0.50", 0.0),  # c = (long)(1.5 + 0.9) = 2: top 2 is d, c
        ("Rprec_mult_1.20", 1 / 4),  # c = (long)(3.6 + 0.9) = 4
        ("Rprec_mult.1.5", 2 / 5),  # c = 5
        ("Rprec_mult@3", 2 / 9),  # c = 9 > num_ret: num_rel_ret / 9
        ("Rprec_mult_0", 0.0),  # c = 0
        ("binG", (1 / L5 + 1 / L5) / 3),  # b and a each have 3 non-relevant above
        ("num_nonrel_judged_ret", 1),  # c
        ("gm_bpref", 1e-5),  # bpref 0, floored
        # ndcg_rel: ideal b (2), a (1), f (1). b at rank 4: DCG@4 / IDCG@3; a at rank 5:
        # DCG@5 / IDCG@3; f not retrieved: DCG(all) / IDCG@3. Over 3.
        ("ndcg_rel", ((2 / L5) + 2 * (2 / L5 + 1 / L6)) / (2 + 1 / L3 + 1 / 2) / 3),
        # G: ideal gains 2, 1, 1, costs 2, 1, 1, then 1 each. b (g 2) at rank 4: S = 2,
        # C = 5; a (g 1) at rank 5: S = 3, C = 6. Over the ideal total 4.
        ("G", (2 / math.log2(2 + 5 - 2) + 1 / math.log2(2 + 6 - 3)) / 4),
        ("G.2=5", (5 / math.log2(2 + 8 - 5) + 1 / math.log2(2 + 9 - 6)) / 7),
        # Rndcg.1=3,2=9: ideal b (9), a (3), f (3): R levels 1 and 3, both nDCG 0 (the top 3
        # gain nothing); 5 retrieved >= 3 + 2: plus DCG(all) / IDCG@3.
        ("Rndcg.1=3,2=9", (9 / L5 + 3 / L6) / (9 + 3 / L3 + 3 / 2) / 3),
        ("Rndcg_1=3,2=9", (9 / L5 + 3 / L6) / (9 + 3 / L3 + 3 / 2) / 3),
        # rbp, table gains 0, 3, 9 -> over 9: b 1 at i=3, a 1/3 at i=4
        ("rbp.p=0.5,1=3,2=9", 0.5 * (0.5**3 + (1 / 3) * 0.5**4)),
        # table gains 1, 2, 2 -> over 2: c (level 0) 1/2 at i=1, b 1 at i=3, a 1 at i=4
        ("rbp.p=0.5,0=1,1=2", 0.5 * (0.5 * 0.5 + 0.5**3 + 0.5**4)),
        # table gains -1, 1, 2 -> (g + 1) / 3: c 0, b 1, a 2/3; d (pooled, unjudged) 0
        ("rbp.p=0.5,0=-1", 0.5 * (0.5**3 + (2 / 3) * 0.5**4)),
        # iprec at 0: best precision 2/5 (a at rank 5); at 1: lround(3) = 3 > 2 found: 0
        ("11pt_avg.0,1", (2 / 5 + 0) / 2),
        ("11pt_avg.0.5", 2 / 5),  # lround(1.5) = 2: max over hits n >= 2 of n / rank_n
    ],
)
def test_hand_computed(metric: str, expected: float) -> None:
    assert evaluate(QRELS, RUN, [metric])[metric] == pytest.approx(expected, abs=1e-12)


def test_relevance_level_and_judged_only_by_hand() -> None:
    # -l 2: b alone is relevant (num_rel 1); a (1) and c (0) are judged non-relevant.
    res = evaluate(QRELS, RUN, ["num_nonrel_judged_ret", "binG", "relative_P@4", "set_map",
                                "Rndcg.1=3,2=9", "G"], relevance_level=2)
    assert res["num_nonrel_judged_ret"] == 2
    assert res["binG"] == pytest.approx(1 / L5)  # b: 3 non-relevant above
    assert res["relative_P@4"] == 1.0  # 1 / min(4, 1)
    assert res["set_map"] == pytest.approx(1 / 5)
    # gains ignore -l: Rndcg and G as at -l 1
    same = evaluate(QRELS, RUN, ["Rndcg.1=3,2=9", "G"])
    assert res["Rndcg.1=3,2=9"] == same["Rndcg.1=3,2=9"] and res["G"] == same["G"]
    # -J: ranking c, b, a. binG: b and a each have 1 non-relevant above; G: b (2) at rank 2
    # S 2, C 3; a (1) at rank 3 S 3, C 4.
    res = evaluate(QRELS, RUN, ["binG", "G", "Rprec_mult_1.00"], judged_only=True)
    assert res["binG"] == pytest.approx((1 / L3 + 1 / L3) / 3)
    assert res["G"] == pytest.approx((2 / math.log2(3) + 1 / math.log2(3)) / 4)
    assert res["Rprec_mult_1.00"] == pytest.approx(2 / 3)  # c = (long)(3.9) = 3


def test_no_positive_gain_scores_zero_where_trec_eval_divides_by_zero() -> None:
    """Rndcg with every gain <= 0 and a relevant judgement: trec_eval computes 0/0 (prints
    -nan, tests/trec_more above); we score 0 so that means stay numbers."""
    res = evaluate(QRELS, RUN, ["Rndcg.1=0,2=-1", "ndcg_rel.1=0,2=-1", "G.1=0,2=-1"])
    assert dict(res) == {"Rndcg.1=0,2=-1": 0.0, "ndcg_rel.1=0,2=-1": 0.0, "G.1=0,2=-1": 0.0}


# ---------------------------------------------------------------------- names and output

@pytest.mark.parametrize(
    ("name", "measure", "k", "param", "gains", "coeffs"),
    [
        ("Rndcg.1=3,2=9", "rndcg", None, None, ((1, 3.0), (2, 9.0)), None),
        ("Rndcg_0=-1.5", "rndcg", None, None, ((0, -1.5),), None),
        ("rbp.p=0.8,1=3", "rbp", None, 0.8, ((1, 3.0),), None),
        ("rbp_1=3", "rbp", None, 0.9, ((1, 3.0),), None),
        ("rbp.p=0.8", "rbp", None, 0.8, None, None),
        ("ndcg_rel.2=4", "ndcg_rel", None, None, ((2, 4.0),), None),
        ("G.1=2", "g", None, None, ((1, 2.0),), None),
        ("binG", "bing", None, None, None, None),
        ("utility", "utility", None, None, None, (1.0, -1.0, 0.0, 0.0)),
        ("utility.2,-1,-0.5,0.25", "utility", None, None, None, (2.0, -1.0, -0.5, 0.25)),
        ("Rprec_mult_0.20", "rprec_mult", None, 0.2, None, None),
        ("relative_P@10", "relative_p", 10, None, None, None),
        ("relative_P_5", "relative_p", 5, None, None, None),
        ("set_relative_P", "set_relative_p", None, None, None, None),
        ("gm_bpref", "gm_bpref", None, None, None, None),
        ("11pt_avg_.25,.5,.75", "11pt_avg", None, None, None, (0.25, 0.5, 0.75)),
        ("11pt_avg.0.5", "11pt_avg", None, None, None, (0.5,)),
        ("11pt_avg", "11pt_avg", None, None, None, None),
    ],
)
def test_spellings(name, measure, k, param, gains, coeffs) -> None:
    spec = parse_metric(name)
    assert (spec.measure, spec.k, spec.param, spec.gains, spec.coeffs) == (
        measure, k, param, gains, coeffs)


@pytest.mark.parametrize(
    ("bad", "why"),
    [("ndcg_cut.1=2", "ndcg_cut has no gains"), ("P.1=2", "only ndcg, Rndcg, rbp"),
     ("G.p=0.5", "takes no"), ("Rndcg.p=0.5,1=2", "only rbp takes p"),
     ("rbp.p=1.5,1=2", "strictly between"),
     ("Rndcg.1=2,1=3", "two gains"), ("utility.1,2,3", "four coefficients"),
     ("P.1,2,3,4x", "expected NAME"), ("P.1,2", "take a list of numbers"),
     ("11pt_avg.0.5,0.2", "increasing"),
     ("11pt_avg_1.5", "between 0 and 1"), ("relative_P", "needs a cutoff"),
     ("Rprec_mult", "needs a parameter"), ("set_map@5", "takes no"),
     ("binG.1=2", "only ndcg, Rndcg, rbp"), ("recall.1,-1,0,0", "only utility")],
)
def test_bad_names(bad: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_metric(bad)


def test_parameter_lists_expand_to_the_longest_measure_name() -> None:
    """``Rprec_mult.0.5,2`` is two Rprec_mult names (not ``Rprec`` + ``mult.0.5``);
    ``ndcg_cut.5,10`` two ndcg_cut ones; utility's four coefficients, 11pt_avg's levels and
    gains stay one name."""
    names = [s.name for s in parse_metrics(["Rprec_mult.0.5,2", "ndcg_cut.5,10",
                                            "relative_P_3,7", "utility.1,-1,0,0",
                                            "Rndcg.1=3,2=9", "11pt_avg.0.2,0.5"])]
    assert names == ["Rprec_mult.0.5", "Rprec_mult.2", "ndcg_cut.5", "ndcg_cut.10",
                     "relative_P_3", "relative_P_7", "utility.1,-1,0,0", "Rndcg.1=3,2=9",
                     "11pt_avg.0.2,0.5"]


def test_per_query_trec_format_covers_the_new_names() -> None:
    """trec_eval -q lines: counts as integers, gm_bpref only on ``all`` (as trec_eval)."""
    names = ["num_nonrel_judged_ret", "gm_bpref", "Rndcg.1=3,2=9", "relative_P@4"]
    res = evaluate(QRELS, RUN, names, per_query=True)
    assert trec_eval_lines(res, names, per_query=True).splitlines() == [
        "num_nonrel_judged_ret \tq1\t1",
        f"Rndcg.1=3,2=9         \tq1\t{(9 / L5 + 3 / L6) / (9 + 3 / L3 + 3 / 2) / 3:6.4f}",
        "relative_P@4          \tq1\t0.3333",
        "num_nonrel_judged_ret \tall\t1",
        "gm_bpref              \tall\t0.0000",
        f"Rndcg.1=3,2=9         \tall\t{(9 / L5 + 3 / L6) / (9 + 3 / L3 + 3 / 2) / 3:6.4f}",
        "relative_P@4          \tall\t0.3333",
    ]


def test_cli_trec_per_query_takes_the_new_names() -> None:
    """``queryeval trec --per-query --trec-format`` with trec_eval's spellings, parameter
    lists included (``Rprec_mult.0.5,2`` is two measures; the gain mapping one)."""
    import typer
    from typer.testing import CliRunner

    from queryeval.cli.trec import command

    app = typer.Typer()
    app.command()(command)
    args = [str(DATA / "qrels.txt"), str(DATA / "run.txt"), "--per-query", "--trec-format",
            "-m", "Rprec_mult.0.5,2", "-m", "rbp.p=0.8,1=3,2=9", "-m", "gm_bpref",
            "-m", "num_nonrel_judged_ret"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    lines = [line.split("\t") for line in res.output.splitlines()]
    names = {name.strip() for name, _, _ in lines}
    assert names == {"Rprec_mult.0.5", "Rprec_mult.2", "rbp.p=0.8,1=3,2=9", "gm_bpref",
                     "num_nonrel_judged_ret"}
    got = {(name.strip(), qid): value for name, qid, value in lines}
    # trec_eval -q -m rbp.p=0.8,1=3,2=9 (TREC_EVAL_OUT above): q0 0.2245
    assert got[("rbp.p=0.8,1=3,2=9", "q0")] == "0.2245"
    assert ("gm_bpref", "q0") not in got and ("gm_bpref", "all") in got
    assert got[("num_nonrel_judged_ret", "all")].isdigit()
