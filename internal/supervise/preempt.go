package supervise

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Notice is a preemption warning.
type Notice struct {
	Cloud  string
	Detail string
	Left   time.Duration // time left before the machine goes
}

// Preempter watches one cloud's metadata service for preemption notices.
type Preempter interface {
	Watch(ctx context.Context) <-chan Notice
}

// Metadata endpoints (shared/reference/resume_security.md §1). Tests point
// them at fake servers on 127.0.0.1.
type Endpoints struct {
	AWS   string // http://169.254.169.254
	GCP   string // http://metadata.google.internal
	Azure string // http://169.254.169.254
}

// DefaultEndpoints are the clouds' link-local metadata services.
func DefaultEndpoints() Endpoints {
	return Endpoints{AWS: "http://169.254.169.254", GCP: "http://metadata.google.internal", Azure: "http://169.254.169.254"}
}

// poller polls one cloud every interval and sends the first notice.
type poller struct {
	cloud    string
	interval time.Duration
	check    func(ctx context.Context, c *http.Client) (*Notice, error)
}

func (p *poller) Watch(ctx context.Context) <-chan Notice {
	ch := make(chan Notice, 1)
	client := &http.Client{Timeout: 2 * time.Second}
	go func() {
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			if n, err := p.check(ctx, client); err == nil && n != nil {
				n.Cloud = p.cloud
				ch <- *n
				return
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

// AWS polls IMDSv2 spot/instance-action every 5 s, as AWS recommends: a PUT
// for a token, then the GET with it; 404 means no notice. The notice comes
// two minutes before the stop.
func AWS(base string, interval time.Duration) Preempter {
	return &poller{cloud: "aws", interval: or(interval, 5*time.Second), check: func(ctx context.Context, c *http.Client) (*Notice, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, base+"/latest/api/token", nil)
		req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "21600")
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		token, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("IMDS token: HTTP %d", resp.StatusCode)
		}
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"/latest/meta-data/spot/instance-action", nil)
		req.Header.Set("X-aws-ec2-metadata-token", string(token))
		resp, err = c.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil, nil
		}
		var a struct {
			Action string    `json:"action"`
			Time   time.Time `json:"time"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&a) != nil {
			return nil, fmt.Errorf("spot/instance-action: HTTP %d", resp.StatusCode)
		}
		left := time.Until(a.Time)
		if left <= 0 || left > 2*time.Minute {
			left = 2 * time.Minute
		}
		return &Notice{Detail: a.Action + " at " + a.Time.Format(time.RFC3339), Left: left}, nil
	}}
}

// GCP polls instance/preempted (Metadata-Flavor: Google); TRUE means the
// ACPI soft-off has begun, 30 s before the hard stop for Spot VMs.
func GCP(base string, interval time.Duration) Preempter {
	return &poller{cloud: "gcp", interval: or(interval, time.Second), check: func(ctx context.Context, c *http.Client) (*Notice, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/computeMetadata/v1/instance/preempted", nil)
		req.Header.Set("Metadata-Flavor", "Google")
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
		if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(b)) == "TRUE" {
			return &Notice{Detail: "instance/preempted is TRUE", Left: 30 * time.Second}, nil
		}
		return nil, nil
	}}
}

// Azure polls Scheduled Events once a second (Metadata: true) for a Preempt
// event, which comes at least 30 s ahead.
func Azure(base string, interval time.Duration) Preempter {
	return &poller{cloud: "azure", interval: or(interval, time.Second), check: func(ctx context.Context, c *http.Client) (*Notice, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metadata/scheduledevents?api-version=2020-07-01", nil)
		req.Header.Set("Metadata", "true")
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var doc struct {
			Events []struct {
				EventID   string `json:"EventId"`
				EventType string `json:"EventType"`
				NotBefore string `json:"NotBefore"`
			} `json:"Events"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc) != nil {
			return nil, fmt.Errorf("scheduled events: HTTP %d", resp.StatusCode)
		}
		for _, e := range doc.Events {
			if e.EventType == "Preempt" {
				left := 30 * time.Second
				if t, err := time.Parse(time.RFC1123, e.NotBefore); err == nil && time.Until(t) > 0 {
					left = time.Until(t)
				}
				return &Notice{Detail: "Preempt event " + e.EventID + " not before " + e.NotBefore, Left: left}, nil
			}
		}
		return nil, nil
	}}
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Auto finds which cloud's metadata service answers (one quick request
// each) and returns its poller, or nil off the clouds.
func Auto(ctx context.Context, ep Endpoints) Preempter {
	c := &http.Client{Timeout: 500 * time.Millisecond}
	probe := func(method, url string, h map[string]string) bool {
		req, err := http.NewRequestWithContext(ctx, method, url, nil)
		if err != nil {
			return false
		}
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	switch {
	case probe(http.MethodGet, ep.GCP+"/computeMetadata/v1/instance/id", map[string]string{"Metadata-Flavor": "Google"}):
		return GCP(ep.GCP, 0)
	case probe(http.MethodGet, ep.Azure+"/metadata/instance?api-version=2021-02-01", map[string]string{"Metadata": "true"}):
		return Azure(ep.Azure, 0)
	case probe(http.MethodPut, ep.AWS+"/latest/api/token", map[string]string{"X-aws-ec2-metadata-token-ttl-seconds": "60"}):
		return AWS(ep.AWS, 0)
	}
	return nil
}
