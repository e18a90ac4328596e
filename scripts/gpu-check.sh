#!/usr/bin/env bash
# gpu-check.sh: the checks that need a real NVIDIA GPU. Run it on a machine
# with one (a rented instance, the project's device machine). In one run:
#  1. takes ./gpurent (or builds it), records what it reads through NVML and compares it,
#     field by field, with nvidia-smi;
#  2. runs the compute probes with the cuda backend (full mode) and, where
#     python3 has torch with CUDA, with the torch backend, and prints the
#     cuda/torch ratio per probe; and reads fresh memory for residue right
#     after a process filled the free memory and exited;
#  3. runs the sustained probe 10 times on the idle GPU and 10 times while a
#     second process (gpurent burn, a cuBLASLt GEMM loop) keeps it busy, and
#     counts how often it raised the alarm; then every probe once beside the
#     co-tenant, as ratios over the idle run;
#  4. runs gpurent burn for 35 s under gpurent run, whose GPU watch reads
#     NVML's utilization, and prints its mean beside nvidia-smi's
#     utilization.gpu sampled meanwhile;
#  5. runs a short command under gpurent run with the kernel log out of
#     reach, as in a container, and says whether NVML's Xid events were
#     registered on the real card instead (the metrics then count Xids);
#  6. runs bench --soak (GPU_CHECK_SOAK, default 90s) with --memtest on every
#     GPU, prints the soak's, power's, clocks' and memory test's evidence,
#     and sets the soak's GEMM throughput beside torch's from step 2;
#  7. runs bench --links: the copies between GPUs and NCCL's all-reduce over
#     them; on one GPU, NCCL with one rank, its sum checked (the binding's
#     ABI on a real library), once with the libnccl.so.2 the search finds
#     and once with each other copy found (the system's, PyTorch's
#     nvidia-nccl wheel's).
# The summary gives each probe's judgement with its fraction of the datasheet
# peak: the mma.sync fractions calibration() (internal/bench/compute.go) takes.
# Everything goes to one directory. On an H200 (2026-12-04) the five steps
# took 235 s, before step 2 gained its GEMM pairs (about 40 s more); the
# issue allows 8 minutes:
#   bash scripts/gpu-check.sh [OUTDIR]      (default: ./gpu-check-out)
# On the project's device machine (no Go there and nothing to fetch; it
# takes at most 64 MiB of working tree with what is carried, and returns at
# most 8 files of 16 MiB from $OUT, nothing of a pipeline killed at its
# limit), run bash scripts/gpu-check-prep.sh here: it builds ./gpurent
# stripped (the standard build, about 68 MiB, is over that limit on its
# own), checks that the tree and the binary fit, and prints the call:
# carry gpurent and run
#   timeout 480 bash scripts/gpu-check.sh /tmp/gc; cp /tmp/gc/summary.txt $OUT/; tar -czf $OUT/gc.tgz -C /tmp gc
# so that a run cut short by its own timeout still brings back what it wrote.
# The binary is kept out of OUTDIR, so that OUTDIR holds only what was
# measured and comes back whole.
# TestGPUCheckSimulated (cmd/gpurent) runs it whole on simulated NVML, CUDA
# driver, cuBLASLt, torch and nvidia-smi, so it works the first time on a
# card.
# GPU_CHECK_TRIALS (default 10) is how many sustained probes step 3 runs
# idle and beside the co-tenant, GPU_CHECK_BURN (default 35s) how long step
# 4's command keeps the GPU busy: the simulated run, which checks plumbing
# and no figure, takes fewer and shorter.
# GPU_CHECK_STEPS="2 3" runs those steps only (default: "1 2 3 4 5 6 7"), for a
# second try that repeats only what went wrong the first time; step 3
# compares with step 2's quick run where OUTDIR still holds it.
# Exit status: 0 when every compared field agrees (or step 1 did not run),
# 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-check-out}
mkdir -p "$out"
log() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }
: >"$out/summary.txt"
steps=${GPU_CHECK_STEPS:-1 2 3 4 5 6 7}
trials=${GPU_CHECK_TRIALS:-10}
case $trials in [1-9] | [1-9][0-9]) ;; *) log "GPU_CHECK_TRIALS: want 1 to 99, got $trials"; exit 2 ;; esac
burn_for=${GPU_CHECK_BURN:-35s}
for n in $steps; do
  case $n in [1-7]) ;; *) log "GPU_CHECK_STEPS: no step $n: the steps are 1 to 7"; exit 2 ;; esac
