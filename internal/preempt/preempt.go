// Package preempt watches the clouds' instance metadata services for the
// notice that a spot (preemptible) machine, or one due for maintenance, is
// about to go: AWS, GCP, Azure, Alibaba Cloud and Tencent Cloud, each
// polled as its documentation asks. gpurent run hands each notice to the
// supervisor, which has the command checkpoint before the machine goes.
package preempt

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Notice is a preemption warning, or another event that will end the
// command with its machine.
type Notice struct {
	Cloud  string
	Detail i18n.Text
	Left   time.Duration // time left before the machine goes
	// Event names what comes when it is not a preemption: "Reboot",
	// "Redeploy", "Terminate" (Azure), "Host maintenance" (GCP).
	Event string
	// Approve, when set, tells the cloud that the machine may go now,
	// once the newest checkpoint is safe.
	Approve func(ctx context.Context) error
	// Advisory: the machine is at risk but not going yet (AWS's rebalance
	// recommendation, a hibernation, GCP's maintenance an hour ahead). A
	// checkpoint is asked for; the command trains on.
	Advisory bool
}

// Preempter watches one cloud's metadata service for preemption notices.
type Preempter interface {
	Watch(ctx context.Context) <-chan Notice
}

// Metadata endpoints, from each cloud's instance metadata documentation. Tests point
// them at fake servers on 127.0.0.1.
type Endpoints struct {
	AWS     string // http://169.254.169.254
	GCP     string // http://metadata.google.internal
	Azure   string // http://169.254.169.254
	Alibaba string // http://100.100.100.200
	Tencent string // http://metadata.tencentyun.com
}

// DefaultEndpoints are the clouds' link-local metadata services.
func DefaultEndpoints() Endpoints {
	return Endpoints{AWS: "http://169.254.169.254", GCP: "http://metadata.google.internal", Azure: "http://169.254.169.254",
		Alibaba: "http://100.100.100.200", Tencent: "http://metadata.tencentyun.com"}
}

// metadataClient talks to a metadata service directly, never through
// HTTP_PROXY or HTTPS_PROXY: a rented box often has one set for downloads,
// and a proxy cannot reach the link-local address (or answers for it).
func metadataClient(timeout time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return &http.Client{Transport: t, Timeout: timeout}
}

// fetch sends one request to a metadata service with the headers h and
// returns its status and at most limit bytes of its body.
func fetch(ctx context.Context, c *http.Client, method, url string, h map[string]string, limit int64) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
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
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	return resp.StatusCode, b, err
}

// poller polls one cloud every interval and sends each advisory and the
// first notice.
type poller struct {
	cloud    string
	interval time.Duration
	check    func(ctx context.Context, c *http.Client) (*Notice, error)
}

