/*
 * libfpspin.c - FPsPIN's host library (lib/fpspin of spcl/FPsPIN, seed 000
 * §4.2) over softspin's C API: our implementation of its API, no FPsPIN code.
 *
 * FPsPIN's host talks to an FPGA NIC through /dev/pspinN: it mmaps a
 * host-DMA area, loads the handler image, programs the matching engine and
 * then polls one flag per HPU in that area. Here:
 *   - the NIC is softspin's `fpspin` profile, live on a network interface
 *     (ss_nic_attach) or simulated (ss_open) with frames from a pcap file;
 *   - the host-DMA area is a page-aligned buffer lent to the NIC as the
 *     ECTX's host window (ss_host_lend), so cpu_addr is where handlers DMA;
 *   - a handler's request (spin_host.h's fpspin_host_req) is a host
 *     notification: fpspin_pop_req runs the NIC a slice and collects them,
 *     fpspin_push_resp answers with ss_respond;
 *   - rulesets become softspin rulesets (docs/rules.md), r[3] the EOM unit.
 * Environment (docs/fpspin.md): SOFTSPIN_FPSPIN_IFACE, SOFTSPIN_FPSPIN_MODE
 * (xdp|socket), SOFTSPIN_FPSPIN_PCAP, SOFTSPIN_FPSPIN_PCAP_OUT.
 */
#define _GNU_SOURCE
#include "fpspin/fpspin.h"

#include <elf.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>

#include "softspin.h"

#define LOG(...) fprintf(stderr, "[FPSPIN] " __VA_ARGS__)

/* A live slice: short enough for the host to answer within FPsPIN's
 * polling latency order, long enough not to spin the CPU on empty calls. */
#define LIVE_SLICE_NS 200000u

struct pending {
    bool valid;  /* a request arrived and was not answered */
    bool popped; /* fpspin_pop_req returned it */
    uint32_t id; /* notification id for ss_respond */
    fpspin_flag_t flag;
};

struct fpspin_softspin {
    struct ss_nic *nic;
    struct ss_image *img;
    ss_ectx ectx;
    bool installed, live, sim_done, sigint_sent;
    uint32_t idle_polled; /* HPUs fpspin_pop_req asked about since sim_done */
    struct ss_host_window window;
    struct pending pending[NUM_HPUS];
    FILE *pcap_out;
    unsigned long long errors;
};

/* The rulesets fpspin_prog_me last set (FPsPIN programs them in the NIC). */
static fpspin_ruleset_t g_rulesets[NUM_RULESETS];
static int g_num_rulesets;
static const char *g_regs_base;

static void ss_fail(const char *what, int rc)
{
    LOG("error: %s: %s (%s)\n", what, ss_last_error(), ss_strerror(rc));
}

void hexdump(const volatile void *data, size_t size)
{
    const volatile uint8_t *p = data;
    for (size_t i = 0; i < size; i += 16) {
        printf("%08zx ", i);
        for (size_t j = 0; j < 16; j++) {
            if (i + j < size)
                printf(" %02x", p[i + j]);
            else
                printf("   ");
        }
        printf("  |");
        for (size_t j = 0; j < 16 && i + j < size; j++) {
            uint8_t c = p[i + j];
            putchar(c >= 0x20 && c < 0x7f ? c : '.');
        }
        printf("|\n");
    }
}

void fpspin_set_regs_base(const char *rbase) { g_regs_base = rbase; }
const char *fpspin_get_regs_base() { return g_regs_base; }

/* ---- rulesets ---- */

static void fill(fpspin_ruleset_t *rs, int mode, struct fpspin_rule r0, struct fpspin_rule r1,
                 struct fpspin_rule r2, struct fpspin_rule eom)
{
    rs->mode = mode;
    rs->r[0] = r0;
    rs->r[1] = r1;
    rs->r[2] = r2;
    rs->r[3] = eom;
}

void fpspin_ruleset_bypass(fpspin_ruleset_t *rs)
{
    fill(rs, FPSPIN_MODE_AND, FPSPIN_RULE_FALSE, FPSPIN_RULE_FALSE, FPSPIN_RULE_FALSE, FPSPIN_RULE_FALSE);
}

