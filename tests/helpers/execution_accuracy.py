"""What the tests of execution accuracy share with other test files: ``FIGURE``, ``PAIRS``, ``bird_execute_model``, ``build_db``, ``mini_execute_model``, ``spider2_compare_pandas_table``, ``spider2_sqlite_csv``, ``ts_eval_exec_match`` (moved here from test_execution_accuracy.py)."""

from __future__ import annotations

import random
import re
import sqlite3
from collections import defaultdict
from itertools import product
from pathlib import Path


def _ts_permute_tuple(element, perm):
    assert len(element) == len(perm)
    return tuple([element[i] for i in perm])


def _ts_unorder_row(row):
    return tuple(sorted(row, key=lambda x: str(x) + str(type(x))))


def _ts_quick_rej(result1, result2, order_matters):
    s1 = [_ts_unorder_row(row) for row in result1]
    s2 = [_ts_unorder_row(row) for row in result2]
    if order_matters:
        return s1 == s2
    return set(s1) == set(s2)


def _ts_multiset_eq(l1, l2):
    if len(l1) != len(l2):
        return False
    d = defaultdict(int)
    for e in l1:
        d[e] = d[e] + 1
    for e in l2:
        d[e] = d[e] - 1
        if d[e] < 0:
            return False
    return True


def _ts_get_constraint_permutation(tab1_sets_by_columns, result2):
    num_cols = len(result2[0])
    perm_constraints = [{i for i in range(num_cols)} for _ in range(num_cols)]
    if num_cols <= 3:
        return product(*perm_constraints)
    for _ in range(20):
        random_tab2_row = random.choice(result2)
        for tab1_col in range(num_cols):
            for tab2_col in set(perm_constraints[tab1_col]):
                if random_tab2_row[tab2_col] not in tab1_sets_by_columns[tab1_col]:
                    perm_constraints[tab1_col].remove(tab2_col)
    return product(*perm_constraints)


def ts_result_eq(result1, result2, order_matters):
    if len(result1) == 0 and len(result2) == 0:
        return True
    if len(result1) != len(result2):
        return False
    num_cols = len(result1[0])
    if len(result2[0]) != num_cols:
        return False
    if not _ts_quick_rej(result1, result2, order_matters):
        return False
    tab1_sets_by_columns = [{row[i] for row in result1} for i in range(num_cols)]
    for perm in _ts_get_constraint_permutation(tab1_sets_by_columns, result2):
        if len(perm) != len(set(perm)):
            continue
        if num_cols == 1:
            result2_perm = result2
        else:
            result2_perm = [_ts_permute_tuple(element, perm) for element in result2]
        if order_matters:
            if result1 == result2_perm:
                return True
        else:
            if set(result1) == set(result2_perm) and _ts_multiset_eq(result1, result2_perm):
                return True
    return False


def _ts_remove_distinct(s):
    import sqlparse

    toks = [t.value for t in list(sqlparse.parse(s)[0].flatten())]
    return "".join([t for t in toks if t.lower() != "distinct"])


