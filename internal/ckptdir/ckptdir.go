// Package ckptdir names the files gpurent keeps in a user's checkpoint
// directory. Run writes them and wipe must recognise them; both read the
// names here, so neither feature imports the other.
package ckptdir

// StateFile lives in the checkpoint directory and survives gpurent being
// killed: it records which local checkpoints are already committed
// remotely, so a restarted gpurent uploads nothing twice.
const StateFile = ".gpurent-run.json"
