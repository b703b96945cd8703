/* PsPIN's simulator API (pspinsim.h, spin.h) over softspin's C API.
 *
 * A PsPIN driver describes execution contexts as spin_ec_t (seed 001,
 * execution contexts) and hands packets to the NIC inbound engine with a
 * wait after each one. Here the NIC is softspin's "pspin" profile:
 * - each distinct spin_ec_t becomes one softspin ECTX, installed when the
 *   simulation starts, with the handlers named through
 *   spin_find_handler_by_name, its handler-memory size, a host window of
 *   its host_mem_size and its per-cluster scratchpads;
 * - packets go to their ECTX directly (PsPIN's driver, not a matching
 *   engine, picks the ECTX), as IP-first frames (SS_FRAME_IP, the bytes the
 *   driver filled), one after another with the driver's wait (1 cycle =
 *   1 ns at PsPIN's 1 GHz) after each;
 * - the feedback callback runs once per packet whose handlers all
 *   succeeded (goodput, not offered load); handler errors are printed and
 *   counted, and make pspinsim_fini fail.
 * docs/pspin-drivers.md lists what differs from PsPIN's Verilator model. */
#define _GNU_SOURCE
#include "pspinsim.h"

#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softspin.h"

/* PsPIN's clock: wait cycles are nanoseconds (seed 001 §4: 1 GHz). */
#define PSPIN_CYCLE_NS 1
/* Handler size PsPIN's symbol lookup reports for a found handler. */
#define PSPIN_HANDLER_SIZE 4096
/* Distinct images, handler symbols, ECTXs, pending NIC writes we track. */
#define MAX_IMAGES 16
#define MAX_SYMS 128
#define MAX_ECTXS 16

#define LOG(...) fprintf(stdout, "[PSPINSIM] " __VA_ARGS__)

struct image {
    char *path;
    ss_image *img;
    uint32_t data_lo, data_hi; /* the image's L2 data, [lo, hi) */
};

struct sym {
    uint32_t addr;
    char *name;
    int image;
};

struct ectx {
    spin_ec_t ec;
    int image;
    ss_ectx id;
    ss_host_window window;
    uint32_t hmem;     /* softspin handler memory = task->handler_mem */
    uint32_t l1_copy;  /* 0 = whole packets */
    int installed;
};

struct pkt {
    int ectx;
    uint32_t msgid;
    uint8_t *data;
    size_t len;
    uint8_t eom;
    uint32_t wait;
    uint64_t user_ptr;
    double arrival_ns;
};

struct nic_write {
    uint32_t addr;
    uint8_t *data;
    size_t len;
    void *user_ptr;
};

static struct {
    ss_nic *nic;
    struct image images[MAX_IMAGES];
    int nimages;
    struct sym syms[MAX_SYMS];
    int nsyms;
    struct ectx ectxs[MAX_ECTXS];
    int nectxs;
    struct pkt *pkts;
    size_t npkts, cap;
    struct nic_write *writes;
    size_t nwrites;
    int eos, ran;
    uint64_t handler_errors, fed_back, refused;
    pkt_out_cb_t pkt_out;
    pkt_feedback_cb_t feedback;
    pcie_slv_write_cb_t slv_write;
    pcie_slv_read_cb_t slv_read;
    pcie_mst_write_cb_t mst_write;
    pcie_mst_read_cb_t mst_read;
} S;

static int fail(const char *what, int rc)
{
    LOG("error: %s: %s (%s)\n", what, ss_last_error(), ss_strerror(rc));
    return SPIN_ERR;
}

/* The image's L2 data range from its program headers: softspin puts an
 * ECTX's handler memory at its start. */
