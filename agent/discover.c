/* Hardware discovery with hwloc, NVLink grouping, and GPU domains.
 * See agent/discover.h for what is discovered and how it is named.
 *
 * I/O objects are kept (hwloc_topology_set_io_types_filter KEEP_ALL) so PCI
 * bridges, GPUs and OS devices are visible; an I/O object's NUMA node is the
 * first node of its nearest non-I/O ancestor, which also handles exports
 * where host bridges hang below NUMANode objects (LLNL Tioga). */
#include "agent/discover.h"

#include <errno.h>
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

static int is_gpu_pci(const struct hwloc_pcidev_attr_s *p)
{
    if (p->vendor_id != 0x10de && p->vendor_id != 0x1002)
        return 0;
    return p->class_id == 0x0300 || p->class_id == 0x0302 || p->class_id == 0x0380;
}

static int cpu_node(const struct tg_hw *hw, int32_t id)
{
    for (uint32_t i = 0; i < hw->nnuma; i++)
        if (hw->numa[i].id == id)
            return 1;
    return 0;
}

/* The CPU NUMA node of an I/O object: the first node with CPUs in the
 * nodeset of its nearest non-I/O ancestor, else the node a memory-only node
 * there is attached to, else -1. */
static int io_numa(hwloc_topology_t topo, const struct tg_hw *hw, hwloc_obj_t obj)
{
    hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(topo, obj);
    if (!a || !a->nodeset || hwloc_bitmap_iszero(a->nodeset))
        return -1;
    int id;
    hwloc_bitmap_foreach_begin(id, a->nodeset) {
        if (cpu_node(hw, id))
            return id;
    } hwloc_bitmap_foreach_end();
    hwloc_bitmap_foreach_begin(id, a->nodeset) {
        for (uint32_t i = 0; i < hw->nmem; i++)
            if (hw->mem[i].id == id && hw->mem[i].numa >= 0)
                return hw->mem[i].numa;
    } hwloc_bitmap_foreach_end();
    return -1;
}

static void busid_of(const struct hwloc_pcidev_attr_s *p, char out[TG_TOPO_NAME])
{
    snprintf(out, TG_TOPO_NAME, "%04x:%02x:%02x.%x", (unsigned)p->domain, p->bus, p->dev, p->func);
}

static int is_pci_bridge(hwloc_obj_t o)
{
    return o && o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
}

/* Host bridge above obj as "dddd:bb" (domain, secondary bus), "" if none. */
static void root_of(hwloc_obj_t obj, char out[TG_TOPO_NAME])
{
    out[0] = 0;
    for (hwloc_obj_t p = obj->parent; p; p = p->parent)
        if (p->type == HWLOC_OBJ_BRIDGE && p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
            snprintf(out, TG_TOPO_NAME, "%04x:%02x", (unsigned)p->attr->bridge.downstream.pci.domain,
                     p->attr->bridge.downstream.pci.secondary_bus);
            return;
        }
}

/* Upstream port of the PCIe switch obj sits under: its parent is a switch
 * downstream port whose own parent is a PCI bridge too. "" when none. */
static void switch_of(hwloc_obj_t obj, char out[TG_TOPO_NAME])
{
    out[0] = 0;
    hwloc_obj_t p = obj->parent;
    if (is_pci_bridge(p) && is_pci_bridge(p->parent))
        busid_of(&p->parent->attr->bridge.upstream.pci, out);
}

static hwloc_obj_t osdev_child(hwloc_obj_t pci, int type)
{
    for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
        if (c->type == HWLOC_OBJ_OS_DEVICE && (int)c->attr->osdev.type == type)
            return c;
    return NULL;
}

/* The GPU's OS device: NVML/RSMI first, then CUDA/OpenCL, then DRM. */
static hwloc_obj_t gpu_osdev(hwloc_obj_t pci)
{
    hwloc_obj_t coproc = NULL, other = NULL;
    for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE)
            continue;
        const char *be = c->subtype ? c->subtype : hwloc_obj_get_info_by_name(c, "Backend");
        if (be && (!strcmp(be, "NVML") || !strcmp(be, "RSMI")))
            return c;
        if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC && !coproc)
            coproc = c;
        else if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU && !other)
            other = c;
    }
    return coproc ? coproc : other;
}

