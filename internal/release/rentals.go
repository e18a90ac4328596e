package release

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
)

// The GPU rental platforms tell a container who it is in its environment.

// runpod: the pod's id and a key scoped to it are in every pod's
// environment (RUNPOD_POD_ID, RUNPOD_API_KEY).
type runpod struct{}

func (runpod) find(ctx context.Context, o *Options) (*Machine, error) {
	id := o.getenv("RUNPOD_POD_ID")
	if id == "" {
		return nil, nil
	}
	if !validID(id) {
		return nil, i18n.Errorf("RUNPOD_POD_ID %q is not a pod id", id)
	}
	return &Machine{Label: "RunPod pod", ID: id,
		Keeps: i18n.Textf("a stopped pod keeps its volume disk, billed at 0.20 USD/GB-month while stopped, and loses its container disk; a terminated pod bills nothing and keeps nothing (network volumes aside)")}, nil
}

func (runpod) call(ctx context.Context, o *Options, m *Machine, a Action) (*Call, error) {
	key, err := credential(o, "RUNPOD_API_KEY")
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, i18n.Errorf("RUNPOD_API_KEY is not set: RunPod puts a key scoped to the pod there; export your own (runpod.io, Settings, API Keys) to go on")
	}
	c := &Call{Header: http.Header{"Authorization": {"Bearer " + key}}, secrets: []string{key},
		accepted: okStatus(func(code int, _ []byte) string {
			if code == http.StatusUnauthorized || code == http.StatusForbidden {
				return "the key lacks the right to manage this pod: use a key with write access (runpod.io, Settings, API Keys)"
			}
			return ""
		})}
	base := o.endpoint("runpod") + "/pods/" + m.ID
	if a == Stop {
		c.Method, c.URL = http.MethodPost, base+"/stop"
	} else {
		c.Method, c.URL = http.MethodDelete, base
	}
	return c, nil
}

// vast: Vast.ai gives each instance its id and an API key for it
// (CONTAINER_ID, CONTAINER_API_KEY) and a label (VAST_CONTAINERLABEL).
type vast struct{}

func (vast) find(ctx context.Context, o *Options) (*Machine, error) {
	id := o.getenv("CONTAINER_ID")
	label := o.getenv("VAST_CONTAINERLABEL")
	if id == "" || (label == "" && o.getenv("CONTAINER_API_KEY") == "") {
		return nil, nil // CONTAINER_ID alone is any container's
	}
	if !validID(id) {
		return nil, i18n.Errorf("CONTAINER_ID %q is not an instance id", id)
	}
	// The label's form (C.<id>) is not documented: only a label of that
	// form naming another id refuses.
	if n, ok := strings.CutPrefix(label, "C."); ok && validID(n) && n != id {
		return nil, i18n.Errorf("CONTAINER_ID %s and VAST_CONTAINERLABEL %s name different instances: refusing to stop either", id, label)
	}
	return &Machine{Label: "Vast.ai instance", ID: id,
		Keeps: i18n.Textf("a stopped instance keeps its disk and bills it at the host's storage rate until destroyed; the GPU may be rented to someone else meanwhile; a destroyed one bills nothing and keeps nothing")}, nil
}

func (vast) call(ctx context.Context, o *Options, m *Machine, a Action) (*Call, error) {
	key, err := credential(o, "CONTAINER_API_KEY")
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, i18n.Errorf("CONTAINER_API_KEY is not set: Vast.ai puts a key for this instance there; export your own (cloud.vast.ai, Account, Keys) as CONTAINER_API_KEY to go on")
	}
	c := &Call{Header: http.Header{"Authorization": {"Bearer " + key}}, secrets: []string{key}, accepted: vastAccepted}
	u := o.endpoint("vast") + "/instances/" + m.ID + "/"
	if a == Stop {
		c.Method, c.URL = http.MethodPut, u
		c.Header.Set("Content-Type", "application/json")
		c.Body = []byte(`{"state":"stopped"}`)
	} else {
		c.Method, c.URL = http.MethodDelete, u
	}
	return c, nil
}

