/* make_corpus.c - `make_corpus DIR` writes the step-log seed corpus (committed as
 * tests/corpus/steplog): valid payloads and containers ("ok-*") and hostile ones
 * ("bad-*", from the case tables in steplog_testkit.h). Every file is < 4 KB.
 * Regenerate after a format change:
 *   build/make_corpus tests/corpus/steplog && build/replay_corpus steplog tests/corpus/steplog */
#include <stdio.h>
#include <stdlib.h>

#include "steplog_testkit.h"

static int write_file(const char *dir, const char *name, const uint8_t *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n >= 4096) {
        fprintf(stderr, "%s: %zu bytes, corpus files must stay under 4 KB\n", path, n);
        return 1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return 1;
    }
    int bad = n && fwrite(p, 1, n, f) != n;
    bad |= fclose(f) != 0;
    if (bad) perror(path);
    return bad;
}

static int write_log(const char *dir, const char *name, const vt_steplog *l, int level)
{
    char nm[256];
    uint8_t *p;
    size_t n;
    int bad = 0;
    TK_MUST(vt_steplog_serialize(l, &p, &n));
    snprintf(nm, sizeof nm, "ok-payload-%s", name);
    bad |= write_file(dir, nm, p, n);
    free(p);
    TK_MUST(vt_steplog_encode(l, level, &p, &n, NULL));
    snprintf(nm, sizeof nm, "ok-container-%s", name);
    bad |= write_file(dir, nm, p, n);
    free(p);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    int bad = 0, files = 0;
    vt_steplog l;

    vt_steplog_init(&l, 0);
    bad |= write_log(dir, "empty", &l, 3);
    vt_steplog_free(&l);
    tk_golden_log(&l);
    bad |= write_log(dir, "golden", &l, 1);
    vt_steplog_free(&l);
    tk_mixed_log(&l);
    bad |= write_log(dir, "mixed", &l, 19);
    vt_steplog_free(&l);
    files += 6;

    for (size_t i = 0; i < TK_N_PAYLOAD_CASES + TK_N_CONTAINER_CASES; i++) {
        const tk_case *c = i < TK_N_PAYLOAD_CASES ? &tk_payload_cases[i] : &tk_container_cases[i - TK_N_PAYLOAD_CASES];
        if (!c->in_corpus) continue;
        vt_buf b;
        vt_buf_init(&b);
        c->build(&b);
        bad |= write_file(dir, c->name, b.data, b.len);
        vt_buf_free(&b);
        files++;
    }
    printf("%d files written to %s%s\n", files, dir, bad ? " (with errors)" : "");
    return bad;
}
