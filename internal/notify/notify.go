// Package notify tells a person what happened to a run nobody watches: a
// training job of days on a rented machine ends, is preempted, restarts
// after a crash, or stops reaching its store, and the bill runs on while
// nobody knows. Each event is one HTTPS POST to a webhook: the chat
// services people already read (Slack, Discord, Feishu/Lark, DingTalk,
// WeCom) in their own message format, any other endpoint as gpurent's JSON.
//
// A webhook URL is a credential (whoever holds it posts to the channel), so
// it is never logged, never put in an error, and never sent in plain HTTP
// except to this machine.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Event is what happened, as sent to an endpoint that is none of the known
// chat services (docs/run.md documents the fields).
type Event struct {
	Kind     string    `json:"event"` // start, restart, stall, gpu_idle, gpu_throttled, gpu_lost, gpu_xid, host_fault, notice, budget, store_failing, store_ok, progress, end
	Run      string    `json:"run"`
	Host     string    `json:"host"`
	Time     time.Time `json:"time"`
	ExitCode *int      `json:"exit_code,omitempty"` // only for end
	Text     string    `json:"text"`                // one line for a person, run and host included
	// Output is the command's last lines (gpurent run --log), on a
	// restart, a stall and a failed end: what it printed as it failed.
	Output string `json:"output,omitempty"`
}

// MaxOutput is the most of Event.Output a chat message carries: with the
// line before it, within Discord's 2000 characters and WeCom's 2048 bytes.
const MaxOutput = 1200

// Webhook posts events to one URL.
type Webhook struct {
	u      *url.URL
	client *http.Client
	// Backoff is the wait before each retry; len(Backoff)+1 attempts.
	Backoff []time.Duration
	// secret signs each request, for a DingTalk or Feishu/Lark bot set to
	// verify signatures (see Sign); now stamps it.
	secret string
	now    func() time.Time
}

// New checks a webhook URL: https, or http to this machine only (a token
// in the URL would otherwise cross the network in the clear). Its errors
// never repeat the URL.
func New(raw string) (*Webhook, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, i18n.Errorf("want an https:// webhook URL")
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, i18n.Errorf("plain http to %s would send the webhook's token unprotected: use https", u.Hostname())
	}
	return &Webhook{u: u, client: &http.Client{Timeout: 10 * time.Second}, Backoff: []time.Duration{2 * time.Second, 8 * time.Second}, now: time.Now}, nil
}

// Sign makes every request carry a signature made with secret, for a
// DingTalk robot with 加签 or a Feishu/Lark bot with 签名校验 (signature
// verification) set: the security setting that, unlike a keyword, keeps
// out whoever learns the URL alone. The other services have no such
// setting, and a secret given for one of them is refused rather than
// ignored. The secret, like the URL, never appears in an error.
func (w *Webhook) Sign(secret string) error {
	secret = strings.TrimSpace(secret)
	switch {
	case secret == "":
		return i18n.Errorf("the signing secret is empty")
	case w.Service() != "dingtalk" && w.Service() != "feishu":
		return i18n.Errorf("a signing secret was given, but %s webhooks are not signed (only DingTalk's and Feishu/Lark's are)", w.Service())
	}
	w.secret = secret
	return nil
}