static void copy_name(char out[TG_TOPO_NAME], const char *s)
{
    snprintf(out, TG_TOPO_NAME, "%s", s ? s : "");
}

/* ---- NUMA nodes --------------------------------------------------------- */

#define MAX_NODES (TG_TOPO_MAX_NUMA + TG_TOPO_MAX_MEMNODES)

static uint8_t mem_kind(const char *subtype)
{
    static const struct { const char *name; uint8_t kind; } map[] = {
        {"DRAM", TG_TOPO_MEM_DRAM}, {"HBM", TG_TOPO_MEM_HBM}, {"MCDRAM", TG_TOPO_MEM_HBM},
        {"GPUMemory", TG_TOPO_MEM_GPU}, {"NVM", TG_TOPO_MEM_NVM}, {"SPM", TG_TOPO_MEM_SPM},
        {"CXL-DRAM", TG_TOPO_MEM_CXL}, {"CXL-NVM", TG_TOPO_MEM_CXL},
        {"CXL-GPUMemory", TG_TOPO_MEM_GPU},
    };
    for (size_t i = 0; subtype && i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(subtype, map[i].name))
            return map[i].kind;
    return TG_TOPO_MEM_OTHER;
}

/* Main memory (no subtype or DRAM) is a PU's home before special memory. */
static int is_main_memory(hwloc_obj_t n)
{
    uint8_t k = mem_kind(n->subtype);
    return k == TG_TOPO_MEM_OTHER || k == TG_TOPO_MEM_DRAM;
}

/* 1 when NUMA node a is a better home for a PU than b (both hold it). */
static int better_home(hwloc_obj_t a, hwloc_obj_t b)
{
    int wa = hwloc_bitmap_weight(a->cpuset), wb = hwloc_bitmap_weight(b->cpuset);
    if (wa != wb)
        return wa < wb;
    if (is_main_memory(a) != is_main_memory(b))
        return is_main_memory(a);
    return a->os_index < b->os_index;
}

/* Index in nodes[] of the home node of PU os index pu, -1 none. */
static int home_of(hwloc_obj_t *nodes, uint32_t n, unsigned pu)
{
    int best = -1;
    for (uint32_t i = 0; i < n; i++)
        if (nodes[i]->cpuset && hwloc_bitmap_isset(nodes[i]->cpuset, pu) &&
            (best < 0 || better_home(nodes[i], nodes[best])))
            best = (int)i;
    return best;
}

/* The CPU node closest to memory-only node m by the NUMA latency matrix,
 * when exactly one is closest; else -1. */
static int32_t closest_cpu_node(hwloc_topology_t topo, const struct tg_hw *hw, hwloc_obj_t m)
{
    struct hwloc_distances_s *d = NULL;
    unsigned nr = 1;
    int32_t best = -1;
    if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &d,
                                    HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0 || nr == 0 || !d)
        return -1;
    int row = -1;
    for (unsigned i = 0; i < d->nbobjs; i++)
        if (d->objs[i] == m)
            row = (int)i;
    uint64_t min = UINT64_MAX;
    int ties = 0;
    for (unsigned j = 0; row >= 0 && j < d->nbobjs; j++) {
        if (!d->objs[j] || !cpu_node(hw, (int32_t)d->objs[j]->os_index))
            continue;
        uint64_t v = d->values[(size_t)row * d->nbobjs + j];
        if (v < min) {
            min = v;
            best = (int32_t)d->objs[j]->os_index;
            ties = 0;
        } else if (v == min) {
            ties++;
        }
    }
    hwloc_distances_release(topo, d);
    return ties ? -1 : best;
}

