// Package cloud opens a checkpoint store's URL: a local or NFS directory,
// S3 and every S3-compatible service, GCS and Azure, through
// gocloud.dev/blob and the clouds' SDKs. It is the only package that
// links them; the store reads and writes through internal/store/backend's
// interface.
package cloud

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/store/backend"
	"github.com/gpurent/gpurent/internal/userfile"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob://
	"gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/s3blob" // s3://
	"gocloud.dev/gcerrors"
)

// OpenOptions tune how a store URL is opened.
type OpenOptions struct {
	// Insecure allows plain http:// to a non-loopback endpoint.
	Insecure bool
	// PartSize and Concurrency bound a multipart upload's memory:
	// PartSize × Concurrency per file being uploaded.
	PartSize    int
	Concurrency int
	// MustExist refuses a local store directory that is not there,
	// rather than making it: for the commands that only read a store, a
	// mistyped path is then named, not reported as a store with no
	// checkpoints (and left behind, empty).
	MustExist bool
}

// Open opens a store URL: a path or file:///path, s3://bucket/prefix?
// endpoint=...&region=...&use_path_style=true, gs://bucket/prefix or
// azblob://container/prefix. Credentials come from each cloud's usual
// environment and files, never from the URL.
func Open(ctx context.Context, raw string, opt OpenOptions) (backend.Backend, string, error) {
	u, err := backend.ParseURL(raw)
	if err != nil {
		return nil, "", err
	}
	if u.User != nil {
		return nil, "", i18n.Errorf("store URL: credentials in the URL are refused (they would show in ps and logs); use the cloud's environment variables or credential files")
	}
	for k := range u.Query() {
		if secretParam(k) {
			return nil, "", i18n.Errorf("store URL: the %s parameter is refused: a signature or token in the URL would show in ps, logs and errors; use the cloud's environment variables or credential files (AZURE_STORAGE_SAS_TOKEN for a SAS)", k)
		}
	}
	var b *blob.Bucket
	var mp *multipart
	switch u.Scheme {
	case "file":
		dir := u.Path
		if opt.MustExist {
			switch st, err := os.Stat(dir); {
			case errors.Is(err, fs.ErrNotExist) || err == nil && !st.IsDir():
				return nil, "", i18n.Errorf("store %s: no such directory (a local store is made by the first push or run)", dir)
			case err != nil:
				return nil, "", i18n.Errorf("store %s: %w", dir, err)
			}
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, "", i18n.Errorf("store %s: %w", dir, err)
		}
		// NoTempDir: write temporary files beside the target, so the final
		// rename never crosses file systems.
		b, err = fileblob.OpenBucket(dir, &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
	case "s3", "gs", "azblob":
		if ep := plainEndpoint(u); ep != "" {
			if err := checkEndpoint(ep, opt.Insecure); err != nil {
				return nil, "", err
			}
		}
		prefix := strings.Trim(u.Path, "/")
		bu := *u
		bu.Path = ""
		if u.Scheme == "s3" {
			// Every byte is already authenticated end to end (age) and
			// hashed (SHA-256, checked on pull): the SDK's own per-part
			// checksums would only spend CPU the upload needs.
			q := bu.Query()
			for _, k := range []string{"request_checksum_calculation", "response_checksum_validation"} {
				if q.Get(k) == "" {
					q.Set(k, "when_required")
				}
			}
			if q.Get("use_path_style") == "" && ipEndpoint(q.Get("endpoint")) {
				// A bucket cannot be a subdomain of an address: the
				// SDK's virtual-hosted request to "bucket.10.0.0.5"
				// never resolves (a MinIO or SeaweedFS at an IP).
				q.Set("use_path_style", "true")
			}
			bu.RawQuery = q.Encode()
		}
		if u.Scheme == "s3" {
			if err := checkAWS(ctx, u); err != nil {
				return nil, "", err
			}
		}
		if u.Scheme == "azblob" && azureAccount(u, os.Getenv) == "" {
			return nil, "", i18n.Errorf("store %s: no storage account: set AZURE_STORAGE_ACCOUNT (with AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN or Azure's default identity), or AZURE_STORAGE_CONNECTION_STRING, or add storage_account=NAME to the URL", redact(u))
		}
		if u.Scheme == "gs" && !gcsBuilt {
			return nil, "", i18n.Errorf("store %s: this gpurent was built with -tags nogcs, without gs:// support: use a standard build, or Cloud Storage's S3-compatible XML API (s3://BUCKET?endpoint=https://storage.googleapis.com&region=REGION with an HMAC key as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)", redact(u))
		}
		if u.Scheme == "gs" && os.Getenv("STORAGE_EMULATOR_HOST") == "" && u.Query().Get("universe_domain") == "" {
			// gocloud, finding no credentials, prints a warning to stdout
			// (where gpurent's JSON goes) and goes on to fail later: say it
			// here, once, in words.
			if err := gcsCredentials(ctx); err != nil {
				return nil, "", i18n.Errorf("store %s: no Google credentials (set GOOGLE_APPLICATION_CREDENTIALS to a key file, run gcloud auth application-default login, or use the instance's service account): %w", redact(u), err)
			}
		}
		b, err = blob.OpenBucket(ctx, bu.String())
		if err == nil {
			mp = s3Uploads(b, u.Host, prefix)
		}
		if err == nil && prefix != "" {
			b = blob.PrefixedBucket(b, prefix+"/")
		}
	default:
		return nil, "", i18n.Errorf("store URL %q: unknown scheme %q: want a path, file://, s3://, gs:// or azblob://", raw, u.Scheme)
	}
	if err != nil {
		return nil, "", i18n.Errorf("open store %s: %w", redact(u), err)
	}
	bk := &bucket{b: b, opt: opt, name: redact(u), multipart: mp, wholeUpload: u.Scheme == "azblob"}
	if u.Scheme == "file" {
		bk.dir = u.Path
		bk.mark()
	}
	return bk, redact(u), nil
}

// checkAWS looks for a region and credentials where the AWS SDK will,
// before the first request: without them the SDK fails there with
// "resolve endpoint: endpoint rule error, Invalid region" or "get
// identity: get credentials: failed to refresh cached credentials", which
// says little to someone who only forgot a variable.
func checkAWS(ctx context.Context, u *url.URL) error {
	q := u.Query()
	// The SDK's own log lines (IMDS fallbacks) would only add noise here.
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithLogger(logging.Nop{})}
	if r := q.Get("region"); r != "" {
		opts = append(opts, awsconfig.WithRegion(r))
	}
	if p := q.Get("profile"); p != "" {
		opts = append(opts, awsconfig.WithSharedConfigProfile(p))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return i18n.Errorf("store %s: AWS configuration: %w", redact(u), err)
	}
	if cfg.Region == "" {
		return i18n.Errorf("store %s: no region: add region=REGION to the URL (the bucket's; for an S3-compatible service with endpoint=, the region it asks for, often us-east-1), or set AWS_REGION", redact(u))
	}
	// anonymous=true reads a public bucket; role= assumes a role with them.
	if anon, _ := strconv.ParseBool(q.Get("anonymous")); anon || q.Get("role") != "" {
		return nil
	}
	// Retried as a store operation would be: the instance's metadata
	// service can time out once, and that must not end a training run.
	retrieve := func() error { _, err := cfg.Credentials.Retrieve(ctx); return err }
	if err := (&backend.Retrying{}).Do(ctx, retrieve); err != nil {
		return i18n.Errorf("store %s: no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the S3-compatible service's keys too), AWS_PROFILE, or use the instance's role: %w", redact(u), err)
	}
	return nil
}