void fpspin_ruleset_match(fpspin_ruleset_t *rs)
{
    fill(rs, FPSPIN_MODE_AND, FPSPIN_RULE_EMPTY, FPSPIN_RULE_EMPTY, FPSPIN_RULE_EMPTY, FPSPIN_RULE_EMPTY);
}

void fpspin_ruleset_udp(fpspin_ruleset_t *rs)
{
    fill(rs, FPSPIN_MODE_AND, FPSPIN_RULE_IP, FPSPIN_RULE_IP_PROTO(17), FPSPIN_RULE_EMPTY, FPSPIN_RULE_FALSE);
}

void fpspin_ruleset_slmp(fpspin_ruleset_t *rs)
{
    /* EOM: the top bit of SLMP's flags (frame byte 42, word 10). */
    fill(rs, FPSPIN_MODE_AND, FPSPIN_RULE_IP, FPSPIN_RULE_IP_PROTO(17), FPSPIN_RULE_UDP_DPORT(SLMP_PORT),
         (struct fpspin_rule){.idx = 10, .mask = 0x8000, .start = 0x8000, .end = 0x8000});
}

void fpspin_set_me_ruleset(int ctx_id, const fpspin_ruleset_t *rs)
{
    (void)ctx_id; /* one ECTX per process here */
    if (g_num_rulesets < NUM_RULESETS)
        g_rulesets[g_num_rulesets++] = *rs;
}

void fpspin_prog_me(const fpspin_ruleset_t *rs, int num_rs)
{
    if (num_rs < 0 || num_rs > NUM_RULESETS) {
        LOG("error: %d rulesets, at most %d (NUM_RULESETS); keeping none\n", num_rs, NUM_RULESETS);
        g_num_rulesets = 0;
        return;
    }
    g_num_rulesets = 0;
    for (int i = 0; i < num_rs; i++)
        fpspin_set_me_ruleset(0, &rs[i]);
}

static bool is_slmp_eom(const struct fpspin_rule *r)
{
    return r->idx == 10 && r->mask == 0x8000 && r->start == 0x8000 && r->end == 0x8000;
}

/* The rules file text (docs/rules.md) for the programmed rulesets.
 * `no_hh_th`: the ECTX has only a payload handler; then an EOM rule that is
 * never true (FPsPIN's ping rulesets: its NIC never completes those
 * messages) makes every frame its own message, which softspin would
 * otherwise end with a message timeout, reported as an error. */
static char *rules_toml(bool no_hh_th)
{
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    s[0] = 0;
#define PUT(...) (len += (size_t)snprintf(s + len, cap - len, __VA_ARGS__))
    for (int i = 0; i < g_num_rulesets; i++) {
        const fpspin_ruleset_t *rs = &g_rulesets[i];
        const struct fpspin_rule *e = &rs->r[NUM_RULES_PER_RULESET - 1];
        PUT("[[ruleset]]\nname = \"fpspin %d\"\nmode = \"%s\"\n", i, rs->mode == FPSPIN_MODE_OR ? "or" : "and");
        if (no_hh_th && e->start > e->end)
            PUT("eom = \"true\"\n");
        else
            PUT("eom = { index = %d, mask = %u, start = %u, end = %u }\n", e->idx, e->mask, e->start, e->end);
        /* FPsPIN's NIC takes SLMP's message id from the header in hardware. */
        PUT("msg_id = \"%s\"\n", is_slmp_eom(e) ? "slmp" : "sequence");
        for (int k = 0; k < NUM_RULES_PER_RULESET - 1; k++) {
            const struct fpspin_rule *r = &rs->r[k];
            PUT("[[ruleset.unit]]\nindex = %d\nmask = %u\nstart = %u\nend = %u\n", r->idx, r->mask, r->start,
                r->end);
        }
    }
#undef PUT
    return s;
}

/* ---- image: FPsPIN finds handlers by the suffixes _hh, _ph, _th ---- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n > 0 ? malloc((size_t)n) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = b ? (size_t)n : 0;
    return b;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* The first symbol of the image's symbol table that `want` accepts, with
 * its name, or NULL. Every offset is checked against the image's length and
 * a name is passed on only if it ends inside the string table. */
