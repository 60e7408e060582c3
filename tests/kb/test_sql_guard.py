"""The read-only SQL guard: one query passes (normalised), everything else is refused by name."""

import pytest
import sqlglot

from kb.target.sql_guard import UnsafeSQLError, check_read_only

ALLOWED = [
    ("sqlite", "SELECT name FROM singer WHERE age > 30"),
    ("sqlite", "select count(*) from singer;"),
    ("sqlite", "SELECT 1;;"),
    ("sqlite", "WITH old AS (SELECT * FROM singer WHERE age > 40) SELECT name FROM old"),
    ("sqlite", "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT n FROM c"),
    ("sqlite", "SELECT name FROM singer UNION SELECT name FROM stadium"),
    ("sqlite", "SELECT 1 INTERSECT SELECT 1 EXCEPT SELECT 2"),
    ("sqlite", "(SELECT 1) UNION ALL (SELECT 2)"),
    ("sqlite", "SELECT * FROM (SELECT name, age FROM singer) AS s WHERE s.age IN (SELECT 1)"),
    ("sqlite", "SELECT name, rank() OVER (PARTITION BY country ORDER BY age DESC) FROM singer"),
    ("sqlite", "SELECT 'DROP TABLE singer; DELETE FROM x' AS text"),
    ("sqlite", "SELECT name FROM singer WHERE name = 'a;b' OR name LIKE '%drop%'"),
    ("sqlite", 'SELECT "Drop" FROM "delete"'),
    ("sqlite", "SELECT 1 -- a comment with ; DROP TABLE singer"),
    ("sqlite", "/* leading comment */ SELECT strftime('%Y', 'now')"),
    ("postgres", "SELECT 5 % 2, 'a%b', now() - interval '1 day'"),
    ("postgresql", "SELECT $$text; DROP TABLE t$$"),
    ("postgresql", 'SELECT "myFunc"(x) FROM t'),
    ("postgresql", "SELECT pg_sleep(0.1)"),  # abuse of time is the timeout's job
    ("postgresql", "SELECT DISTINCT ON (a) a, b FROM t ORDER BY a, b"),
]

REFUSED = [
    # (dialect, sql, words the message must contain)
    ("sqlite", "", "empty"),
    ("sqlite", "-- only a comment", "no statement"),
    ("sqlite", "SELEC name FROM singer", "could not be parsed"),
    ("sqlite", "INSERT INTO singer (name) VALUES ('x')", "INSERT"),
    ("sqlite", "UPDATE singer SET age = 1", "UPDATE"),
    ("sqlite", "DELETE FROM singer", "DELETE"),
    ("sqlite", "REPLACE INTO singer (name) VALUES ('x')", "REPLACE"),
    ("sqlite", "DROP TABLE singer", "DROP"),
    ("sqlite", "CREATE TABLE t (a INT)", "CREATE"),
    ("sqlite", "CREATE TEMP VIEW v AS SELECT 1", "CREATE"),
    ("sqlite", "ALTER TABLE singer ADD COLUMN x INT", "ALTER"),
    ("sqlite", "ATTACH DATABASE '/tmp/evil.db' AS evil", "ATTACH"),
    ("sqlite", "DETACH DATABASE evil", "DETACH"),
    ("sqlite", "PRAGMA writable_schema=ON", "PRAGMA"),
    ("sqlite", "PRAGMA query_only = OFF", "PRAGMA"),
    ("sqlite", "VACUUM", "VACUUM"),
    ("sqlite", "VACUUM INTO '/tmp/copy.db'", "VACUUM"),
    ("sqlite", "REINDEX", "REINDEX"),
    ("sqlite", "ANALYZE", "ANALYZE"),
    ("sqlite", "BEGIN", "BEGIN"),
    ("sqlite", "EXPLAIN SELECT 1", "EXPLAIN"),
    ("sqlite", "VALUES (1)", "VALUES"),
    ("sqlite", "SELECT 1; DROP TABLE singer", "one statement"),
    ("sqlite", "SELECT 1; -- \n DROP TABLE singer", "one statement"),
    ("sqlite", "SELECT 1 /* */; DELETE FROM singer", "one statement"),
    ("sqlite", "SELECT 1; SELECT 2", "one statement"),
    ("sqlite", "WITH x AS (DELETE FROM singer RETURNING *) SELECT * FROM x", "DELETE"),
    ("sqlite", "SELECT load_extension('/tmp/evil.so')", "load_extension"),
    ("sqlite", "SELECT \"load_extension\"('/tmp/evil.so')", "load_extension"),
    ("sqlite", "SELECT name FROM singer WHERE load_extension('x') IS NULL", "load_extension"),
    ("sqlite", "SELECT writefile('/tmp/x', 'data')", "writefile"),
    ("sqlite", "SELECT readfile('/etc/passwd')", "readfile"),
    ("sqlite", "SELECT edit('text')", "edit"),
    ("sqlite", "SELECT * FROM fsdir('/')", "fsdir"),
    ("postgresql", "COPY t TO '/tmp/out.csv'", "COPY"),
    ("postgresql", "COPY (SELECT 1) TO PROGRAM 'rm -rf /'", "COPY"),
    ("postgresql", "SET statement_timeout = 0", "SET"),
    ("postgresql", "SET TRANSACTION READ WRITE", "SET"),
    ("postgresql", "RESET ALL", "RESET"),
    ("postgresql", "CALL do_things()", "CALL"),
    ("postgresql", "DO $$ BEGIN DELETE FROM t; END $$", "DO"),
    ("postgresql", "GRANT ALL ON t TO public", "GRANT"),
    ("postgresql", "TRUNCATE t", "TRUNCATE"),
    ("postgresql", "LOCK TABLE t", "LOCK"),
    ("postgresql", "LISTEN channel", "LISTEN"),
    ("postgresql", "MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN DELETE", "MERGE"),
    ("postgresql", "SELECT * INTO new_table FROM t", "INTO"),
    ("postgresql", "SELECT * FROM t FOR UPDATE", "FOR UPDATE"),
    ("postgresql", "SELECT * FROM t FOR SHARE", "FOR UPDATE/SHARE"),
    ("postgresql", "WITH d AS (DELETE FROM t RETURNING *) SELECT count(*) FROM d", "DELETE"),
    ("postgresql", "WITH u AS (UPDATE t SET a = 1 RETURNING a) SELECT * FROM u", "UPDATE"),
    ("postgresql", "WITH i AS (INSERT INTO t VALUES (1) RETURNING *) SELECT * FROM i", "INSERT"),
    ("postgresql", "SELECT lo_import('/etc/passwd')", "lo_import"),
    ("postgresql", "SELECT lo_export(1234, '/tmp/x')", "lo_export"),
    ("postgresql", "SELECT pg_read_file('/etc/passwd')", "pg_read_file"),
    ("postgresql", "SELECT pg_catalog.pg_read_binary_file('x')", "pg_read_binary_file"),
    (
        "postgresql",
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "set_config",
    ),
    ("postgresql", "SELECT * FROM dblink('host=x', 'DELETE FROM t') AS r(a int)", "dblink"),
    ("postgresql", "SELECT dblink_exec('DELETE FROM t')", "dblink_exec"),
    ("postgresql", "SELECT nextval('seq')", "nextval"),
    ("postgresql", "SELECT pg_terminate_backend(1)", "pg_terminate_backend"),
    ("postgresql", "SELECT pg_advisory_lock(1)", "pg_advisory_lock"),
    ("postgresql", "SELECT query_to_xml('DELETE FROM t', true, true, '')", "query_to_xml"),
    ("postgresql", "SELECT 'a\\' ; DROP TABLE t; --'", "one statement"),
]


