package preempt

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Which Azure Scheduled Events end this VM's command, and when: events
// reach every VM of a scale set's placement group or an availability set,
// and some come days ahead.
func TestAzureEvents(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC1123) }
	for _, tc := range []struct {
		name    string
		vm      string // this VM's name; "" when IMDS did not give it
		e       azureEvent
		want    string // "" no notice, else the notice's Event ("-" for a preemption)
		left    time.Duration
		approve bool
	}{
		{"preempt, this VM", "spot_3", azureEvent{EventID: "A", EventType: "Preempt", Resources: []string{"spot_3"}, EventStatus: "Scheduled", NotBefore: at(30 * time.Second)}, "-", 30 * time.Second, true},
		{"preempt, another VM", "spot_3", azureEvent{EventID: "A", EventType: "Preempt", Resources: []string{"spot_7"}, EventStatus: "Scheduled", NotBefore: at(30 * time.Second)}, "", 0, false},
		{"preempt, name in other case", "spot_3", azureEvent{EventID: "A", EventType: "Preempt", Resources: []string{"SPOT_3"}, EventStatus: "Scheduled", NotBefore: at(30 * time.Second)}, "-", 30 * time.Second, true},
		// an approval would hurry the other VM too
		{"preempt, this VM and another", "spot_3", azureEvent{EventID: "A", EventType: "Preempt", Resources: []string{"spot_7", "spot_3"}, EventStatus: "Scheduled", NotBefore: at(30 * time.Second)}, "-", 30 * time.Second, false},
		// name unknown: every event counts, none is approved
		{"preempt, name unknown", "", azureEvent{EventID: "A", EventType: "Preempt", Resources: []string{"spot_7"}, EventStatus: "Scheduled", NotBefore: at(30 * time.Second)}, "-", 30 * time.Second, false},
		{"preempt started", "spot_3", azureEvent{EventID: "A", EventType: "Preempt", Resources: []string{"spot_3"}, EventStatus: "Started"}, "-", 30 * time.Second, true},
		{"freeze keeps memory", "vm", azureEvent{EventID: "F", EventType: "Freeze", Resources: []string{"vm"}, EventStatus: "Scheduled", NotBefore: at(time.Minute)}, "", 0, false},
		{"reboot 15 min ahead: train on", "vm", azureEvent{EventID: "R", EventType: "Reboot", Resources: []string{"vm"}, EventStatus: "Scheduled", NotBefore: at(15 * time.Minute)}, "", 0, false},
		{"reboot 90 s ahead", "vm", azureEvent{EventID: "R", EventType: "Reboot", Resources: []string{"vm"}, EventStatus: "Scheduled", NotBefore: at(90 * time.Second)}, "Reboot", 90 * time.Second, false},
		{"hardware failure: reboot started", "vm", azureEvent{EventID: "R", EventType: "Reboot", Resources: []string{"vm"}, EventStatus: "Started", NotBefore: ""}, "Reboot", 10 * time.Second, false},
		{"redeploy days ahead", "vm", azureEvent{EventID: "D", EventType: "Redeploy", Resources: []string{"vm"}, EventStatus: "Scheduled", NotBefore: at(72 * time.Hour)}, "", 0, false},
		{"redeploy due", "vm", azureEvent{EventID: "D", EventType: "Redeploy", Resources: []string{"vm"}, EventStatus: "Scheduled", NotBefore: at(-time.Second)}, "Redeploy", 10 * time.Second, false},
		{"terminate, this VM", "vm", azureEvent{EventID: "T", EventType: "Terminate", Resources: []string{"vm"}, EventStatus: "Scheduled", NotBefore: at(2 * time.Minute)}, "Terminate", 2 * time.Minute, true},
		{"a type this code does not know", "vm", azureEvent{EventID: "X", EventType: "Hibernate", Resources: []string{"vm"}, EventStatus: "Scheduled", NotBefore: at(time.Minute)}, "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := (&azure{name: tc.vm}).notice(tc.e, now)
			switch {
			case tc.want == "" && n != nil:
				t.Fatalf("notice %+v, want none", *n)
			case tc.want == "":
				return
			case n == nil:
				t.Fatal("no notice")
			}
			if ev := strings.Replace(tc.want, "-", "", 1); n.Event != ev || n.Left != tc.left || (n.Approve != nil) != tc.approve {
				t.Errorf("event %q left %v approve %v; want %q, %v, %v", n.Event, n.Left, n.Approve != nil, ev, tc.left, tc.approve)
			}
			if !strings.Contains(n.Detail.String(), tc.e.EventID) {
				t.Errorf("detail %q does not name the event", n.Detail)
			}
		})
	}
}