typedef bool (*sym_filter)(const Elf32_Sym *sym, const char *name, const void *arg);
static const Elf32_Sym *find_sym(const char *elf, size_t len, sym_filter want, const void *arg,
                                 const char **name)
{
    const Elf32_Ehdr *eh = (const Elf32_Ehdr *)elf;
    if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS32 ||
        eh->e_shoff == 0 || eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf32_Shdr) > len)
        return NULL;
    const Elf32_Shdr *sh = (const Elf32_Shdr *)(elf + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf32_Shdr *st = &sh[sh[i].sh_link];
        if (sh[i].sh_offset + sh[i].sh_size > len || st->sh_offset + st->sh_size > len)
            return NULL;
        const Elf32_Sym *sym = (const Elf32_Sym *)(elf + sh[i].sh_offset);
        size_t n = sh[i].sh_size / sizeof(Elf32_Sym);
        for (size_t k = 0; k < n; k++) {
            if (sym[k].st_name >= st->sh_size)
                continue;
            const char *nm = elf + st->sh_offset + sym[k].st_name;
            if (!memchr(nm, 0, st->sh_size - sym[k].st_name) || !want(&sym[k], nm, arg))
                continue;
            *name = nm;
            return &sym[k];
        }
    }
    return NULL;
}

static bool is_func_ending_in(const Elf32_Sym *sym, const char *name, const void *suffix)
{
    return ELF32_ST_TYPE(sym->st_info) == STT_FUNC && ends_with(name, suffix);
}

static bool is_defined_named(const Elf32_Sym *sym, const char *name, const void *want)
{
    return sym->st_shndx != SHN_UNDEF && strcmp(name, want) == 0;
}

/* The function symbol ending in `suffix` (FPsPIN's loader takes handlers by
 * suffix): its name into name[cap] and its extent into *area. */
static bool find_handler(const char *elf, size_t len, const char *suffix, char *name, size_t cap,
                         struct mem_area *area)
{
    const char *nm;
    const Elf32_Sym *s = find_sym(elf, len, is_func_ending_in, suffix, &nm);
    if (!s)
        return false;
    snprintf(name, cap, "%s", nm);
    area->addr = s->st_value;
    area->size = s->st_size;
    return true;
}

/* The value of the symbol `name` (any type, absolute ones included: the
 * link script's region bounds) into *value; false if none. */
static bool find_symbol(const char *elf, size_t len, const char *name, uint32_t *value)
{
    const char *nm;
    const Elf32_Sym *s = find_sym(elf, len, is_defined_named, name, &nm);
    if (s)
        *value = s->st_value;
    return s != NULL;
}

/* ---- load / init ---- */

