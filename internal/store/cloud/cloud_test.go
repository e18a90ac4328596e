package cloud

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestOpenRefusals(t *testing.T) {
	ctx := context.Background()
	for url, want := range map[string]string{
		"s3://b?endpoint=http://10.1.2.3:8333":                  "plain http to another machine",
		"azblob://c?protocol=http&domain=10.1.2.3:10000":        "plain http to another machine",
		"azblob://c?protocol=http":                              "plain http to another machine",
		"s3://key:secret@b":                                     "credentials in the URL are refused",
		"azblob://c?sv=2022-11-02&sig=SECRETVALUE":              "the sig parameter is refused",
		"s3://b/p?region=us-east-1&X-Amz-Signature=SECRETVALUE": "the X-Amz-Signature parameter is refused",
		"gs://b?X-Goog-Credential=SECRETVALUE":                  "the X-Goog-Credential parameter is refused",
		"ftp://x/y":                                             `unknown scheme "ftp"`,
		"":                                                      "no store",
		"file://host/x":                                         "file:// takes an absolute path",
	} {
		_, _, err := Open(ctx, url, OpenOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q): %v, want %q", url, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "SECRETVALUE") || strings.Contains(err.Error(), "secret@")) {
			t.Errorf("error shows a secret: %v", err)
		}
	}
	// gs:// without credentials says so, and prints nothing.
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "no-such-key.json"))
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	if _, _, err := Open(ctx, "gs://b/x", OpenOptions{}); err == nil || !strings.Contains(err.Error(), "no Google credentials") {
		t.Errorf("gs without credentials: %v", err)
	}
	// gs:// to an emulator elsewhere is plain http too.
	t.Setenv("STORAGE_EMULATOR_HOST", "10.1.2.3:4443")
	if _, _, err := Open(ctx, "gs://b/x", OpenOptions{}); err == nil || !strings.Contains(err.Error(), "plain http to another machine") {
		t.Errorf("gs with a remote STORAGE_EMULATOR_HOST: %v", err)
	}
	if err := checkEndpoint("http://127.0.0.1:8333", false); err != nil {
		t.Error(err)
	}
	// azblob:// without a storage account says so, in words; the
	// connection string's account counts.
	t.Setenv("AZURE_STORAGE_ACCOUNT", "")
	t.Setenv("AZURE_STORAGEBLOB_CONNECTIONSTRING", "")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	if _, _, err := Open(ctx, "azblob://c/x", OpenOptions{}); err == nil || !strings.HasPrefix(err.Error(), "store azblob://c/x: no storage account") {
		t.Errorf("azblob without an account: %v", err)
	}
	getenv := func(k string) string {
		return map[string]string{"AZURE_STORAGE_CONNECTION_STRING": "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=k=="}[k]
	}
	if a := azureAccount(&url.URL{Scheme: "azblob", Host: "c"}, getenv); a != "devstoreaccount1" {
		t.Errorf("account from the connection string: %q", a)
	}
	// s3:// without a region or credentials says which, in words, before
	// any request; with them it opens. No instance metadata is asked for.
	home := t.TempDir()
	for k, v := range map[string]string{"AWS_EC2_METADATA_DISABLED": "true", "HOME": home,
		"AWS_CONFIG_FILE": filepath.Join(home, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(home, "credentials"),
		"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
		"AWS_SESSION_TOKEN": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": ""} {
		t.Setenv(k, v)
	}
	local := "s3://b/x?endpoint=http://127.0.0.1:1&use_path_style=true"
	for _, c := range []struct{ url, region, key, want string }{
		{local, "", "", "no region: add region=REGION to the URL"},
		{local + "&region=us-east-1", "", "", "no AWS credentials: set AWS_ACCESS_KEY_ID"},
		{local, "eu-west-1", "", "no AWS credentials"},
		{local, "eu-west-1", "gpurent-test", ""},
		{local + "&region=us-east-1&anonymous=1", "", "", ""},
	} {
		t.Setenv("AWS_REGION", c.region)
		t.Setenv("AWS_ACCESS_KEY_ID", c.key)
		t.Setenv("AWS_SECRET_ACCESS_KEY", c.key)
		b, _, err := Open(ctx, c.url, OpenOptions{})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Open(%q), AWS_REGION %q, key %q: %v", c.url, c.region, c.key, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "store ")):
			t.Errorf("Open(%q), AWS_REGION %q, key %q: %v, want %q", c.url, c.region, c.key, err, c.want)
		}
		if b != nil {
			b.Close()
		}
	}
	if err := checkEndpoint("http://10.1.2.3:8333", true); err != nil {
		t.Error(err)
	}
}

// An S3 endpoint named by IP address is asked in path style without
// use_path_style=true: the SDK's default, the bucket as a subdomain
// ("b.127.0.0.1"), can never resolve.
func TestS3EndpointByAddressIsPathStyle(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Host+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>b</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>`)
	}))
	defer srv.Close()
	home := t.TempDir()
	for k, v := range map[string]string{"AWS_EC2_METADATA_DISABLED": "true", "HOME": home,
		"AWS_CONFIG_FILE": filepath.Join(home, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(home, "credentials"),
		"AWS_PROFILE": "", "AWS_ACCESS_KEY_ID": "gpurent-test", "AWS_SECRET_ACCESS_KEY": "gpurent-test", "AWS_SESSION_TOKEN": ""} {
		t.Setenv(k, v)
	}
	b, _, err := Open(context.Background(), "s3://b/x?endpoint="+srv.URL+"&region=us-east-1", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.List(context.Background(), "runs/"); err != nil {
		t.Fatalf("list: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) == 0 || !strings.HasPrefix(paths[0], strings.TrimPrefix(srv.URL, "http://")+" /b") {
		t.Errorf("requests %q, want path style (/b) at %s", paths, srv.URL)
	}
	for _, ep := range []string{"http://localhost:9000", "http://[::1]:9000", "https://10.0.0.5"} {
		if !ipEndpoint(ep) {
			t.Errorf("%s: not taken for an address", ep)
		}
	}
	if ipEndpoint("https://oss-cn-hangzhou.aliyuncs.com") {
		t.Error("a host name taken for an address")
	}
}