// The poller asks IMDS for this VM's name, keeps asking while IMDS does not
// answer (and counts every event meanwhile), and approves with the
// document's format.
func TestAzurePoller(t *testing.T) {
	nameUp := false
	var posted string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metadata/instance/compute/name", func(w http.ResponseWriter, r *http.Request) {
		if !nameUp {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "spot_3\n")
	})
	mux.HandleFunc("GET /metadata/scheduledevents", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata") != "true" || r.URL.Query().Get("api-version") != "2020-07-01" {
			w.WriteHeader(400)
			return
		}
		io.WriteString(w, `{"DocumentIncarnation": 5, "Events": [{"EventId": "E7", "EventType": "Preempt", "ResourceType": "VirtualMachine",
			"Resources": ["spot_7"], "EventStatus": "Scheduled", "NotBefore": "`+time.Now().Add(30*time.Second).UTC().Format(time.RFC1123)+`"}]}`)
	})
	mux.HandleFunc("POST /metadata/scheduledevents", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Metadata") != "true" {
			w.WriteHeader(400)
			return
		}
		posted = string(b)
	})
	srv := httptest.NewServer(mux) // 127.0.0.1
	defer srv.Close()
	ctx, c := context.Background(), srv.Client()
	a := &azure{base: srv.URL}
	if n, err := a.check(ctx, c); err != nil || n == nil || n.Approve != nil {
		t.Fatalf("name unknown: %+v %v; want a notice that approves nothing", n, err)
	}
	nameUp = true
	if n, err := a.check(ctx, c); err != nil || n != nil || a.name != "spot_3" {
		t.Fatalf("another VM's event: %+v %v (name %q); want none", n, err, a.name)
	}
	if err := a.approve(ctx, "E7"); err != nil || posted != `{"StartRequests":[{"EventId":"E7"}]}` {
		t.Fatalf("approve: %v, posted %q", err, posted)
	}
	// A document that is not JSON is an error, not a quiet "no event".
	bad := &azure{base: srv.URL + "/nowhere", name: "spot_3"}
	if _, err := bad.check(ctx, c); err == nil {
		t.Error("a missing endpoint gave no error")
	}
}

// Alibaba and Tencent say when the spot instance goes; the notice gives
// the time left until then, read in the zone each writes it in.
func TestTerminationTime(t *testing.T) {
	var body atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("GET /latest/meta-data/spot/termination-time", func(w http.ResponseWriter, r *http.Request) {
		v, _ := body.Load().(string)
		if v == "" {
			w.WriteHeader(404)
			return
		}
		io.WriteString(w, v+"\n")
	})
	srv := httptest.NewServer(mux) // 127.0.0.1
	defer srv.Close()
	check := Tencent(srv.URL, 0).(*poller).check
	ctx, c := context.Background(), srv.Client()
	if n, err := check(ctx, c); n != nil || err != nil {
		t.Fatalf("404: %+v %v", n, err)
	}
	// Tencent writes UTC+8 wall time: three minutes from now there.
	body.Store(time.Now().Add(3 * time.Minute).In(time.FixedZone("", 8*3600)).Format(time.DateTime))
	n, err := check(ctx, c)
	if err != nil || n == nil || n.Left < 2*time.Minute+50*time.Second || n.Left > 3*time.Minute {
		t.Fatalf("3 min ahead: %+v %v", n, err)
	}
	// Past or unreadable: the shortest notice.
	body.Store("soon")
	if n, err := check(ctx, c); err != nil || n == nil || n.Left != 30*time.Second || !strings.Contains(n.Detail.String(), "soon") {
		t.Fatalf("unreadable: %+v %v", n, err)
	}
}

