// Package bench judges a freshly rented machine: is this the GPU that was
// ordered, whole, unshared, unthrottled and healthy, and is the host what
// was promised. It is a pure function of recorded facts (package probe) and
// the datasheet table (package specs), so a saved facts file can be judged
// anywhere, without a GPU, and every judgement is tested with fixtures.
package bench

import (
	"math"
	"strings"

	"github.com/gpurent/gpurent/internal/check"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/sharing"
	"github.com/gpurent/gpurent/internal/specs"
	"github.com/gpurent/gpurent/internal/suggest"
)

// Statuses, from best to worst; skip means the check could not run.
const (
	Pass = check.Pass
	Warn = check.Warn
	Fail = check.Fail
	Skip = check.Skip
)

// Check is one judgement with its evidence (internal/check's, which audit
// reports too).
type Check = check.Check

// Report is the verdict, the checks behind it and the facts they judged.
type Report struct {
	Verdict string      `json:"verdict"`
	Expect  string      `json:"expect,omitempty"`
	Checks  []Check     `json:"checks"`
	Facts   probe.Facts `json:"facts"`
}

// Order is what the user paid for. Zero values mean "not stated": the card
// is then judged against its own datasheet.
type Order struct {
	GPU  string // "A100 80GB SXM"; rows accepted are specs.Table.Match(GPU)
	GPUs int
	// CPUs and RAM (bytes) are the host the offer promised: the CPUs this
	// container may use and the memory it may fill.
	CPUs int
	RAM  float64
	// Disk is the size (bytes) promised for the disk the data directory
	// is on.
	Disk float64
	// CUDA is the CUDA version the user's software was built with, "12.8".
	CUDA string
	// Interconnect is what the offer promised joins its GPUs (nvlink or
	// pcie; empty: nothing promised), InterconnectSource where it says so.
	Interconnect, InterconnectSource string
}

// Limits are the thresholds of every check, in one place, each with why.
type Limits struct {
	// MemoryLabelMin: NVML's total over the datasheet label. Healthy cards
	// report a little less than the label (A10G: 22587 MiB of "24GB" is
	// 0.919); a sharing layer's fake
	// total (HAMi shows 3000 MiB of a 16 GB V100) is far below.
	MemoryLabelMin float64
	// MemoryUsedMax: share of memory in use before gpurent touched the GPU.
	// An idle card holds a few MiB; 5% of an 80 GB card is 4 GB of someone
	// else's data.
	MemoryUsedMax float64
	// UtilMeanFail, UtilMaxFail, UtilMeanWarn: GPU utilization (%) while
	// gpurent runs nothing on the GPU. An idle, unshared GPU reads 0.
	UtilMeanFail, UtilMaxFail, UtilMeanWarn float64
	// PowerFail, PowerWarn: enforced power limit over the board default (or
	// the datasheet TDP). DCGM's targeted_power fails a card below 75% of
	// its target power (bench_anchors.md §1b).
	PowerFail, PowerWarn float64
	// PCIeFail: link bandwidth (generation rate × width) over the
	// datasheet's. Below half, host-device copies take twice as long or
	// more; RunPod requires a full x16 link at the card's generation from its
	// partners (bench_anchors.md §4).
	PCIeFail float64
	// RetiredPagesWarn, RetiredPagesFail: DCGM's soft limit (15) and hard
	// limit (63) of retired pages (DcgmGPUHardwareLimits.h).
	RetiredPagesWarn, RetiredPagesFail uint32
	// RemapUncorrectableFail: DCGM fails at 512 uncorrectable row remaps.
	RemapUncorrectableFail uint32
	// IdleTempWarn: °C. An idle GPU sits far below its slowdown temperature;
	// 80 °C at idle means poor cooling or a hidden load.
	IdleTempWarn int
	// StealWarn, StealFail: % of CPU time taken by the hypervisor for other
	// guests. "Large amounts of steal time indicate CPU contention" (RHEL 6
	// virtualization guide §14.4); at 20% a fifth of the paid CPU is gone.
	StealWarn, StealFail float64
	// BusyWarn: % of all CPU time busy with other processes while gpurent
	// sleeps: the data loader will compete for it.
	BusyWarn float64
	// RAMPerVRAM: Vast.ai's self-test requires system RAM ≥ 0.95 × the total
	// GPU memory (bench_anchors.md §4).
	RAMPerVRAM float64
	// RAMOrderMin: usable RAM over the RAM ordered. /proc/meminfo's
	// MemTotal leaves out the kernel's code and reserved memory: on the
	// 24 GiB development VM, 24684084 kB of 25165432 kB (0.981; its boot
	// log shows 496508K reserved, 2026-12-01). A container's memory limit
	// is exact. Below 0.95 the memory is short, not merely accounted.
	RAMOrderMin float64
	// DiskOrderMin: file system size over the disk size ordered. A file
	// system keeps part of its disk for its journal and inode tables: the
	// development VM's 274877906944-byte disk holds an ext4 of
	// 270553174016 bytes (0.984, statfs, 2026-12-01).
	DiskOrderMin float64
	// DiskWriteWarnMBs: below 200 MB/s a 20 GB checkpoint takes over 100 s,
	// longer than most spot notices (AWS 120 s, GCP and Azure 30 s).
	DiskWriteWarnMBs float64
	// DiskFreeWarn: bytes; less than 20 GB leaves no room for a model and
	// two checkpoints.
	DiskFreeWarn uint64
	// ShmWarn: bytes of /dev/shm at or below which DataLoader workers and
	// NCCL fail: Docker's default --shm-size, 64 MiB, which PyTorch's
	// README says is not enough for its multiprocessing data loaders
	// ("increase shared memory size either with --ipc=host or --shm-size").
	ShmWarn uint64
	// NVLinkCRCWarn: CRC errors on one NVLink since the driver loaded;
	// DCGM's PCIe plugin fails a link at 100 (nvlink_crc_error_threshold,
	// bench_anchors.md §1).
	NVLinkCRCWarn uint64
	// PeerWarn: GPU-to-GPU copy bandwidth over what joins the pair (its
	// NVLinks per direction, or the narrower PCIe link). Healthy copy
	// engines reach 0.84 of NVLink 4 (NVIDIA/nccl#1264) and 0.68-0.83 of
	// PCIe Gen4 x16 (NVIDIA/nvbandwidth#50); under half, a link is down
	// or narrow, or the traffic detours through the CPU.
	PeerWarn float64
	// AllReduceWarn: NCCL's all-reduce bus bandwidth over the slowest GPU
	// pair's copy bandwidth. Healthy ring all-reduce on an 8×H100 reaches
	// 0.97 of it (365-370 GB/s, NVIDIA/nccl#1455, beside 380 GB/s copies,
	// nccl#1264), NVLink SHARP 1.26 (480, nccl-tests#212); under half,
	// NCCL is not using the path the copies took.
	AllReduceWarn float64
}