static void add_memnode(hwloc_topology_t topo, struct tg_hw *hw, hwloc_obj_t *nodes,
                        uint32_t n, hwloc_obj_t o)
{
    if (hw->nmem == TG_TOPO_MAX_MEMNODES)
        return;
    struct tg_topo_memnode *m = &hw->mem[hw->nmem++];
    m->id = (int32_t)o->os_index;
    m->mem = o->attr->numanode.local_memory;
    m->kind = mem_kind(o->subtype);
    m->numa = -1;
    const char *bus = hwloc_obj_get_info_by_name(o, "PCIBusID");
    copy_name(m->gpu, bus ? bus : "");
    if (bus && m->kind == TG_TOPO_MEM_OTHER)
        m->kind = TG_TOPO_MEM_GPU;
    if (o->cpuset && !hwloc_bitmap_iszero(o->cpuset)) {
        int h = home_of(nodes, n, (unsigned)hwloc_bitmap_first(o->cpuset));
        if (h >= 0 && nodes[h] != o)
            m->numa = (int32_t)nodes[h]->os_index;
    }
    if (m->numa < 0)
        m->numa = closest_cpu_node(topo, hw, o);
}

/* NUMA nodes with CPUs (hw->numa, cpus = PUs at home there) and without
 * (hw->mem); see agent/discover.h for the rules. */
static void find_numa(hwloc_topology_t topo, struct tg_hw *hw)
{
    hwloc_obj_t nodes[MAX_NODES], o = NULL;
    uint32_t owned[MAX_NODES] = {0}, n = 0;
    while ((o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, o)) && n < MAX_NODES)
        nodes[n++] = o;
    o = NULL;
    for (uint32_t i = 0; i < TG_HW_MAX_PUS; i++)
        hw->pu_home[i] = -1;
    while ((o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, o))) {
        int h = home_of(nodes, n, o->os_index);
        if (h < 0)
            continue;
        owned[h]++;
        if (o->os_index < TG_HW_MAX_PUS)
            hw->pu_home[o->os_index] = (int32_t)nodes[h]->os_index;
    }
    for (uint32_t i = 0; i < n && hw->nnuma < TG_TOPO_MAX_NUMA; i++) {
        if (!owned[i])
            continue;
        struct tg_topo_numa *x = &hw->numa[hw->nnuma++];
        x->id = (int32_t)nodes[i]->os_index;
        x->cpus = owned[i];
        x->mem = nodes[i]->attr->numanode.local_memory;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!owned[i])
            add_memnode(topo, hw, nodes, n, nodes[i]);
}

static void find_devices(hwloc_topology_t topo, struct tg_hw *hw, hwloc_obj_t *gpu_obj,
                         hwloc_obj_t *nic_obj)
{
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_pcidev(topo, o))) {
        const struct hwloc_pcidev_attr_s *p = &o->attr->pcidev;
        if (o->subtype && !strcmp(o->subtype, "NVSwitch")) {
            hw->nnvswitch++;
        } else if (is_gpu_pci(p) && hw->ngpus < TG_HW_MAX_GPUS) {
            struct tg_hw_gpu *g = &hw->gpus[hw->ngpus];
            hwloc_obj_t os = gpu_osdev(o);
            busid_of(p, g->busid);
            copy_name(g->name, os ? os->name : "");
            root_of(o, g->root);
            switch_of(o, g->sw);
            g->vendor = p->vendor_id;
            g->device = p->device_id;
            g->class_id = p->class_id;
            g->numa = io_numa(topo, hw, o);
            g->nvlink = -1;
            g->pair_nic = -1;
            gpu_obj[hw->ngpus++] = o;
        } else if (hw->nnics < TG_HW_MAX_NICS) {
            hwloc_obj_t of = osdev_child(o, HWLOC_OBJ_OSDEV_OPENFABRICS);
            hwloc_obj_t net = osdev_child(o, HWLOC_OBJ_OSDEV_NETWORK);
            if (!of && !net)
                continue;
            struct tg_hw_nic *k = &hw->nics[hw->nnics];
            copy_name(k->name, of ? of->name : net->name);
            copy_name(k->netdev, net ? net->name : "");
            busid_of(p, k->busid);
            root_of(o, k->root);
            k->numa = io_numa(topo, hw, o);
            k->rdma = of != NULL;
            nic_obj[hw->nnics++] = o;
        }
    }
}

/* Lowest common ancestor by parent links (hwloc's helper compares depths,
 * which I/O objects do not have). */
static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    for (hwloc_obj_t x = a->parent; x; x = x->parent)
        for (hwloc_obj_t y = b->parent; y; y = y->parent)
            if (x == y)
                return x;
    return NULL;
}

