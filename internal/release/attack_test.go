package release

// Adversarial tests (security review). Every endpoint is an httptest
// server on 127.0.0.1. Tests named TestAttack* pass when the contract
// holds; TestAttack* FAIL while the finding they show stands.

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A provider that echoes the key back after ~290 bytes of text: snippet
// cuts at 300 characters before mask runs, so the cut-off key no longer
// matches the secret and its first 10 characters come out unmasked.
func TestAttackSnippetCutLeaksKeyPrefix(t *testing.T) {
	const key = "rpa_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	pad := strings.Repeat("x", 290) + " "
	for _, code := range []int{400, 503} {
		f := newFake(t, map[string]func(*http.Request) (int, string){"POST /pods/p1/stop": answer(code, pad[:289]+" "+key)})
		o := opts(t, map[string]string{"runpod": f.URL}, map[string]string{"RUNPOD_POD_ID": "p1", "RUNPOD_API_KEY": key})
		if code == 503 {
			o.Client = &http.Client{Timeout: 2 * time.Second}
		}
		_, _, _, err := release(t, o, Stop)
		if err == nil {
			t.Fatal("no error")
		}
		if strings.Contains(err.Error(), key[:8]) {
			t.Errorf("HTTP %d: key prefix beyond the 4 masked characters leaks: %q", code, err.Error()[len(err.Error())-60:])
		}
	}
}

// AWS keys from the environment without AWS_SESSION_TOKEN: "" goes into
// secrets, and strings.ReplaceAll(s, "", "****") puts **** between every
// character of every message.
func TestAttackEmptySessionTokenGarblesMessages(t *testing.T) {
	imds := newFake(t, map[string]func(*http.Request) (int, string){
		"PUT /latest/api/token":                  answer(200, "TOKEN"),
		"GET /latest/meta-data/instance-id":      answer(200, "i-0123456789abcdef0"),
		"GET /latest/meta-data/placement/region": answer(200, "eu-west-1"),
	})
	ec2 := newFake(t, map[string]func(*http.Request) (int, string){"POST /": answer(403, "<Code>UnauthorizedOperation</Code>")})
	o := opts(t, map[string]string{"aws-metadata": imds.URL, "aws": ec2.URL},
		map[string]string{"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"})
	_, _, _, err := release(t, o, Stop)
	if err == nil || !strings.Contains(err.Error(), "ec2:StopInstances") {
		t.Errorf("the hint is unreadable: %.200q", err)
	}
}

// A session token echoed JSON-escaped (\/) or URL-encoded is not masked.
func TestAttackEncodedEchoNotMasked(t *testing.T) {
	const tok = "IQoJb3JpZ2luX2VjE/abc+def/ghijklmnop=="
	imds := newFake(t, map[string]func(*http.Request) (int, string){
		"PUT /latest/api/token":                            answer(200, "TOKEN"),
		"GET /latest/meta-data/instance-id":                answer(200, "i-0123456789abcdef0"),
		"GET /latest/meta-data/placement/region":           answer(200, "eu-west-1"),
		"GET /latest/meta-data/iam/security-credentials/":  answer(200, "r"),
		"GET /latest/meta-data/iam/security-credentials/r": answer(200, `{"AccessKeyId":"ASIA1","SecretAccessKey":"S3CRETS3CRET","Token":"`+tok+`"}`),
	})
	echo := `{"got":"` + strings.ReplaceAll(tok, "/", `\/`) + `","q":"` + strings.NewReplacer("/", "%2F", "+", "%2B", "=", "%3D").Replace(tok) + `"}`
	ec2 := newFake(t, map[string]func(*http.Request) (int, string){"POST /": answer(400, echo)})
	o := opts(t, map[string]string{"aws-metadata": imds.URL, "aws": ec2.URL}, nil)
	_, _, _, err := release(t, o, Stop)
	if err != nil && (strings.Contains(err.Error(), "ghijklmnop") || strings.Contains(err.Error(), "def%2Fghij")) {
		t.Errorf("encoded token unmasked: %v", err)
	}
}

