// Package release stops the meter of the machine gpurent runs on: it
// finds which provider rents it, from inside (the environment a pod or
// container is given, or the cloud's metadata service), and asks that
// provider, through its own documented API, to stop or destroy this
// machine and no other. docs/release.md cites each provider's pages.
//
// One request is made per release, sent again (three tries at most, never
// in a loop) only where no answer came or the provider said 429 or 5xx: a
// stop or destroy of one id is idempotent, and a retry told the machine is
// gone takes the first try as done. Credentials go in headers, never in a
// URL, and are masked wherever a request or an answer is shown.
package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gpurent/gpurent/internal/endpoint"
	"github.com/gpurent/gpurent/internal/i18n"
)

// Action is what a release does to the machine.
type Action string

const (
	// Stop halts the machine: its disks stay, and keep billing.
	Stop Action = "stop"
	// Destroy ends the rental: nothing more is billed, and the disks are gone.
	Destroy Action = "destroy"
)

// ParseAction reads stop or destroy.
func ParseAction(s string) (Action, error) {
	switch a := Action(s); a {
	case Stop, Destroy:
		return a, nil
	}
	return "", i18n.Errorf("want stop or destroy, got %q", s)
}

// Endpoint names --endpoint NAME=URL takes, each with its default: the
// providers' APIs and the clouds' metadata services.
var defaults = map[string]string{
	"runpod":         "https://rest.runpod.io/v1",
	"vast":           "https://console.vast.ai/api/v0",
	"lambda":         "https://cloud.lambda.ai/api/v1",
	"aws":            "", // https://ec2.REGION.amazonaws.com, the region from the metadata
	"aws-metadata":   "http://169.254.169.254",
	"gcp":            "https://compute.googleapis.com/compute/v1",
	"gcp-metadata":   "http://metadata.google.internal",
	"azure":          "https://management.azure.com",
	"azure-metadata": "http://169.254.169.254",
}

