package release

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gpurent/gpurent/internal/catalog"
)

// fake is a provider's API or metadata service on 127.0.0.1: it answers
// from routes ("METHOD /path" to status and body) and records each request.
type fake struct {
	*httptest.Server
	mu     sync.Mutex
	routes map[string]func(r *http.Request) (int, string)
	got    []seen
}

type seen struct {
	Method, Path, Query, Body string
	Header                    http.Header
}

func newFake(t *testing.T, routes map[string]func(r *http.Request) (int, string)) *fake {
	f := &fake{routes: routes}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.got = append(f.got, seen{r.Method, r.URL.Path, r.URL.RawQuery, string(b), r.Header.Clone()})
		f.mu.Unlock()
		h := routes[r.Method+" "+r.URL.Path]
		if h == nil {
			http.NotFound(w, r)
			return
		}
		code, body := h(r)
		if strings.HasPrefix(r.URL.Path, "/computeMetadata/") {
			w.Header().Set("Metadata-Flavor", "Google")
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}))
	t.Cleanup(f.Close)
	return f
}

// calls are the requests other than reads (GET, and IMDSv2's token PUT).
func (f *fake) calls() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []seen
	for _, s := range f.got {
		if s.Method != http.MethodGet && s.Path != "/latest/api/token" {
			out = append(out, s)
		}
	}
	return out
}

