/* test_debug - the debug level VT_DEBUG (issue 23): at VT_DEBUG >= 1 a failing VT_RETURN_ERROR_IF
 * records its condition's text, this file, its line and function (vt_err_site), VT_RETURN_ERROR and
 * vt_set_error their place; vt_error_prefix keeps the origin's site, vt_clear_error empties it, and
 * the record is per thread; vt_err_site_print prints it under the program's name. At VT_DEBUG = 0 the
 * record stays empty and nothing is printed unless VT_DEBUG_ERRORS=1 asks. The message is the same at
 * every level. VT_ASSERT (common/vt_debug.h) aborts naming the condition at >= 1 and evaluates
 * nothing at 0. This file is compiled at the build's level (1 in Debug and sanitizer builds). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/vt_debug.h"
#include "common/vt_error.h"
#include "vt_test.h"

static int cond_line, ret_line, set_line;

static vt_err fail_if(int x)
{
    cond_line = __LINE__; VT_RETURN_ERROR_IF(x > 3, VT_ERR_ARG, "x = %d is over %d", x, 3);
    return VT_OK;
}

static vt_err fail_always(void)
{
    ret_line = __LINE__; VT_RETURN_ERROR(VT_ERR_FORMAT, "bad byte %02x", 0xab);
}

static vt_err fail_set(void)
{
    set_line = __LINE__; return vt_set_error(VT_ERR_IO, "cannot read %s", "f.bin");
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = s ? strlen(s) : 0, t = strlen(tail);
    return s && n >= t && strcmp(s + n - t, tail) == 0;
}

/* what vt_err_site_print("prog") writes to stderr, into out */
static void capture_print(char *out, size_t cap)
{
    out[0] = 0;
    FILE *tmp = tmpfile();
    if (!tmp) return;
    fflush(stderr);
    int saved = dup(fileno(stderr));
    dup2(fileno(tmp), fileno(stderr));
    vt_err_site_print("prog");
    fflush(stderr);
    dup2(saved, fileno(stderr));
    close(saved);
    rewind(tmp);
    size_t n = fread(out, 1, cap - 1, tmp);
    out[n] = 0;
    fclose(tmp);
}

static void *other_thread(void *arg)
{
    const vt_fail_site *s = vt_err_site();
    *(int *)arg = s->file == NULL && strcmp(vt_errmsg(), "no error") == 0;
    return NULL;
}

