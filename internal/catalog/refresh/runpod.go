package refresh

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
)

// runpodIDs are RunPod's GPU type ids of the catalog's GPUs, from its
// table of GPU types (runpod/docs references/gpu-types.mdx, generated
// 2026-02-12): "NVIDIA H100 80GB HBM3" is the H100 SXM.
var runpodIDs = map[string]string{
	"H100 SXM":       "NVIDIA H100 80GB HBM3",
	"H100 PCIe":      "NVIDIA H100 PCIe",
	"A100 80GB SXM":  "NVIDIA A100-SXM4-80GB",
	"A100 80GB PCIe": "NVIDIA A100 80GB PCIe",
	"RTX 4090":       "NVIDIA GeForce RTX 4090",
	"L40S":           "NVIDIA L40S",
	"H200":           "NVIDIA H200",
	"B200":           "NVIDIA B200",
}

// runpodCloud is the cloud an offer is rented in, from its id, or "".
func runpodCloud(o *catalog.Offer) string {
	switch {
	case strings.HasPrefix(o.ID, "runpod-secure-"):
		return "secure"
	case strings.HasPrefix(o.ID, "runpod-community-"):
		return "community"
	}
	return ""
}

func runpodApplies(o *catalog.Offer) bool {
	return o.Provider == "RunPod" && runpodIDs[o.GPU] != "" && runpodCloud(o) != ""
}

// readRunPod reads RunPod's GPU catalog (REST API v2, GET
// /v2/catalog/gpus): each type's list price per GPU-hour in the secure
// and community clouds, times the offer's GPUs.
func readRunPod(ctx context.Context, o *Options, offers []catalog.Offer) ([]price, error) {
	key := ""
	if o.Getenv != nil {
		key = o.Getenv("RUNPOD_API_KEY")
	}
	if key == "" {
		return nil, i18n.Errorf("RunPod's GPU catalog needs a key: export RUNPOD_API_KEY (console.runpod.io, Settings, API Keys)")
	}
	u := o.base("runpod") + "/v2/catalog/gpus"
	var doc struct {
		GPUs []struct {
			ID    string              `json:"id"`
			Price map[string]*float64 `json:"price"`
		} `json:"gpus"`
	}
	err := fetch(ctx, o, "GET", u, nil, map[string]string{"Authorization": "Bearer " + key},
		func(r io.Reader) error { return json.NewDecoder(io.LimitReader(r, 16<<20)).Decode(&doc) })
	if err != nil {
		return nil, err
	}
	var out []price
	for i := range offers {
		of := &offers[i]
		id, cloud := runpodIDs[of.GPU], runpodCloud(of)
		p := price{offer: of.ID, source: u + " " + id + " price." + cloud}
		p.missing = "RunPod's catalog lists no " + cloud + " price for " + id
		for _, g := range doc.GPUs {
			if g.ID == id && g.Price[cloud] != nil {
				p.onDemand, p.hasOD, p.missing = *g.Price[cloud]*float64(of.GPUs), true, ""
			}
		}
		out = append(out, p)
	}
	return out, nil
}
