# torch_probe.py: gpurent's torch backend. Prints one JSON object with the
# same probe names as the cuda backend. argv: device index, full (0/1), and
# optionally the probes to run, comma-separated (all when absent or empty).
import json, sys

def main():
    out = {"available": False, "results": []}
    try:
        import torch
    except Exception as e:  # no torch: say so, do not fail
        out["error"] = "python3 has no torch: %s" % e
        print(json.dumps(out)); return
    if not torch.cuda.is_available():
        out["error"] = "torch %s sees no CUDA device" % torch.__version__
        print(json.dumps(out)); return
    dev = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    full = len(sys.argv) > 2 and sys.argv[2] == "1"
    reps = 10 if full else 5
    only = set(sys.argv[3].split(",")) if len(sys.argv) > 3 and sys.argv[3] else None
    wants = lambda probe: only is None or probe in only
    torch.cuda.set_device(dev)
    out.update(available=True, device=torch.cuda.get_device_name(dev),
               driver="torch %s, CUDA %s" % (torch.__version__, torch.version.cuda))
    props = torch.cuda.get_device_properties(dev)
    pci = [getattr(props, "pci_%s_id" % k, None) for k in ("domain", "bus", "device")]
    if None not in pci:  # newer torch only; gpurent matches it to NVML's device
        out["bus_id"] = "%04x:%02x:%02x.0" % tuple(pci)

    def timed(fn):
        fn(); torch.cuda.synchronize()  # warm-up
        ms = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); fn(); b.record(); b.synchronize()
            ms.append(a.elapsed_time(b))
        return ms

    def add(probe, unit, work, ms, precision=None, notes=None):
        # ms: every repetition, from which gpurent computes the same
        # summary (median, quartile spread, p99, CV) as the cuda backend's.
        vals = sorted(work / (m / 1e3) for m in ms)
        r = {"probe": probe, "unit": unit, "value": vals[len(vals) // 2], "ms": ms}
        if precision: r["precision"] = precision
        if notes: r["notes"] = notes
        out["results"].append(r)

    def failed(probe, unit, e):
        out["results"].append({"probe": probe, "unit": unit, "value": 0, "error": str(e)})

    # residue first, before anything this process writes is freed and
    # handed out again: fresh memory read before it is written (the cuda
    # backend's probe, in torch's words). torch.empty takes its first
    # blocks from cudaMalloc, which does not clear them; count_nonzero's
    # own small result comes from another pool. Each sample sits at a
    # random MiB of its stretch.
    if wants("residue"):
        import random, time
        chunks, x = [], None
        try:
            free, total = torch.cuda.mem_get_info(dev)
            margin = max(512 << 20, total // 50)
            got, read, dirty, dirty_samples, samples, first, short = 0, 0, 0, 0, 0, "", ""
            t0 = time.time()
            while got < free - margin:
                n = min(1 << 30, free - margin - got)
                try:
                    x = torch.empty(n, dtype=torch.uint8, device="cuda")
                except torch.cuda.OutOfMemoryError if hasattr(torch.cuda, "OutOfMemoryError") else RuntimeError:
                    short = "; only %.2f of the %.2f GiB free beyond the margin could be allocated" % (got / (1 << 30), (free - margin) / (1 << 30))
                    break
                chunks.append(x)
                k = max(1, min(16, n >> 20))
                stretch = n // k
                for i in range(k):
                    off = i * stretch + (random.randrange(max(1, stretch >> 20)) << 20)
                    size = min(64 << 10, n - off)
                    read += size; samples += 1
                    nz = int(torch.count_nonzero(x[off:off + size]))
                    if nz:
                        dirty += nz; dirty_samples += 1
                        if not first:
                            first = "; the first at %.2f GiB into the memory sampled" % ((got + off) / (1 << 30))
                got += n
            ms = (time.time() - t0) * 1e3
            if free <= margin:
                failed("residue", "bytes", "free %.2f GiB of %.2f GiB total: nothing to sample beyond the margin" % (free / (1 << 30), total / (1 << 30)))
            elif got == 0:
                failed("residue", "bytes", "no memory could be allocated of the %.2f GiB free" % (free / (1 << 30)))
            else:
                out["results"].append({"probe": "residue", "unit": "bytes", "value": dirty, "notes":
                    "read %.1f MiB in %d samples over %.2f GiB of fresh allocations before writing them, in %.0f ms: %d of %d samples held non-zero bytes%s%s"
                    % (read / (1 << 20), samples, got / (1 << 30), ms, dirty_samples, samples, first, short)})
        except Exception as e:
            failed("residue", "bytes", e)
        finally:
            # Every block back to the driver, for the probes after it.
            del chunks, x
            torch.cuda.empty_cache()

    def set_tf32(on):
        # TF32 is off for float32 matmul by default since torch 1.12, so it
        # is set explicitly either way. Newer torch sets it per backend,
        # fp32_precision "tf32" or "ieee", and warns that allow_tf32 "will
        # be deprecated after Pytorch 2.9" (its UserWarning; pytorch/pytorch
        # PR 158209): each torch is told in the words it knows, and the
        # notes say which.
        m = torch.backends.cuda.matmul
        if hasattr(m, "fp32_precision"):
            m.fp32_precision = "tf32" if on else "ieee"
            return "fp32_precision=" + m.fp32_precision
        m.allow_tf32 = on
        return "allow_tf32=%s" % on

    n = 8192
    for probe, dtype, tf32, prec in (("gemm_fp32", torch.float32, False, "fp32"),
                                     ("gemm_tf32", torch.float32, True, "tf32"),
                                     ("gemm_bf16", torch.bfloat16, False, "bf16")):
        if not wants(probe):
            continue
        try:
            how = set_tf32(tf32)
            a = torch.randn(n, n, device="cuda", dtype=dtype); b = torch.randn(n, n, device="cuda", dtype=dtype)
            add(probe, "TFLOPS", 2 * n ** 3 / 1e12, timed(lambda: a @ b), prec, "torch.matmul %d^3, %s" % (n, how))
            del a, b
        except Exception as e:
            failed(probe, "TFLOPS", e)
    try:
        set_tf32(False)
    except Exception:
        pass  # the copies below do not matmul
    size = (1 << 30) if full else (512 << 20)
    if wants("mem_copy"):
        try:
            x = torch.empty(size, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
            add("mem_copy", "GB/s", 2 * size / 1e9, timed(lambda: y.copy_(x)), notes="tensor.copy_ of %d MiB; bytes counted read + written" % (size >> 20))
            del x, y
        except Exception as e:
            failed("mem_copy", "GB/s", e)
    size = 256 << 20
    if wants("h2d") or wants("d2h"):
        try:
            h = torch.empty(size, dtype=torch.uint8).pin_memory(); d = torch.empty(size, dtype=torch.uint8, device="cuda")
            if wants("h2d"):
                add("h2d", "GB/s", size / 1e9, timed(lambda: d.copy_(h)), notes="256 MiB pinned")
            if wants("d2h"):
                add("d2h", "GB/s", size / 1e9, timed(lambda: h.copy_(d)), notes="256 MiB pinned")
        except Exception as e:
            failed("h2d" if wants("h2d") else "d2h", "GB/s", e)
    print(json.dumps(out))

main()
