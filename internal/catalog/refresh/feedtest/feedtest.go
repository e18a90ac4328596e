// Package feedtest serves recorded answers of the price sources on
// 127.0.0.1, in their documented formats, for the tests of catalog
// refresh: AWS's EC2 offer file for us-east-1 and its Spot Advisor data, Azure's Retail Prices
// pages, Vast.ai's offer search, RunPod's GPU catalog (REST v2) and
// Lambda's instance types (Cloud API v1), each answered only with a key.
package feedtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Serve answers from the files in dir (internal/catalog/refresh/testdata);
// failing names the sources that answer HTTP 500 instead. It returns the
// --endpoint values that point catalog refresh at it.
func Serve(t testing.TB, dir string, failing ...string) []string {
	file := func(w http.ResponseWriter, name string) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
	fails := func(name string) bool {
		for _, f := range failing {
			if f == name {
				return true
			}
		}
		return false
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/offers/v1.0/aws/AmazonEC2/current/", func(w http.ResponseWriter, r *http.Request) {
		if fails("aws") {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/us-east-1/index.json") {
			file(w, "aws-us-east-1.json")
			return
		}
		http.NotFound(w, r)
	})
	mux.HandleFunc("/api/retail/prices", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch f := q.Get("$filter"); {
		case fails("azure"):
			http.Error(w, "internal error", http.StatusInternalServerError)
		case q.Get("$skip") == "100":
			file(w, "azure-nd96-page2.json")
		case strings.Contains(f, "armSkuName eq 'Standard_ND96isr_H100_v5'") && strings.Contains(f, "armRegionName eq 'eastus'"):
			file(w, "azure-nd96-page1.json")
		case strings.Contains(f, "armSkuName eq 'Standard_NC24ads_A100_v4'"):
			file(w, "azure-nc24-zero.json")
		default:
			io.WriteString(w, `{"Items": [], "NextPageLink": null, "Count": 0}`)
		}
	})
	mux.HandleFunc("/api/v0/search/asks/", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Q struct {
				GPUName struct{ Eq string } `json:"gpu_name"`
			} `json:"q"`
		}
		if fails("vast") || r.Method != http.MethodPut || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, "refused", http.StatusInternalServerError)
			return
		}
		switch body.Q.GPUName.Eq {
		case "H100 SXM":
			file(w, "vast-h100.json")
		case "A100 SXM4":
			file(w, "vast-a100.json")
		case "RTX 4090":
			file(w, "vast-4090.json")
		default:
			io.WriteString(w, `{"offers": []}`)
		}
	})
	keyed := func(source, name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if fails(source) || r.Method != http.MethodGet || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
				http.Error(w, "refused", http.StatusInternalServerError)
				return
			}
			file(w, name)
		}
	}
	mux.HandleFunc("/spot-advisor-data.json", func(w http.ResponseWriter, r *http.Request) {
		if fails("aws-spot") {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		file(w, "spot-advisor-data.json")
	})
	mux.HandleFunc("/v2/catalog/gpus", keyed("runpod", "runpod-gpus.json"))
	mux.HandleFunc("/api/v1/instance-types", keyed("lambda", "lambda-instance-types.json"))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return []string{"aws=" + srv.URL, "aws-spot=" + srv.URL, "azure=" + srv.URL, "vast=" + srv.URL, "runpod=" + srv.URL, "lambda=" + srv.URL}
}
