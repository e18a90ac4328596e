package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

const token = "s3cr3t-T0KEN"

func TestNewRefusesWhatWouldLeakTheToken(t *testing.T) {
	for _, c := range []struct{ url, err string }{
		{"http://hooks.example.com/" + token, "plain http to hooks.example.com would send the webhook's token unprotected"},
		{"ftp://example.com/" + token, "want an https:// webhook URL"},
		{"hooks.slack.com/services/" + token, "want an https:// webhook URL"},
		{"", "want an https:// webhook URL"},
	} {
		_, err := New(c.url)
		if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), token) {
			t.Errorf("New(%q): %v, want %q without the token", c.url, err, c.err)
		}
	}
	for _, ok := range []string{"https://hooks.slack.com/services/" + token, "http://127.0.0.1:8080/" + token, "http://localhost/x", " https://a.b/c\n"} {
		if _, err := New(ok); err != nil {
			t.Errorf("New(%q): %v", ok, err)
		}
	}
}

// TestBody: each chat service gets its own message format (from their
// webhook documentation), anything else the Event.
func TestBody(t *testing.T) {
	code := 75
	e := Event{Kind: "end", Run: "llama", Host: "gpu-7", Time: time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC), ExitCode: &code,
		Text: "gpurent run llama on gpu-7: preempted"}
	for _, c := range []struct{ url, service, body string }{
		{"https://hooks.slack.com/services/T0/B0/" + token, "slack", `{"text":"gpurent run llama on gpu-7: preempted"}`},
		{"https://discord.com/api/webhooks/1/" + token, "discord", `{"allowed_mentions":{"parse":[]},"content":"gpurent run llama on gpu-7: preempted"}`},
		{"https://open.feishu.cn/open-apis/bot/v2/hook/" + token, "feishu", `{"content":{"text":"gpurent run llama on gpu-7: preempted"},"msg_type":"text"}`},
		{"https://open.larksuite.com/open-apis/bot/v2/hook/" + token, "feishu", `{"content":{"text":"gpurent run llama on gpu-7: preempted"},"msg_type":"text"}`},
		{"https://oapi.dingtalk.com/robot/send?access_token=" + token, "dingtalk", `{"msgtype":"text","text":{"content":"gpurent run llama on gpu-7: preempted"}}`},
		{"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + token, "wecom", `{"msgtype":"text","text":{"content":"gpurent run llama on gpu-7: preempted"}}`},
		{"https://ntfy.example.org/" + token, "json", `{"event":"end","run":"llama","host":"gpu-7","time":"2026-12-01T04:00:00Z","exit_code":75,"text":"gpurent run llama on gpu-7: preempted"}`},
		{"https://evil-hooks.slack.com.example.org/x", "json", ""},
	} {
		w, err := New(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if w.Service() != c.service {
			t.Errorf("%s: service %s, want %s", c.url, w.Service(), c.service)
		}
		if c.body == "" {
			continue
		}
		b, err := w.Body(e)
		if err != nil || string(b) != c.body {
			t.Errorf("%s:\n got %s\nwant %s", c.service, b, c.body)
		}
	}
	// A long text is cut for the services that cap it, on a character.
	w, _ := New("https://discord.com/api/webhooks/1/x")
	b, _ := w.Body(Event{Text: strings.Repeat("训", 1000)})
	var v struct{ Content string }
	if json.Unmarshal(b, &v) != nil || len(v.Content) > 2000 || !strings.HasSuffix(v.Content, "训…") {
		t.Errorf("clipped to %d bytes: %.40q", len(v.Content), v.Content)
	}
}

// The command's last lines follow the text: in a fenced block where the
// chat shows one, kept from their end when long (the error is the last
// line), whole in gpurent's JSON.
func TestBodyOutput(t *testing.T) {
	long := strings.Repeat("  File \"train.py\", line 1, in <module>\n", 60) + "RuntimeError: CUDA out of memory"
	e := Event{Kind: "restart", Text: "gpurent run r on h: restart 1", Output: "a ```fence```\n" + long}
	for _, c := range []struct{ url, field, before, after string }{
		{"https://hooks.slack.com/services/T/B/x", "text", "restart 1\n```\n…", "RuntimeError: CUDA out of memory\n```"},
		{"https://discord.com/api/webhooks/1/x", "content", "restart 1\n```\n…", "RuntimeError: CUDA out of memory\n```"},
		{"https://oapi.dingtalk.com/robot/send?access_token=x", "", "restart 1\n…", "RuntimeError: CUDA out of memory"},
	} {
		w, _ := New(c.url)
		b, _ := w.Body(e)
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		text, _ := v[c.field].(string)
		if c.field == "" {
			text, _ = v["text"].(map[string]any)["content"].(string)
		}
		if !strings.Contains(text, c.before) || !strings.HasSuffix(text, c.after) || len(text) > 2000 {
			t.Errorf("%s: %d bytes, %q", c.url, len(text), text)
		}
	}
	w, _ := New("https://ntfy.example/x")
	b, _ := w.Body(e)
	var got Event
	if json.Unmarshal(b, &got) != nil || got.Output != e.Output || got.Text != e.Text {
		t.Errorf("JSON event: %s", b)
	}
	// Slack gets &, < and > as entities, so "<module>" is text, not a link.
	w, _ = New("https://hooks.slack.com/services/T/B/x")
	b, _ = w.Body(Event{Text: "t", Output: "  File \"a.py\", line 1, in <module>\nx = a & b"})
	var sl struct{ Text string }
	if json.Unmarshal(b, &sl) != nil || !strings.Contains(sl.Text, "in &lt;module&gt;\nx = a &amp; b") {
		t.Errorf("slack text %q", sl.Text)
	}
	// Whole fences in a short output are broken, so the block holds.
	w, _ = New("https://hooks.slack.com/services/T/B/x")
	b, _ = w.Body(Event{Text: "t", Output: "a ```fence```"})
	if !strings.Contains(string(b), "a ` ` `fence` ` `") {
		t.Errorf("fence kept: %s", b)
	}
}

// hook is a webhook on loopback that answers with the statuses and bodies
// given, in turn (the last one repeats), and records what it was sent.
type hook struct {
	mu      sync.Mutex
	answers []answer
	got     []string
	srv     *httptest.Server
}

type answer struct {
	status int
	body   string
}

func newHook(t *testing.T, answers ...answer) *hook {
	h := &hook{answers: answers}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		a := h.answers[min(len(h.got), len(h.answers)-1)]
		h.got = append(h.got, string(b))
		h.mu.Unlock()
		w.WriteHeader(a.status)
		fmt.Fprint(w, a.body)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) webhook(t *testing.T) *Webhook {
	w, err := New(h.srv.URL + "/hook/" + token)
	if err != nil {
		t.Fatal(err)
	}
	w.Backoff = []time.Duration{time.Millisecond, time.Millisecond}
	return w
}

func (h *hook) posts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

func TestSend(t *testing.T) {
	e := Event{Kind: "restart", Run: "r", Text: "gpurent run r: restart 1"}
	for _, c := range []struct {
		name     string
		answers  []answer
		attempts int
		err      string
	}{
		{"ok", []answer{{200, "ok"}}, 1, ""},
		{"retried after 500 and 429", []answer{{500, ""}, {429, ""}, {200, ""}}, 3, ""},
		{"gives up after three", []answer{{503, ""}}, 3, "answered 503 Service Unavailable"},
		{"revoked is permanent", []answer{{404, "no such hook"}}, 1, "answered 404 Not Found (is the webhook URL right and still valid?)"},
		{"a robot's refusal in a 200", []answer{{200, `{"errcode":310000,"errmsg":"keywords not in content"}`}}, 1, "answered error 310000: keywords not in content"},
		{"feishu's refusal", []answer{{200, `{"code":19024,"msg":"Key Words Not Found","data":{}}`}}, 1, "answered error 19024: Key Words Not Found"},
		{"feishu's success", []answer{{200, `{"StatusCode":0,"StatusMessage":"success","code":0,"msg":"success"}`}}, 1, ""},
	} {
		h := newHook(t, c.answers...)
		err := h.webhook(t).Send(context.Background(), e)
		switch {
		case c.err == "" && err != nil, c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		case err != nil && strings.Contains(err.Error(), token):
			t.Errorf("%s: the error shows the token: %v", c.name, err)
		}
		if got := h.posts(); len(got) != c.attempts {
			t.Errorf("%s: %d attempts, want %d", c.name, len(got), c.attempts)
		}
	}
	// Nothing listening: a network error, retried, without the URL.
	h := newHook(t, answer{200, ""})
	w := h.webhook(t)
	h.srv.Close()
	if err := w.Send(context.Background(), e); err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "notify http://127.0.0.1:") {
		t.Errorf("unreachable: %v", err)
	}
}

