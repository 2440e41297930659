/* csqlite.h — exposes the system's SQLite to Swift (the tracking store), with the one helper
 * Swift cannot spell: text bound with SQLITE_TRANSIENT (SQLite copies it before the call returns). */
#ifndef CSQLITE_H
#define CSQLITE_H
#include <sqlite3.h>

int csqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length);
#endif