// azureAccount is the storage account an azblob:// URL addresses, found
// where gocloud's azureblob looks: the URL's storage_account, then
// AZURE_STORAGE_ACCOUNT, then the AccountName of a connection string.
// Without one it fails with "Options.AccountName is required".
func azureAccount(u *url.URL, getenv func(string) string) string {
	if a := u.Query().Get("storage_account"); a != "" {
		return a
	}
	if a := getenv("AZURE_STORAGE_ACCOUNT"); a != "" {
		return a
	}
	cs := getenv("AZURE_STORAGE_CONNECTION_STRING")
	if cs == "" {
		cs = getenv("AZURE_STORAGEBLOB_CONNECTIONSTRING")
	}
	for part := range strings.SplitSeq(cs, ";") {
		if k, v, ok := strings.Cut(part, "="); ok && k == "AccountName" {
			return v
		}
	}
	return ""
}

// ipEndpoint says an endpoint URL names its host by IP address or as
// localhost, where only path-style requests can reach a bucket.
func ipEndpoint(ep string) bool {
	u, err := url.Parse(ep)
	if err != nil {
		return false
	}
	return u.Hostname() == "localhost" || net.ParseIP(u.Hostname()) != nil
}

// stripUser removes a user name and password from a URL-shaped value.
func stripUser(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		if i, j := strings.Index(v, "://"), strings.LastIndex(v, "@"); i >= 0 && j > i {
			return v[:i+3] + v[j+1:] // unparseable, but shaped like one
		}
		return v
	}
	u.User = nil
	return u.String()
}