func TestQueue(t *testing.T) {
	h := newHook(t, answer{200, ""})
	var mu sync.Mutex
	var logged []string
	q := h.webhook(t).Start(func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	})
	for i := range 5 {
		q.Post(Event{Kind: "restart", Text: fmt.Sprint(i)})
	}
	q.Close(context.Background())
	got := h.posts()
	if len(got) != 5 {
		t.Fatalf("sent %d, want 5", len(got))
	}
	for i, b := range got {
		var e Event
		if json.Unmarshal([]byte(b), &e) != nil || e.Text != fmt.Sprint(i) {
			t.Errorf("post %d: %s", i, b)
		}
	}
	q.Post(Event{Kind: "end"})
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || logged[0] != "end event not sent: gpurent is exiting" {
		t.Errorf("logged %q", logged)
	}
}

// TestQueueCloseGivesUp: an endpoint that never answers holds up the exit
// no longer than Close's context.
func TestQueueCloseGivesUp(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	t.Cleanup(func() { close(block); srv.Close() })
	w, _ := New(srv.URL + "/" + token)
	var logged []string
	var mu sync.Mutex
	q := w.Start(func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	})
	q.Post(Event{Kind: "end"})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	q.Close(ctx)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || !strings.Contains(logged[0], "did not answer in time") || strings.Contains(logged[0], token) {
		t.Errorf("logged %q", logged)
	}
}

