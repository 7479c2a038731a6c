/* `nvidia-smi topo -m` parsing and NVLink grouping (see agent/nvsmi.h).
 *
 * The header row gives the column devices (GPUn, NICn, mlx5_n, ...) up to
 * "CPU Affinity"; rows are split on any run of blanks after ANSI escapes are
 * removed, so tabs, spaces and terminal captures read the same. */
#include "agent/nvsmi.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

#define MAX_TOK 128
#define MAX_LINE 4096
#define MAX_CPUS (1 << 20)              /* a NUMA node's "cpus" in the annotation */
#define MAX_NUMA_ID 4095                /* a NUMA id in the annotation */

uint32_t tg_nvlink_cliques(uint32_t n, const uint8_t *adj, int32_t *group)
{
    uint32_t ng = 0;
    for (uint32_t i = 0; i < n; i++)
        group[i] = -1;
    for (uint32_t i = 0; i < n; i++) {
        if (group[i] >= 0)
            continue;
        uint32_t members[TG_NVSMI_MAX], nm = 1;
        members[0] = i;
        for (uint32_t j = i + 1; j < n && nm < TG_NVSMI_MAX; j++) {
            if (group[j] >= 0)
                continue;
            uint32_t k;
            for (k = 0; k < nm; k++)
                if (!adj[(size_t)members[k] * n + j])
                    break;
            if (k == nm)
                members[nm++] = j;
        }
        if (nm < 2)
            continue;
        for (uint32_t k = 0; k < nm; k++)
            group[members[k]] = (int32_t)ng;
        ng++;
    }
    return ng;
}

/* Copies one line without ANSI escapes (ESC [ ... letter) into out. */
static void strip_ansi(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        if (s[i] == 0x1b) {
            if (i + 1 < n && s[i + 1] == '[') {
                i += 2;
                while (i < n && !isalpha((unsigned char)s[i]))
                    i++;
            }
            continue;
        }
        out[o++] = s[i] == '\r' ? ' ' : s[i];
    }
    out[o] = 0;
}

/* Splits a line on blanks in place; returns the token count. */
static int split(char *line, char **tok, int max)
{
    int n = 0;
    char *p = line;
    while (*p && n < max) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        tok[n++] = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        if (*p)
            *p++ = 0;
    }
    return n;
}

static int parse_conn(const char *s, uint8_t *links)
{
    *links = 0;
    if (!strcmp(s, "X")) return TG_CONN_X;
    if (!strcmp(s, "SYS") || !strcmp(s, "SOC")) return TG_CONN_SYS;
    if (!strcmp(s, "NODE")) return TG_CONN_NODE;
    if (!strcmp(s, "PHB")) return TG_CONN_PHB;
    if (!strcmp(s, "PXB")) return TG_CONN_PXB;
    if (!strcmp(s, "PIX")) return TG_CONN_PIX;
    if (s[0] == 'N' && s[1] == 'V' && isdigit((unsigned char)s[2])) {
        long v = strtol(s + 2, NULL, 10);
        *links = (uint8_t)(v > 255 ? 255 : v);
        return TG_CONN_NV;
    }
    return TG_CONN_UNKNOWN;
}

static int is_gpu_label(const char *s)
{
    return !strncmp(s, "GPU", 3) && isdigit((unsigned char)s[3]);
}

/* Counts CPUs in a list such as "0-11,24-35"; 0 when malformed or when a
 * CPU number or the count passes MAX_CPUS (what the topology annotation
 * carries: strtol's LONG_MAX for a 20-digit number overflowed b - a + 1). */
static uint32_t count_cpus(const char *s)
{
    uint32_t n = 0;
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b;
        if (end == s || a < 0 || a >= MAX_CPUS)
            return 0;
        b = a;
        if (*end == '-') {
            s = end + 1;
            b = strtol(s, &end, 10);
            if (end == s || b < a || b >= MAX_CPUS)
                return 0;
        }
        n += (uint32_t)(b - a + 1);
        if (n > MAX_CPUS)
            return 0;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return 0;
    }
    return n;
}

struct hdr {
    int ncols;                          /* device columns */
    uint8_t is_gpu[TG_NVSMI_MAX];
    int idx[TG_NVSMI_MAX];              /* GPU index or NIC index of each column */
    int has_numa;                       /* "NUMA Affinity" present */
};

static int parse_header(char **tok, int nt, struct hdr *h, struct tg_nvsmi *m)
{
    memset(h, 0, sizeof *h);
    for (int i = 0; i < nt; i++) {
        if (!strcmp(tok[i], "CPU")) {
            for (int j = i; j + 1 < nt; j++)
                if (!strcmp(tok[j], "NUMA") && !strcmp(tok[j + 1], "Affinity"))
                    h->has_numa = 1;
            break;
        }
        if (h->ncols >= TG_NVSMI_MAX)
            return TG_EPARSE;
        if (is_gpu_label(tok[i])) {
            h->is_gpu[h->ncols] = 1;
            h->idx[h->ncols] = (int)m->ngpus++;
        } else {
            h->idx[h->ncols] = (int)m->nnics;
            snprintf(m->nic[m->nnics], sizeof m->nic[0], "%s", tok[i]);
            m->nnics++;
        }
        h->ncols++;
    }
    return m->ngpus ? 0 : TG_EPARSE;
}

