package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/gpurent/gpurent/internal/i18n"
)

// The clouds tell a machine who it is through their metadata services,
// and give it a credential there (an instance role, a service account, a
// managed identity) that may be allowed to stop it.

// aws: IMDSv2 names the instance and its region; EC2's StopInstances or
// TerminateInstances, signed with the instance role's key, stops it.
type aws struct{}

var awsInstanceID = regexp.MustCompile(`^i-[0-9a-f]{8,32}$`)

func (aws) token(ctx context.Context, o *Options) (string, error) {
	code, b, err := get(ctx, o.client(true), http.MethodPut, o.endpoint("aws-metadata")+"/latest/api/token", map[string]string{"X-aws-ec2-metadata-token-ttl-seconds": "60"})
	if err != nil || code != http.StatusOK {
		return "", err
	}
	return string(b), nil
}

func (a aws) meta(ctx context.Context, o *Options, token, path string) (string, int, error) {
	code, b, err := get(ctx, o.client(true), http.MethodGet, o.endpoint("aws-metadata")+"/latest/meta-data/"+path, map[string]string{"X-aws-ec2-metadata-token": token})
	return strings.TrimSpace(string(b)), code, err
}

func (a aws) find(ctx context.Context, o *Options) (*Machine, error) {
	token, err := a.token(ctx, o)
	if err != nil || token == "" {
		return nil, nil // no IMDSv2 here
	}
	id, code, err := a.meta(ctx, o, token, "instance-id")
	if err != nil || code != http.StatusOK {
		return nil, nil
	}
	if !awsInstanceID.MatchString(id) {
		return nil, i18n.Errorf("the metadata service's instance-id %q is not an EC2 instance id", id)
	}
	region, code, err := a.meta(ctx, o, token, "placement/region")
	if err != nil || code != http.StatusOK || !validID(region) {
		return nil, i18n.Errorf("the metadata service names instance %s but no region", id)
	}
	return &Machine{Label: "AWS EC2 instance", ID: id, Where: map[string]string{"region": region},
		Keeps: i18n.Textf("a stopped instance bills its EBS volumes and Elastic IPs, not its compute; instance-store data is lost; a terminated one deletes the volumes marked DeleteOnTermination (the root volume by default) and bills the rest")}, nil
}

func (a aws) call(ctx context.Context, o *Options, m *Machine, act Action) (*Call, error) {
	region := m.Where["region"]
	base := o.endpoint("aws")
	if base == "" {
		base = "https://ec2." + region + ".amazonaws.com"
	}
	action := "StopInstances"
	if act == Destroy {
		action = "TerminateInstances"
	}
	body := url.Values{"Action": {action}, "InstanceId.1": {m.ID}, "Version": {"2016-11-15"}}.Encode()
	c := &Call{Method: http.MethodPost, URL: base + "/", Body: []byte(body),
		Header:   http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}},
		authSays: "AWS4-HMAC-SHA256, signed when sent with the instance role's key (or AWS_ACCESS_KEY_ID's)",
		accepted: okStatus(func(code int, b []byte) string {
			if strings.Contains(string(b), "UnauthorizedOperation") || code == http.StatusForbidden {
				return "the instance role lacks ec2:" + action + " on this instance: attach a policy allowing it on arn:aws:ec2:" + region + ":ACCOUNT:instance/" + m.ID + " to the instance's role, or stop it in the EC2 console"
			}
			return ""
		})}
	c.auth = func(r *http.Request, body []byte) error {
		creds, err := a.creds(r.Context(), o)
		if err != nil {
			return err
		}
		c.secrets = append(c.secrets, creds.SecretAccessKey, creds.SessionToken)
		sum := sha256.Sum256(body)
		return v4.NewSigner().SignHTTP(r.Context(), creds, r, hex.EncodeToString(sum[:]), "ec2", region, time.Now())
	}
	return c, nil
}

