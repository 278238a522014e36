/* vt_dbhold - a reader of a run store for tests/e2e/run_faults.sh: an auditor that has run.db open
 * while the trainer finishes (issue 22, finding 1).
 *
 *   vt_dbhold RUN_DIR/run.db txn    read-only, BEGIN and read the steps: a snapshot held open
 *   vt_dbhold RUN_DIR/run.db idle   read-only, one read, then an open connection holding nothing
 *
 * Prints "holding N" (the steps it saw) once it holds, then waits for a line or the end of its
 * standard input, ends its transaction, closes and exits 0 (2 on any SQLite error). */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[2], "txn") != 0 && strcmp(argv[2], "idle") != 0)) {
        fprintf(stderr, "usage: vt_dbhold DB txn|idle\n");
        return 64;
    }
    int txn = strcmp(argv[2], "txn") == 0;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long long n = -1;
    int rc = sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL);
    if (rc == SQLITE_OK) sqlite3_busy_timeout(db, 10000);
    if (rc == SQLITE_OK && txn) rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM steps", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        n = sqlite3_column_int64(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) {
        fprintf(stderr, "vt_dbhold: %s: %s\n", argv[1], db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return 2;
    }
    printf("holding %lld\n", n);
    fflush(stdout);
    char line[64];
    (void)!fgets(line, sizeof line, stdin);
    if (txn) rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : 2;
}