done
step() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }
# Each step's time, for sizing a second try on a machine lent by the minute.
began=$(date +%s) step_t=$(date +%s)
took() { log "step $1 took $(( $(date +%s) - step_t )) s"; step_t=$(date +%s); }

command -v nvidia-smi >/dev/null || { log "nvidia-smi not found: no NVIDIA driver here"; exit 1; }
# A ./gpurent built beforehand wins: a GPU machine may have Go but no way to
# download modules (CGO_ENABLED=0 go build -o gpurent ./cmd/gpurent, then
# copy the tree over).
# $GPURENT_BIN names another binary (the simulated run in the tests).
export PATH="$PATH:/usr/local/go/bin"
bindir=$(mktemp -d) || { log "cannot make a temporary directory"; exit 1; }
trap 'rm -rf "$bindir"' EXIT
gpurent=$bindir/gpurent
# A copy that travelled may have lost its execute bit: the copy gets one.
if [ -n "${GPURENT_BIN:-}" ]; then
  cp "$GPURENT_BIN" "$gpurent" && chmod 755 "$gpurent" || { log "cannot copy $GPURENT_BIN"; exit 1; }
elif [ -f ./gpurent ]; then
  cp ./gpurent "$gpurent" && chmod 755 "$gpurent" || { log "cannot copy ./gpurent"; exit 1; }
elif command -v go >/dev/null; then
  CGO_ENABLED=0 go build -o "$gpurent" ./cmd/gpurent || { log "build failed"; exit 1; }
else
  log "no ./gpurent and no go: build gpurent elsewhere and copy it to ./gpurent"; exit 1
fi
# A binary carried from another machine may be for another architecture
# (an amd64 build on a GH200, which is arm64): rebuilt here where Go is.
if ! "$gpurent" --version >/dev/null 2>&1; then
  arch=$(uname -m)
  if command -v go >/dev/null; then
    log "the gpurent given does not run on this $arch machine: building it here"
    rm -f "$gpurent"
    CGO_ENABLED=0 go build -o "$gpurent" ./cmd/gpurent || { log "build failed"; exit 1; }
  else
    goarch=$arch; [ "$arch" = aarch64 ] && goarch=arm64; [ "$arch" = x86_64 ] && goarch=amd64
    log "the gpurent given does not run on this $arch machine: build it with GOOS=linux GOARCH=$goarch CGO_ENABLED=0 go build -o gpurent ./cmd/gpurent"; exit 1
  fi
fi
log "$("$gpurent" --version 2>&1 | head -1)"
command -v python3 >/dev/null || log "python3 not found: the comparisons below are skipped; the JSON files in $out hold everything"

nvidia-smi -q >"$out/nvidia-smi-q.txt" 2>&1
nvidia-smi --query-gpu=index,name,uuid,pci.device_id,pci.sub_device_id,memory.total,memory.used,power.limit,power.default_limit,pcie.link.gen.max,pcie.link.width.max,driver_version,mig.mode.current,ecc.mode.current,compute_mode,temperature.gpu \
  --format=csv,noheader,nounits >"$out/nvidia-smi.csv" 2>&1
log "nvidia-smi: $(head -c 300 "$out/nvidia-smi.csv")"

status=0
# 1. What NVML says, field by field beside nvidia-smi.
if step 1; then
start=$(date +%s)
rm -f "$out/facts.json" # a rerun into the same directory: bench --record never overwrites
"$gpurent" bench --no-history --duration 3s --data-dir "$out" --record "$out/facts.json" -o json >"$out/bench.json" 2>"$out/bench.stderr"
code=$?
log "gpurent bench exit $code in $(( $(date +%s) - start )) s (0 pass/warn, 3 fail)"
"$gpurent" bench --replay "$out/facts.json" >"$out/bench.txt" 2>&1

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
    print(f"info gpu{i}: {len(d.get('processes') or [])} processes, utilization samples {d.get('utilization_samples')}, errors {d.get('errors')}")