static int image_data_range(const char *path, uint32_t *lo, uint32_t *hi)
{
    FILE *f = fopen(path, "rb");
    Elf32_Ehdr eh;
    *lo = UINT32_MAX;
    *hi = 0;
    if (!f)
        return -1;
    if (fread(&eh, sizeof eh, 1, f) != 1 || eh.e_ident[EI_CLASS] != ELFCLASS32) {
        fclose(f);
        return -1;
    }
    for (int i = 0; i < eh.e_phnum; i++) {
        Elf32_Phdr ph;
        if (fseek(f, (long)(eh.e_phoff + (uint32_t)i * eh.e_phentsize), SEEK_SET) ||
            fread(&ph, sizeof ph, 1, f) != 1)
            break;
        if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) || ph.p_memsz == 0)
            continue;
        if (ph.p_vaddr < *lo)
            *lo = ph.p_vaddr;
        if (ph.p_vaddr + ph.p_memsz > *hi)
            *hi = ph.p_vaddr + ph.p_memsz;
    }
    fclose(f);
    if (*lo == UINT32_MAX)
        *lo = *hi = 0;
    return 0;
}

static int ensure_nic(void)
{
    if (S.nic)
        return 0;
    int rc = ss_open("pspin", &S.nic);
    if (rc != SS_OK) {
        fail("ss_open(\"pspin\")", rc);
        return -1;
    }
    ss_nic_info info;
    if (ss_nic_get_info(S.nic, &info) == SS_OK && info.clusters != NUM_CLUSTERS) {
        LOG("error: spin_ec_t has NUM_CLUSTERS=%d scratchpads but the NIC has %u clusters\n",
            NUM_CLUSTERS, info.clusters);
        return -1;
    }
    return 0;
}

static int image_index(const char *path)
{
    for (int i = 0; i < S.nimages; i++)
        if (!strcmp(S.images[i].path, path))
            return i;
    if (S.nimages == MAX_IMAGES || ensure_nic())
        return -1;
    struct image *im = &S.images[S.nimages];
    int rc = ss_image_load(S.nic, path, &im->img);
    if (rc != SS_OK) {
        fail(path, rc);
        return -1;
    }
    image_data_range(path, &im->data_lo, &im->data_hi);
    im->path = strdup(path);
    return S.nimages++;
}

int spin_find_handler_by_name(const char *binfile, const char *handler_name,
                              spin_nic_addr_t *handler_addr, size_t *handler_size)
{
    if (!binfile || !handler_name || !handler_addr || !handler_size)
        return SPIN_ERR;
    int i = image_index(binfile);
    if (i < 0)
        return SPIN_ERR;
    uint32_t addr;
    if (ss_image_symbol(S.images[i].img, handler_name, &addr) != SS_OK) {
        LOG("%s: no symbol %s: no such handler\n", binfile, handler_name);
        return SPIN_SUCCESS;
    }
    if (S.nsyms == MAX_SYMS) {
        LOG("error: more than %d handler lookups\n", MAX_SYMS);
        return SPIN_ERR;
    }
    S.syms[S.nsyms++] = (struct sym){addr, strdup(handler_name), i};
    *handler_addr = addr;
    *handler_size = PSPIN_HANDLER_SIZE;
    return SPIN_SUCCESS;
}

/* The most recent lookup that gave `addr` in image `image` (-1: any). */
static const struct sym *sym_at(uint32_t addr, int image)
{
    for (int k = S.nsyms - 1; k >= 0; k--)
        if (S.syms[k].addr == addr && (image < 0 || S.syms[k].image == image))
            return &S.syms[k];
    return NULL;
}

int spin_nicmem_write(spin_nic_addr_t addr, void *data, size_t size, void *user_ptr)
{
    if (!data && size)
        return SPIN_ERR;
    struct nic_write *w = realloc(S.writes, (S.nwrites + 1) * sizeof *w);
    if (!w)
        return SPIN_ERR;
    S.writes = w;
    w = &S.writes[S.nwrites];
    w->data = malloc(size ? size : 1);
    if (!w->data)
        return SPIN_ERR;
    memcpy(w->data, data, size);
    w->addr = addr;
    w->len = size;
    w->user_ptr = user_ptr;
    S.nwrites++;
    return SPIN_SUCCESS;
}