// request is the URL and body of one attempt to post v, signed at now
// where a secret is set:
//   - DingTalk: timestamp (milliseconds) and sign in the query, sign being
//     base64(HMAC-SHA256(key secret, timestamp + "\n" + secret));
//   - Feishu/Lark: timestamp (seconds) and sign in the body, sign being
//     base64(HMAC-SHA256(key timestamp + "\n" + secret, empty message)).
//
// Both services refuse a timestamp more than an hour from their clock, so
// each attempt, retries included, is signed anew.
func (w *Webhook) request(v any, now time.Time) (string, []byte, error) {
	target := w.u.String()
	if w.secret != "" {
		switch w.Service() {
		case "dingtalk":
			ts := strconv.FormatInt(now.UnixMilli(), 10)
			mac := hmac.New(sha256.New, []byte(w.secret))
			mac.Write([]byte(ts + "\n" + w.secret))
			u := *w.u
			q := u.Query()
			q.Set("timestamp", ts)
			q.Set("sign", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
			u.RawQuery = q.Encode()
			target = u.String()
		case "feishu":
			ts := strconv.FormatInt(now.Unix(), 10)
			mac := hmac.New(sha256.New, []byte(ts+"\n"+w.secret))
			signed := map[string]any{"timestamp": ts, "sign": base64.StdEncoding.EncodeToString(mac.Sum(nil))}
			for k, x := range v.(map[string]any) {
				signed[k] = x
			}
			v = signed
		}
	}
	body, err := json.Marshal(v)
	return target, body, err
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Where names the webhook without its secret parts: scheme and host.
func (w *Webhook) Where() string { return w.u.Scheme + "://" + w.u.Host }

// Service is the chat service the URL belongs to, by its host: "slack",
// "discord", "feishu", "dingtalk", "wecom", or "json" for gpurent's own
// format.
func (w *Webhook) Service() string {
	host := strings.ToLower(w.u.Hostname())
	is := func(domain string) bool { return host == domain || strings.HasSuffix(host, "."+domain) }
	switch {
	case is("hooks.slack.com"):
		return "slack"
	case is("discord.com") || is("discordapp.com"):
		return "discord"
	case is("open.feishu.cn") || is("open.larksuite.com"):
		return "feishu"
	case is("oapi.dingtalk.com"):
		return "dingtalk"
	case is("qyapi.weixin.qq.com"):
		return "wecom"
	}
	return "json"
}

// Body is the request body for e in the service's format:
//   - Slack incoming webhooks: {"text": ...};
//   - Discord webhooks: {"content": ...} (at most 2000 characters);
//   - Feishu and Lark custom bots: {"msg_type": "text", "content": {"text": ...}};
//   - DingTalk and WeCom group robots: {"msgtype": "text", "text": {"content": ...}}
//     (WeCom: at most 2048 bytes);
//   - anything else: the Event itself.
//
// A DingTalk or Feishu bot set to accept only messages with a keyword
// needs "gpurent" as the keyword: every text starts with it.
func (w *Webhook) Body(e Event) ([]byte, error) {
	return json.Marshal(w.payload(e))
}

// payload is what Body marshals.
func (w *Webhook) payload(e Event) any {
	var v any
	text, out := e.Text, tailClip(e.Output, MaxOutput)
	switch {
	case out == "":
	case w.Service() == "slack" || w.Service() == "discord":
		// Both show a fenced block in a fixed-width font; a fence in
		// the output would end it early.
		text += "\n```\n" + strings.ReplaceAll(out, "```", "` ` `") + "\n```"
	default:
		text += "\n" + out
	}
	switch w.Service() {
	case "slack":
		// Slack reads &, < and > as markup (its formatting reference
		// asks for them as entities): a traceback's "in <module>" would
		// otherwise show as a link.
		v = map[string]string{"text": slackEscape(text)}
	case "discord":
		// No mentions: an "@everyone" in the command's output pings
		// nobody (Discord's allowed_mentions, parse empty).
		v = map[string]any{"content": clip(text, 2000), "allowed_mentions": map[string][]string{"parse": {}}}
	case "feishu":
		v = map[string]any{"msg_type": "text", "content": map[string]string{"text": text}}
	case "dingtalk", "wecom":
		v = map[string]any{"msgtype": "text", "text": map[string]string{"content": clip(text, 2000)}}
	default:
		v = e
	}
	return v
}

// slackEscape writes the three characters Slack parses as entities.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// tailClip keeps the last n bytes of s, from a rune boundary: the end of
// a traceback is the part that names the error.
func tailClip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n + len("…")
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "…" + s[cut:]
}

// clip shortens s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Send posts e, retrying a failed attempt (a network error, a 5xx or 429)
// after each Backoff wait. A 4xx other than 429 is permanent (the URL is
// wrong or revoked), and so is a chat service's error code in a 200 answer
// (a keyword missing, a bot switched off).
func (w *Webhook) Send(ctx context.Context, e Event) error {
	v := w.payload(e)
	var last error
	for i := 0; ; i++ {
		target, body, err := w.request(v, w.now())
		if err != nil {
			return err
		}
		var retry bool
		if retry, last = w.post(ctx, target, body); last == nil {
			return nil
		}
		if !retry || i >= len(w.Backoff) {
			break
		}
		select {
		case <-time.After(w.Backoff[i]):
		case <-ctx.Done():
			return i18n.Errorf("notify %s: %w", w.Where(), last)
		}
	}
	return i18n.Errorf("notify %s: %w", w.Where(), last)
}

// post makes one attempt; it says whether another may succeed.
func (w *Webhook) post(ctx context.Context, target string, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return false, i18n.Errorf("bad request")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		// url.Error carries the whole URL, token and all: keep only
		// its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return true, err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, i18n.Errorf("answered %s", resp.Status)
	case resp.StatusCode >= 300:
		return false, i18n.Errorf("answered %s (is the webhook URL right and still valid?)", resp.Status)
	}
	if msg := chatError(answer); msg != "" {
		return false, i18n.Errorf("answered %s", msg)
	}
	return false, nil
}

