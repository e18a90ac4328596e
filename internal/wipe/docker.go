package wipe

import (
	"context"
	"os/exec"

	"github.com/gpurent/gpurent/internal/i18n"
)

// DockerCLI runs the docker command when it is installed.
func DockerCLI(ctx context.Context, args ...string) ([]byte, error) {
	bin, err := exec.LookPath("docker")
	if err != nil {
		return nil, i18n.Errorf("docker is not installed")
	}
	return exec.CommandContext(ctx, bin, args...).CombinedOutput()
}