// The first DELETE times out on the client, but the provider acts; the
// retry gets 404 ("already gone") and the release is reported as failed,
// after two DELETE requests.
func TestAttackRetryAfterTimeoutReportsFailureOfADoneDestroy(t *testing.T) {
	var n, done atomic.Int32
	f := newFake(t, map[string]func(*http.Request) (int, string){"DELETE /pods/p1": func(*http.Request) (int, string) {
		if n.Add(1) == 1 {
			time.Sleep(600 * time.Millisecond) // the answer is late, the pod is gone
			done.Store(1)
			return 200, "{}"
		}
		return 404, `{"error":"pod not found"}`
	}})
	o := opts(t, map[string]string{"runpod": f.URL}, map[string]string{"RUNPOD_POD_ID": "p1", "RUNPOD_API_KEY": "rpa_KEY0123456789"})
	o.Client = &http.Client{Timeout: 300 * time.Millisecond}
	_, _, _, err := release(t, o, Destroy)
	t.Logf("requests: %d; err: %v", n.Load(), err)
	if err != nil {
		t.Errorf("destroyed on the first try, yet reported as failed after %d DELETEs: %v", n.Load(), err)
	}
}

// A key with a stray \r (a CRLF .env file) is a local error, yet it is
// retried as "no answer" three times (6 s) with no hint about the key.
func TestAttackMalformedKeyRetriedAsNetworkFailure(t *testing.T) {
	f := newFake(t, map[string]func(*http.Request) (int, string){"POST /pods/p1/stop": answer(200, "ok")})
	o := opts(t, map[string]string{"runpod": f.URL}, map[string]string{"RUNPOD_POD_ID": "p1", "RUNPOD_API_KEY": "rpa_KEY0123456789\r"})
	start := time.Now()
	_, _, _, err := release(t, o, Stop)
	t.Logf("after %v: %v", time.Since(start).Round(time.Second), err)
	if err == nil || strings.Contains(err.Error(), "KEY0123456789") {
		t.Fatalf("leak or success: %v", err)
	}
	if strings.Contains(err.Error(), "tries") || !strings.Contains(err.Error(), "RUNPOD_API_KEY") {
		t.Errorf("a malformed key is retried as a network failure and not named: %v", err)
	}
}

// On a machine that is not Lambda's (a workstation or another cloud no
// provider claims) with LAMBDA_API_KEY exported, a private address shared
// with one of the account's Lambda instances makes that instance "this
// machine", and --destroy terminates it.
func TestAttackLambdaMatchesOnAPrivateAddressAlone(t *testing.T) {
	list := `{"data":[{"id":"someone-elses-instance","ip":"203.0.113.9","private_ip":"10.0.0.5","hostname":"203-0-113-9"}]}`
	f := newFake(t, map[string]func(*http.Request) (int, string){
		"GET /instances":                      answer(200, list),
		"POST /instance-operations/terminate": answer(200, `{}`),
	})
	o := opts(t, map[string]string{"lambda": f.URL}, map[string]string{"LAMBDA_API_KEY": "secret_lambda_0123456789"})
	o.Addrs = func() []string { return []string{"127.0.0.1", "10.0.0.5", "172.17.0.1"} }
	m, err := Find(context.Background(), o)
	if err == nil && m != nil {
		t.Errorf("matched %s by its RFC 1918 private_ip alone; its public ip is not this machine's", m)
	}
}

// Held: a fake metadata server at 169.254.169.254 that answers both as
// AWS's IMDSv2 and Azure's IMDS is refused as two providers.
func TestAttackAWSAndAzureAtOneAddress(t *testing.T) {
	md := newFake(t, map[string]func(*http.Request) (int, string){
		"PUT /latest/api/token":                  answer(200, "TOKEN"),
		"GET /latest/meta-data/instance-id":      answer(200, "i-0123456789abcdef0"),
		"GET /latest/meta-data/placement/region": answer(200, "eu-west-1"),
		"GET /metadata/instance/compute":         answer(200, `{"subscriptionId":"s","resourceGroupName":"g","name":"vm","vmId":"v"}`),
	})
	o := opts(t, map[string]string{"aws-metadata": md.URL, "azure-metadata": md.URL}, nil)
	if _, err := Find(context.Background(), o); err == nil || !strings.Contains(err.Error(), "refusing to guess") {
		t.Fatal(err)
	}
}

