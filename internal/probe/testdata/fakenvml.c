// fakenvml.c: a simulated libnvidia-ml.so.1 for TestNVMLSimulated, written
// from the prototypes, versioned symbol names, struct layouts and return
// codes in shared/reference/abi_reference.md §1, not from NVIDIA's headers.
// Each device is what the test configures. What it checks is what a real
// NVML refuses: calls before nvmlInit_v2 or after the last nvmlShutdown,
// handles it never gave out, null pointers, buffers shorter than the
// answer, a nvmlMemory_v2_t whose version field is not 0x02000028, enum
// values out of range. Refused calls are counted, so that a test sees them
// even where the Go side carries on.
//
// Its one device is an H100 SXM as a 570 driver describes it (fake_default),
// with two other tenants' processes (one without a memory figure) and an
// MPS client, 2 of 18 NVLinks down, a power cap below the default and a
// correctable remap. Tests change it through fake_config; a whole gpurent
// process (TestGPUCheckSimulated) gets it as it is when $FAKENVML is set.
// Handles are pointers into this library, as opaque as the driver's.
//
// Build flags pick a driver generation:
//   -DDRIVER_535_EARLY  the _v3 process functions write 32-byte entries
//                       (drivers 535.43.02-535.86.05, §1.6), and the
//                       fabric's only call is nvmlDeviceGetGpuFabricInfo
//                       (every 535 driver)
//   -DDRIVER_450        no _v3 process functions, no nvmlDeviceGetMemoryInfo_v2,
//                       no nvmlDeviceGetCurrentClocksEventReasons, no
//                       nvmlDeviceGetGpuMaxPcieLinkGeneration (all newer, §1.3)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
enum {
  SUCCESS = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NOT_FOUND = 6, INSUFFICIENT_SIZE = 7,
  DRIVER_NOT_LOADED = 9, TIMEOUT = 10, GPU_IS_LOST = 15, ARGUMENT_VERSION_MISMATCH = 25
};

#define MAXDEV 8
#define MAXPROC 4
#define MAXMIG 7

// One device; every field 8 bytes or a multiple of 8, so that the Go
// mirror in nvmlsim_test.go has no padding to get wrong.
struct device {
  char name[96], uuid[96], bus_id[32];
  int64_t pci_device_id, pci_subsystem_id, domain, bus, dev;
  int64_t total, reserved, used;                       // bytes
  int64_t arch, cc_major, cc_minor;
  int64_t mig;                                         // -1: no MIG on this card; 0 off; 1 on
  int64_t mig_devices;                                 // MIG devices when on
  int64_t virt, compute_mode;
  int64_t power_limit, power_default, power_max, power_draw; // mW
  int64_t clock_sm, clock_sm_max, clock_mem, clock_mem_max;  // MHz
  int64_t event_reasons, pstate, temp;
  int64_t pcie_gen, pcie_gen_max, pcie_gen_gpu_max, pcie_width, pcie_width_max;
  int64_t ecc;                                         // -1: not supported; 0 off; 1 on
  int64_t ecc_unc_volatile, ecc_corr_volatile, ecc_unc_aggregate;
  int64_t retired_sbe, retired_dbe, retired_pending;
  int64_t remap;                                       // 0: not supported; 1: the four values below
  int64_t remap_corr, remap_unc, remap_pending, remap_failed;
  int64_t nvlinks, nvlinks_active;                     // links the card has, of which active
  int64_t compute_procs, mps_procs;                    // how many of procs[] are compute, then MPS
  int64_t proc_pid[MAXPROC], proc_mem[MAXPROC];        // proc_mem -1: not available
  int64_t util;                                        // %
};

struct config {
  char driver[80], nvml[80];
  int64_t cuda_version; // 1000*major + 10*minor; 0: libcuda not found
  int64_t init_result;  // what nvmlInit_v2 returns
  int64_t count;
  struct device dev[MAXDEV];
};
static struct config cfg;

struct stats {
  int64_t inits, shutdowns, refs, bad_calls, util_calls;
  int64_t event_sets; // created and not yet freed
};
static struct stats st;

void fake_config(const struct config *c) {
  cfg = *c;
  memset(&st, 0, sizeof st);
}
void fake_stats(struct stats *out) { *out = st; }

