package refresh

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
)

// readAWS reads each region's EC2 offer file of the Price List Bulk API
// once, for the on-demand Linux prices of the catalog's instance types
// there.
func readAWS(ctx context.Context, o *Options, offers []catalog.Offer) ([]price, error) {
	byRegion := map[string][]catalog.Offer{}
	var regions []string
	for _, of := range offers {
		if _, seen := byRegion[of.Region]; !seen {
			regions = append(regions, of.Region)
		}
		byRegion[of.Region] = append(byRegion[of.Region], of)
	}
	var out []price
	var errs []error
	for _, region := range regions {
		want := map[string]bool{}
		for _, of := range byRegion[region] {
			want[of.Instance] = true
		}
		u := o.base("aws") + "/offers/v1.0/aws/AmazonEC2/current/" + region + "/index.json"
		var got map[string]float64
		err := get(ctx, o, u, func(r io.Reader) error {
			var err error
			got, err = awsOnDemand(r, want)
			return err
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, of := range byRegion[region] {
			if v, ok := got[of.Instance]; ok {
				out = append(out, price{offer: of.ID, onDemand: v, hasOD: true, source: u})
			} else {
				out = append(out, price{offer: of.ID, missing: "no Linux on-demand price of " + of.Instance + " in " + u})
			}
		}
	}
	return out, errors.Join(errs...)
}

// awsProduct is what an offer file says of a SKU that matters here.
type awsProduct struct {
	Attributes struct {
		InstanceType    string `json:"instanceType"`
		OperatingSystem string `json:"operatingSystem"`
		Tenancy         string `json:"tenancy"`
		PreInstalledSw  string `json:"preInstalledSw"`
		CapacityStatus  string `json:"capacitystatus"`
		LicenseModel    string `json:"licenseModel"`
	} `json:"attributes"`
}

// awsTerm is one on-demand term of a SKU.
type awsTerm struct {
	PriceDimensions map[string]struct {
		Unit         string            `json:"unit"`
		PricePerUnit map[string]string `json:"pricePerUnit"`
	} `json:"priceDimensions"`
}

// awsOnDemand streams an EC2 offer file (hundreds of MB for a region) and
// returns the hourly on-demand USD price of each instance type in want,
// for Linux on shared tenancy with nothing preinstalled: one SKU at a time
// is decoded, the reserved terms are skipped token by token, and nothing
// but the wanted SKUs' prices is kept.
func awsOnDemand(r io.Reader, want map[string]bool) (map[string]float64, error) {
	dec := json.NewDecoder(r)
	if err := expect(dec, json.Delim('{')); err != nil {
		return nil, err
	}
	skuType := map[string]string{} // wanted SKU -> instance type
	hourly := map[string]float64{} // SKU -> price, for SKUs seen before their product
	seenProducts := false
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return nil, err
		}
		switch key {
		case "products":
			err = eachKey(dec, func(sku string) error {
				var p awsProduct
				if err := dec.Decode(&p); err != nil {
					return err
				}
				a := p.Attributes
				if want[a.InstanceType] && a.OperatingSystem == "Linux" && a.Tenancy == "Shared" && a.PreInstalledSw == "NA" &&
					a.CapacityStatus == "Used" && a.LicenseModel != "Bring your own license" {
					skuType[sku] = a.InstanceType
				}
				return nil
			})
			seenProducts = true
		case "terms":
			err = eachKey(dec, func(kind string) error {
				if kind != "OnDemand" {
					return skip(dec)
				}
				return eachKey(dec, func(sku string) error {
					if seenProducts && skuType[sku] == "" {
						return skip(dec)
					}
					return eachKey(dec, func(string) error {
						var t awsTerm
						if err := dec.Decode(&t); err != nil {
							return err
						}
						for _, d := range t.PriceDimensions {
							if d.Unit != "Hrs" {
								continue
							}
							if v, err := strconv.ParseFloat(d.PricePerUnit["USD"], 64); err == nil {
								hourly[sku] = v
							}
						}
						return nil
					})
				})
			})
		default:
			err = skip(dec)
		}
		if err != nil {
			return nil, err
		}
	}
	out := map[string]float64{}
	for sku, typ := range skuType {
		if v, ok := hourly[sku]; ok {
			out[typ] = v
		}
	}
	return out, nil
}

func expect(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return i18n.Errorf("want %v, got %v", want, t)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", i18n.Errorf("want a key, got %v", t)
	}
	return s, nil
}

// eachKey walks an object, calling f with the decoder at each key's value,
// which f must consume.
func eachKey(dec *json.Decoder, f func(key string) error) error {
	if err := expect(dec, json.Delim('{')); err != nil {
		return err
	}
	for dec.More() {
		k, err := stringToken(dec)
		if err != nil {
			return err
		}
		if err := f(k); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

// skip consumes one value, token by token, holding none of it.
func skip(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