/* A PsPIN NIC address inside some ECTX's handler memory -> softspin's. */
static uint32_t translate(uint32_t addr, size_t len)
{
    for (int k = 0; k < S.nectxs; k++) {
        const spin_ec_t *ec = &S.ectxs[k].ec;
        if (S.ectxs[k].installed && addr >= ec->handler_mem_addr &&
            (uint64_t)addr + len <= (uint64_t)ec->handler_mem_addr + ec->handler_mem_size)
            return S.ectxs[k].hmem + (addr - ec->handler_mem_addr);
    }
    return addr;
}

int spin_nicmem_read(spin_nic_addr_t addr, void *data, size_t size, void *user_ptr)
{
    (void)user_ptr;
    if (!S.nic)
        return SPIN_ERR;
    int rc = ss_nic_read(S.nic, translate(addr, size), data, size);
    return rc == SS_OK ? SPIN_SUCCESS : fail("spin_nicmem_read", rc);
}

int pspinsim_default_conf(pspin_conf_t *conf)
{
    if (!conf)
        return SPIN_ERR;
    memset(conf, 0, sizeof *conf);
    conf->slm_files_path = NULL;
    conf->no_conf.max_pkt_size = 2048;
    return SPIN_SUCCESS;
}

int pspinsim_init(int argc, char **argv, pspin_conf_t *conf)
{
    (void)argc;
    (void)argv;
    (void)conf;
    return ensure_nic() ? SPIN_ERR : SPIN_SUCCESS;
}

static int ectx_index(const spin_ec_t *ec)
{
    for (int k = 0; k < S.nectxs; k++)
        if (!memcmp(&S.ectxs[k].ec, ec, sizeof *ec))
            return k;
    if (S.nectxs == MAX_ECTXS) {
        LOG("error: more than %d execution contexts\n", MAX_ECTXS);
        return -1;
    }
    memset(&S.ectxs[S.nectxs], 0, sizeof S.ectxs[0]);
    S.ectxs[S.nectxs].ec = *ec;
    S.ectxs[S.nectxs].image = -1;
    return S.nectxs++;
}

int pspinsim_packet_add(spin_ec_t *ec, uint32_t msgid, uint8_t *pkt_data, size_t pkt_len,
                        size_t pkt_l1_len, uint8_t eom, uint32_t wait_cycles, uint64_t user_ptr)
{
    if (!ec || !pkt_data || pkt_len == 0 || S.eos)
        return SPIN_ERR;
    int k = ectx_index(ec);
    if (k < 0)
        return SPIN_ERR;
    /* softspin's L1 copy size is per ECTX: the first partial copy sets it. */
    if (pkt_l1_len < pkt_len && S.ectxs[k].l1_copy == 0)
        S.ectxs[k].l1_copy = (uint32_t)pkt_l1_len;
    if (S.npkts == S.cap) {
        size_t cap = S.cap ? 2 * S.cap : 256;
        struct pkt *p = realloc(S.pkts, cap * sizeof *p);
        if (!p)
            return SPIN_ERR;
        S.pkts = p;
        S.cap = cap;
    }
    struct pkt *p = &S.pkts[S.npkts];
    p->data = malloc(pkt_len);
    if (!p->data)
        return SPIN_ERR;
    memcpy(p->data, pkt_data, pkt_len);
    p->ectx = k;
    p->msgid = msgid;
    p->len = pkt_len;
    p->eom = eom;
    p->wait = wait_cycles;
    p->user_ptr = user_ptr;
    p->arrival_ns = 0;
    S.npkts++;
    return SPIN_SUCCESS;
}

int pspinsim_packet_eos()
{
    S.eos = 1;
    return SPIN_SUCCESS;
}

