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
		{"boot_fee", "0", "the pending state before running is \"Not billed\" and there are \"no long-term commitments or upfront payments\": https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-lifecycle.html, https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/concepts.html (undated)"},
		{"ip_month", "3.65", "public IPv4 $0.005/h × 730 h: https://github.com/ChiefGyk3D/Clouds-Against-Humanity/wiki/Provider-AWS-Cost-Lesson (2026-10-16)"},
		{"storage.stopped_gb_month", "0.08", "EBS keeps billing while stopped: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StopInstances.html (undated)"},
		{"release_after_stopped", "never", "a stopped instance is kept until terminated: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StopInstances.html (undated)"},
	},
	"Google Cloud": {
		{"boot_fee", "0", "\"Instance uptime is measured as the number of seconds between when you start an instance and when you stop an instance\": https://cloud.google.com/compute/vm-instance-pricing (undated)"},
		{"on_demand.minimum", "60s", "https://cloud.google.com/compute/vm-instance-pricing (undated)"},
		{"ip_month", "3.65", "external IPv4 $0.005/h × 730 h on a standard VM: https://github.com/ChiefGyk3D/Clouds-Against-Humanity/wiki/Provider-GCP-Cost-Lesson (2026-10-16)"},
		{"release_after_stopped", "never", "https://docs.cloud.google.com/compute/docs/instances/stop-start-instance (undated)"},
	},
	"Azure": {
		{"boot_fee", "0", "\"You pay only for the resources you use and only for as long as you're using them\"; Starting is billed as running time: https://github.com/MicrosoftDocs/azure-compute-docs/blob/main/articles/virtual-machines/states-billing.md (2023-10-31)"},
		{"on_demand.increment", "1s", "https://hub.pointfive.co/inefficiencies/missing-scheduled-shutdown-for-non-production-azure-virtual-machines (undated, secondary)"},
		{"on_demand.minimum", "300s", "5-minute minimum from 2025-06-01 (older pages say 1 minute): https://learn.microsoft.com/en-us/answers/questions/2259765/clarification-on-azure-vm-billing-for-short-runtim (2025-04-21, secondary)"},
		{"ip_month", "3.65", "Standard public IPv4 $0.005/h: https://c3x.dev/resources/azure/azurerm_public_ip (undated, secondary)"},
		{"storage.running_gb_month", "0.1434", "Premium SSD P10 $19.71/month ÷ 128 GiB (137.4 GB; that tier only): https://github.com/rshade/finfocus-plugin-azure-public (2026, secondary)"},
		{"storage.stopped_gb_month", "0.1434", "the same P10 rate: managed disks bill while deallocated, https://learn.microsoft.com/en-us/answers/questions/2259765/clarification-on-azure-vm-billing-for-short-runtim (2025-04-21)"},
		{"release_after_stopped", "never", "https://benyamin.cc/index.php/2020/02/24/azure-vm-lifecycle/ (2020-02-24, copy of Microsoft's power-state table)"},
	},
	"Hyperstack": {
		{"boot_fee", "0", "billing follows the power state, and \"VMs in transtion states like HIBERNATING or RESTORING do not incur charges\": https://infrahub-doc.nexgencloud.com/docs/billing/states-and-billing (undated)"},
		{"release_after_stopped", "never", "a stopped VM stays SHUTOFF, billed, until hibernated or deleted; no deletion is stated: same page (undated; read from that rule)"},
		{"storage.stopped_gb_month", "0.0706", "SHUTOFF: \"billing continues for all resources\", at the running rate above: https://infrahub-doc.nexgencloud.com/docs/billing/states-and-billing (undated)"},
		{"storage.running_gb_month", "0.0706", "Cloud-SSD volume 0.000096774/GB-h × 730 h: https://raw.githubusercontent.com/api-evangelist/nexgen-cloud/refs/heads/main/plans/nexgen-cloud-plans-pricing.yml (2026-08-26)"},
		{"egress_gb", "0", "egress free: same source (2026-08-26)"},
		{"ip_month", "4.91", "public IP 0.00672043/h × 730 h: same source (2026-08-26)"},
	},
	"Nebius": {
		{"egress_gb", "0", "Networking: egress traffic \"Free\": https://raw.githubusercontent.com/api-evangelist/nebius/refs/heads/main/plans/nebius-plans-pricing.yml (read 2026-10-07, secondary: transcribes nebius.com/prices)"},
		{"ip_month", "0", "public IP \"Free\": same source (2026-10-07, secondary)"},
		{"storage.running_gb_month", "0.071", "network SSD (erasure-coded block volume, the boot disk's type) $0.071/GiB-month: same source (2026-10-07, secondary)"},
		{"storage.stopped_gb_month", "0.071", "\"The usage of Disk is charged regardless whether a Virtual Machine is running\": https://docs.nebius.com/legal/specific-terms/compute (undated), at the rate above"},
		{"on_demand.minimum", "1s", "the billing unit for GPUs is one second: https://docs.nebius.com/object-storage/resources/pricing (undated)"},
		{"storage.included_gb", "0", "disks are a Service Fee of their own, by type and size, from creation to deletion: https://docs.nebius.com/legal/specific-terms/compute (undated; read from that rule)"},
		{"release_after_stopped", "never", "a stopped VM is not charged and its disks bill until deleted; no deletion after a stop is stated: https://docs.nebius.com/legal/specific-terms/compute (undated; read from that rule)"},
		{"boot_fee", "0", "\"Service Fee is calculated for the time of using the VM, from the moment it is started and to a complete stop\": https://docs.nebius.com/legal/specific-terms/compute (undated)"},
		{"on_demand.increment", "1s", "https://docs.nebius.com/object-storage/resources/pricing (undated)"},
	},
	"OVHcloud": {
		{"boot_fee", "0", "\"the period during which the instance is in BUILD status is not billed\": https://support.us.ovhcloud.com/hc/en-us/articles/22179651508115-Public-Cloud-Billing (undated)"},
		{"release_after_stopped", "never", "\"Toute instance est facturée tant qu'elle n'est pas supprimée\": https://www.ovh.com/ca/fr/cloud-public/faq/ (undated)"},
		{"on_demand.increment", "1h", "https://docs.ovh.com/au/en/public-cloud/information-on-cloud-billing-options/ (2022-08-29)"},
		{"on_demand.minimum", "1h", "https://support.us.ovhcloud.com/hc/en-us/articles/22143514040083 (undated)"},
	},
	"Paperspace": {
		{"ip_month", "3", "\"PUBLIC IP ADDRESS: $3/month (single static IP address)\": https://github.com/keplerlab/AI-Saturday/blob/15cfdb77ff1609ab6836a636a0b23069df3f1599/week1/prerequisite.md (c. 2018, secondary)"},
		{"storage.included_gb", "0", "storage is a monthly fee of its own (\"a machine with 50GB storage ... $5 each month\"): https://support.paperspace.com/hc/en-us/articles/360057895553-Virtual-Machine-Billing-Overview (undated)"},
		{"release_after_stopped", "never", "\"Every Paperspace VM is billed a monthly access fee until it is deactivated/deleted\": same page (undated)"},
		{"egress_gb", "0", "free unlimited bandwidth: https://docs.digitalocean.com/products/paperspace/machines/details/limits (undated)"},
		{"storage.stopped_gb_month", "0.10", "$5/month for the 50 GB tier: https://support.paperspace.com/hc/en-us/articles/360057895553-Virtual-Machine-Billing-Overview (undated)"},
	},
	"Jarvislabs": {
		{"on_demand.minimum", "1m", "\"Pay per minute billing\", no other minimum: https://github.com/jarvislabsai (org profile, undated)"},
		{"release_after_stopped", "never", "a paused instance keeps its storage (and its storage bill) until destroyed: https://github.com/jarvislabsai/jarvislabs/blob/f922b55/jarvislabs/skills/SKILL.md (2026-07-29)"},
		{"storage.included_gb", "0", "the disk size chosen is \"what the caller is billed for\": https://github.com/jarvislabsai/skypilot/blob/0ef27057882dc42c770dae5ccf9389d8a0415fb6/sky/provision/jarvislabs/FEATURES.md (undated)"},
		{"storage.stopped_gb_month", "0.10", "https://raw.githubusercontent.com/api-evangelist/jarvislabs/refs/heads/main/finops/jarvislabs-finops.yml (2026-06-21)"},
	},
	"Verda (DataCrunch)": {
		{"on_demand.increment", "1s", "https://raw.githubusercontent.com/api-evangelist/datacrunch/refs/heads/main/finops/datacrunch-finops.yml (2026-06-21)"},
	},
	"RunPod": {
		{"boot_fee", "0", "\"your Runpod credits are charged for the Pod every second it is active\": https://github.com/runpod/docs/blob/d81ff9c1ae7e2b3bdc49c2301b300de03209419c/pods/pricing.mdx (2025-06-05); \"Pods are billed by the second for compute and storage\": https://docs.runpod.io/pods/pricing (2026-07-20)"},
		{"on_demand.minimum", "0s", "billed \"every second it is active\": https://github.com/runpod/docs/blob/d81ff9c1ae7e2b3bdc49c2301b300de03209419c/pods/pricing.mdx (2025-06-05)"},
		{"storage.included_gb", "0", "container and volume disk are each billed per GB (\"Container disk | $0.10/GB/month\"): https://docs.runpod.io/pods/pricing (2026-07-20)"},
		{"release_after_stopped", "never", "volume disk \"Persistent; retained until Pod deleted\": https://docs.runpod.io/pods/pricing (2026-07-20)"},
		{"storage.shared_gb_month", "0.07", "network volume \"First 1 TB: $0.07/GB/month\" ($0.05 beyond): https://docs.runpod.io/storage/network-volumes (2026-07-20)"},
	},
	"Lambda": {
		{"boot_fee", "0", "\"You're not billed for the time an instance's status in the dashboard is Booting\": https://github.com/LambdaLabs/docsy-lambda-docs/blob/af5a73179f274b35593a6e076154dc0ad287b39d/content/en/cloud/on-demand-instance-invoicing.md (2023-09-24); billing begins once the instance passes health checks: https://docs.lambda.ai/public-cloud/billing (undated)"},
		{"on_demand.minimum", "1m", "\"bills in one-minute increments\", no other minimum: https://docs.lambda.ai/public-cloud/billing (undated)"},
		{"ip_month", "0", "each instance has a public IPv4 and the billable resources are \"On-Demand Cloud (ODC) instances, 1-Click Clusters (1CCs), Filesystems\" (read from that closed list): https://docs.lambda.ai/public-cloud/billing (undated)"},
		{"release_after_stopped", "0d", "no stop: \"It currently isn't possible to pause (suspend) your instance rather than terminating it\": https://github.com/LambdaLabs/docsy-lambda-docs/blob/af5a73179f274b35593a6e076154dc0ad287b39d/content/en/cloud/pause-instance.md (2022-11-09); billing \"ends the moment you terminate the instance\": https://docs.lambda.ai/public-cloud/billing (undated)"},
	},
	"Vast.ai": {
		{"ip_month", "0", "instances \"generally do not have unique IP addresses\" (mapped ports on the host's IP): https://docs.vast.ai/guides/instances/connect/networking; the billed costs are compute, storage and bandwidth only (read from that closed list): https://docs.vast.ai/guides/instances/pricing (2026-04-28)"},
		{"boot_fee", "0", "\"Billed by the second for actual usage\": https://docs.vast.ai/guides/instances/pricing; an instance loading is \"Not charged\": https://docs.vast.ai/guides/instances/manage-instances (2026-04-28)"},
		{"on_demand.minimum", "0s", "\"charged the base active rental cost for every second your instance is in the active/connected state\": https://docs.vast.ai/guides/reference/faq/billing (2026-04-28)"},
		{"storage.included_gb", "0", "\"Container storage: Charged per GB while instance exists\": https://docs.vast.ai/guides/instances/storage/types (2026-04-28)"},
		{"release_after_stopped", "never", "\"Stopped instances: Data persists, storage charges continue\" (until the host's contract ends: deleted 48 h after it): https://docs.vast.ai/guides/reference/faq/instances (2026-04-28)"},
	},
	"Crusoe": {
		{"storage.stopped_gb_month", "0.08", "\"Persistent disks ... $0.08 per GiB/month\": https://raw.githubusercontent.com/api-evangelist/crusoe/refs/heads/main/plans/crusoe-plans-pricing.yml (2026-09-20, secondary: transcribes crusoe.ai/cloud/pricing)"},
		{"boot_fee", "0", "\"You are only charged while a VM is actively in a RUNNING state\" (Starting: Non-Billable): https://support.crusoecloud.com/hc/en-us/articles/48176498638235-FAQ-Billing-for-VMs-in-ERROR-States (2026-04-27)"},
	},
	"Scaleway": {
		{"boot_fee", "0", "\"you only pay for what you use\": https://www.scaleway.com/en/docs/compute/instances/reference-content/understanding-instance-pricing/ (undated)"},
		{"release_after_stopped", "never", "\"Billing ends when you delete the Instance\": same page (undated)"},
	},
	"Together AI (GPU clusters)": {
		{"boot_fee", "0", "\"Pay only for the time your cluster is running, with no upfront commitment\": https://docs.together.ai/docs/gpu-clusters-billing (undated)"},
	},
	"Tencent Cloud (腾讯云)": {
		{"boot_fee", "0", "\"按量计费项：函数服务的基础计费项，按用户实际用量计费\": https://github.com/tencentyun/qcloud-documents/blob/2799c92a0f5215dac73774d71ab44871e8ef7514/product/ (计费项说明.md, undated)"},
		{"on_demand.minimum", "0s", "billed on \"实际运行时长\", with no 100 ms round-up: 计费项说明.md (undated)"},
		{"ip_month", "0", "no IP among SCF's billed items (read from that closed list): 计费项说明.md (undated)"},
		{"release_after_stopped", "0d", "a function has no stopped state: idle instances are reclaimed, provisioned ones \"不会主动回收\": https://github.com/tencentyun/qcloud-documents/blob/136dd2f8c1e563025c35ba0c9b65f8ff0b2e07cb/product/ (函数算力支持.md, undated)"},
		{"on_demand.increment", "1ms", "SCF bills run time in milliseconds, \"相较于向上对齐100ms计费的方式\": https://github.com/tencentyun/intlcloud-documents/blob/4afa09ce1f1322563b9f8e7cb3705f2281f5c965/yehe_doc/ (计费项介绍_intl_zh.md, undated)"},
		{"storage.included_gb", "0.5", "\"临时缓存空间,即 /tmp 目录大小 512MB\": https://cloud.tencent.com/document/product/583/11637 (2025-03-24)"},
		{"storage.running_gb_month", "0", "no disk among SCF's billed items (\"资源使用费用 | 调用次数费用 | 外网出流量费用 | 预置并发闲置费用 | 基础套餐费用\", read from that closed list): 计费项介绍_intl_zh.md (undated)"},
		{"storage.stopped_gb_month", "0", "the same closed list: 计费项介绍_intl_zh.md (undated)"},
	},
	"GPUShare (恒源云)": {
		{"ip_month", "0", "no public IP of its own: \"实例并不提供公网 IP 地址，服务是通过端口映射到公网接入点提供链接的\", the FAQ (gpushare.com/docs/faq/instance/) in a verbatim copy: https://github.com/inpry/website/blob/51f98af5f15f030c03650c67df99eb9bd9f3d60a/docs/faq/instance.md (2022-07-22, secondary; read from that statement, as AutoDL's)"},
		{"release_after_stopped", "10d", "\"After the pay-as-you-go shutdown ... the instance will be deleted after more than 10 days\": https://en.gpushare.com/docs/faq/payment (undated)"},
		{"on_demand.minimum", "0s", "pay-as-you-go: \"Billed by the second ... buy at any time and release at any time\": https://en.gpushare.com/docs/product/price (undated)"},
	},
	"AutoDL": {
		{"egress_gb", "0", "\"不对实例的网络带宽和流量进行单独计费\": https://www.autodl.com/docs/network/ (undated, secondary: quoted in public notes)"},
		{"ip_month", "0", "no public IP of its own: port 6006 (later 6006 and 6008) is mapped to a public address, and traffic is not billed separately (read from those two pages): https://www.autodl.com/docs/port/ (undated, secondary)"},
		{"boot_fee", "0", "\"实例状态显示「运行中」开始计费，如不使用请及时关机停止计费\": https://www.autodl.com/docs/quick_start/ (quoted 2026-09-13, secondary)"},
		{"storage.running_gb_month", "0.198", "expanded data disk \"0.0066 元/GB/日\" (a member's reference price) × 30 days, beyond the free 50 GB: https://www.autodl.com/docs/local_disk/ (quoted 2026-08-21, secondary)"},
		{"storage.stopped_gb_month", "0.198", "\"数据盘在实例关机后仍继续收费，直到缩容或释放实例\": same (2026-08-21, secondary)"},
	},
	"CoreWeave": {
		{"on_demand.increment", "1m", "https://docs.coreweave.com/resources/billing-and-charges (undated)"},
		{"on_demand.minimum", "0s", "no minimum charge: https://docs.coreweave.com/resources/billing-and-charges (undated)"},
	},
}