void fake_default(struct config *c) {
  memset(c, 0, sizeof *c);
  strcpy(c->driver, "570.86.15");
  strcpy(c->nvml, "12.570.86.15");
  c->cuda_version = 12080;
  c->count = 1;
  struct device *d = &c->dev[0];
  strcpy(d->name, "NVIDIA H100 80GB HBM3");
  strcpy(d->uuid, "GPU-5b8c9a3e-1f2d-4c6b-9e7a-0d1c2b3a4f5e");
  strcpy(d->bus_id, "00000000:3B:00.0");
  d->pci_device_id = 0x233010de, d->pci_subsystem_id = 0x16c110de, d->bus = 0x3b;
  d->total = 85520809984, d->reserved = 555745280, d->used = 2ll << 30;
  d->arch = 9, d->cc_major = 9, d->cc_minor = 0, d->mig = 0, d->virt = 1, d->compute_mode = 3;
  d->power_limit = 500000, d->power_default = 700000, d->power_max = 700000, d->power_draw = 123456;
  d->clock_sm = d->clock_sm_max = 1980, d->clock_mem = d->clock_mem_max = 2619;
  d->event_reasons = 0x4 | 0x1, d->pstate = 0, d->temp = 41;
  d->pcie_gen = 5, d->pcie_gen_max = 4, d->pcie_gen_gpu_max = 5, d->pcie_width = d->pcie_width_max = 16;
  d->ecc = 1, d->ecc_corr_volatile = 3, d->ecc_unc_aggregate = 1, d->retired_dbe = 2;
  d->remap = 1, d->remap_corr = 1;
  d->nvlinks = 18, d->nvlinks_active = 16;
  d->compute_procs = 2, d->mps_procs = 1;
  d->proc_pid[0] = 4242, d->proc_pid[1] = 4343, d->proc_pid[2] = 4444;
  d->proc_mem[0] = 1ll << 30, d->proc_mem[1] = -1, d->proc_mem[2] = 512ll << 20;
  d->util = 37;
}

// The links between the devices, set by fake_topo from words
// ($FAKENVML_TOPO): a layout, nvswitch (the default: every link to one of
// four NVSwitches, as on an HGX board; GPUs 0-3 on one NUMA node, 4-7 on
// the other), bridged (GPU pairs 0-1, 2-3, ... joined by their links
// directly, as NVLink bridges join PCIe cards) or pcie (no NVLink, pairs
// behind one PCIe switch); then faults: down=G:L (link L of device G is
// down), crc=G:L:N (its CRC counter grows by N at each read), p2p=S (every
// pair's read and write status is S, an nvmlGpuP2PStatus_t), fabric=S
// (every device's fabric state), fabricstatus=R (what a completed
// registration returned).
enum { NVSWITCH, BRIDGED, PCIE };
static struct {
  int layout, p2p, fabric, fabric_status;
  int down[MAXDEV][18];
  int64_t crc_step[MAXDEV][18], crc[MAXDEV][18];
} topo = {.layout = NVSWITCH, .fabric = 3};

void fake_topo(const char *spec) {
  memset(&topo, 0, sizeof topo);
  topo.fabric = 3;
  char buf[512];
  strncpy(buf, spec, sizeof buf - 1);
  buf[sizeof buf - 1] = 0;
  for (char *w = strtok(buf, " ,"); w; w = strtok(NULL, " ,")) {
    int g, l;
    long long n;
    if (!strcmp(w, "nvswitch")) topo.layout = NVSWITCH;
    else if (!strcmp(w, "bridged")) topo.layout = BRIDGED;
    else if (!strcmp(w, "pcie")) topo.layout = PCIE;
    else if (sscanf(w, "down=%d:%d", &g, &l) == 2 && g >= 0 && g < MAXDEV && l >= 0 && l < 18) topo.down[g][l] = 1;
    else if (sscanf(w, "crc=%d:%d:%lld", &g, &l, &n) == 3 && g >= 0 && g < MAXDEV && l >= 0 && l < 18) topo.crc_step[g][l] = n;
    else if (sscanf(w, "p2p=%d", &g) == 1) topo.p2p = g;
    else if (sscanf(w, "fabricstatus=%d", &g) == 1) topo.fabric_status = g;
    else if (sscanf(w, "fabric=%d", &g) == 1) topo.fabric = g;
  }
  if (topo.layout == PCIE)
    for (int i = 0; i < MAXDEV; i++) cfg.dev[i].nvlinks = cfg.dev[i].nvlinks_active = 0;
  else
    for (int i = 0; i < MAXDEV; i++) cfg.dev[i].nvlinks_active = cfg.dev[i].nvlinks;
}

// lost is the index of a device that has fallen off the bus: its handle
// and its utilization answer GPU_IS_LOST ($FAKENVML_LOST; -1: none).
static int lost = -1;

// no_xid_events makes every device one that cannot report Xids through the
// event API ($FAKENVML_NO_XID_EVENTS, fake_xid_events).
static int no_xid_events;
void fake_xid_events(int64_t on) { no_xid_events = !on; }

// $FAKENVML_SOAK's load (see nvmlDeviceGetPowerUsage).
static double soak_power = -1;
static int64_t soak_drop = -1, soak_reads[MAXDEV];