cmp("driver version", facts["gpu"].get("driver_version"), rows[0][11].strip(), lambda a, b: a == b)
print(f"{'all fields agree' if bad == 0 else f'{bad} fields differ'}")
sys.exit(1 if bad else 0)
PY
status=$?
log "verdict: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$out/bench.json" 2>/dev/null)"
# The driver's Xid reports gpurent read from /dev/kmsg, beside dmesg's count.
xids=$(python3 -c 'import json,sys; k=json.load(open(sys.argv[1])).get("kernel_log") or {}; print(k.get("error") or len(k.get("xids") or []))' "$out/facts.json" 2>/dev/null)
if dm=$(dmesg 2>/dev/null); then
	log "Xid reports since boot: gpurent $xids, dmesg $(printf '%s\n' "$dm" | grep -c 'NVRM: Xid')"
else
	log "Xid reports since boot: gpurent $xids (dmesg cannot be read here)"
fi
took 1
fi

# 2. Compute probes: cuda (full) and torch in the same run.
if step 2; then
start=$(date +%s)
"$gpurent" bench --no-history --backend cuda --full --disk-mb 0 -o json >"$out/cuda.json" 2>"$out/cuda.stderr"
log "cuda backend, full mode: exit $? in $(( $(date +%s) - start )) s"
start=$(date +%s)
"$gpurent" bench --no-history --backend cuda --disk-mb 0 -o json >"$out/cuda-quick.json" 2>>"$out/cuda.stderr"
log "cuda backend, quick mode: exit $? in $(( $(date +%s) - start )) s"
# Residue: a process fills the free GPU memory and exits (the alloc probe
# writes 0xa5 over all of it but a margin), then the residue probe reads
# fresh memory: all zero where the driver scrubs between processes.
"$gpurent" bench --no-history --backend cuda --probes alloc --disk-mb 0 >/dev/null 2>>"$out/cuda.stderr"
"$gpurent" bench --no-history --backend cuda --probes residue --disk-mb 0 -o json >"$out/residue.json" 2>>"$out/cuda.stderr"
log "residue after a process wrote GPU memory and exited: $(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
c = [c for c in r.get("checks") or [] if c["id"].endswith(".residue")]
print("; ".join("%s %s: %s" % (c["id"], c["status"], c.get("evidence", "")) for c in c) or "no residue check")' "$out/residue.json" 2>&1)"
# torch in full mode too: the same repetitions as the cuda run it is set beside.
"$gpurent" bench --no-history --backend torch --full --disk-mb 0 -o json >"$out/torch.json" 2>"$out/torch.stderr"
# The GEMMs again, cuda and torch taking turns three times, so that the
# ratio is not one pair's: a card's clocks and power move from run to run.
gemms=gemm_fp32,gemm_tf32,gemm_bf16
for i in 1 2 3; do
  for b in cuda torch; do
    "$gpurent" bench --no-history --backend $b --full --probes $gemms --duration 1s --disk-mb 0 -o json >"$out/gemm-$b-$i.json" 2>>"$out/$b.stderr"
  done
done
python3 - "$out" <<'PY' | tee -a "$out/summary.txt"
import json, sys
out = sys.argv[1]
def results(name):
    try:
        rep = json.load(open(f"{out}/{name}"))
    except Exception as e:
        return None, str(e)
    comp = rep["facts"].get("compute") or []
    if not comp or not comp[0].get("available"):
        return None, (comp[0].get("error") if comp else "no compute results")
    return {r["probe"]: r for r in comp[0]["results"]}, comp[0].get("device")
cuda, dev = results("cuda.json")
torch, tdev = results("torch.json")
if cuda is None:
    print("cuda backend did not run:", dev); sys.exit(0)