/* GPUDirect RDMA pairs: the closest RDMA NIC below the same switch or root. */
static void find_pairs(struct tg_hw *hw, hwloc_obj_t *gpu_obj,
                       hwloc_obj_t *nic_obj)
{
    for (uint32_t g = 0; g < hw->ngpus; g++)
        for (uint32_t k = 0; k < hw->nnics; k++) {
            if (!hw->nics[k].rdma)
                continue;
            hwloc_obj_t lca = common_ancestor(gpu_obj[g], nic_obj[k]);
            if (!lca || lca->type != HWLOC_OBJ_BRIDGE)
                continue;
            uint8_t kind = is_pci_bridge(lca) ? 2 : 1;
            if (kind > hw->gpus[g].pair_kind) {
                hw->gpus[g].pair_kind = kind;
                hw->gpus[g].pair_nic = (int32_t)k;
            }
        }
}

static int gpu_index(const struct tg_hw *hw, hwloc_obj_t *gpu_obj, hwloc_obj_t o)
{
    if (o->type == HWLOC_OBJ_OS_DEVICE)
        o = o->parent;
    for (uint32_t i = 0; i < hw->ngpus; i++)
        if (gpu_obj[i] == o)
            return (int)i;
    return -1;
}

static uint32_t uf_find(uint32_t *p, uint32_t x)
{
    while (p[x] != x)
        x = p[x] = p[p[x]];
    return x;
}

/* NVLink (or AMD xGMI) groups from an hwloc bandwidth matrix over GPUs and
 * switches: GPUs are linked directly or through one connected switch fabric. */
static int groups_from_distances(hwloc_topology_t topo, struct tg_hw *hw, hwloc_obj_t *gpu_obj,
                                 const char *name)
{
    struct hwloc_distances_s *d = NULL;
    unsigned nr = 1;
    if (hwloc_distances_get_by_name(topo, name, &nr, &d, 0) != 0 || nr == 0 || !d)
        return 0;
    uint32_t nb = d->nbobjs, ng = hw->ngpus;
    int *gi = calloc(nb, sizeof *gi);
    uint32_t *uf = calloc(nb, sizeof *uf);
    uint8_t *adj = calloc((size_t)ng * ng + 1, 1);
    int found = 0;
    if (!gi || !uf || !adj)
        goto out;
    for (uint32_t i = 0; i < nb; i++) {
        gi[i] = d->objs[i] ? gpu_index(hw, gpu_obj, d->objs[i]) : -1;
        uf[i] = i;
    }
    for (uint32_t i = 0; i < nb; i++)         /* switches joined by links */
        for (uint32_t j = 0; j < nb; j++)
            if (i != j && gi[i] < 0 && gi[j] < 0 && d->values[(size_t)i * nb + j] > 0)
                uf[uf_find(uf, i)] = uf_find(uf, j);
    for (uint32_t i = 0; i < nb; i++)
        for (uint32_t j = 0; j < nb; j++) {
            if (i == j || gi[i] < 0 || d->values[(size_t)i * nb + j] == 0)
                continue;
            if (gi[j] >= 0) {
                adj[(size_t)gi[i] * ng + (uint32_t)gi[j]] = 1;
                adj[(size_t)gi[j] * ng + (uint32_t)gi[i]] = 1;
                continue;
            }
            /* GPU i reaches switch fabric f: link it to every GPU on f. */
            uint32_t f = uf_find(uf, j);
            for (uint32_t k = 0; k < nb; k++) {
                if (gi[k] < 0 || gi[k] == gi[i])
                    continue;
                for (uint32_t s = 0; s < nb; s++)
                    if (gi[s] < 0 && uf_find(uf, s) == f && d->values[(size_t)k * nb + s] > 0) {
                        adj[(size_t)gi[i] * ng + (uint32_t)gi[k]] = 1;
                        adj[(size_t)gi[k] * ng + (uint32_t)gi[i]] = 1;
                        break;
                    }
            }
        }
    int32_t group[TG_HW_MAX_GPUS];
    uint32_t n = tg_nvlink_cliques(ng, adj, group);
    if (n) {
        for (uint32_t i = 0; i < ng; i++)
            hw->gpus[i].nvlink = group[i];
        hw->nvlink_groups = n;
        found = 1;
    }
out:
    free(gi);
    free(uf);
    free(adj);
    hwloc_distances_release(topo, d);
    return found;
}