@pytest.mark.parametrize(("dialect", "sql"), ALLOWED)
def test_a_single_query_passes_and_comes_back_normalised(dialect, sql):
    normalised = check_read_only(sql, dialect)
    read = "postgres" if dialect == "postgresql" else dialect
    statements = [s for s in sqlglot.parse(normalised, read=read) if s is not None]
    assert len(statements) == 1
    assert "--" not in normalised and "/*" not in normalised  # comments are dropped
    assert check_read_only(normalised, dialect) == normalised  # idempotent


@pytest.mark.parametrize(("dialect", "sql", "named"), REFUSED)
def test_everything_else_is_refused_with_a_message_naming_it(dialect, sql, named):
    with pytest.raises(UnsafeSQLError) as refused:
        check_read_only(sql, dialect)
    message = str(refused.value)
    assert message.startswith("refused: ")
    assert named.lower() in message.lower()
    assert refused.value.sql == sql


ROUND_TRIPS = [
    # (dialect, sql, what the normalised text keeps)
    ("sqlite", "SELECT * FROM singer AS a, concert AS b WHERE a.x = b.y", "singer AS a, concert"),
    ("sqlite", "WITH RECURSIVE c(n) AS (SELECT 1) SELECT n FROM c", "WITH RECURSIVE c(n) AS"),
    ("sqlite", "SELECT json_extract(j, '$.a'), j -> '$.b' FROM t", "JSON_EXTRACT(j, '$.a')"),
    ("postgresql", 'SELECT "myFunc"(x) FROM t', '"myFunc"(x)'),
    ("postgresql", "SELECT * FROM a, b WHERE a.x = b.x", "FROM a, b"),
]


@pytest.mark.parametrize(("dialect", "sql", "kept"), ROUND_TRIPS)
def test_normalising_keeps_the_meaning_and_the_plan(dialect, sql, kept):
    assert kept in check_read_only(sql, dialect)


def test_odd_input_is_refused_not_raised():
    deep = "SELECT " + "(" * 400 + "1" + ")" * 400
    with pytest.raises(UnsafeSQLError, match="nested too deeply"):
        check_read_only(deep, "sqlite")
    with pytest.raises(UnsafeSQLError, match="could not be parsed"):
        check_read_only("SELECT 'unterminated", "postgresql")


def test_comments_and_semicolons_inside_strings_stay_data():
    assert check_read_only("SELECT 'x; DROP TABLE t -- y'", "sqlite") == (
        "SELECT 'x; DROP TABLE t -- y'"
    )


def test_the_error_message_carries_a_snippet_of_the_sql():
    long_sql = "DELETE FROM singer WHERE " + " OR ".join(f"age = {i}" for i in range(200))
    with pytest.raises(UnsafeSQLError) as refused:
        check_read_only(long_sql, "sqlite")
    assert "DELETE FROM singer WHERE age = 0" in str(refused.value)
    assert len(str(refused.value)) < 400


def test_what_sqlglot_cannot_write_back_faithfully_is_refused():
    # SQLite has no column lists on table aliases; dropping them silently would change the query
    with pytest.raises(UnsafeSQLError, match="faithfully"):
        check_read_only("SELECT * FROM singer AS s(a, b)", "sqlite")