print(f"cuda backend on {dev}:")
for name, r in cuda.items():
    extra = ""
    if r.get("contention"):
        c = r["contention"]; extra = f" verdict={c['verdict']} slow={c['slow_share']:.3f} cv={c['cv']:.3f} sag={c['sag']:.3f}"
    print(f"  {name:12s} {r.get('value', 0):10.2f} {r['unit']:6s} {r.get('wall_ms', 0) / 1e3:6.2f} s wall {r.get('error', '')}{extra}")
# The judgement of each probe, with its fraction of the datasheet's peak:
# what calibration() in internal/bench/compute.go takes for mma.sync.
import re
checks = json.load(open(f"{out}/cuda.json")).get("checks") or []
print("judged against the datasheet (cuda backend, full mode):")
for c in checks:
    probe = c["id"].split(".", 1)[-1]
    if probe in cuda:
        m = re.search(r"\d+% of the .*? datasheet's [0-9.e+]+ \S+|\d+% of the Gen\d x\d+ link's [0-9.]+ GB/s|\d+% of the [0-9.]+ GiB NVML reports", c.get("evidence", ""))
        print(f"  {c['id']:22s} {c['status']:5s} {m.group(0) if m else c.get('evidence', '')[:160]}")
if torch is None:
    print("torch backend:", tdev)
else:
    print(f"cuda/torch ratios on {tdev}:")
    for name in ("mem_copy", "h2d", "d2h", "gemm_fp32", "gemm_tf32", "gemm_bf16"):
        c, t = cuda.get(name, {}), torch.get(name, {})
        if c.get("value") and t.get("value"):
            print(f"  {name:12s} cuda {c['value']:.1f} / torch {t['value']:.1f} {c['unit']} = {c['value'] / t['value']:.3f}")
        elif name in cuda or name in torch:
            print(f"  {name:12s} no ratio: cuda {c.get('value') or c.get('error')!r}, torch {t.get('value') or t.get('error')!r}")
    pairs = [(results(f"gemm-cuda-{i}.json")[0], results(f"gemm-torch-{i}.json")[0]) for i in (1, 2, 3)]
    print("cuda/torch GEMM ratios, three more pairs taking turns (median):")
    for name in ("gemm_fp32", "gemm_tf32", "gemm_bf16"):
        rs = sorted(c[name]["value"] / t[name]["value"] for c, t in pairs
                    if c and t and c.get(name, {}).get("value") and t.get(name, {}).get("value"))
        if rs:
            print(f"  {name:12s} {' '.join(f'{r:.3f}' for r in rs)} median {rs[len(rs) // 2]:.3f}")
        else:
            print(f"  {name:12s} no ratio: no pair measured both")
PY
took 2
fi

# 3. Co-tenant: the sustained probe alone (--probes sustained), 10 runs on the
# idle GPU and 10 beside a GEMM loop (GPU_CHECK_TRIALS of each; gpurent burn: cuBLASLt where found, else
# mma.sync kernels); and once every probe beside it, against the idle quick run.
if step 3; then
alarm() { # did the sustained probe fail in this report? (no python needed)
  tr -d ' \n' <"$1" | grep -q '"id":"gpu0.sustained","status":"fail"'
}
# At the default --duration (3 s of launches): the trial tests what users run.
sustained() { "$gpurent" bench --no-history --backend cuda --probes sustained --disk-mb 0 -o json; }
# failed: did any check fail (the verdict), e.g. the utilization of a
# process that used the GPU just before?
failed() { tr -d ' \n' <"$1" | grep -q '"verdict":"fail"'; }
idle_alarms=0 busy_alarms=0 idle_fails=0
for i in $(seq "$trials"); do
  sustained >"$out/idle-$i.json" 2>/dev/null
  alarm "$out/idle-$i.json" && idle_alarms=$((idle_alarms + 1))
  failed "$out/idle-$i.json" && idle_fails=$((idle_fails + 1))
done
"$gpurent" burn --duration 240s >"$out/burn.log" 2>&1 &
burn=$!
sleep 3
for i in $(seq "$trials"); do
  sustained >"$out/busy-$i.json" 2>/dev/null
  alarm "$out/busy-$i.json" && busy_alarms=$((busy_alarms + 1))