int tg_hw_discover(const char *xml_path, struct tg_hw *hw, char *err, size_t errlen)
{
    hwloc_topology_t topo = NULL;
    hwloc_obj_t gpu_obj[TG_HW_MAX_GPUS], nic_obj[TG_HW_MAX_NICS];
    int rc = TG_EIO;

    memset(hw, 0, sizeof *hw);
    hw->nvlink_source = "none";
    if (hwloc_topology_init(&topo) != 0) {
        snprintf(err, errlen, "hwloc_topology_init failed");
        return TG_ENOMEM;
    }
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
    /* The whole machine, not this process's cpuset/mems (its container may
     * be confined to the kubelet's shared CPU pool). */
    hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    if (xml_path && hwloc_topology_set_xml(topo, xml_path) != 0) {
        snprintf(err, errlen, "%s: cannot use as hwloc XML: %s", xml_path, strerror(errno));
        goto fail;
    }
    if (hwloc_topology_load(topo) != 0) {
        snprintf(err, errlen, "%s: hwloc could not load the topology: %s",
                 xml_path ? xml_path : "this machine", strerror(errno));
        goto fail;
    }
    hwloc_obj_t root = hwloc_get_root_obj(topo);
    const char *m = hwloc_obj_get_info_by_name(root, "DMIProductName");
    if (!m)
        m = hwloc_obj_get_info_by_name(root, "Architecture");
    snprintf(hw->machine, sizeof hw->machine, "%s", m ? m : "");
    hw->npus = root->cpuset ? (uint32_t)hwloc_bitmap_weight(root->cpuset) : 0;
    find_numa(topo, hw);
    find_devices(topo, hw, gpu_obj, nic_obj);
    find_pairs(hw, gpu_obj, nic_obj);
    if (groups_from_distances(topo, hw, gpu_obj, "NVLinkBandwidth"))
        hw->nvlink_source = "hwloc NVLinkBandwidth";
    else if (groups_from_distances(topo, hw, gpu_obj, "XGMIBandwidth"))
        hw->nvlink_source = "hwloc XGMIBandwidth";
    rc = 0;
fail:
    hwloc_topology_destroy(topo);
    return rc;
}

/* ---- nvidia-smi merge --------------------------------------------------- */