// creds are the environment's keys, or the instance role's from IMDS.
func (a aws) creds(ctx context.Context, o *Options) (awssdk.Credentials, error) {
	var env [3]string
	for i, name := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		v, err := credential(o, name)
		if err != nil {
			return awssdk.Credentials{}, err
		}
		env[i] = v
	}
	if env[0] != "" && env[1] != "" {
		return awssdk.Credentials{AccessKeyID: env[0], SecretAccessKey: env[1], SessionToken: env[2]}, nil
	}
	token, err := a.token(ctx, o)
	if err != nil || token == "" {
		return awssdk.Credentials{}, i18n.Errorf("IMDSv2 gave no token for the instance role's key")
	}
	role, code, err := a.meta(ctx, o, token, "iam/security-credentials/")
	role, _, _ = strings.Cut(role, "\n")
	if err != nil || code != http.StatusOK || role == "" || !validID(role) {
		return awssdk.Credentials{}, i18n.Errorf("this instance has no role (IAM instance profile) and AWS_ACCESS_KEY_ID is not set: attach a role allowing ec2:StopInstances on the instance itself, or stop it in the EC2 console")
	}
	doc, code, err := a.meta(ctx, o, token, "iam/security-credentials/"+role)
	var k struct{ AccessKeyId, SecretAccessKey, Token string }
	if err != nil || code != http.StatusOK || json.Unmarshal([]byte(doc), &k) != nil || k.AccessKeyId == "" || !clean(k.AccessKeyId+k.SecretAccessKey+k.Token) {
		return awssdk.Credentials{}, i18n.Errorf("the instance role %s's key could not be read from IMDS", role)
	}
	return awssdk.Credentials{AccessKeyID: k.AccessKeyId, SecretAccessKey: k.SecretAccessKey, SessionToken: k.Token}, nil
}

// gcp: the metadata server names the instance, its zone and project, and
// hands out the service account's token; Compute Engine's instances.stop
// or instances.delete stops it.
type gcp struct{}

func (gcp) meta(ctx context.Context, o *Options, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.endpoint("gcp-metadata")+"/computeMetadata/v1/"+path, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Metadata-Flavor", "Google")
	resp, err := o.client(true).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	// Only Google's server says so: anything else at that name is not it.
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Metadata-Flavor") != "Google" {
		return "", i18n.Errorf("not Google's metadata server (HTTP %d)", resp.StatusCode)
	}
	return strings.TrimSpace(string(b)), nil
}

func (g gcp) find(ctx context.Context, o *Options) (*Machine, error) {
	id, err := g.meta(ctx, o, "instance/id")
	if err != nil {
		return nil, nil
	}
	name, err1 := g.meta(ctx, o, "instance/name")
	zone, err2 := g.meta(ctx, o, "instance/zone") // projects/NUMBER/zones/ZONE
	project, err3 := g.meta(ctx, o, "project/project-id")
	zone = zone[strings.LastIndexByte(zone, '/')+1:]
	if err1 != nil || err2 != nil || err3 != nil || !validID(name) || !validID(zone) || !validID(project) || !validID(id) {
		return nil, i18n.Errorf("the metadata server answers, but not with this instance's name, zone and project")
	}
	return &Machine{Label: "GCP instance", ID: id, Where: map[string]string{"name": name, "zone": zone, "project": project},
		Keeps: i18n.Textf("a stopped instance bills its persistent disks and static IPs, not its vCPUs and GPUs; local SSD data is lost; a deleted one deletes the disks marked auto-delete (the boot disk by default) and bills the rest")}, nil
}

func (g gcp) call(ctx context.Context, o *Options, m *Machine, a Action) (*Call, error) {
	u := o.endpoint("gcp") + "/projects/" + m.Where["project"] + "/zones/" + m.Where["zone"] + "/instances/" + m.Where["name"]
	c := &Call{Method: http.MethodPost, URL: u + "/stop", authSays: "Bearer (the instance's service-account token, fetched from the metadata server when sent)",
		accepted: okStatus(func(code int, _ []byte) string {
			if code == http.StatusForbidden || code == http.StatusUnauthorized {
				return "the instance's service account lacks compute.instances." + map[Action]string{Stop: "stop", Destroy: "delete"}[a] + ", or its access scopes leave Compute Engine out: give it roles/compute.instanceAdmin.v1 on this instance and the cloud-platform scope, or stop it in the console"
			}
			return ""
		})}
	if a == Destroy {
		c.Method, c.URL = http.MethodDelete, u
	}
	c.auth = func(r *http.Request, _ []byte) error {
		doc, err := g.meta(r.Context(), o, "instance/service-accounts/default/token")
		var t struct {
			AccessToken string `json:"access_token"`
		}
		if err != nil || json.Unmarshal([]byte(doc), &t) != nil || t.AccessToken == "" || !clean(t.AccessToken) {
			return i18n.Errorf("this instance has no service account token: give it a service account allowed to stop it, or stop it in the console")
		}
		c.secrets = append(c.secrets, t.AccessToken)
		r.Header.Set("Authorization", "Bearer "+t.AccessToken)
		return nil
	}
	return c, nil
}

