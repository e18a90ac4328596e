// Package endpoint reads --endpoint NAME=URL values: a service a command
// asks (a provider's API, a metadata service, a price source) pointed
// elsewhere, for tests, proxies and regional endpoints.
package endpoint

import (
	"net/url"
	"slices"
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Parse reads NAME=URL values, names among known, into a map by name. A
// URL must be http(s) with a host, and without credentials, a query or a
// fragment (each would change where the request goes or leak a secret);
// a refused one is shown with its credentials redacted.
func Parse(vals, known []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range vals {
		name, u, ok := strings.Cut(v, "=")
		if !ok {
			return nil, i18n.Errorf("want NAME=URL, got %q", v)
		}
		if !slices.Contains(known, name) {
			return nil, i18n.Errorf("%q: want one of %s", name, strings.Join(known, ", "))
		}
		p, err := url.Parse(u)
		if err != nil {
			return nil, i18n.Errorf("%s: want an http:// or https:// URL: %v", name, err)
		}
		if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil || p.RawQuery != "" || p.ForceQuery || p.Fragment != "" {
			return nil, i18n.Errorf("%s: want an http:// or https:// URL without credentials, query or fragment, got %q", name, p.Redacted())
		}
		out[name] = strings.TrimSuffix(u, "/")
	}
	return out, nil
}