void fpspin_load(fpspin_ctx_t *ctx, const char *elf, uint64_t hostmem_ptr, uint32_t hostmem_size)
{
    struct fpspin_softspin *S = ctx->softspin;
    if (!S || !S->nic) {
        LOG("error: fpspin_load before the NIC is open (call fpspin_init)\n");
        return;
    }
    size_t len;
    char *bytes = read_file(elf, &len);
    if (!bytes) {
        LOG("error: cannot read handler image %s\n", elf);
        return;
    }
    char hh[128] = "", ph[128] = "", th[128] = "";
    memset(&ctx->hh, 0, 3 * sizeof(ctx->hh));
    memset(&ctx->handler_mem, 0, sizeof(ctx->handler_mem));
    find_handler(bytes, len, "_hh", hh, sizeof hh, &ctx->hh);
    find_handler(bytes, len, "_ph", ph, sizeof ph, &ctx->ph);
    find_handler(bytes, len, "_th", th, sizeof th, &ctx->th);
    /* Handler memory as FPsPIN's loader sets it: the rest of L2 handler
     * memory after the image's data, a region of its own that
     * task->handler_mem points at and the host fills through
     * fpspin_write_memory (the datatypes demo puts its DDT there). */
    uint32_t data_end, l2_base, l2_size;
    if (find_symbol(bytes, len, "__l2_handler_data_end", &data_end) &&
        find_symbol(bytes, len, "__l2_handler_mem_base", &l2_base) &&
        find_symbol(bytes, len, "__l2_handler_size", &l2_size)) {
        uint64_t start = ((uint64_t)data_end + 63) & ~(uint64_t)63, end = (uint64_t)l2_base + l2_size;
        if (start + 64 <= end) {
            ctx->handler_mem.addr = (fpspin_addr_t)start;
            ctx->handler_mem.size = (uint32_t)(end - start);
        } else {
            LOG("warning: %s fills L2 handler memory: no handler memory left (ctx->handler_mem empty)\n", elf);
        }
    } else {
        LOG("warning: %s has no L2 layout symbols (not built with softspin build?): ctx->handler_mem empty\n", elf);
    }
    int rc = ss_image_from_bytes(S->nic, bytes, len, &S->img);
    free(bytes);
    if (rc) {
        ss_fail("loading the handler image", rc);
        return;
    }
    uint32_t hd;
    if (ss_image_symbol(S->img, "__host_data", &hd) == SS_OK)
        ctx->host_data_ptr = hd;
    else
        LOG("warning: %s has no __host_data (not built with --profile fpspin?)\n", elf);

    ss_ectx_options o;
    ss_ectx_options_init(&o);
    o.name = "fpspin";
    o.hh = hh[0] ? hh : NULL;
    o.ph = ph[0] ? ph : NULL;
    o.th = th[0] ? th : NULL;
    o.host_window = S->window;
    /* FPsPIN's NIC never resets a message; softspin's default (1 ms without
     * a packet) ends a message whose sender waits for ACKs on a busy host.
     * One second still frees the state of a sender that went away. */
    o.msg_timeout_ns = 1000000000ull;
    if (ctx->handler_mem.size) {
        o.handler_mem_addr = ctx->handler_mem.addr;
        o.handler_mem_size = ctx->handler_mem.size;
    }
    (void)hostmem_ptr;
    (void)hostmem_size; /* the window is the lent area */
    char *toml = rules_toml(!hh[0] && !th[0]);
    if (S->live && g_num_rulesets)
        o.rules_toml = toml;
    rc = ss_install(S->nic, S->img, &o, &S->ectx);
    free(toml);
    if (rc) {
        ss_fail("installing the ECTX", rc);
        return;
    }
    S->installed = true;
    if (!S->live)
        ss_set_frame_kind(S->nic, S->ectx, SS_FRAME_ETH);
    if ((rc = ss_activate(S->nic, S->ectx)))
        ss_fail("activating the ECTX", rc);
    LOG("handlers: hh %s, ph %s, th %s\n", hh[0] ? hh : "-", ph[0] ? ph : "-", th[0] ? th : "-");
    if (ctx->handler_mem.size)
        printf("Handler memory addr: %#x, size: %u\n", ctx->handler_mem.addr, ctx->handler_mem.size);
}

void fpspin_unload(fpspin_ctx_t *ctx)
{
    struct fpspin_softspin *S = ctx->softspin;
    if (!S || !S->installed)
        return;
    ss_deactivate(S->nic, S->ectx);
    S->installed = false;
}

static bool is_iface(const char *dev)
{
    return dev && *dev && strncmp(dev, "/dev/", 5) != 0;
}