// checkEndpoint refuses plain http to anything but loopback unless
// insecure: checkpoints and credentials would cross the network in clear.
func checkEndpoint(ep string, insecure bool) error {
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" {
		return i18n.Errorf("store endpoint %q: want a URL such as https://s3.example.com", stripUser(ep))
	}
	if u.User != nil {
		// Never echoed: the password would be in the error, the log and
		// the terminal's scrollback.
		u.User = nil
		return i18n.Errorf("store endpoint %s: a user name or password in the endpoint is refused (it would end up in logs, histories and process lists); give credentials in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the provider's own)", u)
	}
	if u.Scheme == "https" || insecure {
		return nil
	}
	if u.Scheme != "http" {
		return i18n.Errorf("store endpoint %q: want http:// or https://", ep)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return i18n.Errorf("store endpoint %s is plain http to another machine: credentials and data would cross the network unprotected; use https, or pass --insecure if you accept that", ep)
}

// plainEndpoint is the endpoint a store URL will reach when it names one
// or asks for plain http, "" when it goes to the cloud's own https
// service: s3's endpoint parameter; azblob with protocol=http (parameter or
// AZURE_STORAGE_PROTOCOL) to its domain; gs with STORAGE_EMULATOR_HOST,
// which gocloud reaches over http.
func plainEndpoint(u *url.URL) string {
	q := u.Query()
	param := func(name, env string) string {
		if v := q.Get(name); v != "" {
			return v
		}
		return os.Getenv(env)
	}
	switch u.Scheme {
	case "s3":
		return q.Get("endpoint")
	case "azblob":
		if param("protocol", "AZURE_STORAGE_PROTOCOL") != "http" {
			return ""
		}
		domain := param("domain", "AZURE_STORAGE_DOMAIN")
		if domain == "" {
			domain = "blob.core.windows.net"
		}
		return "http://" + domain
	case "gs":
		if h := os.Getenv("STORAGE_EMULATOR_HOST"); h != "" {
			if strings.Contains(h, "://") {
				return h
			}
			return "http://" + h
		}
	}
	return ""
}

// secretParam: a query parameter that carries a secret: a SAS signature
// (sig), a presigned URL's (X-Amz-*, X-Goog-*), a token, a password. Key
// ids and key paths (kmskeyid, private_key_path) are not secrets.
func secretParam(k string) bool {
	lk := strings.ToLower(k)
	for _, s := range []string{"signature", "secret", "token", "password", "credential"} {
		if strings.Contains(lk, s) {
			return true
		}
	}
	return lk == "sig" || lk == "access_key" || strings.HasPrefix(lk, "x-amz-") || strings.HasPrefix(lk, "x-goog-")
}

// redact drops anything secret-looking from a URL before it is shown.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	q := c.Query()
	for k := range q {
		if secretParam(k) || strings.Contains(strings.ToLower(k), "key") {
			q.Set(k, "REDACTED")
		} else {
			q.Set(k, stripUser(q.Get(k))) // endpoint=http://user:PASSWORD@host
		}
	}
	c.RawQuery = q.Encode()
	return c.String()
}

type bucket struct {
	b    *blob.Bucket
	opt  OpenOptions
	name string
	// multipart reaches an S3 store's incomplete multipart uploads, which
	// the blob API does not show; nil for other stores.
	multipart *multipart
	// wholeUpload: hand the driver one reader (blob.Bucket.Upload) rather
	// than writes. gocloud's azureblob writer (v0.47.0) panics in Close
	// when an upload fed by writes fails while Close waits for it (its
	// goroutine sets the pipe it closes to nil): a push cancelled by
	// Ctrl-C or a failed connection would crash gpurent. Its backend.Upload path
	// leaves the pipe alone.
	wholeUpload bool
	// dir is a file store's directory ("" for others), whose objects'
	// directories stay behind when the objects are deleted.
	dir string
	// marked: dir held the store's marker (storeMarker) when opened, so
	// a directory without it in its place is a stand-in (present).
	marked bool
}

// storeMarker is the file a directory store keeps at its root. A network
// mount that drops leaves an empty mount point, or nothing, where the
// store was: without the marker that is taken for an outage, not for an
// empty store to write into.
const storeMarker = ".gpurent-store"