int pspinsim_packet_trace_read(const char *pkt_file_path, const char *data_file_path)
{
    (void)pkt_file_path;
    (void)data_file_path;
    LOG("error: pspinsim_packet_trace_read (PsPIN's HER trace files) is not supported; "
        "use pspinsim_packet_add or the generic driver's -t\n");
    return SPIN_ERR;
}

/* Install ECTX k: its handlers' image, handler memory, host window and
 * scratchpads as the spin_ec_t gives them. */
static int install(int k)
{
    struct ectx *e = &S.ectxs[k];
    const spin_ec_t *ec = &e->ec;
    const uint32_t addrs[3] = {ec->hh_addr, ec->ph_addr, ec->th_addr};
    const uint32_t sizes[3] = {ec->hh_size, ec->ph_size, ec->th_size};
    const char *names[3] = {NULL, NULL, NULL};
    int image = -1;
    for (int h = 0; h < 3; h++) {
        if (sizes[h] == 0)
            continue; /* PsPIN: size 0 = no handler */
        const struct sym *s = sym_at(addrs[h], image);
        if (!s) {
            LOG("error: ECTX %d: handler address 0x%08x was not found with spin_find_handler_by_name\n",
                k, addrs[h]);
            return -1;
        }
        image = s->image;
        names[h] = s->name;
    }
    if (image < 0) {
        LOG("error: ECTX %d has no handler\n", k);
        return -1;
    }
    e->image = image;
    const struct image *im = &S.images[image];

    ss_ectx_options o;
    ss_ectx_options_init(&o);
    char name[32];
    snprintf(name, sizeof name, "ectx%d", k);
    o.name = name;
    o.hh = names[0];
    o.ph = names[1];
    o.th = names[2];
    /* PsPIN's handler memory is a region of its own per ECTX, apart from
     * the image's data (shared by ECTXs of one image): place it in L2 after
     * every image's data and the ECTXs installed before this one. */
    uint32_t at = 0x1c000000u;
    for (int i = 0; i < S.nimages; i++)
        if (S.images[i].data_hi > at)
            at = S.images[i].data_hi;
    for (int j = 0; j < S.nectxs; j++) {
        uint32_t end = S.ectxs[j].hmem + S.ectxs[j].ec.handler_mem_size;
        if (j != k && S.ectxs[j].installed && end > at)
            at = end;
    }
    at = (at + 63) & ~63u;
    o.handler_mem_addr = at;
    o.handler_mem_size = ec->handler_mem_size;
    o.l1_copy = e->l1_copy;
    uint32_t pads[NUM_CLUSTERS];
    for (int c = 0; c < NUM_CLUSTERS; c++)
        pads[c] = ec->scratchpad_size[c];
    o.scratchpad = pads;
    o.scratchpad_len = NUM_CLUSTERS;
    o.udp_dst_port = 0; /* every packet: the driver routes them (below) */
    if (ec->host_mem_size) {
        int rc = ss_host_window_create(S.nic, ec->host_mem_size, &e->window);
        if (rc != SS_OK)
            return fail("host window (host_mem_size)", rc);
        o.host_window = e->window;
    }
    int rc = ss_install(S.nic, im->img, &o, &e->id);
    if (rc != SS_OK) {
        fail("ss_install", rc);
        return -1;
    }
    e->hmem = at;
    e->installed = 1;
    LOG("ECTX %d: %s hh=%s ph=%s th=%s handler_mem=0x%08x+%u host window %" PRIu64
        " B scratchpad %u B per cluster\n",
        k, im->path, names[0] ? names[0] : "-", names[1] ? names[1] : "-",
        names[2] ? names[2] : "-", e->hmem, o.handler_mem_size, (uint64_t)e->window.size,
        pads[0]);
    return 0;
}

/* Apply the host's NIC-memory writes now that handler memory exists. A
 * write to an ECTX's PsPIN handler memory lands at task->handler_mem, where
 * handlers look for it; handler memory lies apart from the images' data, so
 * only a write outside every handler memory can reach an image's data: the
 * host's bytes win and the overlap is reported. */
