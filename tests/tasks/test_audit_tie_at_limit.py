"""tie_at_limit on both languages through a fake ``execute``: the uncut query it runs, a key
given by position (SQL) or by variable (SPARQL), and a variable the result lacks (None)."""

from queryeval.tasks.query.audit import tie_at_limit


def test_sql_runs_the_uncut_query_and_compares_the_key_column():
    ran = []

    def execute(q):
        ran.append(q)
        return {"columns": ["name", "score"],
                "rows": [["a", 90], ["b", 80], ["c", 80], ["d", 70]]}

    q = "SELECT name, score FROM s ORDER BY score DESC LIMIT 2"
    # the key as the table model holds it (text)
    assert tie_at_limit(q, "sql", execute) == {"rows": [2, 3], "key": ["80"], "uncut_rows": 4}
    assert ran == ["SELECT name, score FROM s ORDER BY score DESC"]
    assert tie_at_limit(q.replace("LIMIT 2", "LIMIT 1"), "sql", execute) == {}
    assert tie_at_limit(q, "sql", lambda _q: None) is None


def test_sparql_key_variable_missing_from_the_result_is_not_checkable():
    table = {"head": {"vars": ["s"]}, "results": {"bindings": [
        {"s": {"value": "a"}}, {"s": {"value": "b"}}, {"s": {"value": "c"}}]}}
    q = "PREFIX ex: <http://e/> SELECT ?s ?v WHERE { ?s ex:v ?v } ORDER BY ?v LIMIT 2"
    assert tie_at_limit(q, "sparql", lambda _q: table) is None