int main(void)
{
    char out[1024], want[512];
    printf("test_debug: VT_DEBUG=%d\n", VT_DEBUG);
    unsetenv("VT_DEBUG_ERRORS");

    /* nothing recorded before any error; success leaves the record alone */
    vt_clear_error();
    CHECK(vt_err_site()->file == NULL, "site before any error: %s", vt_err_site()->file);
    CHECK(fail_if(2) == VT_OK, "fail_if(2)");
    CHECK(vt_err_site()->file == NULL, "a success recorded a site");

    /* a failing VT_RETURN_ERROR_IF: the message as written, at every level */
    CHECK(fail_if(5) == VT_ERR_ARG, "fail_if(5)");
    CHECK(strcmp(vt_errmsg(), "x = 5 is over 3") == 0, "message changed: \"%s\"", vt_errmsg());
    const vt_fail_site *s = vt_err_site();
    if (VT_DEBUG >= 1) {
        CHECK(s->cond && strcmp(s->cond, "x > 3") == 0, "condition text: %s", s->cond ? s->cond : "(null)");
        CHECK(ends_with(s->file, "test_debug.c"), "file: %s", s->file ? s->file : "(null)");
        CHECK(s->line == cond_line, "line %d, want %d", s->line, cond_line);
        CHECK(s->func && strcmp(s->func, "fail_if") == 0, "function: %s", s->func ? s->func : "(null)");
    } else {
        CHECK(s->file == NULL && s->cond == NULL && s->line == 0, "VT_DEBUG=0 recorded %s:%d", s->file, s->line);
    }

    /* context added to the message keeps the origin's site */
    CHECK(vt_error_prefix(VT_ERR_ARG, "recipe %s", "r.json") == VT_ERR_ARG, "prefix");
    CHECK(strcmp(vt_errmsg(), "recipe r.json: x = 5 is over 3") == 0, "prefixed: \"%s\"", vt_errmsg());
    CHECK(VT_DEBUG < 1 || (s->line == cond_line && s->cond && strcmp(s->cond, "x > 3") == 0), "prefix moved the site");

    /* the programs' debug line: printed at >= 1, nothing at 0 unless VT_DEBUG_ERRORS=1 */
    capture_print(out, sizeof out);
    if (VT_DEBUG >= 1) {
        snprintf(want, sizeof want, "test_debug.c:%d (fail_if)\n", cond_line);
        CHECK(strncmp(out, "prog: debug: failed `x > 3` at ", 31) == 0 && ends_with(out, want), "printed: %s", out);
    } else {
        CHECK(out[0] == 0, "VT_DEBUG=0 printed: %s", out);
        setenv("VT_DEBUG_ERRORS", "1", 1);
        capture_print(out, sizeof out);
        CHECK(strstr(out, "prog: debug: no failure site recorded") == out && strstr(out, "VT_DEBUG=0"), "asked: %s", out);
        unsetenv("VT_DEBUG_ERRORS");
    }

    /* VT_RETURN_ERROR and vt_set_error: their place, no condition */
    CHECK(fail_always() == VT_ERR_FORMAT, "fail_always");
    CHECK(strcmp(vt_errmsg(), "bad byte ab") == 0, "message: \"%s\"", vt_errmsg());
    CHECK(VT_DEBUG < 1 || (s->cond == NULL && s->line == ret_line && ends_with(s->file, "test_debug.c")),
          "VT_RETURN_ERROR site %s:%d", s->file, s->line);
    CHECK(fail_set() == VT_ERR_IO, "fail_set");
    CHECK(strcmp(vt_errmsg(), "cannot read f.bin") == 0, "message: \"%s\"", vt_errmsg());
    CHECK(VT_DEBUG < 1 || (s->cond == NULL && s->line == set_line), "vt_set_error site line %d, want %d", s->line,
          set_line);
    CHECK(VT_DEBUG >= 1 || s->file == NULL, "VT_DEBUG=0 recorded a site");
    if (VT_DEBUG >= 1) {
        capture_print(out, sizeof out);
        snprintf(want, sizeof want, "test_debug.c:%d (fail_set)\n", set_line);
        CHECK(strncmp(out, "prog: debug: error raised at ", 29) == 0 && ends_with(out, want), "printed: %s", out);
    }

    /* per thread: another thread sees no error and no site */
    int clean = 0;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, &clean) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK(clean, "another thread sees this thread's error or site");

    /* vt_clear_error empties the record */
    vt_clear_error();
    CHECK(s->file == NULL && s->cond == NULL, "clear kept the site");
    capture_print(out, sizeof out);
    CHECK(out[0] == 0, "printed without a site: %s", out);

    /* VT_ASSERT: nothing evaluated at 0; at >= 1 a false condition aborts naming it */
    int n = 0;
    VT_ASSERT(++n > 0);
    CHECK(n == (VT_DEBUG >= 1), "VT_ASSERT evaluated its condition %d times", n);
    VT_ASSERT_LEVEL(99, n < 0); /* beyond the build's level: not checked */
    if (VT_DEBUG >= 1) {
        int p[2];
        CHECK(pipe(p) == 0, "pipe");
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            dup2(p[1], 2);
            close(p[0]);
            int one = 1;
            VT_ASSERT(one == 2);
            _exit(0);
        }
        close(p[1]);
        size_t got = 0;
        ssize_t r;
        while (got + 1 < sizeof out && (r = read(p[0], out + got, sizeof out - 1 - got)) > 0) got += (size_t)r;
        out[got] = 0;
        close(p[0]);
        int ws = 0;
        waitpid(pid, &ws, 0);
        CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGABRT, "a false VT_ASSERT did not abort (status %d)", ws);
        CHECK(strstr(out, "VT_ASSERT failed: one == 2 at ") && strstr(out, "test_debug.c:") && strstr(out, "(main)"),
              "assert message: %s", out);
    } else {
        VT_ASSERT(0 == 1); /* compiled out */
        CHECK(1, "VT_DEBUG=0: a false VT_ASSERT is compiled out");
    }
    return vt_test_finish("test_debug");
}