bool fpspin_init(fpspin_ctx_t *ctx, const char *dev, const char *img, int dest_ctx,
                 const fpspin_ruleset_t *rs, int num_rs, int hostdma_pages)
{
    /* app_data is the program's (FPsPIN's datatypes demo sets it before
     * init and keeps it across its exit/init resets); the rest is ours. */
    void *app_data = ctx->app_data;
    memset(ctx, 0, sizeof(*ctx));
    ctx->app_data = app_data;
    ctx->fd = -1;
    ctx->ctx_id = dest_ctx;
    struct fpspin_softspin *S = calloc(1, sizeof(*S));
    if (!S)
        return false;
    ctx->softspin = S;

    if (hostdma_pages < NUM_HPUS) {
        LOG("error: hostdma_pages %d: at least %d (one page per HPU, NUM_HPUS)\n", hostdma_pages, NUM_HPUS);
        return false;
    }
    ctx->mmap_len = (size_t)hostdma_pages * PAGE_SIZE;
    ctx->cpu_addr = aligned_alloc(PAGE_SIZE, ctx->mmap_len);
    if (!ctx->cpu_addr) {
        LOG("error: cannot allocate %zu bytes of host-DMA area\n", ctx->mmap_len);
        return false;
    }
    memset(ctx->cpu_addr, 0, ctx->mmap_len);

    const char *iface = getenv("SOFTSPIN_FPSPIN_IFACE");
    if (!iface && is_iface(dev))
        iface = dev;
    int rc;
    if (iface) {
        ss_attach_options ao;
        ss_attach_options_init(&ao);
        const char *mode = getenv("SOFTSPIN_FPSPIN_MODE");
        if (mode && !strcmp(mode, "socket"))
            ao.mode = SS_MODE_SOCKET;
        else if (mode && strcmp(mode, "xdp")) {
            LOG("error: SOFTSPIN_FPSPIN_MODE=%s: xdp or socket\n", mode);
            return false;
        }
        rc = ss_nic_attach(iface, &ao, &S->nic);
        S->live = true;
    } else {
        rc = ss_open("fpspin", &S->nic);
    }
    if (rc) {
        ss_fail(iface ? "attaching to the interface" : "opening the simulated NIC", rc);
        return false;
    }
    ss_nic_info info;
    if (ss_nic_get_info(S->nic, &info) == SS_OK && info.hpu_count != NUM_HPUS) {
        LOG("error: the NIC has %u HPUs, this header NUM_HPUS %d\n", info.hpu_count, NUM_HPUS);
        return false;
    }
    if ((rc = ss_host_lend(S->nic, ctx->cpu_addr, ctx->mmap_len, &S->window))) {
        ss_fail("lending the host-DMA area", rc);
        return false;
    }
    printf("Mapped host dma at [%p:%p]\n", ctx->cpu_addr, (char *)ctx->cpu_addr + ctx->mmap_len);
    fpspin_prog_me(rs, num_rs);
    fpspin_load(ctx, img, S->window.base, (uint32_t)S->window.size);
    if (!S->installed)
        return false;
    printf("Host flags at %#llx\n", (unsigned long long)ctx->host_data_ptr);

    if (!S->live) {
        const char *pcap = getenv("SOFTSPIN_FPSPIN_PCAP");
        if (pcap && (rc = ss_feed_pcap(S->nic, pcap, 0.0))) {
            ss_fail("reading $SOFTSPIN_FPSPIN_PCAP", rc);
            return false;
        }
        if (!pcap)
            LOG("simulated NIC without input: set SOFTSPIN_FPSPIN_PCAP to a pcap of frames\n");
    }
    const char *out = getenv("SOFTSPIN_FPSPIN_PCAP_OUT");
    if (out) {
        S->pcap_out = fopen(out, "wb");
        if (!S->pcap_out) {
            LOG("error: cannot write %s\n", out);
            return false;
        }
        /* pcap: microsecond timestamps, Ethernet link type. */
        uint32_t gh[6] = {0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1};
        fwrite(gh, sizeof gh, 1, S->pcap_out);
    }
    return true;
}

/* Drain the NIC's events: outbound frames to the pcap, handler errors
 * reported. */
static void drain_events(struct fpspin_softspin *S)
{
    ss_event ev;
    while (ss_next_event(S->nic, &ev) == SS_OK && ev.kind != SS_EVENT_NONE) {
        if (ev.kind == SS_EVENT_OUTBOUND && S->pcap_out) {
            uint32_t rh[4] = {(uint32_t)(ev.time_ps / 1000000000000ull),
                              (uint32_t)(ev.time_ps / 1000000ull % 1000000ull), (uint32_t)ev.data_len,
                              (uint32_t)ev.data_len};
            fwrite(rh, sizeof rh, 1, S->pcap_out);
            fwrite(ev.data, 1, ev.data_len, S->pcap_out);
        } else if (ev.kind == SS_EVENT_HANDLER_ERROR) {
            S->errors++;
            LOG("handler error: %s: %s%s%s\n", ev.handler ? ev.handler : "(message)",
                ev.cause ? ev.cause : "?", ev.detail ? ": " : "", ev.detail ? ev.detail : "");
        }
    }
}

