package store

import (
	"context"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/gpurent/gpurent/internal/i18n"
	"gocloud.dev/blob"
)

// Upload is a multipart upload that was begun and neither completed nor
// aborted: a push killed mid-file (preemption, SIGKILL) leaves one. S3
// bills its parts as storage, and no object listing shows them.
type Upload struct {
	Key       string // as the store names keys (below the URL's prefix)
	ID        string
	Initiated time.Time
}

// uploads is a backend that can find and abort such uploads. Only S3 has
// them in a form that lingers and is billed; other backends lack the
// methods and report none.
type uploads interface {
	IncompleteUploads(ctx context.Context, prefix string, before time.Time) ([]Upload, error)
	AbortUpload(ctx context.Context, u Upload) error
}

// multipart reaches an S3 bucket's multipart uploads under the store's
// prefix, through the client gocloud opened.
type multipart struct {
	client *s3.Client
	bucket string
	prefix string // the URL's path, "" or "runs-dir" (no slashes around)
}

// s3Uploads returns the multipart handle of an s3:// bucket, nil for others.
func s3Uploads(b *blob.Bucket, name, prefix string) *multipart {
	var c *s3.Client
	if !b.As(&c) {
		return nil
	}
	return &multipart{client: c, bucket: name, prefix: prefix}
}

func (m *multipart) full(key string) string {
	if m.prefix == "" {
		return key
	}
	return m.prefix + "/" + key
}

func (m *multipart) list(ctx context.Context, prefix string, before time.Time) ([]Upload, error) {
	var out []Upload
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(m.bucket), Prefix: aws.String(m.full(prefix))}
	for {
		page, err := m.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return nil, i18n.Errorf("list incomplete uploads under %s: %w", prefix, err)
		}
		for _, u := range page.Uploads {
			key := aws.ToString(u.Key)
			if m.prefix != "" {
				key = strings.TrimPrefix(key, m.prefix+"/")
			}
			at := aws.ToTime(u.Initiated)
			if !before.IsZero() && !at.Before(before) {
				continue // may still be uploading
			}
			out = append(out, Upload{Key: key, ID: aws.ToString(u.UploadId), Initiated: at})
		}
		if !aws.ToBool(page.IsTruncated) {
			return out, nil
		}
		in.KeyMarker, in.UploadIdMarker = page.NextKeyMarker, page.NextUploadIdMarker
	}
}

func (m *multipart) abort(ctx context.Context, u Upload) error {
	_, err := m.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(m.bucket), Key: aws.String(m.full(u.Key)), UploadId: aws.String(u.ID)})
	if err != nil {
		return i18n.Errorf("abort incomplete upload of %s: %w", u.Key, err)
	}
	return nil
}

// IncompleteUploads lists the multipart uploads under prefix begun before
// before (zero: all); none for a store that is not S3.
func (b *bucket) IncompleteUploads(ctx context.Context, prefix string, before time.Time) ([]Upload, error) {
	if b.multipart == nil {
		return nil, nil
	}
	return b.multipart.list(ctx, prefix, before)
}

// AbortUpload aborts one, which deletes its parts.
func (b *bucket) AbortUpload(ctx context.Context, u Upload) error {
	if b.multipart == nil {
		return nil
	}
	return b.multipart.abort(ctx, u)
}

// IncompleteUploads and AbortUpload pass through the retry decorator,
// retried as any store operation.
func (r *Retrying) IncompleteUploads(ctx context.Context, prefix string, before time.Time) ([]Upload, error) {
	u, ok := r.Backend.(uploads)
	if !ok {
		return nil, nil
	}
	var out []Upload
	err := r.do(ctx, func() error {
		var err error
		out, err = u.IncompleteUploads(ctx, prefix, before)
		return err
	})
	return out, err
}

func (r *Retrying) AbortUpload(ctx context.Context, up Upload) error {
	u, ok := r.Backend.(uploads)
	if !ok {
		return nil
	}
	return r.do(ctx, func() error { return u.AbortUpload(ctx, up) })
}