// toServer sends every request to srv, whatever host it names: the chat
// services' hosts, answered on loopback.
type toServer struct{ srv *httptest.Server }

func (s toServer) RoundTrip(r *http.Request) (*http.Response, error) {
	u, _ := url.Parse(s.srv.URL)
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = u.Scheme, u.Host
	return http.DefaultTransport.RoundTrip(r)
}

// TestSign: a DingTalk robot with 加签 and a Feishu bot with signature
// verification get each request signed as their documents say. The
// expected signatures were computed with the services' own Python samples
// (DingTalk: hmac.new(secret, timestamp + "\n" + secret, sha256), base64,
// URL-quoted; Feishu: hmac.new(timestamp + "\n" + secret, "", sha256),
// base64), run on the same inputs; a retry is signed anew.
func TestSign(t *testing.T) {
	at := time.Unix(1764547200, 0)
	for _, c := range []struct {
		url, secret string
		check       func(t *testing.T, query url.Values, rawQuery string, body map[string]any)
	}{
		{"https://oapi.dingtalk.com/robot/send?access_token=" + token, "SEC0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			func(t *testing.T, q url.Values, raw string, body map[string]any) {
				if q.Get("access_token") != token || q.Get("timestamp") != "1764547200000" || q.Get("sign") != "rP9FEYwnsOvdXEu5MeXicLJ/oJ3Fqe7/T8huW1+6Hck=" ||
					!strings.Contains(raw, "sign=rP9FEYwnsOvdXEu5MeXicLJ%2FoJ3Fqe7%2FT8huW1%2B6Hck%3D") {
					t.Errorf("dingtalk query %q", raw)
				}
				if body["msgtype"] != "text" || body["sign"] != nil {
					t.Errorf("dingtalk body %v", body)
				}
			}},
		{"https://open.feishu.cn/open-apis/bot/v2/hook/" + token, "feishu-secret-0123",
			func(t *testing.T, q url.Values, raw string, body map[string]any) {
				if raw != "" || body["timestamp"] != "1764547200" || body["sign"] != "r2MXm6nrQYmNWbKcnNQYlEiPIfb+3ZxTQqvmOu9Yx6A=" || body["msg_type"] != "text" {
					t.Errorf("feishu query %q, body %v", raw, body)
				}
			}},
	} {
		var mu sync.Mutex
		type got struct {
			raw  string
			body map[string]any
		}
		var posts []got
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body map[string]any
			json.NewDecoder(r.Body).Decode(&body)
			mu.Lock()
			posts = append(posts, got{r.URL.RawQuery, body})
			n := len(posts)
			mu.Unlock()
			if n == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		w, err := New(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Sign(" " + c.secret + "\n"); err != nil {
			t.Fatal(err)
		}
		w.client = &http.Client{Transport: toServer{srv}}
		w.Backoff = []time.Duration{time.Millisecond}
		clock := at
		w.now = func() time.Time { t := clock; clock = clock.Add(90 * time.Second); return t }
		if err := w.Send(context.Background(), Event{Kind: "end", Text: "gpurent run r on gpu-1: finished"}); err != nil {
			t.Fatalf("%s: %v", w.Service(), err)
		}
		srv.Close()
		if len(posts) != 2 {
			t.Fatalf("%s: %d posts, want a failed one and its retry", w.Service(), len(posts))
		}
		q, _ := url.ParseQuery(posts[0].raw)
		c.check(t, q, posts[0].raw, posts[0].body)
		q2, _ := url.ParseQuery(posts[1].raw)
		if q2.Get("timestamp")+fmt.Sprint(posts[1].body["timestamp"]) == q.Get("timestamp")+fmt.Sprint(posts[0].body["timestamp"]) {
			t.Errorf("%s: the retry kept the first attempt's timestamp", w.Service())
		}
	}
	// Services without signatures refuse a secret rather than ignore it;
	// neither error repeats it.
	for _, u := range []string{"https://hooks.slack.com/services/" + token, "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + token} {
		w, _ := New(u)
		if err := w.Sign("SECabc"); err == nil || strings.Contains(err.Error(), "SECabc") || strings.Contains(err.Error(), token) {
			t.Errorf("%s: %v", u, err)
		}
	}
	w, _ := New("https://oapi.dingtalk.com/robot/send?access_token=" + token)
	if err := w.Sign("  "); err == nil {
		t.Error("an empty secret was taken")
	}
}
