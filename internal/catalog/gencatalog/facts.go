package main

import "strings"

// fact is a sourced value for one catalog field, from the fee research
// (internal/catalog/research/fees.csv and fees_notes.md) or the disk research, with
// where it is stated.
type fact struct {
	field, value, source string
}

// providerFacts fill fields the research table left empty, for every
// offer of a provider: fees.csv's sourced values (one row each, its URL
// and date as there). A cell the table fills keeps its value; a fact
// names a field the generator writes as YAML, so values are in the
// catalog's units (a month of IP is the hourly rate × 730 h, as fees.csv
// derives it). Left out, and said in fees_notes.md: Vast.ai's host-set
// storage and egress (no one number), Google's lower IP price on Spot VMs
// (no field for a spot-only fee), GPUShare's 24 h wipe of /hy-tmp (a
// disk's fate, recorded as its kind, not a release), Lambda's lack of a
// stop (its disk is recorded as ephemeral).
var providerFacts = map[string][]fact{
	"AWS": {
		{"ip_month", "3.65", "public IPv4 $0.005/h × 730 h: https://github.com/ChiefGyk3D/Clouds-Against-Humanity/wiki/Provider-AWS-Cost-Lesson (2026-10-16)"},
		{"storage.stopped_gb_month", "0.08", "EBS keeps billing while stopped: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StopInstances.html (undated)"},
		{"release_after_stopped", "never", "a stopped instance is kept until terminated: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StopInstances.html (undated)"},
	},
	"Google Cloud": {
		{"on_demand.minimum", "60s", "https://cloud.google.com/compute/vm-instance-pricing (undated)"},
		{"ip_month", "3.65", "external IPv4 $0.005/h × 730 h on a standard VM: https://github.com/ChiefGyk3D/Clouds-Against-Humanity/wiki/Provider-GCP-Cost-Lesson (2026-10-16)"},
		{"release_after_stopped", "never", "https://docs.cloud.google.com/compute/docs/instances/stop-start-instance (undated)"},
	},
	"Azure": {
		{"on_demand.increment", "1s", "https://hub.pointfive.co/inefficiencies/missing-scheduled-shutdown-for-non-production-azure-virtual-machines (undated, secondary)"},
		{"on_demand.minimum", "300s", "5-minute minimum from 2025-06-01 (older pages say 1 minute): https://learn.microsoft.com/en-us/answers/questions/2259765/clarification-on-azure-vm-billing-for-short-runtim (2025-04-21, secondary)"},
		{"ip_month", "3.65", "Standard public IPv4 $0.005/h: https://c3x.dev/resources/azure/azurerm_public_ip (undated, secondary)"},
		{"storage.running_gb_month", "0.1434", "Premium SSD P10 $19.71/month ÷ 128 GiB (137.4 GB; that tier only): https://github.com/rshade/finfocus-plugin-azure-public (2026, secondary)"},
		{"storage.stopped_gb_month", "0.1434", "the same P10 rate: managed disks bill while deallocated, https://learn.microsoft.com/en-us/answers/questions/2259765/clarification-on-azure-vm-billing-for-short-runtim (2025-04-21)"},
		{"release_after_stopped", "never", "https://benyamin.cc/index.php/2020/02/24/azure-vm-lifecycle/ (2020-02-24, copy of Microsoft's power-state table)"},
	},
	"Hyperstack": {
		{"storage.running_gb_month", "0.0706", "Cloud-SSD volume 0.000096774/GB-h × 730 h: https://raw.githubusercontent.com/api-evangelist/nexgen-cloud/refs/heads/main/plans/nexgen-cloud-plans-pricing.yml (2026-08-26)"},
		{"egress_gb", "0", "egress free: same source (2026-08-26)"},
		{"ip_month", "4.91", "public IP 0.00672043/h × 730 h: same source (2026-08-26)"},
	},
	"Nebius": {
		{"on_demand.increment", "1s", "https://docs.nebius.com/object-storage/resources/pricing (undated)"},
	},
	"OVHcloud": {
		{"on_demand.increment", "1h", "https://docs.ovh.com/au/en/public-cloud/information-on-cloud-billing-options/ (2022-08-29)"},
		{"on_demand.minimum", "1h", "https://support.us.ovhcloud.com/hc/en-us/articles/22143514040083 (undated)"},
	},
	"Paperspace": {
		{"egress_gb", "0", "free unlimited bandwidth: https://docs.digitalocean.com/products/paperspace/machines/details/limits (undated)"},
		{"storage.stopped_gb_month", "0.10", "$5/month for the 50 GB tier: https://support.paperspace.com/hc/en-us/articles/360057895553-Virtual-Machine-Billing-Overview (undated)"},
	},
	"Jarvislabs": {
		{"storage.stopped_gb_month", "0.10", "https://raw.githubusercontent.com/api-evangelist/jarvislabs/refs/heads/main/finops/jarvislabs-finops.yml (2026-06-21)"},
	},
	"Verda (DataCrunch)": {
		{"on_demand.increment", "1s", "https://raw.githubusercontent.com/api-evangelist/datacrunch/refs/heads/main/finops/datacrunch-finops.yml (2026-06-21)"},
	},
	"CoreWeave": {
		{"on_demand.increment", "1m", "https://docs.coreweave.com/resources/billing-and-charges (undated)"},
		{"on_demand.minimum", "0s", "no minimum charge: https://docs.coreweave.com/resources/billing-and-charges (undated)"},
	},
}

