/* The YAML -> cJSON bridge (util/yamljson.h) on any bytes: every document is
 * walked (each node's line must lie inside the input) and printed as JSON. A
 * failure must come with "origin:line:column: problem". */
#include "fuzz/fuzz.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "util/err.h"
#include "util/yamljson.h"

struct walk {
    int lines;                          /* lines of the input, + 1 */
    size_t docs;
};

static void visit(const struct tg_yaml_lines *l, const cJSON *n, int lines)
{
    for (; n; n = n->next) {
        int line = tg_yaml_line(l, n);
        fz_check(line >= 1 && line <= lines, "node at line %d of %d", line, lines);
        visit(l, n->child, lines);
    }
}

static int on_doc(void *ud, cJSON *root, const struct tg_yaml_lines *lines)
{
    struct walk *w = ud;
    w->docs++;
    fz_check(lines->doc_line >= 1 && lines->doc_line <= w->lines, "document at line %d",
             lines->doc_line);
    visit(lines, root, w->lines);
    char *s = cJSON_PrintUnformatted(root);
    fz_check(s != NULL, "a parsed document does not print");
    cJSON_free(s);
    cJSON_Delete(root);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct walk w = {.lines = 2};
    for (size_t i = 0; i < size; i++)
        w.lines += data[i] == '\n' || data[i] == '\r';
    struct tg_sb err = {0};
    int rc = tg_yaml_parse((const char *)data, size, "fuzz.yaml", on_doc, &w, &err);
    fz_check(rc == 0 || rc == TG_EPARSE, "tg_yaml_parse returned %d", rc);
    if (rc == TG_EPARSE)
        fz_check(strncmp(tg_sb_str(&err), "fuzz.yaml:", 10) == 0, "error without origin: %s",
                 tg_sb_str(&err));
    tg_sb_free(&err);
    return 0;
}