// DefaultLimits are the limits bench uses.
func DefaultLimits() Limits {
	return Limits{
		MemoryLabelMin: 0.90, MemoryUsedMax: 0.05,
		UtilMeanFail: 10, UtilMaxFail: 50, UtilMeanWarn: 1,
		PowerFail: 0.75, PowerWarn: 0.95,
		PCIeFail:         0.5,
		RetiredPagesWarn: 15, RetiredPagesFail: 63,
		RemapUncorrectableFail: 512,
		IdleTempWarn:           80,
		StealWarn:              5, StealFail: 20,
		BusyWarn:         50,
		RAMPerVRAM:       0.95,
		RAMOrderMin:      0.95,
		DiskOrderMin:     0.95,
		DiskWriteWarnMBs: 200,
		DiskFreeWarn:     20e9,
		ShmWarn:          64 << 20,
		NVLinkCRCWarn:    100,
		PeerWarn:         0.5,
		AllReduceWarn:    0.5,
	}
}

// Advice shared by several checks.
const (
	adviceRefund = sharing.AdviceRefund
	adviceShared = sharing.AdviceShared
)

// Judge runs every check of facts against the order and the datasheet table.
func Judge(f probe.Facts, tab *specs.Table, order Order, lim Limits) (*Report, error) {
	var accepted []*specs.GPU
	if order.GPU != "" {
		if accepted = tab.Match(order.GPU); len(accepted) == 0 {
			models := knownModels(tab)
			return nil, i18n.Errorf("--expect: no GPU in the datasheet table matches %q%s; known models include %s", order.GPU, suggest.DidYouMean(order.GPU, models), strings.Join(models, ", "))
		}
	}
	j := &judge{f: f, tab: tab, order: order, accepted: accepted, lim: lim, clim: DefaultComputeLimits()}
	j.gpu()
	j.links()
	j.interconnect()
	j.compute()
	j.homogeneity()
	j.soakHomogeneity()
	j.sharing()
	j.host()
	return &Report{Verdict: Verdict(j.checks), Expect: order.GPU, Checks: j.checks, Facts: f}, nil
}

func knownModels(tab *specs.Table) []string {
	var names []string
	for _, g := range tab.GPUs {
		if g.IsNVIDIA() {
			names = append(names, g.Model)
		}
	}
	return names
}

type judge struct {
	f        probe.Facts
	tab      *specs.Table
	order    Order
	accepted []*specs.GPU
	lim      Limits
	clim     ComputeLimits
	checks   []Check
}

func (j *judge) add(c Check) { j.checks = append(j.checks, c) }

func gib(b uint64) float64 { return math.Round(float64(b)/(1<<30)*100) / 100 }