// offerFacts are facts that hold for some offers of a provider only.
var offerFacts = map[string][]fact{
	// Scaleway's own EUR offers; those sold through Shadeform in USD are
	// billed by Shadeform, whose IP fee no source states.
	"scaleway-h100-1-80g":     scalewayIP,
	"scaleway-h100-sxm-8-80g": scalewayIP,
}

// interconnect is what joins an offer's GPUs where a page states it
// (catalog.Offer.Interconnect), by offer id. bench --offer fails a
// machine whose GPUs lack what is listed here, so an offer is listed
// only where its provider (or, marked secondary, someone quoting the
// provider) says it; the model's name is not enough, since PCIe cards
// may or may not carry a bridge.
var interconnect = map[string]fact{
	"azure-ND96isr_H100_v5": {"interconnect", "nvlink",
		"\"Each GPU features NVLINK 4.0 connectivity for communication within the VM\": https://github.com/MicrosoftDocs/azure-docs/blob/main/articles/virtual-machines/sizes/gpu-accelerated/includes/ndh100v5-series-summary.md (2024-08-01)"},
	"azure-ND96asr_v4": {"interconnect", "nvlink",
		"\"Each GPU features NVLINK 3.0 connectivity for communication within the VM\": https://github.com/MicrosoftDocs/azure-docs/blob/main/articles/virtual-machines/sizes/gpu-accelerated/includes/ndasra100v4-series-summary.md (2024-07-31)"},
	"azure-ND96amsr_A100_v4": {"interconnect", "nvlink",
		"\"Each GPU features NVLINK 3.0 connectivity for communication within the VM\": https://github.com/MicrosoftDocs/azure-docs/blob/main/articles/virtual-machines/sizes/gpu-accelerated/includes/ndma100v4-series-summary.md (2024-07-31)"},
	"aws-p4d.24xlarge": {"interconnect", "nvlink",
		"GPU interconnect \"NVLink gen 3 (600 GB/s)\": https://gist.github.com/shashankprasanna/10ebe6dc1ba1d8d93db17da4e2cc890e (undated, secondary: an AWS engineer's table of EC2 GPU instances)"},
	"aws-g5.12xlarge": {"interconnect", "pcie",
		"GPU interconnect \"PCIe\": https://gist.github.com/shashankprasanna/10ebe6dc1ba1d8d93db17da4e2cc890e (undated, secondary: an AWS engineer's table of EC2 GPU instances)"},
}

