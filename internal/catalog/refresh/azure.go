package refresh

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"strings"

	"github.com/gpurent/gpurent/internal/catalog"
)

// azureItem is one meter of the Retail Prices API.
type azureItem struct {
	RetailPrice   float64 `json:"retailPrice"`
	CurrencyCode  string  `json:"currencyCode"`
	ArmSkuName    string  `json:"armSkuName"`
	ArmRegionName string  `json:"armRegionName"`
	SkuName       string  `json:"skuName"`
	ProductName   string  `json:"productName"`
	Type          string  `json:"type"`
	UnitOfMeasure string  `json:"unitOfMeasure"`
	EffectiveDate string  `json:"effectiveStartDate"`
}

// azurePages bounds the pages followed for one VM size: a size has a
// handful of meters per region.
const azurePages = 10

// readAzure asks the Retail Prices API for each VM size and region of the
// catalog: the Linux pay-as-you-go price and the Spot one.
func readAzure(ctx context.Context, o *Options, offers []catalog.Offer) ([]price, error) {
	var out []price
	var errs []error
	for _, of := range offers {
		// The catalog may name the series after the size:
		// "Standard_NC24ads_A100_v4 (NC A100 v4)".
		sku := strings.Fields(of.Instance)[0]
		filter := "serviceName eq 'Virtual Machines' and armRegionName eq '" + of.Region + "' and armSkuName eq '" + sku + "'"
		u := o.base("azure") + "/api/retail/prices?api-version=2023-01-01-preview&$filter=" + url.QueryEscape(filter)
		p := price{offer: of.ID, source: u}
		var od, spot azureItem
		next := u
		for page := 0; next != "" && page < azurePages; page++ {
			var doc struct {
				Items        []azureItem `json:"Items"`
				NextPageLink string      `json:"NextPageLink"`
			}
			if err := get(ctx, o, next, func(r io.Reader) error { return json.NewDecoder(io.LimitReader(r, 16<<20)).Decode(&doc) }); err != nil {
				errs = append(errs, err)
				break
			}
			for _, it := range doc.Items {
				if it.Type != "Consumption" || it.UnitOfMeasure != "1 Hour" || it.CurrencyCode != "USD" || it.ArmSkuName != sku ||
					it.ArmRegionName != of.Region || strings.Contains(it.ProductName, "Windows") || strings.Contains(it.SkuName, "Low Priority") {
					continue
				}
				dst := &od
				if strings.Contains(it.SkuName, "Spot") {
					dst = &spot
				}
				if it.EffectiveDate >= dst.EffectiveDate {
					*dst = it
				}
			}
			next = sameHost(o.base("azure"), doc.NextPageLink)
		}
		p.onDemand, p.spot = od.RetailPrice, spot.RetailPrice
		p.hasOD, p.hasSpot = od.EffectiveDate != "", spot.EffectiveDate != ""
		if !p.hasOD && !p.hasSpot {
			p.missing = "no Linux pay-as-you-go meter of " + sku + " in " + of.Region + " in the answer"
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

// sameHost is a next-page link on base's scheme and host: the API names
// its own, which an --endpoint replaces.
func sameHost(base, link string) string {
	if link == "" {
		return ""
	}
	l, err := url.Parse(link)
	if err != nil {
		return ""
	}
	return base + l.RequestURI()
}