/* Run the NIC a step and collect requests into the per-HPU slots. */
static void pump(struct fpspin_softspin *S)
{
    ss_notification notes[NUM_HPUS];
    size_t n = 0;
    int rc;
    if (S->live) {
        rc = ss_run_for_ns(S->nic, LIVE_SLICE_NS);
        if (rc == SS_OK)
            rc = ss_poll_notifications(S->nic, notes, NUM_HPUS, &n);
    } else {
        rc = ss_wait_notifications(S->nic, notes, NUM_HPUS, &n);
    }
    drain_events(S);
    if (rc) {
        ss_fail("running the NIC", rc);
        S->sim_done = !S->live;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t h = notes[i].hpu;
        fpspin_flag_t f = {.data = 0};
        memcpy(&f.data, notes[i].data, notes[i].data_len < 8 ? notes[i].data_len : 8);
        if (h >= NUM_HPUS || S->pending[h].valid) {
            /* One request per HPU at a time, as FPsPIN's flag page. */
            LOG("error: request from HPU %u while %s; answered with 0\n", h,
                h >= NUM_HPUS ? "beyond NUM_HPUS" : "its last one is unanswered");
            ss_respond(S->nic, notes[i].id, 0);
            continue;
        }
        S->pending[h] = (struct pending){.valid = true, .id = notes[i].id, .flag = f};
    }
    if (!S->live && n == 0)
        S->sim_done = true; /* nothing left to run: see idle_poll */
}

/* The simulation has nothing left: once the program has asked about every
 * HPU since (so it saw every request, answered or not, in its own polling
 * order) and none is left unanswered, end it the way FPsPIN's are stopped:
 * their SIGINT handlers exit the loop. Programs that end by themselves
 * after their last request (the datatypes demo) never get here. */
static void idle_poll(struct fpspin_softspin *S, int hpu_id)
{
    if (S->live || !S->sim_done || S->sigint_sent)
        return;
    _Static_assert(NUM_HPUS <= 32, "idle_polled holds one bit per HPU");
    S->idle_polled |= 1u << hpu_id;
    if (S->idle_polled != (uint32_t)((1ull << NUM_HPUS) - 1))
        return;
    for (int i = 0; i < NUM_HPUS; i++)
        if (S->pending[i].valid)
            return;
    S->sigint_sent = true;
    LOG("simulation idle: input exhausted, raising SIGINT\n");
    raise(SIGINT);
}

volatile void *fpspin_pop_req(fpspin_ctx_t *ctx, int hpu_id, fpspin_flag_t *f)
{
    struct fpspin_softspin *S = ctx->softspin;
    if (!S || !S->installed || hpu_id < 0 || hpu_id >= NUM_HPUS)
        return NULL;
    bool any = false;
    for (int i = 0; i < NUM_HPUS; i++)
        any |= S->pending[i].valid && !S->pending[i].popped;
    if (!any && !S->sim_done)
        pump(S);
    struct pending *p = &S->pending[hpu_id];
    if (!p->valid || p->popped) {
        idle_poll(S, hpu_id);
        return NULL;
    }
    p->popped = true;
    *f = p->flag;
    if (f->hpu_id != hpu_id)
        printf("HPU ID mismatch!  Actual HPU ID: %d\n", f->hpu_id);
    ctx->dma_idx[hpu_id] = f->dma_id;
    return (uint8_t *)ctx->cpu_addr + (size_t)hpu_id * PAGE_SIZE + DMA_ALIGN;
}

void fpspin_push_resp(fpspin_ctx_t *ctx, int hpu_id, fpspin_flag_t flag)
{
    struct fpspin_softspin *S = ctx->softspin;
    if (!S || hpu_id < 0 || hpu_id >= NUM_HPUS || !S->pending[hpu_id].valid) {
        LOG("error: fpspin_push_resp for HPU %d, which has no request\n", hpu_id);
        return;
    }
    flag.dma_id = ctx->dma_idx[hpu_id];
    flag.hpu_id = (uint16_t)hpu_id;
    int rc = ss_respond(S->nic, S->pending[hpu_id].id, flag.data);
    if (rc)
        ss_fail("ss_respond", rc);
    S->pending[hpu_id] = (struct pending){0};
}

void fpspin_exit(fpspin_ctx_t *ctx)
{
    struct fpspin_softspin *S = ctx->softspin;
    if (!S)
        return;
    if (S->nic) {
        /* Finish what is in flight (simulation) and report. */
        if (S->live)
            ss_run_for_ns(S->nic, 50000000); /* answers just given reach their handlers */
        ss_run_until_idle(S->nic);
        drain_events(S);
        char buf[8192];
        size_t len = 0;
        if (ss_report_text(S->nic, buf, sizeof buf, &len) == SS_OK)
            fprintf(stderr, "%.*s", (int)(len < sizeof buf ? len : sizeof buf), buf);
        fpspin_unload(ctx);
        if (S->img)
            ss_image_free(S->img);
        ss_close(S->nic);
    }
    if (S->pcap_out)
        fclose(S->pcap_out);
    if (S->errors)
        LOG("%llu handler errors\n", S->errors);
    free(ctx->cpu_addr);
    ctx->cpu_addr = NULL;
    free(S);
    ctx->softspin = NULL;
}