// diskKind is what becomes of an offer's included disk when it is
// stopped (storage.included_disk), by provider, with the sentence that
// says so; offers not listed, and providers no source speaks for, are
// unknown. From the disk research in fees.csv and fees_notes.md.
var diskKind = map[string]fact{
	"AWS":            {"", "ephemeral", "instance store: \"the data does not persist if the instance is stopped, hibernated, or terminated\", https://docs.amazonaws.cn/en_us/AWSEC2/latest/UserGuide/instance-store-lifetime.html"},
	"Azure":          {"", "ephemeral", "local NVMe and temp disk: \"Data will be lost on these disks if you stop/deallocate your VM\", https://learn.microsoft.com/en-us/azure/storage/container-storage/use-container-storage-with-local-disk"},
	"Lambda":         {"", "ephemeral", "no stop, only terminate, which destroys data outside a persistent filesystem: https://zenn.dev/ainellc/articles/e7749e5509840d"},
	"RunPod":         {"", "ephemeral", "the container disk is wiped on stop; the volume disk persists (runpod/docs pods/storage/types.mdx)"},
	"CoreWeave":      {"", "ephemeral", "the node price \"includes the host device vCPU, RAM and ephemeral storage allocations\" (docs.coreweave.com)"},
	"GPUShare (恒源云)": {"", "ephemeral", "/hy-tmp is wiped 24 h after shutdown: https://yzsam.com/html/MiudlN.html (2022-04-17)"},
	"AutoDL":         {"", "persistent", "the data disk /root/autodl-tmp survives a shutdown (kept 15 days): https://www.autodl.com/docs/env/"},
	"Vast.ai":        {"", "persistent", "\"Storage charges continue even when instances are stopped\": https://docs.vast.ai/documentation/instances/pricing"},
	"Paperspace":     {"", "persistent", "machines with persistent storage, billed on or off: https://support.paperspace.com/hc/en-us/articles/360057895553-Virtual-Machine-Billing-Overview"},
	"Jarvislabs":     {"", "persistent", "\"Persistent storage ... survives pause/resume\": https://raw.githubusercontent.com/api-evangelist/jarvislabs/refs/heads/main/finops/jarvislabs-finops.yml"},
	"Nebius":         {"", "persistent", "\"The usage of Disk is charged regardless whether a Virtual Machine is running\" (docs.nebius.com Compute terms)"},
}

// Disk facts that hold for several offers of one provider.
var (
	localSSD       = fact{"", "ephemeral", "local SSD: \"Preserving the Local SSD disk data incurs costs\", https://cloud.google.com/sdk/gcloud/reference/compute/instances/stop"}
	scalewayVolume = fact{"", "persistent", "\"IPs and storage volumes are billed for their whole allocation, even when the instance is off\": https://github.com/scaleway/docs-content/pull/5727 (2025-10-28)"}
	scalewayIP     = []fact{{"ip_month", "2.92", "flexible IPv4 €0.004/h × 730 h: https://github.com/scaleway/docs-content/blob/main/pages/ipam/reference-content/understanding-ip-billing.mdx (2025-06-26)"}}
)

// offerDiskKind overrides diskKind for offers that differ from their
// provider's others, or whose provider has none: Google's shapes that
// come with local SSD (the others' disk is not sourced), Alibaba's ECS
// offer, Scaleway's own EUR offers.
var offerDiskKind = map[string]fact{
	"gcp-a2-ultragpu-1g":       localSSD,
	"gcp-a3-highgpu-2g":        localSSD,
	"gcp-a3-highgpu-8g":        localSSD,
	"gcp-a3-megagpu-8g":        localSSD,
	"aliyun-ecs-a100-80g-list": {"", "persistent", "ECS system and data cloud disks keep billing when stopped: help.aliyun.com/document_detail/25501.html"},
	"scaleway-h100-1-80g":      scalewayVolume,
	"scaleway-h100-sxm-8-80g":  scalewayVolume,
}

// disk is the offer's included disk kind and its source, or unknown.
func disk(provider, id string) fact {
	if f, ok := offerDiskKind[id]; ok {
		return f
	}
	if strings.HasPrefix(id, "gcp-") {
		return fact{value: "unknown"}
	}
	if f, ok := diskKind[provider]; ok && !strings.HasPrefix(id, "aliyun-pai") && !strings.HasSuffix(id, "-shadeform") {
		return f
	}
	return fact{value: "unknown"}
}

