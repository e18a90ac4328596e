// Package store keeps checkpoints off the rented machine: encrypted with
// age, verified against SHA-256 hashes, on any blob store gocloud.dev/blob
// opens (a local or NFS directory, S3 and every S3-compatible service, GCS,
// Azure). A checkpoint is visible only once all its objects are stored and
// its manifest is written last, so a push killed at any moment leaves
// nothing half-written behind that ls, latest or pull could see.
package store

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/logging"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/userfile"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob://
	"gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/s3blob" // s3://
	"gocloud.dev/gcerrors"
)

// Object is one stored object.
type Object struct {
	Key  string
	Size int64
	// ModTime is when the store says the object was written, by the
	// store's clock, not this machine's; zero where the backend does not
	// say.
	ModTime time.Time
}

// Backend is what the store needs of a blob store. Implementations report
// a missing key with an error for which IsNotFound is true. Put calls fill
// to produce the object's content and may call it again on a retry, so fill
// must start from the beginning each time; an object is visible only once
// Put returns without error.
type Backend interface {
	Put(ctx context.Context, key string, fill func(w io.Writer) error) (int64, error)
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// GetRange reads n bytes from offset off.
	GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
	Size(ctx context.Context, key string) (int64, error)
	List(ctx context.Context, prefix string) ([]Object, error)
	Delete(ctx context.Context, key string) error
	Close() error
}

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
func Open(ctx context.Context, raw string, opt OpenOptions) (Backend, string, error) {
	u, err := parseStoreURL(raw)
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
	if err := (&Retrying{}).do(ctx, retrieve); err != nil {
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

// LocalDir is the directory of a store on this machine's file system (a
// path or file:// URL), or "" for a remote store. The directory is
// resolved through symlinks where it exists.
func LocalDir(raw string) string {
	u, err := parseStoreURL(raw)
	if err != nil || u.Scheme != "file" {
		return ""
	}
	dir := filepath.Clean(u.Path)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}

// Within reports whether the local store dir lies in the tree at path
// (resolved through symlinks): pushing that tree, or watching it for
// checkpoints, would take the store's own objects in, again and again.
func Within(dir, path string) bool {
	if dir == "" {
		return false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return dir == abs || strings.HasPrefix(dir, abs+string(filepath.Separator)) || abs == string(filepath.Separator)
}

// parseStoreURL accepts a plain path as file://.
func parseStoreURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, i18n.Errorf("no store: give --store URL (or set GPURENT_STORE)")
	}
	if !strings.Contains(raw, "://") {
		// "s3:/bucket" or "gs:bucket" is a URL typed wrong, not a
		// directory named "s3:": taken as a path, the checkpoints would
		// stay on this machine, the one that can vanish.
		if scheme, rest, ok := strings.Cut(raw, ":"); ok {
			want := strings.ToLower(scheme) + "://" + strings.TrimLeft(rest, "/")
			switch strings.ToLower(scheme) {
			case "file":
				want = "file:///" + strings.TrimLeft(rest, "/")
				fallthrough
			case "s3", "gs", "azblob":
				return nil, i18n.Errorf("store %q: a URL needs \"://\" (%s); for a local directory whose name begins %q, write ./%s", raw, want, scheme+":", raw)
			}
		}
		abs, err := filepath.Abs(raw)
		if err != nil {
			return nil, i18n.Errorf("store path %q: %w", raw, err)
		}
		return &url.URL{Scheme: "file", Path: abs}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, i18n.Errorf("store URL %q: %w", raw, err)
	}
	if u.Scheme == "file" && u.Host != "" && u.Host != "localhost" {
		return nil, i18n.Errorf("store URL %q: file:// takes an absolute path (file:///path)", raw)
	}
	return u, nil
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
	// Ctrl-C or a failed connection would crash gpurent. Its Upload path
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

// ErrUnreachable is a store that does not answer, or a directory store
// that is not there: an outage, never an empty store or a takeover.
var ErrUnreachable = i18n.Errorf("the store cannot be reached")

// IsUnreachable reports whether err is the store not answering (or not
// there) rather than answering no: worth trying again later.
func IsUnreachable(err error) bool {
	return errors.Is(err, ErrUnreachable) || Transient(err)
}

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
		why = i18n.Errorf("%w: its directory %s: %w", ErrUnreachable, b.dir, err)
	case !st.IsDir():
		why = i18n.Errorf("%w: %s is no longer a directory", ErrUnreachable, b.dir)
	case b.marked:
		if mst, err := os.Lstat(filepath.Join(b.dir, storeMarker)); err != nil || !mst.Mode().IsRegular() {
			why = i18n.Errorf("%w: %s lacks the store's marker %s (an empty mount point or another directory in its place)", ErrUnreachable, b.dir, storeMarker)
		}
	}
	if why == nil {
		return nil
	}
	return &OpError{Op: op, Key: key, Store: b.name, Code: gcerrors.Internal, Err: why}
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
		return localFile{}, true, &OpError{Op: op, Key: key, Store: b.name, Code: gcerrors.NotFound, Err: err}
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
			return nil, &OpError{Op: "read", Key: key, Store: b.name, Code: gcerrors.InvalidArgument, Err: i18n.Errorf("offset %d is past the end (%d bytes)", off, f.size)}
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
func (b *bucket) List(ctx context.Context, prefix string) ([]Object, error) {
	if err := b.present("list", prefix); err != nil {
		return nil, err
	}
	var out []Object
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

// temps is a store that can leave temporary files of killed writes
// behind (a directory), and lists those older than before.
type temps interface {
	StaleTemps(ctx context.Context, prefix string, before time.Time) ([]string, error)
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

func (b *bucket) list(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	err := b.walk(ctx, prefix, func(o *blob.ListObject) {
		if !strings.HasSuffix(o.Key, ".tmp") && (b.dir == "" || o.Key != storeMarker) {
			out = append(out, Object{Key: o.Key, Size: o.Size, ModTime: o.ModTime})
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

// OpError is a failed store operation with its kind, so callers and the
// retry decorator can tell transient failures from permanent ones.
type OpError struct {
	Op, Key, Store string
	Code           gcerrors.ErrorCode
	Err            error
}

func (e *OpError) Error() string {
	switch e.Code {
	case gcerrors.NotFound:
		return fmt.Sprintf("%s %s in %s: not found (%v)", e.Op, e.Key, e.Store, e.Err)
	case gcerrors.PermissionDenied:
		return fmt.Sprintf("%s %s in %s: access denied: check the credentials in the environment (AWS_ACCESS_KEY_ID, GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_ACCOUNT ...) (%v)", e.Op, e.Key, e.Store, e.Err)
	}
	if why := unreachable(e.Err); why != "" {
		return fmt.Sprintf("%s %s in %s: %s (%v)", e.Op, e.Key, e.Store, why, e.Err)
	}
	return fmt.Sprintf("%s %s in %s: %v", e.Op, e.Key, e.Store, e.Err)
}

// unreachable says in words why the store's server was not reached at
// all, or "": the cloud SDKs put that cause at the end of a long chain
// ("operation error S3: ListObjectsV2, exceeded maximum number of
// attempts, ... dial tcp ...: connect: connection refused"), where a
// typo in endpoint= hides from the person who made it.
func unreachable(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	var authority x509.UnknownAuthorityError
	var host x509.HostnameError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return fmt.Sprintf("the host %s does not resolve: check the endpoint's name (endpoint= in the store URL)", dns.Name)
	case errors.Is(err, syscall.ECONNREFUSED):
		at := ""
		if errors.As(err, &op) && op.Addr != nil {
			at = " at " + op.Addr.String()
		}
		return "nothing answers" + at + " (connection refused): check the endpoint's host and port, and that its server runs"
	case errors.As(err, &authority):
		return "the server's TLS certificate is signed by an authority this machine does not trust (a private CA: name its bundle in SSL_CERT_FILE)"
	case errors.As(err, &host):
		return fmt.Sprintf("the server's TLS certificate is not for %s: check the endpoint's host", host.Host)
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "the endpoint speaks plain HTTP: write it as http://"
	}
	return ""
}

func (e *OpError) Unwrap() error { return e.Err }

func (b *bucket) wrap(op, key string, err error) error {
	return &OpError{Op: op, Key: key, Store: b.name, Code: gcerrors.Code(err), Err: err}
}

// IsNotFound reports whether err means a missing object.
func IsNotFound(err error) bool {
	var se *OpError
	return errors.As(err, &se) && se.Code == gcerrors.NotFound && !noBucket(se.Err)
}

// IsPermissionDenied reports whether err is the store refusing the
// credentials' request, which no retry mends.
func IsPermissionDenied(err error) bool {
	var se *OpError
	return errors.As(err, &se) && se.Code == gcerrors.PermissionDenied
}

// noBucket spots a missing bucket, which S3 also reports as NotFound.
func noBucket(err error) bool {
	s := err.Error()
	return strings.Contains(s, "NoSuchBucket") || strings.Contains(s, "bucket does not exist")
}