static int apply_writes(void)
{
    for (size_t i = 0; i < S.nwrites; i++) {
        struct nic_write *w = &S.writes[i];
        uint32_t to = translate(w->addr, w->len);
        for (int k = 0; k < S.nectxs; k++) {
            const struct image *im = &S.images[S.ectxs[k].image];
            if (!S.ectxs[k].installed || to >= im->data_hi || to + w->len <= im->data_lo)
                continue;
            LOG("warning: host data at 0x%08x+%zu overwrites the image's data 0x%08x+%u of ECTX %d "
                "(the write is outside the ECTXs' handler memory)\n",
                to, w->len, im->data_lo, im->data_hi - im->data_lo, k);
        }
        int rc = ss_nic_write(S.nic, to, w->data, w->len);
        if (rc != SS_OK)
            return fail("spin_nicmem_write", rc);
        if (S.mst_write)
            S.mst_write(w->user_ptr);
        free(w->data);
    }
    S.nwrites = 0;
    return 0;
}

/* Report events: outbound packets, host writes, handler errors. */
static void drain_events(void)
{
    ss_event ev;
    while (ss_next_event(S.nic, &ev) == SS_OK && ev.kind != SS_EVENT_NONE) {
        switch (ev.kind) {
        case SS_EVENT_OUTBOUND:
            if (S.pkt_out)
                S.pkt_out((uint8_t *)ev.data, ev.data_len);
            break;
        case SS_EVENT_HOST_WRITE:
            if (S.slv_write) {
                uint8_t v[8];
                memcpy(v, &ev.value, 8);
                S.slv_write(ev.addr, v, 8);
            }
            break;
        case SS_EVENT_HANDLER_ERROR:
            S.handler_errors++;
            LOG("handler error: %s %s msg %u: %s%s%s\n", ev.ectx_name ? ev.ectx_name : "?",
                ev.handler ? ev.handler : "(message)", ev.msg_id, ev.cause ? ev.cause : "?",
                ev.detail ? ": " : "", ev.detail ? ev.detail : "");
            break;
        default:
            break;
        }
    }
}

/* Feedback for the packets that completed since the last call, oldest
 * first; packets whose handlers failed get none. */
static void feed_back(void)
{
    ss_report r;
    double now = 0;
    if (ss_get_report(S.nic, &r) != SS_OK)
        return;
    ss_now_ns(S.nic, &now);
    uint64_t good = r.packets > r.errors ? r.packets - r.errors : 0;
    while (S.fed_back < good && S.fed_back < S.npkts) {
        const struct pkt *p = &S.pkts[S.fed_back++];
        if (S.feedback)
            S.feedback(p->user_ptr, (uint64_t)p->arrival_ns, (uint64_t)p->arrival_ns, (uint64_t)now);
    }
}

int pspinsim_run()
{
    if (ensure_nic() || S.ran)
        return SPIN_ERR;
    S.ran = 1;
    for (int k = 0; k < S.nectxs; k++)
        if (install(k))
            return SPIN_ERR;
    if (apply_writes())
        return SPIN_ERR;
    int active = -1;
    for (size_t i = 0; i < S.npkts; i++) {
        struct pkt *p = &S.pkts[i];
        struct ectx *e = &S.ectxs[p->ectx];
        if (active != p->ectx) {
            /* Straight to the packet's ECTX: it alone is active when the
             * packet arrives (packets already sent are admitted first). */
            if (active >= 0) {
                ss_run_for_ns(S.nic, 1);
                ss_deactivate(S.nic, S.ectxs[active].id);
            }
            int rc = ss_activate(S.nic, e->id);
            if (rc != SS_OK)
                return fail("ss_activate", rc);
            active = p->ectx;
        }
        ss_now_ns(S.nic, &p->arrival_ns);
        int rc = ss_send_packet(S.nic, p->data, p->len, p->msgid, p->eom);
        if (rc != SS_OK)
            return fail("ss_send_packet", rc);
        if (p->wait) {
            rc = ss_run_for_ns(S.nic, (uint64_t)p->wait * PSPIN_CYCLE_NS);
            if (rc != SS_OK)
                return fail("running the NIC", rc);
        }
        drain_events();
        feed_back();
    }
    int rc = ss_run_until_idle(S.nic);
    drain_events();
    feed_back();
    if (rc != SS_OK)
        return fail("running the NIC", rc);
    return SPIN_SUCCESS;
}

