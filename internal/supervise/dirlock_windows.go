package supervise

// LockFile is the lock two gpurent runs on one --ckpt-dir meet at where
// the system has flock; Windows has none that gpurent takes yet.
const LockFile = ".gpurent-run.lock"

func LockDir(dir, run string) (unlock func(), err error) { return func() {}, nil }