// chatError is the error a chat service reports in a 200 answer: DingTalk
// and WeCom {"errcode": N, "errmsg": ...}, Feishu {"code": N, "msg": ...}
// (or the older {"StatusCode": N, "StatusMessage": ...}); "" when none.
func chatError(answer []byte) string {
	var v struct {
		ErrCode    *int   `json:"errcode"`
		ErrMsg     string `json:"errmsg"`
		Code       *int   `json:"code"`
		Msg        string `json:"msg"`
		StatusCode *int   `json:"StatusCode"`
		StatusMsg  string `json:"StatusMessage"`
	}
	if json.Unmarshal(answer, &v) != nil {
		return ""
	}
	for _, c := range []struct {
		code *int
		msg  string
	}{{v.ErrCode, v.ErrMsg}, {v.Code, v.Msg}, {v.StatusCode, v.StatusMsg}} {
		if c.code != nil && *c.code != 0 {
			return fmt.Sprintf("error %d: %s", *c.code, c.msg)
		}
	}
	return ""
}

// Queue sends events in the background, in order, so that a slow or
// unreachable webhook never holds up training or an upload.
type Queue struct {
	w      *Webhook
	logf   func(format string, args ...any)
	ch     chan Event
	done   chan struct{}
	mu     sync.Mutex
	closed bool
}

// Start begins sending; log reports events that could not be sent.
func (w *Webhook) Start(log func(format string, args ...any)) *Queue {
	q := &Queue{w: w, logf: log, ch: make(chan Event, 32), done: make(chan struct{})}
	go func() {
		defer close(q.done)
		for e := range q.ch {
			if err := w.Send(context.Background(), e); err != nil {
				q.logf("%s event not sent: %v", e.Kind, err)
			}
		}
	}()
	return q
}

// Post queues e; when 32 are waiting, or after Close, it is dropped and
// said.
func (q *Queue) Post(e Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		q.logf("%s event not sent: gpurent is exiting", e.Kind)
		return
	}
	select {
	case q.ch <- e:
	default:
		q.logf("%s event not sent: %d events are waiting for %s", e.Kind, cap(q.ch), q.w.Where())
	}
}

// Close waits for the queued events to be sent, until ctx ends.
func (q *Queue) Close(ctx context.Context) {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
	select {
	case <-q.done:
	case <-ctx.Done():
		q.logf("events not sent before exiting: %s did not answer in time", q.w.Where())
	}
}
