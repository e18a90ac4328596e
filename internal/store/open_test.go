package store

import (
	"context"

	"github.com/gpurent/gpurent/internal/store/cloud"
)

// The store's tests open real backends (directories, SeaweedFS, the
// emulators) through cloud, as storeconf does.
type OpenOptions = cloud.OpenOptions

func Open(ctx context.Context, raw string, opt OpenOptions) (Backend, string, error) {
	return cloud.Open(ctx, raw, opt)
}