// supersedes names the older readings of an offer the research table
// holds, by the id of the newest: the same provider, product, tier, GPU
// and count read on different days (catalog_notes.md names each change).
// An older or undated reading of what the provider sells today is one,
// though its shape differs (issue #56: left apart, they ranked first at
// prices no longer asked): Jarvislabs' 1-GPU H100 of 16 vCPUs (2.69 on
// 2026-09-20) is its 24-vCPU one (3.49 on 2026-10-06), Nebius' undated
// SkyPilot row (2.95) its 1-GPU HGX H100 (4.50 from 2026-10-01). Left
// apart: AutoDL's A800 rows (one names "A800 / A100 80GB"), AutoDL's 4090
// market minimum and home-page price (two statistics, not two readings).
var supersedes = map[string][]string{
	"runpod-secure-h100-sxm-2026-11":  {"runpod-secure-h100-sxm"},                                   // $3.49 on 2026-09-25, $3.99 from 2026-10-19
	"runpod-secure-a100-sxm-2026-11":  {"runpod-secure-a100-sxm-80gb"},                              // $1.59, then $1.79
	"nebius-h100-2026-10":             {"nebius-h100-2026-09", "nebius-gpu-h100-sxm_1gpu-skypilot"}, // $3.85, $4.50 effective 2026-10-01
	"jarvis-h100-2026-10-06":          {"jarvis-h100-2026-09-20"},                                   // 16 vCPUs at $2.69, 24 at $3.49
	"vast-h100-sxm-median-2026-10-19": {"vast-h100-sxm-median-2026-10-07"},
	"paperspace-h100-2026-10-06":      {"paperspace-h100-2026-09-20"},
}

// spotFrequency is AWS's Spot Instance Advisor bucket for each AWS offer
// with a spot price, us-east-1 Linux (fees_notes.md): the share of spot
// capacity reclaimed in the trailing month, as "low-high" or "low-" for
// the open >20% bucket. p5.4xlarge and p6-b200 are not in the feed. No
// other provider in the catalog publishes one without an account.
var spotFrequency = map[string]string{
	"aws-p4d.24xlarge":  "0.10-0.15",
	"aws-p4de.24xlarge": "0-0.05",
	"aws-p5.48xlarge":   "0.20-",
	"aws-p5en.48xlarge": "0-0.05",
	"aws-g5.xlarge":     "0.20-",
	"aws-g5.12xlarge":   "0.20-",
	"aws-g5.48xlarge":   "0.20-",
	"aws-g6.xlarge":     "0.20-",
	"aws-g6.12xlarge":   "0.20-",
	"aws-g6e.xlarge":    "0.05-0.10",
	"aws-g6e.12xlarge":  "0.20-",
	"aws-g6e.48xlarge":  "0.20-",
}

// spotFrequencySource is where spotFrequency's buckets are read.
const spotFrequencySource = "AWS Spot Instance Advisor (spot-advisor-data.json, copy in alexei-led/spotinfo at 5eedf20a)"

const spotFrequencyAsOf = "2025-06-28"

// frequencyYAML is the spot.interruption_frequency of id, or "".
func frequencyYAML(id string) string {
	b, ok := spotFrequency[id]
	if !ok {
		return ""
	}
	lo, hi, _ := strings.Cut(b, "-")
	if hi == "" {
		hi = "unknown"
	}
	return ", interruption_frequency: {monthly_low: " + lo + ", monthly_high: " + hi + ", source: " + q(spotFrequencySource) + ", as_of: " + q(spotFrequencyAsOf) + "}"
}

// factFor is the sourced value of field for the offer, if there is one.
func factFor(provider, id, field string) (fact, bool) {
	for _, f := range offerFacts[id] {
		if f.field == field {
			return f, true
		}
	}
	for _, f := range providerFacts[provider] {
		if f.field == field {
			return f, true
		}
	}
	return fact{}, false
}