// azure: IMDS names the VM, its resource group and subscription, and
// hands out the managed identity's token; Azure Resource Manager's
// deallocate (a VM only powered off keeps billing its compute) or delete
// stops it.
type azure struct{}

// azureAPI is the Microsoft.Compute version the requests name.
const azureAPI = "2024-07-01"

func (azure) meta(ctx context.Context, o *Options, path string) ([]byte, error) {
	code, b, err := get(ctx, o.client(true), http.MethodGet, o.endpoint("azure-metadata")+path, map[string]string{"Metadata": "true"})
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, i18n.Errorf("HTTP %d %s", code, snippet(b))
	}
	return b, nil
}

func (az azure) find(ctx context.Context, o *Options) (*Machine, error) {
	b, err := az.meta(ctx, o, "/metadata/instance/compute?api-version=2021-02-01")
	if err != nil {
		return nil, nil
	}
	var c struct {
		SubscriptionID    string `json:"subscriptionId"`
		ResourceGroupName string `json:"resourceGroupName"`
		Name              string `json:"name"`
		VMID              string `json:"vmId"`
		VMScaleSetName    string `json:"vmScaleSetName"`
	}
	if err := json.Unmarshal(b, &c); err != nil || c.VMID == "" {
		return nil, nil // 169.254.169.254 is AWS's too: not Azure's answer
	}
	if !validID(c.SubscriptionID) || !validID(c.ResourceGroupName) || !validID(c.Name) || !validID(c.VMID) {
		return nil, i18n.Errorf("IMDS answers, but not with this VM's subscription, resource group and name")
	}
	return &Machine{Label: "Azure VM", ID: c.VMID, Where: map[string]string{"subscription": c.SubscriptionID, "group": c.ResourceGroupName, "name": c.Name, "scaleset": c.VMScaleSetName},
		Keeps: i18n.Textf("a deallocated VM bills its managed disks and static public IPs, not its compute (a VM only shut down from inside keeps billing compute); a deleted VM's disks, NICs and IPs are deleted only where their delete option says so, and bill until then")}, nil
}

func (az azure) call(ctx context.Context, o *Options, m *Machine, a Action) (*Call, error) {
	if ss := m.Where["scaleset"]; ss != "" {
		return nil, &Unsupported{Label: "Azure", Action: a, Do: "this VM belongs to scale set " + ss + ": scale it in, or deallocate the instance in the portal"}
	}
	u := o.endpoint("azure") + "/subscriptions/" + m.Where["subscription"] + "/resourceGroups/" + m.Where["group"] + "/providers/Microsoft.Compute/virtualMachines/" + m.Where["name"]
	c := &Call{Method: http.MethodPost, URL: u + "/deallocate?api-version=" + azureAPI,
		authSays: "Bearer (the VM's managed identity token, fetched from IMDS when sent)",
		accepted: okStatus(func(code int, _ []byte) string {
			if code == http.StatusForbidden || code == http.StatusUnauthorized {
				return "the VM's managed identity may not " + map[Action]string{Stop: "deallocate", Destroy: "delete"}[a] + " it: assign it the Virtual Machine Contributor role on this VM, or do it in the portal"
			}
			return ""
		})}
	if a == Destroy {
		c.Method, c.URL = http.MethodDelete, u+"?api-version="+azureAPI
	}
	c.auth = func(r *http.Request, _ []byte) error {
		b, err := az.meta(r.Context(), o, "/metadata/identity/oauth2/token?api-version=2018-02-01&resource="+url.QueryEscape("https://management.azure.com/"))
		var t struct {
			AccessToken string `json:"access_token"`
		}
		if err != nil || json.Unmarshal(b, &t) != nil || t.AccessToken == "" || !clean(t.AccessToken) {
			return i18n.Errorf("this VM has no managed identity token: enable a system-assigned identity and give it Virtual Machine Contributor on the VM, or deallocate it in the portal")
		}
		c.secrets = append(c.secrets, t.AccessToken)
		r.Header.Set("Authorization", "Bearer "+t.AccessToken)
		return nil
	}
	return c, nil
}