int pspinsim_run_tick(uint8_t *done_flag)
{
    /* One tick = the whole run: softspin is event driven, not clocked. */
    int rc = S.ran ? SPIN_SUCCESS : pspinsim_run();
    if (done_flag)
        *done_flag = 1;
    return rc;
}

int pspinsim_fini()
{
    if (!S.nic)
        return SPIN_ERR;
    ss_report r;
    int ok = ss_get_report(S.nic, &r) == SS_OK;
    ss_nic_info info;
    ss_nic_get_info(S.nic, &info);
    for (uint32_t h = 0; h < info.hpu_count; h++) {
        size_t len = 0;
        char buf[8192];
        if (ss_hpu_stdout(S.nic, h, buf, sizeof buf, &len) == SS_OK && len)
            printf("[HPU %u]\n%s%s", h, buf, buf[strlen(buf) - 1] == '\n' ? "" : "\n");
    }
    printf("\n###### Statistics (softspin) ######\n");
    size_t len = 0;
    ss_report_text(S.nic, NULL, 0, &len);
    char *text = malloc(len + 1);
    if (text && ss_report_text(S.nic, text, len + 1, NULL) == SS_OK)
        fputs(text, stdout);
    free(text);
    if (ok)
        printf("[PSPINSIM] packets sent %zu, processed %" PRIu64 ", fed back %" PRIu64
               ", handler errors %" PRIu64 ", unmatched %" PRIu64 ", dropped %" PRIu64 "\n",
               S.npkts, r.packets, S.fed_back, S.handler_errors, r.unmatched, r.drops);
    int good = ok && S.handler_errors == 0 && r.errors == 0 && r.unmatched == 0 && r.drops == 0 &&
               S.fed_back == S.npkts;
    for (size_t i = 0; i < S.npkts; i++)
        free(S.pkts[i].data);
    free(S.pkts);
    for (size_t i = 0; i < S.nwrites; i++)
        free(S.writes[i].data);
    free(S.writes);
    for (int i = 0; i < S.nimages; i++) {
        ss_image_free(S.images[i].img);
        free(S.images[i].path);
    }
    for (int i = 0; i < S.nsyms; i++)
        free(S.syms[i].name);
    ss_close(S.nic);
    memset(&S, 0, sizeof S);
    return good ? SPIN_SUCCESS : SPIN_ERR;
}

int pspinsim_cb_set_pkt_out(pkt_out_cb_t cb)
{
    S.pkt_out = cb;
    return SPIN_SUCCESS;
}
int pspinsim_cb_set_pcie_slv_write(pcie_slv_write_cb_t cb)
{
    S.slv_write = cb;
    return SPIN_SUCCESS;
}
int pspinsim_cb_set_pcie_slv_read(pcie_slv_read_cb_t cb)
{
    S.slv_read = cb;
    return SPIN_SUCCESS;
}
int pspinsim_cb_set_pcie_mst_write_completion(pcie_mst_write_cb_t cb)
{
    S.mst_write = cb;
    return SPIN_SUCCESS;
}
int pspinsim_cb_set_pcie_mst_read_completion(pcie_mst_read_cb_t cb)
{
    S.mst_read = cb;
    return SPIN_SUCCESS;
}
int pspinsim_cb_set_pkt_feedback(pkt_feedback_cb_t cb)
{
    S.feedback = cb;
    return SPIN_SUCCESS;
}