/* One matrix row: label, ncols cells, then (GPU rows) CPU affinity, NUMA. */
static int parse_row(char **tok, int nt, const struct hdr *h, struct tg_nvsmi *m, int row_gpu)
{
    if (nt < 1 + h->ncols)
        return TG_EPARSE;
    for (int c = 0; c < h->ncols; c++) {
        uint8_t links;
        int conn = parse_conn(tok[1 + c], &links);
        if (conn == TG_CONN_UNKNOWN)
            return TG_EPARSE;
        if (row_gpu < 0)
            continue;                   /* NIC rows repeat what GPU rows said */
        if (h->is_gpu[c]) {
            m->gg[row_gpu][h->idx[c]] = (uint8_t)conn;
            m->nvlinks[row_gpu][h->idx[c]] = links;
        } else {
            m->gn[row_gpu][h->idx[c]] = (uint8_t)conn;
        }
    }
    if (row_gpu < 0)
        return 0;
    int k = 1 + h->ncols;
    if (k < nt && isdigit((unsigned char)tok[k][0])) {
        snprintf(m->gpu_cpus[row_gpu], sizeof m->gpu_cpus[0], "%s", tok[k]);
        m->gpu_ncpus[row_gpu] = count_cpus(tok[k]);
        k++;
    }
    if (h->has_numa && k < nt && isdigit((unsigned char)tok[k][0])) {
        long v = strtol(tok[k], NULL, 10);
        m->gpu_numa[row_gpu] = v <= MAX_NUMA_ID ? (int32_t)v : -1;
    }
    return 0;
}

/* "  NIC0: mlx5_0" in the NIC legend renames NIC columns. */
static void parse_nic_legend(char **tok, int nt, struct tg_nvsmi *m)
{
    if (nt != 2 || strncmp(tok[0], "NIC", 3))
        return;
    size_t l = strlen(tok[0]);
    if (l < 5 || tok[0][l - 1] != ':')
        return;
    char want[40];
    snprintf(want, sizeof want, "%.*s", (int)(l - 1), tok[0]);
    for (uint32_t i = 0; i < m->nnics; i++)
        if (!strcmp(m->nic[i], want))
            snprintf(m->nic[i], sizeof m->nic[0], "%s", tok[1]);
}

static int finish(struct tg_nvsmi *m)
{
    uint8_t adj[TG_NVSMI_MAX * TG_NVSMI_MAX] = {0};
    for (uint32_t i = 0; i < m->ngpus; i++)
        for (uint32_t j = 0; j < m->ngpus; j++) {
            if (m->gg[i][j] != m->gg[j][i] || m->nvlinks[i][j] != m->nvlinks[j][i] ||
                m->gg[i][j] == TG_CONN_UNKNOWN)
                return TG_EPARSE;
            if ((i == j) != (m->gg[i][j] == TG_CONN_X))
                return TG_EPARSE;
            adj[i * m->ngpus + j] = m->gg[i][j] == TG_CONN_NV;
        }
    m->ngroups = tg_nvlink_cliques(m->ngpus, adj, m->group);
    return 0;
}

int tg_nvsmi_parse(const char *text, size_t n, struct tg_nvsmi *m)
{
    char line[MAX_LINE];
    char *tok[MAX_TOK];
    struct hdr h;
    int have_hdr = 0, in_matrix = 0;
    uint32_t gpu_rows = 0;

    memset(m, 0, sizeof *m);
    for (int i = 0; i < TG_NVSMI_MAX; i++)
        m->gpu_numa[i] = -1;
    size_t pos = 0;
    while (pos < n) {
        const char *eol = memchr(text + pos, '\n', n - pos);
        size_t len = eol ? (size_t)(eol - (text + pos)) : n - pos;
        strip_ansi(text + pos, len, line, sizeof line);
        pos += len + 1;
        int nt = split(line, tok, MAX_TOK);
        if (!have_hdr) {
            if (nt > 0 && is_gpu_label(tok[0])) {
                if (parse_header(tok, nt, &h, m))
                    return TG_EPARSE;
                have_hdr = in_matrix = 1;
            }
            continue;
        }
        if (in_matrix) {
            if (nt == 0) {
                in_matrix = 0;
                continue;
            }
            int row_gpu = -1;
            if (is_gpu_label(tok[0])) {
                if (gpu_rows >= m->ngpus || strtol(tok[0] + 3, NULL, 10) != (long)gpu_rows)
                    return TG_EPARSE;
                row_gpu = (int)gpu_rows++;
            } else if (!strcmp(tok[0], "Legend:")) {
                in_matrix = 0;
                continue;
            }
            if (parse_row(tok, nt, &h, m, row_gpu))
                return TG_EPARSE;
            continue;
        }
        parse_nic_legend(tok, nt, m);
    }
    if (!have_hdr || gpu_rows != m->ngpus)
        return TG_EPARSE;
    return finish(m);
}

int tg_nvsmi_load(const char *path, struct tg_nvsmi *m)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    int err = TG_EIO;

    if (!f)
        return TG_EIO;
    buf = malloc(1 << 20);
    if (!buf) {
        err = TG_ENOMEM;
        goto fail;
    }
    size_t n = fread(buf, 1, 1 << 20, f);
    if (ferror(f))
        goto fail;
    err = tg_nvsmi_parse(buf, n, m);
fail:
    free(buf);
    fclose(f);
    return err;
}