// offerFacts are facts that hold for some offers of a provider only.
var offerFacts = map[string][]fact{
	// Included local disk, temporary and NVMe together, all ephemeral
	// (diskKind), in GB: Microsoft's sizes pages give GiB (× 1.0737),
	// rounded down.
	"azure-NC24ads_A100_v4":  {azureDisk("1028", "64 GiB temp + 960 GB NVMe", "nca100v4-series.md")},
	"azure-NC96ads_A100_v4":  {azureDisk("4114", "256 GiB temp + 4 × 960 GB NVMe", "nca100v4-series.md")},
	"azure-NC40ads_H100_v5":  {azureDisk("3839", "3576 GiB temp", "ncadsh100v5-series.md")},
	"azure-ND96amsr_A100_v4": {azureDisk("6871", "6400 GiB temp", "ndma100v4-series.md")},
	"azure-ND96asr_v4":       {azureDisk("6442", "6000 GiB temp", "ndasra100v4-series.md")},
	"azure-ND96isr_H100_v5":  {azureDisk("31885", "1024 GiB temp + 8 NVMe disks of 28 TiB in all", "ndh100v5-series.md")},
	// Google's first- and second-generation shapes come with no Local
	// SSD unless asked for at creation; A2 Ultra and A3 always do.
	"gcp-a2-highgpu-1g":      {noLocalSSD},
	"gcp-a2-megagpu-16g":     {noLocalSSD},
	"gcp-g2-standard-4":      {noLocalSSD},
	"gcp-a3-highgpu-1g":      {{"storage.included_gb", "750", "\"a3-highgpu-1g machine type (1x NVIDIA H100 80GB GPU) with 750 GB Local SSD\": https://github.com/GoogleCloudPlatform/vertex-ai-samples/blob/f90cd0d6edab4537dce01ff18ead0d00efb76e93/notebooks/community/alphafold3/README.md (undated, secondary)"}},
	"hyperstack-h100-pcie":   {{"storage.included_gb", "850", "flavor n3-H100x1: \"Root Disk (GB) 100, Ephemeral Disk (GB) 750\": https://infrahub-doc.nexgencloud.com/docs/hardware/flavors/ (undated)"}},
	"compshare-h20-cheapest": {{"boot_fee", "0", "\"启动中（Starting）状态不收费\": https://www.compshare.cn/docs (undated, secondary)"}},
	// Lambda's local SSD by instance type (a TiB figure × 1.0995, in GB,
	// rounded down), as a transcription of lambda.ai/instances gives it.
	"lambda-gpu_8x_b200_sxm6":      {lambdaDisk("24189", "22 TiB")},
	"lambda-gpu_8x_h100_sxm5":      {lambdaDisk("24189", "22 TiB")},
	"lambda-gpu_8x_a100_80gb_sxm4": {lambdaDisk("21440", "19.5 TiB")},
	"lambda-gpu_8x_a100":           {lambdaDisk("6377", "5.8 TiB")},
	"lambda-gpu_1x_gh200":          {lambdaDisk("4398", "4 TiB")},
	"lambda-gpu_1x_h100_sxm5":      {lambdaDisk("3023", "2.75 TiB")},
	"lambda-gpu_1x_h100_pcie":      {lambdaDisk("1099", "1 TiB")},
	"lambda-gpu_1x_a10":            {lambdaDisk("1429", "1.3 TiB")},
	"lambda-gpu_1x_a6000":          {{"storage.included_gb", "214", "\"|1x NVIDIA RTX A6000|48 GB|14|100 GiB|200 GiB|\" (200 GiB): https://github.com/LambdaLabs/docsy-lambda-docs/blob/049a99a993dca46ab22740ff7916f7a2fee2593d/content/en/cloud/faq/available-configurations.md (2022-08-30); the API's specs.storage_gib is 200 in a later recorded answer (secondary)"}},
	"lambda-gpu_1x_a100_sxm4":      {{"storage.included_gb", "549", "\"|1x NVIDIA A100|40 GB|30|200 GiB|512 GiB|\" (512 GiB): https://github.com/LambdaLabs/docsy-lambda-docs/blob/049a99a993dca46ab22740ff7916f7a2fee2593d/content/en/cloud/faq/available-configurations.md (2022-08-30); \"1× A100 (40 GB SXM4) ... 0.5 TiB SSD\" on the pricing page as quoted (secondary)"}},
	// Scaleway's own EUR offers; those sold through Shadeform in USD are
	// billed by Shadeform, whose IP fee no source states.
	"scaleway-h100-1-80g":      append([]fact{scalewayScratch("3000", "3 TB", "https://github.com/scaleway/docs-content/blob/440e9b84fd36275b8ac7ced89249fcd5e628b00d/pages/gpu/how-to/use-scratch-storage-h100-instances.mdx (2025-01-13)")}, scalewayNative...),
	"scaleway-h100-sxm-8-80g":  append([]fact{scalewayScratch("12000", "~12 TB", "https://github.com/scaleway/docs-content/blob/06dae9d52d4d0ae51a392c2aa192eacd4ddfbd5a/pages/gpu/reference-content/choosing-gpu-instance-type.mdx (2025-04-22)")}, scalewayNative...),
	"aliyun-ecs-a100-80g-list": aliyunECS,
	"aliyun-pai-designer-p100": {{"boot_fee", "0", "\"计费时间段：组件开始运行的时间~组件停止运行的时间\": https://help.aliyun.com/document_detail/144248.html (undated)"}, {"release_after_stopped", "0d", "a job, billed \"组件开始运行的时间~组件停止运行的时间\": nothing is kept stopped: https://help.aliyun.com/document_detail/144248.html (undated)"}},
}