def _ts_exec(db, query):
    query = re.sub(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", "2020", query, flags=re.IGNORECASE)
    connection = sqlite3.connect(db)
    connection.text_factory = lambda b: b.decode(errors="ignore")
    cursor = connection.cursor()
    try:
        cursor.execute(query)
        result = cursor.fetchall()
        return "result", result
    except Exception as e:  # noqa: BLE001 - the reference's
        return "exception", e
    finally:
        cursor.close()
        connection.close()


def ts_eval_exec_match(db, p_str, g_str):
    """evaluation.py's call: ``p_str.replace("value", "1")`` then ``eval_exec_match(db,
    p_str, g_str, plug_value=False, keep_distinct=False, ...)`` on the one database."""
    p_str = p_str.replace("value", "1")

    def postprocess(query):
        return query.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")

    p_str, g_str = postprocess(p_str), postprocess(g_str)
    p_str = _ts_remove_distinct(p_str)
    g_str = _ts_remove_distinct(g_str)
    order_matters = "order by" in g_str.lower()
    g_flag, g_denotation = _ts_exec(db, g_str)
    p_flag, p_denotation = _ts_exec(db, p_str)
    assert g_flag != "exception", f"gold query {g_str} has error"
    if p_flag == "exception":
        return 0
    if not ts_result_eq(g_denotation, p_denotation, order_matters=order_matters):
        return 0
    return 1


def bird_execute_model(db_path, predicted_sql, ground_truth):
    def execute_sql(predicted_sql, ground_truth, db_path):
        conn = sqlite3.connect(db_path)
        cursor = conn.cursor()
        cursor.execute(predicted_sql)
        predicted_res = cursor.fetchall()
        cursor.execute(ground_truth)
        ground_truth_res = cursor.fetchall()
        res = 0
        if set(predicted_res) == set(ground_truth_res):
            res = 1
        return res

    try:
        return execute_sql(predicted_sql, ground_truth, db_path)
    except Exception:  # noqa: BLE001 - the reference's
        return 0


def _mini_calculate_row_match(predicted_row, ground_truth_row):
    total_columns = len(ground_truth_row)
    matches = 0
    element_in_pred_only = 0
    element_in_truth_only = 0
    for pred_val in predicted_row:
        if pred_val in ground_truth_row:
            matches += 1
        else:
            element_in_pred_only += 1
    for truth_val in ground_truth_row:
        if truth_val not in predicted_row:
            element_in_truth_only += 1
    match_percentage = matches / total_columns
    pred_only_percentage = element_in_pred_only / total_columns
    truth_only_percentage = element_in_truth_only / total_columns
    return match_percentage, pred_only_percentage, truth_only_percentage


def mini_calculate_f1_score(predicted, ground_truth):
    if not predicted and not ground_truth:
        return 1.0
    predicted = list(dict.fromkeys(predicted))
    ground_truth = list(dict.fromkeys(ground_truth))
    match_scores = []
    pred_only_scores = []
    truth_only_scores = []
    for i, gt_row in enumerate(ground_truth):
        if i >= len(predicted):
            match_scores.append(0)
            truth_only_scores.append(1)
            continue
        pred_row = predicted[i]
        match_score, pred_only_score, truth_only_score = _mini_calculate_row_match(
            pred_row, gt_row)
        match_scores.append(match_score)
        pred_only_scores.append(pred_only_score)
        truth_only_scores.append(truth_only_score)
    for _ in range(len(predicted) - len(ground_truth)):
        match_scores.append(0)
        pred_only_scores.append(1)
        truth_only_scores.append(0)
    tp = sum(match_scores)
    fp = sum(pred_only_scores)
    fn = sum(truth_only_scores)
    precision = tp / (tp + fp) if tp + fp > 0 else 0
    recall = tp / (tp + fn) if tp + fn > 0 else 0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0


def mini_execute_model(db_path, predicted_sql, ground_truth):
    try:
        conn = sqlite3.connect(db_path)
        cursor = conn.cursor()
        cursor.execute(predicted_sql)
        predicted_res = cursor.fetchall()
        cursor.execute(ground_truth)
        ground_truth_res = cursor.fetchall()
        conn.close()
        return mini_calculate_f1_score(predicted_res, ground_truth_res)
    except Exception:  # noqa: BLE001 - the reference's
        return 0


def spider2_compare_pandas_table(pred, gold, condition_cols=None, ignore_order=False):
    import math

    import pandas as pd

    tolerance = 1e-2

    def normalize(value):
        if pd.isna(value):
            return 0
        return value

    def vectors_match(v1, v2, tol=tolerance, ignore_order_=False):
        v1 = [normalize(x) for x in v1]
        v2 = [normalize(x) for x in v2]
        if ignore_order_:
            v1 = sorted(v1, key=lambda x: (x is None, str(x), isinstance(x, (int, float))))
            v2 = sorted(v2, key=lambda x: (x is None, str(x), isinstance(x, (int, float))))
        if len(v1) != len(v2):
            return False
        for a, b in zip(v1, v2, strict=False):
            if pd.isna(a) and pd.isna(b):
                continue
            if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                if not math.isclose(float(a), float(b), abs_tol=tol):
                    return False
            elif a != b:
                return False
        return True

    if condition_cols:
        if not isinstance(condition_cols, (list, tuple)):
            condition_cols = [condition_cols]
        gold_cols = gold.iloc[:, condition_cols]
    else:
        gold_cols = gold
    pred_cols = pred
    t_gold_list = gold_cols.transpose().values.tolist()
    t_pred_list = pred_cols.transpose().values.tolist()
    score = 1
    for gold_vector in t_gold_list:
        if not any(vectors_match(gold_vector, pred_vector, ignore_order_=ignore_order)
                   for pred_vector in t_pred_list):
            score = 0
            break
    return score


def spider2_sqlite_csv(db_path, query, save_dir, file_name, chunksize=500):
    """get_sqlite_result with save_dir, then pd.read_csv of the file (None: it failed)."""
    import os

    import pandas as pd

    try:
        conn = sqlite3.connect(db_path)
        memory_conn = sqlite3.connect(":memory:")
        conn.backup(memory_conn)
        try:
            os.makedirs(save_dir, exist_ok=True)
            for i, chunk in enumerate(pd.read_sql_query(query, memory_conn, chunksize=chunksize)):
                mode = "a" if i > 0 else "w"
                chunk.to_csv(os.path.join(save_dir, file_name), mode=mode, header=i == 0,
                             index=False)
        finally:
            memory_conn.close()
            conn.close()
    except Exception:  # noqa: BLE001 - the reference's
        return None
    return pd.read_csv(os.path.join(save_dir, file_name))


ROWS = [
    (1, "1", 1.0, "x"),
    (2, "007", 7.0, "y"),
    (3, "+5", 5.0, "x"),
    (4, " 5 ", 5.0, "z"),
    (5, "\u00e9", 2.0, "x"),          # é, NFC
    (6, "e\u0301", 2.0, "y"),         # é, NFD
    (7, "\u00a05", 5.0, "z"),         # NBSP then 5
    (8, "inf", float("inf"), "x"),
]


# id -> (gold, prediction)
PAIRS = {
    "permuted": ("SELECT id, a FROM t WHERE id < 4", "SELECT a, id FROM t WHERE id < 4"),
    "permuted4": ("SELECT id, a, b, c FROM t WHERE id <= 4", "SELECT c, b, a, id FROM t WHERE id <= 4"),
    "text-1-vs-1": ("SELECT a FROM t WHERE id = 1", "SELECT 1"),
    "007-vs-7": ("SELECT a FROM t WHERE id = 2", "SELECT 7"),
    "plus5-vs-5": ("SELECT a FROM t WHERE id = 3", "SELECT 5"),
    "spaced5-vs-5": ("SELECT a FROM t WHERE id = 4", "SELECT '5'"),
    "nfc-vs-nfd": ("SELECT a FROM t WHERE id = 5", "SELECT a FROM t WHERE id = 6"),
    "nbsp": ("SELECT a FROM t WHERE id = 7", "SELECT '5'"),
    "subquery-order": ("SELECT id FROM (SELECT id FROM t ORDER BY id DESC LIMIT 3)",
                       "SELECT id FROM t WHERE id >= 6"),
    "two-spaces-order": ("SELECT id FROM t ORDER  BY id DESC", "SELECT id FROM t ORDER BY id"),
    "reversed": ("SELECT id FROM t ORDER BY id DESC", "SELECT id FROM t ORDER BY id"),
    "same-order": ("SELECT id FROM t ORDER BY id DESC", "SELECT id FROM t ORDER BY -id"),
    "bag-vs-set": ("SELECT c FROM t WHERE id <= 3", "SELECT c FROM t WHERE id IN (1, 2)"),
    "distinct-pred": ("SELECT c FROM t WHERE id <= 3", "SELECT DISTINCT c FROM t WHERE id <= 3"),
    "distinct-gold": ("SELECT DISTINCT c FROM t", "SELECT c FROM t GROUP BY c"),
    "count-distinct": ("SELECT count(DISTINCT c) FROM t", "SELECT count(*) FROM t"),
    "inf-vs-text": ("SELECT b FROM t WHERE id = 8", "SELECT a FROM t WHERE id = 8"),
    "int-vs-real": ("SELECT b FROM t WHERE id = 1", "SELECT id FROM t WHERE id = 1"),
    "bad-utf8": ("SELECT 'ok'", "SELECT CAST(X'FF6F6B' AS TEXT)"),
    "value-word": ("SELECT id FROM t WHERE id = 1", "SELECT id FROM t WHERE id = value"),
    "value-in-text": ("SELECT '1'", "SELECT 'value'"),
    "spaced-ge": ("SELECT id FROM t WHERE id >= 7", "SELECT id FROM t WHERE id > = 7"),
    "both-empty": ("SELECT id FROM t WHERE id > 100", "SELECT id, a FROM t WHERE id > 100"),
    "more-columns": ("SELECT id FROM t WHERE id = 1", "SELECT id, a FROM t WHERE id = 1"),
    "syntax-error": ("SELECT id FROM t", "SELEC id FROM t"),
    "same": ("SELECT a, c FROM t WHERE b = 5", "SELECT a, c FROM t WHERE b = 5"),
    "dup-rows": ("SELECT c FROM t", "SELECT c FROM t UNION ALL SELECT c FROM t"),
    "half-row": ("SELECT id, c FROM t WHERE id <= 2", "SELECT id, a FROM t WHERE id <= 3"),
    "shifted": ("SELECT id, c FROM t WHERE id <= 3", "SELECT id, c FROM t WHERE id >= 2"),
    "within-1e-2": ("SELECT b FROM t WHERE id = 2", "SELECT 7.004"),
    "beyond-1e-2": ("SELECT b FROM t WHERE id = 2", "SELECT 7.02"),
    "extra-column": ("SELECT c FROM t WHERE id <= 3", "SELECT id, c FROM t WHERE id <= 3"),
    "two-statements": ("SELECT 1", "SELECT 1; SELECT 2"),  # spider keeps the first statement
}


def build_db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER, a TEXT, b REAL, c TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", ROWS)
    conn.commit()
    conn.close()
    return path


FIGURE = {"spider": "execution_accuracy", "bird": "execution_accuracy", "bird-soft-f1": "soft_f1",
          "spider2": "execution_accuracy"}