// mark makes sure a directory store's root holds the marker: written
// once, by the first open that may write; a store that cannot take it
// (read-only) is checked as a directory only.
func (b *bucket) mark() {
	p := filepath.Join(b.dir, storeMarker)
	if st, err := os.Lstat(p); err == nil {
		b.marked = st.Mode().IsRegular()
		return
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return
	}
	_, err = f.WriteString("gpurent keeps checkpoints in this directory; this file tells it the directory is there\n")
	if f.Close() == nil && err == nil {
		b.marked = true
	}
}

// present is nil unless a directory store is gone from its place: its
// root missing, not a directory, or without the marker it had (a mount
// that dropped). Such a store is unreachable, and nothing is written
// into what stands in its place.
func (b *bucket) present(op, key string) error {
	if b.dir == "" {
		return nil
	}
	var why error
	switch st, err := os.Stat(b.dir); {
	case err != nil:
		why = i18n.Errorf("%w: its directory %s: %w", backend.ErrUnreachable, b.dir, err)
	case !st.IsDir():
		why = i18n.Errorf("%w: %s is no longer a directory", backend.ErrUnreachable, b.dir)
	case b.marked:
		if mst, err := os.Lstat(filepath.Join(b.dir, storeMarker)); err != nil || !mst.Mode().IsRegular() {
			why = i18n.Errorf("%w: %s lacks the store's marker %s (an empty mount point or another directory in its place)", backend.ErrUnreachable, b.dir, storeMarker)
		}
	}
	if why == nil {
		return nil
	}
	return &backend.OpError{Op: op, Key: key, Store: b.name, Code: backend.Internal, Err: why}
}

// RemoveEmpty removes the empty directories under prefix in a file store,
// deepest first, and prefix's own; elsewhere a prefix is no object and
// nothing is left.
func (b *bucket) RemoveEmpty(prefix string) {
	if b.dir == "" {
		return
	}
	root := filepath.Join(b.dir, filepath.FromSlash(prefix))
	var dirs []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i]) // only an empty one goes
	}
}

func (b *bucket) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // an abandoned write is discarded, never committed
	opts := &blob.WriterOptions{BufferSize: b.opt.PartSize, MaxConcurrency: b.opt.Concurrency, ContentType: "application/octet-stream"}
	if b.wholeUpload {
		return b.upload(ctx, cancel, key, fill, opts)
	}
	if err := b.present("write", key); err != nil {
		return 0, err
	}
	w, err := b.b.NewWriter(ctx, key, opts)
	if err != nil {
		return 0, b.wrap("write", key, err)
	}
	cw := &countWriter{w: w}
	if err := fill(cw); err != nil {
		cancel()
		w.Close()
		return 0, err
	}
	if err := b.present("write", key); err != nil {
		cancel() // the store went while it was written: discarded
		w.Close()
		return 0, err
	}
	if err := w.Close(); err != nil {
		// A directory store gone during the write fails its rename with
		// "no such file": said as the outage it is.
		if perr := b.present("write", key); perr != nil {
			return 0, perr
		}
		return 0, b.wrap("write", key, err)
	}
	return cw.n, nil
}