// azureDisk is an Azure size's included local disk, from its page in
// MicrosoftDocs/azure-compute-docs.
func azureDisk(gb, what, page string) fact {
	return fact{"storage.included_gb", gb, what + " (ephemeral): https://github.com/MicrosoftDocs/azure-compute-docs/blob/main/articles/virtual-machines/sizes/gpu-accelerated/" + page + " (2024-07-31 to 2025-09-02)"}
}

// lambdaDisk is a Lambda instance type's local SSD.
func lambdaDisk(gb, stated string) fact {
	return fact{"storage.included_gb", gb, "\"" + stated + " SSD\" (ephemeral): https://github.com/api-evangelist/lambda-labs/blob/1929382e7f9b4777d980aec12b6fc9e04e6718cb/plans/lambda-labs-plans-pricing.yml (2026-09-20, secondary: transcribes https://lambda.ai/instances)"}
}

var noLocalSSD = fact{"storage.included_gb", "0", "\"For G4, M3, first generation, and second generation machine types that support Local SSD disks, you must specify the number of Local SSD disks to attach\"; only A2 Ultra and A3 among these come with it: https://docs.cloud.google.com/compute/docs/disks/add-local-ssd (undated)"}

// aliyunDocs is Alibaba Cloud's official ECS documentation repository at
// the commit read (2020-12 to 2021-07: its prices are the pages' own
// examples for 华东1, older than the offer's).
const aliyunDocs = "https://github.com/AlibabaCloudDocs/ecs/blob/322eaab82e866a494eeaddb0de02bab1978692d1/cn.zh-CN/"