done
"$gpurent" bench --no-history --backend cuda --disk-mb 0 -o json >"$out/busy-all.json" 2>/dev/null
kill "$burn" 2>/dev/null; wait "$burn" 2>/dev/null
log "co-tenant: $(head -c 300 "$out/burn.log")"
log "sustained probe: alarm in $idle_alarms of $trials idle runs (want 0), in $busy_alarms of $trials runs beside a co-tenant (want $trials)"
log "idle runs failed by any check: $idle_fails of $trials (want 0)"
python3 - "$out" <<'PY' | tee -a "$out/summary.txt"
import json, sys
out = sys.argv[1]
def probes(name):
    try:
        comp = json.load(open(f"{out}/{name}"))["facts"].get("compute") or []
        return {r["probe"]: r for r in comp[0]["results"]} if comp and comp[0].get("available") else {}
    except Exception:
        return {}
idle, busy = probes("cuda-quick.json"), probes("busy-all.json")
print("every probe beside the co-tenant, over the idle quick run:")
for name, b in busy.items():
    i = idle.get(name, {})
    if b.get("value") and i.get("value"):
        print(f"  {name:12s} {b['value']:10.2f} / {i['value']:10.2f} {b['unit']:6s} = {b['value'] / i['value']:.3f}")
if busy and not idle:
    print("  no idle quick run to compare with (step 2 did not run into this directory)")
PY
took 3
fi

# 4. gpurent run's GPU watch on a command that keeps the GPU busy: the mean
# it gives at the end (every sample while the command ran, CUDA's start
# included) beside nvidia-smi's utilization.gpu over the same time.
if step 4; then
nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -l 2 >"$out/smi-util.csv" 2>&1 &
smi=$!
"$gpurent" run --ckpt-dir "$out/run-ck" --preemption none --no-status -- "$gpurent" burn --duration "$burn_for" >"$out/run-watch.log" 2>&1
kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
log "gpurent run's GPU watch: $(grep -m1 'GPU utilization while the command ran' "$out/run-watch.log" || echo "no utilization line (see $out/run-watch.log)")"
log "nvidia-smi utilization.gpu meanwhile: $(awk -F', *' 'NF == 2 && $2 ~ /^[0-9]+$/ { s[$1] += $2; n[$1]++ } END { k = 0; for (g in s) { printf "GPU %s %.0f%% (%d samples) ", g, s[g] / n[g], n[g]; k++ } if (!k) printf "no samples" }' "$out/smi-util.csv")"
took 4
fi

# 5. Xids without the kernel log: gpurent run registers for NVML's Xid
# events; its metrics serve the Xid count only when that worked.
if step 5; then
GPURENT_KMSG=/nonexistent/kmsg "$gpurent" run --ckpt-dir "$out/xid-ck" --preemption none --no-status --metrics 127.0.0.1:9477 -- \
  python3 -c '
import time, urllib.request
last = "no answer"
for i in range(40):  # the Xid count is served once the NVML events are registered: up to 20 s on a loaded machine
    time.sleep(0.5)
    try:
        last = urllib.request.urlopen("http://127.0.0.1:9477/metrics", timeout=5).read().decode()
    except OSError as e:
        last = "no metrics: %s" % e
    if "gpurent_kernel_xids_total" in last:
        break
print(last)' >"$out/run-xids.log" 2>&1
if grep -q '^# TYPE gpurent_kernel_xids_total' "$out/run-xids.log"; then
  log "Xids without the kernel log: NVML's events registered on the card ($(grep -c '^gpurent_kernel_xids_total{' "$out/run-xids.log") codes seen)"
else
  log "Xids without the kernel log: not watched: $(grep -m1 'not watched' "$out/run-xids.log" || echo "no metrics (see $out/run-xids.log)")"