// $FAKENVML=N (2 to 8) adds idle H100s at buses 5E, 81, A4, C7, EA, 0D, 30,
// where fakecuda.c's devices=N puts its devices; $FAKENVML_TOPO is a
// topology for fake_topo; $FAKENVML_EVENTS sets the first
// device's clock event reasons (0x48: hw_slowdown, hw_thermal_slowdown),
// $FAKENVML_INIT what nvmlInit_v2 returns.
// $FAKENVML_LOST and $FAKENVML_NO_XID_EVENTS are read whether or not $FAKENVML is set.
__attribute__((constructor)) static void from_env(void) {
  const char *l = getenv("FAKENVML_LOST");
  if (l) lost = atoi(l);
  if (getenv("FAKENVML_NO_XID_EVENTS")) no_xid_events = 1;
  const char *env = getenv("FAKENVML");
  if (!env) return;
  fake_default(&cfg);
  for (int i = 1; i < atoi(env) && i < MAXDEV; i++) {
    struct device *d = &cfg.dev[i];
    *d = cfg.dev[0];
    snprintf(d->uuid, sizeof d->uuid, "GPU-0e2d7c41-8a9b-4f3e-b5d6-7c8d9e0f1a%02x", 0x2a + i);
    d->bus = (0x3b + 0x23 * i) & 0xff;
    snprintf(d->bus_id, sizeof d->bus_id, "00000000:%02X:00.0", (int)d->bus);
    d->used = 0, d->compute_procs = d->mps_procs = 0, d->util = 0;
    cfg.count = i + 1;
  }
  const char *tp = getenv("FAKENVML_TOPO");
  if (tp) fake_topo(tp);
  const char *ev = getenv("FAKENVML_EVENTS");
  if (ev) cfg.dev[0].event_reasons = (int64_t)strtoll(ev, 0, 0);
  const char *in = getenv("FAKENVML_INIT");
  if (in) cfg.init_result = atoi(in);
  const char *sk = getenv("FAKENVML_SOAK");
  if (sk) {
    const char *p = strstr(sk, "power="), *c = strstr(sk, "clockdrop=");
    soak_power = p ? strtod(p + 6, 0) : 0.95;
    if (c) soak_drop = strtoll(c + 10, 0, 0);
  }
}

static nvmlReturn_t bad(nvmlReturn_t r) {
  st.bad_calls++;
  return r;
}


// Handles are addresses inside these arrays, as opaque as the driver's.
static char handles[MAXDEV];
static char mig_handles[MAXDEV][MAXMIG];

// dev finds the device behind a handle; MIG handles count when mig is set.
static struct device *dev(void *h, int mig, int *is_mig) {
  if (is_mig) *is_mig = 0;
  for (int i = 0; i < cfg.count && i < MAXDEV; i++) {
    if (h == &handles[i]) return &cfg.dev[i];
    for (int j = 0; mig && j < cfg.dev[i].mig_devices && j < MAXMIG; j++)
      if (h == &mig_handles[i][j]) {
        if (is_mig) *is_mig = 1;
        return &cfg.dev[i];
      }
  }
  return 0;
}

#define READY() \
  if (st.refs <= 0) return bad(UNINITIALIZED)
#define DEV(h)                                       \
  READY();                                           \
  struct device *d = dev(h, 0, 0);                   \
  if (!d) return bad(INVALID_ARGUMENT)
#define OUT(p) \
  if (!(p)) return bad(INVALID_ARGUMENT)

