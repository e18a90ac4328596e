package refresh

import (
	"context"
	"encoding/json"
	"io"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
)

func lambdaApplies(o *catalog.Offer) bool { return o.Provider == "Lambda" && o.Instance != "" }

// readLambda reads Lambda's instance types (Cloud API v1, GET
// /api/v1/instance-types): each type's price_cents_per_hour, for the
// whole instance, by the type's name, which is the catalog's instance.
func readLambda(ctx context.Context, o *Options, offers []catalog.Offer) ([]price, error) {
	key := ""
	if o.Getenv != nil {
		key = o.Getenv("LAMBDA_API_KEY")
	}
	if key == "" {
		return nil, i18n.Errorf("Lambda's instance types need a key: export LAMBDA_API_KEY (cloud.lambda.ai, API keys)")
	}
	u := o.base("lambda") + "/api/v1/instance-types"
	var doc struct {
		Data map[string]struct {
			InstanceType struct {
				Name              string   `json:"name"`
				PriceCentsPerHour *float64 `json:"price_cents_per_hour"`
			} `json:"instance_type"`
		} `json:"data"`
	}
	err := fetch(ctx, o, "GET", u, nil, map[string]string{"Authorization": "Bearer " + key},
		func(r io.Reader) error { return json.NewDecoder(io.LimitReader(r, 16<<20)).Decode(&doc) })
	if err != nil {
		return nil, err
	}
	var out []price
	for i := range offers {
		of := &offers[i]
		p := price{offer: of.ID, source: u + " " + of.Instance, missing: "Lambda lists no price for " + of.Instance}
		if t, ok := doc.Data[of.Instance]; ok && t.InstanceType.PriceCentsPerHour != nil {
			p.onDemand, p.hasOD, p.missing = *t.InstanceType.PriceCentsPerHour/100, true, ""
		}
		out = append(out, p)
	}
	return out, nil
}