var aliyunECS = []fact{
	{"on_demand.increment", "1s", "\"4 vCPU以上：计费周期为1秒\": " + aliyunDocs + "产品计费/计费方式/按量付费.md (2021-07-09)"},
	{"on_demand.minimum", "1s", "a 1 s billing cycle (and 0.01 CNY over the instance's whole life): " + aliyunDocs + "产品计费/计费方式/按量付费.md (2021-07-09)"},
	{"egress_gb", "0.80", "\"流量：1 GB 单价：0.80元/GB\" (an example price, 华东1): " + aliyunDocs + "产品定价/计费项/公网带宽计费.md (2021-02-02)"},
	{"ip_month", "0", "\"不收取固定公网IP保有费用，仅收取公网出网带宽费用\": " + aliyunDocs + "产品定价/计费项/公网带宽计费.md (2021-02-02)"},
	{"storage.included_gb", "0", "cloud disks are billed \"根据单价、容量和时长\"; only local disks are in the instance price: " + aliyunDocs + "产品定价/计费项/块存储计费.md (2020-12-01)"},
	{"storage.running_gb_month", "1.533", "ESSD PL1 \"0.0021 元/1GiB/小时\" × 730 h (an example price, 华东1): " + aliyunDocs + "产品定价/计费项/块存储计费.md (2020-12-01)"},
	{"storage.stopped_gb_month", "1.533", "disks bill while stopped, even in 停机不收费 mode: " + aliyunDocs + "产品计费/计费方式/按量付费实例停机不收费.md (2021-05-28)"},
	{"release_after_stopped", "never", "\"如果您操作停机但ECS资源未释放，不会暂停计费\" (released 15 days into arrears only): " + aliyunDocs + "产品计费/计费方式/按量付费.md (2021-07-09)"},
}

