# A stand-in for PyTorch, for TestTorchScriptSimulated: just the calls
# torch_probe.py makes, on a virtual clock that moves by what each op would
# take at the rates in FAKE_TORCH_RATES (JSON: fp32, tf32, bf16 in FLOP/s;
# device, link in bytes/s). It checks what real torch would refuse: events
# recorded before elapsed_time, pinned host tensors for the H2D/D2H copies,
# matching sizes for copy_. Device memory: FAKE_TORCH_MEMORY bytes (80 GiB
# when unset), of which FAKE_TORCH_RESIDUE bytes at the start of each MiB
# of a fresh allocation hold another process's data (0: a scrubbing
# driver). As in torch's caching allocator, a tensor no longer referenced
# keeps its memory until empty_cache. FAKE_TORCH_FAIL=count_nonzero makes
# that call raise.
import json, os, weakref

__version__ = "0.0-fake"
_rates = json.loads(os.environ["FAKE_TORCH_RATES"])
_clock = [0.0]  # seconds


class version:
    cuda = "12.8"


# TF32 for float32 matmul is allow_tf32 (torch before 2.9), or with
# FAKE_TORCH_TF32_API=new the per-backend fp32_precision ("tf32" or
# "ieee") alone, refusing allow_tf32 as a torch that dropped it would.
_new_api = os.environ.get("FAKE_TORCH_TF32_API") == "new"


class _Matmul:
    def __init__(self):
        object.__setattr__(self, "_tf32", False)

    def __setattr__(self, name, value):
        if name == "allow_tf32" and not _new_api:
            object.__setattr__(self, "_tf32", bool(value))
        elif name == "fp32_precision" and _new_api:
            if value not in ("tf32", "ieee"):
                raise ValueError("fp32_precision: " + repr(value))
            object.__setattr__(self, "_tf32", value == "tf32")
        else:
            raise AttributeError("Unknown attribute " + name)

    def __getattr__(self, name):
        if name == "allow_tf32" and not _new_api:
            return self._tf32
        if name == "fp32_precision" and _new_api:
            return "tf32" if self._tf32 else "ieee"
        raise AttributeError("Unknown attribute " + name)


class backends:
    class cuda:
        matmul = _Matmul()


class dtype:
    def __init__(self, name, size):
        self.name, self.size = name, size


float32, bfloat16, uint8 = dtype("float32", 4), dtype("bfloat16", 2), dtype("uint8", 1)


_memory = int(os.environ.get("FAKE_TORCH_MEMORY", 80 << 30))
_residue = int(os.environ.get("FAKE_TORCH_RESIDUE", 0))
_used, _cached = [0], [0]  # bytes held by tensors or the cache; bytes of the cache


class Tensor:
    def __init__(self, shape, dtype, device, pinned=False, offset=0):
        self.shape, self.dtype, self.device, self.pinned, self.offset = shape, dtype, device, pinned, offset
        self.fresh = device == "cuda"  # nothing written yet

    def __getitem__(self, s):
        if not isinstance(s, slice) or len(self.shape) != 1 or not (0 <= s.start <= s.stop <= self.shape[0]):
            raise IndexError("the fake slices one-dimensional tensors within their bounds only")
        t = Tensor((s.stop - s.start,), self.dtype, self.device, self.pinned, self.offset + s.start)
        t.fresh = self.fresh
        return t

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def pin_memory(self):
        if self.device != "cpu":
            raise RuntimeError("pin_memory on a CUDA tensor")
        return Tensor(self.shape, self.dtype, "cpu", True)

    def __matmul__(self, other):
        if self.device != "cuda" or other.device != "cuda" or self.dtype is not other.dtype:
            raise RuntimeError("matmul operands must be CUDA tensors of one dtype")
        n, k = self.shape
        k2, m = other.shape
        assert k == k2
        kind = self.dtype.name
        if kind == "float32":
            kind = "tf32" if backends.cuda.matmul._tf32 else "fp32"
        elif kind == "bfloat16":
            kind = "bf16"
        _clock[0] += 2.0 * n * k * m / _rates[kind]
        return Tensor((n, m), self.dtype, "cuda")

    def copy_(self, src):
        self.fresh = False
        if self.numel() * self.dtype.size != src.numel() * src.dtype.size:
            raise RuntimeError("copy_ between tensors of different sizes")
        nbytes = self.numel() * self.dtype.size
        if self.device == "cuda" and src.device == "cuda":
            _clock[0] += 2.0 * nbytes / _rates["device"]
        else:
            host = src if src.device == "cpu" else self
            if not host.pinned:
                raise RuntimeError("the probe must copy from pinned memory")
            _clock[0] += nbytes / _rates["link"]
        return self


def randn(*shape, device="cpu", dtype=float32):
    return Tensor(shape, dtype, device)


def empty(*shape, dtype=float32, device="cpu"):
    t = Tensor(shape, dtype, device)
    if device == "cuda":
        n = t.numel() * dtype.size
        if _used[0] + n > _memory:
            raise RuntimeError("CUDA out of memory")
        _used[0] += n
        weakref.finalize(t, _to_cache, n)
    return t


def _to_cache(n):
    _cached[0] += n


def count_nonzero(t):
    if os.environ.get("FAKE_TORCH_FAIL") == "count_nonzero":
        raise RuntimeError("count_nonzero failed (FAKE_TORCH_FAIL)")
    # Old data at the start of each MiB of a fresh allocation: the bytes of
    # [offset, offset + n) that fall within the first _residue of a MiB.
    if not t.fresh or _residue == 0:
        return 0
    n, count, at = t.numel() * t.dtype.size, 0, t.offset
    while at < t.offset + n:
        mib = at & ~((1 << 20) - 1)
        end = min(mib + _residue, t.offset + n)
        if at < end:
            count += end - at
        at = mib + (1 << 20)
    return count


def empty_like(x):
    return Tensor(x.shape, x.dtype, x.device)


class cuda:
    @staticmethod
    def is_available():
        return True

    @staticmethod
    def set_device(i):
        if i != 0:
            raise RuntimeError("invalid device ordinal")

    @staticmethod
    def get_device_name(i):
        return "Simulated GPU (fake torch)"

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def mem_get_info(i=0):
        return _memory - _used[0], _memory

    @staticmethod
    def empty_cache():
        _used[0] -= _cached[0]
        _cached[0] = 0

    class _Props:
        pci_domain_id, pci_bus_id, pci_device_id = 0, 0x3B, 0

    @staticmethod
    def get_device_properties(i):
        return cuda._Props()

    class Event:
        def __init__(self, enable_timing=False):
            self.timing, self.at = enable_timing, None

        def record(self):
            self.at = _clock[0]

        def synchronize(self):
            if self.at is None:
                raise RuntimeError("event not recorded")

        def elapsed_time(self, end):
            if not (self.timing and end.timing) or self.at is None or end.at is None:
                raise RuntimeError("elapsed_time needs two recorded timing events")
            return (end.at - self.at) * 1e3  # ms
