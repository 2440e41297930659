/* csqlite.c — links the system's SQLite (libsqlite3) and binds text that SQLite copies. */
#include "csqlite.h"

int csqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length) {
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}