fi
took 5
fi
# 6. Minutes under load: the soak on every GPU at once, the memory test
# (and the residue read over all of the free memory) first. Its GEMM is
# 8192³ BF16, as torch's gemm_bf16 in step 2: the two are set side by side.
if step 6; then
soak=${GPU_CHECK_SOAK:-90s}
start=$(date +%s)
"$gpurent" bench --no-history --backend cuda --soak "$soak" --memtest --disk-mb 0 --record "$out/soak-facts.json" -o json >"$out/soak.json" 2>"$out/soak.stderr"
log "soak $soak and memtest: exit $? in $(( $(date +%s) - start )) s"
python3 - "$out" <<'PY' | tee -a "$out/summary.txt"
import json, re, sys
out = sys.argv[1]
try:
    rep = json.load(open(f"{out}/soak.json"))
except Exception as e:
    print("soak: no report:", e)
    sys.exit(0)
print("soak and memory test:")
for c in rep.get("checks") or []:
    if c["id"].split(".")[-1] in ("soak", "soak_power", "soak_clocks", "memtest", "residue", "soak_homogeneity"):
        print(f"  {c['id']:22s} {c['status']:5s} {c.get('evidence', '')}")
try:
    comp = json.load(open(f"{out}/torch.json"))["facts"].get("compute") or []
    torch = {r["probe"]: r for r in comp[0]["results"]}.get("gemm_bf16", {}).get("value")
except Exception:
    torch = None
for comp in rep["facts"].get("compute") or []:
    soak = {r["probe"]: r for r in comp.get("results") or []}.get("soak") or {}
    if comp.get("index") != 0 or not soak.get("value"):
        continue
    if torch:
        print(f"  soak/torch gemm_bf16 on gpu0: {soak['value']:.1f} / {torch:.1f} TFLOPS = {soak['value'] / torch:.3f} (want 0.9 to 1.1)")
    else:
        print("  soak/torch gemm_bf16 on gpu0: no torch GEMM to compare with (step 2's torch run is not in this directory)")
for comp in rep["facts"].get("compute") or []:
    rs = {r["probe"]: r for r in comp.get("results") or []}
    mt, copy = rs.get("memtest") or {}, (rs.get("mem_copy") or {}).get("value")
    m = re.search(r"; ([0-9.]+) GB/s median, ([0-9.]+) GB/s slowest pass", mt.get("notes", ""))
    if m and copy:
        print(f"  memtest/mem_copy on gpu{comp.get('index')}: median pass {float(m.group(1)) / copy:.2f}, slowest {float(m.group(2)) / copy:.2f} of {copy:.0f} GB/s (want at least 0.5)")
PY
took 6
fi
# 7. Between the GPUs: the copy matrix and NCCL's all-reduce; with one GPU
# the pairs do not apply and NCCL runs one rank. Each libnccl found is
# tried: the search's choice first, then the others by path.
if step 7; then
ncclpaths=$( { ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF}'
  python3 -c 'import glob, site; [print(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/nccl/lib/libnccl.so.2")]' 2>/dev/null; } | sort -u)
i=0
for lib in "" $ncclpaths; do
  start=$(date +%s)
  GPURENT_NCCL=$lib "$gpurent" bench --no-history --backend cuda --links --probes residue --disk-mb 0 -o json >"$out/links$i.json" 2>"$out/links$i.stderr"
  log "links with ${lib:-the libnccl.so.2 gpurent finds}: exit $? in $(( $(date +%s) - start )) s"
  python3 - "$out/links$i.json" <<'PY' | tee -a "$out/summary.txt"
import json, sys
try:
    rep = json.load(open(sys.argv[1]))
except Exception as e:
    print("  links: no report:", e)
    sys.exit(0)
for c in rep.get("checks") or []:
    if c["id"] in ("gpu.nvlink", "gpu.nvlink_errors", "gpu.fabric", "gpu.p2p", "gpu.p2p_bandwidth", "gpu.allreduce") or c["id"].endswith(".nvlink"):
        print(f"  {c['id']:22s} {c['status']:5s} {c.get('evidence', '')}")
a = rep["facts"].get("all_reduce") or {}
print(f"  nccl: {a.get('library', '-')} {a.get('version', '-')}, {a.get('ranks', 0)} ranks, checked {a.get('checked', False)}, error {a.get('error', '-')}")
PY
  i=$((i + 1))
done
took 7
fi
log "steps $steps: $(( $(date +%s) - began )) s in all"
exit $status