// vastAccepted reads Vast's answer, which says {"success": false, ...}
// with a 200 when it refuses.
func vastAccepted(code int, body []byte) error {
	if err := okStatus(nil)(code, body); err != nil {
		return err
	}
	var r struct {
		Success *bool  `json:"success"`
		Msg     string `json:"msg"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(body, &r) == nil && r.Success != nil && !*r.Success {
		return i18n.Errorf("refused: %s %s", r.Error, r.Msg)
	}
	return nil
}

// lambda: Lambda's API lists the account's instances; this one is the
// one whose address is this machine's. Its key is the user's own
// (LAMBDA_API_KEY): Lambda puts none on the instance.
type lambda struct{}

func (lambda) find(ctx context.Context, o *Options) (*Machine, error) {
	key, err := credential(o, "LAMBDA_API_KEY")
	if key == "" || err != nil {
		return nil, err
	}
	code, body, err := get(ctx, o.client(false), http.MethodGet, o.endpoint("lambda")+"/instances", map[string]string{"Authorization": "Bearer " + key})
	if err != nil {
		return nil, i18n.Errorf("list instances: %v", maskIn(err.Error(), key))
	}
	if code != http.StatusOK {
		return nil, i18n.Errorf("list instances: HTTP %d %s", code, snippet([]byte(maskIn(string(body), key))))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
			IP string `json:"ip"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, i18n.Errorf("list instances: %v", err)
	}
	// This machine is the instance the user names (--id), or the one
	// whose public address is on this machine's interfaces. A private
	// address identifies nothing: 10.0.0.5 and Docker's 172.17.0.1 are
	// on countless machines, and the instance so matched could be
	// another's.
	mine := map[string]bool{}
	for _, a := range o.addrs() {
		if ip := net.ParseIP(a); ip != nil && ip.IsGlobalUnicast() && !ip.IsPrivate() {
			mine[ip.String()] = true
		}
	}
	var ids []string
	for _, in := range list.Data {
		if o.ID != "" && in.ID == o.ID || o.ID == "" && in.IP != "" && mine[in.IP] {
			ids = append(ids, in.ID)
		}
	}
	switch {
	case len(ids) == 0 && o.ID != "":
		return nil, i18n.Errorf("the account has no instance %s", o.ID)
	case len(ids) == 0:
		return nil, nil // a key, but for no instance with this machine's public address
	case len(ids) > 1 || !validID(ids[0]):
		return nil, i18n.Errorf("%d instances of the account match this machine's addresses: refusing to guess", len(ids))
	}
	return &Machine{Label: "Lambda instance", ID: ids[0],
		Keeps: i18n.Textf("Lambda instances cannot be stopped, only terminated: a terminated instance bills nothing and its disk is erased (persistent file systems aside)")}, nil
}

func (lambda) call(ctx context.Context, o *Options, m *Machine, a Action) (*Call, error) {
	if a == Stop {
		return nil, &Unsupported{Label: "Lambda", Action: a, Do: "Lambda instances can only be terminated (--destroy); what must survive goes to a persistent file system or the store first"}
	}
	key, err := credential(o, "LAMBDA_API_KEY")
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(map[string][]string{"instance_ids": {m.ID}})
	return &Call{Method: http.MethodPost, URL: o.endpoint("lambda") + "/instance-operations/terminate",
		Header: http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}, Body: body,
		secrets: []string{key}, accepted: okStatus(nil)}, nil
}

// autodl: AutoDL names its containers in their environment
// (AutoDLContainerUUID), but documents no way to shut an instance down
// or release it from inside: the console does both.
type autodl struct{}

func (autodl) find(ctx context.Context, o *Options) (*Machine, error) {
	id := o.getenv("AutoDLContainerUUID")
	if id == "" {
		return nil, nil
	}
	if !validID(id) {
		return nil, i18n.Errorf("AutoDLContainerUUID %q is not an instance id", id)
	}
	return &Machine{Label: "AutoDL instance", ID: id,
		Keeps: i18n.Textf("a shut-down instance (关机) bills no GPU, keeps its data and is released after 15 days shut down; a released one (释放) keeps nothing but /root/autodl-fs")}, nil
}

func (autodl) call(ctx context.Context, o *Options, m *Machine, a Action) (*Call, error) {
	do := "shut it down in the console (容器实例, 关机); AutoDL releases it after 15 days shut down"
	if a == Destroy {
		do = "release it in the console (容器实例, 更多, 释放实例)"
	}
	return nil, &Unsupported{Label: "AutoDL", Action: a, Do: do}
}

// validID accepts a provider's id: letters, digits, '-', '_' and '.',
// nothing that could change the path or the request it goes into.
func validID(s string) bool {
	if s == "" || len(s) > 128 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func maskIn(s, secret string) string {
	c := Call{secrets: []string{secret}}
	return c.mask(s)
}

func (o *Options) addrs() []string {
	if o.Addrs != nil {
		return o.Addrs()
	}
	as, _ := net.InterfaceAddrs()
	var out []string
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			out = append(out, n.IP.String())
		}
	}
	return out
}