/* ---- counters and NIC memory: the handlers' __host_data ---- */

static uint32_t counter_addr(fpspin_ctx_t *ctx, int id)
{
    return (uint32_t)ctx->host_data_ptr + (uint32_t)offsetof(struct host_data, counters) +
           (uint32_t)id * (uint32_t)sizeof(struct perf_counter);
}

fpspin_counter_t fpspin_get_counter(fpspin_ctx_t *ctx, int id)
{
    fpspin_counter_t c = {0, 0};
    struct fpspin_softspin *S = ctx->softspin;
    if (!S || !ctx->host_data_ptr || id < 0 || id >= MAX_COUNTERS) {
        LOG("error: counter %d: 0..%d, with an image that has __host_data\n", id, MAX_COUNTERS - 1);
        return c;
    }
    int rc = ss_nic_read(S->nic, counter_addr(ctx, id), &c, sizeof c);
    if (rc)
        ss_fail("reading a counter", rc);
    return c;
}

void fpspin_clear_counter(fpspin_ctx_t *ctx, int id)
{
    struct fpspin_softspin *S = ctx->softspin;
    if (!S || !ctx->host_data_ptr || id < 0 || id >= MAX_COUNTERS) {
        LOG("error: counter %d: 0..%d, with an image that has __host_data\n", id, MAX_COUNTERS - 1);
        return;
    }
    fpspin_counter_t z = {0, 0};
    int rc = ss_nic_write(S->nic, counter_addr(ctx, id), &z, sizeof z);
    if (rc)
        ss_fail("clearing a counter", rc);
}

double fpspin_get_cycles(fpspin_ctx_t *ctx, int id)
{
    fpspin_counter_t c = fpspin_get_counter(ctx, id);
    return (double)c.sum / c.count;
}

uint32_t fpspin_get_avg_cycles(fpspin_ctx_t *ctx)
{
    fpspin_counter_t c = fpspin_get_counter(ctx, 0);
    return c.count ? c.sum / c.count : 0;
}

void fpspin_write_memory(fpspin_ctx_t *ctx, fpspin_addr_t pspin_addr, void *host_addr, size_t len)
{
    struct fpspin_softspin *S = ctx->softspin;
    if (!S) {
        LOG("error: fpspin_write_memory before fpspin_init\n");
        return;
    }
    int rc = ss_nic_write(S->nic, pspin_addr, host_addr, len);
    if (rc)
        ss_fail("fpspin_write_memory", rc);
}

/* ---- SLMP sender (FPsPIN's slmp.c API) over softspin's SLMP sender ---- */

int slmp_socket(slmp_sock_t *sock, int wnd_sz, int align, int fc_us, int num_threads)
{
    if (wnd_sz < 0 || align < 0 || fc_us < 0 || num_threads < 1) {
        LOG("error: slmp_socket: wnd_sz, align, fc_us >= 0, num_threads >= 1\n");
        return -1;
    }
    *sock = (slmp_sock_t){.parallel = num_threads > 1, .wnd_sz = wnd_sz, .align = align, .fc_us = fc_us,
                          .num_threads = num_threads};
    return 0;
}

int slmp_sendmsg(slmp_sock_t *sock, in_addr_t server, int msgid, void *buf, size_t sz)
{
    char to[32];
    struct in_addr a = {.s_addr = server};
    snprintf(to, sizeof to, "%s:%d", inet_ntoa(a), SLMP_PORT);
    ss_slmp_options o;
    ss_slmp_options_init(&o);
    if (sock->wnd_sz > 0)
        o.window = (uint32_t)sock->wnd_sz;
    o.first_msg_id = (uint32_t)msgid;
    const void *msgs[1] = {buf};
    size_t lens[1] = {sz};
    int rc = ss_slmp_send(to, msgs, lens, 1, &o, NULL);
    if (rc) {
        ss_fail("slmp_sendmsg", rc);
        return -1;
    }
    return 0;
}

int slmp_close(slmp_sock_t *sock)
{
    (void)sock;
    return 0;
}
