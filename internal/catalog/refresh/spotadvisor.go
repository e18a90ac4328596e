package refresh

import (
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
)

func spotAdvisorApplies(o *catalog.Offer) bool {
	return o.Provider == "AWS" && o.Spot != nil && o.Instance != "" && o.Region != ""
}

// readSpotAdvisor reads AWS's Spot Instance Advisor data (the JSON behind
// its web page, no key): per region, OS and instance type, the bucket of
// its interruption frequency, the share of the type's spot capacity
// reclaimed in the trailing month ("r", an index into "ranges", whose
// labels are <5%, 5-10%, 10-15%, 15-20% and >20%). Linux's bucket becomes
// the offer's spot.interruption_frequency.
func readSpotAdvisor(ctx context.Context, o *Options, offers []catalog.Offer) ([]price, error) {
	u := o.base("aws-spot") + "/spot-advisor-data.json"
	var doc struct {
		Ranges []struct {
			Index int    `json:"index"`
			Label string `json:"label"`
		} `json:"ranges"`
		Advisor map[string]map[string]map[string]struct {
			R *int `json:"r"`
		} `json:"spot_advisor"`
	}
	err := fetch(ctx, o, "GET", u, nil, nil, func(r io.Reader) error {
		return json.NewDecoder(io.LimitReader(r, 64<<20)).Decode(&doc)
	})
	if err != nil {
		return nil, err
	}
	buckets := map[int]catalog.Frequency{}
	for _, rg := range doc.Ranges {
		f, ok := bucket(rg.Label)
		if !ok {
			return nil, i18n.Errorf("the Spot Advisor's range %q is not a share this reads (<5%%, 5-10%%, >20%%)", rg.Label)
		}
		buckets[rg.Index] = f
	}
	if len(buckets) == 0 {
		return nil, i18n.Errorf("the Spot Advisor's data has no ranges")
	}
	asOf := o.Now.UTC().Format(time.DateOnly)
	var out []price
	for i := range offers {
		of := &offers[i]
		p := price{offer: of.ID, source: u, missing: "the Spot Advisor has no Linux bucket for " + of.Instance + " in " + of.Region}
		if t, ok := doc.Advisor[of.Region]["Linux"][of.Instance]; ok && t.R != nil {
			if f, ok := buckets[*t.R]; ok {
				f.Source, f.AsOf = "AWS Spot Instance Advisor, "+u+" (fetched "+o.Now.UTC().Format(time.RFC3339)+" by gpurent catalog refresh)", asOf
				p.freq, p.missing = &f, ""
			} else {
				p.missing = "the Spot Advisor gives " + of.Instance + " a range it does not list (" + strconv.Itoa(*t.R) + ")"
			}
		}
		out = append(out, p)
	}
	return out, nil
}

var (
	bucketBelow   = regexp.MustCompile(`^<\s*(\d+)\s*%$`)
	bucketBetween = regexp.MustCompile(`^(\d+)\s*-\s*(\d+)\s*%$`)
	bucketAbove   = regexp.MustCompile(`^>\s*(\d+)\s*%$`)
)

// bucket reads a range's label as a share from Low to High (High unknown
// for the open ">20%").
func bucket(label string) (catalog.Frequency, bool) {
	pct := func(s string) float64 { v, _ := strconv.Atoi(s); return float64(v) / 100 }
	if m := bucketBelow.FindStringSubmatch(label); m != nil {
		return catalog.Frequency{Low: 0, High: catalog.Known(pct(m[1]))}, true
	}
	if m := bucketBetween.FindStringSubmatch(label); m != nil && pct(m[1]) < pct(m[2]) {
		return catalog.Frequency{Low: pct(m[1]), High: catalog.Known(pct(m[2]))}, true
	}
	if m := bucketAbove.FindStringSubmatch(label); m != nil && pct(m[1]) < 1 {
		return catalog.Frequency{Low: pct(m[1]), High: catalog.Fee{}}, true
	}
	return catalog.Frequency{}, false
}
