//go:build nogcs

package store

import (
	"context"
	"errors"
)

// gcsBuilt: a -tags nogcs build opens no gs:// store (docs/ckpt.md, "The
// weight of gs://").
const gcsBuilt = false

func gcsCredentials(context.Context) error { return errors.New("not built in") }
