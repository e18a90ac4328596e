// Package initproc lets gpurent stand in for init when a container starts
// it as PID 1 (an image whose entrypoint is "gpurent run -- python
// train.py", a Kubernetes pod). PID 1 inherits every orphan in the
// container: a DataLoader worker whose trainer crashed, a daemon a launcher
// started with setsid. Each ends as a zombie until PID 1 waits for it, and
// enough of them exhaust the container's pid limit. gpurent cannot wait for
// any child it did not start: Go's os/exec waits for its own children (an
// AWS credential_process, the command itself) by pid, and a reaper that
// took their exit status first would break them. So, like tini and
// docker --init, PID 1 does nothing but reap and forward signals, and
// gpurent proper runs as its child.
package initproc