// scalewayScratch is a Scaleway H100's scratch disk, added with the
// instance and priced nowhere apart from it.
func scalewayScratch(gb, stated, source string) fact {
	return fact{"storage.included_gb", gb, "scratch storage \"" + stated + "\", added automatically with the Instance: " + source}
}

// prefixFacts hold for every offer whose id starts with the prefix.
var prefixFacts = []struct {
	prefix string
	fact
}{
	{"runpod-community-", fact{"ip_month", "0", "a public IP is optional on Community Cloud (supportPublicIp / --public-ip), without it the pod may have none; pods bill compute and storage only (read from that closed list): https://docs.runpod.io/pods/pricing (2026-07-20)"}},
	{"runpod-secure-", fact{"ip_month", "0", "\"On Secure Cloud, the Pod will always have a public IP address\": https://github.com/runpod/docs/blob/a900806e253c4f8c16da27d1a4370e72456da4cb/api-reference/openapi.json (undated); pods bill compute and disk only: https://docs.runpod.io/pods/pricing (2026-07-20)"}},
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
	localSSD            = fact{"", "ephemeral", "local SSD: \"Preserving the Local SSD disk data incurs costs\", https://cloud.google.com/sdk/gcloud/reference/compute/instances/stop"}
	scalewayScratchKind = fact{"", "ephemeral", "\"Scratch storage does not survive once the server is stopped\": https://github.com/scaleway/docs-content/blob/440e9b84fd36275b8ac7ced89249fcd5e628b00d/pages/gpu/how-to/use-scratch-storage-h100-instances.mdx (2025-01-13)"}
	scalewayIP          = []fact{{"ip_month", "2.92", "flexible IPv4 €0.004/h × 730 h: https://github.com/scaleway/docs-content/blob/main/pages/ipam/reference-content/understanding-ip-billing.mdx (2025-06-26)"}}
	// scalewayNative are Scaleway's own GPU Instances (not those sold
	// through Shadeform): the IP above, Block Storage at €0.000118 a
	// GB-hour, billed while powered off too, and per minute of uptime.
	scalewayNative = append([]fact{
		{"storage.running_gb_month", "0.086", "Block Storage €0.000118/GB-h × 730 h: https://github.com/scaleway/docs-content/blob/0c8b30872b5fbaa2d7b60c193ff98119408f4162/pages/instances/faq.mdx (2025-03-25; the price table left the docs in 2025-09)"},
		{"storage.stopped_gb_month", "0.086", "storage volumes \"are billed for their entire allocation period, regardless of whether the Instance is powered off\": https://github.com/scaleway/docs-content/pull/5727 (2025), at the rate above"},
		{"on_demand.minimum", "1m", "GPU Instances are \"Billed per minute of uptime (including startup and standby time)\", no other minimum: https://github.com/scaleway/docs-content/pull/5727 (2025)"},
	}, scalewayIP...)
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
	"scaleway-h100-1-80g":      scalewayScratchKind,
	"scaleway-h100-sxm-8-80g":  scalewayScratchKind,
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
	for _, p := range prefixFacts {
		if strings.HasPrefix(id, p.prefix) && p.field == field {
			return p.fact, true
		}
	}
	for _, f := range providerFacts[provider] {
		if f.field == field {
			return f, true
		}
	}
	return fact{}, false
}