/* Sorts GPU indices by PCI bus id (nvidia-smi's order). */
static void isort(uint32_t *v, uint32_t n, const struct tg_hw *hw)
{
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && strcmp(hw->gpus[v[j - 1]].busid, hw->gpus[v[j]].busid) > 0; j--) {
            uint32_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

/* NUMA of nvidia-smi GPU g: the NUMA Affinity column, else the rank of its
 * distinct CPU Affinity list (old drivers print no NUMA column). */
static int32_t nvsmi_numa(const struct tg_nvsmi *m, uint32_t g)
{
    if (m->gpu_numa[g] >= 0)
        return m->gpu_numa[g];
    if (!m->gpu_cpus[g][0])
        return -1;
    int32_t rank = 0;
    for (uint32_t i = 0; i < g; i++) {
        uint32_t k;
        for (k = 0; k < i && strcmp(m->gpu_cpus[k], m->gpu_cpus[i]); k++)
            ;
        if (k < i)
            continue;                   /* not the first GPU with this list */
        if (!strcmp(m->gpu_cpus[i], m->gpu_cpus[g]))
            return rank;
        rank++;
    }
    return rank;
}

static void add_from_nvsmi(struct tg_hw *hw, const struct tg_nvsmi *m)
{
    for (uint32_t g = 0; g < m->ngpus && hw->ngpus < TG_HW_MAX_GPUS; g++) {
        struct tg_hw_gpu *x = &hw->gpus[hw->ngpus++];
        memset(x, 0, sizeof *x);
        snprintf(x->name, sizeof x->name, "GPU%u", g);
        x->vendor = 0x10de;
        x->numa = nvsmi_numa(m, g);
        x->nvlink = m->group[g];
        x->pair_nic = -1;
        if (x->numa >= 0 && hw->nnuma < TG_TOPO_MAX_NUMA) {
            uint32_t i;
            for (i = 0; i < hw->nnuma && hw->numa[i].id != x->numa; i++)
                ;
            if (i == hw->nnuma) {
                hw->numa[hw->nnuma].id = x->numa;
                hw->numa[hw->nnuma].cpus = m->gpu_ncpus[g];
                hw->numa[hw->nnuma++].mem = 0;
            }
        }
    }
    uint32_t base = hw->nnics;
    for (uint32_t k = 0; k < m->nnics && hw->nnics < TG_HW_MAX_NICS; k++) {
        struct tg_hw_nic *n = &hw->nics[hw->nnics++];
        memset(n, 0, sizeof *n);
        copy_name(n->name, m->nic[k]);
        n->rdma = 1;                    /* nvidia-smi lists RDMA devices only */
        n->numa = -1;
        uint8_t best = TG_CONN_SYS;
        for (uint32_t g = 0; g < m->ngpus; g++)
            if (m->gn[g][k] > best) {
                best = m->gn[g][k];
                n->numa = hw->gpus[g].numa;
            }
    }
    for (uint32_t g = 0; g < m->ngpus && g < hw->ngpus; g++)
        for (uint32_t k = 0; k < m->nnics && base + k < hw->nnics; k++) {
            uint8_t c = m->gn[g][k];
            uint8_t kind = (c == TG_CONN_PIX || c == TG_CONN_PXB) ? 2 : c == TG_CONN_PHB ? 1 : 0;
            if (kind > hw->gpus[g].pair_kind) {
                hw->gpus[g].pair_kind = kind;
                hw->gpus[g].pair_nic = (int32_t)(base + k);
            }
        }
}

int tg_hw_merge_nvsmi(struct tg_hw *hw, const struct tg_nvsmi *m)
{
    uint32_t idx[TG_HW_MAX_GPUS], n = 0;
    for (uint32_t i = 0; i < hw->ngpus; i++)
        if (hw->gpus[i].vendor == 0x10de)
            idx[n++] = i;
    if (n == 0) {
        add_from_nvsmi(hw, m);
    } else if (n == m->ngpus) {
        isort(idx, n, hw);
        for (uint32_t k = 0; k < n; k++)
            hw->gpus[idx[k]].nvlink = m->group[k];
    } else {
        return TG_ERANGE;
    }
    hw->nvlink_groups = m->ngroups;
    hw->nvlink_source = "nvidia-smi topo -m";
    return 0;
}

/* ---- domains ------------------------------------------------------------ */

static void add_root(struct tg_topo_domain *d, const char *root)
{
    if (!root[0])
        return;
    for (uint32_t i = 0; i < d->nroots; i++)
        if (!strcmp(d->roots[i], root))
            return;
    if (d->nroots < TG_TOPO_MAX_ROOTS)
        copy_name(d->roots[d->nroots++], root);
}

void tg_hw_domains(const struct tg_hw *hw, uint8_t policy, struct tg_topology *t)
{
    memset(t, 0, sizeof *t);
    t->version = TG_TOPO_VERSION;
    t->policy = policy;
    t->nnuma = hw->nnuma;
    memcpy(t->numa, hw->numa, hw->nnuma * sizeof hw->numa[0]);
    t->nmem = hw->nmem;
    memcpy(t->mem, hw->mem, hw->nmem * sizeof hw->mem[0]);
    for (uint32_t g = 0; g < hw->ngpus; g++) {
        const struct tg_hw_gpu *x = &hw->gpus[g];
        uint32_t i;
        for (i = 0; i < t->ndomains; i++)
            if (t->domains[i].numa == x->numa && t->domains[i].nvlink == x->nvlink)
                break;
        if (i == t->ndomains) {
            if (t->ndomains == TG_TOPO_MAX_DOMAINS)
                continue;
            t->domains[i].id = i;
            t->domains[i].numa = x->numa;
            t->domains[i].nvlink = x->nvlink;
            t->ndomains++;
        }
        struct tg_topo_domain *d = &t->domains[i];
        if (d->gpus < TG_TOPO_MAX_GPUS) {
            d->gpus++;
            if (x->pair_kind)
                d->rdma_gpus++;
        }
        add_root(d, x->root);
    }
    for (uint32_t i = 0; i < t->ndomains; i++) {
        struct tg_topo_domain *d = &t->domains[i];
        for (uint32_t k = 0; k < hw->nnics && d->nnics < TG_TOPO_MAX_NICS; k++) {
            if (hw->nics[k].numa != d->numa)
                continue;
            copy_name(d->nics[d->nnics].name, hw->nics[k].name);
            copy_name(d->nics[d->nnics].root, hw->nics[k].root);
            d->nics[d->nnics++].rdma = hw->nics[k].rdma;
        }
    }
}

/* ---- printing ----------------------------------------------------------- */

static const char *dash(const char *s)
{
    return s && s[0] ? s : "-";
}

void tg_hw_print(FILE *f, const struct tg_hw *hw, const struct tg_topology *t)
{
    fprintf(f, "machine: %s, %u PUs, %u NUMA nodes with CPUs, %u without, %u GPUs, %u NICs, "
               "%u NVSwitches\n", dash(hw->machine), hw->npus, hw->nnuma, hw->nmem, hw->ngpus,
            hw->nnics, hw->nnvswitch);
    for (uint32_t i = 0; i < hw->nnuma; i++)
        fprintf(f, "  NUMA %d: %u cpus, %.1f GiB\n", hw->numa[i].id, hw->numa[i].cpus,
                (double)hw->numa[i].mem / (1024.0 * 1024 * 1024));
    for (uint32_t i = 0; i < hw->nmem; i++) {
        const struct tg_topo_memnode *m = &hw->mem[i];
        fprintf(f, "  NUMA %d: no cpus, %.1f GiB, kind %s", m->id,
                (double)m->mem / (1024.0 * 1024 * 1024), tg_topo_memkind_name(m->kind));
        if (m->gpu[0])
            fprintf(f, " of GPU %s", m->gpu);
        if (m->numa >= 0)
            fprintf(f, ", attached to NUMA %d\n", m->numa);
        else
            fprintf(f, ", attached to no CPU node (no locality in the topology)\n");
    }
    for (uint32_t i = 0; i < hw->ngpus; i++) {
        const struct tg_hw_gpu *g = &hw->gpus[i];
        fprintf(f, "  GPU %u: %s [%04x:%04x] %s numa %d root %s switch %s nvlink %d",
                i, dash(g->busid), g->vendor, g->device, dash(g->name), g->numa, dash(g->root),
                dash(g->sw), g->nvlink);
        if (g->pair_nic >= 0)
            fprintf(f, " rdma-pair %s (%s)", hw->nics[g->pair_nic].name,
                    g->pair_kind == 2 ? "same PCIe switch" : "same PCIe root");
        fputc('\n', f);
    }
    for (uint32_t i = 0; i < hw->nnics; i++) {
        const struct tg_hw_nic *k = &hw->nics[i];
        int alias = k->netdev[0] && strcmp(k->netdev, k->name);
        fprintf(f, "  NIC %s%s%s%s: %s numa %d root %s%s\n", k->name, alias ? " (" : "",
                alias ? k->netdev : "", alias ? ")" : "", dash(k->busid), k->numa, dash(k->root),
                k->rdma ? " rdma" : "");
    }
    fprintf(f, "NVLink: %u groups (source: %s)\n", hw->nvlink_groups, hw->nvlink_source);
    fprintf(f, "GPU domains (policy %s):\n", tg_topo_policy_name(t->policy));
    for (uint32_t i = 0; i < t->ndomains; i++) {
        const struct tg_topo_domain *d = &t->domains[i];
        fprintf(f, "  domain %u: numa %d, %u GPUs, nvlink %d, %u roots, %u NICs, %u GPUs paired with RDMA NIC\n",
                d->id, d->numa, d->gpus, d->nvlink, d->nroots, d->nnics, d->rdma_gpus);
    }
    if (!t->ndomains)
        fprintf(f, "  (none)\n");
}