// Held: ids and metadata values that could change the path are refused,
// and nothing is sent.
func TestAttackPathIDs(t *testing.T) {
	for _, id := range []string{"..", "a/b", "a%2Fb", "p1\n", "p 1", "pödd", "p1?x=1", "p1#", strings.Repeat("a", 129), "."} {
		f := newFake(t, nil)
		o := opts(t, map[string]string{"runpod": f.URL}, map[string]string{"RUNPOD_POD_ID": id, "RUNPOD_API_KEY": "rpa_KEY0123456789"})
		if _, _, _, err := release(t, o, Destroy); err == nil || len(f.got) != 0 {
			t.Errorf("%q: %v, %d requests", id, err, len(f.got))
		}
	}
	for _, name := range []string{"../x", "a%2F..", strings.Repeat("n", 5000)} {
		md := newFake(t, map[string]func(*http.Request) (int, string){
			"GET /metadata/instance/compute": answer(200, `{"subscriptionId":"s","resourceGroupName":"g","name":"`+name+`","vmId":"v"}`),
		})
		o := opts(t, map[string]string{"azure-metadata": md.URL}, nil)
		if _, err := Find(context.Background(), o); err == nil {
			t.Errorf("azure name %.20q accepted", name)
		}
	}
}

// Held: a 307 to another host is not followed (no second request, the key
// stays), a huge answer is cut, and the key echoed whole is masked.
func TestAttackRedirectHugeEcho(t *testing.T) {
	const key = "rpa_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var other atomic.Int32
	evil := newFake(t, nil)
	evil.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other.Add(1) })
	f := newFake(t, nil)
	f.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/pods/p1/stop":
			http.Redirect(w, r, strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)+"/pods/p2/stop", http.StatusTemporaryRedirect)
		case "/pods/p1":
			w.WriteHeader(400)
			w.Write([]byte(key + " "))
			w.Write([]byte(strings.Repeat("y", 50<<20)))
		}
	})
	o := opts(t, map[string]string{"runpod": f.URL}, map[string]string{"RUNPOD_POD_ID": "p1", "RUNPOD_API_KEY": key})
	if _, _, _, err := release(t, o, Stop); err == nil || other.Load() != 0 || strings.Contains(err.Error(), key[:8]) {
		t.Errorf("redirect: %v; %d elsewhere", err, other.Load())
	}
	if _, _, _, err := release(t, o, Destroy); err == nil || strings.Contains(err.Error(), key[:8]) || len(err.Error()) > 2000 {
		t.Errorf("huge echo: %.300v", err)
	}
}

// ParseEndpoints refuses credentials in the URL but echoes them back.
func TestAttackEndpointErrorEchoesCredentials(t *testing.T) {
	_, err := ParseEndpoints([]string{"runpod=https://me:hunter2hunter2@rest.runpod.io/v1"})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("%v", err)
	}
	// A query or fragment moves the id out of the path: the request goes
	// to /v1 with ?/pods/ID/stop (or drops it after #).
	eps, err := ParseEndpoints([]string{"runpod=https://rest.runpod.io/v1?", "vast=https://console.vast.ai/api/v0#"})
	if err == nil {
		t.Errorf("endpoints with a query or fragment accepted: %q", eps)
	}
}

// A provider whose find errs (it answers, but oddly) still claims the
// machine in part; Find ignores it when one other provider claims it, so
// "two claim it: refused" is bypassed by making one claim malformed.
func TestAttackErroredClaimIgnored(t *testing.T) {
	vastAPI := newFake(t, map[string]func(*http.Request) (int, string){"PUT /instances/4242/": answer(200, `{"success":true}`)})
	gcpMD := newFake(t, map[string]func(*http.Request) (int, string){
		"GET /computeMetadata/v1/instance/id":        answer(200, "1"),
		"GET /computeMetadata/v1/instance/name":      answer(200, "name with spaces"),
		"GET /computeMetadata/v1/instance/zone":      answer(200, "projects/1/zones/z"),
		"GET /computeMetadata/v1/project/project-id": answer(200, "p"),
	})
	o := opts(t, map[string]string{"vast": vastAPI.URL, "gcp-metadata": gcpMD.URL},
		map[string]string{"RUNPOD_POD_ID": "pod/../other", "RUNPOD_API_KEY": "rpa_KEY0123456789", "CONTAINER_ID": "4242", "CONTAINER_API_KEY": "vast_KEY0123456789"})
	m, err := Find(context.Background(), o)
	if err == nil {
		t.Errorf("RunPod's and GCP's claims errored, yet %s was chosen", m)
	}
}