static nvmlReturn_t copy(char *dst, unsigned int len, const char *src) {
  OUT(dst);
  size_t n = strlen(src);
  if (len < n + 1) return INSUFFICIENT_SIZE;
  memcpy(dst, src, n + 1);
  return SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void) {
  if (cfg.init_result != SUCCESS) return (nvmlReturn_t)cfg.init_result;
  st.inits++;
  st.refs++;
  return SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  READY();
  st.shutdowns++;
  st.refs--;
  return SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
  READY();
  return copy(version, length, cfg.driver);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
  READY();
  return copy(version, length, cfg.nvml);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) {
  READY();
  OUT(v);
  if (!cfg.cuda_version) return 12; // LIBRARY_NOT_FOUND: no libcuda.so.1
  *v = (int)cfg.cuda_version;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) {
  READY();
  OUT(n);
  *n = (unsigned int)cfg.count;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h) {
  READY();
  OUT(h);
  if (i >= cfg.count || i >= MAXDEV) return bad(INVALID_ARGUMENT);
  if ((int)i == lost) return GPU_IS_LOST; // as nvidia-smi meets it: "Unable to determine the device handle"
  *h = &handles[i];
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(void *h, char *name, unsigned int length) {
  READY();
  int mig;
  struct device *d = dev(h, 1, &mig);
  if (!d) return bad(INVALID_ARGUMENT);
  if (mig) return copy(name, length, "MIG 1g.10gb (simulated)");
  return copy(name, length, d->name);
}

nvmlReturn_t nvmlDeviceGetUUID(void *h, char *uuid, unsigned int length) {
  READY();
  int mig;
  struct device *d = dev(h, 1, &mig);
  if (!d) return bad(INVALID_ARGUMENT);
  if (mig) {
    char u[96] = "MIG-";
    strncat(u, d->uuid + 4, sizeof u - 5); // MIG UUIDs are longer than GPU ones
    return copy(uuid, length, u);
  }
  return copy(uuid, length, d->uuid);
}

// nvmlPciInfo_t, 68 bytes (§1.5).
struct pci {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
_Static_assert(sizeof(struct pci) == 68, "nvmlPciInfo_t is 68 bytes");

nvmlReturn_t nvmlDeviceGetPciInfo_v3(void *h, struct pci *p) {
  DEV(h);
  OUT(p);
  memset(p, 0, sizeof *p);
  strncpy(p->busIdLegacy, d->bus_id + 4, 15); // "00000000:3B:00.0" with a 4-digit domain
  p->domain = (unsigned int)d->domain;
  p->bus = (unsigned int)d->bus;
  p->device = (unsigned int)d->dev;
  p->pciDeviceId = (unsigned int)d->pci_device_id;
  p->pciSubSystemId = (unsigned int)d->pci_subsystem_id;
  strncpy(p->busId, d->bus_id, 31);
  return SUCCESS;
}

// nvmlMemory_t (24 bytes) and nvmlMemory_v2_t (40 bytes), §1.5.
struct mem1 {
  unsigned long long total, free, used;
};
struct mem2 {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
_Static_assert(sizeof(struct mem1) == 24, "nvmlMemory_t is 24 bytes");
_Static_assert(sizeof(struct mem2) == 40, "nvmlMemory_v2_t is 40 bytes");

nvmlReturn_t nvmlDeviceGetMemoryInfo(void *h, struct mem1 *m) {
  READY();
  int mig;
  struct device *d = dev(h, 1, &mig);
  if (!d) return bad(INVALID_ARGUMENT);
  OUT(m);
  unsigned long long total = mig ? 10ULL << 30 : (unsigned long long)d->total;
  m->total = total;
  m->used = mig ? 0 : (unsigned long long)(d->used + d->reserved); // v1: used includes reserved
  m->free = total - m->used;
  return SUCCESS;
}

#ifndef DRIVER_450
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(void *h, struct mem2 *m) {
  READY();
  int mig;
  struct device *d = dev(h, 1, &mig);
  if (!d) return bad(INVALID_ARGUMENT);
  OUT(m);
  if (m->version != 0x02000028) return bad(ARGUMENT_VERSION_MISMATCH);
  if (mig) {
    m->total = 10ULL << 30, m->reserved = 0, m->used = 0, m->free = m->total;
    return SUCCESS;
  }
  m->total = (unsigned long long)d->total;
  m->reserved = (unsigned long long)d->reserved;
  m->used = (unsigned long long)d->used;
  m->free = m->total - m->reserved - m->used;
  return SUCCESS;
}
#endif

#define GETTER(fn, T, field)  \
  nvmlReturn_t fn(void *h, T *out) { \
    DEV(h);                          \
    OUT(out);                        \
    *out = (T)d->field;              \
    return SUCCESS;                  \
  }

GETTER(nvmlDeviceGetArchitecture, unsigned int, arch)
GETTER(nvmlDeviceGetVirtualizationMode, int, virt)
GETTER(nvmlDeviceGetEnforcedPowerLimit, unsigned int, power_limit)
GETTER(nvmlDeviceGetPowerManagementDefaultLimit, unsigned int, power_default)
GETTER(nvmlDeviceGetPerformanceState, int, pstate)
GETTER(nvmlDeviceGetCurrPcieLinkGeneration, unsigned int, pcie_gen)
GETTER(nvmlDeviceGetMaxPcieLinkGeneration, unsigned int, pcie_gen_max)
GETTER(nvmlDeviceGetCurrPcieLinkWidth, unsigned int, pcie_width)
GETTER(nvmlDeviceGetMaxPcieLinkWidth, unsigned int, pcie_width_max)

// Under a soak ($FAKENVML_SOAK="power=F clockdrop=N"), each read of a
// device's power is a second of load: it draws F of its enforced limit,
// warms by a degree a read from 40 C, and from the Nth read on its SM
// clock falls to 60% of its maximum with thermal slowdowns (event bits
// 0x20 and 0x40) given as the reason.
static int soaking(struct device *d, int64_t *reads) {
  if (soak_power < 0) return 0;
  *reads = soak_reads[d - cfg.dev];
  return 1;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(void *h, unsigned int *out) {
  DEV(h);
  OUT(out);
  int64_t reads;
  *out = (unsigned int)d->power_draw;
  if (soaking(d, &reads)) {
    soak_reads[d - cfg.dev]++;
    *out = (unsigned int)(soak_power * (double)d->power_limit);
  }
  return SUCCESS;
}
static int64_t reasons(struct device *d) {
  int64_t reads;
  return soaking(d, &reads) && soak_drop >= 0 && reads >= soak_drop ? d->event_reasons | 0x60 : d->event_reasons;
}
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(void *h, unsigned long long *out) {
  DEV(h);
  OUT(out);
  *out = (unsigned long long)reasons(d);
  return SUCCESS;
}
#ifndef DRIVER_450
GETTER(nvmlDeviceGetGpuMaxPcieLinkGeneration, unsigned int, pcie_gen_gpu_max)
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(void *h, unsigned long long *out) {
  DEV(h);
  OUT(out);
  *out = (unsigned long long)reasons(d);
  return SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetComputeMode(void *h, int *mode) {
  DEV(h);
  OUT(mode);
  if (d->mig == 1) return NOT_SUPPORTED; // with MIG on, it needs a MIG handle (§1.3)
  *mode = (int)d->compute_mode;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(void *h, int *major, int *minor) {
  DEV(h);
  OUT(major);
  OUT(minor);
  *major = (int)d->cc_major, *minor = (int)d->cc_minor;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(void *h, unsigned int *cur, unsigned int *pending) {
  DEV(h);
  OUT(cur);
  OUT(pending);
  if (d->mig < 0) return NOT_SUPPORTED;
  *cur = *pending = (unsigned int)d->mig;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(void *h, unsigned int *count) {
  DEV(h);
  OUT(count);
  *count = d->mig == 1 ? MAXMIG : 0;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(void *h, unsigned int i, void **mh) {
  DEV(h);
  OUT(mh);
  if (d->mig != 1) return bad(INVALID_ARGUMENT);
  if (i >= MAXMIG) return bad(INVALID_ARGUMENT);
  if (i >= d->mig_devices) return NOT_FOUND; // an empty slot
  *mh = &mig_handles[d - cfg.dev][i];
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(void *h, unsigned int *min, unsigned int *max) {
  DEV(h);
  OUT(min);
  OUT(max);
  *min = (unsigned int)(d->power_max / 2);
  *max = (unsigned int)d->power_max;
  return SUCCESS;
}

static nvmlReturn_t clocks(void *h, int type, unsigned int *mhz, int max) {
  DEV(h);
  OUT(mhz);
  switch (type) {
  case 0: // graphics
  case 1: { // SM
    int64_t reads;
    *mhz = (unsigned int)(max ? d->clock_sm_max : d->clock_sm);
    if (!max && soaking(d, &reads)) *mhz = (unsigned int)(soak_drop >= 0 && reads >= soak_drop ? d->clock_sm_max * 6 / 10 : d->clock_sm_max);
    return SUCCESS;
  }
  case 2: // memory
    *mhz = (unsigned int)(max ? d->clock_mem_max : d->clock_mem);
    return SUCCESS;
  case 3: // video
    return NOT_SUPPORTED;
  }
  return bad(INVALID_ARGUMENT);
}
nvmlReturn_t nvmlDeviceGetClockInfo(void *h, int type, unsigned int *mhz) { return clocks(h, type, mhz, 0); }
nvmlReturn_t nvmlDeviceGetMaxClockInfo(void *h, int type, unsigned int *mhz) { return clocks(h, type, mhz, 1); }

nvmlReturn_t nvmlDeviceGetTemperature(void *h, int sensor, unsigned int *t) {
  DEV(h);
  OUT(t);
  if (sensor != 0) return bad(INVALID_ARGUMENT);
  int64_t reads;
  *t = (unsigned int)(soaking(d, &reads) ? 40 + reads : d->temp);
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEccMode(void *h, int *cur, int *pending) {
  DEV(h);
  OUT(cur);
  OUT(pending);
  if (d->ecc < 0) return NOT_SUPPORTED;
  *cur = *pending = (int)d->ecc;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(void *h, int type, int counter, unsigned long long *n) {
  DEV(h);
  OUT(n);
  if (d->ecc != 1) return NOT_SUPPORTED; // requires ECC enabled
  if (type == 1 && counter == 0) *n = (unsigned long long)d->ecc_unc_volatile;
  else if (type == 0 && counter == 0) *n = (unsigned long long)d->ecc_corr_volatile;
  else if (type == 1 && counter == 1) *n = (unsigned long long)d->ecc_unc_aggregate;
  else if (type == 0 && counter == 1) *n = 0;
  else return bad(INVALID_ARGUMENT);
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPages(void *h, int cause, unsigned int *count, unsigned long long *addresses) {
  DEV(h);
  OUT(count);
  int64_t n;
  if (cause == 0) n = d->retired_sbe;
  else if (cause == 1) n = d->retired_dbe;
  else return bad(INVALID_ARGUMENT);
  if (*count < n) {
    *count = (unsigned int)n;
    return INSUFFICIENT_SIZE;
  }
  if (n > 0) OUT(addresses);
  for (int64_t i = 0; i < n; i++) addresses[i] = 0x1000 * (unsigned long long)(i + 1);
  *count = (unsigned int)n;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(void *h, int *pending) {
  DEV(h);
  OUT(pending);
  *pending = (int)d->retired_pending;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(void *h, unsigned int *corr, unsigned int *unc, unsigned int *pending,
                                       unsigned int *failed) {
  DEV(h);
  OUT(corr);
  OUT(unc);
  OUT(pending);
  OUT(failed);
  if (!d->remap || d->mig == 1) return NOT_SUPPORTED;
  *corr = (unsigned int)d->remap_corr, *unc = (unsigned int)d->remap_unc;
  *pending = (unsigned int)d->remap_pending, *failed = (unsigned int)d->remap_failed;
  return SUCCESS;
}

// link_of checks a link query: the device, the link number, and whether
// the device has that link (NOT_SUPPORTED when not, as NVML answers).
#define LINK(h, link)                                                   \
  DEV(h);                                                               \
  int g = (int)(d - cfg.dev);                                           \
  if (link >= 18) return bad(INVALID_ARGUMENT); /* NVML_NVLINK_MAX_LINKS in 11.8-13.2 headers */ \
  if (link >= d->nvlinks) return NOT_SUPPORTED

static int link_up(struct device *d, int g, unsigned int link) { return link < d->nvlinks_active && !topo.down[g][link]; }

// peer is the device at the other end of a bridged link: the pair's other.
static int peer(int g) { return (g ^ 1) < cfg.count ? g ^ 1 : -1; }

nvmlReturn_t nvmlDeviceGetNvLinkState(void *h, unsigned int link, int *active) {
  LINK(h, link);
  OUT(active);
  *active = link_up(d, g, link);
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkVersion(void *h, unsigned int link, unsigned int *version) {
  LINK(h, link);
  OUT(version);
  (void)g;
  *version = 6; // NVML_NVLINK_VERSION_4_0, Hopper's
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(void *h, unsigned int link, int *type) {
  LINK(h, link);
  OUT(type);
  *type = topo.layout == BRIDGED && peer(g) >= 0 ? 0 : 2; // GPU, or NVSwitch
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(void *h, unsigned int link, struct pci *p) {
  LINK(h, link);
  OUT(p);
  memset(p, 0, sizeof *p);
  if (topo.layout == BRIDGED && peer(g) >= 0) {
    strncpy(p->busId, cfg.dev[peer(g)].bus_id, 31);
    p->bus = (unsigned int)cfg.dev[peer(g)].bus;
  } else { // four NVSwitches, links spread over them as 5, 4, 4, 5
    static const int sw[18] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3};
    p->bus = 0x10 + (unsigned int)sw[link];
    snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", p->bus);
  }
  strncpy(p->busIdLegacy, p->busId + 4, 15);
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(void *h, unsigned int link, int counter, unsigned long long *value) {
  LINK(h, link);
  OUT(value);
  if (counter < 0 || counter > 4) return bad(INVALID_ARGUMENT);
  *value = 0;
  if (counter == 2) *value = (unsigned long long)(topo.crc[g][link] += topo.crc_step[g][link]);
  return SUCCESS;
}

// Pairs: the PCIe level (nvmlGpuTopologyLevel_t) and P2P status.
static int half(int g) { return g < (cfg.count + 1) / 2 ? 0 : 1; }

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(void *h1, void *h2, int *level) {
  READY();
  struct device *a = dev(h1, 0, 0), *b = dev(h2, 0, 0);
  if (!a || !b) return bad(INVALID_ARGUMENT);
  OUT(level);
  int ga = (int)(a - cfg.dev), gb = (int)(b - cfg.dev);
  if (topo.layout != NVSWITCH && ga / 2 == gb / 2) *level = 10; // one PCIe switch
  else *level = half(ga) == half(gb) ? 40 : 50;                // one NUMA node, or across sockets
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetP2PStatus(void *h1, void *h2, int index, int *status) {
  READY();
  struct device *a = dev(h1, 0, 0), *b = dev(h2, 0, 0);
  if (!a || !b) return bad(INVALID_ARGUMENT);
  OUT(status);
  if (index < 0 || index > 4) return bad(INVALID_ARGUMENT);
  int ga = (int)(a - cfg.dev), gb = (int)(b - cfg.dev);
  int nvlink = topo.layout == NVSWITCH || (topo.layout == BRIDGED && peer(ga) == gb);
  if (index == 2) *status = nvlink ? 0 : 5;
  else *status = topo.p2p;
  return SUCCESS;
}

#ifndef DRIVER_450
// nvmlGpuFabricInfo_v2_t, 36 bytes.
struct fabric {
  unsigned int version;
  unsigned char cluster_uuid[16];
  int status;
  unsigned int clique;
  unsigned char state;
  unsigned int health;
};
_Static_assert(sizeof(struct fabric) == 36, "nvmlGpuFabricInfo_v2_t is 36 bytes");

#ifdef DRIVER_535_EARLY
// 535 drivers have only the first form, nvmlGpuFabricInfo_t (28 bytes).
struct fabric1 {
  unsigned char cluster_uuid[16];
  int status;
  unsigned int clique;
  unsigned char state;
};
_Static_assert(sizeof(struct fabric1) == 28, "nvmlGpuFabricInfo_t is 28 bytes");
nvmlReturn_t nvmlDeviceGetGpuFabricInfo(void *h, struct fabric1 *f) {
  DEV(h);
  OUT(f);
  if (topo.layout != NVSWITCH) return NOT_SUPPORTED;
  memset(f, 0, sizeof *f);
  f->state = (unsigned char)topo.fabric, f->status = topo.fabric_status;
  return SUCCESS;
}
#else
nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(void *h, struct fabric *f) {
  DEV(h);
  OUT(f);
  if (f->version != 0x02000024) return bad(ARGUMENT_VERSION_MISMATCH);
  if (topo.layout != NVSWITCH) return NOT_SUPPORTED;
  memset(f->cluster_uuid, 0, sizeof f->cluster_uuid);
  f->state = (unsigned char)topo.fabric, f->status = topo.fabric_status, f->clique = 0, f->health = 0;
  return SUCCESS;
}
#endif
#endif

// A process used the GPU just before: readings answer util_tail until
// util_tail_end (CLOCK_MONOTONIC ns), while their sample period (up to
// 1 s) still covers its work (fake_util_tail: the share, for how many ms).
static int64_t util_tail, util_tail_end;
static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
void fake_util_tail(int64_t share, int64_t ms) { util_tail = share, util_tail_end = mono_ns() + ms * 1000000; }

nvmlReturn_t nvmlDeviceGetUtilizationRates(void *h, unsigned int *u) {
  DEV(h);
  OUT(u);
  if (d->mig == 1) return NOT_SUPPORTED; // not on MIG-enabled GPUs (§1.3)
  if (d - cfg.dev == lost) return GPU_IS_LOST;
  st.util_calls++;
  u[0] = (unsigned int)d->util;
  if (mono_ns() < util_tail_end) u[0] = (unsigned int)util_tail;
  u[1] = (unsigned int)d->util / 2;
  return SUCCESS;
}

// procs writes the device's processes of one kind in entries of stride
// bytes: pid @0, usedGpuMemory @8, and from 24 bytes on the instance ids
// @16 and @20 (0xFFFFFFFF with MIG off), from 32 the protected memory @24.
static nvmlReturn_t procs(void *h, unsigned int *count, unsigned char *infos, int mps, int stride) {
  DEV(h);
  OUT(count);
  int first = mps ? (int)d->compute_procs : 0;
  int n = mps ? (int)d->mps_procs : (int)d->compute_procs;
  if (n == 0) {
    *count = 0;
    return SUCCESS;
  }
  if (*count < (unsigned int)n) {
    *count = (unsigned int)n;
    return INSUFFICIENT_SIZE;
  }
  OUT(infos);
  for (int i = 0; i < n; i++) {
    unsigned char *e = infos + (size_t)i * stride;
    memset(e, 0, stride);
    unsigned int pid = (unsigned int)d->proc_pid[first + i];
    unsigned long long m = (unsigned long long)d->proc_mem[first + i];
    memcpy(e, &pid, 4);
    memcpy(e + 8, &m, 8);
    if (stride >= 24) memset(e + 16, 0xFF, 8);
  }
  *count = (unsigned int)n;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(void *h, unsigned int *c, void *p) { return procs(h, c, p, 0, 16); }
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(void *h, unsigned int *c, void *p) { return procs(h, c, p, 1, 16); }
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(void *h, unsigned int *c, void *p) { return procs(h, c, p, 0, 24); }
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(void *h, unsigned int *c, void *p) { return procs(h, c, p, 1, 24); }
#ifndef DRIVER_450
#ifdef DRIVER_535_EARLY
#define V3_STRIDE 32
#else
#define V3_STRIDE 24
#endif
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned int *c, void *p) {
  return procs(h, c, p, 0, V3_STRIDE);
}
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(void *h, unsigned int *c, void *p) {
  return procs(h, c, p, 1, V3_STRIDE);
}
#endif

// The event API, written from NVIDIA's nvml.h 12.4 (Debian's
// libnvidia-ml-dev; abi_reference.md does not cover it): one event set,
// Xid events only, recorded from the first registration on. Queued Xids
// come from fake_xid (tests in the process) or $FAKENVML_XIDS, a list of
// code:device:ms, each due ms after the first registration ("79:1:1500":
// GPU 1 falls off the bus 1.5 s in). no_xid_events (above) makes every
// device one that cannot report Xids (a vGPU guest, say).
struct event_data { // nvmlEventData_t, 32 bytes
  void *device;
  unsigned long long eventType, eventData;
  unsigned int gpuInstanceId, computeInstanceId;
};
_Static_assert(sizeof(struct event_data) == 32, "nvmlEventData_t is 32 bytes");

#define XID_EVENT 0x8ULL // nvmlEventTypeXidCriticalError
#define MAXXID 16
static struct {
  int64_t device, code, after_ms, gi, ci;
} xids[MAXXID];
static int nxids = -1; // -1: $FAKENVML_XIDS not read yet
static char event_set;
static int64_t registered[MAXDEV];
static int64_t since_ms = -1; // the first registration, on CLOCK_MONOTONIC

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void read_xids(void) {
  if (nxids >= 0) return;
  nxids = 0;
  const char *s = getenv("FAKENVML_XIDS");
  while (s && *s && nxids < MAXXID) {
    char *end;
    xids[nxids].code = strtoll(s, &end, 10);
    if (*end != ':') break;
    xids[nxids].device = strtoll(end + 1, &end, 10);
    if (*end != ':') break;
    xids[nxids].after_ms = strtoll(end + 1, &end, 10);
    xids[nxids].gi = xids[nxids].ci = 0xFFFFFFFF;
    nxids++;
    s = *end == ',' ? end + 1 : end;
  }
}

void fake_xid(int64_t device, int64_t code, int64_t after_ms, int64_t gi, int64_t ci) {
  read_xids();
  if (nxids == MAXXID) return;
  xids[nxids].device = device, xids[nxids].code = code, xids[nxids].after_ms = after_ms;
  xids[nxids].gi = gi, xids[nxids].ci = ci;
  nxids++;
}

nvmlReturn_t nvmlEventSetCreate(void **set) {
  READY();
  OUT(set);
  if (st.event_sets) return bad(INVALID_ARGUMENT); // the simulation has one set
  st.event_sets++;
  memset(registered, 0, sizeof registered);
  *set = &event_set;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(void *h, unsigned long long *types) {
  DEV(h);
  OUT(types);
  *types = no_xid_events ? 0x6 : 0x7 | XID_EVENT; // ECC and P-state events either way
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(void *h, unsigned long long types, void *set) {
  DEV(h);
  if (set != &event_set || !st.event_sets) return bad(INVALID_ARGUMENT);
  if (types & ~0x1FFULL) return bad(INVALID_ARGUMENT);
  if (no_xid_events && (types & XID_EVENT)) return NOT_SUPPORTED;
  registered[d - cfg.dev] |= (int64_t)types;
  if (since_ms < 0) since_ms = now_ms();
  return SUCCESS;
}

nvmlReturn_t nvmlEventSetWait_v2(void *set, struct event_data *data, unsigned int timeout_ms) {
  READY();
  if (set != &event_set || !st.event_sets) return bad(INVALID_ARGUMENT);
  OUT(data);
  read_xids();
  int64_t deadline = now_ms() + timeout_ms;
  for (;;) {
    for (int i = 0; i < nxids; i++) {
      int64_t dv = xids[i].device;
      if (dv < 0 || dv >= cfg.count || dv >= MAXDEV || !(registered[dv] & XID_EVENT)) continue;
      if (since_ms < 0 || now_ms() < since_ms + xids[i].after_ms) continue;
      memset(data, 0, sizeof *data);
      data->device = &handles[dv];
      data->eventType = XID_EVENT;
      data->eventData = (unsigned long long)xids[i].code;
      data->gpuInstanceId = (unsigned int)xids[i].gi;
      data->computeInstanceId = (unsigned int)xids[i].ci;
      memmove(&xids[i], &xids[i + 1], sizeof xids[0] * (size_t)(nxids - i - 1));
      nxids--;
      return SUCCESS;
    }
    if (now_ms() >= deadline) return TIMEOUT;
    struct timespec step = {0, 5 * 1000000};
    nanosleep(&step, 0);
  }
}

nvmlReturn_t nvmlEventSetFree(void *set) {
  READY();
  if (set != &event_set || !st.event_sets) return bad(INVALID_ARGUMENT);
  st.event_sets--;
  memset(registered, 0, sizeof registered);
  return SUCCESS;
}