func answer(code int, body string) func(*http.Request) (int, string) {
	return func(*http.Request) (int, string) { return code, body }
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// dead is an endpoint nothing listens on: a metadata service that is not there.
func dead(t *testing.T) string {
	s := httptest.NewServer(http.NotFoundHandler())
	u := s.URL
	s.Close()
	return u
}

// opts points every endpoint at nothing but the ones given.
func opts(t *testing.T, e map[string]string, vars map[string]string) Options {
	d := dead(t)
	eps := map[string]string{}
	for _, n := range EndpointNames() {
		eps[n] = d
	}
	for k, v := range e {
		eps[k] = v
	}
	return Options{Endpoints: eps, Getenv: env(vars), Addrs: func() []string { return []string{"127.0.0.1", "10.0.0.9", "203.0.113.7"} }}
}

func release(t *testing.T, o Options, a Action) (*Machine, *Call, string, error) {
	t.Helper()
	ctx := context.Background()
	m, err := Find(ctx, o)
	if err != nil {
		return nil, nil, "", err
	}
	c, err := Plan(ctx, o, m, a)
	if err != nil {
		return m, nil, "", err
	}
	ans, err := Do(ctx, o, c)
	return m, c, ans, err
}

func TestRunPodStopAndTerminate(t *testing.T) {
	const key = "rpa_SECRETKEY1234567890"
	for _, tc := range []struct {
		a            Action
		method, path string
	}{{Stop, "POST", "/pods/pod123/stop"}, {Destroy, "DELETE", "/pods/pod123"}} {
		f := newFake(t, map[string]func(*http.Request) (int, string){tc.method + " " + tc.path: answer(200, `{"id":"pod123"}`)})
		o := opts(t, map[string]string{"runpod": f.URL}, map[string]string{"RUNPOD_POD_ID": "pod123", "RUNPOD_API_KEY": key})
		m, c, ans, err := release(t, o, tc.a)
		if err != nil {
			t.Fatalf("%s: %v", tc.a, err)
		}
		calls := f.calls()
		if m.Provider != "runpod" || len(calls) != 1 || calls[0].Method != tc.method || calls[0].Path != tc.path || calls[0].Header.Get("Authorization") != "Bearer "+key || calls[0].Query != "" {
			t.Fatalf("%s: %+v", tc.a, calls)
		}
		if strings.Contains(c.String(), key) || !strings.Contains(c.String(), "rpa_****") || strings.Contains(ans, key) {
			t.Fatalf("the key shows: %q / %q", c, ans)
		}
	}
}

func TestVastStopDestroyAndRefusal(t *testing.T) {
	const key = "vastkey-0123456789abcdef"
	f := newFake(t, map[string]func(*http.Request) (int, string){
		"PUT /instances/4242/":    answer(200, `{"success": true}`),
		"DELETE /instances/4242/": answer(200, `{"success": false, "error": "no_such_instance", "msg": "gone"}`),
	})
	vars := map[string]string{"CONTAINER_ID": "4242", "CONTAINER_API_KEY": key, "VAST_CONTAINERLABEL": "C.4242"}
	o := opts(t, map[string]string{"vast": f.URL}, vars)
	if _, _, _, err := release(t, o, Stop); err != nil {
		t.Fatal(err)
	}
	c := f.calls()
	if len(c) != 1 || c[0].Body != `{"state":"stopped"}` || c[0].Header.Get("Authorization") != "Bearer "+key {
		t.Fatalf("%+v", c)
	}
	// A 200 that says success: false is a refusal, said, not retried.
	_, _, _, err := release(t, o, Destroy)
	if err == nil || !strings.Contains(err.Error(), "no_such_instance") || len(f.calls()) != 2 {
		t.Fatalf("destroy refused: %v, %d calls", err, len(f.calls()))
	}
	// A label naming another instance: the environment is not this one's.
	vars["VAST_CONTAINERLABEL"] = "C.999"
	if _, _, _, err := release(t, o, Stop); err == nil || !strings.Contains(err.Error(), "different instances") || len(f.calls()) != 2 {
		t.Fatalf("mismatch: %v, %d calls", err, len(f.calls()))
	}
}

func TestRetriesOnlyWithoutAnAnswer(t *testing.T) {
	n := 0
	f := newFake(t, map[string]func(*http.Request) (int, string){
		"POST /pods/p1/stop": func(*http.Request) (int, string) {
			if n++; n == 1 {
				return 503, "busy"
			}
			return 200, "ok"
		},
		"POST /pods/p2/stop": answer(403, `{"error":"forbidden"}`),
	})
	o := opts(t, map[string]string{"runpod": f.URL}, map[string]string{"RUNPOD_POD_ID": "p1", "RUNPOD_API_KEY": "k-123456789"})
	if _, _, _, err := release(t, o, Stop); err != nil || len(f.calls()) != 2 {
		t.Fatalf("503 then 200: %v, %d calls", err, len(f.calls()))
	}
	o.Getenv = env(map[string]string{"RUNPOD_POD_ID": "p2", "RUNPOD_API_KEY": "k-123456789"})
	_, _, _, err := release(t, o, Stop)
	if err == nil || !strings.Contains(err.Error(), "HTTP 403") || !strings.Contains(err.Error(), "write access") || len(f.calls()) != 3 {
		t.Fatalf("403: %v, %d calls", err, len(f.calls()))
	}
}

func TestAWSSignedStopWithTheInstanceRole(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	imds := newFake(t, map[string]func(*http.Request) (int, string){
		"PUT /latest/api/token": func(r *http.Request) (int, string) {
			if r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds") == "" {
				return 400, ""
			}
			return 200, "TOKEN"
		},
		"GET /latest/meta-data/instance-id":                           answer(200, "i-0123456789abcdef0"),
		"GET /latest/meta-data/placement/region":                      answer(200, "eu-west-1"),
		"GET /latest/meta-data/iam/security-credentials/":             answer(200, "trainer-role"),
		"GET /latest/meta-data/iam/security-credentials/trainer-role": answer(200, `{"AccessKeyId":"ASIAEXAMPLE","SecretAccessKey":"`+secret+`","Token":"SESSIONTOKEN"}`),
	})
	ec2 := newFake(t, map[string]func(*http.Request) (int, string){"POST /": answer(200, "<StopInstancesResponse/>")})
	o := opts(t, map[string]string{"aws-metadata": imds.URL, "aws": ec2.URL}, nil)
	m, c, _, err := release(t, o, Stop)
	if err != nil {
		t.Fatal(err)
	}
	calls := ec2.calls()
	if m.ID != "i-0123456789abcdef0" || len(calls) != 1 {
		t.Fatalf("%v %+v", m, calls)
	}
	got := calls[0]
	if got.Body != "Action=StopInstances&InstanceId.1=i-0123456789abcdef0&Version=2016-11-15" ||
		!strings.HasPrefix(got.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/") ||
		!strings.Contains(got.Header.Get("Authorization"), "/eu-west-1/ec2/aws4_request") || got.Header.Get("X-Amz-Security-Token") != "SESSIONTOKEN" {
		t.Fatalf("%+v", got)
	}
	if strings.Contains(c.String(), secret) || strings.Contains(c.String(), "SESSIONTOKEN") {
		t.Fatal(c)
	}
	// A role without the right: said, with what to grant.
	deny := newFake(t, map[string]func(*http.Request) (int, string){"POST /": answer(403, "<Code>UnauthorizedOperation</Code>")})
	o.Endpoints["aws"] = deny.URL
	if _, _, _, err := release(t, o, Destroy); err == nil || !strings.Contains(err.Error(), "ec2:TerminateInstances") || len(deny.calls()) != 1 {
		t.Fatalf("%v", err)
	}
}

func TestGCPStopAndDelete(t *testing.T) {
	md := newFake(t, map[string]func(*http.Request) (int, string){
		"GET /computeMetadata/v1/instance/id":                             answer(200, "4567"),
		"GET /computeMetadata/v1/instance/name":                           answer(200, "trainer-1"),
		"GET /computeMetadata/v1/instance/zone":                           answer(200, "projects/12345/zones/us-central1-a"),
		"GET /computeMetadata/v1/project/project-id":                      answer(200, "my-proj"),
		"GET /computeMetadata/v1/instance/service-accounts/default/token": answer(200, `{"access_token":"ya29.SECRET-TOKEN","expires_in":3599}`),
	})
	api := newFake(t, map[string]func(*http.Request) (int, string){
		"POST /projects/my-proj/zones/us-central1-a/instances/trainer-1/stop": answer(200, `{"kind":"compute#operation"}`),
		"DELETE /projects/my-proj/zones/us-central1-a/instances/trainer-1":    answer(200, `{"kind":"compute#operation"}`),
	})
	o := opts(t, map[string]string{"gcp-metadata": md.URL, "gcp": api.URL}, nil)
	for _, a := range []Action{Stop, Destroy} {
		if _, c, _, err := release(t, o, a); err != nil || strings.Contains(c.String(), "SECRET") {
			t.Fatal(a, err, c)
		}
	}
	calls := api.calls()
	if len(calls) != 2 || calls[0].Header.Get("Authorization") != "Bearer ya29.SECRET-TOKEN" || calls[1].Method != "DELETE" {
		t.Fatalf("%+v", calls)
	}
	for _, s := range md.got {
		if s.Header.Get("Metadata-Flavor") != "Google" {
			t.Fatalf("metadata asked without Metadata-Flavor: %+v", s)
		}
	}
}

func TestAzureDeallocatesNeverPowersOff(t *testing.T) {
	imds := newFake(t, map[string]func(*http.Request) (int, string){
		"GET /metadata/instance/compute":      answer(200, `{"subscriptionId":"sub-1","resourceGroupName":"rg-gpu","name":"vm-a100","vmId":"02aab8a4-74ef-476e-8182-f6d2ba4166a6"}`),
		"GET /metadata/identity/oauth2/token": answer(200, `{"access_token":"eyJ0eXAi.SECRET"}`),
	})
	arm := newFake(t, map[string]func(*http.Request) (int, string){
		"POST /subscriptions/sub-1/resourceGroups/rg-gpu/providers/Microsoft.Compute/virtualMachines/vm-a100/deallocate": answer(202, ""),
		"DELETE /subscriptions/sub-1/resourceGroups/rg-gpu/providers/Microsoft.Compute/virtualMachines/vm-a100":          answer(202, ""),
	})
	o := opts(t, map[string]string{"azure-metadata": imds.URL, "azure": arm.URL}, nil)
	for _, a := range []Action{Stop, Destroy} {
		if _, _, _, err := release(t, o, a); err != nil {
			t.Fatal(a, err)
		}
	}
	calls := arm.calls()
	if len(calls) != 2 || !strings.HasSuffix(calls[0].Path, "/deallocate") || calls[0].Query != "api-version="+azureAPI ||
		calls[0].Header.Get("Authorization") != "Bearer eyJ0eXAi.SECRET" || calls[1].Method != "DELETE" {
		t.Fatalf("%+v", calls)
	}
	for _, s := range imds.got {
		if s.Header.Get("Metadata") != "true" {
			t.Fatalf("IMDS asked without Metadata: true: %+v", s)
		}
		if strings.HasPrefix(s.Path, "/metadata/identity") && !strings.Contains(s.Query, "resource=https%3A%2F%2Fmanagement.azure.com%2F") {
			t.Fatalf("token for the wrong resource: %+v", s)
		}
	}
}

func TestLambdaTerminatesItsOwnInstanceOnly(t *testing.T) {
	const key = "secret_lambda_0123456789"
	// The other instance shares this machine's private address, which
	// says nothing; this one has its public one.
	list := `{"data":[{"id":"other","ip":"198.51.100.4","private_ip":"10.0.0.9"},{"id":"0920582c7ff041399e34823a0be62549","ip":"203.0.113.7"}]}`
	f := newFake(t, map[string]func(*http.Request) (int, string){
		"GET /instances":                      answer(200, list),
		"POST /instance-operations/terminate": answer(200, `{"data":{"terminated_instances":[]}}`),
	})
	o := opts(t, map[string]string{"lambda": f.URL}, map[string]string{"LAMBDA_API_KEY": key})
	if _, _, _, err := release(t, o, Destroy); err != nil {
		t.Fatal(err)
	}
	c := f.calls()
	if len(c) != 1 || c[0].Body != `{"instance_ids":["0920582c7ff041399e34823a0be62549"]}` {
		t.Fatalf("%+v", c)
	}
	// Lambda has no stop: refused, with what to do, nothing sent.
	var u *Unsupported
	if _, _, _, err := release(t, o, Stop); !errors.As(err, &u) || len(f.calls()) != 1 {
		t.Fatalf("%v", err)
	}
	// Two instances at this machine's public addresses: refused, not
	// guessed; --id names one.
	o.Addrs = func() []string { return []string{"198.51.100.4", "203.0.113.7"} }
	if _, err := Find(context.Background(), o); err == nil || !strings.Contains(err.Error(), "refusing to guess") {
		t.Fatal(err)
	}
	o.ID = "other"
	if m, err := Find(context.Background(), o); err != nil || m.ID != "other" {
		t.Fatal(m, err)
	}
	o.ID = "nope"
	if _, err := Find(context.Background(), o); err == nil || !strings.Contains(err.Error(), "no instance nope") {
		t.Fatal(err)
	}
}

func TestFindRefusesTwoAndNamesWhatItLookedFor(t *testing.T) {
	gcpMD := newFake(t, map[string]func(*http.Request) (int, string){
		"GET /computeMetadata/v1/instance/id":        answer(200, "1"),
		"GET /computeMetadata/v1/instance/name":      answer(200, "n"),
		"GET /computeMetadata/v1/instance/zone":      answer(200, "projects/1/zones/z"),
		"GET /computeMetadata/v1/project/project-id": answer(200, "p"),
	})
	o := opts(t, map[string]string{"gcp-metadata": gcpMD.URL}, map[string]string{"RUNPOD_POD_ID": "pod1"})
	if _, err := Find(context.Background(), o); err == nil || !strings.Contains(err.Error(), "refusing to guess") {
		t.Fatalf("two providers: %v", err)
	}
	o.Provider = "runpod"
	if m, err := Find(context.Background(), o); err != nil || m.ID != "pod1" {
		t.Fatal(m, err)
	}
	var nf *NotFound
	_, err := Find(context.Background(), opts(t, nil, nil))
	if !errors.As(err, &nf) || len(nf.Looked) != len(Providers()) || !strings.Contains(err.Error(), "RUNPOD_POD_ID") || !strings.Contains(err.Error(), "IMDS") {
		t.Fatalf("%v", err)
	}
	// An id that would change the request's path is no id.
	for _, bad := range []string{"../admin", "a/b", "x?y", ""} {
		if validID(bad) {
			t.Errorf("%q taken as an id", bad)
		}
	}
	if _, err := Find(context.Background(), opts(t, nil, map[string]string{"RUNPOD_POD_ID": "../../v2/pods"})); err == nil {
		t.Fatal("a path taken as a pod id")
	}
}

func TestAutoDLSaysWhatToDoInTheConsole(t *testing.T) {
	o := opts(t, nil, map[string]string{"AutoDLContainerUUID": "abc-123"})
	var u *Unsupported
	if _, _, _, err := release(t, o, Stop); !errors.As(err, &u) || !strings.Contains(err.Error(), "关机") {
		t.Fatal(err)
	}
}

func TestParseEndpoints(t *testing.T) {
	if _, err := ParseEndpoints([]string{"runpod=http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"runpod", "nope=http://x", "vast=ftp://x", "aws=http://user:pw@127.0.0.1"} {
		if _, err := ParseEndpoints([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCosts(t *testing.T) {
	o := &catalog.Offer{ID: "runpod-a100", Currency: "USD", Storage: catalog.Storage{StoppedGBMonth: catalog.Known(0.2)},
		ReleaseAfterStopped: catalog.KnownDuration(15 * 24 * 60 * 60 * 1e9)}
	got := Costs(o, 150)
	if len(got) != 2 || !strings.Contains(got[0].String(), "150 GB at 0.2 USD/GB-month = 1.00 USD a day") || !strings.Contains(got[0].String(), "released by the platform after") {
		t.Fatal(got)
	}
	unknown := Costs(&catalog.Offer{ID: "x", Currency: "USD"}, 100)
	if !strings.Contains(unknown[0].String(), "unknown") {
		t.Fatal(unknown)
	}
}

// TestNoRedirectIsFollowed: a provider that answers with a redirect gets
// no second request, to itself or elsewhere, and the key goes nowhere
// else; the 3xx is a refusal.
func TestNoRedirectIsFollowed(t *testing.T) {
	other := newFake(t, map[string]func(*http.Request) (int, string){"POST /stop": answer(200, "ok")})
	for _, code := range []int{301, 302, 307, 308} {
		f := newFake(t, map[string]func(*http.Request) (int, string){"POST /pods/p1/stop": answer(code, "")})
		redirect := f.Server.Config.Handler
		f.Server.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", other.URL+"/stop")
			redirect.ServeHTTP(w, r)
		})
		o := opts(t, map[string]string{"runpod": f.URL}, map[string]string{"RUNPOD_POD_ID": "p1", "RUNPOD_API_KEY": "k-123456789"})
		_, _, _, err := release(t, o, Stop)
		if err == nil || len(f.calls()) != 1 || len(other.got) != 0 {
			t.Fatalf("%d: %v; %d requests here, %d elsewhere", code, err, len(f.calls()), len(other.got))
		}
	}
}