// A Spot instance set to hibernate gets its notice as hibernation starts;
// memory is kept, so the command is asked for a checkpoint, once, and not
// stopped.
func TestAWSHibernate(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /latest/api/token", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tok") })
	mux.HandleFunc("GET /latest/meta-data/spot/instance-action", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"action": "hibernate", "time": %q}`, time.Now().UTC().Format(time.RFC3339))
	})
	srv := httptest.NewServer(mux) // 127.0.0.1
	defer srv.Close()
	a := &aws{base: srv.URL}
	ctx, c := context.Background(), srv.Client()
	if n, err := a.check(ctx, c); err != nil || n == nil || !n.Advisory || !strings.Contains(n.Detail.String(), "hibernate") {
		t.Fatalf("hibernate: %+v %v", n, err)
	}
	if n, err := a.check(ctx, c); err != nil || n != nil {
		t.Fatalf("hibernate passed on twice: %+v %v", n, err)
	}
}

// Metadata requests go straight to the link-local service: a proxy set
// for downloads (HTTP_PROXY, common on rented boxes) cannot reach it.
func TestMetadataClientIgnoresProxy(t *testing.T) {
	if tr, ok := metadataClient(time.Second).Transport.(*http.Transport); !ok || tr.Proxy != nil {
		t.Errorf("metadata requests may go through a proxy: %+v", tr)
	}
}

// Scheduled Events starts on its first request and may take a while to
// answer it: the first call waits longer than the poller's usual 2 s.
func TestAzureFirstCallWaits(t *testing.T) {
	var calls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metadata/scheduledevents", func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			time.Sleep(2500 * time.Millisecond) // the service starting
		}
		io.WriteString(w, `{"DocumentIncarnation": 1, "Events": []}`)
	})
	srv := httptest.NewServer(mux) // 127.0.0.1
	defer srv.Close()
	a := &azure{base: srv.URL, name: "vm"}
	c := metadataClient(2 * time.Second) // the poller's
	if n, err := a.check(context.Background(), c); err != nil || n != nil {
		t.Fatalf("first call: %+v %v", n, err)
	}
	if n, err := a.check(context.Background(), c); err != nil || n != nil || calls.Load() != 2 {
		t.Fatalf("second call: %+v %v (%d calls)", n, err, calls.Load())
	}
}

// On GCP a GPU VM learns of host maintenance an hour ahead: the first sight
// is advice (a checkpoint, and training goes on), and two minutes before the
// hour is out it is a notice, as a preemption's. What the supervisor does
// with them is supervise's TestHostMaintenanceStops.
func TestGCPHostMaintenance(t *testing.T) {
	var event atomic.Value
	event.Store("NONE")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /computeMetadata/v1/instance/{key}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			w.WriteHeader(403)
			return
		}
		switch r.PathValue("key") {
		case "preempted":
			io.WriteString(w, "FALSE")
		case "maintenance-event":
			io.WriteString(w, event.Load().(string))
		default:
			w.WriteHeader(404)
		}
	})
	srv := httptest.NewServer(mux) // 127.0.0.1
	defer srv.Close()

	// NONE again (done, or called off) starts the hour over.
	g := &gcp{base: srv.URL, maintenance: time.Hour}
	ctx, c := context.Background(), srv.Client()
	event.Store("TERMINATE_ON_HOST_MAINTENANCE")
	if n, err := g.check(ctx, c); err != nil || n == nil || !n.Advisory || !strings.Contains(n.Detail.String(), "about 1h0m0s") {
		t.Fatalf("first sight: %+v %v", n, err)
	}
	if n, _ := g.check(ctx, c); n != nil {
		t.Fatalf("advised twice: %+v", n)
	}
	event.Store("NONE")
	if n, _ := g.check(ctx, c); n != nil || !g.since.IsZero() {
		t.Fatalf("NONE: %+v, since %v", n, g.since)
	}

	// Two minutes before the hour: the notice, named as host maintenance.
	event.Store("TERMINATE_ON_HOST_MAINTENANCE")
	if n, _ := g.check(ctx, c); n == nil || !n.Advisory {
		t.Fatalf("second first sight: %+v", n)
	}
	g.since = time.Now().Add(-time.Hour + 90*time.Second)
	n, err := g.check(ctx, c)
	if err != nil || n == nil || n.Advisory || n.Event != "Host maintenance" || n.Left < 30*time.Second || n.Left > 90*time.Second {
		t.Fatalf("two minutes before: %+v %v; want a notice of host maintenance with about 90 s left", n, err)
	}
}

// auto finds the cloud that answers, asking all at once; Answers asks one.
func TestAutoFindsTheCloud(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /latest/api/token", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds") == "" {
			w.WriteHeader(400)
			return
		}
		io.WriteString(w, "tok")
	})
	mux.HandleFunc("GET /computeMetadata/v1/instance/id", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			w.WriteHeader(403)
			return
		}
		io.WriteString(w, "4520031799277581759")
	})
	mux.HandleFunc("GET /tencent/latest/meta-data/instance-id", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ins-2pz8d9r1") })
	srv := httptest.NewServer(mux) // 127.0.0.1
	defer srv.Close()
	ali := http.NewServeMux()
	ali.HandleFunc("PUT /latest/api/token", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-aliyun-ecs-metadata-token-ttl-seconds") == "" {
			w.WriteHeader(400)
			return
		}
		io.WriteString(w, "ali-tok")
	})
	aliSrv := httptest.NewServer(ali) // 127.0.0.1
	defer aliSrv.Close()
	none := "http://127.0.0.1:1"
	for _, tc := range []struct {
		ep        Endpoints
		answering string
	}{
		{Endpoints{AWS: srv.URL, GCP: none, Azure: none, Alibaba: none, Tencent: none}, "[aws]"},
		{Endpoints{AWS: none, GCP: none, Azure: none, Alibaba: aliSrv.URL, Tencent: none}, "[alibaba]"},
		{Endpoints{AWS: srv.URL, GCP: srv.URL, Azure: none, Alibaba: aliSrv.URL, Tencent: none}, "[gcp aws alibaba]"},
		{Endpoints{AWS: none, GCP: none, Azure: none, Alibaba: none, Tencent: srv.URL + "/tencent"}, "[tencent]"},
	} {
		var answering []string
		for _, c := range Clouds() {
			if Answers(context.Background(), c, tc.ep) {
				answering = append(answering, c)
			}
		}
		if fmt.Sprint(answering) != tc.answering {
			t.Errorf("answering %v, want %s", answering, tc.answering)
		}
		if name, p := Auto(context.Background(), tc.ep); len(answering) > 0 && (p == nil || name != answering[0] || p.(*poller).cloud != name) {
			t.Errorf("auto: %q %v, want %s", name, p, answering[0])
		}
	}
	if name, p := Auto(context.Background(), Endpoints{AWS: none, GCP: none, Azure: none, Alibaba: none, Tencent: none}); p != nil || name != "" {
		t.Errorf("auto off the clouds: %q %v", name, p)
	}
	if For("ovh", Endpoints{}) != nil || Answers(context.Background(), "ovh", Endpoints{}) {
		t.Error("a cloud gpurent does not know")
	}
}