// EndpointNames lists the names --endpoint takes, sorted.
func EndpointNames() []string {
	names := make([]string, 0, len(defaults))
	for n := range defaults {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ParseEndpoints reads --endpoint NAME=URL values into a map, refusing an
// unknown name or a URL that is not http(s).
func ParseEndpoints(vals []string) (map[string]string, error) {
	return endpoint.Parse(vals, EndpointNames())
}

// Options say where to look and how to ask.
type Options struct {
	// Provider, when set, is the only one looked for (a Providers name).
	Provider string
	// Endpoints override the defaults by name (ParseEndpoints).
	Endpoints map[string]string
	// Getenv reads the environment; nil: os.Getenv.
	Getenv func(string) string
	// ID, when set, is the provider's id of this machine as the user
	// states it: Find refuses a machine of another id, and Lambda, which
	// tells an instance nothing of itself, takes the instance so named.
	ID string
	// Addrs are this machine's IP addresses (Lambda finds its instance by
	// its public one); nil: the interfaces'.
	Addrs func() []string
	// Client sends every request; nil: the metadata services are asked
	// directly (never through HTTP(S)_PROXY, which cannot reach a
	// link-local address), the APIs as the environment's proxy says.
	Client *http.Client
}

// client is the one to ask a metadata service (meta) or an API with.
//
// No redirect is followed: a second request (a 307 re-sends the body) is
// a second stop, and the credential must go only where it was meant to.
func (o *Options) client(meta bool) *http.Client {
	c := &http.Client{Timeout: 30 * time.Second}
	if o.Client != nil {
		*c = *o.Client
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if meta {
			t.Proxy = nil
			c.Timeout = 5 * time.Second
		}
		c.Transport = t
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

func (o *Options) getenv(k string) string {
	if o.Getenv == nil {
		return os.Getenv(k)
	}
	return o.Getenv(k)
}

func (o *Options) endpoint(name string) string {
	if u := o.Endpoints[name]; u != "" {
		return u
	}
	return defaults[name]
}

// Providers lists the providers gpurent can release a machine of, in the
// order they are looked for.
func Providers() []string {
	return []string{"runpod", "vast", "lambda", "autodl", "aws", "gcp", "azure"}
}

// Machine is this machine as its provider knows it.
type Machine struct {
	Provider string // a Providers name
	Label    string // the provider as people write it: "RunPod"
	ID       string // the provider's id of this machine
	// Keeps says what a stop keeps billing, and what destroy loses, from
	// the provider's pages (docs/release.md).
	Keeps i18n.Text
	// Where is where the provider files it: the region, project and
	// zone, resource group, as its API wants them in the URL.
	Where map[string]string
	p     provider
}

func (m *Machine) String() string { return fmt.Sprintf("%s %s", m.Label, m.ID) }

// provider is one provider's way of finding this machine and of stopping
// it.
type provider interface {
	// find returns this machine, or nil when it is not this provider's.
	find(ctx context.Context, o *Options) (*Machine, error)
	// call is the one request that does a to m; an *Unsupported error
	// when the provider has no documented way.
	call(ctx context.Context, o *Options, m *Machine, a Action) (*Call, error)
}

func providerFor(name string) provider {
	switch name {
	case "runpod":
		return runpod{}
	case "vast":
		return vast{}
	case "lambda":
		return lambda{}
	case "autodl":
		return autodl{}
	case "aws":
		return aws{}
	case "gcp":
		return gcp{}
	case "azure":
		return azure{}
	}
	return nil
}

// NotFound is Find's answer on a machine no provider claims.
type NotFound struct{ Looked []string }

func (e *NotFound) Error() string {
	return "no provider found: looked for " + strings.Join(e.Looked, "; ")
}

// looked says what each provider is recognised by, for NotFound.
var looked = map[string]string{
	"runpod": "RunPod (RUNPOD_POD_ID)",
	"vast":   "Vast.ai (CONTAINER_ID)",
	"lambda": "Lambda (LAMBDA_API_KEY and an instance with this machine's address)",
	"autodl": "AutoDL (AutoDLContainerUUID)",
	"aws":    "AWS (IMDSv2 at aws-metadata)",
	"gcp":    "GCP (the metadata server at gcp-metadata)",
	"azure":  "Azure (IMDS at azure-metadata)",
}

// Find tells which provider rents this machine and its id there. Two
// providers that both claim it are refused: the request would go to
// whichever was asked first, and a wrong guess stops another machine.
func Find(ctx context.Context, o Options) (*Machine, error) {
	names := Providers()
	if o.Provider != "" {
		if providerFor(o.Provider) == nil {
			return nil, i18n.Errorf("provider %q: want one of %s", o.Provider, strings.Join(Providers(), ", "))
		}
		names = []string{o.Provider}
	}
	type answer struct {
		m   *Machine
		err error
	}
	answers := make([]answer, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			p := providerFor(n)
			m, err := p.find(ctx, &o)
			if m != nil {
				m.Provider, m.p = n, p
			}
			answers[i] = answer{m, err}
		}()
	}
	wg.Wait()
	var found []*Machine
	var errs []error
	var what []string
	for i, a := range answers {
		what = append(what, looked[names[i]])
		if a.err != nil {
			errs = append(errs, i18n.Errorf("%s: %w", names[i], a.err))
		}
		if a.m != nil {
			found = append(found, a.m)
		}
	}
	switch {
	case len(found) == 1 && len(errs) > 0 && o.Provider == "":
		// A provider that answered oddly may be the real one: the
		// request would go to the wrong one.
		return nil, i18n.Errorf("%s claims this machine, but %w: refusing to guess; name the provider with --provider", found[0], errors.Join(errs...))
	case len(found) == 1 && o.ID != "" && found[0].ID != o.ID:
		return nil, i18n.Errorf("this machine is %s, not %s (--id)", found[0], o.ID)
	case len(found) > 1:
		var ms []string
		for _, m := range found {
			ms = append(ms, m.String())
		}
		return nil, i18n.Errorf("this machine looks like %s: refusing to guess which to release; name it with --provider", strings.Join(ms, " and "))
	case len(found) == 1:
		return found[0], nil
	case len(errs) > 0:
		return nil, errors.Join(errs...)
	}
	return nil, &NotFound{Looked: what}
}

// Plan is the one request that would carry out a on m.
func Plan(ctx context.Context, o Options, m *Machine, a Action) (*Call, error) {
	return m.p.call(ctx, &o, m, a)
}

// Unsupported is a provider without a documented way to do an action
// from inside the machine: Do says what to do in its console instead.
type Unsupported struct {
	Label  string
	Action Action
	Do     string
}

func (e *Unsupported) Error() string {
	return fmt.Sprintf("%s has no documented way to %s a machine from inside it: %s", e.Label, e.Action, e.Do)
}

// Call is one request to a provider: what
// --dry-run shows and what a release sends.
type Call struct {
	Method, URL string
	Header      http.Header
	Body        []byte
	// secrets are the values masked wherever the call is shown.
	secrets []string
	// auth adds the credential just before each try: a token fetched
	// from the metadata service, or AWS's signature. authSays is how
	// --dry-run shows it.
	auth     func(r *http.Request, body []byte) error
	authSays string
	// accepted reads the answer: nil when the provider took the request.
	accepted func(code int, body []byte) error
}

// String is the call as --dry-run shows it: method, URL, headers and
// body, each credential masked.
func (c *Call) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", c.Method, c.URL)
	keys := make([]string, 0, len(c.Header))
	for k := range c.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "\n%s: %s", k, strings.Join(c.Header[k], ", "))
	}
	if c.authSays != "" {
		b.WriteString("\nAuthorization: " + c.authSays)
	}
	if len(c.Body) > 0 {
		fmt.Fprintf(&b, "\n\n%s", c.Body)
	}
	return c.mask(b.String())
}

