#!/usr/bin/env bash
# gpu-check.sh: the checks that need a real NVIDIA GPU. Run it on a machine
# with one (a rented instance, the project's device machine). It builds
# gpurent, records what it reads through NVML and compares it, field by
# field, with nvidia-smi in the same run. Everything goes to one directory:
#   bash scripts/gpu-check.sh [OUTDIR]      (default: ./gpu-check-out)
# Exit status: 0 when every compared field agrees, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-check-out}
mkdir -p "$out"
log() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }
: >"$out/summary.txt"

command -v nvidia-smi >/dev/null || { log "nvidia-smi not found: no NVIDIA driver here"; exit 1; }
export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { log "go not found: install Go 1.26 or copy a gpurent binary to ./gpurent"; [ -x ./gpurent ] || exit 1; }
if command -v go >/dev/null; then
  CGO_ENABLED=0 go build -o "$out/gpurent" ./cmd/gpurent || { log "build failed"; exit 1; }
else
  cp ./gpurent "$out/gpurent"
fi

nvidia-smi -q >"$out/nvidia-smi-q.txt" 2>&1
nvidia-smi --query-gpu=index,name,uuid,pci.device_id,pci.sub_device_id,memory.total,memory.used,power.limit,power.default_limit,pcie.link.gen.max,pcie.link.width.max,driver_version,mig.mode.current,ecc.mode.current,compute_mode,temperature.gpu \
  --format=csv,noheader,nounits >"$out/nvidia-smi.csv" 2>&1
log "nvidia-smi: $(head -c 300 "$out/nvidia-smi.csv")"

start=$(date +%s)
"$out/gpurent" bench --no-history --duration 3s --data-dir "$out" --record "$out/facts.json" -o json >"$out/bench.json" 2>"$out/bench.stderr"
code=$?
log "gpurent bench exit $code in $(( $(date +%s) - start )) s (0 pass/warn, 3 fail)"
"$out/gpurent" bench --replay "$out/facts.json" >"$out/bench.txt" 2>&1

python3 - "$out" <<'PY' | tee -a "$out/summary.txt"
import csv, json, sys
out = sys.argv[1]
facts = json.load(open(f"{out}/facts.json"))
rows = list(csv.reader(open(f"{out}/nvidia-smi.csv")))
bad = 0
def cmp(what, ours, theirs, ok):
    global bad
    good = ok(ours, theirs)
    bad += not good
    print(f"{'ok  ' if good else 'DIFF'} {what}: gpurent={ours!r} nvidia-smi={theirs!r}")
if not facts["gpu"]["available"]:
    print("DIFF gpurent found no GPU:", facts["gpu"].get("error")); sys.exit(1)
devs = facts["gpu"]["devices"]
cmp("device count", len(devs), len(rows), lambda a, b: a == b)
num = lambda s: float(s) if s.strip() not in ("[N/A]", "N/A", "[Not Supported]") else None
for d, r in zip(devs, rows):
    r = [x.strip() for x in r]
    i = d["index"]
    cmp(f"gpu{i} name", d["name"], r[1], lambda a, b: a == b)
    cmp(f"gpu{i} uuid", d["uuid"], r[2], lambda a, b: a == b)
    cmp(f"gpu{i} pci device id", hex(d["pci_device_id"]), r[3].lower(), lambda a, b: int(a, 16) == int(b, 16))
    cmp(f"gpu{i} memory total MiB", (d.get("memory_total") or 0) // (1 << 20), num(r[5]), lambda a, b: b is not None and abs(a - b) <= 1)
    cmp(f"gpu{i} power limit W", d.get("power_limit_w"), num(r[7]), lambda a, b: a is not None and b is not None and abs(a - b) < 1)
    cmp(f"gpu{i} default power limit W", d.get("power_limit_default_w"), num(r[8]), lambda a, b: a is not None and b is not None and abs(a - b) < 1)
    cmp(f"gpu{i} max PCIe gen", d.get("pcie_gen_max"), num(r[9]), lambda a, b: b is None or a == b)
    cmp(f"gpu{i} max PCIe width", d.get("pcie_width_max"), num(r[10]), lambda a, b: b is None or a == b)
    cmp(f"gpu{i} MIG", d.get("mig_enabled"), r[12], lambda a, b: b in ("[N/A]", "N/A") or (a is True) == (b == "Enabled"))
    cmp(f"gpu{i} ECC", d.get("ecc_enabled"), r[13], lambda a, b: b in ("[N/A]", "N/A") or (a is True) == (b == "Enabled"))
    cmp(f"gpu{i} compute mode", d.get("compute_mode"), r[14], lambda a, b: a.replace("_", "").lower() == b.replace("_", "").lower())
    print(f"info gpu{i}: {len(d.get('processes', []))} processes, utilization samples {d.get('utilization_samples')}, errors {d.get('errors')}")
cmp("driver version", facts["gpu"].get("driver_version"), rows[0][11].strip(), lambda a, b: a == b)
print(f"{'all fields agree' if bad == 0 else f'{bad} fields differ'}")
sys.exit(1 if bad else 0)
PY
status=$?
log "verdict: $(grep -o '"verdict": "[a-z]*"' "$out/bench.json" | head -1)"
exit $status
