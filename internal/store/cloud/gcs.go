//go:build !nogcs

package cloud

import (
	"context"

	_ "gocloud.dev/blob/gcsblob" // gs://
	"gocloud.dev/gcp"
)

// gcsBuilt: this build opens gs:// stores. Google's client brings its
// gRPC stack with it, about 20 MB of a 50 MB binary (docs/ckpt.md, "The
// weight of gs://"); -tags nogcs leaves it out.
const gcsBuilt = true

// gcsCredentials finds Google's application default credentials, as the
// GCS client will.
func gcsCredentials(ctx context.Context) error {
	_, err := gcp.DefaultCredentials(ctx)
	return err
}
