package runlog

import (
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
)

// signatures are errors a training command prints as it dies, with what
// they mean for a restart: the exit status alone ("exit status 1") says
// nothing, and the same command meets the same cause again. Each text is
// the one PyTorch, the CUDA runtime or the C library prints:
// "CUDA out of memory" starts PyTorch's torch.OutOfMemoryError (and the
// RuntimeError before it); "uncorrectable ECC error encountered", "an
// illegal memory access was encountered" and "device-side assert
// triggered" are cudaGetErrorString's for cudaErrorECCUncorrectable,
// cudaErrorIllegalAddress and cudaErrorAssert; "Watchdog caught
// collective operation timeout" is PyTorch's ProcessGroupNCCL watchdog;
// "No space left on device" and "Address already in use" are strerror's
// for ENOSPC and EADDRINUSE; "This might be caused by insufficient shared
// memory" ends the message of PyTorch's DataLoader worker on SIGBUS, and
// "Error while creating shared memory segment" is NCCL's (shmutils.cc).
// A signature is passed over when its unless text is there too: NCCL's
// shared memory error ends in "No space left on device", which is
// /dev/shm full, not a disk.
var signatures = []struct {
	text, unless string
	cause        i18n.Text
}{
	{"CUDA out of memory", "", i18n.Textf("the GPU's memory ran out (CUDA out of memory): with the same batch size a restart runs out again, " +
		"unless what else held GPU memory is gone (a stray process, another tenant: gpurent bench's gpu0.processes and gpu0.memory_used)")},
	{"uncorrectable ECC error encountered", "", i18n.Textf("the GPU reported an uncorrectable ECC error: failing GPU memory, which a restart does not cure " +
		"(gpurent bench reads its ECC counters, retired pages and remapped rows); ask the provider for another machine")},
	{"an illegal memory access was encountered", "", i18n.Textf("CUDA illegal memory access: the process's CUDA context is lost; a bug in a kernel " +
		"or its input happens again after a restart, a hardware fault may not")},
	{"device-side assert triggered", "", i18n.Textf("a device-side assert (often an index out of range, such as a label not below the number of " +
		"classes): a restart meets it again at the same step")},
	{"Watchdog caught collective operation timeout", "", i18n.Textf("an NCCL collective timed out: a rank died, hung or fell behind (a stuck " +
		"DataLoader, a slow disk), or the GPUs lost contact with each other")},
	{"This might be caused by insufficient shared memory", "", i18n.Textf("a DataLoader worker ran out of shared memory: /dev/shm is too " +
		"small (a Docker container gets 64 MiB unless run with --shm-size or --ipc=host; gpurent bench's host.shm); fewer workers need less")},
	{"Error while creating shared memory segment", "", i18n.Textf("NCCL could not create its segment in /dev/shm: too small or full " +
		"(a Docker container gets 64 MiB unless run with --shm-size or --ipc=host; gpurent bench's host.shm)")},
	{"No space left on device", "Error while creating shared memory segment", i18n.Textf("a disk filled up (No space left on device): old checkpoints already in the store can go")},
	{"Address already in use", "", i18n.Textf("a port was taken (Address already in use): a process of the last attempt, or another program, " +
		"still listens on it (torchrun's --master_port)")},
}

// Explain names the causes of a failure that the command's last output
// shows, in the order of signatures.
func Explain(output string) []i18n.Text {
	var out []i18n.Text
	for _, s := range signatures {
		if strings.Contains(output, s.text) && (s.unless == "" || !strings.Contains(output, s.unless)) {
			out = append(out, s.cause)
		}
	}
	return out
}