// upload is Put through blob.Bucket.Upload: fill writes into a pipe the
// driver reads. A failed fill fails the upload (its error is the pipe's)
// and is returned as it is; a failed upload ends fill at its next write.
func (b *bucket) upload(ctx context.Context, cancel func(), key string, fill func(io.Writer) error, opts *blob.WriterOptions) (int64, error) {
	pr, pw := io.Pipe()
	cw := &countWriter{w: pw}
	filled := make(chan error, 1)
	go func() {
		err := fill(cw)
		if err != nil {
			cancel() // discarded, never committed
		}
		pw.CloseWithError(err)
		filled <- err
	}()
	err := b.b.Upload(ctx, key, pr, opts)
	ended := i18n.Errorf("the upload ended")
	pr.CloseWithError(ended)
	// fill's own failure is the cause, unless it failed because the
	// upload had ended.
	if ferr := <-filled; ferr != nil && !errors.Is(ferr, ended) {
		return 0, ferr
	}
	if err != nil {
		return 0, b.wrap("write", key, err)
	}
	return cw.n, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// localKeyRe is a key a directory store keeps under its own name (none
// that fileblob escapes): those are opened here, without blocking.
var localKeyRe = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$`)

// localFile is an object of a directory store, opened: a regular file.
type localFile struct {
	*os.File
	size int64
}

// Size is the object's size when it was opened (as blob.Reader's).
func (f localFile) Size() int64 { return f.size }

// openLocal opens key of a directory store as userfile does: without
// blocking and without following a link, a regular file only. A FIFO,
// device or link planted in the store is refused at once; fileblob's
// open would wait forever on a FIFO, and no signal ends that wait.
func (b *bucket) openLocal(op, key string) (localFile, bool, error) {
	if b.dir == "" || !localKeyRe.MatchString(key) {
		return localFile{}, false, nil
	}
	f, st, err := userfile.OpenNoFollow(filepath.Join(b.dir, filepath.FromSlash(key)))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return localFile{}, true, &backend.OpError{Op: op, Key: key, Store: b.name, Code: backend.NotFound, Err: err}
	case errors.Is(err, userfile.ErrNotRegular):
		// Not an object the store wrote: planted, like a damaged one
		// (ls names it, the rest of the run is read).
		return localFile{}, true, i18n.Errorf("%s in %s: %w", key, b.name, err)
	case err != nil:
		return localFile{}, true, b.wrap(op, key, err)
	}
	return localFile{File: f, size: st.Size()}, true, nil
}

func (b *bucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := b.present("read", key); err != nil {
		return nil, err
	}
	if f, ok, err := b.openLocal("read", key); ok {
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	r, err := b.b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, b.wrap("read", key, err)
	}
	return r, nil
}

func (b *bucket) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := b.present("read", key); err != nil {
		return nil, err
	}
	if f, ok, err := b.openLocal("read", key); ok {
		if err != nil {
			return nil, err
		}
		if off > f.size {
			f.Close()
			return nil, &backend.OpError{Op: "read", Key: key, Store: b.name, Code: backend.InvalidArgument, Err: i18n.Errorf("offset %d is past the end (%d bytes)", off, f.size)}
		}
		if n < 0 {
			n = f.size - off
		}
		return struct {
			io.Reader
			io.Closer
		}{io.NewSectionReader(f, off, n), f}, nil
	}
	r, err := b.b.NewRangeReader(ctx, key, off, n, nil)
	if err != nil {
		return nil, b.wrap("read", key, err)
	}
	return r, nil
}

func (b *bucket) Size(ctx context.Context, key string) (int64, error) {
	if err := b.present("stat", key); err != nil {
		return 0, err
	}
	if f, ok, err := b.openLocal("stat", key); ok {
		if err != nil {
			return 0, err
		}
		f.Close()
		return f.size, nil
	}
	a, err := b.b.Attributes(ctx, key)
	if err != nil {
		return 0, b.wrap("stat", key, err)
	}
	return a.Size, nil
}

// List lists the objects under prefix. A local store lists files that a
// concurrent upload may rename away between readdir and lstat; such a
// listing is simply taken again. The store never writes keys ending in
// ".tmp", so the local store's temporary files are left out.
func (b *bucket) List(ctx context.Context, prefix string) ([]backend.Object, error) {
	if err := b.present("list", prefix); err != nil {
		return nil, err
	}
	var out []backend.Object
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		out, err = b.list(ctx, prefix)
		if err == nil || gcerrors.Code(err) != gcerrors.NotFound {
			break
		}
	}
	if err != nil {
		return nil, b.wrap("list", prefix, err)
	}
	// A directory that went during the listing lists as empty.
	if err := b.present("list", prefix); err != nil {
		return nil, err
	}
	return out, nil
}

// tempRe is how the directory store names a file being written: the
// object's name, the time in hexadecimal nanoseconds, ".tmp".
var tempRe = regexp.MustCompile(`\.[0-9a-f]{8,16}\.tmp$`)

// StaleTemps lists a directory store's temporary files under prefix last
// written before before; elsewhere there are none.
func (b *bucket) StaleTemps(ctx context.Context, prefix string, before time.Time) ([]string, error) {
	if b.dir == "" {
		return nil, nil
	}
	var out []string
	err := b.walk(ctx, prefix, func(o *blob.ListObject) {
		if tempRe.MatchString(o.Key) && o.ModTime.Before(before) {
			out = append(out, o.Key)
		}
	})
	if err != nil {
		return nil, b.wrap("list", prefix, err)
	}
	return out, nil
}

// walk hands each object under prefix (no directory) to visit.
func (b *bucket) walk(ctx context.Context, prefix string, visit func(o *blob.ListObject)) error {
	it := b.b.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if !o.IsDir {
			visit(o)
		}
	}
}

func (b *bucket) list(ctx context.Context, prefix string) ([]backend.Object, error) {
	var out []backend.Object
	err := b.walk(ctx, prefix, func(o *blob.ListObject) {
		if !strings.HasSuffix(o.Key, ".tmp") && (b.dir == "" || o.Key != storeMarker) {
			out = append(out, backend.Object{Key: o.Key, Size: o.Size, ModTime: o.ModTime})
		}
	})
	return out, err
}

func (b *bucket) Delete(ctx context.Context, key string) error {
	if err := b.present("delete", key); err != nil {
		return err
	}
	if err := b.b.Delete(ctx, key); err != nil {
		return b.wrap("delete", key, err)
	}
	return nil
}

func (b *bucket) Close() error { return b.b.Close() }

func (b *bucket) wrap(op, key string, err error) error {
	return &backend.OpError{Op: op, Key: key, Store: b.name, Code: codeOf(err), Err: err}
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

func (m *multipart) list(ctx context.Context, prefix string, before time.Time) ([]backend.Upload, error) {
	var out []backend.Upload
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
			out = append(out, backend.Upload{Key: key, ID: aws.ToString(u.UploadId), Initiated: at})
		}
		if !aws.ToBool(page.IsTruncated) {
			return out, nil
		}
		in.KeyMarker, in.UploadIdMarker = page.NextKeyMarker, page.NextUploadIdMarker
	}
}

func (m *multipart) abort(ctx context.Context, u backend.Upload) error {
	_, err := m.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(m.bucket), Key: aws.String(m.full(u.Key)), UploadId: aws.String(u.ID)})
	if err != nil {
		return i18n.Errorf("abort incomplete upload of %s: %w", u.Key, err)
	}
	return nil
}

// IncompleteUploads lists the multipart uploads under prefix begun before
// before (zero: all); none for a store that is not S3.
func (b *bucket) IncompleteUploads(ctx context.Context, prefix string, before time.Time) ([]backend.Upload, error) {
	if b.multipart == nil {
		return nil, nil
	}
	return b.multipart.list(ctx, prefix, before)
}

// AbortUpload aborts one, which deletes its parts.
func (b *bucket) AbortUpload(ctx context.Context, u backend.Upload) error {
	if b.multipart == nil {
		return nil
	}
	return b.multipart.abort(ctx, u)
}

// Copy copies src to dst in the store (S3 CopyObject, GCS rewrite, Azure
// copy from URL, a file copy for a directory).
func (b *bucket) Copy(ctx context.Context, dst, src string) error {
	if err := b.b.Copy(ctx, dst, src, nil); err != nil {
		return b.wrap("copy "+src+" to", dst, err)
	}
	return nil
}

// Copies is false for a directory: its "ETag" is a file's time and size,
// which anyone who can write there can set (no proof of content), and a
// copy there reads and writes every byte.
func (b *bucket) Copies() bool { return b.dir == "" }

// ETag is the store's name for the version of key now stored.
func (b *bucket) ETag(ctx context.Context, key string) (string, error) {
	if !b.Copies() {
		return "", backend.ErrNoCopy
	}
	a, err := b.b.Attributes(ctx, key)
	if err != nil {
		return "", b.wrap("read attributes of", key, err)
	}
	if a.ETag == "" {
		return "", backend.ErrNoCopy
	}
	return a.ETag, nil
}

// Dir is the directory of a directory store that Open opened, "" for
// any other backend.
func Dir(b backend.Backend) string {
	if bk, ok := b.(*bucket); ok {
		return bk.dir
	}
	return ""
}

// codeOf is gocloud's classification of err as backend's.
func codeOf(err error) backend.Code {
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return backend.NotFound
	case gcerrors.PermissionDenied:
		return backend.PermissionDenied
	case gcerrors.InvalidArgument:
		return backend.InvalidArgument
	case gcerrors.FailedPrecondition:
		return backend.FailedPrecondition
	case gcerrors.AlreadyExists:
		return backend.AlreadyExists
	case gcerrors.Unimplemented:
		return backend.Unimplemented
	case gcerrors.Internal:
		return backend.Internal
	case gcerrors.DeadlineExceeded:
		return backend.DeadlineExceeded
	case gcerrors.ResourceExhausted:
		return backend.ResourceExhausted
	case gcerrors.Canceled:
		return backend.Canceled
	}
	return backend.Unknown
}