// mask replaces each secret in s with its first four characters and
// ****, in each form a provider may echo it in: as sent, URL-encoded,
// JSON-escaped.
func (c *Call) mask(s string) string {
	seen := map[string]bool{}
	for _, v := range c.secrets {
		j, _ := json.Marshal(v)
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(v, "/", `\/`), string(j[1 : len(j)-1])} {
			if form == "" || seen[form] {
				continue // an unset session token is no secret
			}
			seen[form] = true
			short := "****"
			if len(form) >= 8 {
				short = form[:4] + "****"
			}
			s = strings.ReplaceAll(s, form, short)
		}
	}
	return s
}

// tries is how often a request whose answer never came is sent: a stop
// or destroy of one id is idempotent, but a provider that answers with an
// error is told once and the error shown.
const tries = 3

// Do sends c and returns the provider's answer in a line. A request is
// sent again only when no answer came (the network failed, or the
// provider said 429 or 5xx), at most tries times in all; a retry told
// the machine is not there (404, 409, 410) after a try that got no
// answer is taken as that try's success, and said so.
func Do(ctx context.Context, o Options, c *Call) (string, error) {
	client := o.client(false)
	var last error
	unanswered := false // the last try got no answer at all
	for i := range tries {
		if i > 0 {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(time.Duration(i) * 2 * time.Second):
			}
		}
		code, body, err := c.send(ctx, client)
		var local *localError
		if errors.As(err, &local) {
			return "", errors.New(c.mask(err.Error())) // nothing was sent
		}
		if err != nil {
			last, unanswered = errors.New(c.mask(err.Error())), true
			continue
		}
		// Masked before it is cut: a cut secret is no longer found.
		body = []byte(c.mask(string(body)))
		if code == http.StatusTooManyRequests || code >= 500 {
			last, unanswered = i18n.Errorf("HTTP %d: %s", code, snippet(body)), false
			continue
		}
		if unanswered && (code == http.StatusNotFound || code == http.StatusConflict || code == http.StatusGone) {
			return fmt.Sprintf("HTTP %d %s on the retry: the try before, which got no answer, most likely did it; check the console", code, snippet(body)), nil
		}
		if err := c.accepted(code, body); err != nil {
			return "", errors.New(c.mask(err.Error()))
		}
		return fmt.Sprintf("HTTP %d %s", code, snippet(body)), nil
	}
	return "", i18n.Errorf("no answer after %d tries: %w", tries, last)
}

// localError is a request that could not be made (a credential that
// cannot be had, or cannot be sent): never retried, since nothing was sent.
type localError struct{ err error }

func (e *localError) Error() string { return e.err.Error() }
func (e *localError) Unwrap() error { return e.err }

func (c *Call) send(ctx context.Context, client *http.Client) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, c.Method, c.URL, strings.NewReader(string(c.Body)))
	if err != nil {
		return 0, nil, &localError{err}
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	if c.auth != nil {
		if err := c.auth(req, c.Body); err != nil {
			return 0, nil, &localError{err}
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, body, err
}

// snippet is the start of an answer, on one line, for a message; it is
// cut on a character's boundary.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		cut := 300
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// clean says a credential can go in a header as it is: no space, no
// control character.
func clean(v string) bool {
	return !strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f })
}

// credential reads a key from the environment: a value with a space or a
// control character (a line ending from a Windows .env file) is refused
// by name, not sent.
func credential(o *Options, name string) (string, error) {
	v := o.getenv(name)
	if !clean(v) {
		return "", i18n.Errorf("%s holds a space or a control character (a line ending from a Windows .env file?): fix it and run again", name)
	}
	return v, nil
}

// get fetches one small document (a metadata value, a token, a list).
func get(ctx context.Context, c *http.Client, method, u string, h map[string]string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// okStatus accepts a 2xx answer; for anything else, hint says what to do.
func okStatus(hint func(code int, body []byte) string) func(int, []byte) error {
	return func(code int, body []byte) error {
		if code >= 200 && code < 300 {
			return nil
		}
		h := ""
		if hint != nil {
			if h = hint(code, body); h != "" {
				h = "; " + h
			}
		}
		return i18n.Errorf("refused: HTTP %d %s%s", code, snippet(body), h)
	}
}
