//go:build nogcs

package cloud

import (
	"context"

	"github.com/gpurent/gpurent/internal/i18n"
)

// gcsBuilt: a -tags nogcs build opens no gs:// store (docs/ckpt.md, "The
// weight of gs://").
const gcsBuilt = false

func gcsCredentials(context.Context) error { return i18n.Errorf("not built in") }