func (p *poller) Watch(ctx context.Context) <-chan Notice {
	ch := make(chan Notice, 1)
	client := metadataClient(2 * time.Second)
	go func() {
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			if n, err := p.check(ctx, client); err == nil && n != nil {
				n.Cloud = p.cloud
				select {
				case ch <- *n:
				case <-ctx.Done():
					return
				}
				if !n.Advisory {
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return ch
}

// AWS polls IMDSv2 every 5 s, as AWS recommends: a PUT for a token, then
// spot/instance-action with it (404: no notice; the notice comes two
// minutes before the stop or termination; a hibernation starts at once),
// then events/recommendations/rebalance (404: none), AWS's word that this
// Spot instance is at elevated risk. A rebalance recommendation and a
// hibernation are advice: the command is asked for a checkpoint and goes
// on.
func AWS(base string, interval time.Duration) Preempter {
	a := &aws{base: base}
	return &poller{cloud: "aws", interval: or(interval, 5*time.Second), check: a.check}
}

type aws struct {
	base      string
	rebalance string // the noticeTime of the recommendation already passed on
	hibernate bool   // a hibernation notice was passed on
}

func (a *aws) get(ctx context.Context, c *http.Client, token, path string, v any) (found bool, err error) {
	code, b, err := fetch(ctx, c, http.MethodGet, a.base+path, map[string]string{"X-aws-ec2-metadata-token": token}, 4096)
	if err != nil || code == http.StatusNotFound {
		return false, err
	}
	if code != http.StatusOK || json.Unmarshal(b, v) != nil {
		return false, i18n.Errorf("%s: HTTP %d", path, code)
	}
	return true, nil
}

func (a *aws) check(ctx context.Context, c *http.Client) (*Notice, error) {
	code, token, err := fetch(ctx, c, http.MethodPut, a.base+"/latest/api/token", map[string]string{"X-aws-ec2-metadata-token-ttl-seconds": "21600"}, 4096)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, i18n.Errorf("IMDS token: HTTP %d", code)
	}
	var action struct {
		Action string    `json:"action"`
		Time   time.Time `json:"time"`
	}
	if found, err := a.get(ctx, c, string(token), "/latest/meta-data/spot/instance-action", &action); err != nil || found {
		if err != nil {
			return nil, err
		}
		if action.Action == "hibernate" {
			// Hibernation starts at once, with no two minutes, and keeps
			// memory: the command resumes with the instance. Stopping it
			// would lose what hibernation keeps; a checkpoint is asked for
			// in case the instance does not come back.
			if a.hibernate {
				return nil, nil
			}
			a.hibernate = true
			return &Notice{Detail: i18n.Textf("hibernate at %s (memory is kept: the command resumes with the instance)", action.Time.Format(time.RFC3339)), Advisory: true}, nil
		}
		left := time.Until(action.Time)
		if left <= 0 || left > 2*time.Minute {
			left = 2 * time.Minute
		}
		return &Notice{Detail: i18n.Textf("%s at %s", action.Action, action.Time.Format(time.RFC3339)), Left: left}, nil
	}
	var rec struct {
		NoticeTime string `json:"noticeTime"`
	}
	if found, err := a.get(ctx, c, string(token), "/latest/meta-data/events/recommendations/rebalance", &rec); err != nil || !found || rec.NoticeTime == a.rebalance {
		return nil, err
	}
	a.rebalance = rec.NoticeTime
	return &Notice{Detail: i18n.Textf("rebalance recommendation at %s", rec.NoticeTime), Advisory: true}, nil
}

// GCP polls, once a second, instance/preempted (Metadata-Flavor: Google),
// TRUE once the ACPI soft-off has begun, 30 s before the hard stop for
// Spot VMs; and instance/maintenance-event. A VM with a GPU cannot be live
// migrated: host maintenance stops it, about every two weeks to a month,
// and the key reads TERMINATE_ON_HOST_MAINTENANCE an hour ahead (Google's
// "Handling GPU host maintenance events"). That asks the command for a
// checkpoint at once and lets it train on; two minutes before the hour is
// out it is a notice. Reading the key also keeps the warning coming:
// Google skips it for a VM that never asked.
func GCP(base string, interval time.Duration) Preempter {
	g := &gcp{base: base, maintenance: time.Hour}
	return &poller{cloud: "gcp", interval: or(interval, time.Second), check: g.check}
}

type gcp struct {
	base        string
	maintenance time.Duration // notice a GPU VM gets before host maintenance stops it
	since       time.Time     // when TERMINATE_ON_HOST_MAINTENANCE was first read; zero when not
}

func (g *gcp) get(ctx context.Context, c *http.Client, key string) (string, error) {
	code, b, err := fetch(ctx, c, http.MethodGet, g.base+"/computeMetadata/v1/instance/"+key, map[string]string{"Metadata-Flavor": "Google"}, 256)
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", i18n.Errorf("instance/%s: HTTP %d", key, code)
	}
	return strings.TrimSpace(string(b)), nil
}

func (g *gcp) check(ctx context.Context, c *http.Client) (*Notice, error) {
	v, err := g.get(ctx, c, "preempted")
	if err != nil {
		return nil, err
	}
	if v == "TRUE" {
		return &Notice{Detail: i18n.Plain("instance/preempted is TRUE"), Left: 30 * time.Second}, nil
	}
	if v, err = g.get(ctx, c, "maintenance-event"); err != nil {
		return nil, err
	}
	if v != "TERMINATE_ON_HOST_MAINTENANCE" {
		g.since = time.Time{} // NONE: done, or called off
		return nil, nil
	}
	now := time.Now()
	if g.since.IsZero() {
		g.since = now
		return &Notice{Detail: i18n.Textf("host maintenance will stop this VM in about %v (instance/maintenance-event is TERMINATE_ON_HOST_MAINTENANCE)", g.maintenance), Advisory: true}, nil
	}
	if left := g.since.Add(g.maintenance).Sub(now); left <= 2*time.Minute {
		return &Notice{Detail: i18n.Textf("host maintenance (TERMINATE_ON_HOST_MAINTENANCE since %s)", g.since.UTC().Format(time.RFC3339)),
			Left: max(left, 30*time.Second), Event: "Host maintenance"}, nil
	}
	return nil, nil
}

// Azure polls Scheduled Events once a second (Metadata: true), as
// Microsoft recommends, for an event that ends this VM or the command on
// it: Preempt (a Spot VM deleted, at least 30 s ahead), Terminate (deleted,
// 5 to 15 min ahead), Reboot (memory lost) and Redeploy (moved to another
// host, ephemeral disks lost), 10 to 15 min ahead. Freeze keeps memory and
// open files, so it is let be. Events reach every VM of an availability set
// or a scale set's placement group, so only those whose Resources name this
// VM (IMDS compute/name) count; while the name is unknown, every event does:
// a checkpoint too many costs seconds, one too few the work since the last.
// An event far ahead fires when NotBefore is two minutes away, the notice
// AWS gives: training goes on until then.
func Azure(base string, interval time.Duration) Preempter {
	a := &azure{base: base}
	return &poller{cloud: "azure", interval: or(interval, time.Second), check: a.check}
}

// azureLead is how long before an Azure event's NotBefore gpurent acts.
const azureLead = 2 * time.Minute

type azure struct {
	base    string
	name    string // this VM's name, once IMDS gave it
	enabled bool   // Scheduled Events has answered once
}

// azureFirstCall bounds the first request for Scheduled Events.
const azureFirstCall = 130 * time.Second

// azureEvent is one entry of the Scheduled Events document
// (Azure's Scheduled Events documentation).
type azureEvent struct {
	EventID     string   `json:"EventId"`
	EventType   string   `json:"EventType"`
	Resources   []string `json:"Resources"`
	EventStatus string   `json:"EventStatus"`
	NotBefore   string   `json:"NotBefore"`
	EventSource string   `json:"EventSource"`
}

func (a *azure) get(ctx context.Context, c *http.Client, path string, limit int64) (int, []byte, error) {
	return fetch(ctx, c, http.MethodGet, a.base+path, map[string]string{"Metadata": "true"}, limit)
}

func (a *azure) check(ctx context.Context, c *http.Client) (*Notice, error) {
	if a.name == "" {
		if code, b, err := a.get(ctx, c, "/metadata/instance/compute/name?api-version=2021-02-01&format=text", 1024); err == nil && code == http.StatusOK {
			a.name = strings.TrimSpace(string(b))
		}
	}
	if !a.enabled {
		// The service starts on the first request for events, and that
		// answer can take up to two minutes (Microsoft's Scheduled Events
		// page): wait it out once rather than time out every second.
		c = metadataClient(azureFirstCall)
	}
	code, b, err := a.get(ctx, c, "/metadata/scheduledevents?api-version=2020-07-01", 1<<20)
	if err != nil {
		return nil, err
	}
	a.enabled = true
	var doc struct {
		Events []azureEvent `json:"Events"`
	}
	if code != http.StatusOK || json.Unmarshal(b, &doc) != nil {
		return nil, i18n.Errorf("scheduled events: HTTP %d", code)
	}
	for _, e := range doc.Events {
		if n := a.notice(e, time.Now()); n != nil {
			return n, nil
		}
	}
	return nil, nil
}

// notice is what event e means for this VM at now: nil when it is another
// VM's, harmless, or still more than azureLead away.
func (a *azure) notice(e azureEvent, now time.Time) *Notice {
	switch e.EventType {
	case "Preempt", "Terminate", "Reboot", "Redeploy":
	default: // Freeze, and types newer than this code
		return nil
	}
	ours := a.name == "" || len(e.Resources) == 0
	for _, r := range e.Resources {
		ours = ours || strings.EqualFold(r, a.name)
	}
	if !ours {
		return nil
	}
	// NotBefore is blank once the event has started; a hardware failure
	// skips Scheduled and starts at once.
	left := time.Duration(0)
	if t, err := time.Parse(time.RFC1123, e.NotBefore); err == nil && e.EventStatus != "Started" {
		left = t.Sub(now)
		if left > azureLead {
			return nil
		}
		left = max(left, 0)
	}
	if left == 0 { // started, or due: what is left is unknown
		left = 10 * time.Second // a trainer that checkpoints fast still gets to
		if e.EventType == "Preempt" {
			left = 30 * time.Second // the minimum notice a Spot eviction gets
		}
	}
	n := &Notice{Detail: i18n.Textf("%s event %s (%s), not before %q", e.EventType, e.EventID, e.EventStatus, e.NotBefore), Left: left}
	if e.EventType != "Preempt" {
		n.Event = e.EventType
	}
	// Approving lets the event start now instead of at NotBefore. Only for
	// events that delete this VM whatever it does, and only when it is the
	// event's one resource: an approval applies to every VM the event
	// names, and the others may still be saving their work. A reboot or
	// redeploy is left to its time: other programs on the VM may be
	// preparing for it too.
	if (e.EventType == "Preempt" || e.EventType == "Terminate") && a.name != "" &&
		len(e.Resources) == 1 && strings.EqualFold(e.Resources[0], a.name) {
		id := e.EventID
		n.Approve = func(ctx context.Context) error { return a.approve(ctx, id) }
	}
	return n
}

// approve starts the event now (POST StartRequests): the VM goes, and its
// bill stops, once gpurent has saved what it can instead of at NotBefore.
func (a *azure) approve(ctx context.Context, id string) error {
	body, _ := json.Marshal(map[string][]map[string]string{"StartRequests": {{"EventId": id}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/metadata/scheduledevents?api-version=2020-07-01", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Metadata", "true")
	req.Header.Set("Content-Type", "application/json")
	resp, err := metadataClient(5 * time.Second).Do(req)
	if err != nil {
		return i18n.Errorf("approve scheduled event %s: %w", id, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return i18n.Errorf("approve scheduled event %s: HTTP %d", id, resp.StatusCode)
	}
	return nil
}

// Alibaba polls a spot (preemptible) ECS instance's
// instance/spot/termination-time every 5 s: 404 while the instance is
// available, then the UTC time it will be reclaimed ("Perceive
// interruption events and responses", Alibaba Cloud ECS). The token flow
// comes first, as the security-hardened mode requires; an instance that
// does not issue tokens is asked without one.
func Alibaba(base string, interval time.Duration) Preempter {
	return &poller{cloud: "alibaba", interval: or(interval, 5*time.Second), check: func(ctx context.Context, c *http.Client) (*Notice, error) {
		h := map[string]string{}
		code, tok, err := fetch(ctx, c, http.MethodPut, base+"/latest/api/token", map[string]string{"X-aliyun-ecs-metadata-token-ttl-seconds": "300"}, 4096)
		if err == nil && code == http.StatusOK {
			h["X-aliyun-ecs-metadata-token"] = string(tok)
		}
		return reclaimAt(ctx, c, base+"/latest/meta-data/instance/spot/termination-time", h, func(v string) (time.Time, error) {
			return time.Parse(time.RFC3339, v)
		})
	}}
}

// Tencent polls a spot CVM instance's spot/termination-time every 5 s: 404
// until the instance is to be reclaimed, then the time it will be, as
// "2018-08-18 12:05:33" in UTC+8 (Tencent Cloud, "Spot instance
// repossession").
func Tencent(base string, interval time.Duration) Preempter {
	utc8 := time.FixedZone("UTC+8", 8*3600)
	return &poller{cloud: "tencent", interval: or(interval, 5*time.Second), check: func(ctx context.Context, c *http.Client) (*Notice, error) {
		return reclaimAt(ctx, c, base+"/latest/meta-data/spot/termination-time", nil, func(v string) (time.Time, error) {
			return time.ParseInLocation(time.DateTime, v, utc8)
		})
	}}
}

// ShortestNotice is the least warning a cloud's preemption notice gives,
// 0 where no source states one (the clouds' preemption documents):
// AWS two minutes; GCP Spot 30 s (best effort; the 120 s notice is a
// preview one must ask for); Azure's Preempt event at least 30 s. Alibaba's
// and Tencent's termination-time keys carry their own time.
func ShortestNotice(cloud string) time.Duration {
	switch cloud {
	case "aws":
		return 2 * time.Minute
	case "gcp", "azure":
		return 30 * time.Second
	}
	return 0
}

// reclaimAt reads a termination-time key: nothing on 404, else a notice
// with the time left until the time it holds (30 s, the shortest notice a
// cloud gives, when the time is past or unreadable).
func reclaimAt(ctx context.Context, c *http.Client, url string, h map[string]string, parse func(string) (time.Time, error)) (*Notice, error) {
	code, b, err := fetch(ctx, c, http.MethodGet, url, h, 256)
	if err != nil || code == http.StatusNotFound {
		return nil, err
	}
	v := strings.TrimSpace(string(b))
	if code != http.StatusOK || v == "" {
		return nil, i18n.Errorf("termination-time: HTTP %d", code)
	}
	left := 30 * time.Second
	if t, err := parse(v); err == nil && time.Until(t) > 0 {
		left = time.Until(t)
	}
	return &Notice{Detail: i18n.Plain("spot/termination-time is " + v), Left: left}, nil
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// cloud is one cloud's metadata service: the request that tells it is
// there, and its poller.
type cloud struct {
	name, method, url string
	h                 map[string]string
	poller            func() Preempter
}

// clouds lists the clouds gpurent knows, in the order Auto prefers (AWS and
// Azure share an address: Azure's request is the one AWS cannot answer).
func clouds(ep Endpoints) []cloud {
	return []cloud{
		{"gcp", http.MethodGet, ep.GCP + "/computeMetadata/v1/instance/id", map[string]string{"Metadata-Flavor": "Google"}, func() Preempter { return GCP(ep.GCP, 0) }},
		{"azure", http.MethodGet, ep.Azure + "/metadata/instance?api-version=2021-02-01", map[string]string{"Metadata": "true"}, func() Preempter { return Azure(ep.Azure, 0) }},
		{"aws", http.MethodPut, ep.AWS + "/latest/api/token", map[string]string{"X-aws-ec2-metadata-token-ttl-seconds": "60"}, func() Preempter { return AWS(ep.AWS, 0) }},
		{"alibaba", http.MethodPut, ep.Alibaba + "/latest/api/token", map[string]string{"X-aliyun-ecs-metadata-token-ttl-seconds": "60"}, func() Preempter { return Alibaba(ep.Alibaba, 0) }},
		{"tencent", http.MethodGet, ep.Tencent + "/latest/meta-data/instance-id", nil, func() Preempter { return Tencent(ep.Tencent, 0) }},
	}
}

// answers sends cl's request, waiting half a second at most.
func (cl cloud) answers(ctx context.Context) bool {
	code, _, err := fetch(ctx, metadataClient(500*time.Millisecond), cl.method, cl.url, cl.h, 0)
	return err == nil && code == http.StatusOK
}

// Clouds are the names For and Answers know, in Auto's order.
func Clouds() []string {
	var out []string
	for _, cl := range clouds(Endpoints{}) {
		out = append(out, cl.name)
	}
	return out
}

// For returns the poller of the cloud named, nil for a name it does not
// know.
func For(name string, ep Endpoints) Preempter {
	for _, cl := range clouds(ep) {
		if cl.name == name {
			return cl.poller()
		}
	}
	return nil
}

// Answers reports whether the named cloud's metadata service answers
// (one request, half a second at most): a poller whose service never
// answers misses every notice, silently.
func Answers(ctx context.Context, name string, ep Endpoints) bool {
	for _, cl := range clouds(ep) {
		if cl.name == name {
			return cl.answers(ctx)
		}
	}
	return false
}

// Auto finds which cloud's metadata service answers (one request to each,
// all at once, so that off the clouds it costs half a second, not one per
// cloud) and returns its name and poller; "" and nil off the clouds.
func Auto(ctx context.Context, ep Endpoints) (string, Preempter) {
	cs := clouds(ep)
	answered := make([]bool, len(cs))
	var wg sync.WaitGroup
	for i, cl := range cs {
		wg.Go(func() { answered[i] = cl.answers(ctx) })
	}
	wg.Wait()
	for i, cl := range cs {
		if answered[i] {
			return cl.name, cl.poller()
		}
	}
	return "", nil
}
