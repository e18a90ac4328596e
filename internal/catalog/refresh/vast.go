package refresh

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
)

// vastNames are Vast.ai's names of the catalog's GPUs, as its offer search
// takes them.
var vastNames = map[string]string{
	"H100 SXM":      "H100 SXM",
	"A100 80GB SXM": "A100 SXM4",
	"RTX 4090":      "RTX 4090",
}

func vastName(o *catalog.Offer) string { return vastNames[o.GPU] }

// vastMinOffers is the fewest offers a median is taken of.
const vastMinOffers = 3

// readVast searches Vast.ai's marketplace for verified, rentable,
// on-demand single-GPU offers of each GPU and takes the median price per
// hour: a new reading of the catalog's median offer. Each host sets its
// own disk and bandwidth rates, which the embedded catalog cannot know:
// the same offers' medians of storage_cost ($/GB/month, billed running
// and stopped) and inet_up_cost ($/GB the instance sends out) become the
// reading's storage and egress (vast-ai/vast-cli's search offers fields).
func readVast(ctx context.Context, o *Options, offers []catalog.Offer) ([]price, error) {
	key := ""
	if o.Getenv != nil {
		key = o.Getenv("VAST_API_KEY")
	}
	if key == "" {
		return nil, i18n.Errorf("Vast.ai's offer search needs a key: export VAST_API_KEY (cloud.vast.ai, Account, Keys)")
	}
	var out []price
	var errs []error
	u := o.base("vast") + "/api/v0/search/asks/"
	for _, of := range offers {
		body, _ := json.Marshal(map[string]any{"q": map[string]any{
			"gpu_name": map[string]string{"eq": vastName(&of)}, "num_gpus": map[string]int{"eq": 1},
			"verified": map[string]bool{"eq": true}, "rentable": map[string]bool{"eq": true}, "type": "on-demand",
		}})
		var doc struct {
			Offers []struct {
				GPUName     string   `json:"gpu_name"`
				NumGPUs     int      `json:"num_gpus"`
				DPHTotal    float64  `json:"dph_total"`
				StorageCost *float64 `json:"storage_cost"`
				InetUpCost  *float64 `json:"inet_up_cost"`
			} `json:"offers"`
		}
		err := fetch(ctx, o, http.MethodPut, u, body, map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"},
			func(r io.Reader) error { return json.NewDecoder(io.LimitReader(r, 64<<20)).Decode(&doc) })
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var dph, disk, up []float64
		for _, x := range doc.Offers {
			if x.GPUName == vastName(&of) && x.NumGPUs == 1 {
				dph = append(dph, x.DPHTotal)
				if x.StorageCost != nil {
					disk = append(disk, *x.StorageCost)
				}
				if x.InetUpCost != nil {
					up = append(up, *x.InetUpCost)
				}
			}
		}
		if len(dph) < vastMinOffers {
			errs = append(errs, i18n.Errorf("%d offers of %s, too few for a median (%d at least)", len(dph), vastName(&of), vastMinOffers))
			continue
		}
		p := price{offer: of.ID, onDemand: median(dph), hasOD: true, source: u + " " + vastName(&of) + ", 1 GPU, verified, rentable, on-demand (median of " + strconv.Itoa(len(dph)) + " offers)",
			id: readingID(of.ID, o.Now), supersedes: of.ID}
		if len(disk) >= vastMinOffers {
			p.fees = append(p.fees, fee{"storage_gb_month", median(disk)})
		}
		if len(up) >= vastMinOffers {
			p.fees = append(p.fees, fee{"egress_gb", median(up)})
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

// median of vs, which it sorts.
func median(vs []float64) float64 {
	slices.Sort(vs)
	m := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		m = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return m
}
