/* csqlite.h — the part of SQLite's C API the tracking store uses, loaded on first use.
 *
 * The store calls csqlite_<name> for each sqlite3_<name> it needs. libsqlite3 is not linked:
 * csqlite_open_v2 loads it (dlopen) the first time a store is opened, so a program that links the
 * analytics and never opens its store (a quiet run, which appends to the journal beside the store)
 * does not map it at exec: that was ≈ 0.6 ms of such a launch on this project's machine kind
 * (Benchmarks/README.md). <sqlite3.h> gives the types and constants only (SQLite's ABI, soname
 * libsqlite3.so.0, keeps every function it ever exported). A process that already has SQLite
 * (the app links it) uses that copy. Plus the one helper Swift cannot spell: text bound with
 * SQLITE_TRANSIENT (SQLite copies it before the call returns). */
#ifndef CSQLITE_H
#define CSQLITE_H
#include <sqlite3.h>

/* X(return type, name without "sqlite3_", parameters, arguments): every function loaded. */
#define CSQLITE_FUNCTIONS(X) \
    X(int, close_v2, (sqlite3 *db), (db)) \
    X(int, busy_timeout, (sqlite3 *db, int ms), (db, ms)) \
    X(int, extended_result_codes, (sqlite3 *db, int on), (db, on)) \
    X(int, extended_errcode, (sqlite3 *db), (db)) \
    X(int, get_autocommit, (sqlite3 *db), (db)) \
    X(int, changes, (sqlite3 *db), (db)) \
    X(int, prepare_v2, (sqlite3 *db, const char *sql, int bytes, sqlite3_stmt **statement, const char **tail), \
      (db, sql, bytes, statement, tail)) \
    X(int, prepare_v3, (sqlite3 *db, const char *sql, int bytes, unsigned int flags, sqlite3_stmt **statement, const char **tail), \
      (db, sql, bytes, flags, statement, tail)) \
    X(int, finalize, (sqlite3_stmt *statement), (statement)) \
    X(int, reset, (sqlite3_stmt *statement), (statement)) \
    X(int, clear_bindings, (sqlite3_stmt *statement), (statement)) \
    X(int, step, (sqlite3_stmt *statement), (statement)) \
    X(int, bind_parameter_count, (sqlite3_stmt *statement), (statement)) \
    X(int, bind_int64, (sqlite3_stmt *statement, int index, sqlite3_int64 value), (statement, index, value)) \
    X(int, bind_double, (sqlite3_stmt *statement, int index, double value), (statement, index, value)) \
    X(int, bind_null, (sqlite3_stmt *statement, int index), (statement, index)) \
    X(int, column_count, (sqlite3_stmt *statement), (statement)) \
    X(const char *, column_name, (sqlite3_stmt *statement, int index), (statement, index)) \
    X(int, column_type, (sqlite3_stmt *statement, int index), (statement, index)) \
    X(sqlite3_int64, column_int64, (sqlite3_stmt *statement, int index), (statement, index)) \
    X(double, column_double, (sqlite3_stmt *statement, int index), (statement, index)) \
    X(const unsigned char *, column_text, (sqlite3_stmt *statement, int index), (statement, index)) \
    X(const void *, column_blob, (sqlite3_stmt *statement, int index), (statement, index)) \
    X(int, column_bytes, (sqlite3_stmt *statement, int index), (statement, index))

#define CSQLITE_DECLARE(type, name, parameters, arguments) type csqlite_##name parameters;
/* Only after csqlite_open_v2 succeeded (each takes what it returned, or a statement of it). */
CSQLITE_FUNCTIONS(CSQLITE_DECLARE)
#undef CSQLITE_DECLARE

/* sqlite3_open_v2, loading SQLite first: SQLITE_CANTOPEN (and *db NULL) when it cannot be
 * loaded; csqlite_errstr then says why. */
int csqlite_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs);
/* sqlite3_errmsg and sqlite3_errstr; before SQLite is loaded (or when it cannot be), why not. */
const char *csqlite_errmsg(sqlite3 *db);
const char *csqlite_errstr(int code);

int csqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length);
#endif
